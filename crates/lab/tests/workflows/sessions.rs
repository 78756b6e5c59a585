//! Sessions made from the simulator (the truth sampled as the lab's devices
//! record it) -> identification from their static holds: holds found, E
//! and rho recovered with a flange force sensor or load cells, only E/rho
//! without; bad sessions are input errors naming the problem.

use crate::common;
use common::*;
use lab::identify::{identify, Identification, IdentifyRequest, Source};
use lab::loads::Loads;
use lab::SessionDir;
use std::path::Path;

const ARM: &str = "configs/rod/pls-cable-arm.toml";
const TRUTH_E_PA: f64 = 2.5e5;
const TRUTH_RHO_KG_M3: f64 = 1.3e3;
const BIAS: [f64; 6] = [0.5, -0.3, 1.2, 0.01, 0.0, -0.02];

/// A synthetic session of the cable arm at the truth's E and rho.
fn arm_session(dir: &Path, name: &str, scene: &str, edit: impl FnOnce(&mut lab::synth::SynthRequest)) -> SessionDir {
    synth(dir, name, ARM, scene, |r| {
        r.material = rod::Material { e_pa: TRUTH_E_PA, rho_kg_m3: TRUTH_RHO_KG_M3, ..r.material };
        edit(r)
    })
}

/// A synthetic identification day (four gravity holds) with seed `seed`.
fn holds_day(dir: &Path, name: &str, seed: u64) -> SessionDir {
    let s = arm_session(dir, name, "configs/scene/cable-arm-holds.toml", |r| {
        r.ft_bias = BIAS;
        r.seed = seed;
    });
    assert!(s.meta_path().is_file() && s.markers().is_file() && s.has_stream("robot") && s.has_stream("ft300"));
    // The truth lies beside the session, never inside it.
    assert!(dir.join(format!("{name}-truth/truth.toml")).is_file());
    assert!(!s.path().join("truth.toml").exists() && !s.path().join("sim.parquet").exists());
    s
}

/// configs/loads.toml with the sensor's bias (its tare) filled in.
fn loads_with_bias(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(at("configs/loads.toml")).unwrap();
    let text = text.replace("bias = \"fit\"", &format!("bias = {BIAS:?}"));
    assert!(text.contains("bias = [0.5"), "configs/loads.toml changed: update this test");
    let p = dir.join("loads.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn request(sessions: &[&SessionDir], loads: Option<&Path>, out: &Path) -> lab::Result<IdentifyRequest> {
    let source = Source::Sessions { dirs: sessions.iter().map(|s| (*s).clone()).collect(), loads: Loads::read(loads, 4)? };
    Ok(IdentifyRequest::new(&at(ARM), rod(ARM), source, out))
}

fn fit(sessions: &[&SessionDir], loads: Option<&Path>, out: &Path, loo: bool) -> Identification {
    identify(&IdentifyRequest { loo, ..request(sessions, loads, out).unwrap() }, &lab::Silent).unwrap()
}

/// E and rho within 3 % of the truth, and the truth inside their 95 % CIs.
fn assert_truth_recovered(id: &Identification) {
    let f = &id.study.fit;
    for (name, e, truth) in [("E", f.e_pa, TRUTH_E_PA), ("rho", f.rho_kg_m3, TRUTH_RHO_KG_M3)] {
        assert!((e.value / truth - 1.0).abs() < 0.03, "{name} = {}, truth {truth}", e.value);
        assert!(e.ci95_low <= truth && truth <= e.ci95_high, "{name}: truth {truth} outside the 95 % CI [{}, {}]", e.ci95_low, e.ci95_high);
    }
}

#[test]
fn holds_with_a_flange_sensor_fix_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let (s1, s2) = (holds_day(dir.path(), "day1", 1), holds_day(dir.path(), "day2", 2));
    let loads = loads_with_bias(dir.path());
    let out = dir.path().join("fit");
    let id = fit(&[&s1, &s2], Some(&loads), &out, true);
    // Four holds per session, all used; E and rho both fitted. The one
    // warning: E and rho move together (the weight fixes rho, the sag E/rho),
    // so their intervals are correlated.
    assert!(id.sessions.iter().all(|s| s.still_intervals == 4 && s.used == 4), "{:?}", id.sessions);
    let w = &id.study.fit.warnings;
    assert!(w.len() == 1 && w[0].contains("ln_e and ln_rho are correlated"), "{w:?}");
    assert_eq!(id.experiments.len(), 8);
    assert_truth_recovered(&id);
    // The report lists the holds and the measured against predicted wrench, and renders.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("used: day1/hold").count(), 4, "holds table");
    assert!(html.contains("day2/hold4") && html.contains("flange"), "holds and wrench tables");
    let check = chromium_check(&out.join("index.html"));
    assert!(check.ends_with("errors=0"), "{check}");

    // No loads file: the session's FT 300 is used as validation uses it
    // (default columns, bias fitted), not silently left out.
    let id = fit(&[&s1], None, &dir.path().join("fit-default-loads"), false);
    assert!(id.study.fit.layout.fit_rho && id.sensor_biases.len() == 1, "{:?}", id.file.warnings);
    assert!((id.study.fit.rho_kg_m3.value / TRUTH_RHO_KG_M3 - 1.0).abs() < 0.03, "{}", id.study.fit.rho_kg_m3.value);

    // A loads file without the sensor: only E/rho, the warning says so,
    // and the unused stream is named with the way to use it.
    let no_sensor = dir.path().join("no-sensor.toml");
    std::fs::write(&no_sensor, "[holds]\nmin_duration_s = 1.0\n").unwrap();
    let id = fit(&[&s1], Some(&no_sensor), &dir.path().join("fit-no-sensor"), false);
    assert!(id.study.fit.warnings.iter().any(|w| w.contains("only E/rho and G/rho are identifiable")), "{:?}", id.study.fit.warnings);
    assert!(
        id.file.warnings.iter().any(|w| w.contains("stream 'ft300' is not used") && w.contains("[flange_sensor] stream = \"ft300\"")),
        "{:?}",
        id.file.warnings
    );
    let ratio = id.study.fit.e_pa.value / id.study.fit.rho_kg_m3.value;
    assert!((ratio / (TRUTH_E_PA / TRUTH_RHO_KG_M3) - 1.0).abs() < 0.03, "E/rho = {ratio}");
}

#[test]
fn bad_sessions_are_input_errors_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let good = holds_day(dir.path(), "good", 3);
    let out = dir.path().join("o");
    let run = |s: &SessionDir, loads: Option<&Path>| {
        request(&[s], loads, &out).and_then(|r| identify(&IdentifyRequest { loo: false, ..r }, &lab::Silent).map(|_| ()))
    };

    let no_markers = SessionDir::new(dir.path().join("no-markers"));
    copy_dir(good.path(), no_markers.path());
    std::fs::remove_file(no_markers.markers()).unwrap();
    expect_input_error(run(&no_markers, None), &["no-markers", "markers.parquet"]);

    let no_robot = SessionDir::new(dir.path().join("no-robot"));
    copy_dir(good.path(), no_robot.path());
    std::fs::remove_dir_all(no_robot.stream("robot")).unwrap();
    expect_input_error(run(&no_robot, None), &["no-robot", "robot stream"]);

    // One session given twice would count its holds twice.
    let twice = request(&[&good, &good], None, &out).and_then(|r| identify(&IdentifyRequest { loo: false, ..r }, &lab::Silent).map(|_| ()));
    expect_input_error(twice, &["--sessions", "again", "counts once"]);

    let loads = dir.path().join("loads.toml");
    std::fs::write(&loads, "[tip_force]\nstream = \"load_cell\"\ncolumn = \"force_n\"\ndirection = [0.0, 0.0, -1.0]\n").unwrap();
    expect_input_error(run(&good, Some(&loads)), &["loads.toml", "tip_force", "load_cell", "ft300, robot"]);
    std::fs::write(&loads, "[holds]\nwindow_s = -1\n").unwrap();
    expect_input_error(run(&good, Some(&loads)), &["loads.toml", "holds.window_s"]);

    // Parameters identified for one rod, used with another.
    let fitted = dir.path().join("fit");
    fit(&[&good], None, &fitted, false);
    let other = "configs/rod/contact-paper-steel-core.toml";
    expect_input_error(
        lab::params::Params::read(&fitted.join("identified.toml"), &rod(other), &at(other)),
        &["identified.toml", "contact-paper-steel-core.toml"],
    );
}

/// Cable-tension holds recorded by load cells (no flange sensor): the
/// known tensions fix the scale, E and rho both come out. The load cells'
/// noise is an error in the inputs, carried into the measured points'
/// sigma (identify's errors-in-variables weights): over six noise seeds
/// every estimate is within 0.5 % of the truth and at least four of six
/// 95 % intervals hold it (measured: 4 of 6 for E and for rho; without the
/// input noise in the weights, 3 of 6 and 2 of 6).
#[test]
fn load_cell_holds_without_a_flange_sensor_fix_e_and_rho() {
    let dir = tempfile::tempdir().unwrap();
    let loads = dir.path().join("loads.toml");
    let cables: String = (1..=4).map(|k| format!("[[cable]]\nstream = \"load_cell\"\ncolumn = \"cable{k}_n\"\n\n")).collect();
    std::fs::write(&loads, cables).unwrap();
    let mut inside = [0; 2];
    for seed in 1..=6 {
        let s = arm_session(dir.path(), &format!("pulls-{seed}"), "configs/scene/cable-arm-tensions.toml", |r| {
            r.flange_sensor = false;
            r.seed = seed;
        });
        assert!(s.has_stream("load_cell") && !s.has_stream("ft300"));
        let id = fit(&[&s], Some(&loads), &dir.path().join(format!("fit-{seed}")), seed == 1);
        assert!(id.sessions[0].still_intervals == 5 && id.sessions[0].used == 5, "{:?}", id.sessions);
        assert!(!id.study.fit.warnings.iter().any(|w| w.contains("E/rho")), "{:?}", id.study.fit.warnings);
        let f = &id.study.fit;
        for (k, (e, truth)) in [(f.e_pa, TRUTH_E_PA), (f.rho_kg_m3, TRUTH_RHO_KG_M3)].into_iter().enumerate() {
            assert!((e.value / truth - 1.0).abs() < 5e-3, "seed {seed}: {} vs truth {truth}", e.value);
            inside[k] += (e.ci95_low <= truth && truth <= e.ci95_high) as usize;
        }
    }
    assert!(inside.iter().all(|n| *n >= 4), "intervals holding the truth (E, rho) of 6: {inside:?}");
}

/// An FT 300 not zeroed after power-up (1.5, 0.8, -1.2 N and 0.05 N m one
/// day, -1.0, 1.8, 0.6 N and 0.03, -0.02 N m the next), identified with
/// configs/loads.toml as shipped (bias = "fit"), three pairs of days (seeds):
/// the bias is fitted per session and E and rho come out within 2 % of the
/// truth every time, the fitted force biases inside their 95 % intervals
/// (at most 2 of 18 components outside, none beyond 3 intervals). With
/// the loads file saying the sensor was zeroed (bias = "none"): a failed
/// computation naming the sensor's bias, nothing fitted as if all were well.
#[test]
fn an_untared_force_sensor_is_fitted_or_refused_never_read_as_weight() {
    const UNTARED: [[f64; 6]; 2] = [[1.5, 0.8, -1.2, 0.0, 0.0, 0.05], [-1.0, 1.8, 0.6, 0.03, -0.02, 0.0]];
    let dir = tempfile::tempdir().unwrap();
    let (mut outside, mut compared) = (0, 0);
    let mut first_pair = vec![];
    for pair in 0..3u64 {
        let days: Vec<SessionDir> = (0..2)
            .map(|k| {
                arm_session(dir.path(), &format!("untared{pair}-{k}"), "configs/scene/cable-arm-holds.toml", |r| {
                    r.ft_bias = UNTARED[k];
                    r.seed = 11 + 2 * pair + k as u64;
                })
            })
            .collect();
        let refs: Vec<&SessionDir> = days.iter().collect();
        let id = fit(&refs, Some(&at("configs/loads.toml")), &dir.path().join(format!("fit{pair}")), false);
        let f = &id.study.fit;
        println!("untared sensor, pair {pair}, bias fitted: E {:.4e} Pa, rho {:.1} kg/m3", f.e_pa.value, f.rho_kg_m3.value);
        for (name, e, truth) in [("E", f.e_pa.value, TRUTH_E_PA), ("rho", f.rho_kg_m3.value, TRUTH_RHO_KG_M3)] {
            assert!((e / truth - 1.0).abs() < 0.02, "pair {pair}: {name} = {e}, truth {truth}");
        }
        assert_eq!(id.sensor_biases.len(), 2);
        assert_eq!(id.file.sensor_bias.len(), 2);
        for (b, truth) in id.sensor_biases.iter().zip(UNTARED) {
            for k in 0..3 {
                let miss = (b.force_n[k] - truth[k]).abs();
                assert!(miss <= 3.0 * b.force_ci95_n[k], "{b:?} vs {truth:?}");
                outside += (miss > b.force_ci95_n[k]) as usize;
                compared += 1;
            }
            assert!((b.moment_nm.z - truth[5]).abs() < 5e-3, "{b:?}");
        }
        if pair == 0 {
            first_pair = days;
        }
    }
    assert!(outside <= 2, "{outside} of {compared} force bias components outside their 95 % interval");
    let days: Vec<&SessionDir> = first_pair.iter().collect();
    // The sensor said to be zeroed: refused, naming the bias.
    let zeroed = dir.path().join("zeroed.toml");
    std::fs::write(&zeroed, std::fs::read_to_string(at("configs/loads.toml")).unwrap().replace("bias = \"fit\"", "bias = \"none\"")).unwrap();
    let r = request(&days, Some(&zeroed), &dir.path().join("fit-zeroed")).unwrap();
    let Err(e) = identify(&IdentifyRequest { loo: false, ..r }, &lab::Silent) else { panic!("an untared sensor was read as weight") };
    let text = e.to_string();
    assert_eq!(e.kind(), fault::Kind::Computation, "{text}");
    assert!(text.contains("the flange sensor reads a bias of [1.5") && text.contains("bias = \"fit\""), "{text}");
}

/// The same un-tared sensor, read before the rod is mounted (the first
/// 2.4 s of the day) and the loads file saying `bias = "tare"` over that
/// window: the tare is subtracted, nothing is fitted, E and rho within 2 %.
/// A window in which the rod already hangs on the sensor is refused (the
/// weight would be subtracted as bias), and so is one without samples.
#[test]
fn a_tare_recorded_before_mounting_is_subtracted_and_a_wrong_window_refused() {
    const UNTARED: [f64; 6] = [1.5, 0.8, -1.2, 0.0, 0.0, 0.05];
    let dir = tempfile::tempdir().unwrap();
    let day = arm_session(dir.path(), "tared", "configs/scene/cable-arm-holds.toml", |r| {
        r.ft_bias = UNTARED;
        r.mounted_at_s = 2.4;
        r.seed = 21;
    });
    let loads = |name: &str, window: &str| {
        let text = std::fs::read_to_string(at("configs/loads.toml")).unwrap().replace("bias = \"fit\"", &format!("bias = \"tare\"\ntare_window_s = {window}"));
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let id = fit(&[&day], Some(&loads("tare.toml", "[0.2, 2.2]")), &dir.path().join("fit"), false);
    let f = &id.study.fit;
    println!("tared sensor: E {:.4e} Pa, rho {:.1} kg/m3, holds {:?}", f.e_pa.value, f.rho_kg_m3.value, id.sessions);
    for (name, e, truth) in [("E", f.e_pa.value, TRUTH_E_PA), ("rho", f.rho_kg_m3.value, TRUTH_RHO_KG_M3)] {
        assert!((e / truth - 1.0).abs() < 0.02, "{name} = {e}, truth {truth}");
    }
    assert!(id.sensor_biases.is_empty(), "a tared sensor's bias is not fitted: {:?}", id.sensor_biases);
    assert_eq!(id.sessions[0].used, 3, "the hold before mounting has no markers: {:?}", id.sessions);

    // The window while the rod hangs on the sensor (the 30 deg hold).
    let r = request(&[&day], Some(&loads("late.toml", "[4.2, 6.3]")), &dir.path().join("fit-late")).unwrap();
    let Err(e) = identify(&IdentifyRequest { loo: false, ..r }, &lab::Silent) else { panic!("the rod's weight was taken as the tare") };
    assert_eq!(e.kind(), fault::Kind::Computation, "{e}");
    assert!(e.to_string().contains("the flange sensor reads a bias of"), "{e}");

    let r = request(&[&day], Some(&loads("empty.toml", "[100.0, 101.0]")), &dir.path().join("fit-empty")).unwrap();
    let Err(e) = identify(&IdentifyRequest { loo: false, ..r }, &lab::Silent) else { panic!("an empty tare window was used") };
    assert_eq!(e.kind(), fault::Kind::Input, "{e}");
    assert!(e.to_string().contains("tare_window_s = [100, 101]: 0 samples"), "{e}");

    // "tare" without a window, a window without "tare": the loads file is refused.
    for (text, needle) in [
        ("[flange_sensor]\nstream = \"ft300\"\nbias = \"tare\"\n", "needs a window"),
        ("[flange_sensor]\nstream = \"ft300\"\ntare_window_s = [0.0, 1.0]\n", "only with bias = \"tare\""),
    ] {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, text).unwrap();
        let e = Loads::read(Some(&p), 4).unwrap_err();
        assert!(e.to_string().contains("flange_sensor.tare_window_s") && e.to_string().contains(needle), "{e}");
    }
}

/// Coverage of the intervals with an un-tared sensor: twenty synthetic days,
/// each with its own bias (up to 2 N and 0.05 N m) and noise seed, fitted
/// with configs/loads.toml as shipped (bias = "fit"): the bias is fitted
/// with E and rho, so their 95 % intervals carry its uncertainty and hold
/// the truth on 17 to 20 of the days. (Fitted first and then held as
/// known, the bias left the intervals too narrow: +-0.7 % around E and
/// rho 1.7 % off.)
#[test]
fn intervals_with_a_fitted_sensor_bias_hold_the_truth_on_17_of_20_days() {
    let dir = tempfile::tempdir().unwrap();
    let mut inside = [0usize; 2];
    let days = 20u64;
    for day in 0..days {
        // Biases spread over the day numbers, reproducibly.
        let k = day as f64;
        let bias = [
            2.0 * (1.3 * k + 0.4).sin(),
            2.0 * (0.7 * k + 1.1).cos(),
            1.5 * (2.1 * k).sin(),
            0.05 * (0.9 * k).cos(),
            0.05 * (1.7 * k + 0.3).sin(),
            0.05 * (1.1 * k).sin(),
        ];
        let s = arm_session(dir.path(), &format!("day{day}"), "configs/scene/cable-arm-holds.toml", |r| {
            r.ft_bias = bias;
            r.seed = 100 + day;
        });
        let id = fit(&[&s], Some(&at("configs/loads.toml")), &dir.path().join(format!("fit{day}")), false);
        let f = &id.study.fit;
        assert!(f.layout.fit_rho && id.sensor_biases.len() == 1, "day {day}: {:?}", f.warnings);
        for (k, (e, truth)) in [(f.e_pa, TRUTH_E_PA), (f.rho_kg_m3, TRUTH_RHO_KG_M3)].into_iter().enumerate() {
            println!("day {day}: {} {:.5e} in [{:.5e}, {:.5e}], truth {truth:.5e}", ["E", "rho"][k], e.value, e.ci95_low, e.ci95_high);
            inside[k] += (e.ci95_low <= truth && truth <= e.ci95_high) as usize;
        }
    }
    for (name, n) in ["E", "rho"].iter().zip(inside) {
        assert!((17..=20).contains(&n), "{name}: the 95 % interval holds the truth on {n} of {days} days");
    }
}

/// #45's load path in a session: the tapered arm with straight channels,
/// its cables rubbing with mu 0.15, cable "up" pulled to 0.4 N in steps and
/// let down again (configs/scene/channel-arm-load-unload.toml). The
/// simulator lets friction oppose the way each tension moves, so the same
/// tension holds the arm lower going up than coming down; identify takes
/// each hold's direction from the load cell's history (the holds after
/// the top are let out) and, with --fit-friction's prior 0.1 +- 0.1,
/// recovers mu within 10 % and E within 1 %.
#[test]
fn an_arm_pulled_up_and_let_down_in_a_session_gives_its_cables_friction() {
    const CHANNELS: &str = "configs/rod/tapered-channels-arm.toml";
    const SCENE: &str = "configs/scene/channel-arm-load-unload.toml";
    let dir = tempfile::tempdir().unwrap();
    let session = synth(dir.path(), "up-down", CHANNELS, SCENE, |r| {
        for c in &mut r.rod.cables {
            c.friction_mu = 0.15;
        }
        r.flange_sensor = false;
    });
    let loads_path = dir.path().join("loads.toml");
    let cables: String = ["up", "left", "right"].iter().map(|c| format!("[[cable]]\nstream = \"load_cell\"\ncolumn = \"{c}_n\"\n")).collect();
    std::fs::write(&loads_path, cables).unwrap();
    let source = Source::Sessions { dirs: vec![session.clone()], loads: Loads::read(Some(&loads_path), 3).unwrap() };
    let req = IdentifyRequest {
        friction: lab::identify::Prior::Given(0.1, 0.1),
        tie_g_poisson: Some(0.45),
        loo: false,
        ..IdentifyRequest::new(&at(CHANNELS), rod(CHANNELS), source, &dir.path().join("fit"))
    };
    let id = identify(&req, &lab::Silent).unwrap();
    let f = &id.study.fit;
    let mu = f.values.friction_mu.unwrap();
    for h in &id.holds {
        println!("  hold {:.2}..{:.2} s: {:?}", h.start_s, h.end_s, h.status);
    }
    for e in &id.experiments {
        println!("  {}: up {:.3} N, {:?}", e.id, e.tensions_n[0], e.cable_slide);
    }
    println!("session: mu {mu:.4} for 0.15, E {:.4e} for {:.4e}, rho {:.1}", f.e_pa.value, rod(CHANNELS).cross_section.body.e_pa, f.rho_kg_m3.value);
    let let_out: Vec<bool> = id.experiments.iter().filter(|e| e.tensions_n[0] > 0.05).map(|e| e.cable_slide == rod::statics::CableSlide::LetOut).collect();
    assert_eq!(let_out, [false, false, false, false, true, true, true], "the holds' directions");
    assert!((mu / 0.15 - 1.0).abs() < 0.1, "mu {mu}");
    assert!((f.e_pa.value / rod(CHANNELS).cross_section.body.e_pa - 1.0).abs() < 0.01, "E {}", f.e_pa.value);
    // validate replays the session with the fitted friction and says so
    // among its parameters (#81): each rubbing cable's mu with its interval.
    let params = dir.path().join("fit/identified.toml");
    let req = lab::validate::ValidateRequest {
        sessions: vec![session],
        rod_path: at(CHANNELS),
        rod: rod(CHANNELS),
        params: Some(lab::params::Params::read(&params, &rod(CHANNELS), &at(CHANNELS)).unwrap()),
        scene_path: at(SCENE),
        scene: scene(SCENE),
        loads: Loads::read(Some(&loads_path), 3).unwrap(),
        out: dir.path().join("validate"),
        options: Default::default(),
    };
    let v = lab::validate::validate(&req, &lab::Silent).unwrap();
    let page = std::fs::read_to_string(dir.path().join("validate/index.html")).unwrap();
    println!("validation: {:?}", v.sessions[0].checks.iter().map(|c| format!("{} {:.3} (limit {})", c.name, c.value, c.limit)).collect::<Vec<_>>());
    assert!(page.contains("cable up friction mu") && page.contains("(identify --fit-friction)"), "no cable friction among the parameters");
    assert!(v.pass(), "{:?}", v.sessions[0].checks);
}
