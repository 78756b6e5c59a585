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

/// The sensor's Modbus RTU slave address.
pub const SLAVE: u8 = 9;
/// Holding registers, as Robotiq's driver (`rq_sensor_com.c`) names them.
pub const REGISTER_SELECT_OUTPUT: u16 = 410;
pub const REGISTER_FIRMWARE_VERSION: u16 = 500;
pub const REGISTER_SERIAL_NUMBER: u16 = 510;
pub const REGISTER_PRODUCTION_YEAR: u16 = 514;
/// Written to `REGISTER_SELECT_OUTPUT`: the stream output.
pub const STREAM_OUTPUT: u16 = 0x0200;

/// `body` with its CRC appended (little-endian, as Modbus RTU sends it).
pub fn with_crc(body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    b.extend_from_slice(&crc16_modbus(body).to_le_bytes());
    b
}

/// Modbus "write multiple registers" (function 16) of `values` from `address`.
pub fn write_registers_request(address: u16, values: &[u16]) -> Vec<u8> {
    let mut b = vec![SLAVE, 0x10];
    b.extend_from_slice(&address.to_be_bytes());
    b.extend_from_slice(&(values.len() as u16).to_be_bytes());
    b.push((2 * values.len()) as u8);
    for v in values {
        b.extend_from_slice(&v.to_be_bytes());
    }
    with_crc(&b)
}

/// Modbus "read holding registers" (function 3): `count` from `address`.
pub fn read_registers_request(address: u16, count: u16) -> Vec<u8> {
    let mut b = vec![SLAVE, 0x03];
    b.extend_from_slice(&address.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    with_crc(&b)
}

/// Starts streaming: 0x0200 into register 410 with function 16, the
/// command Robotiq's driver and the public Python drivers send
/// (`09 10 01 9A 00 01 02 02 00 CD CA`).
pub fn start_stream_command() -> Vec<u8> {
    write_registers_request(REGISTER_SELECT_OUTPUT, &[STREAM_OUTPUT])
}

/// A Modbus reply from the sensor.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Function 16 done: the echo of address and count.
    Written { address: u16, count: u16 },
    /// Function 3: the registers read.
    Registers(Vec<u16>),
    /// The request was refused: function and exception code.
    Exception { function: u8, code: u8 },
}

/// The first valid reply in `bytes` (CRC checked) and where it ends.
/// `expect_registers`: the count of a function-3 request outstanding.
pub fn find_reply(bytes: &[u8], expect_registers: Option<u16>) -> Option<(Reply, usize)> {
    let checks = |at: usize, len: usize| bytes.len() >= at + len && crc16_modbus(&bytes[at..at + len]) == 0;
    for at in 0..bytes.len() {
        if bytes[at] != SLAVE || at + 1 >= bytes.len() {
            continue;
        }
        let function = bytes[at + 1];
        match function {
            0x10 if checks(at, 8) => {
                let word = |i: usize| u16::from_be_bytes([bytes[at + i], bytes[at + i + 1]]);
                return Some((Reply::Written { address: word(2), count: word(4) }, at + 8));
            }
            0x03 if expect_registers.is_some() && at + 2 < bytes.len() => {
                let n = bytes[at + 2] as usize;
                if n == 2 * expect_registers.unwrap_or(0) as usize && checks(at, 5 + n) {
                    let regs = bytes[at + 3..at + 3 + n].chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]])).collect();
                    return Some((Reply::Registers(regs), at + 5 + n));
                }
            }
            f if f & 0x80 != 0 && checks(at, 5) => return Some((Reply::Exception { function: f & 0x7F, code: bytes[at + 2] }, at + 5)),
            _ => {}
        }
    }
    None
}

/// What a Modbus exception code means.
pub fn exception_name(code: u8) -> &'static str {
    match code {
        1 => "illegal function",
        2 => "illegal data address",
        3 => "illegal data value",
        4 => "slave device failure",
        _ => "unknown exception",
    }
}

/// A request as the sensor's side sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    WriteRegisters {
        address: u16,
        values: Vec<u16>,
    },
    ReadRegisters {
        address: u16,
        count: u16,
    },
    /// Any other function (8-byte requests, as functions 1 to 6 are).
    Other {
        function: u8,
    },
}

/// The first valid request to the sensor in `bytes` and where it ends.
pub fn find_request(bytes: &[u8]) -> Option<(Request, usize)> {
    let checks = |at: usize, len: usize| bytes.len() >= at + len && crc16_modbus(&bytes[at..at + len]) == 0;
    let word = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    for at in 0..bytes.len().saturating_sub(1) {
        if bytes[at] != SLAVE {
            continue;
        }
        match bytes[at + 1] {
            0x10 if at + 6 < bytes.len() && checks(at, 9 + bytes[at + 6] as usize) => {
                let n = bytes[at + 6] as usize;
                let values = bytes[at + 7..at + 7 + n].chunks(2).filter(|w| w.len() == 2).map(|w| u16::from_be_bytes([w[0], w[1]])).collect();
                return Some((Request::WriteRegisters { address: word(at + 2), values }, at + 9 + n));
            }
            0x03 if checks(at, 8) => return Some((Request::ReadRegisters { address: word(at + 2), count: word(at + 4) }, at + 8)),
            f if f != 0x10 && f != 0x03 && f < 0x80 && checks(at, 8) => return Some((Request::Other { function: f }, at + 8)),
            _ => {}
        }
    }
    None
}

/// The sensor's identity from its registers, formatted as Robotiq's
/// driver does: firmware `FTS-3.0.1` (registers 500-502), serial number
/// `FTS-0042` (510-513), production year (514).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Identity {
    pub firmware: String,
    pub serial_number: String,
    pub production_year: u16,
}

impl Identity {
    pub fn firmware_from(r: &[u16]) -> String {
        let c = |v: u16| v as u8 as char;
        format!("{}{}{}-{}.{}.{}", c(r[0] >> 8), c(r[0] & 0xFF), c(r[1] >> 8), r[1] & 0xFF, r[2] >> 8, r[2] & 0xFF)
    }
    pub fn serial_from(r: &[u16]) -> String {
        let c = |v: u16| v as u8 as char;
        let number = ((r[3] as u32) << 16) | r[2] as u32;
        if number == 0 {
            "UNKNOWN".into()
        } else {
            format!("{}{}{}-{number:04}", c(r[0] >> 8), c(r[0] & 0xFF), c(r[1] >> 8))
        }
    }
    /// The registers an FT 300 with this identity holds (for emulators).
    pub fn registers(firmware: (u8, u8, u8), serial: u32, year: u16) -> Vec<(u16, u16)> {
        let w = |a: u8, b: u8| ((a as u16) << 8) | b as u16;
        vec![
            (500, w(b'F', b'T')),
            (501, w(b'S', firmware.0)),
            (502, w(firmware.1, firmware.2)),
            (510, w(b'F', b'T')),
            (511, w(b'S', 0)),
            (512, serial as u16),
            (513, (serial >> 16) as u16),
            (514, year),
        ]
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "firmware {}, serial {}, made {}", self.firmware, self.serial_number, self.production_year)
    }
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
        // A Modbus frame followed by its CRC (LE) checks to zero; the start
        // command is byte for byte the one Robotiq's driver sends.
        let c = start_stream_command();
        assert_eq!(c, [0x09, 0x10, 0x01, 0x9A, 0x00, 0x01, 0x02, 0x02, 0x00, 0xCD, 0xCA]);
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

    #[test]
    fn modbus_requests_and_replies_round_trip_through_the_scanners() {
        let (req, end) = find_request(&[[0xFF, 0x00].as_slice(), &start_stream_command()].concat()).unwrap();
        assert_eq!(req, Request::WriteRegisters { address: 410, values: vec![0x0200] });
        assert_eq!(end, 13);
        assert_eq!(find_request(&read_registers_request(500, 3)).unwrap().0, Request::ReadRegisters { address: 500, count: 3 });
        let fc06 = with_crc(&[0x09, 0x06, 0x01, 0x9A, 0x02, 0x00]);
        assert_eq!(find_request(&fc06).unwrap().0, Request::Other { function: 6 });
        // A damaged request is no request.
        let mut bad = start_stream_command();
        bad[8] ^= 1;
        assert_eq!(find_request(&bad), None);
        // Replies: the echo, registers, an exception, after stream bytes.
        let echo = with_crc(&[0x09, 0x10, 0x01, 0x9A, 0x00, 0x01]);
        assert_eq!(find_reply(&[&[0x20, 0x4E][..], &echo].concat(), None).unwrap(), (Reply::Written { address: 410, count: 1 }, 10));
        let regs: Vec<u16> = Identity::registers((3, 0, 1), 42, 2019).iter().filter(|(a, _)| (500..503).contains(a)).map(|(_, v)| *v).collect();
        let mut body = vec![0x09, 0x03, 6];
        regs.iter().for_each(|r| body.extend_from_slice(&r.to_be_bytes()));
        let Some((Reply::Registers(r), _)) = find_reply(&with_crc(&body), Some(3)) else { panic!() };
        assert_eq!(Identity::firmware_from(&r), "FTS-3.0.1");
        let serial: Vec<u16> = Identity::registers((3, 0, 1), 42, 2019).iter().filter(|(a, _)| (510..514).contains(a)).map(|(_, v)| *v).collect();
        assert_eq!(Identity::serial_from(&serial), "FTS-0042");
        assert_eq!(find_reply(&with_crc(&[0x09, 0x86, 0x01]), None).unwrap().0, Reply::Exception { function: 6, code: 1 });
    }
}
