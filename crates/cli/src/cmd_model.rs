//! The model commands: `solve`, `paper-table`, `identify`, `observe`,
//! `rig calibrate`: arguments in, a `lab` workflow, a summary out.

use crate::args::{prior, vec3, ModeArg, Numbers};
use clap::{Args, Subcommand};
use lab::identify::{IdentifyRequest, Source};
use lab::observe::{ObserveOptions, ObserverMode};
use lab::solve::{Band, SolveRequest};
use lab::{Progress, Result, SessionDir};
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml\n  rodlab solve --rod arm.toml --tension 0,0,0,1.96 --out shape.csv\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml --tip-force -0.01,0,0 --sections 8 --modes timoshenko\n  rodlab solve --rod configs/rod/contact-paper-steel-core.toml --flange-pose 0,0,0.3,0,1.5707963,0   (held by a flange pointing straight down)\n  rodlab solve --rod configs/rod/rectangular-beam.toml --tip-force 0,0,-0.49 --tip-force-offset 0,0.015   (50 g hung from the tip face's top edge)\n  rodlab solve --rod configs/rod/clamped-clamped-cable.toml --tip-position 0.1,0,0 --tip-rotation 0,-1.5707963,0   (a 1.5 m cable hanging as a loop between two clamps 0.1 m apart)\n  rodlab solve --rod configs/rod/clamped-clamped-cable.toml --tip-position 0.1,0,0 --tip-rotation 0,-1.5707963,0 --follow tip_twist_rad --to 9 --branch-out branch.csv   (twist the loop's clamp until it snaps, and on)\n  rodlab solve --rod cable.toml --tip-position=-0.12,0,0 --tip-rotation 0,6.283185307179586,0   (a full-turn loop: clamps pointing the same way, a rotation vector of one whole turn)"
)]
pub struct SolveArgs {
    /// Rod description (TOML), e.g. configs/rod/pls-paper-cantilever.toml.
    #[arg(long)]
    pub rod: PathBuf,
    /// Cable tensions in newtons, one per cable of the rod, comma-separated.
    #[arg(long, allow_hyphen_values = true)]
    pub tension: Option<Numbers>,
    /// Which way the cables are sliding: being pulled in (load) or let out (unload); a cable with friction_mu loses tension along its channel when pulled in, gains it when let out.
    #[arg(long, value_enum, default_value = "load")]
    pub direction: Direction,
    /// Tip force in the world frame [N]: FX,FY,FZ.
    #[arg(long, allow_hyphen_values = true)]
    pub tip_force: Option<Numbers>,
    /// Tip moment in the world frame [N m]: MX,MY,MZ (fixed direction).
    #[arg(long, allow_hyphen_values = true)]
    pub tip_moment: Option<Numbers>,
    /// Where the tip force acts: Y,Z offset from the tip's centre in the tip section's frame [m] (a mass hung from the top edge of a 30 mm face: 0,0.015).
    #[arg(long, allow_hyphen_values = true)]
    pub tip_force_offset: Option<Numbers>,
    /// The robot's flange (TCP) in the world, as UR reports it: X,Y,Z [m],RX,RY,RZ [rad] (rotation vector); the rod's base is the flange times the rod file's [base] (its mount). Default: the rod file's [base] in the world.
    #[arg(long, allow_hyphen_values = true)]
    pub flange_pose: Option<Numbers>,
    /// Where a pinned or clamped tip is held (the rod file's [tip] condition), world frame: X,Y,Z [m].
    #[arg(long, allow_hyphen_values = true)]
    pub tip_position: Option<Numbers>,
    /// A clamped tip's rotation, world frame: RX,RY,RZ [rad] (a rotation vector; 0,0,0 is the rod's straight orientation). Whole turns count: 0,6.2832,0 is a full-turn loop about y, which the solve starts wound, where 0,0,0 is none.
    #[arg(long, allow_hyphen_values = true)]
    pub tip_rotation: Option<Numbers>,
    /// A held tip: follow the equilibria from the solved one along a path of holds to --to, past limit points, saying where they snap or buckle: tip_twist_rad (the clamp turned about the rod's axis) or clamp_distance_m (the tip moved along the line through the base).
    #[arg(long, requires = "to")]
    pub follow: Option<String>,
    /// Where --follow ends: a twist [rad] from the clamp's rotation, or the clamps' distance [m].
    #[arg(long, allow_hyphen_values = true, requires = "follow")]
    pub to: Option<f64>,
    /// Write the followed branch as CSV (the path's value, stability, the hold's reaction).
    #[arg(long, requires = "follow")]
    pub branch_out: Option<PathBuf>,
    /// Replace the rod's sections by N equal sections.
    #[arg(long)]
    pub sections: Option<usize>,
    /// Override the strain modes: cosserat, euler-bernoulli, kirchhoff-extensible, timoshenko.
    #[arg(long)]
    pub modes: Option<String>,
    /// Turn gravity off.
    #[arg(long)]
    pub no_gravity: bool,
    /// Use E, G, rho, geometry and base pitch from an identified.toml of `rodlab identify` (FILE:NAME takes a compared variant's values instead of [parameters], e.g. "identified.toml:no nuisance").
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Write the shape (base to tip) as CSV.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// A followed branch: its critical points, and the CSV when asked.
fn print_followed(f: &lab::solve::Followed, out: Option<&std::path::Path>) -> Result<()> {
    let unstable = f.points.iter().filter(|p| p.1 < 0.0).count();
    println!("followed along {}: {} equilibria ({} unstable)", f.path.key(), f.points.len(), unstable);
    for (kind, t) in &f.critical {
        println!("  {} at {} = {t:.6}", kind.describe(), f.path.key());
    }
    if f.critical.is_empty() {
        println!("  no snap or buckling on the way");
    }
    if let Some(out) = out {
        lab::solve::write_branch_csv(out, f)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// `--direction`: which way the cables slide.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Direction {
    /// Pulled in.
    Load,
    /// Let out.
    Unload,
}

pub fn solve(a: SolveArgs) -> Result<()> {
    let rod = lab::read_rod(&a.rod, a.sections, a.modes.as_deref())?;
    let params = lab::params::read_optional(a.params.as_deref(), &rod, &a.rod)?;
    let req = SolveRequest {
        tensions_n: a.tension.map(|t| t.0).unwrap_or_default(),
        cable_slide: match a.direction {
            Direction::Load => rod::statics::CableSlide::PulledIn,
            Direction::Unload => rod::statics::CableSlide::LetOut,
        },
        tip_force_n: vec3("tip-force", &a.tip_force)?,
        tip_moment_nm: vec3("tip-moment", &a.tip_moment)?,
        tip_force_offset_body_m: match &a.tip_force_offset {
            Some(n) => {
                let [y, z] = n.exactly::<2>("tip-force-offset", "Y,Z")?;
                lie::Vec3::new(0.0, y, z)
            }
            None => lie::Vec3::zeros(),
        },
        flange: match &a.flange_pose {
            Some(n) => Some(lie::trajectory::pose_from_ur(&n.exactly::<6>("flange-pose", "X,Y,Z,RX,RY,RZ")?)),
            None => None,
        },
        gravity: !a.no_gravity,
        tip_position_m: a.tip_position.as_ref().map(|n| n.exactly::<3>("tip-position", "X,Y,Z").map(lie::Vec3::from)).transpose()?,
        tip_rotation_rad: a.tip_rotation.as_ref().map(|n| n.exactly::<3>("tip-rotation", "RX,RY,RZ").map(lie::Vec3::from)).transpose()?,
        follow: match (&a.follow, a.to) {
            (Some(key), Some(to)) => Some((
                rod::branch::EndPath::parse(key)
                    .ok_or_else(|| lab::Error::input(format!("--follow: '{key}' is not one of {}", rod::branch::EndPath::KEYS.join(", "))))?,
                to,
            )),
            _ => None,
        },
        params,
        rod,
    };
    let s = lab::solve::solve(&req)?;
    if let Some(p) = &req.params {
        let v = &p.file.parameters;
        println!(
            "parameters from {}: E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3, base pitch {:.3} deg",
            p.path.display(),
            v.e_pa.value,
            v.g_pa.value,
            v.rho_kg_m3.value,
            v.base_pitch_rad.to_degrees()
        );
    }
    println!(
        "rod: {} ({} sections, {} sub-segments each, {} strain dofs, mass {:.4} kg)",
        a.rod.display(),
        s.rod.section_lengths_m.len(),
        s.rod.subsegments_per_section,
        s.n_dof,
        s.mass_kg
    );
    println!("converged: {} Newton iterations, {} load step(s), residual {:.2e}, {:.3} ms", s.iterations, s.load_steps, s.residual_norm, s.wall_time_s * 1e3);
    let tip = s.tip_m();
    println!("tip position [m]: {:.6} {:.6} {:.6}", tip.x, tip.y, tip.z);
    if let Some(r) = &s.tip_reaction {
        println!(
            "tip held ({}): its hold's force on the rod [N] {:.6} {:.6} {:.6}, moment about the tip [N m] {:.6} {:.6} {:.6}",
            s.rod.tip_condition.key(),
            r[3],
            r[4],
            r[5],
            r[0],
            r[1],
            r[2]
        );
    }
    if let Some(lowest) = s.stability_eigenvalue {
        // Zero to round-off is neutral (an isotropic loop turning about the
        // line between its clamps).
        let verdict = if lowest < -s.neutral_below {
            "UNSTABLE: a real rod leaves this equilibrium (buckles or snaps)"
        } else if lowest < s.neutral_below {
            "neutral (zero to round-off: a loop free to turn about the line between its clamps)"
        } else {
            "stable"
        };
        println!("stability: lowest eigenvalue of the held rod's stiffness {lowest:.3e}: {verdict}");
        let w = s.winding_rad;
        let turns = w.norm() / std::f64::consts::TAU;
        let axis = if w.norm() > 1e-9 { w / w.norm() } else { lie::Vec3::zeros() };
        println!(
            "branch: the rod's frame turns {:.4} rad base to tip ({turns:.3} turns) about the world's ({:.3}, {:.3}, {:.3})",
            w.norm(),
            axis.x,
            axis.y,
            axis.z
        );
    }
    if let Some(f) = &s.followed {
        print_followed(f, a.branch_out.as_deref())?;
    }
    match &s.band {
        Some(Band::Tip { tip_m: x, half_width_m: h, model_error_m, prior_only_m }) => {
            print_band(x, h, *model_error_m);
            for (name, w) in prior_only_m {
                println!(
                    "  the band rests on {name}, which the identification's data never saw (its prior only): it adds {:.2} / {:.2} / {:.2} mm in x / y / z",
                    1e3 * w.x,
                    1e3 * w.y,
                    1e3 * w.z
                );
            }
        }
        Some(Band::None(why)) => println!("no prediction band: {why}"),
        None => {}
    }
    println!("validity: {}", s.validity.summary());
    for w in &s.warnings {
        println!("warning: {w}");
    }
    if let Some(out) = &a.out {
        lab::solve::write_shape_csv(out, &s.shape)?;
        println!("wrote {} ({} rows, base to tip)", out.display(), s.shape.len());
    }
    Ok(())
}

#[derive(Args)]
pub struct PaperArgs {
    /// The Table II rod.
    #[arg(long, default_value = "configs/rod/pls-paper-cantilever.toml")]
    pub rod: PathBuf,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab schema rod > rod.schema.json\n  rodlab schema scene --reference\n  rodlab schema rod --check configs/rod/pls-cable-arm.toml"
)]
pub struct SchemaArgs {
    /// rod, rig, scene, loads, identified or session.
    pub file: String,
    /// Print the reference table of its fields (Markdown) instead.
    #[arg(long)]
    pub reference: bool,
    /// Check this file instead with the parser the commands use (every value checked): "ok" and what it is, or the error naming the field (exit 2).
    #[arg(long, conflicts_with = "reference")]
    pub check: Option<PathBuf>,
}

pub fn schema(a: SchemaArgs) -> Result<()> {
    schema_with(a, lab::reference::schema, lab::reference::check_file)
}

/// `schema` with the given readers (the device build's know the tracker's
/// files too).
pub fn schema_with(a: SchemaArgs, schema_of: fn(&str) -> Option<schemars::Schema>, check_file: fn(&str, &std::path::Path) -> Result<String>) -> Result<()> {
    if let Some(path) = &a.check {
        println!("{}: ok, {}", path.display(), check_file(&a.file, path)?);
        return Ok(());
    }
    let schema = schema_of(&a.file).ok_or_else(|| lab::Error::input(format!("{}: no such file kind (one of {})", a.file, lab::reference::FILES.join(", "))))?;
    if a.reference {
        print!("{}", lab::reference::table(&lab::reference::fields(&schema)));
    } else {
        println!("{}", serde_json::to_string_pretty(schema.as_value()).map_err(|e| lab::Error::computation(e.to_string()))?);
    }
    Ok(())
}

pub fn paper_table(a: PaperArgs) -> Result<()> {
    let t = lab::paper::tables(&rod::Rod::from_file(&a.rod)?)?;
    println!("Table II: conical cantilever under gravity, tip position [cm]; error vs converged rod");
    println!("| {:<44} | {:>8} | {:>7} | {:>9} | {:>8} |", "method", "x", "y", "z", "err [%]");
    println!("|{:-<46}|{:-<10}|{:-<9}|{:-<11}|{:-<10}|", "", "", "", "", "");
    for r in &t.table2 {
        println!("| {:<44} | {:>8.4} | {:>7.4} | {:>9.4} | {:>8.3} |", r.method, r.tip_cm.x, r.tip_cm.y, r.tip_cm.z, r.error_pct);
    }
    println!("(rodlab PLS, 3 sections: {} Newton iterations from the straight rod)\n", t.pls_iterations);
    println!("Table III: PLS with reduced strain modes, 3 sections, tip x / z [cm]");
    println!("| {:<22} | {:>9} | {:>9} | {:>9} | {:>9} |", "modes", "rodlab x", "rodlab z", "paper x", "paper z");
    println!("|{:-<24}|{:-<11}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "", "");
    for r in &t.table3 {
        println!("| {:<22} | {:>9.4} | {:>9.4} | {:>9.4} | {:>9.4} |", r.modes, r.tip_cm.x, r.tip_cm.z, r.paper_x_cm, r.paper_z_cm);
    }
    Ok(())
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out reports/demo\n  rodlab identify --rod arm.toml --experiments my-data --out fit --translation --pitch\n  rodlab identify --rod arm.toml --sessions sessions/day1-* --loads configs/loads.toml --out fit\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out variants --compare-variants --reference 2.563e5,8.543e4,1.41e3\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out best --translation --pitch --fit-cable-offset --per-cable --fit-cable-angle\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out held --hold-material 2.563e5,8.543e4,1.41e3 --fit-cable-offset=0,0.005 --fit-radius-scale --translation --pitch\n  rodlab identify --rod beam.toml --sessions sessions/beam-* --loads loads.toml --out fit --tie-g 0.49\n  rodlab identify --dynamic --rod configs/rod/contact-paper-steel-core.toml --sessions sessions/ring sessions/drag-* --scene configs/scene/contact-paper-lying-drag.toml --params fit/identified.toml --out dynamic\n\nThe experiments directory holds inputs.csv and measurements.csv (see datasets/pls-cable-arm/README.md).\nSessions need tracked markers (markers.parquet, on the host clock) and the rod's base: a robot stream, or the clamp's pose of a motion-capture session (streams/mocap_base, written by `rodlab import c3d`); static holds (base and markers still) are found automatically, each becomes one experiment. loads.toml maps streams to cable tensions, a tip force and a flange force sensor, and sets the hold thresholds (see configs/loads.toml).\nPriors: a bare --fit-* flag takes the rod file's [identify] prior; give your own as --fit-cable-offset=MEAN,SD (with '=')."
)]
pub struct IdentifyArgs {
    /// Rod description (TOML); its material is the initial guess.
    #[arg(long)]
    pub rod: PathBuf,
    /// Directory with inputs.csv and measurements.csv.
    #[arg(long, required_unless_present = "sessions", conflicts_with = "sessions")]
    pub experiments: Option<PathBuf>,
    /// Recorded session directories; their static holds are the experiments.
    #[arg(long, num_args = 1..)]
    pub sessions: Vec<PathBuf>,
    /// With --sessions: loads from streams and hold thresholds (default: gravity only).
    #[arg(long, requires = "sessions")]
    pub loads: Option<PathBuf>,
    /// Output directory: identified.toml, index.html, summary.json, PNG figures.
    #[arg(long)]
    pub out: PathBuf,
    /// Also estimate a translation of the measurement frame (nuisance).
    #[arg(long)]
    pub translation: bool,
    /// Also estimate the base's pitch (nuisance).
    #[arg(long)]
    pub pitch: bool,
    /// Reference parameters E,G,RHO to compare with (e.g. a paper's values).
    #[arg(long, allow_hyphen_values = true)]
    pub reference: Option<Numbers>,
    /// Skip leave-one-out cross-validation.
    #[arg(long)]
    pub no_loo: bool,
    /// Also estimate the cables' outward offset from where the rod file puts them (guide rings hold cables off the surface), with a Gaussian prior =MEAN_M,SD_M [m], e.g. =0,0.005 (bare: the rod file's [identify] cable_offset_m).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "MEAN,SD")]
    pub fit_cable_offset: Option<Numbers>,
    /// With --fit-cable-offset: one offset per cable, each with that prior, instead of one for all.
    #[arg(long, requires = "fit_cable_offset")]
    pub per_cable: bool,
    /// With --per-cable and/or --fit-cable-angle: pool the cables' offsets and angles (partial pooling): each drawn around the cables' common mean with a spread the data estimate, so that a cable the data never saw borrows from the others instead of sitting at the prior (the prior becomes that of the mean).
    #[arg(long)]
    pub pool_cables: bool,
    /// Also estimate the scale of the section's radii (cables on the surface move with it), with a Gaussian prior =MEAN,SD, e.g. =1,0.1 (bare: the rod file's [identify] radius_scale). E, rho and the scale are nearly degenerate (E s^4, rho s^2): fit it with E, G, rho held (--hold-material) or with a tight prior.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "MEAN,SD")]
    pub fit_radius_scale: Option<Numbers>,
    /// Also estimate each cable's turn about the rod's axis from its angle_deg in the rod file (guide holes a degree or two off), with a Gaussian prior =MEAN_DEG,SD_DEG, e.g. =0,5 (bare: the rod file's [identify] cable_angle_deg). Pulled cables are seen by the data; the others stay at the prior.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "MEAN,SD")]
    pub fit_cable_angle: Option<Numbers>,
    /// Also estimate each experiment's tip-clamp angle about the world's y axis from what it says (a clamp known only to within a tracing on a photograph in the x-z plane), with a Gaussian prior =MEAN_DEG,SD_DEG, e.g. =0,5 (bare: the rod file's [identify] clamp_angle_deg). A nuisance of those experiments: predictions of new ones take none. Clamped tips only.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "MEAN,SD")]
    pub fit_clamp_angle: Option<Numbers>,
    /// Also estimate the cables' friction coefficient in their channels (the capstan law), one for all, with a Gaussian prior =MEAN,SD, e.g. =0.1,0.1 (bare: the rod file's [identify] friction_mu): from pulls that load and unload (inputs.csv's direction column).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "MEAN,SD")]
    pub fit_friction: Option<Numbers>,
    /// Hold the material at E,G,RHO and fit only the geometry and nuisance parameters: which geometry makes a published material describe the data?
    #[arg(long, allow_hyphen_values = true)]
    pub hold_material: Option<Numbers>,
    /// Tie G to E by this Poisson's ratio, G = E / (2 (1 + NU)), and identify E (and rho) alone: for data that cannot see G (loads in one plane, no torsion) of a material whose NU is known (silicone: 0.45-0.5). Default: the rod file's [identify] tie_g_poisson, if any.
    #[arg(long, value_name = "NU")]
    pub tie_g: Option<f64>,
    /// Compare model variants (no nuisance, frame, cable offset, frame + cable offset, frame + offset per cable, frame + geometry when a radius-scale prior is given, frame + angle per cable and frame + offset and angle per cable when a cable-angle prior is given) by leave-one-out prediction error and recommend the best predictor; the priors are the flags', else the rod file's (cable offset else 0,0.005). With --reference, also fits the geometry with the reference material held. With --dynamic: compare the material's laws (elastic + damping ratio, one Maxwell branch, constant loss, and the rod file's own), each fitted to every session but one and replayed on it, and recommend the one whose held-out replays miss least (the ring-downs with --match-ring-down, else the markers).
    #[arg(long)]
    pub compare_variants: bool,
    /// With --compare-variants: compare every variant under the other elastic law too (linear <-> neo-Hookean, the rod file's [material] law); the recommendation stays under the rod file's law, and a line says which law the data favour.
    #[arg(long, requires = "compare_variants")]
    pub compare_laws: bool,
    /// Refuse a session with a damaged chunk (default: the chunk is left out, with a warning naming it and its rows).
    #[arg(long, requires = "sessions")]
    pub strict: bool,
    /// Identify what the statics cannot see from recorded motion: the table's friction mu and the rod's damping ratio, by replaying each of --sessions in the simulator (--scene: table, contact law, step) with E, G, rho and geometry held at --params (default: the rod file's), against the tracked markers and the flange force sensor (its constant bias left out). Writes --out/identified.toml (--params' file with [dynamic], which validate and simulate --params use), index.html and summary.json.
    #[arg(long, requires_all = ["sessions", "scene"], conflicts_with_all = ["experiments", "translation", "pitch", "compare_laws"])]
    pub dynamic: bool,
    /// With --dynamic: the scene of the sessions.
    #[arg(long, requires = "dynamic")]
    pub scene: Option<PathBuf>,
    /// With --dynamic: the static identification's identified.toml (E, G, rho, geometry held; default: the rod file's material).
    #[arg(long, requires = "dynamic")]
    pub params: Option<PathBuf>,
    /// With --dynamic: where the search starts (default: the scene's mu). A bracketing scan of mu from 0.05 to 2 runs first whatever the start.
    #[arg(long, requires = "dynamic")]
    pub mu_start: Option<f64>,
    /// With --dynamic: the damping ratio's start (default: the rod file's [damping] damping_ratio, else 0.05; none beside [damping] branches given alone, whose modulus ratios and time constants are fitted instead).
    #[arg(long, requires = "dynamic")]
    pub damping_start: Option<f64>,
    /// With --dynamic: hold the damping ratio at its start and fit mu alone.
    #[arg(long, requires = "dynamic")]
    pub hold_damping: bool,
    /// With --dynamic: take the markers' stamps as on the robot's clock. By default each session's delay of its markers behind the robot (a camera's exposure, transfer and decoding) is fitted with mu: at a drag's speed, 1 ms of delay moves mu by about 2 %. A motion-capture session's markers and clamp share one clock: no delay is fitted there.
    #[arg(long, requires = "dynamic", conflicts_with = "fit_marker_delay")]
    pub hold_marker_delay: bool,
    /// With --dynamic: fit the markers' delay also where markers and base share one clock (motion capture).
    #[arg(long, requires = "dynamic")]
    pub fit_marker_delay: bool,
    /// With --dynamic: fit only this span of each replay, FROM,TO seconds from its start (the release, or the session's first sample), e.g. the ring-down after the robot stops (default: the scene's [time] fit_window_s, else all of it).
    #[arg(long, requires = "dynamic", value_name = "FROM,TO")]
    pub window_s: Option<Numbers>,
    /// With --dynamic: hold the rod file's viscoelastic law ([damping] branches or constant_loss) instead of fitting each branch's modulus ratio and time constant (or the constant-loss law's loss factor and longest time).
    #[arg(long, requires = "dynamic")]
    pub hold_branches: bool,
    /// With --dynamic: also fit the body's stiffness (E and G scaled together; rho, geometry and the E/G ratio stay --params'): E, G, rho are otherwise held at the static result.
    #[arg(long, requires = "dynamic")]
    pub fit_stiffness: bool,
    /// With --dynamic: also fit the body's density (rho scaled; E, G, geometry stay): releases with several hung masses see it in how far apart their frequencies lie. With --match-ring-down the static fit's rho (--params) is one more row.
    #[arg(long, requires = "dynamic")]
    pub fit_density: bool,
    /// With --dynamic: also fit the dry friction of the hook the masses hang on, as a radius [m] (its moment over the hung weight; one value for every mass; start: the loads file's hook_friction_radius_m, else 1 mm): a loss per cycle that grows with the weight and not with the swing, which a material's law cannot give.
    #[arg(long, requires = "dynamic")]
    pub fit_hook_friction: bool,
    /// With --dynamic: fit each release's frequency and log decrement over its first three cycles (its outermost marker along gravity) instead of the markers' paths: the swing alone, whatever the start's shape.
    #[arg(long, requires = "dynamic")]
    pub match_ring_down: bool,
    /// With --match-ring-down: cycles of each release read (3 to 50; a release that rings fewer is read over those). Past three, the decay from the first swing to every later cycle is a row of its own: the envelope, whose bend tells a hook's dry friction (a loss per cycle that does not shrink with the swing) from the material's loss. The scene's duration_s (or --window-s) must cover them.
    #[arg(long, requires = "match_ring_down", default_value_t = lab::dynamic::RING_DOWN_CYCLES)]
    pub ring_down_cycles: usize,
    /// With --dynamic: floor of the markers' tracking noise per coordinate [m] (the noise estimated from each session is used when larger).
    #[arg(long, requires = "dynamic", default_value_t = 2e-5)]
    pub sigma_m: f64,
}

pub fn identify(a: IdentifyArgs, progress: &dyn Progress) -> Result<()> {
    let rod = rod::Rod::from_file(&a.rod)?;
    if a.dynamic {
        return identify_dynamic(a, rod, progress);
    }
    let source = match &a.experiments {
        Some(dir) => Source::Experiments(dir.clone()),
        None => {
            Source::Sessions { dirs: a.sessions.iter().map(SessionDir::new).collect(), loads: lab::loads::Loads::read(a.loads.as_deref(), rod.cables.len())? }
        }
    };
    let material = |flag: &str, v: &Option<Numbers>| lab::params::material(flag, v.as_ref().map_or(&[][..], |n| &n.0));
    let req = IdentifyRequest {
        translation: a.translation,
        pitch: a.pitch,
        reference: material("--reference", &a.reference)?.map(|m| identify::Values::material(m.e_pa, m.g_pa, m.rho_kg_m3)),
        loo: !a.no_loo,
        cable_offset: prior("fit-cable-offset", &a.fit_cable_offset)?,
        per_cable: a.per_cable,
        pool_cables: a.pool_cables,
        radius_scale: prior("fit-radius-scale", &a.fit_radius_scale)?,
        cable_angle_deg: prior("fit-cable-angle", &a.fit_cable_angle)?,
        clamp_angle_deg: prior("fit-clamp-angle", &a.fit_clamp_angle)?,
        friction: prior("fit-friction", &a.fit_friction)?,
        hold_material: material("--hold-material", &a.hold_material)?.map(|m| [m.e_pa, m.g_pa, m.rho_kg_m3]),
        tie_g_poisson: a.tie_g,
        compare_variants: a.compare_variants,
        compare_laws: a.compare_laws,
        refuse_damaged: a.strict,
        ..IdentifyRequest::new(&a.rod, rod, source, &a.out)
    };
    let id = lab::identify::identify(&req, progress)?;
    crate::print::identification(&id, &req);
    Ok(())
}

/// `identify --dynamic`: friction and damping from recorded motion.
fn identify_dynamic(a: IdentifyArgs, rod: rod::Rod, progress: &dyn Progress) -> Result<()> {
    let scene_path = a.scene.clone().expect("clap requires --scene");
    let params = match &a.params {
        Some(p) => lab::params::Params::read(p, &rod, &a.rod)?,
        None => lab::params::Params::of_rod_file(&rod, &a.rod),
    };
    let mut req = lab::dynamic::DynamicRequest::new(
        a.sessions.iter().map(SessionDir::new).collect(),
        &a.rod,
        rod,
        params,
        &scene_path,
        sim::Scene::from_file(&scene_path)?,
        &a.out,
    );
    req.mu_start = a.mu_start;
    req.damping_start = a.damping_start;
    req.hold_damping = a.hold_damping;
    req.hold_marker_delay = a.hold_marker_delay;
    req.fit_marker_delay = a.fit_marker_delay;
    req.hold_branches = a.hold_branches;
    req.window_s = match a.window_s.as_ref().map(|n| n.0.as_slice()) {
        None => None,
        Some(&[from, to]) => Some([from, to]),
        Some(v) => return Err(lab::Error::input(format!("--window-s: expected FROM,TO, got {} values", v.len()))),
    };
    req.fit_stiffness = a.fit_stiffness;
    req.fit_density = a.fit_density;
    req.fit_hook_friction = a.fit_hook_friction;
    req.match_ring_down = a.match_ring_down;
    req.ring_down_cycles = a.ring_down_cycles;
    req.sigma_m = a.sigma_m;
    req.compare_laws = a.compare_variants;
    req.loads = lab::loads::Loads::read(a.loads.as_deref(), req.rod.cables.len())?;
    let fit = lab::dynamic::identify_dynamic(&req, progress)?;
    crate::print::dynamic(&fit);
    Ok(())
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab observe sessions/run1 --rod configs/rod/contact-paper-steel-core.toml\n  rodlab observe markers.parquet --rod rod.toml --mode weighted --sigma-m 3e-4 --out strain.parquet\n\nThe rod file lists the markers ([[marker]] arc_m, offset_y_m, offset_z_m), base first. In a session, the rod's base follows the robot (base = robot_base * TCP * the rod file's [base] mount), or the clamp of a motion-capture session (rodlab import c3d), and gravity is the rig's."
)]
pub struct ObserveArgs {
    /// Session directory (with markers.parquet) or a marker table.
    pub input: PathBuf,
    /// Rod description with its [[marker]] entries.
    #[arg(long)]
    pub rod: PathBuf,
    /// How the markers hold the rod: weighted (springs by their noise, the default) or hard (constraints: exact markers).
    #[arg(long, value_enum, default_value = "weighted")]
    pub mode: ModeArg,
    /// Marker position noise, standard deviation per coordinate [m]; never below the markers' own noise estimated from the table (third differences, 30 frames or more), with a warning.
    #[arg(long, default_value_t = 3e-4)]
    pub sigma_m: f64,
    /// Weighted mode: energy scale c [J] of the springs k = c / sigma^2 (default: discrepancy principle on the most deformed frame).
    #[arg(long)]
    pub energy_scale_j: Option<f64>,
    /// Output strain table (default: strain.parquet beside the marker table).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The session's loads file: for a rod whose tip is held, its [tip_hold] names the robot holding it.
    #[arg(long)]
    pub loads: Option<PathBuf>,
}

pub fn observe(a: ObserveArgs, progress: &dyn Progress) -> Result<()> {
    let rod = rod::Rod::from_file(&a.rod)?;
    let markers = if a.input.is_dir() { SessionDir::new(&a.input).markers() } else { a.input.clone() };
    let out = a.out.clone().unwrap_or_else(|| markers.with_file_name("strain.parquet"));
    let o = ObserveOptions { mode: a.mode.into(), sigma_m: a.sigma_m, energy_scale_j: a.energy_scale_j };
    let loads = lab::loads::Loads::read(a.loads.as_deref(), rod.cables.len())?;
    let ob = lab::observe::observe_held(&markers, &rod, &o, loads.file.tip_hold.as_ref(), &out, progress)?;
    if ob.base_from_robot {
        println!("base pose from the robot log in the rig's world frame, rod mount from {}", a.rod.display());
    }
    if let Some(w) = &ob.scale_warning {
        eprintln!("rodlab: warning: {w}");
    }
    let mode = match o.mode {
        ObserverMode::Hard => "hard".to_string(),
        ObserverMode::Weighted => format!("weighted (energy scale {:.3e} J)", ob.energy_scale_j.unwrap_or(f64::NAN)),
    };
    println!("observed {} frames in {:.2} s ({:.0} frames/s), mode {mode}", ob.frames, ob.wall_time_s, ob.frames as f64 / ob.wall_time_s.max(1e-9));
    println!("  solved {}, solved with missing markers {}, failed {}", ob.solved, ob.solved_missing_markers, ob.failed);
    for (why, n) in &ob.reasons {
        println!("  failure: {why} ({n} frames)");
    }
    println!("  marker residual [m]: mean {:.3e}, max {:.3e}", ob.marker_residual_mean_m, ob.marker_residual_max_m);
    if let Some(v) = &ob.validity {
        println!("  validity: {}", v.summary());
    }
    for w in &ob.warnings {
        println!("  warning: {w}");
    }
    println!("wrote {} ({} rows: frame x node)", ob.out.display(), ob.rows);
    Ok(())
}

#[derive(Subcommand)]
pub enum RigCommand {
    /// Measure T_world_robot: tracked marker positions (world) against the flange poses (robot base frame).
    Calibrate(CalibrateRigArgs),
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab rig calibrate sessions/rig-cal --rod configs/rod/contact-paper-steel-core.toml --marker 0 --out frames.toml\n\nRecord while the robot holds the rod (or a flange marker) still at six or more poses spread in two directions of the plane of motion, track the video (rodlab track, with the board's pose in the rig's [frames]), then run this. The marker's place on the flange comes from the rod file: its [base] mount and the marker's arc length and offsets. Pairs are taken where the flange moves slower than --max-speed-m-s. With a force sensor (ft300 stream), the direction of gravity is checked against the force it reads at rest."
)]
pub struct CalibrateRigArgs {
    /// Session directory with markers.parquet (tracked, world frame) and a robot stream.
    pub session: PathBuf,
    /// Rod file: its [base] mount and the tracked marker's arc length and offsets place the marker on the flange.
    #[arg(long)]
    pub rod: PathBuf,
    /// Index of the tracked marker (0 = base marker).
    #[arg(long, default_value_t = 0)]
    pub marker: usize,
    /// Use frames where the flange moves slower than this [m/s].
    #[arg(long, default_value_t = 0.005)]
    pub max_speed_m_s: f64,
    /// Refuse (exit 1, nothing written) when the residuals' RMS is above this [m].
    #[arg(long, default_value_t = lab::rig::MAX_RMS_M)]
    pub max_rms_m: f64,
    /// Write the session's [frames] with the measured robot base here (TOML).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn rig(c: RigCommand) -> Result<()> {
    let RigCommand::Calibrate(a) = c;
    let rod = rod::Rod::from_file(&a.rod)?;
    let session = SessionDir::new(&a.session);
    let cal = lab::rig::calibrate(&lab::rig::RigCalibrationRequest {
        session: &session,
        rod: &rod,
        marker: a.marker,
        max_speed_m_s: a.max_speed_m_s,
        max_rms_m: a.max_rms_m,
    })?;
    let (p, r) = (cal.robot_base.position_m, cal.robot_base.rpy_deg);
    println!(
        "robot base in the world from {} pairs: position_m = [{:.6}, {:.6}, {:.6}], rpy_deg = [{:.5}, {:.5}, {:.5}]",
        cal.pairs, p[0], p[1], p[2], r[0], r[1], r[2]
    );
    println!("  residuals: RMS {:.3} mm, max {:.3} mm", 1e3 * cal.rms_residual_m, 1e3 * cal.max_residual_m);
    if let Some(angle) = cal.gravity_angle_deg {
        println!("  gravity check: the force sensor's mean force points {angle:.2} deg from the rig's gravity");
    }
    for w in &cal.warnings {
        eprintln!("rodlab: warning: {w}");
    }
    if let Some(out) = &a.out {
        lab::rig::write_frames(out, &cal.frames, &session)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// The tip's prediction band, one line.
fn print_band(x: &lie::Vec3, h: &lie::Vec3, model_error_m: f64) {
    println!(
            "predicted tip with 95 % prediction band [m]: {:.6} +- {:.6}, {:.6} +- {:.6}, {:.6} +- {:.6} (per coordinate, in the measurement frame; a new measurement's noise, never below the declared one, and {:.2} mm of model error: the larger of what cross-validation found and the rod file's [identify] model_error_m)",
            x.x,
            h.x,
            x.y,
            h.y,
            x.z,
            h.z,
            1e3 * model_error_m
        );
}
