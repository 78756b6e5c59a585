//! Rods held at both ends: the tip pinned (its position given) or clamped
//! (its pose given) while the base is held as the rod file says.
//!
//! The tip's hold is a Lagrange multiplier: the reaction wrench at the tip
//! (a force, and for a clamp a moment, world frame, about the tip) is an
//! unknown beside the strains, applied to the rod as a [`Term`] (a wrench at
//! the tip joint, its exact tangent from the terms' assembler), and the
//! hold adds its equations: the tip's position error, and for a clamp its
//! rotation error `log(R R_target^T)`. The Newton solver of
//! [`crate::newton`] solves the augmented system `[r(q) + dr/dlambda; g(q)]`
//! with its exact Jacobian.

use crate::model::Model;
use crate::newton::{self, Linearisation, Newton, Residual, System};
use crate::statics::{Loads, NewtonOptions, StaticSolution, StaticTerms, StaticsError};
use crate::terms::{self, Attach, Sink, State, Term};
use crate::TipCondition;
use lie::{skew, Mat3, Vec3, Vec6};
use nalgebra::{DMatrix, DVector};

/// How the tip is held.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TipHold {
    /// The tip's centre at `position_m` (world), free to turn.
    Pinned { position_m: Vec3 },
    /// The tip's frame at `position_m` with rotation `rotation` (world).
    /// `winding_rad`: the whole turns (2 pi k about one axis, world frame)
    /// a clamp's rotation vector gave beyond its shortest form: a loop
    /// whose clamps turn a full turn apart has the rotation of none, and
    /// its start is wound by them (zero: the shortest turn).
    Clamped { position_m: Vec3, rotation: Mat3, winding_rad: Vec3 },
}

impl TipHold {
    /// Equations of the hold (and multipliers): 3 pinned, 6 clamped.
    pub fn count(&self) -> usize {
        match self {
            TipHold::Pinned { .. } => 3,
            TipHold::Clamped { .. } => 6,
        }
    }

    /// The hold a fraction `t` of the way from the tip's pose `start`
    /// (position on the straight line, rotation about one axis).
    fn part_way_from(&self, start: &lie::Pose, t: f64) -> TipHold {
        let position_m = start.pos + (self.position_m() - start.pos) * t;
        match self {
            TipHold::Pinned { .. } => TipHold::Pinned { position_m },
            TipHold::Clamped { rotation, .. } => {
                let turn = lie::so3_log(&(rotation * start.rot.transpose())) * t;
                TipHold::Clamped { position_m, rotation: lie::exp(&lie::stack(&turn, &Vec3::zeros())).rot * start.rot, winding_rad: Vec3::zeros() }
            }
        }
    }

    /// A clamp at `position_m` with `rotation` (world), by its shortest turn.
    pub fn clamped(position_m: Vec3, rotation: Mat3) -> TipHold {
        TipHold::Clamped { position_m, rotation, winding_rad: Vec3::zeros() }
    }

    /// A clamp at `position_m` turned by the rotation vector `rotation_rad`
    /// (world), whole turns included: (0, 2 pi, 0) is a full turn about y,
    /// which the rotation alone cannot tell from none.
    pub fn clamped_by_vector(position_m: Vec3, rotation_rad: Vec3) -> TipHold {
        let rotation = lie::exp(&lie::stack(&rotation_rad, &Vec3::zeros())).rot;
        let shortest = lie::so3_log(&rotation);
        // Whole turns only where the vector is longer than a half turn.
        let winding_rad = if rotation_rad.norm() > std::f64::consts::PI + 1e-9 { rotation_rad - shortest } else { Vec3::zeros() };
        TipHold::Clamped { position_m, rotation, winding_rad }
    }

    /// The clamp turned by `angle_rad` about the world's y axis through
    /// its position (a pin is unchanged): a clamp's angle known only to
    /// within a tracing in the x-z plane.
    pub fn turned_about_world_y(self, angle_rad: f64) -> TipHold {
        match self {
            TipHold::Clamped { position_m, rotation, winding_rad } => {
                let turn = lie::exp(&lie::stack(&Vec3::new(0.0, angle_rad, 0.0), &Vec3::zeros())).rot;
                TipHold::Clamped { position_m, rotation: turn * rotation, winding_rad }
            }
            pinned => pinned,
        }
    }

    pub fn position_m(&self) -> Vec3 {
        match self {
            TipHold::Pinned { position_m } | TipHold::Clamped { position_m, .. } => *position_m,
        }
    }

    /// The hold a tip of `condition` has when its clamp's frame is `pose`
    /// (world): a pin keeps the position only; `None` for a free tip.
    pub fn at(condition: TipCondition, pose: &lie::Pose) -> Option<TipHold> {
        match condition {
            TipCondition::Pinned => Some(TipHold::Pinned { position_m: pose.pos }),
            TipCondition::Clamped => Some(TipHold::clamped(pose.pos, pose.rot)),
            TipCondition::Free => None,
        }
    }
}

/// What the place a hold's pose is given calls its parts (inputs.csv's
/// columns, `solve`'s flags), for the messages of [`hold_for`].
#[derive(Clone, Copy, Debug)]
pub struct HoldFields {
    /// The position's field(s), e.g. "tip_position_x_m, _y_m, _z_m".
    pub position: &'static str,
    /// The rotation's field(s), e.g. "tip_rotation_x_rad, _y_rad, _z_rad".
    pub rotation: &'static str,
    /// The rotation, in a sentence telling to leave it out.
    pub rotation_short: &'static str,
    /// Both, in a sentence telling to leave them out.
    pub both: &'static str,
}

/// The tip's hold for a rod whose tip is `condition`, from a position and
/// a rotation vector (world frame) where given: `None` for a free tip; an
/// error (what is missing, or a hold the rod file does not ask for), in
/// the words of `fields`.
pub fn hold_for(condition: TipCondition, position_m: Option<Vec3>, rotation_rad: Option<Vec3>, fields: &HoldFields) -> Result<Option<TipHold>, String> {
    match (condition, position_m, rotation_rad) {
        (TipCondition::Free, None, None) => Ok(None),
        (TipCondition::Free, _, _) => Err(format!(
            "gives the tip a position, but the rod file's tip is free: set [tip] condition = \"pinned\" or \"clamped\", or leave {} out",
            fields.both
        )),
        (TipCondition::Pinned, Some(p), None) => Ok(Some(TipHold::Pinned { position_m: p })),
        (TipCondition::Pinned, _, Some(_)) => {
            Err(format!("gives a tip rotation, but the rod file's tip is pinned (free to turn): leave {} out, or clamp it", fields.rotation_short))
        }
        (TipCondition::Clamped, Some(p), Some(r)) => Ok(Some(TipHold::clamped_by_vector(p, r))),
        (TipCondition::Clamped, _, _) => Err(format!("gives no tip pose ({} and {}), and the rod file's tip is clamped", fields.position, fields.rotation)),
        (TipCondition::Pinned, None, None) => Err(format!("gives no tip position ({}), and the rod file's tip is pinned", fields.position)),
    }
}

/// A static equilibrium with the tip held.
#[derive(Clone, Debug)]
pub struct HeldSolution {
    pub solution: StaticSolution,
    /// The wrench the tip's hold applies to the rod: `[moment about the
    /// tip; force]`, world frame (a force sensor in the tip's clamp reads
    /// its negative). The moment is zero for a pin.
    pub tip_reaction: Vec6,
}

impl HeldSolution {
    /// The held system's unknowns `[q; lambda]` (the reaction's force for a
    /// pin, moment and force for a clamp), as [`assemble_held`] takes them.
    pub fn unknowns(&self, hold: TipHold) -> DVector<f64> {
        let n = self.solution.q.len();
        let mut x = DVector::zeros(n + hold.count());
        x.rows_mut(0, n).copy_from(&self.solution.q);
        match hold {
            TipHold::Pinned { .. } => x.fixed_rows_mut::<3>(n).copy_from(&self.tip_reaction.fixed_rows::<3>(3)),
            TipHold::Clamped { .. } => x.fixed_rows_mut::<6>(n).copy_from(&self.tip_reaction),
        }
        x
    }
}

/// The hold's reaction applied to the rod: a force and moment at the tip
/// joint, fixed in space for the assembler (the multipliers are unknowns
/// of their own).
pub struct TipReaction {
    joint: usize,
    force_n: Vec3,
    moment_nm: Vec3,
}

impl Term for TipReaction {
    fn name(&self) -> &str {
        "tip hold"
    }

    fn energy(&self, _state: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, state: &State, sink: &mut Sink) {
        let p = state.frames.joints[self.joint].pos;
        sink.point_force(Attach::Joint(self.joint), &p, &self.force_n, &self.moment_nm, None);
    }
}

/// The hold as a constraint beside any terms (the statics' here, the
/// simulator's step): its equations, scaled to generalised forces, their
/// Jacobian, and the reaction its multipliers `lambda` (`[force]` for a
/// pin, `[moment; force]` for a clamp, world frame, about the tip) apply.
#[derive(Clone, Copy, Debug)]
pub struct HoldRows {
    pub hold: TipHold,
    /// Hold equations in units of generalised force: the position error
    /// times `EI / L^2`-like scales, so the merit weighs them as the strain
    /// equations (the solution does not depend on it).
    scale_position: f64,
    scale_rotation: f64,
}

impl HoldRows {
    pub fn new(model: &Model, hold: TipHold) -> HoldRows {
        let (scale_position, scale_rotation) = hold_scales(model);
        HoldRows { hold, scale_position, scale_rotation }
    }

    /// The hold's equations in their own units (rad, m): for a solver that
    /// weighs constraints itself (the observer's markers are in metres).
    pub fn unscaled(hold: TipHold) -> HoldRows {
        HoldRows { hold, scale_position: 1.0, scale_rotation: 1.0 }
    }

    /// Equations (and multipliers): 3 pinned, 6 clamped.
    pub fn count(&self) -> usize {
        self.hold.count()
    }

    /// The reaction `(moment, force)` of multipliers `lambda`.
    pub fn reaction(&self, lambda: &[f64]) -> (Vec3, Vec3) {
        match self.hold {
            TipHold::Pinned { .. } => (Vec3::zeros(), Vec3::new(lambda[0], lambda[1], lambda[2])),
            TipHold::Clamped { .. } => (Vec3::new(lambda[0], lambda[1], lambda[2]), Vec3::new(lambda[3], lambda[4], lambda[5])),
        }
    }

    /// The reaction of `lambda` as a term on `model`'s tip joint.
    pub fn term(&self, model: &Model, lambda: &[f64]) -> TipReaction {
        let (moment_nm, force_n) = self.reaction(lambda);
        TipReaction { joint: model.n_joints() - 1, force_n, moment_nm }
    }

    /// Where the rows sit: (rotation's first row, position's first row).
    fn rows(&self) -> (Option<usize>, usize) {
        match self.hold {
            TipHold::Clamped { .. } => (Some(0), 3),
            TipHold::Pinned { .. } => (None, 0),
        }
    }

    fn rotation_error(&self, g_tip: &lie::Pose) -> Option<Vec3> {
        match self.hold {
            TipHold::Clamped { rotation, .. } => Some(lie::so3_log(&(g_tip.rot * rotation.transpose()))),
            TipHold::Pinned { .. } => None,
        }
    }

    /// The hold's equations at the tip frame `g_tip` (rotation error
    /// `log(R R_t^T)` then position error, scaled).
    pub fn residual(&self, g_tip: &lie::Pose) -> DVector<f64> {
        let mut out = DVector::zeros(self.count());
        let (rot_rows, pos_rows) = self.rows();
        out.fixed_rows_mut::<3>(pos_rows).copy_from(&((g_tip.pos - self.hold.position_m()) * self.scale_position));
        if let (Some(r0), Some(e)) = (rot_rows, self.rotation_error(g_tip)) {
            out.fixed_rows_mut::<3>(r0).copy_from(&(e * self.scale_rotation));
        }
        out
    }

    /// The equations' Jacobian in `q` (`count x n`) from the tip's spatial
    /// Jacobian: `d p = [-p~ | I] J dq`, `d log = Jl^{-1} [I | 0] J dq` with
    /// `Jl^{-1}(e) = Jr^{-1}(-e)`.
    pub fn jacobian(&self, j_tip: &nalgebra::Matrix6xX<f64>, g_tip: &lie::Pose) -> DMatrix<f64> {
        let n = j_tip.ncols();
        let mut out = DMatrix::zeros(self.count(), n);
        let (rot_rows, pos_rows) = self.rows();
        let point = crate::model::point_jacobian(j_tip, &g_tip.pos);
        out.view_mut((pos_rows, 0), (3, n)).copy_from(&(point * self.scale_position));
        if let (Some(r0), Some(e)) = (rot_rows, self.rotation_error(g_tip)) {
            let omega = j_tip.fixed_rows::<3>(0);
            out.view_mut((r0, 0), (3, n)).copy_from(&(lie::so3_right_jacobian_inverse(&-e) * omega * self.scale_rotation));
        }
        out
    }

    /// Fills the hold's blocks of a tangent whose first `n` unknowns are
    /// the strains and next [`HoldRows::count`] the multipliers: the
    /// reaction's columns and the equations' rows.
    pub fn add_to_tangent(&self, h: &mut DMatrix<f64>, n: usize, j_tip: &nalgebra::Matrix6xX<f64>, g_tip: &lie::Pose) {
        let c = self.count();
        h.view_mut((0, n), (n, c)).copy_from(&self.reaction_columns(j_tip, &g_tip.pos));
        h.view_mut((n, 0), (c, n)).copy_from(&self.jacobian(j_tip, g_tip));
    }

    /// The reaction's generalised force's derivative in `lambda`
    /// (`n x count`): `d(-J^T W)/d lambda`, `W = [m + p x f; f]`.
    pub fn reaction_columns(&self, j_tip: &nalgebra::Matrix6xX<f64>, p_tip: &Vec3) -> DMatrix<f64> {
        let c = self.count();
        let mut dw = DMatrix::zeros(6, c);
        let f0 = if self.rows().0.is_some() {
            dw.view_mut((0, 0), (3, 3)).copy_from(&Mat3::identity());
            3
        } else {
            0
        };
        dw.view_mut((0, f0), (3, 3)).copy_from(&skew(p_tip));
        dw.view_mut((3, f0), (3, 3)).copy_from(&Mat3::identity());
        -(j_tip.transpose() * dw)
    }
}

/// The augmented system: unknowns `[q; lambda]` with `lambda` the tip's
/// reaction (`[force]` for a pin, `[moment; force]` for a clamp).
struct HeldSystem<'m, 'l> {
    model: &'m Model,
    terms: StaticTerms<'l>,
    rows: HoldRows,
    tangents: usize,
}

/// Residual and (with `with_tangent`) its Jacobian of the held system at `x`.
pub struct HeldAssembly {
    pub residual: DVector<f64>,
    pub tangent: Option<DMatrix<f64>>,
    pub scale: f64,
}

impl<'m, 'l> HeldSystem<'m, 'l> {
    fn new(model: &'m Model, loads: &'l Loads, hold: TipHold) -> Result<HeldSystem<'m, 'l>, StaticsError> {
        Ok(HeldSystem { model, terms: StaticTerms::new(model, loads, 1.0)?, rows: HoldRows::new(model, hold), tangents: 0 })
    }

    fn split(&self, x: &DVector<f64>) -> (DVector<f64>, Vec3, Vec3) {
        let n = self.model.n_dof();
        let (moment_nm, force_n) = self.rows.reaction(&x.as_slice()[n..]);
        (x.rows(0, n).into_owned(), moment_nm, force_n)
    }

    fn assemble(&self, x: &DVector<f64>, with_tangent: bool) -> HeldAssembly {
        let model = self.model;
        let n = model.n_dof();
        let c = self.rows.count();
        let tip = model.n_joints() - 1;
        let q = x.rows(0, n).into_owned();
        let reaction = self.rows.term(model, &x.as_slice()[n..]);
        let mut all: Vec<&dyn Term> = self.terms.all().to_vec();
        all.push(&reaction);
        let a = terms::assemble(model, &q, &all, with_tangent);
        let frames = match &a.kinematics {
            Some(k) => k.frames.clone(),
            None => model.frames(&q),
        };
        let g_tip = &frames.joints[tip];
        let mut residual = DVector::zeros(n + c);
        residual.rows_mut(0, n).copy_from(&a.residual);
        residual.rows_mut(n, c).copy_from(&self.rows.residual(g_tip));
        let tangent = a.tangent.map(|k_q| {
            let kin = a.kinematics.as_ref().expect("kinematics with the tangent");
            let j_tip = &model.joint_jacobian_cow(kin, tip);
            let mut h = DMatrix::zeros(n + c, n + c);
            h.view_mut((0, 0), (n, n)).copy_from(&k_q);
            self.rows.add_to_tangent(&mut h, n, j_tip, g_tip);
            h
        });
        HeldAssembly { residual, tangent, scale: a.scale }
    }
}

impl System for HeldSystem<'_, '_> {
    fn residual(&mut self, x: &DVector<f64>) -> Option<Residual> {
        let a = self.assemble(x, false);
        Some(Residual::new(a.residual, a.scale))
    }

    fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation> {
        let a = self.assemble(x, true);
        self.tangents += 1;
        Some(Linearisation { residual: Residual::new(a.residual, a.scale), tangent: a.tangent? })
    }
}

/// Where a solve without a start begins: the straight rod, or for a clamp
/// the arc of constant curvature that already turns the tip to the
/// clamp's rotation (either way round, whichever ends nearer the clamp), so
/// that continuation has only to carry the tip's position (a loop hanging
/// between two clamps pointing down starts as a U, not as a rod folded
/// in two).
fn arc_start(model: &Model, hold: &TipHold) -> DVector<f64> {
    let straight = DVector::zeros(model.n_dof());
    let TipHold::Clamped { position_m, rotation, winding_rad } = hold else { return straight };
    if model.base_dof().is_some() {
        return straight;
    }
    let l = model.rod.length_m;
    let turn = lie::so3_log(&(model.rod.base.rot.transpose() * rotation));
    let angle = turn.norm();
    let tip = model.n_joints() - 1;
    let mut best = (f64::INFINITY, straight);
    let candidates = if winding_rad.norm() > 0.0 {
        // Whole turns asked for: the arc wound by them, and no other (the
        // straight rod would reach the clamp by a branch of fewer turns).
        vec![turn + model.rod.base.rot.transpose() * winding_rad]
    } else if angle > 1e-9 {
        vec![Vec3::zeros(), turn, turn - turn / angle * (2.0 * std::f64::consts::PI)]
    } else {
        vec![Vec3::zeros(), turn]
    };
    for psi in candidates {
        let q = model.uniform_q(&lie::stack(&(psi / l), &Vec3::new(1.0, 0.0, 0.0)));
        let g = model.frames(&q).joints[tip];
        let miss = (g.pos - position_m).norm() / l + lie::so3_log(&(g.rot * rotation.transpose())).norm();
        if miss < best.0 {
            best = (miss, q);
        }
    }
    best.1
}

/// The hold equations' scales: a unit rotation error weighs as the moment
/// that bends the rod by it, a unit position error as the force.
fn hold_scales(model: &Model) -> (f64, f64) {
    let k_max = model.stiffness.diagonal().iter().fold(0.0_f64, |a, v| a.max(v.abs())).max(1e-300);
    let l = model.rod.length_m;
    (k_max / (l * l), k_max / l)
}

/// Residual and tangent of the held system at `[q; lambda]` (`lambda` as
/// [`solve_held`] orders it): what the tests check against differences.
pub fn assemble_held(model: &Model, loads: &Loads, hold: TipHold, x: &DVector<f64>, with_tangent: bool) -> Result<HeldAssembly, StaticsError> {
    let sys = HeldSystem::new(model, loads, hold)?;
    Ok(sys.assemble(x, with_tangent))
}

/// Solves the static equilibrium under `loads` with the tip held, from
/// `q_start` (or the rest configuration), with load continuation when a
/// direct Newton fails. A tip position farther from the base than the
/// rod's length is refused before solving.
pub fn solve_held(model: &Model, loads: &Loads, hold: TipHold, q_start: Option<&DVector<f64>>, opts: &NewtonOptions) -> Result<HeldSolution, StaticsError> {
    let target = hold.position_m();
    if target.iter().any(|v| !v.is_finite()) {
        return Err(StaticsError::NotFinite);
    }
    let base = model.rod.base.pos;
    let reach_m = (target - base).norm();
    if model.base_dof().is_none() && reach_m > model.rod.length_m * (1.0 + 1e-9) {
        return Err(StaticsError::Unreachable { distance_m: reach_m, length_m: model.rod.length_m });
    }
    let mut sys = HeldSystem::new(model, loads, hold)?;
    let newton = Newton { max_iterations: opts.max_iterations, tolerance: opts.tolerance, quasi_newton: false, ..Newton::default() };
    let n = model.n_dof();
    let mut x = DVector::zeros(n + hold.count());
    match q_start {
        Some(q) => x.rows_mut(0, n).copy_from(q),
        None => x.rows_mut(0, n).copy_from(&arc_start(model, &hold)),
    }
    // Continuation carries the loads and the tip from where it starts to
    // the hold together.
    let start = model.frames(&x.rows(0, n).into_owned()).joints[model.n_joints() - 1];
    let along = newton::solve_along(&newton, &mut sys, x, 1.0 / opts.max_load_steps as f64, |sys, to| {
        sys.terms.set_lambda(loads, to);
        sys.rows.hold = hold.part_way_from(&start, to);
    });
    let newton::Along { x, iterations, merit, outcome } = along;
    match outcome {
        Ok(c) if x.iter().all(|v| v.is_finite()) => {
            let (q, moment_nm, force_n) = sys.split(&x);
            let solution = StaticSolution { q, iterations, load_steps: c.steps, tangents: sys.tangents, residual_norm: merit };
            Ok(HeldSolution { solution, tip_reaction: lie::stack(&moment_nm, &force_n) })
        }
        Ok(_) => Err(StaticsError::NoConvergence { reached: 1.0, residual: merit, at_reached: "; the strains are not finite".into() }),
        Err((reached, last_failure)) => Err(StaticsError::NoConvergence { reached, residual: last_failure, at_reached: " with the tip held".into() }),
    }
}

/// The Lagrangian's Hessian in the strain coordinates at a held
/// equilibrium and the hold's Jacobian (rows: rotation then position for a
/// clamp, position for a pin; unscaled).
///
/// The assembler's tangent treats the clamp's reaction moment as a dead
/// moment; the rotation hold's own curvature (`log(R R_t^T)` against the
/// multiplier at the hold) adds `1/2 J_w^T m~ J_w`, which makes it the
/// symmetric Hessian of the constrained energy.
pub fn constrained_hessian(model: &Model, loads: &Loads, hold: TipHold, held: &HeldSolution) -> Result<(DMatrix<f64>, DMatrix<f64>), StaticsError> {
    let n = model.n_dof();
    let c = hold.count();
    let x = held.unknowns(hold);
    let (scale_position, scale_rotation) = hold_scales(model);
    let h = assemble_held(model, loads, hold, &x, true)?.tangent.expect("tangent asked");
    let mut k = h.view((0, 0), (n, n)).into_owned();
    let mut hold_rows = h.view((n, 0), (c, n)).into_owned();
    if c == 6 {
        let moment = held.tip_reaction.fixed_rows::<3>(0).into_owned();
        let kin = model.kinematics(&held.solution.q);
        let omega = model.joint_jacobian(&kin, model.n_joints() - 1).fixed_rows::<3>(0).into_owned();
        k += omega.transpose() * (skew(&moment) * 0.5) * &omega;
        hold_rows.view_mut((0, 0), (3, n)).scale_mut(1.0 / scale_rotation);
        hold_rows.view_mut((3, 0), (3, n)).scale_mut(1.0 / scale_position);
    } else {
        hold_rows.scale_mut(1.0 / scale_position);
    }
    Ok((k, hold_rows))
}

/// Stability of a held equilibrium: the lowest eigenvalue of the second
/// variation of the energy on the motions the hold allows (the Lagrangian's
/// Hessian projected on the null space of the hold's Jacobian), in the
/// units of the strain coordinates' stiffness. Negative: unstable; its zero
/// crossing along a branch is a limit point or a bifurcation.
pub fn stability_eigenvalue(model: &Model, loads: &Loads, hold: TipHold, held: &HeldSolution) -> Result<f64, StaticsError> {
    Ok(lowest_mode(model, loads, hold, held)?.0)
}

/// The magnitude below which a [`stability_eigenvalue`] is zero to
/// round-off (1e-9 of the largest stiffness of the strain coordinates):
/// neutral, as an isotropic rod's loop that turns freely about the line
/// between its clamps (measured: -3.7e-14 against 9.8e-3).
pub fn neutral_eigenvalue(model: &Model) -> f64 {
    1e-9 * model.stiffness.diagonal().iter().fold(0.0_f64, |a, v| a.max(v.abs()))
}

/// The lowest eigenvalue of [`stability_eigenvalue`] and its mode (unit
/// norm, in the strain coordinates, a motion the hold allows): near a
/// bifurcation, the direction of the new branch.
pub fn lowest_mode(model: &Model, loads: &Loads, hold: TipHold, held: &HeldSolution) -> Result<(f64, DVector<f64>), StaticsError> {
    let n = model.n_dof();
    let (k, hold_rows) = constrained_hessian(model, loads, hold, held)?;
    let k = (&k + k.transpose()) * 0.5;
    // P K P + a (I - P), P the projector on the allowed motions, a above
    // every eigenvalue of K: the lowest eigenvalue is the constrained one.
    let gram = &hold_rows * hold_rows.transpose();
    let solve = gram.lu().solve(&hold_rows).ok_or_else(|| StaticsError::NoConvergence {
        reached: 1.0,
        residual: f64::NAN,
        at_reached: "; the hold's equations are dependent at this shape".into(),
    })?;
    let p = DMatrix::identity(n, n) - hold_rows.transpose() * solve;
    let above = 10.0 * k.amax().max(1e-300);
    let projected = &p * &k * &p + (DMatrix::identity(n, n) - &p) * above;
    let eigen = ((&projected + projected.transpose()) * 0.5).symmetric_eigen();
    let lowest = eigen.eigenvalues.imin();
    Ok((eigen.eigenvalues[lowest], eigen.eigenvectors.column(lowest).into_owned()))
}

/// The first critical value of `t` along a path of holds `hold_at(t)`,
/// from `t_start` toward `t_end` (first steps of `(t_end - t_start) /
/// steps`), to `t_tolerance`: a limit point or a bifurcation (see
/// [`crate::branch`]); `None` if the branch stays as it starts.
pub fn critical_along(
    model: &Model,
    loads: &Loads,
    hold_at: &dyn Fn(f64) -> TipHold,
    path: (f64, f64, usize),
    t_tolerance: f64,
    opts: &NewtonOptions,
) -> Result<Option<f64>, StaticsError> {
    Ok(crate::branch::first_critical(model, loads, hold_at, path, t_tolerance, opts)?.map(|c| c.t))
}
