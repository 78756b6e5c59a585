//! The fourth word of every C3D point (residual and camera mask), decoded
//! from the file's bytes as the C3D standard and the reference readers
//! (py-c3d, ezc3d) decode it. Part of stage "record" (a motion-capture
//! import, [`crate::c3d`]).
//!
//! The word is a signed 16-bit integer: negative marks the sample invalid;
//! otherwise its low byte is the residual (in units of |POINT:SCALE|, 0-255)
//! and bits 8-14 the cameras that saw the point. In the floating-point
//! format the same integer is stored as a float (Qualisys writes 32658.0:
//! cameras 127, residual 146). c3dio 0.8 reads the low byte as a signed
//! byte, so every residual above 127 |scale| turned negative there, and a
//! camera mask with bit 7 set was not taken as invalid: the import reads
//! the word itself.

/// One point's fourth word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointWord(pub i32);

impl PointWord {
    /// A sample the writer kept (the word is not negative).
    pub fn valid(self) -> bool {
        self.0 >= 0
    }

    /// The residual in units of |POINT:SCALE| (0-255).
    pub fn residual_byte(self) -> u8 {
        (self.0 & 0xff) as u8
    }

    /// The cameras that saw the point, one bit each (7 bits).
    pub fn cameras(self) -> u8 {
        ((self.0 & 0x7f00) >> 8) as u8
    }
}

/// The byte order (and float format) of a file's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Processor {
    Intel,
    Dec,
    Mips,
}

impl Processor {
    fn i16(self, b: [u8; 2]) -> i16 {
        match self {
            Processor::Mips => i16::from_be_bytes(b),
            _ => i16::from_le_bytes(b),
        }
    }

    fn u16(self, b: [u8; 2]) -> u16 {
        self.i16(b) as u16
    }

    fn f32(self, b: [u8; 4]) -> f32 {
        match self {
            Processor::Intel => f32::from_le_bytes(b),
            Processor::Mips => f32::from_be_bytes(b),
            // DEC's F-float: the two 16-bit halves swapped, and an exponent
            // two higher than IEEE's (a quarter of the value).
            Processor::Dec => f32::from_le_bytes([b[2], b[3], b[0], b[1]]) / 4.0,
        }
    }
}

/// Where a file's point data lie and how they are stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointLayout {
    processor_: Processor,
    /// Byte offset of the first frame.
    pub data_start: usize,
    /// Points per frame.
    pub points: usize,
    /// Analog samples per frame (all channels).
    pub analog_per_frame: usize,
    /// Floating-point format (the header's scale is negative).
    pub float: bool,
    /// |scale|: the residual's unit and (integer format) the coordinates'.
    pub scale_magnitude: f64,
}

impl PointLayout {
    /// The layout the header states (checked against the file's size by
    /// [`crate::c3d::check_c3d_header`] before).
    pub fn from_header(bytes: &[u8]) -> Result<PointLayout, String> {
        if bytes.len() < 512 {
            return Err("no C3D header".into());
        }
        let param_start = 512 * usize::from(bytes[0]).saturating_sub(1);
        let processor_ = match bytes.get(param_start + 3) {
            Some(84) => Processor::Intel,
            Some(85) => Processor::Dec,
            Some(86) => Processor::Mips,
            _ => return Err("the parameter block names no processor type".into()),
        };
        let word = |k: usize| usize::from(processor_.u16([bytes[2 * k], bytes[2 * k + 1]]));
        let scale = processor_.f32([bytes[12], bytes[13], bytes[14], bytes[15]]);
        if !scale.is_finite() {
            return Err(format!("the header's scale factor is {scale}"));
        }
        Ok(PointLayout {
            processor_,
            data_start: 512 * word(8).saturating_sub(1),
            points: word(1),
            analog_per_frame: word(2),
            float: scale <= 0.0,
            scale_magnitude: f64::from(scale.abs()),
        })
    }

    /// Bytes of one stored value.
    fn value_bytes(&self) -> usize {
        if self.float {
            4
        } else {
            2
        }
    }

    /// Bytes of one frame (points and analog samples).
    pub fn frame_bytes(&self) -> usize {
        self.value_bytes() * (4 * self.points + self.analog_per_frame)
    }

    /// The fourth word of point `point` in frame `frame` (from the data's
    /// start); `None` outside the file. A stored float that is not finite
    /// (no word at all) reads as invalid.
    pub fn word(&self, bytes: &[u8], frame: usize, point: usize) -> Option<PointWord> {
        let size = self.value_bytes();
        let at = self.data_start + frame * self.frame_bytes() + (4 * point + 3) * size;
        let raw = bytes.get(at..at + size)?;
        Some(PointWord(if self.float {
            let v = self.processor_.f32([raw[0], raw[1], raw[2], raw[3]]);
            // The integer the float holds, truncated toward zero as the
            // reference readers cast it.
            if v.is_finite() {
                v.trunc().clamp(i32::MIN as f32, i32::MAX as f32) as i32
            } else {
                -1
            }
        } else {
            i32::from(self.processor_.i16([raw[0], raw[1]]))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qualisys_word_is_valid_with_its_residual_byte_above_127() {
        // 32658 = 0x7F92: cameras 127, residual 146.
        let w = PointWord(32658);
        assert!(w.valid());
        assert_eq!((w.cameras(), w.residual_byte()), (127, 146));
        assert!(!PointWord(-1).valid());
        // Bit 15 set (an integer word of 0x8005): invalid, whatever its low byte.
        assert!(!PointWord(i32::from(0x8005u16 as i16)).valid());
    }

    /// A one-frame, one-point file laid out by hand, in each processor's order.
    fn file(processor: u8, float: bool, fourth: f32) -> Vec<u8> {
        let mut b = vec![0u8; 3 * 512];
        let be = processor == 86;
        let put16 = |b: &mut Vec<u8>, at: usize, v: u16| {
            let x = if be { v.to_be_bytes() } else { v.to_le_bytes() };
            b[at..at + 2].copy_from_slice(&x);
        };
        let f32_bytes = |v: f32| -> [u8; 4] {
            match processor {
                86 => v.to_be_bytes(),
                85 => {
                    let l = (v * 4.0).to_le_bytes();
                    [l[2], l[3], l[0], l[1]]
                }
                _ => v.to_le_bytes(),
            }
        };
        b[0] = 2;
        b[1] = 0x50;
        put16(&mut b, 2, 1);
        put16(&mut b, 16, 3);
        let scale = if float { -0.5f32 } else { 0.5 };
        b[12..16].copy_from_slice(&f32_bytes(scale));
        b[512 + 3] = processor;
        if float {
            b[1024 + 12..1024 + 16].copy_from_slice(&f32_bytes(fourth));
        } else {
            put16(&mut b, 1024 + 6, fourth as i16 as u16);
        }
        b
    }

    #[test]
    fn every_processor_and_format_reads_the_same_word() {
        for processor in [84, 85, 86] {
            for float in [true, false] {
                for (stored, expect) in [(32658.0, 32658), (146.0, 146), (-1.0, -1), (0.0, 0)] {
                    let b = file(processor, float, stored);
                    let layout = PointLayout::from_header(&b).unwrap();
                    assert_eq!(layout.float, float);
                    assert_eq!(layout.scale_magnitude, 0.5);
                    assert_eq!(layout.word(&b, 0, 0), Some(PointWord(expect)), "processor {processor}, float {float}, {stored}");
                    assert_eq!(layout.word(&b, 64, 0), None, "past the file");
                }
            }
        }
    }
}
