//! The FT 300 started as Robotiq's driver starts it, against the emulator
//! and against sensors that misbehave, each on an in-process pty pair.

use record::ft300;
use record::serial::{self, Ft300, Port, PtyPair, SerialSensor};
use record::serial_emulators::{run_ft300, Ft300EmulatorConfig};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames decoded from `port` for `seconds`.
fn frames_for(sensor: &mut Ft300, port: &mut Port, seconds: f64) -> Vec<Vec<f64>> {
    let mut out = vec![];
    let mut buf = [0u8; 1024];
    let t = Instant::now();
    while t.elapsed().as_secs_f64() < seconds {
        if let Ok(n) = port.read(&mut buf) {
            sensor.feed(&buf[..n], &mut out);
        }
    }
    out
}

fn with_emulator(cfg: Ft300EmulatorConfig, test: impl FnOnce(&mut Port)) {
    let mut pair = PtyPair::new().unwrap();
    let device = pair.device.take().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let emu = std::thread::spawn(move || run_ft300(device, &cfg, s));
    let mut port = serial::open(&pair.path, 19_200).unwrap();
    test(&mut port);
    stop.store(true, Ordering::Relaxed);
    emu.join().unwrap().unwrap();
}

#[test]
fn started_with_function_16_its_echo_checked_and_its_identity_read() {
    with_emulator(Ft300EmulatorConfig::new(100.0), |port| {
        let mut ft = Ft300::default();
        ft.start(port).unwrap();
        assert_eq!(ft.identity().as_deref(), Some("firmware FTS-3.0.1, serial FTS-0042, made 2019"));
        let frames = frames_for(&mut ft, port, 0.5);
        assert!(frames.len() >= 40, "{} frames in 0.5 s", frames.len());
    });
}

#[test]
fn a_sensor_streaming_before_the_start_is_jammed_and_restarted() {
    let cfg = Ft300EmulatorConfig { streaming_at_power_up: true, ..Ft300EmulatorConfig::new(100.0) };
    with_emulator(cfg, |port| {
        std::thread::sleep(Duration::from_millis(300));
        let mut ft = Ft300::default();
        ft.start(port).unwrap();
        // It heard Modbus, so it was quiet: its identity was read.
        assert!(ft.identity().is_some());
        // The frame counter (on Mz) restarts near where the jam stopped it
        // and runs on without a hole.
        let frames = frames_for(&mut ft, port, 0.5);
        assert!(frames.len() >= 40, "{} frames", frames.len());
        let counter: Vec<i64> = frames.iter().map(|f| (f[5] * 1000.0).round() as i64).collect();
        assert!(counter.windows(2).all(|w| w[1] == w[0] + 1 || w[1] == 0), "{counter:?}");
    });
}

/// A sensor that answers every request with `reply(request)` (none: silence).
fn with_sensor(reply: fn(&[u8]) -> Option<Vec<u8>>, test: impl FnOnce(&mut Port)) {
    let mut pair = PtyPair::new().unwrap();
    let mut device = pair.device.take().unwrap();
    device.set_timeout(Duration::from_millis(5)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let sensor = std::thread::spawn(move || {
        let mut rx = vec![];
        let mut buf = [0u8; 256];
        while !s.load(Ordering::Relaxed) {
            if let Ok(n) = device.read(&mut buf) {
                rx.extend_from_slice(&buf[..n]);
            }
            if let Some((_, end)) = ft300::find_request(&rx) {
                if let Some(r) = reply(&rx[..end]) {
                    device.write_all(&r).unwrap();
                }
                rx.drain(..end);
            }
        }
    });
    let mut port = serial::open(&pair.path, 19_200).unwrap();
    test(&mut port);
    stop.store(true, Ordering::Relaxed);
    sensor.join().unwrap();
}

#[test]
fn a_refused_start_and_a_silent_sensor_are_errors_that_say_so() {
    // Answers everything with "illegal function".
    with_sensor(
        |req| Some(ft300::with_crc(&[ft300::SLAVE, req[1] | 0x80, 1])),
        |port| {
            let e = Ft300::default().start(port).unwrap_err().to_string();
            assert!(e.contains("refused the stream start") && e.contains("exception 1 (illegal function)"), "{e}");
        },
    );
    with_sensor(
        |_| None,
        |port| {
            let e = Ft300::default().start(port).unwrap_err().to_string();
            assert!(e.contains("no answer to the stream start (Modbus function 16, register 410)"), "{e}");
        },
    );
}
