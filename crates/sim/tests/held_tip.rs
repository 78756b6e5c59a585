//! A rod held at both ends in the simulator (the scene's `[tip]`): a
//! clamped-clamped and a pinned-pinned beam ring at their first bending
//! frequencies (Euler-Bernoulli's closed forms), a loop between two clamps
//! settles on the statics' held equilibrium (exact multipliers) with the
//! same reaction, and follows a clamp that moves.

use lie::Vec3;
use rod::held::{solve_held, TipHold};
use rod::{Loads, Material, Model, NewtonOptions, Rod, TipCondition};
use sim::{BaseMotion, Scene, Simulator, StepRecord};
use std::f64::consts::PI;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(rod: &Rod, scene_toml: &str) -> (Simulator, Vec<StepRecord>) {
    let scene = Scene::from_toml_str(scene_toml, "held.toml").unwrap();
    let motion = BaseMotion::from_scene(&scene, rod).unwrap().unwrap();
    let mut sim = Simulator::new(rod, &scene, motion).unwrap();
    let records = sim.run(|_, _| {}).unwrap();
    (sim, records)
}

/// A steel-like beam 1 m long along +x, 5 mm in radius: its weight sags it
/// by 4e-5 m between clamps, far below its radius (no membrane stiffening).
fn beam(condition: TipCondition) -> Rod {
    let mut rod = Rod::uniform_cylinder(1.0, 0.005, Material::from_poisson(1e11, 0.3, 1000.0), 8);
    rod.tip_condition = condition;
    rod
}

/// The period of the midspan's vertical motion about its mean, from its
/// upward crossings.
fn period_s(records: &[StepRecord]) -> f64 {
    let mid = records[0].node_m.len() / 2;
    let z: Vec<(f64, f64)> = records.iter().map(|r| (r.t_s, r.node_m[mid].z)).collect();
    let mean = z.iter().map(|p| p.1).sum::<f64>() / z.len() as f64;
    let ups: Vec<f64> =
        z.windows(2).filter(|w| w[0].1 < mean && w[1].1 >= mean).map(|w| w[0].0 + (mean - w[0].1) / (w[1].1 - w[0].1) * (w[1].0 - w[0].0)).collect();
    (ups[ups.len() - 1] - ups[0]) / (ups.len() - 1) as f64
}

fn beam_scene(tip: &str) -> String {
    format!(
        r#"
[time]
step_s = 1e-4
duration_s = 0.04
mode = "dynamic"
integrator = "bdf2"
[base]
kind = "prescribed"
waypoints = [[0, 0, 0, 0, 0, 0, 0]]
[tip]
{tip}
"#
    )
}

#[test]
fn a_beam_held_at_both_ends_rings_at_its_first_bending_frequency() {
    let (r, l) = (0.005_f64, 1.0_f64);
    let ei = 1e11 * PI * r.powi(4) / 4.0;
    let rho_a = 1000.0 * PI * r * r;
    // Clamped at the base: the tip clamped (beta L = 4.7300) or pinned
    // (beta L = 3.9266, a clamped-pinned beam).
    for (condition, tip, beta_l) in [
        (TipCondition::Clamped, "position_m = [1.0, 0.0, 0.0]\nrotation_rad = [0.0, 0.0, 0.0]", 4.730_040_7_f64),
        (TipCondition::Pinned, "position_m = [1.0, 0.0, 0.0]", 3.926_602_3),
    ] {
        let (_, records) = run(&beam(condition), &beam_scene(tip));
        let f_hz = beta_l.powi(2) / (2.0 * PI * l * l) * (ei / rho_a).sqrt();
        let measured_hz = 1.0 / period_s(&records);
        let iterations: usize = records.iter().map(|r| r.iterations).sum();
        println!("  {} steps, {iterations} iterations, {} substeps", records.len() - 1, records.iter().map(|r| r.substeps).sum::<usize>());
        println!(
            "{}: first bending frequency {measured_hz:.3} Hz, Euler-Bernoulli {f_hz:.3} Hz ({:+.3} %)",
            condition.key(),
            100.0 * (measured_hz / f_hz - 1.0)
        );
        assert!((measured_hz / f_hz - 1.0).abs() < 0.01, "{measured_hz} Hz for {f_hz} Hz");
        // The hold carries the weight with the base: for the clamped beam
        // half each (by symmetry), over the cycles' mean.
        let mean_fz = records.iter().map(|r| r.tip_hold_wrench.unwrap()[5]).sum::<f64>() / records.len() as f64;
        let weight_n = rho_a * l * 9.81;
        let share = if condition == TipCondition::Clamped { 0.5 } else { 3.0 / 8.0 };
        println!("  the tip's hold carries {:.4} of the weight on average ({share} statically)", mean_fz / weight_n);
        assert!((mean_fz / weight_n - share).abs() < 0.02, "{mean_fz} N of {weight_n} N");
    }
}

fn cord() -> Rod {
    Rod::from_file(&root().join("configs/rod/clamped-clamped-cable.toml")).unwrap()
}

const UP: [f64; 3] = [0.0, -PI / 2.0, 0.0];

fn held_statics(rod: &Rod, gap_m: f64) -> (Model, rod::HeldSolution) {
    let model = Model::new(rod, &[]);
    let rotation = lie::trajectory::rotation_from_vector(&Vec3::from(UP));
    let held = solve_held(&model, &Loads::gravity(), TipHold::clamped(Vec3::new(gap_m, 0.0, 0.0), rotation), None, &NewtonOptions::default()).unwrap();
    (model, held)
}

#[test]
fn a_loop_between_two_clamps_settles_on_the_held_statics_and_follows_a_moving_clamp() {
    let rod = cord();
    let scene = |tip: String, duration_s: f64| {
        format!("initial = \"static\"\n[time]\nstep_s = 0.05\nduration_s = {duration_s}\nmode = \"quasi-static\"\n[base]\nkind = \"prescribed\"\nwaypoints = [[0, 0, 0, 0, 0, 0, 0]]\n[tip]\n{tip}\n")
    };
    let fixed = scene(format!("position_m = [0.1, 0.0, 0.0]\nrotation_rad = {UP:?}"), 0.05);
    let (_, records) = run(&rod, &fixed);
    let (model, held) = held_statics(&rod, 0.1);
    let last = records.last().unwrap();
    let tip = model.frames(&held.solution.q).joints.iter().map(|j| j.pos).collect::<Vec<_>>();
    let statics_nodes: Vec<Vec3> = model.node_x_m.iter().map(|&x| tip[model.joint_at(x)]).collect();
    let worst_m = last.node_m.iter().zip(&statics_nodes).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
    let reaction = last.tip_hold_wrench.unwrap();
    let reaction_error = (reaction - held.tip_reaction).amax() / held.tip_reaction.amax();
    println!("settled loop: nodes within {worst_m:.2e} m of the held statics; the hold's wrench within {reaction_error:.2e} of its multipliers");
    assert!(worst_m < 1e-6 * rod.length_m, "{worst_m} m");
    assert!(reaction_error < 1e-5, "{reaction:?} vs {:?}", held.tip_reaction);
    // The clamp slides from 0.1 m to 0.3 m over a second, then stays.
    let moving = scene(format!("waypoints = [[0, 0.1, 0, 0, {0}, {1}, {2}], [1.0, 0.3, 0, 0, {0}, {1}, {2}]]", UP[0], UP[1], UP[2]), 1.2);
    let (_, records) = run(&rod, &moving);
    let (model, held) = held_statics(&rod, 0.3);
    let joints = model.frames(&held.solution.q).joints.iter().map(|j| j.pos).collect::<Vec<_>>();
    let last = records.last().unwrap();
    let worst_m = last.node_m.iter().zip(model.node_x_m.iter().map(|&x| joints[model.joint_at(x)])).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
    let halfway = &records[records.len() / 2 - 2];
    println!("moving clamp: at t = {:.2} s the tip is at x = {:.4} m; at the end within {worst_m:.2e} m of the statics at 0.3 m", halfway.t_s, halfway.tip_m.x);
    assert!(worst_m < 1e-6 * rod.length_m, "{worst_m} m");
    assert!((halfway.tip_m.x - (0.1 + 0.2 * halfway.t_s)).abs() < 1e-5, "the tip follows the clamp: {:?} at {}", halfway.tip_m, halfway.t_s);
}

#[test]
fn a_scene_and_a_rod_file_that_disagree_on_the_tip_are_refused_in_one_line() {
    let cantilever = Rod::from_file(&root().join("configs/rod/pls-paper-cantilever.toml")).unwrap();
    let cord = cord();
    let base = "[time]\nstep_s = 0.05\nduration_s = 0.1\nmode = \"quasi-static\"\n[base]\nkind = \"prescribed\"\nwaypoints = [[0, 0, 0, 0, 0, 0, 0]]\n";
    let refused = |rod: &Rod, text: &str| -> String {
        let scene = match Scene::from_toml_str(text, "held.toml") {
            Ok(s) => s,
            Err(e) => return e.to_string(),
        };
        let motion = BaseMotion::from_scene(&scene, rod).unwrap().unwrap();
        Simulator::new(rod, &scene, motion).err().expect("refused").to_string()
    };
    let cases = [
        (&cantilever, format!("{base}[tip]\nposition_m = [0.1, 0, 0]\n"), "rod file's tip is free"),
        (&cord, base.to_string(), "scene needs a [tip] table"),
        (&cord, format!("{base}[tip]\nposition_m = [0.1, 0, 0]\n"), "needs rotation_rad"),
        (&cord, format!("{base}[tip]\nposition_m = [0.1, 0, 0]\nrotation_rad = {UP:?}\n"), "initial = \"static\""),
        (&cord, format!("initial = \"static\"\n{base}[tip]\nposition_m = [2.0, 0, 0]\nrotation_rad = {UP:?}\n"), "rod's length"),
        (&cord, format!("{base}[tip]\nposition_m = [0.1, 0, 0]\nwaypoints = [[0, 0.1, 0, 0, 0, 0, 0]]\n"), "not both"),
        (&cord, format!("{base}[tip]\nwaypoints = [[0.5, 0.1, 0, 0, 0, 0, 0]]\n"), "tip.waypoints[0]"),
    ];
    for (rod, text, expected) in cases {
        let message = refused(rod, &text);
        println!("{message}");
        assert!(message.contains(expected) && !message.contains('\n'), "{message}");
    }
}
