//! Tables handed to Python by the Arrow PyCapsule interface
//! (`__arrow_c_stream__`): polars, pyarrow and DuckDB take the columns the
//! reader decoded as they lie in memory, without a copy per column.

use polars::prelude::{CompatLevel, DataFrame};
use polars_arrow::array::{Array, StructArray};
use polars_arrow::datatypes::{ArrowDataType, Field};
use polars_arrow::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use session::Table;

/// A table for Python's data-frame libraries: `polars.DataFrame(t)`,
/// `pyarrow.table(t)`, DuckDB's `FROM t`.
#[pyclass(module = "rodlab", frozen)]
pub struct ArrowTable {
    frame: DataFrame,
}

/// The stream a capsule carries: its batches are arrays behind `Arc`s,
/// which any thread may read and release.
#[repr(transparent)]
struct Stream(ffi::ArrowArrayStream);

// SAFETY: the stream's private data is an iterator over owned arrays
// (reference-counted buffers, `Send` themselves); the consumer moves the
// stream out of the capsule before it reads it, from whichever thread.
unsafe impl Send for Stream {}

impl ArrowTable {
    /// The table's columns moved (not copied) into a frame: numbers as
    /// f64 or i64 (a file's narrower ones widened), text as text.
    pub fn of(table: Table) -> Result<ArrowTable, session::TableError> {
        Ok(ArrowTable { frame: table.into_frame()? })
    }
}

#[pymethods]
impl ArrowTable {
    /// The Arrow C stream of the table's rows (one batch a chunk); the
    /// schema requested is not applied: the columns come as they are.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let compat = CompatLevel::newest();
        let fields = self.frame.get_columns().iter().map(|c| c.field().to_arrow(compat)).collect();
        let dtype = ArrowDataType::Struct(fields);
        let batches: Vec<Box<dyn Array>> =
            self.frame.iter_chunks(compat, false).map(|batch| StructArray::new(dtype.clone(), batch.height(), batch.into_arrays(), None).boxed()).collect();
        let stream = ffi::export_iterator(Box::new(batches.into_iter().map(Ok)), Field::new("".into(), dtype, false));
        PyCapsule::new_with_value(py, Stream(stream), c"arrow_array_stream")
    }

    /// Rows.
    fn __len__(&self) -> usize {
        self.frame.height()
    }
}
