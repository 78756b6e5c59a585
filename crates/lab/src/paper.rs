//! The PLS paper's conical cantilever (its Tables II and III): our PLS and
//! PCS tips beside the paper's numbers and a converged rod.

use crate::error::Result;
use lie::Vec3;
use rod::statics::solve;
use rod::{Loads, Model, NewtonOptions, Rod, StrainBasis, StrainModes};

/// One row of Table II: a method's tip \[cm\] and its distance from the
/// converged rod's tip (% of the latter's distance from the base).
#[derive(Clone, Debug, PartialEq)]
pub struct TipRow {
    pub method: String,
    pub tip_cm: Vec3,
    pub error_pct: f64,
}

/// One row of Table III: strain modes, our tip and the paper's (x, z) \[cm\].
#[derive(Clone, Debug, PartialEq)]
pub struct ModesRow {
    pub modes: String,
    pub tip_cm: Vec3,
    pub paper_x_cm: f64,
    pub paper_z_cm: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PaperTables {
    pub table2: Vec<TipRow>,
    /// Newton iterations of our 3-section PLS solve from the straight rod.
    pub pls_iterations: usize,
    pub table3: Vec<ModesRow>,
}

fn tip_cm(rod: &Rod) -> Result<(Vec3, usize)> {
    let model = Model::new(rod, &[]);
    let sol = solve(&model, &Loads::gravity(), None, &NewtonOptions::default())?;
    Ok((model.frames(&sol.q).joints.last().expect("tip").pos * 100.0, sol.iterations))
}

/// Both tables for the Table II rod.
pub fn tables(rod: &Rod) -> Result<PaperTables> {
    let (reference, _) = tip_cm(&rod.with_equal_sections(64))?;
    let row = |method: &str, p: Vec3| TipRow { method: method.into(), tip_cm: p, error_pct: (p - reference).norm() / reference.norm() * 100.0 };
    let (pls, pls_iterations) = tip_cm(rod)?;
    let (pcs, _) = tip_cm(&rod.with_basis(StrainBasis::Constant))?;
    let mut table2 = vec![
        row("rodlab converged rod (PLS, 64 sections)", reference),
        row("rodlab PLS (paper's 3 sections)", pls),
        row("rodlab PCS (paper's 3 sections)", pcs),
    ];
    for (name, x, z) in
        [("paper FEM (650 elements, 3-D solid)", 5.8479, -17.8395), ("paper PCS (3 sections)", 5.3450, -17.1693), ("paper PLS (3 sections)", 5.7787, -17.8394)]
    {
        table2.push(row(name, Vec3::new(x, 0.0, z)));
    }
    let mut table3 = vec![];
    for (name, modes, px, pz) in [
        ("cosserat", StrainModes::COSSERAT, 5.7787, -17.8394),
        ("euler-bernoulli", StrainModes::EULER_BERNOULLI, 5.4940, -17.7527),
        ("kirchhoff-extensible", StrainModes::KIRCHHOFF_EXTENSIBLE, 5.6925, -17.8523),
        ("timoshenko", StrainModes::TIMOSHENKO, 5.3596, -17.9002),
    ] {
        let (p, _) = tip_cm(&rod.with_modes(modes))?;
        table3.push(ModesRow { modes: name.into(), tip_cm: p, paper_x_cm: px, paper_z_cm: pz });
    }
    Ok(PaperTables { table2, pls_iterations, table3 })
}
