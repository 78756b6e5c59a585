//! The rig file (`configs/rig/*.toml`): which devices a session records
//! from, and the rig's world frame. One schema that reads and writes (the
//! virtual lab writes rig files; `record` reads them), outside the crates
//! that link OpenCV: reading a rig file needs only this. Errors name the
//! file and the field.

use crate::frames::RigFrames;
use crate::ConfigFileError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A rig file: the devices of a lab and its world frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rig {
    /// What session.toml keeps of the session: `[session]`.
    #[serde(default)]
    pub session: SessionInfo,
    /// The world frame W: robot base, board (plane of motion), marker
    /// height, gravity, table (see `session::frames`).
    #[serde(default)]
    pub frames: RigFrames,
    /// UR robots streaming RTDE, each a `[[robot]]` table.
    #[serde(default, rename = "robot", skip_serializing_if = "Vec::is_empty")]
    pub robots: Vec<RobotDevice>,
    /// Robotiq FT 300 sensors on serial ports, each an `[[ft300]]` table.
    #[serde(default, rename = "ft300", skip_serializing_if = "Vec::is_empty")]
    pub ft300s: Vec<Ft300Device>,
    /// Line sensors (a load cell behind a microcontroller) on serial ports, each an `[[ascii]]` table.
    #[serde(default, rename = "ascii", skip_serializing_if = "Vec::is_empty")]
    pub ascii_sensors: Vec<AsciiDevice>,
    /// Cameras (OpenCV devices or video files), each a `[[camera]]` table.
    #[serde(default, rename = "camera", skip_serializing_if = "Vec::is_empty")]
    pub cameras: Vec<CameraDevice>,
    /// ATI Net F/T sensors (RDT over UDP), each a `[[netft]]` table.
    #[serde(default, rename = "netft", skip_serializing_if = "Vec::is_empty")]
    pub netfts: Vec<NetFtDevice>,
}

/// An ATI Net F/T (or Axia, Schunk FTN-AXIA) streaming RDT over UDP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetFtDevice {
    /// The stream's name in the session (`streams/<name>`).
    #[serde(default = "default_netft_name")]
    pub name: String,
    /// host:port of its RDT server (UDP, port 49152).
    pub address: String,
    /// Its calibration's TCP port (READCALINFO).
    #[serde(default = "default_netft_calibration_port")]
    pub calibration_port: u16,
    /// Counts per newton and per newton metre; both or neither (read from
    /// the sensor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_per_force: Option<f64>,
    /// Counts per newton metre (with counts_per_force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_per_torque: Option<f64>,
    /// Zero the sensor (RDT bias command) when recording starts; the
    /// session records when.
    #[serde(default)]
    pub tare: bool,
}

fn default_netft_name() -> String {
    "netft".into()
}

fn default_netft_calibration_port() -> u16 {
    49151
}

/// `[session]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    /// Free text kept in session.toml (who, what, specimen).
    #[serde(default)]
    pub operator_notes: String,
}

/// A UR controller's RTDE server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotDevice {
    /// The stream's name in the session.
    #[serde(default = "default_robot_name")]
    pub name: String,
    /// host:port of the controller's RTDE server (port 30004).
    pub address: String,
    /// Streaming rate \[Hz\]; none: the controller's maximum (125 Hz on
    /// CB3, 500 Hz on e-Series, read from its version), as UR's own client
    /// and `ur_rtde` choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_hz: Option<f64>,
    /// RTDE output variables (`timestamp` is always recorded).
    pub variables: Vec<String>,
}

/// A Robotiq FT 300 force/torque sensor on a serial port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ft300Device {
    /// The stream's name in the session.
    #[serde(default = "default_ft300_name")]
    pub name: String,
    /// Serial device, e.g. /dev/ttyUSB0.
    pub port: String,
    /// Baud rate (the FT 300 streams at 19200, 8N1).
    #[serde(default = "default_ft300_baud")]
    pub baud: u32,
}

/// A sensor that prints one line of numbers per sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AsciiDevice {
    /// The stream's name in the session.
    #[serde(default = "default_ascii_name")]
    pub name: String,
    /// Serial device, e.g. /dev/ttyACM0.
    pub port: String,
    /// Baud rate.
    #[serde(default = "default_ascii_baud")]
    pub baud: u32,
    /// One character, or " " for any whitespace.
    #[serde(default = "default_separator")]
    pub separator: String,
    /// Column names in the session, in the order of the fields (with units: `force_n`).
    pub columns: Vec<String>,
    /// Factors from the sensor's units to SI, one per column (default 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scales: Vec<f64>,
}

/// A camera (OpenCV VideoCapture): a device index or a video file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CameraDevice {
    /// The stream's name in the session (and its video: `<name>.avi`, or `<name>.mkv` with container "mkv").
    #[serde(default = "default_camera_name")]
    pub name: String,
    /// Device index (/dev/videoN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<i32>,
    /// A video file played at its own frame rate (dry runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// For a file: the wall-clock time \[s since 1970, UTC\] at which its
    /// frame 0 is shown, as if the camera had been filming since then
    /// (virtual lab: frames due before the recording started are not
    /// recorded). Default: frame 0 when the recording starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_start_unix_s: Option<f64>,
    /// Requested frame rate (devices) \[frames/s\].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fps: Option<f64>,
    /// Video container: "avi" (Motion-JPEG at quality 75, default: 0.3 GB
    /// a minute at 1280 x 720 and 30 frames/s, markers within 0.02 px of
    /// raw's), "raw" (uncompressed BGR in `<name>.avi`: 5 GB a minute,
    /// nothing to encode, read back fastest) or "mkv" (lossless HuffYUV,
    /// 0.56 of raw's size).
    #[serde(default = "default_container")]
    pub container: String,
    /// Capture settings (`[camera.settings]`) applied through OpenCV
    /// before recording and read back into `session.toml` as the camera
    /// reports them (a setting the driver refuses, or a video file cannot
    /// take, is a warning).
    #[serde(default, skip_serializing_if = "CameraSettings::is_empty")]
    pub settings: CameraSettings,
}

/// What a rig file sets on a camera (driver units where the driver
/// defines them, as OpenCV passes them on). A real camera's automatic
/// exposure and white balance change the markers' colours from frame to
/// frame: set them off and the exposure by hand.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CameraSettings {
    /// Frame width \[px\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_px: Option<u32>,
    /// Frame height \[px\].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height_px: Option<u32>,
    /// false: manual exposure (V4L2 through OpenCV: `CAP_PROP_AUTO_EXPOSURE` 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_exposure: Option<bool>,
    /// Exposure in the driver's units (V4L2: 100 us steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<f64>,
    /// Gain in the driver's units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain: Option<f64>,
    /// false: fixed white balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_white_balance: Option<bool>,
    /// Focus in the driver's units (autofocus is then switched off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<f64>,
}

impl CameraSettings {
    /// Nothing set: the camera as its driver starts it.
    pub fn is_empty(&self) -> bool {
        *self == CameraSettings::default()
    }
}

fn default_container() -> String {
    "avi".into()
}
fn default_ft300_name() -> String {
    "ft300".into()
}
fn default_ft300_baud() -> u32 {
    19_200
}
fn default_ascii_name() -> String {
    "ascii".into()
}
fn default_ascii_baud() -> u32 {
    115_200
}
fn default_separator() -> String {
    ",".into()
}
fn default_camera_name() -> String {
    "camera".into()
}
fn default_robot_name() -> String {
    "robot".into()
}
impl Default for RobotDevice {
    fn default() -> RobotDevice {
        RobotDevice { name: default_robot_name(), address: String::new(), frequency_hz: None, variables: vec![] }
    }
}

impl Default for CameraDevice {
    fn default() -> CameraDevice {
        CameraDevice {
            name: default_camera_name(),
            device: None,
            file: None,
            file_start_unix_s: None,
            fps: None,
            container: default_container(),
            settings: CameraSettings::default(),
        }
    }
}

/// How an ASCII sensor's line is cut into fields.
#[derive(Clone, Debug, PartialEq)]
pub enum Separator {
    /// Any run of spaces or tabs.
    Whitespace,
    Char(char),
}

/// A separator that cannot cut numbers apart.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("separator must be one character other than a digit, '.', '-' or a line break, got {0:?}")]
pub struct SeparatorError(pub String);

impl fault::Fault for SeparatorError {
    fn kind(&self) -> fault::Kind {
        fault::Kind::Input
    }
}

impl Separator {
    /// `" "` or `""` means any whitespace; otherwise exactly one character.
    pub fn parse(s: &str) -> Result<Separator, SeparatorError> {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (None, _) | (Some(' '), None) | (Some('\t'), None) => Ok(Separator::Whitespace),
            (Some(c), None) if c != '\n' && c != '\r' && !c.is_ascii_digit() && c != '.' && c != '-' => Ok(Separator::Char(c)),
            _ => Err(SeparatorError(s.into())),
        }
    }
}

impl AsciiDevice {
    /// The parsed separator (checked by [`Rig::validate`]).
    pub fn separator(&self) -> Separator {
        Separator::parse(&self.separator).unwrap_or(Separator::Whitespace)
    }

    /// One scale per column (1 where the file gives none).
    pub fn scales(&self) -> Vec<f64> {
        if self.scales.is_empty() {
            vec![1.0; self.columns.len()]
        } else {
            self.scales.clone()
        }
    }
}

impl Rig {
    /// Reads and checks a rig file; returns the rig and its text (kept
    /// verbatim in the session).
    pub fn from_file(path: &Path) -> Result<(Rig, String), ConfigFileError> {
        let (rig, text): (Rig, String) = crate::read_toml(path, "rig file")?;
        rig.validate(path)?;
        Ok((rig, text))
    }

    /// The rig as a TOML file's text, with a first comment line.
    pub fn to_toml(&self, comment: &str) -> String {
        let text = toml::to_string(self).expect("a rig serialises");
        format!("# {comment}\n{text}")
    }

    /// Checks every value; the error names `path` and the field.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigFileError> {
        let err = |message: String| ConfigFileError::new(path, message);
        self.frames.validate(path)?;
        for (i, r) in self.robots.iter().enumerate() {
            // UR's RTDE streams at 1 to 500 Hz (125 at most on a CB3).
            if let Some(f) = r.frequency_hz.filter(|f| !(*f >= 1.0 && *f <= 500.0)) {
                return Err(err(format!("robot[{i}].frequency_hz: must be in [1, 500] Hz, the controller's range (125 at most on a CB3), got {f}")));
            }
            for (j, v) in r.variables.iter().enumerate() {
                if v == "timestamp" || r.variables[..j].contains(v) {
                    return Err(err(format!(
                        "robot[{i}].variables: \"{v}\" is {}",
                        if v == "timestamp" { "always recorded: leave it out" } else { "listed twice" }
                    )));
                }
            }
            if r.address.is_empty() {
                return Err(err(format!("robot[{i}].address: empty")));
            }
        }
        // A serial line's rate: 0 baud is no line at all (termios reads it as "hang up").
        let bauds = self.ft300s.iter().map(|f| ("ft300", f.baud)).chain(self.ascii_sensors.iter().map(|a| ("ascii", a.baud)));
        for (i, (kind, baud)) in bauds.enumerate() {
            let i = if kind == "ft300" { i } else { i - self.ft300s.len() };
            if !(50..=4_000_000).contains(&baud) {
                return Err(err(format!("{kind}[{i}].baud: must be a serial rate in 50..=4000000, got {baud}")));
            }
        }
        for (i, a) in self.ascii_sensors.iter().enumerate() {
            Separator::parse(&a.separator).map_err(|m| err(format!("ascii[{i}].separator: {m}")))?;
            if a.columns.is_empty() {
                return Err(err(format!("ascii[{i}].columns: empty")));
            }
            for (j, c) in a.columns.iter().enumerate() {
                if c.is_empty() || c == "t_host_ns" || a.columns[..j].contains(c) {
                    return Err(err(format!("ascii[{i}].columns: {c:?} is empty, reserved or repeated")));
                }
            }
            if !a.scales.is_empty() && a.scales.len() != a.columns.len() {
                return Err(err(format!("ascii[{i}].scales: {} scales for {} columns", a.scales.len(), a.columns.len())));
            }
            if let Some(s) = a.scales.iter().find(|s| !(s.is_finite() && **s != 0.0)) {
                return Err(err(format!("ascii[{i}].scales: {s} is not a finite non-zero factor")));
            }
        }
        for (i, c) in self.cameras.iter().enumerate() {
            if c.device.is_some() == c.file.is_some() {
                return Err(err(format!("camera[{i}]: give exactly one of `device` (index) or `file`")));
            }
            if crate::VideoFormat::from_container(&c.container).is_none() {
                return Err(err(format!("camera[{i}].container: \"mkv\", \"avi\" or \"raw\", got {:?}", c.container)));
            }
            if let Some(t) = c.file_start_unix_s {
                if c.file.is_none() || !(t.is_finite() && t > 0.0) {
                    return Err(err(format!("camera[{i}].file_start_unix_s: a positive time for a `file` camera, got {t}")));
                }
            }
            if let Some(f) = c.fps {
                if !(f > 0.0 && f <= 10_000.0) {
                    return Err(err(format!("camera[{i}].fps: must be in (0, 10000], got {f}")));
                }
            }
        }
        for (i, n) in self.netfts.iter().enumerate() {
            if n.address.is_empty() {
                return Err(err(format!("netft[{i}].address: empty (host:49152)")));
            }
            match (n.counts_per_force, n.counts_per_torque) {
                (None, None) => {}
                (Some(f), Some(t)) if f.is_finite() && f > 0.0 && t.is_finite() && t > 0.0 => {}
                (Some(_), Some(_)) => return Err(err(format!("netft[{i}].counts_per_force, counts_per_torque: must be positive"))),
                _ => return Err(err(format!("netft[{i}].counts_per_force, counts_per_torque: give both, or neither (read from the sensor)"))),
            }
        }
        let names = self.device_names();
        for (j, n) in names.iter().enumerate() {
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') || names[..j].contains(n) {
                return Err(err(format!("device name {n:?}: names must be unique, non-empty, letters, digits, '_' or '-'")));
            }
        }
        if names.is_empty() {
            return Err(err("no devices ([[robot]], [[ft300]], [[ascii]], [[camera]], [[netft]])".into()));
        }
        Ok(())
    }

    /// Every device's name, in rig order (robots, FT 300s, ASCII sensors, cameras).
    pub fn device_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.robots.iter().map(|r| r.name.as_str()).collect();
        names.extend(self.ft300s.iter().map(|r| r.name.as_str()));
        names.extend(self.ascii_sensors.iter().map(|r| r.name.as_str()));
        names.extend(self.cameras.iter().map(|r| r.name.as_str()));
        names.extend(self.netfts.iter().map(|r| r.name.as_str()));
        names
    }
}
