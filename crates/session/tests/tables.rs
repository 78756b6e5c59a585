//! Round trips of the session tables and clear errors for bad files.

#[path = "../../../tests/common/tmpfs.rs"]
mod tmpfs;
use tmpfs::Tmpfs;

use session::{read_markers, read_strain, read_tcp_poses, write_markers, write_strain, MarkerRow, RobotLog, StrainRow, Table};

#[test]
fn marker_and_strain_tables_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<MarkerRow> = (0..30)
        .map(|i| MarkerRow {
            frame: i / 3,
            t_s: (i / 3) as f64 * 0.01,
            t_host_ns: Some(5 + i),
            marker: (i % 3) as u32,
            u_px: i as f64,
            v_px: 2.0 * i as f64,
            x_m: 0.1,
            y_m: -0.2,
            z_m: f64::NAN,
            area_px: 40.0,
            flags: if i == 4 { session::flags::MISSING } else { 0 },
        })
        .collect();
    let p = dir.path().join("markers.parquet");
    write_markers(&p, &rows).unwrap();
    let back = read_markers(&p).unwrap();
    assert_eq!(back.len(), rows.len());
    assert_eq!(back[4].flags, session::flags::MISSING);
    assert_eq!(back[7].t_host_ns, Some(12));
    assert!(back[0].z_m.is_nan());
    // No temporary file is left behind.
    assert!(!dir.path().join("markers.parquet.tmp").exists());
    // The table says which frame its positions are in.
    assert_eq!(Table::read(&p).unwrap().meta(session::FRAME_KEY), Some(session::WORLD_FRAME));

    let s: Vec<StrainRow> = (0..10)
        .map(|i| StrainRow {
            frame: i,
            t_host_ns: i * 10,
            node: 2,
            arc_m: 0.1,
            strain: [i as f64, 1.0, 2.0, 3.0, 4.0, 5.0],
            marker_residual_m: 1e-10,
            status: "ok".into(),
            base_pose: [0.1, 0.2, 0.3, 0.0, 0.0, i as f64 * 0.01],
        })
        .collect();
    let p = dir.path().join("strain.parquet");
    write_strain(&p, &s, &[("observer", "test")]).unwrap();
    assert_eq!(read_strain(&p).unwrap(), s);
}

#[test]
fn bad_tables_name_file_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.parquet");
    let mut t = Table::new();
    t.push_i64("frame", vec![1]);
    t.write(&p).unwrap();
    let e = read_markers(&p).unwrap_err().to_string();
    assert!(e.contains("m.parquet") && e.contains("missing column 't_s'"), "{e}");
    let garbage = dir.path().join("g.parquet");
    std::fs::write(&garbage, b"not parquet").unwrap();
    let e = read_markers(&garbage).unwrap_err().to_string();
    assert!(e.contains("g.parquet") && e.contains("cannot read"), "{e}");
}

#[test]
fn robot_stream_chunks_are_concatenated_and_interpolated() {
    let dir = tempfile::tempdir().unwrap();
    let stream = session::stream_dir(dir.path(), "robot");
    std::fs::create_dir_all(&stream).unwrap();
    for chunk in 0..3i64 {
        let mut t = Table::new();
        let times: Vec<i64> = (0..4).map(|k| (chunk * 4 + k) * 1000).collect();
        t.push_i64("t_host_ns", times.clone());
        // Position along x, rotation about z: both linear in time.
        for i in 0..6 {
            let f = |t: i64| match i {
                0 => t as f64 * 1e-3,
                5 => t as f64 * 1e-4,
                _ => 0.0,
            };
            t.push_f64(&format!("actual_TCP_pose_{i}"), times.iter().map(|&t| f(t)).collect());
        }
        t.write(&stream.join(format!("{chunk:06}.parquet"))).unwrap();
    }
    let s = read_tcp_poses(dir.path()).unwrap().unwrap();
    assert_eq!(s.len(), 12);
    let log = RobotLog::new(&s).unwrap();
    let p = lie::trajectory::pose_to_ur(&log.flange_at(5500).unwrap());
    assert!((p[0] - 5.5).abs() < 1e-12 && (p[5] - 0.55).abs() < 1e-12, "{p:?}");
    // Outside the log: an error, not the end pose.
    assert!(log.flange_at(-5).is_err() && log.flange_at(11_001).is_err());
    assert!(RobotLog::new(&[]).is_err());
    assert!(read_tcp_poses(&dir.path().join("none")).unwrap().is_none());
}

/// A session in `dir` whose stream `cell` has one good chunk (3 rows); its directory.
fn stream_with_a_good_chunk(dir: &std::path::Path) -> std::path::PathBuf {
    let stream = session::stream_dir(dir, "cell");
    std::fs::create_dir_all(&stream).unwrap();
    let mut good = Table::new();
    good.push_i64("t_host_ns", vec![1, 2, 3]);
    good.push_f64("force_n", vec![0.1, 0.2, 0.3]);
    good.write(&stream.join("000000.parquet")).unwrap();
    stream
}

/// A chunk with null values (another tool's writer, a damaged file) is
/// named by `session check` and left out by a lenient reader, with the
/// rows it held.
#[test]
fn a_chunk_with_nulls_is_named_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let stream = stream_with_a_good_chunk(dir.path());
    write_with_a_null(&stream.join("000001.parquet"));
    let reports = session::check_session(dir.path()).unwrap();
    let bad = reports.iter().find(|r| r.path.ends_with("000001.parquet")).unwrap();
    assert_eq!(bad.problem.as_deref(), Some("column 'force_n' has 1 null values"));
    let (t, warnings) = Table::read_chunks_or_skip(&stream, session::Damaged::Skip).unwrap();
    assert_eq!(t.height(), 3);
    assert!(warnings.len() == 1 && warnings[0].contains("000001.parquet: left out (3 rows lost): column 'force_n' has 1 null values"), "{warnings:?}");
    // A strict reader refuses the chunk, naming it (as check does).
    let e = Table::read_chunks_or_skip(&stream, session::Damaged::Refuse).err().expect("refused").to_string();
    assert!(e.contains("000001.parquet") && e.contains("column 'force_n' has 1 null values"), "{e}");
}

/// What a copied, reversed, shifted or foreign chunk does to a stream:
/// `session check` names it, a lenient reader leaves it out (the rest of
/// the stream read, the rows lost said), a strict one refuses it, by one
/// rule. Before: a chunk copied over the next passed the readers and
/// stopped validate on "times must increase strictly"; rows reversed
/// inside a chunk passed `--strict`; +inf passed check; a row at
/// i64::MAX passed check and made validate blame the scene.
#[test]
fn copied_reversed_infinite_and_out_of_range_chunks_are_named_skipped_or_refused_alike() {
    let chunk = |t: Vec<i64>, f: Vec<f64>| {
        let mut c = Table::new();
        c.push_i64("t_host_ns", t);
        c.push_f64("force_n", f);
        c
    };
    let cases: Vec<(&str, Table, &str)> = vec![
        ("a copy of the chunk before", chunk(vec![1_000, 2_000, 3_000], vec![0.1, 0.2, 0.3]), "runs backwards at row 0"),
        ("rows reversed", chunk(vec![6_000, 5_000, 4_000], vec![0.4, 0.5, 0.6]), "runs backwards at row 1"),
        ("+inf", chunk(vec![4_000, 5_000, 6_000], vec![0.4, f64::INFINITY, 0.6]), "column 'force_n' is inf at row 1"),
        ("a row at i64::MAX", chunk(vec![4_000, 5_000, i64::MAX], vec![0.4, 0.5, 0.6]), "lies outside any recording"),
        ("shifted by -1000 s", chunk(vec![-1_000_000_000_000, -999_999_999_000, -999_999_998_000], vec![0.4, 0.5, 0.6]), "lies outside any recording"),
    ];
    for (what, bad, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let stream = session::stream_dir(dir.path(), "cell");
        std::fs::create_dir_all(&stream).unwrap();
        chunk(vec![1_000, 2_000, 3_000], vec![0.1, 0.2, 0.3]).write(&stream.join("000000.parquet")).unwrap();
        bad.write(&stream.join("000001.parquet")).unwrap();
        chunk(vec![7_000, 8_000], vec![0.7, 0.8]).write(&stream.join("000002.parquet")).unwrap();
        let reports = session::check_session(dir.path()).unwrap();
        let named = reports.iter().find(|r| r.path.ends_with("000001.parquet")).unwrap();
        assert!(named.problem.as_deref().is_some_and(|p| p.contains(says)), "{what}: {named:?}");
        assert!(reports.iter().filter(|r| !r.path.ends_with("000001.parquet")).all(|r| r.problem.is_none()), "{what}: {reports:?}");
        let (t, warnings) = Table::read_chunks_or_skip(&stream, session::Damaged::Skip).unwrap();
        assert_eq!(t.i64("t_host_ns").unwrap(), vec![1_000, 2_000, 3_000, 7_000, 8_000], "{what}");
        assert!(warnings.len() == 1 && warnings[0].contains("000001.parquet: left out (3 rows lost)") && warnings[0].contains(says), "{what}: {warnings:?}");
        let e = Table::read_chunks_or_skip(&stream, session::Damaged::Refuse).err().expect("refused").to_string();
        assert!(e.contains("000001.parquet") && e.contains(says), "{what}: {e}");
        // Decoded in parallel (Python's Session.stream): the same rows, warning and refusal.
        let (p, parallel_warnings) = Table::read_chunks_decoded(&stream, session::Damaged::Skip, session::Decoding::Parallel).unwrap();
        assert_eq!(
            (p.i64("t_host_ns").unwrap(), p.f64("force_n").unwrap(), &parallel_warnings),
            (t.i64("t_host_ns").unwrap(), t.f64("force_n").unwrap(), &warnings),
            "{what}"
        );
        let parallel_e = Table::read_chunks_decoded(&stream, session::Damaged::Refuse, session::Decoding::Parallel).err().expect("refused").to_string();
        assert_eq!(parallel_e, e, "{what}");
    }
}

/// A chunk as a writer that allows nulls leaves it (polars and pyarrow
/// write columns as optional): `t_host_ns` 4, 5, 6 and `force_n` 0.4,
/// null, 0.6.
fn write_with_a_null(path: &std::path::Path) {
    use polars::prelude::*;
    let mut frame = df!("t_host_ns" => [4i64, 5, 6], "force_n" => [Some(0.4), None, Some(0.6)]).unwrap();
    ParquetWriter::new(std::fs::File::create(path).unwrap()).finish(&mut frame).unwrap();
}

/// A FIFO named like a chunk is a chunk that cannot be read, named at once
/// (before: `session check` hung on it, and so did every reader).
#[test]
fn a_fifo_named_like_a_chunk_is_named_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let stream = stream_with_a_good_chunk(dir.path());
    let fifo = stream.join("000001.parquet");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let started = std::time::Instant::now();
    let reports = session::check_session(dir.path()).unwrap();
    let named = reports.iter().find(|r| r.path.ends_with("000001.parquet")).unwrap();
    assert!(named.problem.as_deref().is_some_and(|p| p.contains("not a regular file")), "{named:?}");
    let (t, warnings) = Table::read_chunks_or_skip(&stream, session::Damaged::Skip).unwrap();
    assert!(t.height() == 3 && warnings.len() == 1 && warnings[0].contains("not a regular file"), "{warnings:?}");
    assert!(started.elapsed().as_secs_f64() < 2.0);
}

/// A table exports by polars' writers in each format, and reads back (by
/// polars' readers) value for value: floats to the bit, a NaN as a missing
/// value only where asked.
#[test]
fn a_table_exports_in_every_format_and_reads_back_exactly() {
    use polars::prelude::*;
    use session::TableFormat;
    let dir = tempfile::tempdir().unwrap();
    let x = vec![0.1, 0.1 + 0.2, 1e-9, 100.0, -2.5e300, f64::NAN];
    let mut t = Table::new();
    t.push_i64("t_host_ns", vec![0, 1, 2, 3, 4, i64::MAX]);
    t.push_f64("x_m", x.clone());
    t.push_u32("marker", vec![0, 1, 2, 3, 4, u32::MAX]);
    t.push_str("label", vec!["a".into(), "b, c".into(), "\"q\"".into(), "".into(), "é".into(), "f".into()]);
    let t = t.into_read();
    for format in TableFormat::NAMES.map(|n| TableFormat::parse(n).unwrap()) {
        for nan_is_missing in [false, true] {
            let path = dir.path().join(format!("t{nan_is_missing}.{}", format.extension()));
            assert_eq!(t.export(&path, format, nan_is_missing).unwrap(), 6);
            let file = std::fs::File::open(&path).unwrap();
            let back = match format {
                TableFormat::Csv => {
                    CsvReadOptions::default().with_infer_schema_length(None).try_into_reader_with_file_path(Some(path.clone())).unwrap().finish()
                }
                TableFormat::Json => JsonReader::new(file).finish(),
                TableFormat::Parquet => ParquetReader::new(file).finish(),
                TableFormat::Ipc => IpcReader::new(file).finish(),
            }
            .unwrap();
            let got: Vec<Option<f64>> = back.column("x_m").unwrap().f64().unwrap().iter().collect();
            // JSON has no NaN: there it is null either way.
            let last = if nan_is_missing || format == TableFormat::Json { None } else { Some(f64::NAN) };
            assert_eq!(got[..5].iter().map(|v| v.unwrap().to_bits()).collect::<Vec<_>>(), x[..5].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{format:?}");
            assert!(got[5].map(f64::is_nan) == last.map(f64::is_nan), "{format:?} {nan_is_missing}: {:?}", got[5]);
            let ns: Vec<Option<i64>> = back.column("t_host_ns").unwrap().cast(&DataType::Int64).unwrap().i64().unwrap().iter().collect();
            assert_eq!(ns.last().copied().flatten(), Some(i64::MAX), "{format:?}");
            let labels: Vec<String> = back.column("label").unwrap().str().unwrap().iter().map(|s| s.unwrap_or("").to_string()).collect();
            assert_eq!(labels, ["a", "b, c", "\"q\"", "", "é", "f"], "{format:?}");
        }
    }
    // The CSV's text: floats in their shortest exact form, a missing
    // value an empty field, a NaN kept as NaN where it is a value.
    let csv = std::fs::read_to_string(dir.path().join("ttrue.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "t_host_ns,x_m,marker,label");
    assert_eq!(lines[2], "1,0.30000000000000004,1,\"b, c\"");
    assert_eq!(lines[6], "9223372036854775807,,4294967295,f");
    let csv = std::fs::read_to_string(dir.path().join("tfalse.csv")).unwrap();
    assert_eq!(csv.lines().nth(6), Some("9223372036854775807,NaN,4294967295,f"));
}

/// A disk that fills while a table is written: whichever byte the disk
/// runs out at (a page, the footer), the error names the system's reason
/// and no half file is left. polars' writer, writing the file itself, said
/// "Invalid thrift: transport error" where the footer met the full disk,
/// and a recording's error then did not say why (seen in a fresh-clone
/// CI's full-disk recording test).
#[test]
fn a_disk_full_at_any_byte_of_a_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(dir.path(), "256k") else { return };
    // Tables whose ends fall at every offset within a page, each given one
    // page less than it needs: the disk runs out in its last page, which
    // holds only the footer for some.
    for rows in (2000..5000).step_by(23) {
        let fits = dir.path().join("fits.parquet");
        incompressible_table(rows).write(&fits).unwrap();
        disk.leave_free(std::fs::metadata(&fits).unwrap().len().div_ceil(4096) - 1);
        let err = incompressible_table(rows).write(&disk.0.join("t.parquet")).unwrap_err().to_string();
        assert!(err.contains("No space left on device") && err.contains("t.parquet"), "{rows} rows: {err}");
        assert!(disk.files().is_empty(), "{rows} rows: left behind {:?}", disk.files());
    }
}

/// The same for an export (`session export`, `archive index`), in every
/// format, the file written by polars' writers through ours: the system's
/// reason named, no half file left.
#[test]
fn a_disk_full_during_an_export_is_named_in_every_format() {
    use session::TableFormat;
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(dir.path(), "256k") else { return };
    let stored = dir.path().join("stored.parquet");
    for rows in (3000..5000).step_by(97) {
        incompressible_table(rows).write(&stored).unwrap();
        let table = Table::read(&stored).unwrap();
        for format in TableFormat::NAMES.map(|n| TableFormat::parse(n).unwrap()) {
            let fits = dir.path().join(format!("fits.{}", format.extension()));
            table.export(&fits, format, false).unwrap();
            disk.leave_free(std::fs::metadata(&fits).unwrap().len().div_ceil(4096) - 1);
            let out = disk.0.join(format!("t.{}", format.extension()));
            let err = table.export(&out, format, false).unwrap_err().to_string();
            assert!(err.contains("No space left on device") && err.contains(&format!("t.{}", format.extension())), "{rows} rows, {format:?}: {err}");
            assert!(disk.files().is_empty(), "{rows} rows, {format:?}: left behind {:?}", disk.files());
        }
    }
}

/// A table of `rows` numbers zstd cannot shrink, so that its size moves
/// with its rows.
fn incompressible_table(rows: usize) -> Table {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<f64> = (0..rows)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as f64
        })
        .collect();
    let mut t = Table::new();
    t.push_i64("t_host_ns", (0..rows as i64).collect());
    t.push_f64("x", noise);
    t
}
