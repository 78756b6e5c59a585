//! Helpers shared by the workflow tests of the `lab` crate.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root: the shipped configs and data live there.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A path under the workspace root.
pub fn at(rel: &str) -> PathBuf {
    root().join(rel)
}

/// A rod file of the workspace.
pub fn rod(rel: &str) -> rod::Rod {
    rod::Rod::from_file(&at(rel)).unwrap()
}

/// A scene file of the workspace.
pub fn scene(rel: &str) -> sim::Scene {
    sim::Scene::from_file(&at(rel)).unwrap()
}

/// Renders the page in headless Chromium and returns the report's self-check.
pub fn chromium_check(html: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.canonicalize().unwrap().display()))
        .output()
        .expect("chromium is installed by scripts/setup.sh");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("data-check=\"").expect("the page ran its self-check") + 12;
    dom[start..start + dom[start..].find('"').unwrap()].to_string()
}

/// Copies a directory tree (a session, to spoil a copy of it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Asserts an input error whose message contains every needle.
pub fn expect_input_error<T: std::fmt::Debug>(r: lab::Result<T>, needles: &[&str]) {
    let e = r.expect_err("bad input must fail");
    assert_eq!(e.kind(), lab::Kind::Input, "{e}");
    assert!(!e.to_string().contains('\n'), "one line: {e}");
    for n in needles {
        assert!(e.to_string().contains(n), "{n:?} not in: {e}");
    }
}

/// A synthetic session of `scene` with `rod` into `dir/name`, changed by `edit`.
pub fn synth(dir: &Path, name: &str, rod_rel: &str, scene_rel: &str, edit: impl FnOnce(&mut lab::synth::SynthRequest)) -> lab::SessionDir {
    let mut req = lab::synth::SynthRequest::new(&at(scene_rel), scene(scene_rel), &at(rod_rel), rod(rod_rel), &dir.join(name));
    edit(&mut req);
    lab::synth::synthesise(&req, &lab::Silent).unwrap().session
}

/// An identified.toml for the rod file `rod_rel` with its body's E scaled.
pub fn write_params(dir: &Path, rod_rel: &str, e_scale: f64) -> PathBuf {
    let r = rod(rod_rel);
    let body = r.cross_section.body;
    let est = |v: f64| identify::output::EstimateOut { value: v, ci95: [v * 0.9, v * 1.1], determined: true };
    let file = identify::output::IdentifiedFile {
        rodlab_version: "test".into(),
        rod_file: rod_rel.into(),
        failed: None,
        rod_geometry: Some(identify::output::rod_geometry(&r)),
        experiments_dir: "test".into(),
        warnings: vec![],
        parameters: identify::output::Parameters {
            e_pa: est(body.e_pa * e_scale),
            g_pa: est(body.g_pa),
            rho_kg_m3: est(body.rho_kg_m3),
            rho_fixed: false,
            frame_translation_m: [0.0; 3],
            base_pitch_rad: 0.0,
            cable_offset_m: 0.0,
            cable_offset_ci95_m: [f64::NAN; 2],
            radius_scale: 1.0,
            radius_scale_ci95: [f64::NAN; 2],
            cable_offsets_m: vec![],
            cable_offsets_ci95_m: vec![],
            cable_angles_rad: vec![],
            cable_angles_ci95_rad: vec![],
            law: None,
            c01_fraction: None,
        },
        fit: identify::output::FitInfo {
            parameter_names: vec![],
            correlation: vec![],
            covariance: vec![],
            dof: 0,
            measurement_sigma_m: f64::NAN,
            condition_number: 1.0,
            residual_scale: 1.0,
            chi_square: f64::NAN,
            chi_square_p: f64::NAN,
            model_error_m: 0.0,
            cv_model_error_m: 0.0,
            prior_only: vec![],
            cost: 0.0,
            rms_error_mm: 0.0,
            iterations: 0,
            static_solves: 0,
            wall_time_s: 0.0,
        },
        alternative_fit: None,
        reference: None,
        jackknife: None,
        variant: vec![],
        recommended_variant: None,
        parameters_from: "requested".into(),
        requested_parameters: None,
        sensor_bias: vec![],
        experiment: vec![],
        start: vec![],
        dynamic: None,
    };
    let p = dir.join("identified.toml");
    file.write(&p).unwrap();
    p
}
