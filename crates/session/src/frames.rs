//! One world frame W for a rig (science §8): where the robot's base frame
//! B, the camera's plane of motion P (the calibration board's frame) and the
//! table are in W, how high the marker centres sit above the board, and
//! which way gravity points. Given in the rig file's `[frames]` table,
//! copied into every session's `session.toml`, and used by `track` (markers
//! in W), `observe` and `identify` (base = T_WB * TCP * mount, gravity) and
//! `simulate` (base, gravity, table) so that every table they write is in W.

use lie::{Pose, Vec3};
use serde::{Deserialize, Serialize};

pub use lie::FramePose;

/// The table: a plane through `point_m` with unit `normal` (up, out of it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TablePlane {
    /// A point of the table's surface in W \[m\].
    #[serde(default)]
    pub point_m: [f64; 3],
    /// Its normal, up out of the table (normalised).
    pub normal: [f64; 3],
}

/// The frames of a rig. The default is the world = robot base = board
/// frame, markers on the board plane, gravity along -z, no table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RigFrames {
    /// The robot's base frame B in W (`T_world_robot`).
    #[serde(default)]
    pub robot_base: FramePose,
    /// The calibration board lying in the plane of motion, P in W
    /// (`T_world_board`; the board's plane is its z = 0).
    #[serde(default)]
    pub board: FramePose,
    /// Height of the marker centres above the board plane, towards the
    /// camera (rod radius + board thickness) \[m\].
    #[serde(default)]
    pub marker_height_m: f64,
    /// Gravity in W \[m/s^2\].
    #[serde(default = "default_gravity")]
    pub gravity_m_s2: [f64; 3],
    /// The table the rod may touch (validate and simulate use it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TablePlane>,
}

fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}

impl Default for RigFrames {
    fn default() -> Self {
        RigFrames { robot_base: FramePose::default(), board: FramePose::default(), marker_height_m: 0.0, gravity_m_s2: default_gravity(), table: None }
    }
}

impl RigFrames {
    /// Checks the values; the error names `file` and the field.
    pub fn validate(&self, file: &std::path::Path) -> Result<(), crate::ConfigFileError> {
        let err = |m: &str| Err(crate::ConfigFileError::new(file, m));
        if !self.robot_base.finite() {
            return err("frames.robot_base: must be finite");
        }
        if !self.board.finite() {
            return err("frames.board: must be finite");
        }
        if !(self.marker_height_m.is_finite() && self.marker_height_m >= 0.0) {
            return err(&format!("frames.marker_height_m: must be >= 0, got {}", self.marker_height_m));
        }
        if !self.gravity_m_s2.iter().all(|v| v.is_finite()) {
            return err("frames.gravity_m_s2: must be finite");
        }
        if let Some(t) = &self.table {
            let n = Vec3::from(t.normal);
            if !(n.iter().all(|v| v.is_finite()) && n.norm() > 1e-9 && t.point_m.iter().all(|v| v.is_finite())) {
                return err("frames.table: needs a finite point_m and a non-zero normal");
            }
        }
        Ok(())
    }

    pub fn world_from_robot(&self) -> Pose {
        self.robot_base.pose()
    }

    pub fn world_from_board(&self) -> Pose {
        self.board.pose()
    }

    pub fn gravity(&self) -> Vec3 {
        Vec3::from(self.gravity_m_s2)
    }
}

/// The robot's base in the world from pairs of (a point in the robot's base
/// frame, the same point seen in the world): least squares over the pairs
/// (Kabsch), with the residuals.
#[derive(Clone, Debug, PartialEq)]
pub struct BaseCalibration {
    pub world_from_robot: Pose,
    pub rms_residual_m: f64,
    pub max_residual_m: f64,
    pub pairs: usize,
}

/// Why the pairs do not determine the robot's base.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("{0} pairs: at least 3 poses are needed")]
    TooFew(usize),
    #[error("degenerate poses: the points lie on a line ({0:.2} mm across it): move the robot in two directions")]
    Collinear(f64),
}

impl fault::Fault for CalibrationError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

/// Kabsch: the rotation and translation with `p_world = R p_robot + t`
/// closest to the pairs.
pub fn calibrate_robot_base(pairs: &[(Vec3, Vec3)]) -> Result<BaseCalibration, CalibrationError> {
    let n = pairs.len();
    if n < 3 {
        return Err(CalibrationError::TooFew(n));
    }
    let ca: Vec3 = pairs.iter().map(|(a, _)| a).sum::<Vec3>() / n as f64;
    let cb: Vec3 = pairs.iter().map(|(_, b)| b).sum::<Vec3>() / n as f64;
    let mut h = lie::Mat3::zeros();
    for (a, b) in pairs {
        h += (a - ca) * (b - cb).transpose();
    }
    // The spread of the robot-side points across their main direction:
    // points on a line leave the rotation about it undetermined.
    let mut spread = lie::Mat3::zeros();
    for (a, _) in pairs {
        spread += (a - ca) * (a - ca).transpose();
    }
    let eig = spread.symmetric_eigen();
    let mut ev: Vec<f64> = eig.eigenvalues.iter().map(|v| v.max(0.0)).collect();
    ev.sort_by(f64::total_cmp);
    let across = (ev[1] / n as f64).sqrt();
    if across < 1e-3 {
        return Err(CalibrationError::Collinear(across * 1e3));
    }
    let svd = h.svd(true, true);
    let (u, vt) = (svd.u.expect("u"), svd.v_t.expect("v_t"));
    let d = (vt.transpose() * u.transpose()).determinant().signum();
    let rot = vt.transpose() * lie::Mat3::from_diagonal(&Vec3::new(1.0, 1.0, d)) * u.transpose();
    let pos = cb - rot * ca;
    let g = Pose { rot, pos };
    let res: Vec<f64> = pairs.iter().map(|(a, b)| (g.transform_point(a) - b).norm()).collect();
    Ok(BaseCalibration {
        world_from_robot: g,
        rms_residual_m: (res.iter().map(|r| r * r).sum::<f64>() / n as f64).sqrt(),
        max_residual_m: res.iter().cloned().fold(0.0, f64::max),
        pairs: n,
    })
}
