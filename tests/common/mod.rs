//! Helpers shared by the end-to-end tests of the `rodlab` binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The workspace root (tests run the binary from there).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `rodlab` with `args` from the workspace root.
pub fn rodlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rodlab")).args(args).current_dir(root()).output().expect("run rodlab")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
