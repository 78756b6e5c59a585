//! An image's size from its header, before OpenCV decodes it: a 282 KB PNG
//! that decodes to 16000 x 16000 took 7.3 GB over 50 s. PNG, JPEG and BMP
//! (what cameras and calibration tools write) are read; others pass to
//! OpenCV unchecked.

use crate::detect::TrackError;
use std::io::Read;
use std::path::Path;

/// The most pixels an image may have: 64 Mpx (an 8K frame is 33).
pub const MAX_IMAGE_PIXELS: u64 = 64 << 20;

/// Width and height from a PNG, JPEG or BMP header; None for another
/// format or a header that does not say.
pub fn dimensions(path: &Path) -> Option<(u64, u64)> {
    let mut head = Vec::with_capacity(64 * 1024);
    std::fs::File::open(path).ok()?.take(64 * 1024).read_to_end(&mut head).ok()?;
    let be32 = |b: &[u8], at: usize| b.get(at..at + 4).map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]) as u64);
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|v| u16::from_be_bytes([v[0], v[1]]) as u64);
    let le32 = |b: &[u8], at: usize| b.get(at..at + 4).map(|v| i32::from_le_bytes([v[0], v[1], v[2], v[3]]).unsigned_abs() as u64);
    if head.starts_with(b"\x89PNG\r\n\x1a\n") && head.get(12..16) == Some(b"IHDR") {
        return Some((be32(&head, 16)?, be32(&head, 20)?));
    }
    if head.starts_with(b"BM") {
        return Some((le32(&head, 18)?, le32(&head, 22)?));
    }
    if head.starts_with(&[0xFF, 0xD8]) {
        // The segments up to a start of frame (SOF0-15 but DHT, JPG, DAC).
        let mut at = 2;
        while let (Some(&0xFF), Some(&marker)) = (head.get(at), head.get(at + 1)) {
            let length = be16(&head, at + 2)? as usize;
            if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
                return Some((be16(&head, at + 7)?, be16(&head, at + 5)?));
            }
            at += 2 + length;
        }
    }
    None
}

/// Refuses an image whose header says it has more than [`MAX_IMAGE_PIXELS`].
pub fn check(path: &Path) -> Result<(), TrackError> {
    match dimensions(path) {
        Some((w, h)) if w.saturating_mul(h) > MAX_IMAGE_PIXELS => Err(TrackError::Input(format!(
            "{}: {w} x {h} px, over the {MAX_IMAGE_PIXELS} pixels an image may have (its header, before decoding)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers of each format, written by OpenCV, read back; a PNG header
    /// claiming 16000 x 16000 is refused before decoding.
    #[test]
    fn sizes_are_read_from_headers_and_huge_ones_refused() {
        use opencv::core::{Mat, Scalar, Vector, CV_8UC1};
        use opencv::imgcodecs;
        let dir = tempfile::tempdir().unwrap();
        let m = Mat::new_rows_cols_with_default(48, 64, CV_8UC1, Scalar::all(128.0)).unwrap();
        for ext in ["png", "jpg", "bmp"] {
            let p = dir.path().join(format!("board.{ext}"));
            assert!(imgcodecs::imwrite(&p.to_string_lossy(), &m, &Vector::new()).unwrap());
            assert_eq!(dimensions(&p), Some((64, 48)), "{ext}");
            check(&p).unwrap();
        }
        let png = dir.path().join("board.png");
        let mut bytes = std::fs::read(&png).unwrap();
        bytes[16..20].copy_from_slice(&16_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&16_000u32.to_be_bytes());
        let huge = dir.path().join("huge.png");
        std::fs::write(&huge, &bytes).unwrap();
        let e = check(&huge).unwrap_err().to_string();
        assert!(e.contains("huge.png: 16000 x 16000 px, over the"), "{e}");
    }
}
