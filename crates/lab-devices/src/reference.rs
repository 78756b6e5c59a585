//! The tracker's config files (`markers`, `camera`, `cameras`) beside `lab`'s: their
//! schemas and checks come from the `track` crate's parsers.

use lab::Result;

/// [`lab::reference::schema`] for every file, the tracker's included.
pub fn schema(name: &str) -> Option<schemars::Schema> {
    match name {
        "markers" => lab::reference::finish_schema(schemars::schema_for!(track::detect::MarkerParams)),
        "camera" => lab::reference::finish_schema(schemars::schema_for!(track::camera::CameraModel)),
        "cameras" => lab::reference::finish_schema(schemars::schema_for!(track::stereo::CameraSet)),
        _ => lab::reference::schema(name),
    }
}

/// [`lab::reference::check_file`] for every file, the tracker's included.
pub fn check_file(name: &str, path: &std::path::Path) -> Result<String> {
    match name {
        "markers" => {
            track::detect::MarkerParams::load(path)?;
            Ok("a markers file".to_string())
        }
        "camera" => {
            let c = track::camera::CameraModel::load(path)?;
            Ok(format!("a camera file: {} x {} px", c.width_px, c.height_px))
        }
        "cameras" => {
            let s = track::stereo::CameraSet::load(path)?;
            Ok(format!("a camera set: {}", s.names().join(", ")))
        }
        _ => lab::reference::check_file(name, path),
    }
}
