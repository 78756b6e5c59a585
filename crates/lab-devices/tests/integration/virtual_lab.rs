//! The virtual lab through the lab's workflows: a simulated experiment
//! played in real time through the RTDE and FT 300 emulators (in-process,
//! on loopback and a pty pair) and a rendered camera video into the
//! recorder, then the video tracked; the chain track -> validate (and
//! identify) runs on what was recorded, and the recorded data are compared
//! with the truth the simulator wrote beside the session.

use crate::common;
use common::*;

use lab::synth::{SynthRequest, TruthFile};
use lab::validate::{validate, SessionSummary, ValidateOptions, ValidateRequest};
use lab::SessionDir;
use std::path::{Path, PathBuf};

const ROD: &str = "configs/rod/contact-paper-steel-core.toml";

/// Live recordings run one at a time: each plays in real time, and two at
/// once on two cores would make each other late.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A live session of `scene` with `rod`, changed by `edit`.
fn live_with(dir: &Path, name: &str, rod_rel: &str, scene_rel: &str, edit: impl FnOnce(&mut SynthRequest)) -> lab_devices::live::Live {
    live_at_fps(dir, name, (rod_rel, scene_rel), 30.0, edit)
}

/// [`live_with`], the cameras at `camera_fps`.
fn live_at_fps(dir: &Path, name: &str, (rod_rel, scene_rel): (&str, &str), camera_fps: f64, edit: impl FnOnce(&mut SynthRequest)) -> lab_devices::live::Live {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut req = SynthRequest::new(&at(scene_rel), scene(scene_rel), &at(rod_rel), rod(rod_rel), &dir.join(name));
    edit(&mut req);
    let live = lab_devices::live::record_live(&req, camera_fps, &lab::Silent).unwrap();
    let (s, truth) = (&live.made.session, &live.made.truth_dir);
    assert!(truth.join("truth.toml").is_file() && !s.path().join("truth.toml").exists() && !s.path().join("sim.parquet").exists());
    live
}

/// Tracked markers against the truth at the same instant (host time of the
/// camera frame mapped to simulation time with the truth's t0): RMS error
/// per marker [m], and the largest error over all. The virtual camera's
/// file stamps each frame when it shows it, so each marker is compared
/// with the truth at its stamp. (Stamped when the recorder got them, a
/// loaded machine's frames came up to 46 ms late, markers 0.8-1.4 mm from
/// the truth; then on the file's clock at the least delay seen, which a
/// camera falling seconds behind defeats: 159 mm in a fresh-clone CI run.
/// Stamped when shown, beside four busy processes: 5-7 um RMS, 17 um at
/// worst on the slide and stick days, 21-33 um and 73 um on the loop's.)
fn marker_errors(session: &SessionDir, truth: &Path) -> (Vec<f64>, f64) {
    let t0_ns = TruthFile::read(truth).unwrap().t0_host_ns;
    let tracked = session::read_markers(&session.markers()).unwrap();
    let sim = session::read_markers(&truth.join("sim_markers.parquet")).unwrap();
    let n = sim.iter().map(|r| r.marker).max().unwrap() as usize + 1;
    let frames: Vec<&[session::MarkerRow]> = sim.chunks(n).collect();
    let times: Vec<f64> = frames.iter().map(|f| f[0].t_s).collect();
    let (mut sum, mut count, mut worst) = (vec![0.0; n], vec![0usize; n], 0.0f64);
    for r in &tracked {
        assert_eq!(r.flags, 0, "marker {} of frame {} flagged {}", r.marker, r.frame, r.flags);
        let m = r.marker as usize;
        let truth_at = |t: f64| {
            let k = lie::series::bracket_held(&times, t.clamp(times[0], *times.last().unwrap()));
            lie::series::blend(k, |i| lie::Vec3::new(frames[i][m].x_m, frames[i][m].y_m, frames[i][m].z_m))
        };
        let t = (r.t_host_ns.unwrap() - t0_ns) as f64 * 1e-9;
        let p = lie::Vec3::new(r.x_m, r.y_m, r.z_m);
        let e = (p - truth_at(t)).norm();
        sum[r.marker as usize] += e * e;
        count[r.marker as usize] += 1;
        worst = worst.max(e);
    }
    ((0..n).map(|i| (sum[i] / count[i] as f64).sqrt()).collect(), worst)
}

/// Validation with the tracker's accuracy (0.02 mm; measured against the
/// truth: 6-18 um RMS per marker) as the observer's marker noise.
fn validate_one(session: &SessionDir, scene_rel: &str, out: &Path) -> SessionSummary {
    let mut options = ValidateOptions::default();
    options.observer.sigma_m = 2e-5;
    let req = ValidateRequest {
        sessions: vec![session.clone()],
        rod_path: at(ROD),
        rod: rod(ROD),
        params: None,
        scene_path: at(scene_rel),
        scene: scene(scene_rel),
        loads: Default::default(),
        out: out.to_path_buf(),
        options,
    };
    validate(&req, &lab::Silent).unwrap().sessions.remove(0)
}

fn check_value(s: &SessionSummary, name_starts: &str) -> f64 {
    s.checks.iter().find(|c| c.name.starts_with(name_starts)).unwrap_or_else(|| panic!("no check {name_starts}: {:?}", s.checks)).value
}

fn worst_marker_residual_mm(s: &SessionSummary) -> f64 {
    s.markers.iter().map(|m| m.errors_mm.rms).fold(0.0, f64::max)
}

/// The chain on one live session: streams complete, markers against the
/// truth, validation's figures within the limits.
fn chain(scene_rel: &str, name: &str, seed: u64, experiment_s: f64) -> (tempfile::TempDir, SessionDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let live = live_with(dir.path(), name, ROD, scene_rel, |r| r.seed = seed);
    let (session, truth) = (live.made.session.clone(), live.made.truth_dir.clone());

    // Every stream complete: the checker is clean, no robot package lost
    // (consecutive controller timestamps), no FT 300 frame lost, every
    // video frame recorded.
    let check = lab::info::check(&session, &lab_devices::check_options()).unwrap();
    assert!(check.ok() && check.warnings.is_empty(), "{:?} {:?}", check.problems, check.warnings);
    let info = lab::info::streams(&session, &mut vec![]).unwrap();
    let stream = |n: &str| info.iter().find(|s| s.name == n).unwrap_or_else(|| panic!("no stream {n}: {info:?}")).clone();
    assert_eq!(stream("robot").device_gaps, Some(0), "{info:?}");
    let ft = live.recording.device("ft300").unwrap();
    assert!(ft.gaps == 0 && ft.missing_samples == 0 && ft.rejected == 0, "{ft:?}");
    let robot = live.recording.device("robot").unwrap();
    assert!(robot.gaps == 0 && robot.missing_samples == 0, "{robot:?}");
    // Camera: from its first recorded frame on, every frame of the video
    // (the file's positions advance by one frame each row), and the
    // recording started before the experiment (frames shown before the
    // recorder started are not recorded, as with a camera).
    let video_frames = ((1.0 + experiment_s + 0.5) * 30.0f64).ceil() as usize;
    let camera = session::Table::read_chunks(&session.stream("camera")).unwrap();
    let position_ms = camera.f64("device_ms").unwrap();
    let first = (position_ms[0] / (1e3 / 30.0)).round() as usize;
    assert!(position_ms.windows(2).all(|w| ((w[1] - w[0]) - 1e3 / 30.0).abs() < 1.0), "a frame was lost: {position_ms:?}");
    assert_eq!(first + position_ms.len(), video_frames);
    assert!(first < 30, "the recording started {first} frames into the 30-frame lead");
    // Both streams span the recording (the robot at the rig's 125 Hz, asked
    // of an e-Series, the FT 300 at 100 Hz), each at its full rate; the
    // FT 300 starts up to a few hundred ms later (quieted, identified and
    // started over Modbus at 19200 baud).
    let (robot, ft300) = (stream("robot"), stream("ft300"));
    assert!((robot.span_s - ft300.span_s).abs() < 0.3, "robot {} s, ft300 {} s", robot.span_s, ft300.span_s);
    assert!((robot.rate_hz / 125.0 - 1.0).abs() < 0.01 && (ft300.rate_hz / 100.0 - 1.0).abs() < 0.01, "{robot:?} {ft300:?}");

    // Tracked markers against the truth, on the session's clock.
    let (rms_m, worst_m) = marker_errors(&session, &truth);
    println!("{name}: tracked vs truth, RMS per marker [um]: {:?}, worst {:.3} mm", rms_m.iter().map(|e| (e * 1e6).round()).collect::<Vec<_>>(), worst_m * 1e3);
    assert!(rms_m.iter().all(|e| *e < 0.1e-3) && worst_m < 0.25e-3, "{rms_m:?} {worst_m}");

    // Validation at the truth's parameters (the rod file's).
    let s = validate_one(&session, scene_rel, &dir.path().join(format!("validate-{name}")));
    let strain = check_value(&s, "strain RMS error");
    let force = check_value(&s, "force RMS error");
    let slide = check_value(&s, "tip slide RMS error");
    let phases = check_value(&s, "stick/slide phase agreement");
    println!(
        "{name}: strain {strain:.2} % of range, force {force:.2} %, slide {slide:.3} mm, phases {phases:.1} %, marker residual <= {:.3} mm",
        worst_marker_residual_mm(&s)
    );
    // Validation's simulation stands in for the truth here (its markers agree
    // with the tracked ones to 0.01-0.02 mm): strain within 3 % of range.
    assert!(strain < 3.0 && force < 3.0 && slide < 1.0 && phases > 95.0, "{:?}", s.checks);
    (dir, session, truth)
}

#[test]
fn the_stick_test_recorded_live_matches_its_truth_and_a_wrong_rig_is_caught() {
    let scene_rel = "configs/scene/contact-paper-stick.toml";
    let (dir, session, truth) = chain(scene_rel, "stick", 3, 4.0);

    // The same recording with a wrong rig: the camera's board 5 mm off
    // along the rod and the robot's base yawed 2 degrees. Tracking again
    // with it puts the markers in the wrong place; validation shows it.
    let bad = SessionDir::new(dir.path().join("wrong-rig"));
    copy_dir(session.path(), bad.path());
    let mut meta = session.meta().unwrap().unwrap();
    meta.frames.robot_base.rpy_deg[2] += 2.0;
    meta.frames.board.position_m[0] += 0.005;
    meta.write(bad.path()).unwrap();
    let playback = truth.join("playback");
    let req = lab_devices::track::TrackRequest {
        markers: Some(playback.join("markers.toml")),
        ..lab_devices::track::TrackRequest::new(&bad.video("camera", "avi"), &playback.join("camera.toml"), &bad.markers())
    };
    lab_devices::track::track(&req, &lab::Silent).unwrap();
    let s = validate_one(&bad, scene_rel, &dir.path().join("validate-wrong"));
    let worst = worst_marker_residual_mm(&s);
    println!("wrong rig: marker residuals up to {worst:.2} mm; {:?}", s.warnings);
    assert!(worst > 2.0, "marker residuals {worst} mm");
    assert!(s.warnings.iter().any(|w| w.contains("rig's frames are likely off") && w.contains("rig calibrate")), "{:?}", s.warnings);
}

#[test]
fn the_slide_test_recorded_live_matches_its_truth() {
    chain("configs/scene/contact-paper-slide.toml", "slide", 4, 5.0);
}

/// E and rho identified from live holds days with the loads file `loads`,
/// each within 2 % of the days' truth; `what` names the case in the output.
fn identify_within_2_percent(dir: &Path, days: &[&lab::synth::Synthesised], loads: &Path, what: &str) -> lab::identify::Identification {
    let source =
        lab::identify::Source::Sessions { dirs: days.iter().map(|d| d.session.clone()).collect(), loads: lab::loads::Loads::read(Some(loads), 0).unwrap() };
    let id = lab::identify::identify(&lab::identify::IdentifyRequest::new(&at(ROD), rod(ROD), source, &dir.join("fit")), &lab::Silent).unwrap();
    let f = &id.study.fit;
    println!("live, {what}: E {:.4e} Pa, rho {:.1} kg/m3, {} holds; biases {:?}", f.e_pa.value, f.rho_kg_m3.value, id.experiments.len(), id.sensor_biases);
    let truth = &days[0].truth;
    for (name, got, want) in [("E", f.e_pa.value, truth.e_pa), ("rho", f.rho_kg_m3.value, truth.rho_kg_m3)] {
        assert!(((got - want) / want).abs() < 0.02, "{what}: {name}: {got} vs truth {want}");
    }
    id
}

/// The identification day (four gravity holds, FT 300 on the flange),
/// recorded live twice with the FT 300 not zeroed (a different bias each
/// day, as after each power-up), identified with configs/loads.toml as
/// shipped (bias fitted): E and rho within 2 % of the truth, each day's
/// fitted force bias within its interval, or the FT 300's 0.01 N
/// resolution, of the emulator's (measured over two runs: E and rho within
/// 0.1 %, biases within 0.009 N).
/// Long (2 x 15 s in real time and 1,000 rendered frames): `make demo`
/// runs the same; `cargo test -- --ignored` runs this.
#[test]
#[ignore]
fn an_identification_day_recorded_live_gives_e_and_rho() {
    const BIASES: [[f64; 6]; 2] = [[1.5, 0.8, -1.2, 0.0, 0.0, 0.05], [-1.0, 1.8, 0.6, 0.03, -0.02, 0.0]];
    let dir = tempfile::tempdir().unwrap();
    let scene_rel = "configs/scene/cable-arm-holds.toml";
    let days: Vec<_> = (0..2)
        .map(|k| {
            live_with(dir.path(), &format!("holds-{}", k + 1), ROD, scene_rel, |r| {
                r.seed = k as u64 + 1;
                r.ft_bias = BIASES[k];
            })
            .made
        })
        .collect();
    let id = identify_within_2_percent(dir.path(), &days.iter().collect::<Vec<_>>(), &at("configs/loads.toml"), "un-tared FT 300");
    assert_eq!(id.sensor_biases.len(), 2);
    for (b, truth) in id.sensor_biases.iter().zip(BIASES) {
        for k in 0..3 {
            assert!((b.force_n[k] - truth[k]).abs() <= b.force_ci95_n[k].max(0.01), "{b:?} vs {truth:?}");
        }
    }
}

/// The cable arm's identification day with load cells, recorded live: the
/// ASCII emulator plays the cells (a pty pair), no flange sensor; E and rho
/// from the cable-tension holds within 5 % of the truth (measured: -0.02 %,
/// -0.02 %). Long (14 s in real time): `make demo` runs it too.
#[test]
#[ignore]
fn a_load_cell_day_recorded_live_gives_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let arm = "configs/rod/pls-cable-arm.toml";
    let live = live_with(dir.path(), "pulls", arm, "configs/scene/cable-arm-tensions-planar.toml", |r| {
        r.material = rod::Material { e_pa: 2.5e5, rho_kg_m3: 1.3e3, ..r.material };
        r.flange_sensor = false;
    });
    let info = lab::info::streams(&live.made.session, &mut vec![]).unwrap();
    assert!(info.iter().any(|s| s.name == "load_cell" && s.rows > 1400) && !info.iter().any(|s| s.name == "ft300"), "{info:?}");
    let source = lab::identify::Source::Sessions {
        dirs: vec![live.made.session],
        loads: lab::loads::Loads::read(Some(&at("configs/loads-cable-cells.toml")), 4).unwrap(),
    };
    let id = lab::identify::identify(&lab::identify::IdentifyRequest::new(&at(arm), rod(arm), source, &dir.path().join("fit")), &lab::Silent).unwrap();
    assert!(id.sessions[0].still_intervals == 4 && id.sessions[0].used == 4, "{:?}", id.sessions);
    let f = &id.study.fit;
    for (name, got, truth) in [("E", f.e_pa.value, 2.5e5), ("rho", f.rho_kg_m3.value, 1.3e3)] {
        assert!((got / truth - 1.0).abs() < 0.05, "{name}: {got} vs {truth}");
    }
}

/// The identification day with an ATI Net F/T on the flange instead of the
/// FT 300 (RDT over UDP at 1 kHz, its calibration read over TCP), not
/// zeroed, recorded live: E and rho within 2 % of the truth, as with the
/// FT 300. Long (15 s in real time, 500 rendered frames): `cargo test --
/// --ignored`.
#[test]
#[ignore]
fn an_identification_day_with_a_net_ft_recorded_live_gives_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let day = live_with(dir.path(), "holds-netft", ROD, "configs/scene/cable-arm-holds.toml", |r| {
        r.seed = 7;
        r.netft = true;
        r.ft_bias = [0.8, -1.1, 0.4, 0.02, 0.0, -0.03];
    });
    let netft = day.recording.device("netft").unwrap();
    assert!(netft.gaps == 0 && netft.missing_samples == 0, "{netft:?}");
    let loads = dir.path().join("loads.toml");
    let text = std::fs::read_to_string(at("configs/loads.toml")).unwrap();
    assert!(text.contains("stream = \"ft300\""));
    std::fs::write(&loads, text.replace("stream = \"ft300\"", "stream = \"netft\"")).unwrap();
    identify_within_2_percent(dir.path(), &[&day.made], &loads, "Net F/T");
}

/// The identification day with the wrench read through the robot's
/// controller (`actual_TCP_force` on the RTDE stream, robot base frame,
/// as a wrist sensor behind a UR controller reports it), not zeroed: the
/// loads file names the robot's columns and `frame = "robot_base"`; the
/// wrench is turned into the flange frame sample by sample; E and rho
/// within 2 % of the truth, as with the FT 300. Long: `cargo test --
/// --ignored`.
#[test]
#[ignore]
fn an_identification_day_with_the_wrench_from_the_robot_gives_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let day = live_with(dir.path(), "holds-robot-wrench", ROD, "configs/scene/cable-arm-holds.toml", |r| {
        r.seed = 8;
        r.wrench_from_robot = true;
        r.ft_bias = [-0.6, 0.9, 1.1, 0.0, 0.03, 0.01];
    });
    assert!(!day.made.session.has_stream("ft300"), "no sensor of its own");
    let loads = dir.path().join("loads.toml");
    let text = std::fs::read_to_string(at("configs/loads.toml")).unwrap();
    let columns = "columns = [\"fx_n\", \"fy_n\", \"fz_n\", \"mx_nm\", \"my_nm\", \"mz_nm\"]";
    assert!(text.contains("stream = \"ft300\"") && text.contains(columns));
    let robot_columns: Vec<String> = (0..6).map(|k| format!("\"actual_TCP_force_{k}\"")).collect();
    let text =
        text.replace("stream = \"ft300\"", "stream = \"robot\"\nframe = \"robot_base\"").replace(columns, &format!("columns = [{}]", robot_columns.join(", ")));
    std::fs::write(&loads, text).unwrap();
    let id = identify_within_2_percent(dir.path(), &[&day.made], &loads, "wrench from the robot");
    // The fitted bias is the sensor-frame one the controller's wrench carried.
    let b = &id.sensor_biases[0];
    assert!((b.force_n.x + 0.6).abs() < 0.02 && (b.force_n.y - 0.9).abs() < 0.02 && (b.force_n.z - 1.1).abs() < 0.02, "{b:?}");
}

/// Friction and damping from motion, through the live recording path: the
/// rod rung in the air and dragged twice lying on a table whose friction
/// is 0.8 (the scene says 0.48), its damping ratio 0.1 (the rod file says
/// 0.05), recorded through the emulators and the camera, tracked, then
/// fitted from the rod file's values: mu within 3 %, the damping ratio
/// within 10 %, both truths inside their intervals; the camera's delay
/// behind the robot's clock fitted per session, within a frame period of
/// zero.
///
/// Two drags, as a lab would: mu comes from the flange force's pull, and
/// one drag's 0.1 N of sensor noise leaves it 1-2.5 % off (one drag each
/// of five seeds: 0.786, 0.802, 0.802, 0.824, 0.804). With the camera's
/// delay held at 0 the markers decided instead: the virtual camera
/// stamped a frame when it was decoded, 0.5-1.5 ms late, which fitted mu
/// 2 % high or, stamped on time, 2.5 % low (the robot's stamps 0.3 ms
/// late), 0.751-0.826 over runs.
#[test]
fn friction_and_damping_recorded_live_are_identified() {
    let dir = tempfile::tempdir().unwrap();
    let (mu, zeta) = (0.8, 0.1);
    let sessions: Vec<SessionDir> =
        ["configs/scene/contact-paper-ring.toml", "configs/scene/contact-paper-lying-drag.toml", "configs/scene/contact-paper-lying-drag.toml"]
            .iter()
            .enumerate()
            .map(|(k, scene_rel)| {
                live_with(dir.path(), &format!("day-{k}"), ROD, scene_rel, |r| {
                    r.scene.table.as_mut().unwrap().mu = mu;
                    r.rod.damping = Some(rod::Damping::Ratio(zeta));
                    r.seed = 40 + k as u64;
                })
                .made
                .session
            })
            .collect();
    let drag = "configs/scene/contact-paper-lying-drag.toml";
    let params = lab::params::Params::of_rod_file(&rod(ROD), &at(ROD));
    let req = lab::dynamic::DynamicRequest::new(sessions, &at(ROD), rod(ROD), params, &at(drag), scene(drag), &dir.path().join("fit"));
    let fit = lab::dynamic::identify_dynamic(&req, &lab::Silent).unwrap();
    let o = &fit.out;
    println!("live (truth mu {mu}, damping ratio {zeta}): {}", o.summary());
    assert!((o.mu / mu - 1.0).abs() < 0.03 && o.mu_ci95[0] <= mu && mu <= o.mu_ci95[1], "{o:?}");
    assert!((o.damping_ratio / zeta - 1.0).abs() < 0.1 && o.damping_ratio_ci95[0] <= zeta && zeta <= o.damping_ratio_ci95[1], "{o:?}");
    assert_eq!(o.marker_delay_s.len(), 3);
    // The camera's frames are stamped when its file shows them, the
    // robot's samples on its clock at the least arrival delay (a fraction
    // of a ms late), so the camera comes out slightly ahead: -0.25 ms on
    // the drags, -1.9 ms on the ring in the air (its delay least
    // determined). Within a frame period (30 frames/s) of zero.
    assert!(o.marker_delay_s.iter().all(|d| d.abs() < 1.0 / 30.0), "{:?}", o.marker_delay_s);
}

/// A cord hanging as a loop between two robots, recorded live: the base's
/// robot and a second one carrying the tip's clamp through three holds
/// (two RTDE emulators), the camera's rendered video recorded and tracked.
/// Both robots are recorded whole; the holds, found where both are still,
/// give the weighed cord's E within 2 %; the observer holds the tip frame
/// by frame through the tracked markers, and validation passes.
#[test]
fn a_loop_held_by_two_robots_recorded_live_is_identified_observed_and_validated() {
    const CORD: &str = "configs/rod/clamped-clamped-cable.toml";
    const HOLDS: &str = "configs/scene/cable-loop-holds.toml";
    // Phase times in its output (shown on success too, .config/nextest.toml).
    // Its validation took 114-164 s in three of about fifteen fresh-clone
    // runs (4.8-31.5 s in the rest): the observer's energy scale was chosen
    // from the straight rod, not the held loop, and came out a thousand
    // times stiffer when a frame stamped late let one more solve succeed.
    // Chosen on the held shape, it is 2-3 s.
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let live = live_with(dir.path(), "loop", CORD, HOLDS, |r| {
        r.tip_robot = Some("robot2".into());
        r.flange_sensor = false;
        // Clamps at least 0.3 m apart: the tracker's first frame numbers
        // the markers as a chain from the base, nearest neighbour next,
        // which a loop whose ends hang closer than its markers' spacing
        // (0.25 m) would cross.
        let up = -std::f64::consts::FRAC_PI_2;
        let at = |t: f64, x: f64, z: f64| [t, x, 0.0, z, 0.0, up, 0.0];
        let waypoints = vec![at(0.0, 0.3, 0.0), at(3.0, 0.3, 0.0), at(4.0, 0.45, 0.0), at(7.0, 0.45, 0.0), at(8.0, 0.6, -0.1), at(11.0, 0.6, -0.1)];
        r.scene.tip = Some(sim::scene::TipSpec { waypoints, rotation_given: true });
    });
    let session = live.made.session.clone();
    println!("loop: recorded and tracked at {:.1} s", started.elapsed().as_secs_f64());
    for name in ["robot", "robot2"] {
        let d = live.recording.device(name).unwrap();
        assert!(d.gaps == 0 && d.missing_samples == 0 && d.rows > 1000, "{d:?}");
    }
    let (rms_m, worst_m) = marker_errors(&session, &live.made.truth_dir);
    println!("loop: tracked vs truth, RMS per marker [um]: {:?}, worst {:.3} mm", rms_m.iter().map(|e| (e * 1e6).round()).collect::<Vec<_>>(), worst_m * 1e3);
    assert!(worst_m < 0.3e-3, "{rms_m:?} {worst_m}");

    let loads_path = dir.path().join("loads.toml");
    std::fs::write(&loads_path, "[tip_hold]\nrobot = \"robot2\"\n").unwrap();
    let loads = lab::loads::Loads::read(Some(&loads_path), 0).unwrap();
    let mut cord = rod(CORD);
    let mass_kg = cord.cross_section.body.rho_kg_m3 * std::f64::consts::PI * 0.005_f64.powi(2) * cord.length_m;
    cord.weighed_mass_kg = Some((mass_kg, 0.01 * mass_kg));
    let source = lab::identify::Source::Sessions { dirs: vec![session.clone()], loads: loads.clone() };
    let req =
        lab::identify::IdentifyRequest { tie_g_poisson: Some(0.45), ..lab::identify::IdentifyRequest::new(&at(CORD), cord, source, &dir.path().join("fit")) };
    let id = lab::identify::identify(&req, &lab::Silent).unwrap();
    let e_pa = id.study.fit.e_pa.value;
    let truth_e_pa = rod(CORD).cross_section.body.e_pa;
    println!("loop live: {} holds, E {e_pa:.4e} Pa for {truth_e_pa:.4e}, identified at {:.1} s", id.experiments.len(), started.elapsed().as_secs_f64());
    assert_eq!(id.experiments.len(), 3);
    assert!((e_pa / truth_e_pa - 1.0).abs() < 0.02, "E {e_pa}");

    let mut options = ValidateOptions::default();
    options.observer.sigma_m = 2e-5;
    let v = validate(
        &ValidateRequest {
            sessions: vec![session.clone()],
            rod_path: at(CORD),
            rod: rod(CORD),
            params: None,
            scene_path: at(HOLDS),
            scene: scene(HOLDS),
            loads,
            out: dir.path().join("validate"),
            options,
        },
        &lab::Silent,
    )
    .unwrap();
    let s = &v.sessions[0];
    println!(
        "loop live: validated {} frames at {:.1} s, strain RMS {:.2} % of range, observer failed on {} frames; {:?}; warnings {:?}",
        s.frames_compared,
        started.elapsed().as_secs_f64(),
        s.strain_headline_rms_pct,
        s.observer_failed_frames,
        s.checks,
        s.warnings
    );
    // A live recording on a loaded machine: one frame in a CI run (of 374)
    // failed to observe while every check passed; later CI runs on a
    // busier pass 5 and 7 of 375, a local run beside two busy loops 2. The
    // virtual lab then stamped a camera frame when its decode finished
    // (now: when its file shows it) and a robot sample when it arrives, so
    // under load a frame could lag the clamps' poses during motion; 2 % of
    // frames is allowed, and the warning says which and why.
    let allowed = s.frames_compared.div_ceil(50);
    assert!(
        s.checks.iter().all(|c| c.pass) && s.observer_failed_frames <= allowed,
        "{} failed frames; {:?}; {:?}",
        s.observer_failed_frames,
        s.checks,
        s.warnings
    );
}

/// #46: the cable arm's load-cell day with its side cables pulled as well
/// (the arm leaves the plane one camera sees: `--live` with one camera
/// refuses it), recorded live through two rendered cameras 30 degrees apart
/// and tracked in 3-D. E and rho within 1 % of the truth; each side cable's
/// hold, left out of the fit, lies inside the 95 % prediction band of the
/// fit on the others. (Measured: E -0.05 %, rho -0.06 %; the side holds
/// missed by at most 0.05 mm, their bands 0.13 mm; 43 s at 15 frames/s.)
/// One marker is hidden from the right camera all day: it is kept as the
/// left camera's ray, and identification, the observer and validation use
/// it as a ray.
#[test]
fn a_two_camera_day_recorded_live_sees_the_side_cables_one_camera_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let (arm, scene_rel) = ("configs/rod/pls-cable-arm.toml", "configs/scene/cable-arm-tensions.toml");
    let edit = |r: &mut SynthRequest| {
        r.material = rod::Material { e_pa: 2.5e5, rho_kg_m3: 1.3e3, ..r.material };
        r.flange_sensor = false;
    };
    let mut one = SynthRequest::new(&at(scene_rel), scene(scene_rel), &at(arm), rod(arm), &dir.path().join("one-camera"));
    edit(&mut one);
    let Err(e) = lab_devices::live::record_live(&one, 30.0, &lab::Silent) else { panic!("one camera cannot see the side cables") };
    assert!(e.to_string().contains("leave their best plane") && e.to_string().contains("--cameras 2"), "{e}");

    // 15 frames/s: holds of 2.5 s need no more, and each camera's frames are rendered.
    const HIDDEN: usize = 2;
    let live = live_at_fps(dir.path(), "pulls-3d", (arm, scene_rel), 15.0, |r| {
        edit(r);
        r.cameras = 2;
        r.hidden_markers = vec![(1, HIDDEN)];
    });
    let markers = live.made.session.markers();
    let (views, names) = session::read_marker_views(&markers).unwrap().expect("a camera set's columns");
    assert_eq!(names, ["left", "right"]);
    let rows = session::read_markers(&markers).unwrap();
    let (hidden, seen): (Vec<_>, Vec<_>) = rows.iter().zip(&views).partition(|(r, _)| r.marker as usize == HIDDEN);
    assert!(seen.iter().filter(|(_, v)| v.cameras == 0b11).count() > seen.len() * 9 / 10, "most markers seen by both cameras");
    let rays = hidden.iter().filter(|(r, v)| r.flags == session::flags::RAY && v.cameras == 0b01).count();
    assert!(rays > hidden.len() * 9 / 10, "the hidden marker is the left camera's ray: {rays} of {}", hidden.len());
    let source = lab::identify::Source::Sessions {
        dirs: vec![live.made.session.clone()],
        loads: lab::loads::Loads::read(Some(&at("configs/loads-cable-cells.toml")), 4).unwrap(),
    };
    let id = lab::identify::identify(&lab::identify::IdentifyRequest::new(&at(arm), rod(arm), source, &dir.path().join("fit")), &lab::Silent).unwrap();
    let f = &id.study.fit;
    println!("two cameras, live: E {:.4e} Pa, rho {:.1} kg/m3 from {} holds", f.e_pa.value, f.rho_kg_m3.value, id.experiments.len());
    assert!(id.experiments.iter().all(|e| e.measurements[HIDDEN].ray.is_some()), "each hold measures the hidden marker as a ray");
    for (name, got, truth) in [("E", f.e_pa.value, 2.5e5), ("rho", f.rho_kg_m3.value, 1.3e3)] {
        assert!((got / truth - 1.0).abs() < 0.01, "{name}: {got} vs {truth}");
    }
    // The side cables (cable1 to -y, cable3 to +y): their holds move the tip
    // centimetres out of the x-z plane.
    let side: Vec<usize> = (0..id.experiments.len()).filter(|&k| id.experiments[k].tensions_n[0] > 0.3 || id.experiments[k].tensions_n[2] > 0.3).collect();
    assert_eq!(side.len(), 2, "{:?}", id.experiments.iter().map(|e| &e.tensions_n).collect::<Vec<_>>());
    for k in side {
        let held_out = &id.experiments[k];
        let tip = held_out.measurements.iter().max_by(|a, b| a.arc_m.total_cmp(&b.arc_m)).unwrap();
        assert!(tip.pos_m.y.abs() > 0.01, "{}: tip at y = {} m", held_out.id, tip.pos_m.y);
        let rest: Vec<_> = id.experiments.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, e)| e.clone()).collect();
        let v = &f.values;
        let opts = identify::FitOptions { starts: vec![[v.e_pa, v.g_pa, v.rho_kg_m3]], ..identify::FitOptions::default() };
        let without = identify::fit(&id.rod, &rest, &opts, |_| {}).unwrap();
        let pred = identify::predict_with_band(&id.rod, held_out, &without.values, &without.uncertainty()).unwrap();
        for (m, (p, w)) in held_out.measurements.iter().zip(pred.points_m.iter().zip(&pred.half_width_m)) {
            let miss = m.miss(p).abs();
            println!("{} at {:.3} m: missed by {:.3?} mm, band {:.3?} mm", held_out.id, m.arc_m, miss * 1e3, w * 1e3);
            assert!((0..3).all(|i| miss[i] <= w[i]), "{} at {} m: {miss:?} outside {w:?}", held_out.id, m.arc_m);
        }
    }
    // Validation observes every frame with the hidden marker as its ray and
    // compares it, across the ray, with the simulated marker.
    let mut options = ValidateOptions::default();
    options.observer.sigma_m = 2e-5;
    let loads = lab::loads::Loads::read(Some(&at("configs/loads-cable-cells.toml")), 4).unwrap();
    let req = ValidateRequest {
        sessions: vec![live.made.session.clone()],
        rod_path: at(arm),
        rod: {
            // The day's material (the truth's), as the fit found it.
            let mut r = rod(arm);
            r.cross_section.body = rod::Material { e_pa: 2.5e5, rho_kg_m3: 1.3e3, ..r.cross_section.body };
            r
        },
        params: None,
        scene_path: at(scene_rel),
        scene: scene(scene_rel),
        loads,
        out: dir.path().join("validate"),
        options,
    };
    let v = validate(&req, &lab::Silent).unwrap();
    let s = &v.sessions[0];
    println!(
        "two cameras, validated {} frames, observer failed on {}; markers RMS {:?} mm; {:?}",
        s.frames_compared,
        s.observer_failed_frames,
        s.markers.iter().map(|m| m.errors_mm.rms).collect::<Vec<_>>(),
        s.checks
    );
    assert_eq!(s.observer_failed_frames, 0);
    assert!(s.markers[HIDDEN].errors_mm.rms < 0.5, "the ray misses the simulated marker by {} mm RMS", s.markers[HIDDEN].errors_mm.rms);
}
