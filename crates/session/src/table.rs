//! A thin typed layer over polars for the project's tables: build columns,
//! write Parquet atomically, read with errors that name file and column.

use polars::io::parquet::write::KeyValueMetadata;
use polars::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{0}: cannot read: {1}")]
    Read(PathBuf, String),
    #[error("{0}: cannot write: {1}")]
    Write(PathBuf, String),
    #[error("{0}: missing column '{1}'")]
    MissingColumn(PathBuf, String),
    #[error("{0}: column '{1}': {2}")]
    BadColumn(PathBuf, String, String),
}

impl fault::Fault for TableError {
    fn kind(&self) -> fault::Kind {
        match self {
            TableError::Write(..) => fault::Kind::Io,
            _ => fault::Kind::Input,
        }
    }
}

/// Columns under construction, or a table read from disk.
#[derive(Default)]
pub struct Table {
    columns: Vec<Column>,
    df: Option<DataFrame>,
    path: PathBuf,
    /// File-level key/value metadata (e.g. `frame = world`).
    metadata: Vec<(String, String)>,
}

impl Table {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push_f64(&mut self, name: &str, v: Vec<f64>) {
        self.columns.push(Column::new(name.into(), v));
    }

    pub fn push_i64(&mut self, name: &str, v: Vec<i64>) {
        self.columns.push(Column::new(name.into(), v));
    }

    pub fn push_u32(&mut self, name: &str, v: Vec<u32>) {
        self.columns.push(Column::new(name.into(), v));
    }

    pub fn push_str(&mut self, name: &str, v: Vec<String>) {
        self.columns.push(Column::new(name.into(), v));
    }

    /// Adds file-level metadata (written into the Parquet footer).
    pub fn set_meta(&mut self, key: &str, value: &str) {
        self.metadata.retain(|(k, _)| k != key);
        self.metadata.push((key.into(), value.into()));
    }

    /// File-level metadata of a table read from disk.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Writes Parquet to `path` via a temporary file and a rename, so a
    /// reader never sees half a file.
    pub fn write(self, path: &Path) -> Result<(), TableError> {
        let werr = |e: String| TableError::Write(path.to_path_buf(), e);
        let height = self.columns.first().map_or(0, |c| c.len());
        let mut df = DataFrame::new(height, self.columns).map_err(|e| werr(e.to_string()))?;
        let tmp = path.with_extension("parquet.tmp");
        let file = std::fs::File::create(&tmp).map_err(|e| werr(e.to_string()))?;
        let kv = (!self.metadata.is_empty()).then(|| KeyValueMetadata::from_static(self.metadata.clone()));
        ParquetWriter::new(file).with_key_value_metadata(kv).finish(&mut df).map_err(|e| werr(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| werr(e.to_string()))
    }

    pub fn read(path: &Path) -> Result<Table, TableError> {
        let rerr = |e: String| TableError::Read(path.to_path_buf(), e);
        let file = std::fs::File::open(path).map_err(|e| rerr(e.to_string()))?;
        let mut reader = ParquetReader::new(file);
        let metadata = reader
            .get_metadata()
            .map_err(|e| rerr(e.to_string()))?
            .key_value_metadata()
            .as_ref()
            .map(|kv| kv.iter().filter_map(|k| k.value.clone().map(|v| (k.key.clone(), v))).collect())
            .unwrap_or_default();
        let df = reader.finish().map_err(|e| rerr(e.to_string()))?;
        Ok(Table { columns: vec![], df: Some(df), path: path.to_path_buf(), metadata })
    }

    /// Reads every `*.parquet` chunk of a stream directory, in name order.
    pub fn read_chunks(dir: &Path) -> Result<Table, TableError> {
        let rerr = |e: String| TableError::Read(dir.to_path_buf(), e);
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| rerr(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        names.sort();
        let mut out: Option<DataFrame> = None;
        for n in &names {
            let t = Table::read(n)?;
            let df = t.df.expect("read");
            match out.as_mut() {
                None => out = Some(df),
                Some(o) => {
                    o.vstack_mut(&df).map_err(|e| TableError::Read(n.clone(), e.to_string()))?;
                }
            }
        }
        Ok(Table { columns: vec![], df: Some(out.unwrap_or_default()), path: dir.to_path_buf(), metadata: vec![] })
    }

    /// Rows of a table under construction.
    pub fn height_pending(&self) -> usize {
        self.columns.first().map_or(0, |c| c.len())
    }

    pub fn height(&self) -> usize {
        self.df.as_ref().map_or(0, |d| d.height())
    }

    /// Column names and types of a table read from disk, in file order.
    pub fn schema(&self) -> Vec<(String, String)> {
        self.df.as_ref().map_or(vec![], |d| d.schema().iter().map(|(n, t)| (n.to_string(), t.to_string())).collect())
    }

    /// Every column of a table read from disk as text, in file order:
    /// integers as integers, floats in their shortest exact form (what a
    /// CSV export writes).
    pub fn text_columns(&self) -> Result<Vec<(String, Vec<String>)>, TableError> {
        let mut out = vec![];
        for (name, dtype) in self.schema() {
            let text: Vec<String> = if dtype.starts_with('i') || dtype.starts_with('u') {
                self.i64(&name)?.iter().map(|v| v.to_string()).collect()
            } else if dtype.starts_with('f') {
                self.f64(&name)?.iter().map(|v| v.to_string()).collect()
            } else {
                self.str(&name)?
            };
            out.push((name, text));
        }
        Ok(out)
    }

    pub fn has(&self, name: &str) -> bool {
        self.df.as_ref().is_some_and(|d| d.column(name).is_ok())
    }

    fn column(&self, name: &str, dtype: &DataType) -> Result<Series, TableError> {
        let df = self.df.as_ref().ok_or_else(|| TableError::MissingColumn(self.path.clone(), name.into()))?;
        let c = df.column(name).map_err(|_| TableError::MissingColumn(self.path.clone(), name.into()))?;
        if c.null_count() > 0 {
            return Err(TableError::BadColumn(self.path.clone(), name.into(), format!("{} null values", c.null_count())));
        }
        let s = c.as_materialized_series().cast(dtype).map_err(|e| TableError::BadColumn(self.path.clone(), name.into(), e.to_string()))?;
        if s.null_count() > 0 {
            return Err(TableError::BadColumn(self.path.clone(), name.into(), format!("values not representable as {dtype}")));
        }
        Ok(s)
    }

    pub fn f64(&self, name: &str) -> Result<Vec<f64>, TableError> {
        let s = self.column(name, &DataType::Float64)?;
        Ok(s.f64().expect("cast").into_no_null_iter().collect())
    }

    pub fn i64(&self, name: &str) -> Result<Vec<i64>, TableError> {
        let s = self.column(name, &DataType::Int64)?;
        Ok(s.i64().expect("cast").into_no_null_iter().collect())
    }

    pub fn u32(&self, name: &str) -> Result<Vec<u32>, TableError> {
        let s = self.column(name, &DataType::UInt32)?;
        Ok(s.u32().expect("cast").into_no_null_iter().collect())
    }

    pub fn str(&self, name: &str) -> Result<Vec<String>, TableError> {
        let s = self.column(name, &DataType::String)?;
        let ca = s.str().expect("cast");
        Ok((0..ca.len()).map(|i| ca.get(i).unwrap_or_default().to_string()).collect())
    }
}
