//! The rod's shape as rows from base to tip (for CSV output and reports).

use crate::model::Model;
use lie::Vec6;
use nalgebra::DVector;
use std::io::Write;

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

pub const CSV_HEADER: &str = "arc_m,px_m,py_m,pz_m,rot_w,rot_x,rot_y,rot_z,kappa_x,kappa_y,kappa_z,eps_x,eps_y,eps_z";

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

pub fn write_csv<W: Write>(rows: &[ShapeRow], mut out: W) -> std::io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        let q = r.quat_wxyz;
        let s = r.strain;
        writeln!(
            out,
            "{:.9},{:.9e},{:.9e},{:.9e},{:.12},{:.12},{:.12},{:.12},{:.9e},{:.9e},{:.9e},{:.9e},{:.9e},{:.9e}",
            r.arc_m, r.pos_m.x, r.pos_m.y, r.pos_m.z, q[0], q[1], q[2], q[3], s[0], s[1], s[2], s[3], s[4], s[5]
        )?;
    }
    Ok(())
}
