//! Looking at a recorded session: what each stream holds (rows, span, rate,
//! gaps by the device's own clock), each device's outages from the gap
//! tables, and whether every file is intact and every device was heard.

use crate::error::{Error, Result};
use session::gaps::{Gap, GapReason};
use session::{DeviceRecord, SessionDir, SessionMeta, Table};
use std::collections::BTreeMap;

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

/// One device's outages.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceOutages {
    pub name: String,
    /// From the gap table, in time order.
    pub gaps: Vec<Gap>,
    /// What the recorder wrote at the end (none: killed, or an older session).
    pub record: Option<DeviceRecord>,
    /// The device's own text messages (a robot controller's), in order.
    pub messages: Vec<DeviceMessage>,
}

/// A text message a device sent while recording (`<name>_messages.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMessage {
    pub t_host_ns: i64,
    /// EXCEPTION, ERROR, WARNING or INFO.
    pub level: String,
    pub source: String,
    pub message: String,
}

impl DeviceMessage {
    /// EXCEPTION, ERROR and WARNING: what the person recording must see.
    pub fn matters(&self) -> bool {
        self.level != "INFO"
    }
}

/// A device's messages file, if it has one.
fn read_messages(dir: &SessionDir, name: &str) -> Result<Vec<DeviceMessage>> {
    let path = dir.messages(name);
    if !path.is_file() {
        return Ok(vec![]);
    }
    let bad = |e: String| Error::input(format!("{}: {e}", path.display()));
    let mut reader = csv::Reader::from_path(&path).map_err(|e| bad(e.to_string()))?;
    let mut out = vec![];
    for row in reader.records() {
        let row = row.map_err(|e| bad(e.to_string()))?;
        let field = |k: usize| row.get(k).unwrap_or_default().to_string();
        out.push(DeviceMessage {
            t_host_ns: field(0).parse().map_err(|_| bad(format!("line {}: t_host_ns is not a number", out.len() + 2)))?,
            level: field(1),
            source: field(2),
            message: field(3),
        });
    }
    Ok(out)
}

impl DeviceOutages {
    pub fn outage_s(&self) -> f64 {
        self.gaps.iter().map(Gap::duration_s).sum()
    }

    /// "3 gaps, 5.02 s in all (1 disconnected, 2 lost: 7 samples)".
    pub fn describe(&self) -> String {
        if self.gaps.is_empty() {
            return "0 gaps".into();
        }
        let mut by_reason = vec![];
        for r in [GapReason::NeverSent, GapReason::Disconnected, GapReason::Silent, GapReason::Lost] {
            let n = self.gaps.iter().filter(|g| g.reason == r).count();
            if n > 0 {
                let missing: u64 = self.gaps.iter().filter(|g| g.reason == r).filter_map(|g| g.missing_samples).sum();
                let samples = if missing > 0 { format!(": {missing} samples") } else { String::new() };
                by_reason.push(format!("{n} {}{samples}", r.as_str()));
            }
        }
        format!("{} gaps, {:.2} s in all ({})", self.gaps.len(), self.outage_s(), by_reason.join(", "))
    }
}

/// What `session info` shows.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub meta: Option<SessionMeta>,
    pub streams: Vec<StreamInfo>,
    /// Damaged chunks left out, one line each (`session check` names them all).
    pub warnings: Vec<String>,
    pub devices: Vec<DeviceOutages>,
    /// Segments recorded into the directory later (`record --append`).
    pub segments: Vec<SessionDir>,
}

/// Every stream and every device of `dir`.
pub fn info(dir: &SessionDir) -> Result<SessionInfo> {
    let mut warnings = vec![];
    let streams = streams(dir, &mut warnings)?;
    let meta = dir.meta()?;
    let devices = devices(dir, meta.as_ref(), &mut warnings);
    Ok(SessionInfo { devices, meta, streams, segments: segments(dir), warnings })
}

/// Every stream of `dir`, by name; a damaged chunk is left out with a
/// warning in `warnings`.
pub fn streams(dir: &SessionDir, warnings: &mut Vec<String>) -> Result<Vec<StreamInfo>> {
    if !dir.streams().is_dir() {
        return Err(Error::input(format!("{}: not a session (no streams/)", dir.path().display())));
    }
    let mut out = vec![];
    for name in dir.stream_names() {
        let (t, w) = Table::read_chunks_or_skip(&dir.stream(&name), session::Damaged::Skip)?;
        warnings.extend(w);
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

/// The devices of a session: those `session.toml` lists, and any other
/// with a gap table; a gap table or messages file that cannot be read is
/// a line in `problems` and the device is listed without it.
fn devices(dir: &SessionDir, meta: Option<&SessionMeta>, problems: &mut Vec<String>) -> Vec<DeviceOutages> {
    let mut names: Vec<String> = meta.map(|m| m.devices.iter().map(|d| d.name.clone()).collect()).unwrap_or_default();
    for n in session::gaps::devices_with_gaps(dir.path()) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let gaps = session::gaps::read_gaps(dir.path(), &name).unwrap_or_else(|e| {
                problems.push(format!("device {name}: its gap table cannot be read ({e}): its outages are unknown"));
                vec![]
            });
            let record = meta.and_then(|m| m.devices.iter().find(|d| d.name == name).cloned());
            let messages = read_messages(dir, &name).unwrap_or_else(|e| {
                problems.push(format!("device {name}: {e}"));
                vec![]
            });
            DeviceOutages { name, gaps, record, messages }
        })
        .collect()
}

fn segments(dir: &SessionDir) -> Vec<SessionDir> {
    dir.contents().iter().filter(|n| n.starts_with("segment-")).map(|n| SessionDir::new(dir.path().join(n))).filter(|s| s.meta_path().is_file()).collect()
}

/// Counts the frames of a video that decode (a decoder's; this crate has
/// none): `Err` says why the file does not open.
pub type CountFrames = fn(&std::path::Path) -> std::result::Result<usize, String>;

/// What `session check` looks for beyond damaged files.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// A device silent or away for longer than this is a problem \[s\].
    pub max_outage_s: f64,
    /// Decode every video to count its frames (slow on long sessions).
    pub videos: bool,
    /// How a video's decodable frames are counted (a decoder: this crate
    /// has none; `lab_devices::count_video_frames`). `None`: videos are not
    /// checked, and the report says so.
    pub count_frames: Option<CountFrames>,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions { max_outage_s: 1.0, videos: true, count_frames: None }
    }
}

/// What `session check` found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub chunks: Vec<session::ChunkReport>,
    /// Everything wrong, one line each, naming the file or device.
    pub problems: Vec<String>,
    /// Worth knowing, not wrong (a crash's unfinished chunk, short gaps).
    pub warnings: Vec<String>,
}

impl CheckReport {
    pub fn rows(&self) -> usize {
        self.chunks.iter().map(|r| r.rows).sum()
    }

    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads every file of `dir`: every chunk of every stream, the marker and
/// strain tables, the videos against their frame tables, the devices'
/// outages.
pub fn check(dir: &SessionDir, opts: &CheckOptions) -> Result<CheckReport> {
    let mut report = CheckReport { chunks: session::check_session(dir.path())?, ..CheckReport::default() };
    for c in &report.chunks {
        match &c.problem {
            Some(p) if c.path.to_string_lossy().ends_with(".tmp") => report.warnings.push(format!("{}: {p}", c.path.display())),
            Some(p) => report.problems.push(format!("{}: {p}", c.path.display())),
            None => {}
        }
    }
    let meta = match dir.meta() {
        Ok(m) => m,
        Err(e) => {
            report.problems.push(e.to_string());
            None
        }
    };
    match &meta {
        None => report.problems.push(format!("{}: missing: the session has no session.toml", dir.meta_path().display())),
        Some(m) if m.end_utc.is_empty() => {
            report.warnings.push(format!("{}: not finalised (the recorder was killed): devices' totals are missing", dir.meta_path().display()))
        }
        Some(_) => {}
    }
    if dir.markers().is_file() {
        match session::read_markers(&dir.markers()) {
            Err(e) => report.problems.push(e.to_string()),
            Ok(rows) => {
                // What every later figure rests on: the markers actually tracked.
                let seen = rows.iter().filter(|r| r.flags & session::flags::MISSING == 0 && r.x_m.is_finite()).count();
                let pct = 100.0 * seen as f64 / rows.len().max(1) as f64;
                if seen == 0 {
                    report.problems.push(format!("{}: no marker is tracked in any of its {} rows (every one missing)", dir.markers().display(), rows.len()));
                } else if pct < 50.0 {
                    report.warnings.push(format!("{}: only {pct:.0} % of the marker positions are tracked", dir.markers().display()));
                }
                if let Some(p) = markers_on_one_point(&rows) {
                    report.problems.push(format!("{}: {p}", dir.markers().display()));
                }
            }
        }
    }
    if dir.strain().is_file() {
        if let Err(e) = session::read_strain(&dir.strain()) {
            report.problems.push(e.to_string());
        }
    }
    let mut unreadable = vec![];
    let devices = devices(dir, meta.as_ref(), &mut unreadable);
    report.problems.extend(unreadable);
    for d in &devices {
        check_device(d, opts, &mut report);
    }
    check_streams(dir, meta.as_ref(), &devices, &mut report);
    if opts.videos {
        check_videos(dir, opts.count_frames, &mut report);
    }
    Ok(report)
}

/// Frames whose three or more tracked markers all sit on one point (a
/// tracker that wrote zeros, or one blob for every marker): no rod's
/// markers do.
fn markers_on_one_point(rows: &[session::MarkerRow]) -> Option<String> {
    let mut frames: BTreeMap<i64, Vec<[f64; 3]>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.flags & session::flags::MISSING == 0 && r.x_m.is_finite()) {
        frames.entry(r.frame).or_default().push([r.x_m, r.y_m, r.z_m]);
    }
    let judged = frames.values().filter(|p| p.len() >= 3).count();
    let mut one_point = frames.values().filter(|p| p.len() >= 3 && p.iter().all(|q| q == &p[0]));
    let first = one_point.next()?[0];
    let n = 1 + one_point.count();
    Some(format!(
        "{n} of {judged} frames have every tracked marker on one point (the first at ({:.4}, {:.4}, {:.4}) m): a tracker that wrote one point for every marker",
        first[0], first[1], first[2]
    ))
}

/// What each stream holds, against the session: a value column that is
/// NaN in every row, a device clock that stops, a stream that ends well
/// before the recording did with no gap to say why (a writer that failed),
/// rows on disk unlike what session.toml counts.
fn check_streams(dir: &SessionDir, meta: Option<&SessionMeta>, devices: &[DeviceOutages], report: &mut CheckReport) {
    let mut ends: Vec<(String, i64, usize)> = vec![];
    for name in dir.stream_names() {
        // Damaged chunks are named by the chunk check; what remains is read.
        let Ok((t, _)) = Table::read_chunks_or_skip(&dir.stream(&name), session::Damaged::Skip) else { continue };
        let Ok(th) = t.i64("t_host_ns") else { continue };
        if th.is_empty() {
            continue;
        }
        for (column, _) in t.schema().into_iter().filter(|(c, _)| c != "t_host_ns") {
            if t.f64(&column).is_ok_and(|v| v.iter().all(|x| x.is_nan())) {
                report.problems.push(format!("stream {name}: column '{column}' is NaN in every one of its {} rows", th.len()));
            }
        }
        if let Ok(ts) = t.f64("timestamp") {
            let stuck = ts.windows(2).filter(|w| w[1] == w[0]).count();
            if ts.len() > 10 && stuck * 2 > ts.len() {
                report
                    .problems
                    .push(format!("stream {name}: the device clock (timestamp) does not advance in {stuck} of {} steps (a frozen clock)", ts.len() - 1));
            }
        }
        ends.push((name, th[th.len() - 1], th.len()));
    }
    let Some(session_end) = ends.iter().map(|e| e.1).max() else { return };
    for (name, end, rows) in &ends {
        let device = devices.iter().find(|d| &d.name == name);
        let covered = device.is_some_and(|d| d.gaps.iter().any(|g| g.end_host_ns >= session_end - 1_000_000_000));
        let short_s = (session_end - end) as f64 * 1e-9;
        if short_s > 2.0 && !covered && dir.find_video(name).is_none() {
            let why = device.and_then(|d| d.record.as_ref()).and_then(|r| r.last_error.clone()).map_or(String::new(), |e| format!(" (its last error: {e})"));
            report
                .problems
                .push(format!("stream {name}: ends {short_s:.1} s before the recording's end ({:.1} s) and no gap says why{why}", session_end as f64 * 1e-9));
        }
        if let Some(r) = meta.and_then(|m| m.devices.iter().find(|d| &d.name == name)) {
            if r.rows != *rows as u64 {
                report.problems.push(format!("stream {name}: {rows} rows on disk, session.toml says the device recorded {}", r.rows));
            }
        }
    }
}

fn check_device(d: &DeviceOutages, opts: &CheckOptions, report: &mut CheckReport) {
    let name = &d.name;
    if d.record.as_ref().is_some_and(|r| r.rows == 0) || d.gaps.iter().any(|g| g.reason == GapReason::NeverSent) {
        let why = d.record.as_ref().and_then(|r| r.last_error.as_ref()).map_or(String::new(), |e| format!(" (last error: {e})"));
        match d.record.as_ref().filter(|r| r.rejected > 0) {
            Some(r) => report.problems.push(format!("device {name}: recorded nothing: it sent {} samples, every one rejected{why}", r.rejected)),
            None => report.problems.push(format!("device {name}: sent nothing during the whole recording{why}")),
        }
        return;
    }
    let long: Vec<&Gap> = d.gaps.iter().filter(|g| g.duration_s() > opts.max_outage_s).collect();
    for g in &long {
        report.problems.push(format!(
            "device {name}: {} for {:.2} s (from {:.3} s to {:.3} s of the session){}",
            g.reason.as_str(),
            g.duration_s(),
            g.start_host_ns as f64 * 1e-9,
            g.end_host_ns as f64 * 1e-9,
            g.missing_samples.map_or(String::new(), |m| format!(", {m} samples missing"))
        ));
    }
    if !d.gaps.is_empty() && long.len() < d.gaps.len() {
        report.warnings.push(format!("device {name}: {} (none longer than {} s)", d.describe(), opts.max_outage_s));
    }
    match d.record.as_ref() {
        Some(r) if r.rows_lost > 0 => report.problems.push(format!(
            "device {name}: {} rows it delivered were never stored (its last error: {})",
            r.rows_lost,
            r.last_error.as_deref().unwrap_or("none recorded")
        )),
        Some(DeviceRecord { last_error: Some(e), .. }) => report.warnings.push(format!("device {name}: its last error: {e}")),
        _ => {}
    }
    if let Some(r) = d.record.as_ref().filter(|r| r.backlog_reads > 0) {
        report.warnings.push(format!(
            "device {name}: {} read(s) delivered a backlog of {} samples at once (data that waited in a buffer: their host times are late)",
            r.backlog_reads, r.backlog_samples
        ));
    }
}

fn check_videos(dir: &SessionDir, count_frames: Option<CountFrames>, report: &mut CheckReport) {
    let Some(count_frames) = count_frames else {
        if dir.has_video() {
            report.warnings.push("videos not checked (no video decoder in this build)".into());
        }
        return;
    };
    for container in ["mkv", "avi"] {
        for name in dir.stream_names() {
            let video = dir.video(&name, container);
            if !video.is_file() {
                continue;
            }
            let table_rows = report.chunks.iter().filter(|c| c.problem.is_none() && c.path.starts_with(dir.stream(&name))).map(|c| c.rows).sum::<usize>();
            match count_frames(&video) {
                Err(e) => report.problems.push(format!("{}: {e}", video.display())),
                Ok(n) if n != table_rows => report.problems.push(format!(
                    "{}: {n} frames decode, the frame table (streams/{name}) has {table_rows}{}",
                    video.display(),
                    if n < table_rows { ": the video is cut or damaged" } else { "" }
                )),
                Ok(_) => {}
            }
        }
    }
}
