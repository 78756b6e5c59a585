//! The end-to-end tests of the `rodlab` binary in one test binary (a
//! module a file, the files where they were): each test binary linked
//! polars, OpenCV's bindings and the workflows again, 1-2 s of a cold
//! build each, and `make test` runs each test in a process of its own
//! either way (cargo-nextest).

mod common;

mod docs;
mod e2e_c3d;
mod e2e_cli;
mod e2e_mocap;
mod e2e_newcomer;
mod e2e_record;
mod e2e_track;
mod e2e_ur_rtde;
mod e2e_view;
mod fuzz;
