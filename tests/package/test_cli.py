"""The command line, run as a user would (a real process against a real Xvfb)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import paint_root, test_pattern


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


@pytest.mark.x11
def test_info_and_grab(tmp_path: Path) -> None:
    with Xvfb(size=(320, 200)) as server:
        image = test_pattern(320, 200, seed=9)
        paint_root(server.display, image)
        assert "320x200, backend xvfb-framebuffer" in run_cli("info", env=server.env())
        out = tmp_path / "shot.png"
        assert "50x40" in run_cli("grab", str(out), "--region", "10,20,50,40", env=server.env())
        saved = np.asarray(Image.open(out))
        np.testing.assert_array_equal(saved, image[20:60, 10:60, 2::-1])


@pytest.mark.x11
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


FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "displays"


@pytest.mark.x11
def test_displays_human_and_json() -> None:
    with Xvfb(size=(3000, 1000)) as server:
        for args in (
            ("left", "1800/400x1000/200+0+0", "screen"),
            ("right", "1200/300x800/200+1800+0", "none"),
        ):
            subprocess.run(["xrandr", "--setmonitor", *args], env=server.env(), check=True)
        text = run_cli("displays", "--display", server.display, env=dict(os.environ))
        assert text.splitlines() == [
            "2 display(s) from x11",
            "*0: left 1800x1000+0+0",
            " 1: right 1200x800+1800+0",
        ]
        # No Wayland compositor in this environment: auto detection lists $DISPLAY's monitors.
        env = {k: v for k, v in server.env().items() if k not in ("SWAYSOCK", "WAYLAND_DISPLAY")}
        env.pop("HYPRLAND_INSTANCE_SIGNATURE", None)
        descriptor = json.loads(run_cli("displays", "--json", env=env))
    assert descriptor == {
        "version": 1,
        "source": "x11",
        "primary": 0,
        "displays": [
            {"id": 0, "name": "left", "bounds": [0, 0, 1800, 1000], "scale_factor": 1.0,
             "primary": True},
            {"id": 1, "name": "right", "bounds": [1800, 0, 1200, 800], "scale_factor": 1.0,
             "primary": False},
        ],
    }  # fmt: skip


def test_displays_from_a_compositor_tool(tmp_path: Path) -> None:
    # A hyprctl on PATH printing a real `hyprctl monitors -j` reply: the CLI runs it for real.
    tool = tmp_path / "hyprctl"
    tool.write_text(f"#!/bin/sh\ncat '{FIXTURES / 'hyprland_laptop_rotated.json'}'\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    descriptor = json.loads(run_cli("displays", "--source", "hyprland", "--json", env=env))
    expected = json.loads((FIXTURES / "hyprland_laptop_rotated.expected.json").read_text())
    assert descriptor == expected
    text = run_cli("displays", "--source", "hyprland", env=env)
    assert text.splitlines() == [
        "2 display(s) from hyprland",
        "*0: eDP-1 1728x1152+0+0 scale 1.66667 (2880x1920 pixels)",
        " 1: DP-2 1440x2560+1728-400",
    ]


def test_displays_names_a_missing_tool(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "displays", "--source", "sway"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "mantis-fast displays: swaymsg not found on PATH"
