//! The rig configuration (`configs/rig/*.toml`): which devices a session
//! records from. Errors name the file and the field.

use crate::robot::RobotConfig;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rig {
    #[serde(default)]
    pub session: SessionInfo,
    #[serde(default, rename = "robot")]
    pub robots: Vec<RawRobot>,
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

#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct RigError {
    pub file: String,
    pub message: String,
}

impl Rig {
    pub fn from_file(path: &Path) -> Result<(Rig, String), RigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| RigError { file: file.clone(), message: format!("cannot read rig file: {e}") })?;
        let rig: Rig = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].lines().count().max(1));
            RigError { file: file.clone(), message: format!("{}{}", line.map(|l| format!("line {l}: ")).unwrap_or_default(), e.message().replace('\n', " ")) }
        })?;
        for (i, r) in rig.robots.iter().enumerate() {
            if !(r.frequency_hz > 0.0 && r.frequency_hz <= 500.0) {
                return Err(RigError { file: file.clone(), message: format!("robot[{i}].frequency_hz: must be in (0, 500], got {}", r.frequency_hz) });
            }
            if r.address.is_empty() {
                return Err(RigError { file: file.clone(), message: format!("robot[{i}].address: empty") });
            }
        }
        if rig.robots.is_empty() {
            return Err(RigError { file, message: "no devices ([[robot]] ...)".into() });
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
