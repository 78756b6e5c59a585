//! A held rod's equilibria followed along a path of holds `hold_at(t)` (an
//! end twisted, a clamp moved in) by pseudo-arclength continuation: the
//! path's parameter `t` is an unknown beside the strains and the hold's
//! reaction, and each step moves a given arclength along the branch, so the
//! branch is followed through a limit point (where `t` turns back: a loop
//! that snaps) as through a bifurcation (where the stability eigenvalue
//! crosses zero with `t` still advancing: a column that buckles). Each
//! point carries its stability ([`crate::held::stability_eigenvalue`]);
//! the first loss of stability is located to a tolerance in `t`.

use crate::held::{assemble_held, solve_held, stability_eigenvalue, HeldSolution, HoldRows, TipHold};
use crate::model::Model;
use crate::statics::{Loads, NewtonOptions, StaticSolution, StaticsError};
use nalgebra::{DMatrix, DVector};

/// A path of holds that moves the tip's hold from an equilibrium's: what a
/// lab turns or moves until the shape snaps or buckles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndPath {
    /// The tip's clamp turned about its own x axis (the rod's tangent at
    /// the tip) by `t` \[rad\] from the hold's rotation.
    TipTwistRad,
    /// The tip moved along the line through the base's centre until the
    /// centres are `t` \[m\] apart (rotation kept).
    ClampDistanceM,
}

impl EndPath {
    pub const KEYS: [&'static str; 2] = ["tip_twist_rad", "clamp_distance_m"];

    pub fn key(self) -> &'static str {
        match self {
            EndPath::TipTwistRad => Self::KEYS[0],
            EndPath::ClampDistanceM => Self::KEYS[1],
        }
    }

    pub fn parse(key: &str) -> Option<EndPath> {
        match key {
            "tip_twist_rad" => Some(EndPath::TipTwistRad),
            "clamp_distance_m" => Some(EndPath::ClampDistanceM),
            _ => None,
        }
    }

    /// The path from `hold` (the base's centre at `base_m`): its start and
    /// the hold at each `t`. A pin cannot be twisted: its path stays put.
    pub fn from(self, hold: TipHold, base_m: lie::Vec3) -> (f64, Box<dyn Fn(f64) -> TipHold>) {
        match (self, hold) {
            (EndPath::TipTwistRad, TipHold::Clamped { position_m, rotation, winding_rad }) => (
                0.0,
                Box::new(move |t: f64| TipHold::Clamped {
                    position_m,
                    rotation: rotation * lie::exp(&lie::stack(&lie::Vec3::new(t, 0.0, 0.0), &lie::Vec3::zeros())).rot,
                    winding_rad,
                }),
            ),
            (EndPath::TipTwistRad, pinned) => (0.0, Box::new(move |_| pinned)),
            (EndPath::ClampDistanceM, hold) => {
                let position_m = match hold {
                    TipHold::Pinned { position_m } | TipHold::Clamped { position_m, .. } => position_m,
                };
                let distance_m = (position_m - base_m).norm();
                let along = (position_m - base_m) / distance_m.max(1e-300);
                (
                    distance_m,
                    Box::new(move |d: f64| match hold {
                        TipHold::Pinned { .. } => TipHold::Pinned { position_m: base_m + along * d },
                        TipHold::Clamped { rotation, winding_rad, .. } => TipHold::Clamped { position_m: base_m + along * d, rotation, winding_rad },
                    }),
                )
            }
        }
    }
}

/// One equilibrium on the branch.
#[derive(Clone, Debug)]
pub struct BranchPoint {
    /// The path's parameter (the hold is `hold_at(t)`).
    pub t: f64,
    pub held: HeldSolution,
    /// [`stability_eigenvalue`]: negative beyond a loss of stability.
    pub lowest: f64,
    /// The branch's unit tangent's `t` component (the sign says whether
    /// `t` advances; it changes at a limit point).
    pub dt_ds: f64,
    /// The held system's unknowns `[q; lambda]` with `t` last.
    y: DVector<f64>,
    /// The branch's unit tangent at the point (same layout as `y`).
    tangent: DVector<f64>,
}

/// What happens where a branch loses its stability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CriticalKind {
    /// The path's parameter reaches an extreme and the branch turns back:
    /// past it, the shape snaps to another branch.
    LimitPoint,
    /// The stability eigenvalue crosses zero while `t` advances: another
    /// branch crosses this one (a column buckling).
    Bifurcation,
}

impl CriticalKind {
    pub fn describe(self) -> &'static str {
        match self {
            CriticalKind::LimitPoint => "a limit point (the shape snaps)",
            CriticalKind::Bifurcation => "a bifurcation (the shape buckles)",
        }
    }
}

/// A loss of stability located on the branch.
#[derive(Clone, Debug)]
pub struct CriticalPoint {
    pub kind: CriticalKind,
    /// The critical value of the path's parameter.
    pub t: f64,
    /// The stable equilibrium next to it (within the tolerance in `t`).
    pub point: BranchPoint,
}

/// How far and how finely to follow a branch.
#[derive(Clone, Copy, Debug)]
pub struct BranchOptions {
    /// Where the path ends (the branch is followed until `t` passes it).
    pub t_end: f64,
    /// The first step, in `t`.
    pub first_step: f64,
    /// Equilibria at most (a branch that winds does not run forever).
    pub max_points: usize,
    /// A critical value is located to this tolerance in `t`.
    pub t_tolerance: f64,
    /// Stop at the first critical point.
    pub stop_at_first: bool,
}

/// The branch from `t_start` and what was found on it.
#[derive(Clone, Debug)]
pub struct Branch {
    pub points: Vec<BranchPoint>,
    pub critical: Vec<CriticalPoint>,
}

/// The augmented system's parts: residual and Jacobians of the held
/// system in `[q; lambda]` and in `t`, and the arclength metric.
struct Tracer<'a> {
    model: &'a Model,
    loads: &'a Loads,
    hold_at: &'a dyn Fn(f64) -> TipHold,
    opts: &'a NewtonOptions,
    /// The arclength weighs the strains by this (so that the first step
    /// moves the shape and `t` alike), `t` by one and the multipliers not
    /// at all (they follow from the shape).
    weight_q: f64,
    n: usize,
    c: usize,
}

impl Tracer<'_> {
    fn split(&self, y: &DVector<f64>) -> (DVector<f64>, f64) {
        (y.rows(0, self.n + self.c).into_owned(), y[self.n + self.c])
    }

    fn dot(&self, a: &DVector<f64>, b: &DVector<f64>) -> f64 {
        let q: f64 = a.rows(0, self.n).dot(&b.rows(0, self.n));
        self.weight_q * q + a[self.n + self.c] * b[self.n + self.c]
    }

    /// `[[H_x, H_t], [row]]`, the held residual and its scale at `y`.
    fn linearise(&self, y: &DVector<f64>, last_row: &DVector<f64>) -> Result<(DMatrix<f64>, DVector<f64>, f64), StaticsError> {
        let (x, t) = self.split(y);
        let m = self.n + self.c;
        let a = assemble_held(self.model, self.loads, (self.hold_at)(t), &x, true)?;
        let mut jac = DMatrix::zeros(m + 1, m + 1);
        jac.view_mut((0, 0), (m, m)).copy_from(&a.tangent.expect("tangent asked"));
        jac.view_mut((0, m), (m, 1)).copy_from(&residual_in_t(self.model, self.loads, self.hold_at, &x, t)?);
        jac.row_mut(m).copy_from(&last_row.transpose());
        Ok((jac, a.residual, a.scale))
    }

    /// The metric's row `W tau`.
    fn weighted(&self, tau: &DVector<f64>) -> DVector<f64> {
        let mut w = tau.clone();
        w.rows_mut(0, self.n).scale_mut(self.weight_q);
        w.rows_mut(self.n, self.c).fill(0.0);
        w
    }

    /// The unit tangent at `y`, oriented as `previous` (or, with none,
    /// toward increasing `t`).
    fn tangent(&self, y: &DVector<f64>, previous: Option<&DVector<f64>>) -> Result<DVector<f64>, StaticsError> {
        let m = self.n + self.c;
        let row = match previous {
            Some(p) => self.weighted(p),
            None => DVector::from_fn(m + 1, |i, _| if i == m { 1.0 } else { 0.0 }),
        };
        let (jac, _, _) = self.linearise(y, &row)?;
        let mut rhs = DVector::zeros(m + 1);
        rhs[m] = 1.0;
        let tau = jac.lu().solve(&rhs).filter(|v| v.iter().all(|x| x.is_finite())).ok_or_else(singular)?;
        Ok(&tau / self.dot(&tau, &tau).sqrt())
    }

    /// The equilibrium an arclength `ds` from `from` along `tau` (Newton on
    /// the held system with the arclength equation), or `None`.
    fn correct(&self, from: &DVector<f64>, tau: &DVector<f64>, ds: f64) -> Result<Option<(DVector<f64>, usize)>, StaticsError> {
        let m = self.n + self.c;
        let row = self.weighted(tau);
        let mut y = from + tau * ds;
        for iteration in 0..self.opts.max_iterations.min(20) {
            let (jac, residual, scale) = self.linearise(&y, &row)?;
            let arc = self.dot(tau, &(&y - from)) - ds;
            if residual.norm() <= self.opts.tolerance * scale.max(1e-300) && arc.abs() <= 1e-9 * ds.abs() {
                return Ok(Some((y, iteration)));
            }
            let mut rhs = DVector::zeros(m + 1);
            rhs.rows_mut(0, m).copy_from(&(-residual));
            rhs[m] = -arc;
            let Some(step) = jac.lu().solve(&rhs).filter(|v| v.iter().all(|x| x.is_finite())) else { return Ok(None) };
            // A correction longer than the step is a jump to another branch.
            if self.dot(&step, &step).sqrt() > 2.0 * ds.abs() {
                return Ok(None);
            }
            y += step;
        }
        Ok(None)
    }

    fn point(&self, y: DVector<f64>, tangent: DVector<f64>) -> Result<BranchPoint, StaticsError> {
        let (x, t) = self.split(&y);
        let hold = (self.hold_at)(t);
        let held = held_solution(&x, self.n, hold);
        let lowest = stability_eigenvalue(self.model, self.loads, hold, &held)?;
        Ok(BranchPoint { t, held, lowest, dt_ds: tangent[self.n + self.c], y, tangent })
    }

    /// The point `ds` along from `a` (its tangent oriented as `a`'s).
    fn step(&self, a: &BranchPoint, ds: f64) -> Result<Option<(BranchPoint, usize)>, StaticsError> {
        let Some((y, iterations)) = self.correct(&a.y, &a.tangent, ds)? else { return Ok(None) };
        let tangent = self.tangent(&y, Some(&a.tangent))?;
        Ok(Some((self.point(y, tangent)?, iterations)))
    }

    /// The critical point between `a` and `b` (`b` an arclength `ds` from
    /// `a`), by bisection on the arclength of the quantity that changes
    /// sign: `dt/ds` at a limit point, the eigenvalue at a bifurcation.
    fn locate(&self, a: &BranchPoint, b: BranchPoint, ds: f64, kind: CriticalKind, t_tolerance: f64) -> Result<CriticalPoint, StaticsError> {
        let sign = |p: &BranchPoint| match kind {
            CriticalKind::LimitPoint => p.dt_ds > 0.0,
            CriticalKind::Bifurcation => p.lowest > 0.0,
        };
        let a_sign = sign(a);
        let (mut lo, mut hi) = ((0.0, a.clone()), (ds, b));
        for _ in 0..60 {
            let narrow = (hi.1.t - lo.1.t).abs() <= t_tolerance && (hi.0 - lo.0).abs() <= 1e-3 * ds.abs();
            if narrow {
                break;
            }
            let mid = 0.5 * (lo.0 + hi.0);
            let Some((p, _)) = self.step(a, mid)? else { break };
            if sign(&p) == a_sign {
                lo = (mid, p);
            } else {
                hi = (mid, p);
            }
        }
        let ((s_lo, p_lo), (s_hi, p_hi)) = (lo, hi);
        let t = match kind {
            // t is quadratic in the arclength at its extreme: where the
            // slope interpolated between the two ends vanishes.
            CriticalKind::LimitPoint => {
                let (d_lo, d_hi) = (p_lo.dt_ds, p_hi.dt_ds);
                let s_star = (d_lo / (d_lo - d_hi)) * (s_hi - s_lo);
                p_lo.t + 0.5 * d_lo * s_star
            }
            CriticalKind::Bifurcation => p_lo.t + (p_hi.t - p_lo.t) * p_lo.lowest / (p_lo.lowest - p_hi.lowest),
        };
        Ok(CriticalPoint { kind, t, point: p_lo })
    }
}

/// The held residual's derivative in the path's `t` at fixed unknowns `x`
/// (only the hold's rows depend on it), by central differences of a
/// smooth map.
fn residual_in_t(model: &Model, loads: &Loads, hold_at: &dyn Fn(f64) -> TipHold, x: &DVector<f64>, t: f64) -> Result<DVector<f64>, StaticsError> {
    let h = 1e-6 * (1.0 + t.abs());
    let r = |t| assemble_held(model, loads, hold_at(t), x, false).map(|a| a.residual);
    Ok((r(t + h)? - r(t - h)?) / (2.0 * h))
}

fn singular() -> StaticsError {
    StaticsError::NoConvergence { reached: 1.0, residual: f64::NAN, at_reached: "; the branch's tangent is singular".into() }
}

/// The held solution for unknowns `x = [q; lambda]`.
fn held_solution(x: &DVector<f64>, n: usize, hold: TipHold) -> HeldSolution {
    let (moment_nm, force_n) = HoldRows::unscaled(hold).reaction(&x.as_slice()[n..]);
    let solution = StaticSolution { q: x.rows(0, n).into_owned(), iterations: 0, load_steps: 1, tangents: 0, residual_norm: 0.0 };
    HeldSolution { solution, tip_reaction: lie::stack(&moment_nm, &force_n) }
}

/// Follows the branch through the equilibrium at `hold_at(t_start)` (solved
/// from `q_start`, or from the hold's own start) toward `options.t_end`,
/// through limit points and bifurcations, locating each loss or gain of
/// stability on the way.
pub fn follow(
    model: &Model,
    loads: &Loads,
    hold_at: &dyn Fn(f64) -> TipHold,
    t_start: f64,
    q_start: Option<&DVector<f64>>,
    options: &BranchOptions,
    opts: &NewtonOptions,
) -> Result<Branch, StaticsError> {
    let hold = hold_at(t_start);
    let first = solve_held(model, loads, hold, q_start, opts)?;
    let n = model.n_dof();
    let c = hold.count();
    let mut y = DVector::zeros(n + c + 1);
    y.rows_mut(0, n + c).copy_from(&first.unknowns(hold));
    y[n + c] = t_start;
    let mut tracer = Tracer { model, loads, hold_at, opts, weight_q: 1.0, n, c };
    // The metric from the first tangent: |dq/dt|^2 weight_q = 1.
    let along_t = tracer.tangent(&y, None)?;
    let dq_dt2 = along_t.rows(0, n).norm_squared() / along_t[n + c].powi(2);
    tracer.weight_q = if dq_dt2 > 1e-300 { 1.0 / dq_dt2 } else { 1.0 };
    let direction = if options.t_end >= t_start { 1.0 } else { -1.0 };
    let tangent = tracer.tangent(&y, None)? * direction;
    let mut points = vec![tracer.point(y, tangent)?];
    let mut critical = vec![];
    let ds_first = options.first_step.abs() * std::f64::consts::SQRT_2;
    let (mut ds, ds_min, ds_max) = (ds_first, 1e-5 * ds_first, 4.0 * ds_first);
    while points.len() < options.max_points {
        let a = points.last().expect("the first point");
        if (a.t - options.t_end) * direction >= 0.0 {
            break;
        }
        let stepped = tracer.step(a, ds)?;
        // A tangent turning by more than ~30 degrees in one step: the step
        // is too long for the branch's curvature (or it jumped).
        let Some((b, iterations)) = stepped.filter(|(b, _)| tracer.dot(&a.tangent, &b.tangent) > 0.85) else {
            ds *= 0.5;
            if ds < ds_min {
                return Err(StaticsError::NoConvergence {
                    reached: a.t,
                    residual: f64::NAN,
                    at_reached: " along the branch (its step shrank to nothing)".into(),
                });
            }
            continue;
        };
        let kind = if a.dt_ds * b.dt_ds < 0.0 {
            Some(CriticalKind::LimitPoint)
        } else if (a.lowest > 0.0) != (b.lowest > 0.0) {
            Some(CriticalKind::Bifurcation)
        } else {
            None
        };
        if let Some(kind) = kind {
            critical.push(tracer.locate(a, b.clone(), ds, kind, options.t_tolerance)?);
            if options.stop_at_first {
                points.push(b);
                break;
            }
        }
        points.push(b);
        if iterations <= 3 {
            ds = (ds * 1.5).min(ds_max);
        }
    }
    Ok(Branch { points, critical })
}

/// The first critical point along the path from `t_start` toward `t_end`
/// (`None`: the branch stays as stable as it starts up to `t_end`).
pub fn first_critical(
    model: &Model,
    loads: &Loads,
    hold_at: &dyn Fn(f64) -> TipHold,
    (t_start, t_end, steps): (f64, f64, usize),
    t_tolerance: f64,
    opts: &NewtonOptions,
) -> Result<Option<CriticalPoint>, StaticsError> {
    let options = BranchOptions { t_end, first_step: (t_end - t_start) / steps.max(1) as f64, max_points: 40 * steps.max(1), t_tolerance, stop_at_first: true };
    Ok(follow(model, loads, hold_at, t_start, None, &options, opts)?.critical.into_iter().next())
}

/// The left null vector of the held system's Jacobian at a limit point
/// (unit norm): with it, a parameter's effect on the critical value is
/// `dt/dp = -(psi . dH/dp) / (psi . dH/dt)`.
pub fn limit_point_sensitivity(
    model: &Model,
    loads: &Loads,
    hold_at: &dyn Fn(f64) -> TipHold,
    critical: &CriticalPoint,
) -> Result<(DVector<f64>, f64), StaticsError> {
    let hold = hold_at(critical.point.t);
    let x = critical.point.held.unknowns(hold);
    let h = assemble_held(model, loads, hold, &x, true)?.tangent.expect("tangent asked");
    let svd = h.transpose().svd(false, true);
    let v_t = svd.v_t.ok_or_else(singular)?;
    let smallest = svd.singular_values.imin();
    let psi = v_t.row(smallest).transpose();
    let h_t = residual_in_t(model, loads, hold_at, &x, critical.point.t)?;
    Ok((psi.clone(), psi.dot(&h_t)))
}
