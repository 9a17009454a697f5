"""The benchmark report, built from pytest-benchmark's JSON (``make bench`` runs it last):

    python benchmarks/report.py bench-results/pytest-benchmark.json --out bench-results

The benchmarks that ``report_as`` tagged (benchmarks/conftest.py) carry in
``extra_info["report"]`` their operation and its place in the report, their role (subject =
mantis_fast, peer, reference = ``np.copyto`` of the frame), label and facts; this module knows
nothing else about them. Tagged tests that skipped (a peer not installed) are listed under the
JSON's ``"skipped"`` and shown as skipped. It writes into ``--out``:

- ``bench.json``: the machine (CPU model, cores, Python and library versions), the command, and
  for every operation every member's median, minimum and rounds, its ratio and, where a
  reference ran, the share of the memcpy bandwidth mantis_fast reaches;
- ``bench.md``: the ratio table as Markdown (what the README quotes), notes underneath;
- ``bench.png``: speed-up per operation and peer, horizontal bars on a log axis (matplotlib;
  skipped with a message when it is not installed);

and prints the table. A ratio is ``peer median / mantis_fast median``: above 1, mantis_fast is
that many times faster. The memcpy share is the bytes mantis_fast reads + writes per second over
the rate ``np.copyto`` moves them (1.00 = as fast as a memcpy): the rate of the copy the subject
timed in its own rounds (facts ``paired_copy_median_s``, ``paired_copy_bytes_moved``) when it has
one, else the reference's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROLES = ("subject", "peer", "reference")
_TAG_KEYS = {"operation", "order", "role", "label", "sequence"}  # the rest are facts


def build(results: dict[str, Any], source: str | None = None) -> dict[str, Any]:
    """The report (what bench.json holds) from pytest-benchmark's JSON output."""
    found: dict[str, list[tuple[dict, dict]]] = {}
    measured = [(b, None) for b in results.get("benchmarks", [])]
    skipped = [(s, s.get("reason") or "skipped") for s in results.get("skipped", [])]
    for entry, reason in measured + skipped:
        tag = (entry.get("extra_info") or {}).get("report")
        if tag is not None:
            member = {"name": tag["label"], "role": tag["role"], "test": entry.get("fullname")}
            member.update((k, v) for k, v in tag.items() if k not in _TAG_KEYS)
            if reason is not None:
                member["skipped"] = reason
            else:
                stats = entry["stats"]
                member.update(median_s=stats["median"], min_s=stats["min"], rounds=stats["rounds"])
            found.setdefault(tag["operation"], []).append((tag, member))
    operations = []
    for title, tagged in sorted(found.items(), key=lambda item: item[1][0][0]["order"]):
        tagged.sort(key=lambda t: (ROLES.index(t[0]["role"]), t[0].get("sequence", 0)))
        operations.append(_operation(title, [member for _, member in tagged]))
    return {
        "command": results.get("command"),
        "results": source,
        "datetime": results.get("datetime"),
        "ratio": "peer median / mantis_fast median (> 1: mantis_fast is faster)",
        "memcpy_fraction": (
            "bytes mantis_fast reads + writes per second / np.copyto's rate (memcpy_basis "
            "'paired': timed in mantis_fast's own rounds; 'reference': the reference row)"
        ),
        "machine": machine_facts(results.get("machine_info") or {}),
        "operations": operations,
    }


def _operation(title: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    subjects = [m for m in members if m["role"] == "subject"]
    if len(subjects) > 1:
        raise ValueError(f"{title!r} has more than one subject: {[m['test'] for m in subjects]}")
    notes = dict.fromkeys(m["note"] for m in members if "note" in m)  # once each, in order
    op: dict[str, Any] = {"title": title, "members": members, "notes": list(notes)}
    subject = subjects[0] if subjects and "median_s" in subjects[0] else None
    if subject is None:  # skipped or not run: no ratios
        return op
    for member in members:
        if member is not subject and "median_s" in member:
            member["ratio"] = member["median_s"] / subject["median_s"]
    if "bytes_moved" not in subject:
        return op
    reference = next((m for m in members if m["role"] == "reference" and "median_s" in m), None)
    if {"paired_copy_median_s", "paired_copy_bytes_moved"} <= subject.keys():  # own rounds
        copy_rate = subject["paired_copy_bytes_moved"] / subject["paired_copy_median_s"]
        op["memcpy_basis"] = "paired"
    elif reference is not None and "bytes_moved" in reference:
        copy_rate = reference["bytes_moved"] / reference["median_s"]
        op["memcpy_basis"] = "reference"
    else:
        return op
    op["memcpy_fraction"] = subject["bytes_moved"] / subject["median_s"] / copy_rate
    return op


def machine_facts(info: dict[str, Any]) -> dict[str, Any]:
    """CPU, cores, platform, Python and libraries from pytest-benchmark's ``machine_info``
    (``libraries``, ``usable_cores`` and ``platform`` are added by benchmarks/conftest.py)."""
    cpu = info.get("cpu") or {}
    return {
        "cpu_model": cpu.get("brand_raw") or info.get("processor") or info.get("machine") or "?",
        "cores": cpu.get("count"),
        "usable_cores": info.get("usable_cores", cpu.get("count")),
        "platform": info.get("platform") or f"{info.get('system')} {info.get('release')}",
        "python": info.get("python_version"),
        "libraries": info.get("libraries") or {},
    }


# -- rendering ---------------------------------------------------------------------------------


def format_time(seconds: float) -> str:
    """Three significant digits in the largest unit that keeps the number under 1000."""
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        value = float(f"{seconds / scale:.3g}")
        if value < 1000 or unit == "s":
            break
    return f"{value:,g} {unit}"


def format_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x"


def _median(member: dict[str, Any]) -> str:
    text = format_time(member["median_s"])
    unit = member.get("rate_unit")
    return text if unit is None else f"{text} ({1 / member['median_s']:,.1f} {unit})"


def _rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    """(operation, mantis_fast median, peer, peer median, ratio, memcpy share) per peer."""
    rows = []
    for op in report["operations"]:
        subject = next((m for m in op["members"] if m["role"] == "subject"), None)
        if subject is None:
            ours = "not run"
        else:
            ours = "skipped" if "skipped" in subject else _median(subject)
        share = f"{op['memcpy_fraction']:.2f}" if "memcpy_fraction" in op else ""
        first = (op["title"], ours, share)
        for member in op["members"]:
            if member is subject:
                continue
            if "skipped" in member:
                cells = ("skipped", member["skipped"])
            else:
                ratio = member.get("ratio")
                cells = (_median(member), "-" if ratio is None else format_ratio(ratio))
            title, ours, share = first
            rows.append((title, ours, member["name"], *cells, share))
            first = ("", "", "")
    return rows


def _machine_line(report: dict[str, Any]) -> str:
    m = report["machine"]
    libraries = ", ".join(f"{name} {v}" for name, v in m["libraries"].items() if v)
    return (
        f"{m['cpu_model']}, {m['cores']} cores ({m['usable_cores']} usable), {m['platform']}, "
        f"Python {m['python']}" + (f"; {libraries}" if libraries else "")
    )


def _notes(report: dict[str, Any]) -> list[str]:
    notes = []
    if any("memcpy_fraction" in op for op in report["operations"]):
        notes.append(
            "memcpy share: bytes mantis_fast reads + writes per second over np.copyto's rate on "
            "the same frame (1.00 = as fast as a memcpy)"
        )
    for op in report["operations"]:
        if op.get("memcpy_basis") == "paired":
            subject = next(m for m in op["members"] if m["role"] == "subject")
            notes.append(
                f"{op['title']}: memcpy share against np.copyto of the same frame timed in "
                f"blocks between mantis_fast's rounds (median "
                f"{format_time(subject['paired_copy_median_s'])}); the reference row ran alone"
            )
        notes += [f"{op['title']}: {note}" for note in op.get("notes", [])]
        for member in op["members"]:
            if "stage_medians_s" in member:
                stages = member["stage_medians_s"].items()
                medians = ", ".join(f"{name} {format_time(median)}" for name, median in stages)
                who = "mantis_fast" if member["role"] == "subject" else member["name"]
                notes.append(f"{op['title']}: {who} stage medians: {medians}")
            if "cpu_per_round_s" in member:
                used = member["cpu_per_round_s"].items()
                cpu = ", ".join(f"{name} {format_time(seconds)}" for name, seconds in used)
                notes.append(f"{op['title']}: CPU time per round: {cpu}")
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
    for index, op in enumerate(report["operations"]):
        share = op.get("memcpy_fraction")
        extra = "" if share is None else f"; mantis_fast at {share:.2f} of memcpy"
        subject = next((m for m in op["members"] if m["role"] == "subject"), {})
        for member in op["members"]:
            if member["role"] != "peer":
                continue
            labels.append(f"{op['title']}\nvs {member['name']}")
            colours.append(f"C{index % 10}")
            if "ratio" not in member:
                ratios.append(math.nan)
                notes.append(f"skipped: {member['skipped']}" if "skipped" in member else "-")
                continue
            ratios.append(member["ratio"])
            if "rate_unit" in member and "median_s" in subject:
                rates = 1 / subject["median_s"], 1 / member["median_s"]
                extra = f" ({rates[0]:,.0f} vs {rates[1]:,.1f} {member['rate_unit']})"
            notes.append(format_ratio(member["ratio"]) + extra)
            extra = ""
    figure = Figure(figsize=(11, 0.62 * len(labels) + 1.6), layout="constrained")
    axes = figure.add_subplot()
    ys = list(range(len(labels)))[::-1]
    finite = [r for r in ratios if math.isfinite(r)]
    low, high = min([*finite, 0.5]) / 1.6, max([*finite, 2.0]) * 3.5
    widths = [r - 1.0 if math.isfinite(r) else 0.0 for r in ratios]
    axes.barh(ys, widths, left=1.0, color=colours, height=0.7)  # from 1x: faster right, slower left
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    axes.axvline(1.0, color="black", linewidth=1)
    for y, ratio, note in zip(ys, ratios, notes, strict=True):
        x = ratio if math.isfinite(ratio) else 1.0
        axes.text(x * 1.08, y, note, va="center", fontsize=9)
    axes.set_yticks(ys, labels, fontsize=8.5)
    axes.set_xlabel("speed-up: peer median time / mantis_fast median time (log scale; 1 = equal)")
    axes.grid(axis="x", which="both", alpha=0.25)
    machine = report["machine"]
    axes.set_title(
        f"mantis_fast vs peers - {machine['cpu_model']}, {machine['usable_cores']} cores, "
        f"Python {machine['python']}\n{textwrap.fill(str(report['command']), 100)}",
        fontsize=10,
    )
    figure.savefig(path, dpi=110)
    return f"plot {path}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="the file pytest wrote with --benchmark-json")
    parser.add_argument("--out", default="bench-results", help="output directory (%(default)s)")
    args = parser.parse_args(argv)
    report = build(json.loads(Path(args.results).read_text()), source=args.results)
    if not report["operations"]:
        print(f"{args.results}: no benchmark tagged with report_as; nothing to report")
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "bench.md").write_text(format_markdown(report))
    print(format_table(report))
    plot_note = write_plot(report, out / "bench.png")
    print(f"\nwrote {out / 'bench.json'}, {out / 'bench.md'}; {plot_note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
