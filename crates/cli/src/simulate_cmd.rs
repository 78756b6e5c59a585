//! `rodlab simulate`: a scene (and a base trajectory) -> simulation tables
//! and a report; `rodlab verify slip-onset`: the friction benchmark sweep.

use crate::input_error;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use report::page::{Block, Chart, Page, Series};
use session::{MarkerRow, Table};
use sim::{BaseMotion, ContactState, Scene, SimError, Simulator, StepRecord};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab simulate --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-stick.toml --out reports/sim/stick\n  rodlab simulate --rod rod.toml --scene scene.toml --trajectory flange.csv --params identified.toml --out sim/\n  rodlab simulate --rod rod.toml --scene scene.toml --session sessions/run1 --out sessions/run1/sim\n\nOutputs in --out: sim.parquet (one row per step: totals, tip, base wrench at the flange, energies, solver figures), sim_nodes.parquet (step x node strains), sim_contacts.parquet (step x contact point), sim_markers.parquet (the tracker's marker table: a simulation reads like a recording), index.html (plots) and summary.json.\nA trajectory CSV has the header t_s,x_m,y_m,z_m,rx,ry,rz: the flange pose in the robot's base frame (rotation vector, radians); the rod's base is flange * the rod file's [base]."
)]
pub struct SimulateArgs {
    #[arg(long)]
    pub rod: PathBuf,
    /// Scene: time stepping, table, base, contact law (configs/scene/*.toml).
    #[arg(long)]
    pub scene: PathBuf,
    /// identified.toml: E, G, rho of the rod's body from `rodlab identify`.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Base motion from a session's robot stream (flange poses on host time).
    #[arg(long, conflicts_with = "trajectory")]
    pub session: Option<PathBuf>,
    /// Base motion from a CSV file t_s,x_m,y_m,z_m,rx,ry,rz (flange pose).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Simulated time [s] (default: the scene's; with --session, the robot log's span).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Subcommand)]
pub enum VerifyCommand {
    /// DisMech's axial slip onset: kinetic energy after 1 s against (t^2/2m)(F - mu m g)^2 for F in [0, 10.5] N.
    SlipOnset {
        /// Output directory (slip_onset.csv, index.html with the plot).
        #[arg(long)]
        out: PathBuf,
    },
}

/// One row of a trajectory CSV.
#[derive(serde::Deserialize)]
struct TrajectoryRow {
    t_s: f64,
    x_m: f64,
    y_m: f64,
    z_m: f64,
    rx: f64,
    ry: f64,
    rz: f64,
}

/// Reads a trajectory CSV into (t, UR pose) samples.
pub fn read_trajectory(path: &Path) -> Result<Vec<(f64, [f64; 6])>> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| input_error(format!("{}: {e}", path.display())))?;
    let mut out = vec![];
    for (i, row) in reader.deserialize::<TrajectoryRow>().enumerate() {
        let r = row.map_err(|e| input_error(format!("{}: row {}: {e}", path.display(), i + 1)))?;
        out.push((r.t_s, [r.x_m, r.y_m, r.z_m, r.rx, r.ry, r.rz]));
    }
    if out.is_empty() {
        return Err(input_error(format!("{}: no rows", path.display())));
    }
    Ok(out)
}

/// Where the rod's base goes: a session's robot stream, a trajectory CSV,
/// or the scene's own waypoints.
pub enum BaseSource<'a> {
    Session(&'a Path),
    Trajectory(&'a Path),
    Scene,
}

/// One simulation to run and write (what `rodlab simulate` does; also
/// the first half of `validate` and of `synth session`).
pub struct SimulateJob<'a> {
    pub rod: &'a Path,
    pub scene: &'a Path,
    pub params: Option<&'a Path>,
    /// The body material, overriding the rod file's and `params` (a synthetic truth).
    pub material: Option<rod::Material>,
    pub base: BaseSource<'a>,
    /// The rig's frames (robot base, gravity, table) when no session gives them.
    pub rig_frames: Option<session::RigFrames>,
    /// Overrides the scene's duration (a session: default the robot log's span).
    pub duration_s: Option<f64>,
    pub out: &'a Path,
}

/// A finished simulation.
pub struct Simulated {
    pub records: Vec<StepRecord>,
    /// Host time of the simulation's t = 0 (session-driven runs).
    pub t0_host_ns: Option<i64>,
    pub summary: Summary,
    /// The scene as simulated: the rig's frames applied, the duration set.
    pub scene: Scene,
}

/// Samples `f` of a simulation's records (step times `t_rec`) at `t`,
/// linear between steps; `None` outside the simulated span.
pub fn at_records<T>(t_rec: &[f64], records: &[StepRecord], t: f64, f: impl Fn(&StepRecord) -> T) -> Option<T>
where
    T: std::ops::Mul<f64, Output = T> + std::ops::Add<Output = T>,
{
    validate::bracket(t_rec, t).map(|(i, j, w)| f(&records[i]) * (1.0 - w) + f(&records[j]) * w)
}

/// Puts a scene in a rig's world: robot base, gravity, table plane (the
/// friction stays the scene's).
pub fn apply_rig_frames(scene: &mut Scene, f: &session::RigFrames) {
    scene.world_from_robot = f.world_from_robot();
    scene.gravity_m_s2 = f.gravity();
    if let (Some(t), Some(plane)) = (f.table, scene.table.as_mut()) {
        plane.point_m = lie::Vec3::from(t.point_m);
        plane.normal = lie::Vec3::from(t.normal).normalize();
    }
}

/// The rod with the body material and geometry of an identified.toml
/// (checked to be identified for this rod's shape).
pub fn rod_with_params(rod: rod::Rod, rod_path: &Path, params: Option<&Path>) -> Result<rod::Rod> {
    let Some(p) = params else { return Ok(rod) };
    let id = identify::output::IdentifiedFile::read(p).map_err(input_error)?;
    id.check_rod(&rod, rod_path, p).map_err(input_error)?;
    Ok(id.apply_to(&rod))
}

/// The base motion and the host time of t = 0.
fn base_motion(job: &SimulateJob, scene: &mut Scene, rod: &rod::Rod) -> Result<(BaseMotion, Option<i64>)> {
    let from_samples = |scene: &Scene, samples: &[(f64, [f64; 6])], what: &Path| -> Result<BaseMotion> {
        if !matches!(scene.base, sim::BaseSpec::Prescribed { .. }) {
            return Err(input_error(format!("{}: base.kind: a base trajectory needs kind = \"prescribed\"", job.scene.display())));
        }
        BaseMotion::from_robot_samples(samples, &scene.world_from_robot, &rod.base).map_err(|e| input_error(format!("{}: {e}", what.display())))
    };
    match job.base {
        BaseSource::Session(dir) => {
            let tcp = session::read_tcp_poses(dir).map_err(|e| input_error(e.to_string()))?;
            let Some(tcp) = tcp.filter(|t| !t.is_empty()) else {
                return Err(input_error(format!("{}: the session has no robot stream (streams/robot): nothing drives the base", dir.display())));
            };
            let t0 = tcp[0].t_host_ns;
            let samples: Vec<(f64, [f64; 6])> = tcp.iter().map(|s| ((s.t_host_ns - t0) as f64 * 1e-9, s.pose)).collect();
            // The robot log's span, unless asked otherwise.
            scene.duration_s = job.duration_s.unwrap_or(samples.last().map_or(0.0, |s| s.0));
            Ok((from_samples(scene, &samples, dir)?, Some(t0)))
        }
        BaseSource::Trajectory(path) => {
            let samples = read_trajectory(path)?;
            Ok((from_samples(scene, &samples, path)?, None))
        }
        BaseSource::Scene => match BaseMotion::from_scene(scene, rod).map_err(|e| input_error(format!("{}: {e}", job.scene.display())))? {
            Some(m) => Ok((m, None)),
            None => Err(input_error(format!("{}: base.waypoints: a prescribed base without waypoints needs --trajectory or --session", job.scene.display()))),
        },
    }
}

/// Runs a simulation job and writes its tables and report into `job.out`.
pub fn run_job(job: &SimulateJob) -> Result<Simulated> {
    let rod = rod::Rod::from_file(job.rod)?;
    let mut scene = Scene::from_file(job.scene)?;
    let frames = match job.base {
        BaseSource::Session(dir) => {
            session::SessionMeta::read(dir).map_err(|e| input_error(e.to_string()))?.map(|m| (m.frames, format!("{}/session.toml", dir.display())))
        }
        _ => job.rig_frames.map(|f| (f, "the rig's frames given".to_string())),
    };
    if let Some((f, from)) = frames {
        // One world: the rig places the robot, the table and gravity.
        apply_rig_frames(&mut scene, &f);
        println!("robot base, gravity and table from {from} (the rig's world frame); friction from {}", job.scene.display());
    }
    if let Some(d) = job.duration_s {
        if !(d.is_finite() && d > 0.0) {
            return Err(input_error(format!("--duration-s: must be positive, got {d}")));
        }
        scene.duration_s = d;
    }
    let mut rod = rod_with_params(rod, job.rod, job.params)?;
    if let Some(p) = job.params {
        let m = rod.cross_section.body;
        println!("parameters from {}: E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3", p.display(), m.e_pa, m.g_pa, m.rho_kg_m3);
    }
    if let Some(m) = job.material {
        rod = rod.with_material(m);
    }
    let (motion, t0_host_ns) = base_motion(job, &mut scene, &rod)?;
    let mut sim = Simulator::new(&rod, &scene, motion).map_err(|e| match e {
        SimError::Input(m) => input_error(format!("{}: {m}", job.scene.display())),
        other => anyhow::Error::new(other),
    })?;
    let total = scene.steps();
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps [{elapsed} < {eta}] {msg}").expect("template"));
    let started = std::time::Instant::now();
    let records = sim.run(|done, _| bar.set_position(done as u64)).context("simulation stopped")?;
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    std::fs::create_dir_all(job.out).map_err(|e| input_error(format!("{}: {e}", job.out.display())))?;
    write_tables(job.out, &sim, &records, t0_host_ns)?;
    let summary = summarise(&sim, &records, wall);
    let page = report_page(job, &scene, &rod, &records, &summary);
    report::page::write_page(job.out, &page, &summary)?;
    Ok(Simulated { records, t0_host_ns, summary, scene })
}

pub fn simulate(a: SimulateArgs) -> Result<()> {
    let base = match (&a.session, &a.trajectory) {
        (Some(s), _) => BaseSource::Session(s),
        (None, Some(t)) => BaseSource::Trajectory(t),
        (None, None) => BaseSource::Scene,
    };
    let job = SimulateJob {
        rod: &a.rod,
        scene: &a.scene,
        params: a.params.as_deref(),
        material: None,
        base,
        rig_frames: None,
        duration_s: a.duration_s,
        out: &a.out,
    };
    let done = run_job(&job)?;
    print_summary(&done.summary);
    println!("wrote {}/sim.parquet, sim_nodes.parquet, sim_contacts.parquet, sim_markers.parquet, index.html", a.out.display());
    Ok(())
}

/// Figures of a run, printed and written to summary.json.
#[derive(serde::Serialize)]
pub struct Summary {
    pub steps: usize,
    pub simulated_s: f64,
    pub wall_time_s: f64,
    pub real_time_factor: f64,
    pub mean_newton_iterations: f64,
    pub max_substeps: usize,
    pub mass_kg: f64,
    pub first_touch_s: Option<f64>,
    pub tip_stick_steps: usize,
    pub tip_slide_steps: usize,
    pub max_normal_force_n: f64,
    pub final_tip_slide_m: f64,
    pub final_tip_slip_m: f64,
    pub final_base_force_flange_n: [f64; 3],
    /// Extreme surface fibre strains over the run (tension > 0) and the
    /// smallest cable stretch |Q + K x d + d'| (model validity).
    pub max_fibre_strain: f64,
    pub min_fibre_strain: f64,
    pub min_cable_stretch: Option<f64>,
    pub validity_warnings: Vec<String>,
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
        max_substeps: records.iter().map(|r| r.substeps).max().unwrap_or(0),
        mass_kg: sim.mass_kg(),
        first_touch_s: records.iter().find(|r| r.contacts.iter().any(|c| c.state != ContactState::Free)).map(|r| r.t_s),
        tip_stick_steps: records.iter().filter(|r| tip(r) == Some(ContactState::Stick)).count(),
        tip_slide_steps: records.iter().filter(|r| tip(r) == Some(ContactState::Slide)).count(),
        max_normal_force_n: records.iter().map(|r| r.normal_force_n).fold(0.0, f64::max),
        final_tip_slide_m: last.tip_slide_m,
        final_tip_slip_m: last.tip_slip_m,
        final_base_force_flange_n: [last.base_wrench_flange[3], last.base_wrench_flange[4], last.base_wrench_flange[5]],
        max_fibre_strain: validity.max_fibre_strain,
        min_fibre_strain: validity.min_fibre_strain,
        min_cable_stretch: validity.min_cable_stretch.map(|c| c.0),
        validity_warnings: validity.warnings(&sim.model.rod.cables),
    }
}

fn print_summary(s: &Summary) {
    println!(
        "simulated {:.3} s in {} steps, wall {:.2} s (real-time factor {:.1}), {:.2} Newton iterations per step, at most {} sub-steps",
        s.simulated_s, s.steps, s.wall_time_s, s.real_time_factor, s.mean_newton_iterations, s.max_substeps
    );
    match s.first_touch_s {
        Some(t) => println!(
            "  contact from t = {t:.3} s; tip stuck {} steps, sliding {} steps; largest normal force {:.4} N; tip slid {:.4} m (contact path {:.4} m)",
            s.tip_stick_steps, s.tip_slide_steps, s.max_normal_force_n, s.final_tip_slide_m, s.final_tip_slip_m
        ),
        None => println!("  no contact"),
    }
    println!(
        "  force on the flange at the end [N]: {:.4} {:.4} {:.4}",
        s.final_base_force_flange_n[0], s.final_base_force_flange_n[1], s.final_base_force_flange_n[2]
    );
    println!(
        "  validity: surface fibre strains from {:+.2} % to {:+.2} %{}",
        100.0 * s.min_fibre_strain,
        100.0 * s.max_fibre_strain,
        s.min_cable_stretch.map_or(String::new(), |c| format!(", cables: min |Q + K x d + d'| {c:.3}"))
    );
    for w in &s.validity_warnings {
        println!("  warning: {w}");
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

fn report_page(a: &SimulateJob, scene: &Scene, rod: &rod::Rod, records: &[StepRecord], s: &Summary) -> Page {
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
    let mut blocks = vec![
        Block::Text(format!(
            "Rod {}, scene {} ({} mode, step {} ms, {} s). Mass {:.4} kg. {} steps in {:.2} s of wall time: {:.1} x real time, {:.2} Newton iterations per step.",
            a.rod.display(),
            a.scene.display(),
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
            s.mean_newton_iterations
        )),
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
    ];
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
    let hash = |p: &Path| format!("sha256 {}", crate::identify::sha256_file(p));
    let mut provenance = vec![
        ("rodlab".into(), env!("CARGO_PKG_VERSION").into()),
        (format!("rod {}", a.rod.display()), hash(a.rod)),
        (format!("scene {}", a.scene.display()), hash(a.scene)),
    ];
    if let Some(p) = a.params {
        provenance.push((format!("params {}", p.display()), hash(p)));
    }
    match a.base {
        BaseSource::Trajectory(p) => provenance.push((format!("trajectory {}", p.display()), hash(p))),
        BaseSource::Session(p) => provenance.push(("session".into(), p.display().to_string())),
        BaseSource::Scene => {}
    }
    Page { title: "rodlab simulate".into(), blocks, provenance }
}

pub fn verify(c: VerifyCommand) -> Result<()> {
    match c {
        VerifyCommand::SlipOnset { out } => {
            let forces: Vec<f64> = (0..=21).map(|k| 0.5 * k as f64).chain([3.9, 4.2]).collect();
            let bar = indicatif::ProgressBar::new(forces.len() as u64);
            let mut points = vec![];
            for f in forces {
                points.push(sim::benchmarks::slip_onset(f, 1.0)?);
                bar.inc(1);
            }
            bar.finish_and_clear();
            points.sort_by(|a, b| a.force_n.total_cmp(&b.force_n));
            std::fs::create_dir_all(&out).map_err(|e| input_error(format!("{}: {e}", out.display())))?;
            let mut w = csv::Writer::from_path(out.join("slip_onset.csv")).context("writing slip_onset.csv")?;
            w.write_record(["force_n", "kinetic_energy_j", "analytic_j"])?;
            println!("F [N]    KE at 1 s [J]   (t^2/2m)(F - mu m g)^2 [J]");
            for p in &points {
                w.write_record([p.force_n.to_string(), p.kinetic_energy_j.to_string(), p.analytic_j.to_string()])?;
                println!("{:5.2}  {:14.6e}  {:14.6e}", p.force_n, p.kinetic_energy_j, p.analytic_j);
            }
            w.flush()?;
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
                provenance: vec![("rodlab".into(), env!("CARGO_PKG_VERSION").into())],
            };
            let written = report::page::write_page(&out, &page, &points.iter().map(|p| (p.force_n, p.kinetic_energy_j, p.analytic_j)).collect::<Vec<_>>())?;
            println!("wrote {}/slip_onset.csv and {}", out.display(), written.html.display());
            Ok(())
        }
    }
}
