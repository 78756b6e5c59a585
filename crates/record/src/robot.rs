//! Recording a UR robot over RTDE into a session stream: every data package
//! is kept, gaps are detected from the controller's `timestamp`, and a lost
//! connection is re-established with back-off (the gap is recorded).

use crate::outage::{Continuity, Outages};
use crate::rtde::{MessageLevel, Received, RtdeClient, RtdeError, TextMessage};
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

    /// The instant `at` on this clock \[ns\] (negative before the start).
    pub fn ns_at(&self, at: Instant) -> i64 {
        match at.checked_duration_since(self.anchor) {
            Some(after) => after.as_nanos() as i64,
            None => -(self.anchor.duration_since(at).as_nanos() as i64),
        }
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

    /// Sleeps the current delay, then doubles it; ends early when `stop` is
    /// set (a recorder asked to stop does not sleep out a 2 s delay).
    pub fn wait(&mut self, stop: &AtomicBool) {
        let until = Instant::now() + self.delay;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        }
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
    /// None: the controller's maximum (125 Hz CB3, 500 Hz e-Series).
    pub frequency_hz: Option<f64>,
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
    /// What the device says that the person recording should see now (a
    /// robot controller's warnings, errors and exceptions), taken by the
    /// recording's display.
    pub alerts: std::sync::Mutex<Vec<String>>,
    /// What a live view sees (off unless a view asked for it).
    pub tap: Tap,
}

/// The newest sample of a device (and a camera's newest frame), for a live
/// view. Recorders offer through `try_lock`: a view that holds the lock
/// costs the recording one skipped offer, never a wait.
#[derive(Debug, Default)]
pub struct Tap {
    /// Set by a view; until then offers are one relaxed load.
    pub wanted: AtomicBool,
    /// The stream's column names (the table's, without `t_host_ns`).
    pub columns: std::sync::Mutex<Vec<String>>,
    pub latest: std::sync::Mutex<Option<(i64, Vec<f64>)>>,
    /// A camera's newest frame (BGR), offered a few times a second.
    pub frame: std::sync::Mutex<Option<TappedFrame>>,
}

/// A camera frame offered to a view.
#[derive(Debug)]
pub struct TappedFrame {
    pub t_ns: i64,
    /// The device's (a file's: the position's) timestamp \[ms\].
    pub device_ms: f64,
    /// BGR.
    pub image: opencv::core::Mat,
}

impl Tap {
    pub fn set_columns(&self, names: &[String]) {
        if let Ok(mut c) = self.columns.lock() {
            *c = names.to_vec();
        }
    }
    /// Offers a sample `values` taken at host time `t_ns`.
    pub fn offer(&self, t_ns: i64, values: &[f64]) {
        if !self.wanted.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut l) = self.latest.try_lock() {
            match l.as_mut() {
                Some((t, v)) => {
                    *t = t_ns;
                    v.clear();
                    v.extend_from_slice(values);
                }
                None => *l = Some((t_ns, values.to_vec())),
            }
        }
    }
    /// The newest sample, if any.
    pub fn latest(&self) -> Option<(i64, Vec<f64>)> {
        self.latest.lock().ok().and_then(|l| l.clone())
    }
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
    /// Sets a reported setting (replacing one of the same name).
    pub fn set(&self, name: &str, value: f64) {
        if let Ok(mut s) = self.settings.lock() {
            s.retain(|(n, _)| n != name);
            s.push((name.to_string(), value));
        }
    }
    pub fn alert(&self, line: String) {
        if let Ok(mut a) = self.alerts.lock() {
            a.push(line);
        }
    }
    /// A row `values` at host time `t_ns` is in the session: counted, and
    /// offered to a view.
    pub fn recorded(&self, t_ns: i64, values: &[f64]) {
        self.tap.offer(t_ns, values);
        self.rows.fetch_add(1, Ordering::Relaxed);
    }
    /// The alerts since the last call.
    pub fn take_alerts(&self) -> Vec<String> {
        self.alerts.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default()
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
            alerts: Default::default(),
            tap: Tap::default(),
        }
    }
}

/// Connects once (so configuration errors surface before recording
/// starts: an unknown variable, a rate above the controller's).
pub fn probe(cfg: &RobotConfig) -> Result<(), RtdeError> {
    RtdeClient::connect(&cfg.address, cfg.frequency_hz, &cfg.variables, Duration::from_secs(2)).map(drop)
}

/// How long a controller has to confirm a pause request before the
/// recorder stops reading it.
const PAUSE_DEADLINE: Duration = Duration::from_secs(1);

/// Packages whose controller time steps give the period the controller
/// actually streams at.
const PERIOD_SAMPLES: usize = 25;

/// The controller's streaming period, from its own clock: the rate asked
/// until the first packages have come, then their median step (a
/// controller that streams at another rate than asked is measured, not
/// believed). Also the mean rate over the whole recording.
struct StreamPeriod {
    asked_s: f64,
    steps_s: Vec<f64>,
    measured_s: Option<f64>,
    /// Steps of the controller's clock that advanced, and their sum \[s\]
    /// (a restart, where the clock starts again, is no step: the rate
    /// over a restart is the rate on either side).
    steps: u64,
    stepped_s: f64,
}

impl StreamPeriod {
    fn new(asked_hz: f64) -> StreamPeriod {
        StreamPeriod { asked_s: 1.0 / asked_hz, steps_s: vec![], measured_s: None, steps: 0, stepped_s: 0.0 }
    }

    fn period_s(&self) -> f64 {
        self.measured_s.unwrap_or(self.asked_s)
    }

    /// A package at controller time `ts` after one at `prev`.
    fn step(&mut self, prev: Option<f64>, ts: f64) {
        let Some(prev) = prev.filter(|p| ts > *p) else { return };
        self.steps += 1;
        self.stepped_s += ts - prev;
        if self.measured_s.is_none() {
            self.steps_s.push(ts - prev);
            if self.steps_s.len() >= PERIOD_SAMPLES {
                let mut v = self.steps_s.clone();
                v.sort_by(f64::total_cmp);
                self.measured_s = Some(v[v.len() / 2]);
            }
        }
    }

    fn mean_rate_hz(&self) -> Option<f64> {
        (self.stepped_s > 0.0).then(|| self.steps as f64 / self.stepped_s)
    }
}

/// Controller text messages: `<name>_messages.csv` beside the streams
/// (host time, level, source, message); WARNING and above are alerts.
struct MessageLog {
    writer: csv::Writer<std::fs::File>,
}

impl MessageLog {
    fn open(session: &Path, name: &str) -> std::io::Result<MessageLog> {
        let path = session::layout::messages_file(session, name);
        let fresh = !path.exists();
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        let mut writer = csv::Writer::from_writer(file);
        if fresh {
            writer.write_record(["t_host_ns", "level", "source", "message"])?;
            writer.flush()?;
        }
        Ok(MessageLog { writer })
    }

    fn write(&mut self, t_ns: i64, m: &TextMessage, device: &str, status: &Status) {
        let _ = self.writer.write_record([t_ns.to_string().as_str(), m.level.name(), &m.source, &m.message]);
        // Flushed at once: a message matters most when the recording dies after it.
        let _ = self.writer.flush();
        if m.level <= MessageLevel::Warning {
            status.alert(format!(
                "{device}: {} from {}: {} (at {:.3} s)",
                m.level.name(),
                session::printable(&m.source),
                session::printable(&m.message),
                t_ns as f64 * 1e-9
            ));
        }
    }
}

/// Records until `stop` is set. Outages go to the session's gap table on
/// the host clock (`session::gaps`): packages the controller's `timestamp`
/// says are missing (further apart than 1.5 streaming periods, the period
/// measured from the controller's own clock) while connected are `lost`;
/// a lost connection is `disconnected` until the first package after it
/// (with the missing count when the controller's clock went on). The
/// controller's version, the rate asked and the rate measured go into the
/// device's record; its text messages into `<name>_messages.csv`.
pub fn record(cfg: &RobotConfig, session: &Path, clock: Clock, stop: Arc<AtomicBool>, status: Arc<Status>) -> Result<(), RtdeError> {
    let mut writer: Option<StreamWriter> = None;
    let silence_hz = cfg.frequency_hz.unwrap_or(125.0);
    let mut outages = Outages::new(session, &cfg.name, Outages::silence_limit_s(silence_hz), usize::MAX, status.clone())?;
    let mut last_ts: Option<f64> = None;
    let mut backoff = Backoff::new();
    let mut messages = MessageLog::open(session, &cfg.name)?;
    let mut period: Option<StreamPeriod> = None;
    while !stop.load(Ordering::Relaxed) {
        let mut client =
            match RtdeClient::connect(&cfg.address, cfg.frequency_hz, &cfg.variables, Duration::from_secs(1)).and_then(|mut c| c.start().map(|_| c)) {
                Ok(c) => {
                    backoff.reset();
                    c
                }
                Err(RtdeError::UnknownVariable(v)) => return Err(RtdeError::UnknownVariable(v)),
                Err(e @ RtdeError::RateAboveController { .. }) => return Err(e),
                Err(e) => {
                    if last_ts.is_some() {
                        outages.disconnected();
                    }
                    // Counted, and kept as the device's last error.
                    status.failed(&e.to_string());
                    backoff.wait(&stop);
                    continue;
                }
            };
        let max_hz = crate::rtde::controller_max_rate_hz(client.controller_version);
        status.identify(&format!(
            "URControl {} ({}, at most {max_hz} Hz)",
            crate::rtde::version_string(client.controller_version),
            if max_hz < 500.0 { "CB3" } else { "e-Series" }
        ));
        status.set("requested_rate_hz", client.frequency_hz);
        let period = period.get_or_insert_with(|| StreamPeriod::new(client.frequency_hz));
        if writer.is_none() {
            status.tap.set_columns(&client.column_names());
            writer = Some(StreamWriter::create(session, &cfg.name, client.column_names(), Duration::from_secs(1))?);
        }
        let w = writer.as_mut().expect("created");
        // On stop: ask for a pause and keep every data package the controller
        // sends until it confirms, so nothing it sent is lost; a controller
        // that does not confirm within PAUSE_DEADLINE is left streaming.
        let mut pausing: Option<Instant> = None;
        loop {
            if stop.load(Ordering::Relaxed) && pausing.is_none() {
                if client.pause().is_err() {
                    break;
                }
                pausing = Some(Instant::now());
            }
            if pausing.is_some_and(|at| at.elapsed() > PAUSE_DEADLINE) {
                status.failed(&format!(
                    "the controller did not confirm the pause within {:.1} s: stopped reading it (what it sent until then is kept)",
                    PAUSE_DEADLINE.as_secs_f64()
                ));
                break;
            }
            match client.receive() {
                Ok(Received::Data(v)) => {
                    let t = clock.now_ns();
                    let ts = v[0];
                    period.step(last_ts, ts);
                    let p = period.period_s();
                    let continuity = match last_ts {
                        None => Continuity::Continuous,
                        // The controller restarted (its clock restarts too):
                        // how many packages are missing is unknown.
                        Some(prev) if ts <= prev => Continuity::Restarted,
                        Some(prev) if ts - prev > 1.5 * p => Continuity::Missing((((ts - prev) / p).round() - 1.0).max(1.0) as u64),
                        Some(_) => Continuity::Continuous,
                    };
                    outages.arrived(t, 1, continuity)?;
                    last_ts = Some(ts);
                    w.push(t, &v)?;
                    status.recorded(t, &v);
                }
                Ok(Received::Text(m)) => messages.write(clock.now_ns(), &m, &cfg.name, &status),
                Ok(Received::Other(crate::rtde::PAUSE)) if pausing.is_some() => break,
                Ok(Received::Other(_)) => {}
                Err(_) if pausing.is_some() => break,
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
    if let Some(p) = &period {
        if let Some(hz) = p.mean_rate_hz() {
            status.set("measured_rate_hz", hz);
        }
    }
    outages.finish(clock.now_ns())?;
    Ok(())
}

#[cfg(test)]
mod period_tests {
    use super::*;

    /// The mean rate over a controller restart (its clock starts again) is
    /// the rate on either side, not the packages over the clock's jump
    /// (975 Hz for a 500 Hz controller).
    #[test]
    fn the_mean_rate_over_a_restart_is_the_streaming_rate() {
        let mut p = StreamPeriod::new(500.0);
        let mut prev = None;
        for k in 0..5000 {
            // 10 s at 500 Hz from controller time 100 s, then a restart from 0.
            let ts = if k < 2500 { 100.0 + k as f64 / 500.0 } else { (k - 2500) as f64 / 500.0 };
            p.step(prev, ts);
            prev = Some(ts);
        }
        assert!((p.mean_rate_hz().unwrap() - 500.0).abs() < 1e-6, "{:?}", p.mean_rate_hz());
    }
}
