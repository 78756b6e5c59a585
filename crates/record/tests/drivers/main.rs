//! The record crate's driver tests in one binary (a module a device
//! protocol): each test binary linked the drivers, polars and OpenCV's
//! bindings again, 1-3 s of a cold build each; cargo-nextest runs each test
//! in a process of its own either way.

mod camera;
mod ft300_modbus;
mod ft300_property;
mod netft;
mod rtde;
