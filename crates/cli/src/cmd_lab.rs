//! The lab commands' arguments (`record`, `emulate`, `camera`, `session`,
//! `calibrate`, `track`, `synth`, `import`) and those of them that need no
//! device or video: `session info/check/export`, `synth session`, `import`.
//! The others run in the device build (`rodlab_devices`, see [`crate::Devices`]).

use crate::args::Numbers;
use clap::{Args, Subcommand};
use lab::synth::SynthRequest;
use lab::{Error, Progress, Result, SessionDir};
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab emulate robot --bind 127.0.0.1:30004 &\n  rodlab record --rig configs/rig/emulated.toml --out sessions/dry-run --duration 5\n  rodlab record --rig configs/rig/emulated.toml --out sessions/dry-run --append   # a second segment, sessions/dry-run/segment-02\n  rodlab session info sessions/dry-run\n  rodlab record --rig configs/rig/emulated.toml --out sessions/watched --view   # open the printed URL\n  rodlab record --rig RIG --out DIR --view 127.0.0.1:8765 --markers configs/markers.toml --calibration camera.toml --rod ROD   # with live strain\n\nThe directory must be empty (or new): a recorder never takes over a session. Ctrl-C, SIGTERM and SIGHUP stop the recording and finalise the session."
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
    /// OUT already holds a session: record a new segment inside it (OUT/segment-NN, its own start time).
    #[arg(long)]
    pub append: bool,
    /// Serve a live view in the browser while recording (devices, plots, the camera with its markers, the strain) on ADDR; the URL is printed. Loopback by default.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    pub view: Option<String>,
    /// The view's marker detection settings, markers.toml (default: red markers).
    #[arg(long, requires = "view")]
    pub markers: Option<PathBuf>,
    /// The camera's calibration, camera.toml (rodlab calibrate), or a camera set's, cameras.toml (rodlab calibrate --camera-images; its cameras are the rig's of the same names, their markers triangulated): the view places the markers in the world.
    #[arg(long, requires = "view")]
    pub calibration: Option<PathBuf>,
    /// A rod file: with --calibration, the view observes the rod's strain live.
    #[arg(long, requires = "view")]
    pub rod: Option<PathBuf>,
    /// Seconds of history in the view's time plots.
    #[arg(long, default_value_t = 20.0)]
    pub view_window_s: f64,
}

#[derive(Subcommand)]
pub enum EmulateCommand {
    /// A UR controller's RTDE server (standard output variables, recipes, start/pause).
    Robot {
        /// Address to listen on (loopback by default).
        #[arg(long, default_value = "127.0.0.1:30004")]
        bind: String,
        /// The controller played: e-series (URControl 5.11, 500 Hz) or cb3 (URControl 3.15, 125 Hz); a lower requested rate is served by skipping control cycles, a higher one refused.
        #[arg(long, default_value = "e-series")]
        controller: String,
        /// Flange motion: amplitude [m] of the sinusoidal trajectory.
        #[arg(long, default_value_t = 0.02)]
        amplitude_m: f64,
        /// Stop after this many seconds (default: until killed).
        #[arg(long)]
        duration: Option<f64>,
        /// Depart from a controller to test clients: early-data (a data package before the start reply), text (text messages during setup), drop-after=N (close after N packages), lose=P (leave out a fraction P of the packages, the clock going on), exception-after=N (an EXCEPTION text message after N packages), ignore-pause (never confirm a pause), trickle-after-pause (answer a pause with a 65,535-byte header, then a byte every 0.5 s), trickle-handshake-from=N (the same from the N-th handshake on).
        #[arg(long, default_value = "")]
        quirk: String,
        /// Play these flange poses instead of the sinusoid: CSV t_s,x_m,y_m,z_m,rx,ry,rz (robot base frame, controller time from the emulator's start; held after the end).
        #[arg(long)]
        trajectory: Option<PathBuf>,
        /// Wall-clock time [s since 1970, UTC] at which the trajectory's t = 0 plays (held at its first pose before); lets the emulators play one experiment together.
        #[arg(long, requires = "trajectory")]
        start_at_unix_s: Option<f64>,
    },
    /// A Robotiq FT 300 on a serial device: answers the Modbus start command, streams 16-byte frames (frame counter on Mz, 0.001 N m per frame), stops at 0xFF.
    #[command(
        after_help = "Example (a pty pair: the emulator writes to A, the rig reads B):\n  socat -d -d pty,raw,echo=0,link=/tmp/ft300-a pty,raw,echo=0,link=/tmp/ft300-b &\n  rodlab emulate ft300 --port /tmp/ft300-a"
    )]
    Ft300 {
        /// Serial device to write to (one end of a socat pty pair).
        #[arg(long)]
        port: PathBuf,
        /// Frames a second streamed (the FT 300 streams at 100) [Hz].
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
        /// Bias added to every frame: FX,FY,FZ,MX,MY,MZ [N, N m].
        #[arg(long, default_value = "0,0,0,0,0,0", allow_hyphen_values = true)]
        bias: Numbers,
        /// Noise per force component [N] (a real FT 300: about 0.1 N).
        #[arg(long, default_value_t = 0.0)]
        noise_n: f64,
        /// Noise per moment component [N m].
        #[arg(long, default_value_t = 0.0)]
        noise_nm: f64,
        /// Seed of the noise.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Stream from power-up, before any start command (as a sensor left streaming by its last client).
        #[arg(long)]
        streaming_at_start: bool,
        /// Stop after this many seconds (default: until killed).
        #[arg(long)]
        duration: Option<f64>,
    },
    /// An ATI Net F/T: RDT records over UDP (start, stop, bias, sample counts) and its calibration (READCALINFO) over TCP on the port below.
    #[command(
        after_help = "Examples:\n  rodlab emulate netft --bind 127.0.0.1:49152 --wrench 0,0,-4.9,0,0.1,0\n  rodlab emulate netft --bind 127.0.0.1:49152 --quirk lose=0.01,reorder=0.01,duplicate=0.01,status-error-at=5000\n\nA rig reads it with [[netft]] address = \"127.0.0.1:49152\" (the calibration from TCP 49151)."
    )]
    Netft {
        /// UDP address of the RDT server; the calibration's TCP port is the one below.
        #[arg(long, default_value = "127.0.0.1:49152")]
        bind: String,
        /// RDT records a second once streaming [Hz].
        #[arg(long, default_value_t = 1000.0)]
        rate_hz: f64,
        /// The wrench it reads: FX,FY,FZ,MX,MY,MZ [N, N m].
        #[arg(long, default_value = "0,0,0,0,0,0", allow_hyphen_values = true)]
        wrench: Numbers,
        /// Counts per newton (its calibration, read with READCALINFO).
        #[arg(long, default_value_t = 1_000_000)]
        counts_per_force: u32,
        /// Counts per newton metre.
        #[arg(long, default_value_t = 1_000_000)]
        counts_per_torque: u32,
        /// Faults: lose=P, reorder=P, duplicate=P (fractions of the records), status-error-at=N (an error bit from record N on).
        #[arg(long, default_value = "")]
        quirk: String,
        /// Stop after this many seconds (default: until killed).
        #[arg(long)]
        duration: Option<f64>,
    },
    /// An ASCII line sensor: `seq,t_us,force_mn` lines (scale t by 1e-6 and force by 1e-3 in the rig).
    #[command(
        name = "ascii-sensor",
        after_help = "Example:\n  socat -d -d pty,raw,echo=0,link=/tmp/ascii-a pty,raw,echo=0,link=/tmp/ascii-b &\n  rodlab emulate ascii-sensor --port /tmp/ascii-a --rate-hz 1000"
    )]
    AsciiSensor {
        /// Serial device to write to (one end of a socat pty pair).
        #[arg(long)]
        port: PathBuf,
        /// Lines a second [Hz].
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
        /// Stop after this many seconds (default: until killed).
        #[arg(long)]
        duration: Option<f64>,
    },
}

#[derive(Subcommand)]
pub enum ArchiveCommand {
    /// One table of every session under DIR (a row each: start, rig, devices, duration, rows, gaps, outages, markers, strain) with the newest identification under DIR that fitted it (specimen, E, G, rho and their 95 % intervals).
    #[command(
        after_help = "Examples:\n  rodlab archive index sessions\n  rodlab archive index /data/lab --out /data/lab/archive.parquet\n\nWrites DIR/archive.parquet (default) and archive.csv beside it; polars, pandas and DuckDB read either as one dataset:\n  python -c \"import polars as pl; print(pl.read_parquet('sessions/archive.parquet'))\"\nA session is a directory with session.toml; an identification is an identified.toml (identify --out) under DIR that names the session (the newest such file counts). The specimen is the rod file's name (a rod file describes one specimen)."
    )]
    Index {
        /// The archive's directory (sessions and identify outputs, at any depth).
        dir: PathBuf,
        /// The table to write (default: DIR/archive.parquet; CSV beside it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// E, G and rho of every identification under DIR over the days, a colour per specimen, each with its 95 % interval -> OUT/index.html.
    #[command(
        after_help = "Examples:\n  rodlab archive report sessions --out reports/archive\n\nReads DIR as `archive index` does (sessions and identified.toml files at any depth). Each identification is one point at its first session's day; summary.json lists them (specimen, sessions, E, G, rho with intervals)."
    )]
    Report {
        /// The archive's directory.
        dir: PathBuf,
        /// Where the report goes.
        #[arg(long, default_value = "reports/archive")]
        out: PathBuf,
    },
}

pub fn archive(cmd: ArchiveCommand) -> Result<()> {
    match cmd {
        ArchiveCommand::Index { dir, out } => {
            let index = lab::archive::index(&dir)?;
            let (parquet, csv) = lab::archive::write(&index, &out.unwrap_or_else(|| dir.join("archive.parquet")))?;
            let identified = index.rows.iter().filter(|r| r.identification.is_some()).count();
            println!("{} sessions ({identified} with an identification) -> {} and {}", index.rows.len(), parquet.display(), csv.display());
            for w in &index.warnings {
                eprintln!("rodlab: warning: {w}");
            }
            Ok(())
        }
        ArchiveCommand::Report { dir, out } => {
            let index = lab::archive::index(&dir)?;
            let fits = lab::archive::report(&index, &out)?;
            println!("{} identifications of {} sessions -> {}", fits.len(), index.rows.len(), out.join("index.html").display());
            for w in &index.warnings {
                eprintln!("rodlab: warning: {w}");
            }
            Ok(())
        }
    }
}

#[derive(Subcommand)]
pub enum SessionCommand {
    /// Streams (rows, rates, span), devices (outages from the gap tables, reconnects) and segments of a session.
    Info {
        /// Session directory (session.toml, streams/, markers.parquet, ...).
        dir: PathBuf,
    },
    /// Reads every file of a session and names each problem: damaged or drifting chunks, host time running
    /// backwards, unreadable marker/strain tables, videos shorter than their frame tables, devices silent
    /// longer than --max-outage-s or never heard. Exit 1 when anything is wrong.
    #[command(after_help = "Examples:\n  rodlab session check sessions/dry-run\n  rodlab session check sessions/day1 --max-outage-s 5 --skip-videos")]
    Check {
        /// Session directory.
        dir: PathBuf,
        /// A device silent, away or losing samples for longer than this is a problem [s].
        #[arg(long, default_value_t = 1.0)]
        max_outage_s: f64,
        /// Do not decode the videos to count their frames.
        #[arg(long)]
        skip_videos: bool,
    },
    /// Serves the session in the browser with a time slider: each device's streams and state, the video
    /// frame with its tracked markers (markers.parquet), the observed strain (strain.parquet) at any time.
    #[command(
        after_help = "Examples:\n  rodlab session view sessions/lab-day/stick   # open the printed URL\n  rodlab session view sessions/dry-run --addr 127.0.0.1:9000\n\nTrack the video and observe the markers first to see markers and strain."
    )]
    View {
        /// Session directory.
        dir: PathBuf,
        /// Address to serve on (loopback by default; port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8766")]
        addr: String,
        /// Stop serving after this many seconds (default: until Ctrl-C).
        #[arg(long)]
        duration: Option<f64>,
    },
    /// Every table of a session (or of a simulation's output) as CSV, JSON, Parquet or Arrow IPC (columns: the names of docs/reference/session.md; units.csv: each column's unit) and its metadata as JSON, for tools without rodlab.
    #[command(
        after_help = "Examples:\n  rodlab session export sessions/day1 --to exports/day1\n  rodlab session export sessions/day1 --to exports/day1 --aligned --on robot\n  rodlab session export sessions/day1 --to exports/day1 --aligned --on ft300 --match nearest --tolerance-s 0.005\n  rodlab session export sessions/day1 --to exports/day1-arrow --format ipc\n  rodlab session export reports/sim --to exports/sim\n\nWrites session.json, streams/NAME.csv, gaps/DEVICE.csv, markers.csv and strain.csv (those the session has; with --format json, parquet or ipc: .json, .parquet or .arrow). Videos stay where they are.\n--aligned also writes aligned.csv: t_host_ns of the --on stream, then STREAM.COLUMN of every stream, each row taking the other streams' sample at or before it (--match previous) or nearest to it, within --tolerance-s (default: 1.5 sample intervals of each stream), and never one from across an outage in the stream's gap table: such a field is empty.\nA simulation's output (simulate --out) exports its simulated markers as markers.csv under a session's columns, beside sim.csv, sim_nodes.csv, sim_contacts.csv and summary.json."
    )]
    Export {
        /// Session directory, or a simulation's output (simulate --out).
        dir: PathBuf,
        /// Directory to write into (created).
        #[arg(long)]
        to: PathBuf,
        /// Also write aligned.csv: every stream on the host times of one (as-of join).
        #[arg(long)]
        aligned: bool,
        /// With --aligned: the stream whose times are the rows (default: the one with the most samples).
        #[arg(long, requires = "aligned")]
        on: Option<String>,
        /// With --aligned: the streams to join, comma-separated (default: all).
        #[arg(long, requires = "aligned", value_delimiter = ',')]
        streams: Vec<String>,
        /// With --aligned: the farthest a joined sample may be from its row [s] (default: 1.5 x each stream's median interval).
        #[arg(long, requires = "aligned")]
        tolerance_s: Option<f64>,
        /// With --aligned: `previous` (the sample at or before the row) or `nearest`.
        #[arg(long = "match", requires = "aligned", default_value = "previous", value_parser = ["previous", "nearest"])]
        matching: String,
        /// The tables' format (polars' writers): csv, json (an array of rows), parquet or ipc (Arrow IPC, .arrow).
        #[arg(long, default_value = "csv", value_parser = session::TableFormat::NAMES)]
        format: String,
    },
}

#[derive(Subcommand)]
pub enum CameraCommand {
    /// Grab a few frames with the rig's capture settings, detect the markers -> annotated PNG, per-marker table, verdict.
    #[command(
        after_help = "Examples:\n  rodlab camera check --rig my-rig.toml --markers configs/markers.toml --out reports/camera-check\n  rodlab camera check --rig rig.toml --camera side --frames 30 --out /tmp/check\n\nRun it with the rod in place and the light as it will be. Per marker: frames found, blob area, how far its colour sits above saturation_min and value_min (0-1) and inside hue_ranges_deg, and sharpness (variance of the Laplacian; compare markers, and before/after focusing). Exit 1 when a marker is missing, flickers, or its colour is within 0.05 of a threshold; set count in the markers file so that a missing marker can be named."
    )]
    Check {
        /// Rig file whose [[camera]] is checked.
        #[arg(long)]
        rig: PathBuf,
        /// markers.toml (default: red markers).
        #[arg(long)]
        markers: Option<PathBuf>,
        /// The rig's camera by name (default: its first).
        #[arg(long)]
        camera: Option<String>,
        /// Frames to look at.
        #[arg(long, default_value_t = 10)]
        frames: usize,
        /// Writes camera-check.png and camera-check.csv here.
        #[arg(long, default_value = "reports/camera-check")]
        out: PathBuf,
    },
}

pub fn session(cmd: SessionCommand) -> Result<()> {
    match cmd {
        SessionCommand::Info { dir } => {
            let info = lab::info::info(&SessionDir::new(&dir))?;
            println!("session {}", dir.display());
            for w in &info.warnings {
                eprintln!("rodlab: warning: {w}");
            }
            if let Some(m) = &info.meta {
                let end = if m.end_utc.is_empty() { "not finalised (the recorder was killed)".to_string() } else { format!("ended {}", m.end_utc) };
                println!("  started {}, {end}", m.start_utc);
            }
            for s in &info.streams {
                if s.rows == 0 {
                    println!("  {}: 0 rows", s.name);
                    continue;
                }
                let mut line = format!("  {}: {} rows, {:.3} s, {:.1} Hz", s.name, s.rows, s.span_s, s.rate_hz);
                if let (Some(period), Some(gaps)) = (s.device_period_s, s.device_gaps) {
                    line.push_str(&format!(", device period {period:.4} s, {gaps} device-clock gaps"));
                }
                println!("{line}");
            }
            for d in &info.devices {
                let mut line = format!("  device {}: {}", d.name, d.describe());
                if let Some(r) = &d.record {
                    line.push_str(&format!(", {} reconnects, {} rejected", r.reconnects, r.rejected));
                    if let Some(f) = r.first_sample_s {
                        line.push_str(&format!(", first sample after {f:.3} s"));
                    }
                    if r.backlog_reads > 0 {
                        line.push_str(&format!(", {} backlog reads ({} samples stamped late)", r.backlog_reads, r.backlog_samples));
                    }
                    if let Some(id) = &r.identity {
                        line.push_str(&format!("; {id}"));
                    }
                    if !r.settings.is_empty() {
                        let settings: Vec<String> =
                            r.settings.iter().map(|(k, v)| format!("{k} {v:.6}").trim_end_matches('0').trim_end_matches('.').to_string()).collect();
                        line.push_str(&format!("; {}", settings.join(", ")));
                    }
                    if let Some(e) = &r.last_error {
                        line.push_str(&format!("; last error: {e}"));
                    }
                }
                println!("{line}");
                for g in d.gaps.iter().take(10) {
                    println!(
                        "    {:>12}: {:.3} s to {:.3} s ({:.3} s){}",
                        g.reason.as_str(),
                        g.start_host_ns as f64 * 1e-9,
                        g.end_host_ns as f64 * 1e-9,
                        g.duration_s(),
                        g.missing_samples.map_or(String::new(), |m| format!(", {m} samples missing"))
                    );
                }
                if d.gaps.len() > 10 {
                    println!("    ... {} more in {}", d.gaps.len() - 10, SessionDir::new(&dir).gaps(&d.name).display());
                }
                if !d.messages.is_empty() {
                    let info = d.messages.iter().filter(|m| !m.matters()).count();
                    println!("    {} messages ({info} INFO) in {}_messages.csv", d.messages.len(), d.name);
                }
                for m in d.messages.iter().filter(|m| m.matters()) {
                    println!(
                        "    {:>9} at {:.3} s from {}: {}",
                        session::printable(&m.level),
                        m.t_host_ns as f64 * 1e-9,
                        session::printable(&m.source),
                        session::printable(&m.message)
                    );
                }
            }
            for s in &info.segments {
                println!("  segment {} (rodlab session info {})", s.name(), s.path().display());
            }
            Ok(())
        }
        SessionCommand::Check { dir, max_outage_s, skip_videos } => {
            lab::error::non_negative("--max-outage-s", max_outage_s)?;
            // Sessions with videos go to the device build (needs_devices).
            let report = lab::info::check(&SessionDir::new(&dir), &lab::info::CheckOptions { max_outage_s, videos: !skip_videos, count_frames: None })?;
            print_check(&report, &dir)
        }
        SessionCommand::Export { dir, to, aligned, on, streams, tolerance_s, matching, format } => {
            let matching = session::aligned::Match::parse(&matching).unwrap_or(session::aligned::Match::Previous);
            let options = session::aligned::AlignOptions { on, streams, tolerance_s, matching, damaged: session::Damaged::Skip };
            let format = session::TableFormat::parse(&format).unwrap_or_default();
            let out = lab::export::export_with(&SessionDir::new(&dir), &to, aligned.then_some(&options), format)?;
            for (file, rows) in &out.files {
                match rows {
                    Some(rows) => println!("wrote {} ({rows} rows)", file.display()),
                    None => println!("wrote {}", file.display()),
                }
            }
            if let Some((on, joined)) = &out.aligned {
                println!("aligned on {on}'s times:");
                for j in joined {
                    println!("  {}: within {:.4} s; {} rows without a value ({} inside its outages)", j.name, j.tolerance_s, j.rows_without, j.rows_in_outages);
                }
            }
            for w in &out.warnings {
                eprintln!("rodlab: warning: {w}");
            }
            Ok(())
        }
        SessionCommand::View { .. } => Err(Error::input("session view: needs the device build (lab-devices)")),
    }
}

/// `session check`'s lines; an error when anything is wrong.
pub fn print_check(report: &lab::info::CheckReport, dir: &std::path::Path) -> Result<()> {
    println!("checked {} chunks, {} rows", report.chunks.len(), report.rows());
    for w in &report.warnings {
        println!("  warning: {w}");
    }
    for p in &report.problems {
        println!("  problem: {p}");
    }
    if !report.ok() {
        return Err(Error::computation(format!("{} problem(s) in {}", report.problems.len(), dir.display())));
    }
    println!("ok: every file is readable and consistent, every device was heard{}", if report.warnings.is_empty() { "" } else { " (warnings above)" });
    Ok(())
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab synth board --out /tmp/board\n  rodlab calibrate --images /tmp/board/views --board 9x6 --square-m 0.016 --plane-image /tmp/board/plane.png --out camera.toml\n\nTwo or more cameras (markers in 3-D): one folder of board images per camera, images of the same name taken at the same time; the world is the board in the plane view:\n  rodlab synth board --cameras 2 --out /tmp/pair\n  rodlab calibrate --camera-images left=/tmp/pair/left --camera-images right=/tmp/pair/right --board 9x6 --square-m 0.016 --plane-view plane --out cameras.toml\n\nEach camera's intrinsics start from its own views; then the intrinsics and the cameras' poses come from one joint fit of every view (a bundle adjustment). Refused (exit 2) when a camera shares no view with the others; refused (exit 1) when a camera's RMS reprojection error exceeds --max-rms-px or a view's twice that, naming the worst views."
)]
pub struct CalibrateArgs {
    /// Directory of checkerboard images (png, jpg, bmp, tif).
    #[arg(long, required_unless_present = "camera_images", conflicts_with = "camera_images")]
    pub images: Option<PathBuf>,
    /// A camera set: NAME=DIR per camera (repeat; two or more), images of one name taken at the same time.
    #[arg(long, value_name = "NAME=DIR")]
    pub camera_images: Vec<String>,
    /// With --camera-images: the view (file stem) whose board is the world (default: plane, else the first view every camera sees).
    #[arg(long, requires = "camera_images")]
    pub plane_view: Option<String>,
    /// Inner corners, COLSxROWS (a board of 10x7 squares has 9x6).
    #[arg(long)]
    pub board: String,
    /// Side of one square [m].
    #[arg(long)]
    pub square_m: f64,
    /// An image of the board lying in the plane of motion (default: the first image).
    #[arg(long, conflicts_with = "camera_images")]
    pub plane_image: Option<PathBuf>,
    /// Reject the calibration above this RMS reprojection error [px].
    #[arg(long, default_value_t = 1.0)]
    pub max_rms_px: f64,
    /// camera.toml, or with --camera-images cameras.toml.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// With --camera-images: also write the board corners each camera found in each view, as CSV (camera,view,corner,u_px,v_px), to check the fit with another tool.
    #[arg(long, requires = "camera_images")]
    pub corners_out: Option<PathBuf>,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab track sessions/s1/camera.mkv --camera camera.toml --markers configs/markers.toml --out markers.parquet\n  rodlab track frames/ --camera camera.toml --fps 100 --out markers.parquet --overlay /tmp/overlay\n  rodlab track sessions/s1/left.mkv sessions/s1/right.mkv --cameras cameras.toml --out sessions/s1/markers.parquet\n\nWith a camera set (--cameras, from rodlab calibrate --camera-images) give one video per camera: a video whose file stem is a camera's name is that camera's, else they go in the set's order. Frames are matched on the host clock (each video's frames table in a session, else its rate); a pair further apart than half a frame period is not triangulated, it is counted. Markers seen by two or more cameras are triangulated (x_m, y_m, z_m, reprojection_px, cameras); a marker seen by one camera alone keeps its ray (flag 8: x, y, z is the camera's centre, ray_x, ray_y, ray_z its direction)."
)]
pub struct TrackArgs {
    /// A video file or a directory of images (one frame per image); with --cameras, one per camera.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// camera.toml from `rodlab calibrate` (intrinsics and the plane of motion).
    #[arg(long, required_unless_present = "cameras", conflicts_with = "cameras")]
    pub camera: Option<PathBuf>,
    /// cameras.toml from `rodlab calibrate --camera-images`: markers in 3-D from several videos.
    #[arg(long)]
    pub cameras: Option<PathBuf>,
    /// With --cameras: views farther than this from each other's epipolar lines are not one marker [px].
    #[arg(long, default_value_t = 3.0, requires = "cameras")]
    pub epipolar_gate_px: f64,
    /// markers.toml: colour, size and tracking parameters (default: red markers).
    #[arg(long)]
    pub markers: Option<PathBuf>,
    /// Frames table of a session (streams/CAMERA); default: looked up next to the video.
    #[arg(long)]
    pub frames: Option<PathBuf>,
    /// Frame rate when there is no frames table (default: the video's).
    #[arg(long)]
    pub fps: Option<f64>,
    /// Marker table to write (Parquet).
    #[arg(long, default_value = "markers.parquet")]
    pub out: PathBuf,
    /// Write annotated frames (JPEG) here, for checking by eye.
    #[arg(long)]
    pub overlay: Option<PathBuf>,
    /// With --overlay: one annotated frame every this many frames.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub overlay_every: u64,
    /// Height of the marker centres above the board plane, towards the camera [m] (default: camera.toml's plane_offset_m, else the session's frames.marker_height_m, else 0).
    #[arg(long)]
    pub marker_height_m: Option<f64>,
}

#[derive(Subcommand)]
pub enum SynthCommand {
    /// Checkerboard views for calibration, and one of the board lying in the plane of motion.
    Board {
        /// Directory to write the views into (views/view_NN.png, plane.png, true-camera.toml).
        #[arg(long)]
        out: PathBuf,
        /// Inner corners, COLSxROWS.
        #[arg(long, default_value = "9x6")]
        board: String,
        /// Side of a square [m].
        #[arg(long, default_value_t = 0.016)]
        square_m: f64,
        /// Sensor noise [grey levels].
        #[arg(long, default_value_t = 2.0)]
        noise: f64,
        /// A camera set of this many cameras (2 to 4): OUT/CAMERA/view_NN.png and plane.png, and true-cameras.toml.
        #[arg(long)]
        cameras: Option<usize>,
        /// With --cameras: each camera's distance from the board [m].
        #[arg(long, default_value_t = 0.6)]
        distance_m: f64,
        /// With --cameras: the angle between the outermost cameras [deg].
        #[arg(long, default_value_t = 30.0)]
        spread_deg: f64,
    },
    /// A video of a bending rod with red markers, and its truth (truth.csv).
    Video {
        /// Directory to write into (video, truth.csv, true-camera.toml, markers.toml).
        #[arg(long)]
        out: PathBuf,
        /// Frames to render.
        #[arg(long, default_value_t = 200)]
        frames: usize,
        /// Markers along the rod.
        #[arg(long, default_value_t = 6)]
        markers: usize,
        /// Fastest marker speed [px/frame].
        #[arg(long, default_value_t = 20.0)]
        max_speed_px: f64,
        /// Sensor noise [grey levels].
        #[arg(long, default_value_t = 2.0)]
        noise: f64,
        /// The video's frame rate [frames/s]: how fast a camera that plays the file runs.
        #[arg(long, default_value_t = 100.0)]
        fps: f64,
        /// `raw` (uncompressed BGR in video.avi: the recorder's container "raw"), `mkv` (lossless HuffYUV), `avi` (Motion-JPEG at quality 75, the recorder's default) or `png` (an image directory).
        #[arg(long, default_value = "raw")]
        format: String,
        /// Hide marker M for N frames from frame F: M,F,N.
        #[arg(long, allow_hyphen_values = true)]
        occlude: Option<Numbers>,
    },
    /// A lab session made from the simulator (robot, force sensor, tracked markers) and its truth beside it.
    Session(Box<SynthSessionArgs>),
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  rodlab synth session --scene configs/scene/cable-arm-holds.toml --rod configs/rod/pls-cable-arm.toml --out sessions/holds1\n  rodlab synth session --scene configs/scene/contact-paper-stick.toml --rod configs/rod/contact-paper-steel-core.toml --rig configs/rig/emulated.toml --out sessions/stick --seed 2\n  rodlab synth session --scene configs/scene/contact-paper-stick.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/stick-live --live\n\nWrites the session (session.toml, streams/robot, streams/ft300, markers.parquet) into --out and the truth (the simulation's tables and report, truth.toml) into --truth, never inside the session. Without --live the session has no video: its markers are the tracker's output, with --marker-noise-m of noise."
)]
pub struct SynthSessionArgs {
    /// Scene of the experiment simulated: time stepping, table, the base's motion, contact law (configs/scene/*.toml).
    #[arg(long)]
    pub scene: PathBuf,
    /// Rod file of the truth (geometry, material unless --params, markers).
    #[arg(long)]
    pub rod: PathBuf,
    /// Rig file: its [frames] (robot base, gravity, table) place the scene and go into session.toml (default: the scene's).
    #[arg(long)]
    pub rig: Option<PathBuf>,
    /// identified.toml: the body material of the truth (default: the rod file's).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Young's modulus of the truth [Pa] (overrides the rod file and --params).
    #[arg(long)]
    pub e_pa: Option<f64>,
    /// Shear modulus of the truth [Pa] (default: with --e-pa, the rod file's Poisson's ratio kept).
    #[arg(long)]
    pub g_pa: Option<f64>,
    /// Density of the truth [kg/m^3].
    #[arg(long)]
    pub rho_kg_m3: Option<f64>,
    /// Flange trajectory CSV t_s,x_m,y_m,z_m,rx,ry,rz (default: the scene's waypoints).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Session directory to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Where the truth goes (default: OUT-truth, beside the session).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Simulated time [s] (default: the scene's).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Tracking noise, per coordinate [m].
    #[arg(long, default_value_t = 3e-4)]
    pub marker_noise_m: f64,
    /// RTDE output rate [Hz].
    #[arg(long, default_value_t = 125.0)]
    pub robot_hz: f64,
    /// Force sensor rate [Hz].
    #[arg(long, default_value_t = 100.0)]
    pub sensor_hz: f64,
    /// No flange force/torque sensor in the session.
    #[arg(long)]
    pub no_flange_sensor: bool,
    /// Force sensor noise per force component [N] (FT 300: about 0.1 N).
    #[arg(long, default_value_t = 0.1)]
    pub force_noise_n: f64,
    /// Force sensor noise per moment component [N m].
    #[arg(long, default_value_t = 0.005)]
    pub moment_noise_nm: f64,
    /// Noise of the load cells on the cables [N] (scenes with cable loads: stream load_cell, a column CABLE_n per cable).
    #[arg(long, default_value_t = 0.005)]
    pub load_cell_noise_n: f64,
    /// Force sensor bias FX,FY,FZ,MX,MY,MZ [N, N m], added to every reading.
    #[arg(long, default_value = "0,0,0,0,0,0", allow_hyphen_values = true)]
    pub ft_bias: Numbers,
    /// The rod is mounted on the force sensor at this time [s]: before it the sensor reads only its bias and no marker is tracked (a tare recorded first; with --live: not supported).
    #[arg(long, default_value_t = 0.0)]
    pub mounted_at_s: f64,
    /// Seed of the noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A rod held at both ends (the scene's [tip]): record the tip's hold as a second robot's stream of this name (its base and the clamp's mount at the world's origin; a loads file's [tip_hold] robot = NAME reads it); with --live a second RTDE emulator plays it.
    #[arg(long, value_name = "NAME")]
    pub tip_robot: Option<String>,
    /// Record through the lab's path in real time instead of writing the streams: the RTDE and FT 300 emulators play the experiment, a camera plays a video rendered from the simulated markers, the recorder records them and the tracker tracks the video (takes the experiment's duration plus a few seconds).
    #[arg(long)]
    pub live: bool,
    /// With --live: the flange sensor is an ATI Net F/T (RDT over UDP at 1 kHz, stream `netft`; its loads file says `[flange_sensor] stream = "netft"`) instead of the FT 300.
    #[arg(long, requires = "live")]
    pub netft: bool,
    /// With --live: the flange wrench comes from the robot's controller (`actual_TCP_force` on the RTDE stream, robot base frame; its loads file says `[flange_sensor] stream = "robot"`, `columns = ["actual_TCP_force_0", ...]`, `frame = "robot_base"`).
    #[arg(long, requires = "live", conflicts_with = "netft")]
    pub wrench_from_robot: bool,
    /// With --live: this many cameras render the experiment, each from its own pose (2 or more: a set 30 degrees apart, markers triangulated in 3-D, so the motion may leave the plane).
    #[arg(long, requires = "live", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=4))]
    pub cameras: u64,
    /// With --cameras 2 or more: hide marker M from camera C (0 = the leftmost) from the experiment's start (the video's first second shows it), CAMERA:MARKER, repeatable; the other cameras see it, and it is kept as their ray where one alone does.
    #[arg(long = "hide-marker", value_name = "C:M", requires = "cameras", value_parser = camera_and_marker)]
    pub hide_marker: Vec<(usize, usize)>,
    /// Frame rate of the rendered camera (--live) [frames/s].
    #[arg(long, default_value_t = 30.0)]
    pub camera_fps: f64,
    /// With --live: serve the recording's live view on ADDR (the URL is printed), the strain observed live from the rendered camera.
    #[arg(long, requires = "live", value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    pub view: Option<String>,
}

/// The synthesis a `synth session` asks for (offline or --live).
pub fn synth_request(a: &SynthSessionArgs) -> Result<SynthRequest> {
    let files = lab::synth::SynthFiles { params: a.params.as_deref(), rig: a.rig.as_deref(), trajectory: a.trajectory.as_deref() };
    let read = SynthRequest::read(&a.scene, &a.rod, &a.out, files, [a.e_pa, a.g_pa, a.rho_kg_m3])?;
    let req = SynthRequest {
        truth: a.truth.clone().unwrap_or_else(|| PathBuf::from(format!("{}-truth", a.out.display()))),
        duration_s: a.duration_s,
        marker_noise_m: a.marker_noise_m,
        robot_hz: a.robot_hz,
        sensor_hz: a.sensor_hz,
        flange_sensor: !a.no_flange_sensor,
        netft: a.netft,
        wrench_from_robot: a.wrench_from_robot,
        force_noise_n: a.force_noise_n,
        moment_noise_nm: a.moment_noise_nm,
        load_cell_noise_n: a.load_cell_noise_n,
        ft_bias: a.ft_bias.exactly::<6>("ft-bias", "FX,FY,FZ,MX,MY,MZ")?,
        mounted_at_s: a.mounted_at_s,
        seed: a.seed,
        tip_robot: a.tip_robot.clone(),
        cameras: a.cameras as usize,
        hidden_markers: a.hide_marker.clone(),
        ..read
    };
    Ok(req)
}

fn synth_session(a: SynthSessionArgs, progress: &dyn Progress) -> Result<()> {
    if a.live {
        return Err(Error::input("synth session --live: needs the device build (lab-devices)"));
    }
    let req = synth_request(&a)?;
    let s = lab::synth::synthesise(&req, progress)?;
    println!(
        "wrote session {} ({:.2} s: {} robot samples at {} Hz, {}{} camera frames) and its truth in {}",
        a.out.display(),
        s.end_s,
        s.robot_samples,
        a.robot_hz,
        if a.no_flange_sensor { String::new() } else { format!("force sensor at {} Hz, ", a.sensor_hz) },
        s.camera_frames,
        s.truth_dir.display()
    );
    Ok(())
}

pub fn synth(cmd: SynthCommand, progress: &dyn Progress) -> Result<()> {
    match cmd {
        SynthCommand::Session(a) => synth_session(*a, progress),
        SynthCommand::Board { .. } | SynthCommand::Video { .. } => Err(Error::input("synth board/video: needs the device build (lab-devices)")),
    }
}

/// The map file's fields, for the import commands' help.
const MAP_HELP: &str = "The map file (TOML; docs/reference/map.md) names the rod's markers and the base:\n  [markers]                      # label in the file = the rod file's marker number\n  \"Beam:Tip1\" = 0\n  \"Beam:Tip2\" = 1\n  [world]\n  up = \"+z\"                       # the mocap's vertical axis: +x, -x, +y, -y, +z (default), -z; or rotation = [[..], [..], [..]]\n  [base]                         # a clamp cluster, positions in the rod's base frame [m] ...\n  labels = [\"Clamp:C1\", \"Clamp:C2\", \"Clamp:C3\"]\n  positions_m = [[0.0, 0.03, 0.03], [0.0, -0.03, 0.03], [0.0, 0.0, -0.03]]\n  still = true                   # the clamp does not move: its mean pose, not each frame's noise\n  # ... or a fixed base in the world: position_m = [x, y, z], rpy_deg = [r, p, y]\n  [reference]\n  window_s = [0.0, 0.5]          # the rod held in its rod-file shape (s, the file's own time): each marker's place on the body measured there\n  # ... or find_s = 0.3: the stillest 0.3 s before the release; max_creep_m = 0.0005: a support's creep accepted\n\nOne file: --out is the session. Several: one session per file under --out, named by the file.";

#[derive(Subcommand)]
pub enum ImportCommand {
    /// Motion-capture recordings (C3D, the export of Vicon, Qualisys, OptiTrack, ...) -> sessions that identify and validate read.
    #[command(after_help = format!(
        "Examples:\n  rodlab import c3d trial01.c3d --rod configs/rod/rectangular-beam.toml --map mocap-map.toml --out sessions/beam01\n  rodlab import c3d day1/*.c3d --rod configs/rod/rectangular-beam.toml --map mocap-map.toml --out sessions/day1\n  rodlab identify --rod configs/rod/rectangular-beam.toml --sessions sessions/day1/* --loads masses.toml --out fit\n\n{MAP_HELP}\nUnits (mm, cm, m) and the frame rate come from the file; invalid samples (negative residual, or all-zero points) stay missing. Analog channels are not imported."
    ))]
    C3d {
        /// C3D files, one session each.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The rod file (its markers are what the map's indices name).
        #[arg(long)]
        rod: PathBuf,
        /// The map file: labels to markers, vertical axis, base.
        #[arg(long)]
        map: PathBuf,
        /// The session directory (one file), or the directory of the sessions (several).
        #[arg(long)]
        out: PathBuf,
    },
    /// Motion-capture trajectories as tables (Qualisys TSV, OptiTrack Motive CSV, Vicon Nexus CSV, or a plain CSV whose columns the map's [table] names) -> sessions, as import c3d makes them.
    #[command(after_help = format!(
        "Examples:\n  rodlab import table trial01.tsv --rod configs/rod/rectangular-beam.toml --map mocap-map.toml --out sessions/beam01\n  rodlab import table take*.csv --rod rod.toml --map motive-map.toml --out sessions/day1\n\nThe format is read from the file's first line: NO_OF_FRAMES (Qualisys TSV, mm), Format Version (Motive CSV, its Length Units), Trajectories (Vicon Nexus CSV, its units row); anything else is a plain CSV, whose map names its columns:\n  [table]\n  time = \"t_s\"                    # or rate_hz = 100\n  units = \"mm\"\n  marker_columns = \"{{label}}_{{axis}}\"   # Tip1_x, Tip1_y, Tip1_z\n  [table.base_pose]              # optional, instead of [base]\n  position = [\"base_x\", \"base_y\", \"base_z\"]\n  rotation = \"quaternion\"        # w, x, y, z; or \"rotation_vector\", or \"euler\" with euler_order and euler_degrees\n  rotation_columns = [\"qw\", \"qx\", \"qy\", \"qz\"]\n\n{MAP_HELP}"
    ))]
    Table {
        /// Trajectory files, one session each.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The rod file (its markers are what the map's indices name).
        #[arg(long)]
        rod: PathBuf,
        /// The map file: labels to markers, vertical axis, base, and a plain CSV's columns.
        #[arg(long)]
        map: PathBuf,
        /// The session directory (one file), or the directory of the sessions (several).
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn import(cmd: ImportCommand, progress: &dyn Progress) -> Result<()> {
    let (files, rod, map, out, table) = match cmd {
        ImportCommand::C3d { files, rod, map, out } => (files, rod, map, out, false),
        ImportCommand::Table { files, rod, map, out } => (files, rod, map, out, true),
    };
    let rod = lab::read_rod(&rod, None, None)?;
    let map = lab::c3d::MocapMap::read(&map, rod.markers.len())?;
    let read = |f: &std::path::Path| if table { lab::mocap_tables::read_table(f, &map) } else { lab::c3d::read_c3d(f) };
    for s in lab::c3d::import_files(&files, &map, &rod, &out, &read, progress)? {
        let missing: Vec<String> = s.missing.iter().filter(|m| m.2 > 0).map(|(l, k, n)| format!("{l} (marker {k}) {n}")).collect();
        println!(
            "wrote {}: {} frames at {} Hz ({}), {} markers{}; base in {} frames{}",
            s.session.display(),
            s.frames,
            s.rate_hz,
            s.units,
            s.missing.len(),
            if missing.is_empty() { String::new() } else { format!(", missing samples: {}", missing.join(", ")) },
            s.base_frames,
            if s.base_rms_m > 0.0 { format!(" (cluster fit RMS {:.3} mm)", s.base_rms_m * 1e3) } else { String::new() }
        );
        if let Some((d, a)) = s.base_spread {
            println!("  a still clamp: every frame's fit within {:.3} mm and {:.2} mrad of the mean pose used", d * 1e3, a * 1e3);
        }
        if let Some(t) = &s.tip_clamp {
            println!(
                "  tip clamp in {} frames{} (stream {}: a loads file's [tip_hold] stream = \"{}\" holds the rod's tip there)",
                t.frames,
                if t.rms_m > 0.0 { format!(" (cluster fit RMS {:.3} mm)", t.rms_m * 1e3) } else { String::new() },
                lab::c3d::TIP_STREAM,
                lab::c3d::TIP_STREAM
            );
            if let Some((d, a)) = t.spread {
                println!("  a still tip clamp: every frame's fit within {:.3} mm and {:.2} mrad of the mean pose used", d * 1e3, a * 1e3);
            }
        }
        for w in &s.warnings {
            println!("  warning: {w}");
        }
        if !s.unused_labels.is_empty() {
            println!("  labels not in the map (not imported): {}", s.unused_labels.join(", "));
        }
        for m in &s.markers_on_body {
            println!(
                "  marker {} (\"{}\") on the body: {:.2} mm from its design position, spread {:.3} mm over {} frames of the reference window, creep {:.3} mm (its place known to {:.3} mm)",
                m.marker,
                m.label,
                m.design_distance_m * 1e3,
                m.spread_m * 1e3,
                m.samples,
                m.creep_m * 1e3,
                m.place_sigma_m * 1e3
            );
        }
        if !s.markers_on_body.is_empty() {
            println!("  the rod's base as the held pose registers it: turned {:.1} mrad from the rod file's mount in the clamp's frame", s.held_turn_rad * 1e3);
        }
        match &s.release {
            Some(r) => println!(
                "  released at t = {:.3} s (the onset of \"{}\"'s departure, beyond {}x its noise from {:.3} s)",
                r.t_s,
                r.label,
                lab::c3d::RELEASE_NOISE_FACTOR,
                r.detected_s
            ),
            None if !s.markers_on_body.is_empty() => println!("  no release: the markers stay in their held pose after the reference window"),
            None => {}
        }
    }
    Ok(())
}

/// `C:M`: a camera's index and a marker's.
fn camera_and_marker(text: &str) -> Result<(usize, usize), String> {
    let (c, m) = text.split_once(':').ok_or_else(|| format!("'{text}': expected CAMERA:MARKER, e.g. 1:3"))?;
    let index = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("'{text}': expected CAMERA:MARKER (two indices), e.g. 1:3"));
    Ok((index(c)?, index(m)?))
}
