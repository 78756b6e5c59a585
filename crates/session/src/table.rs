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

/// What a reader does with a damaged chunk of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damaged {
    /// Refuse the whole stream (the error names the chunk).
    Refuse,
    /// Leave the chunk out with a warning naming it and its rows.
    Skip,
}

/// What is wrong inside a stream's chunk that reads as Parquet: a column
/// with nulls, one that is not numbers (a stream holds host times and
/// numbers only), no `t_host_ns`, or a device clock (`timestamp`) that is
/// not a number.
pub fn chunk_problem(t: &Table) -> Option<String> {
    let df = t.df.as_ref()?;
    if !t.has("t_host_ns") {
        return Some("no t_host_ns column".into());
    }
    for c in df.columns() {
        let name = c.name().to_string();
        if c.null_count() > 0 {
            return Some(format!("column '{name}' has {} null values", c.null_count()));
        }
        if !c.dtype().is_primitive_numeric() {
            return Some(format!("column '{name}' holds {}, not numbers", c.dtype()));
        }
    }
    if t.has("timestamp") {
        let ts = t.f64("timestamp").ok()?;
        if let Some(k) = ts.iter().position(|v| !v.is_finite()) {
            return Some(format!("the device clock (timestamp) is not a number at row {k}"));
        }
    }
    None
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
        // A write that fails (a full disk) leaves no half file behind to
        // fill what space is left.
        let written = ParquetWriter::new(file).with_key_value_metadata(kv).finish(&mut df).map_err(|e| werr(e.to_string())).map(drop);
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        std::fs::rename(&tmp, path).map_err(|e| werr(e.to_string()))
    }

    /// Rows of the Parquet file at `path`, from its footer (nothing else read).
    pub fn rows_in_file(path: &Path) -> Result<usize, TableError> {
        let rerr = |e: String| TableError::Read(path.to_path_buf(), e);
        let file = std::fs::File::open(path).map_err(|e| rerr(e.to_string()))?;
        fault::guard(|| ParquetReader::new(file).num_rows()).map_err(|why| rerr(format!("damaged Parquet ({why})")))?.map_err(|e| rerr(e.to_string()))
    }

    pub fn read(path: &Path) -> Result<Table, TableError> {
        // The Parquet reader panics on some damaged footers ("thrift bool
        // field"): a damaged file is an error naming it, not a crash.
        fault::guard(|| Table::read_unguarded(path)).unwrap_or_else(|why| Err(TableError::Read(path.to_path_buf(), format!("damaged Parquet ({why})"))))
    }

    fn read_unguarded(path: &Path) -> Result<Table, TableError> {
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

    /// Reads every `*.parquet` chunk of a stream directory, in name order,
    /// as [`Table::read_chunks`] does, or (with `Damaged::Skip`) leaving
    /// out each chunk that cannot be read, whose columns differ from the
    /// first good chunk's, or whose content is damaged ([`chunk_problem`]):
    /// one warning each, naming the chunk and the rows it held.
    pub fn read_chunks_or_skip(dir: &Path, damaged: Damaged) -> Result<(Table, Vec<String>), TableError> {
        if damaged == Damaged::Refuse {
            return Ok((Table::read_chunks(dir)?, vec![]));
        }
        let rerr = |e: String| TableError::Read(dir.to_path_buf(), e);
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| rerr(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        names.sort();
        let mut out: Option<DataFrame> = None;
        let mut warnings = vec![];
        for n in &names {
            let skipped = |why: String| {
                let rows = Table::rows_in_file(n).map_or("its rows".to_string(), |r| format!("{r} rows"));
                format!("{}: left out ({rows} lost): {why}", n.display())
            };
            let t = match Table::read(n) {
                Ok(t) => t,
                Err(e) => {
                    warnings.push(skipped(e.to_string()));
                    continue;
                }
            };
            if let Some(why) = chunk_problem(&t) {
                warnings.push(skipped(why));
                continue;
            }
            let df = t.df.expect("read");
            match out.as_mut() {
                None => out = Some(df),
                Some(o) => {
                    if let Err(e) = o.vstack_mut(&df) {
                        warnings.push(skipped(format!("its columns differ from the stream's first chunk's ({e})")));
                    }
                }
            }
        }
        Ok((Table { columns: vec![], df: Some(out.unwrap_or_default()), path: dir.to_path_buf(), metadata: vec![] }, warnings))
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
