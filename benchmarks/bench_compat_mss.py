"""The mss drop-in against mss 10.2 itself, call for call, on a 1080p Xvfb.

Run: .venv/bin/python -m pytest benchmarks/bench_compat_mss.py --benchmark-only
     --benchmark-group-by=group --benchmark-columns=median,rounds

Each group is one mss call as users write it; the drop-in (``mantis_fast.compat.mss``) is the
subject, ``mss.MSS`` the peer. Both return owned bytes: ``grab`` copies the pixels out of the
shared segment (mss does the same), so the gap is MIT-SHM set-up, conversion and PNG kernels.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mantis_fast import Xvfb
from mantis_fast.compat import mss as dropin

mss = pytest.importorskip("mss")
REGION = {"left": 200, "top": 100, "width": 640, "height": 480}


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(1920, 1080)) as server:
        yield server


@pytest.fixture(params=["mantis_fast_compat_mss", "mss"])
def sct(request: pytest.FixtureRequest, screen: Xvfb):
    module = dropin if request.param.startswith("mantis") else mss
    with module.MSS(display=screen.display) as instance:
        yield instance


def run(benchmark, group: str, fn) -> None:
    benchmark.group = f"mss API: {group}"
    benchmark.pedantic(fn, rounds=40, iterations=1, warmup_rounds=3)


def test_grab_full_screen(benchmark, sct) -> None:
    monitor = sct.monitors[1]
    run(benchmark, "grab(monitors[1]) 1080p", lambda: sct.grab(monitor))


def test_grab_region(benchmark, sct) -> None:
    run(benchmark, "grab 640x480 region", lambda: sct.grab(REGION))


def test_grab_rgb(benchmark, sct) -> None:
    monitor = sct.monitors[1]
    run(benchmark, "grab(monitors[1]).rgb 1080p", lambda: sct.grab(monitor).rgb)


def test_shot_png(benchmark, sct, tmp_path: Path) -> None:
    output = str(tmp_path / "shot.png")
    run(benchmark, "shot() to PNG 1080p", lambda: sct.shot(output=output))


def test_open_grab_close(benchmark, sct, screen: Xvfb) -> None:
    module = type(sct)

    def once() -> None:
        with module(display=screen.display) as fresh:
            fresh.grab(REGION)

    run(benchmark, "MSS() + grab + close", once)
