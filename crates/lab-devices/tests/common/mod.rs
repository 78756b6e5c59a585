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
    let mut body = r.cross_section.body;
    body.e_pa *= e_scale;
    let file = identify::output::IdentifiedFile::of_material(&r, rod_rel, body, "test");
    let p = dir.join("identified.toml");
    file.write(&p).unwrap();
    p
}
