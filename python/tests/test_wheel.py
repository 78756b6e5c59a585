"""A wheel a colleague installs without cargo: `scripts/wheel.sh` (what
`make wheel` runs; here without bundling OpenCV's libraries, which this
machine has: `make wheel` bundles them, 111 MB) builds the abi3 wheel, a
fresh venv installs it, and a script run with no cargo on its PATH and no
project directory records 5 s from the emulators. And `make install`'s
`rodlab` runs a device command from anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import rodlab
from conftest import ROOT
from test_record import RIG

pytestmark = pytest.mark.skipif(not rodlab.HAS_DEVICES or shutil.which("socat") is None, reason="needs the devices feature and socat")

# The rig of test_record.py (its template: {robot}, {ft300}).
RECORD = textwrap.dedent(
    """
    import sys, rodlab
    port_a, port_b, out, template = sys.argv[1:5]
    rig = out + ".rig.toml"
    with rodlab.RobotEmulator(controller="e-series") as robot, rodlab.Ft300Emulator(port_a, rate_hz=100.0):
        open(rig, "w").write(open(template).read().format(robot=robot.address, ft300=port_b))
        result = rodlab.record(rig, out, 5.0, progress=False)
    rows = {d["name"]: (d["rows"], d["missing_samples"]) for d in result["devices"]}
    print(rodlab.__file__, rows)
    """
)


def clean_env(path: str) -> dict:
    """No cargo, no rustup, no project venv: PATH is `path` and the system's."""
    env = {"PATH": f"{path}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    assert shutil.which("cargo", path=env["PATH"]) is None, env["PATH"]
    return env


@pytest.mark.realtime  # it records (conftest.py): alone, never beside another test
def test_a_wheel_installed_without_cargo_records_from_the_emulators(tmp_path):
    built = subprocess.run(["bash", str(ROOT / "scripts" / "wheel.sh"), "--auditwheel", "skip"], capture_output=True, text=True,
                           env={**os.environ, "WHEEL_OUT": str(tmp_path / "wheels")})
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "wheels").glob("rodlab-*-cp39-abi3-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    a, b = tmp_path / "ft-a", tmp_path / "ft-b"
    socat = subprocess.Popen(["socat", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if a.exists() and b.exists():
                break
            time.sleep(0.05)
        script, template = tmp_path / "record.py", tmp_path / "rig.template"
        script.write_text(RECORD)
        template.write_text(RIG)
        day = subprocess.run([str(venv / "bin" / "python"), str(script), str(a), str(b), str(tmp_path / "day"), str(template)], cwd=tmp_path,
                             env=clean_env(str(venv / "bin")), capture_output=True, text=True, timeout=60)
    finally:
        socat.kill()
        socat.wait()
    assert day.returncode == 0, day.stderr
    assert str(venv) in day.stdout, day.stdout   # the wheel's rodlab, not the project's
    rows = eval(day.stdout.split(" ", 1)[1])
    assert rows["robot"][0] > 2000 and rows["ft300"][0] > 400 and rows["robot"][1] == rows["ft300"][1] == 0, rows


def test_make_install_puts_a_rodlab_that_does_every_command_on_the_path(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "install.sh"), str(tmp_path / "prefix")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "install: " in done.stderr and (tmp_path / "prefix" / "bin" / "rodlab").is_symlink()
    env = clean_env(str(tmp_path / "prefix" / "bin"))
    # A device command (the device build, OpenCV), from another directory.
    board = subprocess.run(["rodlab", "synth", "board", "--out", str(tmp_path / "board")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert board.returncode == 0, board.stderr
    assert any((tmp_path / "board").rglob("*.png"))
    version = subprocess.run(["rodlab", "--version"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert version.returncode == 0 and "rodlab" in version.stdout
