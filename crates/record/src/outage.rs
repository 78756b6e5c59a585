//! What each device thread tells the session about its outages: a device
//! that goes silent, drops its connection, loses numbered samples or never
//! sends at all leaves a row in the session's gap table
//! (`session::gaps`), on the host clock, the moment the outage is over.
//! A read that delivers a backlog (bytes that waited in a buffer, stamped
//! as if they had just arrived) is counted, so the session can say so.

use crate::robot::Status;
use session::gaps::{Gap, GapReason, GapWriter};
use session::TableError;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How a sample relates to the one before, for devices that number theirs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Continuity {
    /// The device does not number its samples (serial sensors, cameras):
    /// only silence on the host clock can tell an outage.
    Unnumbered,
    /// The next number: nothing lost.
    Continuous,
    /// This many samples were numbered but never arrived.
    Missing(u64),
    /// The device's numbering restarted (a restarted controller): how many
    /// are missing is unknown.
    Restarted,
}

/// One device's outage bookkeeping.
pub struct Outages {
    writer: GapWriter,
    status: Arc<Status>,
    silent_after_ns: i64,
    backlog_samples: usize,
    last_sample_ns: Option<i64>,
    /// The connection failed since the last sample.
    disconnected: bool,
}

impl Outages {
    /// `silent_after_s`: a connected device quiet for longer is an outage;
    /// `backlog_samples`: more samples than this out of one read were
    /// waiting in a buffer.
    pub fn new(session: &Path, device: &str, silent_after_s: f64, backlog_samples: usize, status: Arc<Status>) -> Result<Outages, TableError> {
        Ok(Outages {
            writer: GapWriter::create(session, device)?,
            status,
            silent_after_ns: (silent_after_s * 1e9) as i64,
            backlog_samples,
            last_sample_ns: None,
            disconnected: false,
        })
    }

    /// The silence limit of a device sending at `rate_hz`: ten periods, at
    /// least a quarter of a second (a loaded host stalls a reader thread
    /// for tens of milliseconds).
    pub fn silence_limit_s(rate_hz: f64) -> f64 {
        (10.0 / rate_hz).max(0.25)
    }

    /// The connection failed (counted as a reconnect once it is back).
    pub fn disconnected(&mut self) {
        if !self.disconnected {
            self.disconnected = true;
            self.status.reconnects.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `n` samples arrived at host time `t_ns` (one read of a serial port,
    /// one package, one frame).
    pub fn arrived(&mut self, t_ns: i64, n: usize, continuity: Continuity) -> Result<(), TableError> {
        if n == 0 {
            return Ok(());
        }
        if n > self.backlog_samples {
            self.status.backlog_reads.fetch_add(1, Ordering::Relaxed);
            self.status.backlog_samples.fetch_add(n as u64, Ordering::Relaxed);
        }
        let Some(last) = self.last_sample_ns else {
            self.last_sample_ns = Some(t_ns);
            self.disconnected = false;
            let _ = self.status.first_sample_ns.compare_exchange(i64::MIN, t_ns, Ordering::Relaxed, Ordering::Relaxed);
            return Ok(());
        };
        let silent = t_ns - last > self.silent_after_ns;
        let gap = match (self.disconnected, continuity) {
            (true, Continuity::Missing(m)) => Some((GapReason::Disconnected, Some(m))),
            (true, Continuity::Continuous) => Some((GapReason::Disconnected, Some(0))),
            (true, _) => Some((GapReason::Disconnected, None)),
            (false, Continuity::Missing(m)) => Some((GapReason::Lost, Some(m))),
            (false, Continuity::Restarted) => Some((GapReason::Lost, None)),
            (false, Continuity::Unnumbered) if silent => Some((GapReason::Silent, None)),
            (false, _) => None,
        };
        self.disconnected = false;
        self.last_sample_ns = Some(t_ns);
        match gap {
            Some((reason, missing_samples)) => self.write(Gap { start_host_ns: last, end_host_ns: t_ns, reason, missing_samples }),
            None => Ok(()),
        }
    }

    /// The recording stopped at host time `stop_ns`: an outage still going
    /// on, or a device that never sent, is written now.
    pub fn finish(&mut self, stop_ns: i64) -> Result<(), TableError> {
        match self.last_sample_ns {
            None => self.write(Gap { start_host_ns: 0, end_host_ns: stop_ns, reason: GapReason::NeverSent, missing_samples: None }),
            Some(last) if self.disconnected || stop_ns - last > self.silent_after_ns => {
                let reason = if self.disconnected { GapReason::Disconnected } else { GapReason::Silent };
                self.write(Gap { start_host_ns: last, end_host_ns: stop_ns, reason, missing_samples: None })
            }
            Some(_) => Ok(()),
        }
    }

    fn write(&mut self, gap: Gap) -> Result<(), TableError> {
        self.status.gaps.fetch_add(1, Ordering::Relaxed);
        if let Some(m) = gap.missing_samples {
            self.status.missing_packages.fetch_add(m, Ordering::Relaxed);
        }
        self.status.outage_ns.fetch_add((gap.end_host_ns - gap.start_host_ns).max(0) as u64, Ordering::Relaxed);
        self.writer.write(&gap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use session::gaps::read_gaps;

    const MS: i64 = 1_000_000;

    #[test]
    fn silence_disconnection_loss_and_the_end_become_gap_rows() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(Status::default());
        let mut o = Outages::new(dir.path(), "ft300", 0.25, 20, status.clone()).unwrap();
        o.arrived(100 * MS, 1, Continuity::Unnumbered).unwrap();
        o.arrived(110 * MS, 1, Continuity::Unnumbered).unwrap();
        o.arrived(600 * MS, 1, Continuity::Unnumbered).unwrap(); // 490 ms silent
        o.disconnected();
        o.disconnected(); // one outage, one reconnect
        o.arrived(5_600 * MS, 1, Continuity::Unnumbered).unwrap();
        o.arrived(5_610 * MS, 300, Continuity::Unnumbered).unwrap(); // a backlog
        o.arrived(5_620 * MS, 1, Continuity::Missing(3)).unwrap();
        o.disconnected();
        o.finish(9_000 * MS).unwrap();
        let gaps = read_gaps(dir.path(), "ft300").unwrap();
        let rows: Vec<(i64, i64, GapReason, Option<u64>)> =
            gaps.iter().map(|g| (g.start_host_ns / MS, g.end_host_ns / MS, g.reason, g.missing_samples)).collect();
        assert_eq!(
            rows,
            vec![
                (110, 600, GapReason::Silent, None),
                (600, 5_600, GapReason::Disconnected, None),
                (5_610, 5_620, GapReason::Lost, Some(3)),
                (5_620, 9_000, GapReason::Disconnected, None),
            ]
        );
        assert_eq!(status.reconnects.load(Ordering::Relaxed), 2);
        assert_eq!(status.gaps.load(Ordering::Relaxed), 4);
        assert_eq!(status.missing_packages.load(Ordering::Relaxed), 3);
        assert_eq!(status.backlog_reads.load(Ordering::Relaxed), 1);
        assert_eq!(status.first_sample_ns.load(Ordering::Relaxed), 100 * MS);
    }

    #[test]
    fn a_device_that_never_sends_is_one_gap_over_the_whole_recording() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(Status::default());
        let mut o = Outages::new(dir.path(), "load_cell", 0.5, 20, status).unwrap();
        o.finish(3_000 * MS).unwrap();
        let gaps = read_gaps(dir.path(), "load_cell").unwrap();
        assert_eq!(gaps, vec![Gap { start_host_ns: 0, end_host_ns: 3_000 * MS, reason: GapReason::NeverSent, missing_samples: None }]);
    }
}
