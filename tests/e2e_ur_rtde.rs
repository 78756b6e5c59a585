//! Interop with the clients labs use, installed into .venv by
//! scripts/setup.sh (each test says so and skips where they cannot be had).
//!
//! SDU's ur_rtde (`rtde_receive.RTDEReceiveInterface`, the UR
//! client most labs use; installed into .venv by scripts/setup.sh) against
//! `rodlab emulate robot` as either controller, ur_rtde choosing the rate
//! from the controller's version as it does on real robots: an e-Series
//! streams every 2 ms, a CB3 every 8 ms; connected, controller time
//! advancing 3 s, a finite pose. ur_rtde always talks to port 30004, so
//! each emulator listens on a loopback address of its own.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `rodlab` with `args` (an emulator), once its first line, which must
/// contain `banner`, says it is ready.
fn emulator(args: &[&str], banner: &str) -> Child {
    let mut emu = Command::new(env!("CARGO_BIN_EXE_rodlab")).args(args).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(emu.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains(banner), "{line}");
    emu
}

#[test]
fn ur_rtde_receives_from_the_emulator_at_each_controllers_rate() {
    let Some(python) = venv_python("rtde_receive", "ur_rtde interop") else { return };
    for (controller, host, step_s) in [("e-series", "127.0.0.61", 0.002), ("cb3", "127.0.0.62", 0.008)] {
        let mut emu = emulator(&["emulate", "robot", "--controller", controller, "--bind", &format!("{host}:30004"), "--duration", "30"], "listening");
        let out = Command::new(&python).arg(root().join("tests/python/ur_rtde_receive.py")).args([host, "3", "-1"]).output().unwrap();
        let _ = emu.kill();
        let _ = emu.wait();
        assert!(out.status.success(), "{controller}: ur_rtde failed (status {:?}): {}", out.status, String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        println!("ur_rtde against the {controller} emulator: {v}");
        assert_eq!(v["connected"], true, "{v}");
        assert_eq!(v["pose_finite"], true, "{v}");
        let advanced = v["last_timestamp_s"].as_f64().unwrap() - v["first_timestamp_s"].as_f64().unwrap();
        assert!((advanced - 3.0).abs() < 0.2, "{controller}: controller time advanced {advanced} s in 3 s: {v}");
        let step = v["median_step_s"].as_f64().unwrap();
        assert!((step - step_s).abs() < 1e-6, "{controller}: ur_rtde saw a step of {step} s, the controller streams every {step_s} s: {v}");
        assert!(v["samples"].as_u64().unwrap() > 500, "{v}");
    }
}

/// ft300python (PyPI) starts the stream as Robotiq's driver does (Modbus
/// function 16 through pymodbus) and reads frames from the emulator: the
/// frame counter the emulator carries on Mz runs on without a hole, and
/// the forces are the emulator's built-in signal (within its 0.01 N
/// resolution).
#[test]
fn ft300python_reads_frames_from_the_emulator() {
    let Some(python) = venv_python("ft300python.ft300_stream", "ft300python interop") else { return };
    let dir = tempfile::tempdir().unwrap();
    let line = PtyPair::new(dir.path(), "ft300");
    let mut emu = Command::new(env!("CARGO_BIN_EXE_rodlab"))
        .args(["emulate", "ft300", "--port", line.a.to_str().unwrap(), "--duration", "30"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = Command::new(&python).arg(root().join("tests/python/ft300python_stream.py")).args([line.b.to_str().unwrap(), "50"]).output().unwrap();
    let _ = emu.kill();
    let _ = emu.wait();
    assert!(out.status.success(), "ft300python failed (status {:?}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let frames: Vec<Vec<f64>> = v["frames"].as_array().unwrap().iter().map(|f| f.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect();
    assert_eq!(frames.len(), 50);
    let counter: Vec<i64> = frames.iter().map(|f| (f[5] * 1000.0).round() as i64).collect();
    assert!(counter.windows(2).all(|w| w[1] == w[0] + 1), "{counter:?}");
    for f in &frames {
        // The built-in signal: Fz = 2 + sin(2 pi t), |Fx| <= 0.5, |Fy| <= 0.3 N.
        assert!(f[0].abs() <= 0.5 + 0.01 && f[1].abs() <= 0.3 + 0.01 && (f[2] - 2.0).abs() <= 1.0 + 0.01, "{f:?}");
    }
}

/// NetFT (PyPI), a Python RDT client, asks `rodlab emulate netft` for single
/// measurements (command 2, one sample each) on UDP 49152 as it would ask a
/// Net F/T box: the counts it gets are the emulator's wrench times its
/// calibration, within one count.
#[test]
fn netft_reads_counts_from_the_emulator() {
    let Some(python) = venv_python("NetFT", "NetFT interop") else { return };
    let host = "127.0.0.63";
    let wrench = [1.5, -2.0, 3.25, 0.1, -0.2, 0.05];
    let bind = format!("{host}:49152");
    let args = [
        "emulate",
        "netft",
        "--bind",
        &bind,
        "--wrench",
        "1.5,-2,3.25,0.1,-0.2,0.05",
        "--counts-per-force",
        "1000000",
        "--counts-per-torque",
        "2000000",
        "--duration",
        "30",
    ];
    let mut emu = emulator(&args, "Net F/T emulator");
    let out = Command::new(&python).arg(root().join("tests/python/netft_read.py")).args([host, "20"]).output().unwrap();
    let _ = emu.kill();
    let _ = emu.wait();
    assert!(out.status.success(), "NetFT failed (status {:?}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let readings = v["readings"].as_array().unwrap();
    assert_eq!(readings.len(), 20);
    let expected: Vec<f64> = wrench.iter().enumerate().map(|(k, w)| w * if k < 3 { 1e6 } else { 2e6 }).collect();
    for r in readings {
        let counts: Vec<f64> = r.as_array().unwrap().iter().map(|c| c.as_f64().unwrap()).collect();
        assert!(counts.iter().zip(&expected).all(|(c, e)| (c - e).abs() <= 1.0), "{counts:?} vs {expected:?}");
    }
}
