//! The library's error kinds as Python exceptions, with the same one-line
//! messages as the command line: bad input (exit 2 there) raises
//! `rodlab.InputError` (a `ValueError`), a failed computation
//! `rodlab.ComputationError` (a `RuntimeError`), the machine (a disk, a
//! device) `rodlab.IoError` (an `OSError`). The classes are Python's
//! (`rodlab/errors.py`): each has two bases, which a class made in Rust
//! cannot.

use lab::Kind;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The command line's flags a message names, in Python's words: each
/// `--flag-name` becomes the keyword `flag_name`, except where the keyword
/// is spelt otherwise.
pub fn python_words(message: &str) -> String {
    const RENAMED: [(&str, &str); 4] = [("--no-loo", "loo=False"), ("--tension", "tensions"), ("--tie-g", "tie_g_poisson"), ("--dynamic", "identify_dynamic")];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let len = after.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')).unwrap_or(after.len());
        let flag = &rest[at..at + 2 + len];
        let word_before = out.chars().last().is_some_and(|c| c.is_alphanumeric());
        if len == 0 || word_before || !after.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push_str("--");
            rest = after;
            continue;
        }
        match RENAMED.iter().find(|(f, _)| *f == flag) {
            Some((_, keyword)) => out.push_str(keyword),
            None => out.push_str(&flag[2..].replace('-', "_")),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// The Python exception of a library error.
pub fn to_py(e: lab::Error) -> PyErr {
    let class = match e.kind() {
        Kind::Input => "InputError",
        Kind::Computation => "ComputationError",
        Kind::Io => "IoError",
    };
    Python::attach(|py| {
        let err = match py.import("rodlab.errors").and_then(|m| m.getattr(class)) {
            Ok(t) => match t.cast_into::<PyType>() {
                Ok(t) => PyErr::from_type(t, python_words(e.message())),
                Err(_) => PyRuntimeError::new_err(python_words(e.message())),
            },
            Err(import_error) => return import_error,
        };
        // What the failed work found, as `.result` (a dictionary).
        if let Some(result) = e.result() {
            let set = crate::convert::to_python(py, result).and_then(|r| err.value(py).setattr("result", r));
            if let Err(set_error) = set {
                return set_error;
            }
        }
        err
    })
}

/// A Python exception raised where the library called back into Python
/// (an executor's task) as a library error of its kind: rodlab's
/// `InputError` and `IoError` keep theirs, anything else failed the work.
pub fn from_py(e: &PyErr, context: &str) -> lab::Error {
    let message = format!("{context}: {e}");
    Python::attach(|py| {
        let is = |class: &str| py.import("rodlab.errors").and_then(|m| m.getattr(class)).is_ok_and(|t| e.get_type(py).is_subclass(&t).unwrap_or(false));
        if is("InputError") {
            lab::Error::input(message)
        } else if is("IoError") {
            lab::Error::io(message)
        } else {
            lab::Error::computation(message)
        }
    })
}

/// A wrong argument of a Python call (a shape, a type): `ValueError`
/// naming the argument.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// `Result<T, lab::Error>` to `PyResult<T>`.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: Into<lab::Error>> IntoPy<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(|e| to_py(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::python_words;

    #[test]
    fn flags_become_keywords() {
        assert_eq!(python_words("--fit-friction: give MEAN,SD"), "fit_friction: give MEAN,SD");
        assert_eq!(python_words("--tension: 2 values given, --no-loo and --tie-g"), "tensions: 2 values given, loo=False and tie_g_poisson");
        assert_eq!(python_words("a -- b, x--y, --"), "a -- b, x--y, --");
    }
}
