//! `session check` on a recorded session: a camera recorded from a video
//! file (the real recording path: OpenCV in, HuffYUV out), tracked, then
//! damaged file by file; each damage is named, none passes as "ok".

use crate::common;
use lab::info::check;
use lab::{SessionDir, Silent};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A session of `frames` camera frames, tracked.
fn recorded(dir: &std::path::Path) -> SessionDir {
    let video = dir.join("video");
    lab_devices::track::synth_video(
        &lab_devices::track::VideoRequest {
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
    let req = lab_devices::record::RecordRequest {
        rig: &rig,
        rig_path: &rig_path,
        rig_text: &rig_text,
        out: &out,
        append: false,
        duration_s: Some(2.5),
        stop: Arc::new(AtomicBool::new(false)),
        view: None,
    };
    let r = lab_devices::record::record(&req, &Silent).unwrap();
    assert_eq!(r.device("camera").unwrap().rows, 45, "{:?}", r.devices);
    // Capture settings a video file cannot take: named, not fatal.
    assert!(r.warnings.iter().any(|w| w.contains("a video file") && w.contains("exposure, auto_white_balance")), "{:?}", r.warnings);
    lab_devices::track::track(
        &lab_devices::track::TrackRequest {
            markers: Some(video.join("markers.toml")),
            ..lab_devices::track::TrackRequest::new(&out.video("camera", "avi"), &video.join("true-camera.toml"), &out.markers())
        },
        &Silent,
    )
    .unwrap();
    out
}

fn problems(s: &SessionDir) -> Vec<String> {
    check(s, &lab_devices::check_options()).unwrap().problems
}

#[test]
fn every_kind_of_damage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = recorded(dir.path());
    let report = check(&s, &lab_devices::check_options()).unwrap();
    assert!(report.ok() && report.warnings.is_empty(), "{:?} {:?}", report.problems, report.warnings);
    assert_eq!(report.rows(), 45);

    // A truncated marker table.
    let markers = std::fs::read(s.markers()).unwrap();
    std::fs::write(s.markers(), &markers[..markers.len() / 2]).unwrap();
    let p = problems(&s);
    assert!(p.len() == 1 && p[0].contains("markers.parquet") && p[0].contains("cannot read"), "{p:?}");
    std::fs::write(s.markers(), &markers).unwrap();

    // A video cut to a third: its header may still promise every frame.
    let video = std::fs::read(s.video("camera", "avi")).unwrap();
    std::fs::write(s.video("camera", "avi"), &video[..video.len() / 3]).unwrap();
    let p = problems(&s);
    assert!(p.len() == 1 && p[0].contains("camera.avi") && p[0].contains("the frame table (streams/camera) has 45: the video is cut"), "{p:?}");
    std::fs::write(s.video("camera", "avi"), &video).unwrap();
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
    let r = check(&s, &lab_devices::check_options()).unwrap();
    assert!(r.ok() && r.warnings.iter().any(|w| w.contains("not finalised")), "{:?} {:?}", r.problems, r.warnings);
}

/// A column's values: numbers, or text (a number stored as a string).
type Values = Result<Vec<f64>, Vec<String>>;

/// A stream chunk with `columns` (each a name and its values) at host times `t_ns`.
fn write_chunk(path: &std::path::Path, t_ns: &[i64], columns: &[(&str, Values)]) {
    let mut t = session::Table::new();
    t.push_i64("t_host_ns", t_ns.to_vec());
    for (name, values) in columns {
        match values {
            Ok(v) => t.push_f64(name, v.clone()),
            Err(s) => t.push_str(name, s.clone()),
        }
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    t.write(path).unwrap();
}

const ARM: &str = "configs/rod/pls-cable-arm.toml";

/// Damage inside files that read as Parquet: a number stored as text, a
/// column NaN throughout, a device clock that is not a number or stops, a
/// gap table that cannot be read. `session check` names each (and goes on
/// past the gap table); the readers (`info`, `export`, `identify`,
/// `validate`) leave a damaged chunk out with a warning naming it and its
/// rows instead of refusing the whole session, unless told to be strict;
/// without session.toml, identify and validate refuse.
#[test]
fn damage_inside_the_files_is_named_and_readers_leave_a_damaged_chunk_out() {
    let dir = tempfile::tempdir().unwrap();
    let good = common::synth(dir.path(), "day", ARM, "configs/scene/cable-arm-holds.toml", |r| r.seed = 4);
    assert!(check(&good, &lab_devices::check_options()).unwrap().ok(), "{:?}", problems(&good));
    let s = SessionDir::new(dir.path().join("damaged"));
    common::copy_dir(good.path(), s.path());
    // The FT 300's third second: Fx stored as text.
    let chunk = s.stream("ft300").join("000002.parquet");
    let t = session::Table::read(&chunk).unwrap();
    let th = t.i64("t_host_ns").unwrap();
    let text: Vec<String> = t.f64("fx_n").unwrap().iter().map(|v| v.to_string()).collect();
    let mut columns: Vec<(&str, Values)> = vec![("fx_n", Err(text))];
    for c in ["fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"] {
        columns.push((c, Ok(t.f64(c).unwrap())));
    }
    write_chunk(&chunk, &th, &columns);
    // A load cell that read NaN throughout, a controller clock that stops
    // and one that is not a number.
    let times: Vec<i64> = (0..50).map(|k| k * 10_000_000).collect();
    write_chunk(&s.stream("cell").join("000000.parquet"), &times, &[("force_n", Ok(vec![f64::NAN; 50]))]);
    write_chunk(&s.stream("clock").join("000000.parquet"), &times, &[("timestamp", Ok(vec![12.5; 50]))]);
    let mut nan_clock: Vec<f64> = (0..50).map(|k| k as f64 * 0.01).collect();
    nan_clock[7] = f64::NAN;
    write_chunk(&s.stream("clock2").join("000000.parquet"), &times, &[("timestamp", Ok(nan_clock))]);
    // A gap table that is not Parquet.
    std::fs::create_dir_all(s.path().join("gaps/ft300")).unwrap();
    std::fs::write(s.path().join("gaps/ft300/000000.parquet"), b"not parquet").unwrap();

    let found = problems(&s).join("\n");
    for needle in [
        "000002.parquet: column 'fx_n' holds str, not numbers",
        "stream cell: column 'force_n' is NaN in every one of its 50 rows",
        "stream clock: the device clock (timestamp) does not advance in 49 of 49 steps",
        "clock2/000000.parquet: the device clock (timestamp) is not a number at row 7",
        "device ft300: its gap table cannot be read",
    ] {
        assert!(found.contains(needle), "{needle:?} not in:\n{found}");
    }

    // Readers go on without the chunk, and say which rows they lost.
    let lost = format!("{}: left out ({} rows lost)", chunk.display(), th.len());
    let info = lab::info::info(&s).unwrap();
    assert!(info.warnings.iter().any(|w| w.starts_with(&lost)), "{:?}", info.warnings);
    let exported = lab::export::export(&s, &dir.path().join("export")).unwrap();
    assert!(exported.warnings.iter().any(|w| w.starts_with(&lost)), "{:?}", exported.warnings);
    assert!(exported.warnings.iter().any(|w| w.ends_with("device ft300's gap table left out")), "{:?}", exported.warnings);
    let loads = lab::loads::Loads::read(Some(&common::at("configs/loads.toml")), 4).unwrap();
    let request = |refuse_damaged: bool, sessions: Vec<SessionDir>| lab::identify::IdentifyRequest {
        loo: false,
        refuse_damaged,
        ..lab::identify::IdentifyRequest::new(
            &common::at(ARM),
            common::rod(ARM),
            lab::identify::Source::Sessions { dirs: sessions, loads: loads.clone() },
            &dir.path().join("fit"),
        )
    };
    let id = lab::identify::identify(&request(false, vec![s.clone()]), &Silent).unwrap();
    assert!(id.file.warnings.iter().any(|w| w.starts_with(&lost)), "{:?}", id.file.warnings);
    // Strict: refused, naming the chunk.
    common::expect_input_error(lab::identify::identify(&request(true, vec![s.clone()]), &Silent).map(|_| ()), &["000002.parquet", "fx_n"]);

    // No session.toml: refused, not read as if the rig were the default one.
    let bare = SessionDir::new(dir.path().join("bare"));
    common::copy_dir(good.path(), bare.path());
    std::fs::remove_file(bare.meta_path()).unwrap();
    common::expect_input_error(lab::identify::identify(&request(false, vec![bare.clone()]), &Silent).map(|_| ()), &["bare/session.toml", "no session.toml"]);
}

/// A camera session whose recorder was killed between writing frames and
/// their rows (the video holds more frames than the frame table): tracked
/// all the same, the frames that have times, with a warning counting the
/// rest (it was refused outright).
#[test]
fn a_video_longer_than_its_frame_table_is_tracked_where_it_has_times() {
    let dir = tempfile::tempdir().unwrap();
    let s = recorded(dir.path());
    // The frame table loses its rows after the 30th frame, the video keeps all 45.
    let stream = s.stream("camera");
    let t = session::Table::read_chunks(&stream).unwrap();
    let (th, frame, ms) = (t.i64("t_host_ns").unwrap(), t.f64("frame").unwrap(), t.f64("device_ms").unwrap());
    for e in std::fs::read_dir(&stream).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let mut cut = session::Table::new();
    cut.push_i64("t_host_ns", th[..30].to_vec());
    cut.push_f64("frame", frame[..30].to_vec());
    cut.push_f64("device_ms", ms[..30].to_vec());
    cut.write(&stream.join("000000.parquet")).unwrap();
    let video = dir.path().join("video");
    let out = dir.path().join("markers.parquet");
    let tracked = lab_devices::track::track(
        &lab_devices::track::TrackRequest {
            markers: Some(video.join("markers.toml")),
            ..lab_devices::track::TrackRequest::new(&s.video("camera", "avi"), &video.join("true-camera.toml"), &out)
        },
        &Silent,
    )
    .unwrap();
    assert_eq!(tracked.frames, 30);
    assert!(tracked.warnings.iter().any(|w| w.contains("15 frames beyond the 30 rows of its frames table")), "{:?}", tracked.warnings);
    assert!(!tracked.warnings.iter().any(|w| w.contains("truncated")), "{:?}", tracked.warnings);
}
