//! A flange force sensor's bias: what a strain-gauge sensor reads with
//! nothing on it, which drifts after every power-up. Left in the data, it
//! reads as weight and ruins rho and E with it; so it is fitted, per
//! session, as six nuisance values, from holds at different orientations.
//!
//! The first estimate is model-free: under gravity alone the sensor reads
//! the weight W along gravity, turned into the sensor frame, plus the
//! bias, `f_i = W u_i + b_f`, linear in `(W, b_f)`; the moments start from
//! the same idea with a fixed centre of mass c, `m_i = c x (W u_i) + b_m`.
//! The fit then refines the bias jointly with E and rho (it enters the
//! wrench residuals linearly and is eliminated exactly:
//! [`crate::Problem::with_sensor_bias_per_session`]), so that the
//! material's intervals carry the bias's uncertainty.

use crate::Experiment;
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
            let spread_deg = largest_angle_deg(&holds.iter().map(|(_, u)| *u).collect::<Vec<_>>());
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

/// The largest angle between the gravity directions the sensor of
/// `session` saw over its experiments with a wrench \[deg\] (0 for fewer
/// than two).
pub fn spread_deg(rod: &Rod, experiments: &[Experiment], session: &str) -> f64 {
    let dirs: Vec<Vec3> = experiments.iter().filter(|e| session_of(e) == session).filter_map(|e| gravity_in_sensor(e, rod)).collect();
    largest_angle_deg(&dirs)
}

fn largest_angle_deg(dirs: &[Vec3]) -> f64 {
    dirs.iter().flat_map(|a| dirs.iter().map(move |b| a.angle(b).to_degrees())).fold(0.0, f64::max)
}
