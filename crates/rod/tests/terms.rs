//! Every term on its own: its residual is the gradient of its energy (where
//! it has one) and its tangent the Jacobian of its residual, by central
//! differences; with a fixed and with a floating base, and for wrenches at
//! joints and at interior points of segments.

use lie::{Mat3, Mat6, Vec3, Vec6};
use nalgebra::DVector;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rod::model::InteriorPoint;
use rod::terms::{self, Attach, Cables, Elastic, Gravity, PointLoad, PointLoads, Sink, Springs, State, Term};
use rod::{Cable, Material, Model, Profile, Rod};

fn rod() -> Rod {
    let mut rod = Rod::uniform_cylinder(0.2, 0.01, Material { e_pa: 1.1e5, g_pa: 3.8e4, rho_kg_m3: 2000.0 }, 3);
    rod.section_lengths_m = vec![0.09, 0.07, 0.04];
    rod.subsegments_per_section = 2;
    rod.cross_section = rod::CrossSection::round(Profile::Linear { base_m: 0.01, tip_m: 0.005 }, rod.cross_section.body);
    rod.rest_curvature_per_m = Vec3::new(0.3, -0.5, 1.0);
    rod.base = lie::Pose::from_rpy(0.1, -0.2, 0.3, Vec3::new(0.01, 0.02, 0.03));
    rod.cables = vec![Cable { inset_m: 0.001, ..Cable::new("a", 0.3, 0.2) }];
    rod
}

fn random_q(model: &Model, seed: u64) -> DVector<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let m = model.free.len();
    let ns = model.n_strain_dof();
    DVector::from_fn(model.n_dof(), |i, _| {
        if i >= ns {
            return rng.gen_range(-0.3..0.3);
        }
        let c = model.free[i % m];
        rng.gen_range(-1.0..1.0) * if c < 3 { 8.0 } else { 0.05 }
    })
}

/// Checks one term at a few states; `conservative`: also against its energy.
fn check(model: &Model, term: &dyn Term, conservative: bool, what: &str) {
    for seed in 0..3 {
        let q = random_q(model, seed);
        let a = terms::assemble(model, &q, &[term], true);
        let h = a.tangent.unwrap();
        let e = 1e-6;
        let fd = terms::residual_jacobian_by_differences(model, &q, &[term], e);
        let worst_h = (&h - &fd).amax() / h.amax().max(1e-12);
        assert!(worst_h < 1e-6, "{what}, seed {seed}: tangent off by {worst_h:.2e} of its largest entry");
        if !conservative {
            continue;
        }
        for i in 0..model.n_dof() {
            let mut qp = q.clone();
            qp[i] += e;
            let mut qm = q.clone();
            qm[i] -= e;
            let de = (terms::energy(model, &qp, &[term]).unwrap() - terms::energy(model, &qm, &[term]).unwrap()) / (2.0 * e);
            let r = a.residual[i];
            assert!((de - r).abs() <= 1e-6 * a.residual.amax().max(1e-9), "{what}: dof {i}: dE/dq {de} vs r {r}");
        }
    }
}

fn models() -> Vec<(Model, &'static str)> {
    let r = rod();
    vec![(Model::new(&r, &[0.11]), "fixed base"), (Model::new(&r, &[0.11]).with_floating_base(), "floating base")]
}

#[test]
fn elastic_gravity_cables_point_loads_springs() {
    let loads = vec![
        PointLoad { x_m: 0.2, offset_body_m: Vec3::zeros(), force_n: Vec3::new(0.1, -0.2, 0.05), moment_nm: Vec3::zeros(), follower: false },
        PointLoad { x_m: 0.11, offset_body_m: Vec3::new(0.0, 0.004, -0.002), force_n: Vec3::new(-0.05, 0.02, 0.3), moment_nm: Vec3::zeros(), follower: false },
    ];
    let with_moment = vec![PointLoad { moment_nm: Vec3::new(0.002, -0.01, 0.004), ..loads[1].clone() }];
    for (model, base) in models() {
        check(&model, &Elastic, true, &format!("elastic, {base}"));
        check(&model, &Gravity { scale: 1.3 }, true, &format!("gravity, {base}"));
        check(&model, &Cables { tensions_n: &[0.7], scale: 1.0, slide: &[], reversal_n: &[], earlier_reversals_n: &[] }, true, &format!("cables, {base}"));
        let joints = loads.iter().map(|l| model.joint_at(l.x_m)).collect();
        check(&model, &PointLoads { loads: &loads, joints, scale: 0.8 }, true, &format!("point forces, {base}"));
        let joints = with_moment.iter().map(|l| model.joint_at(l.x_m)).collect();
        check(&model, &PointLoads { loads: &with_moment, joints, scale: 1.0 }, false, &format!("point moment, {base}"));
        // Follower force and moment, off the centre line, turning with
        // their section.
        let follower =
            vec![PointLoad { follower: true, moment_nm: Vec3::new(0.002, -0.01, 0.004), ..loads[1].clone() }, PointLoad { follower: true, ..loads[0].clone() }];
        let joints = follower.iter().map(|l| model.joint_at(l.x_m)).collect();
        check(&model, &PointLoads { loads: &follower, joints, scale: 0.9 }, false, &format!("follower loads, {base}"));
        // A spring to a point, and one to a ray (a marker one camera saw).
        let ray = rod::Sighting::ray(Vec3::new(0.05, 0.3, 0.4), Vec3::new(0.1, -0.6, -0.9)).unwrap();
        let springs = Springs {
            springs: vec![
                (model.joint_at(0.11), Vec3::new(0.0, 0.003, 0.0), Vec3::new(0.1, 0.05, -0.02).into(), 40.0),
                (model.joint_at(0.2), Vec3::new(0.0, 0.0, 0.004), ray, 25.0),
            ],
        };
        check(&model, &springs, true, &format!("springs to a point and a ray, {base}"));
    }
}

/// Springs at material points inside segments (the interior-point path
/// that inertia uses): energy 1/2 k |p - t|^2 with p = g_k exp(s xi_k) d.
struct InteriorSprings {
    points: Vec<(usize, f64, Vec3, Vec3, f64)>,
}

impl InteriorSprings {
    fn point(&self, s: &State, k: usize, s_m: f64) -> InteriorPoint {
        s.model.interior_point(s.frames, k, s_m, false)
    }
}

impl Term for InteriorSprings {
    fn name(&self) -> &str {
        "interior springs"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        Some(self.points.iter().map(|(k, sm, d, t, kk)| 0.5 * kk * (self.point(s, *k, *sm).pose.transform_point(d) - t).norm_squared()).sum())
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        for (k, sm, d, t, kk) in &self.points {
            let ip = self.point(s, *k, *sm);
            let p = ip.pose.transform_point(d);
            sink.point_force(Attach::Interior(&ip), &p, &(-(p - t) * *kk), &Vec3::zeros(), Some(&(Mat3::identity() * *kk)));
        }
    }
}

/// A moment at interior points that follows the section's rotation and has
/// a rotational stiffness: checks the 6x6 `T` path with non-zero force rows
/// cancelled and moment rows only.
struct InteriorTorque {
    points: Vec<(usize, f64, Vec3)>,
}

impl Term for InteriorTorque {
    fn name(&self) -> &str {
        "interior follower torque"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        for (k, sm, m_body) in &self.points {
            let ip = s.model.interior_point(s.frames, *k, *sm, sink.wants_tangent());
            let m = ip.pose.rot * m_body;
            // W = [R m_b; 0]; dW = [dtheta x R m_b; 0] -> T = [(R m_b)~, 0; 0, 0].
            let mut t = Mat6::zeros();
            t.fixed_view_mut::<3, 3>(0, 0).copy_from(&lie::skew(&m));
            sink.wrench(Attach::Interior(&ip), Vec6::new(m.x, m.y, m.z, 0.0, 0.0, 0.0), Some(t));
        }
    }
}

#[test]
fn interior_point_wrenches() {
    for (model, base) in models() {
        let nseg = model.segments.len();
        let springs = InteriorSprings {
            points: vec![
                (0, 0.3 * model.segments[0].h_m, Vec3::new(0.0, 0.002, 0.001), Vec3::new(0.01, 0.0, 0.0), 50.0),
                (nseg / 2, 0.7 * model.segments[nseg / 2].h_m, Vec3::zeros(), Vec3::new(0.1, 0.02, -0.03), 20.0),
                (nseg - 1, model.segments[nseg - 1].h_m, Vec3::new(0.0, -0.004, 0.0), Vec3::new(0.2, -0.01, 0.0), 30.0),
            ],
        };
        check(&model, &springs, true, &format!("interior springs, {base}"));
        let torque = InteriorTorque { points: vec![(1, 0.4 * model.segments[1].h_m, Vec3::new(0.01, -0.02, 0.005))] };
        check(&model, &torque, false, &format!("interior torque, {base}"));
    }
}

/// The interior point's frame and Jacobian match finite differences.
#[test]
fn interior_jacobian_matches_finite_differences() {
    for (model, base) in models() {
        let q = random_q(&model, 7);
        let kin = model.kinematics(&q);
        let k = model.segments.len() / 2;
        let s_m = 0.37 * model.segments[k].h_m;
        let ip = model.interior_point(&kin.frames, k, s_m, true);
        let js = model.interior_jacobian(&kin, &ip);
        let e = 1e-6;
        for i in 0..model.n_dof() {
            let mut qp = q.clone();
            qp[i] += e;
            let mut qm = q.clone();
            qm[i] -= e;
            let gp = model.interior_point(&model.frames(&qp), k, s_m, false).pose;
            let gm = model.interior_point(&model.frames(&qm), k, s_m, false).pose;
            // Spatial twist: log(g+ g^-1) - log(g- g^-1).
            let fd = (lie::log(&gp.compose(&ip.pose.inverse())) - lie::log(&gm.compose(&ip.pose.inverse()))) / (2.0 * e);
            let col = js.column(i);
            assert!((fd - col).norm() <= 1e-6 * col.norm().max(1e-3), "{base}, dof {i}: {fd} vs {col}");
        }
    }
}

/// The applied wrench of gravity is the weight at the centre of mass.
#[test]
fn applied_wrench_is_total_load() {
    let model = Model::new(&rod(), &[]);
    let q = random_q(&model, 3);
    let a = terms::assemble(&model, &q, &[&Gravity { scale: 1.0 }], false);
    let frames = model.frames(&q);
    let g = model.rod.gravity_m_s2;
    let m: f64 = model.joint_mass_kg.iter().sum();
    let moment: Vec3 = model.joint_mass_kg.iter().zip(&frames.joints).map(|(mj, f)| f.pos.cross(&(g * *mj))).sum();
    assert!((lie::linear(&a.applied_wrench) - g * m).norm() < 1e-14);
    assert!((lie::angular(&a.applied_wrench) - moment).norm() < 1e-15);
}

/// Past 128 coordinates the joints' `J^T T J` is summed by a backward pass
/// over the segments instead of one dense product: the same terms on a
/// 24-section rod (150 and 156 coordinates), fixed and floating base.
#[test]
fn joint_wrench_tangents_on_a_long_rod() {
    let mut r = rod();
    r.section_lengths_m = vec![0.2 / 24.0; 24];
    r.subsegments_per_section = 2;
    let loads = vec![
        PointLoad { x_m: 0.2, offset_body_m: Vec3::zeros(), force_n: Vec3::new(0.1, -0.2, 0.05), moment_nm: Vec3::zeros(), follower: false },
        PointLoad { x_m: 0.11, offset_body_m: Vec3::new(0.0, 0.004, -0.002), force_n: Vec3::new(-0.05, 0.02, 0.3), moment_nm: Vec3::zeros(), follower: true },
    ];
    for (model, base) in [(Model::new(&r, &[0.11]), "fixed base"), (Model::new(&r, &[0.11]).with_floating_base(), "floating base")] {
        assert!(model.n_dof() > 128, "{}", model.n_dof());
        check(&model, &Gravity { scale: 1.3 }, true, &format!("gravity, long rod, {base}"));
        let joints = loads.iter().map(|l| model.joint_at(l.x_m)).collect();
        check(&model, &PointLoads { loads: &loads, joints, scale: 0.8 }, false, &format!("dead and follower forces, long rod, {base}"));
        let springs = Springs { springs: vec![(model.joint_at(0.11), Vec3::new(0.0, 0.003, 0.0), Vec3::new(0.1, 0.05, -0.02).into(), 40.0)] };
        check(&model, &springs, true, &format!("springs, long rod, {base}"));
    }
}
