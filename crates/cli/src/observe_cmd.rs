//! `rodlab observe`: marker table -> strain table, frame by frame.

use crate::input_error;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use lie::Vec3;
use observe::{Mode, Observer, Status};
use session::{flags, read_markers, write_strain, StrainRow};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Markers are exact constraints (KKT Newton, the paper's observer).
    Hard,
    /// Markers pull with springs k = c / sigma^2 (robust to noise and missing markers).
    Weighted,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab observe sessions/run1 --rod configs/rod/contact-paper-steel-core.toml\n  rodlab observe markers.parquet --rod rod.toml --mode weighted --sigma-m 3e-4 --out strain.parquet\n\nThe rod file lists the markers ([[marker]] arc_m, offset_y_m, offset_z_m), base first."
)]
pub struct ObserveArgs {
    /// Session directory (with markers.parquet) or a marker table.
    pub input: PathBuf,
    /// Rod description with its [[marker]] entries.
    #[arg(long)]
    pub rod: PathBuf,
    #[arg(long, value_enum, default_value = "weighted")]
    pub mode: ModeArg,
    /// Marker position noise, standard deviation per coordinate [m].
    #[arg(long, default_value_t = 3e-4)]
    pub sigma_m: f64,
    /// Weighted mode: energy scale c [J] of the springs k = c / sigma^2
    /// (default: discrepancy principle on the first frame).
    #[arg(long)]
    pub energy_scale_j: Option<f64>,
    /// Output strain table (default: strain.parquet beside the marker table).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: ObserveArgs) -> Result<()> {
    let rod = rod::Rod::from_file(&a.rod)?;
    run_with_rod(&a, rod).map(|_| ())
}

/// What an observer run found.
pub struct Observed {
    pub out: PathBuf,
    pub frames: usize,
    pub failed: usize,
    /// Failure reasons and their frame counts.
    pub reasons: BTreeMap<String, usize>,
}

/// Observes with a rod already read (e.g. with identified parameters);
/// `a.rod` names it in messages.
pub fn run_with_rod(a: &ObserveArgs, mut rod: rod::Rod) -> Result<Observed> {
    let markers_path = if a.input.is_dir() { a.input.join("markers.parquet") } else { a.input.clone() };
    if !(a.sigma_m.is_finite() && a.sigma_m > 0.0) {
        return Err(input_error("--sigma-m: must be positive"));
    }
    // The session the marker table belongs to: its frames (world W) and
    // robot log.
    let session_dir = markers_path.parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let meta = session::SessionMeta::read(&session_dir).map_err(|e| input_error(e.to_string()))?;
    let frames_w = meta.as_ref().map(|m| m.frames).unwrap_or_default();
    if meta.is_some() {
        // One world: gravity from the rig, not the rod file.
        rod.gravity_m_s2 = frames_w.gravity();
    }
    let mode = match a.mode {
        ModeArg::Hard => Mode::Hard,
        ModeArg::Weighted => Mode::Weighted { energy_scale_j: a.energy_scale_j },
    };
    let mut obs = Observer::new(&rod, mode).map_err(|e| input_error(format!("{}: {e}", a.rod.display())))?;
    let rows = read_markers(&markers_path).map_err(|e| input_error(e.to_string()))?;
    let out = a.out.clone().unwrap_or_else(|| markers_path.with_file_name("strain.parquet"));
    let n_markers = rod.markers.len();
    let tcp = session::read_tcp_poses(&session_dir).map_err(|e| input_error(e.to_string()))?;
    // One clock: host time. A table without it cannot meet a robot log.
    let host_times = rows.iter().all(|r| r.t_host_ns.is_some());
    if tcp.is_some() && !host_times {
        return Err(input_error(format!(
            "{}: no t_host_ns column, but the session {} has host times (streams/robot): track the session's video with its frames table so that both are on the host clock",
            markers_path.display(),
            session_dir.display()
        )));
    }
    // Frames in order; each frame: marker -> position (None if missing/merged).
    let mut frames: BTreeMap<i64, (i64, Vec<Option<Vec3>>)> = BTreeMap::new();
    for r in &rows {
        if r.marker as usize >= n_markers {
            return Err(input_error(format!(
                "{}: frame {}: marker {} but {} has {} markers",
                markers_path.display(),
                r.frame,
                r.marker,
                a.rod.display(),
                n_markers
            )));
        }
        let t = r.t_host_ns.unwrap_or((r.t_s * 1e9).round() as i64);
        let e = frames.entry(r.frame).or_insert_with(|| (t, vec![None; n_markers]));
        let p = Vec3::new(r.x_m, r.y_m, r.z_m);
        if r.flags & (flags::MISSING | flags::MERGED) == 0 && p.iter().all(|v| v.is_finite()) {
            e.1[r.marker as usize] = Some(p);
        }
    }
    if frames.is_empty() {
        return Err(input_error(format!("{}: no rows", markers_path.display())));
    }
    // With a robot log, the base follows the flange: base = T_WB * TCP *
    // mount (the rod file's [base] is the mount on the flange).
    let log = match tcp.as_deref() {
        Some(samples) => Some(session::RobotLog::new(samples).map_err(|e| input_error(format!("{}: {e}", session_dir.display())))?),
        None => None,
    };
    let mount = rod.base;
    let world_from_robot = frames_w.world_from_robot();
    if log.is_some() {
        println!(
            "base pose from the robot log ({}) in the rig's world frame, rod mount from {}",
            session::stream_dir(&session_dir, "robot").display(),
            a.rod.display()
        );
    }
    let base_at = |t: i64| -> Option<lie::Pose> {
        match &log {
            Some(l) => l.flange_at(t).ok().map(|f| world_from_robot.compose(&f).compose(&mount)),
            None => Some(mount),
        }
    };
    let sigma = vec![a.sigma_m; n_markers];
    // Weighted mode without a given scale: choose it on the most deformed frame.
    if matches!(a.mode, ModeArg::Weighted) && a.energy_scale_j.is_none() {
        let candidates: Vec<(lie::Pose, Vec<Option<Vec3>>)> = frames.values().filter_map(|(t, m)| base_at(*t).map(|b| (b, m.clone()))).collect();
        if let Some(choice) = obs.choose_energy_scale(&candidates, &sigma) {
            if let Some(w) = choice.warning() {
                eprintln!("rodlab: warning: {w}");
            }
            println!("energy scale {:.3e} J, chosen on the most deformed frame", choice.energy_scale_j);
        }
    }
    let bar = indicatif::ProgressBar::new(frames.len() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} frames [{elapsed} < {eta}] {msg}").expect("template"));
    let mut out_rows = Vec::with_capacity(frames.len() * obs.model.node_x_m.len());
    let (mut ok, mut missing, mut failed) = (0usize, 0usize, 0usize);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut residuals = vec![];
    let mut validity: Option<rod::validity::Validity> = None;
    let started = std::time::Instant::now();
    for (frame, (t, measured)) in &frames {
        let Some(base) = base_at(*t) else {
            // Outside the robot log: no base pose, a flagged row.
            failed += 1;
            *reasons.entry("no robot pose at this time (outside the robot log)".into()).or_default() += 1;
            for (node, x) in obs.model.node_x_m.iter().enumerate() {
                out_rows.push(StrainRow {
                    frame: *frame,
                    t_host_ns: *t,
                    node: node as u32,
                    arc_m: *x,
                    strain: [f64::NAN; 6],
                    marker_residual_m: f64::NAN,
                    status: "failed:outside robot log".into(),
                    base_pose: [f64::NAN; 6],
                });
            }
            bar.inc(1);
            continue;
        };
        obs.set_base(&base);
        let o = obs.observe(measured, &sigma)?;
        match &o.status {
            Status::Ok => ok += 1,
            Status::MissingMarkers(_) => missing += 1,
            Status::Failed(why) => {
                failed += 1;
                *reasons.entry(why.clone()).or_default() += 1;
            }
        }
        if o.marker_residual_m.is_finite() {
            residuals.push(o.marker_residual_m);
        }
        if !matches!(o.status, Status::Failed(_)) {
            let v = rod::validity::validity(&obs.model, &o.q);
            validity = Some(validity.map_or(v, |w: rod::validity::Validity| w.worst(v)));
        }
        let label = o.status.label();
        let base_pose = lie::trajectory::pose_to_ur(&base);
        for (node, (x, s)) in obs.model.node_x_m.iter().zip(&o.nodal_strain).enumerate() {
            out_rows.push(StrainRow {
                frame: *frame,
                t_host_ns: *t,
                node: node as u32,
                arc_m: *x,
                strain: [s[0], s[1], s[2], s[3] - 1.0, s[4], s[5]],
                marker_residual_m: o.marker_residual_m,
                status: label.clone(),
                base_pose,
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    write_strain(&out, &out_rows).map_err(anyhow::Error::new).with_context(|| "writing the strain table")?;
    let mean = residuals.iter().sum::<f64>() / residuals.len().max(1) as f64;
    let max = residuals.iter().cloned().fold(0.0, f64::max);
    println!(
        "observed {} frames in {:.2} s ({:.0} frames/s), mode {}",
        frames.len(),
        secs,
        frames.len() as f64 / secs,
        match a.mode {
            ModeArg::Hard => "hard".to_string(),
            ModeArg::Weighted => format!("weighted (energy scale {:.3e} J)", obs.energy_scale_j().unwrap_or(f64::NAN)),
        }
    );
    println!("  solved {ok}, solved with missing markers {missing}, failed {failed}");
    for (why, n) in &reasons {
        println!("  failure: {why} ({n} frames)");
    }
    println!("  marker residual [m]: mean {mean:.3e}, max {max:.3e}");
    if let Some(v) = validity {
        println!("  validity: {}", v.summary());
        for w in v.warnings(&obs.model.rod.cables) {
            println!("  warning: {w}");
        }
    }
    println!("wrote {} ({} rows: frame x node)", out.display(), out_rows.len());
    Ok(Observed { out, frames: frames.len(), failed, reasons })
}
