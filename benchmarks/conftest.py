"""Benchmark session helpers: a ratio table per group, printed after pytest-benchmark's own.

In each group the fastest benchmark whose name mentions "mantis" is the subject; every other
member is shown as ``peer median / subject median`` (> 1 means mantis_fast is that many times
faster). Medians, because these machines are shared and noisy.
"""

from __future__ import annotations

from collections import defaultdict

import pytest


def _median(bench) -> float:
    return bench.stats.median if hasattr(bench.stats, "median") else bench.stats["median"]


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups = defaultdict(list)
    for bench in session.benchmarks:
        if bench.stats is not None:
            groups[bench.group or "(no group)"].append(bench)
    write = terminalreporter.write_line
    terminalreporter.section("median ratios (peer / mantis_fast)")
    for group in sorted(groups):
        members = groups[group]
        subjects = [b for b in members if "mantis" in b.name]
        if not subjects:
            continue
        subject = min(subjects, key=_median)
        base = _median(subject)
        write(f"{group}:  {subject.name} median {base * 1e6:,.1f} us")
        for bench in sorted(members, key=_median):
            if bench is subject:
                continue
            median = _median(bench)
            write(f"    {bench.name:<60} {median * 1e6:>12,.1f} us   x{median / base:,.2f}")
