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
use polars::prelude::*;

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

/// The as-of rule as indices: for each row time, the index of the sample
/// `matching` takes from `sample_ns` (sorted), within `tolerance_ns` and
/// not inside one of `gaps`; and how many rows lay inside one. The same
/// polars joins as [`aligned`], on the samples' indices.
pub fn match_rows(rows_ns: &[i64], sample_ns: &[i64], gaps: &[Gap], matching: Match, tolerance_ns: i64) -> Result<(Vec<Option<usize>>, usize), String> {
    let index = (0..sample_ns.len()).map(|k| k as f64).collect();
    let stream = StreamColumns { name: String::new(), t_host_ns: sample_ns.to_vec(), columns: vec![("index".into(), index)] };
    let joined = join_stream(rows_ns, &stream, gaps, matching, tolerance_ns).map_err(|e| e.to_string())?;
    let picks = joined.columns[0].1.iter().map(|k| k.is_finite().then_some(*k as usize)).collect();
    Ok((picks, joined.rows_in_outages))
}

/// The column of a joined sample's own host time, beside its values.
const SAMPLE_NS: &str = "__sample_t_host_ns";
/// The suffix of the sample after a row (`Match::Nearest`).
const AFTER: &str = "__after";

/// A stream as a polars frame: its host times (`t_host_ns`, and a copy
/// under [`SAMPLE_NS`], which the join keeps) and its value columns.
fn stream_frame(stream: &StreamColumns) -> PolarsResult<LazyFrame> {
    let mut columns = vec![Column::new("t_host_ns".into(), stream.t_host_ns.as_slice()), Column::new(SAMPLE_NS.into(), stream.t_host_ns.as_slice())];
    columns.extend(stream.columns.iter().map(|(name, values)| Column::new(name.as_str().into(), values.as_slice())));
    Ok(DataFrame::new(columns)?.lazy())
}

/// `rows` as-of joined with `samples` on `t_host_ns`: each row given the
/// last sample at or before it (`backward`) or the first strictly after
/// it, within `tolerance_ns`; clashing names take `suffix`.
fn join_asof(rows: LazyFrame, samples: LazyFrame, backward: bool, tolerance_ns: i64, suffix: &str) -> LazyFrame {
    let options = AsOfOptions {
        strategy: if backward { AsofStrategy::Backward } else { AsofStrategy::Forward },
        tolerance: Some(AnyValue::Int64(tolerance_ns)),
        allow_eq: backward,
        check_sortedness: true,
        ..Default::default()
    };
    let on = [col("t_host_ns")];
    rows.join_builder().with(samples).left_on(on.clone()).right_on(on).how(JoinType::AsOf(options)).suffix(suffix).finish()
}

/// One stream joined onto the rows, as [`join_stream`] gives it.
struct JoinedColumns {
    columns: Vec<(String, Vec<f64>)>,
    rows_without: usize,
    rows_in_outages: usize,
}

/// `stream`'s value columns on the rows' times by polars' as-of joins:
/// the sample `matching` takes (`Nearest`: a backward join, equal times
/// included, against a forward one, strictly after; the earlier of two as
/// near), none farther than `tolerance_ns`, none for a row inside one of
/// `gaps`. Each column as f64, NaN where a row has no value.
fn join_stream(rows_ns: &[i64], stream: &StreamColumns, gaps: &[Gap], matching: Match, tolerance_ns: i64) -> PolarsResult<JoinedColumns> {
    let t_row = || col("t_host_ns");
    let in_outage = gaps.iter().fold(lit(false), |any, g| any.or(t_row().gt(lit(g.start_host_ns)).and(t_row().lt(lit(g.end_host_ns)))));
    let rows = DataFrame::new(vec![Column::new("t_host_ns".into(), rows_ns)])?.lazy().with_column(in_outage.alias("__in_outage"));
    let samples = stream_frame(stream)?;
    let before = join_asof(rows, samples.clone(), true, tolerance_ns, AFTER);
    let names: Vec<&str> = std::iter::once(SAMPLE_NS).chain(stream.columns.iter().map(|(n, _)| n.as_str())).collect();
    let (joined, picked) = match matching {
        Match::Previous => (before, names.iter().map(|n| col(*n)).collect::<Vec<_>>()),
        Match::Nearest => {
            let both = join_asof(before, samples, false, tolerance_ns, AFTER);
            let (t_before, t_after) = (col(SAMPLE_NS), col(format!("{SAMPLE_NS}{AFTER}")));
            let after_nearer = (t_after.clone() - t_row()).lt(t_row() - t_before.clone());
            let take_after = t_after.is_not_null().and(t_before.is_null().or(after_nearer));
            (both, names.iter().map(|n| when(take_after.clone()).then(col(format!("{n}{AFTER}"))).otherwise(col(*n))).collect())
        }
    };
    let mut picked = picked.into_iter();
    let sample_ns = picked.next().expect("the sample's time comes first");
    let without = col("__in_outage").or(sample_ns.is_null());
    let mut select = vec![col("__in_outage"), without.clone().alias("__without")];
    select.extend(picked.zip(&names[1..]).map(|(value, name)| when(without.clone()).then(lit(f64::NAN)).otherwise(value).alias(*name)));
    let frame = joined.select(select).collect()?;
    let count = |name: &str| -> PolarsResult<usize> { Ok(frame.column(name)?.bool()?.sum().unwrap_or(0) as usize) };
    let columns = names[1..]
        .iter()
        .map(|name| Ok((name.to_string(), frame.column(name)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())))
        .collect::<PolarsResult<Vec<_>>>()?;
    Ok(JoinedColumns { columns, rows_without: count("__without")?, rows_in_outages: count("__in_outage")? })
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
        let tolerance_ns = (tolerance_s * 1e9).round() as i64;
        let by_polars = join_stream(&rows_ns, stream, &gaps, options.matching, tolerance_ns);
        let JoinedColumns { columns, rows_without, rows_in_outages } =
            by_polars.map_err(|e| TableError::Read(session.stream(&stream.name), format!("cannot align it: {e}")))?;
        for (name, values) in columns {
            table.push_f64(&name, values);
        }
        joined.push(JoinedStream { name: stream.name.clone(), tolerance_s, rows_without, rows_in_outages });
    }
    Ok(Aligned { on, table: table.into_read(), joined, warnings })
}
