//! The identify crate's tests in one binary (a module a file): each test
//! binary linked polars and the solvers again, a second or two of a cold
//! build each; cargo-nextest runs each test in a process of its own either
//! way.

mod fit;
mod held;
mod hyperelastic;
mod units;
