//! Recording serial-port sensors (FT 300, ASCII line sensors) into a
//! session stream. One reader thread per port; every decoded sample is a row
//! stamped with the host clock when the bytes that completed it arrived.
//! A port that fails (cable pulled, emulator gone) is reopened with back-off.

use crate::ascii::{LineDecoder, Separator};
use crate::ft300::{self, Decoder as Ft300Decoder};
use crate::outage::{Continuity, Outages};
use crate::robot::{Backoff, Clock, Status};
use session::StreamWriter;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum SerialError {
    #[error("cannot open serial port {path}: {message}")]
    Open { path: String, message: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Session(#[from] session::TableError),
}

impl fault::Fault for SerialError {
    fn kind(&self) -> fault::Kind {
        match self {
            SerialError::Open { .. } => fault::Kind::Input,
            SerialError::Io(_) => fault::Kind::Io,
            SerialError::Session(e) => e.kind(),
        }
    }
}

pub type Port = Box<dyn serialport::SerialPort>;

/// Opens `path` raw, 8N1, with a short read timeout (so stop requests are seen).
pub fn open(path: &str, baud: u32) -> Result<Port, SerialError> {
    if !Path::new(path).exists() {
        return Err(SerialError::Open { path: path.into(), message: "no such device".into() });
    }
    serialport::new(path, baud).timeout(Duration::from_millis(50)).open().map_err(|e| SerialError::Open { path: path.into(), message: e.to_string() })
}

/// A pseudo-terminal pair, made in-process: an emulator plays a sensor on
/// `device` (the master side), a recorder opens `path` (the slave side) as
/// it would a USB serial adapter. The slave stays open while the pair
/// lives, so the master never sees a hang-up between recorders.
pub struct PtyPair {
    /// The sensor's side (take it for the emulator).
    pub device: Option<Port>,
    /// The computer's side, a path like `/dev/pts/5`.
    pub path: String,
    _slave: serialport::TTYPort,
}

impl PtyPair {
    pub fn new() -> Result<PtyPair, SerialError> {
        let (master, slave) = serialport::TTYPort::pair().map_err(|e| SerialError::Open { path: "a new pty pair".into(), message: e.to_string() })?;
        let path = serialport::SerialPort::name(&slave)
            .ok_or_else(|| SerialError::Open { path: "a new pty pair".into(), message: "the slave side has no name".into() })?;
        Ok(PtyPair { device: Some(Box::new(master)), path, _slave: slave })
    }
}

/// Reads and drops what is still queued behind the port after it was
/// cleared (a USB adapter's FIFO, a pty relay's buffer). The relay refills
/// the port a moment after the clear, so everything of the first
/// `SETTLE` is dropped; after it, reads that return a buffer-full at once
/// are still backlog (a sensor streaming in real time delivers a few lines
/// per read). Stops at the first short read after `SETTLE`, or after a
/// second. Returns the bytes dropped.
fn drain_backlog(port: &mut Port, buf: &mut [u8]) -> usize {
    const BACKLOG_READ: usize = 512;
    const SETTLE: Duration = Duration::from_millis(200);
    let started = Instant::now();
    let mut dropped = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let settling = started.elapsed() < SETTLE;
        match port.read(buf) {
            Ok(n) if settling || n >= BACKLOG_READ.min(buf.len()) => dropped += n,
            Ok(n) => return dropped + n,
            Err(e) if settling && matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(_) => return dropped,
        }
    }
    dropped
}

/// What the recorder needs to know about one kind of serial sensor.
pub trait SerialSensor: Send {
    /// Stream columns (after `t_host_ns`).
    fn columns(&self) -> Vec<String>;
    /// Called after (re)opening the port, and again when no sample came for
    /// a second (the sensor may have missed the start command).
    fn start(&mut self, _port: &mut Port) -> std::io::Result<()> {
        Ok(())
    }
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Vec<f64>>);
    /// A read timed out: the line has been silent for the read timeout.
    fn idle(&mut self) {}
    /// Called before closing the port on a clean stop; true when the
    /// sensor was told to stop (what it sent before it heard is kept).
    fn stop(&mut self, _port: &mut Port) -> std::io::Result<bool> {
        Ok(false)
    }
    /// Frames or lines rejected so far (CRC errors, bad lines).
    fn rejected(&self) -> u64;
    /// The rate the sensor sends at \[Hz\], when it has a fixed one.
    fn nominal_rate_hz(&self) -> Option<f64> {
        None
    }
}

/// Robotiq FT 300 in stream mode.
#[derive(Default)]
pub struct Ft300 {
    decoder: Ft300Decoder,
    wrenches: Vec<ft300::Wrench>,
}

impl SerialSensor for Ft300 {
    fn columns(&self) -> Vec<String> {
        ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"].iter().map(|s| s.to_string()).collect()
    }
    fn start(&mut self, port: &mut Port) -> std::io::Result<()> {
        port.write_all(&ft300::start_stream_command())?;
        port.flush()
    }
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Vec<f64>>) {
        self.wrenches.clear();
        self.decoder.feed(bytes, &mut self.wrenches);
        out.extend(self.wrenches.iter().map(|w| vec![w.force_n[0], w.force_n[1], w.force_n[2], w.moment_nm[0], w.moment_nm[1], w.moment_nm[2]]));
    }
    fn stop(&mut self, port: &mut Port) -> std::io::Result<bool> {
        port.write_all(&ft300::stop_stream_burst())?;
        port.flush()?;
        Ok(true)
    }
    fn rejected(&self) -> u64 {
        self.decoder.crc_errors
    }
    fn nominal_rate_hz(&self) -> Option<f64> {
        Some(ft300::STREAM_RATE_HZ)
    }
}

/// A sensor that prints one line of numbers per sample.
pub struct AsciiSensor {
    columns: Vec<String>,
    decoder: LineDecoder,
}

impl AsciiSensor {
    pub fn new(columns: Vec<String>, separator: Separator, scales: Vec<f64>) -> AsciiSensor {
        AsciiSensor { columns, decoder: LineDecoder::new(separator, scales) }
    }
}

impl SerialSensor for AsciiSensor {
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Vec<f64>>) {
        self.decoder.feed(bytes, out);
    }
    fn idle(&mut self) {
        self.decoder.mark_idle();
    }
    fn rejected(&self) -> u64 {
        self.decoder.bad_lines
    }
}

/// A serial sensor of the rig.
#[derive(Clone, Debug)]
pub struct SerialConfig {
    pub name: String,
    pub port: String,
    pub baud: u32,
}

/// Records until `stop` is set. `port` is the port opened by the caller's
/// probe (so a missing device is reported before recording starts).
pub fn record(
    cfg: &SerialConfig,
    mut sensor: Box<dyn SerialSensor>,
    port: Port,
    session: &Path,
    clock: Clock,
    stop: Arc<AtomicBool>,
    status: Arc<Status>,
) -> Result<(), SerialError> {
    let mut writer = StreamWriter::create(session, &cfg.name, sensor.columns(), Duration::from_secs(1))?;
    // Unknown rates: half a second of silence is an outage, twenty lines
    // out of one read a backlog.
    let (silent_after_s, backlog) = match sensor.nominal_rate_hz() {
        Some(hz) => (Outages::silence_limit_s(hz), ((0.2 * hz) as usize).max(20)),
        None => (0.5, 20),
    };
    let mut outages = Outages::new(session, &cfg.name, silent_after_s, backlog, status.clone())?;
    let mut port = Some(port);
    let mut buf = vec![0u8; 4096];
    let mut samples: Vec<Vec<f64>> = Vec::with_capacity(64);
    let mut backoff = Backoff::new();
    let mut stopped_ns = None;
    let push = |writer: &mut StreamWriter, samples: &mut Vec<Vec<f64>>, t: i64| -> Result<(), SerialError> {
        for s in samples.drain(..) {
            writer.push(t, &s)?;
            status.rows.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    };
    while !stop.load(Ordering::Relaxed) {
        let mut p = match port.take() {
            Some(p) => p,
            None => match open(&cfg.port, cfg.baud) {
                Ok(p) => {
                    backoff.reset();
                    p
                }
                Err(_) => {
                    status.errors.fetch_add(1, Ordering::Relaxed);
                    backoff.wait();
                    continue;
                }
            },
        };
        // Bytes that waited in the port's buffer (a sensor streaming before
        // the recorder opened the port, or while it was away) would be
        // stamped now as if they had just been measured: drop them.
        let _ = p.clear(serialport::ClearBuffer::Input);
        drain_backlog(&mut p, &mut buf);
        if sensor.start(&mut p).is_err() {
            outages.disconnected();
            backoff.wait();
            continue;
        }
        let mut last_sample = Instant::now();
        let mut failed = false;
        while !stop.load(Ordering::Relaxed) {
            match p.read(&mut buf) {
                // Timeouts are errors here: end of file is the line hung up
                // (a USB adapter unplugged, a pty's other side gone).
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(n) => {
                    let t = clock.now_ns();
                    sensor.feed(&buf[..n], &mut samples);
                    if !samples.is_empty() {
                        last_sample = Instant::now();
                    }
                    outages.arrived(t, samples.len(), Continuity::Unnumbered)?;
                    push(&mut writer, &mut samples, t)?;
                    status.rejected.store(sensor.rejected(), Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => sensor.idle(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
            if last_sample.elapsed() > Duration::from_secs(1) {
                // Silent for a second: ask again (a start command sent while
                // the sensor was still booting is lost).
                last_sample = Instant::now();
                if sensor.start(&mut p).is_err() {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            outages.disconnected();
            let _ = writer.flush();
            backoff.wait();
            continue;
        }
        // Clean stop: tell the sensor, then keep what was already in flight
        // (the wait for it is not the device's silence).
        stopped_ns = Some(clock.now_ns());
        // A sensor that streams on regardless (an ASCII line) is not drained:
        // that would record past the stop.
        let told = sensor.stop(&mut p).unwrap_or(false);
        let quiet_until = Instant::now() + Duration::from_millis(if told { 300 } else { 0 });
        while Instant::now() < quiet_until {
            match p.read(&mut buf) {
                Ok(n) if n > 0 => {
                    let t = clock.now_ns();
                    sensor.feed(&buf[..n], &mut samples);
                    push(&mut writer, &mut samples, t)?;
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        status.rejected.store(sensor.rejected(), Ordering::Relaxed);
    }
    outages.finish(stopped_ns.unwrap_or_else(|| clock.now_ns()))?;
    writer.flush()?;
    Ok(())
}
