//! The simulator with a hyperelastic (neo-Hookean) body: a quasi-static
//! step lands on the static model's large-strain equilibrium, and an
//! undamped swing loses energy only through implicit Euler, to first
//! order in the step (the fibres' energy and forces agree in dynamics).

use lie::Vec3;
use rod::{ElasticLaw, Material, Rod};
use sim::{BaseMotion, Scene, Simulator};

fn simulator(rod: &Rod, scene_toml: &str) -> Simulator {
    let scene = Scene::from_toml_str(scene_toml, "test-scene.toml").unwrap();
    let motion = BaseMotion::from_scene(&scene, rod).unwrap().expect("motion in scene");
    Simulator::new(rod, &scene, motion).unwrap()
}

fn soft_rod() -> Rod {
    let mut rod = Rod::uniform_cylinder(0.2, 0.01, Material { e_pa: 2e5, g_pa: 2e5 / 3.0, rho_kg_m3: 1100.0 }, 4);
    rod.elastic_law = ElasticLaw::NEO_HOOKEAN;
    rod
}

#[test]
fn a_quasi_static_step_lands_on_the_static_large_strain_equilibrium() {
    let mut rod = soft_rod();
    rod.gravity_m_s2 = Vec3::zeros();
    let scene = r#"
gravity_m_s2 = [0.0, 0.0, 0.0]
[time]
step_s = 0.1
duration_s = 0.1
mode = "quasi-static"
[base]
kind = "prescribed"
waypoints = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
[[load]]
kind = "point_force"
arc_m = 0.2
force_n = [0.0, 0.0, -1.5]
"#;
    let records = simulator(&rod, scene).run(|_, _| {}).unwrap();
    let tip = records.last().unwrap().tip_m;
    let loads = rod::Loads {
        point_loads: vec![rod::PointLoad {
            x_m: 0.2,
            offset_body_m: Vec3::zeros(),
            force_n: Vec3::new(0.0, 0.0, -1.5),
            moment_nm: Vec3::zeros(),
            follower: false,
        }],
        ..rod::Loads::none()
    };
    let model = rod::statics::model_for(&rod, &loads);
    let sol = rod::statics::solve(&model, &loads, None, &rod::NewtonOptions::default()).unwrap();
    let want = model.frames(&sol.q).joints.last().unwrap().pos;
    let v = rod::validity::validity(&model, &sol.q);
    let linear = Rod { elastic_law: ElasticLaw::Linear, ..rod.clone() };
    let lm = rod::statics::model_for(&linear, &loads);
    let lin = rod::statics::solve(&lm, &loads, None, &rod::NewtonOptions::default()).unwrap();
    let lin_tip = lm.frames(&lin.q).joints.last().unwrap().pos;
    println!("neo-Hookean tip: simulated {tip:?}, statics {want:?} (linear law {lin_tip:?}); {}", v.summary());
    assert!(v.max_fibre_strain > 0.2, "a large-strain case: {}", v.summary());
    assert!((tip - want).norm() < 1e-9, "{} m apart", (tip - want).norm());
    // Stiffer in compression, softer in tension: in bending they nearly
    // cancel (0.6 mm of a 19 cm deflection), the centre line lengthens.
    assert!((want - lin_tip).norm() > 3e-4, "the laws differ at this strain");
}

#[test]
fn an_undamped_neo_hookean_swing_loses_energy_only_through_implicit_euler() {
    let rod = soft_rod();
    let scene = |step_s: f64| {
        format!(
            r#"
gravity_m_s2 = [0.0, 0.0, -9.81]
initial = "rest"
[time]
step_s = {step_s}
duration_s = 0.3
mode = "dynamic"
[base]
kind = "prescribed"
waypoints = [[0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0]]
"#
        )
    };
    let mut losses = vec![];
    for step_s in [0.002, 0.001] {
        let records = simulator(&rod, &scene(step_s)).run(|_, _| {}).unwrap();
        let energy: Vec<f64> = records.iter().map(|r| r.kinetic_energy_j + r.elastic_energy_j + r.gravity_energy_j).collect();
        for w in energy.windows(2) {
            assert!(w[1] <= w[0] + 1e-12 * w[0].abs().max(1e-3), "h {step_s}: energy rose {} -> {}", w[0], w[1]);
        }
        let swing = records.iter().map(|r| r.kinetic_energy_j).fold(0.0, f64::max);
        let loss = energy[0] - energy.last().unwrap();
        println!("neo-Hookean swing h = {step_s} s: energy lost {loss:.4e} J of peak kinetic {swing:.4e} J");
        assert!(swing > 2.0 * loss, "the rod must really swing");
        losses.push(loss);
    }
    let ratio = losses[0] / losses[1];
    println!("loss ratio h / (h/2) = {ratio:.3} (first order: 2)");
    assert!((1.6..2.4).contains(&ratio), "ratio {ratio}");
}
