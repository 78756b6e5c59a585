//! The lab-devices crate's tests in one binary (a module a file): each test
//! binary linked the workflows, the drivers and OpenCV's bindings again,
//! 2-3 s of a cold build each; cargo-nextest runs each test in a process of
//! its own either way.

#[path = "../../../lab/tests/common/mod.rs"]
mod common;

mod check;
mod frames;
mod virtual_lab;
