//! `lie`: the SE(3) algebra under every rodlab model (record -> track ->
//! observe -> identify -> simulate -> report all go through rod poses).
//!
//! Conventions (science page §1): twists, strains and wrenches are 6-vectors
//! `[angular; linear]`; `hat(xi) = [[K~, Q], [0, 0]]`;
//! `ad_xi = [[K~, 0], [Q~, K~]]`; `Ad_g = [[R, 0], [p~ R, R]]`.
//!
//! The exponential is exact (closed form with series near zero rotation), and
//! so are its tangent maps `dexp_psi = sum ad_psi^k / (k+1)!` and
//! `T(psi) = dexp_{-psi}`; the derivative of `dexp^T w` with respect to `psi`
//! is exact too (dual numbers over the same closed form), which the rod's
//! Newton solver needs for a consistent Hessian.

pub mod scalar;
pub mod series;
pub mod trajectory;

use nalgebra::{Matrix3, Matrix6, UnitQuaternion, Vector3, Vector6};
pub use scalar::{Dual, Real};

pub type Vec3 = Vector3<f64>;
pub type Mat3 = Matrix3<f64>;
/// Twist, strain or wrench `[angular; linear]`.
pub type Vec6 = Vector6<f64>;
pub type Mat6 = Matrix6<f64>;

/// Skew-symmetric matrix `a~` with `a~ b = a x b`.
#[inline]
pub fn skew(a: &Vec3) -> Mat3 {
    Mat3::new(0.0, -a.z, a.y, a.z, 0.0, -a.x, -a.y, a.x, 0.0)
}

/// Inverse of [`skew`] (reads the skew part of any 3x3 matrix).
#[inline]
pub fn unskew(m: &Mat3) -> Vec3 {
    Vec3::new(0.5 * (m[(2, 1)] - m[(1, 2)]), 0.5 * (m[(0, 2)] - m[(2, 0)]), 0.5 * (m[(1, 0)] - m[(0, 1)]))
}

#[inline]
pub fn angular(v: &Vec6) -> Vec3 {
    Vec3::new(v[0], v[1], v[2])
}

#[inline]
pub fn linear(v: &Vec6) -> Vec3 {
    Vec3::new(v[3], v[4], v[5])
}

#[inline]
pub fn stack(a: &Vec3, b: &Vec3) -> Vec6 {
    Vec6::new(a.x, a.y, a.z, b.x, b.y, b.z)
}

/// A rigid transformation `g = (R, p)` in SE(3).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pose {
    pub rot: Mat3,
    pub pos: Vec3,
}

impl Default for Pose {
    fn default() -> Self {
        Self::identity()
    }
}

impl Pose {
    pub fn identity() -> Self {
        Self { rot: Mat3::identity(), pos: Vec3::zeros() }
    }

    pub fn new(rot: Mat3, pos: Vec3) -> Self {
        Self { rot, pos }
    }

    /// `self * other`.
    #[inline]
    pub fn compose(&self, other: &Pose) -> Pose {
        Pose { rot: self.rot * other.rot, pos: self.pos + self.rot * other.pos }
    }

    pub fn inverse(&self) -> Pose {
        let rt = self.rot.transpose();
        Pose { rot: rt, pos: -(rt * self.pos) }
    }

    /// Maps a point given in this frame to the parent frame.
    #[inline]
    pub fn transform_point(&self, x: &Vec3) -> Vec3 {
        self.pos + self.rot * x
    }

    /// `Ad_g = [[R, 0], [p~ R, R]]`.
    pub fn adjoint(&self) -> Mat6 {
        let mut m = Mat6::zeros();
        let pr = skew(&self.pos) * self.rot;
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(3, 0).copy_from(&pr);
        m
    }

    /// `Ad_g^{-1} = Ad_{g^{-1}}`.
    pub fn adjoint_inv(&self) -> Mat6 {
        self.inverse().adjoint()
    }

    /// `Ad_g^T w` for a wrench `w` given about the parent origin: the same
    /// wrench expressed in this frame about this frame's origin.
    #[inline]
    pub fn coadjoint_apply(&self, w: &Vec6) -> Vec6 {
        let m = angular(w);
        let f = linear(w);
        let rt = self.rot.transpose();
        stack(&(rt * (m - self.pos.cross(&f))), &(rt * f))
    }

    /// Unit quaternion of the rotation (w, x, y, z).
    pub fn quaternion(&self) -> UnitQuaternion<f64> {
        // Shepperd's closed form: `UnitQuaternion::from_matrix` iterates from
        // the identity and returns it for half-turns.
        UnitQuaternion::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(self.rot))
    }

    /// Rotation from roll-pitch-yaw (radians, R = Rz(yaw) Ry(pitch) Rx(roll)).
    pub fn from_rpy(roll: f64, pitch: f64, yaw: f64, pos: Vec3) -> Pose {
        let q = UnitQuaternion::from_euler_angles(roll, pitch, yaw);
        Pose { rot: *q.to_rotation_matrix().matrix(), pos }
    }
}

/// `ad_xi = [[K~, 0], [Q~, K~]]`.
pub fn ad(xi: &Vec6) -> Mat6 {
    let k = skew(&angular(xi));
    let q = skew(&linear(xi));
    let mut m = Mat6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&k);
    m.fixed_view_mut::<3, 3>(3, 3).copy_from(&k);
    m.fixed_view_mut::<3, 3>(3, 0).copy_from(&q);
    m
}

/// The matrix `B(w)` with `ad_eta^T w = B(w) eta` for every twist `eta`.
pub fn coad_bar(w: &Vec6) -> Mat6 {
    let m = skew(&angular(w));
    let f = skew(&linear(w));
    let mut b = Mat6::zeros();
    b.fixed_view_mut::<3, 3>(0, 0).copy_from(&m);
    b.fixed_view_mut::<3, 3>(0, 3).copy_from(&f);
    b.fixed_view_mut::<3, 3>(3, 0).copy_from(&f);
    b
}

/// `sin(th)/th`, `(1-cos th)/th^2`, `(th - sin th)/th^3`, series near zero.
fn so3_coeffs(theta: f64) -> (f64, f64, f64) {
    if theta < 0.1 {
        let t = theta * theta;
        // Reciprocals, not divisions: the series is in every exponential.
        let r = |d: f64| t * (1.0 / d);
        let a = 1.0 - r(6.0) * (1.0 - r(20.0) * (1.0 - r(42.0) * (1.0 - r(72.0))));
        let b = 0.5 * (1.0 - r(12.0) * (1.0 - r(30.0) * (1.0 - r(56.0) * (1.0 - r(90.0)))));
        let c = (1.0 - r(20.0) * (1.0 - r(42.0) * (1.0 - r(72.0) * (1.0 - r(110.0))))) * (1.0 / 6.0);
        (a, b, c)
    } else {
        let (s, co) = theta.sin_cos();
        let t = theta * theta;
        (s / theta, (1.0 - co) / t, (theta - s) / (t * theta))
    }
}

/// A pose given by a position and roll-pitch-yaw angles
/// (`R = Rz(yaw) Ry(pitch) Rx(roll)`, as in rod and scene files).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FramePose {
    /// Position \[m\].
    #[serde(default)]
    pub position_m: [f64; 3],
    /// Roll, pitch, yaw \[deg\] (R = Rz(yaw) Ry(pitch) Rx(roll)).
    #[serde(default)]
    pub rpy_deg: [f64; 3],
}

impl FramePose {
    pub fn pose(&self) -> Pose {
        let r = self.rpy_deg.map(f64::to_radians);
        Pose::from_rpy(r[0], r[1], r[2], Vec3::from(self.position_m))
    }

    /// The angles and position of a pose (inverse of [`FramePose::pose`]).
    pub fn from_pose(g: &Pose) -> FramePose {
        let (roll, pitch, yaw) = g.quaternion().euler_angles();
        FramePose { position_m: g.pos.into(), rpy_deg: [roll.to_degrees(), pitch.to_degrees(), yaw.to_degrees()] }
    }

    pub fn finite(&self) -> bool {
        self.position_m.iter().chain(&self.rpy_deg).all(|v| v.is_finite())
    }
}

/// Exact exponential `exp(hat(psi))` (science §1 with h folded into psi).
pub fn exp(psi: &Vec6) -> Pose {
    let k = angular(psi);
    let q = linear(psi);
    let t = k.norm_squared();
    let (a, b, c) = so3_coeffs(t.sqrt());
    // R = I + a K~ + b K~^2 and p = (I + b K~ + c K~^2) q, with
    // K~^2 = k k^T - t I: no 3x3 products.
    let (ak, bkk) = (k * a, k * k.transpose() * b);
    let diagonal = 1.0 - b * t;
    #[rustfmt::skip]
    let rot = Mat3::new(
        diagonal + bkk[(0, 0)], bkk[(0, 1)] - ak.z, bkk[(0, 2)] + ak.y,
        bkk[(1, 0)] + ak.z, diagonal + bkk[(1, 1)], bkk[(1, 2)] - ak.x,
        bkk[(2, 0)] - ak.y, bkk[(2, 1)] + ak.x, diagonal + bkk[(2, 2)],
    );
    let kq = k.cross(&q);
    Pose { rot, pos: q + kq * b + k.cross(&kq) * c }
}

/// Rotation vector of a rotation (angle in \[0, pi\]): accurate for small
/// angles (the sine from the skew part, the angle by asin), the general
/// logarithm otherwise.
pub fn so3_log(r: &Mat3) -> Vec3 {
    let cos = ((r.trace() - 1.0) * 0.5).clamp(-1.0, 1.0);
    let skew_part = unskew(r);
    if cos > 0.99 {
        let s2 = skew_part.norm_squared();
        if s2 < 1e-4 {
            // asin(s)/s by its series, to round-off below s = 0.01 (the
            // next term is under 3e-22): a step's turn of an inertia
            // point is this small, and asin cost a tenth of a dynamic
            // residual.
            return skew_part * (1.0 + s2 * (1.0 / 6.0 + s2 * (3.0 / 40.0 + s2 * (5.0 / 112.0 + s2 * (35.0 / 1152.0)))));
        }
        let s = s2.sqrt();
        return skew_part * (s.asin() / s);
    }
    angular(&log(&Pose { rot: *r, pos: Vec3::zeros() }))
}

/// `Jr^{-1}(phi)` of SO(3): the rate of `log(R)` per body angular velocity
/// of `R = exp(phi)` (`Jr^{-1}(-phi)` is the left one, per world angular
/// velocity).
pub fn so3_right_jacobian_inverse(phi: &Vec3) -> Mat3 {
    let th = phi.norm();
    let px = skew(phi);
    let c = if th < 1e-4 { 1.0 / 12.0 + th * th / 720.0 } else { (1.0 / (th * th)) - (1.0 + th.cos()) / (2.0 * th * th.sin()) };
    Mat3::identity() + px * 0.5 + px * px * c
}

/// The mean of nearby poses (a still body seen with noise): the mean
/// position, and the mean rotation vector about the middle pose's rotation.
/// Panics on an empty list.
pub fn mean_pose<'a>(poses: impl ExactSizeIterator<Item = &'a Pose> + Clone) -> Pose {
    let n = poses.len();
    assert!(n > 0, "mean of no poses");
    let mid = poses.clone().nth(n / 2).expect("middle").rot;
    let pos = poses.clone().map(|p| p.pos).sum::<Vec3>() / n as f64;
    let turn = poses.map(|p| so3_log(&(mid.transpose() * p.rot))).sum::<Vec3>() / n as f64;
    Pose { rot: mid * exp(&stack(&turn, &Vec3::zeros())).rot, pos }
}

/// Logarithm: the twist `psi` with `exp(psi) = g`, rotation angle in \[0, pi\].
pub fn log(g: &Pose) -> Vec6 {
    let r = &g.rot;
    let cos_th = ((r.trace() - 1.0) * 0.5).clamp(-1.0, 1.0);
    let theta = cos_th.acos();
    let w = if theta < 1e-6 {
        // R ~ I + w~ + w~^2/2: the skew part is w to second order.
        unskew(r)
    } else if std::f64::consts::PI - theta < 1e-4 {
        // Near pi the skew part vanishes: read the axis from R + I = 2 n n^T (approx).
        let b = (r + Mat3::identity()) * 0.5;
        let i = (0..3).max_by(|&i, &j| b[(i, i)].total_cmp(&b[(j, j)])).unwrap();
        let mut n = b.column(i).into_owned() / b[(i, i)].max(1e-300).sqrt();
        n.normalize_mut();
        // Fix the sign with the (small) skew part.
        if n.dot(&unskew(r)) < 0.0 {
            n = -n;
        }
        n * theta
    } else {
        unskew(r) * (theta / theta.sin())
    };
    let th = w.norm();
    let wx = skew(&w);
    // V^{-1} = I - w~/2 + (1/th^2)(1 - a/(2b)) w~^2.
    let coef = if th < 1e-4 {
        1.0 / 12.0 + th * th / 720.0
    } else {
        let (a, b, _) = so3_coeffs(th);
        (1.0 - a / (2.0 * b)) / (th * th)
    };
    let vinv = Mat3::identity() - 0.5 * wx + coef * wx * wx;
    stack(&w, &(vinv * g.pos))
}

/// Taylor coefficients in `t` of `a1..a4` (exact rationals rounded; the
/// terms beyond `t^11` are below 1e-23 for `t < 1`).
const DEXP_TAYLOR: [[f64; 12]; 4] = [
    [
        0.5,
        0.0,
        -0.001388888888888889,
        4.96031746031746e-05,
        -8.267195767195768e-07,
        8.35070279514724e-09,
        -5.735372798864862e-11,
        2.867686399432431e-13,
        -1.093344487801036e-15,
        3.288254098649732e-18,
        -8.007112253205516e-21,
        1.6117375710961184e-23,
    ],
    [
        0.16666666666666666,
        0.0,
        -0.0001984126984126984,
        5.5114638447971785e-06,
        -7.515632515632516e-08,
        6.423617534728645e-10,
        -3.823581865909908e-12,
        1.6868743526073125e-14,
        -5.75444467263703e-17,
        1.565835285071301e-19,
        -3.4813531535676156e-22,
        6.446950284384473e-25,
    ],
    [
        0.041666666666666664,
        -0.002777777777777778,
        7.440476190476191e-05,
        -1.1022927689594355e-06,
        1.043837849393405e-08,
        -6.882447358637835e-11,
        3.3456341326711696e-13,
        -1.249536557486898e-15,
        3.6992858609809485e-18,
        -8.896791392450573e-21,
        1.77291132820573e-23,
        -2.975515515869757e-26,
    ],
    [
        0.008333333333333333,
        -0.0003968253968253968,
        8.267195767195768e-06,
        -1.0020843354176688e-07,
        8.029521918410807e-10,
        -4.58829823909189e-12,
        1.9680200780418645e-14,
        -6.576508197299464e-17,
        1.7615646957052136e-19,
        -3.868170170630684e-22,
        7.091645312822921e-25,
        -1.1020427836554655e-27,
    ],
];

/// Coefficients `a1..a4` of `dexp_psi = I + a1 ad + a2 ad^2 + a3 ad^3 + a4 ad^4`
/// as functions of `t = |K|^2` (generic so dual numbers differentiate it).
pub fn dexp_coeffs<S: Real>(t: S) -> [S; 4] {
    if t.value() < 1.0 {
        // Power series sum_m ad^m/(m+1)!, reduced by the minimal polynomial
        // ad^5 = -2 t ad^3 - t^2 ad, summed once into polynomials in t.
        dexp_taylor(t, 11)
    } else {
        let th = t.sqrt();
        let (s, co) = (th.sin(), th.cos());
        let two = S::from_f64(2.0);
        let th2 = t;
        let th3 = th2 * th;
        let th4 = th2 * th2;
        let th5 = th4 * th;
        let a1 = (S::from_f64(4.0) - S::from_f64(4.0) * co - th * s) / (two * th2);
        let a2 = (S::from_f64(4.0) * th - S::from_f64(5.0) * s + th * co) / (two * th3);
        let a3 = (two - two * co - th * s) / (two * th4);
        let a4 = (two * th - S::from_f64(3.0) * s + th * co) / (two * th5);
        [a1, a2, a3, a4]
    }
}

/// Degrees of [`DEXP_TAYLOR`]'s polynomials whose dropped terms sum to
/// less than 2^-56 of each leading coefficient (an eighth of its last
/// bit) for every `t` up to the bound (computed from the coefficients and
/// rounded down); beyond the last bound, every term.
const DEXP_TAYLOR_DEGREE: [(f64, usize); 6] = [(5.0e-5, 2), (1.7e-3, 3), (1.5e-2, 4), (7.0e-2, 5), (0.21, 6), (0.53, 7)];

/// [`dexp_coeffs`] at a plain `t`, its series summed only to the degree
/// `t` needs: a sub-segment's `|K|^2` is mostly far below 1 (a tendon
/// robot's of 640 sub-segments about 1e-5: three terms instead of twelve,
/// the residual's backward passes spent a tenth of a solve in them). The
/// same values to round-off; derivatives by dual numbers keep every term
/// ([`dexp_coeffs`]), as a truncated series' derivative loses accuracy.
pub fn dexp_coeffs_of(t: f64) -> [f64; 4] {
    if t >= 1.0 {
        return dexp_coeffs(t);
    }
    let degree = DEXP_TAYLOR_DEGREE.iter().find(|(bound, _)| t < *bound).map_or(11, |(_, d)| *d);
    dexp_taylor(t, degree)
}

/// [`DEXP_TAYLOR`] by power: the four polynomials' coefficients of each
/// power of `t` side by side.
const DEXP_TAYLOR_BY_POWER: [[f64; 4]; 12] = {
    let mut out = [[0.0; 4]; 12];
    let mut i = 0;
    while i < 4 {
        let mut k = 0;
        while k < 12 {
            out[k][i] = DEXP_TAYLOR[i][k];
            k += 1;
        }
        i += 1;
    }
    out
};

/// The four polynomials of [`DEXP_TAYLOR`] to `degree` at `t` by Horner's
/// rule, the four stepped together: each step of one waits on its last,
/// so one after another they took four times as long (a twentieth of the
/// tangent of a rod of 640 sub-segments, by dual numbers).
fn dexp_taylor<S: Real>(t: S, degree: usize) -> [S; 4] {
    let mut acc = DEXP_TAYLOR_BY_POWER[degree].map(S::from_f64);
    for c in DEXP_TAYLOR_BY_POWER[..degree].iter().rev() {
        for (a, &ci) in acc.iter_mut().zip(c) {
            *a = *a * t + S::from_f64(ci);
        }
    }
    acc
}

/// `dexp_psi = sum_k ad_psi^k/(k+1)! = int_0^1 exp(s ad_psi) ds`:
/// `exp(psi + d) = exp(dexp_psi d) exp(psi)` to first order.
///
/// Computed in 3x3 blocks: `ad^n = [[K~^n, 0], [sum_i K~^i Q~ K~^(n-1-i), K~^n]]`,
/// so `dexp = [[D, 0], [C, D]]` with `D = sum a_n K~^n` and `C` the
/// corresponding sums of the mixed products.
pub fn dexp(psi: &Vec6) -> Mat6 {
    let k = angular(psi);
    let t = k.norm_squared();
    let [a1, a2, a3, a4] = dexp_coeffs_of(t);
    let kx = skew(&k);
    let qx = skew(&linear(psi));
    let k2 = kx * kx;
    let kq = kx * qx;
    let qk = qx * kx;
    let kqk = kq * kx;
    // K~^3 = -t K~ folds the fourth powers into lower ones.
    let d = Mat3::identity() + kx * (a1 - t * a3) + k2 * (a2 - t * a4);
    let c = qx * a1 + (kq + qk) * (a2 - t * a4) + (kx * kq + kqk + qk * kx) * a3 + (kx * kqk + kqk * kx) * a4;
    let mut m = Mat6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&d);
    m.fixed_view_mut::<3, 3>(3, 3).copy_from(&d);
    m.fixed_view_mut::<3, 3>(3, 0).copy_from(&c);
    m
}

/// `Ad_g M` for a block lower-triangular `M = [[D, 0], [C, E]]` (such as
/// `dexp`), in 3x3 blocks.
pub fn adjoint_times_lower(g: &Pose, m: &Mat6) -> Mat6 {
    let d = m.fixed_view::<3, 3>(0, 0).into_owned();
    let c = m.fixed_view::<3, 3>(3, 0).into_owned();
    let e = m.fixed_view::<3, 3>(3, 3).into_owned();
    let rd = g.rot * d;
    let mut out = Mat6::zeros();
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&rd);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(skew(&g.pos) * rd + g.rot * c));
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(g.rot * e));
    out
}

/// `T(psi) = int_0^1 exp(-s ad_psi) ds = dexp_{-psi}`:
/// `exp(psi + d) = exp(psi) exp(T(psi) d)` to first order.
pub fn tangent(psi: &Vec6) -> Mat6 {
    dexp(&(-psi))
}

type V3<S> = [S; 3];

#[inline]
fn cross<S: Real>(a: &V3<S>, b: &V3<S>) -> V3<S> {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

#[inline]
fn add3<S: Real>(a: &V3<S>, b: &V3<S>) -> V3<S> {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `ad_psi^T w = [m x k + f x q; f x k]` for `psi = [k; q]`, `w = [m; f]`.
#[inline]
fn ad_transpose_apply<S: Real>(k: &V3<S>, q: &V3<S>, m: &V3<S>, f: &V3<S>) -> (V3<S>, V3<S>) {
    (add3(&cross(m, k), &cross(f, q)), cross(f, k))
}

/// `dexp_psi^T w` given the coefficients (generic for dual numbers).
fn dexp_transpose_apply_with<S: Real>(coeffs: &[S; 4], k: &V3<S>, q: &V3<S>, w: &[S; 6]) -> [S; 6] {
    let mut m = [w[0], w[1], w[2]];
    let mut f = [w[3], w[4], w[5]];
    let mut out = *w;
    for a in coeffs {
        let (m2, f2) = ad_transpose_apply(k, q, &m, &f);
        m = m2;
        f = f2;
        for i in 0..3 {
            out[i] = out[i] + *a * m[i];
            out[i + 3] = out[i + 3] + *a * f[i];
        }
    }
    out
}

/// `dexp_psi^T w`.
pub fn dexp_transpose_apply(psi: &Vec6, w: &Vec6) -> Vec6 {
    let k = [psi[0], psi[1], psi[2]];
    let q = [psi[3], psi[4], psi[5]];
    let c = dexp_coeffs_of(k[0] * k[0] + k[1] * k[1] + k[2] * k[2]);
    let ws: [f64; 6] = (*w).into();
    Vec6::from(dexp_transpose_apply_with(&c, &k, &q, &ws))
}

/// The weights `c_i` of `dexp_{s xi}^T w = sum_i c_i (ad_xi^T)^i w`
/// (`i` = 0..4): `c_0 = 1`, `c_i = a_i(s^2 |K|^2) s^i` with `a_i` of
/// [`dexp_coeffs_of`]. Wrenches at several points along one constant-strain
/// segment (`s` varying, `xi` fixed) can be weighted by these and summed
/// first, then pulled back once by [`ad_transpose_horner`].
pub fn dexp_transpose_weights(xi: &Vec6, s: f64) -> [f64; 5] {
    let [a1, a2, a3, a4] = dexp_coeffs_of(s * s * angular(xi).norm_squared());
    [1.0, a1 * s, a2 * s * s, a3 * s * s * s, a4 * (s * s) * (s * s)]
}

/// `sum_i (ad_xi^T)^i u_i` by Horner's rule: with `u_i = sum_p c_{p,i} w_p`
/// ([`dexp_transpose_weights`] of each point p), the sum of
/// `dexp_{s_p xi}^T w_p` over the points in four products instead of four
/// per point.
pub fn ad_transpose_horner(xi: &Vec6, u: &[Vec6; 5]) -> Vec6 {
    let k = [xi[0], xi[1], xi[2]];
    let q = [xi[3], xi[4], xi[5]];
    let mut acc = u[4];
    for ui in u[..4].iter().rev() {
        let (m, f) = ad_transpose_apply(&k, &q, &[acc[0], acc[1], acc[2]], &[acc[3], acc[4], acc[5]]);
        acc = ui + Vec6::new(m[0], m[1], m[2], f[0], f[1], f[2]);
    }
    acc
}

/// `Z = d(dexp_psi^T w)/d psi` (6x6), exact.
///
/// With `A = ad_psi`, `dexp_psi^T w = sum_i a_i(t) (A^T)^i w` (`t = |K|^2`,
/// `a_0 = 1`), so column c of Z is `sum_i a_i'(t) dt/dpsi_c v_i` plus
/// `sum_i a_i sum_j (A^T)^j ad_{e_c}^T v_{i-1-j}` with `v_i = (A^T)^i w`;
/// `ad_{e_c}^T u = B(u) e_c`, so the second part is a Horner sum of 6x6
/// matrices `C_j = sum_m a_{m+1+j} B(v_m)`. The coefficients' derivatives
/// come from dual numbers.
pub fn dexp_transpose_jacobian(psi: &Vec6, w: &Vec6) -> Mat6 {
    let k = angular(psi);
    let q = linear(psi);
    let t = k.norm_squared();
    let ct = dexp_coeffs(Dual::new(t, 1.0));
    let a = [1.0, ct[0].re, ct[1].re, ct[2].re, ct[3].re];
    let da = [0.0, ct[0].du, ct[1].du, ct[2].du, ct[3].du];
    // ad_psi^T [m; f] = [m x k + f x q; f x k].
    let adt = |v: &Vec6| -> Vec6 {
        let m = angular(v);
        let f = linear(v);
        stack(&(m.cross(&k) + f.cross(&q)), &f.cross(&k))
    };
    let mut v = [*w; 5];
    for i in 1..5 {
        v[i] = adt(&v[i - 1]);
    }
    // Coefficient part: sum_i a_i'(t) v_i (2 K^T, 0).
    let mut dv = Vec6::zeros();
    for i in 1..5 {
        dv += v[i] * da[i];
    }
    let mut z = Mat6::zeros();
    for c in 0..3 {
        z.set_column(c, &(dv * (2.0 * k[c])));
    }
    // Horner: C_0 + A^T (C_1 + A^T (C_2 + A^T C_3)), A^T applied by
    // columns; B is linear, so C_j = B(sum_m a_{m+1+j} v_m).
    let c_j = |j: usize| -> Mat6 {
        let mut u = Vec6::zeros();
        for m in 0..=(3 - j) {
            u.axpy(a[m + 1 + j], &v[m], 1.0);
        }
        coad_bar(&u)
    };
    let mut h = c_j(3);
    for j in (0..3).rev() {
        let mut next = c_j(j);
        for col in 0..6 {
            let applied = adt(&h.column(col).into_owned());
            let mut dst = next.column_mut(col);
            dst += applied;
        }
        h = next;
    }
    z + h
}

/// The same derivative by dual numbers over the closed form (reference for
/// the tests of [`dexp_transpose_jacobian`]).
pub fn dexp_transpose_jacobian_dual(psi: &Vec6, w: &Vec6) -> Mat6 {
    let t = psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2];
    // Coefficients and their derivatives with respect to t, once.
    let ct = dexp_coeffs(Dual::new(t, 1.0));
    let wd: [Dual; 6] = std::array::from_fn(|i| Dual::constant(w[i]));
    let mut z = Mat6::zeros();
    for c in 0..6 {
        let dpsi = |i: usize| Dual::new(psi[i], if i == c { 1.0 } else { 0.0 });
        let k = [dpsi(0), dpsi(1), dpsi(2)];
        let q = [dpsi(3), dpsi(4), dpsi(5)];
        let dt = if c < 3 { 2.0 * psi[c] } else { 0.0 };
        let coeffs: [Dual; 4] = std::array::from_fn(|i| Dual::new(ct[i].re, ct[i].du * dt));
        let out = dexp_transpose_apply_with(&coeffs, &k, &q, &wd);
        for r in 0..6 {
            z[(r, c)] = out[r].du;
        }
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The rotation vector comes back from its rotation, from a
    /// micro-radian to near a half-turn, on both branches.
    #[test]
    fn so3_log_inverts_the_exponential() {
        for angle in [1e-9, 1e-6, 0.01, 0.14, 0.5, 1.5, 3.0] {
            let v = Vec3::new(0.3, -0.5, 0.8).normalize() * angle;
            let r = exp(&stack(&v, &Vec3::zeros())).rot;
            assert!((so3_log(&r) - v).norm() <= 1e-12 * angle.max(1e-3), "{angle}: {} vs {v}", so3_log(&r));
        }
    }

    /// Weighting wrenches along a segment and pulling their sum back once
    /// is the sum of each point's `dexp^T`, for bent, twisted and stretched
    /// segments of every size the series covers.
    #[test]
    fn horner_sum_is_the_sum_of_dexp_transposes() {
        let mut rng = StdRng::seed_from_u64(7);
        for scale in [1e-6, 1e-3, 0.1, 0.5, 0.9] {
            let xi = Vec6::from_fn(|_, _| rng.gen_range(-1.0..1.0)) * scale;
            let points: Vec<(f64, Vec6)> = (0..4).map(|_| (rng.gen_range(0.0..1.0), Vec6::from_fn(|_, _| rng.gen_range(-1.0..1.0)))).collect();
            let mut u = [Vec6::zeros(); 5];
            let mut each = Vec6::zeros();
            for (s, w) in &points {
                for (ui, c) in u.iter_mut().zip(dexp_transpose_weights(&xi, *s)) {
                    *ui += w * c;
                }
                each += dexp_transpose_apply(&(xi * *s), w);
            }
            let summed = ad_transpose_horner(&xi, &u);
            assert!((summed - each).norm() <= 1e-14 * each.norm(), "scale {scale}: {summed} vs {each}");
        }
    }

    /// Below a sine of 0.01 the angle comes from asin's series: the same
    /// as asin to round-off, across the branch's whole range and at its edge.
    #[test]
    fn so3_log_series_is_asin_to_round_off() {
        for k in 0..=1000 {
            let s = 0.01 * k as f64 / 1000.0 * (1.0 - 1e-12);
            if s == 0.0 {
                continue;
            }
            // A rotation whose skew part has length s: angle asin(s).
            let angle = s.asin();
            let v = Vec3::new(0.3, -0.5, 0.8).normalize() * angle;
            let r = exp(&stack(&v, &Vec3::zeros())).rot;
            let exact = unskew(&r) * (unskew(&r).norm().asin() / unskew(&r).norm());
            assert!((so3_log(&r) - exact).norm() <= 4.0 * f64::EPSILON * angle, "s {s}: {} vs {exact}", so3_log(&r));
        }
    }

    #[test]
    fn frame_pose_round_trips_half_turns_and_random_rotations() {
        // Half-turns (a camera facing a board, a board seen from behind)
        // once came back as the identity.
        let mut rotations: Vec<Mat3> = vec![
            Mat3::from_columns(&[Vec3::x(), -Vec3::y(), -Vec3::z()]),
            Mat3::from_columns(&[-Vec3::x(), Vec3::z(), Vec3::y()]),
            Mat3::from_columns(&[-Vec3::x(), -Vec3::y(), Vec3::z()]),
        ];
        let mut rng = StdRng::seed_from_u64(5);
        rotations.extend((0..50).map(|_| exp(&random_twist(&mut rng, 3.0)).rot));
        for rot in rotations {
            let g = Pose { rot, pos: Vec3::new(0.1, -0.2, 0.3) };
            let back = FramePose::from_pose(&g).pose();
            assert!((back.rot - g.rot).norm() < 1e-9, "{} vs {}", back.rot, g.rot);
            assert!((back.pos - g.pos).norm() < 1e-12);
        }
    }

    fn random_twist(rng: &mut StdRng, ang_scale: f64) -> Vec6 {
        Vec6::from_fn(|i, _| rng.gen_range(-1.0..1.0) * if i < 3 { ang_scale } else { 1.0 })
    }

    fn hat4(xi: &Vec6) -> nalgebra::Matrix4<f64> {
        let mut m = nalgebra::Matrix4::zeros();
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&skew(&angular(xi)));
        m.fixed_view_mut::<3, 1>(0, 3).copy_from(&linear(xi));
        m
    }

    fn to4(g: &Pose) -> nalgebra::Matrix4<f64> {
        let mut m = nalgebra::Matrix4::identity();
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&g.rot);
        m.fixed_view_mut::<3, 1>(0, 3).copy_from(&g.pos);
        m
    }

    fn vee4(m: &nalgebra::Matrix4<f64>) -> Vec6 {
        let r = m.fixed_view::<3, 3>(0, 0).into_owned();
        stack(&unskew(&r), &m.fixed_view::<3, 1>(0, 3).into_owned())
    }

    fn rel(a: &Mat6, b: &Mat6) -> f64 {
        (a - b).norm() / b.norm().max(1e-300)
    }

    const SCALES: [f64; 5] = [0.0, 1e-9, 1e-4, 0.3, 2.5];

    #[test]
    fn exp_matches_matrix_exponential_series() {
        let mut rng = StdRng::seed_from_u64(1);
        for &s in &SCALES {
            for _ in 0..20 {
                let psi = random_twist(&mut rng, s);
                let g = exp(&psi);
                // Scaling and squaring of the 4x4 matrix series, independent of the closed form.
                let a = hat4(&psi) / 1024.0;
                let mut e = nalgebra::Matrix4::identity();
                let mut term = nalgebra::Matrix4::identity();
                for k in 1..20 {
                    term = term * a / k as f64;
                    e += term;
                }
                for _ in 0..10 {
                    e = e * e;
                }
                assert!((to4(&g) - e).norm() < 1e-12, "scale {s}: {}", (to4(&g) - e).norm());
                assert!((g.rot.transpose() * g.rot - Mat3::identity()).norm() < 1e-14);
            }
        }
    }

    #[test]
    fn exp_log_round_trip() {
        let mut rng = StdRng::seed_from_u64(2);
        for &s in &[0.0, 1e-10, 1e-5, 0.5, 1.7] {
            for _ in 0..50 {
                let psi = random_twist(&mut rng, s);
                let back = log(&exp(&psi));
                assert!((back - psi).norm() < 1e-10 * (1.0 + psi.norm()), "{psi} -> {back}");
            }
        }
        // Near pi.
        let psi = Vec6::new(0.0, 0.0, std::f64::consts::PI - 1e-7, 0.3, -0.2, 0.1);
        let g = exp(&psi);
        let back = log(&g);
        assert!((to4(&exp(&back)) - to4(&g)).norm() < 1e-6);
    }

    #[test]
    fn adjoint_identities() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..20 {
            let g = exp(&random_twist(&mut rng, 1.0));
            let h = exp(&random_twist(&mut rng, 1.0));
            let xi = random_twist(&mut rng, 1.0);
            let eta = random_twist(&mut rng, 1.0);
            // Ad_g xi = vee(g hat(xi) g^{-1}).
            let lhs = g.adjoint() * xi;
            let rhs = vee4(&(to4(&g) * hat4(&xi) * to4(&g.inverse())));
            assert!((lhs - rhs).norm() < 1e-12);
            // Ad_{gh} = Ad_g Ad_h, Ad_g^{-1} = Ad_{g^{-1}}.
            assert!(rel(&g.compose(&h).adjoint(), &(g.adjoint() * h.adjoint())) < 1e-13);
            assert!(rel(&(g.adjoint() * g.adjoint_inv()), &Mat6::identity()) < 1e-13);
            // ad_xi eta = vee([hat xi, hat eta]); ad_xi eta = -ad_eta xi.
            let br = hat4(&xi) * hat4(&eta) - hat4(&eta) * hat4(&xi);
            assert!((ad(&xi) * eta - vee4(&br)).norm() < 1e-13);
            assert!((ad(&xi) * eta + ad(&eta) * xi).norm() < 1e-13);
            // Ad_g ad_xi Ad_g^{-1} = ad_{Ad_g xi}.
            assert!(rel(&(g.adjoint() * ad(&xi) * g.adjoint_inv()), &ad(&(g.adjoint() * xi))) < 1e-12);
            // Ad_{exp psi} = exp(ad_psi): d/ds Ad_{exp(s xi)} = ad_xi Ad at s = 0 (central difference).
            let e = 1e-6;
            let d = (exp(&(xi * e)).adjoint() - exp(&(-xi * e)).adjoint()) / (2.0 * e);
            assert!(rel(&d, &ad(&xi)) < 1e-8);
            // Ad times a block lower-triangular matrix.
            let d = dexp(&xi);
            assert!(rel(&adjoint_times_lower(&g, &d), &(g.adjoint() * d)) < 1e-13);
            // coad_bar: ad_eta^T w = B(w) eta; coadjoint_apply = Ad^T w.
            assert!((ad(&eta).transpose() * xi - coad_bar(&xi) * eta).norm() < 1e-13);
            assert!((g.adjoint().transpose() * xi - g.coadjoint_apply(&xi)).norm() < 1e-13);
        }
    }

    #[test]
    fn dexp_closed_form_matches_series_and_both_branches_meet() {
        let mut rng = StdRng::seed_from_u64(4);
        for &s in &SCALES {
            for _ in 0..20 {
                let psi = random_twist(&mut rng, s);
                let a = ad(&psi);
                let mut sum = Mat6::identity();
                let mut term = Mat6::identity();
                for k in 1..60 {
                    term = term * a / (k as f64 + 1.0);
                    sum += term;
                }
                assert!(rel(&dexp(&psi), &sum) < 1e-12, "scale {s}");
            }
        }
        // The series branch (t < 1) and the closed form (t >= 1) agree at the switch.
        let lo = dexp_coeffs(1.0 - 1e-12);
        let hi = dexp_coeffs(1.0 + 1e-12);
        for i in 0..4 {
            assert!((lo[i] - hi[i]).abs() < 1e-11 * lo[i].abs().max(1e-3), "a{}", i + 1);
        }
    }

    /// The series summed to the degree `t` needs gives every term's values
    /// to a few bits, from 1e-12 to just below the closed form's branch
    /// (each degree's bound and either side of it).
    #[test]
    fn dexp_coefficients_to_the_degree_needed_are_every_terms() {
        let mut ts: Vec<f64> = (0..=240).map(|i| 10f64.powf(-12.0 + 12.0 * i as f64 / 240.0)).filter(|t| *t < 1.0).collect();
        for (bound, _) in DEXP_TAYLOR_DEGREE {
            ts.extend([bound * (1.0 - 1e-12), bound, bound * (1.0 + 1e-12)]);
        }
        ts.extend([0.0, 0.999_999]);
        for t in ts {
            let (fast, every) = (dexp_coeffs_of(t), dexp_coeffs(t));
            for i in 0..4 {
                assert!((fast[i] - every[i]).abs() <= 4.0 * f64::EPSILON * every[i].abs(), "t {t:e}, a{}: {:e} against {:e}", i + 1, fast[i], every[i]);
            }
        }
        assert_eq!(dexp_coeffs_of(2.0), dexp_coeffs(2.0), "the closed form");
        // The four polynomials stepped together are each summed alone, bit
        // for bit, values and derivatives.
        for t in [0.0, 3e-7, 0.02, 0.4, 0.97] {
            let alone: [Dual; 4] = std::array::from_fn(|i| {
                let c = &DEXP_TAYLOR[i];
                (0..11).rev().fold(Dual::constant(c[11]), |acc, k| acc * Dual::new(t, 1.0) + Dual::constant(c[k]))
            });
            let together = dexp_coeffs(Dual::new(t, 1.0));
            for (a, b) in alone.iter().zip(&together) {
                assert!(a.re.to_bits() == b.re.to_bits() && a.du.to_bits() == b.du.to_bits(), "t {t}: {a:?} against {b:?}");
            }
        }
    }

    /// The segment Jacobian update: exp(psi + e d) = exp(psi) exp(e T(psi) d)
    /// and = exp(e dexp(psi) d) exp(psi), checked by central differences.
    #[test]
    fn tangent_maps_match_finite_differences() {
        let mut rng = StdRng::seed_from_u64(5);
        for &s in &SCALES {
            for _ in 0..20 {
                let psi = random_twist(&mut rng, s);
                let d = random_twist(&mut rng, 1.0);
                let e = 1e-6;
                let g = exp(&psi);
                let gp = to4(&exp(&(psi + d * e)));
                let gm = to4(&exp(&(psi - d * e)));
                let dg = (gp - gm) / (2.0 * e);
                let body = vee4(&(to4(&g.inverse()) * dg));
                let spatial = vee4(&(dg * to4(&g.inverse())));
                let tb = tangent(&psi) * d;
                let ts = dexp(&psi) * d;
                assert!((body - tb).norm() <= 1e-6 * tb.norm().max(1e-3), "scale {s}: {body} vs {tb}");
                assert!((spatial - ts).norm() <= 1e-6 * ts.norm().max(1e-3));
            }
        }
    }

    #[test]
    fn dexp_transpose_jacobian_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(6);
        for &s in &[0.0, 1e-7, 0.2, 0.99, 1.01, 3.0] {
            for _ in 0..10 {
                let psi = random_twist(&mut rng, s);
                let w = random_twist(&mut rng, 1.0);
                assert!((dexp_transpose_apply(&psi, &w) - dexp(&psi).transpose() * w).norm() < 1e-13);
                let z = dexp_transpose_jacobian(&psi, &w);
                let zd = dexp_transpose_jacobian_dual(&psi, &w);
                assert!((z - zd).norm() <= 1e-12 * zd.norm().max(1.0), "scale {s}: fast vs dual {}", (z - zd).norm());
                let e = 1e-6;
                let mut fd = Mat6::zeros();
                for c in 0..6 {
                    let mut dp = Vec6::zeros();
                    dp[c] = e;
                    let col = (dexp_transpose_apply(&(psi + dp), &w) - dexp_transpose_apply(&(psi - dp), &w)) / (2.0 * e);
                    fd.set_column(c, &col);
                }
                assert!((z - fd).norm() <= 1e-7 * fd.norm().max(1.0), "scale {s}: {}", (z - fd).norm());
            }
        }
    }
}
