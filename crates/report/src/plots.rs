//! The identification figures, drawn once for SVG (inlined) and once for PNG.

use crate::{DrawError, IdentificationReport, P3};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

type DrawResult = Result<(), DrawError>;

pub struct Figure<'a> {
    pub name: &'static str,
    pub caption: String,
    pub draw_svg: Box<dyn Fn() -> Result<String, DrawError> + 'a>,
    pub draw_png: Box<dyn Fn(&Path) -> DrawResult + 'a>,
}

const SIZE: (u32, u32) = (900, 520);

macro_rules! figure {
    ($name:expr, $caption:expr, $f:ident, $r:expr) => {{
        let r: &IdentificationReport = $r;
        Figure {
            name: $name,
            caption: $caption,
            draw_svg: Box::new(move || {
                let mut s = String::new();
                {
                    let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
                    root.fill(&WHITE).map_err(|e| DrawError(e.to_string()))?;
                    $f(&root, r)?;
                    root.present().map_err(|e| DrawError(e.to_string()))?;
                }
                Ok(s)
            }),
            draw_png: Box::new(move |path: &Path| {
                let root = BitMapBackend::new(path, SIZE).into_drawing_area();
                root.fill(&WHITE).map_err(|e| DrawError(e.to_string()))?;
                $f(&root, r)?;
                root.present().map_err(|e| DrawError(e.to_string()))
            }),
        }
    }};
}

pub fn identification_figures(r: &IdentificationReport) -> Vec<Figure<'_>> {
    // The reference's part of each caption, when there is one.
    let with = |text: &str| r.reference_label.as_ref().map_or(String::new(), |l| text.replace("REF", l));
    vec![
        figure!(
            "parity",
            format!("Measured vs predicted coordinates of every measured point (identified parameters: filled{}).", with("; REF: hollow")),
            parity,
            r
        ),
        figure!(
            "shapes_side",
            format!("Rod shapes, side view (x-z): identified parameters (solid){}, measured points (crosses).", with(", REF (dashed)")),
            shapes_side,
            r
        ),
        figure!(
            "shapes_top",
            format!("Rod shapes, top view (x-y): identified parameters (solid){}, measured points (crosses).", with(", REF (dashed)")),
            shapes_top,
            r
        ),
        figure!("residuals", format!("Position error per experiment [mm]: identified fit{}, leave-one-out prediction.", with(", REF")), residuals, r),
        figure!("convergence", "Convergence of the best start: cost 1/2 |r|^2 per iteration (log scale).".to_string(), convergence, r),
    ]
}

fn e<T: std::fmt::Display>(x: T) -> DrawError {
    DrawError(x.to_string())
}

const AXES: [&str; 3] = ["x", "y", "z"];

fn palette(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

fn parity<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport) -> DrawResult {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for ex in &r.experiments {
        for p in ex.measured_m.iter().chain(&ex.predicted_m).chain(&ex.predicted_reference_m) {
            for v in p {
                lo = lo.min(v * 100.0);
                hi = hi.max(v * 100.0);
            }
        }
    }
    let pad = 0.05 * (hi - lo).max(1.0);
    let (lo, hi) = (lo - pad, hi + pad);
    let mut chart = ChartBuilder::on(root)
        .caption("Parity: measured vs predicted [cm]", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(lo..hi, lo..hi)
        .map_err(e)?;
    chart.configure_mesh().x_desc("measured [cm]").y_desc("predicted [cm]").draw().map_err(e)?;
    chart.draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.mix(0.4))).map_err(e)?;
    for (a, name) in AXES.iter().enumerate() {
        let color = palette(a);
        let pts: Vec<(f64, f64)> =
            r.experiments.iter().flat_map(|ex| ex.measured_m.iter().zip(&ex.predicted_m).map(move |(m, p)| (m[a] * 100.0, p[a] * 100.0))).collect();
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 5, color.filled())))
            .map_err(e)?
            .label(format!("{name} (identified)"))
            .legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
        if r.reference_label.is_some() {
            let pts: Vec<(f64, f64)> = r
                .experiments
                .iter()
                .flat_map(|ex| ex.measured_m.iter().zip(&ex.predicted_reference_m).map(move |(m, p)| (m[a] * 100.0, p[a] * 100.0)))
                .collect();
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, color.stroke_width(2)))).map_err(e)?;
        }
    }
    // On a parity plot the data lie along the diagonal: the upper left
    // corner is free.
    chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(e)?;
    Ok(())
}

fn shapes<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, axis: usize, title: &str) -> DrawResult {
    let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
    let mut ys = (f64::INFINITY, f64::NEG_INFINITY);
    let mut grow = |p: &P3| {
        xs = (xs.0.min(p[0] * 100.0), xs.1.max(p[0] * 100.0));
        ys = (ys.0.min(p[axis] * 100.0), ys.1.max(p[axis] * 100.0));
    };
    for ex in &r.experiments {
        ex.shape_m.iter().chain(&ex.shape_reference_m).chain(&ex.measured_m).for_each(&mut grow);
    }
    // Equal scale on both axes.
    let span = (xs.1 - xs.0).max(ys.1 - ys.0) * 1.1 + 1.0;
    let cx = 0.5 * (xs.0 + xs.1);
    let cy = 0.5 * (ys.0 + ys.1);
    let (plot_area, legend_area) = crate::page::with_legend_area(root, true);
    let aspect = plot_area.dim_in_pixel().0 as f64 / SIZE.1 as f64;
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d((cx - 0.5 * span * aspect)..(cx + 0.5 * span * aspect), (cy - 0.5 * span)..(cy + 0.5 * span))
        .map_err(e)?;
    chart.configure_mesh().x_desc("x [cm]").y_desc(format!("{} [cm]", AXES[axis])).draw().map_err(e)?;
    for (i, ex) in r.experiments.iter().enumerate() {
        let color = palette(i + 3);
        let line: Vec<(f64, f64)> = ex.shape_m.iter().map(|p| (p[0] * 100.0, p[axis] * 100.0)).collect();
        chart.draw_series(LineSeries::new(line, color.stroke_width(2))).map_err(e)?;
        let reference: Vec<(f64, f64)> = ex.shape_reference_m.iter().map(|p| (p[0] * 100.0, p[axis] * 100.0)).collect();
        chart.draw_series(DashedLineSeries::new(reference, 6, 4, color.mix(0.7).stroke_width(1))).map_err(e)?;
        chart.draw_series(ex.measured_m.iter().map(|p| Cross::new((p[0] * 100.0, p[axis] * 100.0), 6, color.stroke_width(2)))).map_err(e)?;
    }
    let entries: Vec<crate::page::LegendEntry> = r
        .experiments
        .iter()
        .enumerate()
        .map(|(i, ex)| crate::page::LegendEntry { label: format!("experiment {}", ex.id), color: palette(i + 3), style: crate::page::Style::Line })
        .collect();
    if let Some(area) = legend_area {
        crate::page::draw_legend(&area, &entries).map_err(e)?;
    }
    Ok(())
}

fn shapes_side<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport) -> DrawResult {
    shapes(root, r, 2, "Rod shapes, side view (x-z) [cm]")
}

fn shapes_top<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport) -> DrawResult {
    shapes(root, r, 1, "Rod shapes, top view (x-y) [cm]")
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

fn residuals<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport) -> DrawResult {
    let n = r.experiments.len();
    let mut series: Vec<(&str, Vec<f64>)> = vec![("identified", r.experiments.iter().map(|x| rms(&x.errors_mm)).collect())];
    if let Some(label) = &r.reference_label {
        series.push((label.as_str(), r.experiments.iter().map(|x| rms(&x.errors_reference_mm)).collect()));
    }
    series.push(("leave-one-out", r.experiments.iter().map(|x| rms(&x.loo_errors_mm)).collect()));
    let top = series.iter().flat_map(|s| s.1.iter()).filter(|v| v.is_finite()).fold(1.0f64, |a, b| a.max(*b)) * 1.15;
    let (plot_area, legend_area) = crate::page::with_legend_area(root, true);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption("Position error per experiment [mm]", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)
        .map_err(e)?;
    let ids: Vec<String> = r.experiments.iter().map(|x| x.id.clone()).collect();
    chart
        .configure_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&|v| ids.get(v.floor() as usize).cloned().unwrap_or_default())
        .x_desc("experiment [-]")
        .y_desc("error [mm]")
        .draw()
        .map_err(e)?;
    for (k, (_, vals)) in series.iter().enumerate() {
        let color = palette(k);
        chart
            .draw_series(vals.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, v)| {
                let x0 = i as f64 + 0.15 + 0.23 * k as f64;
                Rectangle::new([(x0, 0.0), (x0 + 0.2, *v)], color.filled())
            }))
            .map_err(e)?;
    }
    let entries: Vec<crate::page::LegendEntry> = series
        .iter()
        .enumerate()
        .map(|(k, (label, _))| crate::page::LegendEntry { label: label.to_string(), color: palette(k), style: crate::page::Style::Points })
        .collect();
    if let Some(area) = legend_area {
        crate::page::draw_legend(&area, &entries).map_err(e)?;
    }
    Ok(())
}

fn convergence<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport) -> DrawResult {
    let h: Vec<f64> = r.history.iter().map(|c| c.max(1e-30)).collect();
    let lo = h.iter().cloned().fold(f64::INFINITY, f64::min).max(1e-30) * 0.5;
    let hi = h.iter().cloned().fold(0.0, f64::max).max(lo * 10.0) * 2.0;
    let mut chart = ChartBuilder::on(root)
        .caption("Convergence (best start)", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..(h.len().max(2) - 1) as f64, (lo..hi).log_scale())
        .map_err(e)?;
    chart.configure_mesh().x_desc("iteration [-]").y_desc("cost [sigma^2]").y_label_formatter(&|v| format!("{v:.1e}")).draw().map_err(e)?;
    chart.draw_series(LineSeries::new(h.iter().enumerate().map(|(i, c)| (i as f64, *c)), BLUE.stroke_width(2))).map_err(e)?;
    chart.draw_series(h.iter().enumerate().map(|(i, c)| Circle::new((i as f64, *c), 4, BLUE.filled()))).map_err(e)?;
    Ok(())
}
