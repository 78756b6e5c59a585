//! Identified parameters applied to a rod: one place that turns an
//! `identified.toml` into the rod every later stage uses (material,
//! geometry: cable offsets and turns, radius scale; and, for a rod whose
//! base is the world, the identified base pitch), and into the scene (the
//! table's friction and the rod's damping fitted from recorded motion).

use crate::error::{Error, Result};
use identify::output::IdentifiedFile;
use rod::Rod;
use std::path::{Path, PathBuf};

/// An `identified.toml`, checked to belong to a rod's shape.
#[derive(Clone, Debug)]
pub struct Params {
    pub file: IdentifiedFile,
    pub path: PathBuf,
}

impl Params {
    /// Reads `path` and checks it was identified for `rod` (the rod file
    /// at `rod_path`, named in the error). `FILE:NAME` selects another fit
    /// of the file than its `[parameters]`: a compared variant by its name,
    /// or "requested" (the fit as asked for).
    pub fn read(path: &Path, rod: &Rod, rod_path: &Path) -> Result<Params> {
        let (file_path, fit_name) = split_fit_name(path);
        let mut file = IdentifiedFile::read(&file_path)?;
        if let Some(name) = fit_name {
            file.select(&name, &file_path)?;
        }
        file.check_rod(rod, rod_path, &file_path)?;
        if let Some(why) = &file.failed {
            return Err(Error::input(format!("{}: an identification that failed ({why}): its values are not for use", file_path.display())));
        }
        Ok(Params { file, path: file_path })
    }

    /// The rod file's own material as parameters (no identification
    /// behind them): what a workflow holds when given no identified.toml.
    pub fn of_rod_file(rod: &Rod, rod_path: &Path) -> Params {
        let name = rod_path.display().to_string();
        Params { file: IdentifiedFile::of_material(rod, &name, rod.cross_section.body, &format!("the rod file {name}")), path: rod_path.to_path_buf() }
    }

    /// The rod with the identified material and geometry (its base, the
    /// mount on the flange, unchanged).
    pub fn rod(&self, rod: &Rod) -> Rod {
        self.file.apply_to(rod)
    }

    /// As [`Params::rod`], and the base turned by the identified pitch
    /// about the world's y axis: for a rod whose base is given in the
    /// world (the static experiments' setting).
    pub fn rod_with_pitch(&self, rod: &Rod) -> Rod {
        let mut out = self.rod(rod);
        let pitch = lie::Pose::from_rpy(0.0, self.file.parameters.base_pitch_rad, 0.0, lie::Vec3::zeros());
        out.base = lie::Pose { rot: pitch.rot * out.base.rot, pos: out.base.pos };
        out
    }

    /// E, G, rho and their 95 % intervals.
    pub fn material_ci95(&self) -> [[f64; 2]; 3] {
        let p = &self.file.parameters;
        [p.e_pa.ci95, p.g_pa.ci95, p.rho_kg_m3.ci95]
    }
}

/// `FILE:NAME` into the file and the fit's name, when `FILE` is a file
/// and the whole is not.
fn split_fit_name(path: &Path) -> (PathBuf, Option<String>) {
    let text = path.to_string_lossy();
    if !path.exists() {
        if let Some((file, name)) = text.split_once(".toml:") {
            return (PathBuf::from(format!("{file}.toml")), Some(name.to_string()));
        }
    }
    (path.to_path_buf(), None)
}

/// The rod with `params` applied, or the rod as it is.
pub fn rod_with(rod: Rod, params: Option<&Params>) -> Rod {
    match params {
        Some(p) => p.rod(&rod),
        None => rod,
    }
}

/// The scene with the table friction fitted from recorded motion
/// (`identify --dynamic`, `[dynamic]` of the file), or as it is.
pub fn scene_with(mut scene: sim::Scene, params: Option<&Params>) -> sim::Scene {
    if let (Some(d), Some(table)) = (params.and_then(|p| p.file.dynamic.as_ref()), scene.table.as_mut()) {
        table.mu = d.mu_for(table.mu);
    }
    scene
}

/// Reads optional params for `rod`.
pub fn read_optional(path: Option<&Path>, rod: &Rod, rod_path: &Path) -> Result<Option<Params>> {
    path.map(|p| Params::read(p, rod, rod_path)).transpose()
}

/// A material from three values E, G, rho (all positive), named `flag` in errors.
pub fn material(flag: &str, v: &[f64]) -> Result<Option<rod::Material>> {
    match v {
        [] => Ok(None),
        [e, g, r] if v.iter().all(|x| x.is_finite() && *x > 0.0) => Ok(Some(rod::Material { e_pa: *e, g_pa: *g, rho_kg_m3: *r })),
        _ => Err(Error::input(format!("{flag}: expected three positive numbers E,G,RHO"))),
    }
}
