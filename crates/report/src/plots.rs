//! The identification figures, drawn once for SVG (inlined, and a file)
//! and once for a PNG at twice its pixels. Positions in millimetres (as the
//! tables); shapes in each rod's own frame (its base at the origin, x
//! along it at the base), side (x-z) and top (x-y) views.

use crate::style::{palette, repeats, Scale};
use crate::{DrawError, ExperimentView, IdentificationReport, P3};
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
                    $f(&root, r, Scale::SVG)?;
                    root.present().map_err(|e| DrawError(e.to_string()))?;
                }
                Ok(s)
            }),
            draw_png: Box::new(move |path: &Path| {
                let root = BitMapBackend::new(path, Scale::PNG.size(SIZE)).into_drawing_area();
                root.fill(&WHITE).map_err(|e| DrawError(e.to_string()))?;
                $f(&root, r, Scale::PNG)?;
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
            format!("Measured vs predicted coordinates of every measured point [mm] (identified parameters: filled{}).", with("; REF: hollow")),
            parity,
            r
        ),
        figure!(
            "shapes_side",
            format!(
                "Rod shapes, side view (x-z in each rod's frame: its base at the origin) [mm]: identified parameters (solid){}, measured points (crosses).",
                with(", REF (dashed)")
            ),
            shapes_side,
            r
        ),
        figure!(
            "shapes_top",
            format!("Rod shapes, top view (x-y in each rod's frame) [mm]: identified parameters (solid){}, measured points (crosses).", with(", REF (dashed)")),
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

/// Metres to millimetres.
const MM: f64 = 1e3;

/// The mesh every figure shares: labels and axis titles at the scale,
/// light grid lines.
macro_rules! mesh {
    ($chart:expr, $k:expr) => {
        $chart
            .configure_mesh()
            .label_style(("sans-serif", $k.font(13.0)))
            .axis_desc_style(("sans-serif", $k.font(15.0)))
            .light_line_style(BLACK.mix(0.05))
            .bold_line_style(BLACK.mix(0.15))
    };
}

fn parity<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, k: Scale) -> DrawResult {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for ex in &r.experiments {
        for p in ex.measured_m.iter().chain(&ex.predicted_m).chain(&ex.predicted_reference_m) {
            for v in p {
                lo = lo.min(v * MM);
                hi = hi.max(v * MM);
            }
        }
    }
    let pad = 0.05 * (hi - lo).max(1.0);
    let (lo, hi) = (lo - pad, hi + pad);
    let (plot_area, legend_area) = crate::page::with_legend_area(root, true, k);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption("Parity: measured vs predicted [mm]", ("sans-serif", k.font(20.0)))
        .margin(k.px(15))
        .x_label_area_size(k.px(40))
        .y_label_area_size(k.px(60))
        .build_cartesian_2d(lo..hi, lo..hi)
        .map_err(e)?;
    mesh!(chart, k).x_desc("measured [mm]").y_desc("predicted [mm]").draw().map_err(e)?;
    chart.draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.mix(0.4).stroke_width(k.px(1)))).map_err(e)?;
    let mut entries = vec![];
    for (a, name) in AXES.iter().enumerate() {
        let color = palette(a);
        let pts: Vec<(f64, f64)> =
            r.experiments.iter().flat_map(|ex| ex.measured_m.iter().zip(&ex.predicted_m).map(move |(m, p)| (m[a] * MM, p[a] * MM))).collect();
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, k.px(5), color.filled()))).map_err(e)?;
        entries.push(crate::page::LegendEntry { label: format!("{name} (identified)"), color, style: crate::page::Style::Points });
        if r.reference_label.is_some() {
            let pts: Vec<(f64, f64)> =
                r.experiments.iter().flat_map(|ex| ex.measured_m.iter().zip(&ex.predicted_reference_m).map(move |(m, p)| (m[a] * MM, p[a] * MM))).collect();
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, k.px(5), color.stroke_width(k.px(2))))).map_err(e)?;
        }
    }
    if let Some(area) = legend_area {
        crate::page::draw_legend(&area, &entries, k).map_err(e)?;
    }
    Ok(())
}

/// `p` (world) in experiment `ex`'s rod frame \[mm\]: its base at the
/// origin, x along the rod at the base.
fn in_rod_frame(ex: &ExperimentView, p: &P3) -> P3 {
    let d = [p[0] - ex.base_m[0], p[1] - ex.base_m[1], p[2] - ex.base_m[2]];
    let r = &ex.base_rotation;
    // R^T d: the rod frame's axes are the rotation's columns.
    std::array::from_fn(|i| (r[0][i] * d[0] + r[1][i] * d[1] + r[2][i] * d[2]) * MM)
}

fn shapes<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, axis: usize, title: &str, k: Scale) -> DrawResult {
    let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
    let mut ys = (f64::INFINITY, f64::NEG_INFINITY);
    for ex in &r.experiments {
        for p in ex.shape_m.iter().chain(&ex.shape_reference_m).chain(&ex.measured_m) {
            let q = in_rod_frame(ex, p);
            xs = (xs.0.min(q[0]), xs.1.max(q[0]));
            ys = (ys.0.min(q[axis]), ys.1.max(q[axis]));
        }
    }
    // Equal scale on both axes.
    let span = (xs.1 - xs.0).max(ys.1 - ys.0) * 1.1 + 10.0;
    let cx = 0.5 * (xs.0 + xs.1);
    let cy = 0.5 * (ys.0 + ys.1);
    let (plot_area, legend_area) = crate::page::with_legend_area(root, true, k);
    let aspect = plot_area.dim_in_pixel().0 as f64 / k.px(SIZE.1) as f64;
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", k.font(20.0)))
        .margin(k.px(15))
        .x_label_area_size(k.px(40))
        .y_label_area_size(k.px(60))
        .build_cartesian_2d((cx - 0.5 * span * aspect)..(cx + 0.5 * span * aspect), (cy - 0.5 * span)..(cy + 0.5 * span))
        .map_err(e)?;
    mesh!(chart, k).x_desc("x along the rod [mm]").y_desc(format!("{} [mm]", AXES[axis])).draw().map_err(e)?;
    // Past eight experiments the colours repeat: those draw dashed, with
    // hollow circles for their points.
    for (i, ex) in r.experiments.iter().enumerate() {
        let color = palette(i);
        let line: Vec<(f64, f64)> = ex.shape_m.iter().map(|p| in_rod_frame(ex, p)).map(|q| (q[0], q[axis])).collect();
        if repeats(i) {
            chart.draw_series(DashedLineSeries::new(line, k.px(8), k.px(5), color.stroke_width(k.px(2)))).map_err(e)?;
        } else {
            chart.draw_series(LineSeries::new(line, color.stroke_width(k.px(2)))).map_err(e)?;
        }
        let reference: Vec<(f64, f64)> = ex.shape_reference_m.iter().map(|p| in_rod_frame(ex, p)).map(|q| (q[0], q[axis])).collect();
        chart.draw_series(DashedLineSeries::new(reference, k.px(6), k.px(4), color.mix(0.7).stroke_width(k.px(1)))).map_err(e)?;
        let seen = ex.measured_m.iter().map(|p| in_rod_frame(ex, p)).map(|q| (q[0], q[axis]));
        if repeats(i) {
            chart.draw_series(seen.map(|p| Circle::new(p, k.px(5), color.stroke_width(k.px(2))))).map_err(e)?;
        } else {
            chart.draw_series(seen.map(|p| Cross::new(p, k.px(6), color.stroke_width(k.px(2))))).map_err(e)?;
        }
    }
    let entries: Vec<crate::page::LegendEntry> = r
        .experiments
        .iter()
        .enumerate()
        .map(|(i, ex)| crate::page::LegendEntry {
            label: format!("experiment {}", ex.id),
            color: palette(i),
            style: if repeats(i) { crate::page::Style::Dashed } else { crate::page::Style::Line },
        })
        .collect();
    if let Some(area) = legend_area {
        crate::page::draw_legend(&area, &entries, k).map_err(e)?;
    }
    Ok(())
}

fn shapes_side<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, k: Scale) -> DrawResult {
    shapes(root, r, 2, "Rod shapes, side view (x-z, the rod's frame) [mm]", k)
}

fn shapes_top<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, k: Scale) -> DrawResult {
    shapes(root, r, 1, "Rod shapes, top view (x-y, the rod's frame) [mm]", k)
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

fn residuals<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, k: Scale) -> DrawResult {
    let n = r.experiments.len();
    let mut series: Vec<(&str, Vec<f64>)> = vec![("identified", r.experiments.iter().map(|x| rms(&x.errors_mm)).collect())];
    if let Some(label) = &r.reference_label {
        series.push((label.as_str(), r.experiments.iter().map(|x| rms(&x.errors_reference_mm)).collect()));
    }
    series.push(("leave-one-out", r.experiments.iter().map(|x| rms(&x.loo_errors_mm)).collect()));
    // The axis to the data: 0.05 mm bars on a 0.06 mm axis, not a 1 mm one.
    let top = series.iter().flat_map(|s| s.1.iter()).filter(|v| v.is_finite()).fold(0.0f64, |a, b| a.max(*b)).max(1e-6) * 1.15;
    let (plot_area, legend_area) = crate::page::with_legend_area(root, true, k);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption("Position error per experiment [mm]", ("sans-serif", k.font(20.0)))
        .margin(k.px(15))
        .x_label_area_size(k.px(40))
        .y_label_area_size(k.px(60))
        .build_cartesian_2d(0.0..n as f64, 0.0..top)
        .map_err(e)?;
    let ids: Vec<String> = r.experiments.iter().map(|x| x.id.clone()).collect();
    let ticks = crate::page::tick_format(top);
    mesh!(chart, k)
        .x_labels(n.clamp(1, 20))
        .x_label_formatter(&|v| ids.get(v.floor() as usize).cloned().unwrap_or_default())
        .y_label_formatter(&ticks)
        .x_desc("experiment [-]")
        .y_desc("error [mm]")
        .draw()
        .map_err(e)?;
    for (s, (_, vals)) in series.iter().enumerate() {
        let color = palette(s);
        chart
            .draw_series(vals.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, v)| {
                let x0 = i as f64 + 0.15 + 0.23 * s as f64;
                Rectangle::new([(x0, 0.0), (x0 + 0.2, *v)], color.filled())
            }))
            .map_err(e)?;
    }
    let entries: Vec<crate::page::LegendEntry> = series
        .iter()
        .enumerate()
        .map(|(s, (label, _))| crate::page::LegendEntry { label: label.to_string(), color: palette(s), style: crate::page::Style::Points })
        .collect();
    if let Some(area) = legend_area {
        crate::page::draw_legend(&area, &entries, k).map_err(e)?;
    }
    Ok(())
}

fn convergence<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &IdentificationReport, k: Scale) -> DrawResult {
    let h: Vec<f64> = r.history.iter().map(|c| c.max(1e-30)).collect();
    let lo = h.iter().cloned().fold(f64::INFINITY, f64::min).max(1e-30) * 0.5;
    let hi = h.iter().cloned().fold(0.0, f64::max).max(lo * 10.0) * 2.0;
    let mut chart = ChartBuilder::on(root)
        .caption("Convergence (best start)", ("sans-serif", k.font(20.0)))
        .margin(k.px(15))
        .x_label_area_size(k.px(40))
        .y_label_area_size(k.px(75))
        .build_cartesian_2d(0.0..(h.len().max(2) - 1) as f64, (lo..hi).log_scale())
        .map_err(e)?;
    mesh!(chart, k).x_desc("iteration [-]").y_desc("cost [sigma^2]").y_label_formatter(&|v| format!("{v:.1e}")).draw().map_err(e)?;
    let color = palette(0);
    chart.draw_series(LineSeries::new(h.iter().enumerate().map(|(i, c)| (i as f64, *c)), color.stroke_width(k.px(2)))).map_err(e)?;
    chart.draw_series(h.iter().enumerate().map(|(i, c)| Circle::new((i as f64, *c), k.px(4), color.filled()))).map_err(e)?;
    Ok(())
}
