//! What the statics cannot see — the table's friction coefficient mu and
//! the rod's damping ratio — identified from recorded motion (stage
//! "identify", after the static identification): each session's robot
//! stream drives the simulator as `validate` does, and least squares on the
//! tracked markers minus the simulated ones (weighted by the tracking
//! noise) fits `ln mu` and `ln zeta`, E, G, rho and the geometry held at a
//! static identification's `identified.toml` (or, when asked, E and G
//! scaled together with them).
//!
//! Sensitivities are differences of whole simulations (run in parallel;
//! forward while iterating, central for the intervals): the stick/slide
//! switch makes the residual nonsmooth in mu, so
//! the fit starts with a bracketing scan of mu on a log grid (whatever the
//! starting value) and refines from the best point with the Levenberg-
//! Marquardt loop of `identify`. A session whose tip never slides does not
//! determine mu: the scan's cost is then flat above the friction the stick
//! needed, and mu is reported as bounded from below by the largest
//! tangential / normal ratio of the sticking contact.

pub mod variants;

use crate::error::{Error, Result};
use crate::params::Params;
use crate::progress::Progress;
use crate::provenance::{file_row, version_row};
use crate::ringdown::{ring_down, RingDown};
use crate::simulate::{at_records, BaseSource, Prepared, SimulateJob};
use argmin::core::{Executor, Jacobian, Operator, State};
use identify::output::{BranchOut, DynamicNoiseTest, DynamicOut};
use lie::Vec3;
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use report::page::{Block, Chart, Page, Series};
use rod::{Damping, Rod};
use session::SessionDir;
use sim::{ContactState, Scene, StepRecord};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What to fit, from which sessions.
#[derive(Clone, Debug)]
pub struct DynamicRequest {
    pub sessions: Vec<SessionDir>,
    pub rod_path: PathBuf,
    /// The rod file's rod.
    pub rod: Rod,
    /// The static identification: E, G, rho and geometry, held.
    pub params: Params,
    pub scene_path: PathBuf,
    /// The scene of the sessions: table, contact law, time step.
    pub scene: Scene,
    /// identified.toml (the static one with `[dynamic]`), index.html, summary.json.
    pub out: PathBuf,
    /// Where the search starts (default: the scene's mu, the rod file's damping ratio or 0.05).
    pub mu_start: Option<f64>,
    pub damping_start: Option<f64>,
    /// Keep the damping ratio at its start and fit mu alone.
    pub hold_damping: bool,
    /// Take the markers' stamps as on the robot's clock (no delay fitted).
    pub hold_marker_delay: bool,
    /// Fit each session's marker delay even where markers and base share
    /// one clock (a motion-capture session's clamp and markers come from
    /// the same frames: held there by default).
    pub fit_marker_delay: bool,
    /// Hold the viscoelastic branches at the rod file's (or `--params'`).
    pub hold_branches: bool,
    /// The span of each replay fitted \[s\], from its start (default: the
    /// scene's `[time] fit_window_s`, else all of it).
    pub window_s: Option<[f64; 2]>,
    /// Also fit the body's stiffness: E and G scaled together (their ratio,
    /// rho and geometry stay `--params'`), for motion that sees stiffness.
    pub fit_stiffness: bool,
    /// Also fit the body's density (rho scaled; E, G and geometry stay):
    /// releases with several hung masses see it in how far apart their
    /// frequencies lie, which a sag alone barely does.
    pub fit_density: bool,
    /// Also fit the dry friction of the hook the masses hang on (the loads
    /// file's `hook_friction_radius_m`, one value for every mass): a loss
    /// per cycle that grows with the hung weight and not with the swing.
    pub fit_hook_friction: bool,
    /// Fit each release's frequency and log decrement over its first three
    /// cycles instead of the markers' paths: the swing alone, whatever the
    /// start's shape (`--match-ring-down`).
    pub match_ring_down: bool,
    /// Cycles of each release `--match-ring-down` reads (default and
    /// fewest 3): past three, the decay to every later cycle is a row of
    /// its own, the envelope that tells a hook's dry friction (a loss per
    /// cycle that does not shrink with the swing) from the material's.
    pub ring_down_cycles: usize,
    /// Floor of the markers' tracking noise per coordinate \[m\] (the
    /// noise estimated from each session is used when larger).
    pub sigma_m: f64,
    /// Also judge the material's laws by held-out sessions
    /// (`--compare-variants`, [`variants::compare_laws`]).
    pub compare_laws: bool,
    /// The flange force sensor's stream and mount (default: stream ft300
    /// when the session has it); its readings join the residual.
    pub loads: crate::loads::Loads,
}

impl DynamicRequest {
    pub fn new(sessions: Vec<SessionDir>, rod_path: &Path, rod: Rod, params: Params, scene_path: &Path, scene: Scene, out: &Path) -> DynamicRequest {
        DynamicRequest {
            sessions,
            rod_path: rod_path.to_path_buf(),
            rod,
            params,
            scene_path: scene_path.to_path_buf(),
            scene,
            out: out.to_path_buf(),
            mu_start: None,
            damping_start: None,
            hold_damping: false,
            hold_marker_delay: false,
            fit_marker_delay: false,
            hold_branches: false,
            window_s: None,
            match_ring_down: false,
            ring_down_cycles: RING_DOWN_CYCLES,
            fit_stiffness: false,
            fit_density: false,
            fit_hook_friction: false,
            sigma_m: 2e-5,
            compare_laws: false,
            loads: Default::default(),
        }
    }
}

/// The fitted friction and damping, with what the report shows.
#[derive(Clone, Debug)]
pub struct DynamicFit {
    pub out: DynamicOut,
    /// The bracketing scan: (mu, cost) at the starting damping ratio.
    pub scan: Vec<(f64, f64)>,
    /// Cost after every Levenberg-Marquardt iteration.
    pub history: Vec<f64>,
    pub identified_toml: PathBuf,
    pub report: PathBuf,
    pub warnings: Vec<String>,
}

/// One session, read once: its prepared simulation, tracked markers and
/// flange force readings.
struct SessionCase {
    name: String,
    /// The rod replayed: its markers where the session measured them on
    /// the body (a reference window), else the rod file's.
    rod: Rod,
    prepared: Prepared,
    /// (simulation time \[s\], marker, its sighting: a tracked point or a
    /// one-camera ray \[m\]).
    observed: Vec<(f64, usize, rod::Sighting)>,
    sigma_m: f64,
    force: Option<ForceReadings>,
    /// Its markers and its base were stamped by one clock (motion capture):
    /// no delay between them unless asked.
    one_clock: bool,
}

impl SessionCase {
    /// Its residual rows: three per sighting, three per force reading.
    fn rows(&self) -> usize {
        3 * (self.observed.len() + self.force.as_ref().map_or(0, |f| f.samples.len()))
    }

    /// Whether a tracked marker moves by more than `MOVES_M` (a delay in
    /// time shows only in motion: a session at rest does not determine one).
    fn markers_move(&self) -> bool {
        let mut first: std::collections::HashMap<usize, Vec3> = Default::default();
        self.observed.iter().filter_map(|(_, m, s)| Some((*m, s.as_point()?))).any(|(m, p)| (p - *first.entry(m).or_insert(p)).norm() > MOVES_M)
    }

    /// Whether its marker delay is fitted: where the markers move and
    /// their clock is not the base's, unless held (or asked for).
    fn delay_fitted(&self, req: &DynamicRequest) -> bool {
        !req.hold_marker_delay && self.markers_move() && (req.fit_marker_delay || !self.one_clock)
    }
}

/// How far a marker must move for its session's delay to be fitted \[m\].
const MOVES_M: f64 = 1e-3;

/// A flange force sensor's readings, in the flange frame.
struct ForceReadings {
    stream: String,
    /// (simulation time \[s\], force \[N\]).
    samples: Vec<(f64, Vec3)>,
    /// The readings' noise per component \[N\] (from their differences).
    sigma_n: f64,
}

/// A session's replay by (session, the point's values' bits).
type TrackKey = (usize, Vec<u64>);

/// What the residual reads of one replay: the markers and the flange
/// force at every recorded step (a few hundred kB for a session, where the
/// step records hold every node).
struct Track {
    t_s: Vec<f64>,
    markers_m: Vec<Vec<Vec3>>,
    flange_force_n: Vec<Vec3>,
}

impl Track {
    fn of(records: &[StepRecord]) -> Track {
        Track {
            t_s: records.iter().map(|r| r.t_s).collect(),
            markers_m: records.iter().map(|r| r.markers_m.clone()).collect(),
            flange_force_n: records.iter().map(|r| lie::linear(&r.base_wrench_flange)).collect(),
        }
    }

    /// Marker `m` at `t_s`, held at the replay's ends.
    fn marker_at(&self, m: usize, t_s: f64) -> Vec3 {
        lie::series::blend(lie::series::bracket_held(&self.t_s, t_s), |i| self.markers_m[i][m])
    }

    /// The flange force at `t_s`, when inside the replay.
    fn force_at(&self, t_s: f64) -> Option<Vec3> {
        lie::series::bracket(&self.t_s, t_s).map(|k| lie::series::blend(k, |i| self.flange_force_n[i]))
    }
}

/// The values a replay runs with: the table's friction, the damping
/// ratio, a scale of the body's E and G (1: `--params`'), and the
/// viscoelastic branches (the rod file's law: none for an elastic rod).
#[derive(Clone, Debug, PartialEq)]
struct Point {
    mu: f64,
    zeta: f64,
    stiffness: f64,
    /// The body's density over `--params'` (1: held).
    density: f64,
    branches: Vec<rod::PronyBranch>,
    /// The constant-loss law `branches` carry, when the rod file gives one.
    constant_loss: Option<rod::ConstantLoss>,
    /// The dry friction of the hook every hung mass hangs on \[m\]
    /// ([`sim::loads::HookFriction`]; 0: none).
    hook_friction_radius_m: f64,
}

impl Point {
    /// `self` at another friction.
    fn with_mu(&self, mu: f64) -> Point {
        Point { mu, ..self.clone() }
    }

    /// The values' bits (a replay's key).
    fn bits(&self) -> Vec<u64> {
        let branches = self.branches.iter().flat_map(|b| [b.modulus_ratio, b.time_constant_s]);
        [self.mu, self.zeta, self.stiffness, self.density, self.hook_friction_radius_m].into_iter().chain(branches).map(f64::to_bits).collect()
    }
}

/// One value a fit can free, fitted in its logarithm (all are positive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Knob {
    Mu,
    Zeta,
    Stiffness,
    Density,
    /// Branch `i`'s modulus ratio.
    BranchModulus(usize),
    /// Branch `i`'s time constant.
    BranchTime(usize),
    /// The constant-loss law's loss factor.
    LossFactor,
    /// The constant-loss law's longest relaxation time.
    LongestTime,
    /// The hung masses' hook friction (`--fit-hook-friction`).
    HookFriction,
}

impl Knob {
    fn get(self, p: &Point) -> f64 {
        match self {
            Knob::Mu => p.mu,
            Knob::Zeta => p.zeta,
            Knob::Stiffness => p.stiffness,
            Knob::Density => p.density,
            Knob::BranchModulus(i) => p.branches[i].modulus_ratio,
            Knob::BranchTime(i) => p.branches[i].time_constant_s,
            Knob::LossFactor => p.constant_loss.map_or(f64::NAN, |c| c.loss_factor),
            Knob::LongestTime => p.constant_loss.map_or(f64::NAN, |c| c.longest_time_s),
            Knob::HookFriction => p.hook_friction_radius_m,
        }
    }

    fn set(self, p: &mut Point, v: f64) {
        match self {
            Knob::Mu => p.mu = v,
            Knob::Zeta => p.zeta = v,
            Knob::Stiffness => p.stiffness = v,
            Knob::Density => p.density = v,
            Knob::HookFriction => p.hook_friction_radius_m = v,
            Knob::BranchModulus(i) => p.branches[i].modulus_ratio = v,
            Knob::BranchTime(i) => p.branches[i].time_constant_s = v,
            Knob::LossFactor | Knob::LongestTime => {
                if let Some(law) = p.constant_loss.as_mut() {
                    match self {
                        Knob::LossFactor => law.loss_factor = v,
                        // Never shorter than the band's held end.
                        _ => law.longest_time_s = v.max(law.shortest_time_s * (1.0 + 1e-9)),
                    }
                    p.branches = law.prony_branches();
                }
            }
        }
    }
}

/// The simulations behind the residual, for any (mu, zeta); each
/// session's replay is kept per value pair (its track: the residual at
/// any marker delay reads it), and a session whose rod never touches the
/// table does not depend on mu (one replay serves every mu).
struct Replay<'a> {
    rod: Rod,
    scene_path: &'a Path,
    cases: Vec<SessionCase>,
    simulations: AtomicUsize,
    /// Per session: does the rod touch the table (in the replay that sticks)?
    touches: Vec<bool>,
    tracks: Mutex<Tracks>,
}

/// The replays kept, the least recently used of a session dropped past
/// `KEEP_TRACKS` (a long session's track is megabytes; a fit reuses only
/// its last few points').
#[derive(Default)]
struct Tracks {
    /// Each track with when it was last used.
    by_key: std::collections::HashMap<TrackKey, (u64, Arc<Track>)>,
    clock: u64,
}

/// Tracks kept per session (the scan's points, then a few per iteration).
const KEEP_TRACKS: usize = 16;

impl Tracks {
    fn get(&mut self, key: &TrackKey) -> Option<Arc<Track>> {
        self.clock += 1;
        let clock = self.clock;
        self.by_key.get_mut(key).map(|(used, t)| {
            *used = clock;
            t.clone()
        })
    }

    fn insert(&mut self, key: TrackKey, track: Arc<Track>) {
        self.clock += 1;
        let session = key.0;
        self.by_key.insert(key, (self.clock, track));
        let same_session: Vec<(&TrackKey, u64)> = self.by_key.iter().filter(|(k, _)| k.0 == session).map(|(k, (used, _))| (k, *used)).collect();
        if same_session.len() > KEEP_TRACKS {
            if let Some(oldest) = same_session.iter().min_by_key(|(_, used)| *used).map(|(k, _)| (*k).clone()) {
                self.by_key.remove(&oldest);
            }
        }
    }
}

impl<'a> Replay<'a> {
    fn new(rod: Rod, scene_path: &'a Path, cases: Vec<SessionCase>) -> Replay<'a> {
        let touches = vec![true; cases.len()];
        Replay { rod, scene_path, cases, simulations: AtomicUsize::new(0), touches, tracks: Mutex::default() }
    }

    fn records(&self, case: &SessionCase, at: &Point) -> Result<Vec<StepRecord>> {
        let mut scene = case.prepared.scene.clone();
        if let Some(t) = scene.table.as_mut() {
            t.mu = at.mu;
        }
        for load in scene.loads.iter_mut() {
            if let sim::LoadSpec::PointMass { hook_friction_radius_m, .. } = load {
                *hook_friction_radius_m = at.hook_friction_radius_m;
            }
        }
        let mut rod = case.rod.clone();
        rod.damping = Some(Damping::Ratio(at.zeta));
        rod.viscoelastic = at.branches.clone();
        rod.constant_loss = at.constant_loss;
        rod.cross_section.body.e_pa *= at.stiffness;
        rod.cross_section.body.g_pa *= at.stiffness;
        rod.cross_section.body.rho_kg_m3 *= at.density;
        self.simulations.fetch_add(1, Ordering::Relaxed);
        let mut sim = case.prepared.simulator(&rod, &scene, self.scene_path)?;
        sim.run(|_, _| {}).map_err(|e| {
            Error::from(e).context(format!("{}: simulation at mu {:.4}, damping ratio {:.4}, stiffness x{:.4}", case.name, at.mu, at.zeta, at.stiffness))
        })
    }

    /// The point session `i` is replayed at for `at` (a session in the
    /// air: one mu for all) and the key of its track.
    fn point_for(&self, i: usize, at: &Point) -> (Point, TrackKey) {
        let at = if self.touches[i] { at.clone() } else { at.with_mu(MU_STICKS) };
        let key = (i, at.bits());
        (at, key)
    }

    /// Keeps session `i`'s track of a replay at `at` already run.
    fn keep(&self, i: usize, at: &Point, records: &[StepRecord]) {
        let key = self.point_for(i, at).1;
        self.tracks.lock().expect("tracks").insert(key, Arc::new(Track::of(records)));
    }

    /// Session `i`'s track at `at`, replayed once per distinct point.
    fn track_of(&self, i: usize, at: &Point) -> Result<Arc<Track>> {
        let (at, key) = self.point_for(i, at);
        if let Some(t) = self.tracks.lock().expect("tracks").get(&key) {
            return Ok(t.clone());
        }
        let t = Arc::new(Track::of(&self.records(&self.cases[i], &at)?));
        self.tracks.lock().expect("tracks").insert(key, t.clone());
        Ok(t)
    }

    /// (simulated - tracked) / sigma over every session's tracked markers
    /// (and flange forces), each session's markers seen `delays_s[i]`
    /// behind the robot's clock.
    fn residual(&self, at: &Point, delays_s: &[f64]) -> Result<DVector<f64>> {
        let parts: Vec<Result<Vec<f64>>> =
            (0..self.cases.len()).into_par_iter().map(|i| self.track_of(i, at).map(|t| session_rows(&self.cases[i], &t, delays_s[i]))).collect();
        let mut all = vec![];
        for p in parts {
            all.extend(p?);
        }
        Ok(DVector::from_vec(all))
    }

    /// No marker delay in any session.
    fn no_delays(&self) -> Vec<f64> {
        vec![0.0; self.cases.len()]
    }

    /// Where each session's rows start in the residual.
    fn row_starts(&self) -> Vec<usize> {
        self.cases.iter().scan(0, |row, c| Some(std::mem::replace(row, *row + c.rows()))).collect()
    }
}

/// Rows of a session: the markers (a marker tracked at `t` compared with
/// the replay at `t - delay_s`), then the flange force with the sensor's
/// constant bias profiled out (each component's mean difference removed:
/// the bias's least-squares value for any mu and zeta).
fn session_rows(case: &SessionCase, track: &Track, delay_s: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(case.rows());
    out.extend(marker_rows(case, track, delay_s));
    if let Some(f) = &case.force {
        let d: Vec<Vec3> = f.samples.iter().map(|(t, m)| track.force_at(*t).unwrap_or(*m) - m).collect();
        let mean = d.iter().sum::<Vec3>() / d.len() as f64;
        out.extend(d.iter().flat_map(|x| (x - mean).iter().map(|v| v / f.sigma_n).collect::<Vec<_>>()));
    }
    out
}

/// The markers' rows of a session (the first of its rows), a marker
/// tracked at `t` compared with the replay at `t - delay_s`.
fn marker_rows<'c>(case: &'c SessionCase, track: &'c Track, delay_s: f64) -> impl Iterator<Item = f64> + 'c {
    case.observed.iter().flat_map(move |(t, m, p)| {
        let miss = p.miss(&track.marker_at(*m, t - delay_s));
        [miss.x, miss.y, miss.z].map(|d| d / case.sigma_m)
    })
}

/// The least-squares problem for `identify`'s Levenberg-Marquardt: the
/// free log-parameters in, the weighted marker residual out.
///
/// The parameters are the logarithms of the free values (`free`: of mu,
/// zeta, the stiffness scale, the branches' moduli and times), then each session's marker delay \[ms\] where it is free: how long
/// after the robot's clock the markers' stamps say (a camera's exposure,
/// transfer and decoding; a motion-capture system's latency). A drag's
/// markers move with the base, so a delay of 1 ms shows as the base's
/// speed times 1 ms along the path, where mu changes the rod's shape by
/// less: fitted, the delay keeps the markers from pulling mu (a live drag
/// whose camera lagged 1 ms fitted mu 2 % high with the delay held).
struct DynamicProblem<'a> {
    replay: &'a Replay<'a>,
    /// Held values (used where a parameter is not free).
    held: Point,
    /// The free values, in the parameters' order.
    free: Vec<Knob>,
    /// Per session: is its marker delay free (else 0).
    delays_free: Vec<bool>,
    /// Difference step in the log-parameters.
    log_step: f64,
    /// `--match-ring-down`: the residual is the releases' ring-downs.
    ring_down: Option<&'a RingDownReading>,
    /// With the ring-downs and the stiffness free: what the static holds
    /// measured of it (one more row).
    holds: Option<StaticHolds>,
    /// The least squares' iterations shown as they pass (one Jacobian
    /// each, of at most [`MAX_ITERATIONS`]): a bar with a total and an ETA.
    iterations: Option<(&'a dyn crate::Task, std::sync::atomic::AtomicU64)>,
}

/// The least squares' iteration limit.
const MAX_ITERATIONS: u64 = 30;

/// The static fit's E (from `--params`) as a measurement of the stiffness
/// a dynamic fit frees: its holds saw the relaxed modulus times the law's
/// creep ratio at how long each had been loaded ([`rod::creep`]), so one
/// set of values must ring like the releases and sag like the holds.
#[derive(Clone, Debug)]
struct StaticHolds {
    /// How long each static hold's loads had acted \[s\].
    loaded_for_s: Vec<f64>,
    /// The creep ratio the static fit gave its holds, on average (1: it
    /// fitted them elastic; its E is then the holds' modulus).
    static_ratio: f64,
    /// The static E's standard deviation in its logarithm.
    ln_e_sigma: f64,
    /// The static fit's E \[Pa\] (what `--params` carry; stiffness 1) and its interval.
    e_pa: f64,
    e_ci95_pa: [f64; 2],
    /// With the stiffness free: the row on E.
    e_row: bool,
    /// With the density free: the static fit's rho as a row (its log's
    /// standard deviation), where the holds measured it.
    ln_rho_sigma: Option<f64>,
}

impl StaticHolds {
    /// From `--params` when it is a static fit of sessions' holds with an
    /// interval of E.
    fn of(params: &crate::params::Params, req: &DynamicRequest) -> Option<StaticHolds> {
        let e = &params.file.parameters.e_pa;
        let rho = &params.file.parameters.rho_kg_m3;
        let ln_rho_sigma = (rho.ci95[1] / rho.ci95[0]).ln() / (2.0 * 1.96);
        let ln_rho_sigma = (req.fit_density && ln_rho_sigma.is_finite() && ln_rho_sigma > 0.0).then_some(ln_rho_sigma);
        let held: Vec<(f64, f64)> = params.file.experiment.iter().filter_map(|x| x.loaded_for_s.map(|t| (t, x.hold_modulus_ratio.unwrap_or(1.0)))).collect();
        let loaded_for_s: Vec<f64> = held.iter().map(|h| h.0).collect();
        let static_ratio = held.iter().map(|h| h.1).sum::<f64>() / held.len().max(1) as f64;
        let ln_e_sigma = (e.ci95[1] / e.ci95[0]).ln() / (2.0 * 1.96);
        (!loaded_for_s.is_empty() && ln_e_sigma.is_finite() && ln_e_sigma > 0.0).then_some(StaticHolds {
            loaded_for_s,
            static_ratio,
            ln_e_sigma,
            e_pa: e.value,
            e_ci95_pa: e.ci95,
            e_row: req.fit_stiffness,
            ln_rho_sigma,
        })
    }

    /// The modulus the holds see at `at` over what the static fit saw in
    /// them: the stiffness times the law's mean creep ratio over the
    /// holds, over the static fit's own.
    fn hold_stiffness(&self, at: &Point) -> f64 {
        let ratio = self.loaded_for_s.iter().map(|t| rod::creep::hold_modulus_ratio(&at.branches, *t)).sum::<f64>() / self.loaded_for_s.len() as f64;
        at.stiffness * ratio / self.static_ratio
    }

    /// What the report says of the holds at `at`.
    fn out(&self, at: &Point) -> identify::output::StaticHoldsOut {
        identify::output::StaticHoldsOut {
            static_e_pa: self.e_pa * self.static_ratio,
            static_e_ci95_pa: self.e_ci95_pa.map(|e| e * self.static_ratio),
            hold_e_pa: self.e_pa * self.static_ratio * self.hold_stiffness(at),
            mean_loaded_for_s: self.loaded_for_s.iter().sum::<f64>() / self.loaded_for_s.len() as f64,
        }
    }

    /// The rows: the holds' modulus against the static fit's, and the
    /// density against its, each in its sigma.
    fn rows(&self, at: &Point) -> Vec<f64> {
        let e = self.e_row.then(|| self.hold_stiffness(at).ln() / self.ln_e_sigma);
        let rho = self.ln_rho_sigma.map(|sigma| at.density.ln() / sigma);
        e.into_iter().chain(rho).collect()
    }
}

/// Difference step in the log-parameters: 1 %, wide enough that
/// the few time steps a stick/slide switch moves by do not dominate.
const LOG_STEP: f64 = 0.01;

/// Difference step of a marker delay \[ms\] (the replay is linear between
/// its steps; a central difference over 2 ms spans a time step of 1-5 ms).
const DELAY_STEP_MS: f64 = 1.0;

impl DynamicProblem<'_> {
    /// How many of the parameters are the log-parameters (before the delays).
    fn log_count(&self) -> usize {
        self.free.len()
    }

    /// Each session's marker delay \[s\] at `p`.
    fn delays_s(&self, p: &DVector<f64>) -> Vec<f64> {
        (0..self.delays_free.len()).map(|i| self.delay_index(i).map_or(0.0, |k| p[k] * 1e-3)).collect()
    }

    /// Where session `i`'s delay sits in `p`.
    fn delay_index(&self, i: usize) -> Option<usize> {
        self.delays_free[i].then(|| self.log_count() + self.delays_free[..i].iter().filter(|f| **f).count())
    }

    fn values(&self, p: &DVector<f64>) -> Point {
        let mut v = self.held.clone();
        for (k, knob) in self.free.iter().enumerate() {
            knob.set(&mut v, p[k].exp());
        }
        v
    }

    /// The parameters at the held values (no delay).
    fn start(&self) -> DVector<f64> {
        let logs = self.free.iter().map(|k| k.get(&self.held).ln());
        let delays = self.delays_free.iter().filter(|f| **f).map(|_| 0.0);
        DVector::from_vec(logs.chain(delays).collect())
    }

    /// Where `knob` sits in `p`, when free.
    fn index(&self, knob: Knob) -> Option<usize> {
        self.free.iter().position(|k| *k == knob)
    }

    /// The residual at `p` (each session's rows replayed once per point, see [`Replay`]).
    fn residual(&self, p: &DVector<f64>) -> Result<DVector<f64>> {
        match self.ring_down {
            Some(reading) => {
                let at = self.values(p);
                let rows = reading.rows(self.replay, &at)?;
                Ok(match &self.holds {
                    Some(h) => {
                        let extra = h.rows(&at);
                        DVector::from_iterator(rows.len() + extra.len(), rows.iter().copied().chain(extra))
                    }
                    None => rows,
                })
            }
            None => self.replay.residual(&self.values(p), &self.delays_s(p)),
        }
    }

    fn jacobian_fd(&self, p: &DVector<f64>) -> Result<DMatrix<f64>> {
        let logs = self.log_count();
        let points: Vec<DVector<f64>> = (0..logs).flat_map(|i| [1.0, -1.0].map(|s| self.shifted(p, i, s))).collect();
        let rs = self.residuals(&points)?;
        // Only delays free: no replay shifted, the markers' rows.
        let n = rs.first().map_or_else(|| self.replay.cases.iter().map(|c| c.rows()).sum(), |r| r.len());
        let mut j = DMatrix::from_fn(n, p.len(), |row, i| if i < logs { (rs[2 * i][row] - rs[2 * i + 1][row]) / (2.0 * self.log_step) } else { 0.0 });
        self.delay_columns(p, &mut j)?;
        Ok(j)
    }

    /// The delays' columns of the Jacobian at `p`: central differences of
    /// the markers' rows along their replays (no new simulation), each
    /// session's delay moving its own markers' rows only.
    fn delay_columns(&self, p: &DVector<f64>, j: &mut DMatrix<f64>) -> Result<()> {
        let (at, delays_s) = (self.values(p), self.delays_s(p));
        let starts = self.replay.row_starts();
        for (i, case) in self.replay.cases.iter().enumerate() {
            let Some(col) = self.delay_index(i) else { continue };
            let track = self.replay.track_of(i, &at)?;
            let h_s = DELAY_STEP_MS * 1e-3;
            let (later, earlier) = (marker_rows(case, &track, delays_s[i] + h_s), marker_rows(case, &track, delays_s[i] - h_s));
            for (k, (a, b)) in later.zip(earlier).enumerate() {
                j[(starts[i] + k, col)] = (a - b) / (2.0 * DELAY_STEP_MS);
            }
        }
        Ok(())
    }

    /// The Levenberg-Marquardt iterations' Jacobian: forward differences
    /// from `p` (whose replays the step's cost already ran: one replay per
    /// parameter, all at once on the cores, instead of two). The iterations
    /// only steer; where they stop is the residual's minimum, and the
    /// intervals use the central differences of [`Self::jacobian_fd`].
    fn jacobian_forward(&self, p: &DVector<f64>) -> Result<DMatrix<f64>> {
        if let Some((task, done)) = &self.iterations {
            task.set(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }
        let logs = self.log_count();
        let points: Vec<DVector<f64>> = std::iter::once(p.clone()).chain((0..logs).map(|i| self.shifted(p, i, 1.0))).collect();
        let rs = self.residuals(&points)?;
        let n = rs[0].len();
        let mut j = DMatrix::from_fn(n, p.len(), |row, i| if i < logs { (rs[i + 1][row] - rs[0][row]) / self.log_step } else { 0.0 });
        self.delay_columns(p, &mut j)?;
        Ok(j)
    }

    /// `p` with parameter `i` moved by `sign` difference steps.
    fn shifted(&self, p: &DVector<f64>, i: usize, sign: f64) -> DVector<f64> {
        let mut q = p.clone();
        q[i] += sign * self.log_step;
        q
    }

    /// The residuals at `points`, replayed in parallel.
    fn residuals(&self, points: &[DVector<f64>]) -> Result<Vec<DVector<f64>>> {
        let rs: Vec<Result<DVector<f64>>> = points.par_iter().map(|q| self.residual(q)).collect();
        rs.into_iter().collect()
    }
}

impl Operator for &DynamicProblem<'_> {
    type Param = DVector<f64>;
    type Output = DVector<f64>;

    fn apply(&self, p: &Self::Param) -> std::result::Result<Self::Output, argmin::core::Error> {
        self.residual(p).map_err(|e| argmin::core::Error::msg(e.to_string()))
    }
}

impl Jacobian for &DynamicProblem<'_> {
    type Param = DVector<f64>;
    type Jacobian = DMatrix<f64>;

    fn jacobian(&self, p: &Self::Param) -> std::result::Result<Self::Jacobian, argmin::core::Error> {
        self.jacobian_forward(p).map_err(|e| argmin::core::Error::msg(e.to_string()))
    }
}

/// The mu grid of the bracketing scan: from 0.05 to 2 in equal ratios
/// (1.59 apart: the refinement starts within a factor 1.26 of the best).
fn mu_grid() -> Vec<f64> {
    let n = 9;
    (0..n).map(|k| 0.05 * (2.0f64 / 0.05).powf(k as f64 / (n - 1) as f64)).collect()
}

/// A friction coefficient no contact of a rod reaches: the stick-only replay.
const MU_STICKS: f64 = 50.0;

/// Reads the sessions: the prepared simulation of each and its tracked
/// markers inside the simulated span, with their noise.
fn read_cases(req: &DynamicRequest, rod: &Rod, scene: &Scene) -> Result<Vec<SessionCase>> {
    let window = match req.window_s {
        Some(w) if sim::scene::is_window(w) => Some(w),
        Some(w) => return Err(Error::input(format!("--window-s: expected FROM,TO seconds with 0 <= FROM < TO, got {},{}", w[0], w[1]))),
        None => scene.fit_window_s,
    };
    let mut cases = vec![];
    for dir in &req.sessions {
        let meta = dir.meta()?;
        let (session_rod, _) = crate::data::rod_for_session(rod, meta.as_ref(), dir);
        let rod = &session_rod;
        let prepared = crate::simulate::prepare(&SimulateJob {
            rod,
            rod_path: &req.rod_path,
            scene: scene.clone(),
            scene_path: &req.scene_path,
            params_path: Some(&req.params.path),
            base: BaseSource::Session(dir.clone()),
            rig_frames: None,
            duration_s: None,
            out: &req.out,
            damaged: session::Damaged::Skip,
            session_loads: Some(&req.loads),
        })?;
        let mut prepared = prepared;
        let (from_s, to_s) = window.map_or((0.0, f64::INFINITY), |w| (w[0], w[1]));
        // No need to simulate past the window.
        prepared.scene.duration_s = prepared.scene.duration_s.min(to_s);
        let t0 = prepared.t0_host_ns.expect("a session-driven simulation has a host time origin");
        let (sensor, requests) = req.loads.flange_sensor_with_request(dir);
        let s = crate::data::load(dir, rod.markers.len(), &requests, session::Damaged::Skip)?;
        let noise = crate::observe::marker_noise_m(s.markers.iter().map(|m| m.1.as_slice())).unwrap_or(0.0);
        let end = prepared.scene.duration_s;
        let observed: Vec<(f64, usize, rod::Sighting)> = s
            .markers
            .iter()
            .flat_map(|(t_host, ms)| {
                let t = t_host - t0 as f64 * 1e-9;
                ms.iter().enumerate().filter_map(move |(m, p)| p.map(|p| (t, m, p)))
            })
            .filter(|(t, _, _)| *t >= from_s.max(0.0) && *t <= end)
            .collect();
        if observed.is_empty() {
            let span = window.map_or("the robot log's span".to_string(), |w| format!("the fitted window {:.3}-{:.3} s of the replay", w[0], w[1]));
            return Err(Error::input(format!("{}: no tracked marker inside {span}", dir.path().display())));
        }
        let force = sensor.map(|(fs, _)| {
            let stream = &s.streams[&fs.stream];
            let col = |k: usize| &stream.columns[&fs.columns[k]];
            let mount = fs.mount.pose();
            let samples: Vec<(f64, Vec3)> = (0..stream.t_s.len())
                .map(|i| (stream.t_s[i] - t0 as f64 * 1e-9, mount.rot * Vec3::new(col(0)[i], col(1)[i], col(2)[i])))
                .filter(|(t, f)| *t >= from_s.max(0.0) && *t <= end && f.iter().all(|v| v.is_finite()))
                .collect();
            // Noise from successive differences: sqrt(mean |df|^2 / 6).
            let diff = samples.windows(2).map(|w| (w[1].1 - w[0].1).norm_squared()).sum::<f64>() / (samples.len().max(2) - 1) as f64;
            ForceReadings { stream: fs.stream.clone(), samples, sigma_n: (diff / 6.0).sqrt().max(1e-3) }
        });
        cases.push(SessionCase {
            name: s.name.clone(),
            rod: session_rod.clone(),
            prepared,
            observed,
            sigma_m: req.sigma_m.max(noise),
            force: force.filter(|f| f.samples.len() > 1),
            one_clock: meta.as_ref().is_some_and(|m| m.markers_share_base_clock()),
        });
    }
    Ok(cases)
}

/// The largest tangential / normal force ratio of any sticking contact
/// (what the stick needed from the friction).
fn largest_stick_ratio(records: &[StepRecord]) -> f64 {
    records
        .iter()
        .flat_map(|r| r.contacts.iter())
        .filter(|c| c.state == ContactState::Stick && c.normal_force_n > 1e-6)
        .map(|c| c.tangential_force_n.norm() / c.normal_force_n)
        .fold(0.0, f64::max)
}

/// A block of residual rows (one session's markers or its force readings).
struct RowGroup {
    start: usize,
    len: usize,
    /// The rows' weight: the markers' sigma \[m\], or the force's \[N\].
    sigma: f64,
    force: bool,
    /// Mean square of its weighted residuals (1 when the noise is as assumed).
    scale2: f64,
    /// `(1 + rho) / (1 - rho)` for the lag-one autocorrelation `rho` of its
    /// residuals in time (per marker coordinate, per force component):
    /// the variance factor of a mean of AR(1) errors.
    inflation: f64,
}

/// The row groups of the residual `r` and their scale and inflation.
fn row_groups(cases: &[SessionCase], r: &DVector<f64>) -> Vec<RowGroup> {
    // Lag-one autocorrelation pooled over series (each a list of rows in time order).
    let inflation = |series: &[Vec<usize>]| {
        let (mut num, mut den) = (0.0, 0.0);
        for rows in series {
            for w in rows.windows(2) {
                num += r[w[0]] * r[w[1]];
            }
            den += rows.iter().map(|&i| r[i] * r[i]).sum::<f64>();
        }
        let rho = if den > 0.0 { (num / den).clamp(0.0, 0.98) } else { 0.0 };
        (1.0 + rho) / (1.0 - rho)
    };
    let scale2 = |start: usize, len: usize| r.rows(start, len).norm_squared() / len.max(1) as f64;
    let mut groups = vec![];
    let mut row = 0;
    for c in cases {
        let n_markers = c.observed.iter().map(|o| o.1).max().map_or(0, |m| m + 1);
        let mut series = vec![vec![]; 3 * n_markers];
        for (k, (_, m, _)) in c.observed.iter().enumerate() {
            for a in 0..3 {
                series[3 * m + a].push(row + 3 * k + a);
            }
        }
        let len = 3 * c.observed.len();
        groups.push(RowGroup { start: row, len, sigma: c.sigma_m, force: false, scale2: scale2(row, len), inflation: inflation(&series) });
        row += len;
        if let Some(f) = &c.force {
            let len = 3 * f.samples.len();
            let series: Vec<Vec<usize>> = (0..3).map(|a| (0..f.samples.len()).map(|k| row + 3 * k + a).collect()).collect();
            groups.push(RowGroup { start: row, len, sigma: f.sigma_n, force: true, scale2: scale2(row, len), inflation: inflation(&series) });
            row += len;
        }
    }
    groups
}

/// RMS over the marker rows (per point, metres) and over the force rows
/// (per reading, newtons).
fn rms_parts(cases: &[SessionCase], r: &DVector<f64>) -> (f64, f64) {
    // Per point (3 rows): sqrt(3 sum / rows) of the unweighted residuals.
    let groups = row_groups(cases, r);
    let rms = |force: bool| {
        let (sum, rows) =
            groups.iter().filter(|g| g.force == force).fold((0.0, 0), |(sum, rows), g| (sum + g.scale2 * g.len as f64 * g.sigma * g.sigma, rows + g.len));
        (3.0 * sum / rows.max(1) as f64).sqrt()
    };
    (rms(false), rms(true))
}

/// The residual's sensitivities to (ln mu, ln zeta) at `mu`, `zeta` by
/// central differences of step `log_step` (what the fit uses with 0.01).
pub fn sensitivities(req: &DynamicRequest, mu: f64, zeta: f64, log_step: f64) -> Result<DMatrix<f64>> {
    let rod = req.params.rod(&req.rod);
    let replay = Replay::new(rod.clone(), &req.scene_path, read_cases(req, &rod, &req.scene)?);
    let held = Point {
        mu,
        zeta,
        stiffness: 1.0,
        density: 1.0,
        branches: rod.viscoelastic.clone(),
        constant_loss: rod.constant_loss,
        hook_friction_radius_m: req.loads.file.hook_friction_radius_m.unwrap_or(0.0),
    };
    let problem = DynamicProblem {
        replay: &replay,
        held,
        free: vec![Knob::Mu, Knob::Zeta],
        delays_free: vec![false; replay.cases.len()],
        ring_down: None,
        holds: None,
        log_step,
        iterations: None,
    };
    problem.jacobian_fd(&problem.start())
}

/// What the sessions say about the table's friction before the least
/// squares: the bracketing scan of mu, its best point, and whether the
/// tip ever slides (or whether there is a table at all).
struct Friction {
    scan: Vec<(f64, f64)>,
    best_mu: f64,
    /// The tip only sticks: mu is bounded from below (`mu_at_least`), not fitted.
    stick_only: bool,
    mu_at_least: Option<f64>,
    /// The scene has no table: mu is not a parameter.
    no_table: bool,
    warnings: Vec<String>,
}

impl Friction {
    /// A scene without a table: nothing touches, mu is not a parameter.
    fn no_table(replay: &mut Replay) -> Friction {
        replay.touches = vec![false; replay.cases.len()];
        Friction {
            scan: vec![],
            best_mu: f64::NAN,
            stick_only: false,
            mu_at_least: None,
            no_table: true,
            warnings: vec![
                "the scene has no [table]: mu is not a parameter (the rod moves in air); the damping ratio (and with --fit-stiffness E) is fitted".into()
            ],
        }
    }

    fn fit_mu(&self) -> bool {
        !self.stick_only && !self.no_table
    }
}

/// Whether each session touches the table (in a replay that never slides),
/// then a bracketing scan of mu at the starting damping ratio: the
/// residual is flat where the tip sticks and kinks where it starts to slide.
fn scan_friction(replay: &mut Replay, start: &Point, task: &dyn crate::progress::Task) -> Result<Friction> {
    // The replays that never slide: whether each session touches the table
    // (a session in the air does not depend on mu).
    task.message("replaying with sticking friction");
    let sticks = start.with_mu(MU_STICKS);
    let sticking: Vec<Result<Vec<StepRecord>>> = replay.cases.par_iter().map(|c| replay.records(c, &sticks)).collect();
    let sticking = sticking.into_iter().collect::<Result<Vec<_>>>()?;
    replay.touches = sticking.iter().map(|r| r.iter().any(|s| s.contacts.iter().any(|c| c.state != ContactState::Free))).collect();
    for (i, records) in sticking.iter().enumerate() {
        // The scan's point that never slides.
        replay.keep(i, &sticks, records);
    }
    if !replay.touches.iter().any(|t| *t) {
        return Err(Error::input(
            "the rod never touches the table in these sessions: there is no friction to identify (add a session with contact, or hold mu)",
        ));
    }
    task.message("scanning mu");
    let mut grid = mu_grid();
    grid.push(start.mu);
    grid.push(MU_STICKS);
    let no_delays = replay.no_delays();
    let costs: Vec<Result<f64>> = grid.par_iter().map(|mu| replay.residual(&start.with_mu(*mu), &no_delays).map(|r| 0.5 * r.norm_squared())).collect();
    let mut scan = vec![];
    for (mu, c) in grid.iter().zip(costs) {
        // A simulation that fails at a trial value is no candidate.
        if let Ok(c) = c {
            scan.push((*mu, c));
        }
    }
    let sticks = scan.iter().find(|(mu, _)| *mu == MU_STICKS).map(|s| s.1);
    scan.retain(|(mu, _)| *mu != MU_STICKS);
    scan.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (best_mu, best_cost) =
        scan.iter().cloned().min_by(|a, b| a.1.total_cmp(&b.1)).ok_or_else(|| Error::computation("no simulation of the scan succeeded"))?;
    // Stick only: sticking everywhere fits as well as the best mu (the same
    // simulation, up to the last digits).
    let stick_only = sticks.is_some_and(|c| c <= best_cost * (1.0 + 1e-9) + 1e-12);
    let mut warnings = vec![];
    let mu_at_least = stick_only.then(|| {
        let bound = sticking.iter().map(|r| largest_stick_ratio(r)).fold(0.0, f64::max);
        warnings.push(format!(
            "the tip never slides in these sessions: mu is not determined, only bounded from below by {bound:.3} (the largest tangential / normal force ratio the stick needed); record a session in which the tip slides to measure it"
        ));
        bound
    });
    Ok(Friction { scan, best_mu, stick_only, mu_at_least, no_table: false, warnings })
}

/// Where `--fit-hook-friction` starts without a loads file's value \[m\]:
/// a pin of a few millimetres at a friction coefficient of 0.3.
const HOOK_FRICTION_START_M: f64 = 1e-3;

/// The replay's start: mu (`--mu-start`, else the scene's), the damping
/// ratio (`--damping-start`, else the rod file's; 0.05 for an elastic
/// rod; none beside a viscoelastic law that asks for none) and the rod
/// file's branches; and whether the damping ratio is fitted.
fn start_point(req: &DynamicRequest, rod: &Rod) -> Result<(Point, bool)> {
    let mu = req.mu_start.unwrap_or(req.scene.table.as_ref().map_or(0.5, |t| t.mu));
    crate::error::positive("--mu-start", mu)?;
    let viscoelastic = !rod.viscoelastic.is_empty();
    let zeta = req.damping_start.unwrap_or(match rod.damping {
        Some(Damping::Ratio(z)) => z,
        _ if viscoelastic && rod.damping.is_none() => 0.0,
        _ => 0.05,
    });
    // The branches carry the loss; a damping ratio beside them only where asked.
    let fit_zeta = !req.hold_damping && zeta > 0.0;
    if fit_zeta || req.damping_start.is_some() {
        crate::error::positive("--damping-start", zeta)?;
    }
    let hook_friction_radius_m = match (req.loads.file.hook_friction_radius_m, req.fit_hook_friction) {
        (Some(r), true) if r > 0.0 => r,
        (_, true) => HOOK_FRICTION_START_M,
        (r, false) => r.unwrap_or(0.0),
    };
    let point = Point { mu, zeta, stiffness: 1.0, density: 1.0, branches: rod.viscoelastic.clone(), constant_loss: rod.constant_loss, hook_friction_radius_m };
    Ok((point, fit_zeta))
}

/// The values fitted: mu where the tip slides, the damping ratio, the
/// stiffness when asked, and every branch's modulus and time (or the
/// constant-loss law's loss factor and longest time).
fn free_knobs(req: &DynamicRequest, friction: &Friction, fit_zeta: bool, rod: &Rod) -> Vec<Knob> {
    let mut free = vec![];
    if friction.fit_mu() {
        free.push(Knob::Mu);
    }
    if fit_zeta {
        free.push(Knob::Zeta);
    }
    if req.fit_stiffness {
        free.push(Knob::Stiffness);
    }
    if req.fit_density {
        free.push(Knob::Density);
    }
    if req.fit_hook_friction {
        free.push(Knob::HookFriction);
    }
    match (req.hold_branches, rod.constant_loss) {
        (true, _) => {}
        (false, Some(_)) => free.extend([Knob::LossFactor, Knob::LongestTime]),
        (false, None) => free.extend((0..rod.viscoelastic.len()).flat_map(|i| [Knob::BranchModulus(i), Knob::BranchTime(i)])),
    }
    free
}

/// Levenberg-Marquardt from the problem's start: the best parameters and
/// the cost per iteration.
fn least_squares(problem: &DynamicProblem) -> Result<(DVector<f64>, Vec<f64>)> {
    let p0 = problem.start();
    if p0.is_empty() {
        return Ok((p0, vec![]));
    }
    // Tolerances of the differences' accuracy, not of round-off.
    let mut solver = identify::lm::LevenbergMarquardt::default();
    (solver.cost_tolerance, solver.step_tolerance) = (1e-6, 1e-4);
    let res = Executor::new(problem, solver)
        .configure(|s| s.param(p0.clone()).max_iters(MAX_ITERATIONS))
        .run()
        .map_err(|e| Error::computation(format!("the least squares stopped: {e}")))?;
    let p = res.state().get_best_param().or(res.state().get_param()).cloned().unwrap_or(p0);
    Ok((p, res.solver().history.clone()))
}

/// The fit's 95 % intervals: per parameter (the log-values' as values,
/// the delays' in seconds), and the correlation of ln mu and ln zeta.
struct Intervals {
    ci95: Vec<[f64; 2]>,
    correlation_mu_zeta: f64,
}

impl Intervals {
    /// A sandwich over the row groups (each session's markers, its force
    /// readings), each with its own residual scale and the inflation of its
    /// residuals' correlation in time (see `row_groups`): white noise leaves
    /// the Gauss-Newton covariance as it is; a misfit that lasts (a sensor's
    /// latency, a model error) widens it. None where the sensitivities are singular.
    fn of(problem: &DynamicProblem, p: &DVector<f64>, r: &DVector<f64>) -> Result<Option<Intervals>> {
        let j = problem.jacobian_fd(p)?;
        let Some(inv) = (j.transpose() * &j).try_inverse() else { return Ok(None) };
        let cov = match problem.ring_down {
            // Rows in their sigmas: Gauss-Newton's covariance, widened by a
            // residual larger than they allow.
            Some(_) => {
                let dof = r.len().saturating_sub(p.len()).max(1) as f64;
                &inv * (r.norm_squared() / dof).max(1.0)
            }
            None => {
                let mut meat = DMatrix::zeros(p.len(), p.len());
                for g in row_groups(&problem.replay.cases, r) {
                    let jg = j.rows(g.start, g.len);
                    meat += jg.transpose() * jg * (g.scale2 * g.inflation);
                }
                &inv * meat * &inv
            }
        };
        let half = |i: usize| 1.96 * cov[(i, i)].sqrt();
        let logs = problem.log_count();
        let ci95 = (0..p.len())
            .map(|i| if i < logs { [(p[i] - half(i)).exp(), (p[i] + half(i)).exp()] } else { [(p[i] - half(i)) * 1e-3, (p[i] + half(i)) * 1e-3] })
            .collect();
        let correlation_mu_zeta = match (problem.index(Knob::Mu), problem.index(Knob::Zeta)) {
            (Some(a), Some(b)) => cov[(a, b)] / (cov[(a, a)] * cov[(b, b)]).sqrt(),
            _ => f64::NAN,
        };
        Ok(Some(Intervals { ci95, correlation_mu_zeta }))
    }

    /// The interval of `knob` (NaN where held or undetermined).
    fn of_knob(this: &Option<Intervals>, problem: &DynamicProblem, knob: Knob) -> [f64; 2] {
        match (this, problem.index(knob)) {
            (Some(i), Some(k)) => i.ci95[k],
            _ => [f64::NAN; 2],
        }
    }
}

/// Time steps per shortest branch time below which the replay's numerical
/// damping (BDF2's, of the higher modes the branches act on) biases the
/// fitted times: measured on a released beam, 10 steps per time gave times
/// 5-6 % long, 40 within 2 %.
const STEPS_PER_BRANCH_TIME: f64 = 20.0;

/// A warning when the scene's step is coarse against the fitted branches' shortest time.
fn coarse_step_warning(scene: &sim::Scene, branches: &[rod::PronyBranch]) -> Option<String> {
    let shortest = branches.iter().map(|b| b.time_constant_s).fold(f64::INFINITY, f64::min);
    (shortest.is_finite() && scene.step_s * STEPS_PER_BRANCH_TIME > shortest).then(|| {
        format!(
            "the scene's step_s ({} s) is coarse against the shortest branch time ({shortest:.4} s): fewer than {STEPS_PER_BRANCH_TIME} steps per time, the replay's numerical damping biases the fitted times (5-6 % at 10 steps per time, measured); refit with step_s <= {:.2e} s",
            scene.step_s,
            shortest / STEPS_PER_BRANCH_TIME
        )
    })
}

/// The chance level below which a dynamic fit's residual fails the noise
/// test (the static fit's).
const CHI_SQUARE_LEVEL: f64 = crate::identify::CHI_SQUARE_LEVEL;

/// The chi-square of the fitted residual `r` (`parameters` fitted): each
/// marker row's weight with the model error allowed in quadrature, each
/// force sensor's bias (3 values) counted as fitted.
fn noise_test(cases: &[SessionCase], r: &DVector<f64>, parameters: usize, model_error_m: f64) -> Option<DynamicNoiseTest> {
    let mut chi_square = 0.0;
    for g in row_groups(cases, r) {
        let allowed = if g.force { 1.0 } else { g.sigma * g.sigma / (g.sigma * g.sigma + model_error_m * model_error_m) };
        chi_square += r.rows(g.start, g.len).norm_squared() * allowed;
    }
    let biases = 3 * cases.iter().filter(|c| c.force.is_some()).count();
    tested(chi_square, r.len(), parameters + biases, model_error_m)
}

/// The chi-square of `--match-ring-down`'s rows (each in its sigma,
/// [`RING_DOWN_SIGMA`]), `parameters` fitted.
fn ring_down_test(r: &DVector<f64>, parameters: usize) -> Option<DynamicNoiseTest> {
    tested(r.norm_squared(), r.len(), parameters, 0.0)
}

/// The test of `chi_square` over `rows` less the `fitted` values (none
/// when nothing is left over).
fn tested(chi_square: f64, rows: usize, fitted: usize, model_error_m: f64) -> Option<DynamicNoiseTest> {
    let dof = rows.checked_sub(fitted).filter(|d| *d > 0)?;
    let p = identify::fit::chi_square_upper_p(chi_square, dof);
    Some(DynamicNoiseTest { chi_square, dof, p, scale: (chi_square / dof as f64).sqrt(), model_error_m, level: CHI_SQUARE_LEVEL })
}

/// What a failed noise test says: how far off, and which terms the fit
/// did not have that could carry the misfit.
fn misfit_warning(test: &DynamicNoiseTest, req: &DynamicRequest, rod: &Rod, delays_held: bool) -> Option<String> {
    if test.passed() {
        return None;
    }
    let mut terms = vec![];
    if rod.viscoelastic.is_empty() {
        terms.push(format!(
            "a viscoelastic law ({} [damping] branches or constant_loss: a stiffness that rises with the rate and a loss nearly flat in frequency, which one damping ratio cannot give)",
            req.rod_path.display()
        ));
    } else if req.hold_branches {
        terms.push("the branches fitted (drop --hold-branches), or another branch".into());
    }
    if !req.fit_stiffness {
        terms.push("the stiffness fitted with the motion (--fit-stiffness)".into());
    }
    if delays_held {
        let how = if req.hold_marker_delay { "drop --hold-marker-delay" } else { "--fit-marker-delay" };
        terms.push(format!("the markers' delay fitted ({how})"));
    }
    let p = if test.p > 0.0 { format!("{:.1e}", test.p) } else { "0 to double precision".into() };
    Some(format!(
        "the replay misses the recorded motion: the residuals are {:.2} times the declared noise (chi-square {:.1} on {} degrees of freedom, p = {p} < {:.0e}); terms that could carry it: {}; or declare the model's own error ({} [identify] model_error_m, now {} m)",
        test.scale,
        test.chi_square,
        test.dof,
        test.level,
        if terms.is_empty() { "none left to free".into() } else { terms.join("; ") },
        req.rod_path.display(),
        test.model_error_m
    ))
}

/// What a dynamic fit starts from: the rod with `--params`, the start
/// point (and whether the damping ratio is free), the sessions' replays,
/// the friction's scan, and the warnings so far.
struct Prologue<'a> {
    rod: Rod,
    start: Point,
    fit_zeta: bool,
    replay: Replay<'a>,
    friction: Friction,
    warnings: Vec<String>,
}

/// The request checked, the sessions read and mu scanned (where the scene has a table).
fn prologue<'a>(req: &'a DynamicRequest, task: &dyn crate::Task) -> Result<Prologue<'a>> {
    if req.sessions.is_empty() {
        return Err(Error::input("--sessions: at least one session is needed"));
    }
    crate::error::positive("--sigma-m", req.sigma_m)?;
    if !RING_DOWN_CYCLES_RANGE.contains(&req.ring_down_cycles) {
        let (lo, hi) = (RING_DOWN_CYCLES_RANGE.start(), RING_DOWN_CYCLES_RANGE.end());
        return Err(Error::input(format!("--ring-down-cycles: {lo} to {hi}, got {}", req.ring_down_cycles)));
    }
    let rod = req.params.rod(&req.rod);
    if rod.markers.is_empty() {
        return Err(Error::input(format!("{}: no [[marker]]: the session's markers cannot be matched to the rod", req.rod_path.display())));
    }
    let (start, fit_zeta) = start_point(req, &rod)?;
    task.message("reading the sessions");
    let cases = read_cases(req, &rod, &req.scene)?;
    let mut replay = Replay::new(rod.clone(), &req.scene_path, cases);
    let friction = match req.scene.table {
        Some(_) => scan_friction(&mut replay, &start, task)?,
        None => Friction::no_table(&mut replay),
    };
    // What each replay is (from its release, a hung mass), then the friction's word.
    let mut warnings: Vec<String> = replay.cases.iter().flat_map(|c| c.prepared.warnings.iter().cloned()).collect();
    warnings.extend(friction.warnings.iter().cloned());
    Ok(Prologue { rod, start, fit_zeta, replay, friction, warnings })
}

/// The fitted law's branches (or constant-loss law) with their intervals.
fn law_out(fitted: &Point, ci: impl Fn(Knob) -> [f64; 2]) -> (Vec<BranchOut>, Option<identify::output::ConstantLossOut>) {
    let branches = fitted
        .branches
        .iter()
        .enumerate()
        .map(|(i, b)| BranchOut {
            modulus_ratio: b.modulus_ratio,
            modulus_ratio_ci95: ci(Knob::BranchModulus(i)),
            time_constant_s: b.time_constant_s,
            time_constant_ci95_s: ci(Knob::BranchTime(i)),
        })
        .collect();
    let constant_loss = fitted.constant_loss.map(|law| identify::output::ConstantLossOut {
        loss_factor: law.loss_factor,
        loss_factor_ci95: ci(Knob::LossFactor),
        shortest_time_s: law.shortest_time_s,
        longest_time_s: law.longest_time_s,
        longest_time_ci95_s: ci(Knob::LongestTime),
        branches: law.branches,
    });
    (branches, constant_loss)
}

/// Fits mu and the damping ratio (or the viscoelastic branches) to the
/// sessions; writes identified.toml (the static file with `[dynamic]`),
/// index.html and summary.json.
pub fn identify_dynamic(req: &DynamicRequest, progress: &dyn Progress) -> Result<DynamicFit> {
    let started = std::time::Instant::now();
    let task = progress.task("identify --dynamic", None);
    let Prologue { rod, start, fit_zeta, replay, friction, mut warnings } = prologue(req, task.as_ref())?;

    // Levenberg-Marquardt from the scan's best (or with mu held where
    // the tip only sticks, or without mu where there is no table).
    task.message("least squares");
    let free = free_knobs(req, &friction, fit_zeta, &rod);
    if friction.no_table && free.is_empty() {
        return Err(Error::input(format!(
            "nothing to fit: {} has no [table] (no mu), the damping ratio and any branches are held and --fit-stiffness is not given",
            req.scene_path.display()
        )));
    }
    let held = start.with_mu(if friction.fit_mu() { friction.best_mu } else { MU_STICKS });
    let reading = RingDownReading::of(&replay, req.ring_down_cycles);
    if req.match_ring_down && reading.sessions.iter().all(Option::is_none) {
        return Err(Error::input(format!(
            "--match-ring-down: no session rings ({RING_DOWN_CYCLES} cycles about where its outermost marker settles): nothing to match"
        )));
    }
    let iterations_task = progress.task("least-squares iterations", Some(MAX_ITERATIONS));
    // Matching ring-downs reads each release on its own clock: no delay.
    let delays_free: Vec<bool> = replay.cases.iter().map(|c| !req.match_ring_down && c.delay_fitted(req)).collect();
    let problem = DynamicProblem {
        replay: &replay,
        held,
        free,
        delays_free: delays_free.clone(),
        log_step: LOG_STEP,
        ring_down: req.match_ring_down.then_some(&reading),
        holds: (req.match_ring_down && (req.fit_stiffness || req.fit_density)).then(|| StaticHolds::of(&req.params, req)).flatten(),
        iterations: Some((iterations_task.as_ref(), 0.into())),
    };
    let start_r = replay.residual(&start, &replay.no_delays())?;
    let (p, history) = least_squares(&problem)?;
    let fitted = problem.values(&p);
    let delays_s = problem.delays_s(&p);
    let r = problem.residual(&p)?;
    let intervals = if p.is_empty() { None } else { Intervals::of(&problem, &p, &r)? };
    // The markers' residual at the fit, whatever was matched.
    let markers_r = if req.match_ring_down { replay.residual(&fitted, &delays_s)? } else { r.clone() };
    if intervals.is_none() && !p.is_empty() {
        warnings.push("the sensitivities are singular: the sessions do not determine these parameters (no interval)".into());
    }
    let ci = |k: Knob| Intervals::of_knob(&intervals, &problem, k);
    let mut ci_mu = ci(Knob::Mu);
    if friction.stick_only {
        ci_mu = [friction.mu_at_least.unwrap_or(f64::NAN), f64::INFINITY];
    }
    if problem.index(Knob::Mu).is_some() && (friction.best_mu == friction.scan.first().map_or(0.0, |s| s.0)) {
        warnings.push(format!("the scan's best mu is its smallest value ({:.3}): the friction may be lower still", friction.best_mu));
    }
    warnings.extend(coarse_step_warning(&req.scene, &fitted.branches));
    if req.match_ring_down {
        warnings.extend(reading.short_of(&replay, req.ring_down_cycles));
    }
    let test = match req.match_ring_down {
        true => ring_down_test(&r, p.len()),
        false => noise_test(&replay.cases, &r, p.len(), rod.identify_priors.model_error_m),
    };
    // A delay held where it could be fitted (not where one clock stamped markers and base).
    let delays_held = replay.cases.iter().zip(&delays_free).any(|(c, f)| !f && c.markers_move() && (req.hold_marker_delay || !c.one_clock));
    warnings.extend(test.as_ref().and_then(|t| misfit_warning(t, req, &rod, delays_held)));
    let stiffness_ci = ci(Knob::Stiffness);
    let density_ci = ci(Knob::Density);
    let (marker_rms_m, force_rms_n) = rms_parts(&replay.cases, &markers_r);
    let ring_downs = ring_downs(&replay, &reading, &fitted, &delays_s)?;
    let (branches, constant_loss) = law_out(&fitted, ci);
    let mut out = DynamicOut {
        sessions: replay.cases.iter().map(|c| c.name.clone()).collect(),
        scene_file: req.scene_path.display().to_string(),
        mu: if friction.no_table { f64::NAN } else { friction.mu_at_least.unwrap_or(fitted.mu) },
        mu_ci95: ci_mu,
        mu_determined: friction.fit_mu(),
        mu_at_least: friction.mu_at_least,
        no_table: friction.no_table,
        damping_ratio: fitted.zeta,
        damping_ratio_ci95: ci(Knob::Zeta),
        correlation_mu_damping: intervals.as_ref().map_or(f64::NAN, |i| i.correlation_mu_zeta),
        branches,
        constant_loss,
        variants: vec![],
        recommended_law: None,
        static_holds: problem.holds.as_ref().map(|h| h.out(&fitted)),
        noise_test: test,
        ring_downs,
        marker_delay_s: delays_s.clone(),
        marker_delay_ci95_s: (0..replay.cases.len())
            .map(|i| match (&intervals, problem.delay_index(i)) {
                (Some(iv), Some(k)) => iv.ci95[k],
                _ => [f64::NAN; 2],
            })
            .collect(),
        e_pa: req.fit_stiffness.then_some(rod.cross_section.body.e_pa * fitted.stiffness),
        e_pa_ci95: req.fit_stiffness.then(|| stiffness_ci.map(|s| rod.cross_section.body.e_pa * s)),
        rho_kg_m3: req.fit_density.then_some(rod.cross_section.body.rho_kg_m3 * fitted.density),
        rho_kg_m3_ci95: req.fit_density.then(|| density_ci.map(|s| rod.cross_section.body.rho_kg_m3 * s)),
        hook_friction_radius_m: (fitted.hook_friction_radius_m > 0.0).then_some(fitted.hook_friction_radius_m),
        hook_friction_radius_ci95_m: req.fit_hook_friction.then(|| ci(Knob::HookFriction)),
        marker_rms_start_m: rms_parts(&replay.cases, &start_r).0,
        marker_rms_m,
        force_rms_n: replay.cases.iter().any(|c| c.force.is_some()).then_some(force_rms_n),
        force_streams: replay.cases.iter().filter_map(|c| c.force.as_ref().map(|f| format!("{}: {}", c.name, f.stream))).collect(),
        iterations: history.len().saturating_sub(1),
        simulations: replay.simulations.load(Ordering::Relaxed),
        wall_time_s: started.elapsed().as_secs_f64(),
    };
    drop(task);
    if req.compare_laws {
        let (variants, best) = variants::compare_laws(req, progress)?;
        out.recommended_law = best.map(|i| variants[i].law.clone());
        out.variants = variants;
    }
    let identified_toml = write_identified(req, &out, (fitted.stiffness, stiffness_ci), (fitted.density, density_ci))?;
    // The report: the scan, and per session the tip's path at the start and at the fit.
    let report = write_report(req, &replay, &out, &friction.scan, &history, (start, fitted), &delays_s, &warnings, &identified_toml)?;
    Ok(DynamicFit { out, scan: friction.scan, history, identified_toml, report, warnings })
}

/// Cycles of each release compared, recorded and replayed, by default
/// (and the fewest read): the decrement reported is over these.
pub const RING_DOWN_CYCLES: usize = 3;

/// The cycles `--ring-down-cycles` may ask (each reading tries every count
/// from the asked one down to [`RING_DOWN_CYCLES`]: bounded work).
pub const RING_DOWN_CYCLES_RANGE: std::ops::RangeInclusive<usize> = RING_DOWN_CYCLES..=50;

/// How closely a ring-down is read \[1, relative\]: the two trials of
/// each mass of `datasets/beam-release-ethz` ring within 0.7 % of each
/// other and decay within 5-30 %; the residual of `--match-ring-down`
/// weighs the frequency by 1 % and the decrement by 10 %.
const RING_DOWN_SIGMA: (f64, f64) = (0.01, 0.1);

/// What a release's ring-down is read from: its outermost marker (the
/// first of the outermost) along the axis it moves most along, at the
/// tracked times.
struct RingDownReading {
    tip: usize,
    /// Per session: the tracked times, the recorded ring-down (none where
    /// it does not ring: a drag, a hold) and the swing's axis.
    sessions: Vec<Option<(Vec<f64>, RingDown, Vec3)>>,
}

/// The outermost marker (the first of the outermost on a tip face's
/// cluster): what the ring-down reads and the report's charts show.
fn outermost_marker(rod: &Rod) -> usize {
    let markers = &rod.markers;
    (0..markers.len()).max_by(|a, b| markers[*a].arc_m.total_cmp(&markers[*b].arc_m).then(b.cmp(a))).unwrap_or(0)
}

impl RingDownReading {
    fn of(replay: &Replay, cycles: usize) -> RingDownReading {
        let tip = outermost_marker(&replay.rod);
        let sessions = replay
            .cases
            .iter()
            .map(|case| {
                let points: Vec<(f64, Vec3)> = case.observed.iter().filter(|o| o.1 == tip).filter_map(|o| Some((o.0, o.2.as_point()?))).collect();
                let axis = swing_axis(&points)?;
                let (t, x): (Vec<f64>, Vec<f64>) = points.iter().map(|(t, p)| (*t, p.dot(&axis))).unzip();
                let recorded = ring_down_upto(&t, &x, cycles)?;
                Some((t, recorded, axis))
            })
            .collect();
        RingDownReading { tip, sessions }
    }

    /// Session `i`'s replay `track`, read as its recording was (`delay_s`
    /// behind, as many cycles as the recording's read).
    fn replayed(&self, i: usize, track: &Track, delay_s: f64) -> Option<RingDown> {
        let (t, recorded, down) = self.sessions[i].as_ref()?;
        let x: Vec<f64> = t.iter().map(|t| track.marker_at(self.tip, t - delay_s).dot(down)).collect();
        ring_down_upto(t, &x, recorded.cycles)
    }

    /// The rows of `--match-ring-down` at `at`: per ringing session, the
    /// frequency's relative miss and, from the first swing to each later
    /// cycle's from the third on, the decay's (ln of the swings' ratio),
    /// each over its sigma: with three cycles, the decrement's miss alone;
    /// with more (`--ring-down-cycles`), the envelope's bend, which tells
    /// a loss that does not shrink with the swing (a hook's dry friction)
    /// from the material's. A replay that rings fewer cycles misses those
    /// by 100 %.
    fn rows(&self, replay: &Replay, at: &Point) -> Result<DVector<f64>> {
        let mut rows = vec![];
        for (i, reading) in self.sessions.iter().enumerate() {
            let Some((_, recorded, _)) = reading else { continue };
            let track = replay.track_of(i, at)?;
            let replayed = self.replayed(i, &track, 0.0);
            let df = replayed.as_ref().map_or(1.0, |r| r.frequency_hz / recorded.frequency_hz - 1.0);
            rows.push(df / RING_DOWN_SIGMA.0);
            for k in 2..recorded.cycles {
                let miss = match (replayed.as_ref().and_then(|r| r.decay_to(k)), recorded.decay_to(k)) {
                    (Some(a), Some(b)) => a / b - 1.0,
                    _ => 1.0,
                };
                rows.push(miss / RING_DOWN_SIGMA.1);
            }
        }
        Ok(DVector::from_vec(rows))
    }

    /// A warning per recording that rings fewer than the `cycles` asked in
    /// its window (read over those it rings: the window, or the swing's
    /// fall into the noise, ends the envelope).
    fn short_of(&self, replay: &Replay, cycles: usize) -> Vec<String> {
        let short = self.sessions.iter().zip(&replay.cases).filter_map(|(s, c)| {
            let (t, recorded, _) = s.as_ref()?;
            (recorded.cycles < cycles).then(|| {
                let span_s = t.last().zip(t.first()).map_or(0.0, |(b, a)| b - a);
                format!(
                    "--ring-down-cycles {cycles}: {} rings {} cycles in its {span_s:.2} s window (read over those): a longer scene duration_s or --window-s reads more",
                    c.name, recorded.cycles
                )
            })
        });
        short.collect()
    }
}

/// The ring-down of `x` over `cycles` cycles, or over as many as it rings
/// when fewer (at least [`RING_DOWN_CYCLES`]).
fn ring_down_upto(t_s: &[f64], x: &[f64], cycles: usize) -> Option<RingDown> {
    (RING_DOWN_CYCLES..=cycles.max(RING_DOWN_CYCLES)).rev().find_map(|c| ring_down(t_s, x, c))
}

/// The direction a tracked marker moves most along (its positions'
/// principal axis): where a swing shows, whichever way the rod hangs.
fn swing_axis(points: &[(f64, Vec3)]) -> Option<Vec3> {
    if points.len() < 8 {
        return None;
    }
    let mean = points.iter().map(|p| p.1).sum::<Vec3>() / points.len() as f64;
    let cov = points.iter().map(|p| (p.1 - mean) * (p.1 - mean).transpose()).sum::<lie::Mat3>();
    let eigen = cov.symmetric_eigen();
    let k = eigen.eigenvalues.imax();
    Some(eigen.eigenvectors.column(k).into_owned())
}

/// Each session's ring-down, recorded and replayed at `fitted`. Sessions
/// that do not ring are left out.
fn ring_downs(replay: &Replay, reading: &RingDownReading, fitted: &Point, delays_s: &[f64]) -> Result<Vec<identify::output::RingDownOut>> {
    let mut out = vec![];
    for (i, case) in replay.cases.iter().enumerate() {
        let Some((_, a, _)) = &reading.sessions[i] else { continue };
        let Some(b) = reading.replayed(i, replay.track_of(i, fitted)?.as_ref(), delays_s[i]) else { continue };
        let envelope = a.cycles > RING_DOWN_CYCLES;
        out.push(identify::output::RingDownOut {
            session: case.name.clone(),
            recorded_hz: a.frequency_hz,
            replayed_hz: b.frequency_hz,
            recorded_log_decrement: a.decrement_over(RING_DOWN_CYCLES).unwrap_or(f64::NAN),
            replayed_log_decrement: b.decrement_over(RING_DOWN_CYCLES).unwrap_or(f64::NAN),
            cycles: RING_DOWN_CYCLES,
            recorded_swings_m: if envelope { a.swings.clone() } else { vec![] },
            replayed_swings_m: if envelope { b.swings.clone() } else { vec![] },
        });
    }
    Ok(out)
}

/// The releases' envelopes (`--ring-down-cycles` past three): each
/// cycle's decrement, recorded and replayed.
fn envelope_table(out: &DynamicOut, blocks: &mut Vec<Block>) {
    let rows: Vec<Vec<String>> = out
        .ring_downs
        .iter()
        .filter(|r| !r.recorded_swings_m.is_empty())
        .map(|r| {
            let (recorded, replayed) = r.envelope_decrements();
            let list = |v: &[f64]| v.iter().map(|d| format!("{d:.2}")).collect::<Vec<_>>().join(" ");
            vec![r.session.clone(), list(&recorded), list(&replayed)]
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    blocks.push(Block::Text("Each release's envelope: the log decrement cycle by cycle (ln of a swing over the next). A linear law decays by one decrement every cycle; a loss per cycle that does not shrink with the swing (a hook's dry friction) lifts it as the swing shrinks:".into()));
    blocks.push(Block::Table(["release", "recorded, cycle by cycle", "replayed"].map(String::from).to_vec(), rows));
}

/// The report's table of values: only those that apply (no friction
/// without a table, no delay without a moving marker, no damping ratio
/// beside branches that carry the loss alone).
fn fitted_rows(replay: &Replay, out: &DynamicOut, start: &Point) -> Vec<Vec<String>> {
    let ci = |c: [f64; 2]| if c[0].is_finite() { format!("[{:.4}, {:.4}]", c[0], c[1]) } else { "(held)".into() };
    let mut rows = vec![];
    if !out.no_table {
        let mu_text = match out.mu_at_least {
            Some(b) => format!("not determined: at least {b:.4} (the tip never slides)"),
            None => format!("{:.4} {}", out.mu, ci(out.mu_ci95)),
        };
        rows.push(vec!["table friction mu".into(), mu_text, format!("{:.4}", start.mu)]);
    }
    if out.branches.is_empty() || out.damping_ratio > 0.0 {
        rows.push(vec!["damping ratio".into(), format!("{:.4} {}", out.damping_ratio, ci(out.damping_ratio_ci95)), format!("{:.4}", start.zeta)]);
    }
    if let (Some(c), Some(s)) = (&out.constant_loss, &start.constant_loss) {
        rows.push(vec!["constant loss: loss factor [1]".into(), format!("{:.4} {}", c.loss_factor, ci(c.loss_factor_ci95)), format!("{:.4}", s.loss_factor)]);
        rows.push(vec![
            format!("constant loss: longest time [s] (from {:.5} s, {} branches)", c.shortest_time_s, c.branches),
            format!("{:.5} {}", c.longest_time_s, ci(c.longest_time_ci95_s)),
            format!("{:.5}", s.longest_time_s),
        ]);
    }
    for (i, (b, s)) in out.branches.iter().zip(&start.branches).enumerate().filter(|_| out.constant_loss.is_none()) {
        rows.push(vec![
            format!("branch {}: modulus ratio [1]", i + 1),
            format!("{:.4} {}", b.modulus_ratio, ci(b.modulus_ratio_ci95)),
            format!("{:.4}", s.modulus_ratio),
        ]);
        rows.push(vec![
            format!("branch {}: time constant [s]", i + 1),
            format!("{:.5} {}", b.time_constant_s, ci(b.time_constant_ci95_s)),
            format!("{:.5}", s.time_constant_s),
        ]);
    }
    let e_text = match (out.e_pa, out.e_pa_ci95) {
        (Some(e), Some(c)) => format!("{e:.4e} {}", if c[0].is_finite() { format!("[{:.4e}, {:.4e}]", c[0], c[1]) } else { "(held)".into() }),
        _ => "held".into(),
    };
    rows.push(vec!["body E (relaxed) [Pa]".into(), e_text, format!("{:.4e}", replay.rod.cross_section.body.e_pa)]);
    if let (Some(rho), Some(c)) = (out.rho_kg_m3, out.rho_kg_m3_ci95) {
        rows.push(vec![
            "body rho [kg/m^3]".into(),
            format!("{rho:.4e} [{:.4e}, {:.4e}]", c[0], c[1]),
            format!("{:.4e}", replay.rod.cross_section.body.rho_kg_m3),
        ]);
    }
    if let Some(r) = out.hook_friction_radius_m {
        let c = out.hook_friction_radius_ci95_m.unwrap_or([f64::NAN; 2]);
        rows.push(vec!["hook friction radius [m]".into(), format!("{r:.4e} {}", ci(c)), format!("{:.4e}", start.hook_friction_radius_m)]);
    }
    if out.correlation_mu_damping.is_finite() {
        rows.push(vec!["correlation (ln mu, ln zeta)".into(), format!("{:.3}", out.correlation_mu_damping), "-".into()]);
    }
    if replay.cases.iter().any(|c| c.markers_move()) {
        rows.push(vec!["markers' delay behind the base's clock [ms]".into(), out.delays_text(), "0".into()]);
    }
    rows.push(vec!["marker RMS error".into(), format!("{:.3} mm", out.marker_rms_m * 1e3), format!("{:.3} mm", out.marker_rms_start_m * 1e3)]);
    if let Some(t) = &out.noise_test {
        let verdict = if t.passed() { "passed" } else { "FAILED" };
        rows.push(vec![
            "chi-square (dof), noise scale".into(),
            format!("{:.1} ({}), {:.2} x: {verdict} at p {:.0e}", t.chi_square, t.dof, t.scale, t.level),
            "-".into(),
        ]);
    }
    rows.push(vec!["simulations, wall time".into(), format!("{}, {:.1} s", out.simulations, out.wall_time_s), "-".into()]);
    rows
}

/// identified.toml: the static file with `[dynamic]`; with the stiffness
/// fitted, E and G in `[parameters]` scaled by it (G at `--params'` ratio
/// to E), what validate and simulate then use.
fn write_identified(
    req: &DynamicRequest,
    out: &DynamicOut,
    (stiffness, stiffness_ci): (f64, [f64; 2]),
    (density, density_ci): (f64, [f64; 2]),
) -> Result<PathBuf> {
    std::fs::create_dir_all(&req.out).map_err(|e| Error::io(format!("{}: {e}", req.out.display())))?;
    let mut file = req.params.file.clone();
    file.dynamic = Some(out.clone());
    if req.fit_stiffness {
        let p = &mut file.parameters;
        for est in [&mut p.e_pa, &mut p.g_pa] {
            est.ci95 = stiffness_ci.map(|s| est.value * s);
            est.value *= stiffness;
        }
    }
    if req.fit_density {
        let est = &mut file.parameters.rho_kg_m3;
        est.ci95 = density_ci.map(|s| est.value * s);
        est.value *= density;
    }
    let identified_toml = req.out.join("identified.toml");
    file.write(&identified_toml).map_err(|e| Error::io(format!("{}: cannot write: {e}", identified_toml.display())))?;
    Ok(identified_toml)
}

#[allow(clippy::too_many_arguments)]
fn write_report(
    req: &DynamicRequest,
    replay: &Replay,
    out: &DynamicOut,
    scan: &[(f64, f64)],
    history: &[f64],
    (start, fitted): (Point, Point),
    delays_s: &[f64],
    warnings: &[String],
    identified_toml: &Path,
) -> Result<PathBuf> {
    // The replay as validate and simulate will run it (a mu only bounded:
    // the scene's when above the bound).
    let replayed = fitted.with_mu(out.mu_for(start.mu));
    let mut blocks = vec![Block::Text(format!(
        "Friction and damping fitted to {} session(s) by replaying each in the simulator (scene {}) and matching the tracked markers; E, G, rho and geometry held at {}. Written: {}.",
        out.sessions.len(),
        req.scene_path.display(),
        req.params.path.display(),
        identified_toml.display()
    ))];
    blocks.push(Block::Warnings(warnings.to_vec()));
    blocks.push(Block::Table(["value", "fitted (95 % interval)", "start"].map(String::from).to_vec(), fitted_rows(replay, out, &start)));
    if !out.ring_downs.is_empty() {
        let header = ["release", "recorded [Hz]", "replayed [Hz]", "frequency error", "log decrement recorded", "replayed", "decrement error"];
        let rows = out
            .ring_downs
            .iter()
            .map(|r| {
                vec![
                    r.session.clone(),
                    format!("{:.3}", r.recorded_hz),
                    format!("{:.3}", r.replayed_hz),
                    format!("{:+.1} %", 100.0 * r.frequency_error()),
                    format!("{:.3}", r.recorded_log_decrement),
                    format!("{:.3}", r.replayed_log_decrement),
                    format!("{:+.0} %", 100.0 * r.decrement_error()),
                ]
            })
            .collect();
        blocks.push(Block::Text(format!("Each release's first {RING_DOWN_CYCLES} cycles (its outermost marker along the axis it swings on; decrements peak to peak), recorded and replayed with the fitted values:")));
        blocks.push(Block::Table(header.map(String::from).to_vec(), rows));
        envelope_table(out, &mut blocks);
    }
    if !out.variants.is_empty() {
        blocks.push(Block::Text(format!(
            "Laws compared (--compare-variants): each fitted to every session but one and replayed on that one. Recommended: {} (the least held-out miss{}).",
            out.recommended_law.as_deref().unwrap_or("none"),
            if req.match_ring_down { ", in the ring-down rows' sigmas" } else { ": the markers' RMS" }
        )));
        blocks.push(Block::Table(
            ["law", "held-out markers RMS [mm]", "held-out ring-down miss [sigmas]", "per session (frequency, decrement)"].map(String::from).to_vec(),
            variants::rows(&out.variants),
        ));
    }
    if !scan.is_empty() {
        blocks.push(Block::Chart(Chart {
            name: "mu_scan".into(),
            title: format!("Bracketing scan: cost 1/2 |r|^2 against mu at damping ratio {:.3}", start.zeta),
            x_label: "mu [1]".into(),
            y_label: "cost [1]".into(),
            series: vec![
                Series::points("scan", scan.to_vec(), 0),
                Series::line("fitted mu", vec![(replayed.mu, 0.0), (replayed.mu, scan.iter().map(|s| s.1).fold(0.0, f64::max))], 1),
            ],
            diagonal: false,
        }));
    }
    if !history.is_empty() {
        blocks.push(Block::Chart(Chart {
            name: "history".into(),
            title: "Least squares: cost per iteration".into(),
            x_label: "iteration [1]".into(),
            y_label: "cost [1]".into(),
            series: vec![Series::line("cost", history.iter().enumerate().map(|(i, c)| (i as f64, *c)).collect(), 0)],
            diagonal: false,
        }));
    }
    // The marker whose ring-down the table reads.
    let tip = outermost_marker(&replay.rod);
    for (k, case) in replay.cases.iter().enumerate() {
        // One replay with the start values and one with the fitted ones,
        // sampled at the tracked times and at the sensor's.
        let runs = [replay.records(case, &start)?, replay.records(case, &replayed)?];
        let times: Vec<Vec<f64>> = runs.iter().map(|r| r.iter().map(|s| s.t_s).collect()).collect();
        let sampled = |run: usize, at: &[f64], f: &dyn Fn(&StepRecord) -> Vec3| -> Vec<(f64, Vec3)> {
            at.iter().filter_map(|t| at_records(&times[run], &runs[run], *t, f).map(|v| (*t, v))).collect()
        };
        // The tip marker's distance from where it was first tracked.
        let tracked: Vec<(f64, Vec3)> = case.observed.iter().filter(|o| o.1 == tip).filter_map(|o| Some((o.0, o.2.as_point()?))).collect();
        let Some(origin) = tracked.first().map(|t| t.1) else { continue };
        // The replays at the tracked times, the fitted one at the fitted delay.
        let tracked_t: Vec<f64> = tracked.iter().map(|p| p.0).collect();
        let delayed_t: Vec<f64> = tracked_t.iter().map(|t| t - delays_s[k]).collect();
        let distance_mm = |points: Vec<(f64, Vec3)>| points.into_iter().map(|(t, p)| (t, (p - origin).norm() * 1e3)).collect();
        let marker = |r: &StepRecord| r.markers_m[tip];
        blocks.push(Block::Chart(Chart {
            name: format!("tip_{k}"),
            title: format!("{}: the tip marker's distance from its first tracked position", case.name),
            x_label: "t [s]".into(),
            y_label: "distance [mm]".into(),
            series: vec![
                Series::line("tracked", distance_mm(tracked.clone()), 0),
                Series::line(format!("replayed, start (mu {:.3}, zeta {:.3})", start.mu, start.zeta), distance_mm(sampled(0, &tracked_t, &marker)), 1),
                Series::line(
                    format!("replayed, fitted (mu {:.3}, zeta {:.3})", replayed.mu, replayed.zeta),
                    distance_mm(sampled(1, &delayed_t, &marker).into_iter().map(|(t, p)| (t + delays_s[k], p)).collect()),
                    2,
                ),
            ],
            diagonal: false,
        }));
        // The flange force along the component it varies most in (a drag's
        // pull: mu times the weight on the table), the sensor's bias taken
        // as the fitted replay's mean difference.
        let Some(f) = &case.force else { continue };
        let sensor_t: Vec<f64> = f.samples.iter().map(|s| s.0).collect();
        let flange = |r: &StepRecord| lie::linear(&r.base_wrench_flange);
        let (at_start, at_fit) = (sampled(0, &sensor_t, &flange), sampled(1, &sensor_t, &flange));
        let bias = f.samples.iter().zip(&at_fit).map(|((_, m), (_, s))| m - s).sum::<Vec3>() / f.samples.len().max(1) as f64;
        let spread = |c: usize| {
            let v: Vec<f64> = at_fit.iter().map(|(_, w)| w[c]).collect();
            v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
        };
        let c = (0..3).max_by(|a, b| spread(*a).total_cmp(&spread(*b))).unwrap_or(0);
        let axis = ["x", "y", "z"][c];
        blocks.push(Block::Chart(Chart {
            name: format!("force_{k}"),
            title: format!("{}: flange force {axis} ({}), bias removed, against the replays", case.name, f.stream),
            x_label: "t [s]".into(),
            y_label: format!("F{axis} [N]"),
            series: vec![
                Series::line("measured", f.samples.iter().map(|(t, m)| (*t, m[c] - bias[c])).collect(), 0),
                Series::line(format!("replayed, start (mu {:.3})", start.mu), at_start.iter().map(|(t, w)| (*t, w[c])).collect(), 1),
                Series::line(format!("replayed, fitted (mu {:.3})", replayed.mu), at_fit.iter().map(|(t, w)| (*t, w[c])).collect(), 2),
            ],
            diagonal: false,
        }));
    }
    let mut provenance = vec![version_row(), file_row(format!("rod file {}", req.rod_path.display()), &req.rod_path)];
    provenance.push(file_row(format!("scene {}", req.scene_path.display()), &req.scene_path));
    provenance.push(file_row(format!("static parameters {}", req.params.path.display()), &req.params.path));
    let page = Page { title: "Friction and damping from recorded motion".into(), blocks, provenance };
    let written = report::page::write_page(&req.out, &page, out)?;
    Ok(written.html)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning names the step a branch time of 20 ms needs (1 ms for
    /// 20 steps per time), and stays quiet at 0.5 ms (40 per time).
    #[test]
    fn a_step_coarse_against_the_shortest_branch_time_is_warned_with_the_step_it_needs() {
        let scene = |step_s: f64| {
            let text = format!("[time]\nstep_s = {step_s}\nduration_s = 1.5\nmode = \"dynamic\"\n[base]\nkind = \"prescribed\"\n");
            sim::Scene::from_toml_str(&text, "release.toml").unwrap()
        };
        let branches = [0.1, 0.02].map(|t| rod::PronyBranch { modulus_ratio: 0.2, time_constant_s: t });
        let warning = coarse_step_warning(&scene(0.002), &branches).expect("2 ms against 20 ms is coarse");
        assert!(warning.contains("shortest branch time (0.0200 s)") && warning.contains("refit with step_s <= 1.00e-3 s"), "{warning}");
        assert_eq!(coarse_step_warning(&scene(0.0005), &branches), None);
        assert_eq!(coarse_step_warning(&scene(0.002), &[]), None, "no branch, nothing to bias");
    }
}
