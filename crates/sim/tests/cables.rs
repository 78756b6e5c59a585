//! Cable loads in a scene: the cable arm pulled through the shipped
//! identification scene holds the shape of the static model with the same
//! tensions (rod::statics), and the flange holds only the weight (the
//! actuator sits on the base: the pull is internal).

use rod::statics::solve;
use rod::{Loads, Model, NewtonOptions, Rod};
use sim::{BaseMotion, Scene, Simulator};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn pulled_cables_hold_the_static_models_shape_and_the_flange_feels_the_weight_only() {
    let rod = Rod::from_file(&root().join("configs/rod/pls-cable-arm.toml")).unwrap();
    let mut scene = Scene::from_file(&root().join("configs/scene/cable-arm-tensions.toml")).unwrap();
    scene.duration_s = 8.0; // through the 0.98 N hold of cable4
    let motion = BaseMotion::from_scene(&scene, &rod).unwrap().unwrap();
    let mut sim = Simulator::new(&rod, &scene, motion).unwrap();
    let records = sim.run(|_, _| {}).unwrap();
    let last = records.last().unwrap();
    let tensions = scene.cable_tensions_n(&rod, last.t_s);
    assert_eq!(tensions, vec![0.0, 0.0, 0.0, 0.98]);
    // The static model, base at the scene's flange pose.
    let mut statics_rod = rod.clone();
    statics_rod.base = lie::Pose::from_rpy(0.0, 0.0, 0.0, lie::Vec3::new(0.0, 0.0, 0.3)).compose(&rod.base);
    let model = Model::new(&statics_rod, &[]);
    let sol = solve(&model, &Loads::gravity().with_tensions(&tensions), None, &NewtonOptions::default()).unwrap();
    let tip = model.frames(&sol.q).joints.last().unwrap().pos;
    println!("tip: simulated {:?}, static model {:?}", last.tip_m, tip);
    assert!((last.tip_m - tip).norm() < 1e-7, "{} m apart", (last.tip_m - tip).norm());
    // The flange holds the weight: |F| = m g, whatever the cables do.
    let f = lie::linear(&last.base_wrench_flange).norm();
    let weight = sim.mass_kg() * 9.81;
    assert!((f / weight - 1.0).abs() < 1e-6, "{f} N vs m g = {weight} N");
    // An unknown cable name is refused, naming the rod's cables.
    let mut bad = scene.clone();
    if let sim::LoadSpec::Cable { cable, .. } = &mut bad.loads[0] {
        *cable = "cable9".into();
    }
    let motion = BaseMotion::from_scene(&bad, &rod).unwrap().unwrap();
    let e = Simulator::new(&rod, &bad, motion).err().unwrap().to_string();
    assert!(e.contains("cable9") && e.contains("cable1, cable2, cable3, cable4"), "{e}");
}
