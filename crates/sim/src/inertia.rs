//! Inertia of the rod as a term: mass and rotary inertia at the Gauss
//! points of every constant-strain segment, integrated on each point's own
//! motion. Two points where the section is the same along the segment
//! (they integrate its mass and rotary inertia exactly), four where it
//! varies (the stiffness's rule). The motion's variation along a segment
//! is what two points integrate only approximately: with two points on
//! every segment (tapered rods too), every step of the shipped dynamic
//! scenes kept its tip within 3 nm and its contact and base forces within
//! 6e-6 N of an 8-point rule, where doubling the sub-segments moves them by
//! 1e-4 to 0.23 N (docs/results.md; a unit test below:
//! `two_points_integrate_a_bent_rods_inertia`), at half the cost of four
//! points.
//!
//! Implicit Euler (the default):
//!
//! ```text
//!   translation (world):  F = -m a_k,   a_k = (v_k - v_{k-1}) / h,  v_k = (p_k - p_{k-1}) / h
//!   rotation (body):      tau = -(I al_k + w_k x I w_k),
//!                         al_k = (w_k - w_{k-1}) / h,  w_k = log(R_{k-1}^T R_k) / h
//! ```
//!
//! or BDF2, second order, with `v_k = (3 d_k - d_{k-1}) / 2h` (d the step's
//! displacement or body rotation) and `a_k = (3 v_k - 4 v_{k-1} + v_{k-2}) / 2h`.
//! Implicit Euler damps a mode of frequency w by about w h / 2 of critical
//! (robust with contact); BDF2 by about (w h)^3 / 4, so a ring-down in air
//! keeps the damping the material has (what `identify --dynamic` fits).
//! BDF2 starts, and starts again after a change of step, with one Euler step.
//!
//! Each point's force is mapped to the strains by `J^T` like any other load.
//! A hung mass is one more point of the same kind, rigidly attached at its
//! offset from a joint (translation only: a point mass). The generalised
//! mass matrix `M(q) = sum J^T Mcal J` is the leading part of this term's
//! tangent (times 1/h^2), and the Coriolis and centrifugal forces are in
//! the points' exact accelerations (`J qdd + Jdot qd` to first order).

use lie::{skew, Mat3, Mat6, Pose, Vec3, Vec6};
use rod::model::{GAUSS2, GAUSS4};
use rod::terms::{point_force_tangent, Attach, Sink, State, Term};
use rod::Model;

/// The inertia's quadrature on segment `seg`: [`GAUSS2`] where the
/// section is the same along it (its mass and rotary inertia per length
/// constant, so two points integrate them exactly), [`GAUSS4`] where it
/// varies (a taper's `r^4` needs more than two). Neither integrates the
/// motion's own variation along the segment exactly; two points do it to
/// about 1e-6 of the forces (module docs).
pub fn inertia_rule(model: &Model, seg: &rod::model::Segment) -> &'static [(f64, f64)] {
    let l = model.rod.length_m;
    let at = |x: f64| model.rod.cross_section.properties(x, l).inertia_diag;
    let (start, middle, end) = (at(seg.x0_m), at(seg.x0_m + 0.5 * seg.h_m), at(seg.x0_m + seg.h_m));
    let scale = start.amax().max(f64::MIN_POSITIVE);
    if (middle - start).amax() <= 1e-12 * scale && (end - start).amax() <= 1e-12 * scale {
        &GAUSS2
    } else {
        &GAUSS4
    }
}

/// The time integration of the inertia.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Integrator {
    /// First order; damps a mode by about w h / 2 of critical.
    #[default]
    ImplicitEuler,
    /// Second order (backward differences of two steps); damps a mode by
    /// about (w h)^3 / 4 of critical.
    Bdf2,
}

/// A point's motion history: the last step's velocity and the one
/// before, and the last step's displacement (world, or body rotation).
#[derive(Clone, Copy, Debug, Default)]
pub struct History {
    /// Velocity at the end of the last step.
    pub now: Vec3,
    /// Velocity at the end of the step before.
    pub before: Vec3,
    /// The last step's displacement \[m\] or body rotation \[rad\].
    pub step: Vec3,
}

impl History {
    /// A history at rest.
    fn rest() -> History {
        History::default()
    }

    /// Velocity and acceleration at the end of a step of `h` that moves by
    /// `d`, and their derivatives with respect to `d` (scalars). Multiplied
    /// by `1/h`, not divided: divisions were a tenth of the inertia term.
    fn rates(&self, d: &Vec3, h: f64, bdf2: bool) -> (Vec3, Vec3, f64, f64) {
        let inv_h = 1.0 / h;
        if bdf2 {
            let v = (d * 3.0 - self.step) * (0.5 * inv_h);
            let a = (v * 3.0 - self.now * 4.0 + self.before) * (0.5 * inv_h);
            (v, a, 1.5 * inv_h, 2.25 * inv_h * inv_h)
        } else {
            let v = d * inv_h;
            (v, (v - self.now) * inv_h, inv_h, inv_h * inv_h)
        }
    }

    /// After a step of `h` that moved by `d`.
    fn advance(&mut self, d: Vec3, h: f64, bdf2: bool) {
        let (v, _, _, _) = self.rates(&d, h, bdf2);
        self.before = self.now;
        self.now = v;
        self.step = d;
    }

    /// A rigid motion's velocity, as if it had been moving so for ever.
    fn moving(v: Vec3, h: f64) -> History {
        History { now: v, before: v, step: v * h }
    }
}

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
    /// Velocity \[m/s\] (world).
    pub linear: History,
    /// Angular velocity \[rad/s\] (body).
    pub angular: History,
}

/// A point mass rigidly attached to joint `joint`'s frame at
/// `offset_body_m`, and its motion at the end of the last step.
#[derive(Clone, Debug)]
pub struct MassPoint {
    pub joint: usize,
    pub offset_body_m: Vec3,
    pub mass_kg: f64,
    pub pos_m: Vec3,
    pub linear: History,
}

/// The inertia term for one step of length `h_s`.
#[derive(Clone, Debug)]
pub struct Inertia {
    pub points: Vec<InertiaPoint>,
    /// Point masses (hung masses), translation only.
    pub masses: Vec<MassPoint>,
    pub h_s: f64,
    pub integrator: Integrator,
    /// The length of the last step taken, when the history spans two steps
    /// of it (BDF2 can use it); `None` at the start.
    history_h_s: Option<f64>,
    /// The points' poses and turns at the last evaluated coordinates.
    last: LastPoses,
}

/// The inertia points' poses and their turns over the step, `(pose,
/// log(R_prev^T R))`, at the coordinates of the last evaluation: the step's
/// solution is mostly the last point its residual was evaluated at, and
/// [`Inertia::advance`] takes them from here instead of an exponential and
/// a logarithm per point again (a tenth of a step of a lying rod). Keyed by the
/// coordinates and the rod's base (a prescribed base moves with time). A
/// clone starts empty.
#[derive(Debug)]
struct LastPoses(std::sync::Mutex<Evaluated>);

/// What [`LastPoses`] keeps.
#[derive(Debug)]
struct Evaluated {
    q: Vec<f64>,
    base: Pose,
    /// Per inertia point: its pose and `log(R_prev^T R)`.
    points: Vec<(Pose, Vec3)>,
}

impl Default for Evaluated {
    fn default() -> Self {
        Evaluated { q: vec![], base: Pose::identity(), points: vec![] }
    }
}

impl Default for LastPoses {
    fn default() -> Self {
        LastPoses(std::sync::Mutex::new(Evaluated::default()))
    }
}

impl Clone for LastPoses {
    fn clone(&self) -> Self {
        LastPoses::default()
    }
}

impl Inertia {
    /// Inertia points of `model` at configuration `q`, at rest: on each
    /// segment the fewest Gauss points of [`inertia_rule`].
    pub fn new(model: &Model, q: &nalgebra::DVector<f64>, h_s: f64) -> Inertia {
        Inertia::with_rule(model, q, h_s, |seg| inertia_rule(model, seg))
    }

    /// Inertia points at the Gauss points `rule(segment)` (nodes on
    /// \[-1, 1\] and weights) of every segment.
    pub fn with_rule<'r>(model: &Model, q: &nalgebra::DVector<f64>, h_s: f64, rule: impl Fn(&rod::model::Segment) -> &'r [(f64, f64)]) -> Inertia {
        let frames = model.frames(q);
        let l = model.rod.length_m;
        let mut points = vec![];
        for (k, seg) in model.segments.iter().enumerate() {
            for &(xi, wi) in rule(seg) {
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
                    linear: History::rest(),
                    angular: History::rest(),
                });
            }
        }
        Inertia { points, masses: vec![], h_s, integrator: Integrator::ImplicitEuler, history_h_s: None, last: LastPoses::default() }
    }

    /// With point masses `(joint, offset in its frame, mass)` at rest at
    /// configuration `q`.
    pub fn with_masses(mut self, model: &Model, q: &nalgebra::DVector<f64>, masses: &[(usize, Vec3, f64)]) -> Inertia {
        let frames = model.frames(q);
        self.masses = masses
            .iter()
            .map(|&(joint, offset_body_m, mass_kg)| MassPoint {
                joint,
                offset_body_m,
                mass_kg,
                pos_m: frames.joints[joint].transform_point(&offset_body_m),
                linear: History::rest(),
            })
            .collect();
        self
    }

    /// Integrated by `integrator`.
    pub fn with_integrator(mut self, integrator: Integrator) -> Inertia {
        self.integrator = integrator;
        self
    }

    /// BDF2 this step: asked for, and the history has two steps of this length.
    fn bdf2(&self) -> bool {
        self.integrator == Integrator::Bdf2 && self.history_h_s.is_some_and(|h| (h - self.h_s).abs() <= 1e-12 * self.h_s)
    }

    /// The rod's mass and the point masses' \[kg\].
    pub fn mass_kg(&self) -> f64 {
        self.points.iter().map(|p| p.mass_kg).sum::<f64>() + self.masses.iter().map(|m| m.mass_kg).sum::<f64>()
    }

    /// Kinetic energy of the points' last velocities \[J\].
    pub fn kinetic_energy_j(&self) -> f64 {
        self.points
            .iter()
            .map(|p| 0.5 * p.mass_kg * p.linear.now.norm_squared() + 0.5 * p.angular.now.component_mul(&p.rotary_kg_m2).dot(&p.angular.now))
            .sum::<f64>()
            + self.masses.iter().map(|m| 0.5 * m.mass_kg * m.linear.now.norm_squared()).sum::<f64>()
    }

    /// Linear momentum of the points [kg m/s].
    pub fn momentum(&self) -> Vec3 {
        self.points.iter().map(|p| p.linear.now * p.mass_kg).sum::<Vec3>() + self.masses.iter().map(|m| m.linear.now * m.mass_kg).sum::<Vec3>()
    }

    /// Sets the points' state from a step just taken to configuration `q`.
    pub fn advance(&mut self, model: &Model, q: &nalgebra::DVector<f64>) {
        let (h, bdf2) = (self.h_s, self.bdf2());
        let last = std::mem::take(&mut *self.last.0.lock().unwrap_or_else(|e| e.into_inner()));
        let cached = (last.q.as_slice() == q.as_slice() && last.base == model.rod.base && last.points.len() == self.points.len()).then_some(last.points);
        let frames = (cached.is_none() || !self.masses.is_empty()).then(|| model.frames(q));
        let frames = || frames.as_ref().expect("frames computed where needed");
        for (i, p) in self.points.iter_mut().enumerate() {
            let (g, phi) = match &cached {
                Some(poses) => poses[i],
                None => {
                    let g = model.interior_point(frames(), p.segment, p.s_m, false).pose;
                    (g, lie::so3_log(&(p.rot.transpose() * g.rot)))
                }
            };
            p.linear.advance(g.pos - p.pos_m, h, bdf2);
            p.angular.advance(phi, h, bdf2);
            p.pos_m = g.pos;
            p.rot = g.rot;
        }
        for m in &mut self.masses {
            let p = frames().joints[m.joint].transform_point(&m.offset_body_m);
            m.linear.advance(p - m.pos_m, h, bdf2);
            m.pos_m = p;
        }
        // The next step may use two steps of history when it is as long.
        self.history_h_s = Some(h);
    }

    /// Velocities from a rigid motion (twist `[w; v]` in the world frame,
    /// about the world origin): a rod thrown or already sliding.
    pub fn set_rigid_velocity(&mut self, twist: &Vec6) {
        let w = lie::angular(twist);
        let v = lie::linear(twist);
        let h = self.h_s;
        for p in &mut self.points {
            p.linear = History::moving(v + w.cross(&p.pos_m), h);
            p.angular = History::moving(p.rot.transpose() * w, h);
        }
        for m in &mut self.masses {
            m.linear = History::moving(v + w.cross(&m.pos_m), h);
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
        let (h, bdf2) = (self.h_s, self.bdf2());
        let mut last = self.last.0.lock().unwrap_or_else(|e| e.into_inner());
        last.q.clear();
        last.q.extend_from_slice(s.q.as_slice());
        last.base = s.model.rod.base;
        last.points.clear();
        for pt in &self.points {
            let ip = s.model.interior_point(s.frames, pt.segment, pt.s_m, sink.wants_tangent());
            let p = ip.pose.pos;
            let r = ip.pose.rot;
            let (_, a, _, da_dp) = pt.linear.rates(&(p - pt.pos_m), h, bdf2);
            let k = pt.mass_kg * da_dp;
            let force = -a * pt.mass_kg;
            // Rotation: body angular velocity and acceleration over the step.
            let phi = lie::so3_log(&(pt.rot.transpose() * r));
            last.points.push((ip.pose, phi));
            let (w, alpha, dw_dphi, dalpha_dphi) = pt.angular.rates(&phi, h, bdf2);
            let inertia = Mat3::from_diagonal(&pt.rotary_kg_m2);
            let iw = inertia * w;
            let tau_body = -(inertia * alpha + w.cross(&iw));
            let moment = r * tau_body;
            let wrench = lie::stack(&(p.cross(&force) + moment), &force);
            let t = sink.wants_tangent().then(|| {
                let mut t: Mat6 = point_force_tangent(&p, &force, Some(&(Mat3::identity() * k)));
                // Follower moment turning with the section, and its
                // dependence on w through d(phi) = J_r^-1 R^T d(theta)
                // (J_r^-1 made here only: most evaluations are residuals).
                let jr_inv = lie::so3_right_jacobian_inverse(&phi);
                let dw = (inertia * dalpha_dphi + (skew(&w) * inertia - skew(&iw)) * dw_dphi) * jr_inv;
                let rot_block = skew(&moment) + r * dw * r.transpose();
                let mut top = t.fixed_view_mut::<3, 3>(0, 0);
                top += rot_block;
                t
            });
            sink.wrench(Attach::Interior(&ip), wrench, t);
        }
        for m in &self.masses {
            let p = s.frames.joints[m.joint].transform_point(&m.offset_body_m);
            let (_, a, _, da_dp) = m.linear.rates(&(p - m.pos_m), h, bdf2);
            let force = -a * m.mass_kg;
            sink.point_force(Attach::Joint(m.joint), &p, &force, &Vec3::zeros(), Some(&(Mat3::identity() * (m.mass_kg * da_dp))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DVector;
    use rod::{Material, Rod};

    /// The inertia term's tangent is the Jacobian of its residual (central
    /// differences), with moving previous states, fixed and floating base,
    /// implicit Euler and BDF2, a point mass at an offset included.
    #[test]
    fn inertia_tangent_matches_finite_differences() {
        let mut rod = Rod::uniform_cylinder(0.3, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1200.0 }, 2);
        rod.subsegments_per_section = 2;
        rod.cross_section = rod::CrossSection::round(rod::Profile::Linear { base_m: 0.012, tip_m: 0.006 }, rod.cross_section.body);
        for (floating, bdf2) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut model = Model::new(&rod, &[]);
            if floating {
                model = model.with_floating_base();
            }
            let n = model.n_dof();
            let q0 = DVector::from_fn(n, |i, _| 0.3 * ((i * 7 % 11) as f64 / 11.0 - 0.5));
            // A hung mass on the tip face's edge among them.
            let tip = model.n_joints() - 1;
            let mut inertia = Inertia::new(&model, &q0, 0.01).with_masses(&model, &q0, &[(tip, Vec3::new(0.0, 0.01, 0.02), 0.05)]);
            // Give the points some motion history.
            let q1 = DVector::from_fn(n, |i, _| 0.3 * ((i * 5 % 13) as f64 / 13.0 - 0.5));
            inertia.advance(&model, &q1);
            if bdf2 {
                // Two steps of history.
                inertia = inertia.with_integrator(Integrator::Bdf2);
                let q2 = DVector::from_fn(n, |i, _| 0.3 * ((i * 2 % 9) as f64 / 9.0 - 0.5));
                inertia.advance(&model, &q2);
                assert!(inertia.bdf2());
            }
            let q = DVector::from_fn(n, |i, _| 0.3 * ((i * 3 % 7) as f64 / 7.0 - 0.5));
            let a = rod::terms::assemble(&model, &q, &[&inertia], true);
            let h = a.tangent.unwrap();
            let fd = rod::terms::residual_jacobian_by_differences(&model, &q, &[&inertia], 1e-7);
            for i in 0..n {
                let err = (h.column(i) - fd.column(i)).amax();
                assert!(err < 1e-5 * h.amax(), "floating {floating}, bdf2 {bdf2}, dof {i}: {err:.3e} of {:.3e}", h.amax());
            }
        }
    }

    /// Advancing to the coordinates last evaluated takes the poses kept
    /// from that evaluation: the same state, bit for bit, as computing them
    /// again (a clone starts without them); at other coordinates they are
    /// not used.
    #[test]
    fn advance_from_the_last_evaluation_is_advance_from_scratch() {
        let mut rod = Rod::uniform_cylinder(0.3, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1200.0 }, 2);
        rod.subsegments_per_section = 2;
        let model = Model::new(&rod, &[]).with_floating_base();
        let n = model.n_dof();
        let q1 = DVector::from_fn(n, |i, _| 0.2 * ((i * 5 % 13) as f64 / 13.0 - 0.5));
        let q2 = DVector::from_fn(n, |i, _| 0.2 * ((i * 3 % 7) as f64 / 7.0 - 0.5));
        let mut inertia = Inertia::new(&model, &DVector::zeros(n), 0.01);
        inertia.advance(&model, &q1);
        for (evaluated, advanced_to) in [(&q2, &q2), (&q1, &q2)] {
            let mut kept = inertia.clone();
            rod::terms::assemble(&model, evaluated, &[&kept], false);
            let mut fresh = inertia.clone();
            kept.advance(&model, advanced_to);
            fresh.advance(&model, advanced_to);
            for (a, b) in kept.points.iter().zip(&fresh.points) {
                assert_eq!((a.pos_m, a.rot, a.linear.now, a.angular.now), (b.pos_m, b.rot, b.linear.now, b.angular.now));
            }
        }
    }

    /// Gauss-Legendre, eight points: the reference.
    const GAUSS8: [(f64, f64); 8] = [
        (-0.960_289_856_497_536_3, 0.101_228_536_290_376_3),
        (-0.796_666_477_413_626_7, 0.222_381_034_453_374_5),
        (-0.525_532_409_916_329, 0.313_706_645_877_887_3),
        (-0.183_434_642_495_649_8, 0.362_683_783_378_362),
        (0.183_434_642_495_649_8, 0.362_683_783_378_362),
        (0.525_532_409_916_329, 0.313_706_645_877_887_3),
        (0.796_666_477_413_626_7, 0.222_381_034_453_374_5),
        (0.960_289_856_497_536_3, 0.101_228_536_290_376_3),
    ];

    /// A uniform rod takes two points per segment, a tapered one four. On a
    /// rod bent and twisted by up to 0.4 rad per segment, moving, the
    /// inertia's generalised forces with two points are within 1e-4 of an
    /// 8-point rule's (9.6e-6; four points 3.6e-12), and the error falls
    /// faster than the square of the bending (a fourth of it: 53x less).
    /// Fails with one point per segment (checked).
    #[test]
    fn two_points_integrate_a_bent_rods_inertia() {
        let mut rod = Rod::uniform_cylinder(0.4, 0.01, Material { e_pa: 1e6, g_pa: 3.5e5, rho_kg_m3: 1200.0 }, 2);
        rod.subsegments_per_section = 2;
        let model = Model::new(&rod, &[]).with_floating_base();
        assert!(Inertia::new(&model, &DVector::zeros(model.n_dof()), 0.01).points.len() == 2 * model.segments.len());
        let mut tapered = rod.clone();
        tapered.cross_section = rod::CrossSection::round(rod::Profile::Linear { base_m: 0.012, tip_m: 0.006 }, tapered.cross_section.body);
        let tapered_model = Model::new(&tapered, &[]);
        assert!(Inertia::new(&tapered_model, &DVector::zeros(tapered_model.n_dof()), 0.01).points.len() == 4 * tapered_model.segments.len());
        let n = model.n_dof();
        // Strain coordinates of a few rad/m: h = 0.1 m, so about 0.4 rad
        // of bending and twist per segment.
        let state = |scale: f64, seed: usize| {
            DVector::from_fn(n, |i, _| if i < n - 6 { scale * (((i * seed) % 11) as f64 / 11.0 - 0.5) * 8.0 } else { 0.01 * (i % 3) as f64 })
        };
        let relative_error = |scale: f64, rule: &'static [(f64, f64)]| {
            let forces = |rule: &'static [(f64, f64)]| {
                let mut inertia = Inertia::with_rule(&model, &state(scale, 7), 0.01, |_| rule);
                inertia.advance(&model, &state(scale, 5));
                rod::terms::assemble(&model, &state(scale, 3), &[&inertia], false).residual
            };
            let reference = forces(&GAUSS8);
            (forces(rule) - &reference).amax() / reference.amax()
        };
        let (two, four) = (relative_error(1.0, &GAUSS2), relative_error(1.0, &GAUSS4));
        let quarter = relative_error(0.25, &GAUSS2);
        println!("two points {two:.2e}, four {four:.2e}, two at a quarter of the bending {quarter:.2e} ({:.0}x)", two / quarter);
        assert!(two < 1e-4 && four < 1e-10, "{two:.2e} {four:.2e}");
        assert!(two / quarter > 16.0, "{two:.2e} / {quarter:.2e}");
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
