"""``mantis-fast bench``: every stage of the agent loop against its usual peers, in one process.

Starts its own 1920x1080 Xvfb, times each operation of :mod:`mantis_fast.benchcases` (mantis_fast
and its peers side by side, medians), and writes what it measured to ``out``:

- ``bench.json``: the machine (CPU model, cores, Python and library versions), the command, and
  for every operation every member's median, minimum and rounds, its ratio to mantis_fast and,
  for capture and resize, the share of the measured memcpy bandwidth mantis_fast reaches;
- ``bench.md``: the ratio table as Markdown (what the README quotes);
- ``bench.png``: speed-up per operation and peer, horizontal bars on a log axis (matplotlib;
  skipped with a message when it is not installed).

The same table is printed. A ratio is ``peer median / mantis_fast median``: above 1, mantis_fast
is that many times faster. A peer that is not installed is listed as skipped, not failed.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from mantis_fast.benchcases import OPERATIONS, SCREEN, Rig, paint_root, screen_image
from mantis_fast.benchtiming import Effort, package_version
from mantis_fast.pixels.encode import PNG_DEFLATE
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import Xvfb

__all__ = ["FULL", "QUICK", "format_markdown", "format_table", "run_bench", "write_plot"]

FULL = Effort(budget_s=2.0, min_rounds=7, max_rounds=400, blocks=5, warmup=3)
QUICK = Effort(budget_s=0.03, min_rounds=2, max_rounds=10, blocks=1, warmup=1)


def run_bench(
    out: str | os.PathLike[str] = "bench-results",
    *,
    quick: bool = False,
    command: str | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Run every comparison, print the ratio table, write bench.json/.md/.png into ``out``.

    ``quick`` runs a couple of rounds per member (for tests; the medians are then rough).
    Returns the report that bench.json holds.
    """
    stream = sys.stdout if stream is None else stream
    effort = QUICK if quick else FULL
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = command or "mantis-fast bench" + (" --quick" if quick else "")
    started = time.time()
    operations = []
    with Xvfb(size=SCREEN, depth=24) as server, ExitStack() as stack:
        paint_root(server.display, screen_image(SCREEN))
        cap = stack.enter_context(Capture(server.display))
        rig = Rig(server, cap, cap.grab(copy=True), effort, stack)
        print(f"{command}: Xvfb {server.display} {SCREEN[0]}x{SCREEN[1]}", file=stream)
        for bench in OPERATIONS:
            start = time.perf_counter()
            op = bench(rig)
            took = time.perf_counter() - start
            print(f"  {op.title:<44} {took:5.1f} s", file=stream, flush=True)
            operations.append(op.to_json())
        machine = machine_facts(server.env())
        machine["display"] = f"Xvfb {SCREEN[0]}x{SCREEN[1]}x24, capture {cap.backend}"
    report = {
        "command": command,
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(time.time() - started, 1),
        "ratio": "peer median / mantis_fast median (> 1: mantis_fast is faster)",
        "memcpy_fraction": "bytes mantis_fast reads + writes per second / np.copyto's rate",
        "machine": machine,
        "operations": operations,
    }
    (out_dir / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "bench.md").write_text(format_markdown(report))
    print(file=stream)
    print(format_table(report), file=stream)
    plot_note = write_plot(report, out_dir / "bench.png")
    print(f"\nwrote {out_dir / 'bench.json'}, {out_dir / 'bench.md'}; {plot_note}", file=stream)
    return report


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def xdotool_version(env: dict[str, str] | None = None) -> str | None:
    """``xdotool version`` (it needs a display to answer, hence ``env``)."""
    if shutil.which("xdotool") is None:
        return None
    try:
        result = subprocess.run(
            ["xdotool", "version"], env=env, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"version\s+(\S+)", result.stdout + result.stderr)
    return match.group(1) if match else "installed"


def machine_facts(env: dict[str, str] | None = None) -> dict[str, Any]:
    from mantis_fast import __version__

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "mantis_fast": __version__,
        "png_deflate": PNG_DEFLATE,
        "peers": {
            "Pillow": package_version("pillow"),
            "mss": package_version("mss"),
            "opencv": package_version(
                "opencv-python-headless",
                "opencv-python",
                "opencv-contrib-python-headless",
                "opencv-contrib-python",
            ),
            "pyautogui": package_version("pyautogui"),
            "matplotlib": package_version("matplotlib"),
            "xdotool": xdotool_version(env),
        },
    }


# -- rendering ---------------------------------------------------------------------------------


def format_time(seconds: float) -> str:
    """Three significant digits in the largest unit that keeps the number under 1000."""
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        value = float(f"{seconds / scale:.3g}")
        if value < 1000 or unit == "s":
            return f"{value:,g} {unit}"
    return f"{value:,g} {unit}"  # unreachable: "s" ends the loop


def format_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x"


def _rows(report: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(operation, mantis_fast median, peer, peer median, ratio, memcpy share) per peer."""
    rows = []
    for op in report["operations"]:
        rates = op.get("iterations_per_s", {})

        def median(member: dict[str, Any], rates=rates) -> str:
            text = format_time(member["median_s"])
            rate = rates.get(member["name"])
            return text if rate is None else f"{text} ({rate:,.1f} it/s)"

        subject = next(m for m in op["members"] if m["role"] == "subject")
        share = f"{op['memcpy_fraction']:.2f}" if "memcpy_fraction" in op else ""
        first = [op["title"], median(subject), share]
        for member in op["members"]:
            if member["role"] == "subject":
                continue
            if "skipped" in member:
                cells = ("skipped", member["skipped"])
            else:
                cells = (median(member), format_ratio(member["ratio"]))
            title, ours, share = first or ("", "", "")
            rows.append((title, ours, member["name"], *cells, share))
            first = []
    return rows


def _machine_line(report: dict[str, Any]) -> str:
    m = report["machine"]
    return (
        f"{m['cpu_model']}, {m['cores']} cores ({m['usable_cores']} usable), {m['platform']}, "
        f"Python {m['python']}, numpy {m['numpy']}; {m['display']}"
    )


def _notes(report: dict[str, Any]) -> list[str]:
    notes = [
        "memcpy share: bytes mantis_fast reads + writes per second over np.copyto's rate on "
        "the same frame (1.00 = as fast as a memcpy)"
    ]
    for op in report["operations"]:
        if "note" in op:
            notes.append(f"{op['title']}: {op['note']}")
        if "subject_stage_medians_s" in op:
            stages = op["subject_stage_medians_s"].items()
            medians = ", ".join(f"{name} {format_time(median)}" for name, median in stages)
            notes.append(f"{op['title']}: mantis_fast stage medians inside the loop: {medians}")
    return notes


def format_table(report: dict[str, Any]) -> str:
    header = ("operation", "mantis_fast", "peer", "median", "ratio", "memcpy share")
    rows = [header, *_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {1, 3, 4, 5}
    lines = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(
        [
            f"{report['command']}: medians; ratio = peer / mantis_fast (> 1: mantis_fast faster)",
            _machine_line(report),
            "",
            *lines,
            "",
            *_notes(report),
        ]
    )


def format_markdown(report: dict[str, Any]) -> str:
    header = "| operation | mantis_fast | peer | peer median | ratio | memcpy share |"
    lines = [header, "|---|---:|---|---:|---:|---:|"]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    return "\n".join(
        [
            f"Machine: {_machine_line(report)}.",
            f"Command: `{report['command']}` (medians; ratio = peer / mantis_fast).",
            "",
            *lines,
            "",
            *(f"- {note}" for note in _notes(report)),
            "",
        ]
    )


def write_plot(report: dict[str, Any], path: Path) -> str:
    """Horizontal bars of speed-up (log axis), one per operation and peer. Returns a note."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install matplotlib)"
    labels, ratios, colours, notes = [], [], [], []
    palette = [f"C{i}" for i in range(10)]
    for index, op in enumerate(report["operations"]):
        share = op.get("memcpy_fraction")
        extra = "" if share is None else f"; mantis_fast at {share:.2f} of memcpy"
        rates = op.get("iterations_per_s", {})
        subject = next(m for m in op["members"] if m["role"] == "subject")
        for member in op["members"]:
            if member["role"] != "peer":
                continue
            labels.append(f"{op['title']}\nvs {member['name']}")
            colours.append(palette[index % len(palette)])
            if "skipped" in member:
                ratios.append(np.nan)
                notes.append(f"skipped: {member['skipped']}")
                continue
            ratios.append(member["ratio"])
            if member["name"] in rates:
                extra = f" ({rates[subject['name']]:,.0f} vs {rates[member['name']]:,.1f} it/s)"
            notes.append(format_ratio(member["ratio"]) + extra)
            extra = ""
    figure = Figure(figsize=(11, 0.62 * len(labels) + 1.6), layout="constrained")
    axes = figure.add_subplot()
    ys = np.arange(len(labels))[::-1]
    finite = [r for r in ratios if np.isfinite(r)]
    low, high = min([*finite, 0.5]) / 1.6, max([*finite, 2.0]) * 3.5
    widths = [r - 1.0 if np.isfinite(r) else 0.0 for r in ratios]
    axes.barh(ys, widths, left=1.0, color=colours, height=0.7)  # from 1x: faster right, slower left
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    axes.axvline(1.0, color="black", linewidth=1)
    for y, ratio, note in zip(ys, ratios, notes, strict=True):
        x = ratio if np.isfinite(ratio) else 1.0
        axes.text(x * 1.08, y, note, va="center", fontsize=9)
    axes.set_yticks(ys, labels, fontsize=8.5)
    axes.set_xlabel("speed-up: peer median time / mantis_fast median time (log scale; 1 = equal)")
    axes.grid(axis="x", which="both", alpha=0.25)
    machine = report["machine"]
    axes.set_title(
        f"mantis_fast vs peers - {machine['cpu_model']}, {machine['usable_cores']} cores, "
        f"Python {machine['python']}\n{report['command']}",
        fontsize=10,
    )
    figure.savefig(path, dpi=110)
    return f"plot {path}"
