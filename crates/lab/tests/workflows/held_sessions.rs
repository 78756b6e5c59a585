//! A rod held at both ends in sessions: the cord hanging as a loop, its
//! tip's clamp carried by a second robot (stream `robot2`) through three
//! holds; the loads file's `[tip_hold]` reads that robot: each hold becomes
//! an experiment with the tip's hold (the weighed cord's E within 2 % of
//! the truth), the replay holds the tip where the robot held it, the
//! observer holds it frame by frame, and validate compares the two. What a
//! held rod's sessions lack is refused in one line.

use crate::common;
use common::*;
use lab::identify::{identify, IdentifyRequest, Source};
use lab::loads::Loads;
use std::path::Path;

const CORD: &str = "configs/rod/clamped-clamped-cable.toml";
const HOLDS: &str = "configs/scene/cable-loop-holds.toml";
const TRUTH_E_PA: f64 = 2.4e7;

/// The cord weighed (its mass to 1 %), its rod file's E a start 20 % off.
fn weighed_cord() -> rod::Rod {
    let mut r = rod(CORD);
    let mass_kg = r.cross_section.body.rho_kg_m3 * std::f64::consts::PI * 0.005_f64.powi(2) * r.length_m;
    r.weighed_mass_kg = Some((mass_kg, 0.01 * mass_kg));
    r
}

fn loads(dir: &Path, text: &str) -> Loads {
    let p = dir.join("loads.toml");
    std::fs::write(&p, text).unwrap();
    Loads::read(Some(&p), 0).unwrap()
}

#[test]
fn a_loop_whose_tip_a_second_robot_holds_is_identified_from_its_holds() {
    let dir = tempfile::tempdir().unwrap();
    let session = synth(dir.path(), "loop", CORD, HOLDS, |r| {
        r.material = rod::Material { e_pa: TRUTH_E_PA, g_pa: TRUTH_E_PA / 2.9, ..r.material };
        r.tip_robot = Some("robot2".into());
        r.flange_sensor = false;
    });
    assert!(session.has_stream("robot2"));
    let source = Source::Sessions { dirs: vec![session.clone()], loads: loads(dir.path(), "[tip_hold]\nrobot = \"robot2\"\n") };
    let req = IdentifyRequest { tie_g_poisson: Some(0.45), ..IdentifyRequest::new(&at(CORD), weighed_cord(), source, &dir.path().join("fit")) };
    let id = identify(&req, &lab::Silent).unwrap();
    let f = &id.study.fit;
    println!(
        "loop held by two robots: {} holds, E {:.4e} [{:.4e}, {:.4e}] for {TRUTH_E_PA:.4e}, rho {:.1}; warnings {:?}",
        id.experiments.len(),
        f.e_pa.value,
        f.e_pa.ci95_low,
        f.e_pa.ci95_high,
        f.rho_kg_m3.value,
        f.warnings
    );
    for h in &id.holds {
        println!("  hold {:.2}..{:.2} s: {:?}", h.start_s, h.end_s, h.status);
    }
    assert_eq!(id.experiments.len(), 3, "three holds of the tip robot");
    let gaps: Vec<f64> = id.experiments.iter().map(|e| e.tip_position_m.unwrap().x).collect();
    assert!((gaps[0] - 0.1).abs() < 1e-9 && (gaps[1] - 0.3).abs() < 1e-9 && (gaps[2] - 0.5).abs() < 1e-9, "{gaps:?}");
    assert!((f.e_pa.value / TRUTH_E_PA - 1.0).abs() < 0.02, "E {}", f.e_pa.value);

    // The session replayed: its second robot's poses hold the tip (the
    // scene's own [tip] replaced), through the three holds.
    let mut replay_scene = scene(HOLDS);
    replay_scene.tip = Some(sim::scene::TipSpec { waypoints: vec![[0.0, 0.2, 0.0, 0.0, 0.0, -std::f64::consts::FRAC_PI_2, 0.0]], rotation_given: true });
    let replay_loads = loads(dir.path(), "[tip_hold]\nrobot = \"robot2\"\n");
    let job = lab::simulate::SimulateJob {
        rod: &rod(CORD),
        rod_path: &at(CORD),
        scene: replay_scene,
        scene_path: &at(HOLDS),
        params_path: None,
        base: lab::simulate::BaseSource::Session(session.clone()),
        rig_frames: None,
        duration_s: None,
        out: &dir.path().join("replay"),
        damaged: session::Damaged::Refuse,
        session_loads: Some(&replay_loads),
    };
    let replayed = lab::simulate::run(&job, &lab::Silent).unwrap();
    let tip_x_at = |t: f64| replayed.records.iter().min_by(|a, b| (a.t_s - t).abs().total_cmp(&(b.t_s - t).abs())).unwrap().tip_m.x;
    println!("replayed: tip at x = {:.4}, {:.4}, {:.4} m at 2, 6, 10 s", tip_x_at(2.0), tip_x_at(6.0), tip_x_at(10.0));
    for (t, x) in [(2.0, 0.1), (6.0, 0.3), (10.0, 0.5)] {
        assert!((tip_x_at(t) - x).abs() < 1e-6, "at {t} s the tip is at {} m, its robot at {x} m", tip_x_at(t));
    }

    // Observed with the second robot's hold, frame by frame: every frame
    // solves through the markers (hard mode; validate below observes in
    // weighted mode), and a held rod without [tip_hold] is refused.
    let o = lab::observe::ObserveOptions { mode: lab::observe::ObserverMode::Hard, sigma_m: 1e-5, energy_scale_j: None };
    let ob =
        lab::observe::observe_held(&session.markers(), &rod(CORD), &o, replay_loads.file.tip_hold.as_ref(), &dir.path().join("strain.parquet"), &lab::Silent)
            .unwrap();
    println!(
        "observed: {} frames, {} failed, marker residual mean {:.2e} m, max {:.2e} m",
        ob.frames, ob.failed, ob.marker_residual_mean_m, ob.marker_residual_max_m
    );
    assert_eq!(ob.failed, 0, "{:?}", ob.reasons);
    assert!(ob.marker_residual_max_m < 1e-6, "{}", ob.marker_residual_max_m);
    let o = lab::observe::ObserveOptions::default();
    let e = lab::observe::observe(&session.markers(), &rod(CORD), &o, &dir.path().join("s.parquet"), &lab::Silent).expect_err("refused");
    assert!(e.to_string().contains("[tip_hold]"), "{e}");

    // Validated: the replay against the session, the tip held by its robot.
    let v = lab::validate::validate(
        &lab::validate::ValidateRequest {
            sessions: vec![session.clone()],
            rod_path: at(CORD),
            rod: {
                let mut r = rod(CORD);
                r.cross_section.body = rod::Material { e_pa: TRUTH_E_PA, g_pa: TRUTH_E_PA / 2.9, ..r.cross_section.body };
                r
            },
            params: None,
            scene_path: at(HOLDS),
            scene: scene(HOLDS),
            loads: replay_loads.clone(),
            out: dir.path().join("validate"),
            options: lab::validate::ValidateOptions::default(),
        },
        &lab::Silent,
    )
    .unwrap();
    let s = &v.sessions[0];
    for c in &s.checks {
        println!("  check {}: {:.4} (limit {:.4}) {}", c.name, c.value, c.limit, if c.pass { "pass" } else { "FAIL" });
    }
    println!("validated: {} frames, strain RMS {:.2} % of the range", s.frames_compared, s.strain_headline_rms_pct);
    assert!(s.checks.iter().all(|c| c.pass), "{:?}", s.checks);

    // A held rod without [tip_hold], [tip_hold] naming no stream, a free
    // rod given [tip_hold]: one line each.
    let refused = |rod: rod::Rod, text: &str| -> String {
        let source = Source::Sessions { dirs: vec![session.clone()], loads: loads(dir.path(), text) };
        let e = identify(&IdentifyRequest::new(&at(CORD), rod, source, &dir.path().join("bad")), &lab::Silent).err().expect("refused");
        assert_eq!(e.kind(), fault::Kind::Input, "{e}");
        e.to_string()
    };
    let m = refused(weighed_cord(), "");
    assert!(m.contains("tip is clamped") && m.contains("[tip_hold] robot"), "{m}");
    let m = refused(weighed_cord(), "[tip_hold]\nrobot = \"robot3\"\n");
    assert!(m.contains("robot = \"robot3\"") && m.contains("no such stream"), "{m}");
    let mut free = weighed_cord();
    free.tip_condition = rod::TipCondition::Free;
    let m = refused(free, "[tip_hold]\nrobot = \"robot2\"\n");
    assert!(m.contains("[tip_hold]") && m.contains("tip is free"), "{m}");
}
