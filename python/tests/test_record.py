"""A scripted lab day from Python: the RTDE and FT 300 emulators (the FT 300
behind a socat pty pair), recorded by `rodlab.record`, read back as
DataFrames; Ctrl-C stops a recording cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import rodlab
from conftest import ROOT

# Real time (conftest.py): run alone, never beside another test.
pytestmark = [
    pytest.mark.skipif(not rodlab.HAS_DEVICES or shutil.which("socat") is None, reason="needs the devices feature and socat"),
    pytest.mark.realtime,
]

RIG = """
[frames]
robot_base = {{ position_m = [0.0, 0.0, 0.0], rpy_deg = [0.0, 0.0, 0.0] }}
board = {{ position_m = [0.0, 0.0, 0.0], rpy_deg = [0.0, 0.0, 0.0] }}
gravity_m_s2 = [0.0, 0.0, -9.81]

[[robot]]
name = "robot"
address = "{robot}"
variables = ["actual_TCP_pose", "actual_TCP_speed"]

[[ft300]]
name = "ft300"
port = "{ft300}"
"""


@pytest.fixture
def pty_pair(tmp_path):
    a, b = tmp_path / "ft-a", tmp_path / "ft-b"
    socat = subprocess.Popen(["socat", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        if a.exists() and b.exists():
            break
        time.sleep(0.05)
    yield a, b
    socat.kill()
    socat.wait()


def test_a_scripted_recording_from_the_emulators(tmp_path, pty_pair):
    a, b = pty_pair
    with rodlab.RobotEmulator(controller="e-series") as robot, rodlab.Ft300Emulator(a, rate_hz=100.0, bias=[1.0, 0, -2.0, 0, 0, 0]):
        rig = tmp_path / "rig.toml"
        rig.write_text(RIG.format(robot=robot.address, ft300=b))
        result = rodlab.record(rig, tmp_path / "day", 2.0, progress=False)
        assert robot.sent > 0
    devices = {d["name"]: d for d in result["devices"]}
    assert devices["robot"]["rows"] > 500 and devices["ft300"]["rows"] > 150, devices
    assert devices["robot"]["missing_samples"] == 0 and devices["ft300"]["missing_samples"] == 0
    session = rodlab.Session(result["session"])
    ft = session.stream("ft300")
    assert ft.height == devices["ft300"]["rows"]
    # The emulator's built-in signal, smooth at 100 Hz, on the recorder's clock.
    fx = ft["fx_n"].to_numpy()
    assert np.isfinite(fx).all() and np.abs(np.diff(fx)).max() < 0.1 and fx.std() > 0
    robot_rows = session.stream("robot")
    assert robot_rows.height == devices["robot"]["rows"] and (np.diff(robot_rows["t_host_ns"].to_numpy()) > 0).all()
    # The FT 300 on the robot's clock, as polars's own join_asof has it.
    # (Only "previous": where two FT 300 frames share a host time, polars's
    # "nearest" takes the later one ahead of a row, pandas's merge_asof the
    # earlier; rodlab follows pandas, checked row by row in tests/e2e_record.rs.)
    import polars as pl

    aligned = session.aligned(on="robot", tolerance_s=0.015)
    ft_named = ft.rename({c: f"ft300.{c}" for c in ft.columns if c != "t_host_ns"})
    peer = robot_rows.select("t_host_ns").join_asof(ft_named, on="t_host_ns", strategy="backward", tolerance=15_000_000)
    assert aligned.height == robot_rows.height and aligned["t_host_ns"].equals(robot_rows["t_host_ns"])
    assert aligned.select(peer.columns[1:]).equals(peer.select(peer.columns[1:]))
    assert aligned["robot.actual_TCP_pose_0"].equals(robot_rows["actual_TCP_pose_0"].rename("robot.actual_TCP_pose_0"))
    # The same from the export, with the default tolerance (1.5 intervals).
    exported = session.export(tmp_path / "export", aligned=True, on="robot")
    assert exported["aligned"]["on"] == "robot"
    (joined,) = exported["aligned"]["streams"]
    assert joined["name"] == "ft300" and abs(joined["tolerance_s"] - 0.015) < 0.003, joined
    csv = pl.read_csv(tmp_path / "export" / "aligned.csv")
    assert csv.height == robot_rows.height and csv["ft300.fx_n"].null_count() == joined["rows_without"]


def test_bad_rigs_and_emulator_arguments_raise_input_errors(tmp_path):
    with pytest.raises(rodlab.InputError, match="rig.toml"):
        rodlab.record(tmp_path / "rig.toml", tmp_path / "out", 1.0, progress=False)
    with pytest.raises(rodlab.InputError, match="duration_s"):
        rodlab.record(tmp_path / "rig.toml", tmp_path / "out", -1.0, progress=False)
    with pytest.raises(ValueError, match="controller"):
        rodlab.RobotEmulator(controller="cb2")
    with pytest.raises(rodlab.InputError):
        rodlab.Ft300Emulator(tmp_path / "no-such-port")


SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import rodlab
    robot = rodlab.RobotEmulator()
    rig = sys.argv[1] + "/rig.toml"
    open(rig, "w").write(open(sys.argv[2]).read().replace("ROBOT", robot.address))
    threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    started = time.perf_counter()
    try:
        rodlab.record(rig, sys.argv[1] + "/day", 60.0, progress=False)
    except KeyboardInterrupt:
        print("interrupted_after_s", time.perf_counter() - started)
    s = rodlab.Session(sys.argv[1] + "/day")
    print("rows", s.stream("robot").height, "finished", bool(s.meta.get("end_utc")))
    """
)


def test_ctrl_c_ends_a_recording_cleanly(tmp_path):
    template = tmp_path / "template.toml"
    template.write_text(RIG.split("[[ft300]]")[0].format(robot="ROBOT"))
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(template)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    words = p.stdout.split()
    assert "interrupted_after_s" in words, p.stdout
    assert float(words[words.index("interrupted_after_s") + 1]) < 5.0, p.stdout
    assert int(words[words.index("rows") + 1]) > 300 and words[words.index("finished") + 1] == "True", p.stdout


NETFT_ASCII_RIG = """
[frames]
robot_base = {{ position_m = [0.0, 0.0, 0.0], rpy_deg = [0.0, 0.0, 0.0] }}
board = {{ position_m = [0.0, 0.0, 0.0], rpy_deg = [0.0, 0.0, 0.0] }}
gravity_m_s2 = [0.0, 0.0, -9.81]

[[netft]]
name = "netft"
address = "{netft}"
calibration_port = {calibration}

[[ascii]]
name = "load_cell"
port = "{ascii}"
baud = 921600
separator = ","
columns = ["seq", "t_device_s", "force_n"]
scales = [1, 1e-6, 1e-3]
"""


def test_a_net_ft_and_a_load_cell_recorded_from_python_emulators(tmp_path, pty_pair):
    """The other two emulators of `rodlab emulate` as Python objects: an ATI
    Net F/T (RDT over UDP, its calibration over TCP) reading a known wrench,
    and an ASCII load cell at 1 kHz behind a pty pair, recorded on one clock."""
    a, b = pty_pair
    wrench = [0.5, -0.25, -4.9, 0.01, 0.1, 0.0]
    with rodlab.NetFtEmulator(rate_hz=500.0, wrench=wrench) as netft, rodlab.AsciiSensorEmulator(a, rate_hz=1000.0) as cell:
        rig = tmp_path / "rig.toml"
        # Its calibration answers on TCP at the port below its RDT port.
        calibration = int(netft.address.rsplit(":", 1)[1]) - 1
        rig.write_text(NETFT_ASCII_RIG.format(netft=netft.address, calibration=calibration, ascii=b))
        result = rodlab.record(rig, tmp_path / "day", 2.0, progress=False)
        assert netft.sent > 0
        lines = cell.stop()
    assert lines > 1500
    devices = {d["name"]: d for d in result["devices"]}
    assert devices["netft"]["rows"] > 700 and devices["load_cell"]["rows"] > 1500, devices
    assert devices["netft"]["missing_samples"] == 0 and devices["load_cell"]["missing_samples"] == 0, devices
    session = rodlab.Session(result["session"])
    ft = session.stream("netft")
    assert np.allclose(ft["fz_n"].to_numpy(), -4.9, atol=1e-5) and np.allclose(ft["my_nm"].to_numpy(), 0.1, atol=1e-5), ft.head()
    with pytest.raises(ValueError, match="wrench"):
        rodlab.NetFtEmulator(wrench=[1.0, 2.0])
    with pytest.raises(ValueError, match="separator"):
        rodlab.AsciiSensorEmulator(a, separator="ab")
