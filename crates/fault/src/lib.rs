//! `fault`: the kind of a failure, shared by every crate of the data flow
//! record -> track -> observe -> identify -> simulate -> report. Each
//! library crate's error says which kind it is ([`Fault::kind`]); the
//! `rodlab` binary maps the kind to its exit code (bad input 2, anything
//! else 1) without knowing the error types.

/// What went wrong, as far as the user is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The user's input: arguments, a config file, a data file, bytes on
    /// a line that are not what they should be. Fix the input.
    Input,
    /// A computation that did not succeed on valid input: no convergence,
    /// a model outside its range, a fit that failed its checks.
    Computation,
    /// The machine: a file that cannot be written, a disk that is full, a
    /// device that went away.
    Io,
}

impl Kind {
    /// The exit status of the `rodlab` binary for this kind (2 for bad
    /// input, 1 otherwise).
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Input => 2,
            Kind::Computation | Kind::Io => 1,
        }
    }
}

/// An error that knows its kind.
pub trait Fault: std::error::Error {
    fn kind(&self) -> Kind;
}

/// Files and sockets: the machine's side of a failure.
impl Fault for std::io::Error {
    fn kind(&self) -> Kind {
        Kind::Io
    }
}

thread_local! {
    /// Set while [`guard`] runs its closure on this thread.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside it into `Err(message)`: for a
/// dependency that panics on bytes it cannot parse (a damaged file) where
/// an error is owed. The panic says nothing on stderr (a hook installed
/// once stays silent for guarded panics and passes every other to the
/// hook before it); other threads are not affected.
pub fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(|g| g.get()) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    out.map_err(|e| e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned()).unwrap_or_else(|| "damaged".into()))
}

/// The largest configuration file (rod, scene, rig, loads, map,
/// identified) read: 16 MiB, a thousand times the largest a lab writes.
pub const CONFIG_LIMIT_BYTES: u64 = 16 << 20;

/// The largest data file read whole (a motion-capture export: C3D, TSV,
/// CSV): 2 GiB, hours of a hundred markers at a few hundred hertz.
pub const DATA_LIMIT_BYTES: u64 = 2 << 30;

/// As [`read_text`], the file's bytes (a file that grows while read is
/// cut at the limit, and refused).
pub fn read_bytes(path: &std::path::Path, limit_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    check_regular(path, limit_bytes)?;
    let mut bytes = vec![];
    std::fs::File::open(path).and_then(|f| f.take(limit_bytes + 1).read_to_end(&mut bytes)).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit_bytes {
        return Err(over_limit(bytes.len() as u64, limit_bytes));
    }
    Ok(bytes)
}

/// A path that is a regular file, judged from its metadata (nothing
/// opened: a FIFO would block its reader, a device never end).
pub fn regular_file(path: &std::path::Path) -> Result<std::fs::Metadata, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a FIFO, a device or a directory): give the file itself".into());
    }
    Ok(meta)
}

/// A regular file of at most `limit_bytes`, judged from its metadata
/// (nothing opened).
fn check_regular(path: &std::path::Path, limit_bytes: u64) -> Result<(), String> {
    let meta = regular_file(path)?;
    if meta.len() > limit_bytes {
        return Err(over_limit(meta.len(), limit_bytes));
    }
    Ok(())
}

fn over_limit(bytes: u64, limit_bytes: u64) -> String {
    format!("{bytes} bytes, over the {limit_bytes} bytes a file of this kind may have")
}

/// Reads a user's text file whole, bounded before anything is allocated:
/// a FIFO, a device (`/dev/zero`) or a directory is refused without being
/// opened (a FIFO would block, a device grow without end), and so is a
/// file over `limit_bytes`. The error is the sentence to put after the
/// file's name.
pub fn read_text(path: &std::path::Path, limit_bytes: u64) -> Result<String, String> {
    // The words std's reader gives a file that is not UTF-8.
    String::from_utf8(read_bytes(path, limit_bytes)?).map_err(|_| "stream did not contain valid UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_guarded_panic_is_an_error() {
        assert_eq!(super::guard(|| 5), Ok(5));
        assert_eq!(super::guard(|| -> i32 { panic!("thrift bool field") }), Err("thrift bool field".to_string()));
    }

    use super::*;

    #[test]
    fn bad_input_exits_2_everything_else_1() {
        assert_eq!(Kind::Input.exit_code(), 2);
        assert_eq!(Kind::Computation.exit_code(), 1);
        assert_eq!(Kind::Io.exit_code(), 1);
    }

    /// /dev/zero, a FIFO and a directory are refused at once (before, a
    /// rod file of /dev/zero grew the process to 24 GB, a FIFO hung); an
    /// oversized file is refused by its size; a small file reads.
    #[test]
    fn bounded_reads_refuse_what_is_not_a_small_regular_file() {
        let dir = std::env::temp_dir().join(format!("fault-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("rod.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        let mut refused = vec![std::path::PathBuf::from("/dev/zero"), dir.clone()];
        if made {
            refused.push(fifo.clone());
        }
        for p in &refused {
            let started = std::time::Instant::now();
            let e = read_text(p, CONFIG_LIMIT_BYTES).unwrap_err();
            assert!(e.contains("not a regular file") && started.elapsed().as_secs_f64() < 1.0, "{}: {e}", p.display());
        }
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b' '; 2048]).unwrap();
        assert!(read_text(&big, 1024).unwrap_err().contains("2048 bytes, over the 1024 bytes"));
        assert_eq!(read_text(&big, 4096).unwrap().len(), 2048);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
