//! Generic report pages: line charts (time series, parity plots, phase
//! timelines) drawn once as inline SVG and once as PNG, and an HTML page of
//! sections (text, tables, charts, warnings, provenance) with a JSON summary.
//! The simulation and validation reports are built from these.

use crate::{esc, DrawError, ReportError, Written};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Style {
    Line,
    Dashed,
    Points,
}

/// One curve of a chart.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Palette index (same index, same colour across charts).
    pub color: usize,
    /// Optional band (x, low, high) drawn shaded under the curve; under
    /// points, each point's interval, drawn as a bar.
    pub band: Vec<(f64, f64, f64)>,
}

impl Series {
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>, color: usize) -> Series {
        Series { label: label.into(), points, style: Style::Line, color, band: vec![] }
    }

    pub fn dashed(label: impl Into<String>, points: Vec<(f64, f64)>, color: usize) -> Series {
        Series { label: label.into(), points, style: Style::Dashed, color, band: vec![] }
    }

    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>, color: usize) -> Series {
        Series { label: label.into(), points, style: Style::Points, color, band: vec![] }
    }
}

/// A chart of series over a common x axis.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// File stem of the PNG.
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Draw the line y = x (parity plots).
    pub diagonal: bool,
}

#[doc(hidden)]
pub const SIZE: (u32, u32) = (900, 460);

use crate::style::{palette, repeats, Scale};

fn range(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
    let mut ys = (f64::INFINITY, f64::NEG_INFINITY);
    for s in &chart.series {
        for &(x, y) in &s.points {
            if x.is_finite() && y.is_finite() {
                xs = (xs.0.min(x), xs.1.max(x));
                ys = (ys.0.min(y), ys.1.max(y));
            }
        }
        for &(x, lo, hi) in &s.band {
            if x.is_finite() && lo.is_finite() && hi.is_finite() {
                ys = (ys.0.min(lo), ys.1.max(hi));
            }
        }
    }
    if !xs.0.is_finite() {
        xs = (0.0, 1.0);
        ys = (0.0, 1.0);
    }
    if chart.diagonal {
        let lo = xs.0.min(ys.0);
        let hi = xs.1.max(ys.1);
        xs = (lo, hi);
        ys = (lo, hi);
    }
    let pad = |r: (f64, f64)| {
        let span = (r.1 - r.0).abs().max(1e-12 * r.0.abs().max(1.0)).max(1e-300);
        (r.0 - 0.05 * span, r.1 + 0.05 * span)
    };
    (pad(xs), pad(ys))
}

/// Tick labels with enough digits to tell ticks apart on an axis
/// spanning `span` (a curvature axis from 0 to 0.004 1/m is not all
/// "0.0"); exponents beyond what fixed digits show well.
#[doc(hidden)]
pub fn tick_format(span: f64) -> impl Fn(&f64) -> String {
    let digits = if span > 0.0 && span.is_finite() { (2.0 - span.log10().floor()).clamp(0.0, 12.0) as usize } else { 2 };
    move |v: &f64| if digits > 5 || v.abs() >= 1e6 { format!("{v:.2e}") } else { format!("{v:.digits$}") }
}

/// Whether an axis label names its unit: `quantity [unit]` (`[1]` for a
/// pure number, `[-]` for a count or a level).
pub fn has_unit(label: &str) -> bool {
    match (label.rfind('['), label.rfind(']')) {
        (Some(open), Some(close)) => close > open + 1 && open > 0,
        _ => false,
    }
}

/// Width of the legend beside a chart's plot \[px\] (outside it: a legend
/// never covers the data).
#[doc(hidden)]
pub const LEGEND_WIDTH_PX: u32 = 210;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart, k: Scale) -> Result<(), DrawError> {
    // Every axis says what it shows and in what unit.
    for label in [&chart.x_label, &chart.y_label] {
        if !has_unit(label) {
            return Err(DrawError(format!("chart '{}': axis label {label:?} has no unit: write it as \"quantity [unit]\"", chart.name)));
        }
    }
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| DrawError(x.to_string());
    root.fill(&WHITE).map_err(e)?;
    // The title over the whole width, the legend beside the plot under it.
    let body = root.titled(&chart.title, ("sans-serif", k.font(20.0))).map_err(e)?;
    let labelled: Vec<&Series> = chart.series.iter().filter(|s| !s.label.is_empty()).collect();
    let (plot_area, legend_area) = with_legend_area(&body, !labelled.is_empty(), k);
    let ((x0, x1), (y0, y1)) = range(chart);
    let mut c =
        ChartBuilder::on(&plot_area).margin(k.px(12)).x_label_area_size(k.px(40)).y_label_area_size(k.px(70)).build_cartesian_2d(x0..x1, y0..y1).map_err(e)?;
    let (x_ticks, y_ticks) = (tick_format(x1 - x0), tick_format(y1 - y0));
    c.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_ticks)
        .y_label_formatter(&y_ticks)
        .label_style(("sans-serif", k.font(13.0)))
        .axis_desc_style(("sans-serif", k.font(15.0)))
        .light_line_style(BLACK.mix(0.05))
        .bold_line_style(BLACK.mix(0.15))
        .draw()
        .map_err(e)?;
    if chart.diagonal {
        c.draw_series(LineSeries::new(vec![(x0, x0), (x1, x1)], BLACK.mix(0.4).stroke_width(k.px(1)))).map_err(e)?;
    }
    for s in &chart.series {
        let color = palette(s.color);
        if !s.band.is_empty() && s.style == Style::Points {
            // Points' intervals: a bar with caps each (a shaded band would
            // join intervals of separate measurements).
            let cap = 0.006 * (x1 - x0);
            let bars = s
                .band
                .iter()
                .filter(|(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
                .flat_map(|&(x, lo, hi)| [vec![(x, lo), (x, hi)], vec![(x - cap, lo), (x + cap, lo)], vec![(x - cap, hi), (x + cap, hi)]]);
            c.draw_series(bars.map(|line| PathElement::new(line, color.stroke_width(k.px(1))))).map_err(e)?;
        } else if !s.band.is_empty() {
            let mut poly: Vec<(f64, f64)> = s.band.iter().map(|&(x, lo, _)| (x, lo)).collect();
            poly.extend(s.band.iter().rev().map(|&(x, _, hi)| (x, hi)));
            c.draw_series(std::iter::once(Polygon::new(poly, color.mix(0.18)))).map_err(e)?;
        }
        let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        // A colour the palette repeats is told apart by its line: dashed, or hollow points.
        match (s.style, repeats(s.color)) {
            (Style::Line, false) => c.draw_series(LineSeries::new(pts, color.stroke_width(k.px(2)))).map_err(e)?,
            (Style::Line | Style::Dashed, _) => c.draw_series(DashedLineSeries::new(pts, k.px(8), k.px(5), color.stroke_width(k.px(2)))).map_err(e)?,
            (Style::Points, false) => c.draw_series(pts.into_iter().map(|p| Circle::new(p, k.px(3), color.filled()))).map_err(e)?,
            (Style::Points, true) => c.draw_series(pts.into_iter().map(|p| Circle::new(p, k.px(3), color.stroke_width(k.px(1))))).map_err(e)?,
        };
    }
    if let Some(area) = legend_area {
        let entries: Vec<LegendEntry> = labelled
            .iter()
            .map(|s| LegendEntry {
                label: s.label.clone(),
                color: palette(s.color),
                style: if repeats(s.color) && s.style == Style::Line { Style::Dashed } else { s.style },
            })
            .collect();
        draw_legend(&area, &entries, k).map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// One line of a legend.
pub(crate) struct LegendEntry {
    pub label: String,
    pub color: RGBColor,
    pub style: Style,
}

/// Splits `root` into the plot's area and, when there is a legend, the
/// legend's beside it.
pub(crate) fn with_legend_area<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    legend: bool,
    k: Scale,
) -> (DrawingArea<DB, Shift>, Option<DrawingArea<DB, Shift>>) {
    if !legend {
        return (root.clone(), None);
    }
    let (w, _) = root.dim_in_pixel();
    let (a, b) = root.split_horizontally(w.saturating_sub(k.px(LEGEND_WIDTH_PX)));
    (a, Some(b))
}

/// Characters of a legend line: longer labels wrap onto more lines.
const LEGEND_LINE_CHARS: usize = 26;

/// The legend in its own area beside the plot: each label with a swatch
/// drawn as its series is (solid, dashed or a dot), long labels wrapped
/// whole onto more lines; a list longer than the area ends with a count
/// of the entries left out (never a cut label).
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[LegendEntry],
    k: Scale,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let row = k.at(18);
    let (_, h) = area.dim_in_pixel();
    let rows = ((h as i32 - k.at(60)) / row).max(1) as usize;
    let font = ("sans-serif", k.font(13.0)).into_font().color(&BLACK);
    let mut used = 0;
    for (n, s) in series.iter().enumerate() {
        let lines = crate::style::wrap(&s.label, LEGEND_LINE_CHARS);
        // Room for this entry and, when more follow, the count's line.
        let after = if n + 1 < series.len() { 1 } else { 0 };
        if used + lines.len() + after > rows {
            let y = k.at(50) + used as i32 * row;
            area.draw(&Text::new(format!("and {} more", series.len() - n), (k.at(38), y - k.at(7)), font.clone()))?;
            break;
        }
        let y = k.at(50) + used as i32 * row;
        let color = s.color;
        match s.style {
            Style::Line => area.draw(&PathElement::new(vec![(k.at(4), y), (k.at(30), y)], color.stroke_width(k.px(2))))?,
            Style::Dashed => {
                for x in [4, 16, 28] {
                    area.draw(&PathElement::new(vec![(k.at(x), y), (k.at(x + 6), y)], color.stroke_width(k.px(2))))?;
                }
            }
            Style::Points => area.draw(&Circle::new((k.at(17), y), k.px(4), color.filled()))?,
        }
        for (l, line) in lines.iter().enumerate() {
            area.draw(&Text::new(line.clone(), (k.at(38), y - k.at(7) + l as i32 * row), font.clone()))?;
        }
        used += lines.len();
    }
    Ok(())
}

impl Chart {
    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, ReportError> {
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
            draw(&root, self, Scale::SVG).map_err(|m| ReportError::Plot(self.name.clone(), m.0))?;
        }
        Ok(s)
    }

    /// The chart as a PNG file, at twice the SVG's pixels.
    pub fn png(&self, path: &Path) -> Result<(), ReportError> {
        let root = BitMapBackend::new(path, Scale::PNG.size(SIZE)).into_drawing_area();
        draw(&root, self, Scale::PNG).map_err(|m| ReportError::Plot(self.name.clone(), m.0))
    }
}

/// A block of a page.
#[derive(Clone, Debug, Serialize)]
pub enum Block {
    Heading(String),
    Text(String),
    /// Header row, then rows.
    Table(Vec<String>, Vec<Vec<String>>),
    Chart(Chart),
    Warnings(Vec<String>),
    /// (label, relative address) links, as a list.
    Links(Vec<(String, String)>),
}

/// A report page.
#[derive(Clone, Debug, Serialize)]
pub struct Page {
    pub title: String,
    pub blocks: Vec<Block>,
    /// (what, value): inputs and their hashes, versions.
    pub provenance: Vec<(String, String)>,
}

/// Writes `index.html` (charts inline as SVG), `summary.json` (the given
/// summary) and one PNG per chart into `dir`.
pub fn write_page<S: Serialize>(dir: &Path, page: &Page, summary: &S) -> Result<Written, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| ReportError::Io(dir.to_path_buf(), e))?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{t}</title><style>\
body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}\
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #bbb;padding:3px 8px;text-align:right}}\
td.l,th.l{{text-align:left}}.warn{{background:#fff4d6;border:1px solid #e0b000;padding:0.5em 1em}}\
figure{{margin:1em 0}}figcaption{{color:#555;font-size:90%}}{bad}</style></head><body><h1>{t}</h1>",
        t = esc(&page.title),
        bad = crate::BAD_CELL_CSS
    );
    let mut pngs = vec![];
    let mut index = vec![];
    for b in &page.blocks {
        match b {
            Block::Heading(s) => {
                let _ = write!(h, "<h2>{}</h2>", esc(s));
            }
            Block::Text(s) => {
                let _ = write!(h, "<p>{}</p>", esc(s));
            }
            Block::Table(head, rows) => crate::table_html(&mut h, &crate::ReportTable { title: String::new(), header: head.clone(), rows: rows.clone() }),
            Block::Chart(c) => {
                let svg = c.svg()?;
                crate::write_figure_svg(dir, &c.name, &svg)?;
                // The series themselves, for a paper's own plot (`rodlab.plot.series`).
                let data = dir.join(format!("{}.json", c.name));
                let text = serde_json::to_string(c).map_err(|e| ReportError::Io(data.clone(), std::io::Error::other(e)))?;
                std::fs::write(&data, text).map_err(|e| ReportError::Io(data.clone(), e))?;
                let png = dir.join(format!("{}.png", c.name));
                c.png(&png)?;
                pngs.push(png);
                let _ = write!(
                    h,
                    "<figure id=\"{0}\">{svg}<figcaption>{1} (<a href=\"{0}.svg\">SVG</a>, <a href=\"{0}.png\">PNG</a>)</figcaption></figure>",
                    esc(&c.name),
                    esc(&c.title)
                );
                index.push((c.name.clone(), c.title.clone(), true));
            }
            Block::Links(links) => {
                h.push_str("<ul>");
                for (label, href) in links {
                    let _ = write!(h, "<li><a href=\"{}\">{}</a></li>", esc(href), esc(label));
                }
                h.push_str("</ul>");
            }
            Block::Warnings(ws) if ws.is_empty() => {}
            Block::Warnings(ws) => {
                h.push_str("<div class=\"warn\"><b>Warnings</b><ul>");
                for w in ws {
                    let _ = write!(h, "<li>{}</li>", esc(w));
                }
                h.push_str("</ul></div>");
            }
        }
    }
    crate::figure_index(&mut h, &index);
    if !page.provenance.is_empty() {
        h.push_str("<h2>Provenance</h2><table>");
        for (k, v) in &page.provenance {
            let _ = write!(h, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>", esc(k), esc(v));
        }
        h.push_str("</table>");
    }
    h.push_str(crate::SELF_CHECK_SCRIPT);
    h.push_str("</body></html>\n");
    let html = dir.join("index.html");
    std::fs::write(&html, h).map_err(|e| ReportError::Io(html.clone(), e))?;
    let json = dir.join("summary.json");
    let text = serde_json::to_string_pretty(summary).map_err(|e| ReportError::Io(json.clone(), std::io::Error::other(e)))?;
    std::fs::write(&json, text).map_err(|e| ReportError::Io(json.clone(), e))?;
    Ok(Written { html, json, pngs })
}
