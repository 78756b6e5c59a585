//! End-to-end tests of the `rodlab` binary: `solve` and `paper-table`.

mod common;
use common::*;

#[test]
fn solve_prints_tip_and_writes_shape_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shape.csv");
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let tip_line = stdout.lines().find(|l| l.starts_with("tip position [m]:")).expect("tip line");
    let tip: Vec<f64> = tip_line.split(':').nth(1).unwrap().split_whitespace().map(|v| v.parse().unwrap()).collect();
    // Table II rod, PLS with the paper's 3 sections: within 1 mm of the converged rod [5.9087, 0, -17.8903] cm.
    assert!((tip[0] - 0.059087).abs() < 1e-3 && tip[1].abs() < 1e-9 && (tip[2] + 0.178903).abs() < 1e-3, "{tip:?}");
    assert!(stdout.contains("converged:"));
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), "arc_m,px_m,py_m,pz_m,rot_w,rot_x,rot_y,rot_z,kappa_x,kappa_y,kappa_z,eps_x,eps_y,eps_z");
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows[0][0], 0.0);
    assert!((rows.last().unwrap()[0] - 0.2).abs() < 1e-12);
    assert!(rows.windows(2).all(|w| w[1][0] > w[0][0]), "arc length increases base to tip");
    let last = rows.last().unwrap();
    assert!((last[1] - tip[0]).abs() < 1e-6 && (last[3] - tip[2]).abs() < 1e-6);
    // Unit quaternions.
    for r in &rows {
        let n: f64 = r[4..8].iter().map(|v| v * v).sum();
        assert!((n - 1.0).abs() < 1e-9);
    }
}

#[test]
fn solve_with_tip_force_and_options() {
    let o = rodlab(&[
        "solve",
        "--rod",
        "configs/rod/pls-paper-cantilever.toml",
        "--no-gravity",
        "--tip-force",
        "0,0,-0.001",
        "--sections",
        "4",
        "--modes",
        "euler-bernoulli",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("4 sections"), "{stdout}");
}

#[test]
fn bad_input_exits_2_with_one_line_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(root().join("configs/rod/pls-paper-cantilever.toml")).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing.toml", good.replace("length_m = 0.20\n", ""), "length_m"),
        ("negative.toml", good.replace("base_m = 1.0e-2", "base_m = -1.0e-2"), "radius.base_m"),
        ("sum.toml", good.replace("[0.09, 0.07, 0.04]", "[0.09, 0.07, 0.05]"), "sections_m"),
        ("mode.toml", good.replace("modes = \"cosserat\"", "modes = \"rigid\""), "modes"),
        ("syntax.toml", good.replace("e_pa = 1.1e5", "e_pa = "), "line"),
    ];
    for (name, text, field) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let o = rodlab(&["solve", "--rod", path.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: one line: {err}");
        assert!(err.contains(name) && err.contains(field), "{name}: {err}");
        assert!(!err.contains("panicked"));
    }
    let o = rodlab(&["solve", "--rod", "does/not/exist.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does/not/exist.toml"));
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tension", "1,2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--tension"));
    let o = rodlab(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--tip-force", "1,2"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn paper_table_prints_both_tables() {
    let o = rodlab(&["paper-table"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("Table II") && s.contains("Table III") && s.contains("paper FEM"));
    assert!(s.contains("timoshenko") && s.contains("rodlab PCS"));
}
