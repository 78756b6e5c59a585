//! A lab session made from the simulator, whose truth is known. The scene
//! is simulated (the truth, written beside the session, never inside),
//! then sampled as the lab's devices would record it: the robot's flange
//! poses and speeds at the robot's rate in the robot's base frame
//! (`streams/robot`), a flange force/torque sensor (`streams/ft300`, the
//! simulated base wrench with bias and noise), load cells on pulled cables
//! (`streams/load_cell`) and the tracked markers in the world frame with
//! noise (`markers.parquet`, one camera frame per simulation step), all on
//! one host clock, with the rig's frames in `session.toml`. The
//! `lab-devices` crate's `live` plays the same truth through the real
//! recording path instead.

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::simulate::{at_records, frames_of_scene, BaseSource, SimulateJob, Simulated};
use lie::trajectory::{pose_to_ur, PoseTrajectory};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rod::Rod;
use session::{MarkerRow, Rig, RigFrames, SessionDir, SessionMeta, StreamWriter};
use sim::{BaseSpec, Scene};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A rig file read: the rig, its path and its text (kept in the session).
#[derive(Clone, Debug)]
pub struct RigFile {
    pub rig: Rig,
    pub path: PathBuf,
    pub text: String,
}

/// What to make.
#[derive(Clone, Debug)]
pub struct SynthRequest {
    pub scene_path: PathBuf,
    pub scene: Scene,
    pub rod_path: PathBuf,
    /// The rod file's rod.
    pub rod: Rod,
    /// The truth's body material.
    pub material: rod::Material,
    /// A rig whose frames place the scene (default: the scene's own).
    pub rig: Option<RigFile>,
    /// A flange trajectory instead of the scene's waypoints, and its file.
    pub trajectory: Option<(PathBuf, lie::trajectory::UrSamples)>,
    pub out: SessionDir,
    /// Where the truth goes (beside the session, never inside).
    pub truth: PathBuf,
    pub duration_s: Option<f64>,
    /// Tracking noise per coordinate \[m\].
    pub marker_noise_m: f64,
    /// RTDE output rate \[Hz\].
    pub robot_hz: f64,
    /// Force sensor and load cell rate \[Hz\].
    pub sensor_hz: f64,
    pub flange_sensor: bool,
    /// Live only: the flange sensor is an ATI Net F/T (RDT over UDP at
    /// 1 kHz, stream `netft`) instead of the FT 300.
    pub netft: bool,
    /// Live only: the flange wrench comes from the robot's controller
    /// (`actual_TCP_force` on the RTDE stream, robot base frame) instead
    /// of a sensor of its own.
    pub wrench_from_robot: bool,
    /// Force sensor noise per force \[N\] and moment \[N m\] component.
    pub force_noise_n: f64,
    pub moment_noise_nm: f64,
    /// Noise of the load cells on the cables \[N\].
    pub load_cell_noise_n: f64,
    /// Force sensor bias `[fx, fy, fz, mx, my, mz]` \[N, N m\].
    pub ft_bias: [f64; 6],
    /// The rod is mounted on the sensor at this time \[s\]: before it, the
    /// sensor reads its bias (and noise) only and no marker is tracked, as
    /// when a lab records a tare first.
    pub mounted_at_s: f64,
    pub seed: u64,
    /// A held tip (the scene's `[tip]`): the stream name of the second
    /// robot that holds it, its flange at the tip's hold (base and mount
    /// at the world's origin: `[tip_hold] robot = "<name>"` reads it);
    /// live, a second RTDE emulator plays it.
    pub tip_robot: Option<String>,
    /// Live only: cameras rendering the experiment, each from its own pose
    /// (1: one camera square to the plane of motion; 2 or more: a set
    /// spread 30 degrees about the image's vertical, markers triangulated in
    /// 3-D, so the motion may leave the plane).
    pub cameras: usize,
    /// Live with a camera set: (camera index, marker) pairs hidden from
    /// that camera from the experiment's start (an occluder; the video's
    /// lead shows it, as a tracker needs every marker in its first frame),
    /// so that one camera alone sees the marker: it is kept as its ray.
    pub hidden_markers: Vec<(usize, usize)>,
}

/// The optional files of a synthesis ([`SynthRequest::read`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SynthFiles<'a> {
    /// identified.toml: the truth's material.
    pub params: Option<&'a Path>,
    /// A rig file: its frames place the scene.
    pub rig: Option<&'a Path>,
    /// A flange trajectory CSV instead of the scene's waypoints.
    pub trajectory: Option<&'a Path>,
}

impl SynthRequest {
    /// A session of `scene` with `rod` (its own material) into `out`,
    /// the truth beside it, with the defaults of `rodlab synth session`.
    pub fn new(scene_path: &Path, scene: Scene, rod_path: &Path, rod: Rod, out: &Path) -> SynthRequest {
        SynthRequest {
            scene_path: scene_path.to_path_buf(),
            scene,
            rod_path: rod_path.to_path_buf(),
            material: rod.cross_section.body,
            rod,
            rig: None,
            trajectory: None,
            out: SessionDir::new(out),
            truth: PathBuf::from(format!("{}-truth", out.display())),
            duration_s: None,
            marker_noise_m: 3e-4,
            robot_hz: 125.0,
            sensor_hz: 100.0,
            flange_sensor: true,
            netft: false,
            wrench_from_robot: false,
            force_noise_n: 0.1,
            moment_noise_nm: 0.005,
            load_cell_noise_n: 0.005,
            ft_bias: [0.0; 6],
            mounted_at_s: 0.0,
            seed: 1,
            tip_robot: None,
            cameras: 1,
            hidden_markers: vec![],
        }
    }

    /// A session of the scene and rod files `scene_path`, `rod_path` into
    /// `out`: the truth's material from `params` (an identified.toml) or
    /// the rod file, each of E, G, rho overridden where given (G keeps the
    /// rod's ratio to E when only E is); the base placed by the rig file
    /// `rig` and driven by the flange trajectory CSV `trajectory`, where
    /// given. The rest at `synth session`'s defaults.
    pub fn read(scene_path: &Path, rod_path: &Path, out: &Path, files: SynthFiles<'_>, material: [Option<f64>; 3]) -> Result<SynthRequest> {
        SynthRequest::of_rod(scene_path, rod_path, Rod::from_file(rod_path)?, out, files, material)
    }

    /// As [`SynthRequest::read`] with the rod already read (or built):
    /// `rod_path` names it in the truth's provenance.
    pub fn of_rod(scene_path: &Path, rod_path: &Path, rod: Rod, out: &Path, files: SynthFiles<'_>, material: [Option<f64>; 3]) -> Result<SynthRequest> {
        let scene = Scene::from_file(scene_path)?;
        let params = crate::params::read_optional(files.params, &rod, rod_path)?;
        let body = crate::params::rod_with(rod.clone(), params.as_ref()).cross_section.body;
        let rig = match files.rig {
            Some(p) => {
                let (rig, text) = session::Rig::from_file(p)?;
                Some(RigFile { rig, path: p.to_path_buf(), text })
            }
            None => None,
        };
        let trajectory = match files.trajectory {
            Some(p) => Some((p.to_path_buf(), crate::tables::read_trajectory(p)?)),
            None => None,
        };
        let [e_pa, g_pa, rho_kg_m3] = material;
        Ok(SynthRequest { material: truth_material(&body, e_pa, g_pa, rho_kg_m3), rig, trajectory, ..SynthRequest::new(scene_path, scene, rod_path, rod, out) })
    }

    /// Checks rates, noises and the material; the error names the flag.
    pub fn check(&self) -> Result<()> {
        use crate::error::{non_negative, positive};
        positive("--robot-hz", self.robot_hz)?;
        positive("--sensor-hz", self.sensor_hz)?;
        non_negative("--marker-noise-m", self.marker_noise_m)?;
        non_negative("--force-noise-n", self.force_noise_n)?;
        non_negative("--moment-noise-nm", self.moment_noise_nm)?;
        non_negative("--load-cell-noise-n", self.load_cell_noise_n)?;
        let m = self.material;
        for (name, v) in [("--e-pa", m.e_pa), ("--g-pa", m.g_pa), ("--rho-kg-m3", m.rho_kg_m3)] {
            positive(name, v)?;
        }
        non_negative("--mounted-at-s", self.mounted_at_s)?;
        if !self.ft_bias.iter().all(|b| b.is_finite()) {
            return Err(Error::input("--ft-bias: expected six finite numbers fx,fy,fz,mx,my,mz"));
        }
        for &(camera, marker) in &self.hidden_markers {
            if self.cameras < 2 || camera >= self.cameras || marker >= self.rod.markers.len() {
                return Err(Error::input(format!(
                    "--hide-marker {camera}:{marker}: needs a camera set (--cameras 2 or more) with camera {camera} (of {}) and marker {marker} (the rod has {})",
                    self.cameras,
                    self.rod.markers.len()
                )));
            }
        }
        Ok(())
    }
}

/// What made a synthetic session: written to `<truth>/truth.toml`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TruthFile {
    pub session: String,
    pub rod: String,
    pub scene: String,
    pub e_pa: f64,
    pub g_pa: f64,
    pub rho_kg_m3: f64,
    pub mass_kg: f64,
    pub marker_noise_m: f64,
    pub force_noise_n: f64,
    pub moment_noise_nm: f64,
    pub ft_bias: [f64; 6],
    /// The table's friction coefficient the session was simulated with
    /// (none: no table in the scene).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friction_mu: Option<f64>,
    /// When the rod was mounted on the sensor \[s\] (0: from the start).
    #[serde(default)]
    pub mounted_at_s: f64,
    /// Host time of the simulation's t = 0 \[ns since the session's start\].
    pub t0_host_ns: i64,
    pub seed: u64,
    /// How the session was made: "direct" (streams written) or "live"
    /// (recorded through the emulators, markers tracked from video).
    pub mode: String,
    /// Wall time of each stage \[s\].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage_wall_s: Vec<(String, f64)>,
}

impl TruthFile {
    pub fn read(truth_dir: &Path) -> Result<TruthFile> {
        let (t, _): (TruthFile, String) = session::read_toml(&truth_dir.join("truth.toml"), "truth file")?;
        Ok(t)
    }

    fn write(&self, truth_dir: &Path) -> Result<()> {
        let text = toml::to_string(self).map_err(|e| Error::computation(format!("truth.toml: {e}")))?;
        let path = truth_dir.join("truth.toml");
        std::fs::write(&path, format!("# What made the synthetic session {} (its truth).\n{text}", self.session))
            .map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))
    }
}

/// A made session.
#[derive(Clone, Debug)]
pub struct Synthesised {
    pub session: SessionDir,
    pub truth_dir: PathBuf,
    pub truth: TruthFile,
    /// Simulated time \[s\].
    pub end_s: f64,
    pub robot_samples: usize,
    pub camera_frames: usize,
}

/// The simulated truth, before any device records it.
pub struct Truth {
    pub simulated: Simulated,
    /// The rig's frames (robot base, gravity, table).
    pub frames: RigFrames,
    pub rig_file: String,
    pub rig_text: String,
    /// The flange's path in the robot's base frame: what the robot streams.
    pub waypoints: Vec<(f64, [f64; 6])>,
    pub simulate_wall_s: f64,
}

impl Truth {
    pub fn end_s(&self) -> f64 {
        self.simulated.records.last().map_or(0.0, |r| r.t_s)
    }
}

/// Host time of the simulation's t = 0 in a direct session: the devices
/// start a little after the session does, as in the lab.
pub const T0_HOST_NS: i64 = 250_000_000;

fn host_ns(t_s: f64) -> i64 {
    T0_HOST_NS + (t_s * 1e9).round() as i64
}

/// Gaussian noise of a standard deviation (none for 0).
pub struct Noise {
    rng: rand::rngs::StdRng,
}

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise { rng: rand::rngs::StdRng::seed_from_u64(seed) }
    }

    pub fn sample(&mut self, sd: f64) -> f64 {
        if sd > 0.0 {
            Normal::new(0.0, sd).expect("a positive deviation").sample(&mut self.rng)
        } else {
            0.0
        }
    }
}

/// Simulates the truth into `req.truth` (checked request, free `out`).
pub fn simulate_truth(req: &SynthRequest, progress: &dyn Progress) -> Result<Truth> {
    req.check()?;
    if req.out.meta_path().exists() {
        return Err(Error::input(format!("{}: already holds a session; choose another --out", req.out.path().display())));
    }
    let (frames, rig_file, rig_text) = match &req.rig {
        Some(r) => (r.rig.frames, r.path.display().to_string(), r.text.clone()),
        None => (frames_of_scene(&req.scene), String::new(), format!("# frames of the scene {}\n", req.scene_path.display())),
    };
    let waypoints: Vec<(f64, [f64; 6])> = match (&req.trajectory, &req.scene.base) {
        (Some((_, samples)), _) => samples.clone(),
        (None, BaseSpec::Prescribed { waypoints }) if !waypoints.is_empty() => {
            req.scene.held_waypoints().iter().map(|w| (w[0], [w[1], w[2], w[3], w[4], w[5], w[6]])).collect()
        }
        _ => {
            return Err(Error::input(format!(
                "{}: base: a synthetic session needs a robot: kind = \"prescribed\" with waypoints (or --trajectory)",
                req.scene_path.display()
            )))
        }
    };
    PoseTrajectory::from_ur(waypoints.clone()).map_err(|e| Error::input(format!("{}: {e}", req.scene_path.display())))?;
    let rod = req.rod.with_material(req.material);
    progress.note(&format!("simulating the truth into {}", req.truth.display()));
    let started = std::time::Instant::now();
    let simulated = crate::simulate::run(
        &SimulateJob {
            rod: &rod,
            rod_path: &req.rod_path,
            scene: req.scene.clone(),
            scene_path: &req.scene_path,
            params_path: None,
            base: match &req.trajectory {
                Some((path, samples)) => BaseSource::Trajectory { samples: samples.clone(), path: path.clone() },
                None => BaseSource::Scene,
            },
            rig_frames: Some(frames),
            duration_s: req.duration_s,
            out: &req.truth,
            damaged: session::Damaged::Refuse,
            session_loads: None,
        },
        progress,
    )?;
    Ok(Truth { simulated, frames, rig_file, rig_text, waypoints, simulate_wall_s: started.elapsed().as_secs_f64() })
}

/// The truth file of a session made from `truth`.
pub fn truth_file(req: &SynthRequest, truth: &Truth, t0_host_ns: i64, live: bool, stage_wall_s: Vec<(String, f64)>) -> TruthFile {
    TruthFile {
        session: req.out.path().display().to_string(),
        rod: req.rod_path.display().to_string(),
        scene: req.scene_path.display().to_string(),
        e_pa: req.material.e_pa,
        g_pa: req.material.g_pa,
        rho_kg_m3: req.material.rho_kg_m3,
        mass_kg: truth.simulated.summary.mass_kg,
        marker_noise_m: if live { 0.0 } else { req.marker_noise_m },
        force_noise_n: if req.flange_sensor { req.force_noise_n } else { 0.0 },
        moment_noise_nm: if req.flange_sensor { req.moment_noise_nm } else { 0.0 },
        ft_bias: req.ft_bias,
        friction_mu: req.scene.table.as_ref().map(|t| t.mu),
        mounted_at_s: req.mounted_at_s,
        t0_host_ns,
        seed: req.seed,
        mode: if live { "live" } else { "direct" }.into(),
        stage_wall_s,
    }
}

/// Writes the truth file into the truth directory.
pub fn write_truth(req: &SynthRequest, t: &TruthFile) -> Result<()> {
    std::fs::create_dir_all(&req.truth).map_err(|e| Error::io(format!("{}: {e}", req.truth.display())))?;
    t.write(&req.truth)
}

/// The truth's material: the rod file's `body` with what is given
/// replaced. A Young's modulus without a shear modulus keeps the rod file's
/// Poisson's ratio (G scales with E): a G left at the rod file's value
/// would give the truth another material (nu 0.79 for E doubled).
pub fn truth_material(body: &rod::Material, e_pa: Option<f64>, g_pa: Option<f64>, rho_kg_m3: Option<f64>) -> rod::Material {
    let e = e_pa.unwrap_or(body.e_pa);
    rod::Material { e_pa: e, g_pa: g_pa.unwrap_or(body.g_pa * e / body.e_pa), rho_kg_m3: rho_kg_m3.unwrap_or(body.rho_kg_m3) }
}

/// What load cells on the cables read at the sensor rate (scenes that pull
/// cables): column names `CABLE_n` and `(t_s, tensions with noise)` rows.
pub type LoadCellRows = (Vec<String>, Vec<(f64, Vec<f64>)>);

/// The load cells' readings, for scenes that pull cables.
pub fn load_cell_rows(req: &SynthRequest, end_s: f64, noise: &mut Noise) -> Option<LoadCellRows> {
    if !req.scene.loads.iter().any(|l| matches!(l, sim::LoadSpec::Cable { .. })) {
        return None;
    }
    let columns: Vec<String> = req.rod.cables.iter().map(|c| format!("{}_n", c.name)).collect();
    let dt = 1.0 / req.sensor_hz;
    let n = (end_s / dt + 1e-9).floor() as usize + 1;
    let rows = (0..n)
        .map(|k| {
            let t = k as f64 * dt;
            (t, req.scene.cable_tensions_n(&req.rod, t).iter().map(|v| v + noise.sample(req.load_cell_noise_n)).collect())
        })
        .collect();
    Some((columns, rows))
}

/// The second robot's flange over the session (`--tip-robot NAME`): at the
/// scene's tip hold (world = its base frame, the clamp's mount its
/// flange), at the robot's rate, `(t_s, [x, y, z, rx, ry, rz])`. What the
/// offline session writes and the live lab's second emulator plays.
pub fn tip_robot_path(req: &SynthRequest, name: &str, end_s: f64) -> Result<Vec<(f64, [f64; 6])>> {
    if req.scene.tip.is_none() {
        return Err(Error::input(format!("--tip-robot {name}: {}: the scene holds no tip ([tip])", req.scene_path.display())));
    }
    if name == "robot" {
        return Err(Error::input("--tip-robot: \"robot\" is the base's robot; name the second one differently"));
    }
    let dt = 1.0 / req.robot_hz;
    let n = (end_s / dt + 1e-9).floor() as usize + 1;
    Ok((0..n).map(|k| k as f64 * dt).map(|t| (t, pose_to_ur(&req.scene.tip_pose_at(t).expect("a scene with [tip]")))).collect())
}

/// Writes the second robot's stream (see [`tip_robot_path`]); its rows.
fn write_tip_robot(req: &SynthRequest, name: &str, end_s: f64) -> Result<usize> {
    let path = tip_robot_path(req, name, end_s)?;
    let columns: Vec<String> = std::iter::once("timestamp".to_string()).chain((0..6).map(|i| format!("actual_TCP_pose_{i}"))).collect();
    let mut stream = StreamWriter::create(req.out.path(), name, columns, Duration::from_secs(u64::MAX / 4))?;
    let per_second = (req.robot_hz.round() as usize).max(1);
    for (k, (t, pose)) in path.iter().enumerate() {
        let row: Vec<f64> = std::iter::once(*t).chain(pose.iter().copied()).collect();
        stream.push(host_ns(*t), &row)?;
        if (k + 1) % per_second == 0 {
            stream.flush()?;
        }
    }
    stream.flush()?;
    Ok(path.len())
}

/// Makes the session by writing its streams directly.
pub fn synthesise(req: &SynthRequest, progress: &dyn Progress) -> Result<Synthesised> {
    let truth = simulate_truth(req, progress)?;
    let records = &truth.simulated.records;
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let end_s = truth.end_s();
    let flange = PoseTrajectory::from_ur(truth.waypoints.clone()).map_err(|e| Error::input(format!("{}: {e}", req.scene_path.display())))?;
    let out = req.out.path();
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: {e}", out.display())))?;
    let mut noise = Noise::new(req.seed);
    // One chunk per second of recording, as the recorder flushes.
    let never = Duration::from_secs(u64::MAX / 4);
    let per_second = |hz: f64| (hz.round() as usize).max(1);

    let robot_columns: Vec<String> = std::iter::once("timestamp".to_string())
        .chain((0..6).map(|i| format!("actual_TCP_pose_{i}")))
        .chain((0..6).map(|i| format!("actual_TCP_speed_{i}")))
        .collect();
    let mut robot = StreamWriter::create(out, "robot", robot_columns, never)?;
    let robot_dt = 1.0 / req.robot_hz;
    let n_robot = (end_s / robot_dt + 1e-9).floor() as usize + 1;
    for k in 0..n_robot {
        let t = k as f64 * robot_dt;
        let pose = flange.at(t).map_err(|e| Error::input(format!("{}: {e}", req.scene_path.display())))?;
        let mut row = vec![t];
        row.extend(pose_to_ur(&pose));
        row.extend(flange.velocity(t, 0.5 * robot_dt));
        robot.push(host_ns(t), &row)?;
        if (k + 1) % per_second(req.robot_hz) == 0 {
            robot.flush()?;
        }
    }
    robot.flush()?;
    // What a recorder would say each device recorded (the session is
    // finished: nothing of it was lost).
    let recorded = |name: &str, rows: usize| session::DeviceRecord { name: name.into(), rows: rows as u64, first_sample_s: Some(0.0), ..Default::default() };
    let mut devices = vec![recorded("robot", n_robot)];
    if let Some(name) = &req.tip_robot {
        devices.push(recorded(name, write_tip_robot(req, name, end_s)?));
    }

    if req.flange_sensor {
        let mut ft = StreamWriter::create(out, "ft300", ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"].map(String::from).to_vec(), never)?;
        let dt = 1.0 / req.sensor_hz;
        let n = (end_s / dt + 1e-9).floor() as usize + 1;
        for k in 0..n {
            let t = k as f64 * dt;
            let on_sensor = t >= req.mounted_at_s;
            let w = at_records(&t_rec, records, t.min(end_s), |r| r.base_wrench_flange).expect("within the simulated span") * if on_sensor { 1.0 } else { 0.0 };
            // Wrenches are [moment; force]; the sensor sends force first.
            let row: Vec<f64> = (0..6)
                .map(|c| {
                    let (value, sd) = if c < 3 { (w[3 + c], req.force_noise_n) } else { (w[c - 3], req.moment_noise_nm) };
                    value + req.ft_bias[c] + noise.sample(sd)
                })
                .collect();
            ft.push(host_ns(t), &row)?;
            if (k + 1) % per_second(req.sensor_hz) == 0 {
                ft.flush()?;
            }
        }
        ft.flush()?;
        devices.push(recorded("ft300", n));
    }

    // Load cells on the cables, at the sensor rate.
    if let Some((columns, rows)) = load_cell_rows(req, end_s, &mut noise) {
        let mut cells = StreamWriter::create(out, "load_cell", columns, never)?;
        for (k, (t, row)) in rows.iter().enumerate() {
            cells.push(host_ns(*t), row)?;
            if (k + 1) % per_second(req.sensor_hz) == 0 {
                cells.flush()?;
            }
        }
        cells.flush()?;
        devices.push(recorded("load_cell", rows.len()));
    }

    let markers: Vec<MarkerRow> = records
        .iter()
        .enumerate()
        .flat_map(|(k, r)| r.markers_m.iter().enumerate().map(move |(m, p)| (k, r, m, *p)))
        .map(|(k, r, m, p)| {
            // Before the rod is mounted there is nothing to track.
            let seen = r.t_s >= req.mounted_at_s;
            let at = |x: f64, noise: &mut Noise| if seen { x + noise.sample(req.marker_noise_m) } else { f64::NAN };
            MarkerRow {
                frame: k as i64,
                t_s: r.t_s,
                t_host_ns: Some(host_ns(r.t_s)),
                marker: m as u32,
                u_px: f64::NAN,
                v_px: f64::NAN,
                x_m: at(p.x, &mut noise),
                y_m: at(p.y, &mut noise),
                z_m: at(p.z, &mut noise),
                area_px: f64::NAN,
                flags: if seen { 0 } else { session::flags::MISSING },
            }
        })
        .collect();
    if markers.is_empty() {
        return Err(Error::input(format!("{}: the rod has no [[marker]]: a session needs tracked markers", req.rod_path.display())));
    }
    session::write_markers(&req.out.markers(), &markers)?;

    let notes = format!(
        "synthetic session (rodlab synth session): scene {}, rod {}; the truth is kept outside the session",
        req.scene_path.display(),
        req.rod_path.display()
    );
    let mut meta = SessionMeta::start(&notes, &truth.rig_file, &truth.rig_text, truth.frames);
    meta.finish(devices);
    meta.write(out)?;
    let t = truth_file(req, &truth, T0_HOST_NS, false, vec![]);
    write_truth(req, &t)?;
    Ok(Synthesised { session: req.out.clone(), truth_dir: req.truth.clone(), truth: t, end_s, robot_samples: n_robot, camera_frames: records.len() })
}
