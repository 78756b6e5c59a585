//! `track`: the second stage of record -> track -> observe -> identify ->
//! simulate -> report. Turns camera images into metric marker positions,
//! ordered from base to tip, frame by frame: camera calibration (OpenCV
//! calib3d), colour-marker detection (HSV threshold, morphology, contours,
//! moments), ordering and frame-to-frame tracking with gating, and a
//! synthetic video generator with exact ground truth for tests and demos.

pub mod calibrate;
pub mod camera;
pub mod check;
pub mod detect;
pub mod pipeline;
pub mod preview;
pub mod sequence;
pub mod source;
pub mod synth;
pub mod tracker;
