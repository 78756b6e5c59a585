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
    for hold in [TipHold::Pinned { position_m: Vec3::new(0.5, 0.1, -0.2) }, TipHold::clamped(Vec3::new(0.5, 0.1, -0.2), turned)] {
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
    let hold = TipHold::clamped(Vec3::new(l, 0.0, 0.0), Mat3::identity());
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
    let hold = TipHold::clamped(Vec3::new(0.4, 0.05, -0.1), turned);
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
    let hold_at = |d: f64| TipHold::clamped(Vec3::new(l - d, 0.0, 0.0), Mat3::identity());
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
    let hold_at = |twist: f64| TipHold::clamped(Vec3::new(l, 0.0, 0.0), lie::exp(&lie::stack(&Vec3::new(twist, 0.0, 0.0), &Vec3::zeros())).rot);
    // M L / B = 8.9868 (the root of tan(x/2) = x/2, doubled) with
    // M = C twist / L: twist = 8.9868 B / C, B / C = 1 + nu.
    let expected = 8.9868 * 1.3;
    let opts = NewtonOptions::default();
    let twist = rod::held::critical_along(&model, &Loads::none(), &hold_at, (0.0, 1.5 * expected, 15), 1e-6, &opts).unwrap().expect("snaps");
    println!("twisted clamped rod: unstable beyond {twist:.5} rad, Greenhill {expected:.5} rad ({:+.3} %)", 100.0 * (twist / expected - 1.0));
    assert!((twist / expected - 1.0).abs() < 1e-2, "critical twist {twist} rad, Greenhill {expected} rad");
}

/// Jacobi's amplitude am(u | k) by the arithmetic-geometric mean
/// (Abramowitz & Stegun 16.4), independent of the rod code.
fn jacobi_am(u: f64, k: f64) -> f64 {
    let (mut a, mut b) = (1.0_f64, (1.0 - k * k).sqrt());
    let mut cs = vec![];
    let mut c = k;
    while c.abs() > 1e-15 && cs.len() < 40 {
        cs.push((c, a));
        let (an, bn) = (0.5 * (a + b), (a * b).sqrt());
        c = 0.5 * (a - b);
        (a, b) = (an, bn);
    }
    cs.push((c, a));
    let mut phi = 2f64.powi(cs.len() as i32 - 1) * a * u;
    for &(c, a) in cs.iter().rev().take(cs.len() - 1) {
        phi = 0.5 * (phi + (c / a * phi.sin()).asin());
    }
    phi
}

/// Legendre's incomplete integral of the second kind E(phi | k), Simpson
/// on 4000 intervals (a smooth integrand).
fn elliptic_e(phi: f64, k: f64) -> f64 {
    let n = 4000;
    let h = phi / n as f64;
    let f = |t: f64| (1.0 - k * k * t.sin().powi(2)).sqrt();
    let inner: f64 = (1..n).map(|i| if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h)).sum();
    h / 3.0 * (f(0.0) + inner + f(phi))
}

/// K(k) = pi / (2 AGM(1, k')).
fn elliptic_k(k: f64) -> f64 {
    let (mut a, mut b) = (1.0_f64, (1.0 - k * k).sqrt());
    for _ in 0..40 {
        (a, b) = (0.5 * (a + b), (a * b).sqrt());
    }
    PI / (2.0 * a)
}

/// The clamped-clamped elastica (first mode) of length `l` whose clamps are
/// `d` apart: with u = 4 K s / l, x(s) = (l / 2K) E(am u) - s and the
/// deflection (k l / K)(1 - cn u) / 2, k from d / l = 2 E(k) / K(k) - 1.
fn elastica(l: f64, d: f64) -> impl Fn(f64) -> (f64, f64) {
    let ratio = |k: f64| 2.0 * elliptic_e(0.5 * PI, k) / elliptic_k(k) - 1.0;
    let (mut lo, mut hi) = (1e-9, 1.0 - 1e-12);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if ratio(mid) > d / l {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let k = 0.5 * (lo + hi);
    let lambda = 4.0 * elliptic_k(k) / l;
    move |s: f64| {
        let am = jacobi_am(lambda * s, k);
        (2.0 / lambda * elliptic_e(am, k) - s, 2.0 * k / lambda * (1.0 - am.cos()))
    }
}

#[test]
fn past_euler_the_column_follows_the_elastica_to_a_tenth_of_a_percent_of_its_length() {
    // Slender (L / r = 500) so that stretch and shear stay below 1e-4 L.
    let rod = Rod::uniform_cylinder(1.0, 0.002, Material::from_poisson(1e7, 0.3, 1000.0), 16);
    let l = rod.length_m;
    let model = Model::new(&rod, &[]);
    let hold_at = |d: f64| TipHold::clamped(Vec3::new(l - d, 0.0, 0.0), Mat3::identity());
    let opts = NewtonOptions::default();
    let loads = Loads::none();
    let d_cr = rod::held::critical_along(&model, &loads, &hold_at, (0.0, 1e-4, 10), 1e-10, &opts).unwrap().expect("buckles");
    // Past the bifurcation: the straight column is unstable, the mode of
    // its lowest eigenvalue leads onto the buckled branch, followed by
    // moving the clamp in.
    let past = solve_held(&model, &loads, hold_at(1.05 * d_cr), None, &opts).unwrap();
    let (lowest, mode) = rod::held::lowest_mode(&model, &loads, hold_at(1.05 * d_cr), &past).unwrap();
    assert!(lowest < 0.0, "the straight column past Euler's load is unstable: {lowest}");
    let scale = 0.5 / mode.amax();
    let mut q = &past.solution.q + mode * scale;
    let mut held = None;
    for d in [0.01, 0.05, 0.1, 0.2, 0.3] {
        let h = solve_held(&model, &loads, hold_at(d), Some(&q), &opts).unwrap();
        q = h.solution.q.clone();
        held = Some(h);
    }
    let held = held.unwrap();
    let (lowest, _) = rod::held::lowest_mode(&model, &loads, hold_at(0.3), &held).unwrap();
    // Stable, or neutral: an isotropic rod's buckled loop turns freely
    // about the line between its clamps (each section turned about its
    // tangent by the same angle keeps both clamps' frames), a zero
    // eigenvalue to round-off.
    let rest = solve_held(&model, &loads, hold_at(0.0), None, &opts).unwrap();
    let (at_rest, _) = rod::held::lowest_mode(&model, &loads, hold_at(0.0), &rest).unwrap();
    println!("lowest eigenvalue on the buckled branch {lowest:.3e}, {:.1e} of the straight column's at rest", lowest / at_rest);
    assert!(lowest > -1e-6 * at_rest, "the buckled branch is stable or neutral: {lowest:e} against {at_rest:e} at rest");
    let reference = elastica(l, l - 0.3);
    let frames = model.frames(&held.solution.q);
    let mut worst = 0.0_f64;
    for (j, x_m) in model.joint_x_m.iter().enumerate() {
        let p = frames.joints[j].pos;
        let (x, w) = reference(*x_m);
        // The buckling plane is any plane through the axis: compare the
        // deflection's size.
        let dev = ((p.x - x).powi(2) + ((p.y * p.y + p.z * p.z).sqrt() - w).powi(2)).sqrt();
        worst = worst.max(dev);
    }
    println!("post-buckled clamped-clamped elastica, clamps 0.7 L apart: worst distance {:.3e} L over {} joints", worst / l, model.joint_x_m.len());
    assert!(worst < 1e-3 * l, "shape off the elastica by {worst:.3e} m");
}

/// The polyurethane cord hanging as a loop between two clamps 0.1 m apart
/// (the shipped rod file), its tip clamp twisted by `t` about its axis.
fn twisted_loop(rod: &Rod) -> (Model, impl Fn(f64) -> TipHold) {
    let model = Model::new(rod, &[]);
    let up = lie::exp(&lie::stack(&Vec3::new(0.0, -PI / 2.0, 0.0), &Vec3::zeros())).rot;
    let hold_at = move |t: f64| TipHold::clamped(Vec3::new(0.1, 0.0, 0.0), up * lie::exp(&lie::stack(&Vec3::new(t, 0.0, 0.0), &Vec3::zeros())).rot);
    (model, hold_at)
}

fn cord() -> Rod {
    Rod::from_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/rod/clamped-clamped-cable.toml")).unwrap()
}

#[test]
fn a_twisted_loop_snaps_at_a_limit_point_and_its_branch_is_followed_back_past_it() {
    use rod::branch::{follow, BranchOptions, CriticalKind};
    let rod = cord();
    let (model, hold_at) = twisted_loop(&rod);
    let loads = Loads::gravity();
    let opts = NewtonOptions::default();
    let options = BranchOptions { t_end: 9.0, first_step: 0.5, max_points: 400, t_tolerance: 1e-7, stop_at_first: false };
    let branch = follow(&model, &loads, &hold_at, 0.0, None, &options, &opts).unwrap();
    let kinds: Vec<_> = branch.critical.iter().map(|c| (c.kind, c.t)).collect();
    println!("twisted loop: {} points, critical {kinds:?}", branch.points.len());
    // Twist grows to the snap, turns back on the unstable branch, turns
    // again where that branch regains stability, and grows past the snap.
    assert!(kinds.len() == 2 && kinds.iter().all(|(k, _)| *k == CriticalKind::LimitPoint), "{kinds:?}");
    let (snap, back) = (kinds[0].1, kinds[1].1);
    assert!(back < snap, "the unstable branch turns back below the snap: {back} < {snap}");
    assert!(branch.points.iter().any(|p| p.lowest < 0.0) && branch.points.last().unwrap().t >= 9.0);
    // Independently of the follower: Newton with the twist as a load
    // (plain continuation) holds the loop just below the snap, and just
    // above it lands on a shape far from the last one (the snap).
    let below = snap - 1e-3;
    let mut q = None;
    // Steps that shrink toward the snap (a long last step lands on the
    // unstable branch, which lies sqrt(distance) away).
    let schedule = (0..=16).map(|k| 0.4 * k as f64).chain([6.5, 6.53, 6.54, below]);
    for t in schedule {
        q = Some(solve_held(&model, &loads, hold_at(t), q.as_ref(), &opts).unwrap().solution.q);
    }
    let q_below = q.unwrap();
    let lowest_below =
        rod::held::stability_eigenvalue(&model, &loads, hold_at(below), &solve_held(&model, &loads, hold_at(below), Some(&q_below), &opts).unwrap()).unwrap();
    let tip_y = |q: &nalgebra::DVector<f64>| model.frames(q).joints.iter().map(|j| j.pos.y).fold(0.0_f64, |a, y| if y.abs() > a.abs() { y } else { a });
    // Past the snap there is no equilibrium near the last one: Newton from
    // it fails, or lands on a far shape.
    let above = solve_held(&model, &loads, hold_at(snap + 1e-3), Some(&q_below), &opts);
    let jumped = above.as_ref().map(|a| (tip_y(&q_below) - tip_y(&a.solution.q)).abs());
    // At a fold the stiffness vanishes as the square root of the distance.
    let closer = snap - 1e-4;
    let lowest_closer =
        rod::held::stability_eigenvalue(&model, &loads, hold_at(closer), &solve_held(&model, &loads, hold_at(closer), Some(&q_below), &opts).unwrap()).unwrap();
    println!(
        "snap at {snap:.6} rad: lowest eigenvalue {lowest_below:.3e} 1 mrad below, {lowest_closer:.3e} 0.1 mrad below (ratio {:.3}, sqrt 10 = 3.162; 1.06e-4 untwisted), widest y {:.4} m; 1 mrad above: {jumped:?}",
        lowest_below / lowest_closer,
        tip_y(&q_below)
    );
    assert!(lowest_closer > 0.0 && ((lowest_below / lowest_closer) / 10f64.sqrt() - 1.0).abs() < 0.05, "{lowest_below} and {lowest_closer}");
    assert!(jumped.map_or(true, |d| d > 0.05), "a twist 2 mrad further has no equilibrium near the last: {jumped:?}");
}

#[test]
fn a_limit_points_sensitivity_from_its_null_vector_matches_differences_of_the_located_snap() {
    use rod::branch::{first_critical, limit_point_sensitivity};
    let opts = NewtonOptions::default();
    let loads = Loads::gravity();
    let snap_at = |g_pa: f64| {
        let mut rod = cord();
        rod.cross_section.body.g_pa = g_pa;
        let (model, hold_at) = twisted_loop(&rod);
        let c = first_critical(&model, &loads, &hold_at, (0.0, 9.0, 18), 1e-9, &opts).unwrap().expect("snaps");
        (rod, c)
    };
    let g = cord().cross_section.body.g_pa;
    let (rod, critical) = snap_at(g);
    let (model, hold_at) = twisted_loop(&rod);
    let (psi, psi_h_t) = limit_point_sensitivity(&model, &loads, &hold_at, &critical).unwrap();
    // dH/dG at the snap's unknowns, by differences of the held residual
    // between two rods (the residual is linear in G).
    let x = critical.point.held.unknowns(hold_at(critical.point.t));
    let residual = |g_pa: f64| {
        let mut r = cord();
        r.cross_section.body.g_pa = g_pa;
        let (m, h) = twisted_loop(&r);
        rod::held::assemble_held(&m, &loads, h(critical.point.t), &x, false).unwrap().residual
    };
    let dh_dg = (residual(g * 1.001) - residual(g * 0.999)) / (0.002 * g);
    let from_null_vector = -psi.dot(&dh_dg) / psi_h_t * g;
    let fd = (snap_at(g * 1.01).1.t - snap_at(g * 0.99).1.t) / 0.02;
    println!("snap {:.6} rad; d snap / d ln G: {from_null_vector:.5} from the null vector, {fd:.5} by differences", critical.t);
    assert!((from_null_vector / fd - 1.0).abs() < 0.01, "{from_null_vector} vs {fd}");
}

/// A planar Reissner rod (bending about y, stretch and shear in the x-z
/// plane) clamped at the origin pointing +x, solved by shooting: an
/// independent reference for loops between two clamps. Unknowns: the
/// base's curvature and the internal force there; RK4 over `steps`.
struct PlanarShooting {
    length_m: f64,
    /// E I_y, E A, G k A \[N m^2, N, N\].
    ei: f64,
    ea: f64,
    gka: f64,
    /// Weight per length \[N/m\] (along -z).
    weight_n_m: f64,
    steps: usize,
}

impl PlanarShooting {
    /// (theta, x, z) along the rod from base curvature `k0` and base force
    /// (`nx`, `nz`): every step's arc length and state.
    fn integrate(&self, k0: f64, nx: f64, nz0: f64) -> Vec<(f64, [f64; 4])> {
        let h = self.length_m / self.steps as f64;
        // y = [theta, theta', x, z]
        let rate = |s: f64, y: &[f64; 4]| -> [f64; 4] {
            let nz = nz0 + self.weight_n_m * s;
            let (c, sn) = (y[0].cos(), y[0].sin());
            let (d1, d3) = ([c, -sn], [sn, c]);
            let stretch = 1.0 + (nx * d1[0] + nz * d1[1]) / self.ea;
            let shear = (nx * d3[0] + nz * d3[1]) / self.gka;
            let r = [stretch * d1[0] + shear * d3[0], stretch * d1[1] + shear * d3[1]];
            [y[1], (r[0] * nz - r[1] * nx) / self.ei, r[0], r[1]]
        };
        let mut y = [0.0, k0, 0.0, 0.0];
        let mut out = vec![(0.0, y)];
        for i in 0..self.steps {
            let s = i as f64 * h;
            let add = |a: &[f64; 4], b: &[f64; 4], w: f64| -> [f64; 4] { std::array::from_fn(|k| a[k] + w * b[k]) };
            let k1 = rate(s, &y);
            let k2 = rate(s + h / 2.0, &add(&y, &k1, h / 2.0));
            let k3 = rate(s + h / 2.0, &add(&y, &k2, h / 2.0));
            let k4 = rate(s + h, &add(&y, &k3, h));
            y = std::array::from_fn(|k| y[k] + h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k]));
            out.push((s + h, y));
        }
        out
    }

    /// The base's curvature and force that end the rod at (`x_end`, 0)
    /// turned by `theta_end`, by Newton on the three end errors from `guess`.
    fn solve(&self, theta_end: f64, x_end: f64, guess: [f64; 3]) -> [f64; 3] {
        let miss = |u: &[f64; 3]| {
            let end = self.integrate(u[0], u[1], u[2]).last().unwrap().1;
            [end[0] - theta_end, end[2] - x_end, end[3]]
        };
        let mut u = guess;
        for _ in 0..50 {
            let f = miss(&u);
            if f.iter().map(|v| v.abs()).fold(0.0, f64::max) < 1e-12 {
                return u;
            }
            let mut j = nalgebra::Matrix3::zeros();
            for c in 0..3 {
                let step = 1e-6 * (1.0 + u[c].abs());
                let (mut a, mut b) = (u, u);
                a[c] += step;
                b[c] -= step;
                let (fa, fb) = (miss(&a), miss(&b));
                for r in 0..3 {
                    j[(r, c)] = (fa[r] - fb[r]) / (2.0 * step);
                }
            }
            let du = j.lu().solve(&nalgebra::Vector3::from(f)).expect("shooting Jacobian");
            // Damped: the step halved until the end errors shrink.
            let norm = |f: [f64; 3]| f.iter().map(|v| v * v).sum::<f64>();
            let mut t = 1.0;
            let mut next: [f64; 3] = std::array::from_fn(|k| u[k] - du[k]);
            while norm(miss(&next)) > norm(f) && t > 1e-3 {
                t /= 2.0;
                next = std::array::from_fn(|k| u[k] - t * du[k]);
            }
            u = next;
        }
        panic!("the shooting did not converge: miss {:?}", miss(&u));
    }
}

/// A full-turn loop: the 1.5 m cord clamped at both ends 0.123 m apart,
/// both clamps pointing +x, the tip clamp's rotation vector one whole turn
/// about y (its rotation is none). Without gravity and with it, `solve_held`
/// reaches the loop (from the start wound by the whole turn: before, the
/// straight rod compressed 92 % was returned) and its centre line lies on
/// the shooting reference's to 1e-4 of the length (24 sections); it turns 2 pi, and is
/// neutral (zero to round-off) without gravity, stable with it.
#[test]
fn a_full_turn_loop_between_two_clamps_matches_a_shooting_reference() {
    let mut rod = cord();
    rod.base = lie::Pose::identity();
    // 24 sections: with gravity the worst distance converges as h^2
    // (12, 24, 48 sections: 2.9e-4, 5.4e-5, 1.2e-5 of L; without: 6e-6,
    // 4e-7, 1e-7).
    rod.section_lengths_m = vec![rod.length_m / 24.0; 24];
    let model = Model::new(&rod, &[]);
    let props = rod.cross_section.properties(0.0, rod.length_m);
    let k = props.stiffness_diag;
    let gap_m = -0.123;
    let hold = TipHold::clamped_by_vector(Vec3::new(gap_m, 0.0, 0.0), Vec3::new(0.0, 2.0 * PI, 0.0));
    let mut guess = [2.0 * PI / rod.length_m, 0.0, 0.0];
    for (loads, g) in [(Loads::none(), 0.0), (Loads::gravity(), 9.81)] {
        let held = solve_held(&model, &loads, hold, None, &NewtonOptions::default()).unwrap();
        let shooting = PlanarShooting { length_m: rod.length_m, ei: k[1], ea: k[3], gka: k[5], weight_n_m: props.mass_per_length_kg_m * g, steps: 6000 };
        // Gravity switched on in twentieths from the loop without it.
        for k in 1..=20 {
            let step = PlanarShooting { weight_n_m: shooting.weight_n_m * k as f64 / 20.0, ..shooting };
            guess = step.solve(2.0 * PI, gap_m, guess);
        }
        let reference = shooting.integrate(guess[0], guess[1], guess[2]);
        let frames = model.frames(&held.solution.q);
        let mut worst = 0.0_f64;
        for (x, g) in model.joint_x_m.iter().zip(&frames.joints) {
            let i = reference.partition_point(|r| r.0 < *x).clamp(1, reference.len() - 1);
            let (a, b) = (&reference[i - 1], &reference[i]);
            let w = (x - a.0) / (b.0 - a.0);
            let (rx, rz) = (a.1[2] * (1.0 - w) + b.1[2] * w, a.1[3] * (1.0 - w) + b.1[3] * w);
            worst = worst.max(((g.pos.x - rx).powi(2) + g.pos.y.powi(2) + (g.pos.z - rz).powi(2)).sqrt());
        }
        let shape = rod::shape::shape(&model, &held.solution.q);
        let winding = rod::shape::winding_rad(&shape);
        let lowest = rod::held::stability_eigenvalue(&model, &loads, hold, &held).unwrap();
        let depth = reference.iter().map(|r| r.1[3]).fold(0.0, f64::min);
        println!(
            "g = {g}: loop {depth:.4} m deep, worst {:.2e} of L from the shooting, winding {:.6} rad about {:?}, lowest eigenvalue {lowest:.3e} (neutral below {:.1e})",
            worst / rod.length_m,
            winding.norm(),
            winding / winding.norm(),
            rod::held::neutral_eigenvalue(&model)
        );
        assert!(worst / rod.length_m < 1e-4, "{worst}");
        assert!((winding - Vec3::new(0.0, 2.0 * PI, 0.0)).norm() < 1e-6, "{winding:?}");
        let neutral = rod::held::neutral_eigenvalue(&model);
        if g == 0.0 {
            assert!(lowest.abs() < neutral, "{lowest}");
        } else {
            assert!(lowest > neutral, "{lowest}");
        }
    }
    // Without the whole turn the rotation is none: the straight start
    // reaches no loop (what was returned before, compressed).
    let none = TipHold::clamped(Vec3::new(gap_m, 0.0, 0.0), Mat3::identity());
    if let Ok(h) = solve_held(&model, &Loads::none(), none, None, &NewtonOptions::default()) {
        let winding = rod::shape::winding_rad(&rod::shape::shape(&model, &h.solution.q));
        assert!(winding.norm() < 1.0, "{winding:?}");
    }
}
