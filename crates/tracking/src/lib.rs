//! The tracking build of `rodlab` (`librodlab_tracking.so`): `track` of one
//! uncompressed AVI (`session::avi`) without annotated frames, the command
//! the binary sends here (`rodlab_cli::needs_only_tracking`). It calls no
//! video or image library, so that the linker keeps OpenCV's core and
//! imgproc alone: 21 libraries to load instead of the device build's 240
//! (0.1 s of every `track`). The device build takes `track`'s request and
//! printing from here. Stage: track.
//!
//! It must not depend on the device build: a shared library exports every
//! `#[no_mangle]` entry point it links, and the device build's would keep
//! all of it, OpenCV's video libraries included.

use rodlab_cli::progress::Bars;
use rodlab_cli::Command;
use std::os::raw::{c_char, c_int};

/// `track` of one uncompressed video; any other command is refused (the
/// binary sends it to the device build).
pub fn run(command: Command, bars: &Bars) -> lab::Result<()> {
    match command {
        Command::Track(a) => {
            let req = track_request(a)?;
            let tracked = lab_devices::track::track_raw(&req, bars)?;
            print_tracked(&req, &tracked);
            Ok(())
        }
        _ => Err(lab::Error::input("this build tracks uncompressed videos only: the device build (librodlab_devices.so) does the rest")),
    }
}

/// `track --camera`'s request: one video.
pub fn track_request(a: rodlab_cli::cmd_lab::TrackArgs) -> lab::Result<lab_devices::track::TrackRequest> {
    let camera = a.camera.ok_or_else(|| lab::Error::input("--camera: one camera's file (or a camera set with --cameras)"))?;
    let [input] = <[std::path::PathBuf; 1]>::try_from(a.inputs)
        .map_err(|v| lab::Error::input(format!("{} videos with --camera: give one (or a camera set with --cameras)", v.len())))?;
    Ok(lab_devices::track::TrackRequest {
        input,
        camera,
        markers: a.markers,
        frames: a.frames,
        fps: a.fps,
        out: a.out,
        overlay: a.overlay,
        overlay_every: a.overlay_every as usize,
        marker_height_m: a.marker_height_m,
    })
}

/// What `track --camera` did, on stdout (warnings on stderr).
pub fn print_tracked(req: &lab_devices::track::TrackRequest, t: &lab_devices::track::Tracked) {
    match &t.world_from {
        Some(meta) => println!("positions in the world frame of {}, markers {:.1} mm above the board", meta.display(), 1e3 * t.marker_height_m),
        None => println!("positions in the board frame (no session.toml beside the video), markers {:.1} mm above the board", 1e3 * t.marker_height_m),
    }
    for w in &t.warnings {
        eprintln!("rodlab: warning: {w}");
    }
    println!("{} frames, {} markers: {} missing, {} merged, {} re-acquired marker-frames", t.frames, t.markers, t.missing, t.merged, t.reacquired);
    println!("decoding {:.0} frames/s, tracking {:.0} frames/s", t.decode_fps, t.track_fps);
    println!("wrote {}", req.out.display());
}

/// The entry point the binary calls ([`rodlab_cli::main_from_c`]).
///
/// # Safety
/// `argv` holds `argc` valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn rodlab_tracking_main(argc: c_int, argv: *const *const c_char) -> c_int {
    rodlab_cli::main_from_c(argc, argv, rodlab_cli::RunHere(run))
}
