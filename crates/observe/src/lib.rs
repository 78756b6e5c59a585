//! `observe`: the strain observer of the contact paper (Sec. X-B, eq. 61-63).
//! Stage "observe" in record -> track -> observe -> identify -> simulate ->
//! report: for every frame of tracked marker positions it finds the strain
//! field of a virtual, inertia-free rod that passes through the markers with
//! minimum potential energy (elastic + gravity).
//!
//! * **hard** mode: the markers are bilateral constraints; the KKT system
//!   `K q + P(q) - H(q) Lambda = 0, G(q) = 0` is solved by Newton. The
//!   multipliers `Lambda` are forces at the markers, so the Lagrangian's
//!   Hessian is exactly the rod's static tangent with those dead forces.
//! * **weighted** mode: each marker is tied to its measurement by a spring of
//!   stiffness `c / sigma^2` (a weighted least-squares misfit with the
//!   potential energy as regulariser). The energy scale `c` is given, or set
//!   by the discrepancy principle (misfit chi^2 = number of measured
//!   coordinates) on the most deformed frame ([`Observer::choose_energy_scale`];
//!   on the first frame otherwise), with a warning when it hits a bound of
//!   its search. Missing markers simply drop out.
//!
//! A marker is measured at a point, or on a ray (seen by one camera of a
//! set): a ray constrains, or pulls, only across itself (the miss
//! `P (p - at)` of [`Sighting`], its force `P lambda`, its spring `k P`).
//!
//! Each frame warm-starts from the previous one.

use lie::{Vec3, Vec6};
use nalgebra::{DMatrix, DVector};
use rod::held::{HoldRows, TipHold};
use rod::model::point_jacobian;
use rod::newton::{self, Failure, Linearisation, Newton, Residual, System};
use rod::statics::Factors;
use rod::terms::{self, Elastic, Gravity, PointLoad, PointLoads, Springs, Term};
use rod::{Marker, Model, Rod, Sighting};

/// How markers constrain the rod.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Hard,
    /// `energy_scale_j`: `c` in `k = c / sigma^2`; `None` = discrepancy principle.
    Weighted {
        energy_scale_j: Option<f64>,
    },
}

/// Outcome of one frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    /// Solved without the missing markers (count).
    MissingMarkers(usize),
    Failed(String),
}

impl Status {
    pub fn label(&self) -> String {
        match self {
            Status::Ok => "ok".into(),
            Status::MissingMarkers(n) => format!("missing_markers:{n}"),
            Status::Failed(why) => format!("failed:{why}"),
        }
    }
}

/// The observer's answer for one frame.
#[derive(Clone, Debug)]
pub struct Observation {
    pub q: DVector<f64>,
    /// Strain `[K; Q]` at every node (section boundary), base to tip.
    pub nodal_strain: Vec<Vec6>,
    /// RMS distance between observed rod and measured markers \[m\].
    pub marker_residual_m: f64,
    pub status: Status,
    pub iterations: usize,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ObserveError {
    #[error("the rod has no markers ([[marker]] entries in the rod file)")]
    NoMarkers,
    #[error("the rod file's tip is {0} ([tip] condition): the observer needs the tip's hold for every frame (a session's [tip_hold] robot)")]
    TipHeld(&'static str),
    #[error("marker {0} at arc length {1} m lies outside the rod [0, {2}] m")]
    MarkerOutside(usize, f64, f64),
    #[error(
        "hard mode: {constraints} marker constraints exceed the rod's {dofs} strain degrees of freedom (use fewer markers, more sections, or --mode weighted)"
    )]
    TooManyConstraints { constraints: usize, dofs: usize },
    #[error("{given} measured positions given, the rod has {markers} markers")]
    MarkerCount { given: usize, markers: usize },
}

impl fault::Fault for ObserveError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

/// A weighted solve whose markers are off by more than this many sigma
/// (RMS) is a failure: the discrepancy principle puts a good one near 1.
const FAR_OFF_SIGMAS: f64 = 10.0;

pub struct Observer {
    pub model: Model,
    markers: Vec<Marker>,
    joints: Vec<usize>,
    mode: Mode,
    energy_scale_j: Option<f64>,
    q: DVector<f64>,
    forces: Vec<Vec3>,
    max_iterations: usize,
    /// Compliance of the regularised KKT fallback [m/N].
    kkt_compliance: f64,
    /// The scale chosen on the first frame, when no scale was given.
    last_choice: Option<ScaleChoice>,
    /// The last frame's sigma over the markers' (1: solved at their
    /// sigma; larger: the continuation stopped above it).
    sigma_reached_factor: f64,
    /// Broyden steps near the solution in weighted mode (see
    /// [`Newton::quasi_newton`]).
    quasi_newton: bool,
    /// A held tip (the rod file's `[tip] condition`): where, this frame.
    hold: Option<TipHold>,
    /// The hold's reaction at the last frame (its multipliers).
    tip_lambda: Vec<f64>,
}

/// Full KKT step with compliance `delta` in the multiplier block (regular
/// even for redundant constraints; the fixed point is unchanged).
fn kkt_step_regularised(h: &DMatrix<f64>, jc: &DMatrix<f64>, r: &DVector<f64>, c: &DVector<f64>, delta: f64) -> Option<DVector<f64>> {
    let n = h.nrows();
    let nc = jc.nrows();
    let mut a = DMatrix::zeros(n + nc, n + nc);
    a.view_mut((0, 0), (n, n)).copy_from(h);
    a.view_mut((n, 0), (nc, n)).copy_from(jc);
    a.view_mut((0, n), (n, nc)).copy_from(&(-jc.transpose()));
    for k in 0..nc {
        a[(n + k, n + k)] = delta;
    }
    let mut rhs = DVector::zeros(n + nc);
    rhs.rows_mut(0, n).copy_from(&(-r));
    rhs.rows_mut(n, nc).copy_from(&(-c));
    a.lu().solve(&rhs)
}

/// Newton step of the KKT system `[H, -J^T; J, 0] [dq; dF] = -[r; c]` by
/// the Schur complement `S = J H^-1 J^T`, inverted on its numerical range
/// (eigenvalues above 1e-11 of the largest). Redundant or nearly redundant
/// marker constraints (many markers along the axis measure the same
/// stretch) then get minimum-norm multiplier updates instead of a singular
/// solve, and Newton keeps its quadratic convergence on consistent data.
fn kkt_step(h: &DMatrix<f64>, jc: &DMatrix<f64>, r: &DVector<f64>, c: &DVector<f64>) -> Option<DVector<f64>> {
    let n = h.nrows();
    let nc = jc.nrows();
    let lu = h.clone().lu();
    let hinv_r = lu.solve(r)?;
    let hinv_jt = lu.solve(&jc.transpose())?;
    let s = jc * &hinv_jt;
    let s = (&s + s.transpose()) * 0.5;
    // S dF = -c + J H^-1 r
    let rhs = -c + jc * &hinv_r;
    let eig = s.symmetric_eigen();
    let top = eig.eigenvalues.amax();
    let mut df = DVector::zeros(nc);
    for (k, &lam) in eig.eigenvalues.iter().enumerate() {
        if lam > 1e-11 * top {
            let v = eig.eigenvectors.column(k);
            df += v * (v.dot(&rhs) / lam);
        }
    }
    // dq = H^-1 (-r + J^T dF)
    let dq = -hinv_r + &hinv_jt * &df;
    let mut d = DVector::zeros(n + nc);
    d.rows_mut(0, n).copy_from(&dq);
    d.rows_mut(n, nc).copy_from(&df);
    Some(d)
}

/// A measured marker: (marker index, its sighting, sigma).
type Target = (usize, Sighting, f64);

/// Hard mode as a [`System`] over `x = [q; forces at the targets]`:
/// residual `[K q + P(q) - J^T F; p(q) - target]`.
struct HardSystem<'o> {
    model: &'o Model,
    markers: &'o [Marker],
    joints: &'o [usize],
    targets: &'o [Target],
    kkt_compliance: f64,
    /// Weight of the constraint part in the merit \[N/m\].
    scale_c: f64,
    /// Springs to the markers (weighted mode with a held tip: the markers
    /// are then springs, the hold the only constraint).
    springs: Option<&'o Springs>,
    /// A held tip: its equations after the markers', its reaction's
    /// multipliers after the markers' forces.
    hold: Option<HoldRows>,
}

impl HardSystem<'_> {
    fn n(&self) -> usize {
        self.model.n_dof()
    }

    /// Where the hold's multipliers start in `x`.
    fn hold_at(&self) -> usize {
        self.n() + 3 * self.targets.len()
    }

    fn point_loads(&self, x: &DVector<f64>) -> Vec<PointLoad> {
        let n = self.n();
        self.targets
            .iter()
            .enumerate()
            .map(|(k, (i, seen, _))| PointLoad {
                x_m: self.markers[*i].arc_m,
                offset_body_m: self.markers[*i].offset_body_m,
                force_n: seen.projector() * Vec3::new(x[n + 3 * k], x[n + 3 * k + 1], x[n + 3 * k + 2]),
                moment_nm: Vec3::zeros(),
                follower: false,
            })
            .collect()
    }

    /// Assembly, kinematics (with the tangent), constraint values; frames
    /// come from the kinematics when there are any.
    fn evaluate(&self, x: &DVector<f64>, with_tangent: bool) -> (terms::Assembly, Option<rod::Kinematics>, DVector<f64>, Option<rod::Frames>) {
        let n = self.n();
        let q = x.rows(0, n).into_owned();
        let loads = self.point_loads(x);
        let joints: Vec<usize> = self.targets.iter().map(|(i, _, _)| self.joints[*i]).collect();
        let points = PointLoads { loads: &loads, joints, scale: 1.0 };
        let reaction = self.hold.map(|h| h.term(self.model, &x.as_slice()[self.hold_at()..]));
        let mut list: Vec<&dyn Term> = vec![&Elastic, &Gravity { scale: 1.0 }, &points];
        if let Some(s) = self.springs {
            list.push(s);
        }
        if let Some(r) = &reaction {
            list.push(r);
        }
        let kin = with_tangent.then(|| self.model.kinematics(&q));
        let own = kin.is_none().then(|| self.model.frames(&q));
        let frames = kin.as_ref().map(|k| &k.frames).or(own.as_ref()).expect("frames");
        let asm = terms::assemble_with(self.model, &q, frames, kin.as_ref(), &list, with_tangent);
        let markers =
            self.targets.iter().flat_map(|(i, seen, _)| seen.miss(&frames.joints[self.joints[*i]].transform_point(&self.markers[*i].offset_body_m)).data.0[0]);
        let hold = self.hold.map(|h| h.residual(frames.joints.last().expect("joints"))).unwrap_or_else(|| DVector::zeros(0));
        let c = DVector::from_iterator(3 * self.targets.len() + hold.len(), markers.chain(hold.iter().copied()));
        (asm, kin, c, own)
    }

    fn stack(&self, r: DVector<f64>, c: &DVector<f64>, scale: f64) -> Residual {
        let n = r.len();
        let mut v = DVector::zeros(n + c.len());
        v.rows_mut(0, n).copy_from(&r);
        v.rows_mut(n, c.len()).copy_from(c);
        Residual::new(v, scale)
    }

    fn parts<'r>(&self, r: &'r Residual) -> (nalgebra::DVectorView<'r, f64>, nalgebra::DVectorView<'r, f64>) {
        let n = self.n();
        (r.value.rows(0, n), r.value.rows(n, r.value.len() - n))
    }

    fn holds(&self, r: &Residual, c_max: f64, rel: f64) -> bool {
        let (rr, c) = self.parts(r);
        c.amax() < c_max && rr.norm() <= rel * r.scale.max(1e-300)
    }
}

impl System for HardSystem<'_> {
    fn residual(&mut self, x: &DVector<f64>) -> Option<Residual> {
        let (asm, _, c, _) = self.evaluate(x, false);
        Some(self.stack(asm.residual, &c, asm.scale))
    }

    fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation> {
        let n = self.n();
        let (asm, kin, c, _) = self.evaluate(x, true);
        let nc = c.len();
        let kin = kin?;
        let frames = &kin.frames;
        let h = asm.tangent?;
        let mut jc = DMatrix::zeros(nc, n);
        for (k, (i, seen, _)) in self.targets.iter().enumerate() {
            let j = self.joints[*i];
            let p = frames.joints[j].transform_point(&self.markers[*i].offset_body_m);
            // A ray's row along itself is zero: the Schur step's pseudo-
            // inverse (and the compliant step) give it no force.
            jc.view_mut((3 * k, 0), (3, n)).copy_from(&(seen.projector() * point_jacobian(&self.model.joint_jacobian_cow(&kin, j), &p)));
        }
        if let Some(hold) = &self.hold {
            // The reaction enters as -J^T mu exactly at the hold (where the
            // rotation error's Jacobian Jl^-1 J_w is J_w).
            let tip = frames.joints.len() - 1;
            let rows = hold.jacobian(&self.model.joint_jacobian_cow(&kin, tip), &frames.joints[tip]);
            jc.view_mut((3 * self.targets.len(), 0), (hold.count(), n)).copy_from(&rows);
        }
        let mut t = DMatrix::zeros(n + nc, n + nc);
        t.view_mut((0, 0), (n, n)).copy_from(&h);
        t.view_mut((0, n), (n, nc)).copy_from(&(-jc.transpose()));
        t.view_mut((n, 0), (nc, n)).copy_from(&jc);
        Some(Linearisation { residual: self.stack(asm.residual, &c, asm.scale), tangent: t })
    }

    fn direction_count(&self) -> usize {
        2
    }

    /// The Schur-complement step first (quadratic convergence even with
    /// redundant constraints); the full KKT step with a tiny compliance in
    /// the multiplier block when the line search rejects it.
    fn direction(&mut self, lin: &Linearisation, attempt: usize) -> Option<DVector<f64>> {
        let n = self.n();
        let nc = lin.tangent.nrows() - n;
        let h = lin.tangent.view((0, 0), (n, n)).into_owned();
        let jc = lin.tangent.view((n, 0), (nc, n)).into_owned();
        let r = lin.residual.value.rows(0, n).into_owned();
        let c = lin.residual.value.rows(n, nc).into_owned();
        if attempt == 0 {
            kkt_step(&h, &jc, &r, &c)
        } else {
            kkt_step_regularised(&h, &jc, &r, &c, self.kkt_compliance)
        }
    }

    fn merit(&self, r: &Residual) -> f64 {
        let (rr, c) = self.parts(r);
        (rr.norm_squared() + (c.norm() * self.scale_c).powi(2)).sqrt()
    }

    /// 0.5 nm: near-redundant constraints (e.g. many markers along the
    /// axis) hold only to the precision of the data themselves.
    fn converged(&self, r: &Residual, _tolerance: f64) -> bool {
        self.holds(r, 5e-10, 1e-10)
    }

    fn acceptable(&self, r: &Residual, _tolerance: f64) -> bool {
        self.holds(r, 1e-8, 1e-8)
    }

    /// Redundant constraints on slightly inconsistent data: stop once the
    /// constraints hold to 10 nm and Newton no longer improves.
    fn slow_but_acceptable(&self, r: &Residual, _tolerance: f64) -> bool {
        self.holds(r, 1e-8, 1e-9)
    }
}

/// Weighted mode as a [`System`] over `q`: springs `k = c / sigma^2` tie the
/// markers to their measurements.
struct WeightedSystem<'o> {
    model: &'o Model,
    springs: Springs,
    /// The last tangent's factorisation when its Newton step was the
    /// direction taken (for quasi-Newton steps near the solution).
    factors: Option<Factors>,
}

impl WeightedSystem<'_> {
    fn assemble(&self, q: &DVector<f64>, with_tangent: bool) -> terms::Assembly {
        let list: [&dyn Term; 3] = [&Elastic, &Gravity { scale: 1.0 }, &self.springs];
        terms::assemble(self.model, q, &list, with_tangent)
    }
}

/// The weighted observer minimises an energy: the line search asks for a
/// sufficient decrease of it (Armijo), and a direction that is not a
/// descent direction (an indefinite tangent far from the solution) is
/// replaced by a Levenberg-shifted one. A residual-norm line search could
/// settle on a saddle (a buckled, unstable shape) centimetres away from the
/// markers.
impl System for WeightedSystem<'_> {
    fn residual(&mut self, q: &DVector<f64>) -> Option<Residual> {
        let list: [&dyn Term; 3] = [&Elastic, &Gravity { scale: 1.0 }, &self.springs];
        let frames = self.model.frames(q);
        let a = terms::assemble_with(self.model, q, &frames, None, &list, false);
        let energy = terms::energy_with(self.model, q, &frames, &list);
        Some(Residual { value: a.residual, scale: a.scale, energy })
    }

    fn linearise(&mut self, q: &DVector<f64>) -> Option<Linearisation> {
        let a = self.assemble(q, true);
        let list: [&dyn Term; 3] = [&Elastic, &Gravity { scale: 1.0 }, &self.springs];
        let frames = &a.kinematics.as_ref()?.frames;
        let energy = terms::energy_with(self.model, q, frames, &list);
        Some(Linearisation { residual: Residual { value: a.residual, scale: a.scale, energy }, tangent: a.tangent? })
    }

    fn direction(&mut self, lin: &Linearisation, _attempt: usize) -> Option<DVector<f64>> {
        let r = &lin.residual.value;
        let descent = |d: &DVector<f64>| r.dot(d) < -1e-14 * r.norm() * d.norm();
        let factors = Factors::of(lin.tangent.clone());
        if let Some(d) = factors.solve(&(-r)) {
            if descent(&d) {
                self.factors = Some(factors);
                return Some(d);
            }
        }
        self.factors = None;
        let top = lin.tangent.diagonal().amax().max(1e-300);
        let mut mu = 1e-8 * top;
        for _ in 0..20 {
            let mut h = lin.tangent.clone();
            for i in 0..h.nrows() {
                h[(i, i)] += mu;
            }
            if let Some(d) = h.cholesky().map(|c| c.solve(&(-r))) {
                if descent(&d) {
                    return Some(d);
                }
            }
            mu *= 10.0;
        }
        Some(-r.clone())
    }

    fn chord_direction(&mut self, r: &Residual) -> Option<DVector<f64>> {
        self.factors.as_ref()?.solve(&(-&r.value))
    }

    fn merit(&self, r: &Residual) -> f64 {
        r.energy.unwrap_or(f64::NAN)
    }

    fn slope(&self, lin: &Linearisation, d: &DVector<f64>) -> f64 {
        lin.residual.value.dot(d)
    }

    fn converged(&self, r: &Residual, tolerance: f64) -> bool {
        let n = r.value.norm();
        n <= tolerance * r.scale || n < 1e-300
    }

    fn acceptable(&self, r: &Residual, tolerance: f64) -> bool {
        r.value.norm() <= 1e3 * tolerance * r.scale
    }
}

impl Observer {
    /// Newton with (default) or without Broyden steps near each frame's
    /// solution: the same answers within the solver's tolerance.
    pub fn with_quasi_newton(mut self, on: bool) -> Observer {
        self.quasi_newton = on;
        self
    }

    pub fn new(rod: &Rod, mode: Mode) -> Result<Observer, ObserveError> {
        if rod.markers.is_empty() {
            return Err(ObserveError::NoMarkers);
        }
        for (i, m) in rod.markers.iter().enumerate() {
            if !(m.arc_m >= 0.0 && m.arc_m <= rod.length_m) {
                return Err(ObserveError::MarkerOutside(i, m.arc_m, rod.length_m));
            }
        }
        let points: Vec<f64> = rod.markers.iter().map(|m| m.arc_m).collect();
        let model = Model::new(rod, &points);
        let constraints = 3 * rod.markers.len()
            + match rod.tip_condition {
                rod::TipCondition::Free => 0,
                rod::TipCondition::Pinned => 3,
                rod::TipCondition::Clamped => 6,
            };
        if mode == Mode::Hard && constraints > model.n_dof() {
            return Err(ObserveError::TooManyConstraints { constraints, dofs: model.n_dof() });
        }
        let joints = rod.markers.iter().map(|m| model.joint_at(m.arc_m)).collect();
        let props = rod.cross_section.properties(0.0, rod.length_m);
        let kkt_compliance = 1e-10 * rod.length_m.powi(3) / props.stiffness_diag[1].max(1e-300);
        let n = model.n_dof();
        let energy_scale_j = match mode {
            Mode::Weighted { energy_scale_j } => energy_scale_j,
            Mode::Hard => None,
        };
        Ok(Observer {
            model,
            markers: rod.markers.clone(),
            joints,
            mode,
            energy_scale_j,
            q: DVector::zeros(n),
            forces: vec![Vec3::zeros(); rod.markers.len()],
            max_iterations: 200,
            kkt_compliance,
            last_choice: None,
            sigma_reached_factor: 1.0,
            quasi_newton: true,
            hold: None,
            tip_lambda: vec![],
        })
    }

    /// Where the tip is held for the next frames (a rod whose `[tip]
    /// condition` is pinned or clamped; e.g. the second robot's flange
    /// composed with the clamp's mount). Needed before such a rod's frames.
    pub fn set_tip_hold(&mut self, hold: TipHold) {
        if self.tip_lambda.len() != hold.count() {
            self.tip_lambda = vec![0.0; hold.count()];
        }
        self.hold = Some(hold);
    }

    /// Brings the warm start onto a hold it is far from (the first frame,
    /// or a clamp moved far since the last): the held rod's equilibrium
    /// under gravity from the hold's own start (the arc that turns the tip
    /// to its clamp; carrying the warm shape's tip that far can fold it).
    /// A hold moved a little is met by the frame's own solve.
    fn seat_on_hold(&mut self) {
        let Some(hold) = self.hold else { return };
        let tip = *self.model.frames(&self.q).joints.last().expect("joints");
        let rows = HoldRows::unscaled(hold).residual(&tip);
        if rows.amax() < 1e-2 * self.model.rod.length_m {
            return;
        }
        let (opts, loads) = (rod::NewtonOptions::default(), rod::Loads::gravity());
        let held =
            rod::held::solve_held(&self.model, &loads, hold, None, &opts).or_else(|_| rod::held::solve_held(&self.model, &loads, hold, Some(&self.q), &opts));
        if let Ok(held) = held {
            let n = self.model.n_dof();
            self.tip_lambda = held.unknowns(hold).as_slice()[n..].to_vec();
            self.q = held.solution.q;
        }
    }

    /// Sets the pose of the rod's base for the next frames (e.g. from the
    /// robot log: flange pose composed with the rod's mount).
    pub fn set_base(&mut self, base: &lie::Pose) {
        self.model.rod.base = *base;
    }

    /// Sets the warm start (strain coordinates of this observer's model).
    pub fn set_state(&mut self, q: &DVector<f64>) {
        self.q = q.clone();
    }

    /// The energy scale in use (weighted mode, after calibration).
    pub fn energy_scale_j(&self) -> Option<f64> {
        self.energy_scale_j
    }

    /// How the scale was chosen when the first frame calibrated it.
    pub fn first_frame_choice(&self) -> Option<ScaleChoice> {
        self.last_choice
    }

    /// Marker positions of the observed rod at `q`.
    pub fn marker_positions(&self, q: &DVector<f64>) -> Vec<Vec3> {
        self.marker_positions_in(&self.model.frames(q))
    }

    /// Marker positions for frames already computed.
    fn marker_positions_in(&self, frames: &rod::Frames) -> Vec<Vec3> {
        self.markers.iter().zip(&self.joints).map(|(m, &j)| frames.joints[j].transform_point(&m.offset_body_m)).collect()
    }

    /// Observes one frame. `measured[m]` is marker m's position or ray
    /// (a [`Sighting`]; a `Vec3` is a point; None if missing), `sigma_m[m]`
    /// its standard deviation (weighted mode).
    pub fn observe<M: Copy + Into<Sighting>>(&mut self, measured: &[Option<M>], sigma_m: &[f64]) -> Result<Observation, ObserveError> {
        if measured.len() != self.markers.len() || sigma_m.len() != self.markers.len() {
            return Err(ObserveError::MarkerCount { given: measured.len(), markers: self.markers.len() });
        }
        if self.model.rod.tip_condition != rod::TipCondition::Free && self.hold.is_none() {
            return Err(ObserveError::TipHeld(self.model.rod.tip_condition.key()));
        }
        let targets = targets_of(measured, sigma_m);
        let missing = self.markers.len() - targets.len();
        if let Some(why) = self.impossible(&targets) {
            // No shape to search for (the search would take minutes).
            let nodal_strain = self.model.node_x_m.iter().map(|&x| self.model.strain_at(x, &self.q)).collect();
            return Ok(Observation { q: self.q.clone(), nodal_strain, marker_residual_m: f64::NAN, status: Status::Failed(why), iterations: 0 });
        }
        self.seat_on_hold();
        let q_warm = self.q.clone();
        let f_warm = self.forces.clone();
        let result = match self.mode {
            Mode::Hard => self.solve_hard_with_continuation(&targets),
            Mode::Weighted { .. } => {
                if self.energy_scale_j.is_none() {
                    let choice = self.calibrate(&targets);
                    self.last_choice = Some(choice);
                }
                self.solve_weighted_by_sigma(&targets)
            }
        };
        let (status, iterations) = match result {
            Ok(it) if missing == 0 => (Status::Ok, it),
            Ok(it) => (Status::MissingMarkers(missing), it),
            Err(why) => {
                // Keep the last good state for the next frame.
                self.q = q_warm.clone();
                self.forces = f_warm.clone();
                (Status::Failed(why.to_string()), 0)
            }
        };
        let residual_of = |obs: &Self| {
            let pos = obs.marker_positions(&obs.q);
            let sq: f64 = targets.iter().map(|(i, seen, _)| seen.miss(&pos[*i]).norm_squared()).sum();
            if targets.is_empty() {
                f64::NAN
            } else {
                (sq / targets.len() as f64).sqrt()
            }
        };
        let mut marker_residual_m = residual_of(self);
        let mut status = status;
        // With the energy scale chosen by the discrepancy principle, a
        // weighted solve misses the markers by about their noise; one that
        // converged to a shape missing them by many sigma found another
        // equilibrium: not a solution of this frame. (A scale the user fixed
        // may smooth on purpose.)
        let sigma_rms = (targets.iter().map(|(_, _, s)| s * s).sum::<f64>() / targets.len().max(1) as f64).sqrt() * self.sigma_reached_factor;
        let calibrated = self.last_choice.is_some();
        if calibrated && !matches!(status, Status::Failed(_)) && marker_residual_m > FAR_OFF_SIGMAS * sigma_rms {
            status = Status::Failed(format!(
                "converged to a shape {:.0} sigma from the markers (residual {marker_residual_m:.2e} m): another equilibrium, not this frame's",
                marker_residual_m / sigma_rms
            ));
            self.q = q_warm;
            self.forces = f_warm;
            marker_residual_m = residual_of(self);
        }
        let nodal_strain = self.model.node_x_m.iter().map(|&x| self.model.strain_at(x, &self.q)).collect();
        Ok(Observation { q: self.q.clone(), nodal_strain, marker_residual_m, status, iterations })
    }

    /// Why sightings cannot be this rod's, judged before any solve: three
    /// or more markers farther apart along the rod than pi times its
    /// thickness, all within a point's reach. A rod does not pass through
    /// itself: such markers' centre-line points lie at least 2 r apart, and
    /// three points pairwise 2 r apart have no point within 2 r / sqrt(3)
    /// of all three; markers within rho of the centre line then cannot all
    /// lie within 2 r / sqrt(3) - rho of one point (and never on one point:
    /// a tracker that wrote zeros, one blob taken for every marker).
    pub fn impossible_sightings<M: Copy + Into<Sighting>>(&self, measured: &[Option<M>]) -> Option<String> {
        self.impossible(&targets_of(measured, &vec![0.0; measured.len()]))
    }

    fn impossible(&self, targets: &[Target]) -> Option<String> {
        let rod = &self.model.rod;
        let thickness = |arc_m: f64| rod.cross_section.half_extents_m(arc_m, rod.length_m);
        let mut by_arc: Vec<(f64, Vec3, f64)> =
            targets.iter().filter_map(|(i, seen, _)| seen.as_point().map(|p| (self.markers[*i].arc_m, p, self.markers[*i].offset_body_m.norm()))).collect();
        by_arc.sort_by(|a, b| a.0.total_cmp(&b.0));
        let apart_m = std::f64::consts::PI * by_arc.iter().map(|m| thickness(m.0).0.max(thickness(m.0).1)).fold(0.0, f64::max);
        let mut picked: Vec<(f64, Vec3, f64)> = vec![];
        for m in by_arc {
            if picked.last().is_none_or(|last| m.0 - last.0 > apart_m) {
                picked.push(m);
            }
        }
        if picked.len() < 3 {
            return None;
        }
        let r_min_m = picked.iter().map(|m| thickness(m.0).0.min(thickness(m.0).1)).fold(f64::INFINITY, f64::min);
        let rho_max_m = picked.iter().map(|m| m.2).fold(0.0, f64::max);
        let reach_m = (2.0 * r_min_m / 3f64.sqrt() - rho_max_m).max(1e-6);
        let centroid = picked.iter().map(|m| m.1).sum::<Vec3>() / picked.len() as f64;
        let spread_m = picked.iter().map(|m| (m.1 - centroid).norm()).fold(0.0, f64::max);
        (spread_m < reach_m).then(|| {
            format!(
                "{} markers {:.3} m or more apart along the rod sit within {spread_m:.2e} m of one point ({:.4}, {:.4}, {:.4}) m: no rod passes through itself (a tracker that wrote one point for every marker?)",
                picked.len(),
                apart_m,
                centroid.x,
                centroid.y,
                centroid.z
            )
        })
    }

    fn solve_hard_with_continuation(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        // From a warm start a few iterations suffice; otherwise prepare.
        let (q0, f0) = (self.q.clone(), self.forces.clone());
        if let Ok(it) = self.solve_hard_limited(targets, 12) {
            return Ok(it);
        }
        self.q = q0;
        self.forces = f0;
        // Far from the solution (first frame) the constraint Jacobian can be
        // rank deficient (twist is invisible on a straight rod): approach
        // with stiff springs first, then enforce the constraints exactly.
        let saved = self.energy_scale_j;
        let props = self.model.rod.cross_section.properties(0.0, self.model.rod.length_m);
        let k_rod = 3.0 * props.stiffness_diag[1].min(props.stiffness_diag[2]) / self.model.rod.length_m.powi(3);
        let mut total = 0;
        for factor in [1e1, 1e3, 1e5] {
            let sigma = 1e-3;
            self.energy_scale_j = Some(factor * k_rod * sigma * sigma);
            let t: Vec<Target> = targets.iter().map(|(i, p, _)| (*i, *p, sigma)).collect();
            if let Ok(it) = self.solve_weighted_with_continuation(&t) {
                total += it;
                let pos = self.marker_positions(&self.q);
                for (i, seen, _) in &t {
                    self.forces[*i] = -seen.miss(&pos[*i]) * self.spring(sigma);
                }
            }
        }
        self.energy_scale_j = saved;
        if let Ok(it) = self.solve_hard(targets) {
            return Ok(total + it);
        }
        self.homotopy(targets, Observer::solve_hard).map(|it| total + it)
    }

    fn solve_hard(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        self.solve_hard_limited(targets, self.max_iterations)
    }

    /// KKT Newton on (q, marker forces).
    fn solve_hard_limited(&mut self, targets: &[Target], max_iterations: usize) -> Result<usize, Failure> {
        self.solve_kkt(targets, None, max_iterations)
    }

    /// KKT Newton on `[q; marker forces; the hold's multipliers]`: the
    /// targets as constraints, `springs` (if any) as terms, the hold (if
    /// any) as constraints.
    fn solve_kkt(&mut self, targets: &[Target], springs: Option<&Springs>, max_iterations: usize) -> Result<usize, Failure> {
        let n = self.model.n_dof();
        let nh = self.hold.map_or(0, |h| h.count());
        let mut x = DVector::zeros(n + 3 * targets.len() + nh);
        x.rows_mut(0, n).copy_from(&self.q);
        for (k, (i, _, _)) in targets.iter().enumerate() {
            x.fixed_rows_mut::<3>(n + 3 * k).copy_from(&self.forces[*i]);
        }
        let at = n + 3 * targets.len();
        x.rows_mut(at, nh).copy_from(&DVector::from_column_slice(&self.tip_lambda[..nh]));
        let scale_c = self.model.stiffness.diagonal().amax().max(1e-300) / self.model.rod.length_m.powi(2);
        let mut sys = HardSystem {
            model: &self.model,
            markers: &self.markers,
            joints: &self.joints,
            targets,
            kkt_compliance: self.kkt_compliance,
            scale_c,
            springs,
            hold: self.hold.map(HoldRows::unscaled),
        };
        let newton = Newton { max_iterations, ..Newton::default() };
        let solved = newton.solve(&mut sys, &x)?;
        self.q = solved.x.rows(0, n).into_owned();
        for (k, (i, _, _)) in targets.iter().enumerate() {
            self.forces[*i] = solved.x.fixed_rows::<3>(n + 3 * k).into_owned();
        }
        self.tip_lambda[..nh].copy_from_slice(&solved.x.as_slice()[at..at + nh]);
        Ok(solved.iterations)
    }

    fn spring(&self, sigma: f64) -> f64 {
        self.energy_scale_j.unwrap_or(1.0) / (sigma * sigma)
    }

    /// Newton on q with spring forces `-k (p - target)` at the markers.
    fn solve_weighted(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        let springs =
            Springs { springs: targets.iter().map(|(i, seen, s)| (self.joints[*i], self.markers[*i].offset_body_m, *seen, self.spring(*s))).collect() };
        if self.hold.is_some() {
            // The hold is a constraint: the springs' energy is minimised on
            // the shapes that meet it, by the KKT Newton.
            return self.solve_kkt(&[], Some(&springs), self.max_iterations);
        }
        let mut sys = WeightedSystem { model: &self.model, springs, factors: None };
        let newton = Newton { max_iterations: self.max_iterations, tolerance: 1e-10, quasi_newton: self.quasi_newton, ..Newton::default() };
        let solved = newton.solve(&mut sys, &self.q)?;
        self.q = solved.x;
        Ok(solved.iterations)
    }

    /// The weighted solve at the markers' sigma; when it fails (springs
    /// k = c / sigma^2 too stiff for Newton from this start), by
    /// continuation in sigma: solved with the markers' sigma times 10, 100,
    /// ... until one solves, then brought back down in half decades, each
    /// step warm-started from the last. A frame a larger sigma solves is
    /// never failed: where the way down stops, the smallest sigma reached
    /// is kept (`sigma_reached_factor`).
    fn solve_weighted_by_sigma(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        self.sigma_reached_factor = 1.0;
        let (q0, f0) = (self.q.clone(), self.forces.clone());
        let first = match self.solve_weighted_with_continuation(targets) {
            Ok(it) => return Ok(it),
            Err(e) => e,
        };
        let scaled = |factor: f64| -> Vec<Target> { targets.iter().map(|(i, p, s)| (*i, *p, s * factor)).collect() };
        for decade in 1..=4 {
            self.q = q0.clone();
            self.forces = f0.clone();
            let mut factor = 10f64.powi(decade);
            let Ok(mut total) = self.solve_weighted_with_continuation(&scaled(factor)) else { continue };
            while factor > 1.0 {
                let next = (factor / 10f64.sqrt()).max(1.0);
                let (q, f) = (self.q.clone(), self.forces.clone());
                match self.solve_weighted(&scaled(next)) {
                    Ok(it) => {
                        total += it;
                        factor = next;
                    }
                    Err(_) => {
                        self.q = q;
                        self.forces = f;
                        break;
                    }
                }
            }
            self.sigma_reached_factor = factor;
            return Ok(total);
        }
        self.q = q0;
        self.forces = f0;
        Err(first)
    }

    fn solve_weighted_with_continuation(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        let q0 = self.q.clone();
        if let Ok(it) = self.solve_weighted(targets) {
            return Ok(it);
        }
        // Stiff springs from a far start: ramp the stiffness up.
        self.q = q0;
        let target = self.energy_scale_j;
        let mut total = 0;
        let mut ok = true;
        for factor in [1e-6, 1e-4, 1e-2, 1.0] {
            self.energy_scale_j = target.map(|c| c * factor);
            match self.solve_weighted_targets(targets) {
                Ok(it) => total += it,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        self.energy_scale_j = target;
        if ok {
            return Ok(total);
        }
        self.solve_weighted_targets(targets)
    }

    /// Weighted solve, through the homotopy when a direct solve fails.
    fn solve_weighted_targets(&mut self, targets: &[Target]) -> Result<usize, Failure> {
        if let Ok(it) = self.solve_weighted(targets) {
            return Ok(it);
        }
        self.homotopy(targets, Observer::solve_weighted)
    }

    /// Moves the targets from the current marker positions to the measured
    /// ones in adaptive steps, solving at each (state restored on failure).
    fn homotopy(&mut self, targets: &[Target], solve: fn(&mut Observer, &[Target]) -> Result<usize, Failure>) -> Result<usize, Failure> {
        let start = self.marker_positions(&self.q);
        let mut total = 0;
        newton::continuation(0.25, 1.0 / 256.0, |_, lam| {
            let t: Vec<Target> = targets.iter().map(|(i, seen, s)| (*i, seen.from_towards(&start[*i], lam), *s)).collect();
            let (q0, f0) = (self.q.clone(), self.forces.clone());
            solve(self, &t).map(|it| total += it).inspect_err(|_| {
                self.q = q0;
                self.forces = f0;
            })
        })
        .map(|_| total)
        .map_err(|(_, e)| e)
    }

    /// Discrepancy principle: the energy scale for which the normalised
    /// misfit chi^2 equals the number of measured coordinates.
    fn calibrate(&mut self, targets: &[Target]) -> ScaleChoice {
        let goal = targets.iter().map(|(_, seen, _)| seen.coordinates() as f64).sum::<f64>();
        let chi2 = |obs: &mut Observer, log_c: f64| -> Option<f64> {
            obs.energy_scale_j = Some(10f64.powf(log_c));
            obs.solve_weighted_with_continuation(targets).ok()?;
            let pos = obs.marker_positions(&obs.q);
            Some(targets.iter().map(|(i, seen, s)| seen.miss(&pos[*i]).norm_squared() / (s * s)).sum())
        };
        // chi^2 falls as c grows (stiffer springs). Bisection in log10(c),
        // walking up from soft springs so that warm starts stay close.
        let (mut lo, mut hi) = (SCALE_LOG10_BOUNDS.0, SCALE_LOG10_BOUNDS.1);
        let mut found = None;
        // The best fit solved so far, for when no scale meets the goal.
        let mut closest: Option<(f64, f64)> = None;
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            match chi2(self, mid) {
                Some(x) if x > goal => {
                    lo = mid;
                    if closest.is_none_or(|(c, _)| x < c) {
                        closest = Some((x, mid));
                    }
                }
                Some(_) => {
                    hi = mid;
                    found = Some(mid);
                }
                // Stiff springs the solver cannot follow: softer.
                None => hi = mid,
            }
            if hi - lo < 0.01 {
                break;
            }
        }
        let log_c = found.or(closest.map(|c| c.1)).unwrap_or(hi);
        self.energy_scale_j = Some(10f64.powf(log_c));
        let at_bound = if found.is_none() && closest.is_some() {
            // No scale fits within sigma: the stiffest that solved, flagged.
            Some(ScaleBound::Upper)
        } else if log_c - SCALE_LOG10_BOUNDS.0 < 0.05 {
            Some(ScaleBound::Lower)
        } else if SCALE_LOG10_BOUNDS.1 - log_c < 0.05 {
            Some(ScaleBound::Upper)
        } else {
            None
        };
        ScaleChoice { energy_scale_j: 10f64.powf(log_c), frame: 0, at_bound }
    }

    /// Chooses the weighted mode's energy scale on the most deformed of
    /// `frames` (base pose, measured markers): the frame whose markers lie
    /// farthest (RMS) from the shape the rod takes under gravity alone at
    /// that base. A frame at rest fits any scale (the springs need not
    /// pull), so a choice there runs to the lower bound and later frames
    /// would ignore their markers. At most 200 frames, evenly spaced, are
    /// compared. Leaves the observer at rest with the chosen scale.
    pub fn choose_energy_scale(&mut self, frames: &[FrameInput], sigma_m: &[f64]) -> Option<ScaleChoice> {
        let mut best: Option<(usize, f64)> = None;
        let stride = frames.len().div_ceil(200).max(1);
        let mut sag: Option<DVector<f64>> = None;
        for (k, FrameInput { base, tip, markers: measured }) in frames.iter().enumerate().step_by(stride) {
            if self.impossible_sightings(measured).is_some() {
                // No rod's shape: never the most deformed one.
                continue;
            }
            if let Some(hold) = tip {
                self.set_tip_hold(*hold);
            }
            let (unloaded, rms) = self.distance_from_unloaded(base, measured, sag.as_ref());
            sag = Some(unloaded);
            if let Some(rms) = rms {
                if best.is_none_or(|(_, b)| rms > b) {
                    best = Some((k, rms));
                }
            }
        }
        let (k, _) = best?;
        let FrameInput { base, tip, markers: measured } = &frames[k];
        if let Some(hold) = tip {
            self.set_tip_hold(*hold);
        }
        let mut choice = self.choose_energy_scale_on(base, measured, sigma_m);
        choice.frame = k;
        self.last_choice = Some(choice);
        Some(choice)
    }

    /// Chooses the weighted mode's energy scale on one frame (base pose,
    /// measured markers), as [`Observer::choose_energy_scale`] does on the
    /// most deformed of many. Leaves the observer at rest with the chosen
    /// scale. A held rod is first seated on its hold (the gravity shape
    /// that meets it), as [`Observer::observe`] seats it: from the straight
    /// reference its tip is far from the hold, and the springs' solves from
    /// there failed or found another shape, so the search kept whatever
    /// scale last solved (a cord looped between two robots: 1e-5 J with
    /// chi^2 1.2e8 for a goal of 15, or 1e-2 J when one more solve
    /// happened to succeed, which made every frame's solve slow).
    pub fn choose_energy_scale_on<M: Copy + Into<Sighting>>(&mut self, base: &lie::Pose, measured: &[Option<M>], sigma_m: &[f64]) -> ScaleChoice {
        self.set_base(base);
        self.seat_on_hold();
        let targets = targets_of(measured, sigma_m);
        let choice = self.calibrate(&targets);
        self.last_choice = Some(choice);
        self.q = DVector::zeros(self.model.n_dof());
        self.forces = vec![Vec3::zeros(); self.markers.len()];
        choice
    }

    /// How deformed a frame is: the RMS distance \[m\] of its measured
    /// markers from the shape the rod takes under gravity alone at `base`
    /// (the measure [`Observer::choose_energy_scale`] picks its frame by);
    /// `None` without markers. Sets the base.
    pub fn deformation_rms_m<M: Copy + Into<Sighting>>(&mut self, base: &lie::Pose, measured: &[Option<M>]) -> Option<f64> {
        let seen: Vec<Option<Sighting>> = measured.iter().map(|m| m.map(Into::into)).collect();
        self.distance_from_unloaded(base, &seen, None).1
    }

    /// The unloaded (gravity only) state at `base`, warm-started from
    /// `warm`, and the measured markers' RMS distance from it.
    fn distance_from_unloaded(&mut self, base: &lie::Pose, measured: &[Option<Sighting>], warm: Option<&DVector<f64>>) -> (DVector<f64>, Option<f64>) {
        self.set_base(base);
        let opts = rod::NewtonOptions::default();
        let unloaded = match self.hold {
            // A held rod unloaded but for gravity: held as this frame holds it.
            Some(hold) => rod::held::solve_held(&self.model, &rod::Loads::gravity(), hold, warm, &opts).map(|s| s.solution.q),
            None => rod::statics::solve(&self.model, &rod::Loads::gravity(), warm, &opts).map(|s| s.q),
        }
        .unwrap_or_else(|_| DVector::zeros(self.model.n_dof()));
        let shape = self.marker_positions(&unloaded);
        let (sum, n) = measured.iter().zip(&shape).filter_map(|(m, r)| m.map(|m| m.miss(r).norm_squared())).fold((0.0, 0usize), |(s, n), d| (s + d, n + 1));
        (unloaded, (n > 0).then(|| (sum / n as f64).sqrt()))
    }
}

/// One frame to observe: where the base is, where a held tip is held
/// (`None`: a free tip), and the measured markers (`None`: missing).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameInput {
    pub base: lie::Pose,
    pub tip: Option<TipHold>,
    pub markers: Vec<Option<Sighting>>,
}

/// The measured markers as targets (missing ones left out).
fn targets_of<M: Copy + Into<Sighting>>(measured: &[Option<M>], sigma_m: &[f64]) -> Vec<Target> {
    measured.iter().enumerate().filter_map(|(i, p)| p.map(|p| (i, p.into(), sigma_m[i]))).collect()
}

/// Bounds of the weighted mode's energy scale search, log10 of joules.
pub const SCALE_LOG10_BOUNDS: (f64, f64) = (-14.0, 2.0);

/// Which bound of the search a scale hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleBound {
    /// The markers are fitted by any spring (a frame at rest, or noise larger
    /// than sigma): the springs barely pull.
    Lower,
    /// No spring is stiff enough to fit the markers within sigma (sigma too
    /// small, markers inconsistent with the rod).
    Upper,
}

/// The weighted mode's energy scale and where it came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleChoice {
    pub energy_scale_j: f64,
    /// Index of the frame it was calibrated on.
    pub frame: usize,
    pub at_bound: Option<ScaleBound>,
}

impl ScaleChoice {
    /// A warning when the scale hit a bound of the search.
    pub fn warning(&self) -> Option<String> {
        match self.at_bound {
            Some(ScaleBound::Lower) => Some(format!(
                "weighted mode: the energy scale hit its lower bound ({:.1e} J) on frame {}: the markers fit without the springs pulling (a rod at rest, or sigma too large); give --energy-scale-j",
                self.energy_scale_j, self.frame
            )),
            Some(ScaleBound::Upper) => Some(format!(
                "weighted mode: the energy scale hit its upper bound ({:.1e} J) on frame {}: no spring fits the markers within sigma (sigma too small, or markers inconsistent with the rod)",
                self.energy_scale_j, self.frame
            )),
            None => None,
        }
    }
}
