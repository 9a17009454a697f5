"""The command line, run as a user would (a real process against a real Xvfb)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from mantis_fast.xvfb import Xvfb

from .xpaint import paint_root, test_pattern


def run_cli(*args: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_info_and_grab(tmp_path: Path) -> None:
    with Xvfb(size=(320, 200)) as server:
        image = test_pattern(320, 200, seed=9)
        paint_root(server.display, image)
        assert "320x200, backend xshm" in run_cli("info", env=server.env())
        out = tmp_path / "shot.png"
        assert "50x40" in run_cli("grab", str(out), "--region", "10,20,50,40", env=server.env())
        saved = np.asarray(Image.open(out))
        np.testing.assert_array_equal(saved, image[20:60, 10:60, 2::-1])


def test_demo_runs_and_writes_the_capture(tmp_path: Path, xvfb: Xvfb) -> None:
    out = run_cli("demo", "--out", str(tmp_path), "--rounds", "20", env=xvfb.env())
    assert "mantis_fast grab (zero-copy)" in out and "mss MSS().grab" in out
    shot = np.asarray(Image.open(tmp_path / "demo_capture.png"))
    assert shot.shape == (1080, 1920, 3) and shot.std() > 10
