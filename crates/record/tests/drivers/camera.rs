//! The camera recorder against a scripted frame source (the same trait as
//! OpenCV's capture): a camera that stops delivering and comes back, one
//! whose driver drops frames (its timestamps skip), and one that refuses
//! the rate and resolution asked.

use opencv::core::{Mat, Scalar, CV_8UC3};
use opencv::prelude::*;
use opencv::videoio;
use record::camera::{apply_settings, record, CameraConfig, CameraError, CameraSource, FrameSource, Grabbed};
use record::robot::{Clock, Status};
use session::gaps::GapReason;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames at `fps` on the wall clock; silent in `[silent_from_s,
/// silent_until_s)`; the device timestamp jumps over `skip` frames after
/// each frame index in `skips_after`.
struct Script {
    fps: f64,
    started: Instant,
    next_due: Instant,
    silent: Option<(f64, f64)>,
    skips_after: Vec<u64>,
    skip: u64,
    /// Frames delivered, and the device's frame count (with the drops).
    delivered: u64,
    device_frame: u64,
    reopened: Arc<AtomicUsize>,
    /// What the "driver" accepts: (property, value it ends up at).
    refuses: Vec<(i32, f64)>,
    props: Vec<(i32, f64)>,
}

impl Script {
    fn new(fps: f64) -> Script {
        Script {
            fps,
            started: Instant::now(),
            next_due: Instant::now(),
            silent: None,
            skips_after: vec![],
            skip: 0,
            delivered: 0,
            device_frame: 0,
            reopened: Arc::new(AtomicUsize::new(0)),
            refuses: vec![],
            props: vec![(videoio::CAP_PROP_FPS, fps), (videoio::CAP_PROP_FRAME_WIDTH, 64.0), (videoio::CAP_PROP_FRAME_HEIGHT, 48.0)],
        }
    }
}

impl FrameSource for Script {
    fn grab(&mut self, frame: &mut Mat) -> Result<Grabbed, CameraError> {
        let now_s = self.started.elapsed().as_secs_f64();
        if self.silent.is_some_and(|(a, b)| now_s >= a && now_s < b) {
            std::thread::sleep(Duration::from_millis(20));
            return Ok(Grabbed::Nothing);
        }
        // The next frame is due one period after the last; after a silence
        // the camera starts afresh (no backlog of frames).
        let period = Duration::from_secs_f64(1.0 / self.fps);
        let now = Instant::now();
        if self.next_due + period < now {
            self.next_due = now;
        }
        if let Some(wait) = self.next_due.checked_duration_since(now) {
            std::thread::sleep(wait);
        }
        self.next_due += period;
        *frame = Mat::new_rows_cols_with_default(48, 64, CV_8UC3, Scalar::all((self.delivered % 200) as f64)).unwrap();
        let device_ms = self.device_frame as f64 * 1e3 / self.fps;
        if self.skips_after.contains(&self.delivered) {
            self.device_frame += self.skip;
        }
        self.delivered += 1;
        self.device_frame += 1;
        Ok(Grabbed::Frame { device_ms, taken: None })
    }

    fn reopen(&mut self) -> Result<(), CameraError> {
        self.reopened.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn set(&mut self, prop: i32, value: f64) -> bool {
        if let Some((_, v)) = self.refuses.iter().find(|(p, _)| *p == prop) {
            let v = *v;
            self.props.retain(|(p, _)| *p != prop);
            self.props.push((prop, v));
            return false;
        }
        self.props.retain(|(p, _)| *p != prop);
        self.props.push((prop, value));
        true
    }

    fn get(&self, prop: i32) -> f64 {
        self.props.iter().find(|(p, _)| *p == prop).map_or(f64::NAN, |(_, v)| *v)
    }

    fn is_file(&self) -> bool {
        false
    }
}

fn config(fps: Option<f64>) -> CameraConfig {
    CameraConfig { name: "camera".into(), source: CameraSource::Device(0), fps, file_start: None, container: "mkv".into(), settings: Default::default() }
}

fn run(script: Script, seconds: f64) -> (tempfile::TempDir, Arc<Status>) {
    let dir = tempfile::tempdir().unwrap();
    let status = Arc::new(Status::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (s2, st2, p) = (stop.clone(), status.clone(), dir.path().to_path_buf());
    let h = std::thread::spawn(move || record(&config(Some(50.0)), Box::new(script), &p, Clock::start(), s2, st2));
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    (dir, status)
}

/// A camera that delivers nothing from 1 s to 3 s: after a second it is
/// released and reopened (with back-off); the outage is one gap of about
/// 2 s, and the frames after it are recorded.
#[test]
fn a_camera_that_stops_for_two_seconds_leaves_one_gap_and_records_after_it() {
    let mut script = Script::new(50.0);
    script.silent = Some((1.0, 3.0));
    let reopened = script.reopened.clone();
    let (dir, status) = run(script, 4.5);
    let gaps = session::gaps::read_gaps(dir.path(), "camera").unwrap();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    let g = &gaps[0];
    assert_eq!(g.reason, GapReason::Disconnected, "{g:?}");
    assert!(g.duration_s() > 1.8 && g.duration_s() < 2.6, "{g:?}");
    assert!(reopened.load(Ordering::Relaxed) >= 1);
    assert_eq!(status.reconnects.load(Ordering::Relaxed), 1);
    let t = session::Table::read_chunks(&session::stream_dir(dir.path(), "camera")).unwrap();
    let th = t.i64("t_host_ns").unwrap();
    let after = th.iter().filter(|t| **t as f64 * 1e-9 > g.end_host_ns as f64 * 1e-9 + 0.1).count();
    assert!(after > 40, "{after} frames after the outage");
    // The video holds every frame of the table, at the measured rate.
    let video = videoio::VideoCapture::from_file(&dir.path().join("camera.mkv").to_string_lossy(), videoio::CAP_FFMPEG).unwrap();
    assert_eq!(video.get(videoio::CAP_PROP_FRAME_COUNT).unwrap().round() as usize, th.len());
    let fps = status.settings.lock().unwrap().iter().find(|(n, _)| n == "video_fps").map(|(_, v)| *v).unwrap();
    assert!((fps - 50.0).abs() < 3.0, "video at {fps} frames/s");
}

/// The rate a video is written at, from the first frames' host stamps: a
/// first frame 16 ms late (as the camera of a CI run delivered it, whose
/// video then played at 53.1 frames/s for 50) and a frame dropped on the
/// way leave 50 frames/s.
#[test]
fn a_late_first_frame_or_a_dropped_frame_does_not_change_the_measured_rate() {
    let ms = 1_000_000i64;
    let mut stamps_ns: Vec<i64> = (0..15).map(|k| 20 * ms * k).collect();
    stamps_ns[0] = 16 * ms;
    assert_eq!(record::camera::rate_from_host_stamps(&stamps_ns), Some(50.0));
    stamps_ns.remove(7);
    assert_eq!(record::camera::rate_from_host_stamps(&stamps_ns), Some(50.0));
    assert_eq!(record::camera::rate_from_host_stamps(&stamps_ns[..1]), None);
    assert_eq!(record::camera::rate_from_host_stamps(&[5, 5]), None);
}

/// A driver that drops frames: its timestamps skip 2 frames after frame 60
/// and 3 after frame 120; the gap table has them, as `lost`, with their counts.
#[test]
fn frames_the_driver_dropped_are_in_the_gap_table() {
    let mut script = Script::new(50.0);
    script.skips_after = vec![60, 120];
    script.skip = 2;
    let (dir, status) = run(script, 3.5);
    let gaps = session::gaps::read_gaps(dir.path(), "camera").unwrap();
    let lost: Vec<Option<u64>> = gaps.iter().filter(|g| g.reason == GapReason::Lost).map(|g| g.missing_samples).collect();
    assert_eq!(lost, vec![Some(2), Some(2)], "{gaps:?}");
    assert_eq!(status.missing_packages.load(Ordering::Relaxed), 4);
}

/// A driver that takes 30 frames/s when 60 are asked and 1280 px when
/// 1920 are: a warning for each, and the values the camera reports.
#[test]
fn a_rate_or_size_the_driver_refuses_is_warned_about_and_reported() {
    let mut script = Script::new(30.0);
    script.refuses = vec![(videoio::CAP_PROP_FPS, 30.0), (videoio::CAP_PROP_FRAME_WIDTH, 1280.0)];
    let mut cfg = config(Some(60.0));
    cfg.settings.width_px = Some(1920);
    cfg.settings.height_px = Some(1080);
    let (reported, warnings) = apply_settings(&cfg, &mut script);
    let get = |n: &str| reported.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    assert_eq!(get("fps"), Some(30.0));
    assert_eq!(get("width_px"), Some(1280.0));
    assert_eq!(get("height_px"), Some(1080.0));
    assert_eq!((get("reported_fps"), get("reported_width_px")), (Some(30.0), Some(1280.0)));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("fps = 60 asked, the camera reports 30"), "{warnings:?}");
    assert!(warnings[1].contains("width_px = 1920 asked, the camera reports 1280"), "{warnings:?}");
}

/// A video file played as a camera to a host that falls behind: after a
/// 1 s stall (50 frames at 50 frames/s) the host still gets the next
/// frame, and every frame is stamped when the file shows it (frame k at
/// k / 50 s after frame 0, its `device_ms` k x 20 ms), however late the
/// host took it. (Stamped on arrival, a live day's camera that fell 3.3 s
/// behind put its markers 159 mm from the truth.)
#[test]
fn a_file_played_as_a_camera_stamps_each_frame_when_shown_however_late_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clip.avi");
    let (w, h, fps) = (32u32, 24u32, 50.0);
    let mut writer = session::avi::RawAviWriter::create(&path, w, h, fps).unwrap();
    for k in 0..150u32 {
        writer.write_bgr(&vec![(k % 256) as u8; (w * h * 3) as usize]).unwrap();
    }
    writer.finish().unwrap();
    let cfg = CameraConfig { source: CameraSource::File(path), container: "raw".into(), ..config(None) };
    let mut source = record::camera::open(&cfg).unwrap();
    let mut frame = Mat::default();
    let mut grab = |source: &mut record::camera::OpenCvSource| match source.grab(&mut frame).unwrap() {
        Grabbed::Frame { device_ms, taken } => (device_ms, taken.expect("a file's frame knows when it was shown")),
        _ => panic!("no frame"),
    };
    let (first_ms, shown_0) = grab(&mut source);
    assert_eq!(first_ms, 0.0, "the file's clock starts at the first grab");
    std::thread::sleep(Duration::from_millis(1000));
    let stamps: Vec<(f64, Instant)> = (0..10).map(|_| grab(&mut source)).collect();
    assert!(shown_0.elapsed().as_secs_f64() > 1.0);
    for (k, (device_ms, at)) in stamps.into_iter().enumerate() {
        let k = k + 1;
        let shown_s = at.duration_since(shown_0).as_secs_f64();
        assert!((device_ms - k as f64 * 20.0).abs() < 1e-9, "frame {k} at {device_ms} ms in the file");
        assert!((shown_s - k as f64 / fps).abs() < 1e-6, "frame {k} stamped at {shown_s} s");
    }
}
