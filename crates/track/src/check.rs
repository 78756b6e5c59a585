//! Looking at what the tracker will see before recording: a few frames of
//! the camera, the markers detected with the tracking settings, and for
//! each marker how surely it is found (frames found, blob area, how far its
//! colour is inside the threshold, how sharp it is), with a one-line
//! verdict that names a marker that is missing.

use crate::detect::{exact_hsv as hsv, Blob, Detector, MarkerParams, TrackError};
use crate::tracker::order_chain;
use opencv::core::{self, Mat, Point, Rect, Scalar, Vec3b};
use opencv::imgproc;
use opencv::prelude::*;

/// A colour this close to the threshold (saturation or value, 0-1) is lost
/// by a small change of light.
pub const MIN_COLOUR_MARGIN: f64 = 0.05;
/// A hue this close to the edge of its range \[deg\] is lost likewise.
pub const MIN_HUE_MARGIN_DEG: f64 = 3.0;

/// One marker over the frames looked at.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerLook {
    /// Index along the chain (0 = nearest the base).
    pub index: usize,
    pub found_frames: usize,
    /// Means over the frames it was found in (NaN when never found).
    pub area_px: f64,
    /// Saturation and value above `saturation_min`, `value_min` (0-1).
    pub saturation_margin: f64,
    pub value_margin: f64,
    /// Hue distance to the edge of its accepted range \[deg\].
    pub hue_margin_deg: f64,
    /// Variance of the Laplacian of the grey image around the marker
    /// (grey levels^2; higher is sharper).
    pub sharpness: f64,
    /// Where it was last seen \[px\].
    pub u_px: f64,
    pub v_px: f64,
}

/// The outcome of a check.
#[derive(Clone, Debug)]
pub struct CameraCheck {
    pub frames: usize,
    /// Markers expected (markers.toml's `count`, else the most found in a frame).
    pub expected: usize,
    /// False when `count` is 0: a missing marker cannot be named.
    pub count_known: bool,
    pub markers: Vec<MarkerLook>,
    /// Most marker-coloured blobs beyond `expected` in one frame.
    pub extra_blobs: usize,
    /// Everything found wrong, worst first (empty: all well).
    pub problems: Vec<String>,
}

impl CameraCheck {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// One line: "ok: ..." or the problems.
    pub fn verdict(&self) -> String {
        if self.ok() && !self.count_known {
            format!(
                "ok: {} markers found in each of {} frames (the markers file sets no count: set it, so that a missing marker is named)",
                self.expected, self.frames
            )
        } else if self.ok() {
            format!("ok: all {} markers found in each of {} frames, colours clear of the thresholds", self.expected, self.frames)
        } else {
            self.problems.join("; ")
        }
    }
}

/// Places the `found` blobs (ordered from the base) on `expected` marker
/// indices. Markers are about evenly spaced along a rod, so a gap of k
/// spacings between two found markers holds k - 1 missing ones; what is
/// still missing is put at the tip end.
pub fn assign_indices(found: &[Blob], expected: usize) -> Vec<Option<usize>> {
    let mut slots = vec![None; expected];
    let m = found.len().min(expected);
    let mut missing = expected - m;
    let mut extra_after = vec![0usize; m];
    if m >= 2 && missing > 0 {
        let d: Vec<f64> = found[..m].windows(2).map(|w| (w[1].u_px - w[0].u_px).hypot(w[1].v_px - w[0].v_px)).collect();
        let mut sorted = d.clone();
        sorted.sort_by(f64::total_cmp);
        let spacing = sorted[sorted.len() / 2];
        // Largest gaps first, one missing marker per whole extra spacing.
        let mut order: Vec<usize> = (0..d.len()).collect();
        order.sort_by(|a, b| d[*b].total_cmp(&d[*a]));
        for i in order {
            let k = ((d[i] / spacing).round() as usize).saturating_sub(1).min(missing);
            extra_after[i] = k;
            missing -= k;
        }
    }
    let mut slot = 0;
    for (j, extra) in extra_after.iter().enumerate() {
        slots[slot] = Some(j);
        slot += 1 + extra;
    }
    slots
}

/// Distance from `h` to the nearest hue outside every range \[deg\]
/// (negative: how far outside).
fn hue_margin_deg(h: f64, ranges: &[[f64; 2]]) -> f64 {
    let inside = |x: f64| {
        let x = x.rem_euclid(360.0);
        ranges.iter().any(|r| x >= r[0] && x <= r[1])
    };
    let step = 0.25;
    let wanted = inside(h);
    let mut d = 0.0;
    while d <= 180.0 {
        if inside(h + d) != wanted || inside(h - d) != wanted {
            return if wanted { d } else { -d };
        }
        d += step;
    }
    if wanted {
        180.0
    } else {
        -180.0
    }
}

/// Colour margins over the disc of half the blob's radius around its centre.
fn colour_margins(image: &Mat, blob: &Blob, params: &MarkerParams) -> Result<(f64, f64, f64), TrackError> {
    let r = 0.5 * (blob.area_px / std::f64::consts::PI).sqrt();
    let (mut s_sum, mut v_sum, mut h_sum, mut n) = (0.0, 0.0, 0.0, 0.0);
    let (y0, y1) = ((blob.v_px - r).floor().max(0.0) as i32, ((blob.v_px + r).ceil() as i32).min(image.rows() - 1));
    let (x0, x1) = ((blob.u_px - r).floor().max(0.0) as i32, ((blob.u_px + r).ceil() as i32).min(image.cols() - 1));
    for y in y0..=y1 {
        let row = image.at_row::<Vec3b>(y)?;
        for x in x0..=x1 {
            if (x as f64 - blob.u_px).hypot(y as f64 - blob.v_px) > r.max(0.75) {
                continue;
            }
            let (h, s, v) = hsv(&row[x as usize]);
            s_sum += s;
            v_sum += v;
            h_sum += hue_margin_deg(h, &params.hue_ranges_deg);
            n += 1.0;
        }
    }
    if n == 0.0 {
        return Ok((f64::NAN, f64::NAN, f64::NAN));
    }
    Ok((s_sum / n - params.saturation_min, v_sum / n - params.value_min, h_sum / n))
}

/// Variance of the Laplacian on the grey square around a blob.
fn sharpness(grey: &Mat, blob: &Blob) -> Result<f64, TrackError> {
    let half = (2.0 * (blob.area_px / std::f64::consts::PI).sqrt()).max(4.0);
    let window = crate::detect::clip(
        Rect::new((blob.u_px - half) as i32, (blob.v_px - half) as i32, (2.0 * half) as i32 + 1, (2.0 * half) as i32 + 1),
        grey.cols(),
        grey.rows(),
    );
    if window.width < 3 || window.height < 3 {
        return Ok(f64::NAN);
    }
    let patch = Mat::roi(grey, window)?;
    let mut lap = Mat::default();
    imgproc::laplacian(&patch, &mut lap, core::CV_64F, 3, 1.0, 0.0, core::BORDER_REPLICATE)?;
    let (mut mean, mut std) = (Mat::default(), Mat::default());
    core::mean_std_dev(&lap, &mut mean, &mut std, &core::no_array())?;
    let s = *std.at_2d::<f64>(0, 0)?;
    Ok(s * s)
}

/// Checks `frames` (BGR) with the tracking settings `params`.
pub fn check(frames: &[Mat], params: &MarkerParams) -> Result<CameraCheck, TrackError> {
    if frames.is_empty() {
        return Err(TrackError::Input("the camera gave no frames to check".into()));
    }
    let mut detector = Detector::new(params.clone())?;
    let mut per_frame: Vec<Vec<Blob>> = vec![];
    for image in frames {
        let mut blobs = vec![];
        detector.detect(image, Rect::new(0, 0, image.cols(), image.rows()), &mut blobs)?;
        let base = params.base_px.unwrap_or([0.0, image.rows() as f64 / 2.0]);
        per_frame.push(order_chain(&blobs, base, 0));
    }
    let count_known = params.count > 0;
    let expected = if count_known { params.count } else { per_frame.iter().map(Vec::len).max().unwrap_or(0) };
    let mut looks: Vec<MarkerLook> = (0..expected)
        .map(|index| MarkerLook {
            index,
            found_frames: 0,
            area_px: 0.0,
            saturation_margin: 0.0,
            value_margin: 0.0,
            hue_margin_deg: 0.0,
            sharpness: 0.0,
            u_px: f64::NAN,
            v_px: f64::NAN,
        })
        .collect();
    let mut extra_blobs = 0;
    let mut grey = Mat::default();
    for (image, chain) in frames.iter().zip(&per_frame) {
        extra_blobs = extra_blobs.max(chain.len().saturating_sub(expected));
        imgproc::cvt_color_def(image, &mut grey, imgproc::COLOR_BGR2GRAY)?;
        for (look, slot) in looks.iter_mut().zip(assign_indices(chain, expected)) {
            let Some(j) = slot else { continue };
            let blob = chain[j];
            let (s, v, h) = colour_margins(image, &blob, params)?;
            look.found_frames += 1;
            look.area_px += blob.area_px;
            look.saturation_margin += s;
            look.value_margin += v;
            look.hue_margin_deg += h;
            look.sharpness += sharpness(&grey, &blob)?;
            (look.u_px, look.v_px) = (blob.u_px, blob.v_px);
        }
    }
    for look in &mut looks {
        let n = look.found_frames as f64;
        for x in [&mut look.area_px, &mut look.saturation_margin, &mut look.value_margin, &mut look.hue_margin_deg, &mut look.sharpness] {
            *x = if n > 0.0 { *x / n } else { f64::NAN };
        }
    }
    let n_frames = frames.len();
    let mut problems = vec![];
    if expected == 0 {
        problems
            .push("no marker found: check hue_ranges_deg, saturation_min, value_min, min_area_px in the markers file, the light and the exposure".to_string());
    }
    let never: Vec<usize> = looks.iter().filter(|l| l.found_frames == 0).map(|l| l.index).collect();
    if !never.is_empty() {
        let names: Vec<String> = never.iter().map(|i| i.to_string()).collect();
        let plural = if never.len() > 1 { "s" } else { "" };
        problems.push(format!(
            "marker{plural} {} of 0..{} not found in any of {n_frames} frames (covered, out of view, or its colour outside the markers file's thresholds)",
            names.join(", "),
            expected - 1
        ));
    }
    for l in looks.iter().filter(|l| l.found_frames > 0 && l.found_frames < n_frames) {
        problems.push(format!(
            "marker {} found in only {} of {n_frames} frames (flickering: light, auto exposure or a marker at the edge of view)",
            l.index, l.found_frames
        ));
    }
    for l in looks.iter().filter(|l| l.found_frames > 0) {
        let (what, margin) = if l.saturation_margin < l.value_margin { ("saturation_min", l.saturation_margin) } else { ("value_min", l.value_margin) };
        if margin < MIN_COLOUR_MARGIN {
            problems.push(format!("marker {}'s colour is only {margin:.3} above {what} (a change of light will lose it)", l.index));
        } else if l.hue_margin_deg < MIN_HUE_MARGIN_DEG {
            problems.push(format!("marker {}'s hue is only {:.1} deg inside hue_ranges_deg", l.index, l.hue_margin_deg));
        }
    }
    if extra_blobs > 0 && count_known {
        problems.push(format!("{extra_blobs} marker-coloured blob(s) beyond the {expected} markers in a frame (something of the markers' colour in view?)"));
    }
    Ok(CameraCheck { frames: n_frames, expected, count_known, markers: looks, extra_blobs, problems })
}

/// The last frame with each marker circled and numbered (green: found in
/// every frame, yellow: in some) and the verdict written across the top.
pub fn annotate(frame: &Mat, result: &CameraCheck) -> Result<Mat, TrackError> {
    let mut out = frame.clone();
    for l in &result.markers {
        if !l.u_px.is_finite() {
            continue;
        }
        let colour = if l.found_frames == result.frames { Scalar::new(0.0, 255.0, 0.0, 0.0) } else { Scalar::new(0.0, 255.0, 255.0, 0.0) };
        let c = Point::new(l.u_px.round() as i32, l.v_px.round() as i32);
        let r = (l.area_px / std::f64::consts::PI).sqrt().max(3.0) as i32 + 4;
        imgproc::circle(&mut out, c, r, colour, 2, imgproc::LINE_AA, 0)?;
        imgproc::put_text(
            &mut out,
            &l.index.to_string(),
            Point::new(c.x + r + 2, c.y - r),
            imgproc::FONT_HERSHEY_SIMPLEX,
            0.6,
            colour,
            2,
            imgproc::LINE_AA,
            false,
        )?;
    }
    // A marker never found between two found ones: where it should be, in red.
    let red = Scalar::new(0.0, 0.0, 255.0, 0.0);
    let seen = |l: &&MarkerLook| l.u_px.is_finite();
    for l in result.markers.iter().filter(|l| !l.u_px.is_finite()) {
        let before = result.markers[..l.index].iter().rev().find(seen);
        let after = result.markers[l.index + 1..].iter().find(seen);
        if let (Some(a), Some(b)) = (before, after) {
            let t = (l.index - a.index) as f64 / (b.index - a.index) as f64;
            let c = Point::new((a.u_px + t * (b.u_px - a.u_px)).round() as i32, (a.v_px + t * (b.v_px - a.v_px)).round() as i32);
            imgproc::circle(&mut out, c, 12, red, 2, imgproc::LINE_AA, 0)?;
            imgproc::put_text(
                &mut out,
                &format!("{}?", l.index),
                Point::new(c.x + 14, c.y - 12),
                imgproc::FONT_HERSHEY_SIMPLEX,
                0.6,
                red,
                2,
                imgproc::LINE_AA,
                false,
            )?;
        }
    }
    let colour = if result.ok() { Scalar::new(0.0, 200.0, 0.0, 0.0) } else { red };
    // Wrapped at words, so that a long verdict stays in the image.
    let max_chars = (out.cols() as usize / 8).max(40);
    let mut lines: Vec<String> = vec![String::new()];
    for word in result.verdict().split(' ') {
        let line = lines.last_mut().expect("a line");
        if !line.is_empty() && line.len() + 1 + word.len() > max_chars {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    for (i, line) in lines.iter().enumerate() {
        imgproc::put_text(&mut out, line, Point::new(8, 20 + 18 * i as i32), imgproc::FONT_HERSHEY_SIMPLEX, 0.45, colour, 1, imgproc::LINE_AA, false)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(u: f64) -> Blob {
        Blob { u_px: u, v_px: 100.0, area_px: 50.0, circularity: 1.0 }
    }

    #[test]
    fn a_gap_of_two_spacings_holds_the_missing_marker() {
        let found: Vec<Blob> = [10.0, 40.0, 100.0, 130.0, 160.0].into_iter().map(blob).collect();
        assert_eq!(assign_indices(&found, 6), vec![Some(0), Some(1), None, Some(2), Some(3), Some(4)]);
    }

    #[test]
    fn without_a_gap_the_missing_marker_is_at_the_tip() {
        let found: Vec<Blob> = [10.0, 40.0, 70.0].into_iter().map(blob).collect();
        assert_eq!(assign_indices(&found, 4), vec![Some(0), Some(1), Some(2), None]);
        assert_eq!(assign_indices(&found, 3), vec![Some(0), Some(1), Some(2)]);
        assert_eq!(assign_indices(&[], 2), vec![None, None]);
    }

    fn frames(look: crate::synth::Look, n: usize) -> Vec<Mat> {
        let (camera, plane) = crate::synth::demo_camera();
        let cfg = crate::sequence::SequenceConfig { frames: n, look, ..Default::default() };
        let mut seq = crate::sequence::Sequence::new(camera, plane, cfg);
        (0..n).map(|k| seq.render(k).to_mat().unwrap()).collect()
    }

    #[test]
    fn clear_markers_pass_and_faded_ones_are_named_before_they_are_lost() {
        let params = MarkerParams { count: 6, ..MarkerParams::default() };
        let clear = check(&frames(crate::synth::Look::default(), 3), &params).unwrap();
        assert!(clear.ok(), "{}", clear.verdict());
        assert!(clear.markers.iter().all(|l| l.found_frames == 3 && l.saturation_margin > 0.3 && l.hue_margin_deg > 10.0), "{:?}", clear.markers);
        // Saturation 62/140 = 0.443, just above saturation_min 0.4: found, but named.
        let look = crate::synth::Look { marker_bgr: [88.0, 78.0, 140.0], noise_sigma: 1.0, ..Default::default() };
        let faded = check(&frames(look, 3), &params).unwrap();
        assert!(!faded.ok());
        assert!(faded.verdict().contains("above saturation_min"), "{}", faded.verdict());
    }

    #[test]
    fn hue_margins_count_across_zero_for_red() {
        let red = [[0.0, 20.0], [340.0, 360.0]];
        assert!((hue_margin_deg(0.0, &red) - 20.25).abs() < 0.3, "{}", hue_margin_deg(0.0, &red));
        assert!((hue_margin_deg(350.0, &red) - 10.25).abs() < 0.3);
        assert!((hue_margin_deg(30.0, &red) + 10.0).abs() < 0.3);
        let (h, s, v) = hsv(&Vec3b::from([0, 0, 200]));
        assert!(h.abs() < 1e-12 && (s - 1.0).abs() < 1e-12 && (v - 200.0 / 255.0).abs() < 1e-12);
    }
}
