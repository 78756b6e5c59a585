//! The rig configuration (`configs/rig/*.toml`): which devices a session
//! records from. Errors name the file and the field.

use crate::ascii::Separator;
use crate::camera::{CameraConfig, CameraSource};
use crate::robot::RobotConfig;
use crate::serial::{AsciiSensor, Ft300, SerialConfig, SerialSensor};
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rig {
    #[serde(default)]
    pub session: SessionInfo,
    /// The world frame W: robot base, board (plane of motion), marker
    /// height, gravity, table (see `session::frames`).
    #[serde(default)]
    pub frames: session::RigFrames,
    #[serde(default, rename = "robot")]
    pub robots: Vec<RawRobot>,
    #[serde(default, rename = "ft300")]
    pub ft300s: Vec<RawFt300>,
    #[serde(default, rename = "ascii")]
    pub ascii_sensors: Vec<RawAscii>,
    #[serde(default, rename = "camera")]
    pub cameras: Vec<RawCamera>,
}

/// A Robotiq FT 300 force/torque sensor on a serial port.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFt300 {
    #[serde(default = "default_ft300_name")]
    pub name: String,
    /// Serial device, e.g. /dev/ttyUSB0.
    pub port: String,
    #[serde(default = "default_ft300_baud")]
    pub baud: u32,
}

/// A sensor that prints one line of numbers per sample.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAscii {
    #[serde(default = "default_ascii_name")]
    pub name: String,
    pub port: String,
    #[serde(default = "default_ascii_baud")]
    pub baud: u32,
    /// One character, or " " for any whitespace.
    #[serde(default = "default_separator")]
    pub separator: String,
    /// Column names in the session, in the order of the fields (with units: `force_n`).
    pub columns: Vec<String>,
    /// Factors from the sensor's units to SI, one per column (default 1).
    #[serde(default)]
    pub scales: Vec<f64>,
}

/// A camera (OpenCV VideoCapture): a device index or a video file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCamera {
    #[serde(default = "default_camera_name")]
    pub name: String,
    /// Device index (/dev/videoN).
    pub device: Option<i32>,
    /// A video file played at its own frame rate (dry runs).
    pub file: Option<String>,
    /// For a file: the wall-clock time \[s since 1970, UTC\] at which its
    /// frame 0 is shown, as if the camera had been filming since then
    /// (virtual lab: frames due before the recording started are not
    /// recorded). Default: frame 0 when the recording starts.
    pub file_start_unix_s: Option<f64>,
    /// Requested frame rate (devices) [frames/s].
    pub fps: Option<f64>,
    /// Video container: "mkv" (lossless HuffYUV, default) or "avi" (Motion-JPEG, smaller).
    #[serde(default = "default_container")]
    pub container: String,
}

fn default_container() -> String {
    "mkv".into()
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

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    #[serde(default)]
    pub operator_notes: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRobot {
    #[serde(default = "default_robot_name")]
    pub name: String,
    /// host:port of the controller's RTDE server (port 30004).
    pub address: String,
    #[serde(default = "default_frequency")]
    pub frequency_hz: f64,
    /// RTDE output variables (`timestamp` is always recorded).
    pub variables: Vec<String>,
}

fn default_robot_name() -> String {
    "robot".into()
}

fn default_frequency() -> f64 {
    500.0
}

pub use session::ConfigFileError as RigError;

impl Rig {
    pub fn from_file(path: &Path) -> Result<(Rig, String), RigError> {
        let (rig, text): (Rig, String) = session::read_toml(path, "rig file")?;
        let err = |message: String| RigError::new(path, message);
        rig.frames.validate().map_err(err)?;
        for (i, r) in rig.robots.iter().enumerate() {
            if !(r.frequency_hz > 0.0 && r.frequency_hz <= 500.0) {
                return Err(err(format!("robot[{i}].frequency_hz: must be in (0, 500], got {}", r.frequency_hz)));
            }
            if r.address.is_empty() {
                return Err(err(format!("robot[{i}].address: empty")));
            }
        }
        for (i, a) in rig.ascii_sensors.iter().enumerate() {
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
        for (i, c) in rig.cameras.iter().enumerate() {
            if c.device.is_some() == c.file.is_some() {
                return Err(err(format!("camera[{i}]: give exactly one of `device` (index) or `file`")));
            }
            if session::video_codec(&c.container).is_none() {
                return Err(err(format!("camera[{i}].container: \"mkv\" or \"avi\", got {:?}", c.container)));
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
        let mut names: Vec<&str> = rig.robots.iter().map(|r| r.name.as_str()).collect();
        names.extend(rig.ft300s.iter().map(|r| r.name.as_str()));
        names.extend(rig.ascii_sensors.iter().map(|r| r.name.as_str()));
        names.extend(rig.cameras.iter().map(|r| r.name.as_str()));
        for (j, n) in names.iter().enumerate() {
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') || names[..j].contains(n) {
                return Err(err(format!("device name {n:?}: names must be unique, non-empty, letters, digits, '_' or '-'")));
            }
        }
        if names.is_empty() {
            return Err(err("no devices ([[robot]], [[ft300]], [[ascii]], [[camera]])".into()));
        }
        Ok((rig, text))
    }

    pub fn robot_configs(&self) -> Vec<RobotConfig> {
        self.robots
            .iter()
            .map(|r| RobotConfig { name: r.name.clone(), address: r.address.clone(), frequency_hz: r.frequency_hz, variables: r.variables.clone() })
            .collect()
    }
}

impl Rig {
    pub fn camera_configs(&self) -> Vec<CameraConfig> {
        self.cameras
            .iter()
            .map(|c| CameraConfig {
                name: c.name.clone(),
                source: match (&c.device, &c.file) {
                    (Some(i), _) => CameraSource::Device(*i),
                    (None, f) => CameraSource::File(f.clone().unwrap_or_default().into()),
                },
                fps: c.fps,
                file_start: c.file_start_unix_s.map(|t| std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t)),
                container: c.container.clone(),
            })
            .collect()
    }

    /// Serial sensors with their decoders, in rig order.
    pub fn serial_sensors(&self) -> Vec<(SerialConfig, Box<dyn SerialSensor>)> {
        let mut v: Vec<(SerialConfig, Box<dyn SerialSensor>)> = vec![];
        for f in &self.ft300s {
            v.push((SerialConfig { name: f.name.clone(), port: f.port.clone(), baud: f.baud }, Box::new(Ft300::default())));
        }
        for a in &self.ascii_sensors {
            let scales = if a.scales.is_empty() { vec![1.0; a.columns.len()] } else { a.scales.clone() };
            let sep = Separator::parse(&a.separator).expect("validated in from_file");
            v.push((SerialConfig { name: a.name.clone(), port: a.port.clone(), baud: a.baud }, Box::new(AsciiSensor::new(a.columns.clone(), sep, scales))));
        }
        v
    }
}
