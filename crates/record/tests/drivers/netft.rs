//! The Net F/T recorder against the RDT emulator on loopback: 20 s at
//! 1 kHz with 1 % of the records lost, some reordered and duplicated, and a
//! status error bit from record 15,000 on.

use record::netft::{probe, record, NetFtConfig, NetFtEmulator, NetFtEmulatorConfig, NetFtQuirks};
use record::robot::{Clock, Status};
use session::gaps::GapReason;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn every_record_that_arrived_is_kept_once_in_order_and_the_loss_counted_exactly() {
    let wrench = [1.5, -2.0, 3.25, 0.1, -0.2, 0.05];
    let quirks = NetFtQuirks { lose: 0.01, reorder: 0.01, duplicate: 0.01, status_error_at: Some(15_000), ..NetFtQuirks::default() };
    let emu = NetFtEmulator::spawn("127.0.0.1:0", NetFtEmulatorConfig { quirks, ..NetFtEmulatorConfig::constant(1000.0, wrench) }).unwrap();
    let cfg = NetFtConfig { name: "netft".into(), address: emu.addr.to_string(), calibration_port: emu.addr.port() - 1, calibration: None, tare: false };
    // The calibration is read from the sensor (READCALINFO over TCP).
    let cal = probe(&cfg).unwrap();
    assert_eq!((cal.counts_per_n, cal.counts_per_nm), (1e6, 1e6));
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let status = Arc::new(Status::default());
    let (s2, st2, p) = (stop.clone(), status.clone(), dir.path().to_path_buf());
    let h = std::thread::spawn(move || record(&cfg, cal, &p, Clock::start(), s2, st2));
    std::thread::sleep(Duration::from_secs(20));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap().unwrap();
    let t = session::Table::read_chunks(&session::stream_dir(dir.path(), "netft")).unwrap();
    let seq: Vec<u64> = t.f64("rdt_sequence").unwrap().iter().map(|v| *v as u64).collect();
    assert!(seq.len() > 19_000, "{} records in 20 s at 1 kHz", seq.len());
    assert!(seq.windows(2).all(|w| w[1] > w[0]), "kept once, in order");
    let missing: u64 = seq.windows(2).map(|w| w[1] - w[0] - 1).sum();
    let lost = emu.lost.load(Ordering::Relaxed);
    println!(
        "{} records, {missing} missing between them, the emulator left out {lost}, {} duplicates dropped",
        seq.len(),
        status.rejected.load(Ordering::Relaxed)
    );
    assert!(missing > 100 && missing <= lost && lost <= missing + 2, "missing {missing}, lost {lost}");
    let gaps = session::gaps::read_gaps(dir.path(), "netft").unwrap();
    let in_gaps: u64 = gaps.iter().filter(|g| g.reason == GapReason::Lost).filter_map(|g| g.missing_samples).sum();
    assert_eq!(in_gaps, missing);
    assert!(status.rejected.load(Ordering::Relaxed) > 50, "duplicates dropped and counted");
    // Forces in newtons, exactly the emulator's wrench (1e6 counts per unit).
    let fz = t.f64("fz_n").unwrap();
    assert!(fz.iter().all(|v| (v - 3.25).abs() < 1e-6));
    // The status error bit is kept on every record from 15,000 and raised once.
    let st = t.f64("status").unwrap();
    assert!(seq.iter().zip(&st).all(|(s, v)| (*s >= 15_000) == (*v != 0.0)));
    let alerts = status.take_alerts();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(alerts[0].contains("status 0x80010000 at RDT sequence 15000"), "{alerts:?}");
}

#[test]
fn an_unreachable_sensor_or_a_zero_calibration_is_a_clear_error() {
    // Nothing listens: the calibration read fails, naming the address.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = NetFtConfig { name: "netft".into(), address: format!("127.0.0.1:{}", port + 1), calibration_port: port, calibration: None, tare: false };
    let e = probe(&cfg).unwrap_err();
    assert!(e.to_string().contains(&format!("Net F/T at 127.0.0.1:{port}")), "{e}");
    assert_eq!(fault::Fault::kind(&e), fault::Kind::Input);
    let cfg = NetFtConfig { calibration: Some((0.0, 1e6)), ..cfg };
    assert!(probe(&cfg).unwrap_err().to_string().contains("counts_per_force must be positive"));
    // A calibration given, but no RDT server: says so.
    let cfg = NetFtConfig { calibration: Some((1e6, 1e6)), ..cfg };
    assert!(probe(&cfg).unwrap_err().to_string().contains("no RDT record"), "the UDP side is silent");
}
