//! The least-squares problem of the PLS paper's eq. (26): residuals are the
//! weighted position errors of every measured point of every experiment, each
//! experiment's rod being in static equilibrium for the current parameters.
//!
//! Parameters are `[ln E, ln G, (ln rho), (tx, ty, tz), (pitch), (d), (s),
//! (d_1 .. d_n), (a_1 .. a_n)]`, d the cables' outward offset from where
//! the rod file puts them (guide rings hold cables off the surface), s the
//! scale of the section's radii, d_c one offset per cable (instead of d),
//! a_c each cable's turn about the rod's axis from the rod file's angle
//! (hand-drilled guide holes are a degree or two off), each geometry
//! parameter with a Gaussian prior row (any parameter
//! may have one: a very narrow one holds it). The
//! Jacobian uses exact sensitivities (implicit-function theorem):
//! `dq/dp = -H^{-1} dr/dp`, where `dr/dlnE = E K_E q`, `dr/dlnG = G K_G q`
//! (the stiffness is linear in E and G) and `dr/dln rho` is the gravity
//! residual of the body's mass (linear in rho). The base pitch and the
//! geometry use central differences of the residual at fixed `q` (cheap and
//! accurate to ~1e-10), never of the whole model.

use crate::data::{CriticalQuantity, CriticalValue, Experiment};
use argmin::core::{Error as ArgminError, Jacobian, Operator};
use lie::{Pose, Vec3, Vec6};
use nalgebra::{DMatrix, DVector};
use rod::branch::{BranchOptions, CriticalKind};
use rod::held::{assemble_held, solve_held};
use rod::model::point_jacobian;
use rod::statics::{assemble, solve, solve_with_factors, Factors};
use rod::{Loads, Material, Model, NewtonOptions, Rod, StaticsError};
use std::cell::{Cell, RefCell};

/// Why the model could not be evaluated at some parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("parameters out of range")]
    OutOfRange,
    #[error("experiment {experiment}: {source}")]
    NoEquilibrium { experiment: String, source: StaticsError },
    #[error("{0}")]
    Statics(#[from] StaticsError),
    #[error("singular tangent at equilibrium")]
    SingularTangent,
    #[error("the static model does not converge at this start")]
    NoStart,
    #[error("the static model converges for none of the experiments")]
    NoExperimentSolves,
    #[error("covariance is {rows}x{cols}, the model has {params} parameters")]
    Covariance { rows: usize, cols: usize, params: usize },
    #[error("optimizer: {0}")]
    Optimizer(String),
    #[error(
        "experiment '{experiment}': no snap or buckling along {quantity} from {from} to {to}: the measured {value} lies outside every branch found (critical.csv)"
    )]
    NoCriticalPoint { experiment: String, quantity: &'static str, value: f64, from: f64, to: f64 },
}

impl fault::Fault for ModelError {
    fn kind(&self) -> fault::Kind {
        match self {
            ModelError::Covariance { .. } | ModelError::NoCriticalPoint { .. } => fault::Kind::Input,
            ModelError::Statics(e) => e.kind(),
            _ => fault::Kind::Computation,
        }
    }
}

/// Which parameters are estimated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// False when gravity is the only load (rho is then held fixed).
    pub fit_rho: bool,
    /// Translation of the measurement frame (nuisance).
    pub translation: bool,
    /// Pitch of the base about the world y axis (nuisance).
    pub pitch: bool,
    /// The cables' offset from the rod file's position, outwards, one for
    /// all cables (geometry; needs a prior).
    pub cable_offset: bool,
    /// Scale of the cross-section's radii (geometry; needs a prior).
    pub radius_scale: bool,
    /// One outward offset per cable, for this many cables (0: none;
    /// instead of the common `cable_offset`; geometry, needs priors).
    pub cable_offset_each: usize,
    /// One angle per cable about the rod's axis, for this many cables (0:
    /// none; geometry, needs priors).
    pub cable_angle_each: usize,
    /// One angle per experiment of its tip clamp about the world's y axis,
    /// for this many experiments (0: none; nuisance, needs priors): a
    /// clamp's angle known only to within a tracing.
    pub clamp_angle_each: usize,
    /// The cables' friction coefficient in their channels, one for all
    /// (the last parameter; needs a prior).
    pub friction: bool,
}

/// A geometry parameter: changes the model, not the material.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Geometry {
    CableOffset,
    RadiusScale,
    /// The offset of cable `c` alone.
    CableOffsetOf(usize),
    /// The turn of cable `c` about the rod's axis.
    CableAngleOf(usize),
    /// The turn of experiment `k`'s tip clamp about the world's y axis.
    ClampAngleOf(usize),
    /// The cables' friction coefficient in their channels.
    FrictionMu,
}

impl Geometry {
    pub fn value(self, v: &Values) -> f64 {
        match self {
            Geometry::CableOffset => v.cable_offset_m,
            Geometry::RadiusScale => v.radius_scale,
            Geometry::CableOffsetOf(c) => v.cable_offsets_m.get(c).copied().unwrap_or(0.0),
            Geometry::CableAngleOf(c) => v.cable_angles_rad.get(c).copied().unwrap_or(0.0),
            Geometry::ClampAngleOf(k) => v.clamp_angles_rad.get(k).copied().unwrap_or(0.0),
            Geometry::FrictionMu => v.friction_mu.unwrap_or(0.0),
        }
    }

    /// Name and unit, for reports.
    pub fn label(self) -> (String, &'static str) {
        match self {
            Geometry::CableOffset => ("cable offset".into(), "m"),
            Geometry::RadiusScale => ("radius scale".into(), "1"),
            Geometry::CableOffsetOf(c) => (format!("cable {} offset", c + 1), "m"),
            Geometry::CableAngleOf(c) => (format!("cable {} angle", c + 1), "rad"),
            Geometry::ClampAngleOf(k) => (format!("experiment {} clamp angle", k + 1), "rad"),
            Geometry::FrictionMu => ("cable friction mu".into(), "1"),
        }
    }

    /// `v` with this parameter moved by `delta`.
    fn moved(self, v: &Values, delta: f64) -> Values {
        let mut v = v.clone();
        match self {
            Geometry::CableOffset => v.cable_offset_m += delta,
            Geometry::RadiusScale => v.radius_scale += delta,
            Geometry::CableOffsetOf(c) => add_at(&mut v.cable_offsets_m, c, delta),
            Geometry::CableAngleOf(c) => add_at(&mut v.cable_angles_rad, c, delta),
            Geometry::ClampAngleOf(k) => add_at(&mut v.clamp_angles_rad, k, delta),
            Geometry::FrictionMu => v.friction_mu = Some(v.friction_mu.unwrap_or(0.0) + delta),
        }
        v
    }

    /// Central-difference step (metres, a scale factor, radians).
    fn step(self) -> f64 {
        match self {
            Geometry::CableOffset | Geometry::CableOffsetOf(_) => 1e-7,
            Geometry::RadiusScale | Geometry::CableAngleOf(_) | Geometry::ClampAngleOf(_) | Geometry::FrictionMu => 1e-6,
        }
    }
}

/// Adds `delta` to entry `c` of a per-cable list (missing entries are 0).
fn add_at(per_cable: &mut Vec<f64>, c: usize, delta: f64) {
    if per_cable.len() <= c {
        per_cable.resize(c + 1, 0.0);
    }
    per_cable[c] += delta;
}

impl Layout {
    /// Every parameter but friction, for a rod with `n_cables` cables:
    /// evaluates given values as they are.
    pub fn all(n_cables: usize) -> Layout {
        Layout {
            fit_rho: true,
            translation: true,
            pitch: true,
            cable_offset: true,
            radius_scale: true,
            cable_offset_each: n_cables,
            cable_angle_each: n_cables,
            clamp_angle_each: 0,
            friction: false,
        }
    }

    /// E, G and rho alone.
    pub fn material() -> Layout {
        Layout {
            fit_rho: true,
            translation: false,
            pitch: false,
            cable_offset: false,
            radius_scale: false,
            cable_offset_each: 0,
            cable_angle_each: 0,
            clamp_angle_each: 0,
            friction: false,
        }
    }

    /// Number of fitted parameters.
    pub fn n_params(&self) -> usize {
        2 + self.fit_rho as usize
            + 3 * self.translation as usize
            + self.pitch as usize
            + self.cable_offset as usize
            + self.radius_scale as usize
            + self.cable_offset_each
            + self.cable_angle_each
            + self.clamp_angle_each
            + self.friction as usize
    }

    /// Index of the first per-cable offset.
    pub fn cable_offset_each_index(&self) -> Option<usize> {
        (self.cable_offset_each > 0)
            .then_some(self.n_params() - self.friction as usize - self.clamp_angle_each - self.cable_angle_each - self.cable_offset_each)
    }

    /// Index of the first per-cable angle.
    pub fn cable_angle_each_index(&self) -> Option<usize> {
        (self.cable_angle_each > 0).then_some(self.n_params() - self.friction as usize - self.clamp_angle_each - self.cable_angle_each)
    }

    /// Index of the first experiment's clamp angle.
    pub fn clamp_angle_each_index(&self) -> Option<usize> {
        (self.clamp_angle_each > 0).then_some(self.n_params() - self.friction as usize - self.clamp_angle_each)
    }

    /// Index of the friction coefficient (the last parameter).
    pub fn friction_index(&self) -> Option<usize> {
        self.friction.then_some(self.n_params() - 1)
    }

    pub fn radius_scale_index(&self) -> Option<usize> {
        self.radius_scale.then_some(2 + self.fit_rho as usize + 3 * self.translation as usize + self.pitch as usize + self.cable_offset as usize)
    }

    /// The fitted geometry parameters and their indices.
    pub fn geometry(&self) -> Vec<(Geometry, usize)> {
        let mut g = vec![];
        if let Some(i) = self.cable_offset_index() {
            g.push((Geometry::CableOffset, i));
        }
        if let Some(i) = self.radius_scale_index() {
            g.push((Geometry::RadiusScale, i));
        }
        if let Some(i) = self.cable_offset_each_index() {
            g.extend((0..self.cable_offset_each).map(|c| (Geometry::CableOffsetOf(c), i + c)));
        }
        if let Some(i) = self.cable_angle_each_index() {
            g.extend((0..self.cable_angle_each).map(|c| (Geometry::CableAngleOf(c), i + c)));
        }
        if let Some(i) = self.clamp_angle_each_index() {
            g.extend((0..self.clamp_angle_each).map(|k| (Geometry::ClampAngleOf(k), i + k)));
        }
        if let Some(i) = self.friction_index() {
            g.push((Geometry::FrictionMu, i));
        }
        g
    }

    pub fn cable_offset_index(&self) -> Option<usize> {
        self.cable_offset.then_some(2 + self.fit_rho as usize + 3 * self.translation as usize + self.pitch as usize)
    }

    pub fn translation_index(&self) -> Option<usize> {
        self.translation.then_some(2 + self.fit_rho as usize)
    }

    pub fn pitch_index(&self) -> Option<usize> {
        self.pitch.then_some(2 + self.fit_rho as usize + 3 * self.translation as usize)
    }

    /// The layout whose [`Layout::names`] are `names` (as written in
    /// identified.toml); None for any other list.
    pub fn from_names(names: &[String]) -> Option<Layout> {
        let has = |n: &str| names.iter().any(|x| x == n);
        let layout = Layout {
            fit_rho: has("ln_rho"),
            translation: has("tx_m"),
            pitch: has("pitch_rad"),
            cable_offset: has("cable_offset_m"),
            radius_scale: has("radius_scale"),
            cable_offset_each: names.iter().filter(|n| n.starts_with("cable_") && n.ends_with("_offset_m") && *n != "cable_offset_m").count(),
            cable_angle_each: names.iter().filter(|n| n.starts_with("cable_") && n.ends_with("_angle_rad")).count(),
            clamp_angle_each: names.iter().filter(|n| n.starts_with("clamp_") && n.ends_with("_angle_rad")).count(),
            friction: has("friction_mu"),
        };
        (layout.names() == names).then_some(layout)
    }

    pub fn names(&self) -> Vec<String> {
        let mut n = vec!["ln_e", "ln_g"];
        if self.fit_rho {
            n.push("ln_rho");
        }
        if self.translation {
            n.extend(["tx_m", "ty_m", "tz_m"]);
        }
        if self.pitch {
            n.push("pitch_rad");
        }
        if self.cable_offset {
            n.push("cable_offset_m");
        }
        if self.radius_scale {
            n.push("radius_scale");
        }
        let mut n: Vec<String> = n.into_iter().map(String::from).collect();
        n.extend((1..=self.cable_offset_each).map(|c| format!("cable_{c}_offset_m")));
        n.extend((1..=self.cable_angle_each).map(|c| format!("cable_{c}_angle_rad")));
        n.extend((1..=self.clamp_angle_each).map(|k| format!("clamp_{k}_angle_rad")));
        if self.friction {
            n.push("friction_mu".into());
        }
        n
    }
}

/// Physical values of a parameter vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    pub e_pa: f64,
    pub g_pa: f64,
    pub rho_kg_m3: f64,
    pub translation_m: Vec3,
    pub pitch_rad: f64,
    /// Outward offset of every cable from the rod file's position \[m\].
    pub cable_offset_m: f64,
    /// Scale of the section's radii (1: the rod file's section).
    pub radius_scale: f64,
    /// Per-cable outward offsets, added to `cable_offset_m` (empty: none)
    /// \[m\].
    pub cable_offsets_m: Vec<f64>,
    /// Per-cable turns about the rod's axis, added to the rod file's
    /// angles (empty: none) \[rad\].
    pub cable_angles_rad: Vec<f64>,
    /// Per-experiment turns of the tip clamp about the world's y axis from
    /// what the experiment says (empty: none; the fit's nuisance, which a
    /// prediction of a new experiment does not know) \[rad\].
    pub clamp_angles_rad: Vec<f64>,
    /// The friction coefficient of every cable in its channel (`None`: each
    /// cable's from the rod file).
    pub friction_mu: Option<f64>,
}

impl Values {
    /// The material alone, geometry as in the rod file, no nuisance.
    pub fn material(e_pa: f64, g_pa: f64, rho_kg_m3: f64) -> Values {
        Values {
            e_pa,
            g_pa,
            rho_kg_m3,
            translation_m: Vec3::zeros(),
            pitch_rad: 0.0,
            cable_offset_m: 0.0,
            radius_scale: 1.0,
            cable_offsets_m: vec![],
            cable_angles_rad: vec![],
            clamp_angles_rad: vec![],
            friction_mu: None,
        }
    }

    /// The outward offset of cable `c` \[m\] (common plus its own).
    pub fn offset_of_cable_m(&self, c: usize) -> f64 {
        self.cable_offset_m + self.cable_offsets_m.get(c).copied().unwrap_or(0.0)
    }

    /// The turn of cable `c` from the rod file's angle \[rad\].
    pub fn angle_of_cable_rad(&self, c: usize) -> f64 {
        self.cable_angles_rad.get(c).copied().unwrap_or(0.0)
    }

    /// Whether the cables sit elsewhere than the rod file puts them.
    fn moves_cables(&self) -> bool {
        self.cable_offset_m != 0.0 || self.radius_scale != 1.0 || self.cable_offsets_m.iter().chain(&self.cable_angles_rad).any(|d| *d != 0.0)
    }
}

/// A stiffness matrix split by how it follows the radius scale s: torsion
/// and bending (second moments) as s^4, stretch and shear (areas) as s^2.
#[derive(Clone, Debug)]
struct RadiusScaled {
    quartic: DMatrix<f64>,
    quadratic: DMatrix<f64>,
}

impl RadiusScaled {
    /// From the matrices of the section at scale 1 and at scale 2 (exact:
    /// every entry is a sum of section stiffnesses).
    fn from_scales_1_2(at_1: &DMatrix<f64>, at_2: &DMatrix<f64>) -> Self {
        let quartic = (at_2 - at_1 * 4.0) / 12.0;
        let quadratic = at_1 - &quartic;
        Self { quartic, quadratic }
    }

    /// Adds `coefficient` times the matrix at `scale` to `out` in place (a
    /// fit evaluates it for every experiment at every step).
    fn add_to(&self, out: &mut DMatrix<f64>, scale: f64, coefficient: f64) {
        let (s4, s2) = (coefficient * scale.powi(4), coefficient * scale.powi(2));
        out.zip_zip_apply(&self.quartic, &self.quadratic, |o, a, b| *o += a * s4 + b * s2);
    }

    /// The matrix at `scale` times `v`, without forming the matrix.
    fn times(&self, scale: f64, v: &DVector<f64>) -> DVector<f64> {
        let mut out = &self.quartic * v * scale.powi(4);
        out.gemv(scale.powi(2), &self.quadratic, v, 1.0);
        out
    }
}

type CableSpans = Vec<Vec<Option<rod::model::CableSpan>>>;

/// Per-experiment model pieces, linear in the parameters.
struct ExperimentModel {
    model: Model,
    k_e: RadiusScaled,
    k_g: RadiusScaled,
    k_0: RadiusScaled,
    /// The cables at scale 2 (see [`place_cables`]): spans along paths,
    /// holes in guide disks.
    cable_spans_2: CableSpans,
    cable_guides_2: Vec<Vec<rod::CableHole>>,
    /// Lumped masses at rho = 1 and scale 1 (masses follow s^2).
    mass_body: Vec<f64>,
    mass_0: Vec<f64>,
    gravity_model: Model,
    loads: Loads,
    joints: Vec<usize>,
    /// The tip's hold (a pinned or clamped tip), if any.
    hold: Option<rod::TipHold>,
    /// The modulus the hold sees over the relaxed one: a viscoelastic
    /// rod's creep ratio after its loads acted `loaded_for_s` (1: an
    /// elastic rod, or a hold long enough to have relaxed).
    creep: f64,
}

/// The modulus a hold of `rod` sees over its relaxed modulus: the rod
/// file's viscoelastic law crept for as long as the experiment's loads
/// acted; 1 for an elastic rod or a hold of unknown age (relaxed).
pub fn hold_modulus_ratio(rod: &Rod, experiment: &Experiment) -> f64 {
    match experiment.loaded_for_s {
        Some(t) if !rod.viscoelastic.is_empty() => rod::creep::hold_modulus_ratio(&rod.viscoelastic, t),
        _ => 1.0,
    }
}

/// Residuals, Jacobian and predictions at one parameter vector.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// (predicted - measured) / sigma, 3 rows per measured point.
    pub residual: DVector<f64>,
    pub jacobian: Option<DMatrix<f64>>,
    /// Predicted positions, per experiment, per measured point.
    pub predicted: Vec<Vec<Vec3>>,
    /// Equilibrium of each experiment.
    pub q: Vec<DVector<f64>>,
}

/// The identification problem for argmin.
pub struct Problem {
    pub rod: Rod,
    pub experiments: Vec<Experiment>,
    pub layout: Layout,
    /// Values of the parameters outside the layout (rho when it is not
    /// estimated, geometry and nuisance the fit does not estimate).
    pub held: Values,
    models: Vec<ExperimentModel>,
    warm: RefCell<Vec<Option<DVector<f64>>>>,
    /// Each experiment's tangent factorisation at its last Jacobian: the
    /// next solve's Broyden steps start from it (parameters move little
    /// between steps of the fit).
    warm_factors: RefCell<Vec<Option<Factors>>>,
    cache: RefCell<Option<(DVector<f64>, Evaluation)>>,
    /// Static solves performed (all experiments count one each).
    pub solves: Cell<usize>,
    options: NewtonOptions,
    /// Gaussian priors, one residual row `(p[index] - mean) / sd` each.
    priors: Vec<Prior>,
    /// Sessions whose flange sensor's bias is fitted with the parameters
    /// (see [`Problem::with_sensor_bias_per_session`]).
    bias_groups: Vec<BiasGroup>,
}

/// The experiments of one session whose force sensor carries one unknown
/// bias (six constants added to every reading).
#[derive(Clone, Debug, PartialEq)]
pub struct BiasGroup {
    pub session: String,
    /// Indices of the session's experiments with a measured wrench.
    pub experiments: Vec<usize>,
}

/// A session's sensor bias fitted with the parameters: `[moment; force]`
/// as the wrenches are, with standard deviations that carry the
/// parameters' uncertainty too.
#[derive(Clone, Debug, PartialEq)]
pub struct FittedBias {
    pub session: String,
    pub wrench: Vec6,
    pub sd: Vec6,
    /// Holds (experiments with a wrench) of the session.
    pub holds: usize,
}

/// A Gaussian prior row `(sum a_i p_i - mean) / sd` on a linear
/// combination of parameters (in the parameter vector's units: logarithms
/// for E, G, rho): one parameter's value, a tie (`ln G - ln E`), or a row
/// of a pooled group.
#[derive(Clone, Debug, PartialEq)]
pub struct Prior {
    /// (parameter index, coefficient).
    pub terms: Vec<(usize, f64)>,
    pub mean: f64,
    pub sd: f64,
    pub kind: PriorKind,
}

/// What a prior row says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorKind {
    /// Where one parameter is believed to be.
    Value,
    /// Two parameters tied to each other (not a belief about either's value).
    Tie,
    /// Parameters of like parts drawn around their common mean (partial
    /// pooling): what a part the data never saw borrows from the others.
    Pooled,
}

/// Places every cable of `model` for the section's `scale` and the
/// cables' outward offsets and turns of `v`, as [`Rod::with_geometry`],
/// [`Rod::with_cable_offsets`] and [`Rod::with_cable_angles`] would: the
/// spans are linear in the scale (the surface moves, the inset stays), so
/// the models at scale 1 (`at_1`, the rod file's) and 2 (`at_2`) give
/// them; a turn rotates a span about the rod's axis.
fn place_cables(model: &mut Model, at_1: &Model, at_2: (&CableSpans, &[Vec<rod::CableHole>]), scale: f64, v: &Values) {
    for (c, cable) in at_1.rod.cables.iter().enumerate() {
        let dir = Vec3::new(0.0, cable.angle_rad.cos(), cable.angle_rad.sin());
        let turn = nalgebra::Rotation3::from_axis_angle(&Vec3::x_axis(), v.angle_of_cable_rad(c));
        let place = |one: &Vec3, two: &Vec3| turn * (one + (two - one) * (scale - 1.0) + dir * v.offset_of_cable_m(c));
        for ((span, one), two) in model.cable_spans[c].iter_mut().zip(&at_1.cable_spans[c]).zip(&at_2.0[c]) {
            if let (Some(s), Some(one), Some(two)) = (span.as_mut(), one, two) {
                s.offset_m = place(&one.offset_m, &two.offset_m);
                s.offset_slope = turn * (one.offset_slope + (two.offset_slope - one.offset_slope) * (scale - 1.0));
            }
        }
        for ((hole, one), two) in model.cable_guides[c].iter_mut().zip(&at_1.cable_guides[c]).zip(&at_2.1[c]) {
            hole.offset_m = place(&one.offset_m, &two.offset_m);
        }
    }
}

fn unit_material(e: f64, g: f64, rho: f64) -> Material {
    Material { e_pa: e, g_pa: g, rho_kg_m3: rho }
}

impl Problem {
    pub fn new(rod: &Rod, experiments: &[Experiment], layout: Layout, held: &Values) -> Problem {
        let models = experiments
            .iter()
            .map(|e| {
                let mut points: Vec<f64> = e.measurements.iter().map(|m| m.arc_m).collect();
                points.push(rod.length_m);
                let tip = rod::PointLoad {
                    x_m: rod.length_m,
                    offset_body_m: e.tip_force_offset_body_m,
                    force_n: e.tip_force_n,
                    moment_nm: Vec3::zeros(),
                    follower: false,
                };
                let loads = Loads {
                    gravity_scale: 1.0,
                    point_loads: vec![tip],
                    cable_tensions_n: e.tensions_n.clone(),
                    cable_slide: vec![e.cable_slide; e.tensions_n.len()],
                    cable_reversal_n: e.cable_reversal_n.clone(),
                    cable_earlier_reversals_n: vec![],
                };
                let model = Model::new(rod, &points);
                let part = |body: Material, keep_core: bool, scale: f64| {
                    let mut r = rod.with_material(body);
                    // The pieces are the small-strain stiffness; the fibres
                    // (a hyperelastic law) live in `model`.
                    r.elastic_law = rod::ElasticLaw::Linear;
                    r.cross_section = r.cross_section.scaled(scale);
                    if !keep_core {
                        // The body annulus must stay the same without the core.
                        if let rod::Shape::Round { hole, core, .. } = &mut r.cross_section.shape {
                            if let Some((rc, _)) = core.take() {
                                *hole = Some(rod::Profile::constant(rc));
                            }
                        }
                    }
                    Model::new(&r, &points)
                };
                // Each piece at radius scale 1 and 2: E's (with rho's mass),
                // G's, and the core's.
                let (m_e, m_e_2) = (part(unit_material(1.0, 0.0, 1.0), false, 1.0), part(unit_material(1.0, 0.0, 1.0), false, 2.0));
                let (m_g, m_g_2) = (part(unit_material(0.0, 1.0, 0.0), false, 1.0), part(unit_material(0.0, 1.0, 0.0), false, 2.0));
                let (m_0, m_0_2) = (part(unit_material(0.0, 0.0, 0.0), true, 1.0), part(unit_material(0.0, 0.0, 0.0), true, 2.0));
                let mut gravity_model = m_e.clone();
                gravity_model.stiffness.fill(0.0);
                gravity_model.rod.cables.clear();
                gravity_model.cable_spans.clear();
                let joints = e.measurements.iter().map(|m| model.joint_at(m.arc_m)).collect();
                ExperimentModel {
                    k_e: RadiusScaled::from_scales_1_2(&m_e.stiffness, &m_e_2.stiffness),
                    k_g: RadiusScaled::from_scales_1_2(&m_g.stiffness, &m_g_2.stiffness),
                    k_0: RadiusScaled::from_scales_1_2(&m_0.stiffness, &m_0_2.stiffness),
                    cable_spans_2: m_e_2.cable_spans,
                    cable_guides_2: m_e_2.cable_guides,
                    mass_body: m_e.joint_mass_kg.clone(),
                    mass_0: m_0.joint_mass_kg.clone(),
                    gravity_model,
                    model,
                    loads,
                    joints,
                    // Checked against the rod file where the experiments
                    // are read (identify::data::check_tip_holds).
                    hold: e.tip_hold(rod.tip_condition).unwrap_or(None),
                    creep: hold_modulus_ratio(rod, e),
                }
            })
            .collect();
        Problem {
            rod: rod.clone(),
            experiments: experiments.to_vec(),
            layout,
            held: held.clone(),
            models,
            warm: RefCell::new(vec![None; experiments.len()]),
            warm_factors: RefCell::new(vec![None; experiments.len()]),
            cache: RefCell::new(None),
            solves: Cell::new(0),
            options: NewtonOptions { max_load_steps: 64, ..NewtonOptions::default() },
            priors: vec![],
            bias_groups: vec![],
        }
    }

    /// Fits each session's force-sensor bias jointly with the parameters:
    /// six constants per session (the experiments' ids `<session>/...`)
    /// added to its measured wrenches. They enter linearly, so they are
    /// eliminated exactly (variable projection): each session's wrench
    /// residuals and their Jacobian rows lose their weighted mean per
    /// component. The parameters' covariance is then the joint fit's,
    /// the bias's uncertainty included; [`Problem::fitted_biases`] gives
    /// the biases.
    pub fn with_sensor_bias_per_session(mut self) -> Problem {
        let mut groups: Vec<BiasGroup> = vec![];
        for (i, e) in self.experiments.iter().enumerate().filter(|(_, e)| e.base_wrench.is_some()) {
            let session = crate::sensor_bias::session_of(e);
            match groups.iter_mut().find(|g| g.session == session) {
                Some(g) => g.experiments.push(i),
                None => groups.push(BiasGroup { session: session.to_string(), experiments: vec![i] }),
            }
        }
        self.bias_groups = groups;
        self
    }

    /// Degrees of freedom the eliminated biases take (six per session).
    pub fn bias_dof(&self) -> usize {
        6 * self.bias_groups.len()
    }

    /// The first residual row of each experiment.
    fn experiment_rows(&self) -> Vec<usize> {
        self.experiments
            .iter()
            .scan(0, |row, e| {
                let first = *row;
                *row += e.n_residuals();
                Some(first)
            })
            .collect()
    }

    /// Per bias group and wrench component: the rows and their sigmas.
    fn bias_rows(&self) -> Vec<[Vec<(usize, f64)>; 6]> {
        let first = self.experiment_rows();
        self.bias_groups
            .iter()
            .map(|g| {
                std::array::from_fn(|c| {
                    g.experiments
                        .iter()
                        .map(|&i| {
                            let e = &self.experiments[i];
                            let w = e.base_wrench.as_ref().expect("grouped for its wrench");
                            (first[i] + 3 * e.measurements.len() + c, w.sigma[c])
                        })
                        .collect()
                })
            })
            .collect()
    }

    /// Removes the biases from residual and Jacobian (see
    /// [`Problem::with_sensor_bias_per_session`]): with `d_i = r_i sigma_i`
    /// the prediction minus the reading, the bias is minus their weighted
    /// mean `dbar = sum(r_i / sigma_i) / sum(1 / sigma_i^2)`, and the rows
    /// become `r_i - dbar / sigma_i` (the Jacobian's likewise).
    fn project_biases(&self, residual: &mut DVector<f64>, jac: Option<&mut DMatrix<f64>>) {
        let rows = self.bias_rows();
        for component in rows.iter().flatten() {
            let weight: f64 = component.iter().map(|(_, s)| s.powi(-2)).sum();
            let dbar = component.iter().map(|&(r, s)| residual[r] / s).sum::<f64>() / weight;
            for &(r, s) in component {
                residual[r] -= dbar / s;
            }
        }
        if let Some(jac) = jac {
            for component in rows.iter().flatten() {
                let weight: f64 = component.iter().map(|(_, s)| s.powi(-2)).sum();
                let mean: DVector<f64> = component.iter().map(|&(r, s)| jac.row(r).transpose() / s).sum::<DVector<f64>>() / weight;
                for &(r, s) in component {
                    let mut row = jac.row_mut(r);
                    row -= mean.transpose() / s;
                }
            }
        }
    }

    /// Each session's bias at parameters `p`, with its standard deviation
    /// from the noise (`s2` the residual variance in units of sigma) and
    /// from the parameters' covariance `cov`: `b = -dbar`, `db/dp =
    /// -sum(J_i / sigma_i) / sum(1 / sigma_i^2)` (unprojected rows).
    pub fn fitted_biases(&self, p: &DVector<f64>, cov: &DMatrix<f64>, s2: f64) -> Result<Vec<FittedBias>, ModelError> {
        if self.bias_groups.is_empty() {
            return Ok(vec![]);
        }
        let ev = self.evaluate_uncached(p, true, false)?;
        let jac = ev.jacobian.expect("asked for");
        let rows = self.bias_rows();
        Ok(self
            .bias_groups
            .iter()
            .zip(&rows)
            .map(|(g, components)| {
                let mut wrench = Vec6::zeros();
                let mut sd = Vec6::zeros();
                for (c, component) in components.iter().enumerate() {
                    let weight: f64 = component.iter().map(|(_, s)| s.powi(-2)).sum();
                    wrench[c] = -component.iter().map(|&(r, s)| ev.residual[r] / s).sum::<f64>() / weight;
                    let grad: DVector<f64> = -component.iter().map(|&(r, s)| jac.row(r).transpose() / s).sum::<DVector<f64>>() / weight;
                    let from_params = (grad.transpose() * cov * &grad)[(0, 0)];
                    sd[c] = (s2 / weight + from_params.max(0.0)).sqrt();
                }
                FittedBias { session: g.session.clone(), wrench, sd, holds: g.experiments.len() }
            })
            .collect())
    }

    /// The specimen weighed (`mass_kg` with the scale's standard deviation
    /// `sigma_kg`): a measurement of `rho V_body + m_core`, a row on ln rho
    /// at the rod file's geometry (a fitted radius scale does not enter it).
    /// `None` when rho is not estimated or the mass is not above the core's.
    pub fn with_mass_measurement(self, mass_kg: f64, sigma_kg: f64) -> Option<Problem> {
        let em = self.models.first()?;
        let volume_m3: f64 = em.mass_body.iter().sum();
        let core_kg: f64 = em.mass_0.iter().sum();
        let body_kg = mass_kg - core_kg;
        if !self.layout.fit_rho || body_kg <= 0.0 || volume_m3 <= 0.0 {
            return None;
        }
        Some(self.with_prior(2, (body_kg / volume_m3).ln(), sigma_kg / body_kg))
    }

    /// Adds a Gaussian prior row on parameter `index` (see [`Prior`]).
    pub fn with_prior(mut self, index: usize, mean: f64, sd: f64) -> Problem {
        self.priors.push(Prior { terms: vec![(index, 1.0)], mean, sd, kind: PriorKind::Value });
        self
    }

    /// Partial pooling of the parameters `indices` (one per like part: each
    /// cable's offset): drawn as `p_c = mu + d_c`, `d_c ~ N(0, spread^2)`,
    /// around a common `mu ~ N(mean, sd_mean^2)`, with `mu` integrated out:
    /// rows `(p_c - pbar) / spread` and
    /// `(pbar - mean) / sqrt(spread^2 / K + sd_mean^2)`, `pbar` the group's
    /// mean (their squares sum to the joint prior's exponent). With a large spread each part is on its own
    /// under the prior on their mean; with a small one they move together.
    pub fn with_pooled_prior(mut self, indices: &[usize], mean: f64, sd_mean: f64, spread: f64) -> Problem {
        let k = indices.len() as f64;
        for &i in indices {
            let terms = indices.iter().map(|&j| (j, if j == i { 1.0 - 1.0 / k } else { -1.0 / k })).collect();
            self.priors.push(Prior { terms, mean: 0.0, sd: spread, kind: PriorKind::Pooled });
        }
        let terms = indices.iter().map(|&j| (j, 1.0 / k)).collect();
        self.priors.push(Prior { terms, mean, sd: (spread * spread / k + sd_mean * sd_mean).sqrt(), kind: PriorKind::Pooled });
        self
    }

    /// How many rows at the end of the residual are prior rows.
    pub fn prior_rows(&self) -> usize {
        self.priors.len()
    }

    /// Whether prior row `k` ties two parameters (as G's to E) rather than
    /// saying where a parameter is.
    pub fn is_tie(&self, k: usize) -> bool {
        self.priors[k].kind == PriorKind::Tie
    }

    /// Adds a Gaussian prior row on `p[index] - p[minus]`.
    pub fn with_difference_prior(mut self, index: usize, minus: usize, mean: f64, sd: f64) -> Problem {
        self.priors.push(Prior { terms: vec![(index, 1.0), (minus, -1.0)], mean, sd, kind: PriorKind::Tie });
        self
    }

    pub fn n_residuals(&self) -> usize {
        self.experiments.iter().map(|e| e.n_residuals()).sum::<usize>() + self.priors.len()
    }

    /// Parameter vector for physical values.
    pub fn params(&self, v: &Values) -> DVector<f64> {
        let mut p = vec![v.e_pa.ln(), v.g_pa.ln()];
        if self.layout.fit_rho {
            p.push(v.rho_kg_m3.ln());
        }
        if self.layout.translation {
            p.extend(v.translation_m.iter());
        }
        if self.layout.pitch {
            p.push(v.pitch_rad);
        }
        if self.layout.cable_offset {
            p.push(v.cable_offset_m);
        }
        if self.layout.radius_scale {
            p.push(v.radius_scale);
        }
        p.extend((0..self.layout.cable_offset_each).map(|c| v.cable_offsets_m.get(c).copied().unwrap_or(0.0)));
        p.extend((0..self.layout.cable_angle_each).map(|c| v.angle_of_cable_rad(c)));
        p.extend((0..self.layout.clamp_angle_each).map(|k| v.clamp_angles_rad.get(k).copied().unwrap_or(0.0)));
        if self.layout.friction {
            p.push(v.friction_mu.unwrap_or(0.0));
        }
        DVector::from_vec(p)
    }

    /// Physical values of `p`; what the layout does not estimate is held.
    pub fn values(&self, p: &DVector<f64>) -> Values {
        let l = &self.layout;
        let mut v = Values { e_pa: p[0].exp(), g_pa: p[1].exp(), ..self.held.clone() };
        if l.fit_rho {
            v.rho_kg_m3 = p[2].exp();
        }
        if let Some(i) = l.translation_index() {
            v.translation_m = Vec3::new(p[i], p[i + 1], p[i + 2]);
        }
        if let Some(i) = l.pitch_index() {
            v.pitch_rad = p[i];
        }
        if let Some(i) = l.cable_offset_index() {
            v.cable_offset_m = p[i];
        }
        if let Some(i) = l.radius_scale_index() {
            v.radius_scale = p[i];
        }
        if let Some(i) = l.cable_offset_each_index() {
            v.cable_offsets_m = p.rows(i, l.cable_offset_each).iter().copied().collect();
        }
        if let Some(i) = l.friction_index() {
            v.friction_mu = Some(p[i]);
        }
        if let Some(i) = l.clamp_angle_each_index() {
            v.clamp_angles_rad = p.rows(i, l.clamp_angle_each).iter().copied().collect();
        }
        if let Some(i) = l.cable_angle_each_index() {
            v.cable_angles_rad = p.rows(i, l.cable_angle_each).iter().copied().collect();
        }
        v
    }

    /// Experiment `i`'s model for `v`: cables shifted, stiffness and
    /// masses for the material and the section's scale, base pitched.
    #[doc(hidden)] // public for tests/units.rs only
    pub fn model_at(&self, i: usize, v: &Values) -> Model {
        let em = &self.models[i];
        let mut model = em.model.clone();
        let s = v.radius_scale;
        if v.moves_cables() {
            place_cables(&mut model, &em.model, (&em.cable_spans_2, &em.cable_guides_2), s, v);
        }
        if let Some(mu) = v.friction_mu {
            for c in &mut model.rod.cables {
                c.friction_mu = mu;
            }
        }
        if s != 1.0 {
            // For the fibre strains of the validity check.
            model.rod.cross_section = em.model.rod.cross_section.scaled(s);
        }
        model.stiffness.fill(0.0);
        // A viscoelastic rod's hold sees its relaxed moduli crept.
        em.k_e.add_to(&mut model.stiffness, s, v.e_pa * em.creep);
        em.k_g.add_to(&mut model.stiffness, s, v.g_pa * em.creep);
        em.k_0.add_to(&mut model.stiffness, s, 1.0);
        if model.fibres.is_some() {
            // A hyperelastic body: its fibres at the scaled section, with E.
            if s != 1.0 {
                model.fibres = model.build_fibres();
            }
            if let Some(f) = model.fibres.as_mut() {
                f.modulus_pa = v.e_pa * em.creep;
            }
        }
        model.joint_mass_kg = em.mass_body.iter().zip(&em.mass_0).map(|(b, c)| (b * v.rho_kg_m3 + c) * s * s).collect();
        model.rod.base = self.base_pose(i, v.pitch_rad);
        model
    }

    /// Experiment `i`'s base, pitched by the nuisance angle about world y
    /// through its origin.
    fn base_pose(&self, i: usize, pitch: f64) -> Pose {
        let b = self.experiments[i].base_pose.unwrap_or(self.rod.base);
        let ry = Pose::from_rpy(0.0, pitch, 0.0, Vec3::zeros());
        Pose { rot: ry.rot * b.rot, pos: b.pos }
    }

    /// The wrench the sensor of experiment `i` sees at equilibrium `q` with
    /// the rod's base at `base` (`model.rod.base` is replaced).
    fn sensor_wrench(&self, i: usize, model: &mut Model, q: &DVector<f64>, base: Pose) -> Result<Vec6, ModelError> {
        let sensor = &self.experiments[i].base_wrench.as_ref().expect("a wrench measurement").sensor_in_base;
        model.rod.base = base;
        let w = assemble(model, &self.models[i].loads, q, 1.0, false)?.applied_wrench;
        Ok(base.compose(sensor).coadjoint_apply(&w))
    }

    /// Residuals (and Jacobian) at `p`; cached for the last `p`.
    pub fn evaluate(&self, p: &DVector<f64>, with_jacobian: bool) -> Result<Evaluation, ModelError> {
        if let Some((cp, ev)) = self.cache.borrow().as_ref() {
            if cp == p && (ev.jacobian.is_some() || !with_jacobian) {
                return Ok(ev.clone());
            }
        }
        let ev = self.evaluate_uncached(p, with_jacobian, true)?;
        *self.cache.borrow_mut() = Some((p.clone(), ev.clone()));
        Ok(ev)
    }

    /// `project`: with the sensor biases eliminated (what the fit sees).
    fn evaluate_uncached(&self, p: &DVector<f64>, with_jacobian: bool, project: bool) -> Result<Evaluation, ModelError> {
        let v = self.values(p);
        if !(v.e_pa.is_finite() && v.g_pa.is_finite() && v.rho_kg_m3.is_finite()) || v.e_pa <= 0.0 || v.radius_scale <= 0.0 {
            return Err(ModelError::OutOfRange);
        }
        let np = self.layout.n_params();
        let nr = self.n_residuals();
        let mut residual = DVector::zeros(nr);
        let mut jac = with_jacobian.then(|| DMatrix::zeros(nr, np));
        let mut predicted = vec![];
        let mut qs = vec![];
        let mut row = 0;
        for (i, (exp, em)) in self.experiments.iter().zip(&self.models).enumerate() {
            let base = self.base_pose(i, v.pitch_rad);
            let model = self.model_at(i, &v);
            let warm = self.warm.borrow()[i].clone();
            self.solves.set(self.solves.get() + 1);
            let factors = self.warm_factors.borrow();
            let no_equilibrium = |source| ModelError::NoEquilibrium { experiment: exp.id.clone(), source };
            // A held tip: the held system's unknowns, for its sensitivities.
            let mut held_unknowns = None;
            let hold_i = self.hold_of(i, &v);
            let sol = if let Some(hold) = hold_i {
                // Always from the hold's own start (the arc that turns the
                // tip to its clamp), never from the last parameters' shape:
                // a held rod has several equilibria, and a warm start after
                // a long step of the fit landed a loop on a folded one (53 %
                // fibre strain), its Jacobian then another branch's.
                let held = solve_held(&model, &em.loads, hold, None, &self.options).map_err(no_equilibrium)?;
                held_unknowns = Some(held.unknowns(hold));
                held.solution
            } else {
                match solve_with_factors(&model, &em.loads, warm.as_ref(), factors[i].as_ref().filter(|_| warm.is_some()), &self.options) {
                    Ok(s) => s,
                    Err(_) if warm.is_some() => solve(&model, &em.loads, None, &self.options).map_err(no_equilibrium)?,
                    Err(source) => return Err(no_equilibrium(source)),
                }
            };
            drop(factors);
            let q = sol.q;
            self.warm.borrow_mut()[i] = Some(q.clone());
            // The tangent's assembly computes the kinematics the Jacobian
            // needs; residuals alone need only the frames.
            let asm = if with_jacobian { Some(assemble(&model, &em.loads, &q, 1.0, true)?) } else { None };
            let frames_only;
            let frames = match asm.as_ref().and_then(|a| a.kinematics.as_ref()) {
                Some(k) => &k.frames,
                None => {
                    frames_only = model.frames(&q);
                    &frames_only
                }
            };
            let mut pred = vec![];
            let mut pts = vec![];
            let mut axes = vec![];
            for (m, &j) in exp.measurements.iter().zip(&em.joints) {
                let pw = frames.joints[j].transform_point(&m.offset_body_m);
                let pm = pw + v.translation_m;
                let axis = frames.joints[j].rot.column(0).into_owned();
                let r = PointWeight::new(m, axis).whiten(&(pm - m.pos_m));
                for a in 0..3 {
                    residual[row + 3 * pred.len() + a] = r[a];
                }
                pred.push(pm);
                pts.push(pw);
                axes.push(axis);
            }
            let wrench_row = row + 3 * exp.measurements.len();
            if let Some(wm) = &exp.base_wrench {
                let w = self.sensor_wrench(i, &mut model.clone(), &q, base)?;
                for c in 0..6 {
                    residual[wrench_row + c] = (w[c] - wm.wrench[c]) / wm.sigma[c];
                }
            }
            if let (Some(jac), Some(asm)) = (jac.as_mut(), asm) {
                let kin = asm.kinematics.expect("with tangent");
                let n = model.n_dof();
                let dr = self.parameter_columns(i, &model, &q, &v)?;
                let sens = match (hold_i, &held_unknowns) {
                    // dq/dp through the held system: the hold's equations do
                    // not depend on the parameters.
                    (Some(hold), Some(x)) => {
                        let h = assemble_held(&model, &em.loads, hold, x, true)?.tangent.expect("tangent asked");
                        let rhs = -self.held_parameter_columns(i, &model, hold, x, dr, &v)?;
                        h.lu().solve(&rhs).ok_or(ModelError::SingularTangent)?.rows(0, n).into_owned()
                    }
                    _ => {
                        // A held experiment's free tangent is not factorised:
                        // its sensitivities come from the held system above.
                        let lu = Factors::of(asm.tangent.expect("with tangent"));
                        let sens = lu.solve_columns(&(-dr)).ok_or(ModelError::SingularTangent)?;
                        self.warm_factors.borrow_mut()[i] = Some(lu);
                        sens
                    }
                };
                for (k, (m, &j)) in exp.measurements.iter().zip(&em.joints).enumerate() {
                    // The point's and its axis's derivatives in the parameters.
                    let joint_jacobian = model.joint_jacobian_cow(&kin, j);
                    let pj = point_jacobian(&joint_jacobian, &pts[k]);
                    let mut d_point = &pj * &sens;
                    let weight = PointWeight::new(m, axes[k]);
                    let mut d_axis =
                        if weight.along > 0.0 { (point_jacobian(&joint_jacobian, &(pts[k] + axes[k])) - pj) * &sens } else { nalgebra::Matrix3xX::zeros(np) };
                    if let Some(it) = self.layout.translation_index() {
                        for a in 0..3 {
                            d_point[(a, it + a)] += 1.0;
                        }
                    }
                    if let Some(ip) = self.layout.pitch_index() {
                        // Rigid rotation of the rod about world y through the base.
                        d_point.set_column(ip, &(d_point.column(ip) + Vec3::y().cross(&(pts[k] - base.pos))));
                        d_axis.set_column(ip, &(d_axis.column(ip) + Vec3::y().cross(&axes[k])));
                    }
                    let block = weight.whiten_derivative(&(pred[k] - m.pos_m), &d_point, &d_axis);
                    for a in 0..3 {
                        for c in 0..np {
                            jac[(row + 3 * k + a, c)] = block[(a, c)];
                        }
                    }
                }
                if let Some(wm) = &exp.base_wrench {
                    let block = self.wrench_jacobian(i, &model, &q, base, &sens, &v)?;
                    for a in 0..6 {
                        for c in 0..np {
                            jac[(wrench_row + a, c)] = block[(a, c)] / wm.sigma[a];
                        }
                    }
                }
            }
            let critical_row = wrench_row + if exp.base_wrench.is_some() { 6 } else { 0 };
            for (k, c) in exp.critical.iter().enumerate() {
                let hold = hold_i.ok_or(ModelError::OutOfRange)?;
                let (t, gradient) = self.critical_value(i, &model, hold, c, &q, &v, jac.is_some().then_some(p))?;
                residual[critical_row + k] = (t - c.value) / c.sigma;
                if let (Some(jac), Some(gradient)) = (jac.as_mut(), gradient) {
                    for a in 0..np {
                        jac[(critical_row + k, a)] = gradient[a] / c.sigma;
                    }
                }
            }
            row += exp.n_residuals();
            predicted.push(pred);
            qs.push(q);
        }
        if project {
            self.project_biases(&mut residual, jac.as_mut());
        }
        for (k, prior) in self.priors.iter().enumerate() {
            let combination: f64 = prior.terms.iter().map(|(i, a)| a * p[*i]).sum();
            residual[row + k] = (combination - prior.mean) / prior.sd;
            if let Some(jac) = jac.as_mut() {
                for (i, a) in &prior.terms {
                    jac[(row + k, *i)] = a / prior.sd;
                }
            }
        }
        Ok(Evaluation { residual, jacobian: jac, predicted, q: qs })
    }
}

impl Problem {
    /// Derivative of experiment `i`'s sensor wrench with respect to the
    /// parameters: through the equilibrium (`d/dq`, by central differences
    /// at fixed parameters, times the sensitivities `sens`) plus the direct
    /// parts (rho scales the weight; the pitch turns base and sensor).
    fn wrench_jacobian(&self, i: usize, model: &Model, q: &DVector<f64>, base: Pose, sens: &DMatrix<f64>, v: &Values) -> Result<DMatrix<f64>, ModelError> {
        let np = self.layout.n_params();
        let n = q.len();
        let mut scratch = model.clone();
        let mut d_dq = DMatrix::zeros(6, n);
        let eps = 1e-7;
        for k in 0..n {
            let mut qp = q.clone();
            qp[k] += eps;
            let wp = self.sensor_wrench(i, &mut scratch, &qp, base)?;
            qp[k] -= 2.0 * eps;
            let wm = self.sensor_wrench(i, &mut scratch, &qp, base)?;
            d_dq.set_column(k, &((wp - wm) / (2.0 * eps)));
        }
        let mut out = &d_dq * sens;
        if self.layout.fit_rho {
            let sensor = &self.experiments[i].base_wrench.as_ref().expect("a wrench measurement").sensor_in_base;
            let mut gm = self.models[i].gravity_model.clone();
            gm.rod.base = base;
            let w = assemble(&gm, &Loads::gravity(), q, 1.0, false)?.applied_wrench;
            let dw = base.compose(sensor).coadjoint_apply(&w) * v.rho_kg_m3 * v.radius_scale.powi(2);
            for a in 0..6 {
                out[(a, 2)] += dw[a];
            }
        }
        for (geometry, id) in self.layout.geometry() {
            let e = geometry.step();
            let wp = self.sensor_wrench(i, &mut self.model_at(i, &geometry.moved(v, e)), q, base)?;
            let wm = self.sensor_wrench(i, &mut self.model_at(i, &geometry.moved(v, -e)), q, base)?;
            let dw = (wp - wm) / (2.0 * e);
            for a in 0..6 {
                out[(a, id)] += dw[a];
            }
        }
        if let Some(ip) = self.layout.pitch_index() {
            let e = 1e-6;
            let wp = self.sensor_wrench(i, &mut scratch, q, self.base_pose(i, v.pitch_rad + e))?;
            let wm = self.sensor_wrench(i, &mut scratch, q, self.base_pose(i, v.pitch_rad - e))?;
            let dw = (wp - wm) / (2.0 * e);
            for a in 0..6 {
                out[(a, ip)] += dw[a];
            }
        }
        assert_eq!(out.ncols(), np);
        Ok(out)
    }

    /// Predicted sensor wrench of experiment `i` at equilibrium `q`.
    pub fn predicted_wrench(&self, i: usize, q: &DVector<f64>, values: &Values) -> Option<Vec6> {
        self.experiments[i].base_wrench.as_ref()?;
        let mut model = self.model_at(i, values);
        self.sensor_wrench(i, &mut model, q, self.base_pose(i, values.pitch_rad)).ok()
    }
}

impl Problem {
    /// The static residual's derivatives in the parameters at fixed `q`
    /// (experiment `i`'s model at `v`): columns `n x np`.
    fn parameter_columns(&self, i: usize, model: &Model, q: &DVector<f64>, v: &Values) -> Result<DMatrix<f64>, ModelError> {
        let em = &self.models[i];
        let base = self.base_pose(i, v.pitch_rad);
        let mut dr = DMatrix::zeros(model.n_dof(), self.layout.n_params());
        let s = v.radius_scale;
        // The elastic forces are linear in E and G (a hyperelastic
        // body's too: E times the fibres' unit-modulus forces).
        let mut elastic_e = em.k_e.times(s, q);
        if let Some(f) = &model.fibres {
            elastic_e += f.correction_unit(q, false).1;
        }
        dr.set_column(0, &(elastic_e * (v.e_pa * em.creep)));
        dr.set_column(1, &(em.k_g.times(s, q) * (v.g_pa * em.creep)));
        if self.layout.fit_rho {
            let mut gm = em.gravity_model.clone();
            gm.rod.base = base;
            let g = assemble(&gm, &Loads::gravity(), q, 1.0, false)?.residual;
            dr.set_column(2, &(g * v.rho_kg_m3 * s * s));
        }
        if let Some(ip) = self.layout.pitch_index() {
            let eps = 1e-6;
            let mut mp = model.clone();
            mp.rod.base = self.base_pose(i, v.pitch_rad + eps);
            let rp = assemble(&mp, &em.loads, q, 1.0, false)?.residual;
            mp.rod.base = self.base_pose(i, v.pitch_rad - eps);
            let rm = assemble(&mp, &em.loads, q, 1.0, false)?.residual;
            dr.set_column(ip, &((rp - rm) / (2.0 * eps)));
        }
        for (geometry, id) in self.layout.geometry().into_iter().filter(|(g, _)| !matches!(g, Geometry::ClampAngleOf(_))) {
            // (A clamp's angle moves the hold only: see held_parameter_columns.)
            // Central difference of the residual at fixed q (the cable
            // term is smooth in its offset, stiffness and weight in
            // the scale).
            let eps = geometry.step();
            let residual_at =
                |delta: f64| assemble(&self.model_at(i, &geometry.moved(v, delta)), &em.loads, q, 1.0, false).map(|a| a.residual).map_err(ModelError::from);
            dr.set_column(id, &((residual_at(eps)? - residual_at(-eps)?) / (2.0 * eps)));
        }
        Ok(dr)
    }

    /// Experiment `i`'s tip hold at `v`: as the experiment gives it, turned
    /// by its clamp-angle nuisance where one is fitted.
    fn hold_of(&self, i: usize, v: &Values) -> Option<rod::TipHold> {
        let angle = v.clamp_angles_rad.get(i).copied().unwrap_or(0.0);
        self.models[i].hold.map(|h| if angle == 0.0 { h } else { h.turned_about_world_y(angle) })
    }

    /// The held system's derivatives in the parameters at its unknowns `x`:
    /// the static residual's `dr` (the hold's equations do not depend on
    /// the material) and, for the pitch, the hold's rows too (turning the
    /// base moves the tip at fixed q away from its hold, which stays in
    /// the world).
    fn held_parameter_columns(
        &self,
        i: usize,
        model: &Model,
        hold: rod::TipHold,
        x: &DVector<f64>,
        dr: DMatrix<f64>,
        v: &Values,
    ) -> Result<DMatrix<f64>, ModelError> {
        let n = model.n_dof();
        let mut columns = DMatrix::zeros(n + hold.count(), dr.ncols());
        columns.rows_mut(0, n).copy_from(&dr);
        if let Some(ip) = self.layout.pitch_index() {
            let eps = 1e-6;
            let loads = &self.models[i].loads;
            let mut mp = model.clone();
            mp.rod.base = self.base_pose(i, v.pitch_rad + eps);
            let rp = assemble_held(&mp, loads, hold, x, false)?.residual;
            mp.rod.base = self.base_pose(i, v.pitch_rad - eps);
            let rm = assemble_held(&mp, loads, hold, x, false)?.residual;
            columns.set_column(ip, &((rp - rm) / (2.0 * eps)));
        }
        // Its own clamp's angle moves the hold's rows alone.
        if let Some(ic) = self.layout.clamp_angle_each_index().filter(|_| i < self.layout.clamp_angle_each) {
            let eps = 1e-6;
            let loads = &self.models[i].loads;
            let rp = assemble_held(model, loads, hold.turned_about_world_y(eps), x, false)?.residual;
            let rm = assemble_held(model, loads, hold.turned_about_world_y(-eps), x, false)?.residual;
            columns.set_column(ic + i, &((rp - rm) / (2.0 * eps)));
        }
        Ok(columns)
    }

    /// Experiment `i`'s predicted critical value `c` (the first snap or
    /// buckling along its path, followed from the equilibrium `q` by
    /// [`rod::branch::follow`]) and, with `p`, its gradient in the
    /// parameters: at a limit point from the held system's left null
    /// vector, at a bifurcation by differences of the stability eigenvalue
    /// (`dt/dp = -(dlambda/dp) / (dlambda/dt)`).
    #[allow(clippy::too_many_arguments)]
    fn critical_value(
        &self,
        i: usize,
        model: &Model,
        hold: rod::TipHold,
        c: &CriticalValue,
        q: &DVector<f64>,
        v: &Values,
        p: Option<&DVector<f64>>,
    ) -> Result<(f64, Option<DVector<f64>>), ModelError> {
        let em = &self.models[i];
        let (t_start, hold_at) = c.quantity.from(hold, self.base_pose(i, v.pitch_rad).pos);
        let span = c.value - t_start;
        let mut t_end = t_start + 2.0 * span;
        if c.quantity == CriticalQuantity::ClampDistanceM {
            t_end = t_end.clamp(0.01 * self.rod.length_m, self.rod.length_m);
        }
        let options = BranchOptions { t_end, first_step: span / 12.0, max_points: 400, t_tolerance: 1e-7 * span.abs(), stop_at_first: true };
        let no_equilibrium = |source| ModelError::NoEquilibrium { experiment: self.experiments[i].id.clone(), source };
        let branch = rod::branch::follow(model, &em.loads, &*hold_at, t_start, Some(q), &options, &self.options).map_err(no_equilibrium)?;
        let Some(critical) = branch.critical.into_iter().next() else {
            return Err(ModelError::NoCriticalPoint {
                experiment: self.experiments[i].id.clone(),
                quantity: c.quantity.key(),
                value: c.value,
                from: t_start,
                to: t_end,
            });
        };
        let Some(p) = p else { return Ok((critical.t, None)) };
        let gradient = match critical.kind {
            CriticalKind::LimitPoint => {
                let (psi, psi_h_t) = rod::branch::limit_point_sensitivity(model, &em.loads, &*hold_at, &critical).map_err(no_equilibrium)?;
                let x = critical.point.held.unknowns(hold_at(critical.point.t));
                let dr = self.parameter_columns(i, model, &critical.point.held.solution.q, v)?;
                let columns = self.held_parameter_columns(i, model, hold_at(critical.point.t), &x, dr, v)?;
                -(columns.transpose() * psi) / psi_h_t
            }
            CriticalKind::Bifurcation => {
                let q_star = &critical.point.held.solution.q;
                let lowest = |values: &Values, t: f64| -> Result<f64, ModelError> {
                    let m = self.model_at(i, values);
                    let held = solve_held(&m, &em.loads, hold_at(t), Some(q_star), &self.options).map_err(no_equilibrium)?;
                    Ok(rod::held::stability_eigenvalue(&m, &em.loads, hold_at(t), &held)?)
                };
                let dt = 1e-4 * span.abs();
                let along_t = (lowest(v, critical.t + dt)? - lowest(v, critical.t - dt)?) / (2.0 * dt);
                let eps = 1e-5;
                let mut gradient = DVector::zeros(p.len());
                for a in 0..p.len() {
                    let (mut up, mut down) = (p.clone(), p.clone());
                    up[a] += eps;
                    down[a] -= eps;
                    let along_p = (lowest(&self.values(&up), critical.t)? - lowest(&self.values(&down), critical.t)?) / (2.0 * eps);
                    gradient[a] = -along_p / along_t;
                }
                gradient
            }
        };
        Ok((critical.t, Some(gradient)))
    }
}

impl Operator for Problem {
    type Param = DVector<f64>;
    type Output = DVector<f64>;

    fn apply(&self, p: &Self::Param) -> Result<Self::Output, ArgminError> {
        self.evaluate(p, false).map(|e| e.residual).map_err(|e| ArgminError::msg(e.to_string()))
    }
}

impl Jacobian for Problem {
    type Param = DVector<f64>;
    type Jacobian = DMatrix<f64>;

    fn jacobian(&self, p: &Self::Param) -> Result<Self::Jacobian, ArgminError> {
        self.evaluate(p, true).map(|e| e.jacobian.expect("asked for")).map_err(|e| ArgminError::msg(e.to_string()))
    }
}

/// Borrowed form, so that one problem (and its warm starts) serves many runs.
impl Operator for &Problem {
    type Param = DVector<f64>;
    type Output = DVector<f64>;

    fn apply(&self, p: &Self::Param) -> Result<Self::Output, ArgminError> {
        (**self).apply(p)
    }
}

impl Jacobian for &Problem {
    type Param = DVector<f64>;
    type Jacobian = DMatrix<f64>;

    fn jacobian(&self, p: &Self::Param) -> Result<Self::Jacobian, ArgminError> {
        (**self).jacobian(p)
    }
}

impl Problem {
    /// How far equilibrium `q` of experiment `i` is inside the rod model's
    /// validity (fibre strains, cable stretch).
    pub fn validity(&self, i: usize, q: &DVector<f64>, values: &Values) -> rod::validity::Validity {
        rod::validity::validity(&self.model_at(i, values), q)
    }

    /// Centre line (joint positions, base to tip) of experiment `i` at
    /// equilibrium `q`, in the measurement frame of `values`.
    pub fn shape(&self, i: usize, q: &DVector<f64>, values: &Values) -> Vec<Vec3> {
        let mut model = self.models[i].model.clone();
        model.rod.base = self.base_pose(i, values.pitch_rad);
        model.frames(q).joints.iter().map(|g| g.pos + values.translation_m).collect()
    }
}

/// How a measured point's residual is weighed: each coordinate by its
/// sigma, and a point whose arc length is nominal (a digitised curve,
/// `arc_sigma_m`) with its error along the rod's axis `t` (the section's
/// x) also spread by the arc's: covariance `sigma^2 I + arc_sigma^2 t t^T`,
/// whose inverse square root is `(I - along t t^T) / sigma`. A marker seen
/// as a ray along `d` is measured only across it: the error is projected
/// by `I - d d^T` first (the covariance's limit as its variance along `d`
/// grows without bound).
struct PointWeight {
    sigma_m: f64,
    /// `1 - sigma / sqrt(sigma^2 + arc_sigma^2)`: 0 for a marker.
    along: f64,
    axis: Vec3,
    /// The sighting's projector (the identity for a point).
    across: lie::Mat3,
}

impl PointWeight {
    fn new(m: &crate::Measurement, axis: Vec3) -> PointWeight {
        let along = if m.arc_sigma_m > 0.0 { 1.0 - m.sigma_m / m.sigma_m.hypot(m.arc_sigma_m) } else { 0.0 };
        let across = m.sighting().projector();
        PointWeight { sigma_m: m.sigma_m, along, axis, across }
    }

    /// The whitened residual of the error `r` (model minus measured) \[m\].
    fn whiten(&self, r: &Vec3) -> Vec3 {
        let r = self.across * r;
        (r - self.axis * (self.along * self.axis.dot(&r))) / self.sigma_m
    }

    /// The whitened residual's derivatives, given the error's (`d_r`) and
    /// the axis's (`d_axis`) in the parameters.
    fn whiten_derivative(&self, r: &Vec3, d_r: &nalgebra::Matrix3xX<f64>, d_axis: &nalgebra::Matrix3xX<f64>) -> nalgebra::Matrix3xX<f64> {
        let t = &self.axis;
        let (r, d_r) = (self.across * r, self.across * d_r);
        let mut out = &d_r - t * (t.transpose() * &d_r) * self.along;
        if self.along > 0.0 {
            out -= (d_axis * t.dot(&r) + t * (r.transpose() * d_axis)) * self.along;
        }
        out / self.sigma_m
    }
}
