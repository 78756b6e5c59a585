//! End-to-end: `rodlab identify` on the shipped data, the report in headless
//! Chromium, `solve --params`, and bad input.

mod common;
use common::*;

#[test]
fn identify_writes_toml_and_a_report_that_renders() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fit");
    let o = rodlab(&[
        "identify",
        "--rod",
        "configs/rod/pls-cable-arm.toml",
        "--experiments",
        "datasets/pls-cable-arm",
        "--out",
        out.to_str().unwrap(),
        "--reference",
        "2.563e5,8.543e4,1.41e3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("leave-one-out"), "{stdout}");

    let toml_text = std::fs::read_to_string(out.join("identified.toml")).unwrap();
    let v: toml::Value = toml::from_str(&toml_text).unwrap();
    let e = v["parameters"]["e_pa"]["value"].as_float().unwrap();
    let ci = v["parameters"]["e_pa"]["ci95"].as_array().unwrap();
    assert!(ci[0].as_float().unwrap() < e && e < ci[1].as_float().unwrap());
    assert_eq!(v["experiment"].as_array().unwrap().len(), 6);
    assert!(v["fit"]["correlation"].as_array().unwrap().len() == 3);
    assert!(v["start"].as_array().unwrap().len() >= 3);

    // Every figure: PNG beside, SVG inline, and the page renders without errors.
    for name in ["parity", "shapes_side", "shapes_top", "residuals", "convergence"] {
        let png = std::fs::read(out.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{name}.png");
        assert!(png.len() > 5000, "{name}.png is nearly empty");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 5);
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["experiments"].as_array().unwrap().len(), 6);
    assert_eq!(chromium_check(&out.join("index.html")), "images=5/5 svgs=5 errors=0");

    // Predict with the fitted values.
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-cable-arm.toml", "--params", out.join("identified.toml").to_str().unwrap(), "--tension", "0,0,0,0.98"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("identified.toml"), "{s}");
}

#[test]
fn identify_bad_input_exits_2_naming_file_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("datasets/pls-cable-arm");
    let inputs = std::fs::read_to_string(src.join("inputs.csv")).unwrap();
    let meas = std::fs::read_to_string(src.join("measurements.csv")).unwrap();
    let cases: Vec<(&str, String, String, &str)> = vec![
        ("missing-column", inputs.clone(), meas.replace(",sigma_m", ",sd"), "sigma_m"),
        ("nan", inputs.clone(), meas.replace("0.1577", "NaN"), "line"),
        (
            "tensions",
            inputs.replace(",tension_4_n", "").replace(",0.98\n", "\n").replace(",4.90\n", "\n").replace(",1.96\n", "\n").replace(",0\n", "\n"),
            meas.clone(),
            "tension",
        ),
        ("unknown-experiment", inputs.clone(), meas.replace("\n6,", "\n7,"), "experiment '7'"),
    ];
    for (name, i, m, needle) in cases {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("inputs.csv"), i).unwrap();
        std::fs::write(d.join("measurements.csv"), m).unwrap();
        let o = rodlab(&[
            "identify",
            "--rod",
            "configs/rod/pls-cable-arm.toml",
            "--experiments",
            d.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(".csv") && err.contains(needle), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
    }
    let o = rodlab(&["identify", "--rod", "configs/rod/nope.toml", "--experiments", "datasets/pls-cable-arm", "--out", dir.path().join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.toml"));
}
