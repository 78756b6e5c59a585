//! A session's streams on one clock: every stream as-of joined onto the
//! host times of one of them (the robot at 500 Hz, the force sensor at
//! 100 Hz, the camera's frames at 30 fps, each at its own times). A row
//! takes another stream's sample before it (`Previous`) or nearest to it
//! (`Nearest`), within a tolerance, and never across an outage of that
//! stream's device (its gap table): inside an outage there is no value, as
//! there is none farther than the tolerance. No value is NaN (a stream's
//! own values are never NaN: a reader refuses a chunk that holds one).

use crate::gaps::{read_gaps, Gap};
use crate::table::{Damaged, OwnedColumn, Table, TableError};
use crate::SessionDir;

/// Which sample of another stream a row takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// The latest at or before the row's time (what the lab saw then).
    Previous,
    /// The nearest in time (a tie: the earlier; of samples sharing one
    /// host time, the last behind a row and the first ahead of it, as
    /// pandas's `merge_asof` takes them).
    Nearest,
}

impl Match {
    pub fn parse(text: &str) -> Option<Match> {
        match text {
            "previous" => Some(Match::Previous),
            "nearest" => Some(Match::Nearest),
            _ => None,
        }
    }
}

/// What to align, and how.
#[derive(Clone, Debug)]
pub struct AlignOptions {
    /// The stream whose host times are the rows (default: the one with
    /// the most samples, so that no stream is thinned).
    pub on: Option<String>,
    /// The streams to join (empty: every stream of the session).
    pub streams: Vec<String>,
    /// The farthest a joined sample may lie from its row \[s\] (default:
    /// 1.5 times each joined stream's median sample interval: a missed
    /// sample leaves its rows without a value, rather than repeating
    /// an older one).
    pub tolerance_s: Option<f64>,
    pub matching: Match,
    /// A damaged chunk: left out with a warning, or refused.
    pub damaged: Damaged,
}

impl Default for AlignOptions {
    fn default() -> Self {
        AlignOptions { on: None, streams: vec![], tolerance_s: None, matching: Match::Previous, damaged: Damaged::Skip }
    }
}

/// One joined stream's rule, as applied.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinedStream {
    pub name: String,
    pub tolerance_s: f64,
    /// Rows left without its value: beyond the tolerance or inside an outage.
    pub rows_without: usize,
    /// Of those, the rows inside one of its device's outages.
    pub rows_in_outages: usize,
}

/// The streams on one clock: `t_host_ns` (the `on` stream's), then
/// `STREAM.COLUMN` for every stream's columns (the `on` stream first), as
/// f64 with NaN where a row has no value.
pub struct Aligned {
    pub on: String,
    pub table: Table,
    pub joined: Vec<JoinedStream>,
    /// Damaged chunks left out, one line each.
    pub warnings: Vec<String>,
}

/// A stream read whole: its host times and its other columns as f64.
struct StreamColumns {
    name: String,
    t_host_ns: Vec<i64>,
    columns: Vec<(String, Vec<f64>)>,
}

fn read_stream(session: &SessionDir, name: &str, damaged: Damaged, warnings: &mut Vec<String>) -> Result<StreamColumns, TableError> {
    let (table, skipped) = Table::read_chunks_or_skip(&session.stream(name), damaged)?;
    warnings.extend(skipped);
    let t_host_ns = if table.height() == 0 && !table.has("t_host_ns") { vec![] } else { table.i64("t_host_ns")? };
    // The values moved out of the reader, not copied (a stream holds
    // numbers only: its chunks' rules refuse text).
    let columns = table
        .into_columns()?
        .into_iter()
        .filter(|(column, _)| column != "t_host_ns")
        .filter_map(|(column, values)| {
            let values = match values {
                OwnedColumn::F64(v) => v,
                OwnedColumn::I64(v) => v.into_iter().map(|x| x as f64).collect(),
                OwnedColumn::Text(_) => return None,
            };
            Some((format!("{name}.{column}"), values))
        })
        .collect();
    Ok(StreamColumns { name: name.to_string(), t_host_ns, columns })
}

/// The median interval between a stream's samples \[s\] (None: under two).
pub fn median_interval_s(t_host_ns: &[i64]) -> Option<f64> {
    let mut dt: Vec<i64> = t_host_ns.windows(2).map(|w| w[1] - w[0]).collect();
    if dt.is_empty() {
        return None;
    }
    let mid = dt.len() / 2;
    let (_, median, _) = dt.select_nth_unstable(mid);
    Some(*median as f64 * 1e-9)
}

/// The as-of rule: for each row time, the index of the sample `matching`
/// takes from `sample_ns` (sorted), within `tolerance_ns` and not inside
/// one of `gaps`; and how many rows lay inside one.
pub fn match_rows(rows_ns: &[i64], sample_ns: &[i64], gaps: &[Gap], matching: Match, tolerance_ns: i64) -> (Vec<Option<usize>>, usize) {
    let mut in_outages = 0;
    let mut next = 0; // the first sample after the row's time
    let picks = rows_ns
        .iter()
        .map(|&t| {
            while next < sample_ns.len() && sample_ns[next] <= t {
                next += 1;
            }
            if gaps.iter().any(|g| g.start_host_ns < t && t < g.end_host_ns) {
                in_outages += 1;
                return None;
            }
            let before = next.checked_sub(1);
            let pick = match matching {
                Match::Previous => before,
                Match::Nearest => {
                    let after = (next < sample_ns.len()).then_some(next);
                    match (before, after) {
                        (Some(b), Some(a)) => Some(if sample_ns[a] - t < t - sample_ns[b] { a } else { b }),
                        (b, a) => b.or(a),
                    }
                }
            };
            pick.filter(|&i| (sample_ns[i] - t).abs() <= tolerance_ns)
        })
        .collect();
    (picks, in_outages)
}

/// `session`'s streams aligned by `options` (see the module's overview).
pub fn aligned(session: &SessionDir, options: &AlignOptions) -> Result<Aligned, TableError> {
    let names = session.stream_names();
    let unknown = |name: &str| TableError::Read(session.stream(name), format!("no stream '{name}' ({})", session.describe_streams()));
    let wanted = if options.streams.is_empty() { names.clone() } else { options.streams.clone() };
    if let Some(n) = wanted.iter().chain(options.on.iter()).find(|n| !names.contains(n)) {
        return Err(unknown(n));
    }
    if let Some(t) = options.tolerance_s.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        return Err(TableError::Read(session.path().to_path_buf(), format!("tolerance {t} s: must be a finite time >= 0")));
    }
    let mut warnings = vec![];
    let mut streams = wanted.iter().map(|n| read_stream(session, n, options.damaged, &mut warnings)).collect::<Result<Vec<_>, _>>()?;
    let on = match &options.on {
        Some(on) => on.clone(),
        None => streams.iter().max_by_key(|s| s.t_host_ns.len()).map(|s| s.name.clone()).ok_or_else(|| unknown("(any)"))?,
    };
    if !streams.iter().any(|s| s.name == on) {
        streams.insert(0, read_stream(session, &on, options.damaged, &mut warnings)?);
    }
    let base_at = streams.iter().position(|s| s.name == on).expect("on is read");
    let StreamColumns { t_host_ns: rows_ns, columns: base_columns, .. } = streams.remove(base_at);
    let mut table = Table::new();
    table.push_i64("t_host_ns", rows_ns.clone());
    for (name, values) in base_columns {
        table.push_f64(&name, values);
    }
    let mut joined = vec![];
    for stream in &streams {
        let tolerance_s = options.tolerance_s.or_else(|| median_interval_s(&stream.t_host_ns).map(|dt| 1.5 * dt)).unwrap_or(0.0);
        let gaps = read_gaps(session.path(), &stream.name)?;
        let (picks, rows_in_outages) = match_rows(&rows_ns, &stream.t_host_ns, &gaps, options.matching, (tolerance_s * 1e9).round() as i64);
        for (name, values) in &stream.columns {
            table.push_f64(name, picks.iter().map(|p| p.map_or(f64::NAN, |i| values[i])).collect());
        }
        let rows_without = picks.iter().filter(|p| p.is_none()).count();
        joined.push(JoinedStream { name: stream.name.clone(), tolerance_s, rows_without, rows_in_outages });
    }
    Ok(Aligned { on, table: table.into_read(), joined, warnings })
}
