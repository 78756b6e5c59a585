//! `lab`: the lab's workflows as a library — a session in, results out.
//! Each stage of record -> track -> observe -> identify -> simulate ->
//! validate -> report is a function of typed values (paths only where the
//! work is about files) that returns a typed result, prints nothing and
//! reports progress through a [`progress::Progress`]. The `rodlab` binary
//! turns arguments into these values and results into lines; tests and
//! scripts call them directly.
//!
//! It builds without OpenCV: recording, emulating devices, tracking, the
//! live virtual lab and the browser views are the `lab-devices` crate's
//! (which the `rodlab` binary loads only for those commands).
//! [`mod@reference`] turns the config files' parsers into their JSON
//! schemas and reference tables.

pub mod archive;
pub mod band;
pub mod c3d;
pub mod c3d_words;
pub mod data;
pub mod dynamic;
pub mod error;
pub mod export;
pub mod failed_fit;
pub mod identify;
pub mod info;
pub mod loads;
pub mod mocap_tables;
pub mod observe;
pub mod paper;
pub mod params;
pub mod progress;
pub mod provenance;
pub mod reference;
pub mod rig;
pub mod ringdown;
pub mod simulate;
pub mod solve;
pub mod synth;
pub mod tables;
pub mod validate;

pub use error::{Context, Error, Kind, Result};
pub use progress::{Progress, Silent, Task};
pub use session::SessionDir;

/// Reads a rod file, optionally with `sections` equal sections and other
/// strain `modes` (names as in the rod file: cosserat, euler-bernoulli,
/// kirchhoff-extensible, timoshenko).
pub fn read_rod(path: &std::path::Path, sections: Option<usize>, modes: Option<&str>) -> Result<rod::Rod> {
    let mut rod = rod::Rod::from_file(path)?;
    if let Some(n) = sections {
        if n == 0 || n > rod::config::MAX_SECTIONS {
            return Err(Error::input(format!("--sections: must be between 1 and {}, got {n}", rod::config::MAX_SECTIONS)));
        }
        rod = rod.with_equal_sections(n);
    }
    if let Some(m) = modes {
        let modes = rod::StrainModes::by_name(m).ok_or_else(|| Error::input(format!("--modes: unknown mode '{m}'")))?;
        rod = rod.with_modes(modes);
    }
    Ok(rod)
}
