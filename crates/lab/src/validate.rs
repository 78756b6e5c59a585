//! Validating parameters on recorded sessions: each session's robot
//! stream drives the simulator, the observer turns the tracked markers into
//! measured strain (or a strain table made with the same rod, parameters
//! and observer is reused), and both are compared on the session's host
//! clock: strain per component, the flange force sensor against the
//! simulated base wrench, the tip's slide and stick/slide phases, the
//! markers. Figures are checked against limits; a report page and
//! summary.json per session, and a summary page for several sessions.

use crate::band::{BandExecutor, ParameterSpread, Perturbation, PerturbedRuns, Z95};
use crate::data;
use crate::error::{Context, Error, Result};
use crate::loads::Loads;
use crate::observe::ObserveOptions;
use crate::params::Params;
use crate::progress::Progress;
use crate::provenance::{file_row, version_row};
use crate::simulate::{at_records, BaseSource, SimulateJob, Simulated};
use identify::sessions::FlangeSensor;
use lie::series::bracket;
use lie::{Pose, Vec3};
use report::page::{Block, Chart, Page, Series};
use rod::Rod;
use serde::Serialize;
use session::SessionDir;
use sim::{ContactState, Scene, StepRecord};
use std::path::{Path, PathBuf};
use validate::{errors, point_errors, range, Check, ErrorFigures, Phase, PhaseOptions, Plane};

/// How to validate: the observer, contact detection, the force filter and
/// the limits of the checks.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidateOptions {
    /// The observer (tracking noise `sigma_m` also sets contact detection).
    pub observer: ObserveOptions,
    /// The tracked tip touches when its rim is less than this above the
    /// table \[m\] (default: 3 x sigma).
    pub contact_gap_m: Option<f64>,
    /// The tracked tip slides when it moves faster than this along the table \[m/s\].
    pub slide_speed_m_s: f64,
    /// Tracked speeds are line fits over this window \[s\].
    pub speed_window_s: f64,
    /// The force sensor's bias is estimated before the simulated first
    /// contact, over at least these first seconds.
    pub rest_s: f64,
    /// Limit of the strain RMS error when the tip sticks \[% of range\].
    pub strain_stick_pct: f64,
    /// Limit of the strain RMS error when the tip slides \[% of range\].
    pub strain_slide_pct: f64,
    /// Limit of the force RMS error beyond the sensor's noise \[% of the peak measured force\].
    pub force_pct: f64,
    /// Limit of the tip slide RMS error \[mm\].
    pub slide_mm: f64,
    /// Least agreement of the stick/slide phase timelines \[% of frames\].
    pub phase_pct: f64,
    /// The force sensor's readings are averaged over this window (centred) before comparing \[s\].
    pub force_window_s: f64,
    /// Sessions validated at once.
    pub jobs: usize,
    /// Refuse a session with a damaged chunk (default: leave the chunk out,
    /// with a warning naming it and its rows).
    pub refuse_damaged: bool,
    /// Least share of the marker positions tracked in the compared span
    /// \[% of marker-frames\]: below it, the figures rest on too little.
    pub min_coverage_pct: f64,
    /// The prediction bands carry the identified parameters' uncertainty
    /// (the replay simulated once more per principal direction of their
    /// covariance); off: the bands are the measurement's noise alone.
    pub parameter_band: bool,
    /// Monte Carlo: this many draws from the parameters' covariance,
    /// each replayed, instead of one replay per principal direction (0);
    /// for replays far from linear in the parameters (a slide's onset).
    pub band_samples: usize,
    /// Where the band's replays run (default: here, in parallel).
    pub band_executor: BandExecutor,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            observer: ObserveOptions::default(),
            contact_gap_m: None,
            slide_speed_m_s: 2e-3,
            speed_window_s: 0.3,
            rest_s: 0.5,
            strain_stick_pct: 10.0,
            strain_slide_pct: 15.0,
            force_pct: 5.0,
            slide_mm: 2.0,
            phase_pct: 90.0,
            force_window_s: 0.5,
            jobs: 2,
            refuse_damaged: false,
            min_coverage_pct: 50.0,
            parameter_band: true,
            band_samples: 0,
            band_executor: BandExecutor::default(),
        }
    }
}

impl ValidateOptions {
    /// What a damaged chunk does: refused, or left out with a warning.
    pub fn damaged(&self) -> session::Damaged {
        if self.refuse_damaged {
            session::Damaged::Refuse
        } else {
            session::Damaged::Skip
        }
    }

    /// Checks every value; the error names the flag.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("--sigma-m", self.observer.sigma_m),
            ("--slide-speed-m-s", self.slide_speed_m_s),
            ("--speed-window-s", self.speed_window_s),
            ("--rest-s", self.rest_s),
            ("--force-window-s", self.force_window_s),
        ] {
            crate::error::positive(name, v)?;
        }
        if let Some(g) = self.contact_gap_m {
            crate::error::positive("--contact-gap-m", g)?;
        }
        if !(0.0..=100.0).contains(&self.min_coverage_pct) {
            return Err(Error::input(format!("--min-coverage-pct: must be in [0, 100], got {}", self.min_coverage_pct)));
        }
        Ok(())
    }
}

/// What to validate.
#[derive(Clone, Debug)]
pub struct ValidateRequest {
    pub sessions: Vec<SessionDir>,
    pub rod_path: PathBuf,
    /// The rod file's rod.
    pub rod: Rod,
    /// The parameters to validate (default: the rod file's material).
    pub params: Option<Params>,
    pub scene_path: PathBuf,
    pub scene: Scene,
    /// The flange sensor's stream, mount and tare (default: stream ft300 if the session has it).
    pub loads: Loads,
    /// One session: its report here; several: one directory each and a summary page.
    pub out: PathBuf,
    pub options: ValidateOptions,
}

/// Every session's figures, and the batch page for several.
#[derive(Clone, Debug)]
pub struct Validation {
    pub sessions: Vec<SessionSummary>,
    pub batch_page: Option<PathBuf>,
}

impl Validation {
    pub fn pass(&self) -> bool {
        self.sessions.iter().all(|s| s.pass)
    }
}

/// Validates every session (in parallel, `options.jobs` at a time); each
/// finished session is noted on `progress`.
pub fn validate(req: &ValidateRequest, progress: &dyn Progress) -> Result<Validation> {
    req.options.check()?;
    let mut names: Vec<String> = req.sessions.iter().map(SessionDir::name).collect();
    names.sort();
    names.dedup();
    if names.len() != req.sessions.len() {
        return Err(Error::input("sessions: two sessions share a directory name (their reports would overwrite each other)"));
    }
    let rod = crate::params::rod_with(req.rod.clone(), req.params.as_ref());
    if rod.markers.is_empty() {
        return Err(Error::input(format!("{}: no [[marker]]: the session's markers cannot be matched to the rod", req.rod_path.display())));
    }
    let single = req.sessions.len() == 1;
    let out_of = |dir: &SessionDir| if single { req.out.clone() } else { req.out.join(dir.name()) };
    // Parallel over sessions: each simulation and observer runs on one core.
    let jobs = req.options.jobs.clamp(1, req.sessions.len());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build().map_err(|e| Error::computation(format!("thread pool: {e}")))?;
    let results: Vec<Result<SessionSummary>> = pool.install(|| {
        use rayon::prelude::*;
        req.sessions
            .par_iter()
            .map(|dir| {
                let r = validate_session(req, &rod, dir, &out_of(dir), progress);
                if let Ok(s) = &r {
                    progress.note(&format!("finished {}: {}", s.session, if s.pass { "every check passed" } else { "checks exceeded" }));
                }
                r
            })
            .collect()
    });
    let sessions = results.into_iter().collect::<Result<Vec<_>>>()?;
    let batch_page = if single { None } else { Some(write_batch_page(req, &sessions)?) };
    Ok(Validation { sessions, batch_page })
}

const COMPONENTS: [&str; 6] = ["kappa_x", "kappa_y", "kappa_z", "eps_x", "eps_y", "eps_z"];
const COMPONENT_UNITS: [&str; 6] = ["1/m", "1/m", "1/m", "-", "-", "-"];

#[derive(Clone, Debug, Serialize)]
pub struct ComponentFigures {
    pub component: String,
    pub unit: String,
    /// Checked: the experiment strains this component beyond what the
    /// observer resolves (its simulated range is over
    /// [`RESOLVED_OVER_FLOOR`] times the observer's floor, and
    /// [`SHARE_OF_LARGEST`] of the largest component's).
    pub significant: bool,
    pub errors: ErrorFigures,
    /// The RMS error a model that describes the session exactly would show
    /// (the observer's floor: its noise and what it cannot resolve), in
    /// the component's unit.
    pub floor_rms: f64,
    /// The same floor at each section boundary, base to tip: what the
    /// prediction band of that node carries (the observer resolves the
    /// curvature at a free tip least).
    pub floor_rms_per_node: Vec<f64>,
    /// The simulated values' range (what the experiment strains it by).
    pub simulated_range: f64,
    /// The RMS error beyond that floor, `sqrt(rms^2 - floor^2)`, % of the
    /// measured range: what the check uses.
    pub excess_rms_pct: f64,
    /// RMS over the compared samples of the simulated strain's standard
    /// deviation from the identified parameters' uncertainty (0: no
    /// covariance given), in the component's unit.
    pub parameter_sd_rms: f64,
    /// Observed samples inside the prediction's 95 % band (the parameters'
    /// uncertainty and the observer's floor) \[%\]: about 95 when the
    /// model and its uncertainty describe the session.
    pub within_band_pct: f64,
}

/// Where a validation's prediction bands come from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BandFigures {
    /// The identified parameters whose covariance the bands carry (empty:
    /// the measurement's noise alone).
    pub parameters: Vec<String>,
    /// Replays simulated for them: one per principal direction, or the
    /// Monte Carlo draws.
    pub replays: usize,
    pub method: BandMethod,
    /// Parameters the fit left undetermined (no bounded interval): not in the bands.
    pub unbounded: Vec<String>,
}

/// How a band's parameter part was made (summary.json: its words).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum BandMethod {
    /// No parameters' part: the measurement's noise alone.
    #[default]
    #[serde(rename = "noise alone")]
    NoiseAlone,
    /// One replay per principal direction of the covariance.
    #[serde(rename = "first order")]
    FirstOrder,
    /// Seeded draws from the covariance, each replayed.
    #[serde(rename = "Monte Carlo")]
    MonteCarlo,
}

/// A component is checked when its simulated range is at least this many
/// times the observer's floor for it...
pub const RESOLVED_OVER_FLOOR: f64 = 1.5;
/// ...and at least this share of the largest component's (curvatures
/// times the rod's length): the twist an offset mass adds to a bend (a
/// fortieth of it) is checked, a steel core's shear (a ten-thousandth) is not.
pub const SHARE_OF_LARGEST: f64 = 0.02;

#[derive(Clone, Debug, Serialize)]
pub struct MarkerFigures {
    pub marker: usize,
    pub arc_m: f64,
    /// Distances tracked - simulated \[mm\].
    pub errors_mm: ErrorFigures,
}

#[derive(Clone, Debug, Serialize)]
pub struct ForceFigures {
    pub stream: String,
    /// "loads file" or "estimated at rest".
    pub bias_source: String,
    pub bias: [f64; 6],
    /// |F_measured - F_simulated| in the flange frame \[N\], % of the peak |F_measured|.
    pub force_n: ErrorFigures,
    /// RMS of the sensor's noise left after the filter \[N\] (from the
    /// readings' scatter about their moving average).
    pub filtered_noise_n: f64,
    /// The noise of a bias estimated at rest: the readings' noise over the
    /// samples it was estimated from \[N\] (0 for a tare from the loads file).
    pub bias_noise_n: f64,
    /// The force RMS error beyond those noises, sqrt(rms^2 - filtered^2 -
    /// bias^2), % of the peak measured force: what the check uses.
    pub excess_rms_pct: f64,
    /// Normal contact force: the sensor's change along the table normal since rest against the simulated total \[N\].
    pub normal_force_n: Option<ErrorFigures>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ContactFigures {
    /// Tip slide distance along the table, tracked against simulated \[mm\].
    pub slide_mm: ErrorFigures,
    /// The slide's RMS error beyond the tracking noise (a slide is the
    /// difference of two tracked positions along the table: 2 sigma) \[mm\]:
    /// what the check uses.
    pub slide_excess_rms_mm: f64,
    pub final_slide_measured_mm: f64,
    pub final_slide_simulated_mm: f64,
    pub phase_agreement_pct: f64,
    /// Fraction of the measured contact time spent sliding.
    pub measured_slide_fraction: f64,
    pub first_touch_measured_s: Option<f64>,
    pub first_touch_simulated_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SessionSummary {
    pub session: String,
    /// "in air", "no contact", "stick" or "slide".
    pub scene_kind: String,
    pub dir: String,
    pub report: String,
    pub parameters: [f64; 3],
    pub frames_compared: usize,
    /// Marker positions tracked in the compared span \[% of marker-frames\].
    pub marker_coverage_pct: f64,
    pub strain: Vec<ComponentFigures>,
    pub strain_headline_rms_pct: f64,
    pub strain_headline_max_pct: f64,
    pub markers: Vec<MarkerFigures>,
    pub marker_mean_offset_mm: [f64; 3],
    pub force: Option<ForceFigures>,
    pub contact: Option<ContactFigures>,
    /// What the prediction bands carry.
    pub band: BandFigures,
    pub observer_reused: bool,
    pub observer_failed_frames: usize,
    pub simulation_real_time_factor: f64,
    pub checks: Vec<Check>,
    pub pass: bool,
    pub warnings: Vec<String>,
}

/// Series for the plots (not in the summary).
#[derive(Default)]
struct Plots {
    /// Headline component: per node, (t, measured, simulated, the
    /// prediction band's half width).
    strain_nodes: Vec<Vec<(f64, f64, f64, f64)>>,
    headline: usize,
    parity: Vec<(usize, f64, f64)>,
    /// (t, measured, simulated, the band's half width per axis).
    force: Vec<(f64, Vec3, Vec3, Vec3)>,
    /// (t, measured, simulated, the band's half width).
    normal: Vec<(f64, f64, f64, f64)>,
    /// (t, tracked, simulated, the parameters' band's half width) \[mm\].
    slide: Vec<(f64, f64, f64, f64)>,
    phases: Vec<(f64, Phase, Phase)>,
    marker_err: Vec<Vec<(f64, f64)>>,
}

fn tip_phase(r: &StepRecord) -> Phase {
    match r.contacts.last().map(|c| c.state) {
        Some(ContactState::Stick) => Phase::Stick,
        Some(ContactState::Slide) => Phase::Slide,
        _ => Phase::Free,
    }
}

fn validate_session(req: &ValidateRequest, rod: &Rod, dir: &SessionDir, out: &Path, progress: &dyn Progress) -> Result<SessionSummary> {
    let o = &req.options;
    let (session_rod, measured_markers) = session_rod(rod, dir);
    let rod = &session_rod;
    let (sensor, requests) = req.loads.flange_sensor_with_request(dir);
    let s = data::load(dir, rod.markers.len(), &requests, o.damaged())?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: {e}", out.display())))?;

    // The simulation, driven by the session's robot.
    let sim_out = out.join("sim");
    let job = simulate_job(req, rod, dir, &sim_out);
    // Read once: the replays of the prediction bands are the same job's.
    let prepared = crate::simulate::prepare(&job)?;
    let done: Simulated = crate::simulate::run_prepared(&job, prepared.clone(), progress)?;
    let records = &done.records;
    let t0_ns = done.t0_host_ns.expect("a session-driven simulation has a host time origin");
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let t_of = |t_host_s: f64| t_host_s - t0_ns as f64 * 1e-9;
    let mut warnings = s.warnings.clone();
    warnings.extend(measured_markers);
    let (perturbed, band) = parameter_replays(req, &job, &prepared, dir, &mut warnings, progress)?;

    // Measured strain: the session's own strain table when it was made by
    // this rod, these parameters and this observer; else the observer now.
    let observer = ObserveOptions { energy_scale_j: None, ..o.observer };
    let (key, _) = crate::observe::key(rod, &observer, &dir.markers());
    let recorded = if dir.strain().is_file() { crate::observe::recorded(&dir.strain()) } else { Default::default() };
    let observer_reused = recorded.key.as_deref() == Some(key.as_str());
    let mut observer_failure = None;
    let (strain_path, observer_failed, session_scale_j) = if observer_reused {
        (dir.strain(), 0, recorded.energy_scale_j)
    } else {
        let ob = crate::observe::observe_held(&dir.markers(), rod, &observer, req.loads.file.tip_hold.as_ref(), &out.join("strain.parquet"), progress)?;
        warnings.extend(ob.warnings.iter().filter(|w| w.contains("--sigma-m")).cloned());
        if ob.failed > 0 {
            let (why, n) = ob.reasons.iter().max_by_key(|(_, n)| **n).expect("failures have reasons");
            let (failed, most) = (format!("the observer failed on {} of {} frames", ob.failed, ob.frames), format!("most often, {n} frames: {why}"));
            warnings.push(format!("{failed} (left out of the comparison; {most})"));
            observer_failure = Some(format!("{failed} ({most})"));
        }
        (ob.out, ob.failed, ob.energy_scale_j)
    };
    let strain_rows = session::read_strain(&strain_path).input(strain_path.display())?;

    // Strain per component, on the frames inside the simulation.
    let n_nodes = records[0].node_strain.len();
    let mut measured: [Vec<f64>; 6] = Default::default();
    let mut simulated: [Vec<f64>; 6] = Default::default();
    // Per node: (t, observed, simulated, the parameters' sd).
    type NodeSamples = Vec<(f64, [f64; 6], [f64; 6], [f64; 6])>;
    let mut per_node: Vec<NodeSamples> = vec![vec![]; n_nodes];
    let mut frames_compared = std::collections::BTreeSet::new();
    // A frame whose every marker is missing was observed from nothing: the
    // observer's rod is then the model's own, which "agrees" with anything.
    let nothing_seen = format!("missing_markers:{}", rod.markers.len());
    for r in &strain_rows {
        let t = t_of(r.t_host_ns as f64 * 1e-9);
        let node = r.node as usize;
        if r.status.starts_with("failed") || r.status == nothing_seen || node >= n_nodes || r.strain.iter().any(|v| !v.is_finite()) {
            continue;
        }
        let Some(sim) = at_records(&t_rec, records, t, |x| x.node_strain[node]) else { continue };
        let sd = perturbed.sd(t, &sim, |x| x.node_strain[node]);
        let sim: [f64; 6] = std::array::from_fn(|c| if c == 3 { sim[c] - 1.0 } else { sim[c] });
        for c in 0..6 {
            measured[c].push(r.strain[c]);
            simulated[c].push(sim[c]);
        }
        per_node[node].push((t, r.strain, sim, sd.into()));
        frames_compared.insert(r.frame);
    }
    if frames_compared.is_empty() {
        let why = observer_failure.unwrap_or_else(|| "no frame inside the simulated span (robot log) has a tracked marker".into());
        return Err(Error::input(format!("{}: {why}: nothing to validate against", dir.path().display())));
    }
    let coverage_pct = marker_coverage_pct(&s.markers, &|t| t_of(t), t_rec[0], t_rec[t_rec.len() - 1]);
    // What a model that describes the session exactly would show here: the
    // observer's floor, per component.
    // The markers' noise: as the observer takes it (the declared sigma, never
    // below the estimate); the hard observer's markers are exact (a declared
    // sigma then only sets contact detection): their estimated noise alone.
    let estimated_noise_m = crate::observe::marker_noise_m(s.markers.iter().map(|m| m.1.as_slice())).unwrap_or(0.0);
    let noise_m = match o.observer.mode {
        crate::observe::ObserverMode::Weighted => o.observer.sigma_m.max(estimated_noise_m),
        crate::observe::ObserverMode::Hard => estimated_noise_m,
    };
    let floor_frames: Vec<f64> = per_node.first().map(|v| v.iter().map(|x| x.0).collect()).unwrap_or_default();
    let sim_base = lie::trajectory::PoseTrajectory::new(records.iter().map(|r| (r.t_s, r.base_pose)).collect::<Vec<_>>())
        .map_err(|e| Error::computation(format!("the simulation's base poses: {e}")))?;
    let tip_at = |t: f64| rod::TipHold::at(rod.tip_condition, &done.scene.tip_pose_at(t)?);
    // Observed as the session's markers were: with the energy scale the
    // session's observation used. A scale chosen afresh on the simulated
    // markers may suit that motion worse than the session's suits its own
    // (a floor above the error it bounds let a wrong model pass).
    let floor_observer = ObserveOptions { energy_scale_j: session_scale_j, ..observer };
    let Floor { component: floor, node: node_floor } =
        observer_floor(rod, &floor_observer, noise_m, done.scene.gravity_m_s2, &floor_frames, &t_rec, records, &|t| sim_base.at(t).ok(), &tip_at)?;
    // Curvatures scaled by the length, strains as they are: comparable.
    let scaled: Vec<f64> = (0..6).map(|c| range(&simulated[c]) * if c < 3 { rod.length_m } else { 1.0 }).collect();
    let largest = scaled.iter().cloned().fold(0.0, f64::max);
    let strain: Vec<ComponentFigures> = (0..6)
        .map(|c| {
            let e = errors(&measured[c], &simulated[c], range(&measured[c]));
            let samples = per_node.iter().enumerate().flat_map(|(k, v)| v.iter().map(move |x| (k, x)));
            let n = samples.clone().count().max(1) as f64;
            let inside = samples.clone().filter(|(k, x)| (x.1[c] - x.2[c]).abs() <= band_half_width(x.3[c], node_floor[*k][c])).count() as f64;
            ComponentFigures {
                parameter_sd_rms: (samples.map(|(_, x)| x.3[c].powi(2)).sum::<f64>() / n).sqrt(),
                within_band_pct: 100.0 * inside / n,
                component: COMPONENTS[c].into(),
                unit: COMPONENT_UNITS[c].into(),
                significant: range(&simulated[c]) > RESOLVED_OVER_FLOOR * floor[c] && scaled[c] >= SHARE_OF_LARGEST * largest && largest > 0.0,
                excess_rms_pct: 100.0 * (e.rms.powi(2) - floor[c].powi(2)).max(0.0).sqrt() / e.scale,
                floor_rms: floor[c],
                floor_rms_per_node: node_floor.iter().map(|f| f[c]).collect(),
                simulated_range: range(&simulated[c]),
                errors: e,
            }
        })
        .collect();
    let headline = (0..6).filter(|c| strain[*c].significant).max_by(|x, y| strain[*x].excess_rms_pct.total_cmp(&strain[*y].excess_rms_pct)).unwrap_or(1);
    let mut plots = Plots { headline, ..Plots::default() };
    plots.strain_nodes = per_node
        .iter()
        .zip(&node_floor)
        .map(|(v, f)| v.iter().map(|(t, m, s, sd)| (*t, m[headline], s[headline], band_half_width(sd[headline], f[headline]))).collect())
        .collect();
    for c in (0..6).filter(|c| strain[*c].significant) {
        plots.parity.extend(measured[c].iter().zip(&simulated[c]).step_by((measured[c].len() / 400).max(1)).map(|(m, s)| (c, *m, *s)));
    }

    // Markers, tracked against simulated.
    let n_markers = rod.markers.len();
    let mut tracked: Vec<Vec<Vec3>> = vec![vec![]; n_markers];
    let mut sim_markers: Vec<Vec<Vec3>> = vec![vec![]; n_markers];
    plots.marker_err = vec![vec![]; n_markers];
    for (t_host, ms) in &s.markers {
        let t = t_of(*t_host);
        for (m, p) in ms.iter().enumerate() {
            let (Some(seen), Some(q)) = (p, at_records(&t_rec, records, t, |x| x.markers_m[m])) else { continue };
            // A ray (one camera of a set saw the marker) at its point
            // nearest the simulated marker: the error it measures.
            let p = q - seen.miss(&q);
            tracked[m].push(p);
            sim_markers[m].push(q);
            plots.marker_err[m].push((t, (p - q).norm() * 1e3));
        }
    }
    let markers: Vec<MarkerFigures> = (0..n_markers)
        .map(|m| {
            let e = point_errors(&tracked[m], &sim_markers[m], 1.0);
            MarkerFigures { marker: m, arc_m: rod.markers[m].arc_m, errors_mm: scale_figures(e, 1e3) }
        })
        .collect();
    let all_tracked: Vec<Vec3> = tracked.concat();
    let all_sim: Vec<Vec3> = sim_markers.concat();
    let offset = validate::mean_offset(&all_tracked, &all_sim);
    let marker_rms = point_errors(&all_tracked, &all_sim, 1.0).rms;
    // A consistent offset is the rig's frames, not the model: say so.
    if offset.norm() > (3.0 * o.observer.sigma_m).max(5e-4) && offset.norm() > 0.5 * marker_rms {
        warnings.push(format!(
            "the tracked markers sit {:.2} mm from the simulated ones on average ({:.2}, {:.2}, {:.2} mm, world frame), a consistent offset: the rig's frames are likely off (robot_base, board or marker_height_m in the rig file; measure them with `rodlab rig calibrate`)",
            offset.norm() * 1e3,
            offset.x * 1e3,
            offset.y * 1e3,
            offset.z * 1e3
        ));
    }

    // The table, as the simulation placed it.
    let plane = done.scene.table.as_ref().map(|p| Plane { point_m: p.point_m, normal: p.normal.normalize() });
    let flange_world = lie::trajectory::PoseTrajectory::new(s.flange.iter().map(|(t, g)| (t_of(*t), *g)).collect::<Vec<_>>())
        .input(format!("{}: robot stream", dir.path().display()))?;

    // Force sensor against the simulated base wrench.
    let force = match &sensor {
        Some((fs, tare_given)) => Some(compare_force(
            fs,
            *tare_given,
            &s.streams[&fs.stream],
            &t_rec,
            records,
            &t_of,
            o.rest_s,
            o.force_window_s,
            plane.as_ref(),
            &flange_world,
            &perturbed,
            &mut plots,
        )?),
        None => None,
    };

    // Contact: the tracked tip's rim point, its phases and slide.
    let contact = plane.map(|plane| compare_contact(o, rod, &s.markers, &t_rec, records, &t_of, &plane, &perturbed, &mut plots));

    let mut checks = vec![Check::at_least("tracked marker coverage", coverage_pct, o.min_coverage_pct, "% of marker-frames")];
    checks.extend(session_checks(o, &strain, force.as_ref(), contact.as_ref(), plane.is_some()));
    for c in checks.iter().filter(|c| !c.pass) {
        warnings.push(format!(
            "{} is {:.3} {}, beyond the limit of {} {}: the model with these parameters does not describe this session{}",
            c.name,
            c.value,
            c.unit,
            c.limit,
            c.unit,
            req.params.as_ref().map_or(String::new(), |p| format!(" (parameters from {})", p.path.display()))
        ));
    }
    warnings.extend(stream_gaps(dir.path(), &s.streams, &s.flange));

    let body = rod.cross_section.body;
    let summary = SessionSummary {
        session: s.name.clone(),
        scene_kind: scene_kind(plane.is_some(), contact.as_ref()).into(),
        dir: dir.path().display().to_string(),
        report: out.join("index.html").display().to_string(),
        parameters: [body.e_pa, body.g_pa, body.rho_kg_m3],
        frames_compared: frames_compared.len(),
        marker_coverage_pct: coverage_pct,
        strain_headline_rms_pct: strain[headline].errors.rms_pct,
        strain_headline_max_pct: strain[headline].errors.max_pct,
        strain,
        markers,
        marker_mean_offset_mm: [offset.x * 1e3, offset.y * 1e3, offset.z * 1e3],
        force,
        contact,
        band,
        observer_reused,
        observer_failed_frames: observer_failed,
        simulation_real_time_factor: done.summary.real_time_factor,
        pass: checks.iter().all(|c| c.pass),
        checks,
        warnings,
    };
    let page = session_page(req, rod, dir, &summary, &plots);
    report::page::write_page(out, &page, &summary)?;
    Ok(summary)
}

/// The rod as `dir` saw it: its markers where the session measured them on
/// the body (a reference window), and a line saying which. Validate
/// and a band's worker replay this rod alike.
fn session_rod(rod: &Rod, dir: &SessionDir) -> (Rod, Option<String>) {
    data::rod_for_session(rod, dir.meta().ok().flatten().as_ref(), dir)
}

/// The session's replay, driven by its robot, into `out`.
fn simulate_job<'a>(req: &'a ValidateRequest, rod: &'a Rod, dir: &SessionDir, out: &'a Path) -> SimulateJob<'a> {
    SimulateJob {
        rod,
        rod_path: &req.rod_path,
        scene: crate::params::scene_with(req.scene.clone(), req.params.as_ref()),
        scene_path: &req.scene_path,
        params_path: req.params.as_ref().map(|p| p.path.as_path()),
        base: BaseSource::Session(dir.clone()),
        rig_frames: None,
        duration_s: None,
        out,
        damaged: req.options.damaged(),
        session_loads: Some(&req.loads),
    }
}

/// The parameters' spread a band carries (empty without a covariance, or
/// with `parameter_band` off), and the changes of the parameters its
/// replays are made at: one per principal direction, or the seeded Monte
/// Carlo draws.
fn band_perturbations(req: &ValidateRequest) -> (ParameterSpread, Vec<Perturbation>) {
    let spread = match (&req.params, req.options.parameter_band) {
        (Some(p), true) => ParameterSpread::of(&p.file),
        _ => ParameterSpread::default(),
    };
    let draws = req.options.band_samples;
    let perturbations = if draws > 0 && !spread.is_empty() { spread.samples(draws, BAND_SEED) } else { spread.directions.clone() };
    (spread, perturbations)
}

/// Replay `index` of `session`'s prediction band, alone: what an
/// executor's worker runs for a [`crate::band::BandRunner`]. From the
/// validation's own request it is the replay validate makes, to the bit.
pub fn band_replay(req: &ValidateRequest, session: &SessionDir, index: usize) -> Result<crate::simulate::Replay> {
    let (session_rod, _) = session_rod(&crate::params::rod_with(req.rod.clone(), req.params.as_ref()), session);
    let (_, perturbations) = band_perturbations(req);
    let Some(change) = perturbations.get(index) else {
        return Err(Error::input(format!("band replay {index}: the band of {} has {} replays", session.name(), perturbations.len())));
    };
    let nowhere = PathBuf::new();
    let job = simulate_job(req, &session_rod, session, &nowhere);
    let prepared = crate::simulate::prepare(&job)?;
    crate::simulate::replay(&job, &prepared, &change.apply(&session_rod))
}

/// The replays at the identified parameters' principal deviations (none
/// without a covariance, or with `parameter_band` off), here or by the
/// options' executor, and what the bands then carry; a replay that
/// stopped, and parameters without a variance, are named in `warnings`.
fn parameter_replays(
    req: &ValidateRequest,
    job: &SimulateJob,
    prepared: &crate::simulate::Prepared,
    dir: &SessionDir,
    warnings: &mut Vec<String>,
    progress: &dyn Progress,
) -> Result<(PerturbedRuns, BandFigures)> {
    let (spread, perturbations) = band_perturbations(req);
    if !spread.unbounded.is_empty() {
        warnings
            .push(format!("prediction bands: the fit left {} undetermined (the data do not bound it): the bands leave it out", spread.unbounded.join(", ")));
    }
    if spread.is_empty() {
        return Ok((PerturbedRuns::default(), BandFigures { unbounded: spread.unbounded, ..BandFigures::default() }));
    }
    let n = perturbations.len();
    let task = progress.task(&format!("prediction band of {}", dir.name()), Some(n as u64));
    let replays = match &req.options.band_executor.0 {
        Some(runner) => {
            let got = runner.replay(dir, n, task.as_ref())?;
            if got.len() != n {
                return Err(Error::computation(format!("prediction bands: the executor returned {} replays of {n}", got.len())));
            }
            got
        }
        None => {
            use rayon::prelude::*;
            let done = std::sync::atomic::AtomicU64::new(0);
            let replay = |d: &Perturbation| {
                let r = crate::simulate::replay(job, prepared, &d.apply(job.rod));
                task.set(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                r
            };
            perturbations.par_iter().map(replay).collect::<Result<Vec<_>>>()?
        }
    };
    drop(task);
    let mut runs = vec![];
    for (k, r) in replays.into_iter().enumerate() {
        match r.stopped {
            None => runs.push(r.records),
            Some(e) => warnings.push(format!(
                "prediction bands: replay {} of {n} stopped at t = {:.4} s ({e}): the bands leave that replay out",
                k + 1,
                r.records.last().map_or(0.0, |x| x.t_s)
            )),
        }
    }
    let (runs, method) =
        if req.options.band_samples > 0 { (PerturbedRuns::drawn(runs), BandMethod::MonteCarlo) } else { (PerturbedRuns::new(runs), BandMethod::FirstOrder) };
    Ok((runs, BandFigures { parameters: spread.parameters, replays: n, method, unbounded: spread.unbounded }))
}

/// The Monte Carlo draws' seed: a report is the same on every run.
const BAND_SEED: u64 = 11;

/// A 95 % prediction band's half width: the parameters' standard deviation
/// and the measurement's noise (for strain, the observer's floor) in
/// quadrature.
fn band_half_width(parameter_sd: f64, noise_rms: f64) -> f64 {
    Z95 * parameter_sd.hypot(noise_rms)
}

/// The share of marker positions tracked (not missing) in the frames
/// whose session time (`t_of`) lies in `[t0, t1]` \[%\]: what every
/// figure of the comparison rests on.
fn marker_coverage_pct(markers: &[(f64, Vec<Option<rod::Sighting>>)], t_of: &dyn Fn(f64) -> f64, t0: f64, t1: f64) -> f64 {
    let inside: Vec<&Vec<Option<rod::Sighting>>> = markers.iter().filter(|(t, _)| (t0..=t1).contains(&t_of(*t))).map(|(_, m)| m).collect();
    let slots: usize = inside.iter().map(|m| m.len()).sum();
    let seen: usize = inside.iter().map(|m| m.iter().filter(|p| p.is_some()).count()).sum();
    if slots == 0 {
        0.0
    } else {
        100.0 * seen as f64 / slots as f64
    }
}

/// What the scene is, for the checks' names: "in air" (no table), "no
/// contact" (a table never touched), "slide" or "stick" (the tip's
/// measured phase).
fn scene_kind(table: bool, contact: Option<&ContactFigures>) -> &'static str {
    match contact {
        _ if !table => "in air",
        Some(c) if c.first_touch_measured_s.is_none() && c.first_touch_simulated_s.is_none() => "no contact",
        Some(c) if c.measured_slide_fraction > 0.05 => "slide",
        _ => "stick",
    }
}

/// The session's checks: each strain component the experiment strains
/// beyond the observer's floor, the force beyond the sensor's noise, the
/// tip's slide beyond the tracking noise and the phases' agreement.
fn session_checks(o: &ValidateOptions, strain: &[ComponentFigures], force: Option<&ForceFigures>, contact: Option<&ContactFigures>, table: bool) -> Vec<Check> {
    let kind = scene_kind(table, contact);
    let limit = if kind == "slide" { o.strain_slide_pct } else { o.strain_stick_pct };
    let mut checks: Vec<Check> = strain
        .iter()
        .filter(|c| c.significant)
        .map(|c| Check::at_most(format!("strain RMS error beyond the observer's floor ({}, {kind})", c.component), c.excess_rms_pct, limit, "% of range"))
        .collect();
    if let Some(f) = force {
        checks.push(Check::at_most("force RMS error beyond sensor noise", f.excess_rms_pct, o.force_pct, "% of peak"));
    }
    if let Some(c) = contact {
        if c.first_touch_measured_s.is_some() || c.first_touch_simulated_s.is_some() {
            checks.push(Check::at_most("tip slide RMS error beyond tracking noise", c.slide_excess_rms_mm, o.slide_mm, "mm"));
            checks.push(Check::at_least("stick/slide phase agreement", c.phase_agreement_pct, o.phase_pct, "% of frames"));
        }
    }
    checks
}

/// The observer's floor: per strain component, the RMS error a model that
/// describes the session exactly would show, over every node and per node.
struct Floor {
    component: [f64; 6],
    /// Per node (what the observer resolves differs along the rod: the
    /// curvature at a free tip least).
    node: Vec<[f64; 6]>,
}

/// The observer's floor ([`Floor`]): the simulated markers at the
/// compared frames' times `frame_t` (at most 1500 of them), with the
/// tracking's noise `noise_m` added (seeded), observed as the session's
/// markers are, against the simulated strain. What the observer cannot
/// resolve (the curvature at a free tip, a twist seen by markers on the
/// centre line) and the noise it lets through are in it.
#[allow(clippy::too_many_arguments)]
fn observer_floor(
    rod: &Rod,
    observer: &ObserveOptions,
    noise_m: f64,
    gravity_m_s2: Vec3,
    frame_t: &[f64],
    t_rec: &[f64],
    records: &[StepRecord],
    base_at: &dyn Fn(f64) -> Option<Pose>,
    tip_at: &dyn Fn(f64) -> Option<rod::TipHold>,
) -> Result<Floor> {
    let mut rod = rod.clone();
    rod.gravity_m_s2 = gravity_m_s2;
    let mode = match observer.mode {
        crate::observe::ObserverMode::Hard => observe::Mode::Hard,
        crate::observe::ObserverMode::Weighted => observe::Mode::Weighted { energy_scale_j: observer.energy_scale_j },
    };
    let mut obs = observe::Observer::new(&rod, mode).map_err(|e| Error::input(e.to_string()))?;
    let mut noise = crate::synth::Noise::new(7);
    let n_markers = rod.markers.len();
    let stride = frame_t.len().div_ceil(1500).max(1);
    let frames: Vec<(f64, Pose, Vec<Option<Vec3>>)> = frame_t
        .iter()
        .step_by(stride)
        .filter_map(|&t| {
            let base = base_at(t)?;
            let markers =
                (0..n_markers).map(|m| at_records(t_rec, records, t, |r| r.markers_m[m]).map(|p| p + Vec3::from_fn(|_, _| noise.sample(noise_m)))).collect();
            Some((t, base, markers))
        })
        .collect();
    // The springs' sigma as the session's observer takes it.
    let sigma = vec![observer.sigma_m.max(noise_m); n_markers];
    if matches!(mode, observe::Mode::Weighted { energy_scale_j: None }) {
        let candidates: Vec<observe::FrameInput> = frames
            .iter()
            .map(|(t, b, m)| observe::FrameInput { base: *b, tip: tip_at(*t), markers: m.iter().map(|p| p.map(rod::Sighting::point)).collect() })
            .collect();
        obs.choose_energy_scale(&candidates, &sigma);
    }
    let n_nodes = records.first().map_or(0, |r| r.node_strain.len());
    let (mut sq, mut n) = (vec![[0.0; 6]; n_nodes], vec![[0usize; 6]; n_nodes]);
    for (t, base, markers) in &frames {
        obs.set_base(base);
        if let Some(hold) = tip_at(*t) {
            obs.set_tip_hold(hold);
        }
        let ob = obs.observe(markers, &sigma).map_err(|e| Error::input(e.to_string()))?;
        if matches!(ob.status, observe::Status::Failed(_)) {
            continue;
        }
        for (node, observed) in ob.nodal_strain.iter().enumerate().take(n_nodes) {
            let Some(sim) = at_records(t_rec, records, *t, |x| x.node_strain[node]) else { continue };
            for c in 0..6 {
                let d = observed[c] - sim[c];
                if d.is_finite() {
                    sq[node][c] += d * d;
                    n[node][c] += 1;
                }
            }
        }
    }
    let rms = |sq: f64, n: usize| if n > 0 { (sq / n as f64).sqrt() } else { 0.0 };
    Ok(Floor {
        component: std::array::from_fn(|c| rms(sq.iter().map(|s| s[c]).sum(), n.iter().map(|k| k[c]).sum())),
        node: sq.iter().zip(&n).map(|(s, k)| std::array::from_fn(|c| rms(s[c], k[c]))).collect(),
    })
}

fn scale_figures(e: ErrorFigures, k: f64) -> ErrorFigures {
    ErrorFigures { rms: e.rms * k, max_abs: e.max_abs * k, mean: e.mean * k, scale: e.scale * k, ..e }
}

#[allow(clippy::too_many_arguments)]
fn compare_force(
    fs: &FlangeSensor,
    tare_given: bool,
    stream: &identify::sessions::Stream,
    t_rec: &[f64],
    records: &[StepRecord],
    t_of: &dyn Fn(f64) -> f64,
    rest_s: f64,
    window_s: f64,
    plane: Option<&Plane>,
    flange_world: &lie::trajectory::PoseTrajectory,
    perturbed: &PerturbedRuns,
    plots: &mut Plots,
) -> Result<ForceFigures> {
    let col = |k: usize| &stream.columns[&fs.columns[k]];
    let mount: Pose = fs.mount.pose();
    // Samples inside the simulation: time, sensor force and moment (sensor frame), simulated force (flange frame).
    let mut samples: Vec<(f64, Vec3, Vec3, Vec3)> = vec![];
    for (i, th) in stream.t_s.iter().enumerate() {
        let t = t_of(*th);
        let Some(w) = at_records(t_rec, records, t, |r| r.base_wrench_flange) else { continue };
        let f = Vec3::new(col(0)[i], col(1)[i], col(2)[i]);
        let m = Vec3::new(col(3)[i], col(4)[i], col(5)[i]);
        if f.iter().chain(m.iter()).all(|v| v.is_finite()) {
            samples.push((t, f, m, lie::linear(&w)));
        }
    }
    if samples.is_empty() {
        return Err(Error::input(format!("stream '{}': no sample inside the simulated span", fs.stream)));
    }
    // Samples the bias was estimated from (none: the loads file's tare).
    let mut rest_samples = 0usize;
    // At rest: while the rod touches nothing (every sample before the
    // simulated first contact), or, for a rod on the table from the start,
    // while the robot has not moved yet (a static contact the simulation
    // settles exactly); the more samples, the less the bias's own noise;
    // at least the first `rest_s` seconds.
    let first_touch = records.iter().find(|r| r.contacts.iter().any(|c| c.state != ContactState::Free)).map(|r| r.t_s);
    let first_move = records.iter().find(|r| (r.base_pose.pos - records[0].base_pose.pos).norm() > 1e-4).map(|r| r.t_s);
    let rest_until = if first_touch.is_some_and(|t| t <= records[0].t_s) { first_move } else { first_touch };
    let rest_end = rest_until.map_or(samples[0].0 + rest_s, |t| (t - 0.1).max(samples[0].0 + rest_s));
    let (bias_f, bias_m, bias_source) = if tare_given {
        let b = fs.bias_in(stream).map_err(|e| Error::input(e.to_string()))?;
        let source = match fs.tare_window_s {
            Some([a, b]) => format!("loads file (tare over {a}-{b} s)"),
            None => "loads file (tare)".to_string(),
        };
        (Vec3::new(b[0], b[1], b[2]), Vec3::new(b[3], b[4], b[5]), source)
    } else {
        // Reading minus simulation, in the sensor frame, at rest.
        let rest: Vec<&(f64, Vec3, Vec3, Vec3)> = samples.iter().filter(|s| s.0 <= rest_end).collect();
        rest_samples = rest.len();
        let bf = rest.iter().map(|s| s.1 - mount.rot.transpose() * s.3).sum::<Vec3>() / rest.len() as f64;
        (bf, Vec3::zeros(), format!("estimated over the first {:.2} s, before contact (reading minus simulation)", rest_end - samples[0].0))
    };
    let raw: Vec<Vec3> = samples.iter().map(|s| mount.rot * (s.1 - bias_f)).collect();
    let times: Vec<f64> = samples.iter().map(|s| s.0).collect();
    // The same filter on both: the sensor's noise goes, the comparison stays fair.
    let meas = lie::series::moving_average(&times, &raw, window_s);
    let simf_raw: Vec<Vec3> = samples.iter().map(|s| s.3).collect();
    let simf = lie::series::moving_average(&times, &simf_raw, window_s);
    let peak = meas.iter().map(|f| f.norm()).fold(0.0, f64::max);
    let force_n = point_errors(&meas, &simf, peak);
    // Noise the filter lets through: the readings' scatter about their
    // moving average, divided by the samples per window.
    let scatter = raw.iter().zip(&meas).map(|(r, m)| (r - m).norm_squared()).sum::<f64>() / raw.len() as f64;
    let per_window = (window_s * (raw.len() as f64 - 1.0) / (times[times.len() - 1] - times[0]).max(1e-12)).max(1.0);
    let filtered_noise_n = (scatter / per_window).sqrt();
    // A bias estimated from noisy readings is off by their noise over the
    // samples it used, in every comparison after it.
    let bias_noise_n = if rest_samples > 0 { (scatter / rest_samples as f64).sqrt() } else { 0.0 };
    let excess_rms_pct = 100.0 * (force_n.rms.powi(2) - filtered_noise_n.powi(2) - bias_noise_n.powi(2)).max(0.0).sqrt() / peak;
    // The band: the parameters' spread through the same filter, and the
    // noise the comparison allows for.
    let smooth = |t: &[f64], v: &[Vec3]| lie::series::moving_average(t, v, window_s);
    let sd = perturbed.sd_filtered(&samples.iter().map(|s| (s.0, s.3)).collect::<Vec<_>>(), |r| lie::linear(&r.base_wrench_flange), smooth);
    let noise_n = filtered_noise_n.hypot(bias_noise_n);
    plots.force = times.iter().zip(meas.iter().zip(&simf)).zip(&sd).map(|((t, (m, f)), sd)| (*t, *m, *f, sd.map(|x| band_half_width(x, noise_n)))).collect();
    // Normal contact force: the sensor's change along the table normal since rest.
    let normal_force_n = plane.and_then(|plane| {
        let world = |t: f64, f: &Vec3| flange_world.at(t).ok().map(|g| g.rot * f);
        let rest: Vec<Vec3> = samples.iter().zip(&meas).filter(|(s, _)| s.0 <= rest_end).filter_map(|(s, m)| world(s.0, m)).collect();
        if rest.is_empty() {
            return None;
        }
        let rest_mean = rest.iter().sum::<Vec3>() / rest.len() as f64;
        let rows: Vec<(f64, f64, f64)> = samples
            .iter()
            .zip(&meas)
            .filter_map(|(s, m)| {
                let fw = world(s.0, m)?;
                let n_sim = at_records(t_rec, records, s.0, |r| r.normal_force_n)?;
                // The rod pulls the flange with its weight less what the table
                // carries: the change along the normal is the normal force.
                Some((s.0, (fw - rest_mean).dot(&plane.normal), n_sim))
            })
            .collect();
        let m: Vec<f64> = rows.iter().map(|r| r.1).collect();
        // The simulated total through the sensor's filter too.
        let t: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let sm: Vec<f64> = lie::series::moving_average(&t, &rows.iter().map(|r| r.2).collect::<Vec<_>>(), window_s);
        let smooth = |t: &[f64], v: &[nalgebra::Vector1<f64>]| lie::series::moving_average(t, v, window_s);
        let sd = perturbed.sd_filtered(
            &rows.iter().map(|r| (r.0, nalgebra::Vector1::new(r.2))).collect::<Vec<_>>(),
            |r| nalgebra::Vector1::new(r.normal_force_n),
            smooth,
        );
        let peak = m.iter().chain(&sm).cloned().fold(0.0, f64::max);
        plots.normal = rows.iter().zip(&sm).zip(&sd).map(|((r, s), sd)| (r.0, r.1, *s, band_half_width(sd[0], noise_n))).collect();
        (peak > 0.0).then(|| errors(&m, &sm, peak))
    });
    Ok(ForceFigures {
        stream: fs.stream.clone(),
        bias_source,
        bias: [bias_f.x, bias_f.y, bias_f.z, bias_m.x, bias_m.y, bias_m.z],
        force_n,
        filtered_noise_n,
        bias_noise_n,
        excess_rms_pct,
        normal_force_n,
    })
}

#[allow(clippy::too_many_arguments)]
fn compare_contact(
    o: &ValidateOptions,
    rod: &rod::Rod,
    markers: &[(f64, Vec<Option<rod::Sighting>>)],
    t_rec: &[f64],
    records: &[StepRecord],
    t_of: &dyn Fn(f64) -> f64,
    plane: &Plane,
    perturbed: &PerturbedRuns,
    plots: &mut Plots,
) -> ContactFigures {
    // The outermost marker and the outermost one before it along the rod
    // (clusters and any order allowed: by arc length, not by index).
    let by_arc =
        |below: f64| (0..rod.markers.len()).filter(|&k| rod.markers[k].arc_m < below).max_by(|&a, &b| rod.markers[a].arc_m.total_cmp(&rod.markers[b].arc_m));
    let tip_marker = by_arc(f64::INFINITY);
    let before_tip = tip_marker.and_then(|k| by_arc(rod.markers[k].arc_m - 1e-9));
    let tip_arc = tip_marker.map_or(0.0, |k| rod.markers[k].arc_m);
    // Two markers do not give the section's roll: the rim nearest the table
    // is taken half the section's height from the axis (a round rod's
    // radius; a rectangle lying on its face).
    let radius = rod.cross_section.half_extents_m(rod.length_m, rod.length_m).1;
    // The tip's centre (extrapolated along the last two markers when the
    // last marker is not at the tip), and its rim point nearest the table.
    let mut t = vec![];
    let mut centre = vec![];
    let mut rim = vec![];
    for (th, ms) in markers {
        let tt = t_of(*th);
        if bracket(t_rec, tt).is_none() {
            continue;
        }
        let point = |k: Option<usize>| k.and_then(|k| ms.get(k).copied().flatten()?.as_point());
        let (Some(p), Some(q)) = (point(tip_marker), point(before_tip)) else { continue };
        let tangent = (p - q).normalize();
        let c = p + tangent * (rod.length_m - tip_arc);
        t.push(tt);
        centre.push(c);
        rim.push(validate::lowest_rim_point(&c, &tangent, radius, plane));
    }
    // Contact is within three sigma of the table: the markers' sigma as
    // asked, never below their noise.
    let noise_m = crate::observe::marker_noise_m(markers.iter().map(|m| m.1.as_slice())).unwrap_or(0.0);
    let po = PhaseOptions {
        contact_gap_m: o.contact_gap_m.unwrap_or(3.0 * o.observer.sigma_m.max(noise_m)),
        slide_speed_m_s: o.slide_speed_m_s,
        speed_window_s: o.speed_window_s,
    };
    let measured = validate::measured_phases(&t, &rim, plane, &po);
    let simulated: Vec<Phase> =
        t.iter().map(|tt| bracket(t_rec, *tt).map_or(Phase::Free, |(i, j, w)| tip_phase(&records[if w < 0.5 { i } else { j }]))).collect();
    let slide_m = validate::slide_since_touch(&centre, &measured, plane);
    let slide_sim: Vec<f64> = t.iter().map(|tt| at_records(t_rec, records, *tt, |r| r.tip_slide_m).unwrap_or(f64::NAN)).collect();
    let in_contact = measured.iter().filter(|p| **p != Phase::Free).count();
    plots.phases = t.iter().zip(measured.iter().zip(&simulated)).map(|(t, (m, s))| (*t, *m, *s)).collect();
    let slide_sd = |t: f64, s: f64| perturbed.sd(t, &nalgebra::Vector1::new(s), |r| nalgebra::Vector1::new(r.tip_slide_m))[0];
    plots.slide = t.iter().zip(slide_m.iter().zip(&slide_sim)).map(|(t, (m, s))| (*t, m * 1e3, s * 1e3, Z95 * slide_sd(*t, *s) * 1e3)).collect();
    let first = |p: &[Phase]| p.iter().position(|x| *x != Phase::Free).map(|k| t[k]);
    let slide_mm = scale_figures(errors(&slide_m, &slide_sim, 1.0), 1e3);
    let slide_noise_mm = 2e3 * o.observer.sigma_m.max(noise_m);
    ContactFigures {
        slide_excess_rms_mm: (slide_mm.rms.powi(2) - slide_noise_mm.powi(2)).max(0.0).sqrt(),
        slide_mm,
        final_slide_measured_mm: slide_m.last().map_or(f64::NAN, |v| v * 1e3),
        final_slide_simulated_mm: slide_sim.last().map_or(f64::NAN, |v| v * 1e3),
        phase_agreement_pct: 100.0 * validate::agreement(&measured, &simulated),
        measured_slide_fraction: if in_contact > 0 { measured.iter().filter(|p| **p == Phase::Slide).count() as f64 / in_contact as f64 } else { 0.0 },
        first_touch_measured_s: first(&measured),
        first_touch_simulated_s: first(&simulated),
    }
}

/// Gaps in the streams: intervals longer than 3 median sample intervals.
fn stream_gaps(dir: &Path, streams: &std::collections::BTreeMap<String, identify::sessions::Stream>, flange: &[(f64, Pose)]) -> Vec<String> {
    let robot: Vec<f64> = flange.iter().map(|s| s.0).collect();
    let mut out = vec![];
    for (name, t) in std::iter::once(("robot", &robot)).chain(streams.iter().map(|(k, v)| (k.as_str(), &v.t_s))) {
        if t.len() < 3 {
            continue;
        }
        let mut dt: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let longest = dt.iter().cloned().fold(0.0, f64::max);
        dt.sort_by(f64::total_cmp);
        let median = dt[dt.len() / 2];
        let gaps = dt.iter().filter(|d| **d > 3.0 * median).count();
        if gaps > 0 {
            out.push(format!("stream '{name}' of {} has {gaps} gaps (longest {longest:.3} s, median interval {median:.4} s)", dir.display()));
        }
    }
    out
}

fn fmt_fig(e: &ErrorFigures, unit: &str) -> [String; 4] {
    [format!("{:.4} {unit}", e.rms), format!("{:.4} {unit}", e.max_abs), format!("{:.2} %", e.rms_pct), format!("{:.2} %", e.max_pct)]
}

fn session_page(req: &ValidateRequest, rod: &Rod, dir: &SessionDir, s: &SessionSummary, p: &Plots) -> Page {
    let mut blocks = vec![Block::Text(format!(
        "Session {} against the simulation of the scene {} ({}) driven by {}. {} frames compared. Verdict: {}.",
        dir.path().display(),
        req.scene_path.display(),
        s.scene_kind,
        if dir.has_stream("robot") { "its robot stream" } else { "its motion-capture base (the clamp's markers)" },
        s.frames_compared,
        if s.pass { "every check passed" } else { "checks exceeded (see the warnings)" }
    ))];
    blocks.push(Block::Warnings(s.warnings.clone()));
    blocks.push(Block::Heading("Checks".into()));
    blocks.push(Block::Table(
        ["figure", "value", "limit", "result"].map(String::from).to_vec(),
        s.checks
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    format!("{:.3} {}", c.value, c.unit),
                    format!("{} {} {}", if c.at_least { ">=" } else { "<=" }, c.limit, c.unit),
                    if c.pass { "pass" } else { "EXCEEDED" }.into(),
                ]
            })
            .collect(),
    ));
    blocks.push(Block::Heading("Parameters".into()));
    let mut rows = vec![];
    for (k, (name, unit)) in [("E", "Pa"), ("G", "Pa"), ("rho", "kg/m^3")].iter().enumerate() {
        let interval = req.params.as_ref().map(Params::material_ci95).map_or("-".to_string(), |ci| format!("[{:.4e}, {:.4e}]", ci[k][0], ci[k][1]));
        rows.push(vec![name.to_string(), format!("{:.4e} {unit}", s.parameters[k]), interval]);
    }
    // The table's friction the replay ran with: identify --dynamic's, else the scene's.
    if let Some(table) = crate::params::scene_with(req.scene.clone(), req.params.as_ref()).table {
        let fitted = req.params.as_ref().and_then(|p| p.file.dynamic.as_ref()).filter(|d| !d.no_table);
        let interval = fitted.map_or("- (the scene's)".to_string(), |d| format!("[{:.4}, {:.4}] (identify --dynamic)", d.mu_ci95[0], d.mu_ci95[1]));
        rows.push(vec!["table friction mu".into(), format!("{:.4}", table.mu), interval]);
    }
    // Each rubbing cable's friction in its channel the replay ran with
    // (`rod`): identify's (--fit-friction), else the rod file's.
    let fitted = req.params.as_ref().and_then(|p| p.file.parameters.friction_mu_ci95);
    for c in rod.cables.iter().filter(|c| c.friction_mu > 0.0) {
        let interval = fitted.map_or("- (the rod file's)".to_string(), |ci| format!("[{:.4}, {:.4}] (identify --fit-friction)", ci[0], ci[1]));
        rows.push(vec![format!("cable {} friction mu", c.name), format!("{:.4}", c.friction_mu), interval]);
    }
    blocks.push(Block::Table(["parameter", "value", "95 % CI"].map(String::from).to_vec(), rows));

    blocks.push(Block::Heading("Strain: observed (measured) against simulated".into()));
    blocks.push(Block::Text(
        "\"RMS % of range\" is the whole error; the checks count only what lies beyond the observer's floor: the error that a model describing the session exactly would show here (the simulated markers with the tracking noise, observed as the session's are), taken out in quadrature. A component whose error is the floor's passes at 0 %.".into(),
    ));
    blocks.push(Block::Table(
        ["component", "measured range", "RMS error", "max error", "RMS % of range", "max % of range", "RMS % beyond the floor (checked)", "in the headline"]
            .map(String::from)
            .to_vec(),
        s.strain
            .iter()
            .map(|c| {
                let f = fmt_fig(&c.errors, &c.unit);
                vec![
                    c.component.clone(),
                    format!("{:.4} {}", c.errors.scale, c.unit),
                    f[0].clone(),
                    f[1].clone(),
                    f[2].clone(),
                    f[3].clone(),
                    format!("{:.3} %", c.excess_rms_pct),
                    if c.significant { "yes" } else { "no" }.into(),
                ]
            })
            .collect(),
    ));
    let h = p.headline;
    blocks.push(Block::Text(band_text(&s.band, &s.strain[h])));
    blocks.extend(strain_charts(p).into_iter().map(Block::Chart));
    blocks.push(Block::Chart(Chart {
        name: "strain_parity".into(),
        title: "Parity: simulated against observed strain (components in the headline)".into(),
        x_label: "observed strain [1/m or 1]".into(),
        y_label: "simulated strain [1/m or 1]".into(),
        series: (0..6)
            .filter_map(|c| {
                let pts: Vec<(f64, f64)> = p.parity.iter().filter(|x| x.0 == c).map(|x| (x.1, x.2)).collect();
                (!pts.is_empty()).then(|| Series::points(COMPONENTS[c], pts, c))
            })
            .collect(),
        diagonal: true,
    }));
    if let Some(f) = &s.force {
        blocks.push(Block::Heading("Force: flange sensor against the simulated base wrench".into()));
        let fig = fmt_fig(&f.force_n, "N");
        let mut rows = vec![vec!["|F| (flange frame)".into(), fig[0].clone(), fig[1].clone(), fig[2].clone(), fig[3].clone()]];
        if let Some(n) = &f.normal_force_n {
            let fig = fmt_fig(n, "N");
            rows.push(vec!["normal contact force".into(), fig[0].clone(), fig[1].clone(), fig[2].clone(), fig[3].clone()]);
        }
        blocks.push(Block::Text(format!(
            "Stream '{}'; bias {} [{:.4}, {:.4}, {:.4}] N. Both signals averaged over {} s. Percentages of the peak measured force. Sensor noise left after the average: {:.4} N RMS, and in the estimated bias {:.4} N; the error beyond them: {:.2} % (the check).",
            f.stream, f.bias_source, f.bias[0], f.bias[1], f.bias[2], req.options.force_window_s, f.filtered_noise_n, f.bias_noise_n, f.excess_rms_pct
        )));
        blocks.push(Block::Table(["quantity", "RMS error", "max error", "RMS %", "max %"].map(String::from).to_vec(), rows));
        let axis = ["F_x", "F_y", "F_z"];
        blocks.push(Block::Chart(Chart {
            name: "force_time".into(),
            title: "Force on the flange (flange frame): sensor minus bias (solid), simulated (dashed) in its 95 % band (shaded)".into(),
            x_label: "t [s]".into(),
            y_label: "force [N]".into(),
            series: (0..3)
                .flat_map(|k| {
                    [
                        Series::line(format!("{} measured", axis[k]), p.force.iter().map(|x| (x.0, x.1[k])).collect(), k),
                        Series {
                            band: p.force.iter().map(|x| (x.0, x.2[k] - x.3[k], x.2[k] + x.3[k])).collect(),
                            ..Series::dashed(format!("{} simulated", axis[k]), p.force.iter().map(|x| (x.0, x.2[k])).collect(), k)
                        },
                    ]
                })
                .collect(),
            diagonal: false,
        }));
        if !p.normal.is_empty() {
            blocks.push(Block::Chart(Chart {
                name: "normal_force".into(),
                title: "Normal contact force: from the sensor (its change along the table normal since rest) and simulated".into(),
                x_label: "t [s]".into(),
                y_label: "force [N]".into(),
                series: vec![
                    Series::line("measured", p.normal.iter().map(|x| (x.0, x.1)).collect(), 0),
                    Series {
                        band: p.normal.iter().map(|x| (x.0, x.2 - x.3, x.2 + x.3)).collect(),
                        ..Series::dashed("simulated", p.normal.iter().map(|x| (x.0, x.2)).collect(), 1)
                    },
                ],
                diagonal: false,
            }));
        }
    }
    if let Some(c) = &s.contact {
        blocks.push(Block::Heading("Contact: tip slide and stick/slide phases".into()));
        blocks.push(Block::Text(format!(
            "First touch: tracked {}, simulated {}. Tip slide at the end: tracked {:.3} mm, simulated {:.3} mm; RMS error {:.3} mm, max {:.3} mm. Phases agree on {:.2} % of the frames; the tracked tip slides {:.1} % of its contact time.",
            c.first_touch_measured_s.map_or("never".into(), |t| format!("{t:.3} s")),
            c.first_touch_simulated_s.map_or("never".into(), |t| format!("{t:.3} s")),
            c.final_slide_measured_mm,
            c.final_slide_simulated_mm,
            c.slide_mm.rms,
            c.slide_mm.max_abs,
            c.phase_agreement_pct,
            100.0 * c.measured_slide_fraction
        )));
        blocks.push(Block::Chart(Chart {
            name: "tip_slide".into(),
            title: "Tip slide distance along the table since touch: tracked, simulated in the parameters' 95 % band (shaded)".into(),
            x_label: "t [s]".into(),
            y_label: "distance [mm]".into(),
            series: vec![
                Series::line("tracked", p.slide.iter().map(|x| (x.0, x.1)).collect(), 0),
                Series {
                    band: p.slide.iter().map(|x| (x.0, x.2 - x.3, x.2 + x.3)).collect(),
                    ..Series::dashed("simulated", p.slide.iter().map(|x| (x.0, x.2)).collect(), 1)
                },
            ],
            diagonal: false,
        }));
        blocks.push(Block::Chart(Chart {
            name: "phases".into(),
            title: "Phase timelines (0 free, 1 stick, 2 slide): tracked (solid), simulated (dashed, offset by 0.05)".into(),
            x_label: "t [s]".into(),
            y_label: "phase [0 free, 1 stick, 2 slide]".into(),
            series: vec![
                Series::line("tracked", p.phases.iter().map(|x| (x.0, x.1.level())).collect(), 0),
                Series::dashed("simulated", p.phases.iter().map(|x| (x.0, x.2.level() + 0.05)).collect(), 1),
            ],
            diagonal: false,
        }));
    }
    blocks.push(Block::Heading("Markers: tracked against simulated".into()));
    blocks.push(Block::Text(format!(
        "Mean offset tracked - simulated: ({:.3}, {:.3}, {:.3}) mm (world frame).",
        s.marker_mean_offset_mm[0], s.marker_mean_offset_mm[1], s.marker_mean_offset_mm[2]
    )));
    blocks.push(Block::Table(
        ["marker", "arc [m]", "RMS distance", "max distance"].map(String::from).to_vec(),
        s.markers
            .iter()
            .map(|m| vec![m.marker.to_string(), format!("{:.4}", m.arc_m), format!("{:.3} mm", m.errors_mm.rms), format!("{:.3} mm", m.errors_mm.max_abs)])
            .collect(),
    ));
    blocks.push(Block::Chart(Chart {
        name: "marker_errors".into(),
        title: "Distance between tracked and simulated markers".into(),
        x_label: "t [s]".into(),
        y_label: "distance [mm]".into(),
        series: p.marker_err.iter().enumerate().map(|(m, v)| Series::line(format!("marker {m}"), v.clone(), m)).collect(),
        diagonal: false,
    }));
    let d = dir.path();
    let mut provenance = vec![
        version_row(),
        file_row(format!("rod {}", req.rod_path.display()), &req.rod_path),
        file_row(format!("scene {}", req.scene_path.display()), &req.scene_path),
        file_row(format!("{}/session.toml", d.display()), &dir.meta_path()),
        file_row(format!("{}/markers.parquet", d.display()), &dir.markers()),
        (
            "observed strain".into(),
            if s.observer_reused {
                format!("reused {}/strain.parquet (made by the same rod, parameters and observer)", d.display())
            } else {
                "observer run by validate (strain.parquet beside this page)".into()
            },
        ),
    ];
    if let Some(p) = &req.params {
        provenance.push(file_row(format!("params {}", p.path.display()), &p.path));
    }
    if let Some(p) = &req.loads.path {
        provenance.push(file_row(format!("loads {}", p.display()), p));
    }
    Page { title: format!("rodlab validate: {}", s.session), blocks, provenance }
}

fn write_batch_page(req: &ValidateRequest, all: &[SessionSummary]) -> Result<PathBuf> {
    let na = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |x| format!("{x:.2} {unit}"));
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|s| {
            vec![
                s.session.clone(),
                format!("{:.2} %", s.strain_headline_rms_pct),
                na(s.force.as_ref().map(|f| f.force_n.rms_pct), "%"),
                na(s.contact.as_ref().map(|c| c.slide_mm.rms), "mm"),
                na(s.contact.as_ref().map(|c| c.phase_agreement_pct), "%"),
                if s.pass { "pass" } else { "EXCEEDED" }.into(),
            ]
        })
        .collect();
    let page = Page {
        title: format!("rodlab validate: {} sessions", all.len()),
        blocks: vec![
            Block::Text(format!(
                "Rod {}, scene {}, parameters {}.",
                req.rod_path.display(),
                req.scene_path.display(),
                req.params.as_ref().map_or("of the rod file".to_string(), |p| p.path.display().to_string())
            )),
            Block::Warnings(all.iter().filter(|s| !s.pass).map(|s| format!("{}: checks exceeded", s.session)).collect()),
            Block::Table(
                ["session", "strain RMS (% of range)", "force RMS (% of peak)", "tip slide RMS", "phase agreement", "verdict"].map(String::from).to_vec(),
                rows,
            ),
            Block::Links(all.iter().map(|s| (format!("{}: report", s.session), format!("{}/index.html", s.session))).collect()),
        ],
        provenance: vec![version_row()],
    };
    Ok(report::page::write_page(&req.out, &page, &all)?.html)
}

/// The headline component's strain over time: observed as points,
/// simulated as a line in its 95 % band (the parameters' uncertainty and
/// the observer's floor: where an observation of this model would fall),
/// and beneath it the residual (observed - simulated) per node within the
/// widest node's band about zero.
fn strain_charts(p: &Plots) -> [Chart; 2] {
    let h = p.headline;
    // (node, its (t, observed, simulated, band's half width) samples)
    let nodes: Vec<_> = p.strain_nodes.iter().enumerate().filter(|(_, v)| !v.is_empty()).collect();
    let unit = COMPONENT_UNITS[h];
    let over_time = Chart {
        name: "strain_time".into(),
        title: format!("{} at the section boundaries: observed (points), simulated (line) in its 95 % band (shaded)", COMPONENTS[h]),
        x_label: "t [s]".into(),
        y_label: format!("{} [{unit}]", COMPONENTS[h]),
        series: nodes
            .iter()
            .flat_map(|(k, v)| {
                [
                    Series::points(format!("node {k} observed"), v.iter().map(|x| (x.0, x.1)).collect(), *k),
                    Series {
                        band: v.iter().map(|x| (x.0, x.2 - x.3, x.2 + x.3)).collect(),
                        ..Series::line(format!("node {k} simulated"), v.iter().map(|x| (x.0, x.2)).collect(), *k)
                    },
                ]
            })
            .collect(),
        diagonal: false,
    };
    // The widest node's half width at each instant (the nodes of a frame share its time).
    let mut widest: Vec<(f64, f64)> = nodes.iter().flat_map(|(_, v)| v.iter().map(|x| (x.0, x.3))).collect();
    widest.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    widest.dedup_by(|b, a| b.0 == a.0);
    let mut residual: Vec<Series> = nodes.iter().map(|(k, v)| Series::line(format!("node {k}"), v.iter().map(|x| (x.0, x.1 - x.2)).collect(), *k)).collect();
    if !widest.is_empty() {
        residual.push(Series {
            band: widest.iter().map(|(t, w)| (*t, -w, *w)).collect(),
            ..Series::dashed("95 % band (widest node)", widest.iter().map(|(t, _)| (*t, 0.0)).collect(), 6)
        });
    }
    let residuals = Chart {
        name: "strain_residual".into(),
        title: format!("{}: observed - simulated per node, and the 95 % band about zero", COMPONENTS[h]),
        x_label: "t [s]".into(),
        y_label: format!("residual [{unit}]"),
        series: residual,
        diagonal: false,
    };
    [over_time, residuals]
}

/// What the bands carry, and how many observations fall inside (the
/// headline component `c`).
fn band_text(band: &BandFigures, c: &ComponentFigures) -> String {
    let carried = if band.parameters.is_empty() {
        "the observer's floor alone (no identified covariance: the rod file's material, or --no-parameter-band)".to_string()
    } else {
        let how = if band.method == BandMethod::MonteCarlo {
            format!("{} Monte Carlo draws from it, each replayed", band.replays)
        } else {
            format!("the session replayed once more per principal direction, {} in all", band.replays)
        };
        format!(
            "the identified parameters' uncertainty (the fit's covariance of {}: {how}) and the observer's floor, in quadrature",
            band.parameters.join(", ")
        )
    };
    format!(
        "Bands are 95 %: {carried}, each node with its own floor. {}: the parameters move the simulated strain by {:.3e} {} RMS (1 sd), the floor is {:.3e} {} over all nodes; {:.1} % of the observations lie inside the band (about 95 % when the model and its uncertainty describe the session).",
        c.component, c.parameter_sd_rms, c.unit, c.floor_rms, c.unit, c.within_band_pct
    )
}
