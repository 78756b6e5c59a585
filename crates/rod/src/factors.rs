//! Factorisations of a tangent for Newton and Broyden steps (statics, the
//! observer, the fits' warm starts): a dense LU, and for long rods a
//! hierarchical one whose cost grows as n^2 rather than n^3.
//!
//! Why a rod's tangent allows the second: coordinates on either side of a
//! cut through the rod meet only through the rigid motion of everything
//! beyond the cut and the wrench transmitted across it, so each
//! off-diagonal block of the tangent has rank 8 whatever its size (checked
//! by SVD on a uniform rod of 198 and 390 coordinates and the tendon robot,
//! at every cut: 8 singular values above 1e-6 of the largest entry, the
//! ninth below 1e-17). Splitting the coordinates in halves recursively,
//! each diagonal block is factored the same way, the off-diagonal ones are
//! kept as products of two thin matrices, and Woodbury's identity joins
//! the halves (Ambikasaran and Darve's HODLR factorisation, 2013).

use nalgebra::{DMatrix, DVector, DVectorViewMut};
use std::sync::OnceLock;

/// The factorisation of a square tangent, with solves for vectors and
/// columns. Dense LU below [`HIERARCHICAL_FROM`] coordinates; from there
/// hierarchical, when every off-diagonal block it splits off is of low
/// rank (else dense). A hierarchical solve is refined against the tangent
/// it keeps until its backward error is that of a dense LU (1e-13 of
/// `|H| |x| + |b|`); if refinement does not get there, the dense LU
/// solves.
#[derive(Clone, Debug)]
pub struct Factors {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Dense(DenseLu),
    Hierarchical(Box<Hierarchical>),
}

/// Tangents from this size on are factored hierarchically when their
/// off-diagonal blocks allow. Side by side (criterion, whole static
/// solves): a uniform rod of 198 coordinates 7 % slower hierarchically,
/// the tendon robot's 246 3-13 % faster, 390 1.25x and 774 1.9x.
pub const HIERARCHICAL_FROM: usize = 224;
/// Diagonal blocks of at most this size are factored dense.
const LEAF: usize = 64;
/// Off-diagonal blocks are kept to this accuracy (pivots and terms),
/// relative to the tangent's largest row sum (a rod's blocks are of rank
/// 8, their ninth singular value below 1e-17 of the largest entry).
const COMPRESSION: f64 = 1e-14;
/// An off-diagonal block of higher rank (or of more than a quarter of its
/// smaller side) makes the whole tangent dense: the hierarchy would not pay.
const MAX_RANK: usize = 32;
/// A hierarchical solve's residual `|b - H x|_inf` is refined down to this
/// times `|H|_inf |x|_inf + |b|_inf` (a dense LU's backward error is a few
/// units of round-off times sqrt(n)) ...
const BACKWARD_ERROR: f64 = 1e-13;
/// ... in at most this many corrections.
const REFINEMENTS: usize = 3;

impl Factors {
    pub fn of(tangent: DMatrix<f64>) -> Factors {
        let n = tangent.nrows();
        assert_eq!(n, tangent.ncols(), "a square tangent");
        if n >= HIERARCHICAL_FROM {
            let norm_inf = norm_inf(&tangent);
            let tolerance = COMPRESSION * norm_inf;
            if let Some(root) = tolerance.is_finite().then(|| Node::of(&tangent, 0..n, tolerance)).flatten() {
                return Factors { kind: Kind::Hierarchical(Box::new(Hierarchical { tangent, norm_inf, root, dense: OnceLock::new() })) };
            }
        }
        Factors { kind: Kind::Dense(DenseLu::of(tangent)) }
    }

    /// The number of coordinates.
    pub fn dimension(&self) -> usize {
        match &self.kind {
            Kind::Dense(lu) => lu.packed.nrows(),
            Kind::Hierarchical(h) => h.tangent.nrows(),
        }
    }

    /// Whether the factorisation is hierarchical (for tests and benches).
    pub fn is_hierarchical(&self) -> bool {
        matches!(self.kind, Kind::Hierarchical(_))
    }

    /// `x` with `H x = b`; `None` for a singular tangent.
    pub fn solve(&self, b: &DVector<f64>) -> Option<DVector<f64>> {
        let mut x = b.clone();
        self.solve_in_place(x.as_mut_slice()).then_some(x)
    }

    /// `X` with `H X = B`, column by column.
    pub fn solve_columns(&self, b: &DMatrix<f64>) -> Option<DMatrix<f64>> {
        solved_columns(b.clone(), |column| self.solve_in_place(column))
    }

    fn solve_in_place(&self, x: &mut [f64]) -> bool {
        match &self.kind {
            Kind::Dense(lu) => lu.solve_in_place(x),
            Kind::Hierarchical(h) => h.solve_in_place(x),
        }
    }
}

/// A hierarchical factorisation and the tangent it refines against.
#[derive(Clone, Debug)]
struct Hierarchical {
    tangent: DMatrix<f64>,
    norm_inf: f64,
    root: Node,
    /// The dense LU, made the first time refinement falls short.
    dense: OnceLock<DenseLu>,
}

impl Hierarchical {
    fn solve_in_place(&self, x: &mut [f64]) -> bool {
        let b = DVector::from_column_slice(x);
        if self.root.solve_in_place(x) && self.refine(&b, x) {
            return true;
        }
        x.copy_from_slice(b.as_slice());
        self.dense.get_or_init(|| DenseLu::of(self.tangent.clone())).solve_in_place(x)
    }

    /// Corrects `x` by solves of the residual until its backward error is
    /// a dense LU's; false if it does not get there.
    fn refine(&self, b: &DVector<f64>, x: &mut [f64]) -> bool {
        let b_max = b.amax();
        for correction in 0..=REFINEMENTS {
            let xv = nalgebra::DVectorView::from_slice(x, x.len());
            let mut r = b.clone();
            r.gemv(-1.0, &self.tangent, &xv, 1.0);
            let bound = BACKWARD_ERROR * (self.norm_inf * xv.amax() + b_max);
            if r.amax() <= bound {
                return true;
            }
            if correction == REFINEMENTS || !self.root.solve_in_place(r.as_mut_slice()) {
                return false;
            }
            for (xi, ri) in x.iter_mut().zip(r.iter()) {
                *xi += ri;
            }
        }
        false
    }
}

/// A diagonal block of the hierarchy.
#[derive(Clone, Debug)]
enum Node {
    Leaf(DenseLu),
    Split(Box<Split>),
}

/// A diagonal block `[A11 U1 V2^T; U2 V1^T A22]` of two halves: by
/// Woodbury's identity its solve is the halves' solves corrected in the
/// span of `A11^-1 U1` and `A22^-1 U2`, with a small system `S` of the
/// two ranks' size.
#[derive(Clone, Debug)]
struct Split {
    first: Node,
    second: Node,
    /// Rows of the first half.
    n1: usize,
    /// `A11^-1 U1` (n1 x r1) and `V2` (n2 x r1).
    p1: DMatrix<f64>,
    v2: DMatrix<f64>,
    /// `A22^-1 U2` (n2 x r2) and `V1` (n1 x r2).
    p2: DMatrix<f64>,
    v1: DMatrix<f64>,
    /// `S = [I V2^T P2; V1^T P1 I]`.
    coupling: DenseLu,
}

impl Node {
    /// The diagonal block `range` of `tangent`; `None` when an off-diagonal
    /// block is not of low rank or a solve on the way is singular (then the
    /// tangent is factored dense).
    fn of(tangent: &DMatrix<f64>, range: std::ops::Range<usize>, tolerance: f64) -> Option<Node> {
        if range.len() <= LEAF {
            let lu = DenseLu::of(block(tangent, range.clone(), range));
            return (!lu.singular).then_some(Node::Leaf(lu));
        }
        let middle = range.start + range.len() / 2;
        let (upper, lower) = (range.start..middle, middle..range.end);
        // The off-diagonal blocks first: a tangent that is not of this
        // kind fails before any factoring.
        let (u1, v2) = low_rank(tangent, upper.clone(), lower.clone(), tolerance)?;
        let (u2, v1) = low_rank(tangent, lower.clone(), upper.clone(), tolerance)?;
        let first = Node::of(tangent, upper.clone(), tolerance)?;
        let second = Node::of(tangent, lower, tolerance)?;
        let p1 = solved_columns(u1, |column| first.solve_in_place(column))?;
        let p2 = solved_columns(u2, |column| second.solve_in_place(column))?;
        let (r1, r2) = (v2.ncols(), v1.ncols());
        let mut s = DMatrix::identity(r1 + r2, r1 + r2);
        s.view_mut((0, r1), (r1, r2)).copy_from(&(v2.transpose() * &p2));
        s.view_mut((r1, 0), (r2, r1)).copy_from(&(v1.transpose() * &p1));
        let coupling = DenseLu::of(s);
        if coupling.singular {
            return None;
        }
        Some(Node::Split(Box::new(Split { first, second, n1: upper.len(), p1, v2, p2, v1, coupling })))
    }

    fn solve_in_place(&self, x: &mut [f64]) -> bool {
        let s = match self {
            Node::Leaf(lu) => return lu.solve_in_place(x),
            Node::Split(s) => s,
        };
        let (x1, x2) = x.split_at_mut(s.n1);
        if !s.first.solve_in_place(x1) || !s.second.solve_in_place(x2) {
            return false;
        }
        let (r1, r2) = (s.v2.ncols(), s.v1.ncols());
        let (mut x1, mut x2) = (DVectorViewMut::from_slice(x1, s.n1), DVectorViewMut::from_slice(x2, s.p2.nrows()));
        let mut y = DVector::zeros(r1 + r2);
        y.rows_mut(0, r1).gemv_tr(1.0, &s.v2, &x2, 0.0);
        y.rows_mut(r1, r2).gemv_tr(1.0, &s.v1, &x1, 0.0);
        if !s.coupling.solve_in_place(y.as_mut_slice()) {
            return false;
        }
        x1.gemv(-1.0, &s.p1, &y.rows(0, r1), 1.0);
        x2.gemv(-1.0, &s.p2, &y.rows(r1, r2), 1.0);
        true
    }
}

/// The largest row sum of magnitudes, column by column.
fn norm_inf(a: &DMatrix<f64>) -> f64 {
    let mut sums = vec![0.0; a.nrows()];
    for column in a.as_slice().chunks_exact(a.nrows().max(1)) {
        for (sum, v) in sums.iter_mut().zip(column) {
            *sum += v.abs();
        }
    }
    sums.into_iter().fold(0.0, f64::max)
}

/// `b` with each column replaced by `solve`'s answer; `None` when a solve
/// fails (a singular factor).
fn solved_columns(mut b: DMatrix<f64>, solve: impl Fn(&mut [f64]) -> bool) -> Option<DMatrix<f64>> {
    let n = b.nrows();
    b.as_mut_slice().chunks_exact_mut(n.max(1)).all(solve).then_some(b)
}

/// `U V^T` equal to the block `rows` x `columns` of `tangent` to
/// `tolerance`, by adaptive cross approximation (Bebendorf, Numerische
/// Mathematik 2000): each step takes the residual's row at the last
/// column's largest unused entry, its largest entry as pivot, and the
/// pivot's column; the cross is a rank-one term. It reads O(k (m + n))
/// entries, not the block. A round stops when its last term is below
/// `tolerance`; then random probes `(A - U V^T) W` check the whole block
/// (a rod's tangent in a plane splits into in-plane and out-of-plane
/// coordinates, whose crosses never meet), and where one is not below
/// `tolerance` the next round starts at its largest row. `A W` is the one
/// pass over the block; each round's terms update the probes' image.
/// `None` past [`MAX_RANK`] or a quarter of the block's smaller side.
fn low_rank(tangent: &DMatrix<f64>, rows: std::ops::Range<usize>, columns: std::ops::Range<usize>, tolerance: f64) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
    let block = tangent.view((rows.start, columns.start), (rows.len(), columns.len()));
    let (m, n) = block.shape();
    let cap = MAX_RANK.min(m.min(n) / 4);
    let mut random = xorshift(0x9e37_79b9_7f4a_7c15 ^ (rows.start as u64) << 20 ^ columns.start as u64);
    let (mut us, mut vs): (Vec<DVector<f64>>, Vec<DVector<f64>>) = (Vec::new(), Vec::new());
    let mut used = vec![false; m];
    // The probes' image, kept as `(A - U V^T) W` while terms are added.
    let probes = DMatrix::from_fn(n, PROBES, |_, _| random());
    let mut missed = probe(tangent, &rows, &columns, &probes);
    let mut start = Some(largest_row(&missed));
    for _ in 0..=cap + 1 {
        let known = us.len();
        while let Some(i) = start.take() {
            used[i] = true;
            let mut row = block.row(i).transpose();
            for (u, v) in us.iter().zip(&vs) {
                row.axpy(-u[i], v, 1.0);
            }
            let j = row.iamax();
            let pivot = row[j];
            if pivot.is_nan() {
                return None;
            }
            if pivot.abs() <= tolerance {
                break;
            }
            if us.len() >= cap {
                return None;
            }
            let mut column = block.column(j).clone_owned();
            for (u, v) in us.iter().zip(&vs) {
                column.axpy(-v[j], u, 1.0);
            }
            row /= pivot;
            let last = column.norm() * row.norm() <= tolerance;
            start = (0..m).filter(|&r| !used[r]).max_by(|&a, &b| column[a].abs().total_cmp(&column[b].abs()));
            us.push(column);
            vs.push(row);
            if last {
                start = None;
            }
        }
        for (u, v) in us[known..].iter().zip(&vs[known..]) {
            missed.ger(-1.0, u, &probes.tr_mul(v), 1.0);
        }
        let worst = missed.column_iter().zip(probes.column_iter()).map(|(e, w)| e.norm() / w.norm()).fold(0.0, f64::max);
        if worst <= tolerance {
            let thin = |columns: &[DVector<f64>], rows: usize| DMatrix::from_fn(rows, columns.len(), |r, c| columns[c][r]);
            return Some((thin(&us, m), thin(&vs, n)));
        }
        if !worst.is_finite() {
            return None;
        }
        start = Some(largest_row(&missed));
    }
    None
}

/// Random columns the block is probed with, in its one pass.
const PROBES: usize = 4;

/// The row of `a`'s largest entry.
fn largest_row(a: &DMatrix<f64>) -> usize {
    a.iamax_full().0
}

/// The block `rows` x `columns` of `a` times the [`PROBES`] columns of
/// `w`, in one pass down its columns (a product through matrixmultiply
/// would first copy the block into its panels).
fn probe(a: &DMatrix<f64>, rows: &std::ops::Range<usize>, columns: &std::ops::Range<usize>, w: &DMatrix<f64>) -> DMatrix<f64> {
    let (lda, m) = (a.nrows(), rows.len());
    let data = a.as_slice();
    let mut out = [vec![0.0; m], vec![0.0; m], vec![0.0; m], vec![0.0; m]];
    for (k, c) in columns.clone().enumerate() {
        let weights = [w[(k, 0)], w[(k, 1)], w[(k, 2)], w[(k, 3)]];
        let column = &data[c * lda + rows.start..c * lda + rows.end];
        let [o0, o1, o2, o3] = &mut out;
        for ((((v, e0), e1), e2), e3) in column.iter().zip(o0.iter_mut()).zip(o1.iter_mut()).zip(o2.iter_mut()).zip(o3.iter_mut()) {
            *e0 += weights[0] * v;
            *e1 += weights[1] * v;
            *e2 += weights[2] * v;
            *e3 += weights[3] * v;
        }
    }
    DMatrix::from_vec(m, PROBES, out.concat())
}

/// Uniform numbers in [-0.5, 0.5) from `state` (xorshift64): the same
/// probes, and so the same factors, on every run.
fn xorshift(mut state: u64) -> impl FnMut() -> f64 {
    state |= 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

/// The LU factorisation of a dense matrix (partial pivoting: `P H = L U`,
/// the unit lower and the upper factor packed in one matrix).
///
/// Written out rather than nalgebra's `LU` for speed: on column slices the
/// elimination vectorises, and the Table II rod's 24x24 tangent factors in
/// a fifth of the instructions (it was 8 % of a static solve). The pivots
/// are nalgebra's (the first largest magnitude of each column), and a test
/// compares the two.
#[derive(Clone, Debug)]
struct DenseLu {
    packed: DMatrix<f64>,
    /// Row exchanged with row k at step k.
    pivots: Vec<usize>,
    /// A zero pivot: the tangent is singular.
    singular: bool,
    /// `1 / U[k][k]`: the back substitution multiplies (a division each
    /// row, on its chain of dependent rows, was a third of a Table II
    /// Broyden step's solve).
    inverse_diagonal: Vec<f64>,
}

/// Tangents from this size on factor in panels (below, the plain
/// elimination is as fast: the Table II rod's 24x24).
const BLOCKED_FROM: usize = 96;
/// Columns per panel of the blocked factorisation.
const PANEL: usize = 32;

impl DenseLu {
    fn of(tangent: DMatrix<f64>) -> DenseLu {
        let n = tangent.nrows();
        assert_eq!(n, tangent.ncols(), "a square tangent");
        let mut packed = tangent;
        let mut pivots = vec![0; n];
        let mut singular = false;
        let panel = if n < BLOCKED_FROM { n.max(1) } else { PANEL };
        for k0 in (0..n).step_by(panel) {
            let k1 = (k0 + panel).min(n);
            singular |= eliminate_panel(packed.as_mut_slice(), n, k0..k1, &mut pivots);
            if k1 < n {
                update_columns(&mut packed, k0..k1, k1..n);
            }
        }
        let inverse_diagonal = (0..n).map(|k| 1.0 / packed[(k, k)]).collect();
        DenseLu { packed, pivots, singular, inverse_diagonal }
    }

    fn solve_in_place(&self, x: &mut [f64]) -> bool {
        if self.singular {
            return false;
        }
        let (n, a) = (self.packed.nrows(), self.packed.as_slice());
        for (k, &p) in self.pivots.iter().enumerate() {
            x.swap(k, p);
        }
        for k in 0..n {
            let xk = x[k];
            if xk != 0.0 {
                for (xi, l) in x[k + 1..].iter_mut().zip(&a[k * n + k + 1..(k + 1) * n]) {
                    *xi -= l * xk;
                }
            }
        }
        for k in (0..n).rev() {
            x[k] *= self.inverse_diagonal[k];
            let xk = x[k];
            for (xi, u) in x[..k].iter_mut().zip(&a[k * n..k * n + k]) {
                *xi -= u * xk;
            }
        }
        true
    }
}

/// Eliminates the columns `panel` of the column-major `a` (n x n): pivot
/// search down each column, the rows exchanged across the whole matrix,
/// the multipliers stored below the diagonal and the update applied to the
/// panel's own columns. True when a pivot is zero (a singular tangent).
fn eliminate_panel(a: &mut [f64], n: usize, panel: std::ops::Range<usize>, pivots: &mut [usize]) -> bool {
    let mut singular = false;
    let end = panel.end;
    for k in panel {
        let mut p = k;
        for i in k + 1..n {
            if a[k * n + i].abs() > a[k * n + p].abs() {
                p = i;
            }
        }
        pivots[k] = p;
        if p != k {
            for j in 0..n {
                a.swap(j * n + k, j * n + p);
            }
        }
        let d = a[k * n + k];
        if d == 0.0 {
            singular = true;
            continue;
        }
        let inverse = 1.0 / d;
        for v in &mut a[k * n + k + 1..(k + 1) * n] {
            *v *= inverse;
        }
        // The panel's columns right of k: minus l_k times their row-k entry.
        let (left, right) = a.split_at_mut((k + 1) * n);
        let l = &left[k * n + k + 1..(k + 1) * n];
        for column in right[..(end - k - 1) * n].chunks_exact_mut(n) {
            let f = column[k];
            if f != 0.0 {
                for (x, li) in column[k + 1..].iter_mut().zip(l) {
                    *x -= f * li;
                }
            }
        }
    }
    singular
}

/// After the columns `done` are factored: the rows `done` of the columns
/// `right` become U's (`L11^-1 A12`) and the rows below lose `L21 U12`.
/// Both are matrix products (matrixmultiply's kernel): `L11^-1` of the
/// panel's unit lower factor is formed once (its entries are at most 1 in
/// size, partial pivoting's), as the column-by-column triangular solve on
/// short columns cost more than the products.
fn update_columns(packed: &mut DMatrix<f64>, done: std::ops::Range<usize>, right: std::ops::Range<usize>) {
    let n = packed.nrows();
    let k1 = done.end;
    let l11_inverse = unit_lower_inverse(&block(packed, done.clone(), done.clone()));
    let u12 = &l11_inverse * block(packed, done.clone(), right.clone());
    packed.view_mut((done.start, right.start), (done.len(), right.len())).copy_from(&u12);
    if k1 < n {
        let l21 = block(packed, k1..n, done);
        packed.view_mut((k1, right.start), (n - k1, right.len())).gemm(-1.0, &l21, &u12, 1.0);
    }
}

/// The inverse of the unit lower triangle of `packed` (its diagonal taken
/// as ones), column by column.
fn unit_lower_inverse(packed: &DMatrix<f64>) -> DMatrix<f64> {
    let m = packed.nrows();
    let mut x = DMatrix::identity(m, m);
    let l = packed.as_slice();
    for (j, column) in x.as_mut_slice().chunks_exact_mut(m).enumerate() {
        for k in j..m {
            let xk = column[k];
            if xk != 0.0 {
                for (xi, li) in column[k + 1..].iter_mut().zip(&l[k * m + k + 1..(k + 1) * m]) {
                    *xi -= li * xk;
                }
            }
        }
    }
    x
}

/// A copy of the block `rows` x `columns` of a column-major matrix,
/// column slice by column slice (nalgebra's generic copy of a view checks
/// every index: it cost as much as the product).
fn block(a: &DMatrix<f64>, rows: std::ops::Range<usize>, columns: std::ops::Range<usize>) -> DMatrix<f64> {
    let n = a.nrows();
    let data = a.as_slice();
    let mut out = Vec::with_capacity(rows.len() * columns.len());
    for c in columns.clone() {
        out.extend_from_slice(&data[c * n + rows.start..c * n + rows.end]);
    }
    DMatrix::from_vec(rows.len(), columns.len(), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The written-out LU against nalgebra's on a random unsymmetric matrix
    /// that needs pivoting (a zero on the diagonal), for a vector and for
    /// columns; a singular matrix has no solution. Sizes below and above
    /// the blocked factorisation's threshold (150: four panels and a part).
    #[test]
    fn factors_solve_as_nalgebra_does_and_refuse_a_singular_matrix() {
        for n in [24, 150] {
            factors_match_nalgebra(n);
        }
    }

    fn factors_match_nalgebra(n: usize) {
        let mut random = xorshift(0x2545_f491_4f6c_dd1d);
        let mut h = DMatrix::from_fn(n, n, |_, _| random());
        h[(0, 0)] = 0.0;
        let b = DVector::from_fn(n, |_, _| random());
        let columns = DMatrix::from_fn(n, 3, |_, _| random());
        let ours = Factors::of(h.clone());
        let theirs = h.clone().lu();
        let x = ours.solve(&b).unwrap();
        let reference = theirs.solve(&b).unwrap();
        assert!((&x - &reference).amax() < 1e-12 * reference.amax(), "{}", (&x - &reference).amax());
        assert!((&h * &x - &b).amax() < 1e-12);
        let xs = ours.solve_columns(&columns).unwrap();
        assert!((&h * &xs - &columns).amax() < 1e-12);
        let Kind::Dense(lu) = &ours.kind else { panic!("below {HIERARCHICAL_FROM}: dense") };
        assert_ne!(lu.pivots[0], 0, "the zero on the diagonal is pivoted away");
        let mut singular = h.clone();
        singular.column_mut(7).fill(0.0);
        assert!(Factors::of(singular).solve(&b).is_none());
    }

    /// A long rod's tangent (a uniform 1.5 m rod of 64 sections under its
    /// weight, 390 coordinates, at its equilibrium) is factored
    /// hierarchically, and its solutions are the dense LU's to 1e-10 with
    /// the backward error of one.
    #[test]
    fn a_long_rods_tangent_factors_hierarchically_with_the_dense_solution() {
        let mut rod = crate::Rod::uniform_cylinder(1.5, 0.005, crate::Material::from_poisson(2.0e9, 0.4, 1.2e3), 64);
        rod.subsegments_per_section = 4;
        let model = crate::Model::new(&rod, &[]);
        let loads = crate::Loads::gravity();
        let q = crate::statics::solve(&model, &loads, None, &crate::NewtonOptions::default()).unwrap().q;
        let h = crate::statics::assemble(&model, &loads, &q, 1.0, true).unwrap().tangent.unwrap();
        let n = h.nrows();
        let factors = Factors::of(h.clone());
        assert!(factors.is_hierarchical());
        let Kind::Hierarchical(hierarchical) = &factors.kind else { unreachable!() };
        let mut random = xorshift(7);
        let b = DMatrix::from_fn(n, 3, |_, _| random());
        let x = factors.solve_columns(&b).unwrap();
        let reference = DenseLu::of(h.clone());
        for (c, column) in x.column_iter().enumerate() {
            let mut dense = b.column(c).clone_owned();
            assert!(reference.solve_in_place(dense.as_mut_slice()));
            assert!((column - &dense).amax() < 1e-10 * dense.amax(), "column {c}: {:e}", (column - &dense).amax() / dense.amax());
            let backward = (&h * column - b.column(c)).amax() / (hierarchical.norm_inf * column.amax() + b.column(c).amax());
            assert!(backward < BACKWARD_ERROR, "{backward:e}");
        }
        assert!(hierarchical.dense.get().is_none(), "no fall-back to the dense LU was needed");
    }

    /// Tangents the hierarchy does not fit are solved as accurately: a
    /// random matrix (off-diagonal blocks of full rank) is factored dense;
    /// one whose off-diagonal blocks are of rank 2 but whose first diagonal
    /// block is singular (the matrix is not) falls back to the dense LU; one
    /// with a nearly singular diagonal block (condition 1e13) is solved to
    /// a dense LU's backward error, refined or by the fall-back.
    #[test]
    fn tangents_the_hierarchy_does_not_fit_are_solved_dense() {
        let n = 256;
        let mut random = xorshift(11);
        let full = DMatrix::from_fn(n, n, |_, _| random());
        assert!(!Factors::of(full.clone()).is_hierarchical());
        let b = DVector::from_fn(n, |_, _| random());
        let x = Factors::of(full.clone()).solve(&b).unwrap();
        assert!((&full * &x - &b).amax() < 1e-10);

        let low = |random: &mut dyn FnMut() -> f64, rows: usize, columns: usize| {
            DMatrix::from_fn(rows, 2, |_, _| random()) * DMatrix::from_fn(2, columns, |_, _| random())
        };
        for leaf_scale in [0.0, 1e-13] {
            let mut a = DMatrix::<f64>::identity(n, n) * 4.0;
            let half = n / 2;
            a.view_mut((0, half), (half, n - half)).copy_from(&low(&mut random, half, n - half));
            a.view_mut((half, 0), (n - half, half)).copy_from(&low(&mut random, n - half, half));
            // The first quarter's first coordinate: (almost) no diagonal.
            a[(0, 0)] = leaf_scale;
            let factors = Factors::of(a.clone());
            assert_eq!(factors.is_hierarchical(), leaf_scale > 0.0, "a singular leaf makes the tangent dense");
            let x = factors.solve(&b).expect("the matrix is regular");
            let reference = a.clone().lu().solve(&b).unwrap();
            assert!((&x - &reference).amax() < 1e-8 * reference.amax(), "{leaf_scale}: {:e}", (&x - &reference).amax());
            assert!((&a * &x - &b).amax() < 1e-12 * (x.amax() * 8.0 + b.amax()), "{leaf_scale}");
        }
    }
}
