//! A failed identification as a result, not only a line: the fit's values,
//! its chi-square, the experiments that fit worst, and which term the fit
//! lacked. The term is not guessed: each candidate the data could support
//! (the cables' friction where cables were let out, a clamp's angle, the
//! cables' offset, the measuring frame) is fitted to the same data, and the
//! one whose residuals then pass the noise test (the smallest chi-square)
//! is suggested, with the figure it reached.

use crate::identify::{noise_test, NoiseTest};
use identify::{Experiment, Fit, FitOptions};
use rod::Rod;
use serde::Serialize;

/// What a failed identification found (`lab::Error::result`, Python's
/// `ComputationError.result`).
#[derive(Clone, Debug, Serialize)]
pub struct FailedFit {
    /// The values the fit ended at: `e_pa`, `g_pa`, `rho_kg_m3` (the
    /// failure's identified.toml has them too, marked as failed).
    pub values: ValuesOut,
    /// Their 95 % intervals (as fitted; the failure says why not to trust them).
    pub intervals: IntervalsOut,
    /// The chi-square of the residuals against the declared noise, its
    /// degrees of freedom, and the chance noise leaves residuals this large.
    pub chi_square: f64,
    pub dof: usize,
    pub p: f64,
    /// The markers' RMS error \[mm\].
    pub rms_error_mm: f64,
    /// The residuals over the declared noise (1: as declared).
    pub residual_scale: f64,
    /// The experiments that fit worst, with their RMS error \[mm\], worst first.
    pub worst: Vec<(String, f64)>,
    /// The term that fits the same data, when one does.
    pub suggestion: Option<Suggestion>,
    /// Why the fit failed (the error's line without its advice).
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ValuesOut {
    pub e_pa: f64,
    pub g_pa: f64,
    pub rho_kg_m3: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IntervalsOut {
    pub e_pa: [f64; 2],
    pub g_pa: [f64; 2],
    pub rho_kg_m3: [f64; 2],
}

/// A term the failed fit lacked, fitted to the same data.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Suggestion {
    /// What the term is ("the cables' friction in their channels").
    pub term: String,
    /// The command line's flag(s) ("--fit-friction=0.2,0.2").
    pub flag: String,
    /// Python's keyword(s) of `rodlab.identify` ("fit_friction=(0.2, 0.2)").
    pub keyword: String,
    /// The fit with it: chi-square, degrees of freedom, passed.
    pub chi_square: f64,
    pub dof: usize,
    pub passed: bool,
}

impl Suggestion {
    /// "with --fit-friction=0.2,0.2 (the cables' friction ...) the same data fit: chi-square 40.1 on 45 (passed)".
    pub fn text(&self) -> String {
        let verdict = if self.passed { "the same data fit" } else { "the same data fit better, still beyond their noise" };
        format!("with {} ({}) {verdict}: chi-square {:.1} on {} degrees of freedom", self.flag, self.term, self.chi_square, self.dof)
    }
}

impl FailedFit {
    pub fn of(fit: &Fit, experiments: &[Experiment], noise: Option<&NoiseTest>, suggestion: Option<Suggestion>, reason: &str) -> FailedFit {
        let ci = |e: &identify::fit::Estimate| [e.ci95_low, e.ci95_high];
        FailedFit {
            values: ValuesOut { e_pa: fit.values.e_pa, g_pa: fit.values.g_pa, rho_kg_m3: fit.values.rho_kg_m3 },
            intervals: IntervalsOut { e_pa: ci(&fit.e_pa), g_pa: ci(&fit.g_pa), rho_kg_m3: ci(&fit.rho_kg_m3) },
            chi_square: noise.map_or(f64::NAN, |n| n.chi_square),
            dof: fit.dof,
            p: noise.map_or(f64::NAN, |n| n.p),
            rms_error_mm: fit.rms_error_mm,
            residual_scale: fit.residual_scale,
            worst: worst(experiments, fit),
            suggestion,
            reason: reason.to_string(),
        }
    }
}

/// The three experiments that fit worst, with their marker RMS error
/// \[mm\], worst first.
pub fn worst(experiments: &[Experiment], fit: &Fit) -> Vec<(String, f64)> {
    let mut by_error: Vec<(String, f64)> = experiments.iter().zip(&fit.errors_mm).map(|(e, err)| (e.id.clone(), identify::fit::rms(err))).collect();
    by_error.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_error.truncate(3);
    by_error
}

/// A term to try: what it is, how it is asked for, and the options with it.
struct Candidate {
    term: &'static str,
    flag: &'static str,
    keyword: &'static str,
    opts: FitOptions,
}

/// The terms `opts` lacks that these data could support.
fn candidates(rod: &Rod, experiments: &[Experiment], opts: &FitOptions) -> Vec<Candidate> {
    let with = |f: &dyn Fn(&mut FitOptions)| {
        let mut o = opts.clone();
        f(&mut o);
        o
    };
    let mut out = vec![];
    let let_out = experiments.iter().any(|e| e.cable_slide == rod::statics::CableSlide::LetOut);
    if !rod.cables.is_empty() && opts.friction_prior.is_none() && let_out {
        out.push(Candidate {
            term: "the cables' friction in their channels, from pulls that load and unload",
            flag: "--fit-friction=0.2,0.2",
            keyword: "fit_friction=(0.2, 0.2)",
            opts: with(&|o| o.friction_prior = Some((0.2, 0.2))),
        });
    }
    if rod.tip_condition == rod::TipCondition::Clamped && opts.clamp_angle_prior.is_none() {
        out.push(Candidate {
            term: "each experiment's tip-clamp angle, known only to within a tracing",
            flag: "--fit-clamp-angle=0,5",
            keyword: "fit_clamp_angle=(0, 5)",
            opts: with(&|o| o.clamp_angle_prior = Some((0.0, 5f64.to_radians()))),
        });
    }
    if !rod.cables.is_empty() && opts.cable_offset_prior.is_none() && opts.cable_offset_each_prior.is_none() {
        out.push(Candidate {
            term: "the cables' outward offset from where the rod file puts them",
            flag: "--fit-cable-offset=0,0.005",
            keyword: "fit_cable_offset=(0, 0.005)",
            opts: with(&|o| o.cable_offset_prior = Some((0.0, 0.005))),
        });
    }
    if !opts.translation && !opts.pitch {
        out.push(Candidate {
            term: "the measuring frame's translation and the base's pitch",
            flag: "--translation --pitch",
            keyword: "translation=True, pitch=True",
            opts: with(&|o| (o.translation, o.pitch) = (true, true)),
        });
    }
    out
}

/// The term whose fit passes the noise test with the smallest chi-square;
/// failing that, the one that at least halves the failed fit's
/// `failed_chi_square`. Each fit starts from the failed one's material.
pub fn suggest(rod: &Rod, experiments: &[Experiment], opts: &FitOptions, failed: &Fit, failed_chi_square: f64, model_error_m: f64) -> Option<Suggestion> {
    let v = &failed.values;
    let tried: Vec<Suggestion> = candidates(rod, experiments, opts)
        .into_iter()
        .filter_map(|c| {
            let o = FitOptions { starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..c.opts };
            let fit = identify::fit::fit(rod, experiments, &o, |_| {}).ok()?;
            let n = noise_test(experiments, &fit, model_error_m)?;
            Some(Suggestion { term: c.term.into(), flag: c.flag.into(), keyword: c.keyword.into(), chi_square: n.chi_square, dof: n.dof, passed: n.passed() })
        })
        .collect();
    let best = |pass: bool| tried.iter().filter(|s| s.passed == pass).min_by(|a, b| a.chi_square.total_cmp(&b.chi_square)).cloned();
    best(true).or_else(|| best(false).filter(|s| s.chi_square < 0.5 * failed_chi_square))
}
