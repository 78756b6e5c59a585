//! End-to-end tests of `rodlab simulate`: a short stick test from the shipped
//! scene, its tables read back with the formats of the other stages (the
//! marker table with the tracker's reader), a trajectory CSV, and bad input.

mod common;
use common::*;
use std::path::Path;

/// The shipped stick scene, cut to `duration_s`, written to `dir`.
fn short_stick_scene(dir: &Path, duration_s: f64) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("configs/scene/contact-paper-stick.toml")).unwrap();
    let text = text.replace("duration_s = 4.0", &format!("duration_s = {duration_s}"));
    let path = dir.join("stick.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn simulate_writes_tables_the_other_stages_read() {
    let dir = tempfile::tempdir().unwrap();
    let scene = short_stick_scene(dir.path(), 2.0);
    let out = dir.path().join("sim");
    let o = rodlab(&["simulate", "--rod", "configs/rod/contact-paper-steel-core.toml", "--scene", scene.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("simulated 2.000 s in 400 steps"), "{stdout}");
    assert!(stdout.contains("contact from t = "), "{stdout}");
    // The marker table reads like a tracked one: 8 markers x 401 rows.
    let markers = session::read_markers(&out.join("sim_markers.parquet")).unwrap();
    assert_eq!(markers.len(), 8 * 401);
    let last_tip = markers.iter().rev().find(|r| r.marker == 7).unwrap();
    assert!(last_tip.z_m.abs() < 0.01 && last_tip.x_m > 0.05, "tip marker near the table: {last_tip:?}");
    // Totals, nodes, contacts.
    let t = session::Table::read(&out.join("sim.parquet")).unwrap();
    assert_eq!(t.height(), 401);
    let normal = t.f64("normal_force_n").unwrap();
    assert!(normal[0] == 0.0 && *normal.last().unwrap() > 0.1, "pressed onto the table by 2 s");
    let fz = t.f64("base_fz_n").unwrap();
    assert!(fz.iter().all(|v| v.is_finite()));
    let nodes = session::Table::read(&out.join("sim_nodes.parquet")).unwrap();
    assert_eq!(nodes.height(), 401 * 5);
    let contacts = session::Table::read(&out.join("sim_contacts.parquet")).unwrap();
    let states = contacts.str("state").unwrap();
    assert!(states.iter().any(|s| s == "stick") && states.iter().all(|s| s != "slide"), "the stick test never slides");
    // The report and its summary.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["steps"], 400);
    assert!(summary["tip_slide_steps"] == 0);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.matches("<svg").count() >= 5);
}

#[test]
fn simulate_follows_a_trajectory_csv() {
    let dir = tempfile::tempdir().unwrap();
    // No table, the rod held horizontal and lifted 10 mm in 0.2 s.
    let scene = dir.path().join("free-air.toml");
    std::fs::write(&scene, "initial = \"static\"\n[time]\nstep_s = 0.005\nduration_s = 0.2\nmode = \"dynamic\"\n[base]\nkind = \"prescribed\"\n").unwrap();
    let traj = dir.path().join("traj.csv");
    std::fs::write(&traj, "t_s,x_m,y_m,z_m,rx,ry,rz\n0.0,0,0,0.30,0,0,0\n0.2,0,0,0.31,0,0,0\n").unwrap();
    let out = dir.path().join("sim");
    let o = rodlab(&[
        "simulate",
        "--rod",
        "configs/rod/contact-paper-steel-core.toml",
        "--scene",
        scene.to_str().unwrap(),
        "--trajectory",
        traj.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = session::Table::read(&out.join("sim.parquet")).unwrap();
    let z = t.f64("base_z_m").unwrap();
    assert!((z[0] - 0.30).abs() < 1e-12 && (z.last().unwrap() - 0.31).abs() < 1e-12, "{} {}", z[0], z.last().unwrap());
    // The flange holds the rod's weight (plus a little inertia).
    let fz = t.f64("base_fz_n").unwrap();
    let weight = 0.0628789769615997 * 9.81;
    assert!((fz[0] + weight).abs() < 1e-6 * weight, "{} vs {}", fz[0], -weight);
}

#[test]
fn bad_input_exits_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(root().join("configs/scene/contact-paper-stick.toml")).unwrap();
    let rod = "configs/rod/contact-paper-steel-core.toml";
    let cases: Vec<(&str, String, &str)> = vec![
        ("no-normal.toml", good.replace("normal = [0.0, 0.0, 1.0]\n", ""), "table.normal"),
        ("mu.toml", good.replace("mu = 0.83", "mu = -0.2"), "table.mu"),
        ("step.toml", good.replace("step_s = 0.005", "step_s = 0.0"), "time.step_s"),
        ("order.toml", good.replace("[0.2, 0.000000", "[0.05, 0.000000"), "base.waypoints"),
        ("below.toml", good.replace("0.227000", "-0.05"), "below the table"),
    ];
    for (name, text, field) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let o = rodlab(&["simulate", "--rod", rod, "--scene", path.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name) && err.contains(field), "{name}: {err}");
    }
    // A trajectory that goes back in time.
    let traj = dir.path().join("back.csv");
    std::fs::write(&traj, "t_s,x_m,y_m,z_m,rx,ry,rz\n0.0,0,0,0.3,0,0,0\n1.0,0,0,0.3,0,0,0\n0.5,0,0,0.3,0,0,0\n").unwrap();
    let o = rodlab(&["simulate", "--rod", rod, "--scene", "configs/scene/contact-paper-stick.toml", "--trajectory", traj.to_str().unwrap(), "--out", "/tmp/x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("back.csv") && stderr(&o).contains("increase"), "{}", stderr(&o));
    // A session without a robot stream.
    let session_dir = dir.path().join("session");
    std::fs::create_dir_all(session_dir.join("streams")).unwrap();
    let o =
        rodlab(&["simulate", "--rod", rod, "--scene", "configs/scene/contact-paper-stick.toml", "--session", session_dir.to_str().unwrap(), "--out", "/tmp/x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no robot stream"), "{}", stderr(&o));
}
