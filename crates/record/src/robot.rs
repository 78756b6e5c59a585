//! Recording a UR robot over RTDE into a session stream: every data package
//! is kept, gaps are detected from the controller's `timestamp`, and a lost
//! connection is re-established with back-off (the gap is recorded).

use crate::outage::{Continuity, Outages};
use crate::rtde::{Received, RtdeClient, RtdeError};
use session::StreamWriter;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One host monotonic clock for every stream of a session.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    anchor: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock { anchor: Instant::now() }
    }

    /// Nanoseconds since the session started.
    pub fn now_ns(&self) -> i64 {
        self.anchor.elapsed().as_nanos() as i64
    }
}

/// Delay between attempts to reach a device that went away: 50 ms after a
/// success, doubling up to 2 s while attempts keep failing.
#[derive(Debug)]
pub struct Backoff {
    delay: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(50);
    const LONGEST: Duration = Duration::from_secs(2);

    pub fn new() -> Backoff {
        Backoff { delay: Self::FIRST }
    }

    /// The device answered: the next failure waits the shortest delay again.
    pub fn reset(&mut self) {
        self.delay = Self::FIRST;
    }

    /// Sleeps the current delay, then doubles it.
    pub fn wait(&mut self) {
        std::thread::sleep(self.delay);
        self.delay = (self.delay * 2).min(Self::LONGEST);
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

/// A robot in the rig config.
#[derive(Clone, Debug)]
pub struct RobotConfig {
    pub name: String,
    pub address: String,
    pub frequency_hz: f64,
    pub variables: Vec<String>,
}

/// Live counters for the status line, and the session's device record.
#[derive(Debug)]
pub struct Status {
    pub rows: AtomicU64,
    pub gaps: AtomicU64,
    pub missing_packages: AtomicU64,
    pub reconnects: AtomicU64,
    pub errors: AtomicU64,
    /// Frames or lines the decoder rejected (CRC errors, bad lines).
    pub rejected: AtomicU64,
    /// Sum of the outages' durations \[ns\].
    pub outage_ns: AtomicU64,
    /// Host time of the first sample \[ns\]; `i64::MIN` until one came.
    pub first_sample_ns: AtomicI64,
    /// Reads that delivered a backlog, and the samples in them.
    pub backlog_reads: AtomicU64,
    pub backlog_samples: AtomicU64,
    /// The device's last error, and what it says it is.
    pub last_error: std::sync::Mutex<Option<String>>,
    pub identity: std::sync::Mutex<Option<String>>,
    /// Settings as the device reports them (a camera's), by name.
    pub settings: std::sync::Mutex<Vec<(String, f64)>>,
}

impl Status {
    /// An attempt to reach or start the device failed (counted, kept).
    pub fn failed(&self, message: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = self.last_error.lock() {
            *m = Some(message.to_string());
        }
    }
    pub fn identify(&self, identity: &str) {
        if let Ok(mut m) = self.identity.lock() {
            *m = Some(identity.to_string());
        }
    }
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|m| m.clone())
    }
    pub fn identity(&self) -> Option<String> {
        self.identity.lock().ok().and_then(|m| m.clone())
    }
}

impl Default for Status {
    fn default() -> Status {
        Status {
            rows: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            missing_packages: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            outage_ns: AtomicU64::new(0),
            first_sample_ns: AtomicI64::new(i64::MIN),
            backlog_reads: AtomicU64::new(0),
            backlog_samples: AtomicU64::new(0),
            last_error: Default::default(),
            identity: Default::default(),
            settings: Default::default(),
        }
    }
}

/// Connects once (so configuration errors surface before recording starts).
pub fn probe(cfg: &RobotConfig) -> Result<Vec<String>, RtdeError> {
    let c = RtdeClient::connect(&cfg.address, cfg.frequency_hz, &cfg.variables, Duration::from_secs(2))?;
    Ok(c.column_names())
}

/// Records until `stop` is set. Outages go to the session's gap table on
/// the host clock (`session::gaps`): packages the controller's `timestamp`
/// says are missing (further apart than 1.5 periods) while connected are
/// `lost`; a lost connection is `disconnected` until the first package
/// after it (with the missing count when the controller's clock went on).
pub fn record(cfg: &RobotConfig, session: &Path, clock: Clock, stop: Arc<AtomicBool>, status: Arc<Status>) -> Result<(), RtdeError> {
    let period = 1.0 / cfg.frequency_hz;
    let mut writer: Option<StreamWriter> = None;
    let mut outages = Outages::new(session, &cfg.name, Outages::silence_limit_s(cfg.frequency_hz), usize::MAX, status.clone())?;
    let mut last_ts: Option<f64> = None;
    let mut backoff = Backoff::new();
    let mut messages = std::fs::OpenOptions::new().create(true).append(true).open(session.join(format!("{}_messages.log", cfg.name)))?;
    while !stop.load(Ordering::Relaxed) {
        let mut client =
            match RtdeClient::connect(&cfg.address, cfg.frequency_hz, &cfg.variables, Duration::from_secs(1)).and_then(|mut c| c.start().map(|_| c)) {
                Ok(c) => {
                    backoff.reset();
                    c
                }
                Err(RtdeError::UnknownVariable(v)) => return Err(RtdeError::UnknownVariable(v)),
                Err(_) => {
                    if last_ts.is_some() {
                        outages.disconnected();
                    }
                    status.errors.fetch_add(1, Ordering::Relaxed);
                    backoff.wait();
                    continue;
                }
            };
        if writer.is_none() {
            writer = Some(StreamWriter::create(session, &cfg.name, client.column_names(), Duration::from_secs(1))?);
        }
        let w = writer.as_mut().expect("created");
        // On stop: ask for a pause and keep every data package the controller
        // sends until it confirms, so nothing it sent is lost.
        let mut pausing = false;
        loop {
            if stop.load(Ordering::Relaxed) && !pausing {
                if client.pause().is_err() {
                    break;
                }
                pausing = true;
            }
            match client.receive() {
                Ok(Received::Data(v)) => {
                    let t = clock.now_ns();
                    let ts = v[0];
                    let continuity = match last_ts {
                        None => Continuity::Continuous,
                        // The controller restarted (its clock restarts too):
                        // how many packages are missing is unknown.
                        Some(prev) if ts <= prev => Continuity::Restarted,
                        Some(prev) if ts - prev > 1.5 * period => Continuity::Missing((((ts - prev) / period).round() - 1.0) as u64),
                        Some(_) => Continuity::Continuous,
                    };
                    outages.arrived(t, 1, continuity)?;
                    last_ts = Some(ts);
                    w.push(t, &v)?;
                    status.rows.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Received::Text(m)) => {
                    use std::io::Write;
                    let _ = writeln!(messages, "{} {}", clock.now_ns(), m);
                }
                Ok(Received::Other(crate::rtde::PAUSE)) if pausing => break,
                Ok(Received::Other(_)) => {}
                Err(_) if pausing => break,
                Err(_) => {
                    // Lost the controller: flush what we have and reconnect.
                    outages.disconnected();
                    let _ = w.flush();
                    break;
                }
            }
        }
    }
    if let Some(w) = writer.as_mut() {
        w.flush()?;
    }
    outages.finish(clock.now_ns())?;
    Ok(())
}
