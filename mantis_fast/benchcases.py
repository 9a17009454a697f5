"""The operations ``mantis-fast bench`` times: each stage of the agent loop and its usual peers.

=================  ===========================================  ================================
operation          mantis_fast                                  peers (and references)
=================  ===========================================  ================================
capture            ``Capture.grab()`` (zero-copy MIT-SHM)       mss ``MSS().grab``,
                                                                ``PIL.ImageGrab.grab``,
                                                                ``np.copyto`` of a frame (limit)
unchanged screen   ``Capture(track_damage=True).grab()``        mss ``MSS().grab``
resize             ``resize`` 1080p -> 1280x720, BGRX -> RGB    Pillow BGRX + BOX, OpenCV
                                                                INTER_AREA + cvtColor (1 thread),
                                                                ``np.copyto`` of a frame (limit)
PNG encode         ``encode_png`` of the 1280x720 image         Pillow ``save`` (defaults)
click dispatch     ``Input.click`` (XTest)                      an ``xdotool`` process, pyautogui
coordinates        ``scale_points``, 1M points                  the numpy expression
drift loops        ``drift_loop_flags``, 1M steps               the pure-Python detector
whole loop         capture, resize, annotate, encode, click     mss + Pillow + xdotool
=================  ===========================================  ================================

All of them run on one private Xvfb showing a painted application screen (text, panels, a
photo), on the same inputs. Results are checked to agree before they are reported (the same
pixels as mss and PIL.ImageGrab, a lossless PNG, bit-exact coordinates and loop flags).
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from mantis_fast.benchtiming import (
    Effort,
    Operation,
    Skipped,
    make_member,
    package_version,
    require,
    time_members,
)
from mantis_fast.errors import MantisError
from mantis_fast.geometry.coords import scale_brain_to_display, scale_points
from mantis_fast.loops.trajectory import drift_loop_flags
from mantis_fast.pixels.encode import PNG_DEFLATE, encode_png
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.overlay import UIConfig, annotate
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.connection import open_display
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb

__all__ = ["OPERATIONS", "SCREEN", "Rig", "paint_root", "python_drift_flags", "screen_image"]

SCREEN = (1920, 1080)
BRAIN = (1280, 720)
POINTS = 1_000_000
STEPS = 1_000_000
WINDOW = 8  # the runner's hard loop window
TOL = 9.0  # compute_click_tol_px((1920, 1080))


# -- the screen ----------------------------------------------------------------------------

_WORDS = (
    "agent",
    "window",
    "submit",
    "report",
    "settings",
    "search",
    "invoice",
    "profile",
    "upload",
    "the",
    "and",
    "of",
    "quarterly",
    "results",
    "draft",
    "review",
    "calendar",
    "export",
    "team",
)


def screen_image(size: tuple[int, int] = SCREEN, seed: int = 0) -> np.ndarray:
    """A deterministic application screen as uint8 (H, W, 4) BGRX: a desktop, a mail-like window
    with a title bar, a sidebar, lines of anti-aliased text, buttons and a photo."""
    width, height = size
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", size, (58, 110, 165))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(15)
    left, top, right, bottom = width // 16, height // 14, width - width // 16, height - height // 9
    draw.rectangle((left, top, right, bottom), fill=(247, 247, 249), outline=(30, 30, 30))
    draw.rectangle((left, top, right, top + 34), fill=(48, 52, 60))
    draw.text((left + 14, top + 8), "Inbox - mantis mail", fill=(235, 235, 235), font=font)
    draw.rectangle((left, top + 34, left + 250, bottom), fill=(228, 231, 238))
    for i in range(22):
        draw.text(
            (left + 20, top + 56 + 30 * i),
            " ".join(rng.choice(_WORDS, 2)),
            font=font,
            fill=(40, 40, 48),
        )
    photo = (right - 420, top + 60, right - 30, top + 330)
    for row in range(38):
        y = top + 60 + 24 * row
        if y > bottom - 40:
            break
        end = photo[0] - 30 if y < photo[3] + 10 else right - 40
        line = " ".join(rng.choice(_WORDS, 40))
        while " " in line and font.getlength(line) > end - left - 290:
            line = line.rsplit(" ", 1)[0]
        draw.text((left + 280, y), line, fill=(28, 28, 32), font=font)
    for i, colour in enumerate([(66, 139, 202), (92, 184, 92), (217, 83, 79)]):
        x = left + 280 + 150 * i
        draw.rounded_rectangle((x, bottom - 34, x + 130, bottom - 8), 6, fill=colour)
        draw.text((x + 30, bottom - 29), _WORDS[i + 1], fill=(255, 255, 255), font=font)
    draw.rectangle((0, height - 40, width, height), fill=(30, 32, 38))
    pixels = np.array(image)
    ph, pw = photo[3] - photo[1], photo[2] - photo[0]
    yy, xx = np.mgrid[0:ph, 0:pw]
    scene = np.stack([120 + 90 * np.sin(xx / 37.0), 140 + 60 * np.cos(yy / 23.0), 90 + xx * 0.2])
    noisy = scene.transpose(1, 2, 0) + rng.normal(0, 6, (ph, pw, 3))
    pixels[photo[1] : photo[3], photo[0] : photo[2]] = np.clip(noisy, 0, 255).astype(np.uint8)
    bgrx = np.zeros((height, width, 4), np.uint8)
    bgrx[..., :3] = pixels[..., ::-1]
    return bgrx


def paint_root(display: str, bgrx: np.ndarray) -> None:
    """Put a BGRX image on the root window (in bands under the core request limit)."""
    from Xlib import X

    xdisplay = open_display(display)
    try:
        root = xdisplay.screen().root
        gc = root.create_gc()
        height, width = bgrx.shape[:2]
        rows = max(1, 200_000 // (width * 4))
        for y in range(0, height, rows):
            band = np.ascontiguousarray(bgrx[y : y + rows])
            root.put_image(gc, 0, y, width, band.shape[0], X.ZPixmap, 24, 0, band.tobytes())
        xdisplay.sync()
    finally:
        xdisplay.close()


# -- peers that need care ------------------------------------------------------------------


XDOTOOL_AS_TYPED = "xdotool mousemove X Y click 1"
XDOTOOL_NO_PAUSE = "xdotool mousemove X Y click --delay 1 1"


def _xdotool(env: dict[str, str], x: int, y: int, command: str) -> Callable[[], Any]:
    """One xdotool process per click. As usually typed, ``click`` then waits its ``--delay``
    (100 ms by default) before the process exits; ``--delay 1`` is the tuned form."""
    if shutil.which("xdotool") is None:
        raise Skipped("xdotool not installed")
    argv = command.replace("X Y", f"{x} {y}").split()
    return lambda: subprocess.run(argv, env=env, check=True)


def _pyautogui(display: str):
    """pyautogui, bound to our display (it opens its connection once, at import)."""
    if "pyautogui" not in sys.modules:
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = display
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its import leaks pipes (ResourceWarning)
                import pyautogui
        except ImportError:
            raise Skipped("pyautogui not installed") from None
        except Exception as exc:  # a broken install fails at import in many ways
            raise Skipped(f"pyautogui not usable: {exc!r}") from None
        finally:
            if previous is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = previous
    pyautogui = sys.modules["pyautogui"]
    bound = sys.modules["pyautogui._pyautogui_x11"]._display.get_display_name()
    if bound != display:
        raise Skipped(f"pyautogui is bound to display {bound}, not {display}")
    pyautogui.PAUSE = 0  # its default sleeps 0.1 s after every call
    pyautogui.FAILSAFE = False
    return pyautogui


@contextmanager
def _opencv_one_thread() -> Iterator[Any]:
    try:
        import cv2
    except ImportError:
        yield None
        return
    previous = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        yield cv2
    finally:
        cv2.setNumThreads(previous)


def _copy(src: np.ndarray) -> Callable[[], int]:
    """np.copyto of a frame; returns the bytes it moved (read + written)."""
    dst = np.empty_like(src)

    def copy() -> int:
        np.copyto(dst, src)
        return 2 * src.nbytes

    return copy


def _pillow_png(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return buffer.getvalue()


# -- the operations --------------------------------------------------------------------------


@dataclass
class Rig:
    """What every operation shares: the server, one capture, the screen as captured."""

    server: Xvfb
    cap: Capture
    frame: np.ndarray  # an owned copy of the captured screen, BGRX
    effort: Effort
    stack: ExitStack  # closes peers' connections before the server stops

    @property
    def display(self) -> str:
        return self.server.display

    def mss_grab(self) -> Callable[[], Any]:
        mss = require("mss", "mss")
        sct = self.stack.enter_context(mss.MSS(display=self.display))
        monitor = sct.monitors[1]
        return lambda: sct.grab(monitor)


def _mss_name() -> str:
    return f"mss {package_version('mss') or ''} MSS().grab".replace("  ", " ")


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise MantisError(f"benchmark results disagree: {what}")


def _mss_pixels(shot: Any) -> np.ndarray:
    return np.frombuffer(shot.raw, np.uint8).reshape(shot.height, shot.width, 4)[..., :3]


def bench_capture(rig: Rig) -> Operation:
    def imagegrab() -> Callable[[], Any]:
        image_grab = require("PIL.ImageGrab", "PIL.ImageGrab")
        return lambda: image_grab.grab(xdisplay=rig.display)

    op = Operation(
        "capture",
        "capture 1080p, full frame",
        [
            make_member("mantis_fast Capture.grab() (zero-copy)", "subject", lambda: rig.cap.grab),
            make_member(_mss_name(), "peer", rig.mss_grab),
            make_member("PIL.ImageGrab.grab", "peer", imagegrab),
            make_member("np.copyto of the frame (memcpy)", "reference", lambda: _copy(rig.frame)),
        ],
        bandwidth_bytes=2 * rig.frame.nbytes,
    )
    time_members(op.members, rig.effort)
    _check(np.array_equal(op.subject.result, rig.frame), "capture changed between grabs")
    mss, grab = op.members[1], op.members[2]
    if mss.skipped is None:
        _check(np.array_equal(_mss_pixels(mss.result), rig.frame[..., :3]), "mss vs mantis_fast")
    if grab.skipped is None:
        _check(np.array_equal(np.asarray(grab.result), rig.frame[..., 2::-1]), "PIL.ImageGrab")
    return op


def bench_unchanged(rig: Rig) -> Operation:
    tracked = rig.stack.enter_context(Capture(rig.display, track_damage=True))
    tracked.grab()
    op = Operation(
        "capture_unchanged",
        "capture 1080p, unchanged screen",
        [
            make_member(
                "mantis_fast Capture(track_damage=True).grab()", "subject", lambda: tracked.grab
            ),
            make_member(_mss_name(), "peer", rig.mss_grab),
        ],
    )
    time_members(op.members, rig.effort)
    _check(np.array_equal(op.subject.result, rig.frame), "damage-tracked frame")
    op.facts["tracking_damage"] = tracked.tracking_damage
    return op


def bench_resize(rig: Rig) -> Operation:
    frame, height = rig.frame, SCREEN[1]
    out = np.empty((BRAIN[1], BRAIN[0], 3), np.uint8)

    def pillow() -> Callable[[], Any]:
        return lambda: Image.frombuffer("RGB", SCREEN, frame, "raw", "BGRX", 0, 1).resize(
            BRAIN, Image.Resampling.BOX
        )

    with _opencv_one_thread() as cv2:

        def opencv() -> Callable[[], Any]:
            if cv2 is None:
                raise Skipped("OpenCV not installed")
            area, to_rgb = cv2.INTER_AREA, cv2.COLOR_BGRA2RGB
            return lambda: cv2.cvtColor(cv2.resize(frame, BRAIN, interpolation=area), to_rgb)

        op = Operation(
            "resize",
            f"resize {height}p -> {BRAIN[0]}x{BRAIN[1]}, BGRX -> RGB",
            [
                make_member(
                    "mantis_fast resize (area, 1 thread)",
                    "subject",
                    lambda: lambda: resize(frame, BRAIN, out=out),
                ),
                make_member("Pillow frombuffer BGRX + resize BOX", "peer", pillow),
                make_member("OpenCV INTER_AREA + cvtColor (1 thread)", "peer", opencv),
                make_member("np.copyto of the frame (memcpy)", "reference", lambda: _copy(frame)),
            ],
            bandwidth_bytes=frame.nbytes + out.nbytes,
        )
        time_members(op.members, rig.effort)
    # The same picture. OpenCV's INTER_AREA is an area average too: within 1 level. Pillow's BOX
    # weighs whole source pixels at a 1.5 ratio (mean |difference| ~4.7 levels on this screen),
    # but a picture off by one row or with swapped channels is more than 10 levels away.
    pillow_result, opencv_result = op.members[1], op.members[2]
    if pillow_result.skipped is None:
        diff = np.abs(np.asarray(pillow_result.result).astype(np.int16) - out)
        _check(diff.mean() < 7, f"resize vs Pillow: mean difference {diff.mean():.1f}")
    if opencv_result.skipped is None:
        diff = np.abs(opencv_result.result.astype(np.int16) - out)
        _check(diff.max() <= 1, f"resize vs OpenCV: max difference {diff.max()}")
    return op


def bench_png(rig: Rig) -> Operation:
    rgb = resize(rig.frame, BRAIN)
    op = Operation(
        "png",
        f"PNG encode, {BRAIN[0]}x{BRAIN[1]} screen",
        [
            make_member(
                f"mantis_fast encode_png ({PNG_DEFLATE})",
                "subject",
                lambda: lambda: encode_png(rgb),
            ),
            make_member("Pillow save PNG (defaults)", "peer", lambda: lambda: _pillow_png(rgb)),
        ],
    )
    time_members(op.members, rig.effort)
    decoded = np.asarray(Image.open(io.BytesIO(op.subject.result)))
    _check(np.array_equal(decoded, rgb), "PNG round trip")
    op.facts["png_bytes"] = {m.name: len(m.result) for m in op.members if m.skipped is None}
    return op


def bench_dispatch(rig: Rig) -> Operation:
    pointer = rig.stack.enter_context(Input(rig.display))

    def pyautogui() -> Callable[[], Any]:
        module = _pyautogui(rig.display)
        return lambda: module.click(640, 360)

    op = Operation(
        "dispatch",
        "click dispatch",
        [
            make_member(
                "mantis_fast Input.click (XTest)",
                "subject",
                lambda: lambda: pointer.click(640, 360),
            ),
            *(
                make_member(
                    command,
                    "peer",
                    lambda command=command: _xdotool(rig.server.env(), 640, 360, command),
                )
                for command in (XDOTOOL_AS_TYPED, XDOTOOL_NO_PAUSE)
            ),
            make_member(
                f"pyautogui {package_version('pyautogui') or ''} click, PAUSE=0".replace("  ", " "),
                "peer",
                pyautogui,
            ),
        ],
    )
    time_members(op.members, rig.effort)
    op.facts["note"] = (
        "one process per click; xdotool's click waits its --delay (100 ms by default) before "
        "exiting, so the tuned form passes --delay 1"
    )
    return op


def bench_coords(rig: Rig) -> Operation:
    points = np.random.default_rng(2024).integers(0, 2 * BRAIN[0], (POINTS, 2)) / 2.0  # .5 ties
    scale, divisor = np.array(SCREEN, np.float64), np.array(BRAIN, np.float64)
    op = Operation(
        "coords",
        "scale 1M points, brain -> display",
        [
            make_member(
                "mantis_fast scale_points",
                "subject",
                lambda: lambda: scale_points(points, BRAIN, SCREEN),
            ),
            make_member(
                "numpy rint(p * W / w).astype(int32)",
                "peer",
                lambda: lambda: np.rint(points * scale / divisor).astype(np.int32),
            ),
        ],
    )
    time_members(op.members, rig.effort)
    subject, peer = op.members
    if peer.skipped is None:
        _check(np.array_equal(subject.result, peer.result), "scale_points vs numpy")
    return op


def agent_trajectory(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Agent-like steps: bursts of one action type around one target, tight (stuck) or loose."""
    rng = np.random.default_rng(seed)
    burst = rng.integers(1, 20, n // 2 + 1)
    target = np.repeat(np.arange(len(burst)), burst)[:n]
    jitter = rng.choice([2.0, 30.0], len(burst))[target]
    x = np.round(rng.uniform(0, 1920, len(burst))[target] + rng.normal(0, 1, n) * jitter)
    y = np.round(rng.uniform(0, 1080, len(burst))[target] + rng.normal(0, 1, n) * jitter)
    kind = rng.choice(np.array([0, 1, 2, 4], np.int8), len(burst), p=[0.3, 0.5, 0.1, 0.1])
    return x, y, kind[target]


def python_drift_flags(x: list, y: list, kind: list, tol: float, window: int) -> list[bool]:
    """The drift definition read literally: flag t when steps t-window+1..t share one non-zero
    kind and each lies within tol of the window's first step on both axes."""
    flags = []
    for t in range(len(x)):
        first = t - window + 1
        if first < 0:
            flags.append(False)
            continue
        k0, x0, y0 = kind[first], x[first], y[first]
        flags.append(
            k0 != 0
            and all(kind[i] == k0 for i in range(first, t + 1))
            and all(abs(x[i] - x0) <= tol and abs(y[i] - y0) <= tol for i in range(first, t + 1))
        )
    return flags


def bench_drift(rig: Rig) -> Operation:
    x, y, kind = agent_trajectory(STEPS)
    lists = x.tolist(), y.tolist(), kind.tolist()
    op = Operation(
        "drift",
        f"drift loop flags, 1M steps, window {WINDOW}",
        [
            make_member(
                "mantis_fast drift_loop_flags",
                "subject",
                lambda: lambda: drift_loop_flags(x, y, kind, TOL, WINDOW),
            ),
            make_member(
                "pure-Python detector",
                "peer",
                lambda: lambda: python_drift_flags(*lists, TOL, WINDOW),
            ),
        ],
    )
    time_members(op.members, rig.effort)
    subject, peer = op.members
    if peer.skipped is None:
        _check(subject.result.tolist() == peer.result, "drift flags vs pure Python")
    return op


def bench_loop(rig: Rig) -> Operation:
    """capture -> resize -> annotate -> PNG -> click, with a no-op brain clicking one point."""
    pointer = rig.stack.enter_context(Input(rig.display))
    bx, by = BRAIN[0] // 2, BRAIN[1] // 2
    actions = [{"name": "click", "x1": bx, "y1": by}]
    ui = UIConfig()
    radius = ui.executed_heat.radius_scale * max(BRAIN)
    image = np.empty((BRAIN[1], BRAIN[0], 3), np.uint8)

    stages: dict[str, list[float]] = {s: [] for s in ("capture", "resize", "annotate", "encode")}
    stages["dispatch"] = []
    clock = time.perf_counter

    def mantis_loop() -> bytes:  # with a clock read between stages (~0.1 us each)
        t0 = clock()
        frame = rig.cap.grab()
        t1 = clock()
        resize(frame, BRAIN, out=image)
        t2 = clock()
        annotate(image, actions, ui_config=ui)
        t3 = clock()
        png = encode_png(image)
        t4 = clock()
        pointer.click(*scale_brain_to_display(bx, by, BRAIN, rig.cap.size))
        t5 = clock()
        ticks = (t0, t1, t2, t3, t4, t5)
        for samples, start, end in zip(stages.values(), ticks, ticks[1:], strict=False):
            samples.append(end - start)
        return png

    def classic(command: str) -> Callable[[], bytes]:
        grab = rig.mss_grab()
        click = _xdotool(rig.server.env(), *scale_brain_to_display(bx, by, BRAIN, SCREEN), command)

        def loop() -> bytes:
            shot = grab()
            picture = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
            picture = picture.resize(BRAIN, Image.Resampling.BOX)
            ImageDraw.Draw(picture).ellipse(
                (bx - radius, by - radius, bx + radius, by + radius), fill=(255, 130, 0)
            )
            buffer = io.BytesIO()
            picture.save(buffer, "PNG")
            click()
            return buffer.getvalue()

        return loop

    op = Operation(
        "loop",
        "whole loop at 1080p, no-op brain",
        [
            make_member(
                "mantis_fast: grab, resize, annotate, encode_png, XTest click",
                "subject",
                lambda: mantis_loop,
            ),
            *(
                make_member(
                    "mss + Pillow + " + command.replace("mousemove X Y ", ""),
                    "peer",
                    lambda command=command: classic(command),
                )
                for command in (XDOTOOL_AS_TYPED, XDOTOOL_NO_PAUSE)
            ),
        ],
    )
    time_members(op.members, rig.effort)
    op.facts["note"] = (
        "capture the screen, resize to 1280x720 RGB, draw the click (mantis_fast: heat disc "
        "and label; peers: one ImageDraw ellipse), encode PNG, click the point mapped back to "
        "the display"
    )
    op.facts["iterations_per_s"] = {
        m.name: 1.0 / m.median_s for m in op.members if m.skipped is None
    }
    op.facts["subject_stage_medians_s"] = {k: statistics.median(v) for k, v in stages.items()}
    return op


OPERATIONS = (
    bench_capture,
    bench_unchanged,
    bench_resize,
    bench_png,
    bench_coords,
    bench_drift,
    bench_dispatch,  # moves the pointer: after the unchanged-screen capture
    bench_loop,
)
