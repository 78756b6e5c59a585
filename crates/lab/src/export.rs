//! A session handed on: every table as CSV (or JSON, Parquet, Arrow IPC:
//! polars' writers), its headers the columns' names as
//! docs/reference/session.md lists them, with `units.csv` naming each
//! column's unit where its name does not end in one, and the metadata as
//! JSON, for a colleague with MATLAB, Python or a spreadsheet and no
//! rodlab. Videos are not copied (they already are plain files). A
//! simulation's output exports the same way, its simulated markers under a
//! session's columns.

use crate::error::{Error, Result};
use session::aligned::AlignOptions;
use session::{SessionDir, Table, TableFormat};
use std::path::{Path, PathBuf};

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct Exported {
    /// Every file written, with its rows (none for the metadata).
    pub files: Vec<(PathBuf, Option<usize>)>,
    /// Damaged chunks left out, one line each.
    pub warnings: Vec<String>,
    /// With `--aligned`: the stream whose times are the rows of
    /// `aligned.csv`, and each joined stream's rule and rows without a value.
    pub aligned: Option<(String, Vec<session::aligned::JoinedStream>)>,
}

/// Suffixes that already name a unit (`fx_n`, `t_host_ns`, `x_m`, ...).
const UNIT_SUFFIXES: [&str; 15] = ["_m", "_n", "_nm", "_s", "_ns", "_ms", "_pa", "_rad", "_deg", "_px", "_hz", "_kg", "_m_s", "_kg_m3", "_px2"];

/// The unit of a column whose name does not carry one: UR's RTDE
/// variables (SI, as the controller sends them), and counts.
pub fn unit_of(column: &str) -> Option<&'static str> {
    if UNIT_SUFFIXES.iter().any(|s| column.ends_with(s)) {
        return None;
    }
    let (base, index) = match column.rsplit_once('_') {
        Some((b, i)) if i.parse::<usize>().is_ok() => (b, i.parse::<usize>().ok()),
        _ => (column, None),
    };
    let linear_then_angular = |linear: &'static str, angular: &'static str| Some(if index.unwrap_or(0) < 3 { linear } else { angular });
    match base {
        "timestamp" => Some("s"),
        "actual_TCP_pose" | "target_TCP_pose" => linear_then_angular("m", "rad (rotation vector)"),
        "actual_TCP_speed" | "target_TCP_speed" => linear_then_angular("m/s", "rad/s"),
        "actual_TCP_force" | "ft_raw_wrench" => linear_then_angular("N", "N m"),
        "actual_q" | "target_q" => Some("rad"),
        "actual_qd" | "target_qd" => Some("rad/s"),
        "actual_current" | "target_current" => Some("A"),
        "actual_main_voltage" | "actual_robot_voltage" => Some("V"),
        "joint_temperatures" => Some("degC"),
        "speed_scaling" | "target_speed_fraction" => Some("1"),
        b if b.starts_with("output_int_register") || b.starts_with("input_int_register") => Some("count"),
        "seq" | "frame" | "marker" | "flags" | "robot_mode" | "safety_mode" | "runtime_state" => Some("count"),
        _ => None,
    }
}

/// The unit a column's name says, from its suffix (`_m`, `_n_m`, ...) or
/// [`unit_of`] for the names that do not.
pub fn unit(column: &str) -> String {
    if let Some(u) = unit_of(column) {
        return u.to_string();
    }
    let suffix = UNIT_SUFFIXES.iter().filter(|s| column.ends_with(*s)).max_by_key(|s| s.len()).copied().unwrap_or("");
    match suffix {
        "_m" => "m",
        "_n" => "N",
        "_nm" => "N m",
        "_s" => "s",
        "_ns" => "ns",
        "_ms" => "ms",
        "_pa" => "Pa",
        "_rad" => "rad",
        "_deg" => "deg",
        "_px" => "px",
        "_hz" => "Hz",
        "_kg" => "kg",
        "_m_s" => "m/s",
        "_kg_m3" => "kg/m^3",
        "_px2" => "px^2",
        _ => "",
    }
    .to_string()
}

/// Writes `table` as `STEM.EXT` under `to` in `format` (polars' writers);
/// its columns' units go to `units` (file, column, unit). A float's NaN is
/// a missing value where `nan_is_missing` (an aligned table's, the
/// archive's: an empty CSV field, as pandas, polars and spreadsheets read
/// one; a marker's NaN stays: it is a value).
pub(crate) fn write_table(
    table: &Table,
    to: &Path,
    stem: &str,
    format: TableFormat,
    units: &mut Vec<[String; 3]>,
    nan_is_missing: bool,
) -> Result<(PathBuf, Option<usize>)> {
    let file = format!("{stem}.{}", format.extension());
    let path = to.join(&file);
    let rows = table.export(&path, format, nan_is_missing)?;
    // An aligned table's `STREAM.COLUMN` has the column's unit.
    let names = table.schema().into_iter().map(|(n, _)| n);
    units.extend(names.map(|n| [file.clone(), n.clone(), unit(n.rsplit_once('.').map_or(n.as_str(), |(_, c)| c))]));
    Ok((path, Some(rows)))
}

fn sub_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect()).unwrap_or_default();
    v.sort();
    v
}

/// Writes `session`'s tables into `to`: `session.json`, `streams/NAME.csv`,
/// `gaps/DEVICE.csv`, `markers.csv`, `strain.csv` (those that exist), and
/// `units.csv` (file, column, unit; empty for a count or a label).
///
/// A simulation's output directory (`simulate --out`: `sim_markers.parquet`
/// and no session.toml) exports as a session's markers are: its simulated
/// markers as `markers.csv` under the same columns, beside `sim.csv`,
/// `sim_nodes.csv`, `sim_contacts.csv` and its `summary.json`.
pub fn export(session: &SessionDir, to: &Path) -> Result<Exported> {
    export_with(session, to, None, TableFormat::Csv)
}

/// [`export`] in `format` (the tables' extension then `.json`, `.parquet`
/// or `.arrow`; `session.json` and `summary.json` stay JSON), and with
/// `aligned` also `aligned.csv`: every stream on the host times of one
/// ([`session::aligned::aligned`]), a missing value where a row has none
/// (beyond the tolerance, or inside an outage).
pub fn export_with(session: &SessionDir, to: &Path, aligned: Option<&AlignOptions>, format: TableFormat) -> Result<Exported> {
    let meta = session.meta()?;
    if meta.is_none() && session.path().join(SIM_MARKERS).is_file() {
        return export_simulation(session.path(), to, format);
    }
    let meta = meta.ok_or_else(|| Error::input(format!("{}: no session.toml: not a session (nor a simulation's output)", session.path().display())))?;
    new_directory(to)?;
    let mut warnings = vec![];
    let mut files = vec![];
    let json = to.join("session.json");
    let text = serde_json::to_string_pretty(&meta).map_err(|e| Error::computation(format!("session.json: {e}")))?;
    std::fs::write(&json, text).map_err(|e| Error::io(format!("{}: cannot write: {e}", json.display())))?;
    files.push((json, None));
    let mut units = vec![];
    for stream in sub_dirs(&session.streams()) {
        let name = stream.file_name().unwrap_or_default().to_string_lossy().to_string();
        let (table, w) = Table::read_chunks_or_skip(&stream, session::Damaged::Skip)?;
        warnings.extend(w);
        files.push(write_table(&table, to, &format!("streams/{name}"), format, &mut units, false)?);
    }
    for gaps in sub_dirs(&session.path().join("gaps")) {
        let name = gaps.file_name().unwrap_or_default().to_string_lossy().to_string();
        // A gap table is not a stream (no t_host_ns, NaN for an unknown
        // count): read as one, not by the stream rules, which left every
        // chunk out and exported the outages as an empty file.
        let table = match session::gaps::read_gaps(session.path(), &name) {
            Ok(gaps) => session::gaps::gaps_table(&gaps).into_read(),
            Err(e) => {
                warnings.push(format!("{e}: device {name}'s gap table left out"));
                continue;
            }
        };
        files.push(write_table(&table, to, &format!("gaps/{name}"), format, &mut units, false)?);
    }
    for (table, stem) in [(session.markers(), "markers"), (session.strain(), "strain")] {
        if table.is_file() {
            files.push(write_table(&Table::read(&table)?, to, stem, format, &mut units, false)?);
        }
    }
    let aligned = match aligned {
        Some(options) => {
            let joined = session::aligned::aligned(session, options)?;
            files.push(write_table(&joined.table, to, "aligned", format, &mut units, true)?);
            Some((joined.on, joined.joined))
        }
        None => None,
    };
    files.push(write_units(to, &units, format)?);
    Ok(Exported { files, warnings, aligned })
}

/// The simulated markers of `simulate --out` (the tracker's table, pixels NaN).
const SIM_MARKERS: &str = "sim_markers.parquet";

/// An empty (or new) directory to export into: another export (or anything
/// else) there is not overwritten.
fn new_directory(to: &Path) -> Result<()> {
    if std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::input(format!("--to {}: is not empty: export into a new directory", to.display())));
    }
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("{}: cannot create: {e}", to.display())))
}

/// `units.EXT`: (file, column, unit) of every column written.
fn write_units(to: &Path, units: &[[String; 3]], format: TableFormat) -> Result<(PathBuf, Option<usize>)> {
    let mut table = Table::new();
    for (k, name) in ["file", "column", "unit"].into_iter().enumerate() {
        table.push_str(name, units.iter().map(|row| row[k].clone()).collect());
    }
    write_table(&table.into_read(), to, "units", format, &mut vec![], false)
}

/// A simulation's output as a session's export: `markers.csv` (the
/// simulated markers, a session's columns), `sim.csv`, `sim_nodes.csv`,
/// `sim_contacts.csv`, `summary.json` (as written), `units.csv`.
fn export_simulation(dir: &Path, to: &Path, format: TableFormat) -> Result<Exported> {
    new_directory(to)?;
    let (mut files, mut units) = (vec![], vec![]);
    for (table, stem) in [(SIM_MARKERS, "markers"), ("sim.parquet", "sim"), ("sim_nodes.parquet", "sim_nodes"), ("sim_contacts.parquet", "sim_contacts")] {
        let path = dir.join(table);
        if path.is_file() {
            files.push(write_table(&Table::read(&path)?, to, stem, format, &mut units, false)?);
        }
    }
    let summary = dir.join("summary.json");
    if summary.is_file() {
        let out = to.join("summary.json");
        std::fs::copy(&summary, &out).map_err(|e| Error::io(format!("{}: cannot copy: {e}", out.display())))?;
        files.push((out, None));
    }
    files.push(write_units(to, &units, format)?);
    Ok(Exported { files, warnings: vec![], aligned: None })
}
