//! The session crate's unit tests, through its public API: one test binary
//! that links the library cargo built once (tests inside the crate compiled
//! it a second time, under cfg(test)).

mod frames {
    use session::frames::*;

    #[test]
    fn frame_pose_round_trip() {
        let f = FramePose { position_m: [0.1, -0.2, 0.3], rpy_deg: [10.0, -20.0, 170.0] };
        let back = FramePose::from_pose(&f.pose());
        assert!((back.pose().rot - f.pose().rot).amax() < 1e-12);
        assert_eq!(back.position_m, f.position_m);
    }

    #[test]
    fn defaults_and_validation() {
        let f: RigFrames = toml::from_str("").unwrap();
        assert_eq!(f, RigFrames::default());
        let bad: RigFrames = toml::from_str("marker_height_m = -0.01").unwrap();
        assert!(bad.validate(std::path::Path::new("f.toml")).unwrap_err().to_string().contains("f.toml: frames.marker_height_m"));
        let bad: RigFrames = toml::from_str("[table]\nnormal = [0.0, 0.0, 0.0]").unwrap();
        assert!(bad.validate(std::path::Path::new("f.toml")).unwrap_err().to_string().contains("frames.table"));
    }
}

mod frames_calibration_tests {
    use lie::{Pose, Vec3};
    use session::frames::*;

    #[test]
    fn kabsch_recovers_a_pose_and_refuses_a_line() {
        let truth = Pose::from_rpy(0.2, -0.1, 2.5, Vec3::new(0.3, -0.2, 0.5));
        let pts: Vec<Vec3> = (0..10).map(|k| Vec3::new(0.1 * (k as f64).cos(), 0.15 * (k as f64 * 0.7).sin(), 0.02 * k as f64)).collect();
        let pairs: Vec<(Vec3, Vec3)> = pts.iter().map(|p| (*p, truth.transform_point(p))).collect();
        let c = calibrate_robot_base(&pairs).unwrap();
        assert!((c.world_from_robot.rot - truth.rot).amax() < 1e-12 && (c.world_from_robot.pos - truth.pos).amax() < 1e-12);
        assert!(c.rms_residual_m < 1e-12);
        let line: Vec<(Vec3, Vec3)> = (0..5).map(|k| (Vec3::new(0.05 * k as f64, 0.0, 0.0), Vec3::new(0.05 * k as f64, 0.0, 0.0))).collect();
        assert!(matches!(calibrate_robot_base(&line), Err(CalibrationError::Collinear(_))));
    }
}

mod gaps {
    use session::gaps::*;

    #[test]
    fn gaps_round_trip_one_chunk_each() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = GapWriter::create(dir.path(), "ft300").unwrap();
        let a = Gap { start_host_ns: 5_000_000_000, end_host_ns: 10_020_000_000, reason: GapReason::Disconnected, missing_samples: None };
        let b = Gap { start_host_ns: 1_000_000_000, end_host_ns: 1_010_000_000, reason: GapReason::Lost, missing_samples: Some(4) };
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        assert_eq!(std::fs::read_dir(gaps_dir(dir.path(), "ft300")).unwrap().count(), 2);
        assert_eq!(read_gaps(dir.path(), "ft300").unwrap(), vec![b, a.clone()]);
        assert!((a.duration_s() - 5.02).abs() < 1e-12);
        assert_eq!(devices_with_gaps(dir.path()), vec!["ft300".to_string()]);
        assert!(read_gaps(dir.path(), "robot").unwrap().is_empty());
    }
}

mod layout {
    use session::layout::*;
    use std::path::Path;

    #[test]
    fn names_and_paths() {
        let d = SessionDir::new("/data/day1/holds-2");
        assert_eq!(d.name(), "holds-2");
        assert_eq!(d.markers(), Path::new("/data/day1/holds-2/markers.parquet"));
        assert_eq!(d.stream("ft300"), Path::new("/data/day1/holds-2/streams/ft300"));
        assert_eq!(d.video("camera", "mkv"), Path::new("/data/day1/holds-2/camera.mkv"));
        assert_eq!(d.describe_streams(), "it has no streams");
    }

    #[test]
    fn a_cameras_video_is_found_in_either_container() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SessionDir::new(tmp.path());
        assert_eq!(d.find_video("camera"), None);
        std::fs::write(d.video("camera", "avi"), b"").unwrap();
        assert_eq!(d.find_video("camera"), Some(d.video("camera", "avi")));
        std::fs::write(d.video("camera", "mkv"), b"").unwrap();
        assert_eq!(d.find_video("camera"), Some(d.video("camera", "mkv")));
    }

    #[test]
    fn one_recorder_at_a_time_and_the_lock_file_is_not_content() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SessionDir::new(tmp.path());
        let lock = d.lock_for_recording().unwrap();
        assert!(d.contents().is_empty());
        let e = d.lock_for_recording().err().unwrap().to_string();
        assert!(e.contains("another recorder is recording into this directory (pid "), "{e}");
        drop(lock);
        assert!(!d.lock_path().exists());
        let _again = d.lock_for_recording().unwrap();
    }
}

mod lib {
    use session::*;

    #[test]
    fn device_text_reaches_the_terminal_without_its_escape_sequences() {
        assert_eq!(printable("C153A0: stop\u{1b}[2J\u{1b}]0;owned\u{7}"), "C153A0: stop\\u{1b}[2J\\u{1b}]0;owned\\u{7}");
        assert_eq!(printable("ok: 5 N"), "ok: 5 N");
    }

    #[test]
    fn device_times_follow_the_device_clock_through_jitter_drift_and_a_restart() {
        // 500 Hz packages; the device clock runs 50 ppm fast and restarts
        // from 0 after 12 s; arrivals are late by 0.1-3 ms, every 97th
        // package by 20 ms more (a burst).
        let mut device = vec![];
        let mut host = vec![];
        let mut truth = vec![];
        let mut lcg: u64 = 7;
        for k in 0..15_000u64 {
            let t_true = k as f64 / 500.0; // measurement instant on the host clock [s]
            let dev = if t_true < 12.0 { 100.0 + t_true * (1.0 + 50e-6) } else { (t_true - 12.0) * (1.0 + 50e-6) };
            lcg = lcg.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let delay = 1e-4 + 2.9e-3 * ((lcg >> 11) as f64 / (1u64 << 53) as f64) + if k % 97 == 0 { 0.02 } else { 0.0 };
            device.push(dev);
            host.push(((t_true + delay) * 1e9) as i64);
            truth.push(t_true);
        }
        let mapped = device_times_on_host_clock(&device, &host);
        let worst = mapped.iter().zip(&truth).map(|(m, t)| (*m as f64 * 1e-9 - t).abs()).fold(0.0, f64::max);
        // The least delay found in each window is 0.1 ms (+ the drift's
        // share over half a window, 0.1 ms); arrival times were off by up to 23 ms.
        assert!(worst < 0.35e-3, "worst {worst} s");
        let raw_worst = host.iter().zip(&truth).map(|(h, t)| (*h as f64 * 1e-9 - t).abs()).fold(0.0, f64::max);
        assert!(raw_worst > 0.02);
    }

    #[test]
    fn camera_frames_are_stamped_by_the_camera_clock_where_it_has_one() {
        // 30 frames/s; the recorder got each 2 ms after it was due, frame
        // 10 46 ms after (a busy host), frame 20 a whole period late.
        let due_ns: Vec<i64> = (0..60).map(|k| 1_000_000_000 + k * 33_333_333).collect();
        let late_ns = |k: usize| {
            2_000_000
                + if k == 10 {
                    44_000_000
                } else if k == 20 {
                    33_000_000
                } else {
                    0
                }
        };
        let host: Vec<i64> = due_ns.iter().enumerate().map(|(k, t)| t + late_ns(k)).collect();
        let mut frames = Table::new();
        frames.push_i64("t_host_ns", host.clone());
        frames.push_f64("frame", (0..60).map(|k| k as f64).collect());
        frames.push_f64("device_ms", (0..60).map(|k| 500.0 + k as f64 * 1e3 / 30.0).collect());
        let stamped = frame_times_on_host_clock(&frames.into_read()).unwrap();
        for (k, (s, due)) in stamped.iter().zip(&due_ns).enumerate() {
            assert!((s - due - 2_000_000).abs() < 1_000, "frame {k}: {} ms after it was due", (s - due) as f64 * 1e-6);
        }
        // A camera without a clock (zeros), or without the column, keeps its stamps.
        let mut zeros = Table::new();
        zeros.push_i64("t_host_ns", host.clone());
        zeros.push_f64("device_ms", vec![0.0; 60]);
        assert_eq!(frame_times_on_host_clock(&zeros.into_read()).unwrap(), host);
        let mut bare = Table::new();
        bare.push_i64("t_host_ns", host.clone());
        assert_eq!(frame_times_on_host_clock(&bare.into_read()).unwrap(), host);
    }

    #[test]
    fn check_names_schema_drift_and_host_time_running_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = StreamWriter::create(dir.path(), "ft300", vec!["fx_n".into()], std::time::Duration::from_secs(3600)).unwrap();
        for k in 0..10 {
            w.push(k * 10_000_000, &[k as f64]).unwrap();
        }
        w.flush().unwrap();
        // A second chunk with a foreign column, a third going back in time.
        let mut t = Table::new();
        t.push_i64("t_host_ns", vec![200_000_000]);
        t.push_f64("fy_n", vec![0.0]);
        t.write(&stream_dir(dir.path(), "ft300").join("000001.parquet")).unwrap();
        let mut t = Table::new();
        t.push_i64("t_host_ns", vec![50_000_000, 60_000_000]);
        t.push_f64("fx_n", vec![0.0, 1.0]);
        t.write(&stream_dir(dir.path(), "ft300").join("000002.parquet")).unwrap();
        let r = check_session(dir.path()).unwrap();
        assert_eq!(r.len(), 3);
        assert!(r[0].problem.is_none(), "{:?}", r[0]);
        assert!(r[1].problem.as_deref().unwrap().contains("columns differ from 000000.parquet's: [t_host_ns: i64, fy_n: f64]"), "{:?}", r[1]);
        // Behind the last chunk the readers keep (the foreign one is left out).
        assert!(
            r[2].problem.as_deref().unwrap().contains("host time runs backwards at row 0: 0.050000 s after the chunk before's last 0.090000 s"),
            "{:?}",
            r[2]
        );
    }
}

mod meta {
    use session::meta::*;
    use session::RigFrames;

    #[test]
    fn round_trip_with_awkward_rig_text() {
        let dir = tempfile::tempdir().unwrap();
        let frames = RigFrames { marker_height_m: 0.01, ..RigFrames::default() };
        let rig = "# a rig with \"quotes\", ''' and a backslash \\\n[[robot]]\naddress = \"127.0.0.1:30004\"\n";
        let meta = SessionMeta::start("notes with \"quotes\"", "configs/rig/x.toml", rig, frames);
        meta.write(dir.path()).unwrap();
        let back = SessionMeta::read(dir.path()).unwrap().unwrap();
        assert_eq!(back, meta);
        assert!(back.start_utc.ends_with('Z') && back.start_utc.len() == 20, "{}", back.start_utc);
        assert!(SessionMeta::read(&dir.path().join("none")).unwrap().is_none());
    }
}

mod rig {
    use session::rig::*;
    use session::RigFrames;

    #[test]
    fn a_rig_written_reads_back_the_same() {
        let rig = Rig {
            session: SessionInfo { operator_notes: "a \"quoted\" note".into() },
            frames: RigFrames { marker_height_m: 0.01, ..RigFrames::default() },
            robots: vec![RobotDevice { address: "127.0.0.1:30004".into(), variables: vec!["actual_TCP_pose".into()], ..RobotDevice::default() }],
            ft300s: vec![Ft300Device { name: "ft300".into(), port: "/dev/pts/3".into(), baud: 19_200 }],
            ascii_sensors: vec![AsciiDevice {
                name: "cells".into(),
                port: "/dev/pts/4".into(),
                baud: 115_200,
                separator: ",".into(),
                columns: vec!["a_n".into()],
                scales: vec![],
            }],
            cameras: vec![
                CameraDevice { file: Some("/tmp/v.mkv".into()), file_start_unix_s: Some(1.7e9), ..CameraDevice::default() },
                CameraDevice {
                    name: "side".into(),
                    device: Some(0),
                    settings: CameraSettings { width_px: Some(1280), auto_exposure: Some(false), exposure: Some(80.0), ..CameraSettings::default() },
                    ..CameraDevice::default()
                },
            ],
            netfts: vec![NetFtDevice {
                name: "ati".into(),
                address: "192.168.1.1:49152".into(),
                calibration_port: 49151,
                counts_per_force: Some(1e6),
                counts_per_torque: Some(1e6),
                tare: true,
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rig.toml");
        std::fs::write(&path, rig.to_toml("a test rig")).unwrap();
        let (back, text) = Rig::from_file(&path).unwrap();
        assert_eq!(back, rig);
        assert!(text.starts_with("# a test rig\n"));
    }

    #[test]
    fn bad_values_name_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rig.toml");
        for (text, needle) in [
            ("[[robot]]\naddress = \"x:1\"\nfrequency_hz = 0\nvariables = []\n", "robot[0].frequency_hz"),
            ("[[robot]]\naddress = \"x:1\"\nfrequency_hz = 0.5\nvariables = []\n", "robot[0].frequency_hz"),
            ("[[robot]]\naddress = \"x:1\"\nfrequency_hz = 1e-300\nvariables = []\n", "robot[0].frequency_hz"),
            ("[[robot]]\naddress = \"x:1\"\nvariables = [\"actual_q\", \"actual_TCP_pose\", \"actual_q\"]\n", "\"actual_q\" is listed twice"),
            ("[[robot]]\naddress = \"x:1\"\nvariables = [\"timestamp\"]\n", "always recorded"),
            ("[[ascii]]\nport = \"/dev/x\"\nseparator = \"1\"\ncolumns = [\"a\"]\n", "ascii[0].separator"),
            ("[[camera]]\n", "camera[0]: give exactly one"),
            ("", "no devices"),
            ("[[ft300]]\nport = \"a\"\nbogus = 1\n", "unknown field"),
            ("[[ft300]]\nport = \"a\"\nbaud = 0\n", "ft300[0].baud: must be a serial rate"),
            ("[[ft300]]\nport = \"a\"\n[[ascii]]\nport = \"/dev/x\"\ncolumns = [\"a\"]\nbaud = 0\n", "ascii[0].baud"),
            ("[[netft]]\naddress = \"x:49152\"\ncounts_per_force = 1e6\n", "netft[0].counts_per_force, counts_per_torque: give both"),
            ("[[netft]]\naddress = \"x:49152\"\ncounts_per_force = 0\ncounts_per_torque = 1e6\n", "must be positive"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = Rig::from_file(&path).unwrap_err().to_string();
            assert!(e.contains("rig.toml") && e.contains(needle), "{e}");
        }
        assert!(Separator::parse("ab").is_err() && Separator::parse("1").is_err());
        assert_eq!(Separator::parse(" ").unwrap(), Separator::Whitespace);
    }
}

mod aligned {
    use session::aligned::*;
    use session::gaps::{Gap, GapReason};

    fn gap(start: i64, end: i64) -> Gap {
        Gap { start_host_ns: start, end_host_ns: end, reason: GapReason::Disconnected, missing_samples: None }
    }

    #[test]
    fn previous_takes_the_sample_at_or_before_within_the_tolerance() {
        let samples = [10, 20, 30, 60];
        let (picks, _) = match_rows(&[5, 10, 19, 29, 45, 55, 70], &samples, &[], Match::Previous, 15).unwrap();
        assert_eq!(picks, vec![None, Some(0), Some(0), Some(1), Some(2), None, Some(3)]);
    }

    #[test]
    fn nearest_takes_the_closer_sample_and_the_earlier_on_a_tie() {
        let samples = [10, 20, 30];
        let (picks, _) = match_rows(&[4, 14, 15, 16, 36, 41], &samples, &[], Match::Nearest, 10).unwrap();
        assert_eq!(picks, vec![Some(0), Some(0), Some(0), Some(1), Some(2), None]);
        // Two samples at one host time: the last behind a row, the first
        // ahead of it (pandas's merge_asof alike).
        let (picks, _) = match_rows(&[5, 10, 12], &[10, 10, 30], &[], Match::Nearest, 15).unwrap();
        assert_eq!(picks, vec![Some(0), Some(1), Some(1)]);
    }

    #[test]
    fn nothing_is_carried_across_an_outage() {
        // The device's last sample before the outage is at 20, its first
        // after at 80: rows strictly between have no value, whatever the
        // tolerance; the outage's two ends are samples and keep theirs.
        let samples = [10, 20, 80, 90];
        let gaps = [gap(20, 80)];
        for matching in [Match::Previous, Match::Nearest] {
            let (picks, in_outages) = match_rows(&[20, 21, 50, 79, 80], &samples, &gaps, matching, 1_000).unwrap();
            assert_eq!(picks, vec![Some(1), None, None, None, Some(2)], "{matching:?}");
            assert_eq!(in_outages, 3);
        }
    }

    #[test]
    fn the_median_interval_ignores_an_outage() {
        assert_eq!(median_interval_s(&[0, 10, 20, 30, 1_000, 1_010]), Some(10e-9));
        assert_eq!(median_interval_s(&[5]), None);
    }
}

/// A stream's chunks decode on threads that yield to a recording: each at
/// nice `DECODING_NICE` (read back from /proc, the kernel's own figure),
/// while the caller keeps its own priority.
#[cfg(target_os = "linux")]
#[test]
fn chunks_decode_on_threads_below_a_recorders_priority() {
    fn own_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command's closing parenthesis; nice is field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }
    let caller = own_nice();
    let pool = session::table::decoding_pool();
    let nices: Vec<i32> = pool.broadcast(|_| own_nice());
    assert!(!nices.is_empty() && nices.iter().all(|n| *n == session::table::DECODING_NICE.max(caller)), "{nices:?} (caller {caller})");
    assert_eq!(own_nice(), caller, "the caller's own priority is left alone");
}

/// The patched zstd (vendor/zstd): a thread's decoders share a pool of
/// decompression contexts, each given back reset. What one decoder leaves
/// behind (a frame half read, an error, a dictionary) must not reach the
/// next one on the same thread.
mod zstd_pool {
    use std::io::Read;

    fn payload(seed: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) % 17).collect()
    }

    /// `count` payloads of `first_len`, `first_len + step_len`, ... bytes,
    /// each with its zstd frame: (frame, payload).
    fn frames(count: u8, first_len: usize, step_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..count)
            .map(|k| {
                let data = payload(k, first_len + step_len * k as usize);
                (zstd::bulk::compress(&data, 3).unwrap(), data)
            })
            .collect()
    }

    fn decoded(frame: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = vec![];
        zstd::Decoder::with_buffer(frame)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn many_decoders_on_one_thread_each_give_their_own_frame() {
        // More decoders than the pool keeps, alive at once and one after another.
        let frames = frames(12, 1000, 300);
        for (frame, data) in &frames {
            assert_eq!(&decoded(frame).unwrap(), data);
        }
        let mut open: Vec<_> = frames.iter().map(|(f, _)| zstd::Decoder::with_buffer(&f[..]).unwrap()).collect();
        for (decoder, (_, data)) in open.iter_mut().zip(&frames).rev() {
            let mut out = vec![];
            decoder.read_to_end(&mut out).unwrap();
            assert_eq!(&out, data);
        }
    }

    #[test]
    fn a_frame_left_half_read_or_broken_does_not_reach_the_next_decoder() {
        let (a, b) = (payload(1, 200_000), payload(2, 5_000));
        let (frame_a, frame_b) = (zstd::bulk::compress(&a, 3).unwrap(), zstd::bulk::compress(&b, 3).unwrap());
        // Half of a's frame read, then its decoder dropped.
        let mut half = vec![0u8; 100_000];
        zstd::Decoder::with_buffer(&frame_a[..]).unwrap().read_exact(&mut half).unwrap();
        assert_eq!(half, a[..100_000]);
        assert_eq!(decoded(&frame_b).unwrap(), b);
        // A damaged frame fails, and the next decodes.
        let mut damaged = frame_a.clone();
        let middle = damaged.len() / 2;
        damaged[middle..].iter_mut().for_each(|x| *x ^= 0xA5);
        assert!(decoded(&damaged).is_err_and(|e| !e.to_string().is_empty()));
        assert_eq!(decoded(&frame_b).unwrap(), b);
        // A frame cut short fails, and the next decodes.
        assert!(decoded(&frame_a[..frame_a.len() / 3]).is_err());
        assert_eq!(decoded(&frame_a).unwrap(), a);
    }

    #[test]
    fn a_dictionary_does_not_stay_with_the_pooled_context() {
        let dictionary = payload(9, 4096);
        let data = payload(3, 50_000);
        let with_dictionary = zstd::bulk::Compressor::with_dictionary(3, &dictionary).unwrap().compress(&data).unwrap();
        let mut out = vec![];
        zstd::Decoder::with_dictionary(&with_dictionary[..], &dictionary).unwrap().read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
        // The same frame without its dictionary is refused, not decoded
        // by the dictionary a pooled context kept.
        assert!(decoded(&with_dictionary).is_err());
        let plain = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(decoded(&plain).unwrap(), data);
    }

    #[test]
    fn decoders_on_other_threads_decode_beside_each_other() {
        let frames = frames(8, 20_000, 1000);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..20 {
                        for (frame, data) in &frames {
                            assert_eq!(&decoded(frame).unwrap(), data);
                        }
                    }
                });
            }
        });
    }
}
