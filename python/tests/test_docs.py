"""docs/python.md's code blocks run, in order, in one namespace (as a reader
pastes them), from a directory with the repository's configs/ and
datasets/; and help() reads like the command's --help."""

from __future__ import annotations

import io
import os
import pydoc
import re
from contextlib import redirect_stdout

import pytest

import rodlab
from conftest import ROOT


def python_blocks(markdown: str) -> list:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_the_python_guide_runs(rodlab_bin, tmp_path, monkeypatch):
    blocks = python_blocks((ROOT / "docs" / "python.md").read_text())
    assert len(blocks) >= 6
    for d in ("configs", "datasets"):
        (tmp_path / d).symlink_to(ROOT / d)
    (tmp_path / "reports" / "python").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{rodlab_bin.parent}{os.pathsep}{os.environ['PATH']}")
    namespace: dict = {}
    printed = io.StringIO()
    with redirect_stdout(printed):
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
            except Exception as e:  # name the block that failed
                raise AssertionError(f"docs/python.md block {i + 1} failed: {e!r}\n{block}") from e
    text = printed.getvalue()
    assert "InputError: configs/rod/no-such-rod.toml" in text, text
    assert "pass: True" in text, text
    assert (tmp_path / "reports" / "python" / "stick-session.png").stat().st_size > 10_000
    assert (tmp_path / "reports" / "python" / "fit" / "identified.toml").exists()
    # The tendon arm's day: the friction suggested, then fitted near the truth.
    assert "without friction: fit_friction=(0.2, 0.2)" in text, text
    assert (tmp_path / "reports" / "python" / "arm-day.png").stat().st_size > 5_000
    mu = namespace["mu"]
    assert abs(mu / 0.15 - 1) < 0.1 and abs(namespace["arm_fit"].values["e_pa"] / namespace["truth"].material["e_pa"] - 1) < 0.01, text
    # No shell from the guide.
    assert "subprocess" not in (ROOT / "docs" / "python.md").read_text()


def test_help_says_the_arguments_with_their_units():
    text = pydoc.render_doc(rodlab.Rod.solve, renderer=pydoc.plaintext)
    for word in ("tip_force", "tensions", "[N]", "[N m]", "gravity", "params", "Examples"):
        assert word in text, text
    for f in (rodlab.identify, rodlab.simulate, rodlab.validate, rodlab.Rod.solve_many, rodlab.Session.stream):
        assert f.__doc__ and len(f.__doc__) > 80, f
    stubs = ROOT / "python" / "rodlab" / "_rodlab.pyi"
    for name in ("class Rod", "def solve(", "def solve_many(", "class Shape", "def identify(", "def simulate(", "def validate("):
        assert name in stubs.read_text()


def test_a_tqdm_bar_shows_long_work(tmp_path, capsys):
    pytest.importorskip("tqdm")
    rodlab.simulate(rodlab.Rod.from_file(ROOT / "configs/rod/contact-paper-steel-core.toml"), ROOT / "configs/scene/contact-paper-stick.toml",
                    out=tmp_path / "sim", progress=True)
    err = capsys.readouterr().err
    assert "simulate" in err and "%" in err, err
