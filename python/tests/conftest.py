"""Shared fixtures: the repository, the `rodlab` binary the Python results
are compared with (the same library underneath: equal to 1e-12), and small
sessions made by the binary itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    # scripts/python-tests.sh runs these alone first, then the rest two at
    # a time (pytest-xdist): a recording or a timed Ctrl-C beside another
    # test's work would measure the machine's load, not rodlab.
    config.addinivalue_line("markers", "realtime: keeps time (records from emulators, times a Ctrl-C); never run beside another test")


def repo(path: str) -> Path:
    return ROOT / path


@pytest.fixture(scope="session")
def rodlab_bin() -> Path:
    """target/debug/rodlab (`make test` built it; built here if not)."""
    exe = Path(os.environ.get("RODLAB_BIN", ROOT / "target" / "debug" / "rodlab"))
    if not exe.exists():
        subprocess.run(["cargo", "build", "--locked", "--quiet", "--bin", "rodlab"], cwd=ROOT, check=True)
    return exe


@pytest.fixture(scope="session")
def run(rodlab_bin: Path):
    """Runs the command line; returns its completed process (checked)."""

    def run(*args: object, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([str(rodlab_bin), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"rodlab {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def start(rodlab_bin: Path):
    """Starts the command line beside the Python call it is compared with
    (each takes a core); returns a function that waits for it (checked)."""

    def start(*args: object):
        p = subprocess.Popen([str(rodlab_bin), *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def wait() -> None:
            _, err = p.communicate()
            if p.returncode != 0:
                raise AssertionError(f"rodlab {' '.join(map(str, args))} exited {p.returncode}: {err}")

        return wait

    return start


@pytest.fixture(scope="session")
def stick_session(run, tmp_path_factory) -> Path:
    """The contact paper's stick experiment as a session (synthesised, 4 s)."""
    d = tmp_path_factory.mktemp("sessions") / "stick"
    run("synth", "session", "--scene", repo("configs/scene/contact-paper-stick.toml"), "--rod",
        repo("configs/rod/contact-paper-steel-core.toml"), "--out", d, "--seed", "3")
    return d
