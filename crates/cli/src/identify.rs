//! `rodlab identify`: fit E, G, rho to static experiments (a directory of
//! CSV files, or the static holds of recorded sessions), write
//! `identified.toml` and an HTML report.

use crate::input_error;
use anyhow::{Context, Result};
use clap::Args;
use identify::output::{run_study, GeometryPriors, IdentifiedFile};
use identify::sessions::{experiments_from_session, Hold, HoldStatus, LoadsFile, RodMarkers};
use identify::{read_experiments, Experiment, FitOptions, Problem, Values};
use lie::Vec3;
use report::{AlternativeFit, ExperimentView, IdentificationReport, ParameterRow, ReportTable};
use rod::Rod;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out reports/demo\n  rodlab identify --rod arm.toml --experiments my-data --out fit --translation --pitch\n  rodlab identify --rod arm.toml --sessions sessions/day1-* --loads configs/loads.toml --out fit\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out variants --compare-variants --reference 2.563e5,8.543e4,1.41e3\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out best --translation --pitch --fit-cable-offset --per-cable --fit-cable-angle\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out held --hold-material 2.563e5,8.543e4,1.41e3 --fit-cable-offset --fit-radius-scale --translation --pitch\n\nThe experiments directory holds inputs.csv and measurements.csv (see datasets/pls-cable-arm/README.md).\nSessions need tracked markers (markers.parquet, on the host clock) and a robot stream; static holds (robot and markers still) are found automatically, each becomes one experiment. loads.toml maps streams to cable tensions, a tip force and a flange force sensor, and sets the hold thresholds (see configs/loads.toml)."
)]
pub struct IdentifyArgs {
    /// Rod description (TOML); its material is the initial guess.
    #[arg(long)]
    pub rod: PathBuf,
    /// Directory with inputs.csv and measurements.csv.
    #[arg(long, required_unless_present = "sessions", conflicts_with = "sessions")]
    pub experiments: Option<PathBuf>,
    /// Recorded session directories; their static holds are the experiments.
    #[arg(long, num_args = 1..)]
    pub sessions: Vec<PathBuf>,
    /// With --sessions: loads from streams and hold thresholds (default: gravity only).
    #[arg(long, requires = "sessions")]
    pub loads: Option<PathBuf>,
    /// Output directory: identified.toml, index.html, summary.json, PNG figures.
    #[arg(long)]
    pub out: PathBuf,
    /// Also estimate a translation of the measurement frame (nuisance).
    #[arg(long)]
    pub translation: bool,
    /// Also estimate the base's pitch (nuisance).
    #[arg(long)]
    pub pitch: bool,
    /// Reference parameters E,G,RHO to compare with (e.g. a paper's values).
    #[arg(long, value_delimiter = ',')]
    pub reference: Vec<f64>,
    /// Skip leave-one-out cross-validation.
    #[arg(long)]
    pub no_loo: bool,
    /// Also estimate the cables' outward offset from where the rod file puts them (guide rings hold cables off the surface), with a Gaussian prior MEAN_M,SD_M [m], e.g. 0,0.005 (default: the rod file's [identify] cable_offset_m).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, num_args = 0..=1)]
    pub fit_cable_offset: Option<Vec<f64>>,
    /// With --fit-cable-offset: one offset per cable, each with that prior, instead of one for all.
    #[arg(long, requires = "fit_cable_offset")]
    pub per_cable: bool,
    /// Also estimate the scale of the section's radii (cables on the surface move with it), with a Gaussian prior MEAN,SD, e.g. 1,0.1 (default: the rod file's [identify] radius_scale). E, rho and the scale are nearly degenerate (E s^4, rho s^2): fit it with E, G, rho held (--hold-material) or with a tight prior.
    #[arg(long, value_delimiter = ',', num_args = 0..=1)]
    pub fit_radius_scale: Option<Vec<f64>>,
    /// Also estimate each cable's turn about the rod's axis from its angle_deg in the rod file (guide holes a degree or two off), with a Gaussian prior MEAN_DEG,SD_DEG, e.g. 0,5 (default: the rod file's [identify] cable_angle_deg). Pulled cables are seen by the data; the others stay at the prior.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, num_args = 0..=1)]
    pub fit_cable_angle: Option<Vec<f64>>,
    /// Hold the material at E,G,RHO and fit only the geometry and nuisance parameters: which geometry makes a published material describe the data? (e.g. --hold-material 2.563e5,8.543e4,1.41e3 --fit-cable-offset --fit-radius-scale).
    #[arg(long, value_delimiter = ',')]
    pub hold_material: Vec<f64>,
    /// Compare model variants (no nuisance, frame, cable offset, frame + cable offset, frame + offset per cable, frame + geometry when a radius-scale prior is given, frame + angle per cable and frame + offset and angle per cable when a cable-angle prior is given) by leave-one-out prediction error and recommend the best predictor; the priors are the flags', else the rod file's (cable offset else 0,0.005). With --reference, also fits the geometry with the reference material held.
    #[arg(long)]
    pub compare_variants: bool,
}

/// A geometry prior from its flag (`--fit-NAME MEAN,SD`, or the flag alone
/// for the rod file's prior); `None` without the flag.
fn geometry_prior(flag: &str, given: Option<&[f64]>, from_file: Option<(f64, f64)>, rod: &Path, file_example: &str) -> Result<Option<(f64, f64)>> {
    match given {
        None => Ok(None),
        Some([]) => {
            from_file.map(Some).ok_or_else(|| input_error(format!("--{flag}: give MEAN,SD, or a prior in {} ([identify] {file_example})", rod.display())))
        }
        Some(&[m, sd]) if m.is_finite() && sd.is_finite() && sd > 0.0 => Ok(Some((m, sd))),
        Some(_) => Err(input_error(format!("--{flag}: expected MEAN,SD (a finite mean and a positive standard deviation)"))),
    }
}

pub fn sha256_file(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(b) => format!("{:x}", Sha256::digest(&b)),
        Err(_) => "unreadable".into(),
    }
}

fn p3(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// Experiments from the sessions' static holds; the rod takes the rig's gravity.
/// Experiments, every hold found, and provenance rows.
type FromSessions = (Vec<Experiment>, Vec<Hold>, Vec<(String, String)>);

fn from_sessions(a: &IdentifyArgs, rod: &mut Rod) -> Result<FromSessions> {
    let loads: LoadsFile = match &a.loads {
        Some(p) => {
            let (l, _): (LoadsFile, String) = session::read_toml(p, "loads file").map_err(|e| input_error(e.to_string()))?;
            l.validate(rod.cables.len()).map_err(|e| input_error(format!("{}: {e}", p.display())))?;
            l
        }
        None => LoadsFile::default(),
    };
    let loads_name = a.loads.as_ref().map_or("loads (default)".to_string(), |p| p.display().to_string());
    let mut requests: Vec<crate::session_data::StreamRequest> = vec![];
    for (field, stream, column) in loads.channels() {
        match requests.iter_mut().find(|r| r.stream == stream) {
            Some(r) => r.columns.push(column),
            None => requests.push(crate::session_data::StreamRequest { stream, columns: vec![column], asked_by: format!("{loads_name}: {field}") }),
        }
    }
    let rod_markers = RodMarkers { markers: &rod.markers, mount: rod.base };
    if rod.markers.is_empty() {
        return Err(input_error(format!("{}: no [[marker]]: sessions' markers cannot be matched to the rod", a.rod.display())));
    }
    let mut experiments = vec![];
    let mut holds = vec![];
    let mut provenance = vec![];
    let mut gravity: Option<(Vec3, &PathBuf)> = None;
    for dir in &a.sessions {
        let s = crate::session_data::load(dir, rod_markers.markers.len(), &requests)?;
        match gravity {
            Some((g, first)) if (g - s.gravity_m_s2).norm() > 1e-9 => {
                return Err(input_error(format!(
                    "{}: gravity {:?} differs from {}'s {:?}: sessions of one fit share a rig",
                    dir.display(),
                    s.gravity_m_s2,
                    first.display(),
                    g
                )));
            }
            Some(_) => {}
            None => gravity = Some((s.gravity_m_s2, dir)),
        }
        let (e, h) = experiments_from_session(&s, &rod_markers, &loads);
        println!("{}: {} still intervals, {} used as holds", dir.display(), h.len(), e.len());
        experiments.extend(e);
        holds.extend(h);
        for f in ["session.toml", "markers.parquet"] {
            provenance.push((format!("{}/{f}", dir.display()), format!("sha256 {}", sha256_file(&dir.join(f)))));
        }
    }
    if let Some(p) = &a.loads {
        provenance.push((p.display().to_string(), format!("sha256 {}", sha256_file(p))));
    }
    if let Some((g, _)) = gravity {
        rod.gravity_m_s2 = g;
    }
    if experiments.is_empty() {
        let why: Vec<String> = holds
            .iter()
            .filter_map(|h| if let HoldStatus::Rejected(w) = &h.status { Some(format!("{} at {:.1} s: {w}", h.session, h.start_s)) } else { None })
            .collect();
        return Err(input_error(format!(
            "no usable static hold in the sessions ({}): {}",
            a.sessions.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
            if why.is_empty() {
                "the robot and the markers are never still together for long enough (see [holds] in loads.toml)".to_string()
            } else {
                why.join("; ")
            }
        )));
    }
    Ok((experiments, holds, provenance))
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

/// Which geometry lets fixed (reference) material parameters describe the
/// experiments best: E, G, rho held, the frame, the cables' offset and the
/// radius scale fitted (loose priors unless given).
fn reference_geometry_fit(rod: &rod::Rod, experiments: &[identify::Experiment], v: &Values, priors: GeometryPriors) -> Result<identify::Fit, String> {
    let opts = FitOptions {
        translation: true,
        pitch: true,
        cable_offset_prior: (!rod.cables.is_empty()).then(|| priors.cable_offset_m.unwrap_or((0.0, 0.005))),
        radius_scale_prior: Some(priors.radius_scale.unwrap_or((1.0, 0.5))),
        hold_material: Some([v.e_pa, v.g_pa, v.rho_kg_m3]),
        ..FitOptions::default()
    };
    identify::fit::fit(rod, experiments, &opts, |_| {}).map_err(|e| e.to_string())
}

/// A variant's fitted cable offset in mm (each cable's, `/`-separated,
/// when fitted per cable).
fn offsets_mm(v: &identify::output::VariantOut) -> Option<String> {
    if !v.cable_offsets_m.is_empty() {
        Some(v.cable_offsets_m.iter().map(|d| format!("{:.2}", 1e3 * d)).collect::<Vec<_>>().join("/"))
    } else {
        v.parameters.iter().any(|p| p == "cable_offset_m").then(|| format!("{:.2}", 1e3 * v.cable_offset_m))
    }
}

/// A variant's fitted cable turns in degrees (`/`-separated), when it has them.
fn angles_deg(v: &identify::output::VariantOut) -> Option<String> {
    (!v.cable_angles_rad.is_empty()).then(|| v.cable_angles_rad.iter().map(|a| format!("{:.2}", a.to_degrees())).collect::<Vec<_>>().join("/"))
}

/// A variant's fitted radius scale, when it has one.
fn scale_text(v: &identify::output::VariantOut) -> Option<String> {
    v.parameters.iter().any(|p| p == "radius_scale").then(|| format!("{:.4}", v.radius_scale))
}

/// Model variants side by side, judged by leave-one-out prediction.
fn variants_table(variants: &[identify::output::VariantOut], best: Option<usize>) -> ReportTable {
    ReportTable {
        title: "Model variants by prediction (leave-one-out); the recommended one predicts best, not fits best".into(),
        header: ["variant", "E [Pa]", "cable offset [mm]", "cable angle [deg]", "radius scale", "fit RMS [mm]", "LOO RMS [mm]", "worst LOO [mm]", ""]
            .map(String::from)
            .to_vec(),
        rows: variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                vec![
                    v.name.clone(),
                    format!("{:.4e}", v.e_pa),
                    offsets_mm(v).unwrap_or_else(|| "-".into()),
                    angles_deg(v).unwrap_or_else(|| "-".into()),
                    scale_text(v).unwrap_or_else(|| "-".into()),
                    format!("{:.2}", v.rms_error_mm),
                    format!("{:.2}", v.loo_rms_mm),
                    format!("{:.2}", v.loo_worst_mm),
                    if best == Some(i) { "recommended".into() } else { String::new() },
                ]
            })
            .collect(),
    }
}

/// Measured against predicted base wrenches (flange sensor) at the fit.
fn wrench_table(rod: &Rod, experiments: &[Experiment], f: &identify::Fit) -> Option<ReportTable> {
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

pub fn run(a: IdentifyArgs) -> Result<()> {
    let mut rod = Rod::from_file(&a.rod)?;
    let (experiments, holds, mut input_provenance, source) = match &a.experiments {
        Some(dir) => {
            let experiments = read_experiments(dir, rod.cables.len()).map_err(|e| input_error(e.to_string()))?;
            identify::data::check_against_rod(&experiments, rod.length_m, &dir.join("measurements.csv")).map_err(|e| input_error(e.to_string()))?;
            let prov =
                vec![("inputs.csv".into(), sha256_file(&dir.join("inputs.csv"))), ("measurements.csv".into(), sha256_file(&dir.join("measurements.csv")))];
            (experiments, vec![], prov, dir.display().to_string())
        }
        None => {
            let (e, h, p) = from_sessions(&a, &mut rod)?;
            (e, h, p, a.sessions.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))
        }
    };
    let reference = match a.reference.as_slice() {
        [] => None,
        [e, g, r] if [e, g, r].iter().all(|v| v.is_finite() && **v > 0.0) => Some(Values::material(*e, *g, *r)),
        _ => return Err(input_error("--reference: expected three positive numbers E,G,RHO")),
    };
    let hold_material = match a.hold_material.as_slice() {
        [] => None,
        [e, g, r] if [e, g, r].iter().all(|v| v.is_finite() && **v > 0.0) => Some([*e, *g, *r]),
        _ => return Err(input_error("--hold-material: expected three positive numbers E,G,RHO")),
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let file_priors = rod.identify_priors;
    let cable_offset_prior =
        geometry_prior("fit-cable-offset", a.fit_cable_offset.as_deref(), file_priors.cable_offset_m, &a.rod, "cable_offset_m = { mean = 0.0, sd = 0.005 }")?;
    if cable_offset_prior.is_some() && rod.cables.is_empty() {
        return Err(input_error(format!("--fit-cable-offset: {} has no [[cable]]", a.rod.display())));
    }
    let radius_scale_prior =
        geometry_prior("fit-radius-scale", a.fit_radius_scale.as_deref(), file_priors.radius_scale, &a.rod, "radius_scale = { mean = 1.0, sd = 0.1 }")?;
    if radius_scale_prior.is_some_and(|(m, _)| m <= 0.0) {
        return Err(input_error("--fit-radius-scale: the mean must be positive"));
    }
    // The flag is in degrees; the rod file's prior is already in radians.
    let cable_angle_flag_rad: Option<Vec<f64>> = a.fit_cable_angle.as_ref().map(|v| v.iter().map(|d| d.to_radians()).collect());
    let cable_angle_each_prior =
        geometry_prior("fit-cable-angle", cable_angle_flag_rad.as_deref(), file_priors.cable_angle_rad, &a.rod, "cable_angle_deg = { mean = 0.0, sd = 5.0 }")?;
    if cable_angle_each_prior.is_some() && rod.cables.is_empty() {
        return Err(input_error(format!("--fit-cable-angle: {} has no [[cable]]", a.rod.display())));
    }
    let (cable_offset_prior, cable_offset_each_prior) = if a.per_cable { (None, cable_offset_prior) } else { (cable_offset_prior, None) };
    let opts = FitOptions {
        translation: a.translation,
        pitch: a.pitch,
        cable_offset_prior,
        radius_scale_prior,
        cable_offset_each_prior,
        cable_angle_each_prior,
        hold_material,
        ..FitOptions::default()
    };
    let priors = GeometryPriors {
        cable_offset_m: Some(cable_offset_prior.or(cable_offset_each_prior).or(file_priors.cable_offset_m).unwrap_or((0.0, 0.005))),
        radius_scale: radius_scale_prior.or(file_priors.radius_scale),
        cable_angle_rad: cable_angle_each_prior.or(file_priors.cable_angle_rad),
    };
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} identify: {msg} [{elapsed}]").expect("template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let study = run_study(&rod, &experiments, &opts, true, !a.no_loo, reference.clone(), |m| bar.set_message(m.to_string()))?;
    bar.finish_and_clear();
    let f = &study.fit;

    let (variants, best) = if a.compare_variants {
        bar.reset();
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let v = identify::output::compare_variants(&rod, &experiments, &opts, priors, |m| bar.set_message(m.to_string()));
        bar.finish_and_clear();
        v
    } else {
        (vec![], None)
    };
    let mut file = IdentifiedFile::from_study(&study, &experiments, &a.rod.display().to_string(), &source);
    file.variant = variants.clone();
    file.recommended_variant = best.map(|i| variants[i].name.clone());
    file.rod_geometry = Some(identify::output::rod_geometry(&rod));
    let toml_path = a.out.join("identified.toml");
    file.write(&toml_path).with_context(|| format!("cannot write {}", toml_path.display()))?;

    // Report.
    let paper = reference.clone().unwrap_or(Values::material(f64::NAN, f64::NAN, f64::NAN));
    let rows = |f: &identify::Fit, with_paper: bool| {
        let pp = |v: f64| if with_paper { v } else { f64::NAN };
        vec![
            ParameterRow {
                name: "E".into(),
                unit: "Pa".into(),
                value: f.e_pa.value,
                ci95_low: f.e_pa.ci95_low,
                ci95_high: f.e_pa.ci95_high,
                paper: pp(paper.e_pa),
            },
            ParameterRow {
                name: "G".into(),
                unit: "Pa".into(),
                value: f.g_pa.value,
                ci95_low: f.g_pa.ci95_low,
                ci95_high: f.g_pa.ci95_high,
                paper: pp(paper.g_pa),
            },
            ParameterRow {
                name: "rho".into(),
                unit: "kg/m^3".into(),
                value: f.rho_kg_m3.value,
                ci95_low: f.rho_kg_m3.ci95_low,
                ci95_high: f.rho_kg_m3.ci95_high,
                paper: pp(paper.rho_kg_m3),
            },
        ]
        .into_iter()
        .chain(f.geometry_estimates().into_iter().map(|(g, e)| {
            let (name, unit) = g.label();
            ParameterRow { name, unit: unit.into(), value: e.value, ci95_low: e.ci95_low, ci95_high: e.ci95_high, paper: f64::NAN }
        }))
        .collect::<Vec<_>>()
    };
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
                measured_m: e.measurements.iter().map(|m| p3(&m.pos_m)).collect(),
                predicted_m: f.predicted[i].iter().map(p3).collect(),
                predicted_paper_m: study.reference.as_ref().map(|r| r.predicted[i].iter().map(p3).collect()).unwrap_or_default(),
                shape_m: study.shapes[i].iter().map(p3).collect(),
                shape_paper_m: study.reference.as_ref().map(|r| r.shapes[i].iter().map(p3).collect()).unwrap_or_default(),
                errors_mm: f.errors_mm[i].clone(),
                errors_paper_mm: study.reference.as_ref().map(|r| r.errors_mm[i].clone()).unwrap_or_else(|| vec![f64::NAN; n]),
                loo_errors_mm: study.loo.get(i).map(|l| l.errors_mm.clone()).unwrap_or_else(|| vec![f64::NAN; n]),
            }
        })
        .collect();
    let alternatives = study
        .with_nuisance
        .iter()
        .map(|alt| AlternativeFit {
            label: format!("Fit {} frame translation and base pitch", if alt.layout.translation || alt.layout.pitch { "with" } else { "without" }),
            parameters: rows(alt, false),
            extra: vec![
                ("frame translation [mm]".into(), format!("{:.2?}", p3(&(alt.values.translation_m * 1e3)))),
                ("base pitch [deg]".into(), format!("{:.3}", alt.values.pitch_rad.to_degrees())),
            ],
            rms_error_mm: alt.rms_error_mm,
        })
        .collect();
    let rep = IdentificationReport {
        title: format!("rodlab identification: {source}"),
        parameters: rows(f, true),
        correlation_names: f.parameter_names.iter().map(|s| s.to_string()).collect(),
        correlation: f.correlation.row_iter().map(|r| r.iter().cloned().collect()).collect(),
        experiments: views,
        history: f.history.clone(),
        rms_error_mm: f.rms_error_mm,
        rms_error_paper_mm: study.reference.as_ref().map_or(f64::NAN, |r| r.rms_error_mm),
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
            ("starts".into(), format!("{} ({} converged)", f.starts.len(), f.starts.iter().filter(|s| s.converged).count())),
            ("iterations (all starts)".into(), f.iterations.to_string()),
            ("static solves".into(), f.static_solves.to_string()),
            ("wall time".into(), format!("{:.3} s", f.wall_time_s)),
            ("condition number".into(), format!("{:.3e}", f.condition_number)),
            ("residual scale (units of sigma)".into(), format!("{:.3}", f.residual_scale)),
        ],
        alternatives,
        tables: (!holds.is_empty())
            .then(|| holds_table(&holds))
            .into_iter()
            .chain(wrench_table(&rod, &experiments, f))
            .chain((!variants.is_empty()).then(|| variants_table(&variants, best)))
            .collect(),
        provenance: {
            let mut p = vec![
                ("rodlab version".into(), env!("CARGO_PKG_VERSION").into()),
                ("rod file".into(), format!("{} sha256 {}", a.rod.display(), sha256_file(&a.rod))),
            ];
            p.append(&mut input_provenance);
            p.push(("rod".into(), format!("{:?}", rod).chars().take(2000).collect()));
            p
        },
    };
    let written = report::write_identification_report(&a.out, &rep)?;

    println!("identified from {} experiments ({source}):", experiments.len());
    let line = |n: &str, e: &identify::fit::Estimate, u: &str, pv: f64| {
        let r = if pv.is_nan() { String::new() } else { format!("   reference {pv:.4e}") };
        println!("  {n:<4} = {:>11.4e} {u:<7} 95 % CI [{:.4e}, {:.4e}]{r}", e.value, e.ci95_low, e.ci95_high);
    };
    line("E", &f.e_pa, "Pa", paper.e_pa);
    line("G", &f.g_pa, "Pa", paper.g_pa);
    line("rho", &f.rho_kg_m3, "kg/m^3", paper.rho_kg_m3);
    if f.layout.cable_offset {
        let c = file.parameters.cable_offset_ci95_m;
        println!(
            "  cable offset = {:>9.3} mm     95 % CI [{:.3}, {:.3}] mm (outwards from the rod file's cables)",
            1e3 * f.values.cable_offset_m,
            1e3 * c[0],
            1e3 * c[1]
        );
    }
    for (c, (d, ci)) in file.parameters.cable_offsets_m.iter().zip(&file.parameters.cable_offsets_ci95_m).enumerate() {
        println!("  {:<12} = {:>9.3} mm     95 % CI [{:.3}, {:.3}] mm (outwards)", rod.cables[c].name, 1e3 * d, 1e3 * ci[0], 1e3 * ci[1]);
    }
    for (c, (a, ci)) in file.parameters.cable_angles_rad.iter().zip(&file.parameters.cable_angles_ci95_rad).enumerate() {
        println!(
            "  {:<12} = {:>+9.3} deg    95 % CI [{:+.3}, {:+.3}] deg (turn about the axis from {} deg)",
            rod.cables[c].name,
            a.to_degrees(),
            ci[0].to_degrees(),
            ci[1].to_degrees(),
            rod.cables[c].angle_rad.to_degrees()
        );
    }
    if f.layout.radius_scale {
        let c = file.parameters.radius_scale_ci95;
        println!("  radius scale = {:>9.4}        95 % CI [{:.4}, {:.4}] (of the rod file's section)", f.values.radius_scale, c[0], c[1]);
    }
    if let Some(j) = &study.jackknife {
        println!(
            "  jackknife 95 % (spread of the {} leave-one-out fits): E [{:.4e}, {:.4e}] Pa, G [{:.4e}, {:.4e}] Pa, rho [{:.4e}, {:.4e}] kg/m^3",
            j.fits, j.e_pa_ci95[0], j.e_pa_ci95[1], j.g_pa_ci95[0], j.g_pa_ci95[1], j.rho_kg_m3_ci95[0], j.rho_kg_m3_ci95[1]
        );
    }
    println!(
        "  rms error {:.2} mm{}; {} iterations, {} static solves, {:.3} s",
        f.rms_error_mm,
        study.reference.as_ref().map_or(String::new(), |r| format!(" (reference parameters: {:.2} mm)", r.rms_error_mm)),
        f.iterations,
        f.static_solves,
        f.wall_time_s
    );
    let rms = identify::fit::rms;
    for (i, e) in experiments.iter().enumerate() {
        let loo = study.loo.get(i).map_or(f64::NAN, |l| rms(&l.errors_mm));
        println!("  experiment {:<4} error {:>6.2} mm   leave-one-out {:>6.2} mm  (RMS over {} points)", e.id, rms(&f.errors_mm[i]), loo, e.measurements.len());
    }
    if let Some(alt) = &study.with_nuisance {
        println!(
            "  alternative fit ({}nuisance): E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3, rms {:.2} mm",
            if alt.layout.translation || alt.layout.pitch { "with " } else { "without " },
            alt.e_pa.value,
            alt.g_pa.value,
            alt.rho_kg_m3.value,
            alt.rms_error_mm
        );
    }
    if let (Some(v), true) = (&reference, a.compare_variants) {
        // The study: keep the reference material, fit the geometry.
        match reference_geometry_fit(&rod, &experiments, v, priors) {
            Ok(g) => {
                let worst = g.errors_mm.iter().map(|e| rms(e)).fold(0.0, f64::max);
                println!(
                    "  reference material held, geometry fitted: cable offset {:+.2} mm, radius scale {:.4}, frame {:.2?} mm, pitch {:.2} deg: RMS {:.2} mm, worst experiment {:.2} mm",
                    1e3 * g.values.cable_offset_m,
                    g.values.radius_scale,
                    p3(&(g.values.translation_m * 1e3)),
                    g.values.pitch_rad.to_degrees(),
                    g.rms_error_mm,
                    worst
                );
            }
            Err(e) => println!("  reference material held, geometry fitted: no fit ({e})"),
        }
    }
    if let Some(r) = study.reference.as_ref().filter(|r| r.failures > 0) {
        println!("  note: with the reference parameters the model finds no equilibrium for {} experiment(s) (NaN above):", r.failures);
        for why in &r.failure_reasons {
            println!("    {why}");
        }
    }
    if !variants.is_empty() {
        println!("  model variants by leave-one-out prediction error:");
        for (i, v) in variants.iter().enumerate() {
            let geometry: Vec<String> =
                [offsets_mm(v).map(|t| format!("offset {t} mm")), angles_deg(v).map(|t| format!("angle {t} deg")), scale_text(v).map(|t| format!("scale {t}"))]
                    .into_iter()
                    .flatten()
                    .collect();
            println!(
                "    {:<32} E {:.4e} Pa  {:<64}  fit RMS {:>6.2} mm  LOO RMS {:>6.2} mm  worst {:>6.2} mm{}",
                v.name,
                v.e_pa,
                geometry.join("  "),
                v.rms_error_mm,
                v.loo_rms_mm,
                v.loo_worst_mm,
                if best == Some(i) { "  <- recommended (predicts best)" } else { "" }
            );
        }
    }
    for w in &f.warnings {
        println!("  warning: {w}");
    }
    println!("wrote {}, {} and {}", toml_path.display(), written.html.display(), written.json.display());
    Ok(())
}
