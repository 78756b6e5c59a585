//! How the process's allocator keeps the memory it is given back. A long
//! rod's solve makes and frees megabytes (its tangent and LU: 1.2 MB each
//! at 64 sections, 4.8 MB at 128): glibc maps every block over its mmap
//! threshold on its own and unmaps it when freed, and trims the heap's top
//! past its trim threshold, so each solve's megabytes were fresh pages the
//! kernel faulted in and cleared (789 page faults a solve at 64 sections,
//! 40 % of its time in the kernel). Kept, they are reused.
//!
//! The `rodlab` binary, the Python module and the benchmarks call
//! [`retain_freed_memory`] once at start; a program embedding the crates
//! may too.

/// Blocks below this size come from the heap, not a mapping of their own
/// (glibc's largest allowed threshold on 64-bit: 32 MiB; its default
/// starts at 128 kiB).
pub const MMAP_THRESHOLD_BYTES: usize = 32 << 20;

/// Free memory at the heap's top is given back to the system past this
/// size (glibc's default: 128 kiB).
pub const TRIM_THRESHOLD_BYTES: usize = 64 << 20;

/// Sets the allocator's thresholds above (glibc on Linux; elsewhere a
/// no-op). Returns whether both were set.
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes glibc's allocation parameters; it
        // takes the arena's lock and may be called at any time.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES as libc::c_int) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// `criterion_main!` for the benchmarks of code that solves rods: sets
/// [`retain_freed_memory`] first, as the binary and the Python module do.
/// A macro, so that `rod` needs no criterion: the bench crate's resolves.
#[macro_export]
macro_rules! criterion_main_retaining_memory {
    ($($group:path),+ $(,)?) => {
        fn main() {
            $crate::memory::retain_freed_memory();
            $($group();)+
            criterion::Criterion::default().configure_from_args().final_summary();
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_both_thresholds() {
        assert!(super::retain_freed_memory());
        // Idempotent: the binary and a module it loads may both call it.
        assert!(super::retain_freed_memory());
    }
}
