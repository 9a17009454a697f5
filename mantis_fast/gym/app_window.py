"""Waiting for an app to show itself: its window mapped, then drawn.

An app started by ``reset`` takes a while to put its window up (an interpreter to start, a UI to
build), and the screen is blank meanwhile; a first observation taken then wastes the brain a
step. ``wait_for_app_window`` waits, bounded, for a viewable top-level window that belongs to the
app's processes (its X client's pid, or ``_NET_WM_PID``), or else any top-level that was not
there before the launch,
and then for its first paint: the window's area shows more than one colour. A window that stays
one colour for ``paint_timeout`` seconds is taken as drawn (some apps are one colour).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym.processes import child_pids
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.windows import TopLevel, Windows

__all__ = ["AppWindow", "check_paint_timeout", "process_tree", "wait_for_app_window"]

POLL_S = 0.02
MAX_PAINT_TIMEOUT = 3600.0
MAX_TREE = 4096  # processes looked at per poll: bounds a fork bomb's cost


@dataclass(frozen=True)
class AppWindow:
    """The app's window as ``reset`` found it."""

    window: TopLevel
    waited: float  # seconds from the call until the window was drawn
    painted: bool  # False: still one colour when ``paint_timeout`` ran out


def check_paint_timeout(value: object) -> float:
    """``paint_timeout``: seconds in [0, 3600] (0: a mapped window counts as drawn)."""
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and 0 <= value <= MAX_PAINT_TIMEOUT
    ):
        raise InvalidInputError(
            f"paint_timeout must be seconds in [0, {MAX_PAINT_TIMEOUT:g}], got {value!r:.40}"
        )
    return float(value)


def process_tree(pids: Iterable[int]) -> set[int]:
    """``pids`` and all their descendants (from /proc)."""
    found: set[int] = set()
    todo = list(pids)
    while todo and len(found) < MAX_TREE:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(child_pids(pid))
    return found


def _pick(tops: list[TopLevel], tree: set[int], known: Collection[int]) -> TopLevel | None:
    """The topmost window of the app's processes, else the topmost new one."""
    usable = [t for t in tops if t.bounds[2] > 1 and t.bounds[3] > 1]
    owned = [t for t in usable if t.pids & tree]
    fresh = [t for t in usable if t.id not in known]
    chosen = owned or fresh
    return chosen[-1] if chosen else None


def _one_colour(capture: Capture, bounds: tuple[int, int, int, int]) -> bool:
    width, height = capture.size
    x, y, w, h = bounds
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + w, width), min(y + h, height)
    if right <= left or bottom <= top:
        return True  # off screen: nothing of it shows
    pixels = capture.grab((left, top, right - left, bottom - top))[:, :, :3]
    return bool((pixels == pixels[0, 0]).all())


def wait_for_app_window(
    windows: Windows,
    capture: Capture,
    pids: Iterable[int],
    *,
    known: Collection[int] = (),
    processes: Iterable[subprocess.Popen] = (),
    timeout: float = 20.0,
    paint_timeout: float = 2.0,
) -> AppWindow:
    """Wait until the app of ``pids`` (and their children) has a viewable top-level window,
    or a top-level not in ``known`` appears, and until that window is drawn.

    ``AppError`` when no such window is up within ``timeout`` seconds, or at once when one of
    ``processes`` (the launched apps) exits with an error first (an exit with 0 may be a
    launcher that left the app running: the wait goes on).
    """
    started = time.monotonic()
    deadline = started + timeout
    pids, processes = list(pids), list(processes)
    first_seen: float | None = None
    while True:
        now = time.monotonic()
        for process in processes:
            # Exit 0 may be a launcher that started the app and left: keep looking for it.
            if process.poll() not in (None, 0):
                raise AppError(
                    f"the app {process.args!r} exited with code {process.returncode} "
                    "before its window was up"
                )
        # Picked again at every poll: a window may be mapped small, then resized or replaced.
        found = _pick(windows.top_levels(), process_tree(pids), known)
        if found is not None:
            first_seen = now if first_seen is None else first_seen
            if not _one_colour(capture, found.bounds):
                return AppWindow(found, now - started, True)
            if now - first_seen >= paint_timeout:
                return AppWindow(found, now - started, False)
        elif now >= deadline:
            shown = [hex(t.id) for t in windows.top_levels()]
            exited = [p.args for p in processes if p.poll() is not None]
            gone = f"; {exited!r} exited with code 0" if exited else ""
            raise AppError(
                f"the app (pids {pids}{gone}) mapped no window within {timeout:g}s "
                f"(viewable top-level windows: {shown or 'none'}); raise app_timeout, "
                "or pass app_timeout=None for an app without a window"
            )
        time.sleep(POLL_S)
