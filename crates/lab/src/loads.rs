//! The loads configuration of sessions (`loads.toml`): which streams give
//! cable tensions, a tip force and the flange force sensor, and the hold
//! thresholds. Read once, checked against the rod, and asked which streams
//! and columns a session must have.

use crate::error::{Context, Result};
use identify::sessions::{FlangeSensor, LoadsFile};
use std::path::{Path, PathBuf};

/// A loads file (or the defaults: gravity only) and where it came from.
#[derive(Clone, Debug, Default)]
pub struct Loads {
    pub file: LoadsFile,
    pub path: Option<PathBuf>,
}

/// A stream a workflow needs from a session, and who asks for it (for the
/// error message when the session lacks it).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRequest {
    pub stream: String,
    pub columns: Vec<String>,
    pub asked_by: String,
    /// Six of `columns` are a wrench in the robot's base frame, to be
    /// rotated into the sensor frame (`sensor_in_flange`) at each sample.
    pub robot_base_wrench: Option<RobotBaseWrench>,
}

/// A flange wrench recorded in the robot's base frame.
#[derive(Clone, Debug, PartialEq)]
pub struct RobotBaseWrench {
    pub columns: [String; 6],
    pub sensor_in_flange: lie::Pose,
}

/// What reading the flange sensor `fs` asks of its stream.
pub fn flange_sensor_request(fs: &FlangeSensor, asked_by: String) -> StreamRequest {
    StreamRequest { stream: fs.stream.clone(), columns: fs.columns.to_vec(), asked_by, robot_base_wrench: robot_base_wrench(fs) }
}

/// The sensor's columns when they are a wrench in the robot's base frame.
fn robot_base_wrench(fs: &FlangeSensor) -> Option<RobotBaseWrench> {
    (fs.frame == identify::sessions::WrenchFrame::RobotBase).then(|| RobotBaseWrench { columns: fs.columns.clone(), sensor_in_flange: fs.mount.pose() })
}

impl Loads {
    /// Reads `path` for a rod with `n_cables` cables; `None`: the defaults.
    pub fn read(path: Option<&Path>, n_cables: usize) -> Result<Loads> {
        let Some(p) = path else { return Ok(Loads::default()) };
        let (file, _): (LoadsFile, String) = session::read_toml(p, "loads file")?;
        file.validate(n_cables).input(p.display())?;
        Ok(Loads { file, path: Some(p.to_path_buf()) })
    }

    /// Without a loads file, sessions that all carry an `ft300` stream are
    /// weighed by it (its default columns, bias fitted), as validation
    /// does: one loads configuration, read the same way by both.
    pub fn with_session_sensor(&self, sessions: &[session::SessionDir]) -> Loads {
        let mut out = self.clone();
        if self.path.is_none() && self.file.flange_sensor.is_none() && !sessions.is_empty() && sessions.iter().all(|s| s.has_stream("ft300")) {
            out.file.flange_sensor = Some(default_ft300());
        }
        out
    }

    /// How messages name it.
    pub fn name(&self) -> String {
        self.path.as_ref().map_or("loads (default)".to_string(), |p| p.display().to_string())
    }

    /// The streams the identification reads (cables, tip force, flange
    /// sensor), merged per stream.
    pub fn requests(&self) -> Vec<StreamRequest> {
        let mut out: Vec<StreamRequest> = vec![];
        for (field, stream, column) in self.file.channels() {
            match out.iter_mut().find(|r| r.stream == stream) {
                Some(r) => r.columns.push(column.to_string()),
                None => out.push(StreamRequest {
                    stream: stream.into(),
                    columns: vec![column.into()],
                    asked_by: format!("{}: {field}", self.name()),
                    robot_base_wrench: None,
                }),
            }
        }
        if let Some(fs) = &self.file.flange_sensor {
            if let Some(r) = out.iter_mut().find(|r| r.stream == fs.stream) {
                r.robot_base_wrench = robot_base_wrench(fs);
            }
        }
        out
    }

    /// The flange sensor validation compares with: the loads file's when a
    /// file is given, else the session's `ft300` stream with its default
    /// columns; `true` when the loads file gives the sensor's tare (or says
    /// it was zeroed), false when the bias is to be estimated.
    pub fn flange_sensor_for(&self, session: &session::SessionDir) -> Option<(FlangeSensor, bool)> {
        if self.path.is_some() {
            return self.file.flange_sensor.clone().map(|s| {
                let known = s.bias_known();
                (s, known)
            });
        }
        session.has_stream("ft300").then(|| (default_ft300(), false))
    }

    /// [`Self::flange_sensor_for`] and the stream request that reads it
    /// (named after the loads file, for the error when the session lacks it).
    pub fn flange_sensor_with_request(&self, session: &session::SessionDir) -> (Option<(FlangeSensor, bool)>, Vec<StreamRequest>) {
        let sensor = self.flange_sensor_for(session);
        let asked_by = self.path.as_ref().map_or("the flange sensor".into(), |p| format!("{}: flange_sensor", p.display()));
        let requests = sensor.iter().map(|(fs, _)| flange_sensor_request(fs, asked_by.clone())).collect();
        (sensor, requests)
    }
}

/// The FT 300 stream with its default columns and no tare.
pub fn default_ft300() -> FlangeSensor {
    toml::from_str("stream = \"ft300\"").expect("the default flange sensor parses")
}
