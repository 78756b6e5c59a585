//! The rod's shape as rows from base to tip (for CSV output and reports).

use crate::model::Model;
use lie::Vec6;
use nalgebra::DVector;

/// One row of the shape table.
#[derive(Clone, Debug)]
pub struct ShapeRow {
    pub arc_m: f64,
    pub pos_m: lie::Vec3,
    /// Unit quaternion (w, x, y, z).
    pub quat_wxyz: [f64; 4],
    /// Strain at the joint: [kappa_x, kappa_y, kappa_z, eps_x, eps_y, eps_z]
    /// with eps = Q - [1, 0, 0].
    pub strain: Vec6,
}

/// Columns of a shape table (one row per joint, base to tip).
pub const COLUMNS: [&str; 14] =
    ["arc_m", "px_m", "py_m", "pz_m", "rot_w", "rot_x", "rot_y", "rot_z", "kappa_x", "kappa_y", "kappa_z", "eps_x", "eps_y", "eps_z"];

impl ShapeRow {
    /// The row's values in the order of [`COLUMNS`].
    pub fn values(&self) -> [f64; 14] {
        let (p, q, s) = (self.pos_m, self.quat_wxyz, self.strain);
        [self.arc_m, p.x, p.y, p.z, q[0], q[1], q[2], q[3], s[0], s[1], s[2], s[3], s[4], s[5]]
    }
}

/// Shape at every joint, base first, tip last.
pub fn shape(model: &Model, q: &DVector<f64>) -> Vec<ShapeRow> {
    let frames = model.frames(q);
    model
        .joint_x_m
        .iter()
        .zip(&frames.joints)
        .map(|(&x, g)| {
            let uq = g.quaternion();
            let mut strain = model.strain_at(x, q);
            strain[3] -= 1.0;
            ShapeRow { arc_m: x, pos_m: g.pos, quat_wxyz: [uq.w, uq.i, uq.j, uq.k], strain }
        })
        .collect()
}

/// The rod's frame's turning from base to tip \[rad\], summed in the world
/// frame step by step (each step's rotation vector, turned into the world
/// by the frame it starts from): for a planar rod, its total turning about
/// the plane's normal, whole turns included (a full loop is 2 pi where the
/// tip's rotation alone says none). Which branch a held solve found.
pub fn winding_rad(rows: &[ShapeRow]) -> lie::Vec3 {
    let rot = |r: &ShapeRow| {
        let [w, x, y, z] = r.quat_wxyz;
        nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(w, x, y, z)).to_rotation_matrix().into_inner()
    };
    rows.windows(2).map(|w| rot(&w[0]) * lie::so3_log(&(rot(&w[0]).transpose() * rot(&w[1])))).sum()
}
