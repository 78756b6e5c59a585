//! Where frames come from: a video file (OpenCV VideoCapture) or a directory
//! of images (one frame per file, sorted by name). And where they go: video
//! files and image directories (synthetic sequences, overlays).

use crate::calibrate::image_files;
use crate::detect::TrackError;
use opencv::core::{Mat, Size};
use opencv::prelude::*;
use opencv::{imgcodecs, videoio};
use std::path::{Path, PathBuf};

pub enum FrameSource {
    Video { capture: videoio::VideoCapture, path: PathBuf, fps: f64, frames: Option<usize> },
    Images { files: Vec<PathBuf>, next: usize },
}

impl FrameSource {
    pub fn open(path: &Path) -> Result<FrameSource, TrackError> {
        if path.is_dir() {
            let files = image_files(path)?;
            if files.is_empty() {
                return Err(TrackError::Input(format!("{}: no images (png, jpg, bmp, tif) in the directory", path.display())));
            }
            return Ok(FrameSource::Images { files, next: 0 });
        }
        if !path.exists() {
            return Err(TrackError::Input(format!("{}: no such file or directory", path.display())));
        }
        let capture = videoio::VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_FFMPEG)?;
        if !capture.is_opened()? {
            return Err(TrackError::Input(format!("{}: cannot open as a video (unknown or damaged format)", path.display())));
        }
        let fps = capture.get(videoio::CAP_PROP_FPS)?;
        let n = capture.get(videoio::CAP_PROP_FRAME_COUNT)?;
        Ok(FrameSource::Video { capture, path: path.to_path_buf(), fps: if fps > 0.0 { fps } else { f64::NAN }, frames: (n > 0.0).then_some(n as usize) })
    }

    /// Frame rate stored in the video (NaN for image directories).
    pub fn fps(&self) -> f64 {
        match self {
            FrameSource::Video { fps, .. } => *fps,
            FrameSource::Images { .. } => f64::NAN,
        }
    }

    /// Number of frames, when known.
    pub fn len_hint(&self) -> Option<usize> {
        match self {
            FrameSource::Video { frames, .. } => *frames,
            FrameSource::Images { files, .. } => Some(files.len()),
        }
    }

    /// Reads the next frame into `frame` (BGR). False at the end.
    pub fn read(&mut self, frame: &mut Mat) -> Result<bool, TrackError> {
        match self {
            FrameSource::Video { capture, .. } => Ok(capture.read(frame)? && !frame.empty()),
            FrameSource::Images { files, next } => {
                let Some(path) = files.get(*next) else { return Ok(false) };
                *next += 1;
                *frame = imgcodecs::imread(&path.to_string_lossy(), imgcodecs::IMREAD_COLOR)?;
                if frame.empty() {
                    return Err(TrackError::Input(format!("{}: cannot read image", path.display())));
                }
                Ok(true)
            }
        }
    }

    /// Frames that actually decode from here to the end (a cut file's
    /// header may still promise the frames it lost).
    pub fn count_decodable(&mut self) -> Result<usize, TrackError> {
        let mut n = 0;
        match self {
            FrameSource::Video { capture, .. } => {
                while capture.grab()? {
                    n += 1;
                }
            }
            FrameSource::Images { files, next } => {
                n = files.len() - *next;
                *next = files.len();
            }
        }
        Ok(n)
    }

    pub fn describe(&self) -> String {
        match self {
            FrameSource::Video { path, .. } => path.display().to_string(),
            FrameSource::Images { files, .. } => format!("{} images", files.len()),
        }
    }
}

/// Writes frames to a video file: lossless HuffYUV in .mkv (what tests and
/// metric work want), Motion-JPEG in .avi (small, lossy).
pub struct VideoSink {
    writer: videoio::VideoWriter,
}

impl VideoSink {
    pub fn create(path: &Path, fps: f64, width: i32, height: i32) -> Result<VideoSink, TrackError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let [a, b, c, d] = session::video_codec(&ext)
            .ok_or_else(|| TrackError::Input(format!("{}: video files are .mkv (lossless HuffYUV) or .avi (Motion-JPEG)", path.display())))?;
        let fourcc = videoio::VideoWriter::fourcc(a, b, c, d)?;
        let writer = videoio::VideoWriter::new(&path.to_string_lossy(), fourcc, fps, Size::new(width, height), true)?;
        if !writer.is_opened()? {
            return Err(TrackError::Input(format!("{}: cannot open a video writer (codec missing from this OpenCV?)", path.display())));
        }
        Ok(VideoSink { writer })
    }

    pub fn write(&mut self, frame: &Mat) -> Result<(), TrackError> {
        self.writer.write(frame)?;
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), TrackError> {
        self.writer.release()?;
        Ok(())
    }

    /// Writes `count` frames, `make(k)` for frame k, in order, and finishes
    /// the file. Frames are made on a thread of their own, up to two ahead
    /// of the one being encoded: a synthetic video's rendering and its
    /// encoding took about half of its time each. `written(k)` is called
    /// here once frame k is in the file.
    pub fn write_frames(
        mut self,
        count: usize,
        make: impl FnMut(usize) -> Result<Mat, TrackError> + Send,
        mut written: impl FnMut(usize),
    ) -> Result<(), TrackError> {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Mat, TrackError>>(2);
            let mut make = make;
            scope.spawn(move || {
                for k in 0..count {
                    let frame = make(k);
                    let failed = frame.is_err();
                    // A closed channel: the writer failed and returned.
                    if tx.send(frame).is_err() || failed {
                        return;
                    }
                }
            });
            // A maker that panicked closes the channel; the scope then
            // passes its panic on.
            for (k, frame) in rx.iter().enumerate() {
                self.write(&frame?)?;
                written(k);
            }
            Ok::<(), TrackError>(())
        })?;
        self.finish()
    }
}

/// Writes one image (format from the extension).
pub fn write_image(path: &Path, image: &Mat) -> Result<(), TrackError> {
    if !imgcodecs::imwrite(&path.to_string_lossy(), image, &opencv::core::Vector::new())? {
        return Err(TrackError::Input(format!("{}: cannot write image", path.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Image;

    fn grey_frame(level: u8) -> Mat {
        Image { width: 64, height: 48, bgr: vec![level; 64 * 48 * 3] }.to_mat().unwrap()
    }

    /// Frames made ahead on their own thread reach the file in order, each
    /// reported once written; a frame that cannot be made ends the video
    /// with its error, after the frames before it.
    #[test]
    fn frames_made_ahead_are_written_in_order_and_a_failure_stops_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("levels.mkv");
        let mut written = vec![];
        VideoSink::create(&path, 25.0, 64, 48).unwrap().write_frames(12, |k| Ok(grey_frame(20 * k as u8)), |k| written.push(k)).unwrap();
        assert_eq!(written, (0..12).collect::<Vec<_>>());
        let mut video = videoio::VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_ANY).unwrap();
        let mut frame = Mat::default();
        let mut levels = vec![];
        while video.read(&mut frame).unwrap() && !frame.empty() {
            levels.push(*frame.at_2d::<opencv::core::Vec3b>(24, 32).unwrap());
        }
        // Lossless: every frame's level as made, in order.
        assert_eq!(levels.iter().map(|p| p[0]).collect::<Vec<_>>(), (0..12).map(|k| 20 * k as u8).collect::<Vec<_>>());

        let mut written = vec![];
        let failed = VideoSink::create(&dir.path().join("cut.mkv"), 25.0, 64, 48).unwrap().write_frames(
            12,
            |k| if k == 5 { Err(TrackError::Failed("frame 5 cannot be made".into())) } else { Ok(grey_frame(100)) },
            |k| written.push(k),
        );
        assert!(matches!(failed, Err(TrackError::Failed(m)) if m == "frame 5 cannot be made"));
        assert_eq!(written, (0..5).collect::<Vec<_>>());
    }
}
