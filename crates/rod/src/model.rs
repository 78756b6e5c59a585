//! PLS discretisation and kinematics.
//!
//! Generalised coordinates `q` are the nodal strain *deviations* from rest at
//! the section boundaries (only the free components of the strain modes), so
//! `xi(X) = xi0(X) + Phi(X) q` with `Phi` the linear (hat) interpolation.
//! Each section is cut into sub-segments of constant strain (the strain at the
//! sub-segment's midpoint: second order) integrated with the exact SE(3)
//! exponential; PCS is the special case of one constant strain per section.
//!
//! Extra grid points (point loads, markers, cable anchors) are inserted as
//! sub-segment boundaries ("joints"), so everything attached to the rod sits
//! on a joint frame.

use crate::config::{Rod, StrainBasis};
use crate::fibre::{ElasticLaw, Fibres};
use lie::{Mat6, Pose, Vec3, Vec6};
use nalgebra::{DMatrix, DVector, Matrix6xX};

/// One constant-strain sub-segment `[x0, x0 + h]` inside section `section`.
#[derive(Clone, Debug)]
pub struct Segment {
    pub x0_m: f64,
    pub h_m: f64,
    pub section: usize,
    /// Hat-function weights of nodes `section` and `section + 1` at the midpoint.
    pub w_left: f64,
    pub w_right: f64,
    /// Offsets in `q` of the two weighted nodal blocks (PCS: both the
    /// section's own block, right weight 0).
    pub dof: [usize; 2],
    /// Rest strain at the midpoint.
    pub rest_strain: Vec6,
}

/// Cable geometry on one sub-segment: offset d and d' at its midpoint, body frame.
#[derive(Clone, Copy, Debug)]
pub struct CableSpan {
    pub offset_m: Vec3,
    pub offset_slope: Vec3,
}

/// A guided cable's hole in a disk (or the base): the joint the disk sits
/// at and the hole's offset in that joint's frame \[m\].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CableHole {
    pub joint: usize,
    pub offset_m: Vec3,
    /// The disk takes only the pull's part in its plane (the cable's
    /// `guide_reaction`; never at the base or the anchor).
    pub disk_plane: bool,
}

/// Discretised rod: grid, strain basis, stiffness and lumped masses.
///
/// The generalised coordinates are the strain coordinates `q` (nodal strain
/// deviations), followed, for a floating base, by a twist `zeta` (6) of the
/// base: base pose = `rod.base * exp(zeta)` (the rod file's base is then the
/// reference the twist is measured from, e.g. the previous time step's).
#[derive(Clone, Debug)]
pub struct Model {
    pub rod: Rod,
    /// Section boundaries (nodes), N + 1.
    pub node_x_m: Vec<f64>,
    /// Free strain components (indices into `[Kx Ky Kz Qx Qy Qz]`).
    pub free: Vec<usize>,
    pub segments: Vec<Segment>,
    /// Joint arc lengths, `segments.len() + 1`.
    pub joint_x_m: Vec<f64>,
    /// Mass lumped at joints so that mass and first moment of every
    /// sub-segment are kept \[kg\].
    pub joint_mass_kg: Vec<f64>,
    /// `K = int Phi^T Sigma Phi dX`. Sparse by construction: a node's
    /// strain component meets only the same component at its own and the
    /// neighbouring nodes (one node for constant strains), where
    /// [`Model::stiffness_times`] and [`Model::add_stiffness`] read it; keep
    /// any change to that pattern.
    pub stiffness: DMatrix<f64>,
    /// Per cable, per segment: `Some` where the cable runs along its path
    /// (all `None` for a cable through guide disks).
    pub cable_spans: Vec<Vec<Option<CableSpan>>>,
    /// Per cable: the holes it runs straight between, the base's first
    /// (empty for a cable along its path).
    pub cable_guides: Vec<Vec<CableHole>>,
    /// The base is free (6 more coordinates after the strains).
    pub floating_base: bool,
    /// The body's hyperelastic fibres (`None` for the linear law): the
    /// elastic term adds their large-strain correction to `stiffness`.
    pub fibres: Option<Fibres>,
}

/// Rod configuration for a given `q`: joint frames and segment twists.
#[derive(Clone, Debug)]
pub struct Frames {
    pub joints: Vec<Pose>,
    /// `psi_k = h_k xi_k`.
    pub psi: Vec<Vec6>,
    /// Floating base: the twist `zeta` from the reference to the base.
    pub base_twist: Vec6,
}

/// Up to this many coordinates [`Kinematics`] keeps every joint's
/// Jacobian (Table II's rod: 24, 13 joints of 1.2 kB).
const KEEP_EVERY_JACOBIAN_UP_TO_DOF: usize = 48;

/// Frames plus spatial Jacobians of the joints (`eta_s = J_s qdot`).
///
/// A joint's Jacobian differs from that of the first joint of its section
/// (the run of segments on the same coordinates) only on the section's
/// own coordinates, so only those first joints' are kept
/// ([`Kinematics::anchor`]; every joint's on a short rod) and any other
/// is made on demand ([`Model::joint_jacobian`]): a rod of eight
/// sub-segments keeps an eighth of the memory (a 64-section rod of four,
/// 1.2 MB instead of 4.8 MB per tangent).
#[derive(Clone, Debug)]
pub struct Kinematics {
    pub frames: Frames,
    /// Spatial Jacobians (6 x n) of the sections' first joints.
    anchors: Vec<Matrix6xX<f64>>,
    /// For each joint: its anchor's index in `anchors` and joint.
    anchor_of: Vec<(usize, usize)>,
    /// `A_k = Ad_{g_k} dexp(psi_k)` (6x6): spatial twist per unit `psi_k`.
    pub segment_map: Vec<Mat6>,
    /// Floating base: `Ad_{base_ref} dexp(zeta)`, the spatial twist of the
    /// base per unit change of `zeta`.
    pub root_map: Option<Mat6>,
}

impl Kinematics {
    /// Every joint's Jacobian is kept (a short rod): [`Kinematics::anchor`]
    /// of joint `j` is joint `j`'s own.
    pub fn keeps_every_joint(&self) -> bool {
        self.anchors.len() == self.anchor_of.len()
    }

    /// Joint `j`'s anchor: the spatial Jacobian of its section's first
    /// joint and that joint's index. On every column but the section's own
    /// coordinates it is joint `j`'s Jacobian.
    pub fn anchor(&self, j: usize) -> (&Matrix6xX<f64>, usize) {
        let (index, joint) = self.anchor_of[j];
        (&self.anchors[index], joint)
    }
}

/// A material point inside a segment, at `s_m` from the segment's start
/// joint (the segment's strain is constant, so the frame there is
/// `g_k exp(s xi_k)` exactly).
#[derive(Clone, Debug)]
pub struct InteriorPoint {
    pub segment: usize,
    pub s_m: f64,
    /// Frame of the cross-section at the point.
    pub pose: Pose,
    /// `s xi_k`: the twist from the segment's start joint to the point.
    pub local: Vec6,
    /// `Ad_{g_k} dexp(s xi_k)`: spatial twist of the point's frame per unit
    /// change of `s xi_k` (computed only for tangents).
    pub map: Option<Mat6>,
}

/// Offsets in `q` and weights of the (at most two) nodal blocks that give
/// the strain at `x_m` in `section`.
fn basis_at(basis: StrainBasis, node_x: &[f64], m: usize, section: usize, x_m: f64) -> ([usize; 2], [f64; 2]) {
    match basis {
        StrainBasis::Linear => {
            let (a, b) = (node_x[section], node_x[section + 1]);
            let wr = ((x_m - a) / (b - a)).clamp(0.0, 1.0);
            ([section * m, (section + 1) * m], [1.0 - wr, wr])
        }
        StrainBasis::Constant => ([section * m, section * m], [1.0, 0.0]),
    }
}

fn section_of(node_x: &[f64], x_m: f64) -> usize {
    (0..node_x.len() - 1).find(|&s| x_m < node_x[s + 1]).unwrap_or(node_x.len() - 2)
}

/// Two-point Gauss-Legendre rule on \[-1, 1\] (nodes, weights): exact to
/// degree 3; the simulator's inertia on sub-segments of constant section.
pub const GAUSS2: [(f64, f64); 2] = [(-0.577_350_269_189_625_8, 1.0), (0.577_350_269_189_625_8, 1.0)];

/// Gauss-Legendre rule on [-1, 1] (nodes, weights) used for the integrals
/// along a sub-segment: stiffness, lumped masses, and the simulator's
/// inertia where the section varies.
pub const GAUSS4: [(f64, f64); 4] = [
    (-0.861_136_311_594_052_6, 0.347_854_845_137_453_9),
    (-0.339_981_043_584_856_3, 0.652_145_154_862_546_1),
    (0.339_981_043_584_856_3, 0.652_145_154_862_546_1),
    (0.861_136_311_594_052_6, 0.347_854_845_137_453_9),
];

impl Model {
    /// Discretises `rod`, with extra joints at the given arc lengths.
    pub fn new(rod: &Rod, extra_points_m: &[f64]) -> Model {
        let node_x = rod.section_boundaries_m();
        let l = rod.length_m;
        let tol = 1e-12 * l;
        let mut cuts: Vec<f64> = vec![];
        for s in 0..node_x.len() - 1 {
            let (a, b) = (node_x[s], node_x[s + 1]);
            for j in 0..rod.subsegments_per_section {
                cuts.push(a + (b - a) * j as f64 / rod.subsegments_per_section as f64);
            }
        }
        cuts.push(l);
        cuts.extend(extra_points_m.iter().copied().filter(|x| *x > 0.0 && *x < l));
        cuts.extend(rod.cables.iter().map(|c| c.anchor_m).filter(|x| *x > 0.0 && *x < l));
        cuts.extend(rod.cables.iter().flat_map(|c| c.guides_m.iter().copied()).filter(|x| *x > 0.0 && *x < l));
        cuts.extend(rod.cross_section.breakpoints().into_iter().filter(|x| *x > 0.0 && *x < l));
        cuts.sort_by(f64::total_cmp);
        let mut joints: Vec<f64> = vec![];
        for c in cuts {
            if joints.last().is_none_or(|&p| c - p > tol) {
                joints.push(c);
            }
        }
        *joints.last_mut().unwrap() = l;

        let k0 = rod.rest_curvature_per_m;
        let rest = Vec6::new(k0.x, k0.y, k0.z, 1.0, 0.0, 0.0);
        let free = rod.modes.indices();
        let m = free.len();
        let basis = rod.strain_basis;
        let mut segments = vec![];
        for w in joints.windows(2) {
            let (x0, x1) = (w[0], w[1]);
            let xm = 0.5 * (x0 + x1);
            let section = section_of(&node_x, xm);
            let (dof, [w_left, w_right]) = basis_at(basis, &node_x, m, section, xm);
            segments.push(Segment { x0_m: x0, h_m: x1 - x0, section, w_left, w_right, dof, rest_strain: rest });
        }
        let n = m * match basis {
            StrainBasis::Linear => node_x.len(),
            StrainBasis::Constant => node_x.len() - 1,
        };
        let mut stiffness = DMatrix::zeros(n, n);
        let mut joint_mass = vec![0.0; joints.len()];
        for (k, seg) in segments.iter().enumerate() {
            let mut mass = 0.0;
            let mut moment = 0.0;
            for (xi, wi) in GAUSS4 {
                let s = 0.5 * seg.h_m * (1.0 + xi);
                let x = seg.x0_m + s;
                let w = 0.5 * seg.h_m * wi;
                let props = rod.cross_section.properties(x, l);
                mass += w * props.mass_per_length_kg_m;
                moment += w * props.mass_per_length_kg_m * s;
                let (dof, shape) = basis_at(basis, &node_x, m, seg.section, x);
                for (ia, na) in shape.iter().enumerate() {
                    for (ib, nb) in shape.iter().enumerate() {
                        for (jj, &c) in free.iter().enumerate() {
                            let r = dof[ia] + jj;
                            let cc = dof[ib] + jj;
                            stiffness[(r, cc)] += w * na * nb * props.stiffness_diag[c];
                        }
                    }
                }
            }
            let frac = if mass > 0.0 { moment / mass / seg.h_m } else { 0.5 };
            joint_mass[k] += mass * (1.0 - frac);
            joint_mass[k + 1] += mass * frac;
        }

        let cable_spans = rod
            .cables
            .iter()
            .map(|c| {
                let dir = Vec3::new(0.0, c.angle_rad.cos(), c.angle_rad.sin());
                segments
                    .iter()
                    .map(|s| {
                        let xm = s.x0_m + 0.5 * s.h_m;
                        (c.guides_m.is_empty() && s.x0_m + s.h_m <= c.anchor_m + tol).then(|| {
                            let (d, slope) = c.distance_m(&rod.cross_section, xm, l);
                            CableSpan { offset_m: dir * d, offset_slope: dir * slope }
                        })
                    })
                    .collect()
            })
            .collect();

        let nearest = |x: f64| (0..joints.len()).min_by(|&a, &b| (joints[a] - x).abs().total_cmp(&(joints[b] - x).abs())).unwrap_or(0);
        let cable_guides = rod
            .cables
            .iter()
            .map(|c| {
                if c.guides_m.is_empty() {
                    return vec![];
                }
                let dir = Vec3::new(0.0, c.angle_rad.cos(), c.angle_rad.sin());
                let n_holes = c.guides_m.len() + 1;
                std::iter::once(0.0)
                    .chain(c.guides_m.iter().copied())
                    .enumerate()
                    .map(|(i, x)| CableHole {
                        joint: nearest(x),
                        offset_m: dir * c.distance_m(&rod.cross_section, x, l).0,
                        disk_plane: c.guide_reaction == crate::GuideReaction::DiskPlane && i > 0 && i + 1 < n_holes,
                    })
                    .collect()
            })
            .collect();
        let mut model = Model {
            rod: rod.clone(),
            node_x_m: node_x,
            free,
            segments,
            joint_x_m: joints,
            joint_mass_kg: joint_mass,
            stiffness,
            cable_spans,
            cable_guides,
            floating_base: false,
            fibres: None,
        };
        model.fibres = model.build_fibres();
        model
    }

    /// The hyperelastic fibres of the rod's section and law (`None` for
    /// the linear law or a section without a shape); for a model whose
    /// section was changed (identification's radius scale).
    pub fn build_fibres(&self) -> Option<Fibres> {
        let ElasticLaw::Hyperelastic { c01_fraction } = self.rod.elastic_law else { return None };
        let (basis, m) = (self.rod.strain_basis, self.free.len());
        let dof_of = |seg: &Segment, x: f64| basis_at(basis, &self.node_x_m, m, seg.section, x);
        Fibres::new(&self.rod.cross_section, self.rod.length_m, c01_fraction, &self.segments, dof_of, &self.free, self.n_strain_dof())
    }

    /// The same model with a free base (6 more coordinates, see [`Model`]).
    pub fn with_floating_base(mut self) -> Model {
        self.floating_base = true;
        self
    }

    /// All generalised coordinates: strains, then the base twist if free.
    pub fn n_dof(&self) -> usize {
        self.n_strain_dof() + if self.floating_base { 6 } else { 0 }
    }

    /// Strain coordinates only.
    pub fn n_strain_dof(&self) -> usize {
        self.stiffness.nrows()
    }

    /// Every strain component free (a Cosserat rod): a node's coordinates
    /// are the six strains in order, and the loops over them run as one
    /// vector or one contiguous block.
    pub fn all_components_free(&self) -> bool {
        self.free == [0, 1, 2, 3, 4, 5]
    }

    /// Offset of the base twist in the coordinates (floating base).
    pub fn base_dof(&self) -> Option<usize> {
        self.floating_base.then(|| self.n_strain_dof())
    }

    /// The base twist `zeta` of `q` (zero for a fixed base).
    pub fn base_twist(&self, q: &DVector<f64>) -> Vec6 {
        match self.base_dof() {
            Some(o) => Vec6::from_fn(|i, _| q[o + i]),
            None => Vec6::zeros(),
        }
    }

    /// Pose of the base for `q`.
    pub fn base_pose(&self, q: &DVector<f64>) -> Pose {
        match self.base_dof() {
            Some(_) => self.rod.base.compose(&lie::exp(&self.base_twist(q))),
            None => self.rod.base,
        }
    }

    pub fn n_joints(&self) -> usize {
        self.joint_x_m.len()
    }

    /// Index of the joint at arc length `x_m` (nearest).
    pub fn joint_at(&self, x_m: f64) -> usize {
        let mut best = 0;
        for (i, x) in self.joint_x_m.iter().enumerate() {
            if (x - x_m).abs() < (self.joint_x_m[best] - x_m).abs() {
                best = i;
            }
        }
        best
    }

    /// Strain of segment k: `xi_k = xi0 + Phi(X_mid) q`.
    pub fn segment_strain(&self, k: usize, q: &DVector<f64>) -> Vec6 {
        let s = &self.segments[k];
        let [dl, dr] = s.dof;
        let mut xi = s.rest_strain;
        let (left, right) = (&q.as_slice()[dl..dl + self.free.len()], &q.as_slice()[dr..dr + self.free.len()]);
        if self.all_components_free() {
            // Every component free (Cosserat): as one vector, the same
            // operations per entry; entry by entry, the six stores and the
            // vector load after them stalled the store buffer.
            let (l, r) = (Vec6::from_column_slice(left), Vec6::from_column_slice(right));
            return xi + (l * s.w_left + r * s.w_right);
        }
        for ((&c, l), r) in self.free.iter().zip(left).zip(right) {
            xi[c] += s.w_left * l + s.w_right * r;
        }
        xi
    }

    /// Strain at an arc length (the interpolated field, not the segment value).
    pub fn strain_at(&self, x_m: f64, q: &DVector<f64>) -> Vec6 {
        let m = self.free.len();
        let s = section_of(&self.node_x_m, x_m);
        let (dof, w) = basis_at(self.rod.strain_basis, &self.node_x_m, m, s, x_m);
        let k0 = self.rod.rest_curvature_per_m;
        let mut xi = Vec6::new(k0.x, k0.y, k0.z, 1.0, 0.0, 0.0);
        for (j, &c) in self.free.iter().enumerate() {
            xi[c] += w[0] * q[dof[0] + j] + w[1] * q[dof[1] + j];
        }
        xi
    }

    /// Sets q so that the strain field equals `xi` everywhere (components
    /// that are not free are ignored; a floating base keeps its reference).
    pub fn uniform_q(&self, xi: &Vec6) -> DVector<f64> {
        let m = self.free.len();
        let k0 = self.rod.rest_curvature_per_m;
        let rest = Vec6::new(k0.x, k0.y, k0.z, 1.0, 0.0, 0.0);
        let ns = self.n_strain_dof();
        DVector::from_fn(self.n_dof(), |i, _| {
            if i >= ns {
                return 0.0;
            }
            let c = self.free[i % m];
            xi[c] - rest[c]
        })
    }

    /// Joint frames for `q`.
    pub fn frames(&self, q: &DVector<f64>) -> Frames {
        let mut joints = Vec::with_capacity(self.n_joints());
        let mut psi = Vec::with_capacity(self.segments.len());
        let mut g = self.base_pose(q);
        joints.push(g);
        for k in 0..self.segments.len() {
            let p = self.segment_strain(k, q) * self.segments[k].h_m;
            g = g.compose(&lie::exp(&p));
            joints.push(g);
            psi.push(p);
        }
        Frames { joints, psi, base_twist: self.base_twist(q) }
    }

    /// Frames and spatial Jacobians of every joint.
    pub fn kinematics(&self, q: &DVector<f64>) -> Kinematics {
        let frames = self.frames(q);
        let n = self.n_dof();
        let mut anchors = Vec::new();
        let mut anchor_of = Vec::with_capacity(self.n_joints());
        let mut maps = Vec::with_capacity(self.segments.len());
        let mut js = Matrix6xX::zeros(n);
        let root_map = self.base_dof().map(|o| {
            let a = lie::adjoint_times_lower(&self.rod.base, &lie::dexp(&self.base_twist(q)));
            js.columns_mut(o, 6).copy_from(&a);
            a
        });
        // A short rod's Jacobians are few kilobytes: keep every joint's.
        let every_joint = n <= KEEP_EVERY_JACOBIAN_UP_TO_DOF;
        for (k, seg) in self.segments.iter().enumerate() {
            if every_joint || k == 0 || self.segments[k - 1].dof != seg.dof {
                anchors.push(js.clone());
                anchor_of.push((anchors.len() - 1, k));
            } else {
                anchor_of.push(*anchor_of.last().expect("joint 0 is an anchor"));
            }
            let a = lie::adjoint_times_lower(&frames.joints[k], &lie::dexp(&frames.psi[k]));
            self.add_segment_columns(k, &a, &mut js);
            maps.push(a);
        }
        match anchor_of.last().copied() {
            Some(last) if !every_joint => anchor_of.push(last),
            _ => {
                anchors.push(js);
                anchor_of.push((anchors.len() - 1, self.segments.len()));
            }
        }
        Kinematics { frames, anchors, anchor_of, segment_map: maps, root_map }
    }

    /// `J += A_k B_k`: segment k's twist per unit of its coordinates (its
    /// map `a` times its length and hat weights) into a 6 x n Jacobian.
    #[inline]
    pub fn add_segment_columns(&self, k: usize, a: &Mat6, js: &mut Matrix6xX<f64>) {
        let seg = &self.segments[k];
        let [dl, dr] = seg.dof;
        for (j, &c) in self.free.iter().enumerate() {
            let col = a.column(c) * seg.h_m;
            js.column_mut(dl + j).axpy(seg.w_left, &col, 1.0);
            js.column_mut(dr + j).axpy(seg.w_right, &col, 1.0);
        }
    }

    /// `K q` for the strain coordinates `q` (length [`Model::n_strain_dof`]),
    /// on K's pattern: three products a column instead of n (a dense
    /// product cost the 246-coordinate tendon robot 7 % of its solve).
    /// Each row sums its columns in the same order as the dense product.
    pub fn stiffness_times(&self, q: &[f64]) -> DVector<f64> {
        let ns = self.n_strain_dof();
        let mut y = DVector::zeros(ns);
        let (out, k) = (y.as_mut_slice(), self.stiffness.as_slice());
        self.for_each_stiffness_entry(|c, r| out[r] += k[c * ns + r] * q[c]);
        y
    }

    /// `h[..ns, ..ns] += scale K` on K's pattern.
    pub fn add_stiffness(&self, h: &mut DMatrix<f64>, scale: f64) {
        let (ns, n) = (self.n_strain_dof(), h.nrows());
        let (target, k) = (h.as_mut_slice(), self.stiffness.as_slice());
        self.for_each_stiffness_entry(|c, r| target[c * n + r] += k[c * ns + r] * scale);
    }

    /// Calls `entry(column, row)` for each of K's non-zeros, column by
    /// column and down each column: the same component at the node
    /// before, at, and after (at only, for constant strains). Written out,
    /// not as an iterator: a filtered iterator of the rows was 7 % of
    /// Table II's residual.
    #[inline]
    fn for_each_stiffness_entry(&self, mut entry: impl FnMut(usize, usize)) {
        let (ns, m) = (self.n_strain_dof(), self.stiffness_band());
        for c in 0..ns {
            if m > 0 && c >= m {
                entry(c, c - m);
            }
            entry(c, c);
            if m > 0 && c + m < ns {
                entry(c, c + m);
            }
        }
    }

    /// How far from the diagonal K's non-zeros lie: a node's coordinates
    /// (piecewise linear strains couple neighbouring nodes), 0 for constant
    /// strains (K is diagonal).
    fn stiffness_band(&self) -> usize {
        match self.rod.strain_basis {
            StrainBasis::Constant => 0,
            StrainBasis::Linear => self.free.len(),
        }
    }

    /// Spatial Jacobian (6 x n) of joint `j`: its section's first joint's,
    /// plus the segments between.
    pub fn joint_jacobian(&self, kin: &Kinematics, j: usize) -> Matrix6xX<f64> {
        self.joint_jacobian_cow(kin, j).into_owned()
    }

    /// [`Model::joint_jacobian`], borrowed when it is kept.
    pub fn joint_jacobian_cow<'k>(&self, kin: &'k Kinematics, j: usize) -> std::borrow::Cow<'k, Matrix6xX<f64>> {
        let (js, first) = kin.anchor(j);
        if first == j {
            return std::borrow::Cow::Borrowed(js);
        }
        let mut js = js.clone();
        for k in first..j {
            self.add_segment_columns(k, &kin.segment_map[k], &mut js);
        }
        std::borrow::Cow::Owned(js)
    }

    /// The material point at `s_m` inside segment `k` (0 <= s_m <= h_k),
    /// with its tangent map when `with_map` (Jacobians, tangents).
    pub fn interior_point(&self, frames: &Frames, k: usize, s_m: f64, with_map: bool) -> InteriorPoint {
        let xi = frames.psi[k] / self.segments[k].h_m;
        let g = frames.joints[k];
        let local = xi * s_m;
        let map = with_map.then(|| lie::adjoint_times_lower(&g, &lie::dexp(&local)));
        InteriorPoint { segment: k, s_m, pose: g.compose(&lie::exp(&local)), local, map }
    }

    /// Spatial Jacobian (6 x n) of an interior point's frame.
    pub fn interior_jacobian(&self, kin: &Kinematics, p: &InteriorPoint) -> Matrix6xX<f64> {
        let mut js = self.joint_jacobian(kin, p.segment);
        let seg = &self.segments[p.segment];
        let [dl, dr] = seg.dof;
        let map = p.map.unwrap_or_else(|| lie::adjoint_times_lower(&kin.frames.joints[p.segment], &lie::dexp(&p.local)));
        for (j, &c) in self.free.iter().enumerate() {
            let col = map.column(c) * p.s_m;
            js.column_mut(dl + j).axpy(seg.w_left, &col, 1.0);
            js.column_mut(dr + j).axpy(seg.w_right, &col, 1.0);
        }
        js
    }

    /// Body Jacobians of every joint by the exact segment update of the PLS
    /// paper (eq. 25): `J_{k+1} = Ad^{-1}_{exp psi} J_k + T(psi) h Phi_k`.
    pub fn body_jacobians(&self, q: &DVector<f64>) -> Vec<Matrix6xX<f64>> {
        let frames = self.frames(q);
        let n = self.n_dof();
        let mut out = Vec::with_capacity(self.n_joints());
        let mut jb = Matrix6xX::zeros(n);
        if let Some(o) = self.base_dof() {
            jb.columns_mut(o, 6).copy_from(&lie::tangent(&self.base_twist(q)));
        }
        out.push(jb.clone());
        for (k, seg) in self.segments.iter().enumerate() {
            let psi = &frames.psi[k];
            jb = lie::exp(psi).adjoint_inv() * jb;
            let t = lie::tangent(psi);
            let [dl, dr] = seg.dof;
            for (j, &c) in self.free.iter().enumerate() {
                let col = t.column(c) * seg.h_m;
                jb.column_mut(dl + j).axpy(seg.w_left, &col, 1.0);
                jb.column_mut(dr + j).axpy(seg.w_right, &col, 1.0);
            }
            out.push(jb.clone());
        }
        out
    }

    /// Total mass \[kg\].
    pub fn mass_kg(&self) -> f64 {
        self.joint_mass_kg.iter().sum()
    }
}

/// Jacobian (3 x n) of a point rigidly attached to a joint frame, at world
/// position `p`, from the joint's spatial Jacobian: `dp = (J_v - p~ J_w) dq`.
pub fn point_jacobian(spatial: &Matrix6xX<f64>, p: &Vec3) -> nalgebra::Matrix3xX<f64> {
    let jw = spatial.fixed_rows::<3>(0);
    let jv = spatial.fixed_rows::<3>(3);
    jv - lie::skew(p) * jw
}

#[cfg(test)]
mod stiffness_tests {
    use super::*;
    use crate::{Material, StrainModes};

    /// The patterned product and sum equal the dense ones bit for bit, and
    /// the stiffness has no non-zero off its pattern: linear strains with
    /// all six and with two free components, constant strains, a tapered
    /// rod of sub-segments.
    #[test]
    fn the_stiffness_pattern_holds_every_non_zero() {
        let mut rod = Rod::uniform_cylinder(0.5, 0.01, Material::from_poisson(1e6, 0.45, 1100.0), 7);
        rod.subsegments_per_section = 3;
        let constant = Rod { strain_basis: StrainBasis::Constant, ..rod.clone() };
        for rod in [rod.clone(), rod.with_modes(StrainModes::EULER_BERNOULLI), constant] {
            let model = Model::new(&rod, &[0.13]);
            let ns = model.n_strain_dof();
            let q = DVector::from_fn(ns, |i, _| ((i * 7919) % 13) as f64 / 13.0 - 0.4);
            let dense = &model.stiffness * &q;
            let patterned = model.stiffness_times(q.as_slice());
            assert_eq!(dense, patterned, "{:?}", rod.strain_basis);
            let mut sum = DMatrix::zeros(ns, ns);
            model.add_stiffness(&mut sum, 1.0);
            assert_eq!(sum, model.stiffness, "every non-zero on the pattern");
            if rod.strain_basis == StrainBasis::Linear {
                assert!(model.stiffness.iter().filter(|v| **v != 0.0).count() > ns, "off-diagonal non-zeros for the test to mean something");
            }
        }
    }
}
