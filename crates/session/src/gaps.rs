//! Outages of a device's stream, on the session's host clock: one table per
//! device, `gaps/<device>/NNNNNN.parquet`, one chunk written the moment an
//! outage ends (so a crash keeps every outage already over).
//!
//! | column            | type | meaning                                                    |
//! |-------------------|------|------------------------------------------------------------|
//! | `start_host_ns`   | i64  | host time of the last sample before the outage             |
//! | `end_host_ns`     | i64  | host time of the first sample after it (or the stop)       |
//! | `duration_s`      | f64  | `end - start`                                              |
//! | `reason`          | str  | `silent`, `disconnected`, `lost` or `never_sent`           |
//! | `missing_samples` | f64  | samples the device numbered but never sent (NaN: unknown)  |

use crate::table::{Table, TableError};
use std::path::{Path, PathBuf};

/// Why a stream was interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapReason {
    /// Connected, but no sample for longer than the device's silence limit.
    Silent,
    /// The connection failed (cable pulled, device gone); it ends when
    /// the device is back, or at the stop.
    Disconnected,
    /// The device numbers its samples (RTDE timestamps) and some never
    /// arrived, while connected.
    Lost,
    /// The device sent nothing during the whole recording.
    NeverSent,
}

impl GapReason {
    pub fn as_str(self) -> &'static str {
        match self {
            GapReason::Silent => "silent",
            GapReason::Disconnected => "disconnected",
            GapReason::Lost => "lost",
            GapReason::NeverSent => "never_sent",
        }
    }

    pub fn parse(s: &str) -> Option<GapReason> {
        [GapReason::Silent, GapReason::Disconnected, GapReason::Lost, GapReason::NeverSent].into_iter().find(|r| r.as_str() == s)
    }
}

/// One outage.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    pub start_host_ns: i64,
    pub end_host_ns: i64,
    pub reason: GapReason,
    /// Samples the device numbered but never sent (`None`: unknown or unnumbered).
    pub missing_samples: Option<u64>,
}

impl Gap {
    pub fn duration_s(&self) -> f64 {
        (self.end_host_ns - self.start_host_ns) as f64 * 1e-9
    }
}

/// The directory of a device's gap table.
pub fn gaps_dir(session: &Path, device: &str) -> PathBuf {
    session.join("gaps").join(device)
}

/// Writes a device's outages, one chunk each.
pub struct GapWriter {
    dir: PathBuf,
    seq: u32,
}

impl GapWriter {
    pub fn create(session: &Path, device: &str) -> Result<GapWriter, TableError> {
        let dir = gaps_dir(session, device);
        std::fs::create_dir_all(&dir).map_err(|e| TableError::Write(dir.clone(), e.to_string()))?;
        Ok(GapWriter { dir, seq: 0 })
    }

    pub fn write(&mut self, gap: &Gap) -> Result<(), TableError> {
        gaps_table(std::slice::from_ref(gap)).write(&self.dir.join(format!("{:06}.parquet", self.seq)))?;
        self.seq += 1;
        Ok(())
    }
}

/// The gap table of `gaps` (its columns whatever the count: none gives
/// the empty table with the same columns).
pub fn gaps_table(gaps: &[Gap]) -> Table {
    let mut t = Table::new();
    t.push_i64("start_host_ns", gaps.iter().map(|g| g.start_host_ns).collect());
    t.push_i64("end_host_ns", gaps.iter().map(|g| g.end_host_ns).collect());
    t.push_f64("duration_s", gaps.iter().map(Gap::duration_s).collect());
    t.push_str("reason", gaps.iter().map(|g| g.reason.as_str().to_string()).collect());
    t.push_f64("missing_samples", gaps.iter().map(|g| g.missing_samples.map_or(f64::NAN, |m| m as f64)).collect());
    t
}

/// A device's outages, in time order (empty when it has no gap table:
/// sessions recorded before there were gap tables, or synthesised ones).
pub fn read_gaps(session: &Path, device: &str) -> Result<Vec<Gap>, TableError> {
    let dir = gaps_dir(session, device);
    if !dir.is_dir() {
        return Ok(vec![]);
    }
    let t = Table::read_chunks(&dir)?;
    if t.height() == 0 {
        return Ok(vec![]);
    }
    let (start, end, reason, missing) = (t.i64("start_host_ns")?, t.i64("end_host_ns")?, t.str("reason")?, t.f64("missing_samples")?);
    let mut out = Vec::with_capacity(start.len());
    for i in 0..start.len() {
        let r = GapReason::parse(&reason[i]).ok_or_else(|| {
            TableError::BadColumn(dir.clone(), "reason".into(), format!("'{}' is not one of silent, disconnected, lost, never_sent", reason[i]))
        })?;
        let m = missing[i];
        out.push(Gap { start_host_ns: start[i], end_host_ns: end[i], reason: r, missing_samples: (m.is_finite() && m >= 0.0).then_some(m as u64) });
    }
    out.sort_by_key(|g| g.start_host_ns);
    Ok(out)
}

/// The devices of a session that have a gap table.
pub fn devices_with_gaps(session: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(session.join("gaps"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}
