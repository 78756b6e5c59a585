//! The residual is the exact gradient of the discrete potential, the tangent
//! the exact Jacobian of the residual, and the Jacobians of the kinematics
//! match finite differences: checked on a rod with everything switched on
//! (taper, cables with inset and slope, offset point load, gravity, moments).

use lie::{Vec3, Vec6};
use nalgebra::DVector;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rod::model::point_jacobian;
use rod::statics::{assemble, potential_energy};
use rod::{Cable, Loads, Material, Model, PointLoad, Profile, Rod, StrainModes};

fn busy_rod(modes: StrainModes) -> Rod {
    busy_rod_basis(modes, rod::StrainBasis::Linear)
}

fn busy_rod_basis(modes: StrainModes, basis: rod::StrainBasis) -> Rod {
    let mut rod = Rod::uniform_cylinder(0.2, 0.01, Material { e_pa: 1.1e5, g_pa: 3.8e4, rho_kg_m3: 2000.0 }, 3);
    rod.section_lengths_m = vec![0.09, 0.07, 0.04];
    rod.subsegments_per_section = 3;
    rod.cross_section = rod::CrossSection::round(Profile::Linear { base_m: 0.01, tip_m: 0.005 }, rod.cross_section.body);
    rod.modes = modes;
    rod.strain_basis = basis;
    rod.rest_curvature_per_m = Vec3::new(0.3, -0.5, 1.0);
    rod.base = lie::Pose::from_rpy(0.1, -0.2, 0.3, Vec3::new(0.01, 0.02, 0.03));
    rod.cables = vec![
        Cable { inset_m: 0.001, ..Cable::new("a", 0.3, 0.2) },
        Cable::new("b", 2.0, 0.13),
        // A channel whose radius changes along the arc, not with the section.
        Cable { path_radius: Some(rod::PathRadius { points: vec![(0.0, 0.006), (0.1, 0.004), (0.2, 0.0045)] }), ..Cable::new("channel", 4.0, 0.18) },
        // Through three disks (the anchor the last), straight between them.
        Cable { inset_m: 0.0005, guides_m: vec![0.05, 0.1, 0.16], ..Cable::new("guided", 5.2, 0.16) },
    ];
    rod
}

/// The busy rod with its two surface cables only (the solves' tests: its
/// routed cables load it beyond what their load steps were written for).
fn two_cables(mut rod: Rod, mut loads: Loads) -> (Rod, Loads) {
    rod.cables.truncate(2);
    loads.cable_tensions_n.truncate(2);
    (rod, loads)
}

fn loads(with_moment: bool) -> Loads {
    Loads {
        gravity_scale: 1.0,
        point_loads: vec![
            PointLoad { x_m: 0.2, offset_body_m: Vec3::zeros(), force_n: Vec3::new(0.1, -0.2, 0.05), moment_nm: Vec3::zeros(), follower: false },
            PointLoad {
                x_m: 0.11,
                offset_body_m: Vec3::new(0.0, 0.004, -0.002),
                force_n: Vec3::new(-0.05, 0.02, 0.3),
                moment_nm: if with_moment { Vec3::new(0.002, -0.01, 0.004) } else { Vec3::zeros() },
                follower: false,
            },
        ],
        cable_tensions_n: vec![0.7, 1.3, 0.2, 0.3],
        cable_slide: vec![],
        cable_reversal_n: vec![],
        cable_earlier_reversals_n: vec![],
    }
}

/// The residual's Jacobian by central differences of step 1e-6.
fn tangent_by_differences(model: &Model, loads: &Loads, q: &DVector<f64>) -> nalgebra::DMatrix<f64> {
    let e = 1e-6;
    let mut fd = nalgebra::DMatrix::zeros(model.n_dof(), model.n_dof());
    for i in 0..model.n_dof() {
        let (mut qp, mut qm) = (q.clone(), q.clone());
        qp[i] += e;
        qm[i] -= e;
        let col = (assemble(model, loads, &qp, 1.0, false).unwrap().residual - assemble(model, loads, &qm, 1.0, false).unwrap().residual) / (2.0 * e);
        fd.set_column(i, &col);
    }
    fd
}

fn random_q(model: &Model, seed: u64, scale: f64) -> DVector<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let m = model.free.len();
    DVector::from_fn(model.n_dof(), |i, _| {
        let c = model.free[i % m];
        rng.gen_range(-1.0..1.0) * if c < 3 { 8.0 * scale } else { 0.05 * scale }
    })
}

#[test]
fn residual_is_gradient_of_potential() {
    for modes in [StrainModes::COSSERAT, StrainModes::TIMOSHENKO, StrainModes::KIRCHHOFF_EXTENSIBLE] {
        let rod = busy_rod(modes);
        let l = loads(false);
        let model = Model::new(&rod, &l.points_m());
        for seed in 0..3 {
            let q = random_q(&model, seed, 1.0);
            let r = assemble(&model, &l, &q, 1.0, false).unwrap().residual;
            let e = 1e-6;
            for i in 0..model.n_dof() {
                let mut qp = q.clone();
                qp[i] += e;
                let mut qm = q.clone();
                qm[i] -= e;
                let fd = (potential_energy(&model, &l, &qp).unwrap() - potential_energy(&model, &l, &qm).unwrap()) / (2.0 * e);
                assert!((fd - r[i]).abs() <= 1e-6 * r.amax().max(1e-6), "modes {modes:?} dof {i}: fd {fd} vs r {}", r[i]);
            }
        }
    }
}

#[test]
fn tangent_is_jacobian_of_residual() {
    for (modes, basis) in [
        (StrainModes::COSSERAT, rod::StrainBasis::Linear),
        (StrainModes::EULER_BERNOULLI, rod::StrainBasis::Linear),
        (StrainModes::COSSERAT, rod::StrainBasis::Constant),
    ] {
        for with_moment in [false, true] {
            let rod = busy_rod_basis(modes, basis);
            let l = loads(with_moment);
            let model = Model::new(&rod, &l.points_m());
            for seed in 0..3 {
                let q = random_q(&model, 10 + seed, if seed == 0 { 1e-9 } else { 1.0 });
                let h = assemble(&model, &l, &q, 1.0, true).unwrap().tangent.unwrap();
                let fd = tangent_by_differences(&model, &l, &q);
                let err = (&h - &fd).amax();
                assert!(err <= 1e-6 * fd.amax(), "modes {modes:?} moment {with_moment} seed {seed}: {err} of {}", fd.amax());
            }
        }
    }
}

#[test]
fn jacobians_match_finite_differences_and_each_other() {
    let rod = busy_rod(StrainModes::COSSERAT);
    let model = Model::new(&rod, &[0.123]);
    for (seed, scale) in [(1, 1.0), (2, 1e-8), (3, 0.0)] {
        let q = random_q(&model, seed, scale);
        let kin = model.kinematics(&q);
        let body = model.body_jacobians(&q);
        let e = 1e-6;
        for j in [1, model.n_joints() / 2, model.n_joints() - 1] {
            let g = kin.frames.joints[j];
            // Exact body update and spatial Jacobian agree: J_s = Ad_g J_b.
            let js_from_body = g.adjoint() * &body[j];
            assert!((&js_from_body - &model.joint_jacobian(&kin, j)).amax() < 1e-12 * (1.0 + js_from_body.amax()));
            for i in 0..model.n_dof() {
                let mut qp = q.clone();
                qp[i] += e;
                let mut qm = q.clone();
                qm[i] -= e;
                let gp = model.frames(&qp).joints[j];
                let gm = model.frames(&qm).joints[j];
                // Body twist from central differences: log(g^-1 g+) - log(g^-1 g-).
                let fd: Vec6 = (lie::log(&g.inverse().compose(&gp)) - lie::log(&g.inverse().compose(&gm))) / (2.0 * e);
                let col = body[j].column(i);
                assert!((fd - col).norm() <= 1e-6 * col.norm().max(1e-3), "joint {j} dof {i}: {fd} vs {col}");
                let pj = point_jacobian(&model.joint_jacobian(&kin, j), &g.pos);
                let dp = (gp.pos - gm.pos) / (2.0 * e);
                assert!((dp - pj.column(i)).norm() <= 1e-6 * dp.norm().max(1e-3));
            }
        }
    }
}

/// Broyden steps near the solution (the solver's default) end at Newton's
/// equilibrium: the busy rod (every load kind, two cables, moments) cold
/// and warm, the Table II rod under gravity and a large tip force, and the
/// same count of load steps.
#[test]
fn quasi_newton_steps_reach_newtons_equilibrium() {
    use rod::statics::solve;
    let table_ii = Rod::from_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/rod/pls-paper-cantilever.toml")).unwrap();
    let cases: Vec<(Rod, Loads)> = vec![
        two_cables(busy_rod(StrainModes::COSSERAT), loads(true)),
        two_cables(busy_rod(StrainModes::KIRCHHOFF_EXTENSIBLE), loads(false)),
        (table_ii.clone(), Loads::gravity()),
        (table_ii, Loads::gravity().with_tip(0.2, Vec3::new(0.0, 0.05, 0.2), Vec3::new(0.0, 0.0, 0.002))),
    ];
    let newton_only = rod::NewtonOptions { quasi_newton: false, ..Default::default() };
    let (mut tangents, mut newton_tangents) = (0, 0);
    for (i, (rod, loads)) in cases.iter().enumerate() {
        let model = rod::statics::model_for(rod, loads);
        for warm in [None, Some(random_q(&model, 9, 0.05))] {
            let fast = solve(&model, loads, warm.as_ref(), &Default::default()).unwrap();
            let reference = solve(&model, loads, warm.as_ref(), &newton_only).unwrap();
            let difference = (&fast.q - &reference.q).amax() / reference.q.amax();
            assert!(difference < 1e-9, "case {i}: q differs by {difference:.2e} of its largest coordinate");
            let tip = |q: &DVector<f64>| model.frames(q).joints.last().unwrap().pos;
            let tip_difference_m = (tip(&fast.q) - tip(&reference.q)).norm();
            // Both stop at the same residual tolerance (1e-11 relative).
            assert!(tip_difference_m < 1e-9 * rod.length_m, "case {i}: tips {tip_difference_m:.2e} m apart");
            assert_eq!(fast.load_steps, reference.load_steps, "case {i}");
            if i == 2 && warm.is_none() {
                // Table II from straight: a quarter Newton step, then Broyden
                // steps from that damped step's tangent (Newton alone takes five).
                assert_eq!(fast.tangents, 1, "Table II from straight");
            }
            tangents += fast.tangents;
            newton_tangents += reference.tangents;
        }
    }
    // The Broyden steps were taken (not a silently disabled path): they
    // replace tangents by residuals.
    assert!(tangents < newton_tangents, "{tangents} tangents against Newton's {newton_tangents}");
}

/// A fit's next solve starts from the last parameters' tangent: Table II's
/// rod (and the busy rod) at E 5 % higher, from the equilibrium at the
/// old E with its tangent's factorisation: the new equilibrium to 1e-9,
/// and fewer tangents than from the same start without it.
#[test]
fn a_nearby_tangent_starts_the_next_solve() {
    use rod::statics::{assemble, solve, solve_with_factors, Factors};
    let table_ii = Rod::from_file(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/rod/pls-paper-cantilever.toml")).unwrap();
    let opts = rod::NewtonOptions::default();
    for (i, (rod, loads)) in [(table_ii, Loads::gravity()), two_cables(busy_rod(StrainModes::COSSERAT), loads(true))].into_iter().enumerate() {
        let model = rod::statics::model_for(&rod, &loads);
        let old = solve(&model, &loads, None, &opts).unwrap().q;
        let factors = Factors::of(assemble(&model, &loads, &old, 1.0, true).unwrap().tangent.unwrap());
        let mut stiffer = rod.clone();
        stiffer.cross_section.body.e_pa *= 1.05;
        stiffer.cross_section.body.g_pa *= 1.05;
        let model = rod::statics::model_for(&stiffer, &loads);
        let plain = solve(&model, &loads, Some(&old), &opts).unwrap();
        let warm = solve_with_factors(&model, &loads, Some(&old), Some(&factors), &opts).unwrap();
        let difference = (&warm.q - &plain.q).amax() / plain.q.amax();
        assert!(difference < 1e-9, "case {i}: {difference:.2e}");
        assert!(warm.tangents < plain.tangents, "case {i}: {} tangents against {}", warm.tangents, plain.tangents);
    }
}

/// A cable whose guide disks take only the part of its pull in their
/// planes (`guide_reaction = "disk_plane"`, the Continuum Robotics Lab's
/// convention): the disks' normals turn with the rod, so the tangent (not
/// symmetric) gains their rotation; frictionless and rubbing, pulled in
/// and let out after a reversal.
#[test]
fn a_cable_whose_disks_take_their_planes_part_has_the_jacobian_of_its_residual() {
    use rod::statics::CableSlide::{LetOut, PulledIn};
    for (mu, slide, reversal_n) in [(0.0, PulledIn, vec![]), (0.25, PulledIn, vec![]), (0.25, LetOut, vec![None, None, None, Some(0.39)])] {
        let mut rod = busy_rod(StrainModes::COSSERAT);
        rod.cables[3].guide_reaction = rod::GuideReaction::DiskPlane;
        rod.cables[3].friction_mu = mu;
        let l = Loads { cable_tensions_n: vec![0.0, 0.0, 0.0, 0.8], cable_slide: vec![slide; 4], cable_reversal_n: reversal_n, ..loads(true) };
        let model = Model::new(&rod, &l.points_m());
        assert!(model.cable_guides[3].iter().filter(|h| h.disk_plane).count() == 2, "the two disks before the anchor");
        for (seed, scale) in [(31, 1.0), (32, 0.3)] {
            let q = random_q(&model, seed, scale);
            let h = assemble(&model, &l, &q, 1.0, true).unwrap().tangent.unwrap();
            let worst = (&h - tangent_by_differences(&model, &l, &q)).amax();
            println!("mu {mu}, {slide:?}, seed {seed}: tangent against differences {worst:.2e} of {:.2e}", h.amax());
            assert!(worst <= 1e-6 * h.amax(), "mu {mu} {slide:?} seed {seed}: {worst} of {}", h.amax());
            assert!((&h - h.transpose()).amax() > 1e-6 * h.amax(), "dropping part of the pull makes the tangent unsymmetric");
        }
    }
}

/// Cables rubbing on their channels and guide disks (capstan law, mu 0.2
/// to 0.3), pulled in and let out, sliding all along or, after a reversal,
/// only near the base: the tangent (not symmetric) is the residual's
/// Jacobian, at bent states and at rest (the busy rod is curved at rest).
#[test]
fn a_rubbing_cables_tangent_is_the_jacobian_of_its_residual() {
    use rod::statics::CableSlide::{LetOut, PulledIn};
    // Reversed from 30 % above (let out) or below (pulled in) the tensions.
    let above = vec![Some(0.91), Some(1.69), Some(1.17), Some(0.39)];
    let below = vec![Some(0.49), Some(0.91), Some(0.63), Some(0.21)];
    // Let out after a pull that rose from a let-out's low just below the
    // tensions (two reversals remembered, nested: three pieces along the
    // cable), and pulled in after the mirror.
    let tensions = [0.7, 1.3, 0.9, 0.3];
    let low: Vec<Vec<f64>> = tensions.iter().map(|t| vec![0.99 * t]).collect();
    let high: Vec<Vec<f64>> = tensions.iter().map(|t| vec![1.01 * t]).collect();
    let cases = [
        (PulledIn, vec![], vec![]),
        (LetOut, vec![], vec![]),
        (LetOut, above.clone(), vec![]),
        (PulledIn, below.clone(), vec![]),
        (LetOut, above, low),
        (PulledIn, below, high),
    ];
    for (slide, reversal_n, earlier) in cases {
        let mut rod = busy_rod(StrainModes::COSSERAT);
        rod.cables[2].friction_mu = 0.3;
        rod.cables[0].friction_mu = 0.2;
        // And the cable through guide disks, rubbing at each.
        rod.cables[3].friction_mu = 0.25;
        let reversed = reversal_n.len() + earlier.iter().map(Vec::len).sum::<usize>();
        let l = Loads {
            cable_tensions_n: vec![0.7, 1.3, 0.9, 0.3],
            cable_slide: vec![slide; 4],
            cable_reversal_n: reversal_n,
            cable_earlier_reversals_n: earlier,
            ..loads(true)
        };
        let model = Model::new(&rod, &l.points_m());
        for (seed, scale) in [(21, 1.0), (22, 0.3), (23, 0.0)] {
            let q = random_q(&model, seed, scale);
            let a = assemble(&model, &l, &q, 1.0, true).unwrap();
            let h = a.tangent.unwrap();
            let worst = (&h - tangent_by_differences(&model, &l, &q)).amax();
            println!("{slide:?} (reversed: {reversed}), seed {seed}: tangent against differences {worst:.2e} of {:.2e}", h.amax());
            assert!(worst <= 1e-6 * h.amax(), "{slide:?} (reversed: {reversed}) seed {seed}: {worst} of {}", h.amax());
            assert!((&h - h.transpose()).amax() > 1e-6 * h.amax(), "friction makes the tangent unsymmetric");
        }
    }
}
