"""A lab's sessions, many at once: one workflow (track, observe, identify,
simulate or validate) mapped over sessions by any ``concurrent.futures``
executor, on one machine or on a cluster.

Each task reads its session and the shared input files (the rod, scene,
params, loads, camera: paths every worker can read) and writes only its own
directory, ``OUT/<session name>/<task>``; it returns plain data (figures,
values, arrays) that pickles. The results are therefore the same whatever
runs them, serially, in a process pool or on a Dask cluster, to the last
bit (``python/tests/test_batch.py``)::

    from concurrent.futures import ProcessPoolExecutor
    results = rodlab.batch.map("validate", sessions, rod="rod.toml", out="reports/week",
                               executor=ProcessPoolExecutor(2), scene="stick.toml", params="fit/identified.toml")

    from dask.distributed import Client          # a cluster: docs/python.md
    with Client("scheduler:8786") as client:
        results = rodlab.batch.map("identify", sessions, rod="rod.toml", out="reports/week",
                                   executor=client.get_executor(), loads="loads.toml")

rodlab builds no scheduler of its own: the executor decides where each
task runs. Without one, the tasks run here, one after another.

One validation's prediction band (``bands=N`` Monte Carlo draws, or one
replay per principal direction) spreads the same way: ``rodlab.validate(...,
executor=)`` hands each replay to the executor as a task of its own
(:func:`band_replay`), and validate reads them back, as if made here.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

TASKS = ("track", "observe", "identify", "simulate", "validate")


def map(
    task: str,
    sessions: Iterable[Any],
    *,
    rod: Any,
    out: PathLike,
    executor: Optional[Executor] = None,
    **options: Any,
) -> List[Dict[str, Any]]:
    """Run ``task`` on every session (paths or ``Session``s) with the rod
    file ``rod`` (a path, or a ``Rod`` read from a file), each into
    ``out/<session name>/<task>``, by ``executor`` (default: here, in turn).
    ``options`` are the task's keywords (``scene``, ``params``, ``loads``,
    the limits, ...; for ``track``: ``camera`` (the camera file),
    ``camera_name`` (which of the session's videos: default its first)
    and the tracker's options). Returns one result per session, in order:
    the task's figures as dictionaries (``simulate``: its arrays; ``identify``:
    values, intervals and the identified.toml written)."""
    if task not in TASKS:
        raise ValueError(f"task: one of {', '.join(TASKS)}, got {task!r}")
    rod_file = _rod_file(rod)
    paths = [Path(getattr(s, "path", s)) for s in sessions]
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise ValueError("sessions: two sessions share a directory name (their results would overwrite each other)")
    jobs = [(task, str(p), rod_file, str(Path(out) / p.name / task), options) for p in paths]
    if executor is None:
        return [run_task(*job) for job in jobs]
    futures = [executor.submit(run_task, *job) for job in jobs]
    return [f.result() for f in futures]


def _rod_file(rod: Any) -> str:
    path = getattr(rod, "path", rod)
    if path is None or not Path(path).is_file():
        raise ValueError(f"rod: a rod file every worker can read, got {rod!r} (a Rod made in memory has none: write it to a file)")
    return str(path)


def run_task(task: str, session: str, rod_file: str, out: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """One task on one session (what a worker runs): reads the rod file,
    writes into ``out`` alone, returns plain data."""
    import rodlab

    rod = rodlab.Rod.from_file(rod_file)
    opts = dict(options)
    Path(out).mkdir(parents=True, exist_ok=True)
    if task == "observe":
        return rodlab.observe(session, rod, out=Path(out) / "strain.parquet", progress=False, **opts)
    if task == "validate":
        scene = opts.pop("scene")
        return rodlab.validate(session, rod, scene, opts.pop("params", None), out=out, progress=False, **opts)
    if task == "identify":
        fit = rodlab.identify(rod, sessions=[session], out=out, progress=False, **opts)
        return {
            "values": dict(fit.values),
            "intervals": {k: list(v) for k, v in fit.intervals.items()},
            "identified_toml": str(fit.identified_toml),
        }
    if task == "simulate":
        scene = opts.pop("scene")
        sim = rodlab.simulate(rod, scene, opts.pop("params", None), session=session, out=out, progress=False, **opts)
        fields = ("time_s", "marker_position_m", "tip_m", "node_strain", "node_position_m", "normal_force_n", "tangential_force_n", "tip_slip_m")
        return {k: np.asarray(getattr(sim, k)) for k in fields}
    # track: the session's video, its markers table into out.
    video = rodlab.Session(session).video(opts.pop("camera_name", None))
    if video is None:
        raise ValueError(f"{session}: no video to track")
    return rodlab.track(video, opts.pop("camera", None), out=Path(out) / "markers.parquet", progress=False, **opts)


# Keywords of validate a band's replay depends on (its worker gets these).
BAND_OPTIONS = ("loads", "strict", "parameter_band", "bands")


class BandTasks:
    """A validation's band replays as an executor's tasks: called by
    validate with a session and how many replays its band needs, it
    submits one :func:`band_replay` each and yields their bytes, in order,
    as they come back."""

    def __init__(self, executor: Executor, rod: Any, scene: PathLike, params: Any, options: Dict[str, Any]) -> None:
        self.executor = executor
        self.rod_file = _rod_file(rod)
        self.scene = str(scene)
        params = getattr(params, "identified_toml", params)
        self.params = None if params is None else str(params)
        self.options = {k: (str(v) if k == "loads" and v is not None else v) for k, v in options.items() if k in BAND_OPTIONS}

    def __call__(self, session: str, count: int) -> Iterator[bytes]:
        futures = [self.executor.submit(band_replay, str(session), self.rod_file, self.scene, self.params, k, self.options) for k in range(count)]
        return (f.result() for f in futures)


def band_replay(session: str, rod_file: str, scene: str, params: Optional[str], index: int, options: Dict[str, Any]) -> bytes:
    """Replay ``index`` of a session's prediction band (what a worker runs
    for ``rodlab.validate(..., executor=)``): the replay's records as
    bytes, floats exact."""
    import rodlab

    return rodlab._rodlab.band_replay(session, rodlab.Rod.from_file(rod_file), scene, index=index, params=params, **options)
