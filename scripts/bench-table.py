#!/usr/bin/env python3
"""One table of every benchmark (`make bench`'s last step): criterion's
medians (target/criterion/*/new/estimates.json), the Python package's
figures (target/python-bench.txt, written by python/bench.py) and the
peers' side by side (target/peer-pyelastica.txt, written by
scripts/peer-pyelastica.py; target/peer-track.txt, by scripts/peer/track-race.py), with the machine and the date, into
docs/results.md between the bench-table markers.

Usage: scripts/bench-table.py [--print]   (--print: the table on stdout only)
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"

# Goals of the speed issue, by a pattern of the benchmark's id:
# (pattern, goal text, check of the median in seconds and the id).
SIMULATED_S = {"stick": 4.0, "slide": 5.0}
GOALS = [
    (r"static_solve.*_4_subsegments", "<= 40 us", lambda s, _: s <= 40e-6),
    (r"static_solve.*_8_subsegments", "<= 80 us", lambda s, _: s <= 80e-6),
    (r"observer.*weighted_200_frames", ">= 10,000 frames/s", lambda s, _: 200 / s >= 10_000),
    (r"identify/.*one_start", "<= 5 ms", lambda s, _: s <= 5e-3),
    (r"identify/full_turn_loop", "<= 60 s", lambda s, _: s <= 60.0),
    (r"identify_dynamic/", "<= 2 s", lambda s, _: s <= 2.0),
    # The Prony law's fit (and the constant-loss law's) at most twice the Kelvin-Voigt fit of the same ring-down (#78).
    (r"identify_dynamic/ring_down_3_s_(prony|constant_loss)", "<= 2 x the Kelvin-Voigt fit",
     lambda s, _: s <= 2.0 * median_s_of("identify_dynamic/ring_down_3_s_kelvin_voigt_damping_ratio")),
    (r"process_start/(version|schema_rod|solve_table_ii)", "<= 10 ms", lambda s, _: s <= 10e-3),
    (r"contact_paper_scenes/(stick|slide)", "real-time factor >= 50",
     lambda s, i: SIMULATED_S[re.search(r"(stick|slide)", i).group(1)] / s >= 50),
]


def median_s_of(bench_id: str) -> float:
    """Criterion's median of `bench_id` [s] (inf when it has not run)."""
    path = ROOT / "target" / "criterion" / bench_id / "new" / "estimates.json"
    return json.loads(path.read_text())["median"]["point_estimate"] * 1e-9 if path.exists() else float("inf")


def human(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def criterion_rows() -> list:
    rows = []
    for estimates in sorted((ROOT / "target" / "criterion").glob("**/new/estimates.json")):
        bench = json.loads((estimates.parent / "benchmark.json").read_text())
        median_s = json.loads(estimates.read_text())["median"]["point_estimate"] * 1e-9
        full_id = bench["full_id"]
        extra = ""
        throughput = bench.get("throughput") or {}
        if "Elements" in throughput:
            extra = f"{throughput['Elements'] / median_s:,.0f} per s"
        m = re.search(r"(stick|slide)", full_id)
        if full_id.startswith("contact_paper_scenes/") and m:
            extra = f"real-time factor {SIMULATED_S[m.group(1)] / median_s:.1f}"
        goal, met = "", ""
        for pattern, text, check in GOALS:
            if re.search(pattern, full_id):
                goal, met = text, ("met" if check(median_s, full_id) else "not yet")
        rows.append((full_id, human(median_s), extra, goal, met))
    return rows


# The Python package's goals, by a figure in its line: (pattern, goal, check).
PYTHON_GOALS = [
    (r"adds (-?[\d.]+) us", "a call adds <= 5 us", lambda v: v <= 5.0),
    (r"speed-up ([\d.]+)x", ">= 1.8x on 2 cores", lambda v: v >= 1.8),
]


def target_lines(name: str) -> list:
    """The lines of target/<name>, written by `make bench`'s earlier steps
    (none when that step has not run)."""
    path = ROOT / "target" / name
    return path.read_text().splitlines() if path.exists() else []


def python_rows() -> list:
    rows = []
    for line in target_lines("python-bench.txt"):
        if ":" not in line:
            continue
        name, figures = line.split(":", 1)
        goal, met = "", ""
        for pattern, text, check in PYTHON_GOALS:
            m = re.search(pattern, figures)
            if m:
                goal, met = text, ("met" if check(float(m.group(1))) else "not yet")
        rows.append(("python: " + name, figures.strip(), "", goal, met))
    return rows


def peer_rows() -> list:
    """PyElastica's slip onset against ours (`slip_onset_1_s/push_<F>_n`)."""
    peer_lines = target_lines("peer-pyelastica.txt")
    ours = {}
    for estimates in (ROOT / "target" / "criterion").glob("slip_onset_1_s/*/new/estimates.json"):
        ours[estimates.parent.parent.name] = json.loads(estimates.read_text())["median"]["point_estimate"] * 1e-9
    rows = []
    for line in peer_lines:
        m = re.match(r"pyelastica slip onset push ([\d.]+) N step ([\d.e-]+) s: ([\d.]+) s, (.*)", line)
        if not m:
            continue
        force, step, peer_s, rest = m.group(1), m.group(2), float(m.group(3)), m.group(4)
        ours_s = ours.get(f"push_{force}_n")
        if ours_s is None:
            continue
        ratio = peer_s / ours_s
        # The baseline: PyElastica at 1e-4 s (its figure, 60-68x).
        goal, met = ("", "") if float(step) != 1e-4 else (">= 100x PyElastica", "met" if ratio >= 100 else "not yet")
        rows.append((f"peer: PyElastica slip onset, push {force} N, its step {step} s",
                     f"PyElastica {human(peer_s)}, ours {human(ours_s)}", f"{ratio:.1f}x; {rest}", goal, met))
    return rows


def track_rows() -> list:
    """`rodlab track` against the OpenCV-Python script, whole processes."""
    rows = []
    for line in target_lines("peer-track.txt"):
        m = re.match(r"track demo video (.*?): rodlab ([\d.]+) s, OpenCV-Python ([\d.]+) s, ratio ([\d.]+)x; (.*)", line)
        if m:
            # The goal is on the demo's video, in the recorder's default
            # container (raw); the others are the containers' figures.
            if "(raw," in m.group(1):
                goal, met = ">= 5x the Python script", "met" if float(m.group(4)) >= 5 else "not yet"
            else:
                goal, met = "(another container: for comparison)", ""
            rows.append((f"peer: OpenCV-Python script, whole process, demo video {m.group(1)}", f"OpenCV-Python {m.group(3)} s, rodlab {m.group(2)} s",
                         f"{m.group(4)}x; {m.group(5)}", goal, met))
    return rows


def machine() -> str:
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores ({model or platform.processor()}), {platform.system()} {platform.release()}"


def table() -> str:
    rows = criterion_rows() + python_rows() + peer_rows() + track_rows()
    lines = [
        f"Every benchmark of `make bench`, {datetime.date.today().isoformat()}, {machine()}; criterion medians "
        "(the Rust benchmarks optimised, one core unless said).",
        "",
        "| benchmark | median | | goal | |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
    return "\n".join(lines)


def main() -> int:
    text = table()
    if "--print" in sys.argv:
        print(text)
        return 0
    results = ROOT / "docs" / "results.md"
    doc = results.read_text()
    if START not in doc or END not in doc:
        print(f"{results}: no {START} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    results.write_text(f"{head}{START}\n{text}\n{END}{tail}")
    print(f"wrote the benchmark table into {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
