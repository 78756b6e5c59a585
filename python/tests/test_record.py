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

pytestmark = pytest.mark.skipif(not rodlab.HAS_DEVICES or shutil.which("socat") is None, reason="needs the devices feature and socat")

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
