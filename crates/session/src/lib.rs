//! `session`: the on-disk formats every stage shares (record -> track ->
//! observe -> identify -> simulate -> report).
//!
//! * Parquet tables, written atomically (temporary name, then rename), read
//!   with clear errors naming the file and the column.
//! * Chunked streams: a directory of `NNNNNN.parquet` chunks, concatenated
//!   on reading (a crash loses at most the chunk being written).
//! * The marker table of `rodlab track` and the strain table of
//!   `rodlab observe`.
//! * A session's streams on one clock ([`aligned`]): as-of joins that
//!   carry no value across a device's outage.

pub mod aligned;
pub mod avi;
pub mod frames;
pub mod gaps;
pub mod layout;
pub mod meta;
pub mod rig;
pub mod table;

pub use frames::{FramePose, RigFrames, TablePlane};
pub use layout::SessionDir;
pub use meta::{DeviceRecord, MarkerOnBody, SessionMeta, MOCAP_CLOCK};
pub use rig::Rig;
pub use table::{chunk_problem, stream_chunk_problem, Damaged, Decoding, OwnedColumn, Table, TableError, TableFormat};

/// A device's text made safe for a terminal: control characters (an
/// escape sequence would move the cursor, clear the screen or retitle the
/// window) written as `\u{..}` escapes.
pub fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// Metadata key naming the frame a table's positions are in.
pub const FRAME_KEY: &str = "frame";
/// Value of [`FRAME_KEY`] for tables in a rig's world frame W.
pub const WORLD_FRAME: &str = "world (the rig's frame W; session.toml [frames])";

use std::path::Path;

/// How a camera's frames are stored, by the rig's `container` (the
/// recorder writes them, `rodlab track` reads any of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoFormat {
    /// `mkv`: lossless HuffYUV (through OpenCV; 6.4 ms a 1280x720 frame to
    /// decode on two threads, FFV1 20 ms).
    HuffYuv,
    /// `avi`: Motion-JPEG at quality [`MJPEG_QUALITY`] by OpenCV's own
    /// writer (lossy, 4:2:0 colour; the recorder's default: a lab day's
    /// video in 150 GB where raw takes 2.4 TB).
    Mjpeg,
    /// `raw`: uncompressed BGR in an `.avi` ([`avi`]; 1.8 times HuffYUV's
    /// size, nothing to encode or decode: read in 0.09 ms a frame).
    Raw,
}

/// Motion-JPEG's quality (the JPEG standard's usual 75): on the demo's
/// frames, markers tracked 0.020 px (median, 0.08 at most) from where the
/// same frames uncompressed put them, at 0.19 bytes a pixel against raw's 3
/// (docs/results.md, "A day on disk").
pub const MJPEG_QUALITY: f64 = 75.0;

impl VideoFormat {
    pub fn from_container(container: &str) -> Option<VideoFormat> {
        match container {
            "mkv" => Some(VideoFormat::HuffYuv),
            "avi" => Some(VideoFormat::Mjpeg),
            "raw" => Some(VideoFormat::Raw),
            _ => None,
        }
    }

    /// The video file's extension.
    pub fn extension(self) -> &'static str {
        match self {
            VideoFormat::HuffYuv => "mkv",
            VideoFormat::Mjpeg | VideoFormat::Raw => "avi",
        }
    }

    /// The encoder's quality (OpenCV's `VIDEOWRITER_PROP_QUALITY`, 0-100),
    /// for a lossy format: Motion-JPEG at 95.
    pub fn quality(self) -> Option<f64> {
        (self == VideoFormat::Mjpeg).then_some(MJPEG_QUALITY)
    }

    /// The codec's FourCC for OpenCV's VideoWriter (None: written by
    /// [`avi::RawAviWriter`]).
    pub fn fourcc(self) -> Option<[char; 4]> {
        match self {
            VideoFormat::HuffYuv => Some(['H', 'F', 'Y', 'U']),
            VideoFormat::Mjpeg => Some(['M', 'J', 'P', 'G']),
            VideoFormat::Raw => None,
        }
    }
}

/// A configuration file (rig, camera, markers) that is unreadable, does
/// not parse or holds a bad value: one line naming the file, then the line
/// or field.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigFileError {
    pub file: String,
    pub message: String,
}

impl fault::Fault for ConfigFileError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

impl ConfigFileError {
    pub fn new(path: &Path, message: impl Into<String>) -> ConfigFileError {
        ConfigFileError { file: path.display().to_string(), message: message.into() }
    }
}

/// Reads and parses a TOML file; `kind` names it in errors ("rig file").
/// Returns the value and the text (kept verbatim in a session).
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Path, kind: &str) -> Result<(T, String), ConfigFileError> {
    let text = fault::read_text(path, fault::CONFIG_LIMIT_BYTES).map_err(|e| ConfigFileError::new(path, format!("cannot read {kind}: {e}")))?;
    let value = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        ConfigFileError::new(path, format!("{}{}", line.map(|l| format!("line {l}: ")).unwrap_or_default(), e.message().replace('\n', " ")))
    })?;
    Ok((value, text))
}

/// Flag bits of the marker table.
pub mod flags {
    /// The marker was not found in this frame (position columns are NaN).
    pub const MISSING: u32 = 1;
    /// Two markers merged into one blob (position unreliable).
    pub const MERGED: u32 = 2;
    /// Found outside the predicted search window (re-acquired).
    pub const REACQUIRED: u32 = 4;
    /// Seen by one camera of a set: x, y, z is that camera's centre and
    /// `ray_x`, `ray_y`, `ray_z` the direction the marker lies in; not a
    /// position.
    pub const RAY: u32 = 8;
    /// Views of a camera set that the epipolar constraint says are not one
    /// marker (a swapped order, a reflection): no position (with MISSING).
    pub const DISAGREE: u32 = 16;
    /// A row whose x, y, z is not the marker's position.
    pub const NO_POSITION: u32 = MISSING | MERGED | RAY | DISAGREE;
}

/// One row of the marker table: a marker in a frame.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerRow {
    pub frame: i64,
    pub t_s: f64,
    /// Host monotonic clock at grab, when the session has a frames table.
    pub t_host_ns: Option<i64>,
    /// 0 = base.
    pub marker: u32,
    pub u_px: f64,
    pub v_px: f64,
    pub x_m: f64,
    pub y_m: f64,
    pub z_m: f64,
    pub area_px: f64,
    pub flags: u32,
}

pub const MARKER_COLUMNS: [&str; 10] = ["frame", "t_s", "marker", "u_px", "v_px", "x_m", "y_m", "z_m", "area_px", "flags"];

/// How a camera set saw one row of the marker table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkerViews {
    /// The cameras that saw the marker (bit i: the set's camera i).
    pub cameras: u32,
    /// RMS reprojection error of the triangulated point \[px\] (NaN for
    /// a ray or no position).
    pub reprojection_px: f64,
    /// The largest time between the views used \[s\] (the cameras run
    /// on their own clocks; frames are matched on the host clock).
    pub view_dt_s: f64,
    /// A one-camera marker's ray direction (unit, world); NaN otherwise.
    pub ray: [f64; 3],
}

/// Metadata key of a camera set's marker table: its cameras' names,
/// comma-separated, in the order of [`MarkerViews::cameras`]' bits.
pub const CAMERAS_KEY: &str = "cameras";

/// Writes the marker table (Parquet).
pub fn write_markers(path: &Path, rows: &[MarkerRow]) -> Result<(), TableError> {
    markers_table(rows).write(path)
}

/// Writes the marker table of a camera set: the rows and, per row, how
/// the cameras saw it (`cameras`, `reprojection_px`, `view_dt_s`, `ray_*`).
pub fn write_markers_with_views(path: &Path, rows: &[MarkerRow], views: &[MarkerViews], camera_names: &[String]) -> Result<(), TableError> {
    let mut t = markers_table(rows);
    t.push_u32("cameras", views.iter().map(|v| v.cameras).collect());
    t.push_f64("reprojection_px", views.iter().map(|v| v.reprojection_px).collect());
    t.push_f64("view_dt_s", views.iter().map(|v| v.view_dt_s).collect());
    for (k, axis) in ["ray_x", "ray_y", "ray_z"].iter().enumerate() {
        t.push_f64(axis, views.iter().map(|v| v.ray[k]).collect());
    }
    t.set_meta(CAMERAS_KEY, &camera_names.join(","));
    t.write(path)
}

/// A camera set's columns of a marker table: each row's views, and the
/// cameras' names in the order of [`MarkerViews::cameras`]' bits.
pub type SetColumns = (Vec<MarkerViews>, Vec<String>);

/// The camera set's columns of a marker table, with its cameras' names;
/// None for a one-camera or motion-capture table.
pub fn read_marker_views(path: &Path) -> Result<Option<SetColumns>, TableError> {
    let t = Table::read(path)?;
    if !t.has("cameras") {
        return Ok(None);
    }
    let (cameras, reprojection, dt) = (t.u32("cameras")?, t.f64("reprojection_px")?, t.f64("view_dt_s")?);
    let (rx, ry, rz) = (t.f64("ray_x")?, t.f64("ray_y")?, t.f64("ray_z")?);
    let names = t.meta(CAMERAS_KEY).map(|s| s.split(',').map(str::to_string).collect()).unwrap_or_default();
    let views = (0..cameras.len())
        .map(|i| MarkerViews { cameras: cameras[i], reprojection_px: reprojection[i], view_dt_s: dt[i], ray: [rx[i], ry[i], rz[i]] })
        .collect();
    Ok(Some((views, names)))
}

fn markers_table(rows: &[MarkerRow]) -> Table {
    let mut t = Table::new();
    t.push_i64("frame", rows.iter().map(|r| r.frame).collect());
    t.push_f64("t_s", rows.iter().map(|r| r.t_s).collect());
    if rows.iter().all(|r| r.t_host_ns.is_some()) && !rows.is_empty() {
        t.push_i64("t_host_ns", rows.iter().map(|r| r.t_host_ns.unwrap_or(0)).collect());
    }
    t.push_u32("marker", rows.iter().map(|r| r.marker).collect());
    t.push_f64("u_px", rows.iter().map(|r| r.u_px).collect());
    t.push_f64("v_px", rows.iter().map(|r| r.v_px).collect());
    t.push_f64("x_m", rows.iter().map(|r| r.x_m).collect());
    t.push_f64("y_m", rows.iter().map(|r| r.y_m).collect());
    t.push_f64("z_m", rows.iter().map(|r| r.z_m).collect());
    t.push_f64("area_px", rows.iter().map(|r| r.area_px).collect());
    t.push_u32("flags", rows.iter().map(|r| r.flags).collect());
    t.set_meta(FRAME_KEY, WORLD_FRAME);
    t
}

/// Reads a marker table, checking its columns.
pub fn read_markers(path: &Path) -> Result<Vec<MarkerRow>, TableError> {
    let t = Table::read(path)?;
    let frame = t.i64("frame")?;
    let t_s = t.f64("t_s")?;
    let t_host = if t.has("t_host_ns") { Some(t.i64("t_host_ns")?) } else { None };
    let marker = t.u32("marker")?;
    let u = t.f64("u_px")?;
    let v = t.f64("v_px")?;
    let x = t.f64("x_m")?;
    let y = t.f64("y_m")?;
    let z = t.f64("z_m")?;
    let area = t.f64("area_px")?;
    let fl = t.u32("flags")?;
    Ok((0..frame.len())
        .map(|i| MarkerRow {
            frame: frame[i],
            t_s: t_s[i],
            t_host_ns: t_host.as_ref().map(|h| h[i]),
            marker: marker[i],
            u_px: u[i],
            v_px: v[i],
            x_m: x[i],
            y_m: y[i],
            z_m: z[i],
            area_px: area[i],
            flags: fl[i],
        })
        .collect())
}

/// One row of the strain table: a node of the observed rod in a frame.
#[derive(Clone, Debug, PartialEq)]
pub struct StrainRow {
    pub frame: i64,
    pub t_host_ns: i64,
    pub node: u32,
    pub arc_m: f64,
    /// [kappa_x, kappa_y, kappa_z, eps_x, eps_y, eps_z], eps = Q - [1, 0, 0].
    pub strain: [f64; 6],
    pub marker_residual_m: f64,
    pub status: String,
    /// The rod's base pose used for the frame (world): position and
    /// rotation vector.
    pub base_pose: [f64; 6],
}

/// Columns of the base pose in the strain table.
pub const BASE_POSE_NAMES: [&str; 6] = ["base_x_m", "base_y_m", "base_z_m", "base_rx_rad", "base_ry_rad", "base_rz_rad"];

pub const STRAIN_NAMES: [&str; 6] = ["kappa_x", "kappa_y", "kappa_z", "eps_x", "eps_y", "eps_z"];

/// Writes the strain table; `meta`: what produced it (key/value pairs in
/// the Parquet footer, e.g. the observer's settings).
pub fn write_strain(path: &Path, rows: &[StrainRow], meta: &[(&str, &str)]) -> Result<(), TableError> {
    let mut t = Table::new();
    t.push_i64("frame", rows.iter().map(|r| r.frame).collect());
    t.push_i64("t_host_ns", rows.iter().map(|r| r.t_host_ns).collect());
    t.push_u32("node", rows.iter().map(|r| r.node).collect());
    t.push_f64("arc_m", rows.iter().map(|r| r.arc_m).collect());
    for (c, name) in STRAIN_NAMES.iter().enumerate() {
        t.push_f64(name, rows.iter().map(|r| r.strain[c]).collect());
    }
    t.push_f64("marker_residual_m", rows.iter().map(|r| r.marker_residual_m).collect());
    t.push_str("status", rows.iter().map(|r| r.status.clone()).collect());
    for (c, name) in BASE_POSE_NAMES.iter().enumerate() {
        t.push_f64(name, rows.iter().map(|r| r.base_pose[c]).collect());
    }
    t.set_meta(FRAME_KEY, "strains in the rod's own frames; base pose in the world frame W");
    for (k, v) in meta {
        t.set_meta(k, v);
    }
    t.write(path)
}

pub fn read_strain(path: &Path) -> Result<Vec<StrainRow>, TableError> {
    let t = Table::read(path)?;
    let frame = t.i64("frame")?;
    let th = t.i64("t_host_ns")?;
    let node = t.u32("node")?;
    let arc = t.f64("arc_m")?;
    let cols: Vec<Vec<f64>> = STRAIN_NAMES.iter().map(|n| t.f64(n)).collect::<Result<_, _>>()?;
    let res = t.f64("marker_residual_m")?;
    let status = t.str("status")?;
    let base: Vec<Vec<f64>> =
        if t.has(BASE_POSE_NAMES[0]) { BASE_POSE_NAMES.iter().map(|n| t.f64(n)).collect::<Result<_, _>>()? } else { vec![vec![f64::NAN; frame.len()]; 6] };
    Ok((0..frame.len())
        .map(|i| StrainRow {
            frame: frame[i],
            t_host_ns: th[i],
            node: node[i],
            arc_m: arc[i],
            strain: std::array::from_fn(|c| cols[c][i]),
            marker_residual_m: res[i],
            status: status[i].clone(),
            base_pose: std::array::from_fn(|c| base[c][i]),
        })
        .collect())
}

/// Directory of a stream's chunks inside a session.
pub fn stream_dir(session: &Path, stream: &str) -> std::path::PathBuf {
    session.join("streams").join(stream)
}

/// Rows of `stream` on disk now (finished chunks, from their footers):
/// what a device recorded, whatever its recorder counted.
pub fn stream_rows_on_disk(session: &Path, stream: &str) -> Result<u64, TableError> {
    let dir = stream_dir(session, stream);
    let Ok(rd) = std::fs::read_dir(&dir) else { return Ok(0) };
    let mut rows = 0u64;
    for f in rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "parquet")) {
        rows += Table::rows_in_file(&f)? as u64;
    }
    Ok(rows)
}

/// A robot flange (TCP) pose sample: host time and UR pose
/// `[x, y, z, rx, ry, rz]` (metres, axis-angle in radians, base frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSample {
    pub t_host_ns: i64,
    pub pose: [f64; 6],
}

/// The robot's TCP poses of a session (`streams/robot`, columns
/// `t_host_ns`, `actual_TCP_pose_0` .. `actual_TCP_pose_5`), or `None` when
/// the session has no robot stream.
pub fn read_tcp_poses(session: &Path) -> Result<Option<Vec<TcpSample>>, TableError> {
    Ok(read_tcp_poses_or_skip(session, Damaged::Refuse)?.map(|(samples, _)| samples))
}

/// Poses, and a warning per damaged chunk left out.
pub type TcpPosesRead = (Vec<TcpSample>, Vec<String>);

/// [`read_tcp_poses`], leaving out damaged chunks with `Damaged::Skip`
/// (and a warning each).
pub fn read_tcp_poses_or_skip(session: &Path, damaged: Damaged) -> Result<Option<TcpPosesRead>, TableError> {
    read_tcp_poses_of(session, "robot", damaged)
}

/// The TCP poses of the robot recorded as stream `robot` (a rig's second
/// `[[robot]]`, say), as [`read_tcp_poses_or_skip`] reads the first.
pub fn read_tcp_poses_of(session: &Path, robot: &str, damaged: Damaged) -> Result<Option<TcpPosesRead>, TableError> {
    let dir = stream_dir(session, robot);
    if !dir.is_dir() {
        return Ok(None);
    }
    let (t, warnings) = Table::read_chunks_or_skip(&dir, damaged)?;
    let mut th = t.i64("t_host_ns")?;
    if t.has("timestamp") {
        th = device_times_on_host_clock(&t.f64("timestamp")?, &th);
    }
    let cols: Vec<Vec<f64>> = (0..6).map(|i| t.f64(&format!("actual_TCP_pose_{i}"))).collect::<Result<_, _>>()?;
    let mut out: Vec<TcpSample> = (0..th.len()).map(|k| TcpSample { t_host_ns: th[k], pose: std::array::from_fn(|i| cols[i][k]) }).collect();
    out.sort_by_key(|s| s.t_host_ns);
    Ok(Some((out, warnings)))
}

/// Host times of a camera's frames (its `streams/<camera>` table): the
/// host stamp says when the recorder got a frame, after decoding and
/// scheduling (on a loaded two-core machine up to 46 ms late, a frame
/// period and more, where it is 2 ms otherwise); the camera's own clock
/// (`device_ms`: a file's position, a V4L2 buffer's time) advances evenly.
/// With `device_ms`, each frame is put on the host clock as
/// [`device_times_on_host_clock`] puts a robot's packages; a camera that
/// reports no clock (zeros, NaN) keeps its host stamps.
pub fn frame_times_on_host_clock(frames: &Table) -> Result<Vec<i64>, TableError> {
    let host_ns = frames.i64("t_host_ns")?;
    if !frames.has("device_ms") {
        return Ok(host_ns);
    }
    let device_s: Vec<f64> = frames.f64("device_ms")?.iter().map(|ms| ms * 1e-3).collect();
    Ok(device_times_on_host_clock(&device_s, &host_ns))
}

/// Host times of samples that carry the device's own clock (the RTDE
/// `timestamp`, seconds): the host clock says when a package *arrived*,
/// late by a varying delay (network, scheduling: milliseconds, bursts of
/// tens); the device clock says when it was *measured*, evenly. Each
/// sample gets `device + offset`, the offset being the smallest
/// arrival delay (least-delayed package) in a window of `WINDOW_S` around
/// it, interpolated between windows so that a slow drift of the two clocks
/// is followed. A device clock that jumps (a reconnect, a restarted
/// controller) starts a new segment.
pub fn device_times_on_host_clock(device_s: &[f64], host_ns: &[i64]) -> Vec<i64> {
    const WINDOW_S: f64 = 5.0;
    let n = device_s.len().min(host_ns.len());
    let mut out = host_ns.to_vec();
    let mut start = 0;
    while start < n {
        // A segment: the device clock advances like the host clock (within 0.5 s).
        let mut end = start + 1;
        while end < n {
            let dd = device_s[end] - device_s[end - 1];
            let dh = (host_ns[end] - host_ns[end - 1]) as f64 * 1e-9;
            if !(dd > 0.0 && (dd - dh).abs() < 0.5) {
                break;
            }
            end += 1;
        }
        let offset = |k: usize| host_ns[k] as f64 * 1e-9 - device_s[k];
        // Least delay per window, placed at the window's centre.
        let mut knots: Vec<(f64, f64)> = vec![];
        let mut w = start;
        while w < end {
            let w_end = (w..end).find(|&k| device_s[k] >= device_s[w] + WINDOW_S).unwrap_or(end);
            let min = (w..w_end).map(offset).fold(f64::INFINITY, f64::min);
            knots.push((0.5 * (device_s[w] + device_s[w_end - 1]), min));
            w = w_end;
        }
        let knot_t: Vec<f64> = knots.iter().map(|k| k.0).collect();
        for k in start..end {
            let t = device_s[k];
            let off = lie::series::blend(lie::series::bracket_held(&knot_t, t), |i| knots[i].1);
            out[k] = ((t + off) * 1e9).round() as i64;
        }
        start = end;
    }
    out
}

/// A robot's flange poses on the host clock, for interpolation.
pub struct RobotLog {
    /// Host time of the first sample \[ns\]; trajectory times are seconds
    /// after it.
    pub t0_host_ns: i64,
    /// Flange poses in the robot's base frame (slerp between samples).
    pub flange: lie::trajectory::PoseTrajectory,
}

impl RobotLog {
    /// From TCP samples (sorted by host time; repeated times dropped).
    pub fn new(samples: &[TcpSample]) -> Result<RobotLog, lie::trajectory::TrajectoryError> {
        let t0 = samples.first().ok_or(lie::trajectory::TrajectoryError::Empty)?.t_host_ns;
        let mut last = i64::MIN;
        let poses = samples.iter().filter(|s| {
            let keep = s.t_host_ns > last;
            last = last.max(s.t_host_ns);
            keep
        });
        let flange = lie::trajectory::PoseTrajectory::from_ur(poses.map(|s| ((s.t_host_ns - t0) as f64 * 1e-9, s.pose)))?;
        Ok(RobotLog { t0_host_ns: t0, flange })
    }

    /// The flange pose at host time `t_host_ns` (an error outside the log's
    /// span: never extrapolated).
    pub fn flange_at(&self, t_host_ns: i64) -> Result<lie::Pose, lie::trajectory::TrajectoryError> {
        self.flange.at((t_host_ns - self.t0_host_ns) as f64 * 1e-9)
    }
}

/// Writes a stream as Parquet chunks `streams/<name>/NNNNNN.parquet`: rows
/// are buffered and flushed as a new chunk at least every `flush_every`
/// (temporary name, then rename), so a crash loses at most that long.
pub struct StreamWriter {
    dir: std::path::PathBuf,
    columns: Vec<String>,
    t_host_ns: Vec<i64>,
    values: Vec<Vec<f64>>,
    seq: u32,
    last_flush: std::time::Instant,
    flush_every: std::time::Duration,
    pub rows_written: u64,
}

impl StreamWriter {
    /// `columns`: value columns (besides `t_host_ns`).
    pub fn create(session: &Path, stream: &str, columns: Vec<String>, flush_every: std::time::Duration) -> Result<StreamWriter, TableError> {
        let dir = stream_dir(session, stream);
        std::fs::create_dir_all(&dir).map_err(|e| TableError::Write(dir.clone(), e.to_string()))?;
        // Continue numbering after existing chunks (a reconnect re-creates the writer).
        let seq = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "parquet")).count() as u32)
            .unwrap_or(0);
        let n = columns.len();
        Ok(StreamWriter { dir, columns, t_host_ns: vec![], values: vec![vec![]; n], seq, last_flush: std::time::Instant::now(), flush_every, rows_written: 0 })
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Adds a row; flushes a chunk when due.
    pub fn push(&mut self, t_host_ns: i64, values: &[f64]) -> Result<(), TableError> {
        self.t_host_ns.push(t_host_ns);
        for (c, v) in self.values.iter_mut().zip(values) {
            c.push(*v);
        }
        if self.last_flush.elapsed() >= self.flush_every {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), TableError> {
        self.last_flush = std::time::Instant::now();
        if self.t_host_ns.is_empty() {
            return Ok(());
        }
        let mut t = Table::new();
        t.push_i64("t_host_ns", std::mem::take(&mut self.t_host_ns));
        for (name, col) in self.columns.iter().zip(self.values.iter_mut()) {
            t.push_f64(name, std::mem::take(col));
        }
        let path = self.dir.join(format!("{:06}.parquet", self.seq));
        let rows = t.height_pending();
        t.write(&path)?;
        self.seq += 1;
        self.rows_written += rows as u64;
        Ok(())
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// What `session check` found for one chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkReport {
    pub path: std::path::PathBuf,
    pub rows: usize,
    pub problem: Option<String>,
}

/// Reads every chunk of every stream; reports precisely: damaged chunks,
/// leftover temporary files, chunks whose columns differ from the
/// stream's first chunk, host times that run backwards.
pub fn check_session(session: &Path) -> Result<Vec<ChunkReport>, TableError> {
    let streams = session.join("streams");
    let mut out = vec![];
    let rd = std::fs::read_dir(&streams).map_err(|e| TableError::Read(streams.clone(), e.to_string()))?;
    let mut dirs: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for d in dirs {
        let mut files: Vec<_> =
            std::fs::read_dir(&d).map_err(|e| TableError::Read(d.clone(), e.to_string()))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        let mut first_schema: Option<(std::path::PathBuf, Vec<(String, String)>)> = None;
        let mut last_host: Option<i64> = None;
        for f in files {
            let name = f.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            if name.ends_with(".tmp") {
                out.push(ChunkReport { path: f, rows: 0, problem: Some("unfinished chunk (recorder stopped while writing it); its rows are lost".into()) });
                continue;
            }
            if !name.ends_with(".parquet") {
                continue;
            }
            let t = match Table::read(&f) {
                Ok(t) => t,
                Err(e) => {
                    out.push(ChunkReport { path: f, rows: 0, problem: Some(e.to_string()) });
                    continue;
                }
            };
            let schema = t.schema();
            // The readers' rules (a chunk they skip or refuse is named
            // here), then the columns against the first chunk's.
            let problem = match table::stream_chunk_problem(&t, last_host) {
                Err(why) => Some(why),
                Ok(_) if first_schema.as_ref().is_some_and(|(_, s0)| *s0 != schema) => first_schema.as_ref().map(|(p0, s0)| {
                    format!(
                        "columns differ from {}'s: [{}] against [{}]",
                        p0.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
                        describe_schema(&schema),
                        describe_schema(s0)
                    )
                }),
                Ok(last) => {
                    last_host = last.or(last_host);
                    None
                }
            };
            if first_schema.is_none() {
                first_schema = Some((f.clone(), schema));
            }
            out.push(ChunkReport { path: f, rows: t.height(), problem });
        }
    }
    Ok(out)
}

fn describe_schema(schema: &[(String, String)]) -> String {
    schema.iter().map(|(n, t)| format!("{n}: {t}")).collect::<Vec<_>>().join(", ")
}
