//! Static experiments from recorded sessions: static holds are found
//! automatically (the robot and every tracked marker still for long
//! enough), and each hold becomes one [`Experiment`]: the markers' mean
//! world positions with their standard error as sigma, the base pose from
//! the robot, loads from the streams as `loads.toml` maps them, and the
//! base wrench of a flange force sensor.
//!
//! Reading the session's files is the caller's job (the CLI, with the
//! `session` crate): this module works on [`SessionData`], so that the
//! physics crates stay free of the Parquet stack.

use crate::data::{Experiment, Measurement, WrenchMeasurement};
use lie::{FramePose, Pose, Vec3, Vec6};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Thresholds of hold detection (`loads.toml` `[holds]`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HoldOptions {
    /// The flange's translation speed below this counts as still.
    pub max_robot_speed_m_s: f64,
    /// The flange's rotation speed below this counts as still \[rad/s\].
    pub max_robot_angular_speed_rad_s: f64,
    /// Every tracked marker's speed (slope of a line fitted over
    /// `window_s`, so that 0.3 mm of tracking noise reads as < 0.5 mm/s).
    pub max_marker_speed_m_s: f64,
    /// Window of the speed estimates \[s\].
    pub window_s: f64,
    /// Shorter still intervals are rejected.
    pub min_duration_s: f64,
    /// Dropped at the start of every hold (the rod settling).
    pub settle_s: f64,
    /// A marker missing in more of a hold's frames rejects the hold.
    pub max_missing_fraction: f64,
    /// Lower bound of a mean marker position's sigma \[m\].
    pub sigma_floor_m: f64,
}

impl Default for HoldOptions {
    fn default() -> Self {
        HoldOptions {
            max_robot_speed_m_s: 1e-3,
            max_robot_angular_speed_rad_s: 1e-2,
            max_marker_speed_m_s: 2e-3,
            window_s: 0.5,
            min_duration_s: 1.0,
            settle_s: 0.2,
            max_missing_fraction: 0.2,
            sigma_floor_m: 2e-5,
        }
    }
}

/// A scalar read from a stream: `scale * column + offset`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Channel {
    /// The session's stream (`streams/<stream>`).
    pub stream: String,
    /// Its column.
    pub column: String,
    /// Factor to SI units.
    #[serde(default = "one")]
    pub scale: f64,
    /// Added after the scale (SI units).
    #[serde(default)]
    pub offset: f64,
    /// The sensor's noise, one reading's standard deviation after the scale
    /// (SI units; default: estimated from each hold's scatter). A hold's
    /// mean below [`ZERO_NOISE_SIGMAS`] times it reads as zero: a load cell
    /// on a slack cable never reads exactly 0.
    #[serde(default)]
    pub noise: Option<f64>,
}

/// A load's hold mean within this many noise standard deviations of zero is
/// zero (a slack cable, no tip force): the hold then counts as loaded by
/// gravity alone.
pub const ZERO_NOISE_SIGMAS: f64 = 3.0;

impl Channel {
    /// The mean `value` of a hold with per-reading scatter `scatter`, or 0
    /// when it lies within the noise of zero.
    pub fn zero_within_noise(&self, value: f64, scatter: f64) -> f64 {
        let noise = self.noise.unwrap_or(scatter);
        if value.abs() <= ZERO_NOISE_SIGMAS * noise {
            0.0
        } else {
            value
        }
    }
}

fn one() -> f64 {
    1.0
}

/// A tip force of known direction (a string over a pulley to a load cell).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TipForce {
    #[serde(flatten)]
    pub channel: Channel,
    /// Direction of the force on the tip, world frame (normalised).
    pub direction: [f64; 3],
}

/// A force/torque sensor between the flange and the rod.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlangeSensor {
    /// The session's stream of the sensor (`ft300`, `netft`, or `robot` for the controller's wrench).
    pub stream: String,
    /// The stream's columns `[fx, fy, fz, mx, my, mz]` (N, N m).
    #[serde(default = "ft_columns")]
    pub columns: [String; 6],
    /// The sensor's frame in the flange frame.
    #[serde(default)]
    pub mount: FramePose,
    /// The sensor's reading without the rod (tare), subtracted: the
    /// older form of `bias = [fx, fy, fz, mx, my, mz]`.
    #[serde(default)]
    pub bias_force_n: [f64; 3],
    /// The older form's tare moment \[N m\] (with bias_force_n).
    #[serde(default)]
    pub bias_moment_nm: [f64; 3],
    /// `"fit"` (the default when no tare is given: fitted per session from
    /// holds at different orientations), `"none"` (the sensor was zeroed:
    /// nothing subtracted, nothing fitted), `"tare"` (each session's mean
    /// reading over `tare_window_s`, with nothing on the sensor) or the tare
    /// `[fx, fy, fz, mx, my, mz]` \[N, N m\].
    #[serde(default)]
    pub bias: Option<BiasSetting>,
    /// With `bias = "tare"`: the window \[s since the session's start\] in
    /// which the sensor carries nothing (recorded before the rod is
    /// mounted).
    #[serde(default)]
    pub tare_window_s: Option<[f64; 2]>,
    /// Lower bounds of a hold's mean force and moment sigma.
    #[serde(default = "force_floor")]
    pub sigma_floor_force_n: f64,
    /// Lower bound of a hold's mean moment sigma \[N m\].
    #[serde(default = "moment_floor")]
    pub sigma_floor_moment_nm: f64,
    /// Use the wrench as residuals of the fit (false: recorded, not fitted).
    #[serde(default = "yes")]
    pub fit: bool,
    /// The frame the six columns are expressed in: `"sensor"` (the default:
    /// a sensor's own axes, placed by `mount`) or `"robot_base"` (a wrench
    /// the robot's controller reports in its base frame, as UR's
    /// `actual_TCP_force`; rotated into the sensor frame sample by sample
    /// with the flange's pose).
    #[serde(default)]
    pub frame: WrenchFrame,
}

/// Axes of a flange wrench stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WrenchFrame {
    #[default]
    Sensor,
    RobotBase,
}

/// `bias = "fit" | "none" | [six values]` of a flange sensor.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BiasSetting {
    Mode(String),
    Values([f64; 6]),
}

/// What to do with a flange sensor's bias.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BiasMode {
    /// Fitted per session (nothing subtracted before).
    Fit,
    /// Subtracted as given `[fx, fy, fz, mx, my, mz]` (zeros: a zeroed sensor).
    Given([f64; 6]),
    /// Each session's mean reading over this window \[s\], subtracted.
    Tare([f64; 2]),
}

/// Fewest samples a tare window must hold.
pub const MIN_TARE_SAMPLES: usize = 10;

impl FlangeSensor {
    /// The bias setting, from `bias` or the older `bias_force_n` /
    /// `bias_moment_nm`; with neither, fitted.
    pub fn bias_mode(&self) -> BiasMode {
        let old = [self.bias_force_n[0], self.bias_force_n[1], self.bias_force_n[2], self.bias_moment_nm[0], self.bias_moment_nm[1], self.bias_moment_nm[2]];
        match &self.bias {
            Some(BiasSetting::Values(v)) => BiasMode::Given(*v),
            Some(BiasSetting::Mode(m)) if m == "none" => BiasMode::Given([0.0; 6]),
            Some(BiasSetting::Mode(m)) if m == "tare" => BiasMode::Tare(self.tare_window_s.unwrap_or([f64::NAN; 2])),
            Some(BiasSetting::Mode(_)) => BiasMode::Fit,
            None if old.iter().any(|b| *b != 0.0) => BiasMode::Given(old),
            None => BiasMode::Fit,
        }
    }

    /// True when the loads file says what the bias is (given, zeroed or
    /// tared), false when it is to be estimated.
    pub fn bias_known(&self) -> bool {
        !matches!(self.bias_mode(), BiasMode::Fit)
    }

    /// What is subtracted from every reading of `stream` (the sensor's)
    /// before anything else.
    pub fn bias_in(&self, stream: &Stream) -> Result<[f64; 6], Unusable> {
        match self.bias_mode() {
            BiasMode::Given(v) => Ok(v),
            BiasMode::Fit => Ok([0.0; 6]),
            BiasMode::Tare([a, b]) => {
                let mut tare = [0.0; 6];
                for (k, col) in self.columns.iter().enumerate() {
                    let (mean, _, n) = stream.stats(col, a, b)?.unwrap_or((f64::NAN, 0.0, 0));
                    if n < MIN_TARE_SAMPLES {
                        return Err(Unusable(format!(
                            "flange_sensor.tare_window_s = [{a}, {b}]: {n} samples of '{}'.{col} in it (at least {MIN_TARE_SAMPLES}; times are seconds since the session's start)",
                            self.stream
                        )));
                    }
                    tare[k] = mean;
                }
                Ok(tare)
            }
        }
    }
}

#[doc(hidden)] // public for tests/units.rs only
pub fn ft_columns() -> [String; 6] {
    ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"].map(String::from)
}

fn force_floor() -> f64 {
    1e-3
}

fn moment_floor() -> f64 {
    1e-4
}

fn yes() -> bool {
    true
}

/// `loads.toml`: how a session's streams make the loads of its holds.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadsFile {
    /// Thresholds of hold detection: `[holds]`.
    #[serde(default)]
    pub holds: HoldOptions,
    /// One per cable of the rod, in the rod file's order (none: no tension).
    #[serde(default, rename = "cable")]
    pub cables: Vec<Channel>,
    /// A tip force of known direction read from a stream: `[tip_force]`.
    pub tip_force: Option<TipForce>,
    /// A known mass hanging from the tip \[kg\].
    #[serde(default)]
    pub tip_mass_kg: f64,
    /// Where the mass (and the tip force) hangs: its offset `[y, z]` from
    /// the tip's centre in the tip section's frame \[m\] (a hook on the top
    /// edge of the tip face; default on the centre line).
    #[serde(default)]
    pub tip_mass_offset_m: [f64; 2],
    /// The dry friction of the hook the masses hang on, as a radius \[m\]
    /// (the pin's radius times its friction coefficient): in a dynamic
    /// replay, turning the tip under a hung mass costs this times its
    /// weight as a moment, whatever the swing (default: none; statics
    /// never see it). `identify --dynamic --fit-hook-friction` fits it.
    pub hook_friction_radius_m: Option<f64>,
    /// Masses hung per session and from a time on (a trial per mass, or
    /// masses added during one session); a hold without an entry has
    /// `tip_mass_kg`.
    #[serde(default, rename = "tip_mass")]
    pub tip_masses: Vec<TipMass>,
    /// A force/torque sensor between the flange and the rod: `[flange_sensor]`.
    pub flange_sensor: Option<FlangeSensor>,
    /// What holds the rod's tip (a rod file whose `[tip] condition` is clamped or pinned): a second robot or a motion-capture clamp: `[tip_hold]`.
    pub tip_hold: Option<TipHoldStream>,
}

/// `[tip_hold]`: the rod's tip held by a second robot, whose recorded flange
/// poses give the tip's hold in each hold of the session, or by a clamp
/// whose poses a motion-capture import recorded (`stream`).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TipHoldStream {
    /// The rig's `[[robot]]` (its stream's name) whose flange holds the tip.
    pub robot: Option<String>,
    /// Instead of `robot`: a stream of the tip clamp's poses in the world (columns x_m, y_m, z_m, rx_rad, ry_rad, rz_rad), as `rodlab import c3d` writes mocap_tip from a map's `[tip]` cluster.
    pub stream: Option<String>,
    /// That robot's base frame in the world (default: the world's; not with `stream`, whose poses are in the world).
    #[serde(default)]
    pub robot_base: lie::FramePose,
    /// The rod's tip frame in that robot's flange frame, or in the stream's clamp frame: the clamp's mount (x along the rod, into the clamp; default: the flange's or clamp's own).
    #[serde(default)]
    pub mount: lie::FramePose,
}

impl TipHoldStream {
    /// The stream that carries the tip's clamp: the robot's, or the named pose stream.
    pub fn stream_name(&self) -> &str {
        self.robot.as_deref().or(self.stream.as_deref()).unwrap_or_default()
    }

    /// The stream is a robot's (UR flange poses in its base frame), not a
    /// pose stream in the world.
    pub fn is_robot(&self) -> bool {
        self.robot.is_some()
    }

    /// The tip's frame in the world for a flange pose in that robot's base
    /// frame (or a clamp pose in the world, with the default `robot_base`).
    pub fn tip_in_world(&self, flange_in_robot: &Pose) -> Pose {
        self.robot_base.pose().compose(flange_in_robot).compose(&self.mount.pose())
    }

    /// Checks that one stream is named, and `robot_base` only for a robot.
    fn validate(&self) -> Result<(), LoadsError> {
        match (&self.robot, &self.stream) {
            (Some(_), Some(_)) => return Err(LoadsError::new("tip_hold", "give robot (a robot's stream) or stream (a clamp's poses in the world), not both")),
            (None, None) => {
                return Err(LoadsError::new("tip_hold", "missing: robot = \"<the robot's stream>\" or stream = \"mocap_tip\" (a motion-capture clamp)"))
            }
            (None, Some(_)) if self.robot_base != lie::FramePose::default() => {
                return Err(LoadsError::new("tip_hold.robot_base", "is for a robot: a stream's clamp poses are in the world already"));
            }
            _ => {}
        }
        if !(self.robot_base.finite() && self.mount.finite()) {
            return Err(LoadsError::new("tip_hold.robot_base, mount", "must be finite"));
        }
        Ok(())
    }
}

/// `[[tip_mass]]`: a mass on the tip of `session` (every session when
/// absent) from `from_s` on (seconds since the session's start), until a
/// later entry.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TipMass {
    /// The session's name (its directory's); none: every session.
    pub session: Option<String>,
    /// From this time on \[s since the session's start\].
    #[serde(default)]
    pub from_s: f64,
    /// The mass \[kg\].
    pub kg: f64,
    /// Offset `[y, z]` of where it hangs in the tip section's frame \[m\]
    /// (default: `tip_mass_offset_m`).
    pub offset_m: Option<[f64; 2]>,
}

impl LoadsFile {
    /// The tip mass and its offset during `[start_s, end_s]` of `session`,
    /// or why the hold has no single one.
    pub fn tip_mass_in(&self, session: &str, start_s: f64, end_s: f64) -> Result<(f64, [f64; 2]), Unusable> {
        let mine = || self.tip_masses.iter().filter(|m| m.session.as_deref().is_none_or(|s| s == session));
        if let Some(m) = mine().find(|m| m.from_s > start_s && m.from_s <= end_s) {
            return Err(Unusable(format!("the tip mass changes to {} kg at {} s, inside the hold", m.kg, m.from_s)));
        }
        // The latest entry begun by the hold's start (a later line wins a tie).
        let current = mine().filter(|m| m.from_s <= start_s).fold(None::<&TipMass>, |best, m| match best {
            Some(b) if b.from_s > m.from_s => Some(b),
            _ => Some(m),
        });
        Ok(match current {
            Some(m) => (m.kg, m.offset_m.unwrap_or(self.tip_mass_offset_m)),
            None => (self.tip_mass_kg, self.tip_mass_offset_m),
        })
    }
}

/// A value of the loads file out of range: the field and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LoadsError {
    pub field: String,
    pub message: String,
}

impl LoadsError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> LoadsError {
        LoadsError { field: field.into(), message: message.into() }
    }
}

impl fault::Fault for LoadsError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

/// Why a hold cannot be used as an experiment (shown in the holds table).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

impl LoadsFile {
    /// Checks values; the error names the field.
    pub fn validate(&self, n_cables: usize) -> Result<(), LoadsError> {
        let h = &self.holds;
        for (name, v) in [
            ("holds.max_robot_speed_m_s", h.max_robot_speed_m_s),
            ("holds.max_robot_angular_speed_rad_s", h.max_robot_angular_speed_rad_s),
            ("holds.max_marker_speed_m_s", h.max_marker_speed_m_s),
            ("holds.window_s", h.window_s),
            ("holds.min_duration_s", h.min_duration_s),
            ("holds.sigma_floor_m", h.sigma_floor_m),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(LoadsError::new(name, format!("must be positive, got {v}")));
            }
        }
        if !(h.settle_s.is_finite() && h.settle_s >= 0.0) {
            return Err(LoadsError::new("holds.settle_s", format!("must be >= 0, got {}", h.settle_s)));
        }
        if !(0.0..1.0).contains(&h.max_missing_fraction) {
            return Err(LoadsError::new("holds.max_missing_fraction", format!("must be in [0, 1), got {}", h.max_missing_fraction)));
        }
        if !self.cables.is_empty() && self.cables.len() != n_cables {
            return Err(LoadsError::new("cable", format!("{} entries, the rod has {n_cables} cables", self.cables.len())));
        }
        if !(self.tip_mass_kg.is_finite() && self.tip_mass_kg >= 0.0) {
            return Err(LoadsError::new("tip_mass_kg", format!("must be >= 0, got {}", self.tip_mass_kg)));
        }
        if self.tip_mass_offset_m.iter().any(|v| !v.is_finite()) {
            return Err(LoadsError::new("tip_mass_offset_m", "must be finite [y, z] in metres"));
        }
        if let Some(r) = self.hook_friction_radius_m.filter(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(LoadsError::new("hook_friction_radius_m", format!("must be a number >= 0 [m], got {r}")));
        }
        for (i, m) in self.tip_masses.iter().enumerate() {
            if !(m.kg.is_finite() && m.kg >= 0.0) {
                return Err(LoadsError::new(format!("tip_mass[{i}].kg"), format!("must be >= 0, got {}", m.kg)));
            }
            if !(m.from_s.is_finite() && m.from_s >= 0.0) {
                return Err(LoadsError::new(format!("tip_mass[{i}].from_s"), format!("must be >= 0 (seconds since the session's start), got {}", m.from_s)));
            }
            if m.offset_m.is_some_and(|o| o.iter().any(|v| !v.is_finite())) {
                return Err(LoadsError::new(format!("tip_mass[{i}].offset_m"), "must be finite [y, z] in metres"));
            }
        }
        let noisy = self
            .cables
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("cable[{i}].noise"), c))
            .chain(self.tip_force.iter().map(|t| ("tip_force.noise".to_string(), &t.channel)));
        for (field, c) in noisy {
            if let Some(n) = c.noise.filter(|n| !(n.is_finite() && *n >= 0.0)) {
                return Err(LoadsError::new(field, format!("must be >= 0 (one reading's standard deviation, SI units), got {n}")));
            }
        }
        if let Some(t) = &self.tip_force {
            let n = Vec3::from(t.direction).norm();
            if n.is_nan() || n <= 1e-9 {
                return Err(LoadsError::new("tip_force.direction", "must be a non-zero vector"));
            }
        }
        if let Some(t) = &self.tip_hold {
            t.validate()?;
        }
        if let Some(s) = &self.flange_sensor {
            if !(s.sigma_floor_force_n > 0.0 && s.sigma_floor_moment_nm > 0.0) {
                return Err(LoadsError::new("flange_sensor.sigma_floor_force_n, sigma_floor_moment_nm", "must be positive"));
            }
            if !s.mount.finite() {
                return Err(LoadsError::new("flange_sensor.mount", "must be finite"));
            }
            match &s.bias {
                Some(BiasSetting::Mode(m)) if m != "fit" && m != "none" && m != "tare" => {
                    return Err(LoadsError::new(
                        "flange_sensor.bias",
                        format!("expected \"fit\", \"none\", \"tare\" or six numbers [fx, fy, fz, mx, my, mz], got {m:?}"),
                    ));
                }
                Some(BiasSetting::Values(v)) if !v.iter().all(|x| x.is_finite()) => {
                    return Err(LoadsError::new("flange_sensor.bias", "must be finite"));
                }
                _ => {}
            }
            match (s.bias_mode(), s.tare_window_s) {
                (BiasMode::Tare([a, b]), _) if !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b) => {
                    return Err(LoadsError::new(
                        "flange_sensor.tare_window_s",
                        format!("bias = \"tare\" needs a window [start_s, end_s] with 0 <= start < end, got [{a}, {b}]"),
                    ));
                }
                (BiasMode::Tare(_), _) | (_, None) => {}
                (_, Some(_)) => return Err(LoadsError::new("flange_sensor.tare_window_s", "is read only with bias = \"tare\"")),
            }
        }
        Ok(())
    }

    /// Every (field, stream, column) the file reads.
    pub fn channels(&self) -> Vec<(String, &str, &str)> {
        let mut out = vec![];
        for (i, c) in self.cables.iter().enumerate() {
            out.push((format!("cable[{i}]"), c.stream.as_str(), c.column.as_str()));
        }
        if let Some(t) = &self.tip_force {
            out.push(("tip_force".into(), t.channel.stream.as_str(), t.channel.column.as_str()));
        }
        if let Some(s) = &self.flange_sensor {
            for c in &s.columns {
                out.push(("flange_sensor".into(), s.stream.as_str(), c.as_str()));
            }
        }
        out
    }
}

/// A stream's samples: times and named columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    pub t_s: Vec<f64>,
    pub columns: BTreeMap<String, Vec<f64>>,
}

impl Stream {
    /// Mean and standard deviation of `column`'s finite values over
    /// `[a, b]`, and their count; `None` where there is none.
    pub fn stats(&self, column: &str, a: f64, b: f64) -> Result<Option<(f64, f64, usize)>, Unusable> {
        let Some(v) = self.columns.get(column) else { return Ok(None) };
        crate::hold_table::stats_between(&self.t_s, v, a, b).map_err(|e| Unusable(format!("statistics of '{column}' over [{a}, {b}] s: {e}")))
    }
}

/// One session's recordings on one clock (seconds since its start), in the
/// rig's world frame.
#[derive(Clone, Debug, Default)]
pub struct SessionData {
    pub name: String,
    /// When the loads began to act (a support's release, session.toml's
    /// `release_s`); `None`: each hold's loads began with its still run.
    /// A viscoelastic rod's hold creeps for as long as they act.
    pub loaded_since_s: Option<f64>,
    /// Flange poses in the world (`T_WB * TCP`), time-sorted.
    pub flange: Vec<(f64, Pose)>,
    /// A held tip (`[tip_hold]`): the tip's frame in the world over time,
    /// time-sorted; empty for a free tip.
    pub tip_clamp: Vec<(f64, Pose)>,
    /// Tracked frames: time and each marker's position (`None`: missing).
    pub markers: Vec<(f64, Vec<Option<rod::Sighting>>)>,
    pub streams: BTreeMap<String, Stream>,
    pub gravity_m_s2: Vec3,
    /// What reading it left out (damaged chunks), one line each.
    pub warnings: Vec<String>,
}

/// A still interval and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    pub session: String,
    /// Where the still run began (before its edges were trimmed).
    pub still_from_s: f64,
    pub start_s: f64,
    pub end_s: f64,
    pub frames: usize,
    pub status: HoldStatus,
}

#[derive(Clone, Debug, PartialEq)]
pub enum HoldStatus {
    /// Became the experiment with this id.
    Used(String),
    Rejected(String),
}

impl Hold {
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }
}

use lie::series::{line_slope, window};

/// Per robot sample: is the flange still (translation and rotation)?
fn robot_still(flange: &[(f64, Pose)], o: &HoldOptions) -> Vec<bool> {
    let t: Vec<f64> = flange.iter().map(|s| s.0).collect();
    (0..flange.len())
        .map(|i| {
            let w = window(&t, i, 0.5 * o.window_s);
            if w.len() < 2 {
                return false;
            }
            let ts = &t[w.clone()];
            let v = Vec3::from_fn(|a, _| line_slope(ts, &flange[w.clone()].iter().map(|s| s.1.pos[a]).collect::<Vec<_>>()));
            // The turn rate as a line fit too (the rotation vectors from the
            // window's middle sample): a base seen by motion capture jitters
            // by milliradians from sample to sample, which the first and
            // last samples alone would read as motion.
            let mid = flange[(w.start + w.end) / 2].1.rot.transpose();
            let turns: Vec<Vec3> = flange[w.clone()].iter().map(|s| lie::so3_log(&(mid * s.1.rot))).collect();
            let omega = Vec3::from_fn(|a, _| line_slope(ts, &turns.iter().map(|r| r[a]).collect::<Vec<_>>()));
            v.norm() <= o.max_robot_speed_m_s && omega.norm() <= o.max_robot_angular_speed_rad_s
        })
        .collect()
}

/// Per tracked frame: the largest marker speed (line fits over the window).
fn marker_speeds(markers: &[(f64, Vec<Option<rod::Sighting>>)], o: &HoldOptions) -> Vec<f64> {
    let t: Vec<f64> = markers.iter().map(|f| f.0).collect();
    let n_markers = markers.iter().map(|f| f.1.len()).max().unwrap_or(0);
    (0..markers.len())
        .map(|i| {
            let w = window(&t, i, 0.5 * o.window_s);
            let mut fastest: f64 = 0.0;
            let mut seen = false;
            for m in 0..n_markers {
                // Points only: a ray's origin is its camera's, which does not move.
                let pts: Vec<(f64, Vec3)> =
                    markers[w.clone()].iter().filter_map(|(tf, ps)| ps.get(m).copied().flatten().and_then(|p| p.as_point()).map(|p| (*tf, p))).collect();
                if pts.len() < 3 {
                    continue;
                }
                seen = true;
                let ts: Vec<f64> = pts.iter().map(|p| p.0).collect();
                let v = Vec3::from_fn(|a, _| line_slope(&ts, &pts.iter().map(|p| p.1[a]).collect::<Vec<_>>()));
                fastest = fastest.max(v.norm());
            }
            if seen {
                fastest
            } else {
                f64::INFINITY
            }
        })
        .collect()
}

/// Still intervals of a session: runs of tracked frames where every marker
/// and the robot (over the window around the frame) are still. Intervals
/// shorter than the window are not listed; the others are `Used` (with an
/// empty id, to be filled by [`experiments_from_session`]) or rejected as
/// too short.
pub fn find_holds(data: &SessionData, o: &HoldOptions) -> Result<Vec<Hold>, Unusable> {
    let speeds = marker_speeds(&data.markers, o);
    // Every robot still at the frame: the base's, and a held tip's.
    let mut held_by = vec![&data.flange];
    if !data.tip_clamp.is_empty() {
        held_by.push(&data.tip_clamp);
    }
    let robots: Vec<(Vec<f64>, Vec<bool>)> = held_by.into_iter().map(|poses| (poses.iter().map(|s| s.0).collect(), robot_still(poses, o))).collect();
    let frames_t_s: Vec<f64> = data.markers.iter().map(|f| f.0).collect();
    let runs = crate::hold_table::still_runs(&frames_t_s, &speeds, &robots, o).map_err(|e| Unusable(format!("finding the holds: {e}")))?;
    Ok(runs
        .into_iter()
        .map(|run| {
            // A line fit over the window barely sees motion at its edge: a
            // run's ends are uncertain by half a window, so both are trimmed.
            let (start_s, end_s) = (run.start_s, run.end_s);
            let status = if end_s - start_s < o.min_duration_s {
                HoldStatus::Rejected(format!(
                    "still for {:.2} s, {:.2} s of it after the window's edges and the settling (holds.window_s, settle_s), shorter than holds.min_duration_s = {} s",
                    run.t1_s - run.t0_s,
                    (end_s - start_s).max(0.0),
                    o.min_duration_s
                ))
            } else {
                HoldStatus::Used(String::new())
            };
            Hold { session: data.name.clone(), still_from_s: run.t0_s, start_s, end_s, frames: run.frames, status }
        })
        .collect())
}

/// A marker over a hold: its mean point and the standard error of the
/// mean, or (when too few frames saw it as a point, one camera alone
/// seeing it in the others) its mean ray.
#[doc(hidden)] // public for tests/units.rs only
pub struct HoldSighting {
    pub at_m: Vec3,
    pub ray: Option<Vec3>,
    pub sigma_m: f64,
}

/// The hold's sighting of one marker from its frames' sightings `seen`:
/// the mean of its points when they cover the hold (at most
/// `max_missing` of `frames` without one); else the mean ray of the camera
/// that saw it alone most often, its spread
/// across the ray the rays' angular scatter at the distance of the hold's
/// other markers (their points' mean).
#[doc(hidden)] // public for tests/units.rs only
pub fn hold_sighting(seen: &[rod::Sighting], max_missing: f64, frames: &[&Vec<Option<rod::Sighting>>]) -> HoldSighting {
    let pts: Vec<Vec3> = seen.iter().filter_map(|s| s.as_point()).collect();
    let rays: Vec<(Vec3, Vec3)> = seen.iter().filter_map(|s| s.ray.map(|d| (s.at_m, d))).collect();
    let covered = pts.len() as f64 >= (1.0 - max_missing) * frames.len() as f64;
    if covered || rays.is_empty() {
        let n = pts.len() as f64;
        let mean = pts.iter().sum::<Vec3>() / n;
        // Scatter per coordinate (pooled), then the standard error of the mean.
        let scatter = if pts.len() > 1 { (pts.iter().map(|p| (p - mean).norm_squared()).sum::<f64>() / (3.0 * (n - 1.0))).sqrt() } else { 0.0 };
        return HoldSighting { at_m: mean, ray: None, sigma_m: scatter / n.sqrt() };
    }
    // One camera's rays (the one that saw it alone most often): two
    // cameras' rays share no origin to average.
    let same_camera = |a: &Vec3, b: &Vec3| (a - b).norm() < 1e-3;
    let camera = rays.iter().max_by_key(|r| rays.iter().filter(|o| same_camera(&o.0, &r.0)).count()).map(|r| r.0).expect("rays");
    let rays: Vec<(Vec3, Vec3)> = rays.into_iter().filter(|r| same_camera(&r.0, &camera)).collect();
    let n = rays.len() as f64;
    let origin = rays.iter().map(|r| r.0).sum::<Vec3>() / n;
    let direction = (rays.iter().map(|r| r.1).sum::<Vec3>() / n).normalize();
    // Angular scatter per coordinate across the ray (two of them).
    let scatter_rad = if rays.len() > 1 { (rays.iter().map(|r| (r.1 - direction).norm_squared()).sum::<f64>() / (2.0 * (n - 1.0))).sqrt() } else { 0.0 };
    let others: Vec<Vec3> = frames.iter().flat_map(|f| f.iter().flatten().filter_map(|s| s.as_point())).collect();
    let depth_m = if others.is_empty() { 1.0 } else { (others.iter().sum::<Vec3>() / others.len() as f64 - origin).norm() };
    HoldSighting { at_m: origin, ray: Some(direction), sigma_m: scatter_rad * depth_m / n.sqrt() }
}

/// What an experiment needs from the rod file.
pub struct RodMarkers<'a> {
    pub markers: &'a [rod::Marker],
    /// The rod's base in the flange frame (the rod file's `[base]`).
    pub mount: Pose,
    /// Each marker's place uncertainty \[m\] where it was measured on the
    /// body (a reference window's noise and creep), added to its noise;
    /// empty or short: none.
    pub place_sigma_m: &'a [f64],
}

/// The experiment of one hold, or why the hold cannot be used;
/// `sensor_bias` is what is taken off the flange sensor's readings.
pub fn experiment_from_hold(
    data: &SessionData,
    hold: &Hold,
    id: &str,
    rod: &RodMarkers,
    loads: &LoadsFile,
    sensor_bias: [f64; 6],
) -> Result<Experiment, Unusable> {
    let o = &loads.holds;
    let (a, b) = (hold.start_s, hold.end_s);
    let frames: Vec<&Vec<Option<rod::Sighting>>> = data.markers.iter().filter(|f| f.0 >= a && f.0 <= b).map(|f| &f.1).collect();
    if frames.is_empty() {
        return Err(Unusable("no tracked frame".into()));
    }
    let mut measurements = vec![];
    for (k, m) in rod.markers.iter().enumerate() {
        let seen: Vec<rod::Sighting> = frames.iter().filter_map(|f| f.get(k).copied().flatten()).collect();
        let missing = 1.0 - seen.len() as f64 / frames.len() as f64;
        if missing > o.max_missing_fraction {
            return Err(Unusable(format!(
                "marker {k} missing in {:.0} % of the hold's frames (holds.max_missing_fraction = {})",
                100.0 * missing,
                o.max_missing_fraction
            )));
        }
        let sighting = hold_sighting(&seen, o.max_missing_fraction, &frames);
        measurements.push(Measurement {
            arc_m: m.arc_m,
            offset_body_m: m.offset_body_m,
            pos_m: sighting.at_m,
            sigma_m: sighting.sigma_m.hypot(rod.place_sigma_m.get(k).copied().unwrap_or(0.0)).max(o.sigma_floor_m),
            arc_sigma_m: 0.0,
            ray: sighting.ray,
        });
    }
    // The base: the flange's mean pose over the hold (mean position; mean
    // rotation vector about the middle sample's rotation: a clamp seen by
    // motion capture jitters by milliradians, 0.3 mm at a 10 cm tip in any
    // one sample) times the mount.
    let robot: Vec<&(f64, Pose)> = data.flange.iter().filter(|s| s.0 >= a && s.0 <= b).collect();
    if robot.is_empty() {
        return Err(Unusable("no robot sample".into()));
    }
    let flange = lie::mean_pose(robot.iter().map(|s| &s.1));
    let base = flange.compose(&rod.mount);
    // Mean, standard deviation and count of a channel over the hold;
    // the error names the field that asked for it.
    let mean_of = |c: &Channel, field: &str| {
        let s = data.streams.get(&c.stream).ok_or_else(|| Unusable(format!("{field}: no stream '{}'", c.stream)))?;
        let (m, sd, n) =
            s.stats(&c.column, a, b)?.ok_or_else(|| Unusable(format!("{field}: stream '{}' has no sample of '{}' in the hold", c.stream, c.column)))?;
        Ok::<_, Unusable>((c.scale * m + c.offset, (c.scale * sd).abs(), n))
    };
    let mut tensions_n = vec![];
    let mut tension_sigma_n = vec![];
    for (i, c) in loads.cables.iter().enumerate() {
        let (t, sd, n) = mean_of(c, &format!("cable[{i}]"))?;
        tensions_n.push(c.zero_within_noise(t, sd).max(0.0));
        tension_sigma_n.push(sd / (n as f64).sqrt());
    }
    let (tip_mass_kg, tip_mass_offset_m) = loads.tip_mass_in(&data.name, a, b)?;
    let mut tip_force_n = data.gravity_m_s2 * tip_mass_kg;
    if let Some(tf) = &loads.tip_force {
        let (f, sd, _) = mean_of(&tf.channel, "tip_force")?;
        tip_force_n += Vec3::from(tf.direction).normalize() * tf.channel.zero_within_noise(f, sd);
    }
    let mut e = Experiment::new(id, tensions_n, tip_force_n, measurements);
    e.tip_force_offset_body_m = Vec3::new(0.0, tip_mass_offset_m[0], tip_mass_offset_m[1]);
    e.base_pose = Some(base);
    if !data.tip_clamp.is_empty() {
        // The tip's hold: the second robot's mean pose over the hold.
        let clamp: Vec<&(f64, Pose)> = data.tip_clamp.iter().filter(|s| s.0 >= a && s.0 <= b).collect();
        if clamp.is_empty() {
            return Err(Unusable("no sample of the tip's robot ([tip_hold] robot) in the hold".into()));
        }
        let tip = lie::mean_pose(clamp.iter().map(|s| &s.1));
        e.tip_position_m = Some(tip.pos);
        e.tip_rotation_rad = Some(lie::so3_log(&tip.rot));
    }
    e.tension_sigma_n = tension_sigma_n;
    if let Some(s) = loads.flange_sensor.as_ref().filter(|s| s.fit) {
        let mut wrench = Vec6::zeros();
        let mut sigma = Vec6::zeros();
        for (c, col) in s.columns.iter().enumerate() {
            let ch = Channel { stream: s.stream.clone(), column: col.clone(), scale: 1.0, offset: -sensor_bias[c], noise: None };
            let (m, sd, n) = mean_of(&ch, "flange_sensor")?;
            // Columns are force then moment; wrenches are [moment; force].
            let (row, floor) = if c < 3 { (3 + c, s.sigma_floor_force_n) } else { (c - 3, s.sigma_floor_moment_nm) };
            wrench[row] = m;
            sigma[row] = (sd / (n as f64).sqrt()).max(floor);
        }
        e.base_wrench = Some(WrenchMeasurement { sensor_in_base: rod.mount.inverse().compose(&s.mount.pose()), wrench, sigma });
    }
    // The loads act from the release (or from the still run's start).
    e.loaded_for_s = Some(0.5 * (a + b) - data.loaded_since_s.filter(|t| *t <= hold.still_from_s).unwrap_or(hold.still_from_s));
    Ok(e)
}

/// Which way the cables slid into hold `now` (what their friction
/// opposed), from the session's tension history: the most loaded cable
/// let out since the hold before (its tension lower by more than three of
/// its standard errors) is `LetOut`; otherwise, and in a session's first
/// hold, `PulledIn`. Where the way changed since the hold before, the
/// cables reversed at that hold's tensions; otherwise they keep the
/// reversal they had (friction holds the profile they stopped with beyond
/// where the new slide reaches).
#[doc(hidden)] // public for tests/units.rs only
pub fn slide_since(before: Option<&Experiment>, now: &Experiment) -> (rod::statics::CableSlide, Vec<Option<f64>>) {
    use rod::statics::CableSlide;
    let most = now.tensions_n.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(c, _)| c);
    let Some(before) = before else { return (CableSlide::PulledIn, vec![]) };
    let slide = match most {
        Some(c) if c < before.tensions_n.len() => {
            let noise = 3.0 * now.tension_sigma_n.get(c).copied().unwrap_or(0.0).hypot(before.tension_sigma_n.get(c).copied().unwrap_or(0.0));
            if before.tensions_n[c] - now.tensions_n[c] > noise.max(1e-9) {
                CableSlide::LetOut
            } else {
                CableSlide::PulledIn
            }
        }
        _ => CableSlide::PulledIn,
    };
    let reversal_n = if slide != before.cable_slide { before.tensions_n.iter().map(|t| Some(*t)).collect() } else { before.cable_reversal_n.clone() };
    (slide, reversal_n)
}

/// Finds a session's holds and makes an experiment of every usable one
/// (ids `<session>/hold<k>`); returns the experiments and every hold with
/// its status. A flange sensor's bias is found once for the session: a
/// tare window that holds no tare fails the session, not its holds.
pub fn experiments_from_session(data: &SessionData, rod: &RodMarkers, loads: &LoadsFile) -> Result<(Vec<Experiment>, Vec<Hold>), Unusable> {
    let sensor_bias = match loads.flange_sensor.as_ref().filter(|s| s.fit) {
        Some(s) => {
            let stream = data.streams.get(&s.stream).ok_or_else(|| Unusable(format!("no stream '{}' (flange_sensor.stream)", s.stream)))?;
            s.bias_in(stream)?
        }
        None => [0.0; 6],
    };
    let mut holds = find_holds(data, &loads.holds)?;
    let mut experiments: Vec<Experiment> = vec![];
    for (k, h) in holds.iter_mut().enumerate() {
        if matches!(h.status, HoldStatus::Rejected(_)) {
            continue;
        }
        let id = format!("{}/hold{}", data.name, k + 1);
        h.status = match experiment_from_hold(data, h, &id, rod, loads, sensor_bias) {
            Ok(mut e) => {
                (e.cable_slide, e.cable_reversal_n) = slide_since(experiments.last(), &e);
                experiments.push(e);
                HoldStatus::Used(id)
            }
            Err(why) => HoldStatus::Rejected(why.0),
        };
    }
    Ok((experiments, holds))
}
