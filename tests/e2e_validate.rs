//! End-to-end: `rodlab validate` on sessions made by `rodlab synth
//! session` from the contact paper's stick test. With the parameters that
//! made the session, the chain (simulate from the robot stream, observe
//! the markers, compare) must reproduce it; with E off by 20 % the errors
//! grow and the report says so. Noise-free sessions: the figures are the
//! chain's own error, not the noise's.

mod common;
use common::*;

use std::path::{Path, PathBuf};

const ROD: &str = "configs/rod/contact-paper-steel-core.toml";
const SCENE: &str = "configs/scene/contact-paper-stick.toml";

fn synth(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec![
        "synth",
        "session",
        "--scene",
        SCENE,
        "--rod",
        ROD,
        "--out",
        out.to_str().unwrap(),
        "--marker-noise-m",
        "0",
        "--force-noise-n",
        "0",
        "--moment-noise-nm",
        "0",
    ];
    args.extend(extra);
    let o = rodlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Exact markers: the paper's observer (markers as constraints), a contact
/// gap and a speed window for noise-free tracking.
fn validate(sessions: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["validate"];
    args.extend(sessions.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--rod", ROD, "--scene", SCENE, "--out", out.to_str().unwrap(), "--observer", "hard", "--sigma-m", "1e-5", "--speed-window-s", "0.03"]);
    rodlab(&args)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn validate_reproduces_a_session_made_with_the_same_parameters_and_flags_wrong_ones() {
    let dir = tempfile::tempdir().unwrap();
    let same = synth(dir.path(), "same", &[]);
    // The truth's body is 20 % stiffer than the rod file validated with.
    let stiff = synth(dir.path(), "stiff", &["--e-pa", "3.2e5"]);

    let out = dir.path().join("report");
    let o = validate(&[&same], &out);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}\n{stdout}", stderr(&o));
    let s = summary(&out);
    assert!(f(&s["strain_headline_rms_pct"]) < 1.0, "strain {}", s["strain_headline_rms_pct"]);
    assert_eq!(s["strain"][1]["component"], "kappa_y");
    assert_eq!(s["strain"][1]["significant"], true, "the stick test bends about y");
    assert!(f(&s["force"]["force_n"]["rms_pct"]) < 1.0, "force {}", s["force"]["force_n"]);
    assert!(f(&s["force"]["normal_force_n"]["rms_pct"]) < 1.0, "normal force {}", s["force"]["normal_force_n"]);
    assert!(f(&s["contact"]["slide_mm"]["rms"]) < 0.5 && f(&s["contact"]["slide_mm"]["max_abs"]) < 0.5, "slide {}", s["contact"]["slide_mm"]);
    assert!(f(&s["contact"]["phase_agreement_pct"]) > 99.0, "phases {}", s["contact"]["phase_agreement_pct"]);
    assert!(f(&s["contact"]["first_touch_measured_s"]) > 1.0, "the tip touches after the base starts moving");
    for m in s["markers"].as_array().unwrap() {
        assert!(f(&m["errors_mm"]["rms"]) < 0.01, "marker {m}");
    }
    assert_eq!(s["pass"], true, "{stdout}");
    assert!(stdout.contains("every check passed"), "{stdout}");
    // The page renders, with every chart.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let charts = ["strain_time", "strain_parity", "force_time", "normal_force", "tip_slide", "phases", "marker_errors"];
    for c in charts {
        assert!(out.join(format!("{c}.png")).is_file(), "{c}.png");
    }
    assert_eq!(html.matches("<svg").count(), charts.len());
    assert_eq!(chromium_check(&out.join("index.html")), format!("images=0/0 svgs={} errors=0", charts.len()));
    assert!(out.join("sim/sim.parquet").is_file() && out.join("strain.parquet").is_file());
    assert!(!same.join("strain.parquet").exists(), "validate writes nothing into the session");

    // Both sessions at once: a directory each and a summary page.
    let batch = dir.path().join("batch");
    let o = validate(&[&same, &stiff], &batch);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}\n{stdout}", stderr(&o));
    let rows = summary(&batch);
    assert_eq!(rows.as_array().unwrap().len(), 2);
    let (good, wrong) = (&rows[0], &rows[1]);
    assert_eq!(good["session"], "same");
    assert_eq!(wrong["session"], "stiff");
    // The same figures as the single run: sessions are independent.
    assert_eq!(good["strain_headline_rms_pct"], s["strain_headline_rms_pct"]);
    // E off by 20 %: every error grows, and the force check fails.
    assert!(
        f(&wrong["strain_headline_rms_pct"]) > 10.0 * f(&good["strain_headline_rms_pct"]),
        "strain {} vs {}",
        wrong["strain_headline_rms_pct"],
        good["strain_headline_rms_pct"]
    );
    assert!(f(&wrong["force"]["force_n"]["rms_pct"]) > 5.0, "force {}", wrong["force"]["force_n"]);
    assert!(f(&wrong["contact"]["slide_mm"]["rms"]) > f(&good["contact"]["slide_mm"]["rms"]));
    assert_eq!(wrong["pass"], false);
    let warnings: Vec<&str> = wrong["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.starts_with("force RMS error beyond sensor noise") && w.contains("beyond the limit")), "{warnings:?}");
    let page = std::fs::read_to_string(batch.join("stiff/index.html")).unwrap();
    assert!(page.contains("EXCEEDED") && page.contains("beyond the limit"));
    let index = std::fs::read_to_string(batch.join("index.html")).unwrap();
    assert!(index.contains("href=\"same/index.html\"") && index.contains("href=\"stiff/index.html\""));
    assert!(index.contains("stiff: checks exceeded"));
    assert!(stdout.contains("stiff: CHECKS EXCEEDED"), "{stdout}");
    // --strict turns an exceeded check into exit status 1.
    let mut args = vec!["validate", stiff.to_str().unwrap(), "--rod", ROD, "--scene", SCENE, "--out"];
    let strict_out = dir.path().join("strict");
    args.extend([strict_out.to_str().unwrap(), "--observer", "hard", "--sigma-m", "1e-5", "--strict"]);
    assert_eq!(rodlab(&args).status.code(), Some(1));
}

#[test]
fn validate_bad_input_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = synth(dir.path(), "s", &["--duration-s", "0.5"]);
    let out = dir.path().join("o");
    let run_scene = |extra: &[&str], session: &Path, scene: &str| {
        let mut args = vec!["validate", session.to_str().unwrap(), "--rod", ROD, "--scene", scene, "--out", out.to_str().unwrap()];
        args.extend(extra);
        rodlab(&args)
    };
    let run = |extra: &[&str], session: &Path| run_scene(extra, session, SCENE);
    let no_robot = dir.path().join("no-robot");
    std::fs::create_dir_all(&no_robot).unwrap();
    std::fs::copy(session.join("markers.parquet"), no_robot.join("markers.parquet")).unwrap();
    std::fs::copy(session.join("session.toml"), no_robot.join("session.toml")).unwrap();
    expect_exit_2(run(&[], &no_robot), &["no-robot", "robot stream"]);
    std::fs::remove_file(no_robot.join("markers.parquet")).unwrap();
    expect_exit_2(run(&[], &no_robot), &["markers.parquet"]);
    let loads = dir.path().join("loads.toml");
    std::fs::write(&loads, "[flange_sensor]\nstream = \"netft\"\n").unwrap();
    expect_exit_2(run(&["--loads", loads.to_str().unwrap()], &session), &["loads.toml", "flange_sensor", "netft", "ft300, robot"]);
    expect_exit_2(run(&["--sigma-m=-1"], &session), &["--sigma-m"]);
    expect_exit_2(run_scene(&[], &session, "configs/scene/nope.toml"), &["nope.toml"]);
}

/// A wrong rig is caught: the session says the robot stands 2 degrees
/// yawed, or 5 mm off, from where it stood. Validation shows the marker
/// residuals and a warning names the rig's frames.
#[test]
fn a_wrong_rig_shows_in_the_marker_residuals_and_a_warning_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = synth(dir.path(), "s", &[]);
    let meta = std::fs::read_to_string(session.join("session.toml")).unwrap();
    for (name, wrong) in
        [("yawed", "position_m = [0.0, 0.0, 0.0]\nrpy_deg = [0.0, 0.0, 2.0]"), ("shifted", "position_m = [0.005, 0.0, 0.0]\nrpy_deg = [0.0, 0.0, 0.0]")]
    {
        let bad = dir.path().join(name);
        copy_dir(&session, &bad);
        let text = meta.replacen("[frames.robot_base]\nposition_m = [0.0, 0.0, 0.0]\nrpy_deg = [0.0, -0.0, 0.0]", &format!("[frames.robot_base]\n{wrong}"), 1);
        assert_ne!(text, meta, "session.toml changed its layout: update this test");
        std::fs::write(bad.join("session.toml"), text).unwrap();
        let out = dir.path().join(format!("report-{name}"));
        let o = rodlab(&["validate", bad.to_str().unwrap(), "--rod", ROD, "--scene", SCENE, "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s = summary(&out);
        let worst = s["markers"].as_array().unwrap().iter().map(|m| f(&m["errors_mm"]["rms"])).fold(0.0, f64::max);
        assert!(worst > 2.0, "{name}: marker residuals {worst} mm");
        let warnings: Vec<&str> = s["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert!(warnings.iter().any(|w| w.contains("rig's frames are likely off") && w.contains("rig calibrate")), "{name}: {warnings:?}");
    }
    // The right rig raises no such warning.
    let out = dir.path().join("report-right");
    let o = rodlab(&["validate", session.to_str().unwrap(), "--rod", ROD, "--scene", SCENE, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = summary(&out);
    assert!(!s["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("rig's frames")), "{}", s["warnings"]);
}
