//! Validation figures: a recorded experiment against its simulation, on
//! the session's time base. In the data flow record -> track -> observe ->
//! identify -> simulate -> report, this is the comparison the validation
//! report shows: error figures (RMS, max, as % of the measured range or of
//! a scale), stick/slide phases from tracked motion, the tip's slide along
//! the table, and checks against limits. Plain numbers in and out: reading
//! sessions and simulations is the caller's job.

use lie::Vec3;
use serde::Serialize;

/// Largest minus smallest finite value (0 when none).
pub fn range(v: &[f64]) -> f64 {
    let (lo, hi) = v.iter().filter(|x| x.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    if hi >= lo {
        hi - lo
    } else {
        0.0
    }
}

/// Errors of simulated against measured values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ErrorFigures {
    /// Pairs compared (both finite).
    pub samples: usize,
    pub rms: f64,
    pub max_abs: f64,
    /// Mean signed error, simulated minus measured.
    pub mean: f64,
    /// What the percentages are of (e.g. the measured range).
    pub scale: f64,
    pub rms_pct: f64,
    pub max_pct: f64,
}

fn figures(diffs: impl Iterator<Item = f64>, signed_mean: f64, scale: f64) -> ErrorFigures {
    let (mut n, mut sq, mut max) = (0usize, 0.0, 0.0f64);
    for d in diffs {
        n += 1;
        sq += d * d;
        max = max.max(d.abs());
    }
    let rms = if n > 0 { (sq / n as f64).sqrt() } else { f64::NAN };
    let pct = |x: f64| if scale > 0.0 { 100.0 * x / scale } else { f64::NAN };
    ErrorFigures { samples: n, rms, max_abs: if n > 0 { max } else { f64::NAN }, mean: signed_mean, scale, rms_pct: pct(rms), max_pct: pct(max) }
}

/// Scalar errors; percentages of `scale`.
pub fn errors(measured: &[f64], simulated: &[f64], scale: f64) -> ErrorFigures {
    let d: Vec<f64> = measured.iter().zip(simulated).filter(|(m, s)| m.is_finite() && s.is_finite()).map(|(m, s)| s - m).collect();
    let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
    figures(d.into_iter(), mean, scale)
}

/// Distances between measured and simulated points; `mean` is the mean
/// distance. Percentages of `scale`.
pub fn point_errors(measured: &[Vec3], simulated: &[Vec3], scale: f64) -> ErrorFigures {
    let d: Vec<f64> = measured.iter().zip(simulated).map(|(m, s)| (s - m).norm()).filter(|x| x.is_finite()).collect();
    let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
    figures(d.into_iter(), mean, scale)
}

/// Mean of `measured - simulated` (a consistent offset points at the
/// rig's frames rather than at the model).
pub fn mean_offset(measured: &[Vec3], simulated: &[Vec3]) -> Vec3 {
    let d: Vec<Vec3> = measured.iter().zip(simulated).map(|(m, s)| m - s).filter(|d| d.iter().all(|x| x.is_finite())).collect();
    d.iter().sum::<Vec3>() / d.len().max(1) as f64
}

/// The state of a contact over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Phase {
    Free,
    Stick,
    Slide,
}

impl Phase {
    /// Height in a timeline plot.
    pub fn level(self) -> f64 {
        match self {
            Phase::Free => 0.0,
            Phase::Stick => 1.0,
            Phase::Slide => 2.0,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Phase::Free => "free",
            Phase::Stick => "stick",
            Phase::Slide => "slide",
        }
    }
}

/// The table: a point on it and its unit normal (up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plane {
    pub point_m: Vec3,
    pub normal: Vec3,
}

impl Plane {
    pub fn height_m(&self, p: &Vec3) -> f64 {
        self.normal.dot(&(p - self.point_m))
    }

    /// The component of `d` in the plane.
    pub fn tangential(&self, d: &Vec3) -> Vec3 {
        d - self.normal * self.normal.dot(d)
    }
}

/// How phases are read from tracked motion.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PhaseOptions {
    /// In contact when the contact point is less than this above the table
    /// (a few times the tracking noise).
    pub contact_gap_m: f64,
    /// Sliding when the contact point moves faster than this along the table.
    pub slide_speed_m_s: f64,
    /// Speeds are slopes of lines fitted over this window (noise averaging).
    pub speed_window_s: f64,
}

/// The point of a rod's end face nearest the table: the face's centre
/// moved by the radius towards the table, within the face (normal to the
/// tangent).
pub fn lowest_rim_point(centre: &Vec3, tangent: &Vec3, radius_m: f64, plane: &Plane) -> Vec3 {
    let t = tangent.normalize();
    let down = -plane.normal + t * t.dot(&plane.normal);
    if down.norm() < 1e-9 {
        *centre
    } else {
        centre + down.normalize() * radius_m
    }
}

/// Speed along the table of `points` at every sample (line fits over the window).
pub fn tangential_speeds(t_s: &[f64], points: &[Vec3], plane: &Plane, window_s: f64) -> Vec<f64> {
    lie::series::line_fit_velocities(t_s, points, window_s).iter().map(|v| plane.tangential(v).norm()).collect()
}

/// Phases of a tracked contact point over time.
pub fn measured_phases(t_s: &[f64], points: &[Vec3], plane: &Plane, o: &PhaseOptions) -> Vec<Phase> {
    let speeds = tangential_speeds(t_s, points, plane, o.speed_window_s);
    points
        .iter()
        .zip(speeds)
        .map(|(p, v)| {
            // A NaN height (lost marker) is no contact.
            let touching = plane.height_m(p) < o.contact_gap_m;
            if !touching {
                Phase::Free
            } else if v > o.slide_speed_m_s {
                Phase::Slide
            } else {
                Phase::Stick
            }
        })
        .collect()
}

/// Fraction of samples where both timelines agree (NaN when empty).
pub fn agreement(a: &[Phase], b: &[Phase]) -> f64 {
    let n = a.len().min(b.len());
    if n == 0 {
        return f64::NAN;
    }
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n as f64
}

/// Distance along the table that `points` moved since the first sample
/// in contact (0 before).
pub fn slide_since_touch(points: &[Vec3], phases: &[Phase], plane: &Plane) -> Vec<f64> {
    let touch = phases.iter().position(|p| *p != Phase::Free);
    points
        .iter()
        .enumerate()
        .map(|(i, p)| match touch {
            Some(k) if i >= k => plane.tangential(&(p - points[k])).norm(),
            _ => 0.0,
        })
        .collect()
}

/// A figure checked against a limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub value: f64,
    pub limit: f64,
    pub unit: String,
    /// Good when the value is at least the limit (agreement), else at most.
    pub at_least: bool,
    pub pass: bool,
}

impl Check {
    pub fn at_most(name: impl Into<String>, value: f64, limit: f64, unit: &str) -> Check {
        Check { name: name.into(), value, limit, unit: unit.into(), at_least: false, pass: value <= limit }
    }

    pub fn at_least(name: impl Into<String>, value: f64, limit: f64, unit: &str) -> Check {
        Check { name: name.into(), value, limit, unit: unit.into(), at_least: true, pass: value >= limit }
    }

    /// "strain RMS error 3.2 % <= 10 %: pass".
    pub fn line(&self) -> String {
        format!(
            "{} {:.3} {} {} {} {}: {}",
            self.name,
            self.value,
            self.unit,
            if self.at_least { ">=" } else { "<=" },
            self.limit,
            self.unit,
            if self.pass { "pass" } else { "EXCEEDED" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: Plane = Plane { point_m: Vec3::new(0.0, 0.0, 0.0), normal: Vec3::new(0.0, 0.0, 1.0) };

    #[test]
    fn error_figures_of_a_known_difference() {
        let m = [0.0, 1.0, 2.0, 3.0, f64::NAN];
        let s = [1.0, 0.0, 3.0, 2.0, 5.0];
        let e = errors(&m, &s, range(&m));
        assert_eq!(e.samples, 4);
        assert!((e.rms - 1.0).abs() < 1e-15 && (e.max_abs - 1.0).abs() < 1e-15 && e.mean.abs() < 1e-15);
        assert!((e.rms_pct - 100.0 / 3.0).abs() < 1e-12);
        let p = point_errors(&[Vec3::zeros(), Vec3::x()], &[Vec3::new(0.0, 3.0, 4.0), Vec3::x()], 10.0);
        assert!((p.max_abs - 5.0).abs() < 1e-15 && (p.rms - (12.5f64).sqrt()).abs() < 1e-12 && (p.max_pct - 50.0).abs() < 1e-12);
        assert_eq!(mean_offset(&[Vec3::new(1.0, 0.0, 0.0)], &[Vec3::zeros()]), Vec3::new(1.0, 0.0, 0.0));
        // A moving average keeps a line (centred window), shortened at the ends.
        let t: Vec<f64> = (0..11).map(|k| k as f64 * 0.1).collect();
        let v: Vec<Vec3> = t.iter().map(|t| Vec3::new(*t, 0.0, 1.0)).collect();
        let m = lie::series::moving_average(&t, &v, 0.25);
        assert!((m[5] - v[5]).norm() < 1e-15 && (m[0].x - 0.05).abs() < 1e-15, "{:?} {:?}", m[5], m[0]);
    }

    #[test]
    fn the_rim_point_of_a_face_tilted_45_degrees() {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let p = lowest_rim_point(&Vec3::new(0.0, 0.0, 0.01), &Vec3::new(s, 0.0, -s), 0.005, &TABLE);
        // The face's lowest point: r cos 45 deg lower and r sin 45 deg further back.
        assert!((p - Vec3::new(-0.005 * s, 0.0, 0.01 - 0.005 * s)).norm() < 1e-15, "{p:?}");
    }

    /// A point comes down at 5 mm/s, touches at t = 1 s, sticks for 1 s,
    /// slides along x at 20 mm/s from t = 2 s.
    #[test]
    fn phases_and_slide_of_an_approach_stick_and_slide() {
        let t: Vec<f64> = (0..=300).map(|k| k as f64 * 0.01).collect();
        let pos = |t: f64| Vec3::new(if t > 2.0 { 0.02 * (t - 2.0) } else { 0.0 }, 0.0, (0.005 * (1.0 - t)).max(0.0));
        let pts: Vec<Vec3> = t.iter().map(|t| pos(*t)).collect();
        let o = PhaseOptions { contact_gap_m: 1e-5, slide_speed_m_s: 2e-3, speed_window_s: 0.05 };
        let ph = measured_phases(&t, &pts, &TABLE, &o);
        let truth: Vec<Phase> = t
            .iter()
            .map(|t| {
                if *t < 0.998 {
                    Phase::Free
                } else if *t <= 2.0 {
                    Phase::Stick
                } else {
                    Phase::Slide
                }
            })
            .collect();
        // The line fit straddles the onset for half a window.
        let agree = agreement(&ph, &truth);
        assert!(agree > 0.99, "{agree}");
        assert!(agreement(&ph, &truth[..100]) > 0.99);
        let slide = slide_since_touch(&pts, &ph, &TABLE);
        assert_eq!(slide[150], 0.0);
        assert!((slide[300] - 0.02).abs() < 1e-12, "{}", slide[300]);
    }

    #[test]
    fn checks_say_pass_or_exceeded() {
        assert!(Check::at_most("strain", 3.0, 10.0, "%").pass);
        assert!(!Check::at_most("strain", 12.0, 10.0, "%").pass);
        assert!(!Check::at_most("strain", f64::NAN, 10.0, "%").pass);
        assert!(Check::at_least("phases", 99.5, 95.0, "%").line().ends_with("pass"));
    }
}
