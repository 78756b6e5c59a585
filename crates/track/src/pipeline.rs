//! A whole video through the tracker: frames -> ordered markers -> metric
//! positions in the rig's world frame -> rows of the marker table.

use crate::camera::CameraModel;
use crate::detect::TrackError;
use crate::source::{write_image, FrameSource};
use crate::tracker::{TrackedMarker, Tracker};
use opencv::core::{Mat, Point, Scalar};
use opencv::imgproc;
use opencv::prelude::*;
use session::{flags, MarkerRow};
use std::path::Path;
use std::time::{Duration, Instant};

/// Frame times: from a session's frames table, else frame / fps.
pub enum FrameTimes {
    /// t_host_ns of each frame index.
    Table(Vec<i64>),
    Rate(f64),
}

/// Time spent decoding vs tracking.
#[derive(Debug, Default, Clone, Copy)]
pub struct Timing {
    pub frames: usize,
    pub decode: Duration,
    pub track: Duration,
    /// Frames of the video beyond its frames table (a recorder killed
    /// between writing a frame and its row): no time, not tracked.
    pub untimed_frames: usize,
}

/// From pixels to the world: the plane the marker centres move in (the
/// board plane raised by the markers' height towards the camera) and the
/// board's pose in the rig's world frame W.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaneToWorld {
    pub world_from_board: lie::Pose,
    pub marker_height_m: f64,
}

impl Default for PlaneToWorld {
    /// Board frame = world, markers on the board.
    fn default() -> Self {
        PlaneToWorld { world_from_board: lie::Pose::identity(), marker_height_m: 0.0 }
    }
}

impl PlaneToWorld {
    /// The world position of a marker seen at pixel (u, v).
    pub fn locate(&self, camera: &CameraModel, u: f64, v: f64) -> Option<[f64; 3]> {
        let plane = camera.plane.as_ref()?;
        let p = camera.pixel_to_plane_at(plane, u, v, self.marker_height_m)?;
        Some(self.world_from_board.transform_point(&lie::Vec3::from(p)).into())
    }
}

/// Marker table rows of one frame (positions in the world frame).
pub fn rows_for_frame(
    frame: usize,
    times: &FrameTimes,
    camera: &CameraModel,
    world: &PlaneToWorld,
    markers: &[TrackedMarker],
) -> Result<Vec<MarkerRow>, TrackError> {
    let (t_s, t_host_ns) = match times {
        FrameTimes::Table(t) => {
            let ns = *t.get(frame).ok_or_else(|| TrackError::Input(format!("the frames table has {} rows, the video more frames", t.len())))?;
            (ns as f64 * 1e-9, Some(ns))
        }
        FrameTimes::Rate(fps) => (frame as f64 / fps, None),
    };
    Ok(markers
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let xyz = if m.u_px.is_finite() { world.locate(camera, m.u_px, m.v_px) } else { None };
            let [x, y, z] = xyz.unwrap_or([f64::NAN; 3]);
            MarkerRow {
                frame: frame as i64,
                t_s,
                t_host_ns,
                marker: i as u32,
                u_px: m.u_px,
                v_px: m.v_px,
                x_m: x,
                y_m: y,
                z_m: z,
                area_px: m.area_px,
                flags: m.flags,
            }
        })
        .collect())
}

/// Where annotated frames go: a directory, and every how many frames one
/// is written.
#[derive(Clone, Copy, Debug)]
pub struct Overlay<'a> {
    pub dir: &'a Path,
    pub every: usize,
}

/// Tracks every frame of `source`. `progress(frames_done)` is called per frame;
/// `overlay` gets an annotated JPEG of every `every`-th frame (a check by
/// eye needs no lossless copy of the video: 0.1-0.2 MB a frame, not 3).
pub fn track_video(
    source: &mut FrameSource,
    tracker: &mut Tracker,
    camera: &CameraModel,
    world: &PlaneToWorld,
    times: &FrameTimes,
    overlay: Option<Overlay>,
    mut progress: impl FnMut(usize),
) -> Result<(Vec<MarkerRow>, Timing), TrackError> {
    let mut frame = Mat::default();
    let mut rows = vec![];
    let mut timing = Timing::default();
    let mut k = 0;
    loop {
        let t0 = Instant::now();
        if !source.read(&mut frame)? {
            break;
        }
        if matches!(times, FrameTimes::Table(t) if k >= t.len()) {
            timing.untimed_frames += 1;
            continue;
        }
        let t1 = Instant::now();
        if k == 0 && (frame.cols() as u32 != camera.width_px || frame.rows() as u32 != camera.height_px) {
            return Err(TrackError::Input(format!(
                "{}: frames are {}x{} px, the camera file is for {}x{}",
                source.describe(),
                frame.cols(),
                frame.rows(),
                camera.width_px,
                camera.height_px
            )));
        }
        let markers = tracker.track(&frame).map_err(|e| match e {
            TrackError::Input(m) if k == 0 => TrackError::Input(format!("{}: frame 0: {m}", source.describe())),
            e => e,
        })?;
        timing.decode += t1 - t0;
        timing.track += t1.elapsed();
        if let Some(o) = overlay.filter(|o| k % o.every.max(1) == 0) {
            draw_overlay(&mut frame, &markers)?;
            write_image(&o.dir.join(format!("{k:06}.jpg")), &frame)?;
        }
        rows.extend(rows_for_frame(k, times, camera, world, &markers)?);
        k += 1;
        progress(k);
    }
    if k == 0 {
        return Err(TrackError::Input(format!("{}: no frame could be read", source.describe())));
    }
    timing.frames = k;
    Ok((rows, timing))
}

/// Circles and marker numbers: green tracked, yellow re-acquired, magenta merged.
pub fn draw_overlay(frame: &mut Mat, markers: &[TrackedMarker]) -> Result<(), TrackError> {
    for (i, m) in markers.iter().enumerate() {
        if !m.u_px.is_finite() {
            continue;
        }
        let colour = if m.flags & flags::MERGED != 0 {
            Scalar::new(255.0, 0.0, 255.0, 0.0)
        } else if m.flags & flags::REACQUIRED != 0 {
            Scalar::new(0.0, 255.0, 255.0, 0.0)
        } else {
            Scalar::new(0.0, 255.0, 0.0, 0.0)
        };
        let c = Point::new(m.u_px.round() as i32, m.v_px.round() as i32);
        let r = (m.area_px / std::f64::consts::PI).sqrt().max(3.0) as i32 + 3;
        imgproc::circle(frame, c, r, colour, 1, imgproc::LINE_AA, 0)?;
        imgproc::put_text(frame, &i.to_string(), Point::new(c.x + r + 2, c.y - r), imgproc::FONT_HERSHEY_SIMPLEX, 0.5, colour, 1, imgproc::LINE_AA, false)?;
    }
    Ok(())
}
