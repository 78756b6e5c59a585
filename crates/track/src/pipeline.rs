//! A whole video through the tracker: frames -> ordered markers -> metric
//! positions in the rig's world frame -> rows of the marker table.

use crate::camera::CameraModel;
use crate::detect::TrackError;
use crate::source::Frames;
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

/// Where annotated frames go: a directory, every how many frames one is
/// written, and what writes an image (`source::write_image`; passed in, so
/// that a build without image files can track).
#[derive(Clone, Copy)]
pub struct Overlay<'a> {
    pub dir: &'a Path,
    pub every: usize,
    pub write: WriteImage,
}

/// Writes an image file.
pub type WriteImage = fn(&Path, &Mat) -> Result<(), TrackError>;

/// Frames decoded ahead of the one being tracked: decoding (the video's
/// codec) and tracking run on two threads, each waiting on the other only
/// when this queue is full or empty.
const DECODE_AHEAD: usize = 4;

/// A decoded frame, or the end of the video, or why decoding stopped.
type Decoded = Result<Mat, TrackError>;

/// Decodes every frame of `source` into `frames`, in order, on its own
/// thread; frames the tracker is done with come back on `spent` to be
/// decoded into again (a 1280x720 frame is 2.8 MB: no allocation a
/// frame). Returns the time spent decoding.
fn decode_frames(source: &mut impl Frames, frames: std::sync::mpsc::SyncSender<Decoded>, spent: std::sync::mpsc::Receiver<Mat>) -> Duration {
    let mut decoding = Duration::ZERO;
    loop {
        let mut frame = spent.try_recv().unwrap_or_default();
        let t0 = Instant::now();
        let read = source.read(&mut frame);
        decoding += t0.elapsed();
        let next = match read {
            Ok(true) => Ok(frame),
            Ok(false) => return decoding,
            Err(e) => Err(e),
        };
        let failed = next.is_err();
        // A closed channel: the tracker failed and returned.
        if frames.send(next).is_err() || failed {
            return decoding;
        }
    }
}

/// Tracks every frame of `source`. `progress(frames_done)` is called per frame;
/// `overlay` gets an annotated JPEG of every `every`-th frame (a check by
/// eye needs no lossless copy of the video: 0.1-0.2 MB a frame, not 3).
/// The video decodes on a thread of its own, up to four frames ahead of
/// the tracker (decoding a lossless 1280x720 frame takes longer than
/// tracking it).
pub fn track_video(
    source: &mut impl Frames,
    tracker: &mut Tracker,
    camera: &CameraModel,
    world: &PlaneToWorld,
    times: &FrameTimes,
    overlay: Option<Overlay>,
    progress: impl FnMut(usize),
) -> Result<(Vec<MarkerRow>, Timing), TrackError> {
    let described = source.describe();
    let (frames_tx, frames_rx) = std::sync::mpsc::sync_channel::<Decoded>(DECODE_AHEAD);
    let (spent_tx, spent_rx) = std::sync::mpsc::channel::<Mat>();
    let (tracked, decoding) = std::thread::scope(|scope| {
        let decoder = scope.spawn(move || decode_frames(source, frames_tx, spent_rx));
        let tracked = track_frames(frames_rx, spent_tx, &described, tracker, camera, world, times, overlay, progress);
        // The tracker has returned and dropped its receiver: the decoder
        // stops at its next frame. A decoder that panicked passes it on.
        let decoding = decoder.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tracked, decoding)
    });
    let (rows, mut timing) = tracked?;
    timing.decode = decoding;
    Ok((rows, timing))
}

/// The tracker's side of [`track_video`]: each decoded frame of `frames`
/// (from the video `described`) tracked into rows, then handed back on
/// `spent`.
#[allow(clippy::too_many_arguments)]
fn track_frames(
    frames: std::sync::mpsc::Receiver<Decoded>,
    spent: std::sync::mpsc::Sender<Mat>,
    described: &str,
    tracker: &mut Tracker,
    camera: &CameraModel,
    world: &PlaneToWorld,
    times: &FrameTimes,
    overlay: Option<Overlay>,
    mut progress: impl FnMut(usize),
) -> Result<(Vec<MarkerRow>, Timing), TrackError> {
    let mut rows = vec![];
    let mut timing = Timing::default();
    let mut k = 0;
    for frame in frames {
        let mut frame = frame?;
        if matches!(times, FrameTimes::Table(t) if k >= t.len()) {
            timing.untimed_frames += 1;
            continue;
        }
        let t1 = Instant::now();
        if k == 0 && (frame.cols() as u32 != camera.width_px || frame.rows() as u32 != camera.height_px) {
            return Err(TrackError::Input(format!(
                "{described}: frames are {}x{} px, the camera file is for {}x{}",
                frame.cols(),
                frame.rows(),
                camera.width_px,
                camera.height_px
            )));
        }
        let markers = tracker.track(&frame).map_err(|e| match e {
            TrackError::Input(m) if k == 0 => TrackError::Input(format!("{described}: frame 0: {m}")),
            e => e,
        })?;
        timing.track += t1.elapsed();
        if let Some(o) = overlay.filter(|o| k % o.every.max(1) == 0) {
            draw_overlay(&mut frame, &markers)?;
            (o.write)(&o.dir.join(format!("{k:06}.jpg")), &frame)?;
        }
        rows.extend(rows_for_frame(k, times, camera, world, &markers)?);
        // The decoder may have finished: then the frame is dropped here.
        let _ = spent.send(frame);
        k += 1;
        progress(k);
    }
    if k == 0 {
        return Err(TrackError::Input(format!("{described}: no frame could be read")));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::MarkerParams;
    use crate::sequence::{Sequence, SequenceConfig};
    use crate::source::FrameSource;
    use crate::synth::{self, write_png};

    /// A folder of `frames` rendered frames of the demo camera's sequence.
    fn frames_dir(frames: usize) -> tempfile::TempDir {
        let (camera, plane) = synth::demo_camera();
        let mut seq = Sequence::new(camera, plane, SequenceConfig { frames, ..SequenceConfig::default() });
        let dir = tempfile::tempdir().unwrap();
        for k in 0..frames {
            write_png(&dir.path().join(format!("{k:04}.png")), &seq.render(k)).unwrap();
        }
        dir
    }

    fn tracker() -> Tracker {
        Tracker::new(MarkerParams { count: 6, ..MarkerParams::default() }).unwrap()
    }

    #[test]
    fn decoding_ahead_gives_the_rows_of_tracking_frame_by_frame() {
        let dir = frames_dir(12);
        let camera = synth::demo_camera().0;
        let mut source = FrameSource::open(dir.path()).unwrap();
        let mut done = vec![];
        let (rows, timing) =
            track_video(&mut source, &mut tracker(), &camera, &PlaneToWorld::default(), &FrameTimes::Rate(100.0), None, |k| done.push(k)).unwrap();
        assert_eq!(done, (1..=12).collect::<Vec<_>>());
        assert_eq!(timing.frames, 12);
        // The same frames read and tracked one after the other.
        let mut source = FrameSource::open(dir.path()).unwrap();
        let (mut one_by_one, mut frame, mut k) = (tracker(), Mat::default(), 0);
        let mut expected = vec![];
        while source.read(&mut frame).unwrap() {
            let markers = one_by_one.track(&frame).unwrap();
            expected.extend(rows_for_frame(k, &FrameTimes::Rate(100.0), &camera, &PlaneToWorld::default(), &markers).unwrap());
            k += 1;
        }
        assert_eq!(rows.len(), 12 * 6);
        for (a, b) in rows.iter().zip(&expected) {
            assert_eq!((a.frame, a.marker, a.u_px.to_bits(), a.v_px.to_bits(), a.flags), (b.frame, b.marker, b.u_px.to_bits(), b.v_px.to_bits(), b.flags));
        }
    }

    #[test]
    fn a_frame_that_does_not_decode_stops_the_tracking_with_its_name() {
        let dir = frames_dir(6);
        std::fs::write(dir.path().join("0003.png"), b"not a png").unwrap();
        let camera = synth::demo_camera().0;
        let mut source = FrameSource::open(dir.path()).unwrap();
        let e = track_video(&mut source, &mut tracker(), &camera, &PlaneToWorld::default(), &FrameTimes::Rate(100.0), None, |_| {}).unwrap_err();
        assert!(e.to_string().contains("0003.png: cannot read image"), "{e}");
    }

    #[test]
    fn a_tracker_that_fails_stops_the_decoder_ahead_of_it() {
        // Frames of another size than the camera's: the tracker stops at
        // frame 0 while the decoder has frames queued; the call returns.
        let dir = frames_dir(DECODE_AHEAD + 4);
        let camera = CameraModel { width_px: 640, ..synth::demo_camera().0 };
        let mut source = FrameSource::open(dir.path()).unwrap();
        let e = track_video(&mut source, &mut tracker(), &camera, &PlaneToWorld::default(), &FrameTimes::Rate(100.0), None, |_| {}).unwrap_err();
        assert!(e.to_string().contains("frames are 1280x720 px, the camera file is for 640x720"), "{e}");
    }
}
