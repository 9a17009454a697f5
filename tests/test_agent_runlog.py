"""Run directories: both layouts as the reference names them, and nothing lost on SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from PIL import Image

from mantis_fast.agent.runlog import RunLog, read_records

PNG = b"\x89PNG\r\n\x1a\n" + b"x" * 100


def test_flat_layout(tmp_path: Path) -> None:
    with RunLog(tmp_path, "flat") as log:
        assert log.path == tmp_path / "run_0001"
        log.save_raw(1, PNG, {"observation": "o", "bboxes": [], "actions": []}, "{}")
        log.save_annotated(1, PNG + b"a")
        log.logger.info("hello from turn 1")
    names = sorted(p.name for p in (tmp_path / "run_0001").iterdir())
    assert names == ["main.log", "turn_0001_annotated.png", "turn_0001_raw.png", "turns.jsonl"]
    assert read_records(tmp_path / "run_0001") == [
        {"turn": 1, "stage": "raw", "observation": "o", "bboxes": [], "actions": [],
         "raw_png": "turn_0001_raw.png"},
        {"turn": 1, "stage": "annotated", "annotated_png": "turn_0001_annotated.png"},
    ]  # fmt: skip
    assert "hello from turn 1" in (tmp_path / "run_0001" / "main.log").read_text()
    with RunLog(tmp_path, "flat", log_to_file=False) as second:
        assert second.path.name == "run_0002"
        assert not (second.path / "main.log").exists()


def test_turn_dirs_layout(tmp_path: Path) -> None:
    (tmp_path / "run_0041").mkdir()
    (tmp_path / "unrelated").mkdir()
    with RunLog(tmp_path, "turn_dirs") as log:
        assert log.path.name == "run_0042"
        log.save_raw(3, PNG, {"observation": "o", "actions": []}, '{"observation": "o"}')
        log.save_annotated(3, PNG)
    turn = tmp_path / "run_0042" / "turn_0003"
    assert sorted(p.name for p in turn.iterdir()) == [
        "screenshot_annotated.png",
        "screenshot_raw.png",
        "vlm_output.json",
    ]
    output = json.loads((turn / "vlm_output.json").read_text())
    assert output["vlm_text"] == '{"observation": "o"}' and output["observation"] == "o"
    records = read_records(tmp_path / "run_0042")
    assert records[0]["raw_png"] == "turn_0003/screenshot_raw.png"
    assert records[1]["annotated_png"] == "turn_0003/screenshot_annotated.png"


def test_bad_layout_and_closed_log(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="layout must be 'flat' or 'turn_dirs', got 'tree'"):
        RunLog(tmp_path, "tree")
    log = RunLog(tmp_path, log_to_file=False)
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.append({})


WRITER = textwrap.dedent(
    """
    import sys, numpy as np, io
    from PIL import Image
    from mantis_fast.agent.runlog import RunLog
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (400, 600, 3), dtype=np.uint8)).save(buffer, "PNG")
    png = buffer.getvalue()
    log = RunLog(sys.argv[1], sys.argv[2])
    print("ready", flush=True)
    turn = 0
    while True:
        turn += 1
        log.save_raw(turn, png, {"observation": "x" * 5000, "actions": []}, "{}")
        log.save_annotated(turn, png)
        log.logger.warning("turn %d done", turn)
    """
)


@pytest.mark.parametrize("layout", ["flat", "turn_dirs"])
def test_kill_mid_turn_loses_nothing(tmp_path: Path, layout: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), layout], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    log = tmp_path / "run_0001" / "turns.jsonl"
    deadline = time.monotonic() + 30  # a few turns in, however loaded the machine is
    while time.monotonic() < deadline and (not log.exists() or log.read_bytes().count(b"\n") < 6):
        time.sleep(0.05)
    time.sleep(0.05)  # and kill it somewhere inside the next turn
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()
    run = tmp_path / "run_0001"
    lines = (run / "turns.jsonl").read_text().splitlines()
    assert len(lines) >= 4
    records = [json.loads(line) for line in lines]  # every line is whole JSON
    for record in records:
        name = record.get("raw_png") or record.get("annotated_png")
        with Image.open(run / name) as image:  # every named image is complete
            image.load()
            assert image.size == (600, 400)
    turns = [r["turn"] for r in records if r["stage"] == "raw"]
    assert turns == list(range(1, len(turns) + 1))


def test_a_lone_surrogate_from_the_model_is_logged_and_reads_back(tmp_path: Path) -> None:
    # json.loads('"\\ud800"') is a str no UTF-8 codec encodes; one such reply must not end a run.
    text = json.loads('"bad \\ud800 text"')
    log = RunLog(tmp_path, "turn_dirs")
    log.save_raw(1, b"png", {"observation": text}, text)
    log.append({"turn": 1, "stage": "vlm", "text": text})
    log.close()
    records = read_records(log.path)
    assert [r.get("observation", r.get("text")) for r in records] == [text, text]
    saved = json.loads((log.path / "turn_0001" / "vlm_output.json").read_text("utf-8"))
    assert saved["vlm_text"] == text
