//! Where everything of a session lives: one type that knows the layout of
//! a session directory, so that no stage spells a file name itself.
//!
//! ```text
//! <session>/session.toml          what, when, which rig (frames: the world W)
//! <session>/markers.parquet       tracked markers (rodlab track)
//! <session>/strain.parquet        observed strain (rodlab observe)
//! <session>/<camera>.mkv|avi      video of each camera
//! <session>/streams/<device>/     chunks NNNNNN.parquet of each device's stream
//! <session>/<robot>_messages.csv  text messages of a robot controller (t_host_ns, level, source, message)
//! ```

use crate::meta::SessionMeta;
use crate::ConfigFileError;
use std::path::{Path, PathBuf};

/// A session directory (it may not exist yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionDir {
    root: PathBuf,
}

impl SessionDir {
    pub fn new(root: impl Into<PathBuf>) -> SessionDir {
        SessionDir { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The directory's last component (reports and batch outputs use it).
    pub fn name(&self) -> String {
        self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| self.root.display().to_string())
    }

    pub fn exists(&self) -> bool {
        self.root.is_dir()
    }

    /// `session.toml`.
    pub fn meta_path(&self) -> PathBuf {
        self.root.join("session.toml")
    }

    /// The session's `session.toml`, or `None` when it has none.
    pub fn meta(&self) -> Result<Option<SessionMeta>, ConfigFileError> {
        SessionMeta::read(&self.root)
    }

    /// `markers.parquet`: the tracker's marker table.
    pub fn markers(&self) -> PathBuf {
        self.root.join("markers.parquet")
    }

    /// `strain.parquet`: the observer's strain table.
    pub fn strain(&self) -> PathBuf {
        self.root.join("strain.parquet")
    }

    /// `streams/`.
    pub fn streams(&self) -> PathBuf {
        self.root.join("streams")
    }

    /// `streams/<name>`: the chunks of one stream.
    pub fn stream(&self, name: &str) -> PathBuf {
        crate::stream_dir(&self.root, name)
    }

    /// Whether the session has a stream `name`.
    pub fn has_stream(&self, name: &str) -> bool {
        self.stream(name).is_dir()
    }

    /// The names of its streams, sorted.
    pub fn stream_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.streams())
            .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// "it has: a, b" or "it has no streams", for messages.
    pub fn describe_streams(&self) -> String {
        let names = self.stream_names();
        if names.is_empty() {
            "it has no streams".into()
        } else {
            format!("it has: {}", names.join(", "))
        }
    }

    /// The video file of camera `name` with `extension` ("avi" for the
    /// containers "raw" and "avi", "mkv": [`crate::VideoFormat::extension`]).
    pub fn video(&self, name: &str, extension: &str) -> PathBuf {
        self.root.join(format!("{name}.{extension}"))
    }

    /// The video of camera `name` that exists, in whichever container it
    /// was recorded.
    pub fn find_video(&self, name: &str) -> Option<PathBuf> {
        ["mkv", "avi"].into_iter().map(|c| self.video(name, c)).find(|p| p.is_file())
    }

    /// Whether any stream has a video file.
    pub fn has_video(&self) -> bool {
        self.stream_names().iter().any(|n| self.find_video(n).is_some())
    }

    /// The text messages a robot controller sent.
    pub fn messages(&self, robot: &str) -> PathBuf {
        messages_file(&self.root, robot)
    }

    /// `gaps/<device>`: the outages of one device (`session::gaps`).
    pub fn gaps(&self, device: &str) -> PathBuf {
        crate::gaps::gaps_dir(&self.root, device)
    }

    /// The lock file a recorder holds while it records here.
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }

    /// The names of what the directory holds, besides a recorder's lock file.
    pub fn contents(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n != LOCK_FILE).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Holds the directory for a recorder: an OS lock on its lock file
    /// (released when the process ends, however it ends), so a second
    /// recorder into the same directory is refused.
    pub fn lock_for_recording(&self) -> Result<RecordingLock, ConfigFileError> {
        use std::io::{Read, Seek, Write};
        let path = self.lock_path();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| ConfigFileError::new(&path, format!("cannot create the recorder's lock file: {e}")))?;
        if file.try_lock().is_err() {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(ConfigFileError::new(
                &self.root,
                format!("another recorder is recording into this directory ({}); stop it, or record elsewhere", holder.trim()),
            ));
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "pid {}, since {}", std::process::id(), humantime::format_rfc3339_seconds(std::time::SystemTime::now()));
        Ok(RecordingLock { _file: file, path })
    }
}

const LOCK_FILE: &str = ".recording.lock";

/// A recorder's hold on its session directory; the lock file goes when
/// it is dropped.
pub struct RecordingLock {
    _file: std::fs::File,
    path: PathBuf,
}

impl Drop for RecordingLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `<session>/<robot>_messages.csv`: a robot controller's text messages.
pub fn messages_file(session: &std::path::Path, robot: &str) -> PathBuf {
    session.join(format!("{robot}_messages.csv"))
}
