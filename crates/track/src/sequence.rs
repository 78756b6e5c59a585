//! Synthetic marker sequences: a bending rod carrying N markers in the plane
//! of motion, its base moving, rendered frame by frame with motion blur and
//! optional occlusions, with the exact truth of every marker in every frame.

use crate::camera::{CameraModel, PlanePose};
use crate::synth::{Image, Look, Renderer};

#[derive(Clone, Debug)]
pub struct SequenceConfig {
    pub frames: usize,
    pub markers: usize,
    /// Arc length between markers along the rod.
    pub spacing_m: f64,
    /// Base position in the plane (rig frame).
    pub base_m: [f64; 2],
    /// Fastest marker image speed over the sequence [px/frame].
    pub max_speed_px: f64,
    /// Exposure as a fraction of the frame interval (motion blur).
    pub exposure_fraction: f64,
    /// Sub-steps rendered per exposure (1: no blur).
    pub blur_substeps: usize,
    /// Marker hidden for frames [first, first + count).
    pub occlusion: Option<Occlusion>,
    pub fps: f64,
    pub look: Look,
}

#[derive(Clone, Copy, Debug)]
pub struct Occlusion {
    pub marker: usize,
    pub first_frame: usize,
    pub frames: usize,
}

impl Default for SequenceConfig {
    fn default() -> SequenceConfig {
        SequenceConfig {
            frames: 200,
            markers: 6,
            spacing_m: 0.034,
            base_m: [-0.035, 0.03],
            max_speed_px: 20.0,
            exposure_fraction: 0.3,
            blur_substeps: 3,
            occlusion: None,
            fps: 100.0,
            look: Look::default(),
        }
    }
}

/// The truth of one marker in one frame (at the middle of the exposure).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TruthRow {
    pub frame: usize,
    pub marker: usize,
    pub u_px: f64,
    pub v_px: f64,
    pub x_m: f64,
    pub y_m: f64,
    pub visible: bool,
}

pub struct Sequence {
    pub config: SequenceConfig,
    pub renderer: Renderer,
    /// Frames per unit of the motion's phase (set so the fastest marker
    /// moves `max_speed_px` per frame).
    time_scale: f64,
}

/// Marker positions along a constant-curvature rod at phase `t`.
fn rod_markers(cfg: &SequenceConfig, t: f64) -> Vec<[f64; 2]> {
    let theta0 = 0.12 * (0.9 * t).sin() + 0.05 * (2.3 * t).sin();
    let kappa = 2.2 * (0.7 * t + 0.5).sin();
    let base = [cfg.base_m[0] + 0.004 * (1.3 * t).sin(), cfg.base_m[1] + 0.01 * (0.6 * t).sin()];
    (0..cfg.markers)
        .map(|i| {
            let s = (i as f64 + 1.0) * cfg.spacing_m;
            let (dx, dy) = if kappa.abs() < 1e-9 {
                (s * theta0.cos(), s * theta0.sin())
            } else {
                (((theta0 + kappa * s).sin() - theta0.sin()) / kappa, (theta0.cos() - (theta0 + kappa * s).cos()) / kappa)
            };
            [base[0] + dx, base[1] + dy]
        })
        .collect()
}

impl Sequence {
    pub fn new(camera: CameraModel, plane: PlanePose, config: SequenceConfig) -> Sequence {
        let renderer = Renderer::new(camera, plane, config.look.clone());
        let mut s = Sequence { config, renderer, time_scale: 1.0 };
        // Fastest image speed per unit phase, sampled over the sequence's span.
        let probe = |s: &Sequence, scale: f64| -> f64 {
            let mut fastest: f64 = 0.0;
            let n = s.config.frames.max(2);
            let mut prev = s.pixels(0.0, scale);
            for k in 1..n {
                let cur = s.pixels(k as f64, scale);
                for (a, b) in prev.iter().zip(&cur) {
                    fastest = fastest.max(((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt());
                }
                prev = cur;
            }
            fastest
        };
        let mut scale = 0.02;
        for _ in 0..3 {
            let v = probe(&s, scale);
            scale *= s.config.max_speed_px / v;
        }
        s.time_scale = scale;
        s
    }

    fn pixels(&self, frame: f64, scale: f64) -> Vec<[f64; 2]> {
        rod_markers(&self.config, frame * scale).iter().map(|p| self.renderer.pixel(*p)).collect()
    }

    /// Truth of every marker in frame `frame` (middle of the exposure).
    pub fn truth(&self, frame: usize) -> Vec<TruthRow> {
        let positions = rod_markers(&self.config, frame as f64 * self.time_scale);
        positions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let px = self.renderer.pixel(*p);
                TruthRow { frame, marker: i, u_px: px[0], v_px: px[1], x_m: p[0], y_m: p[1], visible: self.visible(frame, i) }
            })
            .collect()
    }

    fn visible(&self, frame: usize, marker: usize) -> bool {
        !self.config.occlusion.is_some_and(|o| o.marker == marker && frame >= o.first_frame && frame < o.first_frame + o.frames)
    }

    /// Renders frame `frame` (exposure centred on the frame time).
    pub fn render(&mut self, frame: usize) -> Image {
        let n = self.config.blur_substeps.max(1);
        let steps: Vec<Vec<[f64; 2]>> = (0..n)
            .map(|k| {
                let offset = if n == 1 { 0.0 } else { self.config.exposure_fraction * (k as f64 / (n - 1) as f64 - 0.5) };
                rod_markers(&self.config, (frame as f64 + offset) * self.time_scale)
            })
            .collect();
        let visible: Vec<bool> = (0..self.config.markers).map(|i| self.visible(frame, i)).collect();
        self.renderer.render(&steps, &visible)
    }
}
