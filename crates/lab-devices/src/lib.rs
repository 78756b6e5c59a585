//! `lab-devices`: the lab's workflows that touch devices or video, on top of
//! [`lab`] — record a rig's devices into a session, emulate devices on the
//! real protocols, calibrate a camera and track videos, play a virtual lab
//! live through the emulators, and the browser views (live and replay).
//! Stage of the data flow: record -> (session) -> track; the rest of the
//! flow is `lab`'s and needs no OpenCV.
//!
//! This is the only workflow crate that links OpenCV (through `track` and
//! `record`): the `rodlab` binary loads it as a plugin for the commands that
//! need it, so that every other command starts without OpenCV's libraries.

pub mod camera;
pub mod disk;
pub mod emulate;
pub mod live;
mod live_set;
pub mod record;
pub mod reference;
pub mod track;
pub mod view;

use lab::Result;
use std::path::Path;

/// The frames of a video that decode (`session check`'s count against the
/// frame table).
pub fn count_video_frames(path: &Path) -> std::result::Result<usize, String> {
    ::track::source::FrameSource::open(path).and_then(|mut s| s.count_decodable()).map_err(|e| e.to_string())
}

/// `session check`'s default options with the videos decoded and counted.
pub fn check_options() -> lab::info::CheckOptions {
    lab::info::CheckOptions { count_frames: Some(count_video_frames), ..lab::info::CheckOptions::default() }
}

/// `session check` with the videos decoded and counted.
pub fn check_session(dir: &lab::SessionDir, max_outage_s: f64, videos: bool) -> Result<lab::info::CheckReport> {
    lab::info::check(dir, &lab::info::CheckOptions { max_outage_s, videos, ..check_options() })
}
