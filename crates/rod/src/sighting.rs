//! Where a marker was seen: a point in the world (two cameras, motion
//! capture), or a ray (one camera alone: its line of sight through the
//! marker). The observer and identification measure a rod's marker against
//! either by the same miss, `P (p - at)`, with `P` the identity for a point
//! and `I - d d^T` for a ray along `d`: the part of the error the sighting
//! sees.

use lie::{Mat3, Vec3};

/// A marker's sighting: a point, or a ray through `at_m` along `ray`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sighting {
    /// The point, or a point on the ray (its camera's centre) \[m\].
    pub at_m: Vec3,
    /// The ray's unit direction; `None` for a point.
    pub ray: Option<Vec3>,
}

impl From<Vec3> for Sighting {
    fn from(p: Vec3) -> Sighting {
        Sighting::point(p)
    }
}

impl Sighting {
    pub fn point(at_m: Vec3) -> Sighting {
        Sighting { at_m, ray: None }
    }

    /// A ray from `origin_m` along `direction` (normalised here); `None`
    /// for a direction that is zero or not finite.
    pub fn ray(origin_m: Vec3, direction: Vec3) -> Option<Sighting> {
        let n = direction.norm();
        (n > 0.0 && n.is_finite() && origin_m.iter().all(|v| v.is_finite())).then(|| Sighting { at_m: origin_m, ray: Some(direction / n) })
    }

    /// The point, when this is one.
    pub fn as_point(&self) -> Option<Vec3> {
        self.ray.is_none().then_some(self.at_m)
    }

    /// The projector onto what the sighting measures: `I`, or `I - d d^T`.
    pub fn projector(&self) -> Mat3 {
        match self.ray {
            None => Mat3::identity(),
            Some(d) => Mat3::identity() - d * d.transpose(),
        }
    }

    /// How far `p` is from the sighting, as a vector: `P (p - at)` (for a
    /// ray, from its nearest point to `p`).
    pub fn miss(&self, p: &Vec3) -> Vec3 {
        let r = p - self.at_m;
        match self.ray {
            None => r,
            Some(d) => r - d * d.dot(&r),
        }
    }

    /// The coordinates it measures: 3 for a point, 2 for a ray.
    pub fn coordinates(&self) -> usize {
        if self.ray.is_some() {
            2
        } else {
            3
        }
    }

    /// The same kind of sighting moved from `start` (a fraction `lambda`
    /// of the way) to this one: for continuation from the rod's current
    /// shape, where a ray is moved parallel to itself.
    pub fn from_towards(&self, start: &Vec3, lambda: f64) -> Sighting {
        Sighting { at_m: start + (self.at_m - start) * lambda, ray: self.ray }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ray_misses_by_the_distance_to_its_line_and_a_point_by_the_difference() {
        let ray = Sighting::ray(Vec3::new(0.0, 0.0, 1.0), Vec3::new(0.0, 0.0, -2.0)).unwrap();
        let p = Vec3::new(0.3, -0.4, -5.0);
        assert!((ray.miss(&p) - Vec3::new(0.3, -0.4, 0.0)).norm() < 1e-15);
        assert!((ray.projector() * (p - ray.at_m) - ray.miss(&p)).norm() < 1e-15);
        assert_eq!((ray.coordinates(), Sighting::point(p).coordinates()), (2, 3));
        assert!(Sighting::point(p).miss(&p).norm() == 0.0);
        assert!(Sighting::ray(p, Vec3::zeros()).is_none());
        // Moved halfway from a point on the rod, a ray stays parallel.
        let half = ray.from_towards(&p, 0.5);
        assert_eq!(half.ray, ray.ray);
        assert!((half.at_m - (p + ray.at_m) * 0.5).norm() < 1e-15);
    }
}
