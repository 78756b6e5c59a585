//! A whole identification study (fit, fit with nuisance parameters,
//! leave-one-out, the paper's parameters) and its `identified.toml`.

use crate::data::Experiment;
use crate::fit::{
    cross_validate, cv_model_error_m, cv_rms_with_se_mm, fit, jackknife_sd, leave_one_out, lowest_finite, one_standard_error_choice, prediction_uncertainty,
    rms, t975, Estimate, Fit, FitError, FitOptions, LooResult, StartOutcome,
};
use crate::problem::{Geometry, Layout, ModelError, Problem, Values};
use crate::step::Step;
use lie::Vec3;
use rod::Rod;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Predictions with some fixed parameter values.
#[derive(Clone, Debug)]
pub struct Evaluated {
    pub values: Values,
    pub predicted: Vec<Vec<Vec3>>,
    pub errors_mm: Vec<Vec<f64>>,
    /// RMS over the experiments whose equilibrium was found.
    pub rms_error_mm: f64,
    pub shapes: Vec<Vec<Vec3>>,
    /// Experiments without equilibrium (NaN errors, empty shape).
    pub failures: usize,
    /// Why, one line per experiment without equilibrium.
    pub failure_reasons: Vec<String>,
}

/// Everything the report and `identified.toml` need.
#[derive(Clone, Debug)]
pub struct Study {
    pub fit: Fit,
    pub shapes: Vec<Vec<Vec3>>,
    pub with_nuisance: Option<Fit>,
    pub loo: Vec<LooResult>,
    /// Jackknife intervals from the leave-one-out fits (three or more).
    pub jackknife: Option<JackknifeOut>,
    pub reference: Option<Evaluated>,
    /// What leave-one-out shows the main fit misses beyond its prediction
    /// bands, per coordinate at the tip \[m\] (less towards the clamp:
    /// [`crate::fit::cv_model_error_m`]; 0 without leave-one-out).
    pub cv_model_error_m: f64,
}

/// 95 % intervals from the spread of the leave-one-out fits (jackknife):
/// they hold when the residuals are not independent noise (model error),
/// which the Gauss-Newton intervals assume.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JackknifeOut {
    /// Leave-one-experiment-out fits made.
    pub fits: usize,
    /// Jackknife 95 % interval of E \[Pa\].
    pub e_pa_ci95: [f64; 2],
    /// Jackknife 95 % interval of G \[Pa\].
    pub g_pa_ci95: [f64; 2],
    /// Jackknife 95 % interval of rho \[kg/m^3\].
    pub rho_kg_m3_ci95: [f64; 2],
}

/// The jackknife intervals around the full fit, and a warning where they
/// are much wider than the Gauss-Newton ones.
fn jackknife(main: &mut Fit, loo: &[LooResult]) -> Option<JackknifeOut> {
    let sd = jackknife_sd(loo)?;
    let fits = loo.iter().filter(|l| l.e_pa > 0.0).count();
    let t = t975(fits - 1);
    let ci = |value: f64, sd: f64| [value * (-t * sd).exp(), value * (t * sd).exp()];
    let v = main.values.clone();
    // Fewer fits make the jackknife's own spread too uncertain to warn on.
    let judged = if fits >= 6 { vec![("E", main.e_pa, sd[0]), ("rho", main.rho_kg_m3, sd[2])] } else { vec![] };
    for (name, est, s) in judged {
        let gauss_newton = (est.ci95_high / est.value).ln();
        if gauss_newton.is_finite() && t * s > 3.0 * gauss_newton {
            main.warnings.push(format!(
                "the leave-one-out (jackknife) interval of {name} is {:.1} times wider than the Gauss-Newton one: the residuals are more than noise (model error); trust the wider",
                t * s / gauss_newton
            ));
        }
    }
    Some(JackknifeOut { fits, e_pa_ci95: ci(v.e_pa, sd[0]), g_pa_ci95: ci(v.g_pa, sd[1]), rho_kg_m3_ci95: ci(v.rho_kg_m3, sd[2]) })
}

/// Evaluates fixed parameter values on the experiments.
pub fn evaluate_values(rod: &Rod, experiments: &[Experiment], values: &Values) -> Result<Evaluated, ModelError> {
    let layout = Layout::all(rod.cables.len());
    let mut predicted = vec![];
    let mut errors_mm = vec![];
    let mut shapes = vec![];
    let mut failures = 0;
    let mut failure_reasons = vec![];
    // One experiment at a time: the model may not reach equilibrium for some.
    for e in experiments {
        let problem = Problem::new(rod, std::slice::from_ref(e), layout, values);
        match problem.evaluate(&problem.params(values), false) {
            Ok(ev) => {
                errors_mm.push(e.measurements.iter().zip(&ev.predicted[0]).map(|(m, p)| m.miss(p).norm() * 1e3).collect());
                shapes.push(problem.shape(0, &ev.q[0], values));
                predicted.push(ev.predicted[0].clone());
            }
            Err(why) => {
                failures += 1;
                failure_reasons.push(why.to_string());
                let n = e.measurements.len();
                errors_mm.push(vec![f64::NAN; n]);
                predicted.push(vec![Vec3::from_element(f64::NAN); n]);
                shapes.push(vec![]);
            }
        }
    }
    if failures == experiments.len() {
        return Err(ModelError::NoExperimentSolves);
    }
    let all: Vec<f64> = errors_mm.iter().flatten().cloned().filter(|x: &f64| x.is_finite()).collect();
    let rms = (all.iter().map(|x| x * x).sum::<f64>() / all.len() as f64).sqrt();
    Ok(Evaluated { values: values.clone(), predicted, errors_mm, rms_error_mm: rms, shapes, failures, failure_reasons })
}

/// Runs the study. `nuisance_too` adds a second fit with frame translation
/// and base pitch (or, when `opts` already has them, one without).
pub fn run_study(
    rod: &Rod,
    experiments: &[Experiment],
    opts: &FitOptions,
    nuisance_too: bool,
    with_loo: bool,
    reference: Option<Values>,
    mut progress: impl FnMut(Step),
) -> Result<Study, FitError> {
    let mut main = fit(rod, experiments, opts, &mut progress)?;
    let shapes = evaluate_values(rod, experiments, &main.values)?.shapes;
    let with_nuisance = if nuisance_too {
        progress(Step::Stage("fit with nuisance parameters"));
        let v = &main.values;
        let o = FitOptions { translation: !opts.translation, pitch: !opts.pitch, starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..opts.clone() };
        fit(rod, experiments, &o, |_| {}).ok()
    } else {
        None
    };
    let loo = if with_loo { leave_one_out(rod, experiments, &main, opts, &mut progress) } else { vec![] };
    let jackknife = jackknife(&mut main, &loo);
    let reference = reference.and_then(|v| evaluate_values(rod, experiments, &v).ok());
    let loo_errors_mm: Vec<Vec<f64>> = loo.iter().map(|l| l.errors_mm.clone()).collect();
    let cv_model_error_m = cv_model_error_m(rod, experiments, &main.values, &main.uncertainty(), &loo_errors_mm);
    Ok(Study { fit: main, shapes, with_nuisance, loo, jackknife, reference, cv_model_error_m })
}

/// One model variant judged by prediction: fitted on all experiments, and
/// by leave-one-out (each experiment predicted by a fit without it).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VariantOut {
    /// The variant's name (`--params FILE:NAME` applies it).
    pub name: String,
    /// What it fits beyond E, G, rho (geometry nuisance parameters).
    pub parameters: Vec<String>,
    /// Its E \[Pa\].
    pub e_pa: f64,
    /// Its cables' common offset \[m\].
    pub cable_offset_m: f64,
    /// Its radius scale.
    #[serde(default = "one")]
    pub radius_scale: f64,
    /// Per-cable offsets \[m\] (empty when not fitted).
    #[serde(default)]
    pub cable_offsets_m: Vec<f64>,
    /// Per-cable turns about the rod's axis \[rad\] (empty when not fitted).
    #[serde(default)]
    pub cable_angles_rad: Vec<f64>,
    /// RMS of the fit's own residuals \[mm\].
    pub rms_error_mm: f64,
    /// Cross-validation folds: the number of experiments (leave-one-out),
    /// 5 beyond 12 experiments.
    pub folds: usize,
    /// RMS of the cross-validated prediction errors over every point \[mm\].
    pub loo_rms_mm: f64,
    /// The worst experiment's leave-one-out RMS \[mm\].
    pub loo_worst_mm: f64,
    /// Per experiment, its leave-one-out RMS \[mm\].
    pub loo_per_experiment_mm: Vec<f64>,
    /// Standard error of `loo_rms_mm` \[mm\], the experiments as the
    /// independent units (NaN: fewer than two).
    #[serde(default = "nan")]
    pub loo_rms_se_mm: f64,
    /// What cross-validation shows this variant misses beyond its
    /// prediction bands, per coordinate at the tip \[m\]; added to its
    /// bands.
    #[serde(default)]
    pub model_error_m: f64,
    /// This variant's own fit uncertainty: the bands when it is selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<BandOut>,
    /// Every value of this variant's fit on all the experiments, with
    /// intervals (what `--params FILE:NAME` applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<Parameters>,
    /// Fitted under the other elastic law than the rod file's (compared,
    /// not recommended: the law is the rod file's choice).
    #[serde(default)]
    pub other_law: bool,
}

/// A fit's uncertainty as written to `identified.toml` (what prediction
/// bands need).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BandOut {
    /// The parameters of the covariance, in order.
    pub parameter_names: Vec<String>,
    /// Covariance of those parameters (log scale for E, G, rho).
    pub covariance: Vec<Vec<f64>>,
    /// Residual degrees of freedom.
    pub dof: usize,
    /// RMS of the measurements' standard deviations \[m\].
    pub measurement_sigma_m: f64,
    /// Factor of the residuals over the declared noise.
    pub residual_scale: f64,
    /// Parameters the data never saw (prior only).
    #[serde(default)]
    pub prior_only: Vec<String>,
}

impl BandOut {
    fn of(f: &Fit) -> BandOut {
        BandOut {
            parameter_names: f.parameter_names.iter().map(|s| s.to_string()).collect(),
            covariance: f.covariance.row_iter().map(|r| r.iter().cloned().collect()).collect(),
            dof: f.dof,
            measurement_sigma_m: f.measurement_sigma_m,
            residual_scale: f.residual_scale,
            prior_only: f.prior_only.clone(),
        }
    }

    /// The prediction uncertainty with `model_error_m` added; None when
    /// the file's numbers do not make one.
    pub fn uncertainty(&self, model_error_m: f64) -> Option<crate::fit::Uncertainty> {
        let np = self.parameter_names.len();
        if np == 0
            || self.dof == 0
            || self.measurement_sigma_m.is_nan()
            || self.measurement_sigma_m <= 0.0
            || self.covariance.len() != np
            || self.covariance.iter().any(|r| r.len() != np)
        {
            return None;
        }
        let layout = Layout::from_names(&self.parameter_names)?;
        let covariance = nalgebra::DMatrix::from_fn(np, np, |a, b| self.covariance[a][b]);
        Some(prediction_uncertainty(layout, &covariance, self.dof, self.measurement_sigma_m, self.residual_scale, model_error_m, &self.prior_only))
    }
}

/// Priors of the geometry parameters a variant may fit (mean, sd).
#[derive(Clone, Copy, Debug, Default)]
pub struct GeometryPriors {
    pub cable_offset_m: Option<(f64, f64)>,
    pub radius_scale: Option<(f64, f64)>,
    /// Each cable's turn about the rod's axis \[rad\].
    pub cable_angle_rad: Option<(f64, f64)>,
    /// The cables' friction coefficient in their channels or guides.
    pub friction_mu: Option<(f64, f64)>,
}

/// A model variant: what it fits beyond E, G, rho (priors: mean, sd).
#[derive(Clone, Copy, Debug, Default)]
struct Variant {
    name: &'static str,
    frame: bool,
    cable_offset: Option<(f64, f64)>,
    radius_scale: Option<(f64, f64)>,
    offset_each: Option<(f64, f64)>,
    angle_each: Option<(f64, f64)>,
    friction: Option<(f64, f64)>,
}

/// The variants worth comparing for `rod` and its data: none, the
/// measurement frame, and with cables pulled, their offsets, angles and
/// friction, and the section's scale, each where a prior allows.
fn variants_for(rod: &Rod, experiments: &[Experiment], priors: GeometryPriors) -> Vec<Variant> {
    let with_cables = !rod.cables.is_empty() && experiments.iter().any(|e| e.tensions_n.iter().any(|t| *t != 0.0));
    let offset = if with_cables { priors.cable_offset_m } else { None };
    let angle = if with_cables { priors.cable_angle_rad } else { None };
    let friction = if with_cables { priors.friction_mu } else { None };
    let mut variants =
        vec![Variant { name: "no nuisance", ..Variant::default() }, Variant { name: "frame (translation + pitch)", frame: true, ..Variant::default() }];
    if offset.is_some() {
        variants.push(Variant { name: "cable offset", cable_offset: offset, ..Variant::default() });
        variants.push(Variant { name: "frame + cable offset", frame: true, cable_offset: offset, ..Variant::default() });
        if rod.cables.len() > 1 {
            variants.push(Variant { name: "frame + offset per cable", frame: true, offset_each: offset, ..Variant::default() });
        }
    }
    if priors.radius_scale.is_some() {
        variants.push(Variant { name: "frame + geometry", frame: true, cable_offset: offset, radius_scale: priors.radius_scale, ..Variant::default() });
    }
    if angle.is_some() {
        variants.push(Variant { name: "frame + angle per cable", frame: true, angle_each: angle, ..Variant::default() });
        if offset.is_some() {
            variants.push(Variant { name: "frame + offset, angle per cable", frame: true, offset_each: offset, angle_each: angle, ..Variant::default() });
        }
    }
    if friction.is_some() {
        variants.push(Variant { name: "frame + friction in the guides", frame: true, friction, ..Variant::default() });
    }
    variants
}

/// Fits the variants (none, the frame, cable offsets, angles, friction and
/// the section's scale, each where a prior allows) and judges each by its
/// cross-validated prediction error (leave-one-out; 5 folds beyond 12
/// experiments), not its residual (a model with more parameters always
/// fits better). Returns them and the index of the one that predicts best.
pub fn compare_variants(
    rod: &Rod,
    experiments: &[Experiment],
    opts: &FitOptions,
    priors: GeometryPriors,
    compare_laws: bool,
    mut progress: impl FnMut(Step),
) -> (Vec<VariantOut>, Option<usize>) {
    let variants = variants_for(rod, experiments, priors);
    // With `compare_laws`, each variant also under the other law (linear
    // <-> neo-Hookean, same parameters) where the section can be
    // integrated: whether large strains in the data call for it.
    let other_law = match rod.elastic_law {
        rod::ElasticLaw::Linear => rod::ElasticLaw::NEO_HOOKEAN,
        rod::ElasticLaw::Hyperelastic { .. } => rod::ElasticLaw::Linear,
    };
    let twin = Rod { elastic_law: other_law, ..rod.clone() };
    let mut laws = vec![(rod, String::new(), false)];
    if compare_laws && rod::fibre::section_rule(&rod.cross_section, 0.0, rod.length_m).is_some() {
        laws.push((&twin, format!(" ({})", other_law.name()), true));
    }
    let variants: Vec<_> = laws.iter().flat_map(|(r, suffix, other)| variants.iter().map(move |v| (*r, format!("{}{suffix}", v.name), *other, *v))).collect();
    // Leave-one-out, or 5-fold beyond 12 experiments (each fold is a fit).
    let folds = if experiments.len() > 12 { 5 } else { experiments.len() };
    let mut out = vec![];
    let total = variants.len();
    for (i, (rod, name, other_law, v)) in variants.into_iter().enumerate() {
        progress(Step::Counted { stage: "variants", done: i + 1, total });
        progress(Step::Stage(&format!("variant {name}")));
        let o = FitOptions {
            translation: v.frame,
            pitch: v.frame,
            cable_offset_prior: v.cable_offset,
            radius_scale_prior: v.radius_scale,
            cable_offset_each_prior: v.offset_each,
            cable_angle_each_prior: v.angle_each,
            friction_prior: v.friction,
            ..opts.clone()
        };
        let Ok(f) = fit(rod, experiments, &o, |_| {}) else { continue };
        let predicted = cross_validate(rod, experiments, &f, &o, folds);
        let per: Vec<f64> = predicted.iter().map(|e| rms(e)).collect();
        let (loo_rms_mm, loo_rms_se_mm) = cv_rms_with_se_mm(&predicted);
        let model_error_m = cv_model_error_m(rod, experiments, &f.values, &f.uncertainty(), &predicted);
        out.push(VariantOut {
            name,
            parameters: f.parameter_names.iter().map(|s| s.to_string()).collect(),
            e_pa: f.values.e_pa,
            cable_offset_m: f.values.cable_offset_m,
            radius_scale: f.values.radius_scale,
            cable_offsets_m: f.values.cable_offsets_m.clone(),
            cable_angles_rad: f.values.cable_angles_rad.clone(),
            rms_error_mm: f.rms_error_mm,
            folds,
            loo_rms_mm,
            loo_worst_mm: per.iter().cloned().fold(f64::NAN, f64::max),
            loo_per_experiment_mm: per,
            loo_rms_se_mm,
            model_error_m,
            band: Some(BandOut::of(&f)),
            fitted: Some(parameters(&f)),
            other_law,
        });
    }
    let recommended = recommend(&out);
    (out, recommended)
}

/// The variant to recommend: the simplest whose cross-validated error is
/// within one standard error of the best ([`one_standard_error_choice`]),
/// under the rod file's law.
pub fn recommend(variants: &[VariantOut]) -> Option<usize> {
    let own: Vec<usize> = (0..variants.len()).filter(|&i| !variants[i].other_law).collect();
    let candidates: Vec<(usize, f64, f64)> = own.iter().map(|&i| (variants[i].parameters.len(), variants[i].loo_rms_mm, variants[i].loo_rms_se_mm)).collect();
    one_standard_error_choice(&candidates).map(|k| own[k])
}

/// The variant with the lowest cross-validated error under the rod file's
/// law (`other_law = false`) or the other one (not necessarily the
/// recommended one).
pub fn lowest_cv(variants: &[VariantOut], other_law: bool) -> Option<usize> {
    lowest_finite(variants.iter().map(|v| if v.other_law == other_law { v.loo_rms_mm } else { f64::NAN }))
}

/// What the variants under the other law say, in one sentence: their
/// lowest CV error against the rod file's law's, and whether the data
/// favour it by more than one standard error. `None` when not compared.
pub fn law_comparison(variants: &[VariantOut]) -> Option<String> {
    let (own, other) = (&variants[lowest_cv(variants, false)?], &variants[lowest_cv(variants, true)?]);
    let law = |v: &VariantOut| v.fitted.as_ref().and_then(|p| p.elastic_law().ok().flatten()).map_or("?".to_string(), |l| l.name());
    let key = other.fitted.as_ref().and_then(|p| p.law.clone()).unwrap_or_default();
    let verdict = if other.loo_rms_mm + other.loo_rms_se_mm < own.loo_rms_mm {
        format!("the data favour the {} law by more than one standard error: set [material] law = \"{key}\" in the rod file to use it", law(other))
    } else if own.loo_rms_mm + own.loo_rms_se_mm < other.loo_rms_mm {
        format!("the data favour the rod file's {} law", law(own))
    } else {
        "within one standard error of each other: keep the rod file's law".to_string()
    };
    Some(format!(
        "elastic law: lowest CV {:.2} +- {:.2} mm under the {} law ({}), {:.2} +- {:.2} mm under the rod file's {} law ({}); {verdict}",
        other.loo_rms_mm,
        other.loo_rms_se_mm,
        law(other),
        other.name,
        own.loo_rms_mm,
        own.loo_rms_se_mm,
        law(own),
        own.name
    ))
}

/// An estimate and its 95 % interval.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EstimateOut {
    /// The estimate (SI units).
    pub value: f64,
    /// \[low, high\]; NaN when the parameter was held fixed, \[0, inf\] when the data do not bound it.
    pub ci95: [f64; 2],
    /// False when the data do not bound the value (the interval is then
    /// no information: "not determined by these data").
    #[serde(default = "yes")]
    pub determined: bool,
}

fn yes() -> bool {
    true
}

impl From<Estimate> for EstimateOut {
    /// An interval the data do not bound is written as what it is, [0,
    /// inf]: its bounds (1e-64 to 1e73, say) are round-off, not numbers to
    /// print with 70 digits.
    fn from(e: Estimate) -> Self {
        let determined = e.held() || e.determined();
        let ci95 = if determined { [e.ci95_low, e.ci95_high] } else { [0.0, f64::INFINITY] };
        Self { value: e.value, ci95, determined }
    }
}

/// The identified values: what `--params` applies.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Parameters {
    /// Young's modulus E \[Pa\].
    pub e_pa: EstimateOut,
    /// Shear modulus G \[Pa\].
    pub g_pa: EstimateOut,
    /// Density \[kg/m^3\].
    pub rho_kg_m3: EstimateOut,
    /// True when rho was not estimated (gravity-only data).
    pub rho_fixed: bool,
    /// Nuisance parameters of this fit (zero when not estimated).
    pub frame_translation_m: [f64; 3],
    /// The base's fitted pitch \[rad\] (0 when not estimated).
    pub base_pitch_rad: f64,
    /// The cables' fitted outward offset from the rod file's position \[m\]
    /// (0 when not fitted) and its 95 % interval.
    #[serde(default)]
    pub cable_offset_m: f64,
    /// Its 95 % interval \[m\].
    #[serde(default = "nan_pair")]
    pub cable_offset_ci95_m: [f64; 2],
    /// The fitted scale of the section's radii (1 when not fitted) and its
    /// 95 % interval.
    #[serde(default = "one")]
    pub radius_scale: f64,
    /// Its 95 % interval.
    #[serde(default = "nan_pair")]
    pub radius_scale_ci95: [f64; 2],
    /// Per-cable outward offsets \[m\], added to `cable_offset_m` (empty
    /// when not fitted), and their 95 % intervals.
    #[serde(default)]
    pub cable_offsets_m: Vec<f64>,
    /// Their 95 % intervals \[m\].
    #[serde(default)]
    pub cable_offsets_ci95_m: Vec<[f64; 2]>,
    /// Per-cable turns about the rod's axis from the rod file's angles
    /// \[rad\] (empty when not fitted), and their 95 % intervals.
    #[serde(default)]
    pub cable_angles_rad: Vec<f64>,
    /// Their 95 % intervals \[rad\].
    #[serde(default)]
    pub cable_angles_ci95_rad: Vec<[f64; 2]>,
    /// Per experiment (in the fit's order), its tip clamp's turn about the
    /// world's y axis from what the experiment gives \[rad\] (empty when
    /// not fitted: `--fit-clamp-angle`), and their 95 % intervals. A
    /// nuisance of those experiments: predictions of others take none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clamp_angles_rad: Vec<f64>,
    /// Their 95 % intervals \[rad\].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clamp_angles_ci95_rad: Vec<[f64; 2]>,
    /// The cables' fitted friction coefficient in their channels (absent
    /// when not fitted: the rod file's friction_mu) and its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friction_mu: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub friction_mu_ci95: Option<[f64; 2]>,
    /// The body's law of this fit, as a rod file spells it (`linear`,
    /// `neo_hookean`, `mooney_rivlin` with `c01_fraction`); absent: the
    /// rod file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub law: Option<String>,
    /// C01 / (C10 + C01) of a Mooney-Rivlin law.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c01_fraction: Option<f64>,
}

impl Parameters {
    /// The law these values belong to (`None`: the rod file's); an error
    /// names the field.
    pub fn elastic_law(&self) -> Result<Option<rod::ElasticLaw>, String> {
        match &self.law {
            None => Ok(None),
            Some(law) => rod::ElasticLaw::from_key(Some(law), self.c01_fraction).map(Some).map_err(|(field, message)| format!("{field}: {message}")),
        }
    }

    /// The fitted values (material and nuisance parameters).
    pub fn values(&self) -> Values {
        Values {
            e_pa: self.e_pa.value,
            g_pa: self.g_pa.value,
            rho_kg_m3: self.rho_kg_m3.value,
            translation_m: Vec3::from(self.frame_translation_m),
            pitch_rad: self.base_pitch_rad,
            cable_offset_m: self.cable_offset_m,
            radius_scale: self.radius_scale,
            cable_offsets_m: self.cable_offsets_m.clone(),
            cable_angles_rad: self.cable_angles_rad.clone(),
            clamp_angles_rad: self.clamp_angles_rad.clone(),
            friction_mu: self.friction_mu,
        }
    }
}

fn nan() -> f64 {
    f64::NAN
}

fn nan_pair() -> [f64; 2] {
    [f64::NAN; 2]
}

fn one() -> f64 {
    1.0
}

/// How the fit went: `[fit]`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FitInfo {
    /// The fitted parameters, in the order of the matrices.
    pub parameter_names: Vec<String>,
    /// Their correlation matrix.
    pub correlation: Vec<Vec<f64>>,
    /// Covariance of the parameters (ln E, ln G, ln rho, nuisance), for
    /// prediction bands; infinite variance along unseen directions.
    #[serde(default)]
    pub covariance: Vec<Vec<f64>>,
    /// Residual degrees of freedom.
    #[serde(default)]
    pub dof: usize,
    /// RMS of the measurements' standard deviations \[m\] (a new
    /// measurement's noise is residual_scale times it).
    #[serde(default)]
    pub measurement_sigma_m: f64,
    /// Condition number of the Jacobian (large: parameters the data barely separate).
    pub condition_number: f64,
    /// RMS of the weighted residuals (1: as noisy as declared).
    pub residual_scale: f64,
    /// The chi-square test of the residuals against the declared noise
    /// (markers' sigma with `model_error_m` in quadrature): the statistic
    /// and the chance of one at least as large (NaN: not tested).
    #[serde(default = "nan")]
    pub chi_square: f64,
    /// Its p-value.
    #[serde(default = "nan")]
    pub chi_square_p: f64,
    /// The rod file's `[identify] model_error_m` used \[m\].
    #[serde(default)]
    pub model_error_m: f64,
    /// What leave-one-out shows the main fit misses beyond its prediction
    /// bands, per coordinate at the tip \[m\] (0: nothing, or no
    /// leave-one-out).
    #[serde(default)]
    pub cv_model_error_m: f64,
    /// Parameters the data never saw (prior only).
    #[serde(default)]
    pub prior_only: Vec<String>,
    /// Final cost (half the sum of squared weighted residuals).
    pub cost: f64,
    /// RMS of the marker residuals \[mm\].
    pub rms_error_mm: f64,
    /// Levenberg-Marquardt iterations.
    pub iterations: u64,
    /// Static equilibria solved.
    pub static_solves: usize,
    /// Wall time of the fit \[s\].
    pub wall_time_s: f64,
}

/// One experiment's errors: `[[experiment]]`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExperimentOut {
    /// The experiment (or hold) name.
    pub id: String,
    /// Per marker, the fit's error \[mm\].
    pub errors_mm: Vec<f64>,
    /// Per marker, the leave-one-out prediction error \[mm\] (empty without).
    pub loo_errors_mm: Vec<f64>,
    /// Per marker, the error with the reference values \[mm\] (empty without).
    pub reference_errors_mm: Vec<f64>,
    /// How long its loads had acted at its middle \[s\] (a session's hold):
    /// what a viscoelastic law's creep is read at.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub loaded_for_s: Option<f64>,
    /// The modulus the fit gave this hold over the relaxed E: the rod
    /// file's viscoelastic law crept for `loaded_for_s` (absent: 1, an
    /// elastic rod or a hold of unknown age).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hold_modulus_ratio: Option<f64>,
}

/// The reference values (a published table's), judged on the same data.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReferenceOut {
    /// The reference E \[Pa\] (`--reference`).
    pub e_pa: f64,
    /// The reference G \[Pa\].
    pub g_pa: f64,
    /// The reference rho \[kg/m^3\].
    pub rho_kg_m3: f64,
    /// Over the experiments whose equilibrium was found.
    pub rms_error_mm: f64,
    /// Experiments where the reference values found no equilibrium.
    pub experiments_without_equilibrium: usize,
}

/// A second fit from another start that ended elsewhere (a second minimum).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AlternativeOut {
    /// Its values.
    pub parameters: Parameters,
    /// Its RMS marker error \[mm\].
    pub rms_error_mm: f64,
    /// What was wrong with it.
    pub warnings: Vec<String>,
}

/// An `identified.toml` that cannot be read, or belongs to another rod.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ParamsFileError {
    pub file: String,
    pub message: String,
}

impl ParamsFileError {
    pub fn new(path: &Path, message: impl Into<String>) -> ParamsFileError {
        ParamsFileError { file: path.display().to_string(), message: message.into() }
    }
}

impl fault::Fault for ParamsFileError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

/// The contents of `identified.toml`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdentifiedFile {
    /// The rodlab that wrote the file.
    pub rodlab_version: String,
    /// The rod file fitted.
    pub rod_file: String,
    /// Fingerprint of the rod's shape (length, radii, hole, core): what
    /// the parameters belong to; see [`rod_geometry`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rod_geometry: Option<String>,
    /// Why the identification failed (a value outside its physical
    /// range): the values are kept for inspection, never for use.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub failed: Option<String>,
    /// Where the experiments came from (a directory, or sessions).
    pub experiments_dir: String,
    /// Everything the fit found doubtful, one line each.
    pub warnings: Vec<String>,
    /// The identified values.
    pub parameters: Parameters,
    /// How the fit went.
    pub fit: FitInfo,
    /// A second minimum, when one was found.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub alternative_fit: Option<AlternativeOut>,
    /// The reference values, when `--reference` was given.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reference: Option<ReferenceOut>,
    /// Jackknife intervals, when asked.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub jackknife: Option<JackknifeOut>,
    /// Model variants judged by leave-one-out (`--compare-variants`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub variant: Vec<VariantOut>,
    /// The variant cross-validation recommends.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recommended_variant: Option<String>,
    /// Which fit `[parameters]` holds: "requested" (the options asked
    /// for), or the name of the recommended variant.
    #[serde(default = "requested")]
    pub parameters_from: String,
    /// The requested fit's values, kept when `[parameters]` hold the
    /// recommended variant's (`[fit]` and `[[experiment]]` describe it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub requested_parameters: Option<Parameters>,
    /// The flange sensor's bias fitted per session (`bias = "fit"`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub sensor_bias: Vec<SensorBiasOut>,
    /// Critical values (`critical.csv`): measured and fitted.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub critical: Vec<crate::fit::CriticalFit>,
    /// Per experiment, the errors.
    pub experiment: Vec<ExperimentOut>,
    /// Each start of the multi-start fit and where it ended.
    pub start: Vec<StartOutcome>,
    /// What the statics cannot see, fitted from recorded motion
    /// (`identify --dynamic`): the table's friction and the rod's damping.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dynamic: Option<DynamicOut>,
}

/// Friction and damping fitted to recorded sessions by simulating them
/// (`rodlab identify --dynamic`), E, G, rho held at `[parameters]`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DynamicOut {
    /// The recorded sessions fitted.
    pub sessions: Vec<String>,
    /// The scene their replays used.
    pub scene_file: String,
    /// The table's friction coefficient, its 95 % interval, and whether
    /// the data determine it: a session whose tip never slides only bounds
    /// it from below (`mu_at_least`: the largest tangential / normal ratio
    /// the stick needed), and `mu` is then that bound.
    pub mu: f64,
    /// Its 95 % interval.
    pub mu_ci95: [f64; 2],
    /// False when no tip slid: mu is then only a lower bound.
    pub mu_determined: bool,
    /// The largest tangential / normal ratio the stick needed (a lower bound of mu).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mu_at_least: Option<f64>,
    /// The scene has no table: mu is not a parameter (`mu` is NaN), the
    /// motion in air fits the damping ratio (and with it E).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub no_table: bool,
    /// Damping ratio of the first bending mode and its 95 % interval.
    pub damping_ratio: f64,
    /// Its 95 % interval.
    pub damping_ratio_ci95: [f64; 2],
    /// Correlation of the two estimates (log scale; NaN when one is held).
    pub correlation_mu_damping: f64,
    /// The viscoelastic branches (a Prony series beside the relaxed E and
    /// G), fitted with the motion when the rod file's `[damping]` has
    /// `branches`; validate and simulate then use them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub branches: Vec<BranchOut>,
    /// The constant-loss law fitted, when the rod file's `[damping]` has
    /// `constant_loss` (`branches` are then its branches).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub constant_loss: Option<ConstantLossOut>,
    /// `--compare-variants`: each law fitted without each session and
    /// judged on it (empty when not asked).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub variants: Vec<DynamicVariantOut>,
    /// The law whose held-out replays missed least.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recommended_law: Option<String>,
    /// The static holds beside the releases (`--match-ring-down` with
    /// `--fit-stiffness`): the modulus the fitted law gives them against
    /// the static fit's.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub static_holds: Option<StaticHoldsOut>,
    /// Whether the residual is what the markers' noise (and the rod file's
    /// model error) leaves, as the static fit's chi-square test asks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub noise_test: Option<DynamicNoiseTest>,
    /// Per release: the ring-down recorded and replayed with the fitted
    /// values (its tip marker along gravity, the first three cycles).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub ring_downs: Vec<RingDownOut>,
    /// Per session (in `sessions`' order): how long after the robot's
    /// clock its markers' stamps were taken, fitted \[s\] (0 where held:
    /// `--hold-marker-delay`, or markers that do not move).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub marker_delay_s: Vec<f64>,
    /// The delays' 95 % intervals \[s\] (NaN where held).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub marker_delay_ci95_s: Vec<[f64; 2]>,
    /// The body's E when fitted with the motion (`--fit-stiffness`: E and
    /// G scaled together; `[parameters]` then carry them), and its 95 %
    /// interval; absent when held.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub e_pa: Option<f64>,
    /// Its 95 % interval \[Pa\].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub e_pa_ci95: Option<[f64; 2]>,
    /// The body's density when fitted with the motion (`--fit-density`;
    /// `[parameters]` then carry it) \[kg/m^3\]; absent when held.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rho_kg_m3: Option<f64>,
    /// Its 95 % interval \[kg/m^3\].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rho_kg_m3_ci95: Option<[f64; 2]>,
    /// The dry friction of the hook the masses hang on, as a radius (its
    /// moment over the hung weight) \[m\]: fitted (`--fit-hook-friction`)
    /// or the loads file's; absent without one. A replay takes it from the
    /// loads file's `hook_friction_radius_m`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hook_friction_radius_m: Option<f64>,
    /// Its 95 % interval when fitted \[m\].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hook_friction_radius_ci95_m: Option<[f64; 2]>,
    /// RMS of the tracked markers minus the simulated ones over all
    /// frames, with the starting values and with the fitted ones \[m\].
    pub marker_rms_start_m: f64,
    /// With the fitted values \[m\].
    pub marker_rms_m: f64,
    /// RMS of the flange force readings minus the simulated base force
    /// (each session's constant sensor bias removed) with the fitted
    /// values \[N\], and the sensors' streams (session: stream).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub force_rms_n: Option<f64>,
    /// The flange sensors' streams (session: stream).
    #[serde(default)]
    pub force_streams: Vec<String>,
    /// Least-squares iterations after the scan, and simulations in all.
    #[serde(default)]
    pub iterations: usize,
    /// Simulations run in all.
    pub simulations: usize,
    /// Wall time \[s\].
    pub wall_time_s: f64,
}

/// One release's first cycles, recorded and replayed (`identify --dynamic`).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RingDownOut {
    /// The release (session) read.
    pub session: String,
    /// Frequency of the recorded motion \[Hz\].
    pub recorded_hz: f64,
    /// Frequency of the replay with the fitted values \[Hz\].
    pub replayed_hz: f64,
    /// Logarithmic decrement per cycle, recorded \[1\].
    pub recorded_log_decrement: f64,
    /// Logarithmic decrement per cycle, replayed \[1\].
    pub replayed_log_decrement: f64,
    /// The cycles the decrements are read over (from the first crossing
    /// of the settled level).
    pub cycles: usize,
    /// Each cycle's swing, peak to peak, recorded \[m\]: the envelope, when
    /// `--ring-down-cycles` reads more than `cycles` (else empty).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub recorded_swings_m: Vec<f64>,
    /// The replay's swings, read as the recording's \[m\].
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub replayed_swings_m: Vec<f64>,
}

impl RingDownOut {
    /// The envelope's decrements, cycle by cycle (ln of each swing over
    /// the next), recorded and replayed: empty without an envelope.
    pub fn envelope_decrements(&self) -> (Vec<f64>, Vec<f64>) {
        let per_cycle = |s: &[f64]| s.windows(2).map(|w| (w[0] / w[1]).ln()).collect();
        (per_cycle(&self.recorded_swings_m), per_cycle(&self.replayed_swings_m))
    }

    /// The replay's frequency against the recording's, relative \[1\].
    pub fn frequency_error(&self) -> f64 {
        self.replayed_hz / self.recorded_hz - 1.0
    }

    /// The replay's decrement against the recording's, relative \[1\].
    pub fn decrement_error(&self) -> f64 {
        self.replayed_log_decrement / self.recorded_log_decrement - 1.0
    }
}

/// One law of the material judged by prediction (`identify --dynamic
/// --compare-variants`): fitted to all sessions but one, replayed on it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DynamicVariantOut {
    /// The law ("elastic + damping ratio", "one Maxwell branch", "constant loss", the rod file's).
    pub law: String,
    /// Per session, its replay by the fit without it.
    pub held_out: Vec<HeldOutOut>,
    /// RMS of the held-out replays' marker misses \[m\].
    pub marker_rms_m: f64,
    /// RMS of the held-out ring-downs' misses in the ring-down rows' sigmas
    /// (1 % in frequency, 10 % in decrement), over the sessions that ring
    /// \[1\] (NaN: none does).
    pub ring_down_score: f64,
}

/// A session replayed by a fit that did not see it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeldOutOut {
    /// The session left out.
    pub session: String,
    /// Its markers' RMS miss \[m\].
    pub marker_rms_m: f64,
    /// Its ring-down's frequency, replayed against recorded, relative \[1\] (NaN: no ring).
    pub frequency_error: f64,
    /// Its log decrement, replayed against recorded, relative \[1\] (NaN: no ring).
    pub decrement_error: f64,
}

/// The static holds as the dynamic fit's values see them.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StaticHoldsOut {
    /// The modulus the static fit (`--params`) saw in its holds \[Pa\]
    /// (its E, times the creep ratio it gave them if its rod was
    /// viscoelastic) and its 95 % interval.
    pub static_e_pa: f64,
    /// Its 95 % interval \[Pa\].
    pub static_e_ci95_pa: [f64; 2],
    /// The modulus the fitted law gives the holds \[Pa\]: the relaxed E
    /// times the mean creep ratio at how long each hold had been loaded.
    pub hold_e_pa: f64,
    /// How long the holds had been loaded, on average \[s\].
    pub mean_loaded_for_s: f64,
}

impl StaticHoldsOut {
    /// "the law gives the holds E = 2.61e5 Pa (2.9 s loaded): the static fit's 2.66e5 [2.55e5, 2.78e5] Pa".
    pub fn text(&self) -> String {
        let c = self.static_e_ci95_pa;
        let inside = if self.hold_e_pa >= c[0] && self.hold_e_pa <= c[1] { "inside" } else { "OUTSIDE" };
        format!(
            "the law gives the static holds E = {:.4e} Pa ({:.1} s loaded), {inside} the static fit's {:.4e} [{:.4e}, {:.4e}] Pa",
            self.hold_e_pa, self.mean_loaded_for_s, self.static_e_pa, c[0], c[1]
        )
    }
}

/// A fitted constant-loss law (`[damping] constant_loss`), with 95 % intervals.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConstantLossOut {
    /// Loss modulus over the relaxed modulus inside the band \[1\].
    pub loss_factor: f64,
    /// Its 95 % interval (NaN where held).
    pub loss_factor_ci95: [f64; 2],
    /// The band's shortest relaxation time \[s\] (the rod file's, held).
    pub shortest_time_s: f64,
    /// The band's longest relaxation time \[s\].
    pub longest_time_s: f64,
    /// Its 95 % interval \[s\] (NaN where held).
    pub longest_time_ci95_s: [f64; 2],
    /// The Maxwell branches that carry it.
    pub branches: usize,
}

impl ConstantLossOut {
    /// The law as the rod carries it.
    pub fn law(&self) -> rod::ConstantLoss {
        rod::ConstantLoss { loss_factor: self.loss_factor, shortest_time_s: self.shortest_time_s, longest_time_s: self.longest_time_s, branches: self.branches }
    }

    /// "loss factor 0.110 [0.10, 0.12], band 0.002-0.154 s [0.12, 0.19]".
    pub fn text(&self) -> String {
        let ci = |c: [f64; 2], digits: usize| if c[0].is_finite() { format!(" [{:.digits$}, {:.digits$}]", c[0], c[1]) } else { " (held)".into() };
        format!(
            "loss factor {:.4}{}, relaxation times {:.4} s to {:.4} s{} ({} branches)",
            self.loss_factor,
            ci(self.loss_factor_ci95, 4),
            self.shortest_time_s,
            self.longest_time_s,
            ci(self.longest_time_ci95_s, 4),
            self.branches
        )
    }
}

/// One fitted viscoelastic branch, with 95 % intervals.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BranchOut {
    /// The branch's modulus over the relaxed modulus.
    pub modulus_ratio: f64,
    /// Its 95 % interval (NaN where held).
    pub modulus_ratio_ci95: [f64; 2],
    /// Its relaxation time \[s\].
    pub time_constant_s: f64,
    /// Its 95 % interval \[s\] (NaN where held).
    pub time_constant_ci95_s: [f64; 2],
}

impl BranchOut {
    /// The branch as the rod's law carries it.
    pub fn branch(&self) -> rod::PronyBranch {
        rod::PronyBranch { modulus_ratio: self.modulus_ratio, time_constant_s: self.time_constant_s }
    }

    /// "0.412 [0.40, 0.42] at 0.0512 s [0.050, 0.052]".
    pub fn text(&self) -> String {
        let ci = |c: [f64; 2]| if c[0].is_finite() { format!(" [{:.4}, {:.4}]", c[0], c[1]) } else { " (held)".into() };
        format!("{:.4}{} at {:.4} s{}", self.modulus_ratio, ci(self.modulus_ratio_ci95), self.time_constant_s, ci(self.time_constant_ci95_s))
    }
}

/// The dynamic fit's chi-square: the weighted residual's sum of squares
/// (each marker coordinate over its noise and the rod file's model error
/// in quadrature) against its degrees of freedom.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DynamicNoiseTest {
    /// The weighted residual's sum of squares.
    pub chi_square: f64,
    /// Its degrees of freedom: rows less the parameters fitted (and each
    /// force sensor's bias).
    pub dof: usize,
    /// Chance that noise of the declared size leaves residuals this large.
    pub p: f64,
    /// The residual's RMS over the declared noise (1 when as declared).
    pub scale: f64,
    /// The model error allowed per coordinate \[m\] (`[identify] model_error_m`).
    pub model_error_m: f64,
    /// The chance level below which the fit fails (1e-3, as the static fit's).
    pub level: f64,
}

impl DynamicNoiseTest {
    pub fn passed(&self) -> bool {
        self.p >= self.level
    }
}

impl DynamicOut {
    /// One line: the values with their intervals, the fit's figures.
    pub fn summary(&self) -> String {
        let ci = |c: [f64; 2]| if c[0].is_finite() { format!("[{:.4}, {:.4}]", c[0], c[1]) } else { "(held)".into() };
        let mu = match self.mu_at_least {
            _ if self.no_table => "no table (mu not a parameter)".to_string(),
            Some(b) => format!("mu at least {b:.4} (not determined)"),
            None => format!("mu {:.4} {}", self.mu, ci(self.mu_ci95)),
        };
        let branches: String = match &self.constant_loss {
            Some(c) => format!(", constant loss: {}", c.text()),
            None => self.branches.iter().enumerate().map(|(i, b)| format!(", branch {} {}", i + 1, b.text())).collect(),
        };
        let test = self.noise_test.as_ref().map_or(String::new(), |t| {
            format!(", chi-square {:.1} on {} ({:.2} x noise): {}", t.chi_square, t.dof, t.scale, if t.passed() { "passed" } else { "FAILED" })
        });
        let zeta = if self.branches.is_empty() || self.damping_ratio > 0.0 {
            format!(", damping ratio {:.4} {}", self.damping_ratio, ci(self.damping_ratio_ci95))
        } else {
            String::new()
        };
        let hook = self.hook_friction_radius_m.map_or(String::new(), |r| {
            let c = self.hook_friction_radius_ci95_m.unwrap_or([f64::NAN; 2]);
            format!(", hook friction {:.3} mm {}", r * 1e3, ci([c[0] * 1e3, c[1] * 1e3]))
        });
        format!(
            "{mu}{zeta}{branches}{hook}, correlation {:+.3}, marker delay {} ms, markers {:.3} -> {:.3} mm, force {:.3} N{test}, {} iterations, {} simulations, {:.1} s",
            self.correlation_mu_damping,
            self.delays_text(),
            self.marker_rms_start_m * 1e3,
            self.marker_rms_m * 1e3,
            self.force_rms_n.unwrap_or(f64::NAN),
            self.iterations,
            self.simulations,
            self.wall_time_s
        )
    }

    /// Each session's marker delay \[ms\], with its interval where fitted.
    pub fn delays_text(&self) -> String {
        let one = |(d, c): (&f64, Option<&[f64; 2]>)| match c {
            Some(c) if c[0].is_finite() => format!("{:.2} [{:.2}, {:.2}]", d * 1e3, c[0] * 1e3, c[1] * 1e3),
            _ => format!("{:.2} (held)", d * 1e3),
        };
        if self.marker_delay_s.is_empty() {
            return "-".into();
        }
        self.marker_delay_s.iter().enumerate().map(|(i, d)| one((d, self.marker_delay_ci95_s.get(i)))).collect::<Vec<_>>().join(", ")
    }

    /// The friction coefficient a simulation of `scene_mu`'s scene should
    /// use: the fitted one, or when only bounded, the scene's if it is
    /// above the bound, else the bound.
    pub fn mu_for(&self, scene_mu: f64) -> f64 {
        if self.no_table {
            scene_mu
        } else if self.mu_determined {
            self.mu
        } else {
            scene_mu.max(self.mu_at_least.unwrap_or(self.mu))
        }
    }
}

/// One session's fitted flange sensor bias, with 95 % half widths.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SensorBiasOut {
    /// The session.
    pub session: String,
    /// The sensor's force bias \[N\], sensor frame.
    pub force_n: [f64; 3],
    /// Half-widths of its 95 % intervals \[N\].
    pub force_ci95_n: [f64; 3],
    /// The moment bias \[N m\].
    pub moment_nm: [f64; 3],
    /// Half-widths of its 95 % intervals \[N m\].
    pub moment_ci95_nm: [f64; 3],
    /// The weight the sensor carries \[N\].
    pub weight_n: f64,
    /// Holds it was fitted on.
    pub holds: usize,
    /// Largest angle between two holds' gravity directions \[deg\].
    pub spread_deg: f64,
}

fn requested() -> String {
    "requested".into()
}

fn parameters(f: &Fit) -> Parameters {
    Parameters {
        e_pa: f.e_pa.into(),
        g_pa: f.g_pa.into(),
        rho_kg_m3: f.rho_kg_m3.into(),
        rho_fixed: !f.layout.fit_rho,
        frame_translation_m: f.values.translation_m.into(),
        base_pitch_rad: f.values.pitch_rad,
        cable_offset_m: f.values.cable_offset_m,
        cable_offset_ci95_m: interval(f, Geometry::CableOffset),
        radius_scale: f.values.radius_scale,
        radius_scale_ci95: interval(f, Geometry::RadiusScale),
        cable_offsets_m: f.values.cable_offsets_m.clone(),
        cable_offsets_ci95_m: (0..f.layout.cable_offset_each).map(|c| interval(f, Geometry::CableOffsetOf(c))).collect(),
        cable_angles_rad: f.values.cable_angles_rad.clone(),
        cable_angles_ci95_rad: (0..f.layout.cable_angle_each).map(|c| interval(f, Geometry::CableAngleOf(c))).collect(),
        clamp_angles_rad: f.values.clamp_angles_rad.clone(),
        clamp_angles_ci95_rad: (0..f.layout.clamp_angle_each).map(|k| interval(f, Geometry::ClampAngleOf(k))).collect(),
        friction_mu: f.layout.friction.then_some(f.values.friction_mu.unwrap_or(0.0)),
        friction_mu_ci95: f.layout.friction.then(|| interval(f, Geometry::FrictionMu)),
        law: Some(f.elastic_law.key().0.to_string()),
        c01_fraction: f.elastic_law.key().1,
    }
}

/// 95 % interval of a geometry parameter (NaN when not fitted).
fn interval(f: &Fit, which: Geometry) -> [f64; 2] {
    f.geometry_estimates().iter().find(|(g, _)| *g == which).map_or([f64::NAN; 2], |(_, e)| [e.ci95_low, e.ci95_high])
}

/// A fingerprint of a rod's shape and core, not its body material (the
/// body's E, G, rho are what identification changes) nor its discretisation:
/// `len=<m>;hash=<16 hex digits>` (FNV-1a of the shape's description).
pub fn rod_geometry(rod: &Rod) -> String {
    let cs = &rod.cross_section;
    // A round section keeps the text it always had (files identified
    // before other shapes existed still match).
    let text = match &cs.shape {
        rod::Shape::Round { outer, hole, core } => format!("{:?}|{:?}|{:?}|{:?}|{:?}", rod.length_m, outer, hole, core, rod.rest_curvature_per_m),
        other => format!("{:?}|{:?}|{:?}", rod.length_m, other, rod.rest_curvature_per_m),
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("len={};hash={h:016x}", rod.length_m)
}

impl IdentifiedFile {
    /// A file holding a material measured otherwise (the rod file's, a
    /// tensile test's) for `rod` (read from `rod_file`), with no fit behind
    /// it: what `identify --dynamic` holds when there is no static
    /// identification. Its intervals are unknown (NaN).
    pub fn of_material(rod: &Rod, rod_file: &str, body: rod::Material, source: &str) -> IdentifiedFile {
        let est = |value: f64| EstimateOut { value, ci95: [f64::NAN; 2], determined: true };
        let (law, c01_fraction) = rod.elastic_law.key();
        IdentifiedFile {
            rodlab_version: env!("CARGO_PKG_VERSION").into(),
            rod_file: rod_file.into(),
            failed: None,
            rod_geometry: Some(rod_geometry(rod)),
            experiments_dir: source.into(),
            warnings: vec![],
            parameters: Parameters {
                e_pa: est(body.e_pa),
                g_pa: est(body.g_pa),
                rho_kg_m3: est(body.rho_kg_m3),
                rho_fixed: true,
                frame_translation_m: [0.0; 3],
                base_pitch_rad: 0.0,
                cable_offset_m: 0.0,
                cable_offset_ci95_m: [f64::NAN; 2],
                radius_scale: 1.0,
                radius_scale_ci95: [f64::NAN; 2],
                cable_offsets_m: vec![],
                cable_offsets_ci95_m: vec![],
                cable_angles_rad: vec![],
                cable_angles_ci95_rad: vec![],
                clamp_angles_rad: vec![],
                clamp_angles_ci95_rad: vec![],
                friction_mu: None,
                friction_mu_ci95: None,
                law: Some(law.into()),
                c01_fraction,
            },
            fit: FitInfo {
                parameter_names: vec![],
                correlation: vec![],
                covariance: vec![],
                dof: 0,
                measurement_sigma_m: f64::NAN,
                condition_number: f64::NAN,
                residual_scale: f64::NAN,
                chi_square: f64::NAN,
                chi_square_p: f64::NAN,
                model_error_m: 0.0,
                cv_model_error_m: 0.0,
                prior_only: vec![],
                cost: f64::NAN,
                rms_error_mm: f64::NAN,
                iterations: 0,
                static_solves: 0,
                wall_time_s: 0.0,
            },
            alternative_fit: None,
            reference: None,
            jackknife: None,
            variant: vec![],
            recommended_variant: None,
            parameters_from: requested(),
            requested_parameters: None,
            sensor_bias: vec![],
            critical: vec![],
            experiment: vec![],
            start: vec![],
            dynamic: None,
        }
    }

    /// Checks that these parameters were identified for `rod`'s shape
    /// (files written before the fingerprint existed pass).
    pub fn check_rod(&self, rod: &Rod, rod_path: &Path, params_path: &Path) -> Result<(), ParamsFileError> {
        match &self.rod_geometry {
            Some(g) if *g != rod_geometry(rod) => Err(ParamsFileError::new(
                params_path,
                format!("identified for another rod ({}, geometry {g}), not {} (geometry {})", self.rod_file, rod_path.display(), rod_geometry(rod)),
            )),
            _ => Ok(()),
        }
    }

    pub fn from_study(study: &Study, experiments: &[Experiment], rod_file: &str, experiments_dir: &str) -> Self {
        let f = &study.fit;
        let nan = |n: usize| vec![f64::NAN; n];
        IdentifiedFile {
            rodlab_version: env!("CARGO_PKG_VERSION").into(),
            rod_file: rod_file.into(),
            rod_geometry: None,
            failed: None,
            experiments_dir: experiments_dir.into(),
            warnings: f.warnings.clone(),
            parameters: parameters(f),
            fit: FitInfo {
                parameter_names: f.parameter_names.iter().map(|s| s.to_string()).collect(),
                correlation: f.correlation.row_iter().map(|r| r.iter().cloned().collect()).collect(),
                covariance: f.covariance.row_iter().map(|r| r.iter().cloned().collect()).collect(),
                dof: f.dof,
                measurement_sigma_m: f.measurement_sigma_m,
                condition_number: f.condition_number,
                residual_scale: f.residual_scale,
                chi_square: f64::NAN,
                chi_square_p: f64::NAN,
                model_error_m: 0.0,
                cv_model_error_m: study.cv_model_error_m,
                prior_only: f.prior_only.clone(),
                cost: f.cost,
                rms_error_mm: f.rms_error_mm,
                iterations: f.iterations,
                static_solves: f.static_solves,
                wall_time_s: f.wall_time_s,
            },
            alternative_fit: study.with_nuisance.as_ref().map(|a| AlternativeOut {
                parameters: parameters(a),
                rms_error_mm: a.rms_error_mm,
                warnings: a.warnings.clone(),
            }),
            reference: study.reference.as_ref().map(|r| ReferenceOut {
                e_pa: r.values.e_pa,
                g_pa: r.values.g_pa,
                rho_kg_m3: r.values.rho_kg_m3,
                rms_error_mm: r.rms_error_mm,
                experiments_without_equilibrium: r.failures,
            }),
            jackknife: study.jackknife.clone(),
            variant: vec![],
            recommended_variant: None,
            parameters_from: requested(),
            requested_parameters: None,
            sensor_bias: vec![],
            critical: f.critical.clone(),
            experiment: experiments
                .iter()
                .enumerate()
                .map(|(i, e)| ExperimentOut {
                    id: e.id.clone(),
                    errors_mm: f.errors_mm[i].clone(),
                    loo_errors_mm: study.loo.get(i).map(|l| l.errors_mm.clone()).unwrap_or_else(|| nan(e.measurements.len())),
                    reference_errors_mm: study.reference.as_ref().map(|r| r.errors_mm[i].clone()).unwrap_or_else(|| nan(e.measurements.len())),
                    loaded_for_s: e.loaded_for_s,
                    hold_modulus_ratio: None,
                })
                .collect(),
            start: f.starts.clone(),
            dynamic: None,
        }
    }

    /// The uncertainty of predictions with `[parameters]`: the selected
    /// variant's fit when the parameters come from one, else the main fit;
    /// never below the declared noise, with the larger of the model error
    /// cross-validation found and the one the rod file declares. None for
    /// files written before the covariance was kept.
    pub fn uncertainty(&self) -> Option<crate::fit::Uncertainty> {
        let model_error_m = self.band_model_error_m();
        match self.selected_band() {
            Some(v) => v.band.as_ref()?.uncertainty(model_error_m),
            None => BandOut {
                parameter_names: self.fit.parameter_names.clone(),
                covariance: self.fit.covariance.clone(),
                dof: self.fit.dof,
                measurement_sigma_m: self.fit.measurement_sigma_m,
                residual_scale: self.fit.residual_scale,
                prior_only: self.fit.prior_only.clone(),
            }
            .uncertainty(model_error_m),
        }
    }

    /// The model error per coordinate at the tip the bands of
    /// [`Self::uncertainty`] add \[m\] (less towards the clamp): the
    /// selected fit's from cross-validation, or the rod file's declared one
    /// (taken at the tip) if larger.
    pub fn band_model_error_m(&self) -> f64 {
        let declared = if self.fit.model_error_m.is_finite() { self.fit.model_error_m } else { 0.0 };
        self.selected_band().map_or(self.fit.cv_model_error_m, |v| v.model_error_m).max(declared)
    }

    /// The variant `[parameters]` come from, when it kept its own fit's
    /// uncertainty.
    fn selected_band(&self) -> Option<&VariantOut> {
        self.variant.iter().find(|v| v.name == self.parameters_from && v.band.is_some())
    }

    /// The fitted values (material and nuisance parameters).
    pub fn values(&self) -> Values {
        self.parameters.values()
    }

    /// `rod` (the rod file these parameters were identified for) with the
    /// identified material and geometry (cable offsets and angles, radius
    /// scale) and the cables' friction.
    pub fn apply_to(&self, rod: &Rod) -> Rod {
        let p = &self.parameters;
        let mut out = rod
            .with_material(rod::Material { e_pa: p.e_pa.value, g_pa: p.g_pa.value, rho_kg_m3: p.rho_kg_m3.value })
            .with_geometry(p.radius_scale, p.cable_offset_m)
            .with_cable_offsets(&p.cable_offsets_m)
            .with_cable_angles(&p.cable_angles_rad);
        // Checked when the file is read (and when a fit is selected).
        if let Ok(Some(law)) = p.elastic_law() {
            out.elastic_law = law;
        }
        if let Some(d) = &self.dynamic {
            out.damping = Some(rod::Damping::Ratio(d.damping_ratio));
            if !d.branches.is_empty() {
                out.viscoelastic = d.branches.iter().map(BranchOut::branch).collect();
            }
            if let Some(c) = &d.constant_loss {
                out.constant_loss = Some(c.law());
                out.viscoelastic = c.law().prony_branches();
            }
        }
        if let Some(mu) = p.friction_mu {
            for c in &mut out.cables {
                c.friction_mu = mu;
            }
        }
        out
    }

    /// The variants compared and the recommended one: `[parameters]`
    /// become the recommended variant's, the requested fit is kept.
    pub fn set_variants(&mut self, variants: Vec<VariantOut>, recommended: Option<usize>) {
        if let Some(p) = recommended.and_then(|i| variants[i].fitted.clone()) {
            self.requested_parameters = Some(std::mem::replace(&mut self.parameters, p));
            self.parameters_from = variants[recommended.unwrap_or(0)].name.clone();
        }
        self.recommended_variant = recommended.map(|i| variants[i].name.clone());
        self.variant = variants;
    }

    /// `[parameters]` from another fit of the file: "requested", or a
    /// variant's name (case and spaces around it ignored).
    pub fn select(&mut self, name: &str, path: &Path) -> Result<(), ParamsFileError> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("requested") {
            if let Some(p) = self.requested_parameters.take() {
                self.parameters = p;
            }
            self.parameters_from = requested();
            return Ok(());
        }
        match self.variant.iter().find(|v| v.name.eq_ignore_ascii_case(name)) {
            Some(v) => match &v.fitted {
                Some(p) => {
                    self.parameters = p.clone();
                    self.parameters_from = v.name.clone();
                    Ok(())
                }
                None => Err(ParamsFileError::new(path, format!("variant {name:?} was written without its values (identify again with --compare-variants)"))),
            },
            None => {
                let names: Vec<String> = std::iter::once("requested".to_string()).chain(self.variant.iter().map(|v| format!("{:?}", v.name))).collect();
                Err(ParamsFileError::new(path, format!("no fit named {name:?}; the file holds: {}", names.join(", "))))
            }
        }
    }

    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = toml::to_string(self).map_err(std::io::Error::other)?;
        std::fs::write(path, format!("# rodlab identify: E, G, rho with 95 % confidence intervals (SI units).\n{text}"))
    }

    /// Reads the identified values back (for `rodlab solve --params`).
    pub fn read(path: &Path) -> Result<IdentifiedFile, ParamsFileError> {
        let text = fault::read_text(path, fault::CONFIG_LIMIT_BYTES).map_err(|e| ParamsFileError::new(path, format!("cannot read: {e}")))?;
        let file: IdentifiedFile = toml::from_str(&text).map_err(|e| ParamsFileError::new(path, e.message().replace('\n', " ")))?;
        let fits = std::iter::once(("parameters".to_string(), &file.parameters))
            .chain(file.variant.iter().filter_map(|v| v.fitted.as_ref().map(|p| (format!("variant {:?}", v.name), p))));
        for (what, p) in fits {
            p.elastic_law().map_err(|m| ParamsFileError::new(path, format!("{what}: {m}")))?;
        }
        Ok(file)
    }
}
