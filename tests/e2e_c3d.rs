//! Motion-capture sessions end to end, against an independent C3D writer:
//! marker tracks of a known beam (`configs/rod/rectangular-beam.toml`, E
//! and rho known) under known masses hung from the top edge of its tip face
//! are written as C3D files by py-c3d (PyPI `c3d`, installed into .venv by
//! scripts/setup.sh; the test says so and skips where it cannot be had) in
//! three conventions — Vicon's (z up, floats in mm, analog channels),
//! OptiTrack's (y up, floats in metres) and scaled 16-bit integers — with
//! tracking noise and markers dropping out. `rodlab import c3d` makes sessions of them,
//! `rodlab identify --sessions` finds the settled part of each trial and
//! recovers E and rho. Bad files and maps exit 2 with one line.

use crate::common;
use common::*;

use lie::{Pose, Vec3};
use rod::Rod;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BEAM: &str = "configs/rod/rectangular-beam.toml";
/// The beam that made the shipped dataset (datasets/mocap-beam): its rod
/// file's nominal values are E 2.0e5 Pa, rho 1100 kg/m^3.
const E_TRUE_PA: f64 = 2.35e5;
const RHO_TRUE_KG_M3: f64 = 1120.0;
const RATE_HZ: f64 = 100.0;
const TRIAL_S: f64 = 5.0;
/// Where the clamp stands in the world (its frame is the rod's base frame).
fn clamp() -> Pose {
    Pose::from_rpy(0.0, 0.0, 30f64.to_radians(), Vec3::new(0.4, 0.2, 0.3))
}
/// The clamp cluster, in the clamp's frame.
const CLUSTER: [[f64; 3]; 3] = [[-0.01, 0.03, 0.03], [-0.01, -0.03, 0.03], [-0.01, 0.0, -0.03]];

fn truth_rod() -> Rod {
    let mut rod = Rod::from_file(&root().join(BEAM)).unwrap();
    rod.cross_section.body = rod::Material::from_poisson(E_TRUE_PA, 0.45, RHO_TRUE_KG_M3);
    rod
}

/// A trial's scene: the mass `kg` let go at 0.2 s from a hook on the top
/// edge of the tip face; dynamic, the rod file's damping. With `base`, the
/// clamp held there (the truth); without, driven by a session (validate).
fn hung_scene(kg: f64, base: Option<&Pose>) -> String {
    let waypoints = base.map_or(String::new(), |b| {
        let p = lie::trajectory::pose_to_ur(b);
        format!("waypoints = [[0.0, {0}, {1}, {2}, {3}, {4}, {5}], [{TRIAL_S}, {0}, {1}, {2}, {3}, {4}, {5}]]\n", p[0], p[1], p[2], p[3], p[4], p[5])
    });
    format!(
        "# The beam of datasets/mocap-beam with {g} g let go at 0.2 s from the top edge of its tip face.\n\
         gravity_m_s2 = [0.0, 0.0, -9.81]\ninitial = \"static\"\n[time]\nstep_s = 0.005\nduration_s = {TRIAL_S}\nmode = \"dynamic\"\n\
         [base]\nkind = \"prescribed\"\n{waypoints}[[load]]\nkind = \"point_force\"\narc_m = 0.1\noffset_m = [0.0, 0.015]\nforce_n = [0.0, 0.0, {f}]\nstart_s = 0.2\n",
        g = (kg * 1e3).round(),
        f = -9.81 * kg
    )
}

/// One trial, simulated (the beam swings after the mass is let go and
/// settles), seen at 100 Hz with 0.1 mm of tracking noise; marker 3
/// missing from 3.0 to 3.3 s and the tip's marker 0 from 0.3 to 0.5 s.
/// Frames: the rod's markers, then the cluster (world, metres).
fn trial(kg: f64, seed: u64) -> Vec<Vec<Option<Vec3>>> {
    let rod = truth_rod();
    let scene = sim::Scene::from_toml_str(&hung_scene(kg, Some(&clamp())), "truth.toml").unwrap();
    let motion = sim::BaseMotion::from_scene(&scene, &rod).unwrap().unwrap();
    let records = sim::Simulator::new(&rod, &scene, motion).unwrap().run(|_, _| {}).unwrap();
    let cluster: Vec<Vec3> = CLUSTER.iter().map(|p| clamp().transform_point(&Vec3::from(*p))).collect();
    let mut noise = Noise(seed);
    let every = (1.0 / (RATE_HZ * scene.step_s)).round() as usize;
    records
        .iter()
        .step_by(every)
        .take((TRIAL_S * RATE_HZ) as usize)
        .enumerate()
        .map(|(f, r)| {
            let mut frame: Vec<Option<Vec3>> = r
                .markers_m
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let gone = (k == 3 && (300..330).contains(&f)) || (k == 0 && (30..50).contains(&f));
                    (!gone).then(|| p + Vec3::from_fn(|_, _| noise.gauss(1e-4)))
                })
                .collect();
            frame.extend(cluster.iter().map(|c| Some(c + Vec3::from_fn(|_, _| noise.gauss(1e-4)))));
            frame
        })
        .collect()
}

const LABELS: [&str; 7] = ["Beam:TipTop", "Beam:TipRight", "Beam:TipLeft", "Beam:Mid", "Clamp:C1", "Clamp:C2", "Clamp:C3"];

/// How a vendor's system writes its C3D files.
struct Convention {
    units: &'static str,
    up: &'static str,
    format: &'static str,
    analog_channels: usize,
}

/// Vicon (and Qualisys): z up, floats in mm, analog channels beside.
const VICON: Convention = Convention { units: "mm", up: "+z", format: "float", analog_channels: 4 };
/// OptiTrack (Motive): y up, floats in metres, no analog.
const OPTITRACK: Convention = Convention { units: "m", up: "+y", format: "float", analog_channels: 0 };
/// An older system's export: z up, scaled 16-bit integers (0.1 mm).
const INTEGER: Convention = Convention { units: "mm", up: "+z", format: "integer", analog_channels: 0 };

/// Writes `frames` as a C3D file with py-c3d.
fn write_c3d(python: &Path, path: &Path, frames: &[Vec<Option<Vec3>>], c: &Convention, labels: &[&str]) {
    let spec = serde_json::json!({
        "path": path, "rate_hz": RATE_HZ, "units": c.units, "up": c.up, "format": c.format, "analog_channels": c.analog_channels,
        "labels": labels,
        "frames": frames.iter().map(|f| f.iter().map(|p| p.map(|v| [v.x, v.y, v.z])).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let mut child = Command::new(python).arg(root().join("tests/python/write_c3d.py")).stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), spec.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "write_c3d.py failed");
}

fn map_text(up: &str) -> String {
    format!(
        "# C3D labels -> the markers of configs/rod/rectangular-beam.toml (by index).\n[markers]\n\"Beam:TipTop\" = 0\n\"Beam:TipRight\" = 1\n\"Beam:TipLeft\" = 2\n\"Beam:Mid\" = 3\n\n[world]\nup = \"{up}\"\n\n# The clamp cluster, in the rod's base frame; the clamp does not move.\n[base]\nlabels = [\"Clamp:C1\", \"Clamp:C2\", \"Clamp:C3\"]\npositions_m = {:?}\nstill = true\n",
        CLUSTER
    )
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The trials: (map group, name, mass, convention). Masses 0, 20, 50 and
/// 100 g in three conventions; z-up files share one map, y-up ones another.
const TRIALS: [(&str, &str, f64, &Convention); 4] = [
    ("z-up", "trial-0g", 0.0, &VICON),
    ("z-up", "trial-50g", 0.05, &INTEGER),
    ("y-up", "trial-20g", 0.02, &OPTITRACK),
    ("y-up", "trial-100g", 0.1, &OPTITRACK),
];

/// Writes the dataset into `d`: `<group>/<trial>.c3d` (py-c3d), the two
/// maps, the masses (a loads file) and the validation scene of the 50 g
/// trial.
fn write_dataset(python: &Path, d: &Path) {
    for (k, (group, name, kg, convention)) in TRIALS.iter().enumerate() {
        std::fs::create_dir_all(d.join(group)).unwrap();
        write_c3d(python, &d.join(group).join(format!("{name}.c3d")), &trial(*kg, 11 + k as u64), convention, &LABELS);
    }
    for (group, up) in [("z-up", "+z"), ("y-up", "+y")] {
        std::fs::write(d.join(format!("{group}-map.toml")), map_text(up)).unwrap();
    }
    let masses: String =
        TRIALS.iter().map(|(_, name, kg, _)| format!("[[tip_mass]]\nsession = \"{name}\"\nkg = {kg}\noffset_m = [0.0, 0.015]\nfrom_s = 0.2\n")).collect();
    std::fs::write(d.join("masses.toml"), format!("# The mass hung on each trial's tip from 0.2 s on, on the top edge of the tip face.\n{masses}")).unwrap();
    std::fs::write(d.join("hung-50g.toml"), hung_scene(0.05, None)).unwrap();
}

/// Imports the dataset in `data` into `work`, identifies E and rho from
/// the rod file's nominal values (E -15 %, rho -2 % off), and validates
/// the fit on the 50 g trial, its swing included.
fn import_identify_validate(data: &Path, work: &Path) {
    for (group, units) in [("z-up", "mm"), ("y-up", "m")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(data.join(group)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut args: Vec<String> = vec!["import".into(), "c3d".into()];
        args.extend(files.iter().map(|f| f.display().to_string()));
        let map = data.join(format!("{group}-map.toml"));
        args.extend(["--rod".into(), BEAM.into(), "--map".into(), map.display().to_string(), "--out".into(), work.join("sessions").display().to_string()]);
        let out = ok(&rodlab(&args.iter().map(String::as_str).collect::<Vec<_>>()));
        println!("{out}");
        let want = format!("500 frames at 100 Hz ({units}), 4 markers, missing samples: Beam:TipTop (marker 0) 20, Beam:Mid (marker 3) 30; base in 500 frames");
        assert_eq!(out.matches(&want).count(), 2, "{out}");
        assert_eq!(out.matches("a still clamp: every frame's fit within").count(), 2, "{out}");
    }
    // The mocap's invalid samples stay missing; positions are in metres
    // in the world (y up mapped to z up).
    let rows = session::read_markers(&work.join("sessions/trial-20g/markers.parquet")).unwrap();
    let gone: Vec<_> = rows.iter().filter(|r| r.marker == 3 && r.t_s >= 3.0 && r.t_s < 3.295).collect();
    assert_eq!(gone.len(), 30);
    assert!(gone.iter().all(|r| r.x_m.is_nan() && r.flags & session::flags::MISSING != 0));
    let last = rows.iter().rfind(|r| r.marker == 1).unwrap();
    let tip_right = clamp().transform_point(&Vec3::new(0.1, 0.015, -0.01));
    assert!((Vec3::new(last.x_m, last.y_m, last.z_m) - tip_right).norm() < 0.03, "y-up mapped into the world: {last:?}");

    // Identify, G tied to E (the rod file's [identify] tie_g_poisson).
    let fit = work.join("fit");
    let mut args: Vec<String> = vec!["identify".into(), "--rod".into(), BEAM.into(), "--sessions".into()];
    args.extend(TRIALS.iter().map(|t| work.join("sessions").join(t.1).display().to_string()));
    args.extend(["--loads".into(), data.join("masses.toml").display().to_string(), "--out".into(), fit.display().to_string(), "--no-loo".into()]);
    let out = ok(&rodlab(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    println!("{out}");
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(fit.join("identified.toml")).unwrap()).unwrap();
    let p = &v["parameters"];
    let get = |name: &str| (p[name]["value"].as_float().unwrap(), p[name]["ci95"][0].as_float().unwrap(), p[name]["ci95"][1].as_float().unwrap());
    let (e, e_lo, e_hi) = get("e_pa");
    let (rho, rho_lo, rho_hi) = get("rho_kg_m3");
    println!("E {e:.1} Pa [{e_lo:.1}, {e_hi:.1}] (truth {E_TRUE_PA}), rho {rho:.2} [{rho_lo:.2}, {rho_hi:.2}] (truth {RHO_TRUE_KG_M3})");
    assert!((e / E_TRUE_PA - 1.0).abs() < 0.01, "E {e} vs {E_TRUE_PA}");
    assert!((rho / RHO_TRUE_KG_M3 - 1.0).abs() < 0.02, "rho {rho} vs {RHO_TRUE_KG_M3}");
    assert!(e_lo <= E_TRUE_PA && E_TRUE_PA <= e_hi, "E truth outside [{e_lo}, {e_hi}]");
    assert!(rho_lo <= RHO_TRUE_KG_M3 && RHO_TRUE_KG_M3 <= rho_hi, "rho truth outside [{rho_lo}, {rho_hi}]");

    // Validate on the 50 g trial: the still clamp's pose drives the
    // simulation of the mass let go (dynamic, the rod file's damping).
    let report = work.join("validate");
    let out = rodlab(&[
        "validate",
        work.join("sessions/trial-50g").to_str().unwrap(),
        "--rod",
        BEAM,
        "--params",
        fit.join("identified.toml").to_str().unwrap(),
        "--scene",
        data.join("hung-50g.toml").to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    println!("{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    // Every check passes: the observer's strain (the clamp's pose as the
    // base) against the simulated one through the swing, and the markers
    // to their noise.
    assert!(String::from_utf8_lossy(&out.stdout).contains("every check passed"), "{}", String::from_utf8_lossy(&out.stdout));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    assert!(summary["frames_compared"].as_u64().unwrap() >= 499, "{}", summary["frames_compared"]);
    for m in summary["markers"].as_array().unwrap() {
        let rms_mm = m["errors_mm"]["rms"].as_f64().unwrap();
        println!("marker {}: {rms_mm:.3} mm RMS", m["marker"]);
        assert!(rms_mm < 0.3, "marker {}: {rms_mm} mm", m["marker"]);
    }
    let strain = summary["strain"].as_array().unwrap().iter().find(|c| c["component"] == "kappa_y").unwrap();
    println!("kappa_y: {:.2} % of range RMS", strain["errors"]["rms_pct"].as_f64().unwrap());
    assert!(strain["errors"]["rms_pct"].as_f64().unwrap() < 5.0, "{strain}");
    // The page says what drove the simulation and what the scene is: a
    // motion-capture clamp, in air (not "its robot stream", not "stick").
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        page.contains("(in air) driven by its motion-capture base") && !page.contains("robot stream") && !page.contains("stick)"),
        "the page's description"
    );
    ok(&out);
}

/// Fresh files from py-c3d. With RODLAB_MOCAP_DATASET=DIR the dataset is
/// also written there (how datasets/mocap-beam was made).
#[test]
fn c3d_in_three_conventions_imports_identifies_and_validates() {
    let Some(python) = venv_python("c3d", "C3D interop") else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    write_dataset(&python, &data);
    if let Some(keep) = std::env::var_os("RODLAB_MOCAP_DATASET") {
        write_dataset(&python, Path::new(&keep));
    }
    import_identify_validate(&data, dir.path());
}

/// The shipped dataset (bytes written by py-c3d 0.6.0; needs no Python).
#[test]
fn the_shipped_mocap_dataset_imports_identifies_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    import_identify_validate(&root().join("datasets/mocap-beam"), dir.path());
}

#[test]
fn bad_c3d_files_and_maps_exit_2_with_one_line() {
    let Some(python) = venv_python("c3d", "C3D interop") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = d.join("good.c3d");
    let frames = trial(0.0, 5);
    write_c3d(&python, &good, &frames[..50], &VICON, &LABELS);
    let map = d.join("map.toml");
    std::fs::write(&map, map_text("+z")).unwrap();
    let import = |file: &Path, map: &Path, out: &str| {
        rodlab(&["import", "c3d", file.to_str().unwrap(), "--rod", BEAM, "--map", map.to_str().unwrap(), "--out", d.join(out).to_str().unwrap()])
    };
    ok(&import(&good, &map, "ok"));

    // A clamp marker never seen: no base, refused, and nothing written.
    let mut no_clamp = frames[..50].to_vec();
    for f in &mut no_clamp {
        f[4] = None;
    }
    let no_clamp_file = d.join("no-clamp.c3d");
    write_c3d(&python, &no_clamp_file, &no_clamp, &VICON, &LABELS);
    expect_exit_2(import(&no_clamp_file, &map, "no-clamp"), &["no-clamp.c3d: the clamp cluster", "is never complete"]);
    assert!(!d.join("no-clamp").exists(), "a refused import leaves no session");

    // A "still" clamp that moved 5 mm half-way: imported, with a warning.
    let mut moved = frames[..50].to_vec();
    for f in &mut moved[25..] {
        for p in f.iter_mut().skip(4).flatten() {
            p.x += 0.005;
        }
    }
    let moved_file = d.join("moved.c3d");
    write_c3d(&python, &moved_file, &moved, &VICON, &LABELS);
    let out = ok(&import(&moved_file, &map, "moved"));
    assert!(out.contains("warning: ") && out.contains("did it move?"), "{out}");

    // Labels the map names are not in the file (a subject renamed).
    let renamed = d.join("renamed.c3d");
    let other: Vec<String> = LABELS.iter().map(|l| l.replace("Beam:", "Rod:")).collect();
    write_c3d(&python, &renamed, &frames[..50], &VICON, &other.iter().map(String::as_str).collect::<Vec<_>>());
    expect_exit_2(import(&renamed, &map, "renamed"), &["renamed.c3d: no marker labelled \"Beam:TipTop\"", "map.toml: markers.\"Beam:TipTop\"", "Rod:TipTop"]);

    // A truncated file, and one that is not C3D at all.
    let bytes = std::fs::read(&good).unwrap();
    for (name, cut) in [("truncated.c3d", bytes.len() / 2), ("header-only.c3d", 600), ("empty.c3d", 0)] {
        let path = d.join(name);
        std::fs::write(&path, &bytes[..cut]).unwrap();
        expect_exit_2(import(&path, &map, &format!("out-{name}")), &[name, "not a readable C3D file"]);
    }
    let text = d.join("notes.c3d");
    std::fs::write(&text, "frame,x,y,z\n".repeat(200)).unwrap();
    expect_exit_2(import(&text, &map, "notes"), &["notes.c3d: not a readable C3D file"]);

    // Maps: a marker named twice, an index beyond the rod's, a cluster on a line, an unknown axis.
    let bad_maps = [
        (map_text("+z").replace("\"Beam:Mid\" = 3", "\"Beam:Mid\" = 1"), "markers: marker 1 is named twice (\"Beam:Mid\" and \"Beam:TipRight\")"),
        (map_text("+z").replace("\"Beam:Mid\" = 3", "\"Beam:Mid\" = 7"), "markers.\"Beam:Mid\": marker 7, but the rod file has 4 markers"),
        (map_text("+z").replace("[-0.01, 0.0, -0.03]", "[-0.01, 0.0, 0.03]"), "base.positions_m: the cluster's markers lie on a line"),
        (map_text("+z").replace("up = \"+z\"", "up = \"up\""), "world.up: 'up'"),
        (map_text("+z") + "position_m = [0.0, 0.0, 0.0]\n", "base: give a clamp cluster"),
        (map_text("+z").replace("\"Beam:Mid\" = 3", "\"Beam:Mid\" = 3\n\"Beam:Mid\" = 2"), "map.toml: line"),
    ];
    for (text, want) in bad_maps {
        std::fs::write(&map, text).unwrap();
        expect_exit_2(import(&good, &map, "bad-map"), &["map.toml", want]);
    }
    // Importing over an earlier session is refused.
    std::fs::write(&map, map_text("+z")).unwrap();
    expect_exit_2(import(&good, &map, "ok"), &["not empty"]);
}

/// A crafted C3D header cannot crash the importer or eat memory: the
/// shipped trial with its header patched (a frame range that runs
/// backwards, 65,535 points per frame in a 138 kB file, 1,500 points, two
/// points for seven labels) is refused with one line and exit 2, under an
/// address-space limit of 1 GB (the old importer allocated 103 GB and
/// aborted, took 2.4 GB, or panicked); and a map whose clamp cluster is a
/// metre off the clamp's markers is refused, naming base.positions_m.
#[test]
fn crafted_headers_and_a_wrong_cluster_are_refused_within_a_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read(root().join("datasets/mocap-beam/z-up/trial-0g.c3d")).unwrap();
    let padded = |name: &str, patches: &[(usize, u16)], len: usize| {
        let mut b = shipped.clone();
        b.resize(len.max(b.len()), 0);
        for (at, v) in patches {
            b[*at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    let patched = |name: &str, patches: &[(usize, u16)]| padded(name, patches, 0);
    let cases = [
        (patched("wrap.c3d", &[(2, 65535), (6, 500), (8, 1)]), "frame range runs backwards"),
        (patched("huge.c3d", &[(2, 65535)]), "65535 points per frame"),
        (patched("many.c3d", &[(2, 1500)]), "truncated"),
        (patched("fewer.c3d", &[(2, 2)]), "7 labels (POINT:LABELS) for 2 points per frame"),
        // Frames 1..65535 of 20,000 or 65,535 points: the header's range,
        // not the data, sized the parser's grid (103 GB, an abort).
        // (in a file padded to 600 kB, as the attack's were).
        (padded("range.c3d", &[(2, 20000), (6, 1), (8, 65535)], 600_000), "declares frames 1..65535 (65535) of 20000 points"),
        (padded("range-max.c3d", &[(2, 65535), (6, 1), (8, 65535)], 600_000), "65535 points"),
        (padded("range-3000.c3d", &[(2, 3000), (6, 1), (8, 65535)], 600_000), "declares frames 1..65535 (65535) of 3000 points"),
    ];
    for (file, needle) in &cases {
        let out = dir.path().join(format!("out-{}", file.file_stem().unwrap().to_string_lossy()));
        let o = Command::new("prlimit")
            .arg("--as=500000000")
            .arg(env!("CARGO_BIN_EXE_rodlab"))
            .args(["import", "c3d", file.to_str().unwrap(), "--rod", BEAM, "--map", "datasets/mocap-beam/z-up-map.toml", "--out", out.to_str().unwrap()])
            .current_dir(root())
            .output()
            .unwrap();
        expect_exit_2(o, &[file.file_name().unwrap().to_str().unwrap(), needle]);
        assert!(!out.exists(), "nothing half-written");
    }
    let map = dir.path().join("metre-off.toml");
    let text = std::fs::read_to_string(root().join("datasets/mocap-beam/z-up-map.toml")).unwrap().replace("[-0.01, 0.03, 0.03]", "[0.99, 0.03, 0.03]");
    std::fs::write(&map, text).unwrap();
    let o = rodlab(&[
        "import",
        "c3d",
        "datasets/mocap-beam/z-up/trial-0g.c3d",
        "--rod",
        BEAM,
        "--map",
        map.to_str().unwrap(),
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ]);
    expect_exit_2(o, &["base.positions_m", "mm RMS"]);
}

/// The cord of configs/rod/clamped-clamped-cable.toml hanging as a loop,
/// its tip's clamp carried through three holds (the scene
/// configs/scene/cable-loop-holds.toml, quasi-static; E 2.4e7 Pa, 20 %
/// above the rod file's), seen by a motion-capture system with y up at
/// 100 Hz and 0.1 mm of noise: five markers on the cord, a still cluster
/// on the base's clamp, a moving one on the tip's. py-c3d writes the
/// file; the map's `[tip]` cluster becomes the stream mocap_tip, and the
/// loads file's `[tip_hold] stream = "mocap_tip"` holds the rod's tip
/// there: three holds, the weighed cord's E within 2 %, and validate's
/// replay (the tip held where the mocap saw its clamp) passes every check.
#[test]
fn a_loop_whose_tip_clamp_motion_capture_tracks_is_identified_and_validated() {
    const CORD: &str = "configs/rod/clamped-clamped-cable.toml";
    const HOLDS: &str = "configs/scene/cable-loop-holds.toml";
    const E_LOOP_PA: f64 = 2.4e7;
    let Some(python) = venv_python("c3d", "C3D interop (a loop held by two clamps)") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut truth = Rod::from_file(&root().join(CORD)).unwrap();
    truth.cross_section.body = rod::Material::from_poisson(E_LOOP_PA, 0.45, 1.2e3);
    let scene = sim::Scene::from_file(&root().join(HOLDS)).unwrap();
    let motion = sim::BaseMotion::from_scene(&scene, &truth).unwrap().unwrap();
    let records = sim::Simulator::new(&truth, &scene, motion).unwrap().run(|_, _| {}).unwrap();
    // The clusters: on the base's clamp (the flange, at the world's
    // origin), in its frame; on the tip's, in the rod's tip frame.
    let base_cluster = CLUSTER;
    let tip_cluster = [[0.01, 0.03, 0.03], [0.01, -0.03, 0.03], [0.01, 0.0, -0.03]];
    let mut noise = Noise(44);
    let mut noisy = |p: Vec3| Some(p + Vec3::from_fn(|_, _| noise.gauss(1e-4)));
    let n_frames = (scene.duration_s * RATE_HZ) as usize;
    let frames: Vec<Vec<Option<Vec3>>> = (0..n_frames)
        .map(|f| {
            let t = f as f64 / RATE_HZ;
            let i = records.partition_point(|r| r.t_s < t).clamp(1, records.len() - 1);
            let w = ((t - records[i - 1].t_s) / (records[i].t_s - records[i - 1].t_s)).clamp(0.0, 1.0);
            let tip_clamp = scene.tip_pose_at(t).unwrap();
            let mut frame: Vec<Option<Vec3>> = (0..5).map(|m| noisy(records[i - 1].markers_m[m] * (1.0 - w) + records[i].markers_m[m] * w)).collect();
            frame.extend(base_cluster.iter().map(|p| noisy(Vec3::from(*p))));
            frame.extend(tip_cluster.iter().map(|p| noisy(tip_clamp.transform_point(&Vec3::from(*p)))));
            frame
        })
        .collect();
    let labels = ["Cord:M1", "Cord:M2", "Cord:M3", "Cord:M4", "Cord:M5", "Base:C1", "Base:C2", "Base:C3", "Tip:C1", "Tip:C2", "Tip:C3"];
    let file = d.join("loop.c3d");
    write_c3d(&python, &file, &frames, &OPTITRACK, &labels);
    let map = d.join("map.toml");
    std::fs::write(
        &map,
        format!(
            "[markers]\n\"Cord:M1\" = 0\n\"Cord:M2\" = 1\n\"Cord:M3\" = 2\n\"Cord:M4\" = 3\n\"Cord:M5\" = 4\n[world]\nup = \"+y\"\n\
             [base]\nlabels = [\"Base:C1\", \"Base:C2\", \"Base:C3\"]\npositions_m = {base_cluster:?}\nstill = true\n\
             # The tip's clamp, in the rod's tip frame; it moves.\n[tip]\nlabels = [\"Tip:C1\", \"Tip:C2\", \"Tip:C3\"]\npositions_m = {tip_cluster:?}\n"
        ),
    )
    .unwrap();
    let session = d.join("loop");
    let out = ok(&rodlab(&["import", "c3d", file.to_str().unwrap(), "--rod", CORD, "--map", map.to_str().unwrap(), "--out", session.to_str().unwrap()]));
    println!("{out}");
    assert!(out.contains(&format!("tip clamp in {n_frames} frames")) && !out.contains("warning"), "{out}");
    // The tip's stream holds the scene's clamp (the cluster fit of 0.1 mm noise).
    let tip_rows = session::Table::read_chunks_or_skip(&session.join("streams/mocap_tip"), session::Damaged::Refuse).unwrap().0;
    let (tx, th) = (tip_rows.f64("x_m").unwrap(), tip_rows.i64("t_host_ns").unwrap());
    let worst_m = (0..th.len()).map(|k| (tx[k] - scene.tip_pose_at(th[k] as f64 * 1e-9).unwrap().pos.x).abs()).fold(0.0, f64::max);
    assert!(worst_m < 5e-4, "tip clamp x off by {worst_m} m");

    // The cord weighed (its mass to 1 %), its E a start 20 % below the truth.
    let mass_kg = 1.2e3 * std::f64::consts::PI * 0.005_f64.powi(2) * 1.5;
    let weighed = d.join("cord.toml");
    let text = std::fs::read_to_string(root().join(CORD)).unwrap();
    std::fs::write(&weighed, text.replace("rho_kg_m3 = 1.2e3", &format!("rho_kg_m3 = 1.2e3\nmass_kg = {mass_kg}\nmass_sigma_kg = {}", 0.01 * mass_kg)))
        .unwrap();
    let loads = d.join("loads.toml");
    std::fs::write(&loads, "# The tip's clamp as the motion capture saw it.\n[tip_hold]\nstream = \"mocap_tip\"\n").unwrap();
    let fit = d.join("fit");
    let identify = |loads: &Path, out: &Path| {
        rodlab(&[
            "identify",
            "--rod",
            weighed.to_str().unwrap(),
            "--sessions",
            session.to_str().unwrap(),
            "--loads",
            loads.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--tie-g",
            "0.45",
            "--no-loo",
        ])
    };
    let out = ok(&identify(&loads, &fit));
    println!("{out}");
    assert!(out.contains("3 still intervals, 3 used as holds"), "{out}");
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(fit.join("identified.toml")).unwrap()).unwrap();
    let e = v["parameters"]["e_pa"]["value"].as_float().unwrap();
    println!("E {e:.4e} for {E_LOOP_PA:.4e}");
    assert!((e / E_LOOP_PA - 1.0).abs() < 0.02, "E {e} vs {E_LOOP_PA}");
    assert!(!out.contains("mocap_tip' is not used"), "{out}");

    // The replay holds the tip where the mocap saw its clamp.
    let report = d.join("validate");
    let o = rodlab(&[
        "validate",
        session.to_str().unwrap(),
        "--rod",
        weighed.to_str().unwrap(),
        "--params",
        fit.join("identified.toml").to_str().unwrap(),
        "--scene",
        HOLDS,
        "--loads",
        loads.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    println!("{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(ok(&o).contains("every check passed"));

    // Two holders, or a stream the session lacks: one line, exit 2.
    let bad = d.join("bad.toml");
    for (text, want) in [
        ("[tip_hold]\nrobot = \"robot2\"\nstream = \"mocap_tip\"\n", "not both"),
        ("[tip_hold]\nstream = \"mocap_tip2\"\n", "[tip_hold] stream = \"mocap_tip2\": session"),
        ("[tip_hold]\nstream = \"mocap_tip\"\nrobot_base = { position_m = [0.1, 0.0, 0.0] }\n", "tip_hold.robot_base"),
    ] {
        std::fs::write(&bad, text).unwrap();
        expect_exit_2(identify(&bad, &d.join("bad-fit")), &["bad.toml", want]);
    }
}

/// 1,000 random C3D files written by py-c3d (float and integer formats,
/// scales of either sign and any magnitude, residual bytes 0-255, 7-bit
/// camera masks, invalid samples): rodlab's reader takes every sample
/// valid or invalid as py-c3d and ezc3d do, and reads the same position
/// (before this, a float file's residual above 127 |scale| was read as
/// invalid: a Qualisys word 32658 lost its sample).
#[test]
fn random_c3d_files_read_as_the_reference_readers_read_them() {
    let Some(python) = venv_python("c3d", "C3D readers compared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(&python).arg(root().join("tests/python/c3d_peers.py")).arg(dir.path()).args(["1000", "79"]).status().unwrap();
    assert!(status.success(), "c3d_peers.py failed");
    let listing: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("peers.json")).unwrap()).unwrap();
    let files = listing.as_array().unwrap();
    assert_eq!(files.len(), 1000);
    let (mut samples, mut invalid, mut floats, mut peers_seen) = (0usize, 0usize, 0usize, std::collections::BTreeSet::new());
    for f in files {
        let path = Path::new(f["path"].as_str().unwrap());
        let unit = if f["units"] == "mm" { 1e-3 } else { 1.0 };
        floats += usize::from(f["float"].as_bool().unwrap());
        let ours = lab::c3d::read_c3d(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (peer, grid) in f["peers"].as_object().unwrap() {
            peers_seen.insert(peer.clone());
            let grid = grid.as_array().unwrap();
            // py-c3d keeps the file's 32-bit floats, as rodlab does; ezc3d
            // scales an integer file's values in double precision.
            let tolerance = if peer == "py-c3d" { 1e-12 } else { 2e-7 };
            assert_eq!(ours.frames.len(), grid.len(), "{} ({peer}): frames", path.display());
            for (k, (row, theirs)) in ours.frames.iter().zip(grid).enumerate() {
                for (p, (a, b)) in row.iter().zip(theirs.as_array().unwrap()).enumerate() {
                    let at = format!("{} ({peer}): frame {k}, point {p}", path.display());
                    match (a, b.as_array()) {
                        (None, None) => invalid += 1,
                        (Some(a), Some(b)) => {
                            for (u, v) in a.iter().zip(b) {
                                let v = v.as_f64().unwrap() * unit;
                                assert!((u - v).abs() <= tolerance * v.abs().max(1e-3), "{at}: {u} m, the peer {v} m");
                            }
                        }
                        (a, b) => panic!("{at}: rodlab reads {a:?}, the peer {b:?}"),
                    }
                    samples += 1;
                }
            }
        }
    }
    // Both formats and both kinds of sample were there to agree on.
    assert!((300..700).contains(&floats), "{floats} float files of 1000");
    assert!(invalid * 20 > samples && invalid * 4 < samples, "{invalid} invalid of {samples}");
    eprintln!("{samples} samples of 1000 files agree with {peers_seen:?} ({invalid} invalid)");
}
