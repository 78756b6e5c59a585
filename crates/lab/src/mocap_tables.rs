//! Motion-capture trajectories as tables: what labs export when they do
//! not export C3D. Stage "record" of record -> track -> observe ->
//! identify -> simulate -> report, beside [`crate::c3d`], which makes the
//! session of what these read:
//! - Qualisys TSV (QTM's 3D export: `NO_OF_FRAMES`, `FREQUENCY`,
//!   `MARKER_NAMES` ... then a row per frame, positions in mm, a missing
//!   sample written as zeros or left empty);
//! - OptiTrack Motive CSV (its multi-row header: `Format Version` ...,
//!   then `Type`, `Name`, `ID`, the quantity and the axis rows; the
//!   frame rate and `Length Units` in the first row);
//! - Vicon Nexus CSV (the `Trajectories` block: its rate, a row of
//!   subject:marker names, `Frame,Sub Frame,X,Y,Z...`, the units row);
//! - a plain CSV whose columns the map file's `[table]` names (a time
//!   column or a rate, each marker's x, y, z, optionally the base's pose
//!   as a position and a quaternion, rotation vector or Euler angles).
//!
//! Every refusal names the file and the line or the map's field.

use crate::c3d::{MocapMap, Rotation, TableColumns, Trajectories};
use crate::error::{Error, Result};
use lie::{Mat3, Pose, Vec3};
use std::path::Path;

/// Which table a file is, from its first line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    QualisysTsv,
    MotiveCsv,
    ViconCsv,
    Plain,
}

impl Format {
    pub fn detect(first_line: &str) -> Format {
        let l = first_line.trim_start_matches('\u{feff}').trim();
        // Current QTM writes FILE_VERSION first, older QTM NO_OF_FRAMES.
        if l.starts_with("NO_OF_FRAMES") || l.starts_with("FILE_VERSION") {
            Format::QualisysTsv
        } else if l.starts_with("Format Version") {
            Format::MotiveCsv
        } else if l.starts_with("Trajectories") || l.starts_with("Devices") {
            Format::ViconCsv
        } else {
            Format::Plain
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::QualisysTsv => "Qualisys TSV",
            Format::MotiveCsv => "Motive CSV",
            Format::ViconCsv => "Vicon Nexus CSV",
            Format::Plain => "plain CSV",
        }
    }
}

/// The most rows a table may have (a day at 1 kHz), and columns (a few
/// hundred markers): a file past them is refused before it fills memory.
const MAX_ROWS: usize = 100_000_000;
const MAX_COLUMNS: usize = 3_000;
const MAX_TABLE_BYTES: u64 = 2 << 30;

/// Reads a trajectory table of any of the formats above.
pub fn read_table(file: &Path, map: &MocapMap) -> Result<Trajectories> {
    let name = file.display().to_string();
    // Refused before it is read whole.
    if std::fs::metadata(file).is_ok_and(|m| m.len() > MAX_TABLE_BYTES) {
        return Err(Error::input(format!("{name}: larger than a trajectory table is read ({} GB)", MAX_TABLE_BYTES >> 30)));
    }
    let text = fault::read_text(file, fault::DATA_LIMIT_BYTES).map_err(|e| Error::input(format!("{name}: cannot read: {e}")))?;
    let format = Format::detect(text.lines().next().unwrap_or(""));
    let bad = |line: usize, m: String| Error::input(format!("{name}: line {line}: {m}"));
    let mut t = match format {
        Format::QualisysTsv => qualisys(&text, &bad)?,
        Format::MotiveCsv => motive(&text, &bad)?,
        Format::ViconCsv => vicon(&text, &bad)?,
        Format::Plain => {
            let cols = map.table.as_ref().ok_or_else(|| {
                Error::input(format!(
                    "{name}: not a Qualisys TSV, Motive CSV or Vicon Nexus CSV (its first line), and {} has no [table] naming a plain CSV's columns",
                    map.path.display()
                ))
            })?;
            plain(&text, cols, map, &bad)?
        }
    };
    if t.frames.is_empty() {
        return Err(Error::input(format!("{name}: no frames")));
    }
    t.source = file.to_path_buf();
    t.format = format.name().into();
    Ok(t)
}

type Bad<'a> = dyn Fn(usize, String) -> Error + 'a;

/// A number cell: `None` for an empty cell or NaN (a missing sample).
fn number(cell: &str, line: usize, bad: &Bad) -> Result<Option<f64>> {
    let c = cell.trim();
    if c.is_empty() {
        return Ok(None);
    }
    match c.parse::<f64>() {
        Ok(v) if v.is_nan() => Ok(None),
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(bad(line, format!("'{c}' is not a number"))),
    }
}

/// A marker's sample from its three cells in metres; all three empty (or
/// all exactly zero, as Qualisys and some exporters write a gap): missing.
fn point(cells: [&str; 3], scale: f64, zero_is_missing: bool, line: usize, bad: &Bad) -> Result<Option<Vec3>> {
    let v = [number(cells[0], line, bad)?, number(cells[1], line, bad)?, number(cells[2], line, bad)?];
    Ok(match v {
        [Some(x), Some(y), Some(z)] if zero_is_missing && x == 0.0 && y == 0.0 && z == 0.0 => None,
        [Some(x), Some(y), Some(z)] => Some(Vec3::new(x, y, z) * scale),
        [None, None, None] => None,
        _ => return Err(bad(line, "a marker with some of its x, y, z and not the others".into())),
    })
}

fn metres_per(units: &str) -> Option<f64> {
    match units.trim().to_ascii_lowercase().as_str() {
        "mm" | "millimeters" | "millimetres" => Some(1e-3),
        "cm" | "centimeters" | "centimetres" => Some(1e-2),
        "m" | "meters" | "metres" => Some(1.0),
        _ => None,
    }
}

/// An empty trajectory set of `labels` at `rate_hz` in `units`, its
/// frames counted from `frame_origin` (the number at time 0).
fn trajectories(labels: Vec<String>, rate_hz: f64, units: &str, frame_origin: i64) -> Trajectories {
    Trajectories {
        source: Default::default(),
        format: String::new(),
        labels,
        rate_hz,
        first_frame: frame_origin,
        frame_origin,
        capture_start: None,
        units: units.into(),
        frames: vec![],
        base_poses: None,
    }
}

/// Missing frames a table may number, per row it holds: more is a damaged
/// frame number (one row numbered 700,000 in a 12-row file took 94 MB,
/// one numbered 10^8 would have taken gigabytes).
const MISSING_PER_ROW: usize = 10;

/// Appends the row of frame `frame` (the file's number, `None`: the next)
/// read on `line` of a file of `rows` lines: frames the file skips are
/// kept as missing, up to [`MISSING_PER_ROW`] per row, and a frame that
/// repeats or goes back is refused, naming the line.
fn push_frame(t: &mut Trajectories, frame: Option<i64>, row: Vec<Option<Vec3>>, (line, rows): (usize, usize), bad: &Bad) -> Result<()> {
    if t.frames.is_empty() {
        t.first_frame = frame.unwrap_or(t.first_frame);
    }
    let next = t.first_frame + t.frames.len() as i64;
    let frame = frame.unwrap_or(next);
    if frame < next {
        return Err(bad(line, format!("frame {frame} after frame {}: the frames must increase (a duplicated or backward row)", next - 1)));
    }
    let skipped = usize::try_from(frame - next).unwrap_or(usize::MAX);
    if skipped > MAX_ROWS.saturating_sub(t.frames.len()) {
        return Err(bad(line, format!("frame {frame}: more than a table is read ({MAX_ROWS} frames)")));
    }
    // Rows held are at most the lines: the frames numbered bound the missing.
    if skipped > 0 && t.frames.len() + skipped + 1 > (MISSING_PER_ROW + 1) * rows {
        return Err(bad(line, format!("frame {frame} after frame {}: {skipped} frames missing in a file of {rows} lines (a damaged frame number?)", next - 1)));
    }
    t.frames.extend(std::iter::repeat_n(vec![None; row.len()], skipped));
    t.frames.push(row);
    Ok(())
}

/// A row's frame number (its first cell), checked against its time (the
/// time column, `time_col`, where there is one) to within half a frame.
/// The first row's time sets the clock (the frame at time 0), whatever
/// the vendor numbers an export's first frame: a trimmed export keeps its
/// times.
fn frame_of(cells: &[&str], time_col: Option<usize>, t: &mut Trajectories, line: usize, bad: &Bad) -> Result<Option<i64>> {
    let Some(n) = number(cells[0], line, bad)? else { return Ok(None) };
    if n.fract() != 0.0 || n.abs() > 1e15 {
        return Err(bad(line, format!("the frame number {n} is not a whole number")));
    }
    let frame = n as i64;
    if let Some(time) = time_col.map(|c| number(cells.get(c).copied().unwrap_or(""), line, bad)).transpose()?.flatten() {
        if t.frames.is_empty() && (time * t.rate_hz).abs() < 1e15 {
            t.frame_origin = frame - (time * t.rate_hz).round() as i64;
        }
        let expected = (frame - t.frame_origin) as f64 / t.rate_hz;
        if (time - expected).abs() * t.rate_hz > 0.5 {
            return Err(bad(line, format!("frame {frame} at {time} s, where the rate ({} Hz) puts it at {expected} s", t.rate_hz)));
        }
    }
    Ok(Some(frame))
}

fn check_size(rows: usize, columns: usize, line: usize, bad: &Bad) -> Result<()> {
    if rows > MAX_ROWS || columns > MAX_COLUMNS {
        return Err(bad(line, format!("{rows} rows of {columns} columns: more than a table is read ({MAX_ROWS} rows, {MAX_COLUMNS} columns)")));
    }
    Ok(())
}

/// Qualisys TSV: `KEY\tvalue` lines, then (QTM 2.x and later) a `Frame
/// Time <name> X ...` header and a row per frame.
fn qualisys(text: &str, bad: &Bad) -> Result<Trajectories> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rate_hz = None;
    let mut names: Vec<String> = vec![];
    let mut started = None;
    let mut declared = None;
    let mut k = 0;
    while k < lines.len() {
        let cells: Vec<&str> = lines[k].split('\t').collect();
        let key = cells[0].trim().trim_start_matches('\u{feff}');
        if !key.chars().next().is_some_and(|c| c.is_ascii_uppercase()) || key == "Frame" {
            break;
        }
        let cell = |i: usize| cells.get(i).copied().unwrap_or("");
        match key {
            "FREQUENCY" => rate_hz = number(cell(1), k + 1, bad)?,
            "NO_OF_FRAMES" => declared = number(cell(1), k + 1, bad)?.map(|n| (n, k + 1)),
            "MARKER_NAMES" => names = cells[1..].iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
            // "2019-11-28, 13:43:42.715" (then the computer's uptime).
            "TIME_STAMP" if !cell(1).trim().is_empty() => {
                let (date, time) = cell(1).split_once(',').unwrap_or((cell(1), "00:00:00"));
                started =
                    Some(crate::c3d::capture_start(date, time).ok_or_else(|| bad(k + 1, format!("TIME_STAMP '{}' is not a date and time", cell(1).trim())))?);
            }
            _ => {}
        }
        k += 1;
    }
    let rate_hz = rate_hz.filter(|r| *r > 0.0).ok_or_else(|| bad(1, "no FREQUENCY line (the export's frame rate)".into()))?;
    if names.is_empty() {
        return Err(bad(k, "no MARKER_NAMES line".into()));
    }
    check_size(lines.len(), 3 * names.len() + 2, k + 1, bad)?;
    // With a header row, each marker's X column is named "<name> X".
    let (first_col, header) = match lines.get(k).map(|l| l.split('\t').collect::<Vec<_>>()) {
        Some(h) if h[0].trim() == "Frame" => {
            k += 1;
            let starts: Result<Vec<usize>> = names
                .iter()
                .map(|n| h.iter().position(|c| c.trim() == format!("{n} X")).ok_or_else(|| bad(k, format!("no column '{n} X' in the header row"))))
                .collect();
            (None, Some(starts?))
        }
        _ => (Some(0usize), None),
    };
    let mut t = trajectories(names.clone(), rate_hz, "mm", 1);
    t.capture_start = started;
    for (i, line) in lines.iter().enumerate().skip(k).filter(|(_, l)| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split('\t').collect();
        let col = |m: usize| header.as_ref().map_or(first_col.unwrap_or(0) + 3 * m, |h| h[m]);
        // With a header row: Frame, then Time.
        let frame = if header.is_some() { frame_of(&cells, Some(1), &mut t, i + 1, bad)? } else { None };
        let row: Result<Vec<Option<Vec3>>> = (0..names.len())
            .map(|m| {
                let c = col(m);
                let cell = |j: usize| cells.get(c + j).copied().unwrap_or("");
                point([cell(0), cell(1), cell(2)], 1e-3, true, i + 1, bad)
            })
            .collect();
        push_frame(&mut t, frame, row?, (i + 1, lines.len()), bad)?;
    }
    check_count(&t, declared, "NO_OF_FRAMES", bad)?;
    Ok(t)
}

/// The frames a header declares (`key` on line `.1`) against those the
/// rows hold (from the first to the last): a file cut short, or rows
/// added or lost since the export, is refused.
fn check_count(t: &Trajectories, declared: Option<(f64, usize)>, key: &str, bad: &Bad) -> Result<()> {
    match declared {
        Some((n, line)) if n != t.frames.len() as f64 => Err(bad(
            line,
            format!(
                "{key} is {n}, the rows hold {} frames ({} to {}): the file was cut short or edited since the export",
                t.frames.len(),
                t.first_frame,
                t.first_frame + t.frames.len() as i64 - 1
            ),
        )),
        _ => Ok(()),
    }
}

/// Motive CSV: a metadata row, then rows labelled (in the second cell)
/// Type, Name, ID, the quantity row, and the `Frame,Time (Seconds),X,Y,Z`
/// row; markers' position columns only.
fn motive(text: &str, bad: &Bad) -> Result<Trajectories> {
    let lines: Vec<&str> = text.lines().collect();
    let meta: Vec<&str> = lines[0].split(',').collect();
    let value_of = |key: &str| meta.iter().position(|c| c.trim() == key).and_then(|i| meta.get(i + 1)).map(|s| s.trim());
    let rate_hz = value_of("Export Frame Rate")
        .or(value_of("Capture Frame Rate"))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|r| *r > 0.0)
        .ok_or_else(|| bad(1, "no Export Frame Rate in the first row".into()))?;
    let units = value_of("Length Units").unwrap_or("Meters");
    let scale = metres_per(units).ok_or_else(|| bad(1, format!("Length Units '{units}' is not Millimeters, Centimeters or Meters")))?;
    let row = |label: &str| lines.iter().position(|l| l.split(',').nth(1).is_some_and(|c| c.trim() == label));
    let (Some(type_row), Some(name_row)) = (row("Type"), row("Name")) else {
        return Err(bad(2, "no Type and Name rows (Motive's header: Type, Name, ID, the quantity, the axes)".into()));
    };
    let axis_row = lines
        .iter()
        .position(|l| l.split(',').next().is_some_and(|c| c.trim() == "Frame"))
        .ok_or_else(|| bad(name_row + 1, "no 'Frame,Time (Seconds),...' row".into()))?;
    let quantity_row = axis_row - 1;
    let cells = |r: usize| -> Vec<&str> { lines[r].split(',').map(str::trim).collect() };
    let (types, names, quantities, axes) = (cells(type_row), cells(name_row), cells(quantity_row), cells(axis_row));
    check_size(lines.len(), axes.len(), axis_row + 1, bad)?;
    let mut labels: Vec<String> = vec![];
    let mut starts: Vec<usize> = vec![];
    for (c, axis) in axes.iter().enumerate() {
        // "Marker" columns are the reconstructed markers; a rigid body's
        // "Rigid Body Marker" columns are where its model expects them.
        let is_marker = types.get(c).is_some_and(|t| *t == "Marker");
        if is_marker && *axis == "X" && quantities.get(c).is_some_and(|q| *q == "Position") {
            let name = names.get(c).copied().unwrap_or("").to_string();
            if axes.get(c + 1) != Some(&"Y") || axes.get(c + 2) != Some(&"Z") {
                return Err(bad(axis_row + 1, format!("marker '{name}': its X is not followed by Y and Z")));
            }
            labels.push(name);
            starts.push(c);
        }
    }
    if labels.is_empty() {
        return Err(bad(type_row + 1, "no marker position columns (Type Marker, quantity Position)".into()));
    }
    let mut t = trajectories(labels, rate_hz, units, 0);
    // "2026-11-26 10.21.45.123 AM" (12-hour with AM/PM, or 24-hour).
    if let Some(v) = value_of("Capture Start Time").filter(|v| !v.is_empty()) {
        let (date, time) = v.split_once(' ').unwrap_or((v, "00.00.00"));
        t.capture_start = Some(crate::c3d::capture_start(date, time).ok_or_else(|| bad(1, format!("Capture Start Time '{v}' is not a date and time")))?);
    }
    let time_col = axes.get(1).is_some_and(|c| c.starts_with("Time")).then_some(1);
    for (i, line) in lines.iter().enumerate().skip(axis_row + 1).filter(|(_, l)| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let frame = frame_of(&cells, time_col, &mut t, i + 1, bad)?;
        let cell = |j: usize| cells.get(j).copied().unwrap_or("");
        let row: Result<Vec<Option<Vec3>>> = starts.iter().map(|&c| point([cell(c), cell(c + 1), cell(c + 2)], scale, false, i + 1, bad)).collect();
        push_frame(&mut t, frame, row?, (i + 1, lines.len()), bad)?;
    }
    let exported = value_of("Total Exported Frames").and_then(|v| v.parse::<f64>().ok()).map(|n| (n, 1));
    check_count(&t, exported, "Total Exported Frames", bad)?;
    Ok(t)
}

/// Vicon Nexus CSV: the `Trajectories` block (after any `Devices` block):
/// its rate, the names row, `Frame,Sub Frame,X,Y,Z,...`, the units row,
/// then rows up to a blank line.
fn vicon(text: &str, bad: &Bad) -> Result<Trajectories> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.trim().trim_end_matches(',') == "Trajectories").ok_or_else(|| bad(1, "no Trajectories block".into()))?;
    let rate_hz = lines.get(start + 1).and_then(|l| l.split(',').next()).and_then(|v| v.trim().parse::<f64>().ok()).filter(|r| *r > 0.0);
    let rate_hz = rate_hz.ok_or_else(|| bad(start + 2, "the Trajectories block's rate is not a number".into()))?;
    let (names_row, axis_row, units_row) = (start + 2, start + 3, start + 4);
    let get = |r: usize| {
        lines.get(r).map(|l| l.split(',').map(str::trim).collect::<Vec<_>>()).ok_or_else(|| bad(r + 1, "the Trajectories block is cut short".into()))
    };
    let (names, axes, units) = (get(names_row)?, get(axis_row)?, get(units_row)?);
    check_size(lines.len(), axes.len(), axis_row + 1, bad)?;
    let mut labels = vec![];
    let mut starts = vec![];
    let mut scale = None;
    for (c, axis) in axes.iter().enumerate() {
        if *axis == "X" && names.get(c).is_some_and(|n| !n.is_empty()) {
            labels.push(names[c].to_string());
            starts.push(c);
            let u = units.get(c).copied().unwrap_or("mm");
            let s = metres_per(u).ok_or_else(|| bad(units_row + 1, format!("unit '{u}' is not mm, cm or m")))?;
            if scale.is_some_and(|x| x != s) {
                return Err(bad(units_row + 1, "markers in different units".into()));
            }
            scale = Some(s);
        }
    }
    let scale = scale.ok_or_else(|| bad(names_row + 1, "no marker names".into()))?;
    let units = units.get(starts[0]).copied().unwrap_or("mm").to_string();
    let rows: Vec<(usize, &str)> = lines.iter().copied().enumerate().skip(units_row + 1).take_while(|(_, l)| !l.trim().is_empty()).collect();
    // Sub-frames: trajectories sampled n times per frame of the system's
    // base rate are numbered (frame, 0..n); the block's rate is theirs.
    let mut per_frame = 1i64;
    for (i, line) in &rows {
        if let Some(sub) = number(line.split(',').nth(1).unwrap_or(""), i + 1, bad)? {
            if sub.fract() != 0.0 || !(0.0..1e6).contains(&sub) {
                return Err(bad(i + 1, format!("the sub-frame {sub} is not a whole number from 0")));
            }
            per_frame = per_frame.max(sub as i64 + 1);
        }
    }
    let mut t = trajectories(labels, rate_hz, &units, per_frame);
    for (i, line) in rows {
        let cells: Vec<&str> = line.split(',').collect();
        let sub = number(cells.get(1).copied().unwrap_or(""), i + 1, bad)?.unwrap_or(0.0) as i64;
        let frame = frame_of(&cells, None, &mut t, i + 1, bad)?.map(|f| f * per_frame + sub);
        let cell = |j: usize| cells.get(j).copied().unwrap_or("");
        let row: Result<Vec<Option<Vec3>>> = starts.iter().map(|&c| point([cell(c), cell(c + 1), cell(c + 2)], scale, false, i + 1, bad)).collect();
        push_frame(&mut t, frame, row?, (i + 1, lines.len()), bad)?;
    }
    Ok(t)
}

/// A rotation from its cells (a quaternion w, x, y, z; a rotation vector;
/// extrinsic Euler angles in the map's order).
fn rotation(r: &Rotation, cell: &dyn Fn(&str) -> Result<Option<f64>>) -> Result<Option<Mat3>> {
    Ok(match r {
        Rotation::Quaternion(c) => {
            let v: Option<Vec<f64>> = c.iter().map(|n| cell(n)).collect::<Result<Vec<_>>>()?.into_iter().collect();
            v.and_then(|q| {
                let q = nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]);
                (q.norm() > 1e-9).then(|| *nalgebra::UnitQuaternion::from_quaternion(q).to_rotation_matrix().matrix())
            })
        }
        Rotation::RotationVector(c) => {
            let v: Option<Vec<f64>> = c.iter().map(|n| cell(n)).collect::<Result<Vec<_>>>()?.into_iter().collect();
            v.map(|v| lie::exp(&lie::stack(&Vec3::new(v[0], v[1], v[2]), &Vec3::zeros())).rot)
        }
        Rotation::Euler { columns, order, degrees } => {
            let v: Option<Vec<f64>> = columns.iter().map(|n| cell(n)).collect::<Result<Vec<_>>>()?.into_iter().collect();
            v.map(|a| {
                let k = if *degrees { std::f64::consts::PI / 180.0 } else { 1.0 };
                // Extrinsic: the first rotation is applied first, so it stands rightmost.
                order.iter().zip(&a).fold(Mat3::identity(), |acc, (&axis, angle)| {
                    let unit = nalgebra::Unit::new_unchecked(Vec3::from_fn(|i, _| if i == axis { 1.0 } else { 0.0 }));
                    *nalgebra::Rotation3::from_axis_angle(&unit, angle * k).matrix() * acc
                })
            })
        }
    })
}

/// A plain CSV: a header row; the map's `[table]` names the columns.
fn plain(text: &str, cols: &TableColumns, map: &MocapMap, bad: &Bad) -> Result<Trajectories> {
    let mut reader = csv::ReaderBuilder::new().comment(Some(b'#')).trim(csv::Trim::All).from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().map_err(|e| bad(1, e.to_string()))?.iter().map(String::from).collect();
    check_size(text.lines().count(), header.len(), 1, bad)?;
    let field = |c: &str, what: &str| header.iter().position(|h| h == c).ok_or_else(|| bad(1, format!("no column '{c}' ({}: {what})", map.path.display())));
    let labels: Vec<String> = map
        .markers
        .iter()
        .map(|m| m.0.clone())
        .chain(match &map.base {
            crate::c3d::BaseSource::Cluster { labels, .. } => labels.clone(),
            _ => vec![],
        })
        .collect();
    let xyz: Vec<[usize; 3]> = labels
        .iter()
        .map(|l| {
            let c = |a: &str| field(&cols.marker_columns.replace("{label}", l).replace("{axis}", a), "table.marker_columns");
            Ok([c("x")?, c("y")?, c("z")?])
        })
        .collect::<Result<_>>()?;
    let time = cols.time.as_ref().map(|t| field(t, "table.time")).transpose()?;
    let base = cols
        .base_pose
        .as_ref()
        .map(|b| {
            let p = [
                field(&b.position[0], "table.base_pose.position")?,
                field(&b.position[1], "table.base_pose.position")?,
                field(&b.position[2], "table.base_pose.position")?,
            ];
            for c in b.rotation.columns() {
                field(c, "table.base_pose.rotation_columns")?;
            }
            Ok::<_, Error>((p, &b.rotation))
        })
        .transpose()?;
    let mut times = vec![];
    let mut t = trajectories(labels.clone(), cols.rate_hz.unwrap_or(0.0), &cols.units, 0);
    let mut poses = vec![];
    for (k, rec) in reader.records().enumerate() {
        let line = k + 2;
        let rec = rec.map_err(|e| bad(line, e.to_string()))?;
        let cell = |c: usize| rec.get(c).unwrap_or("");
        if let Some(c) = time {
            times.push(number(cell(c), line, bad)?.ok_or_else(|| bad(line, "the time is empty".into()))?);
        }
        let row: Result<Vec<Option<Vec3>>> = xyz.iter().map(|c| point([cell(c[0]), cell(c[1]), cell(c[2])], cols.metres_per_unit, false, line, bad)).collect();
        t.frames.push(row?);
        if let Some((p, r)) = &base {
            let by_name = |n: &str| header.iter().position(|h| h == n).map_or(Ok(None), |c| number(cell(c), line, bad));
            let pos = point([cell(p[0]), cell(p[1]), cell(p[2])], cols.metres_per_unit, false, line, bad)?;
            let rot = rotation(r, &by_name)?;
            poses.push(pos.zip(rot).map(|(pos, rot)| Pose { rot, pos }));
        }
    }
    if let Some(first) = times.first() {
        // The rate from the time column (it must step evenly: frames are
        // numbered from it).
        let n = times.len();
        let rate = if n > 1 { (n - 1) as f64 / (times[n - 1] - first) } else { 0.0 };
        if !(rate.is_finite() && rate > 0.0) {
            return Err(bad(2, "the time column does not advance".into()));
        }
        for (k, w) in times.windows(2).enumerate() {
            if ((w[1] - w[0]) * rate - 1.0).abs() > 0.01 {
                return Err(bad(k + 3, format!("the time steps by {} s, not {} s: rows must be evenly spaced", w[1] - w[0], 1.0 / rate)));
            }
        }
        t.rate_hz = rate;
        t.first_frame = (first * rate).round() as i64;
    }
    if base.is_some() {
        t.base_poses = Some(poses);
    }
    Ok(t)
}
