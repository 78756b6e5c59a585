//! `rodlab`: the command-line front end, thin by design. Arguments become
//! the `lab` crate's typed requests, results become lines on standard
//! output, progress is drawn on standard error; the work lives in `lab`.
//!
//! Two builds share this library: the `rodlab` binary, which links no
//! OpenCV and starts in milliseconds, and the device build
//! (`librodlab_devices.so`, the `rodlab-devices` crate) that the binary
//! loads for the commands that record, emulate, calibrate, track or decode
//! video ([`needs_devices`]). Both parse the same arguments; a command runs
//! in one process either way.
//!
//! Exit status: 0 success, 2 bad input (arguments, config or data files),
//! 1 anything else (a computation that failed, a file or device that did).

// The arguments' doc comments are clap's --help text, shown verbatim:
// units in brackets ("[m]", "[Pa]") are for users, not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

pub mod args;
pub mod cmd_lab;
pub mod cmd_model;
pub mod cmd_sim;
pub mod print;
pub mod progress;

use clap::{Parser, Subcommand};
use std::ffi::OsString;

#[derive(Parser)]
#[command(
    name = "rodlab",
    version,
    about = "Soft-rod lab toolkit: PLS Cosserat rod model, identification, validation.",
    after_help = "Examples (record -> track -> observe -> identify -> simulate -> validate):\n  rodlab record --rig configs/rig/emulated.toml --out sessions/run1 --duration 60\n  rodlab camera check --rig my-rig.toml --markers configs/markers.toml\n  rodlab session info sessions/run1\n  rodlab import c3d trial01.c3d --rod configs/rod/rectangular-beam.toml --map mocap-map.toml --out sessions/beam01\n  rodlab calibrate --images board/ --board 9x6 --square-m 0.016 --plane-image board/plane.png --out camera.toml\n  rodlab track sessions/run1/camera.mkv --camera camera.toml --markers configs/markers.toml --out sessions/run1/markers.parquet\n  rodlab observe sessions/run1 --rod configs/rod/contact-paper-steel-core.toml --mode weighted\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out reports/demo\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml --tip-force 0,0,-0.01 --out shape.csv\n  rodlab simulate --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-slide.toml --out reports/sim/slide\n  rodlab validate sessions/run1 --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-stick.toml --out reports/run1\n  rodlab paper-table"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Static equilibrium of a rod under gravity, cable tensions and tip loads.
    Solve(cmd_model::SolveArgs),
    /// Fit E, G, rho to static experiments; writes identified.toml and an HTML report.
    Identify(cmd_model::IdentifyArgs),
    /// Strain field of the rod, frame by frame, from a tracked marker table.
    Observe(cmd_model::ObserveArgs),
    /// Camera intrinsics and the plane of motion from checkerboard images -> camera.toml.
    Calibrate(cmd_lab::CalibrateArgs),
    /// Marker positions, ordered base to tip, frame by frame, from a video or image folder.
    Track(cmd_lab::TrackArgs),
    /// Synthetic checkerboard images, marker videos and lab sessions with exact truth.
    #[command(subcommand)]
    Synth(cmd_lab::SynthCommand),
    /// Record a lab session from the devices of a rig file.
    Record(cmd_lab::RecordArgs),
    /// Device emulators speaking the real protocols (for dry runs and tests).
    #[command(subcommand)]
    Emulate(cmd_lab::EmulateCommand),
    /// Set a camera up: check what the tracker will see before recording.
    #[command(subcommand)]
    Camera(cmd_lab::CameraCommand),
    /// Look at a recorded session.
    #[command(subcommand)]
    Session(cmd_lab::SessionCommand),
    /// A lab's archive: every session under a directory as one table.
    #[command(subcommand)]
    Archive(cmd_lab::ArchiveCommand),
    /// Sessions from other tools' recordings: motion capture as C3D, or as trajectory tables (Qualisys TSV, Motive CSV, Vicon Nexus CSV, a plain CSV).
    #[command(subcommand)]
    Import(cmd_lab::ImportCommand),
    /// The PLS paper's conical cantilever (Tables II and III): our PLS and PCS beside the paper's numbers.
    PaperTable(cmd_model::PaperArgs),
    /// The JSON schema of a config file (rod, rig, scene, loads, identified, session, map, markers, camera), for editors' TOML language servers.
    #[command(
        after_help = "Examples:\n  rodlab schema rod > rod.schema.json\n  rodlab schema rig --reference   # the field table of docs/reference/rig.md\n\nWith taplo (Even Better TOML): put `#:schema ./rod.schema.json` on a rod file's first line."
    )]
    Schema(cmd_model::SchemaArgs),
    /// Simulate an experiment: the rod held by the robot (or free) on a table with friction -> tables and a report.
    Simulate(cmd_sim::SimulateArgs),
    /// Validate parameters on recorded sessions: simulate them, observe them, compare strain, force, slip -> report.
    Validate(Box<cmd_sim::ValidateArgs>),
    /// Benchmarks with analytic answers, run and plotted.
    #[command(subcommand)]
    Verify(cmd_sim::VerifyCommand),
    /// The rig's world frame: measure where the robot stands.
    #[command(subcommand)]
    Rig(cmd_model::RigCommand),
}

/// Runs the commands that need the device build ([`needs_devices`]).
pub trait Devices {
    /// Runs `command` (parsed from `args`, the whole command line); the
    /// process's exit status.
    fn run(&self, args: &[OsString], command: Command, bars: &progress::Bars) -> u8;
}

/// Whether `command` records, emulates, calibrates, tracks, decodes video
/// or reads the tracker's files: what the binary hands to the device build.
pub fn needs_devices(command: &Command) -> bool {
    use cmd_lab::{SessionCommand, SynthCommand};
    match command {
        Command::Record(_) | Command::Emulate(_) | Command::Camera(_) | Command::Calibrate(_) | Command::Track(_) => true,
        Command::Synth(SynthCommand::Session(a)) => a.live,
        Command::Synth(_) => true,
        Command::Session(SessionCommand::View { .. }) => true,
        Command::Session(SessionCommand::Check { dir, skip_videos, .. }) => !skip_videos && lab::SessionDir::new(dir).has_video(),
        Command::Schema(a) => lab::reference::TRACKER_FILES.contains(&a.file.as_str()),
        _ => false,
    }
}

/// Whether `command` is a `track` that the tracking build alone does
/// (`librodlab_tracking.so`): one uncompressed AVI (`session::avi`), no
/// annotated frames. That build links OpenCV's core and imgproc only, and
/// starts about 0.1 s sooner than the device build with its 240 libraries.
pub fn needs_only_tracking(command: &Command) -> bool {
    matches!(command, Command::Track(a) if a.camera.is_some() && a.overlay.is_none() && a.inputs.len() == 1 && session::avi::sniff(&a.inputs[0]))
}

/// Parses `args` (the program name first), runs the command here or through
/// `devices`, prints errors in one line; the exit status.
pub fn main_with(args: Vec<OsString>, devices: &dyn Devices) -> u8 {
    quiet_video_libraries();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        // Help and version as clap prints them; argument errors in one line.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            // The message and what it lists (the missing arguments), up
            // to the usage and tips: one line that names them.
            let text = e.render().to_string();
            let message: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty() && !l.starts_with("Usage:")).collect();
            let first = if message.is_empty() { "bad arguments".to_string() } else { message.join(" ") };
            eprintln!("rodlab: error: {} (rodlab --help)", first.trim_start_matches("error: "));
            return 2;
        }
    };
    let bars = progress::Bars::new();
    if needs_devices(&cli.command) {
        return devices.run(&args, cli.command, &bars);
    }
    exit_status(run(cli.command, &bars))
}

/// Runs the device commands with a function, in the process it is in (a
/// shared library's own commands).
pub struct RunHere(pub fn(Command, &progress::Bars) -> lab::Result<()>);

impl Devices for RunHere {
    fn run(&self, _args: &[OsString], command: Command, bars: &progress::Bars) -> u8 {
        exit_status((self.0)(command, bars))
    }
}

/// A shared library's entry point (the device and tracking builds): the
/// whole command line (program name first) as C strings, run with
/// [`main_with`], the device commands by `run`; the exit status. A panic
/// is caught here (it must not unwind into the binary) and exits 101, as
/// a Rust program's would.
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings.
pub unsafe fn main_from_c(argc: std::os::raw::c_int, argv: *const *const std::os::raw::c_char, run: RunHere) -> std::os::raw::c_int {
    use std::os::unix::ffi::OsStrExt;
    let args: Vec<OsString> =
        (0..argc.max(0) as usize).map(|i| std::ffi::OsStr::from_bytes(std::ffi::CStr::from_ptr(*argv.add(i)).to_bytes()).to_os_string()).collect();
    match std::panic::catch_unwind(|| main_with(args, &run)) {
        Ok(status) => status as std::os::raw::c_int,
        Err(_) => 101,
    }
}

/// The one-line error and the exit status of a command's result.
pub fn exit_status(result: lab::Result<()>) -> u8 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rodlab: error: {}", e.message().replace('\n', " "));
            e.kind().exit_code()
        }
    }
}

/// Runs a command that needs no device build.
pub fn run(command: Command, bars: &progress::Bars) -> lab::Result<()> {
    match command {
        Command::Solve(a) => cmd_model::solve(a),
        Command::PaperTable(a) => cmd_model::paper_table(a),
        Command::Schema(a) => cmd_model::schema(a),
        Command::Identify(a) => cmd_model::identify(a, bars),
        Command::Observe(a) => cmd_model::observe(a, bars),
        Command::Rig(c) => cmd_model::rig(c),
        Command::Synth(c) => cmd_lab::synth(c, bars),
        Command::Session(c) => cmd_lab::session(c),
        Command::Archive(c) => cmd_lab::archive(c),
        Command::Import(c) => cmd_lab::import(c, bars),
        Command::Simulate(a) => cmd_sim::simulate(a, bars),
        Command::Verify(c) => cmd_sim::verify(c, bars),
        Command::Validate(a) => cmd_sim::validate(*a, bars),
        Command::Record(_) | Command::Emulate(_) | Command::Camera(_) | Command::Calibrate(_) | Command::Track(_) => {
            Err(lab::Error::input("this command needs the device build (lab-devices)"))
        }
    }
}

/// OpenCV and FFmpeg print their own warnings (a damaged file gives a dozen
/// lines); rodlab reports failures itself in one line. Set before OpenCV is
/// first used, and only when the user has not chosen a level.
pub fn quiet_video_libraries() {
    for (name, value) in [("OPENCV_LOG_LEVEL", "SILENT"), ("OPENCV_FFMPEG_LOGLEVEL", "-8")] {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every option and argument of every command says what it is in
    /// `--help` (`--scene` and `--rod` of several commands said nothing).
    #[test]
    fn every_argument_has_help() {
        use clap::CommandFactory;
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id != "help" && id != "version" && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = vec![];
        walk(&super::Cli::command(), "rodlab", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }
}
