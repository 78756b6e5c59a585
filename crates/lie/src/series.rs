//! Time series on sorted times: the one place where samples are bracketed,
//! interpolated, held, windowed and differentiated. Every stage that reads
//! a stream against another clock (validation against a simulation, an
//! emulator playing a table, hold detection, speeds of tracked points)
//! uses these, so that "inside the span", "held" and "window" mean the
//! same thing everywhere.

use std::ops::{Add, Mul, Range};

/// Indices and weight of `at` between samples of sorted times `t_s`:
/// `(a, b, w)` with the value `v[a] (1 - w) + v[b] w`. `None` outside the
/// span (never extrapolated) or for no samples.
pub fn bracket(t_s: &[f64], at: f64) -> Option<(usize, usize, f64)> {
    let (first, last) = (*t_s.first()?, *t_s.last()?);
    if !(at >= first && at <= last) {
        return None;
    }
    Some(bracket_held(t_s, at))
}

/// As [`bracket`], but a time before the first sample takes the first and
/// one after the last takes the last (a table played by an emulator, a
/// waypoint list). `t_s` must not be empty.
pub fn bracket_held(t_s: &[f64], at: f64) -> (usize, usize, f64) {
    let i = t_s.partition_point(|t| *t <= at);
    if i == 0 {
        return (0, 0, 0.0);
    }
    if i >= t_s.len() {
        let n = t_s.len() - 1;
        return (n, n, 0.0);
    }
    let (a, b) = (i - 1, i);
    (a, b, (at - t_s[a]) / (t_s[b] - t_s[a]))
}

/// Linear blend of `f(a)` and `f(b)` for a bracket.
pub fn blend<T>((a, b, w): (usize, usize, f64), f: impl Fn(usize) -> T) -> T
where
    T: Mul<f64, Output = T> + Add<Output = T>,
{
    if a == b {
        return f(a);
    }
    f(a) * (1.0 - w) + f(b) * w
}

/// `v` at `at`, linear between samples; `None` outside the span.
pub fn interp(t_s: &[f64], v: &[f64], at: f64) -> Option<f64> {
    bracket(t_s, at).map(|k| blend(k, |i| v[i]))
}

/// `v` at `at`, linear between samples, held outside the span.
pub fn interp_held(t_s: &[f64], v: &[f64], at: f64) -> f64 {
    blend(bracket_held(t_s, at), |i| v[i])
}

/// Index of the sample in force at `at` when each is held until the next
/// (a sensor's reading is not interpolated): the last sample at or before
/// `at`, the first before the series starts. `t_s` must not be empty.
pub fn step_index(t_s: &[f64], at: f64) -> usize {
    t_s.partition_point(|t| *t <= at).saturating_sub(1)
}

/// Indices of the samples with times in `[from, to]` (sorted times).
pub fn span(t_s: &[f64], from: f64, to: f64) -> Range<usize> {
    t_s.partition_point(|t| *t < from)..t_s.partition_point(|t| *t <= to)
}

/// Indices of the samples within `half_s` of `t_s[i]`: a centred window.
pub fn window(t_s: &[f64], i: usize, half_s: f64) -> Range<usize> {
    span(t_s, t_s[i] - half_s, t_s[i] + half_s)
}

/// Centred moving average of `v` over `window_s` (noise of a sensor whose
/// signal changes slowly against the window).
pub fn moving_average<T>(t_s: &[f64], v: &[T], window_s: f64) -> Vec<T>
where
    T: Copy + std::iter::Sum<T> + std::ops::Div<f64, Output = T>,
{
    (0..t_s.len())
        .map(|i| {
            let w = window(t_s, i, 0.5 * window_s);
            let n = w.len() as f64;
            v[w].iter().copied().sum::<T>() / n
        })
        .collect()
}

/// Slope of the least-squares line through samples `(t, x)`: the mean rate
/// of change over a window (0 for fewer than two distinct times).
pub fn line_slope(t: &[f64], x: &[f64]) -> f64 {
    let n = t.len() as f64;
    let tm = t.iter().sum::<f64>() / n;
    let xm = x.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (ti, xi) in t.iter().zip(x) {
        sxy += (ti - tm) * (xi - xm);
        sxx += (ti - tm) * (ti - tm);
    }
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

/// Velocity of points over time by a line fit over the window centred on
/// each sample (0 where fewer than two samples fall in it).
pub fn line_fit_velocities(t_s: &[f64], points: &[crate::Vec3], window_s: f64) -> Vec<crate::Vec3> {
    (0..t_s.len())
        .map(|i| {
            let w = window(t_s, i, 0.5 * window_s);
            if w.len() < 2 {
                return crate::Vec3::zeros();
            }
            crate::Vec3::from_fn(|k, _| line_slope(&t_s[w.clone()], &points[w.clone()].iter().map(|p| p[k]).collect::<Vec<_>>()))
        })
        .collect()
}

/// The times `t - h` and `t + h` of a central difference, clamped into
/// `[first, last]` (one-sided at the ends); `None` when they coincide.
pub fn central_difference_times(t: f64, h: f64, first: f64, last: f64) -> Option<(f64, f64)> {
    let (a, b) = ((t - h).max(first), (t + h).min(last));
    (b > a).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_linear_and_never_extrapolates() {
        let t = [0.0, 1.0, 3.0];
        let v = [0.0, 2.0, 6.0];
        assert_eq!(interp(&t, &v, 0.5), Some(1.0));
        assert_eq!(interp(&t, &v, 2.0), Some(4.0));
        assert_eq!(interp(&t, &v, 3.0), Some(6.0));
        assert_eq!(interp(&t, &v, 0.0), Some(0.0));
        assert_eq!(interp(&t, &v, -0.1), None);
        assert_eq!(interp(&t, &v, 3.1), None);
        assert_eq!(interp(&[], &[], 0.0), None);
        assert_eq!(interp_held(&t, &v, -5.0), 0.0);
        assert_eq!(interp_held(&t, &v, 9.0), 6.0);
        assert_eq!(interp_held(&t, &v, 2.0), 4.0);
    }

    #[test]
    fn held_samples_and_windows() {
        let t = [0.0, 1.0, 2.0, 3.0];
        assert_eq!(step_index(&t, -1.0), 0);
        assert_eq!(step_index(&t, 0.0), 0);
        assert_eq!(step_index(&t, 1.5), 1);
        assert_eq!(step_index(&t, 7.0), 3);
        assert_eq!(window(&t, 1, 1.0), 0..3);
        assert_eq!(window(&t, 0, 0.5), 0..1);
        assert_eq!(span(&t, 0.5, 2.5), 1..3);
        let m = moving_average(&t, &[0.0, 3.0, 6.0, 9.0], 2.0);
        assert_eq!(m, vec![1.5, 3.0, 6.0, 7.5]);
    }

    #[test]
    fn line_slopes_and_central_differences() {
        let t = [0.0, 0.1, 0.2, 0.3];
        let x: Vec<f64> = t.iter().map(|t| 2.0 * t + 1.0).collect();
        assert!((line_slope(&t, &x) - 2.0).abs() < 1e-12);
        assert_eq!(line_slope(&[1.0, 1.0], &[0.0, 5.0]), 0.0);
        let p: Vec<crate::Vec3> = t.iter().map(|t| crate::Vec3::new(*t, -3.0 * t, 0.0)).collect();
        let v = line_fit_velocities(&t, &p, 0.25);
        assert!(v.iter().all(|v| (v - crate::Vec3::new(1.0, -3.0, 0.0)).norm() < 1e-9), "{v:?}");
        assert_eq!(central_difference_times(0.05, 0.1, 0.0, 1.0), Some((0.0, 0.15000000000000002)));
        assert_eq!(central_difference_times(0.0, 0.0, 0.0, 1.0), None);
    }
}
