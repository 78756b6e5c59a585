//! The virtual lab with a camera set: two or more cameras around the
//! experiment, each rendering it from its own pose (markers anywhere in
//! 3-D), their calibration as `rodlab calibrate --camera-images` would
//! write it, and the markers file that starts each camera's chain at the
//! rod's base.

use crate::live::{lab_camera, motion_of, paint_table, plane_pose, render_frames, rod_look, Shot, MARKER_HEIGHT_M};
use lab::error::Result;
use lab::progress::Progress;
use lie::{Pose, Vec3};
use session::RigFrames;
use sim::StepRecord;
use std::path::{Path, PathBuf};
use track::stereo::{CameraSet, SetCamera};
use track::synth::Renderer;

/// Angle between the outermost cameras \[deg\].
const SPREAD_DEG: f64 = 30.0;

/// A camera set around an experiment, and the board (the set's world) in
/// the rig's world.
pub(crate) struct SetView {
    pub set: CameraSet,
    pub world_from_board: Pose,
}

/// `count` cameras looking at the motion's centre from its best plane's
/// side, spread about the image's vertical, far enough back that the whole
/// motion, with its depth, stays in view of each.
pub(crate) fn place_camera_set(records: &[StepRecord], gravity: Vec3, count: usize) -> SetView {
    let motion = motion_of(records, gravity);
    let ([x_c, y_c, z_c], look_at, [span_a, span_b]) = motion.framing(0.03 + motion.off_plane_m);
    let lens = lab_camera();
    // Turned cameras see the depth of the motion across the image too.
    let slack = 1.0 / (SPREAD_DEG / 2.0).to_radians().cos();
    let distance_m = (span_a * slack * lens.fx_px / lens.width_px as f64).max(span_b * lens.fy_px / lens.height_px as f64).max(0.2);
    let world_from_board = motion.board();
    let axis = nalgebra::Unit::new_normalize(y_c);
    let cameras = (0..count)
        .map(|k| {
            // A turn of +f about "down" moves the camera to -x: camera 0 on the left.
            let f = 0.5 - k as f64 / (count - 1).max(1) as f64;
            let turn = *nalgebra::Rotation3::from_axis_angle(&axis, (f * SPREAD_DEG).to_radians()).matrix();
            let rot = turn * lie::Mat3::from_columns(&[x_c, y_c, z_c]);
            let world_from_camera = Pose { rot, pos: look_at - rot.column(2) * distance_m };
            let camera_from_board = world_from_camera.inverse().compose(&world_from_board);
            let model = track::camera::CameraModel { plane: Some(plane_pose(&camera_from_board)), plane_offset_m: None, ..lens.clone() };
            SetCamera { name: track::synth::set_camera_name(k, count), model }
        })
        .collect();
    SetView { set: CameraSet { world: "the board behind the markers (the rig's [frames] board)".into(), cameras, views: vec![] }, world_from_board }
}

/// Renders the experiment through every camera of `view` into
/// `dir/<camera>.mkv` (lossless), `VIDEO_LEAD_S` of the initial state first.
/// Returns the videos and the markers.toml text (each camera's base pixel).
pub(crate) fn render_set_videos(
    records: &[StepRecord],
    req: &lab::synth::SynthRequest,
    camera_fps: f64,
    frames: &RigFrames,
    view: &SetView,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<(Vec<PathBuf>, String)> {
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let end_s = *t_rec.last().expect("records");
    let board_from_world = view.world_from_board.inverse();
    let in_board = |x: &Vec3| -> [f64; 3] { board_from_world.transform_point(x).into() };
    let mut videos = vec![];
    let mut base_lines = vec![];
    let rod = &req.rod;
    for (k, camera) in view.set.cameras.iter().enumerate() {
        let (radius_m, look) = rod_look(rod, req.seed + 101 * k as u64);
        let shown = (0..rod.markers.len()).map(|m| !req.hidden_markers.contains(&(k, m))).collect();
        let plane = camera.model.plane.clone().expect("placed");
        let mut renderer = Renderer::new(camera.model.clone(), plane.clone(), look);
        paint_table(&mut renderer, frames, &plane.offset(MARKER_HEIGHT_M), &view.world_from_board, radius_m);
        let video = dir.join(format!("{}.avi", camera.name));
        let shot = Shot { records, t_rec: &t_rec, end_s, camera_fps, radius_m, shown };
        render_frames(&mut renderer, &shot, in_board, &video, &format!("render {}", camera.name), progress)?;
        let base_px = renderer.pixel_3d(in_board(&records[0].base_pose.pos));
        base_lines.push(format!("{} = [{:.1}, {:.1}]", camera.name, base_px[0], base_px[1]));
        videos.push(video);
    }
    let markers_toml = format!(
        "# Markers of the virtual lab's rod seen by a camera set (written by rodlab synth session --live --cameras).\ncount = {}\n\n[base_px_by_camera]\n{}\n",
        rod.markers.len(),
        base_lines.join("\n")
    );
    Ok((videos, markers_toml))
}
