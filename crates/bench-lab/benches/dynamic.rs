//! One dynamic fit (`identify --dynamic`) of one 6.5 s session: the rod
//! dragged lying on a table whose friction is 0.8, fitted for mu and the
//! damping ratio from the rod file's values (scan of mu, then
//! Levenberg-Marquardt with forward differences of whole replays, two at
//! a time on two cores). And a ring-down of a viscoelastic rod (one
//! Maxwell branch) fitted twice on the same session: with the elastic law
//! and a damping ratio (one value), and with the branch's modulus ratio and
//! time (the Prony law; #78 asks it to cost at most twice the first), and
//! with the constant-loss law's two numbers (seven branches).

use criterion::{criterion_group, Criterion};
use lab::dynamic::{identify_dynamic, DynamicRequest};
use std::path::PathBuf;

const ROD: &str = "configs/rod/contact-paper-steel-core.toml";
const SCENE: &str = "configs/scene/contact-paper-lying-drag.toml";

fn at(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn bench_dynamic(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let rod = rod::Rod::from_file(&at(ROD)).unwrap();
    let scene = sim::Scene::from_file(&at(SCENE)).unwrap();
    let mut synth = lab::synth::SynthRequest::new(&at(SCENE), scene.clone(), &at(ROD), rod.clone(), &dir.path().join("drag"));
    synth.scene.table.as_mut().unwrap().mu = 0.8;
    synth.marker_noise_m = 1e-4;
    let session = lab::synth::synthesise(&synth, &lab::Silent).unwrap().session;
    let params = lab::params::Params::of_rod_file(&rod, &at(ROD));
    let req = DynamicRequest::new(vec![session], &at(ROD), rod, params, &at(SCENE), scene, &dir.path().join("fit"));
    let mut g = c.benchmark_group("identify_dynamic");
    g.sample_size(10);
    g.bench_function("one_6.5_s_drag_session_mu_and_damping", |b| {
        b.iter(|| assert!((identify_dynamic(&req, &lab::Silent).unwrap().out.mu / 0.8 - 1.0).abs() < 0.03))
    });
    g.finish();
}

fn bench_ring_down_laws(c: &mut Criterion) {
    const RING: &str = "configs/scene/contact-paper-ring.toml";
    let dir = tempfile::tempdir().unwrap();
    let rod = rod::Rod::from_file(&at(ROD)).unwrap();
    let scene = sim::Scene::from_file(&at(RING)).unwrap();
    let mut synth = lab::synth::SynthRequest::new(&at(RING), scene.clone(), &at(ROD), rod.clone(), &dir.path().join("ring"));
    synth.rod.damping = None;
    synth.rod.viscoelastic = vec![rod::PronyBranch { modulus_ratio: 0.3, time_constant_s: 0.05 }];
    synth.marker_noise_m = 1e-4;
    let session = lab::synth::synthesise(&synth, &lab::Silent).unwrap().session;
    let params = lab::params::Params::of_rod_file(&rod, &at(ROD));
    let mut in_air = scene;
    in_air.table = None;
    let mut kelvin_voigt = DynamicRequest::new(vec![session], &at(ROD), rod, params, &at(RING), in_air, &dir.path().join("kv"));
    kelvin_voigt.rod.damping = Some(rod::Damping::Ratio(0.05));
    let mut prony = DynamicRequest { out: dir.path().join("prony"), ..kelvin_voigt.clone() };
    prony.rod.damping = None;
    prony.rod.viscoelastic = vec![rod::PronyBranch { modulus_ratio: 0.15, time_constant_s: 0.1 }];
    // The constant-loss law over 5 ms - 0.3 s (7 branches), fitted by its two numbers.
    let mut constant_loss = DynamicRequest { out: dir.path().join("constant-loss"), ..prony.clone() };
    let law = rod::ConstantLoss::new(0.06, 0.005, 0.3);
    (constant_loss.rod.constant_loss, constant_loss.rod.viscoelastic) = (Some(law), law.prony_branches());
    let mut g = c.benchmark_group("identify_dynamic");
    g.sample_size(10);
    g.bench_function("ring_down_3_s_kelvin_voigt_damping_ratio", |b| b.iter(|| identify_dynamic(&kelvin_voigt, &lab::Silent).unwrap()));
    g.bench_function("ring_down_3_s_prony_one_branch", |b| {
        b.iter(|| assert!((identify_dynamic(&prony, &lab::Silent).unwrap().out.branches[0].time_constant_s / 0.05 - 1.0).abs() < 0.03))
    });
    g.bench_function("ring_down_3_s_constant_loss_seven_branches", |b| b.iter(|| identify_dynamic(&constant_loss, &lab::Silent).unwrap()));
    g.finish();
}

criterion_group!(benches, bench_dynamic, bench_ring_down_laws);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
