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

/// Clears the port's input and reads and drops what is still queued
/// behind it (a USB adapter's FIFO, a pty relay's buffer). The relay refills
/// the port a moment after the clear, so everything of the first
/// 200 ms is dropped; after it, reads that return a buffer-full at once
/// are still backlog (a sensor streaming in real time delivers a few lines
/// per read). Stops at the first short read after that, or after a
/// second. Returns the bytes dropped.
pub fn drop_backlog(port: &mut Port) -> usize {
    drop_backlog_settling(port, Duration::from_millis(200))
}

/// [`drop_backlog`] with everything of the first `settle` dropped.
fn drop_backlog_settling(port: &mut Port, settle: Duration) -> usize {
    let _ = port.clear(serialport::ClearBuffer::Input);
    // Short reads, so that a silent port costs the settling time, not a
    // read timeout more.
    let timeout = port.timeout();
    let _ = port.set_timeout(Duration::from_millis(5));
    let dropped = drain(port, settle);
    let _ = port.set_timeout(timeout);
    dropped
}

fn drain(port: &mut Port, settle: Duration) -> usize {
    let mut buf = [0u8; 4096];
    let buf = &mut buf[..];
    const BACKLOG_READ: usize = 512;
    let started = Instant::now();
    let mut dropped = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let settling = started.elapsed() < settle;
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
    /// Why the last one was rejected.
    fn last_rejection(&self) -> Option<String> {
        None
    }
    /// The rate the sensor sends at \[Hz\], when it has a fixed one.
    fn nominal_rate_hz(&self) -> Option<f64> {
        None
    }
    /// What the sensor says it is (model, firmware, serial number), once known.
    fn identity(&self) -> Option<String> {
        None
    }
    /// True when the sensor sends only after `start` asked it to (and
    /// `start` quiets what it sent before): nothing old to drop then.
    fn sends_when_asked(&self) -> bool {
        false
    }
}

/// Robotiq FT 300 in stream mode, started as Robotiq's own driver does.
#[derive(Default)]
pub struct Ft300 {
    decoder: Ft300Decoder,
    wrenches: Vec<ft300::Wrench>,
    /// Stream bytes that arrived with the start command's echo.
    carry: Vec<u8>,
    identity: Option<ft300::Identity>,
}

impl Ft300 {
    /// How long one Modbus reply may take (the driver allows about 1 s).
    const REPLY_TIMEOUT: Duration = Duration::from_millis(500);

    /// Reads for `quiet` with no byte arriving (true), or gives up after
    /// `limit` (false). Returns the bytes read.
    fn listen(port: &mut Port, quiet: Duration, limit: Duration) -> std::io::Result<(bool, Vec<u8>)> {
        let started = Instant::now();
        let mut last_byte = Instant::now();
        let mut got = vec![];
        let mut buf = [0u8; 1024];
        while started.elapsed() < limit {
            match port.read(&mut buf) {
                Ok(n) if n > 0 => {
                    got.extend_from_slice(&buf[..n]);
                    last_byte = Instant::now();
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(e),
            }
            if last_byte.elapsed() >= quiet {
                return Ok((true, got));
            }
        }
        Ok((false, got))
    }

    /// Sends `request` and waits for its reply; the bytes after it are returned too.
    fn ask(port: &mut Port, request: &[u8], expect_registers: Option<u16>) -> std::io::Result<Option<(ft300::Reply, Vec<u8>)>> {
        port.write_all(request)?;
        port.flush()?;
        let started = Instant::now();
        let mut got = vec![];
        let mut buf = [0u8; 1024];
        while started.elapsed() < Self::REPLY_TIMEOUT {
            match port.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(e),
            }
            if let Some((reply, end)) = ft300::find_reply(&got, expect_registers) {
                return Ok(Some((reply, got[end..].to_vec())));
            }
        }
        Ok(None)
    }

    fn read_registers(port: &mut Port, address: u16, count: u16) -> std::io::Result<Option<Vec<u16>>> {
        Ok(match Self::ask(port, &ft300::read_registers_request(address, count), Some(count))? {
            Some((ft300::Reply::Registers(r), _)) if r.len() == count as usize => Some(r),
            _ => None,
        })
    }

    fn read_identity(port: &mut Port) -> std::io::Result<Option<ft300::Identity>> {
        let Some(firmware) = Self::read_registers(port, ft300::REGISTER_FIRMWARE_VERSION, 3)? else { return Ok(None) };
        let serial = Self::read_registers(port, ft300::REGISTER_SERIAL_NUMBER, 4)?;
        let year = Self::read_registers(port, ft300::REGISTER_PRODUCTION_YEAR, 1)?;
        Ok(Some(ft300::Identity {
            firmware: ft300::Identity::firmware_from(&firmware),
            serial_number: serial.map_or_else(|| "UNKNOWN".into(), |r| ft300::Identity::serial_from(&r)),
            production_year: year.map_or(0, |r| r[0]),
        }))
    }
}

fn protocol_error(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

impl SerialSensor for Ft300 {
    fn columns(&self) -> Vec<String> {
        ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"].iter().map(|s| s.to_string()).collect()
    }
    /// A sensor still streaming (left so by a killed client, or streaming
    /// from power-up) does not hear Modbus: it is jammed quiet first, as
    /// Robotiq's driver does. Then its identity is read (function 3) and the
    /// stream started with function 16, whose echo is checked.
    fn start(&mut self, port: &mut Port) -> std::io::Result<()> {
        let (quiet, _) = Self::listen(port, Duration::from_millis(60), Duration::from_millis(60))?;
        if !quiet {
            let mut silenced = false;
            for _ in 0..5 {
                port.write_all(&ft300::stop_stream_burst())?;
                port.flush()?;
                if Self::listen(port, Duration::from_millis(80), Duration::from_millis(500))?.0 {
                    silenced = true;
                    break;
                }
            }
            if !silenced {
                return Err(protocol_error("keeps sending after five stop signals (0xFF bursts): is this an FT 300 at 19200 baud?".into()));
            }
        }
        if self.identity.is_none() {
            self.identity = Self::read_identity(port)?;
        }
        match Self::ask(port, &ft300::start_stream_command(), None)? {
            Some((ft300::Reply::Written { address: ft300::REGISTER_SELECT_OUTPUT, count: 1 }, rest)) => {
                self.carry = rest;
                Ok(())
            }
            Some((ft300::Reply::Exception { function, code }, _)) => Err(protocol_error(format!(
                "refused the stream start (Modbus function 16, register 410) with exception {code} ({}) to function {function}",
                ft300::exception_name(code)
            ))),
            Some((other, _)) => Err(protocol_error(format!("answered the stream start with {other:?}"))),
            // No echo, but frames: the sensor streams (Robotiq's driver accepts that too).
            None => {
                let (_, got) = Self::listen(port, Duration::from_millis(50), Duration::from_millis(50))?;
                let mut probe = Ft300Decoder::default();
                probe.feed(&got, &mut vec![]);
                if probe.frames > 0 {
                    self.carry = got;
                    Ok(())
                } else {
                    Err(protocol_error(format!(
                        "no answer to the stream start (Modbus function 16, register 410) within {} s: is the sensor powered, on this port, at 19200 baud?",
                        Self::REPLY_TIMEOUT.as_secs_f64()
                    )))
                }
            }
        }
    }
    fn identity(&self) -> Option<String> {
        self.identity.as_ref().map(|i| i.to_string())
    }
    fn sends_when_asked(&self) -> bool {
        true
    }
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Vec<f64>>) {
        self.wrenches.clear();
        if !self.carry.is_empty() {
            let carry = std::mem::take(&mut self.carry);
            self.decoder.feed(&carry, &mut self.wrenches);
        }
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
    fn last_rejection(&self) -> Option<String> {
        (self.decoder.crc_errors > 0).then(|| "a frame whose CRC does not match (noise on the line, or another baud rate)".into())
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
    fn last_rejection(&self) -> Option<String> {
        self.decoder.last_rejection.clone()
    }
}

/// The sensor's rejected count, and why the newest was rejected (kept as
/// the device's last error, so that a session says why a device that sent
/// bytes recorded nothing).
fn note_rejections(sensor: &dyn SerialSensor, status: &Status) {
    let rejected = sensor.rejected();
    if rejected > status.rejected.swap(rejected, Ordering::Relaxed) {
        if let Ok(mut m) = status.last_error.lock() {
            *m = Some(format!("{rejected} rejected; the last: {}", sensor.last_rejection().unwrap_or_else(|| "unreadable".into())));
        }
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
/// probe (so a missing device is reported before recording starts), its
/// backlog dropped (`drop_backlog`).
pub fn record(
    cfg: &SerialConfig,
    mut sensor: Box<dyn SerialSensor>,
    port: Port,
    session: &Path,
    clock: Clock,
    stop: Arc<AtomicBool>,
    status: Arc<Status>,
) -> Result<(), SerialError> {
    status.tap.set_columns(&sensor.columns());
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
    let mut reopened = false;
    let push = |writer: &mut StreamWriter, samples: &mut Vec<Vec<f64>>, t: i64| -> Result<(), SerialError> {
        for s in samples.drain(..) {
            writer.push(t, &s)?;
            status.recorded(t, &s);
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
                    backoff.wait(&stop);
                    continue;
                }
            },
        };
        // Bytes that waited in the port's buffer (a sensor streaming while
        // the recorder was away) would be stamped now as if they had just
        // been measured: drop them. The caller did so for the first port,
        // before the clock started.
        if reopened {
            drop_backlog(&mut p);
        } else if !sensor.sends_when_asked() {
            // What arrived between the caller's drain and this thread's
            // start (the other devices being started) would be stamped
            // late: dropped too (a relay refills within milliseconds), the
            // recording of this port starts now.
            drop_backlog_settling(&mut p, Duration::from_millis(30));
        }
        reopened = true;
        if let Err(e) = sensor.start(&mut p) {
            status.failed(&e.to_string());
            outages.disconnected();
            backoff.wait(&stop);
            continue;
        }
        if let Some(id) = sensor.identity() {
            status.identify(&id);
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
                    note_rejections(sensor.as_ref(), &status);
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
                if let Err(e) = sensor.start(&mut p) {
                    status.failed(&e.to_string());
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            outages.disconnected();
            let _ = writer.flush();
            backoff.wait(&stop);
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
        note_rejections(sensor.as_ref(), &status);
    }
    outages.finish(stopped_ns.unwrap_or_else(|| clock.now_ns()))?;
    writer.flush()?;
    Ok(())
}
