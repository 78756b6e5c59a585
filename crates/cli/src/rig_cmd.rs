//! `rodlab rig calibrate`: the robot's base in the world from a recording
//! in which the robot moves a tracked marker on its flange (or the rod's
//! base marker) through a few poses.

use crate::input_error;
use anyhow::Result;
use clap::{Args, Subcommand};
use lie::Vec3;
use session::{flags, read_markers, FramePose, RobotLog, SessionMeta};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum RigCommand {
    /// Measure T_world_robot: tracked marker positions (world) against the flange poses (robot base frame).
    Calibrate(CalibrateRigArgs),
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab rig calibrate sessions/rig-cal --rod configs/rod/contact-paper-steel-core.toml --marker 0 --out frames.toml\n\nRecord while the robot holds the rod (or a flange marker) still at six or more poses spread in two directions of the plane of motion, track the video (rodlab track, with the board's pose in the rig's [frames]), then run this. The marker's place on the flange comes from the rod file: its [base] mount and the marker's arc length and offsets. Pairs are taken where the flange moves slower than --max-speed-m-s. With a force sensor (ft300 stream), the direction of gravity is checked against the force it reads at rest."
)]
pub struct CalibrateRigArgs {
    /// Session directory with markers.parquet (tracked, world frame) and a robot stream.
    pub session: PathBuf,
    #[arg(long)]
    pub rod: PathBuf,
    /// Index of the tracked marker (0 = base marker).
    #[arg(long, default_value_t = 0)]
    pub marker: u32,
    /// Use frames where the flange moves slower than this [m/s].
    #[arg(long, default_value_t = 0.005)]
    pub max_speed_m_s: f64,
    /// Write the session's [frames] with the measured robot base here (TOML).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(c: RigCommand) -> Result<()> {
    let RigCommand::Calibrate(a) = c;
    let rod = rod::Rod::from_file(&a.rod)?;
    let marker = rod
        .markers
        .get(a.marker as usize)
        .ok_or_else(|| input_error(format!("--marker {}: {} has {} markers", a.marker, a.rod.display(), rod.markers.len())))?;
    // The marker in the flange frame: mount * (arc along body x + offset).
    let on_flange = rod.base.transform_point(&(Vec3::new(marker.arc_m, 0.0, 0.0) + marker.offset_body_m));
    let meta = SessionMeta::read(&a.session)
        .map_err(|e| input_error(e.to_string()))?
        .ok_or_else(|| input_error(format!("{}: no session.toml (the rig's frames)", a.session.display())))?;
    let markers_path = a.session.join("markers.parquet");
    let rows = read_markers(&markers_path).map_err(|e| input_error(e.to_string()))?;
    let tcp = session::read_tcp_poses(&a.session)
        .map_err(|e| input_error(e.to_string()))?
        .ok_or_else(|| input_error(format!("{}: no robot stream (streams/robot)", a.session.display())))?;
    let log = RobotLog::new(&tcp).map_err(|e| input_error(format!("{}: {e}", a.session.display())))?;
    let speed_at = |t: i64| -> Option<f64> {
        let dt = 20_000_000; // 20 ms
        let p0 = log.flange_at(t - dt).ok()?.pos;
        let p1 = log.flange_at(t + dt).ok()?.pos;
        Some((p1 - p0).norm() / (2.0 * dt as f64 * 1e-9))
    };
    let mut pairs = vec![];
    for r in rows.iter().filter(|r| r.marker == a.marker && r.flags & (flags::MISSING | flags::MERGED) == 0) {
        let Some(t) = r.t_host_ns else {
            return Err(input_error(format!("{}: no t_host_ns column: track the session's video with its frames table", markers_path.display())));
        };
        let p = Vec3::new(r.x_m, r.y_m, r.z_m);
        if !p.iter().all(|v| v.is_finite()) || speed_at(t).is_none_or(|v| v > a.max_speed_m_s) {
            continue;
        }
        let flange = log.flange_at(t).expect("inside the log");
        pairs.push((flange.transform_point(&on_flange), p));
    }
    let cal = session::frames::calibrate_robot_base(&pairs).map_err(|e| input_error(format!("{}: {e}", a.session.display())))?;
    let pose = FramePose::from_pose(&cal.world_from_robot);
    println!(
        "robot base in the world from {} pairs: position_m = [{:.6}, {:.6}, {:.6}], rpy_deg = [{:.5}, {:.5}, {:.5}]",
        cal.pairs, pose.position_m[0], pose.position_m[1], pose.position_m[2], pose.rpy_deg[0], pose.rpy_deg[1], pose.rpy_deg[2]
    );
    println!("  residuals: RMS {:.3} mm, max {:.3} mm", 1e3 * cal.rms_residual_m, 1e3 * cal.max_residual_m);
    let mut frames = meta.frames;
    frames.robot_base = pose;
    gravity_check(&a, &log, &frames)?;
    if let Some(out) = &a.out {
        #[derive(serde::Serialize)]
        struct Out {
            frames: session::RigFrames,
        }
        let text = toml::to_string(&Out { frames }).map_err(|e| input_error(e.to_string()))?;
        std::fs::write(out, format!("# rodlab rig calibrate {}: paste into the rig file.\n{text}", a.session.display()))
            .map_err(|e| input_error(format!("{}: {e}", out.display())))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// With a flange force sensor at rest, the force it reads (the rod's weight)
/// turned into the world should point along gravity.
fn gravity_check(a: &CalibrateRigArgs, log: &RobotLog, frames: &session::RigFrames) -> Result<()> {
    let dir = session::stream_dir(&a.session, "ft300");
    if !dir.is_dir() {
        return Ok(());
    }
    let t = session::Table::read_chunks(&dir).map_err(|e| input_error(e.to_string()))?;
    let th = t.i64("t_host_ns").map_err(|e| input_error(e.to_string()))?;
    let f: Vec<Vec<f64>> = ["fx_n", "fy_n", "fz_n"].iter().map(|c| t.f64(c)).collect::<Result<_, _>>().map_err(|e| input_error(e.to_string()))?;
    let world_from_robot = frames.world_from_robot();
    let mut sum = Vec3::zeros();
    for (k, &tk) in th.iter().enumerate() {
        let Ok(flange) = log.flange_at(tk) else { continue };
        sum += world_from_robot.rot * flange.rot * Vec3::new(f[0][k], f[1][k], f[2][k]);
    }
    let g = frames.gravity();
    if sum.norm() == 0.0 || g.norm() == 0.0 {
        return Ok(());
    }
    let angle = (sum.dot(&g) / (sum.norm() * g.norm())).clamp(-1.0, 1.0).acos().to_degrees();
    println!("  gravity check: the force sensor's mean force points {angle:.2} deg from the rig's gravity");
    if angle > 3.0 {
        eprintln!("rodlab: warning: the force sensor's weight points {angle:.1} deg away from frames.gravity_m_s2: check the robot base or the gravity direction (or remove the sensor's bias first)");
    }
    Ok(())
}
