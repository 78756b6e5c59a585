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
//! - `session.toml`: the world frame (gravity along the vertical axis), and
//!   the file, its rate, units and the map verbatim.

use crate::error::{Context, Error, Result};
use lie::{Mat3, Pose, Vec3};
use serde::Deserialize;
use session::{MarkerRow, SessionDir, SessionMeta};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The stream of base poses a motion-capture session carries.
pub const BASE_STREAM: &str = "mocap_base";
/// Its columns: world position \[m\] and rotation vector \[rad\].
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
}

/// A validated map file.
#[derive(Clone, Debug, PartialEq)]
pub struct MocapMap {
    /// (C3D label, the rod file's marker index).
    pub markers: Vec<(String, usize)>,
    /// Rotation of the mocap's frame into the world (vertical axis to +z).
    pub world_from_mocap: Mat3,
    pub gravity_m_s2: Vec3,
    pub base: BaseSource,
    /// The map file, verbatim (kept in session.toml).
    pub text: String,
    pub path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMap {
    markers: BTreeMap<String, usize>,
    #[serde(default)]
    world: RawWorld,
    base: RawBase,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    #[serde(default = "default_up")]
    up: String,
    #[serde(default = "default_g")]
    gravity_m_s2: f64,
}

impl Default for RawWorld {
    fn default() -> Self {
        RawWorld { up: default_up(), gravity_m_s2: default_g() }
    }
}

fn default_up() -> String {
    "+z".into()
}
fn default_g() -> f64 {
    9.81
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBase {
    labels: Option<Vec<String>>,
    positions_m: Option<Vec<[f64; 3]>>,
    position_m: Option<[f64; 3]>,
    rpy_deg: Option<[f64; 3]>,
    #[serde(default)]
    still: bool,
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
        let world_from_mocap = match raw.world.up.as_str() {
            // Vicon, Qualisys: z up.
            "+z" | "z" => Mat3::identity(),
            // OptiTrack (Motive), many game-engine exports: y up, x kept.
            "+y" | "y" => Mat3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0),
            other => return Err(bad("world.up", format!("'{other}': the mocap's vertical axis, \"+z\" (Vicon, Qualisys) or \"+y\" (OptiTrack)"))),
        };
        let g = raw.world.gravity_m_s2;
        if !(g.is_finite() && g > 0.0) {
            return Err(bad("world.gravity_m_s2", format!("must be positive, got {g}")));
        }
        let b = &raw.base;
        let base = match (&b.labels, &b.positions_m, b.position_m, b.rpy_deg) {
            (Some(labels), Some(pos), None, None) => {
                if labels.len() != pos.len() {
                    return Err(bad("base", format!("{} labels but {} positions_m", labels.len(), pos.len())));
                }
                if labels.len() < 3 {
                    return Err(bad("base.labels", "a cluster needs at least three markers".into()));
                }
                if let Some(l) = labels.iter().find(|l| raw.markers.contains_key(*l)) {
                    return Err(bad("base.labels", format!("\"{l}\" is also a rod marker in [markers]")));
                }
                for (i, l) in labels.iter().enumerate() {
                    if labels[..i].contains(l) {
                        return Err(bad("base.labels", format!("\"{l}\" is named twice")));
                    }
                }
                if pos.iter().flatten().any(|v| !v.is_finite()) {
                    return Err(bad("base.positions_m", "must be finite".into()));
                }
                let positions_m: Vec<Vec3> = pos.iter().map(|p| Vec3::from(*p)).collect();
                // Not on a line: the cluster must fix the rotation.
                let c = positions_m.iter().sum::<Vec3>() / positions_m.len() as f64;
                let spread = positions_m.iter().map(|p| (p - c) * (p - c).transpose()).sum::<Mat3>();
                let eig = spread.symmetric_eigen().eigenvalues;
                let mut e: Vec<f64> = eig.iter().copied().collect();
                e.sort_by(f64::total_cmp);
                if e[1] < 1e-10 * e[2].max(1e-30) || e[2] <= 0.0 {
                    return Err(bad("base.positions_m", "the cluster's markers lie on a line: they cannot give the base's rotation".into()));
                }
                BaseSource::Cluster { labels: labels.clone(), positions_m, still: b.still }
            }
            (None, None, Some(p), r) => {
                if b.still {
                    return Err(bad("base.still", "is for a clamp cluster (a fixed pose is still already)".into()));
                }
                let r = r.unwrap_or([0.0; 3]);
                if p.iter().chain(r.iter()).any(|v| !v.is_finite()) {
                    return Err(bad("base", "position_m and rpy_deg must be finite".into()));
                }
                BaseSource::Fixed(Pose::from_rpy(r[0].to_radians(), r[1].to_radians(), r[2].to_radians(), Vec3::from(p)))
            }
            _ => return Err(bad(
                "base",
                "give a clamp cluster (labels and positions_m in the rod's base frame) or a fixed pose in the world (position_m, optional rpy_deg), not both"
                    .into(),
            )),
        };
        let mut markers: Vec<(String, usize)> = raw.markers.into_iter().collect();
        markers.sort_by_key(|m| m.1);
        Ok(MocapMap { markers, world_from_mocap, gravity_m_s2: Vec3::new(0.0, 0.0, -g), base, text, path: path.to_path_buf() })
    }
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
    /// What the person importing must know (a "still" clamp that moved).
    pub warnings: Vec<String>,
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

/// A C3D sample: `None` when the writer marked it invalid (negative
/// residual) or wrote the all-zero point some exporters use for a gap.
fn sample(p: &c3dio::MarkerPoint) -> Option<Vec3> {
    let v = Vec3::new(p.point[0] as f64, p.point[1] as f64, p.point[2] as f64);
    (p.residual >= 0.0 && v.iter().all(|x| x.is_finite()) && v != Vec3::zeros()).then_some(v)
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

/// Reads `file` and writes the session `out` (a new or empty directory).
pub fn import_c3d(file: &Path, map: &MocapMap, out: &SessionDir) -> Result<Imported> {
    let name = file.display();
    let bytes = std::fs::read(file).map_err(|e| Error::input(format!("{name}: cannot read: {e}")))?;
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
    let column = |label: &str, field: &str| -> Result<usize> {
        labels.iter().position(|l| l == label).ok_or_else(|| {
            let shown: Vec<&str> = labels.iter().take(12).map(String::as_str).collect();
            Error::input(format!(
                "{name}: no marker labelled \"{label}\" ({}: {field}); the file has {} labels: {}{}",
                map.path.display(),
                labels.len(),
                shown.join(", "),
                if labels.len() > 12 { ", ..." } else { "" }
            ))
        })
    };
    let marker_cols: Vec<(usize, usize)> =
        map.markers.iter().map(|(label, k)| Ok((column(label, &format!("markers.\"{label}\""))?, *k))).collect::<Result<_>>()?;
    let base_cols: Vec<usize> = match &map.base {
        BaseSource::Cluster { labels: ls, .. } => ls.iter().map(|l| column(l, "base.labels")).collect::<Result<_>>()?,
        BaseSource::Fixed(_) => vec![],
    };
    let to_world = |v: Vec3| map.world_from_mocap * (v * scale);
    let t_of = |f: usize| f as f64 / rate_hz;

    // The base, frame by frame.
    let (mut sq_sum, mut sq_n) = (0.0, 0usize);
    let mut poses: Vec<(usize, Pose)> = vec![];
    for f in 0..n_frames {
        let pose = match &map.base {
            BaseSource::Fixed(p) => Some(*p),
            BaseSource::Cluster { positions_m, .. } => {
                let pairs: Option<Vec<(Vec3, Vec3)>> =
                    base_cols.iter().zip(positions_m).map(|(&c, local)| sample(&points.points[f][c]).map(|p| (*local, to_world(p)))).collect();
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
    if poses.is_empty() {
        return Err(Error::input(format!("{name}: the clamp cluster ({}: base.labels) is never complete: no frame gives the base pose", map.path.display())));
    }
    let base_rms_m = if sq_n > 0 { (sq_sum / sq_n as f64).sqrt() } else { 0.0 };
    if base_rms_m > CLUSTER_RMS_LIMIT_M {
        return Err(Error::input(format!(
            "{name}: the clamp cluster's markers sit {:.1} mm RMS from {}: base.positions_m (at most {} mm): the map's cluster is not this clamp's (positions in another unit or frame, or labels swapped)",
            base_rms_m * 1e3,
            map.path.display(),
            CLUSTER_RMS_LIMIT_M * 1e3
        )));
    }
    // A still clamp: its mean pose, and how far any frame strays from it.
    let mut base_spread = (0.0f64, 0.0f64);
    if let BaseSource::Cluster { still: true, .. } = &map.base {
        let mean = lie::mean_pose(poses.iter().map(|p| &p.1));
        for (_, p) in &poses {
            base_spread.0 = base_spread.0.max((p.pos - mean.pos).norm());
            base_spread.1 = base_spread.1.max(lie::so3_log(&(mean.rot.transpose() * p.rot)).norm());
        }
        for p in &mut poses {
            p.1 = mean;
        }
    }
    // Nothing is written until the file and the map have been checked: a
    // refused import leaves no half session behind.
    let root = out.path();
    if out.exists() && !out.contents().is_empty() {
        return Err(Error::input(format!("{}: not empty (import into a new directory)", root.display())));
    }
    std::fs::create_dir_all(root).map_err(|e| Error::io(format!("{}: cannot create: {e}", root.display())))?;
    let first_frame = points.first_frame as i64;
    let mut rows = Vec::with_capacity(n_frames * marker_cols.len());
    let mut missing = vec![0usize; marker_cols.len()];
    for f in 0..n_frames {
        let t_s = t_of(f);
        for (m, &(col, k)) in marker_cols.iter().enumerate() {
            let p = sample(&points.points[f][col]).map(to_world);
            if p.is_none() {
                missing[m] += 1;
            }
            let w = p.unwrap_or(Vec3::repeat(f64::NAN));
            rows.push(MarkerRow {
                frame: first_frame + f as i64,
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

    let mut writer =
        session::StreamWriter::create(root, BASE_STREAM, BASE_COLUMNS.iter().map(|c| c.to_string()).collect(), std::time::Duration::from_secs(3600))?;
    for (f, p) in &poses {
        writer.push((t_of(*f) * 1e9).round() as i64, &lie::trajectory::pose_to_ur(p))?;
    }
    writer.flush()?;
    drop(writer);
    let base_frames = poses.len();

    let used: Vec<&str> = map
        .markers
        .iter()
        .map(|m| m.0.as_str())
        .chain(match &map.base {
            BaseSource::Cluster { labels, .. } => labels.iter().map(String::as_str).collect::<Vec<_>>(),
            BaseSource::Fixed(_) => vec![],
        })
        .collect();
    let unused_labels = labels.iter().filter(|l| !used.contains(&l.as_str())).cloned().collect();
    let frames_w = session::RigFrames { gravity_m_s2: map.gravity_m_s2.into(), ..session::RigFrames::default() };
    let mut meta = SessionMeta::start(
        &format!("imported from {name}: {n_frames} frames at {rate_hz} Hz, units '{units}', {} labels", labels.len()),
        &map.path.display().to_string(),
        &map.text,
        frames_w,
    );
    meta.clock = format!("motion capture: t = frame / {rate_hz} Hz from the file's first frame ({first_frame})");
    meta.finish(vec![]);
    meta.write(root)?;
    Ok(Imported {
        session: root.to_path_buf(),
        frames: n_frames,
        rate_hz,
        units,
        missing: map.markers.iter().zip(&missing).map(|((l, k), n)| (l.clone(), *k, *n)).collect(),
        base_frames,
        base_rms_m,
        unused_labels,
        base_spread: matches!(map.base, BaseSource::Cluster { still: true, .. }).then_some(base_spread),
        warnings: if base_spread.0 > STILL_CLAMP_LIMIT.0 || base_spread.1 > STILL_CLAMP_LIMIT.1 {
            vec![format!(
                "{name}: the clamp of a still cluster ({}: base.still) strays {:.2} mm and {:.1} mrad from its mean pose: did it move? without still = true its pose is taken frame by frame",
                map.path.display(),
                base_spread.0 * 1e3,
                base_spread.1 * 1e3
            )]
        } else {
            vec![]
        },
    })
}

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

/// Imports every file into its session ([`session_dirs`]), reporting
/// progress per file.
pub fn import_files(files: &[PathBuf], map: &MocapMap, out: &Path, progress: &dyn crate::Progress) -> Result<Vec<Imported>> {
    let dirs = session_dirs(files, out)?;
    let task = progress.task("import c3d", Some(files.len() as u64));
    let mut done = vec![];
    for (k, (f, d)) in files.iter().zip(&dirs).enumerate() {
        task.message(&f.display().to_string());
        done.push(import_c3d(f, map, d)?);
        task.set(k as u64 + 1);
    }
    Ok(done)
}
