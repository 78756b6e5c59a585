//! The lab crate's workflow tests in one binary (a module a workflow):
//! every test binary links polars, the solvers and the session formats
//! again, 1-3 s of a cold build each, and `make test` runs each test in a
//! process of its own either way (cargo-nextest). The memory-bounded
//! property test keeps a binary of its own (its counting allocator).

#[path = "../common/mod.rs"]
mod common;

mod dynamic;
mod export;
mod held_sessions;
mod identify;
mod observe;
mod sessions;
mod shipped_holds;
mod simulate;
mod solve;
mod units;
mod validate;
