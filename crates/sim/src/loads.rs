//! The simulator's own terms besides inertia and contact: material damping
//! and loads applied by the experimenter (a push spread over the rod's
//! mass, a point force, a tow spring pulled at constant speed).

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
        let f = &s.model.stiffness * dq * c;
        let mut r = sink.residual_mut().rows_mut(0, ns);
        r += f;
        if let Some(h) = sink.tangent_mut() {
            let mut block = h.view_mut((0, 0), (ns, ns));
            block += &s.model.stiffness * c;
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

/// `K` with the base rows and columns (floating base) padded with zeros.
pub fn padded_stiffness(model: &rod::Model) -> DMatrix<f64> {
    let n = model.n_dof();
    let ns = model.n_strain_dof();
    let mut k = DMatrix::zeros(n, n);
    k.view_mut((0, 0), (ns, ns)).copy_from(&model.stiffness);
    k
}
