"""Waiting for an app to show itself: its window mapped, then drawn.

An app started by ``reset`` takes a while to put its window up (an interpreter to start, a UI to
build), and the screen is blank meanwhile; a first observation taken then wastes the brain a
step. ``wait_for_app_window`` waits, bounded, for a viewable top-level window that belongs to the
app's processes (its X client's pid, or ``_NET_WM_PID``), or else a top-level that was not
there before the launch and has no known owner (any new one once a launched process exited with
0: a launcher that left the app running outside its process tree), and then for its first
paint: the window's area shows more than one colour. A window that stays one colour for
``paint_timeout`` seconds is taken as drawn (some apps are one colour); the count starts again
when the chosen window changes (another window, or the same one moved or resized).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from mantis_fast import _validate
from mantis_fast.errors import AppError
from mantis_fast.gym.processes import child_pids
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.windows import TopLevel, Windows

__all__ = ["AppWindow", "check_paint_timeout", "process_tree", "wait_for_app_window"]

POLL_S = 0.02
MAX_TREE = 4096  # processes looked at per poll: bounds a fork bomb's cost


@dataclass(frozen=True)
class AppWindow:
    """The app's window as ``reset`` found it."""

    window: TopLevel
    waited: float  # seconds from the call until the window was drawn
    painted: bool  # False: still one colour when ``paint_timeout`` ran out


def check_paint_timeout(value: object) -> float:
    """``paint_timeout``: seconds in [0, 3600] (0: a mapped window counts as drawn)."""
    return _validate.timeout(value, "paint_timeout", zero=True)


def process_tree(pids: Iterable[int]) -> set[int]:
    """``pids`` and all their descendants (from /proc), at most ``MAX_TREE`` of them.

    Not ``processes.descendant_pids``: that walk has no bound, and this one runs on every
    poll while an app (a fork bomb, maybe) starts."""
    found: set[int] = set()
    todo = list(pids)
    while todo and len(found) < MAX_TREE:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(child_pids(pid))
    return found


def _pick(
    tops: list[TopLevel], tree: set[int], known: Collection[int], any_new: bool
) -> TopLevel | None:
    """The topmost window of the app's processes, else the topmost new one with no known owner
    (``any_new``: any new one). A new window whose owner is known and outside the app's tree
    is another program's (a notification, another client): never the app's."""
    usable = [t for t in tops if t.bounds[2] > 1 and t.bounds[3] > 1]
    owned = [t for t in usable if t.pids & tree]
    fresh = [t for t in usable if t.id not in known and (any_new or not t.pids)]
    chosen = owned or fresh
    return chosen[-1] if chosen else None


class _Sighting:
    """Since when the chosen window has been up as it is now: a new window, or the same one
    moved or resized, starts the ``paint_timeout`` count again."""

    def __init__(self) -> None:
        self.window: TopLevel | None = None
        self.since = 0.0

    def see(self, window: TopLevel | None, now: float) -> float:
        """Record ``window`` (None: nothing chosen) at ``now``; seconds it has been up as is."""
        before = self.window
        same = (
            window is not None
            and before is not None
            and (window.id, window.bounds) == (before.id, before.bounds)
        )
        if not same:
            self.since = now
        self.window = window
        return now - self.since


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
    sighting = _Sighting()
    while True:
        now = time.monotonic()
        launcher_done = False
        for process in processes:
            code = process.poll()
            # Exit 0 may be a launcher that started the app and left: keep looking for it.
            if code not in (None, 0):
                raise AppError(
                    f"the app {process.args!r} exited with code {code} before its window was up"
                )
            launcher_done = launcher_done or code == 0
        # Picked again at every poll: a window may be mapped small, then resized or replaced.
        found = _pick(windows.top_levels(), process_tree(pids), known, launcher_done)
        shown_for = sighting.see(found, now)
        if found is not None:
            if not _one_colour(capture, found.bounds):
                return AppWindow(found, now - started, True)
            if shown_for >= paint_timeout:
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
