//! Line plots as SVG text, drawn by the server so that the page needs no
//! plotting library: time plots of the streams, strain along the rod, the
//! rod's shape.

use std::fmt::Write;

const W: f64 = 420.0;
const H: f64 = 170.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 26.0;
const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

/// One line: its name and points (x, y); NaN points break it.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A plot's frame.
pub struct Axes<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    /// x range (None: the data's).
    pub x_range: Option<(f64, f64)>,
    /// A vertical line (the replay's time).
    pub cursor: Option<f64>,
    /// One metre is as long on both axes (a shape).
    pub equal_aspect: bool,
}

fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    (lo <= hi).then(|| if hi - lo < 1e-12 { (lo - 0.5 * lo.abs().max(1e-3), hi + 0.5 * hi.abs().max(1e-3)) } else { (lo, hi) })
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e4).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The plot as an `<svg>` element.
pub fn plot(axes: &Axes, series: &[Series]) -> String {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" class="plot"><text x="{LEFT}" y="13" class="title">{}</text>"#,
        escape(axes.title)
    );
    let (Some((mut x0, mut x1)), Some((mut y0, mut y1))) = (axes.x_range.or_else(|| range(xs())), range(ys())) else {
        svg.push_str(r#"<text x="150" y="90" class="empty">no data yet</text></svg>"#);
        return svg;
    };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    if axes.equal_aspect {
        // Widen the narrower range so that both have one scale.
        let scale = ((x1 - x0) / pw).max((y1 - y0) / ph);
        let (cx, cy) = (0.5 * (x0 + x1), 0.5 * (y0 + y1));
        (x0, x1, y0, y1) = (cx - 0.5 * scale * pw, cx + 0.5 * scale * pw, cy - 0.5 * scale * ph, cy + 0.5 * scale * ph);
    } else {
        let pad = 0.05 * (y1 - y0);
        (y0, y1) = (y0 - pad, y1 + pad);
    }
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| TOP + (y1 - y) / (y1 - y0) * ph;
    let _ = write!(svg, r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>"#);
    for x in nice_ticks(x0, x1) {
        let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#, px(x), H - BOTTOM + 12.0, tick(x));
    }
    for y in nice_ticks(y0, y1) {
        let _ = write!(svg, r#"<line x1="{LEFT}" x2="{:.1}" y1="{1:.1}" y2="{1:.1}" class="grid"/>"#, LEFT + pw, py(y));
        let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#, LEFT - 3.0, py(y) + 3.0, tick(y));
    }
    let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="middle">{}</text>"#, LEFT + 0.5 * pw, H - 2.0, escape(axes.x_label));
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut d = String::new();
        let mut pen_down = false;
        for &(x, y) in &s.points {
            if !(x.is_finite() && y.is_finite()) || x < x0 || x > x1 {
                pen_down = false;
                continue;
            }
            let _ = write!(d, "{}{:.1},{:.1}", if pen_down { " L" } else { " M" }, px(x), py(y).clamp(TOP, TOP + ph));
            pen_down = true;
        }
        let _ = write!(svg, r#"<path d="{d}" stroke="{colour}" class="line"/>"#);
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="13" fill="{colour}" class="legend" text-anchor="end">{}</text>"#,
            W - RIGHT - 70.0 * (series.len() - 1 - i) as f64,
            escape(&s.name)
        );
    }
    if let Some(c) = axes.cursor.filter(|c| *c >= x0 && *c <= x1) {
        let _ = write!(svg, r#"<line x1="{0:.1}" x2="{0:.1}" y1="{TOP}" y2="{1:.1}" class="cursor"/>"#, px(c), TOP + ph);
    }
    svg.push_str("</svg>");
    svg
}

/// Ticks at 1, 2 or 5 times a power of ten, about five across `[a, b]`.
fn nice_ticks(a: f64, b: f64) -> Vec<f64> {
    let raw = (b - a) / 5.0;
    if !(raw.is_finite() && raw > 0.0) {
        return vec![];
    }
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p);
    let first = (a / step).ceil() as i64;
    let last = (b / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_places_its_points_inside_the_frame_and_breaks_at_nan() {
        let s = Series { name: "fx_n".into(), points: vec![(0.0, 0.0), (1.0, 2.0), (f64::NAN, 1.0), (2.0, -2.0)] };
        let svg = plot(&Axes { title: "force [N]", x_label: "t [s]", x_range: Some((0.0, 2.0)), cursor: Some(1.0), equal_aspect: false }, &[s]);
        // x 0..2 maps to LEFT..W-RIGHT; the NaN lifts the pen.
        assert!(svg.contains(&format!("d=\" M{LEFT:.1},")), "{svg}");
        assert!(svg.contains(&format!(" M{:.1},", W - RIGHT)), "{svg}");
        assert!(svg.contains("class=\"cursor\""));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(nice_ticks(-1.025, 18.97), vec![0.0, 5.0, 10.0, 15.0]);
        let t = nice_ticks(0.0, 1.0);
        assert_eq!(t.len(), 6);
        assert!(t.iter().enumerate().all(|(k, v)| (v - 0.2 * k as f64).abs() < 1e-12), "{t:?}");
        let empty = plot(&Axes { title: "t", x_label: "", x_range: None, cursor: None, equal_aspect: true }, &[]);
        assert!(empty.contains("no data yet"));
    }
}
