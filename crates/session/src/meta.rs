//! `session.toml`: what a session is (start time, host, rodlab version,
//! operator notes, the rig file verbatim) and the rig's frames, written with
//! serde and read back by every later stage.

use crate::frames::RigFrames;
use crate::ConfigFileError;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::SystemTime;

/// `session.toml`: what a session is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionMeta {
    /// The rodlab that recorded (or imported, or synthesised) the session.
    pub rodlab_version: String,
    /// RFC 3339, seconds.
    pub start_utc: String,
    /// The same instant \[s since 1970, UTC\]: `t_host_ns` counts from it.
    pub start_unix_s: f64,
    /// The recording machine's host name.
    #[serde(default)]
    pub host: String,
    /// The rig file's `[session] operator_notes`.
    #[serde(default)]
    pub operator_notes: String,
    /// The clock `t_host_ns` is on.
    #[serde(default = "default_clock")]
    pub clock: String,
    /// The rig file's path when it recorded.
    #[serde(default)]
    pub rig_file: String,
    /// The rig's frames (world frame W), parsed from the rig file.
    #[serde(default)]
    pub frames: RigFrames,
    /// The rig file, verbatim.
    #[serde(default)]
    pub rig: String,
    /// When the recorder finished the session (RFC 3339); empty while it
    /// records, or when it was killed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub end_utc: String,
    /// What each device recorded, written when the recording finishes.
    #[serde(default, rename = "device", skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceRecord>,
    /// An imported capture's start as its file states it (the capture
    /// computer's local time, `YYYY-MM-DDTHH:MM:SS[.fff]`, no zone); the
    /// session's start is this time read as UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_start: Option<String>,
    /// What the import of a file found wrong (a still clamp that moved,
    /// markers away from their design positions, a vertical axis that is
    /// not the mocap's), kept for the stages that read the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_warnings: Vec<String>,
    /// The window \[s from the session's start\] in which the rod was held
    /// in its rod-file shape (a motion-capture map's `[reference]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_window_s: Option<[f64; 2]>,
    /// Where each marker sits on the body, measured over the reference
    /// window (used instead of the rod file's design positions).
    #[serde(default, rename = "marker_on_body", skip_serializing_if = "Vec::is_empty")]
    pub markers_on_body: Vec<MarkerOnBody>,
    /// The rod's base turned from the rod file's mount as the held pose
    /// registers it (a rotation vector in the mount's frame \[rad\]): the
    /// rotation about the base that brings the markers' design positions
    /// closest to where they were held. The markers' places on the body
    /// are measured in the turned frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_base_rotation_rad: Option<[f64; 3]>,
    /// When the rod held over the reference window was let go \[s from the
    /// session's start\] (found by the import: the onset of the first
    /// marker's departure from its held pose). A scene's `[time] start =
    /// "release"` replays from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_s: Option<f64>,
}

/// A marker's place on the body, measured with the rod held in its
/// rod-file shape: what identify, observe and validate use for it instead
/// of the rod file's design position.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MarkerOnBody {
    /// The rod file's marker number.
    pub marker: usize,
    /// Its label in the file it came from.
    pub label: String,
    /// Arc length of its section \[m\] (the rod file's).
    pub arc_m: f64,
    /// Its offset from the centre line in that section's frame \[m\], as measured.
    pub offset_body_m: [f64; 3],
    /// The measured positions' spread about their mean (RMS distance) \[m\].
    pub spread_m: f64,
    /// How far it sits from the rod file's design position \[m\].
    pub design_distance_m: f64,
    /// Frames it was measured over.
    pub samples: usize,
    /// How far it moved over the window (the rise of a least-squares line
    /// through its positions) \[m\]: a support's creep.
    #[serde(default)]
    pub creep_m: f64,
    /// The measured place's standard uncertainty \[m\] (the noise of the
    /// window's mean and the creep), added to the marker's noise where
    /// the place is used.
    #[serde(default)]
    pub place_sigma_m: f64,
}

/// One device's figures at the end of a recording (its outages, one by
/// one, are in the gap table: `session::gaps`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct DeviceRecord {
    /// The device's stream name.
    pub name: String,
    /// Rows recorded (on disk).
    pub rows: u64,
    /// Rows the device delivered that a failed write never stored (a
    /// full disk): a loss `session check` calls a problem.
    #[serde(skip_serializing_if = "is_zero")]
    pub rows_lost: u64,
    /// Interruptions of the device's stream.
    pub gaps: u64,
    /// Samples the device numbered but never sent (where it numbers them).
    pub missing_samples: u64,
    /// Times the recorder reconnected.
    pub reconnects: u64,
    /// Failed attempts to reach the device.
    pub errors: u64,
    /// Frames or lines the decoder rejected (CRC errors, bad lines).
    pub rejected: u64,
    /// Sum of the outages' durations \[s\].
    pub outage_s: f64,
    /// When the first sample came, after the start \[s\] (none: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_sample_s: Option<f64>,
    /// Reads that delivered a backlog (samples that had waited in a buffer
    /// and were stamped late), and the samples in them.
    pub backlog_reads: u64,
    /// Samples in those reads.
    pub backlog_samples: u64,
    /// What the device says it is (an FT 300's firmware and serial number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The last error reaching or starting the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Capture settings as the device reported them after they were set
    /// (a camera's width_px, exposure, ...).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn default_clock() -> String {
    "host monotonic, t_host_ns = ns since start_utc".into()
}

/// How a motion-capture import's `clock` begins: its markers and its
/// clamp's pose come from the same frames.
pub const MOCAP_CLOCK: &str = "motion capture";

impl SessionMeta {
    /// Whether the markers and the base were stamped by one clock (a
    /// motion-capture import): no delay between them to fit.
    pub fn markers_share_base_clock(&self) -> bool {
        self.clock.starts_with(MOCAP_CLOCK)
    }

    /// A session starting now.
    pub fn start(operator_notes: &str, rig_file: &str, rig_text: &str, frames: RigFrames) -> SessionMeta {
        let now = SystemTime::now();
        let unix = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        SessionMeta {
            rodlab_version: env!("CARGO_PKG_VERSION").into(),
            start_utc: humantime::format_rfc3339_seconds(now).to_string(),
            start_unix_s: unix.as_secs_f64(),
            host: std::fs::read_to_string("/etc/hostname").unwrap_or_default().trim().to_string(),
            operator_notes: operator_notes.into(),
            clock: default_clock(),
            rig_file: rig_file.into(),
            frames,
            rig: rig_text.into(),
            end_utc: String::new(),
            devices: vec![],
            capture_start: None,
            import_warnings: vec![],
            reference_window_s: None,
            markers_on_body: vec![],
            release_s: None,
            held_base_rotation_rad: None,
        }
    }

    /// Starts the session when an imported file says its capture started
    /// (`local`: `YYYY-MM-DDTHH:MM:SS[.fff]`, the capture computer's clock,
    /// taken as UTC since the file names no zone); an error says why the
    /// text is not such a time.
    pub fn set_capture_start(&mut self, local: &str) -> Result<(), String> {
        let at = humantime::parse_rfc3339_weak(local).map_err(|e| format!("'{local}' is not a date and time: {e}"))?;
        let unix = at.duration_since(SystemTime::UNIX_EPOCH).map_err(|_| format!("'{local}' is before 1970"))?;
        self.start_utc = humantime::format_rfc3339_millis(at).to_string();
        self.start_unix_s = unix.as_secs_f64();
        self.capture_start = Some(local.to_string());
        Ok(())
    }

    /// Marks the session finished now, with what each device recorded.
    pub fn finish(&mut self, devices: Vec<DeviceRecord>) {
        self.end_utc = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        self.devices = devices;
    }

    pub fn write(&self, dir: &Path) -> Result<(), ConfigFileError> {
        let path = dir.join("session.toml");
        let text = toml::to_string(self).map_err(|e| ConfigFileError::new(&path, e.to_string()))?;
        std::fs::write(&path, format!("# rodlab session: what was recorded, when, with which rig (frames: the world frame W).\n{text}"))
            .map_err(|e| ConfigFileError::new(&path, format!("cannot write: {e}")))
    }

    /// The session's `session.toml`, or `None` when the directory has none.
    pub fn read(dir: &Path) -> Result<Option<SessionMeta>, ConfigFileError> {
        let path = dir.join("session.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let (meta, _): (SessionMeta, String) = crate::read_toml(&path, "session file")?;
        meta.frames.validate(&path)?;
        Ok(Some(meta))
    }
}
