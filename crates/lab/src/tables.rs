//! Time tables in CSV, read and written with the `csv` crate: a flange
//! trajectory, a wrench to play, values an ASCII sensor plays. A header
//! row names the columns (SI units in the names), `#` starts a comment
//! line, and every error names the file and the line.

use crate::error::{Error, Result};
use std::path::Path;

/// Header of a flange trajectory: the flange pose in the robot's base
/// frame (position and rotation vector) over time.
pub const TRAJECTORY_HEADER: [&str; 7] = ["t_s", "x_m", "y_m", "z_m", "rx", "ry", "rz"];
/// Header of a wrench table (sensor frame, force first).
pub const WRENCH_HEADER: [&str; 7] = ["t_s", "fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"];

/// A table of numbers: column names (after `t_s`) and `(t_s, values)` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeTable {
    pub columns: Vec<String>,
    pub rows: Vec<(f64, Vec<f64>)>,
}

fn reader(path: &Path) -> Result<csv::Reader<std::fs::File>> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| Error::input(format!("{}: cannot read: {}", path.display(), message(&e))))
}

fn message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => format!("{len} values, the header has {expected_len}"),
        csv::ErrorKind::Utf8 { err, .. } => format!("not UTF-8 text ({err})"),
        _ => e.to_string(),
    }
}

fn at_line(path: &Path, line: Option<u64>, what: impl std::fmt::Display) -> Error {
    match line {
        Some(l) => Error::input(format!("{}: line {l}: {what}", path.display())),
        None => Error::input(format!("{}: {what}", path.display())),
    }
}

/// Reads a CSV of numbers whose first column is `t_s`; with `expected`,
/// the header must be exactly those names. Values must be finite and
/// times increase strictly.
pub fn read_time_table(path: &Path, expected: Option<&[&str]>) -> Result<TimeTable> {
    let mut r = reader(path)?;
    let header: Vec<String> = r.headers().map_err(|e| at_line(path, e.position().map(|p| p.line()), message(&e)))?.iter().map(str::to_string).collect();
    match expected {
        Some(names) if header != names => {
            return Err(Error::input(format!("{}: header: expected {}, got {}", path.display(), names.join(","), header.join(","))));
        }
        _ if header.first().map(String::as_str) != Some("t_s") || header.len() < 2 => {
            return Err(Error::input(format!("{}: header: expected t_s then one column per value, got {}", path.display(), header.join(","))));
        }
        _ => {}
    }
    let mut rows: Vec<(f64, Vec<f64>)> = vec![];
    for rec in r.records() {
        let rec = rec.map_err(|e| at_line(path, e.position().map(|p| p.line()), message(&e)))?;
        let line = rec.position().map(|p| p.line());
        let mut v = Vec::with_capacity(rec.len());
        for (cell, name) in rec.iter().zip(&header) {
            let x: f64 = cell.parse().map_err(|_| at_line(path, line, format!("column {name}: not a number: {cell:?}")))?;
            if !x.is_finite() {
                return Err(at_line(path, line, format!("column {name}: not finite: {cell:?}")));
            }
            v.push(x);
        }
        if let Some((prev, _)) = rows.last() {
            if v[0] <= *prev {
                return Err(at_line(path, line, format!("t_s = {} does not follow {prev}: times must increase", v[0])));
            }
        }
        rows.push((v[0], v[1..].to_vec()));
    }
    if rows.is_empty() {
        return Err(Error::input(format!("{}: no rows", path.display())));
    }
    Ok(TimeTable { columns: header[1..].to_vec(), rows })
}

/// A flange trajectory: `(t_s, [x, y, z, rx, ry, rz])` in the robot's base frame.
pub fn read_trajectory(path: &Path) -> Result<lie::trajectory::UrSamples> {
    let t = read_time_table(path, Some(&TRAJECTORY_HEADER))?;
    Ok(t.rows.into_iter().map(|(t, v)| (t, std::array::from_fn(|i| v[i]))).collect())
}

/// A wrench table: `(t_s, [fx, fy, fz, mx, my, mz])`, sensor frame.
pub fn read_wrench(path: &Path) -> Result<lie::trajectory::UrSamples> {
    let t = read_time_table(path, Some(&WRENCH_HEADER))?;
    Ok(t.rows.into_iter().map(|(t, v)| (t, std::array::from_fn(|i| v[i]))).collect())
}

/// Writes `(t_s, values)` rows under `header` (the first name `t_s`),
/// every value at full precision.
pub fn write_time_table<R: AsRef<[f64]>>(path: &Path, header: &[&str], rows: impl IntoIterator<Item = (f64, R)>) -> Result<()> {
    let fail = |e: csv::Error| Error::io(format!("{}: cannot write: {}", path.display(), message(&e)));
    let mut w = csv::Writer::from_path(path).map_err(fail)?;
    w.write_record(header).map_err(fail)?;
    for (t, v) in rows {
        let record: Vec<String> = std::iter::once(t).chain(v.as_ref().iter().copied()).map(|x| x.to_string()).collect();
        w.write_record(&record).map_err(fail)?;
    }
    w.flush().map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))
}
