//! End-to-end: sessions made by `rodlab synth session` (the simulator's
//! truth sampled as the lab's devices record it) -> `rodlab identify
//! --sessions`: holds found, E and rho recovered with a flange force
//! sensor, only E/rho without one; bad sessions exit 2 naming the problem.

mod common;
use common::*;

use std::path::{Path, PathBuf};

const TRUTH_E_PA: f64 = 2.5e5;
const TRUTH_RHO_KG_M3: f64 = 1.3e3;
const BIAS: [f64; 6] = [0.5, -0.3, 1.2, 0.01, 0.0, -0.02];

/// A synthetic session of the cable arm at the truth's E and rho.
fn synth_scene(dir: &Path, name: &str, scene: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let (e, rho) = (TRUTH_E_PA.to_string(), TRUTH_RHO_KG_M3.to_string());
    let mut args = vec![
        "synth",
        "session",
        "--scene",
        scene,
        "--rod",
        "configs/rod/pls-cable-arm.toml",
        "--out",
        out.to_str().unwrap(),
        "--e-pa",
        &e,
        "--rho-kg-m3",
        &rho,
    ];
    args.extend(extra);
    let o = rodlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// A synthetic identification day (four gravity holds) with seed `seed`.
fn synth(dir: &Path, name: &str, seed: u64) -> PathBuf {
    let bias = BIAS.map(|b| b.to_string()).join(",");
    let out = synth_scene(dir, name, "configs/scene/cable-arm-holds.toml", &["--ft-bias", &bias, "--seed", &seed.to_string()]);
    assert!(out.join("session.toml").is_file() && out.join("markers.parquet").is_file());
    assert!(out.join("streams/robot").is_dir() && out.join("streams/ft300").is_dir());
    // The truth lies beside the session, never inside it.
    assert!(dir.join(format!("{name}-truth/truth.toml")).is_file());
    assert!(!out.join("truth.toml").exists() && !out.join("sim.parquet").exists());
    out
}

/// configs/loads.toml with the sensor's bias (its tare) filled in.
fn loads_with_bias(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("configs/loads.toml")).unwrap();
    let text = text
        .replace("bias_force_n = [0.0, 0.0, 0.0]", &format!("bias_force_n = [{}, {}, {}]", BIAS[0], BIAS[1], BIAS[2]))
        .replace("bias_moment_nm = [0.0, 0.0, 0.0]", &format!("bias_moment_nm = [{}, {}, {}]", BIAS[3], BIAS[4], BIAS[5]));
    assert!(text.contains("bias_force_n = [0.5"), "configs/loads.toml changed: update this test");
    let p = dir.join("loads.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `rodlab identify --sessions ...` for the cable arm: its stdout and identified.toml.
fn identify(sessions: &[&Path], loads: Option<&Path>, out: &Path, extra: &[&str]) -> (String, toml::Value) {
    let mut args = vec!["identify", "--rod", "configs/rod/pls-cable-arm.toml", "--sessions"];
    args.extend(sessions.iter().map(|s| s.to_str().unwrap()));
    if let Some(l) = loads {
        args.extend(["--loads", l.to_str().unwrap()]);
    }
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    let o = rodlab(&args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}\n{stdout}", stderr(&o));
    let v = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    (stdout, v)
}

/// E and rho within 3 % of the truth, and the truth inside their 95 % CIs.
fn assert_truth_recovered(v: &toml::Value) {
    for (name, truth) in [("e_pa", TRUTH_E_PA), ("rho_kg_m3", TRUTH_RHO_KG_M3)] {
        let (value, lo, hi) = param(v, name);
        assert!((value / truth - 1.0).abs() < 0.03, "{name} = {value}, truth {truth}");
        assert!(lo <= truth && truth <= hi, "{name}: truth {truth} outside the 95 % CI [{lo}, {hi}]");
    }
}

fn param(v: &toml::Value, name: &str) -> (f64, f64, f64) {
    let p = &v["parameters"][name];
    let ci = p["ci95"].as_array().unwrap();
    (p["value"].as_float().unwrap(), ci[0].as_float().unwrap(), ci[1].as_float().unwrap())
}

#[test]
fn identify_from_sessions_with_a_flange_sensor_fixes_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let s1 = synth(dir.path(), "day1", 1);
    let s2 = synth(dir.path(), "day2", 2);
    let loads = loads_with_bias(dir.path());
    let out = dir.path().join("fit");
    let (stdout, v) = identify(&[&s1, &s2], Some(&loads), &out, &[]);
    // Four holds per session, all used; E and rho both fitted. The one
    // warning: E and rho move together (the weight fixes rho, the sag E/rho),
    // so their intervals are correlated.
    assert_eq!(stdout.matches("4 still intervals, 4 used as holds").count(), 2, "{stdout}");
    assert!(!stdout.contains("E/rho"), "{stdout}");
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.contains("warning")).collect();
    assert!(warnings.len() == 1 && warnings[0].contains("ln_e and ln_rho are correlated"), "{stdout}");
    assert_eq!(v["experiment"].as_array().unwrap().len(), 8);
    assert_truth_recovered(&v);
    // The report lists the holds and the measured against predicted wrench, and renders.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("used: day1/hold").count(), 4, "holds table");
    assert!(html.contains("day2/hold4"));
    assert!(html.contains("flange"), "wrench table");
    let check = chromium_check(&out.join("index.html"));
    assert!(check.ends_with("errors=0"), "{check}");

    // The same sessions without the sensor: only E/rho, and the warning says so.
    let (stdout, v) = identify(&[&s1], None, &dir.path().join("fit-no-sensor"), &["--no-loo"]);
    assert!(stdout.contains("only E/rho and G/rho are identifiable"), "{stdout}");
    let ratio = param(&v, "e_pa").0 / param(&v, "rho_kg_m3").0;
    assert!((ratio / (TRUTH_E_PA / TRUTH_RHO_KG_M3) - 1.0).abs() < 0.03, "E/rho = {ratio}");
}

#[test]
fn bad_sessions_exit_2_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let good = synth(dir.path(), "good", 3);
    let out = dir.path().join("o");
    let run_identify = |session: &Path, loads: Option<&Path>| {
        let mut args =
            vec!["identify", "--rod", "configs/rod/pls-cable-arm.toml", "--sessions", session.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"];
        if let Some(l) = loads {
            args.extend(["--loads", l.to_str().unwrap()]);
        }
        rodlab(&args)
    };

    let no_markers = dir.path().join("no-markers");
    copy_dir(&good, &no_markers);
    std::fs::remove_file(no_markers.join("markers.parquet")).unwrap();
    expect_exit_2(run_identify(&no_markers, None), &["no-markers", "markers.parquet"]);

    let no_robot = dir.path().join("no-robot");
    copy_dir(&good, &no_robot);
    std::fs::remove_dir_all(no_robot.join("streams/robot")).unwrap();
    expect_exit_2(run_identify(&no_robot, None), &["no-robot", "robot stream"]);

    let loads = dir.path().join("loads.toml");
    std::fs::write(&loads, "[tip_force]\nstream = \"load_cell\"\ncolumn = \"force_n\"\ndirection = [0.0, 0.0, -1.0]\n").unwrap();
    expect_exit_2(run_identify(&good, Some(&loads)), &["loads.toml", "tip_force", "load_cell", "ft300, robot"]);

    // Parameters identified for one rod, used with another.
    let fit = dir.path().join("fit");
    identify(&[&good], None, &fit, &["--no-loo"]);
    let params = fit.join("identified.toml");
    let (other_rod, scene) = ("configs/rod/contact-paper-steel-core.toml", "configs/scene/contact-paper-stick.toml");
    let sim_out = dir.path().join("sim");
    let val_out = dir.path().join("validate");
    for args in [
        vec!["simulate", "--rod", other_rod, "--scene", scene, "--params", params.to_str().unwrap(), "--out", sim_out.to_str().unwrap()],
        vec![
            "validate",
            good.to_str().unwrap(),
            "--rod",
            other_rod,
            "--scene",
            scene,
            "--params",
            params.to_str().unwrap(),
            "--out",
            val_out.to_str().unwrap(),
        ],
    ] {
        expect_exit_2(rodlab(&args), &["identified.toml", "contact-paper-steel-core.toml"]);
    }
}

/// Cable-tension holds recorded by load cells (no flange sensor): the
/// known tensions fix the scale, E and rho both come out.
#[test]
fn identify_from_load_cell_holds_without_a_flange_sensor() {
    let dir = tempfile::tempdir().unwrap();
    let out = synth_scene(dir.path(), "pulls", "configs/scene/cable-arm-tensions.toml", &["--no-flange-sensor"]);
    assert!(out.join("streams/load_cell").is_dir() && !out.join("streams/ft300").exists());
    let loads = dir.path().join("loads.toml");
    let cables: String = (1..=4).map(|k| format!("[[cable]]\nstream = \"load_cell\"\ncolumn = \"cable{k}_n\"\n\n")).collect();
    std::fs::write(&loads, cables).unwrap();
    let (stdout, v) = identify(&[&out], Some(&loads), &dir.path().join("fit"), &[]);
    assert!(stdout.contains("5 still intervals, 5 used as holds"), "{stdout}");
    assert!(!stdout.contains("E/rho"), "{stdout}");
    assert_truth_recovered(&v);
}
