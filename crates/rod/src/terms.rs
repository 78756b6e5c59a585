//! Every load and constraint on the rod is a [`Term`]: a small value that
//! adds its residual (and tangent) to the system, and its energy where it is
//! conservative. Statics, the observer and the simulator differ only in the
//! list of terms they assemble (shape borrowed from PyElastica's forcing
//! modules: a new physical effect is a new term).
//!
//! A term either adds generalised forces directly (elastic energy, cables,
//! damping), or applies wrenches to material points of the rod: at a joint
//! frame ([`Attach::Joint`]) or inside a constant-strain segment
//! ([`Attach::Interior`]). The assembler maps wrenches to generalised forces
//! by `r -= J^T W` (one backward pass over the segments), and builds the
//! exact tangent: the change of `J^T` under the fixed wrench (frame change
//! and the derivative of `dexp`) plus `J^T T J` for the wrench's own
//! dependence on the motion, `T = -dW/deta`.
//!
//! Residual convention: `r(q) = grad Pi(q)` for conservative loads, i.e.
//! internal minus external generalised forces.

use crate::model::{CableHole, Frames, InteriorPoint, Kinematics, Model, Segment};
use lie::{skew, stack, Mat3, Mat6, Vec3, Vec6};
use nalgebra::{DMatrix, DVector, Matrix3, Matrix3x6};
use std::ops::AddAssign;

/// What a term sees: the model, the coordinates and the kinematics there.
pub struct State<'a> {
    pub model: &'a Model,
    pub q: &'a DVector<f64>,
    pub frames: &'a Frames,
    /// Present when the tangent is assembled.
    pub kinematics: Option<&'a Kinematics>,
}

/// Where a wrench acts.
#[derive(Clone, Copy, Debug)]
pub enum Attach<'p> {
    /// Rigidly attached to joint `j`'s frame.
    Joint(usize),
    /// At a material point inside a segment.
    Interior(&'p InteriorPoint),
}

/// A load or constraint acting on the rod.
pub trait Term {
    fn name(&self) -> &str;
    /// Potential energy at the state; `None` when the term is not
    /// conservative (dead moments, friction, inertia, damping).
    fn energy(&self, state: &State) -> Option<f64>;
    /// Adds the term's residual (and tangent, when the sink wants one).
    fn contribute(&self, state: &State, sink: &mut Sink);
}

/// Per-segment accumulators for interior points (see [`Sink::wrench`]).
#[derive(Clone)]
struct InteriorBlocks {
    /// `sum s map^T B(W)`: frame change of the interior part of `J^T`.
    geometric: Mat6,
    /// `sum s^2 Z(s xi, w_body)`: derivative of `dexp(s xi)^T`.
    dexp: Mat6,
    /// `sum T B_p` (6 x 6 over strain components, times the segment's
    /// weights later), `sum B_p^T T`, `sum B_p^T T B_p`.
    t_b: Mat6,
    bt_t: Mat6,
    bt_t_b: Mat6,
}

impl InteriorBlocks {
    fn zero() -> Self {
        Self { geometric: Mat6::zeros(), dexp: Mat6::zeros(), t_b: Mat6::zeros(), bt_t: Mat6::zeros(), bt_t_b: Mat6::zeros() }
    }
}

/// Collects the contributions of the terms.
pub struct Sink<'a> {
    model: &'a Model,
    frames: &'a Frames,
    /// The current term's generalised residual (direct part and the
    /// interior points' own-segment part).
    residual: DVector<f64>,
    /// The current term's wrenches per joint.
    joint_wrench: Vec<Vec6>,
    touched: bool,
    /// Totals over all terms, for the tangent.
    tangent: Option<DMatrix<f64>>,
    total_wrench: Vec<Vec6>,
    /// Per joint `T` (the sum of the wrenches' there). Allocated on first
    /// use.
    joint_t: Vec<Option<Mat6>>,
    interior: Vec<Option<InteriorBlocks>>,
    /// The current term's wrenches at interior points of each segment
    /// (residual only), weighted for one pull-back per segment
    /// ([`lie::dexp_transpose_weights`]); allocated on first use.
    interior_sums: Vec<Option<[Vec6; 5]>>,
    /// Every wrench so far was a point force without a moment and with a
    /// symmetric stiffness (gravity, dead loads, springs, frictionless
    /// cables' pulls): its `T - T^T` is `B(W)`, so the loads' stiffness of
    /// a pair of segments is the mirror image of the pair's other half
    /// ([`LoadStiffness::Mirrored`]).
    point_forces_only: bool,
}

/// `P = [-p~ | I]`: velocity of the point `p` for a spatial twist.
fn point_map(p: &Vec3) -> Matrix3x6<f64> {
    let mut m = Matrix3x6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&(-skew(p)));
    m.fixed_view_mut::<3, 3>(0, 3).copy_from(&Matrix3::identity());
    m
}

/// `-dW/deta` of a force `f` at the moving point `p` (W = [p x f; f]) with
/// `df = -k dp`: the dead-force part `[f~ P; 0]` plus `[p~; I] k P`.
pub fn point_force_tangent(p: &Vec3, f: &Vec3, stiffness: Option<&Mat3>) -> Mat6 {
    let pm = point_map(p);
    let mut t = Mat6::zeros();
    t.fixed_view_mut::<3, 6>(0, 0).copy_from(&(skew(f) * pm));
    if let Some(k) = stiffness {
        t += pm.transpose() * k * pm;
    }
    t
}

impl<'a> Sink<'a> {
    fn new(model: &'a Model, frames: &'a Frames, with_tangent: bool) -> Self {
        let n = model.n_dof();
        let nj = model.n_joints();
        Sink {
            model,
            frames,
            residual: DVector::zeros(n),
            joint_wrench: vec![Vec6::zeros(); nj],
            touched: false,
            tangent: with_tangent.then(|| DMatrix::zeros(n, n)),
            total_wrench: vec![Vec6::zeros(); nj],
            joint_t: vec![],
            interior: vec![],
            interior_sums: vec![],
            point_forces_only: true,
        }
    }

    pub fn model(&self) -> &Model {
        self.model
    }

    pub fn wants_tangent(&self) -> bool {
        self.tangent.is_some()
    }

    /// The current term's direct generalised residual.
    pub fn residual_mut(&mut self) -> &mut DVector<f64> {
        &mut self.residual
    }

    /// The total tangent (direct contributions), when assembled.
    pub fn tangent_mut(&mut self) -> Option<&mut DMatrix<f64>> {
        self.tangent.as_mut()
    }

    /// A wrench `w` on the rod (world frame, about the world origin) at
    /// `at`, with `t = -dW/deta` for its dependence on the motion of the
    /// point's frame (`None`: a dead wrench, fixed in space).
    pub fn wrench(&mut self, at: Attach, w: Vec6, t: Option<Mat6>) {
        self.point_forces_only = false;
        self.add_wrench(at, w, t);
    }

    fn add_wrench(&mut self, at: Attach, w: Vec6, t: Option<Mat6>) {
        self.touched = true;
        match at {
            Attach::Joint(j) => {
                self.joint_wrench[j] += w;
                if let (Some(t), true) = (t, self.tangent.is_some()) {
                    self.add_joint_t(j, &t);
                }
            }
            Attach::Interior(p) => {
                let k = p.segment;
                // J_p = J_k + map s Phi_k: the J_k part goes with joint k,
                // the segment's own part is added here.
                self.joint_wrench[k] += w;
                let seg = &self.model.segments[k];
                // map^T W = dexp(s xi)^T Ad_{g_k}^T W (the map itself when
                // the point carries it).
                let g_k = &self.frames.joints[k];
                let w_local = g_k.coadjoint_apply(&w);
                match &p.map {
                    Some(map) => subtract_at_nodes(
                        self.model,
                        self.model.all_components_free(),
                        seg,
                        [seg.w_left * p.s_m, seg.w_right * p.s_m],
                        &(map.transpose() * w),
                        &mut self.residual,
                    ),
                    None => {
                        // Summed per segment, pulled back when the term ends.
                        if self.interior_sums.is_empty() {
                            self.interior_sums = vec![None; self.model.segments.len()];
                        }
                        let xi = self.frames.psi[k] / seg.h_m;
                        let sums = self.interior_sums[k].get_or_insert([Vec6::zeros(); 5]);
                        for (u, c) in sums.iter_mut().zip(lie::dexp_transpose_weights(&xi, p.s_m)) {
                            u.axpy(c * p.s_m, &w_local, 1.0);
                        }
                    }
                }
                if self.tangent.is_some() {
                    let map = p.map.unwrap_or_else(|| lie::adjoint_times_lower(g_k, &lie::dexp(&p.local)));
                    if self.interior.is_empty() {
                        self.interior = vec![None; self.model.segments.len()];
                    }
                    let blocks = self.interior[k].get_or_insert_with(InteriorBlocks::zero);
                    blocks.geometric += map.transpose() * lie::coad_bar(&w) * p.s_m;
                    blocks.dexp += lie::dexp_transpose_jacobian(&p.local, &w_local) * (p.s_m * p.s_m);
                    if let Some(t) = t {
                        let b = map * p.s_m;
                        let tb = t * b;
                        blocks.bt_t_b += b.transpose() * tb;
                        blocks.t_b += tb;
                        blocks.bt_t += (t.transpose() * b).transpose();
                        self.add_joint_t(k, &t);
                    }
                }
            }
        }
    }

    fn add_joint_t(&mut self, j: usize, t: &Mat6) {
        if self.joint_t.is_empty() {
            self.joint_t = vec![None; self.model.n_joints()];
        }
        *self.joint_t[j].get_or_insert_with(Mat6::zeros) += t;
    }

    /// A force `f` and moment `m` (world) at the world point `p` attached at
    /// `at`; `stiffness = -df/dp` when the force follows the point (springs).
    pub fn point_force(&mut self, at: Attach, p: &Vec3, f: &Vec3, m: &Vec3, stiffness: Option<&Mat3>) {
        let w = stack(&(p.cross(f) + m), f);
        let t = self.tangent.is_some().then(|| point_force_tangent(p, f, stiffness));
        // A moment's T leaves out its B(W) part; a non-symmetric stiffness
        // (friction) is not the Hessian of a potential.
        self.point_forces_only &= *m == Vec3::zeros() && stiffness.is_none_or(|k| *k == k.transpose());
        self.add_wrench(at, w, t);
    }

    /// Ends a term: its wrenches become generalised forces. Returns the norm
    /// of the term's generalised force (for the residual's scale).
    fn finish_term(&mut self, total: &mut DVector<f64>) -> f64 {
        let all_free = self.model.all_components_free();
        for (k, sums) in self.interior_sums.iter_mut().enumerate() {
            let Some(u) = sums.take() else { continue };
            let seg = &self.model.segments[k];
            let v = lie::ad_transpose_horner(&(self.frames.psi[k] / seg.h_m), &u);
            subtract_at_nodes(self.model, all_free, seg, [seg.w_left, seg.w_right], &v, &mut self.residual);
        }
        if self.touched {
            generalised_force(self.model, self.frames, &self.joint_wrench, &mut self.residual);
            for (t, w) in self.total_wrench.iter_mut().zip(self.joint_wrench.iter_mut()) {
                *t += *w;
                *w = Vec6::zeros();
            }
            self.touched = false;
        }
        let norm = self.residual.norm();
        *total += &self.residual;
        // On the slice: nalgebra's `fill` stepped its iterator one entry at
        // a time (5 % of Table II's residual).
        self.residual.as_mut_slice().fill(0.0);
        norm
    }
}

/// `r -= J^T W` for wrenches `W_j` at the joints: one backward pass, the
/// wrench beyond each segment pulled back through `Ad^T` and `dexp^T`.
pub fn generalised_force(model: &Model, frames: &Frames, joint_wrench: &[Vec6], r: &mut DVector<f64>) {
    let all_free = model.all_components_free();
    let mut w_beyond = Vec6::zeros();
    for k in (0..model.segments.len()).rev() {
        w_beyond += joint_wrench[k + 1];
        if w_beyond == Vec6::zeros() {
            continue;
        }
        let seg = &model.segments[k];
        let w_body = frames.joints[k].coadjoint_apply(&w_beyond);
        let v = lie::dexp_transpose_apply(&frames.psi[k], &w_body);
        subtract_at_nodes(model, all_free, seg, [seg.w_left * seg.h_m, seg.w_right * seg.h_m], &v, r);
    }
    if let Some(o) = model.base_dof() {
        w_beyond += joint_wrench[0];
        let w_ref = model.rod.base.coadjoint_apply(&w_beyond);
        let v = lie::dexp_transpose_apply(&frames.base_twist, &w_ref);
        for i in 0..6 {
            r[o + i] -= v[i];
        }
    }
}

/// `r -= w_a v` on the free strain components of segment `seg`'s two
/// nodal blocks, `wts` the left and right blocks' weights; `all_free`:
/// [`Model::all_components_free`], asked once by the caller's loop.
fn subtract_at_nodes(model: &Model, all_free: bool, seg: &Segment, wts: [f64; 2], v: &Vec6, r: &mut DVector<f64>) {
    for (a, wa) in wts.iter().enumerate() {
        if all_free {
            // Cosserat rods: a contiguous block of six, unchecked.
            for (ri, vi) in r.as_mut_slice()[seg.dof[a]..seg.dof[a] + 6].iter_mut().zip(v.iter()) {
                *ri -= wa * vi;
            }
            continue;
        }
        for (j, &c) in model.free.iter().enumerate() {
            r[seg.dof[a] + j] -= wa * v[c];
        }
    }
}

/// Residual, tangent and what they were computed from.
pub struct Assembly {
    pub residual: DVector<f64>,
    pub tangent: Option<DMatrix<f64>>,
    /// Sum of the norms of every term's generalised force: the scale the
    /// residual is judged against.
    pub scale: f64,
    /// Frames and Jacobians at `q` (computed with the tangent).
    pub kinematics: Option<Kinematics>,
    /// Total wrench of all applied loads on the rod (world, about the world
    /// origin): for a prescribed base, the base's reaction is its negative.
    pub applied_wrench: Vec6,
}

/// Assembles the residual (and tangent) of a list of terms at `q`.
pub fn assemble(model: &Model, q: &DVector<f64>, terms: &[&dyn Term], with_tangent: bool) -> Assembly {
    let kin: Option<Kinematics> = with_tangent.then(|| model.kinematics(q));
    let frames_owned;
    let frames = match &kin {
        Some(k) => &k.frames,
        None => {
            frames_owned = model.frames(q);
            &frames_owned
        }
    };
    assemble_with(model, q, frames, kin.as_ref(), terms, with_tangent).with_kinematics(kin)
}

impl Assembly {
    fn with_kinematics(mut self, kin: Option<Kinematics>) -> Self {
        self.kinematics = kin;
        self
    }
}

/// The Jacobian of the terms' residual at `q` by central differences of
/// step `e`: what every term's tangent is checked against.
pub fn residual_jacobian_by_differences(model: &Model, q: &DVector<f64>, terms: &[&dyn Term], e: f64) -> DMatrix<f64> {
    let n = q.len();
    let mut out = DMatrix::zeros(n, n);
    for i in 0..n {
        let mut qp = q.clone();
        qp[i] += e;
        let mut qm = q.clone();
        qm[i] -= e;
        out.set_column(i, &((assemble(model, &qp, terms, false).residual - assemble(model, &qm, terms, false).residual) / (2.0 * e)));
    }
    out
}

/// [`assemble`] on frames (and kinematics) already computed.
pub fn assemble_with(model: &Model, q: &DVector<f64>, frames: &Frames, kin: Option<&Kinematics>, terms: &[&dyn Term], with_tangent: bool) -> Assembly {
    assemble_terms(model, q, frames, kin, terms, with_tangent, true).0
}

/// [`assemble_with`], and how the loads' stiffness joined the tangent;
/// `mirror` off: never by [`LoadStiffness::Mirrored`] (the tests' reference).
fn assemble_terms(
    model: &Model,
    q: &DVector<f64>,
    frames: &Frames,
    kin: Option<&Kinematics>,
    terms: &[&dyn Term],
    with_tangent: bool,
    mirror: bool,
) -> (Assembly, Option<LoadStiffness>) {
    let n = model.n_dof();
    let state = State { model, q, frames, kinematics: kin };
    let mut sink = Sink::new(model, frames, with_tangent && kin.is_some());
    let mut r = DVector::zeros(n);
    let mut scale = 0.0;
    for t in terms {
        t.contribute(&state, &mut sink);
        scale += sink.finish_term(&mut r);
    }
    let applied_wrench = sink.total_wrench.iter().sum();
    let (tangent, mode) = match (sink.tangent.take(), kin) {
        (Some(mut h), Some(kin)) => {
            let mode = add_wrench_tangent(model, kin, &sink, &mut h, mirror);
            (Some(h), Some(mode))
        }
        _ => (None, None),
    };
    (Assembly { residual: r, tangent, scale, kinematics: None, applied_wrench }, mode)
}

/// The tangent of `-J^T W`: frame change of `Ad_{g_k}` and derivative of
/// `dexp` for every segment under the wrench beyond it, `J^T T J` over the
/// joints, and the interior points' own-segment parts.
fn add_wrench_tangent(model: &Model, kin: &Kinematics, sink: &Sink, h: &mut DMatrix<f64>, mirror: bool) -> LoadStiffness {
    let columns = JointColumns::new(model);
    let mode = if mirror && sink.point_forces_only && model.base_dof().is_none() {
        LoadStiffness::Mirrored
    } else if !sink.joint_t.is_empty() && model.n_dof() <= STACKED_MAX_DOF {
        LoadStiffness::Stacked
    } else {
        LoadStiffness::Pass
    };
    add_segment_rows(model, kin, sink, h, &columns, mode);
    if mode == LoadStiffness::Stacked {
        add_joint_stiffness_stacked(model, kin, sink, h);
    }
    add_interior_blocks(model, kin, sink, h, &columns);
    mode
}

/// How the loads' stiffness `sum_j J_j^T T_j J_j` joins the tangent. It
/// pairs segments: with `C_k = sum_(j>k) T_j`, segment k's rows take
/// `A_k^T C_k A_l` towards an earlier segment l (with the frame change
/// `-A_k^T B(W_k) A_l`: the rows' `J_k` columns) and `A_k^T C_l A_l`
/// towards a later one (the `R_k` columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoadStiffness {
    /// Left out of the backward pass: one stacked product adds it.
    Stacked,
    /// Both halves in the backward pass.
    Pass,
    /// Only the `J_k` columns, each entry added at its mirror image as
    /// well. Point forces without moments have `T_j - T_j^T = B(W_j)`
    /// (T of a force f at p is `[f~ P; 0]`, `P = [-p~ | I]`; `(p x f)~ =
    /// p~ f~ - f~ p~`), so `C_k - C_k^T = B(W_k)` and the later pair's
    /// half `A_l^T C_k A_k` is the transpose of the earlier pair's: the
    /// tangent is symmetric (the Hessian of the potential) and half the
    /// pass builds it. Not with a floating base (its rows take the
    /// suffix sums at the root map).
    Mirrored,
}

/// Up to this many coordinates the loads' stiffness `sum_j J_j^T T_j J_j`
/// is one dense product (matrixmultiply's kernel); beyond, it joins the
/// backward pass of [`add_segment_rows`]. Side by side in one process
/// (Table II's rod, and a uniform rod of 16 and 32 sections): the product
/// 2 % faster at 24 coordinates, the pass 1.19x at 102 and 1.23x at 198.
const STACKED_MAX_DOF: usize = 48;

/// Joint j's columns in the tangent: `J_j` is non-zero only on the strain
/// coordinates of the segments before it and on the base.
struct JointColumns {
    reach: Vec<usize>,
    base: Option<(usize, usize)>,
}

impl JointColumns {
    fn new(model: &Model) -> JointColumns {
        let m = model.free.len();
        let mut reach = vec![0usize; model.n_joints()];
        for (k, seg) in model.segments.iter().enumerate() {
            reach[k + 1] = reach[k].max(seg.dof[0] + m).max(seg.dof[1] + m);
        }
        JointColumns { reach, base: model.base_dof().map(|o| (o, 6)) }
    }

    /// Joint j's column ranges (first column, count).
    fn of(&self, j: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        std::iter::once((0, self.reach[j])).chain(self.base)
    }
}

/// The rows of every segment in one backward pass (O(sections x n)).
///
/// Joint j's Jacobian is `J_j = sum_{k<j} A_k B_k` (`A_k = Ad_{g_k}
/// dexp(psi_k)`, `B_k` the segment's strain coordinates times its length
/// and hat weights), so the rows of segment k are
/// `B_k^T A_k^T [(C_k - B(W_k)) J_k + R_k + C_k A_k B_k]` minus the
/// derivative of `dexp`, where `W_k` is the wrench beyond the segment,
/// `C_k = sum_{j>k} T_j` and `R_k = sum_{l>k} C_l A_l B_l` are suffix sums:
/// the frame change and the loads' stiffness share one 6x6 product per
/// column (`J_k` is non-zero only before the segment, `R_k` only after).
/// Without `with_load_stiffness` C and R are left out (the stacked product
/// adds them). A floating base is the segment before the first.
///
/// The sub-segments of a section share its coordinates, and their `J_k`
/// and `R_k` differ only on those: the rest of the columns take the
/// section's summed 6x6 maps once ([`SectionRows`]), so a section of
/// eight sub-segments costs about one segment's product.
fn add_segment_rows(model: &Model, kin: &Kinematics, sink: &Sink, h: &mut DMatrix<f64>, columns: &JointColumns, mode: LoadStiffness) {
    let frames = &kin.frames;
    let n_strain = model.n_strain_dof();
    let stiff = mode != LoadStiffness::Stacked && !sink.joint_t.is_empty();
    let with_r = stiff && mode == LoadStiffness::Pass;
    let joint_t = |j: usize| if stiff { sink.joint_t[j].as_ref() } else { None };
    let rows_scatter = Scatter { sign: 1.0, mirrored: mode == LoadStiffness::Mirrored };
    // Suffix sums C_k and R_k (R's columns from `r_first` to the strains' end).
    let mut c = Mat6::zeros();
    let mut c_started = false;
    let mut r = nalgebra::Matrix6xX::<f64>::zeros(if with_r { model.n_dof() } else { 0 });
    let mut r_first = n_strain;
    let mut w_beyond = Vec6::zeros();
    let mut section: Option<SectionRows> = None;
    let every_joint = kin.keeps_every_joint();
    for k in (0..model.segments.len()).rev() {
        w_beyond += sink.total_wrench[k + 1];
        if let Some(t) = joint_t(k + 1) {
            c += t;
            c_started = true;
        }
        if w_beyond == Vec6::zeros() && !c_started {
            continue;
        }
        let seg = &model.segments[k];
        let wts = [seg.w_left * seg.h_m, seg.w_right * seg.h_m];
        let a = &kin.segment_map[k];
        let at = a.transpose();
        let x = at * (c - lie::coad_bar(&w_beyond));
        if every_joint {
            // A short rod: each segment's rows on every column it reaches.
            let js = kin.anchor(k).0;
            for (c0, nc) in columns.of(k) {
                scatter_rows(h, model, seg.dof, &wts, &x, columns_of(js, c0, nc), c0, rows_scatter);
            }
            if r_first < n_strain {
                scatter_rows(h, model, seg.dof, &wts, &at, columns_of(&r, r_first, n_strain - r_first), r_first, Scatter::ADD);
            }
        } else {
            if section.as_ref().is_some_and(|g| g.dof != seg.dof) {
                section.take().expect("a section").flush(h, model, kin, columns, &r, r_first);
            }
            let rows = section.get_or_insert_with(|| SectionRows::new(model, kin, k, rows_scatter));
            rows.add(&wts, &x, &at, with_r);
            // Its own coordinates' columns: this segment's J_k and R_k.
            rows.scatter_own(h, model, k, &wts, &x, columns.reach[k]);
            if r_first < n_strain {
                for (c0, nc) in own_columns(seg.dof, model.free.len(), r_first, n_strain) {
                    scatter_rows(h, model, seg.dof, &wts, &at, columns_of(&r, c0, nc), c0, Scatter::ADD);
                }
            }
        }
        // Own block: A^T C A minus the derivative of dexp at psi_k.
        let w_body = frames.joints[k].coadjoint_apply(&w_beyond);
        // Scaled by -1, not negated: nalgebra's negation flips each
        // entry's sign byte in place, and each read back stalls (1.6 % of a
        // tendon robot's tangent).
        let mut own = lie::dexp_transpose_jacobian(&frames.psi[k], &w_body) * -1.0;
        if c_started {
            let ca = c * a;
            own += at * ca;
            if with_r {
                for (side, w) in wts.iter().enumerate() {
                    for (j, &cc) in model.free.iter().enumerate() {
                        let mut column = r.fixed_view_mut::<6, 1>(0, seg.dof[side] + j);
                        column.axpy(*w, &ca.fixed_view::<6, 1>(0, cc), 1.0);
                    }
                }
                r_first = r_first.min(seg.dof[0]);
            }
        }
        add_segment_block(h, model, seg.dof, &wts, &own, 1.0);
    }
    if let Some(rows) = section {
        rows.flush(h, model, kin, columns, &r, r_first);
    }
    let Some(o) = model.base_dof() else { return };
    w_beyond += sink.total_wrench[0];
    // The reference frame is fixed: only the derivative of dexp(zeta)
    // under the wrench, and the loads' stiffness `root^T (C J_0 + R)`.
    let w_ref = model.rod.base.coadjoint_apply(&w_beyond);
    let z = lie::dexp_transpose_jacobian(&frames.base_twist, &w_ref);
    let mut block = h.view_mut((o, o), (6, 6));
    block -= z;
    if let Some(t) = joint_t(0) {
        c += t;
        c_started = true;
    }
    if let (true, Some(root)) = (c_started, &kin.root_map) {
        let (js, _) = kin.anchor(0);
        let rt = root.transpose();
        for col in 0..model.n_dof() {
            let y = rt * (c * js.fixed_view::<6, 1>(0, col) + r.fixed_view::<6, 1>(0, col));
            for i in 0..6 {
                h[(o + i, col)] += y[i];
            }
        }
    }
}

/// One section's segments in [`add_segment_rows`]: their rows' maps summed
/// per nodal side, `sum_k w_k A_k^T (C_k - B(W_k))` for `J` and
/// `sum_k w_k A_k^T` for `R`, applied at flush to every column but the
/// section's own (where the segments' `J_k` and `R_k` are all alike), and
/// each segment's `J_k` on the section's own columns.
struct SectionRows {
    dof: [usize; 2],
    /// The first segment met (the backward pass meets the last first): the
    /// widest reach.
    last_segment: usize,
    /// The section's first segment.
    first_segment: usize,
    jacobian_map: [Mat6; 2],
    r_map: [Mat6; 2],
    /// The own columns (first, count), and `J_k` on them for each segment
    /// from the first to the last (6 rows, column-major, one after another).
    own: Vec<(usize, usize)>,
    own_jacobians: Vec<f64>,
    /// How the `J` part is added.
    scatter: Scatter,
}

impl SectionRows {
    fn new(model: &Model, kin: &Kinematics, last_segment: usize, scatter: Scatter) -> SectionRows {
        let dof = model.segments[last_segment].dof;
        let first_segment = (0..=last_segment).rev().take_while(|&k| model.segments[k].dof == dof).last().expect("the last segment");
        let (anchor, anchor_joint) = kin.anchor(first_segment);
        assert_eq!(anchor_joint, first_segment, "a section's first joint is kept");
        let own: Vec<(usize, usize)> = own_columns(dof, model.free.len(), 0, model.n_strain_dof()).collect();
        let mut rows =
            SectionRows { dof, last_segment, first_segment, jacobian_map: [Mat6::zeros(); 2], r_map: [Mat6::zeros(); 2], own, own_jacobians: vec![], scatter };
        let own = &rows.own;
        let width: usize = own.iter().map(|(_, nc)| nc).sum();
        // J on the own columns at the first joint, then each segment's
        // A_k B_k added (they touch no other column).
        let mut local = nalgebra::Matrix6xX::<f64>::zeros(width);
        let mut at = 0;
        for &(c0, nc) in own {
            local.columns_mut(at, nc).copy_from(&anchor.columns(c0, nc));
            at += nc;
        }
        // Where each nodal block starts among the own columns.
        let block_at = dof.map(|d| {
            let mut before = 0;
            for &(c0, nc) in own {
                if (c0..c0 + nc).contains(&d) {
                    return before + d - c0;
                }
                before += nc;
            }
            unreachable!("a segment's coordinates are its section's own columns")
        });
        let mut own_jacobians = Vec::with_capacity((last_segment + 1 - first_segment) * 6 * width);
        for k in first_segment..=last_segment {
            own_jacobians.extend_from_slice(local.as_slice());
            let seg = &model.segments[k];
            let a = &kin.segment_map[k];
            for (j, &c) in model.free.iter().enumerate() {
                let col = a.column(c) * seg.h_m;
                local.column_mut(block_at[0] + j).axpy(seg.w_left, &col, 1.0);
                local.column_mut(block_at[1] + j).axpy(seg.w_right, &col, 1.0);
            }
        }
        rows.own_jacobians = own_jacobians;
        rows
    }

    fn add(&mut self, wts: &[f64; 2], x: &Mat6, at: &Mat6, stiff: bool) {
        for ((jacobian_map, r_map), w) in self.jacobian_map.iter_mut().zip(&mut self.r_map).zip(wts) {
            *jacobian_map += x * *w;
            if stiff {
                *r_map += at * *w;
            }
        }
    }

    /// Segment k's rows on the section's own columns before `reach` (J_k
    /// is zero beyond): `x J_k`.
    fn scatter_own(&self, h: &mut DMatrix<f64>, model: &Model, k: usize, wts: &[f64; 2], x: &Mat6, reach: usize) {
        let width: usize = self.own.iter().map(|(_, nc)| nc).sum();
        let mut jacobian = &self.own_jacobians[6 * width * (k - self.first_segment)..6 * width * (k + 1 - self.first_segment)];
        for &(c0, nc) in &self.own {
            let used = nc.min(reach.saturating_sub(c0));
            let (these, rest) = jacobian.split_at(6 * nc);
            jacobian = rest;
            if used > 0 {
                scatter_rows(h, model, self.dof, wts, x, &these[..6 * used], c0, self.scatter);
            }
        }
    }

    fn flush(self, h: &mut DMatrix<f64>, model: &Model, kin: &Kinematics, columns: &JointColumns, r: &nalgebra::Matrix6xX<f64>, r_first: usize) {
        let m = model.free.len();
        let (js, _) = kin.anchor(self.last_segment);
        for side in 0..2 {
            let wts = if side == 0 { [1.0, 0.0] } else { [0.0, 1.0] };
            if self.jacobian_map[side] == Mat6::zeros() {
                continue;
            }
            let strains = other_columns(self.dof, m, 0, columns.reach[self.last_segment]);
            for (c0, nc) in strains.chain(columns.base) {
                scatter_rows(h, model, self.dof, &wts, &self.jacobian_map[side], columns_of(js, c0, nc), c0, self.scatter);
            }
            if r_first < model.n_strain_dof() && self.r_map[side] != Mat6::zeros() {
                for (c0, nc) in other_columns(self.dof, m, r_first, model.n_strain_dof()) {
                    scatter_rows(h, model, self.dof, &wts, &self.r_map[side], columns_of(r, c0, nc), c0, Scatter::ADD);
                }
            }
        }
    }
}

/// A section's own columns (its two nodal blocks of `m`, one for a
/// constant strain; adjacent blocks as one) within `from..to`, as (first,
/// count).
fn own_columns(dof: [usize; 2], m: usize, from: usize, to: usize) -> impl Iterator<Item = (usize, usize)> {
    own_blocks(dof, m).into_iter().flatten().filter_map(move |(b, count)| clip(b, b + count, from, to))
}

fn own_blocks(dof: [usize; 2], m: usize) -> [Option<(usize, usize)>; 2] {
    let (lo, hi) = (dof[0].min(dof[1]), dof[0].max(dof[1]));
    if hi <= lo + m {
        [Some((lo, hi + m - lo)), None]
    } else {
        [Some((lo, m)), Some((hi, m))]
    }
}

/// The columns `from..to` but a section's own, as (first, count).
fn other_columns(dof: [usize; 2], m: usize, from: usize, to: usize) -> impl Iterator<Item = (usize, usize)> {
    let [first, second] = own_blocks(dof, m);
    let (b0, n0) = first.expect("a block");
    let (b1, n1) = second.unwrap_or((b0 + n0, 0));
    [clip(from, b0, from, to), clip(b0 + n0, b1, from, to), clip(b1 + n1, to, from, to)].into_iter().flatten()
}

/// `a..b` within `from..to`, as (first, count), when not empty.
fn clip(a: usize, b: usize, from: usize, to: usize) -> Option<(usize, usize)> {
    let (lo, hi) = (a.max(from), b.min(to));
    (lo < hi).then(|| (lo, hi - lo))
}

/// `sum_j J_j^T T_j J_j` as one product: the rows of each joint's Jacobian
/// that T uses (3, the moment rows, for dead forces; else 6) stacked into
/// `rows_t` (n x R, one column per row) and T J's rows into `tj` (R x n);
/// then h += rows_t tj (matrixmultiply's kernel).
fn add_joint_stiffness_stacked(model: &Model, kin: &Kinematics, sink: &Sink, h: &mut DMatrix<f64>) {
    // Dead forces only change the moment rows: 3-row products suffice.
    let row_count = |t: &Mat6| if t.fixed_rows::<3>(3).iter().any(|v| *v != 0.0) { 6 } else { 3 };
    let stacked: usize = sink.joint_t.iter().flatten().map(row_count).sum();
    let n = model.n_dof();
    let mut rows_t = DMatrix::<f64>::zeros(n, stacked);
    let mut tj = DMatrix::<f64>::zeros(stacked, n);
    let mut at = 0;
    for (j, t) in sink.joint_t.iter().enumerate() {
        let Some(t) = t else { continue };
        let js = model.joint_jacobian_cow(kin, j);
        let rows = row_count(t);
        for col in 0..n {
            let jcol = js.fixed_view::<6, 1>(0, col);
            if jcol == nalgebra::Vector6::zeros() {
                continue;
            }
            let y = t * jcol;
            for r in 0..rows {
                rows_t[(col, at + r)] = jcol[r];
                tj[(at + r, col)] = y[r];
            }
        }
        at += rows;
    }
    h.gemm(1.0, &rows_t, &tj, 1.0);
}

/// Interior points: the rows and columns of the segment they lie in.
fn add_interior_blocks(model: &Model, kin: &Kinematics, sink: &Sink, h: &mut DMatrix<f64>, columns: &JointColumns) {
    for (k, blocks) in sink.interior.iter().enumerate() {
        let Some(b) = blocks else { continue };
        let seg = &model.segments[k];
        let js = model.joint_jacobian(kin, k);
        let wts = [seg.w_left, seg.w_right];
        // Rows of the segment: frame change (sum s map^T B(W)) J_k and the
        // cross term sum B^T T J_k; its columns: J_k^T sum T B.
        let row_map = b.geometric - b.bt_t;
        let col_map = b.t_b.transpose();
        for (c0, nc) in columns.of(k) {
            scatter_rows(h, model, seg.dof, &wts, &row_map, columns_of(&js, c0, nc), c0, Scatter::SUBTRACT);
            for i in 0..nc {
                let y = col_map * js.fixed_view::<6, 1>(0, c0 + i);
                for (j, &c) in model.free.iter().enumerate() {
                    for (a, wa) in wts.iter().enumerate() {
                        h[(c0 + i, seg.dof[a] + j)] += wa * y[c];
                    }
                }
            }
        }
        add_segment_block(h, model, seg.dof, &wts, &(b.bt_t_b - b.dexp), 1.0);
    }
}

/// Columns `c0..c0 + nc` of a 6-row matrix, as [`scatter_rows`] takes them.
fn columns_of(js: &nalgebra::Matrix6xX<f64>, c0: usize, nc: usize) -> &[f64] {
    &js.as_slice()[6 * c0..6 * (c0 + nc)]
}

/// How [`scatter_rows`] adds a product: its sign, and whether each entry
/// is added at its mirror image across the diagonal too
/// ([`LoadStiffness::Mirrored`]).
#[derive(Clone, Copy, Debug)]
struct Scatter {
    sign: f64,
    mirrored: bool,
}

impl Scatter {
    const ADD: Scatter = Scatter { sign: 1.0, mirrored: false };
    const SUBTRACT: Scatter = Scatter { sign: -1.0, mirrored: false };
}

/// `h[dof[a] + j, c0 + i] += sign * w_a * (m J)[free_j, i]` for the
/// columns `J` of `jacobian` (6 rows each, column-major): a 6-row product
/// onto a segment's rows (its two nodal blocks, free components only),
/// column by column (each a fixed-size product); mirrored, onto the
/// segment's columns as well.
#[allow(clippy::too_many_arguments)]
fn scatter_rows(h: &mut DMatrix<f64>, model: &Model, dof: [usize; 2], wts: &[f64; 2], m: &Mat6, jacobian: &[f64], c0: usize, how: Scatter) {
    let nc = jacobian.len() / 6;
    let n = h.nrows();
    let data = h.as_mut_slice();
    // Cosserat rods (all six components free): each block of rows is y
    // itself, a contiguous add.
    let all_free = model.all_components_free();
    let scales = wts.map(|w| how.sign * w);
    for (col, j) in (c0..c0 + nc).zip(jacobian.chunks_exact(6)) {
        let y = m * nalgebra::Vector6::from_column_slice(j);
        for (a, &s) in scales.iter().enumerate() {
            if s == 0.0 {
                continue;
            }
            if all_free {
                let column = &mut data[col * n..(col + 1) * n];
                for (r, v) in column[dof[a]..dof[a] + 6].iter_mut().zip(y.iter()) {
                    *r += s * v;
                }
                if how.mirrored {
                    for (i, v) in y.iter().enumerate() {
                        data[(dof[a] + i) * n + col] += s * v;
                    }
                }
                continue;
            }
            for (i, &c) in model.free.iter().enumerate() {
                data[col * n + dof[a] + i] += s * y[c];
                if how.mirrored {
                    data[(dof[a] + i) * n + col] += s * y[c];
                }
            }
        }
    }
}

/// `h[dof[a] + j, dof[b] + jj] += sign * w_a w_b z[free_j, free_jj]`: a 6x6
/// block between a segment's own coordinates.
fn add_segment_block(h: &mut DMatrix<f64>, model: &Model, dof: [usize; 2], wts: &[f64; 2], z: &Mat6, sign: f64) {
    let all_free = model.all_components_free();
    for (a, wa) in wts.iter().enumerate() {
        for (b, wb) in wts.iter().enumerate() {
            let coefficient = sign * wa * wb;
            if coefficient == 0.0 {
                continue;
            }
            if all_free {
                // Cosserat rods: the block is z itself (a fixed-size add).
                let mut block = h.fixed_view_mut::<6, 6>(dof[a], dof[b]);
                block += z * coefficient;
                continue;
            }
            for (j, &c) in model.free.iter().enumerate() {
                for (jj, &cc) in model.free.iter().enumerate() {
                    h[(dof[a] + j, dof[b] + jj)] += coefficient * z[(c, cc)];
                }
            }
        }
    }
}

/// Sum of the energies of conservative terms; `None` if any term is not.
pub fn energy(model: &Model, q: &DVector<f64>, terms: &[&dyn Term]) -> Option<f64> {
    energy_with(model, q, &model.frames(q), terms)
}

/// [`energy`] on frames already computed.
pub fn energy_with(model: &Model, q: &DVector<f64>, frames: &Frames, terms: &[&dyn Term]) -> Option<f64> {
    let state = State { model, q, frames, kinematics: None };
    terms.iter().map(|t| t.energy(&state)).sum()
}

// ---------------------------------------------------------------------------
// The rod's own terms.

/// Elastic energy `1/2 q^T K q` (strain coordinates), plus, for a
/// hyperelastic body, its fibres' large-strain correction (see
/// [`crate::fibre`]; zero to second order at rest).
pub struct Elastic;

impl Term for Elastic {
    fn name(&self) -> &str {
        "elastic"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        let ns = s.model.n_strain_dof();
        let q = s.q.rows(0, ns);
        let fibres = s.model.fibres.as_ref().map_or(0.0, |f| f.modulus_pa * f.correction_unit(s.q, false).0);
        Some(0.5 * q.dot(&s.model.stiffness_times(&s.q.as_slice()[..ns])) + fibres)
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let ns = s.model.n_strain_dof();
        let mut kq = s.model.stiffness_times(&s.q.as_slice()[..ns]);
        let with_tangent = sink.wants_tangent();
        let correction = s.model.fibres.as_ref().map(|f| (f.modulus_pa, f.correction_unit(s.q, with_tangent)));
        if let Some((e, (_, force, _))) = &correction {
            kq.axpy(*e, force, 1.0);
        }
        sink.residual_mut().rows_mut(0, ns).add_assign(&kq);
        if let Some(h) = sink.tangent_mut() {
            s.model.add_stiffness(h, 1.0);
            if let Some((e, (_, _, Some(t)))) = &correction {
                h.view_mut((0, 0), (ns, ns)).add_assign(t * *e);
            }
        }
    }
}

/// Gravity `rho A g`, lumped at the joints (mass and first moment of every
/// sub-segment kept), times `scale`.
pub struct Gravity {
    pub scale: f64,
}

impl Term for Gravity {
    fn name(&self) -> &str {
        "gravity"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        BodyForce { acceleration_m_s2: s.model.rod.gravity_m_s2 * self.scale }.energy(s)
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        BodyForce { acceleration_m_s2: s.model.rod.gravity_m_s2 * self.scale }.contribute(s, sink)
    }
}

/// A uniform field of acceleration `a` acting on the rod's mass like
/// gravity (lumped at the joints): force `m_j a` at every joint. Pushes a rod
/// with a total force `m a` without deforming it.
pub struct BodyForce {
    pub acceleration_m_s2: Vec3,
}

impl Term for BodyForce {
    fn name(&self) -> &str {
        "body force"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        Some(-s.model.joint_mass_kg.iter().zip(&s.frames.joints).map(|(m, f)| m * self.acceleration_m_s2.dot(&f.pos)).sum::<f64>())
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let a = self.acceleration_m_s2;
        if a.norm_squared() == 0.0 {
            return;
        }
        for (j, m) in s.model.joint_mass_kg.iter().enumerate() {
            if *m != 0.0 {
                sink.point_force(Attach::Joint(j), &s.frames.joints[j].pos, &(a * *m), &Vec3::zeros(), None);
            }
        }
    }
}

/// A force and moment at a point of the rod: dead (fixed in the world: a
/// hung mass) or follower (fixed in the section's frame, turning with it: a
/// thruster, a tendon pulling along the tip's axis).
#[derive(Clone, Debug, PartialEq)]
pub struct PointLoad {
    /// Arc length of the joint it acts on \[m\].
    pub x_m: f64,
    /// Offset of the point of application from the centre line, body frame \[m\].
    pub offset_body_m: Vec3,
    /// Force \[N\]: world frame, or the section's frame when `follower`.
    pub force_n: Vec3,
    /// Moment \[N m\], in the same frame as the force (virtual work: not
    /// conservative).
    pub moment_nm: Vec3,
    /// The force and moment turn with the section (not conservative).
    pub follower: bool,
}

/// Point loads resolved to joints, times `scale`.
pub struct PointLoads<'l> {
    pub loads: &'l [PointLoad],
    pub joints: Vec<usize>,
    pub scale: f64,
}

impl Term for PointLoads<'_> {
    fn name(&self) -> &str {
        "point loads"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        let mut e = 0.0;
        for (pl, &j) in self.loads.iter().zip(&self.joints) {
            if pl.moment_nm != Vec3::zeros() || pl.follower {
                return None;
            }
            e -= self.scale * pl.force_n.dot(&s.frames.joints[j].transform_point(&pl.offset_body_m));
        }
        Some(e)
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        for (pl, &j) in self.loads.iter().zip(&self.joints) {
            let g = &s.frames.joints[j];
            let p = g.transform_point(&pl.offset_body_m);
            if !pl.follower {
                sink.point_force(Attach::Joint(j), &p, &(pl.force_n * self.scale), &(pl.moment_nm * self.scale), None);
                continue;
            }
            // Turning with the section: under a spatial twist [w; v] the
            // force changes by w x f and the moment by w x m, so besides
            // the dead force's tangent, -dW/dw = [p~ f~ + m~; f~].
            let (f, m) = (g.rot * pl.force_n * self.scale, g.rot * pl.moment_nm * self.scale);
            let w = lie::stack(&(p.cross(&f) + m), &f);
            let t = sink.wants_tangent().then(|| {
                let mut t = point_force_tangent(&p, &f, None);
                let mut top = t.fixed_view_mut::<3, 3>(0, 0);
                top += skew(&p) * skew(&f) + skew(&m);
                let mut bottom = t.fixed_view_mut::<3, 3>(3, 0);
                bottom += skew(&f);
                t
            });
            sink.wrench(Attach::Joint(j), w, t);
        }
    }
}

/// Linear springs from material points to fixed targets (the observer's
/// weighted markers): force `-k (p - target)` at joint `j`, body offset `d`.
pub struct Springs {
    /// (joint, body offset, target, stiffness \[N/m\]): a target ray
    /// pulls only across itself (stiffness `k (I - d d^T)`).
    pub springs: Vec<(usize, Vec3, crate::Sighting, f64)>,
}

impl Term for Springs {
    fn name(&self) -> &str {
        "springs"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        Some(self.springs.iter().map(|(j, d, t, k)| 0.5 * k * t.miss(&s.frames.joints[*j].transform_point(d)).norm_squared()).sum())
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        for (j, d, t, k) in &self.springs {
            let p = s.frames.joints[*j].transform_point(d);
            let stiff = t.projector() * *k;
            sink.point_force(Attach::Joint(*j), &p, &(-t.miss(&p) * *k), &Vec3::zeros(), Some(&stiff));
        }
    }
}

/// Cables pulled with tensions `T_c` (times `scale`): energy
/// `sum T_c l_c(q)`, `l_c = sum_k h_k |Q_k + K_k x d + d'|` (strains only).
/// A cable with friction (`friction_mu`) sliding through its channel the
/// way `slide` says has the tension `T_c exp(-+mu Theta_k)` on span `k`,
/// `Theta_k` the angle it turned through from the base to the span's
/// middle (the capstan law): no energy then.
pub struct Cables<'t> {
    pub tensions_n: &'t [f64],
    pub scale: f64,
    /// Per cable (empty or short: pulled in).
    pub slide: &'t [crate::statics::CableSlide],
    /// Per cable, the base tension of its last reversal (empty or short:
    /// none; see [`crate::statics::Loads::cable_reversal_n`]).
    pub reversal_n: &'t [Option<f64>],
    /// Per cable, the reversals before the last one, oldest first (empty
    /// or short: none): a history of small back-and-forth pulls (a load
    /// cell's noise) whose profiles friction still holds. The slide
    /// alternates between them (each run clamps the profile before it).
    pub earlier_reversals_n: &'t [Vec<f64>],
}

/// A rubbing cable's tension along its run by the capstan law: `t_n
/// exp(signed_mu theta)` at the turn `theta` from the base while it slides
/// all along. After a reversal from base tension `T_r` the profile it
/// stopped with, `T_r exp(-signed_mu theta)`, stays where friction holds
/// it: let out, the tension is the smaller of the two; pulled in, the
/// larger (they meet where the sliding part ends).
///
/// Reversals before the last (`earlier`, oldest first) nest alike: the
/// profile left by each run of the slide is the one before it, clamped by
/// the run's own (`min` letting out, `max` pulling in). A pull that moves
/// back and forth by less than the friction's band then changes the
/// tension near the base only, as friction does, instead of swapping the
/// whole profile at every turn.
#[derive(Clone, Copy, Debug)]
struct Capstan<'a> {
    t_n: f64,
    signed_mu: f64,
    reversal_n: Option<f64>,
    /// The reversals before the last, unscaled: they count times `scale`
    /// (the load's ramp), as `t_n` and `reversal_n` already do.
    earlier: &'a [f64],
    scale: f64,
}

impl Capstan<'_> {
    /// The tension at turn `theta_rad` and its rate `dT/dtheta`.
    fn at(&self, theta_rad: f64) -> (f64, f64) {
        if self.signed_mu == 0.0 {
            return (self.t_n, 0.0);
        }
        let sliding = self.t_n * (self.signed_mu * theta_rad).exp();
        let Some(t_r) = self.reversal_n else { return (sliding, sliding * self.signed_mu) };
        // The runs' profiles, oldest first, their slide alternating and
        // ending with the current one (`signed_mu`); no allocation: this
        // runs for every span at every assembly.
        let mut runs = self.earlier.iter().map(|t| t * self.scale).chain([t_r]);
        let mut sign = if self.earlier.len().is_multiple_of(2) { -1.0 } else { 1.0 };
        let oldest = runs.next().unwrap_or(t_r);
        let mut profile = (oldest * (sign * self.signed_mu * theta_rad).exp(), sign * self.signed_mu);
        for t in runs.chain([self.t_n]) {
            sign = -sign;
            let mu = sign * self.signed_mu;
            let run = t * (mu * theta_rad).exp();
            // Letting out (mu > 0) the smaller tension holds, pulling in the larger.
            let takes = if mu > 0.0 { run <= profile.0 } else { run >= profile.0 };
            if takes {
                profile = (run, mu);
            }
        }
        (profile.0, profile.0 * profile.1)
    }
}

/// Cable length `l_c` for every cable: along its path, or straight between
/// its guide disks' holes.
pub fn cable_lengths_m(model: &Model, q: &DVector<f64>) -> Vec<f64> {
    let frames = model.cable_guides.iter().any(|g| !g.is_empty()).then(|| model.frames(q));
    model
        .cable_spans
        .iter()
        .zip(&model.cable_guides)
        .map(|(spans, guides)| {
            let along: f64 = spans
                .iter()
                .enumerate()
                .filter_map(|(k, s)| s.map(|s| (k, s)))
                .map(|(k, s)| model.segments[k].h_m * cable_direction(&model.segment_strain(k, q), &s).1)
                .sum();
            along + frames.as_ref().map_or(0.0, |f| pieces_between(&hole_positions(f, guides)).iter().map(|p| p.1).sum())
        })
        .collect()
}

/// A guided cable's holes in the world.
fn hole_positions(frames: &Frames, guides: &[CableHole]) -> Vec<Vec3> {
    guides.iter().map(|h| frames.joints[h.joint].transform_point(&h.offset_m)).collect()
}

/// The straight pieces between consecutive holes: (unit direction from
/// one hole to the next, length \[m\]).
fn pieces_between(holes: &[Vec3]) -> Vec<(Vec3, f64)> {
    holes
        .windows(2)
        .map(|w| {
            let d = w[1] - w[0];
            let len = d.norm();
            (d / len, len)
        })
        .collect()
}

impl Term for Cables<'_> {
    fn name(&self) -> &str {
        "cables"
    }

    fn energy(&self, s: &State) -> Option<f64> {
        // Friction, or disks that drop part of the pull: no potential.
        let rubs =
            s.model.rod.cables.iter().zip(self.tensions_n).any(|(c, t)| (c.friction_mu > 0.0 || c.guide_reaction != crate::GuideReaction::Full) && *t != 0.0);
        (!rubs).then(|| cable_lengths_m(s.model, s.q).iter().zip(self.tensions_n).map(|(l, t)| l * t * self.scale).sum())
    }

    fn contribute(&self, s: &State, sink: &mut Sink) {
        let model = s.model;
        for (c, spans) in model.cable_spans.iter().enumerate() {
            let t_n = self.tensions_n.get(c).copied().unwrap_or(0.0) * self.scale;
            if t_n == 0.0 {
                continue;
            }
            let signed_mu = model.rod.cables[c].friction_mu * self.slide.get(c).copied().unwrap_or_default().capstan_sign();
            let reversal_n = self.reversal_n.get(c).copied().flatten().map(|t| t * self.scale);
            let earlier = self.earlier_reversals_n.get(c).map_or(&[][..], Vec::as_slice);
            let capstan = Capstan { t_n, signed_mu, reversal_n, earlier, scale: self.scale };
            if !model.cable_guides[c].is_empty() {
                guided_cable(s, sink, &model.cable_guides[c], &capstan);
                continue;
            }
            cable_along_path(s, sink, spans, &capstan);
        }
    }
}

/// The cable's unit direction in span `k`'s body frame and its length
/// rate `|v|`, `v = Q + K x d + d'`.
fn cable_direction(xi: &Vec6, span: &crate::model::CableSpan) -> (Vec3, f64) {
    let v = lie::linear(xi) + lie::angular(xi).cross(&span.offset_m) + span.offset_slope;
    let nv = v.norm();
    (v / nv, nv)
}

/// How fast a cable turns along span `k` \[rad/m\], `|K x t|` (its body
/// direction is constant over the span, the frame turns at `K`), and the
/// rate's gradient in the span's strain `[K; Q]`. Smoothed at zero (a
/// straight cable), where the rate has a kink.
fn turn_rate(xi: &Vec6, span: &crate::model::CableSpan) -> (f64, Vec6) {
    const SMOOTH_RAD_M: f64 = 1e-9;
    let (t, nv) = cable_direction(xi, span);
    let k = lie::angular(xi);
    let a = k.cross(&t);
    let rate = (a.norm_squared() + SMOOTH_RAD_M * SMOOTH_RAD_M).sqrt();
    // dt/dv = (I - t t^T) / |v|; dv/dK = -d~, dv/dQ = I.
    let dt_dv = (Matrix3::identity() - t * t.transpose()) / nv;
    let da_dq = skew(&k) * dt_dv;
    let da_dk = -skew(&t) - da_dq * skew(&span.offset_m);
    let g = a / rate;
    (rate - SMOOTH_RAD_M, stack(&(da_dk.transpose() * g), &(da_dq.transpose() * g)))
}

/// A span's strain gradient (over the six components) as a gradient in
/// the coordinates, through the segment's basis weights.
fn to_coordinates(model: &Model, k: usize, g: &Vec6, out: &mut DVector<f64>, factor: f64) {
    let seg = &model.segments[k];
    for (a, wa) in [seg.w_left, seg.w_right].iter().enumerate() {
        for (j, &cc) in model.free.iter().enumerate() {
            out[seg.dof[a] + j] += factor * wa * g[cc];
        }
    }
}

/// A cable along its path (its spans), generalised force `sum_k T_k
/// dl_k/dq`, tangent the spans' own `T_k d2l_k/dq2` (B = [-d~ | I]:
/// `T h B^T (I - t t^T) B / |v|`). Without friction every span carries
/// `t_n` (the energy `t_n l`). Rubbing on its channel (capstan law), span
/// `k` carries the [`Capstan`] tension at `Theta_k`, the turn from the
/// base to the span's middle, and the tangent adds `dl_k/dq dT_k/dq^T`
/// (not symmetric: friction is not conservative).
fn cable_along_path(s: &State, sink: &mut Sink, spans: &[Option<crate::model::CableSpan>], capstan: &Capstan) {
    let model = s.model;
    let rubs = capstan.signed_mu != 0.0;
    // The turn so far, and its gradient in q (for a rubbing cable's tangent).
    let (mut turned, mut turned_grad) = (0.0, (rubs && sink.wants_tangent()).then(|| DVector::zeros(model.n_dof())));
    for (k, span) in spans.iter().enumerate() {
        let Some(span) = span else { continue };
        let seg = &model.segments[k];
        // The segment's strain, from the twist the frames hold.
        let xi = s.frames.psi[k] / seg.h_m;
        let (t, nv) = cable_direction(&xi, span);
        let (rate, rate_grad) = if rubs { turn_rate(&xi, span) } else { (0.0, Vec6::zeros()) };
        let (tension, tension_rate) = capstan.at(turned + 0.5 * seg.h_m * rate);
        let d = span.offset_m;
        let length_grad = stack(&d.cross(&t), &t) * seg.h_m;
        let wts = [seg.w_left, seg.w_right];
        {
            let r = sink.residual_mut();
            for (a, wa) in wts.iter().enumerate() {
                for (j, &cc) in model.free.iter().enumerate() {
                    r[seg.dof[a] + j] += wa * tension * length_grad[cc];
                }
            }
        }
        turned += seg.h_m * rate;
        let Some(h) = sink.tangent_mut() else { continue };
        let b = point_map(&d);
        let p = (Matrix3::identity() - t * t.transpose()) / nv;
        add_segment_block(h, model, seg.dof, &wts, &(b.transpose() * p * b * (tension * seg.h_m)), 1.0);
        if let Some(turned_grad) = turned_grad.as_mut() {
            // dT_k/dq = dT/dTheta (dTheta_before/dq + h/2 drate/dq).
            let mut d_tension = turned_grad.clone();
            to_coordinates(model, k, &rate_grad, &mut d_tension, 0.5 * seg.h_m);
            let mut d_length = DVector::zeros(model.n_dof());
            to_coordinates(model, k, &length_grad, &mut d_length, 1.0);
            h.ger(tension_rate, &d_length, &d_tension, 1.0);
            to_coordinates(model, k, &rate_grad, turned_grad, seg.h_m);
        }
    }
}

/// A cable with tension `t_n` straight between its holes (energy
/// `t_n sum |p_(i+1) - p_i|` without friction): each hole is pulled towards
/// its neighbours, `F_i = T_i u_i - T_(i-1) u_(i-1)`, a force at a point of
/// its disk's frame; the pieces' stiffness `T_i (I - u u^T) / len` couples
/// the holes, through their point Jacobians. Rubbing (`signed_mu`, the
/// capstan law at each disk), piece `i` carries the [`Capstan`] tension at
/// `sum_(j <= i) theta_j`, `theta_j` the cable's turn at disk `j`, and the
/// tangent adds `dl_i/dq dT_i/dq^T`. A disk that takes only the pull's
/// part in its plane ([`CableHole::disk_plane`]) gets `(I - n n^T) F_i`,
/// `n` its normal, and the tangent the change of that projection.
fn guided_cable(s: &State, sink: &mut Sink, guides: &[CableHole], capstan: &Capstan) {
    let holes = hole_positions(s.frames, guides);
    let pieces = pieces_between(&holes);
    // Each piece's tension: the capstan factor of the disks before it.
    let turns: Vec<f64> = (0..pieces.len()).map(|i| if i == 0 { 0.0 } else { disk_turn(&pieces[i - 1].0, &pieces[i].0).0 }).collect();
    let mut turned = 0.0;
    let (tensions, tension_rates): (Vec<f64>, Vec<f64>) = turns
        .iter()
        .map(|turn| {
            turned += turn;
            capstan.at(turned)
        })
        .unzip();
    let pulls: Vec<Vec3> = (0..holes.len())
        .map(|i| {
            let towards_tip = pieces.get(i).map_or(Vec3::zeros(), |q| q.0 * tensions[i]);
            let towards_base = if i > 0 { pieces[i - 1].0 * tensions[i - 1] } else { Vec3::zeros() };
            towards_tip - towards_base
        })
        .collect();
    for ((h, p), pull) in guides.iter().zip(&holes).zip(&pulls) {
        let f = if h.disk_plane {
            let n = disk_normal(s.frames, h);
            pull - n * n.dot(pull)
        } else {
            *pull
        };
        sink.point_force(Attach::Joint(h.joint), p, &f, &Vec3::zeros(), None);
    }
    let (Some(kin), true) = (s.kinematics, sink.wants_tangent()) else { return };
    let columns = JointColumns::new(s.model);
    let jacobians: Vec<nalgebra::Matrix3xX<f64>> = guides.iter().zip(&holes).map(|(h, p)| hole_jacobian(s.model, kin, &columns, h.joint, p)).collect();
    // Per piece: D = J_(i+1) - J_i, and du/dq = (I - u u^T) / len D.
    let differences: Vec<nalgebra::Matrix3xX<f64>> = (0..pieces.len()).map(|i| &jacobians[i + 1] - &jacobians[i]).collect();
    let projectors: Vec<Mat3> = pieces.iter().map(|(u, len)| (Matrix3::identity() - u * u.transpose()) / *len).collect();
    let n = s.model.n_dof();
    let any_disk_plane = guides.iter().any(|h| h.disk_plane);
    let tangent = sink.tangent_mut().expect("wants a tangent");
    let mut turned_grad = DVector::zeros(n);
    // dT_i/dq per piece, for the disks that project the pull (rubbing only).
    let mut tension_grads: Vec<Option<DVector<f64>>> = vec![];
    for (i, (u, _)) in pieces.iter().enumerate() {
        let d = &differences[i];
        let reach = columns.reach[guides[i].joint].max(columns.reach[guides[i + 1].joint]);
        add_piece_stiffness(tangent, d, &pieces[i], tensions[i], reach, columns.base);
        if capstan.signed_mu == 0.0 {
            tension_grads.push(None);
            continue;
        }
        if i > 0 {
            let (_, by_in, by_out) = disk_turn(&pieces[i - 1].0, u);
            turned_grad += differences[i - 1].transpose() * (projectors[i - 1] * by_in);
            turned_grad += d.transpose() * (projectors[i] * by_out);
        }
        let length_grad = d.transpose() * u;
        tangent.ger(tension_rates[i], &length_grad, &turned_grad, 1.0);
        tension_grads.push(any_disk_plane.then(|| &turned_grad * tension_rates[i]));
    }
    if any_disk_plane {
        let guided = GuidedPieces { pieces: &pieces, tensions: &tensions, tension_grads: &tension_grads, differences: &differences, projectors: &projectors };
        disk_plane_tangent(tangent, s, kin, guides, &jacobians, &pulls, &guided);
    }
}

/// [`crate::model::point_jacobian`] of a hole at `p` on joint `joint`'s
/// frame, `J_v - p~ J_w`, on the columns the joint reaches (and the
/// base's) only: the rest are zero. Each entry sums as nalgebra's product
/// does.
fn hole_jacobian(model: &Model, kin: &Kinematics, columns: &JointColumns, joint: usize, p: &Vec3) -> nalgebra::Matrix3xX<f64> {
    let js = model.joint_jacobian_cow(kin, joint);
    let mut out = nalgebra::Matrix3xX::zeros(model.n_dof());
    for (c0, nc) in columns.of(joint) {
        for c in c0..c0 + nc {
            let (w, v) = (js.fixed_view::<3, 1>(0, c), js.fixed_view::<3, 1>(3, c));
            out[(0, c)] = v[0] - (-p.z * w[1] + p.y * w[2]);
            out[(1, c)] = v[1] - (p.z * w[0] + -p.x * w[2]);
            out[(2, c)] = v[2] - (-p.y * w[0] + p.x * w[1]);
        }
    }
    out
}

/// A piece's stiffness `h += (T / len) D^T (I - u u^T) D` for a 3-row `D`
/// whose columns are zero past `reach` but for the floating base's: the
/// projector is `a a^T + b b^T` for unit `a`, `b` across `u`, so two rank-1
/// updates over those columns only (a hole near the base touches few
/// coordinates; the dense product cost a tendon robot a quarter of its
/// solve). `D^T a` and `D^T b` are contiguous, so each column's update
/// is a vector loop (the 3x3 sandwich per entry took 5.5 % of a solve).
fn add_piece_stiffness(h: &mut DMatrix<f64>, d: &nalgebra::Matrix3xX<f64>, piece: &(Vec3, f64), tension_n: f64, reach: usize, base: Option<(usize, usize)>) {
    let (u, len_m) = piece;
    let (a, b) = across(u);
    let n = h.nrows();
    let ranges: Vec<std::ops::Range<usize>> = std::iter::once(0..reach).chain(base.map(|(o, m)| o..o + m)).collect();
    let mut x = vec![0.0; n];
    let mut y = vec![0.0; n];
    for col in ranges.iter().flat_map(|r| r.clone()) {
        let dc = d.fixed_view::<3, 1>(0, col);
        x[col] = a.dot(&dc);
        y[col] = b.dot(&dc);
    }
    let coefficient = tension_n / len_m;
    let data = h.as_mut_slice();
    for col in ranges.iter().flat_map(|r| r.clone()) {
        let (xc, yc) = (coefficient * x[col], coefficient * y[col]);
        if xc == 0.0 && yc == 0.0 {
            continue;
        }
        let column = &mut data[col * n..(col + 1) * n];
        for rows in &ranges {
            for ((entry, xr), yr) in column[rows.clone()].iter_mut().zip(&x[rows.clone()]).zip(&y[rows.clone()]) {
                *entry += xr * xc + yr * yc;
            }
        }
    }
}

/// Two unit vectors across unit `u`, completing a right-handed basis
/// (Duff et al., "Building an orthonormal basis, revisited", 2017: no
/// branch on a near-zero component).
fn across(u: &Vec3) -> (Vec3, Vec3) {
    let sign = 1.0f64.copysign(u.z);
    let k = -1.0 / (sign + u.z);
    let m = u.x * u.y * k;
    (Vec3::new(1.0 + sign * u.x * u.x * k, sign * m, -sign * u.x), Vec3::new(m, sign + u.y * u.y * k, -u.y))
}

/// A guided cable's pieces between holes and what the tangent needs of
/// them: unit directions and lengths, tensions and their gradients (when
/// rubbing), `D_i = J_(i+1) - J_i` and `(I - u u^T) / len`.
struct GuidedPieces<'a> {
    pieces: &'a [(Vec3, f64)],
    tensions: &'a [f64],
    tension_grads: &'a [Option<DVector<f64>>],
    differences: &'a [nalgebra::Matrix3xX<f64>],
    projectors: &'a [Mat3],
}

/// A guide disk's normal in the world: its joint frame's axis (x).
fn disk_normal(frames: &Frames, h: &CableHole) -> Vec3 {
    frames.joints[h.joint].rot * Vec3::x()
}

/// The tangent's change where a disk takes only the part of the pull
/// `F_i` in its plane: the dropped force `C = -n (n . F)` at the hole
/// adds `-J_i^T dC/dq = J_i^T n (n^T dF/dq) + J_i^T ((n . F) I + n F^T)
/// dn/dq`, with `dn/dq = -n~ J_omega` (the disk turns with its joint).
fn disk_plane_tangent(
    tangent: &mut DMatrix<f64>,
    s: &State,
    kin: &crate::Kinematics,
    guides: &[CableHole],
    jacobians: &[nalgebra::Matrix3xX<f64>],
    pulls: &[Vec3],
    g: &GuidedPieces,
) {
    let (model, frames) = (s.model, s.frames);
    for (i, h) in guides.iter().enumerate().filter(|(_, h)| h.disk_plane) {
        let nrm = disk_normal(frames, h);
        // n^T dF_i/dq, F_i = T_i u_i - T_(i-1) u_(i-1).
        let mut normal_rate = g.differences[i].transpose() * (g.projectors[i] * nrm) * g.tensions[i];
        normal_rate -= g.differences[i - 1].transpose() * (g.projectors[i - 1] * nrm) * g.tensions[i - 1];
        if let (Some(after), Some(before)) = (&g.tension_grads[i], &g.tension_grads[i - 1]) {
            normal_rate.axpy(nrm.dot(&g.pieces[i].0), after, 1.0);
            normal_rate.axpy(-nrm.dot(&g.pieces[i - 1].0), before, 1.0);
        }
        let jt_n = jacobians[i].transpose() * nrm;
        tangent.ger(1.0, &jt_n, &normal_rate, 1.0);
        let f = pulls[i];
        let m = Matrix3::identity() * nrm.dot(&f) + nrm * f.transpose();
        let joint_jacobian = model.joint_jacobian_cow(kin, h.joint);
        let jw = joint_jacobian.fixed_rows::<3>(0);
        *tangent -= jacobians[i].transpose() * (m * skew(&nrm) * jw);
    }
}

/// The angle a cable turns through at a disk, from the unit direction `a`
/// of the piece before it to `b` of the piece after, and its gradients in
/// `a` and `b`: `atan2(|a x b|, a . b)`, smoothed at zero (a straight
/// pass), where the angle has a kink.
fn disk_turn(a: &Vec3, b: &Vec3) -> (f64, Vec3, Vec3) {
    const SMOOTH_RAD: f64 = 1e-9;
    let c = a.cross(b);
    let y = (c.norm_squared() + SMOOTH_RAD * SMOOTH_RAD).sqrt();
    let x = a.dot(b);
    let r2 = x * x + y * y;
    // d(atan2(y, x)) = (x dy - y dx) / (x^2 + y^2); dy = (c / y) . dc.
    let cy = c / y;
    let by_a = (-skew(b).transpose() * cy * x - b * y) / r2;
    let by_b = (skew(a).transpose() * cy * x - a * y) / r2;
    (y.atan2(x) - SMOOTH_RAD, by_a, by_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece's stiffness by two rank-1 updates across the piece is the
    /// 3x3 sandwich `(T / len) D^T (I - u u^T) D` on the columns it reaches
    /// (and a floating base's), to round-off, whatever way the piece
    /// points (along -z, where a basis built by one cross product fails);
    /// the columns beyond stay untouched.
    #[test]
    fn a_pieces_stiffness_is_the_projected_sandwich() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(3);
        let (n, reach, base) = (20, 9, Some((14, 6)));
        for u in [Vec3::new(0.3, -0.4, 0.5), Vec3::z(), -Vec3::z(), Vec3::new(1e-9, -2e-9, -1.0), Vec3::x()] {
            let u = u.normalize();
            let (a, b) = across(&u);
            for (v, w) in [(a, b), (a, u), (b, u)] {
                assert!(v.dot(&w).abs() < 1e-15, "{u:?}: {v:?} . {w:?}");
            }
            assert!((a.norm() - 1.0).abs() < 1e-15 && (b.norm() - 1.0).abs() < 1e-15 && (a.cross(&b) - u).norm() < 1e-15, "{u:?}");
            let mut d = nalgebra::Matrix3xX::<f64>::zeros(n);
            for c in (0..reach).chain(14..20) {
                for r in 0..3 {
                    d[(r, c)] = rng.gen_range(-1.0..1.0);
                }
            }
            let (tension_n, len_m) = (2.5, 0.02);
            let mut h = DMatrix::from_fn(n, n, |r, c| (r * n + c) as f64);
            let expected = &h + d.transpose() * (Matrix3::identity() - u * u.transpose()) * &d * (tension_n / len_m);
            add_piece_stiffness(&mut h, &d, &(u, len_m), tension_n, reach, base);
            let error = (&h - &expected).amax();
            assert!(error < 1e-9 * expected.amax(), "{u:?}: {error:e}");
            assert_eq!(h.view((9, 0), (5, n)), expected.view((9, 0), (5, n)), "rows between the reach and the base untouched");
        }
    }

    /// A rod's tangent with the loads' stiffness mirrored from the pairs of
    /// segments towards the base is the one both halves of the pass (or
    /// the stacked product) build, to round-off: a short rod (every joint
    /// kept) and a long one (sections' rows) under gravity and dead
    /// forces, one offset from the centre line; a rod of disks threaded by
    /// two cables with a tip force. A dead moment or a follower force
    /// (not the gradient of a potential) keeps the whole pass, bit for bit.
    #[test]
    fn a_tangent_mirrored_from_one_half_is_the_whole_passes() {
        use crate::statics::{Loads, StaticTerms};
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let material = crate::Material::from_poisson(5e6, 0.45, 1100.0);
        let offset_load = |x_m: f64| PointLoad {
            x_m,
            offset_body_m: Vec3::new(0.0, 0.003, -0.002),
            force_n: Vec3::new(0.02, -0.05, 0.01),
            moment_nm: Vec3::zeros(),
            follower: false,
        };
        let rod_of = |length_m: f64, sections: usize| {
            let mut rod = crate::Rod::uniform_cylinder(length_m, 0.004, material, sections);
            rod.subsegments_per_section = 4;
            rod
        };
        let mut disks = rod_of(0.3, 10);
        disks.gravity_m_s2 = Vec3::zeros();
        disks.cables = (0..2)
            .map(|c| crate::Cable {
                path_radius: Some(crate::PathRadius { points: vec![(0.0, 0.006)] }),
                guides_m: (1..=5).map(|d| 0.03 * (d + 5 * c) as f64).collect(),
                ..crate::Cable::new(format!("t{c}"), 1.0 + 2.0 * c as f64, 0.15 + 0.15 * c as f64)
            })
            .collect();
        let gravity_and_forces = Loads { point_loads: vec![offset_load(0.15)], ..Loads::gravity().with_tip(0.3, Vec3::new(0.0, 0.01, -0.02), Vec3::zeros()) };
        let pulled = Loads::none().with_tensions(&[0.8, 0.5]).with_tip(0.3, Vec3::new(0.0, 0.05, 0.02), Vec3::zeros());
        let cases = [(rod_of(0.3, 3), gravity_and_forces.clone()), (rod_of(0.3, 16), gravity_and_forces.clone()), (disks, pulled)];
        let mut rng = StdRng::seed_from_u64(7);
        for (case, (rod, loads)) in cases.iter().enumerate() {
            let model = Model::new(rod, &loads.points_m());
            let q = DVector::from_fn(model.n_dof(), |i, _| rng.gen_range(-0.5..0.5) * if i % 6 < 3 { 10.0 } else { 0.05 });
            let kin = model.kinematics(&q);
            let terms = StaticTerms::new(&model, loads, 1.0).unwrap();
            let tangent = |mirror: bool| {
                let (a, mode) = assemble_terms(&model, &q, &kin.frames, Some(&kin), &terms.all(), true, mirror);
                (a.tangent.unwrap(), mode.unwrap())
            };
            let ((mirrored, mode), (whole, whole_mode)) = (tangent(true), tangent(false));
            assert_eq!(mode, LoadStiffness::Mirrored, "case {case}");
            assert_ne!(whole_mode, LoadStiffness::Mirrored);
            let error = (&mirrored - &whole).amax() / whole.amax();
            assert!(error < 1e-14, "case {case} ({} coordinates): {error:e}", model.n_dof());
            // The wrench part is the potential's Hessian: symmetric.
            let asymmetry = (&mirrored - mirrored.transpose()).amax() / mirrored.amax();
            assert!(asymmetry < 1e-14, "case {case}: {asymmetry:e}");
        }
        let (rod, loads) = &cases[0];
        let mut moment = loads.clone();
        moment.point_loads[0].moment_nm = Vec3::new(0.001, 0.0, -0.002);
        let mut follower = loads.clone();
        follower.point_loads[0].follower = true;
        for loads in [moment, follower] {
            let model = Model::new(rod, &loads.points_m());
            let q = DVector::from_fn(model.n_dof(), |i, _| 0.3 * ((i * 7 % 11) as f64 - 5.0) * if i % 6 < 3 { 1.0 } else { 0.01 });
            let kin = model.kinematics(&q);
            let terms = StaticTerms::new(&model, &loads, 1.0).unwrap();
            let (a, mode) = assemble_terms(&model, &q, &kin.frames, Some(&kin), &terms.all(), true, true);
            let (b, _) = assemble_terms(&model, &q, &kin.frames, Some(&kin), &terms.all(), true, false);
            assert_ne!(mode, Some(LoadStiffness::Mirrored));
            assert_eq!(a.tangent, b.tangent);
        }
    }

    /// `T = -dW/deta` of a spring-like force at a moving point, by central
    /// differences of the wrench under small spatial twists.
    #[test]
    fn point_force_tangent_is_minus_dw_deta() {
        let p = Vec3::new(0.1, -0.2, 0.3);
        let f = Vec3::new(1.0, 2.0, -0.5);
        let k = Mat3::new(2.0, 0.1, 0.0, 0.1, 3.0, 0.2, 0.0, 0.2, 1.0);
        let t = point_force_tangent(&p, &f, Some(&k));
        let w_at = |eta: &Vec6| {
            let pn = lie::exp(eta).transform_point(&p);
            let fnew = f - k * (pn - p);
            stack(&pn.cross(&fnew), &fnew)
        };
        let e = 1e-7;
        for c in 0..6 {
            let mut eta = Vec6::zeros();
            eta[c] = e;
            let fd = (w_at(&eta) - w_at(&(-eta))) / (2.0 * e);
            let col = -t.column(c);
            assert!((fd - col).norm() < 1e-6, "column {c}: {fd} vs {col}");
        }
    }
}
