//! The hyperelastic section law against closed forms: a neo-Hookean and a
//! Mooney-Rivlin bar in tension and compression (the incompressible
//! uniaxial solution, e.g. Ogden, *Non-linear Elastic Deformations*,
//! Sec. 7.2: nominal stress `2 (lambda - lambda^-2)(C10 + C01 / lambda)`),
//! pure bending of a rectangle (the fibre integrals in closed form), and
//! the linear model at small strain.

use lie::Vec3;
use rod::statics::{model_for, solve};
use rod::terms::{self, Elastic};
use rod::{CrossSection, ElasticLaw, Loads, Material, Model, NewtonOptions, PointLoad, Profile, Rod, Shape, StrainModes};
use std::f64::consts::PI;

const E: f64 = 1.2e6;

fn silicone() -> Material {
    Material { e_pa: E, g_pa: E / 3.0, rho_kg_m3: 1100.0 }
}

fn bar(law: ElasticLaw) -> Rod {
    let mut rod = Rod::uniform_cylinder(0.1, 0.008, silicone(), 2);
    rod.gravity_m_s2 = Vec3::zeros();
    rod.elastic_law = law;
    rod
}

fn tip_force(rod: &Rod, force_n: Vec3, moment_nm: Vec3) -> (Model, nalgebra::DVector<f64>) {
    let loads =
        Loads { point_loads: vec![PointLoad { x_m: rod.length_m, offset_body_m: Vec3::zeros(), force_n, moment_nm, follower: false }], ..Loads::none() };
    let model = model_for(rod, &loads);
    let sol = solve(&model, &loads, None, &NewtonOptions { max_load_steps: 64, ..NewtonOptions::default() }).expect("converges");
    (model, sol.q)
}

/// Incompressible Mooney-Rivlin nominal stress in uniaxial tension.
fn uniaxial_nominal_stress_pa(lambda: f64, c10: f64, c01: f64) -> f64 {
    2.0 * (lambda - lambda.powi(-2)) * (c10 + c01 / lambda)
}

#[test]
fn a_bar_in_tension_or_compression_stretches_as_the_uniaxial_closed_form() {
    for (law, c10, c01) in [(ElasticLaw::NEO_HOOKEAN, E / 6.0, 0.0), (ElasticLaw::Hyperelastic { c01_fraction: 0.3 }, 0.7 * E / 6.0, 0.3 * E / 6.0)] {
        for lambda in [1.6, 1.2, 0.8, 0.6] {
            let mut rod = bar(law);
            // Stretch only: a straight bar in compression is an (unstable)
            // equilibrium; the closed form is about the material, not buckling.
            rod.modes = StrainModes { free: [false, false, false, true, false, false] };
            let area = PI * 0.008f64.powi(2);
            let force = uniaxial_nominal_stress_pa(lambda, c10, c01) * area;
            let (model, q) = tip_force(&rod, Vec3::new(force, 0.0, 0.0), Vec3::zeros());
            let tip = model.frames(&q).joints.last().unwrap().pos;
            let linear_tip = rod.length_m * (1.0 + force / (E * area));
            println!(
                "{}, lambda {lambda}: F {force:.2} N, tip {:.6} m (closed form {:.6}, linear law {linear_tip:.6})",
                law.name(),
                tip.x,
                rod.length_m * lambda
            );
            assert!((tip.x / (rod.length_m * lambda) - 1.0).abs() < 1e-9, "{} lambda {lambda}: {}", law.name(), tip.x);
        }
    }
}

/// Axial force and moment per `mu b` of a rectangle (height `h` along z)
/// whose fibres stretch `lambda(z) = a + k z`, neo-Hookean:
/// `int (lambda - lambda^-2) dz` and `int z (lambda - lambda^-2) dz` in
/// closed form.
fn rectangle_resultants(a: f64, k: f64, h: f64) -> (f64, f64) {
    let (lo, hi) = (a - 0.5 * k * h, a + 0.5 * k * h);
    let n = |l: f64| l * l / (2.0 * k) + 1.0 / (k * l);
    let m = |l: f64| (l.powi(3) / 3.0 - a * l * l / 2.0 - l.ln() - a / l) / (k * k);
    (n(hi) - n(lo), m(hi) - m(lo))
}

#[test]
fn pure_bending_of_a_rectangle_matches_the_closed_form_with_its_axial_shift() {
    let (b, h) = (0.012, 0.02);
    for surface_strain in [0.05, 0.3, 0.45] {
        let k = 2.0 * surface_strain / h;
        // The stretch a at which the section carries no axial force (the
        // compressed side is stiffer: a > 1), by bisection.
        let (mut lo, mut hi) = (0.8, 1.2);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if rectangle_resultants(mid, k, h).0 > 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let a = 0.5 * (lo + hi);
        let moment = E / 3.0 * b * rectangle_resultants(a, k, h).1;
        let mut rod = bar(ElasticLaw::NEO_HOOKEAN);
        rod.cross_section = CrossSection {
            shape: Shape::Rectangle { width: Profile::constant(b), height: Profile::constant(h), wall_m: None, shear_coefficient: [0.85; 2] },
            body: silicone(),
        };
        let (model, q) = tip_force(&rod, Vec3::zeros(), Vec3::new(0.0, moment, 0.0));
        let strain = model.strain_at(0.5 * rod.length_m, &q);
        let linear_k = moment / (E * b * h.powi(3) / 12.0);
        println!(
            "surface strain {surface_strain}: M {moment:.5} N m, K_y {:.6} (closed form {k:.6}, linear law {linear_k:.6}), stretch {:.7} (closed form {a:.7})",
            strain[1], strain[3]
        );
        assert!((strain[1] / k - 1.0).abs() < 1e-6, "K_y {} vs {k}", strain[1]);
        assert!((strain[3] - a).abs() < 1e-7, "stretch {} vs {a}", strain[3]);
        if surface_strain > 0.2 {
            assert!(strain[3] - 1.0 > 1e-3, "a large bend lengthens the centre line: {}", strain[3]);
        }
    }
}

/// Tapered, with a hole, and a rectangle tube: every section the law integrates.
fn specimens() -> Vec<(Rod, &'static str)> {
    let mut tapered = bar(ElasticLaw::NEO_HOOKEAN);
    tapered.cross_section = CrossSection {
        shape: Shape::Round { outer: Profile::Linear { base_m: 0.01, tip_m: 0.006 }, hole: Some(Profile::constant(0.002)), core: None },
        body: silicone(),
    };
    let mut cored = bar(ElasticLaw::Hyperelastic { c01_fraction: 0.2 });
    cored.cross_section = CrossSection {
        shape: Shape::Round { outer: Profile::constant(0.008), hole: None, core: Some((0.001, Material { e_pa: 2e11, g_pa: 8e10, rho_kg_m3: 7800.0 })) },
        body: silicone(),
    };
    let mut tube = bar(ElasticLaw::NEO_HOOKEAN);
    tube.cross_section = CrossSection {
        shape: Shape::Rectangle { width: Profile::constant(0.02), height: Profile::constant(0.012), wall_m: Some(0.002), shear_coefficient: [0.4, 0.4] },
        body: silicone(),
    };
    vec![(tapered, "tapered with a hole"), (cored, "steel core, Mooney-Rivlin"), (tube, "rectangular tube")]
}

#[test]
fn at_small_strain_the_law_is_the_linear_model() {
    for (rod, what) in specimens() {
        let linear = Rod { elastic_law: ElasticLaw::Linear, ..rod.clone() };
        // The tangent at rest: the same matrix.
        let (m_h, m_l) = (Model::new(&rod, &[]), Model::new(&linear, &[]));
        let q0 = nalgebra::DVector::zeros(m_h.n_dof());
        let (h, l) = (terms::assemble(&m_h, &q0, &[&Elastic], true).tangent.unwrap(), terms::assemble(&m_l, &q0, &[&Elastic], true).tangent.unwrap());
        let tangent_gap = (&h - &l).amax() / l.amax();
        assert!(tangent_gap < 1e-12, "{what}: tangent at rest off by {tangent_gap:.1e}");
        // A load that strains the fibres by about 1e-6: the deflections agree to 1e-6.
        let force = Vec3::new(0.3, -0.2, 0.5) * 1e-6 * E * 1e-4;
        let tip = |r: &Rod| {
            let (m, q) = tip_force(r, force, Vec3::new(0.0, 0.0, 1e-9));
            m.frames(&q).joints.last().unwrap().pos - Vec3::new(r.length_m, 0.0, 0.0)
        };
        let (dh, dl) = (tip(&rod), tip(&linear));
        let gap = (dh - dl).norm() / dl.norm();
        println!("{what}: tip deflection {:.4e} m, hyperelastic vs linear {gap:.2e}", dl.norm());
        assert!(gap < 1e-6, "{what}: {gap:.2e}");
    }
}

#[test]
fn the_hyperelastic_elastic_term_is_the_gradient_of_its_energy_with_its_exact_tangent() {
    for (mut rod, what) in specimens() {
        rod.rest_curvature_per_m = Vec3::new(0.5, -1.0, 2.0);
        for model in [Model::new(&rod, &[0.04]), Model::new(&rod, &[0.04]).with_floating_base()] {
            let n = model.n_dof();
            let ns = model.n_strain_dof();
            let m = model.free.len();
            // Strains up to 40 %: bends of 25 1/m on a 8-10 mm radius, stretch 10 %.
            let q = nalgebra::DVector::from_fn(n, |i, _| {
                let wave = ((i * 7 + 3) as f64).sin();
                if i >= ns {
                    0.1 * wave
                } else if model.free[i % m] < 3 {
                    25.0 * wave
                } else {
                    0.1 * wave
                }
            });
            let a = terms::assemble(&model, &q, &[&Elastic], true);
            let h = a.tangent.unwrap();
            let fd = terms::residual_jacobian_by_differences(&model, &q, &[&Elastic], 1e-7);
            let worst = (&h - &fd).amax() / h.amax();
            assert!(worst < 1e-6, "{what}: tangent off by {worst:.1e}");
            for i in 0..n {
                let e = 1e-7;
                let mut qp = q.clone();
                qp[i] += e;
                let mut qm = q.clone();
                qm[i] -= e;
                let de = (terms::energy(&model, &qp, &[&Elastic]).unwrap() - terms::energy(&model, &qm, &[&Elastic]).unwrap()) / (2.0 * e);
                assert!((de - a.residual[i]).abs() <= 1e-6 * a.residual.amax(), "{what}: dof {i}: dE/dq {de} vs r {}", a.residual[i]);
            }
        }
    }
}

#[test]
fn validity_warnings_name_the_law_and_its_limit() {
    // A neo-Hookean rod bent to 30 % surface strain: inside its 50 %, beyond the linear law's 20 %.
    for (law, warned) in [(ElasticLaw::Linear, true), (ElasticLaw::NEO_HOOKEAN, false)] {
        let rod = bar(law);
        let model = Model::new(&rod, &[]);
        let q = model.uniform_q(&lie::Vec6::new(0.0, 0.3 / 0.008, 0.0, 1.0, 0.0, 0.0));
        let warnings = rod::validity::validity(&model, &q).warnings(&[]);
        assert_eq!(!warnings.is_empty(), warned, "{}: {warnings:?}", law.name());
        if warned {
            assert!(warnings[0].contains("linear elastic law") && warnings[0].contains("beyond 20 %"), "{}", warnings[0]);
        }
    }
    let model = Model::new(&bar(ElasticLaw::NEO_HOOKEAN), &[]);
    let q = model.uniform_q(&lie::Vec6::new(0.0, 0.6 / 0.008, 0.0, 1.0, 0.0, 0.0));
    let warnings = rod::validity::validity(&model, &q).warnings(&[]);
    assert!(warnings.iter().any(|w| w.contains("neo-Hookean law") && w.contains("beyond 50 %")), "{warnings:?}");
}

#[test]
fn the_rod_file_chooses_the_law_and_refuses_what_it_cannot_integrate() {
    let base = "length_m = 0.2\nsections_m = [0.2]\n[radius]\nbase_m = 0.01\ntip_m = 0.01\n[material]\ne_pa = 1e6\npoisson = 0.49\nrho_kg_m3 = 1100\n";
    let read = |extra: &str| Rod::from_toml_str(&format!("{base}{extra}"), "rod.toml");
    assert_eq!(read("").unwrap().elastic_law, ElasticLaw::Linear);
    assert_eq!(read("law = \"neo_hookean\"\n").unwrap().elastic_law, ElasticLaw::NEO_HOOKEAN);
    assert_eq!(read("law = \"mooney_rivlin\"\nc01_fraction = 0.25\n").unwrap().elastic_law, ElasticLaw::Hyperelastic { c01_fraction: 0.25 });
    for (extra, field) in [
        ("law = \"ogden\"\n", "material.law"),
        ("law = \"mooney_rivlin\"\n", "material.c01_fraction"),
        ("law = \"mooney_rivlin\"\nc01_fraction = 1.0\n", "material.c01_fraction"),
        ("law = \"neo_hookean\"\nc01_fraction = 0.2\n", "material.c01_fraction"),
    ] {
        let e = read(extra).unwrap_err().to_string();
        assert!(e.contains("rod.toml") && e.contains(field) && !e.contains('\n'), "{extra}: {e}");
    }
}
