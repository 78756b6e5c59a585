//! The pinhole camera with OpenCV's distortion model (k1 k2 p1 p2 k3), and
//! the plane of motion: pixel <-> metric coordinates in the rig frame (the
//! frame of a calibration board lying in the plane, z = 0 on the plane).
//! Pure Rust, so that per-marker conversions cost nanoseconds.

use nalgebra::{Matrix3, Rotation3, Vector3};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `camera.toml`: what `rodlab calibrate` writes and `rodlab track` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CameraModel {
    /// The image's width \[px\].
    pub width_px: u32,
    /// The image's height \[px\].
    pub height_px: u32,
    /// Focal length along the image's x \[px\].
    pub fx_px: f64,
    /// Focal length along the image's y \[px\].
    pub fy_px: f64,
    /// Principal point, x \[px\].
    pub cx_px: f64,
    /// Principal point, y \[px\].
    pub cy_px: f64,
    /// Lens distortion in OpenCV's order: k1, k2, p1, p2, k3.
    pub distortion: [f64; 5],
    /// RMS reprojection error of the calibration (0 for a synthetic camera).
    #[serde(default)]
    pub rms_reprojection_px: f64,
    /// Board views the calibration used.
    #[serde(default)]
    pub views: usize,
    /// Pose of the plane of motion (board frame -> camera frame).
    pub plane: Option<PlanePose>,
    /// Height of the marker centres above the board plane, towards the
    /// camera \[m\] (rod radius + board thickness); overrides the rig's
    /// `frames.marker_height_m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plane_offset_m: Option<f64>,
}

/// A rigid transform from the plane (rig) frame to the camera frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanePose {
    /// Rotation vector (axis * angle) \[rad\], as OpenCV's rvec.
    pub rotation_rad: [f64; 3],
    /// The board's origin in the camera's frame \[m\], as OpenCV's tvec.
    pub translation_m: [f64; 3],
}

impl PlanePose {
    pub fn rotation(&self) -> Matrix3<f64> {
        *Rotation3::from_scaled_axis(Vector3::from(self.rotation_rad)).matrix()
    }

    pub fn to_camera(&self, p_plane: [f64; 3]) -> Vector3<f64> {
        self.rotation() * Vector3::from(p_plane) + Vector3::from(self.translation_m)
    }

    /// +1 when the board's +z points towards the camera, -1 otherwise (a
    /// board seen from the front has z pointing away, into the board).
    pub fn camera_side(&self) -> f64 {
        let n = self.rotation().column(2).into_owned();
        if n.dot(&Vector3::from(self.translation_m)) < 0.0 {
            1.0
        } else {
            -1.0
        }
    }

    /// The plane parallel to the board at `height_m` towards the camera
    /// (the plane the marker centres move in), as a plane pose whose z = 0
    /// is that plane.
    pub fn offset(&self, height_m: f64) -> PlanePose {
        let shift = self.rotation().column(2) * (self.camera_side() * height_m);
        let t = Vector3::from(self.translation_m) + shift;
        PlanePose { rotation_rad: self.rotation_rad, translation_m: [t.x, t.y, t.z] }
    }
}

pub use session::ConfigFileError as CameraFileError;

impl CameraModel {
    pub fn load(path: &Path) -> Result<CameraModel, CameraFileError> {
        let (cam, _): (CameraModel, _) = session::read_toml(path, "camera file")?;
        cam.check().map_err(|m| CameraFileError::new(path, m))?;
        Ok(cam)
    }

    /// The checks of a camera file: positive focal lengths and size, finite
    /// principal point and distortion.
    pub fn check(&self) -> Result<(), String> {
        if !(self.fx_px > 0.0 && self.fy_px > 0.0 && self.fx_px.is_finite() && self.fy_px.is_finite()) {
            return Err("fx_px, fy_px: must be positive".into());
        }
        if self.width_px == 0 || self.height_px == 0 {
            return Err("width_px, height_px: must be positive".into());
        }
        if self.distortion.iter().any(|d| !d.is_finite()) || !self.cx_px.is_finite() || !self.cy_px.is_finite() {
            return Err("cx_px, cy_px, distortion: must be finite".into());
        }
        Ok(())
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = toml::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, format!("# Camera intrinsics (OpenCV model) and the plane of motion; written by rodlab calibrate.\n{text}"))
    }

    /// Normalised undistorted coordinates -> distorted normalised coordinates.
    pub fn distort(&self, x: f64, y: f64) -> (f64, f64) {
        let [k1, k2, p1, p2, k3] = self.distortion;
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
        (x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x), y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y)
    }

    /// A point in the camera frame -> pixel.
    pub fn project(&self, p_camera: Vector3<f64>) -> [f64; 2] {
        let (xd, yd) = self.distort(p_camera.x / p_camera.z, p_camera.y / p_camera.z);
        [self.fx_px * xd + self.cx_px, self.fy_px * yd + self.cy_px]
    }

    /// Pixel -> normalised undistorted coordinates (Newton on the distortion
    /// model with its exact Jacobian; converges to 1e-12 in a few steps).
    pub fn undistort(&self, u: f64, v: f64) -> (f64, f64) {
        let [k1, k2, p1, p2, k3] = self.distortion;
        let (xd, yd) = ((u - self.cx_px) / self.fx_px, (v - self.cy_px) / self.fy_px);
        let (mut x, mut y) = (xd, yd);
        for _ in 0..20 {
            let (fx, fy) = self.distort(x, y);
            let (ex, ey) = (fx - xd, fy - yd);
            if ex.abs() < 1e-14 && ey.abs() < 1e-14 {
                break;
            }
            let r2 = x * x + y * y;
            let radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
            let dr = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2);
            let a = radial + 2.0 * x * x * dr + 2.0 * p1 * y + 6.0 * p2 * x;
            let b = 2.0 * x * y * dr + 2.0 * p1 * x + 2.0 * p2 * y;
            let d = radial + 2.0 * y * y * dr + 6.0 * p1 * y + 2.0 * p2 * x;
            let det = a * d - b * b;
            if det.abs() < 1e-12 {
                break;
            }
            x -= (d * ex - b * ey) / det;
            y -= (-b * ex + a * ey) / det;
        }
        (x, y)
    }

    /// A point of the plane (rig frame, z = 0 on the plane) -> pixel.
    pub fn plane_to_pixel(&self, plane: &PlanePose, p_plane: [f64; 3]) -> [f64; 2] {
        self.project(plane.to_camera(p_plane))
    }

    /// Pixel -> the point of the plane it sees, in the board frame (z = 0
    /// up to rounding). None if the ray misses the plane.
    pub fn pixel_to_plane(&self, plane: &PlanePose, u: f64, v: f64) -> Option<[f64; 3]> {
        self.pixel_to_plane_at(plane, u, v, 0.0)
    }

    /// Pixel -> the point it sees on the plane `height_m` above the board
    /// (towards the camera), in the board frame (z = +-height_m). Marker
    /// centres sit above the board by the rod's radius and the board's
    /// thickness: intersecting with the board itself would scale the shape
    /// by (distance - height) / distance, a false stretch.
    pub fn pixel_to_plane_at(&self, plane: &PlanePose, u: f64, v: f64, height_m: f64) -> Option<[f64; 3]> {
        let (x, y) = self.undistort(u, v);
        let ray = Vector3::new(x, y, 1.0);
        let r = plane.rotation();
        let t = Vector3::from(plane.translation_m);
        let n = r.column(2).into_owned();
        let denom = n.dot(&ray);
        if denom.abs() < 1e-12 {
            return None;
        }
        let s = (n.dot(&t) + plane.camera_side() * height_m) / denom;
        if s <= 0.0 {
            return None;
        }
        let p = r.transpose() * (ray * s - t);
        Some([p.x, p.y, p.z])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn camera() -> CameraModel {
        CameraModel {
            width_px: 1280,
            height_px: 720,
            fx_px: 1400.0,
            fy_px: 1400.0,
            cx_px: 641.3,
            cy_px: 358.7,
            distortion: [-0.12, 0.08, 0.0007, -0.0004, -0.01],
            rms_reprojection_px: 0.0,
            views: 0,
            plane: Some(PlanePose { rotation_rad: [0.1, -0.05, 0.02], translation_m: [-0.15, -0.08, 0.7] }),
            plane_offset_m: None,
        }
    }

    /// Marker centres 10 mm above the board, across the whole image at
    /// 0.7 m: intersecting with the plane at their height recovers them to
    /// round-off; intersecting with the board itself is millimetres off.
    #[test]
    fn markers_above_the_board_are_found_at_their_height() {
        let c = camera();
        let plane = c.plane.clone().unwrap();
        let h = 0.010;
        let above = plane.offset(h);
        let mut worst = 0.0f64;
        let mut worst_on_board = 0.0f64;
        for i in 0..=10 {
            for j in 0..=6 {
                // Points of the offset plane seen across the image.
                let (u, v) = (1280.0 * i as f64 / 10.0, 720.0 * j as f64 / 6.0);
                let Some(p) = c.pixel_to_plane(&above, u, v) else { continue };
                let truth = plane.offset(h).to_camera(p);
                let px = c.project(truth);
                let q = c.pixel_to_plane_at(&plane, px[0], px[1], h).unwrap();
                let q_cam = plane.to_camera(q);
                worst = worst.max((q_cam - truth).norm());
                let q0 = plane.to_camera(c.pixel_to_plane(&plane, px[0], px[1]).unwrap());
                // Compare in-plane positions (the height is known).
                let in_plane = |a: Vector3<f64>| plane.rotation().transpose() * (a - Vector3::from(plane.translation_m));
                let (a, b) = (in_plane(q0), in_plane(truth));
                worst_on_board = worst_on_board.max(((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt());
            }
        }
        assert!(worst < 1e-4, "metric error {worst} m at 10 mm height");
        assert!(worst < 1e-9, "exact up to round-off: {worst}");
        assert!(worst_on_board > 1e-3, "on the board itself the error is millimetres ({worst_on_board})");
    }

    #[test]
    fn undistort_inverts_distort_across_the_image() {
        let c = camera();
        for u in (0..=1280).step_by(160) {
            for v in (0..=720).step_by(120) {
                let (x, y) = c.undistort(u as f64, v as f64);
                let (xd, yd) = c.distort(x, y);
                let (u2, v2) = (c.fx_px * xd + c.cx_px, c.fy_px * yd + c.cy_px);
                assert!((u2 - u as f64).abs() < 1e-9 && (v2 - v as f64).abs() < 1e-9, "{u} {v}: {u2} {v2}");
            }
        }
    }

    #[test]
    fn pixel_to_plane_inverts_plane_to_pixel() {
        let c = camera();
        let plane = c.plane.clone().unwrap();
        for p in [[0.0, 0.0, 0.0], [0.3, 0.1, 0.0], [0.12, 0.17, 0.0]] {
            let px = c.plane_to_pixel(&plane, p);
            let q = c.pixel_to_plane(&plane, px[0], px[1]).unwrap();
            for i in 0..3 {
                assert!((q[i] - p[i]).abs() < 1e-12, "{p:?} -> {px:?} -> {q:?}");
            }
        }
    }

    #[test]
    fn toml_round_trip_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("camera.toml");
        camera().save(&path).unwrap();
        assert_eq!(CameraModel::load(&path).unwrap(), camera());
        std::fs::write(&path, "width_px = 10\n").unwrap();
        let e = CameraModel::load(&path).unwrap_err().to_string();
        assert!(e.contains("camera.toml") && e.contains("missing field"), "{e}");
    }
}
