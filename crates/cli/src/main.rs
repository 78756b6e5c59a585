//! The `rodlab` binary: the library's command line, with the device build
//! (`librodlab_devices.so`, OpenCV and the device drivers) loaded only for
//! the commands that need it, so that every other command starts without
//! loading OpenCV's libraries.

use rodlab_cli::progress::Bars;
use rodlab_cli::{Command, Devices};
use std::ffi::{CString, OsString};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

/// The device build's entry point: the whole command line, the exit status.
type DevicesMain = unsafe extern "C" fn(argc: c_int, argv: *const *const c_char) -> c_int;

/// The shared library's file name, beside the binary (or in the build's
/// `deps`, where `cargo test` leaves it); `RODLAB_DEVICES_LIB` overrides.
const LIBRARY: &str = "librodlab_devices.so";

fn library_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RODLAB_DEVICES_LIB") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(LIBRARY), dir.join("deps").join(LIBRARY)].into_iter().find(|p| p.is_file())
}

/// Loads the device build and runs the command line there.
struct Plugin;

impl Devices for Plugin {
    fn run(&self, args: &[OsString], _command: Command, _bars: &Bars) -> u8 {
        let Some(path) = library_path() else {
            eprintln!("rodlab: error: this command needs the device build, {LIBRARY} beside the binary (cargo build --workspace builds it)");
            return 1;
        };
        // SAFETY: the library is this workspace's rodlab-devices crate, built
        // with this binary; its entry point has the signature above and
        // catches panics. It stays loaded until the process exits.
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
            match library.get::<DevicesMain>(b"rodlab_devices_main\0") {
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
