//! A recorded session read once for the model stages (identify from
//! sessions, validate), in the rig's world frame: its tracked markers by frame,
//! the robot's flange in the world, and the streams asked for, all on the
//! host clock in seconds since the session's start.

use crate::input_error;
use anyhow::Result;
use identify::sessions::{SessionData, Stream};
use lie::{Pose, Vec3};
use session::{flags, SessionMeta, Table};
use std::collections::BTreeMap;
use std::path::Path;

/// A stream the caller needs, and who asks (for the error message).
pub struct StreamRequest<'a> {
    pub stream: &'a str,
    pub columns: Vec<&'a str>,
    pub asked_by: String,
}

/// The session's name: its directory's last component.
pub fn session_name(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| dir.display().to_string())
}

/// Reads `dir` for a rod with `n_markers` markers. Errors (exit 2) name the
/// session and the missing piece.
pub fn load(dir: &Path, n_markers: usize, requests: &[StreamRequest]) -> Result<SessionData> {
    if !dir.is_dir() {
        return Err(input_error(format!("{}: not a session directory", dir.display())));
    }
    let frames = SessionMeta::read(dir).map_err(|e| input_error(e.to_string()))?.map(|m| m.frames).unwrap_or_default();
    let markers_path = dir.join("markers.parquet");
    if !markers_path.is_file() {
        return Err(input_error(format!(
            "{}: the session has no markers.parquet (track its video first: rodlab track {}/<video> --camera camera.toml --out {})",
            dir.display(),
            dir.display(),
            markers_path.display()
        )));
    }
    let rows = session::read_markers(&markers_path).map_err(|e| input_error(e.to_string()))?;
    if rows.is_empty() {
        return Err(input_error(format!("{}: no rows", markers_path.display())));
    }
    if rows.iter().any(|r| r.t_host_ns.is_none()) {
        return Err(input_error(format!(
            "{}: no t_host_ns column: track the session's video with its frames table so that markers and robot share the host clock",
            markers_path.display()
        )));
    }
    let mut by_frame: BTreeMap<i64, (i64, Vec<Option<Vec3>>)> = BTreeMap::new();
    for r in &rows {
        if r.marker as usize >= n_markers {
            return Err(input_error(format!("{}: frame {}: marker {} but the rod file has {n_markers} markers", markers_path.display(), r.frame, r.marker)));
        }
        let e = by_frame.entry(r.frame).or_insert_with(|| (r.t_host_ns.unwrap_or(0), vec![None; n_markers]));
        let p = Vec3::new(r.x_m, r.y_m, r.z_m);
        if r.flags & (flags::MISSING | flags::MERGED) == 0 && p.iter().all(|v| v.is_finite()) {
            e.1[r.marker as usize] = Some(p);
        }
    }
    let mut tracked: Vec<(i64, i64, Vec<Option<Vec3>>)> = by_frame.into_iter().map(|(f, (t, m))| (f, t, m)).collect();
    tracked.sort_by_key(|f| f.1);
    let tcp = session::read_tcp_poses(dir)
        .map_err(|e| input_error(e.to_string()))?
        .ok_or_else(|| input_error(format!("{}: the session has no robot stream (streams/robot): no base pose", dir.display())))?;
    if tcp.is_empty() {
        return Err(input_error(format!("{}: the robot stream has no rows", session::stream_dir(dir, "robot").display())));
    }
    let world_from_robot = frames.world_from_robot();
    let flange: Vec<(f64, Pose)> = tcp.iter().map(|s| (s.t_host_ns as f64 * 1e-9, world_from_robot.compose(&lie::trajectory::pose_from_ur(&s.pose)))).collect();
    let mut streams = BTreeMap::new();
    for req in requests {
        if streams.contains_key(req.stream) {
            continue;
        }
        let sdir = session::stream_dir(dir, req.stream);
        if !sdir.is_dir() {
            return Err(input_error(format!("{}: no stream '{}' in session {} ({})", req.asked_by, req.stream, dir.display(), list_streams(dir))));
        }
        let t = Table::read_chunks(&sdir).map_err(|e| input_error(e.to_string()))?;
        let th = t.i64("t_host_ns").map_err(|e| input_error(e.to_string()))?;
        let mut columns = BTreeMap::new();
        for c in requests.iter().filter(|r| r.stream == req.stream).flat_map(|r| r.columns.iter()) {
            if !t.has(c) {
                return Err(input_error(format!("{}: stream '{}' of session {} has no column '{c}'", req.asked_by, req.stream, dir.display())));
            }
            columns.insert(c.to_string(), t.f64(c).map_err(|e| input_error(e.to_string()))?);
        }
        // Sorted by time (chunks are in order; a restart may repeat times).
        let mut order: Vec<usize> = (0..th.len()).collect();
        order.sort_by_key(|&i| th[i]);
        let stream = Stream {
            t_s: order.iter().map(|&i| th[i] as f64 * 1e-9).collect(),
            columns: columns.into_iter().map(|(k, v)| (k, order.iter().map(|&i| v[i]).collect())).collect(),
        };
        streams.insert(req.stream.to_string(), stream);
    }
    Ok(SessionData {
        name: session_name(dir),
        flange,
        markers: tracked.iter().map(|(_, t, m)| (*t as f64 * 1e-9, m.clone())).collect(),
        streams,
        gravity_m_s2: frames.gravity(),
    })
}

/// The session's streams, for messages.
pub fn list_streams(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("streams"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        "it has no streams".into()
    } else {
        format!("it has: {}", names.join(", "))
    }
}
