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
    let head = on_flat_table(SLIP_ONSET_G, initial, (step_s, duration_s, "dynamic"), mu);
    format!("{head}[base]\nkind = \"free\"\nposition_m = [0.0, 0.0, 0.025]\n{extra}\n")
}

/// The scene text up to the base: gravity `g_m_s2` down, the initial
/// state, the time grid `(step_s, duration_s, mode)` and a flat table at
/// z = 0 with friction `mu`.
fn on_flat_table(g_m_s2: f64, initial: &str, time: (f64, f64, &str), mu: f64) -> String {
    let (step_s, duration_s, mode) = time;
    format!(
        r#"
gravity_m_s2 = [0.0, 0.0, -{g_m_s2}]
initial = "{initial}"
[time]
step_s = {step_s}
duration_s = {duration_s}
mode = "{mode}"
[table]
normal = [0.0, 0.0, 1.0]
mu = {mu}
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
    let scene =
        Scene::from_toml_str(&flat_scene(0.01, duration_s, SLIP_ONSET_MU, "rest", &load), "slip-onset scene").map_err(|e| SimError::Input(e.to_string()))?;
    let motion = BaseMotion::from_scene(&scene, &rod)?.expect("free base");
    let mut sim = Simulator::new(&rod, &scene, motion)?;
    // Only the end is compared: no step's record but the last is built.
    let mut last = None;
    sim.run_recording(usize::MAX, |r| last = Some((r.t_s, r.kinetic_energy_j)), |_, _| {})?;
    let (t, kinetic_energy_j) = last.expect("a run records its end");
    let m = sim.mass_kg();
    let over = (force_n - SLIP_ONSET_MU * m * SLIP_ONSET_G).max(0.0);
    Ok(SlipOnsetPoint { force_n, kinetic_energy_j, analytic_j: t * t / (2.0 * m) * over * over })
}

/// The shipped rod of the lying-rod scenes (`configs/rod/silicone-rod.toml`).
pub const SILICONE_ROD_TOML: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rod/silicone-rod.toml"));
/// The shipped partial-slip scene (`configs/scene/lying-rod-pull.toml`).
pub const LYING_ROD_PULL_TOML: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/scene/lying-rod-pull.toml"));

/// Height at which a uniform rod lying along the table rests \[m\]: its
/// radius less what its own weight sinks it into the contact's default
/// compliance (standard gravity, as the simulator takes it). A gripper
/// closed there carries none of the weight.
pub fn resting_height_m(rod: &Rod) -> f64 {
    let l = rod.length_m;
    let weight_n_m = rod.cross_section.properties(0.0, l).mass_per_length_kg_m * crate::contact::STANDARD_GRAVITY_M_S2;
    rod.cross_section.half_extents_m(0.0, l).1 - weight_n_m / crate::contact::default_foundation_modulus_pa(rod, 0.0)
}

/// A rod lying along +x on the table (z = 0), gripped at its base where it
/// rests, pulled by `pull_m` along -x in `duration_s` (linear ramp).
pub fn lying_pull_scene(rod: &Rod, mode: &str, step_s: f64, duration_s: f64, mu: f64, pull_m: f64) -> String {
    let z = resting_height_m(rod);
    let head = on_flat_table(9.81, "static", (step_s, duration_s, mode), mu);
    format!("{head}[base]\nkind = \"prescribed\"\nwaypoints = [[0.0, 0.0, 0.0, {z}, 0.0, 0.0, 0.0], [{duration_s}, -{pull_m}, 0.0, {z}, 0.0, 0.0, 0.0]]\n")
}

/// One step of a pulled lying rod against the bar on a Coulomb foundation.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PartialSlipPoint {
    pub t_s: f64,
    /// How far the base has been pulled \[m\].
    pub pull_m: f64,
    /// The base's axial force (what the gripper feels) \[N\].
    pub force_n: f64,
    /// `sqrt(2 mu q EA u0)` while the slip zone is shorter than the rod,
    /// `mu q L` once the whole rod slides \[N\].
    pub analytic_n: f64,
    /// Length of the sliding zone from the base (the analytic `F / (mu q)`
    /// is its prediction) \[m\].
    pub slip_zone_m: f64,
    /// Sum of the contact points' normal forces \[N\] (the weight, less
    /// what the gripper holds).
    pub normal_force_n: f64,
}

impl PartialSlipPoint {
    /// Whether the analytic partial-slip curve is the comparison: the slip
    /// zone spans three sections or more of `rod` (the strain basis can
    /// follow the tension's ramp) and not the whole rod.
    pub fn in_partial_slip(&self, rod: &Rod) -> bool {
        let section_m = rod.section_lengths_m[0];
        self.slip_zone_m >= 3.0 * section_m && self.slip_zone_m < rod.length_m - section_m
    }
}

/// Runs a pulled lying rod (scene from [`lying_pull_scene`] or the shipped
/// [`LYING_ROD_PULL_TOML`]) and compares every step with the analytic
/// bar on a Coulomb foundation: tension `N(x) = F - mu q x` over the
/// sliding zone `a = F / (mu q)`, none beyond, so the base moves by
/// `u0 = F^2 / (2 mu q EA)`.
pub fn partial_slip(rod: &Rod, scene: &Scene, mut progress: impl FnMut(usize, usize)) -> Result<Vec<PartialSlipPoint>, SimError> {
    let motion = BaseMotion::from_scene(scene, rod)?.ok_or_else(|| SimError::Input("the pull scene needs base waypoints".into()))?;
    let mu = scene.table.ok_or_else(|| SimError::Input("the pull scene needs a table".into()))?.mu;
    let mut sim = Simulator::new(rod, scene, motion)?;
    let l = rod.length_m;
    let weight_n_m = sim.mass_kg() * scene.gravity_m_s2.norm() / l;
    let ea_n = rod.cross_section.properties(0.0, l).stiffness_diag[3];
    let records = sim.run(&mut progress)?;
    let x0 = records[0].base_pose.pos.x;
    Ok(records
        .iter()
        .map(|r| {
            let pull_m = x0 - r.base_pose.pos.x;
            let slid: usize = r.contacts.iter().skip(1).take_while(|c| c.state == crate::ContactState::Slide).count();
            let slip_zone_m = if slid == 0 { 0.0 } else { r.contacts[slid].arc_m };
            let partial = (2.0 * mu * weight_n_m * ea_n * pull_m.max(0.0)).sqrt();
            PartialSlipPoint {
                t_s: r.t_s,
                pull_m,
                force_n: r.base_wrench_flange[3],
                analytic_n: partial.min(mu * weight_n_m * l),
                slip_zone_m,
                normal_force_n: r.normal_force_n,
            }
        })
        .collect())
}
