//! `rodlab record`, `rodlab emulate`, `rodlab session`: recording lab
//! sessions and looking at them.

use crate::input_error;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use record::rig::Rig;
use record::robot::{self, Clock, Status};
use record::rtde::{Emulator, EmulatorConfig};
use record::serial;
use record::serial_emulators::{self, Ft300EmulatorConfig};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab emulate robot --bind 127.0.0.1:30004 &\n  rodlab record --rig configs/rig/emulated.toml --out sessions/dry-run --duration 5\n  rodlab session info sessions/dry-run"
)]
pub struct RecordArgs {
    /// Rig description (devices), e.g. configs/rig/emulated.toml.
    #[arg(long)]
    pub rig: PathBuf,
    /// Session directory to create.
    #[arg(long)]
    pub out: PathBuf,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long)]
    pub duration: Option<f64>,
}

#[derive(Subcommand)]
pub enum EmulateCommand {
    /// A UR controller's RTDE server (standard output variables, recipes, start/pause).
    Robot {
        /// Address to listen on (loopback by default).
        #[arg(long, default_value = "127.0.0.1:30004")]
        bind: String,
        /// 500 (e-Series) or 125 (CB3).
        #[arg(long, default_value_t = 500.0)]
        rate_hz: f64,
        /// Flange motion: amplitude [m] of the sinusoidal trajectory.
        #[arg(long, default_value_t = 0.02)]
        amplitude_m: f64,
        /// Stop after this many seconds (default: until killed).
        #[arg(long)]
        duration: Option<f64>,
        /// Depart from a controller to test clients: early-data (a data package before the start reply), text (text messages during setup), drop-after=N (close after N packages).
        #[arg(long, default_value = "")]
        quirk: record::rtde::Quirks,
        /// Play these flange poses instead of the sinusoid: CSV t_s,x_m,y_m,z_m,rx,ry,rz (robot base frame, controller time from the emulator's start; held after the end).
        #[arg(long)]
        trajectory: Option<PathBuf>,
        /// Wall-clock time [s since 1970, UTC] at which the trajectory's t = 0 plays (held at its first pose before); lets the emulators play one experiment together.
        #[arg(long, requires = "trajectory")]
        start_at_unix_s: Option<f64>,
    },
    /// A Robotiq FT 300 on a serial device: answers the Modbus start command,
    /// streams 16-byte frames (frame counter on Mz, 0.001 N m per frame), stops at 0xFF.
    #[command(
        after_help = "Example (a pty pair: the emulator writes to A, the rig reads B):\n  socat -d -d pty,raw,echo=0,link=/tmp/ft300-a pty,raw,echo=0,link=/tmp/ft300-b &\n  rodlab emulate ft300 --port /tmp/ft300-a"
    )]
    Ft300 {
        /// Serial device to write to (one end of a socat pty pair).
        #[arg(long)]
        port: String,
        #[arg(long, default_value_t = 100.0)]
        rate_hz: f64,
        /// Every N frames, also send garbage, a truncated and a corrupted frame.
        #[arg(long)]
        inject_garbage_every: Option<u64>,
        /// Play this wrench instead of the built-in signal: CSV t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm (sensor frame; time from the start command).
        #[arg(long)]
        wrench: Option<PathBuf>,
        /// Wall-clock time [s since 1970, UTC] of the wrench file's t = 0 (default: the start command).
        #[arg(long, requires = "wrench")]
        start_at_unix_s: Option<f64>,
        /// Bias added to every frame: "fx,fy,fz,mx,my,mz" [N, N m].
        #[arg(long, default_value = "0,0,0,0,0,0")]
        bias: String,
        /// Noise per force component [N] (a real FT 300: about 0.1 N).
        #[arg(long, default_value_t = 0.0)]
        noise_n: f64,
        /// Noise per moment component [N m].
        #[arg(long, default_value_t = 0.0)]
        noise_nm: f64,
        /// Seed of the noise.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        duration: Option<f64>,
    },
    /// An ASCII line sensor: `seq,t_us,force_mn` lines (scale t by 1e-6 and force by 1e-3 in the rig).
    #[command(
        name = "ascii-sensor",
        after_help = "Example:\n  socat -d -d pty,raw,echo=0,link=/tmp/ascii-a pty,raw,echo=0,link=/tmp/ascii-b &\n  rodlab emulate ascii-sensor --port /tmp/ascii-a --rate-hz 1000"
    )]
    AsciiSensor {
        #[arg(long)]
        port: String,
        #[arg(long, default_value_t = 1000.0)]
        rate_hz: f64,
        /// Field separator (one character; " " for whitespace).
        #[arg(long, default_value = ",")]
        separator: String,
        /// Play these values instead of the built-in signal: CSV with a header, t_s then one column per field printed (each row held until the next).
        #[arg(long)]
        values: Option<PathBuf>,
        /// Wall-clock time [s since 1970, UTC] of the values file's t = 0.
        #[arg(long, requires = "values")]
        start_at_unix_s: Option<f64>,
        #[arg(long)]
        duration: Option<f64>,
    },
}

#[derive(Subcommand)]
pub enum SessionCommand {
    /// Streams, rows, rates, duration and gaps of a session.
    Info { dir: PathBuf },
    /// Reads every chunk of every stream and reports damage precisely.
    Check { dir: PathBuf },
}

pub fn record(a: RecordArgs) -> Result<()> {
    let (rig, rig_text) = Rig::from_file(&a.rig).map_err(|e| input_error(e.to_string()))?;
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(input_error("--duration: must be a positive number of seconds"));
        }
    }
    // Fail early and clearly: every device must answer and know its variables.
    for r in rig.robot_configs() {
        robot::probe(&r).map_err(|e| input_error(format!("{}: robot '{}' at {}: {e}", a.rig.display(), r.name, r.address)))?;
    }
    let mut cameras = vec![];
    for cfg in rig.camera_configs() {
        let capture = record::camera::open(&cfg).map_err(|e| input_error(format!("{}: {e}", a.rig.display())))?;
        cameras.push((cfg, capture));
    }
    let mut serial_ports = vec![];
    for (cfg, sensor) in rig.serial_sensors() {
        let port = serial::open(&cfg.port, cfg.baud).map_err(|e| input_error(format!("{}: {} '{}': {e}", a.rig.display(), "sensor", cfg.name)))?;
        serial_ports.push((cfg, sensor, port));
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    // The clock and start_unix_s are read together: t_host_ns counts from start_unix_s.
    let clock = Clock::start();
    session::SessionMeta::start(&rig.session.operator_notes, &a.rig.display().to_string(), &rig_text, rig.frames).write(&a.out)?;

    let stop = stop_on_ctrl_c();
    let mut threads = vec![];
    let mut statuses = vec![];
    for r in rig.robot_configs() {
        let status = Arc::new(Status::default());
        statuses.push((r.name.clone(), r.frequency_hz, status.clone()));
        let (s, dir) = (stop.clone(), a.out.clone());
        threads.push(std::thread::spawn(move || robot::record(&r, &dir, clock, s, status).map_err(anyhow::Error::from)));
    }
    for (cfg, capture) in cameras {
        let status = Arc::new(Status::default());
        statuses.push((cfg.name.clone(), 0.0, status.clone()));
        let (s, dir) = (stop.clone(), a.out.clone());
        threads.push(std::thread::spawn(move || record::camera::record(&cfg, capture, &dir, clock, s, status).map_err(anyhow::Error::from)));
    }
    for (cfg, sensor, port) in serial_ports {
        let status = Arc::new(Status::default());
        statuses.push((cfg.name.clone(), 0.0, status.clone()));
        let (s, dir) = (stop.clone(), a.out.clone());
        threads.push(std::thread::spawn(move || serial::record(&cfg, sensor, port, &dir, clock, s, status).map_err(anyhow::Error::from)));
    }
    let started = Instant::now();
    let bar = indicatif::ProgressBar::new_spinner();
    let mut last_rows: Vec<u64> = vec![0; statuses.len()];
    let mut last_t = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        if a.duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        let dt = last_t.elapsed().as_secs_f64();
        last_t = Instant::now();
        let line: Vec<String> = statuses
            .iter()
            .zip(last_rows.iter_mut())
            .map(|((name, _, st), last)| {
                let rows = st.rows.load(Ordering::Relaxed);
                let rate = (rows - *last) as f64 / dt;
                *last = rows;
                format!(
                    "{name}: {rate:.0} Hz, {rows} rows, {} gaps, {} reconnects, {} errors, {} rejected",
                    st.gaps.load(Ordering::Relaxed),
                    st.reconnects.load(Ordering::Relaxed),
                    st.errors.load(Ordering::Relaxed),
                    st.rejected.load(Ordering::Relaxed)
                )
            })
            .collect();
        bar.set_message(format!("{:.1} s | {}", started.elapsed().as_secs_f64(), line.join(" | ")));
        bar.tick();
    }
    bar.finish_and_clear();
    for t in threads {
        t.join().map_err(|_| anyhow::anyhow!("a recorder thread panicked"))??;
    }
    for (name, _, st) in &statuses {
        println!(
            "{name}: {} rows, {} gaps ({} packages missing), {} reconnects, {} rejected",
            st.rows.load(Ordering::Relaxed),
            st.gaps.load(Ordering::Relaxed),
            st.missing_packages.load(Ordering::Relaxed),
            st.reconnects.load(Ordering::Relaxed),
            st.rejected.load(Ordering::Relaxed)
        );
    }
    if let Some(cpu_s) = own_cpu_seconds() {
        let wall = started.elapsed().as_secs_f64();
        println!("recorder CPU: {cpu_s:.1} s over {wall:.1} s ({:.1} % of one core)", 100.0 * cpu_s / wall.max(1e-9));
    }
    println!("wrote session {}", a.out.display());
    Ok(())
}

/// A wrench CSV `t_s,fx_n,fy_n,fz_n,mx_nm,my_nm,mz_nm` for the FT 300 emulator.
fn read_wrench_table(path: &std::path::Path) -> Result<serial_emulators::WrenchTable> {
    #[derive(serde::Deserialize)]
    struct Row {
        t_s: f64,
        fx_n: f64,
        fy_n: f64,
        fz_n: f64,
        mx_nm: f64,
        my_nm: f64,
        mz_nm: f64,
    }
    let mut reader = csv::Reader::from_path(path).map_err(|e| input_error(format!("{}: {e}", path.display())))?;
    let mut samples = vec![];
    for (i, row) in reader.deserialize::<Row>().enumerate() {
        let r = row.map_err(|e| input_error(format!("{}: row {}: {e}", path.display(), i + 1)))?;
        samples.push((r.t_s, [r.fx_n, r.fy_n, r.fz_n, r.mx_nm, r.my_nm, r.mz_nm]));
    }
    serial_emulators::WrenchTable::new(samples).map_err(|e| input_error(format!("{}: {e}", path.display())))
}

/// A values CSV for the ASCII emulator: header `t_s,NAME...`, numbers.
fn read_value_table(path: &std::path::Path) -> Result<serial_emulators::ValueTable> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| input_error(format!("{}: {e}", path.display())))?;
    let header = reader.headers().map_err(|e| input_error(format!("{}: {e}", path.display())))?.clone();
    if header.get(0) != Some("t_s") || header.len() < 2 {
        return Err(input_error(format!("{}: header: expected t_s then one column per value", path.display())));
    }
    let mut rows = vec![];
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| input_error(format!("{}: row {}: {e}", path.display(), i + 1)))?;
        let v: Vec<f64> = rec
            .iter()
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|e| input_error(format!("{}: row {}: {e}", path.display(), i + 1)))?;
        rows.push((v[0], v[1..].to_vec()));
    }
    serial_emulators::ValueTable::new(rows).map_err(|e| input_error(format!("{}: {e}", path.display())))
}

/// CPU time (user + system) of this process so far, from /proc (Linux;
/// USER_HZ is 100 there).
fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

pub fn emulate(cmd: EmulateCommand) -> Result<()> {
    match cmd {
        EmulateCommand::Robot { bind, rate_hz, amplitude_m, duration, quirk, trajectory, start_at_unix_s } => {
            check_rate(rate_hz, 1000.0)?;
            let trajectory = match &trajectory {
                Some(p) => {
                    let samples = crate::simulate_cmd::read_trajectory(p)?;
                    Some(std::sync::Arc::new(lie::trajectory::PoseTrajectory::from_ur(samples).map_err(|e| input_error(format!("{}: {e}", p.display())))?))
                }
                None => None,
            };
            let trajectory_delay_s = start_at_unix_s.map(unix_time).transpose()?.map_or(0.0, |t| -serial_emulators::seconds_since(t));
            let emu =
                Emulator::spawn(&bind, EmulatorConfig { rate_hz, amplitude_m, quirks: quirk, trajectory, trajectory_delay_s, ..EmulatorConfig::default() })
                    .map_err(|e| input_error(format!("--bind {bind}: {e}")))?;
            // Output may go to a pipe nobody reads: never panic on it.
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "RTDE emulator listening on {} at {rate_hz} Hz", emu.addr);
            wait_for_stop(&stop_on_ctrl_c(), duration, || false);
            let mut emu = emu;
            emu.stop();
            let _ = writeln!(std::io::stdout(), "sent {} data packages", emu.sent.load(Ordering::Relaxed));
            Ok(())
        }
        EmulateCommand::Ft300 { port, rate_hz, inject_garbage_every, duration, wrench, start_at_unix_s, bias, noise_n, noise_nm, seed } => {
            check_rate(rate_hz, 1000.0)?;
            if inject_garbage_every == Some(0) {
                return Err(input_error("--inject-garbage-every: must be at least 1"));
            }
            let wrench = wrench.as_deref().map(read_wrench_table).transpose()?.map(std::sync::Arc::new);
            let bias = crate::synth_session::parse_bias(&bias, "--bias")?;
            for (name, v) in [("--noise-n", noise_n), ("--noise-nm", noise_nm)] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(input_error(format!("{name}: must be >= 0, got {v}")));
                }
            }
            let wrench_start = start_at_unix_s.map(unix_time).transpose()?;
            let cfg = Ft300EmulatorConfig { inject_garbage_every, wrench, wrench_start, bias, noise_n, noise_nm, seed, ..Ft300EmulatorConfig::new(rate_hz) };
            run_serial_emulator(duration, move |stop| serial_emulators::run_ft300(&port, &cfg, stop), "frames")
        }
        EmulateCommand::AsciiSensor { port, rate_hz, separator, values, start_at_unix_s, duration } => {
            check_rate(rate_hz, 10_000.0)?;
            let sep = record::ascii::Separator::parse(&separator).map_err(|e| input_error(format!("--separator: {e}")))?;
            let playback = match &values {
                Some(p) => Some(serial_emulators::AsciiPlayback {
                    table: std::sync::Arc::new(read_value_table(p)?),
                    start: start_at_unix_s.map(unix_time).transpose()?,
                }),
                None => None,
            };
            run_serial_emulator(duration, move |stop| serial_emulators::run_ascii(&port, rate_hz, &sep, playback.as_ref(), stop), "lines")
        }
    }
}

/// A wall-clock instant from seconds since 1970 (UTC).
fn unix_time(s: f64) -> Result<std::time::SystemTime> {
    if !(s.is_finite() && s > 0.0) {
        return Err(input_error(format!("--start-at-unix-s: must be a positive number of seconds since 1970, got {s}")));
    }
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s))
}

/// A flag that Ctrl-C sets (the process then stops cleanly instead of dying).
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    stop
}

/// Returns at Ctrl-C (`stop` set), after `duration_s`, or once `finished()`.
fn wait_for_stop(stop: &AtomicBool, duration_s: Option<f64>, finished: impl Fn() -> bool) {
    let started = Instant::now();
    while !finished() && !stop.load(Ordering::Relaxed) && !duration_s.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn check_rate(rate_hz: f64, max: f64) -> Result<()> {
    if !(rate_hz > 0.0 && rate_hz <= max) {
        return Err(input_error(format!("--rate-hz: must be in (0, {max}]")));
    }
    Ok(())
}

/// Runs a serial emulator until Ctrl-C or `duration`, then prints what it sent.
fn run_serial_emulator(
    duration: Option<f64>,
    run: impl FnOnce(Arc<AtomicBool>) -> Result<u64, serial::SerialError> + Send + 'static,
    unit: &str,
) -> Result<()> {
    let stop = stop_on_ctrl_c();
    let s = stop.clone();
    let worker = std::thread::spawn(move || run(s));
    wait_for_stop(&stop, duration, || worker.is_finished());
    stop.store(true, Ordering::Relaxed);
    let sent = worker.join().map_err(|_| anyhow::anyhow!("emulator thread panicked"))?.map_err(|e| match e {
        serial::SerialError::Open { .. } => input_error(e.to_string()),
        e => anyhow::Error::from(e),
    })?;
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "sent {sent} {unit}");
    Ok(())
}

pub fn session(cmd: SessionCommand) -> Result<()> {
    match cmd {
        SessionCommand::Info { dir } => {
            let streams = dir.join("streams");
            let mut names: Vec<PathBuf> = std::fs::read_dir(&streams)
                .map_err(|e| input_error(format!("{}: not a session ({e})", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            names.sort();
            println!("session {}", dir.display());
            for n in names {
                let t = session::Table::read_chunks(&n).map_err(|e| input_error(e.to_string()))?;
                let name = n.file_name().unwrap_or_default().to_string_lossy().to_string();
                if t.height() == 0 {
                    println!("  {name}: 0 rows");
                    continue;
                }
                let th = t.i64("t_host_ns").map_err(|e| input_error(e.to_string()))?;
                let dur = (th[th.len() - 1] - th[0]) as f64 * 1e-9;
                let rate = if dur > 0.0 { (th.len() - 1) as f64 / dur } else { 0.0 };
                let mut line = format!("  {name}: {} rows, {:.3} s, {:.1} Hz", th.len(), dur, rate);
                if t.has("timestamp") {
                    let ts = t.f64("timestamp").map_err(|e| input_error(e.to_string()))?;
                    let dts: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
                    let mut sorted = dts.clone();
                    sorted.sort_by(f64::total_cmp);
                    let period = sorted.get(sorted.len() / 2).cloned().unwrap_or(0.0);
                    let gaps = dts.iter().filter(|d| **d > 1.5 * period || **d <= 0.0).count();
                    line.push_str(&format!(", device period {:.4} s, {gaps} gaps", period));
                }
                println!("{line}");
            }
            Ok(())
        }
        SessionCommand::Check { dir } => {
            let reports = session::check_session(&dir).map_err(|e| input_error(e.to_string()))?;
            let bad: Vec<_> = reports.iter().filter(|r| r.problem.is_some()).collect();
            let rows: usize = reports.iter().map(|r| r.rows).sum();
            println!("checked {} chunks, {rows} rows", reports.len());
            for r in &bad {
                println!("  damaged: {}: {}", r.path.display(), r.problem.as_deref().unwrap_or(""));
            }
            if bad.iter().any(|r| !r.path.to_string_lossy().ends_with(".tmp")) {
                return Err(anyhow::anyhow!("{} damaged chunk(s) in {}", bad.len(), dir.display()));
            }
            println!("ok: every completed chunk is readable{}", if bad.is_empty() { "" } else { " (unfinished chunks listed above)" });
            Ok(())
        }
    }
}
