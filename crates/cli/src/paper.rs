//! `rodlab paper-table`: the PLS paper's conical cantilever (Tables II, III).

use anyhow::Result;
use clap::Args;
use rod::statics::solve;
use rod::{Loads, Model, NewtonOptions, Rod, StrainBasis, StrainModes};
use std::path::PathBuf;

#[derive(Args)]
pub struct PaperArgs {
    /// The Table II rod.
    #[arg(long, default_value = "configs/rod/pls-paper-cantilever.toml")]
    pub rod: PathBuf,
}

fn tip_cm(rod: &Rod) -> Result<(lie::Vec3, usize)> {
    let model = Model::new(rod, &[]);
    let sol = solve(&model, &Loads::gravity(), None, &NewtonOptions::default())?;
    Ok((model.frames(&sol.q).joints.last().expect("tip").pos * 100.0, sol.iterations))
}

pub fn run(a: PaperArgs) -> Result<()> {
    let rod = Rod::from_file(&a.rod)?;
    let (reference, _) = tip_cm(&rod.with_equal_sections(64))?;
    let row = |name: &str, p: &lie::Vec3| {
        let err = (p - reference).norm() / reference.norm() * 100.0;
        println!("| {name:<44} | {:>8.4} | {:>7.4} | {:>9.4} | {:>8.3} |", p.x, p.y, p.z, err);
    };
    println!("Table II: conical cantilever under gravity, tip position [cm]; error vs converged rod");
    println!("| {:<44} | {:>8} | {:>7} | {:>9} | {:>8} |", "method", "x", "y", "z", "err [%]");
    println!("|{:-<46}|{:-<10}|{:-<9}|{:-<11}|{:-<10}|", "", "", "", "", "");
    row("rodlab converged rod (PLS, 64 sections)", &reference);
    let (pls, iters) = tip_cm(&rod)?;
    row("rodlab PLS (paper's 3 sections)", &pls);
    let (pcs, _) = tip_cm(&rod.with_basis(StrainBasis::Constant))?;
    row("rodlab PCS (paper's 3 sections)", &pcs);
    for (name, x, z) in
        [("paper FEM (650 elements, 3-D solid)", 5.8479, -17.8395), ("paper PCS (3 sections)", 5.3450, -17.1693), ("paper PLS (3 sections)", 5.7787, -17.8394)]
    {
        row(name, &lie::Vec3::new(x, 0.0, z));
    }
    println!("(rodlab PLS, 3 sections: {iters} Newton iterations from the straight rod)");
    println!();
    println!("Table III: PLS with reduced strain modes, 3 sections, tip x / z [cm]");
    println!("| {:<22} | {:>9} | {:>9} | {:>9} | {:>9} |", "modes", "rodlab x", "rodlab z", "paper x", "paper z");
    println!("|{:-<24}|{:-<11}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "", "");
    for (name, modes, px, pz) in [
        ("cosserat", StrainModes::COSSERAT, 5.7787, -17.8394),
        ("euler-bernoulli", StrainModes::EULER_BERNOULLI, 5.4940, -17.7527),
        ("kirchhoff-extensible", StrainModes::KIRCHHOFF_EXTENSIBLE, 5.6925, -17.8523),
        ("timoshenko", StrainModes::TIMOSHENKO, 5.3596, -17.9002),
    ] {
        let (p, _) = tip_cm(&rod.with_modes(modes))?;
        println!("| {name:<22} | {:>9.4} | {:>9.4} | {px:>9.4} | {pz:>9.4} |", p.x, p.z);
    }
    Ok(())
}
