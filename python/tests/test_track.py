"""Tracking from Python (a rodlab built with OpenCV): the same marker table
as the command line's on a synthetic video with an occlusion."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rodlab


@pytest.mark.skipif(not rodlab.HAS_DEVICES, reason="built without OpenCV")
def test_track_equals_the_command_line(run, tmp_path):
    board, video = tmp_path / "board", tmp_path / "video"
    run("synth", "board", "--out", board)
    run("calibrate", "--images", board / "views", "--board", "9x6", "--square-m", "0.016", "--plane-image", board / "plane.png",
        "--out", tmp_path / "camera.toml")
    run("synth", "video", "--out", video, "--frames", "40", "--occlude", "2,20,5")
    args = [video / "video.mkv", "--camera", tmp_path / "camera.toml", "--markers", video / "markers.toml"]
    run("track", *args, "--out", tmp_path / "cli.parquet")
    reports = []
    figures = rodlab.track(video / "video.mkv", tmp_path / "camera.toml", markers=video / "markers.toml", out=tmp_path / "py.parquet",
                           progress=lambda *r: reports.append(r))
    assert figures["frames"] == 40 and figures["out"] == tmp_path / "py.parquet"
    a, b = pl.read_parquet(tmp_path / "cli.parquet"), pl.read_parquet(tmp_path / "py.parquet")
    assert a.columns == b.columns and a.height == b.height > 0
    numeric = [c for c, t in a.schema.items() if t.is_numeric()]
    assert np.array_equal(a.select(numeric).to_numpy(), b.select(numeric).to_numpy(), equal_nan=True)
    assert any(r[0] == "track" for r in reports)
    with pytest.raises(rodlab.InputError):
        rodlab.track(tmp_path / "no-video.mkv", tmp_path / "camera.toml", out=tmp_path / "x.parquet", progress=False)
