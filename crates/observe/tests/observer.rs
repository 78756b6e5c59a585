//! The observer recovers the model's own strain from marker positions.

use lie::{Vec3, Vec6};
use observe::{Mode, ObserveError, Observer, Status};
use rand::{rngs::StdRng, Rng, SeedableRng};
use rod::statics::solve;
use rod::{Cable, Loads, Marker, Material, NewtonOptions, Rod};

/// The contact paper's rod shape (steel core omitted), markers along it,
/// every third one on the surface (+z body) where `offsets`.
fn rod_with_markers(n_markers: usize) -> Rod {
    rod_with(n_markers, 3, rod::StrainModes::COSSERAT, false)
}

fn rod_with(n_markers: usize, sections: usize, modes: rod::StrainModes, alternate_offsets: bool) -> Rod {
    let mut rod = Rod::uniform_cylinder(0.25, 0.007, Material::from_poisson(2.56e5, 0.45, 1.41e3), sections).with_modes(modes);
    rod.cross_section = rod::CrossSection::round(rod::Profile::Linear { base_m: 0.0085, tip_m: 0.005 }, rod.cross_section.body);
    rod.subsegments_per_section = 6;
    rod.cables = vec![Cable { inset_m: 0.001, ..Cable::new("c", 1.2, 0.25) }];
    rod.markers = (1..=n_markers)
        .map(|i| {
            let offset = if !alternate_offsets {
                Vec3::zeros()
            } else if i % 2 == 0 {
                Vec3::new(0.0, 0.0, 0.005)
            } else {
                Vec3::new(0.0, 0.005, 0.0)
            };
            Marker { arc_m: 0.25 * i as f64 / n_markers as f64, offset_body_m: offset }
        })
        .collect();
    rod
}

#[derive(Clone, Copy, PartialEq)]
enum Loading {
    /// Gravity, a tip force and a cable, all in the x-z plane.
    PlanarCable,
    /// Gravity and 3-D forces at three markers (one at the tip): loads the
    /// observer's own model can represent.
    MarkerForces,
}

/// A loaded shape from the model itself, and its nodal strains.
fn truth_with(rod: &Rod, scale: f64, loading: Loading) -> (Vec<Vec3>, Vec<Vec6>) {
    let mut rod = rod.clone();
    rod.cables[0].angle_rad = std::f64::consts::FRAC_PI_2;
    let mut loads = match loading {
        Loading::PlanarCable => Loads::gravity().with_tensions(&[0.3 * scale]).with_tip(0.25, Vec3::new(-0.01, 0.0, 0.02) * scale, Vec3::zeros()),
        Loading::MarkerForces => Loads::gravity().with_tensions(&[0.0]),
    };
    if loading == Loading::MarkerForces {
        let last = rod.markers.len() - 1;
        for (k, f) in [(1, Vec3::new(0.0, -0.02, 0.01)), (3, Vec3::new(0.01, 0.015, -0.01)), (last, Vec3::new(-0.005, 0.01, 0.02))] {
            let m = &rod.markers[k];
            loads.point_loads.push(rod::PointLoad {
                x_m: m.arc_m,
                offset_body_m: m.offset_body_m,
                force_n: f * scale,
                moment_nm: Vec3::zeros(),
                follower: false,
            });
        }
    }
    let mut points = loads.points_m();
    points.extend(rod.markers.iter().map(|m| m.arc_m));
    let model = rod::Model::new(&rod, &points);
    let sol = solve(&model, &loads, None, &NewtonOptions { tolerance: 1e-14, ..NewtonOptions::default() }).unwrap();
    let frames = model.frames(&sol.q);
    let markers = rod.markers.iter().map(|m| frames.joints[model.joint_at(m.arc_m)].transform_point(&m.offset_body_m)).collect();
    let strain = model.node_x_m.iter().map(|&x| model.strain_at(x, &sol.q)).collect();
    (markers, strain)
}

/// Largest nodal strain error relative to the strain range: curvatures
/// against the range of all curvature values, stretch/shear against the
/// range of all `Q - [1, 0, 0]` values.
fn strain_error(a: &[Vec6], b: &[Vec6]) -> f64 {
    let mut worst: f64 = 0.0;
    for group in [0..3, 3..6] {
        let vals: Vec<f64> = b.iter().flat_map(|s| group.clone().map(move |c| s[c] - if c == 3 { 1.0 } else { 0.0 })).collect();
        let range = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - vals.iter().cloned().fold(f64::INFINITY, f64::min);
        for (x, y) in a.iter().zip(b) {
            for c in group.clone() {
                worst = worst.max((x[c] - y[c]).abs() / range);
            }
        }
    }
    worst
}

#[test]
fn hard_mode_reproduces_model_shapes() {
    // Cable loads (not forces at markers): recovered when the markers
    // determine the in-plane strain field (2 x 8 coordinates for 3 x 4
    // in-plane nodal strains; the constraints are then redundant). Loads
    // the observer can represent (gravity and forces at markers, one at the
    // tip, 3-D): recovered exactly for 6 to 10 markers.
    let cases = [
        (rod_with(8, 3, rod::StrainModes::COSSERAT, false), Loading::PlanarCable),
        (rod_with(6, 3, rod::StrainModes::COSSERAT, true), Loading::MarkerForces),
        (rod_with(8, 3, rod::StrainModes::COSSERAT, true), Loading::MarkerForces),
        (rod_with(10, 5, rod::StrainModes::COSSERAT, true), Loading::MarkerForces),
    ];
    for (rod, loading) in cases {
        let planar = loading == Loading::PlanarCable;
        let n_markers = rod.markers.len();
        let mut obs = Observer::new(&rod, Mode::Hard).unwrap();
        let scales: &[f64] = if planar { &[0.5, 0.75, 1.0] } else { &[0.5, 1.0, 1.5] };
        for &scale in scales {
            let (markers, strain) = truth_with(&rod, scale, loading);
            let o = obs.observe(&markers.iter().map(|p| Some(*p)).collect::<Vec<_>>(), &vec![1e-3; n_markers]).unwrap();
            assert_eq!(o.status, Status::Ok);
            assert!(o.marker_residual_m < 1e-9, "residual {}", o.marker_residual_m);
            let err = strain_error(&o.nodal_strain, &strain);
            println!(
                "{n_markers} markers, {} sections, {}, load x{scale}: nodal strain error {:.3} % of range, {} Newton iterations",
                rod.section_lengths_m.len(),
                if planar { "planar, gravity + tip force + cable" } else { "3-D, gravity + forces at markers" },
                err * 100.0,
                o.iterations
            );
            assert!(err < 0.02, "{n_markers} markers, scale {scale}: {err}");
        }
    }
}

/// A standard normal sample.
fn gauss(rng: &mut StdRng) -> f64 {
    rand_distr::Distribution::sample(&rand_distr::StandardNormal, rng)
}

#[test]
fn weighted_mode_beats_hard_mode_on_noisy_markers() {
    let rod = rod_with(6, 3, rod::StrainModes::COSSERAT, true);
    let (markers, strain) = truth_with(&rod, 1.0, Loading::MarkerForces);
    let sigma = 3e-4;
    let (mut hard_total, mut weighted_total) = (0.0, 0.0);
    for seed in 0..8 {
        let mut rng = StdRng::seed_from_u64(seed);
        let noisy: Vec<Option<Vec3>> = markers.iter().map(|p| Some(p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * sigma)).collect();
        let mut hard = Observer::new(&rod, Mode::Hard).unwrap();
        let mut weighted = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
        let oh = hard.observe(&noisy, &[sigma; 6]).unwrap();
        let ow = weighted.observe(&noisy, &[sigma; 6]).unwrap();
        assert_eq!(oh.status, Status::Ok);
        assert_eq!(ow.status, Status::Ok);
        let (eh, ew) = (strain_error(&oh.nodal_strain, &strain), strain_error(&ow.nodal_strain, &strain));
        println!("seed {seed}: hard {:.2} %, weighted {:.2} % (energy scale {:.2e} J)", eh * 100.0, ew * 100.0, weighted.energy_scale_j().unwrap());
        hard_total += eh;
        weighted_total += ew;
    }
    assert!(weighted_total < hard_total, "weighted {weighted_total} vs hard {hard_total}");
}

#[test]
fn missing_markers_are_handled_or_reported() {
    let rod = rod_with(8, 3, rod::StrainModes::COSSERAT, true);
    let (markers, strain) = truth_with(&rod, 1.0, Loading::MarkerForces);
    let mut measured: Vec<Option<Vec3>> = markers.iter().map(|p| Some(*p)).collect();
    let mut weighted = Observer::new(&rod, Mode::Weighted { energy_scale_j: Some(1e-7) }).unwrap();
    let full = weighted.observe(&measured, &[3e-4; 8]).unwrap();
    measured[3] = None;
    let o = weighted.observe(&measured, &[3e-4; 8]).unwrap();
    assert_eq!(o.status, Status::MissingMarkers(1));
    assert!(strain_error(&o.nodal_strain, &strain) < 2.0 * strain_error(&full.nodal_strain, &strain) + 0.02);
    let mut hard = Observer::new(&rod, Mode::Hard).unwrap();
    let o = hard.observe(&measured, &[3e-4; 8]).unwrap();
    assert_eq!(o.status, Status::MissingMarkers(1));
    assert_eq!(o.status.label(), "missing_markers:1");
    assert!(o.marker_residual_m < 1e-9);
}

#[test]
fn bad_configurations_are_refused() {
    let mut rod = rod_with_markers(10);
    assert!(matches!(Observer::new(&rod, Mode::Hard), Err(ObserveError::TooManyConstraints { constraints: 30, dofs: 24 })));
    assert!(Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).is_ok());
    rod.markers.clear();
    assert_eq!(Observer::new(&rod, Mode::Hard).err(), Some(ObserveError::NoMarkers));
    let rod = rod_with_markers(6);
    let mut obs = Observer::new(&rod, Mode::Hard).unwrap();
    assert!(matches!(obs.observe(&[None::<Vec3>; 3], &[1e-3; 3]), Err(ObserveError::MarkerCount { .. })));
}

/// A recording that starts at rest and then bends (cable pulled, tip
/// pushed): the energy scale chosen on the most deformed frame makes every
/// later frame follow its markers, while a scale set on the resting first
/// frame runs to the lower bound and is reported.
#[test]
fn rest_first_frame_then_bending_frames_follow_their_markers() {
    let rod = rod_with_markers(8);
    let sigma = vec![3e-4; 8];
    let mut rng = StdRng::seed_from_u64(7);
    let mut noisy = |m: &[Vec3]| -> Vec<Option<Vec3>> { m.iter().map(|p| Some(p + Vec3::from_fn(|_, _| rng.gen_range(-1.0..1.0) * 2e-4))).collect() };
    // Frame 0 at rest under gravity, then the load ramps up.
    let scales = [0.0, 0.25, 0.5, 0.75, 1.0];
    let truths: Vec<(Vec<Vec3>, Vec<Vec6>)> = scales.iter().map(|&s| truth_with(&rod, s, Loading::PlanarCable)).collect();
    let frames: Vec<(lie::Pose, Vec<Option<Vec3>>)> = truths.iter().map(|(m, _)| (rod.base, noisy(m))).collect();

    // Scale chosen on the first (resting) frame: the lower bound, with a warning.
    let mut first = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
    first.observe(&frames[0].1, &sigma).unwrap();
    let choice = first.first_frame_choice().unwrap();
    assert_eq!(choice.at_bound, Some(observe::ScaleBound::Lower), "{choice:?}");
    assert!(choice.warning().unwrap().contains("lower bound"));
    let mut worst_first = 0.0f64;
    for (f, (markers, _)) in frames.iter().zip(&truths).skip(1) {
        let o = first.observe(&f.1, &sigma).unwrap();
        let pos = first.marker_positions(&o.q);
        worst_first = worst_first.max((pos.iter().zip(markers).map(|(p, m)| (p - m).norm_squared()).sum::<f64>() / 8.0).sqrt());
    }

    // Scale chosen on the most deformed frame.
    let mut obs = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
    let inputs: Vec<observe::FrameInput> = frames
        .iter()
        .map(|(base, markers)| observe::FrameInput { base: *base, tip: None, markers: markers.iter().map(|m| m.map(rod::Sighting::point)).collect() })
        .collect();
    let choice = obs.choose_energy_scale(&inputs, &sigma).unwrap();
    assert_eq!(choice.frame, 4, "the most bent frame");
    assert_eq!(choice.at_bound, None, "{choice:?}");
    let mut worst = 0.0f64;
    for (k, (f, (markers, _))) in frames.iter().zip(&truths).enumerate() {
        let o = obs.observe(&f.1, &sigma).unwrap();
        assert_eq!(o.status, Status::Ok);
        if k > 0 {
            let pos = obs.marker_positions(&o.q);
            let rms = (pos.iter().zip(markers).map(|(p, m)| (p - m).norm_squared()).sum::<f64>() / 8.0).sqrt();
            worst = worst.max(rms);
        }
    }
    println!(
        "bending frames follow their markers within {:.2} mm RMS (scale on the most deformed frame); with the scale set on the resting first frame: {:.2} mm",
        1e3 * worst,
        1e3 * worst_first
    );
    // Within the noise (0.2 mm per coordinate), and far closer than the
    // observer whose springs were calibrated at rest.
    assert!(worst < 6e-4, "{worst}");
    assert!(worst_first > 5.0 * worst, "{worst_first} vs {worst}");

    // One frame at a time (the live view): the deformation grows with the
    // load, and the scale chosen on the most deformed frame alone is the
    // one chosen among all.
    let mut live = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
    let deformation_m: Vec<f64> = frames.iter().map(|(base, m)| live.deformation_rms_m(base, m).unwrap()).collect();
    assert!(deformation_m.windows(2).all(|w| w[1] > w[0]), "{deformation_m:?}");
    assert!(deformation_m[0] < 1e-3 && deformation_m[4] > 1e-2, "at rest: the noise; bent: centimetres: {deformation_m:?}");
    let alone = live.choose_energy_scale_on(&frames[4].0, &frames[4].1, &sigma);
    assert_eq!(alone.energy_scale_j, choice.energy_scale_j);
    assert_eq!(live.energy_scale_j(), Some(choice.energy_scale_j));
}

/// A cluster of markers on the tip section (three on its rim, as a motion
/// capture rigid body) lets the observer see the twist that markers on the
/// centre line cannot: a couple at the tip twists the rod, the hard mode
/// recovers every nodal strain (torsion included) with the cluster, and
/// misses the torsion without it.
#[test]
fn a_marker_cluster_sees_the_twist_the_centre_line_cannot() {
    let mut rod = rod_with(5, 3, rod::StrainModes::COSSERAT, false);
    for m in &mut rod.markers {
        m.arc_m *= 0.8; // centre-line markers at 0.04 .. 0.2 m
    }
    let rim = 0.005;
    let cluster = [Vec3::new(0.0, rim, 0.0), Vec3::new(0.0, -rim, 0.0), Vec3::new(0.0, 0.0, rim)];
    let mut with_cluster = rod.clone();
    with_cluster.markers.extend(cluster.iter().map(|o| Marker { arc_m: 0.25, offset_body_m: *o }));
    // A couple about the axis at the tip (+-z forces on the +-y rim), a
    // sideways tip force, gravity.
    let mut loads = Loads::gravity().with_tensions(&[0.0]);
    for (o, f) in [(cluster[0], Vec3::new(0.0, 0.0, 0.02)), (cluster[1], Vec3::new(0.0, 0.0, -0.02)), (cluster[2], Vec3::new(0.0, 0.01, 0.0))] {
        loads.point_loads.push(rod::PointLoad { x_m: 0.25, offset_body_m: o, force_n: f, moment_nm: Vec3::zeros(), follower: false });
    }
    let mut points = loads.points_m();
    points.extend(with_cluster.markers.iter().map(|m| m.arc_m));
    let model = rod::Model::new(&with_cluster, &points);
    let sol = solve(&model, &loads, None, &NewtonOptions { tolerance: 1e-14, ..NewtonOptions::default() }).unwrap();
    let frames = model.frames(&sol.q);
    let truth: Vec<Vec6> = model.node_x_m.iter().map(|&x| model.strain_at(x, &sol.q)).collect();
    let twist = truth.iter().map(|s| s[0].abs()).fold(0.0, f64::max);
    assert!(twist > 0.2, "the couple twists the rod: {twist} rad/m");
    let seen =
        |r: &Rod| -> Vec<Option<Vec3>> { r.markers.iter().map(|m| Some(frames.joints[model.joint_at(m.arc_m)].transform_point(&m.offset_body_m))).collect() };
    let torsion_error = |strain: &[Vec6]| strain.iter().zip(&truth).map(|(a, b)| (a[0] - b[0]).abs()).fold(0.0, f64::max) / twist;
    let mut obs = Observer::new(&with_cluster, Mode::Hard).unwrap();
    let o = obs.observe(&seen(&with_cluster), &vec![1e-3; with_cluster.markers.len()]).unwrap();
    assert_eq!(o.status, Status::Ok);
    let with = torsion_error(&o.nodal_strain);
    let all = strain_error(&o.nodal_strain, &truth);
    let mut obs = Observer::new(&rod, Mode::Hard).unwrap();
    let o = obs.observe(&seen(&rod), &vec![1e-3; rod.markers.len()]).unwrap();
    let without = torsion_error(&o.nodal_strain);
    println!(
        "twist up to {twist:.3} rad/m: torsion error with the tip cluster {:.3} %, every strain {:.3} % of range; centre line only {:.1} %",
        100.0 * with,
        100.0 * all,
        100.0 * without
    );
    assert!(with < 0.02 && all < 0.02, "with the cluster: torsion {with}, all {all}");
    assert!(without > 0.5, "the centre line alone cannot see the twist: {without}");
}

#[test]
fn a_neo_hookean_rod_s_large_strain_shapes_are_observed_under_its_own_law() {
    // Forces at the markers (what the observer's model represents): its
    // own law reproduces the truth; the linear law, at these strains, does
    // not quite.
    let mut rod = rod_with(8, 3, rod::StrainModes::COSSERAT, true);
    rod.elastic_law = rod::ElasticLaw::NEO_HOOKEAN;
    let linear = Rod { elastic_law: rod::ElasticLaw::Linear, ..rod.clone() };
    for scale in [4.0, 8.0] {
        let (markers, strain) = truth_with(&rod, scale, Loading::MarkerForces);
        let seen: Vec<Option<Vec3>> = markers.iter().map(|p| Some(*p)).collect();
        let own = Observer::new(&rod, Mode::Hard).unwrap().observe(&seen, &[1e-3; 8]).unwrap();
        let lin = Observer::new(&linear, Mode::Hard).unwrap().observe(&seen, &[1e-3; 8]).unwrap();
        let (e_own, e_lin) = (strain_error(&own.nodal_strain, &strain), strain_error(&lin.nodal_strain, &strain));
        let largest = strain.iter().map(|s| s[3] - 1.0).fold(0.0f64, |a, b| a.max(b.abs()));
        let curvature = strain.iter().map(|s| s.fixed_rows::<3>(0).norm()).fold(0.0, f64::max);
        println!(
            "load x{scale}: largest curvature {curvature:.1} 1/m (surface strain ~{:.0} %), stretch {:.1} %; nodal strain error {:.4} % under its law, {:.3} % under the linear law",
            100.0 * curvature * 0.0085,
            100.0 * largest,
            100.0 * e_own,
            100.0 * e_lin
        );
        assert_eq!(own.status, Status::Ok);
        assert!(e_own < 1e-4, "{e_own}");
        assert!(e_lin > 10.0 * e_own, "{e_lin} vs {e_own}");
    }
}

/// The weighted observer's Broyden steps near each frame's solution (its
/// default) give Newton's answers: a rod loaded ever harder, frame after
/// frame (warm starts), markers with 0.3 mm of noise; every frame's strains
/// within 1e-9 of the strain range and its marker residual within 1e-12 m.
#[test]
fn weighted_frames_are_the_same_with_and_without_broyden_steps() {
    let rod = rod_with(10, 5, rod::StrainModes::COSSERAT, true);
    let sigma = vec![3e-4; rod.markers.len()];
    let mut rng = StdRng::seed_from_u64(11);
    let frames: Vec<(Vec<Option<Vec3>>, Vec<Vec6>)> = (1..=12)
        .map(|f| {
            let (markers, strain) = truth_with(&rod, 0.15 * f as f64, Loading::MarkerForces);
            (markers.iter().map(|p| Some(p + Vec3::from_fn(|_, _| 3e-4 * gauss(&mut rng)))).collect(), strain)
        })
        .collect();
    let mode = Mode::Weighted { energy_scale_j: Some(1e-6) };
    let mut fast = Observer::new(&rod, mode).unwrap();
    let mut newton = Observer::new(&rod, mode).unwrap().with_quasi_newton(false);
    let (mut iterations, mut newton_iterations) = (0, 0);
    for (f, (markers, truth)) in frames.iter().enumerate() {
        let a = fast.observe(markers, &sigma).unwrap();
        let b = newton.observe(markers, &sigma).unwrap();
        let difference = strain_error(&a.nodal_strain, &b.nodal_strain);
        assert!(difference < 1e-9, "frame {f}: strains differ by {difference:.2e} of their range");
        assert!((a.marker_residual_m - b.marker_residual_m).abs() < 1e-12, "frame {f}");
        // And both observe the loaded rod (not merely each other).
        assert!(strain_error(&a.nodal_strain, truth) < 0.2, "frame {f}: {}", strain_error(&a.nodal_strain, truth));
        iterations += a.iterations;
        newton_iterations += b.iterations;
    }
    assert!(iterations > newton_iterations, "Broyden steps taken: {iterations} iterations against Newton's {newton_iterations}");
}

/// Markers one camera alone saw (rays from its centre through them) are
/// used as rays, not dropped: the observed rod passes through each ray,
/// and those markers and the strain come out closer to the truth than
/// with the markers left out (hard mode on exact data; weighted mode on
/// noisy data, over seeds).
#[test]
fn markers_seen_by_one_camera_are_used_as_rays() {
    let rod = rod_with(8, 3, rod::StrainModes::COSSERAT, true);
    let (markers, strain) = truth_with(&rod, 1.0, Loading::MarkerForces);
    // A camera 0.6 m from the rod's middle, 30 degrees off its side.
    let camera = Vec3::new(0.125 + 0.6 * 0.5, -0.6 * 0.866, 0.0);
    let one_camera = [3, 7];
    let as_rays = |measured: &[Option<Vec3>]| -> Vec<Option<rod::Sighting>> {
        measured
            .iter()
            .enumerate()
            .map(|(i, p)| p.map(|p| if one_camera.contains(&i) { rod::Sighting::ray(camera, p - camera).unwrap() } else { rod::Sighting::point(p) }))
            .collect()
    };
    let dropped = |measured: &[Option<Vec3>]| -> Vec<Option<Vec3>> {
        measured.iter().enumerate().map(|(i, p)| if one_camera.contains(&i) { None } else { *p }).collect()
    };
    let off_m = |obs: &Observer, o: &observe::Observation| -> f64 {
        let at = obs.marker_positions(&o.q);
        one_camera.iter().map(|&i| (at[i] - markers[i]).norm()).fold(0.0, f64::max)
    };
    let exact: Vec<Option<Vec3>> = markers.iter().map(|p| Some(*p)).collect();
    // Hard mode, exact data.
    let mut hard = Observer::new(&rod, Mode::Hard).unwrap();
    let with_rays = hard.observe(&as_rays(&exact), &[1e-3; 8]).unwrap();
    assert_eq!(with_rays.status, Status::Ok);
    assert!(with_rays.marker_residual_m < 1e-9, "the rays are met: {}", with_rays.marker_residual_m);
    let ray_off = off_m(&hard, &with_rays);
    let ray_err = strain_error(&with_rays.nodal_strain, &strain);
    let mut hard = Observer::new(&rod, Mode::Hard).unwrap();
    let without = hard.observe(&dropped(&exact), &[1e-3; 8]).unwrap();
    let (drop_off, drop_err) = (off_m(&hard, &without), strain_error(&without.nodal_strain, &strain));
    println!(
        "hard: with rays the two markers off by {:.2e} m, strain {:.2} %; dropped {:.2e} m, {:.2} %",
        ray_off,
        ray_err * 100.0,
        drop_off,
        drop_err * 100.0
    );
    assert!(ray_off < 0.5 * drop_off && ray_err < drop_err, "rays must inform the fit");
    // Weighted mode, noisy data.
    let sigma = 3e-4;
    let (mut ray_total, mut drop_total) = (0.0, 0.0);
    for seed in 0..6 {
        let mut rng = StdRng::seed_from_u64(seed);
        let noisy: Vec<Option<Vec3>> = markers.iter().map(|p| Some(p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * sigma)).collect();
        let mut w = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
        let o = w.observe(&as_rays(&noisy), &[sigma; 8]).unwrap();
        assert_eq!(o.status, Status::Ok);
        ray_total += off_m(&w, &o);
        let mut w = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).unwrap();
        let o = w.observe(&dropped(&noisy), &[sigma; 8]).unwrap();
        drop_total += off_m(&w, &o);
    }
    println!("weighted, 6 seeds: the two markers off by {:.3} mm with rays, {:.3} mm dropped (mean)", ray_total / 6e-3, drop_total / 6e-3);
    assert!(ray_total < 0.5 * drop_total);
}

/// A cord looped between two clamps, pushed sideways at its middle: the
/// energy scale is chosen on its held shape. The discrepancy principle is
/// met (chi^2 of the markers at their sigma near their coordinate count),
/// not a bound of the search, and the frame is then observed within its
/// noise. From the straight reference (the tip 0.3 m from its clamp) the
/// search's solves failed or found another shape: it ended at its upper
/// bound with chi^2 in the millions.
#[test]
fn a_held_rods_scale_is_chosen_on_its_held_shape() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rod/clamped-clamped-cable.toml"));
    let mut cord = Rod::from_file(path).unwrap();
    cord.subsegments_per_section = 4;
    let up = lie::exp(&Vec6::new(0.0, -std::f64::consts::FRAC_PI_2, 0.0, 0.0, 0.0, 0.0)).rot;
    let hold = rod::held::TipHold::clamped(Vec3::new(0.3, 0.0, 0.0), up);
    let push = rod::PointLoad { x_m: 0.75, offset_body_m: Vec3::zeros(), force_n: Vec3::new(0.0, 0.05, 0.0), moment_nm: Vec3::zeros(), follower: false };
    let loads = Loads { point_loads: vec![push], ..Loads::gravity() };
    let model = rod::statics::model_for(&cord, &loads);
    let truth = rod::held::solve_held(&model, &loads, hold, None, &NewtonOptions::default()).unwrap().solution.q;
    let frames = model.frames(&truth);
    let sigma_m = 2e-4;
    let mut rng = StdRng::seed_from_u64(11);
    let measured: Vec<Option<Vec3>> = cord
        .markers
        .iter()
        .map(|m| Some(frames.joints[model.joint_at(m.arc_m)].transform_point(&m.offset_body_m) + Vec3::from_fn(|_, _| rng.gen_range(-1.0..1.0) * sigma_m)))
        .collect();
    let sigma = vec![sigma_m; cord.markers.len()];

    let mut obs = Observer::new(&cord, Mode::Weighted { energy_scale_j: None }).unwrap();
    obs.set_tip_hold(hold);
    let choice = obs.choose_energy_scale_on(&cord.base, &measured, &sigma);
    assert_eq!(choice.at_bound, None, "{choice:?}");
    let o = obs.observe(&measured, &sigma).unwrap();
    assert_eq!(o.status, Status::Ok);
    // The principle puts chi^2 at the 15 coordinates: each marker off by
    // sqrt(3) sigma (RMS), the noise itself being sigma.
    let principle_m = 3f64.sqrt() * sigma_m;
    assert!((o.marker_residual_m / principle_m - 1.0).abs() < 0.1, "{} m for {principle_m} m", o.marker_residual_m);
    println!("held cord: scale {:.3e} J, markers met within {:.3} mm RMS", choice.energy_scale_j, o.marker_residual_m * 1e3);
}
