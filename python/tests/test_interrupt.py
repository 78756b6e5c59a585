"""Ctrl-C during long work: KeyboardInterrupt within a second, and the
next call works. Run in a child interpreter that receives a real SIGINT."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import os, signal, threading, time
    import rodlab

    rod = rodlab.Rod.from_file("configs/rod/pls-cable-arm.toml")
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    # Variants compared by leave-one-out with the laws: tens of seconds.
    threading.Timer(1.0, interrupt).start()
    started = time.perf_counter()
    try:
        rodlab.identify(rod, experiments="datasets/pls-cable-arm", out=os.environ["OUT"] + "/a",
                        compare_variants=True, progress=False)
        print("finished", time.perf_counter() - started)
    except KeyboardInterrupt:
        print("interrupted_after_s", time.perf_counter() - sent[0])
    # The next call works.
    fit = rodlab.identify(rod, experiments="datasets/pls-cable-arm", out=os.environ["OUT"] + "/b", loo=False, progress=False)
    print("second", fit.values["e_pa"])
    """
)


@pytest.mark.realtime  # timed (within a second): alone, never beside another test (conftest.py)
def test_ctrl_c_stops_identify_within_a_second_and_the_next_call_works(tmp_path):
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "OUT": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert "finished" not in lines, f"the fit ended before the interrupt: {p.stdout}"
    assert float(lines["interrupted_after_s"]) < 1.0, p.stdout
    assert float(lines["second"]) > 0


SLOW_CALLBACK = textwrap.dedent(
    """
    import os, signal, threading, time
    import rodlab

    rod = rodlab.Rod.from_file("configs/rod/pls-cable-arm.toml")

    def slow(task, done, total, message):
        # A second of pure Python in every report.
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            pass

    threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        rodlab.identify(rod, experiments="datasets/pls-cable-arm", out=os.environ["OUT"], compare_variants=True, progress=slow)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
    # The script ends here, the worker stopped: the interpreter shuts down.
    """
)


def test_ctrl_c_during_a_slow_progress_callback_never_crashes_the_interpreter_at_exit(tmp_path):
    """Before: Fatal Python error: PyGILState_Release, exit 134, 3 runs in 3."""
    for run in range(3):
        p = subprocess.run([sys.executable, "-c", SLOW_CALLBACK], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**__import__("os").environ, "OUT": str(tmp_path / str(run))})
        assert p.returncode == 0 and "Fatal" not in p.stderr, (p.returncode, p.stderr)
        assert p.stdout.strip() == "interrupted", p.stdout


BATCH = textwrap.dedent(
    """
    import os, signal, threading, time
    import numpy as np
    import rodlab

    rod = rodlab.Rod.from_file("configs/rod/pls-paper-cantilever.toml")
    # A batch whose shapes would not fit in memory: refused before solving.
    started = time.perf_counter()
    try:
        rod.solve_many(tip_force=np.zeros((3_000_000, 3)))
        print("solved")
    except ValueError as e:
        print("refused_after_s", time.perf_counter() - started, "GB" in str(e))
    # A long batch (seconds): Ctrl-C raises within half a second.
    sent = []
    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(1.0, interrupt).start()
    forces = np.zeros((400_000, 3)); forces[:, 2] = np.linspace(-0.05, 0.0, 400_000)
    try:
        rod.solve_many(tip_force=forces)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted_after_s", time.perf_counter() - sent[0])
    """
)


@pytest.mark.realtime  # timed (within half a second): alone (conftest.py)
def test_solve_many_refuses_a_batch_over_its_memory_bound_and_obeys_ctrl_c(tmp_path):
    """Before: 10^7 loads grew to 4 GB and ignored two SIGINTs for 60 s; 3 million are refused here."""
    p = subprocess.run([sys.executable, "-c", BATCH], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    refused_s, says_gb = lines["refused_after_s"].split()
    assert float(refused_s) < 5.0 and says_gb == "True", p.stdout
    assert "finished" not in lines, f"the batch ended before the interrupt: {p.stdout}"
    assert float(lines["interrupted_after_s"]) < 0.5, p.stdout
