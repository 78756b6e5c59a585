//! The rod description: a TOML file (`configs/rod/*.toml`) read with serde and
//! validated into a [`Rod`]. Every error names the file and the field.

use crate::fibre::ElasticLaw;
use crate::geometry::{CrossSection, GivenSection, Material, Profile, Shape};
use lie::{Pose, Vec3};
use serde::Deserialize;
use std::path::Path;

/// Which of the six strain components `[Kx, Ky, Kz, Qx, Qy, Qz]` are free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrainModes {
    pub free: [bool; 6],
}

pub const STRAIN_NAMES: [&str; 6] = ["kx", "ky", "kz", "qx", "qy", "qz"];

impl StrainModes {
    pub const COSSERAT: StrainModes = StrainModes { free: [true; 6] };
    pub const EULER_BERNOULLI: StrainModes = StrainModes { free: [false, true, true, false, false, false] };
    pub const KIRCHHOFF_EXTENSIBLE: StrainModes = StrainModes { free: [true, true, true, true, false, false] };
    pub const TIMOSHENKO: StrainModes = StrainModes { free: [false, true, true, false, true, true] };

    pub fn by_name(name: &str) -> Option<StrainModes> {
        match name {
            "cosserat" => Some(Self::COSSERAT),
            "euler-bernoulli" => Some(Self::EULER_BERNOULLI),
            "kirchhoff-extensible" => Some(Self::KIRCHHOFF_EXTENSIBLE),
            "timoshenko" => Some(Self::TIMOSHENKO),
            _ => None,
        }
    }

    /// Indices of the free components.
    pub fn indices(&self) -> Vec<usize> {
        (0..6).filter(|&i| self.free[i]).collect()
    }

    pub fn count(&self) -> usize {
        self.free.iter().filter(|&&f| f).count()
    }
}

/// How strain varies inside a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrainBasis {
    /// Piecewise linear strain (PLS): nodal strains at section boundaries.
    Linear,
    /// Piecewise constant strain (PCS): one strain per section.
    Constant,
}

/// A cable along the rod, pulled at the base: parallel to the rod's
/// surface (at an inset), or in a channel at its own distance from the
/// centre line (`path_radius`).
#[derive(Clone, Debug, PartialEq)]
pub struct Cable {
    pub name: String,
    /// Angle around the rod axis, from body +y towards +z \[rad\].
    pub angle_rad: f64,
    /// Distance of the cable from its path towards the axis \[m\]: from
    /// the outer surface, or from `path_radius` when given (negative:
    /// outwards, e.g. on guide rings; identification moves cables by it).
    pub inset_m: f64,
    /// Arc length where the cable is anchored \[m\].
    pub anchor_m: f64,
    /// A channel's distance from the centre line along the arc, independent
    /// of the section (`path_radius_m`); `None`: the surface's.
    pub path_radius: Option<PathRadius>,
    /// Arc lengths of the guide disks the cable is threaded through
    /// \[m\], increasing, the last at the anchor (`guides_m`): the cable
    /// runs straight between consecutive holes (from the base's) in the
    /// rod's current shape and turns at each. Empty: it follows its path
    /// continuously.
    pub guides_m: Vec<f64>,
    /// Coulomb friction between the cable and its channel (`friction_mu`):
    /// a sliding cable's tension changes by `exp(-+mu theta)` with the
    /// angle `theta` it turns through (the capstan law); 0: frictionless.
    pub friction_mu: f64,
    /// What an intermediate guide disk takes of the cable's pull
    /// (`guide_reaction`).
    pub guide_reaction: GuideReaction,
}

/// What a guide disk the cable passes through takes of its pull.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuideReaction {
    /// The whole pull `T (u_after - u_before)`: a hole's rim, which a
    /// frictionless cable presses along the bisector of its turn; the
    /// gradient of tension x length (conservative).
    #[default]
    Full,
    /// Only the pull's part in the disk's plane (a frictionless bore
    /// pushes across its axis only), the part along the disk's normal
    /// dropped, as the Continuum Robotics Lab's subsegment Cosserat model
    /// does; not the gradient of an energy. The anchor disk takes the
    /// whole pull either way.
    DiskPlane,
}

impl Cable {
    /// A frictionless cable on the surface (no inset, no channel, no guide
    /// disks) at `angle_rad` around the axis, anchored at `anchor_m`; the
    /// other fields by struct update: `Cable { friction_mu: 0.2,
    /// ..Cable::new("c", 0.0, 0.2) }`.
    pub fn new(name: impl Into<String>, angle_rad: f64, anchor_m: f64) -> Cable {
        Cable {
            name: name.into(),
            angle_rad,
            inset_m: 0.0,
            anchor_m,
            path_radius: None,
            guides_m: vec![],
            friction_mu: 0.0,
            guide_reaction: GuideReaction::Full,
        }
    }

    /// The cable's distance from the centre line at arc length `x_m` and
    /// its rate along the arc \[m\], \[m/m\], on a rod of section `cs`
    /// and length `length_m`.
    pub fn distance_m(&self, cs: &crate::CrossSection, x_m: f64, length_m: f64) -> (f64, f64) {
        let (d, slope) = match &self.path_radius {
            Some(p) => p.at(x_m),
            None => cs.surface_distance_m(x_m, length_m, self.angle_rad),
        };
        (d - self.inset_m, slope)
    }
}

/// A channel's distance from the centre line, piecewise linear in the arc
/// length through `[arc_m, radius_m]` points (held constant beyond the
/// first and the last).
#[derive(Clone, Debug, PartialEq)]
pub struct PathRadius {
    pub points: Vec<(f64, f64)>,
}

impl PathRadius {
    /// The radius at `x_m` \[m\] and its rate along the arc.
    pub fn at(&self, x_m: f64) -> (f64, f64) {
        let p = &self.points;
        let k = p.partition_point(|q| q.0 <= x_m);
        if k == 0 {
            return (p[0].1, 0.0);
        }
        if k == p.len() {
            return (p[k - 1].1, 0.0);
        }
        let ((x0, r0), (x1, r1)) = (p[k - 1], p[k]);
        let slope = (r1 - r0) / (x1 - x0);
        (r0 + slope * (x_m - x0), slope)
    }
}

/// A marker on the rod, identified by its index in the rod file (the
/// tracker's marker number). Several may share a section (a cluster, as a
/// motion-capture rigid body is built), in any order; a camera tracker
/// numbers markers from base to tip, so a rod file for camera tracking
/// lists them that way ([`Rod::markers_base_to_tip`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub arc_m: f64,
    /// Offset of the marker's centre from the centre line, body frame \[m\].
    pub offset_body_m: Vec3,
}

/// Kelvin-Voigt damping of the strains (used by the simulator's dynamic
/// mode): internal force `tau K dq/dt`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Damping {
    /// `tau` in seconds.
    TimeConstant(f64),
    /// Damping ratio of the first bending mode: `tau = 2 zeta / omega_1`
    /// (omega_1 from the rod's mass and stiffness at rest).
    Ratio(f64),
}

/// One branch of a generalised Maxwell law (a Prony series): a spring of
/// `modulus_ratio` times the rod's moduli in series with a dashpot of
/// relaxation time `time_constant_s`. The rod's E and G are the relaxed
/// (long-time) moduli; a strain held long relaxes to them, a fast one sees
/// `1 + sum ratio` times them. Every section stiffness (bending, twist,
/// stretch, shear) relaxes alike (a constant Poisson ratio).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PronyBranch {
    pub modulus_ratio: f64,
    pub time_constant_s: f64,
}

/// A constant-loss law (`[damping] constant_loss`), fitted by two numbers:
/// a box relaxation spectrum of height `2 loss_factor / pi` per unit of
/// ln(time) from `shortest_time_s` to `longest_time_s`. Inside the band the
/// loss modulus is `loss_factor` times the relaxed one at every frequency
/// (the nearly flat loss of elastomers and foams) and the storage modulus
/// rises by `2 loss_factor / pi` per e-fold of frequency (Kramers-Kronig's
/// partner of a flat loss); the loss falls to half at the band's ends. It
/// runs as `branches` Maxwell branches spaced evenly in ln(time)
/// (trapezoid weights): at three per decade their moduli are the box's
/// within 2 % of the loss factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConstantLoss {
    /// Loss modulus over the relaxed modulus inside the band \[1\].
    pub loss_factor: f64,
    /// The band's shortest relaxation time \[s\].
    pub shortest_time_s: f64,
    /// The band's longest relaxation time \[s\].
    pub longest_time_s: f64,
    /// How many Maxwell branches carry it (>= 2).
    pub branches: usize,
}

impl ConstantLoss {
    /// Branches per decade of the band when the rod file gives no count.
    pub const BRANCHES_PER_DECADE: f64 = 3.0;

    /// The law over a band with [`Self::BRANCHES_PER_DECADE`] (at least 2).
    pub fn new(loss_factor: f64, shortest_time_s: f64, longest_time_s: f64) -> ConstantLoss {
        let decades = (longest_time_s / shortest_time_s).log10().max(0.0);
        let branches = ((Self::BRANCHES_PER_DECADE * decades).ceil() as usize + 1).max(2);
        ConstantLoss { loss_factor, shortest_time_s, longest_time_s, branches }
    }

    /// The Maxwell branches that carry the law (ratios of the relaxed
    /// modulus, times evenly spaced in ln(time), the two ends at half weight).
    pub fn prony_branches(&self) -> Vec<PronyBranch> {
        let n = self.branches.max(2);
        let span = (self.longest_time_s / self.shortest_time_s).ln();
        let step = span / (n - 1) as f64;
        let height = 2.0 * self.loss_factor / std::f64::consts::PI;
        (0..n)
            .map(|k| {
                let weight = if k == 0 || k == n - 1 { 0.5 * step } else { step };
                PronyBranch { modulus_ratio: height * weight, time_constant_s: self.shortest_time_s * (k as f64 * step).exp() }
            })
            .collect()
    }

    /// The box spectrum's loss modulus over the relaxed modulus at angular
    /// frequency `omega_rad_s` (closed form of the continuous law).
    pub fn loss_ratio(&self, omega_rad_s: f64) -> f64 {
        let height = 2.0 * self.loss_factor / std::f64::consts::PI;
        height * ((omega_rad_s * self.longest_time_s).atan() - (omega_rad_s * self.shortest_time_s).atan())
    }

    /// The box spectrum's storage modulus over the relaxed modulus at
    /// `omega_rad_s` (closed form of the continuous law).
    pub fn storage_ratio(&self, omega_rad_s: f64) -> f64 {
        let height = 2.0 * self.loss_factor / std::f64::consts::PI;
        let (a, b) = ((omega_rad_s * self.longest_time_s).powi(2), (omega_rad_s * self.shortest_time_s).powi(2));
        1.0 + 0.5 * height * ((1.0 + a) / (1.0 + b)).ln()
    }
}

/// A validated rod: geometry, materials, discretisation, loads' frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Rod {
    pub length_m: f64,
    pub section_lengths_m: Vec<f64>,
    pub subsegments_per_section: usize,
    pub modes: StrainModes,
    pub strain_basis: StrainBasis,
    pub cross_section: CrossSection,
    /// The body's law along its fibres (`[material] law`; linear by default).
    pub elastic_law: ElasticLaw,
    /// Rest curvature \[Kx, Ky, Kz\] in 1/m (zero for a straight rod).
    pub rest_curvature_per_m: Vec3,
    pub gravity_m_s2: Vec3,
    pub base: Pose,
    pub cables: Vec<Cable>,
    /// Markers, by index (clusters on one section allowed, any order).
    pub markers: Vec<Marker>,
    /// Material damping (simulator only; `None`: undamped).
    pub damping: Option<Damping>,
    /// Viscoelastic branches beside the relaxed moduli (`[damping]
    /// branches`; simulator only, empty: elastic).
    pub viscoelastic: Vec<PronyBranch>,
    /// The constant-loss law behind `viscoelastic` when the rod file gives
    /// one (`[damping] constant_loss`): its branches are `viscoelastic`.
    pub constant_loss: Option<ConstantLoss>,
    /// Priors of the geometry identification can learn (`[identify]`).
    pub identify_priors: IdentifyPriors,
    /// How the tip is held (`[tip] condition`): free by default; a pinned
    /// or clamped tip takes its position (and rotation) from each
    /// experiment.
    pub tip_condition: TipCondition,
    /// The specimen weighed: its mass and the scale's standard deviation
    /// \[kg\] (`[material] mass_kg`, `mass_sigma_kg`, or per length times
    /// the length). Identification takes it as a measurement of rho.
    pub weighed_mass_kg: Option<(f64, f64)>,
}

/// `[tip] condition`: how the rod's tip is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TipCondition {
    /// A free tip (the default).
    #[default]
    Free,
    /// The tip's centre held at a position, free to turn.
    Pinned,
    /// The tip's section held at a pose (position and rotation).
    Clamped,
}

impl TipCondition {
    /// The rod file's spelling.
    pub fn key(&self) -> &'static str {
        match self {
            TipCondition::Free => "free",
            TipCondition::Pinned => "pinned",
            TipCondition::Clamped => "clamped",
        }
    }
}

/// `[identify]`: priors (mean, standard deviation) of geometry parameters
/// that identification may estimate when asked (off by default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IdentifyPriors {
    /// The cables' outward offset from their position above \[m\].
    pub cable_offset_m: Option<(f64, f64)>,
    /// Scale of every radius of the cross-section (outer, hole, core);
    /// 1 is the rod file's section. The cables keep their inset, so they
    /// move with the surface; markers keep their place. See
    /// [`Rod::with_geometry`].
    pub radius_scale: Option<(f64, f64)>,
    /// Each cable's turn about the rod's axis from its `angle_deg` \[rad\]
    /// (read from `cable_angle_deg`, in degrees).
    pub cable_angle_rad: Option<(f64, f64)>,
    /// The cables' friction coefficient in their channels (`friction_mu`).
    pub friction_mu: Option<(f64, f64)>,
    /// Each experiment's tip-clamp turn about the world's y axis \[rad\]
    /// (read from `clamp_angle_deg`, in degrees): a clamp known only to
    /// within a tracing.
    pub clamp_angle_rad: Option<(f64, f64)>,
    /// The physical ranges identified material values must fall inside
    /// (`[identify] e_pa_range = [min, max]`, ...): a fit at or beyond one
    /// is a failed identification, not a result.
    pub ranges: MaterialRanges,
    /// What the model may miss at a marker beyond its measurement noise
    /// \[m\] (`[identify] model_error_m`, default 0): added in quadrature to
    /// the markers' sigma when the residuals are tested against the noise.
    pub model_error_m: f64,
    /// Identify E with G tied to it by this Poisson's ratio, `G = E / (2
    /// (1 + nu))` (`\[identify\] tie_g_poisson`): for data that cannot see G
    /// (loads in one plane, no torsion), of a material whose nu is known
    /// (silicone: nearly incompressible, 0.45-0.5).
    pub tie_g_poisson: Option<f64>,
}

/// A Poisson's ratio G can be tied to E by: in (-1, 0.5].
pub fn poisson_for_tie(nu: f64) -> Result<f64, String> {
    if nu.is_finite() && nu > -1.0 && nu <= 0.5 {
        Ok(nu)
    } else {
        Err(format!("a Poisson's ratio in (-1, 0.5], got {nu}"))
    }
}

/// Most sections a rod file may have: 500 give 3006 strain coordinates,
/// dense matrices of 72 MB (200,000 asked for 11 TB).
pub const MAX_SECTIONS: usize = 500;
/// Most rows of a table along the rod (a radius profile, a channel's
/// path radius, a cable's guide disks): a profile measured every
/// millimetre of a metre; each row is a breakpoint the model cuts its
/// sub-segments at (10^5 rows took 232 s, and 10^6 never ended).
pub const MAX_TABLE_ROWS: usize = 1000;
/// Most sub-segments per section (the integration points' count).
pub const MAX_SUBSEGMENTS: usize = 64;

/// Physical ranges of identified material values (SI).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaterialRanges {
    pub e_pa: (f64, f64),
    pub g_pa: (f64, f64),
    pub rho_kg_m3: (f64, f64),
}

impl Default for MaterialRanges {
    /// From the softest gels a rod is cast from (1 kPa) to steel (hundreds of
    /// GPa), and from foams (50 kg/m^3) to tungsten (19 300 kg/m^3).
    fn default() -> MaterialRanges {
        MaterialRanges { e_pa: (1e3, 1e12), g_pa: (3e2, 5e11), rho_kg_m3: (50.0, 2.5e4) }
    }
}

impl Rod {
    /// A uniform solid cylinder, gravity along -z, straight, Cosserat modes:
    /// handy for analytic tests.
    pub fn uniform_cylinder(length_m: f64, radius_m: f64, material: Material, sections: usize) -> Rod {
        Rod {
            length_m,
            section_lengths_m: vec![length_m / sections as f64; sections],
            subsegments_per_section: 8,
            modes: StrainModes::COSSERAT,
            strain_basis: StrainBasis::Linear,
            cross_section: CrossSection::round(Profile::constant(radius_m), material),
            elastic_law: ElasticLaw::Linear,
            rest_curvature_per_m: Vec3::zeros(),
            gravity_m_s2: Vec3::new(0.0, 0.0, -9.81),
            base: Pose::identity(),
            cables: vec![],
            markers: vec![],
            damping: None,
            viscoelastic: vec![],
            constant_loss: None,
            identify_priors: IdentifyPriors::default(),
            tip_condition: TipCondition::Free,
            weighed_mass_kg: None,
        }
    }

    /// Whether the markers are listed from base to tip with strictly
    /// increasing arc lengths: what a camera tracker's numbering needs (a
    /// cluster or another order needs a tracker that names its markers).
    pub fn markers_base_to_tip(&self) -> bool {
        self.markers.windows(2).all(|w| w[1].arc_m > w[0].arc_m)
    }

    /// The same rod with `n` equal sections.
    pub fn with_equal_sections(&self, n: usize) -> Rod {
        Rod { section_lengths_m: vec![self.length_m / n as f64; n], ..self.clone() }
    }

    pub fn with_basis(&self, strain_basis: StrainBasis) -> Rod {
        Rod { strain_basis, ..self.clone() }
    }

    pub fn with_modes(&self, modes: StrainModes) -> Rod {
        Rod { modes, ..self.clone() }
    }

    pub fn with_material(&self, body: Material) -> Rod {
        let mut r = self.clone();
        r.cross_section.body = body;
        r
    }

    /// The same rod with every radius of its section (outer, hole, core)
    /// multiplied by `radius_scale` and every cable moved `cable_offset_m`
    /// outwards (cables keep their inset otherwise, so they follow the
    /// surface): the geometry identification can learn.
    pub fn with_geometry(&self, radius_scale: f64, cable_offset_m: f64) -> Rod {
        let mut r = self.clone();
        r.cross_section = r.cross_section.scaled(radius_scale);
        for c in &mut r.cables {
            c.inset_m -= cable_offset_m;
        }
        r
    }

    /// The same rod with cable `c` moved `offsets_m[c]` outwards (cables
    /// beyond the list stay).
    pub fn with_cable_offsets(&self, offsets_m: &[f64]) -> Rod {
        let mut r = self.clone();
        for (c, d) in r.cables.iter_mut().zip(offsets_m) {
            c.inset_m -= d;
        }
        r
    }

    /// The same rod with cable `c` turned `turns_rad[c]` about the rod's
    /// axis from its angle (cables beyond the list stay).
    pub fn with_cable_angles(&self, turns_rad: &[f64]) -> Rod {
        let mut r = self.clone();
        for (c, a) in r.cables.iter_mut().zip(turns_rad) {
            c.angle_rad += a;
        }
        r
    }

    /// Section boundaries (N + 1 arc lengths from 0 to L).
    pub fn section_boundaries_m(&self) -> Vec<f64> {
        let mut x = vec![0.0];
        let mut acc = 0.0;
        for l in &self.section_lengths_m {
            acc += l;
            x.push(acc);
        }
        // Remove the rounding of the sum at the tip.
        *x.last_mut().unwrap() = self.length_m;
        x
    }

    /// Reads and validates a rod file.
    pub fn from_file(path: &Path) -> Result<Rod, ConfigError> {
        let file = path.display().to_string();
        let text = fault::read_text(path, fault::CONFIG_LIMIT_BYTES).map_err(|e| ConfigError::new(&file, "", format!("cannot read rod file: {e}")))?;
        Rod::from_toml_str(&text, &file)
    }

    pub fn from_toml_str(text: &str, file: &str) -> Result<Rod, ConfigError> {
        let raw: RawRod = parse_toml(text, file)?;
        raw.validate(file)
    }
}

/// Parses TOML text into `T`; a syntax or type error names the file and
/// the line.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        let msg = in_toml_words(&e.message().replace('\n', " "));
        match line {
            Some(l) => ConfigError::new(file, &format!("line {l}"), msg),
            None => ConfigError::new(file, "", msg),
        }
    })
}

/// A TOML error in the file's words, not the parser's types: "expected
/// struct RawPrior" reads "expected a table", "expected enum X" "expected
/// one of the listed words".
fn in_toml_words(msg: &str) -> String {
    let mut out = String::new();
    let mut rest = msg;
    while let Some(at) = rest.find("expected struct ").or_else(|| rest.find("expected enum ")) {
        let is_struct = rest[at..].starts_with("expected struct ");
        let head = if is_struct { "expected struct ".len() } else { "expected enum ".len() };
        let name_len = rest[at + head..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len() - at - head);
        out.push_str(&rest[..at]);
        out.push_str(if is_struct { "expected a table ({ key = value, ... })" } else { "expected one of the listed words" });
        rest = &rest[at + head + name_len..];
    }
    out.push_str(rest);
    out
}

/// Reads a TOML file into `T` (`kind` names it in the error: "scene file").
pub fn read_toml_file<T: serde::de::DeserializeOwned>(path: &Path, kind: &str) -> Result<T, ConfigError> {
    let file = path.display().to_string();
    let text = fault::read_text(path, fault::CONFIG_LIMIT_BYTES).map_err(|e| ConfigError::new(&file, "", format!("cannot read {kind}: {e}")))?;
    parse_toml(&text, &file)
}

/// One-line error naming the file and the field.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

impl fault::Fault for ConfigError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

impl ConfigError {
    pub fn new(file: &str, field: &str, message: impl Into<String>) -> Self {
        Self { file: file.to_string(), field: field.to_string(), message: message.into() }
    }
}

/// The rod file's JSON schema: every field with its type, default and
/// documentation (`rodlab schema rod`, docs/reference/rod.md).
pub fn file_schema() -> schemars::Schema {
    schemars::schema_for!(RawRod)
}

/// A rod file: geometry, material, strain basis, markers, cables, mount.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRod {
    /// The rod's length L \[m\].
    length_m: f64,
    /// Lengths of the sections \[m\], from the base; they sum to length_m (strain is linear, or constant, in each).
    sections_m: Vec<f64>,
    /// Quadrature sub-segments per section (Magnus steps; more for strongly curved rods).
    #[serde(default = "default_subsegments")]
    subsegments_per_section: usize,
    /// Free strain components: "cosserat" (all six; default), "euler-bernoulli", "kirchhoff-extensible", "timoshenko", or a list of names from "kx", "ky", "kz", "qx", "qy", "qz".
    #[serde(default = "default_modes")]
    modes: RawModes,
    /// "pls" (piecewise linear, default) or "pcs" (piecewise constant).
    #[serde(default)]
    strain_basis: Option<String>,
    /// A round section's radius: `base_m` and `tip_m` (linear taper) or a `table` of `[X_m, r_m]`.
    radius: Option<RawProfile>,
    /// A rectangle or a section given by its properties (instead of
    /// `[radius]`).
    section: Option<RawSection>,
    /// A round hole along the centre line (a tube), as a profile like `[radius]`.
    hole: Option<RawProfile>,
    /// The body's material.
    material: RawMaterial,
    /// A stiff round core along the centre line (a steel wire), of its own material.
    core: Option<RawCore>,
    /// Curvature of the unloaded rod \[1/m\] about the section's x, y, z axes (default: straight).
    #[serde(default)]
    rest_curvature_per_m: Option<[f64; 3]>,
    /// Gravity in the rod's world \[m/s^2\] (a session's rig overrides it).
    #[serde(default = "default_gravity")]
    gravity_m_s2: [f64; 3],
    /// The rod's base: its pose in the world, or its mount on the robot's flange when a session has a robot.
    base: Option<RawBase>,
    /// Cables along the rod, each a `[[cable]]` table.
    #[serde(default, rename = "cable")]
    cables: Vec<RawCable>,
    /// Markers on the rod, each a `[[marker]]` table; a marker's number is its place in this list (from 0). A camera tracker numbers markers from the base to the tip, so a rod file for camera tracking lists them base to tip; a motion-capture map names each by its number, so clusters may be listed in any order.
    #[serde(default, rename = "marker")]
    markers: Vec<RawMarker>,
    /// Material damping for dynamic simulation: Kelvin-Voigt (time_constant_s or damping_ratio) and/or viscoelastic branches (a Prony series).
    damping: Option<RawDamping>,
    /// Priors and ranges for identification: `[identify]`.
    identify: Option<RawIdentify>,
    /// How the tip is held: `[tip] condition = "free" | "pinned" | "clamped"`.
    tip: Option<RawTip>,
}

/// `[tip]`: how the rod's tip is held.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTip {
    /// "free" (default), "pinned" (the tip's centre at a position each experiment gives: inputs.csv's tip_position_x_m, _y_m, _z_m) or "clamped" (its pose: those and tip_rotation_x_rad, _y_rad, _z_rad, a rotation vector in the world frame).
    #[serde(default = "default_tip_condition")]
    condition: String,
}

fn default_tip_condition() -> String {
    "free".into()
}

/// `[identify]`: `cable_offset_m = { mean = 0.0, sd = 0.005 }`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawIdentify {
    /// Prior of every cable's offset from its nominal path \[m\], `{ mean, sd }`: estimated when given.
    cable_offset_m: Option<RawPrior>,
    /// Prior of a factor on the radius (or width and height), `{ mean, sd }`: estimated when given.
    radius_scale: Option<RawPrior>,
    /// Prior of the cables' angular position \[deg\], `{ mean, sd }`: estimated when given.
    cable_angle_deg: Option<RawPrior>,
    /// Prior of the cables' friction coefficient in their channels, `{ mean, sd }` (mean >= 0): estimated when given (`--fit-friction`), from pulls that load and unload.
    friction_mu: Option<RawPrior>,
    /// Prior of each experiment's tip-clamp angle about the world's y axis from what it says \[deg\], `{ mean, sd }`: estimated with `--fit-clamp-angle` (a clamped tip traced on a photograph in the x-z plane).
    clamp_angle_deg: Option<RawPrior>,
    /// Plausible range of E \[Pa\], `[min, max]`: a fit at or beyond it is flagged.
    e_pa_range: Option<[f64; 2]>,
    /// Plausible range of G \[Pa\], `[min, max]`.
    g_pa_range: Option<[f64; 2]>,
    /// Plausible range of rho \[kg/m^3\], `[min, max]`.
    rho_kg_m3_range: Option<[f64; 2]>,
    /// What the model may miss at a marker beyond its measurement noise \[m\] (default 0): added in quadrature to the markers' sigma in the residual tests.
    model_error_m: Option<f64>,
    /// Identify E with G = E / (2 (1 + nu)) tied by this Poisson's ratio (data that cannot see G: loads in one plane, no torsion).
    tie_g_poisson: Option<f64>,
}

/// A Gaussian prior.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPrior {
    /// Mean of the prior.
    mean: f64,
    /// Standard deviation of the prior (> 0).
    sd: f64,
}

/// `[damping]`: Kelvin-Voigt (`time_constant_s` or `damping_ratio`), and/or
/// viscoelastic `branches` (a Prony series).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawDamping {
    /// Kelvin-Voigt time constant tau \[s\]: internal force tau K dq/dt.
    time_constant_s: Option<f64>,
    /// Damping ratio zeta of the first bending mode: tau = 2 zeta / omega_1.
    damping_ratio: Option<f64>,
    /// Generalised Maxwell branches (a Prony series): the material's E and G are the relaxed moduli; each branch adds modulus_ratio times them, relaxing with time_constant_s \[s\]. `branches = [{ modulus_ratio = 0.3, time_constant_s = 0.05 }]`.
    #[serde(default)]
    branches: Vec<RawPronyBranch>,
    /// A constant-loss law instead of branches: a loss modulus loss_factor times the relaxed one, flat in frequency over the band of relaxation times \[shortest_time_s, longest_time_s\], with the storage modulus rising as a flat loss demands. `constant_loss = { loss_factor = 0.1, shortest_time_s = 0.002, longest_time_s = 0.5 }`.
    constant_loss: Option<RawConstantLoss>,
}

/// `[damping.constant_loss]`: a box relaxation spectrum.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawConstantLoss {
    /// Loss modulus over the relaxed modulus inside the band (> 0): a mode inside the band decays with a damping ratio of about loss_factor / 2 over its storage ratio.
    loss_factor: f64,
    /// The band's shortest relaxation time \[s\] (> 0; fits hold it).
    shortest_time_s: f64,
    /// The band's longest relaxation time \[s\] (> shortest_time_s): how far below the fast moduli a slow motion relaxes.
    longest_time_s: f64,
    /// Maxwell branches that carry the law (>= 2; default: three per decade of the band).
    branches: Option<usize>,
}

/// `[[damping.branches]]`: one Maxwell branch.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPronyBranch {
    /// The branch's modulus over the relaxed modulus (> 0).
    modulus_ratio: f64,
    /// Its relaxation time \[s\] (> 0).
    time_constant_s: f64,
}

/// A marker on the rod.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawMarker {
    /// Arc length of the marker along the rod \[m\], 0 <= arc_m <= length_m.
    arc_m: f64,
    /// Offset from the centre line along the section's y axis \[m\] (a marker on the surface).
    #[serde(default)]
    offset_y_m: f64,
    /// Offset from the centre line along the section's z axis \[m\].
    #[serde(default)]
    offset_z_m: f64,
}

fn default_subsegments() -> usize {
    8
}
fn default_modes() -> RawModes {
    RawModes::Named("cosserat".into())
}
fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawModes {
    Named(String),
    Custom(Vec<String>),
}

/// A length along the rod: linear from base to tip, or a table.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    /// Value at the base \[m\] (with tip_m: linear along the rod).
    base_m: Option<f64>,
    /// Value at the tip \[m\].
    tip_m: Option<f64>,
    /// [\[X_m, r_m\], ...]
    table: Option<Vec<[f64; 2]>>,
}

/// `[section]`: `shape = "rectangle"` (width_m, height_m: a number or a
/// profile; wall_m; shear coefficients) or `shape = "general"` (the
/// properties with units in their names, and the bounding box).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawSection {
    /// "rectangle" (width_m, height_m, optional wall_m) or "general" (the properties below).
    shape: String,
    /// Rectangle: width along the section's y axis \[m\], a number or a profile.
    width_m: Option<RawLength>,
    /// Rectangle: height along the section's z axis \[m\], a number or a profile.
    height_m: Option<RawLength>,
    /// Rectangle: wall thickness of a rectangular tube \[m\].
    wall_m: Option<f64>,
    /// Shear coefficient along y (default: the shape's).
    shear_coefficient_y: Option<f64>,
    /// Shear coefficient along z (default: the shape's).
    shear_coefficient_z: Option<f64>,
    /// General: shear area along y \[m^2\].
    shear_area_y_m2: Option<f64>,
    /// General: shear area along z \[m^2\].
    shear_area_z_m2: Option<f64>,
    /// General: area \[m^2\].
    area_m2: Option<f64>,
    /// General: second moment of area about y \[m^4\].
    second_moment_y_m4: Option<f64>,
    /// General: second moment of area about z \[m^4\].
    second_moment_z_m4: Option<f64>,
    /// General: torsion constant \[m^4\].
    torsion_constant_m4: Option<f64>,
}

/// A length: one number, or a profile along the rod.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawLength {
    Constant(f64),
    Profile(RawProfile),
}

impl RawLength {
    fn validate(&self, file: &str, field: &str, length: f64) -> Result<Profile, ConfigError> {
        let p = match self {
            RawLength::Constant(v) => Profile::constant(positive(file, field, *v)?),
            RawLength::Profile(p) => p.validate(file, field, length)?,
        };
        positive_along(file, field, &p, length)?;
        Ok(p)
    }
}

/// A channel cast in the body lies inside its section: checked where the
/// channel's radius or the section's outline changes slope (both are
/// piecewise linear in the arc length), up to the cable's anchor. A cable
/// outside the body runs through guide disks (`guides_m`).
fn channel_inside(
    file: &str,
    field: &str,
    path: &PathRadius,
    cable: &Cable,
    section: &crate::CrossSection,
    (anchor, length): (f64, f64),
) -> Result<(), ConfigError> {
    let mut xs: Vec<f64> =
        [0.0, anchor].into_iter().chain(path.points.iter().map(|p| p.0)).chain(section.breakpoints()).filter(|x| (0.0..=anchor).contains(x)).collect();
    xs.sort_by(f64::total_cmp);
    for x in xs {
        let (surface, _) = section.surface_distance_m(x, length, cable.angle_rad);
        let (channel, _) = path.at(x);
        if channel > surface * (1.0 + 1e-9) {
            return Err(ConfigError::new(
                file,
                &format!("{field}.path_radius_m"),
                format!("the channel lies {channel} m from the centre line at X = {x}, outside the section (its surface at {surface} m): a cable outside the body runs through guide disks (guides_m)"),
            ));
        }
    }
    Ok(())
}

/// A table along the rod of `rows` rows, refused past [`MAX_TABLE_ROWS`].
fn too_many_rows(file: &str, field: &str, rows: usize) -> Result<(), ConfigError> {
    if rows > MAX_TABLE_ROWS {
        return Err(ConfigError::new(
            file,
            field,
            format!("{rows} rows, over the {MAX_TABLE_ROWS} a table along the rod may have (every row cuts the model's sub-segments)"),
        ));
    }
    Ok(())
}

/// A profile positive along the whole rod (its ends and kinks checked: it
/// is linear between them).
fn positive_along(file: &str, field: &str, p: &Profile, length: f64) -> Result<(), ConfigError> {
    for x in [0.0, length].into_iter().chain(p.breakpoints()) {
        if p.radius_m(x, length) <= 0.0 {
            return Err(ConfigError::new(file, field, format!("must be positive, is {} at X = {x}", p.radius_m(x, length))));
        }
    }
    Ok(())
}

impl RawSection {
    /// `poisson`: the body's Poisson's ratio (for Cowper's coefficient).
    fn validate(&self, file: &str, length: f64, poisson: f64) -> Result<Shape, ConfigError> {
        let f = |name: &str| format!("section.{name}");
        let coefficient = |name: &str, v: Option<f64>| -> Result<Option<f64>, ConfigError> {
            match v {
                None => Ok(None),
                Some(k) if k.is_finite() && k > 0.0 && k <= 1.0 => Ok(Some(k)),
                Some(k) => Err(ConfigError::new(file, &f(name), format!("a shear coefficient lies in (0, 1], got {k}"))),
            }
        };
        let (ky, kz) = (coefficient("shear_coefficient_y", self.shear_coefficient_y)?, coefficient("shear_coefficient_z", self.shear_coefficient_z)?);
        let not_for = |fields: &[(&str, bool)], shape: &str| -> Result<(), ConfigError> {
            match fields.iter().find(|(_, given)| *given) {
                Some((name, _)) => Err(ConfigError::new(file, &f(name), format!("not a field of shape = \"{shape}\""))),
                None => Ok(()),
            }
        };
        match self.shape.as_str() {
            "rectangle" => {
                not_for(
                    &[
                        ("area_m2", self.area_m2.is_some()),
                        ("second_moment_y_m4", self.second_moment_y_m4.is_some()),
                        ("second_moment_z_m4", self.second_moment_z_m4.is_some()),
                        ("torsion_constant_m4", self.torsion_constant_m4.is_some()),
                        ("shear_area_y_m2", self.shear_area_y_m2.is_some()),
                        ("shear_area_z_m2", self.shear_area_z_m2.is_some()),
                    ],
                    "rectangle",
                )?;
                let need = |name: &str, v: &Option<RawLength>| -> Result<Profile, ConfigError> {
                    match v {
                        Some(v) => v.validate(file, &f(name), length),
                        None => Err(ConfigError::new(file, &f(name), "missing (a rectangle needs width_m and height_m)")),
                    }
                };
                let width = need("width_m", &self.width_m)?;
                let height = need("height_m", &self.height_m)?;
                let wall_m = match self.wall_m {
                    None => None,
                    Some(t) => {
                        let t = positive(file, &f("wall_m"), t)?;
                        for x in [0.0, length].into_iter().chain(width.breakpoints()).chain(height.breakpoints()) {
                            if 2.0 * t >= width.radius_m(x, length).min(height.radius_m(x, length)) {
                                return Err(ConfigError::new(file, &f("wall_m"), format!("two walls fill the section at X = {x}: the rectangle is solid")));
                            }
                        }
                        Some(t)
                    }
                };
                let default = match wall_m {
                    None => [crate::geometry::rectangle_shear_coefficient(poisson); 2],
                    Some(t) => crate::geometry::rectangle_tube_shear_coefficients(width.radius_m(0.0, length), height.radius_m(0.0, length), t),
                };
                Ok(Shape::Rectangle { width, height, wall_m, shear_coefficient: [ky.unwrap_or(default[0]), kz.unwrap_or(default[1])] })
            }
            "general" => {
                not_for(&[("wall_m", self.wall_m.is_some())], "general")?;
                let need = |name: &str, v: Option<f64>| {
                    positive(
                        file,
                        &f(name),
                        v.ok_or_else(|| {
                            ConfigError::new(
                                file,
                                &f(name),
                                "missing (a general section needs area_m2, second_moment_y_m4, second_moment_z_m4, torsion_constant_m4, width_m, height_m)",
                            )
                        })?,
                    )
                };
                let extent = |name: &str, v: &Option<RawLength>| match v {
                    Some(RawLength::Constant(x)) => positive(file, &f(name), *x),
                    Some(RawLength::Profile(_)) => Err(ConfigError::new(file, &f(name), "a general section is constant along the rod: give one number")),
                    None => Err(ConfigError::new(file, &f(name), "missing (the bounding box stands for the surface: cables, contact, fibre strain)")),
                };
                let area_m2 = need("area_m2", self.area_m2)?;
                let shear = |name_k: &str, k: Option<f64>, name_a: &str, a: Option<f64>| -> Result<f64, ConfigError> {
                    match (k, a) {
                        (Some(_), Some(_)) => Err(ConfigError::new(file, &f(name_k), format!("give {name_k} or {name_a}, not both"))),
                        (Some(k), None) => Ok(k),
                        (None, Some(a)) => {
                            let a = positive(file, &f(name_a), a)?;
                            if a > area_m2 {
                                return Err(ConfigError::new(file, &f(name_a), format!("exceeds area_m2 = {area_m2}")));
                            }
                            Ok(a / area_m2)
                        }
                        (None, None) => Err(ConfigError::new(file, &f(name_k), format!("missing ({name_k} or {name_a})"))),
                    }
                };
                Ok(Shape::Given(GivenSection {
                    area_m2,
                    second_moment_y_m4: need("second_moment_y_m4", self.second_moment_y_m4)?,
                    second_moment_z_m4: need("second_moment_z_m4", self.second_moment_z_m4)?,
                    torsion_constant_m4: need("torsion_constant_m4", self.torsion_constant_m4)?,
                    shear_coefficient_y: shear("shear_coefficient_y", ky, "shear_area_y_m2", self.shear_area_y_m2)?,
                    shear_coefficient_z: shear("shear_coefficient_z", kz, "shear_area_z_m2", self.shear_area_z_m2)?,
                    width_m: extent("width_m", &self.width_m)?,
                    height_m: extent("height_m", &self.height_m)?,
                }))
            }
            other => Err(ConfigError::new(file, "section.shape", format!("unknown shape '{other}' (rectangle or general; a round rod gives [radius])"))),
        }
    }
}

/// A material.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawMaterial {
    /// Young's modulus E \[Pa\].
    e_pa: f64,
    /// Shear modulus G \[Pa\] (or give poisson).
    g_pa: Option<f64>,
    /// Poisson's ratio nu: G = E / (2 (1 + nu)) when g_pa is not given.
    poisson: Option<f64>,
    /// Density \[kg/m^3\].
    rho_kg_m3: f64,
    /// "linear" (default), "neo_hookean" or "mooney_rivlin".
    law: Option<String>,
    /// C01 / (C10 + C01) of a Mooney-Rivlin law, in [0, 1).
    c01_fraction: Option<f64>,
    /// The specimen's mass on a scale \[kg\] (with mass_sigma_kg): identification takes it as a measurement of rho (gravity-loaded shapes alone see only E / rho).
    mass_kg: Option<f64>,
    /// The scale's standard deviation \[kg\] (> 0).
    mass_sigma_kg: Option<f64>,
    /// Or the mass per length \[kg/m\] (with mass_per_length_sigma_kg_m), of a sample cut from the same stock.
    mass_per_length_kg_m: Option<f64>,
    /// Its standard deviation \[kg/m\] (> 0).
    mass_per_length_sigma_kg_m: Option<f64>,
}

/// A round core of another material along the centre line.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawCore {
    /// The core's radius \[m\].
    radius_m: f64,
    /// Its Young's modulus \[Pa\].
    e_pa: f64,
    /// Its shear modulus \[Pa\] (or poisson).
    g_pa: Option<f64>,
    /// Its Poisson's ratio.
    poisson: Option<f64>,
    /// Its density \[kg/m^3\].
    rho_kg_m3: f64,
}

/// The base's pose: in the world, or on the flange (a session with a robot).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBase {
    /// Position \[m\].
    #[serde(default)]
    position_m: [f64; 3],
    /// Roll, pitch, yaw in degrees (R = Rz(yaw) Ry(pitch) Rx(roll)).
    #[serde(default)]
    rpy_deg: [f64; 3],
}

/// A cable running along the rod, anchored at anchor_m.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawCable {
    /// The cable's name (scenes and loads files pull it by name; default: its index).
    name: Option<String>,
    /// Angle around the rod axis, from the section's +y towards +z \[deg\].
    angle_deg: f64,
    /// Distance from the outer surface towards the axis \[m\] (negative: outside the surface, on guide rings); not with path_radius_m.
    #[serde(default)]
    inset_m: f64,
    /// A channel's distance from the centre line \[m\], independent of the section (a tapered arm with straight channels): a number, or a table of `[arc_m, radius_m]` pairs (linear between them, constant beyond); default: the surface's, less inset_m.
    path_radius_m: Option<RawPathRadius>,
    /// Arc length where it is anchored \[m\] (default: the tip).
    anchor_m: Option<f64>,
    /// The arc lengths of the guide disks (spacer disks, 3D-printed rings) the cable is threaded through \[m\], increasing, in (0, anchor_m]: the cable runs straight from the base's hole to the first disk's and between consecutive disks, in the rod's current shape, and ends at the anchor (added as the last disk when not listed); its hole in each disk lies at the cable's distance (path_radius_m, or the surface less inset_m). Default: none, the cable follows its path continuously.
    #[serde(default)]
    guides_m: Vec<f64>,
    /// Coulomb friction coefficient between the cable and its channel or guide disks (>= 0, default 0): while the cable slides, its tension falls (pulled in) or rises (let out) by exp(mu theta) with the angle theta it turns through along the channel or at each disk (the capstan law); inputs.csv's direction column or solve --direction says which way it slides.
    #[serde(default)]
    friction_mu: f64,
    /// What each guide disk the cable passes through (not its anchor) takes of its pull: "full" (default; the whole pull, as a hole's rim takes it from a frictionless cable: the gradient of tension x length) or "disk_plane" (only the part in the disk's plane, the part along its normal dropped, as the Continuum Robotics Lab's subsegment Cosserat model of tendon robots does). Only with guides_m.
    #[serde(default)]
    guide_reaction: GuideReaction,
}

/// `path_radius_m`: a constant, or `[arc_m, radius_m]` pairs.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawPathRadius {
    Constant(f64),
    Table(Vec<[f64; 2]>),
}

impl RawPathRadius {
    /// Checked against the rod's length; errors name `field`.
    fn read(&self, file: &str, field: &str, length_m: f64) -> Result<PathRadius, ConfigError> {
        let points: Vec<(f64, f64)> = match self {
            RawPathRadius::Constant(r) => vec![(0.0, *r)],
            RawPathRadius::Table(t) => t.iter().map(|p| (p[0], p[1])).collect(),
        };
        if points.is_empty() {
            return Err(ConfigError::new(file, field, "an empty table: give a radius, or [arc_m, radius_m] pairs"));
        }
        too_many_rows(file, field, points.len())?;
        for (k, &(x, r)) in points.iter().enumerate() {
            if !(x.is_finite() && r.is_finite() && r >= 0.0) {
                return Err(ConfigError::new(file, field, format!("point {k}: [{x}, {r}]: a finite arc and a radius >= 0 [m]")));
            }
            if !(0.0..=length_m * (1.0 + 1e-12)).contains(&x) {
                return Err(ConfigError::new(file, field, format!("point {k}: arc {x} m outside the rod [0, {length_m}]")));
            }
            if k > 0 && x <= points[k - 1].0 {
                return Err(ConfigError::new(file, field, format!("point {k}: the arcs must increase ({} then {x})", points[k - 1].0)));
            }
        }
        Ok(PathRadius { points })
    }
}

fn positive(file: &str, field: &str, v: f64) -> Result<f64, ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::new(file, field, format!("must be a positive number, got {v}")))
    }
}

/// `[material] law` and its constant.
fn elastic_law(file: &str, m: &RawMaterial) -> Result<ElasticLaw, ConfigError> {
    ElasticLaw::from_key(m.law.as_deref(), m.c01_fraction).map_err(|(field, message)| ConfigError::new(file, &format!("material.{field}"), message))
}

fn material(file: &str, field: &str, e: f64, g: Option<f64>, nu: Option<f64>, rho: f64) -> Result<Material, ConfigError> {
    let e = positive(file, &format!("{field}.e_pa"), e)?;
    let rho = positive(file, &format!("{field}.rho_kg_m3"), rho)?;
    match (g, nu) {
        (Some(g), None) => Ok(Material { e_pa: e, g_pa: positive(file, &format!("{field}.g_pa"), g)?, rho_kg_m3: rho }),
        // A rod sees nu only through G = E / (2 (1 + nu)): 0.5 (an
        // incompressible solid, G = E / 3) is as good as any.
        (None, Some(nu)) if nu.is_finite() && nu > -1.0 && nu <= 0.5 => Ok(Material::from_poisson(e, nu, rho)),
        (None, Some(nu)) => Err(ConfigError::new(
            file,
            &format!("{field}.poisson"),
            format!("must lie in (-1, 0.5] (0.5: incompressible, as silicone nearly is), got {nu}: or give the shear modulus as g_pa"),
        )),
        (Some(_), Some(_)) => Err(ConfigError::new(file, field, "give either g_pa or poisson, not both")),
        (None, None) => Err(ConfigError::new(file, field, "missing g_pa or poisson")),
    }
}

impl RawProfile {
    fn validate(&self, file: &str, field: &str, length: f64) -> Result<Profile, ConfigError> {
        match (self.base_m, self.tip_m, &self.table) {
            (Some(b), Some(t), None) => {
                let b = nonneg(file, &format!("{field}.base_m"), b)?;
                let t = nonneg(file, &format!("{field}.tip_m"), t)?;
                Ok(Profile::Linear { base_m: b, tip_m: t })
            }
            (None, None, Some(tab)) => {
                if tab.len() < 2 {
                    return Err(ConfigError::new(file, &format!("{field}.table"), "needs at least two [X_m, r_m] rows"));
                }
                too_many_rows(file, &format!("{field}.table"), tab.len())?;
                for (i, row) in tab.iter().enumerate() {
                    nonneg(file, &format!("{field}.table[{i}]"), row[1])?;
                    if i > 0 && row[0] <= tab[i - 1][0] {
                        return Err(ConfigError::new(file, &format!("{field}.table[{i}]"), "arc lengths must increase"));
                    }
                }
                let (x0, x1) = (tab[0][0], tab[tab.len() - 1][0]);
                if x0.abs() > 1e-9 || (x1 - length).abs() > 1e-9 * length.max(1.0) {
                    return Err(ConfigError::new(file, &format!("{field}.table"), format!("must cover [0, length_m = {length}], covers [{x0}, {x1}]")));
                }
                Ok(Profile::Table(tab.iter().map(|r| (r[0], r[1])).collect()))
            }
            _ => Err(ConfigError::new(file, field, "give base_m and tip_m, or a table of [X_m, r_m] rows")),
        }
    }
}

fn nonneg(file: &str, field: &str, v: f64) -> Result<f64, ConfigError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::new(file, field, format!("must be a non-negative number, got {v}")))
    }
}

/// `[damping] constant_loss`, checked: positive numbers, a band that is
/// one, and at least two branches.
fn constant_loss(file: &str, raw: &RawConstantLoss) -> Result<ConstantLoss, ConfigError> {
    let loss_factor = positive(file, "damping.constant_loss.loss_factor", raw.loss_factor)?;
    let shortest = positive(file, "damping.constant_loss.shortest_time_s", raw.shortest_time_s)?;
    let longest = positive(file, "damping.constant_loss.longest_time_s", raw.longest_time_s)?;
    if longest <= shortest {
        return Err(ConfigError::new(file, "damping.constant_loss.longest_time_s", format!("must exceed shortest_time_s ({shortest} s), got {longest} s")));
    }
    let mut law = ConstantLoss::new(loss_factor, shortest, longest);
    match raw.branches {
        Some(n) if n < 2 => return Err(ConfigError::new(file, "damping.constant_loss.branches", format!("must be at least 2, got {n}"))),
        Some(n) => law.branches = n,
        None => {}
    }
    Ok(law)
}

impl RawRod {
    fn validate(self, file: &str) -> Result<Rod, ConfigError> {
        let length = positive(file, "length_m", self.length_m)?;
        let tip_condition = match self.tip.as_ref().map(|t| t.condition.as_str()) {
            None | Some("free") => TipCondition::Free,
            Some("pinned") => TipCondition::Pinned,
            Some("clamped") => TipCondition::Clamped,
            Some(other) => {
                return Err(ConfigError::new(file, "tip.condition", format!("\"{other}\" is not a tip condition: \"free\", \"pinned\" or \"clamped\"")))
            }
        };
        if self.sections_m.is_empty() {
            return Err(ConfigError::new(file, "sections_m", "needs at least one section"));
        }
        if self.sections_m.len() > MAX_SECTIONS {
            return Err(ConfigError::new(
                file,
                "sections_m",
                format!(
                    "{} sections, at most {MAX_SECTIONS} (a section per few millimetres of any lab rod; the model's matrices grow with their square)",
                    self.sections_m.len()
                ),
            ));
        }
        for (i, s) in self.sections_m.iter().enumerate() {
            positive(file, &format!("sections_m[{i}]"), *s)?;
        }
        let sum: f64 = self.sections_m.iter().sum();
        if (sum - length).abs() > 1e-9 * length {
            return Err(ConfigError::new(file, "sections_m", format!("sections sum to {sum} m, length_m is {length} m")));
        }
        if self.subsegments_per_section == 0 || self.subsegments_per_section > MAX_SUBSEGMENTS {
            return Err(ConfigError::new(file, "subsegments_per_section", format!("must be between 1 and {MAX_SUBSEGMENTS}")));
        }
        let modes = match &self.modes {
            RawModes::Named(n) => StrainModes::by_name(n).ok_or_else(|| {
                ConfigError::new(
                    file,
                    "modes",
                    format!("unknown mode '{n}' (cosserat, euler-bernoulli, kirchhoff-extensible, timoshenko, or a list like [\"ky\", \"kz\"])"),
                )
            })?,
            RawModes::Custom(list) => {
                let mut free = [false; 6];
                for n in list {
                    let i = STRAIN_NAMES
                        .iter()
                        .position(|s| s == n)
                        .ok_or_else(|| ConfigError::new(file, "modes", format!("unknown strain component '{n}' (kx ky kz qx qy qz)")))?;
                    free[i] = true;
                }
                if !free.iter().any(|&f| f) {
                    return Err(ConfigError::new(file, "modes", "no strain component selected"));
                }
                StrainModes { free }
            }
        };
        let strain_basis = match self.strain_basis.as_deref() {
            None | Some("pls") => StrainBasis::Linear,
            Some("pcs") => StrainBasis::Constant,
            Some(other) => return Err(ConfigError::new(file, "strain_basis", format!("unknown basis '{other}' (pls or pcs)"))),
        };
        let m = &self.material;
        let body = material(file, "material", m.e_pa, m.g_pa, m.poisson, m.rho_kg_m3)?;
        let shape = match (&self.radius, &self.section) {
            (Some(_), Some(_)) => return Err(ConfigError::new(file, "section", "give [radius] (a round rod) or [section], not both")),
            (None, None) => {
                return Err(ConfigError::new(file, "radius", "missing: give [radius] (a round rod) or [section] (a rectangle or a general section)"))
            }
            (None, Some(sec)) => {
                if self.hole.is_some() || self.core.is_some() {
                    return Err(ConfigError::new(
                        file,
                        if self.hole.is_some() { "hole" } else { "core" },
                        "only a round rod ([radius]) has a hole or a core; a hollow rectangle gives section.wall_m",
                    ));
                }
                // The rod file's own nu when it gives one: the coefficient
                // (part of the shape's fingerprint) must not change with E
                // through the rounding of E / (2 G) - 1.
                sec.validate(file, length, m.poisson.unwrap_or(body.poisson()))?
            }
            (Some(radius), None) => {
                let outer = radius.validate(file, "radius", length)?;
                positive_along(file, "radius", &outer, length)?;
                let hole = match &self.hole {
                    Some(h) => {
                        let p = h.validate(file, "hole", length)?;
                        for x in [0.0, length].into_iter().chain(p.breakpoints()).chain(outer.breakpoints()) {
                            if p.radius_m(x, length) >= outer.radius_m(x, length) {
                                return Err(ConfigError::new(file, "hole", format!("hole radius reaches the outer radius at X = {x}")));
                            }
                        }
                        Some(p)
                    }
                    None => None,
                };
                let core = match &self.core {
                    Some(c) => {
                        if hole.is_some() {
                            return Err(ConfigError::new(file, "core", "a rod has either a hole or a core, not both"));
                        }
                        let r = positive(file, "core.radius_m", c.radius_m)?;
                        for x in [0.0, length].into_iter().chain(outer.breakpoints()) {
                            if r >= outer.radius_m(x, length) {
                                return Err(ConfigError::new(file, "core.radius_m", format!("core reaches the outer radius at X = {x}")));
                            }
                        }
                        Some((r, material(file, "core", c.e_pa, c.g_pa, c.poisson, c.rho_kg_m3)?))
                    }
                    None => None,
                };
                Shape::Round { outer, hole, core }
            }
        };
        let cross_section = CrossSection { shape, body };
        let weighed_mass_kg = weighed(file, m, length)?;
        let elastic_law = elastic_law(file, m)?;
        if elastic_law != ElasticLaw::Linear && matches!(cross_section.shape, Shape::Given(_)) {
            return Err(ConfigError::new(
                file,
                "material.law",
                "a hyperelastic law integrates the section's fibres: give a round or rectangular section, not a general one",
            ));
        }
        let g = self.gravity_m_s2;
        if g.iter().any(|v| !v.is_finite()) {
            return Err(ConfigError::new(file, "gravity_m_s2", "must be finite"));
        }
        let base = match &self.base {
            Some(b) => {
                if b.position_m.iter().chain(b.rpy_deg.iter()).any(|v| !v.is_finite()) {
                    return Err(ConfigError::new(file, "base", "must be finite"));
                }
                let r = b.rpy_deg.map(f64::to_radians);
                Pose::from_rpy(r[0], r[1], r[2], Vec3::from(b.position_m))
            }
            None => Pose::identity(),
        };
        let mut cables = vec![];
        for (i, c) in self.cables.iter().enumerate() {
            let field = format!("cable[{i}]");
            if !c.angle_deg.is_finite() {
                return Err(ConfigError::new(file, &format!("{field}.angle_deg"), "must be finite"));
            }
            // Negative: outside the surface (cables on guide rings).
            if !c.inset_m.is_finite() {
                return Err(ConfigError::new(file, &format!("{field}.inset_m"), "must be finite"));
            }
            let inset = c.inset_m;
            let anchor = c.anchor_m.unwrap_or(length);
            if !(anchor > 0.0 && anchor <= length * (1.0 + 1e-12)) {
                return Err(ConfigError::new(file, &format!("{field}.anchor_m"), format!("must lie in (0, length_m], got {anchor}")));
            }
            let path_radius = c.path_radius_m.as_ref().map(|p| p.read(file, &format!("{field}.path_radius_m"), length)).transpose()?;
            if path_radius.is_some() && inset != 0.0 {
                return Err(ConfigError::new(
                    file,
                    &format!("{field}.inset_m"),
                    "is for a cable along the surface: with path_radius_m give the channel's radius itself",
                ));
            }
            let anchor = anchor.min(length);
            too_many_rows(file, &format!("{field}.guides_m"), c.guides_m.len())?;
            let mut guides_m = c.guides_m.clone();
            for (k, &g) in guides_m.iter().enumerate() {
                if !(g.is_finite() && g > 0.0 && g <= anchor * (1.0 + 1e-12)) {
                    return Err(ConfigError::new(file, &format!("{field}.guides_m"), format!("disk {k} at {g} m: must lie in (0, anchor_m = {anchor}]")));
                }
                if k > 0 && g <= guides_m[k - 1] {
                    return Err(ConfigError::new(
                        file,
                        &format!("{field}.guides_m"),
                        format!("disk {k}: the arcs must increase ({} then {g})", guides_m[k - 1]),
                    ));
                }
            }
            match guides_m.last_mut() {
                Some(last) if (*last - anchor).abs() <= 1e-12 * length => *last = anchor,
                Some(_) => guides_m.push(anchor),
                None => {}
            }
            if c.guide_reaction != GuideReaction::Full && guides_m.is_empty() {
                return Err(ConfigError::new(file, &format!("{field}.guide_reaction"), "is for a cable through guide disks: give guides_m"));
            }
            if !(c.friction_mu.is_finite() && c.friction_mu >= 0.0) {
                return Err(ConfigError::new(file, &format!("{field}.friction_mu"), format!("must be >= 0, got {}", c.friction_mu)));
            }
            let cable = Cable {
                name: c.name.clone().unwrap_or_else(|| format!("cable{}", i + 1)),
                angle_rad: c.angle_deg.to_radians(),
                inset_m: inset,
                anchor_m: anchor,
                path_radius,
                guides_m,
                friction_mu: c.friction_mu,
                guide_reaction: c.guide_reaction,
            };
            if cable.path_radius.is_none() {
                for x in [0.0, anchor] {
                    if cable.distance_m(&cross_section, x, length).0 < 0.0 {
                        return Err(ConfigError::new(file, &format!("{field}.inset_m"), format!("inset deeper than the radius at X = {x}")));
                    }
                }
            }
            if let (Some(path), true) = (&cable.path_radius, cable.guides_m.is_empty()) {
                channel_inside(file, &field, path, &cable, &cross_section, (anchor, length))?;
            }
            cables.push(cable);
        }
        let mut markers = vec![];
        for (i, m) in self.markers.iter().enumerate() {
            let field = format!("marker[{i}]");
            if !(m.arc_m.is_finite() && m.arc_m >= 0.0 && m.arc_m <= length * (1.0 + 1e-12)) {
                return Err(ConfigError::new(file, &format!("{field}.arc_m"), format!("must lie in [0, length_m = {length}], got {}", m.arc_m)));
            }
            if !(m.offset_y_m.is_finite() && m.offset_z_m.is_finite()) {
                return Err(ConfigError::new(file, &field, "offsets must be finite"));
            }
            let marker = Marker { arc_m: m.arc_m.min(length), offset_body_m: Vec3::new(0.0, m.offset_y_m, m.offset_z_m) };
            // A cluster shares a section; two markers at one point are one.
            if let Some(j) =
                markers.iter().position(|o: &Marker| (o.arc_m - marker.arc_m).abs() < 1e-9 && (o.offset_body_m - marker.offset_body_m).norm() < 1e-9)
            {
                return Err(ConfigError::new(file, &field, format!("repeats marker[{j}] (same arc_m and offsets): a cluster's markers need distinct offsets")));
            }
            markers.push(marker);
        }
        let damping = match &self.damping {
            None => None,
            Some(RawDamping { time_constant_s: Some(t), damping_ratio: None, .. }) => Some(Damping::TimeConstant(nonneg(file, "damping.time_constant_s", *t)?)),
            Some(RawDamping { time_constant_s: None, damping_ratio: Some(z), .. }) => Some(Damping::Ratio(nonneg(file, "damping.damping_ratio", *z)?)),
            Some(RawDamping { time_constant_s: None, damping_ratio: None, branches, constant_loss }) if !branches.is_empty() || constant_loss.is_some() => None,
            Some(_) => return Err(ConfigError::new(file, "damping", "give either time_constant_s or damping_ratio (and/or branches or constant_loss)")),
        };
        let constant_loss = match self.damping.as_ref().and_then(|d| d.constant_loss.as_ref()) {
            None => None,
            Some(_) if self.damping.as_ref().is_some_and(|d| !d.branches.is_empty()) => {
                return Err(ConfigError::new(file, "damping.constant_loss", "give branches or constant_loss, not both (the law is its own branches)"));
            }
            Some(c) => Some(constant_loss(file, c)?),
        };
        let mut viscoelastic = vec![];
        for (i, b) in self.damping.iter().flat_map(|d| &d.branches).enumerate() {
            let positive = |field: &str, v: f64| {
                if v.is_finite() && v > 0.0 {
                    Ok(v)
                } else {
                    Err(ConfigError::new(file, &format!("damping.branches[{i}].{field}"), format!("must be positive, got {v}")))
                }
            };
            viscoelastic.push(PronyBranch {
                modulus_ratio: positive("modulus_ratio", b.modulus_ratio)?,
                time_constant_s: positive("time_constant_s", b.time_constant_s)?,
            });
        }
        let mut identify_priors = IdentifyPriors::default();
        let identify = self.identify.as_ref();
        // A prior of the cables' geometry: any finite mean, a positive sd,
        // and cables to apply it to.
        let cable_prior = |field: &str, prior: Option<&RawPrior>| -> Result<Option<(f64, f64)>, ConfigError> {
            let Some(RawPrior { mean, sd }) = prior else { return Ok(None) };
            if !mean.is_finite() {
                return Err(ConfigError::new(file, &format!("identify.{field}.mean"), "must be finite"));
            }
            let sd = positive(file, &format!("identify.{field}.sd"), *sd)?;
            if cables.is_empty() {
                return Err(ConfigError::new(file, &format!("identify.{field}"), "the rod has no [[cable]]"));
            }
            Ok(Some((*mean, sd)))
        };
        identify_priors.cable_offset_m = cable_prior("cable_offset_m", identify.and_then(|i| i.cable_offset_m.as_ref()))?;
        identify_priors.cable_angle_rad =
            cable_prior("cable_angle_deg", identify.and_then(|i| i.cable_angle_deg.as_ref()))?.map(|(m, sd)| (m.to_radians(), sd.to_radians()));
        identify_priors.friction_mu = cable_prior("friction_mu", identify.and_then(|i| i.friction_mu.as_ref()))?;
        if identify_priors.friction_mu.is_some_and(|(m, _)| m < 0.0) {
            return Err(ConfigError::new(file, "identify.friction_mu.mean", "must be >= 0"));
        }
        if let Some(RawPrior { mean, sd }) = identify.and_then(|i| i.clamp_angle_deg.as_ref()) {
            if !mean.is_finite() {
                return Err(ConfigError::new(file, "identify.clamp_angle_deg.mean", "must be finite"));
            }
            identify_priors.clamp_angle_rad = Some((mean.to_radians(), positive(file, "identify.clamp_angle_deg.sd", *sd)?.to_radians()));
        }
        if let Some(RawPrior { mean, sd }) = identify.and_then(|i| i.radius_scale.as_ref()) {
            identify_priors.radius_scale = Some((positive(file, "identify.radius_scale.mean", *mean)?, positive(file, "identify.radius_scale.sd", *sd)?));
        }
        let range = |field: &str, given: Option<[f64; 2]>, default: (f64, f64)| -> Result<(f64, f64), ConfigError> {
            match given {
                None => Ok(default),
                Some([lo, hi]) if lo.is_finite() && hi.is_finite() && lo > 0.0 && hi > lo => Ok((lo, hi)),
                Some(_) => Err(ConfigError::new(file, &format!("identify.{field}"), "must be [min, max] with 0 < min < max, finite")),
            }
        };
        let d = MaterialRanges::default();
        identify_priors.ranges = MaterialRanges {
            e_pa: range("e_pa_range", identify.and_then(|i| i.e_pa_range), d.e_pa)?,
            g_pa: range("g_pa_range", identify.and_then(|i| i.g_pa_range), d.g_pa)?,
            rho_kg_m3: range("rho_kg_m3_range", identify.and_then(|i| i.rho_kg_m3_range), d.rho_kg_m3)?,
        };
        if let Some(e) = identify.and_then(|i| i.model_error_m) {
            if !(e.is_finite() && e >= 0.0) {
                return Err(ConfigError::new(file, "identify.model_error_m", "must be >= 0 and finite"));
            }
            identify_priors.model_error_m = e;
        }
        if let Some(nu) = identify.and_then(|i| i.tie_g_poisson) {
            identify_priors.tie_g_poisson = Some(poisson_for_tie(nu).map_err(|m| ConfigError::new(file, "identify.tie_g_poisson", m))?);
        }
        let rest = self.rest_curvature_per_m.unwrap_or([0.0; 3]);
        if rest.iter().any(|v| !v.is_finite()) {
            return Err(ConfigError::new(file, "rest_curvature_per_m", "must be finite"));
        }
        Ok(Rod {
            length_m: length,
            section_lengths_m: self.sections_m,
            subsegments_per_section: self.subsegments_per_section,
            modes,
            strain_basis,
            cross_section,
            elastic_law,
            rest_curvature_per_m: Vec3::from(rest),
            gravity_m_s2: Vec3::from(g),
            base,
            cables,
            markers,
            damping,
            viscoelastic: match constant_loss {
                Some(c) => c.prony_branches(),
                None => viscoelastic,
            },
            constant_loss,
            identify_priors,
            tip_condition,
            weighed_mass_kg,
        })
    }
}

/// `[material] mass_kg` and its sigma, or per length (times the length).
fn weighed(file: &str, m: &RawMaterial, length_m: f64) -> Result<Option<(f64, f64)>, ConfigError> {
    let pair = |value: Option<f64>, sigma: Option<f64>, names: (&str, &str)| -> Result<Option<(f64, f64)>, ConfigError> {
        match (value, sigma) {
            (None, None) => Ok(None),
            (Some(v), Some(s)) => Ok(Some((positive(file, &format!("material.{}", names.0), v)?, positive(file, &format!("material.{}", names.1), s)?))),
            (Some(_), None) => {
                Err(ConfigError::new(file, &format!("material.{}", names.1), format!("missing: {} is a measurement, give its standard deviation", names.0)))
            }
            (None, Some(_)) => Err(ConfigError::new(file, &format!("material.{}", names.0), format!("missing: {} without the value it belongs to", names.1))),
        }
    };
    let total = pair(m.mass_kg, m.mass_sigma_kg, ("mass_kg", "mass_sigma_kg"))?;
    let per_length = pair(m.mass_per_length_kg_m, m.mass_per_length_sigma_kg_m, ("mass_per_length_kg_m", "mass_per_length_sigma_kg_m"))?;
    match (total, per_length) {
        (Some(_), Some(_)) => Err(ConfigError::new(file, "material.mass_kg", "give the mass or the mass per length, not both")),
        (Some(t), None) => Ok(Some(t)),
        (None, Some((v, s))) => Ok(Some((v * length_m, s * length_m))),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
length_m = 0.2
sections_m = [0.09, 0.07, 0.04]
modes = "cosserat"
[radius]
base_m = 0.01
tip_m = 0.005
[material]
e_pa = 1.1e5
g_pa = 3.793e4
rho_kg_m3 = 2000
"#;

    /// A radius table of MAX_TABLE_ROWS rows reads and solves at once;
    /// one row more (or as many guide disks) is refused naming the field
    /// (before: 10^5 rows took 232 s, a quadratic walk per query).
    #[test]
    fn tables_along_the_rod_are_bounded_and_read_in_log_time() {
        let table = |n: usize| -> String {
            let rows: Vec<String> = (0..n).map(|i| format!("[{}, {}]", 0.2 * i as f64 / (n - 1) as f64, 0.01 - 0.005 * i as f64 / (n - 1) as f64)).collect();
            GOOD.replace("base_m = 0.01\ntip_m = 0.005", &format!("table = [{}]", rows.join(", ")))
        };
        let started = std::time::Instant::now();
        let rod = Rod::from_toml_str(&table(MAX_TABLE_ROWS), "table.toml").unwrap();
        let model = crate::Model::new(&rod, &[]);
        crate::statics::solve(&model, &crate::Loads::gravity(), None, &crate::NewtonOptions::default()).unwrap();
        assert!(started.elapsed().as_secs_f64() < 2.0, "{:?}", started.elapsed());
        let e = Rod::from_toml_str(&table(MAX_TABLE_ROWS + 1), "table.toml").unwrap_err().to_string();
        assert!(e.contains("table.toml") && e.contains("radius.table") && e.contains("1001 rows, over the 1000"), "{e}");
        let guides: Vec<String> = (1..=MAX_TABLE_ROWS + 1).map(|k| format!("{}", 0.2 * k as f64 / (MAX_TABLE_ROWS + 1) as f64)).collect();
        let cable = format!("{GOOD}\n[[cable]]\nangle_deg = 0\nguides_m = [{}]\n", guides.join(", "));
        let e = Rod::from_toml_str(&cable, "guides.toml").unwrap_err().to_string();
        assert!(e.contains("cable[0].guides_m") && e.contains("1001 rows"), "{e}");
    }

    #[test]
    fn parses_good_file() {
        let rod = Rod::from_toml_str(GOOD, "good.toml").unwrap();
        assert_eq!(rod.section_lengths_m.len(), 3);
        assert_eq!(rod.modes, StrainModes::COSSERAT);
        assert_eq!(rod.gravity_m_s2, Vec3::new(0.0, 0.0, -9.81));
    }

    #[test]
    fn identify_priors_are_read_and_checked() {
        let cable = "\n[[cable]]\nname = \"c\"\nangle_deg = 90\n";
        assert_eq!(Rod::from_toml_str(GOOD, "good.toml").unwrap().identify_priors, IdentifyPriors::default());
        let with = format!("{GOOD}\n[identify]\ncable_offset_m = {{ mean = 0.001, sd = 0.004 }}\n{cable}");
        assert_eq!(Rod::from_toml_str(&with, "good.toml").unwrap().identify_priors.cable_offset_m, Some((0.001, 0.004)));
        let bad_sd = format!("{GOOD}\n[identify]\ncable_offset_m = {{ mean = 0.0, sd = 0.0 }}\n{cable}");
        assert!(err(&bad_sd).contains("identify.cable_offset_m.sd"), "{}", err(&bad_sd));
        let no_cables = format!("{GOOD}\n[identify]\ncable_offset_m = {{ mean = 0.0, sd = 0.005 }}\n");
        assert!(err(&no_cables).contains("no [[cable]]"), "{}", err(&no_cables));
        let scale = format!("{GOOD}\n[identify]\nradius_scale = {{ mean = 1.0, sd = 0.1 }}\n");
        assert_eq!(Rod::from_toml_str(&scale, "good.toml").unwrap().identify_priors.radius_scale, Some((1.0, 0.1)));
        let bad_scale = format!("{GOOD}\n[identify]\nradius_scale = {{ mean = -1.0, sd = 0.1 }}\n");
        assert!(err(&bad_scale).contains("identify.radius_scale.mean"), "{}", err(&bad_scale));
        let angle = format!("{GOOD}\n[identify]\ncable_angle_deg = {{ mean = 0.0, sd = 5.0 }}\n{cable}");
        let (m, sd) = Rod::from_toml_str(&angle, "good.toml").unwrap().identify_priors.cable_angle_rad.unwrap();
        assert!(m == 0.0 && (sd - 5f64.to_radians()).abs() < 1e-15, "{sd}");
        let bad_angle = format!("{GOOD}\n[identify]\ncable_angle_deg = {{ mean = 0.0, sd = -1.0 }}\n{cable}");
        assert!(err(&bad_angle).contains("identify.cable_angle_deg.sd"), "{}", err(&bad_angle));
        let no_cables = format!("{GOOD}\n[identify]\ncable_angle_deg = {{ mean = 0.0, sd = 5.0 }}\n");
        assert!(err(&no_cables).contains("identify.cable_angle_deg") && err(&no_cables).contains("no [[cable]]"), "{}", err(&no_cables));
    }

    fn err(text: &str) -> String {
        Rod::from_toml_str(text, "bad.toml").unwrap_err().to_string()
    }

    /// A channel's radius: a number or `[arc_m, radius_m]` pairs, read
    /// into the distance the cable keeps from the centre line; bad tables
    /// and an inset beside it are refused naming the field.
    #[test]
    fn path_radius_is_read_as_a_number_or_a_table_and_checked() {
        let cable = |path: &str| format!("{GOOD}\n[[cable]]\nangle_deg = 90\n{path}\n");
        let rod = Rod::from_toml_str(&cable("path_radius_m = 0.004"), "good.toml").unwrap();
        assert_eq!(rod.cables[0].distance_m(&rod.cross_section, 0.15, rod.length_m), (0.004, 0.0));
        let rod = Rod::from_toml_str(&cable("path_radius_m = [[0.0, 0.006], [0.2, 0.004]]"), "good.toml").unwrap();
        let (d, slope) = rod.cables[0].distance_m(&rod.cross_section, 0.05, rod.length_m);
        assert!((d - 0.0055).abs() < 1e-15 && (slope + 0.01).abs() < 1e-12, "{d} {slope}");
        // Without it, the surface's distance less the inset.
        let rod = Rod::from_toml_str(&cable("inset_m = 0.001"), "good.toml").unwrap();
        assert!((rod.cables[0].distance_m(&rod.cross_section, 0.2, rod.length_m).0 - 0.004).abs() < 1e-15);
        for (path, want) in [
            ("path_radius_m = []", "cable[0].path_radius_m: an empty table"),
            ("path_radius_m = -0.001", "cable[0].path_radius_m: point 0"),
            ("path_radius_m = [[0.1, 0.004], [0.05, 0.003]]", "the arcs must increase"),
            ("path_radius_m = [[0.0, 0.004], [0.3, 0.003]]", "outside the rod"),
            ("path_radius_m = 0.004\ninset_m = 0.001", "cable[0].inset_m: is for a cable along the surface"),
        ] {
            let e = err(&cable(path));
            assert!(e.contains("bad.toml") && e.contains(want), "{path}: {e}");
        }
    }

    /// What guide disks take of a cable's pull: the whole by default, the
    /// disk plane's part when asked, and only for a cable through disks.
    #[test]
    fn guide_reaction_is_read_and_needs_guide_disks() {
        let cable = |extra: &str| format!("{GOOD}\n[[cable]]\nangle_deg = 90\ninset_m = 0.001\n{extra}\n");
        let rod = Rod::from_toml_str(&cable("guides_m = [0.05, 0.1]"), "good.toml").unwrap();
        assert_eq!(rod.cables[0].guide_reaction, GuideReaction::Full);
        let rod = Rod::from_toml_str(&cable("guides_m = [0.05, 0.1]\nguide_reaction = \"disk_plane\""), "good.toml").unwrap();
        assert_eq!(rod.cables[0].guide_reaction, GuideReaction::DiskPlane);
        let e = err(&cable("guide_reaction = \"disk_plane\""));
        assert!(e.contains("bad.toml") && e.contains("cable[0].guide_reaction: is for a cable through guide disks"), "{e}");
        let e = err(&cable("guides_m = [0.05]\nguide_reaction = \"tilted\""));
        assert!(e.contains("bad.toml") && e.contains("expected `full` or `disk_plane`"), "{e}");
    }

    /// Marker clusters: several markers on one section, in any order; one
    /// marker written twice is refused.
    #[test]
    fn markers_may_share_a_section_in_any_order() {
        let cluster = format!(
            "{GOOD}\n[[marker]]\narc_m = 0.2\noffset_y_m = 0.005\n[[marker]]\narc_m = 0.2\noffset_z_m = 0.005\n[[marker]]\narc_m = 0.1\n[[marker]]\narc_m = 0.2\noffset_y_m = -0.005\n"
        );
        let rod = Rod::from_toml_str(&cluster, "cluster.toml").unwrap();
        assert_eq!(rod.markers.len(), 4);
        assert!(!rod.markers_base_to_tip());
        let twice = format!("{GOOD}\n[[marker]]\narc_m = 0.2\noffset_y_m = 0.005\n[[marker]]\narc_m = 0.2\noffset_y_m = 0.005\n");
        let e = err(&twice);
        assert!(e.contains("marker[1]") && e.contains("repeats marker[0]"), "{e}");
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = err(&format!("{GOOD}\n[identify]\ntie_g_poisson = 0.7\n"));
        assert!(e.contains("identify.tie_g_poisson") && e.contains("(-1, 0.5]"), "{e}");
        let e = err(&GOOD.replace("length_m = 0.2\n", ""));
        assert!(e.starts_with("bad.toml") && e.contains("length_m"), "{e}");
        let e = err(&GOOD.replace("base_m = 0.01", "base_m = -0.01"));
        assert!(e.contains("radius.base_m") && e.contains("non-negative"), "{e}");
        let e = err(&GOOD.replace("0.04]", "0.05]"));
        assert!(e.contains("sections_m") && e.contains("sum"), "{e}");
        // 200,000 sections asked an 11 TB matrix: refused at once, naming the field.
        let many = format!("sections_m = [{}]", vec!["1e-6"; 200_000].join(", "));
        let e = err(&GOOD.replace("sections_m = [0.09, 0.07, 0.04]", &many));
        assert!(e.contains("sections_m") && e.contains("at most 500"), "{e}");
        let e = err(&GOOD.replace("\"cosserat\"", "\"bogus\""));
        assert!(e.contains("modes") && e.contains("bogus"), "{e}");
        let e = err(&GOOD.replace("g_pa = 3.793e4", ""));
        assert!(e.contains("material") && e.contains("poisson"), "{e}");
        let e = err(&format!("{GOOD}\nfoo = 1\n"));
        assert!(e.contains("foo"), "{e}");
        assert!(!e.contains('\n'));
    }

    /// A channel cast 6 mm from the centre line of an arm whose tip is 5 mm
    /// in radius leaves the body: refused naming the cable's field (it was
    /// accepted, and solved). Through guide disks it may run outside.
    #[test]
    fn a_channel_outside_the_section_is_refused_unless_it_runs_through_guide_disks() {
        let arm = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rod/tapered-channels-arm.toml")).unwrap();
        assert!(Rod::from_toml_str(&arm, "arm.toml").is_ok());
        let outside = arm.replacen("path_radius_m = 4.0e-3", "path_radius_m = 6.0e-3", 1);
        let e = err(&outside);
        assert!(e.contains("cable[0].path_radius_m") && e.contains("outside the section") && e.contains("X = 0.2"), "{e}");
        let guided = outside.replacen("path_radius_m = 6.0e-3", "path_radius_m = 6.0e-3\nguides_m = [0.05, 0.1, 0.15, 0.2]", 1);
        assert!(Rod::from_toml_str(&guided, "arm.toml").is_ok());
    }

    /// The constant-loss law's branches against its closed form (a box
    /// relaxation spectrum): at three per decade their loss and storage
    /// moduli are the continuous law's within 1 % and 2 % of the loss
    /// factor, across and beyond the band; the loss is flat inside it.
    #[test]
    fn a_constant_loss_law_is_its_box_spectrum_and_flat_inside_its_band() {
        let eta = 0.12;
        let law = ConstantLoss::new(eta, 1e-3, 1.0);
        let branches = law.prony_branches();
        assert_eq!(branches.len(), 10);
        for omega in [0.1, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3, 1e4] {
            let (mut storage, mut loss) = (1.0, 0.0);
            for b in &branches {
                let wt = omega * b.time_constant_s;
                storage += b.modulus_ratio * wt * wt / (1.0 + wt * wt);
                loss += b.modulus_ratio * wt / (1.0 + wt * wt);
            }
            assert!((loss - law.loss_ratio(omega)).abs() < 0.01 * eta, "loss at {omega} rad/s: {loss} against {}", law.loss_ratio(omega));
            assert!((storage - law.storage_ratio(omega)).abs() < 0.02 * eta, "storage at {omega} rad/s: {storage} against {}", law.storage_ratio(omega));
        }
        // At the band's centre (1.5 decades from each end) the loss is the
        // loss factor's to 1 - 4 / (pi 10^1.5); it falls to half at the ends.
        let centre = 10f64.powf(1.5);
        assert!((law.loss_ratio(centre) / eta - (1.0 - 4.0 / (std::f64::consts::PI * centre))).abs() < 1e-3, "{}", law.loss_ratio(centre));
        assert!((law.loss_ratio(1.0) / eta - 0.5).abs() < 0.01 && (law.loss_ratio(1e3) / eta - 0.5).abs() < 0.01);
        // Kramers-Kronig: a flat loss raises the storage by 2 eta / pi per e-fold.
        let rise = law.storage_ratio(100.0) - law.storage_ratio(10.0);
        assert!((rise / (2.0 * eta / std::f64::consts::PI * 10f64.ln()) - 1.0).abs() < 0.01, "{rise}");
    }

    #[test]
    fn a_constant_loss_law_is_read_and_checked() {
        let with = |law: &str| format!("{GOOD}\n[damping]\nconstant_loss = {{ {law} }}\n");
        let rod = Rod::from_toml_str(&with("loss_factor = 0.1, shortest_time_s = 0.002, longest_time_s = 0.2"), "cl.toml").unwrap();
        let law = rod.constant_loss.unwrap();
        assert_eq!((law.branches, rod.viscoelastic.len()), (7, 7));
        assert_eq!(rod.viscoelastic, law.prony_branches());
        assert_eq!(rod.damping, None);
        let e = err(&with("loss_factor = 0.1, shortest_time_s = 0.2, longest_time_s = 0.2"));
        assert!(e.contains("damping.constant_loss.longest_time_s") && e.contains("must exceed"), "{e}");
        let e = err(&with("loss_factor = -0.1, shortest_time_s = 0.002, longest_time_s = 0.2"));
        assert!(e.contains("damping.constant_loss.loss_factor"), "{e}");
        let e = err(&with("loss_factor = 0.1, shortest_time_s = 0.002, longest_time_s = 0.2, branches = 1"));
        assert!(e.contains("damping.constant_loss.branches"), "{e}");
        let both = format!("{GOOD}\n[damping]\nbranches = [{{ modulus_ratio = 0.1, time_constant_s = 0.1 }}]\nconstant_loss = {{ loss_factor = 0.1, shortest_time_s = 0.002, longest_time_s = 0.2 }}\n");
        assert!(err(&both).contains("not both"));
    }

    /// A TOML value of the wrong kind is named in the file's words, never
    /// by the parser's Rust type (`expected struct RawPrior`, #80).
    #[test]
    fn a_wrong_kind_of_value_is_named_in_tomls_words() {
        let e = err(&format!("{GOOD}\n[identify]\nradius_scale = 0.05\n"));
        assert!(e.contains("line") && e.contains("expected a table") && !e.contains("Raw") && !e.contains("struct"), "{e}");
        assert_eq!(
            in_toml_words("invalid type: floating point `0.05`, expected struct RawPrior"),
            "invalid type: floating point `0.05`, expected a table ({ key = value, ... })"
        );
        assert_eq!(in_toml_words("no struct here"), "no struct here");
    }
}
