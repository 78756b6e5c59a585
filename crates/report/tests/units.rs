//! The report crate's unit tests, through its public API (a few helpers
//! `#[doc(hidden)] pub`): one test binary that links the library cargo
//! built once (tests inside the crate compiled it a second time, under
//! cfg(test): 10 s of a cold build).

mod page {
    use report::page::*;

    #[test]
    fn axes_need_units_and_ticks_get_the_digits_they_need() {
        assert!(has_unit("t [s]") && has_unit("phase [0 free, 1 stick]") && has_unit("cost [sigma^2]"));
        assert!(!has_unit("kinetic energy []") && !has_unit("phase") && !has_unit("[m]"));
        let f = tick_format(0.004);
        assert_eq!((f(&0.001), f(&0.0025)), ("0.00100".to_string(), "0.00250".to_string()));
        assert_eq!(tick_format(50.0)(&12.5), "12.5");
        assert_eq!(tick_format(2e-7)(&1e-7), "1.00e-7");
    }

    #[test]
    fn page_with_every_block_renders() {
        let dir = std::env::temp_dir().join(format!("rodlab-page-{}", std::process::id()));
        let chart = Chart {
            name: "sine".into(),
            title: "A sine <and> a band".into(),
            x_label: "t [s]".into(),
            y_label: "y [m]".into(),
            series: vec![
                Series {
                    band: (0..50).map(|k| (k as f64 * 0.1, (k as f64 * 0.1).sin() - 0.1, (k as f64 * 0.1).sin() + 0.1)).collect(),
                    ..Series::line("sin", (0..50).map(|k| (k as f64 * 0.1, (k as f64 * 0.1).sin())).collect(), 0)
                },
                Series::dashed("cos", (0..50).map(|k| (k as f64 * 0.1, (k as f64 * 0.1).cos())).collect(), 1),
                Series::points("pts", vec![(1.0, 0.5), (2.0, f64::NAN)], 2),
            ],
            diagonal: false,
        };
        let page = Page {
            title: "Test & page".into(),
            blocks: vec![
                Block::Heading("Section".into()),
                Block::Text("text".into()),
                Block::Table(vec!["a".into(), "b".into()], vec![vec!["1".into(), "2".into()]]),
                Block::Chart(chart),
                Block::Warnings(vec!["careful".into()]),
            ],
            provenance: vec![("rod".into(), "x.toml".into())],
        };
        let w = write_page(&dir, &page, &serde_json::json!({"ok": true})).unwrap();
        let html = std::fs::read_to_string(&w.html).unwrap();
        assert!(html.contains("<svg") && html.contains("Test &amp; page") && html.contains("careful"));
        assert_eq!(w.pngs.len(), 1);
        assert!(std::fs::metadata(&w.pngs[0]).unwrap().len() > 1000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

mod legend {
    use report::page::*;
    use report::style::palette;

    /// The legend stands beside the plot (never over the data), and a
    /// dashed series' swatch is dashed (three strokes), a solid one's one.
    #[test]
    fn the_legend_is_beside_the_plot_and_its_swatches_are_drawn_as_their_series() {
        let xs: Vec<(f64, f64)> = (0..20).map(|k| (k as f64, k as f64)).collect();
        let chart = Chart {
            name: "c".into(),
            title: "t".into(),
            x_label: "x [m]".into(),
            y_label: "y [m]".into(),
            series: vec![Series::line("measured", xs.clone(), 0), Series::dashed("simulated", xs, 1)],
            diagonal: false,
        };
        let svg = chart.svg().unwrap();
        let legend_x0 = (SIZE.0 - LEGEND_WIDTH_PX) as f64;
        for label in ["measured", "simulated"] {
            let at = svg.find(label).unwrap_or_else(|| panic!("no legend text {label}"));
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let x: f64 = tag.split("x=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            assert!(x >= legend_x0, "{label} at x = {x}, inside the plot (legend from {legend_x0})");
        }
        // Swatches: short horizontal polylines in the legend's area, by colour.
        let swatches = |(r, g, b): (u8, u8, u8)| {
            let hex = format!("#{r:02X}{g:02X}{b:02X}");
            svg.match_indices("<polyline")
                .filter(|(i, _)| {
                    let tag = &svg[*i..*i + svg[*i..].find("/>").unwrap()];
                    let first_x: f64 = tag.split("points=\"").nth(1).unwrap().split(',').next().unwrap().trim().parse().unwrap();
                    tag.contains(&hex) && first_x >= legend_x0
                })
                .count()
        };
        let rgb = |i: usize| {
            let c = palette(i);
            (c.0, c.1, c.2)
        };
        assert_eq!(swatches(rgb(0)), 1, "a solid swatch");
        assert_eq!(swatches(rgb(1)), 3, "a dashed swatch");
    }
}

mod parameters {
    use report::*;

    /// A parameter the data did not bound is said to be so, not printed
    /// as an interval of sixty decades; a held one keeps its blank cells.
    #[test]
    fn an_unbounded_interval_reads_not_determined() {
        let row = |low: f64, high: f64| ParameterRow { name: "G".into(), unit: "Pa".into(), value: 8.5e4, ci95_low: low, ci95_high: high, reference: f64::NAN };
        let mut h = String::new();
        parameter_rows(&mut h, &[row(3.2198e-64, 2.2749e73)], false);
        assert!(h.contains("not determined by these data") && !h.contains("e73"), "{h}");
        let mut h = String::new();
        parameter_rows(&mut h, &[row(7.0e4, 1.0e5)], false);
        assert!(!h.contains("not determined"), "{h}");
        let mut h = String::new();
        parameter_rows(&mut h, &[row(f64::NAN, f64::NAN)], false);
        assert!(!h.contains("not determined"), "{h}");
    }
}

mod reviewer_checklist {
    //! A paper reviewer's checklist, on a page of generic charts and an
    //! identification report with more series than the palette's colours.
    use report::page::{Block, Chart, Page, Series};
    use report::*;
    use std::path::Path;

    /// The text an SVG draws (its <text> elements' contents).
    fn texts(svg: &str) -> String {
        svg.split("<text").skip(1).filter_map(|t| t.split_once('>').map(|(_, rest)| rest.split("</text>").next().unwrap_or(""))).collect::<Vec<_>>().join(" ")
    }

    /// [`check_figures`] passes on `dir` with exactly `names`, and every
    /// word of each legend label in `labels` is drawn whole.
    fn check(dir: &Path, names: &[&str], labels: &[String]) {
        assert_eq!(check_figures(dir), Ok(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()));
        let all: String = names.iter().map(|n| texts(&std::fs::read_to_string(dir.join(format!("{n}.svg"))).unwrap())).collect::<Vec<_>>().join(" ");
        for label in labels {
            for word in label.split(' ') {
                assert!(all.contains(word), "legend word {word:?} of {label:?} missing");
            }
        }
    }

    #[test]
    fn a_page_and_an_identification_report_pass_a_reviewers_checklist() {
        let dir = std::env::temp_dir().join(format!("rodlab-checklist-{}", std::process::id()));
        let labels: Vec<String> = (0..10).map(|i| format!("replayed, start (mu 0.{i}00, damping ratio 0.050) series {i}")).collect();
        let series = labels.iter().enumerate().map(|(i, l)| Series::line(l.clone(), (0..20).map(|k| (k as f64, (k * (i + 1)) as f64)).collect(), i)).collect();
        let chart = Chart { name: "many".into(), title: "ten series".into(), x_label: "t [s]".into(), y_label: "tip z [mm]".into(), series, diagonal: false };
        let page = Page { title: "page".into(), blocks: vec![Block::Chart(chart)], provenance: vec![] };
        report::page::write_page(&dir, &page, &serde_json::json!({})).unwrap();
        // The first entries are whole; the rest are counted, not cut.
        check(&dir, &["many"], &labels[..3]);
        // A figure whose PNG went missing fails the checklist, naming it.
        std::fs::remove_file(dir.join("many.png")).unwrap();
        assert!(check_figures(&dir).unwrap_err().starts_with("many.png"));

        let view = |i: usize| ExperimentView {
            id: format!("qualisys-10g/hold{i}"),
            inputs: String::new(),
            measured_m: vec![[0.05, 0.7, 0.31 - 0.001 * i as f64]],
            predicted_m: vec![[0.05, 0.7, 0.31 - 0.001 * i as f64]],
            predicted_reference_m: vec![],
            shape_m: (0..10).map(|k| [0.01 * k as f64, 0.7, 0.3]).collect(),
            shape_reference_m: vec![],
            errors_mm: vec![0.05],
            errors_reference_mm: vec![f64::NAN],
            loo_errors_mm: vec![0.06],
            base_m: [0.0, 0.7, 0.3],
            base_rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        };
        let report = IdentificationReport {
            title: "t".into(),
            lead: vec![],
            reference_label: None,
            parameters: vec![],
            correlation_names: vec![],
            correlation: vec![],
            experiments: (0..12).map(view).collect(),
            history: vec![1.0, 0.1, 0.01],
            rms_error_mm: 0.05,
            rms_error_reference_mm: f64::NAN,
            warnings: vec![],
            facts: vec![],
            alternatives: vec![],
            tables: vec![],
            provenance: vec![],
        };
        let dir2 = dir.join("identify");
        write_identification_report(&dir2, &report).unwrap();
        check(&dir2, &["parity", "shapes_side", "shapes_top", "residuals", "convergence"], &["qualisys-10g/hold0".into(), "leave-one-out".into()]);
        // Shapes in the rod's frame: the base (0.7 m off in y) at the origin.
        let side = std::fs::read_to_string(dir2.join("shapes_side.svg")).unwrap();
        assert!(side.contains("x along the rod [mm]"));
        // The residual axis is scaled to its 0.06 mm bars, not to 1 mm.
        let residuals = std::fs::read_to_string(dir2.join("residuals.svg")).unwrap();
        assert!(texts(&residuals).contains("0.06") && !texts(&residuals).contains("1.0 "), "{}", texts(&residuals));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

mod style {
    use report::style::*;

    #[test]
    fn labels_wrap_whole_at_spaces() {
        assert_eq!(wrap("replayed, start (mu 0.500, zeta 0.050)", 20), ["replayed, start (mu", "0.500, zeta 0.050)"]);
        assert_eq!(wrap("short", 20), ["short"]);
        assert_eq!(wrap("qualisys-10g/hold1-and-more-text-without-spaces x", 10), ["qualisys-10g/hold1-and-more-text-without-spaces", "x"]);
        assert_eq!(wrap(&"word ".repeat(30), 26).concat().replace(' ', ""), "word".repeat(30));
    }
}
