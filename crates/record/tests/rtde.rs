//! The RTDE client against the emulator on loopback: every package kept,
//! reconnection after the emulator restarts, clear errors.

use record::robot::{record, Clock, RobotConfig, Status};
use record::rtde::{Emulator, EmulatorConfig, Received, RtdeClient, RtdeError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn client_keeps_every_package_including_one_before_the_start_reply() {
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig::default()).unwrap();
    let vars = vec!["actual_TCP_pose".to_string(), "output_int_register_0".to_string(), "robot_mode".to_string()];
    let mut c = RtdeClient::connect(&emu.addr.to_string(), 500.0, &vars, Duration::from_secs(2)).unwrap();
    assert_eq!(c.controller_version[0], 5);
    assert_eq!(c.column_names()[0], "timestamp");
    assert_eq!(c.column_names().len(), 1 + 6 + 1 + 1);
    c.start().unwrap();
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

#[test]
fn unknown_variable_and_unreachable_host_are_clear_errors() {
    let emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig::default()).unwrap();
    let e = RtdeClient::connect(&emu.addr.to_string(), 500.0, &["actual_TCP_pose".into(), "no_such_thing".into()], Duration::from_secs(2)).err().unwrap();
    assert!(matches!(&e, RtdeError::UnknownVariable(v) if v == "no_such_thing"), "{e}");
    assert!(e.to_string().contains("no_such_thing"));
    // A closed port on loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = RtdeClient::connect(&format!("127.0.0.1:{port}"), 500.0, &[], Duration::from_millis(500)).err().unwrap();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

#[test]
fn recorder_survives_an_emulator_restart_and_records_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let mut emu = Emulator::spawn("127.0.0.1:0", EmulatorConfig { rate_hz: 125.0, ..EmulatorConfig::default() }).unwrap();
    let addr = emu.addr;
    let cfg = RobotConfig {
        name: "robot".into(),
        address: addr.to_string(),
        frequency_hz: 125.0,
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
    let emu2 = Emulator::spawn(&addr.to_string(), EmulatorConfig { rate_hz: 125.0, ..EmulatorConfig::default() }).unwrap();
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
    let gaps = session::Table::read_chunks(&session::stream_dir(dir.path(), "robot_gaps")).unwrap();
    assert!(gaps.height() >= 1, "the reconnection gap is recorded");
    let th = t.i64("t_host_ns").unwrap();
    assert!(th.windows(2).all(|w| w[1] >= w[0]), "host time is monotonic");
    // Rows after the reconnection are the new emulator's, in sequence.
    let reg = t.f64("output_int_register_0").unwrap();
    let tail = &reg[reg.len() - 50..];
    assert!(tail.windows(2).all(|w| w[1] == w[0] + 1.0));
}
