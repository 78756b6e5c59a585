//! `rodlab synth session --live`: a simulated experiment played back in real
//! time through the lab's recording path. The RTDE emulator serves the
//! flange trajectory, the FT 300 emulator (behind a `socat` pty pair) the
//! simulated base wrench with bias and noise, and a camera plays a video
//! rendered from the simulated markers through a camera model (board plane,
//! marker height, lens distortion, sensor noise, the table and the rod's
//! body drawn); `rodlab record` records all three on one host clock and
//! `rodlab track` turns the video into markers in the world frame. All
//! three devices play the experiment from one wall-clock instant, so the
//! truth's t = 0 has a known host time in the session.

use crate::input_error;
use crate::simulate_cmd::at_records;
use anyhow::{Context, Result};
use lie::{Pose, Vec3};
use session::RigFrames;
use sim::StepRecord;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use track::camera::{CameraModel, PlanePose};
use track::synth::{Look, Renderer};

/// What the playback needs besides the simulation.
pub struct Playback<'a> {
    pub records: &'a [StepRecord],
    pub rod: &'a rod::Rod,
    /// The rig's frames (robot base, gravity, table); the board and the
    /// marker height are set here, facing the camera.
    pub frames: RigFrames,
    /// Flange poses in the robot's base frame, `(t_s, [x, y, z, rx, ry, rz])`.
    pub flange: &'a [(f64, [f64; 6])],
    pub robot_hz: f64,
    pub flange_sensor: bool,
    pub sensor_hz: f64,
    pub ft_bias: [f64; 6],
    pub force_noise_n: f64,
    pub moment_noise_nm: f64,
    pub camera_fps: f64,
    pub seed: u64,
    /// Load cells on the cables: column names and `(t_s, tensions)` rows as
    /// the cells read them (noise included), played by the ASCII emulator.
    pub load_cells: Option<crate::synth_session::LoadCellRows>,
    /// Session directory the recorder creates.
    pub out: &'a Path,
    /// Working files (trajectory, wrench, video, rig, camera, logs).
    pub work: &'a Path,
}

/// What came out: where the truth's t = 0 sits on the session's clock, and
/// how long each stage took.
pub struct Played {
    pub t0_host_ns: i64,
    pub stage_s: Vec<(&'static str, f64)>,
}

/// Seconds of the initial state the camera shows before t = 0.
const VIDEO_LEAD_S: f64 = 1.0;
/// Seconds from starting the recorder to the experiment's t = 0: the
/// recorder connects, opens the ports and the video meanwhile.
const START_MARGIN_S: f64 = 2.0;
/// Seconds recorded after the experiment's end.
const TAIL_S: f64 = 0.5;
/// Marker centres above the board (rod radius and the board's offset).
const MARKER_HEIGHT_M: f64 = 0.01;

/// A camera looking square at the plane the markers move in.
struct View {
    camera: CameraModel,
    world_from_board: Pose,
    /// The plane of the marker centres, in the camera.
    marker_plane: PlanePose,
}

fn plane_pose(g: &Pose) -> PlanePose {
    // Through a quaternion: a half-turn (a camera facing the board) has no
    // axis in the rotation matrix's skew part.
    let r = nalgebra::UnitQuaternion::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(g.rot)).scaled_axis();
    PlanePose { rotation_rad: [r.x, r.y, r.z], translation_m: [g.pos.x, g.pos.y, g.pos.z] }
}

/// Centre-line points drawn and tracked: the base, the markers, the tip.
fn outline(r: &StepRecord) -> Vec<Vec3> {
    std::iter::once(r.base_pose.pos).chain(r.markers_m.iter().copied()).chain(std::iter::once(r.tip_m)).collect()
}

/// Places the camera: the plane of motion is the best plane through every
/// marker of every record (the motion must be planar: one camera measures
/// a plane), image "down" along gravity, the whole motion in view.
fn place_camera(records: &[StepRecord], gravity: Vec3) -> Result<View> {
    let points: Vec<Vec3> = records.iter().flat_map(outline).collect();
    let n_pts = points.len() as f64;
    let centre = points.iter().fold(Vec3::zeros(), |a, p| a + p) / n_pts;
    let cov = points.iter().fold(lie::Mat3::zeros(), |a, p| a + (p - centre) * (p - centre).transpose()) / n_pts;
    let eig = nalgebra::SymmetricEigen::new(cov);
    let i_min = (0..3).min_by(|a, b| eig.eigenvalues[*a].total_cmp(&eig.eigenvalues[*b])).expect("three");
    let n: Vec3 = eig.eigenvectors.column(i_min).into_owned();
    let off_plane_m = points.iter().map(|p| (p - centre).dot(&n).abs()).fold(0.0, f64::max);
    if off_plane_m > 2e-3 {
        return Err(input_error(format!(
            "--live: the markers leave their best plane by {:.1} mm: one camera measures motion in a plane (use the direct mode for this scene)",
            1e3 * off_plane_m
        )));
    }
    let down = {
        let g = gravity - n * gravity.dot(&n);
        if g.norm() > 1e-9 {
            g.normalize()
        } else {
            n.cross(&Vec3::x()).try_normalize(1e-9).unwrap_or_else(|| n.cross(&Vec3::y()).normalize())
        }
    };
    let (x_c, y_c, z_c) = (down.cross(&n), down, n);
    let (mut a_min, mut a_max, mut b_min, mut b_max) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for p in &points {
        let (a, b) = ((p - centre).dot(&x_c), (p - centre).dot(&y_c));
        (a_min, a_max, b_min, b_max) = (a_min.min(a), a_max.max(a), b_min.min(b), b_max.max(b));
    }
    let margin_m = 0.03;
    let (span_a, span_b) = (a_max - a_min + 2.0 * margin_m, b_max - b_min + 2.0 * margin_m);
    let (demo, _) = track::synth::demo_camera();
    let camera = CameraModel { width_px: 960, height_px: 720, fx_px: 1750.0, fy_px: 1750.0, cx_px: 483.5, cy_px: 356.0, ..demo };
    let distance_m = (span_a * camera.fx_px / camera.width_px as f64).max(span_b * camera.fy_px / camera.height_px as f64).max(0.2);
    let look_at = centre + x_c * 0.5 * (a_min + a_max) + y_c * 0.5 * (b_min + b_max);
    let world_from_camera = Pose { rot: lie::Mat3::from_columns(&[x_c, y_c, z_c]), pos: look_at - n * distance_m };
    // The board lies behind the markers, its z towards the camera.
    let z_b = -n;
    let world_from_board = Pose { rot: lie::Mat3::from_columns(&[x_c, z_b.cross(&x_c), z_b]), pos: centre + n * MARKER_HEIGHT_M };
    let camera_from_board = world_from_camera.inverse().compose(&world_from_board);
    let board = plane_pose(&camera_from_board);
    let marker_plane = board.offset(MARKER_HEIGHT_M);
    Ok(View { camera: CameraModel { plane: Some(board), plane_offset_m: None, ..camera }, world_from_board, marker_plane })
}

/// Interpolated centre-line outline at simulation time `t_s` (held outside the run).
fn outline_at(t_rec: &[f64], records: &[StepRecord], t_s: f64) -> Vec<Vec3> {
    let t = t_s.clamp(t_rec[0], *t_rec.last().expect("records"));
    let n = outline(&records[0]).len();
    (0..n).map(|i| at_records(t_rec, records, t, |r| outline(r)[i]).expect("inside the run")).collect()
}

/// Renders the experiment to `video` (lossless), `VIDEO_LEAD_S` of the
/// initial state first. Returns the markers.toml text for the tracker.
fn render_video(p: &Playback, frames: &RigFrames, view: &View, video: &Path) -> Result<String> {
    let records = p.records;
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let end_s = *t_rec.last().expect("records");
    let rod = p.rod;
    let radius_m = rod.cross_section.outer.radius_m(0.5 * rod.length_m, rod.length_m);
    let look = Look { marker_radius_m: (0.6 * radius_m).min(0.003), seed: p.seed, ..Look::default() };
    let mut renderer = Renderer::new(view.camera.clone(), view.marker_plane.clone(), look);
    let board_from_world = view.world_from_board.inverse();
    let to_plane = |x: &Vec3| {
        let b = board_from_world.transform_point(x);
        [b.x, b.y]
    };
    if let Some(table) = frames.table {
        let (point, normal) = (Vec3::from(table.point_m), Vec3::from(table.normal).normalize());
        let (camera, plane, board) = (&view.camera, &view.marker_plane, &view.world_from_board);
        renderer.paint_background(
            |u, v| {
                camera.pixel_to_plane(plane, u as f64, v as f64).is_some_and(|q| {
                    let w = board.transform_point(&Vec3::new(q[0], q[1], MARKER_HEIGHT_M));
                    (w - point).dot(&normal) < -radius_m
                })
            },
            [70.0, 95.0, 125.0],
        );
    }
    let mut sink = track::source::VideoSink::create(video, p.camera_fps, view.camera.width_px as i32, view.camera.height_px as i32)
        .map_err(|e| anyhow::anyhow!("{}: {e}", video.display()))?;
    let n_frames = ((VIDEO_LEAD_S + end_s + TAIL_S) * p.camera_fps).ceil() as usize;
    let bar = indicatif::ProgressBar::new(n_frames as u64);
    for j in 0..n_frames {
        let t_s = j as f64 / p.camera_fps - VIDEO_LEAD_S;
        let line = outline_at(&t_rec, records, t_s);
        // The body: discs every third of a radius along the centre line.
        let mut body = vec![];
        for w in line.windows(2) {
            let steps = ((w[1] - w[0]).norm() / (radius_m / 3.0)).ceil().max(1.0) as usize;
            body.extend((0..steps).map(|s| to_plane(&(w[0] + (w[1] - w[0]) * (s as f64 / steps as f64)))));
        }
        let markers: Vec<[f64; 2]> = line[1..line.len() - 1].iter().map(to_plane).collect();
        let image = renderer.render_with_body(&[markers], &[], &body, radius_m);
        sink.write(&image.to_mat().map_err(|e| anyhow::anyhow!("{e}"))?).map_err(|e| anyhow::anyhow!("{}: {e}", video.display()))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    sink.finish().map_err(|e| anyhow::anyhow!("{}: {e}", video.display()))?;
    let base_px = view.camera.plane_to_pixel(&view.marker_plane, {
        let b = to_plane(&records[0].base_pose.pos);
        [b[0], b[1], 0.0]
    });
    Ok(format!(
        "# Markers of the virtual lab's rod (written by rodlab synth session --live).\ncount = {}\nbase_px = [{:.1}, {:.1}]\n",
        rod.markers.len(),
        base_px[0],
        base_px[1]
    ))
}

/// Child processes, killed when dropped (whatever way the playback ends).
struct Children(Vec<(String, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn unix_now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

/// A CSV of `(t_s, values)` rows under `header` (values at full precision).
fn write_csv<R: AsRef<[f64]>>(path: &Path, header: &str, rows: impl IntoIterator<Item = (f64, R)>) -> Result<()> {
    let mut text = format!("{header}\n");
    for (t, v) in rows {
        let values: Vec<String> = v.as_ref().iter().map(|x| x.to_string()).collect();
        text.push_str(&format!("{t:.6},{}\n", values.join(",")));
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Starts the RTDE emulator on a free loopback port; returns its address.
fn start_robot(exe: &Path, trajectory: &Path, start_unix_s: f64, children: &mut Children) -> Result<String> {
    let mut child = Command::new(exe)
        .args(["emulate", "robot", "--bind", "127.0.0.1:0", "--rate-hz", "500", "--trajectory"])
        .arg(trajectory)
        .args(["--start-at-unix-s", &format!("{start_unix_s:.6}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the RTDE emulator")?;
    let stdout = child.stdout.take().expect("piped");
    children.0.push(("RTDE emulator".into(), child));
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line).context("reading the RTDE emulator's address")?;
    line.split_whitespace().nth(4).map(str::to_string).ok_or_else(|| anyhow::anyhow!("the RTDE emulator did not say where it listens: {line:?}"))
}

/// A `socat` pty pair named `name`; returns (emulator side, recorder side).
fn start_pty_pair(work: &Path, name: &str, children: &mut Children) -> Result<(PathBuf, PathBuf)> {
    let (a, b) = (work.join(format!("{name}-a")), work.join(format!("{name}-b")));
    let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
    let child = Command::new("socat")
        .arg(format!("pty,raw,echo=0,link={}", a.display()))
        .arg(format!("pty,raw,echo=0,link={}", b.display()))
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| input_error(format!("--live needs socat for the sensors' serial lines (scripts/setup.sh installs it): {e}")))?;
    children.0.push(("socat".into(), child));
    let t = Instant::now();
    while !(a.exists() && b.exists()) {
        if t.elapsed() > Duration::from_secs(5) {
            anyhow::bail!("socat made no pty pair at {} in 5 s", work.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok((a, b))
}

#[derive(serde::Serialize)]
struct RigOut<'a> {
    session: SessionOut,
    frames: RigFrames,
    robot: Vec<RobotOut>,
    ft300: Vec<Ft300Out>,
    ascii: Vec<AsciiOut>,
    camera: Vec<CameraOut<'a>>,
}
#[derive(serde::Serialize)]
struct AsciiOut {
    name: String,
    port: String,
    separator: String,
    columns: Vec<String>,
}
#[derive(serde::Serialize)]
struct SessionOut {
    operator_notes: String,
}
#[derive(serde::Serialize)]
struct RobotOut {
    name: String,
    address: String,
    frequency_hz: f64,
    variables: Vec<String>,
}
#[derive(serde::Serialize)]
struct Ft300Out {
    name: String,
    port: String,
}
#[derive(serde::Serialize)]
struct CameraOut<'a> {
    name: &'a str,
    file: String,
    file_start_unix_s: f64,
    container: &'a str,
}

/// Plays the experiment through the emulators into `rodlab record`, then
/// tracks the recorded video.
pub fn play(p: &Playback) -> Result<Played> {
    if p.out.exists() {
        return Err(input_error(format!("{}: already exists; choose another --out", p.out.display())));
    }
    std::fs::create_dir_all(p.work).with_context(|| format!("creating {}", p.work.display()))?;
    let exe = std::env::current_exe().context("locating the rodlab binary")?;
    let end_s = p.records.last().map_or(0.0, |r| r.t_s);
    let mut stage_s = vec![];

    let t = Instant::now();
    let view = place_camera(p.records, p.frames.gravity())?;
    let frames = RigFrames { board: lie::FramePose::from_pose(&view.world_from_board), marker_height_m: MARKER_HEIGHT_M, ..p.frames };
    let video = p.work.join("scene.mkv");
    println!("rendering the camera's video into {}", video.display());
    let markers_toml = render_video(p, &frames, &view, &video)?;
    let camera_toml = p.work.join("camera.toml");
    view.camera.save(&camera_toml).with_context(|| format!("writing {}", camera_toml.display()))?;
    let markers_file = p.work.join("markers.toml");
    std::fs::write(&markers_file, markers_toml)?;
    let trajectory = p.work.join("flange.csv");
    write_csv(&trajectory, "t_s,x_m,y_m,z_m,rx,ry,rz", p.flange.iter().copied())?;
    let wrench = p.work.join("wrench.csv");
    // Wrenches are [moment; force]; the sensor sends force first.
    write_csv(
        &wrench,
        "t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm",
        p.records.iter().map(|r| {
            let w = r.base_wrench_flange;
            (r.t_s, [w[3], w[4], w[5], w[0], w[1], w[2]])
        }),
    )?;
    stage_s.push(("render", t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let mut children = Children(vec![]);
    let start_unix_s = unix_now_s() + START_MARGIN_S;
    let address = start_robot(&exe, &trajectory, start_unix_s, &mut children)?;
    let mut ft300 = vec![];
    if p.flange_sensor {
        let (a, b) = start_pty_pair(p.work, "ft300", &mut children)?;
        let bias = p.ft_bias.map(|v| v.to_string()).join(",");
        let child = Command::new(&exe)
            .args(["emulate", "ft300", "--port"])
            .arg(&a)
            .args(["--rate-hz", &p.sensor_hz.to_string(), "--wrench"])
            .arg(&wrench)
            .args(["--start-at-unix-s", &format!("{start_unix_s:.6}"), "--bias", &bias])
            .args(["--noise-n", &p.force_noise_n.to_string(), "--noise-nm", &p.moment_noise_nm.to_string(), "--seed", &p.seed.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .context("starting the FT 300 emulator")?;
        children.0.push(("FT 300 emulator".into(), child));
        ft300.push(Ft300Out { name: "ft300".into(), port: b.display().to_string() });
    }
    let mut ascii = vec![];
    if let Some((columns, rows)) = &p.load_cells {
        let values = p.work.join("load-cells.csv");
        write_csv(&values, &format!("t_s,{}", columns.join(",")), rows.iter().map(|(t, v)| (*t, v)))?;
        let (a, b) = start_pty_pair(p.work, "load-cells", &mut children)?;
        let child = Command::new(&exe)
            .args(["emulate", "ascii-sensor", "--port"])
            .arg(&a)
            .args(["--rate-hz", &p.sensor_hz.to_string(), "--values"])
            .arg(&values)
            .args(["--start-at-unix-s", &format!("{start_unix_s:.6}")])
            .stdout(Stdio::null())
            .spawn()
            .context("starting the load cells' emulator")?;
        children.0.push(("load cell emulator".into(), child));
        ascii.push(AsciiOut { name: "load_cell".into(), port: b.display().to_string(), separator: ",".into(), columns: columns.clone() });
    }
    let rig = RigOut {
        session: SessionOut { operator_notes: "virtual lab (rodlab synth session --live): emulators playing a simulated experiment".into() },
        frames,
        robot: vec![RobotOut {
            name: "robot".into(),
            address,
            frequency_hz: p.robot_hz,
            variables: ["actual_TCP_pose", "actual_TCP_speed", "actual_q"].map(String::from).to_vec(),
        }],
        ft300,
        ascii,
        camera: vec![CameraOut { name: "camera", file: video.display().to_string(), file_start_unix_s: start_unix_s - VIDEO_LEAD_S, container: "mkv" }],
    };
    let rig_file = p.work.join("rig.toml");
    let rig_text = toml::to_string(&rig).context("rig.toml")?;
    std::fs::write(&rig_file, format!("# The virtual lab's rig (rodlab synth session --live).\n{rig_text}"))?;
    let duration_s = start_unix_s - unix_now_s() + end_s + TAIL_S;
    let log = p.work.join("record.log");
    println!("recording {:.1} s in real time through the emulators into {} (log {})", duration_s, p.out.display(), log.display());
    let status = Command::new(&exe)
        .args(["record", "--rig"])
        .arg(&rig_file)
        .arg("--out")
        .arg(p.out)
        .args(["--duration", &format!("{duration_s:.3}")])
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::options().append(true).open(&log)?)
        .status()
        .context("running rodlab record")?;
    drop(children);
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        anyhow::bail!("rodlab record failed ({status}): {}", text.lines().last().unwrap_or(""));
    }
    stage_s.push(("record", t.elapsed().as_secs_f64()));
    // The rendered video is now the session's camera.mkv: no second copy.
    let _ = std::fs::remove_file(&video);

    let t = Instant::now();
    crate::track_cmd::track(crate::track_cmd::TrackArgs {
        input: p.out.join("camera.mkv"),
        camera: camera_toml,
        markers: Some(markers_file),
        frames: None,
        fps: None,
        out: p.out.join("markers.parquet"),
        overlay: None,
        marker_height_m: None,
    })?;
    stage_s.push(("track", t.elapsed().as_secs_f64()));

    let meta = session::SessionMeta::read(p.out).map_err(|e| anyhow::anyhow!("{e}"))?.ok_or_else(|| anyhow::anyhow!("{}: no session.toml", p.out.display()))?;
    let t0_host_ns = ((start_unix_s - meta.start_unix_s) * 1e9).round() as i64;
    Ok(Played { t0_host_ns, stage_s })
}
