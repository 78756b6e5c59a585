//! A small tmpfs mounted for a test, to fill a disk on purpose (root only:
//! elsewhere the test is skipped loudly). Shared by the end-to-end tests
//! and the session crate's own (`#[path]`), with std alone.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs at `small-disk` under a test's directory, unmounted on drop.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's spelling: "256k") under `dir`;
    /// `None`, said on stderr, where mounting is not allowed.
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let at = dir.join("small-disk");
        std::fs::create_dir_all(&at).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&at).status().is_ok_and(|s| s.success());
        if !ok {
            eprintln!("\n*** SKIPPED a full-disk test: cannot mount a tmpfs (not root?) ***\n");
        }
        ok.then_some(Tmpfs(at))
    }

    /// Fills the disk with a file `filler`, then gives back `pages` of
    /// tmpfs's 4 kB pages.
    pub fn leave_free(&self, pages: u64) {
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        while std::io::Write::write_all(&mut f, &[0u8; 4096]).is_ok() {}
        // A write cut short leaves its last page part filled: filled to its end.
        while std::io::Write::write_all(&mut f, &[0]).is_ok() {}
        let full = f.metadata().unwrap().len();
        f.set_len(full - pages * 4096).unwrap();
    }

    /// What is on the disk besides the filler.
    pub fn files(&self) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n != "filler").collect()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
