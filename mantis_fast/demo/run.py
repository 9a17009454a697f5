"""``make demo``: the whole perception-action loop, on its own Xvfb, with nothing to configure.

A real Tk app (``mantis_fast.demo.app``, run by the ``ClickTarget`` task) shows red targets at
random places on a 1920x1080 screen. The package's one loop (``Runner``) drives a
``DesktopEnv`` and a local stand-in for a model (``mantis_fast.demo.brain``) that sees only the
*resized* image (1280x720 by default) and clicks in its own image coordinates; the env maps
them back to the screen by the coordinate contract (``round(x * W / w)``, half to even). The
app reports every hit and miss; a single miss fails the demo.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from mantis_fast.demo.brain import TargetBrain
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.desktop import DesktopEnv
from mantis_fast.gym.runner import EpisodeResult, Runner
from mantis_fast.gym.tasks import ClickTarget

__all__ = ["run_demo"]

SCREEN = (1920, 1080)
STAGES = ("capture", "resize", "find", "annotate", "encode", "dispatch", "settle")


def _events(episode: EpisodeResult) -> list[dict[str, Any]]:
    """Each click's verdict, from the task's counts in the steps' infos: the screen pixel the
    click landed on and the target on screen after it (after a hit, the next one)."""
    events, hits, misses = [], 0, 0
    for record in episode.history:
        info = record.get("info", {})
        if "hits" not in info:
            continue
        for kind, count in (("hit", info["hits"] - hits), ("miss", info["misses"] - misses)):
            events += [{"type": kind, "step": record["step"], "click": info.get("dispatched"),
                        "target": info.get("target")}] * count  # fmt: skip
        hits, misses = info["hits"], info["misses"]
    return events


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
    # The runner decides on loops (the env's own stop set past its widest window).
    task = ClickTarget(targets=targets)
    with DesktopEnv(task, viewport=SCREEN, observation_size=brain_size, settle_time=1.0,
                    quiet_ms=30, hard_loop_window=32) as env:  # fmt: skip
        capture = env.desktop.capture
        print(f"capture: {capture.backend} ({capture.backend_reason}); input: XTest")
        brain = TargetBrain(brain_size, run_dir, targets)
        runner = Runner(env=env, brain=brain, max_steps=2 * targets + 5)
        started = time.perf_counter()
        episode = runner.run("click every red target", options={"app_seed": seed})
        elapsed = time.perf_counter() - started
    events = _events(episode)
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
