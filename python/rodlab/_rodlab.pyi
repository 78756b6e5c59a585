"""Type stubs of rodlab's native module (python/src, built by maturin).

Arrays are numpy float64 arrays in SI units; their shapes are in the
docstrings: n joints, k loads, T steps, m markers.
"""

import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "HAS_DEVICES",
    "Rod",
    "Shape",
    "Shapes",
    "Identified",
    "Simulation",
    "Session",
    "ArrowTable",
    "archive_index",
    "archive_report",
    "identify",
    "identify_dynamic",
    "simulate",
    "validate",
    "band_replay",
    "observe",
    "synth_session",
    "import_c3d",
    "import_table",
    "solve_time_in_rust_s",
    "track",
    "calibrate",
    "record",
    "RobotEmulator",
    "Ft300Emulator",
    "NetFtEmulator",
    "AsciiSensorEmulator",
]

__version__: str
HAS_DEVICES: bool

_Path = Union[str, "os.PathLike[str]"]
_Vec3 = Union[Sequence[float], npt.NDArray[np.float64]]
_Array = npt.NDArray[np.float64]
_Progress = Optional[Callable[[str, Optional[int], Optional[int], Optional[str]], Any]]
_Params = Union[_Path, "Identified", None]
# A term's Gaussian prior: None/False (not fitted), True (the rod file's
# [identify] prior) or (mean, sd).
_Prior = Union[bool, Tuple[float, float], Sequence[float], None]

@final
class Rod:
    @staticmethod
    def from_file(path: _Path, sections: Optional[int] = None, modes: Optional[str] = None) -> Rod: ...
    @staticmethod
    def from_toml(text: str, sections: Optional[int] = None, modes: Optional[str] = None) -> Rod: ...
    @staticmethod
    def from_dict(table: Mapping[str, Any], sections: Optional[int] = None, modes: Optional[str] = None) -> Rod: ...
    def with_material(self, *, e_pa: Optional[float] = None, g_pa: Optional[float] = None, rho_kg_m3: Optional[float] = None) -> Rod: ...
    @property
    def path(self) -> "os.PathLike[str]": ...
    @property
    def length_m(self) -> float: ...
    @property
    def sections(self) -> int: ...
    @property
    def section_lengths_m(self) -> _Array: ...
    @property
    def cables(self) -> int: ...
    @property
    def markers_arc_m(self) -> _Array: ...
    @property
    def markers_offset_body_m(self) -> _Array: ...
    @property
    def material(self) -> Dict[str, float]: ...
    @property
    def gravity_m_s2(self) -> _Array: ...
    def solve(
        self,
        *,
        tip_force: Optional[_Vec3] = None,
        tip_moment: Optional[_Vec3] = None,
        tensions: Optional[Sequence[float]] = None,
        gravity: bool = True,
        params: _Params = None,
        tip_force_offset: Optional[_Vec3] = None,
        tip_position: Optional[_Vec3] = None,
        tip_rotation: Optional[_Vec3] = None,
        direction: str = "load",
        flange_pose: Optional[Sequence[float]] = None,
        follow: Optional[str] = None,
        to: Optional[float] = None,
        branch_out: Optional[_Path] = None,
    ) -> Shape: ...
    def solve_many(
        self,
        *,
        tip_force: Optional[npt.ArrayLike] = None,
        tip_moment: Optional[npt.ArrayLike] = None,
        tensions: Optional[npt.ArrayLike] = None,
        gravity: bool = True,
        params: _Params = None,
        threads: Optional[int] = None,
        direction: str = "load",
    ) -> Shapes: ...

@final
class Shape:
    @property
    def arc_m(self) -> _Array: ...
    @property
    def position_m(self) -> _Array: ...
    @property
    def rotation(self) -> _Array: ...
    @property
    def strain(self) -> _Array: ...
    @property
    def tip_m(self) -> _Array: ...
    @property
    def base_force_n(self) -> _Array: ...
    @property
    def base_moment_nm(self) -> _Array: ...
    @property
    def iterations(self) -> int: ...
    @property
    def residual_norm(self) -> float: ...
    @property
    def mass_kg(self) -> float: ...
    @property
    def warnings(self) -> List[str]: ...
    @property
    def tip_force_n(self) -> Optional[_Array]: ...
    @property
    def tip_moment_nm(self) -> Optional[_Array]: ...
    @property
    def stability_eigenvalue(self) -> Optional[float]: ...
    @property
    def branch(self) -> Optional[Dict[str, Any]]: ...

@final
class Shapes:
    def __len__(self) -> int: ...
    @property
    def arc_m(self) -> _Array: ...
    @property
    def position_m(self) -> _Array: ...
    @property
    def rotation(self) -> _Array: ...
    @property
    def strain(self) -> _Array: ...
    @property
    def tip_m(self) -> _Array: ...
    @property
    def base_force_n(self) -> _Array: ...
    @property
    def base_moment_nm(self) -> _Array: ...
    @property
    def iterations(self) -> _Array: ...

@final
class Identified:
    identified_toml: "os.PathLike[str]"
    report: "os.PathLike[str]"
    files: List["os.PathLike[str]"]
    values: Dict[str, float]
    intervals: Dict[str, Tuple[float, float]]
    file: Dict[str, Any]
    variants: List[Dict[str, Any]]
    recommended: Optional[int]
    warnings: List[str]
    experiments: int

@final
class Simulation:
    out: "os.PathLike[str]"
    summary: Dict[str, Any]
    def __len__(self) -> int: ...
    @property
    def time_s(self) -> _Array: ...
    @property
    def marker_position_m(self) -> _Array: ...
    @property
    def tip_m(self) -> _Array: ...
    @property
    def node_strain(self) -> _Array: ...
    @property
    def node_position_m(self) -> _Array: ...
    @property
    def normal_force_n(self) -> _Array: ...
    @property
    def tangential_force_n(self) -> _Array: ...
    @property
    def tip_slip_m(self) -> _Array: ...
    @property
    def base_wrench_flange(self) -> _Array: ...

@final
class ArrowTable:
    """A table for polars, pyarrow and DuckDB (the Arrow C stream)."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

@final
class Session:
    def __new__(cls, path: _Path) -> Session: ...
    @property
    def path(self) -> "os.PathLike[str]": ...
    @property
    def name(self) -> str: ...
    @property
    def meta(self) -> Optional[Dict[str, Any]]: ...
    def streams(self) -> List[str]: ...
    def stream_columns(self, name: str, *, strict: bool = False, arrow: bool = False) -> Any: ...
    def markers_columns(self, *, arrow: bool = False) -> Any: ...
    def strain_columns(self, *, arrow: bool = False) -> Any: ...
    def gaps_columns(self, name: str, *, arrow: bool = False) -> Any: ...
    def info(self) -> Dict[str, Any]: ...
    def check(self, *, max_outage_s: float = 1.0, videos: bool = True) -> Dict[str, Any]: ...
    def export(
        self,
        to: _Path,
        *,
        aligned: bool = False,
        on: Optional[str] = None,
        streams: Optional[List[str]] = None,
        tolerance_s: Optional[float] = None,
        match: str = "previous",
        format: str = "csv",
    ) -> Dict[str, Any]: ...
    def aligned_columns(
        self,
        *,
        on: Optional[str] = None,
        streams: Optional[List[str]] = None,
        tolerance_s: Optional[float] = None,
        match: str = "previous",
        strict: bool = False,
    ) -> Dict[str, Any]: ...
    def video(self, camera: Optional[str] = None) -> Optional["os.PathLike[str]"]: ...

def archive_index(dir: _Path, *, out: Optional[_Path] = None) -> Dict[str, Any]: ...
def archive_report(dir: _Path, *, out: _Path) -> Dict[str, Any]: ...
def synth_session(
    *,
    scene: _Path,
    rod: Union[Rod, _Path],
    out: _Path,
    rig: Optional[_Path] = None,
    params: Optional[_Path] = None,
    e_pa: Optional[float] = None,
    g_pa: Optional[float] = None,
    rho_kg_m3: Optional[float] = None,
    trajectory: Optional[_Path] = None,
    truth: Optional[_Path] = None,
    duration_s: Optional[float] = None,
    marker_noise_m: float = 3e-4,
    robot_hz: float = 125.0,
    sensor_hz: float = 100.0,
    flange_sensor: bool = True,
    force_noise_n: float = 0.1,
    moment_noise_nm: float = 0.005,
    load_cell_noise_n: float = 0.005,
    ft_bias: Optional[Sequence[float]] = None,
    mounted_at_s: float = 0.0,
    seed: int = 1,
    tip_robot: Optional[str] = None,
    progress: _Progress = None,
) -> Dict[str, Any]: ...
def import_c3d(
    files: Union[_Path, Sequence[_Path]], *, rod: _Path, map: _Path, out: _Path, progress: _Progress = None
) -> List[Dict[str, Any]]: ...
def import_table(
    files: Union[_Path, Sequence[_Path]], *, rod: _Path, map: _Path, out: _Path, progress: _Progress = None
) -> List[Dict[str, Any]]: ...
def identify(
    rod: Rod,
    *,
    experiments: Optional[_Path] = None,
    sessions: Union[_Path, Sequence[_Path], None] = None,
    loads: Optional[_Path] = None,
    out: Optional[_Path] = None,
    progress: _Progress = None,
    translation: bool = False,
    pitch: bool = False,
    loo: bool = True,
    compare_variants: bool = False,
    compare_laws: bool = False,
    reference: Optional[Sequence[float]] = None,
    hold_material: Optional[Sequence[float]] = None,
    tie_g_poisson: Optional[float] = None,
    strict: bool = False,
    fit_cable_offset: _Prior = None,
    per_cable: bool = False,
    pool_cables: bool = False,
    fit_radius_scale: _Prior = None,
    fit_cable_angle: _Prior = None,
    fit_clamp_angle: _Prior = None,
    fit_friction: _Prior = None,
) -> Identified: ...
def identify_dynamic(
    rod: Rod,
    *,
    sessions: Union[_Path, Sequence[_Path]],
    scene: _Path,
    params: _Params = None,
    loads: Optional[_Path] = None,
    out: Optional[_Path] = None,
    progress: _Progress = None,
    mu_start: Optional[float] = None,
    damping_start: Optional[float] = None,
    hold_damping: bool = False,
    hold_marker_delay: bool = False,
    fit_marker_delay: bool = False,
    hold_branches: bool = False,
    window_s: Optional[Tuple[float, float]] = None,
    fit_stiffness: bool = False,
    fit_density: bool = False,
    fit_hook_friction: bool = False,
    match_ring_down: bool = False,
    ring_down_cycles: int = 3,
    sigma_m: float = 2e-5,
    compare_variants: bool = False,
) -> Dict[str, Any]: ...
def simulate(
    rod: Rod,
    scene: _Path,
    *,
    params: _Params = None,
    session: Optional[_Path] = None,
    trajectory: Optional[_Path] = None,
    loads: Optional[_Path] = None,
    duration_s: Optional[float] = None,
    out: Optional[_Path] = None,
    progress: _Progress = None,
) -> Simulation: ...
def validate(
    sessions: Union[_Path, Sequence[_Path]],
    rod: Rod,
    scene: _Path,
    *,
    params: _Params = None,
    loads: Optional[_Path] = None,
    out: Optional[_Path] = None,
    progress: _Progress = None,
    sigma_m: Optional[float] = None,
    strict: bool = False,
    jobs: int = 2,
    observer: str = "weighted",
    contact_gap_m: Optional[float] = None,
    slide_speed_m_s: float = 2e-3,
    speed_window_s: float = 0.3,
    rest_s: float = 0.5,
    strain_stick_pct: float = 10.0,
    strain_slide_pct: float = 15.0,
    force_pct: float = 5.0,
    slide_mm: float = 2.0,
    phase_pct: float = 90.0,
    force_window_s: float = 0.5,
    min_coverage_pct: float = 50.0,
    parameter_band: bool = True,
    bands: int = 0,
    band_executor: Optional[Callable[[str, int], Iterable[bytes]]] = None,
) -> Dict[str, Any]: ...
def band_replay(
    session: _Path,
    rod: Rod,
    scene: _Path,
    *,
    index: int,
    params: _Params = None,
    loads: Optional[_Path] = None,
    strict: bool = False,
    parameter_band: bool = True,
    bands: int = 0,
) -> bytes: ...
def observe(
    session: _Path,
    rod: Rod,
    *,
    out: Optional[_Path] = None,
    mode: str = "weighted",
    sigma_m: float = 3e-4,
    energy_scale_j: Optional[float] = None,
    loads: Optional[_Path] = None,
    progress: _Progress = None,
) -> Dict[str, Any]: ...
def track(
    video: Union[_Path, Sequence[_Path]],
    camera: Optional[_Path] = None,
    *,
    cameras: Optional[_Path] = None,
    markers: Optional[_Path] = None,
    out: Optional[_Path] = None,
    fps: Optional[float] = None,
    frames: Optional[_Path] = None,
    overlay: Optional[_Path] = None,
    overlay_every: int = 1,
    marker_height_m: Optional[float] = None,
    epipolar_gate_px: float = 3.0,
    progress: _Progress = None,
) -> Dict[str, Any]: ...
def solve_time_in_rust_s(rod: Rod, n: int, *, tip_force: Optional[_Vec3] = None, tensions: Optional[Sequence[float]] = None) -> float: ...
def calibrate(
    images: Optional[_Path] = None,
    *,
    board: str,
    square_m: float,
    out: _Path,
    plane_image: Optional[_Path] = None,
    max_rms_px: float = 1.0,
    camera_images: Optional[Mapping[str, _Path]] = None,
    plane_view: Optional[str] = None,
    corners_out: Optional[_Path] = None,
) -> Dict[str, Any]: ...
def record(rig: _Path, out: _Path, duration_s: float, *, append: bool = False, progress: _Progress = None) -> Dict[str, Any]: ...

@final
class RobotEmulator:
    def __new__(
        cls,
        bind: str = "127.0.0.1:0",
        *,
        controller: str = "e-series",
        amplitude_m: float = 0.02,
        quirk: str = "",
        trajectory: Optional[_Path] = None,
        start_at_unix_s: Optional[float] = None,
    ) -> RobotEmulator: ...
    @property
    def address(self) -> str: ...
    @property
    def sent(self) -> int: ...
    def stop(self) -> None: ...
    def __enter__(self) -> RobotEmulator: ...
    def __exit__(self, *args: Any) -> None: ...

@final
class Ft300Emulator:
    def __new__(
        cls,
        port: _Path,
        *,
        rate_hz: float = 100.0,
        bias: Optional[Sequence[float]] = None,
        noise_n: float = 0.0,
        noise_nm: float = 0.0,
        seed: int = 1,
        wrench: Optional[_Path] = None,
        start_at_unix_s: Optional[float] = None,
        inject_garbage_every: Optional[int] = None,
        streaming_at_start: bool = False,
    ) -> Ft300Emulator: ...
    def stop(self) -> int: ...
    def __enter__(self) -> Ft300Emulator: ...
    def __exit__(self, *args: Any) -> None: ...

@final
class NetFtEmulator:
    def __new__(
        cls,
        bind: str = "127.0.0.1:0",
        *,
        rate_hz: float = 1000.0,
        wrench: Optional[Sequence[float]] = None,
        counts_per_force: int = 1000000,
        counts_per_torque: int = 1000000,
        quirk: str = "",
    ) -> NetFtEmulator: ...
    @property
    def address(self) -> str: ...
    @property
    def sent(self) -> int: ...
    def stop(self) -> None: ...
    def __enter__(self) -> NetFtEmulator: ...
    def __exit__(self, *args: Any) -> None: ...

@final
class AsciiSensorEmulator:
    def __new__(
        cls, port: _Path, *, rate_hz: float = 1000.0, separator: str = ",", values: Optional[_Path] = None, start_at_unix_s: Optional[float] = None
    ) -> AsciiSensorEmulator: ...
    def stop(self) -> int: ...
    def __enter__(self) -> AsciiSensorEmulator: ...
    def __exit__(self, *args: Any) -> None: ...
