"""The command line, run as a user would (a real process against a real Xvfb)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from mantis_fast.x11.xvfb import Xvfb
from tests.xpaint import paint_root, test_pattern


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


def test_demo_hits_every_target_and_writes_its_run(tmp_path: Path) -> None:
    out = run_cli("demo", "--targets", "4", "--out", str(tmp_path), env=dict(os.environ))
    assert "hits 4/4, misses 0" in out and "DEMO PASSED" in out
    (run_dir,) = tmp_path.glob("demo_*")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["hits"] == 4 and summary["misses"] == 0
    assert set(summary["median_ms"]) == {
        "capture",
        "resize",
        "find",
        "annotate",
        "encode",
        "dispatch",
        "settle",
    }
    frames = sorted(run_dir.glob("turn_*_annotated.png"))
    assert len(frames) == 4
    first = np.asarray(Image.open(frames[0]))
    assert first.shape == (720, 1280, 3)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events].count("hit") == 4
