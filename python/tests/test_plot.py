"""rodlab.plot: a report's figures drawn into one's own matplotlib Axes,
from the report's files, as the report draws them: an identification's
shapes in each rod's frame (mm) and its residuals, a validation's charts
from their NAME.json (every series, the same colours)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rodlab
import rodlab.plot
from conftest import repo

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

CABLE_ARM = repo("configs/rod/pls-cable-arm.toml")
STEEL = repo("configs/rod/contact-paper-steel-core.toml")
STICK = repo("configs/scene/contact-paper-stick.toml")


def test_an_identifications_shapes_and_residuals(tmp_path):
    fit = rodlab.identify(rodlab.Rod.from_file(CABLE_ARM), experiments=repo("datasets/pls-cable-arm"), out=tmp_path / "fit", loo=False,
                          progress=False)
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    fig, (side, top, bars) = plt.subplots(1, 3, figsize=(12, 4))
    lines = rodlab.plot.shapes(side, fit)
    rodlab.plot.shapes(top, tmp_path / "fit" / "index.html", view="top")
    assert len(lines) == len(summary["experiments"]) == fit.experiments
    # The first shape in its rod frame [mm]: the base at the origin.
    first = lines[0]
    assert abs(first.get_xdata()[0]) < 1e-9 and abs(first.get_ydata()[0]) < 1e-9
    ex = summary["experiments"][0]
    tip_world_mm = np.linalg.norm(np.subtract(ex["shape_m"][-1], ex["base_m"])) * 1e3
    assert np.hypot(first.get_xdata()[-1], first.get_ydata()[-1]) == pytest.approx(tip_world_mm, rel=1e-3)
    assert [to_hex(line.get_color()) for line in lines[:3]] == rodlab.plot.OKABE_ITO[:3]
    assert side.get_xlabel() == "x along the rod [mm]" and side.get_ylabel() == "z [mm]" and top.get_ylabel() == "y [mm]"
    drawn = rodlab.plot.residuals(bars, fit)
    assert len(drawn) == fit.experiments
    fig.savefig(tmp_path / "fit.png")
    with pytest.raises(ValueError, match="view"):
        rodlab.plot.shapes(side, fit, view="front")


def test_a_validations_charts_from_their_series(stick_session, tmp_path):
    result = rodlab.validate(stick_session, rodlab.Rod.from_file(STEEL), STICK, out=tmp_path / "v", progress=False)
    (session,) = result["sessions"]
    names = rodlab.plot.figures(session)
    assert "strain_time" in names, names
    chart = json.loads((rodlab.plot.report_dir(session) / "strain_time.json").read_text())
    fig, ax = plt.subplots()
    drawn = rodlab.plot.series(ax, session, "strain_time")
    with_points = [s for s in chart["series"] if s["points"]]
    assert len(drawn) == len(with_points) > 0
    for artist, s in zip(drawn, with_points):
        assert len(artist.get_xdata()) == len(s["points"]) and artist.get_label() == s["label"]
        assert to_hex(artist.get_color()) == rodlab.plot.OKABE_ITO[s["color"] % 8]
    assert ax.get_xlabel() == chart["x_label"]
    assert any(s["band"] for s in chart["series"]) == bool(ax.collections), "bands are shaded"
    fig.savefig(tmp_path / "strain.png")
    with pytest.raises(FileNotFoundError, match="strain_time"):
        rodlab.plot.series(ax, session, "no_such_chart")
