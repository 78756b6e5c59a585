//! Simulations through the lab's workflow: a short stick test from the
//! shipped scene, its tables read back with the formats of the other
//! stages, a trajectory, and bad input naming file and field.

use crate::common;
use common::*;
use lab::simulate::{run, BaseSource, SimulateJob, Simulated};
use std::path::Path;

const ROD: &str = "configs/rod/contact-paper-steel-core.toml";

fn simulate(scene_path: &Path, scene: sim::Scene, base: BaseSource, out: &Path) -> lab::Result<Simulated> {
    let rod = rod(ROD);
    let job = SimulateJob {
        rod: &rod,
        rod_path: &at(ROD),
        scene,
        scene_path,
        params_path: None,
        base,
        rig_frames: None,
        duration_s: None,
        out,
        damaged: session::Damaged::Refuse,
        session_loads: None,
    };
    run(&job, &lab::Silent)
}

#[test]
fn a_simulation_writes_tables_the_other_stages_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut stick = scene("configs/scene/contact-paper-stick.toml");
    stick.duration_s = 2.0;
    let out = dir.path().join("sim");
    let done = simulate(&at("configs/scene/contact-paper-stick.toml"), stick, BaseSource::Scene, &out).unwrap();
    assert_eq!(done.summary.steps, 400);
    assert!((done.summary.simulated_s - 2.0).abs() < 1e-9);
    assert!(done.summary.first_touch_s.is_some_and(|t| t > 0.5));
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
    assert!(t.f64("base_fz_n").unwrap().iter().all(|v| v.is_finite()));
    assert_eq!(session::Table::read(&out.join("sim_nodes.parquet")).unwrap().height(), 401 * 5);
    let states = session::Table::read(&out.join("sim_contacts.parquet")).unwrap().str("state").unwrap();
    assert!(states.iter().any(|s| s == "stick") && states.iter().all(|s| s != "slide"), "the stick test never slides");
    // The report and its summary.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["steps"], 400);
    assert_eq!(summary["tip_slide_steps"], 0);
    assert!(std::fs::read_to_string(out.join("index.html")).unwrap().matches("<svg").count() >= 5);

    // Exported as a session's are: the simulated markers as markers.csv,
    // the other tables beside them, values exact.
    let to = dir.path().join("export");
    let exported = lab::export::export(&lab::SessionDir::new(&out), &to).unwrap();
    let names: Vec<String> = exported.files.iter().map(|(p, _)| p.strip_prefix(&to).unwrap().display().to_string()).collect();
    for name in ["markers.csv", "sim.csv", "sim_nodes.csv", "sim_contacts.csv", "summary.json", "units.csv"] {
        assert!(names.contains(&name.to_string()), "{name} not in {names:?}");
    }
    let headers = |p: &Path| csv::Reader::from_path(p).unwrap().headers().unwrap().iter().map(String::from).collect::<Vec<_>>();
    let rows: Vec<csv::StringRecord> = csv::Reader::from_path(to.join("markers.csv")).unwrap().records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), markers.len());
    let z = headers(&to.join("markers.csv")).iter().position(|h| h == "z_m").unwrap();
    for (row, m) in rows.iter().zip(&markers) {
        assert_eq!(row[z].parse::<f64>().unwrap(), m.z_m);
    }
    // A replay of a tracked session: its simulated markers export under
    // the session's own columns (host clock included).
    let session = synth(dir.path(), "tracked", ROD, "configs/scene/contact-paper-stick.toml", |r| r.duration_s = Some(0.2));
    lab::export::export(&session, &dir.path().join("session-export")).unwrap();
    let replay = dir.path().join("replay");
    simulate(&at("configs/scene/contact-paper-stick.toml"), scene("configs/scene/contact-paper-stick.toml"), BaseSource::Session(session), &replay).unwrap();
    lab::export::export(&lab::SessionDir::new(&replay), &dir.path().join("replay-export")).unwrap();
    assert_eq!(headers(&dir.path().join("replay-export/markers.csv")), headers(&dir.path().join("session-export/markers.csv")));
    assert_eq!(exported.files.iter().find(|(p, _)| p.ends_with("summary.json")).unwrap().1, None, "metadata has no rows");
}

#[test]
fn a_simulation_follows_a_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    // No table, the rod held horizontal and lifted 10 mm in 0.2 s.
    let free = sim::Scene::from_toml_str(
        "initial = \"static\"\n[time]\nstep_s = 0.005\nduration_s = 0.2\nmode = \"dynamic\"\n[base]\nkind = \"prescribed\"\n",
        "free-air.toml",
    )
    .unwrap();
    let traj = dir.path().join("traj.csv");
    lab::tables::write_time_table(&traj, &lab::tables::TRAJECTORY_HEADER, [(0.0, [0.0, 0.0, 0.30, 0.0, 0.0, 0.0]), (0.2, [0.0, 0.0, 0.31, 0.0, 0.0, 0.0])])
        .unwrap();
    let base = BaseSource::Trajectory { samples: lab::tables::read_trajectory(&traj).unwrap(), path: traj };
    let done = simulate(Path::new("free-air.toml"), free, base, &dir.path().join("sim")).unwrap();
    let (first, last) = (&done.records[0], done.records.last().unwrap());
    assert!((first.base_pose.pos.z - 0.30).abs() < 1e-12 && (last.base_pose.pos.z - 0.31).abs() < 1e-12);
    // The flange holds the rod's weight (plus a little inertia).
    let weight = 0.0628789769615997 * 9.81;
    assert!((first.base_wrench_flange[5] + weight).abs() < 1e-6 * weight, "{} vs {}", first.base_wrench_flange[5], -weight);
}

#[test]
fn bad_scenes_and_bases_are_input_errors_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(at("configs/scene/contact-paper-stick.toml")).unwrap();
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
        let r = sim::Scene::from_file(&path).map_err(lab::Error::from).and_then(|s| simulate(&path, s, BaseSource::Scene, &dir.path().join("x")));
        expect_input_error(r.map(|_| ()), &[name, field]);
    }
    // A trajectory that goes back in time.
    let traj = dir.path().join("back.csv");
    std::fs::write(&traj, "t_s,x_m,y_m,z_m,rx,ry,rz\n0.0,0,0,0.3,0,0,0\n1.0,0,0,0.3,0,0,0\n0.5,0,0,0.3,0,0,0\n").unwrap();
    expect_input_error(lab::tables::read_trajectory(&traj), &["back.csv", "line 4", "increase"]);
    // A session without a robot stream.
    let session_dir = dir.path().join("session");
    std::fs::create_dir_all(session_dir.join("streams")).unwrap();
    let stick = scene("configs/scene/contact-paper-stick.toml");
    let r = simulate(&at("configs/scene/contact-paper-stick.toml"), stick, BaseSource::Session(lab::SessionDir::new(&session_dir)), &dir.path().join("x"));
    expect_input_error(r.map(|_| ()), &["no robot stream"]);
}
