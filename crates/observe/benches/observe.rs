//! Frames per second of the observer: 10 markers, 5 sections, a slowly
//! moving rod (warm starts from frame to frame).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lie::Vec3;
use observe::{Mode, Observer};
use rod::statics::solve;
use rod::{Loads, Marker, Material, Model, NewtonOptions, PointLoad, Rod};

fn sequence(rod: &Rod, frames: usize) -> Vec<Vec<Option<Vec3>>> {
    let points: Vec<f64> = rod.markers.iter().map(|m| m.arc_m).collect();
    let model = Model::new(rod, &points);
    let mut q = None;
    (0..frames)
        .map(|f| {
            let s = (f as f64 / frames as f64 * std::f64::consts::TAU).sin();
            let mut loads = Loads::gravity();
            loads.point_loads.push(PointLoad {
                x_m: 0.25,
                offset_body_m: Vec3::zeros(),
                force_n: Vec3::new(0.0, 0.01 * s, 0.05 + 0.02 * s),
                moment_nm: Vec3::zeros(),
            });
            let sol = solve(&model, &loads, q.as_ref(), &NewtonOptions::default()).unwrap();
            let g = model.frames(&sol.q);
            q = Some(sol.q);
            rod.markers.iter().map(|m| Some(g.joints[model.joint_at(m.arc_m)].transform_point(&m.offset_body_m))).collect()
        })
        .collect()
}

fn bench_observer(c: &mut Criterion) {
    let mut rod = Rod::uniform_cylinder(0.25, 0.007, Material::from_poisson(2.56e5, 0.45, 1.41e3), 5);
    rod.subsegments_per_section = 4;
    rod.markers = (1..=10).map(|i| Marker { arc_m: 0.025 * i as f64, offset_body_m: Vec3::zeros() }).collect();
    let frames = sequence(&rod, 200);
    let sigma = vec![3e-4; 10];
    let mut g = c.benchmark_group("observer_10_markers_5_sections");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.sample_size(10);
    for (name, mode) in [("hard", Mode::Hard), ("weighted", Mode::Weighted { energy_scale_j: Some(1e-6) })] {
        g.bench_function(format!("{name}_200_frames"), |b| {
            b.iter(|| {
                let mut obs = Observer::new(&rod, mode).unwrap();
                // Settle on the first frame outside the timed loop? No: a
                // session starts cold, so the first frame is part of it.
                for f in &frames {
                    obs.observe(f, &sigma).unwrap();
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_observer);
criterion_main!(benches);
