"""One agent turn on a 1080p Xvfb, broken into its stages, against the classic Python stack.

Groups:

- "agent turn without the model": dispatch one click, capture, crop the working area and resize
  it to 1280x720, draw the overlays (heat + trail + bbox + labels), encode PNG. mantis_fast
  (XTest, MIT-SHM, ``_resize``, ``_overlay``, ``encode``) vs xdotool + mss + Pillow.
- "agent full turn, loopback no-op model": the real ``Engine`` for 10 turns against the
  loopback stub model (HTTP, JSON, base64 image, run-directory writes included); the stage
  medians of those turns are kept in the benchmark's ``extra_info``.
- "whole loop at 1080p, no-op model" (the report's loop operation, ``report_as``): capture,
  resize to 1280x720 RGB, draw the click, encode PNG and click the point mapped back to the
  display, against a full-screen app that redraws its click counter on every click;
  mantis_fast (damage-tracked grab, ``resize(changed_rows=)``, ``PngEncoder``: only what
  changed is redone) vs mss + Pillow + one xdotool process (as typed and with ``--delay 1``);
  "mantis_fast_loop_all_work" is the same loop redoing all of it every step.
- "whole loop at 1080p, every step a new page": the same loops against an app that repaints
  its whole window on every click, the worst case for the incremental path.

Run: .venv/bin/python -m pytest benchmarks/bench_agent.py --benchmark-only -p no:cacheprovider
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

from mantis_fast import (
    Capture,
    Input,
    UIConfig,
    Xvfb,
    annotate,
    encode_png,
    normalized_to_pixels,
    resize,
    scale_brain_to_display,
    working_area,
)
from mantis_fast.agent import AgentConfig, Engine
from mantis_fast.agent.actions import NativeAnnotator
from mantis_fast.agent.parse import parse_model_output
from mantis_fast.pixels.encode import PngEncoder
from tests.support.agent_stub import StubModel, reply_json

GROUP_TURN = "agent turn without the model (1080p -> 1280x720)"
GROUP_ENGINE = "agent full turn, loopback no-op model (1080p -> 1280x720)"
CROP = {"x1": 0, "y1": 0, "x2": 1000, "y2": 1000}
SIZE = (1280, 720)
REPLY = reply_json(
    "clicking the button",
    [{"name": "click", "x1": 420, "y1": 380}, {"name": "drag", "x1": 100, "y1": 100,
                                                "x2": 300, "y2": 200}],
    [{"x1": 350, "y1": 300, "x2": 500, "y2": 450}],
)  # fmt: skip


# The agent-turn groups' app: a 1200x700 window of text lines.
TEXT_APP = (
    "import tkinter as t; r=t.Tk(); r.geometry('1200x700+300+200');"
    "c=t.Canvas(r,bg='#e8ecf4'); c.pack(fill='both', expand=1);"
    "[c.create_text(60, 30+i*22, anchor='w', text='line %d of some app text' % i)"
    " for i in range(30)]; r.mainloop()"
)


@contextlib.contextmanager
def app_screen(source: str, extra_env: dict[str, str] | None = None) -> Iterator[Xvfb]:
    """A 1080p Xvfb showing the Tk app ``source``, settled before the benchmark starts."""
    with Xvfb(size=(1920, 1080)) as server:
        app = subprocess.Popen(
            [sys.executable, "-c", source], env={**server.env(), **(extra_env or {})}
        )
        try:
            with Capture(server.display) as cap:
                cap.wait_until_stable(5.0, 300)
            server.app_pid = app.pid  # type: ignore[attr-defined]  # for cpu_per_round
            yield server
        finally:
            app.terminate()
            app.wait(5)


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with app_screen(TEXT_APP) as server:
        yield server


@pytest.mark.benchmark(group=GROUP_TURN)
def test_mantis_fast_turn(benchmark, screen: Xvfb) -> None:
    output = parse_model_output(REPLY)
    config = AgentConfig()
    annotator = NativeAnnotator(config.ui_config)
    with Capture(screen.display) as cap, Input(screen.display) as pointer:
        area = working_area(cap.size, CROP)
        frame = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
        turn = iter(range(1, 10**9))

        def one_turn() -> bytes:
            pointer.move(*normalized_to_pixels(420, 380, cap.size, crop=CROP))
            resize(cap.grab(), SIZE, crop=area, out=frame)
            image = annotator.annotate(frame, next(turn), output.actions, output.bboxes)
            return encode_png(image)

        png = benchmark(one_turn)
    assert png.startswith(b"\x89PNG")


def pillow_heat(image: Image.Image, points, radius: int) -> Image.Image:
    """The overlays the straightforward Python way: RGBA layer, rings, alpha composite."""
    layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    draw.rectangle((448, 216, 640, 324), fill=(30, 120, 255, 50), outline=(30, 120, 255, 230),
                   width=2)  # fmt: skip
    for x, y in points:
        for fraction, alpha in ((1.0, 40), (0.7, 90), (0.4, 160), (0.2, 215)):
            r = radius * fraction
            draw.ellipse((x - r, y - r, x + r, y + r), fill=(255, 130, 0, alpha))
        draw.text((x + 6, y - 15), "1. click", fill=(255, 255, 255, 255))
    return Image.alpha_composite(image.convert("RGBA"), layer).convert("RGB")


@pytest.mark.benchmark(group=GROUP_TURN)
def test_xdotool_mss_pillow_turn(benchmark, screen: Xvfb) -> None:
    mss = pytest.importorskip("mss")
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool not installed")
    env = screen.env()
    with mss.MSS(display=screen.display) as sct:
        monitor = sct.monitors[1]

        def one_turn() -> bytes:
            subprocess.run(["xdotool", "mousemove", "806", "410"], env=env, check=True)
            shot = sct.grab(monitor)
            image = Image.frombuffer("RGB", shot.size, shot.bgra, "raw", "BGRX")
            image = image.resize(SIZE, Image.Resampling.BOX)
            image = pillow_heat(image, [(538, 274), (128, 72), (384, 144)], 45)
            buffer = io.BytesIO()
            image.save(buffer, "PNG")
            return buffer.getvalue()

        png = benchmark.pedantic(one_turn, rounds=15, warmup_rounds=1)
    assert png.startswith(b"\x89PNG")


@pytest.mark.benchmark(group=GROUP_ENGINE)
def test_mantis_fast_engine_turns(benchmark, screen: Xvfb, tmp_path: Path) -> None:
    turns = 10
    stages: dict[str, list[float]] = {}

    def run() -> Engine:
        with StubModel(default=REPLY) as stub:
            config = AgentConfig(
                display=screen.display, api_url=stub.url, runs_dir=str(tmp_path),
                capture_width=SIZE[0], capture_height=SIZE[1], capture_settle=True,
                settle_quiet_ms=0,
                action_delay_seconds=0, drag_duration_steps=4, drag_step_delay=0,
                boot_enabled=True, boot_vlm_output=REPLY, max_turns=turns, log_to_file=False,
            )  # fmt: skip
            engine = Engine(config)
            asyncio.run(engine.run())
        for result in engine.results:
            for stage, ms in result.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
        return engine

    engine = benchmark.pedantic(run, rounds=3, warmup_rounds=0)
    assert engine.turn == turns and engine.phase == "done"
    medians = {stage: round(statistics.median(v), 3) for stage, v in stages.items()}
    benchmark.extra_info["turns_per_round"] = turns
    benchmark.extra_info["stage_median_ms"] = medians
    print("\nstage medians (ms):", json.dumps(medians))
    if os.environ.get("MANTIS_BENCH_SHOW_RUN"):
        print("run dir:", engine.run_dir)


# -- the whole loop with a no-op model ------------------------------------------------------

LOOP = "whole loop at 1080p, no-op model"
LOOP_NEW_PAGE = "whole loop at 1080p, every step a new page"
ROUNDS = 200  # of each whole-loop benchmark
BRAIN_CLICK = (640, 360)  # what the no-op model answers every turn, on the 1280x720 image
LOOP_NOTE = (
    "capture the screen, resize to 1280x720 RGB, draw the click (mantis_fast: heat disc and "
    "label; peers: one ImageDraw ellipse), encode PNG, click the point mapped back to the "
    "display; the app answers each click by redrawing its click counter"
)
NEW_PAGE_NOTE = (
    "the same loop against an app that repaints its whole 1920x1080 window on every click (the "
    "worst case for incremental work: every row changes)"
)
# A full-screen Tk app that answers every click: the counter line only, or (NEW_PAGE=1) the
# whole window in a new colour with its text moved, like a page load.
CLICK_APP = """
import os, tkinter as t
r = t.Tk(); r.geometry('1920x1080+0+0'); r.overrideredirect(1)
c = t.Canvas(r, bg='#e8ecf4', highlightthickness=0); c.pack(fill='both', expand=1)
lines = [c.create_text(60, 30 + i * 22, anchor='w', text='line %d of some app text' % i)
         for i in range(40)]
counter = c.create_text(1400, 40, anchor='w', text='clicks: 0', font=('DejaVu Sans', 18))
clicks = [0]
colours = ['#e8ecf4', '#f4e8e8', '#e8f4ea', '#f4f1e6']
def clicked(event):
    clicks[0] += 1
    c.itemconfigure(counter, text='clicks: %d' % clicks[0])
    if os.environ.get('NEW_PAGE'):
        c.configure(bg=colours[clicks[0] % 4])
        for i, line in enumerate(lines):
            c.coords(line, 60 + clicks[0] % 7 * 9, 30 + i * 22)
c.bind('<Button-1>', clicked)
r.mainloop()
"""


@pytest.fixture(scope="module", params=[False, True], ids=["counter", "new-page"])
def loop_screen(request: pytest.FixtureRequest) -> Iterator[tuple[str, Xvfb]]:
    with app_screen(CLICK_APP, {"NEW_PAGE": "1"} if request.param else None) as server:
        yield (LOOP_NEW_PAGE if request.param else LOOP), server


@pytest.fixture(params=["warm", "cold"])
def loop_round(request: pytest.FixtureRequest, cold):
    """(group suffix, pedantic setup): warm, or cold (``COLD_BYTES`` of other memory touched
    before every round, as a model's own work between two steps would)."""
    return ("", None) if request.param == "warm" else (", cold", cold)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuPerRound:
    """CPU seconds per benchmark round of the X server, the app and this loop (its threads
    included; an untimed ``setup``'s own work left out): what the two cores were asked to do.
    ``pedantic(**meter.wrap(setup))`` inside ``with meter:``; then ``meter.per_round``."""

    def __init__(self, screen: Xvfb, rounds: int) -> None:
        self.who = {"X server": screen.pid, "app": screen.app_pid}  # type: ignore[attr-defined]
        self.rounds = rounds
        self.setup_s = 0.0
        self.per_round: dict[str, float] = {}

    def wrap(self, setup: Any) -> dict[str, Any]:
        if setup is None:
            return {"setup": None}

        def timed_setup() -> None:
            start = time.process_time()
            setup()
            self.setup_s += time.process_time() - start

        return {"setup": timed_setup}

    def __enter__(self) -> CpuPerRound:
        self.before = {name: cpu_seconds(pid) for name, pid in self.who.items()}
        self.mine = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        used = {name: cpu_seconds(pid) - self.before[name] for name, pid in self.who.items()}
        used["loop"] = time.process_time() - self.mine - self.setup_s
        self.per_round = {name: seconds / self.rounds for name, seconds in used.items()}


def test_mantis_fast_loop(benchmark, report_as, loop_screen, loop_round) -> None:
    group, screen = loop_screen
    suffix, setup = loop_round
    group += suffix
    benchmark.group = group
    stages: dict[str, list[float]] = {
        stage: [] for stage in ("capture+resize", "annotate", "encode", "dispatch")
    }
    actions = [{"name": "click", "x1": BRAIN_CLICK[0], "y1": BRAIN_CLICK[1]}]
    ui = UIConfig()
    model_image = np.empty((SIZE[1], SIZE[0], 3), np.uint8)  # the screen at the model's size
    annotated = np.empty_like(model_image)  # what the model is sent: that, with the overlays
    encoder = PngEncoder()
    clock = time.perf_counter
    with Capture(screen.display, track_damage=True) as cap, Input(screen.display) as pointer:
        target = scale_brain_to_display(*BRAIN_CLICK, SIZE, cap.size)

        def loop() -> bytes:  # a clock read between stages (~0.1 us each) for their medians
            t0 = clock()
            # Read once: the rows DAMAGE reports changed are resized straight from the Xvfb
            # framebuffer, under the server grab (no frame copy in between).
            cap.grab_resized(SIZE, out=model_image)
            t1 = clock()
            np.copyto(annotated, model_image)
            annotate(annotated, actions, ui_config=ui)
            t2 = clock()
            png = encoder.encode(annotated)  # re-deflates only the row bands that changed
            t3 = clock()
            pointer.click(*target)
            t4 = clock()
            ticks = (t0, t1, t2, t3, t4)
            for samples, start, end in zip(stages.values(), ticks, ticks[1:], strict=False):
                samples.append(end - start)
            return png

        with CpuPerRound(screen, ROUNDS) as meter:
            png = benchmark.pedantic(loop, **meter.wrap(setup), rounds=ROUNDS, warmup_rounds=0)
    assert png.startswith(b"\x89PNG")
    report_as(
        group,
        "subject",
        "mantis_fast: damage-tracked grab_resized (read once), annotate, PngEncoder, XTest click",
        rate_unit="it/s",
        note=NEW_PAGE_NOTE if group.startswith(LOOP_NEW_PAGE) else LOOP_NOTE,
        stage_medians_s={stage: statistics.median(v) for stage, v in stages.items()},
        cpu_per_round_s=meter.per_round,
    )


def test_mantis_fast_loop_copy_then_resize(benchmark, loop_screen, loop_round) -> None:
    """The subject's loop as it was before read-once: the grab copies the changed rows out of
    the framebuffer, then the resize reads that copy (the screen read twice)."""
    group, screen = loop_screen
    suffix, setup = loop_round
    benchmark.group = group + suffix
    actions = [{"name": "click", "x1": BRAIN_CLICK[0], "y1": BRAIN_CLICK[1]}]
    ui = UIConfig()
    model_image = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
    annotated = np.empty_like(model_image)
    encoder = PngEncoder()
    with Capture(screen.display, track_damage=True) as cap, Input(screen.display) as pointer:
        target = scale_brain_to_display(*BRAIN_CLICK, SIZE, cap.size)

        def loop() -> bytes:
            frame = cap.grab()
            resize(frame, SIZE, out=model_image, changed_rows=cap.changed_rows)
            np.copyto(annotated, model_image)
            annotate(annotated, actions, ui_config=ui)
            png = encoder.encode(annotated)
            pointer.click(*target)
            return png

        png = benchmark.pedantic(loop, setup=setup, rounds=200, warmup_rounds=3)
    assert png.startswith(b"\x89PNG")


def test_mantis_fast_loop_all_work(benchmark, loop_screen) -> None:
    """The same loop redoing everything every step: full grab, resize and encode_png."""
    group, screen = loop_screen
    benchmark.group = group
    actions = [{"name": "click", "x1": BRAIN_CLICK[0], "y1": BRAIN_CLICK[1]}]
    ui = UIConfig()
    image = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
    with Capture(screen.display) as cap, Input(screen.display) as pointer:
        target = scale_brain_to_display(*BRAIN_CLICK, SIZE, cap.size)

        def loop() -> bytes:
            resize(cap.grab(), SIZE, out=image)
            annotate(image, actions, ui_config=ui)
            png = encode_png(image)
            pointer.click(*target)
            return png

        png = benchmark.pedantic(loop, rounds=200, warmup_rounds=3)
    assert png.startswith(b"\x89PNG")


def test_mss_pillow_xdotool_loop(
    benchmark, report_as, loop_screen, loop_round, xdotool_click
) -> None:
    group, screen = loop_screen
    suffix, setup = loop_round
    group += suffix
    benchmark.group = group
    arguments, make = xdotool_click
    report_as(group, "peer", f"mss + Pillow + xdotool {arguments}", rate_unit="it/s")
    mss = pytest.importorskip("mss")
    click = make(screen.env(), *scale_brain_to_display(*BRAIN_CLICK, SIZE, (1920, 1080)))
    bx, by = BRAIN_CLICK
    radius = UIConfig().executed_heat.radius_scale * max(SIZE)
    with mss.MSS(display=screen.display) as sct:
        monitor = sct.monitors[1]

        def loop() -> bytes:
            shot = sct.grab(monitor)
            image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
            image = image.resize(SIZE, Image.Resampling.BOX)
            disc = (bx - radius, by - radius, bx + radius, by + radius)
            ImageDraw.Draw(image).ellipse(disc, fill=(255, 130, 0))
            buffer = io.BytesIO()
            image.save(buffer, "PNG")
            click()
            return buffer.getvalue()

        png = benchmark.pedantic(loop, setup=setup, rounds=10, warmup_rounds=1)
    assert png.startswith(b"\x89PNG")
