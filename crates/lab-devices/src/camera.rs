//! Setting a camera up before recording: a few frames grabbed with the rig
//! file's capture settings, the markers detected with the tracking
//! settings, an annotated image and a per-marker table to look at, and a
//! verdict that names a missing or marginal marker.

use lab::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use track::check::{CameraCheck, MarkerLook};
use track::detect::MarkerParams;

/// What to check.
#[derive(Clone, Debug)]
pub struct CameraCheckRequest {
    pub rig: PathBuf,
    /// markers.toml (default: red markers).
    pub markers: Option<PathBuf>,
    /// The rig's camera by name (default: its first).
    pub camera: Option<String>,
    /// Frames to look at.
    pub frames: usize,
    /// `camera-check.png` and `camera-check.csv` go here.
    pub out: PathBuf,
}

/// A camera check's outcome.
#[derive(Clone, Debug)]
pub struct CameraChecked {
    pub camera: String,
    pub check: CameraCheck,
    /// Settings as the camera reports them after they were applied.
    pub reported: Vec<(String, f64)>,
    /// Settings the camera refused or a file could not take.
    pub warnings: Vec<String>,
    pub image: PathBuf,
    pub table: PathBuf,
}

/// Grabs `req.frames` frames of the rig's camera and checks its markers.
pub fn check(req: &CameraCheckRequest) -> Result<CameraChecked> {
    if !(1..=1000).contains(&req.frames) {
        return Err(Error::input(format!("--frames: must be between 1 and 1000, got {}", req.frames)));
    }
    let (rig, _) = session::rig::Rig::from_file(&req.rig)?;
    let params = match &req.markers {
        Some(p) => MarkerParams::load(p)?,
        None => MarkerParams::default(),
    };
    let cameras = record::rig::camera_configs(&rig);
    let names: Vec<&str> = cameras.iter().map(|c| c.name.as_str()).collect();
    let cfg = match &req.camera {
        Some(name) => cameras
            .iter()
            .find(|c| &c.name == name)
            .ok_or_else(|| Error::input(format!("{}: no camera '{name}' (it has: {})", req.rig.display(), names.join(", "))))?,
        None => cameras.first().ok_or_else(|| Error::input(format!("{}: no [[camera]] to check", req.rig.display())))?,
    };
    let grab = record::camera::grab(cfg, req.frames, 10).map_err(|e| Error::input(format!("{}: {e}", req.rig.display())))?;
    let check = track::check::check(&grab.frames, &params)?;
    std::fs::create_dir_all(&req.out).map_err(|e| Error::io(format!("{}: cannot create: {e}", req.out.display())))?;
    let image = req.out.join("camera-check.png");
    let last = grab.frames.last().expect("grab gives frames");
    track::source::write_image(&image, &track::check::annotate(last, &check)?)?;
    let table = req.out.join("camera-check.csv");
    write_table(&table, &check.markers)?;
    Ok(CameraChecked { camera: cfg.name.clone(), check, reported: grab.reported, warnings: grab.warnings, image, table })
}

fn write_table(path: &Path, looks: &[MarkerLook]) -> Result<()> {
    let io = |e: std::io::Error| Error::io(format!("{}: cannot write: {e}", path.display()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    writeln!(f, "marker,found_frames,area_px,saturation_margin,value_margin,hue_margin_deg,sharpness_grey2,u_px,v_px").map_err(io)?;
    for l in looks {
        writeln!(
            f,
            "{},{},{:.1},{:.4},{:.4},{:.2},{:.1},{:.2},{:.2}",
            l.index, l.found_frames, l.area_px, l.saturation_margin, l.value_margin, l.hue_margin_deg, l.sharpness, l.u_px, l.v_px
        )
        .map_err(io)?;
    }
    f.flush().map_err(io)
}
