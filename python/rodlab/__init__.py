"""rodlab: soft-rod lab toolkit from Python.

The same library as the ``rodlab`` command line, with numpy arrays in SI
units in and out::

    import rodlab
    rod = rodlab.Rod.from_file("configs/rod/pls-paper-cantilever.toml")
    shape = rod.solve(tip_force=[0, 0, -0.01])      # N, world frame
    shape.position_m                                # (n, 3) array [m]

Long work (``identify``, ``simulate``, ``validate``, ``observe``, ``track``)
releases the GIL, reports progress (a tqdm bar when tqdm is installed, or
your own callback) and stops on Ctrl-C with KeyboardInterrupt. Errors are
``rodlab.InputError`` (bad input; a ``ValueError``), ``rodlab.ComputationError``
and ``rodlab.IoError``, with the command line's messages.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from . import _rodlab
from .errors import ComputationError, Error, InputError, IoError
from ._rodlab import Identified, Rod, Shape, Shapes, Simulation, __version__

__all__ = [
    "Rod",
    "Shape",
    "Shapes",
    "Identified",
    "Simulation",
    "Session",
    "synth_session",
    "import_c3d",
    "import_table",
    "archive_index",
    "archive_report",
    "identify",
    "identify_dynamic",
    "simulate",
    "validate",
    "observe",
    "track",
    "calibrate",
    "record",
    "RobotEmulator",
    "Ft300Emulator",
    "NetFtEmulator",
    "AsciiSensorEmulator",
    "Error",
    "InputError",
    "ComputationError",
    "IoError",
    "HAS_DEVICES",
    "__version__",
]

HAS_DEVICES: bool = _rodlab.HAS_DEVICES
if HAS_DEVICES:
    from ._rodlab import AsciiSensorEmulator, Ft300Emulator, NetFtEmulator, RobotEmulator

if TYPE_CHECKING:
    from concurrent.futures import Executor

    import polars as pl

PathLike = Union[str, "os.PathLike[str]"]
#: ``callback(task, done, total, message)``: ``task`` names the work
#: ("identify", "simulate", ... or "note" for a line worth showing),
#: ``done``/``total`` count its steps (``total`` None when unknown).
ProgressCallback = Callable[[str, Optional[int], Optional[int], Optional[str]], Any]


class _TqdmProgress:
    """A tqdm bar per task (notebook-aware through tqdm.auto)."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bars: Dict[str, Any] = {}

    def __call__(self, task: str, done: Optional[int], total: Optional[int], message: Optional[str]) -> None:
        if task == "note":
            self._tqdm.write(message or "")
            return
        bar = self._bars.get(task)
        if bar is None:
            bar = self._bars[task] = self._tqdm(total=total, desc=task, leave=False)
        if done is not None:
            bar.update(done - bar.n)
        if message == "done":
            bar.close()
            del self._bars[task]
        elif message:
            bar.set_postfix_str(message)


def _progress(progress: Union[bool, ProgressCallback, None]) -> Optional[ProgressCallback]:
    """``True`` (the default): a tqdm bar when tqdm is installed; ``False``
    or ``None``: nothing; a callable: called with every report."""
    if callable(progress):
        return progress
    if progress is True:
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped]
        except ImportError:
            return None
        return _TqdmProgress(tqdm)
    return None


def _frame(columns: Dict[str, Any]) -> "pl.DataFrame":
    """A polars DataFrame of the columns (numpy arrays go in without a
    copy per row); without polars, the dictionary itself (the type says
    polars: a type checker runs where polars is installed)."""
    try:
        import polars as pl
    except ImportError:
        return columns  # type: ignore[return-value]
    return pl.DataFrame(columns)


def _table(read: Callable[..., Any], *args: Any, **kwargs: Any) -> "pl.DataFrame":
    """The table ``read`` gives, as a polars DataFrame taken over by the
    Arrow C stream (the columns as the reader decoded them, no copy);
    without polars, its columns as a dictionary of numpy arrays."""
    try:
        import polars as pl
    except ImportError:
        return read(*args, **kwargs)  # type: ignore[no-any-return]
    return pl.DataFrame(read(*args, arrow=True, **kwargs))


class Session:
    """A recorded session (``rodlab record``, ``synth session``, ``import c3d``):
    its metadata and tables as polars DataFrames (``.to_pandas()`` as
    polars has it, which needs pandas and pyarrow: ``pip install pandas
    pyarrow``; ``.to_numpy()`` needs neither; without polars installed,
    dictionaries of numpy arrays)."""

    def __init__(self, path: PathLike) -> None:
        self._native = _rodlab.Session(path)

    @property
    def path(self) -> "os.PathLike[str]":
        """The session directory."""
        return self._native.path

    @property
    def name(self) -> str:
        """The directory's name."""
        return self._native.name

    @property
    def meta(self) -> Optional[Dict[str, Any]]:
        """session.toml as a dictionary (devices, clocks, frames)."""
        return self._native.meta

    def streams(self) -> List[str]:
        """The names of the recorded device streams."""
        return self._native.streams()

    def stream(self, name: str, *, strict: bool = False) -> "pl.DataFrame":
        """Stream ``name`` (``t_host_ns`` and the device's columns in SI
        units); ``strict``: refuse a damaged chunk instead of leaving it out."""
        return _table(self._native.stream_columns, name, strict=strict)

    def markers(self) -> "pl.DataFrame":
        """The marker table (frame, t_s, t_host_ns, marker, u_px, v_px, x_m, y_m, z_m, ...)."""
        return _table(self._native.markers_columns)

    def strain(self) -> "pl.DataFrame":
        """The observed strain table (frame, t_host_ns, node, arc_m, kappa_x ... eps_z, ...; ``observe`` writes it)."""
        return _table(self._native.strain_columns)

    def gaps(self, device: str) -> "pl.DataFrame":
        """Device ``device``'s outages (empty: none)."""
        return _table(self._native.gaps_columns, device)

    def info(self) -> Dict[str, Any]:
        """As ``rodlab session info``: "streams" (each one's rows, span_s,
        rate_hz), "devices" (each one's gaps, outage_s, summary), "warnings"."""
        return self._native.info()

    def check(self, *, max_outage_s: float = 1.0, videos: bool = True) -> Dict[str, Any]:
        """As ``rodlab session check``: reads every chunk, table and video;
        "ok", "problems" (one line each), "warnings", "rows"."""
        return self._native.check(max_outage_s=max_outage_s, videos=videos)

    def aligned(
        self,
        *,
        on: Optional[str] = None,
        streams: Optional[List[str]] = None,
        tolerance_s: Optional[float] = None,
        match: str = "previous",
        strict: bool = False,
    ) -> "pl.DataFrame":
        """Every stream on the host times of stream ``on`` (default: the one
        with the most samples): ``t_host_ns``, then ``STREAM.COLUMN`` of each
        stream. A row takes another stream's sample at or before it
        (``match="previous"``) or nearest to it (``"nearest"``), within
        ``tolerance_s`` (default: 1.5 of that stream's median sample
        interval), and never one from across an outage in the stream's gap
        table: such a value is null. ``streams``: those to join (default:
        all); ``strict``: refuse a damaged chunk instead of leaving it out."""
        got = self._native.aligned_columns(on=on, streams=streams, tolerance_s=tolerance_s, match=match, strict=strict)
        frame = _frame(got["columns"])
        try:
            import polars as pl
        except ImportError:
            return frame
        return frame.with_columns(pl.col(pl.Float64).fill_nan(None))

    def export(
        self,
        to: PathLike,
        *,
        aligned: bool = False,
        on: Optional[str] = None,
        streams: Optional[List[str]] = None,
        tolerance_s: Optional[float] = None,
        match: str = "previous",
        format: str = "csv",
    ) -> Dict[str, Any]:
        """As ``rodlab session export``: every table as CSV (or ``format``:
        "json", "parquet", "ipc", written by polars) and the metadata as
        JSON into ``to``; "files" ({path: rows}) and "warnings". With
        ``aligned``, also ``aligned.csv`` (the options as :meth:`aligned`'s;
        a missing value where a row has none) and "aligned" (the rows'
        stream, and each joined stream's tolerance and rows without a
        value)."""
        return self._native.export(to, aligned=aligned, on=on, streams=streams, tolerance_s=tolerance_s, match=match, format=format)

    def video(self, camera: Optional[str] = None) -> Optional["os.PathLike[str]"]:
        """The path of camera ``camera``'s video (default: the first)."""
        return self._native.video(camera)

    def __repr__(self) -> str:
        return f"Session({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)


def _session_paths(sessions: Any) -> Any:
    if isinstance(sessions, Session):
        return [sessions.path]
    if isinstance(sessions, (str, os.PathLike)):
        return sessions
    return [s.path if isinstance(s, Session) else s for s in sessions]


def synth_session(
    *,
    scene: PathLike,
    rod: Union[Rod, PathLike],
    out: PathLike,
    progress: Union[bool, ProgressCallback, None] = True,
    **options: Any,
) -> Session:
    """Make a lab session from the simulator, as ``rodlab synth session``:
    the robot's RTDE stream, the flange force sensor and the tracked markers
    of ``scene`` with the rod file ``rod``, written into ``out``; the truth
    (the simulation's tables, truth.toml) beside it in ``truth`` (default
    OUT-truth). Options (the command's flags): ``rig``, ``params``,
    ``e_pa``, ``g_pa``, ``rho_kg_m3``, ``trajectory``, ``truth``,
    ``duration_s``, ``marker_noise_m``, ``robot_hz``, ``sensor_hz``,
    ``flange_sensor`` (default True), ``force_noise_n``, ``moment_noise_nm``,
    ``load_cell_noise_n``, ``ft_bias`` (six numbers), ``mounted_at_s``,
    ``seed``, ``tip_robot``. Returns the ``Session``."""
    made = _rodlab.synth_session(scene=scene, rod=rod, out=out, progress=_progress(progress), **options)
    return Session(made["session"])


def archive_index(dir: PathLike, *, out: Optional[PathLike] = None) -> Dict[str, Any]:
    """A lab's archive as one table, as ``rodlab archive index``: every
    session under ``dir`` a row (start, rig, devices, duration, rows, gaps,
    outages, markers, strain) with the newest identification under ``dir``
    that fitted it (specimen, E, G, rho and their 95 % intervals), written
    to ``out`` (default ``dir/archive.parquet``) and as CSV beside it.
    Returns "parquet", "csv", "sessions", "identified", "warnings";
    ``polars.read_parquet(result["parquet"])`` reads the table."""
    return _rodlab.archive_index(dir, out=out)


def archive_report(dir: PathLike, *, out: PathLike) -> Dict[str, Any]:
    """E, G and rho of every identification under ``dir`` over the days, a
    colour per specimen, each with its 95 % interval, as ``rodlab archive
    report``: ``out``/index.html, its figures and summary.json. Returns
    "report", "fits" (per identification: identified, specimen, sessions,
    day, start_utc, e_pa, g_pa, rho_kg_m3 as [value, low, high],
    rms_error_mm) and "warnings"."""
    return _rodlab.archive_report(dir, out=out)


def import_c3d(
    files: Any,
    *,
    rod: PathLike,
    map: PathLike,
    out: PathLike,
    progress: Union[bool, ProgressCallback, None] = True,
) -> List[Dict[str, Any]]:
    """Motion-capture recordings (C3D) into sessions, as ``rodlab import
    c3d``: ``files`` (a path or a list), ``rod`` (the rod file: its
    markers), ``map`` (labels, vertical axis, base), ``out`` (the session of
    one file, the directory of several). Returns a dictionary per session:
    "session", "frames", "rate_hz", "units", "missing", "base_frames",
    "release_s", "warnings"."""
    return _rodlab.import_c3d(files, rod=rod, map=map, out=out, progress=_progress(progress))


def import_table(
    files: Any,
    *,
    rod: PathLike,
    map: PathLike,
    out: PathLike,
    progress: Union[bool, ProgressCallback, None] = True,
) -> List[Dict[str, Any]]:
    """Motion-capture trajectory tables (Qualisys TSV, Motive CSV, Vicon
    Nexus CSV, a plain CSV named by the map's ``[table]``) into sessions, as
    ``rodlab import table``; arguments and answer as ``import_c3d``."""
    return _rodlab.import_table(files, rod=rod, map=map, out=out, progress=_progress(progress))


def identify(
    rod: Rod,
    *,
    experiments: Optional[PathLike] = None,
    sessions: Any = None,
    loads: Optional[PathLike] = None,
    out: Optional[PathLike] = None,
    progress: Union[bool, ProgressCallback, None] = True,
    **options: Any,
) -> Identified:
    """Fit E, G, rho of ``rod`` by nonlinear least squares over its PLS statics.

    From ``experiments`` (a directory with inputs.csv and measurements.csv)
    or recorded ``sessions`` (paths or ``Session``s: their static holds, the
    loads read as ``loads`` says). Writes identified.toml and a report into
    ``out`` (default: a new temporary directory).

    Options (as the command line's flags): ``translation``, ``pitch``,
    ``loo`` (default True), ``compare_variants``, ``compare_laws``,
    ``reference=(E, G, rho)``, ``hold_material=(E, G, rho)``,
    ``tie_g_poisson``, ``strict``; the terms fitted with a Gaussian prior,
    each ``True`` (the rod file's ``[identify]`` prior) or ``(mean, sd)``:
    ``fit_cable_offset`` (m; ``per_cable``, ``pool_cables``),
    ``fit_radius_scale``, ``fit_cable_angle`` (deg), ``fit_clamp_angle``
    (deg), ``fit_friction``.

    A fit that fails its checks raises ``ComputationError`` whose
    ``result`` holds its values, chi-square, worst experiments and a
    ``suggestion``: the term that fits the same data (fitted to them), e.g.
    ``{"keyword": "fit_friction=(0.2, 0.2)", ...}``.

    Returns an ``Identified``: ``values`` and ``intervals`` (95 %) of
    ``e_pa``, ``g_pa``, ``rho_kg_m3``, ``variants``, ``identified_toml``
    (what ``params=`` takes elsewhere), ``report``, ``files`` (all it wrote).
    """
    return _rodlab.identify(
        rod,
        experiments=experiments,
        sessions=None if sessions is None else _session_paths(sessions),
        loads=loads,
        out=out,
        progress=_progress(progress),
        **options,
    )


def identify_dynamic(
    rod: Rod,
    *,
    sessions: Any,
    scene: PathLike,
    params: Any = None,
    out: Optional[PathLike] = None,
    progress: Union[bool, ProgressCallback, None] = True,
    **options: Any,
) -> Dict[str, Any]:
    """Fit friction (mu) and damping from recorded motion by simulating the
    ``sessions`` in ``scene``, E, G, rho held at ``params`` (identified.toml
    or ``Identified``). Options: ``loads``, ``mu_start``, ``damping_start``,
    ``hold_damping``, ``hold_marker_delay``, ``fit_marker_delay``,
    ``hold_branches``, ``window_s``, ``fit_stiffness``, ``fit_density``,
    ``fit_hook_friction``, ``match_ring_down``, ``sigma_m``, ``compare_variants`` (the material's
    laws judged by held-out releases). Returns a dictionary
    with "dynamic" (the fitted values), "identified_toml" and "report"."""
    return _rodlab.identify_dynamic(
        rod, sessions=_session_paths(sessions), scene=scene, params=params, out=out, progress=_progress(progress), **options
    )


def simulate(
    rod: Rod,
    scene: PathLike,
    params: Any = None,
    *,
    session: Any = None,
    trajectory: Optional[PathLike] = None,
    loads: Optional[PathLike] = None,
    duration_s: Optional[float] = None,
    out: Optional[PathLike] = None,
    progress: Union[bool, ProgressCallback, None] = True,
) -> Simulation:
    """Simulate ``rod`` in ``scene`` (contact with the table, stick and slip),
    ``params`` applied, the base driven by the scene's waypoints or by a
    recorded ``session``'s robot (with ``loads``: its hung masses and tip
    hold), or a flange ``trajectory`` CSV (t_s,x_m,y_m,z_m,rx,ry,rz). Returns a ``Simulation`` of arrays:
    ``time_s`` (T,), ``marker_position_m`` (T, m, 3), ``tip_m`` (T, 3),
    ``node_strain`` (T, nodes, 6), ``node_position_m`` (T, nodes, 3), ``normal_force_n`` (T,),
    ``tangential_force_n`` (T, 3), ``tip_slip_m`` (T,)."""
    if isinstance(session, Session):
        session = session.path
    return _rodlab.simulate(rod, scene, params=params, session=session, trajectory=trajectory, loads=loads, duration_s=duration_s, out=out,
                            progress=_progress(progress))


def validate(
    session: Any,
    rod: Rod,
    scene: PathLike,
    params: Any = None,
    *,
    out: Optional[PathLike] = None,
    progress: Union[bool, ProgressCallback, None] = True,
    executor: Optional["Executor"] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Validate recorded session(s) against a simulation of ``scene`` with
    ``params``: strain, marker, contact force and slip errors and their
    checks. Options (the command's flags): ``loads``, ``sigma_m``,
    ``strict``, ``jobs``, ``observer``, ``contact_gap_m``,
    ``slide_speed_m_s``, ``speed_window_s``, ``rest_s``, the limits
    ``strain_stick_pct``, ``strain_slide_pct``, ``force_pct``, ``slide_mm``,
    ``phase_pct``, ``min_coverage_pct``, ``force_window_s``, and
    ``parameter_band`` (False: the bands carry the noise alone, as
    ``--no-parameter-band``) and ``bands`` (N Monte Carlo draws, as
    ``--bands N``). ``executor`` (a ``concurrent.futures`` executor: a
    process pool, Dask's ``client.get_executor()``) runs the prediction
    band's replays, one task a replay (``rodlab.batch.band_replay``); the
    result is a run's here, to the bit. Its workers read the rod, scene,
    params and loads files and the session by their paths. Returns a
    dictionary: "pass" and "sessions" (each session's figures and
    checks)."""
    if executor is not None:
        from .batch import BandTasks

        options["band_executor"] = BandTasks(executor, rod, scene, params, options)
    return _rodlab.validate(_session_paths(session), rod, scene, params=params, out=out, progress=_progress(progress), **options)


def observe(
    session: Any,
    rod: Rod,
    *,
    out: Optional[PathLike] = None,
    mode: str = "weighted",
    sigma_m: float = 3e-4,
    energy_scale_j: Optional[float] = None,
    loads: Optional[PathLike] = None,
    progress: Union[bool, ProgressCallback, None] = True,
) -> Dict[str, Any]:
    """Observe a session's strain from its markers (``mode`` "weighted" or
    "hard", marker noise ``sigma_m`` [m], the weighted observer's
    ``energy_scale_j``; ``loads``: a loads file whose ``[tip_hold]`` holds
    the tip); writes strain.parquet (default: into the session) and returns
    the run's figures."""
    if isinstance(session, Session):
        session = session.path
    return _rodlab.observe(session, rod, out=out, mode=mode, sigma_m=sigma_m, energy_scale_j=energy_scale_j, loads=loads,
                           progress=_progress(progress))


def track(
    video: Any,
    camera: Optional[PathLike] = None,
    *,
    markers: Optional[PathLike] = None,
    out: Optional[PathLike] = None,
    fps: Optional[float] = None,
    progress: Union[bool, ProgressCallback, None] = True,
    **options: Any,
) -> Dict[str, Any]:
    """Track the coloured markers of ``video`` with ``camera`` (camera.toml)
    into ``out`` (markers.parquet). Options (the command's flags):
    ``frames``, ``overlay``, ``overlay_every``, ``marker_height_m``; or
    ``cameras`` (cameras.toml of a camera set) instead of ``camera``, one
    video per camera in ``video``, and ``epipolar_gate_px``. Needs a rodlab
    built with OpenCV (``rodlab.HAS_DEVICES``)."""
    _devices("track")
    return _rodlab.track(video, camera, markers=markers, out=out, fps=fps, progress=_progress(progress), **options)


def _devices(what: str) -> None:
    if not HAS_DEVICES:
        raise InputError(f"{what}: this rodlab was built without OpenCV and the devices (the 'devices' feature)")


def calibrate(
    images: Optional[PathLike] = None,
    *,
    board: str,
    square_m: float,
    out: PathLike,
    plane_image: Optional[PathLike] = None,
    max_rms_px: float = 1.0,
    camera_images: Optional[Dict[str, PathLike]] = None,
    plane_view: Optional[str] = None,
    corners_out: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """Calibrate a camera from checkerboard images (``board`` inner corners,
    e.g. "9x6", squares of ``square_m`` [m]) and its plane of motion from
    ``plane_image``; writes ``out`` (camera.toml). Returns "rms_px", "used",
    "rejected". A camera set instead: ``camera_images`` ({name: directory},
    images of one name taken at once), the world the board in
    ``plane_view``, ``corners_out`` a CSV of the corners found; ``out`` is
    cameras.toml and the answer has each camera's "rms_px"."""
    _devices("calibrate")
    return _rodlab.calibrate(images, board=board, square_m=square_m, out=out, plane_image=plane_image, max_rms_px=max_rms_px,
                             camera_images=camera_images, plane_view=plane_view, corners_out=corners_out)


def record(
    rig: PathLike,
    out: PathLike,
    duration_s: float,
    *,
    append: bool = False,
    progress: Union[bool, ProgressCallback, None] = True,
) -> Dict[str, Any]:
    """Record a session from the devices of ``rig`` (a rig file) into ``out``
    for ``duration_s`` seconds (all devices on one clock). Ctrl-C stops it
    cleanly (the session is finished) and then raises KeyboardInterrupt.
    Returns "session", "devices" (rows, gaps, errors of each), "wall_time_s"."""
    _devices("record")
    return _rodlab.record(rig, out, duration_s, append=append, progress=_progress(progress))
