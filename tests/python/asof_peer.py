"""pandas's merge_asof, the peer of `rodlab session export --aligned`.

Usage: python asof_peer.py EXPORT ON MATCH TOLERANCE_S|default
Reads EXPORT's streams/*.csv and gaps/*.csv (what `session export` wrote),
joins every stream onto ON's host times with pandas.merge_asof (MATCH:
previous -> direction "backward", nearest -> "nearest"; the tolerance in
ns; by default 1.5 times each stream's median sample interval), empties a
row's values inside an outage of the stream's device (start < t < end),
and compares every row and column with EXPORT/aligned.csv, bit for bit.
Prints one line of JSON: rows, values compared, and per stream the rows
without a value and those inside outages; exits 1 on the first difference.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

export, on, match, tolerance = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
read = pd.read_csv  # pandas 3 reads a float back exactly
streams = {p.stem: read(p) for p in sorted((export / "streams").glob("*.csv"))}
base = streams[on][["t_host_ns"]].copy()
expected = base.copy()
for column in streams[on].columns.drop("t_host_ns"):
    expected[f"{on}.{column}"] = streams[on][column].astype(float)
report = {}
for name, frame in streams.items():
    if name == on:
        continue
    t = frame["t_host_ns"].to_numpy()
    tol_ns = round(1.5 * float(np.median(np.diff(t)))) if tolerance == "default" else round(float(tolerance) * 1e9)
    right = frame.rename(columns={c: f"{name}.{c}" for c in frame.columns if c != "t_host_ns"})
    joined = pd.merge_asof(base, right, on="t_host_ns", direction="backward" if match == "previous" else "nearest", tolerance=tol_ns)
    gaps_csv = export / "gaps" / f"{name}.csv"
    inside = np.zeros(len(base), dtype=bool)
    if gaps_csv.is_file():
        gaps = read(gaps_csv)
        if "start_host_ns" not in gaps.columns:
            sys.exit(f"{gaps_csv}: columns {list(gaps.columns)}")
        for start, end in gaps[["start_host_ns", "end_host_ns"]].itertuples(index=False):
            inside |= (base["t_host_ns"].to_numpy() > start) & (base["t_host_ns"].to_numpy() < end)
    values = [c for c in joined.columns if c != "t_host_ns"]
    joined[values] = joined[values].astype(float)
    joined.loc[inside, values] = np.nan
    for c in values:
        expected[c] = joined[c].astype(float).to_numpy()
    report[name] = {"rows_without": int(joined[values[0]].isna().sum()), "rows_in_outages": int(inside.sum())}

got = read(export / "aligned.csv")
if list(got.columns) != list(expected.columns):
    sys.exit(f"columns differ: {list(got.columns)} != {list(expected.columns)}")
if not (got["t_host_ns"].to_numpy() == expected["t_host_ns"].to_numpy()).all():
    sys.exit("t_host_ns differs")
compared = 0
for c in got.columns.drop("t_host_ns"):
    a, b = got[c].astype(float).to_numpy(), expected[c].to_numpy()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if not same.all():
        i = int(np.argmin(same))
        sys.exit(f"{c}: row {i} (t_host_ns {got['t_host_ns'][i]}): rodlab {a[i]!r}, pandas {b[i]!r}")
    compared += len(a)
print(json.dumps({"rows": len(got), "compared": compared, "streams": report}))
