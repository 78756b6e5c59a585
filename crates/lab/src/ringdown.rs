//! A released rod's ring-down read off one coordinate: its frequency and
//! its logarithmic decrement over the first cycles, for the recorded
//! motion and its replay alike (stage "validate": what `identify
//! --dynamic` reports per release).

/// The first cycles of a free decay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingDown {
    /// Cycles per second over the cycles read \[Hz\].
    pub frequency_hz: f64,
    /// ln of successive peaks' ratio, per cycle \[1\].
    pub log_decrement: f64,
    /// The cycles read.
    pub cycles: usize,
}

impl RingDown {
    /// The damping ratio the decrement means: delta / sqrt(4 pi^2 + delta^2).
    pub fn damping_ratio(&self) -> f64 {
        self.log_decrement / (4.0 * std::f64::consts::PI.powi(2) + self.log_decrement.powi(2)).sqrt()
    }
}

/// The ring-down of `x` sampled at `t_s` (increasing), about the level it
/// settles at (the mean of its last quarter): from the first crossing of
/// that level, `cycles` cycles. The frequency is read from the crossings
/// (interpolated), the decrement from the half-cycles' peaks (refined by a
/// parabola through each peak and its neighbours). `None` when the signal
/// crosses its level fewer than 2 `cycles` + 1 times.
pub fn ring_down(t_s: &[f64], x: &[f64], cycles: usize) -> Option<RingDown> {
    let n = t_s.len().min(x.len());
    if n < 8 || cycles == 0 {
        return None;
    }
    let settled = x[n - n / 4..n].iter().sum::<f64>() / (n / 4) as f64;
    let y: Vec<f64> = x[..n].iter().map(|v| v - settled).collect();
    // Crossings of the level: (index before, time).
    let mut crossings = vec![];
    for k in 1..n {
        if (y[k - 1] < 0.0) != (y[k] < 0.0) {
            let f = y[k - 1] / (y[k - 1] - y[k]);
            crossings.push((k - 1, t_s[k - 1] + f * (t_s[k] - t_s[k - 1])));
        }
        if crossings.len() > 2 * cycles {
            break;
        }
    }
    if crossings.len() < 2 * cycles + 1 {
        return None;
    }
    let span_s = crossings[2 * cycles].1 - crossings[0].1;
    // The peak of each half-cycle between two crossings.
    let peak = |from: usize, to: usize| -> f64 {
        let k = (from + 1..=to).max_by(|a, b| y[*a].abs().total_cmp(&y[*b].abs())).unwrap_or(from);
        if k == 0 || k + 1 >= n {
            return y[k].abs();
        }
        let (a, b, c) = (y[k - 1].abs(), y[k].abs(), y[k + 1].abs());
        let curvature = a - 2.0 * b + c;
        if curvature >= 0.0 {
            return b;
        }
        b - (a - c).powi(2) / (8.0 * curvature)
    };
    let first = peak(crossings[0].0, crossings[1].0);
    let last = peak(crossings[2 * cycles - 1].0, crossings[2 * cycles].0);
    // Peaks 2 cycles - 1 half-cycles apart: the decrement per cycle.
    let half_cycles = (2 * cycles - 1) as f64;
    Some(RingDown { frequency_hz: cycles as f64 / span_s, log_decrement: 2.0 * (first / last).ln() / half_cycles, cycles })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damped sine sampled at 100 Hz as mocap samples a release: 7.69 Hz
    /// and a damping ratio of 0.054 (the beam's), settling on 12 mm.
    #[test]
    fn a_sampled_damped_sine_gives_its_frequency_and_decrement() {
        let (f_hz, zeta) = (7.69, 0.054);
        let wd = 2.0 * std::f64::consts::PI * f_hz;
        let wn = wd / (1.0f64 - zeta * zeta).sqrt();
        let t: Vec<f64> = (0..600).map(|k| k as f64 * 0.01 + 0.003).collect();
        let x: Vec<f64> = t.iter().map(|t| 12.0 + 5.0 * (-zeta * wn * t).exp() * (wd * t).cos()).collect();
        let r = ring_down(&t, &x, 3).unwrap();
        let delta = 2.0 * std::f64::consts::PI * zeta / (1.0f64 - zeta * zeta).sqrt();
        assert!((r.frequency_hz / f_hz - 1.0).abs() < 2e-3, "{r:?}");
        assert!((r.log_decrement / delta - 1.0).abs() < 0.02, "{r:?} against {delta}");
        assert!((r.damping_ratio() / zeta - 1.0).abs() < 0.02, "{}", r.damping_ratio());
        // A signal that never crosses its level: none.
        assert!(ring_down(&t, &t, 3).is_none());
    }
}
