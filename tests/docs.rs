//! The documentation cannot go stale:
//! - every reference page's field table is the one generated from the
//!   structs that parse the file (a field added without documentation, or
//!   not in the page, fails here; `RODLAB_BLESS=1` rewrites the tables);
//! - every page's TOML example parses with the real parser;
//! - every shell block marked `<!-- docs-test -->` in the README and the
//!   guide runs against the binary in a temporary directory (a renamed
//!   flag fails here).

use crate::common;
use common::root;
use std::path::{Path, PathBuf};
use std::process::Command;

const BEGIN: &str = "<!-- fields: generated from the parser's structs (rodlab schema FILE --reference); tests/docs.rs fails when it is stale -->";
const END: &str = "<!-- end fields -->";

fn page(name: &str) -> PathBuf {
    root().join("docs/reference").join(format!("{name}.md"))
}

#[test]
fn every_config_field_is_documented_in_its_struct_and_in_its_reference_page() {
    let bless = std::env::var("RODLAB_BLESS").is_ok_and(|v| v == "1");
    let mut stale = vec![];
    for name in lab::reference::FILES {
        let fields = lab::reference::fields(&lab_devices::reference::schema(name).unwrap());
        let undocumented: Vec<&str> = fields.iter().filter(|f| f.description.trim().is_empty()).map(|f| f.path.as_str()).collect();
        assert!(undocumented.is_empty(), "{name}: fields without a doc comment in their struct: {undocumented:?}");
        let path = page(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else { panic!("{}: no generated field table ({BEGIN} ... {END})", path.display()) };
        let table = lab::reference::table(&fields);
        let current = text[a + BEGIN.len()..b].trim();
        if current != table.trim() {
            if bless {
                std::fs::write(&path, format!("{}{BEGIN}\n{}{END}{}", &text[..a], table, &text[b + END.len()..])).unwrap();
            } else {
                let listed: Vec<&str> = current.lines().filter_map(|l| l.split('`').nth(1)).collect();
                let missing: Vec<&str> = fields.iter().map(|f| f.path.as_str()).filter(|p| !listed.contains(p)).collect();
                stale.push(format!("{}: stale field table (missing {missing:?}); RODLAB_BLESS=1 cargo test --test e2e docs:: rewrites it", path.display()));
            }
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

/// The blocks of `lang` in a Markdown text, each with whether the line
/// before it is `<!-- docs-test -->`.
fn blocks(text: &str, lang: &str) -> Vec<(bool, String)> {
    let mut out = vec![];
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == format!("```{lang}") {
            let marked = i > 0 && lines[i - 1].trim() == "<!-- docs-test -->";
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && lines[end].trim() != "```" {
                end += 1;
            }
            out.push((marked, lines[start..end].join("\n")));
            i = end;
        }
        i += 1;
    }
    out
}

const BEGIN_COLUMNS: &str = "<!-- columns: generated from identify::data's INPUT_COLUMNS and MEASUREMENT_COLUMNS; tests/docs.rs fails when it is stale -->";
const END_COLUMNS: &str = "<!-- end columns -->";

/// The experiments page's column tables are the reader's own list, and
/// its examples read as experiments.
#[test]
fn the_experiments_page_lists_the_readers_columns_and_its_examples_read() {
    let path = page("experiments");
    let text = std::fs::read_to_string(&path).unwrap();
    let (inputs, measurements) = lab::reference::experiment_columns();
    let table = format!("`inputs.csv`:\n\n{inputs}\n`measurements.csv`:\n\n{measurements}");
    let (Some(a), Some(b)) = (text.find(BEGIN_COLUMNS), text.find(END_COLUMNS)) else { panic!("{}: no generated column tables", path.display()) };
    if text[a + BEGIN_COLUMNS.len()..b].trim() != table.trim() {
        assert!(
            std::env::var("RODLAB_BLESS").is_ok_and(|v| v == "1"),
            "{}: stale column tables; RODLAB_BLESS=1 cargo test --test e2e docs:: rewrites them",
            path.display()
        );
        std::fs::write(&path, format!("{}{BEGIN_COLUMNS}\n{table}{END_COLUMNS}{}", &text[..a], &text[b + END_COLUMNS.len()..])).unwrap();
    }
    let csv = blocks(&text, "csv");
    assert_eq!(csv.len(), 3, "an inputs.csv, a measurements.csv and a critical.csv example");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inputs.csv"), &csv[0].1).unwrap();
    std::fs::write(dir.path().join("measurements.csv"), &csv[1].1).unwrap();
    let experiments = identify::data::read_experiments(dir.path(), 2).unwrap();
    assert_eq!(experiments.len(), 2);
    assert!((experiments[1].tip_force_offset_body_m.z - 0.015).abs() < 1e-12);
    // critical.csv's example, for a held loop of its own.
    let held = tempfile::tempdir().unwrap();
    std::fs::write(held.path().join("inputs.csv"), "experiment\nloop-1\n").unwrap();
    std::fs::write(held.path().join("measurements.csv"), "experiment,arc_m,offset_y_m,offset_z_m,x_m,y_m,z_m,sigma_m\nloop-1,0.75,0,0,0.05,0,-0.4,0.0005\n")
        .unwrap();
    std::fs::write(held.path().join("critical.csv"), &csv[2].1).unwrap();
    let loops = identify::data::read_experiments(held.path(), 0).unwrap();
    assert_eq!(loops[0].critical, vec![identify::CriticalValue { quantity: identify::CriticalQuantity::TipTwistRad, value: 6.58, sigma: 0.05 }]);
}

#[test]
fn every_reference_example_parses() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["rod", "rig", "scene", "loads", "map", "markers", "camera", "cameras"] {
        let text = std::fs::read_to_string(page(name)).unwrap();
        let examples = blocks(&text, "toml");
        assert!(!examples.is_empty(), "{name}.md has no TOML example");
        for (k, (_, toml)) in examples.iter().enumerate() {
            let file = dir.path().join(format!("{name}-{k}.toml"));
            std::fs::write(&file, toml).unwrap();
            let parsed = match name {
                "rod" => rod::Rod::from_file(&file).map(|_| ()).map_err(|e| e.to_string()),
                "rig" => session::Rig::from_file(&file).map(|_| ()).map_err(|e| e.to_string()),
                "scene" => sim::Scene::from_file(&file).map(|_| ()).map_err(|e| e.to_string()),
                "map" | "markers" | "camera" | "cameras" => lab_devices::reference::check_file(name, &file).map(|_| ()).map_err(|e| e.to_string()),
                _ => toml::from_str::<identify::sessions::LoadsFile>(toml).map(|_| ()).map_err(|e| e.to_string()),
            };
            assert!(parsed.is_ok(), "docs/reference/{name}.md example {k}: {}", parsed.unwrap_err());
        }
    }
}

#[test]
fn the_session_page_names_every_tables_columns() {
    let text = std::fs::read_to_string(page("session")).unwrap();
    let columns = session::MARKER_COLUMNS.iter().chain(session::STRAIN_NAMES.iter()).chain(session::BASE_POSE_NAMES.iter()).chain(
        ["t_host_ns", "node", "arc_m", "marker_residual_m", "status", "start_host_ns", "end_host_ns", "duration_s", "reason", "missing_samples", "device_ms"]
            .iter(),
    );
    for c in columns {
        assert!(text.contains(&format!("`{c}`")), "docs/reference/session.md does not name the column `{c}`");
    }
}

/// Runs the marked blocks of `doc` in order in one temporary directory
/// holding the repository's configs, datasets and scripts.
fn run_marked_blocks(doc: &Path) -> usize {
    let text = std::fs::read_to_string(doc).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for d in ["configs", "datasets", "scripts"] {
        std::os::unix::fs::symlink(root().join(d), dir.path().join(d)).unwrap();
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rodlab"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for (marked, script) in blocks(&text, "sh") {
        if !marked {
            continue;
        }
        let o = Command::new("bash").args(["-euo", "pipefail", "-c", &script]).current_dir(dir.path()).env("PATH", &path).env("RODLAB", &bin).output().unwrap();
        assert!(
            o.status.success(),
            "{}: this block failed:\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            doc.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    ran
}

#[test]
fn the_readmes_marked_commands_run() {
    assert!(run_marked_blocks(&root().join("README.md")) >= 1);
}

#[test]
fn the_guides_marked_commands_run() {
    assert!(run_marked_blocks(&root().join("docs/guide.md")) >= 1);
}

#[test]
fn marked_blocks_are_found_and_unmarked_ones_left() {
    let md = "text\n<!-- docs-test -->\n```sh\nrodlab --help\n```\n\n```sh\nrodlab record --rig real.toml\n```\n";
    assert_eq!(blocks(md, "sh"), vec![(true, "rodlab --help".to_string()), (false, "rodlab record --rig real.toml".to_string())]);
}

#[test]
fn rodlab_schema_prints_a_json_schema_and_refuses_an_unknown_file() {
    let o = Command::new(env!("CARGO_BIN_EXE_rodlab")).args(["schema", "rod"]).output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["properties"]["length_m"]["description"].as_str().is_some_and(|d| d.contains("[m]")), "{}", v["properties"]["length_m"]);
    assert_eq!(v["additionalProperties"], false, "unknown fields are refused, as the parser does");
    common::expect_exit_2(Command::new(env!("CARGO_BIN_EXE_rodlab")).args(["schema", "robot"]).output().unwrap(), &["robot", "rod, rig"]);
}

#[test]
fn an_independent_validator_accepts_every_shipped_and_written_file_and_flags_a_misspelt_field() {
    let Some(python) = common::venv_python("jsonschema, tomllib", "schema interop") else { return };
    let dir = tempfile::tempdir().unwrap();
    let rodlab = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_rodlab")).args(args).current_dir(root()).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let mut args: Vec<String> = vec![root().join("tests/python/validate_schemas.py").display().to_string()];
    // Files rodlab writes: a session and an identification of it.
    let s = dir.path().join("holds");
    rodlab(&[
        "synth",
        "session",
        "--scene",
        "configs/scene/cable-arm-holds.toml",
        "--rod",
        "configs/rod/contact-paper-steel-core.toml",
        "--out",
        s.to_str().unwrap(),
    ]);
    let fit = dir.path().join("fit");
    rodlab(&[
        "identify",
        "--rod",
        "configs/rod/contact-paper-steel-core.toml",
        "--sessions",
        s.to_str().unwrap(),
        "--loads",
        "configs/loads.toml",
        "--out",
        fit.to_str().unwrap(),
    ]);
    // A rod file with a misspelt field: the parser refuses it, so must the schema.
    let bad = dir.path().join("bad-rod.toml");
    std::fs::write(&bad, "lenght_m = 0.3\n".to_string() + &std::fs::read_to_string(root().join("configs/rod/silicone-rod.toml")).unwrap()).unwrap();
    let files = |pattern_dir: &str, prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(root().join(pattern_dir))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .map(|p| p.display().to_string())
            .collect();
        v.sort();
        v
    };
    for (kind, list) in [
        ("rod", [files("configs/rod", ""), vec![bad.display().to_string()]].concat()),
        ("rig", files("configs/rig", "")),
        ("scene", files("configs/scene", "")),
        ("loads", files("configs", "loads")),
        ("session", vec![s.join("session.toml").display().to_string()]),
        ("identified", vec![fit.join("identified.toml").display().to_string()]),
        ("map", [files("datasets/mocap-beam", ""), files("datasets/mocap-release", "map")].concat().into_iter().filter(|f| f.ends_with("map.toml")).collect()),
        ("markers", vec![root().join("configs/markers.toml").display().to_string()]),
    ] {
        let schema = dir.path().join(format!("{kind}.schema.json"));
        std::fs::write(&schema, rodlab(&["schema", kind])).unwrap();
        args.push(format!("{kind}={}", schema.display()));
        args.extend(list);
    }
    let o = Command::new(&python).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    let (mut ok, mut flagged) = (0, 0);
    for line in out.lines() {
        if line.contains("bad-rod.toml") {
            assert!(line.contains("lenght_m") && line.contains("not allowed"), "{line}");
            flagged += 1;
        } else {
            assert!(line.ends_with(" ok"), "{line}");
            ok += 1;
        }
    }
    assert_eq!((flagged, ok >= 18), (1, true), "{out}");
}

/// Every file of the repository the docs name in backquotes (a test, a
/// config, a script) is there: docs that point at moved files mislead.
#[test]
fn every_file_the_docs_name_exists() {
    let mut docs: Vec<PathBuf> = vec![root().join("README.md")];
    for dir in ["docs", "docs/reference"] {
        docs.extend(std::fs::read_dir(root().join(dir)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "md")));
    }
    let mut missing = vec![];
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for name in text.split('`').skip(1).step_by(2) {
            let looks_like_a_file = !name.contains(' ')
                && (name.starts_with("tests/")
                    || name.starts_with("crates/")
                    || name.starts_with("configs/")
                    || name.starts_with("scripts/")
                    || name.starts_with("datasets/"))
                && name.rsplit('/').next().is_some_and(|f| f.contains('.') && !f.contains('*'));
            if looks_like_a_file && !root().join(name).exists() {
                missing.push(format!("{}: {name}", doc.strip_prefix(root()).unwrap_or(doc).display()));
            }
        }
    }
    assert!(missing.is_empty(), "the docs name files that are not there: {missing:#?}");
}
