//! From camera images to metric marker positions: calibrating a camera on
//! checkerboard images, tracking a video (in a session: on the host clock,
//! in the rig's world frame), and synthetic boards and videos with truth.

use lab::error::{Error, Result};
use lab::progress::Progress;
use std::path::{Path, PathBuf};
use track::calibrate::{self, BoardSpec};
use track::camera::CameraModel;
use track::detect::MarkerParams;
use track::multiview;
use track::pipeline::{self, FrameTimes, PlaneToWorld};
pub use track::sequence::Occlusion;
use track::sequence::{Sequence, SequenceConfig};
use track::source::{write_image, FrameSource, Frames, RawFrames, VideoSink};
use track::stereo::{self, SetSummary};
pub use track::stereo::{CameraSet, SetCamera};
use track::synth;
use track::tracker::Tracker;
pub use track::triangulate::PlacedCamera;

/// A calibration's outcome.
#[derive(Clone, Debug)]
pub struct Calibrated {
    pub camera: CameraModel,
    pub summary: calibrate::CalibrationSummary,
}

/// Calibrates from the board images in `images` (inner corners `board`,
/// e.g. "9x6", squares of `square_m`), the plane of motion from
/// `plane_image` (default: the first image); writes `out`.
pub fn calibrate(images: &Path, board: &str, square_m: f64, plane_image: Option<&Path>, max_rms_px: f64, out: &Path) -> Result<Calibrated> {
    let (cols, rows) = BoardSpec::parse_size(board)?;
    lab::error::positive("--square-m", square_m)?;
    let spec = BoardSpec { cols, rows, square_m };
    let files = calibrate::image_files(images)?;
    let (camera, summary) = calibrate::calibrate(&files, &spec, plane_image, max_rms_px)?;
    camera.save(out).map_err(|e| Error::io(format!("{}: cannot write: {e}", out.display())))?;
    Ok(Calibrated { camera, summary })
}

/// A camera set's calibration: the set written, and what it did.
#[derive(Clone, Debug)]
pub struct CalibratedSet {
    pub set: CameraSet,
    pub summary: SetSummary,
    /// Each camera's centre in the world \[m\].
    pub centres_m: Vec<[f64; 3]>,
}

/// Calibrates a camera set from one folder of board images per camera
/// (`NAME=DIR`; images of one name were taken at the same time), the world
/// from the board in `plane_view`; writes `out` only when it succeeds.
pub fn calibrate_set(
    cameras: &[String],
    board: &str,
    square_m: f64,
    plane_view: Option<&str>,
    max_rms_px: f64,
    out: &Path,
    corners_out: Option<&Path>,
) -> Result<CalibratedSet> {
    let (cols, rows) = BoardSpec::parse_size(board)?;
    lab::error::positive("--square-m", square_m)?;
    let named: Vec<(String, PathBuf)> = cameras
        .iter()
        .map(|c| match c.split_once('=') {
            Some((n, d)) if !n.trim().is_empty() && !d.is_empty() => Ok((n.trim().to_string(), PathBuf::from(d))),
            _ => Err(Error::input(format!("--camera-images {c:?}: expected NAME=DIR, e.g. left=board/left"))),
        })
        .collect::<Result<_>>()?;
    let (set, summary) = stereo::calibrate_set(&named, &BoardSpec { cols, rows, square_m }, plane_view, max_rms_px)?;
    set.save(out).map_err(|e| Error::io(format!("{}: cannot write: {e}", out.display())))?;
    if let Some(path) = corners_out {
        stereo::write_corners_csv(&summary.corners, path).map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))?;
    }
    let centres_m = set.cameras.iter().map(|c| PlacedCamera::new(&c.model).map_or([f64::NAN; 3], |p| p.centre_m().into())).collect();
    Ok(CalibratedSet { set, summary, centres_m })
}

/// What to track.
#[derive(Clone, Debug)]
pub struct TrackRequest {
    /// A video file or a directory of images.
    pub input: PathBuf,
    /// camera.toml: intrinsics and the plane of motion.
    pub camera: PathBuf,
    /// markers.toml (default: red markers).
    pub markers: Option<PathBuf>,
    /// A session's frames table (default: beside the video).
    pub frames: Option<PathBuf>,
    /// Frame rate without a frames table (default: the video's).
    pub fps: Option<f64>,
    pub out: PathBuf,
    /// Annotated frames (JPEG) here...
    pub overlay: Option<PathBuf>,
    /// ...one every this many frames (1: each).
    pub overlay_every: usize,
    /// Height of the marker centres above the board \[m\] (default:
    /// camera.toml's plane_offset_m, else the session's, else 0).
    pub marker_height_m: Option<f64>,
}

impl TrackRequest {
    pub fn new(input: &Path, camera: &Path, out: &Path) -> TrackRequest {
        TrackRequest {
            input: input.into(),
            camera: camera.into(),
            markers: None,
            frames: None,
            fps: None,
            out: out.into(),
            overlay: None,
            overlay_every: 1,
            marker_height_m: None,
        }
    }
}

/// A tracked video.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub frames: usize,
    /// Frames the container announced (an estimate), when it did.
    pub expected_frames: Option<usize>,
    pub markers: usize,
    pub missing: usize,
    pub merged: usize,
    pub reacquired: usize,
    pub decode_fps: f64,
    pub track_fps: f64,
    /// `Some(session.toml)` when positions are in a session's world frame.
    pub world_from: Option<PathBuf>,
    pub marker_height_m: f64,
    pub warnings: Vec<String>,
}

/// A video's frame times: its frames table (`frames`, else the session's
/// `streams/<stem>` beside it), else `fps` or the video's own rate.
fn frame_times(input: &Path, frames: Option<&Path>, fps: Option<f64>, source: &impl Frames) -> Result<FrameTimes> {
    // A session keeps the video beside `streams/<name>` (frame index, t_host_ns).
    let beside = input.parent().zip(input.file_stem()).map(|(dir, stem)| dir.join("streams").join(stem)).filter(|p| p.is_dir());
    if let Some(dir) = frames.map(Path::to_path_buf).or(beside) {
        let t = session::Table::read_chunks(&dir)?;
        return Ok(FrameTimes::Table(session::frame_times_on_host_clock(&t)?));
    }
    let fps = fps.unwrap_or(source.fps());
    if !(fps.is_finite() && fps > 0.0) {
        return Err(Error::input(format!("{}: no frame rate: give --fps or --frames (a session's frames table)", input.display())));
    }
    Ok(FrameTimes::Rate(fps))
}

/// Tracks the markers of a video (or image folder) into a marker table.
pub fn track(req: &TrackRequest, progress: &dyn Progress) -> Result<Tracked> {
    track_frames(req, progress, FrameSource::open(&req.input)?, write_image)
}

/// [`track()`] for an uncompressed AVI ([`session::avi`]), without
/// annotated frames: the only video code it calls is OpenCV's core and
/// imgproc, so that a build of it alone loads no other OpenCV library
/// (`librodlab_tracking.so`: 0.1 s less to start).
pub fn track_raw(req: &TrackRequest, progress: &dyn Progress) -> Result<Tracked> {
    if req.overlay.is_some() {
        return Err(Error::input("--overlay: annotated frames need the device build (librodlab_devices.so)"));
    }
    track_frames(req, progress, RawFrames::open(&req.input)?, |path, _| {
        Err(track::detect::TrackError::Input(format!("{}: no image writer in this build", path.display())))
    })
}

fn track_frames(req: &TrackRequest, progress: &dyn Progress, mut source: impl Frames, write_overlay: pipeline::WriteImage) -> Result<Tracked> {
    let camera = CameraModel::load(&req.camera).map_err(|e| Error::input(e.to_string()))?;
    let mut warnings = vec![];
    if camera.plane.is_none() {
        warnings.push(format!("{} has no plane of motion: x_m, y_m, z_m will be NaN", req.camera.display()));
    }
    let params = match &req.markers {
        Some(p) => MarkerParams::load(p)?,
        None => MarkerParams::default(),
    };
    let times = frame_times(&req.input, req.frames.as_deref(), req.fps, &source)?;
    // The world: the session's rig frames when the video sits in a session.
    let session_dir = session::SessionDir::new(req.input.parent().map(|p| p.to_path_buf()).unwrap_or_default());
    let frames_w = session_dir.meta()?.map(|m| m.frames);
    let marker_height_m = req.marker_height_m.or(camera.plane_offset_m).or(frames_w.map(|f| f.marker_height_m)).unwrap_or(0.0);
    if !(marker_height_m.is_finite() && marker_height_m >= 0.0) {
        return Err(Error::input(format!("--marker-height-m / plane_offset_m: must be >= 0, got {marker_height_m}")));
    }
    let world = PlaneToWorld { world_from_board: frames_w.map(|f| f.world_from_board()).unwrap_or_else(lie::Pose::identity), marker_height_m };
    if let Some(dir) = &req.overlay {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("{}: cannot create: {e}", dir.display())))?;
    }
    let mut tracker = Tracker::new(params)?;
    let task = progress.task("track", source.len_hint().map(|n| n as u64));
    let overlay = req.overlay.as_deref().map(|dir| pipeline::Overlay { dir, every: req.overlay_every, write: write_overlay });
    let (rows, timing) = pipeline::track_video(&mut source, &mut tracker, &camera, &world, &times, overlay, |k| {
        if k % 16 == 0 {
            task.set(k as u64)
        }
    })?;
    drop(task);
    if timing.untimed_frames > 0 {
        warnings.push(format!(
            "{}: {} frames beyond the {} rows of its frames table have no time (the recorder stopped between writing a frame and its row): not tracked",
            req.input.display(),
            timing.untimed_frames,
            timing.frames
        ));
    }
    // The container's count is an estimate (duration x fps): allow one frame.
    let expected_frames = source.len_hint();
    if let Some(expected) = expected_frames.filter(|n| timing.frames + timing.untimed_frames + 1 < *n) {
        warnings.push(format!("{}: the video ends after {} of {expected} frames (truncated or damaged?)", req.input.display(), timing.frames));
    }
    session::write_markers(&req.out, &rows)?;
    let count = |bit: u32| rows.iter().filter(|r| r.flags & bit != 0).count();
    Ok(Tracked {
        frames: timing.frames,
        expected_frames,
        markers: tracker.count(),
        missing: count(session::flags::MISSING),
        merged: count(session::flags::MERGED),
        reacquired: count(session::flags::REACQUIRED),
        decode_fps: timing.frames as f64 / timing.decode.as_secs_f64().max(1e-9),
        track_fps: timing.frames as f64 / timing.track.as_secs_f64().max(1e-9),
        world_from: frames_w.map(|_| session_dir.meta_path()),
        marker_height_m,
        warnings,
    })
}

/// What to track with a camera set: one video per camera.
#[derive(Clone, Debug)]
pub struct SetTrackRequest {
    /// The videos (or image folders); a video whose file stem is a camera's
    /// name is that camera's, else they are taken in the set's order.
    pub inputs: Vec<PathBuf>,
    /// cameras.toml from `rodlab calibrate --camera-images`.
    pub cameras: PathBuf,
    pub markers: Option<PathBuf>,
    /// Frame rate of videos without a frames table (default: each video's).
    pub fps: Option<f64>,
    pub out: PathBuf,
    /// Views farther than this from each other's epipolar lines are not one
    /// marker \[px\].
    pub epipolar_gate_px: f64,
}

/// A camera set's videos tracked into 3-D markers.
#[derive(Clone, Debug)]
pub struct SetTracked {
    /// Each camera and the video it was given.
    pub videos: Vec<(String, PathBuf)>,
    /// Frames of the reference (first) camera: the table's frames.
    pub frames: usize,
    pub markers: usize,
    pub points: usize,
    pub rays: usize,
    pub disagreements: usize,
    /// Per camera: the reference frames it had no frame within half a period of.
    pub unmatched_frames: Vec<(String, usize)>,
    pub world_from: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// The videos of `req` paired with the set's cameras: by file stem when
/// every stem names a camera, else in order.
fn pair_videos(set: &CameraSet, inputs: &[PathBuf], cameras_path: &Path) -> Result<Vec<(usize, PathBuf)>> {
    if inputs.len() != set.cameras.len() {
        return Err(Error::input(format!(
            "{} videos for the {} cameras of {}: give one video per camera",
            inputs.len(),
            set.cameras.len(),
            cameras_path.display()
        )));
    }
    let stem = |p: &PathBuf| p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let by_name: Option<Vec<(usize, PathBuf)>> = inputs.iter().map(|p| set.cameras.iter().position(|c| c.name == stem(p)).map(|k| (k, p.clone()))).collect();
    let mut pairs = match by_name {
        Some(p) if (0..set.cameras.len()).all(|k| p.iter().any(|(j, _)| *j == k)) => p,
        _ => inputs.iter().cloned().enumerate().collect(),
    };
    pairs.sort_by_key(|(k, _)| *k);
    Ok(pairs)
}

/// Tracks one video per camera of a set and triangulates the markers into
/// a marker table in the rig's world (the session's, when the videos sit in
/// one), with each row's cameras, reprojection error and view time spread.
pub fn track_set(req: &SetTrackRequest, progress: &dyn Progress) -> Result<SetTracked> {
    let set = CameraSet::load(&req.cameras)?;
    let pairs = pair_videos(&set, &req.inputs, &req.cameras)?;
    lab::error::positive("--epipolar-gate-px", req.epipolar_gate_px)?;
    let params = match &req.markers {
        Some(p) => MarkerParams::load(p)?,
        None => MarkerParams::default(),
    };
    let first = &pairs[0].1;
    let session_dir = session::SessionDir::new(first.parent().map(|p| p.to_path_buf()).unwrap_or_default());
    let frames_w = session_dir.meta()?.map(|m| m.frames);
    let world_from_set = frames_w.map(|f| f.world_from_board()).unwrap_or_else(lie::Pose::identity);
    let mut per_camera = vec![];
    let mut warnings = vec![];
    let mut markers = 0;
    for (k, video) in &pairs {
        let camera = &set.cameras[*k];
        let mut source = FrameSource::open(video)?;
        let times = frame_times(video, None, req.fps, &source)?;
        let mut tracker = Tracker::new(params.for_camera(&camera.name))?;
        let task = progress.task(&format!("track {}", camera.name), source.len_hint().map(|n| n as u64));
        let (rows, timing) = pipeline::track_video(&mut source, &mut tracker, &camera.model, &PlaneToWorld::default(), &times, None, |n| {
            if n % 16 == 0 {
                task.set(n as u64)
            }
        })?;
        drop(task);
        if timing.untimed_frames > 0 {
            warnings.push(format!("{}: {} frames beyond its frames table have no time: not tracked", video.display(), timing.untimed_frames));
        }
        markers = markers.max(tracker.count());
        per_camera.push(rows);
    }
    let placed: Vec<PlacedCamera> = set.cameras.iter().map(|c| PlacedCamera::new(&c.model).expect("checked on load")).collect();
    let names = set.names();
    let merged = multiview::merge(&placed, &per_camera, &names, &world_from_set, req.epipolar_gate_px)?;
    session::write_markers_with_views(&req.out, &merged.rows, &merged.views, &names)?;
    Ok(SetTracked {
        videos: pairs.iter().map(|(k, p)| (names[*k].clone(), p.clone())).collect(),
        frames: merged.frames,
        markers,
        points: merged.points,
        rays: merged.rays,
        disagreements: merged.disagreements,
        unmatched_frames: names.iter().cloned().zip(merged.unmatched_frames.iter().copied()).collect(),
        world_from: frames_w.map(|_| session_dir.meta_path()),
        warnings,
    })
}

/// Writes checkerboard views (and one of the board in the plane of
/// motion) of the demo camera into `out`, with the true camera.
pub fn synth_board(out: &Path, board: &str, square_m: f64, noise: f64) -> Result<usize> {
    let (camera, plane) = synth::demo_camera();
    let (cols, rows) = BoardSpec::parse_size(board)?;
    let (views, _) = synth::write_board_images(out, &camera, &plane, &BoardSpec { cols, rows, square_m }, noise)?;
    CameraModel { plane: Some(plane), ..camera }.save(&out.join("true-camera.toml")).map_err(|e| Error::io(e.to_string()))?;
    Ok(views.len())
}

/// Board images for a camera set of `cameras` cameras `distance_m` from the
/// board and `spread_deg` apart: `out/<camera>/view_NN.png`, `plane.png`,
/// and the true set, `out/true-cameras.toml`. Returns the cameras' folders.
pub fn synth_board_set(out: &Path, board: &str, square_m: f64, noise: f64, cameras: usize, distance_m: f64, spread_deg: f64) -> Result<Vec<(String, PathBuf)>> {
    let (cols, rows) = BoardSpec::parse_size(board)?;
    lab::error::positive("--square-m", square_m)?;
    lab::error::positive("--distance-m", distance_m)?;
    if !((2..=4).contains(&cameras) && spread_deg.is_finite() && spread_deg.abs() <= 90.0) {
        return Err(Error::input(format!("--cameras {cameras} --spread-deg {spread_deg}: a set is 2 to 4 cameras spread at most 90 degrees")));
    }
    let spec = BoardSpec { cols, rows, square_m };
    let set = synth::camera_set(cameras, distance_m, spread_deg, &spec);
    let folders = synth::write_set_board_images(out, &set, &spec, noise)?;
    let truth =
        CameraSet { world: "the board in view plane".into(), cameras: set.into_iter().map(|(name, model)| SetCamera { name, model }).collect(), views: vec![] };
    truth.save(&out.join("true-cameras.toml")).map_err(|e| Error::io(e.to_string()))?;
    Ok(folders)
}

/// Renders markers moving anywhere in 3-D, seen by every camera of a set
/// (each from its own pose): `positions[frame][marker]` in the set's world;
/// `visible(camera, frame, marker)` hides a marker from one camera. Writes
/// `out/<camera>.mkv` at `fps`; returns the videos.
pub fn render_set_video(
    set: &CameraSet,
    positions: &[Vec<[f64; 3]>],
    visible: impl Fn(usize, usize, usize) -> bool + Sync,
    out: &Path,
    fps: f64,
    noise: f64,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: {e}", out.display())))?;
    let mut videos = vec![];
    for (k, camera) in set.cameras.iter().enumerate() {
        let look = synth::Look { noise_sigma: noise, seed: 7 + k as u64, ..synth::Look::default() };
        let plane = camera.model.plane.clone().ok_or_else(|| Error::input(format!("camera {}: no pose", camera.name)))?;
        let mut renderer = synth::Renderer::new(camera.model.clone(), plane, look);
        let path = out.join(format!("{}.mkv", camera.name));
        let sink = VideoSink::create(&path, fps, camera.model.width_px as i32, camera.model.height_px as i32)?;
        let frame = |f: usize| {
            let shown: Vec<bool> = (0..positions[f].len()).map(|m| visible(k, f, m)).collect();
            renderer.render_3d(std::slice::from_ref(&positions[f]), &shown, &[], 0.0).to_mat()
        };
        sink.write_frames(positions.len(), frame, |_| {})?;
        videos.push(path);
    }
    Ok(videos)
}

/// A synthetic marker video to make.
#[derive(Clone, Debug)]
pub struct VideoRequest {
    pub out: PathBuf,
    pub frames: usize,
    pub markers: usize,
    /// Fastest marker speed \[px/frame\].
    pub max_speed_px: f64,
    /// Sensor noise \[grey levels\].
    pub noise: f64,
    /// The video's frame rate \[frames/s\].
    pub fps: f64,
    /// A session's video container (`mkv`, `avi`, `raw`: [`session::VideoFormat`])
    /// or `png` (an image directory).
    pub format: String,
    pub occlusion: Option<Occlusion>,
}

/// Writes a video of a bending rod with markers, its truth (truth.csv),
/// the true camera and markers.toml.
pub fn synth_video(req: &VideoRequest, progress: &dyn Progress) -> Result<()> {
    if req.frames == 0 || req.markers == 0 || req.max_speed_px.is_nan() || req.max_speed_px <= 0.0 || !req.fps.is_finite() || req.fps <= 0.0 {
        return Err(Error::input("--frames, --markers, --max-speed-px and --fps must be positive"));
    }
    let (camera, plane) = synth::demo_camera();
    let mut cfg = SequenceConfig {
        frames: req.frames,
        markers: req.markers,
        max_speed_px: req.max_speed_px,
        occlusion: req.occlusion,
        fps: req.fps,
        ..SequenceConfig::default()
    };
    cfg.look.noise_sigma = req.noise;
    let out = &req.out;
    let io = |e: std::io::Error| Error::io(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    let fps = cfg.fps;
    let mut seq = Sequence::new(camera.clone(), plane.clone(), cfg);
    let (w, h) = (camera.width_px as i32, camera.height_px as i32);
    let sink = match (req.format.as_str(), session::VideoFormat::from_container(&req.format)) {
        (_, Some(format)) => Some(VideoSink::create_as(&out.join(format!("video.{}", format.extension())), format, fps, w, h)?),
        ("png", None) => {
            std::fs::create_dir_all(out.join("frames")).map_err(io)?;
            None
        }
        (f, None) => return Err(Error::input(format!("--format {f:?}: mkv, avi, raw or png"))),
    };
    let truth_path = out.join("truth.csv");
    let fail = |e: csv::Error| Error::io(format!("{}: cannot write: {e}", truth_path.display()));
    let mut truth = csv::Writer::from_path(&truth_path).map_err(fail)?;
    truth.write_record(["frame", "marker", "u_px", "v_px", "x_m", "y_m", "visible"]).map_err(fail)?;
    let task = progress.task("render", Some(req.frames as u64));
    match sink {
        Some(sink) => sink.write_frames(req.frames, |k| seq.render(k).to_mat(), |k| task.set(k as u64 + 1))?,
        None => {
            for k in 0..req.frames {
                write_image(&out.join("frames").join(format!("{k:06}.png")), &seq.render(k).to_mat()?)?;
                task.set(k as u64 + 1);
            }
        }
    }
    drop(task);
    for k in 0..req.frames {
        for t in seq.truth(k) {
            let row = [
                t.frame.to_string(),
                t.marker.to_string(),
                t.u_px.to_string(),
                t.v_px.to_string(),
                t.x_m.to_string(),
                t.y_m.to_string(),
                (t.visible as u8).to_string(),
            ];
            truth.write_record(&row).map_err(fail)?;
        }
    }
    truth.flush().map_err(io)?;
    CameraModel { plane: Some(plane), ..camera }.save(&out.join("true-camera.toml")).map_err(|e| Error::io(e.to_string()))?;
    std::fs::write(out.join("markers.toml"), format!("# Red markers on the synthetic rod.\ncount = {}\n", req.markers)).map_err(io)?;
    Ok(())
}
