"""Run directories: both layouts as the reference names them, nothing lost on SIGKILL, and a
write that fails (a name taken, no descriptor left, a full disk) skipped and recorded, never
raised."""

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

from mantis_fast.agent.runlog import RunLog, read_events, read_records

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


def test_turns_jsonl_holds_the_seed_pair_and_events_jsonl_the_rest(tmp_path: Path) -> None:
    """Seed 004: "turns.jsonl - Each line is one JSON object. - Two records per turn:
    stage="raw" includes observation, bboxes, actions, raw_png; stage="annotated" includes
    annotated_png", shaped as its examples
    {"turn":1,"stage":"raw","observation":"...","bboxes":[],"actions":[...],"raw_png":...} and
    {"turn":1,"stage":"annotated","annotated_png":"turn_0001_annotated.png"}. Model calls and
    timings are kept, in events.jsonl, so a reader taking turns.jsonl in pairs keeps working."""
    with RunLog(tmp_path, "flat", log_to_file=False) as log:
        for turn in (1, 2):
            extra = {"skipped": [], "settle": {"delay": 0.0}}  # extras come after the seed's
            record = {**extra, "actions": [{"name": "click"}], "bboxes": [], "observation": "o"}
            log.save_raw(turn, PNG, record, "{}")
            log.save_annotated(turn, PNG)
            log.append_event({"turn": turn, "stage": "vlm", "ok": True, "text": "{}"})
            log.append_event({"turn": turn, "stage": "timings", "timings_ms": {"parse": 0.1}})
    lines = (log.path / "turns.jsonl").read_text().splitlines()
    assert len(lines) == 4
    for turn, (raw, annotated) in enumerate(zip(lines[0::2], lines[1::2], strict=True), 1):
        raw, annotated = json.loads(raw), json.loads(annotated)
        assert list(raw)[:6] == ["turn", "stage", "observation", "bboxes", "actions", "raw_png"]
        assert (raw["turn"], raw["stage"]) == (turn, "raw")
        assert raw["raw_png"] == f"turn_{turn:04d}_raw.png"
        assert raw["settle"] == {"delay": 0.0}
        assert annotated == {
            "turn": turn, "stage": "annotated", "annotated_png": f"turn_{turn:04d}_annotated.png"
        }  # fmt: skip
    assert lines[1] == '{"turn":1,"stage":"annotated","annotated_png":"turn_0001_annotated.png"}'
    events = read_events(log.path)
    assert [(e["turn"], e["stage"]) for e in events] == [
        (1, "vlm"), (1, "timings"), (2, "vlm"), (2, "timings")
    ]  # fmt: skip
    assert read_records(log.path / "events.jsonl") == events
    assert read_events(tmp_path / "elsewhere") == []  # a run with no events


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
    log.append_event({"turn": 1, "stage": "vlm", "text": text})
    log.close()
    records = read_records(log.path) + read_events(log.path)
    assert [r.get("observation", r.get("text")) for r in records] == [text, text]
    saved = json.loads((log.path / "turn_0001" / "vlm_output.json").read_text("utf-8"))
    assert saved["vlm_text"] == text


def test_an_image_that_cannot_be_written_is_skipped_and_recorded(tmp_path: Path) -> None:
    with RunLog(tmp_path, "flat") as log:
        (log.path / "turn_0001_raw.png").mkdir()  # the name is taken (root ignores mode bits)
        assert log.save_raw(1, PNG, {"observation": "o"}, "{}") is None  # was: IsADirectoryError
        assert log.save_annotated(1, PNG) == "turn_0001_annotated.png"
        (error,) = log.take_errors()
        assert error.startswith("turn_0001_raw.png: IsADirectoryError")
        assert log.take_errors() == []
        assert log.save_raw(2, PNG, {"observation": "o"}, "{}") == "turn_0002_raw.png"
    records = read_records(tmp_path / "run_0001")
    assert records[0]["raw_png"] is None and records[0]["write_errors"] == [error]
    assert [r.get("raw_png", r.get("annotated_png")) for r in records[1:]] == [
        "turn_0001_annotated.png", "turn_0002_raw.png"
    ]  # fmt: skip
    assert not [p for p in (tmp_path / "run_0001").iterdir() if p.name.endswith(".tmp")]
    assert "could not write turn_0001_raw.png" in (tmp_path / "run_0001" / "main.log").read_text()


NO_DESCRIPTORS = textwrap.dedent(
    """
    import json, os, resource, sys, threading
    from mantis_fast.agent.runlog import RunLog, read_records

    log = RunLog(sys.argv[1], "turn_dirs")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    held = []

    def exhaust():
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass

    exhaust()  # descriptors come back 0.1 s into the first write: its retry gets one
    threading.Timer(0.1, lambda: [os.close(held.pop()) for _ in range(8)]).start()
    first = log.save_raw(1, b"png1", {"observation": "o"}, "{}")
    exhaust()  # and now they do not: skipped
    second = log.save_raw(2, b"png2", {"observation": "o"}, "{}")
    errors = log.take_errors()
    for fd in held:
        os.close(fd)
    third = log.save_annotated(2, b"png2a")
    log.close()
    print(json.dumps({"names": [first, second, third], "errors": errors,
                      "records": read_records(log.path)}))
    """
)


def test_a_write_at_the_descriptor_limit_is_retried_then_skipped(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_DESCRIPTORS, str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr  # was: OSError [Errno 24], uncaught
    out = json.loads(result.stdout)
    assert out["names"] == [
        "turn_0001/screenshot_raw.png",
        None,
        "turn_0002/screenshot_annotated.png",
    ]
    assert all("Too many open files" in error for error in out["errors"]), out["errors"]
    assert [e.split(":")[0] for e in out["errors"]] == [
        "turn_0002/screenshot_raw.png", "turn_0002/vlm_output.json"
    ]  # fmt: skip
    second_raw = out["records"][1]
    assert second_raw["raw_png"] is None and second_raw["write_errors"] == out["errors"]
    assert (tmp_path / "run_0001" / "turn_0001" / "screenshot_raw.png").read_bytes() == b"png1"


FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys
    from mantis_fast.agent.runlog import RunLog, read_records

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a core dump
    log = RunLog(sys.argv[1], "flat")
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4000, hard))  # no file past 4000 bytes
    names = []
    for turn in range(1, 9):
        names.append(log.save_raw(turn, b"P" * 1000, {"observation": "o" * 300}, "{}"))
        names.append(log.save_annotated(turn, b"A" * 5000))  # never fits
    errors = log.take_errors()
    log.close()
    text = (log.path / "turns.jsonl").read_text()
    print(json.dumps({"names": names, "errors": errors, "records": read_records(log.path),
                      "ends_whole": text.endswith("\\n")}))
    """
)


def test_a_full_disk_skips_files_and_keeps_whole_lines(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr  # was: OSError [Errno 27], uncaught
    out = json.loads(result.stdout)
    assert out["names"][0::2] == [f"turn_{t:04d}_raw.png" for t in range(1, 9)]
    assert out["names"][1::2] == [None] * 8
    assert any("turns.jsonl" in error for error in out["errors"])  # the log filled up too
    assert all("File too large" in error for error in out["errors"])
    assert out["ends_whole"] and 0 < len(out["records"]) < 16  # a cut line was cut off again
    for record in out["records"]:
        assert record.get("annotated_png", None) is None
