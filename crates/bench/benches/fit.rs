//! The 6-experiment fit of the shipped PLS-paper data (one start from the
//! rod file's material, no nuisance parameters).

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

criterion_group!(benches, bench_fit);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
