//! Uncompressed video: AVI files of 24-bit BGR frames (a DIB, what
//! `ffmpeg -c:v rawvideo -pix_fmt bgr24` writes), read and written here
//! without a video library.
//!
//! Why a format of our own reading: a lossless 1280x720 frame takes 6.4 ms
//! to decode from HuffYUV (libavcodec, two threads) and 0.09 ms to copy
//! from here; tracking it by regions of interest takes 0.2 ms. A recorder
//! that writes raw frames also spends no time encoding them.
//!
//! The writer makes an AVI 1.0 file (`idx1` index) up to 1 GiB, then
//! OpenDML extensions (`RIFF AVIX`, no index) as long recordings need;
//! FFmpeg and OpenCV read both by scanning. The sizes in the headers are
//! written when the file is finished. A recorder that crashes leaves a
//! file whose `movi` size is 0: readers (this one, FFmpeg) then read the
//! frames to the end of the file, and a last frame cut short is dropped.
//!
//! The reader scans the frames in file order, as written, and takes 24-
//! and 32-bit BI_RGB frames, bottom-up or top-down. Anything else (another
//! codec, a file that is not an AVI) is for a video library: [`sniff`]
//! says which.

use std::fs::File;
use std::io::{BufWriter, IoSliceMut, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Frames larger than this are refused (a hostile header).
const MAX_SIDE_PX: u32 = 16_384;
/// A RIFF part of the file is closed past this size (the AVI 1.0 limit
/// readers agree on); frames go on in `RIFF AVIX` parts.
const RIFF_PART_BYTES: u64 = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum AviError {
    #[error("{0}: {1}")]
    Input(PathBuf, String),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl fault::Fault for AviError {
    fn kind(&self) -> fault::Kind {
        match self {
            AviError::Input(..) => fault::Kind::Input,
            AviError::Io(..) => fault::Kind::Io,
        }
    }
}

/// What the headers of an uncompressed AVI say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawVideo {
    pub width_px: u32,
    pub height_px: u32,
    /// 24 (BGR) or 32 (BGRA, alpha dropped on reading).
    pub bits_per_pixel: u16,
    /// Rows stored from the bottom up (the DIB convention, a positive
    /// height in the header).
    pub bottom_up: bool,
    /// NaN when the header gives none.
    pub fps: f64,
    /// Frames the header counts (0 in a file whose writer crashed).
    pub frames_in_header: u32,
}

impl RawVideo {
    /// Bytes of one stored row (rows are padded to 4 bytes).
    pub fn stride_bytes(&self) -> usize {
        (self.width_px as usize * self.bits_per_pixel as usize / 8).div_ceil(4) * 4
    }

    /// Bytes of one stored frame.
    pub fn frame_bytes(&self) -> usize {
        self.stride_bytes() * self.height_px as usize
    }
}

fn fourcc(b: &[u8]) -> [u8; 4] {
    [b[0], b[1], b[2], b[3]]
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a RIFF chunk header (id, size) at the file's position; None at
/// the end of the file (or a header cut short).
fn chunk_header(file: &mut impl Read) -> std::io::Result<Option<([u8; 4], u32)>> {
    let mut h = [0u8; 8];
    match file.read_exact(&mut h) {
        Ok(()) => Ok(Some((fourcc(&h), u32_at(&h, 4)))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `path` is an AVI of uncompressed frames that [`RawAviReader`]
/// reads (false for other videos, directories, missing files).
pub fn sniff(path: &Path) -> bool {
    RawAviReader::open(path).is_ok()
}

/// Reads the frames of an uncompressed AVI in order.
pub struct RawAviReader {
    file: File,
    path: PathBuf,
    video: RawVideo,
    /// Where the next chunk header is.
    next_chunk: u64,
    file_bytes: u64,
    /// A stored frame, for 32-bit and padded rows.
    scratch: Vec<u8>,
}

impl RawAviReader {
    pub fn open(path: &Path) -> Result<RawAviReader, AviError> {
        let input = |m: String| AviError::Input(path.to_path_buf(), m);
        let io = |e| AviError::Io(path.to_path_buf(), e);
        let mut file = File::open(path).map_err(io)?;
        let file_bytes = file.metadata().map_err(io)?.len();
        let mut riff = [0u8; 12];
        file.read_exact(&mut riff).map_err(|_| input("not an AVI file (no RIFF header)".into()))?;
        if &riff[0..4] != b"RIFF" || &riff[8..12] != b"AVI " {
            return Err(input("not an AVI file (no RIFF header)".into()));
        }
        let mut video = None;
        let mut at = 12u64;
        // The top-level chunks up to `movi`: the headers come first.
        loop {
            let (id, size) = chunk_header(&mut file).map_err(io)?.ok_or_else(|| input("no frames (no movi list)".into()))?;
            if &id == b"LIST" {
                let mut kind = [0u8; 4];
                file.read_exact(&mut kind).map_err(|_| input("a LIST chunk cut short".into()))?;
                if &kind == b"movi" {
                    let video: RawVideo = video.ok_or_else(|| input("no video stream header (hdrl) before the frames".into()))?;
                    // A frame larger than the file holding it: a header not
                    // this file's (its buffer, sized by the header, was
                    // allocated before the refusal: 806 MB for 16384 x 16384).
                    if video.frame_bytes() as u64 > file_bytes {
                        return Err(input(format!(
                            "frames of {}x{} px ({} bytes each) in a file of {file_bytes} bytes: the header does not describe this file",
                            video.width_px,
                            video.height_px,
                            video.frame_bytes()
                        )));
                    }
                    // The frames are read by scanning to the end of the file,
                    // not to the end of this list: its size is 0 in a file
                    // whose writer crashed, and OpenDML parts follow it.
                    return Ok(RawAviReader { file, path: path.to_path_buf(), video, next_chunk: at + 12, file_bytes, scratch: vec![] });
                }
                if &kind == b"hdrl" {
                    let bytes = size.checked_sub(4).filter(|&n| n <= 1 << 20).ok_or_else(|| input(format!("hdrl: {size} bytes")))?;
                    let mut hdrl = vec![0u8; bytes as usize];
                    file.read_exact(&mut hdrl).map_err(|_| input("hdrl cut short".into()))?;
                    video = Some(parse_hdrl(&hdrl).map_err(input)?);
                }
            }
            at += 8 + size as u64 + (size & 1) as u64;
            if at >= file_bytes {
                return Err(input("no frames (no movi list)".into()));
            }
            file.seek(SeekFrom::Start(at)).map_err(io)?;
        }
    }

    pub fn video(&self) -> &RawVideo {
        &self.video
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next frame into `bgr`: top-down rows of `width_px * 3`
    /// bytes, `height_px` of them (a buffer of another size is a bug: it
    /// panics). False at the end of the frames; a last frame cut short (a
    /// crash while writing it) is the end.
    pub fn read_bgr(&mut self, bgr: &mut [u8]) -> Result<bool, AviError> {
        let (width, height) = (self.video.width_px as usize, self.video.height_px as usize);
        assert_eq!(bgr.len(), width * height * 3, "a frame buffer for {width}x{height} px BGR");
        if !self.next_frame()? {
            return Ok(false);
        }
        self.read_frame(bgr).map_err(|e| AviError::Io(self.path.clone(), e))?;
        Ok(true)
    }

    /// Passes over the next frame without reading its pixels (counting
    /// them); false at the end, as [`RawAviReader::read_bgr`].
    pub fn skip_frame(&mut self) -> Result<bool, AviError> {
        self.next_frame()
    }

    /// Finds the next whole frame and leaves the file at its pixels; false
    /// at the end of the frames.
    fn next_frame(&mut self) -> Result<bool, AviError> {
        let io = |e| AviError::Io(self.path.clone(), e);
        let frame_bytes = self.video.frame_bytes();
        loop {
            if self.next_chunk + 8 > self.file_bytes {
                return Ok(false);
            }
            self.file.seek(SeekFrom::Start(self.next_chunk)).map_err(io)?;
            let Some((id, size)) = chunk_header(&mut self.file).map_err(io)? else { return Ok(false) };
            let data_at = self.next_chunk + 8;
            match &id {
                // A zeroed tail (space a crashed writer had reserved).
                [0, 0, 0, 0] if size == 0 => return Ok(false),
                // Frames grouped in `rec ` lists: their chunks follow.
                b"LIST" => {
                    self.next_chunk = data_at + 4;
                    continue;
                }
                // An OpenDML part: `RIFF AVIX` then its `movi` list.
                b"RIFF" => {
                    self.next_chunk = data_at + 4;
                    continue;
                }
                _ => {}
            }
            self.next_chunk = data_at + size as u64 + (size & 1) as u64;
            // Stream 0's frames; everything else (indexes, JUNK) is skipped.
            if !(id[0..2] == *b"00" && (id[2..4] == *b"db" || id[2..4] == *b"dc")) {
                continue;
            }
            // A frame the file's end cuts short: the end.
            if data_at + size as u64 > self.file_bytes {
                return Ok(false);
            }
            if size as usize != frame_bytes {
                let v = self.video;
                return Err(AviError::Input(
                    self.path.clone(),
                    format!(
                        "a frame of {size} bytes at byte {data_at}: {}x{} px frames of {} bits have {frame_bytes}",
                        v.width_px, v.height_px, v.bits_per_pixel
                    ),
                ));
            }
            return Ok(true);
        }
    }

    /// The frame whose data is at the file's position, into top-down BGR.
    fn read_frame(&mut self, bgr: &mut [u8]) -> std::io::Result<()> {
        let v = self.video;
        let row = v.width_px as usize * 3;
        if v.bits_per_pixel == 24 && v.stride_bytes() == row {
            // One read, each stored row straight to its place: the kernel
            // turns the rows over as it copies (at most 1024 rows a call).
            let mut rows: Vec<&mut [u8]> = bgr.chunks_exact_mut(row).collect();
            if v.bottom_up {
                rows.reverse();
            }
            for batch in rows.chunks_mut(1024) {
                let mut slices: Vec<IoSliceMut> = batch.iter_mut().map(|r| IoSliceMut::new(r)).collect();
                let mut got = self.file.read_vectored(&mut slices)?;
                drop(slices);
                // A short read (rare on a file): the rest row by row.
                for r in batch.iter_mut() {
                    let done = got.min(r.len());
                    got -= done;
                    self.file.read_exact(&mut r[done..])?;
                }
            }
            return Ok(());
        }
        self.scratch.resize(v.frame_bytes(), 0);
        self.file.read_exact(&mut self.scratch)?;
        let bytes_per_pixel = v.bits_per_pixel as usize / 8;
        for (k, stored) in self.scratch.chunks_exact(v.stride_bytes()).enumerate() {
            let y = if v.bottom_up { v.height_px as usize - 1 - k } else { k };
            let out = &mut bgr[y * row..(y + 1) * row];
            for (o, p) in out.chunks_exact_mut(3).zip(stored.chunks_exact(bytes_per_pixel)) {
                o.copy_from_slice(&p[..3]);
            }
        }
        Ok(())
    }
}

/// The video stream of an `hdrl` list: its `avih`, then the first
/// `strl`'s `strh` and `strf` (one stream: the recorder's video).
fn parse_hdrl(hdrl: &[u8]) -> Result<RawVideo, String> {
    let mut frames_in_header = 0;
    let mut fps = f64::NAN;
    let mut at = 0;
    let mut strl: Option<&[u8]> = None;
    while at + 8 <= hdrl.len() {
        let (id, size) = (fourcc(&hdrl[at..]), u32_at(hdrl, at + 4) as usize);
        let data = hdrl.get(at + 8..at + 8 + size).ok_or_else(|| format!("hdrl: chunk {} runs past its list", String::from_utf8_lossy(&id)))?;
        match &id {
            b"avih" if size >= 20 => frames_in_header = u32_at(data, 16),
            b"LIST" if size >= 4 && &data[0..4] == b"strl" && strl.is_none() => strl = Some(&data[4..]),
            _ => {}
        }
        at += 8 + size + (size & 1);
    }
    let strl = strl.ok_or("no stream list (strl)")?;
    let (mut strh, mut strf) = (None, None);
    let mut at = 0;
    while at + 8 <= strl.len() {
        let (id, size) = (fourcc(&strl[at..]), u32_at(strl, at + 4) as usize);
        let data = strl.get(at + 8..at + 8 + size).ok_or("strl: a chunk runs past its list")?;
        match &id {
            b"strh" => strh = Some(data),
            b"strf" => strf = Some(data),
            _ => {}
        }
        at += 8 + size + (size & 1);
    }
    let strh = strh.filter(|h| h.len() >= 36).ok_or("no stream header (strh)")?;
    if &strh[0..4] != b"vids" {
        return Err(format!("the first stream is {:?}, not video", String::from_utf8_lossy(&strh[0..4])));
    }
    let (scale, rate) = (u32_at(strh, 20), u32_at(strh, 24));
    if scale > 0 && rate > 0 {
        fps = rate as f64 / scale as f64;
    }
    let strf = strf.filter(|f| f.len() >= 40).ok_or("no bitmap header (strf)")?;
    let width = u32_at(strf, 4) as i32;
    let height = u32_at(strf, 8) as i32;
    let bits = u16::from_le_bytes([strf[14], strf[15]]);
    let compression = fourcc(&strf[16..]);
    if compression != [0; 4] {
        return Err(format!("frames compressed as {:?}: not uncompressed BGR", String::from_utf8_lossy(&compression)));
    }
    if bits != 24 && bits != 32 {
        return Err(format!("{bits}-bit frames: 24 (BGR) or 32 (BGRA) are read"));
    }
    let side_ok = |s: u32| (1..=MAX_SIDE_PX).contains(&s);
    if width <= 0 || !side_ok(width as u32) || !side_ok(height.unsigned_abs()) {
        return Err(format!("frames of {width}x{height} px: 1 to {MAX_SIDE_PX} a side"));
    }
    Ok(RawVideo { width_px: width as u32, height_px: height.unsigned_abs(), bits_per_pixel: bits, bottom_up: height > 0, fps, frames_in_header })
}

/// Writes 24-bit BGR frames to an AVI file, rows top-down (a negative
/// height in the bitmap header), as FFmpeg writes them: OpenCV-Python's
/// FFmpeg crashed on the bottom-up rows of the DIB convention.
pub struct RawAviWriter {
    file: BufWriter<File>,
    path: PathBuf,
    video: RawVideo,
    /// Offsets of the frames from the first part's `movi` id, for `idx1`.
    first_part_frames: Vec<u32>,
    frames: u32,
    /// Where the current part's RIFF and movi sizes go.
    part_start: u64,
    movi_start: u64,
    /// Where the next byte goes.
    at: u64,
    part_limit_bytes: u64,
}

/// Offsets in the headers the writer fills in when it finishes.
const AVIH_TOTAL_FRAMES_AT: u64 = 12 + 12 + 8 + 16;
const STRH_LENGTH_AT: u64 = 12 + 12 + 8 + 56 + 12 + 8 + 32;

impl RawAviWriter {
    pub fn create(path: &Path, width_px: u32, height_px: u32, fps: f64) -> Result<RawAviWriter, AviError> {
        RawAviWriter::with_part_limit(path, width_px, height_px, fps, RIFF_PART_BYTES)
    }

    /// A writer whose RIFF parts close past `part_limit_bytes` (tests of
    /// the OpenDML parts use a small one).
    pub fn with_part_limit(path: &Path, width_px: u32, height_px: u32, fps: f64, part_limit_bytes: u64) -> Result<RawAviWriter, AviError> {
        let side_ok = |s: u32| (1..=MAX_SIDE_PX).contains(&s);
        if !(side_ok(width_px) && side_ok(height_px) && fps.is_finite() && fps > 0.0) {
            return Err(AviError::Input(path.to_path_buf(), format!("frames of {width_px}x{height_px} px at {fps} frames/s")));
        }
        let file = File::create(path).map_err(|e| AviError::Io(path.to_path_buf(), e))?;
        let video = RawVideo { width_px, height_px, bits_per_pixel: 24, bottom_up: false, fps, frames_in_header: 0 };
        let mut w = RawAviWriter {
            file: BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            video,
            first_part_frames: vec![],
            frames: 0,
            part_start: 0,
            movi_start: 0,
            at: 0,
            part_limit_bytes,
        };
        w.write_headers().map_err(|e| AviError::Io(path.to_path_buf(), e))?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    fn write_headers(&mut self) -> std::io::Result<()> {
        let v = self.video;
        // The frame rate as a ratio of integers: microhertz.
        let (scale, rate) = (1_000_000u32, (v.fps * 1e6).round().min(u32::MAX as f64) as u32);
        let frame_bytes = v.frame_bytes() as u32;
        let mut h = Vec::with_capacity(256);
        h.extend_from_slice(b"RIFF\0\0\0\0AVI LIST");
        h.extend_from_slice(&(4 + 8 + 56 + 12 + 8 + 56 + 8 + 40u32).to_le_bytes());
        h.extend_from_slice(b"hdrlavih");
        h.extend_from_slice(&56u32.to_le_bytes());
        let us_per_frame = (1e6 / v.fps).round() as u32;
        let max_bytes_per_s = (frame_bytes as f64 * v.fps).min(u32::MAX as f64) as u32;
        // AVIF_HASINDEX | AVIF_ISINTERLEAVED.
        for x in [us_per_frame, max_bytes_per_s, 0, 0x110, 0, 0, 1, frame_bytes, v.width_px, v.height_px, 0, 0, 0, 0] {
            h.extend_from_slice(&x.to_le_bytes());
        }
        h.extend_from_slice(b"LIST");
        h.extend_from_slice(&(4 + 8 + 56 + 8 + 40u32).to_le_bytes());
        h.extend_from_slice(b"strlstrh");
        h.extend_from_slice(&56u32.to_le_bytes());
        h.extend_from_slice(b"vids\0\0\0\0");
        for x in [0u32, 0, 0, scale, rate, 0, 0, frame_bytes, u32::MAX, 0] {
            h.extend_from_slice(&x.to_le_bytes());
        }
        for x in [0u16, 0, v.width_px as u16, v.height_px as u16] {
            h.extend_from_slice(&x.to_le_bytes());
        }
        h.extend_from_slice(b"strf");
        h.extend_from_slice(&40u32.to_le_bytes());
        h.extend_from_slice(&40u32.to_le_bytes());
        h.extend_from_slice(&(v.width_px as i32).to_le_bytes());
        h.extend_from_slice(&(-(v.height_px as i32)).to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&24u16.to_le_bytes());
        for x in [0u32, frame_bytes, 0, 0, 0, 0] {
            h.extend_from_slice(&x.to_le_bytes());
        }
        debug_assert_eq!(h.len(), 212);
        self.put(&h)?;
        self.start_movi()
    }

    /// `LIST movi` with its size 0 until the part is closed: a reader of
    /// a crashed file takes the frames to the end of the file.
    fn start_movi(&mut self) -> std::io::Result<()> {
        self.put(b"LIST\0\0\0\0movi")?;
        self.movi_start = self.at - 4;
        Ok(())
    }

    /// Appends a frame of top-down rows of `width_px * 3` bytes.
    pub fn write_bgr(&mut self, bgr: &[u8]) -> Result<(), AviError> {
        let v = self.video;
        let row = v.width_px as usize * 3;
        if bgr.len() != row * v.height_px as usize {
            return Err(AviError::Input(self.path.clone(), format!("a frame of {} bytes for {}x{} px BGR", bgr.len(), v.width_px, v.height_px)));
        }
        self.write_frame(bgr, row).map_err(|e| AviError::Io(self.path.clone(), e))
    }

    fn write_frame(&mut self, bgr: &[u8], row: usize) -> std::io::Result<()> {
        let frame_bytes = self.video.frame_bytes() as u64;
        if self.at + 8 + frame_bytes - self.part_start > self.part_limit_bytes && self.frames > 0 {
            self.close_part()?;
            self.part_start = self.at;
            self.put(b"RIFF\0\0\0\0AVIX")?;
            self.start_movi()?;
        }
        if self.part_start == 0 {
            self.first_part_frames.push((self.at - self.movi_start) as u32);
        }
        self.put(b"00db")?;
        self.put(&(frame_bytes as u32).to_le_bytes())?;
        let padding = [0u8; 3];
        let padding = &padding[..self.video.stride_bytes() - row];
        if padding.is_empty() {
            self.file.write_all(bgr)?;
        } else {
            for stored in bgr.chunks_exact(row) {
                self.file.write_all(stored)?;
                self.file.write_all(padding)?;
            }
        }
        self.at += frame_bytes;
        self.frames += 1;
        Ok(())
    }

    /// Writes the sizes of the part being written (and the first part's
    /// index before its first extension).
    fn close_part(&mut self) -> std::io::Result<()> {
        let movi_bytes = (self.at - self.movi_start) as u32;
        if self.part_start == 0 {
            let mut idx = Vec::with_capacity(8 + 16 * self.first_part_frames.len());
            idx.extend_from_slice(b"idx1");
            idx.extend_from_slice(&(16 * self.first_part_frames.len() as u32).to_le_bytes());
            let frame_bytes = self.video.frame_bytes() as u32;
            for &offset in &self.first_part_frames {
                idx.extend_from_slice(b"00db");
                // AVIIF_KEYFRAME.
                for x in [0x10u32, offset, frame_bytes] {
                    idx.extend_from_slice(&x.to_le_bytes());
                }
            }
            self.put(&idx)?;
        }
        self.patch(self.movi_start - 4, movi_bytes)?;
        self.patch(self.part_start + 4, (self.at - self.part_start - 8) as u32)
    }

    fn patch(&mut self, at: u64, value: u32) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        self.file.write_all(&value.to_le_bytes())?;
        self.file.seek(SeekFrom::Start(self.at))?;
        Ok(())
    }

    /// Writes the sizes and frame counts, and hands the file to the
    /// system (no fsync, as for the session's tables: a burst of hundreds
    /// of megabytes synced at once stalls every other writer on the disk).
    pub fn finish(mut self) -> Result<(), AviError> {
        self.finish_file().map_err(|e| AviError::Io(self.path.clone(), e))
    }

    fn finish_file(&mut self) -> std::io::Result<()> {
        self.close_part()?;
        self.patch(AVIH_TOTAL_FRAMES_AT, self.frames)?;
        self.patch(STRH_LENGTH_AT, self.frames)?;
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(width: usize, height: usize, k: usize) -> Vec<u8> {
        (0..width * height * 3).map(|i| (i * 7 + k * 31) as u8).collect()
    }

    fn read_all(path: &Path) -> Vec<Vec<u8>> {
        let mut reader = RawAviReader::open(path).unwrap();
        let mut frames = vec![];
        let v = *reader.video();
        let mut bgr = vec![0; v.width_px as usize * v.height_px as usize * 3];
        while reader.read_bgr(&mut bgr).unwrap() {
            frames.push(bgr.clone());
        }
        frames
    }

    #[test]
    fn frames_written_are_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // 13 px: rows padded to 40 bytes.
        for (width, height) in [(16, 8), (13, 5)] {
            let path = dir.path().join(format!("v{width}.avi"));
            let mut w = RawAviWriter::create(&path, width as u32, height as u32, 29.97).unwrap();
            let frames: Vec<_> = (0..5).map(|k| frame(width, height, k)).collect();
            for f in &frames {
                w.write_bgr(f).unwrap();
            }
            w.finish().unwrap();
            assert_eq!(read_all(&path), frames);
            let v = *RawAviReader::open(&path).unwrap().video();
            assert_eq!((v.width_px, v.height_px, v.bits_per_pixel, v.bottom_up, v.frames_in_header), (width as u32, height as u32, 24, false, 5));
            assert!((v.fps - 29.97).abs() < 1e-9, "{}", v.fps);
        }
    }

    #[test]
    fn frames_go_on_in_opendml_parts_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.avi");
        let mut w = RawAviWriter::with_part_limit(&path, 16, 8, 25.0, 1000).unwrap();
        let frames: Vec<_> = (0..7).map(|k| frame(16, 8, k)).collect();
        for f in &frames {
            w.write_bgr(f).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // 392-byte frame chunks: one in the first part (its headers take 224
        // bytes), then two a part.
        assert_eq!(bytes.windows(4).filter(|w| w == b"AVIX").count(), 3);
        assert_eq!(read_all(&path), frames);
    }

    #[test]
    fn a_crashed_recording_gives_its_whole_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.avi");
        let mut w = RawAviWriter::create(&path, 16, 8, 25.0).unwrap();
        let frames: Vec<_> = (0..4).map(|k| frame(16, 8, k)).collect();
        for f in &frames {
            w.write_bgr(f).unwrap();
        }
        // Flushed but never finished: no sizes, no index; then cut inside
        // the last frame.
        w.file.flush().unwrap();
        drop(w);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 100).unwrap();
        assert_eq!(read_all(&path), frames[..3]);
        let mut reader = RawAviReader::open(&path).unwrap();
        let mut skipped = 0;
        while reader.skip_frame().unwrap() {
            skipped += 1;
        }
        assert_eq!(skipped, 3);
    }

    #[test]
    fn hostile_headers_are_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.avi");
        let mut w = RawAviWriter::create(&good, 16, 8, 25.0).unwrap();
        w.write_bgr(&frame(16, 8, 0)).unwrap();
        w.finish().unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let strf = bytes.windows(4).position(|w| w == b"strf").unwrap() + 8;
        type Damage = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: Vec<(Damage, &str)> = vec![
            (Box::new(move |b| b[strf + 4..strf + 8].copy_from_slice(&100_000i32.to_le_bytes())), "frames of 100000x-8 px"),
            (Box::new(move |b| b[strf + 14] = 16), "16-bit frames"),
            (Box::new(move |b| b[strf + 16..strf + 20].copy_from_slice(b"MJPG")), "compressed as \"MJPG\""),
            (Box::new(|b| b[16..20].copy_from_slice(&u32::MAX.to_le_bytes())), "hdrl: 4294967295 bytes"),
            (Box::new(|b| b.truncate(40)), "cut short"),
            (Box::new(|b| b[8..12].copy_from_slice(b"WAVE")), "not an AVI file"),
            // 16384 x 16384 (806 MB a frame) in a file of a kilobyte.
            (
                Box::new(move |b| {
                    b[strf + 4..strf + 8].copy_from_slice(&16_384i32.to_le_bytes());
                    b[strf + 8..strf + 12].copy_from_slice(&(-16_384i32).to_le_bytes());
                }),
                "frames of 16384x16384 px (805306368 bytes each) in a file of",
            ),
        ];
        for (k, (damage, expected)) in cases.iter().enumerate() {
            let mut b = bytes.clone();
            damage(&mut b);
            let path = dir.path().join(format!("bad{k}.avi"));
            std::fs::write(&path, &b).unwrap();
            let e = RawAviReader::open(&path).err().unwrap_or_else(|| panic!("case {k} opened"));
            let message = e.to_string();
            assert!(message.contains(expected) && !message.contains('\n'), "case {k}: {message}");
            assert!(!sniff(&path));
        }
        // A frame chunk of the wrong size.
        let mut b = bytes.clone();
        let chunk = b.windows(4).position(|w| w == b"00db").unwrap();
        b[chunk + 4..chunk + 8].copy_from_slice(&12u32.to_le_bytes());
        let path = dir.path().join("short-frame.avi");
        std::fs::write(&path, &b).unwrap();
        let e = RawAviReader::open(&path).unwrap().read_bgr(&mut [0; 384]).unwrap_err();
        assert!(e.to_string().contains("a frame of 12 bytes") && e.to_string().contains("have 384"), "{e}");
        // Random bytes never panic.
        let mut state = 0x2545_f491u32;
        for k in 0..200 {
            let mut b = bytes.clone();
            for _ in 0..1 + k % 6 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let at = state as usize % b.len();
                b[at] = (state >> 8) as u8;
            }
            std::fs::write(&path, &b).unwrap();
            if let Ok(mut r) = RawAviReader::open(&path) {
                let v = *r.video();
                let mut bgr = vec![0; v.width_px as usize * v.height_px as usize * 3];
                while let Ok(true) = r.read_bgr(&mut bgr) {}
            }
        }
    }
}
