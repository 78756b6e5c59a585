//! Python values to the library's and back: 3-vectors and batches from
//! anything numpy reads (lists, tuples, arrays), paths from `str` or
//! `os.PathLike`, results as numpy arrays and dictionaries.

use crate::errors::value_error;
use lie::Vec3;
use numpy::ndarray::{Array, Dimension, IntoDimension};
use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;

/// A 3-vector named `name` (with its unit) from any sequence of three
/// numbers; `None` or Python's `None`: zero.
pub fn vec3(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Vec3> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(Vec3::zeros()) };
    let a: [f64; 3] = v.extract().map_err(|_| value_error(format!("{name}: expected three numbers, got {}", short(v))))?;
    Ok(Vec3::new(a[0], a[1], a[2]))
}

/// A list of numbers named `name` (one per cable, say).
pub fn floats(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Vec<f64>> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(vec![]) };
    let array = as_array(v, name)?;
    if array.ndim() > 1 {
        return Err(value_error(format!("{name}: expected a flat sequence of numbers, got an array of shape {:?}", array.shape())));
    }
    Ok(array.to_vec().expect("contiguous"))
}

/// A float64 array from anything numpy reads (lists, arrays of ints).
pub fn as_array<'py>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let np = v.py().import("numpy")?;
    let array = np.call_method1("ascontiguousarray", (v, "float64")).map_err(|e| value_error(format!("{name}: expected numbers, got {} ({e})", short(v))))?;
    array.cast_into::<PyArrayDyn<f64>>().map_err(|_| value_error(format!("{name}: expected numbers, got {}", short(v))))
}

/// A batch argument: one row for every load, or a row per load.
pub enum Rows {
    Absent,
    One(Vec<f64>),
    Each(Vec<Vec<f64>>),
}

impl Rows {
    /// Loads in the batch, if this argument says.
    pub fn count(&self) -> Option<usize> {
        match self {
            Rows::Each(r) => Some(r.len()),
            _ => None,
        }
    }

    /// Row `i` (zeros of `width` when absent).
    pub fn row(&self, i: usize, width: usize) -> Vec<f64> {
        match self {
            Rows::Absent => vec![0.0; width],
            Rows::One(r) => r.clone(),
            Rows::Each(r) => r[i].clone(),
        }
    }
}

/// Rows of `width` numbers named `name`: a (k, width) array, or one row
/// (width,) for every load.
pub fn rows(v: Option<&Bound<'_, PyAny>>, name: &str, width: usize) -> PyResult<Rows> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(Rows::Absent) };
    let array = as_array(v, name)?;
    let data = array.to_vec().expect("contiguous");
    match *array.shape() {
        [w] if w == width => Ok(Rows::One(data)),
        [n, w] if w == width => Ok(Rows::Each((0..n).map(|i| data[i * width..(i + 1) * width].to_vec()).collect())),
        ref shape => Err(value_error(format!("{name}: expected an array of shape (k, {width}) or ({width},), got shape {shape:?}"))),
    }
}

/// A path from `str` or `os.PathLike`.
pub fn path(v: &Bound<'_, PyAny>, name: &str) -> PyResult<PathBuf> {
    v.extract::<PathBuf>().map_err(|_| value_error(format!("{name}: expected a path (str or os.PathLike), got {}", short(v))))
}

/// Paths from one path or a sequence of them.
pub fn paths(v: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = v.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    let list: Vec<Bound<'_, PyAny>> = v.extract().map_err(|_| value_error(format!("{name}: expected a path or a list of paths, got {}", short(v))))?;
    list.iter().map(|p| path(p, name)).collect()
}

/// A numpy array of `shape` holding `data` (moved, not copied).
pub fn array<'py, D: IntoDimension>(py: Python<'py>, shape: D, data: Vec<f64>) -> Bound<'py, PyAny> {
    let dim = shape.into_dimension();
    debug_assert_eq!(dim.size(), data.len());
    Array::from_shape_vec(dim, data).expect("shape matches the data").into_pyarray(py).into_any()
}

/// A serialisable value as Python dictionaries and lists (through JSON:
/// a NaN or infinity becomes `None`).
pub fn to_python<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| value_error(format!("internal: {e}")))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// The start of a value's repr, for messages.
fn short(v: &Bound<'_, PyAny>) -> String {
    let text = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// A Python dictionary of `"key" => value` pairs (`?` on each insertion).
macro_rules! py_dict {
    ($py:expr, { $($key:literal => $value:expr),* $(,)? }) => {{
        let d = pyo3::types::PyDict::new($py);
        $( d.set_item($key, $value)?; )*
        d
    }};
}
pub(crate) use py_dict;
