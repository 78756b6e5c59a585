//! End-to-end tests of the `rodlab` binary itself: arguments, exit codes,
//! the files each command writes, one-line errors naming the file or flag.
//! What the workflows compute is tested on the `lab` library
//! (crates/lab/tests), not through the binary's wording.

use crate::common;
use common::*;
use std::path::Path;

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o));
}

/// `rodlab identify` on the shipped paper data with `rod` into `out`,
/// without the leave-one-out study, plus `extra` arguments.
fn identify_paper(rod: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["identify", "--rod", rod, "--experiments", "datasets/pls-cable-arm", "--out", out.to_str().unwrap(), "--no-loo"];
    args.extend_from_slice(extra);
    rodlab(&args)
}

#[test]
fn solve_writes_the_shape_and_bad_rods_exit_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shape.csv");
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--out", out.to_str().unwrap()]);
    ok(&o);
    let mut reader = csv::Reader::from_path(&out).unwrap();
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), rod::shape::COLUMNS.to_vec());
    let rows: Vec<Vec<f64>> = reader.records().map(|r| r.unwrap().iter().map(|v| v.parse().unwrap()).collect()).collect();
    assert!(rows.len() > 10 && rows[0][0] == 0.0 && (rows.last().unwrap()[0] - 0.2).abs() < 1e-12);

    let good = std::fs::read_to_string(root().join("configs/rod/pls-paper-cantilever.toml")).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing.toml", good.replace("length_m = 0.20\n", ""), "length_m"),
        ("negative.toml", good.replace("base_m = 1.0e-2", "base_m = -1.0e-2"), "radius.base_m"),
        ("sum.toml", good.replace("[0.09, 0.07, 0.04]", "[0.09, 0.07, 0.05]"), "sections_m"),
        ("mode.toml", good.replace("modes = \"cosserat\"", "modes = \"rigid\""), "modes"),
        ("syntax.toml", good.replace("e_pa = 1.1e5", "e_pa = "), "line"),
        ("unweighed.toml", good.replace("e_pa = 1.1e5", "e_pa = 1.1e5\nmass_kg = 0.2"), "material.mass_sigma_kg"),
        (
            "weighed-twice.toml",
            good.replace("e_pa = 1.1e5", "e_pa = 1.1e5\nmass_kg = 0.2\nmass_sigma_kg = 0.001\nmass_per_length_kg_m = 1.0\nmass_per_length_sigma_kg_m = 0.01"),
            "material.mass_kg",
        ),
        ("negative-mass.toml", good.replace("e_pa = 1.1e5", "e_pa = 1.1e5\nmass_kg = -0.2\nmass_sigma_kg = 0.001"), "material.mass_kg"),
    ];
    for (name, text, field) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        expect_exit_2(rodlab(&["solve", "--rod", path.to_str().unwrap()]), &[name, field]);
    }
    expect_exit_2(rodlab(&["solve", "--rod", "does/not/exist.toml"]), &["does/not/exist.toml"]);
    // A device, a FIFO and an oversized file are refused at once, unread
    // (before: /dev/zero grew to 2.1 GB, a FIFO hung).
    let fifo = dir.path().join("fifo.toml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge).unwrap().set_len(17 << 20).unwrap();
    for (path, says) in [("/dev/zero", "not a regular file"), (fifo.to_str().unwrap(), "not a regular file"), (huge.to_str().unwrap(), "bytes, over the")] {
        let started = std::time::Instant::now();
        expect_exit_2(rodlab(&["solve", "--rod", path]), &[path, says]);
        assert!(started.elapsed().as_secs_f64() < 5.0, "{path}");
    }
    expect_exit_2(rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tension", "1,2"]), &["--tension"]);
    expect_exit_2(rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-force", "1,2"]), &["--tip-force"]);
    expect_exit_2(rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-force", "0,0,NaN"]), &["--tip-force", "finite"]);
    // No equilibrium: a failed computation, exit 1, one line.
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-cable-arm.toml", "--tension", "0,0,0,6"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
    // Loads beyond floating point or any material: exit 1, never
    // "converged", no shape written.
    let absurd = dir.path().join("absurd.csv");
    for load in [["--tip-force", "1e200,0,0"], ["--tension", "1e300,0,0,0"]] {
        let o = rodlab(&["solve", "--rod", "configs/rod/pls-cable-arm.toml", load[0], load[1], "--out", absurd.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{load:?}: {}", String::from_utf8_lossy(&o.stdout));
        assert!(!String::from_utf8_lossy(&o.stdout).contains("converged") && !absurd.exists(), "{load:?}");
    }
    let soft = dir.path().join("soft.toml");
    std::fs::write(&soft, std::fs::read_to_string(root().join("configs/rod/pls-cable-arm.toml")).unwrap().replacen("g_pa = ", "g_pa = 1e-300 # ", 1)).unwrap();
    let o = rodlab(&["solve", "--rod", soft.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(stderr(&o).contains("no physical equilibrium") || stderr(&o).contains("did not converge"), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("converged"));
    // A scene whose step is longer than its duration, or too fine to run.
    for (step, needle) in [("10.0", "longer than the duration"), ("1e-9", "steps, more than 1000000")] {
        let scene = dir.path().join(format!("step-{step}.toml"));
        let text = std::fs::read_to_string(root().join("configs/scene/contact-paper-stick.toml")).unwrap();
        let text: String =
            text.lines().map(|l| if l.trim_start().starts_with("step_s") { format!("step_s = {step}") } else { l.to_string() }).collect::<Vec<_>>().join("\n");
        std::fs::write(&scene, text).unwrap();
        expect_exit_2(
            rodlab(&[
                "simulate",
                "--rod",
                "configs/rod/contact-paper-steel-core.toml",
                "--scene",
                scene.to_str().unwrap(),
                "--out",
                dir.path().join("sim").to_str().unwrap(),
            ]),
            &["time", needle],
        );
    }
    ok(&rodlab(&["paper-table"]));
}

/// Every numeric list flag takes a negative first value: clap must hand it
/// to the command (which may still refuse it for its meaning), never call
/// it an unexpected argument.
#[test]
fn every_numeric_list_flag_takes_a_negative_first_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["solve", "--rod", "configs/rod/pls-cable-arm.toml", "--tension", "-1,0,0,0"],
        vec!["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-force", "-0.005,0,0.002"],
        vec!["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-moment", "-0.001,0,0"],
        vec![
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            &d("a"),
            "--no-loo",
            "--reference",
            "-1,2,3",
        ],
        vec![
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            &d("b"),
            "--no-loo",
            "--hold-material",
            "-1,2,3",
        ],
        vec![
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            &d("c"),
            "--no-loo",
            "--fit-cable-offset=-0.001,0.005",
        ],
        vec![
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            &d("d"),
            "--no-loo",
            "--fit-radius-scale=-1,0.1",
        ],
        vec![
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            &d("e"),
            "--no-loo",
            "--fit-cable-angle=-1,5",
            "--fit-cable-offset",
        ],
        vec!["emulate", "ft300", "--port", "/nonexistent/port", "--bias", "-0.5,0,0,0,0,0", "--duration", "0.1"],
        vec![
            "synth",
            "session",
            "--scene",
            "configs/scene/nope.toml",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--out",
            &d("s"),
            "--ft-bias",
            "-1,0,0,0,0,0",
        ],
        vec!["synth", "video", "--out", &d("v"), "--frames", "2", "--occlude", "-1,0,1"],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(String::from).collect())
    .collect();
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = rodlab(&a);
        let err = stderr(&o);
        assert!(!err.contains("unexpected argument") && !err.contains("invalid value"), "{a:?}: {err}");
        assert!(matches!(o.status.code(), Some(0) | Some(1) | Some(2)), "{a:?}: {err}");
    }
    // The negative tip force is applied, not swallowed.
    ok(&rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-force", "-0.005,0,0.002", "--out", &d("shape.csv")]));
}

/// A paper reviewer's checklist of a report's figures (#81,
/// [`report::check_figures`]): the number of figures it checked.
fn paper_figures(dir: &std::path::Path) -> usize {
    report::check_figures(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).len()
}

#[test]
fn identify_writes_its_files_and_a_report_that_renders() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fit");
    ok(&identify_paper("configs/rod/pls-cable-arm.toml", &out, &[]));
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    assert!(v["parameters"]["e_pa"]["value"].as_float().unwrap() > 0.0);
    for f in ["index.html", "summary.json", "parity.png", "convergence.png"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert_eq!(chromium_check(&out.join("index.html")), "images=5/5 svgs=5 errors=0");
    assert_eq!(paper_figures(&out), 5);
    // solve --params reads it.
    ok(&rodlab(&["solve", "--rod", "configs/rod/pls-cable-arm.toml", "--params", out.join("identified.toml").to_str().unwrap(), "--tension", "0,0,0,0.98"]));
    // Bad data: exit 2 naming the file.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::copy(root().join("datasets/pls-cable-arm/inputs.csv"), bad.join("inputs.csv")).unwrap();
    std::fs::write(bad.join("measurements.csv"), "experiment,arc_m\n1,0.2\n").unwrap();
    expect_exit_2(
        rodlab(&[
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            bad.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]),
        &["measurements.csv", "offset_y_m"],
    );
    expect_exit_2(
        rodlab(&["identify", "--rod", "configs/rod/nope.toml", "--experiments", "datasets/pls-cable-arm", "--out", dir.path().join("o").to_str().unwrap()]),
        &["nope.toml"],
    );
}

/// A synthetic session of the stick test (short) into `dir/name`.
fn stick_session(dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let mut args = vec![
        "synth",
        "session",
        "--scene",
        "configs/scene/contact-paper-stick.toml",
        "--rod",
        "configs/rod/contact-paper-steel-core.toml",
        "--out",
        out.to_str().unwrap(),
        "--duration-s",
        "1.5",
    ];
    args.extend(extra);
    ok(&rodlab(&args));
    out
}

/// `observe`, `simulate` and `validate` on synthetic sessions: files
/// written, `--jobs 2` prints two clean summaries (one per session, never
/// interleaved), `--strict` exits 1 on an exceeded check, bad input exits 2.
#[test]
fn observe_simulate_and_validate_write_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = stick_session(dir.path(), "a", &[]);
    let b = stick_session(dir.path(), "b", &["--e-pa", "3.2e5", "--seed", "2"]);
    for f in ["session.toml", "markers.parquet", "streams/robot", "streams/ft300"] {
        assert!(a.join(f).exists(), "{f}");
    }
    assert!(dir.path().join("a-truth/truth.toml").is_file());
    let rod = "configs/rod/contact-paper-steel-core.toml";
    let scene = "configs/scene/contact-paper-stick.toml";
    ok(&rodlab(&["observe", a.to_str().unwrap(), "--rod", rod]));
    assert!(session::read_strain(&a.join("strain.parquet")).unwrap().len() > 10);
    let sim = dir.path().join("sim");
    ok(&rodlab(&["simulate", "--rod", rod, "--scene", scene, "--session", a.to_str().unwrap(), "--out", sim.to_str().unwrap()]));
    for f in ["sim.parquet", "sim_nodes.parquet", "sim_contacts.parquet", "sim_markers.parquet", "index.html", "summary.json"] {
        assert!(sim.join(f).is_file(), "{f}");
    }
    let out = dir.path().join("validate");
    let o = rodlab(&["validate", a.to_str().unwrap(), b.to_str().unwrap(), "--rod", rod, "--scene", scene, "--out", out.to_str().unwrap(), "--jobs", "2"]);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    // Each session's summary is one block starting with its name; no line
    // holds two sessions' text.
    for name in ["a", "b"] {
        assert_eq!(stdout.lines().filter(|l| l.starts_with(&format!("{name}: "))).count(), 1, "{stdout}");
        assert_eq!(stdout.lines().filter(|l| l.starts_with(&format!("finished {name}: "))).count(), 1, "{stdout}");
    }
    assert!(stdout.lines().all(|l| !(l.contains("/a/") && l.contains("/b/"))), "{stdout}");
    for f in ["index.html", "summary.json", "a/index.html", "b/index.html", "a/summary.json"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert!(paper_figures(&out.join("a")) >= 3);
    let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert_eq!(rows[1]["pass"], false, "E off by 28 %");
    // --strict: exit 1 on an exceeded check.
    let o = rodlab(&["validate", b.to_str().unwrap(), "--rod", rod, "--scene", scene, "--out", dir.path().join("strict").to_str().unwrap(), "--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Bad input: exit 2.
    expect_exit_2(
        rodlab(&["validate", a.to_str().unwrap(), "--rod", rod, "--scene", "configs/scene/nope.toml", "--out", out.to_str().unwrap()]),
        &["nope.toml"],
    );
    expect_exit_2(rodlab(&["validate", a.to_str().unwrap(), "--rod", rod, "--scene", scene, "--out", out.to_str().unwrap(), "--sigma-m=-1"]), &["--sigma-m"]);
    let o = rodlab(&["validate", a.to_str().unwrap(), "--rod", rod, "--scene", scene, "--out", out.to_str().unwrap(), "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    expect_exit_2(rodlab(&["observe", dir.path().join("nothing").to_str().unwrap(), "--rod", rod]), &["nothing"]);
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, std::fs::read_to_string(root().join(scene)).unwrap().replace("mu = 0.83", "mu = -0.2")).unwrap();
    expect_exit_2(rodlab(&["simulate", "--rod", rod, "--scene", bad.to_str().unwrap(), "--out", sim.to_str().unwrap()]), &["bad.toml", "table.mu"]);
    // A session without a robot stream cannot drive a simulation.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("streams")).unwrap();
    expect_exit_2(
        rodlab(&["simulate", "--rod", rod, "--scene", scene, "--session", empty.to_str().unwrap(), "--out", sim.to_str().unwrap()]),
        &["robot stream"],
    );
    ok(&rodlab(&["session", "info", a.to_str().unwrap()]));
    ok(&rodlab(&["session", "check", a.to_str().unwrap()]));
}

/// The repository stands alone: no tracked file refers to a path outside
/// it (`../` that climbs above the clone). Paths in Rust sources are taken
/// from their package's directory (`CARGO_MANIFEST_DIR`; the end-to-end
/// tests under tests/ belong to crates/cli), other paths and a module's
/// `#[path]` from the file's own directory.
#[test]
fn no_tracked_file_refers_to_a_path_outside_the_repository() {
    let listed = std::process::Command::new("git").args(["ls-files", "-z"]).current_dir(root()).output().expect("git");
    if !listed.status.success() {
        eprintln!("\n*** SKIPPED: not a git checkout ***\n");
        return;
    }
    let mut outside = vec![];
    for file in String::from_utf8_lossy(&listed.stdout).split('\0').filter(|f| !f.is_empty()) {
        let Ok(text) = std::fs::read_to_string(root().join(file)) else { continue };
        let parts: Vec<&str> = file.split('/').collect();
        let base: Vec<&str> = match (parts.as_slice(), file.ends_with(".rs")) {
            (["crates", name, ..], true) => vec!["crates", name],
            (["tests", ..], true) => vec!["crates", "cli"],
            _ => parts[..parts.len() - 1].to_vec(),
        };
        for (at, _) in text.match_indices("../") {
            // Only where a path starts: not inside another path like a/../b.
            if at > 0 && !matches!(text.as_bytes()[at - 1], b'"' | b'\'' | b'(' | b' ' | b'`' | b'=' | b'\n' | b'<' | b'[') {
                continue;
            }
            let reference: String = text[at..].chars().take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ' | '`' | '\n' | '>' | ']' | ',')).collect();
            // A module's `#[path]` is taken from the file's own directory.
            let mut depth: Vec<&str> = if text[..at].ends_with("#[path = \"") { parts[..parts.len() - 1].to_vec() } else { base.clone() };
            let mut escapes = false;
            for step in reference.split('/') {
                match step {
                    ".." => {
                        if depth.pop().is_none() {
                            escapes = true;
                            break;
                        }
                    }
                    "" | "." => {}
                    s => depth.push(s),
                }
            }
            if escapes {
                let line = text[..at].matches('\n').count() + 1;
                outside.push(format!("{file}:{line}: {reference}"));
            }
        }
    }
    assert!(outside.is_empty(), "paths outside the repository:\n{}", outside.join("\n"));
}

/// The paper's six tip positions declared at 1 mm: the PLS model of the
/// "similar" prototype misses them by 7.7 mm RMS, so without the rod file's
/// model error the residuals fail the chi-square test (358.9 on 15 degrees
/// of freedom): exit 1, the files written marked as failed, the message
/// naming the test, the numbers and where to declare a larger noise. With
/// the shipped 4 mm of model error: 21.1, p = 0.13, passed.
#[test]
fn residuals_far_above_the_declared_noise_fail_the_chi_square_test() {
    let dir = tempfile::tempdir().unwrap();
    let rod = dir.path().join("arm.toml");
    let text = std::fs::read_to_string(root().join("configs/rod/pls-cable-arm.toml")).unwrap();
    assert!(text.contains("model_error_m = 0.004"), "configs/rod/pls-cable-arm.toml changed: update this test");
    std::fs::write(&rod, text.replace("model_error_m = 0.004", "model_error_m = 0.0")).unwrap();
    let out = dir.path().join("fit");
    let o = identify_paper(rod.to_str().unwrap(), &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    for needle in [
        "the residuals are 4.89 times the declared noise",
        "chi-square 358.9 on 15 degrees of freedom",
        "[identify] model_error_m",
        "the data that disagree most: 3 (",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    let file = std::fs::read_to_string(out.join("identified.toml")).unwrap();
    assert!(file.contains("failed = ") && file.contains("chi_square = 358.9"), "{file}");

    let o = identify_paper("configs/rod/pls-cable-arm.toml", &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "chi-square test of the residuals against the declared noise: 21.1 on 15 degrees of freedom, p = 1.33e-1 (model error 4.000 mm allowed): passed"
        ),
        "{text}"
    );
}

/// `identify --compare-variants` then `solve --params identified.toml`:
/// the solve uses the recommended variant's values (E, the shape), exactly
/// as `FILE:<its name>` does, and not the requested fit's.
#[test]
fn solve_with_params_after_compare_variants_uses_the_recommended_variant() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fit");
    ok(&identify_paper("configs/rod/pls-cable-arm.toml", &out, &["--compare-variants"]));
    let file = out.join("identified.toml");
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let recommended = v["recommended_variant"].as_str().unwrap().to_string();
    assert_eq!(v["parameters_from"].as_str(), Some(recommended.as_str()));
    let e_pa = v["parameters"]["e_pa"]["value"].as_float().unwrap();
    let requested_e_pa = v["requested_parameters"]["e_pa"]["value"].as_float().unwrap();
    assert!((e_pa / requested_e_pa - 1.0).abs() > 0.05, "the variants should differ: {e_pa} vs {requested_e_pa}");
    let solve = |params: &str| {
        let o = rodlab(&["solve", "--rod", "configs/rod/pls-cable-arm.toml", "--params", params, "--tension", "0,0,0,0.98"]);
        ok(&o);
        // Everything but the timing line.
        String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.starts_with("converged")).map(String::from).collect::<Vec<_>>()
    };
    let default = solve(file.to_str().unwrap());
    assert!(default[0].contains(&format!("E {e_pa:.4e} Pa")), "{default:?}");
    let by_name = solve(&format!("{}:{recommended}", file.display()));
    assert_eq!(default[1..], by_name[1..], "the default params are the recommended variant's");
    let requested = solve(&format!("{}:requested", file.display()));
    assert!(requested[0].contains(&format!("E {requested_e_pa:.4e} Pa")), "{requested:?}");
    let tip = |lines: &[String]| lines.iter().find(|l| l.starts_with("tip position [m]:")).cloned().unwrap();
    assert_ne!(tip(&default), tip(&requested));
}

#[test]
fn verify_partial_slip_writes_the_lying_rod_against_the_analytic_curve() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("verify");
    ok(&rodlab(&["verify", "partial-slip", "--out", out.to_str().unwrap()]));
    let csv = std::fs::read_to_string(out.join("partial_slip.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t_s,pull_m,force_n,analytic_n,slip_zone_m,normal_force_n"));
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), 201, "a row per step and the start");
    // Half-way through the pull the slip zone spans several sections and
    // the force is the bar on a Coulomb foundation's.
    let mid = &rows[100];
    assert!(mid[4] > 0.1 && (mid[2] / mid[3] - 1.0).abs() < 0.02, "{mid:?}");
    assert!(out.join("index.html").exists() && out.join("partial_slip.png").exists());
}

#[test]
fn a_poisson_ratio_g_cannot_be_tied_by_exits_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let o = identify_paper("configs/rod/pls-cable-arm.toml", &dir.path().join("fit"), &["--tie-g", "0.7"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--tie-g") && e.contains("(-1, 0.5]") && e.trim().lines().count() == 1, "{e}");
}

/// A bare prior flag takes the rod file's `[identify]` prior (it used to be
/// read as absent), and `--pool-cables` pools the per-cable geometry,
/// naming the cables the data never pull.
#[test]
fn bare_prior_flags_take_the_rod_files_priors_and_cables_pool() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pooled");
    let o = identify_paper("configs/rod/pls-cable-arm.toml", &out, &["--fit-cable-offset", "--per-cable", "--fit-cable-angle", "--pool-cables"]);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("cable offsets pooled: the data see cables 1, 4") && stdout.contains("cables 2, 3 are never pulled and borrow from them"),
        "{stdout}"
    );
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    assert_eq!(v["parameters"]["cable_offsets_m"].as_array().unwrap().len(), 4, "{v:?}");
    assert_eq!(v["parameters"]["cable_angles_rad"].as_array().unwrap().len(), 4);
}

/// `identify --dynamic`: a synthetic drag session (a table with mu 0.8, a
/// sensor with a bias) -> identified.toml with [dynamic] and a report;
/// `validate --params` then simulates with the fitted mu; bad requests
/// exit 2 with one line.
#[test]
fn identify_dynamic_writes_friction_that_validate_uses() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("drag.toml");
    std::fs::write(&scene, std::fs::read_to_string(root().join("configs/scene/contact-paper-lying-drag.toml")).unwrap().replace("mu = 0.48", "mu = 0.8"))
        .unwrap();
    let session = dir.path().join("drag");
    let rod = "configs/rod/contact-paper-steel-core.toml";
    let s = session.to_str().unwrap();
    ok(&rodlab(&[
        "synth",
        "session",
        "--scene",
        scene.to_str().unwrap(),
        "--rod",
        rod,
        "--out",
        s,
        "--marker-noise-m",
        "1e-4",
        "--ft-bias",
        "0.3,-0.2,0.5,0,0,0",
    ]));
    let fit = dir.path().join("fit");
    let out = rodlab(&[
        "identify",
        "--dynamic",
        "--rod",
        rod,
        "--sessions",
        s,
        "--scene",
        "configs/scene/contact-paper-lying-drag.toml",
        "--hold-damping",
        "--out",
        fit.to_str().unwrap(),
    ]);
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("mu            = 0.") && stdout.contains("95 % CI") && stdout.contains("damping ratio = 0.0500      held"), "{stdout}");
    for f in ["identified.toml", "index.html", "summary.json"] {
        assert!(fit.join(f).is_file(), "{f}");
    }
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(fit.join("identified.toml")).unwrap()).unwrap();
    let mu = v["dynamic"]["mu"].as_float().unwrap();
    assert!((mu / 0.8 - 1.0).abs() < 0.03, "{mu}");
    // validate --params simulates with the fitted mu: every check passes.
    let params = fit.join("identified.toml");
    let v = rodlab(&[
        "validate",
        s,
        "--rod",
        rod,
        "--scene",
        "configs/scene/contact-paper-lying-drag.toml",
        "--params",
        params.to_str().unwrap(),
        "--sigma-m",
        "1e-4",
        "--out",
        dir.path().join("v").to_str().unwrap(),
    ]);
    ok(&v);
    // Bad requests: a scene without a table with the damping held (nothing
    // to fit: no mu without a table), --dynamic without --scene.
    let no_table = dir.path().join("no-table.toml");
    let text = std::fs::read_to_string(root().join("configs/scene/contact-paper-lying-drag.toml")).unwrap();
    let (a, b) = (text.find("[table]").unwrap(), text.find("[base]").unwrap());
    std::fs::write(&no_table, format!("{}{}", &text[..a], &text[b..])).unwrap();
    let in_air = |extra: &str| {
        rodlab(&["identify", "--dynamic", "--rod", rod, "--sessions", s, "--scene", no_table.to_str().unwrap(), extra, "--out", fit.to_str().unwrap()])
    };
    expect_exit_2(in_air("--hold-damping"), &["nothing to fit", "no-table.toml", "no [table]"]);
    let o = rodlab(&["identify", "--dynamic", "--rod", rod, "--sessions", s, "--out", fit.to_str().unwrap()]);
    expect_exit_2(o, &["--scene"]);
    // A fit window of one value, and one that ends before it starts.
    for (window, says) in [("1", "--window-s: expected FROM,TO, got 1 values"), ("2,1", "--window-s: expected FROM,TO seconds with 0 <= FROM < TO")] {
        expect_exit_2(in_air(&format!("--window-s={window}")), &[says]);
    }
}

/// The commands that touch no device start without OpenCV: the dynamic
/// loader, asked to list what it loads (`LD_DEBUG=libs`), loads no OpenCV
/// or video library for `--version`, `solve` and `schema`; a device command (`synth board`) loads the device build and
/// OpenCV, and works. The binary itself names no OpenCV library.
#[test]
fn commands_without_devices_load_no_opencv_and_device_commands_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = |args: &[&str]| -> (std::process::Output, String) {
        let o = rodlab_command().args(args).env("LD_DEBUG", "libs").output().unwrap();
        let libs = String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.contains("calling init:"))
            .map(|l| l.rsplit(' ').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join("\n");
        (o, libs)
    };
    let shape = dir.path().join("shape.csv");
    let plain: [&[&str]; 4] = [
        &["--version"],
        &["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--out", shape.to_str().unwrap()],
        &["schema", "rod"],
        &["schema", "loads", "--reference"],
    ];
    for args in plain {
        let (o, libs) = loaded(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!libs.is_empty(), "{args:?}: LD_DEBUG listed nothing");
        for needle in ["opencv", "avcodec", "gstreamer", "rodlab_devices"] {
            assert!(!libs.contains(needle), "{args:?} loads {needle}:\n{libs}");
        }
    }
    let board = dir.path().join("board");
    let (o, libs) = loaded(&["synth", "board", "--out", board.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(libs.contains("librodlab_devices.so") && libs.contains("libopencv_core"), "{libs}");
    assert!(board.join("plane.png").is_file());
    let elf = std::fs::read(env!("CARGO_BIN_EXE_rodlab")).unwrap();
    assert!(!elf.windows(b"libopencv".len()).any(|w| w == b"libopencv"), "the binary names an OpenCV library");
}

/// The cord of configs/rod/clamped-clamped-cable.toml along +x from the
/// origin (a column between two clamps), in a temporary directory.
fn dir_column_rod() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("column.toml");
    let text = std::fs::read_to_string(root().join("configs/rod/clamped-clamped-cable.toml")).unwrap();
    std::fs::write(&path, text.replace("rpy_deg = [0.0, 90.0, 0.0]", "rpy_deg = [0.0, 0.0, 0.0]")).unwrap();
    (dir, path)
}

/// Gaussian noise of `sd` (xorshift64 and Box-Muller), the same each run.
fn gaussian(sd: f64) -> impl FnMut() -> f64 {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    move || (-2.0 * (1.0 - uniform()).ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform()).cos() * sd
}

/// The cord of clamped-clamped-cable.toml hanging as a U between its base
/// (pointing down) and a clamp pointing up 0.1, 0.3 and 0.5 m away: five
/// points on each (E 2.0e7 Pa), each coordinate with `noise()` added.
fn three_hanging_loops(rod: &rod::Rod, noise: &mut impl FnMut() -> f64) -> Vec<identify::Experiment> {
    let truth = identify::Values::material(2.0e7, 6.9e6, 1.2e3);
    [0.1, 0.3, 0.5]
        .iter()
        .enumerate()
        .map(|(i, gap)| {
            let marks = [0.25, 0.5, 0.75, 1.0, 1.25].map(|a| identify::Measurement {
                arc_m: a,
                offset_body_m: lie::Vec3::zeros(),
                pos_m: lie::Vec3::zeros(),
                sigma_m: 5e-4,
                arc_sigma_m: 0.0,
                ray: None,
            });
            let mut e = identify::Experiment::new(format!("{}", i + 1), vec![], lie::Vec3::zeros(), marks.to_vec());
            e.tip_position_m = Some(lie::Vec3::new(*gap, 0.0, 0.0));
            e.tip_rotation_rad = Some(lie::Vec3::new(0.0, -std::f64::consts::FRAC_PI_2, 0.0));
            let (p, _) = identify::predict(rod, &e, &truth).unwrap();
            for (m, p) in e.measurements.iter_mut().zip(p) {
                m.pos_m = p + lie::Vec3::new(noise(), noise(), noise());
            }
            e
        })
        .collect()
}

/// Loops whose tip clamp is written otherwise than it held them: one turn
/// too many (the rotation vector (0, 3 pi / 2, 0) names the same clamp
/// as (0, -pi / 2, 0), wound once more), and 3 degrees off about y (a
/// clamp traced on a photograph). `identify` fits the equilibrium the
/// points lie on and says so. As written, the 3 degrees fail the fit's
/// chi-square, whose message names `--fit-clamp-angle`; with it, each
/// angle comes back within 0.5 degree and E within 2 %.
#[test]
fn loops_written_with_a_turn_too_many_or_a_clamp_three_degrees_off_are_fitted_as_held() {
    let rod_file = "configs/rod/clamped-clamped-cable.toml";
    let rod = rod::Rod::from_file(&root().join(rod_file)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut noise = gaussian(5e-4);
    let loops = three_hanging_loops(&rod, &mut noise);
    let identify_e = |experiments: &[identify::Experiment], name: &str, extra: &[&str]| {
        let data = dir.path().join(name);
        identify::data::write_experiments(&data, experiments, name).unwrap();
        let out = dir.path().join(format!("{name}-fit"));
        let o = rodlab(
            &[
                &["identify", "--rod", rod_file, "--experiments", data.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo", "--tie-g", "0.45"][..],
                extra,
            ]
            .concat(),
        );
        ok(&o);
        let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
        (v["parameters"]["e_pa"]["value"].as_float().unwrap(), String::from_utf8_lossy(&o.stdout).to_string(), v)
    };
    let mut wound = loops.clone();
    wound.iter_mut().for_each(|e| e.tip_rotation_rad = Some(lie::Vec3::new(0.0, 1.5 * std::f64::consts::PI, 0.0)));
    let (e_pa, stdout, _) = identify_e(&wound, "wound", &[]);
    println!("{stdout}");
    assert!((e_pa / 2.0e7 - 1.0).abs() < 0.02, "E {e_pa}\n{stdout}");
    assert!(stdout.contains("1: the measured points lie on another equilibrium") && stdout.contains("one turn less"), "{stdout}");

    let mut off = loops.clone();
    off.iter_mut().for_each(|e| e.tip_rotation_rad = Some(lie::Vec3::new(0.0, -std::f64::consts::FRAC_PI_2 + 3f64.to_radians(), 0.0)));
    // As written the fit fails its chi-square (4 times the noise) and names the nuisance.
    let data = dir.path().join("off");
    identify::data::write_experiments(&data, &off, "off").unwrap();
    let o = rodlab(&[
        "identify",
        "--rod",
        rod_file,
        "--experiments",
        data.to_str().unwrap(),
        "--out",
        dir.path().join("off-fit").to_str().unwrap(),
        "--no-loo",
        "--tie-g",
        "0.45",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(1) && stderr.contains("identification failed") && stderr.contains("--fit-clamp-angle=0,5"), "{stderr}");
    let (e_pa, stdout, v) = identify_e(&off, "off-angle", &["--fit-clamp-angle=0,5"]);
    println!("E with the clamp angles {e_pa:.4e}\n{stdout}");
    assert!((e_pa / 2.0e7 - 1.0).abs() < 0.02, "E {e_pa}\n{stdout}");
    let angles: Vec<f64> = v["parameters"]["clamp_angles_rad"].as_array().unwrap().iter().map(|a| a.as_float().unwrap().to_degrees()).collect();
    assert!(angles.len() == 3 && angles.iter().all(|a| (a + 3.0).abs() < 0.5), "{angles:?}");
    assert!(stdout.contains("clamp 1") && stdout.contains("tip clamp's turn about world y"), "{stdout}");
    // A free tip has no clamp to turn.
    expect_exit_2(
        rodlab(&[
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            "datasets/pls-cable-arm",
            "--out",
            dir.path().join("x").to_str().unwrap(),
            "--fit-clamp-angle=0,5",
        ]),
        &["--fit-clamp-angle", "no clamped tip"],
    );
}

/// A cord hanging as a loop between two clamps (configs/rod/clamped-clamped-cable.toml):
/// `solve` with the tip's pose prints the clamp's reaction, `identify`
/// reads held experiments (written here from the model, 0.5 mm noise) and
/// finds E; what a held rod lacks or cannot reach exits 2 in one line.
#[test]
fn a_rod_held_at_both_ends_is_solved_and_identified_and_bad_holds_exit_2() {
    let rod_file = "configs/rod/clamped-clamped-cable.toml";
    let up = ["--tip-position", "0.1,0,0", "--tip-rotation", "0,-1.5707963267948966,0"];
    let o = rodlab(&[&["solve", "--rod", rod_file][..], &up[..]].concat());
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    // Each clamp carries half the cord's weight (0.1414 kg).
    let line = stdout.lines().find(|l| l.starts_with("tip held (clamped)")).expect("the hold's reaction is printed");
    let fz: f64 = line.split_whitespace().nth(12).unwrap().trim_end_matches(',').parse().unwrap();
    assert!((fz / (0.5 * 0.14137 * 9.81) - 1.0).abs() < 2e-3, "{line}");
    assert!(
        stdout.contains("stability: lowest eigenvalue")
            && stdout.contains(": stable")
            && stdout.contains("branch: the rod's frame turns 3.1416 rad base to tip (0.500 turns)"),
        "{stdout}"
    );
    // The loop's clamp twisted until it snaps, and on: the snap (a limit
    // point), the unstable branch turning back, the branch as CSV.
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("branch.csv");
    let o =
        rodlab(&[&["solve", "--rod", rod_file][..], &up[..], &["--follow", "tip_twist_rad", "--to", "9", "--branch-out", csv_path.to_str().unwrap()]].concat());
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let snaps: Vec<f64> = stdout
        .lines()
        .filter(|l| l.contains("a limit point (the shape snaps) at tip_twist_rad = "))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(snaps.len() == 2 && (snaps[0] - 6.5445).abs() < 1e-3 && snaps[1] < snaps[0], "{stdout}");
    let branch = std::fs::read_to_string(&csv_path).unwrap();
    assert!(branch.starts_with("tip_twist_rad,stable,lowest_eigenvalue,dt_ds,tip_moment_x_nm"), "{branch}");
    assert!(branch.lines().any(|l| l.split(',').nth(1) == Some("false")), "the unstable branch is in the CSV");
    expect_exit_2(
        rodlab(&[&["solve", "--rod", rod_file][..], &up[..], &["--follow", "tip_bend_rad", "--to", "9"]].concat()),
        &["--follow", "'tip_bend_rad'", "tip_twist_rad"],
    );
    // Beyond the cord's 1.5 m, or at it (straight only in the limit), as critical.csv says.
    for to in ["2", "1.5"] {
        expect_exit_2(
            rodlab(&[&["solve", "--rod", rod_file][..], &up[..], &["--follow", "clamp_distance_m", "--to", to]].concat()),
            &["--follow clamp_distance_m", "rod's length"],
        );
    }
    expect_exit_2(rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--follow", "tip_twist_rad", "--to", "1"]), &["--follow", "tip is free"]);
    // The cord straight up from a floor clamp, its tip clamped 5 cm lower
    // than its length: compressed far past Euler's load, held straight by
    // symmetry, and said to be unstable.
    let column = dir_column_rod();
    let o = rodlab(&["solve", "--rod", column.1.to_str().unwrap(), "--no-gravity", "--tip-position", "1.45,0,0", "--tip-rotation", "0,0,0"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("UNSTABLE"), "{}", String::from_utf8_lossy(&o.stdout));

    let dir = tempfile::tempdir().unwrap();
    let rod = rod::Rod::from_file(&root().join(rod_file)).unwrap();
    let mut noise = gaussian(5e-4);
    let experiments = three_hanging_loops(&rod, &mut noise);
    let data = dir.path().join("loops");
    identify::data::write_experiments(&data, &experiments, "three loops between two clamps").unwrap();
    let out = dir.path().join("fit");
    let o = rodlab(&["identify", "--rod", rod_file, "--experiments", data.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo", "--tie-g", "0.45"]);
    ok(&o);
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    let e_pa = v["parameters"]["e_pa"]["value"].as_float().unwrap();
    assert!((e_pa / 2.0e7 - 1.0).abs() < 0.02, "E {e_pa}\n{}", String::from_utf8_lossy(&o.stdout));

    // The twist at which loops 1 and 2 snap (critical.csv, 0.05 rad):
    // G J against E I, which the planar shapes cannot see.
    let mut twisted = experiments.clone();
    for e in twisted.iter_mut().take(2) {
        let hold = e.tip_hold(rod.tip_condition).unwrap().unwrap();
        let twist = identify::CriticalQuantity::TipTwistRad;
        let (_, hold_at) = twist.from(hold, rod.base.pos);
        let snap = rod::branch::first_critical(&rod::Model::new(&rod, &[]), &rod::Loads::gravity(), &*hold_at, (0.0, 15.0, 30), 1e-9, &Default::default())
            .unwrap()
            .expect("the loop snaps");
        e.critical.push(identify::CriticalValue { quantity: twist, value: snap.t + 0.05 * noise(), sigma: 0.05 });
    }
    let snaps = dir.path().join("snaps");
    identify::data::write_experiments(&snaps, &twisted, "three loops, two twisted until they snap").unwrap();
    let o = rodlab(&["identify", "--rod", rod_file, "--experiments", snaps.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"]);
    ok(&o);
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    let g_pa = v["parameters"]["g_pa"]["value"].as_float().unwrap();
    assert!((g_pa / 6.9e6 - 1.0).abs() < 0.05, "G {g_pa}\n{}", String::from_utf8_lossy(&o.stdout));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("tip_twist_rad") && !stdout.contains("tied to E"), "{stdout}");
    // critical.csv naming what cannot be: an unknown quantity, a clamp
    // distance the cord cannot span, a twist no branch snaps at (loop 3,
    // searched to twice the value), a twist of a pinned tip.
    let critical = |rows: &str| {
        std::fs::write(snaps.join("critical.csv"), format!("experiment,quantity,value,sigma\n{rows}\n")).unwrap();
        rodlab(&["identify", "--rod", rod_file, "--experiments", snaps.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"])
    };
    expect_exit_2(critical("1,tip_bend_rad,6.5,0.05"), &["critical.csv", "line 2", "'tip_bend_rad'", "tip_twist_rad, clamp_distance_m"]);
    expect_exit_2(critical("2,clamp_distance_m,1.7,0.01"), &["critical.csv", "experiment '2', clamp_distance_m", "outside every branch", "1.5 m"]);
    // Loop 3 twisted to 3.0 rad: the rod file's G is a start, so the fit
    // searches G down until it snaps; with G confined ([identify]
    // g_pa_range) to where no branch snaps below 6 rad, it is refused.
    let narrow = dir.path().join("narrow-g.toml");
    std::fs::write(&narrow, std::fs::read_to_string(root().join(rod_file)).unwrap() + "\n[identify]\ng_pa_range = [5e6, 9e6]\n").unwrap();
    std::fs::write(snaps.join("critical.csv"), "experiment,quantity,value,sigma\n3,tip_twist_rad,3.0,0.05\n").unwrap();
    let o = rodlab(&["identify", "--rod", narrow.to_str().unwrap(), "--experiments", snaps.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"]);
    expect_exit_2(o, &["experiment '3'", "no snap or buckling along tip_twist_rad", "outside every branch found", "any G from 5.000e6 to 9.000e6 Pa"]);
    let pinned = dir.path().join("pinned.toml");
    std::fs::write(&pinned, std::fs::read_to_string(root().join(rod_file)).unwrap().replace("condition = \"clamped\"", "condition = \"pinned\"")).unwrap();
    let pins = dir.path().join("pins");
    let mut pinned_loops = twisted.clone();
    for e in &mut pinned_loops {
        e.tip_rotation_rad = None;
    }
    identify::data::write_experiments(&pins, &pinned_loops, "pinned loops").unwrap();
    let o = rodlab(&["identify", "--rod", pinned.to_str().unwrap(), "--experiments", pins.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"]);
    expect_exit_2(o, &["critical.csv", "experiment '1', tip_twist_rad", "a pinned tip cannot be twisted"]);

    // The experiments without their tip's pose, for a clamped rod.
    let bare = dir.path().join("bare");
    let mut free = experiments.clone();
    for e in &mut free {
        e.tip_position_m = None;
        e.tip_rotation_rad = None;
    }
    identify::data::write_experiments(&bare, &free, "no tip pose").unwrap();
    let o = rodlab(&["identify", "--rod", rod_file, "--experiments", bare.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo"]);
    expect_exit_2(o, &["inputs.csv", "experiment '1'", "tip_rotation_x_rad", "clamped"]);
    expect_exit_2(rodlab(&["solve", "--rod", rod_file]), &["--tip-position", "clamped"]);
    expect_exit_2(
        rodlab(&["solve", "--rod", rod_file, "--tip-position", "2,0,0", "--tip-rotation", "0,0,0"]),
        &["2.0000 m from the base", "rod's length 1.5000 m"],
    );
    expect_exit_2(rodlab(&["solve", "--rod", "configs/rod/silicone-rod.toml", "--tip-position", "0.2,0,0"]), &["tip is free", "[tip] condition"]);
    let bad = dir.path().join("bad-tip.toml");
    std::fs::write(&bad, std::fs::read_to_string(root().join(rod_file)).unwrap().replace("condition = \"clamped\"", "condition = \"welded\"")).unwrap();
    expect_exit_2(rodlab(&["solve", "--rod", bad.to_str().unwrap()]), &["bad-tip.toml", "tip.condition", "\"welded\""]);
    // The simulator holds the tip where the scene's [tip] says: the loop's
    // clamp slides from 0.1 m to 0.4 m and the loop settles; the hold's
    // force is a column of sim.parquet. A scene without [tip] is refused.
    let sim_out = dir.path().join("sim");
    let o = rodlab(&["simulate", "--rod", rod_file, "--scene", "configs/scene/cable-loop-clamp-moves.toml", "--out", sim_out.to_str().unwrap()]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("force of the tip's hold on the rod at the end [N]"));
    let table = session::Table::read(&sim_out.join("sim.parquet")).unwrap();
    let (tip_x, hold_fz) = (table.f64("tip_x_m").unwrap(), table.f64("tip_hold_fz_n").unwrap());
    assert!(
        (tip_x[0] - 0.1).abs() < 1e-9 && (tip_x.last().unwrap() - 0.4).abs() < 1e-9,
        "the tip follows its clamp: {} .. {}",
        tip_x[0],
        tip_x.last().unwrap()
    );
    // At rest at t = 0 each clamp carries half the cord's weight.
    assert!((hold_fz[0] / (0.5 * 0.14137 * 9.81) - 1.0).abs() < 2e-3, "{}", hold_fz[0]);
    expect_exit_2(
        rodlab(&["simulate", "--rod", rod_file, "--scene", "configs/scene/contact-paper-stick.toml", "--out", sim_out.to_str().unwrap()]),
        &["tip is clamped", "[tip] table"],
    );
}

/// The same loop in a peer nobody here wrote: PyElastica (PyPI
/// `pyelastica`, explicit dynamics, 60 elements) relaxes the cord from a U
/// under gravity with damping until it is still (tests/python/elastica_loop.py).
/// Its nodes lie on rodlab's static shape within 1 % of L.
#[test]
fn a_loop_between_two_clamps_has_pyelasticas_shape() {
    let Some(python) = venv_python("elastica", "PyElastica loop") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("loop.csv");
    let args = ["solve", "--rod", "configs/rod/clamped-clamped-cable.toml", "--tip-position", "0.1,0,0", "--tip-rotation", "0,-1.5707963267948966,0", "--out"];
    ok(&rodlab(&[&args[..], &[ours.to_str().unwrap()]].concat()));
    let peer = std::process::Command::new(python).args(["tests/python/elastica_loop.py", "0.1", "60", "2.5"]).current_dir(root()).output().unwrap();
    assert!(peer.status.success(), "{}", String::from_utf8_lossy(&peer.stderr));
    let read = |text: &str| -> Vec<Vec<f64>> { text.lines().skip(1).map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect()).collect() };
    // Ours: arc_m, px_m, py_m, pz_m first.
    let shape = read(&std::fs::read_to_string(&ours).unwrap());
    let nodes = read(&String::from_utf8_lossy(&peer.stdout));
    let ours_at = |s: f64| -> [f64; 3] {
        let i = shape.windows(2).position(|w| w[0][0] <= s && s <= w[1][0]).unwrap_or(shape.len() - 2);
        let (a, b) = (&shape[i], &shape[i + 1]);
        let t = if b[0] > a[0] { (s - a[0]) / (b[0] - a[0]) } else { 0.0 };
        std::array::from_fn(|k| a[k + 1] + t * (b[k + 1] - a[k + 1]))
    };
    let worst = nodes.iter().map(|n| ours_at(n[0]).iter().zip(&n[1..4]).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt()).fold(0.0, f64::max);
    println!(
        "PyElastica's loop against rodlab's: {} nodes, worst {:.2} mm ({:.3} % of L); {}",
        nodes.len(),
        worst * 1e3,
        100.0 * worst / 1.5,
        String::from_utf8_lossy(&peer.stderr).trim()
    );
    assert!(worst < 0.01 * 1.5, "PyElastica's loop is {worst} m from ours");
}

/// Hysteresis through the binary (#45): the tapered arm's cables rubbing
/// with mu 0.15, each pulled up to 0.4 N and let down again, written as
/// inputs.csv with its direction column (load, unload); `identify
/// --fit-friction=0.1,0.1` recovers mu and E, prints mu with its interval
/// and writes it to identified.toml; without it the fit fails and says
/// that the friction fits; a direction that is neither is refused in one
/// line.
#[test]
fn identify_fits_the_cables_friction_from_loading_and_unloading() {
    let rod_file = "configs/rod/tapered-channels-arm.toml";
    let mut rod = rod::Rod::from_file(&root().join(rod_file)).unwrap();
    for c in &mut rod.cables {
        c.friction_mu = 0.15;
    }
    let truth = identify::Values::material(2.0e5, 2.0e5 / 2.9, 1.1e3);
    let mut experiments = vec![];
    for cable in 0..3 {
        for t in [0.1, 0.2, 0.3, 0.4] {
            for slide in [rod::statics::CableSlide::PulledIn, rod::statics::CableSlide::LetOut] {
                let mut tensions = vec![0.0; 3];
                tensions[cable] = t;
                let marks = [0.1, 0.2].map(|a| identify::Measurement {
                    arc_m: a,
                    offset_body_m: lie::Vec3::zeros(),
                    pos_m: lie::Vec3::zeros(),
                    sigma_m: 1e-4,
                    arc_sigma_m: 0.0,
                    ray: None,
                });
                let mut e = identify::Experiment::new(format!("c{}-{t}-{slide:?}", cable + 1), tensions, lie::Vec3::zeros(), marks.to_vec());
                e.cable_slide = slide;
                let (p, _) = identify::predict(&rod, &e, &truth).unwrap();
                for (m, p) in e.measurements.iter_mut().zip(p) {
                    m.pos_m = p;
                }
                experiments.push(e);
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("pulls");
    identify::data::write_experiments(&data, &experiments, "pulls that load and unload").unwrap();
    let inputs = std::fs::read_to_string(data.join("inputs.csv")).unwrap();
    assert!(inputs.contains(",direction") && inputs.contains(",unload"), "{inputs}");
    let out = dir.path().join("fit");
    let fit = |extra: &[&str]| {
        let mut args =
            vec!["identify", "--rod", rod_file, "--experiments", data.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-loo", "--tie-g", "0.45"];
        args.extend(extra);
        rodlab(&args)
    };
    let o = fit(&["--fit-friction=0.1,0.1"]);
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("friction mu  ="), "{stdout}");
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(out.join("identified.toml")).unwrap()).unwrap();
    let mu = v["parameters"]["friction_mu"].as_float().unwrap();
    let e_pa = v["parameters"]["e_pa"]["value"].as_float().unwrap();
    println!("mu {mu:.4} for 0.15, E {e_pa:.4e} for 2e5");
    assert!((mu / 0.15 - 1.0).abs() < 0.1 && (e_pa / 2.0e5 - 1.0).abs() < 0.01, "mu {mu}, E {e_pa}\n{stdout}");
    // Without the friction the fit fails its noise test, and the failure
    // names the term that fits, having fitted it: the suggestion is right.
    let o = fit(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{stderr}");
    assert!(stderr.contains("with --fit-friction=0.2,0.2 (the cables' friction") && stderr.contains("the same data fit: chi-square"), "{stderr}");

    std::fs::write(data.join("inputs.csv"), inputs.replacen(",unload", ",sideways", 1)).unwrap();
    expect_exit_2(fit(&[]), &["inputs.csv", "column 'direction'", "'sideways'"]);
    std::fs::write(data.join("inputs.csv"), &inputs).unwrap();
}
