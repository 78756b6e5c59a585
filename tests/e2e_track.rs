//! End-to-end tracking with the `rodlab` binary: synthetic board ->
//! calibrate -> synthetic video -> track -> marker table, and bad inputs.

use crate::common;

use common::{rodlab, stderr};

fn truth(dir: &std::path::Path) -> Vec<(usize, usize, f64, f64, f64, f64, bool)> {
    std::fs::read_to_string(dir.join("truth.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
                f[5].parse().unwrap(),
                f[6] == "1",
            )
        })
        .collect()
}

#[test]
fn calibrate_then_track_a_synthetic_video() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    let o = rodlab(&["synth", "board", "--out", &p("board")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rodlab(&[
        "calibrate",
        "--images",
        &p("board/views"),
        "--board",
        "9x6",
        "--square-m",
        "0.016",
        "--plane-image",
        &p("board/plane.png"),
        "--out",
        &p("camera.toml"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let camera: toml::Value = toml::from_str(&std::fs::read_to_string(dir.path().join("camera.toml")).unwrap()).unwrap();
    assert!(camera.get("fx_px").and_then(|v| v.as_float()).is_some_and(|f| f > 0.0), "{camera}");
    let o = rodlab(&["synth", "video", "--out", &p("video"), "--frames", "60", "--occlude", "2,30,5", "--format", "mkv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rodlab(&[
        "track",
        &p("video/video.mkv"),
        "--camera",
        &p("camera.toml"),
        "--markers",
        &p("video/markers.toml"),
        "--out",
        &p("markers.parquet"),
        "--overlay",
        &p("overlay"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = session::read_markers(&dir.path().join("markers.parquet")).unwrap();
    // 60 frames of 6 markers, marker 2 hidden for 5 of them.
    assert_eq!(rows.iter().filter(|r| r.flags & session::flags::MISSING != 0).count(), 5);
    let truth = truth(&dir.path().join("video"));
    assert_eq!(rows.len(), truth.len());
    let mut sq = 0.0;
    let mut n = 0;
    for (r, t) in rows.iter().zip(&truth) {
        assert_eq!((r.frame as usize, r.marker as usize), (t.0, t.1));
        assert!((r.t_s - r.frame as f64 / 100.0).abs() < 1e-9);
        if !t.6 {
            assert_eq!(r.flags & session::flags::MISSING, session::flags::MISSING);
            assert!(r.x_m.is_nan());
            continue;
        }
        assert!((r.u_px - t.2).hypot(r.v_px - t.3) < 0.5, "frame {} marker {}: ({}, {}) vs ({}, {})", t.0, t.1, r.u_px, r.v_px, t.2, t.3);
        sq += (r.x_m - t.4).powi(2) + (r.y_m - t.5).powi(2);
        n += 1;
    }
    let rms_mm = (sq / n as f64).sqrt() * 1e3;
    println!("rodlab track: metric RMS {rms_mm:.3} mm");
    assert!(rms_mm < 0.2);
    assert_eq!(std::fs::read_dir(dir.path().join("overlay")).unwrap().count(), 60);

    // A video cut in half (a crash while writing it): what is there is
    // tracked, and the user is told frames are missing.
    let bytes = std::fs::read(dir.path().join("video/video.mkv")).unwrap();
    std::fs::write(dir.path().join("half.mkv"), &bytes[..bytes.len() / 2]).unwrap();
    let o =
        rodlab(&["track", &p("half.mkv"), "--camera", &p("camera.toml"), "--markers", &p("video/markers.toml"), "--fps", "100", "--out", &p("half.parquet")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let half = session::read_markers(&dir.path().join("half.parquet")).unwrap();
    assert!(!half.is_empty() && half.len() < rows.len(), "{} rows", half.len());
    assert!(stderr(&o).contains("half.mkv"), "the user is warned: {}", stderr(&o));

    // The same video uncompressed (synth's default, as the recorder's
    // container "raw"): tracked by the tracking build, which loads
    // OpenCV's core and imgproc and no video or image library, into the
    // same rows as the lossless .mkv; with --overlay the device build
    // reads it.
    let o = rodlab(&["synth", "video", "--out", &p("raw"), "--frames", "60", "--occlude", "2,30,5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let track_raw = |out: &str, extra: &[&str], env: &[(&str, &str)]| {
        let mut c = common::rodlab_command();
        c.args(["track", &p("raw/video.avi"), "--camera", &p("camera.toml"), "--markers", &p("video/markers.toml"), "--out", &p(out)]);
        let o = c.args(extra).envs(env.iter().copied()).env("LD_DEBUG", "libs").output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let loaded: Vec<String> = stderr(&o).lines().filter(|l| l.contains("calling init:")).map(|l| l.rsplit(' ').next().unwrap_or("").to_string()).collect();
        (session::read_markers(&dir.path().join(out)).unwrap(), loaded.join("\n"))
    };
    let (raw_rows, libs) = track_raw("raw.parquet", &[], &[]);
    assert!(libs.contains("librodlab_tracking.so") && libs.contains("libopencv_imgproc"), "{libs}");
    for needle in ["videoio", "imgcodecs", "avcodec", "gstreamer", "rodlab_devices"] {
        assert!(!libs.contains(needle), "tracking a raw video loads {needle}:\n{libs}");
    }
    let (overlaid_rows, libs) = track_raw("raw-overlay.parquet", &["--overlay", &p("raw-overlay")], &[]);
    assert!(libs.contains("librodlab_devices.so"), "{libs}");
    assert_eq!(std::fs::read_dir(dir.path().join("raw-overlay")).unwrap().count(), 60);
    // Without the tracking build (not built), the device build tracks it.
    let (fallback_rows, libs) = track_raw("raw-fallback.parquet", &[], &[("RODLAB_TRACKING_LIB", "/nonexistent/librodlab_tracking.so")]);
    assert!(libs.contains("librodlab_devices.so") && !libs.contains("librodlab_tracking"), "{libs}");
    for other in [&rows, &overlaid_rows, &fallback_rows] {
        assert_eq!(raw_rows.len(), other.len());
        for (a, b) in raw_rows.iter().zip(other.iter()) {
            assert_eq!((a.frame, a.marker, a.u_px.to_bits(), a.v_px.to_bits(), a.flags), (b.frame, b.marker, b.u_px.to_bits(), b.v_px.to_bits(), b.flags));
        }
    }
}

#[test]
fn bad_inputs_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    assert!(rodlab(&["synth", "board", "--out", &p("board")]).status.success());
    // Wrong board size (two views suffice to show it).
    std::fs::create_dir_all(dir.path().join("two")).unwrap();
    for v in ["view_00.png", "view_01.png"] {
        std::fs::copy(dir.path().join("board/views").join(v), dir.path().join("two").join(v)).unwrap();
    }
    let o = rodlab(&["calibrate", "--images", &p("two"), "--board", "7x5", "--square-m", "0.016", "--out", &p("c.toml")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no image shows a 7x5 board"), "{}", stderr(&o));
    let o = rodlab(&["calibrate", "--images", &p("board/views"), "--board", "9by6", "--square-m", "0.016"]);
    assert_eq!(o.status.code(), Some(2));
    // Unreadable video.
    std::fs::write(dir.path().join("broken.mkv"), b"not a video at all").unwrap();
    let cam = dir.path().join("board/true-camera.toml");
    let o = rodlab(&["track", &p("broken.mkv"), "--camera", cam.to_str().unwrap(), "--out", &p("m.parquet")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken.mkv"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "one line, no OpenCV/FFmpeg chatter: {}", stderr(&o));
    // No marker in the first frame (a folder of board images has none).
    let o = rodlab(&["track", &p("board/views"), "--camera", cam.to_str().unwrap(), "--fps", "30", "--out", &p("m.parquet")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("frame 0: found 0 marker(s) in the first frame"), "{}", stderr(&o));
    // A markers file with a bad field names it.
    std::fs::write(dir.path().join("markers.toml"), "saturation_min = 3.0\n").unwrap();
    let o = rodlab(&["track", &p("board/views"), "--camera", cam.to_str().unwrap(), "--markers", &p("markers.toml"), "--out", &p("m.parquet")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("markers.toml") && stderr(&o).contains("saturation_min"), "{}", stderr(&o));
    let o = rodlab(&["track", &p("nothing-here.mkv"), "--camera", cam.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn record_a_camera_then_track_with_the_frames_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    assert!(rodlab(&["synth", "video", "--out", &p("video"), "--frames", "30"]).status.success());
    std::fs::write(dir.path().join("rig.toml"), format!("[[camera]]\nname = \"camera\"\nfile = \"{}\"\n", p("video/video.avi"))).unwrap();
    let o = rodlab(&["record", "--rig", &p("rig.toml"), "--out", &p("s"), "--duration", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The disk's line first: 1280 x 720 at the file's 100 frames/s in the
    // default Motion-JPEG, 0.43 bytes a pixel: 2.4 GB a minute.
    let said = String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or_default().to_string();
    println!("{said}");
    assert!(said.starts_with("disk: this rig writes about 2.4 GB a minute (camera 2.4 GB a minute): the planned 4 s need 158.5 MB of"), "{said}");
    assert!(dir.path().join("s/camera.avi").is_file() && !session::avi::sniff(&dir.path().join("s/camera.avi")), "Motion-JPEG, not raw");
    let frames = session::Table::read_chunks(&session::stream_dir(&dir.path().join("s"), "camera")).unwrap();
    let idx = frames.f64("frame").unwrap();
    let t = frames.i64("t_host_ns").unwrap();
    assert_eq!(idx, (0..30).map(|k| k as f64).collect::<Vec<_>>(), "every frame, in order");
    // A file's frame is stamped when the file shows it, 10 ms apart at its
    // 100 frames/s however late a busy host takes it (frame 1 once came 5
    // ms late with the test suite beside it).
    assert!(t.windows(2).all(|w| (w[1] - w[0] - 10_000_000).abs() < 1_000), "{t:?}");
    // Played at that rate, never faster: the file's end was reached (on the
    // host's clock, when the recorder found it) no sooner than 30 frames
    // after frame 0 was shown; played twice as fast, 150 ms sooner.
    let meta = session::SessionMeta::read(&dir.path().join("s")).unwrap().unwrap();
    let camera = meta.devices.iter().find(|d| d.name == "camera").unwrap();
    let ended_s = camera.settings.get("file_ended_at_s").copied().unwrap();
    let played_s = ended_s - t[0] as f64 * 1e-9;
    assert!((0.299..3.0).contains(&played_s), "the file's 30 frames played in {played_s} s");
    let o = rodlab(&["track", &p("s/camera.avi"), "--camera", &p("video/true-camera.toml"), "--markers", &p("video/markers.toml"), "--out", &p("m.parquet")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = session::read_markers(&dir.path().join("m.parquet")).unwrap();
    assert_eq!(rows.len(), 30 * 6);
    // Times come from the frames table, on the file's clock (its positions,
    // 10 ms apart) at the smallest delay of any frame: the frames' own
    // stamps, as they were taken when shown.
    let stamped = session::frame_times_on_host_clock(&frames).unwrap();
    assert!(stamped.iter().zip(&t).all(|(s, h)| (s - h).abs() <= 10), "{stamped:?} {t:?}");
    for r in &rows {
        assert_eq!(r.t_host_ns, Some(stamped[r.frame as usize]), "times come from the frames table");
        assert!((r.t_s - stamped[r.frame as usize] as f64 * 1e-9).abs() < 1e-12);
    }
    // Missing device -> exit 2.
    std::fs::write(dir.path().join("bad.toml"), "[[camera]]\nfile = \"/nonexistent/video.mkv\"\n").unwrap();
    let o = rodlab(&["record", "--rig", &p("bad.toml"), "--out", &p("x"), "--duration", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/video.mkv"), "{}", stderr(&o));
}

#[test]
fn camera_check_finds_every_marker_names_a_covered_one_and_reports_what_a_file_cannot_take() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    assert!(rodlab(&["synth", "video", "--out", &p("clear"), "--frames", "12", "--markers", "6"]).status.success());
    assert!(rodlab(&["synth", "video", "--out", &p("covered"), "--frames", "12", "--markers", "6", "--occlude", "2,0,12"]).status.success());
    let rig = |video: &str| {
        let path = p(&format!("rig-{video}.toml"));
        let text = format!("[[camera]]\nfile = \"{}\"\n[camera.settings]\nexposure = 100.0\nauto_white_balance = false\n", p(&format!("{video}/video.avi")));
        std::fs::write(&path, text).unwrap();
        path
    };
    let markers = p("clear/markers.toml");

    let o = rodlab(&["camera", "check", "--rig", &rig("clear"), "--markers", &markers, "--frames", "10", "--out", &p("check-clear")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ok: all 6 markers found in each of 10 frames"), "{out}");
    // A file takes no capture settings: said, not fatal.
    assert!(stderr(&o).contains("exposure, auto_white_balance not applied"), "{}", stderr(&o));
    assert!(dir.path().join("check-clear/camera-check.png").is_file());
    // The table's last-seen positions are frame 9's true centres.
    let truth = truth(&dir.path().join("clear"));
    let table = std::fs::read_to_string(dir.path().join("check-clear/camera-check.csv")).unwrap();
    let mut lines = table.lines();
    assert_eq!(lines.next().unwrap(), "marker,found_frames,area_px,saturation_margin,value_margin,hue_margin_deg,sharpness_grey2,u_px,v_px");
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), 6);
    for row in &rows {
        let t = truth.iter().find(|t| t.0 == 9 && t.1 == row[0] as usize).unwrap();
        assert_eq!(row[1], 10.0);
        assert!((row[7] - t.2).hypot(row[8] - t.3) < 0.5, "marker {}: ({}, {}) vs truth ({}, {})", row[0], row[7], row[8], t.2, t.3);
    }

    let o = rodlab(&["camera", "check", "--rig", &rig("covered"), "--markers", &markers, "--out", &p("check-covered")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("marker 2 of 0..5 not found in any of 10 frames"), "{}", stderr(&o));
    assert!(dir.path().join("check-covered/camera-check.png").is_file());

    let o = rodlab(&["camera", "check", "--rig", &rig("clear"), "--camera", "side", "--out", &p("x")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no camera 'side' (it has: camera)"), "{}", stderr(&o));
}

/// The angle between two rotations [deg].
fn angle_between_deg(a: &lie::Mat3, b: &lie::Mat3) -> f64 {
    (((a.transpose() * b).trace() - 1.0) / 2.0).clamp(-1.0, 1.0).acos().to_degrees()
}

/// #46: a board seen by two rendered cameras 0.6 m away, 30 degrees apart,
/// 1280x720: each camera's pose in the world within 0.5 mm and 0.1 degree.
/// The same views through OpenCV-Python's stereoCalibrate (OpenCV 4.13
/// beside our 4.6), side by side on the same data: its own corners are
/// rodlab's (`--corners-out`) to 0.01 px, and fitted to rodlab's corners
/// - from its own per-camera calibrations, its relative translation is
///   within three of its grouped-jackknife standard errors of ours, and its
///   RMS is no lower than ours (it stops in the intrinsics' flat valley,
///   up to 0.07 degree away);
/// - started from our intrinsics, it stays at our minimum: the same RMS,
///   our relative pose within one of its standard errors.
///
/// Both relative poses lie within 0.5 mm and 0.1 degree of the truth.
#[test]
fn a_camera_pair_is_calibrated_within_half_a_millimetre_as_opencv_python_does() {
    use lab_devices::track::{CameraSet, PlacedCamera};
    let dir = tempfile::tempdir().unwrap();
    let pair = dir.path().join("pair");
    let o = rodlab(&["synth", "board", "--cameras", "2", "--distance-m", "0.6", "--spread-deg", "30", "--out", pair.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (out, corners) = (dir.path().join("cameras.toml"), dir.path().join("corners.csv"));
    let o = calibrate_pair(&pair.join("left"), &pair.join("right"), &out, &["--corners-out", corners.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("camera left: board found in") && said.contains("the world is the board in view plane"), "{said}");
    let fitted = CameraSet::load(&out).unwrap();
    assert!(fitted.cameras.iter().all(|c| c.model.views >= 10), "{said}");
    let truth = CameraSet::load(&pair.join("true-cameras.toml")).unwrap();
    let placed = |s: &CameraSet| -> Vec<PlacedCamera> { s.cameras.iter().map(|c| PlacedCamera::new(&c.model).unwrap()).collect() };
    let (fit, tru) = (placed(&fitted), placed(&truth));
    let rotation = |c: &lab_devices::track::SetCamera| c.model.plane.as_ref().unwrap().rotation();
    for k in 0..2 {
        let centre_mm = (fit[k].centre_m() - tru[k].centre_m()).norm() * 1e3;
        let turn_deg = angle_between_deg(&rotation(&fitted.cameras[k]), &rotation(&truth.cameras[k]));
        eprintln!("camera {}: centre {centre_mm:.3} mm, rotation {turn_deg:.4} deg from the truth", fitted.cameras[k].name);
        assert!(centre_mm < 0.5 && turn_deg < 0.1, "camera {}: {centre_mm} mm, {turn_deg} deg", fitted.cameras[k].name);
    }
    assert!(fitted.views.iter().all(|v| v.rms_px.iter().all(|e| *e < 0.5)), "{:?}", fitted.views);
    // The corners file: 54 corners per camera and view.
    let rows = std::fs::read_to_string(&corners).unwrap().lines().count();
    assert_eq!(rows, 1 + 54 * fitted.cameras.iter().map(|c| c.model.views).sum::<usize>());

    // OpenCV-Python, side by side: right <- left.
    let Some(python) = common::venv_python("cv2", "OpenCV-Python stereo peer") else { return };
    let o = std::process::Command::new(python)
        .env("OPENBLAS_NUM_THREADS", "1")
        .arg(common::root().join("tests/python/stereo_calibrate.py"))
        .args([pair.join("left"), pair.join("right")])
        .args(["9", "6", "0.016"])
        .arg("--corners")
        .arg(&corners)
        .arg("--start")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let peer: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = |key: &str| peer[key].as_f64().unwrap();
    let pose = |r: &str, t: &str| (lie::Mat3::from_fn(|i, j| peer[r][i][j].as_f64().unwrap()), lie::Vec3::from_fn(|i, _| peer[t][i].as_f64().unwrap()));
    let ((r_peer, t_peer), (r_polished, t_polished)) = (pose("R", "T"), pose("R_from_start", "T_from_start"));
    // right <- left of a set: x_right = R x_left + T.
    let relative = |s: &CameraSet| {
        let pose = |k: usize| (rotation(&s.cameras[k]), lie::Vec3::from(s.cameras[k].model.plane.as_ref().unwrap().translation_m));
        let ((r0, t0), (r1, t1)) = (pose(0), pose(1));
        let r = r1 * r0.transpose();
        (r, t1 - r * t0)
    };
    let ((r_ours, t_ours), (r_true, t_true)) = (relative(&fitted), relative(&truth));
    let apart = |(ra, ta): (&lie::Mat3, &lie::Vec3), (rb, tb): (&lie::Mat3, &lie::Vec3)| ((ta - tb).norm() * 1e3, angle_between_deg(ra, rb));
    let ours = (&r_ours, &t_ours);
    let (ours_peer, ours_polished, ours_truth, peer_truth) = (
        apart(ours, (&r_peer, &t_peer)),
        apart(ours, (&r_polished, &t_polished)),
        apart(ours, (&r_true, &t_true)),
        apart((&r_peer, &t_peer), (&r_true, &t_true)),
    );
    let (spread_mm, spread_deg) = (f("T_spread_m") * 1e3, f("angle_spread_deg"));
    // OpenCV's RMS: both cameras' squared errors over every corner of a view pair.
    let views: f64 = fitted.cameras.iter().map(|c| c.model.views as f64).sum();
    let rms_ours = (fitted.cameras.iter().map(|c| c.model.views as f64 * c.model.rms_reprojection_px.powi(2)).sum::<f64>() / views).sqrt();
    eprintln!(
        "corners: OpenCV-Python's own {:.2e} px RMS from ours over {}; right <- left fitted to our corners: ours RMS {rms_ours:.6} px; \
         OpenCV-Python from its own start RMS {:.6} px, {:.4} mm and {:.4} deg from ours (its jackknife spread {spread_mm:.4} mm, {spread_deg:.4} deg over {} views); \
         from our intrinsics RMS {:.6} px, {:.4} mm and {:.4} deg from ours; from the truth: ours {:.4} mm {:.4} deg, OpenCV-Python {:.4} mm {:.4} deg",
        f("corner_rms_px"),
        peer["corners_compared"],
        f("rms_px"),
        ours_peer.0,
        ours_peer.1,
        peer["shared_views"],
        f("rms_from_start_px"),
        ours_polished.0,
        ours_polished.1,
        ours_truth.0,
        ours_truth.1,
        peer_truth.0,
        peer_truth.1
    );
    assert!(f("corner_rms_px") < 0.01, "OpenCV-Python's corners are {} px RMS from ours", f("corner_rms_px"));
    assert!(ours_peer.0 <= 3.0 * spread_mm, "{ours_peer:?} vs spread {spread_mm} mm");
    assert!(f("rms_px") >= rms_ours - 1e-6, "OpenCV-Python fits our corners better: {} px against {rms_ours} px", f("rms_px"));
    assert!((f("rms_from_start_px") - rms_ours).abs() < 1e-5, "from our intrinsics OpenCV-Python ends at {} px, ours {rms_ours} px", f("rms_from_start_px"));
    assert!(ours_polished.0 <= spread_mm && ours_polished.1 <= spread_deg, "{ours_polished:?} vs spread {spread_mm} mm, {spread_deg} deg");
    for (what, (mm, deg)) in [("ours from the truth", ours_truth), ("OpenCV-Python from the truth", peer_truth)] {
        assert!(mm < 0.5 && deg < 0.1, "{what}: {mm} mm, {deg} deg");
    }
}

/// #46 bad input: cameras that share no board view (exit 2), a view whose
/// board moved between the cameras' exposures (exit 1, naming it); nothing
/// written either way.
#[test]
fn a_camera_set_without_shared_views_or_with_disagreeing_views_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pair = dir.path().join("pair");
    let o = rodlab(&["synth", "board", "--cameras", "2", "--out", pair.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("cameras.toml");
    let calibrate = |left: &std::path::Path, right: &std::path::Path| calibrate_pair(left, right, &out, &[]);
    // No shared view: the right camera's images renamed.
    let renamed = dir.path().join("renamed");
    std::fs::create_dir_all(&renamed).unwrap();
    for e in std::fs::read_dir(pair.join("right")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, renamed.join(format!("other_{}", p.file_name().unwrap().to_string_lossy()))).unwrap();
    }
    let o = calibrate(&pair.join("left"), &renamed);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("camera right shares no board view with camera left") && e.lines().count() == 1, "{e}");
    assert!(!out.exists());
    // Views that disagree: the right camera's view_03 and view_07 swapped
    // (each another instant's; a copy of one over the other would now be
    // dropped as a repeated view).
    let moved = dir.path().join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    for e in std::fs::read_dir(pair.join("right")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, moved.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::copy(pair.join("right/view_07.png"), moved.join("view_03.png")).unwrap();
    std::fs::copy(pair.join("right/view_03.png"), moved.join("view_07.png")).unwrap();
    let o = calibrate(&pair.join("left"), &moved);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("calibration rejected") && (e.contains("view_03") || e.contains("view_07")) && e.lines().count() == 1, "{e}");
    // One folder given as both cameras: refused, not two identical cameras
    // a zero baseline apart.
    let o = calibrate(&pair.join("left"), &pair.join("left"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("cameras left and right: the same images") && e.lines().count() == 1, "{e}");
    assert!(!out.exists());
}

/// A camera pair calibrated through the binary: (true-cameras.toml, the fitted cameras.toml).
fn calibrated_pair(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let pair = dir.join("pair");
    let o = rodlab(&["synth", "board", "--cameras", "2", "--out", pair.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.join("cameras.toml");
    let o = calibrate_pair(&pair.join("left"), &pair.join("right"), &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    (pair.join("true-cameras.toml"), out)
}

/// `rodlab calibrate` of a camera pair (the synthetic board, 9x6 inner
/// corners of 16 mm) from its two image folders into `out`, with `extra`
/// arguments.
fn calibrate_pair(left: &std::path::Path, right: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let (left, right) = (format!("left={}", left.display()), format!("right={}", right.display()));
    let mut args =
        vec!["calibrate", "--camera-images", &left, "--camera-images", &right, "--board", "9x6", "--square-m", "0.016", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    rodlab(&args)
}

/// #46: the markers of a cable arm pulled by a cable out of the cameras'
/// board plane (its tip comes 3 cm towards the cameras), rendered by two
/// cameras from their own poses, tracked from the two videos with the
/// calibrated set: 3-D positions within 0.3 mm RMS of the truth; a marker
/// hidden from one camera is kept as the ray it lies on.
#[test]
fn a_cable_arm_bending_out_of_the_plane_is_tracked_in_3d_by_two_cameras() {
    use lab_devices::track::CameraSet;
    let dir = tempfile::tempdir().unwrap();
    let (true_set, cameras) = calibrated_pair(dir.path());
    // The arm, weightless (lying on an air table), its cable at 210 degrees
    // pulled from 0 to 0.5 N over 40 frames.
    let rod = rod::Rod::from_file(&common::root().join("configs/rod/tapered-channels-arm.toml")).unwrap();
    let arcs_m: Vec<f64> = (1..=7).map(|i| 0.2 * i as f64 / 7.0).collect();
    let model = rod::Model::new(&rod, &arcs_m);
    // The rod's x along the world's x, its z (up) along the image's up (-y):
    // its y points away from the cameras (+z).
    let world_from_rod = lie::Mat3::from_columns(&[lie::Vec3::x(), lie::Vec3::z(), -lie::Vec3::y()]);
    let base_m = lie::Vec3::new(-0.028, 0.05, -0.02);
    let frames = 40;
    let mut truth: Vec<Vec<[f64; 3]>> = vec![];
    let mut q = None;
    for f in 0..frames {
        let loads = rod::Loads { cable_tensions_n: vec![0.0, 0.5 * f as f64 / (frames - 1) as f64, 0.0], gravity_scale: 0.0, ..rod::Loads::default() };
        let sol = rod::statics::solve(&model, &loads, q.as_ref(), &rod::NewtonOptions::default()).unwrap();
        let joints = model.frames(&sol.q).joints;
        truth.push(arcs_m.iter().map(|s| (base_m + world_from_rod * joints[model.joint_at(*s)].pos).into()).collect());
        q = Some(sol.q);
    }
    let depth_change_m = truth[frames - 1][6][2] - truth[0][6][2];
    assert!(depth_change_m < -0.025, "the tip moves towards the cameras, out of the board plane: {depth_change_m} m");
    // Marker 3 hidden from the right camera in frames 20-24.
    let hidden = |camera: usize, frame: usize, marker: usize| !(camera == 1 && marker == 3 && (20..25).contains(&frame));
    let set = CameraSet::load(&true_set).unwrap();
    let videos = lab_devices::track::render_set_video(&set, &truth, hidden, &dir.path().join("day"), 30.0, 2.0).unwrap();
    let markers_toml = dir.path().join("markers.toml");
    std::fs::write(&markers_toml, "count = 7\n").unwrap();
    let out = dir.path().join("markers.parquet");
    let o = rodlab(&[
        "track",
        videos[1].to_str().unwrap(),
        videos[0].to_str().unwrap(),
        "--cameras",
        cameras.to_str().unwrap(),
        "--markers",
        markers_toml.to_str().unwrap(),
        "--fps",
        "30",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("camera left:") && said.contains("left.mkv"), "videos paired by name: {said}");
    assert!(said.contains("275 marker-frames triangulated, 5 kept as rays"), "{said}");
    let rows = session::read_markers(&out).unwrap();
    let (views, names) = session::read_marker_views(&out).unwrap().expect("a camera set's columns");
    assert_eq!(names, ["left", "right"]);
    let (mut sum2, mut n, mut worst_ray_m) = (0.0, 0, 0.0f64);
    for (r, v) in rows.iter().zip(&views) {
        let p = lie::Vec3::from(truth[r.frame as usize][r.marker as usize]);
        if r.flags & session::flags::RAY != 0 {
            assert_eq!((r.marker, v.cameras), (3, 0b01), "frame {}", r.frame);
            let (o, d) = (lie::Vec3::new(r.x_m, r.y_m, r.z_m), lie::Vec3::from(v.ray));
            worst_ray_m = worst_ray_m.max((p - o - d * d.dot(&(p - o))).norm());
            continue;
        }
        assert_eq!((r.flags, v.cameras), (0, 0b11), "frame {} marker {}", r.frame, r.marker);
        assert!(v.reprojection_px < 0.5 && v.view_dt_s == 0.0, "{v:?}");
        sum2 += (lie::Vec3::new(r.x_m, r.y_m, r.z_m) - p).norm_squared();
        n += 1;
    }
    let rms_mm = (sum2 / n as f64).sqrt() * 1e3;
    eprintln!("{n} triangulated marker-frames: {rms_mm:.3} mm RMS from the truth; the hidden marker's rays pass {:.3} mm from it at worst", worst_ray_m * 1e3);
    assert!(rms_mm < 0.3, "{rms_mm} mm RMS");
    assert!(worst_ray_m < 5e-4, "{worst_ray_m} m");
}

/// #46: three cameras (left, centre, right; 30 degrees between the outer ones) calibrated by
/// one joint fit, no pair privileged: every camera's centre within 0.5 mm
/// and its rotation within 0.1 degree of the truth.
#[test]
fn three_cameras_are_calibrated_by_one_joint_fit() {
    use lab_devices::track::{CameraSet, PlacedCamera};
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    let o = rodlab(&["synth", "board", "--cameras", "3", "--out", set.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("cameras.toml");
    let args: Vec<String> =
        ["left", "centre", "right"].iter().flat_map(|n| ["--camera-images".to_string(), format!("{n}={}", set.join(n).display())]).collect();
    let mut all: Vec<&str> = vec!["calibrate"];
    all.extend(args.iter().map(String::as_str));
    all.extend(["--board", "9x6", "--square-m", "0.016", "--out", out.to_str().unwrap()]);
    let o = rodlab(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let (fitted, truth) = (CameraSet::load(&out).unwrap(), CameraSet::load(&set.join("true-cameras.toml")).unwrap());
    assert_eq!(fitted.names(), ["left", "centre", "right"]);
    for (f, t) in fitted.cameras.iter().zip(&truth.cameras) {
        let (pf, pt) = (PlacedCamera::new(&f.model).unwrap(), PlacedCamera::new(&t.model).unwrap());
        let centre_mm = (pf.centre_m() - pt.centre_m()).norm() * 1e3;
        let turn_deg = angle_between_deg(&f.model.plane.as_ref().unwrap().rotation(), &t.model.plane.as_ref().unwrap().rotation());
        eprintln!("camera {}: centre {centre_mm:.3} mm, rotation {turn_deg:.4} deg from the truth", f.name);
        assert!(centre_mm < 0.5 && turn_deg < 0.1, "camera {}: {centre_mm} mm, {turn_deg} deg", f.name);
    }
}

/// #46: the virtual lab's occluder (`--hide-marker C:M`) is refused, in
/// one line with exit 2 and nothing recorded, without a camera set, for a
/// camera or marker the set or rod does not have, and when misspelt.
#[test]
fn a_hidden_marker_needs_a_camera_set_that_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s");
    let session = |extra: &[&str]| {
        let mut args = vec![
            "synth",
            "session",
            "--live",
            "--scene",
            "configs/scene/cable-arm-tensions.toml",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        rodlab(&args)
    };
    for (extra, says) in [
        (&["--hide-marker", "1:2"][..], "--cameras"),
        (&["--cameras", "1", "--hide-marker", "0:2"][..], "needs a camera set"),
        (&["--cameras", "2", "--hide-marker", "2:0"][..], "camera 2 (of 2)"),
        (&["--cameras", "2", "--hide-marker", "1:9"][..], "the rod has 4"),
        (&["--cameras", "2", "--hide-marker", "right"][..], "expected CAMERA:MARKER"),
    ] {
        let o = session(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
        assert!(!out.exists(), "{extra:?}: nothing recorded");
    }
}
