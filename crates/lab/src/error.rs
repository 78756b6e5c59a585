//! The lab's error: a message for the user (one line, naming the file,
//! field or device) and its [`Kind`], which decides the exit code of the
//! binary. Every crate's error converts into it keeping its own kind.

pub use fault::Kind;
use std::fmt::Display;

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    kind: Kind,
    message: String,
    /// What the failed work still found (a failed fit's values, residuals
    /// and suggestion), for callers that want more than the line.
    result: Option<std::sync::Arc<serde_json::Value>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), result: None }
    }

    /// The user's input is wrong (exit status 2).
    pub fn input(message: impl Into<String>) -> Error {
        Error::new(Kind::Input, message)
    }

    /// A computation failed on valid input (exit status 1).
    pub fn computation(message: impl Into<String>) -> Error {
        Error::new(Kind::Computation, message)
    }

    /// The machine failed: a file, a disk, a device (exit status 1).
    pub fn io(message: impl Into<String>) -> Error {
        Error::new(Kind::Io, message)
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error carrying what the failed work found (see [`Error::result`]).
    pub fn with_result(self, result: serde_json::Value) -> Error {
        Error { result: Some(std::sync::Arc::new(result)), ..self }
    }

    /// What the failed work found, when it says (a failed identification:
    /// [`crate::failed_fit::FailedFit`]).
    pub fn result(&self) -> Option<&serde_json::Value> {
        self.result.as_deref()
    }

    /// `what: message`, unless the message already starts with `what`
    /// (errors that name their file are not named twice).
    pub fn context(self, what: impl Display) -> Error {
        let what = what.to_string();
        if what.is_empty() || self.message.starts_with(&what) {
            return self;
        }
        Error { message: format!("{what}: {}", self.message), ..self }
    }

    /// The same message with another kind (e.g. a device that does not
    /// answer before recording starts is a wrong rig file: input).
    pub fn with_kind(self, kind: Kind) -> Error {
        Error { kind, ..self }
    }
}

impl Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl<E: fault::Fault> From<E> for Error {
    fn from(e: E) -> Error {
        Error { kind: e.kind(), message: e.to_string(), result: None }
    }
}

/// Context for results of any crate's error.
pub trait Context<T> {
    /// Prefixes the error's message with `what` (see [`Error::context`]).
    fn context(self, what: impl Display) -> Result<T>;
    /// As [`Context::context`], and the error becomes bad input.
    fn input(self, what: impl Display) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| e.into().context(what))
    }

    fn input(self, what: impl Display) -> Result<T> {
        self.map_err(|e| e.into().context(what).with_kind(Kind::Input))
    }
}

/// A check of a positive, finite value named `name`.
pub fn positive(name: &str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Error::input(format!("{name}: must be a positive number, got {v}")))
    }
}

/// A check of a finite value >= 0 named `name`.
pub fn non_negative(name: &str, v: f64) -> Result<f64> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(Error::input(format!("{name}: must be >= 0, got {v}")))
    }
}
