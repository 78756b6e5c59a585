//! Static solve of the PLS paper's Table II rod from the straight
//! configuration (all 6 strain modes, the paper's 3 sections).

use criterion::{black_box, criterion_group, Criterion};
use rod::statics::solve;
use rod::{Loads, Model, NewtonOptions, Rod};
use std::path::PathBuf;

#[path = "../../rod/tests/support/tendon_robot.rs"]
mod tendon_robot;

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

/// Cost against the number of strain coordinates: a uniform 1.5 m rod
/// (radius 5 mm, E 2 GPa, 1,200 kg/m^3: w L^3 / EI = 3.2, its tip drops by
/// about a third of its length) under its weight, 4 to 128 sections of 4
/// sub-segments each (30 to 774 coordinates).
fn bench_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("static_solve_scaling");
    g.sample_size(10);
    for sections in [4, 8, 16, 32, 64, 128] {
        let mut rod = Rod::uniform_cylinder(1.5, 0.005, rod::Material::from_poisson(2.0e9, 0.4, 1.2e3), sections);
        rod.subsegments_per_section = 4;
        let model = Model::new(&rod, &[]);
        let loads = Loads::gravity();
        let opts = NewtonOptions::default();
        let s = solve(&model, &loads, None, &opts).unwrap();
        let tip = model.frames(&s.q).joints.last().unwrap().pos;
        eprintln!("{sections} sections: {} coordinates, {} iterations, {} load steps, tip {tip:?}", model.n_dof(), s.iterations, s.load_steps);
        g.bench_function(format!("uniform_1_5_m_{sections}_sections"), |b| b.iter(|| solve(black_box(&model), &loads, None, &opts).unwrap()));
    }
    g.finish();
}

/// The Continuum Robotics Lab's two-segment tendon-driven robot under the
/// four load cases of `scripts/peer/tdcr_cases.cpp`, 40 sections (two
/// between disks) of 16 sub-segments as rodlab's test of it has them
/// (every disk within 4.5 um of their model with the full disk reaction)
/// and of 8 (within 5.2 um), each solve from straight. From the previous
/// case's solution it is no faster (case 3 took 2.3x longer when tried).
/// Their times: `scripts/peer/tdcr-peer.sh --time`.
fn bench_tendon_robot(c: &mut Criterion) {
    // (tensions [N], tip force [N] in their frame: backbone along z).
    let cases: [([f64; 6], [f64; 3]); 4] = [
        ([4.0, 0.0, 0.0, 0.0, 2.0, 0.0], [0.0; 3]),
        ([0.0, 3.0, 0.0, 0.0, 0.0, 0.0], [0.0; 3]),
        ([0.0, 0.0, 0.0, 0.0, 0.0, 3.0], [0.0; 3]),
        ([2.0, 0.0, 1.0, 0.0, 1.5, 0.0], [0.0, 0.1, 0.0]),
    ];
    let opts = NewtonOptions::default();
    let mut g = c.benchmark_group("tdcr_peer_cases");
    g.sample_size(10);
    for sub in [16, 8] {
        let model = Model::new(&tendon_robot::tendon_robot(sub), &[]);
        for (case, (tensions, f)) in cases.iter().enumerate() {
            // rodlab's frame has the backbone along x.
            let loads = Loads::none().with_tensions(tensions).with_tip(0.4, lie::Vec3::new(f[2], f[0], f[1]), lie::Vec3::zeros());
            g.bench_function(format!("{sub}_subsegments_case_{case}"), |b| b.iter(|| solve(black_box(&model), &loads, None, &opts).unwrap()));
        }
    }
    g.finish();
}

criterion_group!(benches, bench_table_ii, bench_scaling, bench_tendon_robot);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
