"""A report's figures drawn into your own matplotlib ``Axes``, so that a
paper's figure is the report's with the paper's style.

``report`` is a report's directory (``out=``), its ``index.html``, an
``Identified`` or a validated session's dictionary (its "report"). The
data come from the report's own files: ``summary.json`` (identification:
each experiment's measured points and fitted shape) and, for the charts of
simulate and validate, ``NAME.json`` beside ``NAME.svg`` (every series the
figure shows). Colours are the reports' Okabe-Ito palette, lengths in mm::

    import matplotlib.pyplot as plt
    import rodlab.plot

    fig, (side, top) = plt.subplots(1, 2)
    rodlab.plot.shapes(side, fit)               # an Identified, or its out directory
    rodlab.plot.shapes(top, fit, view="top")
    fig, ax = plt.subplots()
    rodlab.plot.series(ax, "reports/run1", "strain_time")

matplotlib is imported by your code, not here: these functions only call
the ``Axes`` they are given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Sequence

__all__ = ["OKABE_ITO", "report_dir", "shapes", "residuals", "series", "figures"]

#: The reports' palette (Okabe and Ito), colour-blind safe; past eight
#: series the colours repeat, drawn dashed or hollow.
OKABE_ITO = ["#0072b2", "#d55e00", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#000000", "#f0e442"]

_MM = 1e3
_AXES = "xyz"


def report_dir(report: Any) -> Path:
    """The directory of ``report`` (a path, its index.html, an
    ``Identified``, or a dictionary with a "report" path)."""
    if isinstance(report, dict):
        report = report.get("report") or report.get("dir")
    elif hasattr(report, "report") and not isinstance(report, (str, os.PathLike)):
        report = report.report
    path = Path(os.fspath(report))
    return path.parent if path.suffix == ".html" else path


def _colour(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


def _repeats(i: int) -> bool:
    return i >= len(OKABE_ITO)


def _summary(report: Any) -> Dict[str, Any]:
    path = report_dir(report) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no summary.json (give an identify report's directory)")
    with open(path) as f:
        summary: Dict[str, Any] = json.load(f)
    return summary


def _in_rod_frame(experiment: Dict[str, Any], p: Sequence[float]) -> List[float]:
    """``p`` (world, m) in the experiment's rod frame (its base at the
    origin, x along the rod at the base) [mm], as the report draws it."""
    base, r = experiment["base_m"], experiment["base_rotation"]
    d = [p[k] - base[k] for k in range(3)]
    return [(r[0][i] * d[0] + r[1][i] * d[1] + r[2][i] * d[2]) * _MM for i in range(3)]


def shapes(ax: Any, report: Any, view: str = "side", *, legend: bool = True) -> List[Any]:
    """An identification's fitted shapes (lines) and measured points
    (crosses) in each rod's own frame [mm]: ``view`` "side" (x, z) or "top"
    (x, y). Equal scales. Returns the lines drawn."""
    axis = {"side": 2, "top": 1}.get(view)
    if axis is None:
        raise ValueError(f"view: 'side' or 'top', got {view!r}")
    lines = []
    for i, ex in enumerate(_summary(report)["experiments"]):
        colour, dashed = _colour(i), _repeats(i)
        shape = [_in_rod_frame(ex, p) for p in ex["shape_m"]]
        (line,) = ax.plot([q[0] for q in shape], [q[axis] for q in shape], color=colour, ls="--" if dashed else "-", lw=1.5,
                          label=f"experiment {ex['id']}")
        lines.append(line)
        seen = [_in_rod_frame(ex, p) for p in ex["measured_m"]]
        ax.plot([q[0] for q in seen], [q[axis] for q in seen], ls="", marker="o" if dashed else "x", mfc="none" if dashed else colour,
                color=colour, ms=5)
    ax.set_xlabel("x along the rod [mm]")
    ax.set_ylabel(f"{_AXES[axis]} [mm]")
    ax.set_aspect("equal", adjustable="datalim")
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    return lines


def residuals(ax: Any, report: Any) -> Any:
    """Each experiment's marker RMS error of an identification [mm], as bars."""
    experiments = _summary(report)["experiments"]
    rms = []
    for ex in experiments:
        errors = [e for e in ex["errors_mm"] if e is not None]
        rms.append((sum(e * e for e in errors) / len(errors)) ** 0.5 if errors else float("nan"))
    bars = ax.bar(range(len(rms)), rms, color=[_colour(i) for i in range(len(rms))])
    ax.set_xticks(range(len(rms)), [ex["id"] for ex in experiments], rotation=90, fontsize="small")
    ax.set_ylabel("marker RMS error [mm]")
    return bars


def figures(report: Any) -> List[str]:
    """The names of the charts whose series ``report`` carries (``series`` draws them)."""
    return sorted(p.stem for p in report_dir(report).glob("*.json") if p.with_suffix(".svg").is_file())


def series(ax: Any, report: Any, name: str, *, legend: bool = True) -> List[Any]:
    """Chart ``name`` of a simulate or validate report (its ``NAME.json``:
    e.g. "strain_time", "strain_residual") drawn into ``ax``: each series as
    the report draws it (line, dashed, points), bands shaded (points'
    intervals as bars), the same
    colours and axis labels. Returns the artists of the series."""
    path = report_dir(report) / f"{name}.json"
    if not path.is_file():
        known = ", ".join(figures(report)) or "none"
        raise FileNotFoundError(f"{path}: no chart {name!r} (this report has: {known})")
    with open(path) as f:
        chart = json.load(f)
    drawn = []
    for s in chart["series"]:
        colour = _colour(s["color"])
        if s["band"] and s["style"] == "Points":
            # Points' intervals, as the report draws them: a bar each.
            x, low, high = zip(*s["band"])
            ax.vlines(x, low, high, color=colour, lw=0.8)
        elif s["band"]:
            x, low, high = zip(*s["band"])
            ax.fill_between(x, low, high, color=colour, alpha=0.2, lw=0)
        if not s["points"]:
            continue
        x, y = zip(*s["points"])
        style = s["style"]
        if style == "Points":
            (artist,) = ax.plot(x, y, ls="", marker="o", ms=2.5, color=colour, label=s["label"])
        else:
            (artist,) = ax.plot(x, y, ls="--" if style == "Dashed" or _repeats(s["color"]) else "-", lw=1.2, color=colour, label=s["label"])
        drawn.append(artist)
    if chart.get("diagonal"):
        ax.axline((0.0, 0.0), slope=1.0, color="grey", lw=0.8)
    ax.set_xlabel(chart["x_label"])
    ax.set_ylabel(chart["y_label"])
    if legend and drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    return drawn
