//! Identification with a hyperelastic body: exact sensitivities through
//! the fibre law, and E recovered from data a neo-Hookean rod made at
//! large strain, where the linear law is biased.

use identify::{fit, predict, Experiment, FitOptions, Layout, Measurement, Problem, Values};
use lie::Vec3;
use nalgebra::DVector;
use rand::{rngs::StdRng, SeedableRng};
use rod::{ElasticLaw, Rod};
use std::path::PathBuf;

fn arm(law: ElasticLaw) -> Rod {
    let mut rod = Rod::from_file(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/rod/pls-cable-arm.toml")).unwrap();
    rod.elastic_law = law;
    rod
}

/// The arm's material (E, G, rho), nothing else moved.
fn truth() -> Values {
    Values::material(6.0e5, 2.1e5, 1.2e3)
}

/// The paper's kind of experiments, pulls up to 4.9 N, tip and middle
/// markers measured by `rod` with `noise_m`.
fn experiments(rod: &Rod, noise_m: f64, seed: u64) -> Vec<Experiment> {
    let inputs: [[f64; 4]; 7] = [
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.96],
        [1.96, 0.0, 0.0, 2.94],
        [0.0, 0.0, 0.0, 4.9],
        [4.9, 0.0, 0.0, 0.0],
        [0.0, 2.94, 2.94, 0.0],
        [0.0, 4.9, 0.0, 0.0],
    ];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut gauss = || -> f64 { rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng) };
    inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let marks = [0.1, 0.2]
                .iter()
                .map(|&x| Measurement { arc_m: x, offset_body_m: Vec3::zeros(), pos_m: Vec3::zeros(), sigma_m: 1e-4, arc_sigma_m: 0.0, ray: None })
                .collect();
            let mut e = Experiment::new(format!("{}", i + 1), t.to_vec(), Vec3::zeros(), marks);
            let (p, _) = predict(rod, &e, &truth()).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(p) {
                m.pos_m = p + Vec3::new(gauss(), gauss(), gauss()) * noise_m;
            }
            e
        })
        .collect()
}

#[test]
fn sensitivities_through_the_fibre_law_match_finite_differences() {
    let rod = arm(ElasticLaw::Hyperelastic { c01_fraction: 0.2 });
    let exps = experiments(&rod, 0.0, 1);
    let problem = Problem::new(&rod, &exps, Layout::all(rod.cables.len()), &truth());
    let v = Values { translation_m: Vec3::new(0.001, -0.002, 0.003), pitch_rad: 0.05, cable_offset_m: 0.002, radius_scale: 1.1, ..truth() };
    let p = problem.params(&v);
    let j = problem.evaluate(&p, true).unwrap().jacobian.unwrap();
    for c in 0..p.len() {
        let e = 1e-6;
        let (mut pp, mut pm) = (p.clone(), p.clone());
        pp[c] += e;
        pm[c] -= e;
        let fd: DVector<f64> = (problem.evaluate(&pp, false).unwrap().residual - problem.evaluate(&pm, false).unwrap().residual) / (2.0 * e);
        let err = (&fd - j.column(c)).amax();
        assert!(err <= 1e-5 * fd.amax().max(1e-3), "column {c}: {err} of {}", fd.amax());
    }
}

#[test]
fn e_of_a_neo_hookean_rod_is_recovered_by_its_law_and_biased_by_the_linear_one() {
    let truth_rod = arm(ElasticLaw::NEO_HOOKEAN);
    let opts = FitOptions::default();
    for seed in [1, 2, 3] {
        let exps = experiments(&truth_rod, 1e-4, seed);
        let strains: Vec<f64> = exps
            .iter()
            .map(|e| {
                let (_, q) = predict(&truth_rod, e, &truth()).unwrap();
                let model = rod::Model::new(&truth_rod, &[]);
                let v = rod::validity::validity(&model, &q);
                v.max_fibre_strain.max(-v.min_fibre_strain)
            })
            .collect();
        let hyper = fit(&truth_rod, &exps, &opts, |_| {}).unwrap();
        let linear = fit(&arm(ElasticLaw::Linear), &exps, &opts, |_| {}).unwrap();
        println!(
            "seed {seed}: largest fibre strain {:.0} %; neo-Hookean fit E {:.5e} [{:.5e}, {:.5e}] rms {:.3} mm; linear fit E {:.5e} rms {:.3} mm",
            100.0 * strains.iter().cloned().fold(0.0, f64::max),
            hyper.e_pa.value,
            hyper.e_pa.ci95_low,
            hyper.e_pa.ci95_high,
            hyper.rms_error_mm,
            linear.e_pa.value,
            linear.rms_error_mm
        );
        assert!(strains.iter().cloned().fold(0.0, f64::max) > 0.2, "large strains: {strains:?}");
        assert!((hyper.e_pa.value / truth().e_pa - 1.0).abs() < 0.01, "{}", hyper.e_pa.value);
        assert!(hyper.e_pa.ci95_low <= truth().e_pa && truth().e_pa <= hyper.e_pa.ci95_high, "{} {}", hyper.e_pa.ci95_low, hyper.e_pa.ci95_high);
        assert!(hyper.rms_error_mm < 0.2, "{}", hyper.rms_error_mm);
        // The linear law cannot follow: a larger misfit.
        assert!(linear.rms_error_mm > 3.0 * hyper.rms_error_mm, "{} vs {}", linear.rms_error_mm, hyper.rms_error_mm);
    }
}

#[test]
fn the_variants_compared_under_both_laws_say_the_data_favour_the_neo_hookean_one() {
    let truth_rod = arm(ElasticLaw::NEO_HOOKEAN);
    let exps = experiments(&truth_rod, 1e-4, 4);
    let priors = identify::output::GeometryPriors::default();
    let linear = arm(ElasticLaw::Linear);
    let (variants, recommended) = identify::output::compare_variants(&linear, &exps, &FitOptions::default(), priors, true, |_| {});
    for v in &variants {
        println!("{:<48} CV {:.3} +- {:.3} mm (other law: {})", v.name, v.loo_rms_mm, v.loo_rms_se_mm, v.other_law);
    }
    assert_eq!(variants.len(), 4, "two variants under each law");
    assert_eq!(variants.iter().filter(|v| v.other_law).count(), 2);
    assert!(variants
        .iter()
        .filter(|v| v.other_law)
        .all(|v| v.name.ends_with("(neo-Hookean)") && v.fitted.as_ref().unwrap().law.as_deref() == Some("neo_hookean")));
    // The recommendation stays under the rod file's law; the sentence says which law the data favour.
    assert!(!variants[recommended.unwrap()].other_law);
    let sentence = identify::output::law_comparison(&variants).unwrap();
    println!("{sentence}");
    assert!(sentence.contains("favour the neo-Hookean law") && sentence.contains("law = \"neo_hookean\""), "{sentence}");
    // Without the comparison: the rod file's law only, no sentence.
    let (only, _) = identify::output::compare_variants(&linear, &exps, &FitOptions::default(), priors, false, |_| {});
    assert!(only.iter().all(|v| !v.other_law) && identify::output::law_comparison(&only).is_none());
}
