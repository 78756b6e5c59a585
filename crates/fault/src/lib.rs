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
}
