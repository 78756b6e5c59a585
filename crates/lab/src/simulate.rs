//! Simulating an experiment: the rod held by the robot (a session's robot
//! stream, a trajectory, or the scene's waypoints) on a table with
//! friction, written as tables (`sim*.parquet`, `sim_markers.parquet`: a
//! simulation reads like a recording) and a report page. Also the friction
//! benchmark `verify slip-onset`.

use crate::error::{Context, Error, Result};
use crate::progress::Progress;
use crate::provenance::{file_row, version_row};
use report::page::{Block, Chart, Page, Series};
use rod::Rod;
use session::{MarkerRow, RigFrames, SessionDir, Table};
use sim::{BaseMotion, ContactState, Scene, SimError, Simulator, StepRecord};
use std::path::{Path, PathBuf};

/// Where the rod's base goes.
#[derive(Clone, Debug)]
pub enum BaseSource {
    /// A session's robot stream (flange poses on host time); the session's
    /// frames place robot, table and gravity.
    Session(SessionDir),
    /// Flange poses `(t_s, [x, y, z, rx, ry, rz])` in the robot's base
    /// frame, read from `path`.
    Trajectory { samples: Vec<(f64, [f64; 6])>, path: PathBuf },
    /// The scene's own waypoints (or a free base).
    Scene,
}

/// One simulation to run and write.
#[derive(Clone, Debug)]
pub struct SimulateJob<'a> {
    /// The rod to simulate (identified parameters or a truth already applied).
    pub rod: &'a Rod,
    pub rod_path: &'a Path,
    pub scene: Scene,
    pub scene_path: &'a Path,
    /// For the report's provenance.
    pub params_path: Option<&'a Path>,
    pub base: BaseSource,
    /// The rig's frames (robot base, gravity, table) when no session gives them.
    pub rig_frames: Option<RigFrames>,
    /// Overrides the scene's duration (a session: default the robot log's span).
    pub duration_s: Option<f64>,
    pub out: &'a Path,
    /// A session's damaged chunks: refused, or left out with a warning.
    pub damaged: session::Damaged,
    /// A session's replay: its hung mass from this loads file's
    /// `[[tip_mass]]` (a point mass with its inertia), and a tip held by a
    /// second robot from its `[tip_hold]` (the robot's recorded poses).
    pub session_loads: Option<&'a crate::loads::Loads>,
}

/// A finished simulation.
pub struct Simulated {
    pub records: Vec<StepRecord>,
    /// Host time of the simulation's t = 0 (session-driven runs).
    pub t0_host_ns: Option<i64>,
    pub summary: Summary,
    /// The scene as simulated: the rig's frames applied, the duration set.
    pub scene: Scene,
    /// Where the robot base, gravity and table came from, when not the scene.
    pub frames_from: Option<String>,
}

impl Simulated {
    /// Step times \[s\].
    pub fn times(&self) -> Vec<f64> {
        self.records.iter().map(|r| r.t_s).collect()
    }
}

/// Samples `f` of a simulation's records (step times `t_rec`) at `t`,
/// linear between steps; `None` outside the simulated span.
pub fn at_records<T>(t_rec: &[f64], records: &[StepRecord], t: f64, f: impl Fn(&StepRecord) -> T) -> Option<T>
where
    T: std::ops::Mul<f64, Output = T> + std::ops::Add<Output = T>,
{
    lie::series::bracket(t_rec, t).map(|k| lie::series::blend(k, |i| f(&records[i])))
}

/// Puts a scene in a rig's world: robot base, gravity, table plane (the
/// friction stays the scene's).
pub fn apply_rig_frames(scene: &mut Scene, f: &RigFrames) {
    scene.world_from_robot = f.world_from_robot();
    scene.gravity_m_s2 = f.gravity();
    if let (Some(t), Some(plane)) = (f.table, scene.table.as_mut()) {
        plane.point_m = lie::Vec3::from(t.point_m);
        plane.normal = lie::Vec3::from(t.normal).normalize();
    }
}

/// A scene's own frames (for a session made without a rig file).
pub fn frames_of_scene(scene: &Scene) -> RigFrames {
    RigFrames {
        robot_base: lie::FramePose::from_pose(&scene.world_from_robot),
        gravity_m_s2: scene.gravity_m_s2.into(),
        table: scene.table.as_ref().map(|p| session::TablePlane { point_m: p.point_m.into(), normal: p.normal.into() }),
        ..RigFrames::default()
    }
}

/// The base motion and the host time of t = 0.
fn base_motion(job: &SimulateJob, scene: &mut Scene, warnings: &mut Vec<String>) -> Result<(BaseMotion, Option<i64>)> {
    let scene_name = job.scene_path.display().to_string();
    // Flange samples in the robot's frame (`world_from_robot`: the scene's
    // or the rig's), or a clamp already in the world (motion capture).
    let from_samples = |scene: &Scene, samples: &[(f64, [f64; 6])], world_from_robot: &lie::Pose, what: &Path| -> Result<BaseMotion> {
        if !matches!(scene.base, sim::BaseSpec::Prescribed { .. }) {
            return Err(Error::input(format!("{scene_name}: base.kind: a base trajectory needs kind = \"prescribed\"")));
        }
        BaseMotion::from_robot_samples(samples, world_from_robot, &job.rod.base).input(what.display())
    };
    match &job.base {
        BaseSource::Session(dir) => {
            // The scene's frames are the rig's here (applied before): a
            // robot's flange is placed by them, a mocap clamp is in the world.
            let (tcp, world_from_robot) =
                crate::data::base_log(dir, scene.world_from_robot, job.damaged, warnings)?.ok_or_else(|| Error::input(crate::data::no_base(dir)))?;
            let mut t0 = tcp[0].t_host_ns;
            let mut replay_s = None;
            if scene.start == sim::Start::Release {
                // From the release, at rest in the rod-file shape (the held
                // pose the markers were measured in), for the scene's
                // duration or to the session's end.
                let release_s = dir.meta()?.and_then(|m| m.release_s).ok_or_else(|| {
                    Error::input(format!(
                        "{scene_name}: time.start = \"release\": {} has no release_s (a motion-capture session imported with a map's [reference] window finds it)",
                        dir.meta_path().display()
                    ))
                })?;
                t0 += (release_s * 1e9).round() as i64;
                scene.initial = sim::scene::Initial::Rest;
                replay_s = Some(scene.duration_s);
                warnings
                    .push(format!("{}: replayed from its release at t = {release_s:.3} s (session.toml), at rest in the rod-file shape", dir.path().display()));
            }
            // Samples from one before t0 (the base is interpolated at t0).
            let first = tcp.iter().rposition(|s| s.t_host_ns <= t0).unwrap_or(0);
            let samples: Vec<(f64, [f64; 6])> = tcp[first..].iter().map(|s| ((s.t_host_ns - t0) as f64 * 1e-9, s.pose)).collect();
            let span_s = samples.last().map_or(0.0, |s| s.0);
            // The robot log's span, unless asked otherwise.
            scene.duration_s = job.duration_s.or(replay_s.map(|d| d.min(span_s))).unwrap_or(span_s);
            Ok((from_samples(scene, &samples, &world_from_robot, dir.path())?, Some(t0)))
        }
        BaseSource::Trajectory { samples, path } => Ok((from_samples(scene, samples, &scene.world_from_robot, path)?, None)),
        BaseSource::Scene => match BaseMotion::from_scene(scene, job.rod).input(&scene_name)? {
            Some(m) => Ok((m, None)),
            None => Err(Error::input(format!("{scene_name}: base.waypoints: a prescribed base without waypoints needs --trajectory or --session"))),
        },
    }
}

/// A job made ready to simulate: the scene in the rig's world, its
/// duration set, the base motion, and the host time of t = 0.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub scene: Scene,
    pub motion: BaseMotion,
    pub t0_host_ns: Option<i64>,
    pub frames_from: Option<String>,
    /// What reading the session's base log left out (damaged chunks).
    pub warnings: Vec<String>,
}

impl Prepared {
    /// A simulator of `rod` in the prepared scene (changed by the caller,
    /// e.g. its friction, when a fit tries values).
    pub fn simulator(&self, rod: &Rod, scene: &Scene, scene_path: &Path) -> Result<Simulator> {
        Simulator::new(rod, scene, self.motion.clone()).map_err(|e| match e {
            SimError::Input(m) => Error::input(format!("{}: {m}", scene_path.display())),
            other => other.into(),
        })
    }
}

/// Reads what a job needs to simulate (the session's frames and robot
/// log, a trajectory, or the scene's waypoints), without simulating.
pub fn prepare(job: &SimulateJob) -> Result<Prepared> {
    let mut scene = job.scene.clone();
    let frames = match &job.base {
        BaseSource::Session(dir) => dir.meta()?.map(|m| (m.frames, dir.meta_path().display().to_string())),
        _ => job.rig_frames.map(|f| (f, "the rig's frames given".to_string())),
    };
    let frames_from = frames.as_ref().map(|(_, from)| from.clone());
    if let Some((f, _)) = &frames {
        // One world: the rig places the robot, the table and gravity.
        apply_rig_frames(&mut scene, f);
    }
    if let Some(d) = job.duration_s {
        crate::error::positive("--duration-s", d)?;
        scene.duration_s = d;
    }
    let mut warnings = vec![];
    let (motion, t0_host_ns) = base_motion(job, &mut scene, &mut warnings)?;
    if let (Some(loads), BaseSource::Session(dir), Some(t0)) = (job.session_loads, &job.base, t0_host_ns) {
        // Session time: t_host_ns counts from the session's start.
        let (from_s, duration_s) = (t0 as f64 * 1e-9, scene.duration_s);
        warnings.extend(add_hung_mass(&mut scene, job.rod, loads, &dir.name(), from_s, from_s + duration_s)?);
        warnings.extend(replay_cable_tensions(&mut scene, job.rod, loads, dir, from_s, job.damaged)?);
        if let Some(tip) = &loads.file.tip_hold {
            let clamp = crate::data::tip_clamp_log(dir, tip, &loads.name(), job.damaged, &mut warnings)?;
            scene.tip = Some(tip_waypoints(&clamp, from_s));
        }
    }
    Ok(Prepared { scene, motion, t0_host_ns, frames_from, warnings })
}

/// The session's recorded cable tensions (its loads file's `[[cable]]`
/// channels, one per cable of the rod in order) in place of the scene's:
/// each cable's readings as its tension waypoints, in replay seconds from
/// `from_s`, a reading below zero taken as slack. Notes: one saying so
/// (none when the loads file reads no cable), and damaged chunks left out.
fn replay_cable_tensions(
    scene: &mut Scene,
    rod: &Rod,
    loads: &crate::loads::Loads,
    dir: &SessionDir,
    from_s: f64,
    damaged: session::Damaged,
) -> Result<Vec<String>> {
    let (mut replayed, mut notes) = (vec![], vec![]);
    for (channel, cable) in loads.file.cables.iter().zip(&rod.cables) {
        let path = dir.stream(&channel.stream);
        let stream = crate::data::read_stream(dir, &channel.stream, &[&channel.column], damaged, &mut notes, |c| {
            Error::input(format!("{}: [[cable]] column '{c}': stream {} has no such column", loads.name(), path.display()))
        })?;
        let v = &stream.columns[&channel.column];
        let mut waypoints: Vec<[f64; 2]> =
            stream.t_s.iter().zip(v).filter(|(_, x)| x.is_finite()).map(|(t, x)| [t - from_s, (channel.scale * x + channel.offset).max(0.0)]).collect();
        // Waypoints strictly increase in time: a repeated time keeps its first reading.
        waypoints.dedup_by(|b, a| b[0] <= a[0]);
        if waypoints.is_empty() {
            return Err(Error::input(format!(
                "{}: stream '{}' has no reading of '{}' for cable {}",
                path.display(),
                channel.stream,
                channel.column,
                cable.name
            )));
        }
        scene.loads.retain(|l| !matches!(l, sim::LoadSpec::Cable { cable: c, .. } if *c == cable.name));
        scene.loads.push(sim::LoadSpec::Cable { cable: cable.name.clone(), waypoints });
        replayed.push(cable.name.clone());
    }
    if !replayed.is_empty() {
        notes.insert(
            0,
            format!("{}: the cables' tensions replayed from the session's readings ({}), in place of the scene's", loads.name(), replayed.join(", ")),
        );
    }
    Ok(notes)
}

/// The tip's hold over a replay: the recorded clamp poses (world, session
/// seconds, strictly increasing: [`crate::data::tip_clamp_log`]) from the
/// one before `from_s` on, as `[tip]` waypoints (replay seconds, UR-style
/// poses).
fn tip_waypoints(clamp: &[(f64, lie::Pose)], from_s: f64) -> sim::scene::TipSpec {
    let first = clamp.iter().rposition(|s| s.0 <= from_s).unwrap_or(0);
    let waypoints = clamp[first..]
        .iter()
        .map(|(t, pose)| {
            let ur = lie::trajectory::pose_to_ur(pose);
            [t - from_s, ur[0], ur[1], ur[2], ur[3], ur[4], ur[5]]
        })
        .collect();
    sim::scene::TipSpec { waypoints, rotation_given: true }
}

/// Runs a simulation job and writes its tables and report into `job.out`.
pub fn run(job: &SimulateJob, progress: &dyn Progress) -> Result<Simulated> {
    run_prepared(job, prepare(job)?, progress)
}

/// [`run`] of a job already [`prepare`]d (its files read once, e.g. for
/// [`replay`]s of the same job too).
pub fn run_prepared(job: &SimulateJob, prepared: Prepared, progress: &dyn Progress) -> Result<Simulated> {
    let mut sim = prepared.simulator(job.rod, &prepared.scene, job.scene_path)?;
    let Prepared { scene, t0_host_ns, frames_from, warnings, .. } = prepared;
    let task = progress.task("simulate", Some(scene.steps() as u64));
    let started = std::time::Instant::now();
    let (records, failure) = sim.run_until_failure(|done, _| task.set(done as u64));
    drop(task);
    let wall = started.elapsed().as_secs_f64();
    std::fs::create_dir_all(job.out).map_err(|e| Error::io(format!("{}: {e}", job.out.display())))?;
    // What was simulated is written even when a step failed: the tables
    // and the page up to the failure, the page saying where it stopped.
    write_tables(job.out, &sim, &records, t0_host_ns)?;
    let mut summary = summarise(&sim, &records, wall);
    summary.stopped = failure.as_ref().map(|e| e.to_string());
    summary.simulator_warnings.extend(warnings);
    let page = report_page(job, &scene, &records, &summary);
    report::page::write_page(job.out, &page, &summary)?;
    if let Some(e) = failure {
        let reached = records.last().map_or(0.0, |r| r.t_s);
        return Err(Error::from(e).context(format!("simulation stopped (the run up to t = {reached:.4} s is written in {})", job.out.display())));
    }
    Ok(Simulated { records, t0_host_ns, summary, scene, frames_from })
}

/// A replay of a job with another rod in its place, nothing written: its
/// records up to where it stopped, and why it stopped (none: it reached
/// the scene's end). It crosses processes whole ([`Replay::to_bytes`]): a
/// prediction band's replays may run on another machine.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Replay {
    pub records: Vec<StepRecord>,
    pub stopped: Option<String>,
}

impl Replay {
    /// CBOR: every float as its exact bits, a tenth of JSON's size.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = vec![];
        ciborium::into_writer(self, &mut bytes).expect("a replay encodes into memory");
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Replay> {
        ciborium::from_reader(bytes).map_err(|e| Error::input(format!("a replay's bytes: {e}")))
    }
}

/// The job's replay (`prepared`) with `rod` in its place (e.g. other
/// parameters: a prediction band's). A start whose equilibrium is not
/// found with these values is a replay that stopped at once.
pub fn replay(job: &SimulateJob, prepared: &Prepared, rod: &Rod) -> Result<Replay> {
    match prepared.simulator(rod, &prepared.scene, job.scene_path) {
        Ok(mut sim) => {
            let (records, failure) = sim.run_until_failure(|_, _| {});
            Ok(Replay { records, stopped: failure.map(|e: SimError| e.to_string()) })
        }
        Err(e) if e.kind() == crate::Kind::Computation => Ok(Replay { records: vec![], stopped: Some(e.to_string()) }),
        Err(e) => Err(e),
    }
}

/// Figures of a run, written to summary.json.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    pub steps: usize,
    pub simulated_s: f64,
    pub wall_time_s: f64,
    pub real_time_factor: f64,
    /// Iterations per step (Newton's, and Broyden's between tangents).
    pub mean_newton_iterations: f64,
    /// Tangents formed per step (Broyden steps reuse one over many steps).
    pub tangents_per_step: f64,
    pub max_substeps: usize,
    pub mass_kg: f64,
    pub first_touch_s: Option<f64>,
    pub tip_stick_steps: usize,
    pub tip_slide_steps: usize,
    pub max_normal_force_n: f64,
    pub final_tip_slide_m: f64,
    pub final_tip_slip_m: f64,
    pub final_base_force_flange_n: [f64; 3],
    /// A held tip: the force its hold exerts on the rod at the end \[N\]
    /// (world; a sensor in the tip's clamp reads its negative).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_tip_hold_force_n: Option<[f64; 3]>,
    /// Extreme surface fibre strains over the run (tension > 0) and the
    /// smallest cable stretch |Q + K x d + d'| (model validity).
    pub max_fibre_strain: f64,
    pub min_fibre_strain: f64,
    pub min_cable_stretch: Option<f64>,
    pub validity_warnings: Vec<String>,
    /// What the simulator had to say about the run (e.g. a contact set the
    /// strain basis cannot follow, and what it did about it).
    pub simulator_warnings: Vec<String>,
    /// Why the run stopped before the scene's end (none: it ran to the end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

fn summarise(sim: &Simulator, records: &[StepRecord], wall: f64) -> Summary {
    let tip = |r: &StepRecord| r.contacts.last().map(|c| c.state);
    let last = records.last().expect("at least the initial record");
    let validity = records
        .iter()
        .map(|r| rod::validity::validity(&sim.model, &nalgebra::DVector::from_column_slice(&r.q)))
        .reduce(rod::validity::Validity::worst)
        .expect("at least the initial record");
    Summary {
        steps: records.len() - 1,
        simulated_s: last.t_s,
        wall_time_s: wall,
        real_time_factor: last.t_s / wall.max(1e-12),
        mean_newton_iterations: records[1..].iter().map(|r| r.iterations as f64).sum::<f64>() / (records.len() - 1).max(1) as f64,
        tangents_per_step: sim.tangents() as f64 / (records.len() - 1).max(1) as f64,
        max_substeps: records.iter().map(|r| r.substeps).max().unwrap_or(0),
        mass_kg: sim.mass_kg(),
        first_touch_s: records.iter().find(|r| r.contacts.iter().any(|c| c.state != ContactState::Free)).map(|r| r.t_s),
        tip_stick_steps: records.iter().filter(|r| tip(r) == Some(ContactState::Stick)).count(),
        tip_slide_steps: records.iter().filter(|r| tip(r) == Some(ContactState::Slide)).count(),
        max_normal_force_n: records.iter().map(|r| r.normal_force_n).fold(0.0, f64::max),
        final_tip_slide_m: last.tip_slide_m,
        final_tip_slip_m: last.tip_slip_m,
        final_base_force_flange_n: [last.base_wrench_flange[3], last.base_wrench_flange[4], last.base_wrench_flange[5]],
        final_tip_hold_force_n: last.tip_hold_wrench.map(|w| [w[3], w[4], w[5]]),
        max_fibre_strain: validity.max_fibre_strain,
        min_fibre_strain: validity.min_fibre_strain,
        min_cable_stretch: validity.min_cable_stretch.map(|c| c.0),
        validity_warnings: validity.warnings(&sim.model.rod.cables),
        simulator_warnings: sim.warnings().to_vec(),
        stopped: None,
    }
}

fn write_tables(out: &Path, sim: &Simulator, records: &[StepRecord], t0_host_ns: Option<i64>) -> Result<()> {
    let mut t = Table::new();
    t.push_i64("step", records.iter().map(|r| r.step as i64).collect());
    t.push_f64("t_s", records.iter().map(|r| r.t_s).collect());
    if let Some(t0) = t0_host_ns {
        t.push_i64("t_host_ns", records.iter().map(|r| t0 + (r.t_s * 1e9).round() as i64).collect());
    }
    let col = |f: &dyn Fn(&StepRecord) -> f64| records.iter().map(f).collect::<Vec<f64>>();
    t.push_f64("normal_force_n", col(&|r| r.normal_force_n));
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("tangential_force_{a}_n"), col(&|r| r.tangential_force_n[i]));
    }
    t.push_f64("tip_slide_m", col(&|r| r.tip_slide_m));
    t.push_f64("tip_slip_m", col(&|r| r.tip_slip_m));
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("tip_{a}_m"), col(&|r| r.tip_m[i]));
    }
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("base_{a}_m"), col(&|r| r.base_pose.pos[i]));
    }
    for (i, name) in ["base_mx_nm", "base_my_nm", "base_mz_nm", "base_fx_n", "base_fy_n", "base_fz_n"].iter().enumerate() {
        t.push_f64(name, col(&|r| r.base_wrench_flange[i]));
    }
    if records[0].tip_hold_wrench.is_some() {
        // The tip's hold on the rod: moment about the tip, force (world).
        for (i, name) in ["tip_hold_mx_nm", "tip_hold_my_nm", "tip_hold_mz_nm", "tip_hold_fx_n", "tip_hold_fy_n", "tip_hold_fz_n"].iter().enumerate() {
            t.push_f64(name, col(&|r| r.tip_hold_wrench.map_or(f64::NAN, |w| w[i])));
        }
    }
    t.push_f64("kinetic_energy_j", col(&|r| r.kinetic_energy_j));
    t.push_f64("elastic_energy_j", col(&|r| r.elastic_energy_j));
    t.push_f64("gravity_energy_j", col(&|r| r.gravity_energy_j));
    t.push_i64("newton_iterations", records.iter().map(|r| r.iterations as i64).collect());
    t.push_i64("substeps", records.iter().map(|r| r.substeps as i64).collect());
    t.push_f64("wall_time_s", col(&|r| r.wall_time_s));
    t.write(&out.join("sim.parquet"))?;

    let node_x = &sim.model.node_x_m;
    let mut t = Table::new();
    let rows = || records.iter().flat_map(|r| r.node_strain.iter().enumerate().map(move |(k, s)| (r, k, s)));
    t.push_i64("step", rows().map(|(r, _, _)| r.step as i64).collect());
    t.push_f64("t_s", rows().map(|(r, _, _)| r.t_s).collect());
    t.push_u32("node", rows().map(|(_, k, _)| k as u32).collect());
    t.push_f64("arc_m", rows().map(|(_, k, _)| node_x[k]).collect());
    for (c, name) in session::STRAIN_NAMES.iter().enumerate() {
        t.push_f64(name, rows().map(|(_, _, s)| if c == 3 { s[c] - 1.0 } else { s[c] }).collect());
    }
    t.write(&out.join("sim_nodes.parquet"))?;

    let mut t = Table::new();
    let rows = || records.iter().flat_map(|r| r.contacts.iter().enumerate().map(move |(k, c)| (r, k, c)));
    t.push_i64("step", rows().map(|(r, _, _)| r.step as i64).collect());
    t.push_f64("t_s", rows().map(|(r, _, _)| r.t_s).collect());
    t.push_u32("point", rows().map(|(_, k, _)| k as u32).collect());
    t.push_f64("arc_m", rows().map(|(_, _, c)| c.arc_m).collect());
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("{a}_m"), rows().map(|(_, _, c)| c.point_m[i]).collect());
    }
    t.push_f64("gap_m", rows().map(|(_, _, c)| c.gap_m).collect());
    t.push_f64("normal_force_n", rows().map(|(_, _, c)| c.normal_force_n).collect());
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("tangential_force_{a}_n"), rows().map(|(_, _, c)| c.tangential_force_n[i]).collect());
    }
    for (i, a) in ["x", "y", "z"].iter().enumerate() {
        t.push_f64(&format!("slip_velocity_{a}_m_s"), rows().map(|(_, _, c)| c.slip_velocity_m_s[i]).collect());
    }
    t.push_str("state", rows().map(|(_, _, c)| c.state.label().to_string()).collect());
    t.write(&out.join("sim_contacts.parquet"))?;

    // The tracker's marker table: positions in the world frame, pixels NaN.
    let markers: Vec<MarkerRow> = records
        .iter()
        .flat_map(|r| {
            r.markers_m.iter().enumerate().map(move |(m, p)| MarkerRow {
                frame: r.step as i64,
                t_s: r.t_s,
                t_host_ns: t0_host_ns.map(|t0| t0 + (r.t_s * 1e9).round() as i64),
                marker: m as u32,
                u_px: f64::NAN,
                v_px: f64::NAN,
                x_m: p.x,
                y_m: p.y,
                z_m: p.z,
                area_px: f64::NAN,
                flags: 0,
            })
        })
        .collect();
    session::write_markers(&out.join("sim_markers.parquet"), &markers)?;
    Ok(())
}

fn report_page(job: &SimulateJob, scene: &Scene, records: &[StepRecord], s: &Summary) -> Page {
    let rod = job.rod;
    let t: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let series = |f: &dyn Fn(&StepRecord) -> f64| -> Vec<(f64, f64)> { t.iter().copied().zip(records.iter().map(f)).collect() };
    let nodes = records.first().map_or(0, |r| r.node_strain.len());
    let strain_chart = |c: usize, name: &str, label: &str| Chart {
        name: format!("strain_{name}"),
        title: format!("{label} at the section boundaries"),
        x_label: "t [s]".into(),
        y_label: label.into(),
        series: (0..nodes).map(|k| Series::line(format!("node {k}"), series(&|r: &StepRecord| r.node_strain[k][c]), k)).collect(),
        diagonal: false,
    };
    let mut blocks = vec![Block::Text(format!(
        "Rod {}, scene {} ({} mode, step {} ms, {} s). Mass {:.4} kg. {} steps in {:.2} s of wall time: {:.1} x real time, {:.2} iterations and {:.3} tangents per step.",
        job.rod_path.display(),
        job.scene_path.display(),
        match scene.mode {
            sim::Mode::Dynamic => "dynamic",
            sim::Mode::QuasiStatic => "quasi-static",
        },
        scene.step_s * 1e3,
        scene.duration_s,
        s.mass_kg,
        s.steps,
        s.wall_time_s,
        s.real_time_factor,
        s.mean_newton_iterations,
        s.tangents_per_step
    ))];
    if let Some(why) = &s.stopped {
        blocks.push(Block::Warnings(vec![format!("STOPPED at t = {:.4} s, before the scene's end: {why}", s.simulated_s)]));
    }
    blocks.extend([
        Block::Chart(strain_chart(1, "ky", "curvature K_y [1/m]")),
        Block::Chart(strain_chart(2, "kz", "curvature K_z [1/m]")),
        Block::Chart(Chart {
            name: "strain_markers_ky".into(),
            title: "Curvature K_y at the markers (control points)".into(),
            x_label: "t [s]".into(),
            y_label: "K_y [1/m]".into(),
            series: (0..rod.markers.len())
                .map(|m| Series::line(format!("marker {m} (X = {:.3} m)", rod.markers[m].arc_m), series(&|r: &StepRecord| r.marker_strain[m][1]), m))
                .collect(),
            diagonal: false,
        }),
        Block::Chart(Chart {
            name: "contact_forces".into(),
            title: "Total contact force".into(),
            x_label: "t [s]".into(),
            y_label: "force [N]".into(),
            series: vec![
                Series::line("normal", series(&|r: &StepRecord| r.normal_force_n), 0),
                Series::line("tangential |T|", series(&|r: &StepRecord| r.tangential_force_n.norm()), 1),
            ],
            diagonal: false,
        }),
        Block::Chart(Chart {
            name: "tip_slide".into(),
            title: "Tip slide distance along the table".into(),
            x_label: "t [s]".into(),
            y_label: "distance [mm]".into(),
            series: vec![
                Series::line("tip (centre line) since touch", series(&|r: &StepRecord| r.tip_slide_m * 1e3), 0),
                Series::dashed("contact point path", series(&|r: &StepRecord| r.tip_slip_m * 1e3), 1),
            ],
            diagonal: false,
        }),
        Block::Chart(Chart {
            name: "base_force".into(),
            title: "Force on the flange (flange frame)".into(),
            x_label: "t [s]".into(),
            y_label: "force [N]".into(),
            series: ["F_x", "F_y", "F_z"].iter().enumerate().map(|(i, l)| Series::line(*l, series(&|r: &StepRecord| r.base_wrench_flange[3 + i]), i)).collect(),
            diagonal: false,
        }),
    ]);
    if rod.markers.len() > 1 {
        blocks.push(Block::Chart(Chart {
            name: "markers_z".into(),
            title: "Marker heights".into(),
            x_label: "t [s]".into(),
            y_label: "z [m]".into(),
            series: (0..rod.markers.len()).map(|m| Series::line(format!("marker {m}"), series(&|r: &StepRecord| r.markers_m[m].z), m)).collect(),
            diagonal: false,
        }));
    }
    let mut provenance = vec![
        version_row(),
        file_row(format!("rod {}", job.rod_path.display()), job.rod_path),
        file_row(format!("scene {}", job.scene_path.display()), job.scene_path),
    ];
    if let Some(p) = job.params_path {
        provenance.push(file_row(format!("params {}", p.display()), p));
    }
    match &job.base {
        BaseSource::Trajectory { path, .. } => provenance.push(file_row(format!("trajectory {}", path.display()), path)),
        BaseSource::Session(dir) => provenance.push(("session".into(), dir.path().display().to_string())),
        BaseSource::Scene => {}
    }
    Page { title: "rodlab simulate".into(), blocks, provenance }
}

/// The slip-onset benchmark's points, written with a plot into `out`.
pub fn verify_slip_onset(out: &Path, progress: &dyn Progress) -> Result<Vec<sim::benchmarks::SlipOnsetPoint>> {
    let forces: Vec<f64> = (0..=21).map(|k| 0.5 * k as f64).chain([3.9, 4.2]).collect();
    let task = progress.task("slip onset", Some(forces.len() as u64));
    let mut points = vec![];
    for (k, f) in forces.iter().enumerate() {
        points.push(sim::benchmarks::slip_onset(*f, 1.0)?);
        task.set(k as u64 + 1);
    }
    drop(task);
    points.sort_by(|a, b| a.force_n.total_cmp(&b.force_n));
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: {e}", out.display())))?;
    crate::tables::write_time_table(
        &out.join("slip_onset.csv"),
        &["force_n", "kinetic_energy_j", "analytic_j"],
        points.iter().map(|p| (p.force_n, [p.kinetic_energy_j, p.analytic_j])),
    )?;
    let chart = Chart {
        name: "slip_onset".into(),
        title: "Axial slip onset (DisMech IV-C): kinetic energy after 1 s".into(),
        x_label: "push F [N]".into(),
        y_label: "kinetic energy [J]".into(),
        series: vec![
            Series::line("analytic (t^2/2m)(F - mu m g)^2", points.iter().map(|p| (p.force_n, p.analytic_j)).collect(), 0),
            Series::points("rodlab", points.iter().map(|p| (p.force_n, p.kinetic_energy_j)).collect(), 1),
        ],
        diagonal: false,
    };
    let page = Page {
        title: "Slip onset".into(),
        blocks: vec![
            Block::Text("Rod of L = 1 m, r = 0.025 m, m = 1 kg, E = 1e5 Pa on a table with mu = 0.4, g = 9.8, pushed along its axis by F spread over its mass for 1 s, from rest.".into()),
            Block::Chart(chart),
        ],
        provenance: vec![version_row()],
    };
    report::page::write_page(out, &page, &points.iter().map(|p| (p.force_n, p.kinetic_energy_j, p.analytic_j)).collect::<Vec<_>>())?;
    Ok(points)
}

/// The partial-slip benchmark: the shipped silicone rod lying on the table
/// (`configs/rod/silicone-rod.toml`, `configs/scene/lying-rod-pull.toml`),
/// pulled at its base; every step's base force against the bar on a Coulomb
/// foundation, written with a plot into `out`. Returns the points and the
/// worst relative error while the slip zone spans three sections or more
/// and not the whole rod.
pub fn verify_partial_slip(out: &Path, progress: &dyn Progress) -> Result<(Vec<sim::benchmarks::PartialSlipPoint>, f64)> {
    let rod = Rod::from_toml_str(sim::benchmarks::SILICONE_ROD_TOML, "silicone-rod.toml")?;
    let scene = Scene::from_toml_str(sim::benchmarks::LYING_ROD_PULL_TOML, "lying-rod-pull.toml")?;
    let task = progress.task("partial slip", Some(scene.steps() as u64));
    let points = sim::benchmarks::partial_slip(&rod, &scene, |done, _| task.set(done as u64))?;
    drop(task);
    let mu = scene.table.map_or(0.0, |t| t.mu);
    let worst = points.iter().filter(|p| p.in_partial_slip(&rod)).map(|p| (p.force_n / p.analytic_n - 1.0).abs()).fold(0.0, f64::max);
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: {e}", out.display())))?;
    crate::tables::write_time_table(
        &out.join("partial_slip.csv"),
        &["t_s", "pull_m", "force_n", "analytic_n", "slip_zone_m", "normal_force_n"],
        points.iter().map(|p| (p.t_s, [p.pull_m, p.force_n, p.analytic_n, p.slip_zone_m, p.normal_force_n])),
    )?;
    let mm = |p: &sim::benchmarks::PartialSlipPoint| 1e3 * p.pull_m;
    let chart = Chart {
        name: "partial_slip".into(),
        title: "A rod lying on the table, pulled at its base: base force".into(),
        x_label: "pull u0 [mm]".into(),
        y_label: "base force [N]".into(),
        series: vec![
            Series::line("analytic sqrt(2 mu q EA u0), then mu q L", points.iter().map(|p| (mm(p), p.analytic_n)).collect(), 0),
            Series::points("rodlab", points.iter().map(|p| (mm(p), p.force_n)).collect(), 1),
        ],
        diagonal: false,
    };
    let zone = Chart {
        name: "slip_zone".into(),
        title: "Length of the sliding zone from the base".into(),
        x_label: "pull u0 [mm]".into(),
        y_label: "slip zone [m]".into(),
        series: vec![
            Series::line(
                "analytic F / (mu q)",
                points.iter().map(|p| (mm(p), (p.analytic_n / (mu * p.normal_force_n / rod.length_m)).min(rod.length_m))).collect(),
                0,
            ),
            Series::points("rodlab (last sliding point)", points.iter().map(|p| (mm(p), p.slip_zone_m)).collect(), 1),
        ],
        diagonal: false,
    };
    let page = Page {
        title: "Partial slip".into(),
        blocks: vec![
            Block::Text(format!(
                "Silicone rod L = 0.25 m, r = 8 mm, E = 256 kPa, lying on a table with mu = 0.5, gripped at its base where it rests, pulled 1 mm along its axis in 2 s (quasi-static). \
                 A bar on a Coulomb foundation slides over a = F / (mu q) from the pulled end and sticks beyond, so F = sqrt(2 mu q EA u0) until the whole rod slides. \
                 Worst error while the slip zone spans three sections or more: {:.2} %.",
                100.0 * worst
            )),
            Block::Chart(chart),
            Block::Chart(zone),
        ],
        provenance: vec![version_row()],
    };
    report::page::write_page(out, &page, &points)?;
    Ok((points, worst))
}

/// The session's hung mass over a replay (the loads file's `[[tip_mass]]`
/// for `session` from `from_s` to `to_s`, seconds since the session's
/// start) as a point mass of the scene at the tip: its weight and its
/// inertia. A line saying so, or nothing without a mass.
pub fn add_hung_mass(scene: &mut Scene, rod: &Rod, loads: &crate::loads::Loads, session: &str, from_s: f64, to_s: f64) -> Result<Option<String>> {
    let (kg, offset) = loads
        .file
        .tip_mass_in(session, from_s, to_s)
        .map_err(|e| Error::input(format!("{}: session {session}: {} (a replay needs one mass from {from_s:.3} s to {to_s:.3} s)", loads.name(), e.0)))?;
    if kg <= 0.0 {
        return Ok(None);
    }
    scene.loads.push(sim::LoadSpec::PointMass {
        arc_m: rod.length_m,
        offset_body_m: lie::Vec3::new(0.0, offset[0], offset[1]),
        mass_kg: kg,
        hook_friction_radius_m: loads.file.hook_friction_radius_m.unwrap_or(0.0),
    });
    Ok(Some(format!(
        "{session}: a hung mass of {:.1} g at the tip (offset [{:.1}, {:.1}] mm; {}), with its inertia",
        kg * 1e3,
        offset[0] * 1e3,
        offset[1] * 1e3,
        loads.name()
    )))
}
