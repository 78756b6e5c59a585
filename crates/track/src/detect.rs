//! Marker detection in one image region: colour threshold in HSV (red wraps
//! around hue 0, so a colour is a list of hue ranges), morphological
//! opening, external contours, area and circularity filters, and a
//! sub-pixel centroid from intensity-weighted image moments.

use opencv::core::{self, Mat, Point, Rect, Size, Vec3b, Vector};
use opencv::imgproc;
use opencv::prelude::*;
use serde::Deserialize;
use std::path::Path;

/// `markers.toml`: what a marker looks like and how to follow it. Every
/// field has a default that suits red markers of 5-40 px across.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MarkerParams {
    /// Number of markers on the rod (0: as many as the first frame shows).
    pub count: usize,
    /// Accepted hues \[deg, 0-360): `[from, to]` ranges; red needs two (`[[0, 20], [340, 360]]`).
    pub hue_ranges_deg: Vec<[f64; 2]>,
    /// Minimum saturation (0-1) of a marker's pixels.
    pub saturation_min: f64,
    /// Minimum value, HSV's brightness (0-1), of a marker's pixels.
    pub value_min: f64,
    /// Side of the square kernel of the morphological opening \[px\] (1: none): removes specks smaller than it.
    pub open_kernel_px: i32,
    /// Smallest blob taken for a marker \[px^2\].
    pub min_area_px: f64,
    /// Largest blob taken for a marker \[px^2\].
    pub max_area_px: f64,
    /// Least roundness, 4 pi area / perimeter^2 (1 for a disc).
    pub min_circularity: f64,
    /// The base of the rod in the image \[px\]: the chain starts at the marker
    /// nearest to it (default: the middle of the left edge).
    pub base_px: Option<[f64; 2]>,
    /// With a camera set: the base's pixel in each camera, by the camera's
    /// name (`[base_px_by_camera] left = [u, v]`); a camera not named takes
    /// `base_px`.
    pub base_px_by_camera: std::collections::BTreeMap<String, [f64; 2]>,
    /// Search radius around a marker's predicted position \[px\].
    pub gate_px: f64,
    /// Extra search radius per frame a marker has been missing \[px\].
    pub gate_growth_px: f64,
    /// Search only around predicted positions (false: every frame in full).
    pub roi_tracking: bool,
}

impl Default for MarkerParams {
    fn default() -> MarkerParams {
        MarkerParams {
            count: 0,
            hue_ranges_deg: vec![[0.0, 20.0], [340.0, 360.0]],
            saturation_min: 0.4,
            value_min: 0.25,
            open_kernel_px: 3,
            min_area_px: 12.0,
            max_area_px: 20_000.0,
            // Low enough for motion-blurred and merged markers.
            min_circularity: 0.4,
            base_px: None,
            base_px_by_camera: Default::default(),
            gate_px: 30.0,
            gate_growth_px: 20.0,
            roi_tracking: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TrackError {
    #[error(transparent)]
    Config(#[from] session::ConfigFileError),
    #[error("OpenCV: {0}")]
    OpenCv(#[from] opencv::Error),
    /// An uncompressed video that cannot be read or written.
    #[error(transparent)]
    Avi(#[from] session::avi::AviError),
    #[error("{0}")]
    Input(String),
    /// A computation that did not succeed on valid input (a calibration
    /// that fails its checks).
    #[error("{0}")]
    Failed(String),
}

impl fault::Fault for TrackError {
    fn kind(&self) -> fault::Kind {
        match self {
            TrackError::OpenCv(_) => fault::Kind::Io,
            TrackError::Avi(e) => fault::Fault::kind(e),
            TrackError::Failed(_) => fault::Kind::Computation,
            _ => fault::Kind::Input,
        }
    }
}

impl MarkerParams {
    /// These parameters for the set's camera `name` (its own base pixel).
    pub fn for_camera(&self, name: &str) -> MarkerParams {
        MarkerParams { base_px: self.base_px_by_camera.get(name).copied().or(self.base_px), ..self.clone() }
    }

    pub fn load(path: &Path) -> Result<MarkerParams, TrackError> {
        let (p, _): (MarkerParams, _) = session::read_toml(path, "markers file")?;
        p.validate().map_err(|e| TrackError::Config(session::ConfigFileError::new(path, e.to_string())))?;
        Ok(p)
    }

    pub fn validate(&self) -> Result<(), TrackError> {
        let bad = |m: String| Err(TrackError::Input(m));
        if self.hue_ranges_deg.is_empty() {
            return bad("hue_ranges_deg: at least one range".into());
        }
        for r in &self.hue_ranges_deg {
            if !(0.0..=360.0).contains(&r[0]) || !(0.0..=360.0).contains(&r[1]) || r[0] > r[1] {
                return bad(format!("hue_ranges_deg: {r:?} is not a range within [0, 360]"));
            }
        }
        if !(0.0..=1.0).contains(&self.saturation_min) || !(0.0..=1.0).contains(&self.value_min) {
            return bad("saturation_min, value_min: must be within [0, 1]".into());
        }
        if !(self.min_area_px > 0.0 && self.max_area_px > self.min_area_px) {
            return bad("min_area_px, max_area_px: need 0 < min < max".into());
        }
        if !(0.0..=1.0).contains(&self.min_circularity) {
            return bad("min_circularity: must be within [0, 1]".into());
        }
        if !(self.gate_px > 0.0 && self.gate_growth_px >= 0.0) {
            return bad("gate_px must be positive and gate_growth_px non-negative".into());
        }
        if !(1..=31).contains(&self.open_kernel_px) {
            return bad("open_kernel_px: must be within 1..=31".into());
        }
        Ok(())
    }
}

/// One detected blob, in full-image pixel coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Blob {
    pub u_px: f64,
    pub v_px: f64,
    pub area_px: f64,
    pub circularity: f64,
}

/// Detection with reusable buffers (no allocation per frame once warm).
pub struct Detector {
    pub params: MarkerParams,
    colour: ColourTest,
    kernel: Mat,
    mask: Mat,
    opened: Mat,
    contours: Vector<Vector<Point>>,
}

impl Detector {
    pub fn new(params: MarkerParams) -> Result<Detector, TrackError> {
        params.validate()?;
        let k = params.open_kernel_px;
        let kernel = imgproc::get_structuring_element(imgproc::MORPH_ELLIPSE, Size::new(k, k), Point::new(-1, -1))?;
        Ok(Detector {
            colour: ColourTest {
                value_min: (params.value_min * 255.0).round() as i32,
                saturation_min_q10: (params.saturation_min * 1024.0).round() as i32,
                hue_ranges: params.hue_ranges_deg.iter().map(|r| [r[0] as f32, r[1] as f32]).collect(),
            },
            params,
            kernel,
            mask: Mat::default(),
            opened: Mat::default(),
            contours: Vector::new(),
        })
    }

    /// Binary mask (0/255) of marker-coloured pixels of `image` (BGR; may be
    /// a region of a larger image). One pass, equivalent to
    /// cvtColor(HSV) + inRange per hue range + bitwise_or up to OpenCV's
    /// 8-bit rounding at the bounds (hue in 2-degree steps), in exact
    /// arithmetic instead (tested on random images).
    fn threshold(&mut self, image: &impl MatTraitConst) -> Result<(), TrackError> {
        let (rows, cols) = (image.rows(), image.cols());
        if self.mask.rows() != rows || self.mask.cols() != cols {
            self.mask = Mat::new_rows_cols_with_default(rows, cols, core::CV_8UC1, core::Scalar::all(0.0))?;
        }
        let (vmin, smin) = (self.colour.value_min, self.colour.saturation_min_q10);
        for y in 0..rows {
            let src = image.at_row::<Vec3b>(y)?;
            let dst = self.mask.at_row_mut::<u8>(y)?;
            // Pass 1, branch-free (vectorises): bright and saturated enough.
            let mut any = 0u8;
            for (d, p) in dst.iter_mut().zip(src.iter()) {
                let (b, g, r) = (p[0] as i32, p[1] as i32, p[2] as i32);
                let v = b.max(g).max(r);
                let c = v - b.min(g).min(r);
                let ok = (v >= vmin) & (c * 1024 >= smin * v) & (c > 0);
                *d = (ok as u8).wrapping_neg();
                any |= *d;
            }
            // Pass 2, on the few candidates only: the hue.
            if any != 0 {
                for (d, p) in dst.iter_mut().zip(src.iter()) {
                    if *d != 0 && !self.colour.is_marker_colour(p) {
                        *d = 0;
                    }
                }
            }
        }
        Ok(())
    }

    /// Detects markers in `region` of `image` (full-image coordinates out).
    pub fn detect(&mut self, image: &Mat, region: Rect, out: &mut Vec<Blob>) -> Result<(), TrackError> {
        out.clear();
        let region = clip(region, image.cols(), image.rows());
        if region.width <= 0 || region.height <= 0 {
            return Ok(());
        }
        let roi = Mat::roi(image, region)?;
        self.threshold(&roi)?;
        let mask = if self.params.open_kernel_px > 1 {
            imgproc::morphology_ex(
                &self.mask,
                &mut self.opened,
                imgproc::MORPH_OPEN,
                &self.kernel,
                Point::new(-1, -1),
                1,
                core::BORDER_CONSTANT,
                core::Scalar::all(0.0),
            )?;
            &self.opened
        } else {
            &self.mask
        };
        self.contours.clear();
        imgproc::find_contours(mask, &mut self.contours, imgproc::RETR_EXTERNAL, imgproc::CHAIN_APPROX_NONE, Point::new(0, 0))?;
        let mut candidates: Vec<(Rect, Blob)> = vec![];
        for contour in self.contours.iter() {
            let m = imgproc::moments(&contour, false)?;
            // Pixel count of the blob: the contour area runs through pixel
            // centres, so add half the perimeter (a one-pixel-wide rim).
            let perimeter = imgproc::arc_length(&contour, true)?;
            let area = m.m00 + perimeter / 2.0 + 1.0;
            if area < self.params.min_area_px || area > self.params.max_area_px || m.m00 <= 0.0 {
                continue;
            }
            let circularity = (4.0 * std::f64::consts::PI * m.m00 / (perimeter * perimeter)).min(1.0);
            if circularity < self.params.min_circularity {
                continue;
            }
            let bbox = imgproc::bounding_rect(&contour)?;
            candidates.push((bbox, Blob { u_px: m.m10 / m.m00, v_px: m.m01 / m.m00, area_px: area, circularity }));
        }
        for (i, (bbox, blob)) in candidates.iter().enumerate() {
            let window = clip(Rect::new(bbox.x - 3, bbox.y - 3, bbox.width + 6, bbox.height + 6), region.width, region.height);
            let crowded = candidates.iter().enumerate().any(|(j, (b, _))| j != i && intersects(window, *b));
            let (u, v) = if crowded { None } else { self.weighted_centroid(&roi, window)? }.unwrap_or((blob.u_px, blob.v_px));
            out.push(Blob { u_px: u + region.x as f64, v_px: v + region.y as f64, ..*blob });
        }
        Ok(())
    }

    /// Centroid weighted by chroma above the window's background chroma:
    /// edge pixels count with their coverage, which makes the centroid
    /// sub-pixel (binary moments are quantised to whole pixels).
    fn weighted_centroid(&self, image: &impl MatTraitConst, w: Rect) -> Result<Option<(f64, f64)>, TrackError> {
        let chroma = |p: &Vec3b| -> f64 {
            let (b, g, r) = (p[0] as i32, p[1] as i32, p[2] as i32);
            (b.max(g).max(r) - b.min(g).min(r)) as f64
        };
        // Background level: mean chroma on the window's rim.
        let (mut rim, mut n) = (0.0, 0.0);
        for y in w.y..w.y + w.height {
            let row = image.at_row::<Vec3b>(y)?;
            let pixels = &row[w.x as usize..(w.x + w.width) as usize];
            if y == w.y || y == w.y + w.height - 1 {
                rim += pixels.iter().map(chroma).sum::<f64>();
                n += pixels.len() as f64;
            } else {
                rim += chroma(&pixels[0]) + chroma(&pixels[pixels.len() - 1]);
                n += 2.0;
            }
        }
        let floor = rim / n.max(1.0) + 4.0;
        let (mut sw, mut su, mut sv) = (0.0, 0.0, 0.0);
        for y in w.y..w.y + w.height {
            let row = image.at_row::<Vec3b>(y)?;
            for x in w.x..w.x + w.width {
                let p = &row[x as usize];
                let weight = chroma(p) - floor;
                if weight > 0.0 && self.colour.hue_ok_or_weak(p) {
                    sw += weight;
                    su += weight * x as f64;
                    sv += weight * y as f64;
                }
            }
        }
        Ok((sw > 0.0).then(|| (su / sw, sv / sw)))
    }
}

/// The colour threshold, in integer arithmetic where it can be.
#[derive(Clone, Debug)]
struct ColourTest {
    value_min: i32,
    /// saturation_min in 1/1024.
    saturation_min_q10: i32,
    hue_ranges: Vec<[f32; 2]>,
}

impl ColourTest {
    /// True if a BGR pixel has the marker colour.
    #[inline]
    fn is_marker_colour(&self, p: &Vec3b) -> bool {
        let (b, g, r) = (p[0] as i32, p[1] as i32, p[2] as i32);
        let v = b.max(g).max(r);
        let c = v - b.min(g).min(r);
        // Cheap rejections first: dark or grey pixels are most of a frame.
        if v < self.value_min || c * 1024 < self.saturation_min_q10 * v || c == 0 {
            return false;
        }
        let c = c as f32;
        let mut h = if v == r {
            60.0 * (g - b) as f32 / c
        } else if v == g {
            120.0 + 60.0 * (b - r) as f32 / c
        } else {
            240.0 + 60.0 * (r - g) as f32 / c
        };
        if h < 0.0 {
            h += 360.0;
        }
        self.hue_ranges.iter().any(|r| h >= r[0] && h <= r[1])
    }

    /// Pixels of another strong colour do not count (a weakly coloured edge
    /// pixel has an unreliable hue and counts).
    fn hue_ok_or_weak(&self, p: &Vec3b) -> bool {
        let (b, g, r) = (p[0] as i32, p[1] as i32, p[2] as i32);
        let v = b.max(g).max(r);
        let c = v - b.min(g).min(r);
        c * 1024 < self.saturation_min_q10 * v || self.is_marker_colour(p)
    }
}

/// Exact hue \[deg, 0-360\], saturation and value (0-1) of a BGR pixel (the
/// detector's threshold works in integers; this is its reference).
pub fn exact_hsv(p: &Vec3b) -> (f64, f64, f64) {
    let (b, g, r) = (p[0] as f64, p[1] as f64, p[2] as f64);
    let v = b.max(g).max(r);
    let c = v - b.min(g).min(r);
    let h = if c == 0.0 {
        0.0
    } else if v == r {
        (60.0 * (g - b) / c).rem_euclid(360.0)
    } else if v == g {
        120.0 + 60.0 * (b - r) / c
    } else {
        240.0 + 60.0 * (r - g) / c
    };
    (h, if v > 0.0 { c / v } else { 0.0 }, v / 255.0)
}

pub fn clip(r: Rect, width: i32, height: i32) -> Rect {
    let (x0, y0) = (r.x.max(0), r.y.max(0));
    let (x1, y1) = ((r.x + r.width).min(width), (r.y + r.height).min(height));
    Rect::new(x0, y0, (x1 - x0).max(0), (y1 - y0).max(0))
}

/// True if the rectangles share a pixel.
pub fn intersects(a: Rect, b: Rect) -> bool {
    a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

/// Copies a BGR byte buffer into a new 8UC3 Mat.
pub fn mat_from_bgr(width: usize, height: usize, bgr: &[u8]) -> Result<Mat, TrackError> {
    let mut m = Mat::new_rows_cols_with_default(height as i32, width as i32, core::CV_8UC3, core::Scalar::all(0.0))?;
    m.data_bytes_mut()?.copy_from_slice(bgr);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The one-pass threshold against OpenCV's cvtColor(BGR2HSV) + inRange
    /// per hue range + bitwise_or, on random images: the masks agree except
    /// where OpenCV's 8-bit rounding (hue in 2-degree steps, saturation in
    /// 1/255) puts a pixel on the other side of a bound.
    #[test]
    fn threshold_equals_cvtcolor_hsv_and_inrange_on_random_images() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let param_sets =
            [MarkerParams::default(), MarkerParams { hue_ranges_deg: vec![[90.0, 150.0]], saturation_min: 0.55, value_min: 0.4, ..MarkerParams::default() }];
        for params in param_sets {
            let mut det = Detector::new(params.clone()).unwrap();
            let (rows, cols) = (240, 320);
            let mut img = Mat::new_rows_cols_with_default(rows, cols, core::CV_8UC3, core::Scalar::all(0.0)).unwrap();
            for y in 0..rows {
                for p in img.at_row_mut::<Vec3b>(y).unwrap() {
                    *p = Vec3b::from([rng.gen(), rng.gen(), rng.gen()]);
                }
            }
            det.threshold(&img).unwrap();
            // OpenCV's way.
            let mut hsv = Mat::default();
            imgproc::cvt_color_def(&img, &mut hsv, imgproc::COLOR_BGR2HSV).unwrap();
            let mut reference = Mat::new_rows_cols_with_default(rows, cols, core::CV_8UC1, core::Scalar::all(0.0)).unwrap();
            for r in &params.hue_ranges_deg {
                let lower = core::Scalar::new(r[0] / 2.0, (params.saturation_min * 255.0).ceil(), (params.value_min * 255.0).round(), 0.0);
                let upper = core::Scalar::new(r[1] / 2.0, 255.0, 255.0, 0.0);
                let mut part = Mat::default();
                core::in_range(&hsv, &lower, &upper, &mut part).unwrap();
                let mut acc = Mat::default();
                core::bitwise_or_def(&reference, &part, &mut acc).unwrap();
                reference = acc;
            }
            let (mut positives, mut differ, mut off_bound) = (0usize, 0usize, vec![]);
            for y in 0..rows {
                let (ours, theirs, px) = (det.mask.at_row::<u8>(y).unwrap(), reference.at_row::<u8>(y).unwrap(), img.at_row::<Vec3b>(y).unwrap());
                for x in 0..cols as usize {
                    positives += (ours[x] != 0) as usize;
                    if (ours[x] != 0) == (theirs[x] != 0) {
                        continue;
                    }
                    differ += 1;
                    // Exact hue, saturation and value (0-255) of the pixel.
                    let (b, g, r) = (px[x][0] as f64, px[x][1] as f64, px[x][2] as f64);
                    let (h, s, v) = exact_hsv(&px[x]);
                    let v = v * 255.0;
                    // OpenCV's 8-bit hue is in 2-degree steps (fixed-point rounding): one step.
                    let near_hue = params.hue_ranges_deg.iter().flatten().any(|bound| (h - bound).abs() <= 2.0 || (h - bound).abs() >= 358.0);
                    let near_sat = (s - params.saturation_min).abs() <= 1.0 / 255.0;
                    let near_val = (v - params.value_min * 255.0).abs() <= 1.0;
                    if !(near_hue || near_sat || near_val) {
                        off_bound.push((x, y, [b, g, r], h, s, v));
                    }
                }
            }
            let n = (rows * cols) as usize;
            println!("{:?}: {positives} marker pixels, {differ} differ from OpenCV, all at a bound", params.hue_ranges_deg);
            assert!(positives > n / 50, "the test needs marker pixels: {positives}");
            assert!(off_bound.is_empty(), "{} pixels differ away from any bound: {:?}", off_bound.len(), &off_bound[..off_bound.len().min(5)]);
            assert!(differ < n / 100, "{differ} of {n} pixels differ");
        }
    }
}
