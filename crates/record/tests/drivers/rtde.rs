//! The RTDE client against the emulator on loopback: every package kept,
//! reconnection after the emulator restarts, clear errors.

use record::robot::{record, Clock, RobotConfig, Status};
use record::rtde::{read_package, write_package, Controller, Emulator, EmulatorConfig, Quirks, Received, RtdeClient, RtdeError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn client_keeps_every_package_including_one_before_the_start_reply() {
    let quirks = Quirks { early_data: true, text: true, ..Quirks::default() };
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { quirks, ..EmulatorConfig::default() }).unwrap();
    let vars = vec!["actual_TCP_pose".to_string(), "output_int_register_0".to_string(), "robot_mode".to_string()];
    let mut c = RtdeClient::connect(&emu.addr.to_string(), Some(500.0), &vars, Duration::from_secs(2)).unwrap();
    assert_eq!(c.controller_version[0], 5);
    assert_eq!(c.column_names()[0], "timestamp");
    assert_eq!(c.column_names().len(), 1 + 6 + 1 + 1);
    c.start().unwrap();
    // The text sent during setup and the one before the start reply come first, in order.
    let texts: Vec<String> = (0..2)
        .map(|_| match c.receive().unwrap() {
            // Protocol 2 text: message, source and level decoded.
            Received::Text(t) if t.source == "rodlab RTDE emulator" && t.level == record::rtde::MessageLevel::Info => t.message,
            other => panic!("expected the setup text, got {other:?}"),
        })
        .collect();
    assert!(texts[0].contains("recipe set up") && texts[1].contains("streaming"), "{texts:?}");
    let mut seq = vec![];
    while seq.len() < 1000 {
        if let Received::Data(v) = c.receive().unwrap() {
            seq.push(v[7] as i64);
            assert!((v[0] * 500.0 - v[7]).abs() < 1e-6, "timestamp and sequence agree");
        }
    }
    // Consecutive: nothing dropped, nothing duplicated.
    assert!(seq.windows(2).all(|w| w[1] == w[0] + 1), "gap in {seq:?}");
}

/// The bytes of a controller's setup, as ur_rtde sends them: a recipe
/// ending with a comma, recipe ids from 1, nothing before the start reply.
#[test]
fn the_emulator_answers_setup_like_a_controller() {
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig::default()).unwrap();
    let mut s = std::net::TcpStream::connect(emu.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let setup = |s: &mut std::net::TcpStream, names: &str| {
        let mut p = 500f64.to_be_bytes().to_vec();
        p.extend_from_slice(names.as_bytes());
        write_package(s, b'O', &p).unwrap();
        let (kind, reply) = read_package(s).unwrap();
        assert_eq!(kind, b'O', "the reply comes first: no text message before it");
        (reply[0], String::from_utf8_lossy(&reply[1..]).to_string())
    };
    write_package(&mut s, b'V', &2u16.to_be_bytes()).unwrap();
    assert_eq!(read_package(&mut s).unwrap(), (b'V', vec![1]));
    // ur_rtde's default list: registers 12..19, payload, ft_raw_wrench, a trailing comma.
    let (id, types) =
        setup(&mut s, "timestamp,actual_TCP_pose,output_int_register_12,output_double_register_19,payload,payload_cog,ft_raw_wrench,standard_analog_input0,");
    assert_eq!(id, 1);
    assert_eq!(types, "DOUBLE,VECTOR6D,INT32,DOUBLE,DOUBLE,VECTOR3D,VECTOR6D,DOUBLE");
    let (id, _) = setup(&mut s, "timestamp,");
    assert_eq!(id, 2, "every valid recipe gets the next id");
    let (id, types) = setup(&mut s, "timestamp,no_such_thing,output_int_register_48");
    assert_eq!((id, types.as_str()), (0, "DOUBLE,NOT_FOUND,NOT_FOUND"), "invalid recipe: id 0");
    let (id, _) = setup(&mut s, "timestamp,actual_q");
    assert_eq!(id, 3);
    write_package(&mut s, b'S', &[]).unwrap();
    assert_eq!(read_package(&mut s).unwrap(), (b'S', vec![1]), "the start reply before any data");
    let (kind, data) = read_package(&mut s).unwrap();
    assert_eq!((kind, data[0], data.len()), (b'U', 3, 1 + 8 + 48), "data carry the recipe id");
}

#[test]
fn quirk_drop_after_closes_the_connection_mid_stream() {
    let quirks = Quirks { drop_after: Some(100), ..Quirks::default() };
    assert_eq!("drop-after=100".parse::<Quirks>().unwrap(), quirks);
    assert_eq!("early-data, text".parse::<Quirks>().unwrap(), Quirks { early_data: true, text: true, ..Quirks::default() });
    assert!("fast".parse::<Quirks>().unwrap_err().to_string().contains("unknown quirk 'fast'"));
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { quirks, ..EmulatorConfig::default() }).unwrap();
    let mut c = RtdeClient::connect(&emu.addr.to_string(), Some(500.0), &[], Duration::from_secs(2)).unwrap();
    c.start().unwrap();
    let mut n = 0;
    while let Ok(r) = c.receive() {
        assert!(matches!(r, Received::Data(_)), "no text without the text quirk");
        n += 1;
    }
    assert_eq!(n, 100);
}

#[test]
fn unknown_variable_and_unreachable_host_are_clear_errors() {
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig::default()).unwrap();
    let e = RtdeClient::connect(&emu.addr.to_string(), Some(500.0), &["actual_TCP_pose".into(), "no_such_thing".into()], Duration::from_secs(2)).err().unwrap();
    assert!(matches!(&e, RtdeError::UnknownVariable(v) if v == "no_such_thing"), "{e}");
    assert!(e.to_string().contains("no_such_thing"));
    // A closed port on loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = RtdeClient::connect(&format!("127.0.0.1:{port}"), Some(500.0), &[], Duration::from_millis(500)).err().unwrap();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

#[test]
fn recorder_survives_an_emulator_restart_and_records_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let quirks = Quirks { text: true, ..Quirks::default() };
    let mut emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { controller: Controller::Cb3, quirks, ..EmulatorConfig::default() }).unwrap();
    let addr = emu.addr;
    let cfg = RobotConfig {
        name: "robot".into(),
        address: addr.to_string(),
        frequency_hz: Some(125.0),
        variables: vec!["actual_TCP_pose".into(), "output_int_register_0".into()],
    };
    let stop = Arc::new(AtomicBool::new(false));
    let status = Arc::new(Status::default());
    let (s2, st2, p) = (stop.clone(), status.clone(), dir.path().to_path_buf());
    let h = std::thread::spawn(move || record(&cfg, &p, Clock::start(), s2, st2));
    std::thread::sleep(Duration::from_millis(1500));
    emu.stop();
    let sent_first = emu.sent.load(Ordering::Relaxed);
    drop(emu);
    std::thread::sleep(Duration::from_millis(500));
    let emu2 = Emulator::spawn(&addr.to_string(), EmulatorConfig { controller: Controller::Cb3, quirks, ..EmulatorConfig::default() }).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    let counter = emu2.sent.clone();
    drop(emu2);
    let sent_second = counter.load(Ordering::Relaxed);
    let t = session::Table::read_chunks(&session::stream_dir(dir.path(), "robot")).unwrap();
    let rows = t.height() as u64;
    // Everything the emulators sent while connected is there (the last
    // packages in flight when we stopped may be missing).
    assert!(rows >= sent_first + sent_second - 5 && rows <= sent_first + sent_second, "rows {rows}, sent {sent_first} + {sent_second}");
    assert!(status.reconnects.load(Ordering::Relaxed) >= 1);
    // The reconnection is in the session's gap table, on the host clock,
    // spanning the 0.5 s the controller was away.
    let gaps = session::gaps::read_gaps(dir.path(), "robot").unwrap();
    assert!(gaps.iter().any(|g| g.reason == session::gaps::GapReason::Disconnected && g.duration_s() > 0.4 && g.duration_s() < 3.0), "{gaps:?}");
    let th = t.i64("t_host_ns").unwrap();
    assert!(th.windows(2).all(|w| w[1] >= w[0]), "host time is monotonic");
    // Every text message is kept, those of the setup included.
    let log = std::fs::read_to_string(dir.path().join("robot_messages.csv")).unwrap();
    assert_eq!(log.matches("INFO,rodlab RTDE emulator,output recipe set up").count(), 2, "one per connection, decoded: {log}");
    // Rows after the reconnection are the new emulator's, in sequence.
    let reg = t.f64("output_int_register_0").unwrap();
    let tail = &reg[reg.len() - 50..];
    assert!(tail.windows(2).all(|w| w[1] == w[0] + 1.0));
}

/// A trajectory played by the emulator (as `rodlab emulate robot
/// --trajectory` does with a simulated experiment): every package's pose is
/// the trajectory at its controller timestamp, slerped; the speed is its
/// derivative.
#[test]
fn the_emulator_plays_a_trajectory_on_controller_time() {
    let quarter = std::f64::consts::FRAC_PI_2;
    // 0.1 m/s along x while turning about z at pi/4 rad/s, for 2 s.
    let traj = lie::trajectory::PoseTrajectory::from_ur([(0.0, [0.3, 0.0, 0.2, 0.0, 0.0, 0.0]), (2.0, [0.5, 0.0, 0.2, 0.0, 0.0, quarter])]).unwrap();
    let cfg = EmulatorConfig { controller: Controller::ESeries, trajectory: Some(Arc::new(traj)), ..EmulatorConfig::default() };
    let emu = Emulator::spawn("127.0.0.1:0", cfg).unwrap();
    let vars = vec!["actual_TCP_pose".to_string(), "actual_TCP_speed".to_string()];
    let mut c = RtdeClient::connect(&emu.addr.to_string(), Some(500.0), &vars, Duration::from_secs(2)).unwrap();
    c.start().unwrap();
    let mut n = 0;
    while n < 300 {
        let Received::Data(v) = c.receive().unwrap() else { continue };
        let t = v[0].min(2.0);
        let want = [0.3 + 0.1 * t, 0.0, 0.2, 0.0, 0.0, quarter * t / 2.0];
        for k in 0..6 {
            assert!((v[1 + k] - want[k]).abs() < 1e-9, "t {}: pose {:?} vs {want:?}", v[0], &v[1..7]);
        }
        if v[0] > 0.01 && v[0] < 1.99 {
            let speed = [0.1, 0.0, 0.0, 0.0, 0.0, quarter / 2.0];
            for k in 0..6 {
                assert!((v[7 + k] - speed[k]).abs() < 1e-6, "t {}: speed {:?}", v[0], &v[7..13]);
            }
        }
        n += 1;
    }
}

/// Records `seconds` from an emulator of `controller` with `quirks`; the
/// rig file's rate `frequency_hz` (None: the controller's).
fn record_from(controller: Controller, quirks: Quirks, frequency_hz: Option<f64>, seconds: f64) -> (tempfile::TempDir, Arc<Status>, Emulator) {
    let dir = tempfile::tempdir().unwrap();
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { controller, quirks, ..EmulatorConfig::default() }).unwrap();
    let cfg = RobotConfig { name: "robot".into(), address: emu.addr.to_string(), frequency_hz, variables: vec!["actual_TCP_pose".into()] };
    let stop = Arc::new(AtomicBool::new(false));
    let status = Arc::new(Status::default());
    let (s2, st2, p) = (stop.clone(), status.clone(), dir.path().to_path_buf());
    let h = std::thread::spawn(move || record(&cfg, &p, Clock::start(), s2, st2));
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    (dir, status, emu)
}

/// Packages missing between the recorded ones, by the controller's clock.
fn missing_by_timestamps(ts: &[f64], period_s: f64) -> u64 {
    ts.windows(2).map(|w| ((w[1] - w[0]) / period_s).round() as u64 - 1).sum()
}

/// A CB3 and a rig file without a rate: 125 packages a second (the
/// controller's maximum, read from its version, as UR's client does), the
/// version and the measured rate in the device's record; with 1 % of the
/// packages left out by the controller, the gap table counts exactly the
/// missing ones (not 3 in 4, as when 500 Hz was assumed).
#[test]
fn a_cb3_streams_at_its_own_125_hz_and_every_lost_package_is_counted() {
    let quirks = Quirks { lose: 0.01, ..Quirks::default() };
    let (dir, status, emu) = record_from(Controller::Cb3, quirks, None, 4.0);
    let t = session::Table::read_chunks(&session::stream_dir(dir.path(), "robot")).unwrap();
    let ts = t.f64("timestamp").unwrap();
    let span = ts[ts.len() - 1] - ts[0];
    let missing = missing_by_timestamps(&ts, 1.0 / 125.0);
    let lost = emu.lost.load(Ordering::Relaxed);
    println!("CB3: {} rows over {span:.3} s, {missing} missing by timestamps, {lost} left out by the emulator", ts.len());
    assert!(((ts.len() as u64 + missing) as f64 / (span * 125.0) - 1.0).abs() < 0.01, "{} rows + {missing} missing in {span} s", ts.len());
    assert!(missing > 0 && missing <= lost && lost <= missing + 1, "missing {missing}, lost {lost}");
    let gaps = session::gaps::read_gaps(dir.path(), "robot").unwrap();
    let in_gaps: u64 = gaps.iter().filter(|g| g.reason == session::gaps::GapReason::Lost).filter_map(|g| g.missing_samples).sum();
    assert_eq!(in_gaps, missing, "{gaps:?}");
    assert_eq!(status.missing_packages.load(Ordering::Relaxed), missing);
    assert_eq!(status.identity().as_deref(), Some("URControl 3.15.7.106331 (CB3, at most 125 Hz)"));
    let settings = status.settings.lock().unwrap().clone();
    let get = |n: &str| settings.iter().find(|(k, _)| k == n).map(|(_, v)| *v).unwrap();
    assert_eq!(get("requested_rate_hz"), 125.0);
    assert!((get("measured_rate_hz") - 125.0 * (1.0 - 0.01)).abs() < 2.0, "{settings:?}");
}

/// An e-Series asked for 70 Hz serves it by skipping control cycles (steps
/// of 14 and 16 ms): no false gap from the uneven steps, and the lost
/// packages counted exactly.
#[test]
fn a_lower_rate_than_the_controllers_has_uneven_steps_and_no_false_gaps() {
    let quirks = Quirks { lose: 0.02, ..Quirks::default() };
    let (dir, status, emu) = record_from(Controller::ESeries, quirks, Some(70.0), 3.0);
    let t = session::Table::read_chunks(&session::stream_dir(dir.path(), "robot")).unwrap();
    let ts = t.f64("timestamp").unwrap();
    let steps: std::collections::BTreeSet<i64> = ts.windows(2).map(|w| ((w[1] - w[0]) * 1e3).round() as i64).collect();
    assert!(steps.contains(&14) && steps.contains(&16), "steps [ms]: {steps:?}");
    // A lost package makes a step of about two periods (28-32 ms).
    let missing: u64 = ts.windows(2).filter(|w| w[1] - w[0] > 0.021).map(|w| ((w[1] - w[0]) * 70.0).round() as u64 - 1).sum();
    let lost = emu.lost.load(Ordering::Relaxed);
    assert!(missing > 0 && missing <= lost && lost <= missing + 1, "missing {missing}, lost {lost}");
    assert_eq!(status.missing_packages.load(Ordering::Relaxed), missing);
}

/// A rate the controller cannot stream (500 Hz from a CB3) is refused
/// before anything is set up, naming the controller and its maximum.
#[test]
fn a_rate_above_the_controllers_maximum_is_refused() {
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { controller: Controller::Cb3, ..EmulatorConfig::default() }).unwrap();
    let e = RtdeClient::connect(&emu.addr.to_string(), Some(500.0), &[], Duration::from_secs(2)).err().unwrap();
    assert!(matches!(e, RtdeError::RateAboveController { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("500 Hz asked") && text.contains("URControl 3.15.7.106331") && text.contains("at most 125 Hz"), "{text}");
    // ur_rtde's choice: no rate given, the controller's maximum.
    let c = RtdeClient::connect(&emu.addr.to_string(), None, &[], Duration::from_secs(2)).unwrap();
    assert_eq!(c.frequency_hz, 125.0);
}

/// A protective stop while streaming: the controller's EXCEPTION text
/// message is decoded (text, source, level) into robot_messages.csv with
/// its host time, and raised as an alert for the person recording.
#[test]
fn a_controller_exception_is_decoded_kept_and_raised() {
    let quirks = Quirks { exception_after: Some(100), ..Quirks::default() };
    let (dir, status, _emu) = record_from(Controller::ESeries, quirks, None, 1.0);
    let text = std::fs::read_to_string(dir.path().join("robot_messages.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("t_host_ns,level,source,message"));
    let row: Vec<&str> = lines.next().expect("the exception").split(',').collect();
    assert_eq!(&row[1..], ["EXCEPTION", "rodlab RTDE emulator", "C153A0: protective stop (emulated)"], "{text}");
    let t_s = row[0].parse::<f64>().unwrap() * 1e-9;
    assert!(t_s > 0.1 && t_s < 1.0, "after 100 packages at 500 Hz: {t_s} s");
    let alerts = status.take_alerts();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(alerts[0].starts_with("robot: EXCEPTION from rodlab RTDE emulator: C153A0: protective stop (emulated)"), "{alerts:?}");
}
