//! Validation of the shipped stick scene (a synthetic session, seed 3) with
//! the observer's marker sigma left to its default (the markers' estimated
//! noise) and set to 2e-5 m and 1e-6 m, far below the 0.3 mm noise: the
//! estimate floors a sigma below the noise, so all three run alike.

use criterion::{criterion_group, Criterion};
use lab::validate::{validate, ValidateOptions, ValidateRequest};
use std::path::PathBuf;

const ROD: &str = "configs/rod/contact-paper-steel-core.toml";
const SCENE: &str = "configs/scene/contact-paper-stick.toml";

fn at(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn bench_validate(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let rod = rod::Rod::from_file(&at(ROD)).unwrap();
    let scene = sim::Scene::from_file(&at(SCENE)).unwrap();
    let mut synth = lab::synth::SynthRequest::new(&at(SCENE), scene.clone(), &at(ROD), rod.clone(), &dir.path().join("stick"));
    synth.seed = 3;
    let session = lab::synth::synthesise(&synth, &lab::Silent).unwrap().session;
    let mut g = c.benchmark_group("validate_stick_session");
    g.sample_size(10);
    for sigma_m in [None, Some(2e-5), Some(1e-6)] {
        let mut options = ValidateOptions::default();
        if let Some(s) = sigma_m {
            options.observer.sigma_m = s;
        }
        let req = ValidateRequest {
            sessions: vec![session.clone()],
            rod_path: at(ROD),
            rod: rod.clone(),
            params: None,
            scene_path: at(SCENE),
            scene: scene.clone(),
            loads: Default::default(),
            out: dir.path().join("v"),
            options,
        };
        let name = sigma_m.map_or("sigma_default".to_string(), |s| format!("sigma_{s:e}_m"));
        g.bench_function(name, |b| b.iter(|| assert!(validate(&req, &lab::Silent).unwrap().sessions[0].pass)));
    }
    g.finish();
}

criterion_group!(benches, bench_validate);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
