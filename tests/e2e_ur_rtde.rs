//! Interop: SDU's ur_rtde (`rtde_receive.RTDEReceiveInterface`, the UR
//! client most labs use; installed into .venv by scripts/setup.sh) against
//! `rodlab emulate robot`: 3 s at 500 Hz, connected, controller time
//! advancing 3 s, a finite pose. ur_rtde always talks to port 30004, so
//! the emulator listens on a loopback address of its own.

mod common;
use common::*;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn ur_rtde_receives_from_the_emulator() {
    let python = root().join(".venv/bin/python");
    let available = python.is_file() && Command::new(&python).args(["-c", "import rtde_receive"]).status().is_ok_and(|s| s.success());
    if !available {
        eprintln!(
            "\n*** SKIPPED ur_rtde interop test: {} cannot import rtde_receive (run scripts/setup.sh; it needs python3-venv and PyPI) ***\n",
            python.display()
        );
        return;
    }
    let host = "127.0.0.61";
    let mut emu = Command::new(env!("CARGO_BIN_EXE_rodlab"))
        .args(["emulate", "robot", "--bind", &format!("{host}:30004"), "--duration", "30"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the listening line.
    let mut line = String::new();
    BufReader::new(emu.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let out = Command::new(&python).arg(root().join("tests/python/ur_rtde_receive.py")).args([host, "3", "500"]).output().unwrap();
    let _ = emu.kill();
    let _ = emu.wait();
    assert!(out.status.success(), "ur_rtde failed (status {:?}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["connected"], true, "{v}");
    assert_eq!(v["pose_finite"], true, "{v}");
    let advanced = v["last_timestamp_s"].as_f64().unwrap() - v["first_timestamp_s"].as_f64().unwrap();
    assert!((advanced - 3.0).abs() < 0.2, "controller time advanced {advanced} s in 3 s: {v}");
    assert!(v["samples"].as_u64().unwrap() > 500, "{v}");
}
