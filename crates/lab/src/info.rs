//! Looking at a recorded session: what each stream holds (rows, span, rate,
//! gaps by the device's own clock) and whether every file is intact.

use crate::error::{Error, Result};
use session::{SessionDir, Table};

/// One stream of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    pub name: String,
    pub rows: usize,
    /// Host time from the first to the last row \[s\].
    pub span_s: f64,
    /// Rows per second over the span.
    pub rate_hz: f64,
    /// For streams with a device clock (`timestamp`): the median period
    /// \[s\] and the intervals longer than 1.5 periods (or not advancing).
    pub device_period_s: Option<f64>,
    pub device_gaps: Option<usize>,
}

/// Every stream of `dir`, by name.
pub fn streams(dir: &SessionDir) -> Result<Vec<StreamInfo>> {
    if !dir.streams().is_dir() {
        return Err(Error::input(format!("{}: not a session (no streams/)", dir.path().display())));
    }
    let mut out = vec![];
    for name in dir.stream_names() {
        let t = Table::read_chunks(&dir.stream(&name))?;
        if t.height() == 0 {
            out.push(StreamInfo { name, rows: 0, span_s: 0.0, rate_hz: 0.0, device_period_s: None, device_gaps: None });
            continue;
        }
        let th = t.i64("t_host_ns")?;
        let span_s = (th[th.len() - 1] - th[0]) as f64 * 1e-9;
        let rate_hz = if span_s > 0.0 { (th.len() - 1) as f64 / span_s } else { 0.0 };
        let (mut device_period_s, mut device_gaps) = (None, None);
        if t.has("timestamp") {
            let ts = t.f64("timestamp")?;
            let dts: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
            let mut sorted = dts.clone();
            sorted.sort_by(f64::total_cmp);
            let period = sorted.get(sorted.len() / 2).cloned().unwrap_or(0.0);
            device_gaps = Some(dts.iter().filter(|d| **d > 1.5 * period || **d <= 0.0).count());
            device_period_s = Some(period);
        }
        out.push(StreamInfo { name, rows: th.len(), span_s, rate_hz, device_period_s, device_gaps });
    }
    Ok(out)
}

/// What `session check` found: every chunk read, the damaged ones named.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub chunks: Vec<session::ChunkReport>,
}

impl CheckReport {
    pub fn rows(&self) -> usize {
        self.chunks.iter().map(|r| r.rows).sum()
    }

    /// Chunks with a problem (unfinished ones included).
    pub fn damaged(&self) -> Vec<&session::ChunkReport> {
        self.chunks.iter().filter(|r| r.problem.is_some()).collect()
    }

    /// Damage beyond the unfinished chunk a crash leaves.
    pub fn ok(&self) -> bool {
        self.damaged().iter().all(|r| r.path.to_string_lossy().ends_with(".tmp"))
    }
}

/// Reads every chunk of every stream of `dir`.
pub fn check(dir: &SessionDir) -> Result<CheckReport> {
    Ok(CheckReport { chunks: session::check_session(dir.path())? })
}
