//! Cross sections and materials: round sections (radius profiles, holes,
//! composite cores), rectangles (solid or hollow, constant or tapered) and
//! sections given by their properties, and from them the stiffness
//! `Sigma(X)`, the mass per length `rho A (X)`, and the surface the loads,
//! cables, contact and strain limits see.

use lie::{Vec3, Vec6};
use std::f64::consts::PI;

/// A length along the arc length (a radius, a width, a height).
#[derive(Clone, Debug, PartialEq)]
pub enum Profile {
    /// Linear taper from `base_m` at X = 0 to `tip_m` at X = L.
    Linear { base_m: f64, tip_m: f64 },
    /// Piecewise-linear table of (X \[m\], value \[m\]), X strictly
    /// increasing, covering [0, L].
    Table(Vec<(f64, f64)>),
}

impl Profile {
    pub fn constant(r_m: f64) -> Self {
        Profile::Linear { base_m: r_m, tip_m: r_m }
    }

    /// The same profile with every value multiplied by `scale`.
    pub fn scaled(&self, scale: f64) -> Self {
        match self {
            Profile::Linear { base_m, tip_m } => Profile::Linear { base_m: base_m * scale, tip_m: tip_m * scale },
            Profile::Table(t) => Profile::Table(t.iter().map(|&(x, r)| (x, r * scale)).collect()),
        }
    }

    /// The value at arc length `x_m` \[m\].
    pub fn radius_m(&self, x_m: f64, length_m: f64) -> f64 {
        match self {
            Profile::Linear { base_m, tip_m } => base_m + (tip_m - base_m) * x_m / length_m,
            Profile::Table(t) => {
                let i = table_interval(t, x_m);
                let (x0, r0) = t[i];
                let (x1, r1) = t[i + 1];
                r0 + (r1 - r0) * (x_m - x0) / (x1 - x0)
            }
        }
    }

    /// dr/dX.
    pub fn slope(&self, x_m: f64, length_m: f64) -> f64 {
        match self {
            Profile::Linear { base_m, tip_m } => (tip_m - base_m) / length_m,
            Profile::Table(t) => {
                let i = table_interval(t, x_m);
                (t[i + 1].1 - t[i].1) / (t[i + 1].0 - t[i].0)
            }
        }
    }

    /// Arc lengths where the profile has kinks (grid points worth keeping).
    pub fn breakpoints(&self) -> Vec<f64> {
        match self {
            Profile::Linear { .. } => vec![],
            Profile::Table(t) => t.iter().map(|p| p.0).collect(),
        }
    }
}

/// The table's interval holding `x` (the first or last beyond its ends),
/// by bisection: a query is log n, never a walk along the rows.
fn table_interval(t: &[(f64, f64)], x: f64) -> usize {
    let n = t.len();
    // The first row i >= 1 with x <= X_i, less one; at most n - 2.
    t[1..n.saturating_sub(1)].partition_point(|p| x > p.0).min(n.saturating_sub(2))
}

/// An isotropic linear-elastic material.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    pub e_pa: f64,
    pub g_pa: f64,
    pub rho_kg_m3: f64,
}

impl Material {
    pub fn from_poisson(e_pa: f64, poisson: f64, rho_kg_m3: f64) -> Self {
        Self { e_pa, g_pa: e_pa / (2.0 * (1.0 + poisson)), rho_kg_m3 }
    }

    /// Poisson's ratio `E / (2 G) - 1`.
    pub fn poisson(&self) -> f64 {
        self.e_pa / (2.0 * self.g_pa) - 1.0
    }
}

/// Tilt of a section's axis from a plane's normal within which its end
/// face counts as resting on the plane (see
/// [`CrossSection::extreme_point_m`]): the contact point moves from the
/// rim through the face's centre; the lowest point's height is then off by
/// at most 0.15 times this (in radians) times the radius (4 um for a 10 mm
/// section).
pub const END_FACE_TILT_RAD: f64 = 0.05;

/// Area and second moments of a solid circle: (A, Jx = polar, Jy = Jz).
fn circle(r: f64) -> (f64, f64, f64) {
    let a = PI * r * r;
    let jy = PI * r.powi(4) / 4.0;
    (a, 2.0 * jy, jy)
}

/// Torsion constant of a solid `a` x `b` rectangle (Saint-Venant), by the
/// series of Timoshenko and Goodier, *Theory of Elasticity*, 3rd ed.,
/// Sec. 109: with `a >= b`,
///
/// ```text
///   J = a b^3 / 3 [1 - 192 b / (pi^5 a) sum_{n = 1, 3, 5, ...} tanh(n pi a / (2 b)) / n^5]
/// ```
///
/// (terms to n = 99: the next is below 1e-10 of the sum).
pub fn rectangle_torsion_constant_m4(width_m: f64, height_m: f64) -> f64 {
    let (a, b) = if width_m >= height_m { (width_m, height_m) } else { (height_m, width_m) };
    if b <= 0.0 {
        return 0.0;
    }
    let sum: f64 = (0..50).map(|k| (2 * k + 1) as f64).map(|n| (n * PI * a / (2.0 * b)).tanh() / n.powi(5)).sum();
    a * b.powi(3) / 3.0 * (1.0 - 192.0 * b / (PI.powi(5) * a) * sum)
}

/// Timoshenko shear coefficient of a solid rectangle, Cowper (1966),
/// *J. Appl. Mech.* 33(2): `k = 10 (1 + nu) / (12 + 11 nu)` (the same in
/// both directions; 0.850 at nu = 0.45).
pub fn rectangle_shear_coefficient(poisson: f64) -> f64 {
    10.0 * (1.0 + poisson) / (12.0 + 11.0 * poisson)
}

/// A section given by its properties about its centroid's principal axes
/// (body y and z), for any shape a CAD tool can measure. Its bounding box
/// (`width_m` along y, `height_m` along z) stands for its surface: where
/// cables run, what touches a table, where fibre strains peak.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GivenSection {
    pub area_m2: f64,
    /// `int z^2 dA`: bending about body y (curvature `Ky`).
    pub second_moment_y_m4: f64,
    /// `int y^2 dA`: bending about body z (curvature `Kz`).
    pub second_moment_z_m4: f64,
    /// Saint-Venant torsion constant (not the polar moment).
    pub torsion_constant_m4: f64,
    /// Shear area over area, for shear along y and along z.
    pub shear_coefficient_y: f64,
    pub shear_coefficient_z: f64,
    pub width_m: f64,
    pub height_m: f64,
}

impl GivenSection {
    /// The properties of a solid `width_m` x `height_m` rectangle with shear
    /// coefficient `k` both ways (what a CAD tool would report for it).
    pub fn solid_rectangle(width_m: f64, height_m: f64, k: f64) -> GivenSection {
        let (w, h) = (width_m, height_m);
        GivenSection {
            area_m2: w * h,
            second_moment_y_m4: w * h.powi(3) / 12.0,
            second_moment_z_m4: h * w.powi(3) / 12.0,
            torsion_constant_m4: rectangle_torsion_constant_m4(w, h),
            shear_coefficient_y: k,
            shear_coefficient_z: k,
            width_m: w,
            height_m: h,
        }
    }
}

/// The shape of the rod's sections.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A circle of radius `outer`, with an optional central hole or an
    /// optional concentric core of another material (shear area = area,
    /// as in the PLS papers).
    Round { outer: Profile, hole: Option<Profile>, core: Option<(f64, Material)> },
    /// A rectangle `width` (along body y) by `height` (along body z),
    /// solid or a tube of constant `wall_m`, with its shear coefficients
    /// (y, z) (Cowper's for a solid one, see the rod file).
    Rectangle { width: Profile, height: Profile, wall_m: Option<f64>, shear_coefficient: [f64; 2] },
    /// Properties given directly (constant along the rod).
    Given(GivenSection),
}

impl Shape {
    /// A solid rectangle of constant `width_m` x `height_m` with Cowper's
    /// shear coefficient for Poisson's ratio `poisson`.
    pub fn solid_rectangle(width_m: f64, height_m: f64, poisson: f64) -> Shape {
        Shape::Rectangle {
            width: Profile::constant(width_m),
            height: Profile::constant(height_m),
            wall_m: None,
            shear_coefficient: [rectangle_shear_coefficient(poisson); 2],
        }
    }
}

/// The rod's cross-section model: a shape of one body material (and the
/// round shape's optional core).
#[derive(Clone, Debug, PartialEq)]
pub struct CrossSection {
    pub shape: Shape,
    pub body: Material,
}

/// Section properties at one arc length.
#[derive(Clone, Copy, Debug)]
pub struct SectionProperties {
    /// diag(G Jx, E Iy, E Iz, E A, G k_y A, G k_z A).
    pub stiffness_diag: Vec6,
    /// rho A [kg/m].
    pub mass_per_length_kg_m: f64,
    /// rho diag(Iy + Iz (polar), Iy, Iz, A, A, A).
    pub inertia_diag: Vec6,
}

/// Geometric properties of one material's area: A, polar moment, I_y,
/// I_z, torsion constant, shear areas (y, z).
#[derive(Clone, Copy, Debug)]
struct Area {
    a: f64,
    polar: f64,
    iy: f64,
    iz: f64,
    torsion: f64,
    shear: [f64; 2],
}

impl Area {
    fn circle(r: f64) -> Area {
        let (a, jx, jy) = circle(r);
        Area { a, polar: jx, iy: jy, iz: jy, torsion: jx, shear: [a, a] }
    }

    fn minus(self, o: Area) -> Area {
        Area {
            a: self.a - o.a,
            polar: self.polar - o.polar,
            iy: self.iy - o.iy,
            iz: self.iz - o.iz,
            torsion: self.torsion - o.torsion,
            shear: [self.shear[0] - o.shear[0], self.shear[1] - o.shear[1]],
        }
    }

    fn stiffness(&self, m: &Material) -> Vec6 {
        Vec6::new(m.g_pa * self.torsion, m.e_pa * self.iy, m.e_pa * self.iz, m.e_pa * self.a, m.g_pa * self.shear[0], m.g_pa * self.shear[1])
    }

    fn inertia(&self, m: &Material) -> Vec6 {
        Vec6::new(self.polar, self.iy, self.iz, self.a, self.a, self.a) * m.rho_kg_m3
    }
}

/// A rectangle `w` x `h`, solid or a tube of wall `t`. A tube's torsion
/// constant is Bredt's thin-walled `4 A_m^2 t / p_m` on the wall's mid-line;
/// its shear areas are its walls parallel to the shear (`2 t h` for shear
/// along z) unless the rod file gives coefficients.
fn rectangle(w: f64, h: f64, wall_m: Option<f64>, k: [f64; 2]) -> Area {
    let solid = |w: f64, h: f64| (w * h, w * h.powi(3) / 12.0, h * w.powi(3) / 12.0);
    let (a, iy, iz) = solid(w, h);
    match wall_m {
        None => Area { a, polar: iy + iz, iy, iz, torsion: rectangle_torsion_constant_m4(w, h), shear: [k[0] * a, k[1] * a] },
        Some(t) => {
            let (ai, iyi, izi) = solid(w - 2.0 * t, h - 2.0 * t);
            let (a, iy, iz) = (a - ai, iy - iyi, iz - izi);
            let (wm, hm) = (w - t, h - t);
            let torsion = 4.0 * (wm * hm).powi(2) * t / (2.0 * (wm + hm));
            Area { a, polar: iy + iz, iy, iz, torsion, shear: [k[0] * a, k[1] * a] }
        }
    }
}

/// The walls' share of a hollow rectangle's area: the shear coefficients
/// (y, z) of a tube (shear along y is carried by the walls along y).
pub fn rectangle_tube_shear_coefficients(width_m: f64, height_m: f64, wall_m: f64) -> [f64; 2] {
    let a = width_m * height_m - (width_m - 2.0 * wall_m) * (height_m - 2.0 * wall_m);
    [2.0 * wall_m * width_m / a, 2.0 * wall_m * height_m / a]
}

impl CrossSection {
    /// A round section of radius profile `outer` (no hole, no core).
    pub fn round(outer: Profile, body: Material) -> Self {
        CrossSection { shape: Shape::Round { outer, hole: None, core: None }, body }
    }

    /// The same section with every length (radii, width, height, wall)
    /// multiplied by `scale`: areas scale as `scale^2`, second moments as
    /// `scale^4`.
    pub fn scaled(&self, scale: f64) -> Self {
        let shape = match &self.shape {
            Shape::Round { outer, hole, core } => {
                Shape::Round { outer: outer.scaled(scale), hole: hole.as_ref().map(|h| h.scaled(scale)), core: core.map(|(r, m)| (r * scale, m)) }
            }
            Shape::Rectangle { width, height, wall_m, shear_coefficient } => Shape::Rectangle {
                width: width.scaled(scale),
                height: height.scaled(scale),
                wall_m: wall_m.map(|t| t * scale),
                shear_coefficient: *shear_coefficient,
            },
            Shape::Given(g) => Shape::Given(GivenSection {
                area_m2: g.area_m2 * scale.powi(2),
                second_moment_y_m4: g.second_moment_y_m4 * scale.powi(4),
                second_moment_z_m4: g.second_moment_z_m4 * scale.powi(4),
                torsion_constant_m4: g.torsion_constant_m4 * scale.powi(4),
                width_m: g.width_m * scale,
                height_m: g.height_m * scale,
                ..*g
            }),
        };
        CrossSection { shape, body: self.body }
    }

    /// The round section's outer radius profile, if it is round.
    pub fn round_outer(&self) -> Option<&Profile> {
        match &self.shape {
            Shape::Round { outer, .. } => Some(outer),
            _ => None,
        }
    }

    pub fn properties(&self, x_m: f64, length_m: f64) -> SectionProperties {
        let m = &self.body;
        let body = match &self.shape {
            Shape::Round { outer, hole, core } => {
                let r_in = match (hole, core) {
                    (Some(h), _) => h.radius_m(x_m, length_m),
                    (None, Some((rc, _))) => *rc,
                    (None, None) => 0.0,
                };
                Area::circle(outer.radius_m(x_m, length_m)).minus(Area::circle(r_in))
            }
            Shape::Rectangle { width, height, wall_m, shear_coefficient } => {
                rectangle(width.radius_m(x_m, length_m), height.radius_m(x_m, length_m), *wall_m, *shear_coefficient)
            }
            Shape::Given(g) => Area {
                a: g.area_m2,
                polar: g.second_moment_y_m4 + g.second_moment_z_m4,
                iy: g.second_moment_y_m4,
                iz: g.second_moment_z_m4,
                torsion: g.torsion_constant_m4,
                shear: [g.shear_coefficient_y * g.area_m2, g.shear_coefficient_z * g.area_m2],
            },
        };
        let mut k = body.stiffness(m);
        let mut inertia = body.inertia(m);
        let mut rho_a = m.rho_kg_m3 * body.a;
        if let Shape::Round { hole: None, core: Some((rc, c)), .. } = &self.shape {
            let core = Area::circle(*rc);
            k += core.stiffness(c);
            inertia += core.inertia(c);
            rho_a += c.rho_kg_m3 * core.a;
        }
        SectionProperties { stiffness_diag: k, mass_per_length_kg_m: rho_a, inertia_diag: inertia }
    }

    /// Half the section's extent along body y and along z \[m\] (a round
    /// section: its radius twice).
    pub fn half_extents_m(&self, x_m: f64, length_m: f64) -> (f64, f64) {
        match &self.shape {
            Shape::Round { outer, .. } => {
                let r = outer.radius_m(x_m, length_m);
                (r, r)
            }
            Shape::Rectangle { width, height, .. } => (0.5 * width.radius_m(x_m, length_m), 0.5 * height.radius_m(x_m, length_m)),
            Shape::Given(g) => (0.5 * g.width_m, 0.5 * g.height_m),
        }
    }

    /// Distance from the centre line to the surface along the ray at
    /// `angle_rad` from body +y towards +z \[m\], and its rate along the
    /// arc length: where a cable at that angle runs, where fibres are
    /// checked.
    pub fn surface_distance_m(&self, x_m: f64, length_m: f64, angle_rad: f64) -> (f64, f64) {
        let (hy, hz) = self.half_extents_m(x_m, length_m);
        // The half extents' rates along the arc length.
        let (dhy, dhz) = match &self.shape {
            Shape::Round { outer, .. } => return (hy, outer.slope(x_m, length_m)),
            Shape::Rectangle { width, height, .. } => (0.5 * width.slope(x_m, length_m), 0.5 * height.slope(x_m, length_m)),
            Shape::Given(_) => (0.0, 0.0),
        };
        // The ray leaves through the nearer wall: a side (y = +-hy) or the
        // top or bottom (z = +-hz), and moves with that wall.
        let (c, s) = (angle_rad.cos().abs(), angle_rad.sin().abs());
        if hy * s <= hz * c {
            (hy / c, dhy / c)
        } else {
            (hz / s, dhz / s)
        }
    }

    /// The section's point farthest along the unit `direction` (body
    /// frame; only its y and z parts count) \[m\]: the point of the section
    /// that touches a plane approached from that side. A rectangle's corner
    /// is chosen by the signs of the direction, blended linearly over 1e-5
    /// rad about a face parallel to the plane (the face's points are then
    /// all equally low to within 1e-5 of its width, and the choice does not
    /// jump between corners).
    ///
    /// Within [`END_FACE_TILT_RAD`] of the axis lying along the direction
    /// (a rod's end face nearly flat on the plane) the point moves
    /// continuously through the face's centre, from one rim to the other:
    /// the centre of the pressure on a face pressed flat. A single rim
    /// point would jump across the face as the tilt passes zero, where no
    /// contact force can balance the rod (a rod pressed at an angle onto a
    /// table with enough friction to stick turns its end face flat).
    pub fn extreme_point_m(&self, x_m: f64, length_m: f64, direction: &Vec3) -> Vec3 {
        let len = direction.y.hypot(direction.z);
        if len < 1e-12 {
            return Vec3::zeros();
        }
        let (hy, hz) = self.half_extents_m(x_m, length_m);
        // The share of the rim's distance from the centre: 1 beyond the
        // face's tilt, x (2 - x) within (C1 at both ends).
        let x = len / END_FACE_TILT_RAD.sin();
        let share = if x >= 1.0 { 1.0 } else { x * (2.0 - x) };
        share
            * match &self.shape {
                Shape::Round { .. } => Vec3::new(0.0, direction.y, direction.z) * (hy / len),
                _ => {
                    let side = |d: f64| (d / (len * 1e-5)).clamp(-1.0, 1.0);
                    Vec3::new(0.0, hy * side(direction.y), hz * side(direction.z))
                }
            }
    }

    /// Arc lengths where the section's profiles have kinks.
    pub fn breakpoints(&self) -> Vec<f64> {
        match &self.shape {
            Shape::Round { outer, .. } => outer.breakpoints(),
            Shape::Rectangle { width, height, .. } => width.breakpoints().into_iter().chain(height.breakpoints()).collect(),
            Shape::Given(_) => vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_sums_materials() {
        let silicone = Material::from_poisson(2.56e5, 0.45, 1.41e3);
        let steel = Material::from_poisson(1.2e9, 0.3, 7.8e3);
        let cs = CrossSection { shape: Shape::Round { outer: Profile::constant(0.0085), hole: None, core: Some((0.0015, steel)) }, body: silicone };
        let p = cs.properties(0.0, 1.0);
        let (ao, _, jo) = circle(0.0085);
        let (ac, _, jc) = circle(0.0015);
        let ea = silicone.e_pa * (ao - ac) + steel.e_pa * ac;
        let ei = silicone.e_pa * (jo - jc) + steel.e_pa * jc;
        assert!((p.stiffness_diag[3] - ea).abs() < 1e-9 * ea);
        assert!((p.stiffness_diag[1] - ei).abs() < 1e-9 * ei);
        assert!((silicone.g_pa - 2.56e5 / 2.9).abs() < 1e-6);
        let rho_a = 1.41e3 * (ao - ac) + 7.8e3 * ac;
        assert!((p.mass_per_length_kg_m - rho_a).abs() < 1e-12);
    }

    #[test]
    fn table_profile_interpolates() {
        let p = Profile::Table(vec![(0.0, 0.01), (0.1, 0.008), (0.2, 0.005)]);
        assert!((p.radius_m(0.05, 0.2) - 0.009).abs() < 1e-15);
        assert!((p.radius_m(0.15, 0.2) - 0.0065).abs() < 1e-15);
        assert!((p.slope(0.15, 0.2) + 0.03).abs() < 1e-12);
    }

    /// The series against the published table of `beta = J / (a b^3)`
    /// (Timoshenko & Goodier, Sec. 109, Table 6), to its three digits.
    #[test]
    fn rectangle_torsion_matches_the_published_table() {
        for (ratio, beta) in [(1.0, 0.141), (1.5, 0.196), (2.0, 0.229), (2.5, 0.249), (3.0, 0.263), (4.0, 0.281), (5.0, 0.291), (10.0, 0.312)] {
            let j = rectangle_torsion_constant_m4(ratio * 0.01, 0.01);
            let got = j / (ratio * 0.01 * 1e-6);
            assert!((got - beta).abs() <= 0.0006, "a/b = {ratio}: beta {got} vs {beta}");
            // Either orientation.
            assert!((rectangle_torsion_constant_m4(0.01, ratio * 0.01) - j).abs() < 1e-15 * j.max(1e-30) * 1e3);
        }
        // Thin strips tend to a b^3 / 3 (1 - 0.630 b / a).
        let j = rectangle_torsion_constant_m4(1.0, 0.01);
        assert!((j / (1e-6 / 3.0 * (1.0 - 0.630 * 0.01)) - 1.0).abs() < 1e-4);
    }

    /// A thin square tube: Bredt's constant 4 A_m^2 t / p_m = b_m^3 t,
    /// and areas and second moments the difference of two rectangles.
    #[test]
    fn hollow_rectangle_properties() {
        let m = Material::from_poisson(1e6, 0.45, 1e3);
        let (w, t) = (0.03, 0.001);
        let k = rectangle_tube_shear_coefficients(w, w, t);
        let cs = CrossSection {
            shape: Shape::Rectangle { width: Profile::constant(w), height: Profile::constant(w), wall_m: Some(t), shear_coefficient: k },
            body: m,
        };
        let p = cs.properties(0.0, 1.0);
        let a = w * w - (w - 2.0 * t).powi(2);
        let i = (w.powi(4) - (w - 2.0 * t).powi(4)) / 12.0;
        assert!((p.stiffness_diag[3] / m.e_pa - a).abs() < 1e-15);
        assert!((p.stiffness_diag[1] / m.e_pa - i).abs() < 1e-18);
        assert!((p.stiffness_diag[0] / m.g_pa - (w - t).powi(3) * t).abs() < 1e-18);
        // Shear along z: the two walls along z, 2 t w of the area.
        assert!((p.stiffness_diag[5] / m.g_pa - 2.0 * t * w).abs() < 1e-15);
    }

    /// A section given by the rectangle's own properties is that rectangle.
    #[test]
    fn given_section_equals_the_rectangle_it_describes() {
        let m = Material::from_poisson(2.56e5, 0.45, 1.41e3);
        let (w, h) = (0.03, 0.01);
        let k = rectangle_shear_coefficient(0.45);
        let rect = CrossSection { shape: Shape::solid_rectangle(w, h, 0.45), body: m };
        let given = CrossSection { shape: Shape::Given(GivenSection::solid_rectangle(w, h, k)), body: m };
        for s in [1.0, 2.0] {
            let (a, b) = (rect.scaled(s).properties(0.1, 0.2), given.scaled(s).properties(0.1, 0.2));
            assert!((a.stiffness_diag - b.stiffness_diag).amax() < 1e-12 * a.stiffness_diag.amax());
            assert!((a.inertia_diag - b.inertia_diag).amax() < 1e-15);
            assert!((a.mass_per_length_kg_m - b.mass_per_length_kg_m).abs() < 1e-15);
        }
        assert!((k - 10.0 * 1.45 / (12.0 + 4.95)).abs() < 1e-15);
    }

    /// The extreme point and surface distance of a rectangle: corners,
    /// faces, and the round section's rim.
    #[test]
    fn rectangle_surface() {
        let m = Material::from_poisson(1e6, 0.45, 1e3);
        let rect = CrossSection {
            shape: Shape::Rectangle {
                width: Profile::constant(0.03),
                height: Profile::Linear { base_m: 0.02, tip_m: 0.01 },
                wall_m: None,
                shear_coefficient: [1.0; 2],
            },
            body: m,
        };
        let p = rect.extreme_point_m(0.0, 1.0, &Vec3::new(0.0, -0.3, -1.0));
        assert!((p - Vec3::new(0.0, -0.015, -0.01)).norm() < 1e-15);
        let flat = rect.extreme_point_m(0.0, 1.0, &Vec3::new(0.0, 0.0, -1.0));
        assert!((flat - Vec3::new(0.0, 0.0, -0.01)).norm() < 1e-15);
        let (d, slope) = rect.surface_distance_m(0.5, 1.0, std::f64::consts::FRAC_PI_2);
        assert!((d - 0.0075).abs() < 1e-12 && (slope + 0.005).abs() < 1e-6, "{d} {slope}");
        let (d, slope) = rect.surface_distance_m(0.5, 1.0, 0.0);
        assert!((d - 0.015).abs() < 1e-12 && slope.abs() < 1e-9);
        let round = CrossSection::round(Profile::constant(0.01), m);
        let p = round.extreme_point_m(0.0, 1.0, &Vec3::new(5.0, 0.0, -2.0));
        assert!((p - Vec3::new(0.0, 0.0, -0.01)).norm() < 1e-15);
    }
}
