//! Wall time per step and real-time factor of the contact paper's stick
//! and slide scenes (configs/scene) at their 5 ms step, one core; DisMech's
//! axial slip onset, the case compared with PyElastica.

use criterion::{criterion_group, Criterion};
use rod::Rod;
use sim::{BaseMotion, Scene, Simulator};
use std::path::PathBuf;
use std::time::Instant;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn setup(name: &str) -> (Rod, Scene) {
    let rod = Rod::from_file(&root().join("configs/rod/contact-paper-steel-core.toml")).unwrap();
    let scene = Scene::from_file(&root().join(format!("configs/scene/contact-paper-{name}.toml"))).unwrap();
    (rod, scene)
}

fn bench_scenes(c: &mut Criterion) {
    let mut g = c.benchmark_group("contact_paper_scenes");
    g.sample_size(10);
    for name in ["stick", "slide"] {
        let (rod, scene) = setup(name);
        // Real-time factor of one whole run, printed once (criterion times
        // the same run below).
        let motion = BaseMotion::from_scene(&scene, &rod).unwrap().unwrap();
        let mut sim = Simulator::new(&rod, &scene, motion).unwrap();
        let start = Instant::now();
        let records = sim.run(|_, _| {}).unwrap();
        let wall = start.elapsed().as_secs_f64();
        let steps = records.len() - 1;
        let iterations: usize = records.iter().map(|r| r.iterations).sum();
        println!(
            "{name}: {steps} steps of {} ms in {wall:.3} s: {:.1} us per step, {:.2} iterations and {:.3} tangents per step, real-time factor {:.1}",
            scene.step_s * 1e3,
            1e6 * wall / steps as f64,
            iterations as f64 / steps as f64,
            sim.tangents() as f64 / steps as f64,
            scene.duration_s / wall
        );
        g.bench_function(format!("{name}_whole_run_{steps}_steps"), |b| {
            b.iter(|| {
                let motion = BaseMotion::from_scene(&scene, &rod).unwrap().unwrap();
                Simulator::new(&rod, &scene, motion).unwrap().run(|_, _| {}).unwrap()
            })
        });
    }
    g.finish();
}

/// DisMech's axial slip onset (rod lying on a table, pushed along its axis,
/// 1 s): one point of the sweep below and one above the onset, the case
/// `make bench` also runs in PyElastica (scripts/peer-pyelastica.py).
fn bench_slip_onset(c: &mut Criterion) {
    let mut g = c.benchmark_group("slip_onset_1_s");
    g.sample_size(20);
    for force_n in [2.0, 6.0] {
        let start = Instant::now();
        let point = sim::benchmarks::slip_onset(force_n, 1.0).unwrap();
        println!(
            "slip onset, push {force_n} N: kinetic energy {:.6} J (analytic {:.6} J) in {:.2} ms",
            point.kinetic_energy_j,
            point.analytic_j,
            start.elapsed().as_secs_f64() * 1e3
        );
        g.bench_function(format!("push_{force_n}_n"), |b| b.iter(|| sim::benchmarks::slip_onset(force_n, 1.0).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, bench_scenes, bench_slip_onset);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
