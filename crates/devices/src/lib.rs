//! The device build of `rodlab` (`librodlab_devices.so`): the commands that
//! record a rig, run the emulators, check a camera, calibrate, track, make
//! synthetic boards and videos, play the virtual lab live, view a session,
//! or decode its videos, with OpenCV and the device drivers linked. The
//! `rodlab` binary loads it (dlopen) only for those commands
//! (`rodlab_cli::needs_devices`), so that every other command starts
//! without OpenCV's libraries. Stage: record -> track.

#![allow(rustdoc::broken_intra_doc_links)]

pub mod commands;

use rodlab_cli::progress::Bars;
use rodlab_cli::Command;
use std::os::raw::{c_char, c_int};

/// A device command (or any other: they run here as in the binary).
pub fn run(command: Command, bars: &Bars) -> lab::Result<()> {
    use rodlab_cli::cmd_model::schema_with;
    match command {
        Command::Record(a) => commands::record(a, bars),
        Command::Emulate(c) => commands::emulate(c),
        Command::Camera(c) => commands::camera(c),
        Command::Calibrate(a) => commands::calibrate(a),
        Command::Track(a) => commands::track(a, bars),
        Command::Synth(c) => commands::synth(c, bars),
        Command::Session(c) => commands::session(c),
        Command::Schema(a) => schema_with(a, lab_devices::reference::schema, lab_devices::reference::check_file),
        other => rodlab_cli::run(other, bars),
    }
}

/// The entry point the binary calls ([`rodlab_cli::main_from_c`]).
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn rodlab_devices_main(argc: c_int, argv: *const *const c_char) -> c_int {
    rodlab_cli::main_from_c(argc, argv, rodlab_cli::RunHere(run))
}
