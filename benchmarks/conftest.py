"""Benchmark session helpers.

* ``report_as``: tags a benchmark as one member of an operation of the report that
  ``benchmarks/report.py`` builds from ``--benchmark-json`` (``make bench``). The tag goes into the
  benchmark's ``extra_info["report"]``; a tagged test that then skips (a peer not installed) is
  listed under ``"skipped"`` in the JSON, so the report can show it as skipped.
* ``paired_copy``: times an ``np.copyto`` of the subject's frame in the subject's own rounds,
  the yardstick of its memcpy share.
* ``cold``: a ``setup`` that touches ``COLD_BYTES`` of other memory before a round, as an
  agent loop's other stages do between two grabs (so the frame is read from RAM, not cache).
* ``xdotool_click``: one xdotool process per click, the peer of click dispatch and of the loop.
* Machine facts for the JSON (usable cores, platform, library versions) and the command.
* A ratio table per group, printed after pytest-benchmark's own: in each group the fastest
  benchmark whose name mentions "mantis" is the subject; every other member is shown as
  ``peer median / subject median`` (> 1 means mantis_fast is that many times faster). Medians,
  because these machines are shared and noisy.
"""

from __future__ import annotations

import itertools
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import time
from collections import defaultdict
from importlib import metadata

import numpy as np
import pytest

# The operations of the report, in its order. A tag must name one of them.
REPORT_OPERATIONS = (
    "capture 1080p, full frame",
    "capture 1080p, full frame, cold",
    "capture 1080p, full frame, cold, MIT-SHM",
    "capture 1080p, unchanged screen",
    # bench_image.py REPORTED: the sizes models and agent tools ask for.
    *(
        f"resize {case}, BGRX -> RGB"
        for case in (
            "1080p -> 1280x720",
            "1080p -> 1316x728 (qwen_size)",
            "1080p -> 1366x768 (FWXGA)",
            "1920x1200 -> 1280x800 (WXGA)",
            "1600x1200 -> 1024x768 (XGA)",
            "1440p -> 1568x882 (long edge 1568)",
            "1080p -> 1024x576",
        )
    ),
    # bench_image.py RGB_REPORTED: the same from an RGB array (Pillow's, a decoded PNG).
    "resize 1080p -> 1316x728 (qwen_size), RGB -> RGB",
    "PNG encode, 1280x720 screen",
    "scale 1M points, model image -> screen",
    "drift loop flags, 1M steps, window 8",
    "click dispatch",
    "whole loop at 1080p, no-op model",
    "whole loop at 1080p, no-op model, cold",
    "whole loop at 1080p, every step a new page",
    "whole loop at 1080p, every step a new page, cold",
    # bench_miniwob.py: the same oracle decisions on mantis_fast's env and miniwob's own.
    *(
        f"MiniWoB++ {kind}, {task}"
        for task in ("click-test", "click-test-2", "click-button", "enter-text")
        for kind in ("reset", "step", "episode")
    ),
    "MiniWoB++ vector throughput, 8 desktops",
    # bench_env.py: DesktopEnv(ClickTarget) against miniwob's click-test-2 env.
    "env step (policy hits the red target)",
    "env reset",
    "DevTools evaluate round trip",
    # bench_service.py: mantis-fast serve, one request on a warm desktop (no published peer).
    "/v1/cua request, reused desktop (MiniWoB++ oracle, one step)",
    # bench_tools.py: one agent action through the tools against the originals' executors.
    "Claude tool: click + screenshot, 1080p -> FWXGA",
    "Claude tool: type 50 chars + screenshot",
    "Claude tool: scroll 3 + screenshot",
    "Claude tool: screenshot, 1080p -> FWXGA",
    "Claude tool: screenshot, 1920x1200 -> WXGA",
    "OpenAI computer: click + screenshot, 1080p",
    # bench_osworld.py: one OSWorld step through its own client, against its server's path.
    "OSWorld step: click + screenshot, 1080p (PythonController)",
)
# Other memory an agent loop touches between two grabs (the resized image, overlays, PNG
# buffers, the model's work): more than the last-level cache of these machines.
COLD_BYTES = 64 << 20
# subject: mantis_fast; peer: what people use today; reference: np.copyto of the frame (memcpy).
ROLES = ("subject", "peer", "reference")
# Distributions to look a library's version up under, first found wins.
LIBRARIES = {
    "mantis_fast": ("mantis_fast",),
    "numpy": ("numpy",),
    "Pillow": ("pillow",),
    "mss": ("mss",),
    "OpenCV": (
        "opencv-python-headless",
        "opencv-python",
        "opencv-contrib-python-headless",
        "opencv-contrib-python",
    ),
    "pyautogui": ("pyautogui",),
    "miniwob": ("miniwob",),
    "playwright": ("playwright",),
    "matplotlib": ("matplotlib",),
    "pytest-benchmark": ("pytest-benchmark",),
}

#: ``paired_copy`` times its copies in blocks of this many, one block every this many rounds.
PAIRED_BLOCK = 10

_TAG = pytest.StashKey[dict]()
_SKIPPED = pytest.StashKey[list]()
_SEQUENCE = itertools.count()  # members keep the order they were tagged in, skipped ones too


def library_version(name: str) -> str | None:
    """The installed version of a library of ``LIBRARIES`` or of xdotool, without importing it
    (importing pyautogui, for one, opens an X connection)."""
    if name == "xdotool":
        if shutil.which("xdotool") is None:
            return None
        result = subprocess.run(["xdotool", "--version"], capture_output=True, text=True)
        return result.stdout.split()[-1] if result.returncode == 0 and result.stdout else None
    for distribution in LIBRARIES.get(name, (name,)):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


@pytest.fixture
def report_as(request: pytest.FixtureRequest, benchmark):
    """``report_as(operation, role, label, package=None, **facts)`` tags this benchmark.

    Call it before anything that may skip. ``package`` (a ``LIBRARIES`` key, a distribution or
    "xdotool") records the peer's version, which replaces ``{version}`` in ``label``. Facts the
    report reads: ``bytes_moved`` (subject and reference: bytes read + written per call, for the
    memcpy share), ``paired_copy_median_s`` and ``paired_copy_bytes_moved`` (subject: an
    ``np.copyto`` timed in its own rounds, the share's yardstick then; ``paired_copy``),
    ``rate_unit`` (show ``1 / median`` too, e.g. "it/s"), ``note`` (printed under the table)
    ``stage_medians_s`` (the subject's stages, printed as a note) and ``cpu_per_round_s`` (CPU
    seconds per round of each process involved, printed as a note).
    """

    def tag(operation: str, role: str, label: str, *, package: str | None = None, **facts):
        if operation not in REPORT_OPERATIONS or role not in ROLES:
            raise ValueError(f"unknown report operation or role: {operation!r}, {role!r}")
        info = {"operation": operation, "order": REPORT_OPERATIONS.index(operation)}
        if package is not None:
            facts["version"] = library_version(package)
            label = " ".join(label.format(version=facts["version"] or "").split())
        info.update(role=role, label=label, sequence=next(_SEQUENCE), **facts)
        benchmark.extra_info["report"] = info
        request.node.stash[_TAG] = info

    return tag


@pytest.fixture(scope="session")
def cold():
    """A ``benchmark.pedantic`` ``setup`` that reads and writes ``COLD_BYTES`` of other memory,
    evicting the frame from the caches before each round (untimed)."""
    scratch = np.zeros(COLD_BYTES, np.uint8)

    def touch() -> None:
        np.add(scratch, 1, out=scratch)

    return touch


@pytest.fixture
def paired_copy(benchmark):
    """``paired_copy(dst, src)`` -> a ``benchmark.pedantic`` ``setup`` that, before every
    ``PAIRED_BLOCK``-th round, times ``PAIRED_BLOCK`` copies ``np.copyto(dst, src)``. After the
    test, the median of the copies made among the timed rounds goes into the report tag as
    ``paired_copy_median_s`` (and the bytes one copy reads and writes as
    ``paired_copy_bytes_moved``): the memcpy share's yardstick, timed in the same minute as the
    subject. These machines are shared and their memory bandwidth drifts by 2x from one minute
    to the next, while the separate reference test runs minutes away from its subject. Blocks
    rather than one copy per round: a copy and a grab alternating one by one slow each other
    down (each evicts what the other had in cache), blocks run as each runs alone."""
    calls: list[list[float]] = []  # per setup call (warmup rounds first), the copies it timed
    copied: list[int] = []

    def make(dst, src):
        copied.append(2 * src.nbytes)  # read + written

        def setup() -> None:
            timed = []
            if len(calls) % PAIRED_BLOCK == 0:
                for _ in range(PAIRED_BLOCK):
                    start = time.perf_counter()
                    np.copyto(dst, src)
                    timed.append(time.perf_counter() - start)
            calls.append(timed)

        return setup

    yield make
    tag = benchmark.extra_info.get("report")
    if calls and tag is not None and benchmark.stats is not None:
        rounds = benchmark.stats.stats.rounds
        durations = [d for timed in calls[-rounds:] for d in timed]
        tag["paired_copy_median_s"] = statistics.median(durations)
        tag["paired_copy_bytes_moved"] = copied[-1]


@pytest.fixture(params=["click 1", "click --delay 1 1"])
def xdotool_click(request: pytest.FixtureRequest):
    """``(arguments, make)``: one xdotool process per click, ``make(env, x, y)`` returning it.

    As usually typed, ``click`` waits its ``--delay`` (100 ms by default) before the process
    exits; ``--delay 1`` is the tuned form. ``make`` skips the test when xdotool is missing, so
    a test tags its report member first.
    """
    arguments = request.param

    def make(env: dict[str, str], x: int, y: int):
        if shutil.which("xdotool") is None:
            pytest.skip("xdotool not installed")
        argv = ["xdotool", "mousemove", str(x), str(y), *arguments.split()]
        return lambda: subprocess.run(argv, env=env, check=True)

    return arguments, make


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    tag = item.stash.get(_TAG, None)
    if tag is not None and report.skipped and call.when == "call":
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        item.config.stash.setdefault(_SKIPPED, []).append(
            {
                "name": item.name,
                "fullname": item.nodeid,
                "reason": reason.removeprefix("Skipped: "),
                "extra_info": {"report": tag},
            }
        )
    return report


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    machine_info["usable_cores"] = len(usable) if usable else os.cpu_count()
    machine_info["platform"] = platform.platform()
    machine_info["libraries"] = {name: library_version(name) for name in [*LIBRARIES, "xdotool"]}


def pytest_benchmark_update_json(config: pytest.Config, benchmarks, output_json: dict) -> None:
    output_json["command"] = shlex.join(["pytest", *config.invocation_params.args])
    output_json["skipped"] = config.stash.get(_SKIPPED, [])


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
