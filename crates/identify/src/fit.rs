//! Fitting: multi-start Levenberg-Marquardt (argmin), covariance and 95 %
//! confidence intervals, identifiability warnings, leave-one-out prediction.

use crate::data::Experiment;
use crate::lm::LevenbergMarquardt;
use crate::problem::{Geometry, Layout, ModelError, Problem, Values};
use crate::step::Step;
use argmin::core::{Executor, State};
use lie::Vec3;
use nalgebra::{DMatrix, DVector, Matrix3};
use rod::Rod;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What to fit and from where.
#[derive(Clone, Debug)]
pub struct FitOptions {
    /// Estimate a translation of the measurement frame.
    pub translation: bool,
    /// Estimate the base's pitch.
    pub pitch: bool,
    /// Initial guesses (E, G, rho); empty = a spread around the rod file's material.
    pub starts: Vec<[f64; 3]>,
    pub max_iterations: u64,
    /// Estimate the cables' outward offset, with this prior (mean, sd) \[m\].
    pub cable_offset_prior: Option<(f64, f64)>,
    /// Estimate the scale of the section's radii, with this prior (mean, sd).
    pub radius_scale_prior: Option<(f64, f64)>,
    /// Estimate one outward offset per cable, each with this prior (mean,
    /// sd) \[m\] (instead of one for all).
    pub cable_offset_each_prior: Option<(f64, f64)>,
    /// Estimate one turn per cable about the rod's axis from the rod
    /// file's angle, each with this prior (mean, sd) \[rad\].
    pub cable_angle_each_prior: Option<(f64, f64)>,
    /// Estimate each experiment's tip-clamp angle about the world's y axis
    /// (a clamp known only to within a tracing in the x-z plane), each with
    /// this prior (mean, sd) \[rad\]; clamped tips only.
    pub clamp_angle_prior: Option<(f64, f64)>,
    /// Estimate the cables' friction coefficient in their channels (one
    /// for all), with this prior (mean, sd): from pulls that load and
    /// unload (inputs.csv's direction).
    pub friction_prior: Option<(f64, f64)>,
    /// Hold E, G, rho at these values (fit only geometry and nuisance): the
    /// question "which geometry makes a published material fit?".
    pub hold_material: Option<[f64; 3]>,
    /// Tie G to E by this Poisson's ratio, `G = E / (2 (1 + nu))`, for
    /// data that cannot see G.
    pub tie_g_poisson: Option<f64>,
    /// Pool the per-cable offsets and angles (partial pooling): each drawn
    /// around the cables' common mean with a spread the data estimate, so
    /// that a cable the data never saw borrows from the others instead of
    /// sitting at its prior. The per-cable priors become the priors of the
    /// common mean.
    pub pool_cables: bool,
    /// The spreads to pool with (offset \[m\], angle \[rad\]); `None`:
    /// estimated by [`fit`] (a first fit pooled at the priors' sd).
    pub pooled_spreads: Option<[f64; 2]>,
    /// Fit each session's flange-sensor bias with the parameters (six
    /// constants per session; see [`Problem::with_sensor_bias_per_session`]):
    /// the intervals then carry the bias's uncertainty.
    pub fit_sensor_bias: bool,
}

/// A pooled group of per-cable parameters, as the fit found it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pooling {
    /// "offset" or "angle".
    pub what: &'static str,
    /// The group's mean and spread (metres or radians).
    pub mean: f64,
    pub spread: f64,
    /// Cables (0-based) the data saw, and those that borrow.
    pub seen: Vec<usize>,
    pub unseen: Vec<usize>,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            translation: false,
            pitch: false,
            starts: vec![],
            max_iterations: 100,
            cable_offset_prior: None,
            radius_scale_prior: None,
            cable_offset_each_prior: None,
            cable_angle_each_prior: None,
            clamp_angle_prior: None,
            friction_prior: None,
            hold_material: None,
            tie_g_poisson: None,
            pool_cables: false,
            pooled_spreads: None,
            fit_sensor_bias: false,
        }
    }
}

/// Relative standard deviation of the prior rows that hold E, G, rho
/// (`FitOptions::hold_material`): held to 1e-6, still in the same solver.
const HELD_SD_LOG: f64 = 1e-6;

/// A measured critical value (`critical.csv`) and the fitted model's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CriticalFit {
    /// The experiment whose hold the path starts from.
    pub experiment: String,
    /// `tip_twist_rad` or `clamp_distance_m`.
    pub quantity: String,
    /// The value of critical.csv [rad or m].
    pub measured: f64,
    /// Its standard deviation [rad or m].
    pub sigma: f64,
    /// Where the fitted rod first snaps or buckles along the same path.
    pub fitted: f64,
}

/// One start of the multi-start.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StartOutcome {
    /// The start's E \[Pa\].
    pub start_e_pa: f64,
    /// The start's G \[Pa\].
    pub start_g_pa: f64,
    /// The start's rho \[kg/m^3\].
    pub start_rho_kg_m3: f64,
    /// Whether it converged.
    pub converged: bool,
    /// Where it ended: E \[Pa\].
    pub e_pa: f64,
    /// G \[Pa\].
    pub g_pa: f64,
    /// rho \[kg/m^3\].
    pub rho_kg_m3: f64,
    /// Its final cost.
    pub cost: f64,
    /// Its iterations.
    pub iterations: u64,
    /// Why it stopped, or what was odd.
    pub note: String,
}

/// A parameter with its 95 % confidence interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// Whether a 95 % interval `[low, high]` of a positive quantity says
/// anything: finite, and within four decades (an unseen G came out as
/// \[3.2e-64, 2.3e73\]: a number the data did not determine).
pub fn interval_determined(low: f64, high: f64) -> bool {
    low.is_finite() && high.is_finite() && low > 0.0 && high / low < 1e4
}

/// What to print for an interval the data cannot bound.
pub const NOT_DETERMINED: &str = "not determined by these data";

impl Estimate {
    /// The interval bounds the value (NaN bounds: the value was held).
    pub fn determined(&self) -> bool {
        interval_determined(self.ci95_low, self.ci95_high)
    }

    /// Was the value held (no interval at all)?
    pub fn held(&self) -> bool {
        self.ci95_low.is_nan() && self.ci95_high.is_nan()
    }
}

/// The result of a fit.
#[derive(Clone, Debug)]
pub struct Fit {
    pub layout: Layout,
    pub params: DVector<f64>,
    pub values: Values,
    pub e_pa: Estimate,
    pub g_pa: Estimate,
    /// Without confidence interval when rho was held fixed.
    pub rho_kg_m3: Estimate,
    /// Covariance of the parameter vector (log-parameters, metres, radians).
    pub covariance: DMatrix<f64>,
    pub correlation: DMatrix<f64>,
    pub parameter_names: Vec<String>,
    /// Residual standard deviation in units of sigma (sqrt(SSR / dof)).
    pub residual_scale: f64,
    pub condition_number: f64,
    /// Per experiment, per measured point: predicted position.
    pub predicted: Vec<Vec<Vec3>>,
    /// Per experiment, per measured point: |predicted - measured| \[mm\].
    pub errors_mm: Vec<Vec<f64>>,
    pub rms_error_mm: f64,
    pub cost: f64,
    pub iterations: u64,
    pub history: Vec<f64>,
    pub wall_time_s: f64,
    pub static_solves: usize,
    pub warnings: Vec<String>,
    pub starts: Vec<StartOutcome>,
    pub equilibria: Vec<DVector<f64>>,
    /// Residual degrees of freedom (measurements minus parameters).
    pub dof: usize,
    /// RMS of the measurements' standard deviations \[m\]: with the
    /// residual scale, the noise of a new measurement.
    pub measurement_sigma_m: f64,
    /// Parameters the data never saw: their prior rows carry more than 99 %
    /// of what is known about them (a cable never pulled keeps its
    /// prior offset and angle, or borrows from the others when pooled).
    pub prior_only: Vec<String>,
    /// The pooled per-cable groups (empty unless pooled).
    pub pooling: Vec<Pooling>,
    /// The body's law the fit used (the rod's).
    pub elastic_law: rod::ElasticLaw,
    /// The largest surface fibre strain, tension or compression, of any
    /// experiment at the fit (what the law's validity is judged by).
    pub largest_fibre_strain: f64,
    /// Each session's sensor bias, fitted with the parameters
    /// (`FitOptions::fit_sensor_bias`; empty otherwise).
    pub sensor_biases: Vec<crate::problem::FittedBias>,
    /// Each measured critical value against the fitted model's.
    pub critical: Vec<CriticalFit>,
}

#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error("no start converged: {0}")]
    NoStart(String),
    #[error("{0}")]
    Model(#[from] ModelError),
    /// What the rod file or the data give cannot be used (exit 2).
    #[error("{0}")]
    Input(String),
}

impl fault::Fault for FitError {
    fn kind(&self) -> fault::Kind {
        match self {
            FitError::NoStart(_) => fault::Kind::Computation,
            FitError::Input(_) => fault::Kind::Input,
            FitError::Model(e) => fault::Fault::kind(e),
        }
    }
}

/// Root mean square (0 for none).
pub fn rms(values: &[f64]) -> f64 {
    (values.iter().map(|x| x * x).sum::<f64>() / values.len().max(1) as f64).sqrt()
}

/// Student-t 97.5 % quantile with `dof` degrees of freedom (infinite for none).
pub fn t975(dof: usize) -> f64 {
    if dof == 0 {
        return f64::INFINITY;
    }
    distrs::StudentsT::ppf(0.975, dof as f64)
}

/// P(chi^2 with `dof` degrees of freedom >= `x`): how likely noise of the
/// declared size is to leave weighted residuals this large. Exact for 1
/// and 2 degrees of freedom, the Wilson-Hilferty cube-root normal
/// approximation above (its p within a few % of the exact value at the
/// 1e-3 level from 3 dof on; tested against tabulated quantiles).
pub fn chi_square_upper_p(x: f64, dof: usize) -> f64 {
    let k = dof as f64;
    match dof {
        0 => f64::NAN,
        1 => 2.0 * distrs::Normal::cdf(-x.max(0.0).sqrt(), 0.0, 1.0),
        2 => (-0.5 * x.max(0.0)).exp(),
        _ => {
            let v = 2.0 / (9.0 * k);
            let z = ((x.max(0.0) / k).cbrt() - (1.0 - v)) / v.sqrt();
            distrs::Normal::cdf(-z, 0.0, 1.0)
        }
    }
}

/// Smallest eigenvalue of the column-scaled normal matrix, relative to the
/// largest, that still counts as seen by the data.
const SEEN_RELATIVE_EIGENVALUE: f64 = 1e-10;

/// Covariance `s2 (J^T J)^-1` of the parameters, its condition number, and
/// the directions the data do not see (unit vectors in parameter space).
/// Along those the variance is infinite, not zero as a pseudo-inverse
/// would have it: every parameter with a share in one gets an infinite
/// variance.
pub fn covariance(jtj: &DMatrix<f64>, s2: f64) -> (DMatrix<f64>, f64, Vec<DVector<f64>>) {
    let np = jtj.ncols();
    let d = DVector::from_iterator(np, (0..np).map(|i| 1.0 / jtj[(i, i)].sqrt().max(1e-300)));
    let scaled = DMatrix::from_fn(np, np, |a, b| jtj[(a, b)] * d[a] * d[b]);
    let eig = scaled.symmetric_eigen();
    let max = eig.eigenvalues.amax();
    let cond = max / eig.eigenvalues.iter().cloned().fold(f64::INFINITY, f64::min).max(1e-300);
    let mut inv = DMatrix::zeros(np, np);
    let mut unseen = vec![];
    for k in 0..np {
        let v = eig.eigenvectors.column(k).into_owned();
        if eig.eigenvalues[k] > SEEN_RELATIVE_EIGENVALUE * max {
            inv += &v * v.transpose() / eig.eigenvalues[k];
        } else {
            // Back in the unscaled parameters.
            let u = DVector::from_iterator(np, (0..np).map(|i| v[i] * d[i]));
            unseen.push(u.normalize());
        }
    }
    let mut cov = DMatrix::from_fn(np, np, |a, b| inv[(a, b)] * d[a] * d[b] * s2);
    for u in &unseen {
        for i in (0..np).filter(|&i| u[i].abs() > 1e-3) {
            for j in 0..np {
                cov[(i, j)] = if i == j { f64::INFINITY } else { f64::NAN };
                cov[(j, i)] = cov[(i, j)];
            }
        }
    }
    (cov, cond, unseen)
}

/// Jackknife standard deviations of ln E, ln G, ln rho from the
/// leave-one-out fits: `sqrt((n-1)/n sum (x_i - mean)^2)`. None with fewer
/// than three successful fits.
pub fn jackknife_sd(loo: &[LooResult]) -> Option<[f64; 3]> {
    let ok: Vec<[f64; 3]> =
        loo.iter().filter(|l| l.e_pa > 0.0 && l.g_pa > 0.0 && l.rho_kg_m3 > 0.0).map(|l| [l.e_pa.ln(), l.g_pa.ln(), l.rho_kg_m3.ln()]).collect();
    let n = ok.len();
    if n < 3 {
        return None;
    }
    Some(std::array::from_fn(|c| {
        let mean = ok.iter().map(|x| x[c]).sum::<f64>() / n as f64;
        ((n - 1) as f64 / n as f64 * ok.iter().map(|x| (x[c] - mean).powi(2)).sum::<f64>()).sqrt()
    }))
}

fn default_starts(rod: &Rod) -> Vec<[f64; 3]> {
    let m = rod.cross_section.body;
    let (e, g, r) = (m.e_pa, m.g_pa, m.rho_kg_m3);
    vec![[e, g, r], [3.0 * e, 3.0 * g, r], [0.5 * e, 0.5 * g, 1.3 * r], [2.0 * e, 0.5 * g, 0.8 * r], [e, 3.0 * g, r]]
}

/// A start for a fit whose critical values the rod file's material does
/// not reach: E (and rho) from the shapes alone, G tied at the rod file's
/// ratio to E (planar shapes do not see it), then G halved (and, failing
/// that, doubled) within the rod file's range until every critical
/// experiment's branch snaps or buckles (a snap twist grows with G J / E I:
/// a start whose snap lies beyond twice the measured one is too stiff in
/// torsion). The start and a line saying how it was found; `None` when no
/// G in the range gives a snap.
fn critical_start(rod: &Rod, experiments: &[Experiment], opts: &FitOptions, progress: &mut dyn FnMut(Step)) -> Result<Option<([f64; 3], String)>, FitError> {
    let m = rod.cross_section.body;
    let shapes: Vec<Experiment> = experiments.iter().filter(|e| !e.measurements.is_empty()).map(|e| Experiment { critical: vec![], ..e.clone() }).collect();
    let (e_pa, rho_kg_m3) = if shapes.is_empty() {
        (m.e_pa, m.rho_kg_m3)
    } else {
        progress(Step::Stage("the shapes alone, for E"));
        let nu = m.e_pa / (2.0 * m.g_pa) - 1.0;
        let o = FitOptions { tie_g_poisson: Some(opts.tie_g_poisson.unwrap_or(nu)), ..opts.clone() };
        let f = fit_once(rod, &shapes, &o, progress)?;
        (f.values.e_pa, f.values.rho_kg_m3)
    };
    let critical: Vec<Experiment> = experiments.iter().filter(|e| !e.critical.is_empty()).cloned().collect();
    let (low, high) = rod.identify_priors.ranges.g_pa;
    let g0 = m.g_pa * e_pa / m.e_pa;
    let halved = (1..=30).map(|k| g0 / 2f64.powi(k)).take_while(|g| *g >= low);
    let doubled = (1..=30).map(|k| g0 * 2f64.powi(k)).take_while(|g| *g <= high);
    for g_pa in std::iter::once(g0).chain(halved).chain(doubled) {
        progress(Step::Stage(&format!("searching G for the critical values: {g_pa:.3e} Pa")));
        let values = Values::material(e_pa, g_pa, rho_kg_m3);
        let problem = Problem::new(rod, &critical, Layout { fit_rho: true, ..Layout::default() }, &values);
        match problem.evaluate(&problem.params(&values), false) {
            Ok(_) => {
                let note = format!(
                    "the rod file's material reaches no critical value: started from E {e_pa:.4e} Pa (the shapes alone) and G {g_pa:.4e} Pa (the first of G halved, then doubled, whose branch snaps)"
                );
                return Ok(Some(([e_pa, g_pa, rho_kg_m3], note)));
            }
            Err(ModelError::NoCriticalPoint { .. }) | Err(ModelError::NoEquilibrium { .. }) => continue,
            Err(e) => return Err(FitError::Input(e.to_string())),
        }
    }
    Ok(None)
}

struct Run {
    params: DVector<f64>,
    cost: f64,
    iterations: u64,
    history: Vec<f64>,
    /// The solver's own convergence test held (not the iteration limit).
    converged: bool,
}

/// One Levenberg-Marquardt run from `p0`; a start whose model fails is
/// stiffened (E and G doubled) up to five times.
/// Width of the weak prior on the log-parameters around the rod file's
/// material (a factor of 1000), for parameters the data do not see (the
/// solver applies it to those only): they stay near the rod file's value
/// instead of wandering on round-off gradients.
const PRIOR_SIGMA_LOG: f64 = 6.907_755_278_982_137;

fn run_from(problem: &Problem, p0: &DVector<f64>, prior: &DVector<f64>, max_iter: u64) -> Result<(Run, String), ModelError> {
    let mut p0 = p0.clone();
    let mut note = String::new();
    for attempt in 0..6 {
        if problem.evaluate(&p0, false).is_ok() {
            break;
        }
        if attempt == 5 {
            return Err(ModelError::NoStart);
        }
        p0[0] += 2f64.ln();
        p0[1] += 2f64.ln();
        note = format!("start stiffened x{} to make every experiment solvable", 1 << (attempt + 1));
    }
    let solver = LevenbergMarquardt::default().with_prior(prior.clone(), PRIOR_SIGMA_LOG);
    let res = Executor::new(problem, solver).configure(|s| s.param(p0).max_iters(max_iter)).run().map_err(|e| ModelError::Optimizer(e.to_string()))?;
    let state = res.state();
    let params = state.get_best_param().or(state.get_param()).cloned().ok_or(ModelError::Optimizer("no parameters".into()))?;
    let converged = matches!(state.get_termination_reason(), Some(argmin::core::TerminationReason::SolverConverged));
    if !converged {
        note = format!("{}stopped at the iteration limit ({max_iter}): not converged", if note.is_empty() { String::new() } else { format!("{note}; ") });
    }
    Ok((Run { params, cost: state.get_best_cost(), iterations: state.get_iter(), history: res.solver().history.clone(), converged }, note))
}

/// Fits (E, G, rho) (and nuisance parameters) to the experiments.
pub fn fit(rod: &Rod, experiments: &[Experiment], opts: &FitOptions, mut progress: impl FnMut(Step)) -> Result<Fit, FitError> {
    fit_reporting(rod, experiments, opts, &mut progress)
}

// The fit behind one `dyn` callback: compiled once here, not once per
// caller's closure (the fit's tests held 35 copies of `fit_once`, a
// megabyte of code optimised again for each).
fn fit_reporting(rod: &Rod, experiments: &[Experiment], opts: &FitOptions, progress: &mut dyn FnMut(Step)) -> Result<Fit, FitError> {
    // Pooled cables: a first fit pooled at the priors' sd tells which
    // cables the data see and how far apart they sit; the spread for the
    // fit is estimated from them.
    let pooled;
    let opts = if opts.pool_cables && opts.pooled_spreads.is_none() {
        progress(Step::Stage("pooling the cables"));
        let first = fit_once(rod, experiments, opts, progress)?;
        let v = &first.values;
        pooled = FitOptions { pooled_spreads: Some(pooled_spreads(&first, opts)), starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..opts.clone() };
        &pooled
    } else {
        opts
    };
    let first = fit_once(rod, experiments, opts, progress)?;
    if experiments.iter().all(|e| e.tension_sigma_n.iter().all(|s| *s == 0.0)) {
        return Ok(first);
    }
    // Measured tensions carry noise of their own: at the fit, push it
    // through the shape's sensitivity to each tension into the measured
    // points' sigma, and fit again from there.
    progress(Step::Stage("input noise into the weights"));
    let noisy = with_input_noise(rod, experiments, &first.values);
    let v = &first.values;
    let o = FitOptions { starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..opts.clone() };
    let mut second = fit_once(rod, &noisy, &o, progress)?;
    second.iterations += first.iterations;
    second.static_solves += first.static_solves;
    second.wall_time_s += first.wall_time_s;
    Ok(second)
}

/// The experiments with each measured point's sigma grown by the noise of
/// the measured tensions: sigma_eff^2 = sigma^2 + max over coordinates of
/// sum_c (dp/dT_c sigma_Tc)^2, the sensitivities by central differences of
/// the equilibrium at `values` (a tension whose neighbour has no
/// equilibrium leaves the sigma as it was).
pub fn with_input_noise(rod: &Rod, experiments: &[Experiment], values: &Values) -> Vec<Experiment> {
    experiments
        .iter()
        .map(|e| {
            let mut out = e.clone();
            let mut extra = vec![Vec3::zeros(); e.measurements.len()];
            for (c, sigma) in e.tension_sigma_n.iter().enumerate().filter(|(_, s)| **s > 0.0) {
                let step = (0.01 * e.tensions_n[c]).max(1e-3);
                let at = |dt: f64| {
                    let mut x = e.clone();
                    x.tensions_n[c] = (x.tensions_n[c] + dt).max(0.0);
                    predict(rod, &x, values).map(|(p, _)| p).ok()
                };
                let (Some(plus), Some(minus)) = (at(step), at(-step)) else { continue };
                let width = (e.tensions_n[c] + step) - (e.tensions_n[c] - step).max(0.0);
                for (k, (p, m)) in plus.iter().zip(&minus).enumerate() {
                    let d = (p - m) / width * *sigma;
                    extra[k] += d.component_mul(&d);
                }
            }
            for (m, x) in out.measurements.iter_mut().zip(&extra) {
                m.sigma_m = (m.sigma_m.powi(2) + x.max()).sqrt();
            }
            out
        })
        .collect()
}

/// The spread of each pooled group from the cables the data saw (not only
/// at their priors): `tau^2 = (sum (p_c - pbar)^2 + s^2) / n`, the sample
/// variance shrunk toward the prior's sd `s` as by one prior observation
/// (two cables alone say little about how far apart cables sit); `s` when
/// the data see none.
fn pooled_spreads(first: &Fit, opts: &FitOptions) -> [f64; 2] {
    let l = &first.layout;
    let group = |start: Option<usize>, n: usize, values: &[f64], prior: Option<(f64, f64)>| -> f64 {
        let Some((_, s)) = prior else { return f64::NAN };
        let Some(start) = start else { return s };
        let seen: Vec<f64> = (0..n).filter(|c| !first.prior_only.contains(&first.parameter_names[start + c])).map(|c| values[c]).collect();
        if seen.is_empty() {
            return s;
        }
        let mean = seen.iter().sum::<f64>() / seen.len() as f64;
        ((seen.iter().map(|v| (v - mean).powi(2)).sum::<f64>() + s * s) / seen.len() as f64).sqrt()
    };
    [
        group(l.cable_offset_each_index(), l.cable_offset_each, &first.values.cable_offsets_m, opts.cable_offset_each_prior),
        group(l.cable_angle_each_index(), l.cable_angle_each, &first.values.cable_angles_rad, opts.cable_angle_each_prior),
    ]
}

fn fit_once(rod: &Rod, experiments: &[Experiment], opts: &FitOptions, progress: &mut dyn FnMut(Step)) -> Result<Fit, FitError> {
    let started = Instant::now();
    // Gravity alone scales with rho like the stiffness with E: only the
    // ratios are identifiable, unless a known force (cable tension, tip
    // force) or a weighed base (flange force sensor) fixes the scale.
    let gravity_only = experiments.iter().all(|e| e.gravity_only());
    // The specimen on a scale (`[material] mass_kg`) weighs it too.
    let weighed = experiments.iter().any(|e| e.base_wrench.is_some()) || rod.weighed_mass_kg.is_some();
    let layout = Layout {
        fit_rho: !gravity_only || weighed,
        translation: opts.translation,
        pitch: opts.pitch,
        cable_offset: opts.cable_offset_prior.is_some(),
        radius_scale: opts.radius_scale_prior.is_some(),
        cable_offset_each: if opts.cable_offset_each_prior.is_some() { rod.cables.len() } else { 0 },
        cable_angle_each: if opts.cable_angle_each_prior.is_some() { rod.cables.len() } else { 0 },
        clamp_angle_each: if opts.clamp_angle_prior.is_some() { experiments.len() } else { 0 },
        friction: opts.friction_prior.is_some(),
    };
    if opts.clamp_angle_prior.is_some() && rod.tip_condition != rod::TipCondition::Clamped {
        return Err(FitError::Input("a clamp angle is fitted only for a rod whose tip is clamped ([tip] condition = \"clamped\")".into()));
    }
    let fixed_rho = opts.hold_material.map_or(rod.cross_section.body.rho_kg_m3, |m| m[2]);
    let m = rod.cross_section.body;
    let mut problem = Problem::new(rod, experiments, layout, &Values::material(m.e_pa, m.g_pa, fixed_rho));
    if opts.fit_sensor_bias {
        problem = problem.with_sensor_bias_per_session();
    }
    if let Some((mass_kg, sigma_kg)) = rod.weighed_mass_kg {
        problem = problem.with_mass_measurement(mass_kg, sigma_kg).ok_or_else(|| {
            FitError::Input(format!(
                "[material] mass_kg = {mass_kg} kg: not above the core's mass, or rho is not estimated: the weight cannot say the body's density"
            ))
        })?;
    }
    let offset_mean_m = opts.cable_offset_prior.map_or(0.0, |p| p.0);
    let scale_mean = opts.radius_scale_prior.map_or(1.0, |p| p.0);
    for (geometry, index) in layout.geometry() {
        let prior = match geometry {
            Geometry::CableOffset => opts.cable_offset_prior,
            Geometry::RadiusScale => opts.radius_scale_prior,
            // Pooled: one group prior below.
            Geometry::CableOffsetOf(_) | Geometry::CableAngleOf(_) if opts.pool_cables => None,
            Geometry::CableOffsetOf(_) => opts.cable_offset_each_prior,
            Geometry::CableAngleOf(_) => opts.cable_angle_each_prior,
            Geometry::ClampAngleOf(_) => opts.clamp_angle_prior,
            Geometry::FrictionMu => opts.friction_prior,
        };
        if let Some((mean, sd)) = prior {
            problem = problem.with_prior(index, mean, sd);
        }
    }
    // The pooled groups: (first index, cables, prior mean and sd, spread:
    // the estimated one, else the prior's sd).
    let group = |start: Option<usize>, n: usize, prior: Option<(f64, f64)>, spread: Option<f64>| {
        Some((start?, n, prior?))
            .filter(|_| opts.pool_cables)
            .map(|(start, n, (mean, sd))| (start, n, mean, sd, spread.filter(|s| s.is_finite()).unwrap_or(sd)))
    };
    let groups = [
        group(layout.cable_offset_each_index(), layout.cable_offset_each, opts.cable_offset_each_prior, opts.pooled_spreads.map(|s| s[0])),
        group(layout.cable_angle_each_index(), layout.cable_angle_each, opts.cable_angle_each_prior, opts.pooled_spreads.map(|s| s[1])),
    ];
    for &(start, n, mean, sd, spread) in groups.iter().flatten() {
        let indices: Vec<usize> = (start..start + n).collect();
        problem = problem.with_pooled_prior(&indices, mean, sd, spread);
    }
    let each_mean_m = opts.cable_offset_each_prior.map_or(0.0, |p| p.0);
    let angle_mean_rad = opts.cable_angle_each_prior.map_or(0.0, |p| p.0);
    if let Some(held) = opts.hold_material {
        let n_material = 2 + layout.fit_rho as usize;
        for (index, value) in held.iter().take(n_material).enumerate() {
            problem = problem.with_prior(index, value.ln(), HELD_SD_LOG);
        }
    }
    let mut starts = match (opts.hold_material, opts.starts.is_empty()) {
        (Some(held), _) => vec![held],
        (None, true) => default_starts(rod),
        (None, false) => opts.starts.clone(),
    };
    // Held material holds G already: the tie only without it.
    let tie_g_poisson = opts.tie_g_poisson.filter(|_| opts.hold_material.is_none());
    if let Some(nu) = tie_g_poisson {
        // ln G - ln E = -ln(2 (1 + nu)), held as tightly as held material;
        // the starts on the tie.
        problem = problem.with_difference_prior(1, 0, -(2.0 * (1.0 + nu)).ln(), HELD_SD_LOG);
        for s in &mut starts {
            s[1] = s[0] / (2.0 * (1.0 + nu));
        }
    }
    let centre = opts.hold_material.unwrap_or([m.e_pa, m.g_pa, m.rho_kg_m3]);
    let at_start = |e_pa, g_pa, rho_kg_m3| Values {
        cable_offset_m: offset_mean_m,
        radius_scale: scale_mean,
        cable_offsets_m: vec![each_mean_m; layout.cable_offset_each],
        cable_angles_rad: vec![angle_mean_rad; layout.cable_angle_each],
        clamp_angles_rad: vec![opts.clamp_angle_prior.map_or(0.0, |p| p.0); layout.clamp_angle_each],
        friction_mu: opts.friction_prior.map(|p| p.0),
        ..Values::material(e_pa, g_pa, rho_kg_m3)
    };
    let prior = problem.params(&at_start(centre[0], centre[1], centre[2]));
    let mut search_note = None;
    // A critical value no branch of the rod file's material reaches (a
    // twist searched to twice the value without a snap): the rod file's
    // material is a start, not a fact; E from the shapes, then G searched
    // until a branch snaps (see `critical_start`). Only where no G in the
    // rod file's range gives one is it the data's fault: said before any
    // start tries.
    if experiments.iter().any(|e| !e.critical.is_empty()) {
        if let Err(e @ ModelError::NoCriticalPoint { .. }) = problem.evaluate(&prior, false) {
            match critical_start(rod, experiments, opts, progress)? {
                Some((start, note)) => {
                    starts = vec![start];
                    search_note = Some(note);
                }
                None => {
                    let (low, high) = rod.identify_priors.ranges.g_pa;
                    return Err(FitError::Input(format!(
                        "{e}, with the rod file's material, nor with E from the shapes and any G from {low:.3e} to {high:.3e} Pa (the rod file's [identify] g_pa_range)"
                    )));
                }
            }
        }
    }
    let mut runs = vec![];
    let mut outcomes = vec![];
    for (i, s) in starts.iter().enumerate() {
        progress(Step::Counted { stage: "start", done: i + 1, total: starts.len() });
        let p0 = problem.params(&at_start(s[0], s[1], s[2]));
        match run_from(&problem, &p0, &prior, opts.max_iterations) {
            Ok((run, note)) => {
                let v = problem.values(&run.params);
                outcomes.push(StartOutcome {
                    start_e_pa: s[0],
                    start_g_pa: s[1],
                    start_rho_kg_m3: s[2],
                    converged: run.converged,
                    e_pa: v.e_pa,
                    g_pa: v.g_pa,
                    rho_kg_m3: v.rho_kg_m3,
                    cost: run.cost,
                    iterations: run.iterations,
                    note,
                });
                runs.push(run);
            }
            Err(e) => outcomes.push(StartOutcome {
                start_e_pa: s[0],
                start_g_pa: s[1],
                start_rho_kg_m3: s[2],
                converged: false,
                e_pa: f64::NAN,
                g_pa: f64::NAN,
                rho_kg_m3: f64::NAN,
                cost: f64::NAN,
                iterations: 0,
                note: e.to_string(),
            }),
        }
    }
    // A start whose cost is not a number found nothing (never "the best").
    let best = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.cost.is_finite() && r.params.iter().all(|p| p.is_finite()))
        .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost))
        .map(|(i, _)| i)
        .ok_or_else(|| FitError::NoStart(outcomes.iter().map(|o| o.note.clone()).collect::<Vec<_>>().join("; ")))?;
    let best_run = &runs[best];
    let mut warnings: Vec<String> = search_note.into_iter().collect();
    // Do the starts agree?
    let mut disagree = vec![];
    for (o, r) in outcomes.iter().filter(|o| !o.e_pa.is_nan()).zip(&runs) {
        let dp = (&r.params - &best_run.params).amax();
        let dc = (r.cost - best_run.cost).abs() / best_run.cost.max(1e-12);
        if dp > 1e-3 && dc > 1e-6 {
            disagree.push(format!("start E={:.3e} ended at cost {:.4e} (best {:.4e})", o.start_e_pa, r.cost, best_run.cost));
        }
    }
    if !disagree.is_empty() {
        warnings.push(format!("starts disagree (local minima): {}", disagree.join("; ")));
    }
    if outcomes.iter().any(|o| !o.converged) {
        warnings.push(format!("{} of {} starts failed or did not converge", outcomes.iter().filter(|o| !o.converged).count(), outcomes.len()));
    }
    if !best_run.converged {
        warnings.push(format!("the best fit stopped at the iteration limit ({}): not converged", opts.max_iterations));
    }
    let ev = problem.evaluate(&best_run.params, true)?;
    let j = ev.jacobian.clone().expect("jacobian");
    let m = j.nrows();
    let np = j.ncols();
    let dof = m.saturating_sub(np + problem.bias_dof());
    let ssr = ev.residual.norm_squared();
    let s2 = if dof > 0 { ssr / dof as f64 } else { f64::NAN };
    let jtj = j.transpose() * &j;
    let (cov, cond, unseen) = covariance(&jtj, s2);
    let names = layout.names();
    let data_rows = m - problem.prior_rows();
    let prior_only: Vec<String> = (0..np)
        .filter(|&i| {
            let data: f64 = (0..data_rows).map(|r| j[(r, i)].powi(2)).sum();
            // A tie (G to E) is not a prior on either parameter's value.
            let prior: f64 = (data_rows..m).filter(|&r| !problem.is_tie(r - data_rows)).map(|r| j[(r, i)].powi(2)).sum();
            prior > 0.0 && data < 0.01 * prior
        })
        .map(|i| names[i].clone())
        .collect();
    if !prior_only.is_empty() {
        warnings.push(format!(
            "never seen by the data, at their priors: {} (a prediction that moves them rests on the prior; `solve --params` says by how much)",
            prior_only.join(", ")
        ));
    }
    for v in &unseen {
        let terms: Vec<String> = (0..np).filter(|&i| v[i].abs() > 1e-3).map(|i| format!("{:+.3} {}", v[i], names[i])).collect();
        warnings.push(format!("unidentifiable direction (the data do not see it; infinite variance): {}", terms.join(" ")));
    }
    let sd = DVector::from_iterator(np, (0..np).map(|i| cov[(i, i)].max(0.0).sqrt()));
    let corr = DMatrix::from_fn(np, np, |a, b| if sd[a].is_finite() && sd[b].is_finite() { cov[(a, b)] / (sd[a] * sd[b]).max(1e-300) } else { f64::NAN });
    // E and G tied by a Poisson ratio move as one (+1 by construction, said
    // by the tie's own warning): not a finding of the data.
    let tied = |a: usize, b: usize| tie_g_poisson.is_some() && [names[a].as_str(), names[b].as_str()] == ["ln_e", "ln_g"];
    for a in 0..np {
        for b in a + 1..np {
            if corr[(a, b)].abs() > 0.95 && !tied(a, b) {
                warnings.push(format!(
                    "{} and {} are correlated {:+.3}: the data fix mostly a combination of the two, and their intervals are not independent",
                    names[a],
                    names[b],
                    corr[(a, b)]
                ));
            }
        }
    }
    let t = t975(dof);
    let v = problem.values(&best_run.params);
    let sensor_biases = problem.fitted_biases(&best_run.params, &cov, s2)?;
    let est = |i: usize, value: f64| Estimate { value, ci95_low: value * (-t * sd[i]).exp(), ci95_high: value * (t * sd[i]).exp() };
    let e_est = est(0, v.e_pa);
    let g_est = est(1, v.g_pa);
    let rho_est = if layout.fit_rho { est(2, v.rho_kg_m3) } else { Estimate { value: v.rho_kg_m3, ci95_low: f64::NAN, ci95_high: f64::NAN } };
    if !layout.fit_rho {
        warnings.push(format!(
            "only gravity loads: only E/rho and G/rho are identifiable; rho held at {} kg/m^3 (known forces such as cable tensions, or a flange force sensor weighing the rod, fix the scale)",
            fixed_rho
        ));
    }
    if let Some(nu) = tie_g_poisson {
        warnings.push(format!("G is tied to E by nu = {nu} (G = E / (2 (1 + nu))), not identified from these data: its interval is E's"));
    }
    if cond > 1e8 {
        warnings.push(format!("ill-conditioned problem: condition number {cond:.2e}"));
    }
    let g_rel = if sd[1].is_finite() { (t * sd[1]).exp() - 1.0 } else { f64::INFINITY };
    if (g_rel.is_nan() || g_rel >= 0.5) && tie_g_poisson.is_none() {
        if g_est.determined() {
            warnings.push(format!("G is poorly determined: 95 % CI [{:.3e}, {:.3e}] Pa", g_est.ci95_low, g_est.ci95_high));
        } else {
            warnings.push(format!(
                "G is {NOT_DETERMINED} (its 95 % interval spans more than four decades): the experiments do not load the rod in shear or torsion"
            ));
        }
    }
    if dof == 0 {
        warnings.push("no residual degrees of freedom: confidence intervals undefined".into());
    }
    let mut largest_fibre_strain: f64 = 0.0;
    for (i, (e, q)) in experiments.iter().zip(&ev.q).enumerate() {
        let validity = problem.validity(i, q, &v);
        largest_fibre_strain = largest_fibre_strain.max(validity.max_fibre_strain).max(-validity.min_fibre_strain);
        for w in validity.warnings(&rod.cables) {
            warnings.push(format!("experiment {}: {w}", e.id));
        }
    }
    let mut pooling = vec![];
    for (group, (what, values, unit, scale)) in
        groups.iter().zip([("offset", &v.cable_offsets_m, "mm", 1e3), ("angle", &v.cable_angles_rad, "deg", 180.0 / std::f64::consts::PI)])
    {
        let Some((start, n, _, _, spread)) = *group else { continue };
        let (seen, unseen): (Vec<usize>, Vec<usize>) = (0..n).partition(|c| !prior_only.contains(&names[start + c]));
        let mean = values.iter().sum::<f64>() / n as f64;
        let list = |cs: &[usize]| cs.iter().map(|c| (c + 1).to_string()).collect::<Vec<_>>().join(", ");
        warnings.push(if unseen.is_empty() {
            format!("cable {what}s pooled: spread {:.3} {unit} about their mean {:.3} {unit}", spread * scale, mean * scale)
        } else {
            format!(
                "cable {what}s pooled: the data see cables {} (spread {:.3} {unit} about {:.3} {unit}); cables {} are never pulled and borrow from them",
                list(&seen),
                spread * scale,
                mean * scale,
                list(&unseen)
            )
        });
        pooling.push(Pooling { what, mean, spread, seen, unseen });
    }
    let sigmas: Vec<f64> = experiments.iter().flat_map(|e| e.measurements.iter().map(|m| m.sigma_m)).collect();
    let measurement_sigma_m = rms(&sigmas);
    let errors_mm: Vec<Vec<f64>> =
        experiments.iter().zip(&ev.predicted).map(|(e, p)| e.measurements.iter().zip(p).map(|(m, p)| m.miss(p).norm() * 1e3).collect()).collect();
    let all: Vec<f64> = errors_mm.iter().flatten().cloned().collect();
    let rms = (all.iter().map(|e| e * e).sum::<f64>() / all.len() as f64).sqrt();
    let critical = critical_fits(experiments, &ev.residual);
    Ok(Fit {
        layout,
        params: best_run.params.clone(),
        values: v,
        e_pa: e_est,
        g_pa: g_est,
        rho_kg_m3: rho_est,
        covariance: cov,
        correlation: corr,
        parameter_names: layout.names(),
        residual_scale: s2.sqrt(),
        condition_number: cond,
        predicted: ev.predicted,
        errors_mm,
        rms_error_mm: rms,
        cost: best_run.cost,
        iterations: runs.iter().map(|r| r.iterations).sum(),
        history: best_run.history.clone(),
        wall_time_s: started.elapsed().as_secs_f64(),
        static_solves: problem.solves.get(),
        warnings,
        starts: outcomes,
        equilibria: ev.q,
        dof,
        measurement_sigma_m,
        prior_only,
        pooling,
        elastic_law: rod.elastic_law,
        largest_fibre_strain,
        sensor_biases,
        critical,
    })
}

/// The critical values' rows of `residual` (`(fitted - measured) / sigma`,
/// last in each experiment's rows) read back as the fitted values.
fn critical_fits(experiments: &[Experiment], residual: &DVector<f64>) -> Vec<CriticalFit> {
    let mut row = 0;
    let mut out = vec![];
    for e in experiments {
        let first = row + e.n_residuals() - e.critical.len();
        for (k, c) in e.critical.iter().enumerate() {
            out.push(CriticalFit {
                experiment: e.id.clone(),
                quantity: c.quantity.key().into(),
                measured: c.value,
                sigma: c.sigma,
                fitted: c.value + c.sigma * residual[first + k],
            });
        }
        row += e.n_residuals();
    }
    out
}

/// Predicted positions of an experiment's measured points for given values.
pub fn predict(rod: &Rod, experiment: &Experiment, values: &Values) -> Result<(Vec<Vec3>, DVector<f64>), ModelError> {
    let layout = Layout::all(rod.cables.len());
    let problem = Problem::new(rod, std::slice::from_ref(experiment), layout, values);
    let ev = problem.evaluate(&problem.params(values), false)?;
    Ok((ev.predicted[0].clone(), ev.q[0].clone()))
}

/// What a fit knows about its own uncertainty, for prediction bands.
#[derive(Clone, Debug)]
pub struct Uncertainty {
    pub layout: Layout,
    /// Covariance of the fitted parameters (the layout's order); infinite
    /// variance along directions the data did not see.
    pub covariance: DMatrix<f64>,
    /// Variance of a new measurement's noise, per coordinate \[m^2\].
    pub noise_var_m2: f64,
    /// What the model misses per coordinate at the tip \[m\], growing
    /// linearly from the clamp (where the base is known) to the tip: at arc
    /// length `x` it is `model_error_tip_m x / L`.
    pub model_error_tip_m: f64,
    /// Degrees of freedom of the residual (for the t quantile).
    pub dof: usize,
    /// Names of the parameters the data never saw (prior only).
    pub prior_only: Vec<String>,
}

impl Fit {
    /// The fitted geometry parameters with their 95 % intervals.
    pub fn geometry_estimates(&self) -> Vec<(Geometry, Estimate)> {
        let t = t975(self.dof);
        self.layout
            .geometry()
            .into_iter()
            .map(|(g, i)| {
                let value = g.value(&self.values);
                let half = t * self.covariance[(i, i)].sqrt();
                (g, Estimate { value, ci95_low: value - half, ci95_high: value + half })
            })
            .collect()
    }

    /// The fit's uncertainty for predictions, with no model error beyond
    /// the noise (see [`prediction_uncertainty`]).
    pub fn uncertainty(&self) -> Uncertainty {
        prediction_uncertainty(self.layout, &self.covariance, self.dof, self.measurement_sigma_m, self.residual_scale, 0.0, &self.prior_only)
    }
}

/// What a prediction is uncertain by: the parameters' covariance, the
/// noise of a new measurement and the model error. A fit whose residuals
/// are smaller than the declared sigma (residual scale < 1: a flexible
/// model fitting the noise) would claim that a new measurement is less
/// noisy than the instrument: its noise is never below the declared sigma.
/// `model_error_m` (per coordinate, at the tip; less towards the clamp) is
/// what cross-validation found the model misses beyond the parameters'
/// uncertainty and the noise ([`cv_model_error_m`]); `prior_only` the
/// parameters the data never saw.
pub fn prediction_uncertainty(
    layout: Layout,
    covariance: &DMatrix<f64>,
    dof: usize,
    measurement_sigma_m: f64,
    residual_scale: f64,
    model_error_m: f64,
    prior_only: &[String],
) -> Uncertainty {
    let scale = if residual_scale.is_finite() { residual_scale.max(1.0) } else { 1.0 };
    let model = if model_error_m.is_finite() { model_error_m.max(0.0) } else { 0.0 };
    Uncertainty {
        layout,
        covariance: covariance.clone(),
        noise_var_m2: (scale * measurement_sigma_m).powi(2),
        model_error_tip_m: model,
        dof,
        prior_only: prior_only.to_vec(),
    }
}

/// The model error per coordinate at the tip \[m\] that cross-validation
/// shows: the part of the held-out prediction errors `errors_mm` (per
/// experiment, per point) that the prediction bands of `u` (parameters and
/// noise) do not explain, taken to grow linearly from the clamp to the tip
/// as a cantilever's errors accumulate along it:
/// `m^2 = max(0, sum(|e|^2 - tr C)) / sum(3 (x / L)^2)` over the points at
/// arc lengths `x`. The bands come from the fit on all experiments,
/// slightly narrower than each fold's, so the estimate leans high (the safe
/// side). Zero when the bands explain the errors or no error could be
/// predicted.
pub fn cv_model_error_m(rod: &Rod, experiments: &[Experiment], values: &Values, u: &Uncertainty, errors_mm: &[Vec<f64>]) -> f64 {
    let u = Uncertainty { model_error_tip_m: 0.0, ..u.clone() };
    let mut excess_m2 = 0.0;
    let mut weight = 0.0;
    for (e, errs) in experiments.iter().zip(errors_mm) {
        let Ok(pred) = predict_with_band(rod, e, values, &u) else { continue };
        for ((c, err), m) in pred.covariance_m2.iter().zip(errs).zip(&e.measurements) {
            if err.is_finite() && c.trace().is_finite() {
                excess_m2 += (err * 1e-3).powi(2) - c.trace();
                weight += 3.0 * (m.arc_m / rod.length_m).powi(2);
            }
        }
    }
    if weight <= 0.0 {
        0.0
    } else {
        (excess_m2.max(0.0) / weight).sqrt()
    }
}

/// The cross-validated RMS of `errors_mm` (per experiment, per point) and
/// its standard error \[mm\]: experiments are the independent units, so
/// the mean of their mean squared errors has the standard error sd / sqrt(n)
/// and the RMS half of that relative to it (delta method). NaN with fewer
/// than two experiments.
pub fn cv_rms_with_se_mm(errors_mm: &[Vec<f64>]) -> (f64, f64) {
    let all: Vec<f64> = errors_mm.iter().flatten().cloned().collect();
    let rms_mm = rms(&all);
    let per: Vec<f64> = errors_mm.iter().filter(|e| !e.is_empty()).map(|e| e.iter().map(|x| x * x).sum::<f64>() / e.len() as f64).collect();
    let n = per.len();
    if n < 2 || !rms_mm.is_finite() || rms_mm <= 0.0 {
        return (rms_mm, f64::NAN);
    }
    let mean = per.iter().sum::<f64>() / n as f64;
    let sd = (per.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    (rms_mm, sd / (n as f64).sqrt() / (2.0 * rms_mm))
}

/// The one-standard-error rule: of candidates `(parameters, cv_rms,
/// cv_se)`, the best CV figure sets a bar one of its standard errors above
/// it; the recommended one is the simplest (fewest parameters, then the
/// lower CV figure) under the bar. With few experiments the CV figure is
/// itself noisy, and the most flexible model is best by chance as often as
/// not. Falls back to the best when its standard error is unknown.
pub fn one_standard_error_choice(candidates: &[(usize, f64, f64)]) -> Option<usize> {
    let best = lowest_finite(candidates.iter().map(|c| c.1))?;
    let se = candidates[best].2;
    if !se.is_finite() {
        return Some(best);
    }
    let bar = candidates[best].1 + se;
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.1.is_finite() && c.1 <= bar)
        .min_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.1 .1.total_cmp(&b.1 .1)))
        .map(|(i, _)| i)
}

/// Index of the lowest finite value (None: no finite value).
pub fn lowest_finite(values: impl Iterator<Item = f64>) -> Option<usize> {
    values.enumerate().filter(|(_, v)| v.is_finite()).min_by(|a, b| a.1.total_cmp(&b.1)).map(|(i, _)| i)
}

/// Predicted measurements with their uncertainty.
#[derive(Clone, Debug)]
pub struct Prediction {
    pub points_m: Vec<Vec3>,
    /// Covariance of each predicted measurement \[m^2\]: the parameters'
    /// (`J C J^T`, exact sensitivities) plus the noise of a new measurement.
    pub covariance_m2: Vec<Matrix3<f64>>,
    /// Half-widths of the per-coordinate 95 % prediction bands \[m\].
    pub half_width_m: Vec<Vec3>,
    /// Per measured point, the parameters the data never saw that move
    /// it, each with what it adds to the half-widths \[m\] (the band
    /// without it subtracted).
    pub prior_only_m: Vec<Vec<(String, Vec3)>>,
}

/// Predicts the measured points of `experiment` (their positions are not
/// used) at `values`, with 95 % prediction bands from `u`.
pub fn predict_with_band(rod: &Rod, experiment: &Experiment, values: &Values, u: &Uncertainty) -> Result<Prediction, ModelError> {
    let mut e = experiment.clone();
    for m in &mut e.measurements {
        // Unit sigma: the Jacobian rows are then d(point)/d(parameters).
        m.sigma_m = 1.0;
    }
    e.base_wrench = None;
    // What the fit did not estimate (outside its layout) is held at `values`.
    let problem = Problem::new(rod, std::slice::from_ref(&e), u.layout, values);
    let ev = problem.evaluate(&problem.params(values), true)?;
    let j = ev.jacobian.expect("asked for");
    let np = j.ncols();
    if u.covariance.nrows() != np || u.covariance.ncols() != np {
        return Err(ModelError::Covariance { rows: u.covariance.nrows(), cols: u.covariance.ncols(), params: np });
    }
    let unbounded: Vec<usize> = (0..np).filter(|&i| !u.covariance[(i, i)].is_finite()).collect();
    let t = t975(u.dof);
    let names = u.layout.names();
    let unseen: Vec<usize> = (0..np).filter(|&i| u.prior_only.contains(&names[i])).collect();
    let mut covariance_m2 = vec![];
    let mut half_width_m = vec![];
    let mut prior_only_m = vec![];
    // The band's covariance at point `k` with the parameters `skip` left out.
    let band = |k: usize, jk: &DMatrix<f64>, skip: Option<usize>| {
        let model_m = u.model_error_tip_m * (e.measurements[k].arc_m / rod.length_m).clamp(0.0, 1.0);
        let mut c = Matrix3::from_diagonal_element(u.noise_var_m2 + model_m * model_m);
        let used = |i: &usize| !unbounded.contains(i) && Some(*i) != skip;
        for a in 0..3 {
            for b in 0..3 {
                for i in (0..np).filter(used) {
                    for l in (0..np).filter(used) {
                        c[(a, b)] += jk[(a, i)] * u.covariance[(i, l)] * jk[(b, l)];
                    }
                }
            }
        }
        c
    };
    for k in 0..e.measurements.len() {
        let jk = j.rows(3 * k, 3).into_owned();
        let mut c = band(k, &jk, None);
        let full = Vec3::from_fn(|a, _| t * c[(a, a)].sqrt());
        prior_only_m.push(
            unseen
                .iter()
                .filter(|&&i| (0..3).any(|a| jk[(a, i)].abs() > 1e-12))
                .map(|&i| {
                    let without = band(k, &jk, Some(i));
                    (names[i].clone(), Vec3::from_fn(|a, _| full[a] - t * without[(a, a)].sqrt()))
                })
                .collect(),
        );
        // A coordinate that moves along an unseen direction is unbounded.
        for a in 0..3 {
            if unbounded.iter().any(|&i| jk[(a, i)].abs() > 1e-12) {
                for b in 0..3 {
                    c[(a, b)] = if a == b { f64::INFINITY } else { 0.0 };
                    c[(b, a)] = c[(a, b)];
                }
            }
        }
        half_width_m.push(Vec3::from_fn(|a, _| t * c[(a, a)].sqrt()));
        covariance_m2.push(c);
    }
    Ok(Prediction { points_m: ev.predicted[0].clone(), covariance_m2, half_width_m, prior_only_m })
}

/// Cross-validation with `folds` folds (experiment i in fold i mod folds;
/// `folds` = number of experiments is leave-one-out): each fold predicted
/// by a fit on the others, started at `full`'s values. Prediction errors
/// per experiment and point \[mm\] (NaN where the fit or prediction failed).
pub fn cross_validate(rod: &Rod, experiments: &[Experiment], full: &Fit, opts: &FitOptions, folds: usize) -> Vec<Vec<f64>> {
    let n = experiments.len();
    let folds = folds.clamp(2, n.max(2));
    let mut errors: Vec<Vec<f64>> = experiments.iter().map(|e| vec![f64::NAN; e.measurements.len()]).collect();
    let v = &full.values;
    for fold in 0..folds {
        let (test, train): (Vec<usize>, Vec<usize>) = (0..n).partition(|i| i % folds == fold);
        if test.is_empty() || train.is_empty() {
            continue;
        }
        let rest: Vec<Experiment> = train.iter().map(|&i| experiments[i].clone()).collect();
        let o = FitOptions { starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..opts.clone() };
        let Ok(f) = fit(rod, &rest, &o, |_| {}) else { continue };
        for &i in &test {
            if let Ok((p, _)) = predict(rod, &experiments[i], &f.values) {
                errors[i] = experiments[i].measurements.iter().zip(&p).map(|(m, p)| m.miss(p).norm() * 1e3).collect();
            }
        }
    }
    errors
}

/// Leave-one-out: fit on all but one experiment, predict that one.
#[derive(Clone, Debug, Serialize)]
pub struct LooResult {
    pub experiment: String,
    pub e_pa: f64,
    pub g_pa: f64,
    pub rho_kg_m3: f64,
    /// Prediction error per measured point \[mm\].
    pub errors_mm: Vec<f64>,
}

pub fn leave_one_out(rod: &Rod, experiments: &[Experiment], full: &Fit, opts: &FitOptions, mut progress: impl FnMut(Step)) -> Vec<LooResult> {
    leave_one_out_reporting(rod, experiments, full, opts, &mut progress)
}

fn leave_one_out_reporting(rod: &Rod, experiments: &[Experiment], full: &Fit, opts: &FitOptions, progress: &mut dyn FnMut(Step)) -> Vec<LooResult> {
    let mut out = vec![];
    if experiments.len() < 2 {
        return out;
    }
    let v = &full.values;
    for (i, left_out) in experiments.iter().enumerate() {
        progress(Step::Counted { stage: "leave-one-out", done: i + 1, total: experiments.len() });
        let rest: Vec<Experiment> = experiments.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, e)| e.clone()).collect();
        let o = FitOptions { starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..opts.clone() };
        let Ok(f) = fit(rod, &rest, &o, |_| {}) else {
            out.push(LooResult { experiment: left_out.id.clone(), e_pa: f64::NAN, g_pa: f64::NAN, rho_kg_m3: f64::NAN, errors_mm: vec![f64::NAN] });
            continue;
        };
        let errors = match predict(rod, left_out, &f.values) {
            Ok((p, _)) => left_out.measurements.iter().zip(&p).map(|(m, p)| m.miss(p).norm() * 1e3).collect(),
            Err(_) => vec![f64::NAN],
        };
        out.push(LooResult { experiment: left_out.id.clone(), e_pa: f.values.e_pa, g_pa: f.values.g_pa, rho_kg_m3: f.values.rho_kg_m3, errors_mm: errors });
    }
    out
}
