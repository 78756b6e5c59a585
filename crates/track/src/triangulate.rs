//! Markers in 3-D from a camera set: each view's pixel undistorted into a
//! ray in the world, views of one marker checked against each other by the
//! epipolar constraint, the point where the rays meet (least squares over
//! the rays, then refined by minimising the reprojection error in pixels),
//! and the ray itself where one camera alone saw the marker. Pure Rust.

use crate::camera::CameraModel;
use nalgebra::{Matrix3, Vector3};

/// A ray in the world: the camera's centre and a unit direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    pub origin_m: Vector3<f64>,
    pub direction: Vector3<f64>,
}

impl Ray {
    /// The point of the ray nearest to `p`.
    pub fn closest_to(&self, p: &Vector3<f64>) -> Vector3<f64> {
        self.origin_m + self.direction * self.direction.dot(&(p - self.origin_m))
    }
}

/// A camera of a set placed in the world (its `plane` is world -> camera).
#[derive(Clone, Debug)]
pub struct PlacedCamera {
    pub model: CameraModel,
    camera_from_world_rot: Matrix3<f64>,
    camera_from_world_pos: Vector3<f64>,
}

impl PlacedCamera {
    /// None without a pose (`plane`).
    pub fn new(model: &CameraModel) -> Option<PlacedCamera> {
        let pose = model.plane.as_ref()?;
        Some(PlacedCamera { model: model.clone(), camera_from_world_rot: pose.rotation(), camera_from_world_pos: Vector3::from(pose.translation_m) })
    }

    /// The camera's centre in the world.
    pub fn centre_m(&self) -> Vector3<f64> {
        -(self.camera_from_world_rot.transpose() * self.camera_from_world_pos)
    }

    /// The ray through pixel (u, v), undistorted.
    pub fn ray(&self, pixel: [f64; 2]) -> Ray {
        let (x, y) = self.model.undistort(pixel[0], pixel[1]);
        let direction = (self.camera_from_world_rot.transpose() * Vector3::new(x, y, 1.0)).normalize();
        Ray { origin_m: self.centre_m(), direction }
    }

    /// The pixel of a world point; None behind the camera.
    pub fn project(&self, p_world: &Vector3<f64>) -> Option<[f64; 2]> {
        let p = self.camera_from_world_rot * p_world + self.camera_from_world_pos;
        (p.z > 0.0).then(|| self.model.project(p))
    }
}

/// Distance \[px\] of `b`'s view from the epipolar line of `a`'s view in
/// camera `b`: the angle between `b`'s ray and the plane through both
/// centres and `a`'s ray, times `b`'s focal length. Views of the same
/// point give noise; views of different markers give tens of pixels.
pub fn epipolar_error_px(a: (&PlacedCamera, [f64; 2]), b: (&PlacedCamera, [f64; 2])) -> f64 {
    let (ra, rb) = (a.0.ray(a.1), b.0.ray(b.1));
    let normal = (rb.origin_m - ra.origin_m).cross(&ra.direction);
    if normal.norm() < 1e-15 {
        return 0.0;
    }
    normal.normalize().dot(&rb.direction).abs().asin() * b.0.model.fx_px.max(b.0.model.fy_px)
}

/// A triangulated marker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Triangulated {
    pub position_m: Vector3<f64>,
    /// RMS over the views of the distance between seen and reprojected pixels.
    pub reprojection_px: f64,
}

/// The point nearest to every ray in the least-squares sense; None when
/// the rays are (nearly) parallel.
pub fn nearest_to_rays(rays: &[Ray]) -> Option<Vector3<f64>> {
    let mut a = Matrix3::zeros();
    let mut b = Vector3::zeros();
    for r in rays {
        let perp = Matrix3::identity() - r.direction * r.direction.transpose();
        a += perp;
        b += perp * r.origin_m;
    }
    // Parallel rays leave a direction unconstrained: a near-singular matrix.
    let eig = a.symmetric_eigenvalues();
    if eig.min() < 1e-6 * eig.max() {
        return None;
    }
    a.lu().solve(&b)
}

/// Triangulates one marker seen at `pixels[i]` by `cameras[i]` (two or more):
/// the rays' nearest point, then Gauss-Newton on the reprojection error.
pub fn triangulate(cameras: &[&PlacedCamera], pixels: &[[f64; 2]]) -> Option<Triangulated> {
    let rays: Vec<Ray> = cameras.iter().zip(pixels).map(|(c, p)| c.ray(*p)).collect();
    let mut p = nearest_to_rays(&rays)?;
    let residuals = |p: &Vector3<f64>| -> Option<Vec<f64>> {
        let mut r = Vec::with_capacity(2 * pixels.len());
        for (c, px) in cameras.iter().zip(pixels) {
            let q = c.project(p)?;
            r.extend([q[0] - px[0], q[1] - px[1]]);
        }
        Some(r)
    };
    let mut r = residuals(&p)?;
    for _ in 0..10 {
        let h = 1e-7;
        let mut jtj = Matrix3::zeros();
        let mut jtr = Vector3::zeros();
        let columns: Vec<Vec<f64>> = (0..3)
            .map(|k| {
                let mut d = Vector3::zeros();
                d[k] = h;
                let (rp, rm) = (residuals(&(p + d)), residuals(&(p - d)));
                match (rp, rm) {
                    (Some(a), Some(b)) => a.iter().zip(&b).map(|(x, y)| (x - y) / (2.0 * h)).collect(),
                    _ => vec![0.0; r.len()],
                }
            })
            .collect();
        for i in 0..3 {
            jtr[i] = columns[i].iter().zip(&r).map(|(a, b)| a * b).sum();
            for j in 0..3 {
                jtj[(i, j)] = columns[i].iter().zip(&columns[j]).map(|(a, b)| a * b).sum();
            }
        }
        let Some(step) = jtj.lu().solve(&(-jtr)) else { break };
        let next = p + step;
        let Some(rn) = residuals(&next) else { break };
        if rn.iter().map(|e| e * e).sum::<f64>() > r.iter().map(|e| e * e).sum::<f64>() {
            break;
        }
        (p, r) = (next, rn);
        if step.norm() < 1e-12 {
            break;
        }
    }
    let n = pixels.len() as f64;
    Some(Triangulated { position_m: p, reprojection_px: (r.iter().map(|e| e * e).sum::<f64>() / n).sqrt() })
}

/// Where one marker is, from the views that saw it in one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Located {
    /// Triangulated from the cameras in `cameras` (bit i: camera i).
    Point { at: Triangulated, cameras: u32 },
    /// Seen by camera `camera` alone: the ray it lies on.
    Ray { ray: Ray, camera: usize },
    /// Two views that the epipolar constraint says are not one marker
    /// (a swapped order, a reflection): neither is used.
    Disagree { worst_px: f64 },
    /// No camera saw it.
    Unseen,
}

/// Locates one marker from `pixels[i]` (camera i's view of it, if any):
/// views farther than `gate_px` from each other's epipolar lines are
/// dropped worst first (with three or more), or the marker is `Disagree`.
pub fn locate(cameras: &[PlacedCamera], pixels: &[Option<[f64; 2]>], gate_px: f64) -> Located {
    let mut seen: Vec<usize> = (0..cameras.len()).filter(|&i| pixels.get(i).copied().flatten().is_some_and(|p| p[0].is_finite() && p[1].is_finite())).collect();
    let px = |i: usize| pixels[i].expect("seen");
    loop {
        match seen.len() {
            0 => return Located::Unseen,
            1 => return Located::Ray { ray: cameras[seen[0]].ray(px(seen[0])), camera: seen[0] },
            _ => {}
        }
        // Each view's worst epipolar disagreement with the others.
        let worst: Vec<f64> = seen
            .iter()
            .map(|&i| seen.iter().filter(|&&j| j != i).map(|&j| epipolar_error_px((&cameras[j], px(j)), (&cameras[i], px(i)))).fold(0.0, f64::max))
            .collect();
        let (k, &w) = worst.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).expect("two or more");
        if w <= gate_px {
            break;
        }
        if seen.len() == 2 {
            return Located::Disagree { worst_px: w };
        }
        seen.remove(k);
    }
    let cams: Vec<&PlacedCamera> = seen.iter().map(|&i| &cameras[i]).collect();
    let views: Vec<[f64; 2]> = seen.iter().map(|&i| px(i)).collect();
    match triangulate(&cams, &views) {
        Some(at) => Located::Point { at, cameras: seen.iter().fold(0, |m, &i| m | (1 << i)) },
        None => Located::Disagree { worst_px: 0.0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::BoardSpec;
    use crate::synth::camera_set;

    fn cameras(n: usize) -> Vec<PlacedCamera> {
        let board = BoardSpec { cols: 9, rows: 6, square_m: 0.016 };
        camera_set(n, 0.6, 30.0, &board).iter().map(|(_, m)| PlacedCamera::new(m).unwrap()).collect()
    }

    fn points() -> Vec<Vector3<f64>> {
        (0..12).map(|i| Vector3::new(0.02 + 0.01 * i as f64, 0.05 + 0.003 * (i as f64).powi(2) / 4.0, -0.004 * i as f64)).collect()
    }

    /// Exact views of points in front of and off the board meet at the
    /// points (round-off), whichever cameras see them.
    #[test]
    fn exact_views_are_triangulated_to_round_off() {
        let cams = cameras(3);
        for p in points() {
            let px: Vec<Option<[f64; 2]>> = cams.iter().map(|c| c.project(&p)).collect();
            match locate(&cams, &px, 1.0) {
                Located::Point { at, cameras } => {
                    assert!((at.position_m - p).norm() < 1e-9 && at.reprojection_px < 1e-6, "{p:?}: {at:?}");
                    assert_eq!(cameras, 0b111);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// With up to 0.2 px of error per coordinate the point moves by what the
    /// geometry allows: depth error Z^2 / (f B) times the disparity's error
    /// (0.4 px at worst), 0.36 / (2350 x 0.31) x 0.4 = 0.2 mm at 0.6 m with
    /// the cameras 30 degrees apart (baseline 0.31 m).
    #[test]
    fn noisy_views_land_near_the_point() {
        let cams = cameras(2);
        let mut worst = 0.0f64;
        for (k, p) in points().iter().enumerate() {
            let wiggle = |i: usize| 0.2 * ((k * 7 + i * 3) as f64).sin();
            let px: Vec<Option<[f64; 2]>> = cams.iter().enumerate().map(|(i, c)| c.project(p).map(|q| [q[0] + wiggle(i), q[1] - wiggle(i + 1)])).collect();
            let Located::Point { at, .. } = locate(&cams, &px, 2.0) else { panic!() };
            worst = worst.max((at.position_m - p).norm());
        }
        let bound_m = 0.6f64.powi(2) / (2350.0 * 2.0 * 0.6 * 15f64.to_radians().sin()) * 0.4;
        assert!(worst < bound_m && worst > 0.1 * bound_m, "{worst} m against {bound_m} m");
    }

    /// One camera: the marker is kept as the ray it lies on; two views of
    /// different markers disagree; with three cameras the odd view is
    /// dropped and the other two triangulate.
    #[test]
    fn one_view_is_a_ray_and_views_of_different_markers_are_caught() {
        let cams = cameras(3);
        let (a, b) = (points()[2], points()[9]);
        let Located::Ray { ray, camera } = locate(&cams, &[None, cams[1].project(&a), None], 1.0) else { panic!() };
        assert_eq!(camera, 1);
        assert!((ray.closest_to(&a) - a).norm() < 1e-12);
        // Marker a in the left camera, marker b in the right one.
        match locate(&cams[..2], &[cams[0].project(&a), cams[1].project(&b)], 2.0) {
            Located::Disagree { worst_px } => assert!(worst_px > 20.0, "{worst_px}"),
            other => panic!("{other:?}"),
        }
        match locate(&cams, &[cams[0].project(&a), cams[1].project(&a), cams[2].project(&b)], 2.0) {
            Located::Point { at, cameras } => {
                assert_eq!(cameras, 0b011);
                assert!((at.position_m - a).norm() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
    }
}
