//! Recording a camera (OpenCV VideoCapture: a device or a video file played
//! at its own rate) into `<session>/<name>.mkv` (lossless HuffYUV) or `.avi`
//! (Motion-JPEG), with the frames table `streams/<name>`: frame index and
//! the host clock at grab. OpenCV's own timestamps (CAP_PROP_POS_MSEC) are
//! kept as `device_ms` but are not trusted for timing.

use crate::robot::{Clock, Status};
use opencv::core::{Mat, Size};
use opencv::prelude::*;
use opencv::videoio;
use session::StreamWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    #[error("{0}")]
    Open(String),
    #[error("OpenCV: {0}")]
    OpenCv(#[from] opencv::Error),
    #[error("{0}")]
    Session(#[from] session::TableError),
}

impl fault::Fault for CameraError {
    fn kind(&self) -> fault::Kind {
        match self {
            CameraError::Open(_) => fault::Kind::Input,
            CameraError::OpenCv(_) => fault::Kind::Io,
            CameraError::Session(e) => e.kind(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum CameraSource {
    Device(i32),
    File(PathBuf),
}

#[derive(Clone, Debug)]
pub struct CameraConfig {
    pub name: String,
    pub source: CameraSource,
    pub fps: Option<f64>,
    /// A file's frame 0 is shown at this wall-clock instant (default: when
    /// the recording starts).
    pub file_start: Option<std::time::SystemTime>,
    /// "mkv" (lossless HuffYUV) or "avi" (Motion-JPEG).
    pub container: String,
    /// Capture settings from the rig file.
    pub settings: session::rig::CameraSettings,
}

/// Applies the rig file's capture settings and reads back what the camera
/// reports: `(name, reported value)` for every setting given, and a
/// warning for each the driver refused (or a file cannot take). Never
/// fatal: the recording goes on with what the camera does.
pub fn apply_settings(cfg: &CameraConfig, capture: &mut videoio::VideoCapture) -> (Vec<(String, f64)>, Vec<String>) {
    let s = &cfg.settings;
    let b = |v: bool| if v { 1.0 } else { 0.0 };
    // (name, OpenCV property, value to set, value the property reads when it took).
    let mut wanted: Vec<(&str, i32, f64, f64)> = vec![];
    if let Some(w) = s.width_px {
        wanted.push(("width_px", videoio::CAP_PROP_FRAME_WIDTH, w as f64, w as f64));
    }
    if let Some(h) = s.height_px {
        wanted.push(("height_px", videoio::CAP_PROP_FRAME_HEIGHT, h as f64, h as f64));
    }
    if let Some(a) = s.auto_exposure {
        // V4L2 through OpenCV: 0.25 is manual, 0.75 automatic.
        let v = if a { 0.75 } else { 0.25 };
        wanted.push(("auto_exposure", videoio::CAP_PROP_AUTO_EXPOSURE, v, v));
    }
    if let Some(e) = s.exposure {
        wanted.push(("exposure", videoio::CAP_PROP_EXPOSURE, e, e));
    }
    if let Some(g) = s.gain {
        wanted.push(("gain", videoio::CAP_PROP_GAIN, g, g));
    }
    if let Some(a) = s.auto_white_balance {
        wanted.push(("auto_white_balance", videoio::CAP_PROP_AUTO_WB, b(a), b(a)));
    }
    if let Some(f) = s.focus {
        let _ = capture.set(videoio::CAP_PROP_AUTOFOCUS, 0.0);
        wanted.push(("focus", videoio::CAP_PROP_FOCUS, f, f));
    }
    let mut reported = vec![];
    let mut warnings = vec![];
    if wanted.is_empty() {
        return (reported, warnings);
    }
    if let CameraSource::File(p) = &cfg.source {
        let names: Vec<&str> = wanted.iter().map(|w| w.0).collect();
        warnings.push(format!("camera '{}': a video file ({}) takes no capture settings: {} not applied", cfg.name, p.display(), names.join(", ")));
        return (reported, warnings);
    }
    for (name, prop, value, expect) in wanted {
        let took = capture.set(prop, value).unwrap_or(false);
        let now = capture.get(prop).unwrap_or(f64::NAN);
        reported.push((name.to_string(), now));
        let matches = (now - expect).abs() <= 1e-6 * expect.abs().max(1.0);
        if !took || !matches {
            warnings.push(format!("camera '{}': {name} = {value} asked, the camera reports {now} (the driver refused or rounded it)", cfg.name));
        }
    }
    (reported, warnings)
}

/// Opens the camera and reads one frame (so a bad device or file is
/// reported before recording starts).
pub fn open(cfg: &CameraConfig) -> Result<videoio::VideoCapture, CameraError> {
    let mut cap = match &cfg.source {
        CameraSource::Device(i) => {
            let mut c = videoio::VideoCapture::new(*i, videoio::CAP_ANY)?;
            if let Some(fps) = cfg.fps {
                c.set(videoio::CAP_PROP_FPS, fps)?;
            }
            c
        }
        CameraSource::File(p) => {
            if !p.exists() {
                return Err(CameraError::Open(format!("camera '{}': {}: no such file", cfg.name, p.display())));
            }
            videoio::VideoCapture::from_file(&p.to_string_lossy(), videoio::CAP_FFMPEG)?
        }
    };
    let what = match &cfg.source {
        CameraSource::Device(i) => format!("device {i}"),
        CameraSource::File(p) => p.display().to_string(),
    };
    if !cap.is_opened()? {
        return Err(CameraError::Open(format!("camera '{}': cannot open {what}", cfg.name)));
    }
    // Re-open files after the probe read so that frame 0 is recorded.
    let mut probe = Mat::default();
    if !cap.read(&mut probe)? || probe.empty() {
        return Err(CameraError::Open(format!("camera '{}': {what} gives no frames", cfg.name)));
    }
    if let CameraSource::File(p) = &cfg.source {
        cap = videoio::VideoCapture::from_file(&p.to_string_lossy(), videoio::CAP_FFMPEG)?;
    }
    Ok(cap)
}

/// Frames a camera gives with the rig file's settings applied, for a look
/// before recording: `count` frames after `settle` discarded ones (a
/// device needs a few to take new settings), what the camera reports and
/// the settings it refused.
pub struct Grab {
    pub frames: Vec<Mat>,
    pub reported: Vec<(String, f64)>,
    pub warnings: Vec<String>,
}

pub fn grab(cfg: &CameraConfig, count: usize, settle: usize) -> Result<Grab, CameraError> {
    let mut capture = open(cfg)?;
    let (reported, warnings) = apply_settings(cfg, &mut capture);
    let settle = if matches!(cfg.source, CameraSource::Device(_)) { settle } else { 0 };
    let mut frames = vec![];
    for k in 0..settle + count {
        let mut frame = Mat::default();
        if !capture.read(&mut frame)? || frame.empty() {
            break;
        }
        if k >= settle {
            frames.push(frame);
        }
    }
    if frames.is_empty() {
        return Err(CameraError::Open(format!("camera '{}': gave no frames", cfg.name)));
    }
    Ok(Grab { frames, reported, warnings })
}

/// Records until `stop` is set (or a file ends).
pub fn record(
    cfg: &CameraConfig,
    mut capture: videoio::VideoCapture,
    session: &Path,
    clock: Clock,
    stop: Arc<AtomicBool>,
    status: Arc<Status>,
) -> Result<(), CameraError> {
    let mut frames = StreamWriter::create(session, &cfg.name, vec!["frame".into(), "device_ms".into()], Duration::from_secs(1))?;
    let file_fps = match cfg.source {
        CameraSource::File(_) => Some(capture.get(videoio::CAP_PROP_FPS)?).filter(|f| *f > 0.0),
        CameraSource::Device(_) => None,
    };
    let fps = cfg.fps.or(file_fps).unwrap_or(30.0);
    let mut outages = crate::outage::Outages::new(session, &cfg.name, crate::outage::Outages::silence_limit_s(fps), usize::MAX, status.clone())?;
    let mut writer: Option<videoio::VideoWriter> = None;
    let mut frame = Mat::default();
    // When frame 0 of a file is shown, on this process's monotonic clock.
    let (started, lead_s) = match cfg.file_start {
        Some(t) => (Instant::now(), -crate::serial_emulators::seconds_since(t)),
        None => (Instant::now(), 0.0),
    };
    let mut k: u64 = 0;
    let mut file_frame: u64 = 0;
    // A file that ended is not an outage: the recording of it ends there.
    let mut file_ended_ns: Option<i64> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(f) = file_fps {
            // A file plays at its own rate, like a live camera; frames shown
            // before the recording started are passed over.
            let due_s = lead_s + file_frame as f64 / f;
            if due_s < 0.0 {
                if !capture.grab()? {
                    file_ended_ns = Some(clock.now_ns());
                    break;
                }
                file_frame += 1;
                continue;
            }
            let due = started + Duration::from_secs_f64(due_s);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            file_frame += 1;
        }
        if !capture.grab()? {
            if file_fps.is_some() {
                file_ended_ns = Some(clock.now_ns());
                break;
            }
            outages.disconnected();
            status.errors.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        let t = clock.now_ns();
        if !capture.retrieve(&mut frame, 0)? || frame.empty() {
            status.errors.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let device_ms = capture.get(videoio::CAP_PROP_POS_MSEC)?;
        if writer.is_none() {
            let path = session.join(format!("{}.{}", cfg.name, cfg.container));
            let [a, b, c, d] =
                session::video_codec(&cfg.container).ok_or_else(|| CameraError::Open(format!("camera '{}': container {:?}", cfg.name, cfg.container)))?;
            let fourcc = videoio::VideoWriter::fourcc(a, b, c, d)?;
            let w = videoio::VideoWriter::new(&path.to_string_lossy(), fourcc, fps, Size::new(frame.cols(), frame.rows()), true)?;
            if !w.is_opened()? {
                return Err(CameraError::Open(format!("camera '{}': cannot write {}", cfg.name, path.display())));
            }
            writer = Some(w);
        }
        writer.as_mut().expect("created").write(&frame)?;
        frames.push(t, &[k as f64, device_ms])?;
        outages.arrived(t, 1, crate::outage::Continuity::Unnumbered)?;
        status.rows.fetch_add(1, Ordering::Relaxed);
        k += 1;
    }
    if let Some(mut w) = writer {
        w.release()?;
    }
    outages.finish(file_ended_ns.unwrap_or_else(|| clock.now_ns()))?;
    frames.flush()?;
    Ok(())
}
