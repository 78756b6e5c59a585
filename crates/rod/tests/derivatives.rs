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
        Cable { name: "a".into(), angle_rad: 0.3, inset_m: 0.001, anchor_m: 0.2 },
        Cable { name: "b".into(), angle_rad: 2.0, inset_m: 0.0, anchor_m: 0.13 },
    ];
    rod
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
        cable_tensions_n: vec![0.7, 1.3],
    }
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
                let e = 1e-6;
                let mut fd = h.clone() * 0.0;
                for i in 0..model.n_dof() {
                    let mut qp = q.clone();
                    qp[i] += e;
                    let mut qm = q.clone();
                    qm[i] -= e;
                    let col = (assemble(&model, &l, &qp, 1.0, false).unwrap().residual - assemble(&model, &l, &qm, 1.0, false).unwrap().residual) / (2.0 * e);
                    fd.set_column(i, &col);
                }
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
            assert!((&js_from_body - &kin.spatial_jacobian[j]).amax() < 1e-12 * (1.0 + js_from_body.amax()));
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
                let pj = point_jacobian(&kin.spatial_jacobian[j], &g.pos);
                let dp = (gp.pos - gm.pos) / (2.0 * e);
                assert!((dp - pj.column(i)).norm() <= 1e-6 * dp.norm().max(1e-3));
            }
        }
    }
}
