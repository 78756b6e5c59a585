//! The commands that need the device build: recording, the emulators, the
//! camera check, calibration, tracking, synthetic boards and videos, the
//! live virtual lab, the session viewer, and checks that decode videos or
//! read the tracker's files.

use lab::{Error, Progress, Result, SessionDir};
use lab_devices::emulate::{AsciiEmulator, Ft300Emulator, RobotEmulator};
use rodlab_cli::cmd_lab::{
    print_check, synth_request, CalibrateArgs, CameraCommand, EmulateCommand, RecordArgs, SessionCommand, SynthCommand, SynthSessionArgs, TrackArgs,
};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An argument that clap took as text, parsed by the device types' own
/// parser (a bad value: exit 2, naming the flag).
fn parse_arg<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| Error::input(format!("--{flag}: {e}")))
}

/// A flag that Ctrl-C, SIGTERM and SIGHUP set: the process then stops
/// cleanly (a session is finalised) instead of dying. A second signal
/// always ends it at once (exit 130), whatever it waits for: what is on
/// disk stays, the session is not finalised.
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::Relaxed) {
            eprintln!("rodlab: second signal: stopping now (what is on disk stays; the session is not finalised)");
            std::process::exit(130);
        }
    });
    stop
}

/// Returns at Ctrl-C (`stop` set), after `duration_s`, or once `finished()`.
fn wait_for_stop(stop: &AtomicBool, duration_s: Option<f64>, finished: impl Fn() -> bool) {
    let started = Instant::now();
    while !finished() && !stop.load(Ordering::Relaxed) && !duration_s.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A line on standard output that may go to a pipe nobody reads: never panic on it.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

pub fn record(a: RecordArgs, progress: &dyn Progress) -> Result<()> {
    let (rig, rig_text) = session::Rig::from_file(&a.rig)?;
    let out = SessionDir::new(&a.out);
    let view = match &a.view {
        Some(addr) => {
            Some(lab_devices::view::live::LiveOptions::from_files(addr, a.view_window_s, a.markers.as_deref(), a.calibration.as_deref(), a.rod.as_deref())?)
        }
        None => None,
    };
    let req = lab_devices::record::RecordRequest {
        rig: &rig,
        rig_path: &a.rig,
        rig_text: &rig_text,
        out: &out,
        append: a.append,
        duration_s: a.duration,
        stop: stop_on_ctrl_c(),
        view,
    };
    let r = lab_devices::record::record(&req, progress)?;
    if let Some(n) = r.view_dropped_updates.filter(|n| *n > 0) {
        println!("live view: {n} updates dropped for browsers that did not keep up (the recording lost nothing for it)");
    }
    for w in &r.warnings {
        eprintln!("rodlab: warning: {w}");
    }
    for d in &r.devices {
        println!("{}: {} rows, {} gaps ({} packages missing), {} reconnects, {} rejected", d.name, d.rows, d.gaps, d.missing_samples, d.reconnects, d.rejected);
        if let Some(e) = &d.last_error {
            println!("{}: last error: {e}", d.name);
        }
    }
    if let Some(cpu_s) = r.cpu_s {
        println!("recorder CPU: {cpu_s:.1} s over {:.1} s ({:.1} % of one core)", r.wall_time_s, 100.0 * cpu_s / r.wall_time_s.max(1e-9));
    }
    println!("wrote session {}", r.session.path().display());
    Ok(())
}

/// Runs a serial emulator until Ctrl-C or `duration`, then prints what it sent.
fn run_serial(duration: Option<f64>, unit: &str, run: impl FnOnce(Arc<AtomicBool>) -> Result<u64> + Send + 'static) -> Result<()> {
    let stop = stop_on_ctrl_c();
    let s = stop.clone();
    let worker = std::thread::spawn(move || run(s));
    wait_for_stop(&stop, duration, || worker.is_finished());
    stop.store(true, Ordering::Relaxed);
    let sent = worker.join().map_err(|_| Error::computation("emulator thread panicked"))??;
    say(&format!("sent {sent} {unit}"));
    Ok(())
}

pub fn emulate(cmd: EmulateCommand) -> Result<()> {
    match cmd {
        EmulateCommand::Robot { bind, controller, amplitude_m, duration, quirk, trajectory, start_at_unix_s } => {
            let controller: lab_devices::emulate::Controller = parse_arg("controller", &controller)?;
            let quirk: lab_devices::emulate::Quirks = parse_arg("quirk", &quirk)?;
            let trajectory = trajectory.as_deref().map(lab::tables::read_trajectory).transpose()?;
            let emulator = RobotEmulator { bind, controller, amplitude_m, quirks: quirk, trajectory, start_at_unix_s, wrench_base: None };
            let mut emu = emulator.start()?;
            let version = controller.version_string();
            say(&format!("RTDE emulator listening on {} (URControl {version}, {} Hz)", emu.addr, controller.rate_hz()));
            wait_for_stop(&stop_on_ctrl_c(), duration, || false);
            emu.stop();
            say(&format!("sent {} data packages, left out {}", emu.sent.load(Ordering::Relaxed), emu.lost.load(Ordering::Relaxed)));
            Ok(())
        }
        EmulateCommand::Netft { bind, rate_hz, wrench, counts_per_force, counts_per_torque, quirk, duration } => {
            let quirk: lab_devices::emulate::NetFtQuirks = parse_arg("quirk", &quirk)?;
            let spec = lab_devices::emulate::NetFtEmulatorSpec {
                bind,
                rate_hz,
                wrench: wrench.exactly::<6>("wrench", "FX,FY,FZ,MX,MY,MZ")?,
                counts_per_force,
                counts_per_torque,
                quirks: quirk,
            };
            let mut emu = spec.start()?;
            say(&format!("Net F/T emulator: RDT on udp {}, calibration on tcp port {}, {rate_hz} Hz", emu.addr, emu.addr.port() - 1));
            wait_for_stop(&stop_on_ctrl_c(), duration, || false);
            emu.stop();
            say(&format!("sent {} records, left out {}", emu.sent.load(Ordering::Relaxed), emu.lost.load(Ordering::Relaxed)));
            Ok(())
        }
        EmulateCommand::Ft300 { port, rate_hz, inject_garbage_every, duration, wrench, start_at_unix_s, bias, noise_n, noise_nm, seed, streaming_at_start } => {
            let ft = Ft300Emulator {
                inject_garbage_every,
                wrench: wrench.as_deref().map(lab::tables::read_wrench).transpose()?,
                start_at_unix_s,
                bias: bias.exactly::<6>("bias", "FX,FY,FZ,MX,MY,MZ")?,
                noise_n,
                noise_nm,
                seed,
                streaming_at_power_up: streaming_at_start,
                ..Ft300Emulator::new(rate_hz)
            };
            let line = lab_devices::emulate::open_port(&port, 19_200)?;
            run_serial(duration, "frames", move |stop| ft.run(line, stop))
        }
        EmulateCommand::AsciiSensor { port, rate_hz, separator, values, start_at_unix_s, duration } => {
            let separator = session::rig::Separator::parse(&separator).map_err(|e| Error::input(format!("--separator: {e}")))?;
            let values = values.as_deref().map(|p| lab::tables::read_time_table(p, None)).transpose()?.map(|t| t.rows);
            let cells = AsciiEmulator { rate_hz, separator, values, start_at_unix_s };
            let line = lab_devices::emulate::open_port(&port, 115_200)?;
            run_serial(duration, "lines", move |stop| cells.run(line, stop))
        }
    }
}

pub fn camera(cmd: CameraCommand) -> Result<()> {
    let CameraCommand::Check { rig, markers, camera, frames, out } = cmd;
    let c = lab_devices::camera::check(&lab_devices::camera::CameraCheckRequest { rig, markers, camera, frames, out })?;
    for w in &c.warnings {
        eprintln!("rodlab: warning: {w}");
    }
    for (name, value) in &c.reported {
        println!("camera '{}': {name} = {value}", c.camera);
    }
    println!("marker  found  area_px  sat_margin  val_margin  hue_margin_deg  sharpness");
    for l in &c.check.markers {
        println!(
            "{:>6}  {:>2}/{:<2}  {:>7.1}  {:>10.3}  {:>10.3}  {:>14.1}  {:>9.1}",
            l.index, l.found_frames, c.check.frames, l.area_px, l.saturation_margin, l.value_margin, l.hue_margin_deg, l.sharpness
        );
    }
    println!("wrote {} and {}", c.image.display(), c.table.display());
    if !c.check.ok() {
        return Err(Error::computation(format!("camera '{}': {}", c.camera, c.check.verdict())));
    }
    println!("{}", c.check.verdict());
    Ok(())
}

/// `session view`, and `session check` with the videos decoded.
pub fn session(cmd: SessionCommand) -> Result<()> {
    match cmd {
        SessionCommand::Check { dir, max_outage_s, skip_videos } => {
            lab::error::non_negative("--max-outage-s", max_outage_s)?;
            let report = lab_devices::check_session(&SessionDir::new(&dir), max_outage_s, !skip_videos)?;
            print_check(&report, &dir)
        }
        SessionCommand::View { dir, addr, duration } => {
            let replay = lab_devices::view::replay::serve(&SessionDir::new(&dir), &addr)?;
            let (start_s, end_s) = replay.site.span_s();
            say(&format!("session {} ({start_s:.2} s to {end_s:.2} s) at {}", dir.display(), replay.server.url()));
            say("Ctrl-C to stop");
            wait_for_stop(&stop_on_ctrl_c(), duration, || false);
            Ok(())
        }
        other => rodlab_cli::cmd_lab::session(other),
    }
}

pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    let Some(images) = &a.images else { return calibrate_set(a) };
    let out = a.out.clone().unwrap_or_else(|| "camera.toml".into());
    let c = lab_devices::track::calibrate(images, &a.board, a.square_m, a.plane_image.as_deref(), a.max_rms_px, &out)?;
    let (cam, s) = (&c.camera, &c.summary);
    println!("board found in {} of {} images", s.used.len(), s.images);
    for r in &s.rejected {
        println!("  no board: {}", r.display());
    }
    for (copy, of) in &s.duplicates {
        println!("  dropped, the same view as {}: {}", of.display(), copy.display());
    }
    println!(
        "fx {:.2} px, fy {:.2} px, cx {:.2} px, cy {:.2} px, k1 {:.4}, k2 {:.4}; RMS reprojection {:.3} px",
        cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px, cam.distortion[0], cam.distortion[1], s.rms_px
    );
    println!("plane of motion from {}", s.plane_image.display());
    println!("wrote {}", out.display());
    Ok(())
}

/// `calibrate --camera-images`: a camera set.
fn calibrate_set(a: CalibrateArgs) -> Result<()> {
    let out = a.out.clone().unwrap_or_else(|| "cameras.toml".into());
    let c = lab_devices::track::calibrate_set(&a.camera_images, &a.board, a.square_m, a.plane_view.as_deref(), a.max_rms_px, &out, a.corners_out.as_deref())?;
    for (name, images, used, rms) in &c.summary.cameras {
        println!("camera {name}: board found in {used} of {images} images; RMS reprojection {rms:.3} px after the joint fit");
    }
    for (cam, centre) in c.set.cameras.iter().zip(&c.centres_m) {
        let m = &cam.model;
        println!(
            "  {}: fx {:.2} px, fy {:.2} px, cx {:.2} px, cy {:.2} px, k1 {:.4}; centre ({:.4}, {:.4}, {:.4}) m in the world",
            cam.name, m.fx_px, m.fy_px, m.cx_px, m.cy_px, m.distortion[0], centre[0], centre[1], centre[2]
        );
    }
    println!(
        "{} views shared by two or more cameras; the world is the board in view {}; joint fit in {} iterations",
        c.summary.shared_views, c.summary.plane_view, c.summary.iterations
    );
    println!("wrote {}", out.display());
    if let Some(path) = &a.corners_out {
        println!("wrote {} (the corners the fit used)", path.display());
    }
    Ok(())
}

pub fn track(a: TrackArgs, progress: &dyn Progress) -> Result<()> {
    if a.camera.is_none() {
        return track_set(a, progress);
    }
    let req = rodlab_tracking::track_request(a)?;
    let t = lab_devices::track::track(&req, progress)?;
    rodlab_tracking::print_tracked(&req, &t);
    Ok(())
}

/// `track --cameras`: one video per camera of a set, markers in 3-D.
fn track_set(a: TrackArgs, progress: &dyn Progress) -> Result<()> {
    if a.overlay.is_some() || a.frames.is_some() || a.marker_height_m.is_some() {
        return Err(Error::input(
            "--overlay, --frames and --marker-height-m are for one camera; with --cameras each video's frames table is the one beside it in its session",
        ));
    }
    let req = lab_devices::track::SetTrackRequest {
        inputs: a.inputs,
        cameras: a.cameras.expect("clap: --camera or --cameras"),
        markers: a.markers,
        fps: a.fps,
        out: a.out.clone(),
        epipolar_gate_px: a.epipolar_gate_px,
    };
    let t = lab_devices::track::track_set(&req, progress)?;
    for (name, video) in &t.videos {
        println!("camera {name}: {}", video.display());
    }
    match &t.world_from {
        Some(meta) => println!("positions in the world frame of {}", meta.display()),
        None => println!("positions in the camera set's world (the board in its plane view; no session.toml beside the videos)"),
    }
    for w in &t.warnings {
        eprintln!("rodlab: warning: {w}");
    }
    println!(
        "{} frames, {} markers: {} marker-frames triangulated, {} kept as rays (one camera), {} refused by the epipolar constraint",
        t.frames, t.markers, t.points, t.rays, t.disagreements
    );
    for (name, n) in t.unmatched_frames.iter().filter(|(_, n)| *n > 0) {
        println!("  camera {name}: no frame within half a period for {n} frames");
    }
    println!("wrote {}", a.out.display());
    Ok(())
}

/// `synth session --live`: the virtual lab played through the emulators.
pub fn synth_live(a: SynthSessionArgs, progress: &dyn Progress) -> Result<()> {
    let req = synth_request(&a)?;
    let s = lab_devices::live::record_live_viewed(&req, a.camera_fps, a.view.as_deref(), progress)?.made;
    let stages: Vec<String> = s.truth.stage_wall_s.iter().map(|(n, t)| format!("{n} {t:.1} s")).collect();
    println!("recorded session {} live ({:.2} s of experiment; {}) and its truth in {}", a.out.display(), s.end_s, stages.join(", "), s.truth_dir.display());
    Ok(())
}

pub fn synth(cmd: SynthCommand, progress: &dyn Progress) -> Result<()> {
    match cmd {
        SynthCommand::Session(a) if a.live => synth_live(*a, progress),
        SynthCommand::Session(_) => rodlab_cli::cmd_lab::synth(cmd, progress),
        SynthCommand::Board { out, board, square_m, noise, cameras: Some(n), distance_m, spread_deg } => {
            let folders = lab_devices::track::synth_board_set(&out, &board, square_m, noise, n, distance_m, spread_deg)?;
            let names: Vec<String> = folders.iter().map(|(n, _)| n.clone()).collect();
            println!("wrote the views of cameras {} and true-cameras.toml to {}", names.join(", "), out.display());
            Ok(())
        }
        SynthCommand::Board { out, board, square_m, noise, .. } => {
            let views = lab_devices::track::synth_board(&out, &board, square_m, noise)?;
            println!("wrote {views} views, plane.png and true-camera.toml to {}", out.display());
            Ok(())
        }
        SynthCommand::Video { out, frames, markers, max_speed_px, noise, fps, format, occlude } => {
            let occlusion = match occlude {
                None => None,
                Some(n) => {
                    let [marker, first_frame, count] = n.exactly::<3>("occlude", "M,F,N")?;
                    if [marker, first_frame, count].iter().any(|v| *v < 0.0 || v.fract() != 0.0) {
                        return Err(Error::input("--occlude: expected three whole numbers M,F,N"));
                    }
                    Some(lab_devices::track::Occlusion { marker: marker as usize, first_frame: first_frame as usize, frames: count as usize })
                }
            };
            let req = lab_devices::track::VideoRequest { out: out.clone(), frames, markers, max_speed_px, noise, fps, format: format.clone(), occlusion };
            lab_devices::track::synth_video(&req, progress)?;
            println!("wrote {frames} frames ({format}), truth.csv, true-camera.toml, markers.toml to {}", out.display());
            Ok(())
        }
    }
}
