//! `rodlab.Rod` and its static equilibria: `Rod.solve` (one load) and
//! `Rod.solve_many` (a batch, in parallel, the GIL released), answered as
//! `Shape` / `Shapes` with numpy arrays.

use crate::convert::{self, array, Rows};
use crate::errors::{value_error, IntoPy};
use lab::params::Params;
use lab::solve::{solve as solve_lab, SolveRequest, Solved};
use lie::Vec3;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use rod::shape::ShapeRow;
use std::path::PathBuf;

/// A rod: its geometry, material, cables and markers, read from a rod file
/// (TOML, the command line's `--rod`). Units are SI throughout.
#[pyclass(module = "rodlab", frozen, from_py_object)]
#[derive(Clone)]
pub struct Rod {
    pub rod: rod::Rod,
    /// The rod file (identified parameters are checked against it).
    pub path: PathBuf,
}

impl Rod {
    /// `params` (a path to an identified.toml, or an `Identified`) for this rod.
    pub fn params(&self, params: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Params>> {
        let Some(p) = params.filter(|p| !p.is_none()) else { return Ok(None) };
        let path = match p.getattr("identified_toml") {
            Ok(path) => convert::path(&path, "params")?,
            Err(_) => convert::path(p, "params")?,
        };
        Params::read(&path, &self.rod, &self.path).py_err().map(Some)
    }

    fn request(&self, load: Load, gravity: bool, params: Option<Params>) -> SolveRequest {
        SolveRequest {
            rod: self.rod.clone(),
            params,
            tensions_n: load.tensions_n,
            cable_slide: load.cable_slide,
            tip_force_n: load.tip_force_n,
            tip_moment_nm: load.tip_moment_nm,
            tip_force_offset_body_m: load.tip_force_offset_body_m,
            flange: None,
            gravity,
            tip_position_m: load.tip_position_m,
            tip_rotation_rad: load.tip_rotation_rad,
            follow: None,
        }
    }
}

/// One load case.
#[derive(Clone, Debug)]
struct Load {
    tip_force_n: Vec3,
    tip_moment_nm: Vec3,
    tip_force_offset_body_m: Vec3,
    tensions_n: Vec<f64>,
    /// Which way the cables slide (what their friction opposes).
    cable_slide: rod::statics::CableSlide,
    /// A held tip (the rod file's `[tip] condition`): where, and a clamp's
    /// rotation vector.
    tip_position_m: Option<Vec3>,
    tip_rotation_rad: Option<Vec3>,
}

/// An optional vector argument: absent or None is `None`.
fn optional_vec3(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Vec3>> {
    v.filter(|v| !v.is_none()).map(|v| convert::vec3(Some(v), name)).transpose()
}

fn v3(v: &[f64]) -> Vec3 {
    Vec3::new(v[0], v[1], v[2])
}

impl Rod {
    /// A rod from a rod file's text, named `name` in errors, with
    /// `sections` and `modes` as [`Rod::from_file`] takes them.
    fn from_toml_named(text: &str, name: &str, sections: Option<usize>, modes: Option<&str>) -> PyResult<Rod> {
        let mut rod = rod::Rod::from_toml_str(text, name).py_err()?;
        if let Some(n) = sections {
            if n == 0 || n > rod::config::MAX_SECTIONS {
                return Err(value_error(format!("sections: must be between 1 and {}, got {n}", rod::config::MAX_SECTIONS)));
            }
            rod = rod.with_equal_sections(n);
        }
        if let Some(m) = modes {
            rod = rod.with_modes(rod::StrainModes::by_name(m).ok_or_else(|| value_error(format!("modes: unknown mode '{m}'")))?);
        }
        Ok(Rod { rod, path: PathBuf::from(name) })
    }
}

#[pymethods]
impl Rod {
    /// Reads a rod file. `sections`: that many equal sections instead of the
    /// file's; `modes`: other strain modes ("cosserat", "euler-bernoulli",
    /// "kirchhoff-extensible", "timoshenko").
    #[staticmethod]
    #[pyo3(signature = (path, sections=None, modes=None))]
    fn from_file(path: &Bound<'_, PyAny>, sections: Option<usize>, modes: Option<&str>) -> PyResult<Rod> {
        let path = convert::path(path, "path")?;
        let rod = lab::read_rod(&path, sections, modes).py_err()?;
        Ok(Rod { rod, path })
    }

    /// A rod from the text of a rod file (named "<text>" in errors).
    #[staticmethod]
    #[pyo3(signature = (text, sections=None, modes=None))]
    fn from_toml(text: &str, sections: Option<usize>, modes: Option<&str>) -> PyResult<Rod> {
        Self::from_toml_named(text, "<text>", sections, modes)
    }

    /// A rod from a dictionary laid out as a rod file is (what
    /// `tomllib.load` gives of one: `{"length_m": 0.2, "material": {...},
    /// "marker": [{...}, ...]}`), named "<dict>" in errors.
    ///
    /// Example:
    ///     rod = rodlab.Rod.from_dict({"length_m": 0.2, "sections_m": [0.1, 0.1],
    ///         "radius": {"base_m": 0.005, "tip_m": 0.005},
    ///         "material": {"e_pa": 2e5, "poisson": 0.45, "rho_kg_m3": 1100.0}})
    #[staticmethod]
    #[pyo3(signature = (table, sections=None, modes=None))]
    fn from_dict(py: Python<'_>, table: &Bound<'_, PyAny>, sections: Option<usize>, modes: Option<&str>) -> PyResult<Rod> {
        let json: String =
            py.import("json")?.call_method1("dumps", (table,)).map_err(|e| value_error(format!("table: not a rod file's table: {e}")))?.extract()?;
        let value: toml::Value = serde_json::from_str(&json).map_err(|e| value_error(format!("table: not a rod file's table: {e}")))?;
        let text = toml::to_string(&value).map_err(|e| value_error(format!("table: not a rod file's table: {e}")))?;
        Self::from_toml_named(&text, "<dict>", sections, modes)
    }

    /// The same rod with another body material (E, G [Pa], rho [kg/m^3]);
    /// a value not given is kept.
    #[pyo3(signature = (*, e_pa=None, g_pa=None, rho_kg_m3=None))]
    fn with_material(&self, e_pa: Option<f64>, g_pa: Option<f64>, rho_kg_m3: Option<f64>) -> PyResult<Rod> {
        let m = self.rod.cross_section.body;
        let body = rod::Material { e_pa: e_pa.unwrap_or(m.e_pa), g_pa: g_pa.unwrap_or(m.g_pa), rho_kg_m3: rho_kg_m3.unwrap_or(m.rho_kg_m3) };
        for (name, v) in [("e_pa", body.e_pa), ("g_pa", body.g_pa), ("rho_kg_m3", body.rho_kg_m3)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(crate::errors::to_py(lab::Error::input(format!("{name}: must be finite and positive, got {v}"))));
            }
        }
        Ok(Rod { rod: self.rod.with_material(body), path: self.path.clone() })
    }

    /// The rod file read, or "<text>".
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Length [m].
    #[getter]
    fn length_m(&self) -> f64 {
        self.rod.length_m
    }

    /// Number of sections (each with its own linear strain).
    #[getter]
    fn sections(&self) -> usize {
        self.rod.section_lengths_m.len()
    }

    /// Each section's length [m], base first.
    #[getter]
    fn section_lengths_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, self.rod.section_lengths_m.len(), self.rod.section_lengths_m.clone())
    }

    /// Number of cables.
    #[getter]
    fn cables(&self) -> usize {
        self.rod.cables.len()
    }

    /// The markers: arc length [m], shape (m,).
    #[getter]
    fn markers_arc_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, self.rod.markers.len(), self.rod.markers.iter().map(|m| m.arc_m).collect())
    }

    /// The markers' offsets from the centre line, body frame [m], shape (m, 3).
    #[getter]
    fn markers_offset_body_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let data = self.rod.markers.iter().flat_map(|m| [m.offset_body_m.x, m.offset_body_m.y, m.offset_body_m.z]).collect();
        array(py, (self.rod.markers.len(), 3), data)
    }

    /// The body's material: {"e_pa", "g_pa", "rho_kg_m3"}.
    #[getter]
    fn material<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.rod.cross_section.body;
        let d = PyDict::new(py);
        d.set_item("e_pa", m.e_pa)?;
        d.set_item("g_pa", m.g_pa)?;
        d.set_item("rho_kg_m3", m.rho_kg_m3)?;
        Ok(d)
    }

    /// Gravity in the world frame [m/s^2].
    #[getter]
    fn gravity_m_s2<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let g = self.rod.gravity_m_s2;
        array(py, 3, vec![g.x, g.y, g.z])
    }

    fn __repr__(&self) -> String {
        format!(
            "Rod(path={:?}, length_m={}, sections={}, cables={}, markers={})",
            self.path.display().to_string(),
            self.rod.length_m,
            self.rod.section_lengths_m.len(),
            self.rod.cables.len(),
            self.rod.markers.len()
        )
    }

    /// The static equilibrium under gravity (unless `gravity=False`),
    /// cable `tensions` [N] (one per cable), a `tip_force` [N] and a
    /// `tip_moment` [N m] (world frame, fixed in direction), the tip force
    /// acting at `tip_force_offset` from the tip's centre (tip section's
    /// frame [m]). `params`: an identified.toml (path) or an `Identified`,
    /// whose material, geometry and base pitch are applied. Returns a `Shape`
    /// (arc_m, position_m, rotation, strain, tip_m, base_force_n, base_moment_nm).
    ///
    /// Examples:
    ///     rod = rodlab.Rod.from_file("configs/rod/pls-paper-cantilever.toml")
    ///     rod.solve().tip_m                                # under gravity
    ///     rod.solve(tip_force=[-0.01, 0, 0], gravity=False)
    ///     arm = rodlab.Rod.from_file("configs/rod/pls-cable-arm.toml")
    ///     arm.solve(tensions=[0, 0, 0, 1.96], params="reports/demo/identified.toml")
    ///
    /// A rod whose tip is pinned or clamped (the rod file's `[tip]
    /// condition`) is held at `tip_position` [m] and, for a clamp,
    /// `tip_rotation` (a rotation vector [rad], world frame); the `Shape`
    /// then carries the hold's reaction and the equilibrium's stability:
    ///     cord = rodlab.Rod.from_file("configs/rod/clamped-clamped-cable.toml")
    ///     loop = cord.solve(tip_position=[0.1, 0, 0], tip_rotation=[0, -1.5707963, 0])
    ///     loop.tip_force_n, loop.stability_eigenvalue
    ///
    /// Cables with friction in their channels or guides (the rod file's
    /// `friction_mu`) lose tension along them while pulled in
    /// (`direction="load"`, the default) and gain it while let out
    /// (`direction="unload"`): the same tensions give two shapes.
    ///
    /// `flange_pose` (x, y, z [m], rx, ry, rz [rad], as UR reports its TCP)
    /// places the base at the flange times the rod file's mount. A held
    /// tip's equilibria are followed along a path of holds with
    /// `follow="tip_twist_rad"` (the clamp turned about the rod's axis) or
    /// `"clamp_distance_m"` to `to`; the `Shape`'s `branch` is then a
    /// dictionary ("path", "value", "lowest_eigenvalue", "critical": [(kind,
    /// value)]) and `branch_out` writes it as CSV.
    #[pyo3(signature = (*, tip_force=None, tip_moment=None, tensions=None, gravity=true, params=None, tip_force_offset=None, tip_position=None, tip_rotation=None, direction="load",
        flange_pose=None, follow=None, to=None, branch_out=None))]
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &self,
        py: Python<'_>,
        tip_force: Option<&Bound<'_, PyAny>>,
        tip_moment: Option<&Bound<'_, PyAny>>,
        tensions: Option<&Bound<'_, PyAny>>,
        gravity: bool,
        params: Option<&Bound<'_, PyAny>>,
        tip_force_offset: Option<&Bound<'_, PyAny>>,
        tip_position: Option<&Bound<'_, PyAny>>,
        tip_rotation: Option<&Bound<'_, PyAny>>,
        direction: &str,
        flange_pose: Option<&Bound<'_, PyAny>>,
        follow: Option<&str>,
        to: Option<f64>,
        branch_out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Shape> {
        let cable_slide = slide_of(direction)?;
        let flange = match convert::floats(flange_pose, "flange_pose")?.as_slice() {
            [] => None,
            [x, y, z, rx, ry, rz] => Some(lie::trajectory::pose_from_ur(&[*x, *y, *z, *rx, *ry, *rz])),
            other => return Err(value_error(format!("flange_pose: expected six numbers (x, y, z [m], rx, ry, rz [rad]), got {}", other.len()))),
        };
        let follow = match (follow, to) {
            (None, None) => None,
            (Some(key), Some(to)) => Some((
                rod::branch::EndPath::parse(key)
                    .ok_or_else(|| value_error(format!("follow: '{key}' is not one of {}", rod::branch::EndPath::KEYS.join(", "))))?,
                to,
            )),
            _ => return Err(value_error("follow and to: give both (the path and where it ends)")),
        };
        let branch_out = match branch_out.filter(|b| !b.is_none()) {
            Some(_) if follow.is_none() => return Err(value_error("branch_out: with follow= only")),
            Some(b) => Some(convert::path(b, "branch_out")?),
            None => None,
        };
        let load = Load {
            cable_slide,
            tip_force_n: convert::vec3(tip_force, "tip_force")?,
            tip_moment_nm: convert::vec3(tip_moment, "tip_moment")?,
            tip_force_offset_body_m: convert::vec3(tip_force_offset, "tip_force_offset")?,
            tensions_n: convert::floats(tensions, "tensions")?,
            tip_position_m: optional_vec3(tip_position, "tip_position")?,
            tip_rotation_rad: optional_vec3(tip_rotation, "tip_rotation")?,
        };
        // What the rod file's [tip] condition asks for, in this call's words.
        let fields =
            rod::held::HoldFields { position: "tip_position", rotation: "tip_rotation", rotation_short: "tip_rotation", both: "tip_position and tip_rotation" };
        rod::held::hold_for(self.rod.tip_condition, load.tip_position_m, load.tip_rotation_rad, &fields)
            .map_err(|why| crate::errors::to_py(lab::Error::input(format!("the call {why}"))))?;
        let req = SolveRequest { flange, follow, ..self.request(load, gravity, self.params(params)?) };
        // A held tip (a continuation path, a followed branch) can take
        // seconds: on a worker, Ctrl-C raises within 0.1 s (the solve's
        // result dropped). A free tip solves in a millisecond or less: on
        // this thread with the GIL released, where a worker thread's start
        // cost a call 0.2 ms (#43 asks a call to add at most 5 us).
        let held = req.tip_position_m.is_some() || req.follow.is_some();
        let solved = if held { crate::work::run(py, None, move |_| solve_lab(&req))? } else { py.detach(|| solve_lab(&req)).py_err()? };
        if let (Some(path), Some(f)) = (&branch_out, &solved.followed) {
            lab::solve::write_branch_csv(path, f).py_err()?;
        }
        let branch = solved.followed.as_ref().map(|f| branch_dict(py, f)).transpose()?;
        Ok(Shape { branch, ..Shape::from(solved) })
    }

    /// Equilibria of a batch of loads, in parallel on `threads` cores
    /// (default: all), the GIL released. Each of `tip_force` (k, 3),
    /// `tip_moment` (k, 3) and `tensions` (k, cables) is given per load, or
    /// once (3,) / (cables,) for all. Returns `Shapes` (arrays with a
    /// leading axis of k). An error names the first load that failed.
    ///
    /// Example (a sweep of one cable's tension):
    ///     t = np.zeros((1000, 4)); t[:, 3] = np.linspace(0, 2, 1000)
    ///     arm.solve_many(tensions=t).tip_m                 # (1000, 3)
    ///
    /// `direction` is `solve`'s, for every load of the batch.
    #[pyo3(signature = (*, tip_force=None, tip_moment=None, tensions=None, gravity=true, params=None, threads=None, direction="load"))]
    #[allow(clippy::too_many_arguments)]
    fn solve_many(
        &self,
        py: Python<'_>,
        tip_force: Option<&Bound<'_, PyAny>>,
        tip_moment: Option<&Bound<'_, PyAny>>,
        tensions: Option<&Bound<'_, PyAny>>,
        gravity: bool,
        params: Option<&Bound<'_, PyAny>>,
        threads: Option<usize>,
        direction: &str,
    ) -> PyResult<Shapes> {
        let cable_slide = slide_of(direction)?;
        let n_cables = self.rod.cables.len();
        let forces = convert::rows(tip_force, "tip_force", 3)?;
        let moments = convert::rows(tip_moment, "tip_moment", 3)?;
        let tensions = convert::rows(tensions, "tensions", n_cables)?;
        let counts: Vec<usize> = [&forces, &moments, &tensions].iter().filter_map(|r| r.count()).collect();
        let Some(&k) = counts.first() else {
            return Err(value_error("solve_many: give at least one of tip_force, tip_moment, tensions as an array of k rows"));
        };
        if counts.iter().any(|&c| c != k) {
            return Err(value_error(format!("solve_many: the batch arguments disagree on the number of loads: {counts:?}")));
        }
        // The shapes a batch returns, bounded before anything is solved.
        // A shape has a row per joint of the model (breakpoints cut sub-segments too).
        let joints = rod::Model::new(&self.rod, &[]).n_joints();
        let bytes = k as u128 * joints as u128 * std::mem::size_of::<ShapeRow>() as u128;
        if bytes > MAX_BATCH_BYTES as u128 {
            return Err(value_error(format!(
                "solve_many: {k} loads of {joints} joints each would return {:.1} GB of shapes, over the {} GB a batch may: split it",
                bytes as f64 * 1e-9,
                MAX_BATCH_BYTES as f64 * 1e-9
            )));
        }
        let loads: Vec<Load> = (0..k)
            .map(|i| Load {
                cable_slide,
                tip_force_n: v3(&forces.row(i, 3)),
                tip_moment_nm: v3(&moments.row(i, 3)),
                tip_force_offset_body_m: Vec3::zeros(),
                tensions_n: match tensions {
                    Rows::Absent => vec![],
                    _ => tensions.row(i, n_cables),
                },
                tip_position_m: None,
                tip_rotation_rad: None,
            })
            .collect();
        let params = self.params(params)?;
        let this = self.clone();
        // On a worker; each load first checks for Ctrl-C (the task's step
        // unwinds a stopped batch): KeyboardInterrupt within 0.1 s.
        let solve_all = move |progress: &dyn lab::Progress| -> lab::Result<Vec<Solved>> {
            let pool =
                rayon::ThreadPoolBuilder::new().num_threads(threads.unwrap_or(0)).build().map_err(|e| lab::Error::computation(format!("thread pool: {e}")))?;
            let task = progress.task("solve_many", Some(k as u64));
            let done = std::sync::atomic::AtomicU64::new(0);
            pool.install(|| {
                loads
                    .into_par_iter()
                    .enumerate()
                    .map(|(i, load)| {
                        task.set(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                        solve_lab(&this.request(load, gravity, params.clone())).map_err(|e| e.context(format!("load {i}")))
                    })
                    .collect()
            })
        };
        let solved = crate::work::run(py, None, solve_all)?;
        Ok(Shapes { shapes: solved.into_iter().map(Shape::from).collect() })
    }
}

/// The most a `solve_many` batch may return (its shapes' rows): 2 GB.
const MAX_BATCH_BYTES: u64 = 2_000_000_000;

/// An equilibrium: the shape base to tip at the rod's joints (n of them).
#[pyclass(module = "rodlab", frozen)]
pub struct Shape {
    rows: Vec<ShapeRow>,
    base_force_n: Vec3,
    base_moment_nm: Vec3,
    iterations: usize,
    residual_norm: f64,
    mass_kg: f64,
    warnings: Vec<String>,
    tip_reaction: Option<lie::Vec6>,
    stability_eigenvalue: Option<f64>,
    /// With `follow=`: the followed branch.
    branch: Option<Py<PyAny>>,
}

/// A followed branch as a dictionary of arrays.
fn branch_dict(py: Python<'_>, f: &lab::solve::Followed) -> PyResult<Py<PyAny>> {
    let column = |k: usize| -> Vec<f64> { f.points.iter().map(|p| [p.0, p.1, p.2][k]).collect() };
    let critical: Vec<(String, f64)> = f.critical.iter().map(|(kind, t)| (kind.describe().to_string(), *t)).collect();
    let d = crate::convert::py_dict!(py, {
        "path" => f.path.key(),
        "value" => array(py, [f.points.len()], column(0)),
        "lowest_eigenvalue" => array(py, [f.points.len()], column(1)),
        "critical" => critical,
    });
    Ok(d.into_any().unbind())
}

impl From<Solved> for Shape {
    fn from(s: Solved) -> Shape {
        Shape {
            rows: s.shape,
            base_force_n: s.base_force_n,
            base_moment_nm: s.base_moment_nm,
            iterations: s.iterations,
            residual_norm: s.residual_norm,
            mass_kg: s.mass_kg,
            warnings: s.warnings,
            tip_reaction: s.tip_reaction,
            stability_eigenvalue: s.stability_eigenvalue,
            branch: None,
        }
    }
}

fn rotation(q: &[f64; 4]) -> [f64; 9] {
    let r = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3])).to_rotation_matrix();
    let m = r.matrix();
    [m[(0, 0)], m[(0, 1)], m[(0, 2)], m[(1, 0)], m[(1, 1)], m[(1, 2)], m[(2, 0)], m[(2, 1)], m[(2, 2)]]
}

/// The columns of shapes, stacked: `lead` is () for one, (k,) for a batch.
fn stacked<'py>(py: Python<'py>, shapes: &[&[ShapeRow]], lead: &[usize], width: &[usize], f: impl Fn(&ShapeRow) -> Vec<f64>) -> Bound<'py, PyAny> {
    let n = shapes.first().map_or(0, |s| s.len());
    let data: Vec<f64> = shapes.iter().flat_map(|s| s.iter().flat_map(&f)).collect();
    let shape: Vec<usize> = lead.iter().copied().chain([n]).chain(width.iter().copied()).collect();
    array(py, shape, data)
}

#[pymethods]
impl Shape {
    /// Arc length of each joint [m], shape (n,).
    #[getter]
    fn arc_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &[&self.rows], &[], &[], |r| vec![r.arc_m])
    }

    /// Centre line positions, world frame [m], shape (n, 3).
    #[getter]
    fn position_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &[&self.rows], &[], &[3], |r| r.pos_m.iter().copied().collect())
    }

    /// The sections' frames, body to world, shape (n, 3, 3).
    #[getter]
    fn rotation<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &[&self.rows], &[], &[3, 3], |r| rotation(&r.quat_wxyz).to_vec())
    }

    /// Strain at each joint: kappa_x, kappa_y, kappa_z [1/m], eps_x,
    /// eps_y, eps_z [-] (eps = Q - (1, 0, 0)), shape (n, 6).
    #[getter]
    fn strain<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &[&self.rows], &[], &[6], |r| r.strain.iter().copied().collect())
    }

    /// The tip's position [m], shape (3,).
    #[getter]
    fn tip_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let p = self.rows.last().expect("a rod has a tip").pos_m;
        array(py, 3, vec![p.x, p.y, p.z])
    }

    /// The clamp's reaction on the rod: force [N], world frame, shape (3,).
    #[getter]
    fn base_force_n<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, 3, self.base_force_n.iter().copied().collect())
    }

    /// A held tip: the force its hold exerts on the rod [N], world frame,
    /// shape (3,) (a force sensor in that clamp reads its negative); None
    /// for a free tip.
    #[getter]
    fn tip_force_n<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.tip_reaction.map(|r| array(py, 3, vec![r[3], r[4], r[5]]))
    }

    /// A held tip: the hold's moment on the rod about the tip [N m], world
    /// frame, shape (3,) (zero for a pin); None for a free tip.
    #[getter]
    fn tip_moment_nm<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.tip_reaction.map(|r| array(py, 3, vec![r[0], r[1], r[2]]))
    }

    /// A held tip: the lowest eigenvalue of the held rod's stiffness
    /// (negative: unstable, a real rod snaps or buckles away); None for a
    /// free tip.
    #[getter]
    fn stability_eigenvalue(&self) -> Option<f64> {
        self.stability_eigenvalue
    }

    /// With `solve(follow=...)`: the followed branch ("path", "value",
    /// "lowest_eigenvalue", "critical"); None otherwise.
    #[getter]
    fn branch(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.branch.as_ref().map(|b| b.clone_ref(py))
    }

    /// The clamp's reaction on the rod: moment about the base's origin
    /// [N m], world frame, shape (3,).
    #[getter]
    fn base_moment_nm<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, 3, self.base_moment_nm.iter().copied().collect())
    }

    /// Newton iterations taken.
    #[getter]
    fn iterations(&self) -> usize {
        self.iterations
    }

    /// Norm of the equilibrium's residual at the solution.
    #[getter]
    fn residual_norm(&self) -> f64 {
        self.residual_norm
    }

    /// The rod's mass [kg].
    #[getter]
    fn mass_kg(&self) -> f64 {
        self.mass_kg
    }

    /// What the model found doubtful (large strains, a cable off the body).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn __repr__(&self) -> String {
        let t = self.rows.last().expect("a rod has a tip").pos_m;
        format!("Shape(joints={}, tip_m=[{:.6}, {:.6}, {:.6}], iterations={})", self.rows.len(), t.x, t.y, t.z, self.iterations)
    }
}

/// The equilibria of a batch of k loads: every array has a leading axis of k.
#[pyclass(module = "rodlab", frozen)]
pub struct Shapes {
    shapes: Vec<Shape>,
}

impl Shapes {
    fn rows(&self) -> Vec<&[ShapeRow]> {
        self.shapes.iter().map(|s| s.rows.as_slice()).collect()
    }
}

#[pymethods]
impl Shapes {
    fn __len__(&self) -> usize {
        self.shapes.len()
    }

    /// Arc length of each joint [m], shape (n,) (the same for every load).
    #[getter]
    fn arc_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let first: Vec<&[ShapeRow]> = self.shapes.iter().take(1).map(|s| s.rows.as_slice()).collect();
        stacked(py, &first, &[], &[], |r| vec![r.arc_m])
    }

    /// Positions [m], shape (k, n, 3).
    #[getter]
    fn position_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &self.rows(), &[self.shapes.len()], &[3], |r| r.pos_m.iter().copied().collect())
    }

    /// Frames, shape (k, n, 3, 3).
    #[getter]
    fn rotation<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &self.rows(), &[self.shapes.len()], &[3, 3], |r| rotation(&r.quat_wxyz).to_vec())
    }

    /// Strains, shape (k, n, 6).
    #[getter]
    fn strain<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        stacked(py, &self.rows(), &[self.shapes.len()], &[6], |r| r.strain.iter().copied().collect())
    }

    /// Tips [m], shape (k, 3).
    #[getter]
    fn tip_m<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let data = self.shapes.iter().flat_map(|s| s.rows.last().expect("a tip").pos_m.iter().copied().collect::<Vec<_>>()).collect();
        array(py, (self.shapes.len(), 3), data)
    }

    /// Base reaction forces [N], shape (k, 3).
    #[getter]
    fn base_force_n<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, (self.shapes.len(), 3), self.shapes.iter().flat_map(|s| s.base_force_n.iter().copied().collect::<Vec<_>>()).collect())
    }

    /// Base reaction moments [N m], shape (k, 3).
    #[getter]
    fn base_moment_nm<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, (self.shapes.len(), 3), self.shapes.iter().flat_map(|s| s.base_moment_nm.iter().copied().collect::<Vec<_>>()).collect())
    }

    /// Newton iterations of each load, shape (k,).
    #[getter]
    fn iterations<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        array(py, self.shapes.len(), self.shapes.iter().map(|s| s.iterations as f64).collect())
    }

    fn __repr__(&self) -> String {
        format!("Shapes(loads={}, joints={})", self.shapes.len(), self.shapes.first().map_or(0, |s| s.rows.len()))
    }
}

/// Seconds per `rod.solve` of the same request timed in Rust (`n` calls),
/// for the benchmark of what a call from Python adds.
#[pyfunction]
#[pyo3(signature = (rod, n, *, tip_force=None, tensions=None))]
pub fn solve_time_in_rust_s(py: Python<'_>, rod: &Rod, n: usize, tip_force: Option<&Bound<'_, PyAny>>, tensions: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    let load = Load {
        cable_slide: rod::statics::CableSlide::PulledIn,
        tip_force_n: convert::vec3(tip_force, "tip_force")?,
        tip_moment_nm: Vec3::zeros(),
        tip_force_offset_body_m: Vec3::zeros(),
        tensions_n: convert::floats(tensions, "tensions")?,
        tip_position_m: None,
        tip_rotation_rad: None,
    };
    let req = rod.request(load, true, None);
    let timed = py.detach(move || {
        let started = std::time::Instant::now();
        for _ in 0..n.max(1) {
            std::hint::black_box(solve_lab(std::hint::black_box(&req))?);
        }
        Ok::<f64, lab::Error>(started.elapsed().as_secs_f64() / n.max(1) as f64)
    });
    timed.py_err()
}

/// The cables' slide `direction` names ("load" or "unload"), or a
/// ValueError naming the argument.
fn slide_of(direction: &str) -> PyResult<rod::statics::CableSlide> {
    rod::statics::CableSlide::from_key(direction).ok_or_else(|| value_error(format!("direction: '{direction}': {}", rod::statics::CableSlide::KEYS)))
}
