//! Motion-capture sessions: a C3D file (the common export of Vicon,
//! Qualisys, OptiTrack and every other optical system) becomes a normal
//! session, so that `identify --sessions` and `validate` read it as they
//! read a camera-tracked one. Stage "record" of record -> track -> observe
//! -> identify -> simulate -> report, for labs whose tracker is a mocap
//! system.
//!
//! A map file (TOML) says which C3D labels are which of the rod file's
//! markers, which way the mocap's vertical axis points, and where the rod's
//! base is: a cluster of markers on the clamp (their positions in the
//! rod's base frame; the base pose is fitted to them frame by frame,
//! Kabsch) or a fixed pose. The session gets:
//! - `markers.parquet`: the mapped markers in the world frame \[m\], at the
//!   mocap's own times (frame / rate); an invalid sample (negative residual,
//!   as every C3D writer marks a gap, or all-zero coordinates, as some
//!   exporters write one) is kept as missing, never as a position;
//! - `streams/mocap_base`: the base pose per frame (world position and
//!   axis-angle), which stands where a robot's flange would;
//! - `streams/mocap_tip` (a map with `[tip]`: a rod held at both ends): the
//!   tip's clamp per frame, as the base's; a loads file's `[tip_hold]
//!   stream = "mocap_tip"` holds the rod's tip there;
//! - `session.toml`: the world frame (gravity along the vertical axis), and
//!   the file, its rate, units and the map verbatim.

use crate::c3d_words::{PointLayout, PointWord};
use crate::error::{Context, Error, Result};
use lie::{Mat3, Pose, Vec3};
use serde::Deserialize;
use session::{MarkerRow, SessionDir, SessionMeta};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The stream of base poses a motion-capture session carries.
pub const BASE_STREAM: &str = "mocap_base";
/// The stream of the tip clamp's poses (a map's `[tip]`), columns as the base's.
pub const TIP_STREAM: &str = "mocap_tip";
/// Its columns (the base's and the tip's): world position \[m\] and rotation vector \[rad\].
pub const BASE_COLUMNS: [&str; 6] = ["x_m", "y_m", "z_m", "rx_rad", "ry_rad", "rz_rad"];

/// Where the rod's base is.
#[derive(Clone, Debug, PartialEq)]
pub enum BaseSource {
    /// Markers on the clamp: their labels and positions in the rod's base
    /// frame \[m\] (at least three, not on a line). `still`: the clamp
    /// does not move, so its pose is the mean over the file (0.1 mm of
    /// marker noise on a 6 cm cluster is 3 mrad of jitter frame to frame,
    /// which a simulation driven by the base would take for motion).
    Cluster { labels: Vec<String>, positions_m: Vec<Vec3>, still: bool },
    /// A fixed base pose in the world.
    Fixed(Pose),
    /// The table's own base pose columns (a plain CSV, `[table.base_pose]`),
    /// in the mocap's frame.
    Table,
}

/// A validated map file.
#[derive(Clone, Debug, PartialEq)]
pub struct MocapMap {
    /// (label in the file, the rod file's marker index).
    pub markers: Vec<(String, usize)>,
    /// Rotation of the mocap's frame into the world (vertical axis to +z).
    pub world_from_mocap: Mat3,
    pub gravity_m_s2: Vec3,
    pub base: BaseSource,
    /// The tip's clamp of a rod held at both ends (`[tip]`: a cluster or a
    /// fixed pose, in the rod's tip frame).
    pub tip: Option<BaseSource>,
    /// The window \[s, the file's own time\] over which the rod is held in
    /// its rod-file shape: each marker's position on the body is measured
    /// there (`[reference] window_s`).
    pub reference_window_s: Option<[f64; 2]>,
    /// `[reference] find_s`: the window found in each file instead, the
    /// stillest stretch of this length \[s\] before the first fast motion.
    pub reference_find_s: Option<f64>,
    /// `[reference] max_creep_m`: the creep a window may have \[m\]
    /// (default [`REFERENCE_CREEP_FRACTION`] of the marker's deflection).
    pub reference_max_creep_m: Option<f64>,
    /// How a plain CSV's columns are named (`[table]`).
    pub table: Option<TableColumns>,
    /// The map file, verbatim (kept in session.toml).
    pub text: String,
    pub path: PathBuf,
}

/// A map file: which labels are which of the rod file's markers, the
/// mocap's axes, where the rod's base is, and optionally the window in
/// which the rod is held straight and how a plain CSV's columns are named.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMap {
    /// Label in the file = the rod file's marker number (from 0): `"Beam:Tip1" = 0`.
    pub markers: BTreeMap<String, usize>,
    /// The mocap's axes against the world's (z up): `[world]`.
    #[serde(default)]
    pub world: RawWorld,
    /// Where the rod's base is: a clamp cluster, a fixed pose, or (a plain CSV) the table's base pose columns: `[base]`.
    #[serde(default)]
    pub base: Option<RawClamp>,
    /// A rod held at both ends: its tip's clamp, a cluster (positions in the rod's tip frame: x the rod's tangent, into the clamp) or a fixed pose: `[tip]`; written as stream mocap_tip.
    pub tip: Option<RawClamp>,
    /// The rod held in its rod-file shape (straight) over a window of every file: `[reference]`.
    pub reference: Option<RawReference>,
    /// A plain CSV's columns: `[table]` (for `rodlab import table` on a file without a vendor's header).
    pub table: Option<RawTable>,
}

/// `[world]`: the mocap's vertical axis, or its whole rotation into the world.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorld {
    /// The mocap's axis that points up: "+x", "-x", "+y", "-y", "+z" (default) or "-z" (Vicon and Qualisys: +z by default; Motive: +y; a lab's calibration may set any).
    pub up: Option<String>,
    /// Instead of `up`: the rotation from the mocap's frame into the world (z up), a 3x3 matrix row by row (a tilted calibration).
    pub rotation: Option<[[f64; 3]; 3]>,
    /// Gravity's magnitude [m/s^2] (down the world's z).
    #[serde(default = "default_g")]
    pub gravity_m_s2: f64,
}

impl Default for RawWorld {
    fn default() -> Self {
        RawWorld { up: None, rotation: None, gravity_m_s2: default_g() }
    }
}

fn default_g() -> f64 {
    9.81
}

/// `[base]` or `[tip]`: a clamp cluster (labels and positions) or a fixed pose.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClamp {
    /// The clamp cluster's labels (three or more, not on a line).
    pub labels: Option<Vec<String>>,
    /// Their positions in the rod's frame at that end (its base frame, or its tip frame) \[m\], in the labels' order.
    pub positions_m: Option<Vec<[f64; 3]>>,
    /// A fixed base: its position in the world \[m\].
    pub position_m: Option<[f64; 3]>,
    /// A fixed base: roll, pitch, yaw \[deg\].
    pub rpy_deg: Option<[f64; 3]>,
    /// The clamp does not move: its mean pose over the file, not each frame's noise.
    #[serde(default)]
    pub still: bool,
}

/// `[reference]`: where the rod is held in its rod-file shape.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawReference {
    /// [from, to]: the window \[s, the file's own time\] in which the rod is held in its rod-file shape (straight); each marker's position on the body is measured there, per file.
    pub window_s: Option<[f64; 2]>,
    /// Instead of window_s: find the window in each file, the stillest stretch of this many seconds before the first fast motion (the release).
    pub find_s: Option<f64>,
    /// How far a marker may creep during the window \[m\] (a support is never perfectly still): its motion is stated and carried into its place's uncertainty up to this; default 5 % of the marker's largest deflection after the window.
    pub max_creep_m: Option<f64>,
}

/// `[table]`: how a plain CSV names its columns.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTable {
    /// The time column \[s\]; without one, give `rate_hz`.
    pub time: Option<String>,
    /// The rows' rate \[Hz\] when there is no time column.
    pub rate_hz: Option<f64>,
    /// The positions' unit: "mm", "cm" or "m".
    pub units: String,
    /// A marker's x, y, z columns: `{label}` and `{axis}` (x, y or z) replaced; default "{label}_{axis}".
    #[serde(default = "default_marker_columns")]
    pub marker_columns: String,
    /// The base's pose per row (instead of `[base]`): `[table.base_pose]`.
    pub base_pose: Option<RawBasePose>,
}

fn default_marker_columns() -> String {
    "{label}_{axis}".into()
}

/// `[table.base_pose]`: the base's position and rotation columns.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBasePose {
    /// The position's x, y, z columns (in `units`).
    pub position: [String; 3],
    /// "quaternion" (w, x, y, z), "rotation_vector" \[rad\] or "euler".
    pub rotation: String,
    /// The rotation's columns: four for a quaternion (w first), three otherwise.
    pub rotation_columns: Vec<String>,
    /// With "euler": the axes in order of application, as the fixed-frame (extrinsic) sequence: "xyz" rotates about x, then y, then z.
    pub euler_order: Option<String>,
    /// With "euler": the angles are in degrees (default radians).
    #[serde(default)]
    pub euler_degrees: bool,
}

/// A plain CSV's columns, as the map names them.
#[derive(Clone, Debug, PartialEq)]
pub struct TableColumns {
    pub time: Option<String>,
    pub rate_hz: Option<f64>,
    /// Metres per unit.
    pub metres_per_unit: f64,
    pub units: String,
    pub marker_columns: String,
    pub base_pose: Option<TableBasePose>,
}

/// How a plain CSV's base pose reads.
#[derive(Clone, Debug, PartialEq)]
pub struct TableBasePose {
    pub position: [String; 3],
    pub rotation: Rotation,
}

/// A rotation's columns and their convention.
#[derive(Clone, Debug, PartialEq)]
pub enum Rotation {
    /// w, x, y, z.
    Quaternion([String; 4]),
    RotationVector([String; 3]),
    /// Extrinsic axes in the order applied, each 0 (x), 1 (y) or 2 (z); in degrees or radians.
    Euler {
        columns: [String; 3],
        order: [usize; 3],
        degrees: bool,
    },
}

impl Rotation {
    /// The columns it reads.
    pub fn columns(&self) -> &[String] {
        match self {
            Rotation::Quaternion(c) => c,
            Rotation::RotationVector(c) => c,
            Rotation::Euler { columns, .. } => columns,
        }
    }
}

/// The rotation taking the mocap's frame to the world's (z up) when the
/// mocap's `up` axis points up; the other axes follow right-handed.
pub fn world_from_up(up: &str) -> Option<Mat3> {
    Some(match up {
        // Vicon, Qualisys: z up.
        "+z" | "z" => Mat3::identity(),
        "-z" => Mat3::new(1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0),
        // OptiTrack (Motive): y up, x kept.
        "+y" | "y" => Mat3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0),
        "-y" => Mat3::new(1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0, 0.0),
        // x up: the axes turned cyclically (world x = mocap y, y = z, z = x).
        "+x" | "x" => Mat3::new(0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0),
        "-x" => Mat3::new(0.0, 1.0, 0.0, 0.0, 0.0, -1.0, -1.0, 0.0, 0.0),
        _ => return None,
    })
}

impl MocapMap {
    /// Reads and checks a map file for a rod with `n_rod_markers` markers;
    /// errors name the file and the field.
    pub fn read(path: &Path, n_rod_markers: usize) -> Result<MocapMap> {
        let (raw, text): (RawMap, String) = session::read_toml(path, "map file")?;
        let bad = |field: &str, m: String| Error::input(format!("{}: {field}: {m}", path.display()));
        if raw.markers.is_empty() {
            return Err(bad("markers", "maps no label to a marker (\"Label\" = index)".into()));
        }
        let mut by_index: BTreeMap<usize, &str> = BTreeMap::new();
        for (label, &k) in &raw.markers {
            if k >= n_rod_markers {
                return Err(bad(
                    &format!("markers.\"{label}\""),
                    format!("marker {k}, but the rod file has {n_rod_markers} markers (0 to {})", n_rod_markers.saturating_sub(1)),
                ));
            }
            if let Some(other) = by_index.insert(k, label) {
                return Err(bad("markers", format!("marker {k} is named twice (\"{other}\" and \"{label}\")")));
            }
        }
        let world_from_mocap = match (&raw.world.up, raw.world.rotation) {
            (Some(_), Some(_)) => return Err(bad("world", "give up or rotation, not both".into())),
            (None, Some(r)) => rotation_matrix(r).map_err(|m| bad("world.rotation", m))?,
            (up, None) => {
                let up = up.as_deref().unwrap_or("+z");
                world_from_up(up)
                    .ok_or_else(|| bad("world.up", format!("'{up}': the mocap's vertical axis, one of \"+x\", \"-x\", \"+y\", \"-y\", \"+z\", \"-z\"")))?
            }
        };
        let g = raw.world.gravity_m_s2;
        if !(g.is_finite() && g > 0.0) {
            return Err(bad("world.gravity_m_s2", format!("must be positive, got {g}")));
        }
        let table = raw.table.as_ref().map(|t| table_columns(t).map_err(|(f, m)| bad(&format!("table.{f}"), m))).transpose()?;
        let from_table = table.as_ref().is_some_and(|t| t.base_pose.is_some());
        let base = match (&raw.base, from_table) {
            (Some(_), true) => return Err(bad("base", "the table's base_pose gives the base: leave [base] out".into())),
            (None, true) => BaseSource::Table,
            (None, false) => return Err(bad("base", "missing: a clamp cluster (labels, positions_m) or a fixed pose (position_m)".into())),
            (Some(b), false) => base_source(b, &raw.markers, "base").map_err(|(f, m)| bad(&f, m))?,
        };
        let tip = raw.tip.as_ref().map(|t| base_source(t, &raw.markers, "tip").map_err(|(f, m)| bad(&f, m))).transpose()?;
        if let (BaseSource::Cluster { labels: at_base, .. }, Some(BaseSource::Cluster { labels: at_tip, .. })) = (&base, &tip) {
            if let Some(l) = at_tip.iter().find(|l| at_base.contains(l)) {
                return Err(bad("tip.labels", format!("\"{l}\" is also in base.labels: each clamp has its own markers")));
            }
        }
        let (mut reference_window_s, mut reference_find_s, mut reference_max_creep_m) = (None, None, None);
        if let Some(r) = &raw.reference {
            match (r.window_s, r.find_s) {
                (Some(w), None) if !(w.iter().all(|v| v.is_finite()) && 0.0 <= w[0] && w[0] < w[1]) => {
                    return Err(bad("reference.window_s", format!("[from, to] with 0 <= from < to seconds, got {w:?}")));
                }
                (Some(w), None) => reference_window_s = Some(w),
                (None, Some(l)) if !(l.is_finite() && l > 0.0) => return Err(bad("reference.find_s", format!("must be positive seconds, got {l}"))),
                (None, Some(l)) => reference_find_s = Some(l),
                _ => {
                    return Err(bad(
                        "reference",
                        "give window_s = [from, to] or find_s = seconds (the stillest stretch before the release), one of them".into(),
                    ))
                }
            }
            if let Some(c) = r.max_creep_m {
                if !(c.is_finite() && c >= 0.0) {
                    return Err(bad("reference.max_creep_m", format!("must be zero or positive metres, got {c}")));
                }
                reference_max_creep_m = Some(c);
            }
        }
        let mut markers: Vec<(String, usize)> = raw.markers.into_iter().collect();
        markers.sort_by_key(|m| m.1);
        Ok(MocapMap {
            markers,
            world_from_mocap,
            gravity_m_s2: Vec3::new(0.0, 0.0, -g),
            base,
            tip,
            reference_window_s,
            reference_find_s,
            reference_max_creep_m,
            table,
            text,
            path: path.to_path_buf(),
        })
    }
}

/// A row-major 3x3 matrix as a rotation, or why it is none.
fn rotation_matrix(r: [[f64; 3]; 3]) -> std::result::Result<Mat3, String> {
    let m = Mat3::from_fn(|i, j| r[i][j]);
    if !m.iter().all(|v| v.is_finite()) {
        return Err("must be finite".into());
    }
    let off = (m.transpose() * m - Mat3::identity()).amax();
    if off > 1e-6 || m.determinant() < 0.0 {
        return Err(format!("not a rotation (R^T R differs from I by {off:.1e}, det {:.4}): give a proper rotation, row by row", m.determinant()));
    }
    Ok(m)
}

/// `[base]` or `[tip]` (`table`) read: a cluster or a fixed pose; errors
/// are (field, message).
fn base_source(b: &RawClamp, markers: &BTreeMap<String, usize>, table: &str) -> std::result::Result<BaseSource, (String, String)> {
    let bad = |f: &str, m: String| (if f.is_empty() { table.to_string() } else { format!("{table}.{f}") }, m);
    match (&b.labels, &b.positions_m, b.position_m, b.rpy_deg) {
        (Some(labels), Some(pos), None, None) => {
            if labels.len() != pos.len() {
                return Err(bad("", format!("{} labels but {} positions_m", labels.len(), pos.len())));
            }
            if labels.len() < 3 {
                return Err(bad("labels", "a cluster needs at least three markers".into()));
            }
            if let Some(l) = labels.iter().find(|l| markers.contains_key(*l)) {
                return Err(bad("labels", format!("\"{l}\" is also a rod marker in [markers]")));
            }
            for (i, l) in labels.iter().enumerate() {
                if labels[..i].contains(l) {
                    return Err(bad("labels", format!("\"{l}\" is named twice")));
                }
            }
            if pos.iter().flatten().any(|v| !v.is_finite()) {
                return Err(bad("positions_m", "must be finite".into()));
            }
            let positions_m: Vec<Vec3> = pos.iter().map(|p| Vec3::from(*p)).collect();
            // Not on a line: the cluster must fix the rotation.
            let c = positions_m.iter().sum::<Vec3>() / positions_m.len() as f64;
            let spread = positions_m.iter().map(|p| (p - c) * (p - c).transpose()).sum::<Mat3>();
            let mut e: Vec<f64> = spread.symmetric_eigen().eigenvalues.iter().copied().collect();
            e.sort_by(f64::total_cmp);
            if e[1] < 1e-10 * e[2].max(1e-30) || e[2] <= 0.0 {
                return Err(bad("positions_m", format!("the cluster's markers lie on a line: they cannot give the {table}'s rotation")));
            }
            Ok(BaseSource::Cluster { labels: labels.clone(), positions_m, still: b.still })
        }
        (None, None, Some(p), r) => {
            if b.still {
                return Err(bad("still", "is for a clamp cluster (a fixed pose is still already)".into()));
            }
            let r = r.unwrap_or([0.0; 3]);
            if p.iter().chain(r.iter()).any(|v| !v.is_finite()) {
                return Err(bad("", "position_m and rpy_deg must be finite".into()));
            }
            Ok(BaseSource::Fixed(Pose::from_rpy(r[0].to_radians(), r[1].to_radians(), r[2].to_radians(), Vec3::from(p))))
        }
        _ => Err(bad(
            "",
            format!("give a clamp cluster (labels and positions_m in the rod's {table} frame) or a fixed pose in the world (position_m, optional rpy_deg), not both"),
        )),
    }
}

/// `[table]` read; errors are (field, message).
fn table_columns(t: &RawTable) -> std::result::Result<TableColumns, (String, String)> {
    let bad = |f: &str, m: String| (f.to_string(), m);
    let metres_per_unit = metres_per_unit(&t.units).ok_or_else(|| bad("units", format!("'{}': \"mm\", \"cm\" or \"m\"", t.units)))?;
    match (&t.time, t.rate_hz) {
        (Some(_), Some(_)) => return Err(bad("rate_hz", "give a time column or a rate, not both".into())),
        (None, None) => return Err(bad("time", "missing: the time column [s], or rate_hz".into())),
        (None, Some(r)) if !(r.is_finite() && r > 0.0) => return Err(bad("rate_hz", format!("must be positive, got {r}"))),
        _ => {}
    }
    if !(t.marker_columns.contains("{label}") && t.marker_columns.contains("{axis}")) {
        return Err(bad("marker_columns", format!("'{}' must contain {{label}} and {{axis}}", t.marker_columns)));
    }
    let base_pose =
        t.base_pose
            .as_ref()
            .map(|b| {
                let three = |c: &[String]| -> std::result::Result<[String; 3], (String, String)> {
                    <[String; 3]>::try_from(c.to_vec()).map_err(|_| bad("base_pose.rotation_columns", format!("{} columns, three needed", c.len())))
                };
                let rotation = match b.rotation.as_str() {
                    "quaternion" => Rotation::Quaternion(<[String; 4]>::try_from(b.rotation_columns.clone()).map_err(|_| {
                        bad("base_pose.rotation_columns", format!("{} columns, a quaternion needs four (w, x, y, z)", b.rotation_columns.len()))
                    })?),
                    "rotation_vector" => Rotation::RotationVector(three(&b.rotation_columns)?),
                    "euler" => {
                        let order = b.euler_order.as_deref().ok_or_else(|| bad("base_pose.euler_order", "missing: the axes in order, e.g. \"xyz\"".into()))?;
                        let axes: Vec<usize> = order.chars().filter_map(|c| "xyz".find(c)).collect();
                        if axes.len() != 3 || order.len() != 3 || axes[0] == axes[1] || axes[1] == axes[2] {
                            return Err(bad("base_pose.euler_order", format!("'{order}': three of x, y, z, no two the same in a row")));
                        }
                        Rotation::Euler { columns: three(&b.rotation_columns)?, order: [axes[0], axes[1], axes[2]], degrees: b.euler_degrees }
                    }
                    other => return Err(bad("base_pose.rotation", format!("'{other}': \"quaternion\", \"rotation_vector\" or \"euler\""))),
                };
                Ok(TableBasePose { position: b.position.clone(), rotation })
            })
            .transpose()?;
    Ok(TableColumns { time: t.time.clone(), rate_hz: t.rate_hz, metres_per_unit, units: t.units.clone(), marker_columns: t.marker_columns.clone(), base_pose })
}

/// What an import made.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub session: PathBuf,
    pub frames: usize,
    pub rate_hz: f64,
    /// The file's point units as written ("mm", "m", ...).
    pub units: String,
    /// Per mapped marker: (label, rod index, missing samples).
    pub missing: Vec<(String, usize, usize)>,
    /// Frames with a base pose (all of them for a fixed base).
    pub base_frames: usize,
    /// RMS distance of the cluster's markers from their fitted places \[m\]
    /// (0 for a fixed base).
    pub base_rms_m: f64,
    /// Labels in the file that the map does not use.
    pub unused_labels: Vec<String>,
    /// A still clamp: the farthest any frame's fitted pose lies from the
    /// mean (\[m\], \[rad\]): noise, or the clamp moved after all.
    pub base_spread: Option<(f64, f64)>,
    /// A map with `[tip]`: the tip clamp's stream (mocap_tip).
    pub tip_clamp: Option<TipClampImported>,
    /// Each marker's place on the body, measured over the reference window.
    pub markers_on_body: Vec<session::MarkerOnBody>,
    /// With `[reference]`: how far the held pose turns the rod's axis from
    /// the rod file's mount in the clamp's frame \[rad\].
    pub held_turn_rad: f64,
    /// With `[reference]`: the release after the window (when the rod left
    /// its held pose), if it did.
    pub release: Option<Release>,
    /// What the person importing must know (a "still" clamp that moved).
    pub warnings: Vec<String>,
}

/// The tip clamp's poses an import wrote (stream mocap_tip).
#[derive(Clone, Debug, PartialEq)]
pub struct TipClampImported {
    /// Frames with its pose.
    pub frames: usize,
    /// Its cluster fit's RMS residual \[m\] (0 for a fixed pose).
    pub rms_m: f64,
    /// A still cluster: as `base_spread`.
    pub spread: Option<(f64, f64)>,
}

/// A still clamp whose frames stray further than this from their mean
/// (\[m\], \[rad\]) moved: ten times a good mocap system's jitter on a
/// hand-sized cluster.
const STILL_CLAMP_LIMIT: (f64, f64) = (1e-3, 0.03);

/// A clamp cluster whose markers sit further than this (RMS) from the
/// map's positions is not the clamp the map describes \[m\]: markers glued
/// by hand miss a drawing by a millimetre or two, not by centimetres.
const CLUSTER_RMS_LIMIT_M: f64 = 0.01;

/// Metres per unit of a C3D `POINT:UNITS`.
fn metres_per_unit(units: &str) -> Option<f64> {
    match units.trim().to_ascii_lowercase().as_str() {
        "mm" => Some(1e-3),
        "cm" => Some(1e-2),
        "m" => Some(1.0),
        _ => None,
    }
}

/// A C3D sample: `None` when the writer marked it invalid (a negative
/// fourth word, read from the file's bytes: [`crate::c3d_words`]), its
/// coordinates are not finite, or it is the all-zero point some exporters
/// write for a gap.
fn sample(p: &c3dio::MarkerPoint, word: Option<PointWord>) -> Option<Vec3> {
    let v = Vec3::new(p.point[0] as f64, p.point[1] as f64, p.point[2] as f64);
    (word.is_some_and(PointWord::valid) && v.iter().all(|x| x.is_finite()) && v != Vec3::zeros()).then_some(v)
}

/// The most memory the marker grid of one C3D file may take \[bytes\]: a
/// two-hour capture of 200 markers at 200 Hz fits; a header that claims
/// more than its bytes can hold is refused before anything is allocated.
pub const C3D_MEMORY_BUDGET_BYTES: usize = 4 << 30;

/// What the C3D header (the first 512-byte block) says, checked against
/// the file's size before the parser allocates by it: a frame range that
/// runs backwards, a data block outside the file, or more points per
/// frame than the data can hold (a crafted header once made the parser
/// allocate 103 GB from a 138 kB file) is refused, naming the field.
pub fn check_c3d_header(bytes: &[u8]) -> std::result::Result<(), String> {
    if bytes.len() < 512 || bytes[1] != 0x50 {
        return Err("no C3D header (the first block's second byte is not 0x50)".into());
    }
    let param_start = 512 * usize::from(bytes[0]).saturating_sub(1);
    let processor = *bytes.get(param_start + 3).ok_or("the parameter block lies outside the file")?;
    let big_endian = match processor {
        84 | 85 => false,
        86 => true,
        p => return Err(format!("processor type {p} in the parameter block is not Intel (84), DEC (85) or MIPS (86)")),
    };
    let word = |k: usize| {
        let b = [bytes[2 * k], bytes[2 * k + 1]];
        if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let (points, analog, first, last, data_block) = (usize::from(word(1)), usize::from(word(2)), word(3), word(4), usize::from(word(8)));
    if last < first {
        return Err(format!("the header's frame range runs backwards (first frame {first}, last {last})"));
    }
    let data_start = 512 * data_block.saturating_sub(1);
    if data_block < 2 || data_start > bytes.len() {
        return Err(format!("the data block ({data_block}) lies outside the file ({} bytes)", bytes.len()));
    }
    // The fewest bytes a frame can take (16-bit values): the most frames
    // the data can hold.
    let frame_bytes = 8 * points + 2 * analog;
    let frames_held = (bytes.len() - data_start).checked_div(frame_bytes).unwrap_or(0);
    if points > 0 && frames_held == 0 {
        return Err(format!(
            "the header declares {points} points per frame ({frame_bytes} bytes a frame at least), the file holds {} bytes of data",
            bytes.len() - data_start
        ));
    }
    // The parser sizes its grid by the header's frame range before it
    // reads a frame: a range the data cannot hold is refused here (65,535
    // points over frames 1..65535 in a 600 kB file once asked for 103 GB).
    let declared = usize::from(last - first) + 1;
    if points > 0 && declared > frames_held {
        return Err(format!(
            "truncated or a damaged header: it declares frames {first}..{last} ({declared}) of {points} points, the file's {} bytes of data hold at most {frames_held}",
            bytes.len() - data_start
        ));
    }
    // The parser sizes its analog grid by ANALOG:USED channels times the
    // header's samples per channel (word 10) before it checks them against
    // the analog samples a frame holds (word 3): a disagreement once asked
    // for 2.4 GB from a 70 kB file.
    let analog_used = usize::from(parameter_u16(bytes, big_endian, data_block, "ANALOG", "USED").unwrap_or(0));
    let per_channel = usize::from(word(9));
    if analog_used > 0 && analog_used * per_channel != analog {
        return Err(format!(
            "ANALOG:USED ({analog_used} channels) times the header's {per_channel} samples per channel a frame is not its {analog} analog samples a frame"
        ));
    }
    let grid_bytes = frames_held.saturating_mul(points).saturating_mul(std::mem::size_of::<c3dio::MarkerPoint>());
    if grid_bytes > C3D_MEMORY_BUDGET_BYTES {
        return Err(format!(
            "{points} points over {frames_held} frames need {:.1} GB, more than the import's budget of {} GB",
            grid_bytes as f64 / 1e9,
            C3D_MEMORY_BUDGET_BYTES >> 30
        ));
    }
    Ok(())
}

/// A parameter holding one 16-bit integer, found as the parser finds it:
/// records from the second block to the data, walked by their offsets
/// (parameter names upper-cased, the last of a name kept). `None` when the
/// walk finds none or the value is not one integer.
fn parameter_u16(bytes: &[u8], big_endian: bool, data_block: usize, group: &str, name: &str) -> Option<u16> {
    let blocks = bytes.get(512..(512 * data_block.saturating_sub(1)).min(bytes.len()))?;
    let u16_at = |i: usize| blocks.get(i..i + 2).map(|b| if big_endian { u16::from_be_bytes([b[0], b[1]]) } else { u16::from_le_bytes([b[0], b[1]]) });
    let (mut group_ids, mut found) = (std::collections::HashMap::new(), vec![]);
    let mut i = 4;
    // Each record's offset points past its name: a walk that does not move
    // forward is a damaged block, not a loop to follow.
    for _ in 0..100_000 {
        let (len, id) = (usize::from((*blocks.get(i)? as i8).unsigned_abs()), *blocks.get(i + 1)? as i8);
        if id == 0 {
            break;
        }
        let record_name = String::from_utf8_lossy(blocks.get(i + 2..i + 2 + len)?).to_string();
        let at = i + 2 + len;
        let next = at + usize::from(u16_at(at)?);
        if id < 0 {
            group_ids.insert(id.unsigned_abs(), record_name);
        } else if record_name.eq_ignore_ascii_case(name) {
            let (kind, dims) = (*blocks.get(at + 2)? as i8, usize::from(*blocks.get(at + 3)?));
            let one = blocks.get(at + 4..at + 4 + dims)?.iter().all(|d| *d == 1);
            found.push((id as u8, (kind == 2 && one).then(|| u16_at(at + 4 + dims)).flatten()));
        }
        if next <= i {
            break;
        }
        i = next;
    }
    found.into_iter().rev().find(|(id, _)| group_ids.get(id).is_some_and(|g| g == group)).and_then(|(_, v)| v)
}

/// Marker trajectories as a file holds them: labels, rate, and per frame
/// each label's position in metres in the mocap's frame (`None`: missing),
/// with a base pose per frame when the file carries one (a plain CSV's).
/// Every format's reader makes one; [`import_trajectories`] makes the
/// session, the same for all.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectories {
    pub source: PathBuf,
    /// What the file is ("C3D", "Qualisys TSV", ...), for the session's notes.
    pub format: String,
    pub labels: Vec<String>,
    pub rate_hz: f64,
    /// The number of the file's first frame (frame numbers stay the file's).
    pub first_frame: i64,
    /// The frame number at the file's time 0: 1 where the vendor counts
    /// from 1 (C3D, Qualisys, Vicon), 0 where from 0 (Motive, a plain CSV).
    pub frame_origin: i64,
    /// When the capture started, as the file states it (local time of the
    /// capture computer, no zone: `YYYY-MM-DDTHH:MM:SS[.fff]`).
    pub capture_start: Option<String>,
    /// The positions' unit as the file wrote it ("mm", "m", ...).
    pub units: String,
    pub frames: Vec<Vec<Option<Vec3>>>,
    /// The base's pose per frame, mocap frame (a plain CSV's base columns).
    pub base_poses: Option<Vec<Option<Pose>>>,
}

impl Trajectories {
    /// Frame `f`'s time in the file's own clock \[s\]: its frame number
    /// from the vendor's origin over the rate (a trimmed export keeps its
    /// times).
    pub fn time_s(&self, f: usize) -> f64 {
        (self.first_frame + f as i64 - self.frame_origin) as f64 / self.rate_hz
    }
}

/// A capture's start as `YYYY-MM-DDTHH:MM:SS[.fff]` from a file's date and
/// time of day (`-` or `/` between the date's parts; `:` or `.` between
/// the time's, with an optional AM/PM): `None` when they are not a time.
pub fn capture_start(date: &str, time: &str) -> Option<String> {
    let date = date.trim().replace('/', "-");
    let mut time = time.trim().to_ascii_uppercase();
    let pm = time.ends_with("PM");
    let am = time.ends_with("AM");
    if pm || am {
        time.truncate(time.len() - 2);
    }
    let parts: Vec<&str> = time.trim().split([':', '.']).collect();
    let (h, m, sec) = match parts.as_slice() {
        [h, m, s] => (h.parse::<u32>().ok()?, *m, s.to_string()),
        [h, m, s, frac] => (h.parse::<u32>().ok()?, *m, format!("{s}.{frac}")),
        _ => return None,
    };
    let h = match (am, pm) {
        (true, _) if h == 12 => 0,
        (_, true) if h < 12 => h + 12,
        _ => h,
    };
    let text = format!("{date}T{h:02}:{m}:{sec}");
    humantime::parse_rfc3339_weak(&text).ok().map(|_| text)
}

/// Reads a C3D file's marker trajectories.
pub fn read_c3d(file: &Path) -> Result<Trajectories> {
    let name = file.display();
    let bytes = fault::read_bytes(file, fault::DATA_LIMIT_BYTES).map_err(|e| Error::input(format!("{name}: cannot read: {e}")))?;
    check_c3d_header(&bytes).map_err(|why| Error::input(format!("{name}: not a readable C3D file: {why}")))?;
    // The parser indexes the file by its header's counts; a damaged file
    // must be an error, not a crash (nor the panic's message on stderr).
    let parsed = fault::guard(|| {
        c3dio::C3d::from_bytes(&bytes).map_err(|e| match e {
            c3dio::C3dParseError::ParameterNotFound(group, param) => {
                format!("the parameter {group}:{param} is missing (the C3D standard requires it; the writer left it out)")
            }
            e => format!("{e:?}"),
        })
    });
    let c3d = match parsed {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => return Err(Error::input(format!("{name}: not a readable C3D file: {why}"))),
        Err(_) => return Err(Error::input(format!("{name}: not a readable C3D file: truncated or damaged"))),
    };
    let points = &c3d.points;
    let units: String = points.units.iter().collect::<String>().trim().to_string();
    let scale = metres_per_unit(&units).ok_or_else(|| Error::input(format!("{name}: POINT:UNITS '{units}' is not mm, cm or m")))?;
    let rate_hz = points.frame_rate as f64;
    if !(rate_hz.is_finite() && rate_hz > 0.0) {
        return Err(Error::input(format!("{name}: POINT:RATE is {rate_hz}: no frame rate")));
    }
    let labels: Vec<String> = points.labels.iter().map(|l| l.trim().to_string()).collect();
    let n_frames = points.points.rows();
    // Each label names a point of every frame: a file naming more labels
    // than it holds points has labels for data that is not there.
    if labels.len() > points.points.cols() {
        return Err(Error::input(format!(
            "{name}: not a readable C3D file: {} labels (POINT:LABELS) for {} points per frame",
            labels.len(),
            points.points.cols()
        )));
    }
    if n_frames == 0 {
        return Err(Error::input(format!("{name}: not a readable C3D file: no frames")));
    }
    // The parser reads the frames there are; the header says how many were
    // written (a copy cut short, a recording the system did not finish).
    let declared = (points.last_frame as usize + 1).saturating_sub(points.first_frame as usize);
    if n_frames < declared {
        return Err(Error::input(format!("{name}: not a readable C3D file: truncated, {n_frames} of its {declared} frames are there")));
    }
    // Validity from each point's own fourth word (c3dio's residual loses
    // the residuals above 127 |scale|).
    let mut layout = PointLayout::from_header(&bytes).map_err(|why| Error::input(format!("{name}: not a readable C3D file: {why}")))?;
    // The frame's layout as the parser read the coordinates.
    (layout.points, layout.analog_per_frame) = (points.points.cols(), usize::from(c3d.analog.samples_per_frame));
    let frames =
        (0..n_frames).map(|f| (0..labels.len()).map(|c| sample(&points.points[f][c], layout.word(&bytes, f, c)).map(|v| v * scale)).collect()).collect();
    Ok(Trajectories {
        source: file.to_path_buf(),
        format: "C3D".into(),
        labels,
        rate_hz,
        first_frame: points.first_frame as i64,
        frame_origin: 1,
        capture_start: c3d_capture_start(&c3d.parameters),
        units,
        frames,
        base_poses: None,
    })
}

/// A C3D's own date, where the file holds one: `TRIAL:DATE` (and
/// `TRIAL:TIME`, midnight without it), as some exporters write them.
fn c3d_capture_start(parameters: &c3dio::Parameters) -> Option<String> {
    let text = |name: &str| match &parameters.get("TRIAL", name)?.data {
        c3dio::ParameterData::Char(c) => Some(c.iter().collect::<String>().trim().to_string()),
        _ => None,
    };
    capture_start(&text("DATE")?, &text("TIME").unwrap_or_else(|| "00:00:00".into()))
}

/// Reads `file` (C3D) and writes the session `out` (a new or empty directory).
pub fn import_c3d(file: &Path, map: &MocapMap, out: &SessionDir, rod: &rod::Rod) -> Result<Imported> {
    import_trajectories(&read_c3d(file)?, map, out, rod)
}

/// The column of each of `labels` in `traj`; the error names the map's field.
fn columns_of(traj: &Trajectories, labels: &[&str], field: &dyn Fn(&str) -> String, map: &MocapMap) -> Result<Vec<usize>> {
    labels
        .iter()
        .map(|label| {
            // A label the file gives twice: which of its tracks is the marker?
            if let Some(second) = traj.labels.iter().enumerate().filter(|(_, l)| l == label).nth(1) {
                return Err(Error::input(format!(
                    "{}: the label \"{label}\" ({}: {}) names two of the file's tracks (the {} and the {}): rename one in the mocap software",
                    traj.source.display(),
                    map.path.display(),
                    field(label),
                    ordinal(traj.labels.iter().position(|l| l == label).unwrap_or(0)),
                    ordinal(second.0)
                )));
            }
            traj.labels.iter().position(|l| l == label).ok_or_else(|| {
                let shown: Vec<&str> = traj.labels.iter().take(12).map(String::as_str).collect();
                Error::input(format!(
                    "{}: no marker labelled \"{label}\" ({}: {}); the file has {} labels: {}{}",
                    traj.source.display(),
                    map.path.display(),
                    field(label),
                    traj.labels.len(),
                    shown.join(", "),
                    if traj.labels.len() > 12 { ", ..." } else { "" }
                ))
            })
        })
        .collect()
}

/// "1st", "2nd", "3rd", "4th" ... of a 0-based index.
fn ordinal(i: usize) -> String {
    let n = i + 1;
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// One clamp's poses in the world per frame (frames without one left out),
/// the cluster fit's RMS residual \[m\] (0 without a cluster), and for a
/// still cluster how far its frames strayed from their mean (\[m\], \[rad\]),
/// each frame then holding the mean.
struct ClampTrack {
    poses: Vec<(usize, Pose)>,
    rms_m: f64,
    spread: Option<(f64, f64)>,
}

/// The clamp at one end (`table`: "base" or "tip", the map's table) per
/// frame; refused when no frame gives it, or when its cluster is not the
/// map's.
fn clamp_track(traj: &Trajectories, map: &MocapMap, source: &BaseSource, table: &str) -> Result<ClampTrack> {
    let to_world = |v: Vec3| map.world_from_mocap * v;
    let mocap_to_world = Pose { rot: map.world_from_mocap, pos: Vec3::zeros() };
    let cluster_cols = match source {
        BaseSource::Cluster { labels, .. } => columns_of(traj, &labels.iter().map(String::as_str).collect::<Vec<_>>(), &|_| format!("{table}.labels"), map)?,
        _ => vec![],
    };
    let (mut sq_sum, mut sq_n) = (0.0, 0usize);
    let mut poses = vec![];
    for (f, row) in traj.frames.iter().enumerate() {
        let pose = match source {
            BaseSource::Fixed(p) => Some(*p),
            BaseSource::Table => traj.base_poses.as_ref().and_then(|b| b[f]).map(|p| mocap_to_world.compose(&p)),
            BaseSource::Cluster { positions_m, .. } => {
                let pairs: Option<Vec<(Vec3, Vec3)>> = cluster_cols.iter().zip(positions_m).map(|(&c, local)| row[c].map(|p| (*local, to_world(p)))).collect();
                match pairs.map(|p| session::frames::calibrate_robot_base(&p)) {
                    Some(Ok(cal)) => {
                        sq_sum += cal.rms_residual_m.powi(2) * cal.pairs as f64;
                        sq_n += cal.pairs;
                        Some(cal.world_from_robot)
                    }
                    _ => None,
                }
            }
        };
        if let Some(p) = pose {
            poses.push((f, p));
        }
    }
    let rms_m = if sq_n > 0 { (sq_sum / sq_n as f64).sqrt() } else { 0.0 };
    let name = traj.source.display();
    if poses.is_empty() {
        let what = match source {
            BaseSource::Cluster { .. } if table == "tip" => format!("the tip clamp's cluster ({}: tip.labels)", map.path.display()),
            BaseSource::Cluster { .. } => format!("the clamp cluster ({}: base.labels)", map.path.display()),
            _ => format!("the base pose ({}: table.base_pose)", map.path.display()),
        };
        return Err(Error::input(format!("{name}: {what} is never complete: no frame gives its pose")));
    }
    if rms_m > CLUSTER_RMS_LIMIT_M {
        return Err(Error::input(format!(
            "{name}: the {table} clamp's cluster sits {:.1} mm RMS from {}: {table}.positions_m (at most {} mm): the map's cluster is not this clamp's (positions in another unit or frame, or labels swapped)",
            rms_m * 1e3,
            map.path.display(),
            CLUSTER_RMS_LIMIT_M * 1e3
        )));
    }
    // A still clamp: its mean pose, and how far any frame strays from it.
    let mut spread = None;
    if let BaseSource::Cluster { still: true, .. } = source {
        let mean = lie::mean_pose(poses.iter().map(|p| &p.1));
        let mut far = (0.0f64, 0.0f64);
        for (_, p) in &poses {
            far.0 = far.0.max((p.pos - mean.pos).norm());
            far.1 = far.1.max(lie::so3_log(&(mean.rot.transpose() * p.rot)).norm());
        }
        for p in &mut poses {
            p.1 = mean;
        }
        spread = Some(far);
    }
    Ok(ClampTrack { poses, rms_m, spread })
}

/// Writes a clamp's poses as the stream `name` of the session at `root`.
fn write_clamp_stream(root: &Path, name: &str, poses: &[(usize, Pose)], t_of: impl Fn(usize) -> f64) -> Result<()> {
    let mut writer = session::StreamWriter::create(root, name, BASE_COLUMNS.iter().map(|c| c.to_string()).collect(), std::time::Duration::from_secs(3600))?;
    for (f, p) in poses {
        writer.push((t_of(*f) * 1e9).round() as i64, &lie::trajectory::pose_to_ur(p))?;
    }
    writer.flush()?;
    Ok(())
}

/// Makes the session `out` (a new or empty directory) of a file's
/// trajectories: the mapped markers in the world, the base per frame,
/// and (with `[reference]`) each marker's place on the body measured.
pub fn import_trajectories(traj: &Trajectories, map: &MocapMap, out: &SessionDir, rod: &rod::Rod) -> Result<Imported> {
    let name = traj.source.display();
    let n_frames = traj.frames.len();
    let rate_hz = traj.rate_hz;
    let marker_labels: Vec<&str> = map.markers.iter().map(|m| m.0.as_str()).collect();
    let marker_cols: Vec<(usize, usize)> =
        columns_of(traj, &marker_labels, &|l| format!("markers.\"{l}\""), map)?.into_iter().zip(map.markers.iter().map(|m| m.1)).collect();
    let to_world = |v: Vec3| map.world_from_mocap * v;
    let t_of = |f: usize| traj.time_s(f);

    let base = clamp_track(traj, map, &map.base, "base")?;
    let tip = map.tip.as_ref().map(|t| clamp_track(traj, map, t, "tip")).transpose()?;
    let poses = &base.poses;
    let world_markers = |f: usize| -> Vec<Option<Vec3>> { marker_cols.iter().map(|&(c, _)| traj.frames[f][c].map(to_world)).collect() };
    let mut warnings = vec![];
    let trial = Trial { traj, map, rod, marker_cols: &marker_cols, poses, world_markers: &world_markers };
    // The markers over the reference window, in the base frame: what their
    // places on the body and the release are both measured from.
    let window = match map.reference_find_s {
        Some(length_s) => Some(stillest_window(&trial, length_s)?),
        None => map.reference_window_s,
    };
    let held = window.map(|window| (window, trial.in_base_frame(|f| (window[0]..=window[1]).contains(&trial.time_s(f)))));
    let (on_body, held_turn) = match &held {
        Some((window, samples)) => markers_on_body(&trial, *window, samples)?,
        None => (vec![], None),
    };
    // A rod held at both ends is not in its rod file's shape at the start.
    if rod.tip_condition == rod::TipCondition::Free {
        warnings.extend(start_and_end_warnings(&trial, held.is_some()));
    }
    let release = held.as_ref().and_then(|(window, samples)| find_release(&trial, *window, samples));
    // Nothing is written until the file and the map have been checked: a
    // refused import leaves no half session behind.
    let root = out.path();
    if out.exists() && !out.contents().is_empty() {
        return Err(Error::input(format!("{}: not empty (import into a new directory)", root.display())));
    }
    std::fs::create_dir_all(root).map_err(|e| Error::io(format!("{}: cannot create: {e}", root.display())))?;
    let mut rows = Vec::with_capacity(n_frames * marker_cols.len());
    let mut missing = vec![0usize; marker_cols.len()];
    for f in 0..n_frames {
        let t_s = t_of(f);
        for (m, (p, &(_, k))) in world_markers(f).into_iter().zip(&marker_cols).enumerate() {
            if p.is_none() {
                missing[m] += 1;
            }
            let w = p.unwrap_or(Vec3::repeat(f64::NAN));
            rows.push(MarkerRow {
                frame: traj.first_frame + f as i64,
                t_s,
                t_host_ns: Some((t_s * 1e9).round() as i64),
                marker: k as u32,
                u_px: f64::NAN,
                v_px: f64::NAN,
                x_m: w.x,
                y_m: w.y,
                z_m: w.z,
                area_px: f64::NAN,
                flags: if p.is_none() { session::flags::MISSING } else { 0 },
            });
        }
    }
    session::write_markers(&out.markers(), &rows).context(out.markers().display())?;
    write_clamp_stream(root, BASE_STREAM, poses, t_of)?;
    if let Some(tip) = &tip {
        write_clamp_stream(root, TIP_STREAM, &tip.poses, t_of)?;
    }

    let used: Vec<&str> = map
        .markers
        .iter()
        .map(|m| m.0.as_str())
        .chain([Some(&map.base), map.tip.as_ref()].into_iter().flatten().flat_map(|source| match source {
            BaseSource::Cluster { labels, .. } => labels.iter().map(String::as_str).collect::<Vec<_>>(),
            _ => vec![],
        }))
        .collect();
    let unused_labels = traj.labels.iter().filter(|l| !used.contains(&l.as_str())).cloned().collect();
    let frames_w = session::RigFrames { gravity_m_s2: map.gravity_m_s2.into(), ..session::RigFrames::default() };
    let mut meta = SessionMeta::start(
        &format!("imported from {name} ({}): {n_frames} frames at {rate_hz} Hz, units '{}', {} labels", traj.format, traj.units, traj.labels.len()),
        &map.path.display().to_string(),
        &map.text,
        frames_w,
    );
    meta.clock = format!(
        "{}: the file's own time, t = (frame - {}) / {rate_hz} Hz (its first frame {} at {:.6} s)",
        session::MOCAP_CLOCK,
        traj.frame_origin,
        traj.first_frame,
        traj.time_s(0)
    );
    if let Some(start) = &traj.capture_start {
        meta.set_capture_start(start).map_err(|why| Error::input(format!("{name}: the capture's start {why}")))?;
    }
    meta.reference_window_s = window;
    meta.markers_on_body = on_body.clone();
    meta.release_s = release.as_ref().map(|r| r.t_s);
    meta.held_base_rotation_rad = held_turn;
    for (table, track) in [("base", Some(&base)), ("tip", tip.as_ref())] {
        if let Some((d, a)) = track.and_then(|t| t.spread).filter(|s| s.0 > STILL_CLAMP_LIMIT.0 || s.1 > STILL_CLAMP_LIMIT.1) {
            warnings.push(format!(
                "{name}: the clamp of a still cluster ({}: {table}.still) strays {:.2} mm and {:.1} mrad from its mean pose: did it move? without still = true its pose is taken frame by frame",
                map.path.display(),
                d * 1e3,
                a * 1e3
            ));
        }
    }
    meta.import_warnings = warnings.clone();
    meta.finish(vec![]);
    meta.write(root)?;
    Ok(Imported {
        session: root.to_path_buf(),
        frames: n_frames,
        rate_hz,
        units: traj.units.clone(),
        missing: map.markers.iter().zip(&missing).map(|((l, k), n)| (l.clone(), *k, *n)).collect(),
        base_frames: base.poses.len(),
        base_rms_m: base.rms_m,
        unused_labels,
        base_spread: base.spread,
        tip_clamp: tip.map(|t| TipClampImported { frames: t.poses.len(), rms_m: t.rms_m, spread: t.spread }),
        markers_on_body: on_body,
        held_turn_rad: held_turn.map_or(0.0, |t| Vec3::from(t).norm()),
        release,
        warnings,
    })
}

/// The release of a rod held over the reference window.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    /// When the rod was let go \[s from the file's first frame\]: the
    /// onset of the first marker's departure.
    pub t_s: f64,
    /// The marker whose departure found it, and the frame time it was first
    /// beyond [`RELEASE_NOISE_FACTOR`] times its noise \[s\].
    pub label: String,
    pub detected_s: f64,
}

/// A marker further from its held pose than this many times its noise
/// (RMS distance) has left it.
pub const RELEASE_NOISE_FACTOR: f64 = 5.0;

/// The release: the first frame after the reference window from which a
/// marker stays beyond [`RELEASE_NOISE_FACTOR`] times its noise from its
/// held pose for three frames (a single outlier is no release), taken
/// back to the departure's onset: a rod let go from rest falls freely at
/// first ([`fall_onset`], fitted to the first millimetres of its markers
/// at the detecting marker's arc; the frame itself would be late by the
/// time the noise hides the motion, 10 ms for 0.1 mm of noise).
fn find_release(trial: &Trial, window: [f64; 2], held: &[Vec<Vec3>]) -> Option<Release> {
    let Trial { traj, map, rod, marker_cols, poses, world_markers } = *trial;
    let dt = 1.0 / traj.rate_hz;
    // Each marker's held place and its noise (RMS distance from it).
    let reference: Vec<Option<(Vec3, f64)>> = held
        .iter()
        .map(|pts| {
            (pts.len() >= REFERENCE_MIN_SAMPLES).then(|| {
                let mean = pts.iter().sum::<Vec3>() / pts.len() as f64;
                let noise = (pts.iter().map(|p| (p - mean).norm_squared()).sum::<f64>() / (pts.len() - 1) as f64).sqrt();
                (mean, noise.max(1e-6))
            })
        })
        .collect();
    // Per frame after the window: the marker furthest beyond the
    // threshold (its distance), if any is.
    let after: Vec<(usize, Option<(usize, f64)>)> = poses
        .iter()
        .filter(|(f, _)| traj.time_s(*f) > window[1])
        .map(|(f, base)| {
            let beyond = world_markers(*f)
                .into_iter()
                .enumerate()
                .filter_map(|(m, p)| {
                    let (mean, noise) = reference[m]?;
                    let d = (base.inverse().transform_point(&p?) - mean).norm();
                    (d > RELEASE_NOISE_FACTOR * noise).then_some((m, d / noise, d))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            (*f, beyond.map(|(m, _, d)| (m, d)))
        })
        .collect();
    let k = (0..after.len().saturating_sub(2)).find(|&k| after[k..k + 3].iter().all(|(_, b)| b.is_some()))?;
    let (f_detect, (m, _)) = (after[k].0, after[k].1?);
    let t_detect = traj.time_s(f_detect);
    // The departure of the detecting marker and those at its arc (a tip
    // face's markers move alike: their mean has less noise), each along
    // its own direction three frames on, from 0.1 s before the detection
    // until it is RELEASE_FIT_REACH_M away.
    let arc = |i: usize| rod.markers[marker_cols[i].1].arc_m;
    let group: Vec<usize> = (0..marker_cols.len()).filter(|&i| reference[i].is_some() && (arc(i) - arc(m)).abs() < 1e-9).collect();
    let along = |f: usize, i: usize| -> Option<Vec3> {
        let base = poses.iter().find(|(g, _)| *g == f)?.1;
        Some(base.inverse().transform_point(&world_markers(f)[i]?) - reference[i]?.0)
    };
    // At the release the rod is at rest and unstrained: every point
    // starts to fall freely, u = g tau^2 / 2 down gravity at first.
    let g = map.gravity_m_s2.norm();
    let down = map.gravity_m_s2 / g;
    let mut departure: Vec<(f64, f64)> = vec![];
    for (f, base) in poses.iter().filter(|(f, _)| traj.time_s(*f) > window[1] && *f + 10 >= f_detect) {
        let n = base.rot.transpose() * down;
        let seen: Vec<f64> = group.iter().filter_map(|&i| along(*f, i).map(|d| d.dot(&n))).collect();
        if seen.is_empty() {
            continue;
        }
        let u = seen.iter().sum::<f64>() / seen.len() as f64;
        departure.push((traj.time_s(*f), u));
        if *f > f_detect && u > RELEASE_FIT_REACH_M {
            break;
        }
    }
    let lo = departure.first().map_or(t_detect - dt, |p| p.0);
    let onset = fall_onset(&departure, g, lo, t_detect);
    Some(Release { t_s: onset.max(window[1]), label: map.markers[m].0.clone(), detected_s: t_detect })
}

/// How far the departure is followed to find its onset \[m\].
const RELEASE_FIT_REACH_M: f64 = 3e-3;

/// The onset `t_r` in `[lo, hi]` of a fall from rest seen as `pts` (time,
/// distance fallen): `u = g tau^2 / 2 + B tau^4` with `tau = t - t_r` (0
/// before), the free fall and the first correction as the rod's bending
/// takes it up. Least squares (B solved for each `t_r` on a grid of 0.05 ms).
fn fall_onset(pts: &[(f64, f64)], g: f64, lo: f64, hi: f64) -> f64 {
    let sse = |t_r: f64| {
        let tau2: Vec<f64> = pts.iter().map(|(t, _)| (t - t_r).max(0.0).powi(2)).collect();
        let rest: Vec<f64> = pts.iter().zip(&tau2).map(|((_, u), x)| u - 0.5 * g * x).collect();
        let s44: f64 = tau2.iter().map(|x| x.powi(4)).sum();
        let b = if s44 > 0.0 { rest.iter().zip(&tau2).map(|(r, x)| r * x * x).sum::<f64>() / s44 } else { 0.0 };
        rest.iter().zip(&tau2).map(|(r, x)| (r - b * x * x).powi(2)).sum::<f64>()
    };
    let steps = ((hi - lo) / 5e-5).ceil().max(1.0) as usize;
    (0..=steps).map(|i| lo + (hi - lo) * i as f64 / steps as f64).min_by(|a, b| sse(*a).total_cmp(&sse(*b))).unwrap_or(hi)
}

/// One trial's mapped markers and base poses: what the markers' places on
/// the body, the release and the design-distance check all read.
#[derive(Clone, Copy)]
struct Trial<'a> {
    traj: &'a Trajectories,
    map: &'a MocapMap,
    rod: &'a rod::Rod,
    marker_cols: &'a [(usize, usize)],
    poses: &'a [(usize, Pose)],
    world_markers: &'a dyn Fn(usize) -> Vec<Option<Vec3>>,
}

impl Trial<'_> {
    /// Frame `f`'s time \[s\].
    fn time_s(&self, f: usize) -> f64 {
        self.traj.time_s(f)
    }

    /// Where each mapped marker sits in the base frame over the frames
    /// `frames` selects (base pose known): per marker its samples.
    fn in_base_frame(&self, frames: impl Fn(usize) -> bool) -> Vec<Vec<Vec3>> {
        let mut out = vec![vec![]; self.marker_cols.len()];
        for (f, base) in self.poses.iter().filter(|(f, _)| frames(*f)) {
            for (m, p) in (self.world_markers)(*f).into_iter().enumerate() {
                if let Some(p) = p {
                    out[m].push(base.inverse().transform_point(&p));
                }
            }
        }
        out
    }
}

/// The rod file's rest frame of each marker's section, in the clamp's
/// frame (the base stream's).
fn rest_sections(rod: &rod::Rod, marker_cols: &[(usize, usize)]) -> Vec<(f64, Pose)> {
    // The rod's base is its mount on the clamp (what the base stream places).
    let arcs: Vec<f64> = marker_cols.iter().map(|&(_, k)| rod.markers[k].arc_m).collect();
    let model = rod::Model::new(rod, &arcs);
    let frames = model.frames(&nalgebra::DVector::zeros(model.n_dof()));
    arcs.iter().map(|&a| (a, frames.joints[model.joint_at(a)])).collect()
}

/// Each marker's place on the body, measured over the reference window
/// (the rod held in its rod-file shape): its mean position in the base
/// frame, as an offset in its section's rest frame. A window outside the
/// file, a marker seen in too few of its frames, or one that moves there
/// beyond its noise is refused, naming it.
fn markers_on_body(trial: &Trial, window: [f64; 2], samples: &[Vec<Vec3>]) -> Result<(Vec<session::MarkerOnBody>, Option<[f64; 3]>)> {
    let Trial { traj, map, rod, marker_cols, .. } = *trial;
    let name = traj.source.display();
    let end_s = traj.time_s(traj.frames.len().saturating_sub(1));
    if window[1] > end_s {
        return Err(Error::input(format!(
            "{name}: {}: reference.window_s = [{}, {}] ends after the file ({end_s:.2} s)",
            map.path.display(),
            window[0],
            window[1]
        )));
    }
    let sections = rest_sections(rod, marker_cols);
    // How far each marker goes from its held place after the window: the
    // deflection its data measure, which a creep must stay well below.
    let after = trial.in_base_frame(|f| trial.time_s(f) > window[1]);
    let mut held = vec![];
    for (m, pts) in samples.iter().enumerate() {
        let (label, k) = &map.markers[m];
        if pts.len() < REFERENCE_MIN_SAMPLES {
            return Err(Error::input(format!(
                "{name}: marker \"{label}\" is seen in {} frames of the reference window [{}, {}] s (at least {REFERENCE_MIN_SAMPLES})",
                pts.len(),
                window[0],
                window[1]
            )));
        }
        let mean = pts.iter().sum::<Vec3>() / pts.len() as f64;
        let spread_m = (pts.iter().map(|p| (p - mean).norm_squared()).sum::<f64>() / pts.len() as f64).sqrt();
        // The creep, which noise alone makes about noise sqrt(12 / n)
        // (frame-to-frame differences say what a sample's noise is).
        let n = pts.len() as f64;
        let creep_m = creep_of(pts);
        let noise = (pts.windows(2).map(|w| (w[1] - w[0]).norm_squared()).sum::<f64>() / (2.0 * (n - 1.0))).sqrt();
        let noise_bound_m = REFERENCE_MOTION_SIGMAS * noise * (12.0 / n).sqrt() + 5e-5;
        let deflection_m = after[m].iter().map(|p| (p - mean).norm()).fold(0.0, f64::max);
        let (allowed_m, basis) = match map.reference_max_creep_m {
            Some(c) => (c, format!("[reference] max_creep_m in {}", map.path.display())),
            None => (
                REFERENCE_CREEP_FRACTION * deflection_m,
                format!(
                    "{:.0} % of its largest deflection after the window, {:.2} mm; [reference] max_creep_m in {} declares another",
                    REFERENCE_CREEP_FRACTION * 100.0,
                    deflection_m * 1e3,
                    map.path.display()
                ),
            ),
        };
        if creep_m > allowed_m.max(noise_bound_m) {
            return Err(Error::input(format!(
                "{name}: marker \"{label}\" moves {:.2} mm during the reference window [{}, {}] s (its noise {:.3} mm), more than the window can absorb ({:.2} mm: {}): the rod is not held still there",
                creep_m * 1e3,
                window[0],
                window[1],
                noise * 1e3,
                allowed_m.max(noise_bound_m) * 1e3,
                if allowed_m >= noise_bound_m { basis } else { "its noise".into() }
            )));
        }
        // The place is the window's mean: uncertain by the noise of a mean
        // and by the creep (a ramp's RMS about its mean is its rise / sqrt 12).
        let place_sigma_m = (noise.powi(2) / pts.len() as f64 + creep_m.powi(2) / 12.0).sqrt();
        held.push((m, *k, label.clone(), mean, spread_m, pts.len(), creep_m, place_sigma_m));
    }
    // The rod's axis as the held pose registers it: the rotation about the
    // rod's base that brings the design positions closest to the measured
    // ones (the clamp's frame comes from the drawn cluster, and the rod
    // sits in the clamp as it was put: either turns the axis by degrees,
    // which the deflections would carry). The markers' own misplacements
    // are what is left, measured in the registered frame.
    let in_base = |p: &Vec3| rod.base.inverse().transform_point(p);
    let pairs: Vec<(Vec3, Vec3)> =
        held.iter().map(|(m, k, _, mean, ..)| (in_base(&sections[*m].1.transform_point(&rod.markers[*k].offset_body_m)), in_base(mean))).collect();
    let turn = rotation_about_origin(&pairs);
    let mut out = vec![];
    for (m, k, label, mean, spread_m, samples, creep_m, place_sigma_m) in held {
        let (arc_m, section) = sections[m];
        let section_in_base = rod.base.inverse().compose(&section);
        let offset = section_in_base.inverse().transform_point(&(turn.transpose() * in_base(&mean)));
        let design = rod.markers[k].offset_body_m;
        out.push(session::MarkerOnBody {
            marker: k,
            label,
            arc_m,
            offset_body_m: offset.into(),
            spread_m,
            design_distance_m: (offset - design).norm(),
            samples,
            creep_m,
            place_sigma_m,
        });
    }
    Ok((out, (turn != Mat3::identity()).then(|| lie::so3_log(&turn).into())))
}

/// The rotation `R` with `sum |R x - y|^2` least over the pairs `(x, y)`
/// (about the origin); the identity when the points leave it undetermined
/// (fewer than two directions from the origin).
fn rotation_about_origin(pairs: &[(Vec3, Vec3)]) -> Mat3 {
    let spread: Mat3 = pairs.iter().map(|(x, _)| x * x.transpose()).sum();
    let mut ev: Vec<f64> = spread.symmetric_eigen().eigenvalues.iter().map(|v| v.max(0.0)).collect();
    ev.sort_by(f64::total_cmp);
    if ev[1] < 1e-6 * ev[2].max(1e-30) {
        return Mat3::identity();
    }
    let h: Mat3 = pairs.iter().map(|(x, y)| x * y.transpose()).sum();
    let svd = h.svd(true, true);
    let (u, vt) = (svd.u.expect("u"), svd.v_t.expect("v_t"));
    let d = (vt.transpose() * u.transpose()).determinant().signum();
    vt.transpose() * Mat3::from_diagonal(&Vec3::new(1.0, 1.0, d)) * u.transpose()
}

/// Each mapped marker's place in the clamp's frame with the rod file's rod
/// in equilibrium under the declared gravity (`gravity_in_clamp`); `None`
/// where the statics cannot say (a rod held at both ends, no convergence).
fn sagged_positions(rod: &rod::Rod, marker_cols: &[(usize, usize)], gravity_in_clamp: Vec3) -> Option<Vec<Vec3>> {
    if rod.tip_condition != rod::TipCondition::Free {
        return None;
    }
    let mut rod = rod.clone();
    rod.gravity_m_s2 = gravity_in_clamp;
    let arcs: Vec<f64> = marker_cols.iter().map(|&(_, k)| rod.markers[k].arc_m).collect();
    let model = rod::Model::new(&rod, &arcs);
    let solved = rod::statics::solve(&model, &rod::Loads::gravity(), None, &rod::NewtonOptions::default()).ok()?;
    let frames = model.frames(&solved.q);
    Some(marker_cols.iter().zip(&arcs).map(|(&(_, k), &a)| frames.joints[model.joint_at(a)].transform_point(&rod.markers[k].offset_body_m)).collect())
}

/// How far a marker's expected sag may be for the rod to count as straight
/// there \[m\] (a design position is compared only there).
const STRAIGHT_WITHIN_M: f64 = 1e-3;
/// A deflection this large \[m\], expected and seen, says which way gravity
/// pulls; seen more than 60 degrees from the expected one, the map's
/// vertical axis is not the mocap's.
const SAG_SEEN_M: f64 = 3e-3;

/// What the markers say of the map and the rod file over the file's first
/// and last half seconds (the rod still at the start, settled at the end):
/// where the rod is expected straight (the rod file's rod under the
/// declared gravity hardly sags there, or the markers sit nearer the
/// straight rod than the sagged one: a support holds it), how far they sit
/// from their design positions (more than a mm is said once, without
/// `[reference]`: the error every later figure carries);
/// where it sags, whether they deflect the way the declared gravity pulls
/// (a wrong `[world] up` makes every fit of the session fail).
fn start_and_end_warnings(trial: &Trial, with_reference: bool) -> Vec<String> {
    let Trial { traj, map, rod, marker_cols, poses, .. } = *trial;
    let (t0, t1) = (trial.time_s(0), trial.time_s(traj.frames.len().saturating_sub(1)));
    let sections = rest_sections(rod, marker_cols);
    let design: Vec<Vec3> = marker_cols.iter().enumerate().map(|(m, &(_, k))| sections[m].1.transform_point(&rod.markers[k].offset_body_m)).collect();
    let mut warnings = vec![];
    for (at_start, within) in [(true, [t0, t0 + 0.5]), (false, [t1 - 0.5, t1])] {
        let in_window = |f: usize| (within[0]..=within[1]).contains(&trial.time_s(f));
        let clamp: Vec<&Pose> = poses.iter().filter(|(f, _)| in_window(*f)).map(|(_, p)| p).collect();
        if clamp.is_empty() {
            continue;
        }
        let gravity_in_clamp = lie::mean_pose(clamp.into_iter()).rot.transpose() * map.gravity_m_s2;
        let expected = sagged_positions(rod, marker_cols, gravity_in_clamp).unwrap_or_else(|| design.clone());
        let means: Vec<Option<Vec3>> = trial
            .in_base_frame(in_window)
            .iter()
            .map(|pts| (pts.len() >= REFERENCE_MIN_SAMPLES).then(|| pts.iter().sum::<Vec3>() / pts.len() as f64))
            .collect();
        let mut far = vec![];
        let mut against = vec![];
        for (m, mean) in means.iter().enumerate() {
            let Some(mean) = mean else { continue };
            let (seen, sag) = (mean - design[m], expected[m] - design[m]);
            // Expected straight: the rod file's rod hardly sags there, or
            // the marker sits nearer the straight rod than the sagged one
            // (a support holds it).
            let straight = sag.norm() < STRAIGHT_WITHIN_M || seen.norm() < (seen - sag).norm();
            if straight && seen.norm() > 1e-3 {
                far.push(format!("\"{}\" {:.1} mm", map.markers[m].0, seen.norm() * 1e3));
            }
            if sag.norm() > SAG_SEEN_M && seen.norm() > SAG_SEEN_M && seen.dot(&sag) < 0.5 * seen.norm() * sag.norm() {
                let angle = (seen.dot(&sag) / (seen.norm() * sag.norm())).clamp(-1.0, 1.0).acos().to_degrees();
                against.push(format!("\"{}\" {:.1} mm at {angle:.0} deg from its {:.1} mm", map.markers[m].0, seen.norm() * 1e3, sag.norm() * 1e3));
            }
        }
        let name = traj.source.display();
        if at_start && !with_reference && !far.is_empty() {
            warnings.push(format!(
                "{name}: in the first 0.5 s the markers sit from their design positions (rod file) where the rod is expected straight: {}; if the rod is held in its rod-file shape there, [reference] window_s = [from, to] in {} measures their places on the body instead",
                far.join(", "),
                map.path.display()
            ));
        }
        if !against.is_empty() && warnings.iter().all(|w| !w.contains("[world]")) {
            warnings.push(format!(
                "{name}: in the {} 0.5 s the markers deflect away from where the declared gravity would bend the rod file's rod ({}): the mocap's vertical axis is not the one [world] up (or rotation) in {} declares; every fit of this session fails until it is",
                if at_start { "first" } else { "last" },
                against.join(", "),
                map.path.display()
            ));
        }
    }
    warnings
}

/// By default a reference window may creep by this fraction of the
/// marker's largest deflection after it: what the fit absorbs as the
/// place's uncertainty without biasing the deflections it measures.
pub const REFERENCE_CREEP_FRACTION: f64 = 0.05;

/// Frame-to-frame motion above this fraction of the file's fastest marks
/// the release a found reference window must end before.
const FAST_MOTION_FRACTION: f64 = 0.25;

/// How far a held marker moved over its samples \[m\]: the rise of the
/// least-squares line through them (samples evenly spaced).
fn creep_of(pts: &[Vec3]) -> f64 {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return 0.0;
    }
    let mean = pts.iter().sum::<Vec3>() / n;
    let centre = (n - 1.0) / 2.0;
    let slope = pts.iter().enumerate().map(|(i, p)| (i as f64 - centre) * (p - mean)).sum::<Vec3>() / (n * (n * n - 1.0) / 12.0);
    slope.norm() * (n - 1.0)
}

/// `[reference] find_s`: the stillest window of `length_s` (the least
/// creep of its worst marker, [`creep_of`]) that
/// ends before the first fast motion of any marker in the base frame (the
/// release), or an error saying there is none.
fn stillest_window(trial: &Trial, length_s: f64) -> Result<[f64; 2]> {
    let Trial { traj, map, .. } = *trial;
    let frames: Vec<(usize, Vec<Option<Vec3>>)> = trial
        .poses
        .iter()
        .map(|(f, base)| (*f, (trial.world_markers)(*f).into_iter().map(|p| p.map(|p| base.inverse().transform_point(&p))).collect()))
        .collect();
    // Each frame's fastest marker step (a frame apart, both seen).
    let steps: Vec<f64> = frames
        .windows(2)
        .map(|w| {
            if w[1].0 != w[0].0 + 1 {
                return 0.0;
            }
            w[0].1.iter().zip(&w[1].1).filter_map(|(a, b)| Some((b.as_ref()? - a.as_ref()?).norm())).fold(0.0, f64::max)
        })
        .collect();
    let mut sorted = steps.clone();
    sorted.sort_by(f64::total_cmp);
    let (peak, median) = (sorted.last().copied().unwrap_or(0.0), sorted.get(sorted.len() / 2).copied().unwrap_or(0.0));
    let fast = (FAST_MOTION_FRACTION * peak).max(20.0 * median);
    let end = steps.iter().position(|s| *s > fast).map_or(frames.len(), |k| k + 1);
    let span = (length_s * traj.rate_hz).round() as usize;
    let no_window = || {
        Error::input(format!(
            "{}: {}: reference.find_s = {length_s}: no {length_s} s of frames before the first fast motion (at {:.3} s)",
            traj.source.display(),
            map.path.display(),
            frames.get(end.min(frames.len().saturating_sub(1))).map_or(0.0, |f| traj.time_s(f.0))
        ))
    };
    if span < REFERENCE_MIN_SAMPLES || span > end {
        return Err(no_window());
    }
    // The worst marker's creep (one seen too seldom: no still window).
    let creep = |w: &[(usize, Vec<Option<Vec3>>)]| -> f64 {
        (0..w[0].1.len())
            .map(|m| {
                let seen: Vec<Vec3> = w.iter().filter_map(|f| f.1[m]).collect();
                if seen.len() < REFERENCE_MIN_SAMPLES {
                    f64::INFINITY
                } else {
                    creep_of(&seen)
                }
            })
            .fold(0.0, f64::max)
    };
    let best = (0..=end - span)
        .filter(|&k| frames[k + span - 1].0 - frames[k].0 == span - 1)
        .min_by(|&a, &b| creep(&frames[a..a + span]).total_cmp(&creep(&frames[b..b + span])));
    let k = best.ok_or_else(no_window)?;
    Ok([traj.time_s(frames[k].0), traj.time_s(frames[k + span - 1].0)])
}

/// Fewest frames a reference window must see a marker in.
const REFERENCE_MIN_SAMPLES: usize = 10;
/// A marker moving more than this many times its noise during the
/// reference window is not held still.
const REFERENCE_MOTION_SIGMAS: f64 = 5.0;

/// The session directory of each file: `out` itself for one file, one
/// directory per file under `out` (named by the file's stem) for several.
pub fn session_dirs(files: &[PathBuf], out: &Path) -> Result<Vec<SessionDir>> {
    if files.is_empty() {
        return Err(Error::input("no C3D file given"));
    }
    if files.len() == 1 {
        return Ok(vec![SessionDir::new(out)]);
    }
    let mut dirs: Vec<SessionDir> = vec![];
    for f in files {
        let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).ok_or_else(|| Error::input(format!("{}: not a file name", f.display())))?;
        let dir = SessionDir::new(out.join(&stem));
        if dirs.contains(&dir) {
            return Err(Error::input(format!("{}: two files named '{stem}' would import into one session ({})", f.display(), dir.path().display())));
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// Imports every file into its session ([`session_dirs`]) with `read`
/// (C3D, or a table), reporting progress per file.
pub fn import_files(
    files: &[PathBuf],
    map: &MocapMap,
    rod: &rod::Rod,
    out: &Path,
    read: &dyn Fn(&Path) -> Result<Trajectories>,
    progress: &dyn crate::Progress,
) -> Result<Vec<Imported>> {
    let dirs = session_dirs(files, out)?;
    let task = progress.task("import", Some(files.len() as u64));
    let mut done = vec![];
    for (k, (f, d)) in files.iter().zip(&dirs).enumerate() {
        task.message(&f.display().to_string());
        done.push(import_trajectories(&read(f)?, map, d, rod)?);
        task.set(k as u64 + 1);
    }
    Ok(done)
}
