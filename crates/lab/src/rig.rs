//! The rig's world frame measured from a recording: where the robot's base
//! is, from a tracked marker on its flange (or on the rod's base) against
//! the robot's flange poses, with a gravity check against a force sensor.

use crate::error::{Context, Error, Result};
use lie::{FramePose, Vec3};
use session::{flags, read_markers, RigFrames, RobotLog, SessionDir, Table};
use std::path::Path;

/// What to calibrate from.
#[derive(Clone, Debug)]
pub struct RigCalibrationRequest<'a> {
    pub session: &'a SessionDir,
    pub rod: &'a rod::Rod,
    /// Index of the tracked marker in the rod file.
    pub marker: usize,
    /// Pairs are taken where the flange moves slower than this \[m/s\].
    pub max_speed_m_s: f64,
    /// A calibration whose residuals' RMS is above this is refused \[m\].
    pub max_rms_m: f64,
}

/// The default refusal limit of the residuals' RMS: 1 mm.
pub const MAX_RMS_M: f64 = 1e-3;

/// The measured robot base.
#[derive(Clone, Debug)]
pub struct RigCalibration {
    /// The session's frames with the measured robot base.
    pub frames: RigFrames,
    pub robot_base: FramePose,
    pub pairs: usize,
    pub rms_residual_m: f64,
    pub max_residual_m: f64,
    /// Angle between the force sensor's mean force (turned into the world)
    /// and the rig's gravity \[deg\], when the session has an `ft300` stream.
    pub gravity_angle_deg: Option<f64>,
    pub warnings: Vec<String>,
}

/// Measures `T_world_robot`.
pub fn calibrate(req: &RigCalibrationRequest) -> Result<RigCalibration> {
    let dir = req.session;
    let rod = req.rod;
    let marker = rod.markers.get(req.marker).ok_or_else(|| Error::input(format!("--marker {}: the rod file has {} markers", req.marker, rod.markers.len())))?;
    // The marker in the flange frame: mount * (arc along body x + offset).
    let on_flange = rod.base.transform_point(&(Vec3::new(marker.arc_m, 0.0, 0.0) + marker.offset_body_m));
    let meta = dir.meta()?.ok_or_else(|| Error::input(format!("{}: no session.toml (the rig's frames)", dir.path().display())))?;
    let markers_path = dir.markers();
    let rows = read_markers(&markers_path).input(markers_path.display())?;
    let tcp = session::read_tcp_poses(dir.path())?.ok_or_else(|| Error::input(format!("{}: no robot stream (streams/robot)", dir.path().display())))?;
    let log = RobotLog::new(&tcp).input(dir.path().display())?;
    let speed_at = |t: i64| -> Option<f64> {
        let dt = 20_000_000; // 20 ms
        let p0 = log.flange_at(t - dt).ok()?.pos;
        let p1 = log.flange_at(t + dt).ok()?.pos;
        Some((p1 - p0).norm() / (2.0 * dt as f64 * 1e-9))
    };
    let mut pairs = vec![];
    let mut pair_times_s = vec![];
    for r in rows.iter().filter(|r| r.marker as usize == req.marker && r.flags & flags::NO_POSITION == 0) {
        let Some(t) = r.t_host_ns else {
            return Err(Error::input(format!("{}: no t_host_ns column: track the session's video with its frames table", markers_path.display())));
        };
        let p = Vec3::new(r.x_m, r.y_m, r.z_m);
        if !p.iter().all(|v| v.is_finite()) || speed_at(t).is_none_or(|v| v > req.max_speed_m_s) {
            continue;
        }
        let flange = log.flange_at(t).expect("inside the log");
        pairs.push((flange.transform_point(&on_flange), p));
        pair_times_s.push(t as f64 * 1e-9);
    }
    let cal = session::frames::calibrate_robot_base(&pairs).context(dir.path().display())?;
    if cal.rms_residual_m.is_nan() || cal.rms_residual_m > req.max_rms_m {
        // The worst poses: the still spans whose pairs miss most.
        let g = cal.world_from_robot;
        let mut misses: Vec<(f64, f64)> = pairs.iter().zip(&pair_times_s).map(|((a, b), t)| (*t, (g.transform_point(a) - b).norm())).collect();
        misses.sort_by(|x, y| y.1.total_cmp(&x.1));
        let mut worst: Vec<(f64, f64)> = vec![];
        for (t, m) in misses {
            if worst.len() < 3 && worst.iter().all(|(tw, _)| (tw - t).abs() > 1.0) {
                worst.push((t, m));
            }
        }
        let worst: Vec<String> = worst.iter().map(|(t, m)| format!("{:.1} mm at t = {t:.1} s", m * 1e3)).collect();
        return Err(Error::computation(format!(
            "{}: rig calibration refused, nothing written: the marker positions miss the fitted robot base by {:.1} mm RMS (limit {:.1} mm, --max-rms-m); worst {}. Usual causes: the tracked marker sits on a part that bends (--marker {} is {:.0} mm along the rod; use one on the flange or the clamped base), the robot was still moving (lower --max-speed-m-s), a wrong --marker index, or the board's pose in [frames] is off",
            dir.path().display(),
            cal.rms_residual_m * 1e3,
            req.max_rms_m * 1e3,
            worst.join(", "),
            req.marker,
            marker.arc_m * 1e3
        )));
    }
    let robot_base = FramePose::from_pose(&cal.world_from_robot);
    let mut frames = meta.frames;
    frames.robot_base = robot_base;
    let gravity_angle_deg = gravity_angle(dir, &log, &frames)?;
    let mut warnings = vec![];
    if let Some(angle) = gravity_angle_deg.filter(|a| *a > 3.0) {
        warnings.push(format!(
            "the force sensor's weight points {angle:.1} deg away from frames.gravity_m_s2: check the robot base or the gravity direction (or remove the sensor's bias first)"
        ));
    }
    Ok(RigCalibration {
        frames,
        robot_base,
        pairs: cal.pairs,
        rms_residual_m: cal.rms_residual_m,
        max_residual_m: cal.max_residual_m,
        gravity_angle_deg,
        warnings,
    })
}

/// With a flange force sensor at rest, the force it reads (the rod's
/// weight) turned into the world should point along gravity.
fn gravity_angle(dir: &SessionDir, log: &RobotLog, frames: &RigFrames) -> Result<Option<f64>> {
    if !dir.has_stream("ft300") {
        return Ok(None);
    }
    let t = Table::read_chunks(&dir.stream("ft300"))?;
    let th = t.i64("t_host_ns")?;
    let f: Vec<Vec<f64>> = ["fx_n", "fy_n", "fz_n"].iter().map(|c| t.f64(c)).collect::<Result<_, _>>()?;
    let world_from_robot = frames.world_from_robot();
    let mut sum = Vec3::zeros();
    for (k, &tk) in th.iter().enumerate() {
        let Ok(flange) = log.flange_at(tk) else { continue };
        sum += world_from_robot.rot * flange.rot * Vec3::new(f[0][k], f[1][k], f[2][k]);
    }
    let g = frames.gravity();
    if sum.norm() == 0.0 || g.norm() == 0.0 {
        return Ok(None);
    }
    Ok(Some((sum.dot(&g) / (sum.norm() * g.norm())).clamp(-1.0, 1.0).acos().to_degrees()))
}

/// Writes the frames as a `[frames]` table to paste into the rig file.
pub fn write_frames(path: &Path, frames: &RigFrames, session: &SessionDir) -> Result<()> {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        frames: &'a RigFrames,
    }
    let text = toml::to_string(&Out { frames }).map_err(|e| Error::computation(format!("frames: {e}")))?;
    std::fs::write(path, format!("# rodlab rig calibrate {}: paste into the rig file.\n{text}", session.path().display()))
        .map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))
}
