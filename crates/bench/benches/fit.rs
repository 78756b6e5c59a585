//! The 6-experiment fit of the shipped PLS-paper data (one start from the
//! rod file's material, no nuisance parameters). And #84's loop: a 1.5 m
//! cable held as a full-turn loop between two clamps, traced five times
//! (23 points, 2 mm, nominal arcs) on 30 sections of 4 sub-segments, and
//! twisted until it snaps, fitted from a rod file 3 times off in E and G
//! (the far start's search included; goal <= 60 s on 2 cores).

use criterion::{criterion_group, Criterion};
use identify::{fit, read_experiments, FitOptions};
use rod::Rod;
use std::path::PathBuf;

fn bench_fit(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rod = Rod::from_file(&root.join("configs/rod/pls-cable-arm.toml")).unwrap();
    let exps = read_experiments(&root.join("datasets/pls-cable-arm"), 4).unwrap();
    let m = rod.cross_section.body;
    let one_start = FitOptions { starts: vec![[3.0 * m.e_pa, 3.0 * m.g_pa, m.rho_kg_m3]], ..FitOptions::default() };
    let mut g = c.benchmark_group("identify");
    g.sample_size(20);
    g.bench_function("pls_cable_arm_6_experiments_one_start", |b| b.iter(|| fit(&rod, &exps, &one_start, |_| {}).unwrap()));
    g.bench_function("pls_cable_arm_6_experiments_5_starts", |b| b.iter(|| fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap()));
    g.finish();
}

/// Five tracings of the full-turn loop and its snap twist, as a lab has them.
fn full_turn_loop_data(root: &std::path::Path) -> (Rod, Vec<identify::Experiment>) {
    use lie::Vec3;
    use rand::SeedableRng;
    let mut rod = Rod::from_file(&root.join("configs/rod/full-turn-loop.toml")).unwrap();
    rod.section_lengths_m = vec![rod.length_m / 30.0; 30];
    rod.subsegments_per_section = 4;
    let truth = identify::Values::material(2.0e7, 6.9e6, 1.2e3);
    let mass_kg = truth.rho_kg_m3 * std::f64::consts::PI * 0.005_f64.powi(2) * rod.length_m;
    rod.weighed_mass_kg = Some((mass_kg, 0.01 * mass_kg));
    let mut rng = rand::rngs::StdRng::seed_from_u64(84);
    let mut gauss = move || -> f64 { rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng) };
    let (tip_m, turn_rad) = (Vec3::new(-0.123, 0.0, 0.0), Vec3::new(0.0, 2.0 * std::f64::consts::PI, 0.0));
    let mut exps: Vec<identify::Experiment> = (0..5)
        .map(|i| {
            let marks = (1..=23)
                .map(|k| identify::Measurement {
                    arc_m: rod.length_m * k as f64 / 24.0,
                    offset_body_m: Vec3::zeros(),
                    pos_m: Vec3::zeros(),
                    sigma_m: 2e-3,
                    arc_sigma_m: 5e-3,
                    ray: None,
                })
                .collect();
            let mut e = identify::Experiment::new(format!("tracing {}", i + 1), vec![], Vec3::zeros(), marks);
            e.tip_position_m = Some(tip_m);
            e.tip_rotation_rad = Some(turn_rad);
            let (points, _) = identify::predict(&rod, &e, &truth).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(points) {
                m.pos_m = p + Vec3::new(gauss(), 0.0, gauss()) * 2e-3;
            }
            e
        })
        .collect();
    // The truth's snap, read five times (0.1 rad each).
    let hold = exps[0].tip_hold(rod.tip_condition).unwrap().unwrap();
    let (_, hold_at) = identify::CriticalQuantity::TipTwistRad.from(hold, rod.base.pos);
    let mut truth_rod = rod.clone();
    truth_rod.cross_section.body = rod::Material { e_pa: truth.e_pa, g_pa: truth.g_pa, rho_kg_m3: truth.rho_kg_m3 };
    let snap = rod::branch::first_critical(&rod::Model::new(&truth_rod, &[]), &rod::Loads::gravity(), &*hold_at, (0.0, 30.0, 60), 1e-9, &Default::default())
        .unwrap()
        .expect("the loop snaps");
    let sigma = 0.1 / 5f64.sqrt();
    exps[0].critical.push(identify::CriticalValue { quantity: identify::CriticalQuantity::TipTwistRad, value: snap.t + 0.6 * sigma, sigma });
    rod.cross_section.body = rod::Material { e_pa: truth.e_pa / 3.0, g_pa: truth.g_pa * 3.0, rho_kg_m3: truth.rho_kg_m3 };
    (rod, exps)
}

fn bench_full_turn_loop(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (rod, exps) = full_turn_loop_data(&root);
    let m = rod.cross_section.body;
    let opts = FitOptions { starts: vec![[m.e_pa, m.g_pa, m.rho_kg_m3]], ..FitOptions::default() };
    let mut g = c.benchmark_group("identify");
    g.sample_size(10);
    g.bench_function("full_turn_loop_5_tracings_30_sections_one_snap_far_start", |b| {
        b.iter(|| assert!((fit(&rod, &exps, &opts, |_| {}).unwrap().e_pa.value / 2.0e7 - 1.0).abs() < 0.05))
    });
    g.finish();
}

criterion_group!(benches, bench_fit, bench_full_turn_loop);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
