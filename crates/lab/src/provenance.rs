//! Where a report's inputs came from: file names with their SHA-256, so a
//! report can be traced to the exact files it was made from.

use sha2::{Digest, Sha256};
use std::path::Path;

/// SHA-256 of a file's bytes in hex ("unreadable" when it cannot be read).
pub fn sha256_file(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(b) => format!("{:x}", Sha256::digest(&b)),
        Err(_) => "unreadable".into(),
    }
}

/// SHA-256 of some text in hex.
pub fn sha256_text(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// A provenance row `(label, "sha256 <hex>")` for a file.
pub fn file_row(label: impl Into<String>, path: &Path) -> (String, String) {
    (label.into(), format!("sha256 {}", sha256_file(path)))
}

/// The first provenance row of every report.
pub fn version_row() -> (String, String) {
    ("rodlab".into(), env!("CARGO_PKG_VERSION").into())
}
