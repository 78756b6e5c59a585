//! The simulation commands: `simulate`, `verify`, `validate`.

use crate::args::ModeArg;
use clap::{Args, Subcommand};
use lab::observe::ObserveOptions;
use lab::simulate::{BaseSource, SimulateJob};
use lab::validate::{ValidateOptions, ValidateRequest};
use lab::{Error, Progress, Result, SessionDir};
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab simulate --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-stick.toml --out reports/sim/stick\n  rodlab simulate --rod rod.toml --scene scene.toml --trajectory flange.csv --params identified.toml --out sim/\n  rodlab simulate --rod rod.toml --scene scene.toml --session sessions/run1 --out sessions/run1/sim\n\nOutputs in --out: sim.parquet (one row per step: totals, tip, base wrench at the flange, energies, solver figures), sim_nodes.parquet (step x node strains), sim_contacts.parquet (step x contact point), sim_markers.parquet (the tracker's marker table: a simulation reads like a recording), index.html (plots) and summary.json.\nA trajectory CSV has the header t_s,x_m,y_m,z_m,rx,ry,rz: the flange pose in the robot's base frame (rotation vector, radians); the rod's base is flange * the rod file's [base]."
)]
pub struct SimulateArgs {
    /// Rod file (geometry, material unless --params, markers, damping).
    #[arg(long)]
    pub rod: PathBuf,
    /// Scene: time stepping, table, base, contact law (configs/scene/*.toml).
    #[arg(long)]
    pub scene: PathBuf,
    /// identified.toml: E, G, rho and geometry of the rod from `rodlab identify` (FILE:NAME takes a compared variant's values instead of [parameters], e.g. "identified.toml:no nuisance").
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Base motion from a session's robot stream (flange poses on host time), or its motion-capture base (mocap_base).
    #[arg(long, conflicts_with = "trajectory")]
    pub session: Option<PathBuf>,
    /// Base motion from a CSV file t_s,x_m,y_m,z_m,rx,ry,rz (flange pose).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// With --session: the session's loads file: its hung masses ([[tip_mass]]) and the robot holding the rod's tip ([tip_hold]: its recorded poses replace the scene's [tip]).
    #[arg(long, requires = "session")]
    pub loads: Option<PathBuf>,
    /// Simulated time [s] (default: the scene's; with --session, the robot log's span).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn simulate(a: SimulateArgs, progress: &dyn Progress) -> Result<()> {
    let file_rod = rod::Rod::from_file(&a.rod)?;
    let params = lab::params::read_optional(a.params.as_deref(), &file_rod, &a.rod)?;
    let rod = lab::params::rod_with(file_rod, params.as_ref());
    let base = match (&a.session, &a.trajectory) {
        (Some(s), _) => BaseSource::Session(SessionDir::new(s)),
        (None, Some(t)) => BaseSource::Trajectory { samples: lab::tables::read_trajectory(t)?, path: t.clone() },
        (None, None) => BaseSource::Scene,
    };
    let loads = a.loads.as_deref().map(|p| lab::loads::Loads::read(Some(p), rod.cables.len())).transpose()?;
    let job = SimulateJob {
        rod: &rod,
        rod_path: &a.rod,
        scene: lab::params::scene_with(sim::Scene::from_file(&a.scene)?, params.as_ref()),
        scene_path: &a.scene,
        params_path: a.params.as_deref(),
        base,
        rig_frames: None,
        duration_s: a.duration_s,
        out: &a.out,
        damaged: session::Damaged::Skip,
        session_loads: loads.as_ref(),
    };
    let done = lab::simulate::run(&job, progress)?;
    if let Some(from) = &done.frames_from {
        println!("robot base, gravity and table from {from} (the rig's world frame); friction from {}", a.scene.display());
    }
    if let Some(p) = &params {
        let m = rod.cross_section.body;
        println!("parameters from {}: E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3", p.path.display(), m.e_pa, m.g_pa, m.rho_kg_m3);
        if let (Some(d), Some(table)) = (&p.file.dynamic, &done.scene.table) {
            println!("friction mu {:.4} and damping ratio {:.4} from [dynamic] of {} (fitted to recorded motion)", table.mu, d.damping_ratio, p.path.display());
        }
    }
    let s = &done.summary;
    println!(
        "simulated {:.3} s in {} steps, wall {:.2} s (real-time factor {:.1}), {:.2} iterations and {:.3} tangents per step, at most {} sub-steps",
        s.simulated_s, s.steps, s.wall_time_s, s.real_time_factor, s.mean_newton_iterations, s.tangents_per_step, s.max_substeps
    );
    match s.first_touch_s {
        Some(t) => println!(
            "  contact from t = {t:.3} s; tip stuck {} steps, sliding {} steps; largest normal force {:.4} N; tip slid {:.4} m (contact path {:.4} m)",
            s.tip_stick_steps, s.tip_slide_steps, s.max_normal_force_n, s.final_tip_slide_m, s.final_tip_slip_m
        ),
        None => println!("  no contact"),
    }
    let f = s.final_base_force_flange_n;
    println!("  force on the flange at the end [N]: {:.4} {:.4} {:.4}", f[0], f[1], f[2]);
    if let Some(f) = s.final_tip_hold_force_n {
        println!("  force of the tip's hold on the rod at the end [N]: {:.4} {:.4} {:.4}", f[0], f[1], f[2]);
    }
    println!(
        "  validity: surface fibre strains from {:+.2} % to {:+.2} %{}",
        100.0 * s.min_fibre_strain,
        100.0 * s.max_fibre_strain,
        s.min_cable_stretch.map_or(String::new(), |c| format!(", cables: min |Q + K x d + d'| {c:.3}"))
    );
    for w in s.validity_warnings.iter().chain(&s.simulator_warnings) {
        println!("  warning: {w}");
    }
    println!("wrote {}/sim.parquet, sim_nodes.parquet, sim_contacts.parquet, sim_markers.parquet, index.html", a.out.display());
    Ok(())
}

#[derive(Subcommand)]
pub enum VerifyCommand {
    /// DisMech's axial slip onset: kinetic energy after 1 s against (t^2/2m)(F - mu m g)^2 for F in [0, 10.5] N.
    SlipOnset {
        /// Output directory (slip_onset.csv, index.html with the plot).
        #[arg(long)]
        out: PathBuf,
    },
    /// A rod lying on the table pulled at its base (configs/scene/lying-rod-pull.toml): base force against sqrt(2 mu q EA u0) as partial slip spreads.
    PartialSlip {
        /// Output directory (partial_slip.csv, index.html with the plots).
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn verify(c: VerifyCommand, progress: &dyn Progress) -> Result<()> {
    match c {
        VerifyCommand::SlipOnset { out } => {
            let points = lab::simulate::verify_slip_onset(&out, progress)?;
            println!("F [N]    KE at 1 s [J]   (t^2/2m)(F - mu m g)^2 [J]");
            for p in &points {
                println!("{:5.2}  {:14.6e}  {:14.6e}", p.force_n, p.kinetic_energy_j, p.analytic_j);
            }
            println!("wrote {}/slip_onset.csv and {}/index.html", out.display(), out.display());
        }
        VerifyCommand::PartialSlip { out } => {
            let (points, worst) = lab::simulate::verify_partial_slip(&out, progress)?;
            println!("pull [mm]  base force [N]  sqrt(2 mu q EA u0) [N]  slip zone [m]");
            for p in points.iter().step_by(10) {
                println!("{:9.3}  {:14.5}  {:22.5}  {:13.4}", 1e3 * p.pull_m, p.force_n, p.analytic_n, p.slip_zone_m);
            }
            println!("worst error while the slip zone spans three sections or more: {:.2} %", 100.0 * worst);
            println!("wrote {}/partial_slip.csv and {}/index.html", out.display(), out.display());
        }
    }
    Ok(())
}

#[derive(Args, Clone)]
#[command(
    after_help = "Examples:\n  rodlab validate sessions/stick1 --rod configs/rod/contact-paper-steel-core.toml --params fit/identified.toml --scene configs/scene/contact-paper-stick.toml --out reports/validate/stick1\n  rodlab validate sessions/day2-* --rod rod.toml --params fit/identified.toml --scene scene.toml --loads configs/loads.toml --out reports/validate\n\nPer session: <out>/index.html (plots, error table, checks, parameters, provenance), summary.json, sim/ (the simulation's tables) and strain.parquet (the observer's, unless the session has one made with the same rod, parameters and observer). Several sessions: one directory each under --out and a summary page <out>/index.html with a row per session.\nStrain errors are % of the measured range of each component. Every component the experiment strains is checked (its simulated range over 1.5 times the observer's floor and at least 2 % of the largest, curvatures scaled by the rod's length), as its RMS error beyond the observer's floor: the error a model that describes the session exactly would show (the simulated markers with the tracking noise, observed as the session's are). The contact paper reports < 10 % (stick) and < 15 % (slide); a scene without a table is checked against the stick limit.\nThe force sensor's bias is the loads file's tare when given, else the mean difference to the simulation before the simulated first contact (at least the first --rest-s seconds)."
)]
pub struct ValidateArgs {
    /// Session directories (tracked markers, the base's stream: robot or mocap_base, optionally a force sensor).
    #[arg(required = true, num_args = 1..)]
    pub sessions: Vec<PathBuf>,
    /// Rod file of the specimen (geometry, markers; its material unless --params).
    #[arg(long)]
    pub rod: PathBuf,
    /// identified.toml: E, G, rho to validate (default: the rod file's material) (FILE:NAME takes a compared variant's values instead of [parameters], e.g. "identified.toml:no nuisance").
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Scene: table, friction, time step, contact law (the base comes from the session).
    #[arg(long)]
    pub scene: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// loads.toml: the flange force sensor's stream, mount and tare (default: stream ft300 if the session has it).
    #[arg(long)]
    pub loads: Option<PathBuf>,
    /// The observer of the measured strain: weighted (markers as springs by their noise, the default) or hard (constraints).
    #[arg(long, value_enum, default_value = "weighted")]
    pub observer: ModeArg,
    /// Tracking noise per coordinate [m] (observer weights, contact detection).
    #[arg(long, default_value_t = 3e-4)]
    pub sigma_m: f64,
    /// The tracked tip touches when its rim is less than this above the table [m] (default: 3 x --sigma-m).
    #[arg(long)]
    pub contact_gap_m: Option<f64>,
    /// The tracked tip slides when it moves faster than this along the table [m/s].
    #[arg(long, default_value_t = 2e-3)]
    pub slide_speed_m_s: f64,
    /// Tracked speeds are line fits over this window [s].
    #[arg(long, default_value_t = 0.3)]
    pub speed_window_s: f64,
    /// The force sensor's bias is estimated (reading minus simulation) before the simulated first contact, over at least these first seconds.
    #[arg(long, default_value_t = 0.5)]
    pub rest_s: f64,
    /// Limit of the strain RMS error when the tip sticks [% of range].
    #[arg(long, default_value_t = 10.0)]
    pub strain_stick_pct: f64,
    /// Limit of the strain RMS error when the tip slides [% of range].
    #[arg(long, default_value_t = 15.0)]
    pub strain_slide_pct: f64,
    /// Limit of the force RMS error [% of the peak measured force].
    #[arg(long, default_value_t = 5.0)]
    pub force_pct: f64,
    /// Limit of the tip slide RMS error [mm].
    #[arg(long, default_value_t = 2.0)]
    pub slide_mm: f64,
    /// Least agreement of the stick/slide phase timelines [% of frames].
    #[arg(long, default_value_t = 90.0)]
    pub phase_pct: f64,
    /// The force sensor's readings are averaged over this window (centred) before comparing [s]: sensor noise, not the experiment.
    #[arg(long, default_value_t = 0.5)]
    pub force_window_s: f64,
    /// Sessions validated at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Least share of the marker positions tracked in the compared span [% of marker-frames]: below it the check fails (the figures rest on too little).
    #[arg(long, default_value_t = 50.0)]
    pub min_coverage_pct: f64,
    /// Bands of the noise alone: do not replay the identified parameters' principal deviations (the bands' parameter part costs one simulation per fitted material parameter).
    #[arg(long)]
    pub no_parameter_band: bool,
    /// Monte Carlo bands: N draws from the parameters' covariance, each replayed, in place of one replay per principal direction (for replays far from linear in the parameters, e.g. a slide's onset).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub bands: usize,
    /// Exit with status 1 when a check is exceeded, and refuse a session with a damaged chunk (default: the chunk is left out, with a warning naming it and its rows).
    #[arg(long)]
    pub strict: bool,
}

pub fn validate(a: ValidateArgs, progress: &dyn Progress) -> Result<()> {
    let rod = rod::Rod::from_file(&a.rod)?;
    let req = ValidateRequest {
        sessions: a.sessions.iter().map(SessionDir::new).collect(),
        params: lab::params::read_optional(a.params.as_deref(), &rod, &a.rod)?,
        loads: lab::loads::Loads::read(a.loads.as_deref(), rod.cables.len())?,
        rod,
        rod_path: a.rod.clone(),
        scene: sim::Scene::from_file(&a.scene)?,
        scene_path: a.scene.clone(),
        out: a.out.clone(),
        options: ValidateOptions {
            observer: ObserveOptions { mode: a.observer.into(), sigma_m: a.sigma_m, energy_scale_j: None },
            contact_gap_m: a.contact_gap_m,
            slide_speed_m_s: a.slide_speed_m_s,
            speed_window_s: a.speed_window_s,
            rest_s: a.rest_s,
            strain_stick_pct: a.strain_stick_pct,
            strain_slide_pct: a.strain_slide_pct,
            force_pct: a.force_pct,
            slide_mm: a.slide_mm,
            phase_pct: a.phase_pct,
            force_window_s: a.force_window_s,
            jobs: a.jobs as usize,
            refuse_damaged: a.strict,
            min_coverage_pct: a.min_coverage_pct,
            parameter_band: !a.no_parameter_band,
            band_samples: a.bands,
            // The command line replays the band here (Python can hand it to an executor).
            band_executor: Default::default(),
        },
    };
    let v = lab::validate::validate(&req, progress)?;
    for s in &v.sessions {
        println!("{}: {}", s.session, if s.pass { "every check passed" } else { "CHECKS EXCEEDED" });
        for c in &s.checks {
            println!("  {}", c.line());
        }
        for w in &s.warnings {
            println!("  warning: {w}");
        }
        println!("  report: {}", s.report);
    }
    if let Some(page) = &v.batch_page {
        println!("summary of {} sessions: {}", v.sessions.len(), page.display());
    }
    if a.strict && !v.pass() {
        return Err(Error::computation("validation: a check was exceeded (--strict)"));
    }
    Ok(())
}
