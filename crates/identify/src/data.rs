//! The project's static-experiment format: a directory with two CSV files.
//!
//! `inputs.csv`: one row per experiment,
//!   `experiment,tension_1_n,...,tension_K_n[,tip_force_x_n,tip_force_y_n,tip_force_z_n[,tip_force_offset_y_m,tip_force_offset_z_m]]`
//!   (K = number of cables of the rod; no tension columns for a rod without cables).
//! `measurements.csv`: one row per measured point,
//!   `experiment,arc_m,offset_y_m,offset_z_m,x_m,y_m,z_m,sigma_m`
//!   (a point at arc length `arc_m`, offset from the centre line in the body
//!   y-z plane, measured at world position (x, y, z) with standard deviation
//!   `sigma_m` per coordinate).
//! Lines starting with `#` are comments. Units are SI. [`INPUT_COLUMNS`]
//! and [`MEASUREMENT_COLUMNS`] name and describe every column (the
//! reference page docs/reference/experiments.md is made of them).

use lie::{Pose, Vec3, Vec6};
use std::collections::BTreeMap;
use std::path::Path;

/// `inputs.csv`'s columns: (name, required, meaning). `tension_K_n`
/// stands for one column per cable of the rod, in the rod file's order.
pub const INPUT_COLUMNS: [(&str, bool, &str); 14] = [
    ("experiment", true, "the experiment's identifier (text)"),
    ("tension_K_n", true, "tension of cable K [N], K = 1 ... the rod file's cables, in its order (none for a rod without cables)"),
    ("tip_force_x_n", false, "a dead force at the tip, world frame [N] (x; with y and z)"),
    ("tip_force_y_n", false, "the tip force's y [N]"),
    ("tip_force_z_n", false, "the tip force's z [N]"),
    ("tip_force_offset_y_m", false, "where the tip force acts: its offset from the tip's centre along the tip section's body y [m] (a mass hung from the top edge of the tip face: its moment counts); with the force"),
    ("tip_force_offset_z_m", false, "the offset along the tip section's body z [m]"),
    ("tip_position_x_m", false, "where a pinned or clamped tip is held (the rod file's [tip] condition), world frame [m] (x; with y and z)"),
    ("tip_position_y_m", false, "the held tip's y [m]"),
    ("tip_position_z_m", false, "the held tip's z [m]"),
    ("tip_rotation_x_rad", false, "a clamped tip's rotation as a rotation vector, world frame [rad] (x; with y and z; zero: the rod's straight orientation; whole turns count: a full-turn loop's clamp is 2 pi about its axis)"),
    ("tip_rotation_y_rad", false, "the clamp's rotation vector, y [rad]"),
    ("tip_rotation_z_rad", false, "the clamp's rotation vector, z [rad]"),
    (
        "direction",
        false,
        "which way the cables were sliding when the shape was taken: \"load\" (being pulled in, the default) or \"unload\" (being let out); a cable with friction (the rod file's friction_mu) loses tension along its channel when pulled in, gains it when let out",
    ),
];

/// The held tip's columns, as the tip's hold's messages name them.
const TIP_COLUMNS: rod::held::HoldFields = rod::held::HoldFields {
    position: "tip_position_x_m, _y_m, _z_m",
    rotation: "tip_rotation_x_rad, _y_rad, _z_rad",
    rotation_short: "tip_rotation",
    both: "the tip_position and tip_rotation columns",
};

/// `measurements.csv`'s columns (the first eight required): (name, meaning).
pub const MEASUREMENT_COLUMNS: [(&str, &str); 12] = [
    ("experiment", "which experiment (one of inputs.csv's)"),
    ("arc_m", "arc length of the point on the rod [m], in [0, L]"),
    ("offset_y_m", "the point's offset from the centre line along the section's body y [m] (a marker on the surface)"),
    ("offset_z_m", "the offset along the section's body z [m]"),
    ("x_m", "measured position in the world (rig) frame, x [m]"),
    ("y_m", "measured position, y [m]"),
    ("z_m", "measured position, z [m]"),
    ("sigma_m", "standard deviation of each coordinate [m] (> 0)"),
    (
        "arc_sigma_m",
        "optional: standard deviation of the point's arc length [m] (>= 0, default 0): a point digitised from a curve, whose arc length is nominal; its error along the rod's axis counts that much less",
    ),
    (
        "ray_x",
        "optional, with ray_y and ray_z: a marker one camera alone saw is a ray, x_m, y_m, z_m a point on it (the camera's centre) and ray_* its direction in the world; the model's point is measured only across the ray. Empty cells: a point",
    ),
    ("ray_y", "optional: the ray's direction, y"),
    ("ray_z", "optional: the ray's direction, z"),
];

/// The ray's columns in [`MEASUREMENT_COLUMNS`].
const RAY_COLUMNS: std::ops::Range<usize> = 9..12;

/// The columns of [`MEASUREMENT_COLUMNS`] every file must have (the others are optional).
const REQUIRED_MEASUREMENT_COLUMNS: usize = 8;

/// A measured point of the rod.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub arc_m: f64,
    pub offset_body_m: Vec3,
    pub pos_m: Vec3,
    /// Each coordinate's standard deviation \[m\].
    pub sigma_m: f64,
    /// The arc length's standard deviation \[m\] (0: the point's place on
    /// the rod is known, a marker; > 0: a point of a digitised curve, whose
    /// position along the rod's axis is uncertain by this much more).
    pub arc_sigma_m: f64,
    /// Seen by one camera alone: the ray's unit direction in the
    /// measurement frame, `pos_m` a point on it (the camera's centre). The
    /// point is then measured only across the ray.
    pub ray: Option<Vec3>,
}

impl Measurement {
    /// What was measured: a point, or a ray through `pos_m`.
    pub fn sighting(&self) -> rod::Sighting {
        rod::Sighting { at_m: self.pos_m, ray: self.ray }
    }

    /// How far the model's point `p` is from what was measured: `p - pos`
    /// for a point, its distance across the ray for a ray.
    pub fn miss(&self, p: &Vec3) -> Vec3 {
        self.sighting().miss(p)
    }
}

/// The wrench a force/torque sensor between the flange and the rod
/// measured (bias removed): what the rod exerts on the sensor, in the
/// sensor's frame about its origin, `[moment; force]`.
#[derive(Clone, Debug, PartialEq)]
pub struct WrenchMeasurement {
    /// The sensor's frame in the rod's base frame.
    pub sensor_in_base: Pose,
    /// `[mx, my, mz, fx, fy, fz]` [N m, N].
    pub wrench: Vec6,
    /// Standard deviation per component [N m, N].
    pub sigma: Vec6,
}

/// One static experiment: known inputs and measured points.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    pub id: String,
    pub tensions_n: Vec<f64>,
    pub tip_force_n: Vec3,
    /// Where the tip force acts, offset from the tip's centre in the tip
    /// section's body frame \[m\] (a mass hung from the top edge of the
    /// tip face: its moment about the centre line counts).
    pub tip_force_offset_body_m: Vec3,
    pub measurements: Vec<Measurement>,
    /// The rod's base in the world for this experiment (from the robot);
    /// `None`: the rod file's `[base]`.
    pub base_pose: Option<Pose>,
    /// The base wrench measured by a flange force sensor, if any.
    pub base_wrench: Option<WrenchMeasurement>,
    /// Standard deviation of each measured cable tension \[N\] (load
    /// cells: their scatter over the hold over sqrt(n)); empty when the
    /// tensions are exact. The fit carries it into the measurements'
    /// noise (errors in the inputs move the shape as much as errors in
    /// the positions do).
    pub tension_sigma_n: Vec<f64>,
    /// Where the tip is held (`tip_position_*_m`), for a rod whose tip is
    /// pinned or clamped.
    pub tip_position_m: Option<Vec3>,
    /// A clamped tip's rotation vector (`tip_rotation_*_rad`), world frame.
    pub tip_rotation_rad: Option<Vec3>,
    /// Where, moving one end from this experiment's hold, the shape snaps
    /// or buckles (`critical.csv`).
    pub critical: Vec<CriticalValue>,
    /// Which way the cables slid (`direction`: load or unload): what
    /// their friction opposes.
    pub cable_slide: rod::statics::CableSlide,
    /// Per cable, its tension where the slide last reversed (from a
    /// session's tension history; empty: they slid all along).
    pub cable_reversal_n: Vec<Option<f64>>,
    /// How long the loads had acted at the hold's middle \[s\] (from a
    /// session's hold; `None`: unknown, a hold long enough to have relaxed).
    pub loaded_for_s: Option<f64>,
}

/// What a critical value measures: the path of holds from the
/// experiment's along which the shape was seen to snap or buckle.
pub type CriticalQuantity = rod::branch::EndPath;

/// A measured critical value (`critical.csv`: experiment, quantity, value,
/// sigma): the end twist or clamp distance at which the shape snaps or
/// buckles, a residual row of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CriticalValue {
    pub quantity: CriticalQuantity,
    pub value: f64,
    pub sigma: f64,
}

impl Experiment {
    /// An experiment with measured points and loads, at the rod file's base.
    pub fn new(id: impl Into<String>, tensions_n: Vec<f64>, tip_force_n: Vec3, measurements: Vec<Measurement>) -> Experiment {
        Experiment {
            id: id.into(),
            tensions_n,
            tip_force_n,
            tip_force_offset_body_m: Vec3::zeros(),
            measurements,
            base_pose: None,
            base_wrench: None,
            tension_sigma_n: vec![],
            tip_position_m: None,
            tip_rotation_rad: None,
            cable_slide: rod::statics::CableSlide::PulledIn,
            cable_reversal_n: vec![],
            critical: vec![],
            loaded_for_s: None,
        }
    }

    /// The tip's hold for a rod whose tip is `condition`: `None` for a free
    /// tip; an error (what is missing, or held without the rod file saying
    /// so) when the experiment's columns do not fit the condition.
    pub fn tip_hold(&self, condition: rod::TipCondition) -> Result<Option<rod::TipHold>, String> {
        rod::held::hold_for(condition, self.tip_position_m, self.tip_rotation_rad, &TIP_COLUMNS)
    }

    /// True when gravity is the only load.
    pub fn gravity_only(&self) -> bool {
        self.tensions_n.iter().all(|t| *t == 0.0) && self.tip_force_n == Vec3::zeros()
    }

    /// Residual rows: 3 per measured point, 6 for a measured base wrench,
    /// one per critical value (in that order).
    pub fn n_residuals(&self) -> usize {
        3 * self.measurements.len() + if self.base_wrench.is_some() { 6 } else { 0 } + self.critical.len()
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("{file}: {place}: {message}")]
pub struct DataError {
    pub file: String,
    pub place: String,
    pub message: String,
}

impl fault::Fault for DataError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

fn err(file: &Path, place: impl Into<String>, message: impl Into<String>) -> DataError {
    DataError { file: file.display().to_string(), place: place.into(), message: message.into() }
}

/// A parsed CSV: header and rows with their line numbers.
struct Csv {
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

/// Reads a CSV with the `csv` crate: `#` comment lines, quoting, cells
/// trimmed, rows of any length (checked by the caller, naming the line).
fn read_csv(path: &Path) -> Result<Csv, DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(true)
        .has_headers(false)
        .from_path(path)
        .map_err(|e| err(path, "file", format!("cannot read: {}", csv_message(&e))))?;
    let mut header: Option<Vec<String>> = None;
    let mut rows = vec![];
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(String::from("file"), |p| format!("line {}", p.line()));
            err(path, line, csv_message(&e))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let cells: Vec<String> = record.iter().map(str::to_string).collect();
        if cells.iter().all(|c| c.is_empty()) {
            continue;
        }
        match header {
            None => header = Some(cells),
            Some(_) => rows.push((line, cells)),
        }
    }
    let header = header.ok_or_else(|| err(path, "header", "empty file"))?;
    Ok(Csv { header, rows })
}

/// The csv crate's message without its own position (ours names the line).
fn csv_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::Utf8 { err, .. } => format!("not UTF-8 text ({err})"),
        _ => e.to_string(),
    }
}

impl Csv {
    fn column(&self, path: &Path, name: &str) -> Result<usize, DataError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| err(path, "header", format!("missing column '{name}'")))
    }

    fn number(&self, path: &Path, line: usize, cells: &[String], col: usize) -> Result<f64, DataError> {
        let name = &self.header[col];
        let cell = cells.get(col).ok_or_else(|| err(path, format!("line {line}"), format!("missing value for '{name}'")))?;
        let v: f64 = cell.parse().map_err(|_| err(path, format!("line {line}, column '{name}'"), format!("not a number: '{cell}'")))?;
        if !v.is_finite() {
            return Err(err(path, format!("line {line}, column '{name}'"), format!("not finite: '{cell}'")));
        }
        Ok(v)
    }
}

/// Reads `inputs.csv` and `measurements.csv` of `dir` for a rod with `n_cables` cables.
pub fn read_experiments(dir: &Path, n_cables: usize) -> Result<Vec<Experiment>, DataError> {
    if !dir.is_dir() {
        return Err(err(dir, "directory", "not a directory with inputs.csv and measurements.csv"));
    }
    let inputs_path = dir.join("inputs.csv");
    let meas_path = dir.join("measurements.csv");
    let inputs = read_csv(&inputs_path)?;
    let id_col = inputs.column(&inputs_path, "experiment")?;
    let tension_cols: Vec<usize> = (1..=n_cables).map(|k| inputs.column(&inputs_path, &format!("tension_{k}_n"))).collect::<Result<_, _>>()?;
    let extra = inputs.header.iter().filter(|h| h.starts_with("tension_")).count();
    if extra != n_cables {
        return Err(err(&inputs_path, "header", format!("{extra} tension columns, the rod has {n_cables} cables")));
    }
    let force_cols: Option<Vec<usize>> = if inputs.header.iter().any(|h| h.starts_with("tip_force_")) {
        Some(["x", "y", "z"].iter().map(|a| inputs.column(&inputs_path, &format!("tip_force_{a}_n"))).collect::<Result<_, _>>()?)
    } else {
        None
    };
    let offset_cols: Option<Vec<usize>> = if inputs.header.iter().any(|h| h.starts_with("tip_force_offset_")) {
        if force_cols.is_none() {
            return Err(err(&inputs_path, "header", "tip_force_offset_y_m/_z_m without tip_force_x_n/_y_n/_z_n"));
        }
        Some(["y", "z"].iter().map(|a| inputs.column(&inputs_path, &format!("tip_force_offset_{a}_m"))).collect::<Result<_, _>>()?)
    } else {
        None
    };
    let triple = |name: &str, unit: &str| -> Result<Option<Vec<usize>>, DataError> {
        if inputs.header.iter().any(|h| h.starts_with(name)) {
            Ok(Some(["x", "y", "z"].iter().map(|a| inputs.column(&inputs_path, &format!("{name}{a}_{unit}"))).collect::<Result<_, _>>()?))
        } else {
            Ok(None)
        }
    };
    let tip_position_cols = triple("tip_position_", "m")?;
    let tip_rotation_cols = triple("tip_rotation_", "rad")?;
    let direction_col = inputs.header.iter().position(|h| h == "direction");
    let mut experiments: BTreeMap<String, Experiment> = BTreeMap::new();
    let mut order = vec![];
    for (line, cells) in &inputs.rows {
        if cells.len() != inputs.header.len() {
            return Err(err(&inputs_path, format!("line {line}"), format!("{} values, header has {}", cells.len(), inputs.header.len())));
        }
        let id = cells[id_col].clone();
        let mut tensions = vec![];
        for &c in &tension_cols {
            let t = inputs.number(&inputs_path, *line, cells, c)?;
            if t < 0.0 {
                return Err(err(&inputs_path, format!("line {line}, column '{}'", inputs.header[c]), "a cable tension cannot be negative"));
            }
            tensions.push(t);
        }
        let tip_force = match &force_cols {
            Some(fc) => Vec3::new(
                inputs.number(&inputs_path, *line, cells, fc[0])?,
                inputs.number(&inputs_path, *line, cells, fc[1])?,
                inputs.number(&inputs_path, *line, cells, fc[2])?,
            ),
            None => Vec3::zeros(),
        };
        if experiments.contains_key(&id) {
            return Err(err(&inputs_path, format!("line {line}"), format!("experiment '{id}' appears twice")));
        }
        let mut e = Experiment::new(id.clone(), tensions, tip_force, vec![]);
        if let Some(oc) = &offset_cols {
            e.tip_force_offset_body_m = Vec3::new(0.0, inputs.number(&inputs_path, *line, cells, oc[0])?, inputs.number(&inputs_path, *line, cells, oc[1])?);
        }
        let vector = |cols: &Option<Vec<usize>>| -> Result<Option<Vec3>, DataError> {
            cols.as_ref()
                .map(|c| {
                    Ok(Vec3::new(
                        inputs.number(&inputs_path, *line, cells, c[0])?,
                        inputs.number(&inputs_path, *line, cells, c[1])?,
                        inputs.number(&inputs_path, *line, cells, c[2])?,
                    ))
                })
                .transpose()
        };
        e.tip_position_m = vector(&tip_position_cols)?;
        e.tip_rotation_rad = vector(&tip_rotation_cols)?;
        if let Some(c) = direction_col {
            let word = cells[c].trim();
            e.cable_slide = match (word, rod::statics::CableSlide::from_key(word)) {
                ("", _) => rod::statics::CableSlide::PulledIn,
                (_, Some(slide)) => slide,
                (other, None) => {
                    return Err(err(&inputs_path, format!("line {line}, column 'direction'"), format!("'{other}': {}", rod::statics::CableSlide::KEYS)))
                }
            };
        }
        order.push(id.clone());
        experiments.insert(id, e);
    }
    let meas = read_csv(&meas_path)?;
    let cols: Vec<usize> = MEASUREMENT_COLUMNS[..REQUIRED_MEASUREMENT_COLUMNS].iter().map(|(n, _)| meas.column(&meas_path, n)).collect::<Result<_, _>>()?;
    let arc_sigma_col = meas.header.iter().position(|h| h == MEASUREMENT_COLUMNS[REQUIRED_MEASUREMENT_COLUMNS].0);
    let ray_cols: Option<Vec<usize>> = if meas.header.iter().any(|h| h == MEASUREMENT_COLUMNS[RAY_COLUMNS.start].0) {
        Some(MEASUREMENT_COLUMNS[RAY_COLUMNS].iter().map(|(n, _)| meas.column(&meas_path, n)).collect::<Result<_, _>>()?)
    } else {
        None
    };
    for (line, cells) in &meas.rows {
        if cells.len() != meas.header.len() {
            return Err(err(&meas_path, format!("line {line}"), format!("{} values, header has {}", cells.len(), meas.header.len())));
        }
        let id = &cells[cols[0]];
        let v: Vec<f64> = cols[1..].iter().map(|&c| meas.number(&meas_path, *line, cells, c)).collect::<Result<_, _>>()?;
        if v[6] <= 0.0 {
            return Err(err(&meas_path, format!("line {line}, column 'sigma_m'"), "must be positive"));
        }
        let e = experiments.get_mut(id).ok_or_else(|| err(&meas_path, format!("line {line}"), format!("experiment '{id}' is not in inputs.csv")))?;
        let arc_sigma_m = arc_sigma_col.map(|c| meas.number(&meas_path, *line, cells, c)).transpose()?.unwrap_or(0.0);
        if arc_sigma_m < 0.0 {
            return Err(err(&meas_path, format!("line {line}, column 'arc_sigma_m'"), "must be >= 0"));
        }
        let ray = match &ray_cols {
            Some(c) if c.iter().any(|&k| !cells[k].trim().is_empty()) => {
                let d = Vec3::new(
                    meas.number(&meas_path, *line, cells, c[0])?,
                    meas.number(&meas_path, *line, cells, c[1])?,
                    meas.number(&meas_path, *line, cells, c[2])?,
                );
                let n = d.norm();
                if !(n > 0.0 && n.is_finite()) {
                    return Err(err(&meas_path, format!("line {line}, columns 'ray_x', 'ray_y', 'ray_z'"), "a ray's direction must be finite and not zero"));
                }
                Some(d / n)
            }
            _ => None,
        };
        e.measurements.push(Measurement {
            arc_m: v[0],
            offset_body_m: Vec3::new(0.0, v[1], v[2]),
            pos_m: Vec3::new(v[3], v[4], v[5]),
            sigma_m: v[6],
            arc_sigma_m,
            ray,
        });
    }
    read_critical(&dir.join("critical.csv"), &mut experiments)?;
    let out: Vec<Experiment> = order.into_iter().map(|id| experiments.remove(&id).unwrap()).collect();
    if out.is_empty() {
        return Err(err(&inputs_path, "rows", "no experiments"));
    }
    if let Some(e) = out.iter().find(|e| e.measurements.is_empty() && e.critical.is_empty()) {
        return Err(err(&meas_path, "rows", format!("experiment '{}' has no measurement", e.id)));
    }
    Ok(out)
}

/// Reads `critical.csv` (experiment, quantity, value, sigma) into the
/// experiments it names, when the file is there.
fn read_critical(path: &Path, experiments: &mut BTreeMap<String, Experiment>) -> Result<(), DataError> {
    if !path.exists() {
        return Ok(());
    }
    let csv = read_csv(path)?;
    let cols: Vec<usize> = ["experiment", "quantity", "value", "sigma"].iter().map(|n| csv.column(path, n)).collect::<Result<_, _>>()?;
    // Each experiment's readings of a quantity, with their lines.
    let mut readings: BTreeMap<(String, &'static str), Vec<Reading>> = BTreeMap::new();
    for (line, cells) in &csv.rows {
        if cells.len() != csv.header.len() {
            return Err(err(path, format!("line {line}"), format!("{} values, header has {}", cells.len(), csv.header.len())));
        }
        let id = &cells[cols[0]];
        let key = &cells[cols[1]];
        let quantity = CriticalQuantity::parse(key)
            .ok_or_else(|| err(path, format!("line {line}, column 'quantity'"), format!("'{key}' is not one of {}", CriticalQuantity::KEYS.join(", "))))?;
        let value = csv.number(path, *line, cells, cols[2])?;
        let sigma = csv.number(path, *line, cells, cols[3])?;
        if sigma <= 0.0 {
            return Err(err(path, format!("line {line}, column 'sigma'"), "must be positive"));
        }
        if !experiments.contains_key(id) {
            return Err(err(path, format!("line {line}"), format!("experiment '{id}' is not in inputs.csv")));
        }
        readings.entry((id.clone(), quantity.key())).or_default().push((*line, quantity, value, sigma));
    }
    for ((id, key), rows) in readings {
        let e = experiments.get_mut(&id).expect("checked above");
        e.critical.push(combined_readings(path, &id, key, &rows)?);
    }
    Ok(())
}

/// A row of critical.csv: its line, quantity, value and sigma.
type Reading = (usize, CriticalQuantity, f64, f64);

/// One critical value from an experiment's readings of a quantity (line,
/// quantity, value, sigma): a single row as it is; several (a snap twist
/// read five times) as their mean, whose sigma is the larger of the rows'
/// own (RMS) and their scatter, over sqrt(n). The same row repeated (a
/// copied line: every value and sigma alike) is refused, not counted as n
/// measurements.
fn combined_readings(path: &Path, id: &str, key: &str, rows: &[Reading]) -> Result<CriticalValue, DataError> {
    let (_, quantity, value, sigma) = rows[0];
    if rows.len() == 1 {
        return Ok(CriticalValue { quantity, value, sigma });
    }
    let lines = rows.iter().map(|r| r.0.to_string()).collect::<Vec<_>>().join(", ");
    if rows.iter().all(|r| r.2 == value && r.3 == sigma) {
        return Err(err(
            path,
            format!("lines {lines}"),
            format!(
                "experiment '{id}', {key}: the same reading {} times: give each reading once (repeated, it would count as {} measurements)",
                rows.len(),
                rows.len()
            ),
        ));
    }
    let n = rows.len() as f64;
    let mean = rows.iter().map(|r| r.2).sum::<f64>() / n;
    let scatter2 = rows.iter().map(|r| (r.2 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let own2 = rows.iter().map(|r| r.3 * r.3).sum::<f64>() / n;
    Ok(CriticalValue { quantity, value: mean, sigma: (own2.max(scatter2) / n).sqrt() })
}

/// Checks each critical value against the experiment's hold and the rod:
/// a twist needs a clamped tip, a clamp distance a held tip and a value
/// the rod's length can reach.
pub fn check_critical(experiments: &[Experiment], rod: &rod::Rod, critical_file: &Path) -> Result<(), DataError> {
    for e in experiments {
        for c in &e.critical {
            let place = format!("experiment '{}', {}", e.id, c.quantity.key());
            let hold = e.tip_hold(rod.tip_condition).ok().flatten();
            let fail = |message: String| Err(err(critical_file, place.clone(), message));
            match (c.quantity, hold) {
                (_, None) => return fail(format!("the tip is {}: a critical value needs a held tip", rod.tip_condition.key())),
                (CriticalQuantity::TipTwistRad, Some(rod::TipHold::Pinned { .. })) => {
                    return fail("a pinned tip cannot be twisted: the rod file's tip must be clamped".into())
                }
                (CriticalQuantity::TipTwistRad, _) if c.value == 0.0 => return fail("a twist of 0 rad is the experiment's own hold".into()),
                (CriticalQuantity::ClampDistanceM, _) if !(c.value > 0.0 && c.value < rod.length_m) => {
                    return fail(format!("{} m is outside every branch: the clamps' distance lies between 0 and the rod's length {} m", c.value, rod.length_m))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Checks that each experiment gives the tip's hold the rod file's
/// `[tip] condition` asks for (and none for a free tip).
pub fn check_tip_holds(experiments: &[Experiment], condition: rod::TipCondition, inputs_file: &Path) -> Result<(), DataError> {
    for e in experiments {
        e.tip_hold(condition).map_err(|message| err(inputs_file, format!("experiment '{}'", e.id), message))?;
    }
    Ok(())
}

/// Checks measurement arc lengths against the rod length.
pub fn check_against_rod(experiments: &[Experiment], length_m: f64, meas_file: &Path) -> Result<(), DataError> {
    for e in experiments {
        for m in &e.measurements {
            if !(m.arc_m >= 0.0 && m.arc_m <= length_m * (1.0 + 1e-9)) {
                return Err(err(meas_file, format!("experiment '{}'", e.id), format!("arc_m = {} outside the rod [0, {length_m}]", m.arc_m)));
            }
        }
    }
    Ok(())
}

/// Writes experiments in the format above (used for synthetic data sets).
pub fn write_experiments(dir: &Path, experiments: &[Experiment], comment: &str) -> Result<(), DataError> {
    std::fs::create_dir_all(dir).map_err(|e| err(dir, "directory", format!("cannot create: {e}")))?;
    let write = |name: &str, header: Vec<String>, rows: Vec<Vec<String>>| -> Result<(), DataError> {
        let path = dir.join(name);
        let io = |e: std::io::Error| err(&path, "file", format!("cannot write: {e}"));
        let mut out = std::fs::File::create(&path).map_err(io)?;
        std::io::Write::write_all(&mut out, format!("# {comment}\n").as_bytes()).map_err(io)?;
        let mut w = csv::Writer::from_writer(out);
        for r in std::iter::once(header).chain(rows) {
            w.write_record(&r).map_err(|e| err(&path, "file", format!("cannot write: {}", csv_message(&e))))?;
        }
        w.flush().map_err(io)
    };
    let k = experiments.first().map_or(0, |e| e.tensions_n.len());
    // The held tip's columns when any experiment holds it (all then do).
    let positions = experiments.iter().any(|e| e.tip_position_m.is_some());
    let rotations = experiments.iter().any(|e| e.tip_rotation_rad.is_some());
    let directions = experiments.iter().any(|e| e.cable_slide != rod::statics::CableSlide::PulledIn);
    let header = std::iter::once("experiment".to_string())
        .chain((1..=k).map(|i| format!("tension_{i}_n")))
        .chain(["tip_force_x_n", "tip_force_y_n", "tip_force_z_n", "tip_force_offset_y_m", "tip_force_offset_z_m"].map(String::from))
        .chain(["tip_position_x_m", "tip_position_y_m", "tip_position_z_m"].into_iter().filter(|_| positions).map(String::from))
        .chain(["tip_rotation_x_rad", "tip_rotation_y_rad", "tip_rotation_z_rad"].into_iter().filter(|_| rotations).map(String::from))
        .chain(std::iter::once("direction".to_string()).filter(|_| directions))
        .collect();
    let cells = |v: Option<Vec3>, wanted: bool| -> Vec<String> {
        if wanted {
            v.unwrap_or_else(Vec3::zeros).iter().map(|x| format!("{x:.12}")).collect()
        } else {
            vec![]
        }
    };
    let rows = experiments
        .iter()
        .map(|e| {
            std::iter::once(e.id.clone())
                .chain(e.tensions_n.iter().map(|t| t.to_string()))
                .chain([e.tip_force_n.x, e.tip_force_n.y, e.tip_force_n.z, e.tip_force_offset_body_m.y, e.tip_force_offset_body_m.z].map(|f| f.to_string()))
                .chain(cells(e.tip_position_m, positions))
                .chain(cells(e.tip_rotation_rad, rotations))
                .chain(directions.then(|| e.cable_slide.key().to_string()))
                .collect()
        })
        .collect();
    write("inputs.csv", header, rows)?;
    // arc_sigma_m only when a point has one: marker data keep their columns.
    let curves = experiments.iter().flat_map(|e| &e.measurements).any(|m| m.arc_sigma_m > 0.0);
    let rays = experiments.iter().flat_map(|e| &e.measurements).any(|m| m.ray.is_some());
    let n_columns = if rays {
        MEASUREMENT_COLUMNS.len()
    } else if curves {
        RAY_COLUMNS.start
    } else {
        REQUIRED_MEASUREMENT_COLUMNS
    };
    let header = MEASUREMENT_COLUMNS[..n_columns].iter().map(|(n, _)| n.to_string()).collect();
    let rows = experiments
        .iter()
        .flat_map(|e| {
            e.measurements.iter().map(move |m| {
                let mut row = vec![
                    e.id.clone(),
                    m.arc_m.to_string(),
                    m.offset_body_m.y.to_string(),
                    m.offset_body_m.z.to_string(),
                    format!("{:.9}", m.pos_m.x),
                    format!("{:.9}", m.pos_m.y),
                    format!("{:.9}", m.pos_m.z),
                    m.sigma_m.to_string(),
                ];
                if curves || rays {
                    row.push(m.arc_sigma_m.to_string());
                }
                if rays {
                    row.extend((0..3).map(|a| m.ray.map_or(String::new(), |d| format!("{:.12}", d[a]))));
                }
                row
            })
        })
        .collect();
    write("measurements.csv", header, rows)?;
    let critical: Vec<Vec<String>> = experiments
        .iter()
        .flat_map(|e| e.critical.iter().map(|c| vec![e.id.clone(), c.quantity.key().to_string(), format!("{:.12}", c.value), c.sigma.to_string()]))
        .collect();
    if critical.is_empty() {
        return Ok(());
    }
    write("critical.csv", ["experiment", "quantity", "value", "sigma"].map(String::from).to_vec(), critical)
}
