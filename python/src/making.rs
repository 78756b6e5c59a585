//! Sessions from Python, as the command line makes and reads them:
//! `synth_session` (`rodlab synth session`), `import_c3d` and
//! `import_table` (`rodlab import c3d|table`), and a session's `info`,
//! `check` and `export` (`rodlab session info|check|export`). Each answers
//! with a dictionary of what the command prints.

use crate::convert::{self, py_dict};
use crate::errors::{value_error, IntoPy};
use crate::work;
use crate::workflows::{optional_path, progress};
use lab::synth::{SynthFiles, SynthRequest};
use lab::SessionDir;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use session::aligned::{AlignOptions, JoinedStream};
use std::path::PathBuf;

/// Makes a lab session from the simulator (`rodlab synth session`) of
/// `rod` (a `Rod`, or a rod file) in `scene`: the robot's RTDE stream, the force sensor, the tracked markers (with
/// `marker_noise_m` of noise), written into `out`, and the truth (the
/// simulation's tables, truth.toml) into `truth` (default: OUT-truth).
/// The truth's material is `params`' (an identified.toml) or the rod
/// file's, with `e_pa`, `g_pa`, `rho_kg_m3` overriding. Returns
/// "session", "truth", "end_s", "robot_samples", "camera_frames".
#[pyfunction]
#[pyo3(signature = (*, scene, rod, out, rig=None, params=None, e_pa=None, g_pa=None, rho_kg_m3=None, trajectory=None, truth=None, duration_s=None,
    marker_noise_m=3e-4, robot_hz=125.0, sensor_hz=100.0, flange_sensor=true, force_noise_n=0.1, moment_noise_nm=0.005, load_cell_noise_n=0.005,
    ft_bias=None, mounted_at_s=0.0, seed=1, tip_robot=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn synth_session<'py>(
    py: Python<'py>,
    scene: &Bound<'py, PyAny>,
    rod: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    rig: Option<&Bound<'py, PyAny>>,
    params: Option<&Bound<'py, PyAny>>,
    e_pa: Option<f64>,
    g_pa: Option<f64>,
    rho_kg_m3: Option<f64>,
    trajectory: Option<&Bound<'py, PyAny>>,
    truth: Option<&Bound<'py, PyAny>>,
    duration_s: Option<f64>,
    marker_noise_m: f64,
    robot_hz: f64,
    sensor_hz: f64,
    flange_sensor: bool,
    force_noise_n: f64,
    moment_noise_nm: f64,
    load_cell_noise_n: f64,
    ft_bias: Option<&Bound<'py, PyAny>>,
    mounted_at_s: f64,
    seed: u64,
    tip_robot: Option<String>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (scene, out) = (convert::path(scene, "scene")?, convert::path(out, "out")?);
    let (rig, params, trajectory) = (optional_path(rig, "rig")?, optional_path(params, "params")?, optional_path(trajectory, "trajectory")?);
    let files = SynthFiles { params: params.as_deref(), rig: rig.as_deref(), trajectory: trajectory.as_deref() };
    let material = [e_pa, g_pa, rho_kg_m3];
    // A Rod (from a file, a text or a dictionary: a truth changed in
    // Python), or a rod file.
    let read = match rod.cast::<crate::rodpy::Rod>() {
        Ok(r) => {
            let r = r.get();
            SynthRequest::of_rod(&scene, &r.path, r.rod.clone(), &out, files, material)
        }
        Err(_) => SynthRequest::read(&scene, &convert::path(rod, "rod")?, &out, files, material),
    }
    .py_err()?;
    let ft_bias = match convert::floats(ft_bias, "ft_bias")?.as_slice() {
        [] => [0.0; 6],
        b => <[f64; 6]>::try_from(b).map_err(|_| value_error(format!("ft_bias: expected six numbers (fx, fy, fz [N], mx, my, mz [N m]), got {}", b.len())))?,
    };
    let req = SynthRequest {
        truth: optional_path(truth, "truth")?.unwrap_or_else(|| PathBuf::from(format!("{}-truth", out.display()))),
        duration_s,
        marker_noise_m,
        robot_hz,
        sensor_hz,
        flange_sensor,
        force_noise_n,
        moment_noise_nm,
        load_cell_noise_n,
        ft_bias,
        mounted_at_s,
        seed,
        tip_robot,
        ..read
    };
    let s = work::run(py, self::progress(progress), move |p| lab::synth::synthesise(&req, p))?;
    Ok(py_dict!(py, {
        "session" => s.session.path().to_path_buf(),
        "truth" => s.truth_dir.clone(),
        "end_s" => s.end_s,
        "robot_samples" => s.robot_samples,
        "camera_frames" => s.camera_frames,
    }))
}

/// `rodlab archive index`: every session under `dir` as one table, written
/// to `out` (default DIR/archive.parquet) and as CSV beside it. Returns
/// "parquet", "csv", "sessions", "identified" (sessions with an
/// identification) and "warnings".
#[pyfunction]
#[pyo3(signature = (dir, *, out=None))]
pub fn archive_index<'py>(py: Python<'py>, dir: &Bound<'py, PyAny>, out: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let dir = convert::path(dir, "dir")?;
    let out = match out {
        Some(o) => convert::path(o, "out")?,
        None => dir.join("archive.parquet"),
    };
    let (index, (parquet, csv)) = py
        .detach(|| {
            let index = lab::archive::index(&dir)?;
            let files = lab::archive::write(&index, &out)?;
            Ok::<_, lab::Error>((index, files))
        })
        .py_err()?;
    let identified = index.rows.iter().filter(|r| r.identification.is_some()).count();
    Ok(py_dict!(py, { "parquet" => parquet, "csv" => csv, "sessions" => index.rows.len(), "identified" => identified, "warnings" => index.warnings.clone() }))
}

/// `rodlab archive report`: E, G and rho of every identification under
/// `dir` over the days, a colour per specimen -> `out`/index.html. Returns
/// "report" (its index.html), "fits" (one dictionary per identification:
/// identified, specimen, sessions, day, start_utc, e_pa, g_pa, rho_kg_m3
/// as [value, low, high], rms_error_mm) and "warnings".
#[pyfunction]
#[pyo3(signature = (dir, *, out))]
pub fn archive_report<'py>(py: Python<'py>, dir: &Bound<'py, PyAny>, out: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let dir = convert::path(dir, "dir")?;
    let out = convert::path(out, "out")?;
    let (index, fits) = py
        .detach(|| {
            let index = lab::archive::index(&dir)?;
            let fits = lab::archive::report(&index, &out)?;
            Ok::<_, lab::Error>((index, fits))
        })
        .py_err()?;
    Ok(py_dict!(py, { "report" => out.join("index.html"), "fits" => convert::to_python(py, &fits)?, "warnings" => index.warnings.clone() }))
}

/// Motion-capture recordings (C3D) into sessions (`rodlab import c3d`):
/// `files` (a path or a list), `rod` (a rod file: its markers), `map`
/// (the map file: labels, vertical axis, base), `out` (the session for one
/// file, their directory for several). Returns one dictionary per
/// session: "session", "frames", "rate_hz", "units", "missing" (label:
/// samples), "base_frames", "release_s", "warnings".
#[pyfunction]
#[pyo3(signature = (files, *, rod, map, out, progress=None))]
pub fn import_c3d<'py>(
    py: Python<'py>,
    files: &Bound<'py, PyAny>,
    rod: &Bound<'py, PyAny>,
    map: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    import(py, files, rod, map, out, progress, false)
}

/// Motion-capture trajectories as tables (Qualisys TSV, Motive CSV, Vicon
/// Nexus CSV, a plain CSV whose columns the map's `[table]` names) into
/// sessions (`rodlab import table`). Arguments and answer as `import_c3d`.
#[pyfunction]
#[pyo3(signature = (files, *, rod, map, out, progress=None))]
pub fn import_table<'py>(
    py: Python<'py>,
    files: &Bound<'py, PyAny>,
    rod: &Bound<'py, PyAny>,
    map: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    import(py, files, rod, map, out, progress, true)
}

fn import<'py>(
    py: Python<'py>,
    files: &Bound<'py, PyAny>,
    rod: &Bound<'py, PyAny>,
    map: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    progress: Option<&Bound<'py, PyAny>>,
    table: bool,
) -> PyResult<Bound<'py, PyList>> {
    let files = match convert::path(files, "files") {
        Ok(one) => vec![one],
        Err(_) => convert::paths(files, "files")?,
    };
    let (rod, map, out) = (convert::path(rod, "rod")?, convert::path(map, "map")?, convert::path(out, "out")?);
    let rod = lab::read_rod(&rod, None, None).py_err()?;
    let map = lab::c3d::MocapMap::read(&map, rod.markers.len()).py_err()?;
    let imported = work::run(py, self::progress(progress), move |p| {
        let read = |f: &std::path::Path| if table { lab::mocap_tables::read_table(f, &map) } else { lab::c3d::read_c3d(f) };
        lab::c3d::import_files(&files, &map, &rod, &out, &read, p)
    })?;
    let list = PyList::empty(py);
    for s in &imported {
        let missing = PyDict::new(py);
        for (label, _, samples) in &s.missing {
            missing.set_item(label, samples)?;
        }
        list.append(py_dict!(py, {
            "session" => s.session.clone(),
            "frames" => s.frames,
            "rate_hz" => s.rate_hz,
            "units" => s.units.clone(),
            "missing" => missing,
            "base_frames" => s.base_frames,
            "release_s" => s.release.as_ref().map(|r| r.t_s),
            "warnings" => s.warnings.clone(),
        }))?;
    }
    Ok(list)
}

/// `rodlab session info`: each stream's rows, span and rate, each device's
/// outages, and the warnings reading them gave.
pub fn info<'py>(py: Python<'py>, dir: &SessionDir) -> PyResult<Bound<'py, PyDict>> {
    let info = lab::info::info(dir).py_err()?;
    let streams = PyDict::new(py);
    for s in &info.streams {
        streams.set_item(
            &s.name,
            py_dict!(py, { "rows" => s.rows, "span_s" => s.span_s, "rate_hz" => s.rate_hz, "device_period_s" => s.device_period_s, "device_gaps" => s.device_gaps }),
        )?;
    }
    let devices = PyDict::new(py);
    for d in &info.devices {
        let gaps = PyList::empty(py);
        for g in &d.gaps {
            gaps.append(py_dict!(py, {
                "start_s" => g.start_host_ns as f64 * 1e-9,
                "end_s" => g.end_host_ns as f64 * 1e-9,
                "reason" => g.reason.as_str(),
                "missing_samples" => g.missing_samples,
            }))?;
        }
        devices.set_item(&d.name, py_dict!(py, { "gaps" => gaps, "outage_s" => d.outage_s(), "summary" => d.describe() }))?;
    }
    Ok(py_dict!(py, { "streams" => streams, "devices" => devices, "warnings" => info.warnings.clone() }))
}

/// `rodlab session check`: every chunk, table, video and device read;
/// "ok", "problems" (one line each), "warnings", "rows".
pub fn check<'py>(py: Python<'py>, dir: &SessionDir, max_outage_s: f64, videos: bool) -> PyResult<Bound<'py, PyDict>> {
    lab::error::non_negative("max_outage_s", max_outage_s).py_err()?;
    let report = lab::info::check(dir, &lab::info::CheckOptions { max_outage_s, videos, count_frames: None }).py_err()?;
    Ok(py_dict!(py, { "ok" => report.ok(), "problems" => report.problems.clone(), "warnings" => report.warnings.clone(), "rows" => report.rows() }))
}

/// `format` ("csv", "json", "parquet", "ipc"), or a ValueError naming them.
pub fn table_format(format: &str) -> PyResult<session::TableFormat> {
    session::TableFormat::parse(format)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("format '{format}': one of {}", session::TableFormat::NAMES.join(", "))))
}

/// `rodlab session export`: every table into `to` in `format`, and the
/// metadata as JSON; "files" (path: rows, None for the metadata) and
/// "warnings". With `aligned`, also the aligned table; "aligned": the
/// rows' stream and each joined stream's rule ([`joined`]).
pub fn export<'py>(
    py: Python<'py>,
    dir: &SessionDir,
    to: &std::path::Path,
    aligned: Option<&AlignOptions>,
    format: session::TableFormat,
) -> PyResult<Bound<'py, PyDict>> {
    let out = py.detach(|| lab::export::export_with(dir, to, aligned, format)).py_err()?;
    let files = PyDict::new(py);
    for (file, rows) in &out.files {
        files.set_item(file, rows)?;
    }
    let aligned = match &out.aligned {
        Some((on, streams)) => Some(joined(py, on, streams)?),
        None => None,
    };
    Ok(py_dict!(py, { "files" => files, "warnings" => out.warnings.clone(), "aligned" => aligned }))
}

/// {"on": the rows' stream, "streams": [{name, tolerance_s, rows_without, rows_in_outages}]}.
pub fn joined<'py>(py: Python<'py>, on: &str, streams: &[JoinedStream]) -> PyResult<Bound<'py, PyDict>> {
    let list = streams
        .iter()
        .map(|j| {
            Ok(py_dict!(py, {
                "name" => j.name.clone(), "tolerance_s" => j.tolerance_s, "rows_without" => j.rows_without, "rows_in_outages" => j.rows_in_outages
            }))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(py_dict!(py, { "on" => on.to_string(), "streams" => list }))
}

/// The options of an aligned table from Python's arguments (`matching`:
/// "previous" or "nearest").
pub fn align_options(on: Option<String>, streams: Option<Vec<String>>, tolerance_s: Option<f64>, matching: &str, strict: bool) -> PyResult<AlignOptions> {
    let matching = session::aligned::Match::parse(matching)
        .ok_or_else(|| crate::errors::to_py(lab::Error::input(format!("match='{matching}': one of 'previous', 'nearest'"))))?;
    let damaged = if strict { session::Damaged::Refuse } else { session::Damaged::Skip };
    Ok(AlignOptions { on, streams: streams.unwrap_or_default(), tolerance_s, matching, damaged })
}
