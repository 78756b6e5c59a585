"""Report pages in a real browser (scripts/screenshots.py: Playwright and
Debian's Chromium, as docs/screenshots were taken): an identification's
page draws every figure, and its screenshot is a picture, not a blank."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import rodlab
from conftest import ROOT, repo

pytest.importorskip("playwright")
pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (setup.sh installs it)")


def test_an_identification_page_screenshot_draws_every_figure(tmp_path):
    fit = rodlab.identify(rodlab.Rod.from_file(repo("configs/rod/pls-cable-arm.toml")), experiments=repo("datasets/pls-cable-arm"),
                          out=tmp_path / "fit", loo=False, progress=False)
    shot = tmp_path / "identify.png"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshots.py"), str(fit.report), str(shot)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[0])
    assert seen["images"] == seen["drawn"] and seen["drawn"] + seen["svgs"] >= 4, seen
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000, len(data)
    # 1100 x 1500 CSS pixels (the PNG's IHDR).
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1100, 1500), (width, height)
