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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_exits_2_everything_else_1() {
        assert_eq!(Kind::Input.exit_code(), 2);
        assert_eq!(Kind::Computation.exit_code(), 1);
        assert_eq!(Kind::Io.exit_code(), 1);
    }
}
