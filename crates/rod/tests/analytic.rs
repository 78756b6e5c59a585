//! Analytic solutions (science §5): exact arcs and helices, pure bending,
//! a cable at constant offset, small-load cantilevers.

use lie::{Mat3, Vec3, Vec6};
use rod::statics::{model_for, solve};
use rod::{Cable, Loads, Material, Model, NewtonOptions, Profile, Rod, StrainModes};
use std::f64::consts::PI;

#[path = "support/tendon_robot.rs"]
mod tendon_robot;

/// Rotation by angle `a` about unit axis `n` (Rodrigues), independent of `lie`.
fn rodrigues(n: &Vec3, a: f64) -> Mat3 {
    let k = Mat3::new(0.0, -n.z, n.y, n.z, 0.0, -n.x, -n.y, n.x, 0.0);
    Mat3::identity() + a.sin() * k + (1.0 - a.cos()) * k * k
}

/// Centre line and frame of a rod with constant curvature/torsion K and
/// Q = e1: a helix about K.
fn helix(k: &Vec3, s: f64) -> (Vec3, Mat3) {
    let th = k.norm();
    if th == 0.0 {
        return (Vec3::x() * s, Mat3::identity());
    }
    let n = k / th;
    let e1 = Vec3::x();
    let along = n * n.dot(&e1);
    let p = along * s + (e1 - along) * ((th * s).sin() / th) + n.cross(&e1) * (2.0 * (0.5 * th * s).sin().powi(2) / th);
    (p, rodrigues(&n, th * s))
}

#[test]
fn constant_strain_gives_exact_arc_and_helix_for_any_subsegment_count() {
    let base = Rod::uniform_cylinder(0.7, 0.01, Material { e_pa: 1e6, g_pa: 4e5, rho_kg_m3: 1000.0 }, 3);
    let cases = [
        Vec3::new(0.0, 4.0, 0.0),    // planar arc
        Vec3::new(0.0, 0.0, -9.0),   // planar arc, other plane, > 2 pi total angle
        Vec3::new(3.0, 0.0, 0.0),    // pure torsion: straight, twisting frame
        Vec3::new(2.5, -1.5, 3.0),   // helix
        Vec3::new(1e-9, 2e-10, 0.0), // tiny curvature
    ];
    for k in cases {
        for (sections, sub) in [(1, 1), (1, 2), (2, 3), (3, 7), (5, 16)] {
            let mut rod = base.with_equal_sections(sections);
            rod.subsegments_per_section = sub;
            let model = Model::new(&rod, &[]);
            let q = model.uniform_q(&Vec6::new(k.x, k.y, k.z, 1.0, 0.0, 0.0));
            let frames = model.frames(&q);
            for (x, g) in model.joint_x_m.iter().zip(&frames.joints) {
                let (p, r) = helix(&k, *x);
                assert!((g.pos - p).norm() < 1e-12, "K {k:?} sections {sections} sub {sub} X {x}: {} vs {}", g.pos, p);
                assert!((g.rot - r).norm() < 1e-12);
            }
        }
    }
}

/// A rod with bending stiffness EI = 1 N m^2 and length 1 m.
fn unit_bending_rod(sections: usize) -> Rod {
    let r: f64 = 0.05;
    let i = PI * r.powi(4) / 4.0;
    let e = 1.0 / i;
    let mut rod = Rod::uniform_cylinder(1.0, r, Material { e_pa: e, g_pa: e / 3.0, rho_kg_m3: 1000.0 }, sections);
    rod.gravity_m_s2 = Vec3::zeros();
    rod
}

#[test]
fn pure_bending_matches_simsoft_table() {
    // science §5: tip (x, z) for tau = 1..5 N m, EI = 1, L = 1.
    let table = [(0.841471, -0.459698), (0.454649, -0.708073), (0.047040, -0.663331), (-0.189201, -0.413411), (-0.191785, -0.143268)];
    for sections in [1, 3] {
        let rod = unit_bending_rod(sections);
        for (i, (x_tab, z_tab)) in table.iter().enumerate() {
            let tau = (i + 1) as f64;
            let loads = Loads::none().with_tip(1.0, Vec3::zeros(), Vec3::new(0.0, tau, 0.0));
            let model = model_for(&rod, &loads);
            let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
            let tip = model.frames(&sol.q).joints.last().unwrap().pos;
            // Exact: p = (sin tau / tau, 0, -(1 - cos tau) / tau).
            let exact = Vec3::new(tau.sin() / tau, 0.0, -(1.0 - tau.cos()) / tau);
            assert!((tip - exact).norm() < 1e-9, "tau {tau}: {tip} vs {exact}");
            // And the published 6-digit table.
            assert!((tip.x - x_tab).abs() < 1e-6 && (tip.z - z_tab).abs() < 1e-6, "tau {tau}");
            println!(
                "tau {tau}: tip ({:.6}, {:.6}) table ({x_tab}, {z_tab}), {} Newton iterations, {} load steps",
                tip.x, tip.z, sol.iterations, sol.load_steps
            );
        }
    }
}

#[test]
fn cable_at_constant_offset_bends_into_arc() {
    let (e, g, r) = (2e6, 7e5, 0.01);
    let inset = 0.002;
    let d = r - inset;
    let mut rod = Rod::uniform_cylinder(0.3, r, Material { e_pa: e, g_pa: g, rho_kg_m3: 1000.0 }, 2);
    rod.gravity_m_s2 = Vec3::zeros();
    for (angle_deg, tension) in [(0.0, 0.5), (90.0, 1.0), (225.0, 2.0)] {
        rod.cables = vec![Cable { inset_m: inset, ..Cable::new("c", f64::to_radians(angle_deg), 0.3) }];
        let loads = Loads::none().with_tensions(&[tension]);
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        let i = PI * r.powi(4) / 4.0;
        let a = PI * r * r;
        let kappa = tension * d / (e * i);
        let dir = Vec3::new(0.0, f64::to_radians(angle_deg).cos(), f64::to_radians(angle_deg).sin());
        // Bending towards the cable: K = kappa * (e1 x dir).
        let k_exact = Vec3::x().cross(&dir) * kappa;
        for x in [0.0, 0.1, 0.3] {
            let xi = model.strain_at(x, &sol.q);
            let k = lie::angular(&xi);
            assert!((k - k_exact).norm() <= 1e-6 * kappa, "angle {angle_deg}: K {k} vs {k_exact}");
            let axial = xi[3] - 1.0;
            assert!((axial + tension / (e * a)).abs() <= 1e-6 * tension / (e * a));
            assert!(xi[4].abs() < 1e-12 && xi[5].abs() < 1e-12 && xi[0].abs() < 1e-12);
        }
    }
}

/// Channels in a tapered arm (#45): a cable in a straight channel (a
/// constant distance d from the centre line) bends the rod by the moment
/// T d at every section, so the tip turns by T d times the integral of
/// 1 / (E I(x)), whatever the section does; a cable along the surface
/// bends it by T (r(x) - inset) instead. Both against that quadrature; and
/// a channel whose radius table is the surface path gives the same
/// strains as the surface cable to 1e-9.
#[test]
fn a_straight_channel_in_a_tapered_rod_bends_it_by_its_own_moment_arm() {
    let (l, e, g) = (0.2, 2.0e5, 6.7e4);
    let (r_base, r_tip, inset, d_channel, tension) = (0.01, 0.005, 0.001, 0.003, 0.05);
    let mut rod = Rod::uniform_cylinder(l, r_base, Material { e_pa: e, g_pa: g, rho_kg_m3: 1100.0 }, 8);
    rod.cross_section = rod::CrossSection::round(Profile::Linear { base_m: r_base, tip_m: r_tip }, rod.cross_section.body);
    rod.subsegments_per_section = 8;
    rod.gravity_m_s2 = Vec3::zeros();
    let radius = |x: f64| r_base + (r_tip - r_base) * x / l;
    let tip_angle = |rod: &Rod| {
        let loads = Loads::none().with_tensions(&[tension]);
        let model = model_for(rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        let tip = model.frames(&sol.q).joints.last().unwrap().rot;
        (tip[(2, 0)].atan2(tip[(0, 0)]), model, sol.q)
    };
    // The moment arm's integral: T d(x) / (E pi r(x)^4 / 4), Simpson on 2,000 intervals.
    let quadrature = |arm: &dyn Fn(f64) -> f64| {
        let n = 2000;
        let f = |x: f64| tension * arm(x) / (e * PI * radius(x).powi(4) / 4.0);
        let h = l / n as f64;
        (0..=n)
            .map(|k| {
                f(k as f64 * h) * h / 3.0
                    * if k == 0 || k == n {
                        1.0
                    } else if k % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    }
            })
            .sum::<f64>()
    };
    // A cable at -z (angle 270 deg) bends the tip towards -z.
    let cable = |path: Option<rod::PathRadius>, inset_m: f64| Cable { inset_m, path_radius: path, ..Cable::new("c", 1.5 * PI, l) };
    rod.cables = vec![cable(Some(rod::PathRadius { points: vec![(0.0, d_channel)] }), 0.0)];
    let (channel, _, _) = tip_angle(&rod);
    let channel_exact = quadrature(&|_| d_channel);
    rod.cables = vec![cable(None, inset)];
    let (surface, surface_model, surface_q) = tip_angle(&rod);
    let surface_exact = quadrature(&|x| radius(x) - inset);
    println!("tip turns {channel:.6} rad in a straight channel ({channel_exact:.6} by quadrature), {surface:.6} along the surface ({surface_exact:.6})");
    for (found, exact) in [(channel, channel_exact), (surface, surface_exact)] {
        assert!((found.abs() / exact - 1.0).abs() < 1e-3, "{found} vs {exact}");
    }
    assert!((channel.abs() / surface.abs() - 1.0).abs() > 0.2, "the channel's arm is not the surface's");
    // The surface path as a radius table (linear: two points) gives today's strains.
    rod.cables = vec![cable(Some(rod::PathRadius { points: vec![(0.0, r_base - inset), (l, r_tip - inset)] }), 0.0)];
    let (_, table_model, table_q) = tip_angle(&rod);
    let worst = (0..=20)
        .map(|k| (table_model.strain_at(l * k as f64 / 20.0, &table_q) - surface_model.strain_at(l * k as f64 / 20.0, &surface_q)).amax())
        .fold(0.0, f64::max);
    println!("radius table against the surface path: strains differ by {worst:.1e}");
    assert!(worst < 1e-9, "{worst}");
}

/// A cable through guide disks (#45) runs straight between them: as the
/// disks come closer it becomes the continuous channel. A rod bent through
/// about a radian by a cable 8 mm off its axis: the tip's distance from
/// the continuous routing's falls as the square of the disks' spacing
/// (the chord's sag between disks), and with 64 disks it is within 0.1 %
/// of the tip's deflection.
#[test]
fn a_cable_through_closer_and_closer_disks_becomes_the_continuous_channel() {
    let (l, r, inset, tension) = (0.2, 0.01, 0.002, 1.0);
    let mut rod = Rod::uniform_cylinder(l, r, Material { e_pa: 2.0e5, g_pa: 6.7e4, rho_kg_m3: 1100.0 }, 8);
    rod.subsegments_per_section = 8;
    rod.gravity_m_s2 = Vec3::zeros();
    let tip = |guides_m: Vec<f64>| {
        let mut rod = rod.clone();
        rod.cables = vec![Cable { inset_m: inset, guides_m, ..Cable::new("c", 0.5 * PI, l) }];
        let loads = Loads::none().with_tensions(&[tension]);
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        model.frames(&sol.q).joints.last().unwrap().pos
    };
    let continuous = tip(vec![]);
    let deflection_m = (continuous - Vec3::new(l, 0.0, 0.0)).norm();
    let mut gaps = vec![];
    for n in [8, 16, 32, 64] {
        let disks: Vec<f64> = (1..=n).map(|k| l * k as f64 / n as f64).collect();
        let gap = (tip(disks) - continuous).norm();
        println!("{n} disks: tip {:.3} mm from the continuous channel's ({:.4} % of the deflection)", gap * 1e3, 100.0 * gap / deflection_m);
        gaps.push(gap);
    }
    for w in gaps.windows(2) {
        let ratio = w[0] / w[1];
        assert!((3.5..4.5).contains(&ratio), "halving the spacing divides the gap by {ratio}, not 4");
    }
    assert!(gaps[3] < 1e-3 * deflection_m, "{} of {deflection_m}", gaps[3]);
}

/// Guided routing against a peer (#45): the Continuum Robotics Lab's
/// two-segment tendon-driven robot (0.4 m nitinol backbone, 20 disks, six
/// tendons 10 mm off it) under four load cases of tendon tensions up to 4 N
/// and a tip force, as their subsegment Cosserat rod model puts its disks
/// (`datasets/tdcr-disks`, written by their public C++ code).
///
/// - Their model with each disk taking a passing tendon's whole pull (what
///   rodlab's cable does: the gradient of tension times length): every
///   disk within 0.01 mm (4.5 um at most, their ODE's own tolerance).
/// - Their code as published drops the part of that pull along the disk's
///   normal. Where a tendon passes the first segment's end, bent unevenly
///   (cases 0 and 3), that moves their tip by 0.08-0.13 mm. The cases with
///   one segment's tendons agree within 0.01 mm; in all four, rodlab's
///   distance from the published disks is their two variants' distance
///   from each other to 0.01 mm.
/// - With their convention (`guide_reaction = "disk_plane"`, on 80
///   sections of constant strain, see below): every disk within 0.01 mm
///   of their code as published (7.3 um at most), in all four cases.
///
/// Their frame has the backbone along z and the tendons' angles from x
/// towards y; rodlab's has it along x and angles from y towards z.
#[test]
fn a_tendon_robot_through_guide_disks_puts_its_disks_where_the_continuum_robotics_labs_model_does() {
    let read = |name: &str| -> Vec<Vec<f64>> {
        let path = format!("{}/../../datasets/tdcr-disks/{name}", env!("CARGO_MANIFEST_DIR"));
        let table = std::fs::read_to_string(path).unwrap();
        table.lines().skip(1).map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect()
    };
    let (published, full_reaction) = (read("disk-positions.csv"), read("disk-positions-full-reaction.csv"));
    let spacing_m = tendon_robot::DISK_SPACING_M;
    let rod = tendon_robot::tendon_robot(16);
    let ours = |w: Vec3| Vec3::new(w.z, w.x, w.y);
    let disk = |r: &Vec<f64>| ours(Vec3::new(r[11], r[12], r[13]));
    for case in 0..4 {
        let rows = |t: &[Vec<f64>]| -> Vec<Vec<f64>> { t.iter().filter(|r| r[0] == case as f64).cloned().collect() };
        let (theirs, theirs_full) = (rows(&published), rows(&full_reaction));
        assert!(theirs.len() == 21 && theirs_full.len() == 21, "case {case}: 21 disks");
        let (tensions, force) = (&theirs[0][1..7], ours(Vec3::new(theirs[0][7], theirs[0][8], theirs[0][9])));
        let loads = Loads::none().with_tensions(tensions).with_tip(0.4, force, Vec3::zeros());
        let shape = |rod: &Rod| {
            let model = model_for(rod, &loads);
            let frames = model.frames(&solve(&model, &loads, None, &NewtonOptions::default()).unwrap().q);
            theirs.iter().map(|p| frames.joints[model.joint_at(spacing_m * p[10])].pos).collect::<Vec<Vec3>>()
        };
        // Their convention drops what lies along a disk's normal, so it
        // needs the normal where a tendon ends and the strain jumps: PLS's
        // continuous strain smears the jump and converges as h (0.045 mm
        // at 40 sections, 0.010 at 160); a constant strain per section,
        // sections ending at the disks, keeps it (1.6 um at 160).
        let mut in_plane = rod.clone();
        in_plane.cables.iter_mut().for_each(|c| c.guide_reaction = rod::GuideReaction::DiskPlane);
        in_plane.strain_basis = rod::StrainBasis::Constant;
        in_plane.section_lengths_m = vec![0.4 / 80.0; 80];
        in_plane.subsegments_per_section = 1;
        let (disks, disks_in_plane) = (shape(&rod), shape(&in_plane));
        let (mut from_full, mut from_published, mut variants_apart, mut in_plane_from_published): (f64, f64, f64, f64) = (0.0, 0.0, 0.0, 0.0);
        for (((p, f), at), at_in_plane) in theirs.iter().zip(&theirs_full).zip(&disks).zip(&disks_in_plane) {
            from_full = from_full.max((at - disk(f)).norm());
            from_published = from_published.max((at - disk(p)).norm());
            variants_apart = variants_apart.max((at - disk(p)).norm() - (disk(f) - disk(p)).norm());
            in_plane_from_published = in_plane_from_published.max((at_in_plane - disk(p)).norm());
        }
        let tip = disk(&theirs[20]);
        println!(
            "case {case}: tensions {tensions:?} N, tip force {:?} N, their tip ({:.2}, {:.2}, {:.2}) mm: rodlab's disks within {:.4} mm of the full-reaction variant's, {:.4} mm of the published (the variants {:.4} mm apart at the tip)",
            force.as_slice(),
            tip.x * 1e3,
            tip.y * 1e3,
            tip.z * 1e3,
            from_full * 1e3,
            from_published * 1e3,
            (disk(&theirs_full[20]) - tip).norm() * 1e3
        );
        println!("  with guide_reaction = \"disk_plane\" (their convention): within {:.4} mm of the published", in_plane_from_published * 1e3);
        assert!(from_full < 1e-5, "case {case}: a disk {} mm from the full-reaction variant's", from_full * 1e3);
        assert!(in_plane_from_published < 1e-5, "case {case}: disk_plane: a disk {} mm from the published model's", in_plane_from_published * 1e3);
        assert!(variants_apart.abs() < 1e-5, "case {case}: the gap to the published model is not the variants' ({} mm)", variants_apart * 1e3);
        if case == 1 || case == 2 {
            assert!(from_published < 1e-5, "case {case}: a disk {} mm from the published model's", from_published * 1e3);
        }
    }
}

/// A stiff rod (5 mm radius, E 1e8 Pa) of length `l` curved at rest into a
/// quarter circle about its y axis (the tangent turns towards -z, the
/// inner side), without gravity, in `sections` of `subsegments`: the rod,
/// its E I and its rest curvature.
fn quarter_circle(l: f64, sections: usize, subsegments: usize) -> (Rod, f64, f64) {
    let (r, e) = (0.005, 1.0e8);
    let kappa_0 = 0.5 * PI / l;
    let mut rod = Rod::uniform_cylinder(l, r, Material { e_pa: e, g_pa: e / 2.9, rho_kg_m3: 1100.0 }, sections);
    rod.subsegments_per_section = subsegments;
    rod.gravity_m_s2 = Vec3::zeros();
    rod.rest_curvature_per_m = Vec3::new(0.0, kappa_0, 0.0);
    (rod, e * PI * r.powi(4) / 4.0, kappa_0)
}

/// The capstan law (#45): a stiff rod curved at rest into a quarter
/// circle, a cable with mu 0.2 in a channel on its inner side. Beyond any
/// section, the cable's pull is its tension there at the channel's radius
/// d, so the rod's bending moment is T(s) d, and its curvature beyond rest
/// gives T(s) = E I (kappa(s) - kappa_0) / d: an independent reading of the
/// tension. Pulled in, T(s) = T_0 exp(-mu theta(s)), theta the angle the
/// rod has turned through by s; let out, exp(+mu theta(s)). Within 0.1 %
/// along the rod (1.5e-4; near the tip theta 1.53 rad, the tension 26 %
/// below or 36 % above the base's); frictionless, both ways give the same
/// shape.
#[test]
fn a_cable_rubbing_in_a_curved_channel_follows_the_capstan_law() {
    use rod::statics::CableSlide;
    let (l, d, mu, t0) = (0.2, 0.003, 0.2, 1.0);
    let (rod, ei, kappa_0) = quarter_circle(l, 16, 4);
    let shape = |mu: f64, slide: CableSlide| {
        let mut rod = rod.clone();
        let channel = rod::PathRadius { points: vec![(0.0, d)] };
        rod.cables = vec![Cable { path_radius: Some(channel), friction_mu: mu, ..Cable::new("c", 1.5 * PI, l) }];
        let loads = Loads { cable_slide: vec![slide], ..Loads::none().with_tensions(&[t0]) };
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        (model, sol.q)
    };
    for (slide, sign) in [(CableSlide::PulledIn, -1.0), (CableSlide::LetOut, 1.0)] {
        let (model, q) = shape(mu, slide);
        let mut worst: f64 = 0.0;
        for k in 0..16 {
            let s = l * (k as f64 + 0.5) / 16.0;
            let from_strain = ei * (model.strain_at(s, &q)[1] - kappa_0) / d;
            // The angle turned by s: the frame's x axis against the base's.
            let frame = model.frames(&q);
            let (j0, j1) = (model.joint_at(s - l / 32.0), model.joint_at(s + l / 32.0));
            let angle = |j: usize| -frame.joints[j].rot[(2, 0)].atan2(frame.joints[j].rot[(0, 0)]);
            let theta = 0.5 * (angle(j0) + angle(j1));
            let capstan = t0 * (sign * mu * theta).exp();
            worst = worst.max((from_strain / capstan - 1.0).abs());
            if k == 15 {
                println!("{slide:?}: near the tip theta {theta:.4} rad, tension from the curvature {from_strain:.5} N, capstan {capstan:.5} N");
            }
        }
        println!("{slide:?}: worst relative difference along the rod {worst:.2e}");
        assert!(worst < 1e-3, "{slide:?}: {worst}");
    }
    let (m, pulled) = shape(0.0, CableSlide::PulledIn);
    let (_, let_out) = shape(0.0, CableSlide::LetOut);
    assert!((&pulled - &let_out).amax() < 1e-9, "frictionless, the two ways agree");
    assert!(m.rod.cables[0].friction_mu == 0.0);
}

/// Stick within the friction cone (#45): the quarter circle's cable (mu
/// 0.2, continuous channel) pulled in to 1 N, then let out to 0.8 N. It
/// slides back only near the base, where the let-out profile 0.8
/// exp(+mu theta) lies below the one it stopped with, exp(-mu theta);
/// beyond theta* = ln(1.25) / (2 mu) = 0.558 rad friction holds the old
/// profile. The tension read from the curvature follows the smaller of the
/// two within 0.1 % along the rod, with both parts present, but in the
/// sections where they meet (within 5 % of each other: the tension's kink
/// there is more than a section's linear strain can follow) within 0.5 %;
/// pulled in again from 0.6 N to 0.7 N, the larger of 0.7 exp(-mu theta)
/// and 0.6 exp(+mu theta). Let out all the way (0.3 N, the meeting point
/// beyond the tip) it is the plain let-out profile.
#[test]
fn a_cable_let_out_after_a_pull_slides_only_near_the_base() {
    use rod::statics::CableSlide;
    let (l, d, mu) = (0.2, 0.003, 0.2);
    let (rod, ei, kappa_0) = quarter_circle(l, 16, 4);
    for (slide, t_n, reversal_n, sign) in [(CableSlide::LetOut, 0.8, 1.0, 1.0), (CableSlide::PulledIn, 0.7, 0.6, -1.0), (CableSlide::LetOut, 0.3, 1.0, 1.0)] {
        let mut rod = rod.clone();
        let channel = rod::PathRadius { points: vec![(0.0, d)] };
        rod.cables = vec![Cable { path_radius: Some(channel), friction_mu: mu, ..Cable::new("c", 1.5 * PI, l) }];
        let loads = Loads { cable_slide: vec![slide], cable_reversal_n: vec![Some(reversal_n)], ..Loads::none().with_tensions(&[t_n]) };
        let model = model_for(&rod, &loads);
        let q = solve(&model, &loads, None, &NewtonOptions::default()).unwrap().q;
        let frame = model.frames(&q);
        let (mut worst, mut worst_where_they_meet, mut sliding, mut held) = (0.0f64, 0.0f64, 0, 0);
        for k in 0..16 {
            let s = l * (k as f64 + 0.5) / 16.0;
            let from_strain = ei * (model.strain_at(s, &q)[1] - kappa_0) / d;
            let (j0, j1) = (model.joint_at(s - l / 32.0), model.joint_at(s + l / 32.0));
            let angle = |j: usize| -frame.joints[j].rot[(2, 0)].atan2(frame.joints[j].rot[(0, 0)]);
            let theta = 0.5 * (angle(j0) + angle(j1));
            let (slides, stays) = (t_n * (sign * mu * theta).exp(), reversal_n * (-sign * mu * theta).exp());
            let expected = if sign > 0.0 { slides.min(stays) } else { slides.max(stays) };
            let error = (from_strain / expected - 1.0).abs();
            if (slides - stays).abs() < 0.05 * expected {
                worst_where_they_meet = worst_where_they_meet.max(error);
                continue;
            }
            if expected == slides {
                sliding += 1;
            } else {
                held += 1;
            }
            worst = worst.max(error);
        }
        println!(
            "{slide:?} to {t_n} N after a reversal at {reversal_n} N: {sliding} sections sliding, {held} held; tension from the curvature within {worst:.2e} (where they meet {worst_where_they_meet:.2e})"
        );
        assert!(worst < 1e-3 && worst_where_they_meet < 5e-3, "{slide:?} {t_n}: {worst}, {worst_where_they_meet}");
        if t_n == 0.3 {
            assert!(held == 0 && sliding > 12, "let out all the way: {sliding} sliding, {held} held");
        } else {
            assert!(sliding >= 2 && held >= 2, "{slide:?} {t_n}: {sliding} sliding, {held} held");
        }
    }
}

/// The capstan law at guide disks (#45): the stiff quarter circle of the
/// test above, its cable through eight disks on the inner side, mu 0.2.
/// Across each straight piece the rod's bending moment is the piece's
/// tension times its line's arm about the section, so the curvature at the
/// piece's middle reads the tension; it is the base's times the product of
/// the per-disk factors exp(-+mu theta_j) of the disks before it, theta_j
/// the turn between the pieces the solved holes make: within 1e-6 (0.758
/// after seven disks pulled in, 1.320 let out), and 1 without friction.
#[test]
fn a_cable_rubbing_at_guide_disks_loses_a_capstan_factor_at_each() {
    use rod::statics::CableSlide;
    let (l, d, mu, t0) = (0.2, 0.003, 0.2, 1.0);
    // The moment's arm bulges between disks (the chord's sag): 16 sections
    // a piece resolve it (2 sections a piece read 2 % off).
    let (mut rod, ei, kappa_0) = quarter_circle(l, 128, 1);
    let disks: Vec<f64> = (1..=8).map(|k| l * k as f64 / 8.0).collect();
    for (slide, sign, mu) in [(CableSlide::PulledIn, -1.0, 0.0), (CableSlide::PulledIn, -1.0, mu), (CableSlide::LetOut, 1.0, mu)] {
        let channel = rod::PathRadius { points: vec![(0.0, d)] };
        rod.cables = vec![Cable { path_radius: Some(channel), guides_m: disks.clone(), friction_mu: mu, ..Cable::new("c", 1.5 * PI, l) }];
        let loads = Loads { cable_slide: vec![slide], ..Loads::none().with_tensions(&[t0]) };
        let model = model_for(&rod, &loads);
        let q = solve(&model, &loads, None, &NewtonOptions::default()).unwrap().q;
        let frames = model.frames(&q);
        let hole = |x: f64| frames.joints[model.joint_at(x)].transform_point(&Vec3::new(0.0, 0.0, -d));
        let holes: Vec<Vec3> = std::iter::once(0.0).chain(disks.iter().copied()).map(hole).collect();
        let dirs: Vec<Vec3> = holes.windows(2).map(|w| (w[1] - w[0]).normalize()).collect();
        let (mut factor, mut worst) = (1.0, 0.0f64);
        for (i, u) in dirs.iter().enumerate() {
            if i > 0 {
                factor *= (sign * mu * dirs[i - 1].dot(u).clamp(-1.0, 1.0).acos()).exp();
            }
            let s = l * (i as f64 + 0.5) / 8.0;
            let section = frames.joints[model.joint_at(s)];
            let arm = (holes[i] - section.pos).cross(u).dot(&section.rot.column(1).into_owned()).abs();
            let from_strain = ei * (model.strain_at(s, &q)[1] - kappa_0).abs() / arm;
            worst = worst.max((from_strain / (t0 * factor) - 1.0).abs());
        }
        println!("{slide:?}: after 7 disks the factor is {factor:.5}; tensions read from the curvature within {worst:.2e}");
        assert!(worst < 1e-5, "{slide:?}: {worst}");
    }
}

#[test]
fn small_load_cantilever_matches_beam_theory() {
    // Stubby rod so that shear deflection is visible in Timoshenko.
    let (l, r, e, g): (f64, f64, f64, f64) = (0.1, 0.02, 1e6, 1e6 / 3.0);
    let i = PI * r.powi(4) / 4.0;
    let a = PI * r * r;
    let p = 1e-4;
    let bending = p * l.powi(3) / (3.0 * e * i);
    let shear = p * l / (g * a);
    for (modes, expected) in [(StrainModes::EULER_BERNOULLI, bending), (StrainModes::TIMOSHENKO, bending + shear)] {
        let mut rod = Rod::uniform_cylinder(l, r, Material { e_pa: e, g_pa: g, rho_kg_m3: 1000.0 }, 4).with_modes(modes);
        rod.subsegments_per_section = 16;
        rod.gravity_m_s2 = Vec3::zeros();
        let loads = Loads::none().with_tip(l, Vec3::new(0.0, 0.0, -p), Vec3::zeros());
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        let tip = model.frames(&sol.q).joints.last().unwrap().pos;
        let rel = (-tip.z - expected).abs() / expected;
        println!("{modes:?}: tip deflection {:.6e} m, beam theory {expected:.6e} m, rel. error {rel:.2e}", -tip.z);
        assert!(rel < 1e-3, "{modes:?}: rel {rel}");
        assert!(tip.y.abs() < 1e-15);
    }
    // Shear matters: the two answers differ by the shear term.
    assert!(shear / bending > 0.05);
}

/// A force off the centre line adds its moment (`PointLoad::offset_body_m`):
/// hung from a bracket beside the tip, a vertical force bends the rod as at
/// the centre and twists it by P y0 L / (G J); pulled along the axis at the
/// top edge of the tip face, the rod bends by (h F) L^2 / (2 E I). Small
/// loads, beam theory (Timoshenko with G A, circle J = pi r^4 / 2).
#[test]
fn a_tip_force_off_the_centre_line_adds_its_moment() {
    let (l, r, e, g): (f64, f64, f64, f64) = (0.1, 0.02, 1e6, 1e6 / 3.0);
    let i = PI * r.powi(4) / 4.0;
    let a = PI * r * r;
    let j = 2.0 * i;
    let mut rod = Rod::uniform_cylinder(l, r, Material { e_pa: e, g_pa: g, rho_kg_m3: 1000.0 }, 4);
    rod.subsegments_per_section = 16;
    rod.gravity_m_s2 = Vec3::zeros();
    let solve_with = |offset: Vec3, force: Vec3| {
        let loads = Loads {
            point_loads: vec![rod::PointLoad { x_m: l, offset_body_m: offset, force_n: force, moment_nm: Vec3::zeros(), follower: false }],
            ..Loads::none()
        };
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        *model.frames(&sol.q).joints.last().unwrap()
    };
    // Hung beside the tip: bending as at the centre, plus a twist.
    let (p, y0) = (1e-4, 0.015);
    let tip = solve_with(Vec3::new(0.0, y0, 0.0), Vec3::new(0.0, 0.0, -p));
    let deflection = p * l.powi(3) / (3.0 * e * i) + p * l / (g * a);
    let twist = -p * y0 * l / (g * j);
    let rotation = lie::log(&lie::Pose { rot: tip.rot, pos: Vec3::zeros() });
    println!("beside the tip: deflection {:.6e} m (beam {deflection:.6e}), twist {:.6e} rad (beam {twist:.6e})", -tip.pos.z, rotation[0]);
    assert!((-tip.pos.z / deflection - 1.0).abs() < 5e-3, "{} vs {deflection}", -tip.pos.z);
    assert!((rotation[0] / twist - 1.0).abs() < 5e-3, "{} vs {twist}", rotation[0]);
    // Pulled along the axis at the top edge: the moment h F bends it.
    let (f, h) = (1e-4, 0.02);
    let tip = solve_with(Vec3::new(0.0, 0.0, h), Vec3::new(f, 0.0, 0.0));
    let bent = -h * f * l * l / (2.0 * e * i);
    println!("pulled at the top edge: tip z {:.6e} m (beam {bent:.6e}), stretch {:.6e} m (beam {:.6e})", tip.pos.z, tip.pos.x - l, f * l / (e * a));
    assert!((tip.pos.z / bent - 1.0).abs() < 5e-3, "{} vs {bent}", tip.pos.z);
    assert!(((tip.pos.x - l) / (f * l / (e * a)) - 1.0).abs() < 5e-3);
}

/// The planar elastica `EI phi'' = -t x F`, `phi(0) = 0`, `phi'(L) = 0`,
/// integrated with RK4 (`steps` steps) for a tip force that is a function
/// of the tip angle; shooting on `phi'(0)` and the tip angle (Newton with
/// differences). Returns the tip position (u along the rod at rest, w
/// across) and angle. Independent of the rod crate.
fn elastica_tip(ei: f64, l: f64, force: impl Fn(f64) -> (f64, f64), steps: usize) -> (f64, f64, f64) {
    let run = |c: f64, phi_tip: f64| -> (f64, f64, f64, f64) {
        let (fu, fw) = force(phi_tip);
        // State (u, w, phi, phi'); t x F = cos(phi) F_w - sin(phi) F_u.
        let rhs = |y: [f64; 4]| [y[2].cos(), y[2].sin(), y[3], -(y[2].cos() * fw - y[2].sin() * fu) / ei];
        let h = l / steps as f64;
        let mut y = [0.0, 0.0, 0.0, c];
        for _ in 0..steps {
            let k1 = rhs(y);
            let k2 = rhs(std::array::from_fn(|i| y[i] + 0.5 * h * k1[i]));
            let k3 = rhs(std::array::from_fn(|i| y[i] + 0.5 * h * k2[i]));
            let k4 = rhs(std::array::from_fn(|i| y[i] + h * k3[i]));
            y = std::array::from_fn(|i| y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]));
        }
        (y[0], y[1], y[2], y[3])
    };
    let (mut c, mut phi) = (0.0, 0.0);
    for _ in 0..50 {
        let g = |c: f64, phi: f64| {
            let (_, _, p, dp) = run(c, phi);
            [dp, p - phi]
        };
        let r = g(c, phi);
        if r[0].abs() < 1e-13 && r[1].abs() < 1e-13 {
            break;
        }
        let e = 1e-7;
        let (a, b) = (g(c + e, phi), g(c, phi + e));
        let j = [[(a[0] - r[0]) / e, (b[0] - r[0]) / e], [(a[1] - r[1]) / e, (b[1] - r[1]) / e]];
        let det = j[0][0] * j[1][1] - j[0][1] * j[1][0];
        c -= (j[1][1] * r[0] - j[0][1] * r[1]) / det;
        phi -= (-j[1][0] * r[0] + j[0][0] * r[1]) / det;
    }
    let (u, w, p, _) = run(c, phi);
    (u, w, p)
}

/// A follower force at the tip, always across the tip's axis (`PointLoad`
/// with `follower`), against the elastica integrated independently: P L^2
/// / EI = 2 turns the tip by 55 degrees, where a dead force of the same
/// size turns it by 45; both within 5e-5 L of the converged elastica
/// (1.5e-5 found).
#[test]
fn a_follower_tip_force_matches_the_elastica() {
    let mut rod = unit_bending_rod(8);
    rod.modes = StrainModes::EULER_BERNOULLI;
    rod.subsegments_per_section = 16;
    let (ei, l, p) = (1.0, 1.0, 2.0);
    // The rod bends in its x-z plane: u = x, w = z; the force pushes along
    // the tip section's -z, which turns with it (follower) or stays (dead).
    let follower = elastica_tip(ei, l, |phi| (p * phi.sin(), -p * phi.cos()), 4000);
    let dead = elastica_tip(ei, l, |_| (0.0, -p), 4000);
    for (is_follower, (u, w, _)) in [(true, follower), (false, dead)] {
        let load = rod::PointLoad { x_m: l, offset_body_m: Vec3::zeros(), force_n: Vec3::new(0.0, 0.0, -p), moment_nm: Vec3::zeros(), follower: is_follower };
        let loads = Loads { point_loads: vec![load], ..Loads::none() };
        let model = model_for(&rod, &loads);
        let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
        let tip = model.frames(&sol.q).joints.last().unwrap().pos;
        println!("follower {is_follower}: tip ({:.6}, {:.6}), elastica ({u:.6}, {w:.6})", tip.x, tip.z);
        assert!((tip.x - u).abs() < 5e-5 && (tip.z - w).abs() < 5e-5, "follower {is_follower}: ({}, {}) vs ({u}, {w})", tip.x, tip.z);
    }
    println!("tip angle: follower {:.2} deg, dead {:.2} deg", follower.2.to_degrees(), dead.2.to_degrees());
    assert!((follower.2 - dead.2).abs() > 0.1, "the follower must make a difference here");
}
