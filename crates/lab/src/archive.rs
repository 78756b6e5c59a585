//! A lab's archive as one table (stage "report", over many sessions): every
//! session under a directory, a row each, with what it holds (devices,
//! streams, duration, outages, markers, strain) and the newest
//! identification under the same directory that fitted it (its rod file,
//! the specimen, and E, G, rho with their 95 % intervals). Written as
//! Parquet and CSV, to be read by polars, pandas or DuckDB as one dataset.

use crate::error::{Error, Result};
use session::{SessionDir, Table};
use std::path::{Path, PathBuf};

/// The newest identification that fitted a session.
#[derive(Clone, Debug, PartialEq)]
pub struct Identification {
    /// Its identified.toml, relative to the archive's directory.
    pub file: PathBuf,
    pub rod_file: String,
    /// \[value, low, high\] of E \[Pa\], G \[Pa\], rho \[kg/m^3\] (NaN: held).
    pub e_pa: [f64; 3],
    pub g_pa: [f64; 3],
    pub rho_kg_m3: [f64; 3],
    pub rms_error_mm: f64,
    /// Seconds since the Unix epoch when the file was written.
    pub written_unix_s: f64,
}

/// One session's row.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    /// Relative to the archive's directory.
    pub session: String,
    pub start_utc: String,
    pub start_unix_s: f64,
    /// The rig file recorded with (empty: none, as for a synthetic session).
    pub rig_file: String,
    pub operator_notes: String,
    /// Device names, comma-separated.
    pub devices: String,
    pub streams: usize,
    /// The longest stream's span \[s\].
    pub duration_s: f64,
    pub rows: usize,
    pub gaps: usize,
    pub outage_s: f64,
    pub marker_rows: usize,
    pub strain_rows: usize,
    pub identification: Option<Identification>,
}

/// The archive's rows, and what could not be read (one line each).
#[derive(Clone, Debug, Default)]
pub struct ArchiveIndex {
    pub rows: Vec<SessionRow>,
    /// Every identification under the directory, with the archive's
    /// sessions it read (relative to the directory; none: sessions
    /// elsewhere).
    pub fits: Vec<(Identification, Vec<String>)>,
    pub warnings: Vec<String>,
}

/// Directories under `dir` (itself included) that hold a session.toml or
/// an identified.toml, in name order; a session's own subdirectories
/// (segments) are its, not sessions of the archive.
fn walk(dir: &Path, sessions: &mut Vec<PathBuf>, identified: &mut Vec<PathBuf>) {
    if dir.join("identified.toml").is_file() {
        identified.push(dir.join("identified.toml"));
    }
    if dir.join("session.toml").is_file() {
        sessions.push(dir.to_path_buf());
        return;
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect())
        .unwrap_or_default();
    subdirs.sort();
    for d in subdirs {
        walk(&d, sessions, identified);
    }
}

/// Whether `listed` (a session as an identification named it: as given on
/// its command line, relative to where it ran) is `session`: the same
/// directory, or, where it cannot be found from here, the same last two
/// path components (day/session).
fn names(listed: &str, session: &Path) -> bool {
    let listed = Path::new(listed.trim());
    if let (Ok(a), Ok(b)) = (listed.canonicalize(), session.canonicalize()) {
        return a == b;
    }
    let tail = |p: &Path| p.components().rev().take(2).map(|c| c.as_os_str().to_owned()).collect::<Vec<_>>();
    tail(listed) == tail(session)
}

fn triple(e: &identify::output::EstimateOut) -> [f64; 3] {
    [e.value, e.ci95[0], e.ci95[1]]
}

fn identification(path: &Path, warnings: &mut Vec<String>) -> Option<(Identification, Vec<String>)> {
    let file = match identify::output::IdentifiedFile::read(path) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!("{e}: left out of the index"));
            return None;
        }
    };
    if file.failed.is_some() {
        return None;
    }
    let written_unix_s = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(f64::NAN, |d| d.as_secs_f64());
    let mut sessions: Vec<String> = file.experiments_dir.split(", ").map(str::to_string).collect();
    sessions.extend(file.dynamic.iter().flat_map(|d| d.sessions.clone()));
    let p = &file.parameters;
    let id = Identification {
        file: path.to_path_buf(),
        rod_file: file.rod_file.clone(),
        e_pa: triple(&p.e_pa),
        g_pa: triple(&p.g_pa),
        rho_kg_m3: triple(&p.rho_kg_m3),
        rms_error_mm: file.fit.rms_error_mm,
        written_unix_s,
    };
    Some((id, sessions))
}

/// `path` relative to the archive's directory `root`.
fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

/// `fits`: every identification with the archive's sessions it read; the
/// row takes the newest that read `session`.
fn session_row(dir: &Path, session: String, fits: &[(Identification, Vec<String>)], warnings: &mut Vec<String>) -> Result<SessionRow> {
    let s = SessionDir::new(dir);
    let info = crate::info::info(&s)?;
    warnings.extend(info.warnings.iter().map(|w| format!("{}: {w}", dir.display())));
    let meta = info.meta.clone().ok_or_else(|| Error::input(format!("{}: no session.toml", dir.display())))?;
    let rows_of = |p: PathBuf| if p.is_file() { Table::rows_in_file(&p).unwrap_or(0) } else { 0 };
    let identification =
        fits.iter().filter(|(_, read)| read.contains(&session)).max_by(|a, b| a.0.written_unix_s.total_cmp(&b.0.written_unix_s)).map(|(id, _)| id.clone());
    Ok(SessionRow {
        session,
        start_utc: meta.start_utc.clone(),
        start_unix_s: meta.start_unix_s,
        rig_file: meta.rig_file.clone(),
        operator_notes: meta.operator_notes.clone(),
        devices: info
            .devices
            .iter()
            .map(|d| d.name.clone())
            .chain(meta.devices.iter().map(|d| d.name.clone()))
            .fold(vec![], |mut v: Vec<String>, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            })
            .join(","),
        streams: info.streams.len(),
        duration_s: info.streams.iter().map(|s| s.span_s).fold(0.0, f64::max),
        rows: info.streams.iter().map(|s| s.rows).sum(),
        gaps: info.devices.iter().map(|d| d.gaps.len()).sum(),
        outage_s: info.devices.iter().map(|d| d.outage_s()).fold(0.0, |a, b| a + b),
        marker_rows: rows_of(s.markers()),
        strain_rows: rows_of(s.strain()),
        identification,
    })
}

/// Every session under `dir`, and the newest identification under `dir`
/// that fitted each.
pub fn index(dir: &Path) -> Result<ArchiveIndex> {
    if !dir.is_dir() {
        return Err(Error::input(format!("{}: not a directory", dir.display())));
    }
    let (mut dirs, mut identified) = (vec![], vec![]);
    walk(dir, &mut dirs, &mut identified);
    let mut warnings = vec![];
    // Which sessions each fit read, decided once (a path is resolved on
    // disk); each session's row then takes the newest of its fits.
    let session_name = |d: &Path| relative(dir, d).display().to_string();
    let fits: Vec<(Identification, Vec<String>)> = identified
        .iter()
        .filter_map(|p| identification(p, &mut warnings))
        .map(|(mut id, listed)| {
            id.file = relative(dir, &id.file);
            let read = dirs.iter().filter(|d| listed.iter().any(|l| names(l, d))).map(|d| session_name(d)).collect();
            (id, read)
        })
        .collect();
    let mut rows = vec![];
    for d in &dirs {
        match session_row(d, session_name(d), &fits, &mut warnings) {
            Ok(row) => rows.push(row),
            Err(e) => warnings.push(format!("{}: left out of the index: {e}", d.display())),
        }
    }
    Ok(ArchiveIndex { rows, fits, warnings })
}

impl ArchiveIndex {
    /// The rows as one table (the columns of docs/reference/session.md's
    /// "archive" section).
    pub fn table(&self) -> Table {
        let r = &self.rows;
        let mut t = Table::new();
        let text = |f: fn(&SessionRow) -> &str| r.iter().map(|x| f(x).to_string()).collect::<Vec<_>>();
        let count = |f: fn(&SessionRow) -> usize| r.iter().map(|x| f(x) as i64).collect::<Vec<_>>();
        t.push_str("session", text(|x| &x.session));
        t.push_str("start_utc", text(|x| &x.start_utc));
        t.push_f64("start_unix_s", r.iter().map(|x| x.start_unix_s).collect());
        t.push_str("rig_file", text(|x| &x.rig_file));
        t.push_str("operator_notes", text(|x| &x.operator_notes));
        t.push_str("devices", text(|x| &x.devices));
        t.push_i64("streams", count(|x| x.streams));
        t.push_f64("duration_s", r.iter().map(|x| x.duration_s).collect());
        t.push_i64("rows", count(|x| x.rows));
        t.push_i64("gaps", count(|x| x.gaps));
        t.push_f64("outage_s", r.iter().map(|x| x.outage_s).collect());
        t.push_i64("marker_rows", count(|x| x.marker_rows));
        t.push_i64("strain_rows", count(|x| x.strain_rows));
        fn id(x: &SessionRow) -> Option<&Identification> {
            x.identification.as_ref()
        }
        t.push_str("identified", r.iter().map(|x| id(x).map_or(String::new(), |i| i.file.display().to_string())).collect());
        t.push_str("specimen", r.iter().map(|x| id(x).map_or(String::new(), |i| specimen(&i.rod_file))).collect());
        type Pick = fn(&Identification) -> [f64; 3];
        let quantities: [(&str, &str, Pick); 3] = [("e", "_pa", |i| i.e_pa), ("g", "_pa", |i| i.g_pa), ("rho", "_kg_m3", |i| i.rho_kg_m3)];
        for (quantity, unit, pick) in quantities {
            // Units stay last in the name: e_low_pa, rho_high_kg_m3.
            for (k, suffix) in ["", "_low", "_high"].into_iter().enumerate() {
                t.push_f64(&format!("{quantity}{suffix}{unit}"), r.iter().map(|x| id(x).map_or(f64::NAN, |i| pick(i)[k])).collect());
            }
        }
        t.push_f64("rms_error_mm", r.iter().map(|x| id(x).map_or(f64::NAN, |i| i.rms_error_mm)).collect());
        t
    }
}

/// The specimen an identification belongs to: its rod file's name (a rod
/// file describes one specimen).
fn specimen(rod_file: &str) -> String {
    Path::new(rod_file).file_stem().map_or(rod_file.to_string(), |s| s.to_string_lossy().into_owned())
}

/// Writes `index` as `out` (Parquet) and the same rows beside it as CSV.
pub fn write(index: &ArchiveIndex, out: &Path) -> Result<(PathBuf, PathBuf)> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("{}: cannot create: {e}", parent.display())))?;
    }
    index.table().write(out)?;
    let csv = out.with_extension("csv");
    index.table().into_read().export(&csv, session::TableFormat::Csv, true)?;
    Ok((out.to_path_buf(), csv))
}

/// One identification as the archive's report draws it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitPoint {
    /// Its identified.toml, relative to the archive's directory.
    pub identified: String,
    pub specimen: String,
    /// The archive's sessions it read.
    pub sessions: Vec<String>,
    /// Its first session's start, in days after the archive's first session's.
    pub day: f64,
    pub start_utc: String,
    /// \[value, low, high\] (intervals NaN where held).
    pub e_pa: [f64; 3],
    pub g_pa: [f64; 3],
    pub rho_kg_m3: [f64; 3],
    pub rms_error_mm: f64,
}

/// The identifications of `index` that read its sessions, in time order.
pub fn fit_points(index: &ArchiveIndex) -> Vec<FitPoint> {
    let first = index.rows.iter().map(|r| r.start_unix_s).fold(f64::INFINITY, f64::min);
    let row = |session: &str| index.rows.iter().find(|r| r.session == session);
    let mut points: Vec<FitPoint> = index
        .fits
        .iter()
        .filter_map(|(id, sessions)| {
            let earliest = sessions.iter().filter_map(|s| row(s)).min_by(|a, b| a.start_unix_s.total_cmp(&b.start_unix_s))?;
            Some(FitPoint {
                identified: id.file.display().to_string(),
                specimen: specimen(&id.rod_file),
                sessions: sessions.clone(),
                day: (earliest.start_unix_s - first) / 86_400.0,
                start_utc: earliest.start_utc.clone(),
                e_pa: id.e_pa,
                g_pa: id.g_pa,
                rho_kg_m3: id.rho_kg_m3,
                rms_error_mm: id.rms_error_mm,
            })
        })
        .collect();
    points.sort_by(|a, b| a.day.total_cmp(&b.day).then(a.identified.cmp(&b.identified)));
    points
}

/// `rodlab archive report`: E, G and rho of every identification in the
/// archive over the days, a colour per specimen, each with its 95 %
/// interval; and a table of them. Writes `index.html`, the figures and
/// `summary.json` (the [`FitPoint`]s) into `out`.
pub fn report(index: &ArchiveIndex, out: &Path) -> Result<Vec<FitPoint>> {
    use report::page::{Block, Chart, Page, Series};
    let points = fit_points(index);
    let mut specimens: Vec<String> = points.iter().map(|p| p.specimen.clone()).collect();
    specimens.sort();
    specimens.dedup();
    let chart = |name: &str, title: &str, y_label: &str, pick: fn(&FitPoint) -> [f64; 3]| Chart {
        name: name.into(),
        title: title.into(),
        x_label: "days after the archive's first session [d]".into(),
        y_label: y_label.into(),
        series: specimens
            .iter()
            .enumerate()
            .map(|(k, sp)| {
                let mine: Vec<&FitPoint> = points.iter().filter(|p| &p.specimen == sp).collect();
                let mut s = Series::points(sp.clone(), mine.iter().map(|p| (p.day, pick(p)[0])).collect(), k);
                s.band = mine.iter().map(|p| (p.day, pick(p)[1], pick(p)[2])).collect();
                s
            })
            .collect(),
        diagonal: false,
    };
    let interval = |v: [f64; 3]| format!("{:.4e} [{:.4e}, {:.4e}]", v[0], v[1], v[2]);
    let rows = points
        .iter()
        .map(|p| {
            vec![
                p.specimen.clone(),
                p.identified.clone(),
                p.sessions.len().to_string(),
                p.start_utc.clone(),
                interval(p.e_pa),
                interval(p.g_pa),
                interval(p.rho_kg_m3),
                format!("{:.3}", p.rms_error_mm),
            ]
        })
        .collect();
    let sessions = index.rows.len();
    let unfitted = index.rows.iter().filter(|r| r.identification.is_none()).count();
    let mut blocks = vec![
        Block::Text(format!(
            "{sessions} sessions, {} identifications of {} specimens; {unfitted} sessions without one. Each point is one identification at its first session's day, with its 95 % interval.",
            points.len(),
            specimens.len()
        )),
        Block::Chart(chart("e_over_time", "Young's modulus E of each fit", "E [Pa]", |p| p.e_pa)),
        Block::Chart(chart("g_over_time", "Shear modulus G of each fit", "G [Pa]", |p| p.g_pa)),
        Block::Chart(chart("rho_over_time", "Density rho of each fit", "rho [kg/m^3]", |p| p.rho_kg_m3)),
        Block::Table(
            ["specimen", "identified.toml", "sessions", "first session (UTC)", "E [Pa] (95 %)", "G [Pa] (95 %)", "rho [kg/m^3] (95 %)", "RMS [mm]"]
                .map(String::from)
                .to_vec(),
            rows,
        ),
    ];
    if !index.warnings.is_empty() {
        blocks.push(Block::Warnings(index.warnings.clone()));
    }
    let page = Page {
        title: "The archive's parameters over specimens and days".into(),
        blocks,
        provenance: vec![("rodlab".into(), env!("CARGO_PKG_VERSION").into())],
    };
    report::page::write_page(out, &page, &points)?;
    Ok(points)
}
