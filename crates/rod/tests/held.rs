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
