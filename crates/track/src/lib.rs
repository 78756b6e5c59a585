//! `track`: the second stage of record -> track -> observe -> identify ->
//! simulate -> report. Turns camera images into metric marker positions,
//! ordered from base to tip, frame by frame: camera calibration (OpenCV
//! calib3d), colour-marker detection (HSV threshold, morphology, contours,
//! moments), ordering and frame-to-frame tracking with gating, and a
//! synthetic video generator with exact ground truth for tests and demos.
//! With two or more cameras: a camera set calibrated in one world frame
//! (`stereo`), frames matched on the host clock and markers triangulated
//! in 3-D, or kept as rays where one camera alone saw them (`multiview`,
//! `triangulate`).

pub mod calibrate;
pub mod camera;
pub mod check;
pub mod detect;
pub mod image_size;
pub mod multiview;
pub mod pipeline;
pub mod preview;
pub mod sequence;
pub mod source;
pub mod stereo;
pub mod synth;
pub mod tracker;
pub mod triangulate;
