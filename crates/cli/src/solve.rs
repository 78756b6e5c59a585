//! `rodlab solve`: one static equilibrium, printed and written as CSV.

use crate::input_error;
use anyhow::{Context, Result};
use clap::Args;
use lie::Vec3;
use rod::statics::{model_for, solve};
use rod::{Loads, NewtonOptions, Rod, StrainModes};
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml\n  rodlab solve --rod arm.toml --tension 0,0,0,1.96 --out shape.csv\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml --tip-force 0,0,-0.01 --sections 8 --modes timoshenko"
)]
pub struct SolveArgs {
    /// Rod description (TOML), e.g. configs/rod/pls-paper-cantilever.toml.
    #[arg(long)]
    pub rod: PathBuf,
    /// Cable tensions in newtons, one per cable of the rod, comma-separated.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub tension: Vec<f64>,
    /// Tip force in the world frame [N]: FX,FY,FZ.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub tip_force: Vec<f64>,
    /// Tip moment in the world frame [N m]: MX,MY,MZ (fixed direction).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub tip_moment: Vec<f64>,
    /// Replace the rod's sections by N equal sections.
    #[arg(long)]
    pub sections: Option<usize>,
    /// Override the strain modes: cosserat, euler-bernoulli, kirchhoff-extensible, timoshenko.
    #[arg(long)]
    pub modes: Option<String>,
    /// Turn gravity off.
    #[arg(long)]
    pub no_gravity: bool,
    /// Use E, G, rho (and base pitch) from an identified.toml of `rodlab identify`.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Write the shape (base to tip) as CSV.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn vec3_arg(name: &str, v: &[f64]) -> Result<Vec3> {
    match v {
        [] => Ok(Vec3::zeros()),
        [x, y, z] if v.iter().all(|c| c.is_finite()) => Ok(Vec3::new(*x, *y, *z)),
        _ => Err(input_error(format!("--{name}: expected three finite numbers X,Y,Z, got {} values", v.len()))),
    }
}

pub fn load_rod(path: &std::path::Path, sections: Option<usize>, modes: Option<&str>) -> Result<Rod> {
    let mut rod = Rod::from_file(path)?;
    if let Some(n) = sections {
        if n == 0 || n > 10_000 {
            return Err(input_error(format!("--sections: must be between 1 and 10000, got {n}")));
        }
        rod = rod.with_equal_sections(n);
    }
    if let Some(m) = modes {
        let modes = StrainModes::by_name(m).ok_or_else(|| input_error(format!("--modes: unknown mode '{m}'")))?;
        rod = rod.with_modes(modes);
    }
    Ok(rod)
}

pub fn run(a: SolveArgs) -> Result<()> {
    let mut rod = load_rod(&a.rod, a.sections, a.modes.as_deref())?;
    // The identified file and the rod before its pitch (the prediction
    // band's model applies the pitch itself).
    let mut identified = None;
    if let Some(p) = &a.params {
        let id = identify::output::IdentifiedFile::read(p).map_err(input_error)?;
        identified = Some((id.clone(), rod.clone()));
        let pr = &id.parameters;
        rod = id.apply_to(&rod);
        let pitch = lie::Pose::from_rpy(0.0, pr.base_pitch_rad, 0.0, Vec3::zeros());
        rod.base = lie::Pose { rot: pitch.rot * rod.base.rot, pos: rod.base.pos };
        println!(
            "parameters from {}: E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3, base pitch {:.3} deg",
            p.display(),
            pr.e_pa.value,
            pr.g_pa.value,
            pr.rho_kg_m3.value,
            pr.base_pitch_rad.to_degrees()
        );
    }
    let force = vec3_arg("tip-force", &a.tip_force)?;
    let moment = vec3_arg("tip-moment", &a.tip_moment)?;
    if !a.tension.is_empty() && a.tension.len() != rod.cables.len() {
        return Err(input_error(format!("--tension: {} values given, {} has {} cables", a.tension.len(), a.rod.display(), rod.cables.len())));
    }
    if a.tension.iter().any(|t| !t.is_finite() || *t < 0.0) {
        return Err(input_error("--tension: tensions must be finite and non-negative (cables only pull)"));
    }
    let mut loads = Loads { gravity_scale: if a.no_gravity { 0.0 } else { 1.0 }, ..Loads::default() };
    loads = loads.with_tensions(&a.tension);
    if force != Vec3::zeros() || moment != Vec3::zeros() {
        loads = loads.with_tip(rod.length_m, force, moment);
    }
    let model = model_for(&rod, &loads);
    let started = std::time::Instant::now();
    let sol = solve(&model, &loads, None, &NewtonOptions::default())?;
    let elapsed = started.elapsed();
    let rows = rod::shape::shape(&model, &sol.q);
    let tip = rows.last().expect("a rod has a tip");
    println!(
        "rod: {} ({} sections, {} sub-segments each, {} strain dofs, mass {:.4} kg)",
        a.rod.display(),
        rod.section_lengths_m.len(),
        rod.subsegments_per_section,
        model.n_dof(),
        model.mass_kg()
    );
    println!(
        "converged: {} Newton iterations, {} load step(s), residual {:.2e}, {:.3} ms",
        sol.iterations,
        sol.load_steps,
        sol.residual_norm,
        elapsed.as_secs_f64() * 1e3
    );
    println!("tip position [m]: {:.6} {:.6} {:.6}", tip.pos_m.x, tip.pos_m.y, tip.pos_m.z);
    if let Some((id, unpitched)) = &identified {
        if a.no_gravity {
            println!("no prediction band: the identification's model includes gravity");
        } else {
            print_band(id, unpitched, &a.tension, force, moment);
        }
    }
    let validity = rod::validity::validity(&model, &sol.q);
    println!("validity: {}", validity.summary());
    for w in validity.warnings(&rod.cables) {
        println!("warning: {w}");
    }
    if let Some(out) = &a.out {
        let file = std::fs::File::create(out).with_context(|| format!("cannot write {}", out.display()))?;
        rod::shape::write_csv(&rows, std::io::BufWriter::new(file)).with_context(|| format!("cannot write {}", out.display()))?;
        println!("wrote {} ({} rows, base to tip)", out.display(), rows.len());
    }
    Ok(())
}

/// The tip predicted with the identification's uncertainty: a 95 %
/// prediction band per coordinate (the parameters' covariance through the
/// exact sensitivities, plus the noise of a measurement like the fit's).
fn print_band(id: &identify::output::IdentifiedFile, rod: &Rod, tensions: &[f64], force: Vec3, moment: Vec3) {
    let Some(u) = id.uncertainty() else {
        println!("no prediction band: the identified file has no covariance (written by an older rodlab)");
        return;
    };
    if moment != Vec3::zeros() {
        println!("no prediction band: the identification model has no tip moments");
        return;
    }
    let tip = identify::Measurement { arc_m: rod.length_m, offset_body_m: Vec3::zeros(), pos_m: Vec3::zeros(), sigma_m: 1.0 };
    let tensions = if tensions.is_empty() { vec![0.0; rod.cables.len()] } else { tensions.to_vec() };
    let e = identify::Experiment::new("prediction", tensions, force, vec![tip]);
    let v = id.values();
    match identify::predict_with_band(rod, &e, &v, &u) {
        Ok(p) => {
            let (x, h) = (p.points_m[0], p.half_width_m[0]);
            println!(
                "predicted tip with 95 % prediction band [m]: {:.6} +- {:.6}, {:.6} +- {:.6}, {:.6} +- {:.6} (per coordinate; a measurement with the fit's noise, in its measurement frame)",
                x.x, h.x, x.y, h.y, x.z, h.z
            );
        }
        Err(e) => println!("no prediction band: {e}"),
    }
}
