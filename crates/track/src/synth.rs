//! Synthetic camera images with exact ground truth, for tests and demos:
//! red disc markers lying in the plane of motion, seen through a pinhole
//! camera with distortion, over a textured background under a lighting
//! gradient, with sensor noise and motion blur; and checkerboard views for
//! calibration. Images are BGR, 8 bits, row-major.
//!
//! Anti-aliasing: each marker is rendered with 4x4 samples per pixel
//! through the local affine map plane -> image at its centre (the error of
//! that approximation is < 1e-3 px over a marker), so the true image
//! centroid of a marker is the projection of its centre.

use crate::calibrate::BoardSpec;
use crate::camera::{CameraModel, PlanePose};
use crate::detect::{mat_from_bgr, TrackError};
use crate::source::write_image;
use nalgebra::{Isometry3, Matrix2, Translation3, UnitQuaternion, Vector2, Vector3};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

/// A BGR image.
#[derive(Clone, Debug)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub bgr: Vec<u8>,
}

/// How the scene looks (everything but the marker positions).
#[derive(Clone, Debug)]
pub struct Look {
    pub marker_radius_m: f64,
    /// Marker colour (B, G, R) before lighting.
    pub marker_bgr: [f64; 3],
    /// Colour of the rod's body (B, G, R), when one is drawn.
    pub body_bgr: [f64; 3],
    /// Background grey level and texture amplitude (grey levels).
    pub background_grey: f64,
    pub texture_amplitude: f64,
    /// Relative brightness change from the left to the right edge.
    pub lighting_gradient: f64,
    /// Sensor noise, standard deviation in grey levels (per channel).
    pub noise_sigma: f64,
    pub seed: u64,
}

impl Default for Look {
    fn default() -> Look {
        Look {
            marker_radius_m: 0.003,
            marker_bgr: [40.0, 35.0, 200.0],
            body_bgr: [205.0, 210.0, 200.0],
            background_grey: 150.0,
            texture_amplitude: 20.0,
            lighting_gradient: 0.3,
            noise_sigma: 2.0,
            seed: 1,
        }
    }
}

impl Image {
    /// As an OpenCV matrix (8UC3, BGR).
    pub fn to_mat(&self) -> Result<opencv::core::Mat, TrackError> {
        mat_from_bgr(self.width, self.height, &self.bgr)
    }

    /// One channel of a grey image (its blue), as an 8-bit Mat.
    fn grey_mat(&self) -> Result<opencv::core::Mat, TrackError> {
        use opencv::prelude::*;
        let mut m =
            opencv::core::Mat::new_rows_cols_with_default(self.height as i32, self.width as i32, opencv::core::CV_8UC1, opencv::core::Scalar::all(0.0))?;
        for (out, bgr) in m.data_bytes_mut()?.iter_mut().zip(self.bgr.chunks_exact(3)) {
            *out = bgr[0];
        }
        Ok(m)
    }
}

/// Renders frames of markers moving in the camera's plane.
pub struct Renderer {
    pub camera: CameraModel,
    pub plane: PlanePose,
    pub look: Look,
    /// Background with texture and lighting (f32, BGR).
    background: Vec<f32>,
    /// Gaussian noise table (grey levels, rounded), read at a random offset per frame.
    noise: Vec<i8>,
    rng: rand::rngs::StdRng,
}

/// Brightness at column `u` of `width`: `gradient` from the left edge to the right.
fn lighting(gradient: f64, u: usize, width: usize) -> f64 {
    1.0 - gradient / 2.0 + gradient * u as f64 / width as f64
}

/// How many of pixel `(u, v)`'s 4x4 samples lie inside the disc of radius
/// `r_m` whose centre images at `c`, through the inverse `jinv` of its
/// local map plane -> image.
fn disc_samples_inside(jinv: &Matrix2<f64>, c: [f64; 2], u: usize, v: usize, r_m: f64) -> u32 {
    let mut inside = 0;
    for sy in 0..4 {
        for sx in 0..4 {
            let q = Vector2::new(u as f64 - 0.375 + 0.25 * sx as f64 - c[0], v as f64 - 0.375 + 0.25 * sy as f64 - c[1]);
            if (jinv * q).norm_squared() <= r_m * r_m {
                inside += 1;
            }
        }
    }
    inside
}

/// `val.round().clamp(0.0, 255.0) as u8` without libm's `roundf`: in
/// [0, 255] the fraction `x - trunc(x)` is exact, so rounding half away
/// from zero is `trunc(x) + (fraction >= 0.5)`; NaN gives 0 as before.
fn round_to_u8(val: f32) -> u8 {
    let x = val.clamp(0.0, 255.0);
    let t = x as u8;
    // No branch and no overflow check: the pass over a frame vectorises.
    (u32::from(t) + u32::from(x - f32::from(t) >= 0.5)) as u8
}

/// A standard normal sample.
pub fn gaussian(rng: &mut impl Rng) -> f64 {
    rand_distr::Distribution::sample(&rand_distr::StandardNormal, rng)
}

impl Renderer {
    pub fn new(camera: CameraModel, plane: PlanePose, look: Look) -> Renderer {
        let (w, h) = (camera.width_px as usize, camera.height_px as usize);
        let mut background = vec![0f32; w * h * 3];
        for v in 0..h {
            for u in 0..w {
                let (x, y) = (u as f64, v as f64);
                // Low-contrast texture: a few incommensurate waves, slightly coloured.
                let t = (x * 0.071 + y * 0.023).sin() * 0.5 + (x * 0.013 - y * 0.089).sin() * 0.3 + ((x + 2.0 * y) * 0.31).sin() * 0.2;
                let light = lighting(look.lighting_gradient, u, w);
                let g = (look.background_grey + look.texture_amplitude * t) * light;
                let i = (v * w + u) * 3;
                background[i] = (g * 0.97) as f32;
                background[i + 1] = g as f32;
                background[i + 2] = (g * 1.02) as f32;
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(look.seed);
        let noise = (0..(w * h * 3 + 65_536)).map(|_| (gaussian(&mut rng) * look.noise_sigma).round().clamp(-127.0, 127.0) as i8).collect();
        Renderer { camera, plane, look, background, noise, rng }
    }

    /// Image position of a plane point.
    pub fn pixel(&self, p_plane: [f64; 2]) -> [f64; 2] {
        self.pixel_3d([p_plane[0], p_plane[1], 0.0])
    }

    /// Image position of a point of the plane's frame (z off the plane).
    pub fn pixel_3d(&self, p: [f64; 3]) -> [f64; 2] {
        self.camera.plane_to_pixel(&self.plane, p)
    }

    /// Local affine map plane -> image at `p` (central differences), for a
    /// disc parallel to the plane at `p`'s height.
    fn jacobian(&self, p: [f64; 3]) -> Matrix2<f64> {
        let h = 1e-5;
        let d = |dx: f64, dy: f64| Vector2::from(self.pixel_3d([p[0] + dx, p[1] + dy, p[2]]));
        let cx = (d(h, 0.0) - d(-h, 0.0)) / (2.0 * h);
        let cy = (d(0.0, h) - d(0.0, -h)) / (2.0 * h);
        Matrix2::from_columns(&[cx, cy])
    }

    /// One frame. `positions[k][i]` is marker i at exposure sub-step k (more
    /// than one sub-step = motion blur); `visible[i] = false` hides marker i.
    pub fn render(&mut self, positions: &[Vec<[f64; 2]>], visible: &[bool]) -> Image {
        self.render_with_body(positions, visible, &[], 0.0)
    }

    /// Paints a static surface into the background: every pixel for which
    /// `covers(u, v)` holds takes colour `bgr` (under the same lighting).
    /// For a virtual lab: the table seen behind the rod.
    pub fn paint_background(&mut self, covers: impl Fn(usize, usize) -> bool, bgr: [f64; 3]) {
        let (w, h) = (self.camera.width_px as usize, self.camera.height_px as usize);
        for v in 0..h {
            for u in 0..w {
                if covers(u, v) {
                    let light = lighting(self.look.lighting_gradient, u, w);
                    for (pixel, colour) in self.background[(v * w + u) * 3..(v * w + u) * 3 + 3].iter_mut().zip(bgr) {
                        *pixel = (colour * light) as f32;
                    }
                }
            }
        }
    }

    /// Adds the coverage of a disc of radius `r_m` parallel to the plane,
    /// centred at `p` (the plane's frame), to `coverage` (4x4 samples per
    /// pixel), times `weight`. `bound_whole_pixels`: a pixel whose 16 samples
    /// all lie well inside (or well outside) the disc counts them without
    /// testing each (the same coverage: the bound keeps a margin far above
    /// round-off, and the rest are sampled as before).
    fn add_disc_with(&self, coverage: &mut [f32], p: [f64; 3], r_m: f64, weight: f32, bound_whole_pixels: bool) {
        let (w, h) = (self.camera.width_px as usize, self.camera.height_px as usize);
        let c = self.pixel_3d(p);
        let j = self.jacobian(p);
        let Some(jinv) = j.try_inverse() else { return };
        let extent = j.norm() * r_m + 2.0;
        if !(c[0] + extent >= 0.0 && c[1] + extent >= 0.0 && c[0] - extent < w as f64 && c[1] - extent < h as f64) {
            return;
        }
        let (u0, u1) = ((c[0] - extent).floor().max(0.0) as usize, ((c[0] + extent).ceil() as usize).min(w - 1));
        let (v0, v1) = ((c[1] - extent).floor().max(0.0) as usize, ((c[1] + extent).ceil() as usize).min(h - 1));
        // The samples lie within 0.375 px per axis of the pixel's centre:
        // in the disc's plane within `reach_m` of the centre's image.
        let reach_m = jinv.norm() * 0.375 * std::f64::consts::SQRT_2;
        let margin_m = 1e-9 * r_m;
        for v in v0..=v1 {
            for u in u0..=u1 {
                let centre_m = || (jinv * Vector2::new(u as f64 - c[0], v as f64 - c[1])).norm();
                let bounded = match bound_whole_pixels.then(centre_m) {
                    Some(d) if d + reach_m < r_m - margin_m => Some(16),
                    Some(d) if d - reach_m > r_m + margin_m => Some(0),
                    _ => None,
                };
                let inside = bounded.unwrap_or_else(|| disc_samples_inside(&jinv, c, u, v, r_m));
                // Adding zero coverage changes nothing.
                if inside > 0 {
                    coverage[v * w + u] += weight * inside as f32 / 16.0;
                }
            }
        }
    }

    /// One frame with a body under the markers: the rod, a chain of discs of
    /// radius `body_radius_m` at the plane points `body` (spaced well below
    /// the radius), in the look's body colour. Markers come on top.
    pub fn render_with_body(&mut self, positions: &[Vec<[f64; 2]>], visible: &[bool], body: &[[f64; 2]], body_radius_m: f64) -> Image {
        let lift = |p: &[f64; 2]| [p[0], p[1], 0.0];
        let positions: Vec<Vec<[f64; 3]>> = positions.iter().map(|step| step.iter().map(lift).collect()).collect();
        let body: Vec<[f64; 3]> = body.iter().map(lift).collect();
        self.render_3d(&positions, visible, &body, body_radius_m)
    }

    /// One frame of markers (and a body) anywhere in the plane's frame, not
    /// only on the plane: each disc parallel to the plane at its point's
    /// height. For a rod bending out of the plane seen by a camera set.
    pub fn render_3d(&mut self, positions: &[Vec<[f64; 3]>], visible: &[bool], body: &[[f64; 3]], body_radius_m: f64) -> Image {
        self.render_3d_with(positions, visible, body, body_radius_m, true)
    }

    /// [`Self::render_3d`]; `shortcuts` off: every pixel of a disc sampled
    /// and blended in full (what the shortcuts are tested against).
    fn render_3d_with(&mut self, positions: &[Vec<[f64; 3]>], visible: &[bool], body: &[[f64; 3]], body_radius_m: f64, shortcuts: bool) -> Image {
        let (w, h) = (self.camera.width_px as usize, self.camera.height_px as usize);
        let mut coverage = vec![0f32; w * h];
        let mut body_coverage = vec![0f32; if body.is_empty() { 0 } else { w * h }];
        for p in body {
            self.add_disc_with(&mut body_coverage, *p, body_radius_m, 1.0, shortcuts);
        }
        let substeps = positions.len().max(1);
        for step in positions {
            for (i, p) in step.iter().enumerate() {
                if visible.get(i).copied().unwrap_or(true) {
                    self.add_disc_with(&mut coverage, *p, self.look.marker_radius_m, 1.0 / substeps as f32, shortcuts);
                }
            }
        }
        self.compose(&coverage, &body_coverage, shortcuts)
    }

    /// The frame from the markers' and the body's coverage: the background
    /// under the body under the markers, lit, with the frame's noise.
    /// `shortcuts`: a pixel neither covers is the background plus noise
    /// (the same sum the blend makes with zero weights), and the rounding
    /// is [`round_to_u8`] (libm's `roundf` was a quarter of a frame's time).
    fn compose(&mut self, coverage: &[f32], body_coverage: &[f32], shortcuts: bool) -> Image {
        let (w, h) = (self.camera.width_px as usize, self.camera.height_px as usize);
        let offset = self.rng.gen_range(0..65_536);
        let noise = &self.noise[offset..offset + w * h * 3];
        let mut bgr = vec![0u8; w * h * 3];
        let mc = self.look.marker_bgr;
        let bc = self.look.body_bgr;
        let light_of_column: Vec<f32> = (0..w).map(|u| lighting(self.look.lighting_gradient, u, w) as f32).collect();
        let round = |val: f32| if shortcuts { round_to_u8(val) } else { val.round().clamp(0.0, 255.0) as u8 };
        if shortcuts {
            // Uncovered first, in one pass the compiler can vectorise; the
            // covered pixels are blended over it below.
            for ((out, bg), n) in bgr.iter_mut().zip(&self.background).zip(noise) {
                *out = round_to_u8(bg + *n as f32);
            }
        }
        for v in 0..h {
            for (u, &light) in light_of_column.iter().enumerate() {
                let k = v * w + u;
                let a = coverage[k].min(1.0);
                let ab = body_coverage.get(k).map_or(0.0, |c| c.min(1.0));
                if shortcuts && a == 0.0 && ab == 0.0 {
                    continue;
                }
                for ch in 0..3 {
                    let under = self.background[k * 3 + ch] * (1.0 - ab) + bc[ch] as f32 * light * ab;
                    let val = under * (1.0 - a) + mc[ch] as f32 * light * a + noise[k * 3 + ch] as f32;
                    bgr[k * 3 + ch] = round(val);
                }
            }
        }
        Image { width: w, height: h, bgr }
    }
}

/// A checkerboard image: `cols x rows` inner corners, squares of `square_m`,
/// board pose `board` (board frame -> camera). Corner (0, 0) is the board
/// frame's origin; x runs along the `cols` direction.
pub fn checkerboard(camera: &CameraModel, board: &PlanePose, cols: usize, rows: usize, square_m: f64, noise_sigma: f64, seed: u64) -> Image {
    render_checkerboard(camera, board, &BoardLook { cols, rows, square_m }, noise_sigma, seed, true)
}

/// The board's squares and margin, in squares.
struct BoardLook {
    cols: usize,
    rows: usize,
    square_m: f64,
}

impl BoardLook {
    /// White margin around the outer squares, in squares.
    const MARGIN: f64 = 0.8;

    /// Grey level at board point `p` (metres). Squares span [-1, cols] x
    /// [-1, rows] (in squares), then the white margin, then the table.
    fn shade(&self, p: [f64; 2]) -> f64 {
        let (x, y) = (p[0] / self.square_m, p[1] / self.square_m);
        if !(x.is_finite() && y.is_finite()) {
            return 90.0;
        }
        let (cols, rows) = (self.cols as f64, self.rows as f64);
        if x < -1.0 || y < -1.0 || x > cols || y > rows {
            let m = Self::MARGIN;
            if x >= -1.0 - m && y >= -1.0 - m && x <= cols + m && y <= rows + m {
                return 225.0;
            }
            return 110.0;
        }
        if ((x.floor() as i64 + y.floor() as i64) & 1) == 0 {
            25.0
        } else {
            225.0
        }
    }

    /// Whether every point within `half_m` (per axis) of `p` has `p`'s
    /// shade: the box lies inside one open square-sized cell of the board's
    /// grid and crosses no margin edge.
    fn uniform_around(&self, p: [f64; 2], half_m: [f64; 2]) -> bool {
        let edges = [[-1.0 - Self::MARGIN, self.cols as f64 + Self::MARGIN], [-1.0 - Self::MARGIN, self.rows as f64 + Self::MARGIN]];
        (0..2).all(|d| {
            let (lo, hi) = ((p[d] - half_m[d]) / self.square_m, (p[d] + half_m[d]) / self.square_m);
            let cell = lo.floor();
            lo.is_finite() && hi.is_finite() && lo > cell && hi < cell + 1.0 && edges[d].iter().all(|e| !(lo <= *e && *e <= hi))
        })
    }
}

/// The exact pixel -> board map on a coarse grid, bilinearly interpolated
/// (the map is smooth: interpolation error << 0.01 px).
struct BoardGrid {
    points: Vec<[f64; 2]>,
    width: usize,
    height: usize,
    /// Per board axis, the most the interpolated point moves per pixel
    /// along u and along v (the largest difference between neighbouring
    /// finite grid points over the step).
    per_px_u: [f64; 2],
    per_px_v: [f64; 2],
    /// Every grid point is finite (the board's plane fills the view).
    all_finite: bool,
}

impl BoardGrid {
    const STEP: usize = 8;

    fn new(camera: &CameraModel, board: &PlanePose) -> BoardGrid {
        let (w, h) = (camera.width_px as usize, camera.height_px as usize);
        let (width, height) = (w / Self::STEP + 2, h / Self::STEP + 2);
        let mut points = vec![[f64::NAN; 2]; width * height];
        for gy in 0..height {
            for gx in 0..width {
                if let Some(p) = camera.pixel_to_plane(board, (gx * Self::STEP) as f64, (gy * Self::STEP) as f64) {
                    points[gy * width + gx] = [p[0], p[1]];
                }
            }
        }
        let (mut per_px_u, mut per_px_v) = ([0.0f64; 2], [0.0f64; 2]);
        for gy in 0..height {
            for gx in 0..width {
                let here = points[gy * width + gx];
                for d in 0..2 {
                    if gx + 1 < width {
                        let step = (points[gy * width + gx + 1][d] - here[d]).abs();
                        if step.is_finite() {
                            per_px_u[d] = per_px_u[d].max(step / Self::STEP as f64);
                        }
                    }
                    if gy + 1 < height {
                        let step = (points[(gy + 1) * width + gx][d] - here[d]).abs();
                        if step.is_finite() {
                            per_px_v[d] = per_px_v[d].max(step / Self::STEP as f64);
                        }
                    }
                }
            }
        }
        let all_finite = points.iter().all(|p| p.iter().all(|c| c.is_finite()));
        BoardGrid { points, width, height, per_px_u, per_px_v, all_finite }
    }

    /// The grid cell that pixel (u, v) is interpolated in, and where in it.
    fn cell(&self, u: f64, v: f64) -> (usize, usize, f64, f64) {
        let (fx, fy) = (u / Self::STEP as f64, v / Self::STEP as f64);
        // `as usize` saturates below 0 (and maps NaN to 0): the floor,
        // clamped at 0, without a call to libm's floor.
        let (gx, gy) = ((fx as usize).min(self.width - 2), (fy as usize).min(self.height - 2));
        (gx, gy, fx - gx as f64, fy - gy as f64)
    }

    fn lookup(&self, u: f64, v: f64) -> [f64; 2] {
        let (gx, gy, tx, ty) = self.cell(u, v);
        let g = |x: usize, y: usize| self.points[y * self.width + x];
        let mut out = [0.0; 2];
        for (d, o) in out.iter_mut().enumerate() {
            *o = g(gx, gy)[d] * (1.0 - tx) * (1.0 - ty)
                + g(gx + 1, gy)[d] * tx * (1.0 - ty)
                + g(gx, gy + 1)[d] * (1.0 - tx) * ty
                + g(gx + 1, gy + 1)[d] * tx * ty;
        }
        out
    }

    /// Half the size, per board axis, of the box that holds every point
    /// within `reach_px` of a pixel in u and in v.
    fn reach_m(&self, reach_px: f64) -> [f64; 2] {
        [0, 1].map(|d| reach_px * (self.per_px_u[d] + self.per_px_v[d]))
    }

    /// Whether every grid point of the cells that (u, v) +- `reach_px`
    /// interpolates in is finite (the per-pixel bounds hold there).
    fn finite_around(&self, u: f64, v: f64, reach_px: f64) -> bool {
        if self.all_finite {
            return true;
        }
        let (x0, y0, ..) = self.cell(u - reach_px, v - reach_px);
        let (x1, y1, ..) = self.cell(u + reach_px, v + reach_px);
        (y0..=y1 + 1).all(|y| (x0..=x1 + 1).all(|x| self.points[y * self.width + x].iter().all(|c| c.is_finite())))
    }
}

/// The 3x3 samples of a pixel lie within 1/3 px of its centre one, per
/// axis (a little more for round-off).
const SAMPLE_REACH_PX: f64 = 0.34;

/// [`checkerboard`], supersampled 3x3 per pixel. With `skip_uniform`, a
/// pixel whose whole footprint lies in one square (by the grid's
/// per-pixel bounds) takes its centre's shade: the same value the nine
/// samples sum to, exactly, since every shade is a small integer.
fn render_checkerboard(camera: &CameraModel, board: &PlanePose, look: &BoardLook, noise_sigma: f64, seed: u64, skip_uniform: bool) -> Image {
    let (w, h) = (camera.width_px as usize, camera.height_px as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let grid = BoardGrid::new(camera, board);
    let half_m = grid.reach_m(SAMPLE_REACH_PX);
    let mut bgr = vec![0u8; w * h * 3];
    for v in 0..h {
        for u in 0..w {
            let sample = |sx: usize, sy: usize| grid.lookup(u as f64 - 1.0 / 3.0 + sx as f64 / 3.0, v as f64 - 1.0 / 3.0 + sy as f64 / 3.0);
            let centre = sample(1, 1);
            let acc = if skip_uniform && look.uniform_around(centre, half_m) && grid.finite_around(u as f64, v as f64, SAMPLE_REACH_PX) {
                9.0 * look.shade(centre)
            } else {
                let mut acc = 0.0;
                for sy in 0..3 {
                    for sx in 0..3 {
                        acc += look.shade(sample(sx, sy));
                    }
                }
                acc
            };
            let val = (acc / 9.0 + gaussian(&mut rng) * noise_sigma).round().clamp(0.0, 255.0) as u8;
            bgr[(v * w + u) * 3..(v * w + u) * 3 + 3].copy_from_slice(&[val, val, val]);
        }
    }
    Image { width: w, height: h, bgr }
}

/// The synthetic rig: a 30 cm field of view at 1280x720, a plane 0.55 m
/// away, tilted a little, with realistic lens distortion.
pub fn demo_camera() -> (CameraModel, PlanePose) {
    let camera = CameraModel {
        width_px: 1280,
        height_px: 720,
        fx_px: 2350.0,
        fy_px: 2350.0,
        cx_px: 645.5,
        cy_px: 356.0,
        distortion: [-0.21, 0.15, 0.0006, -0.0004, 0.0],
        rms_reprojection_px: 0.0,
        views: 0,
        plane: None,
        plane_offset_m: None,
    };
    let plane = PlanePose { rotation_rad: [0.06, -0.04, 0.01], translation_m: [-0.10, -0.035, 0.55] };
    (camera, plane)
}

/// Writes an image (format from the extension, e.g. PNG).
pub fn write_png(path: &Path, img: &Image) -> Result<(), TrackError> {
    write_image(path, &img.to_mat()?)
}

/// Writes a grey image (a [`checkerboard`]) as a one-channel PNG: a third
/// of the bytes to compress, and read back as the same grey levels (a grey
/// BGR pixel converts to its own level exactly).
fn write_grey_png(path: &Path, img: &Image) -> Result<(), TrackError> {
    write_image(path, &img.grey_mat()?)
}

/// A calibration set on disk: `dir/views/view_NN.png` (the poses of
/// [`calibration_poses`]) and `dir/plane.png` (the board lying in the plane
/// of motion). Returns (views, plane image).
pub fn write_board_images(
    dir: &Path,
    camera: &CameraModel,
    plane: &PlanePose,
    board: &BoardSpec,
    noise_sigma: f64,
) -> Result<(Vec<PathBuf>, PathBuf), TrackError> {
    let views_dir = dir.join("views");
    std::fs::create_dir_all(&views_dir).map_err(|e| TrackError::Input(format!("{}: {e}", views_dir.display())))?;
    let (cols, rows, square_m) = (board.cols, board.rows, board.square_m);
    let mut views = vec![];
    for (i, pose) in calibration_poses(cols, rows, square_m).iter().enumerate() {
        let path = views_dir.join(format!("view_{i:02}.png"));
        write_grey_png(&path, &checkerboard(camera, pose, cols, rows, square_m, noise_sigma, i as u64))?;
        views.push(path);
    }
    let plane_image = dir.join("plane.png");
    write_grey_png(&plane_image, &checkerboard(camera, plane, cols, rows, square_m, noise_sigma, 99))?;
    Ok((views, plane_image))
}

/// Board poses for a calibration set: tilts of up to ~30 degrees about both
/// axes, the board covering different parts of the image.
pub fn calibration_poses(cols: usize, rows: usize, square_m: f64) -> Vec<PlanePose> {
    let (bw, bh) = (cols as f64 * square_m, rows as f64 * square_m);
    let tilts = [
        [0.0, 0.0, 0.0],
        [0.45, 0.0, 0.05],
        [-0.45, 0.05, 0.0],
        [0.0, 0.45, -0.05],
        [0.05, -0.45, 0.0],
        [0.35, 0.35, 0.1],
        [-0.35, 0.35, -0.1],
        [0.35, -0.35, 0.05],
        [-0.35, -0.35, 0.0],
        [0.2, 0.1, 0.3],
        [-0.1, 0.25, -0.3],
        [0.25, -0.2, 0.15],
    ];
    let shifts = [
        [0.0, 0.0],
        [-0.04, -0.02],
        [0.04, 0.02],
        [-0.04, 0.02],
        [0.04, -0.02],
        [0.0, 0.02],
        [0.0, -0.02],
        [-0.03, 0.0],
        [0.03, 0.0],
        [0.02, 0.01],
        [-0.02, -0.01],
        [0.0, 0.0],
    ];
    tilts
        .iter()
        .zip(shifts.iter())
        .map(|(r, s)| {
            // Keep the board centre on the optical axis (shifted), 0.55-0.6 m away.
            let pose = PlanePose { rotation_rad: *r, translation_m: [0.0, 0.0, 0.0] };
            let centre = pose.rotation() * nalgebra::Vector3::new(bw / 2.0, bh / 2.0, 0.0);
            PlanePose { rotation_rad: *r, translation_m: [s[0] - centre.x, s[1] - centre.y, 0.58 - centre.z] }
        })
        .collect()
}

/// A camera set looking at the board lying in the plane (the world): each
/// camera `distance_m` from the board's centre, the set spread `spread_deg`
/// about the board's y axis, with slightly different lenses. Each camera's
/// `plane` is the world's pose in it.
pub fn camera_set(count: usize, distance_m: f64, spread_deg: f64, board: &BoardSpec) -> Vec<(String, CameraModel)> {
    let (base, _) = demo_camera();
    let centre = Vector3::new(board.cols as f64 * board.square_m / 2.0, board.rows as f64 * board.square_m / 2.0, 0.0);
    (0..count)
        .map(|k| {
            // Camera 0 on the left of the board (-x), the last on its right.
            let f = if count > 1 { 0.5 - k as f64 / (count - 1) as f64 } else { 0.0 };
            let yaw = (f * spread_deg).to_radians();
            // The camera's axes in the world: its z (optical axis) towards +z,
            // turned about y; its centre on the axis through the board's centre.
            let world_from_camera_rot = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), yaw);
            let centre_m = centre - world_from_camera_rot * Vector3::new(0.0, 0.0, distance_m);
            let world_from_camera = Isometry3::from_parts(Translation3::from(centre_m), world_from_camera_rot);
            let mut model = base.clone();
            model.fx_px += 15.0 * k as f64;
            model.fy_px += 15.0 * k as f64;
            model.cx_px -= 3.0 * k as f64;
            model.distortion[0] += 0.02 * k as f64;
            model.plane = Some(crate::stereo::plane_pose(&world_from_camera.inverse()));
            (set_camera_name(k, count), model)
        })
        .collect()
}

/// The name of camera `k` of `count` placed left to right: `left`, `right`
/// (and `centre` between them for three), else `camera<k>`.
pub fn set_camera_name(k: usize, count: usize) -> String {
    match (count, k) {
        (2, 0) | (3, 0) => "left".into(),
        (2, 1) | (3, 2) => "right".into(),
        (3, 1) => "centre".into(),
        _ => format!("camera{k}"),
    }
}

/// Board poses in the world for a camera set's calibration: the board
/// turned about its centre by up to ~31 degrees each way and shifted out to
/// the images' corners; every camera of [`camera_set`] sees most of them.
pub fn set_calibration_poses(board: &BoardSpec) -> Vec<Isometry3<f64>> {
    let centre = Vector3::new(board.cols as f64 * board.square_m / 2.0, board.rows as f64 * board.square_m / 2.0, 0.0);
    // 24 views: eight directions of tilt at three magnitudes (up to 31
    // degrees, which fixes the focal length), the board shifted out to the
    // image's corners (the field of view at 0.6 m is 0.33 x 0.18 m: the
    // edges fix distortion and the principal point).
    let corners = [[-0.06, -0.03], [0.06, 0.03], [-0.06, 0.03], [0.06, -0.03], [0.0, 0.0], [0.0, 0.035], [-0.065, 0.0], [0.065, 0.0]];
    (0..24)
        .map(|i| {
            let direction = i as f64 * std::f64::consts::FRAC_PI_4 + 0.3 * (i / 8) as f64;
            let magnitude = [0.25, 0.45, 0.55][i / 8];
            let r = Vector3::new(magnitude * direction.cos(), magnitude * direction.sin(), 0.15 * (3.0 * i as f64).sin());
            let s = corners[(i * 3) % corners.len()];
            let depth = 0.03 * (i as f64 * 1.7).sin();
            let turn = Isometry3::new(Vector3::zeros(), r);
            Isometry3::translation(centre.x + s[0], centre.y + s[1], centre.z + depth) * turn * Isometry3::translation(-centre.x, -centre.y, -centre.z)
        })
        .collect()
}

/// A camera set's calibration images on disk: `dir/<camera>/view_NN.png`
/// (the board at [`set_calibration_poses`], taken by every camera at the
/// same time) and `dir/<camera>/plane.png` (the board lying in the plane,
/// the world). Returns each camera's folder.
pub fn write_set_board_images(
    dir: &Path,
    cameras: &[(String, CameraModel)],
    board: &BoardSpec,
    noise_sigma: f64,
) -> Result<Vec<(String, PathBuf)>, TrackError> {
    let poses = set_calibration_poses(board);
    let mut out = vec![];
    for (k, (name, camera)) in cameras.iter().enumerate() {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).map_err(|e| TrackError::Input(format!("{}: {e}", folder.display())))?;
        let camera_from_world = crate::stereo::isometry(camera.plane.as_ref().expect("a set camera has a pose"));
        let seed = 1000 * k as u64;
        for (i, world_from_board) in poses.iter().enumerate() {
            let pose = crate::stereo::plane_pose(&(camera_from_world * world_from_board));
            let image = checkerboard(camera, &pose, board.cols, board.rows, board.square_m, noise_sigma, seed + i as u64);
            write_grey_png(&folder.join(format!("view_{i:02}.png")), &image)?;
        }
        let plane = crate::stereo::plane_pose(&camera_from_world);
        write_grey_png(&folder.join("plane.png"), &checkerboard(camera, &plane, board.cols, board.rows, board.square_m, noise_sigma, seed + 99))?;
        out.push((name.clone(), folder));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipping the supersampling of pixels inside one square changes no
    /// byte: every third calibration view of the demo camera (tilted, near
    /// the image's edges) and its plane view.
    #[test]
    fn a_board_rendered_with_uniform_pixels_skipped_is_the_same_image() {
        let (camera, plane) = demo_camera();
        let look = BoardLook { cols: 9, rows: 6, square_m: 0.016 };
        let mut poses = calibration_poses(look.cols, look.rows, look.square_m);
        poses.push(plane);
        let mut skipped_share = vec![];
        for (i, pose) in poses.iter().enumerate().step_by(3) {
            let fast = render_checkerboard(&camera, pose, &look, 2.0, i as u64, true);
            let full = render_checkerboard(&camera, pose, &look, 2.0, i as u64, false);
            assert!(fast.bgr == full.bgr, "view {i}: the images differ");
            let grid = BoardGrid::new(&camera, pose);
            let half_m = grid.reach_m(SAMPLE_REACH_PX);
            let (w, h) = (camera.width_px as usize, camera.height_px as usize);
            let uniform =
                (0..h).flat_map(|v| (0..w).map(move |u| (u, v))).filter(|&(u, v)| look.uniform_around(grid.lookup(u as f64, v as f64), half_m)).count();
            skipped_share.push(uniform as f64 / (w * h) as f64);
        }
        // The shortcut must actually be taken for most pixels.
        assert!(skipped_share.iter().all(|s| *s > 0.5), "share of uniform pixels: {skipped_share:?}");
    }

    /// The renderer's shortcuts (whole pixels inside or outside a disc,
    /// uncovered pixels, rounding without libm) change no byte: frames of a
    /// rod's body under markers, in and off the plane, with motion blur,
    /// near the image's edges and partly outside it.
    #[test]
    fn frames_rendered_with_shortcuts_are_the_same_images() {
        let (camera, plane) = demo_camera();
        let look = Look { seed: 7, ..Look::default() };
        let (mut fast, mut full) = (Renderer::new(camera.clone(), plane.clone(), look.clone()), Renderer::new(camera, plane, look));
        let mut last_body = vec![];
        for frame in 0..4 {
            let shift_m = 0.02 * frame as f64;
            // A rod from the image's middle out past its left edge, dipping out of the plane.
            let body: Vec<[f64; 3]> = (0..300).map(|i| [0.05 - 0.001 * i as f64 - shift_m, 0.01 + 0.0004 * i as f64, -0.0001 * i as f64]).collect();
            let markers =
                |dt: f64| -> Vec<[f64; 3]> { (0..6).map(|i| [0.04 - 0.05 * i as f64 - shift_m + dt, 0.012 + 0.02 * i as f64, 0.002 * i as f64]).collect() };
            let positions = vec![markers(0.0), markers(0.0005), markers(0.001)];
            let visible = [true, true, false, true, true, true];
            let a = fast.render_3d_with(&positions, &visible, &body, 0.004, true);
            let b = full.render_3d_with(&positions, &visible, &body, 0.004, false);
            assert!(a.bgr == b.bgr, "frame {frame}: the images differ");
            last_body = body;
        }
        // The frames hold every kind of pixel the shortcuts treat apart:
        // covered whole, partly and not at all.
        let mut covered = vec![0f32; 1280 * 720];
        for p in &last_body {
            fast.add_disc_with(&mut covered, *p, 0.004, 1.0, true);
        }
        let whole_partly_none = [
            covered.iter().filter(|c| **c >= 1.0).count(),
            covered.iter().filter(|c| **c > 0.0 && **c < 1.0).count(),
            covered.iter().filter(|c| **c == 0.0).count(),
        ];
        assert!(whole_partly_none.iter().all(|n| *n > 100), "{whole_partly_none:?}");
        let mut body_coverage = vec![0f32; 1280 * 720];
        fast.add_disc_with(&mut body_coverage, [0.0, 0.0, 0.0], 0.004, 1.0, true);
        let (whole, part) = (body_coverage.iter().filter(|c| **c == 1.0).count(), body_coverage.iter().filter(|c| **c > 0.0 && **c < 1.0).count());
        assert!(whole > 4 * part, "a disc of 4 mm: {whole} whole pixels, {part} partly covered");
    }

    /// [`round_to_u8`] is `round().clamp(0, 255) as u8`: the 4,001 floats
    /// around every integer and every half from -2 to 258, every 97th
    /// float between, and the edge cases.
    #[test]
    fn rounding_without_libm_is_rounding() {
        let near = |x: f32| {
            let b = x.to_bits() as i64;
            (b - 2000..=b + 2000).map(|b| f32::from_bits(b as u32))
        };
        let halves = (-4..=516).flat_map(|k| near(k as f32 * 0.5));
        let (lo, hi) = ((-2.0f32).to_bits(), 258.0f32.to_bits());
        let strided = (0.0f32.to_bits()..=lo).step_by(97).chain((0..=hi).step_by(97)).map(f32::from_bits);
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, -0.0, 1e30, -1e30];
        let mut checked = 0u64;
        for x in halves.chain(strided).chain(specials) {
            assert_eq!(round_to_u8(x), x.round().clamp(0.0, 255.0) as u8, "{x:e}");
            checked += 1;
        }
        assert!(checked > 20_000_000, "{checked}");
    }
}
