//! One Newton solver for every nonlinear system of rodlab: the rod's statics,
//! the observer's KKT and spring systems, and the simulator's time steps.
//!
//! Shape borrowed from argmin: a problem is a value implementing [`System`]
//! (residual, linearisation, Newton directions, merit), a line-search
//! condition is a value implementing [`LineSearchCondition`], and the loop
//! that combines them ([`Newton::solve`]) and the adaptive continuation in a
//! parameter ([`continuation`]) are written once.

use nalgebra::{DMatrix, DVector};

/// A residual with the scale its convergence is judged against.
#[derive(Clone, Debug)]
pub struct Residual {
    pub value: DVector<f64>,
    /// Size of the terms that make up the residual (|K q| + |loads| ...):
    /// converged when the merit is below `tolerance * scale`.
    pub scale: f64,
    /// The potential whose gradient the residual is, for systems that
    /// minimise it (line search on the energy).
    pub energy: Option<f64>,
}

impl Residual {
    pub fn new(value: DVector<f64>, scale: f64) -> Residual {
        Residual { value, scale, energy: None }
    }
}

/// A residual and its Jacobian at one point.
#[derive(Clone, Debug)]
pub struct Linearisation {
    pub residual: Residual,
    pub tangent: DMatrix<f64>,
}

/// A square nonlinear system `r(x) = 0`.
pub trait System {
    /// Residual at `x` (a line-search trial). `None`: not defined there.
    fn residual(&mut self, x: &DVector<f64>) -> Option<Residual>;

    /// Residual and tangent at `x`.
    fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation>;

    /// How many alternative Newton directions [`System::direction`] offers.
    fn direction_count(&self) -> usize {
        1
    }

    /// Newton direction number `attempt` (tried in order until one passes
    /// the line search; `None`: not available). Default: the LU solution of
    /// `H dx = -r`.
    fn direction(&mut self, lin: &Linearisation, attempt: usize) -> Option<DVector<f64>> {
        let _ = attempt;
        lin.tangent.clone().lu().solve(&(-&lin.residual.value))
    }

    /// A chord step (modified Newton): the direction for the residual `r`
    /// from the factorisation of the last linearisation, which the system
    /// kept. `None` (the default): the system keeps none, every iteration
    /// linearises.
    fn chord_direction(&mut self, r: &Residual) -> Option<DVector<f64>> {
        let _ = r;
        None
    }

    /// Whether the start may already be a solution (a warm start, or a
    /// kept factorisation to take Broyden steps from): then the solve
    /// evaluates a residual before its first tangent. Default: yes. A
    /// system that starts cold says no and saves that residual, its first
    /// tangent's residual deciding instead (a start that was converged
    /// after all then costs a tangent, and the answer is the same).
    fn start_may_be_converged(&self) -> bool {
        true
    }

    /// The line search's measure of a residual. Default: Euclidean norm.
    fn merit(&self, r: &Residual) -> f64 {
        r.value.norm()
    }

    /// Slope of the merit along `d` at the linearisation point (the
    /// Armijo condition's reference). Default: `-|r|`, the slope of the
    /// residual norm along a Newton direction.
    fn slope(&self, lin: &Linearisation, d: &DVector<f64>) -> f64 {
        let _ = d;
        -self.merit(&lin.residual)
    }

    /// Converged at `tolerance`. Default: merit <= tolerance * scale.
    fn converged(&self, r: &Residual, tolerance: f64) -> bool {
        let m = self.merit(r);
        m <= tolerance * r.scale || m < 1e-300
    }

    /// Close enough to stop when the line search fails (Newton stalled at
    /// round-off).
    fn acceptable(&self, r: &Residual, tolerance: f64) -> bool {
        self.merit(r) <= 1e3 * tolerance * r.scale
    }

    /// Close enough to stop after a step that did not halve the merit
    /// (Newton no longer converging fast, e.g. redundant constraints on
    /// slightly inconsistent data). Default: never.
    fn slow_but_acceptable(&self, r: &Residual, tolerance: f64) -> bool {
        let _ = (r, tolerance);
        false
    }
}

/// Condition for accepting a step of length `alpha` along a descent
/// direction of the merit with slope `slope` (< 0) at the start.
pub trait LineSearchCondition {
    fn accept(&self, merit_0: f64, merit_trial: f64, alpha: f64, slope: f64) -> bool;
}

/// Armijo's sufficient decrease: `m(x + a d) <= m(x) + c a slope`. For the
/// residual norm along a Newton direction (slope -|r|) this is
/// `|r(x + a d)| <= (1 - c a) |r(x)|`.
#[derive(Clone, Copy, Debug)]
pub struct ArmijoNorm {
    pub c: f64,
}

impl Default for ArmijoNorm {
    fn default() -> Self {
        Self { c: 1e-4 }
    }
}

impl LineSearchCondition for ArmijoNorm {
    fn accept(&self, merit_0: f64, merit_trial: f64, alpha: f64, slope: f64) -> bool {
        merit_trial.is_finite() && merit_trial <= merit_0 + self.c * alpha * slope
    }
}

/// Newton iteration with backtracking.
#[derive(Clone, Debug)]
pub struct Newton<C = ArmijoNorm> {
    /// Newton iterations (tangents) at most; Broyden steps are bounded
    /// apart, by as many again (a cheap step never costs the budget that
    /// a full Newton iteration would have converged with).
    pub max_iterations: usize,
    pub tolerance: f64,
    /// Backtracking halves the step down to this length.
    pub min_step: f64,
    pub condition: C,
    /// Broyden steps near the solution for systems that keep their
    /// tangent's factorisation ([`System::chord_direction`]); off: every
    /// iteration linearises (the reference the tests compare with).
    pub quasi_newton: bool,
    /// Broyden steps after a damped Newton step as well (see
    /// `QUASI_AFTER_DAMPED`). On for statics, where the first step from
    /// straight is often damped (Table II's rod: one tangent instead of
    /// two); off by default: the observer's hard mode took 1.2-1.45x
    /// longer with it (criterion, 200 frames).
    pub quasi_after_damped_step: bool,
}

impl Default for Newton<ArmijoNorm> {
    fn default() -> Self {
        Self { max_iterations: 40, tolerance: 1e-11, min_step: 1e-4, condition: ArmijoNorm::default(), quasi_newton: true, quasi_after_damped_step: false }
    }
}

/// A converged solve.
#[derive(Clone, Debug)]
pub struct Solved {
    pub x: DVector<f64>,
    pub iterations: usize,
    pub merit: f64,
    pub residual: Residual,
}

/// Why a solve stopped without converging.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// Residual or tangent not defined at the start.
    Undefined,
    /// The residual or its scale is not finite: loads or parameters beyond
    /// what floating point (and the model) can represent.
    NotFinite,
    /// No direction gave a sufficient decrease.
    LineSearch {
        iterations: usize,
        merit: f64,
    },
    MaxIterations {
        iterations: usize,
        merit: f64,
    },
}

impl Failure {
    pub fn merit(&self) -> f64 {
        match self {
            Failure::Undefined | Failure::NotFinite => f64::NAN,
            Failure::LineSearch { merit, .. } | Failure::MaxIterations { merit, .. } => *merit,
        }
    }

    pub fn iterations(&self) -> usize {
        match self {
            Failure::Undefined | Failure::NotFinite => 0,
            Failure::LineSearch { iterations, .. } | Failure::MaxIterations { iterations, .. } => *iterations,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Undefined => write!(f, "residual not defined at the start"),
            Failure::NotFinite => write!(f, "the residual is not finite (loads or parameters beyond what the model can represent)"),
            Failure::LineSearch { iterations, merit } => write!(f, "line search failed after {iterations} iterations (residual {merit:.3e})"),
            Failure::MaxIterations { iterations, merit } => write!(f, "no convergence in {iterations} iterations (residual {merit:.3e})"),
        }
    }
}

impl std::error::Error for Failure {}

impl fault::Fault for Failure {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Computation
    }
}

/// Whether `r` is a number at all: a system's own `converged` or
/// `acceptable` may compare against an infinite scale, and `inf <= inf`.
fn finite(r: &Residual) -> bool {
    r.scale.is_finite() && r.value.iter().all(|v| v.is_finite())
}

/// A solve's iterations: Newton's (a tangent each) and Broyden's, each
/// kind bounded by `max_iterations`; reported as their sum.
#[derive(Clone, Copy, Debug, Default)]
struct Iterations {
    newton: usize,
    broyden: usize,
}

impl Iterations {
    fn total(&self) -> usize {
        self.newton + self.broyden
    }
}

/// Where a solve goes on from after its start: solved already, or the
/// point to take the first tangent at.
enum Start {
    Solved(Solved),
    From(DVector<f64>),
}

/// Quasi-Newton steps start after a full Newton step that cut the
/// residual's norm to this fraction or less (the tangent is then close to
/// the solution's) ...
const QUASI_AFTER: f64 = 0.1;
/// ... or after a damped step that cut it to this fraction or less (Table
/// II's rod from straight: to 0.503 at a quarter step; a damped step that
/// cuts less comes from a tangent too far off for Broyden to build on).
const QUASI_AFTER_DAMPED: f64 = 0.6;
/// ... and go on while each cuts it to this fraction or less; the first that
/// does not is dropped and the next iteration linearises again.
const QUASI_CONTRACTION: f64 = 0.25;
/// ... or to this after a damped Newton step: its tangent lies further
/// from the solution, so the first Broyden steps contract less while they
/// learn, yet a step (a residual) still costs a small part of a tangent and
/// its factorisation (an eighth on Table II's rod, which converges this way
/// in ten steps instead of a second tangent and six).
const QUASI_CONTRACTION_DAMPED: f64 = 0.5;

impl<C: LineSearchCondition> Newton<C> {
    /// Broyden's method near the solution, from the last tangent's
    /// factorisation `B0` (the system's [`System::chord_direction`]): each
    /// step costs a residual instead of a tangent (Table II: 1.6 us against
    /// 11 us) and convergence stays superlinear. The update is kept in
    /// product form over the steps taken (Kelley, "Iterative Methods for
    /// Linear and Nonlinear Equations", 1995, Algorithm broyden, full
    /// steps): `newton_step` is the step that led to `x` and its length
    /// as a fraction of the Newton direction `-B0^-1 r` (1: a full step);
    /// without one, the first step is the chord step from `x`. A damped
    /// step's update is kept on its own, `(I + a s^T / delta)` (Broyden's
    /// good update of `B0` for any step, by Sherman and Morrison), and the
    /// full steps after it in Kelley's product form. Each step must cut
    /// |r| to `QUASI_CONTRACTION` (`QUASI_CONTRACTION_DAMPED` after a
    /// damped step) and not raise the merit, or it is dropped. Returns the
    /// last accepted point.
    fn quasi_newton_steps<S: System + ?Sized>(
        &self,
        sys: &mut S,
        newton_step: Option<(DVector<f64>, f64)>,
        mut x: DVector<f64>,
        mut r: Residual,
        mut merit: f64,
        it: &mut Iterations,
    ) -> (DVector<f64>, Residual, f64) {
        let (mut steps, mut damped) = match newton_step {
            Some((step, 1.0)) => (vec![step], None),
            Some((step, alpha)) => (Vec::new(), Some((step, alpha))),
            None => (Vec::new(), None),
        };
        let contraction = if damped.is_some() { QUASI_CONTRACTION_DAMPED } else { QUASI_CONTRACTION };
        // The damped step's update `(I + a s^T / delta)` of the inverse.
        let mut first_update: Option<(DVector<f64>, DVector<f64>, f64)> = None;
        while it.broyden < self.max_iterations && !sys.converged(&r, self.tolerance) {
            let Some(mut z) = sys.chord_direction(&r) else { break };
            if let Some((s0, a0, delta0)) = &first_update {
                let c = s0.dot(&z) / delta0;
                z.axpy(c, a0, 1.0);
            }
            if let Some((step, alpha)) = damped.take() {
                // H y = d - w for the step s = alpha d (w: this direction
                // under B0 alone); a = s - H y, delta = s^T H y.
                let d = &step / alpha;
                let dd = d.norm_squared();
                let dw = d.dot(&z);
                let delta = alpha * (dd - dw);
                // Also stops for NaN.
                let regular = delta.abs() > 1e-12 * alpha * dd;
                if !regular {
                    break;
                }
                let a = &d * (alpha - 1.0) + &z;
                let c = alpha * dw / delta;
                z.axpy(c, &a, 1.0);
                first_update = Some((step, a, delta));
            } else if let Some(last) = steps.last() {
                for j in 0..steps.len() - 1 {
                    let c = steps[j].dot(&z) / steps[j].norm_squared();
                    z.axpy(c, &steps[j + 1], 1.0);
                }
                let denominator = 1.0 - last.dot(&z) / last.norm_squared();
                // Also false for NaN.
                let regular = denominator.abs() > 1e-12;
                if !regular {
                    break;
                }
                z /= denominator;
            }
            let xn = &x + &z;
            let Some(rn) = sys.residual(&xn).filter(finite) else { break };
            let mn = sys.merit(&rn);
            let contracts = rn.value.norm() <= contraction * r.value.norm();
            let descends = mn <= merit || sys.converged(&rn, self.tolerance);
            if !(contracts && descends) {
                break;
            }
            it.broyden += 1;
            (x, r, merit) = (xn, rn, mn);
            steps.push(z);
        }
        (x, r, merit)
    }

    /// A warm start's residual: converged already (no tangent needed), or
    /// Broyden steps from a factorisation handed in with the start (a
    /// nearby problem's tangent, e.g. the last parameters' in a fit), kept
    /// only while they converge fast; the point the first tangent is taken
    /// at.
    fn warm_start<S: System + ?Sized>(&self, sys: &mut S, x0: &DVector<f64>, it: &mut Iterations) -> Result<Start, Failure> {
        let first = sys.residual(x0).ok_or(Failure::Undefined)?;
        if let Some(solved) = self.solved_at_start(sys, x0, &first)? {
            return Ok(Start::Solved(solved));
        }
        let merit = sys.merit(&first);
        if !self.quasi_newton {
            return Ok(Start::From(x0.clone()));
        }
        let (xq, rq, mq) = self.quasi_newton_steps(sys, None, x0.clone(), first, merit, it);
        if sys.converged(&rq, self.tolerance) {
            return Ok(Start::Solved(Solved { x: xq, iterations: it.total(), merit: mq, residual: rq }));
        }
        Ok(Start::From(xq))
    }

    /// The start's first residual `r` (the warm start's own, or the
    /// first tangent's): not a number, or already converged (no
    /// iteration), or neither (`None`).
    fn solved_at_start<S: System + ?Sized>(&self, sys: &S, x0: &DVector<f64>, r: &Residual) -> Result<Option<Solved>, Failure> {
        if !finite(r) {
            return Err(Failure::NotFinite);
        }
        if !sys.converged(r, self.tolerance) {
            return Ok(None);
        }
        Ok(Some(Solved { x: x0.clone(), iterations: 0, merit: sys.merit(r), residual: r.clone() }))
    }

    /// Solves `sys` from `x0`.
    pub fn solve<S: System + ?Sized>(&self, sys: &mut S, x0: &DVector<f64>) -> Result<Solved, Failure> {
        let mut it = Iterations::default();
        let warm = sys.start_may_be_converged();
        let x = if warm { self.warm_start(sys, x0, &mut it)? } else { Start::From(x0.clone()) };
        let mut x = match x {
            Start::Solved(s) => return Ok(s),
            Start::From(x) => x,
        };
        let mut lin = sys.linearise(&x).ok_or(Failure::Undefined)?;
        if !warm {
            if let Some(solved) = self.solved_at_start(sys, &x, &lin.residual)? {
                return Ok(solved);
            }
        }
        let mut merit = sys.merit(&lin.residual);
        loop {
            if it.newton >= self.max_iterations || !merit.is_finite() {
                return Err(Failure::MaxIterations { iterations: it.total(), merit });
            }
            it.newton += 1;
            let mut accepted = None;
            'directions: for attempt in 0..sys.direction_count() {
                let Some(d) = sys.direction(&lin, attempt) else { continue };
                let slope = sys.slope(&lin, &d);
                let mut alpha = 1.0;
                while alpha >= self.min_step {
                    let xn = &x + &d * alpha;
                    if let Some(trial) = sys.residual(&xn).filter(finite) {
                        let m = sys.merit(&trial);
                        if self.condition.accept(merit, m, alpha, slope) || sys.converged(&trial, self.tolerance) {
                            accepted = Some((xn, trial, m, alpha));
                            break 'directions;
                        }
                    }
                    alpha *= 0.5;
                }
            }
            let Some((xn, trial, m, alpha)) = accepted else {
                // Stalled at round-off: accept if already close.
                if sys.acceptable(&lin.residual, self.tolerance) {
                    return Ok(Solved { x, iterations: it.total(), merit, residual: lin.residual });
                }
                return Err(Failure::LineSearch { iterations: it.total(), merit });
            };
            // Converged at the trial point: no new tangent needed.
            if sys.converged(&trial, self.tolerance) || (m > 0.5 * merit && sys.slow_but_acceptable(&trial, self.tolerance)) {
                return Ok(Solved { x: xn, iterations: it.total(), merit: m, residual: trial });
            }
            let (cut, from) = (trial.value.norm(), lin.residual.value.norm());
            let fast =
                self.quasi_newton && if alpha == 1.0 { cut <= QUASI_AFTER * from } else { self.quasi_after_damped_step && cut <= QUASI_AFTER_DAMPED * from };
            let (xn, trial, m) = if fast { self.quasi_newton_steps(sys, Some((&xn - &x, alpha)), xn, trial, m, &mut it) } else { (xn, trial, m) };
            if sys.converged(&trial, self.tolerance) {
                return Ok(Solved { x: xn, iterations: it.total(), merit: m, residual: trial });
            }
            x = xn;
            merit = m;
            lin = match sys.linearise(&x) {
                Some(l) => l,
                None => return Err(Failure::LineSearch { iterations: it.total(), merit }),
            };
        }
    }
}

/// Outcome of a continuation.
#[derive(Clone, Debug, PartialEq)]
pub struct Continued {
    /// Increments that succeeded.
    pub steps: usize,
    /// Attempts that failed and were halved.
    pub rejected: usize,
}

/// Drives a parameter from 0 to 1 in adaptive increments: `advance(from,
/// to)` tries to move the solution from `from` to `to` (and must leave the
/// state unchanged when it fails); a failed increment is halved, a success
/// doubles the next one. Fails (returning the parameter reached) when an
/// increment falls below `min_step`.
pub fn continuation<E>(first_step: f64, min_step: f64, mut advance: impl FnMut(f64, f64) -> Result<(), E>) -> Result<Continued, (f64, E)> {
    let mut done = 0.0f64;
    let mut step = first_step.clamp(min_step, 1.0);
    let mut out = Continued { steps: 0, rejected: 0 };
    while done < 1.0 {
        let to = (done + step).min(1.0);
        match advance(done, to) {
            Ok(()) => {
                out.steps += 1;
                done = to;
                step = (step * 2.0).min(1.0);
            }
            Err(e) => {
                out.rejected += 1;
                step *= 0.5;
                if step < min_step {
                    return Err((done, e));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// r(x) = [x0^3 - 8, x0 x1 - 2]: root (2, 1).
    struct Cubic;

    impl System for Cubic {
        fn residual(&mut self, x: &DVector<f64>) -> Option<Residual> {
            Some(Residual::new(DVector::from_vec(vec![x[0].powi(3) - 8.0, x[0] * x[1] - 2.0]), 8.0))
        }
        fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation> {
            let residual = self.residual(x)?;
            let tangent = DMatrix::from_row_slice(2, 2, &[3.0 * x[0] * x[0], 0.0, x[1], x[0]]);
            Some(Linearisation { residual, tangent })
        }
    }

    #[test]
    fn newton_finds_root_quadratically() {
        let s = Newton::default().solve(&mut Cubic, &DVector::from_vec(vec![5.0, 0.0])).unwrap();
        assert!((s.x[0] - 2.0).abs() < 1e-12 && (s.x[1] - 1.0).abs() < 1e-12, "{}", s.x);
        assert!(s.iterations < 12, "{} iterations", s.iterations);
    }

    /// `Cubic` (its first residual shifted), counting its evaluations,
    /// started cold (no residual before the first tangent, whose residual
    /// decides whether the start was already the root) or warm.
    struct CountedCubic {
        shift: f64,
        cold: bool,
        residuals: usize,
        tangents: usize,
    }

    impl System for CountedCubic {
        fn residual(&mut self, x: &DVector<f64>) -> Option<Residual> {
            self.residuals += 1;
            let mut r = Cubic.residual(x)?;
            r.value[0] += self.shift;
            Some(r)
        }
        fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation> {
            self.tangents += 1;
            let mut lin = Cubic.linearise(x)?;
            lin.residual.value[0] += self.shift;
            Some(lin)
        }
        fn start_may_be_converged(&self) -> bool {
            !self.cold
        }
    }

    #[test]
    fn a_cold_start_takes_its_first_residual_from_the_tangent() {
        let cold = |shift: f64| CountedCubic { shift, cold: true, residuals: 0, tangents: 0 };
        // At the root already: one tangent, no residual, no iteration.
        let mut at_root = cold(0.0);
        let s = Newton::default().solve(&mut at_root, &DVector::from_vec(vec![2.0, 1.0])).unwrap();
        assert_eq!((s.iterations, at_root.residuals, at_root.tangents), (0, 0, 1));
        assert_eq!(s.x, DVector::from_vec(vec![2.0, 1.0]));
        // Elsewhere: the same root as a warm start finds, one residual fewer.
        let mut away = cold(0.0);
        let s = Newton::default().solve(&mut away, &DVector::from_vec(vec![5.0, 0.0])).unwrap();
        let mut warm_start = CountedCubic { cold: false, ..cold(0.0) };
        let warm = Newton::default().solve(&mut warm_start, &DVector::from_vec(vec![5.0, 0.0])).unwrap();
        assert_eq!((s.x.clone(), s.iterations, away.tangents), (warm.x, warm.iterations, warm_start.tangents));
        assert_eq!(away.residuals + 1, warm_start.residuals);
        assert!((s.x[0] - 2.0).abs() < 1e-12 && (s.x[1] - 1.0).abs() < 1e-12, "{}", s.x);
        // A residual that is not a number is still named as such.
        let e = Newton::default().solve(&mut cold(f64::NAN), &DVector::from_vec(vec![5.0, 0.0])).unwrap_err();
        assert_eq!(e, Failure::NotFinite);
    }

    #[test]
    fn max_iterations_is_a_failure() {
        let newton = Newton { max_iterations: 2, ..Newton::default() };
        let e = newton.solve(&mut Cubic, &DVector::from_vec(vec![50.0, 0.0])).unwrap_err();
        assert!(matches!(e, Failure::MaxIterations { iterations: 2, .. }), "{e:?}");
    }

    #[test]
    fn continuation_halves_and_doubles() {
        // Increments larger than 0.3 fail.
        let mut seen = vec![];
        let out = continuation(1.0, 1e-3, |a: f64, b: f64| {
            seen.push((a, b));
            if b - a > 0.3 {
                Err("too far")
            } else {
                Ok(())
            }
        })
        .unwrap();
        assert!(out.rejected >= 2 && out.steps >= 4, "{out:?}");
        assert_eq!(seen.last().unwrap().1, 1.0);
        let e = continuation(1.0, 0.1, |_, _| Err::<(), _>("never")).unwrap_err();
        assert_eq!(e, (0.0, "never"));
    }
}

/// What [`solve_along`] reached: the last solution, the Newton iterations
/// over all increments, the last merit and, on failure, the parameter
/// reached and the failed attempt's merit.
#[derive(Clone, Debug)]
pub struct Along {
    pub x: DVector<f64>,
    pub iterations: usize,
    pub merit: f64,
    pub outcome: Result<Continued, (f64, f64)>,
}

/// Newton's method at each increment of a [`continuation`] in t from 0 to
/// 1 (first a single step): `prepare(sys, t)` sets the system up for `t`
/// (loads scaled, an end pose moved), then `newton` solves from the last
/// solution.
pub fn solve_along<S: System + ?Sized>(newton: &Newton, sys: &mut S, x0: DVector<f64>, min_step: f64, mut prepare: impl FnMut(&mut S, f64)) -> Along {
    let mut along = Along { x: x0, iterations: 0, merit: 0.0, outcome: Ok(Continued { steps: 0, rejected: 0 }) };
    let outcome = continuation(1.0, min_step, |_, to| {
        prepare(sys, to);
        match newton.solve(sys, &along.x) {
            Ok(s) => {
                along.iterations += s.iterations;
                along.merit = s.merit;
                along.x = s.x;
                Ok(())
            }
            Err(e) => {
                along.iterations += e.iterations();
                Err(e.merit())
            }
        }
    });
    along.outcome = outcome;
    along
}
