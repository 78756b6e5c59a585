//! A released rod's ring-down read off one coordinate: its frequency and
//! its logarithmic decrement over the first cycles, for the recorded
//! motion and its replay alike (stage "validate": what `identify
//! --dynamic` reports per release).

/// The first cycles of a free decay.
#[derive(Clone, Debug, PartialEq)]
pub struct RingDown {
    /// Cycles per second over the cycles read \[Hz\].
    pub frequency_hz: f64,
    /// ln of successive peaks' ratio, per cycle \[1\].
    pub log_decrement: f64,
    /// The cycles read.
    pub cycles: usize,
    /// Each cycle's swing, peak to the next peak of the other sign, from
    /// the first (`cycles` of them) \[the signal's unit\]: the envelope a
    /// loss that does not shrink with the swing bends (a linear law's
    /// falls by one ratio each cycle).
    pub swings: Vec<f64>,
}

impl RingDown {
    /// The damping ratio the decrement means: delta / sqrt(4 pi^2 + delta^2).
    pub fn damping_ratio(&self) -> f64 {
        self.log_decrement / (4.0 * std::f64::consts::PI.powi(2) + self.log_decrement.powi(2)).sqrt()
    }

    /// The decay from the first swing to cycle `k`'s, ln(s_0 / s_k)
    /// (`None` past the cycles read, or for k = 0).
    pub fn decay_to(&self, k: usize) -> Option<f64> {
        (k > 0).then_some(())?;
        Some((self.swings.first()? / self.swings.get(k)?).ln())
    }

    /// The log decrement per cycle over the first `cycles` cycles (the
    /// first swing to the swing `cycles - 1` cycles later).
    pub fn decrement_over(&self, cycles: usize) -> Option<f64> {
        Some(self.decay_to(cycles.checked_sub(1)?)? / (cycles - 1) as f64)
    }
}

/// The ring-down of `x` sampled at `t_s` (increasing), about the level it
/// settles at (the mean of its last quarter): from the first crossing of
/// that level, `cycles` cycles. The frequency is read from the crossings
/// (interpolated, counted only once the signal is 3 noise levels past the
/// level), the decrement from the swings, peak to the next peak of the
/// other sign (each the top of a least-squares parabola over its
/// neighbourhood), which the level's error leaves alone. `None` for fewer
/// than 2 cycles, or when the signal crosses its level fewer than
/// 2 `cycles` + 1 times.
pub fn ring_down(t_s: &[f64], x: &[f64], cycles: usize) -> Option<RingDown> {
    let n = t_s.len().min(x.len());
    if n < 8 || cycles < 2 {
        return None;
    }
    let settled = x[n - n / 4..n].iter().sum::<f64>() / (n / 4) as f64;
    let y: Vec<f64> = x[..n].iter().map(|v| v - settled).collect();
    // Crossings of the level, with hysteresis: the signal must reach 3
    // times its noise (from its second differences) on the other side, so
    // that noise about the level never counts. (index before, time) of the
    // last zero crossing before each such swing.
    let noise = ((1..n - 1).map(|k| (y[k + 1] - 2.0 * y[k] + y[k - 1]).powi(2)).sum::<f64>() / (6.0 * (n - 2) as f64)).sqrt();
    let band = 3.0 * noise;
    let mut crossings = vec![];
    let mut side = 0.0f64;
    let mut last_zero: Option<(usize, f64)> = None;
    for k in 1..n {
        if (y[k - 1] < 0.0) != (y[k] < 0.0) {
            let f = y[k - 1] / (y[k - 1] - y[k]);
            last_zero = Some((k - 1, t_s[k - 1] + f * (t_s[k] - t_s[k - 1])));
        }
        if y[k].abs() > band && y[k].signum() != side {
            if side != 0.0 {
                crossings.extend(last_zero);
            }
            side = y[k].signum();
        }
        if crossings.len() > 2 * cycles {
            break;
        }
    }
    if crossings.len() < 2 * cycles + 1 {
        return None;
    }
    let span_s = crossings[2 * cycles].1 - crossings[0].1;
    // The peak of each half-cycle between two crossings: a parabola fitted
    // (least squares) over the samples within a sixth of the half-cycle of
    // its largest sample, so that noise on one sample does not set it.
    let peak = |from: usize, to: usize| -> f64 {
        let k = (from + 1..=to).max_by(|a, b| y[*a].abs().total_cmp(&y[*b].abs())).unwrap_or(from);
        let m = ((to - from) / 6).max(1);
        let (lo, hi) = (k.saturating_sub(m), (k + m).min(n - 1));
        if hi - lo < 2 {
            return y[k].abs();
        }
        // |y| = c0 + c1 u + c2 u^2 in u = t - t_k, by the normal equations.
        let mut ata = nalgebra::Matrix3::<f64>::zeros();
        let mut atb = nalgebra::Vector3::<f64>::zeros();
        for i in lo..=hi {
            let u = t_s[i] - t_s[k];
            let row = nalgebra::Vector3::new(1.0, u, u * u);
            ata += row * row.transpose();
            atb += row * y[i].abs();
        }
        let Some(c) = ata.try_inverse().map(|inv| inv * atb) else { return y[k].abs() };
        if c[2] >= 0.0 {
            return y[k].abs();
        }
        let vertex = (-c[1] / (2.0 * c[2])).clamp(t_s[lo] - t_s[k], t_s[hi] - t_s[k]);
        c[0] + c[1] * vertex + c[2] * vertex * vertex
    };
    // Peak to peak: the level (a mean of a window that ends mid-cycle) drops out.
    let swing = |k: usize| peak(crossings[k].0, crossings[k + 1].0) + peak(crossings[k + 1].0, crossings[k + 2].0);
    let swings: Vec<f64> = (0..cycles).map(|k| swing(2 * k)).collect();
    // The first and the last swing, cycles - 1 cycles apart: the decrement per cycle.
    let log_decrement = (swings[0] / swings[cycles - 1]).ln() / (cycles - 1) as f64;
    Some(RingDown { frequency_hz: cycles as f64 / span_s, log_decrement, cycles, swings })
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
        // A slow swing in a short window (3.37 Hz, 1.5 s: the level, the
        // window's last quarter, is read off by what still swings there):
        // its decrement within 3 %.
        let (f_hz, zeta) = (3.37, 0.06);
        let wd = 2.0 * std::f64::consts::PI * f_hz;
        let wn = wd / (1.0f64 - zeta * zeta).sqrt();
        let short: Vec<f64> = t.iter().copied().filter(|t| *t < 1.5).collect();
        let x: Vec<f64> = short.iter().map(|t| 5.0 * (-zeta * wn * t).exp() * (wd * t).cos()).collect();
        let r = ring_down(&short, &x, 3).unwrap();
        let delta = 2.0 * std::f64::consts::PI * zeta / (1.0f64 - zeta * zeta).sqrt();
        assert!((r.log_decrement / delta - 1.0).abs() < 0.03 && (r.frequency_hz / f_hz - 1.0).abs() < 0.01, "{r:?} against {delta}");
        // With tracking noise of 2 % of the swing (seeded): noise about the
        // level never counts as a crossing.
        let mut seed = 9u64;
        let mut gauss = || {
            let mut u = || {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((seed >> 11) as f64 + 0.5) / (1u64 << 53) as f64
            };
            (-2.0 * u().ln()).sqrt() * (std::f64::consts::TAU * u()).cos()
        };
        let noisy: Vec<f64> = x.iter().map(|v| v + 0.1 * gauss()).collect();
        let r = ring_down(&short, &noisy, 3).unwrap();
        assert!((r.frequency_hz / f_hz - 1.0).abs() < 0.01 && (r.log_decrement / delta - 1.0).abs() < 0.1, "{r:?} against {delta}");
        // A signal that never crosses its level: none.
        assert!(ring_down(&t, &t, 3).is_none());
    }

    /// An envelope bent by a dry loss: half-cycles of a 3.4 Hz swing whose
    /// amplitude falls as `next = 0.92 x this - 0.2 mm` (a viscous ratio
    /// and a constant loss per half-cycle), sampled at 100 Hz: every
    /// cycle's swing peak to peak comes back within 1 %, and the per-cycle
    /// decrement grows as the swing shrinks, as the recordings' do (read
    /// from the first crossing: half-cycles 1 and 2 make the first swing).
    #[test]
    fn a_dry_loss_bends_the_envelope_it_reads() {
        let (f_hz, half_s) = (3.4, 0.5 / 3.4);
        let mut amplitudes = vec![10.0];
        for _ in 0..17 {
            let a: f64 = *amplitudes.last().unwrap();
            amplitudes.push(0.92 * a - 0.2);
        }
        let t: Vec<f64> = (0..400).map(|k| k as f64 * 0.01 + 0.004).collect();
        let x: Vec<f64> = t
            .iter()
            .map(|t| {
                let k = (t / half_s) as usize;
                let sign = if k.is_multiple_of(2) { 1.0 } else { -1.0 };
                amplitudes.get(k).map_or(0.0, |a| sign * a.max(0.0) * (std::f64::consts::TAU * f_hz * t).sin().abs())
            })
            .collect();
        let r = ring_down(&t, &x, 7).unwrap();
        assert_eq!(r.swings.len(), 7);
        for (k, s) in r.swings.iter().enumerate() {
            let truth = amplitudes[2 * k + 1] + amplitudes[2 * k + 2];
            assert!((s / truth - 1.0).abs() < 0.01, "cycle {k}: {s} against {truth}");
        }
        let per_cycle: Vec<f64> = r.swings.windows(2).map(|w| (w[0] / w[1]).ln()).collect();
        assert!(per_cycle.windows(2).all(|w| w[1] > w[0]), "{per_cycle:?}");
        assert!((r.decrement_over(3).unwrap() - r.decay_to(2).unwrap() / 2.0).abs() < 1e-12);
        assert!((r.log_decrement - r.decay_to(6).unwrap() / 6.0).abs() < 1e-12);
        assert_eq!(r.decay_to(0), None);
        assert_eq!(r.decay_to(7), None);
    }
}
