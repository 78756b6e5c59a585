//! A flange force sensor's bias: what a strain-gauge sensor reads with
//! nothing on it, which drifts after every power-up. Left in the data, it
//! reads as weight and ruins rho and E with it; so it is fitted, per
//! session, as six nuisance values, from holds at different orientations.
//!
//! The force part is exact and model-free: under gravity alone the sensor
//! reads the weight W along gravity, turned into the sensor frame, plus
//! the bias, `f_i = W u_i + b_f`, linear in `(W, b_f)`. The moment part
//! starts from the same idea with a fixed centre of mass c,
//! `m_i = c x (W u_i) + b_m`, and is then refined on the fitted model's
//! own predicted moments (the soft rod's centre of mass moves with the
//! orientation), `b_m = mean(measured - predicted)`.

use crate::{Experiment, Fit, Problem};
use lie::{skew, Vec3, Vec6};
use nalgebra::{DMatrix, DVector};
use rod::Rod;

/// Below this spread of the gravity directions seen by the sensor (the
/// largest angle between two holds) the bias cannot be told from the
/// weight.
pub const MIN_SPREAD_DEG: f64 = 10.0;

/// One session's fitted sensor bias.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorBias {
    /// The session (the experiments' id prefix).
    pub session: String,
    pub force_n: Vec3,
    /// Half widths of the 95 % intervals.
    pub force_ci95_n: Vec3,
    pub moment_nm: Vec3,
    pub moment_ci95_nm: Vec3,
    /// The weight the sensor carries (along gravity) \[N\].
    pub weight_n: f64,
    pub holds: usize,
    /// Largest angle between the gravity directions of two holds \[deg\].
    pub spread_deg: f64,
}

/// Why a session's bias could not be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BiasError {
    #[error("{session}: the holds do not span enough orientations to tell the force sensor's bias from the weight (gravity directions within {spread_deg:.1} deg of each other, at least {MIN_SPREAD_DEG} needed): hold the rod at more different orientations, or give the sensor's tare (bias = [..] in the loads file)")]
    TooFewOrientations { session: String, spread_deg: f64 },
    #[error("{session}: {holds} hold(s) with a force reading: at least 3 are needed to fit the sensor's bias")]
    TooFewHolds { session: String, holds: usize },
}

/// The session an experiment belongs to (`<session>/hold<k>`).
pub fn session_of(e: &Experiment) -> &str {
    e.id.rsplit_once('/').map_or(e.id.as_str(), |(s, _)| s)
}

/// Gravity's direction in experiment `e`'s sensor frame.
fn gravity_in_sensor(e: &Experiment, rod: &Rod) -> Option<Vec3> {
    let w = e.base_wrench.as_ref()?;
    let base = e.base_pose.unwrap_or(rod.base);
    Some(base.compose(&w.sensor_in_base).rot.transpose() * rod.gravity_m_s2.normalize())
}

/// Weighted linear least squares: the solution and the half widths of
/// its 95 % intervals (residual scale from the data, at least 1).
fn solve(a: &DMatrix<f64>, y: &DVector<f64>, sigma: &DVector<f64>) -> Option<(DVector<f64>, DVector<f64>)> {
    let w = DMatrix::from_fn(a.nrows(), a.ncols(), |r, c| a[(r, c)] / sigma[r]);
    let yw = DVector::from_fn(y.len(), |r, _| y[r] / sigma[r]);
    let normal = w.transpose() * &w;
    let inv = normal.clone().try_inverse()?;
    let x = &inv * (w.transpose() * &yw);
    let dof = (a.nrows() as f64 - a.ncols() as f64).max(1.0);
    let s2 = ((&w * &x - &yw).norm_squared() / dof).max(1.0);
    let half = DVector::from_fn(x.len(), |i, _| 1.96 * (s2 * inv[(i, i)]).sqrt());
    Some((x, half))
}

/// The first estimate of the bias of every session's sensor, from its
/// holds (the wrenches as measured, nothing subtracted yet).
pub fn estimate(rod: &Rod, experiments: &[Experiment]) -> Vec<Result<SensorBias, BiasError>> {
    let mut sessions: Vec<&str> = vec![];
    for e in experiments.iter().filter(|e| e.base_wrench.is_some() && e.gravity_only()) {
        if !sessions.contains(&session_of(e)) {
            sessions.push(session_of(e));
        }
    }
    sessions
        .into_iter()
        .map(|session| {
            let holds: Vec<(&Experiment, Vec3)> =
                experiments.iter().filter(|e| session_of(e) == session && e.gravity_only()).filter_map(|e| gravity_in_sensor(e, rod).map(|u| (e, u))).collect();
            let n = holds.len();
            if n < 3 {
                return Err(BiasError::TooFewHolds { session: session.into(), holds: n });
            }
            let spread_deg = holds.iter().flat_map(|(_, a)| holds.iter().map(move |(_, b)| a.angle(b).to_degrees())).fold(0.0, f64::max);
            if spread_deg < MIN_SPREAD_DEG {
                return Err(BiasError::TooFewOrientations { session: session.into(), spread_deg });
            }
            // Forces: f_i = W u_i + b_f.
            let (mut a, mut y, mut s) = (DMatrix::zeros(3 * n, 4), DVector::zeros(3 * n), DVector::zeros(3 * n));
            for (i, (e, u)) in holds.iter().enumerate() {
                let w = e.base_wrench.as_ref().expect("filtered");
                for k in 0..3 {
                    a[(3 * i + k, 0)] = u[k];
                    a[(3 * i + k, 1 + k)] = 1.0;
                    y[3 * i + k] = w.wrench[3 + k];
                    s[3 * i + k] = w.sigma[3 + k];
                }
            }
            let Some((xf, hf)) = solve(&a, &y, &s) else {
                return Err(BiasError::TooFewOrientations { session: session.into(), spread_deg });
            };
            let weight_n = xf[0];
            // Moments: m_i = c x (W u_i) + b_m = -[W u_i]x c + b_m.
            let (mut a, mut y, mut s) = (DMatrix::zeros(3 * n, 6), DVector::zeros(3 * n), DVector::zeros(3 * n));
            for (i, (e, u)) in holds.iter().enumerate() {
                let w = e.base_wrench.as_ref().expect("filtered");
                let block = -skew(&(*u * weight_n));
                for r in 0..3 {
                    for c in 0..3 {
                        a[(3 * i + r, c)] = block[(r, c)];
                    }
                    a[(3 * i + r, 3 + r)] = 1.0;
                    y[3 * i + r] = w.wrench[r];
                    s[3 * i + r] = w.sigma[r];
                }
            }
            let (xm, hm) = solve(&a, &y, &s).ok_or_else(|| BiasError::TooFewOrientations { session: session.into(), spread_deg })?;
            Ok(SensorBias {
                session: session.into(),
                force_n: Vec3::new(xf[1], xf[2], xf[3]),
                force_ci95_n: Vec3::new(hf[1], hf[2], hf[3]),
                moment_nm: Vec3::new(xm[3], xm[4], xm[5]),
                moment_ci95_nm: Vec3::new(hm[3], hm[4], hm[5]),
                weight_n,
                holds: n,
                spread_deg,
            })
        })
        .collect()
}

/// `raw` with each session's bias taken off its experiments' wrenches.
pub fn subtract(raw: &[Experiment], biases: &[SensorBias]) -> Vec<Experiment> {
    raw.iter()
        .map(|e| {
            let bias = biases.iter().find(|b| b.session == session_of(e));
            let mut e = e.clone();
            if let (Some(w), Some(b)) = (e.base_wrench.as_mut(), bias) {
                let bias = Vec6::new(b.moment_nm.x, b.moment_nm.y, b.moment_nm.z, b.force_n.x, b.force_n.y, b.force_n.z);
                w.wrench -= bias;
            }
            e
        })
        .collect()
}

/// The moment bias refined on a fit's predicted moments: per session the
/// weighted mean of what is left after the current bias, with its
/// interval. `raw` are the experiments before any bias was subtracted,
/// in the order `fit` was made on.
pub fn refine_moments(rod: &Rod, raw: &[Experiment], fit: &Fit, biases: &mut [SensorBias]) {
    let problem = Problem::new(rod, raw, fit.layout, &fit.values);
    for b in biases.iter_mut() {
        // Per hold: measured moment minus the model's, and its weights.
        let left: Vec<(Vec3, Vec3)> = raw
            .iter()
            .enumerate()
            .filter(|(_, e)| session_of(e) == b.session)
            .filter_map(|(i, e)| {
                let w = e.base_wrench.as_ref()?;
                let p = problem.predicted_wrench(i, &fit.equilibria[i], &fit.values)?;
                Some((Vec3::from_fn(|k, _| w.wrench[k] - p[k]), Vec3::from_fn(|k, _| w.sigma[k].powi(-2))))
            })
            .collect();
        if left.is_empty() {
            continue;
        }
        let weights: Vec3 = left.iter().map(|(_, w)| w).sum();
        b.moment_nm = left.iter().map(|(d, w)| d.component_mul(w)).sum::<Vec3>().component_div(&weights);
        // The interval: the scatter of the per-hold differences about the mean.
        let n = left.len() as f64;
        if n > 1.0 {
            let scatter: Vec3 = left.iter().map(|(d, _)| (d - b.moment_nm).map(|x| x * x)).sum();
            b.moment_ci95_nm = scatter.map(|s| 1.96 * (s / (n - 1.0) / n).sqrt());
        }
    }
}
