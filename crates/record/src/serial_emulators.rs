//! Emulated serial sensors for dry runs and tests. They write the same bytes
//! as the real devices to a serial device, usually one end of a `socat` pty
//! pair whose other end the recorder opens.

use crate::ascii::{format_line, Separator};
use crate::ft300::{encode_frame, start_stream_command, Wrench};
use crate::serial::{open, Port, SerialError};
use rand::{Rng, SeedableRng};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Period of the emulated FT 300's frame counter, carried on Mz (in units of
/// 0.001 N m) so that tests can check that no frame was lost.
pub const FT300_COUNTER_MODULO: u64 = 30_000;

/// The wrench of frame `k` at time `t_s`: smooth forces, the frame counter on Mz.
pub fn ft300_wrench(k: u64, t_s: f64) -> Wrench {
    let w = 2.0 * std::f64::consts::PI * 0.5;
    Wrench {
        force_n: [0.5 * (w * t_s).sin(), 0.3 * (w * t_s).cos(), 2.0 + (2.0 * w * t_s).sin()],
        moment_nm: [0.01 * (w * t_s).sin(), -0.01 * (w * t_s).cos(), (k % FT300_COUNTER_MODULO) as f64 / 1000.0],
    }
}

/// A wrench over time, played by the FT 300 emulator: samples
/// `(t_s, [fx, fy, fz, mx, my, mz])` in the sensor frame, linear in between,
/// held before the first and after the last.
#[derive(Clone, Debug, PartialEq)]
pub struct WrenchTable {
    pub samples: Vec<(f64, [f64; 6])>,
}

impl WrenchTable {
    /// Times must increase.
    pub fn new(samples: Vec<(f64, [f64; 6])>) -> Result<WrenchTable, String> {
        if samples.is_empty() {
            return Err("no samples".into());
        }
        if let Some(k) = samples.windows(2).position(|w| w[1].0 <= w[0].0) {
            return Err(format!("row {}: times must increase", k + 2));
        }
        Ok(WrenchTable { samples })
    }

    pub fn at(&self, t_s: f64) -> Wrench {
        let s = &self.samples;
        let i = s.partition_point(|x| x.0 <= t_s);
        let v: [f64; 6] = match i {
            0 => s[0].1,
            i if i == s.len() => s[i - 1].1,
            i => {
                let (a, b) = (&s[i - 1], &s[i]);
                let w = (t_s - a.0) / (b.0 - a.0);
                std::array::from_fn(|c| a.1[c] + (b.1[c] - a.1[c]) * w)
            }
        };
        Wrench { force_n: [v[0], v[1], v[2]], moment_nm: [v[3], v[4], v[5]] }
    }
}

pub struct Ft300EmulatorConfig {
    pub rate_hz: f64,
    /// Play this wrench (frame k at k / rate_hz after the start command)
    /// instead of the built-in signal with its frame counter.
    pub wrench: Option<Arc<WrenchTable>>,
    /// Wall-clock instant of the wrench table's t = 0 (default: the start
    /// command): frames sent before it carry the first row.
    pub wrench_start: Option<std::time::SystemTime>,
    /// What a real sensor adds to every frame: a constant bias
    /// `[fx, fy, fz, mx, my, mz]` \[N, N m\] and Gaussian noise of these
    /// standard deviations per force \[N\] and moment \[N m\] component.
    pub bias: [f64; 6],
    pub noise_n: f64,
    pub noise_nm: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// Every this many frames, inject garbage, a truncated and a corrupted frame.
    pub inject_garbage_every: Option<u64>,
}

/// Plays a Robotiq FT 300: waits for the Modbus start command (answers it
/// with its echo, as the sensor does), streams frames at `rate_hz`, and stops
/// streaming at a burst of 0xFF. Returns the number of valid frames sent.
pub fn run_ft300(path: &str, cfg: &Ft300EmulatorConfig, stop: Arc<AtomicBool>) -> Result<u64, SerialError> {
    let mut port = open(path, 19_200)?;
    port.set_timeout(Duration::from_millis(1)).map_err(|e| SerialError::Open { path: path.into(), message: e.to_string() })?;
    let start = start_stream_command();
    let period = Duration::from_secs_f64(1.0 / cfg.rate_hz);
    let t0 = Instant::now();
    let mut rx: Vec<u8> = vec![];
    let mut buf = [0u8; 256];
    let mut streaming = false;
    let mut next = Instant::now();
    let mut sent: u64 = 0;
    let mut k: u64 = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    // Table time of frame 0 (set at the start command).
    let mut table_t0_s = 0.0;
    while !stop.load(Ordering::Relaxed) {
        match port.read(&mut buf) {
            Ok(n) => rx.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(i) = find(&rx, &start) {
            write_fully(&mut port, &start)?; // Modbus echo of "write single register"
            rx.drain(..i + start.len());
            if !streaming {
                streaming = true;
                next = Instant::now();
                table_t0_s = cfg.wrench_start.map_or(0.0, seconds_since) - k as f64 / cfg.rate_hz;
            }
        }
        if rx.windows(10).any(|w| w.iter().all(|b| *b == 0xFF)) {
            streaming = false;
            rx.clear();
        }
        if rx.len() > 4096 {
            rx.drain(..rx.len() - 64);
        }
        let mut out = vec![];
        while streaming && Instant::now() >= next {
            let wrench = match &cfg.wrench {
                Some(table) => table.at(table_t0_s + k as f64 / cfg.rate_hz),
                None => ft300_wrench(k, t0.elapsed().as_secs_f64()),
            };
            let wrench = reading(&wrench, cfg, &mut rng);
            let frame = encode_frame(&wrench);
            if cfg.inject_garbage_every.is_some_and(|n| k % n == n - 1) {
                // A false header in garbage, a truncated frame, a corrupted frame.
                out.extend_from_slice(&[0x20, 0x4E, 0x13, 0x37, 0x00]);
                out.extend_from_slice(&frame[..9]);
                let mut bad = frame;
                bad[6] ^= 0x10;
                out.extend_from_slice(&bad);
            }
            out.extend_from_slice(&frame);
            sent += 1;
            k += 1;
            next += period;
        }
        if !out.is_empty() {
            write_fully(&mut port, &out)?;
        }
    }
    Ok(sent)
}

/// The wrench plus the sensor's bias and noise.
fn reading(w: &Wrench, cfg: &Ft300EmulatorConfig, rng: &mut impl Rng) -> Wrench {
    let mut gaussian = |sd: f64| {
        if sd > 0.0 {
            // Box-Muller.
            let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
            let u2: f64 = rng.gen();
            sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        } else {
            0.0
        }
    };
    Wrench {
        force_n: std::array::from_fn(|i| w.force_n[i] + cfg.bias[i] + gaussian(cfg.noise_n)),
        moment_nm: std::array::from_fn(|i| w.moment_nm[i] + cfg.bias[3 + i] + gaussian(cfg.noise_nm)),
    }
}

impl Ft300EmulatorConfig {
    /// A noise-free, unbiased sensor at `rate_hz` playing the built-in signal.
    pub fn new(rate_hz: f64) -> Ft300EmulatorConfig {
        Ft300EmulatorConfig { rate_hz, wrench: None, wrench_start: None, bias: [0.0; 6], noise_n: 0.0, noise_nm: 0.0, seed: 1, inject_garbage_every: None }
    }
}

/// Seconds from `instant` to now (negative before it).
pub fn seconds_since(instant: std::time::SystemTime) -> f64 {
    match std::time::SystemTime::now().duration_since(instant) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Writes all of `bytes`, waiting while the line is full: a pty (or a USB
/// adapter) pushes back when its reader is slow, and an emulator that gave
/// up there would lose the count of what it sent. Fails only when the
/// reader has taken nothing for `STALLED_WRITE`.
fn write_fully(port: &mut Port, mut bytes: &[u8]) -> Result<(), SerialError> {
    const STALLED_WRITE: Duration = Duration::from_secs(5);
    let mut last_progress = Instant::now();
    while !bytes.is_empty() {
        match port.write(bytes) {
            Ok(n) if n > 0 => {
                bytes = &bytes[n..];
                last_progress = Instant::now();
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(e.into()),
        }
        if last_progress.elapsed() >= STALLED_WRITE {
            return Err(SerialError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("nothing read from the line for {} s", STALLED_WRITE.as_secs()),
            )));
        }
    }
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Plays an ASCII force sensor: `seq,t_us,force_mn` lines at `rate_hz`
/// (a rig scales t to seconds and force to newtons). Returns lines sent.
pub fn run_ascii(path: &str, rate_hz: f64, separator: &Separator, playback: Option<&AsciiPlayback>, stop: Arc<AtomicBool>) -> Result<u64, SerialError> {
    let mut port: Port = open(path, 115_200)?;
    let period = Duration::from_secs_f64(1.0 / rate_hz);
    let t0 = Instant::now();
    // Table time of line 0.
    let table_t0_s = playback.and_then(|p| p.start).map_or(0.0, seconds_since);
    let mut next = t0;
    let mut sent: u64 = 0;
    let mut out = String::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(5)));
            continue;
        }
        out.clear();
        while Instant::now() >= next {
            let t_s = (next - t0).as_secs_f64();
            match playback {
                Some(p) => out.push_str(&format_line(p.table.at(table_t0_s + t_s), separator)),
                None => {
                    let force_mn = 1500.0 * (2.0 * std::f64::consts::PI * 0.5 * t_s).sin();
                    out.push_str(&format_line(&[sent as f64, (t_s * 1e6).round(), force_mn.round()], separator));
                }
            }
            sent += 1;
            next += period;
        }
        write_fully(&mut port, out.as_bytes())?;
    }
    port.flush()?;
    Ok(sent)
}

/// Rows of values `(t_s, values)` an ASCII sensor plays, each held until
/// the next row (a sensor's samples are not interpolated).
#[derive(Clone, Debug)]
pub struct ValueTable {
    rows: Vec<(f64, Vec<f64>)>,
}

impl ValueTable {
    /// Times strictly increasing, every row as long and finite.
    pub fn new(rows: Vec<(f64, Vec<f64>)>) -> Result<ValueTable, String> {
        let width = rows.first().ok_or("no rows")?.1.len();
        for (i, r) in rows.iter().enumerate() {
            if r.1.len() != width || !r.0.is_finite() || r.1.iter().any(|v| !v.is_finite()) {
                return Err(format!("row {}: {} finite values expected", i + 1, width + 1));
            }
            if i > 0 && r.0 <= rows[i - 1].0 {
                return Err(format!("row {}: times must increase", i + 1));
            }
        }
        Ok(ValueTable { rows })
    }

    /// The row in force at `t_s` (the first before the table starts).
    pub fn at(&self, t_s: f64) -> &[f64] {
        let i = self.rows.partition_point(|r| r.0 <= t_s);
        &self.rows[i.saturating_sub(1)].1
    }
}

/// What an ASCII sensor plays instead of its built-in signal.
pub struct AsciiPlayback {
    pub table: Arc<ValueTable>,
    /// Wall-clock instant of the table's t = 0 (default: the emulator's start).
    pub start: Option<std::time::SystemTime>,
}
