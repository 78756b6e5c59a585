//! `report`: the last stage of record -> track -> observe -> identify ->
//! simulate -> report. Turns results into a self-contained HTML page (plots
//! drawn with plotters, inlined as SVG, with PNG copies beside the page) and
//! a JSON summary for scripts.
//!
//! The report is built from plain data ([`IdentificationReport`]) so that it
//! does not depend on the model crates.

pub mod page;
pub mod style;

/// A self-check for browsers and tests: counts figures and loaded images
/// and script errors into `body[data-check]`.
pub(crate) const SELF_CHECK_SCRIPT: &str = r#"<script>
window.rodlabErrors = 0;
window.addEventListener('error', function () { window.rodlabErrors += 1; }, true);
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var svgs = document.querySelectorAll('figure svg').length;
  document.body.setAttribute('data-check', 'images=' + ok + '/' + imgs.length + ' svgs=' + svgs + ' errors=' + window.rodlabErrors);
});
</script>
"#;
mod plots;

/// A point [x, y, z] in metres.
pub type P3 = [f64; 3];

use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One identified parameter beside its published value.
#[derive(Clone, Debug, Serialize)]
pub struct ParameterRow {
    pub name: String,
    pub unit: String,
    pub value: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub reference: f64,
}

/// One experiment: measured points, predictions and rod shapes.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentView {
    pub id: String,
    pub inputs: String,
    pub measured_m: Vec<P3>,
    pub predicted_m: Vec<P3>,
    pub predicted_reference_m: Vec<P3>,
    /// Centre line, base to tip, with the fitted parameters.
    pub shape_m: Vec<P3>,
    /// Centre line with the reference parameters (empty without).
    pub shape_reference_m: Vec<P3>,
    pub errors_mm: Vec<f64>,
    pub errors_reference_mm: Vec<f64>,
    /// Leave-one-out prediction errors (NaN if not computed).
    pub loo_errors_mm: Vec<f64>,
    /// The rod's base in the world \[m\] and its rotation (rows of the
    /// matrix taking the rod's frame to the world's): the shapes are drawn
    /// in the rod's frame.
    pub base_m: P3,
    pub base_rotation: [[f64; 3]; 3],
}

/// A second fit shown for comparison (e.g. with nuisance parameters).
#[derive(Clone, Debug, Serialize)]
pub struct AlternativeFit {
    pub label: String,
    pub parameters: Vec<ParameterRow>,
    pub extra: Vec<(String, String)>,
    pub rms_error_mm: f64,
}

/// Everything the identification report shows.
#[derive(Clone, Debug, Serialize)]
pub struct IdentificationReport {
    pub title: String,
    /// Paragraphs read first: what the fit rests on (what is assumed, what
    /// reference values give on it).
    pub lead: Vec<String>,
    /// What the reference values are called ("reference"), or none: no
    /// reference column, sentence or curve.
    pub reference_label: Option<String>,
    pub parameters: Vec<ParameterRow>,
    pub correlation_names: Vec<String>,
    pub correlation: Vec<Vec<f64>>,
    pub experiments: Vec<ExperimentView>,
    /// Cost 1/2 |r|^2 after each iteration of the best start.
    pub history: Vec<f64>,
    pub rms_error_mm: f64,
    pub rms_error_reference_mm: f64,
    pub warnings: Vec<String>,
    pub facts: Vec<(String, String)>,
    pub alternatives: Vec<AlternativeFit>,
    /// Further tables (e.g. the static holds found in sessions).
    pub tables: Vec<ReportTable>,
    /// (what, value): input file hashes, rod config, version.
    pub provenance: Vec<(String, String)>,
}

/// A titled table of text cells.
#[derive(Clone, Debug, Serialize)]
pub struct ReportTable {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Style of a cell that reports a failure (shown red).
pub(crate) const BAD_CELL_CSS: &str = "td.bad{color:#a00000;font-weight:bold;background:#fde2e2;text-align:left}";

/// A cell saying a check failed: "EXCEEDED", "FAILED ...".
fn is_failure(cell: &str) -> bool {
    cell == "EXCEEDED" || cell.starts_with("FAILED")
}

pub(crate) fn table_html(h: &mut String, t: &ReportTable) {
    if !t.title.is_empty() {
        let _ = write!(h, "<h2>{}</h2>", esc(&t.title));
    }
    h.push_str("<table><tr>");
    for (i, c) in t.header.iter().enumerate() {
        let _ = write!(h, "<th{}>{}</th>", if i == 0 { " class=\"l\"" } else { "" }, esc(c));
    }
    h.push_str("</tr>");
    for r in &t.rows {
        h.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = match (i, is_failure(c)) {
                (_, true) => " class=\"bad\"",
                (0, false) => " class=\"l\"",
                _ => "",
            };
            let _ = write!(h, "<td{class}>{}</td>", esc(c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("plot {0}: {1}")]
    Plot(String, String),
}

impl fault::Fault for ReportError {
    fn kind(&self) -> fault::Kind {
        match self {
            ReportError::Io(..) => fault::Kind::Io,
            ReportError::Plot(..) => fault::Kind::Computation,
        }
    }
}

/// A plotting backend's failure (plotters' errors are generic over the
/// backend; their message is what is kept).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(pub String);

/// Files written.
#[derive(Clone, Debug)]
pub struct Written {
    pub html: PathBuf,
    pub json: PathBuf,
    pub pngs: Vec<PathBuf>,
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn fmt_num(v: f64) -> String {
    if v.is_nan() {
        "—".into()
    } else {
        format!("{v:.4e}")
    }
}

/// Table rows of parameters with their intervals (and the reference value).
#[doc(hidden)]
pub fn parameter_rows(h: &mut String, params: &[ParameterRow], with_reference: bool) {
    for p in params {
        // An interval of a positive value spanning more than four decades
        // (or unbounded) says nothing: the data did not determine it.
        let unbounded = !(p.ci95_low.is_nan() && p.ci95_high.is_nan())
            && p.value > 0.0
            && !(p.ci95_low.is_finite() && p.ci95_high.is_finite() && p.ci95_low > 0.0 && p.ci95_high / p.ci95_low < 1e4);
        if unbounded {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{} [{}]</td><td>{}</td><td colspan=\"2\">not determined by these data</td>",
                esc(&p.name),
                esc(&p.unit),
                fmt_num(p.value)
            );
        } else {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{} [{}]</td><td>{}</td><td>{}</td><td>{}</td>",
                esc(&p.name),
                esc(&p.unit),
                fmt_num(p.value),
                fmt_num(p.ci95_low),
                fmt_num(p.ci95_high)
            );
        }
        if with_reference {
            let _ = write!(h, "<td>{}</td>", fmt_num(p.reference));
        }
        h.push_str("</tr>");
    }
}

/// A paper reviewer's checklist of the figures a page's index lists
/// (#81): each is an SVG and a PNG of twice its pixels; no axis in cm
/// (the tables are in mm); no legend text cut; at most 8 colours, all
/// Okabe-Ito's (greys aside). The figures' names, or the first problem.
pub fn check_figures(dir: &Path) -> Result<Vec<String>, String> {
    let html = std::fs::read_to_string(dir.join("index.html")).map_err(|e| format!("{}/index.html: {e}", dir.display()))?;
    let index = html.split("<h2>Figures</h2>").nth(1).ok_or_else(|| format!("{}: no figure index", dir.display()))?;
    let names: Vec<String> = index.split(".svg\">").skip(1).filter_map(|s| s.split(".svg<").next()).map(String::from).collect();
    let safe: Vec<String> = style::OKABE_ITO.iter().map(|c| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)).collect();
    for name in &names {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).map_err(|e| format!("{name}.svg: {e}"))?;
        let png = std::fs::read(dir.join(format!("{name}.png"))).map_err(|e| format!("{name}.png: {e}"))?;
        let svg_width: u32 = svg.split("width=\"").nth(1).and_then(|w| w.split('"').next()?.parse().ok()).ok_or_else(|| format!("{name}.svg: no width"))?;
        let png_width = png.get(16..20).map(|b| u32::from_be_bytes(b.try_into().expect("four bytes")));
        if png_width != Some(2 * svg_width) {
            return Err(format!("{name}.png: {png_width:?} pixels wide, not twice the SVG's {svg_width}"));
        }
        if svg.contains("[cm]") || svg.contains('…') {
            return Err(format!("{name}: a cm axis or a cut label"));
        }
        // Bands and hollow marks keep their colour's hex and set an opacity.
        let mut colours: Vec<String> = ["stroke=\"#", "fill=\"#"]
            .iter()
            .flat_map(|k| svg.match_indices(k).map(move |(i, _)| i + k.len() - 1))
            .filter_map(|at| svg.get(at..at + 7).map(str::to_uppercase))
            .filter(|c| !(c[1..3] == c[3..5] && c[3..5] == c[5..7]))
            .collect();
        colours.sort();
        colours.dedup();
        if colours.is_empty() || colours.len() > 8 || !colours.iter().all(|c| safe.contains(c)) {
            return Err(format!("{name}: colours {colours:?} beside Okabe-Ito's {safe:?}"));
        }
    }
    Ok(names)
}

/// Writes figure `name`'s SVG beside the page (`name.svg`).
pub(crate) fn write_figure_svg(dir: &Path, name: &str, svg: &str) -> Result<(), ReportError> {
    let path = dir.join(format!("{name}.svg"));
    std::fs::write(&path, svg).map_err(|e| ReportError::Io(path, e))
}

/// The page's figure index: each figure's name, what it shows, and its
/// files (SVG, PNG at twice the pixels, and where `data` says so its series
/// as JSON, which `rodlab.plot` draws into a matplotlib Axes).
pub(crate) fn figure_index(h: &mut String, figures: &[(String, String, bool)]) {
    if figures.is_empty() {
        return;
    }
    h.push_str("<h2>Figures</h2><table><tr><th class=\"l\">figure</th><th class=\"l\">what it shows</th><th class=\"l\">files</th></tr>");
    for (name, what, data) in figures {
        let data = if *data { format!(", <a href=\"{0}.json\">{0}.json</a>", esc(name)) } else { String::new() };
        let _ = write!(
            h,
            "<tr><td class=\"l\"><a href=\"#{0}\">{0}</a></td><td class=\"l\">{1}</td><td class=\"l\"><a href=\"{0}.svg\">{0}.svg</a>, <a href=\"{0}.png\">{0}.png</a>{data}</td></tr>",
            esc(name),
            esc(what)
        );
    }
    h.push_str("</table>");
}

/// Writes `index.html`, `summary.json` and one PNG per plot into `dir`.
pub fn write_identification_report(dir: &Path, r: &IdentificationReport) -> Result<Written, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| ReportError::Io(dir.to_path_buf(), e))?;
    let figures = plots::identification_figures(r);
    let mut pngs = vec![];
    let mut svgs = vec![];
    for fig in &figures {
        let png = dir.join(format!("{}.png", fig.name));
        (fig.draw_png)(&png).map_err(|e| ReportError::Plot(fig.name.to_string(), e.0))?;
        pngs.push(png);
        let svg = (fig.draw_svg)().map_err(|e| ReportError::Plot(fig.name.to_string(), e.0))?;
        write_figure_svg(dir, fig.name, &svg)?;
        svgs.push((fig, svg));
    }
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }}
th {{ background: #eee; }} td.l, th.l {{ text-align: left; }}
.warn {{ background: #fff3cd; border: 1px solid #e0c36c; padding: 0.5em 1em; }}
figure {{ margin: 1.5em 0; }} figcaption {{ color: #555; }}
.thumbs img {{ width: 180px; border: 1px solid #ccc; margin-right: 0.5em; }}
{bad}
</style></head><body>
<h1>{title}</h1>
"#,
        title = esc(&r.title),
        bad = BAD_CELL_CSS
    );
    for p in &r.lead {
        let _ = write!(h, "<p class=\"lead\">{}</p>", esc(p));
    }
    if !r.warnings.is_empty() {
        h.push_str("<div class=\"warn\"><b>Warnings</b><ul>");
        for w in &r.warnings {
            let _ = write!(h, "<li>{}</li>", esc(w));
        }
        h.push_str("</ul></div>\n");
    }
    let reference = r.reference_label.as_deref();
    let _ = write!(
        h,
        "<h2>Parameters</h2><table><tr><th class=\"l\">parameter</th><th>identified</th><th>95 % CI low</th><th>95 % CI high</th>{}</tr>",
        reference.map_or(String::new(), |l| format!("<th>{}</th>", esc(l)))
    );
    parameter_rows(&mut h, &r.parameters, reference.is_some());
    let _ = write!(h, "</table><p>RMS position error: <b>{:.2} mm</b> with the identified parameters", r.rms_error_mm);
    if let Some(l) = reference {
        if r.rms_error_reference_mm.is_finite() {
            let _ = write!(h, ", {:.2} mm with the {}", r.rms_error_reference_mm, esc(l));
        } else {
            let _ = write!(h, "; with the {} the model finds no equilibrium for some experiment (see the table below)", esc(l));
        }
    }
    h.push_str(".</p>");
    h.push_str("<table>");
    for (k, v) in &r.facts {
        let _ = write!(h, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>", esc(k), esc(v));
    }
    h.push_str("</table>");
    if !r.correlation.is_empty() {
        h.push_str("<h3>Correlation</h3><table><tr><th></th>");
        for n in &r.correlation_names {
            let _ = write!(h, "<th>{}</th>", esc(n));
        }
        h.push_str("</tr>");
        for (n, row) in r.correlation_names.iter().zip(&r.correlation) {
            let _ = write!(h, "<tr><th>{}</th>", esc(n));
            for v in row {
                let _ = write!(h, "<td>{v:.3}</td>");
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
    }
    for alt in &r.alternatives {
        let _ = write!(h, "<h3>{}</h3><table><tr><th class=\"l\">parameter</th><th>value</th><th>95 % CI low</th><th>95 % CI high</th></tr>", esc(&alt.label));
        parameter_rows(&mut h, &alt.parameters, false);
        for (k, v) in &alt.extra {
            let _ = write!(h, "<tr><td class=\"l\">{}</td><td colspan=\"3\" class=\"l\">{}</td></tr>", esc(k), esc(v));
        }
        let _ = write!(h, "</table><p>RMS position error: {:.2} mm</p>", alt.rms_error_mm);
    }
    let _ = write!(
        h,
        "<h2>Experiments</h2><table><tr><th class=\"l\">experiment</th><th class=\"l\">inputs</th><th>error [mm]</th>{}<th>leave-one-out error [mm]</th></tr>",
        reference.map_or(String::new(), |l| format!("<th>error, {} [mm]</th>", esc(l)))
    );
    for e in &r.experiments {
        let j = |v: &[f64]| v.iter().map(|x| if x.is_nan() { "—".to_string() } else { format!("{x:.2}") }).collect::<Vec<_>>().join(", ");
        let reference_cell = match reference {
            Some(_) if e.errors_reference_mm.iter().all(|x| x.is_nan()) => "<td>no equilibrium</td>".to_string(),
            Some(_) => format!("<td>{}</td>", j(&e.errors_reference_mm)),
            None => String::new(),
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>{reference_cell}<td>{}</td></tr>",
            esc(&e.id),
            esc(&e.inputs),
            j(&e.errors_mm),
            j(&e.loo_errors_mm)
        );
    }
    h.push_str("</table>\n");
    for t in &r.tables {
        table_html(&mut h, t);
    }
    h.push_str("<h2>Plots</h2>\n");
    for (fig, svg) in &svgs {
        let _ = writeln!(
            h,
            "<figure id=\"{0}\">{1}<figcaption>{2} (<a href=\"{0}.svg\">SVG</a>, <a href=\"{0}.png\">PNG</a>)</figcaption></figure>",
            fig.name,
            svg,
            esc(&fig.caption)
        );
    }
    h.push_str("<h3>PNG copies</h3><p class=\"thumbs\">");
    for fig in &figures {
        let _ = write!(h, "<a href=\"{0}.png\"><img src=\"{0}.png\" alt=\"{1}\"></a>", fig.name, esc(&fig.caption));
    }
    h.push_str("</p>");
    figure_index(&mut h, &figures.iter().map(|f| (f.name.to_string(), f.caption.clone(), false)).collect::<Vec<_>>());
    h.push_str("<h2>Provenance</h2><table>");
    for (k, v) in &r.provenance {
        let _ = write!(h, "<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td></tr>", esc(k), esc(v));
    }
    h.push_str("</table>\n");
    h.push_str(SELF_CHECK_SCRIPT);
    h.push_str("</body></html>\n");
    let html = dir.join("index.html");
    std::fs::write(&html, h).map_err(|e| ReportError::Io(html.clone(), e))?;
    let json = dir.join("summary.json");
    let text = serde_json::to_string_pretty(r).expect("serialisable");
    std::fs::write(&json, text).map_err(|e| ReportError::Io(json.clone(), e))?;
    Ok(Written { html, json, pngs })
}
