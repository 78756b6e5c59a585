//! Static solve of the PLS paper's Table II rod from the straight
//! configuration (all 6 strain modes, the paper's 3 sections).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rod::statics::solve;
use rod::{Loads, Model, NewtonOptions, Rod};
use std::path::PathBuf;

fn bench_table_ii(c: &mut Criterion) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/rod/pls-paper-cantilever.toml");
    let rod = Rod::from_file(&path).unwrap();
    let loads = Loads::gravity();
    let opts = NewtonOptions::default();
    for sub in [4, 8] {
        let mut r = rod.clone();
        r.subsegments_per_section = sub;
        let model = Model::new(&r, &[]);
        c.bench_function(&format!("table_ii_static_solve_cosserat_3_sections_{sub}_subsegments"), |b| {
            b.iter(|| solve(black_box(&model), &loads, None, &opts).unwrap())
        });
    }
    let model = Model::new(&rod, &[]);
    c.bench_function("table_ii_model_build", |b| b.iter(|| Model::new(black_box(&rod), &[])));
    c.bench_function("table_ii_residual_and_tangent", |b| {
        let q = solve(&model, &loads, None, &opts).unwrap().q;
        b.iter(|| rod::statics::assemble(&model, &loads, black_box(&q), 1.0, true).unwrap())
    });
}

criterion_group!(benches, bench_table_ii);
criterion_main!(benches);
