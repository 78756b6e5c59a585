//! The project's tables on disk, read and written by polars: build
//! columns, write Parquet atomically, read (any writer's flat table:
//! polars', pyarrow's, DuckDB's, ours) with errors that name file and
//! column, a stream's chunks checked and stacked by the rules of
//! `session check`.

use polars::prelude as pl;
use polars::prelude::{PolarsError, SerReader, SerWriter};
use polars_parquet::parquet::metadata::KeyValue;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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

/// One column's values, in the type its file holds (narrower integers
/// widened to 32 bits); a null is its type's default, counted in `nulls`.
#[derive(Clone, Debug, PartialEq)]
enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
    Str(Vec<String>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str(v) => v.len(),
        }
    }

    /// The type's name as messages and `session info` spell it.
    fn dtype(&self) -> &'static str {
        match self {
            Values::F64(_) => "f64",
            Values::F32(_) => "f32",
            Values::I64(_) => "i64",
            Values::I32(_) => "i32",
            Values::U32(_) => "u32",
            Values::U64(_) => "u64",
            Values::Bool(_) => "bool",
            Values::Str(_) => "str",
        }
    }

    fn is_number(&self) -> bool {
        !matches!(self, Values::Bool(_) | Values::Str(_))
    }

    /// The first infinite value and its row (only floats can hold one:
    /// the stream rules refuse a column of text before this is asked).
    fn first_infinite(&self) -> Option<(usize, f64)> {
        match self {
            Values::F64(v) => v.iter().position(|x| x.is_infinite()).map(|k| (k, v[k])),
            Values::F32(v) => v.iter().position(|x| x.is_infinite()).map(|k| (k, f64::from(v[k]))),
            _ => None,
        }
    }

    /// `parts` (of one type, at least one) as one column, room made once:
    /// each value is copied once.
    fn concat(parts: Vec<Values>) -> Values {
        let rows: usize = parts.iter().map(Values::len).sum();
        let mut parts = parts.into_iter();
        let mut out = parts.next().expect("a column has a chunk");
        match &mut out {
            Values::F64(v) => v.reserve(rows - v.len()),
            Values::F32(v) => v.reserve(rows - v.len()),
            Values::I64(v) => v.reserve(rows - v.len()),
            Values::I32(v) => v.reserve(rows - v.len()),
            Values::U32(v) => v.reserve(rows - v.len()),
            Values::U64(v) => v.reserve(rows - v.len()),
            Values::Bool(v) => v.reserve(rows - v.len()),
            Values::Str(v) => v.reserve(rows - v.len()),
        }
        parts.for_each(|v| out.extend(v));
        out
    }

    /// Appends `other` (of the same type).
    fn extend(&mut self, other: Values) {
        match (self, other) {
            (Values::F64(a), Values::F64(b)) => a.extend(b),
            (Values::F32(a), Values::F32(b)) => a.extend(b),
            (Values::I64(a), Values::I64(b)) => a.extend(b),
            (Values::I32(a), Values::I32(b)) => a.extend(b),
            (Values::U32(a), Values::U32(b)) => a.extend(b),
            (Values::U64(a), Values::U64(b)) => a.extend(b),
            (Values::Bool(a), Values::Bool(b)) => a.extend(b),
            (Values::Str(a), Values::Str(b)) => a.extend(b),
            _ => unreachable!("columns of one type"),
        }
    }

    /// Every value as a float (text parsed), `None` where one is not a number.
    fn to_f64(&self) -> Option<Vec<f64>> {
        Some(match self {
            Values::F64(v) => v.clone(),
            Values::F32(v) => v.iter().map(|x| *x as f64).collect(),
            Values::I64(v) => v.iter().map(|x| *x as f64).collect(),
            Values::I32(v) => v.iter().map(|x| *x as f64).collect(),
            Values::U32(v) => v.iter().map(|x| *x as f64).collect(),
            Values::U64(v) => v.iter().map(|x| *x as f64).collect(),
            Values::Bool(v) => v.iter().map(|x| f64::from(u8::from(*x))).collect(),
            Values::Str(v) => return v.iter().map(|s| s.trim().parse().ok()).collect(),
        })
    }

    /// Every value as an integer: floats truncated towards zero, `None`
    /// where one does not fit (or is not finite, or text not a number).
    fn to_i128(&self) -> Option<Vec<i128>> {
        let float = |x: f64| (x.is_finite() && x.abs() < 1.7e38).then(|| x.trunc() as i128);
        match self {
            Values::F64(v) => v.iter().map(|x| float(*x)).collect(),
            Values::F32(v) => v.iter().map(|x| float(*x as f64)).collect(),
            Values::I64(v) => Some(v.iter().map(|x| *x as i128).collect()),
            Values::I32(v) => Some(v.iter().map(|x| *x as i128).collect()),
            Values::U32(v) => Some(v.iter().map(|x| *x as i128).collect()),
            Values::U64(v) => Some(v.iter().map(|x| *x as i128).collect()),
            Values::Bool(v) => Some(v.iter().map(|x| i128::from(*x)).collect()),
            Values::Str(v) => v.iter().map(|s| s.trim().parse().ok()).collect(),
        }
    }

    /// Every value as text: integers as integers, floats in their
    /// shortest exact form (what a CSV export writes).
    fn to_text(&self) -> Vec<String> {
        fn text<T: ToString>(v: &[T]) -> Vec<String> {
            v.iter().map(T::to_string).collect()
        }
        match self {
            Values::F64(v) => text(v),
            Values::F32(v) => text(v),
            Values::I64(v) => text(v),
            Values::I32(v) => text(v),
            Values::U32(v) => text(v),
            Values::U64(v) => text(v),
            Values::Bool(v) => text(v),
            Values::Str(v) => v.clone(),
        }
    }
}

/// A named column.
#[derive(Clone, Debug, PartialEq)]
struct Column {
    name: String,
    values: Values,
    nulls: usize,
}

/// Columns under construction, or a table read from disk.
#[derive(Default)]
pub struct Table {
    columns: Vec<Column>,
    /// The columns read from disk (`None`: a table under construction).
    read: Option<Vec<Column>>,
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
    let columns = t.read.as_ref()?;
    if !t.has("t_host_ns") {
        return Some("no t_host_ns column".into());
    }
    for c in columns {
        if c.nulls > 0 {
            return Some(format!("column '{}' has {} null values", c.name, c.nulls));
        }
        if !c.values.is_number() {
            return Some(format!("column '{}' holds {}, not numbers", c.name, c.values.dtype()));
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

/// How far before the session's start a stream's host time may lie \[ns\]
/// (a device's first samples stamped as they arrive).
const HOST_BEFORE_START_NS: i64 = 60_000_000_000;
/// How long after the start a host time may lie \[ns\]: 30 days, past
/// any recording (a row at i64::MAX made validate blame the scene).
const HOST_SPAN_NS: i64 = 30 * 86_400 * 1_000_000_000;

/// What is wrong with a stream's chunk read after the chunks before it
/// in name order (`last_host_ns`: the last host time they held): what
/// [`chunk_problem`] finds, a host time outside any recording (a minute
/// before its start, a month after), a host time that runs backwards
/// (inside the chunk, or behind the chunk before: a chunk copied over the
/// next, a foreign or shifted one), or an infinite value. One rule for
/// `session check`, the stream readers that skip a damaged chunk, and
/// those that refuse one (`--strict`). A good chunk gives its last host
/// time (none when it has no rows), what the next chunk is read after.
pub fn stream_chunk_problem(t: &Table, last_host_ns: Option<i64>) -> Result<Option<i64>, String> {
    if let Some(p) = chunk_problem(t) {
        return Err(p);
    }
    // Read in place: this check runs on every chunk of every stream read.
    let converted;
    let th: &[i64] = match t.checked("t_host_ns").map(|c| &c.values) {
        Ok(Values::I64(v)) => v,
        _ => match t.i64("t_host_ns") {
            Ok(v) => {
                converted = v;
                &converted
            }
            Err(_) => return Ok(None),
        },
    };
    if let Some(k) = th.iter().position(|v| *v < -HOST_BEFORE_START_NS || *v > HOST_SPAN_NS) {
        return Err(format!("host time {:.3} s at row {k} lies outside any recording (t_host_ns counts from the session's start)", th[k] as f64 * 1e-9));
    }
    let mut prev = last_host_ns;
    for (k, now) in th.iter().enumerate() {
        if let Some(p) = prev.filter(|p| now < p) {
            let whose = if k == 0 { "the chunk before's last" } else { "the row before's" };
            return Err(format!(
                "host time runs backwards at row {k}: {:.6} s after {whose} {:.6} s (a damaged, copied or foreign chunk)",
                *now as f64 * 1e-9,
                p as f64 * 1e-9
            ));
        }
        prev = Some(*now);
    }
    for c in t.read.iter().flatten().filter(|c| c.name != "t_host_ns") {
        if let Some((k, v)) = c.values.first_infinite() {
            return Err(format!("column '{}' is {v} at row {k}", c.name));
        }
    }
    Ok(th.last().copied())
}

/// A table file is a regular file ([`fault::regular_file`]): a FIFO named
/// like a chunk hung `session check` and every reader. Its size in bytes.
fn regular_file(path: &Path) -> Result<u64, TableError> {
    fault::regular_file(path).map(|meta| meta.len()).map_err(|why| TableError::Read(path.to_path_buf(), why))
}

/// The largest table file read into memory rather than mapped
/// ([`Table::read`]): a stream's chunk is tens of kilobytes.
const READ_INTO_MEMORY_BYTES: u64 = 64 << 20;

/// The file's columns: names and types, in file order.
fn schema_of(columns: &[Column]) -> String {
    columns.iter().map(|c| format!("{}: {}", c.name, c.values.dtype())).collect::<Vec<_>>().join(", ")
}

/// An error naming chunk `path` where its columns differ in names or
/// types from those of the stream's first chunk (`first`, if any yet).
fn same_columns(first: Option<&Vec<Column>>, more: &[Column], path: &Path) -> Result<(), TableError> {
    let Some(to) = first else { return Ok(()) };
    let same = to.len() == more.len() && to.iter().zip(more).all(|(a, b)| a.name == b.name && a.values.dtype() == b.values.dtype());
    if !same {
        let why = format!("its columns differ from the stream's first chunk's ([{}] against [{}])", schema_of(more), schema_of(to));
        return Err(TableError::Read(path.to_path_buf(), why));
    }
    Ok(())
}

/// A stream's good chunks' columns, in order.
type Chunks = Vec<Vec<Column>>;

/// Reads a stream's `*.parquet` chunks in name order, each checked by
/// [`stream_chunk_problem`]: the good chunks' columns, and a warning for
/// each damaged chunk left out (or the first one refused), as `damaged`
/// says ([`Table::read_chunks_or_skip`]).
fn read_stream_chunks(dir: &Path, damaged: Damaged, decoding: Decoding) -> Result<(Chunks, Vec<String>), TableError> {
    let files = Table::chunk_files(dir)?;
    // Each chunk decoded and checked on its own first (in parallel where
    // asked), then checked against the chunk before it in order.
    let decode = |n: &PathBuf| Table::read(n).map(DecodedChunk::of);
    let decoded: Vec<Result<DecodedChunk, TableError>> = match decoding {
        Decoding::OneAfterAnother => files.iter().map(decode).collect(),
        Decoding::Parallel => decoding_pool().install(|| files.par_iter().map(decode).collect()),
    };
    let mut good: Chunks = Vec::with_capacity(decoded.len());
    let mut warnings = vec![];
    let mut last_host_ns = None;
    for (n, chunk) in files.iter().zip(decoded) {
        let stacked = chunk.and_then(|chunk| {
            let (table, last) = chunk.after(last_host_ns).map_err(|why| TableError::Read(n.clone(), why))?;
            let columns = table.read.expect("read");
            same_columns(good.first(), &columns, n)?;
            good.push(columns);
            Ok(last)
        });
        match (stacked, damaged) {
            (Ok(last), _) => last_host_ns = last.or(last_host_ns),
            (Err(e), Damaged::Refuse) => return Err(e),
            (Err(e), Damaged::Skip) => {
                let rows = Table::rows_in_file(n).map_or("its rows".to_string(), |r| format!("{r} rows"));
                let why = match e {
                    TableError::Read(_, why) => why,
                    other => other.to_string(),
                };
                warnings.push(format!("{}: left out ({rows} lost): {why}", n.display()));
            }
        }
    }
    Ok((good, warnings))
}

/// A stream's chunks (their columns the same: [`same_columns`]) stacked
/// into one table's columns, each value copied once; column by column in
/// parallel on [`decoding_pool`] where `decoding` says so.
fn stack_chunks(chunks: Chunks, decoding: Decoding) -> Vec<Column> {
    let width = chunks.first().map_or(0, Vec::len);
    let mut by_column: Vec<Vec<Column>> = (0..width).map(|_| Vec::with_capacity(chunks.len())).collect();
    for chunk in chunks {
        for (parts, column) in by_column.iter_mut().zip(chunk) {
            parts.push(column);
        }
    }
    let stacked = |parts: Vec<Column>| {
        let nulls = parts.iter().map(|c| c.nulls).sum();
        let name = parts.first().expect("a column has a chunk").name.clone();
        Column { name, values: Values::concat(parts.into_iter().map(|c| c.values).collect()), nulls }
    };
    match decoding {
        Decoding::OneAfterAnother => by_column.into_iter().map(stacked).collect(),
        Decoding::Parallel => decoding_pool().install(|| by_column.into_par_iter().map(stacked).collect()),
    }
}

/// A stream's chunk decoded and checked on its own ([`stream_chunk_problem`]
/// with no chunk before it).
struct DecodedChunk {
    table: Table,
    /// Its first and last host times where it passed on its own.
    alone: Result<Option<(i64, i64)>, ()>,
}

impl DecodedChunk {
    fn of(table: Table) -> DecodedChunk {
        let alone = match stream_chunk_problem(&table, None) {
            Err(_) => Err(()),
            Ok(None) => Ok(None),
            Ok(Some(last)) => Ok(first_host_ns(&table).map(|first| (first, last))),
        };
        DecodedChunk { table, alone }
    }

    /// The chunk and its last host time where it passes after a chunk
    /// whose last host time was `last_host_ns`; the rules' reason where not.
    fn after(self, last_host_ns: Option<i64>) -> Result<(Table, Option<i64>), String> {
        match self.alone {
            Ok(None) => Ok((self.table, None)),
            Ok(Some((first, last))) if last_host_ns.is_none_or(|p| first >= p) => Ok((self.table, Some(last))),
            // Checked again in order, for the message the rules give first.
            _ => stream_chunk_problem(&self.table, last_host_ns).map(|last| (self.table, last)),
        }
    }
}

/// A chunk's first host time.
fn first_host_ns(t: &Table) -> Option<i64> {
    match t.checked("t_host_ns").map(|c| &c.values) {
        Ok(Values::I64(v)) => v.first().copied(),
        _ => t.i64("t_host_ns").ok().and_then(|v| v.first().copied()),
    }
}

impl Table {
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, name: &str, values: Values) {
        self.columns.push(Column { name: name.into(), values, nulls: 0 });
    }

    /// This table under construction, readable as if written and read
    /// back (its schema and columns): an empty table keeps its columns.
    pub fn into_read(mut self) -> Table {
        self.read = Some(std::mem::take(&mut self.columns));
        self
    }

    pub fn push_f64(&mut self, name: &str, v: Vec<f64>) {
        self.push(name, Values::F64(v));
    }

    pub fn push_i64(&mut self, name: &str, v: Vec<i64>) {
        self.push(name, Values::I64(v));
    }

    pub fn push_u32(&mut self, name: &str, v: Vec<u32>) {
        self.push(name, Values::U32(v));
    }

    pub fn push_str(&mut self, name: &str, v: Vec<String>) {
        self.push(name, Values::Str(v));
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
        let height = self.height_pending();
        if let Some(c) = self.columns.iter().find(|c| c.values.len() != height) {
            return Err(werr(format!("column '{}' has {} rows, the first column {height}", c.name, c.values.len())));
        }
        let tmp = path.with_extension("parquet.tmp");
        write_file(&tmp, |out| self.write_to(out)).map_err(werr)?;
        std::fs::rename(&tmp, path).map_err(|e| werr(e.to_string()))
    }

    /// One row group, zstd-compressed, the metadata in the footer.
    fn write_to(self, out: &mut FileOut) -> Result<(), String> {
        let e = |e: PolarsError| e.to_string();
        let columns = self.columns.into_iter().map(|c| c.values.into_polars(&c.name)).collect::<Vec<_>>();
        let frame = pl::DataFrame::new(columns).map_err(e)?;
        // One thread: a table is written beside a recording.
        let writer = pl::ParquetWriter::new(out).with_compression(pl::ParquetCompression::Zstd(None)).set_parallel(false);
        let mut batched = writer.batched(frame.schema()).map_err(e)?;
        batched.write_batch(&frame).map_err(e)?;
        let metadata = self.metadata.into_iter().map(|(key, value)| KeyValue { key, value: Some(value) }).collect::<Vec<_>>();
        let mut file_writer = batched.get_writer().lock().map_err(|_| "the writer's lock is poisoned".to_string())?;
        file_writer.end((!metadata.is_empty()).then_some(metadata)).map_err(e)?;
        Ok(())
    }

    /// Rows of the Parquet file at `path`, from its footer (nothing else read).
    pub fn rows_in_file(path: &Path) -> Result<usize, TableError> {
        let rerr = |e: String| TableError::Read(path.to_path_buf(), e);
        regular_file(path)?;
        let file = std::fs::File::open(path).map_err(|e| rerr(e.to_string()))?;
        let rows = fault::guard(|| pl::ParquetReader::new(file).num_rows());
        rows.map_err(|why| rerr(format!("damaged Parquet ({why})")))?.map_err(|e| rerr(e.to_string()))
    }

    pub fn read(path: &Path) -> Result<Table, TableError> {
        // A Parquet reader may panic on a damaged footer: a damaged file
        // is an error naming it, not a crash.
        fault::guard(|| Table::read_unguarded(path)).unwrap_or_else(|why| Err(TableError::Read(path.to_path_buf(), format!("damaged Parquet ({why})"))))
    }

    fn read_unguarded(path: &Path) -> Result<Table, TableError> {
        let rerr = |e: String| TableError::Read(path.to_path_buf(), e);
        let size = regular_file(path)?;
        // A small file is read into memory: polars maps a file, and a map
        // unmapped in a process with other threads interrupts every core
        // to flush its TLB (a stream's chunks read in parallel).
        if size <= READ_INTO_MEMORY_BYTES {
            let bytes = std::fs::read(path).map_err(|e| rerr(e.to_string()))?;
            return Table::read_from(std::io::Cursor::new(bytes), path);
        }
        Table::read_from(std::fs::File::open(path).map_err(|e| rerr(e.to_string()))?, path)
    }

    fn read_from(source: impl polars::io::mmap::MmapBytesReader, path: &Path) -> Result<Table, TableError> {
        let rerr = |e: String| TableError::Read(path.to_path_buf(), e);
        // One thread: the chunks of a stream are decoded in parallel, if
        // at all, by the caller ([`Decoding`]), beside a recording.
        let mut reader = pl::ParquetReader::new(source).read_parallel(pl::ParallelStrategy::None);
        let footer = reader.get_metadata().map_err(|e| rerr(e.to_string()))?;
        let metadata = footer
            .key_value_metadata()
            .iter()
            .flatten()
            .filter(|kv| kv.key != "ARROW:schema")
            .filter_map(|kv| kv.value.clone().map(|v| (kv.key.clone(), v)))
            .collect();
        let frame = reader.finish().map_err(|e| rerr(e.to_string()))?;
        let columns = frame
            .take_columns()
            .into_iter()
            .map(|c| {
                let name = c.name().to_string();
                column_of(c.take_materialized_series()).map_err(|e| rerr(format!("column '{name}': {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Table { columns: vec![], read: Some(columns), path: path.to_path_buf(), metadata })
    }

    /// Every `*.parquet` chunk of a stream directory, in name order.
    fn chunk_files(dir: &Path) -> Result<Vec<PathBuf>, TableError> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| TableError::Read(dir.to_path_buf(), e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Reads every `*.parquet` chunk of a stream directory, in name order.
    pub fn read_chunks(dir: &Path) -> Result<Table, TableError> {
        let mut chunks: Chunks = vec![];
        for n in &Table::chunk_files(dir)? {
            let columns = Table::read(n)?.read.expect("read");
            same_columns(chunks.first(), &columns, n)?;
            chunks.push(columns);
        }
        let columns = stack_chunks(chunks, Decoding::OneAfterAnother);
        Ok(Table { columns: vec![], read: Some(columns), path: dir.to_path_buf(), metadata: vec![] })
    }

    /// Reads a stream's `*.parquet` chunks in name order, each checked by
    /// the rules of `session check` ([`stream_chunk_problem`]): with
    /// `Damaged::Skip` each chunk that cannot be read, whose columns
    /// differ from the first good chunk's, or that the rules name is left
    /// out with a warning naming it and the rows it held; with
    /// `Damaged::Refuse` the first such chunk is an error naming it.
    /// The chunks are decoded one after another ([`Decoding`]).
    pub fn read_chunks_or_skip(dir: &Path, damaged: Damaged) -> Result<(Table, Vec<String>), TableError> {
        Table::read_chunks_decoded(dir, damaged, Decoding::OneAfterAnother)
    }

    /// [`Table::read_chunks_or_skip`], the chunks decoded as `decoding` says.
    pub fn read_chunks_decoded(dir: &Path, damaged: Damaged, decoding: Decoding) -> Result<(Table, Vec<String>), TableError> {
        let (chunks, warnings) = read_stream_chunks(dir, damaged, decoding)?;
        let columns = stack_chunks(chunks, decoding);
        Ok((Table { columns: vec![], read: Some(columns), path: dir.to_path_buf(), metadata: vec![] }, warnings))
    }

    /// Rows of a table under construction.
    pub fn height_pending(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    pub fn height(&self) -> usize {
        self.read.as_ref().and_then(|c| c.first()).map_or(0, |c| c.values.len())
    }

    /// Column names and types of a table read from disk, in file order.
    pub fn schema(&self) -> Vec<(String, String)> {
        self.read.as_ref().map_or(vec![], |columns| columns.iter().map(|c| (c.name.clone(), c.values.dtype().to_string())).collect())
    }

    /// Every column of a table read from disk as text, in file order:
    /// integers as integers, floats in their shortest exact form (what a
    /// CSV export writes).
    pub fn text_columns(&self) -> Result<Vec<(String, Vec<String>)>, TableError> {
        let columns = self.read.as_deref().unwrap_or_default();
        columns.iter().map(|c| self.checked(&c.name).map(|c| (c.name.clone(), c.values.to_text()))).collect()
    }

    pub fn has(&self, name: &str) -> bool {
        self.read.as_ref().is_some_and(|c| c.iter().any(|c| c.name == name))
    }

    /// The column `name` of a table read from disk, refused with nulls.
    fn checked(&self, name: &str) -> Result<&Column, TableError> {
        let missing = || TableError::MissingColumn(self.path.clone(), name.into());
        let c = self.read.as_ref().ok_or_else(missing)?.iter().find(|c| c.name == name).ok_or_else(missing)?;
        if c.nulls > 0 {
            return Err(TableError::BadColumn(self.path.clone(), name.into(), format!("{} null values", c.nulls)));
        }
        Ok(c)
    }

    fn not_representable(&self, name: &str, dtype: &str) -> TableError {
        TableError::BadColumn(self.path.clone(), name.into(), format!("values not representable as {dtype}"))
    }

    pub fn f64(&self, name: &str) -> Result<Vec<f64>, TableError> {
        self.checked(name)?.values.to_f64().ok_or_else(|| self.not_representable(name, "f64"))
    }

    pub fn i64(&self, name: &str) -> Result<Vec<i64>, TableError> {
        let v = self.checked(name)?.values.to_i128();
        v.and_then(|v| v.into_iter().map(|x| i64::try_from(x).ok()).collect()).ok_or_else(|| self.not_representable(name, "i64"))
    }

    pub fn u32(&self, name: &str) -> Result<Vec<u32>, TableError> {
        let v = self.checked(name)?.values.to_i128();
        v.and_then(|v| v.into_iter().map(|x| u32::try_from(x).ok()).collect()).ok_or_else(|| self.not_representable(name, "u32"))
    }

    pub fn str(&self, name: &str) -> Result<Vec<String>, TableError> {
        Ok(self.checked(name)?.values.to_text())
    }

    /// Every column of a table read from disk, in file order, moved out
    /// (not copied) where it already is f64 or i64: what a hand-over to
    /// Python or another library wants. A column with nulls is refused.
    pub fn into_columns(self) -> Result<Vec<(String, OwnedColumn)>, TableError> {
        let path = self.path;
        let mut out = vec![];
        for c in self.read.unwrap_or_default() {
            if c.nulls > 0 {
                return Err(TableError::BadColumn(path, c.name, format!("{} null values", c.nulls)));
            }
            let owned = match c.values {
                Values::F64(v) => OwnedColumn::F64(v),
                Values::I64(v) => OwnedColumn::I64(v),
                Values::Str(v) => OwnedColumn::Text(v),
                Values::F32(v) => OwnedColumn::F64(v.into_iter().map(f64::from).collect()),
                Values::I32(v) => OwnedColumn::I64(v.into_iter().map(i64::from).collect()),
                Values::U32(v) => OwnedColumn::I64(v.into_iter().map(i64::from).collect()),
                Values::Bool(v) => OwnedColumn::I64(v.into_iter().map(i64::from).collect()),
                Values::U64(v) => match v.iter().map(|x| i64::try_from(*x).ok()).collect::<Option<Vec<i64>>>() {
                    Some(v) => OwnedColumn::I64(v),
                    None => return Err(TableError::BadColumn(path, c.name, "values not representable as i64".into())),
                },
            };
            out.push((c.name, owned));
        }
        Ok(out)
    }
}

/// A file format a table is exported in, by polars' writers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableFormat {
    /// A header of column names, floats in their shortest exact form.
    #[default]
    Csv,
    /// An array of rows, each an object of its columns.
    Json,
    Parquet,
    /// Arrow IPC (Feather v2): what pyarrow, polars and DuckDB map.
    Ipc,
}

impl TableFormat {
    /// The words the command line and Python take.
    pub const NAMES: [&'static str; 4] = ["csv", "json", "parquet", "ipc"];

    pub fn parse(text: &str) -> Option<TableFormat> {
        match text {
            "csv" => Some(TableFormat::Csv),
            "json" => Some(TableFormat::Json),
            "parquet" => Some(TableFormat::Parquet),
            "ipc" | "arrow" => Some(TableFormat::Ipc),
            _ => None,
        }
    }

    /// The file name's extension.
    pub fn extension(self) -> &'static str {
        match self {
            TableFormat::Csv => "csv",
            TableFormat::Json => "json",
            TableFormat::Parquet => "parquet",
            TableFormat::Ipc => "arrow",
        }
    }
}

impl Values {
    /// The values moved into a polars column (numbers without a copy).
    fn into_polars(self, name: &str) -> pl::Column {
        use pl::{IntoColumn, IntoSeries};
        let name = pl::PlSmallStr::from(name);
        match self {
            Values::F64(v) => pl::Float64Chunked::from_vec(name, v).into_series().into_column(),
            Values::F32(v) => pl::Float32Chunked::from_vec(name, v).into_series().into_column(),
            Values::I64(v) => pl::Int64Chunked::from_vec(name, v).into_series().into_column(),
            Values::I32(v) => pl::Int32Chunked::from_vec(name, v).into_series().into_column(),
            Values::U32(v) => pl::UInt32Chunked::from_vec(name, v).into_series().into_column(),
            Values::U64(v) => pl::UInt64Chunked::from_vec(name, v).into_series().into_column(),
            Values::Bool(v) => pl::Column::new(name, v),
            Values::Str(v) => pl::Column::new(name, v),
        }
    }

    /// The values copied into a polars column, NaN as null where
    /// `nan_is_missing`.
    fn to_polars(&self, name: &str, nan_is_missing: bool) -> pl::Column {
        match self {
            Values::F64(v) if nan_is_missing => pl::Column::new(name.into(), v.iter().map(|x| (!x.is_nan()).then_some(*x)).collect::<Vec<_>>()),
            other => other.clone().into_polars(name),
        }
    }
}

impl Table {
    /// A table read from disk (or [`Table::into_read`]) as a polars frame,
    /// its values copied; a float's NaN as null where `nan_is_missing`. A
    /// column with nulls is refused.
    pub fn to_frame(&self, nan_is_missing: bool) -> Result<pl::DataFrame, TableError> {
        let names = self.read.iter().flatten().map(|c| c.name.as_str());
        let columns = names.map(|n| self.checked(n).map(|c| c.values.to_polars(n, nan_is_missing))).collect::<Result<Vec<_>, _>>()?;
        pl::DataFrame::new(columns).map_err(|e| TableError::BadColumn(self.path.clone(), "(all)".into(), e.to_string()))
    }

    /// A table read from disk as a polars frame, its columns moved (not
    /// copied) and widened as [`Table::into_columns`] widens them: what a
    /// hand-over to Python wants.
    pub fn into_frame(self) -> Result<pl::DataFrame, TableError> {
        let path = self.path.clone();
        let columns = self.into_columns()?.into_iter().map(|(name, column)| {
            let values = match column {
                OwnedColumn::F64(v) => Values::F64(v),
                OwnedColumn::I64(v) => Values::I64(v),
                OwnedColumn::Text(v) => Values::Str(v),
            };
            values.into_polars(&name)
        });
        pl::DataFrame::new(columns.collect()).map_err(|e| TableError::BadColumn(path, "(all)".into(), e.to_string()))
    }

    /// Writes a table read from disk (or [`Table::into_read`]) at `path`
    /// in `format`, by polars' writers; a float's NaN as a missing value
    /// (an empty CSV field, a JSON null) where `nan_is_missing` (an aligned
    /// row without a value; a marker's NaN pixel is a value). Its rows.
    pub fn export(&self, path: &Path, format: TableFormat, nan_is_missing: bool) -> Result<usize, TableError> {
        let werr = |e: String| TableError::Write(path.to_path_buf(), e);
        let mut frame = self.to_frame(nan_is_missing)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| werr(e.to_string()))?;
        }
        write_file(path, |out| {
            match format {
                TableFormat::Csv => pl::CsvWriter::new(out).include_header(true).finish(&mut frame),
                TableFormat::Json => pl::JsonWriter::new(out).with_json_format(pl::JsonFormat::Json).finish(&mut frame),
                TableFormat::Parquet => pl::ParquetWriter::new(out).set_parallel(false).finish(&mut frame).map(|_| ()),
                TableFormat::Ipc => pl::IpcWriter::new(out).finish(&mut frame),
            }
            .map_err(|e| e.to_string())
        })
        .map_err(werr)?;
        Ok(frame.height())
    }
}

/// A file being written, through [`KeepsIoError`].
type FileOut = KeepsIoError<std::io::BufWriter<std::fs::File>>;

/// Creates `path` and fills it by `fill` (polars' writers), flushed. On
/// failure the system's reason where there was one (a full disk), and no
/// half file left behind to fill what space is left or to be taken for a
/// whole one.
fn write_file(path: &Path, fill: impl FnOnce(&mut FileOut) -> Result<(), String>) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut out = KeepsIoError::new(std::io::BufWriter::new(file));
    let written = fill(&mut out).and_then(|()| std::io::Write::flush(&mut out).map_err(|e| e.to_string()));
    if let Err(why) = written {
        drop(out.inner);
        let _ = std::fs::remove_file(path);
        return Err(out.first_error.unwrap_or(why));
    }
    Ok(())
}

/// A writer that keeps the first I/O error it met: polars' writers report
/// some (one in a Parquet footer) as a format error ("Invalid thrift:
/// transport error"), without the system's reason (a full disk).
struct KeepsIoError<W> {
    inner: W,
    first_error: Option<String>,
}

impl<W> KeepsIoError<W> {
    fn new(inner: W) -> Self {
        KeepsIoError { inner, first_error: None }
    }

    fn kept<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        match &result {
            // An interrupted call is retried by the writer: not a failure.
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => {
                self.first_error.get_or_insert_with(|| e.to_string());
            }
            _ => {}
        }
        result
    }
}

impl<W: std::io::Write> std::io::Write for KeepsIoError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.kept(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.kept(result)
    }
}

/// A column moved out of a [`Table`] ([`Table::into_columns`]): numbers
/// as f64 or i64, or text.
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedColumn {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Text(Vec<String>),
}

/// A column polars read, as [`Values`] (narrower integers widened to 32
/// bits); a null becomes its type's default and is counted.
fn column_of(series: pl::Series) -> Result<Column, String> {
    let e = |e: PolarsError| e.to_string();
    let name = series.name().to_string();
    let nulls = series.null_count();
    /// The values of a column of numbers, its nulls as the type's default:
    /// the decoder's own buffer where polars hands it over whole (one
    /// chunk, no null, not shared), else one copy of each chunk.
    fn numbers<T>(values: pl::ChunkedArray<T>) -> Vec<T::Native>
    where
        T: pl::PolarsNumericType + pl::PolarsDataType<IsLogical = pl::FalseT>,
    {
        if values.null_count() > 0 {
            return values.iter().map(Option::unwrap_or_default).collect();
        }
        let mut out = Vec::with_capacity(values.len());
        for chunk in values.downcast_into_iter() {
            let (_, buffer, _) = chunk.into_inner();
            match buffer.into_mut() {
                polars_arrow::Either::Right(whole) if out.is_empty() => out = whole,
                polars_arrow::Either::Right(whole) => out.extend_from_slice(&whole),
                polars_arrow::Either::Left(shared) => out.extend_from_slice(&shared),
            }
        }
        out
    }
    let widened = |series: &pl::Series, to: &pl::DataType| series.cast(to).map_err(e);
    let values = match series.dtype() {
        pl::DataType::Float64 => Values::F64(numbers(series.take_inner::<pl::Float64Type>())),
        pl::DataType::Float32 => Values::F32(numbers(series.take_inner::<pl::Float32Type>())),
        pl::DataType::Int64 => Values::I64(numbers(series.take_inner::<pl::Int64Type>())),
        pl::DataType::Int32 => Values::I32(numbers(series.take_inner::<pl::Int32Type>())),
        pl::DataType::UInt64 => Values::U64(numbers(series.take_inner::<pl::UInt64Type>())),
        pl::DataType::UInt32 => Values::U32(numbers(series.take_inner::<pl::UInt32Type>())),
        pl::DataType::Boolean => Values::Bool(series.bool().map_err(e)?.iter().map(Option::unwrap_or_default).collect()),
        pl::DataType::String => Values::Str(series.str().map_err(e)?.iter().map(|s| s.unwrap_or_default().to_string()).collect()),
        pl::DataType::Binary => Values::Str(series.binary().map_err(e)?.iter().map(|b| String::from_utf8_lossy(b.unwrap_or_default()).into_owned()).collect()),
        d if d.is_nested() => return Err("a nested column (lists, structs): a table here is flat".into()),
        d if d.is_signed_integer() => Values::I32(numbers(widened(&series, &pl::DataType::Int32)?.i32().map_err(e)?.clone())),
        d if d.is_unsigned_integer() => Values::U32(numbers(widened(&series, &pl::DataType::UInt32)?.u32().map_err(e)?.clone())),
        other => return Err(format!("type {other} is not read here (numbers and text are)")),
    };
    Ok(Column { name, values, nulls })
}

/// How a stream's chunks are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoding {
    /// One after another on the caller's thread: what rodlab's own
    /// commands do, leaving the other core to whatever records beside
    /// them. (With every reader parallel, even at [`DECODING_NICE`], a
    /// fresh-clone CI also tracked a live loop day 3-24 mm off and a file
    /// camera gave 37 of 45 frames; one chunk at a time, both passed.)
    OneAfterAnother,
    /// In parallel on [`decoding_pool`], the chunks and then the stacked
    /// columns: what Python's `Session.stream` does (a notebook reading
    /// 600 one-second chunks of a 500 Hz robot: 71-72 ms, 1.08-1.11 times
    /// polars' own reader in Python, measured 2026-12-04).
    Parallel,
}

/// The nice value of the threads that decode a stream's chunks in
/// parallel ([`Decoding::Parallel`]): below a recorder's priority, so that
/// the scheduler gives a recorder about ten times a decoder's share of a
/// contended core. (Measured: the 60 s soak of tests/e2e_record.rs beside
/// two processes reading a long stream over and over lost 33 FT 300 frames
/// with the pool at nice 0, none at 10.)
pub const DECODING_NICE: i32 = 10;

/// The pool that decodes a stream's chunks: one thread per core, each at
/// [`DECODING_NICE`] (the global pool is left alone).
pub fn decoding_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("rodlab-decode-{i}"))
            .start_handler(|_| lower_this_threads_priority(DECODING_NICE))
            .build()
            .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
            .expect("a one-thread pool")
    })
}

/// The calling thread's nice value raised to `nice` (Linux: a thread's
/// own; elsewhere, nothing).
fn lower_this_threads_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority with PRIO_PROCESS and the calling thread's id
    // touches only that thread's scheduling; a failure leaves it as it was.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}
