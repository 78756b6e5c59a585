//! `rodlab` for Python: the door from Python to the `lab` library's
//! workflows (record -> track -> observe -> identify -> simulate ->
//! validate -> report), with numpy arrays in SI units in and out.
//!
//! This crate only converts: Python values become the library's typed
//! requests, results become numpy arrays, dictionaries and small classes,
//! and the library's error kinds become Python exceptions
//! (`rodlab.InputError`, `rodlab.ComputationError`, `rodlab.IoError`,
//! defined in `rodlab/errors.py`). Long work runs on a worker thread with
//! the GIL released, reports to an optional callback and stops on Ctrl-C
//! (`work.rs`). The pure-Python package `rodlab` (python/rodlab) wraps this
//! module `rodlab._rodlab`.

// The doc comments are the Python docstrings (`help(rodlab.Rod.solve)`):
// units are written [N], as Python users read them, not escaped for rustdoc.
#![allow(rustdoc::broken_intra_doc_links)]

use pyo3::prelude::*;

/// mimalloc for the module's own allocations: a stream's chunks are
/// decoded on two threads into many small buffers, which glibc's malloc
/// serves through locked arenas (Session.stream of 600 chunks: 1.21-1.29
/// -> 1.08-1.11 times Python polars' reader, which has jemalloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod arrow;
mod convert;
#[cfg(feature = "devices")]
mod devices;
mod errors;
mod making;
mod rodpy;
mod sessionpy;
mod work;
mod workflows;

#[pymodule]
fn _rodlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // As the `rodlab` binary: freed megabytes kept for the next solve (rod::memory).
    rod::memory::retain_freed_memory();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("HAS_DEVICES", cfg!(feature = "devices"))?;
    m.add_class::<rodpy::Rod>()?;
    m.add_class::<rodpy::Shape>()?;
    m.add_class::<rodpy::Shapes>()?;
    m.add_class::<workflows::Identified>()?;
    m.add_class::<workflows::Simulation>()?;
    m.add_class::<sessionpy::Session>()?;
    m.add_class::<arrow::ArrowTable>()?;
    m.add_function(wrap_pyfunction!(workflows::identify, m)?)?;
    m.add_function(wrap_pyfunction!(workflows::identify_dynamic, m)?)?;
    m.add_function(wrap_pyfunction!(workflows::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(workflows::validate, m)?)?;
    m.add_function(wrap_pyfunction!(workflows::band_replay, m)?)?;
    m.add_function(wrap_pyfunction!(workflows::observe, m)?)?;
    m.add_function(wrap_pyfunction!(making::synth_session, m)?)?;
    m.add_function(wrap_pyfunction!(making::import_c3d, m)?)?;
    m.add_function(wrap_pyfunction!(making::archive_index, m)?)?;
    m.add_function(wrap_pyfunction!(making::archive_report, m)?)?;
    m.add_function(wrap_pyfunction!(making::import_table, m)?)?;
    m.add_function(wrap_pyfunction!(rodpy::solve_time_in_rust_s, m)?)?;
    #[cfg(feature = "devices")]
    {
        m.add_function(wrap_pyfunction!(devices::track, m)?)?;
        m.add_function(wrap_pyfunction!(devices::calibrate, m)?)?;
        m.add_function(wrap_pyfunction!(devices::record, m)?)?;
        m.add_class::<devices::RobotEmulator>()?;
        m.add_class::<devices::Ft300Emulator>()?;
        m.add_class::<devices::NetFtEmulator>()?;
        m.add_class::<devices::AsciiSensorEmulator>()?;
    }
    Ok(())
}
