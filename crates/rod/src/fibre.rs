//! A large-strain section law: the body's fibres follow a hyperelastic
//! (Mooney-Rivlin, neo-Hookean as its special case) uniaxial law,
//! integrated over the cross-section; shear and torsion stay linear in G.
//!
//! Each fibre at `(y, z)` of the section is stretched by
//! `lambda = 1 + e + ky z - kz y` (the axial part of `Q + K x d`, `e`,
//! `ky`, `kz` the deviations of stretch and bending strains from rest), and
//! carries the nominal stress of an incompressible Mooney-Rivlin solid in
//! uniaxial tension,
//!
//! ```text
//!   P(lambda) = (E / 3) [(1 - beta) (lambda - lambda^-2) + beta (1 - lambda^-3)]
//! ```
//!
//! (`C10 = (1 - beta) E / 6`, `C01 = beta E / 6`; `beta = 0` is neo-Hookean,
//! `P = mu (lambda - lambda^-2)` with `mu = E / 3`), whose slope at
//! `lambda = 1` is `E`: the law reduces to the linear one at small strain.
//! The section's axial force and bending moments are the integrals of `P`,
//! `P z` and `-P y`; the stiffness is the integral of `dP/dlambda`. This is
//! the fibre-beam approximation: every fibre in uniaxial stress, the
//! section's lateral contraction free.
//!
//! Sections are integrated by Gauss rules: a disc or annulus (outer disc
//! minus hole) as a 1-D integral over the chords across the bending
//! direction (12 points: the stretch varies along that direction only), a
//! rectangle by 8 x 8 points (a tube: outer minus inner rectangle); along
//! the rod, two stations per sub-segment. Their own small-strain tangent is
//! subtracted from the linear model's stiffness, so the law reduces to the
//! linear model exactly; at 45 % surface strain a rectangle's moment is
//! within 1e-8 of its closed form (tested).

use crate::geometry::{CrossSection, Shape};
use crate::model::Segment;
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};

/// The body's elastic law along its fibres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ElasticLaw {
    /// Linear elastic (Hooke): the section stiffnesses E A, E I.
    Linear,
    /// Incompressible Mooney-Rivlin fibres; `c01_fraction = C01 / (C10 + C01)`
    /// in [0, 1), 0 being neo-Hookean.
    Hyperelastic { c01_fraction: f64 },
}

impl ElasticLaw {
    pub const NEO_HOOKEAN: ElasticLaw = ElasticLaw::Hyperelastic { c01_fraction: 0.0 };

    /// The law's name as users write it and reports print it.
    pub fn name(&self) -> String {
        match self {
            ElasticLaw::Linear => "linear elastic".into(),
            ElasticLaw::Hyperelastic { c01_fraction } if *c01_fraction == 0.0 => "neo-Hookean".into(),
            ElasticLaw::Hyperelastic { c01_fraction } => format!("Mooney-Rivlin (C01 fraction {c01_fraction})"),
        }
    }

    /// The law as the rod file spells it (`[material] law`), with its
    /// constant (`c01_fraction`) when it has one.
    pub fn key(&self) -> (&'static str, Option<f64>) {
        match self {
            ElasticLaw::Linear => ("linear", None),
            ElasticLaw::Hyperelastic { c01_fraction } if *c01_fraction == 0.0 => ("neo_hookean", None),
            ElasticLaw::Hyperelastic { c01_fraction } => ("mooney_rivlin", Some(*c01_fraction)),
        }
    }

    /// The law of a rod file's (or an identified file's) `law` and
    /// `c01_fraction`; the error names the field at fault.
    pub fn from_key(law: Option<&str>, c01_fraction: Option<f64>) -> Result<ElasticLaw, (&'static str, String)> {
        let parsed = match law {
            None | Some("linear") => ElasticLaw::Linear,
            Some("neo_hookean") => ElasticLaw::NEO_HOOKEAN,
            Some("mooney_rivlin") => {
                let beta = c01_fraction.ok_or(("c01_fraction", "missing: a Mooney-Rivlin law needs C01 / (C10 + C01), in [0, 1)".to_string()))?;
                if !(0.0..1.0).contains(&beta) {
                    return Err(("c01_fraction", format!("must lie in [0, 1), got {beta}")));
                }
                ElasticLaw::Hyperelastic { c01_fraction: beta }
            }
            Some(other) => return Err(("law", format!("unknown law '{other}' (linear, neo_hookean or mooney_rivlin)"))),
        };
        if c01_fraction.is_some() && law != Some("mooney_rivlin") {
            return Err(("c01_fraction", "only a law = \"mooney_rivlin\" has a C01 fraction".into()));
        }
        Ok(parsed)
    }

    /// Fibre strain (tension or compression) beyond which a solution is
    /// flagged: 20 % for the linear law, where a silicone's curve has left
    /// its tangent by several percent; 50 % for the hyperelastic ones, about
    /// where a one- or two-constant rubber law stops matching uniaxial
    /// tests of rubbers (Treloar's data) within a few percent.
    pub fn strain_limit(&self) -> f64 {
        match self {
            ElasticLaw::Linear => 0.2,
            ElasticLaw::Hyperelastic { .. } => 0.5,
        }
    }
}

/// Below this stretch the fibre law is continued by its tangent there
/// (a quadratic energy), so that a Newton step that overshoots into
/// `lambda <= 0` still has a finite residual; solutions that far are
/// beyond the model anyway (see `validity`).
const LAMBDA_MIN: f64 = 0.2;

/// Per unit E: the fibre's energy density `w`, stress `dw/dlambda` and
/// stiffness `d2w/dlambda2` at stretch `lambda`.
pub fn fibre_law_unit(beta: f64, lambda: f64) -> (f64, f64, f64) {
    let exact = |l: f64| {
        let w = ((1.0 - beta) * (l * l + 2.0 / l - 3.0) + beta * (2.0 * l + 1.0 / (l * l) - 3.0)) / 6.0;
        let s = ((1.0 - beta) * (l - 1.0 / (l * l)) + beta * (1.0 - 1.0 / l.powi(3))) / 3.0;
        let t = ((1.0 - beta) * (1.0 + 2.0 / l.powi(3)) + 3.0 * beta / l.powi(4)) / 3.0;
        (w, s, t)
    };
    if lambda >= LAMBDA_MIN {
        return exact(lambda);
    }
    let (w, s, t) = exact(LAMBDA_MIN);
    let d = lambda - LAMBDA_MIN;
    (w + s * d + 0.5 * t * d * d, s + t * d, t)
}

/// Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n).
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let k = k as f64;
                    (p0, p1) = (p1, ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k);
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

/// Gauss points of the round sections' rule (in the angle `phi`, below).
const DISC_POINTS: usize = 12;
/// Per direction, a rectangle's Gauss points.
const RECTANGLE_POINTS: usize = 8;

/// A node of the round sections' rule in the angle `phi` on
/// [-pi/2, pi/2] (its sine and cosine kept: they are all the rule uses).
#[derive(Clone, Copy, Debug)]
pub struct PhiNode {
    sin: f64,
    cos: f64,
    weight: f64,
}

/// The Gauss rule in `phi` of [`DISC_POINTS`] nodes.
fn phi_rule() -> Vec<PhiNode> {
    let half_pi = 0.5 * std::f64::consts::PI;
    gauss_legendre(DISC_POINTS).into_iter().map(|(u, w)| PhiNode { sin: (half_pi * u).sin(), cos: (half_pi * u).cos(), weight: half_pi * w }).collect()
}

/// How a station's section is integrated.
#[derive(Clone, Debug)]
pub enum SectionRule {
    /// Discs `(radius, sign)` (an annulus: the outer disc minus the hole).
    /// The fibre stretch varies along one direction only, the bending
    /// plane's `rho`, so each disc is a 1-D integral over its chords:
    /// `rho = R sin(phi)`, chord `2 R cos(phi)`, smooth in `phi`.
    Discs { discs: [(f64, f64); 2], count: usize },
    /// Fibres `(y, z, area)` (a tube's inner rectangle with negative areas).
    Fibres(Vec<[f64; 3]>),
}

/// The body's section at arc length `x_m` as the law integrates it;
/// `None` for a section given only by its properties (no shape).
pub fn section_rule(section: &CrossSection, x_m: f64, length_m: f64) -> Option<SectionRule> {
    match &section.shape {
        Shape::Round { outer, hole, core } => {
            let r_in = match (hole, core) {
                (Some(h), _) => h.radius_m(x_m, length_m),
                (None, Some((rc, _))) => *rc,
                (None, None) => 0.0,
            };
            let discs = [(outer.radius_m(x_m, length_m), 1.0), (r_in, -1.0)];
            Some(SectionRule::Discs { discs, count: if r_in > 0.0 { 2 } else { 1 } })
        }
        Shape::Rectangle { width, height, wall_m, .. } => {
            let (w, h) = (width.radius_m(x_m, length_m), height.radius_m(x_m, length_m));
            let rule = gauss_legendre(RECTANGLE_POINTS);
            let block = |w: f64, h: f64, sign: f64, out: &mut Vec<[f64; 3]>| {
                for (u, wu) in &rule {
                    for (v, wv) in &rule {
                        out.push([0.5 * w * u, 0.5 * h * v, sign * 0.25 * w * h * wu * wv]);
                    }
                }
            };
            let mut fibres = vec![];
            block(w, h, 1.0, &mut fibres);
            if let Some(t) = wall_m {
                block(w - 2.0 * t, h - 2.0 * t, -1.0, &mut fibres);
            }
            Some(SectionRule::Fibres(fibres))
        }
        Shape::Given(_) => None,
    }
}

/// Section resultants per unit E at deviations `strain = (e, ky, kz)`:
/// energy, forces `[N, My, Mz]` (the integrals of `P b`, `b = (1, z, -y)`)
/// and their 3 x 3 tangent (of `dP/dlambda b b^T`).
fn section_resultants(beta: f64, rule: &SectionRule, phi_rule: &[PhiNode], strain: &Vector3<f64>, with_tangent: bool) -> (f64, Vector3<f64>, Matrix3<f64>) {
    let (mut energy, mut force, mut tangent) = (0.0, Vector3::zeros(), Matrix3::zeros());
    match rule {
        SectionRule::Fibres(fibres) => {
            for [y, z, da] in fibres {
                let b = Vector3::new(1.0, *z, -*y);
                let (w, s, t) = fibre_law_unit(beta, 1.0 + b.dot(strain));
                energy += w * da;
                force += b * (s * da);
                if with_tangent {
                    tangent += b * b.transpose() * (t * da);
                }
            }
        }
        SectionRule::Discs { discs, count } => {
            // lambda = 1 + e + k rho, rho along n (the stretch's gradient in
            // (y, z)), sigma across it; b = (1, rho m + sigma p).
            let (gy, gz) = (-strain[2], strain[1]);
            let k = gy.hypot(gz);
            let (ny, nz) = if k > 0.0 { (gy / k, gz / k) } else { (1.0, 0.0) };
            let (m, p) = ([nz, -ny], [ny, nz]);
            // Integrals over the section of w, s, s rho, t, t rho, t rho^2, t sigma^2.
            let (mut w0, mut s0, mut s1, mut t0, mut t1, mut t2, mut q2) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for &(radius, sign) in &discs[..*count] {
                for &PhiNode { sin, cos, weight: w_phi } in phi_rule {
                    let rho = radius * sin;
                    let da = sign * 2.0 * radius * radius * cos * cos * w_phi;
                    let (w, s, t) = fibre_law_unit(beta, 1.0 + strain[0] + k * rho);
                    w0 += w * da;
                    s0 += s * da;
                    s1 += s * rho * da;
                    if with_tangent {
                        t0 += t * da;
                        t1 += t * rho * da;
                        t2 += t * rho * rho * da;
                        // int sigma^2 over the chord: (2/3) h^3, h = R cos(phi).
                        q2 += t * sign * (2.0 / 3.0) * (radius * cos).powi(3) * radius * cos * w_phi;
                    }
                }
            }
            energy = w0;
            force = Vector3::new(s0, s1 * m[0], s1 * m[1]);
            if with_tangent {
                tangent[(0, 0)] = t0;
                for i in 0..2 {
                    tangent[(0, i + 1)] = t1 * m[i];
                    tangent[(i + 1, 0)] = t1 * m[i];
                    for j in 0..2 {
                        tangent[(i + 1, j + 1)] = t2 * m[i] * m[j] + q2 * p[i] * p[j];
                    }
                }
            }
        }
    }
    (energy, force, tangent)
}

/// One Gauss station of a sub-segment: its length weight, the strain
/// basis there, and the section's fibres.
#[derive(Clone, Debug)]
struct Station {
    weight_m: f64,
    dof: [usize; 2],
    shape: [f64; 2],
    section: SectionRule,
}

/// The hyperelastic part of a discretised rod: the E-part of its elastic
/// forces, replacing the linear `E A`, `E I` stiffness (held, per unit E,
/// as `small_strain_unit`: the tangent at rest, which the model's linear
/// stiffness matrix contains times `modulus_pa`).
#[derive(Clone, Debug)]
pub struct Fibres {
    pub c01_fraction: f64,
    /// The body's E \[Pa\] (identification sets it with the other material values).
    pub modulus_pa: f64,
    stations: Vec<Station>,
    /// Columns of stretch `Q_x`, `K_y`, `K_z` among the free strains.
    columns: [Option<usize>; 3],
    n_strain: usize,
    small_strain_unit: DMatrix<f64>,
    /// Gauss rule in the angle `phi` on [-pi/2, pi/2] for round sections.
    phi_rule: Vec<PhiNode>,
}

impl Fibres {
    /// The fibres of a model's sub-segments; `None` when the section has
    /// no shape to integrate (checked when the rod file is read).
    pub fn new(
        section: &CrossSection,
        length_m: f64,
        c01_fraction: f64,
        segments: &[Segment],
        dof_of: impl Fn(&Segment, f64) -> ([usize; 2], [f64; 2]),
        free: &[usize],
        n_strain: usize,
    ) -> Option<Fibres> {
        let mut stations = vec![];
        // Two Gauss stations per sub-segment: the strain is linear along
        // it; the rule's own small-strain tangent is subtracted (see
        // `correction_unit`), so the law still reduces to the model's
        // linear stiffness exactly.
        let gauss2 = [(-1.0 / 3f64.sqrt(), 1.0), (1.0 / 3f64.sqrt(), 1.0)];
        for seg in segments {
            for (xi, wi) in gauss2 {
                let x = seg.x0_m + 0.5 * seg.h_m * (1.0 + xi);
                let (dof, shape) = dof_of(seg, x);
                stations.push(Station { weight_m: 0.5 * seg.h_m * wi, dof, shape, section: section_rule(section, x, length_m)? });
            }
        }
        let phi_rule = phi_rule();
        let columns = [3, 1, 2].map(|c| free.iter().position(|&f| f == c));
        let mut fibres = Fibres { c01_fraction, modulus_pa: section.body.e_pa, stations, columns, n_strain, small_strain_unit: DMatrix::zeros(0, 0), phi_rule };
        fibres.small_strain_unit = fibres.evaluate_unit(&DVector::zeros(n_strain), true).2.expect("with tangent");
        Some(fibres)
    }

    /// Energy, generalised forces and (when asked) tangent per unit E, of
    /// the strain coordinates `q` (its first `n_strain` rows).
    fn evaluate_unit(&self, q: &DVector<f64>, with_tangent: bool) -> (f64, DVector<f64>, Option<DMatrix<f64>>) {
        let n = self.n_strain;
        let mut energy = 0.0;
        let mut force = DVector::zeros(n);
        let mut tangent = with_tangent.then(|| DMatrix::zeros(n, n));
        for st in &self.stations {
            let mut strain = Vector3::zeros();
            for (c, col) in self.columns.iter().enumerate() {
                if let Some(j) = col {
                    strain[c] = st.shape[0] * q[st.dof[0] + j] + st.shape[1] * q[st.dof[1] + j];
                }
            }
            let (e, f, t) = section_resultants(self.c01_fraction, &st.section, &self.phi_rule, &strain, with_tangent);
            energy += st.weight_m * e;
            for (a, na) in st.shape.iter().enumerate() {
                for (c, col) in self.columns.iter().enumerate() {
                    let Some(j) = col else { continue };
                    force[st.dof[a] + j] += st.weight_m * na * f[c];
                    if let Some(h) = tangent.as_mut() {
                        for (b, nb) in st.shape.iter().enumerate() {
                            for (d, cold) in self.columns.iter().enumerate() {
                                if let Some(k) = cold {
                                    h[(st.dof[a] + j, st.dof[b] + k)] += st.weight_m * na * nb * t[(c, d)];
                                }
                            }
                        }
                    }
                }
            }
        }
        (energy, force, tangent)
    }

    /// What the hyperelastic law adds to the linear model's elastic terms
    /// `1/2 q^T K q`, `K q`, `K` per unit E: its own minus their small-strain
    /// part (zero to second order at rest). Times `modulus_pa` it completes
    /// the elastic energy, force and tangent.
    pub fn correction_unit(&self, q: &DVector<f64>, with_tangent: bool) -> (f64, DVector<f64>, Option<DMatrix<f64>>) {
        let qs = q.rows(0, self.n_strain).into_owned();
        let (energy, force, tangent) = self.evaluate_unit(&qs, with_tangent);
        let kq = &self.small_strain_unit * &qs;
        let energy = energy - 0.5 * qs.dot(&kq);
        (energy, force - kq, tangent.map(|h| h - &self.small_strain_unit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_rules_integrate_polynomials_exactly() {
        for n in [1, 4, 6] {
            let rule = gauss_legendre(n);
            for k in 0..2 * n {
                let sum: f64 = rule.iter().map(|(x, w)| w * x.powi(k as i32)).sum();
                let exact = if k % 2 == 0 { 2.0 / (k as f64 + 1.0) } else { 0.0 };
                assert!((sum - exact).abs() < 1e-14, "n {n} k {k}: {sum} vs {exact}");
            }
        }
    }

    /// The round sections' 1-D chord rule against a converged 2-D polar
    /// rule (64 Gauss radii x 256 angles), at up to 40 % fibre strain in
    /// oblique bending with stretch, for a disc and an annulus.
    #[test]
    fn the_chord_rule_of_round_sections_matches_a_converged_polar_rule() {
        let phi_rule = phi_rule();
        let (r_out, r_in) = (0.01, 0.004);
        for beta in [0.0, 0.25] {
            for (strain, discs) in [(Vector3::new(0.05, 20.0, -25.0), 1), (Vector3::new(-0.02, -30.0, 5.0), 2), (Vector3::new(0.1, 0.0, 0.0), 1)] {
                let hole = if discs > 1 { r_in } else { 0.0 };
                let rule = SectionRule::Discs { discs: [(r_out, 1.0), (r_in, -1.0)], count: discs };
                let (e, f, t) = section_resultants(beta, &rule, &phi_rule, &strain, true);
                let mut fibres = vec![];
                for (u, wu) in gauss_legendre(64) {
                    let r = hole + 0.5 * (r_out - hole) * (1.0 + u);
                    for a in 0..256 {
                        let theta = std::f64::consts::TAU * a as f64 / 256.0;
                        fibres.push([r * theta.cos(), r * theta.sin(), r * 0.5 * (r_out - hole) * wu * std::f64::consts::TAU / 256.0]);
                    }
                }
                let (e2, f2, t2) = section_resultants(beta, &SectionRule::Fibres(fibres), &phi_rule, &strain, true);
                assert!((e - e2).abs() <= 1e-8 * e2.abs(), "energy {e} vs {e2}");
                assert!((f - f2).amax() <= 1e-8 * f2.amax(), "force {f} vs {f2}");
                assert!((t - t2).amax() <= 1e-8 * t2.amax(), "tangent {t} vs {t2}");
            }
        }
    }

    #[test]
    fn the_fibre_law_has_slope_e_at_rest_and_its_derivatives_agree() {
        for beta in [0.0, 0.3] {
            let (w, s, t) = fibre_law_unit(beta, 1.0);
            assert!(w.abs() < 1e-15 && s.abs() < 1e-15 && (t - 1.0).abs() < 1e-15);
            // Neo-Hookean nominal stress mu (lambda - lambda^-2), mu = E/3.
            if beta == 0.0 {
                assert!((fibre_law_unit(0.0, 1.5).1 - (1.5 - 1.0 / 2.25) / 3.0).abs() < 1e-15);
            }
            for l in [0.05, 0.19, 0.21, 0.5, 1.3, 2.0] {
                let h = 1e-6;
                let (wp, sp, _) = fibre_law_unit(beta, l + h);
                let (wm, sm, _) = fibre_law_unit(beta, l - h);
                let (_, s, t) = fibre_law_unit(beta, l);
                assert!(((wp - wm) / (2.0 * h) - s).abs() < 1e-7 * (1.0 + s.abs()), "beta {beta} lambda {l}");
                assert!(((sp - sm) / (2.0 * h) - t).abs() < 1e-6 * (1.0 + t.abs()), "beta {beta} lambda {l}");
            }
        }
    }
}
