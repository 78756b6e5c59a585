//! Where frames come from: a video file (uncompressed AVI read by
//! [`session::avi`], any other through OpenCV's VideoCapture) or a
//! directory of images (one frame per file, sorted by name). And where
//! they go: video files and image directories (synthetic sequences,
//! overlays).
//!
//! [`RawFrames`] uses OpenCV's core only: a build that tracks raw video
//! and names no other source loads neither videoio nor imgcodecs (0.1 s of
//! a process's start, with their 240 libraries).

use crate::calibrate::image_files;
use crate::detect::TrackError;
use opencv::core::{Mat, Size};
use opencv::prelude::*;
use opencv::{imgcodecs, videoio};
use session::avi::{RawAviReader, RawAviWriter};
use session::VideoFormat;
use std::path::{Path, PathBuf};

/// Frames in order, as the tracker takes them.
pub trait Frames: Send {
    /// Reads the next frame into `frame` (BGR). False at the end.
    fn read(&mut self, frame: &mut Mat) -> Result<bool, TrackError>;
    /// Frame rate stored with the frames (NaN when none is).
    fn fps(&self) -> f64;
    /// Number of frames, when known.
    fn len_hint(&self) -> Option<usize>;
    fn describe(&self) -> String;
}

/// The frames of an uncompressed AVI ([`session::avi`]), read straight
/// into the frame's pixels.
pub struct RawFrames {
    reader: RawAviReader,
}

impl RawFrames {
    pub fn open(path: &Path) -> Result<RawFrames, TrackError> {
        Ok(RawFrames { reader: RawAviReader::open(path)? })
    }
}

impl Frames for RawFrames {
    fn read(&mut self, frame: &mut Mat) -> Result<bool, TrackError> {
        let v = *self.reader.video();
        let (rows, cols) = (v.height_px as i32, v.width_px as i32);
        if frame.rows() != rows || frame.cols() != cols || frame.typ() != opencv::core::CV_8UC3 || !frame.is_continuous() {
            *frame = Mat::new_rows_cols_with_default(rows, cols, opencv::core::CV_8UC3, opencv::core::Scalar::all(0.0))?;
        }
        Ok(self.reader.read_bgr(frame.data_bytes_mut()?)?)
    }

    fn fps(&self) -> f64 {
        self.reader.video().fps
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.reader.video().frames_in_header as usize).filter(|&n| n > 0)
    }

    fn describe(&self) -> String {
        self.reader.path().display().to_string()
    }
}

pub enum FrameSource {
    Raw(RawFrames),
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
        // Uncompressed AVI: read here; any other video (or an AVI this
        // reader refuses) goes to OpenCV, whose error then speaks.
        if let Ok(raw) = RawFrames::open(path) {
            return Ok(FrameSource::Raw(raw));
        }
        let capture = videoio::VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_FFMPEG)?;
        if !capture.is_opened()? {
            return Err(TrackError::Input(format!("{}: cannot open as a video (unknown or damaged format)", path.display())));
        }
        let fps = capture.get(videoio::CAP_PROP_FPS)?;
        let n = capture.get(videoio::CAP_PROP_FRAME_COUNT)?;
        Ok(FrameSource::Video { capture, path: path.to_path_buf(), fps: if fps > 0.0 { fps } else { f64::NAN }, frames: (n > 0.0).then_some(n as usize) })
    }

    /// Frames that actually decode from here to the end (a cut file's
    /// header may still promise the frames it lost).
    pub fn count_decodable(&mut self) -> Result<usize, TrackError> {
        let mut n = 0;
        match self {
            FrameSource::Raw(raw) => {
                while raw.reader.skip_frame()? {
                    n += 1;
                }
            }
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
}

impl Frames for FrameSource {
    fn fps(&self) -> f64 {
        match self {
            FrameSource::Raw(raw) => raw.fps(),
            FrameSource::Video { fps, .. } => *fps,
            FrameSource::Images { .. } => f64::NAN,
        }
    }

    fn len_hint(&self) -> Option<usize> {
        match self {
            FrameSource::Raw(raw) => raw.len_hint(),
            FrameSource::Video { frames, .. } => *frames,
            FrameSource::Images { files, .. } => Some(files.len()),
        }
    }

    fn read(&mut self, frame: &mut Mat) -> Result<bool, TrackError> {
        match self {
            FrameSource::Raw(raw) => raw.read(frame),
            FrameSource::Video { capture, .. } => Ok(capture.read(frame)? && !frame.empty()),
            FrameSource::Images { files, next } => {
                let Some(path) = files.get(*next) else { return Ok(false) };
                *next += 1;
                crate::image_size::check(path)?;
                *frame = imgcodecs::imread(&path.to_string_lossy(), imgcodecs::IMREAD_COLOR)?;
                if frame.empty() {
                    return Err(TrackError::Input(format!("{}: cannot read image", path.display())));
                }
                Ok(true)
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            FrameSource::Raw(raw) => raw.describe(),
            FrameSource::Video { path, .. } => path.display().to_string(),
            FrameSource::Images { files, .. } => format!("{} images", files.len()),
        }
    }
}

/// Writes frames to a video file in one of a session's formats
/// ([`VideoFormat`]): lossless HuffYUV in .mkv (what tests and metric work
/// want), Motion-JPEG in .avi (small, lossy), uncompressed BGR in .avi.
pub struct VideoSink {
    writer: SinkWriter,
}

enum SinkWriter {
    OpenCv(videoio::VideoWriter),
    Raw(RawAviWriter),
}

impl VideoSink {
    /// A video whose format is its extension's: HuffYUV (.mkv) or
    /// Motion-JPEG (.avi).
    pub fn create(path: &Path, fps: f64, width: i32, height: i32) -> Result<VideoSink, TrackError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let format = VideoFormat::from_container(&ext)
            .filter(|f| f.extension() == ext)
            .ok_or_else(|| TrackError::Input(format!("{}: video files are .mkv (lossless HuffYUV) or .avi (Motion-JPEG)", path.display())))?;
        VideoSink::create_as(path, format, fps, width, height)
    }

    pub fn create_as(path: &Path, format: VideoFormat, fps: f64, width: i32, height: i32) -> Result<VideoSink, TrackError> {
        let Some([a, b, c, d]) = format.fourcc() else {
            let size = |s: i32| u32::try_from(s).map_err(|_| TrackError::Input(format!("{}: frames of {width}x{height} px", path.display())));
            return Ok(VideoSink { writer: SinkWriter::Raw(RawAviWriter::create(path, size(width)?, size(height)?, fps)?) });
        };
        let fourcc = videoio::VideoWriter::fourcc(a, b, c, d)?;
        // Motion-JPEG by OpenCV's own writer, whose quality can be set.
        let api = if format == VideoFormat::Mjpeg { videoio::CAP_OPENCV_MJPEG } else { videoio::CAP_ANY };
        let mut writer = videoio::VideoWriter::new_with_backend(&path.to_string_lossy(), api, fourcc, fps, Size::new(width, height), true)?;
        if !writer.is_opened()? {
            return Err(TrackError::Input(format!("{}: cannot open a video writer (codec missing from this OpenCV?)", path.display())));
        }
        if let Some(q) = format.quality() {
            if !writer.set(videoio::VIDEOWRITER_PROP_QUALITY, q)? {
                return Err(TrackError::Input(format!("{}: the video writer refused quality {q}", path.display())));
            }
        }
        Ok(VideoSink { writer: SinkWriter::OpenCv(writer) })
    }

    pub fn write(&mut self, frame: &Mat) -> Result<(), TrackError> {
        match &mut self.writer {
            SinkWriter::OpenCv(w) => w.write(frame)?,
            SinkWriter::Raw(w) if frame.is_continuous() && frame.typ() == opencv::core::CV_8UC3 => w.write_bgr(frame.data_bytes()?)?,
            SinkWriter::Raw(w) => w.write_bgr(frame.try_clone()?.data_bytes()?)?,
        }
        Ok(())
    }

    pub fn finish(self) -> Result<(), TrackError> {
        match self.writer {
            SinkWriter::OpenCv(mut w) => w.release()?,
            SinkWriter::Raw(w) => w.finish()?,
        }
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

    /// Every frame of `path` as OpenCV's VideoCapture (FFmpeg) decodes it.
    fn opencv_frames(path: &Path) -> Vec<Vec<u8>> {
        let mut video = videoio::VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_FFMPEG).unwrap();
        assert!(video.is_opened().unwrap(), "{}", path.display());
        let (mut frame, mut frames) = (Mat::default(), vec![]);
        while video.read(&mut frame).unwrap() && !frame.empty() {
            frames.push(frame.try_clone().unwrap().data_bytes().unwrap().to_vec());
        }
        frames
    }

    fn raw_frames(path: &Path) -> Vec<Vec<u8>> {
        let mut source = FrameSource::open(path).unwrap();
        assert!(matches!(source, FrameSource::Raw(_)), "{} read by OpenCV", path.display());
        let (mut frame, mut frames) = (Mat::default(), vec![]);
        while source.read(&mut frame).unwrap() {
            frames.push(frame.data_bytes().unwrap().to_vec());
        }
        frames
    }

    /// FFmpeg's uncompressed AVIs (datasets/raw-video, rows of 192 and of
    /// 186 bytes) read here as OpenCV reads them, byte for byte.
    #[test]
    fn ffmpegs_raw_videos_read_as_opencv_reads_them() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/raw-video");
        for name in ["ffmpeg-bgr24-64x48.avi", "ffmpeg-bgr24-62x48.avi"] {
            let path = root.join(name);
            let ours = raw_frames(&path);
            assert_eq!(ours.len(), 4, "{name}");
            assert_eq!(ours, opencv_frames(&path), "{name}");
            let source = FrameSource::open(&path).unwrap();
            assert_eq!((source.fps(), source.len_hint()), (25.0, Some(4)), "{name}");
        }
    }

    /// What the recorder writes as "raw" reads in OpenCV (FFmpeg) as
    /// written: every frame, the rate, across OpenDML parts, and the whole
    /// frames of a recording that crashed.
    #[test]
    fn raw_videos_written_here_read_in_opencv_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let frames: Vec<Vec<u8>> = (0..6).map(|k| (0..62 * 48 * 3).map(|i| (i * 13 + k * 41) as u8).collect()).collect();
        let mat = |f: &Vec<u8>| crate::detect::mat_from_bgr(62, 48, f).unwrap();
        let path = dir.path().join("raw.avi");
        let mut sink = VideoSink::create_as(&path, VideoFormat::Raw, 30.0, 62, 48).unwrap();
        for f in &frames {
            sink.write(&mat(f)).unwrap();
        }
        sink.finish().unwrap();
        assert_eq!(opencv_frames(&path), frames);
        assert_eq!(raw_frames(&path), frames);
        let video = videoio::VideoCapture::from_file(&path.to_string_lossy(), videoio::CAP_FFMPEG).unwrap();
        assert_eq!(video.get(videoio::CAP_PROP_FPS).unwrap(), 30.0);
        assert_eq!(video.get(videoio::CAP_PROP_FRAME_COUNT).unwrap(), 6.0);

        let parts = dir.path().join("parts.avi");
        let mut w = RawAviWriter::with_part_limit(&parts, 62, 48, 30.0, 20_000).unwrap();
        for f in &frames {
            w.write_bgr(f).unwrap();
        }
        w.finish().unwrap();
        assert!(std::fs::read(&parts).unwrap().windows(4).filter(|w| w == b"AVIX").count() >= 2);
        assert_eq!(opencv_frames(&parts), frames);

        // A recorder killed after 5 frames and a half: no sizes, no index.
        let crashed = dir.path().join("crashed.avi");
        let bytes = std::fs::read(&path).unwrap();
        let idx = bytes.windows(4).position(|w| w == b"idx1").unwrap();
        let mut cut = bytes[..idx - 4000].to_vec();
        let movi = cut.windows(4).position(|w| w == b"movi").unwrap();
        cut[movi - 4..movi].copy_from_slice(&[0; 4]);
        cut[4..8].copy_from_slice(&[0; 4]);
        std::fs::write(&crashed, &cut).unwrap();
        assert_eq!(raw_frames(&crashed), frames[..5]);
        assert_eq!(opencv_frames(&crashed), frames[..5]);
    }

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
