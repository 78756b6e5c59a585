//! Inertia of the rod as a term: mass and rotary inertia at the Gauss
//! points of every constant-strain segment (the same 4-point rule as the
//! stiffness), integrated by backward Euler on each point's own motion:
//!
//! ```text
//!   translation (world):  F = -m (p_k - p_{k-1} - h v_{k-1}) / h^2
//!   rotation (body):      tau = -(I (w_k - w_{k-1}) / h + w_k x I w_k),
//!                         w_k = log(R_{k-1}^T R_k) / h
//! ```
//!
//! mapped to the strains by `J^T` like any other load. The generalised
//! mass matrix `M(q) = sum J^T Mcal J` is the leading part of this term's
//! tangent (times 1/h^2), and the Coriolis and centrifugal forces are in
//! the points' exact accelerations (`J qdd + Jdot qd` to first order).

use lie::{skew, Mat3, Mat6, Vec3, Vec6};
use rod::model::GAUSS4;
use rod::terms::{point_force_tangent, Attach, Sink, State, Term};
use rod::Model;

/// One inertia point and its motion at the end of the last step.
#[derive(Clone, Debug)]
pub struct InertiaPoint {
    pub segment: usize,
    pub s_m: f64,
    pub mass_kg: f64,
    /// Body-frame rotary inertia diag(rho Jx, rho Jy, rho Jz) times the
    /// quadrature weight [kg m^2].
    pub rotary_kg_m2: Vec3,
    pub pos_m: Vec3,
    pub rot: Mat3,
    pub vel_m_s: Vec3,
    /// Body frame.
    pub omega_rad_s: Vec3,
}

/// The inertia term for one step of length `h_s`.
#[derive(Clone, Debug)]
pub struct Inertia {
    pub points: Vec<InertiaPoint>,
    pub h_s: f64,
}

/// `log` of a rotation as a rotation vector and the inverse right Jacobian
/// `J_r^{-1}(phi)` (d phi = J_r^{-1} d theta_body).
fn so3_log_and_jr_inv(r: &Mat3) -> (Vec3, Mat3) {
    let phi = lie::so3_log(r);
    let th = phi.norm();
    let px = skew(&phi);
    let c = if th < 1e-4 { 1.0 / 12.0 + th * th / 720.0 } else { (1.0 / (th * th)) - (1.0 + th.cos()) / (2.0 * th * th.sin()) };
    (phi, Mat3::identity() + px * 0.5 + px * px * c)
}

impl Inertia {
    /// Inertia points of `model` at configuration `q`, at rest.
    pub fn new(model: &Model, q: &nalgebra::DVector<f64>, h_s: f64) -> Inertia {
        let frames = model.frames(q);
        let l = model.rod.length_m;
        let mut points = vec![];
        for (k, seg) in model.segments.iter().enumerate() {
            for (xi, wi) in GAUSS4 {
                let s = 0.5 * seg.h_m * (1.0 + xi);
                let w = 0.5 * seg.h_m * wi;
                let props = model.rod.cross_section.properties(seg.x0_m + s, l);
                let d = props.inertia_diag;
                let ip = model.interior_point(&frames, k, s, false);
                points.push(InertiaPoint {
                    segment: k,
                    s_m: s,
                    mass_kg: w * d[3],
                    rotary_kg_m2: Vec3::new(d[0], d[1], d[2]) * w,
                    pos_m: ip.pose.pos,
                    rot: ip.pose.rot,
                    vel_m_s: Vec3::zeros(),
                    omega_rad_s: Vec3::zeros(),
                });
            }
        }
        Inertia { points, h_s }
    }

    pub fn mass_kg(&self) -> f64 {
        self.points.iter().map(|p| p.mass_kg).sum()
    }

    /// Kinetic energy of the points' last velocities \[J\].
    pub fn kinetic_energy_j(&self) -> f64 {
        self.points.iter().map(|p| 0.5 * p.mass_kg * p.vel_m_s.norm_squared() + 0.5 * p.omega_rad_s.component_mul(&p.rotary_kg_m2).dot(&p.omega_rad_s)).sum()
    }

    /// Linear momentum of the points [kg m/s].
    pub fn momentum(&self) -> Vec3 {
        self.points.iter().map(|p| p.vel_m_s * p.mass_kg).sum()
    }

    /// Sets the points' state from a step just taken to configuration `q`.
    pub fn advance(&mut self, model: &Model, q: &nalgebra::DVector<f64>) {
        let frames = model.frames(q);
        let h = self.h_s;
        for p in &mut self.points {
            let g = model.interior_point(&frames, p.segment, p.s_m, false).pose;
            let (phi, _) = so3_log_and_jr_inv(&(p.rot.transpose() * g.rot));
            p.vel_m_s = (g.pos - p.pos_m) / h;
            p.omega_rad_s = phi / h;
            p.pos_m = g.pos;
            p.rot = g.rot;
        }
    }

    /// Velocities from a rigid motion (twist `[w; v]` in the world frame,
    /// about the world origin): a rod thrown or already sliding.
    pub fn set_rigid_velocity(&mut self, twist: &Vec6) {
        let w = lie::angular(twist);
        let v = lie::linear(twist);
        for p in &mut self.points {
            p.vel_m_s = v + w.cross(&p.pos_m);
            p.omega_rad_s = p.rot.transpose() * w;
        }
    }
}

impl Term for Inertia {
    fn name(&self) -> &str {
        "inertia"
    }

    fn energy(&self, _s: &State) -> Option<f64> {
        None
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let h = self.h_s;
        let h2 = h * h;
        for pt in &self.points {
            let ip = s.model.interior_point(s.frames, pt.segment, pt.s_m, sink.wants_tangent());
            let p = ip.pose.pos;
            let r = ip.pose.rot;
            let k = pt.mass_kg / h2;
            let force = -(p - pt.pos_m - pt.vel_m_s * h) * k;
            // Rotation: body angular velocity over the step.
            let (phi, jr_inv) = so3_log_and_jr_inv(&(pt.rot.transpose() * r));
            let w = phi / h;
            let inertia = Mat3::from_diagonal(&pt.rotary_kg_m2);
            let iw = inertia * w;
            let tau_body = -(inertia * (w - pt.omega_rad_s) / h + w.cross(&iw));
            let moment = r * tau_body;
            let wrench = lie::stack(&(p.cross(&force) + moment), &force);
            let t = sink.wants_tangent().then(|| {
                let mut t: Mat6 = point_force_tangent(&p, &force, Some(&(Mat3::identity() * k)));
                // Follower moment turning with the section, and its
                // dependence on w through d(phi) = J_r^-1 R^T d(theta).
                let dw = (inertia / h + skew(&w) * inertia - skew(&iw)) * jr_inv / h;
                let rot_block = skew(&moment) + r * dw * r.transpose();
                let mut top = t.fixed_view_mut::<3, 3>(0, 0);
                top += rot_block;
                t
            });
            sink.wrench(Attach::Interior(&ip), wrench, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DVector;
    use rod::{Material, Rod};

    /// The inertia term's tangent is the Jacobian of its residual (central
    /// differences), with moving previous states, fixed and floating base.
    #[test]
    fn inertia_tangent_matches_finite_differences() {
        let mut rod = Rod::uniform_cylinder(0.3, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1200.0 }, 2);
        rod.subsegments_per_section = 2;
        rod.cross_section = rod::CrossSection::round(rod::Profile::Linear { base_m: 0.012, tip_m: 0.006 }, rod.cross_section.body);
        for floating in [false, true] {
            let mut model = Model::new(&rod, &[]);
            if floating {
                model = model.with_floating_base();
            }
            let n = model.n_dof();
            let q0 = DVector::from_fn(n, |i, _| 0.3 * ((i * 7 % 11) as f64 / 11.0 - 0.5));
            let mut inertia = Inertia::new(&model, &q0, 0.01);
            // Give the points some motion history.
            let q1 = DVector::from_fn(n, |i, _| 0.3 * ((i * 5 % 13) as f64 / 13.0 - 0.5));
            inertia.advance(&model, &q1);
            let q = DVector::from_fn(n, |i, _| 0.3 * ((i * 3 % 7) as f64 / 7.0 - 0.5));
            let a = rod::terms::assemble(&model, &q, &[&inertia], true);
            let h = a.tangent.unwrap();
            let fd = rod::terms::residual_jacobian_by_differences(&model, &q, &[&inertia], 1e-7);
            for i in 0..n {
                let err = (h.column(i) - fd.column(i)).amax();
                assert!(err < 1e-5 * h.amax(), "floating {floating}, dof {i}: {err:.3e} of {:.3e}", h.amax());
            }
        }
    }

    /// Mass and rotary inertia integrate the section exactly: total mass of
    /// a cone, and the rigid-body kinetic energy of a spinning rod.
    #[test]
    fn quadrature_integrates_mass_and_inertia() {
        let mut rod = Rod::uniform_cylinder(0.2, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1000.0 }, 3);
        rod.cross_section = rod::CrossSection::round(rod::Profile::Linear { base_m: 0.01, tip_m: 0.005 }, rod.cross_section.body);
        let model = Model::new(&rod, &[]);
        let inertia = Inertia::new(&model, &DVector::zeros(model.n_dof()), 0.01);
        // Cone frustum: V = pi L (R^2 + R r + r^2) / 3.
        let v = std::f64::consts::PI * 0.2 * (1e-4 + 5e-5 + 2.5e-5) / 3.0;
        assert!((inertia.mass_kg() - 1000.0 * v).abs() < 1e-12 * inertia.mass_kg());
        // Rotation about the rod axis at 2 rad/s: KE = 1/2 w^2 int rho Jx dx,
        // Jx = pi r^4 / 2, int_0^L r(x)^4 dx = L (R^5 - r^5) / (5 (R - r)).
        let mut spin = inertia.clone();
        spin.set_rigid_velocity(&Vec6::new(2.0, 0.0, 0.0, 0.0, 0.0, 0.0));
        let int_r4 = 0.2 * (1e-10 - 3.125e-12) / (5.0 * 0.005);
        let ke = 0.5 * 4.0 * 1000.0 * std::f64::consts::PI / 2.0 * int_r4;
        assert!((spin.kinetic_energy_j() - ke).abs() < 1e-12 * ke, "{} vs {ke}", spin.kinetic_energy_j());
    }
}
