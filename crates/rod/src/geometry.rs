//! Cross sections and materials: radius profiles, holes, composite cores,
//! and from them the stiffness `Sigma(X)` and mass per length `rho A (X)`.

use lie::Vec6;
use std::f64::consts::PI;

/// A radius along the arc length.
#[derive(Clone, Debug, PartialEq)]
pub enum Profile {
    /// Linear taper from `base_m` at X = 0 to `tip_m` at X = L.
    Linear { base_m: f64, tip_m: f64 },
    /// Piecewise-linear table of (X \[m\], r \[m\]), X strictly increasing,
    /// covering [0, L].
    Table(Vec<(f64, f64)>),
}

impl Profile {
    pub fn constant(r_m: f64) -> Self {
        Profile::Linear { base_m: r_m, tip_m: r_m }
    }

    /// The same profile with every radius multiplied by `scale`.
    pub fn scaled(&self, scale: f64) -> Self {
        match self {
            Profile::Linear { base_m, tip_m } => Profile::Linear { base_m: base_m * scale, tip_m: tip_m * scale },
            Profile::Table(t) => Profile::Table(t.iter().map(|&(x, r)| (x, r * scale)).collect()),
        }
    }

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

fn table_interval(t: &[(f64, f64)], x: f64) -> usize {
    let n = t.len();
    let mut i = 0;
    while i + 2 < n && x > t[i + 1].0 {
        i += 1;
    }
    i
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
}

/// Area and second moments of a solid circle: (A, Jx = polar, Jy = Jz).
fn circle(r: f64) -> (f64, f64, f64) {
    let a = PI * r * r;
    let jy = PI * r.powi(4) / 4.0;
    (a, 2.0 * jy, jy)
}

/// The rod's cross-section model: a body of one material with an optional
/// central hole, or an optional concentric core of another material.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossSection {
    pub outer: Profile,
    pub hole: Option<Profile>,
    pub body: Material,
    pub core: Option<(f64, Material)>,
}

/// Section properties at one arc length.
#[derive(Clone, Copy, Debug)]
pub struct SectionProperties {
    /// diag(G Jx, E Jy, E Jz, E A, G A, G A).
    pub stiffness_diag: Vec6,
    /// rho A [kg/m].
    pub mass_per_length_kg_m: f64,
    /// rho diag(Jx, Jy, Jz, A, A, A).
    pub inertia_diag: Vec6,
}

impl CrossSection {
    /// The same section with every radius (outer, hole, core) multiplied
    /// by `scale`: areas scale as `scale^2`, second moments as `scale^4`.
    pub fn scaled(&self, scale: f64) -> Self {
        CrossSection {
            outer: self.outer.scaled(scale),
            hole: self.hole.as_ref().map(|h| h.scaled(scale)),
            body: self.body,
            core: self.core.map(|(r, m)| (r * scale, m)),
        }
    }

    pub fn properties(&self, x_m: f64, length_m: f64) -> SectionProperties {
        let r_out = self.outer.radius_m(x_m, length_m);
        let r_in = match (&self.hole, &self.core) {
            (Some(h), _) => h.radius_m(x_m, length_m),
            (None, Some((rc, _))) => *rc,
            (None, None) => 0.0,
        };
        let (ao, jxo, jyo) = circle(r_out);
        let (ai, jxi, jyi) = circle(r_in);
        let (a, jx, jy) = (ao - ai, jxo - jxi, jyo - jyi);
        let m = &self.body;
        let mut k = Vec6::new(m.g_pa * jx, m.e_pa * jy, m.e_pa * jy, m.e_pa * a, m.g_pa * a, m.g_pa * a);
        let mut inertia = Vec6::new(jx, jy, jy, a, a, a) * m.rho_kg_m3;
        let mut rho_a = m.rho_kg_m3 * a;
        if let (None, Some((rc, c))) = (&self.hole, &self.core) {
            let (a, jx, jy) = circle(*rc);
            k += Vec6::new(c.g_pa * jx, c.e_pa * jy, c.e_pa * jy, c.e_pa * a, c.g_pa * a, c.g_pa * a);
            inertia += Vec6::new(jx, jy, jy, a, a, a) * c.rho_kg_m3;
            rho_a += c.rho_kg_m3 * a;
        }
        SectionProperties { stiffness_diag: k, mass_per_length_kg_m: rho_a, inertia_diag: inertia }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_sums_materials() {
        let silicone = Material::from_poisson(2.56e5, 0.45, 1.41e3);
        let steel = Material::from_poisson(1.2e9, 0.3, 7.8e3);
        let cs = CrossSection { outer: Profile::constant(0.0085), hole: None, body: silicone, core: Some((0.0015, steel)) };
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
}
