//! Contact of the rod with a rigid plane (the table) and Coulomb friction,
//! in the projection (Alart-Curnier) form of science §6a:
//!
//! ```text
//!   Lambda_n = f(Lambda_n - r_n delta_n)                       (Signorini)
//!   Lambda_t = proj_{disc(mu f(Lambda_n - r_n delta_n))} (Lambda_t - r_t u_t)   (Coulomb)
//! ```
//!
//! with `f(x) = max(0, x)` for the exact law. `delta_n` is the gap of the
//! section's lowest surface point, `u_t` its tangential displacement over
//! the step (the material point, so rolling counts as no slip). `r_n`, `r_t`
//! are explicit scales in N/m; they change the Newton path, never the
//! solution. The paper's smoothed NCP functions replace `max(0, x)` by
//! `x D(x)` with a sigmoid or trigonometric `D` of width `w` (in N): an
//! option to reproduce the paper, not exact (the sigmoid gives adhesion and
//! creep at stick).
//!
//! [`evaluate`] is the law as residual rows `C(Lambda, u)` with their
//! derivatives, so the simulator solves contact and rod together by a
//! semismooth Newton.

use lie::Vec3;
use nalgebra::{Matrix3, Vector3};

/// Which complementarity function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Law {
    /// `max(0, x)`: exact Signorini and Coulomb.
    Exact,
    /// `x / (1 + exp(-x / w))` (paper eq. 27 with `c = 1 / w`).
    Sigmoid { width_n: f64 },
    /// `x (1 - cos(pi x / w)) / 2` on `[0, w)`, `x` above, 0 below (paper
    /// eq. 28 with `w_paper = pi / w`): exact outside the transition.
    Trigonometric { width_n: f64 },
}

impl Law {
    /// `f(x)` and `f'(x)`.
    fn ramp(&self, x: f64) -> (f64, f64) {
        match *self {
            // At the kink the contact branch: a point touching without force
            // (a rod laid on the table) starts in contact, so Newton's first
            // step keeps it on the table instead of dropping it through.
            Law::Exact => {
                if x >= 0.0 {
                    (x, 1.0)
                } else {
                    (0.0, 0.0)
                }
            }
            Law::Sigmoid { width_n } => {
                let z = x / width_n;
                // D = 1 / (1 + e^-z), computed without overflow.
                let d = if z >= 0.0 { 1.0 / (1.0 + (-z).exp()) } else { z.exp() / (1.0 + z.exp()) };
                (x * d, d + z * d * (1.0 - d))
            }
            Law::Trigonometric { width_n } => {
                if x <= 0.0 {
                    (0.0, 0.0)
                } else if x >= width_n {
                    (x, 1.0)
                } else {
                    let a = std::f64::consts::PI / width_n;
                    let d = 0.5 * (1.0 - (a * x).cos());
                    let dd = 0.5 * a * (a * x).sin();
                    (x * d, d + x * dd)
                }
            }
        }
    }

    /// `f'(x)` from the left (the exact ramp's kink: 0).
    fn left_slope(&self, x: f64) -> f64 {
        match *self {
            Law::Exact => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            _ => self.ramp(x).1,
        }
    }

    /// A point with this augmented normal force exerts (numerically)
    /// nothing and its rows decouple: `C = Lambda`.
    fn is_free(&self, lambda_hat_n: f64) -> bool {
        match *self {
            Law::Exact => lambda_hat_n < 0.0,
            Law::Trigonometric { .. } => lambda_hat_n <= 0.0,
            Law::Sigmoid { width_n } => lambda_hat_n < -40.0 * width_n,
        }
    }
}

/// State of a contact point after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ContactState {
    Free,
    Stick,
    Slide,
}

impl ContactState {
    pub fn label(&self) -> &'static str {
        match self {
            ContactState::Free => "free",
            ContactState::Stick => "stick",
            ContactState::Slide => "slide",
        }
    }
}

/// Residual rows of one contact point and their derivatives.
#[derive(Clone, Debug)]
pub struct LawRows {
    /// `C = Lambda - proj(...)`, components (n, t1, t2) \[N\].
    pub c: Vector3<f64>,
    pub dc_dlambda: Matrix3<f64>,
    /// With respect to `u = (delta_n, u_t1, u_t2)` \[m\].
    pub dc_du: Matrix3<f64>,
    pub state: ContactState,
    /// `C = Lambda` exactly, independent of the rod (eliminated).
    pub free: bool,
}

/// Parameters of the law at one point.
#[derive(Clone, Copy, Debug)]
pub struct LawParams {
    pub law: Law,
    pub mu: f64,
    /// Scales \[N/m\].
    pub r_n: f64,
    pub r_t: f64,
}

/// The law's rows at multipliers `lambda = (n, t1, t2)` and gap/slip `u`.
pub fn evaluate(p: &LawParams, lambda: &Vector3<f64>, u: &Vector3<f64>) -> LawRows {
    let hat_n = lambda[0] - p.r_n * u[0];
    let hat_t = nalgebra::Vector2::new(lambda[1] - p.r_t * u[1], lambda[2] - p.r_t * u[2]);
    let lam_t = nalgebra::Vector2::new(lambda[1], lambda[2]);
    let (fn_, dfn) = p.law.ramp(hat_n);
    let free = p.law.is_free(hat_n);
    let mut c = Vector3::zeros();
    let mut dl = Matrix3::zeros();
    let mut du = Matrix3::zeros();
    // Normal: C_n = lambda_n - f(hat_n).
    c[0] = lambda[0] - fn_;
    dl[(0, 0)] = 1.0 - dfn;
    du[(0, 0)] = dfn * p.r_n;
    // Tangential: C_t = lambda_t - g hat_t, g = (rho - f(rho - a)) / a,
    // rho = mu f(hat_n), a = |hat_t|.
    // The sigmoid's f is slightly negative below zero (adhesion): the
    // friction disc's radius stays >= 0.
    let (rho, drho) = if fn_ > 0.0 { (p.mu * fn_, p.mu * dfn) } else { (0.0, 0.0) };
    let a = hat_t.norm();
    let (f_ra, df_ra) = p.law.ramp(rho - a);
    let tiny = 1e-14 * (rho.abs() + lam_t.norm() + 1e-300);
    let (g, dg_da, dg_drho) = if a > tiny {
        let m = rho - f_ra;
        let g = m / a;
        (g, (df_ra - g) / a, (1.0 - df_ra) / a)
    } else {
        // Limit a -> 0: g = f'(rho), from the left (1 for an exact stick,
        // 0 for a free point). A point touching without force (the exact
        // ramp's kink) takes the stick branch like the normal's contact
        // branch: friction then holds a rod laid on the table from Newton's
        // first step (a free base would otherwise have no horizontal
        // stiffness at all).
        let d0 = if free { p.law.left_slope(rho) } else { p.law.ramp(rho).1 };
        (d0, 0.0, 0.0)
    };
    let s = if a > tiny { hat_t / a } else { nalgebra::Vector2::zeros() };
    let ct = lam_t - hat_t * g;
    c[1] = ct[0];
    c[2] = ct[1];
    // d ct = d lam_t - g d hat_t - hat_t (dg_da s^T d hat_t + dg_drho drho d hat_n)
    //      = d lam_t - [g I + a dg_da s s^T] d hat_t - s a dg_drho drho d hat_n.
    let m_t = nalgebra::Matrix2::identity() * g + s * s.transpose() * (a * dg_da);
    let v_n = s * (a * dg_drho * drho);
    // d hat_t = d lam_t - r_t d u_t, d hat_n = d lam_n - r_n d u_n.
    for i in 0..2 {
        dl[(1 + i, 0)] = -v_n[i];
        du[(1 + i, 0)] = v_n[i] * p.r_n;
        for j in 0..2 {
            let id = if i == j { 1.0 } else { 0.0 };
            dl[(1 + i, 1 + j)] = id - m_t[(i, j)];
            du[(1 + i, 1 + j)] = m_t[(i, j)] * p.r_t;
        }
    }
    let state = if free || fn_ <= 0.0 {
        ContactState::Free
    } else if a <= rho {
        ContactState::Stick
    } else {
        ContactState::Slide
    };
    LawRows { c, dc_dlambda: dl, dc_du: du, state, free }
}

/// Normal stiffness per unit length of an elastic cylinder of radius
/// `radius_m` and surface `material` in line contact with a rigid plane,
/// at the line load `line_load_n_m` \[N/m^2 = (N/m of rod) per m of
/// approach\]: the secant `P / delta` of the approach of the cylinder's axis
///
/// ```text
///   delta = P (1 - nu^2) / (pi E) (ln(8 R / a) - 1/2),   a = 2 sqrt(P R (1 - nu^2) / (pi E))
/// ```
///
/// (the cylinder's half of the two-cylinder line contact of Johnson,
/// *Contact Mechanics*, 1985, Sec. 5.6; `a` is the contact half-width).
/// The logarithm makes it depend weakly on the load (twice the load: about
/// 8 % stiffer). It sets how the normal loads of a rod lying along the
/// table share out, not how much they sum to; the results it feeds are
/// insensitive to it within a factor of several (tested).
pub fn line_contact_modulus_pa(radius_m: f64, material: &rod::Material, line_load_n_m: f64) -> f64 {
    let nu = contact_poisson(material);
    let e_star_pa = material.e_pa / (1.0 - nu * nu);
    let a_m = 2.0 * (line_load_n_m * radius_m / (std::f64::consts::PI * e_star_pa)).sqrt();
    // ln(8R/a) - 1/2 >= 1 keeps the estimate finite for loads that flatten
    // the section (a ~ R), where no line-contact formula holds anyway.
    let log_term = ((8.0 * radius_m / a_m).ln() - 0.5).max(1.0);
    std::f64::consts::PI * e_star_pa / log_term
}

/// The default foundation modulus under the rod at arc length `x_m` \[Pa\]:
/// [`line_contact_modulus_pa`] of the section there, at the rod's own
/// weight per length under standard gravity (so that a scene without
/// gravity gets the same table).
///
/// A section that is not round lies on its face of width `w` (along body
/// y); its modulus is that of the section squeezed through its height `h`,
/// `E w / h` (uniaxial, the face flat on the table): an estimate of the
/// same standing as the round one's, which the results are insensitive to.
pub fn default_foundation_modulus_pa(rod: &rod::Rod, x_m: f64) -> f64 {
    let l = rod.length_m;
    let cs = &rod.cross_section;
    match cs.round_outer() {
        Some(outer) => {
            let weight_n_m = cs.properties(x_m, l).mass_per_length_kg_m * STANDARD_GRAVITY_M_S2;
            line_contact_modulus_pa(outer.radius_m(x_m, l), &cs.body, weight_n_m)
        }
        None => {
            let (half_w, half_h) = cs.half_extents_m(x_m, l);
            cs.body.e_pa * half_w / half_h
        }
    }
}

/// Standard gravity \[m/s^2\] (the load the default foundation is taken at).
pub const STANDARD_GRAVITY_M_S2: f64 = 9.80665;

/// Tangential over normal compliance of an elastic contact, `(2 - nu) / (2
/// (1 - nu))` (Mindlin's ratio for a point contact; 1.41 for silicone,
/// nu = 0.45): a sticking point yields elastically along the table too.
/// Without it the friction forces of redundant sticking points (a rod lying
/// along the table has more contact rows than strain coordinates) are not
/// unique, and Newton cannot settle them.
pub fn mindlin_ratio(material: &rod::Material) -> f64 {
    let nu = contact_poisson(material);
    (2.0 - nu) / (2.0 * (1.0 - nu))
}

/// The surface material's Poisson ratio, `E / (2 G) - 1`, kept within the
/// [0, 0.5] the contact formulas hold for.
fn contact_poisson(material: &rod::Material) -> f64 {
    (material.e_pa / (2.0 * material.g_pa) - 1.0).clamp(0.0, 0.5)
}

/// The table: a rigid plane through `point_m` with unit `normal` (pointing
/// out of the table, towards the rod) and friction coefficient `mu`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plane {
    pub point_m: Vec3,
    pub normal: Vec3,
    pub mu: f64,
}

impl Plane {
    /// Signed distance of `p` above the plane \[m\].
    pub fn height_m(&self, p: &Vec3) -> f64 {
        self.normal.dot(&(p - self.point_m))
    }

    /// Two unit vectors spanning the plane, with the normal a right-handed
    /// frame `(t1, t2, n)`.
    pub fn tangents(&self) -> (Vec3, Vec3) {
        let n = self.normal;
        let helper = if n.x.abs() < 0.9 { Vec3::x() } else { Vec3::y() };
        let t1 = (helper - n * n.dot(&helper)).normalize();
        let t2 = n.cross(&t1);
        (t1, t2)
    }

    /// Body-frame offset of the point of `section` (at arc length `x_m`
    /// of a rod of `length_m`) nearest the plane when its frame has
    /// rotation `rot`: a round section's rim point facing the plane, a
    /// rectangle's lowest corner (its face's middle when the face lies
    /// flat); zero when the section lies parallel to the plane.
    pub fn lowest_offset(&self, rot: &lie::Mat3, section: &rod::CrossSection, x_m: f64, length_m: f64) -> Vec3 {
        section.extreme_point_m(x_m, length_m, &-(rot.transpose() * self.normal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(law: Law) -> LawParams {
        LawParams { law, mu: 0.5, r_n: 200.0, r_t: 150.0 }
    }

    /// Derivatives of the rows match central differences away from the
    /// switching surfaces, for every law and state.
    #[test]
    fn law_derivatives_match_finite_differences() {
        let cases = [
            (Vector3::new(0.0, 0.0, 0.0), Vector3::new(1e-3, 0.0, 0.0)),      // free
            (Vector3::new(2.0, 0.1, -0.2), Vector3::new(-1e-3, 1e-4, 2e-4)),  // stick
            (Vector3::new(2.0, 0.9, -0.7), Vector3::new(-1e-3, 3e-3, -4e-3)), // slide
            (Vector3::new(0.3, 0.05, 0.02), Vector3::new(2e-4, -1e-4, 1e-4)),
        ];
        for law in [Law::Exact, Law::Sigmoid { width_n: 0.05 }, Law::Trigonometric { width_n: 0.5 }] {
            let p = params(law);
            for (lam, u) in cases {
                let rows = evaluate(&p, &lam, &u);
                let e = 1e-7;
                for k in 0..3 {
                    let mut d = Vector3::zeros();
                    d[k] = e;
                    let fd_l = (evaluate(&p, &(lam + d), &u).c - evaluate(&p, &(lam - d), &u).c) / (2.0 * e);
                    let fd_u = (evaluate(&p, &lam, &(u + d * 1e-3)).c - evaluate(&p, &lam, &(u - d * 1e-3)).c) / (2.0 * e * 1e-3);
                    assert!((fd_l - rows.dc_dlambda.column(k)).amax() < 1e-5, "{law:?} {lam} {u}: dC/dlambda col {k}: {fd_l} vs {}", rows.dc_dlambda.column(k));
                    assert!(
                        (fd_u - rows.dc_du.column(k)).amax() < 1e-4 * (1.0 + fd_u.amax()),
                        "{law:?} {lam} {u}: dC/du col {k}: {fd_u} vs {}",
                        rows.dc_du.column(k)
                    );
                }
            }
        }
    }

    /// The exact law's zeros are the Signorini-Coulomb conditions.
    #[test]
    fn exact_law_zeros_are_signorini_coulomb() {
        let p = params(Law::Exact);
        // Separated, no force.
        let r = evaluate(&p, &Vector3::zeros(), &Vector3::new(1e-3, 0.3, 0.0));
        assert!(r.c.norm() == 0.0 && r.state == ContactState::Free && r.free);
        // Touching, pressing, sticking (no slip, force inside the cone).
        let r = evaluate(&p, &Vector3::new(1.0, 0.3, 0.2), &Vector3::zeros());
        assert!(r.c.norm() < 1e-15 && r.state == ContactState::Stick);
        // Sliding along +t1: force -mu Lambda_n along t1.
        let r = evaluate(&p, &Vector3::new(1.0, -0.5, 0.0), &Vector3::new(0.0, 1e-3, 0.0));
        assert!(r.c.norm() < 1e-15 && r.state == ContactState::Slide, "{:?}", r.c);
        // Force outside the cone is not a solution.
        assert!(evaluate(&p, &Vector3::new(1.0, 0.8, 0.0), &Vector3::zeros()).c.norm() > 0.1);
        // Penetration without force is not a solution.
        assert!(evaluate(&p, &Vector3::zeros(), &Vector3::new(-1e-3, 0.0, 0.0)).c.norm() > 0.1);
    }

    /// The line-contact modulus against the formula worked by hand for a
    /// silicone rod (E = 256 kPa, nu = 0.45, R = 8 mm) under its own weight
    /// (2.78 N/m): a = 0.297 mm, ln(8R/a) - 1/2 = 4.87, k = 2.07e5 Pa, so
    /// the rod sinks 13 um; harder loads make it stiffer, slowly.
    #[test]
    fn line_contact_modulus_of_a_silicone_rod() {
        let m = rod::Material::from_poisson(2.56e5, 0.45, 1410.0);
        let k = line_contact_modulus_pa(0.008, &m, 2.78);
        let e_star = 2.56e5 / (1.0 - 0.45f64 * 0.45);
        let a = 2.0 * (2.78 * 0.008 / (std::f64::consts::PI * e_star)).sqrt();
        assert!((a - 2.970e-4).abs() < 1e-7, "{a}");
        assert!((k - std::f64::consts::PI * e_star / ((0.064 / a).ln() - 0.5)).abs() < 1e-9 * k);
        assert!((k / 2.07e5 - 1.0).abs() < 0.01, "{k}");
        let k2 = line_contact_modulus_pa(0.008, &m, 2.0 * 2.78);
        assert!(k2 > k && k2 < 1.1 * k, "{k} {k2}");
    }

    #[test]
    fn lowest_point_of_a_section() {
        let plane = Plane { point_m: Vec3::zeros(), normal: Vec3::z(), mu: 0.5 };
        let m = rod::Material::from_poisson(1e6, 0.45, 1e3);
        let round = rod::CrossSection::round(rod::Profile::constant(0.01), m);
        // Rod along x, lying: lowest point at body -z.
        let d = plane.lowest_offset(&lie::Mat3::identity(), &round, 0.0, 1.0);
        assert!((d - Vec3::new(0.0, 0.0, -0.01)).norm() < 1e-15);
        // Rod rolled 90 degrees about its axis: body y points down.
        let rot = lie::Pose::from_rpy(std::f64::consts::FRAC_PI_2, 0.0, 0.0, Vec3::zeros()).rot;
        let d = plane.lowest_offset(&rot, &round, 0.0, 1.0);
        assert!((rot * d - Vec3::new(0.0, 0.0, -0.01)).norm() < 1e-15);
        // A 30 x 10 mm rectangle rolled 30 degrees: its lowest corner,
        // h/2 cos + w/2 sin below the axis.
        let rect = rod::CrossSection {
            shape: rod::Shape::Rectangle {
                width: rod::Profile::constant(0.03),
                height: rod::Profile::constant(0.01),
                wall_m: None,
                shear_coefficient: [1.0; 2],
            },
            body: m,
        };
        let phi = 30f64.to_radians();
        let rot = lie::Pose::from_rpy(phi, 0.0, 0.0, Vec3::zeros()).rot;
        let d = rot * plane.lowest_offset(&rot, &rect, 0.0, 1.0);
        assert!((d.z + 0.005 * phi.cos() + 0.015 * phi.sin()).abs() < 1e-15, "{d}");
        // Rod pointing straight down: the end face is parallel to the plane.
        let rot = lie::Pose::from_rpy(0.0, std::f64::consts::FRAC_PI_2, 0.0, Vec3::zeros()).rot;
        assert_eq!(plane.lowest_offset(&rot, &round, 0.0, 1.0), Vec3::zeros());
        let (t1, t2) = plane.tangents();
        assert!((t1.cross(&t2) - plane.normal).norm() < 1e-15);
    }
}
