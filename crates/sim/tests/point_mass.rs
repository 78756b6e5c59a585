//! A hung mass is a point mass: its weight and its inertia at its offset.
//! Against Euler-Bernoulli closed forms for a cantilever with a tip mass
//! on a beam much lighter than it: the static deflection `m g L^3 / (3 E I)`
//! and the frequency of the swing `f = sqrt(3 E I / (m L^3)) / (2 pi)`.

use lie::Vec3;
use rod::{Material, Rod};
use sim::{BaseMotion, Scene, Simulator};

const LENGTH_M: f64 = 0.3;
const RADIUS_M: f64 = 0.003;
const E_PA: f64 = 1e9;
const MASS_KG: f64 = 0.05;

/// A slender cylinder (L / r = 100: shear negligible) a thousand times
/// lighter than the mass, with a marker at its tip.
fn light_beam() -> Rod {
    let mut rod = Rod::uniform_cylinder(LENGTH_M, RADIUS_M, Material::from_poisson(E_PA, 0.3, 1.0), 4);
    rod.subsegments_per_section = 4;
    rod.markers = vec![rod::Marker { arc_m: LENGTH_M, offset_body_m: Vec3::zeros() }];
    rod
}

fn stiffness_n_m() -> f64 {
    let i_m4 = std::f64::consts::PI * RADIUS_M.powi(4) / 4.0;
    3.0 * E_PA * i_m4 / LENGTH_M.powi(3)
}

fn scene(extra: &str) -> Scene {
    let text = format!(
        "{extra}\n[time]\nstep_s = 0.0013\nduration_s = 1.7\nmode = \"dynamic\"\n[base]\nkind = \"prescribed\"\nwaypoints = [[0.0, 0, 0, 0, 0, 0, 0], [1.7, 0, 0, 0, 0, 0, 0]]\n\
         [[load]]\nkind = \"point_mass\"\narc_m = {LENGTH_M}\nmass_kg = {MASS_KG}\n"
    );
    Scene::from_toml_str(&text, "point-mass.toml").unwrap()
}

fn run(rod: &Rod, scene: &Scene) -> Vec<sim::StepRecord> {
    let motion = BaseMotion::from_scene(scene, rod).unwrap().unwrap();
    Simulator::new(rod, scene, motion).unwrap().run(|_, _| {}).unwrap()
}

/// Its weight: the tip deflects m g L^3 / (3 E I) (0.69 mm, 0.2 % of L).
#[test]
fn a_hung_mass_weighs_on_the_tip_as_the_closed_form_says() {
    let rod = light_beam();
    let mut s = scene("gravity_m_s2 = [0.0, 0.0, -0.0981]\ninitial = \"static\"");
    s.duration_s = 0.0013;
    let records = run(&rod, &s);
    let deflection_m = -records[0].markers_m[0].z;
    let want_m = MASS_KG * 0.0981 / stiffness_n_m();
    println!("static tip deflection {:.4} mm, closed form {:.4} mm", deflection_m * 1e3, want_m * 1e3);
    assert!((deflection_m / want_m - 1.0).abs() < 0.01, "{deflection_m} vs {want_m}");
}

/// Its inertia: let go from a deflection (a point force that ends at the
/// start), the tip swings at sqrt(3 E I / (m L^3)) / (2 pi) (1.9 Hz).
#[test]
fn a_hung_mass_swings_at_the_euler_bernoulli_frequency() {
    let rod = light_beam();
    let s = scene(
        "gravity_m_s2 = [0.0, 0.0, 0.0]\ninitial = \"static\"\n[[load]]\nkind = \"point_force\"\narc_m = 0.3\nforce_n = [0.0, 0.005, 0.0]\nend_s = 0.0005",
    );
    let records = run(&rod, &s);
    // Times the tip crosses y = 0 going down (linear between steps).
    let y: Vec<(f64, f64)> = records.iter().map(|r| (r.t_s, r.markers_m[0].y)).collect();
    let crossings: Vec<f64> = y.windows(2).filter(|w| w[0].1 > 0.0 && w[1].1 <= 0.0).map(|w| w[0].0 + (w[1].0 - w[0].0) * w[0].1 / (w[0].1 - w[1].1)).collect();
    assert!(crossings.len() >= 3, "{crossings:?}");
    let period_s = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    let want_hz = (stiffness_n_m() / MASS_KG).sqrt() / std::f64::consts::TAU;
    println!("swing {:.4} Hz over {} periods, closed form {want_hz:.4} Hz", 1.0 / period_s, crossings.len() - 1);
    assert!((1.0 / period_s / want_hz - 1.0).abs() < 0.01, "{} Hz vs {want_hz} Hz", 1.0 / period_s);
}

/// The decay of the swing: Kelvin-Voigt damping of time constant tau on a
/// massless beam is a damper `tau k` beside its spring, so the swing's
/// damping ratio is `tau w / 2`. BDF2 keeps it (0.1 % off at 400 steps a
/// period); implicit Euler adds about w h / 2 of its own.
#[test]
fn bdf2_keeps_the_damping_of_the_swing_and_implicit_euler_adds_its_own() {
    let mut rod = light_beam();
    let omega_rad_s = (stiffness_n_m() / MASS_KG).sqrt();
    let zeta_want = 0.02;
    rod.damping = Some(rod::Damping::TimeConstant(2.0 * zeta_want / omega_rad_s));
    let pull =
        "gravity_m_s2 = [0.0, 0.0, 0.0]\ninitial = \"static\"\n[[load]]\nkind = \"point_force\"\narc_m = 0.3\nforce_n = [0.0, 0.005, 0.0]\nend_s = 0.0005";
    let measured = |integrator: &str| {
        let mut s = scene(pull);
        s.integrator = match integrator {
            "bdf2" => sim::Integrator::Bdf2,
            _ => sim::Integrator::ImplicitEuler,
        };
        s.duration_s = 2.6;
        let records = run(&rod, &s);
        // Positive peaks (a parabola through the largest sample and its
        // neighbours), then the logarithmic decrement over them.
        let y: Vec<(f64, f64)> = records.iter().map(|r| (r.t_s, r.markers_m[0].y)).collect();
        let peaks: Vec<f64> = y
            .windows(3)
            .filter(|w| w[1].1 > 0.0 && w[1].1 >= w[0].1 && w[1].1 > w[2].1)
            .map(|w| {
                let (a, b, c) = (w[0].1, w[1].1, w[2].1);
                let x = 0.5 * (a - c) / (a - 2.0 * b + c);
                b - 0.25 * (a - c) * x
            })
            .collect();
        assert!(peaks.len() >= 4, "{integrator}: {peaks:?}");
        let n = (peaks.len() - 1) as f64;
        let delta = (peaks[0] / peaks[peaks.len() - 1]).ln() / n;
        delta / (std::f64::consts::TAU.powi(2) + delta * delta).sqrt()
    };
    let (bdf2, euler) = (measured("bdf2"), measured("implicit-euler"));
    let h_s = scene(pull).step_s;
    println!("damping ratio of the swing: BDF2 {bdf2:.5}, implicit Euler {euler:.5} (w h / 2 = {:.5}), set {zeta_want}", omega_rad_s * h_s / 2.0);
    assert!((bdf2 / zeta_want - 1.0).abs() < 0.02, "BDF2: {bdf2} vs {zeta_want}");
    assert!(euler > zeta_want + 0.5 * omega_rad_s * h_s * 0.8, "implicit Euler damps beyond the material: {euler}");
}

/// Dry friction where the mass hangs: the hook resists the tip's turning
/// with a moment `M = r m g` whatever the swing. On the massless beam the
/// tip turns `3 / (2 L)` rad per metre of deflection, so the hook is a
/// Coulomb force `F = 3 M / (2 L)` on the swing, and a Coulomb oscillator
/// loses the same `2 F / k` of amplitude every half period (not the same
/// fraction, as a linear damper does). Let go from 6.6 mm (2 % of L), the
/// tip turns at up to 0.4 rad/s, 400 times the friction's smoothing.
#[test]
fn a_hooks_dry_friction_takes_the_same_amplitude_every_half_swing() {
    let rod = light_beam();
    let (g, radius_m) = (0.0981, 0.05);
    let s = scene(&format!(
        "gravity_m_s2 = [0.0, 0.0, -{g}]\ninitial = \"static\"\n[[load]]\nkind = \"point_force\"\narc_m = 0.3\nforce_n = [0.0, 0.05, 0.0]\nend_s = 0.0005"
    ));
    // BDF2: implicit Euler's own damping would take 2 % a half swing more.
    let mut s = s;
    s.integrator = sim::Integrator::Bdf2;
    let mut with_hook = s.clone();
    for l in with_hook.loads.iter_mut() {
        if let sim::LoadSpec::PointMass { hook_friction_radius_m, .. } = l {
            *hook_friction_radius_m = radius_m;
        }
    }
    let records = run(&rod, &with_hook);
    // Extremes of the swing (a parabola through each and its neighbours).
    let y: Vec<f64> = records.iter().map(|r| r.markers_m[0].y).collect();
    let extremes: Vec<f64> = y
        .windows(3)
        .filter(|w| (w[1] - w[0]) * (w[2] - w[1]) < 0.0)
        .map(|w| {
            let (a, b, c) = (w[0], w[1], w[2]);
            let x = 0.5 * (a - c) / (a - 2.0 * b + c);
            b - 0.25 * (a - c) * x
        })
        .collect();
    assert!(extremes.len() >= 6, "{extremes:?}");
    let drops_m: Vec<f64> = extremes.windows(2).map(|w| w[0].abs() - w[1].abs()).collect();
    let friction_n = 3.0 * radius_m * MASS_KG * g / (2.0 * LENGTH_M);
    let want_m = 2.0 * friction_n / stiffness_n_m();
    println!(
        "amplitude lost per half swing [um]: {:?}; closed form {:.2} um (from {:.1} um)",
        drops_m.iter().map(|d| (d * 1e6).round()).collect::<Vec<_>>(),
        want_m * 1e6,
        extremes[0].abs() * 1e6
    );
    // Each half swing loses the closed form's amplitude (344 um for 347),
    // the last as much as the first.
    for d in &drops_m[..5] {
        assert!((d / want_m - 1.0).abs() < 0.02, "{d} m vs {want_m} m: {drops_m:?}");
    }
    assert!((drops_m[4] / drops_m[0] - 1.0).abs() < 0.01, "{drops_m:?}");
    // Without the hook's friction the swing keeps its amplitude (to 1e-4).
    let free: Vec<f64> = run(&rod, &s).iter().map(|r| r.markers_m[0].y).collect();
    let free_extremes: Vec<f64> = free.windows(3).filter(|w| (w[1] - w[0]) * (w[2] - w[1]) < 0.0).map(|w| w[1].abs()).collect();
    assert!(free_extremes.len() >= 6 && (free_extremes[5] / free_extremes[0] - 1.0).abs() < 1e-4, "{free_extremes:?}");
}
