"""Session tables between rodlab and polars, pyarrow and DuckDB (#82): a
stream whose chunks polars, pyarrow or DuckDB wrote (their types,
compressions, row groups) reads as they read it; the tables rodlab writes
read in all three as rodlab reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rodlab

from conftest import repo


def polars_stream(root: Path, compression: str, row_group_size: int) -> pl.DataFrame:
    """A 2-chunk stream as polars writes it: the integer and float widths a
    logger might use, an optional (nullable) column without a null."""
    rng = np.random.default_rng(1)
    n = 1_000
    frame = pl.DataFrame(
        {
            "t_host_ns": np.arange(n, dtype=np.int64) * 2_000_000,
            "timestamp": np.arange(n) * 0.002,
            "fx_n": rng.normal(size=n),
            "gain": rng.normal(size=n).astype(np.float32),
            "seq": np.arange(n, dtype=np.int32),
            "count": np.arange(n, dtype=np.uint32),
        }
    )
    stream = root / "streams" / "logger"
    stream.mkdir(parents=True)
    for k, start in enumerate(range(0, n, n // 2)):
        frame.slice(start, n // 2).write_parquet(stream / f"{k:06}.parquet", compression=compression, row_group_size=row_group_size)
    (root / "session.toml").write_text("")
    return frame


@pytest.mark.parametrize("compression, row_group_size", [("zstd", 512), ("snappy", 100), ("uncompressed", 512), ("lz4", 512), ("gzip", 300), ("brotli", 512)])
def test_a_stream_polars_wrote_reads_as_polars_reads_it(tmp_path: Path, compression: str, row_group_size: int) -> None:
    written = polars_stream(tmp_path, compression, row_group_size)
    got = rodlab.Session(tmp_path).stream("logger")
    assert got.columns == written.columns
    # Floats widen to f64 and integers to i64, value for value.
    assert got.equals(written.with_columns(pl.col("gain").cast(pl.Float64), pl.col("seq", "count").cast(pl.Int64)))
    assert got.equals(pl.read_parquet(tmp_path / "streams" / "logger" / "*.parquet").cast({"gain": pl.Float64, "seq": pl.Int64, "count": pl.Int64}))


def stick_session(tmp_path: Path) -> rodlab.Session:
    """A short synthetic stick test: robot, FT 300 and markers tables."""
    return rodlab.synth_session(
        scene=repo("configs/scene/contact-paper-stick.toml"),
        rod=repo("configs/rod/contact-paper-steel-core.toml"),
        out=tmp_path / "stick",
        seed=4,
        duration_s=0.6,
        progress=False,
    )


def test_the_tables_rodlab_writes_read_in_polars(tmp_path: Path) -> None:
    session = stick_session(tmp_path)
    for name in session.streams():
        theirs = pl.read_parquet(Path(session.path) / "streams" / name / "*.parquet")
        assert theirs.equals(session.stream(name)), name
    assert pl.read_parquet(Path(session.path) / "markers.parquet").equals(session.markers())


def test_streams_pyarrow_and_duckdb_wrote_read_as_they_read_them(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    duckdb = pytest.importorskip("duckdb")
    written = polars_stream(tmp_path / "polars", "zstd", 512)
    # pyarrow: dictionary-encoded pages and statistics, two row groups a chunk.
    arrow_stream = tmp_path / "pyarrow" / "streams" / "logger"
    arrow_stream.mkdir(parents=True)
    table = written.to_arrow()
    for k, start in enumerate(range(0, table.num_rows, 500)):
        pq.write_table(table.slice(start, 500), arrow_stream / f"{k:06}.parquet", compression="snappy", row_group_size=250)
    (tmp_path / "pyarrow" / "session.toml").write_text("")
    # DuckDB: its own writer, by SQL.
    duck_stream = tmp_path / "duckdb" / "streams" / "logger"
    duck_stream.mkdir(parents=True)
    con = duckdb.connect()
    con.register("frame", table)
    for k, start in enumerate(range(0, table.num_rows, 500)):
        con.execute(f"COPY (SELECT * FROM frame ORDER BY t_host_ns LIMIT 500 OFFSET {start}) TO '{duck_stream / f'{k:06}.parquet'}' (FORMAT parquet, COMPRESSION zstd)")
    (tmp_path / "duckdb" / "session.toml").write_text("")
    want = written.with_columns(pl.col("gain").cast(pl.Float64), pl.col("seq", "count").cast(pl.Int64))
    for who in ("pyarrow", "duckdb"):
        got = rodlab.Session(tmp_path / who).stream("logger")
        assert got.columns == written.columns, who
        assert got.equals(want), who
        theirs = pl.from_arrow(pq.read_table(tmp_path / who / "streams" / "logger")).cast({"gain": pl.Float64, "seq": pl.Int64, "count": pl.Int64})
        assert got.equals(theirs), who


def test_the_tables_rodlab_writes_read_in_pyarrow_and_duckdb(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    duckdb = pytest.importorskip("duckdb")
    session = stick_session(tmp_path)
    for name in session.streams():
        ours = session.stream(name)
        arrow = pl.from_arrow(pq.read_table(Path(session.path) / "streams" / name))
        assert arrow.equals(ours), name
        duck = pl.from_arrow(duckdb.sql(f"SELECT * FROM read_parquet('{Path(session.path) / 'streams' / name / '*.parquet'}') ORDER BY t_host_ns").arrow())
        assert duck.equals(ours), name
    # In memory: a stream hands itself to pyarrow and DuckDB by the Arrow
    # PyCapsule stream (`__arrow_c_stream__`), no file between.
    robot = session.stream("robot")
    assert hasattr(robot, "__arrow_c_stream__")
    assert pl.from_arrow(pa.table(robot)).equals(robot)
    rows, first, last = duckdb.sql("SELECT count(*), min(t_host_ns), max(t_host_ns) FROM robot").fetchall()[0]
    assert (rows, first, last) == (robot.height, robot["t_host_ns"].min(), robot["t_host_ns"].max())
    markers = session.markers()
    assert pl.from_arrow(pq.read_table(Path(session.path) / "markers.parquet")).equals(markers)
    duck = pl.from_arrow(duckdb.sql(f"SELECT * FROM read_parquet('{Path(session.path) / 'markers.parquet'}')").arrow())
    assert duck.equals(markers)


def test_an_export_in_each_format_reads_in_polars_pyarrow_and_duckdb(tmp_path: Path) -> None:
    """`session export --format`: polars' writers (Rust) write every table
    as CSV, JSON, Parquet or Arrow IPC; polars, pyarrow and DuckDB read
    each back as the session holds it (floats to the bit)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    feather = pytest.importorskip("pyarrow.feather")
    duckdb = pytest.importorskip("duckdb")
    session = stick_session(tmp_path)
    robot = session.stream("robot")
    for fmt, ext in [("csv", "csv"), ("json", "json"), ("parquet", "parquet"), ("ipc", "arrow")]:
        out = tmp_path / f"export-{fmt}"
        files = session.export(out, format=fmt)["files"]
        path = out / "streams" / f"robot.{ext}"
        assert files[path] == robot.height, (fmt, files)
        assert (out / f"units.{ext}").is_file() and (out / "session.json").is_file()
        theirs = {
            "csv": lambda: pl.read_csv(path),
            "json": lambda: pl.read_json(path),
            "parquet": lambda: pl.from_arrow(pq.read_table(path)),
            "ipc": lambda: pl.from_arrow(feather.read_table(path)),
        }[fmt]()
        assert theirs.columns == robot.columns, fmt
        assert theirs.cast(robot.schema).equals(robot), fmt
        duck = {
            "csv": f"read_csv('{path}')",
            "json": f"read_json('{path}')",
            "parquet": f"read_parquet('{path}')",
            "ipc": None,
        }[fmt]
        if duck is not None:
            frame = pl.from_arrow(duckdb.sql(f"SELECT * FROM {duck} ORDER BY t_host_ns").arrow())
            assert frame.cast(robot.schema).equals(robot), fmt
    with pytest.raises(ValueError, match="format 'xlsx': one of csv, json, parquet, ipc"):
        session.export(tmp_path / "export-xlsx", format="xlsx")
