//! The scene file (`configs/scene/*.toml`): what the simulator needs
//! besides the rod: time stepping, gravity, the table, how the base moves,
//! the contact law, solver tolerances and applied loads. Parsed once into
//! typed values; every error names the file and the field.

use crate::contact::{Law, Plane};
use lie::{Pose, Vec3};
use rod::config::{parse_toml, read_toml_file};
use rod::ConfigError;
use serde::Deserialize;
use std::path::Path;

/// Time integration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Inertia, damping, implicit (backward) Euler.
    Dynamic,
    /// No inertia: a sequence of equilibria with incremental friction
    /// (valid when the base moves slowly against the first bending mode).
    QuasiStatic,
}

/// How the base moves.
#[derive(Clone, Debug, PartialEq)]
pub enum BaseSpec {
    /// Held by the robot: the flange (TCP) pose over time, in the robot's
    /// base frame, `[t_s, x_m, y_m, z_m, rx, ry, rz]` (rotation vector);
    /// the rod's base is `world_from_robot * flange * mount` (mount: the rod
    /// file's `[base]`). Empty: given by `--trajectory` or `--session`.
    Prescribed { waypoints: Vec<[f64; 7]> },
    /// Free (floating) base, starting at `pose` (the rod's base in the world).
    Free { pose: Pose },
}

/// The state at t = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Initial {
    /// Straight (rest strain), at rest.
    Rest,
    /// Static equilibrium under gravity and contact at t = 0 (friction
    /// measured from the rest shape), at rest.
    Static,
}

/// Where a session's replay starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The session's first base sample.
    Session,
    /// The release found by a motion-capture import (session.toml's
    /// `release_s`), from rest in the rod-file shape.
    Release,
}

/// Where contact is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContactPoints {
    /// Every sub-segment joint (and the tip).
    Subsegments,
    /// Section boundaries (and the tip): fewer points than strain dofs.
    Nodes,
}

/// The normal compliance of the contact points (science notes:
/// `docs/contact.md`): what makes the normal loads of a rod lying along the
/// table unique (more contact points than the strain basis can follow).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormalCompliance {
    /// A foundation under the rod: each point yields `1 / (k ds)` for its
    /// share `ds` of the rod's length. `None`: `k` of an elastic cylinder
    /// (the rod's surface material) in line contact with a rigid plane,
    /// [`crate::contact::line_contact_modulus_pa`].
    Foundation { modulus_pa: Option<f64> },
    /// The same compliance at every point \[m/N\].
    PerPoint { compliance_m_n: f64 },
}

impl Scene {
    /// A prescribed base's waypoints, the last one held to the scene's end
    /// (repeated at `duration_s` when it comes earlier): a robot that
    /// stops stays put. Empty for a free base or a base without waypoints.
    pub fn held_waypoints(&self) -> Vec<[f64; 7]> {
        let BaseSpec::Prescribed { waypoints } = &self.base else { return vec![] };
        let mut out = waypoints.clone();
        if let Some(last) = waypoints.last().filter(|w| w[0] < self.duration_s) {
            let mut held = *last;
            held[0] = self.duration_s;
            out.push(held);
        }
        out
    }
}

/// A load applied by the experimenter, active on `[start_s, end_s)`.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadSpec {
    /// Total force spread over the rod in proportion to its mass.
    BodyForce { total_force_n: Vec3, start_s: f64, end_s: f64 },
    /// A force at arc length `arc_m`, applied at `offset_body_m` from the
    /// centre line in that section's frame (a mass on a hook at the top
    /// edge of the tip face: its moment counts): dead (`force_n` in the
    /// world, `kind = "point_force"`) or a follower (`force_n` in the
    /// section's frame, turning with it, `kind = "follower_force"`).
    PointForce { arc_m: f64, offset_body_m: Vec3, force_n: Vec3, follower: bool, start_s: f64, end_s: f64 },
    /// A mass hung at arc length `arc_m`, at `offset_body_m` from the
    /// centre line in that section's frame (a hook on the tip face's top
    /// edge): its weight always, and in a dynamic scene its inertia, as a
    /// point rigidly attached to the section (rotary inertia neglected);
    /// with `hook_friction_radius_m` > 0, the dry friction of the hook it
    /// hangs on ([`crate::loads::HookFriction`]) resists the section's turning.
    PointMass { arc_m: f64, offset_body_m: Vec3, mass_kg: f64, hook_friction_radius_m: f64 },
    /// A spring in the table plane from an anchor moving at constant
    /// velocity (starting at the point's initial position) to the point at
    /// `arc_m`.
    Tow { arc_m: f64, velocity_m_s: Vec3, stiffness_n_m: f64 },
    /// A cable of the rod file pulled with a tension that is linear
    /// between `(t_s, tension_n)` waypoints (held before the first and after
    /// the last). The actuator sits on the rod's base: the pull is internal
    /// to what the flange holds.
    Cable { cable: String, waypoints: Vec<[f64; 2]> },
}

impl LoadSpec {
    /// A cable load's tension at `t_s` (0 for other loads).
    pub fn tension_at(&self, t_s: f64) -> f64 {
        let LoadSpec::Cable { waypoints, .. } = self else { return 0.0 };
        let t: Vec<f64> = waypoints.iter().map(|w| w[0]).collect();
        lie::series::blend(lie::series::bracket_held(&t, t_s), |i| waypoints[i][1])
    }
}

impl Scene {
    /// Tension of every cable of `rod` at `t_s` (the scene's cable loads, summed per cable).
    pub fn cable_tensions_n(&self, rod: &rod::Rod, t_s: f64) -> Vec<f64> {
        let mut out = vec![0.0; rod.cables.len()];
        for l in &self.loads {
            if let LoadSpec::Cable { cable, .. } = l {
                if let Some(k) = rod.cables.iter().position(|c| &c.name == cable) {
                    out[k] += l.tension_at(t_s);
                }
            }
        }
        out
    }
}

/// A validated scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    pub step_s: f64,
    pub duration_s: f64,
    pub mode: Mode,
    pub gravity_m_s2: Vec3,
    pub table: Option<Plane>,
    pub base: BaseSpec,
    /// The robot's base frame in the world (`T_world_robot`).
    pub world_from_robot: Pose,
    pub initial: Initial,
    /// Where a session's replay starts (`[time] start`).
    pub start: Start,
    /// The span of a replay `identify --dynamic` fits \[s\] (`[time]
    /// fit_window_s`, replay seconds; none: all of it).
    pub fit_window_s: Option<[f64; 2]>,
    /// How inertia is integrated (`[time] integrator`).
    pub integrator: crate::inertia::Integrator,
    pub contact_points: ContactPoints,
    pub law: Law,
    /// Alart-Curnier scale `r_n = r_t` \[N/m\]; `None`: automatic.
    pub contact_scale_n_m: Option<f64>,
    /// How much the table and the rod's surface yield under the normal load.
    pub normal_compliance: NormalCompliance,
    /// Tangential compliance of a sticking point \[m/N\]; `None`: the
    /// normal one times Mindlin's ratio ([`crate::contact::mindlin_ratio`]).
    pub tangential_compliance_m_n: Option<f64>,
    pub tolerance: f64,
    pub max_iterations: usize,
    pub loads: Vec<LoadSpec>,
    /// Where a pinned or clamped tip is held (`[tip]`).
    pub tip: Option<TipSpec>,
}

/// Where the tip is held over time: `[t_s, x, y, z, rx, ry, rz]` rows in
/// the world (one row: a fixed hold).
#[derive(Clone, Debug, PartialEq)]
pub struct TipSpec {
    pub waypoints: Vec<[f64; 7]>,
    /// Whether the rotation was given (a clamp needs it).
    pub rotation_given: bool,
}

/// The scene file's JSON schema (`rodlab schema scene`,
/// docs/reference/scene.md).
pub fn file_schema() -> schemars::Schema {
    schemars::schema_for!(RawScene)
}

/// A scene file: time stepping, the base's motion, a table with friction, loads.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawScene {
    /// The time steps: `[time]`.
    time: RawTime,
    /// Gravity in the world frame \[m/s^2\] (a session replayed takes its rig's).
    #[serde(default = "default_gravity")]
    gravity_m_s2: [f64; 3],
    /// A table: a plane the rod may touch, with Coulomb friction. None: no contact.
    table: Option<RawTable>,
    /// How the rod's base moves: `[base]`.
    base: RawBase,
    /// Where the robot's base frame sits in the world (waypoints are the robot's TCP poses in it).
    robot: Option<RawPose>,
    /// The state at t = 0: "rest" (straight, unloaded; default) or "static" (the static equilibrium under the loads at t = 0).
    #[serde(default)]
    initial: Option<String>,
    /// How contact is modelled: `[contact]`.
    #[serde(default)]
    contact: RawContact,
    /// Newton's settings for each step: `[solver]`.
    #[serde(default)]
    solver: RawSolver,
    /// Loads on the rod, each a `[[load]]` table.
    #[serde(default, rename = "load")]
    loads: Vec<RawLoad>,
    /// Where a pinned or clamped tip is held (the rod file's `[tip] condition`): `[tip]`.
    tip: Option<RawTip>,
}

/// Where the rod's tip is held: a fixed pose, or a pose over time (a second robot, a clamp on a slide).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTip {
    /// A fixed hold: the tip's centre in the world \[m\].
    position_m: Option<[f64; 3]>,
    /// A fixed clamp's rotation, world frame: a rotation vector \[rad\] (0: the rod's straight orientation; a pin ignores it).
    rotation_rad: Option<[f64; 3]>,
    /// A moving hold: `[t_s, x_m, y_m, z_m, rx, ry, rz]` rows in the world (position, rotation vector \[rad\]) at strictly increasing times, the first at t_s <= 0; after the last the hold stays.
    #[serde(default)]
    waypoints: Vec<Vec<f64>>,
}

fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}

/// The time steps.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTime {
    /// Time step \[s\] (implicit Euler).
    step_s: f64,
    /// Simulated time \[s\].
    duration_s: f64,
    /// "dynamic" (inertia and damping) or "quasi-static" (a sequence of equilibria).
    mode: String,
    /// How inertia is integrated (dynamic mode): "implicit-euler" (first order; default: robust with contact, damps a mode of frequency w by about w h / 2 of critical) or "bdf2" (second order: a ring-down in air keeps the material's damping; use it to fit or check damping).
    integrator: Option<String>,
    /// Where a session's replay starts: "session" (its first sample; default) or "release" (the release a motion-capture import found after its reference window: from rest in the rod-file shape, the markers' held pose).
    start: Option<String>,
    /// The span of each replay `identify --dynamic` fits, [from, to] in replay seconds (from its start; default: all of it): a ring-down after the robot stops, leaving out the motion that excited it. `--window-s` overrides it.
    fit_window_s: Option<[f64; 2]>,
}

/// A flat table: a half-space the rod cannot enter, with friction.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTable {
    /// A point of the table's surface in the world \[m\].
    #[serde(default)]
    point_m: [f64; 3],
    /// The table's normal, pointing up out of the table (normalised; not zero).
    normal: Option<[f64; 3]>,
    /// Coulomb friction coefficient (>= 0; one value for stick and slip).
    mu: f64,
}

/// The rod's base.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBase {
    /// "prescribed" (the base follows `waypoints`) or "free" (placed once at `position_m`, `rpy_deg`).
    kind: String,
    /// Prescribed base: `[t_s, x_m, y_m, z_m, rx, ry, rz]` rows (UR TCP poses: position and rotation vector \[rad\]) at strictly increasing times, the first at t_s <= 0; after the last the base holds its pose (a robot that stops stays put).
    #[serde(default)]
    waypoints: Vec<Vec<f64>>,
    /// Free base: its position in the world \[m\].
    position_m: Option<[f64; 3]>,
    /// Free base: roll, pitch, yaw \[deg\] (R = Rz(yaw) Ry(pitch) Rx(roll)).
    rpy_deg: Option<[f64; 3]>,
}

/// A pose in the world.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPose {
    /// Position \[m\].
    #[serde(default)]
    position_m: [f64; 3],
    /// Roll, pitch, yaw \[deg\] (R = Rz(yaw) Ry(pitch) Rx(roll)).
    #[serde(default)]
    rpy_deg: [f64; 3],
}

/// Contact and friction settings (all optional).
#[derive(Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawContact {
    /// Where contact is checked: "subsegments" (every quadrature point; default) or "nodes" (section boundaries).
    points: Option<String>,
    /// The normal law: "exact" (complementarity; default), "sigmoid" or "trigonometric" (smoothed over `width_n`).
    law: Option<String>,
    /// Smoothing width of the sigmoid and trigonometric laws \[N\].
    width_n: Option<f64>,
    /// Alart-Curnier scale r_n = r_t of the contact conditions \[N/m\] (default: the larger of a contact point's mass over step_s^2 and the rod's tip bending stiffness 3EI/L^3).
    scale_n_m: Option<f64>,
    /// Normal compliance per contact point \[m/N\] (0: rigid); or give `foundation_modulus_pa`, not both.
    compliance_m_n: Option<f64>,
    /// Foundation modulus under the rod \[Pa\]: each point yields 1 / (k ds) (default: an elastic cylinder of the rod's surface material in line contact with a rigid plane).
    foundation_modulus_pa: Option<f64>,
    /// Tangential compliance of a sticking point \[m/N\] (default: the normal one times Mindlin's ratio).
    tangential_compliance_m_n: Option<f64>,
}

/// Newton's settings.
#[derive(Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawSolver {
    /// Newton's tolerance on the residual relative to the step's own forces (default 1e-10; not below double precision's reach).
    tolerance: Option<f64>,
    /// Newton iterations per step at most (default 40); Broyden steps between them are bounded apart, by as many again.
    max_iterations: Option<usize>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    /// "body_force" (spread over the rod), "point_force" (fixed direction), "follower_force" (turns with the section), "point_mass" (a hung mass: its weight and, in a dynamic scene, its inertia), "tow" (a spring pulled at a speed) or "cable" (a rod-file cable pulled with a tension).
    kind: String,
    /// body_force: the total force, spread over the rod's mass \[N\].
    total_force_n: Option<[f64; 3]>,
    /// point_force, follower_force: the force \[N\] (world frame; a follower's in the section frame at t = 0).
    force_n: Option<[f64; 3]>,
    /// point_force, follower_force, point_mass, tow: where along the rod \[m\] (tow: default 0, the base).
    arc_m: Option<f64>,
    /// point_mass: the mass \[kg\] (present for the whole run).
    mass_kg: Option<f64>,
    /// point_mass: the dry friction of the hook it hangs on, as a radius \[m\] (the pin's radius times its friction coefficient): turning the section under the mass costs this times the weight as a moment (default 0: no friction).
    hook_friction_radius_m: Option<f64>,
    /// tow: the speed of the spring's far end \[m/s\].
    velocity_m_s: Option<[f64; 3]>,
    /// tow: the spring's stiffness \[N/m\].
    stiffness_n_m: Option<f64>,
    /// Point forces and masses: `[y, z]` offset from the centre line in the section frame.
    offset_m: Option<[f64; 2]>,
    /// cable: the name of one of the rod file's `[[cable]]`s.
    cable: Option<String>,
    /// cable: `[t_s, tension_n]` rows, times increasing, tensions >= 0 (linear in between).
    tension_waypoints: Option<Vec<[f64; 2]>>,
    /// When the load starts \[s\] (default 0).
    #[serde(default)]
    start_s: f64,
    /// When it ends \[s\] (default: never; later than start_s).
    end_s: Option<f64>,
}

fn finite3(file: &str, field: &str, v: [f64; 3]) -> Result<Vec3, ConfigError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(Vec3::from(v))
    } else {
        Err(ConfigError::new(file, field, "must be finite"))
    }
}

fn positive(file: &str, field: &str, v: f64) -> Result<f64, ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::new(file, field, format!("must be a positive number, got {v}")))
    }
}

fn pose(file: &str, field: &str, position: [f64; 3], rpy_deg: [f64; 3]) -> Result<Pose, ConfigError> {
    let p = finite3(file, &format!("{field}.position_m"), position)?;
    let r = finite3(file, &format!("{field}.rpy_deg"), rpy_deg)?;
    Ok(Pose::from_rpy(r.x.to_radians(), r.y.to_radians(), r.z.to_radians(), p))
}

/// `[t_s, x_m, y_m, z_m, rx, ry, rz]` rows at strictly increasing times,
/// the first at t_s <= 0 (`field`: where they are, for the messages).
fn pose_waypoints(file: &str, field: &str, rows: &[Vec<f64>]) -> Result<Vec<[f64; 7]>, ConfigError> {
    let mut waypoints: Vec<[f64; 7]> = vec![];
    for (i, w) in rows.iter().enumerate() {
        let field = format!("{field}[{i}]");
        if w.len() != 7 {
            return Err(ConfigError::new(file, &field, format!("needs 7 numbers [t_s, x_m, y_m, z_m, rx, ry, rz], has {}", w.len())));
        }
        if w.iter().any(|v| !v.is_finite()) {
            return Err(ConfigError::new(file, &field, "must be finite"));
        }
        if waypoints.last().is_some_and(|p| w[0] <= p[0]) {
            return Err(ConfigError::new(file, &field, "times must increase strictly (not monotonic in time)"));
        }
        waypoints.push(std::array::from_fn(|k| w[k]));
    }
    if let Some(first) = waypoints.first().filter(|w| w[0] > 0.0) {
        return Err(ConfigError::new(file, &format!("{field}[0]"), format!("must start at t_s <= 0, starts at {}", first[0])));
    }
    Ok(waypoints)
}

impl RawTip {
    fn validate(&self, file: &str) -> Result<TipSpec, ConfigError> {
        match (&self.position_m, self.waypoints.is_empty()) {
            (Some(p), true) => {
                let position = finite3(file, "tip.position_m", *p)?;
                let rotation = self.rotation_rad.map(|r| finite3(file, "tip.rotation_rad", r)).transpose()?;
                let r = rotation.unwrap_or_else(Vec3::zeros);
                Ok(TipSpec { waypoints: vec![[0.0, position.x, position.y, position.z, r.x, r.y, r.z]], rotation_given: rotation.is_some() })
            }
            (None, false) if self.rotation_rad.is_none() => {
                Ok(TipSpec { waypoints: pose_waypoints(file, "tip.waypoints", &self.waypoints)?, rotation_given: true })
            }
            (None, false) => Err(ConfigError::new(file, "tip.rotation_rad", "a moving hold's rotations are in its waypoints")),
            (Some(_), false) => Err(ConfigError::new(file, "tip", "give position_m (a fixed hold) or waypoints (a moving one), not both")),
            (None, true) => Err(ConfigError::new(file, "tip", "needs position_m (a fixed hold) or waypoints (a moving one)")),
        }
    }
}

impl Scene {
    /// Where the tip is held at `t_s` (world; rotation zero when not
    /// given), linear between waypoints (rotations by slerp), the last held.
    pub fn tip_pose_at(&self, t_s: f64) -> Option<Pose> {
        let tip = self.tip.as_ref()?;
        let samples = tip.waypoints.iter().map(|w| (w[0], lie::trajectory::pose_from_ur(&[w[1], w[2], w[3], w[4], w[5], w[6]])));
        let path = lie::trajectory::PoseTrajectory::new(samples).ok()?;
        let (first, last) = path.span_s();
        path.at(t_s.clamp(first, last)).ok()
    }

    pub fn from_file(path: &Path) -> Result<Scene, ConfigError> {
        let raw: RawScene = read_toml_file(path, "scene file")?;
        raw.validate(&path.display().to_string())
    }

    pub fn from_toml_str(text: &str, file: &str) -> Result<Scene, ConfigError> {
        let raw: RawScene = parse_toml(text, file)?;
        raw.validate(file)
    }

    /// Whether the time grid can be run: a step no longer than the
    /// duration, and at most [`MAX_STEPS`] of them (checked before anything
    /// is allocated; a duration set after parsing is checked again).
    pub fn check_time(&self) -> Result<(), String> {
        if !(self.step_s > 0.0 && self.duration_s > 0.0 && self.step_s.is_finite() && self.duration_s.is_finite()) {
            return Err(format!("time: step_s ({}) and duration_s ({}) must be positive", self.step_s, self.duration_s));
        }
        if self.step_s > self.duration_s {
            return Err(format!("time.step_s: {} s is longer than the duration ({} s)", self.step_s, self.duration_s));
        }
        let steps = self.duration_s / self.step_s;
        if steps > MAX_STEPS as f64 {
            return Err(format!(
                "time.step_s: {} s over {} s is {steps:.3e} steps, more than {MAX_STEPS} (a longer step, or a shorter duration)",
                self.step_s, self.duration_s
            ));
        }
        Ok(())
    }

    /// Number of steps to cover the duration.
    pub fn steps(&self) -> usize {
        (self.duration_s / self.step_s - 1e-9).ceil().max(0.0) as usize
    }
}

/// The smallest solver tolerance a scene may ask for: residuals are
/// relative to the step's forces (weight, loads, contact forces) and to the
/// terms' generalised forces, and rounding leaves about 1e-15 of them.
pub const MIN_TOLERANCE: f64 = 1e-13;

/// The most steps one run takes (each keeps a record: at a millisecond a
/// step, over a quarter of an hour of computing).
pub const MAX_STEPS: usize = 1_000_000;

/// Whether `[from, to]` \[s\] is a time window: finite, `0 <= from < to`.
pub fn is_window(w: [f64; 2]) -> bool {
    w.iter().all(|v| v.is_finite()) && w[0] >= 0.0 && w[0] < w[1]
}

/// A time window ([`is_window`]), or the error naming `file` and `field`.
pub fn check_window(file: &str, field: &str, w: [f64; 2]) -> Result<[f64; 2], ConfigError> {
    if is_window(w) {
        Ok(w)
    } else {
        Err(ConfigError::new(file, field, format!("expected [from, to] with 0 <= from < to (seconds), got [{}, {}]", w[0], w[1])))
    }
}

impl RawScene {
    fn validate(self, file: &str) -> Result<Scene, ConfigError> {
        let step_s = positive(file, "time.step_s", self.time.step_s)?;
        let duration_s = positive(file, "time.duration_s", self.time.duration_s)?;
        let mode = match self.time.mode.as_str() {
            "dynamic" => Mode::Dynamic,
            "quasi-static" => Mode::QuasiStatic,
            other => return Err(ConfigError::new(file, "time.mode", format!("unknown mode '{other}' (dynamic or quasi-static)"))),
        };
        let gravity_m_s2 = finite3(file, "gravity_m_s2", self.gravity_m_s2)?;
        let table = match self.table {
            None => None,
            Some(t) => {
                let normal =
                    t.normal.ok_or_else(|| ConfigError::new(file, "table.normal", "missing: the table's unit normal, pointing up out of the table"))?;
                let n = finite3(file, "table.normal", normal)?;
                if n.norm() < 1e-9 {
                    return Err(ConfigError::new(file, "table.normal", "must not be zero"));
                }
                if !(t.mu.is_finite() && t.mu >= 0.0) {
                    return Err(ConfigError::new(file, "table.mu", format!("must be a number >= 0, got {}", t.mu)));
                }
                Some(Plane { point_m: finite3(file, "table.point_m", t.point_m)?, normal: n.normalize(), mu: t.mu })
            }
        };
        let base = match self.base.kind.as_str() {
            "prescribed" => {
                let waypoints = pose_waypoints(file, "base.waypoints", &self.base.waypoints)?;
                if self.base.position_m.is_some() || self.base.rpy_deg.is_some() {
                    return Err(ConfigError::new(file, "base", "a prescribed base moves along its waypoints: position_m and rpy_deg are for kind = \"free\""));
                }
                BaseSpec::Prescribed { waypoints }
            }
            "free" => {
                if !self.base.waypoints.is_empty() {
                    return Err(ConfigError::new(file, "base.waypoints", "a free base has no waypoints (kind = \"prescribed\" has)"));
                }
                BaseSpec::Free { pose: pose(file, "base", self.base.position_m.unwrap_or_default(), self.base.rpy_deg.unwrap_or_default())? }
            }
            other => return Err(ConfigError::new(file, "base.kind", format!("unknown base kind '{other}' (prescribed or free)"))),
        };
        let world_from_robot = match &self.robot {
            Some(r) => pose(file, "robot", r.position_m, r.rpy_deg)?,
            None => Pose::identity(),
        };
        let initial = match self.initial.as_deref() {
            None | Some("rest") => Initial::Rest,
            Some("static") => Initial::Static,
            Some(other) => return Err(ConfigError::new(file, "initial", format!("unknown initial state '{other}' (rest or static)"))),
        };
        let start = match self.time.start.as_deref() {
            None | Some("session") => Start::Session,
            Some("release") if initial == Initial::Static => {
                return Err(ConfigError::new(
                    file,
                    "time.start",
                    "a replay from the release starts at rest in the rod-file shape: initial = \"static\" does not go with it",
                ))
            }
            Some("release") => Start::Release,
            Some(other) => return Err(ConfigError::new(file, "time.start", format!("unknown start '{other}' (session or release)"))),
        };
        let fit_window_s = self.time.fit_window_s.map(|w| check_window(file, "time.fit_window_s", w)).transpose()?;
        let integrator = match self.time.integrator.as_deref() {
            None | Some("implicit-euler") => crate::inertia::Integrator::ImplicitEuler,
            Some("bdf2") => crate::inertia::Integrator::Bdf2,
            Some(other) => return Err(ConfigError::new(file, "time.integrator", format!("unknown integrator '{other}' (implicit-euler or bdf2)"))),
        };
        let contact_points = match self.contact.points.as_deref() {
            None | Some("subsegments") => ContactPoints::Subsegments,
            Some("nodes") => ContactPoints::Nodes,
            Some(other) => return Err(ConfigError::new(file, "contact.points", format!("unknown '{other}' (subsegments or nodes)"))),
        };
        let width = |law: &str| -> Result<f64, ConfigError> {
            let w = self.contact.width_n.ok_or_else(|| ConfigError::new(file, "contact.width_n", format!("the {law} law needs a smoothing width in N")))?;
            positive(file, "contact.width_n", w)
        };
        let law = match self.contact.law.as_deref() {
            None | Some("exact") => Law::Exact,
            Some("sigmoid") => Law::Sigmoid { width_n: width("sigmoid")? },
            Some("trigonometric") => Law::Trigonometric { width_n: width("trigonometric")? },
            Some(other) => return Err(ConfigError::new(file, "contact.law", format!("unknown law '{other}' (exact, sigmoid or trigonometric)"))),
        };
        let contact_scale_n_m = self.contact.scale_n_m.map(|v| positive(file, "contact.scale_n_m", v)).transpose()?;
        let non_negative = |field: &str, v: f64| -> Result<f64, ConfigError> {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(ConfigError::new(file, field, format!("must be >= 0, got {v}")))
            }
        };
        let normal_compliance = match (self.contact.compliance_m_n, self.contact.foundation_modulus_pa) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    file,
                    "contact.compliance_m_n",
                    "give either compliance_m_n (per point) or foundation_modulus_pa (per length), not both",
                ))
            }
            (Some(c), None) => NormalCompliance::PerPoint { compliance_m_n: non_negative("contact.compliance_m_n", c)? },
            (None, Some(k)) => NormalCompliance::Foundation { modulus_pa: Some(positive(file, "contact.foundation_modulus_pa", k)?) },
            (None, None) => NormalCompliance::Foundation { modulus_pa: None },
        };
        let tangential_compliance_m_n = self.contact.tangential_compliance_m_n.map(|c| non_negative("contact.tangential_compliance_m_n", c)).transpose()?;
        let tolerance = positive(file, "solver.tolerance", self.solver.tolerance.unwrap_or(1e-10))?;
        if tolerance < MIN_TOLERANCE {
            return Err(ConfigError::new(
                file,
                "solver.tolerance",
                format!(
                    "{tolerance:e} is below {MIN_TOLERANCE:e}: residuals relative to the problem's own forces cannot get below double precision's rounding"
                ),
            ));
        }
        let max_iterations = self.solver.max_iterations.unwrap_or(40);
        if max_iterations == 0 {
            return Err(ConfigError::new(file, "solver.max_iterations", "must be at least 1"));
        }
        let mut loads = vec![];
        for (i, l) in self.loads.iter().enumerate() {
            let field = |f: &str| format!("load[{i}].{f}");
            let need3 = |v: Option<[f64; 3]>, f: &str| -> Result<Vec3, ConfigError> {
                finite3(file, &field(f), v.ok_or_else(|| ConfigError::new(file, &field(f), format!("missing for kind = \"{}\"", l.kind)))?)
            };
            let end_s = l.end_s.unwrap_or(f64::INFINITY);
            if !(l.start_s.is_finite() && end_s > l.start_s) {
                return Err(ConfigError::new(file, &field("end_s"), "must be later than start_s"));
            }
            loads.push(match l.kind.as_str() {
                "body_force" => LoadSpec::BodyForce { total_force_n: need3(l.total_force_n, "total_force_n")?, start_s: l.start_s, end_s },
                "point_force" | "follower_force" => LoadSpec::PointForce {
                    arc_m: l.arc_m.ok_or_else(|| ConfigError::new(file, &field("arc_m"), format!("missing for kind = \"{}\"", l.kind)))?,
                    offset_body_m: {
                        let o = l.offset_m.unwrap_or([0.0; 2]);
                        finite3(file, &field("offset_m"), [0.0, o[0], o[1]])?
                    },
                    force_n: need3(l.force_n, "force_n")?,
                    follower: l.kind == "follower_force",
                    start_s: l.start_s,
                    end_s,
                },
                "point_mass" => LoadSpec::PointMass {
                    arc_m: l.arc_m.ok_or_else(|| ConfigError::new(file, &field("arc_m"), "missing for kind = \"point_mass\""))?,
                    offset_body_m: {
                        let o = l.offset_m.unwrap_or([0.0; 2]);
                        finite3(file, &field("offset_m"), [0.0, o[0], o[1]])?
                    },
                    mass_kg: positive(file, &field("mass_kg"), l.mass_kg.unwrap_or(f64::NAN))?,
                    hook_friction_radius_m: match l.hook_friction_radius_m {
                        Some(r) if !(r.is_finite() && r >= 0.0) => {
                            return Err(ConfigError::new(file, &field("hook_friction_radius_m"), format!("must be a number >= 0, got {r}")))
                        }
                        r => r.unwrap_or(0.0),
                    },
                },
                "tow" => LoadSpec::Tow {
                    arc_m: l.arc_m.unwrap_or(0.0),
                    velocity_m_s: need3(l.velocity_m_s, "velocity_m_s")?,
                    stiffness_n_m: positive(file, &field("stiffness_n_m"), l.stiffness_n_m.unwrap_or(f64::NAN))?,
                },
                "cable" => {
                    let cable = l
                        .cable
                        .clone()
                        .ok_or_else(|| ConfigError::new(file, &field("cable"), "missing for kind = \"cable\" (a cable name of the rod file)"))?;
                    let waypoints = l.tension_waypoints.clone().unwrap_or_default();
                    if waypoints.is_empty() {
                        return Err(ConfigError::new(file, &field("tension_waypoints"), "missing for kind = \"cable\": [[t_s, tension_n], ...]"));
                    }
                    for (k, w) in waypoints.iter().enumerate() {
                        if !(w[0].is_finite() && w[1].is_finite() && w[1] >= 0.0) || (k > 0 && w[0] <= waypoints[k - 1][0]) {
                            return Err(ConfigError::new(file, &field(&format!("tension_waypoints[{k}]")), "times increasing, tensions >= 0"));
                        }
                    }
                    LoadSpec::Cable { cable, waypoints }
                }
                other => {
                    return Err(ConfigError::new(
                        file,
                        &field("kind"),
                        format!("unknown load '{other}' (body_force, point_force, follower_force, point_mass, tow or cable)"),
                    ))
                }
            });
        }
        let scene = Scene {
            step_s,
            duration_s,
            mode,
            gravity_m_s2,
            table,
            base,
            world_from_robot,
            initial,
            start,
            fit_window_s,
            integrator,
            contact_points,
            law,
            contact_scale_n_m,
            normal_compliance,
            tangential_compliance_m_n,
            tolerance,
            max_iterations,
            loads,
            tip: self.tip.as_ref().map(|t| t.validate(file)).transpose()?,
        };
        scene.check_time().map_err(|m| ConfigError::new(file, "time", m))?;
        Ok(scene)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[time]
step_s = 0.005
duration_s = 1.0
mode = "dynamic"
[table]
normal = [0.0, 0.0, 1.0]
mu = 0.4
[base]
kind = "free"
position_m = [0.0, 0.0, 0.025]
[[load]]
kind = "body_force"
total_force_n = [2.0, 0.0, 0.0]
"#;

    #[test]
    fn parses_a_scene() {
        let s = Scene::from_toml_str(GOOD, "good.toml").unwrap();
        assert_eq!(s.mode, Mode::Dynamic);
        assert_eq!(s.steps(), 200);
        assert_eq!(s.table.unwrap().mu, 0.4);
        assert!(matches!(s.base, BaseSpec::Free { .. }));
    }

    fn err(text: &str) -> String {
        Scene::from_toml_str(text, "bad.toml").unwrap_err().to_string()
    }

    #[test]
    fn bad_scenes_name_file_and_field() {
        let e = err(&GOOD.replace("normal = [0.0, 0.0, 1.0]\n", ""));
        assert!(e.starts_with("bad.toml: table.normal"), "{e}");
        let e = err(&GOOD.replace("mu = 0.4", "mu = -0.1"));
        assert!(e.starts_with("bad.toml: table.mu"), "{e}");
        let e = err(&GOOD.replace("step_s = 0.005", "step_s = 10.0"));
        assert!(e.contains("longer than the duration"), "{e}");
        let e = err(&GOOD.replace("step_s = 0.005", "step_s = 1e-9"));
        assert!(e.contains("1.000e9 steps, more than 1000000"), "{e}");
        let e = err(&GOOD.replace("step_s = 0.005", "step_s = 0.0"));
        assert!(e.starts_with("bad.toml: time.step_s"), "{e}");
        let e =
            err(&GOOD.replace("kind = \"free\"\nposition_m = [0.0, 0.0, 0.025]", "kind = \"prescribed\"\nwaypoints = [[0, 0,0,0, 0,0,0], [0, 0,0,0, 0,0,0]]"));
        assert!(e.starts_with("bad.toml: base.waypoints[1]") && e.contains("monotonic"), "{e}");
        let e = err(&GOOD.replace("\"dynamic\"", "\"fast\""));
        assert!(e.contains("time.mode"), "{e}");
        assert!(!e.contains('\n'));
    }
}
