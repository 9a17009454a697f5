"""Soak: long runs that must leave the process as they found it (``make soak``, not ``make test``).

Each test asserts flat file descriptors, flat RSS after a warm-up, no SysV segment left by this
process, and that every exception that escaped was a ``MantisError``. Each prints its figures
(``-s`` shows them); docs/reliability.md quotes one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import mantis_fast as mf
from mantis_fast.agent import AgentConfig, AgentThread
from tests.support.agent_stub import StubModel, reply_json

pytestmark = pytest.mark.slow

RSS_SLACK_MB = 24.0  # allocator noise; a leak of one frame per iteration is far beyond it


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def own_segments() -> set[int]:
    out = subprocess.run(["ipcs", "-m", "-p"], capture_output=True, text=True, check=True).stdout
    return {
        int(fields[0])
        for fields in (line.split() for line in out.splitlines())
        if len(fields) >= 4 and fields[0].isdigit() and fields[2] == str(os.getpid())
    }


class Ledger:
    """Resources before, after a warm-up, and at the end; the verdicts the soak asserts."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.fds0, self.segments0 = open_fds(), own_segments()
        self.rss_warm = rss_mb()
        self.started = time.monotonic()

    def warmed_up(self) -> None:
        self.rss_warm = rss_mb()

    def check(self, **figures: object) -> None:
        fds, rss, segments = open_fds(), rss_mb(), own_segments() - self.segments0
        report = {
            "soak": self.name,
            "seconds": round(time.monotonic() - self.started, 1),
            **figures,
            "fds": f"{self.fds0} -> {fds}",
            "rss_mb": f"{self.rss_warm:.0f} -> {rss:.0f}",
            "segments_left": len(segments),
        }
        print("\nSOAK " + json.dumps(report))
        assert fds <= self.fds0, report
        assert rss - self.rss_warm < RSS_SLACK_MB, report
        assert not segments, report


@pytest.fixture(scope="module")
def screen() -> Iterator[mf.Xvfb]:
    with mf.Xvfb(size=(640, 480)) as server:
        yield server


def repeat(count: int, body: Callable[[int], None], warm_up: int, ledger: Ledger) -> None:
    for i in range(count):
        body(i)
        if i == warm_up:
            ledger.warmed_up()


def test_ten_thousand_capture_and_input_lifetimes(screen: mf.Xvfb) -> None:
    ledger = Ledger("lifetimes")

    def one(i: int) -> None:
        with mf.Capture(screen.display, track_damage=i % 2 == 0) as cap:
            cap.grab((0, 0, 16, 16))
        with mf.Input(screen.display) as inp:
            inp.move(i % 640, i % 480)

    repeat(10_000, one, warm_up=200, ledger=ledger)
    ledger.check(captures=10_000, inputs=10_000)


@pytest.mark.parametrize("track_damage", [False, True], ids=["grabs", "damage grabs"])
def test_a_hundred_thousand_grabs(screen: mf.Xvfb, track_damage: bool) -> None:
    ledger = Ledger("grabs with damage" if track_damage else "grabs")
    with (
        mf.Capture(screen.display, track_damage=track_damage) as cap,
        mf.Input(screen.display) as inp,
    ):

        def one(i: int) -> None:
            frame = cap.grab()
            assert frame.shape == (480, 640, 4)
            if i % 1000 == 0:
                inp.move(i % 640, 7)  # some damage now and then

        repeat(100_000, one, warm_up=2_000, ledger=ledger)
    ledger.check(grabs=100_000)


def test_four_threads_share_one_capture(screen: mf.Xvfb) -> None:
    ledger = Ledger("4 threads, one Capture, copy=True")
    errors: list[BaseException] = []
    with mf.Capture(screen.display, track_damage=True) as cap:

        def worker(grabs: int) -> None:
            try:
                for _ in range(grabs):
                    frame = cap.grab(copy=True)
                    assert frame.flags.owndata and frame.shape == (480, 640, 4)
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        def run(grabs: int) -> None:
            threads = [threading.Thread(target=worker, args=(grabs,)) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(300)

        run(500)  # warm-up: each thread's malloc arena settles at its working size
        ledger.warmed_up()
        run(5_000)
    assert not errors, errors
    ledger.check(grabs=22_000, threads=4)


ADVERSARIAL = [
    "[" * 5_000 + "]" * 5_000,  # nesting past any recursion limit
    "{" * 200_000,  # a quadratic trap for a naive object search
    json.dumps({"actions": [{"name": "click", "x1": 10**400, "y1": "-1e999"}]}),
    json.dumps({"actions": [{"name": "scroll", "amount": 10**9, "direction": "up"}]}),
    json.dumps({"actions": [{"name": "type", "text": "\u2713" * 20}]}),
    json.dumps({"actions": [{"name": "key", "keys": "nosuchkey+ctrl"}]}),
    json.dumps({"actions": [{"name": "launch_app", "command": "xterm"}]}),
    json.dumps({"observation": {"nested": [1, 2, {"x": None}]}, "actions": "no"}),
    "\x00\ud800 not even text",
]


def test_the_agent_loop_for_1500_turns(screen: mf.Xvfb, tmp_path: Path) -> None:
    turns = 1_500
    rng = np.random.default_rng(0)
    script = []
    for turn in range(turns):
        if turn % 5 == 4:
            script.append(ADVERSARIAL[turn // 5 % len(ADVERSARIAL)])
        else:
            x, y = (int(v) for v in rng.integers(0, 1001, 2))
            script.append(reply_json(f"turn {turn}", [{"name": "click", "x1": x, "y1": y}]))
    with StubModel(script, keep=False) as stub:
        config = AgentConfig.from_mapping(
            {
                "display": screen.display,
                "api_url": stub.url,
                "port": 0,
                "runs_dir": str(tmp_path / "runs"),
                "capture_scale_percent": 50,
                "action_delay_seconds": 0,
                "settle_quiet_ms": 0,
                "settle_timeout_seconds": 0.05,
                "vlm_retry_backoff_seconds": 0,
                "boot_enabled": True,
                "max_turns": turns,
                "log_to_file": False,
            }
        )
        ledger = Ledger("agent loop")
        agent = AgentThread(config)
        agent.start()
        try:
            agent.wait_for(lambda e: e.turn >= 300, timeout=300)  # past the kept results
            ledger.warmed_up()
            agent.wait_for(lambda e: e.phase in ("done", "error", "stopped"), timeout=1_200)
        finally:
            agent.stop()
            engine = agent.join()
    assert engine.phase == "done", engine.error
    assert engine.turn == turns
    ledger.check(turns=engine.turn, model_requests=stub.count)
