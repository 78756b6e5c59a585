"""The stubs cannot drift: `mypy --strict` on the package and on
docs/python.md's code (as one script, the way a reader pastes it), and
mypy's stubtest of the native module against python/rodlab/_rodlab.pyi
(every function, keyword, default and class as the module has them)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

mypy = pytest.importorskip("mypy", reason="setup.sh installs mypy into .venv")


def run_mypy(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True)


def test_the_guide_and_the_package_pass_mypy_strict(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), flags=re.S)
    guide = tmp_path / "guide.py"
    guide.write_text("\n".join(blocks))
    p = run_mypy("mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(guide), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    p = run_mypy("mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "-p", "rodlab", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_stubs_match_the_native_module(tmp_path):
    p = run_mypy("mypy.stubtest", "rodlab._rodlab", cwd=tmp_path)
    assert p.returncode == 0 and "Success" in p.stdout, p.stdout + p.stderr
