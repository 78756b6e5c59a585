"""Tracking from Python (a rodlab built with OpenCV): the same marker table
as the command line's on a synthetic video with an occlusion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rodlab

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def video(run, tmp_path):
    """40 frames of the demo's synthetic video (marker 2 hidden for 5
    frames from frame 20), its markers.toml, and camera.toml calibrated on
    synthetic boards, in `tmp_path`: the video's folder."""
    board, video = tmp_path / "board", tmp_path / "video"
    run("synth", "board", "--out", board)
    run("calibrate", "--images", board / "views", "--board", "9x6", "--square-m", "0.016", "--plane-image", board / "plane.png",
        "--out", tmp_path / "camera.toml")
    run("synth", "video", "--out", video, "--frames", "40", "--occlude", "2,20,5")
    return video


@pytest.mark.skipif(not rodlab.HAS_DEVICES, reason="built without OpenCV")
def test_track_equals_the_command_line(run, video, tmp_path):
    args = [video / "video.avi", "--camera", tmp_path / "camera.toml", "--markers", video / "markers.toml"]
    run("track", *args, "--out", tmp_path / "cli.parquet")
    reports = []
    figures = rodlab.track(video / "video.avi", tmp_path / "camera.toml", markers=video / "markers.toml", out=tmp_path / "py.parquet",
                           progress=lambda *r: reports.append(r))
    assert figures["frames"] == 40 and figures["out"] == tmp_path / "py.parquet"
    a, b = pl.read_parquet(tmp_path / "cli.parquet"), pl.read_parquet(tmp_path / "py.parquet")
    assert a.columns == b.columns and a.height == b.height > 0
    numeric = [c for c, t in a.schema.items() if t.is_numeric()]
    assert np.array_equal(a.select(numeric).to_numpy(), b.select(numeric).to_numpy(), equal_nan=True)
    assert any(r[0] == "track" for r in reports)
    with pytest.raises(rodlab.InputError):
        rodlab.track(tmp_path / "no-video.mkv", tmp_path / "camera.toml", out=tmp_path / "x.parquet", progress=False)


def test_markers_are_where_an_opencv_python_script_finds_them(run, video, tmp_path):
    """The peer nobody here wrote the library of: scripts/peer/track-peer.py
    (OpenCV-Python's cvtColor, inRange, morphologyEx, findContours and
    moments on every frame in full, as a lab's own script would) on the same
    video finds the same markers in every frame that rodlab tracks them in,
    each centroid within 0.3 px (rodlab's are chroma-weighted, the script's
    from the binary mask: 0.05 px apart at the median, 0.16 px at most on
    the demo's 200 frames)."""
    run("track", video / "video.avi", "--camera", tmp_path / "camera.toml", "--markers", video / "markers.toml", "--out", tmp_path / "ours.parquet")
    peer = ROOT / "scripts" / "peer" / "track-peer.py"
    subprocess.run([sys.executable, str(peer), str(video / "video.avi"), str(video / "markers.toml"), str(tmp_path / "peer.csv")], check=True)
    theirs = pl.read_csv(tmp_path / "peer.csv")
    ours = pl.read_parquet(tmp_path / "ours.parquet").filter(pl.col("u_px").is_not_nan())
    assert ours["frame"].n_unique() == 40 and ours.height == 40 * 6 - 5
    for (frame,), group in ours.group_by("frame"):
        found = theirs.filter(pl.col("frame") == frame).select("u_px", "v_px").to_numpy()
        assert len(found) == group.height, f"frame {frame}: the script found {len(found)} markers, rodlab tracked {group.height}"
        for u, v in group.select("u_px", "v_px").to_numpy():
            nearest = np.min(np.hypot(found[:, 0] - u, found[:, 1] - v))
            assert nearest < 0.3, f"frame {frame}: rodlab's marker at ({u:.2f}, {v:.2f}) is {nearest:.2f} px from the script's"
