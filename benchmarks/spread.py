"""Run-to-run spread: several reports of ``make bench`` in one table.

Run: .venv/bin/python benchmarks/spread.py RUN1/bench.json RUN2/bench.json ... [--out FILE]

Each ``bench.json`` is what ``benchmarks/report.py`` wrote for one ``make bench``. For every
operation and member, the table gives the median over the runs of that member's median, and the
range (lowest .. highest) the runs spread over; the ratio column is the median of the per-run
ratios (each run's peer median over the same run's mantis_fast median: a ratio is only
meaningful within one run, so ratios are never formed across runs). The first peer of an
operation (the one the README quotes) is shown; ``--all-peers`` shows every member.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # run as a script, benchmarks/ is on the path; imported, it is the package
    from report import format_time
except ImportError:
    from benchmarks.report import format_time

__all__ = ["combine", "format_spread"]


def combine(reports: Sequence[dict[str, Any]], all_peers: bool = False) -> list[dict[str, Any]]:
    """One row per operation (and peer): the subject's and the peer's medians over the runs,
    their ranges, and the per-run ratios; operations in the first report's order, then any
    the later reports add."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for report in reports:
        for operation in report["operations"]:
            members = operation["members"]
            subject = next((m for m in members if m["role"] == "subject"), None)
            peers = [m for m in members if m["role"] == "peer" and "median_s" in m]
            if subject is None or "median_s" not in subject:
                continue
            for peer in peers if all_peers else peers[:1]:
                row = rows.setdefault(
                    (operation["title"], peer["name"]),
                    {"operation": operation["title"], "subject": [], "peer_name": peer["name"],
                     "peer": [], "ratio": []},
                )  # fmt: skip
                row["subject"].append(subject["median_s"])
                row["peer"].append(peer["median_s"])
                row["ratio"].append(peer["median_s"] / subject["median_s"])
    return list(rows.values())


def _cell(values: list[float], fmt: Any) -> str:
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} ({fmt(min(values))} .. {fmt(max(values))})"


def format_spread(rows: list[dict[str, Any]], runs: int) -> str:
    lines = [
        f"Medians over {runs} runs of `make bench`, each run's median (range: lowest .. highest"
        " run); ratio: the median of the per-run ratios.",
        "",
        "| operation | mantis_fast | peer | peer median | ratio | runs |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        ratio = _cell(row["ratio"], lambda r: f"{r:.3g}x")
        lines.append(
            f"| {row['operation']} | {_cell(row['subject'], format_time)} | {row['peer_name']} "
            f"| {_cell(row['peer'], format_time)} | {ratio} | {len(row['ratio'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="bench.json files of report.py")
    parser.add_argument("--all-peers", action="store_true", help="every peer, not the first")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text()) for path in args.reports]
    table = format_spread(combine(reports, args.all_peers), len(reports))
    print(table, end="")
    if args.out is not None:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
