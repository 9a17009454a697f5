"""``mantis-fast bench``: the report a user gets, and the pieces that build it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast import benchcases, benchreport
from mantis_fast.benchtiming import Effort, Member, Operation, Skipped, make_member, time_members
from mantis_fast.loops.trajectory import drift_loop_flags
from tests.loop_reference import reference_drift_flags

OPERATIONS = {
    "capture": ("mss", "PIL.ImageGrab", "np.copyto"),
    "capture_unchanged": ("mss",),
    "resize": ("Pillow", "OpenCV", "np.copyto"),
    "png": ("Pillow",),
    "coords": ("numpy",),
    "drift": ("pure-Python",),
    "dispatch": (
        "xdotool mousemove X Y click 1",
        "xdotool mousemove X Y click --delay",
        "pyautogui",
    ),
    "loop": ("xdotool click 1", "xdotool click --delay"),
}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One ``mantis-fast bench --quick`` as a user runs it: a process with its own Xvfb."""
    out = tmp_path_factory.mktemp("bench") / "results"
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "bench", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return out, result.stdout


def test_json_has_every_operation_with_positive_medians(quick_run) -> None:
    out, _ = quick_run
    report = json.loads((out / "bench.json").read_text())
    assert report["command"] == f"mantis-fast bench --out {out} --quick"
    assert report["quick"] is True
    machine = report["machine"]
    assert machine["cpu_model"] and machine["cores"] >= 1 and machine["usable_cores"] >= 1
    assert machine["python"].count(".") == 2 and machine["numpy"] == np.__version__
    assert [op["key"] for op in report["operations"]] == list(OPERATIONS)
    for op in report["operations"]:
        roles = [m["role"] for m in op["members"]]
        assert roles.count("subject") == 1, op["key"]
        subject = op["members"][roles.index("subject")]
        assert subject["name"].startswith("mantis_fast")
        assert subject["median_s"] > 0 and subject["min_s"] > 0 and subject["rounds"] >= 2
        others = [m for m in op["members"] if m["role"] != "subject"]
        for expected, member in zip(OPERATIONS[op["key"]], others, strict=True):
            assert expected in member["name"], (op["key"], member["name"])
            if "skipped" in member:  # a peer missing here is reported, not failed
                assert member["skipped"] and "median_s" not in member
                continue
            assert member["median_s"] > 0 and member["rounds"] >= 2
            assert member["ratio"] == pytest.approx(member["median_s"] / subject["median_s"])
    by_key = {op["key"]: op for op in report["operations"]}
    for key in ("capture", "resize"):
        assert 0 < by_key[key]["memcpy_fraction"] < 10
    rates = by_key["loop"]["iterations_per_s"]
    assert rates and all(rate > 0 for rate in rates.values())
    assert all(np.isfinite(m.get("median_s", 1.0)) for op in report["operations"]
               for m in op["members"])  # fmt: skip


def test_table_markdown_and_plot_are_written(quick_run) -> None:
    out, stdout = quick_run
    report = json.loads((out / "bench.json").read_text())
    markdown = (out / "bench.md").read_text()
    for op in report["operations"]:
        assert op["title"] in stdout and op["title"] in markdown
    assert "ratio" in stdout and "memcpy share" in stdout
    assert markdown.count("\n| ") == sum(len(op["members"]) - 1 for op in report["operations"]) + 1
    plot = out / "bench.png"
    pytest.importorskip("matplotlib")
    with Image.open(plot) as image:
        assert image.format == "PNG" and image.width > 800 and image.height > 600


# -- the pieces, without an X server ---------------------------------------------------------


def test_a_peer_that_cannot_run_is_skipped_but_the_subject_must_run() -> None:
    def missing():
        raise ImportError("No module named 'mss'")

    def unusable():
        raise Skipped("xdotool not installed")

    assert make_member("mss", "peer", missing).skipped == "No module named 'mss'"
    assert make_member("xdotool", "peer", unusable).skipped == "xdotool not installed"
    with pytest.raises(ImportError):
        make_member("mantis_fast", "subject", missing)


def test_missing_opencv_is_reported_as_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 -> ImportError
    with benchcases._opencv_one_thread() as cv2:
        assert cv2 is None


def test_require_names_the_missing_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mss", None)
    with pytest.raises(Skipped, match="mss not installed"):
        benchcases.require("mss", "mss")


def test_timing_rounds_stay_within_the_effort_and_interleave() -> None:
    calls: list[str] = []
    members = [
        Member("mantis_fast", "subject", fn=lambda: calls.append("a")),
        Member("peer", "peer", fn=lambda: calls.append("b") or sum(range(20_000))),
        Member("gone", "peer", skipped="not installed"),
    ]
    effort = Effort(budget_s=0.01, min_rounds=3, max_rounds=12, blocks=3, warmup=2)
    time_members(members, effort)
    for member in members[:2]:
        assert 3 <= len(member.samples) <= 12 and member.median_s > 0
    assert members[2].samples == []
    timed = "".join(calls[4:])  # after two warm-up calls each
    assert timed.index("b") < timed.rindex("a")  # blocks take turns


def test_a_peer_that_breaks_while_timed_is_reported_failed_but_a_subject_raises() -> None:
    def broken():
        raise OSError("xdotool exited with status 1")

    effort = Effort(budget_s=0.001, min_rounds=1, max_rounds=2, blocks=2, warmup=1)
    members = [Member("mantis_fast", "subject", fn=lambda: 1), Member("peer", "peer", fn=broken)]
    time_members(members, effort)
    assert members[1].skipped.startswith("failed: OSError('xdotool exited")
    assert members[1].samples == [] and len(members[0].samples) >= 1
    with pytest.raises(OSError, match="status 1"):
        time_members([Member("mantis_fast", "subject", fn=broken)], effort)


@pytest.mark.parametrize(
    "bad",
    [
        {"budget_s": 0.0},
        {"min_rounds": 0},
        {"min_rounds": 5, "max_rounds": 4},
        {"blocks": 0},
        {"warmup": 0},
    ],
)
def test_effort_refuses_settings_that_time_nothing(bad: dict) -> None:
    settings_ = {"budget_s": 1.0, "min_rounds": 1, "max_rounds": 4, "blocks": 1, "warmup": 1}
    with pytest.raises(ValueError, match="need"):
        Effort(**{**settings_, **bad})


def _report(members: list[Member]) -> dict:
    for member in members:
        if member.skipped is None:
            member.samples = [0.002, 0.001, 0.003]
            member.result = 2 * 1000
    op = Operation("capture", "capture 1080p, full frame", members, bandwidth_bytes=2000)
    return {
        "command": "mantis-fast bench",
        "machine": {
            "cpu_model": "Test CPU",
            "cores": 2,
            "usable_cores": 2,
            "platform": "Linux",
            "python": "3.11.0",
            "numpy": np.__version__,
            "display": "Xvfb 1920x1080x24, capture xshm",
        },
        "operations": [op.to_json()],
    }


def test_rendering_lists_skipped_peers_and_the_memcpy_share(tmp_path: Path) -> None:
    report = _report(
        [
            Member("mantis_fast Capture.grab()", "subject"),
            Member("mss MSS().grab", "peer", skipped="mss not installed"),
            Member("np.copyto of the frame (memcpy)", "reference"),
        ]
    )
    op = report["operations"][0]
    assert op["memcpy_fraction"] == pytest.approx(1.0)
    assert op["members"][1] == {"name": "mss MSS().grab", "role": "peer",
                                "skipped": "mss not installed"}  # fmt: skip
    table = benchreport.format_table(report)
    row = next(line for line in table.splitlines() if "mss MSS().grab" in line)
    assert "skipped" in row and "mss not installed" in row and "1.00" in row
    assert "| mss MSS().grab | skipped | mss not installed | 1.00 |" in (
        benchreport.format_markdown(report)
    )
    pytest.importorskip("matplotlib")
    assert benchreport.write_plot(report, tmp_path / "p.png").startswith("plot")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_plot_without_matplotlib_is_skipped_with_a_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    report = _report([Member("mantis_fast", "subject"), Member("peer", "peer")])
    note = benchreport.write_plot(report, tmp_path / "p.png")
    assert "matplotlib is not installed" in note and not (tmp_path / "p.png").exists()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.5, "2.5 s"),
        (0.0123, "12.3 ms"),
        (0.000107, "107 us"),
        (4.2e-6, "4.2 us"),
        (1.0, "1 s"),
        (0.9996, "1 s"),
        (0.00099996, "1 ms"),
        (1234.5, "1,230 s"),
    ],
)
def test_format_time(seconds: float, text: str) -> None:
    assert benchreport.format_time(seconds) == text


@pytest.mark.parametrize(("ratio", "text"), [(0.51, "0.51x"), (12.84, "12.8x"), (1381.2, "1,381x")])
def test_format_ratio(ratio: float, text: str) -> None:
    assert benchreport.format_ratio(ratio) == text


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 40), st.sampled_from([0, 1, 2, 4])),
        max_size=60,
    ),
    st.integers(2, 6),
    st.sampled_from([0.0, 2.0, 9.0]),
)
def test_the_bench_copy_of_the_python_detector_matches_the_reference(steps, window, tol) -> None:
    x = [float(s[0]) for s in steps]
    y = [float(s[1]) for s in steps]
    kind = [s[2] for s in steps]
    expected = reference_drift_flags(x, y, kind, tol, window)
    assert benchcases.python_drift_flags(x, y, kind, tol, window) == expected
    if steps:
        flags = drift_loop_flags(np.array(x), np.array(y), np.array(kind, np.int8), tol, window)
        assert flags.tolist() == expected


def test_screen_image_is_a_deterministic_bgrx_screen() -> None:
    first, second = benchcases.screen_image((640, 360)), benchcases.screen_image((640, 360))
    assert first.shape == (360, 640, 4) and first.dtype == np.uint8
    np.testing.assert_array_equal(first, second)
    assert (first[..., 3] == 0).all() and len(np.unique(first[..., 1])) > 50  # text, photo


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-9, 1e5))
def test_format_time_keeps_three_significant_digits_and_a_unit(seconds: float) -> None:
    value, unit = benchreport.format_time(seconds).split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
    assert float(value.replace(",", "")) * scale == pytest.approx(seconds, rel=0.006)
    assert unit == "us" or float(value.replace(",", "")) >= 1
