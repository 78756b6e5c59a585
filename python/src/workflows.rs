//! The lab's workflows from Python: identify (statics and dynamics),
//! simulate, validate, observe, and with OpenCV track. Each builds the
//! library's request from keyword arguments named as the command line's
//! flags, runs it as long work (`work.rs`) and answers with small
//! classes or dictionaries of numbers and paths.

use crate::convert::{self, array, py_dict, to_python};
use crate::errors::{value_error, IntoPy};
use crate::rodpy::Rod;
use crate::work;
use lab::identify::{IdentifyRequest, Source};
use lab::SessionDir;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `out`, or a new directory under the system's temporary directory
/// (kept: the results' paths point into it).
pub(crate) fn out_dir(out: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<PathBuf> {
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return convert::path(o, "out");
    }
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("rodlab-{what}-{}-{stamp}-{}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).map_err(|e| crate::errors::to_py(lab::Error::io(format!("{}: cannot create: {e}", dir.display()))))?;
    Ok(dir)
}

fn sessions(v: &Bound<'_, PyAny>) -> PyResult<Vec<SessionDir>> {
    Ok(convert::paths(v, "sessions")?.into_iter().map(SessionDir::new).collect())
}

fn material(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<rod::Material>> {
    let values = convert::floats(v, name)?;
    lab::params::material(name, &values).py_err()
}

pub(crate) fn progress(v: Option<&Bound<'_, PyAny>>) -> Option<Py<PyAny>> {
    v.filter(|v| !v.is_none()).map(|v| v.clone().unbind())
}

/// A finished identification: the values with their 95 % intervals, the
/// compared variants, and the files written.
#[pyclass(module = "rodlab", frozen)]
pub struct Identified {
    /// identified.toml (what `params=` takes).
    #[pyo3(get)]
    identified_toml: PathBuf,
    /// The report page (index.html).
    #[pyo3(get)]
    report: PathBuf,
    /// Every file written: identified.toml, the page, summary.json, figures.
    #[pyo3(get)]
    files: Vec<PathBuf>,
    /// {"e_pa": E, "g_pa": G, "rho_kg_m3": rho}.
    #[pyo3(get)]
    values: Py<PyDict>,
    /// {"e_pa": (low, high), ...}: 95 % intervals (NaN: held fixed).
    #[pyo3(get)]
    intervals: Py<PyDict>,
    /// Everything identified.toml holds, as dictionaries.
    #[pyo3(get)]
    file: Py<PyAny>,
    /// Model variants compared by leave-one-out (with compare_variants).
    #[pyo3(get)]
    variants: Py<PyAny>,
    /// Index into `variants` of the recommended one.
    #[pyo3(get)]
    recommended: Option<usize>,
    /// What the fit found doubtful, one line each.
    #[pyo3(get)]
    warnings: Vec<String>,
    /// Experiments fitted (a session contributes its holds).
    #[pyo3(get)]
    experiments: usize,
}

#[pymethods]
impl Identified {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Identified(values={}, identified_toml={:?})",
            self.values.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            self.identified_toml.display().to_string()
        )
    }
}

/// Fits E, G, rho of `rod` by nonlinear least squares over its PLS statics,
/// from `experiments` (a directory with inputs.csv and measurements.csv) or
/// recorded `sessions` (their static holds; `loads`: the loads file naming
/// their force streams). Writes identified.toml and a report into `out`
/// (default: a new temporary directory). Options as the command's flags.
#[pyfunction]
#[pyo3(signature = (rod, *, experiments=None, sessions=None, loads=None, out=None, progress=None, translation=false, pitch=false, loo=true,
    compare_variants=false, compare_laws=false, reference=None, hold_material=None, tie_g_poisson=None, strict=false, fit_cable_offset=None,
    per_cable=false, pool_cables=false, fit_radius_scale=None, fit_cable_angle=None, fit_clamp_angle=None, fit_friction=None))]
#[allow(clippy::too_many_arguments)]
pub fn identify(
    py: Python<'_>,
    rod: &Rod,
    experiments: Option<&Bound<'_, PyAny>>,
    sessions: Option<&Bound<'_, PyAny>>,
    loads: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
    translation: bool,
    pitch: bool,
    loo: bool,
    compare_variants: bool,
    compare_laws: bool,
    reference: Option<&Bound<'_, PyAny>>,
    hold_material: Option<&Bound<'_, PyAny>>,
    tie_g_poisson: Option<f64>,
    strict: bool,
    fit_cable_offset: Option<&Bound<'_, PyAny>>,
    per_cable: bool,
    pool_cables: bool,
    fit_radius_scale: Option<&Bound<'_, PyAny>>,
    fit_cable_angle: Option<&Bound<'_, PyAny>>,
    fit_clamp_angle: Option<&Bound<'_, PyAny>>,
    fit_friction: Option<&Bound<'_, PyAny>>,
) -> PyResult<Identified> {
    let source = match (experiments.filter(|e| !e.is_none()), sessions.filter(|s| !s.is_none())) {
        (Some(e), None) => Source::Experiments(convert::path(e, "experiments")?),
        (None, Some(s)) => {
            let loads_path = loads.filter(|l| !l.is_none()).map(|l| convert::path(l, "loads")).transpose()?;
            Source::Sessions { dirs: self::sessions(s)?, loads: lab::loads::Loads::read(loads_path.as_deref(), rod.rod.cables.len()).py_err()? }
        }
        _ => return Err(value_error("identify: give either experiments= (a directory) or sessions= (a list of session directories)")),
    };
    let req = IdentifyRequest {
        translation,
        pitch,
        loo,
        compare_variants,
        reference: material(reference, "reference")?.map(|m| ::identify::Values::material(m.e_pa, m.g_pa, m.rho_kg_m3)),
        hold_material: material(hold_material, "hold_material")?.map(|m| [m.e_pa, m.g_pa, m.rho_kg_m3]),
        tie_g_poisson,
        refuse_damaged: strict,
        compare_laws,
        cable_offset: prior(fit_cable_offset, "fit_cable_offset")?,
        per_cable,
        pool_cables,
        radius_scale: prior(fit_radius_scale, "fit_radius_scale")?,
        cable_angle_deg: prior(fit_cable_angle, "fit_cable_angle")?,
        clamp_angle_deg: prior(fit_clamp_angle, "fit_clamp_angle")?,
        friction: prior(fit_friction, "fit_friction")?,
        ..IdentifyRequest::new(&rod.path, rod.rod.clone(), source, &out_dir(out, "identify")?)
    };
    let id = work::run(py, self::progress(progress), move |p| lab::identify::identify(&req, p))?;
    let par = &id.file.parameters;
    let values = PyDict::new(py);
    let intervals = PyDict::new(py);
    for (name, e) in [("e_pa", &par.e_pa), ("g_pa", &par.g_pa), ("rho_kg_m3", &par.rho_kg_m3)] {
        values.set_item(name, e.value)?;
        intervals.set_item(name, (e.ci95[0], e.ci95[1]))?;
    }
    Ok(Identified {
        identified_toml: id.identified_toml.clone(),
        report: id.report.html.clone(),
        files: [&id.identified_toml, &id.report.html, &id.report.json].into_iter().chain(&id.report.pngs).cloned().collect(),
        values: values.unbind(),
        intervals: intervals.unbind(),
        file: to_python(py, &id.file)?.unbind(),
        variants: to_python(py, &id.variants)?.unbind(),
        recommended: id.recommended,
        warnings: id.file.warnings.clone(),
        experiments: id.experiments.len(),
    })
}

/// A prior keyword of `identify` (`fit_friction=...`): `None` or `False`
/// fits no such term, `True` fits it with the rod file's `[identify]`
/// prior, `(mean, sd)` with that one.
fn prior(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<lab::identify::Prior> {
    use lab::identify::Prior;
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(Prior::Off) };
    if let Ok(on) = v.extract::<bool>() {
        return Ok(if on { Prior::RodFile } else { Prior::Off });
    }
    let pair = convert::floats(Some(v), name)?;
    match pair[..] {
        [mean, sd] => Ok(Prior::Given(mean, sd)),
        _ => Err(value_error(format!("{name}: expected True (the rod file's prior) or (mean, sd), got {} numbers", pair.len()))),
    }
}

fn scene(v: &Bound<'_, PyAny>) -> PyResult<(PathBuf, sim::Scene)> {
    let path = convert::path(v, "scene")?;
    let scene = sim::Scene::from_file(&path).py_err()?;
    Ok((path, scene))
}

pub(crate) fn optional_path(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<PathBuf>> {
    v.filter(|v| !v.is_none()).map(|v| convert::path(v, name)).transpose()
}

/// Fits friction (mu) and damping from recorded motion by simulating the
/// `sessions` in `scene`, E, G, rho held at `params` (an identified.toml or
/// `Identified`; default the rod file's). Returns a dictionary: the fitted
/// values ("dynamic", as identified.toml's [dynamic]: with a rod file's
/// [damping] branches, each branch's fitted modulus ratio and time, and
/// the fit's chi-square), "scan", "history", "identified_toml", "report",
/// "warnings". As the command line's `identify --dynamic`: `window_s=(from,
/// to)` fits that span of each replay, `hold_branches` keeps the rod
/// file's branches, `fit_marker_delay` fits a delay where mocap stamps
/// markers and clamp alike, `match_ring_down` fits each release's
/// frequency and log decrement instead of the markers' paths (over
/// `ring_down_cycles` cycles: past three, the envelope's decay to each
/// later cycle a row of its own), `fit_hook_friction` fits the dry friction of the hook the masses hang on.
#[pyfunction]
#[pyo3(signature = (rod, *, sessions, scene, params=None, loads=None, out=None, progress=None, mu_start=None, damping_start=None,
    hold_damping=false, hold_marker_delay=false, fit_marker_delay=false, hold_branches=false, window_s=None, fit_stiffness=false, fit_density=false, fit_hook_friction=false, match_ring_down=false, ring_down_cycles=3, sigma_m=2e-5, compare_variants=false))]
#[allow(clippy::too_many_arguments)]
pub fn identify_dynamic<'py>(
    py: Python<'py>,
    rod: &Rod,
    sessions: &Bound<'py, PyAny>,
    scene: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyAny>>,
    loads: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
    mu_start: Option<f64>,
    damping_start: Option<f64>,
    hold_damping: bool,
    hold_marker_delay: bool,
    fit_marker_delay: bool,
    hold_branches: bool,
    window_s: Option<(f64, f64)>,
    fit_stiffness: bool,
    fit_density: bool,
    fit_hook_friction: bool,
    match_ring_down: bool,
    ring_down_cycles: usize,
    sigma_m: f64,
    compare_variants: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let params = rod.params(params)?.unwrap_or_else(|| lab::params::Params::of_rod_file(&rod.rod, &rod.path));
    let (scene_path, scene) = self::scene(scene)?;
    let mut req =
        lab::dynamic::DynamicRequest::new(self::sessions(sessions)?, &rod.path, rod.rod.clone(), params, &scene_path, scene, &out_dir(out, "dynamic")?);
    req.mu_start = mu_start;
    req.damping_start = damping_start;
    req.hold_damping = hold_damping;
    req.hold_marker_delay = hold_marker_delay;
    req.fit_marker_delay = fit_marker_delay;
    req.hold_branches = hold_branches;
    req.window_s = window_s.map(|(from, to)| [from, to]);
    req.fit_stiffness = fit_stiffness;
    req.fit_density = fit_density;
    req.fit_hook_friction = fit_hook_friction;
    req.match_ring_down = match_ring_down;
    req.ring_down_cycles = ring_down_cycles;
    req.sigma_m = sigma_m;
    req.compare_laws = compare_variants;
    req.loads = lab::loads::Loads::read(optional_path(loads, "loads")?.as_deref(), rod.rod.cables.len()).py_err()?;
    let fit = work::run(py, self::progress(progress), move |p| lab::dynamic::identify_dynamic(&req, p))?;
    Ok(py_dict!(py, {
        "dynamic" => to_python(py, &fit.out)?,
        "scan" => fit.scan.clone(),
        "history" => fit.history.clone(),
        "identified_toml" => fit.identified_toml.clone(),
        "report" => fit.report.clone(),
        "warnings" => fit.warnings.clone(),
    }))
}

/// A finished simulation: per step, the markers, the tip, the strain at the
/// section boundaries, the contact force and the tip's slip, as arrays.
#[pyclass(module = "rodlab", frozen)]
pub struct Simulation {
    records: Vec<sim::StepRecord>,
    /// Where its tables and report were written.
    #[pyo3(get)]
    out: PathBuf,
    /// summary.json's figures as a dictionary.
    #[pyo3(get)]
    summary: Py<PyAny>,
}

impl Simulation {
    fn series<'py>(&self, py: Python<'py>, width: &[usize], f: impl Fn(&sim::StepRecord) -> Vec<f64>) -> Bound<'py, PyAny> {
        let data: Vec<f64> = self.records.iter().flat_map(f).collect();
        let shape: Vec<usize> = std::iter::once(self.records.len()).chain(width.iter().copied()).collect();
        array(py, shape, data)
    }
}

fn flat(v: &[lie::Vec3]) -> Vec<f64> {
    v.iter().flat_map(|p| [p.x, p.y, p.z]).collect()
}

#[pymethods]
impl Simulation {
    /// Step times [s], shape (T,).
    #[getter]
    fn time_s<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[], |r| vec![r.t_s])
    }

    /// The rod file's markers, world frame [m], shape (T, m, 3).
    #[getter]
    fn marker_position_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let m = self.records.first().map_or(0, |r| r.markers_m.len());
        self.series(py, &[m, 3], |r| flat(&r.markers_m))
    }

    /// The tip (end of the centre line) [m], shape (T, 3).
    #[getter]
    fn tip_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[3], |r| vec![r.tip_m.x, r.tip_m.y, r.tip_m.z])
    }

    /// Strain at the section boundaries (nodes), base to tip, shape (T, nodes, 6).
    #[getter]
    fn node_strain<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let n = self.records.first().map_or(0, |r| r.node_strain.len());
        self.series(py, &[n, 6], |r| r.node_strain.iter().flat_map(|s| s.iter().copied().collect::<Vec<_>>()).collect())
    }

    /// The centre line at the section boundaries (nodes), world frame [m],
    /// base to tip, shape (T, nodes, 3).
    #[getter]
    fn node_position_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let n = self.records.first().map_or(0, |r| r.node_m.len());
        self.series(py, &[n, 3], |r| flat(&r.node_m))
    }

    /// The table's normal force on the rod [N], shape (T,).
    #[getter]
    fn normal_force_n<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[], |r| vec![r.normal_force_n])
    }

    /// The table's friction force on the rod, world frame [N], shape (T, 3).
    #[getter]
    fn tangential_force_n<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[3], |r| r.tangential_force_n.iter().copied().collect())
    }

    /// Path length the tip's contact point has slipped on the table [m], shape (T,).
    #[getter]
    fn tip_slip_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[], |r| vec![r.tip_slip_m])
    }

    /// What a flange force sensor reads: moment [N m] and force [N] in
    /// the flange frame, shape (T, 6).
    #[getter]
    fn base_wrench_flange<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.series(py, &[6], |r| r.base_wrench_flange.iter().copied().collect())
    }

    fn __len__(&self) -> usize {
        self.records.len()
    }

    fn __repr__(&self) -> String {
        format!("Simulation(steps={}, out={:?})", self.records.len(), self.out.display().to_string())
    }
}

/// Simulates `rod` in `scene` (a scene file), with `params` applied (an
/// identified.toml or `Identified`), its base driven by the scene's
/// waypoints, or by a recorded `session`'s robot. Writes tables and a report
/// into `out` (default: a temporary directory). Returns a `Simulation`.
#[pyfunction]
#[pyo3(signature = (rod, scene, *, params=None, session=None, trajectory=None, loads=None, duration_s=None, out=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    py: Python<'_>,
    rod: &Rod,
    scene: &Bound<'_, PyAny>,
    params: Option<&Bound<'_, PyAny>>,
    session: Option<&Bound<'_, PyAny>>,
    trajectory: Option<&Bound<'_, PyAny>>,
    loads: Option<&Bound<'_, PyAny>>,
    duration_s: Option<f64>,
    out: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Simulation> {
    let params = rod.params(params)?;
    let (scene_path, scene) = self::scene(scene)?;
    let out = out_dir(out, "simulate")?;
    let base = match (optional_path(session, "session")?, optional_path(trajectory, "trajectory")?) {
        (Some(_), Some(_)) => return Err(value_error("simulate: give session= or trajectory=, not both")),
        (Some(s), None) => lab::simulate::BaseSource::Session(SessionDir::new(s)),
        (None, Some(t)) => lab::simulate::BaseSource::Trajectory { samples: lab::tables::read_trajectory(&t).py_err()?, path: t },
        (None, None) => lab::simulate::BaseSource::Scene,
    };
    let loads = match optional_path(loads, "loads")? {
        Some(l) if matches!(base, lab::simulate::BaseSource::Session(_)) => Some(lab::loads::Loads::read(Some(&l), rod.rod.cables.len()).py_err()?),
        Some(_) => return Err(value_error("loads: with session= only (the session's hung masses and tip hold)")),
        None => None,
    };
    let (rod_path, out_path) = (rod.path.clone(), out.clone());
    let params_path = params.as_ref().map(|p| p.path.clone());
    let sim_rod = lab::params::rod_with(rod.rod.clone(), params.as_ref());
    let scene = lab::params::scene_with(scene, params.as_ref());
    let simulated = work::run(py, self::progress(progress), move |p| {
        let job = lab::simulate::SimulateJob {
            rod: &sim_rod,
            rod_path: &rod_path,
            scene,
            scene_path: &scene_path,
            params_path: params_path.as_deref(),
            base,
            rig_frames: None,
            duration_s,
            out: &out_path,
            damaged: session::Damaged::Skip,
            session_loads: loads.as_ref(),
        };
        lab::simulate::run(&job, p)
    })?;
    Ok(Simulation { summary: to_python(py, &simulated.summary)?.unbind(), records: simulated.records, out })
}

/// Validates recorded `sessions` against a simulation of `scene` with
/// `params`: strain, marker, contact force and slip errors with their
/// checks. Returns a dictionary: "pass", and "sessions", each session's
/// figures and checks (summary.json's).
#[pyfunction]
#[pyo3(signature = (sessions, rod, scene, *, params=None, loads=None, out=None, progress=None, sigma_m=None, strict=false, jobs=2, observer="weighted",
    contact_gap_m=None, slide_speed_m_s=2e-3, speed_window_s=0.3, rest_s=0.5, strain_stick_pct=10.0, strain_slide_pct=15.0, force_pct=5.0, slide_mm=2.0,
    phase_pct=90.0, force_window_s=0.5, min_coverage_pct=50.0, parameter_band=true, bands=0, band_executor=None))]
#[allow(clippy::too_many_arguments)]
pub fn validate<'py>(
    py: Python<'py>,
    sessions: &Bound<'py, PyAny>,
    rod: &Rod,
    scene: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyAny>>,
    loads: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
    sigma_m: Option<f64>,
    strict: bool,
    jobs: usize,
    observer: &str,
    contact_gap_m: Option<f64>,
    slide_speed_m_s: f64,
    speed_window_s: f64,
    rest_s: f64,
    strain_stick_pct: f64,
    strain_slide_pct: f64,
    force_pct: f64,
    slide_mm: f64,
    phase_pct: f64,
    force_window_s: f64,
    min_coverage_pct: f64,
    parameter_band: bool,
    bands: usize,
    band_executor: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = lab::validate::ValidateOptions {
        jobs,
        refuse_damaged: strict,
        contact_gap_m,
        slide_speed_m_s,
        speed_window_s,
        rest_s,
        strain_stick_pct,
        strain_slide_pct,
        force_pct,
        slide_mm,
        phase_pct,
        force_window_s,
        min_coverage_pct,
        parameter_band,
        band_samples: bands,
        ..Default::default()
    };
    options.observer.mode = observer_mode("observer", observer)?;
    if let Some(s) = sigma_m {
        options.observer.sigma_m = s;
    }
    if let Some(call) = band_executor.filter(|c| !c.is_none()) {
        options.band_executor = lab::band::BandExecutor::on(std::sync::Arc::new(PyBandRunner { call: call.clone().unbind() }));
    }
    let req = validate_request(sessions, rod, scene, params, loads, out_dir(out, "validate")?, options)?;
    let v = work::run(py, self::progress(progress), move |p| lab::validate::validate(&req, p))?;
    Ok(py_dict!(py, {
        "pass" => v.pass(),
        "sessions" => to_python(py, &v.sessions)?,
        "batch_page" => v.batch_page.clone(),
    }))
}

fn validate_request(
    sessions: &Bound<'_, PyAny>,
    rod: &Rod,
    scene: &Bound<'_, PyAny>,
    params: Option<&Bound<'_, PyAny>>,
    loads: Option<&Bound<'_, PyAny>>,
    out: PathBuf,
    options: lab::validate::ValidateOptions,
) -> PyResult<lab::validate::ValidateRequest> {
    let (scene_path, scene) = self::scene(scene)?;
    Ok(lab::validate::ValidateRequest {
        sessions: self::sessions(sessions)?,
        rod_path: rod.path.clone(),
        rod: rod.rod.clone(),
        params: rod.params(params)?,
        scene_path,
        scene,
        loads: lab::loads::Loads::read(optional_path(loads, "loads")?.as_deref(), rod.rod.cables.len()).py_err()?,
        out,
        options,
    })
}

/// A validation's band replays run by a Python callable, `call(session,
/// count)` -> an iterator of the `count` replays' bytes in order
/// (`rodlab.validate`'s `executor`: one task a replay, each
/// [`band_replay`]); the task counts them as they come back.
struct PyBandRunner {
    call: Py<PyAny>,
}

impl lab::band::BandRunner for PyBandRunner {
    fn replay(&self, session: &SessionDir, count: usize, task: &dyn lab::Task) -> lab::Result<Vec<lab::simulate::Replay>> {
        let failed = |e: PyErr| crate::errors::from_py(&e, "prediction bands on the executor");
        let replies = Python::attach(|py| -> PyResult<Py<pyo3::types::PyIterator>> {
            Ok(self.call.call1(py, (session.path().to_path_buf(), count))?.into_bound(py).try_iter()?.unbind())
        })
        .map_err(failed)?;
        let mut replays = Vec::with_capacity(count);
        // One reply at a time, the GIL taken for it alone: the progress
        // report between two (which may stop the work) runs outside Python.
        loop {
            let reply = Python::attach(|py| -> PyResult<Option<Vec<u8>>> { replies.bind(py).clone().next().transpose()?.map(|b| b.extract()).transpose() });
            let Some(bytes) = reply.map_err(failed)? else { break };
            replays.push(lab::simulate::Replay::from_bytes(&bytes)?);
            task.set(replays.len() as u64);
        }
        Ok(replays)
    }
}

/// Replay `index` of `session`'s prediction band, alone (what an
/// executor's worker runs for `validate(..., executor=)`): its bytes, for
/// validate to read back. The same keywords as validate's.
#[pyfunction]
#[pyo3(signature = (session, rod, scene, *, index, params=None, loads=None, strict=false, parameter_band=true, bands=0))]
#[allow(clippy::too_many_arguments)]
pub fn band_replay<'py>(
    py: Python<'py>,
    session: &Bound<'py, PyAny>,
    rod: &Rod,
    scene: &Bound<'py, PyAny>,
    index: usize,
    params: Option<&Bound<'py, PyAny>>,
    loads: Option<&Bound<'py, PyAny>>,
    strict: bool,
    parameter_band: bool,
    bands: usize,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let options = lab::validate::ValidateOptions { refuse_damaged: strict, parameter_band, band_samples: bands, ..Default::default() };
    let req = validate_request(session, rod, scene, params, loads, PathBuf::new(), options)?;
    let dir = SessionDir::new(convert::path(session, "session")?);
    let replay = work::run(py, None, move |_| lab::validate::band_replay(&req, &dir, index))?;
    Ok(pyo3::types::PyBytes::new(py, &replay.to_bytes()))
}

/// An observer's mode by its name ("weighted" or "hard").
fn observer_mode(name: &str, mode: &str) -> PyResult<lab::observe::ObserverMode> {
    match mode {
        "weighted" => Ok(lab::observe::ObserverMode::Weighted),
        "hard" => Ok(lab::observe::ObserverMode::Hard),
        other => Err(value_error(format!("{name}: 'weighted' or 'hard', got '{other}'"))),
    }
}

/// Observes the strain of a session (or a markers.parquet) with `rod`:
/// writes strain.parquet (default: into the session) and returns the run's
/// figures as a dictionary ("out", "frames", "solved", "failed", ...).
#[pyfunction]
#[pyo3(signature = (session, rod, *, out=None, mode="weighted", sigma_m=3e-4, energy_scale_j=None, loads=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn observe<'py>(
    py: Python<'py>,
    session: &Bound<'py, PyAny>,
    rod: &Rod,
    out: Option<&Bound<'py, PyAny>>,
    mode: &str,
    sigma_m: f64,
    energy_scale_j: Option<f64>,
    loads: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let input = convert::path(session, "session")?;
    let markers = if input.is_dir() { SessionDir::new(&input).markers() } else { input.clone() };
    let out = match optional_path(out, "out")? {
        Some(o) => o,
        None if input.is_dir() => SessionDir::new(&input).strain(),
        None => markers.with_file_name("strain.parquet"),
    };
    let options = lab::observe::ObserveOptions { mode: observer_mode("mode", mode)?, sigma_m, energy_scale_j };
    let loads = lab::loads::Loads::read(optional_path(loads, "loads")?.as_deref(), rod.rod.cables.len()).py_err()?;
    let the_rod = rod.rod.clone();
    let o = work::run(py, self::progress(progress), move |p| lab::observe::observe_held(&markers, &the_rod, &options, loads.file.tip_hold.as_ref(), &out, p))?;
    Ok(py_dict!(py, {
        "out" => o.out.clone(),
        "frames" => o.frames,
        "solved" => o.solved,
        "solved_missing_markers" => o.solved_missing_markers,
        "failed" => o.failed,
        "marker_residual_mean_m" => o.marker_residual_mean_m,
        "marker_residual_max_m" => o.marker_residual_max_m,
        "sigma_used_m" => o.sigma_used_m,
        "noise_estimate_m" => o.noise_estimate_m,
        "warnings" => o.warnings.clone(),
    }))
}
