//! `rodlab`: the command-line front end. Thin by design: argument parsing,
//! file plumbing and printing; the work happens in the stage crates.
//!
//! Exit status: 0 success, 1 a computation failed (e.g. no convergence),
//! 2 bad input (arguments, config or data files).

// The arguments' doc comments are clap's --help text, shown verbatim:
// units in brackets ("[m]", "[Pa]") are for users, not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

mod identify;
mod observe_cmd;
mod paper;
mod record_cmd;
mod rig_cmd;
mod session_data;
mod simulate_cmd;
mod solve;
mod synth_session;
mod track_cmd;
mod validate_cmd;
mod virtual_lab;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rodlab",
    version,
    about = "Soft-rod lab toolkit: PLS Cosserat rod model, identification, validation.",
    after_help = "Examples (record -> track -> observe -> identify):\n  rodlab record --rig configs/rig/emulated.toml --out sessions/run1 --duration 60\n  rodlab session info sessions/run1\n  rodlab calibrate --images board/ --board 9x6 --square-m 0.016 --plane-image board/plane.png --out camera.toml\n  rodlab track sessions/run1/camera.mkv --camera camera.toml --markers configs/markers.toml --out sessions/run1/markers.parquet\n  rodlab observe sessions/run1 --rod configs/rod/contact-paper-steel-core.toml --mode weighted\n  rodlab identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out reports/demo\n  rodlab solve --rod configs/rod/pls-paper-cantilever.toml --tip-force 0,0,-0.01 --out shape.csv\n  rodlab simulate --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-slide.toml --out reports/sim/slide\n  rodlab paper-table"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Static equilibrium of a rod under gravity, cable tensions and tip loads.
    Solve(solve::SolveArgs),
    /// Fit E, G, rho to static experiments; writes identified.toml and an HTML report.
    Identify(identify::IdentifyArgs),
    /// Strain field of the rod, frame by frame, from a tracked marker table.
    Observe(observe_cmd::ObserveArgs),
    /// Camera intrinsics and the plane of motion from checkerboard images -> camera.toml.
    Calibrate(track_cmd::CalibrateArgs),
    /// Marker positions, ordered base to tip, frame by frame, from a video or image folder.
    Track(track_cmd::TrackArgs),
    /// Synthetic checkerboard images and marker videos with exact truth.
    #[command(subcommand)]
    Synth(track_cmd::SynthCommand),
    /// Record a lab session from the devices of a rig file.
    Record(record_cmd::RecordArgs),
    /// Device emulators speaking the real protocols (for dry runs and tests).
    #[command(subcommand)]
    Emulate(record_cmd::EmulateCommand),
    /// Look at a recorded session.
    #[command(subcommand)]
    Session(record_cmd::SessionCommand),
    /// The PLS paper's conical cantilever (Tables II and III): our PLS and PCS beside the paper's numbers.
    PaperTable(paper::PaperArgs),
    /// Simulate an experiment: the rod held by the robot (or free) on a table with friction -> tables and a report.
    Simulate(simulate_cmd::SimulateArgs),
    /// Validate parameters on a recorded session: simulate it, observe it, compare strain, force, slip -> report.
    Validate(Box<validate_cmd::ValidateArgs>),
    /// Benchmarks with analytic answers, run and plotted.
    #[command(subcommand)]
    Verify(simulate_cmd::VerifyCommand),
    /// The rig's world frame: measure where the robot stands.
    #[command(subcommand)]
    Rig(rig_cmd::RigCommand),
}

/// An error that is the user's input, not the computation (exit status 2).
#[derive(Debug)]
pub struct InputError(pub String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

pub fn input_error(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InputError(msg.into()))
}

fn main() -> ExitCode {
    quiet_video_libraries();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(a) => solve::run(a),
        Command::PaperTable(a) => paper::run(a),
        Command::Identify(a) => identify::run(a),
        Command::Observe(a) => observe_cmd::run(a),
        Command::Calibrate(a) => track_cmd::calibrate(a),
        Command::Track(a) => track_cmd::track(a),
        Command::Synth(c) => track_cmd::synth(c),
        Command::Record(a) => record_cmd::record(a),
        Command::Emulate(c) => record_cmd::emulate(c),
        Command::Session(c) => record_cmd::session(c),
        Command::Simulate(a) => simulate_cmd::simulate(a),
        Command::Verify(c) => simulate_cmd::verify(c),
        Command::Validate(a) => validate_cmd::run(*a),
        Command::Rig(c) => rig_cmd::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the chain of causes joined.
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("rodlab: error: {}", msg.join(": "));
            if e.chain().any(|c| c.is::<InputError>() || c.is::<rod::ConfigError>()) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// OpenCV and FFmpeg print their own warnings (a damaged file gives a dozen
/// lines); rodlab reports failures itself in one line. Set before OpenCV is
/// first used, and only when the user has not chosen a level.
fn quiet_video_libraries() {
    for (name, value) in [("OPENCV_LOG_LEVEL", "SILENT"), ("OPENCV_FFMPEG_LOGLEVEL", "-8")] {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
}
