//! ASCII line sensors (science §7): one sample per line, fields separated by
//! a configured separator, each field scaled to SI by a configured factor.
//! The decoder drops the first (possibly partial) line, rejects lines with
//! the wrong number of fields or unparsable numbers, and re-syncs on the next
//! line end after garbage or an over-long line. A line ends at `\n`, `\r`
//! or both (sensors that send only carriage returns record too); bytes that
//! never end a line are rejected as what they are, so that a device that
//! sent binary data is not said to have sent nothing.

/// Lines longer than this are garbage (no sensor sends kilobyte lines).
pub const MAX_LINE_BYTES: usize = 1024;

pub use session::rig::Separator;

/// Streaming decoder: feed bytes, get scaled samples.
#[derive(Debug)]
pub struct LineDecoder {
    separator: Separator,
    scales: Vec<f64>,
    buf: Vec<u8>,
    /// Until the first newline the line may have started before we listened.
    synced: bool,
    /// Inside an over-long line: drop bytes until the next newline.
    discarding: bool,
    pub lines: u64,
    /// Lines rejected: wrong field count, unparsable or non-finite numbers, too long.
    pub bad_lines: u64,
    /// Why the last rejected line was rejected ("3 fields, the rig names 4 columns").
    pub last_rejection: Option<String>,
    /// Bytes seen since the last line end while not yet in step with the
    /// lines, and the first few of them (for the rejection's message).
    unsynced: usize,
    unsynced_head: Vec<u8>,
}

impl LineDecoder {
    /// `scales[i]` multiplies field `i`; the number of scales is the number of fields.
    pub fn new(separator: Separator, scales: Vec<f64>) -> LineDecoder {
        LineDecoder {
            separator,
            scales,
            buf: Vec::with_capacity(256),
            synced: false,
            discarding: false,
            lines: 0,
            bad_lines: 0,
            last_rejection: None,
            unsynced: 0,
            unsynced_head: vec![],
        }
    }

    /// The line was silent for a while (a read timed out with nothing
    /// pending): the next byte starts a line, so the first line is whole.
    pub fn mark_idle(&mut self) {
        if self.buf.is_empty() && !self.discarding {
            self.synced = true;
        }
    }

    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Vec<f64>>) {
        for &b in bytes {
            if b == b'\n' || b == b'\r' {
                if !self.synced || self.discarding {
                    self.synced = true;
                    self.discarding = false;
                } else {
                    self.finish_line(out);
                }
                self.buf.clear();
                self.unsynced = 0;
                self.unsynced_head.clear();
            } else if !self.synced || self.discarding {
                self.count_unsynced(b);
            } else if self.synced && !self.discarding {
                if self.buf.len() >= MAX_LINE_BYTES {
                    self.reject(format!("a line longer than {MAX_LINE_BYTES} bytes"));
                    self.discarding = true;
                    self.buf.clear();
                } else {
                    self.buf.push(b);
                }
            }
        }
    }

    fn finish_line(&mut self, out: &mut Vec<Vec<f64>>) {
        let Ok(text) = std::str::from_utf8(&self.buf) else {
            self.reject("a line that is not text (UTF-8)".into());
            return;
        };
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        match self.parse(text) {
            Ok(v) => {
                self.lines += 1;
                out.push(v);
            }
            Err(why) => self.reject(why),
        }
    }

    /// A byte outside any line: past a line's worth of them, rejected as
    /// output without line ends (once per line's worth).
    fn count_unsynced(&mut self, b: u8) {
        self.unsynced += 1;
        if self.unsynced_head.len() < 8 {
            self.unsynced_head.push(b);
        }
        if self.unsynced > MAX_LINE_BYTES {
            let head: Vec<String> = self.unsynced_head.iter().map(|b| format!("{b:02x}")).collect();
            self.reject(format!(
                "{} bytes without a line end (\\n or \\r), beginning {}: not lines of text (binary data, or another baud rate?)",
                self.unsynced,
                head.join(" ")
            ));
            self.unsynced = 0;
            self.unsynced_head.clear();
        }
    }

    fn reject(&mut self, why: String) {
        self.bad_lines += 1;
        self.last_rejection = Some(why);
    }

    /// The line's scaled values, or why it is not a sample.
    fn parse(&self, text: &str) -> Result<Vec<f64>, String> {
        let fields: Vec<&str> = match self.separator {
            Separator::Whitespace => text.split_whitespace().collect(),
            Separator::Char(c) => text.split(c).collect(),
        };
        if fields.len() != self.scales.len() {
            return Err(format!("{} fields, the rig names {} columns (line {:?})", fields.len(), self.scales.len(), clip(text)));
        }
        fields
            .iter()
            .zip(&self.scales)
            .enumerate()
            .map(|(i, (field, scale))| match field.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v * scale),
                _ => Err(format!("field {} ({:?}) is not a finite number (line {:?})", i + 1, clip(field), clip(text))),
            })
            .collect()
    }
}

/// At most 40 characters of `text`, for a message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

/// Formats one line as an emulated sensor sends it.
pub fn format_line(values: &[f64], separator: &Separator) -> String {
    let sep = match separator {
        Separator::Whitespace => " ".to_string(),
        Separator::Char(c) => c.to_string(),
    };
    let mut s = values.iter().map(|v| format!("{v}")).collect::<Vec<_>>().join(&sep);
    s.push_str("\r\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn decode_all(d: &mut LineDecoder, bytes: &[u8], chunk: usize) -> Vec<Vec<f64>> {
        let mut out = vec![];
        for c in bytes.chunks(chunk.max(1)) {
            d.feed(c, &mut out);
        }
        out
    }

    #[test]
    fn parses_scales_and_skips_the_first_partial_line() {
        let mut d = LineDecoder::new(Separator::parse(",").unwrap(), vec![1.0, 1e-3]);
        let out = decode_all(&mut d, b"5,12\r\n1,250\r\n2, -500 \n\n3,x\n4,1,2\n", 3);
        assert_eq!(out, vec![vec![1.0, 0.25], vec![2.0, -0.5]]);
        assert_eq!((d.lines, d.bad_lines), (2, 2));
        let mut d = LineDecoder::new(Separator::parse(" ").unwrap(), vec![1.0, 2.0]);
        assert_eq!(decode_all(&mut d, b"\n1 \t 2\n", 1), vec![vec![1.0, 4.0]]);
        assert!(Separator::parse("ab").is_err() && Separator::parse("1").is_err());
        // After silence, the first line is known to be whole.
        let mut d = LineDecoder::new(Separator::Char(','), vec![1.0]);
        d.mark_idle();
        assert_eq!(decode_all(&mut d, b"7\n8\n", 1), vec![vec![7.0], vec![8.0]]);
    }

    /// A sensor that ends its lines with carriage returns only records;
    /// one that sends binary data without line ends is rejected saying so
    /// (before: "no sample arrived", although bytes did).
    #[test]
    fn carriage_returns_end_lines_and_bytes_without_line_ends_are_named() {
        let mut d = LineDecoder::new(Separator::Char(','), vec![1.0, 1.0]);
        assert_eq!(decode_all(&mut d, b"9,9\r1,2\r3,4\r", 2), vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        let mut d = LineDecoder::new(Separator::Char(','), vec![1.0, 1.0]);
        let garbage: Vec<u8> = (0..3000u32).map(|i| (i * 37 % 251) as u8).filter(|b| *b != b'\n' && *b != b'\r').collect();
        assert!(decode_all(&mut d, &garbage, 64).is_empty());
        let why = d.last_rejection.clone().unwrap_or_default();
        assert!(d.bad_lines >= 2 && why.contains("1025 bytes without a line end (\\n or \\r), beginning "), "{} {why}", d.bad_lines);
    }

    /// Property test: whatever garbage, truncation or chunking is injected
    /// between valid lines, the decoder never panics, never invents a sample,
    /// and decodes every valid line that is preceded by a newline it saw.
    #[test]
    fn property_garbage_truncation_and_chunking() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for case in 0..300 {
            let sep = [Separator::Char(','), Separator::Char(';'), Separator::Whitespace][case % 3].clone();
            let n = 1 + case % 4;
            let mut d = LineDecoder::new(sep.clone(), vec![1.0; n]);
            let mut stream = b"\n".to_vec();
            let mut expected = vec![];
            for seq in 0..200 {
                let mut values = vec![seq as f64];
                values.extend((1..n).map(|_| (rng.gen_range(-1e6..1e6f64) * 1e3).round() / 1e3));
                let line = format_line(&values, &sep);
                match rng.gen_range(0..10) {
                    0 => {
                        // Garbage bytes (no newline) glued before a line: that line is lost.
                        stream.extend((0..rng.gen_range(1..40)).map(|_| rng.gen_range(0..=255u8)).filter(|b| *b != b'\n' && *b != b'\r'));
                        stream.extend_from_slice(line.as_bytes());
                    }
                    1 => {
                        // Truncated line, then a newline: rejected or, if the cut
                        // kept a complete prefix, a sample we must not count on.
                        let cut = rng.gen_range(0..line.len() - 2);
                        stream.extend_from_slice(&line.as_bytes()[..cut]);
                        stream.push(b'\n');
                    }
                    2 => {
                        // An over-long line.
                        stream.extend(std::iter::repeat_n(b'7', MAX_LINE_BYTES + 5));
                        stream.push(b'\n');
                    }
                    _ => {
                        stream.extend_from_slice(line.as_bytes());
                        expected.push(values);
                    }
                }
            }
            let out = decode_all(&mut d, &stream, rng.gen_range(1..64));
            // Every intact line is decoded exactly, in order.
            let mut it = out.iter();
            for e in &expected {
                assert!(it.any(|o| o == e), "case {case}: line {e:?} lost");
            }
            assert!(d.bad_lines > 0 || expected.len() == 200);
            assert!(out.iter().all(|v| v.len() == n && v.iter().all(|x| x.is_finite())));
        }
    }
}
