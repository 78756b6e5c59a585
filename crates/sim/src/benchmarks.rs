//! Reference cases with analytic answers (science §5, §6a), shared by the
//! tests and `rodlab verify`: DisMech's axial slip onset of a rod lying on a
//! table.

use crate::{BaseMotion, Scene, SimError, Simulator};
use rod::{Material, Rod, StrainModes};

/// Coulomb friction coefficient of DisMech's case.
pub const SLIP_ONSET_MU: f64 = 0.4;
/// Gravity of DisMech's case [m/s^2].
pub const SLIP_ONSET_G: f64 = 9.8;

/// DisMech's friction rod (Sec. IV-C): L = 1 m, r = 0.025 m, rho = 509.3
/// kg/m^3 (m = 1 kg), E = 1e5 Pa, with DisMech's kinematics: bending, twist
/// and stretch, no shear (our extensible Kirchhoff modes). With shear, the
/// friction at the bottom surface against a push at the centre line tilts
/// the sections of this soft rod (G A = 67 N) and the slip onset is no
/// longer that of a rigid body.
pub fn dismech_rod() -> Rod {
    let mut rod = Rod::uniform_cylinder(1.0, 0.025, Material::from_poisson(1e5, 0.45, 509.3), 4);
    rod.subsegments_per_section = 4;
    rod.modes = StrainModes::KIRCHHOFF_EXTENSIBLE;
    rod
}

/// The rod lying along x on a table (z = 0), free base, dynamic, with extra
/// scene text (loads) appended; `initial`: "static" starts it settled on
/// the table (the contact's compliance carrying its weight), "rest" drops
/// it onto the table from touching (pushed from the start: no static
/// equilibrium exists).
pub fn flat_scene(step_s: f64, duration_s: f64, mu: f64, initial: &str, extra: &str) -> String {
    format!(
        r#"
gravity_m_s2 = [0.0, 0.0, -{SLIP_ONSET_G}]
initial = "{initial}"
[time]
step_s = {step_s}
duration_s = {duration_s}
mode = "dynamic"
[table]
normal = [0.0, 0.0, 1.0]
mu = {mu}
[base]
kind = "free"
position_m = [0.0, 0.0, 0.025]
{extra}
"#
    )
}

/// One point of the slip-onset sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlipOnsetPoint {
    pub force_n: f64,
    pub kinetic_energy_j: f64,
    /// `(t^2 / 2m)(F - mu m g)^2`, 0 below the onset.
    pub analytic_j: f64,
}

/// Kinetic energy after `duration_s` of a uniform axial push `force_n`
/// (spread over the rod's mass) on DisMech's rod lying on the table.
pub fn slip_onset(force_n: f64, duration_s: f64) -> Result<SlipOnsetPoint, SimError> {
    let rod = dismech_rod();
    let load = format!("[[load]]\nkind = \"body_force\"\ntotal_force_n = [{force_n}, 0.0, 0.0]\n");
    let scene = Scene::from_toml_str(&flat_scene(0.01, duration_s, SLIP_ONSET_MU, "rest", &load), "slip-onset scene").map_err(|e| SimError::Input(e.to_string()))?;
    let motion = BaseMotion::from_scene(&scene, &rod)?.expect("free base");
    let mut sim = Simulator::new(&rod, &scene, motion)?;
    let records = sim.run(|_, _| {})?;
    let m = sim.mass_kg();
    let over = (force_n - SLIP_ONSET_MU * m * SLIP_ONSET_G).max(0.0);
    let t = records.last().map_or(0.0, |r| r.t_s);
    Ok(SlipOnsetPoint { force_n, kinetic_energy_j: records.last().map_or(0.0, |r| r.kinetic_energy_j), analytic_j: t * t / (2.0 * m) * over * over })
}
