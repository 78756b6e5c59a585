//! `rodlab record --view`: the view page fed by the recorders' taps while
//! they record. A sampler thread reads every device's counters and newest
//! sample ten times a second (its plots' history), looks at the camera's
//! newest frame (markers detected and numbered, located in the world with
//! a calibrated camera, strain observed with a rod) and sends the page's
//! state to every browser five times a second. Recorders never wait for
//! any of it: they offer through `try_lock`, and a browser that does not
//! read loses updates, not samples.

use super::http::{query_f64, Broadcast, Reply, Server, Site};
use super::{device_plots, finite, shown_columns, strain_json, DeviceLine, DeviceState};
use lab::error::{Error, Result};
use lie::{Pose, Vec3};
use observe::{Mode, Observer};
use record::robot::{Clock, Status};
use rod::{Rod, Sighting};
use serde_json::{json, Value};
use session::RigFrames;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use track::camera::CameraModel;
use track::detect::MarkerParams;
use track::pipeline::PlaneToWorld;
use track::preview::{jpeg_with_markers, Previewer};
use track::stereo::CameraSet;
use track::triangulate::{locate, Located, PlacedCamera};

/// How often the devices are read, and the page updated.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
const SEND_EVERY: Duration = Duration::from_millis(200);
/// The markers' noise the live observer assumes \[m\].
const LIVE_SIGMA_M: f64 = 2e-5;
/// How long a frame's strain waits for the robot's samples after the
/// frame's time (the base where the robot was then) before the newest
/// pose is taken instead (a robot lost, or far behind) \[s\].
const BASE_WAIT_S: f64 = 0.5;

/// What the live view shows beyond the devices.
#[derive(Clone)]
pub struct LiveOptions {
    /// `host:port` to serve on (port 0 picks one).
    pub addr: String,
    /// Seconds of history in the time plots.
    pub window_s: f64,
    /// The tracking settings the preview detects markers with.
    pub markers: MarkerParams,
    /// A calibrated camera (with its plane): markers located in the world.
    pub camera: Option<CameraModel>,
    /// A calibrated camera set: markers triangulated from its cameras'
    /// latest frames (the rig's cameras of the same names).
    pub cameras: Option<CameraSet>,
    /// With a calibrated camera: the strain observed live.
    pub rod: Option<Rod>,
}

impl LiveOptions {
    /// From the command line's files: markers.toml (default: red markers),
    /// camera.toml, a rod file.
    pub fn from_files(
        addr: &str,
        window_s: f64,
        markers: Option<&std::path::Path>,
        calibration: Option<&std::path::Path>,
        rod: Option<&std::path::Path>,
    ) -> Result<LiveOptions> {
        let markers = match markers {
            Some(p) => MarkerParams::load(p)?,
            None => MarkerParams::default(),
        };
        // A camera set's file lists its cameras as [[camera]] tables.
        let is_set = |p: &std::path::Path| std::fs::read_to_string(p).is_ok_and(|t| t.lines().any(|l| l.trim() == "[[camera]]"));
        let (camera, cameras) = match calibration {
            Some(p) if is_set(p) => (None, Some(CameraSet::load(p)?)),
            Some(p) => (Some(CameraModel::load(p).map_err(|e| Error::input(e.to_string()))?), None),
            None => (None, None),
        };
        let rod = match rod {
            Some(p) => Some(Rod::from_file(p)?),
            None => None,
        };
        Ok(LiveOptions { addr: addr.to_string(), window_s, markers, camera, cameras, rod })
    }

    pub fn with_rod(self, rod: Rod) -> LiveOptions {
        LiveOptions { rod: Some(rod), ..self }
    }
}

struct Device {
    name: String,
    status: Arc<Status>,
    columns: Vec<String>,
    last_rows: u64,
    /// Host time the rows last grew \[ns\].
    last_change_ns: Option<i64>,
    /// (host time, rows) over the last second, for the rate.
    counts: VecDeque<(i64, u64)>,
    /// (t \[s\], values) of the newest samples, `window_s` long.
    history: VecDeque<(f64, Vec<f64>)>,
}

/// The camera as the page last saw it.
#[derive(Default)]
struct CameraShot {
    seq: u64,
    jpeg: Vec<u8>,
    json: Value,
}

/// The live site: its latest state, the cameras' latest looks, the stream.
pub struct LiveSite {
    title: String,
    pub broadcast: Broadcast,
    state: Mutex<Arc<str>>,
    shots: Mutex<Vec<CameraShot>>,
}

impl Site for LiveSite {
    fn get(&self, path: &str, query: &[(String, String)]) -> Reply {
        if let Some(a) = super::asset(path) {
            return a;
        }
        match path {
            "/api/info" => Reply::json(&json!({"mode": "live", "title": self.title})),
            "/api/state" => Reply::Body { content_type: "application/json", body: self.state.lock().map(|s| s.as_bytes().to_vec()).unwrap_or_default() },
            "/events" => Reply::Events(self.broadcast.subscribe()),
            "/frame.jpg" => {
                let k = query_f64(query, "camera").unwrap_or(0.0) as usize;
                match self.shots.lock().ok().and_then(|s| s.get(k).map(|s| s.jpeg.clone())).filter(|j| !j.is_empty()) {
                    Some(jpeg) => Reply::Body { content_type: "image/jpeg", body: jpeg },
                    None => Reply::NotFound,
                }
            }
            _ => Reply::NotFound,
        }
    }
}

/// The live view of a recording; stops when dropped.
pub struct LiveView {
    server: Server,
    pub site: Arc<LiveSite>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
}

impl LiveView {
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Page updates dropped for browsers that did not keep up.
    pub fn dropped_updates(&self) -> u64 {
        self.site.broadcast.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.sampler.take() {
            let _ = t.join();
        }
        self.site.broadcast.close();
    }
}

/// A view whose address is taken, waiting for its devices.
pub struct BoundView {
    opts: LiveOptions,
    listener: std::net::TcpListener,
}

/// Checks `opts` and takes its address: what can fail does, before any
/// device records.
pub fn bind(opts: LiveOptions) -> Result<BoundView> {
    if !(opts.window_s.is_finite() && opts.window_s > 0.0) {
        return Err(Error::input(format!("--view-window-s: must be > 0, got {}", opts.window_s)));
    }
    let listener = std::net::TcpListener::bind(&opts.addr).map_err(|e| Error::input(format!("--view {}: cannot listen: {e}", opts.addr)))?;
    Ok(BoundView { opts, listener })
}

/// Starts serving the view of `devices` (name, status). Camera devices are
/// those whose taps get frames.
pub fn start(bound: BoundView, title: &str, devices: Vec<(String, Arc<Status>)>, frames: RigFrames, clock: Clock) -> Result<LiveView> {
    let BoundView { opts, listener } = bound;
    let mut previewer = Previewer::new(opts.markers.clone())?;
    let mut stereo = opts.cameras.as_ref().map(|set| LiveStereo::new(set, &opts.markers)).transpose()?;
    // The strain needs a rod and the markers in the world; else a note says why not.
    let located = opts.camera.as_ref().is_some_and(|c| c.plane.is_some()) || stereo.is_some();
    let (mut observer, notes) = match (&opts.rod, &opts.camera) {
        (Some(rod), _) if located => {
            let mut rod = rod.clone();
            rod.gravity_m_s2 = frames.gravity();
            let obs = Observer::new(&rod, Mode::Weighted { energy_scale_j: None }).map_err(|e| Error::input(format!("--rod: {e}")))?;
            (Some(LiveObserver { obs, mount: rod.base, chosen_on_m: 0.0 }), vec![])
        }
        (Some(_), Some(_)) => (None, vec!["the camera file has no plane of motion: no strain".to_string()]),
        (Some(_), None) => {
            (None, vec!["--rod without --calibration: the strain needs the markers in the world (a calibrated camera or camera set)".to_string()])
        }
        (None, _) => (None, vec!["no --rod: the strain is not observed live".to_string()]),
    };
    for (_, st) in &devices {
        st.tap.wanted.store(true, Ordering::Relaxed);
    }
    let site = Arc::new(LiveSite { title: title.to_string(), broadcast: Broadcast::default(), state: Mutex::new("{}".into()), shots: Mutex::new(vec![]) });
    let server = Server::serve(listener, site.clone()).map_err(|e| Error::io(format!("--view {}: {e}", opts.addr)))?;
    let stop = Arc::new(AtomicBool::new(false));
    let (s, site2) = (stop.clone(), site.clone());
    let world = PlaneToWorld {
        world_from_board: frames.world_from_board(),
        marker_height_m: opts.camera.as_ref().and_then(|c| c.plane_offset_m).unwrap_or(frames.marker_height_m),
    };
    let sampler = std::thread::spawn(move || {
        let mut devices: Vec<Device> = devices
            .into_iter()
            .map(|(name, status)| Device {
                name,
                status,
                columns: vec![],
                last_rows: 0,
                last_change_ns: None,
                counts: VecDeque::new(),
                history: VecDeque::new(),
            })
            .collect();
        let mut last_send = Instant::now() - SEND_EVERY;
        // Cameras by the order of their first frame: a camera keeps its
        // slot (its /frame.jpg?camera=K) whichever others sent a frame.
        let mut camera_names: Vec<String> = vec![];
        let mut strain = Value::Null;
        // The first camera's frame whose strain waits for the robot's
        // samples: (host time [ns], its markers in the world).
        let mut strain_pending: Option<(i64, Vec<Option<Sighting>>)> = None;
        while !s.load(Ordering::Relaxed) {
            let now_ns = clock.now_ns();
            let now_s = now_ns as f64 * 1e-9;
            for d in devices.iter_mut() {
                sample(d, now_ns, opts.window_s);
            }
            if last_send.elapsed() >= SEND_EVERY {
                last_send = Instant::now();
                for d in devices.iter() {
                    let Some(tapped) = d.status.tap.frame.lock().ok().and_then(|mut f| f.take()) else { continue };
                    let k = camera_names.iter().position(|n| *n == d.name).unwrap_or_else(|| {
                        camera_names.push(d.name.clone());
                        camera_names.len() - 1
                    });
                    let preview = match stereo.as_mut().and_then(|s| s.previewer(&d.name)) {
                        Some(p) => p,
                        None => &mut previewer,
                    };
                    let look = look_at(preview, &tapped.image, opts.camera.as_ref(), &world);
                    let (json, jpeg, points, pixels) = match look {
                        Ok(l) => l,
                        Err(e) => (json!({"warnings": [format!("preview: {e}")], "markers": [], "expected": 0}), vec![], vec![], vec![]),
                    };
                    // The strain from the first camera's markers, or the
                    // set's triangulated ones (one frame at a time: a newer
                    // one waits until this one is done).
                    let points = match stereo.as_mut() {
                        Some(s) => s.seen(&d.name, tapped.t_ns, pixels, &world.world_from_board),
                        None => (k == 0).then(|| points.into_iter().map(|p| p.map(Sighting::point)).collect()),
                    };
                    if let Some(points) = points.filter(|_| observer.is_some() && strain_pending.is_none()) {
                        strain_pending = Some((tapped.t_ns, points));
                    }
                    if let Ok(mut shots) = site2.shots.lock() {
                        if shots.len() <= k {
                            shots.resize_with(k + 1, CameraShot::default);
                        }
                        let shot = &mut shots[k];
                        shot.seq += 1;
                        if !jpeg.is_empty() {
                            shot.jpeg = jpeg;
                        }
                        let mut json = json;
                        json["name"] = json!(d.name);
                        json["frame"] = Value::Null;
                        json["device_ms"] = finite(tapped.device_ms);
                        json["t_s"] = json!(tapped.t_ns as f64 * 1e-9);
                        json["frame_url"] = json!(format!("/frame.jpg?camera={k}&n={}", shot.seq));
                        shot.json = json;
                    }
                }
                if let (Some((t_ns, _)), Some(live)) = (&strain_pending, observer.as_mut()) {
                    // The base where the robot was when the frame was grabbed,
                    // once the robot's samples reach past that time.
                    let t_s = *t_ns as f64 * 1e-9;
                    if robot_reached(&devices, t_s) || now_s - t_s > BASE_WAIT_S {
                        let flange = robot_flange_at(&devices, t_s).unwrap_or_else(Pose::identity);
                        let base = frames.world_from_robot().compose(&flange).compose(&live.mount);
                        let points = strain_pending.take().map(|(_, p)| p).unwrap_or_default();
                        strain = live.observe(t_s, &base, &points);
                    }
                }
                let cameras: Vec<Value> = site2.shots.lock().map(|shots| shots.iter().map(|s| s.json.clone()).collect()).unwrap_or_default();
                let state = json!({
                    "mode": "live", "t_s": now_s,
                    "devices": devices.iter().map(|d| line(d, now_ns).to_json()).collect::<Vec<_>>(),
                    "cameras": cameras, "strain": strain,
                    "plots": devices.iter().flat_map(|d| {
                        let rows = d.history.iter().map(|(t, v)| (*t, v.as_slice()));
                        device_plots(&d.name, &d.columns, rows, (now_s - opts.window_s, now_s), None)
                    }).collect::<Vec<_>>(),
                    "notes": notes,
                })
                .to_string();
                site2.broadcast.send(&state);
                if let Ok(mut st) = site2.state.lock() {
                    *st = state.into();
                }
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
    });
    Ok(LiveView { server, site, stop, sampler: Some(sampler) })
}

fn sample(d: &mut Device, now_ns: i64, window_s: f64) {
    if d.columns.is_empty() {
        d.columns = d.status.tap.columns.lock().map(|c| c.clone()).unwrap_or_default();
    }
    let rows = d.status.rows.load(Ordering::Relaxed);
    if rows != d.last_rows {
        d.last_rows = rows;
        d.last_change_ns = Some(now_ns);
    }
    d.counts.push_back((now_ns, rows));
    while d.counts.front().is_some_and(|(t, _)| now_ns - t > 1_000_000_000) {
        d.counts.pop_front();
    }
    if let Some((t_ns, values)) = d.status.tap.latest() {
        let t = t_ns as f64 * 1e-9;
        if d.history.back().is_none_or(|(last, _)| *last < t) {
            d.history.push_back((t, values));
        }
    }
    let oldest = now_ns as f64 * 1e-9 - window_s;
    while d.history.front().is_some_and(|(t, _)| *t < oldest) {
        d.history.pop_front();
    }
}

fn line(d: &Device, now_ns: i64) -> DeviceLine {
    let st = &d.status;
    let rate_hz = match (d.counts.front(), d.counts.back()) {
        (Some((t0, r0)), Some((t1, r1))) if t1 > t0 => (r1 - r0) as f64 / ((t1 - t0) as f64 * 1e-9),
        _ => 0.0,
    };
    let values = d
        .history
        .back()
        .map(|(_, v)| shown_columns(&d.columns).into_iter().filter_map(|i| Some((d.columns[i].clone(), *v.get(i)?))).collect())
        .unwrap_or_default();
    let ended = st.settings.lock().is_ok_and(|s| s.iter().any(|(n, _)| n == record::camera::FILE_ENDED_AT_S));
    DeviceLine {
        name: d.name.clone(),
        state: if ended { DeviceState::Ended } else { DeviceState::of_silence(d.last_change_ns.map(|t| (now_ns - t) as f64 * 1e-9)) },
        rate_hz,
        rows: d.last_rows,
        gaps: st.gaps.load(Ordering::Relaxed),
        reconnects: st.reconnects.load(Ordering::Relaxed),
        values,
    }
}

/// The first robot that streams `actual_TCP_pose`, and the column of its x.
fn pose_robot(devices: &[Device]) -> Option<(&Device, usize)> {
    devices.iter().find_map(|d| Some((d, d.columns.iter().position(|c| c == "actual_TCP_pose_0")?)))
}

/// Whether the robot's samples reach past host time `t_s` \[s\] (or there
/// is no robot to wait for).
fn robot_reached(devices: &[Device], t_s: f64) -> bool {
    pose_robot(devices).is_none_or(|(d, _)| d.history.back().is_some_and(|(t, _)| *t >= t_s))
}

/// The flange pose at host time `t_s` \[s\], interpolated (slerp) between
/// the samples of the plots' history (a tenth of a second apart) as the
/// offline observer interpolates the robot's table; outside the history,
/// its nearest end.
fn robot_flange_at(devices: &[Device], t_s: f64) -> Option<Pose> {
    let (d, i) = pose_robot(devices)?;
    let poses = d.history.iter().filter_map(|(t, v)| Some((*t, <[f64; 6]>::try_from(v.get(i..i + 6)?).ok()?)));
    let trajectory = lie::trajectory::PoseTrajectory::from_ur(poses).ok()?;
    let (first_s, last_s) = trajectory.span_s();
    trajectory.at(t_s.clamp(first_s, last_s)).ok()
}

/// The page's camera part, its JPEG, the world positions and the pixels by
/// marker index.
type LookResult = (Value, Vec<u8>, Vec<Option<Vec3>>, Vec<Option<[f64; 2]>>);

/// Detects, numbers and (with a calibrated camera) locates the markers of
/// one frame; the page's camera part, its JPEG, and the world positions by
/// marker index.
fn look_at(previewer: &mut Previewer, image: &track::preview::Mat, camera: Option<&CameraModel>, world: &PlaneToWorld) -> Result<LookResult> {
    let look = previewer.look(image)?;
    let jpeg = jpeg_with_markers(image, &look.markers)?;
    let mut points: Vec<Option<Vec3>> = vec![None; look.expected];
    let mut pixels: Vec<Option<[f64; 2]>> = vec![None; look.expected];
    let markers: Vec<Value> = look
        .markers
        .iter()
        .map(|m| {
            if let Some(slot) = pixels.get_mut(m.index) {
                *slot = Some([m.u_px, m.v_px]);
            }
            let w = camera.and_then(|c| world.locate(c, m.u_px, m.v_px));
            if let (Some(p), Some(slot)) = (w, points.get_mut(m.index)) {
                *slot = Some(Vec3::new(p[0], p[1], p[2]));
            }
            let [x, y, z] = w.unwrap_or([f64::NAN; 3]);
            json!({"index": m.index, "u_px": m.u_px, "v_px": m.v_px, "x_m": finite(x), "y_m": finite(y), "z_m": finite(z)})
        })
        .collect();
    Ok((json!({"markers": markers, "expected": look.expected, "warnings": look.warnings}), jpeg, points, pixels))
}

/// One camera frame's markers: host time \[ns\], pixels by marker index.
type Pixels = (i64, Vec<Option<[f64; 2]>>);

/// A camera set in the live view: each camera's previewer (its own base
/// pixel), its latest markers in pixels, and the markers triangulated when
/// the set's first camera sends a frame and the others' latest are within
/// half its frame period.
struct LiveStereo {
    names: Vec<String>,
    cameras: Vec<PlacedCamera>,
    previewers: Vec<Previewer>,
    /// Per camera: its latest frame.
    latest: Vec<Option<Pixels>>,
    /// The first camera's frame period \[ns\], from its last two frames.
    period_ns: Option<i64>,
}

impl LiveStereo {
    /// The set's cameras, each previewed with `markers` as for it (its base pixel).
    fn new(set: &CameraSet, markers: &MarkerParams) -> Result<LiveStereo> {
        let cameras = set.cameras.iter().map(|c| PlacedCamera::new(&c.model).expect("a loaded set has poses")).collect();
        let previewers = set.names().iter().map(|n| Previewer::new(markers.for_camera(n))).collect::<std::result::Result<_, _>>()?;
        Ok(LiveStereo { names: set.names(), cameras, previewers, latest: vec![None; set.cameras.len()], period_ns: None })
    }

    fn previewer(&mut self, name: &str) -> Option<&mut Previewer> {
        let k = self.names.iter().position(|n| n == name)?;
        self.previewers.get_mut(k)
    }

    /// Camera `name`'s frame at `t_ns`; the set's first camera's returns the
    /// markers in the rig's world: triangulated, the ray of the one camera
    /// that saw one, or None.
    fn seen(&mut self, name: &str, t_ns: i64, pixels: Vec<Option<[f64; 2]>>, world_from_set: &Pose) -> Option<Vec<Option<Sighting>>> {
        let k = self.names.iter().position(|n| n == name)?;
        if k == 0 {
            if let Some((t0, _)) = &self.latest[0] {
                self.period_ns = Some(t_ns - t0).filter(|p| *p > 0);
            }
        }
        self.latest[k] = Some((t_ns, pixels));
        if k != 0 {
            return None;
        }
        let half_ns = self.period_ns? / 2;
        let views: Vec<Option<&Vec<Option<[f64; 2]>>>> =
            self.latest.iter().map(|l| l.as_ref().filter(|(t, _)| (t - t_ns).abs() <= half_ns).map(|(_, p)| p)).collect();
        let n = views.iter().flatten().map(|p| p.len()).max().unwrap_or(0);
        Some(
            (0..n)
                .map(|i| {
                    let px: Vec<Option<[f64; 2]>> = views.iter().map(|v| v.and_then(|p| p.get(i).copied().flatten())).collect();
                    let world = |p: &nalgebra::Vector3<f64>| world_from_set.transform_point(&Vec3::new(p.x, p.y, p.z));
                    match locate(&self.cameras, &px, 3.0) {
                        Located::Point { at, .. } => Some(Sighting::point(world(&at.position_m))),
                        Located::Ray { ray, .. } => {
                            let d = ray.direction;
                            Sighting::ray(world(&ray.origin_m), world_from_set.rot * Vec3::new(d.x, d.y, d.z))
                        }
                        _ => None,
                    }
                })
                .collect(),
        )
    }
}

/// The live observer: the offline observer's weighted mode on one frame
/// at a time, warm-started from the last.
struct LiveObserver {
    obs: Observer,
    /// The rod's base on the flange.
    mount: Pose,
    /// How deformed the frame its springs' scale was chosen on was \[m\].
    chosen_on_m: f64,
}

/// A frame this much more deformed than the one the scale was chosen on
/// chooses again.
const RECHOOSE_FACTOR: f64 = 1.2;

impl LiveObserver {
    /// The strain of the frame grabbed at `frame_t_s` (markers by index in
    /// the world, `base` the rod's base then). The springs' scale follows the offline rule (chosen
    /// on the most deformed frame) as far as the frames so far tell: chosen
    /// on the first frame, again on a frame much more deformed than that one
    /// and on a frame it fails.
    fn observe(&mut self, frame_t_s: f64, base: &Pose, points: &[Option<Sighting>]) -> Value {
        let obs = &mut self.obs;
        let n = obs.model.rod.markers.len();
        let mut measured = points.to_vec();
        measured.resize(n, None);
        let sigma = vec![LIVE_SIGMA_M; n];
        let deformation_m = obs.deformation_rms_m(base, &measured).unwrap_or(0.0);
        let more_deformed = deformation_m > RECHOOSE_FACTOR * self.chosen_on_m;
        let mut choose = |obs: &mut Observer| {
            obs.choose_energy_scale_on(base, &measured, &sigma);
            self.chosen_on_m = deformation_m;
        };
        if obs.energy_scale_j().is_none() || more_deformed {
            choose(obs);
        }
        obs.set_base(base);
        let failed =
            |r: &std::result::Result<observe::Observation, observe::ObserveError>| r.as_ref().map_or(true, |o| matches!(o.status, observe::Status::Failed(_)));
        let mut result = obs.observe(&measured, &sigma);
        if failed(&result) {
            choose(obs);
            obs.set_base(base);
            result = obs.observe(&measured, &sigma);
        }
        match result {
            Ok(ob) => {
                let nodes: Vec<(f64, [f64; 3])> = obs.model.node_x_m.iter().zip(&ob.nodal_strain).map(|(s, k)| (*s, [k[0], k[1], k[2]])).collect();
                let shape: Vec<[f64; 3]> =
                    std::iter::once(base.pos).chain(measured.iter().flatten().filter_map(|s| s.as_point())).map(|p| [p.x, p.y, p.z]).collect();
                strain_json(frame_t_s, &nodes, &shape, ob.marker_residual_m, &ob.status.label())
            }
            Err(e) => json!({"t_s": finite(frame_t_s), "svg": "", "shape_svg": "", "nodes": [], "residual_m": null, "status": format!("not observed: {e}")}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use track::calibrate::BoardSpec;
    use track::stereo::SetCamera;

    /// The set's first camera's frame triangulates its markers with the
    /// other camera's latest frame when that is within half a frame period,
    /// in the rig's world; a stale frame of the other camera is not used.
    #[test]
    fn the_live_view_triangulates_a_camera_sets_latest_frames() {
        let pair = track::synth::camera_set(2, 0.6, 30.0, &BoardSpec { cols: 9, rows: 6, square_m: 0.016 });
        let set = CameraSet { world: "board".into(), cameras: pair.into_iter().map(|(name, model)| SetCamera { name, model }).collect(), views: vec![] };
        let mut stereo = LiveStereo::new(&set, &MarkerParams::default()).unwrap();
        let points = [Vec3::new(0.05, 0.04, -0.01), Vec3::new(0.1, 0.05, -0.03)];
        let seen = |k: usize| -> Vec<Option<[f64; 2]>> { points.iter().map(|p| stereo.cameras[k].project(&nalgebra::Vector3::new(p.x, p.y, p.z))).collect() };
        let (left, right) = (seen(0), seen(1));
        let world_from_set = Pose { rot: lie::Mat3::identity(), pos: Vec3::new(0.0, 0.0, 1.0) };
        assert!(stereo.seen("left", 0, left.clone(), &world_from_set).is_none(), "no period yet");
        assert!(stereo.seen("right", 30_000_000, right.clone(), &world_from_set).is_none(), "the second camera waits for the first");
        let got = stereo.seen("left", 40_000_000, left.clone(), &world_from_set).unwrap();
        for (g, p) in got.iter().zip(&points) {
            assert!((g.unwrap().as_point().unwrap() - (p + Vec3::new(0.0, 0.0, 1.0))).norm() < 1e-9, "{g:?} vs {p:?}");
        }
        // 60 ms later the right camera's frame is 70 ms old: more than half
        // a period. The left camera's rays alone, through the markers.
        let stale = stereo.seen("left", 100_000_000, left, &world_from_set).unwrap();
        for (g, p) in stale.iter().zip(&points) {
            let ray = g.expect("a ray");
            assert!(ray.ray.is_some() && ray.miss(&(p + Vec3::new(0.0, 0.0, 1.0))).norm() < 1e-9, "{g:?} vs {p:?}");
        }
    }
}
