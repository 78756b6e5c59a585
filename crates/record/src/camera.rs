//! Recording a camera (OpenCV VideoCapture: a device or a video file played
//! at its own rate, behind the [`FrameSource`] trait so that tests can
//! script one) into `<session>/<name>.mkv` (lossless HuffYUV) or `.avi`
//! (Motion-JPEG), with the frames table `streams/<name>`: frame index and
//! the host clock at grab (a video file played as a camera: when the file
//! shows the frame, however late the host takes it). Grabbing and encoding
//! run in two threads with a short queue between them: a slow encoder
//! drops (and counts) frames instead of delaying the stamps. The device's
//! own timestamps (CAP_PROP_POS_MSEC, kept as `device_ms`) tell frames the
//! driver dropped; a camera that delivers nothing for a second is
//! released and reopened with back-off; both go to the camera's gap table.

use crate::outage::{Continuity, Outages};
use crate::robot::{Clock, Status};
use opencv::core::{Mat, Size};
use opencv::prelude::*;
use opencv::videoio;
use session::StreamWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, TrySendError};
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
    /// The uncompressed video (container "raw") cannot be written.
    #[error(transparent)]
    Video(#[from] session::avi::AviError),
}

impl fault::Fault for CameraError {
    fn kind(&self) -> fault::Kind {
        match self {
            CameraError::Open(_) => fault::Kind::Input,
            CameraError::OpenCv(_) => fault::Kind::Io,
            CameraError::Session(e) => e.kind(),
            CameraError::Video(e) => e.kind(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum CameraSource {
    Device(i32),
    File(PathBuf),
}

impl CameraSource {
    /// "device 0" or the file's path, for messages.
    pub fn describe(&self) -> String {
        match self {
            CameraSource::Device(i) => format!("device {i}"),
            CameraSource::File(p) => p.display().to_string(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct CameraConfig {
    pub name: String,
    pub source: CameraSource,
    pub fps: Option<f64>,
    /// A file's frame 0 is shown at this wall-clock instant (default: when
    /// the recording starts).
    pub file_start: Option<std::time::SystemTime>,
    /// "avi" (Motion-JPEG), "raw" (uncompressed BGR) or "mkv" (lossless HuffYUV).
    pub container: String,
    /// Capture settings from the rig file.
    pub settings: session::rig::CameraSettings,
}

/// What one grab gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Grabbed {
    /// A frame, with the device's timestamp \[ms\] (NaN: none) and, when
    /// the source knows it on this host's clock, the instant it was taken
    /// (a file played as a camera: when it is shown; a device: none, its
    /// frames are stamped on arrival).
    Frame { device_ms: f64, taken: Option<Instant> },
    /// Nothing this time (a device that stalls, or went away).
    Nothing,
    /// A file played to its end.
    Ended,
}

/// Where frames come from: an OpenCV capture, or a test's script.
pub trait FrameSource: Send {
    /// The next frame into `frame`.
    fn grab(&mut self, frame: &mut Mat) -> Result<Grabbed, CameraError>;
    /// Releases the device and opens it again (a camera that went away).
    fn reopen(&mut self) -> Result<(), CameraError>;
    /// A capture property (OpenCV's `CAP_PROP_*`): set (true: accepted)
    /// and read back.
    fn set(&mut self, prop: i32, value: f64) -> bool;
    fn get(&self, prop: i32) -> f64;
    /// A video file (plays at its own rate and ends) rather than a device.
    fn is_file(&self) -> bool;
}

/// What a capture delivers, as it says: frame width and height \[px\] and
/// its rate \[frames/s\] (`None` where it does not say).
pub fn delivers(capture: &dyn FrameSource) -> [Option<f64>; 3] {
    [videoio::CAP_PROP_FRAME_WIDTH, videoio::CAP_PROP_FRAME_HEIGHT, videoio::CAP_PROP_FPS].map(|p| Some(capture.get(p)).filter(|v| v.is_finite() && *v > 0.0))
}

/// Applies the rig file's capture settings and reads back what the camera
/// reports: `(name, reported value)` for every setting given, the frame
/// rate and the frame size the camera runs at, and a warning for each
/// setting the driver refused (or a file cannot take). Never fatal: the
/// recording goes on with what the camera does.
pub fn apply_settings(cfg: &CameraConfig, capture: &mut dyn FrameSource) -> (Vec<(String, f64)>, Vec<String>) {
    let s = &cfg.settings;
    let b = |v: bool| if v { 1.0 } else { 0.0 };
    // (name, OpenCV property, value to set, value the property reads when it took).
    let mut wanted: Vec<(&str, i32, f64, f64)> = vec![];
    if let Some(fps) = cfg.fps {
        wanted.push(("fps", videoio::CAP_PROP_FPS, fps, fps));
    }
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
        capture.set(videoio::CAP_PROP_AUTOFOCUS, 0.0);
        wanted.push(("focus", videoio::CAP_PROP_FOCUS, f, f));
    }
    let mut reported = vec![];
    let mut warnings = vec![];
    if capture.is_file() {
        let names: Vec<&str> = wanted.iter().map(|w| w.0).filter(|n| *n != "fps").collect();
        if !names.is_empty() {
            warnings.push(format!(
                "camera '{}': a video file ({}) takes no capture settings: {} not applied",
                cfg.name,
                cfg.source.describe(),
                names.join(", ")
            ));
        }
        return (reported, warnings);
    }
    for (name, prop, value, expect) in wanted {
        let took = capture.set(prop, value);
        let now = capture.get(prop);
        reported.push((name.to_string(), now));
        let matches = (now - expect).abs() <= 1e-6 * expect.abs().max(1.0);
        if !took || !matches {
            warnings.push(format!("camera '{}': {name} = {value} asked, the camera reports {now} (the driver refused or rounded it)", cfg.name));
        }
    }
    // What the camera runs at, asked or not.
    for (name, prop) in [
        ("reported_fps", videoio::CAP_PROP_FPS),
        ("reported_width_px", videoio::CAP_PROP_FRAME_WIDTH),
        ("reported_height_px", videoio::CAP_PROP_FRAME_HEIGHT),
        ("reported_fourcc", videoio::CAP_PROP_FOURCC),
    ] {
        let v = capture.get(prop);
        if v.is_finite() && v > 0.0 {
            reported.push((name.to_string(), v));
        }
    }
    (reported, warnings)
}

/// An OpenCV capture: a device, or a file played at its own rate from
/// `file_start` as if a camera had been filming since then. A file's frame
/// is stamped when the file shows it, however late the host takes it: it
/// used to be stamped on arrival, and a virtual-lab camera decoding
/// HuffYUV beside four busy processes fell 3.3 s behind in 13 s, every
/// frame later than the last, which no mapping by the file's clock (the
/// least delay in a window) put right: markers 159 mm from the truth.
pub struct OpenCvSource {
    cfg: CameraConfig,
    capture: videoio::VideoCapture,
    /// A file's frame rate; none for a device.
    file_fps: Option<f64>,
    /// When the file's clock started: at open with `file_start` (the
    /// lead is counted from then), else at the first grab, so that the
    /// time a recorder takes to start its devices drops no frame.
    started: Option<Instant>,
    lead_s: f64,
    file_frame: u64,
}

impl OpenCvSource {
    fn open_capture(cfg: &CameraConfig) -> Result<videoio::VideoCapture, CameraError> {
        let cap = match &cfg.source {
            CameraSource::Device(i) => videoio::VideoCapture::new(*i, videoio::CAP_ANY)?,
            CameraSource::File(p) => {
                if !p.exists() {
                    return Err(CameraError::Open(format!("camera '{}': {}: no such file", cfg.name, p.display())));
                }
                videoio::VideoCapture::from_file(&p.to_string_lossy(), videoio::CAP_FFMPEG)?
            }
        };
        if !cap.is_opened()? {
            return Err(CameraError::Open(format!("camera '{}': cannot open {}", cfg.name, cfg.source.describe())));
        }
        Ok(cap)
    }
}

impl FrameSource for OpenCvSource {
    fn grab(&mut self, frame: &mut Mat) -> Result<Grabbed, CameraError> {
        // A file's frame: when it is shown, and its position in the file
        // [ms] to the nanosecond (OpenCV's is whole milliseconds: 33, 67,
        // 100 at 30/s).
        let mut shown: Option<(Instant, f64)> = None;
        if let Some(f) = self.file_fps {
            // A file plays at its own rate, like a live camera; frames shown
            // before the recording started are passed over. A late host
            // gets every frame (they are wanted; a recording that ends
            // while it is behind ends short of the file).
            let started = *self.started.get_or_insert_with(Instant::now);
            loop {
                let due_s = self.lead_s + self.file_frame as f64 / f;
                if due_s >= 0.0 {
                    let due = started + Duration::from_secs_f64(due_s);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    if f.is_finite() {
                        shown = Some((due, self.file_frame as f64 / f * 1e3));
                    }
                    break;
                }
                if !self.capture.grab()? {
                    return Ok(Grabbed::Ended);
                }
                self.file_frame += 1;
            }
            self.file_frame += 1;
        }
        if !self.capture.grab()? {
            return Ok(if self.file_fps.is_some() { Grabbed::Ended } else { Grabbed::Nothing });
        }
        if !self.capture.retrieve(frame, 0)? || frame.empty() {
            return Ok(Grabbed::Nothing);
        }
        let device_ms = shown.map_or_else(|| self.capture.get(videoio::CAP_PROP_POS_MSEC).unwrap_or(f64::NAN), |(_, ms)| ms);
        Ok(Grabbed::Frame { device_ms, taken: shown.map(|(at, _)| at) })
    }

    fn reopen(&mut self) -> Result<(), CameraError> {
        let _ = self.capture.release();
        self.capture = OpenCvSource::open_capture(&self.cfg)?;
        let _ = apply_settings(&self.cfg.clone(), self);
        Ok(())
    }

    fn set(&mut self, prop: i32, value: f64) -> bool {
        self.capture.set(prop, value).unwrap_or(false)
    }

    fn get(&self, prop: i32) -> f64 {
        self.capture.get(prop).unwrap_or(f64::NAN)
    }

    fn is_file(&self) -> bool {
        self.file_fps.is_some()
    }
}

/// Opens the camera and reads one frame (so a bad device or file is
/// reported before recording starts).
pub fn open(cfg: &CameraConfig) -> Result<OpenCvSource, CameraError> {
    let mut cap = OpenCvSource::open_capture(cfg)?;
    let mut probe = Mat::default();
    if !cap.read(&mut probe)? || probe.empty() {
        return Err(CameraError::Open(format!("camera '{}': {} gives no frames", cfg.name, cfg.source.describe())));
    }
    // Re-open files after the probe read so that frame 0 is recorded.
    let file_fps = match &cfg.source {
        CameraSource::File(_) => {
            cap = OpenCvSource::open_capture(cfg)?;
            Some(cap.get(videoio::CAP_PROP_FPS)?).filter(|f| *f > 0.0).or(Some(30.0))
        }
        CameraSource::Device(_) => None,
    };
    // When frame 0 of a file is shown, on this process's monotonic clock.
    let lead_s = cfg.file_start.map_or(0.0, |t| -crate::serial_emulators::seconds_since(t));
    Ok(OpenCvSource { cfg: cfg.clone(), capture: cap, file_fps, started: cfg.file_start.map(|_| Instant::now()), lead_s, file_frame: 0 })
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
    let mut source = open(cfg)?;
    // A look, not a recording: a file's frames as fast as they decode.
    source.file_fps = source.file_fps.map(|_| f64::INFINITY);
    source.lead_s = 0.0;
    let (reported, warnings) = apply_settings(cfg, &mut source);
    let settle = if source.is_file() { 0 } else { settle };
    let mut frames = vec![];
    let (mut settled, mut nothing) = (0, 0);
    while frames.len() < count && nothing < 100 {
        let mut frame = Mat::default();
        match source.grab(&mut frame)? {
            Grabbed::Frame { .. } if settled < settle => settled += 1,
            Grabbed::Frame { .. } => frames.push(frame),
            Grabbed::Nothing => nothing += 1,
            Grabbed::Ended => break,
        }
    }
    if frames.is_empty() {
        return Err(CameraError::Open(format!("camera '{}': gave no frames", cfg.name)));
    }
    Ok(Grab { frames, reported, warnings })
}

/// Frames queued between the grabbing and the encoding thread: more and
/// the host stamps would wait for the encoder.
const QUEUE_FRAMES: usize = 8;
/// Frames whose host stamps measure a device's rate before the video file
/// (which needs one) is opened.
const RATE_FRAMES: usize = 15;
/// A device that delivers nothing this long is released and reopened.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// A grabbed frame on its way to the encoder.
struct QueuedFrame {
    t_ns: i64,
    device_ms: f64,
    frame: Mat,
}

/// Records until `stop` is set (or a file ends).
pub fn record(
    cfg: &CameraConfig,
    mut source: Box<dyn FrameSource>,
    session: &Path,
    clock: Clock,
    stop: Arc<AtomicBool>,
    status: Arc<Status>,
) -> Result<(), CameraError> {
    let nominal_fps = if source.is_file() {
        Some(source.get(videoio::CAP_PROP_FPS)).filter(|f| *f > 0.0)
    } else {
        cfg.fps.or(Some(source.get(videoio::CAP_PROP_FPS)).filter(|f| *f > 0.0))
    };
    let fps = nominal_fps.unwrap_or(30.0);
    let period_ms = 1e3 / fps;
    let mut outages = Outages::new(session, &cfg.name, Outages::silence_limit_s(fps), usize::MAX, status.clone())?;
    let (tx, rx) = sync_channel::<QueuedFrame>(QUEUE_FRAMES);
    let is_file = source.is_file();
    let file_rate = is_file.then_some(fps);
    let encoded = std::thread::scope(|scope| {
        let encoder = scope.spawn(|| encode(cfg, rx, session, file_rate, &status));
        let mut file_ended_ns: Option<i64> = None;
        // A file's last frame, stamped when shown: its end comes a period
        // later, however late the host reaches it.
        let mut last_shown_ns: Option<i64> = None;
        let mut last_device_ms: Option<f64> = None;
        let mut last_frame = Instant::now();
        // Reopening waits longer after each failed try (50 ms to 2 s), while
        // grabbing goes on, so a camera that comes back is seen at once.
        let mut next_reopen = Instant::now();
        let mut reopen_delay = Duration::from_millis(50);
        let mut dropped_in_queue = 0u64;
        let mut last_preview = Instant::now() - PREVIEW_EVERY;
        let mut frame = Mat::default();
        while !stop.load(Ordering::Relaxed) {
            let grabbed = source.grab(&mut frame);
            let t = clock.now_ns();
            match grabbed {
                Ok(Grabbed::Frame { device_ms, taken }) => {
                    // Stamped when taken where the source knows it (a file
                    // played as a camera: however late the host), else on
                    // arrival.
                    let t = taken.map_or(t, |at| clock.ns_at(at));
                    last_shown_ns = taken.map(|_| t);
                    // The device's clock says how many frames it dropped.
                    let continuity = match last_device_ms {
                        Some(last) if device_ms.is_finite() && device_ms > last => {
                            let step = device_ms - last;
                            if step > 1.5 * period_ms {
                                Continuity::Missing(((step / period_ms).round() as u64).saturating_sub(1).max(1))
                            } else {
                                Continuity::Continuous
                            }
                        }
                        _ => Continuity::Unnumbered,
                    };
                    last_frame = Instant::now();
                    reopen_delay = Duration::from_millis(50);
                    if status.tap.wanted.load(Ordering::Relaxed) && last_preview.elapsed() >= PREVIEW_EVERY {
                        offer_frame(&status.tap, t, device_ms, &frame);
                        last_preview = Instant::now();
                    }
                    let queued = QueuedFrame { t_ns: t, device_ms, frame: std::mem::take(&mut frame) };
                    // A file waits for the encoder (it is paced by us, and
                    // every frame of it is wanted); a device does not.
                    let sent = if is_file { tx.send(queued).map_err(|e| TrySendError::Disconnected(e.0)) } else { tx.try_send(queued) };
                    match sent {
                        Ok(()) => {
                            outages.arrived(t, 1, continuity)?;
                            last_device_ms = Some(device_ms).filter(|d| d.is_finite());
                        }
                        // The encoder is behind: this frame is dropped, as
                        // if never grabbed (the next one's step counts it).
                        Err(TrySendError::Full(_)) => dropped_in_queue += 1,
                        Err(TrySendError::Disconnected(_)) => break,
                    }
                }
                Ok(Grabbed::Ended) => {
                    // A file that ended is not an outage: the recording of it ends there.
                    file_ended_ns = Some(last_shown_ns.map_or(t, |last| last + (period_ms * 1e6) as i64));
                    status.set(FILE_ENDED_AT_S, t as f64 * 1e-9);
                    break;
                }
                Ok(Grabbed::Nothing) | Err(_) => {
                    if grabbed.is_err() {
                        status.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    if last_frame.elapsed() >= REOPEN_AFTER && Instant::now() >= next_reopen {
                        // A camera that went away: released and opened again.
                        outages.disconnected();
                        if let Err(e) = source.reopen() {
                            status.failed(&format!("camera '{}': {e}", cfg.name));
                        }
                        next_reopen = Instant::now() + reopen_delay;
                        reopen_delay = (reopen_delay * 2).min(Duration::from_secs(2));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        drop(tx);
        status.set("frames_dropped_behind_encoder", dropped_in_queue as f64);
        outages.finish(file_ended_ns.unwrap_or_else(|| clock.now_ns()))?;
        encoder.join().unwrap_or_else(|_| Err(CameraError::Open(format!("camera '{}': the encoder panicked", cfg.name))))
    });
    encoded
}

/// The setting a camera playing a file reports when the file has ended
/// (host time \[s\]): its silence from then on is no outage.
pub const FILE_ENDED_AT_S: &str = "file_ended_at_s";

/// How often a live view is offered a frame (a preview, not the video).
const PREVIEW_EVERY: Duration = Duration::from_millis(200);

/// Copies `frame` into the tap's slot unless a view holds it now.
fn offer_frame(tap: &crate::robot::Tap, t_ns: i64, device_ms: f64, frame: &Mat) {
    if let Ok(mut slot) = tap.frame.try_lock() {
        let mut copy = slot.take().map(|f| f.image).unwrap_or_default();
        if frame.copy_to(&mut copy).is_ok() {
            *slot = Some(crate::robot::TappedFrame { t_ns, device_ms, image: copy });
        }
    }
}

/// A device's frame rate \[1/s\] from its frames' host stamps: one over
/// the median interval (the one `session export --aligned` takes its
/// tolerance from), to 0.01 frames/s; `None` under two frames.
///
/// The median, not the first-to-last span: a camera's first frame often
/// arrives late (the stream starting) and the next one on time, and one
/// late stamp in 15 frames at 50 frames/s made a span measure 53.1.
pub fn rate_from_host_stamps(stamps_ns: &[i64]) -> Option<f64> {
    let median_s = session::aligned::median_interval_s(stamps_ns)?;
    (median_s > 0.0).then(|| (1.0 / median_s * 100.0).round() / 100.0)
}

/// Writes the frames table and the video: the file's rate for a file,
/// else the rate measured from the first frames' host stamps.
fn encode(cfg: &CameraConfig, rx: std::sync::mpsc::Receiver<QueuedFrame>, session: &Path, file_rate: Option<f64>, status: &Status) -> Result<(), CameraError> {
    let columns = vec!["frame".to_string(), "device_ms".to_string()];
    status.tap.set_columns(&columns);
    let mut table = StreamWriter::create(session, &cfg.name, columns, Duration::from_secs(1))?;
    let mut writer: Option<VideoFile> = None;
    let mut waiting: Vec<QueuedFrame> = vec![];
    let mut k: u64 = 0;
    let mut write = |g: QueuedFrame, writer: &mut VideoFile, k: &mut u64| -> Result<(), CameraError> {
        writer.write(&g.frame)?;
        let row = [*k as f64, g.device_ms];
        table.push(g.t_ns, &row)?;
        status.recorded(g.t_ns, &row);
        *k += 1;
        Ok(())
    };
    let open = |first: &QueuedFrame, fps: f64| VideoFile::create(cfg, session, &first.frame, fps);
    let measured = |frames: &[QueuedFrame]| -> f64 {
        let stamps_ns: Vec<i64> = frames.iter().map(|f| f.t_ns).collect();
        rate_from_host_stamps(&stamps_ns).unwrap_or(cfg.fps.unwrap_or(30.0))
    };
    // The video opens once its rate is known: a file's own, or measured
    // over the first frames (or over all of a shorter recording).
    let start = |waiting: &[QueuedFrame]| -> Result<VideoFile, CameraError> {
        let fps = file_rate.unwrap_or_else(|| measured(waiting));
        status.set("video_fps", fps);
        open(&waiting[0], fps)
    };
    for g in rx.iter() {
        waiting.push(g);
        if writer.is_none() && (file_rate.is_some() || waiting.len() >= RATE_FRAMES) {
            writer = Some(start(&waiting)?);
        }
        if let Some(w) = writer.as_mut() {
            for g in waiting.drain(..) {
                write(g, w, &mut k)?;
            }
        }
    }
    if writer.is_none() && !waiting.is_empty() {
        writer = Some(start(&waiting)?);
    }
    if let Some(mut w) = writer {
        for g in waiting.drain(..) {
            write(g, &mut w, &mut k)?;
        }
        w.finish()?;
    }
    table.flush()?;
    Ok(())
}

/// The video file a camera records to, in the rig's container.
enum VideoFile {
    OpenCv(videoio::VideoWriter),
    Raw(session::avi::RawAviWriter),
}

impl VideoFile {
    /// `<session>/<camera>.<extension>` for frames like `first` at `fps`.
    fn create(cfg: &CameraConfig, session: &Path, first: &Mat, fps: f64) -> Result<VideoFile, CameraError> {
        let format = session::VideoFormat::from_container(&cfg.container)
            .ok_or_else(|| CameraError::Open(format!("camera '{}': container {:?}", cfg.name, cfg.container)))?;
        let path = session.join(format!("{}.{}", cfg.name, format.extension()));
        let Some([a, b, c, d]) = format.fourcc() else {
            return Ok(VideoFile::Raw(session::avi::RawAviWriter::create(&path, first.cols() as u32, first.rows() as u32, fps)?));
        };
        let fourcc = videoio::VideoWriter::fourcc(a, b, c, d)?;
        // Motion-JPEG by OpenCV's own writer, whose quality can be set.
        let api = if format == session::VideoFormat::Mjpeg { videoio::CAP_OPENCV_MJPEG } else { videoio::CAP_ANY };
        let mut w = videoio::VideoWriter::new_with_backend(&path.to_string_lossy(), api, fourcc, fps, Size::new(first.cols(), first.rows()), true)?;
        if !w.is_opened()? {
            return Err(CameraError::Open(format!("camera '{}': cannot write {}", cfg.name, path.display())));
        }
        if let Some(q) = format.quality() {
            if !w.set(videoio::VIDEOWRITER_PROP_QUALITY, q)? {
                return Err(CameraError::Open(format!("camera '{}': {}: the writer refused quality {q}", cfg.name, path.display())));
            }
        }
        Ok(VideoFile::OpenCv(w))
    }

    fn write(&mut self, frame: &Mat) -> Result<(), CameraError> {
        match self {
            VideoFile::OpenCv(w) => w.write(frame)?,
            VideoFile::Raw(w) if frame.is_continuous() && frame.typ() == opencv::core::CV_8UC3 => w.write_bgr(frame.data_bytes()?)?,
            VideoFile::Raw(w) => w.write_bgr(frame.try_clone()?.data_bytes()?)?,
        }
        Ok(())
    }

    fn finish(self) -> Result<(), CameraError> {
        match self {
            VideoFile::OpenCv(mut w) => w.release()?,
            VideoFile::Raw(w) => w.finish()?,
        }
        Ok(())
    }
}
