//! Sections that are not round (the rod file's `[section]`): rectangular
//! cantilevers against Timoshenko beam theory with Cowper's shear
//! coefficient, the twist of a rectangle against Saint-Venant's series
//! (and its published table), a general section equal to the rectangle it
//! describes, and the rod file's errors.

use lie::Vec3;
use rod::geometry::{rectangle_shear_coefficient, rectangle_torsion_constant_m4};
use rod::statics::{model_for, solve};
use rod::{CrossSection, GivenSection, Loads, Material, NewtonOptions, Rod, Shape};

const NU: f64 = 0.45;

/// A stubby silicone-like beam `w` x `h` (w along body y), 6 cm long,
/// weightless, Cosserat modes.
fn rectangular_rod(w: f64, h: f64) -> Rod {
    let m = Material::from_poisson(1e6, NU, 1000.0);
    let mut rod = Rod::uniform_cylinder(0.06, 0.01, m, 4);
    rod.cross_section = CrossSection { shape: Shape::solid_rectangle(w, h, NU), body: m };
    rod.subsegments_per_section = 16;
    rod.gravity_m_s2 = Vec3::zeros();
    rod
}

fn tip_under(rod: &Rod, force_n: Vec3, moment_nm: Vec3) -> lie::Pose {
    let loads = Loads::none().with_tip(rod.length_m, force_n, moment_nm);
    let model = model_for(rod, &loads);
    let sol = solve(&model, &loads, None, &NewtonOptions::default()).unwrap();
    *model.frames(&sol.q).joints.last().unwrap()
}

/// Tip deflection `P L^3 / (3 E I) + P L / (k G A)` along both axes, for
/// aspect ratios 1 and 3. Shear is 9-18 % of it in the deeper direction of these stubby beams, so
/// a shear coefficient of 1 instead of Cowper's 0.850 would miss by
/// 1.3 % or more.
#[test]
fn rectangular_cantilever_matches_timoshenko_beam_theory() {
    let m = Material::from_poisson(1e6, NU, 1000.0);
    let k = rectangle_shear_coefficient(NU);
    for (w, h) in [(0.02, 0.02), (0.03, 0.01), (0.01, 0.03)] {
        let rod = rectangular_rod(w, h);
        let (l, a, p) = (rod.length_m, w * h, 1e-4);
        // Along z: bending about y (I_y = w h^3 / 12).
        let iy = w * h.powi(3) / 12.0;
        let want_z = p * l.powi(3) / (3.0 * m.e_pa * iy) + p * l / (k * m.g_pa * a);
        let tip = tip_under(&rod, Vec3::new(0.0, 0.0, -p), Vec3::zeros());
        // Along y: bending about z (I_z = h w^3 / 12).
        let iz = h * w.powi(3) / 12.0;
        let want_y = p * l.powi(3) / (3.0 * m.e_pa * iz) + p * l / (k * m.g_pa * a);
        let tip_y = tip_under(&rod, Vec3::new(0.0, p, 0.0), Vec3::zeros());
        println!("{w} x {h}: along z {:.6e} m (beam {want_z:.6e}), along y {:.6e} m (beam {want_y:.6e})", -tip.pos.z, tip_y.pos.y);
        assert!((-tip.pos.z / want_z - 1.0).abs() < 5e-3, "{w} x {h} along z: {} vs {want_z}", -tip.pos.z);
        assert!((tip_y.pos.y / want_y - 1.0).abs() < 5e-3, "{w} x {h} along y: {} vs {want_y}", tip_y.pos.y);
        assert!(tip.pos.y.abs() < 1e-12 && tip_y.pos.z.abs() < 1e-12);
        // The shear term is there to be checked (in the deep direction).
        assert!(p * l / (k * m.g_pa * a) / want_z.min(want_y) > 0.08);
    }
}

/// Twist `T L / (G J)` of a square and a 3:1 rectangle, against the
/// series (to 1e-6) and against the published `beta` (0.141, 0.263;
/// Timoshenko & Goodier, Table 6) to 0.5 %.
#[test]
fn rectangle_twist_matches_saint_venant() {
    let m = Material::from_poisson(1e6, NU, 1000.0);
    for (w, h, beta) in [(0.02, 0.02, 0.141), (0.03, 0.01, 0.263)] {
        let rod = rectangular_rod(w, h);
        let t = 1e-5;
        let tip = tip_under(&rod, Vec3::zeros(), Vec3::new(t, 0.0, 0.0));
        let twist = lie::log(&lie::Pose { rot: tip.rot, pos: Vec3::zeros() })[0];
        let series = t * rod.length_m / (m.g_pa * rectangle_torsion_constant_m4(w, h));
        let (a, b) = (w.max(h), w.min(h));
        let table = t * rod.length_m / (m.g_pa * beta * a * b.powi(3));
        println!("{w} x {h}: twist {twist:.6e} rad, series {series:.6e}, table {table:.6e}");
        assert!((twist / series - 1.0).abs() < 1e-6, "{twist} vs {series}");
        assert!((twist / table - 1.0).abs() < 5e-3, "{twist} vs {table}");
    }
}

/// A general section given the rectangle's properties bends, twists and
/// weighs as the rectangle.
#[test]
fn general_section_equals_the_rectangle_it_describes() {
    let (w, h) = (0.03, 0.01);
    let rect = rectangular_rod(w, h);
    let mut given = rect.clone();
    given.cross_section.shape = Shape::Given(GivenSection::solid_rectangle(w, h, rectangle_shear_coefficient(NU)));
    for (f, t) in [(Vec3::new(0.0, 0.0, -1e-3), Vec3::zeros()), (Vec3::new(0.0, 2e-3, 0.0), Vec3::new(1e-5, 0.0, 0.0))] {
        let (a, b) = (tip_under(&rect, f, t), tip_under(&given, f, t));
        assert!((a.pos - b.pos).norm() < 1e-12 && (a.rot - b.rot).norm() < 1e-10);
    }
}

const RECTANGLE_TOML: &str = r#"
length_m = 0.1
sections_m = [0.05, 0.05]
[section]
shape = "rectangle"
width_m = 0.03
height_m = { base_m = 0.03, tip_m = 0.02 }
[material]
e_pa = 1e6
poisson = 0.45
rho_kg_m3 = 1100
"#;

/// The rod file: a tapered rectangle with Cowper's coefficient from its
/// Poisson's ratio, a tube's walls, a general section's shear areas, and
/// one-line errors naming the field.
#[test]
fn rod_file_sections() {
    let rod = Rod::from_toml_str(RECTANGLE_TOML, "rect.toml").unwrap();
    let p = rod.cross_section.properties(0.05, 0.1);
    let (w, h) = (0.03, 0.025);
    assert!((p.mass_per_length_kg_m - 1100.0 * w * h).abs() < 1e-12);
    assert!((p.stiffness_diag[1] - 1e6 * w * h.powi(3) / 12.0).abs() < 1e-12);
    assert!((p.stiffness_diag[5] / (rod.cross_section.body.g_pa * w * h) - rectangle_shear_coefficient(0.45)).abs() < 1e-12);
    let tube =
        Rod::from_toml_str(&RECTANGLE_TOML.replace("height_m = { base_m = 0.03, tip_m = 0.02 }", "height_m = 0.03\nwall_m = 0.002"), "tube.toml").unwrap();
    let p = tube.cross_section.properties(0.0, 0.1);
    assert!((p.mass_per_length_kg_m - 1100.0 * (0.03f64 * 0.03 - 0.026 * 0.026)).abs() < 1e-12);
    let general = r#"
length_m = 0.1
sections_m = [0.1]
[section]
shape = "general"
area_m2 = 3e-4
second_moment_y_m4 = 2.5e-9
second_moment_z_m4 = 2.25e-8
torsion_constant_m4 = 7.9e-9
shear_area_y_m2 = 2.55e-4
shear_coefficient_z = 0.85
width_m = 0.03
height_m = 0.01
[material]
e_pa = 1e6
g_pa = 3.4e5
rho_kg_m3 = 1100
"#;
    let rod = Rod::from_toml_str(general, "general.toml").unwrap();
    let p = rod.cross_section.properties(0.0, 0.1);
    assert!((p.stiffness_diag[4] - 3.4e5 * 2.55e-4).abs() < 1e-9 && (p.stiffness_diag[0] - 3.4e5 * 7.9e-9).abs() < 1e-15);
    assert_eq!(rod.cross_section.half_extents_m(0.0, 0.1), (0.015, 0.005));
    let errors = [
        (RECTANGLE_TOML.replace("width_m = 0.03\n", ""), "rect.toml: section.width_m: missing"),
        (RECTANGLE_TOML.replace("\"rectangle\"", "\"oval\""), "rect.toml: section.shape: unknown shape 'oval'"),
        (RECTANGLE_TOML.replace("width_m = 0.03\n", "width_m = 0.03\nwall_m = 0.02\n"), "rect.toml: section.wall_m: two walls fill the section"),
        (RECTANGLE_TOML.replace("width_m = 0.03\n", "width_m = -0.03\n"), "rect.toml: section.width_m: must be a positive number"),
        (RECTANGLE_TOML.replace("width_m = 0.03\n", "width_m = 0.03\narea_m2 = 1e-4\n"), "rect.toml: section.area_m2: not a field of shape = \"rectangle\""),
        (
            RECTANGLE_TOML.replace("[section]", "[radius]\nbase_m = 0.01\ntip_m = 0.01\n[section]"),
            "rect.toml: section: give [radius] (a round rod) or [section], not both",
        ),
        (RECTANGLE_TOML.replace("[section]", "[hole]\nbase_m = 0.001\ntip_m = 0.001\n[section]"), "rect.toml: hole: only a round rod"),
        (general.replace("shear_area_y_m2 = 2.55e-4\n", "").replace("general.toml", ""), "g.toml: section.shear_coefficient_y: missing"),
        (general.replace("shear_area_y_m2 = 2.55e-4", "shear_area_y_m2 = 4e-4"), "g.toml: section.shear_area_y_m2: exceeds area_m2"),
        (general.replace("shear_coefficient_z = 0.85", "shear_coefficient_z = 1.5"), "g.toml: section.shear_coefficient_z: a shear coefficient lies in (0, 1]"),
        (general.replace("height_m = 0.01\n", ""), "g.toml: section.height_m: missing"),
    ];
    for (text, want) in errors {
        let file = if want.starts_with("g.toml") { "g.toml" } else { "rect.toml" };
        let err = Rod::from_toml_str(&text, file).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}\n  wanted {want}");
        assert!(!err.contains('\n'));
    }
}
