//! Which equilibrium a clamped loop holds. One pair of clamps holds a rod
//! in several shapes: a loop that winds once more or once less about the
//! clamps' relative turn (a U bulging either way; parallel clamps with a
//! full turn either way, or none). A rotation vector names the clamp's
//! rotation, and its whole turns only when the lab wrote them. Before a
//! fit, each held experiment's equilibria are solved at the start values
//! from each winding, and the one that lies nearest the measured points
//! is fitted; the fit says so when it is not the winding the data gave.

use crate::data::Experiment;
use crate::fit::predict;
use crate::problem::Values;
use lie::Vec3;
use rod::{Rod, TipCondition};
use std::f64::consts::PI;

/// How much nearer the markers another winding's equilibrium must lie to
/// replace the one the data gave (RMS ratio).
const CLEARLY_NEARER: f64 = 0.5;

/// The rotation vectors that name the same clamp rotation as `given` with
/// one whole turn more or less: about its own axis, or (no turn) about the
/// base's y and z axes (the planes a loop can hang in).
fn alternatives(given: Vec3, base: &lie::Pose) -> Vec<Vec3> {
    let axes: Vec<Vec3> = if given.norm() > 1e-9 { vec![given / given.norm()] } else { vec![base.rot.column(1).into_owned(), base.rot.column(2).into_owned()] };
    axes.iter().flat_map(|a| [given + a * (2.0 * PI), given - a * (2.0 * PI)]).collect()
}

/// RMS distance of `experiment`'s measured points from its equilibrium
/// at `values` with the tip clamp rotated by `rotation_rad` \[m\] (`None`:
/// no equilibrium).
fn miss_m(rod: &Rod, experiment: &Experiment, rotation_rad: Vec3, values: &Values) -> Option<f64> {
    let e = Experiment { tip_rotation_rad: Some(rotation_rad), critical: vec![], ..experiment.clone() };
    let (predicted, _) = predict(rod, &e, values).ok()?;
    let sum: f64 = predicted.iter().zip(&e.measurements).map(|(p, m)| (p - m.pos_m).norm_squared()).sum();
    Some((sum / predicted.len().max(1) as f64).sqrt())
}

/// For each clamped experiment with measured points: its equilibrium from
/// the rotation it gives and from one turn more or less; where another
/// lies clearly nearer the points (half the RMS, or the given one has
/// none), the experiment's rotation vector takes that winding. One line per
/// change, saying so.
pub fn choose_windings(rod: &Rod, experiments: &mut [Experiment], values: &Values) -> Vec<String> {
    if rod.tip_condition != TipCondition::Clamped {
        return vec![];
    }
    let mut notes = vec![];
    for e in experiments.iter_mut() {
        let Some(given) = e.tip_rotation_rad.filter(|_| !e.measurements.is_empty()) else { continue };
        let base = e.base_pose.unwrap_or(rod.base);
        let as_given = miss_m(rod, e, given, values);
        let best = alternatives(given, &base).into_iter().filter_map(|r| miss_m(rod, e, r, values).map(|m| (r, m))).min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((rotation, miss)) = best else { continue };
        if as_given.is_none_or(|g| miss < CLEARLY_NEARER * g) {
            let was = as_given.map_or("no equilibrium".to_string(), |g| format!("{:.1} mm", g * 1e3));
            let turn = (rotation - given) / (2.0 * PI);
            let how = match given.norm() > 1e-9 {
                true if turn.dot(&given) > 0.0 => "one turn more".to_string(),
                true => "one turn less".to_string(),
                false => format!("one turn about [{:.3}, {:.3}, {:.3}]", turn.x, turn.y, turn.z),
            };
            notes.push(format!(
                "{}: the measured points lie on another equilibrium than the tip rotation [{:.4}, {:.4}, {:.4}] rad reaches: fitted the one wound {how} (tip rotation [{:.4}, {:.4}, {:.4}] rad), {:.1} mm RMS at the start values against {was}",
                e.id, given.x, given.y, given.z, rotation.x, rotation.y, rotation.z, miss * 1e3
            ));
            e.tip_rotation_rad = Some(rotation);
        }
    }
    notes
}
