"""``mantis-fast run`` and ``mantis-fast displays`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mantis_fast.x11.xvfb import Xvfb
from tests.support.agent_stub import StubModel, reply_json


@pytest.mark.x11
def test_run_shows_progress_and_writes_the_run(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(
        'PORT = 0\nSETTLE_QUIET_MS = 20\nLOG_LAYOUT = "turn_dirs"\n'
        "CAPTURE_CROP = {x1 = 0, y1 = 0, x2 = 500, y2 = 500}\n"
    )
    with Xvfb(size=(640, 480)) as server, StubModel([reply_json("second turn")]) as stub:
        result = subprocess.run(
            [
                sys.executable, "-m", "mantis_fast.cli", "run", "--config", str(config),
                "--api-url", stub.url, "--runs-dir", str(tmp_path / "runs"), "--max-turns", "2",
                "--boot", "--no-physical-execution", "--set", "CAPTURE_SCALE_PERCENT=50",
            ],
            env=server.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("panel http://127.0.0.1:")
    assert lines[1].startswith("turn    1: 0 action(s), 0 skipped, frame 160x120")
    assert "| Start: take a first look" in lines[1] and "model" in lines[1]
    assert lines[2].startswith("turn    2:") and "second turn" in lines[2]
    assert lines[3].startswith("finished: phase done, 2 turn(s)")
    run = tmp_path / "runs" / "run_0001"
    assert (run / "turn_0002" / "screenshot_annotated.png").exists()
    assert len(stub.requests) == 1


@pytest.mark.x11
def test_run_takes_the_seed_config_py(tmp_path: Path) -> None:
    """Seed 004: "config.py   All runtime configuration (HTTP, VLM, capture, execution, UI
    overlays, boot injection, logging layout)", and "If CAPTURE_WIDTH and CAPTURE_HEIGHT are both
    > 0, they fully specify output resolution." Such a file drives ``mantis-fast run``, and its
    turns.jsonl holds "Two records per turn"."""
    config = tmp_path / "config.py"
    with StubModel([reply_json("second turn")]) as stub:
        config.write_text(
            "from pathlib import Path\n"
            "PORT = 0\n"
            f"API_URL = {stub.url!r}\n"
            "CAPTURE_CROP = {'x1': 0, 'y1': 0, 'x2': 500, 'y2': 500}\n"
            "CAPTURE_WIDTH, CAPTURE_HEIGHT = 200, 100\n"
            "PHYSICAL_EXECUTION = False\n"
            "RUNS_DIR = Path(__file__).parent / 'runs'\n"
            "BOOT_ENABLED = True\n"
        )
        with Xvfb(size=(640, 480)) as server:
            result = subprocess.run(
                [sys.executable, "-m", "mantis_fast.cli", "run", "--config", str(config),
                 "--max-turns", "2"],
                env=server.env(), capture_output=True, text=True, timeout=60,
            )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("turn    1: 0 action(s), 0 skipped, frame 200x100")
    assert lines[3].startswith("finished: phase done, 2 turn(s)")
    turns = (tmp_path / "runs" / "run_0001" / "turns.jsonl").read_text().splitlines()
    stages = [(json.loads(line)["turn"], json.loads(line)["stage"]) for line in turns]
    assert stages == [(1, "raw"), (1, "annotated"), (2, "raw"), (2, "annotated")]
    assert len(stub.requests) == 1


@pytest.mark.x11
def test_displays_lists_monitors() -> None:
    with Xvfb(size=(640, 480)) as server:
        result = subprocess.run(
            [sys.executable, "-m", "mantis_fast.cli", "displays", "--display", server.display],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1 display(s) from x11", "*0: screen 640x480+0+0"]
