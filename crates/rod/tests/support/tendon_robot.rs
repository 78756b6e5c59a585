//! The Continuum Robotics Lab's two-segment tendon-driven robot as rodlab
//! models it: shared by `tests/analytic.rs` (its disks against their
//! model's) and `crates/bench/benches/statics.rs` (its solve time beside theirs).

use rod::{Cable, Material, Rod};

/// Disks every 20 mm along the backbone.
pub const DISK_SPACING_M: f64 = 0.02;

/// Their example robot (a 0.4 m nitinol backbone of radius 0.7 mm, E 54
/// GPa, no gravity; six tendons 10 mm off it, three to each segment's end
/// at 90, -30 and 210 degrees, through every disk before it) in 40
/// sections (two between disks: 1.7 um from the converged shape; one:
/// 20 um) of `subsegments` sub-segments.
pub fn tendon_robot(subsegments: usize) -> Rod {
    let (e_pa, radius_m, pitch_m) = (54e9, 0.7e-3, 0.01);
    let mut rod = Rod::uniform_cylinder(0.4, radius_m, Material { e_pa, g_pa: e_pa / 2.6, rho_kg_m3: 6450.0 }, 40);
    rod.subsegments_per_section = subsegments;
    rod.gravity_m_s2 = lie::Vec3::zeros();
    let channel = rod::PathRadius { points: vec![(0.0, pitch_m)] };
    rod.cables = (0..6)
        .map(|k| {
            let end = if k < 3 { 10 } else { 20 };
            Cable {
                path_radius: Some(channel.clone()),
                guides_m: (1..=end).map(|d| DISK_SPACING_M * d as f64).collect(),
                ..Cable::new(format!("t{}", k + 1), f64::to_radians([90.0, -30.0, 210.0][k % 3]), DISK_SPACING_M * end as f64)
            }
        })
        .collect();
    rod
}
