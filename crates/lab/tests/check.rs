//! `session check` on a recorded session: a camera recorded from a video
//! file (the real recording path: OpenCV in, HuffYUV out), tracked, then
//! damaged file by file; each damage is named, none passes as "ok".

mod common;
use lab::info::{check, CheckOptions};
use lab::{SessionDir, Silent};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A session of `frames` camera frames, tracked.
fn recorded(dir: &std::path::Path) -> SessionDir {
    let video = dir.join("video");
    lab::track::synth_video(
        &lab::track::VideoRequest {
            out: video.clone(),
            frames: 45,
            markers: 3,
            max_speed_px: 3.0,
            noise: 2.0,
            fps: 100.0,
            format: "mkv".into(),
            occlusion: None,
        },
        &Silent,
    )
    .unwrap();
    let rig = session::Rig {
        cameras: vec![session::rig::CameraDevice {
            name: "camera".into(),
            file: Some(video.join("video.mkv").display().to_string()),
            settings: session::rig::CameraSettings { exposure: Some(-6.0), auto_white_balance: Some(false), ..Default::default() },
            ..session::rig::CameraDevice::default()
        }],
        ..session::Rig::default()
    };
    let rig_path = dir.join("rig.toml");
    let rig_text = rig.to_toml("a file camera");
    std::fs::write(&rig_path, &rig_text).unwrap();
    let out = SessionDir::new(dir.join("s"));
    let req = lab::record::RecordRequest {
        rig: &rig,
        rig_path: &rig_path,
        rig_text: &rig_text,
        out: &out,
        append: false,
        duration_s: Some(2.5),
        stop: Arc::new(AtomicBool::new(false)),
        view: None,
    };
    let r = lab::record::record(&req, &Silent).unwrap();
    assert_eq!(r.device("camera").unwrap().rows, 45, "{:?}", r.devices);
    // Capture settings a video file cannot take: named, not fatal.
    assert!(r.warnings.iter().any(|w| w.contains("a video file") && w.contains("exposure, auto_white_balance")), "{:?}", r.warnings);
    lab::track::track(
        &lab::track::TrackRequest {
            markers: Some(video.join("markers.toml")),
            ..lab::track::TrackRequest::new(&out.video("camera", "mkv"), &video.join("true-camera.toml"), &out.markers())
        },
        &Silent,
    )
    .unwrap();
    out
}

fn problems(s: &SessionDir) -> Vec<String> {
    check(s, &CheckOptions::default()).unwrap().problems
}

#[test]
fn every_kind_of_damage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = recorded(dir.path());
    let report = check(&s, &CheckOptions::default()).unwrap();
    assert!(report.ok() && report.warnings.is_empty(), "{:?} {:?}", report.problems, report.warnings);
    assert_eq!(report.rows(), 45);

    // A truncated marker table.
    let markers = std::fs::read(s.markers()).unwrap();
    std::fs::write(s.markers(), &markers[..markers.len() / 2]).unwrap();
    let p = problems(&s);
    assert!(p.len() == 1 && p[0].contains("markers.parquet") && p[0].contains("cannot read"), "{p:?}");
    std::fs::write(s.markers(), &markers).unwrap();

    // A video cut to a third: its header may still promise every frame.
    let video = std::fs::read(s.video("camera", "mkv")).unwrap();
    std::fs::write(s.video("camera", "mkv"), &video[..video.len() / 3]).unwrap();
    let p = problems(&s);
    assert!(p.len() == 1 && p[0].contains("camera.mkv") && p[0].contains("the frame table (streams/camera) has 45: the video is cut"), "{p:?}");
    std::fs::write(s.video("camera", "mkv"), &video).unwrap();
    assert!(problems(&s).is_empty());

    // A chunk from another stream dropped in (schema drift), and one whose
    // host times go back.
    let mut t = session::Table::new();
    t.push_i64("t_host_ns", vec![9_000_000_000]);
    t.push_f64("fx_n", vec![0.0]);
    t.write(&s.stream("camera").join("000100.parquet")).unwrap();
    let mut t = session::Table::new();
    t.push_i64("t_host_ns", vec![1_000]);
    t.push_f64("frame", vec![45.0]);
    t.push_f64("device_ms", vec![0.0]);
    t.write(&s.stream("camera").join("000101.parquet")).unwrap();
    let p = problems(&s);
    assert!(p.iter().any(|l| l.contains("000100.parquet: columns differ")), "{p:?}");
    assert!(p.iter().any(|l| l.contains("000101.parquet: host time runs backwards at row 0")), "{p:?}");

    // A session whose recorder was killed: a warning, not a problem.
    std::fs::remove_file(s.stream("camera").join("000100.parquet")).unwrap();
    std::fs::remove_file(s.stream("camera").join("000101.parquet")).unwrap();
    let mut meta = s.meta().unwrap().unwrap();
    meta.end_utc.clear();
    meta.write(s.path()).unwrap();
    let r = check(&s, &CheckOptions::default()).unwrap();
    assert!(r.ok() && r.warnings.iter().any(|w| w.contains("not finalised")), "{:?} {:?}", r.problems, r.warnings);
}
