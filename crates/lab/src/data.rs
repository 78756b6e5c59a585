//! A recorded session read once for the model stages (identify from
//! sessions, validate), in the rig's world frame: its tracked markers by
//! frame, the robot's flange in the world, and the streams asked for, all
//! on the host clock in seconds since the session's start.

use crate::error::{Context, Error, Result};
use crate::loads::StreamRequest;
use identify::sessions::{SessionData, Stream};
use lie::{Pose, Vec3};
use rod::Sighting;
use session::{flags, Damaged, MarkerRow, SessionDir, Table};
use std::collections::BTreeMap;

/// What carries the rod's base through a session, by host time: a robot's
/// flange poses (UR form, in the robot's base frame, placed in the world by
/// the rig's `world_from_robot`, returned with them), or the clamp's poses
/// of a motion-capture session (already in the world: returned with the
/// identity). `None` when the session has neither. Damaged chunks are
/// refused, or left out with a warning each into `warnings`.
pub fn base_log(dir: &SessionDir, world_from_robot: Pose, damaged: Damaged, warnings: &mut Vec<String>) -> Result<Option<(Vec<session::TcpSample>, Pose)>> {
    if let Some((tcp, w)) = session::read_tcp_poses_or_skip(dir.path(), damaged).input(dir.path().display())? {
        warnings.extend(w);
        if tcp.is_empty() {
            return Err(Error::input(format!("{}: the robot stream has no rows", dir.stream("robot").display())));
        }
        return Ok(Some((tcp, world_from_robot)));
    }
    if !dir.has_stream(crate::c3d::BASE_STREAM) {
        return Ok(None);
    }
    Ok(Some((world_pose_stream(dir, crate::c3d::BASE_STREAM, damaged, warnings)?, Pose::identity())))
}

/// A stream of poses in the world (columns [`crate::c3d::BASE_COLUMNS`], as
/// a motion-capture import writes a clamp's), time-sorted, in UR form.
fn world_pose_stream(dir: &SessionDir, name: &str, damaged: Damaged, warnings: &mut Vec<String>) -> Result<Vec<session::TcpSample>> {
    let path = dir.stream(name);
    let (t, w) = Table::read_chunks_or_skip(&path, damaged)?;
    warnings.extend(w);
    let th = t.i64("t_host_ns").input(path.display())?;
    let cols: Vec<Vec<f64>> = crate::c3d::BASE_COLUMNS.iter().map(|c| t.f64(c)).collect::<Result<_, _>>().input(path.display())?;
    let mut out: Vec<session::TcpSample> = (0..th.len()).map(|k| session::TcpSample { t_host_ns: th[k], pose: std::array::from_fn(|i| cols[i][k]) }).collect();
    if out.is_empty() {
        return Err(Error::input(format!("{}: no rows", path.display())));
    }
    out.sort_by_key(|s| s.t_host_ns);
    Ok(out)
}

/// A held tip's frame in the world over time (seconds of the host clock,
/// strictly increasing: a repeated time, after a reconnect, keeps its
/// first sample), from the stream holding it (`[tip_hold]` of the loads
/// file `loads_name`): a robot's flange, or a clamp's poses in the world.
pub fn tip_clamp_log(
    dir: &SessionDir,
    tip: &identify::sessions::TipHoldStream,
    loads_name: &str,
    damaged: Damaged,
    warnings: &mut Vec<String>,
) -> Result<Vec<(f64, Pose)>> {
    let name = tip.stream_name();
    let field = if tip.is_robot() { "robot" } else { "stream" };
    if !dir.has_stream(name) {
        return Err(Error::input(format!(
            "{loads_name}: [tip_hold] {field} = \"{name}\": session {} has no such stream ({})",
            dir.path().display(),
            dir.describe_streams()
        )));
    }
    let samples = if tip.is_robot() {
        let (tcp, w) = session::read_tcp_poses_of(dir.path(), name, damaged).input(dir.path().display())?.unwrap_or_default();
        warnings.extend(w);
        tcp
    } else {
        world_pose_stream(dir, name, damaged, warnings)?
    };
    if samples.is_empty() {
        return Err(Error::input(format!("{}: the stream holding the tip has no rows", dir.stream(name).display())));
    }
    let mut clamp: Vec<(f64, Pose)> = Vec::with_capacity(samples.len());
    for s in &samples {
        let t = s.t_host_ns as f64 * 1e-9;
        if clamp.last().is_none_or(|(last, _)| t > *last) {
            clamp.push((t, tip.tip_in_world(&lie::trajectory::pose_from_ur(&s.pose))));
        }
    }
    Ok(clamp)
}

/// A held tip's hold over time: its clamp's recorded frames (world, host
/// seconds) interpolated, as the rod's `[tip] condition` holds it.
pub struct TipHoldLog {
    path: lie::trajectory::PoseTrajectory,
    condition: rod::TipCondition,
}

impl TipHoldLog {
    /// From [`tip_clamp_log`]'s samples.
    pub fn new(clamp: &[(f64, Pose)], condition: rod::TipCondition, what: &std::path::Path) -> Result<TipHoldLog> {
        let path = lie::trajectory::PoseTrajectory::new(clamp.iter().copied()).map_err(|e| Error::input(format!("{}: {e}", what.display())))?;
        Ok(TipHoldLog { path, condition })
    }

    /// The hold at host time `t_s`; `None` outside the log.
    pub fn hold_at(&self, t_s: f64) -> Option<rod::TipHold> {
        rod::TipHold::at(self.condition, &self.path.at(t_s).ok()?)
    }
}

/// The rod with each marker the session measured on the body (its
/// `session.toml`'s `marker_on_body`, from a reference window) in place of
/// the rod file's design position, and a line saying which were used (none
/// without measured markers).
pub fn rod_for_session(rod: &rod::Rod, meta: Option<&session::SessionMeta>, dir: &SessionDir) -> (rod::Rod, Option<String>) {
    let measured = meta.map_or(&[][..], |m| m.markers_on_body.as_slice());
    let mut out = rod.clone();
    // The base as the held pose registered it (the markers were measured in it).
    if let Some(turn) = meta.and_then(|m| m.held_base_rotation_rad) {
        out.base = rod.base.compose(&lie::Pose { rot: lie::exp(&lie::stack(&Vec3::from(turn), &Vec3::zeros())).rot, pos: Vec3::zeros() });
    }
    let mut used = vec![];
    let n_markers = out.markers.len();
    for m in measured.iter().filter(|m| m.marker < n_markers) {
        out.markers[m.marker] = rod::Marker { arc_m: m.arc_m, offset_body_m: Vec3::from(m.offset_body_m) };
        used.push(m.marker.to_string());
    }
    let note = (!used.is_empty()).then(|| {
        format!(
            "{}: markers {} at their places on the body measured over the reference window (session.toml), the others at the rod file's design positions; the rod's base turned {:.1} mrad from its mount, as the held pose registers it",
            dir.path().display(),
            used.join(", "),
            meta.and_then(|m| m.held_base_rotation_rad).map_or(0.0, |t| Vec3::from(t).norm() * 1e3)
        )
    });
    (out, note)
}

/// Each of `n_markers` markers' place uncertainty \[m\]: what a reference
/// window measured (`session.toml`'s `marker_on_body`), 0 for the others.
pub fn marker_place_sigmas(meta: Option<&session::SessionMeta>, n_markers: usize) -> Vec<f64> {
    let mut out = vec![0.0; n_markers];
    for m in meta.map_or(&[][..], |m| m.markers_on_body.as_slice()).iter().filter(|m| m.marker < n_markers) {
        out[m.marker] = m.place_sigma_m;
    }
    out
}

/// "no robot stream and no motion-capture base" for `dir`.
pub fn no_base(dir: &SessionDir) -> String {
    format!(
        "{}: the session has no robot stream (streams/robot) and no motion-capture base (streams/{}): no base pose",
        dir.path().display(),
        crate::c3d::BASE_STREAM
    )
}

/// Tracked frames: `(frame, t_host_ns, marker sightings)`, time-sorted;
/// a marker missing, merged, disagreeing or not finite is `None`; one a
/// camera set's single camera saw is its ray.
pub type Frames = Vec<(i64, i64, Vec<Option<Sighting>>)>;

/// A marker table's rows and, for a camera set's, how each row was seen
/// (its rays).
pub struct Tracked {
    pub rows: Vec<MarkerRow>,
    pub views: Option<Vec<session::MarkerViews>>,
}

/// Reads a marker table with its camera set's columns, if it has them.
pub fn read_tracked(path: &std::path::Path) -> Result<Tracked> {
    let rows = session::read_markers(path).input(path.display())?;
    let views = session::read_marker_views(path).input(path.display())?.map(|(v, _)| v);
    Ok(Tracked { rows, views })
}

/// A row's sighting: its point, its ray (flag RAY with the table's ray
/// columns), or none.
fn sighting_of(r: &MarkerRow, views: Option<&session::MarkerViews>) -> Option<Sighting> {
    let p = Vec3::new(r.x_m, r.y_m, r.z_m);
    if !p.iter().all(|v| v.is_finite()) {
        return None;
    }
    if r.flags & flags::NO_POSITION == 0 {
        return Some(Sighting::point(p));
    }
    if r.flags & (flags::NO_POSITION & !flags::RAY) == 0 {
        return Sighting::ray(p, Vec3::from(views?.ray));
    }
    None
}

/// Groups marker rows by frame for a rod with `n_markers` markers;
/// `t_of_row` gives a row's host time. Errors (input) name `path`.
pub fn frames_of(tracked: &Tracked, n_markers: usize, path: &std::path::Path, t_of_row: impl Fn(&MarkerRow) -> i64) -> Result<Frames> {
    let mut by_frame: BTreeMap<i64, (i64, Vec<Option<Sighting>>)> = BTreeMap::new();
    for (k, r) in tracked.rows.iter().enumerate() {
        if r.marker as usize >= n_markers {
            return Err(Error::input(format!("{}: frame {}: marker {} but the rod file has {n_markers} markers", path.display(), r.frame, r.marker)));
        }
        let e = by_frame.entry(r.frame).or_insert_with(|| (t_of_row(r), vec![None; n_markers]));
        if let Some(seen) = sighting_of(r, tracked.views.as_ref().and_then(|v| v.get(k))) {
            e.1[r.marker as usize] = Some(seen);
        }
    }
    if by_frame.is_empty() {
        return Err(Error::input(format!("{}: no rows", path.display())));
    }
    let mut frames: Frames = by_frame.into_iter().map(|(f, (t, m))| (f, t, m)).collect();
    frames.sort_by_key(|f| f.1);
    Ok(frames)
}

/// Reads `dir` for a rod with `n_markers` markers, with the streams
/// `requests` ask for; damaged chunks refused or left out (their warnings
/// in the result). Errors (input) name the session and what is missing.
pub fn load(dir: &SessionDir, n_markers: usize, requests: &[StreamRequest], damaged: Damaged) -> Result<SessionData> {
    let root = dir.path();
    if !dir.exists() {
        return Err(Error::input(format!("{}: not a session directory", root.display())));
    }
    // session.toml places everything in the world (gravity, the robot, the
    // table): without it the streams cannot be read as the rig recorded them.
    let meta = dir.meta()?.ok_or_else(|| {
        Error::input(format!(
            "{}: no session.toml: not a session rodlab recorded, imported or made (its frames and gravity are unknown)",
            dir.meta_path().display()
        ))
    })?;
    let frames_w = meta.frames;
    let mut warnings = vec![];
    let markers_path = dir.markers();
    if !markers_path.is_file() {
        return Err(Error::input(format!(
            "{}: the session has no markers.parquet (track its video first: rodlab track {}/<video> --camera camera.toml --out {})",
            root.display(),
            root.display(),
            markers_path.display()
        )));
    }
    let table = read_tracked(&markers_path)?;
    let rows = &table.rows;
    if rows.is_empty() {
        return Err(Error::input(format!("{}: no rows", markers_path.display())));
    }
    if rows.iter().any(|r| r.t_host_ns.is_none()) {
        return Err(Error::input(format!(
            "{}: no t_host_ns column: track the session's video with its frames table so that markers and robot share the host clock",
            markers_path.display()
        )));
    }
    let tracked = frames_of(&table, n_markers, &markers_path, |r| r.t_host_ns.unwrap_or(0))?;
    // The base: a robot's flange, or (a motion-capture session) the pose
    // of the clamp in the world.
    let world_from_robot = frames_w.world_from_robot();
    let (tcp, world_from_base_log) = base_log(dir, world_from_robot, damaged, &mut warnings)?.ok_or_else(|| Error::input(no_base(dir)))?;
    let flange: Vec<(f64, Pose)> =
        tcp.iter().map(|s| (s.t_host_ns as f64 * 1e-9, world_from_base_log.compose(&lie::trajectory::pose_from_ur(&s.pose)))).collect();
    let mut streams = BTreeMap::new();
    for req in requests {
        if streams.contains_key(&req.stream) {
            continue;
        }
        if !dir.has_stream(&req.stream) {
            return Err(Error::input(format!("{}: no stream '{}' in session {} ({})", req.asked_by, req.stream, root.display(), dir.describe_streams())));
        }
        let columns: Vec<&str> = requests.iter().filter(|r| r.stream == req.stream).flat_map(|r| r.columns.iter().map(String::as_str)).collect();
        let mut stream = read_stream(dir, &req.stream, &columns, damaged, &mut warnings, |c| {
            Error::input(format!("{}: stream '{}' of session {} has no column '{c}'", req.asked_by, req.stream, root.display()))
        })?;
        if let Some(w) = requests.iter().filter(|r| r.stream == req.stream).find_map(|r| r.robot_base_wrench.as_ref()) {
            into_sensor_frame(&mut stream, w, &flange, &world_from_robot);
        }
        streams.insert(req.stream.clone(), stream);
    }
    Ok(SessionData {
        name: dir.name(),
        flange,
        tip_clamp: vec![],
        markers: tracked.iter().map(|(_, t, m)| (*t as f64 * 1e-9, m.clone())).collect(),
        streams,
        gravity_m_s2: frames_w.gravity(),
        warnings,
        loaded_since_s: None,
    })
}

/// A rod held by a support until its release is not in equilibrium under
/// its loads: the frames of `s` before the release (`dir`'s session.toml,
/// `release_s`) are left out of the search for holds, and the loads count
/// from it. The release time, where the session has one.
pub fn from_release(dir: &SessionDir, s: &mut SessionData) -> Option<f64> {
    let release_s = dir.meta().ok().flatten().and_then(|m| m.release_s)?;
    s.markers.retain(|(t, _)| *t >= release_s);
    s.loaded_since_s = Some(release_s);
    Some(release_s)
}

/// Stream `name` of `dir` with `columns`, sorted by host time (chunks are
/// in order; a restart may repeat times); damaged chunks refused or left
/// out with a warning each into `warnings`. A missing column is
/// `no_column`'s error.
pub fn read_stream(
    dir: &SessionDir,
    name: &str,
    columns: &[&str],
    damaged: Damaged,
    warnings: &mut Vec<String>,
    no_column: impl Fn(&str) -> Error,
) -> Result<Stream> {
    let (t, w) = Table::read_chunks_or_skip(&dir.stream(name), damaged)?;
    warnings.extend(w);
    let th = t.i64("t_host_ns")?;
    let mut read = BTreeMap::new();
    for c in columns {
        if !t.has(c) {
            return Err(no_column(c));
        }
        read.insert(c.to_string(), t.f64(c)?);
    }
    let mut order: Vec<usize> = (0..th.len()).collect();
    order.sort_by_key(|&i| th[i]);
    Ok(Stream {
        t_s: order.iter().map(|&i| th[i] as f64 * 1e-9).collect(),
        columns: read.into_iter().map(|(k, v)| (k, order.iter().map(|&i| v[i]).collect())).collect(),
    })
}

/// Rotates a wrench the robot reports in its base frame into the sensor
/// frame, at each sample with the flange pose nearest in time (the robot's
/// own stream: the same sample).
fn into_sensor_frame(stream: &mut Stream, w: &crate::loads::RobotBaseWrench, flange_world: &[(f64, Pose)], world_from_robot: &Pose) {
    let times: Vec<f64> = flange_world.iter().map(|f| f.0).collect();
    let robot_from_world = world_from_robot.inverse();
    let cols: Vec<Vec<f64>> = w.columns.iter().map(|c| stream.columns[c].clone()).collect();
    let mut out: Vec<Vec<f64>> = (0..6).map(|_| Vec::with_capacity(stream.t_s.len())).collect();
    for (i, t) in stream.t_s.iter().enumerate() {
        let k = times.partition_point(|x| x < t).min(times.len() - 1);
        let k = if k > 0 && (times[k - 1] - t).abs() < (times[k] - t).abs() { k - 1 } else { k };
        let robot_sensor = robot_from_world.compose(&flange_world[k].1).compose(&w.sensor_in_flange);
        let to_sensor = robot_sensor.rot.transpose();
        let f = to_sensor * Vec3::new(cols[0][i], cols[1][i], cols[2][i]);
        let m = to_sensor * Vec3::new(cols[3][i], cols[4][i], cols[5][i]);
        for (j, v) in f.iter().chain(m.iter()).enumerate() {
            out[j].push(*v);
        }
    }
    for (c, v) in w.columns.iter().zip(out) {
        stream.columns.insert(c.clone(), v);
    }
}
