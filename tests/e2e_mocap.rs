//! Motion capture as labs export it, against independent writers: a day
//! of a clamped silicone beam (configs/rod/rectangular-beam.toml, E, rho
//! and damping known) made by the simulator — in each trial the beam is
//! held straight by a support, a mass hangs from the top edge of its tip
//! face, it is let go, rings down in air and settles — tracked at 100 Hz
//! with 0.1 mm of noise by a system calibrated with +x up. Its markers sit
//! 1-2 mm from where the rod file and the map put them, and each trial's
//! beam sits in the clamp a little differently (up to 3 mm at the tip).
//!
//! The day is written as C3D (py-c3d), Qualisys TSV, Motive CSV, Vicon
//! Nexus CSV and a plain CSV (tests/python/write_mocap_tables.py, each laid
//! out as its vendor's software writes it); all import to the same
//! sessions. With the map's `[reference]` window, each marker's place on
//! the body is measured there and the release found after it; static
//! identification then recovers E and rho within 1 %, and `identify
//! --dynamic` on the releases, replayed in air from the release with the
//! hung mass's inertia, recovers the damping ratio (and with
//! `--fit-stiffness` E). Without `[reference]` the import says how far the
//! markers sit from their design positions. Every `[world] up` and a tilted
//! calibration round-trip; bad maps exit 2 with one line.

use crate::common;
use common::*;

use lie::{Mat3, Pose, Vec3};
use std::path::Path;
use std::process::{Command, Stdio};

const BEAM: &str = "configs/rod/rectangular-beam.toml";
const E_TRUE_PA: f64 = 2.35e5;
const RHO_TRUE_KG_M3: f64 = 1120.0;
const ZETA_TRUE: f64 = 0.06;
const RATE_HZ: f64 = 100.0;
const TRIAL_S: f64 = 6.0;
/// The beam is held straight from the start to its release (0.5 s and a
/// few ms); the map's reference window lies inside.
const WINDOW_S: [f64; 2] = [0.05, 0.45];
const NOISE_M: f64 = 1e-4;
const MASSES_KG: [f64; 4] = [0.0, 0.02, 0.05, 0.1];
/// The mass hangs on a hook on the top edge of the tip face.
const HOOK_M: [f64; 2] = [0.0, 0.015];

/// When trial `k` is let go \[s\] (between frames).
fn release_s(k: usize) -> f64 {
    0.5 + 0.0037 * (k + 1) as f64
}

/// Where the clamp stands in the world.
fn clamp() -> Pose {
    Pose::from_rpy(0.0, 0.0, 30f64.to_radians(), Vec3::new(0.4, 0.2, 0.3))
}

/// The clamp cluster as the map gives it (the drawing), in the clamp's frame.
const CLUSTER: [[f64; 3]; 3] = [[-0.01, 0.03, 0.03], [-0.01, -0.03, 0.03], [-0.01, 0.0, -0.03]];
/// Where the cluster's markers really are: 1-2 mm off the drawing \[mm\].
const CLUSTER_OFF_MM: [[f64; 3]; 3] = [[0.9, -1.0, 0.6], [-1.2, 0.4, 1.1], [0.5, 1.3, -0.9]];
/// Where the beam's markers really are, from the rod file's positions \[mm\].
const MARKERS_OFF_MM: [[f64; 3]; 4] = [[0.8, 1.1, 0.7], [-0.6, -1.2, 0.9], [1.0, 0.5, -1.3], [-1.1, 0.9, 0.4]];
/// How each trial's beam sits in the clamp: pitch and yaw \[rad\], and a
/// shift \[m\] (the tip up to 3 mm from one trial to the next).
const SEATED: [[f64; 3]; 4] = [[0.012, -0.008, 0.0002], [-0.01, 0.016, -0.0003], [0.018, 0.004, 0.0001], [-0.004, -0.014, 0.0]];

const LABELS: [&str; 7] = ["Beam:TipTop", "Beam:TipRight", "Beam:TipLeft", "Beam:Mid", "Clamp:C1", "Clamp:C2", "Clamp:C3"];

fn trial_name(k: usize) -> String {
    format!("trial-{}g", (MASSES_KG[k] * 1e3).round())
}

/// The beam as it is: true material, damping and marker places.
fn truth_rod() -> rod::Rod {
    let mut rod = rod::Rod::from_file(&root().join(BEAM)).unwrap();
    rod.cross_section.body = rod::Material::from_poisson(E_TRUE_PA, 0.45, RHO_TRUE_KG_M3);
    rod.damping = Some(rod::Damping::Ratio(ZETA_TRUE));
    for (m, off) in rod.markers.iter_mut().zip(MARKERS_OFF_MM) {
        m.offset_body_m += Vec3::from(off) * 1e-3;
    }
    rod
}

/// Trial `k`'s beam base in the world: the clamp, and how the beam sits in it.
fn beam_base(k: usize) -> Pose {
    let s = SEATED[k];
    clamp().compose(&Pose::from_rpy(0.0, s[0], s[1], Vec3::new(0.0, s[2], -s[2])))
}

/// Trial `k` in the world \[m\]: the rod's markers, then the cluster; held
/// straight until the release, then simulated (BDF2 at 0.5 ms, the mass's
/// inertia included), seen at 100 Hz with 0.1 mm of noise; marker 3
/// missing for 0.2 s during the swing.
fn trial_world(k: usize) -> Vec<Vec<Option<Vec3>>> {
    trial_world_of(&truth_rod(), MASSES_KG[k], k)
}

/// As [`trial_world`], of `rod` with `mass_kg` hung (seated and released as trial `k`).
fn trial_world_of(rod: &rod::Rod, mass_kg: f64, k: usize) -> Vec<Vec<Option<Vec3>>> {
    let base = lie::trajectory::pose_to_ur(&beam_base(k));
    let after_s = TRIAL_S - release_s(k);
    let mass =
        if mass_kg > 0.0 { format!("[[load]]\nkind = \"point_mass\"\narc_m = 0.1\noffset_m = {HOOK_M:?}\nmass_kg = {mass_kg}\n") } else { String::new() };
    let scene = format!(
        "gravity_m_s2 = [0.0, 0.0, -9.81]\n[time]\nstep_s = 0.0005\nduration_s = {after_s}\nmode = \"dynamic\"\nintegrator = \"bdf2\"\n\
         [base]\nkind = \"prescribed\"\nwaypoints = [[0.0, {0}, {1}, {2}, {3}, {4}, {5}], [{after_s}, {0}, {1}, {2}, {3}, {4}, {5}]]\n{mass}",
        base[0], base[1], base[2], base[3], base[4], base[5]
    );
    let scene = sim::Scene::from_toml_str(&scene, "truth.toml").unwrap();
    let motion = sim::BaseMotion::from_scene(&scene, rod).unwrap().unwrap();
    let records = sim::Simulator::new(rod, &scene, motion).unwrap().run(|_, _| {}).unwrap();
    let t_rec: Vec<f64> = records.iter().map(|r| r.t_s).collect();
    let cluster: Vec<Vec3> = CLUSTER.iter().zip(CLUSTER_OFF_MM).map(|(p, o)| clamp().transform_point(&(Vec3::from(*p) + Vec3::from(o) * 1e-3))).collect();
    let mut noise = Noise(1000 + k as u64);
    (0..(TRIAL_S * RATE_HZ) as usize)
        .map(|f| {
            let t = f as f64 / RATE_HZ - release_s(k);
            // Held: the rest shape; then between the simulation's steps.
            let at = |m: usize| -> Vec3 {
                if t <= 0.0 {
                    return records[0].markers_m[m];
                }
                let i = t_rec.partition_point(|x| *x < t).clamp(1, t_rec.len() - 1);
                let w = (t - t_rec[i - 1]) / (t_rec[i] - t_rec[i - 1]);
                records[i - 1].markers_m[m] * (1.0 - w) + records[i].markers_m[m] * w
            };
            let gone = |m: usize| m == 3 && (150..170).contains(&f);
            let mut frame: Vec<Option<Vec3>> = vec![];
            for m in 0..4 {
                let seen = at(m) + Vec3::from_fn(|_, _| noise.gauss(NOISE_M));
                frame.push((!gone(m)).then_some(seen));
            }
            for c in &cluster {
                frame.push(Some(c + Vec3::from_fn(|_, _| noise.gauss(NOISE_M))));
            }
            frame
        })
        .collect()
}

/// The lab's axes: +x up, the others turned cyclically (the map's `up =
/// "+x"`: world x = mocap y, world y = mocap z, world z = mocap x).
fn mocap_x_up(w: &Vec3) -> Vec3 {
    Vec3::new(w.z, w.x, w.y)
}

/// A position as a C3D file stores it: single precision in mm. Every
/// writer gets these numbers, so that all files hold the same tracks.
fn stored_mm(p: &Vec3) -> [f64; 3] {
    [(p.x * 1e3) as f32 as f64, (p.y * 1e3) as f32 as f64, (p.z * 1e3) as f32 as f64]
}

type Frames = Vec<Vec<Option<[f64; 3]>>>;

fn run_python(python: &Path, script: &str, spec: &serde_json::Value) {
    let mut child = Command::new(python).arg(root().join("tests/python").join(script)).stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), spec.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "{script} failed");
}

/// Writes `frames_mm` (the mocap's frame) as C3D with py-c3d.
fn write_c3d(python: &Path, path: &Path, frames_mm: &Frames, labels: &[&str]) {
    let metres: Vec<Vec<Option<[f64; 3]>>> = frames_mm.iter().map(|f| f.iter().map(|p| p.map(|v| v.map(|x| x / 1000.0))).collect()).collect();
    let spec = serde_json::json!({"path": path, "rate_hz": RATE_HZ, "units": "mm", "up": "given", "format": "float", "analog_channels": 0, "labels": labels, "frames": metres});
    run_python(python, "write_c3d.py", &spec);
}

/// Writes `frames_mm` as a vendor's table (`format`: qualisys, motive, vicon, plain).
fn write_table(python: &Path, path: &Path, format: &str, frames_mm: &Frames, labels: &[&str], base: Option<(&[[f64; 7]], &str)>) {
    let mut spec = serde_json::json!({"path": path, "format": format, "rate_hz": RATE_HZ, "labels": labels, "frames_mm": frames_mm});
    if let Some((poses, rotation)) = base {
        spec["base_pose"] = serde_json::json!(poses);
        spec["rotation"] = serde_json::json!(rotation);
    }
    run_python(python, "write_mocap_tables.py", &spec);
}

fn map_text(up: &str, reference: bool) -> String {
    let markers: String = LABELS[..4].iter().enumerate().map(|(k, l)| format!("\"{l}\" = {k}\n")).collect();
    format!(
        "# Labels -> the markers of configs/rod/rectangular-beam.toml.\n[markers]\n{markers}\n[world]\nup = \"{up}\"\n\n\
         # The clamp cluster as drawn, in the rod's base frame.\n[base]\nlabels = [\"Clamp:C1\", \"Clamp:C2\", \"Clamp:C3\"]\npositions_m = {CLUSTER:?}\nstill = true\n\n{}\
         # A plain CSV's columns (the other formats name their own).\n[table]\ntime = \"t_s\"\nunits = \"mm\"\n",
        if reference { format!("# Held straight by the support here.\n[reference]\nwindow_s = {WINDOW_S:?}\n\n") } else { String::new() }
    )
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o));
    String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(o)
}

fn run_ok(args: &[String]) -> String {
    let out = ok(&rodlab(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    println!("{out}");
    out
}

/// The five exports of a day: `<dir>/<format>/<trial>.<ext>`.
const FORMATS: [(&str, &str, &str); 5] =
    [("c3d", "c3d", "c3d"), ("qualisys", "tsv", "table"), ("motive", "csv", "table"), ("vicon", "csv", "table"), ("plain", "csv", "table")];

/// Imports every file of `format` into `<work>/<format>/`; returns the output.
fn import(data: &Path, work: &Path, format: (&str, &str, &str), map: &Path) -> String {
    let (name, ext, command) = format;
    let files: Vec<String> = (0..MASSES_KG.len()).map(|k| data.join(name).join(format!("{}.{ext}", trial_name(k))).display().to_string()).collect();
    let mut args = vec!["import".to_string(), command.to_string()];
    args.extend(files);
    args.extend(["--rod", BEAM, "--map", &map.display().to_string(), "--out", &work.join(name).display().to_string()].map(String::from));
    run_ok(&args)
}

/// Two sessions hold the same tracks: times, positions (to 1e-9 m; missing
/// alike) and base poses.
fn assert_same_session(a: &Path, b: &Path) {
    let (ra, rb) = (session::read_markers(&a.join("markers.parquet")).unwrap(), session::read_markers(&b.join("markers.parquet")).unwrap());
    assert_eq!(ra.len(), rb.len(), "{} vs {}", a.display(), b.display());
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!((x.marker, x.flags), (y.marker, y.flags), "{} vs {}", a.display(), b.display());
        assert!((x.t_s - y.t_s).abs() < 1e-12);
        for (u, v) in [(x.x_m, y.x_m), (x.y_m, y.y_m), (x.z_m, y.z_m)] {
            assert!((u.is_nan() && v.is_nan()) || (u - v).abs() < 1e-9, "{} vs {}: {u} vs {v} (marker {} at {} s)", a.display(), b.display(), x.marker, x.t_s);
        }
    }
    let base = |d: &Path| session::Table::read_chunks(&session::stream_dir(d, "mocap_base")).unwrap();
    let (ba, bb) = (base(a), base(b));
    for c in ["x_m", "y_m", "z_m", "rx_rad", "ry_rad", "rz_rad"] {
        let (u, v) = (ba.f64(c).unwrap(), bb.f64(c).unwrap());
        assert_eq!(u.len(), v.len());
        assert!(u.iter().zip(&v).all(|(p, q)| (p - q).abs() < 1e-9), "base {c}: {} vs {}", a.display(), b.display());
    }
    let (ma, mb) = (session::SessionMeta::read(a).unwrap().unwrap(), session::SessionMeta::read(b).unwrap().unwrap());
    assert!((ma.release_s.unwrap() - mb.release_s.unwrap()).abs() < 1e-9, "{:?} vs {:?}", ma.release_s, mb.release_s);
    for (p, q) in ma.markers_on_body.iter().zip(&mb.markers_on_body) {
        assert!((Vec3::from(p.offset_body_m) - Vec3::from(q.offset_body_m)).norm() < 1e-9);
    }
}

fn parameter(fit: &Path, name: &str) -> (f64, [f64; 2]) {
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(fit.join("identified.toml")).unwrap()).unwrap();
    let p = &v["parameters"][name];
    (p["value"].as_float().unwrap(), [p["ci95"][0].as_float().unwrap(), p["ci95"][1].as_float().unwrap()])
}

/// The day in five formats: the same sessions; E and rho from the settled
/// trials within 1 % with `[reference]` (and the import's warning without);
/// the releases replayed in air give the damping ratio and E.
#[test]
fn a_mocap_day_in_five_formats_imports_alike_and_identifies_statics_and_releases() {
    let Some(python) = venv_python("c3d", "motion-capture formats") else { return };
    // RODLAB_MOCAP_DAY=DIR keeps the day (data, sessions, fits) there.
    let tmp = tempfile::tempdir().unwrap();
    let day = std::env::var_os("RODLAB_MOCAP_DAY").map_or(tmp.path().to_path_buf(), std::path::PathBuf::from);
    let dir = day.as_path();
    let (data, work) = (dir.join("data"), dir.join("sessions"));
    for (name, _, _) in FORMATS {
        std::fs::create_dir_all(data.join(name)).unwrap();
    }
    for k in 0..MASSES_KG.len() {
        let frames_mm: Frames = trial_world(k).iter().map(|f| f.iter().map(|p| p.map(|w| stored_mm(&mocap_x_up(&w)))).collect()).collect();
        let stem = trial_name(k);
        write_c3d(&python, &data.join("c3d").join(format!("{stem}.c3d")), &frames_mm, &LABELS);
        for (name, ext, _) in &FORMATS[1..] {
            write_table(&python, &data.join(name).join(format!("{stem}.{ext}")), name, &frames_mm, &LABELS, None);
        }
    }
    let masses: String =
        (0..MASSES_KG.len()).map(|k| format!("[[tip_mass]]\nsession = \"{}\"\nkg = {}\noffset_m = {HOOK_M:?}\n", trial_name(k), MASSES_KG[k])).collect();
    std::fs::write(data.join("masses.toml"), format!("# Each trial's mass, hung from the start (the support holds the beam).\n{masses}")).unwrap();
    let map = data.join("map.toml");
    std::fs::write(&map, map_text("+x", true)).unwrap();
    let scene = data.join("release.toml");
    std::fs::write(
        &scene,
        "# The beam let go in air: each session replayed from its release, at rest in the held shape.\n\
         gravity_m_s2 = [0.0, 0.0, -9.81]\n[time]\nstep_s = 0.002\nduration_s = 1.5\nmode = \"dynamic\"\nintegrator = \"bdf2\"\nstart = \"release\"\n\
         [base]\nkind = \"prescribed\"\n",
    )
    .unwrap();
    // With RODLAB_MOCAP_RELEASE_DATASET=DIR the day's C3D files, map,
    // masses and scene are also written there (how
    // datasets/mocap-release was made).
    if let Some(keep) = std::env::var_os("RODLAB_MOCAP_RELEASE_DATASET") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        for k in 0..MASSES_KG.len() {
            let name = format!("{}.c3d", trial_name(k));
            std::fs::copy(data.join("c3d").join(&name), keep.join(&name)).unwrap();
        }
        for f in ["map.toml", "masses.toml", "release.toml"] {
            std::fs::copy(data.join(f), keep.join(f)).unwrap();
        }
    }
    // The lab's rod file (its [identify] model_error_m: the axis known to
    // about 0.01 rad once registered on the held pose).
    let beam = BEAM;

    // Five formats, one day: the same sessions.
    for format in FORMATS {
        let out = import(&data, &work, format, &map);
        assert_eq!(out.matches("released at t = ").count(), MASSES_KG.len(), "{out}");
        assert_eq!(out.matches("on the body: ").count(), 4 * MASSES_KG.len(), "{out}");
    }
    for k in 0..MASSES_KG.len() {
        for (name, _, _) in &FORMATS[1..] {
            assert_same_session(&work.join("c3d").join(trial_name(k)), &work.join(name).join(trial_name(k)));
        }
        // The release, back to its onset: within a few ms of the truth.
        let meta = session::SessionMeta::read(&work.join("c3d").join(trial_name(k))).unwrap().unwrap();
        let found = meta.release_s.unwrap();
        println!("{}: released at {found:.4} s, truth {:.4} s", trial_name(k), release_s(k));
        assert!((found - release_s(k)).abs() < 0.002, "{found} vs {}", release_s(k));
        // The places measured on the body: the base registered on the held
        // pose takes up how the beam sits in the clamp and the tilt the
        // misplaced cluster gives the clamp's frame; what is left is the
        // markers' own 1-2 mm; their spread is the tracking noise (0.17 mm
        // RMS in 3D).
        for m in &meta.markers_on_body {
            assert!((0.5e-3..2.5e-3).contains(&m.design_distance_m) && m.spread_m < 2.5e-4, "{m:?}");
        }
    }

    // Static identification: the settled part of each trial (after its release).
    let sessions: Vec<String> = (0..MASSES_KG.len()).map(|k| work.join("c3d").join(trial_name(k)).display().to_string()).collect();
    let identify = |sessions: &[String], out: &Path| {
        let mut args: Vec<String> = ["identify", "--rod", beam, "--sessions"].map(String::from).to_vec();
        args.extend(sessions.iter().cloned());
        args.extend(["--loads", &data.join("masses.toml").display().to_string(), "--out", &out.display().to_string(), "--no-loo"].map(String::from));
        run_ok(&args)
    };
    let fit = dir.join("fit");
    let out = identify(&sessions, &fit);
    assert!(out.contains("held until its release"), "{out}");
    let ((e, e_ci), (rho, rho_ci)) = (parameter(&fit, "e_pa"), parameter(&fit, "rho_kg_m3"));
    println!("with [reference]: E {e:.1} Pa {e_ci:?} (truth {E_TRUE_PA}), rho {rho:.2} {rho_ci:?} (truth {RHO_TRUE_KG_M3})");
    assert!((e / E_TRUE_PA - 1.0).abs() < 0.01, "E {e}");
    assert!((rho / RHO_TRUE_KG_M3 - 1.0).abs() < 0.01, "rho {rho}");

    // Without [reference]: the design positions, and the import says how far off they are.
    let plain_map = data.join("map-design.toml");
    std::fs::write(&plain_map, map_text("+x", false)).unwrap();
    let design = dir.join("design");
    let out = import(&data, &design, FORMATS[0], &plain_map);
    assert_eq!(out.matches("sit from their design positions").count(), MASSES_KG.len(), "{out}");
    assert!(out.contains("\"Beam:TipTop\"") && out.contains("[reference] window_s"), "{out}");
    let design_sessions: Vec<String> = (0..MASSES_KG.len()).map(|k| design.join("c3d").join(trial_name(k)).display().to_string()).collect();
    let design_fit = dir.join("design-fit");
    let o = rodlab(
        &[
            &["identify", "--rod", beam, "--sessions"][..],
            &design_sessions.iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["--loads", data.join("masses.toml").to_str().unwrap(), "--out", design_fit.to_str().unwrap(), "--no-loo"][..],
        ]
        .concat(),
    );
    println!("without [reference]: {}\n{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    if o.status.success() {
        let (e_design, _) = parameter(&design_fit, "e_pa");
        println!("without [reference]: E {e_design:.1} Pa ({:+.1} %)", 100.0 * (e_design / E_TRUE_PA - 1.0));
    }

    // The releases, replayed in air from each session's release, the hung
    // mass with its inertia: the damping ratio, then E with it.
    let dynamic = |extra: &[&str], out: &Path| {
        let mut args: Vec<String> = ["identify", "--dynamic", "--rod", beam, "--sessions"].map(String::from).to_vec();
        args.extend(sessions.iter().cloned());
        args.extend(["--scene", scene.to_str().unwrap(), "--params", fit.join("identified.toml").to_str().unwrap()].map(String::from));
        args.extend(["--loads", data.join("masses.toml").to_str().unwrap(), "--out", out.to_str().unwrap()].map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        run_ok(&args)
    };
    let damping = dir.join("damping");
    let out = dynamic(&[], &damping);
    assert!(out.contains("not a parameter: the scene has no table"), "{out}");
    assert!(out.contains("replayed from its release") && out.contains("hung mass of 100.0 g"), "{out}");
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(damping.join("identified.toml")).unwrap()).unwrap();
    let zeta = v["dynamic"]["damping_ratio"].as_float().unwrap();
    println!("damping ratio {zeta:.5} (truth {ZETA_TRUE})");
    assert!((zeta / ZETA_TRUE - 1.0).abs() < 0.05, "damping ratio {zeta}");
    let stiffness = dir.join("stiffness");
    dynamic(&["--fit-stiffness"], &stiffness);
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(stiffness.join("identified.toml")).unwrap()).unwrap();
    let (e_dyn, zeta_dyn) = (v["dynamic"]["e_pa"].as_float().unwrap(), v["dynamic"]["damping_ratio"].as_float().unwrap());
    println!("with --fit-stiffness: E {e_dyn:.1} Pa ({:+.2} %), damping ratio {zeta_dyn:.5}", 100.0 * (e_dyn / E_TRUE_PA - 1.0));
    assert!((e_dyn / E_TRUE_PA - 1.0).abs() < 0.02, "E {e_dyn}");
    assert!((zeta_dyn / ZETA_TRUE - 1.0).abs() < 0.05, "damping ratio {zeta_dyn}");

    // Validate the 100 g release with the fit: the replay follows the markers.
    let report = dir.join("validate");
    let out = rodlab(&[
        "validate",
        work.join("c3d").join(trial_name(3)).to_str().unwrap(),
        "--rod",
        beam,
        "--params",
        stiffness.join("identified.toml").to_str().unwrap(),
        "--scene",
        scene.to_str().unwrap(),
        "--loads",
        data.join("masses.toml").to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    println!("{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    for m in summary["markers"].as_array().unwrap() {
        let rms_mm = m["errors_mm"]["rms"].as_f64().unwrap();
        println!("marker {}: {rms_mm:.3} mm RMS", m["marker"]);
        assert!(rms_mm < 0.3, "marker {}: {rms_mm} mm", m["marker"]);
    }
    // The release's page a paper can use (#81): the measured strain as
    // points, the model's as a line in its band, a residual panel beneath,
    // each figure as SVG and PNG with its series as JSON (rodlab.plot).
    let chart: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.join("strain_time.json")).unwrap()).unwrap();
    let series = chart["series"].as_array().unwrap();
    let measured = series.iter().filter(|s| s["style"] == "Points" && !s["points"].as_array().unwrap().is_empty()).count();
    let banded = series.iter().filter(|s| s["style"] == "Line" && !s["band"].as_array().unwrap().is_empty()).count();
    assert!(measured > 0 && banded == measured, "{measured} measured series, {banded} simulated in a band");
    let residual: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.join("strain_residual.json")).unwrap()).unwrap();
    assert!(residual["series"].as_array().unwrap().len() > measured, "a residual per node and the band");
    // The band carries the fitted parameters' uncertainty: E (and G with
    // it) from the releases, replayed once more along their covariance.
    let band = &summary["band"];
    assert!(band["parameters"].as_array().unwrap().iter().any(|p| p == "ln_e") && band["replays"].as_u64().unwrap() >= 1, "{band}");
    let headline = summary["strain"].as_array().unwrap().iter().filter(|c| c["significant"] == true).map(|c| c["parameter_sd_rms"].as_f64().unwrap());
    assert!(headline.clone().all(|sd| sd > 0.0) && headline.count() > 0, "the parameters move the simulated strain");
    let figures = report::check_figures(&report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    assert!(figures.iter().any(|f| f == "strain_time") && figures.iter().any(|f| f == "strain_residual"), "{figures:?}");
}

/// The viscoelastic beam's truth: relaxed E, and two Maxwell branches
/// whose times bracket the releases' periods (0.14-0.33 s): the stiffness
/// seen at 3-7 Hz lies 20-30 % above the relaxed one, the loss nearly flat.
const PRONY_TRUE: [(f64, f64); 2] = [(0.25, 0.02), (0.15, 0.1)];
/// Its releases: three hung masses.
const PRONY_MASSES_KG: [f64; 3] = [0.0, 0.05, 0.1];

fn prony_trial(k: usize) -> String {
    format!("ve-{}g", (PRONY_MASSES_KG[k] * 1e3).round())
}

/// The rod file with `[damping] branches` at `branches` in place of the
/// damping ratio (a lab's guess of the law: the fit's start).
fn prony_rod_file(path: &Path, branches: &[(f64, f64)]) {
    let text = std::fs::read_to_string(root().join(BEAM)).unwrap();
    let list: Vec<String> = branches.iter().map(|(r, t)| format!("{{ modulus_ratio = {r}, time_constant_s = {t} }}")).collect();
    let text = text.replace("damping_ratio = 0.1", &format!("branches = [{}]", list.join(", ")));
    assert!(text.contains("branches = ["));
    std::fs::write(path, text).unwrap();
}

/// A beam whose silicone is viscoelastic (a two-branch Prony series, no
/// Kelvin-Voigt damping), released with three hung masses, recorded as
/// C3D by py-c3d and imported: statics give the relaxed E, `identify
/// --dynamic` with the rod file's branches at a guess (each value 1.3-1.6
/// times off) recovers every branch's modulus ratio and time within 3 %,
/// the truth inside each interval, with one set for all three masses, and
/// the fit passes its chi-square. The elastic law with a damping ratio,
/// its stiffness fitted too, cannot follow all three releases: its
/// chi-square fails, naming the viscoelastic law as the missing term.
#[test]
fn a_viscoelastic_beam_s_branches_are_recovered_from_releases_and_kelvin_voigt_is_flagged() {
    let Some(python) = venv_python("c3d", "motion-capture formats") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (data, work) = (dir.join("data"), dir.join("sessions"));
    std::fs::create_dir_all(&data).unwrap();
    let mut truth = truth_rod();
    truth.damping = None;
    truth.viscoelastic = PRONY_TRUE.iter().map(|(r, t)| rod::PronyBranch { modulus_ratio: *r, time_constant_s: *t }).collect();
    let mut files = vec![];
    for (k, mass_kg) in PRONY_MASSES_KG.iter().enumerate() {
        let frames_mm: Frames = trial_world_of(&truth, *mass_kg, k).iter().map(|f| f.iter().map(|p| p.map(|w| stored_mm(&mocap_x_up(&w)))).collect()).collect();
        let path = data.join(format!("{}.c3d", prony_trial(k)));
        write_c3d(&python, &path, &frames_mm, &LABELS);
        files.push(path.display().to_string());
    }
    let masses: String = (0..PRONY_MASSES_KG.len())
        .map(|k| format!("[[tip_mass]]\nsession = \"{}\"\nkg = {}\noffset_m = {HOOK_M:?}\n", prony_trial(k), PRONY_MASSES_KG[k]))
        .collect();
    let (masses_toml, map, scene) = (data.join("masses.toml"), data.join("map.toml"), data.join("release.toml"));
    std::fs::write(&masses_toml, masses).unwrap();
    std::fs::write(&map, map_text("+x", true)).unwrap();
    // The replay's step as the truth's: at 2 ms BDF2's numerical damping of
    // the higher modes biased the fitted times 5-6 % (measured), with a
    // warning that the step is coarse against the shortest time.
    std::fs::write(
        &scene,
        "gravity_m_s2 = [0.0, 0.0, -9.81]\n[time]\nstep_s = 0.0005\nduration_s = 1.5\nmode = \"dynamic\"\nintegrator = \"bdf2\"\nstart = \"release\"\n[base]\nkind = \"prescribed\"\n",
    )
    .unwrap();
    let prony_rod = dir.join("beam-prony.toml");
    prony_rod_file(&prony_rod, &[(0.4, 0.03), (0.1, 0.15)]);
    let mut args: Vec<String> = ["import", "c3d"].map(String::from).to_vec();
    args.extend(files);
    args.extend(["--rod", prony_rod.to_str().unwrap(), "--map", map.to_str().unwrap(), "--out", work.to_str().unwrap()].map(String::from));
    run_ok(&args);
    let sessions: Vec<String> = (0..PRONY_MASSES_KG.len()).map(|k| work.join(prony_trial(k)).display().to_string()).collect();

    // The settled shapes: the relaxed modulus.
    let fit = dir.join("fit");
    let mut args: Vec<String> = ["identify", "--rod", prony_rod.to_str().unwrap(), "--sessions"].map(String::from).to_vec();
    args.extend(sessions.iter().cloned());
    args.extend(["--loads", masses_toml.to_str().unwrap(), "--out", fit.to_str().unwrap(), "--no-loo"].map(String::from));
    run_ok(&args);
    let (e, _) = parameter(&fit, "e_pa");
    println!("relaxed E from the settled shapes: {e:.1} Pa (truth {E_TRUE_PA})");
    assert!((e / E_TRUE_PA - 1.0).abs() < 0.01, "E {e}");

    let dynamic = |rod: &Path, scene: &Path, extra: &[&str], out: &Path| {
        let mut args: Vec<String> = ["identify", "--dynamic", "--rod", rod.to_str().unwrap(), "--sessions"].map(String::from).to_vec();
        args.extend(sessions.iter().cloned());
        args.extend(["--scene", scene.to_str().unwrap(), "--params", fit.join("identified.toml").to_str().unwrap()].map(String::from));
        args.extend(["--loads", masses_toml.to_str().unwrap(), "--out", out.to_str().unwrap()].map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        let printed = run_ok(&args);
        let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
        (printed, v["dynamic"].clone())
    };
    let (printed, d) = dynamic(&prony_rod, &scene, &[], &dir.join("prony"));
    assert!(!printed.contains("damping ratio =") && printed.contains("branch 2"), "{printed}");
    let branches = d["branches"].as_array().unwrap();
    for (b, (ratio, tau)) in branches.iter().zip(PRONY_TRUE) {
        let value = |k: &str| b[k].as_float().unwrap();
        let ci = |k: &str| b[k].as_array().unwrap().iter().map(|x| x.as_float().unwrap()).collect::<Vec<_>>();
        let (r, t, r_ci, t_ci) = (value("modulus_ratio"), value("time_constant_s"), ci("modulus_ratio_ci95"), ci("time_constant_ci95_s"));
        println!("branch: ratio {r:.4} {r_ci:?} (truth {ratio}), time {t:.5} s {t_ci:?} (truth {tau})");
        assert!((r / ratio - 1.0).abs() < 0.03 && (t / tau - 1.0).abs() < 0.03, "{b:?}");
        assert!(r_ci[0] <= ratio && ratio <= r_ci[1] && t_ci[0] <= tau && tau <= t_ci[1], "{b:?}");
    }
    let test = &d["noise_test"];
    println!("Prony fit: chi-square {} on {}", test["chi_square"], test["dof"]);
    assert!(test["p"].as_float().unwrap() >= 1e-3, "{test:?}");
    // Motion capture: the markers and the clamp share one clock, no delay fitted.
    assert!(d["marker_delay_s"].as_array().unwrap().iter().all(|x| x.as_float() == Some(0.0)), "{d:?}");

    // At 0.5 ms (40 steps per shortest time) no warning that the step is
    // coarse (at 2 ms the fit warns, its times 5-6 % long: the warning is
    // lab::dynamic's unit test, a fit less here).
    assert!(!printed.contains("is coarse against the shortest branch time"), "{printed}");
    let coarse = data.join("release-2ms.toml");
    std::fs::write(&coarse, std::fs::read_to_string(&scene).unwrap().replace("step_s = 0.0005", "step_s = 0.002")).unwrap();

    // Elastic + Kelvin-Voigt, E free with the motion: flagged (at 2 ms:
    // its misfit is 9 times the noise, the step's a few hundredths).
    let (printed, kv) = dynamic(Path::new(BEAM), &coarse, &["--fit-stiffness"], &dir.join("kelvin-voigt"));
    let test = &kv["noise_test"];
    println!("Kelvin-Voigt fit: chi-square {} on {}, scale {}", test["chi_square"], test["dof"], test["scale"]);
    assert!(test["p"].as_float().unwrap() < 1e-3, "{test:?}");
    assert!(printed.contains("the replay misses the recorded motion") && printed.contains("a viscoelastic law"), "{printed}");
}

/// The mocap's frame for each `up`, as the map's reference documents it
/// (world from mocap: the other axes follow right-handed).
fn mocap_of(up: &str, w: &[f64; 3]) -> [f64; 3] {
    let [x, y, z] = *w;
    match up {
        "+z" => [x, y, z],
        "-z" => [x, -y, -z],
        "+y" => [x, z, -y],
        "-y" => [x, -z, y],
        "+x" => [z, x, y],
        "-x" => [-z, x, -y],
        _ => unreachable!(),
    }
}

/// A held beam seen for `n` frames (straight, the cluster), world, mm as stored.
fn held_frames(n: usize, tip_drift_mm: f64) -> Vec<Vec<Option<[f64; 3]>>> {
    let base = beam_base(0);
    beam_frames(n, 7, NOISE_M, |f, m, mk| {
        let drift = if m == 0 { Vec3::new(0.0, 0.0, tip_drift_mm * 1e-3 * f as f64 / n as f64) } else { Vec3::zeros() };
        base.transform_point(&(Vec3::new(mk.arc_m, 0.0, 0.0) + mk.offset_body_m)) + drift
    })
}

/// `n` frames of the truth rod's markers where `place(frame, marker, its
/// design)` puts them (world) and of the clamp cluster, each coordinate
/// with `noise_m` of noise (seed `seed`), as a C3D file stores them.
fn beam_frames(n: usize, seed: u64, noise_m: f64, place: impl Fn(usize, usize, &rod::Marker) -> Vec3) -> Frames {
    let rod = truth_rod();
    let mut noise = Noise(seed);
    (0..n)
        .map(|f| {
            let markers = rod.markers.iter().enumerate().map(|(m, mk)| place(f, m, mk));
            let cluster = CLUSTER.iter().zip(CLUSTER_OFF_MM).map(|(p, o)| clamp().transform_point(&(Vec3::from(*p) + Vec3::from(o) * 1e-3)));
            markers.chain(cluster).map(|p| Some(stored_mm(&(p + Vec3::from_fn(|_, _| noise.gauss(noise_m)))))).collect()
        })
        .collect()
}

/// Each `[world] up` round-trips a C3D file written in that convention (the
/// world tracks back to 1e-9 m); a tilted calibration (`rotation`) and a
/// base pose given as a quaternion, a rotation vector or Euler angles
/// round-trip a plain CSV; a non-rotation, a reference window in which a
/// marker moves and a window outside the file exit 2 with one line.
#[test]
fn every_up_axis_a_tilted_calibration_and_base_pose_columns_round_trip() {
    let Some(python) = venv_python("c3d", "motion-capture formats") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = held_frames(100, 0.0);
    let frames_in = |f: &dyn Fn(&[f64; 3]) -> [f64; 3]| -> Frames { world.iter().map(|fr| fr.iter().map(|p| p.map(|v| f(&v))).collect()).collect() };
    let import_c3d = |file: &Path, map: &str, out: &str| {
        let m = d.join(format!("{out}-map.toml"));
        std::fs::write(&m, map).unwrap();
        rodlab(&["import", "c3d", file.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join(out).to_str().unwrap()])
    };
    let world_rows = |out: &str| session::read_markers(&d.join(out).join("markers.parquet")).unwrap();
    for up in ["+z", "-z", "+y", "-y", "+x", "-x"] {
        let file = d.join(format!("up{up}.c3d"));
        write_c3d(&python, &file, &frames_in(&|w| mocap_of(up, w)), &LABELS);
        ok(&import_c3d(&file, &map_text(up, true), &format!("up{up}")));
        let rows = world_rows(&format!("up{up}"));
        for r in &rows {
            let want = world[(r.t_s * RATE_HZ).round() as usize][r.marker as usize].unwrap();
            let got = [r.x_m * 1e3, r.y_m * 1e3, r.z_m * 1e3];
            assert!((0..3).all(|i| (got[i] - want[i]).abs() < 1e-6), "up {up}: marker {} {got:?} vs {want:?} mm", r.marker);
        }
    }

    // A tilted calibration: the mocap's frame turned by a rotation that is
    // no axis swap (plain CSV, full precision).
    let tilt = Pose::from_rpy(0.05, -0.03, 0.4, Vec3::zeros()).rot * Mat3::new(0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0);
    let rows: Vec<String> = (0..3).map(|i| format!("[{:?}, {:?}, {:?}]", tilt[(i, 0)], tilt[(i, 1)], tilt[(i, 2)])).collect();
    let tilted_map = map_text("+z", true).replace("up = \"+z\"", &format!("rotation = [{}]", rows.join(", ")));
    let to_mocap = tilt.transpose();
    let csv = d.join("tilted.csv");
    write_table(&python, &csv, "plain", &frames_in(&|w| (to_mocap * Vec3::from(*w)).into()), &LABELS, None);
    let m = d.join("tilted-map.toml");
    std::fs::write(&m, &tilted_map).unwrap();
    ok(&rodlab(&["import", "table", csv.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join("tilted").to_str().unwrap()]));
    for r in world_rows("tilted") {
        let want = world[(r.t_s * RATE_HZ).round() as usize][r.marker as usize].unwrap();
        let got = [r.x_m * 1e3, r.y_m * 1e3, r.z_m * 1e3];
        assert!((0..3).all(|i| (got[i] - want[i]).abs() < 1e-6), "tilted: {got:?} vs {want:?} mm");
    }

    // The base's pose as columns (no cluster): a quaternion, a rotation
    // vector, Euler angles (x, then y, then z about fixed axes, degrees).
    // No [world]: the mocap's frame is the world's.
    let clamp_mocap = clamp();
    let phi = lie::so3_log(&clamp_mocap.rot);
    let (angle, axis) = (phi.norm(), phi.normalize());
    let q = [(angle / 2.0).cos(), (angle / 2.0).sin() * axis.x, (angle / 2.0).sin() * axis.y, (angle / 2.0).sin() * axis.z];
    let pose_row = [clamp_mocap.pos.x * 1e3, clamp_mocap.pos.y * 1e3, clamp_mocap.pos.z * 1e3, q[0], q[1], q[2], q[3]];
    let poses = vec![pose_row; world.len()];
    let markers_only: Frames = world.iter().map(|f| f[..4].to_vec()).collect();
    for (rotation, columns) in [
        ("quaternion", "rotation = \"quaternion\"\nrotation_columns = [\"qw\", \"qx\", \"qy\", \"qz\"]"),
        ("rotation_vector", "rotation = \"rotation_vector\"\nrotation_columns = [\"rx\", \"ry\", \"rz\"]"),
        ("euler_xyz_deg", "rotation = \"euler\"\neuler_order = \"xyz\"\neuler_degrees = true\nrotation_columns = [\"roll_deg\", \"pitch_deg\", \"yaw_deg\"]"),
    ] {
        let csv = d.join(format!("{rotation}.csv"));
        write_table(&python, &csv, "plain", &markers_only, &LABELS[..4], Some((&poses, rotation)));
        let markers: String = LABELS[..4].iter().enumerate().map(|(k, l)| format!("\"{l}\" = {k}\n")).collect();
        let map = format!(
            "[markers]\n{markers}[table]\ntime = \"t_s\"\nunits = \"mm\"\n[table.base_pose]\nposition = [\"base_x\", \"base_y\", \"base_z\"]\n{columns}\n"
        );
        let m = d.join(format!("{rotation}-map.toml"));
        std::fs::write(&m, map).unwrap();
        let out = d.join(rotation);
        ok(&rodlab(&["import", "table", csv.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", out.to_str().unwrap()]));
        let b = session::Table::read_chunks(&session::stream_dir(&out, "mocap_base")).unwrap();
        let got = [
            b.f64("x_m").unwrap()[0],
            b.f64("y_m").unwrap()[0],
            b.f64("z_m").unwrap()[0],
            b.f64("rx_rad").unwrap()[0],
            b.f64("ry_rad").unwrap()[0],
            b.f64("rz_rad").unwrap()[0],
        ];
        let want = lie::trajectory::pose_to_ur(&clamp());
        assert!((0..6).all(|i| (got[i] - want[i]).abs() < 1e-9), "{rotation}: {got:?} vs {want:?}");
    }

    // Refusals: exit 2, one line naming the field or the marker.
    let good = d.join("up+z.c3d");
    let bad_rotation = map_text("+z", true).replace("up = \"+z\"", "rotation = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.1]]");
    expect_exit_2(import_c3d(&good, &bad_rotation, "bad-rotation"), &["world.rotation", "not a rotation"]);
    let late = map_text("+z", true).replace(&format!("window_s = {WINDOW_S:?}"), "window_s = [0.5, 50.0]");
    expect_exit_2(import_c3d(&good, &late, "late"), &["reference.window_s", "ends after the file"]);
    let drifting = d.join("drifting.c3d");
    write_c3d(&python, &drifting, &held_frames(100, 2.0), &LABELS);
    expect_exit_2(import_c3d(&drifting, &map_text("+z", true), "drifting"), &["marker \"Beam:TipTop\" moves", "reference window"]);
    for out in ["bad-rotation", "late", "drifting"] {
        assert!(!d.join(out).exists(), "{out}: nothing written");
    }
    // A table that is no known format and a map without [table]; a Qualisys
    // file with text where a number belongs.
    let notes = d.join("notes.csv");
    std::fs::write(&notes, "a,b\n1,2\n").unwrap();
    let m = d.join("no-table-map.toml");
    std::fs::write(&m, map_text("+z", false).split("# A plain CSV").next().unwrap()).unwrap();
    expect_exit_2(
        rodlab(&["import", "table", notes.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join("notes").to_str().unwrap()]),
        &["notes.csv: not a Qualisys TSV, Motive CSV or Vicon Nexus CSV", "no [table]"],
    );
    let tsv = d.join("spoilt.tsv");
    write_table(&python, &tsv, "qualisys", &frames_in(&|w| *w), &LABELS, None);
    // Line 13, the first frame: its first marker's X.
    let mut lines: Vec<String> = std::fs::read_to_string(&tsv).unwrap().lines().map(String::from).collect();
    let mut cells: Vec<String> = lines[12].split('\t').map(String::from).collect();
    cells[2] = "abc".into();
    lines[12] = cells.join("\t");
    std::fs::write(&tsv, lines.join("\n")).unwrap();
    expect_exit_2(
        rodlab(&["import", "table", tsv.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join("spoilt").to_str().unwrap()]),
        &["spoilt.tsv: line 13: 'abc' is not a number"],
    );
}

/// Writes `frames_mm` as a vendor's table with `extra` spec fields (a
/// trimmed export's start, current header lines).
fn write_table_with(python: &Path, path: &Path, format: &str, frames_mm: &Frames, extra: serde_json::Value) {
    let mut spec = serde_json::json!({"path": path, "format": format, "rate_hz": RATE_HZ, "labels": LABELS, "frames_mm": frames_mm});
    spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    run_python(python, "write_mocap_tables.py", &spec);
}

/// One motion exported as current vendor software writes it, trimmed to
/// start 1 s into the capture: a Qualisys TSV that opens with
/// `FILE_VERSION 2.0.0` and has a `TIME_STAMP`, a Motive CSV of format
/// 1.25 with its `Capture Start Time`, a Vicon Nexus CSV and a C3D with
/// `TRIAL:DATE` and `TRIAL:TIME` import alike to 1e-9 m, each session at the
/// file's own times (from 1 s, not restarted at 0) and starting when the
/// file says the capture started. Frames a file leaves out are kept as
/// missing at their times; a row that repeats a frame is refused, naming
/// its line.
#[test]
fn current_exports_import_alike_keeping_their_capture_time_and_own_times() {
    let Some(python) = venv_python("c3d", "motion-capture formats") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut frames = held_frames(80, 0.0);
    for f in &mut frames[10..15] {
        f[1] = None;
    }
    let start_s = 1.0;
    let c3d_file = d.join("trimmed.c3d");
    let metres: Vec<Vec<Option<[f64; 3]>>> = frames.iter().map(|f| f.iter().map(|p| p.map(|v| v.map(|x| x / 1000.0))).collect()).collect();
    run_python(
        &python,
        "write_c3d.py",
        &serde_json::json!({"path": c3d_file, "rate_hz": RATE_HZ, "units": "mm", "up": "given", "format": "float", "labels": LABELS, "frames": metres,
            "first_frame": 101, "trial_date": "2026-11-26", "trial_time": "10:21:45.123"}),
    );
    let tables = [
        ("qualisys", "tsv", serde_json::json!({"start_s": start_s, "file_version": true})),
        ("motive", "csv", serde_json::json!({"start_s": start_s, "motive_version": "1.25"})),
        ("vicon", "csv", serde_json::json!({"start_s": start_s})),
    ];
    let map = d.join("map.toml");
    std::fs::write(&map, map_text("+z", false)).unwrap();
    let import = |command: &str, file: &Path, out: &str| {
        ok(&rodlab(&["import", command, file.to_str().unwrap(), "--rod", BEAM, "--map", map.to_str().unwrap(), "--out", d.join(out).to_str().unwrap()]))
    };
    import("c3d", &c3d_file, "c3d");
    for (format, ext, extra) in &tables {
        let file = d.join(format!("trimmed-{format}.{ext}"));
        write_table_with(&python, &file, format, &frames, extra.clone());
        import("table", &file, format);
    }
    let rows = |out: &str| session::read_markers(&d.join(out).join("markers.parquet")).unwrap();
    let reference = rows("c3d");
    assert_eq!(reference.len(), 80 * 4);
    assert!((reference[0].t_s - start_s).abs() < 1e-12 && (reference.last().unwrap().t_s - (start_s + 79.0 / RATE_HZ)).abs() < 1e-12, "{:?}", reference[0]);
    assert_eq!(reference.iter().filter(|r| r.flags & session::flags::MISSING != 0).count(), 5);
    for (format, _, _) in &tables {
        let got = rows(format);
        assert_eq!(got.len(), reference.len(), "{format}");
        for (a, b) in reference.iter().zip(&got) {
            assert!((a.t_s - b.t_s).abs() < 1e-12 && a.t_host_ns == b.t_host_ns && (a.marker, a.flags) == (b.marker, b.flags), "{format}: {a:?} vs {b:?}");
            for (u, v) in [(a.x_m, b.x_m), (a.y_m, b.y_m), (a.z_m, b.z_m)] {
                assert!((u.is_nan() && v.is_nan()) || (u - v).abs() < 1e-9, "{format}: {a:?} vs {b:?}");
            }
        }
    }
    // The capture's start, where the file states one (Nexus' CSV does not).
    for (out, start) in
        [("c3d", Some("2026-11-26T10:21:45.123")), ("qualisys", Some("2026-11-26T10:21:45.123")), ("motive", Some("2026-11-26T10:21:45.123")), ("vicon", None)]
    {
        let meta = session::SessionMeta::read(&d.join(out)).unwrap().unwrap();
        assert_eq!(meta.capture_start.as_deref(), start, "{out}");
        if start.is_some() {
            assert_eq!(meta.start_utc, "2026-11-26T10:21:45.123Z", "{out}");
            assert!((meta.start_unix_s - 1_795_688_505.123).abs() < 1e-3, "{out}: {}", meta.start_unix_s);
        }
        assert!(meta.clock.contains("the file's own time"), "{out}: {}", meta.clock);
    }

    // Frames 20-29 left out of a Motive export: missing at their own times,
    // the later frames where they were.
    let text = std::fs::read_to_string(d.join("trimmed-motive.csv")).unwrap();
    let cut: Vec<&str> = text.lines().filter(|l| !l.split(',').next().and_then(|c| c.parse::<i64>().ok()).is_some_and(|f| (120..130).contains(&f))).collect();
    let gap = d.join("gap.csv");
    std::fs::write(&gap, cut.join("\n") + "\n").unwrap();
    import("table", &gap, "gap");
    let got = rows("gap");
    assert_eq!(got.len(), reference.len());
    for (a, b) in reference.iter().zip(&got) {
        let in_gap = (1.2..1.295).contains(&a.t_s);
        assert!((a.t_s - b.t_s).abs() < 1e-12, "{a:?} vs {b:?}");
        assert_eq!(b.flags & session::flags::MISSING != 0, in_gap || a.flags & session::flags::MISSING != 0, "{b:?}");
        if !in_gap && !b.x_m.is_nan() {
            assert!((a.x_m - b.x_m).abs() < 1e-9, "{a:?} vs {b:?}");
        }
    }
    // A row given twice (the TSV's line 25 repeated): refused, naming it.
    let text = std::fs::read_to_string(d.join("trimmed-qualisys.tsv")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let first_row = lines.iter().position(|l| l.starts_with("Frame\t")).unwrap() + 1;
    lines.insert(first_row + 5, lines[first_row + 4]);
    let twice = d.join("twice.tsv");
    std::fs::write(&twice, lines.join("\n") + "\n").unwrap();
    let o = rodlab(&["import", "table", twice.to_str().unwrap(), "--rod", BEAM, "--map", map.to_str().unwrap(), "--out", d.join("twice").to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("line {}: frame 105 after frame 105", first_row + 6)) && err.trim().lines().count() == 1, "{err}");
    // An export that numbers its frames from 1 but keeps the capture's
    // times (the Time column from 1 s): the times are the file's.
    let renumbered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match l.split_once('\t') {
            Some((frame, rest)) if i >= first_row && frame.parse::<i64>().is_ok() => format!("{}\t{rest}", i - first_row + 1),
            _ => l.to_string(),
        })
        .collect();
    let file = d.join("renumbered.tsv");
    std::fs::write(&file, renumbered.join("\n") + "\n").unwrap();
    import("table", &file, "renumbered");
    for (a, b) in reference.iter().zip(&rows("renumbered")) {
        assert!((a.t_s - b.t_s).abs() < 1e-12 && (a.marker, a.flags) == (b.marker, b.flags), "{a:?} vs {b:?}");
    }
    // Rows lost since the export (NO_OF_FRAMES says 80, 75 are there), and
    // a label the file gives twice: refused, naming them.
    let table = |name: &str, text: String| {
        let f = d.join(name);
        std::fs::write(&f, text).unwrap();
        rodlab(&[
            "import",
            "table",
            f.to_str().unwrap(),
            "--rod",
            BEAM,
            "--map",
            map.to_str().unwrap(),
            "--out",
            d.join(name.replace('.', "-")).to_str().unwrap(),
        ])
    };
    let rows: Vec<&str> = text.lines().collect();
    expect_exit_2(table("short.tsv", rows[..rows.len() - 5].join("\n") + "\n"), &["NO_OF_FRAMES is 80, the rows hold 75 frames (101 to 175)"]);
    expect_exit_2(
        table("twice-label.tsv", text.replace("\tBeam:TipRight", "\tBeam:TipTop")),
        &["the label \"Beam:TipTop\"", "names two of the file's tracks (the 1st and the 2nd)"],
    );
}

/// A beam held by a support that creeps: every marker's base-frame place
/// drifts by `creep_mm` (the tip's; the middle's half) over the first
/// 0.5 s (the map's window [0.05, 0.45] s sees 80 % of it), then at 0.5 s
/// the beam is let go and sags by 20 mm at the tip within 0.1 s and stays
/// there; 0.02 mm of noise on each coordinate (0.035 mm a frame in 3D).
/// World, mm as stored, 1.5 s at 100 Hz.
fn creeping_frames(creep_mm: f64) -> Vec<Vec<Option<[f64; 3]>>> {
    let base = beam_base(0);
    let length_m = truth_rod().length_m;
    beam_frames(150, 31, 2e-5, |f, _, mk| {
        let t = f as f64 / RATE_HZ;
        let down_mm = if t < 0.5 { -creep_mm * t / 0.5 } else { -creep_mm - 20.0 * ((t - 0.5) / 0.1).min(1.0) };
        let share = mk.arc_m / length_m;
        base.transform_point(&(Vec3::new(mk.arc_m, 0.0, down_mm * 1e-3 * share) + mk.offset_body_m))
    })
}

/// A support that creeps 0.15 mm over the reference window (0.035 mm of
/// noise a frame, 20 mm of deflection to measure): accepted, its creep
/// stated (import's output, session.toml) and carried into the place's
/// uncertainty; `find_s` finds a window before the release that is
/// accepted alike. The same support moving 3 mm: refused, naming the
/// marker, the motion and what the window could absorb.
#[test]
fn a_creeping_support_is_accepted_with_its_creep_stated_and_a_moving_one_refused() {
    let Some(python) = venv_python("c3d", "reference windows") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let import = |creep_mm: f64, map: &str, out: &str| {
        let file = d.join(format!("{out}.c3d"));
        write_c3d(&python, &file, &creeping_frames(creep_mm), &LABELS);
        let m = d.join(format!("{out}-map.toml"));
        std::fs::write(&m, map).unwrap();
        rodlab(&["import", "c3d", file.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join(out).to_str().unwrap()])
    };
    // The window covers 0.4 of the 0.5 s ramp: 0.15 mm of creep there.
    let out = ok(&import(0.15 / 0.8, &map_text("+z", true), "creeping"));
    let meta = session::SessionMeta::read(&d.join("creeping")).unwrap().unwrap();
    let tip = &meta.markers_on_body[0];
    println!("{out}\n{tip:?}");
    assert!((tip.creep_m - 0.15e-3).abs() < 0.03e-3, "{tip:?}");
    assert!(tip.place_sigma_m >= tip.creep_m / 12f64.sqrt() && tip.place_sigma_m < tip.creep_m, "{tip:?}");
    assert!(out.contains(&format!("creep {:.3} mm", tip.creep_m * 1e3)), "{out}");
    assert!((meta.release_s.unwrap() - 0.5).abs() < 0.02, "{:?}", meta.release_s);

    // The window found: the stillest 0.3 s before the release.
    let found_map = map_text("+z", true).replace(&format!("window_s = {WINDOW_S:?}"), "find_s = 0.3");
    ok(&import(0.15 / 0.8, &found_map, "found"));
    let found = session::SessionMeta::read(&d.join("found")).unwrap().unwrap();
    let w = found.reference_window_s.unwrap();
    assert!(w[0] >= 0.0 && w[1] < 0.5 && (w[1] - w[0] - 0.29).abs() < 1e-9, "{w:?}");
    assert!(found.markers_on_body[0].creep_m < 0.15e-3, "{:?}", found.markers_on_body[0]);
    assert!((found.release_s.unwrap() - 0.5).abs() < 0.02, "{:?}", found.release_s);

    // 3 mm of motion over the window: refused, with the numbers.
    let o = import(3.0 / 0.8, &map_text("+z", true), "moving");
    expect_exit_2(o, &["marker \"Beam:TipTop\" moves 2.9", "during the reference window [0.05, 0.45] s", "more than the window can absorb", "max_creep_m"]);
    // A declared creep lets it through, stated.
    let declared = map_text("+z", true).replace(&format!("window_s = {WINDOW_S:?}"), &format!("window_s = {WINDOW_S:?}\nmax_creep_m = 0.004"));
    ok(&import(3.0 / 0.8, &declared, "declared"));
}

/// A beam that simply hangs under gravity from the start (never held
/// straight), imported without `[reference]`: no warning that its markers
/// sit from their design positions (they sag, as the rod file's rod does),
/// and none of the axis. The same file written as Motive writes it (y up)
/// and imported with the map's default (z up): the import says the markers
/// deflect away from the declared gravity and names `[world] up`, and keeps
/// it in session.toml for the fits. The beam held straight with its markers
/// 1-2 mm off: the design positions' warning, naming the tip marker.
#[test]
fn warnings_say_the_right_thing_for_a_sagging_beam_a_wrong_axis_and_misplaced_markers() {
    let Some(python) = venv_python("c3d", "import warnings") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let import = |frames: &Frames, map: &str, out: &str| {
        let file = d.join(format!("{out}.c3d"));
        write_c3d(&python, &file, frames, &LABELS);
        let m = d.join(format!("{out}-map.toml"));
        std::fs::write(&m, map).unwrap();
        ok(&rodlab(&["import", "c3d", file.to_str().unwrap(), "--rod", BEAM, "--map", m.to_str().unwrap(), "--out", d.join(out).to_str().unwrap()]))
    };
    // Hanging: the creeping support's frames from 0.7 s on (sagged 20 mm at the tip).
    let sagging: Frames = creeping_frames(0.0)[70..].to_vec();
    let out = import(&sagging, &map_text("+z", false), "sagging");
    assert!(!out.contains("design positions") && !out.contains("[world]"), "{out}");
    // The same beam, the mocap's y up, the map's default z up.
    let y_up: Frames = sagging.iter().map(|f| f.iter().map(|p| p.map(|w| mocap_of("+y", &w))).collect()).collect();
    let out = import(&y_up, &map_text("+z", false).replace("up = \"+z\"\n", ""), "y-up");
    assert!(out.contains("deflect away from where the declared gravity would bend") && out.contains("[world] up"), "{out}");
    let meta = session::SessionMeta::read(&d.join("y-up")).unwrap().unwrap();
    assert!(meta.import_warnings.iter().any(|w| w.contains("[world] up")), "{:?}", meta.import_warnings);
    // With the right axis, the same file imports without a word of it.
    let out = import(&y_up, &map_text("+y", false), "y-up-declared");
    assert!(!out.contains("[world]") && !out.contains("design positions"), "{out}");
    // Held straight with misplaced markers: said, naming the tip's.
    let out = import(&held_frames(60, 0.0), &map_text("+z", false), "held");
    assert!(out.contains("sit from their design positions") && out.contains("\"Beam:TipTop\""), "{out}");
}

/// A real silicone beam nobody here made (`datasets/beam-release-ethz`:
/// the ETH Zurich Soft Robotics Lab's Dragon Skin 10 beam, Qualisys C3D,
/// MIT), imported as published. Its settled shapes give E within 2 % of
/// the authors' own fit (263,824 Pa), their value inside the 95 %
/// interval, the chi-square passing at the rod file's model error. The
/// recordings' ring-downs, read by `lab::ringdown`, ring at what an
/// independent reading of the same files found (#78: 7.69 / 4.35 / 3.37
/// Hz for 0 / 52 / 101 g; here within 0.7 %), with damping ratios of
/// 0.035-0.059 over the first three cycles (that reading, by its own
/// method: 0.05-0.08).
#[test]
fn a_real_silicone_beam_s_statics_land_on_its_authors_e_and_its_releases_ring_as_measured() {
    let dir = tempfile::tempdir().unwrap();
    let data = root().join("datasets/beam-release-ethz");
    let at = |f: &str| data.join(f).display().to_string();
    let sessions = dir.path().join("s");
    let mut args: Vec<String> = ["import", "c3d"].map(String::from).to_vec();
    let trials = ["gravity_V2_a", "gravity_V2_b", "load52_V2_a", "load52_V2_b", "load101_V2_a", "load101_V2_b"];
    args.extend(trials.iter().map(|t| at(&format!("beam_{t}.c3d"))));
    args.extend(["--rod".into(), at("beam.toml"), "--map".into(), at("map.toml"), "--out".into(), sessions.display().to_string()]);
    run_ok(&args);
    let fit = dir.path().join("fit");
    let mut args: Vec<String> = vec!["identify".into(), "--rod".into(), at("beam.toml"), "--sessions".into()];
    args.extend(trials.iter().map(|t| sessions.join(format!("beam_{t}")).display().to_string()));
    args.extend(["--loads".into(), at("masses.toml"), "--out".into(), fit.display().to_string(), "--no-loo".into()]);
    let printed = run_ok(&args);
    let (e, ci) = parameter(&fit, "e_pa");
    const AUTHORS_E_PA: f64 = 263_824.0;
    println!("E {e:.0} Pa {ci:?}, the authors' {AUTHORS_E_PA} Pa");
    assert!((e / AUTHORS_E_PA - 1.0).abs() < 0.02 && ci[0] <= AUTHORS_E_PA && AUTHORS_E_PA <= ci[1], "E {e} {ci:?}");
    assert!(printed.contains("passed at 1e-3"), "{printed}");
    // G is tied to E (the rod file's nu): their +1 correlation is the tie's,
    // said once by its own warning, not a finding (every report said it).
    assert!(printed.contains("G is tied to E") && !printed.contains("ln_e and ln_g are correlated"), "{printed}");
    // No variant asked for, none reported (a fit with the frame's nuisance came with every fit).
    assert!(!printed.contains("alternative fit"), "{printed}");
    // Each hold knows how long its loads had acted (from the release to
    // its middle): what a viscoelastic law's creep is read at (the
    // holds: 1.6-3.0 s to 4.7-5.7 s, the releases at 0.43-0.71 s).
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(fit.join("identified.toml")).unwrap()).unwrap();
    let loaded: Vec<f64> = v["experiment"].as_array().unwrap().iter().map(|x| x["loaded_for_s"].as_float().unwrap()).collect();
    println!("loaded for {loaded:?} s");
    assert!(loaded.len() == 6 && loaded.iter().all(|t| (2.3..4.0).contains(t)), "{loaded:?}");

    // The recordings' first three cycles after each release: the top tip
    // marker along gravity (the world's z).
    let measured = [(7.69, "gravity"), (4.35, "load52"), (3.37, "load101")];
    for t in trials {
        let s = session::SessionDir::new(sessions.join(format!("beam_{t}")));
        let release_s = session::SessionMeta::read(s.path()).unwrap().unwrap().release_s.unwrap();
        let rows: Vec<session::MarkerRow> = session::read_markers(&s.markers()).unwrap().into_iter().filter(|r| r.marker == 0 && r.t_s > release_s).collect();
        let (time, z): (Vec<f64>, Vec<f64>) = rows.iter().map(|r| (r.t_s, r.z_m)).unzip();
        let ring = lab::ringdown::ring_down(&time, &z, 3).unwrap();
        let hz = measured.iter().find(|m| t.starts_with(m.1)).unwrap().0;
        println!("{t}: {:.3} Hz (measured {hz} Hz), log decrement {:.3}, damping ratio {:.3}", ring.frequency_hz, ring.log_decrement, ring.damping_ratio());
        assert!((ring.frequency_hz / hz - 1.0).abs() < 0.015, "{t}: {ring:?}");
        assert!((0.03..0.09).contains(&ring.damping_ratio()), "{t}: {ring:?}");
    }
}
