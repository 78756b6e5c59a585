//! A simulated experiment played back in real time through the lab's
//! recording path, all in this process: the RTDE emulator serves the
//! flange trajectory on loopback, the FT 300 and load-cell emulators write
//! to pty pairs (the recorder opens their other sides as it would USB
//! adapters), and a camera plays a video rendered from the simulated
//! markers through a camera model (board plane, marker height, lens
//! distortion, sensor noise, the table and the rod's body drawn). The
//! recorder records all of them on one host clock and the tracker turns
//! the video into markers in the world frame. Every device plays the
//! experiment from one wall-clock instant, so the truth's t = 0 has a
//! known host time in the session.

use crate::emulate::{unix_now_s, AsciiEmulator, Ft300Emulator, RobotEmulator};
use lab::error::{Context, Error, Result};
use lab::progress::Progress;
use lab::simulate::at_records;
use lab::synth::{load_cell_rows, simulate_truth, truth_file, write_truth, Noise, SynthRequest, Synthesised};
use lie::{Pose, Vec3};
use record::serial::PtyPair;
use session::rig::{AsciiDevice, CameraDevice, Ft300Device, NetFtDevice, RobotDevice, SessionInfo};
use session::{Rig, RigFrames};
use sim::StepRecord;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use track::camera::{CameraModel, PlanePose};
use track::synth::{Look, Renderer};

/// Seconds of the initial state the camera shows before t = 0.
pub(crate) const VIDEO_LEAD_S: f64 = 1.0;
/// Seconds from starting the recorder to the experiment's t = 0: the
/// recorder connects, opens the ports and the video meanwhile.
const START_MARGIN_S: f64 = 2.0;
/// Seconds recorded after the experiment's end.
pub(crate) const TAIL_S: f64 = 0.5;
/// Marker centres above the board (rod radius and the board's offset).
pub(crate) const MARKER_HEIGHT_M: f64 = 0.01;

/// A camera looking square at the plane the markers move in.
struct View {
    camera: CameraModel,
    world_from_board: Pose,
    /// The plane of the marker centres, in the camera.
    marker_plane: PlanePose,
}

pub(crate) fn plane_pose(g: &Pose) -> PlanePose {
    // Through a quaternion: a half-turn (a camera facing the board) has no
    // axis in the rotation matrix's skew part.
    let r = nalgebra::UnitQuaternion::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(g.rot)).scaled_axis();
    PlanePose { rotation_rad: [r.x, r.y, r.z], translation_m: [g.pos.x, g.pos.y, g.pos.z] }
}

/// Centre-line points drawn and tracked: the base, the markers, the tip.
fn outline(r: &StepRecord) -> Vec<Vec3> {
    std::iter::once(r.base_pose.pos).chain(r.markers_m.iter().copied()).chain(std::iter::once(r.tip_m)).collect()
}

/// Where an experiment's markers move: the centre of every outline point
/// of every record, the normal of their best plane, image "down" (gravity
/// in that plane), and how far the points leave the plane.
pub(crate) struct Motion {
    pub points: Vec<Vec3>,
    pub centre: Vec3,
    pub normal: Vec3,
    pub down: Vec3,
    pub off_plane_m: f64,
}

pub(crate) fn motion_of(records: &[StepRecord], gravity: Vec3) -> Motion {
    let points: Vec<Vec3> = records.iter().flat_map(outline).collect();
    let n_pts = points.len() as f64;
    let centre = points.iter().fold(Vec3::zeros(), |a, p| a + p) / n_pts;
    let cov = points.iter().fold(lie::Mat3::zeros(), |a, p| a + (p - centre) * (p - centre).transpose()) / n_pts;
    let eig = nalgebra::SymmetricEigen::new(cov);
    let i_min = (0..3).min_by(|a, b| eig.eigenvalues[*a].total_cmp(&eig.eigenvalues[*b])).expect("three");
    let n: Vec3 = eig.eigenvectors.column(i_min).into_owned();
    let off_plane_m = points.iter().map(|p| (p - centre).dot(&n).abs()).fold(0.0, f64::max);
    let down = {
        let g = gravity - n * gravity.dot(&n);
        if g.norm() > 1e-9 {
            g.normalize()
        } else {
            n.cross(&Vec3::x()).try_normalize(1e-9).unwrap_or_else(|| n.cross(&Vec3::y()).normalize())
        }
    };
    Motion { points, centre, normal: n, down, off_plane_m }
}

impl Motion {
    /// The camera's axes (x right, y down, z along the normal) and the
    /// extent of the motion along x and y: (axes, look-at point, spans \[m\]).
    pub fn framing(&self, margin_m: f64) -> ([Vec3; 3], Vec3, [f64; 2]) {
        let (x_c, y_c, z_c) = (self.down.cross(&self.normal), self.down, self.normal);
        let (mut a_min, mut a_max, mut b_min, mut b_max) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for p in &self.points {
            let (a, b) = ((p - self.centre).dot(&x_c), (p - self.centre).dot(&y_c));
            (a_min, a_max, b_min, b_max) = (a_min.min(a), a_max.max(a), b_min.min(b), b_max.max(b));
        }
        let look_at = self.centre + x_c * 0.5 * (a_min + a_max) + y_c * 0.5 * (b_min + b_max);
        ([x_c, y_c, z_c], look_at, [a_max - a_min + 2.0 * margin_m, b_max - b_min + 2.0 * margin_m])
    }

    /// The board behind the markers (the world's board for the rig), its z
    /// towards the cameras.
    pub fn board(&self) -> Pose {
        let x_c = self.down.cross(&self.normal);
        let z_b = -self.normal;
        Pose { rot: lie::Mat3::from_columns(&[x_c, z_b.cross(&x_c), z_b]), pos: self.centre + self.normal * MARKER_HEIGHT_M }
    }
}

/// The virtual lab's lens: the demo camera's, at 960 x 720.
pub(crate) fn lab_camera() -> CameraModel {
    let (demo, _) = track::synth::demo_camera();
    CameraModel { width_px: 960, height_px: 720, fx_px: 1750.0, fy_px: 1750.0, cx_px: 483.5, cy_px: 356.0, ..demo }
}

/// Places the camera: the plane of motion is the best plane through every
/// marker of every record (the motion must be planar: one camera measures
/// a plane), image "down" along gravity, the whole motion in view.
fn place_camera(records: &[StepRecord], gravity: Vec3) -> Result<View> {
    let motion = motion_of(records, gravity);
    if motion.off_plane_m > 2e-3 {
        return Err(Error::input(format!(
            "--live: the markers leave their best plane by {:.1} mm: one camera measures motion in a plane (record it with --cameras 2, or use the direct mode)",
            1e3 * motion.off_plane_m
        )));
    }
    let ([x_c, y_c, z_c], look_at, [span_a, span_b]) = motion.framing(0.03);
    let camera = lab_camera();
    let distance_m = (span_a * camera.fx_px / camera.width_px as f64).max(span_b * camera.fy_px / camera.height_px as f64).max(0.2);
    let world_from_camera = Pose { rot: lie::Mat3::from_columns(&[x_c, y_c, z_c]), pos: look_at - z_c * distance_m };
    let world_from_board = motion.board();
    let camera_from_board = world_from_camera.inverse().compose(&world_from_board);
    let board = plane_pose(&camera_from_board);
    let marker_plane = board.offset(MARKER_HEIGHT_M);
    Ok(View { camera: CameraModel { plane: Some(board), plane_offset_m: None, ..camera }, world_from_board, marker_plane })
}

/// Interpolated centre-line outline at simulation time `t_s` (held outside the run).
pub(crate) fn outline_at(t_rec: &[f64], records: &[StepRecord], t_s: f64) -> Vec<Vec3> {
    let t = t_s.clamp(t_rec[0], *t_rec.last().expect("records"));
    let n = outline(&records[0]).len();
    (0..n).map(|i| at_records(t_rec, records, t, |r| outline(r)[i]).expect("inside the run")).collect()
}

/// The rod's body radius, and how its markers look, for rendering.
pub(crate) fn rod_look(rod: &rod::Rod, seed: u64) -> (f64, Look) {
    let (half_w_m, half_h_m) = rod.cross_section.half_extents_m(0.5 * rod.length_m, rod.length_m);
    let radius_m: f64 = half_w_m.min(half_h_m);
    (radius_m, Look { marker_radius_m: (0.6 * radius_m).min(0.003), seed, ..Look::default() })
}

/// Paints the rig's table (where it is) behind the rod, as `camera` sees
/// it through `marker_plane` (the board raised to the markers, in the
/// camera), the board at `world_from_board`.
pub(crate) fn paint_table(renderer: &mut Renderer, frames: &RigFrames, marker_plane: &PlanePose, world_from_board: &Pose, radius_m: f64) {
    let Some(table) = frames.table else { return };
    let (point, normal) = (Vec3::from(table.point_m), Vec3::from(table.normal).normalize());
    let camera = renderer.camera.clone();
    renderer.paint_background(
        |u, v| {
            camera.pixel_to_plane(marker_plane, u as f64, v as f64).is_some_and(|q| {
                let w = world_from_board.transform_point(&Vec3::new(q[0], q[1], MARKER_HEIGHT_M));
                (w - point).dot(&normal) < -radius_m
            })
        },
        [70.0, 95.0, 125.0],
    );
}

/// The body's discs (every third of a radius along the centre line `line`)
/// and the markers (the line without its base and tip), in the world.
pub(crate) fn body_and_markers(line: &[Vec3], radius_m: f64) -> (Vec<Vec3>, Vec<Vec3>) {
    let mut body = vec![];
    for w in line.windows(2) {
        let steps = ((w[1] - w[0]).norm() / (radius_m / 3.0)).ceil().max(1.0) as usize;
        body.extend((0..steps).map(|s| w[0] + (w[1] - w[0]) * (s as f64 / steps as f64)));
    }
    (body, line[1..line.len() - 1].to_vec())
}

/// What a rendered camera films: the records, their times, the run's end,
/// the frame rate and the rod's body radius.
pub(crate) struct Shot<'a> {
    pub records: &'a [StepRecord],
    pub t_rec: &'a [f64],
    pub end_s: f64,
    pub camera_fps: f64,
    pub radius_m: f64,
    /// Which markers this camera sees once the experiment starts (empty:
    /// all of them; the lead shows every marker, as a tracker needs them
    /// all in a camera's first frame).
    pub shown: Vec<bool>,
}

/// Renders every frame of `shot` through `renderer` into `video`
/// (uncompressed, an `.avi`), `VIDEO_LEAD_S` of the initial state first;
/// `in_renderer` takes a world point to the renderer's plane frame.
///
/// Uncompressed because the recorder plays it as a camera in real time
/// beside the robots' emulators: a 960x720 HuffYUV frame took 15 ms to
/// decode here (45 % of a core at 30 frames/s), a raw one 3.7 ms through
/// OpenCV. Beside four busy processes on two cores the camera playing
/// HuffYUV fell 3.3 s behind its file in 13 s: every frame late by more
/// and more, the last 3 s never recorded, and markers stamped up to
/// 159 mm from the truth (the loop's live day; fresh-clone CI failed it so).
pub(crate) fn render_frames(
    renderer: &mut Renderer,
    shot: &Shot,
    in_renderer: impl Fn(&Vec3) -> [f64; 3] + Sync,
    video: &Path,
    task_name: &str,
    progress: &dyn Progress,
) -> Result<()> {
    let camera = &renderer.camera;
    let sink = track::source::VideoSink::create_as(video, session::VideoFormat::Raw, shot.camera_fps, camera.width_px as i32, camera.height_px as i32)
        .context(video.display())?;
    let n_frames = ((VIDEO_LEAD_S + shot.end_s + TAIL_S) * shot.camera_fps).ceil() as usize;
    let task = progress.task(task_name, Some(n_frames as u64));
    let frame = |j: usize| {
        let t_s = j as f64 / shot.camera_fps - VIDEO_LEAD_S;
        let (body, markers) = body_and_markers(&outline_at(shot.t_rec, shot.records, t_s), shot.radius_m);
        let (body, markers): (Vec<[f64; 3]>, Vec<[f64; 3]>) = (body.iter().map(&in_renderer).collect(), markers.iter().map(&in_renderer).collect());
        let shown: &[bool] = if t_s < 0.0 { &[] } else { &shot.shown };
        renderer.render_3d(&[markers], shown, &body, shot.radius_m).to_mat()
    };
    sink.write_frames(n_frames, frame, |j| task.set(j as u64 + 1)).context(video.display())?;
    Ok(())
}

/// Renders the experiment to `video` (lossless), `VIDEO_LEAD_S` of the
/// initial state first. Returns the markers.toml text for the tracker.
fn render_video(
    records: &[StepRecord],
    rod: &rod::Rod,
    (camera_fps, seed): (f64, u64),
    frames: &RigFrames,
    view: &View,
    video: &Path,
    progress: &dyn Progress,
) -> Result<String> {
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let end_s = *t_rec.last().expect("records");
    let (radius_m, look) = rod_look(rod, seed);
    let mut renderer = Renderer::new(view.camera.clone(), view.marker_plane.clone(), look);
    let board_from_world = view.world_from_board.inverse();
    let to_plane = |x: &Vec3| {
        let b = board_from_world.transform_point(x);
        [b.x, b.y]
    };
    paint_table(&mut renderer, frames, &view.marker_plane, &view.world_from_board, radius_m);
    // The markers' plane is the renderer's: points at z = 0 on it.
    let on_plane = |x: &Vec3| {
        let [u, v] = to_plane(x);
        [u, v, 0.0]
    };
    let shot = Shot { records, t_rec: &t_rec, end_s, camera_fps, radius_m, shown: vec![] };
    render_frames(&mut renderer, &shot, on_plane, video, "render", progress)?;
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

/// Emulators running in this process, stopped (and their threads joined)
/// when dropped, whatever way the playback ends.
struct Devices {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<Result<u64>>>,
    _robot: record::rtde::Emulator,
    /// The second robot holding the rod's tip (`--tip-robot`).
    _tip_robot: Option<record::rtde::Emulator>,
    _lines: Vec<PtyPair>,
    _netft: Option<record::netft::NetFtEmulator>,
}

impl Drop for Devices {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A session recorded live, and what the recorder counted per device.
pub struct Live {
    pub made: Synthesised,
    pub recording: crate::record::Recording,
    pub tracked: Tracking,
}

/// How the virtual lab's video was tracked: one camera, or a set.
pub enum Tracking {
    One(crate::track::Tracked),
    Set(crate::track::SetTracked),
}

/// The virtual lab's cameras, rendered: the rig's frames (the board the
/// cameras were placed by), each camera's name and video, its calibration
/// (camera.toml, or cameras.toml for a set) and markers file.
struct Rendered {
    frames: RigFrames,
    videos: Vec<(String, std::path::PathBuf)>,
    calibration: std::path::PathBuf,
    markers_file: std::path::PathBuf,
    set: bool,
}

/// Places and renders the request's cameras (one square to the plane of
/// motion, or a set around the motion) into `work`.
fn render_cameras(req: &SynthRequest, records: &[StepRecord], frames: &RigFrames, camera_fps: f64, work: &Path, progress: &dyn Progress) -> Result<Rendered> {
    let write = |path: &Path, text: &str| std::fs::write(path, text).map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())));
    let markers_file = work.join("markers.toml");
    if req.cameras >= 2 {
        let view = crate::live_set::place_camera_set(records, frames.gravity(), req.cameras);
        let frames = RigFrames { board: lie::FramePose::from_pose(&view.world_from_board), marker_height_m: MARKER_HEIGHT_M, ..*frames };
        progress.note(&format!("rendering {} cameras' videos into {}", req.cameras, work.display()));
        let (videos, markers_toml) = crate::live_set::render_set_videos(records, req, camera_fps, &frames, &view, work, progress)?;
        let calibration = work.join("cameras.toml");
        view.set.save(&calibration).map_err(|e| Error::io(format!("{}: cannot write: {e}", calibration.display())))?;
        write(&markers_file, &markers_toml)?;
        let videos = view.set.names().into_iter().zip(videos).collect();
        return Ok(Rendered { frames, videos, calibration, markers_file, set: true });
    }
    let view = place_camera(records, frames.gravity())?;
    let frames = RigFrames { board: lie::FramePose::from_pose(&view.world_from_board), marker_height_m: MARKER_HEIGHT_M, ..*frames };
    let video = work.join("scene.avi");
    progress.note(&format!("rendering the camera's video into {}", video.display()));
    let markers_toml = render_video(records, &req.rod, (camera_fps, req.seed), &frames, &view, &video, progress)?;
    let calibration = work.join("camera.toml");
    view.camera.save(&calibration).map_err(|e| Error::io(format!("{}: cannot write: {e}", calibration.display())))?;
    write(&markers_file, &markers_toml)?;
    Ok(Rendered { frames, videos: vec![("camera".into(), video)], calibration, markers_file, set: false })
}

/// The video the recorder wrote for camera `name` in the session `out`.
fn recorded_video(out: &session::SessionDir, name: &str) -> Result<std::path::PathBuf> {
    out.find_video(name).ok_or_else(|| Error::io(format!("{}: the recording has no video of camera {name}", out.path().display())))
}

/// What a flange sensor reads of the simulated wrench (force then moment,
/// flange frame) at the wrench table's time: the request's bias added and
/// its noise drawn (`salt` keeps two sensors' noises apart).
fn sensor_reading(req: &SynthRequest, wrench: &[(f64, [f64; 6])], salt: u64) -> Result<impl Fn(f64) -> [f64; 6] + Send + Sync + 'static> {
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};
    let table = record::serial_emulators::WrenchTable::new(wrench.to_vec()).map_err(|e| Error::input(format!("the simulated wrench: {e}")))?;
    let (bias, noise) = (req.ft_bias, [req.force_noise_n, req.moment_noise_nm]);
    let rng = std::sync::Mutex::new(rand::rngs::StdRng::seed_from_u64(req.seed ^ salt));
    Ok(move |t: f64| -> [f64; 6] {
        let w = table.at(t);
        let mut rng = rng.lock().expect("the noise is not poisoned");
        std::array::from_fn(|k| {
            let value = if k < 3 { w.force_n[k] } else { w.moment_nm[k - 3] };
            let sd = noise[k / 3];
            value + bias[k] + if sd > 0.0 { Normal::new(0.0, sd).expect("a valid sd").sample(&mut *rng) } else { 0.0 }
        })
    })
}

/// What the controller reports as `actual_TCP_force`: the sensor's reading
/// turned into the robot's base frame by the flange's orientation then.
fn robot_wrench(req: &SynthRequest, wrench: &[(f64, [f64; 6])], waypoints: &[(f64, [f64; 6])]) -> Result<record::rtde::WrenchSignal> {
    let reading = sensor_reading(req, wrench, 0x7263_6670)?;
    let flange = lie::trajectory::PoseTrajectory::from_ur(waypoints.to_vec()).map_err(|e| Error::input(format!("the simulated trajectory: {e}")))?;
    let (first, last) = flange.span_s();
    Ok(record::rtde::WrenchSignal(Arc::new(move |t: f64| -> [f64; 6] {
        let sensor = reading(t);
        let rot = flange.at(t.clamp(first, last)).expect("clamped into the span").rot;
        let f = rot * lie::Vec3::new(sensor[0], sensor[1], sensor[2]);
        let m = rot * lie::Vec3::new(sensor[3], sensor[4], sensor[5]);
        [f.x, f.y, f.z, m.x, m.y, m.z]
    })))
}

/// Net F/T records per second in the virtual lab (a Net F/T's usual RDT rate).
const NETFT_HZ: f64 = 1000.0;

/// A Net F/T emulator playing the sensor's reading from `start_unix_s` on.
fn netft_emulator(req: &SynthRequest, wrench: &[(f64, [f64; 6])], start_unix_s: f64) -> Result<record::netft::NetFtEmulator> {
    let reading = sensor_reading(req, wrench, 0x6e65_7466)?;
    // The emulator's clock starts when it is spawned; the table's t = 0 is `start_unix_s`.
    let offset_s = start_unix_s - unix_now_s();
    let cfg = record::netft::NetFtEmulatorConfig {
        wrench: Arc::new(move |t| reading(t - offset_s)),
        ..record::netft::NetFtEmulatorConfig::constant(NETFT_HZ, [0.0; 6])
    };
    record::netft::NetFtEmulator::spawn("127.0.0.1:0", cfg).map_err(|e| Error::io(format!("the Net F/T emulator: {e}")))
}

/// Records the session of `req` live: simulates the truth, renders the
/// camera, plays every device into the recorder in real time, tracks the
/// video. Takes the experiment's duration plus a few seconds.
/// A second controller playing the tip's hold ([`lab::synth::tip_robot_path`]),
/// and the rig's device for it.
fn tip_robot(req: &SynthRequest, name: &str, end_s: f64, start_unix_s: f64) -> Result<(RobotDevice, record::rtde::Emulator)> {
    let path = lab::synth::tip_robot_path(req, name, end_s)?;
    let emu = RobotEmulator { trajectory: Some(path), start_at_unix_s: Some(start_unix_s), ..RobotEmulator::new("127.0.0.1:0") }.start()?;
    let device = RobotDevice { name: name.into(), address: emu.addr.to_string(), frequency_hz: Some(req.robot_hz), variables: vec!["actual_TCP_pose".into()] };
    Ok((device, emu))
}

pub fn record_live(req: &SynthRequest, camera_fps: f64, progress: &dyn Progress) -> Result<Live> {
    record_live_viewed(req, camera_fps, None, progress)
}

/// [`record_live`], with the recording's live view served on `view_addr`
/// (the rendered camera's calibration and the rod: the strain is observed
/// live).
pub fn record_live_viewed(req: &SynthRequest, camera_fps: f64, view_addr: Option<&str>, progress: &dyn Progress) -> Result<Live> {
    lab::error::positive("--camera-fps", camera_fps)?;
    if req.mounted_at_s > 0.0 {
        return Err(Error::input("--mounted-at-s: not supported with --live (the emulated sensor carries the rod from the start)"));
    }
    if req.out.path().exists() {
        return Err(Error::input(format!("{}: already exists; choose another --out", req.out.path().display())));
    }
    if !req.rod.markers_base_to_tip() {
        return Err(Error::input(format!(
            "{}: --live tracks its markers from video, which numbers them from base to tip: list the rod file's markers that way (clusters on one section need a tracker that names its markers, e.g. motion capture)",
            req.rod_path.display()
        )));
    }
    let truth = simulate_truth(req, progress)?;
    let records = &truth.simulated.records;
    let end_s = truth.end_s();
    let work = req.truth.join("playback");
    std::fs::create_dir_all(&work).map_err(|e| Error::io(format!("{}: cannot create: {e}", work.display())))?;
    let mut stages = vec![("simulate".to_string(), truth.simulate_wall_s)];

    let t = Instant::now();
    let rendered = render_cameras(req, records, &truth.frames, camera_fps, &work, progress)?;
    // Wrenches are [moment; force]; the sensor sends force first.
    let wrench: Vec<(f64, [f64; 6])> = records
        .iter()
        .map(|r| {
            let w = r.base_wrench_flange;
            (r.t_s, [w[3], w[4], w[5], w[0], w[1], w[2]])
        })
        .collect();
    let mut noise = Noise::new(req.seed);
    let load_cells = load_cell_rows(req, end_s, &mut noise);
    stages.push(("render".into(), t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let start_unix_s = unix_now_s() + START_MARGIN_S;
    let stop = Arc::new(AtomicBool::new(false));
    let wrench_base = if req.flange_sensor && req.wrench_from_robot { Some(robot_wrench(req, &wrench, &truth.waypoints)?) } else { None };
    let robot =
        RobotEmulator { trajectory: Some(truth.waypoints.clone()), start_at_unix_s: Some(start_unix_s), wrench_base, ..RobotEmulator::new("127.0.0.1:0") }
            .start()?;
    let mut devices = Devices { stop: stop.clone(), threads: vec![], _robot: robot, _tip_robot: None, _lines: vec![], _netft: None };
    let mut rig = Rig {
        session: SessionInfo { operator_notes: "virtual lab (rodlab synth session --live): emulators playing a simulated experiment".into() },
        frames: rendered.frames,
        robots: vec![RobotDevice {
            name: "robot".into(),
            address: devices._robot.addr.to_string(),
            frequency_hz: Some(req.robot_hz),
            variables: if req.flange_sensor && req.wrench_from_robot {
                ["actual_TCP_pose", "actual_TCP_speed", "actual_q", "actual_TCP_force"].map(String::from).to_vec()
            } else {
                ["actual_TCP_pose", "actual_TCP_speed", "actual_q"].map(String::from).to_vec()
            },
        }],
        ft300s: vec![],
        ascii_sensors: vec![],
        netfts: vec![],
        cameras: rendered
            .videos
            .iter()
            .map(|(name, video)| CameraDevice {
                name: name.clone(),
                file: Some(video.display().to_string()),
                file_start_unix_s: Some(start_unix_s - VIDEO_LEAD_S),
                // Uncompressed: nothing to encode while two cores play
                // every device in real time (a lab's default is Motion-JPEG).
                container: "raw".into(),
                ..CameraDevice::default()
            })
            .collect(),
    };
    if let Some(name) = &req.tip_robot {
        let (device, emu) = tip_robot(req, name, end_s, start_unix_s)?;
        rig.robots.push(device);
        devices._tip_robot = Some(emu);
    }
    if req.flange_sensor && req.wrench_from_robot {
        // The controller reports it: no sensor of its own.
    } else if req.flange_sensor && req.netft {
        let emu = netft_emulator(req, &wrench, start_unix_s)?;
        rig.netfts.push(NetFtDevice {
            name: "netft".into(),
            address: emu.addr.to_string(),
            calibration_port: emu.addr.port() - 1,
            counts_per_force: None,
            counts_per_torque: None,
            tare: false,
        });
        devices._netft = Some(emu);
    } else if req.flange_sensor {
        let mut line = PtyPair::new()?;
        let port = line.device.take().expect("a new pair has its device side");
        let ft = Ft300Emulator {
            wrench: Some(wrench),
            start_at_unix_s: Some(start_unix_s),
            bias: req.ft_bias,
            noise_n: req.force_noise_n,
            noise_nm: req.moment_noise_nm,
            seed: req.seed,
            ..Ft300Emulator::new(req.sensor_hz)
        };
        let s = stop.clone();
        devices.threads.push(std::thread::spawn(move || ft.run(port, s)));
        rig.ft300s.push(Ft300Device { name: "ft300".into(), port: line.path.clone(), baud: 19_200 });
        devices._lines.push(line);
    }
    if let Some((columns, rows)) = load_cells {
        let mut line = PtyPair::new()?;
        let port = line.device.take().expect("a new pair has its device side");
        let cells =
            AsciiEmulator { rate_hz: req.sensor_hz, separator: session::rig::Separator::Char(','), values: Some(rows), start_at_unix_s: Some(start_unix_s) };
        let s = stop.clone();
        devices.threads.push(std::thread::spawn(move || cells.run(port, s)));
        rig.ascii_sensors.push(AsciiDevice {
            name: "load_cell".into(),
            port: line.path.clone(),
            baud: 115_200,
            separator: ",".into(),
            columns,
            scales: vec![],
        });
        devices._lines.push(line);
    }
    let rig_path = work.join("rig.toml");
    let rig_text = rig.to_toml("The virtual lab's rig (rodlab synth session --live).");
    std::fs::write(&rig_path, &rig_text).map_err(|e| Error::io(format!("{}: cannot write: {e}", rig_path.display())))?;
    let duration_s = start_unix_s - unix_now_s() + end_s + TAIL_S;
    progress.note(&format!("recording {:.1} s in real time through the emulators into {}", duration_s, req.out.path().display()));
    let recording = crate::record::record(
        // The recorder stops by itself; the devices keep playing until it has.
        &crate::record::RecordRequest {
            rig: &rig,
            rig_path: &rig_path,
            rig_text: &rig_text,
            out: &req.out,
            duration_s: Some(duration_s),
            append: false,
            stop: Arc::new(AtomicBool::new(false)),
            view: match view_addr {
                Some(addr) => Some(
                    crate::view::live::LiveOptions::from_files(addr, 20.0, Some(&rendered.markers_file), Some(&rendered.calibration), None)?
                        .with_rod(req.rod.clone()),
                ),
                None => None,
            },
        },
        progress,
    )
    .context("recording the virtual lab")?;
    drop(devices);
    stages.push(("record".into(), t.elapsed().as_secs_f64()));
    // The rendered videos are now the session's: no second copy.
    for (_, video) in &rendered.videos {
        let _ = std::fs::remove_file(video);
    }

    let t = Instant::now();
    let names: Vec<&String> = rendered.videos.iter().map(|(n, _)| n).collect();
    let tracked = if rendered.set {
        let req_set = crate::track::SetTrackRequest {
            inputs: names.iter().map(|n| recorded_video(&req.out, n)).collect::<Result<_>>()?,
            cameras: rendered.calibration.clone(),
            markers: Some(rendered.markers_file.clone()),
            fps: None,
            out: req.out.markers(),
            epipolar_gate_px: 3.0,
        };
        Tracking::Set(crate::track::track_set(&req_set, progress)?)
    } else {
        Tracking::One(crate::track::track(
            &crate::track::TrackRequest {
                markers: Some(rendered.markers_file.clone()),
                ..crate::track::TrackRequest::new(&recorded_video(&req.out, names[0])?, &rendered.calibration, &req.out.markers())
            },
            progress,
        )?)
    };
    stages.push(("track".into(), t.elapsed().as_secs_f64()));

    let meta = req.out.meta()?.ok_or_else(|| Error::computation(format!("{}: no session.toml", req.out.path().display())))?;
    let t0_host_ns = ((start_unix_s - meta.start_unix_s) * 1e9).round() as i64;
    let robot_samples = session::Table::read_chunks(&req.out.stream("robot")).map(|t| t.height()).unwrap_or(0);
    let tf = truth_file(req, &truth, t0_host_ns, true, stages);
    write_truth(req, &tf)?;
    let camera_frames = match &tracked {
        Tracking::One(t) => t.frames,
        Tracking::Set(t) => t.frames,
    };
    let made = Synthesised { session: req.out.clone(), truth_dir: req.truth.clone(), truth: tf, end_s, robot_samples, camera_frames };
    Ok(Live { made, recording, tracked })
}
