//! Poses over time: a robot's flange log or a prescribed base trajectory,
//! interpolated without ever touching rotation vectors component-wise.
//!
//! UR controllers report orientation as a rotation vector `r = axis * angle`
//! with the angle in [0, pi]; near pi (a tool pointing down, the common
//! case) consecutive samples flip to `-r'` with `|r'| ~ pi`, and a linear
//! blend of the components passes through a rotation 180 degrees away.
//! Here each sample becomes a unit quaternion, signs are aligned with the
//! previous sample (q and -q are the same rotation), and orientations are
//! blended by slerp; positions linearly. Times outside the samples are an
//! error, never an extrapolation.

use crate::{Pose, Vec3};
use nalgebra::{Unit, UnitQuaternion};

/// Rotation matrix of a rotation vector (axis times angle, radians).
pub fn rotation_from_vector(r: &Vec3) -> crate::Mat3 {
    *UnitQuaternion::from_scaled_axis(*r).to_rotation_matrix().matrix()
}

/// A UR pose `[x, y, z, rx, ry, rz]` (metres, rotation vector).
pub fn pose_from_ur(p: &[f64; 6]) -> Pose {
    Pose { rot: rotation_from_vector(&Vec3::new(p[3], p[4], p[5])), pos: Vec3::new(p[0], p[1], p[2]) }
}

/// The UR pose `[x, y, z, rx, ry, rz]` of a pose (rotation angle in [0, pi]).
pub fn pose_to_ur(g: &Pose) -> [f64; 6] {
    let r = g.quaternion().scaled_axis();
    [g.pos.x, g.pos.y, g.pos.z, r.x, r.y, r.z]
}

/// Timed UR poses: (time \[s\], `[x, y, z, rx, ry, rz]`), as RTDE and
/// trajectory files carry them.
pub type UrSamples = Vec<(f64, [f64; 6])>;

/// Why a trajectory could not be built or evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrajectoryError {
    #[error("no samples")]
    Empty,
    #[error("times must increase strictly: sample {index} at t = {t_s} s follows t = {previous_s} s")]
    NotIncreasing { index: usize, t_s: f64, previous_s: f64 },
    #[error("sample {index} is not finite")]
    NotFinite { index: usize },
    #[error("t = {t_s} s lies outside the trajectory's span [{first_s}, {last_s}] s")]
    Outside { t_s: f64, first_s: f64, last_s: f64 },
}

impl fault::Fault for TrajectoryError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

/// Poses at increasing times, interpolated by slerp.
#[derive(Clone, Debug)]
pub struct PoseTrajectory {
    t_s: Vec<f64>,
    pos: Vec<Vec3>,
    rot: Vec<UnitQuaternion<f64>>,
}

impl PoseTrajectory {
    /// From `(t_s, pose)` samples with strictly increasing times.
    pub fn new(samples: impl IntoIterator<Item = (f64, Pose)>) -> Result<PoseTrajectory, TrajectoryError> {
        let mut out = PoseTrajectory { t_s: vec![], pos: vec![], rot: vec![] };
        for (index, (t, g)) in samples.into_iter().enumerate() {
            if !t.is_finite() || g.pos.iter().chain(g.rot.iter()).any(|v| !v.is_finite()) {
                return Err(TrajectoryError::NotFinite { index });
            }
            if let Some(&prev) = out.t_s.last() {
                if t <= prev {
                    return Err(TrajectoryError::NotIncreasing { index, t_s: t, previous_s: prev });
                }
            }
            let mut q = g.quaternion();
            if let Some(prev) = out.rot.last() {
                // Same rotation, nearest quaternion: slerp takes the short way.
                if q.coords.dot(&prev.coords) < 0.0 {
                    q = Unit::new_unchecked(-q.into_inner());
                }
            }
            out.t_s.push(t);
            out.pos.push(g.pos);
            out.rot.push(q);
        }
        if out.t_s.is_empty() {
            return Err(TrajectoryError::Empty);
        }
        Ok(out)
    }

    /// From UR poses `[x, y, z, rx, ry, rz]` at increasing times.
    pub fn from_ur(samples: impl IntoIterator<Item = (f64, [f64; 6])>) -> Result<PoseTrajectory, TrajectoryError> {
        Self::new(samples.into_iter().map(|(t, p)| (t, pose_from_ur(&p))))
    }

    /// First and last sample times.
    pub fn span_s(&self) -> (f64, f64) {
        (self.t_s[0], *self.t_s.last().expect("non-empty"))
    }

    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// The pose at `t_s` (within the span).
    pub fn at(&self, t_s: f64) -> Result<Pose, TrajectoryError> {
        let (first, last) = self.span_s();
        if !(t_s >= first && t_s <= last) {
            return Err(TrajectoryError::Outside { t_s, first_s: first, last_s: last });
        }
        let i = self.t_s.partition_point(|&t| t <= t_s);
        if i == 0 {
            return Ok(self.pose(0));
        }
        if i >= self.t_s.len() {
            return Ok(self.pose(self.t_s.len() - 1));
        }
        let (a, b) = (i - 1, i);
        let w = (t_s - self.t_s[a]) / (self.t_s[b] - self.t_s[a]);
        let q = self.rot[a].slerp(&self.rot[b], w);
        Ok(Pose { rot: *q.to_rotation_matrix().matrix(), pos: self.pos[a] + (self.pos[b] - self.pos[a]) * w })
    }

    /// Velocity `[v; w]` at `t_s` in the trajectory's frame (linear
    /// velocity of the origin and spatial angular velocity, UR's
    /// `actual_TCP_speed`), by a central difference over `t_s -+ h_s`,
    /// one-sided at the ends; zero where the span has no width.
    pub fn velocity(&self, t_s: f64, h_s: f64) -> [f64; 6] {
        let (first, last) = self.span_s();
        let Some((a, b)) = crate::series::central_difference_times(t_s, h_s, first, last) else { return [0.0; 6] };
        let (Ok(ga), Ok(gb)) = (self.at(a), self.at(b)) else { return [0.0; 6] };
        let dt = b - a;
        let v = (gb.pos - ga.pos) / dt;
        // Spatial angular velocity: log(R_b R_a^T) / dt.
        let w = crate::angular(&crate::log(&Pose { rot: gb.rot * ga.rot.transpose(), pos: Vec3::zeros() })) / dt;
        [v.x, v.y, v.z, w.x, w.y, w.z]
    }

    fn pose(&self, i: usize) -> Pose {
        Pose { rot: *self.rot[i].to_rotation_matrix().matrix(), pos: self.pos[i] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// A tool turning about x through a half-turn, where UR's rotation
    /// vector (angle in [0, pi]) flips sign: the interpolated pose equals
    /// the exact one (to 1e-9) at every intermediate time, while the
    /// component-wise blend is 180 degrees off.
    #[test]
    fn slerp_across_the_rotation_vector_flip() {
        // Exact orientation: Rx(theta(t)), theta through pi, where
        // [rx, 0, 0] jumps from +pi to -pi.
        let exact = |t: f64| {
            let theta = PI - 0.2 + 0.4 * t;
            let q = UnitQuaternion::from_axis_angle(&Vec3::x_axis(), theta);
            Pose { rot: *q.to_rotation_matrix().matrix(), pos: Vec3::new(0.3 + 0.1 * t, -0.2, 0.4) }
        };
        let times: Vec<f64> = (0..=10).map(|k| k as f64 * 0.1).collect();
        let urs: Vec<(f64, [f64; 6])> = times.iter().map(|&t| (t, pose_to_ur(&exact(t)))).collect();
        // The UR vectors really do flip between neighbours somewhere.
        let flips = urs.windows(2).filter(|w| (w[0].1[3] * w[1].1[3] + w[0].1[4] * w[1].1[4] + w[0].1[5] * w[1].1[5]) < 0.0).count();
        assert!(flips >= 1, "test data must cross the flip");
        let traj = PoseTrajectory::from_ur(urs.clone()).unwrap();
        let mut worst_naive = 0.0f64;
        for k in 0..100 {
            let t = k as f64 * 0.01 + 0.003;
            let g = traj.at(t).unwrap();
            let e = exact(t);
            assert!((g.rot - e.rot).amax() < 1e-9 && (g.pos - e.pos).amax() < 1e-9, "t = {t}");
            // Component-wise blend of the rotation vectors, for contrast.
            let i = ((t / 0.1) as usize).min(9);
            let w = (t - times[i]) / 0.1;
            let r: Vec3 = Vec3::new(
                urs[i].1[3] + w * (urs[i + 1].1[3] - urs[i].1[3]),
                urs[i].1[4] + w * (urs[i + 1].1[4] - urs[i].1[4]),
                urs[i].1[5] + w * (urs[i + 1].1[5] - urs[i].1[5]),
            );
            let naive = rotation_from_vector(&r);
            let angle = crate::log(&Pose { rot: naive.transpose() * e.rot, pos: Vec3::zeros() }).fixed_rows::<3>(0).norm();
            worst_naive = worst_naive.max(angle);
        }
        assert!(worst_naive > 2.0, "component-wise interpolation should fail here ({worst_naive} rad)");
    }

    #[test]
    fn outside_the_span_is_an_error() {
        let traj = PoseTrajectory::new([(0.0, Pose::identity()), (1.0, Pose::identity())]).unwrap();
        assert!(matches!(traj.at(1.5), Err(TrajectoryError::Outside { .. })));
        assert!(matches!(traj.at(-0.1), Err(TrajectoryError::Outside { .. })));
        assert!(traj.at(1.0).is_ok() && traj.at(0.0).is_ok());
        let e = PoseTrajectory::new([(0.0, Pose::identity()), (0.0, Pose::identity())]).unwrap_err();
        assert!(matches!(e, TrajectoryError::NotIncreasing { index: 1, .. }));
    }
}
