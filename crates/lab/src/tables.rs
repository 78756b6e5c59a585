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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_written_reads_back_and_bad_rows_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.csv");
        let rows = vec![(0.0, [1.0, 2.0, 3.0, 0.1, 0.2, 1.0 / 3.0]), (0.01, [1.5, 2.0, 3.0, 0.1, 0.2, 0.3])];
        write_time_table(&p, &WRENCH_HEADER, rows.clone()).unwrap();
        assert_eq!(read_wrench(&p).unwrap(), rows);
        for (text, needle) in [
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n# a comment\n0,1,2,3,4,5,6\n0.1,1,2,x,4,5,6\n", "line 4: column fz_n: not a number"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n0,1,2,3,4,5\n", "line 2: 6 values, the header has 7"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n1,1,2,3,4,5,6\n1,1,2,3,4,5,6\n", "line 3: t_s = 1 does not follow 1"),
            ("t_s,f\n0,1\n", "header: expected t_s,fx_n"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n", "no rows"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n0,1,2,3,4,5,inf\n", "not finite"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_wrench(&p).unwrap_err();
            assert!(e.to_string().contains(needle) && e.to_string().contains("w.csv"), "{e}");
            assert_eq!(e.kind(), crate::Kind::Input);
        }
        std::fs::write(&p, "t_s,a_n,b_n\n0,1,2\n1,3,4\n").unwrap();
        let t = read_time_table(&p, None).unwrap();
        assert_eq!(t.columns, vec!["a_n", "b_n"]);
        assert_eq!(t.rows[1], (1.0, vec![3.0, 4.0]));
    }
}
