"""One agent turn on a 1080p Xvfb, broken into its stages, against the classic Python stack.

Groups:

- "agent turn without the model": dispatch one click, capture, crop the working area and resize
  it to 1280x720, draw the overlays (heat + trail + bbox + labels), encode PNG. mantis_fast
  (XTest, MIT-SHM, ``_resize``, ``_overlay``, ``encode``) vs xdotool + mss + Pillow.
- "agent full turn, loopback no-op model": the real ``Engine`` for 10 turns against the
  loopback stub model (HTTP, JSON, base64 image, run-directory writes included); the stage
  medians of those turns are kept in the benchmark's ``extra_info``.

Run: .venv/bin/python -m pytest benchmarks/bench_agent.py --benchmark-only -p no:cacheprovider
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from mantis_fast.agent import AgentConfig, Engine
from mantis_fast.agent.actions import NativeAnnotator
from mantis_fast.agent.parse import parse_model_output
from mantis_fast.geometry.coords import normalized_to_pixels, working_area
from mantis_fast.pixels.encode import encode_png
from mantis_fast.pixels.image import resize
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.agent_stub import StubModel, reply_json

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


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(1920, 1080)) as server:
        app = subprocess.Popen(
            ["python3", "-c", "import tkinter as t; r=t.Tk(); r.geometry('1200x700+300+200');"
             "c=t.Canvas(r,bg='#e8ecf4'); c.pack(fill='both', expand=1);"
             "[c.create_text(60, 30+i*22, anchor='w', text='line %d of some app text' % i)"
             " for i in range(30)]; r.mainloop()"],
            env=server.env(),
        )  # fmt: skip
        try:
            with Capture(server.display) as cap:
                cap.wait_until_stable(3.0, 300)
            yield server
        finally:
            app.terminate()
            app.wait(5)


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
    """004's overlays the straightforward Python way: RGBA layer, rings, alpha composite."""
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
                capture_width=SIZE[0], capture_height=SIZE[1], settle_quiet_ms=0,
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
