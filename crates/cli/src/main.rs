//! The `rodlab` binary: the library's command line, with the device build
//! (`librodlab_devices.so`, OpenCV and the device drivers) loaded only for
//! the commands that need it, so that every other command starts without
//! loading OpenCV's libraries; `track` of an uncompressed video loads the
//! tracking build (`librodlab_tracking.so`, OpenCV's core and imgproc).

use rodlab_cli::progress::Bars;
use rodlab_cli::{Command, Devices};
use std::ffi::{CString, OsString};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

/// A device build's entry point: the whole command line, the exit status.
type DevicesMain = unsafe extern "C" fn(argc: c_int, argv: *const *const c_char) -> c_int;

/// A shared library the binary loads for some commands.
struct Build {
    /// The file name, beside the binary (or in the build's `deps`, where
    /// `cargo test` leaves it).
    file: &'static str,
    /// The environment variable that overrides its path.
    override_var: &'static str,
    entry: &'static [u8],
}

const DEVICES: Build = Build { file: "librodlab_devices.so", override_var: "RODLAB_DEVICES_LIB", entry: b"rodlab_devices_main\0" };
const TRACKING: Build = Build { file: "librodlab_tracking.so", override_var: "RODLAB_TRACKING_LIB", entry: b"rodlab_tracking_main\0" };

fn library_path(build: &Build) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(build.override_var) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(build.file), dir.join("deps").join(build.file)].into_iter().find(|p| p.is_file())
}

/// Loads the device build (or the tracking build, for what it does) and
/// runs the command line there.
struct Plugin;

impl Devices for Plugin {
    fn run(&self, args: &[OsString], command: Command, _bars: &Bars) -> u8 {
        // The device build tracks raw videos too, only slower to start:
        // it serves where the tracking build was not built.
        let tracking = rodlab_cli::needs_only_tracking(&command).then(|| library_path(&TRACKING)).flatten().filter(|p| p.is_file());
        let build = if tracking.is_some() { &TRACKING } else { &DEVICES };
        let Some(path) = tracking.or_else(|| library_path(&DEVICES)) else {
            eprintln!("rodlab: error: this command needs {} beside the binary (cargo build --workspace builds it)", build.file);
            return 1;
        };
        // SAFETY: the library is this workspace's rodlab-devices (or
        // rodlab-tracking) crate, built with this binary; its entry point
        // has the signature above and catches panics. It stays loaded
        // until the process exits.
        let library = match unsafe { libloading::Library::new(&path) } {
            Ok(l) => l,
            Err(e) => {
                eprintln!("rodlab: error: {}: {e}", path.display());
                return 1;
            }
        };
        let strings: Vec<CString> = args.iter().map(|a| CString::new(a.as_bytes()).unwrap_or_default()).collect();
        let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        let status = unsafe {
            match library.get::<DevicesMain>(build.entry) {
                Ok(entry) => entry(pointers.len() as c_int, pointers.as_ptr()),
                Err(e) => {
                    eprintln!("rodlab: error: {}: {e}", path.display());
                    1
                }
            }
        };
        // Threads of the library may outlive the call (a recorder's writer
        // finishing): never unload it.
        std::mem::forget(library);
        status.clamp(0, 255) as u8
    }
}

fn main() -> ExitCode {
    // A long rod's solves reuse their freed megabytes instead of faulting
    // in fresh pages (64 sections: 5.2 -> 3.0 ms a solve; rod::memory).
    rod::memory::retain_freed_memory();
    ExitCode::from(rodlab_cli::main_with(std::env::args_os().collect(), &Plugin))
}
