//! One frame as a live or replay view shows it: the markers detected with
//! the tracking settings (or read from a marker table), circled and
//! numbered from base to tip, with a warning for a marker that is missing
//! or two that merged, encoded as a JPEG for a browser.

use crate::check::assign_indices;
use crate::detect::{Blob, Detector, MarkerParams, TrackError};
use crate::source::{FrameSource, Frames};
use crate::tracker::order_chain;
pub use opencv::core::Mat;
use opencv::core::{Point, Rect, Scalar, Vector};
use opencv::prelude::*;
use opencv::{imgcodecs, imgproc};
use std::path::{Path, PathBuf};

/// A blob this much larger than the median marker, where one is missing,
/// is two markers seen as one.
const MERGED_AREA_RATIO: f64 = 1.6;
/// JPEG quality of a preview (a look, not a measurement).
const JPEG_QUALITY: i32 = 80;

/// A marker in a frame, by its index along the chain (0 = nearest the base).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenMarker {
    pub index: usize,
    pub u_px: f64,
    pub v_px: f64,
}

/// What one look at a frame found.
#[derive(Clone, Debug)]
pub struct Look {
    pub markers: Vec<SeenMarker>,
    /// Markers expected (markers.toml's `count`, else as many as found).
    pub expected: usize,
    /// A missing marker or two merged, named by index.
    pub warnings: Vec<String>,
}

/// Detects markers in frames with the tracking settings.
pub struct Previewer {
    detector: Detector,
    params: MarkerParams,
    blobs: Vec<Blob>,
}

impl Previewer {
    pub fn new(params: MarkerParams) -> Result<Previewer, TrackError> {
        Ok(Previewer { detector: Detector::new(params.clone())?, params, blobs: vec![] })
    }

    /// The markers in `frame` (BGR), numbered from the base.
    pub fn look(&mut self, frame: &Mat) -> Result<Look, TrackError> {
        self.blobs.clear();
        self.detector.detect(frame, Rect::new(0, 0, frame.cols(), frame.rows()), &mut self.blobs)?;
        let base = self.params.base_px.unwrap_or([0.0, frame.rows() as f64 / 2.0]);
        let chain = order_chain(&self.blobs, base, 0);
        let expected = if self.params.count > 0 { self.params.count } else { chain.len() };
        let slots = assign_indices(&chain, expected);
        let markers: Vec<SeenMarker> =
            slots.iter().enumerate().filter_map(|(index, s)| s.map(|j| SeenMarker { index, u_px: chain[j].u_px, v_px: chain[j].v_px })).collect();
        let mut warnings = vec![];
        let missing: Vec<usize> = slots.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| i).collect();
        if !missing.is_empty() {
            let mut areas: Vec<f64> = chain.iter().map(|b| b.area_px).collect();
            areas.sort_by(f64::total_cmp);
            let median = areas.get(areas.len() / 2).copied().unwrap_or(f64::NAN);
            // A large blob next to a missing slot: the two merged.
            for &m in &missing {
                let neighbour = [m.checked_sub(1), Some(m + 1)]
                    .into_iter()
                    .flatten()
                    .find(|&i| slots.get(i).copied().flatten().is_some_and(|j| chain[j].area_px > MERGED_AREA_RATIO * median));
                match neighbour {
                    Some(n) => warnings.push(format!("markers {} and {} merged (one blob {:.1}x the median area)", n.min(m), n.max(m), {
                        let j = slots[n].expect("found");
                        chain[j].area_px / median
                    })),
                    None => warnings.push(format!("marker {m} of 0..{} missing", expected - 1)),
                }
            }
        }
        if chain.len() > expected && self.params.count > 0 {
            warnings.push(format!("{} marker-coloured blob(s) beyond the {expected} markers", chain.len() - expected));
        }
        Ok(Look { markers, expected, warnings })
    }
}

/// `frame` with `markers` circled and numbered (green; red where a warning
/// names none), as a JPEG.
pub fn jpeg_with_markers(frame: &Mat, markers: &[SeenMarker]) -> Result<Vec<u8>, TrackError> {
    let mut out = frame.clone();
    let green = Scalar::new(0.0, 220.0, 0.0, 0.0);
    // Labels readable when a large frame is shown small.
    let scale = (frame.cols() as f64 / 640.0).max(1.0);
    let (radius, thick, font) = ((10.0 * scale) as i32, (2.0 * scale).round() as i32, 0.6 * scale);
    for m in markers.iter().filter(|m| m.u_px.is_finite() && m.v_px.is_finite()) {
        let c = Point::new(m.u_px.round() as i32, m.v_px.round() as i32);
        imgproc::circle(&mut out, c, radius, green, thick, imgproc::LINE_AA, 0)?;
        imgproc::put_text(
            &mut out,
            &m.index.to_string(),
            Point::new(c.x + radius + 2, c.y - radius),
            imgproc::FONT_HERSHEY_SIMPLEX,
            font,
            green,
            thick,
            imgproc::LINE_AA,
            false,
        )?;
    }
    let mut buf = Vector::<u8>::new();
    let params = Vector::<i32>::from_slice(&[imgcodecs::IMWRITE_JPEG_QUALITY, JPEG_QUALITY]);
    imgcodecs::imencode(".jpg", &out, &mut buf, &params)?;
    Ok(buf.to_vec())
}

/// A video's frames by index, decoded forward (a step back reopens the
/// file): what a replay's slider asks for.
pub struct VideoFrames {
    path: PathBuf,
    source: FrameSource,
    next: usize,
    frame: Mat,
}

impl VideoFrames {
    pub fn open(path: &Path) -> Result<VideoFrames, TrackError> {
        Ok(VideoFrames { path: path.to_path_buf(), source: FrameSource::open(path)?, next: 0, frame: Mat::default() })
    }

    /// Frame `k` (None: past the end).
    pub fn frame(&mut self, k: usize) -> Result<Option<&Mat>, TrackError> {
        if k + 1 == self.next && !self.frame.empty() {
            return Ok(Some(&self.frame));
        }
        if k < self.next {
            self.source = FrameSource::open(&self.path)?;
            self.next = 0;
        }
        while self.next <= k {
            if !self.source.read(&mut self.frame)? {
                return Ok(None);
            }
            self.next += 1;
        }
        Ok(Some(&self.frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opencv::core::{Scalar, CV_8UC3};

    /// A grey frame with red discs at `centres` (radius 6 px).
    fn frame(centres: &[(i32, i32)]) -> Mat {
        let mut m = Mat::new_rows_cols_with_default(240, 640, CV_8UC3, Scalar::new(120.0, 120.0, 120.0, 0.0)).unwrap();
        for &(u, v) in centres {
            imgproc::circle(&mut m, Point::new(u, v), 6, Scalar::new(0.0, 0.0, 230.0, 0.0), -1, imgproc::LINE_8, 0).unwrap();
        }
        m
    }

    fn looked(centres: &[(i32, i32)]) -> Look {
        Previewer::new(MarkerParams { count: 5, ..MarkerParams::default() }).unwrap().look(&frame(centres)).unwrap()
    }

    #[test]
    fn markers_are_numbered_from_the_base_and_a_missing_or_merged_one_is_named() {
        // The base is at the left edge's middle: numbered left to right.
        let all = looked(&[(500, 130), (100, 120), (300, 125), (200, 122), (400, 128)]);
        let order: Vec<(usize, i32)> = all.markers.iter().map(|m| (m.index, m.u_px.round() as i32)).collect();
        assert_eq!(order, vec![(0, 100), (1, 200), (2, 300), (3, 400), (4, 500)]);
        assert!(all.warnings.is_empty(), "{:?}", all.warnings);
        // The tip marker gone.
        let missing = looked(&[(100, 120), (200, 122), (300, 125), (400, 128)]);
        assert_eq!(missing.warnings, vec!["marker 4 of 0..4 missing".to_string()]);
        // Markers 2 and 3 touching: one blob where two were.
        let merged = looked(&[(100, 120), (200, 122), (300, 125), (309, 125), (500, 130)]);
        assert_eq!(merged.markers.len(), 4);
        assert!(merged.warnings.iter().any(|w| w.starts_with("markers 2 and 3 merged")), "{:?}", merged.warnings);
        // The JPEG decodes to the frame's size.
        let jpeg = jpeg_with_markers(&frame(&[(100, 120)]), &all.markers).unwrap();
        let back = imgcodecs::imdecode(&Vector::<u8>::from_slice(&jpeg), imgcodecs::IMREAD_COLOR).unwrap();
        assert_eq!((back.cols(), back.rows()), (640, 240));
    }
}
