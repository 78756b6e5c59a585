//! `rodlab session view`: the view page over a recorded session, at a time
//! the page's slider chooses: every stream's state and values then, their
//! plots around it, the video frame with the tracked markers drawn
//! (markers.parquet) and the observed strain (strain.parquet) of that frame.

use super::http::{query_f64, Reply, Server, Site};
use super::{device_plots, finite, shown_columns, strain_json, DeviceLine, DeviceState, SILENT_AFTER_S};
use lab::error::{Context, Error, Result};
use serde_json::{json, Value};
use session::{MarkerRow, SessionDir, StrainRow};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use track::preview::{jpeg_with_markers, SeenMarker, VideoFrames};

/// Seconds of stream shown either side of the chosen time.
const PLOT_HALF_WINDOW_S: f64 = 10.0;
/// Points per plotted line at most (a long stream is thinned).
const MAX_POINTS: usize = 800;

/// One recorded stream, in memory.
struct Stream {
    name: String,
    columns: Vec<String>,
    t_s: Vec<f64>,
    /// Row-major, `columns.len()` per row.
    values: Vec<f64>,
    /// Outage starts \[s\].
    gap_starts_s: Vec<f64>,
}

impl Stream {
    fn row(&self, i: usize) -> &[f64] {
        let n = self.columns.len();
        &self.values[i * n..(i + 1) * n]
    }

    /// Rows at or before `t`.
    fn rows_until(&self, t: f64) -> usize {
        self.t_s.partition_point(|x| *x <= t)
    }
}

struct Camera {
    name: String,
    /// Host time of each frame \[s\].
    frame_t_s: Vec<f64>,
    video: Mutex<VideoFrames>,
}

/// A session opened for viewing.
pub struct ReplaySite {
    title: String,
    start_s: f64,
    end_s: f64,
    streams: Vec<Stream>,
    cameras: Vec<Camera>,
    /// markers.parquet by frame (the first camera's).
    markers: BTreeMap<i64, Vec<MarkerRow>>,
    /// strain.parquet by frame.
    strain: BTreeMap<i64, Vec<StrainRow>>,
    notes: Vec<String>,
}

fn read_stream(dir: &SessionDir, name: &str) -> Result<Stream> {
    let path = dir.stream(name);
    let t = session::Table::read_chunks(&path).input(path.display())?;
    let t_ns = t.i64("t_host_ns").input(path.display())?;
    let mut columns = vec![];
    let mut data: Vec<Vec<f64>> = vec![];
    for (col, dtype) in t.schema() {
        if col == "t_host_ns" {
            continue;
        }
        let v = if dtype.starts_with('f') {
            t.f64(&col)
        } else if dtype.starts_with('i') || dtype.starts_with('u') {
            t.i64(&col).map(|v| v.into_iter().map(|x| x as f64).collect())
        } else {
            continue;
        }
        .input(path.display())?;
        columns.push(col);
        data.push(v);
    }
    let mut values = Vec::with_capacity(t_ns.len() * columns.len());
    for i in 0..t_ns.len() {
        values.extend(data.iter().map(|c| c[i]));
    }
    let gap_starts_s = session::gaps::read_gaps(dir.path(), name).map(|g| g.iter().map(|g| g.start_host_ns as f64 * 1e-9).collect()).unwrap_or_default();
    Ok(Stream { name: name.to_string(), columns, t_s: t_ns.iter().map(|t| *t as f64 * 1e-9).collect(), values, gap_starts_s })
}

impl ReplaySite {
    /// Reads the session's streams, video, markers and strain.
    pub fn open(dir: &SessionDir) -> Result<ReplaySite> {
        if !dir.exists() {
            return Err(Error::input(format!("{}: no such session directory", dir.path().display())));
        }
        let names = dir.stream_names();
        if names.is_empty() {
            return Err(Error::input(format!("{}: no streams/ (not a recorded session?)", dir.path().display())));
        }
        let streams: Vec<Stream> = names.iter().map(|n| read_stream(dir, n)).collect::<Result<_>>()?;
        let mut notes = vec![];
        let mut cameras = vec![];
        for s in streams.iter().filter(|s| s.columns.iter().any(|c| c == "frame") && s.columns.iter().any(|c| c == "device_ms")) {
            match dir.find_video(&s.name) {
                Some(v) => cameras.push(Camera { name: s.name.clone(), frame_t_s: s.t_s.clone(), video: Mutex::new(VideoFrames::open(&v)?) }),
                None => notes.push(format!("camera '{}': no video beside its frames table", s.name)),
            }
        }
        let mut markers: BTreeMap<i64, Vec<MarkerRow>> = BTreeMap::new();
        if dir.markers().is_file() {
            for r in session::read_markers(&dir.markers()).input(dir.markers().display())? {
                markers.entry(r.frame).or_default().push(r);
            }
        } else if !cameras.is_empty() {
            notes.push("no markers.parquet: track the video (rodlab track) to see its markers".into());
        }
        let mut strain: BTreeMap<i64, Vec<StrainRow>> = BTreeMap::new();
        if dir.strain().is_file() {
            for r in session::read_strain(&dir.strain()).input(dir.strain().display())? {
                strain.entry(r.frame).or_default().push(r);
            }
        } else if !markers.is_empty() {
            notes.push("no strain.parquet: observe the markers (rodlab observe) to see the strain".into());
        }
        let start_s = streams.iter().filter_map(|s| s.t_s.first()).copied().fold(f64::INFINITY, f64::min);
        let end_s = streams.iter().filter_map(|s| s.t_s.last()).copied().fold(f64::NEG_INFINITY, f64::max);
        if start_s.is_infinite() || end_s.is_infinite() {
            return Err(Error::input(format!("{}: every stream is empty", dir.path().display())));
        }
        Ok(ReplaySite { title: format!("rodlab: session {}", dir.name()), start_s, end_s, streams, cameras, markers, strain, notes })
    }

    /// The first and last host times of the session \[s\].
    pub fn span_s(&self) -> (f64, f64) {
        (self.start_s, self.end_s)
    }

    /// The tracked markers of camera `camera`'s frame `k` (markers.parquet
    /// is the first camera's).
    fn tracked(&self, camera: usize, k: usize) -> &[MarkerRow] {
        match camera {
            0 => self.markers.get(&(k as i64)).map_or(&[], Vec::as_slice),
            _ => &[],
        }
    }

    /// The camera frame shown at `t` (the last one grabbed at or before it).
    fn frame_at(camera: &Camera, t: f64) -> Option<usize> {
        camera.frame_t_s.partition_point(|x| *x <= t).checked_sub(1)
    }

    /// The page's state at session time `t_s`.
    pub fn state_at(&self, t_s: f64) -> Value {
        let t = t_s.clamp(self.start_s, self.end_s);
        let devices: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                let n = s.rows_until(t);
                let last = n.checked_sub(1);
                let state = match last {
                    None => DeviceState::Waiting,
                    Some(i) if i + 1 == s.t_s.len() && t - s.t_s[i] >= SILENT_AFTER_S => DeviceState::Ended,
                    Some(i) => DeviceState::of_silence(Some(t - s.t_s[i])),
                };
                let recent = n - s.rows_until(t - 1.0);
                let values = last.map(|i| shown_columns(&s.columns).into_iter().map(|c| (s.columns[c].clone(), s.row(i)[c])).collect()).unwrap_or_default();
                DeviceLine {
                    name: s.name.clone(),
                    state,
                    rate_hz: recent as f64,
                    rows: n as u64,
                    gaps: s.gap_starts_s.iter().filter(|g| **g <= t).count() as u64,
                    reconnects: 0,
                    values,
                }
                .to_json()
            })
            .collect();
        let window = (t - PLOT_HALF_WINDOW_S, t + PLOT_HALF_WINDOW_S);
        let plots: Vec<String> = self
            .streams
            .iter()
            .flat_map(|s| {
                let (a, b) = (s.rows_until(window.0), s.rows_until(window.1));
                let step = ((b - a) / MAX_POINTS).max(1);
                let rows = (a..b).step_by(step).map(|i| (s.t_s[i], s.row(i)));
                device_plots(&s.name, &s.columns, rows, window, Some(t))
            })
            .collect();
        let mut cameras = vec![];
        for (k, c) in self.cameras.iter().enumerate() {
            let frame = Self::frame_at(c, t);
            let rows = frame.map_or(&[][..], |f| self.tracked(k, f));
            let markers: Vec<Value> = rows
                .iter()
                .map(|r| json!({"index": r.marker, "u_px": finite(r.u_px), "v_px": finite(r.v_px), "x_m": finite(r.x_m), "y_m": finite(r.y_m), "z_m": finite(r.z_m), "flags": r.flags}))
                .collect();
            let warnings: Vec<String> = rows
                .iter()
                .filter(|r| r.flags & (session::flags::MISSING | session::flags::MERGED) != 0)
                .map(|r| format!("marker {} {}", r.marker, if r.flags & session::flags::MERGED != 0 { "merged with a neighbour" } else { "missing" }))
                .collect();
            cameras.push(json!({
                "name": c.name, "frame": frame,
                "frame_url": frame.map(|f| format!("/frame.jpg?camera={k}&k={f}")),
                "expected": markers.len(), "markers": markers, "warnings": warnings,
            }));
        }
        // The strain of the first camera's frame (the one its markers were tracked in).
        let shown_frame = self.cameras.first().and_then(|c| Self::frame_at(c, t));
        let strain = shown_frame.and_then(|f| self.strain.get(&(f as i64)).map(|rows| (f, rows))).map(|(f, rows)| {
            let nodes: Vec<(f64, [f64; 3])> = rows.iter().map(|r| (r.arc_m, [r.strain[0], r.strain[1], r.strain[2]])).collect();
            let base = rows.first().map(|r| [r.base_pose[0], r.base_pose[1], r.base_pose[2]]);
            let marker_points = self.tracked(0, f).iter().map(|m| [m.x_m, m.y_m, m.z_m]);
            let shape: Vec<[f64; 3]> = base.into_iter().chain(marker_points).collect();
            let first = &rows[0];
            strain_json(self.cameras[0].frame_t_s[f], &nodes, &shape, first.marker_residual_m, &first.status)
        });
        json!({
            "mode": "replay", "t_s": t, "devices": devices, "cameras": cameras, "plots": plots,
            "strain": strain.unwrap_or(Value::Null), "notes": self.notes,
        })
    }

    /// Camera `camera`'s frame `k` with its tracked markers drawn.
    pub fn frame_jpeg(&self, camera: usize, k: usize) -> Result<Option<Vec<u8>>> {
        let Some(c) = self.cameras.get(camera) else { return Ok(None) };
        let markers: Vec<SeenMarker> = self.tracked(camera, k).iter().map(|r| SeenMarker { index: r.marker as usize, u_px: r.u_px, v_px: r.v_px }).collect();
        let mut video = c.video.lock().map_err(|_| Error::computation("the video reader failed before"))?;
        match video.frame(k)? {
            Some(image) => Ok(Some(jpeg_with_markers(image, &markers)?)),
            None => Ok(None),
        }
    }
}

impl Site for ReplaySite {
    fn get(&self, path: &str, query: &[(String, String)]) -> Reply {
        if let Some(a) = super::asset(path) {
            return a;
        }
        match path {
            "/api/info" => Reply::json(&json!({"mode": "replay", "title": self.title, "start_s": self.start_s, "end_s": self.end_s})),
            "/api/at" => match query_f64(query, "t") {
                Some(t) if t.is_finite() => Reply::json(&self.state_at(t)),
                _ => Reply::BadRequest("/api/at?t=SECONDS".into()),
            },
            "/frame.jpg" => {
                let (Some(c), Some(k)) = (query_f64(query, "camera"), query_f64(query, "k")) else {
                    return Reply::BadRequest("/frame.jpg?camera=N&k=FRAME".into());
                };
                match self.frame_jpeg(c as usize, k as usize) {
                    Ok(Some(jpeg)) => Reply::Body { content_type: "image/jpeg", body: jpeg },
                    Ok(None) => Reply::NotFound,
                    Err(e) => Reply::BadRequest(e.to_string()),
                }
            }
            _ => Reply::NotFound,
        }
    }
}

/// A replay being served.
pub struct Replay {
    pub server: Server,
    pub site: Arc<ReplaySite>,
}

/// Opens `dir` and serves its view on `addr` (`host:port`).
pub fn serve(dir: &SessionDir, addr: &str) -> Result<Replay> {
    let site = Arc::new(ReplaySite::open(dir)?);
    let server = Server::start(addr, site.clone()).map_err(|e| Error::input(format!("--addr {addr}: cannot listen: {e}")))?;
    Ok(Replay { server, site })
}
