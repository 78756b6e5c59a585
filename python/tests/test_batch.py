"""rodlab.batch (#82): a workflow mapped over 20 synthetic sessions by a
2-worker Dask LocalCluster and by a process pool gives what a serial run
gives, to the last bit; each task writes only its own directory. So does
one validation whose Monte Carlo band's replays the cluster runs."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, List

import numpy as np
import polars as pl
import pytest

import rodlab
import rodlab.batch

from conftest import repo

ROD = repo("configs/rod/contact-paper-steel-core.toml")
SCENE = repo("configs/scene/contact-paper-stick.toml")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> List[rodlab.Session]:
    """20 short stick sessions, each its own seed."""
    day = tmp_path_factory.mktemp("day")
    return [rodlab.synth_session(scene=SCENE, rod=ROD, out=day / f"s{k:02}", seed=k, duration_s=0.6, progress=False) for k in range(20)]


# How fast a run went (the host's clock): the one figure that differs.
CLOCKED = {"simulation_real_time_factor", "real_time_factor", "wall_time_s"}


def without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if k not in CLOCKED}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def same_but_paths(a: Any, b: Any, root_a: Path, root_b: Path) -> bool:
    """Equal, floats to the bit (JSON writes a float's shortest exact
    form), once each run's output directory is named alike and the run's
    speed left out."""
    text_a = json.dumps(without_clock(a), sort_keys=True, default=str).replace(str(root_a), "OUT")
    text_b = json.dumps(without_clock(b), sort_keys=True, default=str).replace(str(root_b), "OUT")
    return text_a == text_b


def test_validate_on_a_dask_cluster_equals_a_serial_run(sessions: List[rodlab.Session], tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    serial = rodlab.batch.map("validate", sessions, rod=ROD, out=tmp_path / "serial", scene=SCENE)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            on_cluster = rodlab.batch.map("validate", sessions, rod=ROD, out=tmp_path / "dask", scene=SCENE, executor=client.get_executor())
            workers = len(client.scheduler_info()["workers"])
    assert workers == 2
    assert len(serial) == len(on_cluster) == 20
    assert all(r["pass"] for r in serial), [r["sessions"][0]["warnings"] for r in serial if not r["pass"]]
    for s, r, c in zip(sessions, serial, on_cluster):
        assert r["sessions"][0]["session"] == s.name
        assert same_but_paths(r, c, tmp_path / "serial", tmp_path / "dask"), s.name
        # Each task wrote its own directory, and nothing into the session.
        assert (tmp_path / "dask" / s.name / "validate" / "summary.json").is_file()
        assert not (Path(s.path) / "strain.parquet").exists()
    # The figures differ from session to session (each its own seed): the
    # comparison above compared something.
    assert len({r["sessions"][0]["strain_headline_rms_pct"] for r in serial}) == 20


def test_observe_in_a_process_pool_equals_a_serial_run(sessions: List[rodlab.Session], tmp_path: Path) -> None:
    # Six of the day's sessions: a spawned worker's start (Python, rodlab,
    # polars) is most of this test's time.
    some = sessions[:6]
    serial = rodlab.batch.map("observe", some, rod=ROD, out=tmp_path / "serial")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = rodlab.batch.map("observe", some, rod=ROD, out=tmp_path / "pool", executor=pool)
    for s, r, p in zip(some, serial, pooled):
        assert same_but_paths(r, p, tmp_path / "serial", tmp_path / "pool"), s.name
        serial_table, pooled_table = (pl.read_parquet(tmp_path / run / s.name / "observe" / "strain.parquet") for run in ("serial", "pool"))
        assert serial_table.height > 0 and serial_table.equals(pooled_table), s.name


def test_identify_and_simulate_on_a_dask_cluster_equal_a_serial_run(sessions: List[rodlab.Session], tmp_path: Path) -> None:
    """identify (three days of gravity holds, each its own fit) and
    simulate (three stick sessions replayed) by the cluster's workers: the
    same values, intervals and arrays as here, to the bit."""
    distributed = pytest.importorskip("dask.distributed")
    holds = [
        rodlab.synth_session(scene=repo("configs/scene/cable-arm-holds.toml"), rod=ROD, out=tmp_path / "days" / f"holds{k}", seed=k, progress=False)
        for k in range(3)
    ]
    replayed = sessions[:3]
    fit_options = {"loads": repo("configs/loads.toml"), "loo": False}
    serial_fits = rodlab.batch.map("identify", holds, rod=ROD, out=tmp_path / "serial", **fit_options)
    serial_runs = rodlab.batch.map("simulate", replayed, rod=ROD, out=tmp_path / "serial", scene=SCENE)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            fits = rodlab.batch.map("identify", holds, rod=ROD, out=tmp_path / "dask", executor=client.get_executor(), **fit_options)
            runs = rodlab.batch.map("simulate", replayed, rod=ROD, out=tmp_path / "dask", scene=SCENE, executor=client.get_executor())
    for h, a, b in zip(holds, serial_fits, fits):
        assert (a["values"], a["intervals"]) == (b["values"], b["intervals"]), h.name
        assert Path(b["identified_toml"]) == tmp_path / "dask" / h.name / "identify" / "identified.toml"
    # Each day its own noise: three different fits, so the comparison compared something.
    assert len({f["values"]["e_pa"] for f in serial_fits}) == 3
    for s, a, b in zip(replayed, serial_runs, runs):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), s.name
        assert a["time_s"].size > 100 and np.ptp(a["tip_m"][:, 2]) > 0, "a replay that moved"
        assert (tmp_path / "dask" / s.name / "simulate" / "summary.json").is_file()


@pytest.mark.skipif(not rodlab.HAS_DEVICES, reason="built without OpenCV")
def test_track_in_a_process_pool_equals_a_serial_run(sessions: List[rodlab.Session], run: Any, tmp_path: Path) -> None:
    """track over two sessions given the demo's synthetic video as their
    camera's (30 frames; a camera is a stream of frame times, written here
    as the recorder writes them, with its video beside it), by a spawned
    process pool: the same marker tables as here, row for row."""
    board, video = tmp_path / "board", tmp_path / "video"
    run("synth", "board", "--out", board)
    run("calibrate", "--images", board / "views", "--board", "9x6", "--square-m", "0.016", "--plane-image", board / "plane.png",
        "--out", tmp_path / "camera.toml")
    run("synth", "video", "--out", video, "--frames", "30")
    filmed = []
    for s in sessions[:2]:
        day = tmp_path / "days" / s.name
        shutil.copytree(s.path, day)
        (day / "streams" / "cam").mkdir()
        shutil.copy(video / "video.avi", day / "cam.avi")
        # The camera's frame times, as the recorder writes them: 30 frames/s.
        k = np.arange(30)
        pl.DataFrame({"t_host_ns": k * 33_333_333, "frame": k, "device_ms": k * 100.0 / 3.0}).write_parquet(day / "streams" / "cam" / "000000.parquet")
        filmed.append(rodlab.Session(day))
    assert all(Path(f.video()) == f.path / "cam.avi" for f in filmed)
    options = {"camera": tmp_path / "camera.toml", "markers": video / "markers.toml"}
    serial = rodlab.batch.map("track", filmed, rod=ROD, out=tmp_path / "serial", **options)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = rodlab.batch.map("track", filmed, rod=ROD, out=tmp_path / "pool", executor=pool, **options)
    for s, r, p in zip(filmed, serial, pooled):
        assert r["frames"] == p["frames"] == 30, s.name
        a, b = (pl.read_parquet(tmp_path / run_ / s.name / "track" / "markers.parquet") for run_ in ("serial", "pool"))
        assert a.height > 0 and a.equals(b), s.name
    with pytest.raises(ValueError, match="no video to track"):
        rodlab.batch.map("track", sessions[2:3], rod=ROD, out=tmp_path / "none", **options)


class Counting(Executor):
    """An executor that counts the tasks it hands on."""

    def __init__(self, inner: Executor) -> None:
        self.inner, self.submitted = inner, 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> "Future[Any]":
        self.submitted += 1
        return self.inner.submit(fn, *args, **kwargs)


def test_a_validations_band_replays_on_a_dask_cluster_equal_a_run_here(tmp_path: Path) -> None:
    """validate's Monte Carlo band, its 8 replays run by a 2-worker Dask
    cluster (one task each, in other processes) and sent back as bytes,
    gives the figures and the band's charts of a run here, to the bit."""
    distributed = pytest.importorskip("dask.distributed")
    rod = rodlab.Rod.from_file(ROD)
    # A covariance to draw from: E and rho from a synthetic day's gravity holds.
    holds = rodlab.synth_session(scene=repo("configs/scene/cable-arm-holds.toml"), rod=ROD, out=tmp_path / "holds", seed=1, progress=False)
    fit = rodlab.identify(rod, sessions=[holds], loads=repo("configs/loads.toml"), out=tmp_path / "fit", loo=False, progress=False)
    stick = rodlab.synth_session(scene=SCENE, rod=ROD, out=tmp_path / "stick", seed=3, duration_s=0.6, progress=False)
    here = rodlab.validate(stick, rod, SCENE, fit, out=tmp_path / "here", bands=8, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            executor = Counting(client.get_executor())
            reports: List[Any] = []
            there = rodlab.validate(stick, rod, SCENE, fit, out=tmp_path / "dask", bands=8, progress=lambda *r: reports.append(r), executor=executor)
    assert executor.submitted == 8, "one task a replay"
    # The replays are counted as they come back.
    assert ("prediction band of stick", 8, 8, "done") in reports, [r for r in reports if r[0].startswith("prediction")]
    band = here["sessions"][0]["band"]
    assert (band["method"], band["replays"], band["parameters"]) == ("Monte Carlo", 8, ["ln_e", "ln_rho"]), band
    assert same_but_paths(here, there, tmp_path / "here", tmp_path / "dask")
    # The band moved the figures (the comparison compared a band), and its charts are the same files.
    assert max(c["parameter_sd_rms"] for c in here["sessions"][0]["strain"]) > 0
    for chart in ("strain_time.json", "force_time.json"):
        assert (tmp_path / "here" / chart).read_bytes() == (tmp_path / "dask" / chart).read_bytes(), chart
    # The workers read the rod from its file: one made in memory is refused before any work.
    with pytest.raises(ValueError, match="a rod file every worker can read"):
        rodlab.validate(stick, rodlab.Rod.from_toml(ROD.read_text()), SCENE, fit, out=tmp_path / "none", bands=8, executor=executor)
    assert not (tmp_path / "none").exists()


def test_bad_requests_are_refused_before_any_work(sessions: List[rodlab.Session], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="task: one of track, observe, identify, simulate, validate"):
        rodlab.batch.map("fit", sessions, rod=ROD, out=tmp_path)
    with pytest.raises(ValueError, match="share a directory name"):
        rodlab.batch.map("observe", [sessions[0], sessions[0]], rod=ROD, out=tmp_path)
    in_memory = rodlab.Rod.from_toml(ROD.read_text())
    with pytest.raises(ValueError, match="a rod file every worker can read"):
        rodlab.batch.map("observe", sessions, rod=in_memory, out=tmp_path)
    assert not any(tmp_path.iterdir()), "nothing written"
