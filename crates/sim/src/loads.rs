//! The simulator's own terms besides inertia and contact: material damping
//! and loads applied by the experimenter (a push spread over the rod's
//! mass, a point force, a tow spring pulled at constant speed) and the
//! dry friction of a hung mass's hook.

use lie::{Mat3, Vec3};
use nalgebra::{DMatrix, DVector};
use rod::terms::{Attach, Sink, State, Term};

/// Kelvin-Voigt damping: internal generalised force `tau K (q - q_prev) / h`
/// on the strain coordinates.
pub struct Damping<'a> {
    pub tau_s: f64,
    pub h_s: f64,
    pub q_prev: &'a DVector<f64>,
}

impl Term for Damping<'_> {
    fn name(&self) -> &str {
        "damping"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let ns = s.model.n_strain_dof();
        let c = self.tau_s / self.h_s;
        let dq = s.q.rows(0, ns) - self.q_prev.rows(0, ns);
        let f = s.model.stiffness_times(dq.as_slice()) * c;
        let mut r = sink.residual_mut().rows_mut(0, ns);
        r += f;
        if let Some(h) = sink.tangent_mut() {
            s.model.add_stiffness(h, c);
        }
    }
}

/// Viscoelastic branches (a generalised Maxwell law, [`rod::PronyBranch`])
/// on the strain coordinates. Branch `i` carries an internal generalised
/// force `s_i` (its stress resultants) with `s_i' + s_i / tau_i = g_i K q'`
/// (`K` the relaxed stiffness, `g_i` the branch's modulus ratio). Over a
/// step along which `q` moves linearly it is integrated exactly:
/// `s_i(t + h) = a_i s_i(t) + b_i K (q - q_prev)`, `a_i = exp(-h / tau_i)`,
/// `b_i = g_i tau_i (1 - a_i) / h`; the tangent is `sum b_i K`, the
/// branches' algorithmic stiffness. A slow step (`h >> tau`) sees the
/// relaxed rod, a fast one (`h << tau`) a spring of `g_i K` more.
pub struct Viscoelastic<'a> {
    pub branches: &'a [rod::PronyBranch],
    pub h_s: f64,
    pub q_prev: &'a DVector<f64>,
    /// Each branch's force at the step's start (the strain coordinates').
    pub forces: &'a [DVector<f64>],
}

impl Viscoelastic<'_> {
    /// Each branch's `(a_i, b_i)` for the step.
    fn coefficients(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.branches.iter().map(|b| {
            let x = self.h_s / b.time_constant_s;
            ((-x).exp(), -b.modulus_ratio * (-x).exp_m1() / x)
        })
    }

    /// The branches' forces at the step's end, the rod at `q`.
    pub fn advanced(&self, model: &rod::Model, q: &DVector<f64>) -> Vec<DVector<f64>> {
        let ns = model.n_strain_dof();
        let k_dq = model.stiffness_times((q.rows(0, ns) - self.q_prev.rows(0, ns)).as_slice());
        self.coefficients().zip(self.forces).map(|((a, b), s)| s * a + &k_dq * b).collect()
    }
}

impl Term for Viscoelastic<'_> {
    fn name(&self) -> &str {
        "viscoelastic branches"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let ns = s.model.n_strain_dof();
        let k_dq = s.model.stiffness_times((s.q.rows(0, ns) - self.q_prev.rows(0, ns)).as_slice());
        let mut stiffening = 0.0;
        let mut r = sink.residual_mut().rows_mut(0, ns);
        for ((a, b), f) in self.coefficients().zip(self.forces) {
            r += f * a + &k_dq * b;
            stiffening += b;
        }
        if let Some(h) = sink.tangent_mut() {
            s.model.add_stiffness(h, stiffening);
        }
    }
}

/// A spring pulling a material point (joint `joint`) towards an anchor,
/// acting only in the table plane (stiffness `k (I - n n^T)`): a rod dragged
/// by a string; the spring force is what a force gauge on the string reads.
pub struct TowSpring {
    pub joint: usize,
    pub anchor_m: Vec3,
    pub stiffness_n_m: f64,
    pub plane_normal: Vec3,
}

impl TowSpring {
    fn stiffness(&self) -> Mat3 {
        (Mat3::identity() - self.plane_normal * self.plane_normal.transpose()) * self.stiffness_n_m
    }

    /// Force on the rod at the point `p`.
    pub fn force_n(&self, p: &Vec3) -> Vec3 {
        -self.stiffness() * (p - self.anchor_m)
    }
}

impl Term for TowSpring {
    fn name(&self) -> &str {
        "tow spring"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        let d = s.frames.joints[self.joint].pos - self.anchor_m;
        Some(0.5 * d.dot(&(self.stiffness() * d)))
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let p = s.frames.joints[self.joint].pos;
        let k = self.stiffness();
        sink.point_force(Attach::Joint(self.joint), &p, &self.force_n(&p), &Vec3::zeros(), Some(&k));
    }
}

/// Dry friction where a mass hangs (a hook in an eyelet): the hung weight
/// presses the hook on its pin, so turning the rod's section under the
/// hanging mass costs a moment of `friction_radius_m` (the pin's radius
/// times its friction coefficient) times the weight, against the
/// section's rotation rate, whatever its size: a loss per cycle that does
/// not shrink with the swing (Coulomb's), where a material's shrinks with
/// it. The rate over the step, `log(R R_start^T) / h`, is smoothed below
/// `smoothing_rad_s` (`m = -M w / sqrt(|w|^2 + w_s^2)`) so that Newton's
/// tangent exists at rest; a section at rest is held by at most `M`.
pub struct HookFriction {
    pub joint: usize,
    /// The largest moment the hook resists with \[N m\]: `friction_radius_m * m g`.
    pub moment_n_m: f64,
    pub h_s: f64,
    /// The section's rotation at the step's start.
    pub rot_start: Mat3,
    pub smoothing_rad_s: f64,
}

impl HookFriction {
    /// The section's rotation rate over the step (world) at rotation `rot`.
    fn rate_rad_s(&self, rot: &Mat3) -> Vec3 {
        lie::so3_log(&(rot * self.rot_start.transpose())) / self.h_s
    }

    /// The friction moment (world) at rotation rate `w`.
    pub fn moment_at(&self, w: &Vec3) -> Vec3 {
        -w * (self.moment_n_m / (w.norm_squared() + self.smoothing_rad_s.powi(2)).sqrt())
    }
}

impl Term for HookFriction {
    fn name(&self) -> &str {
        "hook friction"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let w = self.rate_rad_s(&s.frames.joints[self.joint].rot);
        let m = self.moment_at(&w);
        // -dW/deta: a turn d_theta of the section changes the rate by
        // d_theta / h (to first order in the step's rotation).
        let t = sink.wants_tangent().then(|| {
            let n2 = w.norm_squared() + self.smoothing_rad_s.powi(2);
            let n = n2.sqrt();
            let d = (Mat3::identity() - w * w.transpose() / n2) * (self.moment_n_m / (n * self.h_s));
            let mut t = lie::Mat6::zeros();
            t.fixed_view_mut::<3, 3>(0, 0).copy_from(&d);
            t
        });
        sink.wrench(Attach::Joint(self.joint), lie::stack(&m, &Vec3::zeros()), t);
    }
}

/// `K` with the base rows and columns (floating base) padded with zeros.
pub fn padded_stiffness(model: &rod::Model) -> DMatrix<f64> {
    let n = model.n_dof();
    let ns = model.n_strain_dof();
    let mut k = DMatrix::zeros(n, n);
    k.view_mut((0, 0), (ns, ns)).copy_from(&model.stiffness);
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use rod::{Material, Model, Rod};

    /// Damping and tow spring: residual against central differences of
    /// the residual's integral (tow) and tangent against the residual's.
    #[test]
    fn damping_and_tow_terms_match_finite_differences() {
        let rod = Rod::uniform_cylinder(0.3, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1200.0 }, 2);
        let model = Model::new(&rod, &[]).with_floating_base();
        let n = model.n_dof();
        let q_prev = DVector::from_fn(n, |i, _| 0.01 * (i as f64).sin());
        let q = DVector::from_fn(n, |i, _| 0.2 * ((i * 3 % 7) as f64 / 7.0 - 0.5));
        let damping = Damping { tau_s: 0.01, h_s: 0.005, q_prev: &q_prev };
        let tow = TowSpring { joint: model.n_joints() - 1, anchor_m: Vec3::new(0.4, 0.1, 0.05), stiffness_n_m: 300.0, plane_normal: Vec3::z() };
        for (name, term) in [("damping", &damping as &dyn Term), ("tow", &tow)] {
            let a = rod::terms::assemble(&model, &q, &[term], true);
            let h = a.tangent.unwrap();
            let e = 1e-7;
            let fd = rod::terms::residual_jacobian_by_differences(&model, &q, &[term], e);
            for i in 0..n {
                assert!((h.column(i) - fd.column(i)).amax() < 1e-6 * h.amax().max(1.0), "{name}: tangent column {i}");
                if name == "tow" {
                    let mut qp = q.clone();
                    qp[i] += e;
                    let mut qm = q.clone();
                    qm[i] -= e;
                    let de = (rod::terms::energy(&model, &qp, &[term]).unwrap() - rod::terms::energy(&model, &qm, &[term]).unwrap()) / (2.0 * e);
                    assert!((de - a.residual[i]).abs() < 1e-6 * a.residual.amax().max(1e-9), "tow: gradient {i}");
                }
            }
        }
    }
}
