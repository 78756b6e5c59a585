//! Statics in energy form (science §3): the equilibrium is a stationary
//! point of `Pi(q) = 1/2 q^T K q - sum F_i . p_i + sum T_c l_c(q)`, plus the
//! virtual work of dead moments (not conservative).
//!
//! Loads act at joints: gravity is lumped at joints (mass and first moment of
//! every sub-segment kept), point forces and moments at their joint (with an
//! optional body-frame offset). With `W_k` the spatial wrench of all loads
//! beyond segment k, the residual is
//!   r = K q + sum_c T_c dl_c/dq - sum_k Psi_k^T dexp(psi_k)^T Ad_{g_k}^T W_k
//! and its exact derivative (the tangent `H`) has three load parts: the frame
//! change of `Ad_{g_k}`, the derivative of `dexp` (dual numbers), and the
//! motion of the load points under dead forces. Newton with a backtracking
//! line search on |r| and load continuation solves `r = 0`.

use crate::model::{Kinematics, Model};
use lie::{skew, stack, Mat3, Vec3, Vec6};
use nalgebra::{DMatrix, DVector, Matrix3};

/// A dead force and moment at a point of the rod.
#[derive(Clone, Debug, PartialEq)]
pub struct PointLoad {
    /// Arc length of the joint it acts on [m].
    pub x_m: f64,
    /// Offset of the point of application from the centre line, body frame [m].
    pub offset_body_m: Vec3,
    /// World-frame force [N].
    pub force_n: Vec3,
    /// World-frame moment [N m] (virtual work: not conservative).
    pub moment_nm: Vec3,
}

/// Static loads. Continuation scales all of them together.
#[derive(Clone, Debug, PartialEq)]
pub struct Loads {
    /// Multiplies the rod's gravity vector (1 = as configured, 0 = off).
    pub gravity_scale: f64,
    pub point_loads: Vec<PointLoad>,
    /// Tension of each cable of the rod, in its order [N].
    pub cable_tensions_n: Vec<f64>,
}

impl Default for Loads {
    fn default() -> Self {
        Self { gravity_scale: 1.0, point_loads: vec![], cable_tensions_n: vec![] }
    }
}

impl Loads {
    pub fn gravity() -> Self {
        Self::default()
    }

    pub fn none() -> Self {
        Self { gravity_scale: 0.0, ..Self::default() }
    }

    pub fn with_tip(mut self, length_m: f64, force_n: Vec3, moment_nm: Vec3) -> Self {
        self.point_loads.push(PointLoad { x_m: length_m, offset_body_m: Vec3::zeros(), force_n, moment_nm });
        self
    }

    pub fn with_tensions(mut self, t: &[f64]) -> Self {
        self.cable_tensions_n = t.to_vec();
        self
    }

    /// Arc lengths that must be joints of the model.
    pub fn points_m(&self) -> Vec<f64> {
        self.point_loads.iter().map(|p| p.x_m).collect()
    }
}

/// Solver settings.
#[derive(Clone, Debug)]
pub struct NewtonOptions {
    pub max_iterations: usize,
    /// Converged when |r| <= tolerance * (|K q| + |external part of r|).
    pub tolerance: f64,
    /// Smallest load increment of the continuation is 1 / max_load_steps.
    pub max_load_steps: usize,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self { max_iterations: 40, tolerance: 1e-11, max_load_steps: 256 }
    }
}

/// Result of a static solve.
#[derive(Clone, Debug)]
pub struct StaticSolution {
    pub q: DVector<f64>,
    /// Newton iterations over all load steps.
    pub iterations: usize,
    /// Load increments used by the continuation (1 = direct).
    pub load_steps: usize,
    pub residual_norm: f64,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum StaticsError {
    #[error("{0} cable tensions given, the rod has {1} cables")]
    TensionCount(usize, usize),
    #[error("load at X = {0} m is not on a joint of the model (build the model with the loads' points)")]
    LoadOffGrid(f64),
    #[error("load is not finite")]
    NotFinite,
    #[error("static solve did not converge: load factor {reached:.4} reached, residual {residual:.3e}")]
    NoConvergence { reached: f64, residual: f64 },
}

/// Residual, optional tangent and the kinematics they came from.
pub struct Assembly {
    pub residual: DVector<f64>,
    pub tangent: Option<DMatrix<f64>>,
    /// |K q| + |r - K q|: the scale of the residual's terms.
    pub scale: f64,
    /// Frames and Jacobians at `q` (computed with the tangent).
    pub kinematics: Option<Kinematics>,
}

/// Loads resolved to joints.
struct JointLoads {
    /// Per joint: total force, spatial wrench about the world origin, and
    /// `sum F~ p~` (for the load-point motion term).
    force: Vec<Vec3>,
    wrench: Vec<Vec6>,
    fp: Vec<Mat3>,
    tensions: Vec<f64>,
    /// Sum of F . p (potential of dead forces, negated).
    work: f64,
}

/// Builds a model whose joints include the loads' points.
pub fn model_for(rod: &crate::Rod, loads: &Loads) -> Model {
    Model::new(rod, &loads.points_m())
}

fn check_loads(model: &Model, loads: &Loads) -> Result<Vec<usize>, StaticsError> {
    if loads.cable_tensions_n.len() != model.rod.cables.len() && !(loads.cable_tensions_n.is_empty()) {
        return Err(StaticsError::TensionCount(loads.cable_tensions_n.len(), model.rod.cables.len()));
    }
    if !loads.gravity_scale.is_finite() || loads.cable_tensions_n.iter().any(|t| !t.is_finite()) {
        return Err(StaticsError::NotFinite);
    }
    let tol = 1e-9 * model.rod.length_m;
    loads
        .point_loads
        .iter()
        .map(|p| {
            if !(p.force_n.iter().chain(p.moment_nm.iter()).chain(p.offset_body_m.iter()).all(|v| v.is_finite())) {
                return Err(StaticsError::NotFinite);
            }
            let j = model.joint_at(p.x_m);
            if (model.joint_x_m[j] - p.x_m).abs() > tol {
                Err(StaticsError::LoadOffGrid(p.x_m))
            } else {
                Ok(j)
            }
        })
        .collect()
}

fn resolve(model: &Model, loads: &Loads, joints_of: &[usize], frames: &crate::model::Frames, lambda: f64) -> JointLoads {
    let nj = model.n_joints();
    let mut force = vec![Vec3::zeros(); nj];
    let mut wrench = vec![Vec6::zeros(); nj];
    let mut fp = vec![Mat3::zeros(); nj];
    let mut work = 0.0;
    let g = model.rod.gravity_m_s2 * (loads.gravity_scale * lambda);
    let mut add = |j: usize, p: Vec3, f: Vec3, m: Vec3| {
        force[j] += f;
        wrench[j] += stack(&(p.cross(&f) + m), &f);
        fp[j] += skew(&f) * skew(&p);
        work += f.dot(&p);
    };
    if g.norm_squared() > 0.0 {
        for (j, mass) in model.joint_mass_kg.iter().enumerate() {
            add(j, frames.joints[j].pos, g * *mass, Vec3::zeros());
        }
    }
    for (pl, &j) in loads.point_loads.iter().zip(joints_of) {
        let p = frames.joints[j].transform_point(&pl.offset_body_m);
        add(j, p, pl.force_n * lambda, pl.moment_nm * lambda);
    }
    let tensions =
        if loads.cable_tensions_n.is_empty() { vec![0.0; model.rod.cables.len()] } else { loads.cable_tensions_n.iter().map(|t| t * lambda).collect() };
    JointLoads { force, wrench, fp, tensions, work }
}

/// Cable length `l_c = sum_k h_k |Q_k + K_k x d + d'|` for every cable.
pub fn cable_lengths_m(model: &Model, q: &DVector<f64>) -> Vec<f64> {
    model
        .cable_spans
        .iter()
        .map(|spans| {
            spans
                .iter()
                .enumerate()
                .filter_map(|(k, s)| s.map(|s| (k, s)))
                .map(|(k, s)| {
                    let xi = model.segment_strain(k, q);
                    let v = lie::linear(&xi) + lie::angular(&xi).cross(&s.offset_m) + s.offset_slope;
                    model.segments[k].h_m * v.norm()
                })
                .sum()
        })
        .collect()
}

/// Total potential energy of the conservative loads (moments excluded).
pub fn potential_energy(model: &Model, loads: &Loads, q: &DVector<f64>) -> Result<f64, StaticsError> {
    let joints_of = check_loads(model, loads)?;
    let frames = model.frames(q);
    let jl = resolve(model, loads, &joints_of, &frames, 1.0);
    let elastic = 0.5 * q.dot(&(&model.stiffness * q));
    let cables: f64 = cable_lengths_m(model, q).iter().zip(&jl.tensions).map(|(l, t)| l * t).sum();
    Ok(elastic + cables - jl.work)
}

/// Residual `r(q)` (gradient of the potential plus virtual work of moments)
/// and, if asked, its exact Jacobian.
pub fn assemble(model: &Model, loads: &Loads, q: &DVector<f64>, lambda: f64, with_tangent: bool) -> Result<Assembly, StaticsError> {
    let joints_of = check_loads(model, loads)?;
    Ok(assemble_resolved(model, loads, &joints_of, q, lambda, with_tangent))
}

fn assemble_resolved(model: &Model, loads: &Loads, joints_of: &[usize], q: &DVector<f64>, lambda: f64, with_tangent: bool) -> Assembly {
    let n = model.n_dof();
    let kin: Option<Kinematics> = with_tangent.then(|| model.kinematics(q));
    let frames_owned;
    let frames = match &kin {
        Some(k) => &k.frames,
        None => {
            frames_owned = model.frames(q);
            &frames_owned
        }
    };
    let jl = resolve(model, loads, joints_of, frames, lambda);
    let kq = &model.stiffness * q;
    let mut r = kq.clone();
    let mut h = with_tangent.then(|| model.stiffness.clone());
    let nseg = model.segments.len();

    // Loads beyond each segment, from the tip back.
    let mut w_beyond = Vec6::zeros();
    for k in (0..nseg).rev() {
        w_beyond += jl.wrench[k + 1];
        if w_beyond == Vec6::zeros() {
            continue;
        }
        let seg = &model.segments[k];
        let dof = seg.dof;
        let g = &frames.joints[k];
        let psi = &frames.psi[k];
        let w_body = g.coadjoint_apply(&w_beyond);
        let v = lie::dexp_transpose_apply(psi, &w_body);
        let wts = [seg.w_left * seg.h_m, seg.w_right * seg.h_m];
        for (a, wa) in wts.iter().enumerate() {
            for (j, &c) in model.free.iter().enumerate() {
                r[dof[a] + j] -= wa * v[c];
            }
        }
        if let (Some(h), Some(kin)) = (h.as_mut(), kin.as_ref()) {
            // Frame change of Ad_{g_k}: A_k^T ad_{eta_k}^T W = A_k^T B(W) J_k.
            let y = kin.segment_map[k].transpose() * lie::coad_bar(&w_beyond) * &kin.spatial_jacobian[k];
            // Derivative of dexp at psi_k.
            let z = lie::dexp_transpose_jacobian(psi, &w_body);
            for (a, wa) in wts.iter().enumerate() {
                for (j, &c) in model.free.iter().enumerate() {
                    let row = dof[a] + j;
                    for col in 0..n {
                        h[(row, col)] -= wa * y[(c, col)];
                    }
                    for (b, wb) in wts.iter().enumerate() {
                        for (jj, &cc) in model.free.iter().enumerate() {
                            h[(row, dof[b] + jj)] -= wa * wb * z[(c, cc)];
                        }
                    }
                }
            }
        }
    }

    // Motion of the points where dead forces act.
    if let (Some(h), Some(kin)) = (h.as_mut(), kin.as_ref()) {
        for j in 0..model.n_joints() {
            if jl.force[j] == Vec3::zeros() {
                continue;
            }
            let js = &kin.spatial_jacobian[j];
            let jw = js.fixed_rows::<3>(0);
            let jv = js.fixed_rows::<3>(3);
            let t = skew(&jl.force[j]) * jv - jl.fp[j] * jw;
            h.gemm_tr(1.0, &jw.into_owned(), &t, 1.0);
        }
    }

    // Cables: T dl/dq and T d2l/dq2, segment by segment.
    for (c, spans) in model.cable_spans.iter().enumerate() {
        let t_n = jl.tensions[c];
        if t_n == 0.0 {
            continue;
        }
        for (k, span) in spans.iter().enumerate() {
            let Some(span) = span else { continue };
            let seg = &model.segments[k];
            let dof = seg.dof;
            let xi = model.segment_strain(k, q);
            let d = span.offset_m;
            let v = lie::linear(&xi) + lie::angular(&xi).cross(&d) + span.offset_slope;
            let nv = v.norm();
            let t = v / nv;
            let grad = stack(&d.cross(&t), &t) * (t_n * seg.h_m);
            let wts = [seg.w_left, seg.w_right];
            for (a, wa) in wts.iter().enumerate() {
                for (j, &cc) in model.free.iter().enumerate() {
                    r[dof[a] + j] += wa * grad[cc];
                }
            }
            if let Some(h) = h.as_mut() {
                // B = [-d~ | I], Hxi = T h B^T (I - t t^T) B / |v|.
                let mut b = nalgebra::Matrix3x6::zeros();
                b.fixed_view_mut::<3, 3>(0, 0).copy_from(&(-skew(&d)));
                b.fixed_view_mut::<3, 3>(0, 3).copy_from(&Matrix3::identity());
                let p = (Matrix3::identity() - t * t.transpose()) / nv;
                let hxi = b.transpose() * p * b * (t_n * seg.h_m);
                for (a, wa) in wts.iter().enumerate() {
                    for (bb, wb) in wts.iter().enumerate() {
                        for (j, &c1) in model.free.iter().enumerate() {
                            for (jj, &c2) in model.free.iter().enumerate() {
                                h[(dof[a] + j, dof[bb] + jj)] += wa * wb * hxi[(c1, c2)];
                            }
                        }
                    }
                }
            }
        }
    }
    let scale = kq.norm() + (&r - &kq).norm();
    Assembly { residual: r, tangent: h, scale, kinematics: kin }
}

/// Solves the static equilibrium under `loads`, from `q_start` (or the rest
/// configuration), with load continuation when a direct Newton fails.
pub fn solve(model: &Model, loads: &Loads, q_start: Option<&DVector<f64>>, opts: &NewtonOptions) -> Result<StaticSolution, StaticsError> {
    let joints_of = check_loads(model, loads)?;
    let mut q = q_start.cloned().unwrap_or_else(|| DVector::zeros(model.n_dof()));
    let mut done: f64 = 0.0;
    let mut step: f64 = 1.0;
    let mut iterations = 0;
    let mut load_steps = 0;
    let min_step = 1.0 / opts.max_load_steps as f64;
    loop {
        let target = (done + step).min(1.0);
        match newton(model, loads, &joints_of, &q, target, opts) {
            Ok((qn, it, res)) => {
                iterations += it;
                load_steps += 1;
                q = qn;
                done = target;
                if done >= 1.0 {
                    return Ok(StaticSolution { q, iterations, load_steps, residual_norm: res });
                }
                step = (step * 2.0).min(1.0);
            }
            Err((it, res)) => {
                iterations += it;
                step *= 0.5;
                if step < min_step {
                    return Err(StaticsError::NoConvergence { reached: done, residual: res });
                }
            }
        }
    }
}

/// Newton with backtracking on |r| at load factor `lambda`.
fn newton(
    model: &Model,
    loads: &Loads,
    joints_of: &[usize],
    q0: &DVector<f64>,
    lambda: f64,
    opts: &NewtonOptions,
) -> Result<(DVector<f64>, usize, f64), (usize, f64)> {
    let mut q = q0.clone();
    let mut it = 0;
    let mut asm = assemble_resolved(model, loads, joints_of, &q, lambda, true);
    let mut rn = asm.residual.norm();
    loop {
        if rn <= opts.tolerance * asm.scale || rn < 1e-300 {
            return Ok((q, it, rn));
        }
        if it >= opts.max_iterations || !rn.is_finite() {
            return Err((it, rn));
        }
        it += 1;
        let h = asm.tangent.take().expect("tangent");
        let Some(dq) = h.lu().solve(&(-&asm.residual)) else {
            return Err((it, rn));
        };
        let mut alpha = 1.0;
        loop {
            let qn = &q + &dq * alpha;
            let trial = assemble_resolved(model, loads, joints_of, &qn, lambda, false);
            let tn = trial.residual.norm();
            if tn.is_finite() && (tn <= (1.0 - 1e-4 * alpha) * rn || tn <= opts.tolerance * trial.scale) {
                q = qn;
                break;
            }
            alpha *= 0.5;
            if alpha < 1e-4 {
                // Stalled at round-off: accept if already tiny.
                if rn <= 1e3 * opts.tolerance * asm.scale {
                    return Ok((q, it, rn));
                }
                return Err((it, rn));
            }
        }
        asm = assemble_resolved(model, loads, joints_of, &q, lambda, true);
        rn = asm.residual.norm();
    }
}
