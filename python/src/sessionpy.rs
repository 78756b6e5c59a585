//! `rodlab.Session`: a recorded session's metadata and tables. Each table
//! is read by the library's own reader (chunks in order, a damaged chunk
//! refused or left out) and comes out as an Arrow C stream
//! ([`ArrowTable`]: polars, pyarrow and DuckDB take its columns as they lie
//! in memory), or, where polars is not installed, as columns of numpy
//! arrays (numbers) and lists (text).

use crate::arrow::ArrowTable;
use crate::convert::{self, to_python};
use crate::errors::IntoPy;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use session::{Damaged, Decoding, OwnedColumn, SessionDir, Table};
use std::path::{Path, PathBuf};

/// A session directory (made by `rodlab record`, `synth session` or
/// `import c3d`).
#[pyclass(module = "rodlab", frozen)]
pub struct Session {
    dir: SessionDir,
}

/// A table's columns as {name: array or list}, in file order, and the
/// warnings of chunks left out.
/// The numbers go to numpy without a copy (each array owns the vector
/// the reader decoded into).
fn columns(py: Python<'_>, table: Table) -> PyResult<Bound<'_, PyAny>> {
    let d = PyDict::new(py);
    for (name, column) in table.into_columns().py_err()? {
        match column {
            OwnedColumn::F64(v) => d.set_item(&name, v.into_pyarray(py))?,
            OwnedColumn::I64(v) => d.set_item(&name, v.into_pyarray(py))?,
            OwnedColumn::Text(v) => d.set_item(&name, v)?,
        }
    }
    Ok(d.into_any())
}

/// A table as an [`ArrowTable`] (`arrow`) or as [`columns`].
fn table_out(py: Python<'_>, table: Table, arrow: bool) -> PyResult<Bound<'_, PyAny>> {
    if arrow {
        return Ok(Bound::new(py, ArrowTable::of(table).py_err()?)?.into_any());
    }
    columns(py, table)
}

fn missing(path: &Path, what: &str) -> PyErr {
    crate::errors::to_py(lab::Error::input(format!(
        "{}: no {what} (run {})",
        path.display(),
        if what == "strain table" { "rodlab observe" } else { "rodlab track" }
    )))
}

/// The columns of one Parquet file of the session (`what`: its name in the error).
fn file_columns<'py>(py: Python<'py>, path: &Path, what: &str, arrow: bool) -> PyResult<Bound<'py, PyAny>> {
    if !path.is_file() {
        return Err(missing(path, what));
    }
    let table = py.detach(|| Table::read(path)).py_err()?;
    table_out(py, table, arrow)
}

#[pymethods]
impl Session {
    #[new]
    fn new(path: &Bound<'_, PyAny>) -> PyResult<Session> {
        let dir = SessionDir::new(convert::path(path, "path")?);
        if !dir.exists() {
            return Err(crate::errors::to_py(lab::Error::input(format!("{}: not a directory", dir.path().display()))));
        }
        Ok(Session { dir })
    }

    /// The session directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The directory's name.
    #[getter]
    fn name(&self) -> String {
        self.dir.name()
    }

    /// session.toml as a dictionary (None for a directory without one).
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.dir.meta().py_err()? {
            Some(m) => to_python(py, &m),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// The names of the recorded streams (a device each).
    fn streams(&self) -> Vec<String> {
        self.dir.stream_names()
    }

    /// Stream `name`'s columns ({name: numpy array}; `arrow`: an
    /// [`ArrowTable`]); `strict`: refuse a damaged chunk instead of leaving
    /// it out.
    #[pyo3(signature = (name, *, strict=false, arrow=false))]
    fn stream_columns<'py>(&self, py: Python<'py>, name: &str, strict: bool, arrow: bool) -> PyResult<Bound<'py, PyAny>> {
        if !self.dir.has_stream(name) {
            let msg = format!("{}: no stream '{name}' ({})", self.dir.path().display(), self.dir.describe_streams());
            return Err(crate::errors::to_py(lab::Error::input(msg)));
        }
        let dir = self.dir.stream(name);
        let (table, skipped) =
            py.detach(|| Table::read_chunks_decoded(&dir, if strict { Damaged::Refuse } else { Damaged::Skip }, Decoding::Parallel)).py_err()?;
        // A chunk left out is said, as the command line says it.
        let warnings = py.import("warnings")?;
        for s in skipped {
            warnings.call_method1("warn", (format!("rodlab: {s}"),))?;
        }
        table_out(py, table, arrow)
    }

    /// markers.parquet's columns (the tracked or imported markers).
    #[pyo3(signature = (*, arrow=false))]
    fn markers_columns<'py>(&self, py: Python<'py>, arrow: bool) -> PyResult<Bound<'py, PyAny>> {
        file_columns(py, &self.dir.markers(), "marker table", arrow)
    }

    /// strain.parquet's columns (the observed strain).
    #[pyo3(signature = (*, arrow=false))]
    fn strain_columns<'py>(&self, py: Python<'py>, arrow: bool) -> PyResult<Bound<'py, PyAny>> {
        file_columns(py, &self.dir.strain(), "strain table", arrow)
    }

    /// Device `name`'s gap table's columns (no gap: the same columns, empty).
    #[pyo3(signature = (name, *, arrow=false))]
    fn gaps_columns<'py>(&self, py: Python<'py>, name: &str, arrow: bool) -> PyResult<Bound<'py, PyAny>> {
        let dir = session::gaps::gaps_dir(self.dir.path(), name);
        if !dir.is_dir() {
            return table_out(py, session::gaps::gaps_table(&[]).into_read(), arrow);
        }
        let table = py.detach(|| Table::read_chunks(&dir)).py_err()?;
        table_out(py, table, arrow)
    }

    /// The video of camera `camera` (default: the first camera with one).
    #[pyo3(signature = (camera=None))]
    fn video(&self, camera: Option<&str>) -> Option<PathBuf> {
        match camera {
            Some(c) => self.dir.find_video(c),
            // A camera is a stream (its frame times) with a video beside it.
            None => self.dir.stream_names().iter().find_map(|n| self.dir.find_video(n)),
        }
    }

    /// `rodlab session info`: "streams" (rows, span_s, rate_hz of each),
    /// "devices" (each one's gaps and outage), "warnings".
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::making::info(py, &self.dir)
    }

    /// `rodlab session check`: reads every file; "ok", "problems",
    /// "warnings", "rows". `max_outage_s`: a device's longest outage
    /// allowed; `videos`: also count each video's frames.
    #[pyo3(signature = (*, max_outage_s=1.0, videos=true))]
    fn check<'py>(&self, py: Python<'py>, max_outage_s: f64, videos: bool) -> PyResult<Bound<'py, PyDict>> {
        crate::making::check(py, &self.dir, max_outage_s, videos)
    }

    /// `rodlab session export`: every table as CSV (or `format`: "json",
    /// "parquet", "ipc") and the metadata as JSON into `to`; with
    /// `aligned`, also the aligned table (the options as
    /// [`Session::aligned_columns`]'s).
    #[pyo3(signature = (to, *, aligned=false, on=None, streams=None, tolerance_s=None, r#match="previous", format="csv"))]
    #[allow(clippy::too_many_arguments)]
    fn export<'py>(
        &self,
        py: Python<'py>,
        to: &Bound<'py, PyAny>,
        aligned: bool,
        on: Option<String>,
        streams: Option<Vec<String>>,
        tolerance_s: Option<f64>,
        r#match: &str,
        format: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = crate::making::align_options(on, streams, tolerance_s, r#match, false)?;
        let format = crate::making::table_format(format)?;
        crate::making::export(py, &self.dir, &convert::path(to, "to")?, aligned.then_some(&options), format)
    }

    /// Every stream on the host times of `on` (default: the stream with
    /// the most samples): {"columns": {name: array}, "on", "streams"}.
    /// `streams`: those to join (default: all); `tolerance_s`: the
    /// farthest a joined sample may lie (default: 1.5 of each stream's
    /// median interval); `match`: "previous" or "nearest". A row without a
    /// value (beyond the tolerance, or inside an outage of the stream's
    /// gap table) holds NaN.
    #[pyo3(signature = (*, on=None, streams=None, tolerance_s=None, r#match="previous", strict=false))]
    fn aligned_columns<'py>(
        &self,
        py: Python<'py>,
        on: Option<String>,
        streams: Option<Vec<String>>,
        tolerance_s: Option<f64>,
        r#match: &str,
        strict: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = crate::making::align_options(on, streams, tolerance_s, r#match, strict)?;
        let joined = py.detach(|| session::aligned::aligned(&self.dir, &options)).py_err()?;
        let out = crate::making::joined(py, &joined.on, &joined.joined)?;
        out.set_item("warnings", joined.warnings)?;
        out.set_item("columns", columns(py, joined.table)?)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!("Session({:?})", self.dir.path().display().to_string())
    }
}
