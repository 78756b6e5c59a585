//! Observing a session: the strain of the rod in every tracked frame, from
//! the markers (hard constraints or weighted springs) with the base from
//! the robot log, written as the strain table. The table records what made
//! it (rod, material, observer mode, noise, the marker table) so that a
//! later stage reuses it only when those are the same.

use crate::data::frames_of;
use crate::error::{Context, Error, Result};
use crate::progress::Progress;
use observe::{Mode, Observer, Status};
use rod::Rod;
use session::{write_strain, StrainRow};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How to observe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObserveOptions {
    pub mode: ObserverMode,
    /// Marker position noise, standard deviation per coordinate \[m\].
    pub sigma_m: f64,
    /// Weighted mode: the springs' energy scale \[J\] (default: chosen by the
    /// discrepancy principle on the most deformed frame).
    pub energy_scale_j: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObserverMode {
    /// Markers are exact constraints (KKT Newton, the paper's observer).
    Hard,
    /// Markers pull with springs k = c / sigma^2 (robust to noise and missing markers).
    Weighted,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        ObserveOptions { mode: ObserverMode::Weighted, sigma_m: 3e-4, energy_scale_j: None }
    }
}

/// What an observer run found.
#[derive(Clone, Debug)]
pub struct Observed {
    pub out: PathBuf,
    pub frames: usize,
    pub solved: usize,
    pub solved_missing_markers: usize,
    pub failed: usize,
    /// Failure reasons and their frame counts.
    pub reasons: BTreeMap<String, usize>,
    /// The energy scale used (weighted mode) and the warning of its choice.
    pub energy_scale_j: Option<f64>,
    pub scale_warning: Option<String>,
    pub marker_residual_mean_m: f64,
    pub marker_residual_max_m: f64,
    pub validity: Option<rod::validity::Validity>,
    pub warnings: Vec<String>,
    /// Whether the base followed the session's robot log.
    pub base_from_robot: bool,
    pub wall_time_s: f64,
    pub rows: usize,
    /// The markers' noise estimated from the table (third differences),
    /// and the sigma used: the one asked for, never below the estimate.
    pub noise_estimate_m: Option<f64>,
    pub sigma_used_m: f64,
}

/// The markers' position noise \[m\] from their third differences over
/// consecutive frames, in time order: for white noise of sigma each
/// component's third difference has standard deviation sqrt(20) sigma,
/// while a smooth motion leaves only its jerk times dt^3; the median
/// absolute value (x 1.4826) ignores the frames where the rod moves
/// abruptly. None for fewer than 30 frames (a second of video: fewer are
/// snapshots, not a sequence to estimate noise from).
pub fn marker_noise_m<'a>(frames: impl Iterator<Item = &'a [Option<rod::Sighting>]>) -> Option<f64> {
    let frames: Vec<&[Option<rod::Sighting>]> = frames.collect();
    if frames.len() < 30 {
        return None;
    }
    let mut d3: Vec<f64> = vec![];
    // Points only: a ray (one camera of a set) has no position to difference.
    let point = |f: &[Option<rod::Sighting>], m: usize| f.get(m).copied().flatten().and_then(|s| s.as_point());
    for w in frames.windows(4) {
        for m in 0..w[0].len() {
            if let (Some(a), Some(b), Some(c), Some(d)) = (point(w[0], m), point(w[1], m), point(w[2], m), point(w[3], m)) {
                d3.extend((d - 3.0 * c + 3.0 * b - a).iter().map(|v| v.abs()));
            }
        }
    }
    if d3.len() < 20 {
        return None;
    }
    d3.sort_by(f64::total_cmp);
    Some(1.4826 * d3[d3.len() / 2] / 20f64.sqrt())
}

/// Metadata key of a strain table: what made it.
pub const KEY: &str = "observer_key";
/// Metadata key of a strain table: the same, readable.
pub const DESCRIPTION: &str = "observer";
/// Metadata key of a strain table: the weighted observer's energy scale \[J\]
/// as used (given or chosen), so a later reader can observe as this table was.
pub const ENERGY_SCALE: &str = "energy_scale_j";

/// What makes a strain table: the rod as observed (shape, material,
/// markers, sections, mount), the observer's settings and the marker
/// table's bytes. Two runs with equal keys give the same table.
pub fn key(rod: &Rod, o: &ObserveOptions, markers_path: &Path) -> (String, String) {
    let description = format!(
        "mode {:?}, sigma {} m, energy scale {:?} J, markers sha256 {}",
        o.mode,
        o.sigma_m,
        o.energy_scale_j,
        crate::provenance::sha256_file(markers_path)
    );
    (crate::provenance::sha256_text(&format!("{rod:?}|{description}")), description)
}

/// What a strain table says made it (both `None`: no table, or one that
/// cannot be read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// The key it was written with (`None`: none recorded).
    pub key: Option<String>,
    /// The weighted observer's energy scale \[J\] (`None`: hard mode, or a
    /// table from before it was recorded).
    pub energy_scale_j: Option<f64>,
}

/// What made a strain table, from one read of it.
pub fn recorded(strain_path: &Path) -> Recorded {
    let Ok(t) = session::Table::read(strain_path) else { return Recorded::default() };
    Recorded {
        key: t.meta(KEY).map(str::to_string),
        energy_scale_j: t.meta(ENERGY_SCALE).and_then(|v| v.parse().ok()).filter(|c: &f64| c.is_finite() && *c > 0.0),
    }
}

/// The key a strain table was written with (`None`: none recorded, or no table).
pub fn recorded_key(strain_path: &Path) -> Option<String> {
    recorded(strain_path).key
}

/// Observes the marker table `markers_path` (in a session directory, or
/// alone) with `rod`, writing the strain table to `out`. With a session's
/// `session.toml`, gravity is the rig's; with its robot stream, the base
/// follows the flange.
pub fn observe(markers_path: &Path, rod: &Rod, o: &ObserveOptions, out: &Path, progress: &dyn Progress) -> Result<Observed> {
    observe_held(markers_path, rod, o, None, out, progress)
}

/// [`observe()`] for a rod whose tip a second robot holds: the loads file's
/// `[tip_hold]` names its stream, whose poses hold the observed rod's tip
/// frame by frame (required when the rod file's tip is held).
pub fn observe_held(
    markers_path: &Path,
    rod: &Rod,
    o: &ObserveOptions,
    tip_hold: Option<&identify::sessions::TipHoldStream>,
    out: &Path,
    progress: &dyn Progress,
) -> Result<Observed> {
    crate::error::positive("--sigma-m", o.sigma_m)?;
    if let Some(c) = o.energy_scale_j {
        crate::error::positive("--energy-scale-j", c)?;
    }
    let mut rod = rod.clone();
    let session_dir = session::SessionDir::new(markers_path.parent().map(|p| p.to_path_buf()).unwrap_or_default());
    let meta = session_dir.meta()?;
    let frames_w = meta.as_ref().map(|m| m.frames).unwrap_or_default();
    // Markers measured on the body (a reference window) where the session has them.
    let (measured_rod, measured_markers) = crate::data::rod_for_session(&rod, meta.as_ref(), &session_dir);
    rod = measured_rod;
    // What made the table: the rod as observed (its markers as measured;
    // the session fixes gravity).
    let (key, description) = key(&rod, o, markers_path);
    if meta.is_some() {
        // One world: gravity from the rig, not the rod file.
        rod.gravity_m_s2 = frames_w.gravity();
    }
    let mode = match o.mode {
        ObserverMode::Hard => Mode::Hard,
        ObserverMode::Weighted => Mode::Weighted { energy_scale_j: o.energy_scale_j },
    };
    let mut obs = Observer::new(&rod, mode)?;
    let tracked = crate::data::read_tracked(markers_path)?;
    let rows = &tracked.rows;
    let n_markers = rod.markers.len();
    // The base log (a robot's flange or a mocap clamp) and what places it
    // in the world.
    let mut sigma_warnings: Vec<String> = measured_markers.into_iter().collect();
    let (tcp, world_from_robot) = match crate::data::base_log(&session_dir, frames_w.world_from_robot(), session::Damaged::Skip, &mut sigma_warnings)? {
        Some((samples, w)) => (Some(samples), w),
        None => (None, frames_w.world_from_robot()),
    };
    // One clock: host time. A table without it cannot meet a robot log.
    let host_times = rows.iter().all(|r| r.t_host_ns.is_some());
    if tcp.is_some() && !host_times {
        return Err(Error::input(format!(
            "{}: no t_host_ns column, but the session {} has host times (streams/robot): track the session's video with its frames table so that both are on the host clock",
            markers_path.display(),
            session_dir.path().display()
        )));
    }
    let frames = frames_of(&tracked, n_markers, markers_path, |r| r.t_host_ns.unwrap_or((r.t_s * 1e9).round() as i64))?;
    // With a robot log, the base follows the flange: base = T_WB * TCP *
    // mount (the rod file's [base] is the mount on the flange).
    let log = match &tcp {
        Some(samples) => Some(session::RobotLog::new(samples).input(session_dir.path().display())?),
        None => None,
    };
    let tip_log = match (tip_hold, rod.tip_condition) {
        (_, rod::TipCondition::Free) => None,
        (Some(tip), condition) => {
            let clamp = crate::data::tip_clamp_log(&session_dir, tip, "[tip_hold]", session::Damaged::Skip, &mut sigma_warnings)?;
            Some(crate::data::TipHoldLog::new(&clamp, condition, &session_dir.stream(tip.stream_name()))?)
        }
        (None, condition) => {
            return Err(Error::input(format!(
                "{}: the rod's tip is {} ([tip] condition): give the loads file whose [tip_hold] names the robot holding it (--loads)",
                markers_path.display(),
                condition.key()
            )))
        }
    };
    let tip_at = |t: i64| tip_log.as_ref().and_then(|l| l.hold_at(t as f64 * 1e-9));
    let mount = rod.base;
    let base_at = |t: i64| -> Option<lie::Pose> {
        if tip_log.is_some() && tip_at(t).is_none() {
            // Outside the tip robot's log: no hold for the frame.
            return None;
        }
        match &log {
            Some(l) => l.flange_at(t).ok().map(|f| world_from_robot.compose(&f).compose(&mount)),
            None => Some(mount),
        }
    };
    // The markers' own noise is a floor: springs stiffer than the data
    // warrant make Newton fail and residuals look like wrong equilibria.
    let noise_estimate_m = marker_noise_m(frames.iter().map(|f| f.2.as_slice()));
    let sigma_used_m = match noise_estimate_m {
        Some(noise) if o.mode == ObserverMode::Weighted && o.sigma_m < noise => {
            sigma_warnings.push(format!(
                "--sigma-m {:.2e} m is below the markers' noise, {noise:.2e} m estimated from their third differences: {noise:.2e} m used",
                o.sigma_m
            ));
            noise
        }
        _ => o.sigma_m,
    };
    let sigma = vec![sigma_used_m; n_markers];
    let mut scale_warning = None;
    // Weighted mode without a given scale: choose it on the most deformed frame.
    if o.mode == ObserverMode::Weighted && o.energy_scale_j.is_none() {
        let candidates: Vec<observe::FrameInput> =
            frames.iter().filter_map(|(_, t, m)| base_at(*t).map(|base| observe::FrameInput { base, tip: tip_at(*t), markers: m.clone() })).collect();
        if let Some(choice) = obs.choose_energy_scale(&candidates, &sigma) {
            scale_warning = choice.warning();
        }
    }
    let task = progress.task("observe", Some(frames.len() as u64));
    let mut out_rows = Vec::with_capacity(frames.len() * obs.model.node_x_m.len());
    let (mut solved, mut missing, mut failed) = (0usize, 0usize, 0usize);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut residuals = vec![];
    let mut validity: Option<rod::validity::Validity> = None;
    let started = std::time::Instant::now();
    for (k, (frame, t, measured)) in frames.iter().enumerate() {
        task.set(k as u64);
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
            continue;
        };
        obs.set_base(&base);
        if let Some(hold) = tip_at(*t) {
            obs.set_tip_hold(hold);
        }
        let ob = obs.observe(measured, &sigma)?;
        match &ob.status {
            Status::Ok => solved += 1,
            Status::MissingMarkers(_) => missing += 1,
            Status::Failed(why) => {
                failed += 1;
                *reasons.entry(why.clone()).or_default() += 1;
            }
        }
        if ob.marker_residual_m.is_finite() {
            residuals.push(ob.marker_residual_m);
        }
        if !matches!(ob.status, Status::Failed(_)) {
            let v = rod::validity::validity(&obs.model, &ob.q);
            validity = Some(validity.map_or(v, |w: rod::validity::Validity| w.worst(v)));
        }
        let label = ob.status.label();
        let base_pose = lie::trajectory::pose_to_ur(&base);
        for (node, (x, s)) in obs.model.node_x_m.iter().zip(&ob.nodal_strain).enumerate() {
            out_rows.push(StrainRow {
                frame: *frame,
                t_host_ns: *t,
                node: node as u32,
                arc_m: *x,
                strain: [s[0], s[1], s[2], s[3] - 1.0, s[4], s[5]],
                marker_residual_m: ob.marker_residual_m,
                status: label.clone(),
                base_pose,
            });
        }
    }
    drop(task);
    let wall_time_s = started.elapsed().as_secs_f64();
    let scale_text = obs.energy_scale_j().map(|c| format!("{c:e}"));
    let mut meta = vec![(KEY, key.as_str()), (DESCRIPTION, description.as_str())];
    if let Some(scale) = &scale_text {
        meta.push((ENERGY_SCALE, scale.as_str()));
    }
    write_strain(out, &out_rows, &meta)?;
    let mut warnings = sigma_warnings;
    warnings.extend(validity.as_ref().map(|v| v.warnings(&obs.model.rod.cables)).unwrap_or_default());
    Ok(Observed {
        out: out.to_path_buf(),
        frames: frames.len(),
        solved,
        solved_missing_markers: missing,
        failed,
        reasons,
        energy_scale_j: obs.energy_scale_j(),
        scale_warning,
        marker_residual_mean_m: residuals.iter().sum::<f64>() / residuals.len().max(1) as f64,
        marker_residual_max_m: residuals.iter().cloned().fold(0.0, f64::max),
        validity,
        warnings,
        base_from_robot: log.is_some(),
        wall_time_s,
        rows: out_rows.len(),
        noise_estimate_m,
        sigma_used_m,
    })
}
