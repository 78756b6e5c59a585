//! The lab crate's unit tests, through its public API: one test binary
//! that links the library cargo built once (tests inside the crate compiled
//! it a second time, under cfg(test)).

mod error {
    use lab::error::*;

    #[test]
    fn context_never_names_a_file_twice_and_kinds_survive() {
        let e: Error = std::io::Error::other("disk full").into();
        assert_eq!(e.kind(), Kind::Io);
        let e = e.context("out/x.parquet");
        assert_eq!(e.to_string(), "out/x.parquet: disk full");
        assert_eq!(e.clone().context("out/x.parquet").to_string(), "out/x.parquet: disk full");
        let r: Result<()> = Err(std::io::Error::other("no")).input("--rig r.toml");
        assert_eq!(r.unwrap_err().kind(), Kind::Input);
        assert!(positive("--rate-hz", 0.0).unwrap_err().to_string().contains("--rate-hz"));
        assert!(positive("--rate-hz", f64::NAN).is_err() && non_negative("x", 0.0).is_ok());
    }
}

mod reference {
    use lab::reference::*;

    #[test]
    fn the_rod_files_fields_include_nested_tables_and_arrays_of_tables() {
        let f = fields(&schema("rod").unwrap());
        let paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
        for p in ["length_m", "material.e_pa", "marker[].arc_m", "cable[].angle_deg", "hole.base_m", "section.width_m"] {
            assert!(paths.contains(&p), "{p} not in {paths:?}");
        }
        // A type used in several places is listed once; the others say where.
        let radius = f.iter().find(|f| f.path == "radius").unwrap();
        assert!(radius.kind.contains("fields as `hole`"), "{radius:?}");
        let length = f.iter().find(|f| f.path == "length_m").unwrap();
        assert!(length.required && length.kind == "number", "{length:?}");
        let sub = f.iter().find(|f| f.path == "subsegments_per_section").unwrap();
        assert_eq!(sub.default.as_deref(), Some("8"));
        assert!(schema("nothing").is_none());
    }
}

mod tables {
    use lab::tables::*;

    #[test]
    fn a_table_written_reads_back_and_bad_rows_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.csv");
        let rows = vec![(0.0, [1.0, 2.0, 3.0, 0.1, 0.2, 1.0 / 3.0]), (0.01, [1.5, 2.0, 3.0, 0.1, 0.2, 0.3])];
        write_time_table(&p, &WRENCH_HEADER, rows.clone()).unwrap();
        assert_eq!(read_wrench(&p).unwrap(), rows);
        for (text, needle) in [
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n# a comment\n0,1,2,3,4,5,6\n0.1,1,2,x,4,5,6\n", "line 4: column fz_n: not a number"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n0,1,2,3,4,5\n", "line 2: 6 values, the header has 7"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n1,1,2,3,4,5,6\n1,1,2,3,4,5,6\n", "line 3: t_s = 1 does not follow 1"),
            ("t_s,f\n0,1\n", "header: expected t_s,fx_n"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n", "no rows"),
            ("t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm\n0,1,2,3,4,5,inf\n", "not finite"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_wrench(&p).unwrap_err();
            assert!(e.to_string().contains(needle) && e.to_string().contains("w.csv"), "{e}");
            assert_eq!(e.kind(), lab::Kind::Input);
        }
        std::fs::write(&p, "t_s,a_n,b_n\n0,1,2\n1,3,4\n").unwrap();
        let t = read_time_table(&p, None).unwrap();
        assert_eq!(t.columns, vec!["a_n", "b_n"]);
        assert_eq!(t.rows[1], (1.0, vec![3.0, 4.0]));
    }
}
