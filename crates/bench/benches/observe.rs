//! Frames per second of the observer: 10 markers, 5 sections, a slowly
//! moving rod (warm starts from frame to frame).

use criterion::{criterion_group, Criterion, Throughput};
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
                follower: false,
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

/// The weighted observer on markers with 0.3 mm of noise, told that noise
/// (the default), 2e-5 m or 1e-6 m: a sigma far below the noise is reached
/// by continuation from larger ones, and should cost at most a few times
/// the matched sigma's time (measured: see docs/results.md).
fn bench_sigma_below_the_noise(c: &mut Criterion) {
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};
    let mut rod = Rod::uniform_cylinder(0.25, 0.007, Material::from_poisson(2.56e5, 0.45, 1.41e3), 5);
    rod.subsegments_per_section = 4;
    rod.markers = (1..=10).map(|i| Marker { arc_m: 0.025 * i as f64, offset_body_m: Vec3::zeros() }).collect();
    let noise_m = 3e-4;
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let normal = Normal::new(0.0, noise_m).unwrap();
    let frames: Vec<Vec<Option<Vec3>>> = sequence(&rod, 20)
        .into_iter()
        .map(|f| f.into_iter().map(|p| p.map(|p| p + Vec3::new(normal.sample(&mut rng), normal.sample(&mut rng), normal.sample(&mut rng)))).collect())
        .collect();
    let mut g = c.benchmark_group("weighted_observer_noisy_markers");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.sample_size(10);
    for sigma_m in [noise_m, 2e-5, 1e-6] {
        let sigma = vec![sigma_m; 10];
        g.bench_function(format!("sigma_{sigma_m:e}_m_20_frames"), |b| {
            b.iter(|| {
                let mut obs = Observer::new(&rod, Mode::Weighted { energy_scale_j: Some(1e-6) }).unwrap();
                for f in &frames {
                    obs.observe(f, &sigma).unwrap();
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_observer, bench_sigma_below_the_noise);
// As the `rodlab` binary and the Python module: the allocator keeps freed
// megabytes for the next solve.
rod::criterion_main_retaining_memory!(benches);
