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

/// The Python exception of a library error.
pub fn to_py(e: lab::Error) -> PyErr {
    let class = match e.kind() {
        Kind::Input => "InputError",
        Kind::Computation => "ComputationError",
        Kind::Io => "IoError",
    };
    Python::attach(|py| match py.import("rodlab.errors").and_then(|m| m.getattr(class)) {
        Ok(t) => match t.cast_into::<PyType>() {
            Ok(t) => PyErr::from_type(t, e.message().to_string()),
            Err(_) => PyRuntimeError::new_err(e.message().to_string()),
        },
        Err(import_error) => import_error,
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
