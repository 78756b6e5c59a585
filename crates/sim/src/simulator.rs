//! Time stepping: each step solves the rod (strains, and the base twist for
//! a free base) together with the contact multipliers by one semismooth
//! Newton ([`rod::newton`]) on
//!
//! ```text
//!   r(q) - sum_i J_c,i^T U^T Lambda_i = 0        (rod: elastic, gravity, inertia, damping, loads)
//!   C_i(Lambda_i, u_i(q)) = 0                     (contact law, every candidate point)
//! ```
//!
//! Candidates whose augmented normal force is negative decouple
//! (`Lambda_i = 0`) and leave the linear system; the others enter it with a
//! tiny compliance on their rows' diagonal (1e-9, in the Newton matrix only:
//! the solution is exact) so that redundant contacts, such as a rod lying
//! along a table with more contact rows than strain coordinates, still give
//! a regular system. A step that does not converge is retried from the last
//! state without extrapolation, then split in two halves, recursively.

use crate::contact::{self, ContactState, LawParams, Plane};
use crate::inertia::Inertia;
use crate::loads::{Damping, HookFriction, TowSpring, Viscoelastic};
use crate::scene::{BaseSpec, ContactPoints, Initial, LoadSpec, Mode, NormalCompliance, Scene};
use lie::{Mat6, Pose, Vec3, Vec6};
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use rod::held::{HoldRows, TipHold};
use rod::model::point_jacobian;
use rod::newton::{self, Linearisation, Newton, Residual, System};
use rod::terms::{self, Attach, BodyForce, Elastic, Gravity, PointLoad, PointLoads, Sink, State, Term};
use rod::{Model, Rod};
use std::time::Instant;

/// Why a simulation cannot start or stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The inputs do not describe a simulation (exit status 2).
    #[error("{0}")]
    Input(String),
    /// The solver failed (exit status 1); `remedy` says what to try.
    #[error("step {step} at t = {t_s:.4} s did not converge: {why}; {remedy}")]
    NoConvergence { step: usize, t_s: f64, why: String, remedy: String },
}

/// Below this rotation rate a hook's dry friction is smoothed
/// ([`HookFriction`]): 1 mrad/s, where a swinging tip turns at tenths of
/// rad/s to rad/s.
const HOOK_SMOOTHING_RAD_S: f64 = 1e-3;

impl fault::Fault for SimError {
    fn kind(&self) -> fault::Kind {
        match self {
            SimError::Input(_) => fault::Kind::Input,
            SimError::NoConvergence { .. } => fault::Kind::Computation,
        }
    }
}

/// How the base moves during the run.
#[derive(Clone, Debug)]
pub enum BaseMotion {
    /// The flange (TCP) in the world over the simulation's time, and the
    /// mount (rod base in the flange frame): rod base = flange * mount.
    Prescribed { flange: lie::trajectory::PoseTrajectory, mount: Pose },
    /// Floating base starting at this pose.
    Free { start: Pose },
}

impl BaseMotion {
    /// The base motion a scene describes by itself (waypoints or a free
    /// base); `None` for a prescribed base without waypoints.
    pub fn from_scene(scene: &Scene, rod: &Rod) -> Result<Option<BaseMotion>, SimError> {
        match &scene.base {
            BaseSpec::Free { pose } => Ok(Some(BaseMotion::Free { start: *pose })),
            BaseSpec::Prescribed { waypoints } if waypoints.is_empty() => Ok(None),
            BaseSpec::Prescribed { .. } => {
                let samples = scene
                    .held_waypoints()
                    .into_iter()
                    .map(|w| (w[0], scene.world_from_robot.compose(&lie::trajectory::pose_from_ur(&[w[1], w[2], w[3], w[4], w[5], w[6]]))));
                let flange = lie::trajectory::PoseTrajectory::new(samples).map_err(|e| SimError::Input(format!("base waypoints: {e}")))?;
                Ok(Some(BaseMotion::Prescribed { flange, mount: rod.base }))
            }
        }
    }

    /// From flange poses in the robot's base frame (`[x, y, z, rx, ry, rz]`)
    /// at simulation times, e.g. a trajectory file or a session's robot log.
    pub fn from_robot_samples(samples: &[(f64, [f64; 6])], world_from_robot: &Pose, mount: &Pose) -> Result<BaseMotion, SimError> {
        let flange = lie::trajectory::PoseTrajectory::new(samples.iter().map(|(t, p)| (*t, world_from_robot.compose(&lie::trajectory::pose_from_ur(p)))))
            .map_err(|e| SimError::Input(format!("trajectory: {e}")))?;
        Ok(BaseMotion::Prescribed { flange, mount: *mount })
    }
}

/// One contact candidate after a step.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContactRecord {
    pub joint: usize,
    pub arc_m: f64,
    /// Lowest surface point of the section (world).
    pub point_m: Vec3,
    pub gap_m: f64,
    pub normal_force_n: f64,
    /// Friction force on the rod (world, in the table plane).
    pub tangential_force_n: Vec3,
    pub state: ContactState,
    /// Velocity of the material point in the table plane over the step.
    pub slip_velocity_m_s: Vec3,
}

/// Everything recorded at the end of a step (serialisable: a replay run
/// elsewhere, by an executor's worker, comes back whole).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepRecord {
    pub step: usize,
    pub t_s: f64,
    /// Strain coordinates.
    pub q: Vec<f64>,
    pub base_pose: Pose,
    /// `[K; Q]` at every section boundary, base to tip.
    pub node_strain: Vec<Vec6>,
    /// The centre line at every section boundary (world) \[m\], base to tip.
    pub node_m: Vec<Vec3>,
    /// Rod file's markers (world).
    pub markers_m: Vec<Vec3>,
    /// `[K; Q]` at the markers' arc lengths (the control points).
    pub marker_strain: Vec<Vec6>,
    pub tip_m: Vec3,
    pub contacts: Vec<ContactRecord>,
    pub normal_force_n: f64,
    pub tangential_force_n: Vec3,
    /// Distance in the table plane between the tip (end of the centre line,
    /// where a tip marker sits) now and when the tip first touched \[m\] (0
    /// before touching).
    pub tip_slide_m: f64,
    /// Path length the tip's contact point has slipped on the table \[m\]
    /// (material slip; 0 while it sticks, whatever the rod does).
    pub tip_slip_m: f64,
    /// What a force sensor at the flange reads: the wrench the rod exerts on
    /// the flange, `[moment; force]` in the flange frame about its origin.
    /// Zero for a free base.
    pub base_wrench_flange: Vec6,
    /// A held tip: the wrench its hold exerts on the rod, `[moment about
    /// the tip; force]`, world frame (a force sensor in the tip's clamp
    /// reads its negative).
    pub tip_hold_wrench: Option<Vec6>,
    pub kinetic_energy_j: f64,
    pub elastic_energy_j: f64,
    pub gravity_energy_j: f64,
    pub iterations: usize,
    pub substeps: usize,
    pub wall_time_s: f64,
}

/// The contact candidates and their multipliers.
#[derive(Clone, Debug)]
struct ContactSet {
    plane: Plane,
    /// Rows of U: (n, t1, t2).
    basis: Matrix3<f64>,
    joints: Vec<usize>,
    /// The rod's section and the candidates' arc lengths (their lowest
    /// points).
    section: rod::CrossSection,
    length_m: f64,
    arc_m: Vec<f64>,
    lambda: Vec<Vector3<f64>>,
    /// Multipliers one step before `lambda` (their extrapolation).
    previous_lambda: Vec<Vector3<f64>>,
    /// Joint frames at the previous step (slip reference).
    prev_frames: Vec<Pose>,
    params: LawParams,
    /// Normal compliance of each candidate \[m/N\] (the scene's
    /// [`NormalCompliance`]).
    normal_compliance_m_n: Vec<f64>,
    /// Tangential compliance of each candidate while it sticks \[m/N\].
    tangential_compliance_m_n: Vec<f64>,
    states: Vec<ContactState>,
    /// Slip velocity of each candidate over the last step (world).
    slip_m_s: Vec<Vec3>,
}

/// The contact forces for the current multipliers: dead forces at the
/// sections' lowest points. Newton's tangent moves each point with its
/// section except for the section's roll about the rod's axis, which leaves
/// the lowest point below the centre (a material point would tip over with
/// it, a negative roll stiffness that cost a lying rod 5-15 iterations a
/// step).
struct ContactForces {
    /// (joint, section centre, the rod's axis there, contact point, force).
    items: Vec<(usize, Vec3, Vec3, Vec3, Vec3)>,
}

impl Term for ContactForces {
    fn name(&self) -> &str {
        "contact"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, _s: &State, sink: &mut Sink) {
        for (j, centre, axis, p, f) in &self.items {
            let w = lie::stack(&p.cross(f), f);
            let t = sink.wants_tangent().then(|| {
                // A material point's velocity for the joint's twist is
                // v + w x p; the lowest point's lacks the roll part,
                // (w . axis) axis x (p - c).
                let mut t = terms::point_force_tangent(p, f, None);
                let roll = lie::skew(f) * axis.cross(&(p - centre)) * axis.transpose();
                let mut angular = t.fixed_view_mut::<3, 3>(0, 0);
                angular -= roll;
                t
            });
            sink.wrench(Attach::Joint(*j), w, t);
        }
    }
}

/// Geometry of one candidate at the current iterate.
#[derive(Clone, Copy)]
struct CandidateGeometry {
    point: Vec3,
    /// (gap, t1, t2) motion of the contact point over the step \[m\].
    u: Vector3<f64>,
    /// What the law sees: `u` less the contact's elastic yield (see
    /// [`candidate_rows`]); its tangential part is the true slip (zero
    /// while sticking).
    u_law: Vector3<f64>,
}

/// The state the simulator carries from step to step.
#[derive(Clone)]
struct Carry {
    q: DVector<f64>,
    q_prev: DVector<f64>,
    /// The states before `q_prev`, newest first, at most
    /// [`EXTRAPOLATION_ORDER`] - 1 of them, for a higher-order extrapolation
    /// (empty after settling, and for a floating base, whose coordinates
    /// are re-referenced every step).
    older: Vec<DVector<f64>>,
    base_ref: Pose,
    inertia: Option<Inertia>,
    contact: Option<ContactSet>,
    tip_touch: Option<Vec3>,
    /// Path length slid by the tip's contact point \[m\].
    tip_slip_m: f64,
    t_s: f64,
    /// Wrench of all loads on the rod (gravity, inertia, contact, applied)
    /// at the state, world frame about the origin.
    applied_wrench: Vec6,
    /// A held tip's multipliers: its hold's reaction ([`HoldRows`]).
    tip_lambda: Vec<f64>,
    /// Which way each cable last slid (what its friction opposes): pulled
    /// in while its tension rose, let out while it fell, unchanged while
    /// it held (empty: pulled in).
    cable_slide: Vec<rod::statics::CableSlide>,
    /// Each cable's tension where it last reversed (None: never): beyond
    /// where the slide since then reaches, friction holds its old profile.
    cable_reversal_n: Vec<Option<f64>>,
    /// Each cable's reversals before its last, oldest first: the minor
    /// loops of a tension that went back and forth (a load cell's noise),
    /// each dropped when the tension passes the reversal before it
    /// (Madelung's rule: a closed loop leaves no trace).
    cable_earlier_reversals_n: Vec<Vec<f64>>,
    /// Each viscoelastic branch's force on the strain coordinates
    /// ([`Viscoelastic`]); empty for an elastic rod, and while settling
    /// (an equilibrium is relaxed).
    branch_forces: Vec<DVector<f64>>,
}

impl Carry {
    /// The viscoelastic branches' term for a step of `h` from this state
    /// (borrowing the carry and the model only, so that a step may change
    /// the simulator's other fields while it lives).
    fn viscoelastic<'a>(&'a self, model: &'a Model, h: f64) -> Viscoelastic<'a> {
        Viscoelastic { branches: &model.rod.viscoelastic, h_s: h, q_prev: &self.q, forces: &self.branch_forces }
    }
}

/// A simulation of one scene.
pub struct Simulator {
    pub scene: Scene,
    pub model: Model,
    motion: BaseMotion,
    carry: Carry,
    damping_tau_s: f64,
    marker_joints: Vec<usize>,
    /// The joint at each section boundary (node), base to tip.
    node_joints: Vec<usize>,
    load_joints: Vec<Option<usize>>,
    tow_anchor0: Vec<Option<Vec3>>,
    mass_kg: f64,
    /// Hung masses: (joint, offset in its frame \[m\], mass \[kg\]).
    point_masses: Vec<(usize, Vec3, f64)>,
    step_index: usize,
    /// [`Simulator::accept`] takes the frames and contact candidates from
    /// the solution's evaluation (off: computes them again; the tests'
    /// reference).
    reuse_evaluation: bool,
    /// The most contact points found touching at once so far, and the
    /// warnings the run has to report (each once).
    most_active_contacts: usize,
    warnings: Vec<String>,
    /// The last step's factorisation, where the next step's Broyden steps
    /// start ([`StepChord`]).
    chord: Option<StepChord>,
    /// Broyden steps from the last factorisation (default on; off: every
    /// Newton iteration forms a tangent).
    quasi_newton: bool,
    /// Tangents formed so far.
    tangents: usize,
    /// A held tip (the scene's `[tip]`): how the rod file holds it.
    tip_condition: Option<rod::TipCondition>,
}

impl Simulator {
    /// Sets up the rod in the scene at t = 0.
    pub fn new(rod: &Rod, scene: &Scene, motion: BaseMotion) -> Result<Simulator, SimError> {
        scene.check_time().map_err(SimError::Input)?;
        let tip_condition = held_tip(rod, scene)?;
        if tip_condition.is_some() && matches!(motion, BaseMotion::Free { .. }) {
            return Err(SimError::Input("a held tip needs a held base (the scene's [base] kind = \"prescribed\")".into()));
        }
        let mut rod = rod.clone();
        rod.gravity_m_s2 = scene.gravity_m_s2;
        let mut points: Vec<f64> = rod.markers.iter().map(|m| m.arc_m).collect();
        for l in &scene.loads {
            match l {
                LoadSpec::PointForce { arc_m, .. } | LoadSpec::Tow { arc_m, .. } | LoadSpec::PointMass { arc_m, .. } => {
                    if !(*arc_m >= 0.0 && *arc_m <= rod.length_m) {
                        return Err(SimError::Input(format!("load at arc_m = {arc_m} lies outside the rod [0, {}] m", rod.length_m)));
                    }
                    points.push(*arc_m)
                }
                LoadSpec::BodyForce { .. } => {}
                LoadSpec::Cable { cable, .. } => {
                    if !rod.cables.iter().any(|c| &c.name == cable) {
                        let names: Vec<&str> = rod.cables.iter().map(|c| c.name.as_str()).collect();
                        return Err(SimError::Input(format!("cable load '{cable}': the rod has no such cable (it has: {})", names.join(", "))));
                    }
                }
            }
        }
        let free = matches!(motion, BaseMotion::Free { .. });
        if free != matches!(scene.base, BaseSpec::Free { .. }) {
            return Err(SimError::Input("the base motion does not match the scene's base kind".into()));
        }
        let base0 = match &motion {
            BaseMotion::Free { start } => *start,
            BaseMotion::Prescribed { flange, mount } => {
                let (t0, t1) = flange.span_s();
                if t0 > 0.0 || t1 < scene.duration_s - 1e-9 {
                    return Err(SimError::Input(format!(
                        "the base trajectory covers [{t0}, {t1}] s, the scene needs [0, {}] s (time.duration_s)",
                        scene.duration_s
                    )));
                }
                flange.at(0.0).map_err(|e| SimError::Input(e.to_string()))?.compose(mount)
            }
        };
        rod.base = base0;
        let mut model = Model::new(&rod, &points);
        if free {
            model = model.with_floating_base();
        }
        let n = model.n_dof();
        let q = DVector::zeros(n);
        let frames = model.frames(&q);
        if let Some(table) = &scene.table {
            // The base must not start inside the table.
            let h = table.height_m(&base0.pos);
            if h < 0.0 {
                return Err(SimError::Input(format!("base: the rod's base starts {:.4} m below the table plane", -h)));
            }
        }
        let mass_kg = model.mass_kg();
        let point_masses: Vec<(usize, Vec3, f64)> = scene
            .loads
            .iter()
            .filter_map(|l| match l {
                LoadSpec::PointMass { arc_m, offset_body_m, mass_kg, .. } => Some((model.joint_at(*arc_m), *offset_body_m, *mass_kg)),
                _ => None,
            })
            .collect();
        let inertia = (scene.mode == Mode::Dynamic)
            .then(|| Inertia::new(&model, &q, scene.step_s).with_masses(&model, &q, &point_masses).with_integrator(scene.integrator));
        let damping_tau_s = match rod.damping {
            None => 0.0,
            Some(rod::Damping::TimeConstant(t)) => t,
            Some(rod::Damping::Ratio(z)) => 2.0 * z / first_bending_frequency_rad_s(&model),
        };
        // A step solves the strains and three multipliers per contact point
        // at once, in dense matrices: bounded before anything is built.
        if let Some(points) = scene.table.map(|_| match scene.contact_points {
            ContactPoints::Subsegments => model.n_joints(),
            ContactPoints::Nodes => model.node_x_m.len(),
        }) {
            let unknowns = model.n_dof() + 3 * points;
            if unknowns > MAX_STEP_UNKNOWNS {
                return Err(SimError::Input(format!(
                    "{} strain coordinates and {points} contact points make {unknowns} unknowns a step, more than {MAX_STEP_UNKNOWNS}: fewer sections or sub-segments, or [contact] points = \"nodes\"",
                    model.n_dof()
                )));
            }
        }
        let contact = scene.table.map(|plane| {
            let joints: Vec<usize> = match scene.contact_points {
                ContactPoints::Subsegments => (0..model.n_joints()).collect(),
                ContactPoints::Nodes => {
                    let mut j: Vec<usize> = model.node_x_m.iter().map(|&x| model.joint_at(x)).collect();
                    j.dedup();
                    j
                }
            };
            let l = rod.length_m;
            let arc_m = joints.iter().map(|&j| model.joint_x_m[j]).collect();
            let (t1, t2) = plane.tangents();
            let basis = Matrix3::from_rows(&[plane.normal.transpose(), t1.transpose(), t2.transpose()]);
            let props = rod.cross_section.properties(0.0, l);
            let bending = 3.0 * props.stiffness_diag[1].min(props.stiffness_diag[2]) / l.powi(3);
            let per_point = mass_kg / joints.len() as f64;
            let r = scene.contact_scale_n_m.unwrap_or(match scene.mode {
                Mode::Dynamic => (per_point / scene.step_s.powi(2)).max(bending),
                Mode::QuasiStatic => 10.0 * bending,
            });
            let nc = joints.len();
            let normal_compliance_m_n = normal_compliances_m_n(&rod, &model, &joints, scene.normal_compliance);
            let tangential_compliance_m_n = match scene.tangential_compliance_m_n {
                Some(c) => vec![c; nc],
                None => normal_compliance_m_n.iter().map(|c| c * contact::mindlin_ratio(&rod.cross_section.body)).collect(),
            };
            ContactSet {
                plane,
                basis,
                prev_frames: joints.iter().map(|&j| frames.joints[j]).collect(),
                joints,
                section: rod.cross_section.clone(),
                length_m: l,
                arc_m,
                lambda: vec![Vector3::zeros(); nc],
                previous_lambda: vec![Vector3::zeros(); nc],
                params: LawParams { law: scene.law, mu: plane.mu, r_n: r, r_t: r },
                normal_compliance_m_n,
                tangential_compliance_m_n,
                states: vec![ContactState::Free; nc],
                slip_m_s: vec![Vec3::zeros(); nc],
            }
        });
        let marker_joints = rod.markers.iter().map(|m| model.joint_at(m.arc_m)).collect();
        let node_joints = model.node_x_m.iter().map(|&x| model.joint_at(x)).collect();
        let load_joints = scene
            .loads
            .iter()
            .map(|l| match l {
                LoadSpec::PointForce { arc_m, .. } | LoadSpec::Tow { arc_m, .. } | LoadSpec::PointMass { arc_m, .. } => Some(model.joint_at(*arc_m)),
                LoadSpec::BodyForce { .. } | LoadSpec::Cable { .. } => None,
            })
            .collect::<Vec<_>>();
        let tow_anchor0 = scene.loads.iter().zip(&load_joints).map(|(l, j)| matches!(l, LoadSpec::Tow { .. }).then(|| frames.joints[j.unwrap()].pos)).collect();
        // The branches start relaxed (the rod at rest, or settled).
        let (n_branches, ns_branches) = (model.rod.viscoelastic.len(), model.n_strain_dof());
        let mut sim = Simulator {
            scene: scene.clone(),
            model,
            motion,
            carry: Carry {
                q: q.clone(),
                q_prev: q,
                older: vec![],
                base_ref: base0,
                inertia,
                contact,
                tip_touch: None,
                tip_slip_m: 0.0,
                t_s: 0.0,
                applied_wrench: Vec6::zeros(),
                tip_lambda: vec![],
                cable_slide: vec![],
                cable_reversal_n: vec![],
                cable_earlier_reversals_n: vec![],
                branch_forces: vec![DVector::zeros(ns_branches); n_branches],
            },
            damping_tau_s,
            marker_joints,
            node_joints,
            load_joints,
            tow_anchor0,
            mass_kg,
            point_masses,
            step_index: 0,
            reuse_evaluation: true,
            most_active_contacts: 0,
            chord: None,
            quasi_newton: true,
            tangents: 0,
            warnings: vec![],
            tip_condition,
        };
        if tip_condition.is_some() {
            sim.start_held()?;
        }
        if scene.initial == Initial::Static {
            sim.settle()?;
        } else {
            let gravity = Gravity { scale: 1.0 };
            sim.carry.applied_wrench = terms::assemble(&sim.model, &sim.carry.q, &[&gravity], false).applied_wrench;
        }
        Ok(sim)
    }

    pub fn mass_kg(&self) -> f64 {
        self.mass_kg
    }

    /// The tip's hold at `t_s`, when the tip is held.
    fn tip_rows(&self, t_s: f64) -> Option<HoldRows> {
        let hold = TipHold::at(self.tip_condition?, &self.scene.tip_pose_at(t_s)?)?;
        Some(HoldRows::new(&self.model, hold))
    }

    /// Unknowns of the rod in a step: its coordinates and a held tip's
    /// multipliers (the contacts' follow).
    fn n_rod(&self) -> usize {
        self.model.n_dof() + self.carry.tip_lambda.len()
    }

    /// A held tip's start: at rest (straight) only where that reaches the
    /// hold at t = 0; else (initial = "static") the held equilibrium under
    /// gravity and the cables at t = 0, solved with the hold exact, which
    /// the settling then refines with every load and contact.
    fn start_held(&mut self) -> Result<(), SimError> {
        let rows = self.tip_rows(0.0).expect("a held tip");
        self.carry.tip_lambda = vec![0.0; rows.count()];
        let tip0 = *self.model.frames(&self.carry.q).joints.last().expect("joints");
        let miss_m = (tip0.pos - rows.hold.position_m()).norm();
        let turn_rad = match rows.hold {
            TipHold::Clamped { rotation, .. } => lie::so3_log(&(tip0.rot * rotation.transpose())).norm(),
            TipHold::Pinned { .. } => 0.0,
        };
        if self.scene.initial == Initial::Rest {
            if miss_m > 1e-6 * self.model.rod.length_m || turn_rad > 1e-6 {
                return Err(SimError::Input(format!(
                    "the rod at rest (straight) does not reach its tip's hold at t = 0 ({miss_m:.4} m and {turn_rad:.4} rad away): set initial = \"static\" to start from the held equilibrium"
                )));
            }
            return Ok(());
        }
        let loads = rod::Loads {
            gravity_scale: 1.0,
            point_loads: vec![],
            cable_tensions_n: self.scene.cable_tensions_n(&self.model.rod, 0.0),
            ..rod::Loads::default()
        };
        let held = rod::held::solve_held(&self.model, &loads, rows.hold, None, &rod::NewtonOptions::default()).map_err(|e| match e {
            rod::StaticsError::Unreachable { .. } => SimError::Input(format!("[tip] at t = 0: {e}")),
            e => SimError::NoConvergence { step: 0, t_s: 0.0, why: format!("the held equilibrium at t = 0: {e}"), remedy: String::new() },
        })?;
        let n = self.model.n_dof();
        self.carry.tip_lambda = held.unknowns(rows.hold).as_slice()[n..].to_vec();
        self.carry.q = held.solution.q.clone();
        self.carry.q_prev = held.solution.q;
        Ok(())
    }

    /// What the run has to report besides its records (each said once),
    /// e.g. a contact set the strain basis cannot follow.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Warns, once, when more points touch than the strain basis can move
    /// independently: their normal loads are then shared out by the
    /// contact's compliance, not by the rod (science notes,
    /// `docs/contact.md`).
    fn note_active_contacts(&mut self, active: usize) {
        let strain_coordinates = self.model.n_strain_dof();
        let before = self.most_active_contacts;
        self.most_active_contacts = before.max(active);
        if before > strain_coordinates || active <= strain_coordinates {
            return;
        }
        let how = match self.scene.normal_compliance {
            NormalCompliance::Foundation { modulus_pa: None } => {
                "the contact's compliance (a foundation of the line contact of the rod's surface on the table; [contact] foundation_modulus_pa or compliance_m_n to change it)".to_string()
            }
            NormalCompliance::Foundation { modulus_pa: Some(k) } => format!("the scene's foundation ([contact] foundation_modulus_pa = {k:e} Pa)"),
            NormalCompliance::PerPoint { compliance_m_n } => format!("the scene's compliance ([contact] compliance_m_n = {compliance_m_n:e} m/N per point)"),
        };
        self.warnings.push(format!(
            "contact: {active} points touch the table but the rod has {strain_coordinates} strain coordinates: the rod alone cannot set their loads; they are shared out by {how}"
        ));
    }

    pub fn time_s(&self) -> f64 {
        self.carry.t_s
    }

    /// Linear momentum of the rod [kg m/s] (dynamic mode; zero otherwise).
    pub fn momentum(&self) -> Vec3 {
        self.carry.inertia.as_ref().map_or(Vec3::zeros(), |i| i.momentum())
    }

    /// Broyden steps between tangents (on by default): the same states to
    /// the solver's tolerance with fewer tangents.
    pub fn with_quasi_newton(mut self, on: bool) -> Simulator {
        self.quasi_newton = on;
        self
    }

    /// Tangents (linearisations) formed so far, over every step.
    pub fn tangents(&self) -> usize {
        self.tangents
    }

    /// Material damping time constant in use \[s\].
    pub fn damping_time_constant_s(&self) -> f64 {
        self.damping_tau_s
    }

    /// Sets the velocity of a rigid motion (world twist about the origin).
    pub fn set_rigid_velocity(&mut self, twist: &Vec6) {
        if let Some(i) = self.carry.inertia.as_mut() {
            i.set_rigid_velocity(twist);
        }
    }

    /// Static equilibrium at t = 0 with contact, gravity ramped in.
    fn settle(&mut self) -> Result<(), SimError> {
        // An equilibrium: no inertia, no damping, the branches relaxed.
        let saved_inertia = self.carry.inertia.take();
        let saved_tau = std::mem::replace(&mut self.damping_tau_s, 0.0);
        let saved_branches = std::mem::take(&mut self.carry.branch_forces);
        let mut newton_fail = String::new();
        let result = newton::continuation(1.0, 1.0 / 64.0, |_, to| {
            let before = self.carry.clone();
            match self.solve_step(0.0, self.scene.step_s, to, false) {
                Ok(solution) => {
                    self.accept(solution, self.scene.step_s, 0.0);
                    Ok(())
                }
                Err(e) => {
                    self.carry = before;
                    newton_fail = e.clone();
                    Err(e)
                }
            }
        });
        self.carry.inertia = saved_inertia;
        self.damping_tau_s = saved_tau;
        self.carry.branch_forces = saved_branches;
        if let Some(i) = self.carry.inertia.as_mut() {
            // At rest in the settled shape.
            *i = Inertia::new(&self.model, &self.carry.q, self.scene.step_s)
                .with_masses(&self.model, &self.carry.q, &self.point_masses)
                .with_integrator(self.scene.integrator);
        }
        self.carry.q_prev = self.carry.q.clone();
        self.carry.older.clear();
        if let Some(c) = self.carry.contact.as_mut() {
            // At rest: the normal forces too.
            c.previous_lambda = c.lambda.clone();
        }
        self.carry.t_s = 0.0;
        let hint = self.smoothed_law_hint();
        let remedy = self.remedy(false);
        result.map(|_| ()).map_err(|(reached, _)| SimError::NoConvergence {
            step: 0,
            t_s: 0.0,
            why: format!("initial static equilibrium: gravity reached {reached:.3}: {newton_fail}{hint}"),
            remedy,
        })
    }

    /// What to try when a step does not converge (`split`: after the step
    /// was halved [`MAX_SPLITS`] times), with the scene's values.
    fn remedy(&self, split: bool) -> String {
        let s = &self.scene;
        let mut out = if split { format!("the step was already halved {MAX_SPLITS} times; ") } else { String::new() };
        out += &format!("what to try: a looser [solver] tolerance (now {:e}) or more [solver] max_iterations (now {})", s.tolerance, s.max_iterations);
        if s.table.is_some() {
            out += ", a softer table ([contact] normal_compliance)";
            if s.contact_points != ContactPoints::Subsegments {
                out += ", contact points at every sub-segment ([contact] points = \"subsegments\")";
            }
        }
        if split {
            out += &format!(", or a smaller [time] step_s (now {} s) to start from", s.step_s);
        }
        out
    }

    /// Why a smoothed contact law may be the trouble: with more points on
    /// the table than the rod has strain coordinates (a rod lying along it)
    /// the smoothing stalls Newton or, wider than the points' loads, erases
    /// their friction (docs/contact.md). Empty otherwise.
    fn smoothed_law_hint(&self) -> String {
        let lying = self.most_active_contacts > self.model.n_strain_dof();
        if lying && self.scene.law != contact::Law::Exact {
            "; the smoothed contact law does not suit a rod lying along the table (many light contact points): use [contact] law = \"exact\"".into()
        } else {
            String::new()
        }
    }

    /// The record of the current state (t = 0 before any step).
    pub fn record(&self) -> StepRecord {
        let x = self.state_vector();
        self.make_record(&x, 0, 0, 0.0)
    }

    /// `[q; tip multipliers; contact multipliers]`.
    fn state_vector(&self) -> DVector<f64> {
        let nq = self.model.n_dof();
        let n = self.n_rod();
        let nc = self.carry.contact.as_ref().map_or(0, |c| c.joints.len());
        let mut x = DVector::zeros(n + 3 * nc);
        x.rows_mut(0, nq).copy_from(&self.carry.q);
        x.rows_mut(nq, n - nq).copy_from(&DVector::from_column_slice(&self.carry.tip_lambda));
        if let Some(c) = &self.carry.contact {
            for (i, l) in c.lambda.iter().enumerate() {
                x.fixed_rows_mut::<3>(n + 3 * i).copy_from(l);
            }
        }
        x
    }

    /// Advances one step of the scene's length.
    pub fn step(&mut self) -> Result<StepRecord, SimError> {
        let (iterations, substeps, wall_time_s) = self.advance_one_step()?;
        Ok(self.make_record(&self.state_vector(), iterations, substeps, wall_time_s))
    }

    /// Advances one step of the scene's length without building its
    /// record: (iterations, sub-steps, wall time \[s\]).
    fn advance_one_step(&mut self) -> Result<(usize, usize, f64), SimError> {
        let start = Instant::now();
        let h = self.scene.step_s;
        let t_end = (self.carry.t_s + h).min(self.scene.duration_s.max(self.carry.t_s + h));
        let (iterations, substeps) = self.advance_to(t_end, 0)?;
        self.step_index += 1;
        Ok((iterations, substeps, start.elapsed().as_secs_f64()))
    }

    /// Runs the whole scene and hands `recorder` the record of the start,
    /// of every `step_skip`-th step and of the last; the other steps' records
    /// are not built (a run that needs its end only spends nothing on
    /// them). `progress(done, total)` after every step.
    pub fn run_recording(&mut self, step_skip: usize, mut recorder: impl FnMut(StepRecord), mut progress: impl FnMut(usize, usize)) -> Result<(), SimError> {
        let total = self.scene.steps();
        let step_skip = step_skip.max(1);
        recorder(self.record());
        for k in 1..=total {
            let (iterations, substeps, wall_time_s) = self.advance_one_step()?;
            if k % step_skip == 0 || k == total {
                recorder(self.make_record(&self.state_vector(), iterations, substeps, wall_time_s));
            }
            progress(k, total);
        }
        Ok(())
    }

    /// Runs the whole scene; `progress(done, total)` after every step.
    pub fn run(&mut self, progress: impl FnMut(usize, usize)) -> Result<Vec<StepRecord>, SimError> {
        match self.run_until_failure(progress) {
            (records, None) => Ok(records),
            (_, Some(e)) => Err(e),
        }
    }

    /// Runs the scene until its end or a step that fails: the records up to
    /// there, and the failure (a partial run is still worth writing).
    pub fn run_until_failure(&mut self, progress: impl FnMut(usize, usize)) -> (Vec<StepRecord>, Option<SimError>) {
        let mut out = Vec::with_capacity(self.scene.steps() + 1);
        let failure = self.run_recording(1, |r| out.push(r), progress).err();
        (out, failure)
    }

    /// Moves the state to `t_end`, splitting the step when Newton fails.
    fn advance_to(&mut self, t_end: f64, depth: usize) -> Result<(usize, usize), SimError> {
        let h = t_end - self.carry.t_s;
        let mut why = String::new();
        // A failed solve leaves the carried state as it was (only
        // `accept` moves it): nothing to restore before the next try.
        for extrapolate in [true, false] {
            match self.solve_step(t_end, h, 1.0, extrapolate) {
                Ok(solution) => {
                    let iterations = solution.iterations;
                    self.accept(solution, h, t_end);
                    return Ok((iterations, 1));
                }
                Err(e) => why = e,
            }
        }
        if depth >= MAX_SPLITS {
            let why = why + &self.smoothed_law_hint();
            return Err(SimError::NoConvergence { step: self.step_index + 1, t_s: t_end, why, remedy: self.remedy(true) });
        }
        let mid = self.carry.t_s + 0.5 * h;
        let (i1, s1) = self.advance_to(mid, depth + 1)?;
        let (i2, s2) = self.advance_to(t_end, depth + 1)?;
        Ok((i1 + i2, s1 + s2))
    }

    /// The rod base's pose at time `t_s` (prescribed base).
    fn base_at(&self, t_s: f64) -> Pose {
        match &self.motion {
            BaseMotion::Prescribed { flange, mount } => flange.at(t_s.clamp(flange.span_s().0, flange.span_s().1)).expect("checked span").compose(mount),
            BaseMotion::Free { .. } => self.carry.base_ref,
        }
    }

    fn flange_at(&self, t_s: f64) -> Option<Pose> {
        match &self.motion {
            BaseMotion::Prescribed { flange, .. } => Some(flange.at(t_s.clamp(flange.span_s().0, flange.span_s().1)).expect("checked span")),
            BaseMotion::Free { .. } => None,
        }
    }

    /// Solves one step of length `h` ending at `t_end` with gravity scaled
    /// by `gravity_scale`; returns the solution vector, the iterations, the
    /// applied wrench there and what its evaluation computed.
    fn solve_step(&mut self, t_end: f64, h: f64, gravity_scale: f64, extrapolate: bool) -> Result<StepSolution, String> {
        self.model.rod.base = self.base_at(t_end);
        let nq = self.model.n_dof();
        let n = self.n_rod();
        let mut x0 = self.state_vector();
        if extrapolate {
            // The polynomial through the last states (up to cubic): most
            // steps then converge in one Newton iteration instead of two.
            // The multipliers start from their last values: extrapolating
            // them too picked the other branch where stick and slide both
            // solve a step (the slide test's tip at 2.705 s, h = 2.5 ms).
            let states: Vec<&DVector<f64>> = [&self.carry.q, &self.carry.q_prev].into_iter().chain(&self.carry.older).collect();
            x0.rows_mut(0, nq).copy_from(&extrapolate_next(&states));
            // The forces of points pressed and sticking for two steps along
            // their line: a compliant contact's forces change with its
            // gap and shear, and the extrapolated shape would otherwise
            // start each step a step's worth of force away. Only inside
            // the friction cone: a sliding point's force is left where it
            // was (see above).
            if let Some(c) = &self.carry.contact {
                for (i, (l, prev)) in c.lambda.iter().zip(&c.previous_lambda).enumerate() {
                    if l[0] > 0.0 && prev[0] > 0.0 && c.states[i] == ContactState::Stick {
                        let next = 2.0 * l - prev;
                        let inside = next[0] > 0.0 && next.fixed_rows::<2>(1).norm() < 0.99 * c.params.mu * next[0];
                        if inside {
                            x0.fixed_rows_mut::<3>(n + 3 * i).copy_from(&next);
                        }
                    }
                }
            }
        }
        if let Some(inertia) = self.carry.inertia.as_mut() {
            inertia.h_s = h;
        }
        let damping = Damping { tau_s: self.damping_tau_s, h_s: h, q_prev: &self.carry.q };
        let viscoelastic = Carry::viscoelastic(&self.carry, &self.model, h);
        let gravity = Gravity { scale: gravity_scale };
        // Applied loads active at t_end.
        let mut body = Vec3::zeros();
        let mut point_loads = vec![];
        let mut point_joints = vec![];
        let mut tows = vec![];
        let mut hooks = vec![];
        let mut start_frames = None;
        for (k, l) in self.scene.loads.iter().enumerate() {
            match l {
                LoadSpec::BodyForce { total_force_n, start_s, end_s } if t_end >= *start_s && t_end < *end_s => body += total_force_n / self.mass_kg,
                LoadSpec::PointForce { arc_m, offset_body_m, force_n, follower, start_s, end_s } if t_end >= *start_s && t_end < *end_s => {
                    point_loads.push(PointLoad {
                        x_m: *arc_m,
                        offset_body_m: *offset_body_m,
                        force_n: *force_n,
                        moment_nm: Vec3::zeros(),
                        follower: *follower,
                    });
                    point_joints.push(self.load_joints[k].expect("point load joint"));
                }
                // A hung mass's weight (its inertia is the inertia term's).
                LoadSpec::PointMass { arc_m, offset_body_m, mass_kg, hook_friction_radius_m } => {
                    if *hook_friction_radius_m > 0.0 && self.carry.inertia.is_some() {
                        let joint = self.load_joints[k].expect("point mass joint");
                        hooks.push(HookFriction {
                            joint,
                            moment_n_m: hook_friction_radius_m * mass_kg * self.scene.gravity_m_s2.norm() * gravity_scale,
                            h_s: h,
                            rot_start: start_frames.get_or_insert_with(|| self.model.frames(&self.carry.q)).joints[joint].rot,
                            smoothing_rad_s: HOOK_SMOOTHING_RAD_S,
                        });
                    }
                    point_loads.push(PointLoad {
                        x_m: *arc_m,
                        offset_body_m: *offset_body_m,
                        force_n: self.scene.gravity_m_s2 * (*mass_kg * gravity_scale),
                        moment_nm: Vec3::zeros(),
                        follower: false,
                    });
                    point_joints.push(self.load_joints[k].expect("point mass joint"));
                }
                LoadSpec::Tow { velocity_m_s, stiffness_n_m, .. } => tows.push(TowSpring {
                    joint: self.load_joints[k].expect("tow joint"),
                    anchor_m: self.tow_anchor0[k].expect("anchor") + velocity_m_s * t_end,
                    stiffness_n_m: *stiffness_n_m,
                    plane_normal: self.scene.table.map(|p| p.normal).unwrap_or_else(|| -self.scene.gravity_m_s2.normalize()),
                }),
                _ => {}
            }
        }
        let body_force = BodyForce { acceleration_m_s2: body };
        let points = PointLoads { loads: &point_loads, joints: point_joints, scale: 1.0 };
        let tensions = self.scene.cable_tensions_n(&self.model.rod, t_end);
        let (slide, reversal_n, earlier) = self.cable_slide_to(&tensions);
        // Ramped with gravity while settling the initial equilibrium.
        let cables = terms::Cables { tensions_n: &tensions, scale: gravity_scale, slide: &slide, reversal_n: &reversal_n, earlier_reversals_n: &earlier };
        let mut list: Vec<&dyn Term> = vec![&Elastic, &gravity, &body_force, &points];
        if tensions.iter().any(|t| *t != 0.0) {
            list.push(&cables);
        }
        for t in &tows {
            list.push(t);
        }
        for f in &hooks {
            list.push(f);
        }
        if self.damping_tau_s > 0.0 {
            list.push(&damping);
        }
        if !viscoelastic.forces.is_empty() {
            list.push(&viscoelastic);
        }
        if let Some(i) = self.carry.inertia.as_ref() {
            list.push(i);
        }
        // The contact rows' force scale: every force the step involves,
        // the contact forces of the last step among them (a weightless rod
        // pressed or pulled by its base has no other), so that a
        // tolerance means the same for any rod.
        let tow_forces_n = if tows.is_empty() {
            0.0
        } else {
            let frames = self.model.frames(&self.carry.q);
            tows.iter().map(|t| t.force_n(&frames.joints[t.joint].pos).norm()).sum::<f64>()
        };
        let force_scale = self.mass_kg * self.scene.gravity_m_s2.norm()
            + body.norm() * self.mass_kg
            + point_loads.iter().map(|p| p.force_n.norm()).sum::<f64>()
            + tensions.iter().sum::<f64>()
            + tow_forces_n
            + self.carry.contact.as_ref().map_or(0.0, |c| c.lambda.iter().map(|l| l.norm()).sum::<f64>());
        // The last step's factorisation, for a step of the same length (to
        // round-off: a step's length is the difference of two times, and
        // the time's sum of steps made it differ in its last bits at a
        // quarter of the steps of 10 ms, each then a new tangent).
        let chord = self.chord.take().filter(|c| (c.step_s - h).abs() <= 1e-9 * h);
        let mut sys = StepSystem {
            hold: self.tip_rows(t_end),
            model: &self.model,
            terms: list,
            contact: self.carry.contact.as_ref(),
            force_scale: force_scale.max(1e-12),
            step_s: h,
            cache: None,
            last_active: vec![],
            chord,
            tangents: 0,
            last: None,
        };
        let newton =
            Newton { max_iterations: self.scene.max_iterations, tolerance: self.scene.tolerance, quasi_newton: self.quasi_newton, ..Newton::default() };
        let solved = newton.solve(&mut sys, &x0);
        let chord = sys.chord.take();
        self.tangents += sys.tangents;
        let solved = solved.map_err(|e| e.to_string())?;
        // The solution's evaluation, made again when it was not the last
        // (a step accepted at its linearisation point after a failed
        // search).
        if sys.last.as_ref().is_none_or(|e| e.x != solved.x) {
            sys.evaluate(&solved.x, false);
        }
        let last = sys.last.take().expect("the solution's evaluation");
        let w = last.wrench;
        // The solution's active contacts (its residual was the last evaluated).
        let active = sys.last_active.len();
        // A kept factorisation that has cost more iterations beyond the
        // first of each step than a new tangent costs is stale: the next
        // step forms a new one.
        self.chord = chord.and_then(|mut c| {
            if sys.tangents == 0 {
                c.extra_iterations += solved.iterations.saturating_sub(1);
            }
            (c.extra_iterations <= STALE_CHORD_EXTRA_ITERATIONS).then_some(c)
        });
        let evaluated = last.geometry.filter(|_| self.reuse_evaluation);
        self.note_active_contacts(active);
        Ok(StepSolution { x: solved.x, iterations: solved.iterations, wrench: w, evaluated })
    }

    /// Which way each cable slides over the step to tensions `now` (the
    /// step's end): the way its tension moves from the last state's (the
    /// load path's history), or as it last slid; the tension of its last
    /// reversal (the last state's, where the way changes now), and the
    /// reversals before it that friction still remembers.
    #[allow(clippy::type_complexity)]
    fn cable_slide_to(&self, now: &[f64]) -> (Vec<rod::statics::CableSlide>, Vec<Option<f64>>, Vec<Vec<f64>>) {
        use rod::statics::CableSlide;
        let before = self.scene.cable_tensions_n(&self.model.rod, self.carry.t_s);
        let (mut slides, mut latest, mut earlier) = (vec![], vec![], vec![]);
        for (c, (b, n)) in before.iter().zip(now).enumerate() {
            let held = self.carry.cable_slide.get(c).copied().unwrap_or_default();
            let mut reversal_n = self.carry.cable_reversal_n.get(c).copied().flatten();
            let mut stack = self.carry.cable_earlier_reversals_n.get(c).cloned().unwrap_or_default();
            let tolerance_n = 1e-12 * b.abs().max(n.abs());
            let slide = if n - b > tolerance_n {
                CableSlide::PulledIn
            } else if b - n > tolerance_n {
                CableSlide::LetOut
            } else {
                held
            };
            // The first slide of a run (no history) is no reversal.
            if slide != held && self.carry.t_s > 0.0 {
                stack.extend(reversal_n);
                reversal_n = Some(*b);
            }
            // A minor loop closes when the tension passes the reversal
            // that opened it: both its reversals go.
            let passed = |r: f64| if slide == CableSlide::PulledIn { *n >= r } else { *n <= r };
            while stack.last().is_some_and(|r| passed(*r)) {
                stack.pop();
                reversal_n = stack.pop();
            }
            slides.push(slide);
            latest.push(reversal_n);
            earlier.push(stack);
        }
        (slides, latest, earlier)
    }

    /// Makes the step's solution the new state at `t_end` (after a step of
    /// length `h`).
    fn accept(&mut self, solution: StepSolution, h: f64, t_end: f64) {
        let StepSolution { x, wrench, evaluated, .. } = solution;
        (self.carry.cable_slide, self.carry.cable_reversal_n, self.carry.cable_earlier_reversals_n) =
            self.cable_slide_to(&self.scene.cable_tensions_n(&self.model.rod, t_end));
        self.carry.applied_wrench = wrench;
        let nq = self.model.n_dof();
        let n_rod = self.n_rod();
        let q_new = x.rows(0, nq).into_owned();
        self.carry.tip_lambda = x.as_slice()[nq..n_rod].to_vec();
        let (frames, candidates) = match evaluated {
            Some(e) => (e.frames, Some((e.geometry, e.rows))),
            None => (self.model.frames(&q_new), None),
        };
        if let Some(i) = self.carry.inertia.as_mut() {
            i.h_s = h;
            i.advance(&self.model, &q_new);
        }
        if !self.carry.branch_forces.is_empty() {
            self.carry.branch_forces = Carry::viscoelastic(&self.carry, &self.model, h).advanced(&self.model, &q_new);
        }
        if let Some(c) = self.carry.contact.as_mut() {
            for (i, &j) in c.joints.iter().enumerate() {
                let lam: Vector3<f64> = x.fixed_rows::<3>(n_rod + 3 * i).into_owned();
                let (g, rows) = match &candidates {
                    Some((geometry, rows)) => (geometry[i], rows[i].clone()),
                    None => candidate_rows(c, i, &frames.joints[j], &lam),
                };
                // Slip, not the contact's elastic shear.
                let slip = (g.u_law[1] * g.u_law[1] + g.u_law[2] * g.u_law[2]).sqrt();
                // On the cone's edge without slipping is sticking.
                c.states[i] = if rows.state == ContactState::Slide && slip < SLIP_THRESHOLD_M { ContactState::Stick } else { rows.state };
                if i + 1 == c.joints.len() && c.joints[i] + 1 == self.model.n_joints() && c.states[i] != ContactState::Free {
                    self.carry.tip_slip_m += slip;
                }
                c.previous_lambda[i] = c.lambda[i];
                c.lambda[i] = if rows.free { Vector3::zeros() } else { lam };
                c.prev_frames[i] = frames.joints[j];
                let (t1, t2) = c.plane.tangents();
                c.slip_m_s[i] = (t1 * g.u_law[1] + t2 * g.u_law[2]) / h;
            }
            // Where the tip (centre line) was when it first touched.
            let last = c.joints.len() - 1;
            if c.joints[last] == self.model.n_joints() - 1 && c.states[last] != ContactState::Free && self.carry.tip_touch.is_none() {
                self.carry.tip_touch = Some(frames.joints[c.joints[last]].pos);
            }
        }
        let mut q_store = q_new.clone();
        if let Some(o) = self.model.base_dof() {
            // Re-reference the floating base: the twist becomes the new base.
            let zeta = self.model.base_twist(&q_new);
            self.carry.base_ref = self.carry.base_ref.compose(&lie::exp(&zeta));
            self.model.rod.base = self.carry.base_ref;
            for i in 0..6 {
                q_store[o + i] = 0.0;
            }
            // Keep the base's velocity for the extrapolation: q_prev = -zeta.
            let mut prev = q_store.clone();
            prev.rows_mut(0, o).copy_from(&self.carry.q.rows(0, o));
            for i in 0..6 {
                prev[o + i] = -zeta[i];
            }
            self.carry.q_prev = prev;
            self.carry.older.clear();
        } else {
            let prev = std::mem::replace(&mut self.carry.q_prev, self.carry.q.clone());
            self.carry.older.insert(0, prev);
            self.carry.older.truncate(EXTRAPOLATION_ORDER - 1);
        }
        self.carry.q = q_store;
        self.carry.t_s = t_end;
    }

    fn make_record(&self, x: &DVector<f64>, iterations: usize, substeps: usize, wall_time_s: f64) -> StepRecord {
        let n = self.model.n_dof();
        let q = x.rows(0, n).into_owned();
        let mut model = self.model.clone();
        model.rod.base = match &self.motion {
            BaseMotion::Free { .. } => self.carry.base_ref,
            BaseMotion::Prescribed { .. } => self.base_at(self.carry.t_s),
        };
        let frames = model.frames(&q);
        let ns = model.n_strain_dof();
        let node_strain = model.node_x_m.iter().map(|&xn| model.strain_at(xn, &q)).collect();
        let node_m = self.node_joints.iter().map(|&j| frames.joints[j].pos).collect();
        let markers_m = model.rod.markers.iter().zip(&self.marker_joints).map(|(m, &j)| frames.joints[j].transform_point(&m.offset_body_m)).collect();
        let marker_strain = model.rod.markers.iter().map(|m| model.strain_at(m.arc_m, &q)).collect();
        let tip_m = *frames.joints.last().map(|g| &g.pos).expect("joints");
        let mut contacts = vec![];
        let mut normal = 0.0;
        let mut tangential = Vec3::zeros();
        let mut tip_slide_m = 0.0;
        if let Some(c) = &self.carry.contact {
            let (t1, t2) = c.plane.tangents();
            for (i, &j) in c.joints.iter().enumerate() {
                let g = &frames.joints[j];
                let d = c.plane.lowest_offset(&g.rot, &c.section, c.arc_m[i], c.length_m);
                let p = g.transform_point(&d);
                let lam = c.lambda[i];
                let ft = t1 * lam[1] + t2 * lam[2];
                normal += lam[0];
                tangential += ft;
                contacts.push(ContactRecord {
                    joint: j,
                    arc_m: model.joint_x_m[j],
                    point_m: p,
                    gap_m: c.plane.height_m(&p),
                    normal_force_n: lam[0],
                    tangential_force_n: ft,
                    state: c.states[i],
                    slip_velocity_m_s: c.slip_m_s[i],
                });
            }
            if let Some(touch) = self.carry.tip_touch {
                let d = tip_m - touch;
                tip_slide_m = (d - c.plane.normal * c.plane.normal.dot(&d)).norm();
            }
        }
        let gravity_energy_j = -model.joint_mass_kg.iter().zip(&frames.joints).map(|(m, f)| m * model.rod.gravity_m_s2.dot(&f.pos)).sum::<f64>()
            - self.point_masses.iter().map(|(j, d, m)| m * model.rod.gravity_m_s2.dot(&frames.joints[*j].transform_point(d))).sum::<f64>();
        let qs = q.rows(0, ns);
        let elastic_energy_j = Elastic.energy(&State { model: &model, q: &q, frames: &frames, kinematics: None }).unwrap_or(0.0);
        let kinetic_energy_j = self.carry.inertia.as_ref().map_or(0.0, |i| i.kinetic_energy_j());
        // Sensor: the rod's total applied wrench (gravity, inertia, contact,
        // loads) is what the flange holds; expressed at the flange.
        let base_wrench_flange = match self.flange_at(self.carry.t_s) {
            Some(flange) => flange.coadjoint_apply(&self.carry.applied_wrench),
            None => Vec6::zeros(),
        };
        let tip_hold_wrench = self.tip_rows(self.carry.t_s).map(|rows| {
            let (moment, force) = rows.reaction(&x.as_slice()[n..]);
            lie::stack(&moment, &force)
        });
        StepRecord {
            tip_hold_wrench,
            step: self.step_index,
            t_s: self.carry.t_s,
            q: qs.iter().copied().collect(),
            base_pose: model.base_pose(&q),
            node_strain,
            node_m,
            markers_m,
            marker_strain,
            tip_m,
            contacts,
            normal_force_n: normal,
            tangential_force_n: tangential,
            tip_slide_m,
            tip_slip_m: self.carry.tip_slip_m,
            base_wrench_flange,
            kinetic_energy_j,
            elastic_energy_j,
            gravity_energy_j,
            iterations,
            substeps,
            wall_time_s,
        }
    }

    /// The tow springs' forces at the current state (what a gauge on each
    /// string reads), in scene order.
    pub fn tow_forces_n(&self) -> Vec<Vec3> {
        let t = self.carry.t_s;
        let frames = self.model.frames(&self.carry.q);
        self.scene
            .loads
            .iter()
            .enumerate()
            .filter_map(|(k, l)| match l {
                LoadSpec::Tow { velocity_m_s, stiffness_n_m, .. } => {
                    let tow = TowSpring {
                        joint: self.load_joints[k].expect("joint"),
                        anchor_m: self.tow_anchor0[k].expect("anchor") + velocity_m_s * t,
                        stiffness_n_m: *stiffness_n_m,
                        plane_normal: self.scene.table.map(|p| p.normal).unwrap_or_else(|| -self.scene.gravity_m_s2.normalize()),
                    };
                    Some(tow.force_n(&frames.joints[tow.joint].pos))
                }
                _ => None,
            })
            .collect()
    }
}

/// How the rod's tip is held by the scene's `[tip]` (`None`: free),
/// checked against the rod file's `[tip] condition`.
fn held_tip(rod: &Rod, scene: &Scene) -> Result<Option<rod::TipCondition>, SimError> {
    use rod::TipCondition;
    match (rod.tip_condition, &scene.tip) {
        (TipCondition::Free, None) => Ok(None),
        (TipCondition::Free, Some(_)) => Err(SimError::Input("the scene holds the tip ([tip]) but the rod file's tip is free ([tip] condition)".into())),
        (c, None) => Err(SimError::Input(format!(
            "the rod file's tip is {} ([tip] condition): the scene needs a [tip] table (position_m and rotation_rad, or waypoints)",
            c.key()
        ))),
        (TipCondition::Clamped, Some(t)) if !t.rotation_given => {
            Err(SimError::Input("the rod file's tip is clamped: the scene's [tip] needs rotation_rad (the clamp's rotation vector)".into()))
        }
        (c, Some(_)) => Ok(Some(c)),
    }
}

/// The most unknowns one step may solve for (a dense matrix of 8000^2
/// doubles is 0.5 GB).
pub const MAX_STEP_UNKNOWNS: usize = 8000;

/// Halvings of a step that does not converge before the run stops.
const MAX_SPLITS: usize = 6;

/// Degree of the polynomial a step's start is extrapolated with.
const EXTRAPOLATION_ORDER: usize = 3;

/// The next of equally spaced `states` (newest first) on the polynomial
/// through them: `sum_i (-1)^i C(k, i + 1) x_i` for k states (2 x_0 - x_1,
/// 3 x_0 - 3 x_1 + x_2, ...).
fn extrapolate_next(states: &[&DVector<f64>]) -> DVector<f64> {
    let k = states.len();
    let mut binomial = 1.0;
    let mut out = DVector::zeros(states[0].len());
    for (i, x) in states.iter().enumerate() {
        // C(k, i + 1) from C(k, i).
        binomial *= (k - i) as f64 / (i + 1) as f64;
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        out.axpy(sign * binomial, *x, 1.0);
    }
    out
}

/// The law's rows of candidate `i` at joint frame `g` and multipliers
/// `lam`, with the contact compliances: the gap and slip the law sees are
/// `delta_n + c_n Lambda_n` and `u_t + c_t (Lambda_t - Lambda_t,prev)`.
fn candidate_rows(c: &ContactSet, i: usize, g: &Pose, lam: &Vector3<f64>) -> (CandidateGeometry, contact::LawRows) {
    let mut geo = geometry(c, i, g);
    let prev = c.lambda[i];
    let ct = c.tangential_compliance_m_n[i];
    let compliance = Matrix3::from_diagonal(&Vector3::new(c.normal_compliance_m_n[i], ct, ct));
    geo.u_law = geo.u + compliance * (lam - Vector3::new(0.0, prev[1], prev[2]));
    let mut rows = contact::evaluate(&c.params, lam, &geo.u_law);
    rows.dc_dlambda += rows.dc_du * compliance;
    (geo, rows)
}

/// Each candidate's share of the rod's length \[m\]: half the distance to
/// its neighbours (the end candidates reach the rod's ends).
pub fn length_shares_m(arcs_m: &[f64], length_m: f64) -> Vec<f64> {
    let n = arcs_m.len();
    (0..n)
        .map(|i| {
            let lo = if i == 0 { 0.0 } else { 0.5 * (arcs_m[i - 1] + arcs_m[i]) };
            let hi = if i + 1 == n { length_m } else { 0.5 * (arcs_m[i] + arcs_m[i + 1]) };
            (hi - lo).max(0.0)
        })
        .collect()
}

/// The normal compliance of each candidate \[m/N\]: a foundation's `1 / (k
/// ds)` (by default [`contact::default_foundation_modulus_pa`]), or the
/// scene's value per point.
fn normal_compliances_m_n(rod: &Rod, model: &Model, joints: &[usize], spec: NormalCompliance) -> Vec<f64> {
    let l = rod.length_m;
    let arcs: Vec<f64> = joints.iter().map(|&j| model.joint_x_m[j]).collect();
    let shares = length_shares_m(&arcs, l);
    arcs.iter()
        .zip(&shares)
        .map(|(&x, &ds)| match spec {
            NormalCompliance::PerPoint { compliance_m_n } => compliance_m_n,
            NormalCompliance::Foundation { modulus_pa } => {
                let k = modulus_pa.unwrap_or_else(|| contact::default_foundation_modulus_pa(rod, x));
                // A point with no share of the length (repeated arc lengths)
                // yields freely: it carries nothing.
                if ds > 0.0 {
                    1.0 / (k * ds)
                } else {
                    f64::INFINITY
                }
            }
        })
        .collect()
}

/// Contact geometry of candidate `i` at joint frame `g`: the gap of the
/// section's lowest surface point and the slip of the material point there
/// since the previous step. The lowest point is found again at every
/// iterate: a material point fixed for the step would let a rolling
/// section sink into the table by `r (1 - cos phi)` at no cost, a negative
/// roll stiffness `q r` that beats the torsional stiffness of a long soft
/// rod lying on the table (it twisted and dived). The gap's first
/// derivative is the material point's (the lowest point is a minimum over
/// the rim), so Newton's Jacobian stays exact.
fn geometry(c: &ContactSet, i: usize, g: &Pose) -> CandidateGeometry {
    let d = c.plane.lowest_offset(&g.rot, &c.section, c.arc_m[i], c.length_m);
    let point = g.transform_point(&d);
    let prev = c.prev_frames[i].transform_point(&d);
    let gap = c.plane.height_m(&point);
    let slip = c.basis * (point - prev);
    let u = Vector3::new(gap, slip[1], slip[2]);
    CandidateGeometry { point, u, u_law: u }
}

/// Evaluation of one step's system at an iterate, kept for the direction.
struct Cached {
    /// Candidates that enter the linear system.
    active: Vec<usize>,
    /// `U J_c` (3 x n) of every candidate.
    ujc: Vec<nalgebra::Matrix3xX<f64>>,
    lambda: Vec<Vector3<f64>>,
}

/// What an evaluation computed at its iterate besides the residual: the
/// applied wrench, and (a residual's) the frames and each contact
/// candidate's geometry and rows. Kept from the last evaluation, for
/// [`Simulator::accept`] when it is the step's solution (most steps)
/// instead of computing them again (a tenth of a lying rod's step).
struct Evaluated {
    x: DVector<f64>,
    wrench: Vec6,
    geometry: Option<Geometry>,
}

/// The frames and the contact candidates' geometry and rows at an iterate.
struct Geometry {
    frames: rod::Frames,
    geometry: Vec<CandidateGeometry>,
    rows: Vec<contact::LawRows>,
}

/// A step's solution: the state, Newton's iterations, the applied wrench
/// there, and what its evaluation there computed (when it was the last).
struct StepSolution {
    x: DVector<f64>,
    iterations: usize,
    wrench: Vec6,
    evaluated: Option<Geometry>,
}

/// One time step as a [`System`]: `x = [q; mu; Lambda_1; ...; Lambda_nc]`
/// with `mu` a held tip's multipliers (none for a free tip): the "rod"
/// block of the elimination below is `[q; mu]`, the hold's equations
/// always active beside the strains'.
struct StepSystem<'a> {
    model: &'a Model,
    /// A held tip's equations at the step's end.
    hold: Option<HoldRows>,
    terms: Vec<&'a dyn Term>,
    contact: Option<&'a ContactSet>,
    /// Force scale of the contact rows' convergence test \[N\].
    force_scale: f64,
    /// The step's length \[s\] (a factorisation serves steps of its length).
    step_s: f64,
    cache: Option<Cached>,
    /// The active contacts of the last evaluated iterate (the iterate is
    /// `last`'s).
    last_active: Vec<usize>,
    /// The factorisation of the last Newton direction (this step's, or the
    /// step before's).
    chord: Option<StepChord>,
    /// Tangents formed (linearisations).
    tangents: usize,
    /// The last evaluation's wrench, frames and candidates.
    last: Option<Evaluated>,
}

/// The factorisation behind a Newton direction of a step, kept so that the
/// next iterates (and the next step, of the same length) take Broyden
/// steps from it instead of a new tangent: the tangent (inertia at 64
/// points, contact rows) is most of a step's cost, and over a 5 ms step it
/// barely changes. Used only while the active contacts are the same; the
/// solver drops any step that does not contract, so the answer is Newton's
/// to its tolerance.
struct StepChord {
    step_s: f64,
    /// Iterations beyond the first of each step since it was formed.
    extra_iterations: usize,
    active: Vec<usize>,
    /// `U J_c` of every candidate at the linearisation.
    ujc: Vec<nalgebra::Matrix3xX<f64>>,
    /// LU of the rod block `H`.
    rod: nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
    /// With active contacts: `H^-1 A^T`, `B_q` and the Schur complement's
    /// factors.
    coupling: Option<(DMatrix<f64>, DMatrix<f64>, SchurFactors)>,
}

impl StepChord {
    /// The block-eliminated step for reduced right-hand sides: (dq, dLambda).
    fn solve(&self, rhs_q: &DVector<f64>, rhs_c: &DVector<f64>) -> Option<(DVector<f64>, DVector<f64>)> {
        let mut dq = self.rod.solve(rhs_q)?;
        let Some((hinv_at, bq, schur)) = &self.coupling else { return Some((dq, DVector::zeros(0))) };
        let mut rhs = rhs_c.clone();
        rhs.gemv(-1.0, bq, &dq, 1.0);
        let dl = schur.solve(rhs)?;
        dq.gemv(1.0, hinv_at, &dl, 1.0);
        Some((dq, dl))
    }
}

/// A tangent and its factorisation cost about eight residuals (a rod lying
/// on the table: 110 us against 13 us). A kept factorisation is dropped
/// once the steps after it have needed more iterations beyond their first
/// than that: without this, the factorisation of the slip onset's impact
/// served its whole slide at three or four iterations a step instead of
/// one (6.4 ms instead of 4.2 ms).
const STALE_CHORD_EXTRA_ITERATIONS: usize = 8;

/// A contact point on the friction cone's edge that moved less than this in
/// a step is reported as sticking \[m\].
const SLIP_THRESHOLD_M: f64 = 1e-9;

/// Compliance added to the diagonal of contact rows (Newton matrix only).
const CONTACT_REGULARISATION: f64 = 1e-9;

impl StepSystem<'_> {
    /// The rod block's unknowns: strains and the hold's multipliers.
    fn n(&self) -> usize {
        self.model.n_dof() + self.hold.map_or(0, |h| h.count())
    }

    /// Residual (and reduced tangent) at `x`.
    fn evaluate(&mut self, x: &DVector<f64>, with_tangent: bool) -> (Residual, Option<DMatrix<f64>>) {
        let n = self.n();
        let nq = self.model.n_dof();
        let q = x.rows(0, nq).into_owned();
        let kin = with_tangent.then(|| self.model.kinematics(&q));
        let own = kin.is_none().then(|| self.model.frames(&q));
        let frames = kin.as_ref().map(|k| &k.frames).or(own.as_ref()).expect("frames");
        let nc = self.contact.map_or(0, |c| c.joints.len());
        let mut rows_all = Vec::with_capacity(nc);
        let mut forces = ContactForces { items: Vec::with_capacity(nc) };
        let mut geo = Vec::with_capacity(nc);
        if let Some(c) = self.contact {
            for (i, &j) in c.joints.iter().enumerate() {
                let lam: Vector3<f64> = x.fixed_rows::<3>(n + 3 * i).into_owned();
                let (g, rows) = candidate_rows(c, i, &frames.joints[j], &lam);
                if lam != Vector3::zeros() {
                    let f = c.basis.transpose() * lam;
                    let joint = &frames.joints[j];
                    forces.items.push((j, joint.pos, joint.rot * Vec3::x(), g.point, f));
                }
                rows_all.push(rows);
                geo.push(g);
            }
        }
        let reaction = self.hold.map(|h| h.term(self.model, &x.as_slice()[nq..n]));
        let mut list = self.terms.clone();
        list.push(&forces);
        if let Some(r) = &reaction {
            list.push(r);
        }
        let asm = terms::assemble_with(self.model, &q, frames, kin.as_ref(), &list, with_tangent);
        let mut value = DVector::zeros(n + 3 * nc);
        value.rows_mut(0, nq).copy_from(&asm.residual);
        let tip = frames.joints.len() - 1;
        if let Some(h) = &self.hold {
            value.rows_mut(nq, n - nq).copy_from(&h.residual(&frames.joints[tip]));
        }
        for (i, r) in rows_all.iter().enumerate() {
            value.fixed_rows_mut::<3>(n + 3 * i).copy_from(&r.c);
        }
        let residual = Residual::new(value, asm.scale);
        let active: Vec<usize> = (0..nc).filter(|&i| !rows_all[i].free).collect();
        if !with_tangent {
            self.last_active = active;
            let frames = own.expect("a residual's own frames");
            let geometry = Geometry { frames, geometry: geo, rows: rows_all };
            self.last = Some(Evaluated { x: x.clone(), wrench: asm.applied_wrench, geometry: Some(geometry) });
            return (residual, None);
        }
        self.last_active = active.clone();
        self.last = Some(Evaluated { x: x.clone(), wrench: asm.applied_wrench, geometry: None });
        let kin = kin.as_ref().expect("kinematics");
        let mut h = DMatrix::zeros(n, n);
        h.view_mut((0, 0), (nq, nq)).copy_from(&asm.tangent.expect("tangent"));
        if let Some(hold) = &self.hold {
            hold.add_to_tangent(&mut h, nq, &self.model.joint_jacobian_cow(kin, tip), &kin.frames.joints[tip]);
        }
        let c = match self.contact {
            Some(c) => c,
            None => {
                self.cache = Some(Cached { active: vec![], ujc: vec![], lambda: vec![] });
                return (residual, Some(h));
            }
        };
        // Contact rows do not involve the hold's multipliers: zero columns.
        let ujc: Vec<nalgebra::Matrix3xX<f64>> = c
            .joints
            .iter()
            .zip(&geo)
            .map(|(&j, g)| {
                let mut m = nalgebra::Matrix3xX::zeros(n);
                m.columns_mut(0, nq).copy_from(&(c.basis * point_jacobian(&self.model.joint_jacobian_cow(kin, j), &g.point)));
                m
            })
            .collect();
        let na = active.len();
        let mut t = DMatrix::zeros(n + 3 * na, n + 3 * na);
        t.view_mut((0, 0), (n, n)).copy_from(&h);
        for (a, &i) in active.iter().enumerate() {
            let col = n + 3 * a;
            // d r / d Lambda = -(U J_c)^T.
            t.view_mut((0, col), (n, 3)).copy_from(&(-ujc[i].transpose()));
            let r = &rows_all[i];
            t.view_mut((col, 0), (3, n)).copy_from(&(r.dc_du * &ujc[i]));
            t.view_mut((col, col), (3, 3)).copy_from(&r.dc_dlambda);
        }
        let lambda = (0..nc).map(|i| x.fixed_rows::<3>(n + 3 * i).into_owned()).collect();
        self.cache = Some(Cached { active, ujc, lambda });
        (residual, Some(t))
    }

    fn split<'r>(&self, r: &'r Residual) -> (nalgebra::DVectorView<'r, f64>, nalgebra::DVectorView<'r, f64>) {
        let n = self.n();
        (r.value.rows(0, n), r.value.rows(n, r.value.len() - n))
    }

    fn within(&self, r: &Residual, tol: f64) -> bool {
        let (rr, cc) = self.split(r);
        rr.norm() <= tol * r.scale.max(1e-300) && cc.norm() <= tol * self.force_scale
    }
}

impl System for StepSystem<'_> {
    fn residual(&mut self, x: &DVector<f64>) -> Option<Residual> {
        let (r, _) = self.evaluate(x, false);
        r.value.iter().all(|v| v.is_finite()).then_some(r)
    }

    fn linearise(&mut self, x: &DVector<f64>) -> Option<Linearisation> {
        self.tangents += 1;
        let (residual, t) = self.evaluate(x, true);
        Some(Linearisation { residual, tangent: t? })
    }

    fn direction_count(&self) -> usize {
        3
    }

    /// Attempts 0 and 1: block elimination of the rod,
    /// `S dLambda = -C + B_q H^-1 r` with `S = B_q H^-1 A^T + B_lambda`,
    /// solved by a pseudo-inverse (SVD). Attempt 0 keeps every direction
    /// (the contact compliance makes `S` regular): the Newton step, by LU
    /// where `S` is well conditioned ([`SchurFactors`]). Attempts 0 and 1
    /// keep their factorisation for Broyden steps ([`StepChord`]). With
    /// redundant contacts (more contact rows than the rod can move
    /// independently, e.g. a rod lying along the table) an iterate whose
    /// gaps the rod cannot close all at once makes that step huge along the
    /// compliance's directions; attempt 1 then drops singular values below
    /// 1e-6 of the largest: the least-squares step with minimum-norm
    /// multiplier updates, which restores consistency. Attempt 2: the whole
    /// reduced system by LU with a regularised diagonal.
    fn direction(&mut self, lin: &Linearisation, attempt: usize) -> Option<DVector<f64>> {
        let n = self.n();
        let cache = self.cache.as_ref()?;
        let na = cache.active.len();
        let (rhs_q, rhs_c) = reduced_rhs(n, &lin.residual, &cache.active, &cache.ujc, &cache.lambda);
        let (dq, dl) = if attempt < 2 {
            let rod = block(&lin.tangent, (0, 0), (n, n)).lu();
            let coupling = if na == 0 {
                None
            } else {
                // -A^T is the tangent's upper-right block.
                let at = -block(&lin.tangent, (0, n), (n, 3 * na));
                let bq = block(&lin.tangent, (n, 0), (3 * na, n));
                let bl = block(&lin.tangent, (n, n), (3 * na, 3 * na));
                let hinv_at = rod.solve(&at)?;
                let schur = SchurFactors::of(&bq * &hinv_at + bl, if attempt == 0 { SCHUR_KEEP_ALL } else { SCHUR_LEAST_SQUARES });
                Some((hinv_at, bq, schur))
            };
            let chord = StepChord { step_s: self.step_s, active: cache.active.clone(), ujc: cache.ujc.clone(), rod, coupling, extra_iterations: 0 };
            let step = chord.solve(&rhs_q, &rhs_c)?;
            self.chord = Some(chord);
            step
        } else {
            let mut rhs = DVector::zeros(n + 3 * na);
            rhs.rows_mut(0, n).copy_from(&rhs_q);
            rhs.rows_mut(n, 3 * na).copy_from(&rhs_c);
            let mut t = lin.tangent.clone();
            for k in n..n + 3 * na {
                t[(k, k)] += CONTACT_REGULARISATION;
            }
            let d = t.lu().solve(&rhs)?;
            (d.rows(0, n).into_owned(), d.rows(n, 3 * na).into_owned())
        };
        Some(full_direction(n, lin.residual.value.len(), &dq, &dl, &cache.active, &cache.lambda))
    }

    /// Broyden's first direction: the kept factorisation's step for the
    /// residual of the last evaluated iterate, while its active contacts
    /// are the factorisation's.
    fn chord_direction(&mut self, r: &Residual) -> Option<DVector<f64>> {
        let n = self.n();
        let (chord, x) = (self.chord.as_ref()?, &self.last.as_ref()?.x);
        if chord.active != self.last_active || x.len() != r.value.len() {
            return None;
        }
        let nc = (r.value.len() - n) / 3;
        let lambda: Vec<Vector3<f64>> = (0..nc).map(|i| x.fixed_rows::<3>(n + 3 * i).into_owned()).collect();
        let (rhs_q, rhs_c) = reduced_rhs(n, r, &chord.active, &chord.ujc, &lambda);
        let (dq, dl) = chord.solve(&rhs_q, &rhs_c)?;
        Some(full_direction(n, r.value.len(), &dq, &dl, &chord.active, &lambda))
    }

    fn merit(&self, r: &Residual) -> f64 {
        r.value.norm()
    }

    fn converged(&self, r: &Residual, tolerance: f64) -> bool {
        self.within(r, tolerance)
    }

    fn acceptable(&self, r: &Residual, tolerance: f64) -> bool {
        self.within(r, 1e3 * tolerance)
    }
}

/// A copy of the block of `m` at `(row, column)` of `(rows, columns)`,
/// column by column from the column-major storage: a view's `into_owned`
/// copied it element by element through an iterator (four blocks of a
/// lying rod's 77x77 tangent: 12 % of the direction's time).
fn block(m: &DMatrix<f64>, (row, column): (usize, usize), (rows, columns): (usize, usize)) -> DMatrix<f64> {
    let stride = m.nrows();
    let data = m.as_slice();
    let mut out = Vec::with_capacity(rows * columns);
    for j in column..column + columns {
        out.extend_from_slice(&data[j * stride + row..j * stride + row + rows]);
    }
    DMatrix::from_vec(rows, columns, out)
}

/// The reduced right-hand sides of a step's Newton system: the rod's rows
/// (decoupled candidates step to Lambda = 0, so their multipliers move
/// to the rod's side) and the active candidates' contact rows.
fn reduced_rhs(n: usize, r: &Residual, active: &[usize], ujc: &[nalgebra::Matrix3xX<f64>], lambda: &[Vector3<f64>]) -> (DVector<f64>, DVector<f64>) {
    let mut rhs_q = -r.value.rows(0, n).into_owned();
    for (i, lam) in lambda.iter().enumerate() {
        if *lam != Vector3::zeros() && !active.contains(&i) {
            rhs_q -= ujc[i].transpose() * lam;
        }
    }
    let mut rhs_c = DVector::zeros(3 * active.len());
    for (a, &i) in active.iter().enumerate() {
        rhs_c.fixed_rows_mut::<3>(3 * a).copy_from(&(-r.value.fixed_rows::<3>(n + 3 * i)));
    }
    (rhs_q, rhs_c)
}

/// The whole step from the reduced one: the rod's `dq`, the active
/// candidates' `dLambda`, the others' multipliers to zero.
fn full_direction(n: usize, total: usize, dq: &DVector<f64>, dl: &DVector<f64>, active: &[usize], lambda: &[Vector3<f64>]) -> DVector<f64> {
    let mut full = DVector::zeros(total);
    full.rows_mut(0, n).copy_from(dq);
    for (i, lam) in lambda.iter().enumerate() {
        full.fixed_rows_mut::<3>(n + 3 * i).copy_from(&(-lam));
    }
    for (a, &i) in active.iter().enumerate() {
        full.fixed_rows_mut::<3>(n + 3 * i).copy_from(&dl.fixed_rows::<3>(3 * a));
    }
    full
}

/// The Schur complement `S` of the contact rows, factorised: `S dLambda =
/// rhs` by LU where `S` is well conditioned (its pivots within
/// `SCHUR_LU_PIVOT_RATIO` of each other, as the contact compliance makes
/// it), which is the pseudo-inverse's answer to rounding at a fraction of
/// an SVD's cost (a rod lying on the table has 17 contacts: `S` is 51x51,
/// and its SVD took a third of a step); else by the pseudo-inverse
/// dropping singular values below `cutoff` of the largest (the
/// least-squares step with minimum norm).
enum SchurFactors {
    Lu(nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>),
    PseudoInverse(Box<nalgebra::SVD<f64, nalgebra::Dyn, nalgebra::Dyn>>, f64),
}

/// Attempt 0 keeps every direction of `S` ...
const SCHUR_KEEP_ALL: f64 = 1e-13;
/// ... attempt 1 drops those below 1e-6 of the largest.
const SCHUR_LEAST_SQUARES: f64 = 1e-6;

/// Pivots of `S`'s LU closer than this to each other: LU, else SVD.
const SCHUR_LU_PIVOT_RATIO: f64 = 1e-8;

impl SchurFactors {
    fn of(s: DMatrix<f64>, cutoff: f64) -> SchurFactors {
        if cutoff <= SCHUR_KEEP_ALL {
            let lu = s.clone().lu();
            let pivots = lu.u().diagonal().map(f64::abs);
            if pivots.min() > SCHUR_LU_PIVOT_RATIO * pivots.max() {
                return SchurFactors::Lu(lu);
            }
        }
        let svd = s.svd(true, true);
        let top = svd.singular_values.amax();
        SchurFactors::PseudoInverse(Box::new(svd), cutoff * top)
    }

    /// Solves in place where it can (the chord's every iteration).
    fn solve(&self, mut rhs: DVector<f64>) -> Option<DVector<f64>> {
        match self {
            SchurFactors::Lu(lu) => (lu.solve_mut(&mut rhs) && rhs.iter().all(|v| v.is_finite())).then_some(rhs),
            SchurFactors::PseudoInverse(svd, eps) => svd.solve(&rhs, *eps).ok(),
        }
    }
}

/// Lowest natural frequency of the rod at rest with a clamped base
/// [rad/s]: generalised eigenvalues of `K` and `M = sum J^T Mcal J`.
pub fn first_bending_frequency_rad_s(model: &Model) -> f64 {
    let mut m = model.clone();
    m.floating_base = false;
    let q = DVector::zeros(m.n_dof());
    let mass = mass_matrix(&m, &q);
    let k = &m.stiffness;
    // M = L L^T; eig of L^-1 K L^-T.
    let Some(chol) = mass.clone().cholesky() else { return f64::NAN };
    let l = chol.l();
    let Some(linv) = l.clone().try_inverse() else { return f64::NAN };
    let a = &linv * k * linv.transpose();
    let a = (&a + a.transpose()) * 0.5;
    let eig = a.symmetric_eigenvalues();
    eig.iter().cloned().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min).sqrt()
}

/// The generalised mass matrix `M(q) = sum_p J_p^T Mcal_p J_p` over the
/// inertia points (Gauss points of every segment), spatial form.
pub fn mass_matrix(model: &Model, q: &DVector<f64>) -> DMatrix<f64> {
    let kin = model.kinematics(q);
    let inertia = Inertia::new(model, q, 1.0);
    let n = model.n_dof();
    let mut m = DMatrix::zeros(n, n);
    for p in &inertia.points {
        let ip = model.interior_point(&kin.frames, p.segment, p.s_m, true);
        let js = model.interior_jacobian(&kin, &ip);
        // Spatial inertia of the point about the world origin:
        // Ad^-T diag(I, m) Ad^-1 with the body frame at the point.
        let mut mb = Mat6::zeros();
        for k in 0..3 {
            mb[(k, k)] = p.rotary_kg_m2[k];
            mb[(3 + k, 3 + k)] = p.mass_kg;
        }
        let adinv = ip.pose.adjoint_inv();
        let ms = adinv.transpose() * mb * adinv;
        m += js.transpose() * ms * &js;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepting a step with the frames and contact candidates of its
    /// solution's evaluation gives the same run, bit for bit, as computing
    /// them again: a rod dropped and pushed along a table (sticking, then
    /// sliding). Fails when a candidate's rows are taken from another
    /// candidate (checked).
    #[test]
    fn accepting_from_the_solutions_evaluation_is_accepting_from_scratch() {
        let run = |reuse: bool| {
            let rod = crate::benchmarks::dismech_rod();
            let load = "[[load]]\nkind = \"body_force\"\ntotal_force_n = [6.0, 0.0, 0.0]\n";
            let scene = Scene::from_toml_str(&crate::benchmarks::flat_scene(0.01, 0.3, 0.4, "rest", load), "scene").unwrap();
            let motion = BaseMotion::from_scene(&scene, &rod).unwrap().unwrap();
            let mut sim = Simulator::new(&rod, &scene, motion).unwrap();
            sim.reuse_evaluation = reuse;
            let records = sim.run(|_, _| {}).unwrap();
            records
                .into_iter()
                .map(|r| (r.q, r.kinetic_energy_j, r.tip_slip_m, r.contacts.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        let (reused, fresh) = (run(true), run(false));
        assert_eq!(reused.len(), 31);
        for (step, (a, b)) in reused.iter().zip(&fresh).enumerate() {
            assert_eq!(a, b, "step {step}");
        }
    }

    /// A block copied column by column is the view's copy, for blocks at
    /// every corner of a rectangular matrix.
    #[test]
    fn block_is_the_views_copy() {
        let m = DMatrix::from_fn(7, 5, |i, j| (10 * i + j) as f64);
        for (at, size) in [((0, 0), (3, 2)), ((4, 0), (3, 5)), ((2, 3), (5, 2)), ((0, 0), (7, 5)), ((6, 4), (1, 1))] {
            assert_eq!(block(&m, at, size), m.view(at, size).into_owned(), "{at:?} {size:?}");
        }
    }

    /// The extrapolation continues polynomials of its degree exactly: a
    /// line from two states, a parabola from three, a cubic from four.
    #[test]
    fn extrapolation_continues_polynomials() {
        let f = |t: f64| DVector::from_vec(vec![1.0 + 2.0 * t, 3.0 - t + 0.5 * t * t, 0.2 * t * t * t - t * t + 4.0]);
        // States at t = 3, 2, 1, 0 (newest first); the next is at t = 4.
        let states: Vec<DVector<f64>> = (0..4).map(|i| f(3.0 - i as f64)).collect();
        let refs: Vec<&DVector<f64>> = states.iter().collect();
        let want = f(4.0);
        assert!((extrapolate_next(&refs) - &want).amax() < 1e-12);
        assert!((extrapolate_next(&refs[..3])[1] - want[1]).abs() < 1e-12);
        assert!((extrapolate_next(&refs[..2])[0] - want[0]).abs() < 1e-12);
        assert_eq!(extrapolate_next(&refs[..1]), states[0]);
    }
}
