//! One static equilibrium: a rod (optionally with identified parameters)
//! under gravity, cable tensions and a tip load; its shape, its validity
//! and, with parameters, the tip's 95 % prediction band.

use crate::error::{Error, Result};
use crate::params::Params;
use lie::Vec3;
use rod::shape::ShapeRow;
use rod::statics::{model_for, solve as solve_statics};
use rod::{Loads, NewtonOptions, Rod};
use std::path::Path;

/// What to solve.
#[derive(Clone, Debug)]
pub struct SolveRequest {
    /// The rod as read (sections and modes already chosen).
    pub rod: Rod,
    pub params: Option<Params>,
    /// One per cable, or empty for none.
    pub tensions_n: Vec<f64>,
    /// Which way the cables slide (what a cable's friction opposes).
    pub cable_slide: rod::statics::CableSlide,
    /// In the world frame.
    pub tip_force_n: Vec3,
    /// Where the tip force acts: offset from the tip's centre in the tip
    /// section's frame \[m\] (a mass hung from the top edge of the tip face).
    pub tip_force_offset_body_m: Vec3,
    /// The robot's flange (TCP) in the world: the rod's base is then the
    /// flange times the rod file's `[base]` (the mount); `None`: the rod
    /// file's `[base]` in the world.
    pub flange: Option<lie::Pose>,
    /// In the world frame, fixed direction.
    pub tip_moment_nm: Vec3,
    pub gravity: bool,
    /// Where a pinned or clamped tip is held (world) and a clamp's
    /// rotation vector: as the rod file's `[tip] condition` asks.
    pub tip_position_m: Option<Vec3>,
    pub tip_rotation_rad: Option<Vec3>,
    /// A held tip: follow the equilibria from the solved one along a path
    /// of holds (an end twisted, a clamp moved) to this value.
    pub follow: Option<(rod::branch::EndPath, f64)>,
}

/// The equilibria along a path of holds from the solved one, and where
/// they lose (or regain) stability.
#[derive(Clone, Debug)]
pub struct Followed {
    pub path: rod::branch::EndPath,
    /// Each equilibrium: the path's value, the lowest eigenvalue, dt/ds,
    /// the hold's reaction `[moment; force]`.
    pub points: Vec<(f64, f64, f64, lie::Vec6)>,
    /// Each critical point: what happens and the path's value there.
    pub critical: Vec<(rod::branch::CriticalKind, f64)>,
}

/// The columns of [`write_branch_csv`] after the path's own.
pub const BRANCH_COLUMNS: [&str; 9] =
    ["stable", "lowest_eigenvalue", "dt_ds", "tip_moment_x_nm", "tip_moment_y_nm", "tip_moment_z_nm", "tip_force_x_n", "tip_force_y_n", "tip_force_z_n"];

/// The tip with its 95 % prediction band per coordinate, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum Band {
    /// `model_error_m`: what the band adds per coordinate for what the
    /// model misses (cross-validation, or the rod file's declared value).
    /// `prior_only_m`: parameters the data never saw that move the tip,
    /// each with what it adds to the half-widths.
    Tip {
        tip_m: Vec3,
        half_width_m: Vec3,
        model_error_m: f64,
        prior_only_m: Vec<(String, Vec3)>,
    },
    None(String),
}

/// An equilibrium.
#[derive(Clone, Debug)]
pub struct Solved {
    /// The rod as solved (parameters applied).
    pub rod: Rod,
    pub n_dof: usize,
    pub mass_kg: f64,
    pub iterations: usize,
    pub load_steps: usize,
    pub residual_norm: f64,
    pub wall_time_s: f64,
    /// Base to tip.
    pub shape: Vec<ShapeRow>,
    /// What holds the base: the reaction force \[N\] and moment \[N m\] the
    /// clamp exerts on the rod, world frame, the moment about the base's
    /// origin (minus the total of the applied loads: gravity, cables' ends,
    /// the tip load).
    pub base_force_n: Vec3,
    pub base_moment_nm: Vec3,
    pub validity: rod::validity::Validity,
    pub warnings: Vec<String>,
    /// With parameters: the tip's prediction band.
    pub band: Option<Band>,
    /// A held tip: the wrench its hold exerts on the rod, `[moment about
    /// the tip; force]`, world frame.
    pub tip_reaction: Option<lie::Vec6>,
    /// A held tip: the lowest eigenvalue of the constrained stiffness
    /// (negative: an unstable equilibrium, one a real rod leaves).
    pub stability_eigenvalue: Option<f64>,
    /// Below this magnitude the eigenvalue is zero to round-off: neutral
    /// (an isotropic rod's loop turning freely about the line between its
    /// clamps), not unstable.
    pub neutral_below: f64,
    /// The rod's frame's turning from base to tip, world frame \[rad\]
    /// ([`rod::shape::winding_rad`]): which branch a held solve found.
    pub winding_rad: lie::Vec3,
    /// The branch followed from it, when asked.
    pub followed: Option<Followed>,
}

impl Solved {
    pub fn tip_m(&self) -> Vec3 {
        self.shape.last().expect("a rod has a tip").pos_m
    }
}

/// Checks a request's loads against its rod.
fn check(req: &SolveRequest) -> Result<()> {
    let n = req.rod.cables.len();
    if !req.tensions_n.is_empty() && req.tensions_n.len() != n {
        return Err(Error::input(format!("--tension: {} values given, the rod has {n} cables", req.tensions_n.len())));
    }
    if req.tensions_n.iter().any(|t| !t.is_finite() || *t < 0.0) {
        return Err(Error::input("--tension: tensions must be finite and non-negative (cables only pull)"));
    }
    for (name, v) in [("--tip-force", req.tip_force_n), ("--tip-moment", req.tip_moment_nm), ("--tip-force-offset", req.tip_force_offset_body_m)] {
        if !v.iter().all(|x| x.is_finite()) {
            return Err(Error::input(format!("{name}: must be finite, got {:?}", [v.x, v.y, v.z])));
        }
    }
    Ok(())
}

/// The rod with its base on the robot's flange (flange times the rod
/// file's mount), or as the rod file places it.
fn mounted(rod: &Rod, flange: Option<&lie::Pose>) -> Rod {
    let mut rod = rod.clone();
    if let Some(f) = flange {
        rod.base = f.compose(&rod.base);
    }
    rod
}

/// Solves the equilibrium.
pub fn solve(req: &SolveRequest) -> Result<Solved> {
    check(req)?;
    let rod = mounted(&req.rod, req.flange.as_ref());
    let rod = match &req.params {
        Some(p) => p.rod_with_pitch(&rod),
        None => rod,
    };
    let mut loads = Loads { gravity_scale: if req.gravity { 1.0 } else { 0.0 }, cable_slide: vec![req.cable_slide; req.tensions_n.len()], ..Loads::default() }
        .with_tensions(&req.tensions_n);
    if req.tip_force_n != Vec3::zeros() || req.tip_moment_nm != Vec3::zeros() {
        loads = loads.with_tip(rod.length_m, req.tip_force_n, req.tip_moment_nm);
        loads.point_loads.last_mut().expect("the tip load").offset_body_m = req.tip_force_offset_body_m;
    }
    let model = model_for(&rod, &loads);
    let hold = tip_hold(req, &rod)?;
    let started = std::time::Instant::now();
    let (sol, tip_reaction, stability_eigenvalue, followed) = match hold {
        Some(hold) => {
            let held = rod::held::solve_held(&model, &loads, hold, None, &NewtonOptions::default())?;
            let lowest = rod::held::stability_eigenvalue(&model, &loads, hold, &held)?;
            let followed = req.follow.map(|(path, to)| follow(&model, &loads, hold, &held.solution.q, path, to)).transpose()?;
            (held.solution, Some(held.tip_reaction), Some(lowest), followed)
        }
        None if req.follow.is_some() => return Err(Error::input("--follow: the rod file's tip is free; a path of holds needs a held tip ([tip] condition)")),
        None => (solve_statics(&model, &loads, None, &NewtonOptions::default())?, None, None, None),
    };
    let wall_time_s = started.elapsed().as_secs_f64();
    let shape = rod::shape::shape(&model, &sol.q);
    let winding_rad = rod::shape::winding_rad(&shape);
    let validity = rod::validity::validity(&model, &sol.q);
    if let Some(why) = validity.beyond_model() {
        return Err(Error::computation(format!(
            "no physical equilibrium: {why} (Newton residual {:.3e}): the loads or the material are far beyond what the rod model represents",
            sol.residual_norm
        )));
    }
    let mut applied = rod::statics::assemble(&model, &loads, &sol.q, 1.0, false)?.applied_wrench;
    if let Some(r) = &tip_reaction {
        // The tip's hold is a load on the rod too: about the world origin.
        let p_tip = rod::shape::shape(&model, &sol.q).last().expect("a rod has a tip").pos_m;
        applied += lie::stack(&(lie::angular(r) + p_tip.cross(&lie::linear(r))), &lie::linear(r));
    }
    let (base_force_n, applied_moment_nm) = (-lie::linear(&applied), -lie::angular(&applied));
    // About the world origin -> about the base's origin.
    let base_moment_nm = applied_moment_nm - rod.base.pos.cross(&base_force_n);
    let band = req.params.as_ref().map(|p| if hold.is_some() { Band::None("the prediction band is for a free tip so far".into()) } else { band(p, req) });
    Ok(Solved {
        n_dof: model.n_dof(),
        mass_kg: model.mass_kg(),
        iterations: sol.iterations,
        load_steps: sol.load_steps,
        residual_norm: sol.residual_norm,
        wall_time_s,
        shape,
        base_force_n,
        base_moment_nm,
        warnings: validity.warnings(&rod.cables),
        validity,
        band,
        tip_reaction,
        stability_eigenvalue,
        neutral_below: rod::held::neutral_eigenvalue(&model),
        winding_rad,
        followed,
        rod,
    })
}

/// Follows the held equilibrium `q` along `path` to `to` (40 first steps;
/// through limit points, see [`rod::branch`]).
fn follow(model: &rod::Model, loads: &Loads, hold: rod::TipHold, q: &nalgebra::DVector<f64>, path: rod::branch::EndPath, to: f64) -> Result<Followed> {
    use rod::branch::EndPath;
    let flag = format!("--follow {} --to {to}", path.key());
    let (start, hold_at) = path.from(hold, model.rod.base.pos);
    match (path, hold) {
        (EndPath::TipTwistRad, rod::TipHold::Pinned { .. }) => {
            return Err(Error::input(format!("{flag}: a pinned tip cannot be twisted (the rod file's [tip] condition)")))
        }
        // As critical.csv: the rod spans less than its length (stretched
        // straight only in the limit).
        (EndPath::ClampDistanceM, _) if !(to > 0.0 && to < model.rod.length_m) => {
            return Err(Error::input(format!("{flag}: the clamps' distance lies in (0, {}) m, below the rod's length", model.rod.length_m)))
        }
        _ if !to.is_finite() || to == start => return Err(Error::input(format!("{flag}: the path starts at {start}; give another end"))),
        _ => {}
    }
    let options = rod::branch::BranchOptions {
        t_end: to,
        first_step: (to - start) / 40.0,
        max_points: 4000,
        t_tolerance: 1e-7 * (to - start).abs(),
        stop_at_first: false,
    };
    let branch = rod::branch::follow(model, loads, &*hold_at, start, Some(q), &options, &NewtonOptions::default())?;
    Ok(Followed {
        path,
        points: branch.points.iter().map(|p| (p.t, p.lowest, p.dt_ds, p.held.tip_reaction)).collect(),
        critical: branch.critical.iter().map(|c| (c.kind, c.t)).collect(),
    })
}

/// Writes a followed branch as CSV: the path's value, then [`BRANCH_COLUMNS`].
pub fn write_branch_csv(path: &Path, followed: &Followed) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("{}: cannot create: {e}", dir.display())))?;
    }
    let fail = |e: csv::Error| Error::io(format!("{}: cannot write: {e}", path.display()));
    let mut w = csv::Writer::from_path(path).map_err(fail)?;
    w.write_record(std::iter::once(followed.path.key()).chain(BRANCH_COLUMNS)).map_err(fail)?;
    for (t, lowest, dt_ds, r) in &followed.points {
        let cells =
            [format!("{t:e}"), (*lowest >= 0.0).to_string(), format!("{lowest:e}"), format!("{dt_ds:e}")].into_iter().chain(r.iter().map(|v| format!("{v:e}")));
        w.write_record(cells).map_err(fail)?;
    }
    w.flush().map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))
}

/// The tip's hold the rod file's `[tip] condition` asks for, from the
/// request's `--tip-position` and `--tip-rotation`.
fn tip_hold(req: &SolveRequest, rod: &Rod) -> Result<Option<rod::TipHold>> {
    for (name, v) in [("--tip-position", req.tip_position_m), ("--tip-rotation", req.tip_rotation_rad)] {
        if v.is_some_and(|v| !v.iter().all(|x| x.is_finite())) {
            return Err(Error::input(format!("{name}: must be finite")));
        }
    }
    let flags = rod::held::HoldFields {
        position: "--tip-position",
        rotation: "--tip-rotation",
        rotation_short: "--tip-rotation",
        both: "--tip-position and --tip-rotation",
    };
    rod::held::hold_for(rod.tip_condition, req.tip_position_m, req.tip_rotation_rad, &flags).map_err(|why| Error::input(format!("the request {why}")))
}

/// The tip predicted with the identification's uncertainty: a 95 %
/// prediction band per coordinate (the parameters' covariance through the
/// exact sensitivities, the noise of a new measurement, never below the
/// declared one, and the model error cross-validation found).
fn band(p: &Params, req: &SolveRequest) -> Band {
    if !req.gravity {
        return Band::None("the identification's model includes gravity".into());
    }
    let Some(u) = p.file.uncertainty() else {
        return Band::None("the identified file has no covariance (written by an older rodlab)".into());
    };
    if req.tip_moment_nm != Vec3::zeros() {
        return Band::None("the identification model has no tip moments".into());
    }
    // The band's model applies the pitch itself: the rod before it.
    let rod = &mounted(&req.rod, req.flange.as_ref());
    let tip = identify::Measurement { arc_m: rod.length_m, offset_body_m: Vec3::zeros(), pos_m: Vec3::zeros(), sigma_m: 1.0, arc_sigma_m: 0.0, ray: None };
    let tensions = if req.tensions_n.is_empty() { vec![0.0; rod.cables.len()] } else { req.tensions_n.clone() };
    let mut e = identify::Experiment::new("prediction", tensions, req.tip_force_n, vec![tip]);
    e.tip_force_offset_body_m = req.tip_force_offset_body_m;
    match identify::predict_with_band(rod, &e, &p.file.values(), &u) {
        Ok(pred) => Band::Tip {
            tip_m: pred.points_m[0],
            half_width_m: pred.half_width_m[0],
            model_error_m: p.file.band_model_error_m(),
            prior_only_m: pred.prior_only_m[0].clone(),
        },
        Err(e) => Band::None(e.to_string()),
    }
}

/// Writes the shape (base to tip) as CSV, a row per joint.
pub fn write_shape_csv(path: &Path, rows: &[ShapeRow]) -> Result<()> {
    let fail = |e: csv::Error| Error::io(format!("{}: cannot write: {e}", path.display()));
    let mut w = csv::Writer::from_path(path).map_err(fail)?;
    w.write_record(rod::shape::COLUMNS).map_err(fail)?;
    for r in rows {
        w.write_record(r.values().iter().map(|v| format!("{v:e}"))).map_err(fail)?;
    }
    w.flush().map_err(|e| Error::io(format!("{}: cannot write: {e}", path.display())))
}
