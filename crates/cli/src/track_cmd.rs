//! `rodlab calibrate`, `rodlab track`, `rodlab synth`: from camera images to
//! metric marker positions.

use crate::input_error;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use track::calibrate::{self, BoardSpec};
use track::camera::CameraModel;
use track::detect::{MarkerParams, TrackError};
use track::pipeline::{self, FrameTimes, PlaneToWorld};
use track::sequence::{Occlusion, Sequence, SequenceConfig};
use track::source::{write_image, FrameSource, VideoSink};
use track::synth;
use track::tracker::Tracker;

/// Input errors of the tracking crate exit with status 2.
fn track_error(e: TrackError) -> anyhow::Error {
    match e {
        TrackError::OpenCv(e) => anyhow::anyhow!("OpenCV: {e}"),
        e => input_error(e.to_string()),
    }
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab synth board --out /tmp/board\n  rodlab calibrate --images /tmp/board/views --board 9x6 --square-m 0.016 --plane-image /tmp/board/plane.png --out camera.toml"
)]
pub struct CalibrateArgs {
    /// Directory of checkerboard images (png, jpg, bmp, tif).
    #[arg(long)]
    pub images: PathBuf,
    /// Inner corners, COLSxROWS (a board of 10x7 squares has 9x6).
    #[arg(long)]
    pub board: String,
    /// Side of one square [m].
    #[arg(long)]
    pub square_m: f64,
    /// An image of the board lying in the plane of motion (default: the first image).
    #[arg(long)]
    pub plane_image: Option<PathBuf>,
    /// Reject the calibration above this RMS reprojection error [px].
    #[arg(long, default_value_t = 1.0)]
    pub max_rms_px: f64,
    #[arg(long, default_value = "camera.toml")]
    pub out: PathBuf,
}

pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    let (cols, rows) = BoardSpec::parse_size(&a.board).map_err(input_error)?;
    if !(a.square_m > 0.0 && a.square_m.is_finite()) {
        return Err(input_error("--square-m: must be a positive length in metres"));
    }
    let board = BoardSpec { cols, rows, square_m: a.square_m };
    let images = calibrate::image_files(&a.images).map_err(track_error)?;
    let (camera, summary) = calibrate::calibrate(&images, &board, a.plane_image.as_deref(), a.max_rms_px).map_err(track_error)?;
    camera.save(&a.out).with_context(|| format!("writing {}", a.out.display()))?;
    println!("board found in {} of {} images", summary.used.len(), summary.images);
    for r in &summary.rejected {
        println!("  no board: {}", r.display());
    }
    println!(
        "fx {:.2} px, fy {:.2} px, cx {:.2} px, cy {:.2} px, k1 {:.4}, k2 {:.4}; RMS reprojection {:.3} px",
        camera.fx_px, camera.fy_px, camera.cx_px, camera.cy_px, camera.distortion[0], camera.distortion[1], summary.rms_px
    );
    println!("plane of motion from {}", summary.plane_image.display());
    println!("wrote {}", a.out.display());
    Ok(())
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab track sessions/s1/camera.mkv --camera camera.toml --markers configs/markers.toml --out markers.parquet\n  rodlab track frames/ --camera camera.toml --fps 100 --out markers.parquet --overlay /tmp/overlay"
)]
pub struct TrackArgs {
    /// A video file or a directory of images (one frame per image).
    pub input: PathBuf,
    /// camera.toml from `rodlab calibrate` (intrinsics and the plane of motion).
    #[arg(long)]
    pub camera: PathBuf,
    /// markers.toml: colour, size and tracking parameters (default: red markers).
    #[arg(long)]
    pub markers: Option<PathBuf>,
    /// Frames table of a session (streams/CAMERA); default: looked up next to the video.
    #[arg(long)]
    pub frames: Option<PathBuf>,
    /// Frame rate when there is no frames table (default: the video's).
    #[arg(long)]
    pub fps: Option<f64>,
    #[arg(long, default_value = "markers.parquet")]
    pub out: PathBuf,
    /// Write annotated frames (PNG) here, for checking by eye.
    #[arg(long)]
    pub overlay: Option<PathBuf>,
    /// Height of the marker centres above the board plane, towards the
    /// camera [m] (default: camera.toml's plane_offset_m, else the session's
    /// frames.marker_height_m, else 0).
    #[arg(long)]
    pub marker_height_m: Option<f64>,
}

pub fn track(a: TrackArgs) -> Result<()> {
    let camera = CameraModel::load(&a.camera).map_err(|e| input_error(e.to_string()))?;
    if camera.plane.is_none() {
        eprintln!("rodlab: warning: {} has no plane of motion: x_m, y_m, z_m will be NaN", a.camera.display());
    }
    let params = match &a.markers {
        Some(p) => MarkerParams::load(p).map_err(track_error)?,
        None => MarkerParams::default(),
    };
    let mut source = FrameSource::open(&a.input).map_err(track_error)?;
    let times = frame_times(&a, &source)?;
    // The world: the session's rig frames when the video sits in a session.
    let session_dir = a.input.parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let frames_w = session::SessionMeta::read(&session_dir).map_err(|e| input_error(e.to_string()))?.map(|m| m.frames);
    let marker_height_m = a.marker_height_m.or(camera.plane_offset_m).or(frames_w.map(|f| f.marker_height_m)).unwrap_or(0.0);
    if !(marker_height_m.is_finite() && marker_height_m >= 0.0) {
        return Err(input_error(format!("--marker-height-m / plane_offset_m: must be >= 0, got {marker_height_m}")));
    }
    let world = PlaneToWorld { world_from_board: frames_w.map(|f| f.world_from_board()).unwrap_or_else(lie::Pose::identity), marker_height_m };
    match frames_w {
        Some(_) => println!("positions in the world frame of {}/session.toml, markers {:.1} mm above the board", session_dir.display(), 1e3 * marker_height_m),
        None => println!("positions in the board frame (no session.toml beside the video), markers {:.1} mm above the board", 1e3 * marker_height_m),
    }
    if let Some(dir) = &a.overlay {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut tracker = Tracker::new(params).map_err(track_error)?;
    let bar = match source.len_hint() {
        Some(n) => indicatif::ProgressBar::new(n as u64),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} frames {per_sec} eta {eta}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (rows, timing) = pipeline::track_video(&mut source, &mut tracker, &camera, &world, &times, a.overlay.as_deref(), |k| {
        if k % 16 == 0 {
            bar.set_position(k as u64)
        }
    })
    .map_err(track_error)?;
    bar.finish_and_clear();
    // The container's count is an estimate (duration x fps): allow one frame.
    if let Some(expected) = source.len_hint().filter(|n| timing.frames + 1 < *n) {
        eprintln!("rodlab: warning: {}: the video ends after {} of {expected} frames (truncated or damaged?)", a.input.display(), timing.frames);
    }
    session::write_markers(&a.out, &rows).with_context(|| format!("writing {}", a.out.display()))?;
    let count = |bit: u32| rows.iter().filter(|r| r.flags & bit != 0).count();
    println!(
        "{} frames, {} markers: {} missing, {} merged, {} re-acquired marker-frames",
        timing.frames,
        tracker.count(),
        count(session::flags::MISSING),
        count(session::flags::MERGED),
        count(session::flags::REACQUIRED)
    );
    println!(
        "decoding {:.0} frames/s, tracking {:.0} frames/s",
        timing.frames as f64 / timing.decode.as_secs_f64().max(1e-9),
        timing.frames as f64 / timing.track.as_secs_f64().max(1e-9)
    );
    println!("wrote {}", a.out.display());
    Ok(())
}

fn frame_times(a: &TrackArgs, source: &FrameSource) -> Result<FrameTimes> {
    // A session keeps the video beside `streams/<name>` (frame index, t_host_ns).
    let beside = a.input.parent().zip(a.input.file_stem()).map(|(dir, stem)| dir.join("streams").join(stem)).filter(|p| p.is_dir());
    if let Some(dir) = a.frames.clone().or(beside) {
        let t = session::Table::read_chunks(&dir).map_err(|e| input_error(e.to_string()))?;
        let ns = t.i64("t_host_ns").map_err(|e| input_error(e.to_string()))?;
        return Ok(FrameTimes::Table(ns));
    }
    let fps = a.fps.unwrap_or(source.fps());
    if !(fps.is_finite() && fps > 0.0) {
        return Err(input_error(format!("{}: no frame rate: give --fps or --frames (a session's frames table)", a.input.display())));
    }
    Ok(FrameTimes::Rate(fps))
}

#[derive(Subcommand)]
pub enum SynthCommand {
    /// Checkerboard views for calibration, and one of the board lying in the plane of motion.
    Board {
        #[arg(long)]
        out: PathBuf,
        /// Inner corners, COLSxROWS.
        #[arg(long, default_value = "9x6")]
        board: String,
        #[arg(long, default_value_t = 0.016)]
        square_m: f64,
        /// Sensor noise [grey levels].
        #[arg(long, default_value_t = 2.0)]
        noise: f64,
    },
    /// A video of a bending rod with red markers, and its truth (truth.csv).
    Video {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 200)]
        frames: usize,
        #[arg(long, default_value_t = 6)]
        markers: usize,
        /// Fastest marker speed [px/frame].
        #[arg(long, default_value_t = 20.0)]
        max_speed_px: f64,
        /// Sensor noise [grey levels].
        #[arg(long, default_value_t = 2.0)]
        noise: f64,
        /// `mkv` (lossless HuffYUV), `avi` (Motion-JPEG) or `png` (an image directory).
        #[arg(long, default_value = "mkv")]
        format: String,
        /// Hide marker M for N frames from frame F: M,F,N.
        #[arg(long)]
        occlude: Option<String>,
    },
    /// A lab session made from the simulator (robot, force sensor, tracked markers) and its truth beside it.
    Session(Box<crate::synth_session::SynthSessionArgs>),
}

pub fn synth(cmd: SynthCommand) -> Result<()> {
    let (camera, plane) = synth::demo_camera();
    let true_camera = CameraModel { plane: Some(plane.clone()), ..camera.clone() };
    match cmd {
        SynthCommand::Session(a) => crate::synth_session::run(*a),
        SynthCommand::Board { out, board, square_m, noise } => {
            let (cols, rows) = BoardSpec::parse_size(&board).map_err(input_error)?;
            let (views, _) = synth::write_board_images(&out, &camera, &plane, &BoardSpec { cols, rows, square_m }, noise).map_err(track_error)?;
            true_camera.save(&out.join("true-camera.toml"))?;
            println!("wrote {} views, plane.png and true-camera.toml to {}", views.len(), out.display());
            Ok(())
        }
        SynthCommand::Video { out, frames, markers, max_speed_px, noise, format, occlude } => {
            if frames == 0 || markers == 0 || max_speed_px.is_nan() || max_speed_px <= 0.0 {
                return Err(input_error("--frames, --markers and --max-speed-px must be positive"));
            }
            let occlusion = occlude
                .map(|s| {
                    let v: Vec<usize> = s
                        .split(',')
                        .map(|x| x.trim().parse())
                        .collect::<Result<_, _>>()
                        .map_err(|_| input_error(format!("--occlude {s:?}: expected M,F,N")))?;
                    match v[..] {
                        [marker, first_frame, frames] => Ok(Occlusion { marker, first_frame, frames }),
                        _ => Err(input_error(format!("--occlude {s:?}: expected M,F,N"))),
                    }
                })
                .transpose()?;
            let mut cfg = SequenceConfig { frames, markers, max_speed_px, occlusion, ..SequenceConfig::default() };
            cfg.look.noise_sigma = noise;
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            let fps = cfg.fps;
            let mut seq = Sequence::new(camera.clone(), plane.clone(), cfg);
            let (w, h) = (camera.width_px as i32, camera.height_px as i32);
            let mut sink = match format.as_str() {
                "mkv" | "avi" => Some(VideoSink::create(&out.join(format!("video.{format}")), fps, w, h).map_err(track_error)?),
                "png" => {
                    std::fs::create_dir_all(out.join("frames"))?;
                    None
                }
                f => return Err(input_error(format!("--format {f:?}: mkv, avi or png"))),
            };
            let mut truth = String::from("frame,marker,u_px,v_px,x_m,y_m,visible\n");
            let bar = indicatif::ProgressBar::new(frames as u64);
            for k in 0..frames {
                let img = seq.render(k);
                let mat = img.to_mat().map_err(track_error)?;
                match sink.as_mut() {
                    Some(s) => s.write(&mat).map_err(track_error)?,
                    None => write_image(&out.join("frames").join(format!("{k:06}.png")), &mat).map_err(track_error)?,
                }
                for t in seq.truth(k) {
                    truth.push_str(&format!("{},{},{:.6},{:.6},{:.9},{:.9},{}\n", t.frame, t.marker, t.u_px, t.v_px, t.x_m, t.y_m, t.visible as u8));
                }
                bar.inc(1);
            }
            bar.finish_and_clear();
            if let Some(s) = sink {
                s.finish().map_err(track_error)?;
            }
            std::fs::write(out.join("truth.csv"), truth)?;
            true_camera.save(&out.join("true-camera.toml"))?;
            std::fs::write(out.join("markers.toml"), format!("# Red markers on the synthetic rod.\ncount = {markers}\n"))?;
            println!("wrote {frames} frames ({format}), truth.csv, true-camera.toml, markers.toml to {}", out.display());
            Ok(())
        }
    }
}
