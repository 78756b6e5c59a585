//! Static equilibria through the lab's solve workflow: the paper's tables,
//! beam theory, the model's validity, and bad input.

use crate::common;
use common::*;
use lab::solve::{solve, SolveRequest};
use lie::Vec3;

fn request(rod: rod::Rod) -> SolveRequest {
    SolveRequest {
        rod,
        params: None,
        tensions_n: vec![],
        cable_slide: Default::default(),
        tip_force_n: Vec3::zeros(),
        tip_moment_nm: Vec3::zeros(),
        tip_force_offset_body_m: Vec3::zeros(),
        flange: None,
        gravity: true,
        tip_position_m: None,
        tip_rotation_rad: None,
        follow: None,
    }
}

#[test]
fn the_paper_cantilever_tip_and_its_shape() {
    let s = solve(&request(rod("configs/rod/pls-paper-cantilever.toml"))).unwrap();
    // Table II rod, PLS with the paper's 3 sections: 0.79 mm from the
    // converged rod [5.9087, 0, -17.8903] cm (docs/results.md).
    let tip = s.tip_m();
    assert!((tip.x - 0.059247).abs() <= 1e-6 && tip.y.abs() <= 1e-6 && (tip.z + 0.178133).abs() <= 1e-6, "{tip:?}");
    assert!(s.residual_norm.is_finite() && s.residual_norm < 1e-8);
    assert_eq!(s.shape[0].arc_m, 0.0);
    assert!((s.shape.last().unwrap().arc_m - 0.2).abs() < 1e-12);
    assert!(s.shape.windows(2).all(|w| w[1].arc_m > w[0].arc_m), "arc length increases base to tip");
    for r in &s.shape {
        let n: f64 = r.quat_wxyz.iter().map(|v| v * v).sum();
        assert!((n - 1.0).abs() < 1e-9);
    }
    // The CSV holds the same numbers.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shape.csv");
    lab::solve::write_shape_csv(&out, &s.shape).unwrap();
    let mut reader = csv::Reader::from_path(&out).unwrap();
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), rod::shape::COLUMNS.to_vec());
    let last: Vec<f64> = reader.records().last().unwrap().unwrap().iter().map(|v| v.parse().unwrap()).collect();
    assert_eq!(last, s.shape.last().unwrap().values().to_vec());
}

/// A small tip force on the cone without gravity, Euler-Bernoulli modes:
/// the options are applied (4 sections, no shear or stretch in the shape)
/// and the tip deflects as beam theory says, w = P int_0^L (L - x)^2 / (E I(x)) dx.
#[test]
fn a_tip_force_against_beam_theory() {
    let rod = lab::read_rod(&at("configs/rod/pls-paper-cantilever.toml"), Some(4), Some("euler-bernoulli")).unwrap();
    let s = solve(&SolveRequest { tip_force_n: Vec3::new(0.0, 0.0, -0.001), gravity: false, ..request(rod.clone()) }).unwrap();
    assert_eq!((s.rod.section_lengths_m.len(), s.rod.subsegments_per_section, s.n_dof), (4, 8, 10));
    let tip = s.tip_m();
    // Beam theory with the rod file's taper and modulus (Simpson, 2000 panels).
    let (l, e) = (rod.length_m, rod.cross_section.body.e_pa);
    let integrand = |x: f64| {
        let r = rod.cross_section.round_outer().expect("a round rod").radius_m(x, l);
        (l - x).powi(2) / (e * std::f64::consts::PI * r.powi(4) / 4.0)
    };
    let n = 2000;
    let h = l / n as f64;
    let weight = |k: usize| match k {
        0 => 1.0,
        k if k == n => 1.0,
        k if k % 2 == 1 => 4.0,
        _ => 2.0,
    };
    let w = 1e-3 * h / 3.0 * (0..=n).map(|k| integrand(k as f64 * h) * weight(k)).sum::<f64>();
    // 6 mm on 200 mm: geometric nonlinearity and 4 linear-strain sections
    // against a curvature that is not linear in X, both below 0.5 %.
    assert!((-tip.z / w - 1.0).abs() < 5e-3, "tip z {} vs beam theory {w}", tip.z);
    assert!((tip.z + 0.006159).abs() <= 1e-6 && (tip.x - 0.199867).abs() <= 1e-6, "regression: {tip:?}");
    // Euler-Bernoulli: no stretch, no shear anywhere.
    assert!(s.shape.iter().all(|r| r.strain.fixed_rows::<3>(3).iter().all(|e| *e == 0.0)));
}

/// The numbers of docs/results.md's Tables II and III, to 1e-4 cm.
#[test]
fn the_paper_tables() {
    let t = lab::paper::tables(&rod("configs/rod/pls-paper-cantilever.toml")).unwrap();
    let expect2 = [
        ("rodlab converged rod (PLS, 64 sections)", [5.9087, 0.0, -17.8902]),
        ("rodlab PLS (paper's 3 sections)", [5.9247, 0.0, -17.8133]),
        ("rodlab PCS (paper's 3 sections)", [5.6876, 0.0, -17.0529]),
        ("paper FEM (650 elements, 3-D solid)", [5.8479, 0.0, -17.8395]),
    ];
    for (label, want) in expect2 {
        let row = t.table2.iter().find(|r| r.method == label).unwrap_or_else(|| panic!("no row {label}"));
        assert!((row.tip_cm - Vec3::from(want)).amax() <= 5e-5 + 1e-9, "{label}: {:?} vs docs/results.md {want:?}", row.tip_cm);
    }
    let expect3 = [
        ("cosserat", [5.9247, -17.8133]),
        ("euler-bernoulli", [5.9535, -17.4844]),
        ("kirchhoff-extensible", [5.9731, -17.6671]),
        ("timoshenko", [5.9053, -17.6320]),
    ];
    for (label, [x, z]) in expect3 {
        let row = t.table3.iter().find(|r| r.modes == label).unwrap();
        assert!((row.tip_cm.x - x).abs() <= 5e-5 + 1e-9 && (row.tip_cm.z - z).abs() <= 5e-5 + 1e-9, "{label}: {:?}", row.tip_cm);
    }
}

/// Every solve reports how far it is inside the model's validity: the
/// extreme surface fibre strains and the cables' local stretch; beyond 20 %
/// a warning names the place, and "no equilibrium" names the reason.
#[test]
fn solves_outside_the_model_validity_say_so() {
    let arm = rod("configs/rod/pls-cable-arm.toml");
    // A tension that compresses the cable side past 20 %: cable arm, 3 N on cable 4.
    let s = solve(&SolveRequest { tensions_n: vec![0.0, 0.0, 0.0, 3.0], ..request(arm.clone()) }).unwrap();
    let w = s.warnings.join("; ");
    assert!(w.contains("a surface fibre is compressed 90 %") && w.contains("cable cable4 is shortened to 9 %"), "{w}");
    assert!(s.validity.min_fibre_strain < -0.2);
    // A small one stays inside: no warning.
    let s = solve(&SolveRequest { tensions_n: vec![0.0, 0.0, 0.0, 0.1], ..request(arm.clone()) }).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // A pull that stretches fibres by 50 %: a warning.
    let s = solve(&SolveRequest { tip_force_n: Vec3::new(5.0, 0.0, 0.0), ..request(rod("configs/rod/pls-paper-cantilever.toml")) }).unwrap();
    assert!(s.warnings.iter().any(|w| w.contains("outside the model's validity: a surface fibre is stretched")), "{:?}", s.warnings);
    // A tip force of 1 MN balances Newton's equations with a rod stretched
    // 33 km long: not an equilibrium of any rod, a failed computation.
    let e = solve(&SolveRequest { tip_force_n: Vec3::new(0.0, 0.0, -1e6), ..request(rod("configs/rod/pls-paper-cantilever.toml")) }).unwrap_err();
    assert_eq!(e.kind(), lab::Kind::Computation);
    assert!(e.to_string().contains("no physical equilibrium: a surface fibre is stretched"), "{e}");
    // No equilibrium: a failed computation, and the error says why.
    let e = solve(&SolveRequest { tensions_n: vec![0.0, 0.0, 0.0, 6.0], ..request(arm) }).unwrap_err();
    assert_eq!(e.kind(), lab::Kind::Computation);
    let e = e.to_string();
    assert!(e.contains("did not converge") && e.contains("at that load") && e.contains("cable cable4 is shortened to"), "{e}");
}

/// Loads and materials beyond floating point or any material: never
/// "converged" (the solver once reported 0 iterations and an infinite
/// residual as converged, and wrote the undeformed shape).
#[test]
fn absurd_loads_and_materials_never_converge() {
    let arm = rod("configs/rod/pls-cable-arm.toml");
    for req in [
        SolveRequest { tip_force_n: Vec3::new(1e200, 0.0, 0.0), ..request(arm.clone()) },
        SolveRequest { tensions_n: vec![1e300, 0.0, 0.0, 0.0], ..request(arm.clone()) },
        SolveRequest { tip_moment_nm: Vec3::new(0.0, 1e200, 0.0), ..request(arm.clone()) },
    ] {
        let e = solve(&req).unwrap_err();
        assert_eq!(e.kind(), lab::Kind::Computation, "{e}");
    }
    let mut soft = arm.clone();
    soft.cross_section.body.g_pa = 1e-300;
    let e = solve(&request(soft)).unwrap_err();
    assert_eq!(e.kind(), lab::Kind::Computation, "{e}");
    let mut soft = arm;
    soft.cross_section.body.e_pa = 1e-300;
    let e = solve(&request(soft)).unwrap_err();
    assert_eq!(e.kind(), lab::Kind::Computation, "{e}");
}

#[test]
fn bad_loads_are_input_errors_naming_the_flag() {
    let arm = rod("configs/rod/pls-cable-arm.toml");
    expect_input_error(solve(&SolveRequest { tensions_n: vec![1.0, 2.0], ..request(arm.clone()) }), &["--tension", "2 values", "4 cables"]);
    expect_input_error(solve(&SolveRequest { tensions_n: vec![-1.0, 0.0, 0.0, 0.0], ..request(arm.clone()) }), &["--tension", "non-negative"]);
    expect_input_error(solve(&SolveRequest { tip_force_n: Vec3::new(0.0, 0.0, f64::NAN), ..request(arm) }), &["--tip-force", "finite"]);
    expect_input_error(lab::read_rod(&at("configs/rod/pls-cable-arm.toml"), Some(0), None), &["--sections"]);
    expect_input_error(lab::read_rod(&at("configs/rod/pls-cable-arm.toml"), None, Some("rigid")), &["--modes", "rigid"]);
}

/// The clamp's reaction balances what the rod carries: its weight and the
/// tip force, and about the base their moments.
#[test]
fn the_base_reaction_balances_the_weight_and_the_tip_load() {
    let rod = rod("configs/rod/pls-paper-cantilever.toml");
    let tip_force = Vec3::new(0.0, 0.002, -0.001);
    let s = solve(&SolveRequest { tip_force_n: tip_force, ..request(rod.clone()) }).unwrap();
    let g = rod.gravity_m_s2;
    let weight = g * s.mass_kg;
    let f_err = (s.base_force_n + weight + tip_force).norm();
    assert!(f_err < 1e-12 * weight.norm().max(1.0), "force balance off by {f_err} N");
    // About the base: the tip force's moment is subtracted exactly; the
    // weight's, which depends on where the mass sits, is checked for its
    // direction and size.
    let base = s.shape[0].pos_m;
    let tip_moment = (s.tip_m() - base).cross(&tip_force);
    let m = s.base_moment_nm + tip_moment;
    // What is left is the weight's moment: perpendicular to gravity, and
    // of the size of the weight times a lever between 0 and L.
    assert!(m.dot(&g).abs() < 1e-12, "the weight's moment is perpendicular to gravity: {m:?}");
    let lever_m = m.norm() / weight.norm();
    assert!(lever_m > 0.0 && lever_m < rod.length_m, "lever {lever_m} m");
    // Without gravity and with a pure tip force, the moment is exact.
    let s = solve(&SolveRequest { tip_force_n: tip_force, gravity: false, ..request(rod) }).unwrap();
    assert!((s.base_force_n + tip_force).norm() < 1e-15);
    let exact = -(s.tip_m() - s.shape[0].pos_m).cross(&tip_force);
    assert!((s.base_moment_nm - exact).norm() < 1e-12 * exact.norm(), "{:?} vs {exact:?}", s.base_moment_nm);
}
