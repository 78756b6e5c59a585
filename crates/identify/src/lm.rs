//! Levenberg-Marquardt as an argmin [`Solver`]: Gauss-Newton steps on
//! `1/2 |r|^2` with Marquardt's diagonal damping, adapted each iteration.
//! A step that fails (the static model does not converge at the trial
//! parameters) counts as a rejected step, like a cost increase.

use argmin::core::{Error, IterState, Jacobian, Operator, Problem, Solver, State, TerminationReason, TerminationStatus, KV};
use nalgebra::{DMatrix, DVector};

pub type LmState = IterState<DVector<f64>, DVector<f64>, DMatrix<f64>, (), (), f64>;

#[derive(Clone, Debug)]
pub struct LevenbergMarquardt {
    lambda: f64,
    /// Stop when the cost decreases by less than this fraction.
    pub cost_tolerance: f64,
    /// Stop when the step is shorter than this (parameter units).
    pub step_tolerance: f64,
    stalled: bool,
    last_rel_decrease: f64,
    last_step: f64,
    /// Cost after every iteration.
    pub history: Vec<f64>,
    /// Cost at which the fit is exact to the static model's precision.
    noise_floor: f64,
    /// A weak Gaussian prior on the parameters (centre, sigma): keeps a
    /// parameter the data do not determine (G under planar bending of a
    /// rod with a stiff core) from wandering on round-off gradients.
    prior: Option<(DVector<f64>, f64)>,
    /// Which parameters the prior acts on (decided at the start).
    prior_active: Vec<bool>,
}

impl Default for LevenbergMarquardt {
    fn default() -> Self {
        Self {
            lambda: 1e-3,
            cost_tolerance: 1e-12,
            step_tolerance: 1e-10,
            stalled: false,
            last_rel_decrease: f64::INFINITY,
            last_step: f64::INFINITY,
            history: vec![],
            noise_floor: 0.0,
            prior: None,
            prior_active: vec![],
        }
    }
}

/// Relative information below which a parameter gets the prior.
const PRIOR_ACTIVATION: f64 = 1e-8;

/// Largest change of a log-parameter per iteration (a factor e).
const MAX_LOG_STEP: f64 = 1.0;

fn cost_of(r: &DVector<f64>) -> f64 {
    0.5 * r.norm_squared()
}

impl LevenbergMarquardt {
    /// Adds `1/2 |(p - centre) / sigma|^2` to the cost.
    pub fn with_prior(mut self, centre: DVector<f64>, sigma: f64) -> Self {
        self.prior = Some((centre, sigma));
        self
    }

    fn prior_cost(&self, p: &DVector<f64>) -> f64 {
        let Some((c, s)) = &self.prior else { return 0.0 };
        self.prior_active.iter().enumerate().filter(|(_, a)| **a).map(|(i, _)| 0.5 * ((p[i] - c[i]) / s).powi(2)).sum()
    }
}

impl<O> Solver<O, LmState> for LevenbergMarquardt
where
    O: Operator<Param = DVector<f64>, Output = DVector<f64>> + Jacobian<Param = DVector<f64>, Jacobian = DMatrix<f64>>,
{
    fn name(&self) -> &str {
        "Levenberg-Marquardt"
    }

    fn init(&mut self, problem: &mut Problem<O>, state: LmState) -> Result<(LmState, Option<KV>), Error> {
        let p = state.get_param().ok_or_else(|| Error::msg("Levenberg-Marquardt needs an initial parameter vector"))?.clone();
        let r = problem.apply(&p)?;
        // The prior acts only on parameters the data barely see at the
        // start (information below 1e-8 of the best seen: 1e-11 for G of a
        // steel-core rod bent in a plane, 1e-2 for G of the silicone arm),
        // so that it never biases what the data determine.
        if self.prior.is_some() {
            let j = problem.jacobian(&p)?;
            let info: Vec<f64> = (0..j.ncols()).map(|i| j.column(i).norm_squared()).collect();
            let most = info.iter().cloned().fold(0.0, f64::max);
            self.prior_active = info.iter().map(|x| *x < PRIOR_ACTIVATION * most).collect();
        }
        let c = cost_of(&r) + self.prior_cost(&p);
        // Normalised residuals of 1e-8 (1e-11 m at 1 mm sigma) are the
        // static solver's round-off: below that, further "decreases" are
        // noise and would only walk along flat directions.
        self.noise_floor = 0.5 * r.len() as f64 * 1e-16;
        self.history.push(c);
        Ok((state.cost(c), None))
    }

    fn next_iter(&mut self, problem: &mut Problem<O>, mut state: LmState) -> Result<(LmState, Option<KV>), Error> {
        let p = state.take_param().ok_or_else(|| Error::msg("no parameter vector"))?;
        let r = problem.apply(&p)?;
        let cost = cost_of(&r) + self.prior_cost(&p);
        if cost_of(&r) <= self.noise_floor {
            self.stalled = true;
            self.history.push(cost);
            return Ok((state.param(p).cost(cost), None));
        }
        let j = problem.jacobian(&p)?;
        let mut g = j.transpose() * &r;
        let mut a = j.transpose() * &j;
        if let Some((c, s)) = &self.prior {
            for i in (0..a.nrows()).filter(|i| self.prior_active.get(*i) == Some(&true)) {
                g[i] += (p[i] - c[i]) / (s * s);
                a[(i, i)] += 1.0 / (s * s);
            }
        }
        let max_diag = a.diagonal().amax().max(1e-300);
        let mut accepted = None;
        for _ in 0..30 {
            let mut damped = a.clone();
            for i in 0..a.nrows() {
                damped[(i, i)] += self.lambda * (a[(i, i)] + 1e-9 * max_diag);
            }
            let Some(mut step) = damped.cholesky().map(|c| c.solve(&(-&g))) else {
                self.lambda *= 4.0;
                continue;
            };
            // Trust region on the log-parameters, per component: a nearly
            // flat direction (G under planar loads) would otherwise take a
            // step of hundreds of e-folds on round-off gradients, and
            // scaling the whole step down for it would stall E with it.
            step.apply(|s| *s = s.clamp(-MAX_LOG_STEP, MAX_LOG_STEP));
            let trial = &p + &step;
            match problem.apply(&trial) {
                Ok(rt) if cost_of(&rt) + self.prior_cost(&trial) < cost => {
                    let ct = cost_of(&rt) + self.prior_cost(&trial);
                    self.last_rel_decrease = (cost - ct) / cost.max(1e-300);
                    self.last_step = step.norm();
                    self.lambda = (self.lambda / 3.0).max(1e-12);
                    accepted = Some((trial, ct));
                    break;
                }
                _ => self.lambda *= 4.0,
            }
        }
        let (p_new, c_new) = match accepted {
            Some(x) => x,
            None => {
                self.stalled = true;
                (p, cost)
            }
        };
        self.history.push(c_new);
        Ok((state.param(p_new).cost(c_new), None))
    }

    fn terminate(&mut self, _state: &LmState) -> TerminationStatus {
        if self.stalled || self.last_rel_decrease < self.cost_tolerance || self.last_step < self.step_tolerance {
            TerminationStatus::Terminated(TerminationReason::SolverConverged)
        } else {
            TerminationStatus::NotTerminated
        }
    }
}
