//! The identify crate's unit tests, through its public API: one test binary
//! that links the library cargo built once (tests inside the crate compiled
//! it a second time, under cfg(test)).

mod fit {
    use identify::fit::*;

    use nalgebra::DMatrix;

    /// The one-standard-error rule picks the simplest variant under the
    /// best's bar, and the best when its standard error is unknown.
    #[test]
    fn one_standard_error_rule_prefers_the_simpler_model_within_the_noise() {
        // (parameters, CV RMS, its standard error)
        let c = [(3, 1.00, 0.20), (5, 0.90, 0.15), (9, 0.85, 0.10)];
        assert_eq!(one_standard_error_choice(&c), Some(1), "bar 0.95: the 5-parameter model");
        let c = [(3, 0.94, 0.20), (5, 0.90, 0.15), (9, 0.85, 0.10)];
        assert_eq!(one_standard_error_choice(&c), Some(0), "the simplest under the bar");
        let c = [(3, 1.00, 0.20), (9, 0.85, f64::NAN)];
        assert_eq!(one_standard_error_choice(&c), Some(1), "no standard error: the best");
        assert_eq!(one_standard_error_choice(&[(3, f64::NAN, 0.1)]), None);
    }

    /// The CV RMS's standard error by hand: per-experiment mean squares
    /// 1, 4, 9, RMS sqrt(14/3), and the delta method's sd / sqrt(3) / (2 RMS).
    #[test]
    fn cv_standard_error_by_hand() {
        let errors = vec![vec![1.0, 1.0], vec![2.0, 2.0], vec![3.0, 3.0]];
        let (rms_mm, se_mm) = cv_rms_with_se_mm(&errors);
        let mean = 14.0 / 3.0;
        let sd = (((1.0 - mean) * (1.0f64 - mean) + (4.0 - mean) * (4.0 - mean) + (9.0 - mean) * (9.0 - mean)) / 2.0).sqrt();
        assert!((rms_mm - mean.sqrt()).abs() < 1e-12);
        assert!((se_mm - sd / 3f64.sqrt() / (2.0 * mean.sqrt())).abs() < 1e-12, "{se_mm}");
        assert!(cv_rms_with_se_mm(&[vec![1.0]]).1.is_nan());
    }

    #[test]
    fn an_interval_over_four_decades_is_not_determined() {
        assert!(interval_determined(1e5, 2e5));
        assert!(!interval_determined(3.2198e-64, 2.2749e73));
        assert!(!interval_determined(0.0, f64::INFINITY));
        let e = Estimate { value: 1e5, ci95_low: 1.0, ci95_high: 1e10 };
        assert!(!e.determined() && !e.held());
        assert!(Estimate { value: 1e3, ci95_low: f64::NAN, ci95_high: f64::NAN }.held());
    }

    #[test]
    fn chi_square_tail_matches_the_published_table() {
        // Upper-tail critical values of chi-square (NIST/SEMATECH e-Handbook,
        // Table 1.3.6.7.4): P(chi^2_dof >= x) = p.
        let table = [
            (0.001, [(1, 10.828), (2, 13.816), (3, 16.266), (5, 20.515), (10, 29.588), (15, 37.697), (20, 45.315), (50, 86.661), (100, 149.449)]),
            (0.05, [(1, 3.841), (2, 5.991), (3, 7.815), (5, 11.070), (10, 18.307), (15, 24.996), (20, 31.410), (50, 67.505), (100, 124.342)]),
        ];
        for (p, rows) in table {
            for (dof, x) in rows {
                let got = chi_square_upper_p(x, dof);
                assert!((got / p - 1.0).abs() < 0.15, "dof {dof}, x {x}: p {got} vs {p}");
            }
        }
        assert!(chi_square_upper_p(0.0, 4) > 0.999 && chi_square_upper_p(1e4, 4) < 1e-100);
        assert!(chi_square_upper_p(3.0, 0).is_nan());
    }

    #[test]
    fn t_quantile_matches_the_published_table() {
        // Two-sided 95 % points of Student's t (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.2).
        for (dof, t) in [(1, 12.706), (2, 4.303), (3, 3.182), (5, 2.571), (10, 2.228), (30, 2.042), (100, 1.984)] {
            assert!((t975(dof) - t).abs() < 1e-3, "dof {dof}: {} vs {t}", t975(dof));
        }
        // The exact value at 3 degrees of freedom (the old expansion was 3.8e-3 off).
        assert!((t975(3) - 3.182_446_305).abs() < 1e-5);
        assert!(t975(0).is_infinite());
    }

    #[test]
    fn covariance_reports_unseen_directions_as_infinite_variance() {
        // Two parameters the data only see through their sum, a third seen alone.
        let j = DMatrix::from_row_slice(4, 3, &[1.0, 1.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 3.0]);
        let (cov, _, unseen) = covariance(&(j.transpose() * &j), 0.5);
        assert_eq!(unseen.len(), 1);
        let u = &unseen[0];
        assert!((u[0].abs() - 0.5f64.sqrt()).abs() < 1e-9 && (u[0] + u[1]).abs() < 1e-9 && u[2].abs() < 1e-12, "{u}");
        assert!(cov[(0, 0)].is_infinite() && cov[(1, 1)].is_infinite());
        // The seen parameter keeps its variance s2 / (1 + 9).
        assert!((cov[(2, 2)] - 0.05).abs() < 1e-12, "{cov}");
        // A well-posed problem: the plain inverse.
        let j = DMatrix::from_row_slice(3, 2, &[1.0, 0.0, 0.0, 2.0, 1.0, 1.0]);
        let jtj = j.transpose() * &j;
        let (cov, _, unseen) = covariance(&jtj, 1.0);
        assert!(unseen.is_empty() && (cov - jtj.try_inverse().unwrap()).norm() < 1e-12);
    }

    #[test]
    fn jackknife_of_identical_fits_is_zero_and_grows_with_their_spread() {
        let loo = |e: f64| LooResult { experiment: String::new(), e_pa: e, g_pa: 1e5, rho_kg_m3: 1e3, errors_mm: vec![] };
        assert!(jackknife_sd(&[loo(2e5), loo(2e5), loo(2e5)]).unwrap().iter().all(|s| *s < 1e-12));
        let sd = jackknife_sd(&[loo(2e5), loo(2e5 * 0.1f64.exp()), loo(2e5 * (-0.1f64).exp())]).unwrap();
        // (n-1)/n * sum of squares = 2/3 * 0.02.
        assert!((sd[0] - (2.0 / 3.0 * 0.02f64).sqrt()).abs() < 1e-12, "{sd:?}");
        assert!(jackknife_sd(&[loo(2e5), loo(2e5)]).is_none());
    }
}

mod output {
    use identify::output::*;

    use identify::fit::Estimate;

    /// An interval the data do not bound is written [0, inf], not as its
    /// round-off bounds printed with 70 digits; a bounded one as it is.
    #[test]
    fn an_undetermined_interval_is_written_as_zero_to_infinity() {
        let unbounded = EstimateOut::from(Estimate { value: 8.5e4, ci95_low: 3.2e-64, ci95_high: 2.3e73 });
        assert!(!unbounded.determined && unbounded.ci95 == [0.0, f64::INFINITY]);
        let text = toml::to_string(&unbounded).unwrap();
        assert!(text.contains("ci95 = [0.0, inf]") && text.len() < 80, "{text}");
        let bounded = EstimateOut::from(Estimate { value: 8.5e4, ci95_low: 8.0e4, ci95_high: 9.0e4 });
        assert!(bounded.determined && bounded.ci95 == [8.0e4, 9.0e4]);
    }
}

mod problem {
    use identify::data::Experiment;
    use identify::problem::*;

    use lie::Vec3;

    use rod::{Material, Model, Rod};

    use identify::data::Measurement;

    /// The model the problem assembles for a radius scale, a cable offset
    /// and a cable's turn (from its scale-1 and scale-2 pieces) is the one
    /// the rod file gives with that geometry: tapered body, steel core,
    /// inset cable.
    #[test]
    fn fitted_geometry_is_the_rod_with_that_geometry() {
        let silicone = Material::from_poisson(3e5, 0.45, 1200.0);
        let mut rod = Rod::uniform_cylinder(0.2, 0.01, silicone, 4);
        rod.cross_section.shape = rod::Shape::Round {
            outer: rod::Profile::Linear { base_m: 0.01, tip_m: 0.006 },
            hole: None,
            core: Some((0.001, Material::from_poisson(2e11, 0.3, 7800.0))),
        };
        rod.cables.push(rod::Cable { inset_m: 0.001, ..rod::Cable::new("c", 0.7, 0.15) });
        // A cable through guide disks: its holes move as the spans do.
        rod.cables.push(rod::Cable { guides_m: vec![0.05, 0.1, 0.2], ..rod::Cable::new("g", 2.1, 0.2) });
        let tip = Measurement { arc_m: 0.2, offset_body_m: Vec3::zeros(), pos_m: Vec3::zeros(), sigma_m: 1e-3, arc_sigma_m: 0.0, ray: None };
        let e = Experiment::new("x", vec![1.0, 0.5], Vec3::zeros(), vec![tip]);
        let layout = Layout {
            fit_rho: true,
            translation: false,
            pitch: false,
            cable_offset: true,
            radius_scale: true,
            cable_offset_each: 0,
            cable_angle_each: 1,
            clamp_angle_each: 0,
            friction: false,
        };
        let problem = Problem::new(&rod, &[e], layout, &Values::material(3e5, 1e5, 1200.0));
        let (scale, offset_m, turn_rad) = (1.3, 0.002, -0.05);
        let v = Values { cable_offset_m: offset_m, radius_scale: scale, cable_angles_rad: vec![turn_rad], ..Values::material(4e5, 1.4e5, 1100.0) };
        let got = problem.model_at(0, &v);
        let want_rod = rod.with_material(Material { e_pa: 4e5, g_pa: 1.4e5, rho_kg_m3: 1100.0 }).with_geometry(scale, offset_m).with_cable_angles(&[turn_rad]);
        assert!((want_rod.cables[0].angle_rad - 0.65).abs() < 1e-15);
        let want = Model::new(&want_rod, &[0.2, 0.2]);
        assert!((&got.stiffness - &want.stiffness).amax() <= 1e-12 * want.stiffness.amax());
        for (g, w) in got.joint_mass_kg.iter().zip(&want.joint_mass_kg) {
            assert!((g / w - 1.0).abs() < 1e-12, "{g} vs {w}");
        }
        let spans = |m: &Model| m.cable_spans[0].iter().flatten().map(|s| (s.offset_m, s.offset_slope)).collect::<Vec<_>>();
        let (gs, ws) = (spans(&got), spans(&want));
        assert_eq!(gs.len(), ws.len());
        assert!(!gs.is_empty());
        for ((go, gsl), (wo, wsl)) in gs.iter().zip(&ws) {
            assert!((go - wo).norm() < 1e-15 && (gsl - wsl).norm() < 1e-15, "{go:?} {gsl:?} vs {wo:?} {wsl:?}");
        }
        assert_eq!(got.cable_guides[1].len(), 4);
        for (g, w) in got.cable_guides[1].iter().zip(&want.cable_guides[1]) {
            assert!(g.joint == w.joint && (g.offset_m - w.offset_m).norm() < 1e-15, "{g:?} vs {w:?}");
        }
        // The section's radii too (the validity check reads them).
        assert_eq!(got.rod.cross_section.shape, want_rod.cross_section.shape);
    }
}

mod sessions {
    use identify::data::Experiment;
    use identify::sessions::*;
    use lie::{FramePose, Pose, Vec3};

    /// Holds at 0.2, 0.4, 0.3, 0.1 and 0.3 N of one cable: pulled in, pulled
    /// in, let out (reversed at 0.4 N), let out (still reversed at 0.4 N),
    /// pulled in (reversed at 0.1 N).
    #[test]
    fn a_change_of_direction_is_a_reversal_at_the_hold_before() {
        use rod::statics::CableSlide::{LetOut, PulledIn};
        let mut holds: Vec<Experiment> = vec![];
        let mut seen = vec![];
        for t in [0.2, 0.4, 0.3, 0.1, 0.3] {
            let mut e = Experiment::new("h", vec![t, 0.0], Vec3::zeros(), vec![]);
            (e.cable_slide, e.cable_reversal_n) = slide_since(holds.last(), &e);
            seen.push((e.cable_slide, e.cable_reversal_n.first().copied().flatten()));
            holds.push(e);
        }
        assert_eq!(seen, [(PulledIn, None), (PulledIn, None), (LetOut, Some(0.4)), (LetOut, Some(0.4)), (PulledIn, Some(0.1))]);
    }

    /// A session whose robot holds still in \[1, 3.5\] s and \[4.5, 5.7\] s and
    /// moves otherwise; one marker follows the flange.
    fn session(noise_m: f64) -> SessionData {
        let pos = |t: f64| -> Vec3 {
            let x = if t < 1.0 {
                0.01 * t
            } else if t < 3.5 {
                0.01
            } else if t < 4.5 {
                0.01 + 0.02 * (t - 3.5)
            } else if t < 5.7 {
                0.03
            } else {
                0.03 + 0.02 * (t - 5.7)
            };
            Vec3::new(x, 0.0, 0.2)
        };
        let flange = (0..=600).map(|k| k as f64 * 0.01).map(|t| (t, Pose { rot: lie::Mat3::identity(), pos: pos(t) })).collect();
        let mut seed = 7u64;
        let mut noise = move || {
            // A small LCG: reproducible uniform noise of the given amplitude.
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0 * noise_m
        };
        let markers = (0..=300)
            .map(|k| k as f64 * 0.02)
            .map(|t| {
                let tip = Some(rod::Sighting::point(pos(t) + Vec3::new(0.1, 0.0, 0.0) + Vec3::new(noise(), noise(), noise())));
                (t, vec![tip, if t > 2.0 && t < 2.6 { None } else { Some(rod::Sighting::point(pos(t))) }])
            })
            .collect();
        let ft = Stream {
            t_s: (0..=600).map(|k| k as f64 * 0.01).collect(),
            columns: ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm"]
                .iter()
                .enumerate()
                .map(|(c, n)| (n.to_string(), (0..=600).map(|k| c as f64 + 0.01 * (k % 2) as f64).collect()))
                .collect(),
        };
        SessionData {
            tip_clamp: vec![],
            name: "s".into(),
            flange,
            markers,
            streams: [("ft".to_string(), ft)].into_iter().collect(),
            gravity_m_s2: Vec3::new(0.0, 0.0, -9.81),
            warnings: vec![],
            loaded_since_s: None,
        }
    }

    /// Masses per session and from a time on: the latest entry begun by
    /// the hold's start, the session's own before every session's, the
    /// file's tip_mass_kg without one; a change inside a hold rejects it.
    #[test]
    fn tip_masses_per_session_and_time() {
        let loads: LoadsFile = toml::from_str(
            "tip_mass_kg = 0.01\ntip_mass_offset_m = [0.0, 0.01]\n[[tip_mass]]\nsession = \"a\"\nkg = 0.05\n[[tip_mass]]\nsession = \"a\"\nfrom_s = 10.0\nkg = 0.1\noffset_m = [0.02, 0.0]\n",
        )
        .unwrap();
        loads.validate(0).unwrap();
        assert_eq!(loads.tip_mass_in("a", 1.0, 9.0).unwrap(), (0.05, [0.0, 0.01]));
        assert_eq!(loads.tip_mass_in("a", 11.0, 15.0).unwrap(), (0.1, [0.02, 0.0]));
        assert_eq!(loads.tip_mass_in("b", 11.0, 15.0).unwrap(), (0.01, [0.0, 0.01]));
        let e = loads.tip_mass_in("a", 8.0, 12.0).unwrap_err().0;
        assert!(e.contains("changes to 0.1 kg at 10 s, inside the hold"), "{e}");
        let bad: LoadsFile = toml::from_str("[[tip_mass]]\nkg = -1.0\n").unwrap();
        assert_eq!(bad.validate(0).unwrap_err().field, "tip_mass[0].kg");
    }

    #[test]
    fn holds_are_the_still_intervals() {
        let o = HoldOptions::default();
        let holds = find_holds(&session(3e-4), &o).unwrap();
        assert_eq!(holds.len(), 2, "{holds:?}");
        // Robot still in [1, 3.5]: the window (0.5 s) blurs the edges, a
        // quarter second is trimmed at each end, the settling 0.2 s more at
        // the start; nothing moving is inside.
        assert!(holds[0].start_s > 1.45 && holds[0].start_s < 1.8 && holds[0].end_s > 3.0 && holds[0].end_s < 3.5, "{:?}", holds[0]);
        assert_eq!(holds[0].status, HoldStatus::Used(String::new()));
        assert!(matches!(&holds[1].status, HoldStatus::Rejected(w) if w.contains("min_duration_s")), "{:?}", holds[1]);
    }

    #[test]
    fn a_hold_makes_an_experiment_with_its_means_and_standard_errors() {
        let data = session(3e-4);
        let markers = [rod::Marker { arc_m: 0.1, offset_body_m: Vec3::zeros() }, rod::Marker { arc_m: 0.0, offset_body_m: Vec3::zeros() }];
        let rod_markers = RodMarkers { markers: &markers, mount: Pose::from_rpy(0.0, 0.0, 0.0, Vec3::new(0.0, 0.0, -0.01)), place_sigma_m: &[] };
        let loads = LoadsFile {
            flange_sensor: Some(FlangeSensor {
                stream: "ft".into(),
                columns: ft_columns(),
                mount: FramePose::default(),
                bias_force_n: [1.0, 0.0, 0.0],
                bias_moment_nm: [0.0; 3],
                bias: None,
                tare_window_s: None,
                frame: WrenchFrame::Sensor,
                sigma_floor_force_n: 1e-6,
                sigma_floor_moment_nm: 1e-6,
                fit: true,
            }),
            holds: HoldOptions { max_missing_fraction: 0.5, ..HoldOptions::default() },
            ..LoadsFile::default()
        };
        let (exps, holds) = experiments_from_session(&data, &rod_markers, &loads).unwrap();
        assert_eq!(exps.len(), 1);
        assert_eq!(holds[0].status, HoldStatus::Used("s/hold1".into()));
        let e = &exps[0];
        assert!((e.measurements[0].pos_m - Vec3::new(0.11, 0.0, 0.2)).norm() < 1e-4);
        // Uniform noise of amplitude a: sd a/sqrt(3); standard error over ~66 frames.
        let se = 3e-4 / 3f64.sqrt() / (holds[0].frames as f64).sqrt();
        assert!((e.measurements[0].sigma_m / se - 1.0).abs() < 0.3, "{} vs {se}", e.measurements[0].sigma_m);
        assert_eq!(e.measurements[1].sigma_m, 2e-5);
        assert!((e.base_pose.unwrap().pos - Vec3::new(0.01, 0.0, 0.19)).norm() < 1e-12);
        let w = e.base_wrench.as_ref().unwrap();
        // Force x = 0 + 0.005 - bias 1; wrench order [m; f].
        assert!((w.wrench[3] - (0.005 - 1.0)).abs() < 1e-3 && (w.wrench[0] - 3.005).abs() < 1e-3, "{:?}", w.wrench);
        // A stricter missing-marker rule rejects the hold, naming the marker.
        let strict = LoadsFile { holds: HoldOptions { max_missing_fraction: 0.1, ..HoldOptions::default() }, ..loads };
        let (exps, holds) = experiments_from_session(&data, &rod_markers, &strict).unwrap();
        assert!(exps.is_empty());
        assert!(matches!(&holds[0].status, HoldStatus::Rejected(w) if w.contains("marker 1")), "{:?}", holds[0]);
    }

    /// A hold's marker seen as points in most frames is their mean; seen by
    /// one camera alone in most (the left seven times, the right three) it
    /// is the left camera's mean ray, through the marker.
    #[test]
    fn a_hold_of_rays_is_one_cameras_mean_ray() {
        let marker = Vec3::new(0.1, 0.02, 0.3);
        let (left, right) = (Vec3::new(-0.15, -0.5, 0.3), Vec3::new(0.35, -0.5, 0.3));
        let ray = |camera: Vec3, k: usize| rod::Sighting::ray(camera, marker + Vec3::new(1e-4 * k as f64 - 4e-4, 0.0, 0.0) - camera).unwrap();
        let other = Some(rod::Sighting::point(Vec3::new(0.15, 0.0, 0.3)));
        let seen: Vec<rod::Sighting> = (0..10).map(|k| if k < 7 { ray(left, k) } else { ray(right, k) }).collect();
        let frames: Vec<Vec<Option<rod::Sighting>>> = seen.iter().map(|s| vec![Some(*s), other]).collect();
        let refs: Vec<&Vec<Option<rod::Sighting>>> = frames.iter().collect();
        let h = hold_sighting(&seen, 0.1, &refs);
        assert!((h.at_m - left).norm() < 1e-12, "{:?}", h.at_m);
        let miss = rod::Sighting { at_m: h.at_m, ray: h.ray }.miss(&marker).norm();
        assert!(miss < 2e-4, "the mean ray passes {miss} m from the marker");
        assert!(h.sigma_m > 0.0 && h.sigma_m < 1e-4, "{}", h.sigma_m);
        // Points in 9 of 10 frames: their mean.
        let mixed: Vec<rod::Sighting> = (0..10).map(|k| if k < 9 { rod::Sighting::point(marker) } else { ray(left, k) }).collect();
        let h = hold_sighting(&mixed, 0.1, &refs);
        assert!(h.ray.is_none() && (h.at_m - marker).norm() < 1e-12);
    }
}

/// Hold detection's frame work (polars) against the loops it replaced.
mod hold_table {
    use identify::hold_table::{stats_between, still_runs, StillRun};
    use identify::sessions::HoldOptions;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The detection as it was written before polars: the nearest robot
    /// sample by bisection (the earlier of two equally near), then runs.
    fn still_runs_by_loop(t: &[f64], speed: &[f64], robots: &[(Vec<f64>, Vec<bool>)], o: &HoldOptions) -> Vec<StillRun> {
        let still_at = |(rt, rs): &(Vec<f64>, Vec<bool>), t: f64| {
            let k = rt.partition_point(|x| *x < t);
            let nearest =
                [k.checked_sub(1), (k < rt.len()).then_some(k)].into_iter().flatten().min_by(|&a, &b| (rt[a] - t).abs().total_cmp(&(rt[b] - t).abs()));
            nearest.is_some_and(|k| rs[k])
        };
        let still: Vec<bool> = t.iter().zip(speed).map(|(t, s)| *s <= o.max_marker_speed_m_s && robots.iter().all(|r| still_at(r, *t))).collect();
        let mut runs = vec![];
        let mut i = 0;
        while i < still.len() {
            if !still[i] {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < still.len() && still[j + 1] {
                j += 1;
            }
            let (t0_s, t1_s) = (t[i], t[j]);
            if t1_s - t0_s >= o.window_s {
                let (start_s, end_s) = (t0_s + 0.5 * o.window_s + o.settle_s, t1_s - 0.5 * o.window_s);
                let frames = t[i..=j].iter().filter(|t| **t >= start_s && **t <= end_s).count();
                runs.push(StillRun { t0_s, t1_s, start_s, end_s, frames });
            }
            i = j + 1;
        }
        runs
    }

    #[test]
    fn still_runs_are_the_loops_runs_on_random_sessions() {
        let mut rng = StdRng::seed_from_u64(82);
        let mut compared = 0;
        for case in 0..200 {
            let o = HoldOptions { window_s: rng.gen_range(0.05..0.6), settle_s: rng.gen_range(0.0..0.3), max_marker_speed_m_s: 1e-3, ..HoldOptions::default() };
            // Camera frames at 30 fps with jitter; speeds in still and moving spells.
            let n = rng.gen_range(0..400);
            let mut t = vec![];
            let mut now = rng.gen_range(-1.0..1.0);
            for _ in 0..n {
                now += rng.gen_range(0.02..0.045);
                t.push(now);
            }
            let mut moving = false;
            let speed: Vec<f64> = (0..n)
                .map(|_| {
                    if rng.gen_bool(0.04) {
                        moving = !moving;
                    }
                    match (moving, rng.gen_range(0..50)) {
                        (_, 0) => f64::INFINITY,
                        (_, 1) => f64::NAN,
                        (_, 2) => 1e-3, // on the threshold
                        (true, _) => rng.gen_range(2e-3..1e-1),
                        (false, _) => rng.gen_range(0.0..9e-4),
                    }
                })
                .collect();
            // Robots at 125-500 Hz, some sharing the frames' times (ties
            // and exact hits), one case in ten without samples.
            let robots: Vec<(Vec<f64>, Vec<bool>)> = (0..rng.gen_range(1..3))
                .map(|_| {
                    if rng.gen_bool(0.1) {
                        return (vec![], vec![]);
                    }
                    let dt = [0.002, 0.004, 0.008][rng.gen_range(0..3)];
                    let start = t.first().copied().unwrap_or(0.0) - rng.gen_range(-0.5..0.5);
                    let m = ((n as f64) * 0.04 / dt) as usize + 1;
                    let mut rt: Vec<f64> = (0..m).map(|k| start + k as f64 * dt).collect();
                    // Midpoints between two samples: equally near both.
                    if !rt.is_empty() && !t.is_empty() && rng.gen_bool(0.3) {
                        let k = rng.gen_range(0..t.len());
                        rt.push(t[k] - 0.01);
                        rt.push(t[k] + 0.01);
                        rt.sort_by(f64::total_cmp);
                    }
                    let mut still = true;
                    let flags = rt
                        .iter()
                        .map(|_| {
                            if rng.gen_bool(0.01) {
                                still = !still;
                            }
                            still
                        })
                        .collect();
                    (rt, flags)
                })
                .collect();
            let expected = still_runs_by_loop(&t, &speed, &robots, &o);
            let got = still_runs(&t, &speed, &robots, &o).unwrap_or_else(|e| panic!("case {case}: {e}"));
            assert_eq!(got, expected, "case {case}");
            compared += expected.len();
        }
        assert!(compared > 100, "the cases hold few runs: {compared}");
    }

    #[test]
    fn a_frame_midway_between_two_robot_samples_takes_the_earlier() {
        // Exact binary fractions: every frame is exactly as near the robot
        // sample before it as the one after it; the earlier is still.
        let t: Vec<f64> = (0..64).map(|k| k as f64 * 0.25).collect();
        let rt: Vec<f64> = (0..130).map(|k| k as f64 * 0.125 - 0.0625).collect();
        let still: Vec<bool> = (0..130).map(|k| k % 2 == 0).collect();
        let o = HoldOptions { window_s: 0.5, settle_s: 0.0, ..HoldOptions::default() };
        let speed = vec![0.0; t.len()];
        let expected = still_runs_by_loop(&t, &speed, &[(rt.clone(), still.clone())], &o);
        assert_eq!(expected.len(), 1, "{expected:?}");
        assert_eq!(still_runs(&t, &speed, &[(rt.clone(), still)], &o).unwrap(), expected);
        // The later still instead: no frame is.
        let later: Vec<bool> = (0..130).map(|k| k % 2 == 1).collect();
        assert_eq!(still_runs_by_loop(&t, &speed, &[(rt.clone(), later.clone())], &o), vec![]);
        assert_eq!(still_runs(&t, &speed, &[(rt, later)], &o).unwrap(), vec![]);
    }

    #[test]
    fn statistics_over_a_span_are_the_loops() {
        let t: Vec<f64> = (0..1000).map(|k| k as f64 * 0.01).collect();
        let x: Vec<f64> = t.iter().map(|t| if ((t * 100.0) as usize).is_multiple_of(97) { f64::NAN } else { (3.0 * t).sin() + 0.5 }).collect();
        let by_loop = |a: f64, b: f64| {
            let xs: Vec<f64> = t.iter().zip(&x).filter(|(t, x)| **t >= a && **t <= b && x.is_finite()).map(|(_, x)| *x).collect();
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            (mean, (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt(), xs.len())
        };
        for (a, b) in [(0.0, 9.99), (1.0, 2.0), (2.345, 7.5)] {
            let (mean, sd, n) = stats_between(&t, &x, a, b).unwrap().unwrap();
            let (m, s, k) = by_loop(a, b);
            assert_eq!(n, k);
            assert!((mean - m).abs() < 1e-14 && (sd - s).abs() < 1e-14, "{mean} {m} {sd} {s}");
        }
        assert_eq!(stats_between(&t, &x, 20.0, 30.0).unwrap(), None);
        assert_eq!(stats_between(&t, &x, 0.5, 0.5).unwrap(), Some((x[50], 0.0, 1)));
    }
}
