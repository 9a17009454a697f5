"""``make demo``: the whole perception-action loop, on its own Xvfb, with nothing to configure.

A real Tk app (``mantis_fast.demo.app``) shows red targets at random places on a 1920x1080
screen. ``GymRunner`` drives a local stand-in for a model (``mantis_fast.demo.brain``) that sees
only the *resized* image (1280x720 by default) and clicks in its own image coordinates; the env
maps them back to the screen by the coordinate contract (``round(x * W / w)``, half to even).
The app reports every hit and miss; a single miss fails the demo.
"""

from __future__ import annotations

import json
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mantis_fast.demo.brain import TargetBrain
from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym import GymRunner, X11GymEnv

__all__ = ["run_demo"]

SCREEN = (1920, 1080)
STAGES = ("capture", "resize", "find", "annotate", "encode", "dispatch", "settle")


class _App:
    """The target app as a child process; its JSON events arrive on a queue."""

    def __init__(self, display: str, seed: int) -> None:
        import os

        env = {**os.environ, "DISPLAY": display}
        argv = [sys.executable, "-m", "mantis_fast.demo.app", "--seed", str(seed)]
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if (
                    self.events.get(timeout=max(0.0, deadline - time.monotonic()))["type"]
                    == "ready"
                ):
                    return
            except queue.Empty:
                break
        self.close()
        raise AppError("the demo target app did not start within 20 s")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.put(json.loads(line))

    def drain(self) -> list[dict[str, Any]]:
        time.sleep(0.2)
        out = []
        while not self.events.empty():
            out.append(self.events.get())
        return out

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=5)
        self._reader.join(timeout=5)  # its output ends with the app
        if self.process.stdout is not None:
            self.process.stdout.close()


def _next_run_dir(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name[5:]) for p in out.glob("demo_*") if p.name[5:].isdigit()]
    run_dir = out / f"demo_{max(numbers, default=0) + 1:04d}"
    run_dir.mkdir()
    return run_dir


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3 if values else float("nan")


def run_demo(
    targets: int = 20,
    out: str | Path = "runs",
    brain_size: tuple[int, int] = (1280, 720),
    seed: int = 0,
) -> int:
    """Run the demo; returns the process exit status (0 only when every target was hit)."""
    if not (isinstance(targets, int) and targets >= 1):
        raise InvalidInputError(f"targets must be an integer >= 1, got {targets!r}")
    run_dir = _next_run_dir(Path(out))
    print(f"mantis_fast demo: {targets} targets on a private {SCREEN[0]}x{SCREEN[1]} Xvfb, "
          f"brain sees {brain_size[0]}x{brain_size[1]}")  # fmt: skip
    with X11GymEnv(
        viewport=SCREEN, settle_time=1.0, quiet_ms=30, observation_size=brain_size
    ) as env:
        print(f"capture: {env.capture.backend} ({env.capture.backend_reason}); input: XTest")
        app = _App(env.display, seed)
        try:
            brain = TargetBrain(brain_size, run_dir, targets)
            runner = GymRunner(env, brain, max_steps=2 * targets + 5)
            started = time.perf_counter()
            episode = runner.run("click every red target")
            elapsed = time.perf_counter() - started
        finally:
            events = app.drain()
            app.close()
    hits = [e for e in events if e["type"] == "hit"]
    misses = [e for e in events if e["type"] == "miss"]
    steps = [h for h in episode.history if "timings" in h]
    env_timings = {s: [h["timings"][s] for h in steps] for s in ("capture", "dispatch", "settle")}
    brain_timings = {
        s: [t[s] for t in brain.timings] for s in ("resize", "find", "annotate", "encode")
    }
    timings = {**env_timings, **brain_timings}
    median_ms = {s: _median_ms(timings[s]) for s in STAGES}
    rate = episode.steps / elapsed
    summary = {
        "targets": targets,
        "hits": len(hits),
        "misses": len(misses),
        "steps": episode.steps,
        "termination_reason": episode.termination_reason,
        "seconds": elapsed,
        "iterations_per_s": rate,
        "median_ms": median_ms,
        "brain_size": list(brain_size),
        "screen": list(SCREEN),
    }
    active_ms = sum(v for s, v in median_ms.items() if s != "settle")
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))

    reason, steps_run = episode.termination_reason, episode.steps
    print(f"\nhits {len(hits)}/{targets}, misses {len(misses)}; {reason!r} after {steps_run} steps")
    print(f"{'stage':<10}{'median ms':>10}")
    for stage in STAGES:
        print(f"{stage:<10}{median_ms[stage]:>10.2f}")
    print(f"loop: {rate:.1f} iterations/s including the wait for the app to redraw;")
    print(
        f"      {active_ms:.1f} ms of work per step without it ({1e3 / active_ms:.0f} iterations/s)"
    )
    print(f"run directory: {run_dir} (annotated frames, events.jsonl, summary.json)")
    ok = len(hits) == targets and not misses
    print("DEMO PASSED: every target hit" if ok else "DEMO FAILED: not every target was hit")
    return 0 if ok else 1
