//! Is a solution inside the rod model's validity? The Cosserat rod with a
//! linear elastic law describes small strains of every fibre (a
//! hyperelastic one larger strains, see [`crate::fibre`]); a cable's
//! length term `|Q + K x d + d'|` has a kink where it reaches zero (science
//! §3). A solve can converge far outside both (a rod "stretched to 33 km"
//! under a huge tip force): this says so, with the numbers and where.

use crate::fibre::ElasticLaw;
use crate::model::Model;
use lie::{Vec3, Vec6};
use nalgebra::DVector;

/// Strain above which (tension or compression) a solution is flagged with
/// the linear law: 20 %, where a silicone's stress-strain curve has left the
/// straight line of the linear elastic law by several percent (the
/// warnings say this number, not a vaguer one). Each law has its own, see
/// [`ElasticLaw::strain_limit`].
pub const FIBRE_STRAIN_LIMIT: f64 = 0.2;

/// Fibre strains where the solution is no longer a rod (an error, not a
/// warning): stretched past twice the length, compressed below a hundredth.
pub const MODEL_BREAKS_STRETCH: f64 = 1.0;
pub const MODEL_BREAKS_COMPRESSION: f64 = 0.99;

/// Fibre angles sampled around the surface of a cross-section.
const ANGLES: usize = 24;

/// The extremes of one solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Validity {
    /// Largest relative stretch of a surface fibre (tension > 0) and where \[m\].
    pub max_fibre_strain: f64,
    pub max_fibre_at_m: f64,
    /// Most negative one (compression < 0) and where \[m\].
    pub min_fibre_strain: f64,
    pub min_fibre_at_m: f64,
    /// Smallest `|Q + K x d + d'|` of any cable (its local stretch), the
    /// cable's index and where; None without cables.
    pub min_cable_stretch: Option<(f64, usize, f64)>,
    /// The law the strains are judged by.
    pub law: ElasticLaw,
}

/// Fibre stretch `|Q + K x d| / |Q0 + K0 x d|` of the fibre at offset `d`.
fn fibre_stretch(xi: &Vec6, rest: &Vec6, d: &Vec3) -> f64 {
    let now = lie::linear(xi) + lie::angular(xi).cross(d);
    let before = lie::linear(rest) + lie::angular(rest).cross(d);
    now.norm() / before.norm().max(1e-300)
}

/// The validity figures of the strain coordinates `q`, at every
/// sub-segment's midpoint.
pub fn validity(model: &Model, q: &DVector<f64>) -> Validity {
    let mut v = Validity {
        max_fibre_strain: f64::MIN,
        max_fibre_at_m: 0.0,
        min_fibre_strain: f64::MAX,
        min_fibre_at_m: 0.0,
        min_cable_stretch: None,
        law: model.rod.elastic_law,
    };
    let length_m = model.rod.length_m;
    for (k, seg) in model.segments.iter().enumerate() {
        let xi = model.segment_strain(k, q);
        let x_m = seg.x0_m + 0.5 * seg.h_m;
        let cs = &model.rod.cross_section;
        // Rim points all round, and a rectangle's corners (where its
        // fibre strains peak) whatever its aspect.
        let rim = (0..ANGLES).map(|a| {
            let theta = std::f64::consts::TAU * a as f64 / ANGLES as f64;
            let r_m = cs.surface_distance_m(x_m, length_m, theta).0;
            Vec3::new(0.0, r_m * theta.cos(), r_m * theta.sin())
        });
        let corners = [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)].map(|(y, z)| cs.extreme_point_m(x_m, length_m, &Vec3::new(0.0, y, z)));
        for d in rim.chain(corners) {
            let strain = fibre_stretch(&xi, &seg.rest_strain, &d) - 1.0;
            if strain > v.max_fibre_strain {
                (v.max_fibre_strain, v.max_fibre_at_m) = (strain, x_m);
            }
            if strain < v.min_fibre_strain {
                (v.min_fibre_strain, v.min_fibre_at_m) = (strain, x_m);
            }
        }
        for (c, spans) in model.cable_spans.iter().enumerate() {
            let Some(span) = spans[k] else { continue };
            let stretch = (lie::linear(&xi) + lie::angular(&xi).cross(&span.offset_m) + span.offset_slope).norm();
            let smaller = match v.min_cable_stretch {
                Some((s, _, _)) => stretch < s,
                None => true,
            };
            if smaller {
                v.min_cable_stretch = Some((stretch, c, x_m));
            }
        }
    }
    v
}

impl Validity {
    /// The extremes of two solutions (e.g. over the steps of a run).
    pub fn worst(self, other: Validity) -> Validity {
        let (max_fibre_strain, max_fibre_at_m) = if other.max_fibre_strain > self.max_fibre_strain {
            (other.max_fibre_strain, other.max_fibre_at_m)
        } else {
            (self.max_fibre_strain, self.max_fibre_at_m)
        };
        let (min_fibre_strain, min_fibre_at_m) = if other.min_fibre_strain < self.min_fibre_strain {
            (other.min_fibre_strain, other.min_fibre_at_m)
        } else {
            (self.min_fibre_strain, self.min_fibre_at_m)
        };
        let min_cable_stretch = match (self.min_cable_stretch, other.min_cable_stretch) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        Validity { max_fibre_strain, max_fibre_at_m, min_fibre_strain, min_fibre_at_m, min_cable_stretch, law: self.law }
    }

    /// Warnings for fibres strained beyond the law's limit
    /// ([`ElasticLaw::strain_limit`]) and cables near the kink of their
    /// length term; empty when inside.
    pub fn warnings(&self, cables: &[crate::Cable]) -> Vec<String> {
        let mut w = vec![];
        let limit = self.law.strain_limit();
        let law = self.law.name();
        for (strain, at, verb) in [(self.max_fibre_strain, self.max_fibre_at_m, "stretched"), (-self.min_fibre_strain, self.min_fibre_at_m, "compressed")] {
            if strain > limit {
                w.push(format!(
                    "outside the model's validity: a surface fibre is {verb} {:.0} % at X = {at:.4} m (beyond {:.0} %, where the model's {law} law is no longer trusted)",
                    100.0 * strain,
                    100.0 * limit
                ));
            }
        }
        if let Some((s, c, x)) = self.min_cable_stretch {
            if s < 1.0 - FIBRE_STRAIN_LIMIT {
                let name = cables.get(c).map_or("?", |cable| cable.name.as_str());
                w.push(format!(
                    "outside the model's validity: cable {name} is shortened to {:.0} % of its length at X = {x:.4} m (|Q + K x d + d'| = {s:.3}; its length term has a kink at 0)",
                    100.0 * s
                ));
            }
        }
        w
    }

    /// Why the solution is not a rod at all, beyond a warning: a surface
    /// fibre stretched past twice its length or shrunk below a hundredth of it.
    /// Newton may still balance the equations there (a shear modulus of
    /// 1e-300 Pa, a tip force of 1e12 N), but no material does.
    pub fn beyond_model(&self) -> Option<String> {
        if !(self.max_fibre_strain.is_finite() && self.min_fibre_strain.is_finite()) {
            return Some("the strains are not finite".into());
        }
        if self.max_fibre_strain > MODEL_BREAKS_STRETCH {
            return Some(format!("a surface fibre is stretched {:.3e} % at X = {:.4} m", 100.0 * self.max_fibre_strain, self.max_fibre_at_m));
        }
        if self.min_fibre_strain < -MODEL_BREAKS_COMPRESSION {
            return Some(format!("a surface fibre is compressed {:.1} % at X = {:.4} m", -100.0 * self.min_fibre_strain, self.min_fibre_at_m));
        }
        None
    }

    /// One line for a solve's report.
    pub fn summary(&self) -> String {
        let cable = self.min_cable_stretch.map_or(String::new(), |(s, _, x)| format!("; cables: min |Q + K x d + d'| {s:.3} at X = {x:.4} m"));
        format!(
            "surface fibre strains from {:+.2} % (X = {:.4} m) to {:+.2} % (X = {:.4} m){cable}",
            100.0 * self.min_fibre_strain,
            self.min_fibre_at_m,
            100.0 * self.max_fibre_strain,
            self.max_fibre_at_m
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Material;
    use crate::Rod;

    fn silicone() -> Material {
        Material { e_pa: 1e6, g_pa: 1e6 / 3.0, rho_kg_m3: 1100.0 }
    }

    #[test]
    fn the_rest_state_is_unstrained_and_a_uniform_bend_strains_the_surface_by_kappa_r() {
        let (l, r) = (0.2, 0.01);
        let rod = Rod::uniform_cylinder(l, r, silicone(), 2);
        let model = Model::new(&rod, &[]);
        let q = DVector::zeros(model.n_dof());
        let v = validity(&model, &q);
        assert!(v.max_fibre_strain.abs() < 1e-12 && v.min_fibre_strain.abs() < 1e-12, "{v:?}");
        // Ky = 5 1/m everywhere: fibres at +-r along z strain by -+ Ky r (exact
        // for a bend: |e1 + K x d| = |1 - Ky z|), 5 %.
        let ky = model.free.iter().position(|&c| c == 1).expect("Ky is free");
        let m = model.free.len();
        let mut q = DVector::zeros(model.n_dof());
        for node in 0..model.node_x_m.len() {
            if node * m + ky < q.len() {
                q[node * m + ky] = 5.0;
            }
        }
        let v = validity(&model, &q);
        assert!((v.max_fibre_strain - 0.05).abs() < 1e-9 && (v.min_fibre_strain + 0.05).abs() < 1e-9, "{v:?}");
        assert!(v.warnings(&[]).is_empty());
    }
}
