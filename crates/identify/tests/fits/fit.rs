//! Identification: exact sensitivities, synthetic recovery with coverage of
//! the confidence intervals, identifiability warnings, the shipped data.

use identify::data::write_experiments;
use identify::fit::cross_validate;
use identify::{fit, leave_one_out, predict, predict_with_band, read_experiments, Experiment, FitOptions, Layout, Measurement, Problem, Values};
use lie::Vec3;
use nalgebra::DVector;
use rand::{rngs::StdRng, SeedableRng};
use rod::Rod;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn arm() -> Rod {
    Rod::from_file(&root().join("configs/rod/pls-cable-arm.toml")).unwrap()
}

const TRUTH: Values = Values {
    e_pa: 6.0e5,
    g_pa: 2.1e5,
    rho_kg_m3: 1.2e3,
    translation_m: Vec3::new(0.0, 0.0, 0.0),
    pitch_rad: 0.0,
    cable_offset_m: 0.0,
    radius_scale: 1.0,
    cable_offsets_m: Vec::new(),
    cable_angles_rad: Vec::new(),
    clamp_angles_rad: Vec::new(),
    friction_mu: None,
};

/// A marker on the centre line at `arc_m`, measured with `sigma_m` (its
/// position filled in by the caller).
fn marker(arc_m: f64, sigma_m: f64) -> Measurement {
    Measurement { arc_m, offset_body_m: Vec3::zeros(), pos_m: Vec3::zeros(), sigma_m, arc_sigma_m: 0.0, ray: None }
}

/// A standard normal sample.
fn gauss(rng: &mut StdRng) -> f64 {
    rand_distr::Distribution::sample(&rand_distr::StandardNormal, rng)
}

/// Cable experiments on the paper-like arm, tip plus a mid marker.
fn synthetic(truth: &Values, noise_m: f64, seed: u64) -> Vec<Experiment> {
    synthetic_on(&arm(), truth, noise_m, noise_m.max(1e-3), seed)
}

/// The same experiments made on `rod` (the truth's geometry), measured with
/// `noise_m` of noise and reported with standard deviation `sigma_m`.
fn synthetic_on(rod: &Rod, truth: &Values, noise_m: f64, sigma_m: f64, seed: u64) -> Vec<Experiment> {
    let inputs: [[f64; 4]; 6] =
        [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.98], [0.98, 0.0, 0.0, 1.96], [0.0, 0.0, 0.0, 1.96], [1.96, 0.0, 0.0, 0.98], [0.0, 0.98, 0.98, 0.0]];
    let mut rng = StdRng::seed_from_u64(seed);
    inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut e = Experiment::new(format!("{}", i + 1), t.to_vec(), Vec3::zeros(), [0.1, 0.2].iter().map(|&x| marker(x, sigma_m)).collect());
            let (p, _) = predict(rod, &e, truth).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(p) {
                m.pos_m = p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * noise_m;
            }
            e
        })
        .collect()
}

/// Experiment `k` predicted with its 95 % band by a fit on the others.
fn held_out_band(rod: &Rod, exps: &[Experiment], k: usize, opts: &FitOptions) -> (identify::fit::Prediction, identify::Fit) {
    let rest: Vec<Experiment> = exps.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, e)| e.clone()).collect();
    let f = fit(rod, &rest, opts, |_| {}).unwrap();
    let p = predict_with_band(rod, &exps[k], &f.values, &f.uncertainty()).unwrap();
    (p, f)
}

/// Per parameter: the largest difference between the Jacobian's column and
/// central differences of the residual (step 1e-6 in the log-parameter),
/// and the largest entry of the differences.
fn jacobian_errors(problem: &Problem, p: &DVector<f64>, j: nalgebra::DMatrix<f64>) -> Vec<(usize, f64, f64)> {
    (0..p.len())
        .map(|c| {
            let e = 1e-6;
            let mut pp = p.clone();
            pp[c] += e;
            let mut pm = p.clone();
            pm[c] -= e;
            let fd: DVector<f64> = (problem.evaluate(&pp, false).unwrap().residual - problem.evaluate(&pm, false).unwrap().residual) / (2.0 * e);
            (c, (&fd - j.column(c)).amax(), fd.amax())
        })
        .collect()
}

#[test]
fn jacobian_matches_finite_differences() {
    let rod = arm();
    let exps = synthetic(&TRUTH, 0.0, 1);
    let layout = Layout::all(rod.cables.len());
    let problem = Problem::new(&rod, &exps, layout, &TRUTH);
    let v = Values {
        translation_m: Vec3::new(0.001, -0.002, 0.003),
        pitch_rad: 0.05,
        cable_offset_m: 0.003,
        radius_scale: 1.1,
        cable_offsets_m: vec![0.001, -0.0005, 0.0, 0.0015],
        cable_angles_rad: vec![0.02, -0.01, 0.0, 0.03],
        ..TRUTH
    };
    let p = problem.params(&v);
    let ev = problem.evaluate(&p, true).unwrap();
    for (c, err, scale) in jacobian_errors(&problem, &p, ev.jacobian.unwrap()) {
        assert!(err <= 1e-5 * scale.max(1e-3), "column {c}: {err} of {scale}");
    }
}

#[test]
fn noise_free_data_recovers_the_truth() {
    let rod = arm();
    let exps = synthetic(&TRUTH, 0.0, 1);
    let f = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    for (got, want) in [(f.e_pa.value, TRUTH.e_pa), (f.g_pa.value, TRUTH.g_pa), (f.rho_kg_m3.value, TRUTH.rho_kg_m3)] {
        assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
    }
    println!("noise-free: {} LM iterations over {} starts, {} static solves, {:.3} s", f.iterations, f.starts.len(), f.static_solves, f.wall_time_s);
}

#[test]
fn confidence_intervals_cover_the_truth() {
    let rod = arm();
    let mut e_in = 0;
    let mut g_in = 0;
    let mut rho_in = 0;
    let seeds = 50;
    for seed in 0..seeds {
        let exps = synthetic(&TRUTH, 1e-3, 100 + seed);
        let opts = FitOptions { starts: vec![[TRUTH.e_pa * 1.5, TRUTH.g_pa * 0.7, TRUTH.rho_kg_m3 * 0.8]], ..FitOptions::default() };
        let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
        e_in += (f.e_pa.ci95_low <= TRUTH.e_pa && TRUTH.e_pa <= f.e_pa.ci95_high) as usize;
        g_in += (f.g_pa.ci95_low <= TRUTH.g_pa && TRUTH.g_pa <= f.g_pa.ci95_high) as usize;
        rho_in += (f.rho_kg_m3.ci95_low <= TRUTH.rho_kg_m3 && TRUTH.rho_kg_m3 <= f.rho_kg_m3.ci95_high) as usize;
    }
    println!("95 % CI coverage over {seeds} seeds: E {e_in}, G {g_in}, rho {rho_in}");
    assert!(e_in >= 45 && g_in >= 45 && rho_in >= 45, "E {e_in}/50, G {g_in}/50, rho {rho_in}/50");
}

/// Prediction bands hold: fit on five experiments, predict the sixth with
/// its 95 % band (parameter covariance through the exact sensitivities
/// plus the noise of a new measurement); the measured tip lies inside the
/// 95 % ellipsoid (chi-square, 3 dof) in at least 90 % of the held-out
/// experiments, over 8 noise seeds. The per-coordinate half-widths are the
/// ellipsoid's shadows times t/chi, so the box holds at least as often.
#[test]
fn prediction_bands_cover_held_out_experiments() {
    let rod = arm();
    // F(3, 27) 95 % point (5 experiments x 2 points x 3 coordinates - 3 parameters).
    const F_3_27_95: f64 = 2.960_351;
    let (mut inside, mut inside_box, mut total) = (0, 0, 0);
    for seed in 0..16 {
        let exps = synthetic(&TRUTH, 1e-3, 300 + seed);
        for k in 0..exps.len() {
            let opts = FitOptions { starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..FitOptions::default() };
            let (p, f) = held_out_band(&rod, &exps, k, &opts);
            let tip = exps[k].measurements.len() - 1;
            let d = exps[k].measurements[tip].pos_m - p.points_m[tip];
            let c = p.covariance_m2[tip];
            let d2 = (d.transpose() * c.try_inverse().unwrap() * d)[(0, 0)];
            assert_eq!(f.dof, 27);
            inside += (d2 / 3.0 <= F_3_27_95) as usize;
            inside_box += (0..3).all(|a| d[a].abs() <= p.half_width_m[tip][a]) as usize;
            total += 1;
            // The band is about the size of the noise and the fit's spread (1 mm data).
            assert!(p.half_width_m[tip].iter().all(|h| *h > 1e-3 && *h < 1e-2), "{:?}", p.half_width_m[tip]);
        }
    }
    println!("held-out tips inside the 95 % prediction ellipsoid: {inside}/{total}, inside the per-coordinate bands: {inside_box}/{total}");
    assert!(inside as f64 >= 0.9 * total as f64, "{inside}/{total}");
}

#[test]
fn gravity_only_data_warns_that_only_ratios_are_identifiable() {
    let rod = arm();
    let mut exps = synthetic(&TRUTH, 0.0, 1);
    exps.retain(|e| e.tensions_n.iter().all(|t| *t == 0.0));
    // Two gravity-only experiments: same loads, different markers.
    let mut second = exps[0].clone();
    second.id = "1b".into();
    second.measurements.truncate(1);
    exps.push(second);
    let f = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    assert!(f.warnings.iter().any(|w| w.contains("E/rho")), "{:?}", f.warnings);
    assert!(!f.layout.fit_rho);
    // E/rho is still right.
    let ratio = f.e_pa.value / f.rho_kg_m3.value;
    assert!((ratio / (TRUTH.e_pa / TRUTH.rho_kg_m3) - 1.0).abs() < 1e-5, "{ratio}");
}

#[test]
fn shipped_paper_data_fit_converges_from_several_starts() {
    let rod = arm();
    let exps = read_experiments(&root().join("datasets/pls-cable-arm"), 4).unwrap();
    assert_eq!(exps.len(), 6);
    let f = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    let agreeing =
        f.starts.iter().filter(|s| s.converged && (s.e_pa / f.e_pa.value - 1.0).abs() < 1e-3 && (s.rho_kg_m3 / f.rho_kg_m3.value - 1.0).abs() < 1e-3).count();
    println!(
        "paper data: E {:.4e} [{:.3e}, {:.3e}] Pa, G {:.4e} Pa, rho {:.4e} kg/m^3, rms {:.2} mm, errors {:?}, warnings {:?}",
        f.e_pa.value, f.e_pa.ci95_low, f.e_pa.ci95_high, f.g_pa.value, f.rho_kg_m3.value, f.rms_error_mm, f.errors_mm, f.warnings
    );
    for s in &f.starts {
        println!("  start E {:.2e}: -> E {:.4e} G {:.4e} rho {:.4e} cost {:.6e} ({})", s.start_e_pa, s.e_pa, s.g_pa, s.rho_kg_m3, s.cost, s.note);
    }
    assert!(agreeing >= 3, "only {agreeing} starts reach the optimum");
    let loo = leave_one_out(&rod, &exps, &f, &FitOptions::default(), |_| {});
    assert_eq!(loo.len(), 6);
    // docs/results.md's leave-one-out predictions (mm, to 0.01 mm); each held-out
    // experiment is predicted no better than when it was fitted.
    let readme = [7.11, 8.38, 13.91, 7.49, 3.58, 6.45];
    for ((l, want), fitted) in loo.iter().zip(readme).zip(&f.errors_mm) {
        println!("  LOO {}: {:.2} mm (fitted {:.2} mm)", l.experiment, l.errors_mm[0], fitted[0]);
        assert!((l.errors_mm[0] - want).abs() < 0.006, "LOO {}: {} mm vs docs/results.md {want} mm", l.experiment, l.errors_mm[0]);
        assert!(l.errors_mm[0] >= fitted[0] - 1e-9);
    }
}

/// The shipped paper data with the most flexible variant's options (frame,
/// offset and angle per cable, the rod file's priors).
fn paper_data_per_cable() -> (Rod, Vec<Experiment>, FitOptions) {
    let exps = read_experiments(&root().join("datasets/pls-cable-arm"), 4).unwrap();
    let opts = FitOptions {
        translation: true,
        pitch: true,
        cable_offset_each_prior: Some((0.0, 0.005)),
        cable_angle_each_prior: Some((0.0, 5f64.to_radians())),
        ..FitOptions::default()
    };
    (arm(), exps, opts)
}

/// Prediction bands on the real arm: the most flexible variant of the
/// shipped paper data (frame, offset and angle per cable), fitted on five
/// experiments, predicts the sixth with its 95 % band: every measured tip
/// inside its per-coordinate band (docs/results.md).
#[test]
fn shipped_paper_data_held_out_tips_fall_in_their_prediction_bands() {
    let (rod, exps, opts) = paper_data_per_cable();
    let full = fit(&rod, &exps, &opts, |_| {}).unwrap();
    let one_start = FitOptions { starts: vec![[full.values.e_pa, full.values.g_pa, full.values.rho_kg_m3]], ..opts };
    let mut outside = vec![];
    for (i, held_out) in exps.iter().enumerate() {
        let (p, _) = held_out_band(&rod, &exps, i, &one_start);
        let d = p.points_m[0] - held_out.measurements[0].pos_m;
        let hw = p.half_width_m[0];
        println!("experiment {}: error {:.2?} mm, half-width {:.2?} mm", held_out.id, (d * 1e3).as_slice(), (hw * 1e3).as_slice());
        assert!(d.norm() <= 5e-3, "experiment {}: {:.2} mm", held_out.id, d.norm() * 1e3);
        if (0..3).any(|a| d[a].abs() > hw[a]) {
            outside.push(held_out.id.clone());
        }
    }
    // Experiment 3, the 4.9 N curl beyond every other pull, was 3.0 mm off
    // in y against a half-width of 2.7 mm while a new measurement's noise
    // was the fit's residual (a tenth of the declared 1 mm); with the
    // declared noise as its floor every tip is inside.
    assert!(outside.is_empty(), "{outside:?}");
}

#[test]
fn experiment_files_round_trip() {
    let exps = synthetic(&TRUTH, 1e-3, 3);
    let dir = std::env::temp_dir().join(format!("rodlab-exp-{}", std::process::id()));
    write_experiments(&dir, &exps, "synthetic").unwrap();
    let back = read_experiments(&dir, 4).unwrap();
    assert_eq!(back.len(), exps.len());
    for (a, b) in back.iter().zip(&exps) {
        assert_eq!(a.tensions_n, b.tensions_n);
        assert!((a.measurements[1].pos_m - b.measurements[1].pos_m).norm() < 1e-8);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Gravity-only experiments at four base orientations (as a robot holds
/// them), each weighed by a flange force sensor mounted off the base.
fn weighed(truth: &Values) -> Vec<Experiment> {
    let rod = arm();
    let sensor_in_base = lie::Pose::from_rpy(0.3, 0.0, 0.1, Vec3::new(-0.02, 0.01, 0.0));
    let bases = [(0.0, 0.0, 0.0), (0.0, -0.5, 0.0), (0.0, 0.4, 0.3), (1.2, 0.2, 0.0)];
    bases
        .iter()
        .enumerate()
        .map(|(i, &(r, p, y))| {
            let mut e = Experiment::new(
                format!("hold{i}"),
                vec![0.0; 4],
                Vec3::zeros(),
                [0.1, 0.15, 0.2]
                    .iter()
                    .map(|&x| Measurement {
                        arc_m: x,
                        offset_body_m: Vec3::new(0.0, 0.0, 0.004),
                        pos_m: Vec3::zeros(),
                        sigma_m: 3e-4,
                        arc_sigma_m: 0.0,
                        ray: None,
                    })
                    .collect(),
            );
            e.base_pose = Some(lie::Pose::from_rpy(r, p, y, Vec3::new(0.1 * i as f64, 0.0, 0.3)));
            e.base_wrench = Some(identify::WrenchMeasurement { sensor_in_base, wrench: lie::Vec6::zeros(), sigma: lie::Vec6::from_element(1e-3) });
            let (pts, q) = predict(&rod, &e, truth).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(pts) {
                m.pos_m = p;
            }
            let problem = Problem::new(&rod, std::slice::from_ref(&e), Layout::material(), truth);
            let w = problem.predicted_wrench(0, &q, truth).unwrap();
            e.base_wrench.as_mut().unwrap().wrench = w;
            e
        })
        .collect()
}

#[test]
fn weighed_experiments_jacobian_matches_finite_differences() {
    let rod = arm();
    let exps = weighed(&TRUTH);
    // The sensor reads the weight: |F| = m g.
    let w = exps[0].base_wrench.as_ref().unwrap().wrench;
    // Solid cone, R = 10 mm to r = 5 mm over 0.2 m: V = pi L (R^2 + R r + r^2) / 3.
    let mass = TRUTH.rho_kg_m3 * std::f64::consts::PI * 0.2 * (1e-4 + 5e-5 + 2.5e-5) / 3.0;
    assert!((lie::linear(&w).norm() / (mass * 9.81) - 1.0).abs() < 1e-9, "{} vs {}", lie::linear(&w).norm(), mass * 9.81);
    let layout = Layout::all(rod.cables.len());
    let problem = Problem::new(&rod, &exps, layout, &TRUTH).with_prior(layout.cable_offset_index().unwrap(), 0.001, 0.005).with_prior(
        layout.radius_scale_index().unwrap(),
        1.0,
        0.1,
    );
    let v = Values {
        e_pa: 5.0e5,
        g_pa: 2.5e5,
        rho_kg_m3: 1.0e3,
        translation_m: Vec3::new(0.001, -0.002, 0.0005),
        pitch_rad: 0.03,
        cable_offset_m: 0.002,
        radius_scale: 0.9,
        cable_offsets_m: vec![0.001, -0.0005, 0.0, 0.0015],
        cable_angles_rad: vec![0.02, -0.01, 0.0, 0.03],
        clamp_angles_rad: vec![],
        friction_mu: None,
    };
    let p = problem.params(&v);
    let ev = problem.evaluate(&p, true).unwrap();
    // 9 point rows and 6 wrench rows per experiment, one prior row each for the cable offset and the radius scale.
    assert_eq!(ev.residual.len(), 4 * (9 + 6) + 2);
    assert!((ev.residual[4 * 15] - (0.002 - 0.001) / 0.005).abs() < 1e-12 && (ev.residual[4 * 15 + 1] - (0.9 - 1.0) / 0.1).abs() < 1e-12);
    for (c, err, scale) in jacobian_errors(&problem, &p, ev.jacobian.unwrap()) {
        // Absolute 1e-4 sigma: the static solves' own tolerance in the differences.
        assert!(err <= 1e-5 * scale + 1e-4, "column {c}: {err} of {scale}");
    }
}

#[test]
fn a_weighed_rod_fixes_rho_and_e_under_gravity_alone() {
    let rod = arm();
    let exps = weighed(&TRUTH);
    let f = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    assert!(f.layout.fit_rho);
    assert!(!f.warnings.iter().any(|w| w.contains("E/rho")), "{:?}", f.warnings);
    for (got, want) in [(f.e_pa.value, TRUTH.e_pa), (f.rho_kg_m3.value, TRUTH.rho_kg_m3)] {
        assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
    }
    // Without the sensor: only the ratios, and the warning.
    let unweighed: Vec<Experiment> = exps
        .iter()
        .cloned()
        .map(|mut e| {
            e.base_wrench = None;
            e
        })
        .collect();
    let f = fit(&rod, &unweighed, &FitOptions::default(), |_| {}).unwrap();
    assert!(!f.layout.fit_rho);
    assert!(f.warnings.iter().any(|w| w.contains("E/rho")), "{:?}", f.warnings);
    assert!((f.e_pa.value / f.rho_kg_m3.value / (TRUTH.e_pa / TRUTH.rho_kg_m3) - 1.0).abs() < 1e-5);
}

/// Planar holds under gravity leave G nearly flat: the trust region must
/// clip G's step alone, not shrink E's with it (which crawled for 100
/// iterations from a start 2.7 times too stiff).
#[test]
fn a_stiff_start_converges_when_g_is_nearly_flat() {
    let rod = arm();
    let mut exps = vec![];
    use std::f64::consts::{FRAC_PI_3, FRAC_PI_6};
    for (i, p) in [0.0, FRAC_PI_6, FRAC_PI_3, -FRAC_PI_6].iter().enumerate() {
        let mut e = Experiment::new(format!("h{i}"), vec![0.0; 4], Vec3::zeros(), [0.05, 0.1, 0.15, 0.2].iter().map(|&x| marker(x, 3e-5)).collect());
        e.base_pose = Some(lie::Pose::from_rpy(0.0, *p, 0.0, Vec3::new(0.0, 0.0, 0.3)));
        let (pts, _) = predict(&rod, &e, &TRUTH).unwrap();
        for (m, p) in e.measurements.iter_mut().zip(pts) {
            m.pos_m = p;
        }
        exps.push(e);
    }
    let f = fit(&rod, &exps, &FitOptions { starts: vec![[1.5e6, 5e5, TRUTH.rho_kg_m3]], ..FitOptions::default() }, |_| {}).unwrap();
    // Gravity alone: E/rho is what is identified.
    let ratio = f.e_pa.value / f.rho_kg_m3.value / (TRUTH.e_pa / TRUTH.rho_kg_m3);
    assert!((ratio - 1.0).abs() < 1e-6, "E/rho off by {ratio}");
    assert!(f.history.len() < 20, "{} iterations: {:?}", f.history.len(), f.history);
}

/// The steel-core rod bent in a plane under gravity: its silicone's G is
/// invisible (relative information 1e-11). A weak prior holds it at the rod
/// file's value (it wandered to 5e16 Pa on round-off gradients), and E and
/// rho are not biased by the prior.
#[test]
fn a_parameter_the_data_do_not_see_stays_at_the_rod_files_value() {
    let rod = Rod::from_file(&root().join("configs/rod/contact-paper-steel-core.toml")).unwrap();
    let truth = Values {
        e_pa: 3.0e5,
        g_pa: 1.0e5,
        rho_kg_m3: 1.3e3,
        translation_m: Vec3::zeros(),
        pitch_rad: 0.0,
        cable_offset_m: 0.0,
        radius_scale: 1.0,
        cable_offsets_m: Vec::new(),
        cable_angles_rad: Vec::new(),
        clamp_angles_rad: Vec::new(),
        friction_mu: None,
    };
    let mut exps = vec![];
    for (i, p) in [0.0, 0.5, 1.0, -0.5].iter().enumerate() {
        let mut e = Experiment::new(format!("h{i}"), vec![], Vec3::zeros(), [0.0625, 0.125, 0.1875, 0.25].iter().map(|&x| marker(x, 3e-5)).collect());
        e.base_pose = Some(lie::Pose::from_rpy(0.0, *p, 0.0, Vec3::new(0.0, 0.0, 0.3)));
        e.base_wrench =
            Some(identify::WrenchMeasurement { sensor_in_base: lie::Pose::identity(), wrench: lie::Vec6::zeros(), sigma: lie::Vec6::from_element(1e-3) });
        let (pts, q) = predict(&rod, &e, &truth).unwrap();
        for (m, p) in e.measurements.iter_mut().zip(pts) {
            m.pos_m = p;
        }
        let problem = Problem::new(&rod, std::slice::from_ref(&e), Layout::material(), &truth);
        e.base_wrench.as_mut().unwrap().wrench = problem.predicted_wrench(0, &q, &truth).unwrap();
        exps.push(e);
    }
    let f = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    // 1e-5: G held at the file's 8.8e4 Pa instead of the truth's 1e5 Pa
    // still moves the shape by its tiny share.
    for (got, want) in [(f.e_pa.value, truth.e_pa), (f.rho_kg_m3.value, truth.rho_kg_m3)] {
        assert!((got / want - 1.0).abs() < 1e-5, "{got} vs {want}");
    }
    let g_file = rod.cross_section.body.g_pa;
    assert!((f.g_pa.value / g_file).ln().abs() < 1.0, "G {} wandered from the rod file's {g_file}", f.g_pa.value);
}

/// The arm with its cables 3 mm off the surface (guide rings), as a rod file
/// says it: inset -3 mm.
fn arm_with_raised_cables(offset_m: f64) -> Rod {
    arm().with_geometry(1.0, offset_m)
}

/// Experiments made with the raised cables (the truth), measured with noise.
fn synthetic_raised(truth: &Values, offset_m: f64, noise_m: f64, seed: u64) -> Vec<Experiment> {
    synthetic_on(&arm_with_raised_cables(offset_m), truth, noise_m, noise_m.max(1e-5), seed)
}

/// Cable offset d, E and rho scale together (E I kappa = T d + rho A g ...):
/// a weighed hold (flange sensor) fixes rho, and then the cable experiments
/// fix d/E and the gravity sag E/rho. With 0.1 mm of noise: E and d
/// within 2 % (measured: +0.08 %, +0.3 %); with d held at the surface E is
/// 28 % low and the residual 25 times the noise.
#[test]
fn the_cable_offset_is_learnt_with_a_prior() {
    let rod = arm();
    let mut exps = synthetic_raised(&TRUTH, 0.003, 1e-4, 1);
    exps.push(weighed(&TRUTH).swap_remove(0));
    let opts = FitOptions { cable_offset_prior: Some((0.0, 0.005)), ..FitOptions::default() };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    println!("E {:.4e} G {:.4e} rho {:.4e} d {:.4e} m; warnings {:?}", f.values.e_pa, f.values.g_pa, f.values.rho_kg_m3, f.values.cable_offset_m, f.warnings);
    let fixed = fit(&rod, &exps, &FitOptions { starts: opts.starts.clone(), ..FitOptions::default() }, |_| {}).unwrap();
    println!("d fixed at the surface: E {:.4e}, rms {:.3} mm", fixed.values.e_pa, fixed.rms_error_mm);
    assert!((f.values.e_pa / TRUTH.e_pa - 1.0).abs() < 0.02 && (f.values.cable_offset_m / 0.003 - 1.0).abs() < 0.02);
    assert!(fixed.rms_error_mm > 10.0 * f.rms_error_mm, "{} vs {}", fixed.rms_error_mm, f.rms_error_mm);

    // Judged by prediction, the variant with the offset free is recommended.
    let one_start = FitOptions { starts: vec![[TRUTH.e_pa * 1.2, TRUTH.g_pa * 0.8, TRUTH.rho_kg_m3]], ..FitOptions::default() };
    let (variants, best) = identify::output::compare_variants(
        &rod,
        &exps,
        &one_start,
        identify::output::GeometryPriors { cable_offset_m: Some((0.0, 0.005)), radius_scale: None, cable_angle_rad: None, friction_mu: None },
        false,
        |_| {},
    );
    for v in &variants {
        println!("{:<28} fit RMS {:.3} mm, LOO RMS {:.3} mm, worst {:.3} mm", v.name, v.rms_error_mm, v.loo_rms_mm, v.loo_worst_mm);
    }
    let best = &variants[best.unwrap()];
    assert!(best.parameters.iter().any(|p| p == "cable_offset_m"), "recommended {}", best.name);
    let plain = variants.iter().find(|v| v.name == "no nuisance").unwrap();
    assert!(plain.loo_rms_mm > 5.0 * best.loo_rms_mm, "{} vs {}", plain.loo_rms_mm, best.loo_rms_mm);
}

/// "Which geometry makes a known material fit?": an arm 8 % thicker than
/// its rod file says, cables 2 mm off its surface, the material known
/// (held). The fit learns both (scale within 0.5 %, offset within 3 %) and
/// reproduces the measurements to the noise; fitted with E free as well,
/// E and the scale are nearly degenerate (E s^4 bends the rod) and the fit
/// says so (a correlation or an unseen direction naming both).
#[test]
fn the_geometry_is_learnt_with_the_material_held() {
    let rod = arm();
    let truth_rod = rod.with_geometry(1.08, 0.002);
    let exps = synthetic_on(&truth_rod, &TRUTH, 1e-4, 1e-4, 3);
    let opts = FitOptions {
        cable_offset_prior: Some((0.0, 0.005)),
        radius_scale_prior: Some((1.0, 0.2)),
        hold_material: Some([TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]),
        ..FitOptions::default()
    };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    println!(
        "held material: scale {:.5}, offset {:.4} mm, rms {:.4} mm, E {:.4e}",
        f.values.radius_scale,
        1e3 * f.values.cable_offset_m,
        f.rms_error_mm,
        f.values.e_pa
    );
    assert!((f.values.radius_scale / 1.08 - 1.0).abs() < 0.005, "{}", f.values.radius_scale);
    assert!((f.values.cable_offset_m / 0.002 - 1.0).abs() < 0.03, "{}", f.values.cable_offset_m);
    assert!((f.values.e_pa / TRUTH.e_pa - 1.0).abs() < 1e-5 && (f.values.rho_kg_m3 / TRUTH.rho_kg_m3 - 1.0).abs() < 1e-5);
    assert!(f.rms_error_mm < 0.3, "{}", f.rms_error_mm);

    let free = FitOptions { hold_material: None, starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..opts };
    let f = fit(&rod, &exps, &free, |_| {}).unwrap();
    println!("E free: scale {:.5}, E {:.4e}; warnings {:?}", f.values.radius_scale, f.values.e_pa, f.warnings);
    assert!(f.warnings.iter().any(|w| w.contains("ln_e") && w.contains("radius_scale")), "{:?}", f.warnings);
}

/// Each cable its own offset (rings of different heights): fitted per
/// cable, with one weighed hold, every offset within 0.2 mm and E within
/// 2 % (0.1 mm noise); one offset for all cannot describe it.
#[test]
fn cable_offsets_are_learnt_per_cable() {
    let rod = arm();
    let truth_offsets_m = [0.003, 0.001, 0.002, 0.0];
    let mut exps = synthetic_on(&rod.with_cable_offsets(&truth_offsets_m), &TRUTH, 1e-4, 1e-4, 11);
    exps.push(weighed(&TRUTH).swap_remove(0));
    let opts = FitOptions { cable_offset_each_prior: Some((0.0, 0.005)), ..FitOptions::default() };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    println!("per cable: {:?} mm, E {:.4e}, rms {:.3} mm", f.values.cable_offsets_m.iter().map(|d| d * 1e3).collect::<Vec<_>>(), f.values.e_pa, f.rms_error_mm);
    for (got, want) in f.values.cable_offsets_m.iter().zip(truth_offsets_m) {
        assert!((got - want).abs() < 2e-4, "{:?} vs {truth_offsets_m:?}", f.values.cable_offsets_m);
    }
    assert!((f.values.e_pa / TRUTH.e_pa - 1.0).abs() < 0.02, "{}", f.values.e_pa);
    assert_eq!(f.geometry_estimates().len(), 4);
    let common = fit(&rod, &exps, &FitOptions { cable_offset_prior: Some((0.0, 0.005)), ..FitOptions::default() }, |_| {}).unwrap();
    println!("one for all: {:.3} mm, rms {:.3} mm", common.values.cable_offset_m * 1e3, common.rms_error_mm);
    assert!(common.rms_error_mm > 5.0 * f.rms_error_mm, "{} vs {}", common.rms_error_mm, f.rms_error_mm);
}

/// Each cable turned about the axis from where the rod file puts it (guide
/// holes drilled by hand): fitted per cable with a 5-degree prior, every
/// turn within 0.15 degree and E within 1 % (0.1 mm noise); with the angles
/// held at the rod file's the residual is many times the noise, and judged
/// by prediction the variant with the angles free is recommended.
#[test]
fn cable_angles_are_learnt_per_cable() {
    let rod = arm();
    let truth_turns_rad: Vec<f64> = [1.5, -1.0, 0.5, -2.0].iter().map(|d: &f64| d.to_radians()).collect();
    let exps = synthetic_on(&rod.with_cable_angles(&truth_turns_rad), &TRUTH, 1e-4, 1e-4, 13);
    let prior = Some((0.0, 5f64.to_radians()));
    let opts = FitOptions { cable_angle_each_prior: prior, ..FitOptions::default() };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    let deg: Vec<f64> = f.values.cable_angles_rad.iter().map(|a| a.to_degrees()).collect();
    println!("per cable: {deg:?} deg, E {:.4e}, rms {:.4} mm", f.values.e_pa, f.rms_error_mm);
    for (got, want) in f.values.cable_angles_rad.iter().zip(&truth_turns_rad) {
        assert!((got - want).abs() < 0.15f64.to_radians(), "{deg:?} deg vs truth 1.5 / -1 / 0.5 / -2");
    }
    assert!((f.values.e_pa / TRUTH.e_pa - 1.0).abs() < 0.01, "{}", f.values.e_pa);
    // The intervals are those of the angles, in radians, and hold the truth.
    let estimates = f.geometry_estimates();
    assert_eq!(estimates.len(), 4);
    for ((g, e), want) in estimates.iter().zip(&truth_turns_rad) {
        assert_eq!(g.label().1, "rad");
        assert!(e.ci95_low <= *want && *want <= e.ci95_high, "{g:?}: {e:?} vs {want}");
    }
    let held = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    println!("angles held: rms {:.3} mm", held.rms_error_mm);
    assert!(held.rms_error_mm > 10.0 * f.rms_error_mm, "{} vs {}", held.rms_error_mm, f.rms_error_mm);

    let one_start = FitOptions { starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..FitOptions::default() };
    let priors = identify::output::GeometryPriors { cable_offset_m: None, radius_scale: None, cable_angle_rad: prior, friction_mu: None };
    let (variants, best) = identify::output::compare_variants(&rod, &exps, &one_start, priors, false, |_| {});
    for v in &variants {
        println!("{:<28} fit RMS {:.3} mm, LOO RMS {:.3} mm, worst {:.3} mm", v.name, v.rms_error_mm, v.loo_rms_mm, v.loo_worst_mm);
    }
    let best = &variants[best.unwrap()];
    assert_eq!(best.name, "frame + angle per cable");
    assert_eq!(best.cable_angles_rad.len(), 4);
    let frame = variants.iter().find(|v| v.name.starts_with("frame (")).unwrap();
    assert!(frame.loo_rms_mm > 5.0 * best.loo_rms_mm, "{} vs {}", frame.loo_rms_mm, best.loo_rms_mm);
}

/// With 1 mm of noise, over 50 seeds: the truth (E, d) inside the 95 %
/// intervals in at least 90 % of the fits.
#[test]
fn cable_offset_intervals_cover_the_truth() {
    let rod = arm();
    let (mut e_in, mut d_in, seeds) = (0, 0, 50);
    for seed in 0..seeds {
        let mut exps = synthetic_raised(&TRUTH, 0.003, 1e-3, 500 + seed);
        exps.push(weighed(&TRUTH).swap_remove(0));
        let opts =
            FitOptions { starts: vec![[TRUTH.e_pa * 1.2, TRUTH.g_pa * 0.8, TRUTH.rho_kg_m3]], cable_offset_prior: Some((0.0, 0.005)), ..FitOptions::default() };
        let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
        e_in += (f.e_pa.ci95_low <= TRUTH.e_pa && TRUTH.e_pa <= f.e_pa.ci95_high) as usize;
        let i = f.layout.cable_offset_index().unwrap();
        let half = identify::fit::t975(f.dof) * f.covariance[(i, i)].sqrt();
        d_in += ((f.values.cable_offset_m - 0.003).abs() <= half) as usize;
    }
    println!("95 % CI coverage over {seeds} seeds: E {e_in}, cable offset {d_in}");
    assert!(e_in >= 45 && d_in >= 45, "E {e_in}/{seeds}, d {d_in}/{seeds}");
}

/// Cross-validation with one fold per experiment is leave-one-out; fewer
/// folds (many experiments) predict every experiment too.
#[test]
fn cross_validation_folds() {
    let rod = arm();
    let exps = synthetic(&TRUTH, 1e-3, 7);
    let opts = FitOptions { starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..FitOptions::default() };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    let loo = leave_one_out(&rod, &exps, &f, &opts, |_| {});
    let cv = cross_validate(&rod, &exps, &f, &opts, exps.len());
    for (l, c) in loo.iter().zip(&cv) {
        assert!(l.errors_mm.iter().zip(c).all(|(a, b)| (a - b).abs() < 1e-9), "{:?} vs {c:?}", l.errors_mm);
    }
    let three = cross_validate(&rod, &exps, &f, &opts, 3);
    assert!(three.iter().flatten().all(|e| e.is_finite() && *e < 10.0), "{three:?}");
}

/// Data measured far more precisely than declared (10 um of noise, 1 mm
/// declared: residual scale ~0.01): a held-out prediction's band is still
/// at least the declared noise, not a hundredth of it.
#[test]
fn prediction_bands_are_never_narrower_than_the_declared_noise() {
    let rod = arm();
    let exps = synthetic_on(&rod, &TRUTH, 1e-5, 1e-3, 7);
    let opts = FitOptions { starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..FitOptions::default() };
    let (p, f) = held_out_band(&rod, &exps, 3, &opts);
    assert!(f.residual_scale < 0.05, "{}", f.residual_scale);
    let floor = identify::fit::t975(f.dof) * 1e-3;
    for h in &p.half_width_m {
        assert!(h.iter().all(|w| *w >= floor * (1.0 - 1e-9)), "{h:?} below {floor}");
    }
    println!("residual scale {:.3}: half-widths {:?} m (floor {floor:.4} m)", f.residual_scale, p.half_width_m);
}

/// The paper data, fit on five, predict the sixth with the recommended
/// variant (the one-standard-error rule) and its bands (declared noise
/// floor, model error from cross-validation): every held-out tip inside.
#[test]
fn paper_data_held_out_tips_fall_inside_the_recommended_variants_bands() {
    let rod = arm();
    let exps = read_experiments(&root().join("datasets/pls-cable-arm"), 4).unwrap();
    let p = rod.identify_priors;
    let priors = identify::output::GeometryPriors {
        cable_offset_m: Some(p.cable_offset_m.unwrap_or((0.0, 0.005))),
        radius_scale: p.radius_scale,
        cable_angle_rad: p.cable_angle_rad,
        friction_mu: None,
    };
    let mut outside = vec![];
    for k in 0..exps.len() {
        let five: Vec<Experiment> = exps.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, e)| e.clone()).collect();
        let (variants, recommended) = identify::output::compare_variants(&rod, &five, &FitOptions::default(), priors, false, |_| {});
        let v = &variants[recommended.expect("a recommendation")];
        let u = v.band.as_ref().unwrap().uncertainty(v.model_error_m.max(p.model_error_m)).unwrap();
        let values = v.fitted.as_ref().unwrap().values();
        let pred = predict_with_band(&rod, &exps[k], &values, &u).unwrap();
        let tip = exps[k].measurements.len() - 1;
        let d = exps[k].measurements[tip].pos_m - pred.points_m[tip];
        let h = pred.half_width_m[tip];
        println!(
            "held out {}: {:<32} model error {:.2} mm, tip error [{:+.2}, {:+.2}, {:+.2}] mm, half-width [{:.2}, {:.2}, {:.2}] mm",
            exps[k].id,
            v.name,
            1e3 * v.model_error_m,
            1e3 * d.x,
            1e3 * d.y,
            1e3 * d.z,
            1e3 * h.x,
            1e3 * h.y,
            1e3 * h.z
        );
        if (0..3).any(|a| d[a].abs() > h[a]) {
            outside.push(exps[k].id.clone());
        }
    }
    assert!(outside.is_empty(), "held-out tips outside their bands: {outside:?}");
}

/// identified.toml says when an interval is no information.
#[test]
fn an_unbounded_interval_is_written_as_not_determined() {
    let out: identify::output::EstimateOut = identify::fit::Estimate { value: 8.5e4, ci95_low: 3.2198e-64, ci95_high: 2.2749e73 }.into();
    assert!(!out.determined);
    let out: identify::output::EstimateOut = identify::fit::Estimate { value: 8.5e4, ci95_low: 7e4, ci95_high: 1e5 }.into();
    assert!(out.determined);
    let held: identify::output::EstimateOut = identify::fit::Estimate { value: 1.4e3, ci95_low: f64::NAN, ci95_high: f64::NAN }.into();
    assert!(held.determined, "a held value is not an undetermined one");
}

/// G tied to E by a known Poisson's ratio (`--tie-g`): E comes out with G
/// exactly E / (2 (1 + nu)), its interval no wider than with G free, and the
/// fit says G was not identified.
#[test]
fn g_tied_to_e_by_poisson_is_not_identified_but_follows_e() {
    let rod = arm();
    let nu = TRUTH.e_pa / (2.0 * TRUTH.g_pa) - 1.0;
    let exps = synthetic(&TRUTH, 1e-3, 11);
    let free = fit(&rod, &exps, &FitOptions::default(), |_| {}).unwrap();
    let tied = fit(&rod, &exps, &FitOptions { tie_g_poisson: Some(nu), ..FitOptions::default() }, |_| {}).unwrap();
    let ratio = tied.g_pa.value / tied.e_pa.value;
    assert!((ratio * 2.0 * (1.0 + nu) - 1.0).abs() < 1e-5, "G/E {ratio}");
    assert!((tied.e_pa.value / TRUTH.e_pa - 1.0).abs() < 0.02, "E {}", tied.e_pa.value);
    assert!(tied.e_pa.ci95_low <= TRUTH.e_pa && TRUTH.e_pa <= tied.e_pa.ci95_high);
    let width = |e: &identify::fit::Estimate| (e.ci95_high / e.ci95_low).ln();
    assert!(width(&tied.e_pa) <= width(&free.e_pa) * (1.0 + 1e-6), "tied {} vs free {}", width(&tied.e_pa), width(&free.e_pa));
    assert_eq!(tied.dof, free.dof + 1, "the tie is one parameter less");
    assert!(tied.warnings.iter().any(|w| w.contains("G is tied to E")), "{:?}", tied.warnings);
    println!(
        "tied (nu {nu:.4}): E {:.4e} [{:.4e}, {:.4e}]; free: E {:.4e} [{:.4e}, {:.4e}], G {:.4e}",
        tied.e_pa.value, tied.e_pa.ci95_low, tied.e_pa.ci95_high, free.e_pa.value, free.e_pa.ci95_low, free.e_pa.ci95_high, free.g_pa.value
    );
}

/// A prediction that rests on a parameter the data never saw names it:
/// the paper data never pull cables 2 and 3, so their offsets and angles
/// keep their priors, and a pull of cable 2 is predicted with a band that
/// says so, with the width each adds.
#[test]
fn a_prediction_resting_on_an_unseen_cable_names_it() {
    let (rod, exps, opts) = paper_data_per_cable();
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    for unseen in ["cable_2_offset_m", "cable_3_offset_m", "cable_2_angle_rad", "cable_3_angle_rad"] {
        assert!(f.prior_only.iter().any(|n| n == unseen), "{unseen} not in {:?}", f.prior_only);
    }
    assert!(!f.prior_only.iter().any(|n| n.starts_with("cable_1") || n.starts_with("cable_4") || n.starts_with("ln_")), "{:?}", f.prior_only);
    let tip = marker(rod.length_m, 1.0);
    let pull_2 = Experiment::new("cable 2", vec![0.0, 0.98, 0.0, 0.0], Vec3::zeros(), vec![tip.clone()]);
    let p = predict_with_band(&rod, &pull_2, &f.values, &f.uncertainty()).unwrap();
    let named: Vec<&str> = p.prior_only_m[0].iter().map(|(n, _)| n.as_str()).collect();
    assert!(named.contains(&"cable_2_offset_m") && !named.contains(&"cable_3_offset_m"), "{named:?}");
    let (_, adds) = p.prior_only_m[0].iter().find(|(n, _)| n == "cable_2_offset_m").unwrap();
    assert!(adds.amax() > 1e-3, "{adds:?}");
    println!("pull of cable 2: half-width {:?} mm; unseen: {:?}", (p.half_width_m[0] * 1e3).as_slice(), p.prior_only_m[0]);
    // A pull of a cable the data saw rests on nothing unseen.
    let pull_4 = Experiment::new("cable 4", vec![0.0, 0.0, 0.0, 0.98], Vec3::zeros(), vec![tip]);
    let p = predict_with_band(&rod, &pull_4, &f.values, &f.uncertainty()).unwrap();
    assert!(p.prior_only_m[0].is_empty(), "{:?}", p.prior_only_m[0]);
}

/// A tip force hung off the centre line (a hook on the tip face's edge):
/// `inputs.csv` carries the offset both ways, the fit's sensitivities stay
/// exact (finite differences), and the offset changes the prediction.
#[test]
fn a_tip_force_off_the_centre_line_round_trips_and_keeps_exact_sensitivities() {
    let rod = arm();
    let mut exps = synthetic(&TRUTH, 1e-3, 5);
    for (k, e) in exps.iter_mut().enumerate() {
        e.tip_force_n = Vec3::new(0.0, 0.0, -0.2 * k as f64);
        e.tip_force_offset_body_m = Vec3::new(0.0, 0.004, 0.006);
    }
    let dir = std::env::temp_dir().join(format!("rodlab-offset-{}", std::process::id()));
    write_experiments(&dir, &exps, "offset tip forces").unwrap();
    let back = read_experiments(&dir, 4).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    for (a, b) in back.iter().zip(&exps) {
        assert_eq!((a.tip_force_n, a.tip_force_offset_body_m), (b.tip_force_n, b.tip_force_offset_body_m));
    }
    let (on_edge, _) = predict(&rod, &exps[5], &TRUTH).unwrap();
    let mut centred = exps[5].clone();
    centred.tip_force_offset_body_m = Vec3::zeros();
    let (at_centre, _) = predict(&rod, &centred, &TRUTH).unwrap();
    assert!((on_edge[1] - at_centre[1]).norm() > 1e-4, "the offset moves the tip: {}", (on_edge[1] - at_centre[1]).norm());
    let layout = Layout { cable_offset: false, radius_scale: false, cable_offset_each: 0, cable_angle_each: 0, ..Layout::all(4) };
    let problem = Problem::new(&rod, &exps, layout, &TRUTH);
    let p = problem.params(&Values { e_pa: 5.0e5, g_pa: 2.5e5, rho_kg_m3: 1.0e3, ..TRUTH });
    let ev = problem.evaluate(&p, true).unwrap();
    for (c, err, scale) in jacobian_errors(&problem, &p, ev.jacobian.unwrap()) {
        assert!(err <= 1e-5 * scale + 1e-4, "column {c}: {err} of {scale}");
    }
}

/// Partial pooling of the per-cable geometry (`pool_cables`): an arm whose
/// four cables sit 1 to 3 mm off the surface, fitted on pulls of cables 1
/// and 4 only. Pooled, cables 2 and 3 borrow the others' offsets and
/// angles: pulls of them are predicted inside their bands, and the bands
/// are narrower than with independent per-cable priors; the fit names the
/// cables it never saw.
#[test]
fn unseen_cables_borrow_from_the_seen_ones_when_pooled() {
    let rod = arm();
    let truth_offsets_m = [0.0015, 0.003, 0.002, 0.001];
    let truth_rod = rod.with_cable_offsets(&truth_offsets_m);
    let tensions: [[f64; 4]; 7] = [
        [0.0, 0.0, 0.0, 0.0],
        [0.98, 0.0, 0.0, 0.0],
        [1.96, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.98],
        [0.0, 0.0, 0.0, 1.96],
        [0.98, 0.0, 0.0, 0.98],
        [1.47, 0.0, 0.0, 0.49],
    ];
    let mut rng = StdRng::seed_from_u64(3);
    let sigma_m = 2e-4;
    let make = |id: String, t: &[f64; 4], rng: &mut StdRng| {
        let mut e = Experiment::new(id, t.to_vec(), Vec3::zeros(), [0.1, 0.2].iter().map(|&x| marker(x, sigma_m)).collect());
        let (p, _) = predict(&truth_rod, &e, &TRUTH).unwrap();
        for (m, p) in e.measurements.iter_mut().zip(p) {
            m.pos_m = p + Vec3::new(gauss(rng), gauss(rng), gauss(rng)) * sigma_m;
        }
        e
    };
    let mut exps: Vec<Experiment> = tensions.iter().enumerate().map(|(i, t)| make(format!("{}", i + 1), t, &mut rng)).collect();
    exps.push(weighed(&TRUTH).swap_remove(0));
    let independent =
        FitOptions { cable_offset_each_prior: Some((0.0, 0.005)), cable_angle_each_prior: Some((0.0, 5f64.to_radians())), ..FitOptions::default() };
    let pooled = FitOptions { pool_cables: true, ..independent.clone() };
    let fi = fit(&rod, &exps, &independent, |_| {}).unwrap();
    let fp = fit(&rod, &exps, &pooled, |_| {}).unwrap();
    println!("independent: offsets {:?} mm", fi.values.cable_offsets_m.iter().map(|o| (o * 1e4).round() / 10.0).collect::<Vec<_>>());
    println!("pooled:      offsets {:?} mm", fp.values.cable_offsets_m.iter().map(|o| (o * 1e4).round() / 10.0).collect::<Vec<_>>());
    for w in fp.warnings.iter().filter(|w| w.contains("pooled")) {
        println!("  {w}");
    }
    assert!(fp.warnings.iter().any(|w| w.contains("cable offsets pooled") && w.contains("cables 2, 3 are never pulled")), "{:?}", fp.warnings);
    assert!(fp.warnings.iter().any(|w| w.contains("cable angles pooled") && w.contains("cables 2, 3 are never pulled")), "{:?}", fp.warnings);
    assert_eq!(fp.pooling[0].unseen, vec![1, 2]);
    // Pulls of the unseen cables, predicted by each fit.
    let mut rng = StdRng::seed_from_u64(99);
    for (cable, t) in [(2, [0.0, 0.98, 0.0, 0.0]), (3, [0.0, 0.0, 0.98, 0.0]), (23, [0.0, 0.98, 0.98, 0.0])] {
        let e = make(format!("pull {cable}"), &t, &mut rng);
        let tip = e.measurements.len() - 1;
        let (pi, pp) =
            (predict_with_band(&rod, &e, &fi.values, &fi.uncertainty()).unwrap(), predict_with_band(&rod, &e, &fp.values, &fp.uncertainty()).unwrap());
        let (di, dp) = (e.measurements[tip].pos_m - pi.points_m[tip], e.measurements[tip].pos_m - pp.points_m[tip]);
        let (hi, hp) = (pi.half_width_m[tip], pp.half_width_m[tip]);
        println!(
            "pull of cable {cable}: independent error {:.2?} mm within {:.2?}; pooled error {:.2?} mm within {:.2?}",
            (di * 1e3).as_slice(),
            (hi * 1e3).as_slice(),
            (dp * 1e3).as_slice(),
            (hp * 1e3).as_slice()
        );
        for a in 0..3 {
            assert!(dp[a].abs() <= hp[a], "pooled: cable {cable} axis {a}: {} outside {}", dp[a], hp[a]);
        }
        assert!(hp.norm() < hi.norm(), "pooled band {} not narrower than independent {}", hp.norm(), hi.norm());
        assert!(!pp.prior_only_m[tip].is_empty(), "the prediction names what it borrows");
    }
}

/// The pooled prior's rows are the joint Gaussian of `p_c = mu + d_c`
/// with `mu ~ N(m, s^2)`, `d_c ~ N(0, tau^2)`: their squares sum to
/// `(p - m 1)^T (s^2 1 1^T + tau^2 I)^-1 (p - m 1)` for any `p`.
#[test]
fn the_pooled_prior_is_the_joint_gaussian_of_the_hierarchy() {
    let rod = arm();
    let layout = Layout { cable_offset: false, radius_scale: false, cable_angle_each: 0, translation: false, pitch: false, ..Layout::all(4) };
    let (m, s, tau) = (0.001, 0.005, 0.002);
    let start = layout.cable_offset_each_index().unwrap();
    let problem = Problem::new(&rod, &[], layout, &TRUTH).with_pooled_prior(&[start, start + 1, start + 2, start + 3], m, s, tau);
    let sigma = nalgebra::DMatrix::from_fn(4, 4, |a, b| s * s + if a == b { tau * tau } else { 0.0 });
    let inverse = sigma.try_inverse().unwrap();
    for offsets in [[0.0, 0.001, 0.002, 0.003], [-0.004, 0.006, 0.0, 0.001]] {
        let p = problem.params(&Values { cable_offsets_m: offsets.to_vec(), ..TRUTH });
        let r = problem.evaluate(&p, false).unwrap().residual;
        let d = nalgebra::DVector::from_iterator(4, offsets.iter().map(|o| o - m));
        let want = (d.transpose() * &inverse * &d)[0];
        assert!((r.norm_squared() / want - 1.0).abs() < 1e-12, "{} vs {want}", r.norm_squared());
    }
}

/// Bands that hold on new experiments when the model is wrong: the truth's
/// cables sit 3 / 1 / 2 / 0 mm off the surface, the model puts them on it
/// and fits E, G, rho only. Held out one at a time (several seeds), the
/// tips' 95 % per-coordinate bands with the model error that
/// cross-validation on the training experiments finds
/// ([`identify::fit::cv_model_error_m`], growing from the clamp to the
/// tip) cover 90-99 % of the held-out coordinates (90.8 % of 120); with the
/// parameters and the noise (scaled by the misfit) only, 81.7 %.
#[test]
fn bands_with_the_cv_model_error_cover_a_misspecified_model() {
    let rod = arm();
    let truth_rod = rod.with_cable_offsets(&[0.003, 0.001, 0.002, 0.0]);
    let sigma_m = 2e-4;
    let (mut with_error, mut without, mut total) = (0usize, 0usize, 0usize);
    let mut model_errors_mm = vec![];
    for seed in 0..5u64 {
        let mut rng = StdRng::seed_from_u64(500 + seed);
        let exps: Vec<Experiment> = (0..8)
            .map(|i| {
                // Random pulls of one or two cables, up to 2 N.
                let mut t = [0.0; 4];
                for _ in 0..1 + i % 2 {
                    let c = (rand::Rng::gen_range(&mut rng, 0..4)) as usize;
                    t[c] += rand::Rng::gen_range(&mut rng, 0.3..2.0);
                }
                let mut e = Experiment::new(format!("{i}"), t.to_vec(), Vec3::zeros(), [0.1, 0.2].iter().map(|&x| marker(x, sigma_m)).collect());
                let (p, _) = predict(&truth_rod, &e, &TRUTH).unwrap();
                for (m, p) in e.measurements.iter_mut().zip(p) {
                    m.pos_m = p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * sigma_m;
                }
                e
            })
            .collect();
        for k in 0..exps.len() {
            let train: Vec<Experiment> = exps.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, e)| e.clone()).collect();
            let opts = FitOptions { starts: vec![[TRUTH.e_pa, TRUTH.g_pa, TRUTH.rho_kg_m3]], ..FitOptions::default() };
            let f = fit(&rod, &train, &opts, |_| {}).unwrap();
            let cv = cross_validate(&rod, &train, &f, &opts, train.len());
            let model_error_m = identify::fit::cv_model_error_m(&rod, &train, &f.values, &f.uncertainty(), &cv);
            model_errors_mm.push(model_error_m * 1e3);
            let u =
                identify::fit::prediction_uncertainty(f.layout, &f.covariance, f.dof, f.measurement_sigma_m, f.residual_scale, model_error_m, &f.prior_only);
            let (with, plain) =
                (predict_with_band(&rod, &exps[k], &f.values, &u).unwrap(), predict_with_band(&rod, &exps[k], &f.values, &f.uncertainty()).unwrap());
            let tip = exps[k].measurements.len() - 1;
            let d = exps[k].measurements[tip].pos_m - with.points_m[tip];
            for a in 0..3 {
                with_error += (d[a].abs() <= with.half_width_m[tip][a]) as usize;
                without += (d[a].abs() <= plain.half_width_m[tip][a]) as usize;
                total += 1;
            }
        }
    }
    let (cover, before) = (with_error as f64 / total as f64, without as f64 / total as f64);
    let mean_error = model_errors_mm.iter().sum::<f64>() / model_errors_mm.len() as f64;
    println!(
        "misspecified (cables 3/1/2/0 mm off, fitted on the surface): held-out tip coordinates inside their 95 % bands: {with_error}/{total} = {:.1} % with the CV model error (mean {mean_error:.2} mm), {without}/{total} = {:.1} % without",
        100.0 * cover,
        100.0 * before
    );
    assert!((0.90..=0.99).contains(&cover), "coverage {cover}");
    assert!(before <= cover - 0.05, "without the model error: {before}, with: {cover}");
}

/// Hysteresis (#45): the tapered arm with straight channels
/// (configs/rod/tapered-channels-arm.toml), its cables rubbing with mu
/// 0.15, each cable pulled up to 0.4 N and let down again (load and unload
/// at the same tensions), two markers with 0.1 mm of noise. The fit, from
/// mu's prior 0.1 +- 0.1 and E 25 % off, recovers mu within 10 % and E
/// within 1 %; frictionless, loading and unloading are the same shape.
#[test]
fn pulls_that_load_and_unload_give_the_friction_coefficient_and_e() {
    let mu_true = 0.15;
    let mut rod = Rod::from_file(&root().join("configs/rod/tapered-channels-arm.toml")).unwrap();
    let truth = Values::material(2.0e5, 2.0e5 / 2.9, 1.1e3);
    let experiments = |rod: &Rod, noise_m: f64| -> Vec<Experiment> {
        let mut rng = StdRng::seed_from_u64(45);
        let mut out = vec![];
        for cable in 0..3 {
            for (k, t) in [0.1, 0.2, 0.3, 0.4].iter().enumerate() {
                for slide in [rod::statics::CableSlide::PulledIn, rod::statics::CableSlide::LetOut] {
                    let mut tensions = vec![0.0; 3];
                    tensions[cable] = *t;
                    let marks = [0.1, 0.2].iter().map(|&x| marker(x, 1e-4));
                    let mut e = Experiment::new(format!("c{}-{k}-{slide:?}", cable + 1), tensions, Vec3::zeros(), marks.collect());
                    e.cable_slide = slide;
                    let (p, _) = predict(rod, &e, &truth).unwrap();
                    for (m, p) in e.measurements.iter_mut().zip(p) {
                        m.pos_m = p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * noise_m;
                    }
                    out.push(e);
                }
            }
        }
        out
    };
    // Frictionless: both ways the same shape.
    let still = experiments(&rod, 0.0);
    for pair in still.chunks(2) {
        let gap = pair[0].measurements.iter().zip(&pair[1].measurements).map(|(a, b)| (a.pos_m - b.pos_m).norm()).fold(0.0, f64::max);
        assert!(gap < 1e-9, "{}: {gap}", pair[0].id);
    }
    for c in &mut rod.cables {
        c.friction_mu = mu_true;
    }
    let exps = experiments(&rod, 1e-4);
    let widest = exps.chunks(2).map(|p| (p[0].measurements[1].pos_m - p[1].measurements[1].pos_m).norm()).fold(0.0, f64::max);
    println!("the tip's loading and unloading shapes differ by up to {:.2} mm", widest * 1e3);
    for c in &mut rod.cables {
        c.friction_mu = 0.0;
    }
    let opts = FitOptions { friction_prior: Some((0.1, 0.1)), tie_g_poisson: Some(0.45), starts: vec![[1.5e5, 5e4, 1.1e3]], ..FitOptions::default() };
    let f = fit(&rod, &exps, &opts, |_| {}).unwrap();
    let mu = f.values.friction_mu.unwrap();
    let (_, est) = f.geometry_estimates().into_iter().find(|(g, _)| *g == identify::Geometry::FrictionMu).unwrap();
    let ci = [est.ci95_low, est.ci95_high];
    println!("mu {mu:.4} [{:.4}, {:.4}] for {mu_true}, E {:.4e} for {:.4e}; warnings {:?}", ci[0], ci[1], f.e_pa.value, truth.e_pa, f.warnings);
    assert!((mu / mu_true - 1.0).abs() < 0.1, "mu {mu}");
    assert!((f.e_pa.value / truth.e_pa - 1.0).abs() < 0.01, "E {}", f.e_pa.value);
}

/// Each cable's channel radius from the data (#45 item 4): the tapered arm
/// cast with its channels at 4.5, 3.6 and 4.0 mm where the rod file says
/// 4 mm; pulls of each cable (0.1 mm noise), the arm weighed, and
/// `--fit-cable-offset --per-cable` (prior 0 +- 2 mm) find each channel
/// (4.452, 3.585, 3.967 mm: within 0.1 mm), and E within 1 % (-0.5 %).
#[test]
fn each_cables_channel_radius_is_identified_with_a_prior() {
    let file_rod = Rod::from_file(&root().join("configs/rod/tapered-channels-arm.toml")).unwrap();
    let mut truth_rod = file_rod.clone();
    let radii_m = [4.5e-3, 3.6e-3, 4.0e-3];
    for (c, r) in truth_rod.cables.iter_mut().zip(radii_m) {
        c.path_radius = Some(rod::PathRadius { points: vec![(0.0, r)] });
    }
    let truth = Values::material(2.0e5, 2.0e5 / 2.9, 1.1e3);
    let mut rng = StdRng::seed_from_u64(451);
    let mut exps = vec![];
    for cable in 0..3 {
        for t in [0.1, 0.2, 0.3] {
            let mut tensions = vec![0.0; 3];
            tensions[cable] = t;
            let marks = [0.1, 0.2].iter().map(|&x| marker(x, 1e-4));
            let mut e = Experiment::new(format!("c{}-{t}", cable + 1), tensions, Vec3::zeros(), marks.collect());
            let (p, _) = predict(&truth_rod, &e, &truth).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(p) {
                m.pos_m = p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * 1e-4;
            }
            exps.push(e);
        }
    }
    // Pulls alone cannot tell a channel further out from a stiffer arm (T d
    // against E I); the arm weighed (1 %) fixes rho, its sag then E.
    let mut weighed = file_rod.clone();
    let mass_kg = rod::Model::new(&file_rod.with_material(rod::Material { e_pa: truth.e_pa, g_pa: truth.g_pa, rho_kg_m3: truth.rho_kg_m3 }), &[]).mass_kg();
    weighed.weighed_mass_kg = Some((mass_kg, 0.01 * mass_kg));
    let opts =
        FitOptions { cable_offset_each_prior: Some((0.0, 2e-3)), tie_g_poisson: Some(0.45), starts: vec![[1.6e5, 5.5e4, 1.1e3]], ..FitOptions::default() };
    let f = fit(&weighed, &exps, &opts, |_| {}).unwrap();
    println!(
        "channels: {:?} mm for {:?} mm; E {:.4e}",
        f.values.cable_offsets_m.iter().map(|o| (4.0e-3 + o) * 1e3).collect::<Vec<_>>(),
        radii_m.map(|r| r * 1e3),
        f.e_pa.value
    );
    for (o, r) in f.values.cable_offsets_m.iter().zip(radii_m) {
        assert!((4.0e-3 + o - r).abs() < 1e-4, "channel {} mm for {} mm", (4.0e-3 + o) * 1e3, r * 1e3);
    }
    assert!((f.e_pa.value / truth.e_pa - 1.0).abs() < 0.01, "E {}", f.e_pa.value);
}

/// #46: the synthetic experiments with each tip measured as a ray from a
/// camera (one camera alone saw it): the residual's Jacobian matches
/// finite differences, the experiment files keep the rays, and noise-free
/// rays recover the truth as the points do.
#[test]
fn tips_seen_as_rays_fit_with_exact_sensitivities_and_round_trip() {
    let rod = arm();
    let camera = Vec3::new(0.3, -0.5, 0.1);
    let mut exps = synthetic(&TRUTH, 0.0, 1);
    for e in &mut exps {
        let tip = e.measurements.last_mut().unwrap();
        tip.ray = Some((tip.pos_m - camera).normalize());
        tip.pos_m = camera;
    }
    let problem = Problem::new(&rod, &exps, Layout::all(rod.cables.len()), &TRUTH);
    let v = Values { translation_m: Vec3::new(0.001, -0.002, 0.003), pitch_rad: 0.05, cable_offset_m: 0.003, radius_scale: 1.1, ..TRUTH };
    let p = problem.params(&v);
    let ev = problem.evaluate(&p, true).unwrap();
    for (c, err, scale) in jacobian_errors(&problem, &p, ev.jacobian.unwrap()) {
        assert!(err <= 1e-5 * scale.max(1e-3), "column {c}: {err} of {scale}");
    }
    let dir = std::env::temp_dir().join(format!("rodlab-rays-{}", std::process::id()));
    write_experiments(&dir, &exps, "rays").unwrap();
    let back = read_experiments(&dir, 4).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    for (a, b) in back.iter().zip(&exps) {
        assert_eq!(a.measurements[0].ray, None);
        assert!((a.measurements[1].ray.unwrap() - b.measurements[1].ray.unwrap()).norm() < 1e-11);
    }
    let start = FitOptions { starts: vec![[TRUTH.e_pa * 1.5, TRUTH.g_pa * 0.7, TRUTH.rho_kg_m3 * 0.8]], ..FitOptions::default() };
    let f = fit(&rod, &exps, &start, |_| {}).unwrap();
    for (got, want) in [(f.e_pa.value, TRUTH.e_pa), (f.g_pa.value, TRUTH.g_pa), (f.rho_kg_m3.value, TRUTH.rho_kg_m3)] {
        assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
    }
    assert!(f.errors_mm.iter().flatten().all(|e| *e < 1e-6), "a ray's error is its distance across the ray: {:?}", f.errors_mm);
}

/// #78: holds of a viscoelastic rod that were held for different times.
/// The arm's six holds, loaded 0.02 s to 30 s before they were measured
/// (a constant-loss law over 5 ms - 2 s: the holds see 1.52 to 1.00 times
/// the relaxed E). Given the law and the holds' ages, the fit returns the
/// relaxed E within 1 %, the truth inside its interval; fitted as elastic,
/// the same holds give a stiffer E whose interval misses the truth, with
/// 20 times the residual. Jacobian columns with the creep against
/// differences too.
#[test]
fn holds_of_different_ages_give_the_relaxed_modulus_of_a_viscoelastic_rod() {
    let law = rod::ConstantLoss::new(0.2, 0.005, 2.0);
    let mut viscoelastic = arm();
    (viscoelastic.constant_loss, viscoelastic.viscoelastic) = (Some(law), law.prony_branches());
    let ages_s = [0.02, 0.1, 0.5, 1.0, 5.0, 30.0];
    let elastic = arm();
    let mut rng = StdRng::seed_from_u64(78);
    let mut exps = synthetic(&TRUTH, 0.0, 3);
    for (e, age) in exps.iter_mut().zip(ages_s) {
        e.loaded_for_s = Some(age);
        let ratio = identify::problem::hold_modulus_ratio(&viscoelastic, e);
        let seen = Values { e_pa: TRUTH.e_pa * ratio, g_pa: TRUTH.g_pa * ratio, ..TRUTH.clone() };
        let (p, _) = predict(&elastic, e, &seen).unwrap();
        for (m, p) in e.measurements.iter_mut().zip(p) {
            m.pos_m = p + Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * 2e-4;
            m.sigma_m = 2e-4;
        }
    }
    let ratios: Vec<f64> = exps.iter().map(|e| identify::problem::hold_modulus_ratio(&viscoelastic, e)).collect();
    println!("creep ratios {ratios:.3?}");
    assert!(ratios[0] > 1.15 && ratios[5] < 1.01, "{ratios:?}");
    // The sensitivities with the creep.
    let problem = Problem::new(&viscoelastic, &exps, Layout::material(), &TRUTH);
    let p = problem.params(&Values { e_pa: 5e5, ..TRUTH.clone() });
    let j = problem.evaluate(&p, true).unwrap().jacobian.unwrap();
    for (c, err, scale) in jacobian_errors(&problem, &p, j) {
        assert!(err <= 1e-5 * scale.max(1.0), "column {c}: {err} of {scale}");
    }
    let opts = FitOptions::default();
    let with_law = fit(&viscoelastic, &exps, &opts, |_| {}).unwrap();
    let as_elastic = fit(&elastic, &exps, &opts, |_| {}).unwrap();
    println!(
        "with the law: E {:.4e} [{:.4e}, {:.4e}], rms {:.3} mm",
        with_law.e_pa.value, with_law.e_pa.ci95_low, with_law.e_pa.ci95_high, with_law.rms_error_mm
    );
    println!(
        "as elastic:   E {:.4e} [{:.4e}, {:.4e}], rms {:.3} mm",
        as_elastic.e_pa.value, as_elastic.e_pa.ci95_low, as_elastic.e_pa.ci95_high, as_elastic.rms_error_mm
    );
    assert!((with_law.e_pa.value / TRUTH.e_pa - 1.0).abs() < 0.01, "{}", with_law.e_pa.value);
    assert!(with_law.e_pa.ci95_low <= TRUTH.e_pa && TRUTH.e_pa <= with_law.e_pa.ci95_high);
    assert!(as_elastic.e_pa.ci95_low > TRUTH.e_pa, "{:?}", as_elastic.e_pa);
    assert!(as_elastic.rms_error_mm > 2.0 * with_law.rms_error_mm);
}
