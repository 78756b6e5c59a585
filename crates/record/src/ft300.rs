//! Robotiq FT 300 stream mode (100 Hz): 16-byte frames
//! `0x20 0x4E | Fx Fy Fz (i16 LE, N x 100) | Mx My Mz (i16 LE, N m x 1000) | CRC-16/Modbus (LE)`.
//! The decoder syncs on the header, checks the CRC, re-syncs after garbage
//! and counts what it dropped.

/// CRC-16/Modbus (poly 0xA001 reflected, init 0xFFFF).
pub fn crc16_modbus(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &b in bytes {
        crc ^= b as u16;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xA001 } else { crc >> 1 };
        }
    }
    crc
}

pub const FRAME_LEN: usize = 16;
pub const HEADER: [u8; 2] = [0x20, 0x4E];
/// The rate the sensor streams at \[Hz\].
pub const STREAM_RATE_HZ: f64 = 100.0;

/// Modbus RTU "write single register" 410 = 0x0200 to slave 9: starts streaming.
pub fn start_stream_command() -> Vec<u8> {
    let mut b = vec![0x09, 0x06, 0x01, 0x9A, 0x02, 0x00];
    let crc = crc16_modbus(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// A burst of 0xFF stops streaming.
pub fn stop_stream_burst() -> Vec<u8> {
    vec![0xFF; 50]
}

/// One wrench sample: forces \[N\], moments \[N m\].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wrench {
    pub force_n: [f64; 3],
    pub moment_nm: [f64; 3],
}

pub fn encode_frame(w: &Wrench) -> [u8; FRAME_LEN] {
    let mut f = [0u8; FRAME_LEN];
    f[..2].copy_from_slice(&HEADER);
    for i in 0..3 {
        let v = (w.force_n[i] * 100.0).round().clamp(i16::MIN as f64, i16::MAX as f64) as i16;
        f[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_le_bytes());
        let m = (w.moment_nm[i] * 1000.0).round().clamp(i16::MIN as f64, i16::MAX as f64) as i16;
        f[8 + 2 * i..10 + 2 * i].copy_from_slice(&m.to_le_bytes());
    }
    let crc = crc16_modbus(&f[..14]);
    f[14..].copy_from_slice(&crc.to_le_bytes());
    f
}

fn decode_payload(f: &[u8]) -> Wrench {
    let v = |i: usize| i16::from_le_bytes([f[i], f[i + 1]]) as f64;
    Wrench { force_n: [v(2) / 100.0, v(4) / 100.0, v(6) / 100.0], moment_nm: [v(8) / 1000.0, v(10) / 1000.0, v(12) / 1000.0] }
}

/// Streaming decoder: feed bytes, get wrenches.
#[derive(Default, Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    pub frames: u64,
    pub crc_errors: u64,
    /// Bytes skipped while searching for a header.
    pub skipped_bytes: u64,
}

impl Decoder {
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Wrench>) {
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        while self.buf.len() - at >= FRAME_LEN {
            if self.buf[at] != HEADER[0] || self.buf[at + 1] != HEADER[1] {
                at += 1;
                self.skipped_bytes += 1;
                continue;
            }
            let f = &self.buf[at..at + FRAME_LEN];
            let crc = u16::from_le_bytes([f[14], f[15]]);
            if crc16_modbus(&f[..14]) == crc {
                out.push(decode_payload(f));
                self.frames += 1;
                at += FRAME_LEN;
            } else {
                // A header inside garbage or a damaged frame: skip one byte
                // and search again (the next real header re-syncs us).
                self.crc_errors += 1;
                at += 1;
                self.skipped_bytes += 1;
            }
        }
        self.buf.drain(..at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_modbus_check_value() {
        // CRC-16/MODBUS check value for "123456789".
        assert_eq!(crc16_modbus(b"123456789"), 0x4B37);
        // A Modbus frame followed by its CRC (LE) checks to zero.
        let c = start_stream_command();
        assert_eq!(c.len(), 8);
        assert_eq!(crc16_modbus(&c), 0);
    }

    #[test]
    fn frames_round_trip_and_resync_after_garbage() {
        let w = Wrench { force_n: [1.23, -4.56, 7.89], moment_nm: [0.012, -0.034, 0.056] };
        let mut stream = vec![0x20, 0x4E, 0x01, 0xFF]; // a false header
        stream.extend_from_slice(&encode_frame(&w));
        let mut bad = encode_frame(&w);
        bad[5] ^= 0x40; // damaged frame
        stream.extend_from_slice(&bad);
        stream.extend_from_slice(&encode_frame(&w)[..9]); // truncated
        stream.extend_from_slice(&encode_frame(&w));
        let mut d = Decoder::default();
        let mut out = vec![];
        for chunk in stream.chunks(5) {
            d.feed(chunk, &mut out);
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], Wrench { force_n: [1.23, -4.56, 7.89], moment_nm: [0.012, -0.034, 0.056] });
        assert!(d.crc_errors >= 1);
    }
}
