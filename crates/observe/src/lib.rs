//! `observe`: the strain observer of the contact paper (Sec. X-B, eq. 61-63).
//! Stage "observe" in record -> track -> observe -> identify -> simulate ->
//! report: for every frame of tracked marker positions it finds the strain
//! field of a virtual, inertia-free rod that passes through the markers with
//! minimum potential energy (elastic + gravity).
//!
//! * **hard** mode: the markers are bilateral constraints; the KKT system
//!   `K q + P(q) - H(q) Lambda = 0, G(q) = 0` is solved by Newton. The
//!   multipliers `Lambda` are forces at the markers, so the Lagrangian's
//!   Hessian is exactly the rod's static tangent with those dead forces.
//! * **weighted** mode: each marker is tied to its measurement by a spring of
//!   stiffness `c / sigma^2` (a weighted least-squares misfit with the
//!   potential energy as regulariser). The energy scale `c` is given, or set
//!   on the first frame by the discrepancy principle (misfit chi^2 = number
//!   of measured coordinates). Missing markers simply drop out.
//!
//! Each frame warm-starts from the previous one.

use lie::{Vec3, Vec6};
use nalgebra::{DMatrix, DVector};
use rod::model::point_jacobian;
use rod::statics::{assemble, Assembly};
use rod::{Loads, Marker, Model, PointLoad, Rod};

/// How markers constrain the rod.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Hard,
    /// `energy_scale_j`: `c` in `k = c / sigma^2`; `None` = discrepancy principle.
    Weighted {
        energy_scale_j: Option<f64>,
    },
}

/// Outcome of one frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    /// Solved without the missing markers (count).
    MissingMarkers(usize),
    Failed(String),
}

impl Status {
    pub fn label(&self) -> String {
        match self {
            Status::Ok => "ok".into(),
            Status::MissingMarkers(n) => format!("missing_markers:{n}"),
            Status::Failed(why) => format!("failed:{why}"),
        }
    }
}

/// The observer's answer for one frame.
#[derive(Clone, Debug)]
pub struct Observation {
    pub q: DVector<f64>,
    /// Strain `[K; Q]` at every node (section boundary), base to tip.
    pub nodal_strain: Vec<Vec6>,
    /// RMS distance between observed rod and measured markers [m].
    pub marker_residual_m: f64,
    pub status: Status,
    pub iterations: usize,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ObserveError {
    #[error("the rod has no markers ([[marker]] entries in the rod file)")]
    NoMarkers,
    #[error("marker {0} at arc length {1} m lies outside the rod [0, {2}] m")]
    MarkerOutside(usize, f64, f64),
    #[error(
        "hard mode: {constraints} marker constraints exceed the rod's {dofs} strain degrees of freedom (use fewer markers, more sections, or --mode weighted)"
    )]
    TooManyConstraints { constraints: usize, dofs: usize },
    #[error("{given} measured positions given, the rod has {markers} markers")]
    MarkerCount { given: usize, markers: usize },
}

pub struct Observer {
    pub model: Model,
    markers: Vec<Marker>,
    joints: Vec<usize>,
    mode: Mode,
    energy_scale_j: Option<f64>,
    q: DVector<f64>,
    forces: Vec<Vec3>,
    max_iterations: usize,
    /// Compliance of the regularised KKT fallback [m/N].
    kkt_compliance: f64,
}

fn ls_solve(a: DMatrix<f64>, b: &DVector<f64>) -> Option<DVector<f64>> {
    a.lu().solve(b)
}

/// Full KKT step with compliance `delta` in the multiplier block (regular
/// even for redundant constraints; the fixed point is unchanged).
fn kkt_step_regularised(h: &DMatrix<f64>, jc: &DMatrix<f64>, r: &DVector<f64>, c: &DVector<f64>, delta: f64) -> Option<DVector<f64>> {
    let n = h.nrows();
    let nc = jc.nrows();
    let mut a = DMatrix::zeros(n + nc, n + nc);
    a.view_mut((0, 0), (n, n)).copy_from(h);
    a.view_mut((n, 0), (nc, n)).copy_from(jc);
    a.view_mut((0, n), (n, nc)).copy_from(&(-jc.transpose()));
    for k in 0..nc {
        a[(n + k, n + k)] = delta;
    }
    let mut rhs = DVector::zeros(n + nc);
    rhs.rows_mut(0, n).copy_from(&(-r));
    rhs.rows_mut(n, nc).copy_from(&(-c));
    ls_solve(a, &rhs)
}

/// Newton step of the KKT system `[H, -J^T; J, 0] [dq; dF] = -[r; c]` by
/// the Schur complement `S = J H^-1 J^T`, inverted on its numerical range
/// (eigenvalues above 1e-11 of the largest). Redundant or nearly redundant
/// marker constraints (many markers along the axis measure the same
/// stretch) then get minimum-norm multiplier updates instead of a singular
/// solve, and Newton keeps its quadratic convergence on consistent data.
fn kkt_step(h: &DMatrix<f64>, jc: &DMatrix<f64>, r: &DVector<f64>, c: &DVector<f64>) -> Option<DVector<f64>> {
    let n = h.nrows();
    let nc = jc.nrows();
    let lu = h.clone().lu();
    let hinv_r = lu.solve(r)?;
    let hinv_jt = lu.solve(&jc.transpose())?;
    let s = jc * &hinv_jt;
    let s = (&s + s.transpose()) * 0.5;
    // S dF = -c + J H^-1 r
    let rhs = -c + jc * &hinv_r;
    let eig = s.symmetric_eigen();
    let top = eig.eigenvalues.amax();
    let mut df = DVector::zeros(nc);
    for (k, &lam) in eig.eigenvalues.iter().enumerate() {
        if lam > 1e-11 * top {
            let v = eig.eigenvectors.column(k);
            df += v * (v.dot(&rhs) / lam);
        }
    }
    // dq = H^-1 (-r + J^T dF)
    let dq = -hinv_r + &hinv_jt * &df;
    let mut d = DVector::zeros(n + nc);
    d.rows_mut(0, n).copy_from(&dq);
    d.rows_mut(n, nc).copy_from(&df);
    Some(d)
}

impl Observer {
    pub fn new(rod: &Rod, mode: Mode) -> Result<Observer, ObserveError> {
        if rod.markers.is_empty() {
            return Err(ObserveError::NoMarkers);
        }
        for (i, m) in rod.markers.iter().enumerate() {
            if !(m.arc_m >= 0.0 && m.arc_m <= rod.length_m) {
                return Err(ObserveError::MarkerOutside(i, m.arc_m, rod.length_m));
            }
        }
        let points: Vec<f64> = rod.markers.iter().map(|m| m.arc_m).collect();
        let model = Model::new(rod, &points);
        let constraints = 3 * rod.markers.len();
        if mode == Mode::Hard && constraints > model.n_dof() {
            return Err(ObserveError::TooManyConstraints { constraints, dofs: model.n_dof() });
        }
        let joints = rod.markers.iter().map(|m| model.joint_at(m.arc_m)).collect();
        let props = rod.cross_section.properties(0.0, rod.length_m);
        let kkt_compliance = 1e-10 * rod.length_m.powi(3) / props.stiffness_diag[1].max(1e-300);
        let n = model.n_dof();
        let energy_scale_j = match mode {
            Mode::Weighted { energy_scale_j } => energy_scale_j,
            Mode::Hard => None,
        };
        Ok(Observer {
            model,
            markers: rod.markers.clone(),
            joints,
            mode,
            energy_scale_j,
            q: DVector::zeros(n),
            forces: vec![Vec3::zeros(); rod.markers.len()],
            max_iterations: 200,
            kkt_compliance,
        })
    }

    /// Sets the pose of the rod's base for the next frames (e.g. from the
    /// robot log: flange pose composed with the rod's mount).
    pub fn set_base(&mut self, base: &lie::Pose) {
        self.model.rod.base = *base;
    }

    /// Sets the warm start (strain coordinates of this observer's model).
    pub fn set_state(&mut self, q: &DVector<f64>) {
        self.q = q.clone();
    }

    /// The energy scale in use (weighted mode, after calibration).
    pub fn energy_scale_j(&self) -> Option<f64> {
        self.energy_scale_j
    }

    fn loads(&self, forces: &[(usize, Vec3)]) -> Loads {
        Loads {
            gravity_scale: 1.0,
            point_loads: forces
                .iter()
                .map(|(m, f)| PointLoad { x_m: self.markers[*m].arc_m, offset_body_m: self.markers[*m].offset_body_m, force_n: *f, moment_nm: Vec3::zeros() })
                .collect(),
            cable_tensions_n: vec![],
        }
    }

    /// Marker positions of the observed rod at `q`.
    pub fn marker_positions(&self, q: &DVector<f64>) -> Vec<Vec3> {
        self.marker_positions_in(&self.model.frames(q))
    }

    /// Marker positions for frames already computed.
    fn marker_positions_in(&self, frames: &rod::Frames) -> Vec<Vec3> {
        self.markers.iter().zip(&self.joints).map(|(m, &j)| frames.joints[j].transform_point(&m.offset_body_m)).collect()
    }

    /// Observes one frame. `measured[m]` is marker m's position (None if
    /// missing), `sigma_m[m]` its standard deviation (weighted mode).
    pub fn observe(&mut self, measured: &[Option<Vec3>], sigma_m: &[f64]) -> Result<Observation, ObserveError> {
        if measured.len() != self.markers.len() || sigma_m.len() != self.markers.len() {
            return Err(ObserveError::MarkerCount { given: measured.len(), markers: self.markers.len() });
        }
        let targets: Vec<(usize, Vec3, f64)> = measured.iter().enumerate().filter_map(|(i, p)| p.map(|p| (i, p, sigma_m[i]))).collect();
        let missing = self.markers.len() - targets.len();
        let q_warm = self.q.clone();
        let f_warm = self.forces.clone();
        let result = match self.mode {
            Mode::Hard => self.solve_hard_with_continuation(&targets),
            Mode::Weighted { .. } => {
                if self.energy_scale_j.is_none() {
                    self.calibrate(&targets);
                }
                self.solve_weighted_with_continuation(&targets)
            }
        };
        let (status, iterations) = match result {
            Ok(it) if missing == 0 => (Status::Ok, it),
            Ok(it) => (Status::MissingMarkers(missing), it),
            Err(why) => {
                // Keep the last good state for the next frame.
                self.q = q_warm;
                self.forces = f_warm;
                (Status::Failed(why), 0)
            }
        };
        let pos = self.marker_positions(&self.q);
        let sq: f64 = targets.iter().map(|(i, p, _)| (pos[*i] - p).norm_squared()).sum();
        let marker_residual_m = if targets.is_empty() { f64::NAN } else { (sq / targets.len() as f64).sqrt() };
        let nodal_strain = self.model.node_x_m.iter().map(|&x| self.model.strain_at(x, &self.q)).collect();
        Ok(Observation { q: self.q.clone(), nodal_strain, marker_residual_m, status, iterations })
    }

    fn solve_hard_with_continuation(&mut self, targets: &[(usize, Vec3, f64)]) -> Result<usize, String> {
        // From a warm start a few iterations suffice; otherwise prepare.
        let (q0, f0) = (self.q.clone(), self.forces.clone());
        if let Ok(it) = self.solve_hard_limited(targets, 12) {
            return Ok(it);
        }
        self.q = q0;
        self.forces = f0;
        // Far from the solution (first frame) the constraint Jacobian can be
        // rank deficient (twist is invisible on a straight rod): approach
        // with stiff springs first, then enforce the constraints exactly.
        let saved = self.energy_scale_j;
        let props = self.model.rod.cross_section.properties(0.0, self.model.rod.length_m);
        let k_rod = 3.0 * props.stiffness_diag[1].min(props.stiffness_diag[2]) / self.model.rod.length_m.powi(3);
        let mut total = 0;
        for factor in [1e1, 1e3, 1e5] {
            let sigma = 1e-3;
            self.energy_scale_j = Some(factor * k_rod * sigma * sigma);
            let t: Vec<(usize, Vec3, f64)> = targets.iter().map(|(i, p, _)| (*i, *p, sigma)).collect();
            if let Ok(it) = self.solve_weighted_with_continuation(&t) {
                total += it;
                let pos = self.marker_positions(&self.q);
                for (i, p, _) in &t {
                    self.forces[*i] = -(pos[*i] - p) * self.spring(sigma);
                }
            }
        }
        self.energy_scale_j = saved;
        if let Ok(it) = self.solve_hard(targets) {
            return Ok(total + it);
        }
        self.homotopy(targets, Observer::solve_hard).map(|it| total + it)
    }

    fn solve_hard(&mut self, targets: &[(usize, Vec3, f64)]) -> Result<usize, String> {
        self.solve_hard_limited(targets, self.max_iterations)
    }

    /// KKT Newton on (q, marker forces).
    fn solve_hard_limited(&mut self, targets: &[(usize, Vec3, f64)], max_iterations: usize) -> Result<usize, String> {
        let n = self.model.n_dof();
        let nc = 3 * targets.len();
        let mut q = self.q.clone();
        let mut f: Vec<Vec3> = targets.iter().map(|(i, _, _)| self.forces[*i]).collect();
        // Always with the tangent: its kinematics also give the marker positions.
        let eval = |q: &DVector<f64>, f: &[Vec3]| -> (Assembly, DVector<f64>) {
            let loads = self.loads(&targets.iter().zip(f).map(|((i, _, _), f)| (*i, *f)).collect::<Vec<_>>());
            let asm = assemble(&self.model, &loads, q, 1.0, true).expect("marker joints exist");
            let pos = self.marker_positions_in(&asm.kinematics.as_ref().expect("with tangent").frames);
            let c = DVector::from_iterator(nc, targets.iter().flat_map(|(i, p, _)| (pos[*i] - p).iter().cloned().collect::<Vec<_>>()));
            (asm, c)
        };
        let (mut asm, mut c) = eval(&q, &f);
        let scale_c = self.model.stiffness.diagonal().amax().max(1e-300) / self.model.rod.length_m.powi(2);
        let merit = |a: &Assembly, c: &DVector<f64>| (a.residual.norm_squared() + (c.norm() * scale_c).powi(2)).sqrt();
        let mut m = merit(&asm, &c);
        for it in 0..max_iterations {
            // 0.5 nm: near-redundant constraints (e.g. many markers along the
            // axis) hold only to the precision of the data themselves.
            if c.amax() < 5e-10 && asm.residual.norm() <= 1e-10 * asm.scale.max(1e-300) {
                self.q = q;
                for ((i, _, _), fi) in targets.iter().zip(&f) {
                    self.forces[*i] = *fi;
                }
                return Ok(it);
            }
            let h = asm.tangent.take().expect("with tangent");
            let h = &h;
            let kin = asm.kinematics.as_ref().expect("with tangent");
            let frames = &kin.frames;
            let mut jc = DMatrix::zeros(nc, n);
            for (k, (i, _, _)) in targets.iter().enumerate() {
                let j = self.joints[*i];
                let p = frames.joints[j].transform_point(&self.markers[*i].offset_body_m);
                let jp = point_jacobian(&kin.spatial_jacobian[j], &p);
                jc.view_mut((3 * k, 0), (3, n)).copy_from(&jp);
            }
            // The Schur-complement step (quadratic convergence even with
            // redundant constraints); when the line search rejects it, the
            // full KKT step with a tiny compliance in the multiplier block.
            let mut accepted = false;
            for attempt in 0..2 {
                let d = if attempt == 0 { kkt_step(h, &jc, &asm.residual, &c) } else { kkt_step_regularised(h, &jc, &asm.residual, &c, self.kkt_compliance) };
                let Some(d) = d else { continue };
                let mut alpha = 1.0;
                while alpha >= 1e-4 {
                    let qn = &q + d.rows(0, n) * alpha;
                    let fnew: Vec<Vec3> =
                        f.iter().enumerate().map(|(k, fi)| fi + Vec3::new(d[n + 3 * k], d[n + 3 * k + 1], d[n + 3 * k + 2]) * alpha).collect();
                    let (an, cn) = eval(&qn, &fnew);
                    let mn = merit(&an, &cn);
                    if mn.is_finite() && (mn <= (1.0 - 1e-4 * alpha) * m || (cn.amax() < 5e-10 && an.residual.norm() <= 1e-10 * an.scale)) {
                        // Redundant constraints on slightly inconsistent data:
                        // stop once the constraints hold to 10 nm and Newton
                        // no longer improves.
                        if mn > 0.5 * m && cn.amax() < 1e-8 && an.residual.norm() <= 1e-9 * an.scale {
                            self.q = qn;
                            for ((i, _, _), fi) in targets.iter().zip(&fnew) {
                                self.forces[*i] = *fi;
                            }
                            return Ok(it + 1);
                        }
                        q = qn;
                        f = fnew;
                        asm = an;
                        c = cn;
                        m = mn;
                        accepted = true;
                        break;
                    }
                    alpha *= 0.5;
                }
                if accepted {
                    break;
                }
            }
            if !accepted {
                if c.amax() < 1e-8 && asm.residual.norm() <= 1e-8 * asm.scale {
                    self.q = q;
                    for ((i, _, _), fi) in targets.iter().zip(&f) {
                        self.forces[*i] = *fi;
                    }
                    return Ok(it);
                }
                return Err("line search failed".into());
            }
        }
        Err("no convergence".into())
    }

    fn spring(&self, sigma: f64) -> f64 {
        self.energy_scale_j.unwrap_or(1.0) / (sigma * sigma)
    }

    /// Newton on q with spring forces `-k (p - target)` at the markers.
    fn solve_weighted(&mut self, targets: &[(usize, Vec3, f64)]) -> Result<usize, String> {
        let n = self.model.n_dof();
        let mut q = self.q.clone();
        let eval = |q: &DVector<f64>, tangent: bool| -> (Assembly, DMatrix<f64>) {
            let pos = self.marker_positions(q);
            let forces: Vec<(usize, Vec3)> = targets.iter().map(|(i, p, s)| (*i, -(pos[*i] - p) * self.spring(*s))).collect();
            let mut asm = assemble(&self.model, &self.loads(&forces), q, 1.0, tangent).expect("marker joints exist");
            let mut extra = DMatrix::zeros(0, 0);
            if let (Some(kin), Some(h)) = (asm.kinematics.as_ref(), asm.tangent.as_mut()) {
                extra = DMatrix::zeros(n, n);
                for (i, _, s) in targets {
                    let j = self.joints[*i];
                    let jp = point_jacobian(&kin.spatial_jacobian[j], &pos[*i]);
                    extra.gemm_tr(self.spring(*s), &jp, &jp, 1.0);
                }
                *h += &extra;
            }
            (asm, extra)
        };
        let (mut asm, _) = eval(&q, true);
        for it in 0..self.max_iterations {
            let rn = asm.residual.norm();
            if rn <= 1e-10 * asm.scale.max(1e-300) || rn < 1e-300 {
                self.q = q;
                return Ok(it);
            }
            let h = asm.tangent.take().expect("tangent");
            let d = ls_solve(h, &(-&asm.residual)).ok_or("singular tangent")?;
            let mut alpha = 1.0;
            loop {
                let qn = &q + &d * alpha;
                let (an, _) = eval(&qn, true);
                let tn = an.residual.norm();
                if tn.is_finite() && (tn <= (1.0 - 1e-4 * alpha) * rn || tn <= 1e-10 * an.scale) {
                    q = qn;
                    asm = an;
                    break;
                }
                alpha *= 0.5;
                if alpha < 1e-4 {
                    if rn <= 1e-7 * asm.scale {
                        self.q = q;
                        return Ok(it);
                    }
                    return Err("line search failed".into());
                }
            }
        }
        Err("no convergence".into())
    }

    fn solve_weighted_with_continuation(&mut self, targets: &[(usize, Vec3, f64)]) -> Result<usize, String> {
        let q0 = self.q.clone();
        if let Ok(it) = self.solve_weighted(targets) {
            return Ok(it);
        }
        // Stiff springs from a far start: ramp the stiffness up.
        self.q = q0;
        let target = self.energy_scale_j;
        let mut total = 0;
        let mut ok = true;
        for factor in [1e-6, 1e-4, 1e-2, 1.0] {
            self.energy_scale_j = target.map(|c| c * factor);
            match self.solve_weighted_targets(targets) {
                Ok(it) => total += it,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        self.energy_scale_j = target;
        if ok {
            return Ok(total);
        }
        self.solve_weighted_targets(targets)
    }

    /// Weighted solve, through the homotopy when a direct solve fails.
    fn solve_weighted_targets(&mut self, targets: &[(usize, Vec3, f64)]) -> Result<usize, String> {
        if let Ok(it) = self.solve_weighted(targets) {
            return Ok(it);
        }
        self.homotopy(targets, Observer::solve_weighted)
    }

    /// Moves the targets from the current marker positions to the measured
    /// ones in adaptive steps, solving at each (state restored on failure).
    fn homotopy(&mut self, targets: &[(usize, Vec3, f64)], solve: fn(&mut Observer, &[(usize, Vec3, f64)]) -> Result<usize, String>) -> Result<usize, String> {
        let start = self.marker_positions(&self.q);
        let mut done = 0.0f64;
        let mut step = 0.25f64;
        let mut total = 0;
        while done < 1.0 {
            let lam = (done + step).min(1.0);
            let t: Vec<(usize, Vec3, f64)> = targets.iter().map(|(i, p, s)| (*i, start[*i] + (p - start[*i]) * lam, *s)).collect();
            let (q0, f0) = (self.q.clone(), self.forces.clone());
            match solve(self, &t) {
                Ok(it) => {
                    total += it;
                    done = lam;
                    step = (step * 2.0).min(1.0);
                }
                Err(e) => {
                    self.q = q0;
                    self.forces = f0;
                    step *= 0.5;
                    if step < 1.0 / 256.0 {
                        return Err(e);
                    }
                }
            }
        }
        Ok(total)
    }

    /// Discrepancy principle: the energy scale for which the normalised
    /// misfit chi^2 equals the number of measured coordinates.
    fn calibrate(&mut self, targets: &[(usize, Vec3, f64)]) {
        let goal = 3.0 * targets.len() as f64;
        let chi2 = |obs: &mut Observer, log_c: f64| -> Option<f64> {
            obs.energy_scale_j = Some(10f64.powf(log_c));
            obs.solve_weighted_with_continuation(targets).ok()?;
            let pos = obs.marker_positions(&obs.q);
            Some(targets.iter().map(|(i, p, s)| (pos[*i] - p).norm_squared() / (s * s)).sum())
        };
        // chi^2 falls as c grows (stiffer springs). Bisection in log10(c),
        // walking up from soft springs so that warm starts stay close.
        let (mut lo, mut hi) = (-14.0f64, 2.0f64);
        let mut found = None;
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            match chi2(self, mid) {
                Some(x) if x > goal => lo = mid,
                Some(_) => {
                    hi = mid;
                    found = Some(mid);
                }
                None => hi = mid,
            }
            if hi - lo < 0.01 {
                break;
            }
        }
        self.energy_scale_j = Some(10f64.powf(found.unwrap_or(hi)));
    }
}
