//! Emulated serial sensors for dry runs and tests. They write the same bytes
//! as the real devices to a serial line: one side of a pty pair
//! ([`crate::serial::PtyPair`], in-process) or a device named on the command
//! line (e.g. one end of a `socat` pair), whose other side the recorder opens.

use crate::ascii::{format_line, Separator};
use crate::ft300::{self, encode_frame, Wrench};
use crate::serial::{Port, SerialError};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
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

/// A table to play that is not one: no rows, times that do not increase,
/// rows of different widths or values that are not finite (row numbers
/// count from 1, the header not counted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlaybackError {
    #[error("no rows")]
    Empty,
    #[error("row {0}: times must increase")]
    NotIncreasing(usize),
    #[error("row {row}: {width} finite values expected")]
    BadRow { row: usize, width: usize },
}

impl fault::Fault for PlaybackError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

impl WrenchTable {
    /// Times must increase.
    pub fn new(samples: Vec<(f64, [f64; 6])>) -> Result<WrenchTable, PlaybackError> {
        if samples.is_empty() {
            return Err(PlaybackError::Empty);
        }
        if let Some(k) = samples.windows(2).position(|w| w[1].0 <= w[0].0) {
            return Err(PlaybackError::NotIncreasing(k + 2));
        }
        if let Some(k) = samples.iter().position(|(t, v)| !t.is_finite() || v.iter().any(|x| !x.is_finite())) {
            return Err(PlaybackError::BadRow { row: k + 1, width: 7 });
        }
        Ok(WrenchTable { samples })
    }

    /// The wrench at `t_s`: linear between rows, held outside.
    pub fn at(&self, t_s: f64) -> Wrench {
        let t: Vec<f64> = self.samples.iter().map(|s| s.0).collect();
        let k = lie::series::bracket_held(&t, t_s);
        let v: [f64; 6] = std::array::from_fn(|c| lie::series::blend(k, |i| self.samples[i].1[c]));
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
    /// Streams from power-up, before any start command (an FT 300 whose
    /// last client left it streaming does so).
    pub streaming_at_power_up: bool,
}

/// Plays a Robotiq FT 300 on `port` as the sensor behaves: a Modbus RTU
/// slave (address 9) until 0x0200 is written to register 410 with
/// function 16 (answered with its echo), then a stream of frames at
/// `rate_hz` until a burst of 0xFF. Function 3 reads the identity
/// registers (firmware, serial number, year); other functions and
/// unknown registers get a Modbus exception, damaged requests silence,
/// and Modbus requests during streaming are not heard. Returns the number
/// of valid frames sent.
pub fn run_ft300(mut port: Port, cfg: &Ft300EmulatorConfig, stop: Arc<AtomicBool>) -> Result<u64, SerialError> {
    port.set_timeout(Duration::from_millis(1)).map_err(|e| SerialError::Io(e.into()))?;
    let registers: std::collections::HashMap<u16, u16> = ft300::Identity::registers((3, 0, 1), 42, 2019).into_iter().collect();
    let period = Duration::from_secs_f64(1.0 / cfg.rate_hz);
    let t0 = Instant::now();
    let mut rx: Vec<u8> = vec![];
    let mut buf = [0u8; 256];
    let mut streaming = cfg.streaming_at_power_up;
    let mut next = Instant::now();
    let mut sent: u64 = 0;
    let mut k: u64 = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let noise = SensorNoise::new(cfg.noise_n, cfg.noise_nm);
    // Table time of frame 0 (set at the start command).
    let mut table_t0_s = 0.0;
    let mut line = Sender::default();
    while !stop.load(Ordering::Relaxed) {
        match port.read(&mut buf) {
            Ok(n) => rx.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => return Err(e.into()),
        }
        if streaming {
            if rx.windows(10).any(|w| w.iter().all(|b| *b == 0xFF)) {
                streaming = false;
                rx.clear();
            }
        } else {
            while let Some((request, end)) = ft300::find_request(&rx) {
                rx.drain(..end);
                let reply = match request {
                    ft300::Request::WriteRegisters { address, values } => {
                        if address == ft300::REGISTER_SELECT_OUTPUT && values == [ft300::STREAM_OUTPUT] {
                            streaming = true;
                            next = Instant::now();
                            table_t0_s = cfg.wrench_start.map_or(0.0, seconds_since) - k as f64 / cfg.rate_hz;
                        }
                        let mut echo = vec![ft300::SLAVE, 0x10];
                        echo.extend_from_slice(&address.to_be_bytes());
                        echo.extend_from_slice(&(values.len() as u16).to_be_bytes());
                        ft300::with_crc(&echo)
                    }
                    ft300::Request::ReadRegisters { address, count } => {
                        let values: Option<Vec<u16>> = (address..address.saturating_add(count)).map(|a| registers.get(&a).copied()).collect();
                        match values {
                            Some(v) => {
                                let mut b = vec![ft300::SLAVE, 0x03, (2 * v.len()) as u8];
                                v.iter().for_each(|r| b.extend_from_slice(&r.to_be_bytes()));
                                ft300::with_crc(&b)
                            }
                            None => ft300::with_crc(&[ft300::SLAVE, 0x83, 2]),
                        }
                    }
                    ft300::Request::Other { function } => ft300::with_crc(&[ft300::SLAVE, function | 0x80, 1]),
                };
                line.send(&mut port, &reply)?;
                if streaming {
                    rx.clear();
                    break;
                }
            }
        }
        if rx.len() > 4096 {
            rx.drain(..rx.len() - 64);
        }
        let mut out = vec![];
        let mut frames_out = 0;
        while streaming && Instant::now() >= next {
            let wrench = match &cfg.wrench {
                Some(table) => table.at(table_t0_s + k as f64 / cfg.rate_hz),
                None => ft300_wrench(k, t0.elapsed().as_secs_f64()),
            };
            let wrench = noise.reading(&wrench, &cfg.bias, &mut rng);
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
            frames_out += 1;
            k += 1;
            next += period;
        }
        if !out.is_empty() && line.send(&mut port, &out)? {
            sent += frames_out;
        }
    }
    Ok(sent)
}

/// What a force/torque sensor adds to the true wrench: Gaussian noise of
/// a standard deviation per force \[N\] and per moment \[N m\] component.
pub struct SensorNoise {
    force: Option<Normal<f64>>,
    moment: Option<Normal<f64>>,
}

impl SensorNoise {
    /// Zero or negative deviations add no noise.
    pub fn new(force_sd_n: f64, moment_sd_nm: f64) -> SensorNoise {
        let normal = |sd: f64| (sd > 0.0).then(|| Normal::new(0.0, sd).expect("a positive, finite deviation"));
        SensorNoise { force: normal(force_sd_n), moment: normal(moment_sd_nm) }
    }

    /// The wrench plus `bias` (`[fx, fy, fz, mx, my, mz]`) and noise.
    pub fn reading(&self, w: &Wrench, bias: &[f64; 6], rng: &mut impl rand::Rng) -> Wrench {
        let mut draw = |d: &Option<Normal<f64>>| d.as_ref().map_or(0.0, |d| d.sample(rng));
        Wrench {
            force_n: std::array::from_fn(|i| w.force_n[i] + bias[i] + draw(&self.force)),
            moment_nm: std::array::from_fn(|i| w.moment_nm[i] + bias[3 + i] + draw(&self.moment)),
        }
    }
}

impl Ft300EmulatorConfig {
    /// A noise-free, unbiased sensor at `rate_hz` playing the built-in signal.
    pub fn new(rate_hz: f64) -> Ft300EmulatorConfig {
        Ft300EmulatorConfig {
            rate_hz,
            wrench: None,
            wrench_start: None,
            bias: [0.0; 6],
            noise_n: 0.0,
            noise_nm: 0.0,
            seed: 1,
            inject_garbage_every: None,
            streaming_at_power_up: false,
        }
    }
}

/// Seconds from `instant` to now (negative before it).
pub fn seconds_since(instant: std::time::SystemTime) -> f64 {
    match std::time::SystemTime::now().duration_since(instant) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The sensor's side of a serial line. Like a real sensor it keeps sending
/// when nobody reads: a pty (or a USB adapter) pushes back when its reader
/// is slow, so a write waits up to `PATIENCE` for a slow reader; a reader
/// that took nothing for that long is gone, and from then on what does not
/// fit is dropped at once (lost, as on a UART) until the line drains again.
#[derive(Debug, Default)]
struct Sender {
    no_reader: bool,
    /// Writes dropped because nobody read.
    dropped: u64,
}

impl Sender {
    const PATIENCE: Duration = Duration::from_secs(1);

    /// Writes `bytes`; false when they were dropped (whole or in part).
    fn send(&mut self, port: &mut Port, mut bytes: &[u8]) -> Result<bool, SerialError> {
        let mut last_progress = Instant::now();
        while !bytes.is_empty() {
            match port.write(bytes) {
                Ok(n) if n > 0 => {
                    bytes = &bytes[n..];
                    last_progress = Instant::now();
                    self.no_reader = false;
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(e.into()),
            }
            if !bytes.is_empty() && (self.no_reader || last_progress.elapsed() >= Self::PATIENCE) {
                self.no_reader = true;
                self.dropped += 1;
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Plays an ASCII force sensor on `port`: `seq,t_us,force_mn` lines at
/// `rate_hz` (a rig scales t to seconds and force to newtons), or the rows
/// of a table. Returns lines sent.
pub fn run_ascii(mut port: Port, rate_hz: f64, separator: &Separator, playback: Option<&AsciiPlayback>, stop: Arc<AtomicBool>) -> Result<u64, SerialError> {
    let period = Duration::from_secs_f64(1.0 / rate_hz);
    let t0 = Instant::now();
    // Table time of line 0.
    let table_t0_s = playback.and_then(|p| p.start).map_or(0.0, seconds_since);
    let mut next = t0;
    let mut sent: u64 = 0;
    let mut out = String::new();
    let mut line = Sender::default();
    // Every line is numbered, sent or dropped: a reader sees what it missed.
    let mut seq: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(5)));
            continue;
        }
        out.clear();
        let mut lines_out = 0;
        while Instant::now() >= next {
            let t_s = (next - t0).as_secs_f64();
            match playback {
                Some(p) => out.push_str(&format_line(p.table.at(table_t0_s + t_s), separator)),
                None => {
                    let force_mn = 1500.0 * (2.0 * std::f64::consts::PI * 0.5 * t_s).sin();
                    out.push_str(&format_line(&[seq as f64, (t_s * 1e6).round(), force_mn.round()], separator));
                }
            }
            lines_out += 1;
            seq += 1;
            next += period;
        }
        if line.send(&mut port, out.as_bytes())? {
            sent += lines_out;
        }
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
    pub fn new(rows: Vec<(f64, Vec<f64>)>) -> Result<ValueTable, PlaybackError> {
        let width = rows.first().ok_or(PlaybackError::Empty)?.1.len();
        for (i, r) in rows.iter().enumerate() {
            if r.1.len() != width || !r.0.is_finite() || r.1.iter().any(|v| !v.is_finite()) {
                return Err(PlaybackError::BadRow { row: i + 1, width: width + 1 });
            }
            if i > 0 && r.0 <= rows[i - 1].0 {
                return Err(PlaybackError::NotIncreasing(i + 1));
            }
        }
        Ok(ValueTable { rows })
    }

    /// The row in force at `t_s` (the first before the table starts).
    pub fn at(&self, t_s: f64) -> &[f64] {
        let t: Vec<f64> = self.rows.iter().map(|r| r.0).collect();
        &self.rows[lie::series::step_index(&t, t_s)].1
    }
}

/// What an ASCII sensor plays instead of its built-in signal.
pub struct AsciiPlayback {
    pub table: Arc<ValueTable>,
    /// Wall-clock instant of the table's t = 0 (default: the emulator's start).
    pub start: Option<std::time::SystemTime>,
}
