//! Statics in energy form (science §3): the equilibrium is a stationary
//! point of `Pi(q) = 1/2 q^T K q - sum F_i . p_i + sum T_c l_c(q)`, plus the
//! virtual work of dead moments (not conservative).
//!
//! The loads are [`crate::terms`]: elastic energy, gravity lumped at joints
//! (mass and first moment of every sub-segment kept), point forces and
//! moments at their joint (with an optional body-frame offset), cables. With
//! `W_k` the spatial wrench of all loads beyond segment k, the residual is
//!   r = K q + sum_c T_c dl_c/dq - sum_k Psi_k^T dexp(psi_k)^T Ad_{g_k}^T W_k
//! and its exact derivative is assembled by the terms module. The Newton
//! solver and load continuation of [`crate::newton`] solve `r = 0`.

use crate::model::Model;
use crate::newton::{self, Linearisation, Newton, Residual, System};
use crate::terms::{self, Cables, Elastic, Gravity, PointLoads, Term};
use lie::Vec3;
use nalgebra::DVector;

pub use crate::factors::Factors;
pub use crate::terms::{cable_lengths_m, Assembly, PointLoad};

/// Static loads. Continuation scales all of them together.
#[derive(Clone, Debug, PartialEq)]
pub struct Loads {
    /// Multiplies the rod's gravity vector (1 = as configured, 0 = off).
    pub gravity_scale: f64,
    pub point_loads: Vec<PointLoad>,
    /// Tension of each cable of the rod, in its order \[N\].
    pub cable_tensions_n: Vec<f64>,
    /// Which way each cable slides in its channel (what its friction
    /// opposes); empty: every cable is being pulled in.
    pub cable_slide: Vec<CableSlide>,
    /// Per cable, the base tension at which it last reversed (from the
    /// other slide) \[N\]; `None` or empty: it slides all along. A rubbing
    /// cable that reversed slides only near the base: beyond where its new
    /// capstan profile meets the one it stopped with, friction holds it
    /// and that profile stays (stick within the friction cone).
    pub cable_reversal_n: Vec<Option<f64>>,
    /// Per cable, the reversals before the last one that friction still
    /// holds, oldest first (empty: none): a tension that went back and
    /// forth; see [`crate::terms::Cables::earlier_reversals_n`].
    pub cable_earlier_reversals_n: Vec<Vec<f64>>,
}

/// Which way a cable slides through its channel while its tension is
/// held: friction (the rod file's `friction_mu`) opposes the motion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CableSlide {
    /// Being pulled in (loading): the tension falls from the base to the tip.
    #[default]
    PulledIn,
    /// Being let out (unloading): the tension rises from the base to the tip.
    LetOut,
}

impl CableSlide {
    /// As inputs.csv, `--direction` and Python spell it: "load" (pulled
    /// in) or "unload" (let out).
    pub fn key(self) -> &'static str {
        match self {
            CableSlide::PulledIn => "load",
            CableSlide::LetOut => "unload",
        }
    }

    /// The slide a [`CableSlide::key`] names; `None` for any other word.
    pub fn from_key(key: &str) -> Option<CableSlide> {
        [CableSlide::PulledIn, CableSlide::LetOut].into_iter().find(|s| s.key() == key)
    }

    /// What a word that is not a key should have been, for messages.
    pub const KEYS: &'static str = "\"load\" (pulled in) or \"unload\" (let out)";

    /// The sign of `mu theta` in the capstan factor `exp(sign mu theta)`.
    pub fn capstan_sign(self) -> f64 {
        match self {
            CableSlide::PulledIn => -1.0,
            CableSlide::LetOut => 1.0,
        }
    }
}

impl Default for Loads {
    fn default() -> Self {
        Self {
            gravity_scale: 1.0,
            point_loads: vec![],
            cable_tensions_n: vec![],
            cable_slide: vec![],
            cable_reversal_n: vec![],
            cable_earlier_reversals_n: vec![],
        }
    }
}

impl Loads {
    pub fn gravity() -> Self {
        Self::default()
    }

    pub fn none() -> Self {
        Self { gravity_scale: 0.0, ..Self::default() }
    }

    pub fn with_tip(mut self, length_m: f64, force_n: Vec3, moment_nm: Vec3) -> Self {
        self.point_loads.push(PointLoad { x_m: length_m, offset_body_m: Vec3::zeros(), force_n, moment_nm, follower: false });
        self
    }

    pub fn with_tensions(mut self, t: &[f64]) -> Self {
        self.cable_tensions_n = t.to_vec();
        self
    }

    /// Arc lengths that must be joints of the model.
    pub fn points_m(&self) -> Vec<f64> {
        self.point_loads.iter().map(|p| p.x_m).collect()
    }
}

/// Solver settings.
#[derive(Clone, Debug)]
pub struct NewtonOptions {
    pub max_iterations: usize,
    /// Converged when |r| <= tolerance * (|K q| + |external part of r|).
    pub tolerance: f64,
    /// Smallest load increment of the continuation is 1 / max_load_steps.
    pub max_load_steps: usize,
    /// Broyden steps near the solution instead of a tangent every
    /// iteration (same tolerance; see [`Newton::quasi_newton`]).
    pub quasi_newton: bool,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self { max_iterations: 40, tolerance: 1e-11, max_load_steps: 256, quasi_newton: true }
    }
}

/// Result of a static solve.
#[derive(Clone, Debug)]
pub struct StaticSolution {
    pub q: DVector<f64>,
    /// Newton iterations over all load steps.
    pub iterations: usize,
    /// Load increments used by the continuation (1 = direct).
    pub load_steps: usize,
    /// Tangents assembled and factorised (the costly part of an
    /// iteration; Broyden steps take a residual only).
    pub tangents: usize,
    pub residual_norm: f64,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum StaticsError {
    #[error("{0} cable tensions given, the rod has {1} cables")]
    TensionCount(usize, usize),
    #[error("load at X = {0} m is not on a joint of the model (build the model with the loads' points)")]
    LoadOffGrid(f64),
    #[error("load is not finite")]
    NotFinite,
    /// A rod whose tip is held, solved as if it were free.
    #[error("the rod file's tip is {0} ([tip] condition): give the tip's position (and a clamp's rotation) to solve it held")]
    TipHeld(&'static str),
    /// A held tip placed farther from the base than the rod reaches.
    #[error("the tip's hold is {distance_m:.4} m from the base, farther than the rod's length {length_m:.4} m")]
    Unreachable { distance_m: f64, length_m: f64 },
    /// `at_reached`: what the rod looked like at the load it reached (its
    /// validity: a fibre or cable strained past the model's range is the
    /// usual reason there is no equilibrium further on).
    #[error("static solve did not converge: load factor {reached:.4} reached, residual {residual:.3e}{at_reached}")]
    NoConvergence { reached: f64, residual: f64, at_reached: String },
}

impl fault::Fault for StaticsError {
    fn kind(&self) -> fault::Kind {
        match self {
            StaticsError::NoConvergence { .. } => fault::Kind::Computation,
            _ => fault::Kind::Input,
        }
    }
}

/// Builds a model whose joints include the loads' points.
pub fn model_for(rod: &crate::Rod, loads: &Loads) -> Model {
    Model::new(rod, &loads.points_m())
}

fn check_loads(model: &Model, loads: &Loads) -> Result<Vec<usize>, StaticsError> {
    if loads.cable_tensions_n.len() != model.rod.cables.len() && !(loads.cable_tensions_n.is_empty()) {
        return Err(StaticsError::TensionCount(loads.cable_tensions_n.len(), model.rod.cables.len()));
    }
    if !loads.gravity_scale.is_finite() || loads.cable_tensions_n.iter().any(|t| !t.is_finite()) {
        return Err(StaticsError::NotFinite);
    }
    let tol = 1e-9 * model.rod.length_m;
    loads
        .point_loads
        .iter()
        .map(|p| {
            if !(p.force_n.iter().chain(p.moment_nm.iter()).chain(p.offset_body_m.iter()).all(|v| v.is_finite())) {
                return Err(StaticsError::NotFinite);
            }
            let j = model.joint_at(p.x_m);
            if (model.joint_x_m[j] - p.x_m).abs() > tol {
                Err(StaticsError::LoadOffGrid(p.x_m))
            } else {
                Ok(j)
            }
        })
        .collect()
}

/// The static loads as terms, all scaled by the load factor `lambda`.
pub struct StaticTerms<'l> {
    gravity: Gravity,
    points: PointLoads<'l>,
    cables: Cables<'l>,
}

impl<'l> StaticTerms<'l> {
    pub fn new(model: &Model, loads: &'l Loads, lambda: f64) -> Result<StaticTerms<'l>, StaticsError> {
        let joints = check_loads(model, loads)?;
        Ok(StaticTerms {
            gravity: Gravity { scale: loads.gravity_scale * lambda },
            points: PointLoads { loads: &loads.point_loads, joints, scale: lambda },
            cables: Cables {
                tensions_n: &loads.cable_tensions_n,
                scale: lambda,
                slide: &loads.cable_slide,
                reversal_n: &loads.cable_reversal_n,
                earlier_reversals_n: &loads.cable_earlier_reversals_n,
            },
        })
    }

    /// Elastic energy plus the loads, in assembly order.
    pub fn all(&self) -> [&dyn Term; 4] {
        [&Elastic, &self.gravity, &self.points, &self.cables]
    }

    pub fn set_lambda(&mut self, loads: &Loads, lambda: f64) {
        self.gravity.scale = loads.gravity_scale * lambda;
        self.points.scale = lambda;
        self.cables.scale = lambda;
    }
}

/// Total potential energy of the conservative loads (moments excluded).
pub fn potential_energy(model: &Model, loads: &Loads, q: &DVector<f64>) -> Result<f64, StaticsError> {
    let mut no_moments = loads.clone();
    for p in &mut no_moments.point_loads {
        p.moment_nm = Vec3::zeros();
    }
    let terms = StaticTerms::new(model, &no_moments, 1.0)?;
    Ok(terms::energy(model, q, &terms.all()).expect("conservative terms"))
}

/// Residual `r(q)` (gradient of the potential plus virtual work of moments)
/// and, if asked, its exact Jacobian.
pub fn assemble(model: &Model, loads: &Loads, q: &DVector<f64>, lambda: f64, with_tangent: bool) -> Result<Assembly, StaticsError> {
    let terms = StaticTerms::new(model, loads, lambda)?;
    Ok(terms::assemble(model, q, &terms.all(), with_tangent))
}

/// The static equilibrium as a [`System`] for the Newton solver.
struct StaticSystem<'m, 'l> {
    model: &'m Model,
    terms: StaticTerms<'l>,
    /// The last tangent's factorisation, for Broyden steps.
    factors: Option<Factors>,
    tangents: usize,
    /// Solved from a given shape, not from the reference shape.
    from_given_shape: bool,
}

impl System for StaticSystem<'_, '_> {
    fn residual(&mut self, q: &DVector<f64>) -> Option<Residual> {
        let a = terms::assemble(self.model, q, &self.terms.all(), false);
        Some(Residual::new(a.residual, a.scale))
    }

    fn linearise(&mut self, q: &DVector<f64>) -> Option<Linearisation> {
        let a = terms::assemble(self.model, q, &self.terms.all(), true);
        self.tangents += 1;
        Some(Linearisation { residual: Residual::new(a.residual, a.scale), tangent: a.tangent? })
    }

    fn direction(&mut self, lin: &Linearisation, _attempt: usize) -> Option<DVector<f64>> {
        let factors = self.factors.insert(Factors::of(lin.tangent.clone()));
        factors.solve(&(-&lin.residual.value))
    }

    fn chord_direction(&mut self, r: &Residual) -> Option<DVector<f64>> {
        self.factors.as_ref()?.solve(&(-&r.value))
    }

    /// From the reference shape under loads the first residual is not
    /// zero: the first tangent's residual says so, and a residual is saved
    /// (Table II's rod: one of 14). After the first tangent the system
    /// keeps its factorisation, so a later load increment starts warm
    /// (Broyden steps from it).
    fn start_may_be_converged(&self) -> bool {
        self.from_given_shape || self.factors.is_some()
    }
}

/// Solves the static equilibrium under `loads`, from `q_start` (or the rest
/// configuration), with load continuation when a direct Newton fails.
pub fn solve(model: &Model, loads: &Loads, q_start: Option<&DVector<f64>>, opts: &NewtonOptions) -> Result<StaticSolution, StaticsError> {
    solve_with_factors(model, loads, q_start, None, opts)
}

/// [`solve`] from `q_start` with the factorisation of a tangent near it
/// (the same rod at nearby parameters or loads: a fit's last step): Broyden
/// steps from it come first and the first tangent only if they stall. The
/// equilibrium is the same to the solver's tolerance.
pub fn solve_with_factors(
    model: &Model,
    loads: &Loads,
    q_start: Option<&DVector<f64>>,
    factors: Option<&Factors>,
    opts: &NewtonOptions,
) -> Result<StaticSolution, StaticsError> {
    if model.rod.tip_condition != crate::TipCondition::Free {
        return Err(StaticsError::TipHeld(model.rod.tip_condition.key()));
    }
    let factors = factors.filter(|f| f.dimension() == model.n_dof()).cloned();
    let mut sys = StaticSystem { model, terms: StaticTerms::new(model, loads, 1.0)?, factors, tangents: 0, from_given_shape: q_start.is_some() };
    let newton = Newton {
        max_iterations: opts.max_iterations,
        tolerance: opts.tolerance,
        quasi_newton: opts.quasi_newton,
        quasi_after_damped_step: true,
        ..Newton::default()
    };
    let q = q_start.cloned().unwrap_or_else(|| DVector::zeros(model.n_dof()));
    let along = newton::solve_along(&newton, &mut sys, q, 1.0 / opts.max_load_steps as f64, |sys, to| sys.terms.set_lambda(loads, to));
    let newton::Along { x: q, iterations, merit: residual_norm, outcome } = along;
    match outcome {
        Ok(c) if q.iter().all(|v| v.is_finite()) && residual_norm.is_finite() => {
            Ok(StaticSolution { q, iterations, load_steps: c.steps, tangents: sys.tangents, residual_norm })
        }
        Ok(_) => Err(StaticsError::NoConvergence { reached: 1.0, residual: residual_norm, at_reached: "; the strains are not finite".into() }),
        Err((reached, last_failure)) => {
            let v = crate::validity::validity(model, &q);
            let warnings = v.warnings(&model.rod.cables);
            let at_reached = if warnings.is_empty() { format!("; at that load: {}", v.summary()) } else { format!("; at that load {}", warnings.join("; ")) };
            Err(StaticsError::NoConvergence { reached, residual: last_failure, at_reached })
        }
    }
}
