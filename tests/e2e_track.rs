//! End-to-end tracking with the `rodlab` binary: synthetic board ->
//! calibrate -> synthetic video -> track -> marker table, and bad inputs.

mod common;

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
    let o = rodlab(&["synth", "video", "--out", &p("video"), "--frames", "60", "--occlude", "2,30,5"]);
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
    std::fs::write(dir.path().join("rig.toml"), format!("[[camera]]\nname = \"camera\"\nfile = \"{}\"\n", p("video/video.mkv"))).unwrap();
    let o = rodlab(&["record", "--rig", &p("rig.toml"), "--out", &p("s"), "--duration", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let frames = session::Table::read_chunks(&session::stream_dir(&dir.path().join("s"), "camera")).unwrap();
    let idx = frames.f64("frame").unwrap();
    let t = frames.i64("t_host_ns").unwrap();
    assert_eq!(idx, (0..30).map(|k| k as f64).collect::<Vec<_>>(), "every frame, in order");
    // Played at the file's 100 frames/s, never faster. Any frame's stamp
    // may come late on a busy machine (the replay keeps its schedule from
    // the start: frame 1 once came 5 ms late with the test suite beside
    // it, and frames 1 to 29 spanned 0.2748 s), so the rate is read from
    // the frame on time: from some frame k to the last, at least the
    // schedule's (29 - k) x 10 ms, to 1 ms; played twice as fast, every
    // k would fall short by up to 145 ms.
    let ahead_s = (0..29).map(|k| (t[29] - t[k]) as f64 * 1e-9 - (29 - k) as f64 * 0.01).fold(f64::NEG_INFINITY, f64::max);
    let span_s = (t[29] - t[0]) as f64 * 1e-9;
    assert!(
        t.windows(2).all(|w| w[1] > w[0]) && ahead_s > -1e-3 && span_s < 3.0,
        "{span_s} s for 29 frame intervals of 10 ms ({ahead_s} s behind the schedule at best)"
    );
    let o = rodlab(&["track", &p("s/camera.mkv"), "--camera", &p("video/true-camera.toml"), "--markers", &p("video/markers.toml"), "--out", &p("m.parquet")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = session::read_markers(&dir.path().join("m.parquet")).unwrap();
    assert_eq!(rows.len(), 30 * 6);
    for r in &rows {
        assert_eq!(r.t_host_ns, Some(t[r.frame as usize]), "times come from the frames table");
        assert!((r.t_s - t[r.frame as usize] as f64 * 1e-9).abs() < 1e-12);
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
        let text = format!("[[camera]]\nfile = \"{}\"\n[camera.settings]\nexposure = 100.0\nauto_white_balance = false\n", p(&format!("{video}/video.mkv")));
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
