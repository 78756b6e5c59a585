//! Where everything of a session lives: one type that knows the layout of
//! a session directory, so that no stage spells a file name itself.
//!
//! ```text
//! <session>/session.toml          what, when, which rig (frames: the world W)
//! <session>/markers.parquet       tracked markers (rodlab track)
//! <session>/strain.parquet        observed strain (rodlab observe)
//! <session>/<camera>.mkv|avi      video of each camera
//! <session>/streams/<device>/     chunks NNNNNN.parquet of each device's stream
//! <session>/<robot>_messages.log  text messages of a robot controller
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

    /// The video file of camera `name` in `container` ("mkv" or "avi").
    pub fn video(&self, name: &str, container: &str) -> PathBuf {
        self.root.join(format!("{name}.{container}"))
    }

    /// The text messages a robot controller sent.
    pub fn messages_log(&self, robot: &str) -> PathBuf {
        self.root.join(format!("{robot}_messages.log"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let d = SessionDir::new("/data/day1/holds-2");
        assert_eq!(d.name(), "holds-2");
        assert_eq!(d.markers(), Path::new("/data/day1/holds-2/markers.parquet"));
        assert_eq!(d.stream("ft300"), Path::new("/data/day1/holds-2/streams/ft300"));
        assert_eq!(d.video("camera", "mkv"), Path::new("/data/day1/holds-2/camera.mkv"));
        assert_eq!(d.describe_streams(), "it has no streams");
    }
}
