//! `session export`: a synthetic session's tables as CSV under the
//! reference's column names, their units in units.csv, the metadata as
//! JSON, every value as in the Parquet files.

use crate::common;
use common::*;

#[test]
fn every_table_is_exported_with_units_and_exact_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = synth(dir.path(), "stick", "configs/rod/contact-paper-steel-core.toml", "configs/scene/contact-paper-stick.toml", |_| {});
    let to = dir.path().join("export");
    let out = lab::export::export(&s, &to).unwrap();
    let names: Vec<String> = out.files.iter().map(|(p, _)| p.strip_prefix(&to).unwrap().display().to_string()).collect();
    assert!(
        names.contains(&"session.json".to_string()) && names.contains(&"streams/robot.csv".to_string()) && names.contains(&"markers.csv".to_string()),
        "{names:?}"
    );
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(to.join("session.json")).unwrap()).unwrap();
    assert!(meta["start_utc"].as_str().is_some_and(|t| !t.is_empty()), "{meta}");

    // The robot stream: same rows, the headers the columns' names (as the
    // reference lists them), a unit for each in units.csv, values exact.
    let table = session::Table::read_chunks(&s.stream("robot")).unwrap();
    let mut csv = csv::Reader::from_path(to.join("streams/robot.csv")).unwrap();
    let headers: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(headers, table.schema().into_iter().map(|(n, _)| n).collect::<Vec<_>>(), "headers are the columns' names");
    let units: Vec<(String, String, String)> = csv::Reader::from_path(to.join("units.csv"))
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .map(|r| (r[0].to_string(), r[1].to_string(), r[2].to_string()))
        .collect();
    let unit_of = |file: &str, column: &str| units.iter().find(|u| u.0 == file && u.1 == column).map(|u| u.2.clone());
    for h in &headers {
        assert!(unit_of("streams/robot.csv", h).is_some_and(|u| !u.is_empty()), "no unit for {h}");
    }
    assert_eq!(unit_of("streams/robot.csv", "actual_TCP_pose_0").as_deref(), Some("m"));
    assert_eq!(unit_of("streams/robot.csv", "actual_TCP_pose_3").as_deref(), Some("rad (rotation vector)"));
    assert_eq!(unit_of("streams/robot.csv", "t_host_ns").as_deref(), Some("ns"));
    assert_eq!(unit_of("markers.csv", "x_m").as_deref(), Some("m"));
    assert_eq!(unit_of("markers.csv", "marker").as_deref(), Some("count"));
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), table.height());
    let col = headers.iter().position(|h| h == "actual_TCP_pose_2").unwrap();
    let z = table.f64("actual_TCP_pose_2").unwrap();
    for (r, v) in rows.iter().zip(&z) {
        assert_eq!(r[col].parse::<f64>().unwrap(), *v);
    }
    let th = table.i64("t_host_ns").unwrap();
    let col = headers.iter().position(|h| h == "t_host_ns").unwrap();
    assert_eq!(rows.last().unwrap()[col].parse::<i64>().unwrap(), *th.last().unwrap());

    // Not a session: one clear input error.
    expect_input_error(lab::export::export(&lab::SessionDir::new(dir.path().join("nothing")), &to), &["no session.toml"]);
}
