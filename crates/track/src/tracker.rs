//! Ordering and frame-to-frame tracking. The first frame orders the markers
//! as a chain from the one nearest the base point; later frames predict each
//! marker with constant velocity, search a gate around the prediction (only
//! there, with ROI tracking), and associate blobs to markers one-to-one,
//! nearest pairs first. A marker without a blob in its gate is MISSING (its
//! gate grows while it is missing); two markers whose predictions fall on one
//! large blob are MERGED; a marker found again is REACQUIRED with the same
//! identity. Identities are never reassigned silently.

use crate::detect::{clip, intersects, Blob, Detector, MarkerParams, TrackError};
use opencv::core::{Mat, Rect};
use opencv::prelude::*;
use session::flags;

/// A marker in one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackedMarker {
    pub u_px: f64,
    pub v_px: f64,
    pub area_px: f64,
    pub flags: u32,
}

#[derive(Clone, Debug)]
struct MarkerState {
    pos: [f64; 2],
    vel: [f64; 2],
    area_px: f64,
    missing_frames: u32,
}

pub struct Tracker {
    detector: Detector,
    markers: Vec<MarkerState>,
    blobs: Vec<Blob>,
    region_blobs: Vec<Blob>,
}

fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// Orders blobs as a chain: the one nearest `base`, then repeatedly the
/// nearest unused one to the chain's end. Takes `count` (0: all).
pub fn order_chain(blobs: &[Blob], base: [f64; 2], count: usize) -> Vec<Blob> {
    let mut left: Vec<Blob> = blobs.to_vec();
    let mut chain = vec![];
    let mut end = base;
    let n = if count == 0 { blobs.len() } else { count.min(blobs.len()) };
    while chain.len() < n {
        let (i, _) = left.iter().enumerate().map(|(i, b)| (i, dist(end, [b.u_px, b.v_px]))).min_by(|a, b| a.1.total_cmp(&b.1)).expect("blobs left");
        let b = left.swap_remove(i);
        end = [b.u_px, b.v_px];
        chain.push(b);
    }
    chain
}

impl Tracker {
    pub fn new(params: MarkerParams) -> Result<Tracker, TrackError> {
        Ok(Tracker { detector: Detector::new(params)?, markers: vec![], blobs: vec![], region_blobs: vec![] })
    }

    pub fn params(&self) -> &MarkerParams {
        &self.detector.params
    }

    /// Markers being tracked (0 before the first frame).
    pub fn count(&self) -> usize {
        self.markers.len()
    }

    /// Full-frame detection (no tracking state used or changed).
    pub fn detect_full(&mut self, image: &Mat, out: &mut Vec<Blob>) -> Result<(), TrackError> {
        self.detector.detect(image, Rect::new(0, 0, image.cols(), image.rows()), out)
    }

    /// Tracks one frame (the first frame initialises the chain).
    pub fn track(&mut self, image: &Mat) -> Result<Vec<TrackedMarker>, TrackError> {
        if self.markers.is_empty() {
            return self.first_frame(image);
        }
        let MarkerParams { gate_px, gate_growth_px, roi_tracking, .. } = self.detector.params;
        let predictions: Vec<[f64; 2]> = self.markers.iter().map(|m| [m.pos[0] + m.vel[0], m.pos[1] + m.vel[1]]).collect();
        let gates: Vec<f64> = self.markers.iter().map(|m| gate_px + gate_growth_px * m.missing_frames as f64).collect();
        let mut blobs = std::mem::take(&mut self.blobs);
        blobs.clear();
        if roi_tracking {
            for r in self.search_regions(&predictions, &gates, image.cols(), image.rows()) {
                self.detector.detect(image, r, &mut self.region_blobs)?;
                blobs.extend_from_slice(&self.region_blobs);
            }
        } else {
            self.detect_full(image, &mut blobs)?;
        }
        // One-to-one association, nearest pairs first.
        let mut pairs: Vec<(f64, usize, usize)> = vec![];
        for (i, p) in predictions.iter().enumerate() {
            for (j, b) in blobs.iter().enumerate() {
                let d = dist(*p, [b.u_px, b.v_px]);
                if d <= gates[i] {
                    pairs.push((d, i, j));
                }
            }
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut blob_of: Vec<Option<usize>> = vec![None; self.markers.len()];
        let mut taken = vec![false; blobs.len()];
        for &(_, i, j) in &pairs {
            if blob_of[i].is_none() && !taken[j] {
                blob_of[i] = Some(j);
                taken[j] = true;
            }
        }
        let mut out = Vec::with_capacity(self.markers.len());
        // Blobs shared by a marker without one of its own (merged markers).
        let mut shared: Vec<usize> = vec![];
        for (i, (m, blob)) in self.markers.iter().zip(&blob_of).enumerate() {
            let result = match *blob {
                Some(j) => {
                    let b = blobs[j];
                    let flag = if m.missing_frames > 0 { flags::REACQUIRED } else { 0 };
                    TrackedMarker { u_px: b.u_px, v_px: b.v_px, area_px: b.area_px, flags: flag }
                }
                None => {
                    // A large blob in the gate that another marker took: merged.
                    let big = pairs.iter().filter(|(_, k, _)| *k == i).map(|(_, _, j)| *j).find(|j| blobs[*j].area_px > 1.5 * m.area_px);
                    match big {
                        Some(j) => {
                            shared.push(j);
                            TrackedMarker { u_px: blobs[j].u_px, v_px: blobs[j].v_px, area_px: blobs[j].area_px, flags: flags::MERGED }
                        }
                        None => TrackedMarker { u_px: f64::NAN, v_px: f64::NAN, area_px: f64::NAN, flags: flags::MISSING },
                    }
                }
            };
            out.push(result);
        }
        for (o, b) in out.iter_mut().zip(&blob_of) {
            if b.is_some_and(|j| shared.contains(&j)) {
                o.flags |= flags::MERGED;
            }
        }
        for (m, (o, p)) in self.markers.iter_mut().zip(out.iter().zip(&predictions)) {
            if o.flags & flags::MISSING != 0 {
                // Hidden: coast on the prediction, velocity kept.
                m.pos = *p;
                m.missing_frames += 1;
            } else if o.flags & flags::MERGED != 0 {
                // Which of the merged markers is where is unknown: hold both
                // still, so that they separate from where they merged.
                m.vel = [0.0, 0.0];
            } else {
                let steps = (m.missing_frames + 1) as f64;
                let new = [o.u_px, o.v_px];
                let last = [p[0] - m.vel[0] * steps, p[1] - m.vel[1] * steps];
                m.vel = if m.missing_frames == 0 { [new[0] - m.pos[0], new[1] - m.pos[1]] } else { [(new[0] - last[0]) / steps, (new[1] - last[1]) / steps] };
                m.pos = new;
                m.area_px = 0.8 * m.area_px + 0.2 * o.area_px;
                m.missing_frames = 0;
            }
        }
        self.blobs = blobs;
        Ok(out)
    }

    /// Search windows around predictions, overlapping ones merged (so no blob
    /// is detected twice or cut in half).
    fn search_regions(&self, predictions: &[[f64; 2]], gates: &[f64], width: i32, height: i32) -> Vec<Rect> {
        let mut rects: Vec<Rect> = predictions
            .iter()
            .zip(gates)
            .zip(&self.markers)
            .map(|((p, g), m)| {
                let half = g + 2.0 * (m.area_px / std::f64::consts::PI).sqrt() + 4.0;
                clip(
                    Rect::new((p[0] - half).floor() as i32, (p[1] - half).floor() as i32, (2.0 * half).ceil() as i32 + 1, (2.0 * half).ceil() as i32 + 1),
                    width,
                    height,
                )
            })
            .filter(|r| r.width > 0 && r.height > 0)
            .collect();
        loop {
            let mut merged = false;
            'outer: for a in 0..rects.len() {
                for b in a + 1..rects.len() {
                    if intersects(rects[a], rects[b]) {
                        // The bounding box of both (OpenCV's rectangle union).
                        rects[a] = rects[a] | rects[b];
                        rects.swap_remove(b);
                        merged = true;
                        break 'outer;
                    }
                }
            }
            if !merged {
                return rects;
            }
        }
    }

    fn first_frame(&mut self, image: &Mat) -> Result<Vec<TrackedMarker>, TrackError> {
        let mut blobs = vec![];
        self.detect_full(image, &mut blobs)?;
        let count = self.detector.params.count;
        if blobs.is_empty() || blobs.len() < count {
            return Err(TrackError::Input(format!(
                "found {} marker(s) in the first frame, expected {} (check hue_ranges_deg, saturation_min, value_min, min_area_px in markers.toml)",
                blobs.len(),
                if count == 0 { "at least 1".to_string() } else { count.to_string() }
            )));
        }
        let base = self.detector.params.base_px.unwrap_or([0.0, image.rows() as f64 / 2.0]);
        let chain = order_chain(&blobs, base, count);
        self.markers = chain.iter().map(|b| MarkerState { pos: [b.u_px, b.v_px], vel: [0.0, 0.0], area_px: b.area_px, missing_frames: 0 }).collect();
        Ok(chain.iter().map(|b| TrackedMarker { u_px: b.u_px, v_px: b.v_px, area_px: b.area_px, flags: 0 }).collect())
    }
}
