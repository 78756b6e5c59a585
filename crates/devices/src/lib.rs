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
use rodlab_cli::{Command, Devices};
use std::ffi::{CStr, OsString};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;

/// Runs the device commands in this build.
pub struct Local;

impl Devices for Local {
    fn run(&self, _args: &[OsString], command: Command, bars: &Bars) -> u8 {
        rodlab_cli::exit_status(run(command, bars))
    }
}

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

/// The entry point the binary calls: the whole command line (program name
/// first) as C strings; the exit status. A panic is caught here (it must
/// not unwind into the binary) and exits 101, as a Rust program's would.
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn rodlab_devices_main(argc: c_int, argv: *const *const c_char) -> c_int {
    let args: Vec<OsString> = (0..argc.max(0) as usize).map(|i| std::ffi::OsStr::from_bytes(CStr::from_ptr(*argv.add(i)).to_bytes()).to_os_string()).collect();
    match std::panic::catch_unwind(|| rodlab_cli::main_with(args, &Local)) {
        Ok(status) => status as c_int,
        Err(_) => 101,
    }
}
