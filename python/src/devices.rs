//! What needs OpenCV and the devices (the `devices` feature, as the
//! `rodlab` binary has it): tracking and calibrating, recording a rig, and
//! the emulators that speak the devices' bytes, for scripted lab days.

use crate::convert::{self, py_dict, to_python};
use crate::errors::{to_py, value_error, IntoPy};
use crate::work;
use crate::workflows::{optional_path, progress};
use lab::SessionDir;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Tracks the coloured markers of `video` (a video file or a directory of
/// images) with `camera` (camera.toml) and `markers` (markers.toml; default
/// red markers) into `out` (markers.parquet; default beside the video).
/// As `rodlab track`: `frames` (a session's frames table), `overlay` (a
/// directory for annotated frames, one every `overlay_every`),
/// `marker_height_m`. With `cameras` (cameras.toml of a camera set) instead
/// of `camera`, `video` is one video per camera and the markers are
/// triangulated in 3-D (`epipolar_gate_px`). Returns the run's figures.
#[pyfunction]
#[pyo3(signature = (video, camera=None, *, cameras=None, markers=None, out=None, fps=None, frames=None, overlay=None, overlay_every=1, marker_height_m=None,
    epipolar_gate_px=3.0, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn track<'py>(
    py: Python<'py>,
    video: &Bound<'py, PyAny>,
    camera: Option<&Bound<'py, PyAny>>,
    cameras: Option<&Bound<'py, PyAny>>,
    markers: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    fps: Option<f64>,
    frames: Option<&Bound<'py, PyAny>>,
    overlay: Option<&Bound<'py, PyAny>>,
    overlay_every: usize,
    marker_height_m: Option<f64>,
    epipolar_gate_px: f64,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (camera, cameras) = (optional_path(camera, "camera")?, optional_path(cameras, "cameras")?);
    let Some(camera) = camera else {
        let Some(cameras) = cameras else { return Err(value_error("track: give camera= (one camera) or cameras= (a camera set)")) };
        if frames.is_some_and(|f| !f.is_none()) || overlay.is_some_and(|o| !o.is_none()) || marker_height_m.is_some() {
            return Err(value_error("frames, overlay and marker_height_m are for one camera; with cameras= each video's frames table is the one beside it"));
        }
        let inputs = convert::paths(video, "video")?;
        let out = optional_path(out, "out")?.unwrap_or_else(|| inputs[0].with_file_name("markers.parquet"));
        let req = lab_devices::track::SetTrackRequest { inputs, cameras, markers: optional_path(markers, "markers")?, fps, out: out.clone(), epipolar_gate_px };
        let t = work::run(py, self::progress(progress), move |p| lab_devices::track::track_set(&req, p))?;
        return Ok(py_dict!(py, {
            "out" => out,
            "frames" => t.frames,
            "markers" => t.markers,
            "points" => t.points,
            "rays" => t.rays,
            "disagreements" => t.disagreements,
            "warnings" => t.warnings.clone(),
        }));
    };
    if cameras.is_some() {
        return Err(value_error("track: give camera= or cameras=, not both"));
    }
    let input = convert::path(video, "video")?;
    let out = optional_path(out, "out")?.unwrap_or_else(|| input.with_file_name("markers.parquet"));
    let mut req = lab_devices::track::TrackRequest::new(&input, &camera, &out);
    req.markers = optional_path(markers, "markers")?;
    req.fps = fps;
    req.frames = optional_path(frames, "frames")?;
    req.overlay = optional_path(overlay, "overlay")?;
    req.overlay_every = overlay_every.max(1);
    req.marker_height_m = marker_height_m;
    let t = work::run(py, self::progress(progress), move |p| lab_devices::track::track(&req, p))?;
    Ok(py_dict!(py, {
        "out" => out,
        "frames" => t.frames,
        "markers" => t.markers,
        "missing" => t.missing,
        "decode_fps" => t.decode_fps,
        "track_fps" => t.track_fps,
        "warnings" => t.warnings.clone(),
    }))
}

/// Calibrates a camera from the checkerboard images in `images` (inner
/// corners `board`, e.g. "9x6", squares of `square_m` [m]), the plane of
/// motion from `plane_image` (default: the first image); writes `out`
/// (camera.toml). Refused above `max_rms_px` of reprojection error. A
/// camera set instead: `camera_images` ({name: directory}, images of one
/// name taken at the same time), the world the board in `plane_view`;
/// `corners_out` writes the corners found as CSV; `out` is cameras.toml.
#[pyfunction]
#[pyo3(signature = (images=None, *, board, square_m, out, plane_image=None, max_rms_px=1.0, camera_images=None, plane_view=None, corners_out=None))]
#[allow(clippy::too_many_arguments)]
pub fn calibrate<'py>(
    py: Python<'py>,
    images: Option<&Bound<'py, PyAny>>,
    board: &str,
    square_m: f64,
    out: &Bound<'py, PyAny>,
    plane_image: Option<&Bound<'py, PyAny>>,
    max_rms_px: f64,
    camera_images: Option<std::collections::BTreeMap<String, PathBuf>>,
    plane_view: Option<String>,
    corners_out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = convert::path(out, "out")?;
    let board = board.to_string();
    let images = optional_path(images, "images")?;
    let Some(images) = images else {
        let Some(set) = camera_images else {
            return Err(value_error("calibrate: give images= (one camera) or camera_images= ({name: directory}, a camera set)"));
        };
        let named: Vec<String> = set.iter().map(|(name, dir)| format!("{name}={}", dir.display())).collect();
        let corners = optional_path(corners_out, "corners_out")?;
        let c = work::run(py, None, move |_| {
            lab_devices::track::calibrate_set(&named, &board, square_m, plane_view.as_deref(), max_rms_px, &out, corners.as_deref()).map(|c| (c, out))
        })?;
        let (calibrated, out) = c;
        let cameras = PyDict::new(py);
        for (name, images, used, rms) in &calibrated.summary.cameras {
            cameras.set_item(name, py_dict!(py, { "images" => *images, "used" => *used, "rms_px" => *rms }))?;
        }
        return Ok(
            py_dict!(py, { "out" => out, "cameras" => cameras, "shared_views" => calibrated.summary.shared_views, "iterations" => calibrated.summary.iterations }),
        );
    };
    if camera_images.is_some() {
        return Err(value_error("calibrate: give images= or camera_images=, not both"));
    }
    let plane = optional_path(plane_image, "plane_image")?;
    let c = work::run(py, None, move |_| lab_devices::track::calibrate(&images, &board, square_m, plane.as_deref(), max_rms_px, &out).map(|c| (c, out)))?;
    let (calibrated, out) = c;
    Ok(py_dict!(py, {
        "out" => out,
        "rms_px" => calibrated.summary.rms_px,
        "images" => calibrated.summary.images,
        "used" => calibrated.summary.used.clone(),
        "rejected" => calibrated.summary.rejected.clone(),
    }))
}

/// Records a session from the devices of `rig` (a rig file) into `out`,
/// for `duration_s` seconds. Ctrl-C stops the recording cleanly (the
/// session is finished and readable) and then raises KeyboardInterrupt.
/// Returns a dictionary: "session", "devices" (each device's rows, gaps,
/// errors), "wall_time_s", "warnings".
#[pyfunction]
#[pyo3(signature = (rig, out, duration_s, *, append=false, progress=None))]
pub fn record<'py>(
    py: Python<'py>,
    rig: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    duration_s: f64,
    append: bool,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return Err(to_py(lab::Error::input(format!("duration_s: must be positive, got {duration_s}"))));
    }
    let rig_path = convert::path(rig, "rig")?;
    let (rig, rig_text) = session::Rig::from_file(&rig_path).py_err()?;
    let out = SessionDir::new(convert::path(out, "out")?);
    let stop = Arc::new(AtomicBool::new(false));
    let stop_worker = stop.clone();
    let run = move |p: &dyn lab::Progress| {
        let req = lab_devices::record::RecordRequest {
            rig: &rig,
            rig_path: &rig_path,
            rig_text: &rig_text,
            out: &out,
            append,
            duration_s: Some(duration_s),
            stop: stop_worker,
            view: None,
        };
        lab_devices::record::record(&req, p)
    };
    // Ctrl-C stops the recorder and waits for it to finish the session.
    let recording = work::run_until_stopped(py, self::progress(progress), stop, run)?;
    Ok(py_dict!(py, {
        "session" => recording.session.path().to_path_buf(),
        "devices" => to_python(py, &recording.devices)?,
        "wall_time_s" => recording.wall_time_s,
        "warnings" => recording.warnings.clone(),
    }))
}

/// A UR controller's RTDE server on loopback (the recorder's and ur_rtde's
/// peer): `controller` "e-series" (500 Hz) or "cb3" (125 Hz), a sinusoidal
/// flange motion of `amplitude_m`, or the flange `trajectory` of a CSV
/// (t_s,x_m,y_m,z_m,rx,ry,rz; its t = 0 at `start_at_unix_s`); faults from
/// `quirk` (as `rodlab emulate robot --quirk`). Serves until `stop()` (or
/// the end of a `with` block); `address` is "127.0.0.1:PORT" (port 0 picks
/// a free one).
#[pyclass(module = "rodlab")]
pub struct RobotEmulator {
    emulator: Option<::record::rtde::Emulator>,
    address: String,
}

#[pymethods]
impl RobotEmulator {
    #[new]
    #[pyo3(signature = (bind="127.0.0.1:0", *, controller="e-series", amplitude_m=0.02, quirk="", trajectory=None, start_at_unix_s=None))]
    fn new(
        bind: &str,
        controller: &str,
        amplitude_m: f64,
        quirk: &str,
        trajectory: Option<&Bound<'_, PyAny>>,
        start_at_unix_s: Option<f64>,
    ) -> PyResult<RobotEmulator> {
        let controller = match controller {
            "e-series" => ::record::rtde::Controller::ESeries,
            "cb3" => ::record::rtde::Controller::Cb3,
            other => return Err(value_error(format!("controller: 'e-series' or 'cb3', got '{other}'"))),
        };
        let quirks = quirk.parse().map_err(|e| value_error(format!("quirk: {e}")))?;
        let trajectory = optional_path(trajectory, "trajectory")?.map(|p| lab::tables::read_trajectory(&p)).transpose().py_err()?;
        let emulator = lab_devices::emulate::RobotEmulator {
            controller,
            amplitude_m,
            quirks,
            trajectory,
            start_at_unix_s,
            ..lab_devices::emulate::RobotEmulator::new(bind)
        }
        .start()
        .py_err()?;
        Ok(RobotEmulator { address: emulator.addr.to_string(), emulator: Some(emulator) })
    }

    /// "host:port" it listens on.
    #[getter]
    fn address(&self) -> String {
        self.address.clone()
    }

    /// Data packages sent so far.
    #[getter]
    fn sent(&self) -> u64 {
        self.emulator.as_ref().map_or(0, |e| e.sent.load(Ordering::Relaxed))
    }

    /// Stops serving (idempotent).
    fn stop(&mut self, py: Python<'_>) {
        if let Some(mut e) = self.emulator.take() {
            py.detach(move || e.stop());
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop(py);
    }
}

/// A serial sensor played on one end of a pseudo-terminal pair (socat), on
/// a thread of its own until `stop()`.
struct SerialPlayer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<lab::Result<u64>>>,
}

impl SerialPlayer {
    fn start(run: impl FnOnce(Arc<AtomicBool>) -> lab::Result<u64> + Send + 'static) -> SerialPlayer {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        SerialPlayer { stop, thread: Some(std::thread::spawn(move || run(s))) }
    }

    /// Stops and returns what was sent.
    fn stop(&mut self, py: Python<'_>) -> PyResult<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(t) = self.thread.take() else { return Ok(0) };
        let result = py.detach(move || t.join());
        result.map_err(|_| PyRuntimeError::new_err("the emulator's thread panicked"))?.py_err()
    }
}

/// A Robotiq FT 300 on serial port `port` (one end of a socat pty pair):
/// `rate_hz` frames a second of a constant wrench `bias` [N, N m] with
/// Gaussian noise (`noise_n` per force, `noise_nm` per moment component),
/// or the `wrench` of a CSV (t_s, fx_n ... mz_nm; its t = 0 at
/// `start_at_unix_s`) plus the bias; `inject_garbage_every` N frames a
/// garbled and a truncated frame; `streaming_at_start`: streams before any
/// start command. As `rodlab emulate ft300`. Plays until `stop()`, which
/// returns the frames sent.
#[pyclass(module = "rodlab")]
pub struct Ft300Emulator {
    player: SerialPlayer,
}

#[pymethods]
impl Ft300Emulator {
    #[new]
    #[pyo3(signature = (port, *, rate_hz=100.0, bias=None, noise_n=0.0, noise_nm=0.0, seed=1, wrench=None, start_at_unix_s=None, inject_garbage_every=None,
        streaming_at_start=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        port: &Bound<'_, PyAny>,
        rate_hz: f64,
        bias: Option<&Bound<'_, PyAny>>,
        noise_n: f64,
        noise_nm: f64,
        seed: u64,
        wrench: Option<&Bound<'_, PyAny>>,
        start_at_unix_s: Option<f64>,
        inject_garbage_every: Option<u64>,
        streaming_at_start: bool,
    ) -> PyResult<Ft300Emulator> {
        let bias = convert::floats(bias, "bias")?;
        let bias: [f64; 6] = match bias.len() {
            0 => [0.0; 6],
            6 => bias.try_into().expect("six"),
            n => return Err(value_error(format!("bias: expected six numbers fx, fy, fz, mx, my, mz, got {n}"))),
        };
        let wrench = optional_path(wrench, "wrench")?.map(|p| lab::tables::read_wrench(&p)).transpose().py_err()?;
        let ft = lab_devices::emulate::Ft300Emulator {
            bias,
            noise_n,
            noise_nm,
            seed,
            wrench,
            start_at_unix_s,
            inject_garbage_every,
            streaming_at_power_up: streaming_at_start,
            ..lab_devices::emulate::Ft300Emulator::new(rate_hz)
        };
        let line = lab_devices::emulate::open_port(&convert::path(port, "port")?, 19_200).py_err()?;
        Ok(Ft300Emulator { player: SerialPlayer::start(move |stop| ft.run(line, stop)) })
    }

    /// Stops playing; returns the frames sent.
    fn stop(&mut self, py: Python<'_>) -> PyResult<u64> {
        self.player.stop(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.player.stop(py).map(|_| ())
    }
}

/// An ATI Net F/T on loopback (the recorder's peer, as `rodlab emulate
/// netft`): RDT records over UDP at `bind` (port 0 picks a free one; its
/// calibration on TCP at the port below), `rate_hz` records a second of
/// the constant `wrench` [N, N m], its calibration `counts_per_force` and
/// `counts_per_torque`, faults from `quirk` ("lose=0.01,reorder=0.01").
/// Serves until `stop()` (or the end of a `with` block); `address` is
/// "127.0.0.1:PORT", what a rig's `[[netft]] address` takes.
#[pyclass(module = "rodlab")]
pub struct NetFtEmulator {
    emulator: Option<::record::netft::NetFtEmulator>,
    address: String,
}

#[pymethods]
impl NetFtEmulator {
    #[new]
    #[pyo3(signature = (bind="127.0.0.1:0", *, rate_hz=1000.0, wrench=None, counts_per_force=1_000_000, counts_per_torque=1_000_000, quirk=""))]
    fn new(bind: &str, rate_hz: f64, wrench: Option<&Bound<'_, PyAny>>, counts_per_force: u32, counts_per_torque: u32, quirk: &str) -> PyResult<NetFtEmulator> {
        let wrench = match convert::floats(wrench, "wrench")?.as_slice() {
            [] => [0.0; 6],
            w => <[f64; 6]>::try_from(w).map_err(|_| value_error(format!("wrench: expected six numbers fx, fy, fz [N], mx, my, mz [N m], got {}", w.len())))?,
        };
        let quirks = quirk.parse().map_err(|e| value_error(format!("quirk: {e}")))?;
        let spec = lab_devices::emulate::NetFtEmulatorSpec { bind: bind.to_string(), rate_hz, wrench, counts_per_force, counts_per_torque, quirks };
        let emulator = spec.start().py_err()?;
        let address = emulator.addr.to_string();
        Ok(NetFtEmulator { emulator: Some(emulator), address })
    }

    /// "127.0.0.1:PORT" (RDT, UDP; the calibration on TCP PORT - 1).
    #[getter]
    fn address(&self) -> String {
        self.address.clone()
    }

    /// Records sent so far.
    #[getter]
    fn sent(&self) -> u64 {
        self.emulator.as_ref().map_or(0, |e| e.sent.load(Ordering::Relaxed))
    }

    /// Stops serving.
    fn stop(&mut self, py: Python<'_>) {
        if let Some(e) = self.emulator.take() {
            py.detach(move || drop(e));
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop(py);
    }
}

/// An ASCII line sensor (a load cell's amplifier) on serial port `port`
/// (one end of a socat pty pair), as `rodlab emulate ascii-sensor`:
/// `rate_hz` lines a second of `seq,t_us,force_mn` (`separator` between
/// the fields), or the `values` of a CSV (t_s, then one column per field,
/// each row held until the next; its t = 0 at `start_at_unix_s`). Plays
/// until `stop()`, which returns the lines sent.
#[pyclass(module = "rodlab")]
pub struct AsciiSensorEmulator {
    player: SerialPlayer,
}

#[pymethods]
impl AsciiSensorEmulator {
    #[new]
    #[pyo3(signature = (port, *, rate_hz=1000.0, separator=",", values=None, start_at_unix_s=None))]
    fn new(
        port: &Bound<'_, PyAny>,
        rate_hz: f64,
        separator: &str,
        values: Option<&Bound<'_, PyAny>>,
        start_at_unix_s: Option<f64>,
    ) -> PyResult<AsciiSensorEmulator> {
        let separator = session::rig::Separator::parse(separator).map_err(|e| value_error(format!("separator: {e}")))?;
        let values = optional_path(values, "values")?.map(|p| lab::tables::read_time_table(&p, None).map(|t| t.rows)).transpose().py_err()?;
        let cells = lab_devices::emulate::AsciiEmulator { rate_hz, separator, values, start_at_unix_s };
        let line = lab_devices::emulate::open_port(&convert::path(port, "port")?, 115_200).py_err()?;
        Ok(AsciiSensorEmulator { player: SerialPlayer::start(move |stop| cells.run(line, stop)) })
    }

    /// Stops playing; returns the lines sent.
    fn stop(&mut self, py: Python<'_>) -> PyResult<u64> {
        self.player.stop(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.player.stop(py).map(|_| ())
    }
}
