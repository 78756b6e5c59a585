//! Rods held at both ends: the held system's exact Jacobian against
//! differences, and small-load beams against Euler-Bernoulli's closed forms
//! (clamped-clamped and clamped-pinned under their weight).

use lie::{Mat3, Vec3};
use rod::held::{assemble_held, solve_held, TipHold};
use rod::{Loads, Material, Model, NewtonOptions, Rod, StaticsError};
use std::f64::consts::PI;

/// A slender steel-like rod along +x under gravity -z: L/r = 200, stiff
/// enough that the sag is a hundredth of the radius (the membrane
/// tension a clamped pair adds is then 1e-4 of the bending answer, and
/// shear 1e-3).
fn slender_rod(sections: usize) -> Rod {
    Rod::uniform_cylinder(1.0, 0.005, Material::from_poisson(1e11, 0.3, 1000.0), sections)
}

/// Weight per length [N/m] and bending stiffness [N m^2] of [`slender_rod`].
fn weight_and_bending() -> (f64, f64) {
    let r = 0.005;
    (1000.0 * PI * r * r * 9.81, 1e11 * PI * r.powi(4) / 4.0)
}

/// Height of the centre line at mid-span.
fn midspan_z(model: &Model, q: &nalgebra::DVector<f64>) -> f64 {
    let j = model.joint_at(0.5 * model.rod.length_m);
    model.frames(q).joints[j].pos.z
}

#[test]
fn the_held_systems_tangent_is_its_residuals_derivative() {
    let mut rod = Rod::uniform_cylinder(0.6, 0.01, Material { e_pa: 2e6, g_pa: 7e5, rho_kg_m3: 1100.0 }, 3);
    rod.subsegments_per_section = 3;
    let model = Model::new(&rod, &[]);
    let n = model.n_dof();
    let loads = Loads::gravity().with_tip(0.6, Vec3::new(0.1, -0.2, 0.05), Vec3::new(0.01, 0.0, -0.02));
    let loads = Loads { point_loads: vec![], ..loads };
    let turned = lie::exp(&lie::stack(&Vec3::new(0.3, -0.2, 0.5), &Vec3::zeros())).rot;
    for hold in [TipHold::Pinned { position_m: Vec3::new(0.5, 0.1, -0.2) }, TipHold::Clamped { position_m: Vec3::new(0.5, 0.1, -0.2), rotation: turned }] {
        let c = hold.count();
        let x = nalgebra::DVector::from_fn(n + c, |i, _| 0.7 * ((i as f64 * 1.37).sin()) + if i >= n { 0.3 } else { 0.0 });
        let exact = assemble_held(&model, &loads, hold, &x, true).unwrap().tangent.unwrap();
        let e = 1e-6;
        let mut worst = 0.0_f64;
        for i in 0..n + c {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += e;
            xm[i] -= e;
            let fd = (assemble_held(&model, &loads, hold, &xp, false).unwrap().residual - assemble_held(&model, &loads, hold, &xm, false).unwrap().residual)
                / (2.0 * e);
            let diff = (exact.column(i) - &fd).amax() / exact.amax();
            worst = worst.max(diff);
        }
        println!("{}: tangent against differences {worst:.2e}", if c == 3 { "pinned" } else { "clamped" });
        assert!(worst < 1e-6, "{hold:?}: tangent against differences {worst:.2e} of its largest entry");
    }
}

#[test]
fn a_clamped_clamped_beam_sags_by_w_l4_over_384_ei() {
    let rod = slender_rod(8);
    let (w, ei) = weight_and_bending();
    let l = rod.length_m;
    let model = Model::new(&rod, &[0.5 * l]);
    let hold = TipHold::Clamped { position_m: Vec3::new(l, 0.0, 0.0), rotation: Mat3::identity() };
    let held = solve_held(&model, &Loads::gravity(), hold, None, &NewtonOptions::default()).unwrap();
    let sag = -midspan_z(&model, &held.solution.q);
    let analytic = w * l.powi(4) / (384.0 * ei);
    println!(
        "clamped-clamped: sag {sag:.6e} m, analytic {analytic:.6e} m ({:+.3} %); reaction {:?}",
        100.0 * (sag / analytic - 1.0),
        held.tip_reaction.as_slice()
    );
    assert!((sag / analytic - 1.0).abs() < 5e-3, "mid-span sag {sag:.6e} m, analytic {analytic:.6e} m");
    // The clamp carries half the weight and the end moment w L^2 / 12.
    let r = held.tip_reaction;
    assert!((r[5] / (0.5 * w * l) - 1.0).abs() < 1e-6, "tip's vertical reaction {} N for half the weight {} N", r[5], 0.5 * w * l);
    assert!((r[1].abs() / (w * l * l / 12.0) - 1.0).abs() < 5e-3, "tip's clamp moment {} N m, analytic {} N m", r[1], w * l * l / 12.0);
}

#[test]
fn a_clamped_pinned_beam_sags_by_w_l4_over_192_ei_at_mid_span() {
    let rod = slender_rod(8);
    let (w, ei) = weight_and_bending();
    let l = rod.length_m;
    let model = Model::new(&rod, &[0.5 * l]);
    let hold = TipHold::Pinned { position_m: Vec3::new(l, 0.0, 0.0) };
    let held = solve_held(&model, &Loads::gravity(), hold, None, &NewtonOptions::default()).unwrap();
    let sag = -midspan_z(&model, &held.solution.q);
    let analytic = w * l.powi(4) / (192.0 * ei);
    println!(
        "clamped-pinned: sag {sag:.6e} m, analytic {analytic:.6e} m ({:+.3} %); reaction {:?}",
        100.0 * (sag / analytic - 1.0),
        held.tip_reaction.as_slice()
    );
    assert!((sag / analytic - 1.0).abs() < 5e-3, "mid-span sag {sag:.6e} m, analytic {analytic:.6e} m");
    // A propped cantilever's prop carries 3/8 of the weight, and no moment.
    let r = held.tip_reaction;
    assert!((r[5] / (0.375 * w * l) - 1.0).abs() < 5e-3, "pin's reaction {} N, analytic {} N", r[5], 0.375 * w * l);
    assert_eq!(r.fixed_rows::<3>(0).norm(), 0.0);
}

#[test]
fn a_tip_held_beyond_the_rods_reach_is_refused() {
    let rod = slender_rod(4);
    let model = Model::new(&rod, &[]);
    let hold = TipHold::Pinned { position_m: Vec3::new(1.2, 0.0, 0.0) };
    let err = solve_held(&model, &Loads::gravity(), hold, None, &NewtonOptions::default()).unwrap_err();
    assert!(matches!(err, StaticsError::Unreachable { .. }), "{err}");
    assert_eq!(fault::Fault::kind(&err), fault::Kind::Input);
    assert!(err.to_string().contains("1.2000 m from the base, farther than the rod's length 1.0000 m"), "{err}");
}

#[test]
fn the_clamped_hessian_is_symmetric_when_twisted_and_bent() {
    let rod = Rod::uniform_cylinder(0.5, 0.004, Material::from_poisson(2e6, 0.4, 1000.0), 4);
    let model = Model::new(&rod, &[]);
    let turned = lie::exp(&lie::stack(&Vec3::new(2.0, 0.3, -0.2), &Vec3::zeros())).rot;
    let hold = TipHold::Clamped { position_m: Vec3::new(0.4, 0.05, -0.1), rotation: turned };
    let held = solve_held(&model, &Loads::gravity(), hold, None, &NewtonOptions::default()).unwrap();
    let (k, _) = rod::held::constrained_hessian(&model, &Loads::gravity(), hold, &held).unwrap();
    let asymmetry = (&k - k.transpose()).amax() / k.amax();
    println!("clamped, twisted and bent: Hessian asymmetry {asymmetry:.2e} of its largest entry");
    assert!(asymmetry < 1e-9, "asymmetry {asymmetry:.2e}");
}

/// A column 1 m long, r 5 mm, E 1e7 Pa: 16 sections (the buckling mode's
/// curvature is a full cosine wave).
fn column() -> (Rod, f64) {
    let rod = Rod::uniform_cylinder(1.0, 0.005, Material::from_poisson(1e7, 0.3, 1000.0), 16);
    let ei = 1e7 * PI * 0.005_f64.powi(4) / 4.0;
    (rod, ei)
}

#[test]
fn a_clamped_clamped_column_buckles_at_4_pi2_ei_over_l2() {
    let (rod, ei) = column();
    let l = rod.length_m;
    let model = Model::new(&rod, &[]);
    let hold_at = |d: f64| TipHold::Clamped { position_m: Vec3::new(l - d, 0.0, 0.0), rotation: Mat3::identity() };
    let opts = NewtonOptions::default();
    let d_cr = rod::held::critical_along(&model, &Loads::none(), &hold_at, (0.0, 5e-4, 10), 1e-9, &opts).unwrap().expect("buckles");
    let held = solve_held(&model, &Loads::none(), hold_at(d_cr), None, &opts).unwrap();
    let p = -held.tip_reaction[3];
    let euler = 4.0 * PI * PI * ei / (l * l);
    println!("clamped-clamped column: buckles at {p:.6} N (clamp moved in {d_cr:.4e} m), Euler {euler:.6} N ({:+.3} %)", 100.0 * (p / euler - 1.0));
    assert!((p / euler - 1.0).abs() < 5e-3, "critical load {p} N, Euler {euler} N");
}

#[test]
fn a_straight_clamped_rod_twisted_at_one_end_snaps_at_greenhills_twist() {
    let (rod, _) = column();
    let l = rod.length_m;
    let model = Model::new(&rod, &[]);
    let hold_at =
        |twist: f64| TipHold::Clamped { position_m: Vec3::new(l, 0.0, 0.0), rotation: lie::exp(&lie::stack(&Vec3::new(twist, 0.0, 0.0), &Vec3::zeros())).rot };
    // M L / B = 8.9868 (the root of tan(x/2) = x/2, doubled) with
    // M = C twist / L: twist = 8.9868 B / C, B / C = 1 + nu.
    let expected = 8.9868 * 1.3;
    let opts = NewtonOptions::default();
    let twist = rod::held::critical_along(&model, &Loads::none(), &hold_at, (0.0, 1.5 * expected, 15), 1e-6, &opts).unwrap().expect("snaps");
    println!("twisted clamped rod: unstable beyond {twist:.5} rad, Greenhill {expected:.5} rad ({:+.3} %)", 100.0 * (twist / expected - 1.0));
    assert!((twist / expected - 1.0).abs() < 1e-2, "critical twist {twist} rad, Greenhill {expected} rad");
}
