"""The benchmark report (``benchmarks/report.py``): built from real pytest-benchmark JSON, as
``make bench`` builds it, and from small hand-made JSON for the edge cases."""

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

from benchmarks import report, spread
from tests.support.source_tree import ROOT

COORDS, IMAGE = "benchmarks/bench_coords.py", "benchmarks/bench_image.py"
RESIZE, SCALE = "resize 1080p -> 1280x720, BGRX -> RGB", "scale 1M points, model image -> screen"
QUICK = [  # coordinates run first, yet come after resize in the report
    f"{COORDS}::test_scale_1m_mantis_fast",
    f"{COORDS}::test_scale_1m_numpy_expression",
    f"{COORDS}::test_scale_1m_numpy_in_place",  # untagged: not in the report
    f"{IMAGE}::test_copy_reference",
    f"{IMAGE}::test_mantis_area[1-1080p->1280x720]",
    f"{IMAGE}::test_pillow[BOX-1080p->1280x720]",
    f"{IMAGE}::test_opencv_area[1 thread-1080p->1280x720]",
]
# OpenCV hidden from the benchmark process: a peer that is not installed.
HIDE_OPENCV = "import sys; sys.modules['cv2'] = None; import pytest; sys.exit(pytest.main())"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, str]:
    """A few real benchmarks, few rounds, then the report builder as ``make bench`` runs it.
    Returns (pytest-benchmark's JSON, the output directory, what the builder printed)."""
    out = tmp_path_factory.mktemp("bench")
    results = out / "pytest-benchmark.json"
    argv = [*QUICK, "-q", "-p", "no:cacheprovider", "--benchmark-only"]
    argv += ["--benchmark-min-rounds=3", "--benchmark-max-time=0.01"]
    run = subprocess.run(
        [sys.executable, "-c", HIDE_OPENCV, *argv, f"--benchmark-json={results}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    built = subprocess.run(
        [sys.executable, "benchmarks/report.py", str(results), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    return json.loads(results.read_text()), out, built.stdout


def _stats(results: dict) -> dict[str, dict]:
    return {b["extra_info"]["report"]["label"]: b["stats"] for b in results["benchmarks"]
            if "report" in b["extra_info"]}  # fmt: skip


def test_the_suites_record_what_the_report_needs(quick_run) -> None:
    results, _, _ = quick_run
    tags = {b["name"]: b["extra_info"].get("report") for b in results["benchmarks"]}
    assert tags["test_scale_1m_numpy_in_place"] is None
    assert tags["test_scale_1m_mantis_fast"]["role"] == "subject"
    assert tags["test_scale_1m_numpy_expression"]["version"] == np.__version__
    assert tags["test_copy_reference"]["role"] == "reference"
    frame, image = 1920 * 1080 * 4, 1280 * 720 * 3
    assert tags["test_copy_reference"]["bytes_moved"] == 2 * frame
    assert tags["test_mantis_area[1-1080p->1280x720]"]["bytes_moved"] == frame + image
    (skipped,) = results["skipped"]  # recorded although the test never reached its benchmark
    assert skipped["name"] == "test_opencv_area[1 thread-1080p->1280x720]"
    assert "cv2" in skipped["reason"] and skipped["extra_info"]["report"]["role"] == "peer"
    assert results["machine_info"]["libraries"]["numpy"] == np.__version__
    assert results["command"].startswith("pytest ") and "--benchmark-json=" in results["command"]


def test_json_report_shape_and_ratio_arithmetic(quick_run) -> None:
    results, out, _ = quick_run
    built = json.loads((out / "bench.json").read_text())
    assert built["command"] == results["command"]
    machine = built["machine"]
    assert machine["cpu_model"] and machine["cores"] >= 1 and machine["usable_cores"] >= 1
    assert machine["python"].count(".") == 2 and machine["libraries"]["numpy"] == np.__version__
    assert [op["title"] for op in built["operations"]] == [RESIZE, SCALE]
    resize, scale = built["operations"]
    assert [(m["role"], m["name"].split()[0]) for m in resize["members"]] == [
        ("subject", "mantis_fast"),
        ("peer", "Pillow"),
        ("peer", "OpenCV"),
        ("reference", "np.copyto"),
    ]
    assert resize["members"][2]["skipped"].startswith("could not import 'cv2'")
    assert "median_s" not in resize["members"][2] and "ratio" not in resize["members"][2]
    stats = _stats(results)
    for op in built["operations"]:
        subject = op["members"][0]
        for member in op["members"]:
            if "skipped" in member:
                continue
            raw = stats[member["name"]]
            assert (member["median_s"], member["min_s"]) == (raw["median"], raw["min"])
            assert member["rounds"] == raw["rounds"] >= 3 and member["median_s"] > 0
            if member is not subject:
                assert member["ratio"] == pytest.approx(raw["median"] / subject["median_s"])
    subject = resize["members"][0]  # its yardstick: a copy of its frame in its own rounds
    assert resize["memcpy_basis"] == "paired" and subject["rounds"] == 200
    assert subject["paired_copy_bytes_moved"] == 2 * 1920 * 1080 * 4
    copy_rate = subject["paired_copy_bytes_moved"] / subject["paired_copy_median_s"]
    rate = (1920 * 1080 * 4 + 1280 * 720 * 3) / subject["median_s"]
    assert resize["memcpy_fraction"] == pytest.approx(rate / copy_rate)
    assert 0 < resize["memcpy_fraction"] < 10 and "memcpy_fraction" not in scale


def test_markdown_table_and_printed_table(quick_run) -> None:
    _, out, stdout = quick_run
    built = json.loads((out / "bench.json").read_text())
    markdown = (out / "bench.md").read_text()
    resize, scale = built["operations"]
    ours, pillow, _, copy = resize["members"]
    t, r = report.format_time, report.format_ratio
    expected = [
        "| operation | mantis_fast | peer | peer median | ratio | memcpy share |",
        "|---|---:|---|---:|---:|---:|",
        f"| {RESIZE} | {t(ours['median_s'])} | Pillow frombuffer BGRX + resize BOX | "
        f"{t(pillow['median_s'])} | {r(pillow['ratio'])} | {resize['memcpy_fraction']:.2f} |",
        f"|  |  | OpenCV INTER_AREA + cvtColor (1 thread) | skipped | "
        f"{resize['members'][2]['skipped']} |  |",
        f"|  |  | np.copyto of the frame (memcpy) | {t(copy['median_s'])} | "
        f"{r(copy['ratio'])} |  |",
        f"| {SCALE} | {t(scale['members'][0]['median_s'])} | "
        f"numpy rint(p * W / w).astype(int32) | {t(scale['members'][1]['median_s'])} | "
        f"{r(scale['members'][1]['ratio'])} |  |",
    ]
    lines = markdown.splitlines()
    start = lines.index(expected[0])
    assert lines[start : start + len(expected) + 1] == [*expected, ""]
    assert lines[0].startswith("Machine: ") and f"`{built['command']}`" in lines[1]
    assert "- memcpy share: bytes mantis_fast reads + writes" in markdown
    for title in (RESIZE, SCALE):
        assert title in stdout
    assert "ratio" in stdout and "memcpy share" in stdout and "skipped" in stdout


@pytest.mark.x11
def test_the_capture_subject_times_a_paired_copy_of_its_frame(tmp_path: Path) -> None:
    """The grab's memcpy share is measured against np.copyto of the same frame in the grab's
    own rounds (real Xvfb, real grab, real JSON)."""
    results = tmp_path / "capture.json"
    test = "benchmarks/bench_capture.py::test_mantis_fast_zero_copy[1080p]"
    argv = [test, "-q", "-p", "no:cacheprovider", "--benchmark-only"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *argv, f"--benchmark-json={results}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    built = report.build(json.loads(results.read_text()))
    (capture,) = built["operations"]
    (subject,) = capture["members"]
    assert capture["memcpy_basis"] == "paired"
    assert subject["bytes_moved"] == subject["paired_copy_bytes_moved"] == 2 * 1920 * 1080 * 4
    assert 0 < subject["paired_copy_median_s"] < 1 and subject["rounds"] == 60
    share = subject["paired_copy_median_s"] / subject["median_s"]
    assert capture["memcpy_fraction"] == pytest.approx(share)
    assert "timed in blocks between mantis_fast's rounds" in report.format_markdown(built)


def test_plot_is_written(quick_run) -> None:
    _, out, stdout = quick_run
    pytest.importorskip("matplotlib")
    assert f"plot {out / 'bench.png'}" in stdout
    with Image.open(out / "bench.png") as image:
        assert image.format == "PNG" and image.width > 800 and image.height > 300


# -- hand-made JSON: the edge cases ----------------------------------------------------------


def _entry(operation: str, order: int, role: str, label: str, median: float | None, **facts):
    """One benchmark of pytest-benchmark's JSON with a ``report_as`` tag; ``median=None``: an
    entry of the ``skipped`` list instead."""
    tag = {"operation": operation, "order": order, "role": role, "label": label, **facts}
    entry = {"name": label, "fullname": f"bench.py::{label}", "extra_info": {"report": tag}}
    if median is None:
        return {**entry, "reason": f"{label} not installed"}
    return {**entry, "stats": {"median": median, "min": median / 2, "rounds": 5}}


def _results(*entries: dict) -> dict:
    return {
        "command": "pytest benchmarks",
        "machine_info": {"python_version": "3.11.0", "system": "Linux", "release": "6.1",
                         "cpu": {"brand_raw": "Test CPU", "count": 4}},
        "benchmarks": [e for e in entries if "stats" in e],
        "skipped": [e for e in entries if "reason" in e],
    }  # fmt: skip


CAPTURE = [
    _entry("capture", 0, "reference", "np.copyto", 0.001, bytes_moved=4000, sequence=3),
    _entry("capture", 0, "subject", "mantis_fast grab", 0.002, bytes_moved=2000, sequence=0),
    _entry("capture", 0, "peer", "mss grab", 0.006, sequence=1),
    _entry("capture", 0, "peer", "PIL.ImageGrab", None, sequence=2),
]


def test_ratio_memcpy_share_and_the_order_of_members_and_operations(tmp_path: Path) -> None:
    untagged = {"name": "x", "fullname": "x", "extra_info": {}, "stats": {"median": 1.0}}
    coords = [_entry("coords", 1, "subject", "scale_points", 0.004)]
    built = report.build(_results(*coords, untagged, *CAPTURE))
    assert [op["title"] for op in built["operations"]] == ["capture", "coords"]
    capture = built["operations"][0]
    assert [m["name"] for m in capture["members"]] == [
        "mantis_fast grab", "mss grab", "PIL.ImageGrab", "np.copyto"]  # fmt: skip
    assert capture["members"][1]["ratio"] == pytest.approx(3.0)
    assert capture["members"][3]["ratio"] == pytest.approx(0.5)
    assert capture["memcpy_fraction"] == pytest.approx(0.25)  # 1 MB/s of 4 MB/s
    assert capture["members"][2] == {"name": "PIL.ImageGrab", "role": "peer",
        "test": "bench.py::PIL.ImageGrab", "skipped": "PIL.ImageGrab not installed"}  # fmt: skip
    markdown = report.format_markdown(built)
    assert "| capture | 2 ms | mss grab | 6 ms | 3.00x | 0.25 |" in markdown
    assert "|  |  | PIL.ImageGrab | skipped | PIL.ImageGrab not installed |  |" in markdown
    assert "|  |  | np.copyto | 1 ms | 0.50x |  |" in markdown
    row = next(line for line in report.format_table(built).splitlines() if "PIL" in line)
    assert "skipped" in row and "PIL.ImageGrab not installed" in row
    pytest.importorskip("matplotlib")
    assert report.write_plot(built, tmp_path / "p.png") == f"plot {tmp_path / 'p.png'}"
    assert (tmp_path / "p.png").stat().st_size > 0


def test_a_paired_copy_is_the_yardstick_before_the_reference_row() -> None:
    paired = [dict(e) for e in CAPTURE]
    paired[1] = _entry("capture", 0, "subject", "mantis_fast grab", 0.002, bytes_moved=2000,
                       paired_copy_median_s=0.0032, paired_copy_bytes_moved=4000,
                       sequence=0)  # fmt: skip
    (capture,) = report.build(_results(*paired))["operations"]
    assert capture["memcpy_basis"] == "paired"
    assert capture["memcpy_fraction"] == pytest.approx(0.8)  # 1 MB/s of 1.25 MB/s
    assert capture["members"][3]["ratio"] == pytest.approx(0.5)  # the row itself is unchanged
    note = "capture: memcpy share against np.copyto of the same frame timed in blocks between"
    assert note in report.format_markdown(report.build(_results(*paired)))
    (alone,) = report.build(_results(*CAPTURE))["operations"]
    assert alone["memcpy_basis"] == "reference"
    no_bytes = _entry("capture", 0, "subject", "grab", 0.002, paired_copy_median_s=0.001,
                      paired_copy_bytes_moved=4000)  # fmt: skip
    assert "memcpy_fraction" not in report.build(_results(no_bytes))["operations"][0]


def test_a_skipped_subject_leaves_its_peers_without_ratios(tmp_path: Path) -> None:
    built = report.build(_results(_entry("png", 0, "subject", "encode_png", None),
                                  _entry("png", 0, "peer", "Pillow", 0.05)))  # fmt: skip
    (op,) = built["operations"]
    assert "ratio" not in op["members"][1] and "memcpy_fraction" not in op
    assert "| png | skipped | Pillow | 50 ms | - |  |" in report.format_markdown(built)
    pytest.importorskip("matplotlib")
    assert report.write_plot(built, tmp_path / "p.png").startswith("plot")


def test_two_subjects_in_one_operation_are_refused() -> None:
    twice = [_entry("png", 0, "subject", name, 0.01) for name in ("isal", "zlib")]
    with pytest.raises(ValueError, match="more than one subject"):
        report.build(_results(*twice))


def test_rates_stage_medians_and_notes() -> None:
    stages = {"capture": 0.001, "encode": 0.0045}
    note = "one process per click"
    built = report.build(_results(
        _entry("loop", 0, "subject", "mantis_fast loop", 0.01, rate_unit="it/s",
               stage_medians_s=stages, cpu_per_round_s={"X server": 0.0025, "loop": 0.003}),
        _entry("loop", 0, "peer", "xdotool click 1", 0.2, rate_unit="it/s", note=note),
        _entry("loop", 0, "peer", "xdotool click --delay 1 1", 0.08, rate_unit="it/s", note=note),
    ))  # fmt: skip
    markdown = report.format_markdown(built)
    assert "| loop | 10 ms (100.0 it/s) | xdotool click 1 | 200 ms (5.0 it/s) | 20.0x |  |" in (
        markdown
    )
    assert markdown.count(note) == 1  # a note shared by members is printed once
    assert "- loop: mantis_fast stage medians: capture 1 ms, encode 4.5 ms" in markdown
    assert "- loop: CPU time per round: X server 2.5 ms, loop 3 ms" in markdown


def test_machine_facts_without_the_conftest_additions() -> None:
    machine = report.build(_results())["machine"]
    assert machine == {"cpu_model": "Test CPU", "cores": 4, "usable_cores": 4,
                       "platform": "Linux 6.1", "python": "3.11.0", "libraries": {}}  # fmt: skip


def test_nothing_tagged_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_results()))
    assert report.main([str(results), "--out", str(tmp_path / "out")]) == 1
    assert "nothing to report" in capsys.readouterr().out and not (tmp_path / "out").exists()


def test_without_matplotlib_the_plot_is_skipped_with_a_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import -> ImportError
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_results(*CAPTURE)))
    assert report.main([str(results), "--out", str(tmp_path)]) == 0
    assert "plot skipped: matplotlib is not installed" in capsys.readouterr().out
    assert (tmp_path / "bench.md").exists() and not (tmp_path / "bench.png").exists()


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
    assert report.format_time(seconds) == text


@pytest.mark.parametrize(("ratio", "text"), [(0.51, "0.51x"), (12.84, "12.8x"), (1381.2, "1,381x")])
def test_format_ratio(ratio: float, text: str) -> None:
    assert report.format_ratio(ratio) == text


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-9, 1e5))
def test_format_time_keeps_three_significant_digits_and_a_unit(seconds: float) -> None:
    value, unit = report.format_time(seconds).split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
    assert float(value.replace(",", "")) * scale == pytest.approx(seconds, rel=0.006)
    assert unit == "us" or float(value.replace(",", "")) >= 1


def test_spread_takes_medians_over_runs_and_ratios_within_each() -> None:
    """The spread table: each member's median over the runs with its range, and the median of
    the per-run ratios (never a ratio of medians taken from different runs)."""

    def run(subject: float, peer: float) -> dict:
        return report.build(_results(
            _entry("loop", 0, "subject", "mantis_fast loop", subject),
            _entry("loop", 0, "peer", "classic loop", peer),
            _entry("loop", 0, "peer", "other peer", 1.0),
        ))  # fmt: skip

    runs = [run(0.010, 0.200), run(0.020, 0.300), run(0.012, 0.360)]
    (row,) = spread.combine(runs)
    assert row["peer_name"] == "classic loop"  # the first peer only, by default
    assert row["ratio"] == pytest.approx([20.0, 15.0, 30.0])
    table = spread.format_spread([row], len(runs))
    assert "| loop | 12 ms (10 ms .. 20 ms) | classic loop | 300 ms (200 ms .. 360 ms) " in table
    assert "| 20x (15x .. 30x) | 3 |" in table and "over 3 runs" in table
    assert len(spread.combine(runs, all_peers=True)) == 2


def test_spread_reads_report_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    built = report.build(_results(
        _entry("png", 0, "subject", "mantis_fast png", 0.002),
        _entry("png", 0, "peer", "Pillow", 0.05),
    ))  # fmt: skip
    paths = []
    for index in range(2):
        paths.append(tmp_path / f"run{index}.json")
        paths[-1].write_text(json.dumps(built))
    assert spread.main([*map(str, paths), "--out", str(tmp_path / "spread.md")]) == 0
    printed = capsys.readouterr().out
    row = "| png | 2 ms (2 ms .. 2 ms) | Pillow | 50 ms (50 ms .. 50 ms) | 25x (25x .. 25x) | 2 |"
    assert row in printed
    assert (tmp_path / "spread.md").read_text() == printed
