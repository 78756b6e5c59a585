//! `rodlab synth session`: a lab session made from the simulator, whose
//! truth is known. The scene is simulated (the truth, written beside the
//! session), then sampled as the lab's devices would record it: the robot's
//! flange poses and speeds at the robot's rate in the robot's base frame
//! (`streams/robot`), a flange force/torque sensor (`streams/ft300`, the
//! simulated base wrench with bias and noise), and the tracked markers in
//! the world frame with noise (`markers.parquet`, one camera frame per
//! simulation step), all on one host clock, with the rig's frames in
//! `session.toml`.

use crate::input_error;
use crate::simulate_cmd::{at_records, run_job, BaseSource, SimulateJob};
use anyhow::Result;
use clap::Args;
use lie::trajectory::{pose_to_ur, PoseTrajectory};
use lie::Pose;
use rand::SeedableRng;
use session::{MarkerRow, RigFrames, SessionMeta, StreamWriter};
use sim::{BaseSpec, Scene};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab synth session --scene configs/scene/cable-arm-holds.toml --rod configs/rod/pls-cable-arm.toml --out sessions/holds1\n  rodlab synth session --scene configs/scene/contact-paper-stick.toml --rod configs/rod/contact-paper-steel-core.toml --rig configs/rig/emulated.toml --out sessions/stick --seed 2\n\nWrites the session (session.toml, streams/robot, streams/ft300, markers.parquet) into --out and the truth (the simulation's tables and report, truth.toml) into --truth, never inside the session. The session has no video: its markers are the tracker's output, with --marker-noise-m of noise."
)]
pub struct SynthSessionArgs {
    #[arg(long)]
    pub scene: PathBuf,
    #[arg(long)]
    pub rod: PathBuf,
    /// Rig file: its [frames] (robot base, gravity, table) place the scene and go into session.toml (default: the scene's).
    #[arg(long)]
    pub rig: Option<PathBuf>,
    /// identified.toml: the body material of the truth (default: the rod file's).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Young's modulus of the truth [Pa] (overrides the rod file and --params).
    #[arg(long)]
    pub e_pa: Option<f64>,
    /// Shear modulus of the truth [Pa].
    #[arg(long)]
    pub g_pa: Option<f64>,
    /// Density of the truth [kg/m^3].
    #[arg(long)]
    pub rho_kg_m3: Option<f64>,
    /// Flange trajectory CSV t_s,x_m,y_m,z_m,rx,ry,rz (default: the scene's waypoints).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Session directory to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Where the truth goes (default: OUT-truth, beside the session).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Simulated time [s] (default: the scene's).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Tracking noise, per coordinate [m].
    #[arg(long, default_value_t = 3e-4)]
    pub marker_noise_m: f64,
    /// RTDE output rate [Hz].
    #[arg(long, default_value_t = 125.0)]
    pub robot_hz: f64,
    /// Force sensor rate [Hz].
    #[arg(long, default_value_t = 100.0)]
    pub sensor_hz: f64,
    /// No flange force/torque sensor in the session.
    #[arg(long)]
    pub no_flange_sensor: bool,
    /// Force sensor noise per force component [N] (FT 300: about 0.1 N).
    #[arg(long, default_value_t = 0.1)]
    pub force_noise_n: f64,
    /// Force sensor noise per moment component [N m].
    #[arg(long, default_value_t = 0.005)]
    pub moment_noise_nm: f64,
    /// Noise of the load cells on the cables [N] (scenes with cable loads: stream load_cell, a column CABLE_n per cable).
    #[arg(long, default_value_t = 0.005)]
    pub load_cell_noise_n: f64,
    /// Force sensor bias "fx,fy,fz,mx,my,mz" [N, N m], added to every reading.
    #[arg(long, default_value = "0,0,0,0,0,0")]
    pub ft_bias: String,
    /// Seed of the noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Record through the lab's path in real time instead of writing the streams: the RTDE and FT 300 emulators play the experiment, a camera plays a video rendered from the simulated markers, `rodlab record` records them and `rodlab track` tracks the video (needs socat; takes the experiment's duration plus a few seconds).
    #[arg(long)]
    pub live: bool,
    /// Frame rate of the rendered camera (--live) [frames/s].
    #[arg(long, default_value_t = 30.0)]
    pub camera_fps: f64,
}

/// What made a synthetic session: written to `<truth>/truth.toml`.
#[derive(serde::Serialize)]
struct TruthFile {
    session: String,
    rod: String,
    scene: String,
    e_pa: f64,
    g_pa: f64,
    rho_kg_m3: f64,
    mass_kg: f64,
    marker_noise_m: f64,
    force_noise_n: f64,
    moment_noise_nm: f64,
    ft_bias: [f64; 6],
    /// Host time of the simulation's t = 0 [ns since the session's start].
    t0_host_ns: i64,
    seed: u64,
    /// How the session was made: "direct" (streams written) or "live"
    /// (recorded through the emulators, markers tracked from video).
    mode: String,
    /// Wall time of each stage [s] (live).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stage_wall_s: Vec<(String, f64)>,
}

/// Host time of the simulation's t = 0: the devices start a little after
/// the session does, as in the lab.
const T0_HOST_NS: i64 = 250_000_000;

/// Six numbers "fx,fy,fz,mx,my,mz" of option `name`.
pub fn parse_bias(s: &str, name: &str) -> Result<[f64; 6]> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| input_error(format!("{name} {s:?}: expected six numbers fx,fy,fz,mx,my,mz")))?;
    match <[f64; 6]>::try_from(v) {
        Ok(b) if b.iter().all(|x| x.is_finite()) => Ok(b),
        _ => Err(input_error(format!("{name} {s:?}: expected six finite numbers fx,fy,fz,mx,my,mz"))),
    }
}

fn check_positive(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(input_error(format!("{name}: must be positive, got {v}")))
    }
}

fn check_noise(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(input_error(format!("{name}: must be >= 0, got {v}")))
    }
}

/// The scene's own frames, when no rig file gives them.
fn frames_of_scene(scene: &Scene) -> RigFrames {
    RigFrames {
        robot_base: lie::FramePose::from_pose(&scene.world_from_robot),
        gravity_m_s2: scene.gravity_m_s2.into(),
        table: scene.table.as_ref().map(|p| session::TablePlane { point_m: p.point_m.into(), normal: p.normal.into() }),
        ..RigFrames::default()
    }
}

/// Flange velocity `[v; w]` in the robot's base frame (UR's
/// `actual_TCP_speed`), by central differences of the trajectory.
fn flange_speed(traj: &PoseTrajectory, t_s: f64, h_s: f64) -> [f64; 6] {
    let (first, last) = traj.span_s();
    let (a, b) = ((t_s - h_s).max(first), (t_s + h_s).min(last));
    let (Ok(ga), Ok(gb)) = (traj.at(a), traj.at(b)) else { return [0.0; 6] };
    let dt = b - a;
    if dt <= 0.0 {
        return [0.0; 6];
    }
    let v = (gb.pos - ga.pos) / dt;
    // Spatial angular velocity: log(R_b R_a^T) / dt.
    let rel = Pose { rot: gb.rot * ga.rot.transpose(), pos: lie::Vec3::zeros() };
    let w = lie::log(&rel);
    [v.x, v.y, v.z, w[0] / dt, w[1] / dt, w[2] / dt]
}

fn host_ns(t_s: f64) -> i64 {
    T0_HOST_NS + (t_s * 1e9).round() as i64
}

pub fn run(a: SynthSessionArgs) -> Result<()> {
    check_positive("--robot-hz", a.robot_hz)?;
    check_positive("--sensor-hz", a.sensor_hz)?;
    check_noise("--marker-noise-m", a.marker_noise_m)?;
    check_noise("--force-noise-n", a.force_noise_n)?;
    check_noise("--moment-noise-nm", a.moment_noise_nm)?;
    check_noise("--load-cell-noise-n", a.load_cell_noise_n)?;
    let bias = parse_bias(&a.ft_bias, "--ft-bias")?;
    if a.out.join("session.toml").exists() {
        return Err(input_error(format!("{}: already holds a session; choose another --out", a.out.display())));
    }
    let truth_dir = a.truth.clone().unwrap_or_else(|| PathBuf::from(format!("{}-truth", a.out.display())));
    let scene = Scene::from_file(&a.scene)?;
    let (frames, rig_file, rig_text) = match &a.rig {
        Some(p) => {
            let (rig, text) = record::rig::Rig::from_file(p).map_err(|e| input_error(e.to_string()))?;
            (rig.frames, p.display().to_string(), text)
        }
        None => (frames_of_scene(&scene), String::new(), format!("# frames of the scene {}\n", a.scene.display())),
    };
    // The flange's path in the robot's base frame: what the robot streams.
    let waypoints: Vec<(f64, [f64; 6])> = match (&a.trajectory, &scene.base) {
        (Some(p), _) => crate::simulate_cmd::read_trajectory(p)?,
        (None, BaseSpec::Prescribed { waypoints }) if !waypoints.is_empty() => waypoints.iter().map(|w| (w[0], [w[1], w[2], w[3], w[4], w[5], w[6]])).collect(),
        _ => {
            return Err(input_error(format!(
                "{}: base: a synthetic session needs a robot: kind = \"prescribed\" with waypoints (or --trajectory)",
                a.scene.display()
            )))
        }
    };
    let flange = PoseTrajectory::from_ur(waypoints.clone()).map_err(|e| input_error(format!("{}: {e}", a.scene.display())))?;

    let rod_file = rod::Rod::from_file(&a.rod)?;
    let body = crate::simulate_cmd::rod_with_params(rod_file.clone(), &a.rod, a.params.as_deref())?.cross_section.body;
    let material = rod::Material { e_pa: a.e_pa.unwrap_or(body.e_pa), g_pa: a.g_pa.unwrap_or(body.g_pa), rho_kg_m3: a.rho_kg_m3.unwrap_or(body.rho_kg_m3) };
    for (name, v) in [("--e-pa", material.e_pa), ("--g-pa", material.g_pa), ("--rho-kg-m3", material.rho_kg_m3)] {
        check_positive(name, v)?;
    }
    let job = SimulateJob {
        rod: &a.rod,
        scene: &a.scene,
        params: None,
        material: Some(material),
        base: match &a.trajectory {
            Some(p) => BaseSource::Trajectory(p),
            None => BaseSource::Scene,
        },
        rig_frames: Some(frames),
        duration_s: a.duration_s,
        out: &truth_dir,
    };
    println!("simulating the truth into {}", truth_dir.display());
    let t_start = std::time::Instant::now();
    let done = run_job(&job)?;
    let simulate_wall_s = t_start.elapsed().as_secs_f64();
    let records = &done.records;
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let end_s = records.last().map_or(0.0, |r| r.t_s);
    let truth_file = |t0_host_ns: i64, mode: &str, stage_wall_s: Vec<(String, f64)>| TruthFile {
        session: a.out.display().to_string(),
        rod: a.rod.display().to_string(),
        scene: a.scene.display().to_string(),
        e_pa: material.e_pa,
        g_pa: material.g_pa,
        rho_kg_m3: material.rho_kg_m3,
        mass_kg: done.summary.mass_kg,
        marker_noise_m: if mode == "live" { 0.0 } else { a.marker_noise_m },
        force_noise_n: if a.no_flange_sensor { 0.0 } else { a.force_noise_n },
        moment_noise_nm: if a.no_flange_sensor { 0.0 } else { a.moment_noise_nm },
        ft_bias: bias,
        t0_host_ns,
        seed: a.seed,
        mode: mode.into(),
        stage_wall_s,
    };

    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let mut noise = |sd: f64| if sd > 0.0 { sd * track::synth::gaussian(&mut rng) } else { 0.0 };
    if a.live {
        check_positive("--camera-fps", a.camera_fps)?;
        let load_cells = load_cell_rows(&a, &scene, &rod_file, end_s, &mut noise);
        let played = crate::virtual_lab::play(&crate::virtual_lab::Playback {
            records,
            rod: &rod_file,
            frames,
            flange: &waypoints,
            robot_hz: a.robot_hz,
            flange_sensor: !a.no_flange_sensor,
            sensor_hz: a.sensor_hz,
            ft_bias: bias,
            force_noise_n: a.force_noise_n,
            moment_noise_nm: a.moment_noise_nm,
            camera_fps: a.camera_fps,
            seed: a.seed,
            load_cells,
            out: &a.out,
            work: &truth_dir.join("playback"),
        })?;
        let mut stages = vec![("simulate".to_string(), simulate_wall_s)];
        stages.extend(played.stage_s.iter().map(|(n, s)| (n.to_string(), *s)));
        let text = toml::to_string(&truth_file(played.t0_host_ns, "live", stages.clone())).map_err(|e| anyhow::anyhow!("truth.toml: {e}"))?;
        write_file(&truth_dir.join("truth.toml"), &format!("# What made the synthetic session {} (its truth).\n{text}", a.out.display()))?;
        let per_stage: Vec<String> = stages.iter().map(|(n, s)| format!("{n} {s:.1} s")).collect();
        println!("recorded session {} live ({:.2} s of experiment; {}) and its truth in {}", a.out.display(), end_s, per_stage.join(", "), truth_dir.display());
        return Ok(());
    }

    std::fs::create_dir_all(&a.out).map_err(|e| input_error(format!("{}: {e}", a.out.display())))?;
    // One chunk per second of recording, as the recorder flushes.
    let never = Duration::from_secs(u64::MAX / 4);

    let robot_columns: Vec<String> = std::iter::once("timestamp".to_string())
        .chain((0..6).map(|i| format!("actual_TCP_pose_{i}")))
        .chain((0..6).map(|i| format!("actual_TCP_speed_{i}")))
        .collect();
    let mut robot = StreamWriter::create(&a.out, "robot", robot_columns, never)?;
    let robot_dt = 1.0 / a.robot_hz;
    let n_robot = (end_s / robot_dt + 1e-9).floor() as usize + 1;
    for k in 0..n_robot {
        let t = k as f64 * robot_dt;
        let pose = flange.at(t).map_err(|e| input_error(format!("{}: {e}", a.scene.display())))?;
        let mut row = vec![t];
        row.extend(pose_to_ur(&pose));
        row.extend(flange_speed(&flange, t, 0.5 * robot_dt));
        robot.push(host_ns(t), &row)?;
        if (k + 1) % (a.robot_hz.round() as usize).max(1) == 0 {
            robot.flush()?;
        }
    }
    robot.flush()?;

    if !a.no_flange_sensor {
        let mut ft = StreamWriter::create(&a.out, "ft300", ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"].map(String::from).to_vec(), never)?;
        let dt = 1.0 / a.sensor_hz;
        let n = (end_s / dt + 1e-9).floor() as usize + 1;
        for k in 0..n {
            let t = k as f64 * dt;
            let w = at_records(&t_rec, records, t.min(end_s), |r| r.base_wrench_flange).expect("within the simulated span");
            // Wrenches are [moment; force]; the sensor sends force first.
            let row: Vec<f64> = (0..6)
                .map(|c| {
                    let (value, sd) = if c < 3 { (w[3 + c], a.force_noise_n) } else { (w[c - 3], a.moment_noise_nm) };
                    value + bias[c] + noise(sd)
                })
                .collect();
            ft.push(host_ns(t), &row)?;
            if (k + 1) % (a.sensor_hz.round() as usize).max(1) == 0 {
                ft.flush()?;
            }
        }
        ft.flush()?;
    }

    // Load cells on the cables, at the sensor rate.
    if let Some((columns, rows)) = load_cell_rows(&a, &scene, &rod_file, end_s, &mut noise) {
        let mut cells = StreamWriter::create(&a.out, "load_cell", columns, never)?;
        for (k, (t, row)) in rows.iter().enumerate() {
            cells.push(host_ns(*t), row)?;
            if (k + 1) % (a.sensor_hz.round() as usize).max(1) == 0 {
                cells.flush()?;
            }
        }
        cells.flush()?;
    }

    let markers: Vec<MarkerRow> = records
        .iter()
        .enumerate()
        .flat_map(|(k, r)| r.markers_m.iter().enumerate().map(move |(m, p)| (k, r, m, *p)))
        .map(|(k, r, m, p)| MarkerRow {
            frame: k as i64,
            t_s: r.t_s,
            t_host_ns: Some(host_ns(r.t_s)),
            marker: m as u32,
            u_px: f64::NAN,
            v_px: f64::NAN,
            x_m: p.x + noise(a.marker_noise_m),
            y_m: p.y + noise(a.marker_noise_m),
            z_m: p.z + noise(a.marker_noise_m),
            area_px: f64::NAN,
            flags: 0,
        })
        .collect();
    if markers.is_empty() {
        return Err(input_error(format!("{}: the rod has no [[marker]]: a session needs tracked markers", a.rod.display())));
    }
    session::write_markers(&a.out.join("markers.parquet"), &markers)?;

    let notes =
        format!("synthetic session (rodlab synth session): scene {}, rod {}; the truth is kept outside the session", a.scene.display(), a.rod.display());
    SessionMeta::start(&notes, &rig_file, &rig_text, frames).write(&a.out).map_err(|e| input_error(e.to_string()))?;

    let truth = truth_file(T0_HOST_NS, "direct", vec![]);
    let text = toml::to_string(&truth).map_err(|e| anyhow::anyhow!("truth.toml: {e}"))?;
    write_file(&truth_dir.join("truth.toml"), &format!("# What made the synthetic session {} (its truth).\n{text}", a.out.display()))?;
    println!(
        "wrote session {} ({:.2} s: {} robot samples at {} Hz, {}{} camera frames) and its truth in {}",
        a.out.display(),
        end_s,
        n_robot,
        a.robot_hz,
        if a.no_flange_sensor { String::new() } else { format!("force sensor at {} Hz, ", a.sensor_hz) },
        records.len(),
        truth_dir.display()
    );
    Ok(())
}

/// What load cells on the cables read at the sensor rate (scenes that pull
/// cables): column names `CABLE_n` and `(t_s, tensions with noise)` rows.
pub type LoadCellRows = (Vec<String>, Vec<(f64, Vec<f64>)>);

fn load_cell_rows(a: &SynthSessionArgs, scene: &Scene, rod: &rod::Rod, end_s: f64, noise: &mut impl FnMut(f64) -> f64) -> Option<LoadCellRows> {
    if !scene.loads.iter().any(|l| matches!(l, sim::LoadSpec::Cable { .. })) {
        return None;
    }
    let columns: Vec<String> = rod.cables.iter().map(|c| format!("{}_n", c.name)).collect();
    let dt = 1.0 / a.sensor_hz;
    let n = (end_s / dt + 1e-9).floor() as usize + 1;
    let rows = (0..n)
        .map(|k| {
            let t = k as f64 * dt;
            (t, scene.cable_tensions_n(rod, t).iter().map(|v| v + noise(a.load_cell_noise_n)).collect())
        })
        .collect();
    Some((columns, rows))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| input_error(format!("{}: {e}", path.display())))
}
