//! Identifying E, G, rho (and geometry the fit can learn) from static
//! experiments: a directory of CSV files, or the static holds of recorded
//! sessions. Writes `identified.toml` and an HTML report; model variants
//! are compared by how well they predict experiments left out.

use crate::data;
use crate::error::{Error, Result};
use crate::loads::Loads;
use crate::progress::Progress;
use crate::provenance::{file_row, sha256_file, version_row};
use identify::output::{run_study, GeometryPriors, IdentifiedFile, Study, VariantOut};
use identify::sessions::{experiments_from_session, Hold, HoldStatus, RodMarkers};
use identify::{read_experiments, Experiment, Fit, FitOptions, Problem, Values};
use lie::Vec3;
use report::{AlternativeFit, ExperimentView, IdentificationReport, ParameterRow, ReportTable};
use rod::Rod;
use session::SessionDir;
use std::path::{Path, PathBuf};

/// Where the experiments come from.
// A request is built once per run: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Source {
    /// A directory with `inputs.csv` and `measurements.csv`.
    Experiments(PathBuf),
    /// Recorded sessions: their static holds, loads from their streams.
    Sessions { dirs: Vec<SessionDir>, loads: Loads },
}

/// A geometry parameter's Gaussian prior: not fitted, the rod file's
/// `[identify]` prior, or given (mean, sd).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Prior {
    #[default]
    Off,
    RodFile,
    Given(f64, f64),
}

impl Prior {
    /// A prior given in degrees, in radians (the rod file's priors are
    /// read in radians already).
    fn to_radians(self) -> Prior {
        match self {
            Prior::Given(m, sd) => Prior::Given(m.to_radians(), sd.to_radians()),
            p => p,
        }
    }
}

/// What to identify and how.
#[derive(Clone, Debug)]
pub struct IdentifyRequest {
    pub rod_path: PathBuf,
    /// The rod file's rod: its material is the initial guess.
    pub rod: Rod,
    pub source: Source,
    /// identified.toml, index.html, summary.json, PNG figures.
    pub out: PathBuf,
    /// Estimate a translation of the measurement frame (nuisance).
    pub translation: bool,
    /// Estimate the base's pitch (nuisance).
    pub pitch: bool,
    /// Reference parameters to compare with (e.g. a paper's).
    pub reference: Option<Values>,
    /// Leave-one-out cross-validation (and the jackknife).
    pub loo: bool,
    /// The cables' outward offset \[m\].
    pub cable_offset: Prior,
    /// One offset per cable instead of one for all.
    pub per_cable: bool,
    /// Pool the per-cable offsets and angles (partial pooling): a cable the
    /// data never saw borrows from the others.
    pub pool_cables: bool,
    /// The scale of the section's radii.
    pub radius_scale: Prior,
    /// Each cable's turn about the rod's axis \[deg\].
    pub cable_angle_deg: Prior,
    /// Each experiment's tip-clamp angle about the world's y axis
    /// (`--fit-clamp-angle`), degrees.
    pub clamp_angle_deg: Prior,
    /// The cables' friction coefficient in their channels.
    pub friction: Prior,
    /// Hold E, G, rho at these values and fit the rest.
    pub hold_material: Option<[f64; 3]>,
    /// Tie G to E by this Poisson's ratio (`--tie-g NU`); `None`: the rod
    /// file's `[identify] tie_g_poisson`, if any.
    pub tie_g_poisson: Option<f64>,
    /// Compare model variants by leave-one-out prediction.
    pub compare_variants: bool,
    /// Compare them under the other elastic law too (linear <->
    /// neo-Hookean); the recommendation stays under the rod file's law.
    pub compare_laws: bool,
    /// Refuse a session with a damaged chunk (default: leave the chunk out,
    /// with a warning naming it and its rows).
    pub refuse_damaged: bool,
}

impl IdentifyRequest {
    /// Fit E, G, rho of `rod` from `source` into `out`, nothing else.
    pub fn new(rod_path: &Path, rod: Rod, source: Source, out: &Path) -> IdentifyRequest {
        IdentifyRequest {
            rod_path: rod_path.to_path_buf(),
            rod,
            source,
            out: out.to_path_buf(),
            translation: false,
            pitch: false,
            reference: None,
            loo: true,
            cable_offset: Prior::Off,
            per_cable: false,
            pool_cables: false,
            radius_scale: Prior::Off,
            cable_angle_deg: Prior::Off,
            clamp_angle_deg: Prior::Off,
            friction: Prior::Off,
            hold_material: None,
            tie_g_poisson: None,
            compare_variants: false,
            compare_laws: false,
            refuse_damaged: false,
        }
    }
}

/// Holds found in one session.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionHolds {
    pub session: String,
    pub still_intervals: usize,
    pub used: usize,
}

/// A finished identification.
pub struct Identification {
    /// The rod as fitted (a session's rig sets gravity).
    pub rod: Rod,
    pub source: String,
    pub experiments: Vec<Experiment>,
    pub holds: Vec<Hold>,
    pub sessions: Vec<SessionHolds>,
    pub study: Study,
    pub file: IdentifiedFile,
    /// Compared variants and the index of the recommended one.
    pub variants: Vec<VariantOut>,
    pub recommended: Option<usize>,
    /// With `--reference` and variants: the reference material held, the
    /// geometry fitted.
    pub reference_geometry: Option<Result<Fit>>,
    pub identified_toml: PathBuf,
    pub report: report::Written,
    /// The flange sensor's bias fitted per session.
    pub sensor_biases: Vec<identify::sensor_bias::SensorBias>,
    /// The residuals tested against the declared noise (None: no degrees of freedom).
    pub noise_test: Option<NoiseTest>,
}

/// A prior from the request, the rod file or nothing; `flag` names it.
fn prior(flag: &str, p: Prior, from_file: Option<(f64, f64)>, rod_path: &Path, file_example: &str) -> Result<Option<(f64, f64)>> {
    match p {
        Prior::Off => Ok(None),
        Prior::RodFile => {
            from_file.map(Some).ok_or_else(|| Error::input(format!("--{flag}: give MEAN,SD, or a prior in {} ([identify] {file_example})", rod_path.display())))
        }
        Prior::Given(m, sd) if m.is_finite() && sd.is_finite() && sd > 0.0 => Ok(Some((m, sd))),
        Prior::Given(..) => Err(Error::input(format!("--{flag}: expected MEAN,SD (a finite mean and a positive standard deviation)"))),
    }
}

/// What the sessions' static holds give the fit.
struct FromSessions {
    experiments: Vec<Experiment>,
    holds: Vec<Hold>,
    per_session: Vec<SessionHolds>,
    provenance: Vec<(String, String)>,
    /// Streams of the sessions nothing reads, each named with how to use it.
    ignored: Vec<String>,
}

/// The streams of `dir` no part of the identification reads (the robot or
/// a motion-capture base, the cameras' frame tables and what the loads ask
/// for are read).
fn ignored_streams(dir: &SessionDir, requests: &[crate::loads::StreamRequest], tip_stream: Option<&str>) -> Vec<String> {
    dir.stream_names()
        .into_iter()
        .filter(|name| name != "robot" && name != crate::c3d::BASE_STREAM && !requests.iter().any(|r| &r.stream == name))
        .filter(|name| tip_stream != Some(name.as_str()))
        .filter(|name| dir.find_video(name).is_none())
        .map(|name| {
            let how = if name == crate::c3d::TIP_STREAM {
                format!("[tip_hold] stream = \"{name}\" (the rod file's [tip] condition clamped or pinned)")
            } else if name.starts_with("ft") || name.contains("wrench") || name.contains("force_torque") {
                format!("[flange_sensor] stream = \"{name}\"")
            } else {
                format!("[[cable]] stream = \"{name}\" (or [tip_force])")
            };
            format!("{}: stream '{name}' is not used by the identification: to use it, give a loads file (--loads) with {how}", dir.path().display())
        })
        .collect()
}

/// Experiments from the sessions' static holds; the rod takes the rig's gravity.
fn from_sessions(dirs: &[SessionDir], loads: &Loads, rod: &mut Rod, rod_path: &Path, damaged: session::Damaged) -> Result<FromSessions> {
    if rod.markers.is_empty() {
        return Err(Error::input(format!("{}: no [[marker]]: sessions' markers cannot be matched to the rod", rod_path.display())));
    }
    // One session given twice would count its data twice.
    for (i, d) in dirs.iter().enumerate() {
        let same = |other: &SessionDir| std::fs::canonicalize(other.path()).ok().zip(std::fs::canonicalize(d.path()).ok()).is_some_and(|(a, b)| a == b);
        if let Some(first) = dirs[..i].iter().find(|o| same(o)) {
            return Err(Error::input(format!("--sessions: {} is {} again: each session counts once", d.path().display(), first.path().display())));
        }
    }
    // A mass for a session that is not in the fit is a typo, not nothing.
    let names: Vec<String> = dirs.iter().map(SessionDir::name).collect();
    if let Some((i, s)) = loads.file.tip_masses.iter().enumerate().find_map(|(i, m)| m.session.as_ref().filter(|s| !names.contains(s)).map(|s| (i, s))) {
        return Err(Error::input(format!("{}: tip_mass[{i}].session: no session named \"{s}\" among {}", loads.name(), names.join(", "))));
    }
    let requests = loads.requests();
    let (mut experiments, mut holds, mut per, mut provenance, mut ignored) = (vec![], vec![], vec![], vec![], vec![]);
    let mut gravity: Option<(Vec3, &SessionDir)> = None;
    for dir in dirs {
        let mut s = data::load(dir, rod.markers.len(), &requests, damaged)?;
        if let Some(tip) = &loads.file.tip_hold {
            s.tip_clamp = data::tip_clamp_log(dir, tip, &loads.name(), damaged, &mut s.warnings)?;
        }
        ignored.extend(s.warnings.iter().cloned());
        if let Some(release_s) = data::from_release(dir, &mut s) {
            ignored.push(format!("{}: held until its release at t = {release_s:.3} s (session.toml): holds are searched for after it", dir.path().display()));
        }
        match gravity {
            Some((g, first)) if (g - s.gravity_m_s2).norm() > 1e-9 => {
                return Err(Error::input(format!(
                    "{}: gravity {:?} differs from {}'s {:?}: sessions of one fit share a rig",
                    dir.path().display(),
                    s.gravity_m_s2,
                    first.path().display(),
                    g
                )));
            }
            Some(_) => {}
            None => gravity = Some((s.gravity_m_s2, dir)),
        }
        ignored.extend(ignored_streams(dir, &requests, loads.file.tip_hold.as_ref().map(|t| t.stream_name())));
        // Markers measured on the body (a reference window) where the session has them.
        let meta = dir.meta().ok().flatten();
        let (session_rod, measured) = data::rod_for_session(rod, meta.as_ref(), dir);
        ignored.extend(measured);
        let place_sigma_m = data::marker_place_sigmas(meta.as_ref(), rod.markers.len());
        let session_markers = RodMarkers { markers: &session_rod.markers, mount: session_rod.base, place_sigma_m: &place_sigma_m };
        let (mut e, h) = experiments_from_session(&s, &session_markers, &loads.file).map_err(|e| Error::input(format!("{}: {e}", dir.path().display())))?;
        if rod.tip_condition == rod::TipCondition::Pinned {
            // A pin holds the position only: the robot's turn says nothing.
            e.iter_mut().for_each(|e| e.tip_rotation_rad = None);
        }
        per.push(SessionHolds { session: dir.path().display().to_string(), still_intervals: h.len(), used: e.len() });
        experiments.extend(e);
        holds.extend(h);
        provenance.push(file_row(format!("{}/session.toml", dir.path().display()), &dir.meta_path()));
        provenance.push(file_row(format!("{}/markers.parquet", dir.path().display()), &dir.markers()));
    }
    if let Some(p) = &loads.path {
        provenance.push(file_row(p.display().to_string(), p));
    }
    if let Some((g, _)) = gravity {
        rod.gravity_m_s2 = g;
    }
    if experiments.is_empty() {
        let why: Vec<String> = holds
            .iter()
            .filter_map(|h| if let HoldStatus::Rejected(w) = &h.status { Some(format!("{} at {:.1} s: {w}", h.session, h.start_s)) } else { None })
            .collect();
        return Err(Error::input(format!(
            "no usable static hold in the sessions ({}): {}",
            dirs.iter().map(|d| d.path().display().to_string()).collect::<Vec<_>>().join(", "),
            if why.is_empty() {
                "the robot and the markers are never still together for long enough (see [holds] in loads.toml)".to_string()
            } else {
                why.join("; ")
            }
        )));
    }
    Ok(FromSessions { experiments, holds, per_session: per, provenance, ignored })
}

/// One line per rejected still interval: where it was and why it was not
/// used (what the report's holds table says, for the terminal).
pub fn rejected_holds(holds: &[Hold]) -> Vec<String> {
    holds
        .iter()
        .filter_map(|h| match &h.status {
            HoldStatus::Rejected(why) => Some(format!("{}: still interval {:.1}-{:.1} s not used: {why}", h.session, h.start_s, h.end_s)),
            HoldStatus::Used(_) => None,
        })
        .collect()
}

/// Identifies; writes `identified.toml` and the report into `req.out`.
pub fn identify(req: &IdentifyRequest, progress: &dyn Progress) -> Result<Identification> {
    let mut rod = req.rod.clone();
    // Without a loads file, a session's FT 300 weighs the rod (as in validate).
    let session_loads = match &req.source {
        Source::Sessions { dirs, loads } => Some(loads.with_session_sensor(dirs)),
        Source::Experiments(_) => None,
    };
    let mut ignored_streams = vec![];
    let (mut experiments, holds, sessions, mut input_provenance, source) = match &req.source {
        Source::Experiments(dir) => {
            let experiments = read_experiments(dir, rod.cables.len())?;
            identify::data::check_against_rod(&experiments, rod.length_m, &dir.join("measurements.csv"))?;
            identify::data::check_tip_holds(&experiments, rod.tip_condition, &dir.join("inputs.csv"))?;
            identify::data::check_critical(&experiments, &rod, &dir.join("critical.csv"))?;
            let mut prov =
                vec![("inputs.csv".into(), sha256_file(&dir.join("inputs.csv"))), ("measurements.csv".into(), sha256_file(&dir.join("measurements.csv")))];
            if experiments.iter().any(|e| !e.critical.is_empty()) {
                prov.push(("critical.csv".into(), sha256_file(&dir.join("critical.csv"))));
            }
            (experiments, vec![], vec![], prov, dir.display().to_string())
        }
        Source::Sessions { .. } if (rod.tip_condition != rod::TipCondition::Free) != session_loads.as_ref().is_some_and(|l| l.file.tip_hold.is_some()) => {
            let loads_name = session_loads.as_ref().map_or("the loads file".to_string(), |l| l.name());
            return Err(Error::input(if rod.tip_condition == rod::TipCondition::Free {
                format!("{loads_name}: [tip_hold]: the rod file's tip is free ({}: [tip] condition)", req.rod_path.display())
            } else {
                format!(
                    "{}: the tip is {} ([tip] condition): give what holds it in the loads file (--loads): [tip_hold] robot = \"<its stream>\" with its robot_base and mount, or stream = \"mocap_tip\" (a motion-capture clamp)",
                    req.rod_path.display(),
                    rod.tip_condition.key()
                )
            }));
        }
        Source::Sessions { dirs, .. } => {
            let loads = session_loads.as_ref().expect("sessions have their loads");
            let s = from_sessions(dirs, loads, &mut rod, &req.rod_path, if req.refuse_damaged { session::Damaged::Refuse } else { session::Damaged::Skip })?;
            ignored_streams = s.ignored.clone();
            (s.experiments, s.holds, s.per_session, s.provenance, dirs.iter().map(|d| d.path().display().to_string()).collect::<Vec<_>>().join(", "))
        }
    };
    if let Some(m) = req.hold_material {
        if !m.iter().all(|v| v.is_finite() && *v > 0.0) {
            return Err(Error::input("--hold-material: expected three positive numbers E,G,RHO"));
        }
    }
    let tie_g_poisson = match req.tie_g_poisson {
        Some(nu) => Some(rod::config::poisson_for_tie(nu).map_err(|m| Error::input(format!("--tie-g: {m}")))?),
        None => rod.identify_priors.tie_g_poisson,
    };
    std::fs::create_dir_all(&req.out).map_err(|e| Error::io(format!("{}: cannot create: {e}", req.out.display())))?;
    let file_priors = rod.identify_priors;
    let cable_offset_prior =
        prior("fit-cable-offset", req.cable_offset, file_priors.cable_offset_m, &req.rod_path, "cable_offset_m = { mean = 0.0, sd = 0.005 }")?;
    if cable_offset_prior.is_some() && rod.cables.is_empty() {
        return Err(Error::input(format!("--fit-cable-offset: {} has no [[cable]]", req.rod_path.display())));
    }
    let radius_scale_prior = prior("fit-radius-scale", req.radius_scale, file_priors.radius_scale, &req.rod_path, "radius_scale = { mean = 1.0, sd = 0.1 }")?;
    if radius_scale_prior.is_some_and(|(m, _)| m <= 0.0) {
        return Err(Error::input("--fit-radius-scale: the mean must be positive"));
    }
    // The request is in degrees.
    let cable_angle_each_prior =
        prior("fit-cable-angle", req.cable_angle_deg.to_radians(), file_priors.cable_angle_rad, &req.rod_path, "cable_angle_deg = { mean = 0.0, sd = 5.0 }")?;
    if cable_angle_each_prior.is_some() && rod.cables.is_empty() {
        return Err(Error::input(format!("--fit-cable-angle: {} has no [[cable]]", req.rod_path.display())));
    }
    let clamp_angle_prior =
        prior("fit-clamp-angle", req.clamp_angle_deg.to_radians(), file_priors.clamp_angle_rad, &req.rod_path, "clamp_angle_deg = { mean = 0.0, sd = 5.0 }")?;
    if clamp_angle_prior.is_some() && rod.tip_condition != rod::TipCondition::Clamped {
        return Err(Error::input(format!("--fit-clamp-angle: {} has no clamped tip ([tip] condition = \"clamped\")", req.rod_path.display())));
    }
    let friction_prior = prior("fit-friction", req.friction, file_priors.friction_mu, &req.rod_path, "friction_mu = { mean = 0.1, sd = 0.1 }")?;
    if friction_prior.is_some() && rod.cables.is_empty() {
        return Err(Error::input(format!("--fit-friction: {} has no [[cable]]", req.rod_path.display())));
    }
    if friction_prior.is_some_and(|(m, _)| m < 0.0) {
        return Err(Error::input("--fit-friction: the mean must be >= 0"));
    }
    let (cable_offset_prior, cable_offset_each_prior) = if req.per_cable { (None, cable_offset_prior) } else { (cable_offset_prior, None) };
    let opts = FitOptions {
        translation: req.translation,
        pitch: req.pitch,
        cable_offset_prior,
        radius_scale_prior,
        cable_offset_each_prior,
        cable_angle_each_prior,
        clamp_angle_prior,
        friction_prior,
        hold_material: req.hold_material,
        tie_g_poisson,
        pool_cables: req.pool_cables,
        ..FitOptions::default()
    };
    let priors = GeometryPriors {
        cable_offset_m: Some(cable_offset_prior.or(cable_offset_each_prior).or(file_priors.cable_offset_m).unwrap_or((0.0, 0.005))),
        radius_scale: radius_scale_prior.or(file_priors.radius_scale),
        cable_angle_rad: cable_angle_each_prior.or(file_priors.cable_angle_rad),
        // A weak prior: Coulomb coefficients of rubber on plastic guides
        // lie between about 0.1 and 0.6.
        friction_mu: Some(friction_prior.or(file_priors.friction_mu).unwrap_or((0.2, 0.2))),
    };
    let task = progress.task("identify", None);
    // The flange sensor's bias: fitted per session, or checked for.
    let mut sensor_biases = vec![];
    let mut bias_warnings = ignored_streams;
    let mut opts = opts;
    if let Some(loads) = &session_loads {
        if let Some(fs) = loads.file.flange_sensor.as_ref().filter(|s| s.fit) {
            task.message("flange sensor bias");
            let (b, w) = sensor_bias(&rod, &mut experiments, fs, loads)?;
            sensor_biases = b;
            bias_warnings.extend(w);
            opts.fit_sensor_bias = !fs.bias_known();
        }
    }
    // A clamped loop's winding: the equilibrium its measured points show,
    // at the start values (the held material, else the rod file's).
    task.message("clamped loops: which equilibrium");
    let [e_pa, g_pa, rho_kg_m3] = req.hold_material.unwrap_or([rod.cross_section.body.e_pa, rod.cross_section.body.g_pa, rod.cross_section.body.rho_kg_m3]);
    bias_warnings.extend(identify::windings::choose_windings(&rod, &mut experiments, &identify::Values::material(e_pa, g_pa, rho_kg_m3)));
    // The fit with the frame's nuisance (or without it) only where variants
    // are asked for: unasked, it reported a 22 cm translation and a -35 deg
    // pitch beside every fit.
    let mut steps = crate::progress::StepTasks::new(progress);
    let study = run_study(&rod, &experiments, &opts, req.compare_variants, req.loo, req.reference.clone(), |s| steps.show(task.as_ref(), s))?;
    if opts.fit_sensor_bias {
        sensor_biases = final_biases(&rod, &sensor_biases, &study.fit, &mut experiments);
    }
    let (variants, recommended) = if req.compare_variants {
        identify::output::compare_variants(&rod, &experiments, &opts, priors, req.compare_laws, |s| steps.show(task.as_ref(), s))
    } else {
        (vec![], None)
    };
    let linear_law_exceeded = rod.elastic_law == rod::ElasticLaw::Linear && study.fit.largest_fibre_strain > rod::ElasticLaw::Linear.strain_limit();
    if req.compare_variants && !req.compare_laws && linear_law_exceeded {
        bias_warnings.push("fibres are strained beyond the linear elastic law's limit: --compare-laws also compares the variants under the neo-Hookean law ([material] law in the rod file)".into());
    }
    let reference_geometry = match (&req.reference, req.compare_variants) {
        (Some(v), true) => {
            task.message("reference material held, geometry fitted");
            Some(reference_geometry_fit(&rod, &experiments, v, priors))
        }
        _ => None,
    };
    drop(steps);
    let mut file = IdentifiedFile::from_study(&study, &experiments, &req.rod_path.display().to_string(), &source);
    file.set_variants(variants.clone(), recommended);
    if let Some(line) = creep_note(&rod, &experiments, &mut file) {
        bias_warnings.push(line);
    }
    file.warnings.extend(bias_warnings.iter().cloned());
    file.sensor_bias = sensor_biases.iter().map(bias_out).collect();
    file.rod_geometry = Some(identify::output::rod_geometry(&req.rod));
    // A fit outside physical ranges is a failure, written as one (the
    // file and the report say so; --params refuses the file).
    let mut disagree = outside_ranges(&study.fit, &req.rod.identify_priors.ranges, &req.rod_path);
    let noise = noise_test(&experiments, &study.fit, req.rod.identify_priors.model_error_m);
    if let Some(n) = &noise {
        (file.fit.chi_square, file.fit.chi_square_p, file.fit.model_error_m) = (n.chi_square, n.p, n.model_error_m);
        disagree.extend(n.failure(&req.rod_path));
    }
    if !disagree.is_empty() {
        disagree.extend(axis_warnings(&req.source));
    }
    // A fit beyond its noise: which term the same data fit with.
    let suggestion = match &noise {
        Some(n) if !n.passed() => {
            task.message("which term would fit");
            crate::failed_fit::suggest(&rod, &experiments, &opts, &study.fit, n.chi_square, req.rod.identify_priors.model_error_m)
        }
        _ => None,
    };
    if let Some(s) = &suggestion {
        disagree.push(s.text());
    }
    let failure =
        (!disagree.is_empty()).then(|| format!("{}; the data that disagree most: {}", disagree.join("; "), worst_experiments(&experiments, &study.fit)));
    file.failed = failure.clone();
    let identified_toml = req.out.join("identified.toml");
    file.write(&identified_toml).map_err(|e| Error::io(format!("{}: cannot write: {e}", identified_toml.display())))?;
    input_provenance.insert(0, file_row(format!("rod file {}", req.rod_path.display()), &req.rod_path));
    let mut rep = report(&rod, &experiments, &holds, &study, &variants, recommended, req.reference.as_ref(), &source, input_provenance);
    rep.warnings.extend(bias_warnings);
    if let Some(law) = identify::output::law_comparison(&variants) {
        rep.facts.push(("elastic laws compared".into(), law));
    }
    if let Some(n) = &noise {
        rep.facts.push(("chi-square test (residuals against the declared noise)".into(), n.summary()));
    }
    if !sensor_biases.is_empty() {
        rep.tables.push(bias_table(&sensor_biases));
    }
    if !study.fit.critical.is_empty() {
        rep.tables.push(critical_table(&study.fit.critical));
    }
    if let Some(f) = &failure {
        rep.title = format!("FAILED {}", rep.title);
        rep.warnings.insert(0, format!("identification failed: {f}"));
    }
    let written = report::write_identification_report(&req.out, &rep)?;
    drop(task);
    if let Some(f) = failure {
        let result = crate::failed_fit::FailedFit::of(&study.fit, &experiments, noise.as_ref(), suggestion.clone(), &f);
        // A clamped tip's angle is the first suspect of a traced loop.
        let clamp = if rod.tip_condition == rod::TipCondition::Clamped && clamp_angle_prior.is_none() && suggestion.is_none() {
            ", a tip clamp whose angle is known only to within a tracing (--fit-clamp-angle=0,5 fits each experiment's)"
        } else {
            ""
        };
        return Err(Error::computation(format!(
            "identification failed: {f}. {} and {} are written marked as failed. Usual causes: a force sensor not zeroed (its bias read as weight), holds whose markers are mislabelled, a rod file whose section or mount is not the specimen's{clamp}",
            identified_toml.display(),
            written.html.display()
        ))
        .with_result(serde_json::to_value(&result).map_err(|e| Error::computation(format!("internal: {e}")))?));
    }
    Ok(Identification {
        rod,
        source,
        experiments,
        holds,
        sessions,
        study,
        file,
        variants,
        recommended,
        reference_geometry,
        identified_toml,
        report: written,
        sensor_biases,
        noise_test: noise,
    })
}

/// Which geometry lets fixed (reference) material parameters describe the
/// experiments best: E, G, rho held, the frame, the cables' offset and the
/// radius scale fitted (loose priors unless given).
fn reference_geometry_fit(rod: &Rod, experiments: &[Experiment], v: &Values, priors: GeometryPriors) -> Result<Fit> {
    let opts = FitOptions {
        translation: true,
        pitch: true,
        cable_offset_prior: (!rod.cables.is_empty()).then(|| priors.cable_offset_m.unwrap_or((0.0, 0.005))),
        radius_scale_prior: Some(priors.radius_scale.unwrap_or((1.0, 0.5))),
        hold_material: Some([v.e_pa, v.g_pa, v.rho_kg_m3]),
        ..FitOptions::default()
    };
    Ok(identify::fit::fit(rod, experiments, &opts, |_| {})?)
}

/// A variant's fitted cable offset in mm (each cable's, `/`-separated,
/// when fitted per cable).
pub fn offsets_mm(v: &VariantOut) -> Option<String> {
    if !v.cable_offsets_m.is_empty() {
        Some(v.cable_offsets_m.iter().map(|d| format!("{:.2}", 1e3 * d)).collect::<Vec<_>>().join("/"))
    } else {
        v.parameters.iter().any(|p| p == "cable_offset_m").then(|| format!("{:.2}", 1e3 * v.cable_offset_m))
    }
}

/// A variant's fitted cable turns in degrees (`/`-separated), when it has them.
pub fn angles_deg(v: &VariantOut) -> Option<String> {
    (!v.cable_angles_rad.is_empty()).then(|| v.cable_angles_rad.iter().map(|a| format!("{:.2}", a.to_degrees())).collect::<Vec<_>>().join("/"))
}

/// A variant's fitted radius scale, when it has one.
pub fn scale_text(v: &VariantOut) -> Option<String> {
    v.parameters.iter().any(|p| p == "radius_scale").then(|| format!("{:.4}", v.radius_scale))
}

fn holds_table(holds: &[Hold]) -> ReportTable {
    ReportTable {
        title: "Static holds found in the sessions".into(),
        header: ["session", "from [s]", "to [s]", "frames", "used as / rejected because"].map(String::from).to_vec(),
        rows: holds
            .iter()
            .map(|h| {
                vec![
                    h.session.clone(),
                    format!("{:.2}", h.start_s),
                    format!("{:.2}", h.end_s),
                    h.frames.to_string(),
                    match &h.status {
                        HoldStatus::Used(id) => format!("used: {id}"),
                        HoldStatus::Rejected(w) => format!("rejected: {w}"),
                    },
                ]
            })
            .collect(),
    }
}

/// Model variants side by side, judged by leave-one-out prediction.
fn variants_table(variants: &[VariantOut], best: Option<usize>) -> ReportTable {
    let (lowest_cv, lowest_other) = (identify::output::lowest_cv(variants, false), identify::output::lowest_cv(variants, true));
    ReportTable {
        title: "Model variants by prediction (cross-validation, +- its standard error); recommended: the simplest within one standard error of the lowest CV error (the one-standard-error rule: with few experiments the CV figure is itself noisy). Model error: what the prediction bands add for what the model misses".into(),
        header: ["variant", "parameters", "E [Pa]", "cable offset [mm]", "cable angle [deg]", "radius scale", "fit RMS [mm]", "CV RMS [mm]", "worst CV [mm]", "model error [mm]", ""]
            .map(String::from)
            .to_vec(),
        rows: variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                vec![
                    v.name.clone(),
                    v.parameters.len().to_string(),
                    format!("{:.4e}", v.e_pa),
                    offsets_mm(v).unwrap_or_else(|| "-".into()),
                    angles_deg(v).unwrap_or_else(|| "-".into()),
                    scale_text(v).unwrap_or_else(|| "-".into()),
                    format!("{:.2}", v.rms_error_mm),
                    format!("{:.2} +- {:.2}", v.loo_rms_mm, v.loo_rms_se_mm),
                    format!("{:.2}", v.loo_worst_mm),
                    format!("{:.2}", 1e3 * v.model_error_m),
                    match (best == Some(i), lowest_cv == Some(i), lowest_other == Some(i)) {
                        (true, true, _) => "recommended, lowest CV".into(),
                        (true, false, _) => "recommended".into(),
                        (false, true, _) => "lowest CV".into(),
                        (false, false, true) => "lowest CV under the other law".into(),
                        _ => String::new(),
                    },
                ]
            })
            .collect(),
    }
}

/// Measured against predicted base wrenches (flange sensor) at the fit.
fn wrench_table(rod: &Rod, experiments: &[Experiment], f: &Fit) -> Option<ReportTable> {
    let rows: Vec<Vec<String>> = experiments
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let w = e.base_wrench.as_ref()?;
            let problem = Problem::new(rod, std::slice::from_ref(e), f.layout, &f.values);
            let p = problem.predicted_wrench(0, &f.equilibria[i], &f.values)?;
            let v3 = |x: &lie::Vec6, o: usize| format!("{:.4} {:.4} {:.4}", x[o], x[o + 1], x[o + 2]);
            Some(vec![
                e.id.clone(),
                v3(&w.wrench, 3),
                v3(&p, 3),
                format!("{:.2e}", (lie::linear(&p) - lie::linear(&w.wrench)).norm()),
                v3(&w.wrench, 0),
                v3(&p, 0),
                format!("{:.2e}", (lie::angular(&p) - lie::angular(&w.wrench)).norm()),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| ReportTable {
        title: "Base wrench: flange sensor (bias removed) against the model".into(),
        header: ["experiment", "measured F [N]", "model F [N]", "|dF| [N]", "measured M [N m]", "model M [N m]", "|dM| [N m]"].map(String::from).to_vec(),
        rows,
    })
}

fn p3(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// The rows of the parameters table: E, G, rho and the geometry fitted.
fn parameter_rows(f: &Fit, paper: Option<&Values>) -> Vec<ParameterRow> {
    let pp = |v: fn(&Values) -> f64| paper.map_or(f64::NAN, v);
    let row = |name: &str, unit: &str, e: &identify::fit::Estimate, paper: f64| ParameterRow {
        name: name.into(),
        unit: unit.into(),
        value: e.value,
        ci95_low: e.ci95_low,
        ci95_high: e.ci95_high,
        reference: paper,
    };
    vec![row("E", "Pa", &f.e_pa, pp(|v| v.e_pa)), row("G", "Pa", &f.g_pa, pp(|v| v.g_pa)), row("rho", "kg/m^3", &f.rho_kg_m3, pp(|v| v.rho_kg_m3))]
        .into_iter()
        .chain(f.geometry_estimates().into_iter().map(|(g, e)| {
            let (name, unit) = g.label();
            ParameterRow { name, unit: unit.into(), value: e.value, ci95_low: e.ci95_low, ci95_high: e.ci95_high, reference: f64::NAN }
        }))
        .collect()
}

/// What the rod file says the rod is, in one line (the report's provenance).
fn rod_summary(rod: &Rod) -> String {
    let m = rod.cross_section.body;
    let g = rod.gravity_m_s2;
    format!(
        "length {} m, {} sections of {} sub-segments, {} cables, {} markers; body E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3 ({} law); gravity [{}, {}, {}] m/s^2",
        rod.length_m,
        rod.section_lengths_m.len(),
        rod.subsegments_per_section,
        rod.cables.len(),
        rod.markers.len(),
        m.e_pa,
        m.g_pa,
        m.rho_kg_m3,
        rod.elastic_law.name(),
        g.x,
        g.y,
        g.z
    )
}

/// With reference values: the first thing to read. What they give on this
/// rod file's model against what the fit gives, and what that means: the
/// identified values are this model's, and absorb whatever of the rod
/// file (its geometry above all) is assumed rather than measured.
fn reference_lead(f: &Fit, reference: Option<&identify::output::Evaluated>) -> Vec<String> {
    let Some(r) = reference else { return vec![] };
    let with = if r.rms_error_mm.is_finite() { format!("{:.1} mm RMS", r.rms_error_mm) } else { "no fit".into() };
    let failures = if r.failures > 0 { format!(", and no equilibrium at all for {} experiment(s)", r.failures) } else { String::new() };
    vec![format!(
        "Read first: on this rod file's model the reference values miss the measured points by {with}{failures}; the identified values by {:.1} mm. Identified values are this model's: where the rod file's geometry (section, hole, cable positions) is assumed rather than measured, they absorb what the assumption misses, and can lie far from values measured on the real specimen. Compare the variants, and judge the fit by how it predicts experiments it was not fitted on (the leave-one-out errors).",
        f.rms_error_mm
    )]
}

#[allow(clippy::too_many_arguments)]
fn report(
    rod: &Rod,
    experiments: &[Experiment],
    holds: &[Hold],
    study: &Study,
    variants: &[VariantOut],
    best: Option<usize>,
    reference: Option<&Values>,
    source: &str,
    input_provenance: Vec<(String, String)>,
) -> IdentificationReport {
    let f = &study.fit;
    let views = experiments
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let n = e.measurements.len();
            ExperimentView {
                id: e.id.clone(),
                inputs: format!(
                    "T = [{}] N{}{}{}",
                    e.tensions_n.iter().map(|t| format!("{t:.4}")).collect::<Vec<_>>().join(", "),
                    if e.tip_force_n == Vec3::zeros() { String::new() } else { format!(", tip force {:.4?} N", p3(&e.tip_force_n)) },
                    e.base_pose.map(|b| format!(", base at {:.4?} m", p3(&b.pos))).unwrap_or_default(),
                    if e.base_wrench.is_some() { ", base wrench measured" } else { "" }
                ),
                // A ray is drawn at its point nearest the prediction.
                measured_m: e.measurements.iter().zip(&f.predicted[i]).map(|(m, p)| p3(&(p - m.miss(p)))).collect(),
                predicted_m: f.predicted[i].iter().map(p3).collect(),
                predicted_reference_m: study.reference.as_ref().map(|r| r.predicted[i].iter().map(p3).collect()).unwrap_or_default(),
                shape_m: study.shapes[i].iter().map(p3).collect(),
                shape_reference_m: study.reference.as_ref().map(|r| r.shapes[i].iter().map(p3).collect()).unwrap_or_default(),
                errors_mm: f.errors_mm[i].clone(),
                errors_reference_mm: study.reference.as_ref().map(|r| r.errors_mm[i].clone()).unwrap_or_else(|| vec![f64::NAN; n]),
                loo_errors_mm: study.loo.get(i).map(|l| l.errors_mm.clone()).unwrap_or_else(|| vec![f64::NAN; n]),
                base_m: p3(&e.base_pose.unwrap_or(rod.base).pos),
                base_rotation: {
                    let r = e.base_pose.unwrap_or(rod.base).rot;
                    std::array::from_fn(|i| std::array::from_fn(|j| r[(i, j)]))
                },
            }
        })
        .collect();
    let alternatives = study
        .with_nuisance
        .iter()
        .map(|alt| AlternativeFit {
            label: format!("Fit {} frame translation and base pitch", if alt.layout.translation || alt.layout.pitch { "with" } else { "without" }),
            parameters: parameter_rows(alt, None),
            extra: vec![
                ("frame translation [mm]".into(), format!("{:.2?}", p3(&(alt.values.translation_m * 1e3)))),
                ("base pitch [deg]".into(), format!("{:.3}", alt.values.pitch_rad.to_degrees())),
            ],
            rms_error_mm: alt.rms_error_mm,
        })
        .collect();
    let mut provenance = vec![version_row()];
    provenance.extend(input_provenance);
    provenance.push(("rod, as fitted".into(), rod_summary(rod)));
    IdentificationReport {
        title: format!("rodlab identification: {source}"),
        lead: reference_lead(f, study.reference.as_ref()),
        reference_label: reference.map(|_| "reference values".to_string()),
        parameters: parameter_rows(f, reference),
        correlation_names: f.parameter_names.iter().map(|s| s.to_string()).collect(),
        correlation: f.correlation.row_iter().map(|r| r.iter().cloned().collect()).collect(),
        experiments: views,
        history: f.history.clone(),
        rms_error_mm: f.rms_error_mm,
        rms_error_reference_mm: study.reference.as_ref().map_or(f64::NAN, |r| r.rms_error_mm),
        warnings: f
            .warnings
            .iter()
            .cloned()
            .chain(study.reference.as_ref().filter(|r| r.failures > 0).map(|r| {
                format!(
                    "with the reference parameters the static model finds no equilibrium for {} experiment(s): no shape or error is shown for them",
                    r.failures
                )
            }))
            .collect(),
        facts: vec![
            ("solver".into(), "Levenberg-Marquardt (argmin) on log-parameters, exact sensitivities".into()),
            ("body's elastic law (rod file)".into(), rod.elastic_law.name()),
            ("starts".into(), format!("{} ({} converged)", f.starts.len(), f.starts.iter().filter(|s| s.converged).count())),
            ("iterations (all starts)".into(), f.iterations.to_string()),
            ("static solves".into(), f.static_solves.to_string()),
            ("wall time".into(), format!("{:.3} s", f.wall_time_s)),
            ("condition number".into(), format!("{:.3e}", f.condition_number)),
            ("residual scale (units of sigma)".into(), format!("{:.3}", f.residual_scale)),
        ],
        alternatives,
        tables: (!holds.is_empty())
            .then(|| holds_table(holds))
            .into_iter()
            .chain(wrench_table(rod, experiments, f))
            .chain((!variants.is_empty()).then(|| variants_table(variants, best)))
            .collect(),
        provenance,
    }
}

/// Fitted material values at or beyond their physical range.
fn outside_ranges(f: &Fit, r: &rod::MaterialRanges, rod_path: &Path) -> Vec<String> {
    let mut out = vec![];
    let values =
        [("e_pa", f.values.e_pa, r.e_pa, true), ("g_pa", f.values.g_pa, r.g_pa, true), ("rho_kg_m3", f.values.rho_kg_m3, r.rho_kg_m3, f.layout.fit_rho)];
    for (name, value, (lo, hi), fitted) in values {
        if fitted && !(value > lo && value < hi) {
            out.push(format!("{name} = {value:.4e} is outside its physical range [{lo:.1e}, {hi:.1e}] ({} [identify] {name}_range)", rod_path.display()));
        }
    }
    out
}

/// Level of the chi-square test of the weighted residuals: a fit whose
/// residuals noise of the declared size leaves with a smaller chance has
/// failed (the data disagree with the model beyond their noise).
pub const CHI_SQUARE_LEVEL: f64 = 1e-3;

/// The chi-square test of a fit's residuals against the declared noise.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseTest {
    /// Weighted residuals' sum of squares, the markers' sigma with
    /// `model_error_m` in quadrature.
    pub chi_square: f64,
    pub dof: usize,
    /// Chance that noise of the declared size leaves residuals this large.
    pub p: f64,
    pub model_error_m: f64,
    /// The markers' part of `chi_square` (the rest: force sensor, priors).
    pub markers: f64,
    pub rms_error_mm: f64,
    pub measurement_sigma_m: f64,
}

impl NoiseTest {
    pub fn passed(&self) -> bool {
        self.p >= CHI_SQUARE_LEVEL
    }

    /// "21.1 on 15 degrees of freedom, p = 0.13 (model error 4 mm allowed): passed".
    pub fn summary(&self) -> String {
        let allowed = if self.model_error_m > 0.0 { format!(" (model error {:.3} mm allowed)", 1e3 * self.model_error_m) } else { String::new() };
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        format!("{:.1} on {} degrees of freedom, p = {:.2e}{allowed}: {verdict} at {CHI_SQUARE_LEVEL:.0e}", self.chi_square, self.dof, self.p)
    }

    /// Why the fit failed the test, naming the data that carry the misfit.
    fn failure(&self, rod_path: &Path) -> Option<String> {
        if self.passed() {
            return None;
        }
        let scale = (self.chi_square / self.dof as f64).sqrt();
        let others = self.chi_square - self.markers;
        let share = if others > 0.01 * self.chi_square {
            format!("markers {:.1}, force sensor and priors {others:.1}", self.markers)
        } else {
            format!("all from the markers: {:.3} mm RMS against a declared {:.3} mm", self.rms_error_mm, 1e3 * self.measurement_sigma_m)
        };
        let p = if self.p > 0.0 { format!("{:.1e}", self.p) } else { "0 to double precision".into() };
        Some(format!(
            "the residuals are {scale:.2} times the declared noise (chi-square {:.1} on {} degrees of freedom, p = {p} < {CHI_SQUARE_LEVEL:.0e}; {share}): the data disagree with the model beyond their noise. If the noise is larger than declared, declare it (sigma_m of the measurements, holds.sigma_floor_m and the flange sensor's sigma floors in the loads file) or the model's own error ({} [identify] model_error_m, now {} m)",
            self.chi_square,
            self.dof,
            rod_path.display(),
            self.model_error_m
        ))
    }
}

/// What the imports of the sessions found of the mocap's vertical axis
/// (session.toml): a failed fit of such a session says it first.
fn axis_warnings(source: &Source) -> Vec<String> {
    let Source::Sessions { dirs, .. } = source else { return vec![] };
    dirs.iter()
        .filter_map(|d| d.meta().ok().flatten())
        .flat_map(|m| m.import_warnings.into_iter().filter(|w| w.contains("[world] up")))
        .map(|w| format!("the import found: {w}"))
        .collect()
}

/// The chi-square test of the fit's residuals (None without degrees of freedom).
pub(crate) fn noise_test(experiments: &[Experiment], f: &Fit, model_error_m: f64) -> Option<NoiseTest> {
    if f.dof == 0 || !f.residual_scale.is_finite() {
        return None;
    }
    let ssr = f.residual_scale.powi(2) * f.dof as f64;
    // The markers' share, as fitted and with the model error allowed for.
    let (mut markers, mut markers_allowed) = (0.0, 0.0);
    for (e, errors_mm) in experiments.iter().zip(&f.errors_mm) {
        for (m, err_mm) in e.measurements.iter().zip(errors_mm) {
            let err2 = (err_mm * 1e-3).powi(2);
            if err2.is_finite() {
                markers += err2 / m.sigma_m.powi(2);
                markers_allowed += err2 / (m.sigma_m.powi(2) + model_error_m.powi(2));
            }
        }
    }
    let chi_square = (ssr - markers).max(0.0) + markers_allowed;
    Some(NoiseTest {
        chi_square,
        dof: f.dof,
        p: identify::fit::chi_square_upper_p(chi_square, f.dof),
        model_error_m,
        markers: markers_allowed,
        rms_error_mm: f.rms_error_mm,
        measurement_sigma_m: f.measurement_sigma_m,
    })
}

/// The three experiments (holds) the fit misses most, by RMS error.
fn worst_experiments(experiments: &[Experiment], f: &Fit) -> String {
    crate::failed_fit::worst(experiments, f).iter().map(|(id, e)| format!("{id} ({e:.2} mm RMS)")).collect::<Vec<_>>().join(", ")
}

/// A bias left in the data when the loads file says there is none (or
/// gives a tare): more than twice its 95 % interval and more than 2 % of
/// the weight the sensor carries.
const BIAS_LEFT_FRACTION_OF_WEIGHT: f64 = 0.02;
/// The weight the sensor carries against the rod file's (its mass times
/// g, and any tip mass): a mismatch beyond this fraction is warned about.
const WEIGHT_MISMATCH: f64 = 0.25;

/// The flange sensor's bias before the fit: with `bias = "fit"` (the
/// default), each session's first estimate from its gravity holds
/// (model-free; the fit then refines it jointly with E and rho, see
/// [`final_biases`]), taken off the experiments' wrenches; with a tare
/// given, a check that no bias is left. Warns when the sensor weighs the
/// rod unlike the rod file, and when a session's holds cannot tell the
/// bias from the weight.
fn sensor_bias(
    rod: &Rod,
    experiments: &mut Vec<Experiment>,
    fs: &identify::sessions::FlangeSensor,
    loads: &Loads,
) -> Result<(Vec<identify::sensor_bias::SensorBias>, Vec<String>)> {
    use identify::sensor_bias::{estimate, session_of, subtract};
    let mut warnings = vec![];
    let estimates = estimate(rod, experiments);
    let rod_mass_kg = rod::Model::new(rod, &[]).mass_kg();
    for b in estimates.iter().flatten() {
        // The tip mass the session's holds carry (`b.session` is the
        // session's name, as the loads file names it); none to compare
        // with when it changes during the session.
        let Ok((tip_kg, _)) = loads.file.tip_mass_in(&b.session, 0.0, f64::INFINITY) else { continue };
        let rod_weight_n = (rod_mass_kg + tip_kg) * rod.gravity_m_s2.norm();
        if ((b.weight_n.abs() - rod_weight_n) / rod_weight_n).abs() > WEIGHT_MISMATCH {
            warnings.push(format!(
                "{}: the flange sensor carries {:.3} N, the rod file implies {:.3} N (its mass and the tip mass): more than {:.0} % apart; the rod file's density or section may be off, or something else hangs on the sensor",
                b.session,
                b.weight_n.abs(),
                rod_weight_n,
                100.0 * WEIGHT_MISMATCH
            ));
        }
    }
    match fs.bias_mode() {
        identify::sessions::BiasMode::Given(_) | identify::sessions::BiasMode::Tare(_) => {
            for b in estimates.iter().flatten() {
                let left = b.force_n.norm();
                if left > 2.0 * b.force_ci95_n.norm() && left > BIAS_LEFT_FRACTION_OF_WEIGHT * b.weight_n.abs() {
                    return Err(Error::computation(format!(
                        "{}: the flange sensor reads a bias of [{:.3}, {:.3}, {:.3}] N (+- {:.3} N) that the loads file does not remove ({} of the {:.3} N weight): zero the sensor before recording, give its tare (bias = [fx, fy, fz, mx, my, mz] under [flange_sensor]), or let identify fit it (bias = \"fit\", the default)",
                        b.session,
                        b.force_n.x,
                        b.force_n.y,
                        b.force_n.z,
                        b.force_ci95_n.norm(),
                        format_args!("{:.0} %", 100.0 * left / b.weight_n.abs()),
                        b.weight_n.abs()
                    )));
                }
            }
            Ok((vec![], warnings))
        }
        identify::sessions::BiasMode::Fit => {
            let mut biases = vec![];
            for e in estimates {
                match e {
                    Ok(b) => biases.push(b),
                    Err(e) => warnings.push(format!("the flange sensor's bias is fitted with E and rho, without a first estimate: {e}")),
                }
            }
            // Sessions with a sensor whose holds all carry a load: the bias
            // is still fitted (jointly), but the sensor's weight is not checked.
            let mut unweighed: Vec<&str> = experiments.iter().filter(|e| e.base_wrench.is_some()).map(session_of).collect();
            unweighed.dedup();
            unweighed.retain(|s| !experiments.iter().any(|e| session_of(e) == *s && e.base_wrench.is_some() && e.gravity_only()));
            for s in unweighed {
                warnings.push(format!(
                    "{s}: bias = \"fit\" found no hold loaded by gravity alone (every hold has a cable tension or tip force above its noise): the sensor's bias is fitted with E and rho from the loaded holds, and the weight it carries is not checked"
                ));
            }
            *experiments = subtract(experiments, &biases);
            Ok((biases, warnings))
        }
    }
}

/// Each session's bias after the fit: the first estimate (already taken
/// off `experiments`) plus what the joint fit found left, with the joint
/// fit's intervals; the experiments' wrenches then lose that remainder
/// too, for the report's tables.
fn final_biases(
    rod: &Rod,
    first: &[identify::sensor_bias::SensorBias],
    fit: &Fit,
    experiments: &mut Vec<Experiment>,
) -> Vec<identify::sensor_bias::SensorBias> {
    use identify::sensor_bias::{spread_deg, subtract, SensorBias};
    let t = identify::fit::t975(fit.dof);
    let left: Vec<SensorBias> = fit
        .sensor_biases
        .iter()
        .map(|f| SensorBias {
            session: f.session.clone(),
            force_n: f.wrench.fixed_rows::<3>(3).into_owned(),
            force_ci95_n: f.sd.fixed_rows::<3>(3) * t,
            moment_nm: f.wrench.fixed_rows::<3>(0).into_owned(),
            moment_ci95_nm: f.sd.fixed_rows::<3>(0) * t,
            weight_n: f64::NAN,
            holds: f.holds,
            spread_deg: spread_deg(rod, experiments, &f.session),
        })
        .collect();
    *experiments = subtract(experiments, &left);
    left.into_iter()
        .map(|mut b| {
            if let Some(f) = first.iter().find(|f| f.session == b.session) {
                b.force_n += f.force_n;
                b.moment_nm += f.moment_nm;
                b.weight_n = f.weight_n;
            }
            b
        })
        .collect()
}

fn bias_out(b: &identify::sensor_bias::SensorBias) -> identify::output::SensorBiasOut {
    identify::output::SensorBiasOut {
        session: b.session.clone(),
        force_n: b.force_n.into(),
        force_ci95_n: b.force_ci95_n.into(),
        moment_nm: b.moment_nm.into(),
        moment_ci95_nm: b.moment_ci95_nm.into(),
        weight_n: b.weight_n,
        holds: b.holds,
        spread_deg: b.spread_deg,
    }
}

fn critical_table(critical: &[identify::fit::CriticalFit]) -> ReportTable {
    ReportTable {
        title: "Where the shape snaps or buckles (critical.csv): measured and fitted".into(),
        header: ["experiment", "quantity", "measured", "sigma", "fitted", "(fitted - measured) / sigma"].map(String::from).to_vec(),
        rows: critical
            .iter()
            .map(|c| {
                vec![
                    c.experiment.clone(),
                    c.quantity.clone(),
                    format!("{:.4}", c.measured),
                    format!("{:.4}", c.sigma),
                    format!("{:.4}", c.fitted),
                    format!("{:+.2}", (c.fitted - c.measured) / c.sigma),
                ]
            })
            .collect(),
    }
}

fn bias_table(biases: &[identify::sensor_bias::SensorBias]) -> ReportTable {
    let v3 = |v: &Vec3, h: &Vec3| format!("{:.4} {:.4} {:.4} (+- {:.4} {:.4} {:.4})", v.x, v.y, v.z, h.x, h.y, h.z);
    ReportTable {
        title: "Flange sensor bias, fitted per session with E and rho (95 % intervals)".into(),
        header: ["session", "holds", "orientations spread [deg]", "weight carried [N]", "force bias [N]", "moment bias [N m]"].map(String::from).to_vec(),
        rows: biases
            .iter()
            .map(|b| {
                vec![
                    b.session.clone(),
                    b.holds.to_string(),
                    format!("{:.1}", b.spread_deg),
                    if b.weight_n.is_finite() { format!("{:.4}", b.weight_n.abs()) } else { "not weighed (no gravity hold)".into() },
                    v3(&b.force_n, &b.force_ci95_n),
                    v3(&b.moment_nm, &b.moment_ci95_nm),
                ]
            })
            .collect(),
    }
}

/// A viscoelastic rod's holds: each saw the relaxed E times its creep
/// ratio (written per experiment into `file`), and a line that says so.
fn creep_note(rod: &Rod, experiments: &[Experiment], file: &mut IdentifiedFile) -> Option<String> {
    let ratios: Vec<f64> = experiments.iter().map(|e| identify::problem::hold_modulus_ratio(rod, e)).collect();
    for (x, r) in file.experiment.iter_mut().zip(&ratios) {
        x.hold_modulus_ratio = (*r != 1.0).then_some(*r);
    }
    if rod.viscoelastic.is_empty() {
        return None;
    }
    let loaded: Vec<f64> = experiments.iter().filter_map(|e| e.loaded_for_s).collect();
    let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0_f64), |(a, b), r| (a.min(*r), b.max(*r)));
    Some(match loaded.is_empty() {
        true => "the rod file's viscoelastic law: the holds' ages are unknown (no release or still run to count from), so each is taken as relaxed: E is the relaxed modulus".into(),
        false => format!(
            "the rod file's viscoelastic law: each hold saw the relaxed E crept for as long as its loads acted ({:.2}-{:.2} s: {lo:.3}-{hi:.3} times it); E is the relaxed modulus",
            loaded.iter().fold(f64::INFINITY, |a, b| a.min(*b)),
            loaded.iter().fold(0.0_f64, |a, b| a.max(*b))
        ),
    })
}
