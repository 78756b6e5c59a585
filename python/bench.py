"""Speed of the Python package (`make bench`, after the Rust benchmarks).

1. What a call from Python adds to a static solve: `rod.solve` timed from
   Python against the same request timed in a Rust loop (same build).
2. `solve_many` over 10,000 loads: all cores against one.
3. `Session.stream` of a 10-minute 500 Hz robot stream (300,000 rows of
   UR's 13 columns, written as a recorder writes it: one-second chunks)
   to a polars DataFrame, against polars reading the same Parquet files.

Prints one line per figure; run quiet (nothing else on the machine).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import rodlab

ROOT = Path(__file__).resolve().parents[1]


def best_of(f, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def solve_overhead(rod_file: str, n: int = 2000) -> None:
    rod = rodlab.Rod.from_file(ROOT / rod_file)
    force = [0.0, 0.0, -0.01]
    py = []
    rust = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(n):
            rod.solve(tip_force=force)
        py.append((time.perf_counter() - t) / n)
        rust.append(rodlab._rodlab.solve_time_in_rust_s(rod, n, tip_force=force))
    p, r = statistics.median(py), statistics.median(rust)
    print(f"solve {rod_file}: Python {p * 1e6:.1f} us, Rust {r * 1e6:.1f} us, a call from Python adds {(p - r) * 1e6:.1f} us")


def solve_many_scaling(k: int = 10_000) -> None:
    arm = rodlab.Rod.from_file(ROOT / "configs/rod/pls-cable-arm.toml")
    tensions = np.zeros((k, 4))
    tensions[:, 3] = np.linspace(0.0, 2.0, k)
    one = best_of(lambda: arm.solve_many(tensions=tensions, threads=1), 3)
    two = best_of(lambda: arm.solve_many(tensions=tensions, threads=2), 3)
    print(f"solve_many {k} loads: 1 core {one:.2f} s, 2 cores {two:.2f} s, speed-up {one / two:.2f}x")


def session_stream(minutes: float = 10.0, rate_hz: float = 500.0) -> None:
    import polars as pl

    with tempfile.TemporaryDirectory() as d:
        session = Path(d) / "long"
        stream = session / "streams" / "robot"
        stream.mkdir(parents=True)
        rows = int(minutes * 60 * rate_hz)
        per_chunk = int(rate_hz)
        t = (np.arange(rows) * (1e9 / rate_hz)).astype(np.int64)
        rng = np.random.default_rng(0)
        data = {"t_host_ns": t, "timestamp": t * 1e-9}
        for i in range(6):
            data[f"actual_TCP_pose_{i}"] = rng.normal(size=rows)
            data[f"actual_TCP_speed_{i}"] = rng.normal(size=rows)
        frame = pl.DataFrame(data)
        for c, start in enumerate(range(0, rows, per_chunk)):
            frame.slice(start, per_chunk).write_parquet(stream / f"{c:06}.parquet")
        s = rodlab.Session(session)
        files = sorted(stream.glob("*.parquet"))
        # Best of 10 after three calls each: the first ones pay for the
        # decoding threads and the allocators' first pages (0.10 s, then 0.07).
        for _ in range(3):
            s.stream("robot")
            pl.read_parquet(files)
        ours = best_of(lambda: s.stream("robot"), 10)
        theirs = best_of(lambda: pl.read_parquet(files), 10)
        got = s.stream("robot")
        assert got.height == rows and got.equals(pl.read_parquet(files).select(got.columns))
        print(
            f"Session.stream: {rows} rows x {len(got.columns)} columns in {ours:.3f} s ({rows / ours / 1e6:.2f} M rows/s); "
            f"polars.read_parquet {theirs:.3f} s ({ours / theirs:.2f} times)"
        )


if __name__ == "__main__":
    solve_overhead("configs/rod/pls-paper-cantilever.toml")
    solve_overhead("configs/rod/pls-cable-arm.toml")
    solve_many_scaling()
    session_stream()
    sys.exit(0)
