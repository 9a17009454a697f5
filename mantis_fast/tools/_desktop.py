"""One X display as the agent tools drive it: XTest input, a damage-tracking capture, the settle.

Both providers' tools (``anthropic``, ``openai``) act through a ``ToolDesktop``: a batch of raw
input events sent with one round trip, then a wait for the screen to take the input in (the
first damage it causes, then a quiet window learned from the app: milliseconds where the
originals sleep a fixed 1-2 s), during whose quiet window the screenshot is read from the
framebuffer, resized exactly and PNG-encoded in process.

``desktop_for(display)`` shares one desktop per display name in a process (the demo builds its
tools again for every conversation); one whose server was lost is replaced by a fresh one on
the next call. Every operation holds the desktop's lock, so threads (``asyncio.to_thread``) may
share it.
"""

from __future__ import annotations

import atexit
import base64
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from mantis_fast._closing import Closing
from mantis_fast.errors import ConnectionLostError, NoDisplayError, ServerHungError
from mantis_fast.pixels.encode import PngEncoder
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.memcopy import owned_copy
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.cursor import CursorImage, draw_cursor
from mantis_fast.x11.input.xtest import XTestInput
from mantis_fast.x11.settle import InputSettle

__all__ = [
    "SETTLE_QUIET_MS",
    "SETTLE_TIMEOUT_S",
    "ToolDesktop",
    "as_base64",
    "desktop_for",
    "forget",
    "on_desktop",
    "resolve_display",
]

T = TypeVar("T")

#: The longest settle after an input: never more than the demo's fixed 2 s delay.
SETTLE_TIMEOUT_S = 2.0
#: The quiet window while the settle learns how the app answers (then it adapts, from 10 ms).
SETTLE_QUIET_MS = 60.0


class ToolDesktop(Closing):
    """XTest input, a damage-tracking capture and the settle wait for one X display.

    Parameters
    ----------
    display : str
        The X display, e.g. ``":1"``.
    timeout : float, default 5.0
        Seconds that bound every wait for the server.
    """

    def __init__(self, display: str, *, timeout: float = 5.0) -> None:
        self.display = display
        self.lock = threading.RLock()
        self.input = XTestInput(display, timeout=timeout)
        try:
            self.capture = Capture(display, track_damage=True, timeout=timeout)
        except BaseException:
            self.input.close()
            raise
        self.settle_window = InputSettle(SETTLE_TIMEOUT_S, SETTLE_QUIET_MS)
        self._encoders: dict[tuple[int, int], PngEncoder] = {}

    @property
    def closed(self) -> bool:
        """Whether the desktop was closed (or its server was lost)."""
        return self.input.closed or self.capture.closed

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the screen now (an ``xrandr`` resize is picked up)."""
        with self.lock:
            return self.capture.size

    def pointer(self) -> tuple[int, int]:
        """Where the pointer is now, in screen pixels (one round trip)."""
        with self.lock:
            return self.input.pointer()

    def send(self, ops: Sequence[tuple]) -> None:
        """Send a batch of raw input events (``XTestInput.send``); on return they were processed."""
        with self.lock:
            self.input.send(ops)

    def wait_until_quiet(self) -> None:
        """Wait until the screen has not changed for the settle's quiet window (at most its
        timeout): what ``wait`` means when no input was just sent."""
        with self.lock:
            self.capture.wait_until_stable(SETTLE_TIMEOUT_S, SETTLE_QUIET_MS)

    def settle_and_png(
        self, delay: float | None, size: tuple[int, int] | None = None, *, cursor: bool = False
    ) -> bytes:
        """Wait for the screen to take in the input just sent, then ``png(size,
        cursor=cursor)``. The wait is the learned settle (its first damage, then a quiet window
        learned from the app), during whose quiet window the screenshot is taken and encoded
        (again if the screen changed after it): when the app is done, the encode cost no time
        of its own. A ``delay`` in seconds sleeps that long instead (the originals' way)."""
        if delay is not None:
            time.sleep(delay)
            return self.png(size, cursor=cursor)
        shot: list[bytes] = []

        def observe(frame: np.ndarray, pointer: CursorImage | None) -> None:
            shot[:] = [self._encode(self._composed(frame, pointer), size)]

        with self.lock:
            self.capture.settle_after_input(self.settle_window, observe, cursor=cursor)
        return shot[0]

    def png(
        self,
        size: tuple[int, int] | None = None,
        *,
        region: tuple[int, int, int, int] | None = None,
        cursor: bool = False,
    ) -> bytes:
        """The screen (or ``region``, ``(x, y, w, h)``) as a PNG, resized to ``size`` by the
        area average when a size is given."""
        with self.lock:
            frame = self.capture.grab()
            pointer = self.capture.cursor() if cursor else None
            frame = self._composed(frame, pointer)
            if region is not None:
                x, y, w, h = region
                frame = frame[y : y + h, x : x + w]
            return self._encode(frame, size)

    @staticmethod
    def _composed(frame: np.ndarray, pointer: CursorImage | None) -> np.ndarray:
        """The frame with the pointer drawn in (a copy), or the frame itself without one."""
        if pointer is None:
            return frame
        frame = owned_copy(frame)
        draw_cursor(frame, pointer.pixels, pointer.left, pointer.top)
        return frame

    def _encode(self, frame: np.ndarray, size: tuple[int, int] | None) -> bytes:
        height, width = frame.shape[:2]
        if size is not None and size != (width, height):
            image, src_format = resize(frame, size, out_format="RGB"), "RGB"
        else:
            image, src_format = frame, "BGRX"
        key = image.shape[1], image.shape[0]
        encoder = self._encoders.get(key)
        if encoder is None:
            self._encoders.clear()  # one stream of one size at a time
            encoder = self._encoders[key] = PngEncoder()
        return encoder.encode(image, src_format=src_format)

    def close(self) -> None:
        """Close the input and the capture (idempotent)."""
        with self.lock:
            self.input.close()
            self.capture.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<ToolDesktop {self.display} {state}>"


def as_base64(png: bytes) -> str:
    """A PNG as the base64 text both providers' APIs carry."""
    return base64.b64encode(png).decode("ascii")


_desktops: dict[str, ToolDesktop] = {}
_desktops_lock = threading.Lock()


def resolve_display(display: str | None) -> str:
    """``display``, else ``$DISPLAY``; ``NoDisplayError`` when neither names one."""
    name = display or os.environ.get("DISPLAY")
    if not name:
        raise NoDisplayError("no X display: pass display= or set $DISPLAY")
    return name


def desktop_for(display: str) -> ToolDesktop:
    """The process's open desktop for ``display`` (opened on first use, reopened after a loss)."""
    current = _desktops.get(display)
    if current is not None and not current.closed:
        return current
    with _desktops_lock:
        current = _desktops.get(display)
        if current is None or current.closed:
            current = _desktops[display] = ToolDesktop(display)
        return current


def forget(display: str) -> None:
    """Close and drop the shared desktop of ``display`` (after its server was lost)."""
    with _desktops_lock:
        current = _desktops.pop(display, None)
    if current is not None:
        current.close()


def on_desktop(display: str, work: Callable[[ToolDesktop], T]) -> T:
    """``work(desktop_for(display))``. When a desktop opened by an earlier call finds its server
    gone (not hung), ``work`` runs once more on a fresh connection, as the mss and pyautogui
    drop-ins do: the first call after a server restart works (nothing reached the gone server).
    A loss on a fresh connection closes it and goes to the caller."""
    reused = display in _desktops and not _desktops[display].closed
    desktop = desktop_for(display)
    try:
        return work(desktop)
    except ConnectionLostError as exc:
        forget(display)
        if not reused or isinstance(exc, ServerHungError):
            raise
    return on_desktop(display, work)


@atexit.register
def _close_all() -> None:
    with _desktops_lock:
        for each in _desktops.values():
            each.close()
        _desktops.clear()


_inherited: list[ToolDesktop] = []


def _forget_in_child() -> None:
    """A forked child must not talk on its parent's connections: it opens its own, and keeps
    the inherited ones unused (closing them would speak on the parent's sockets)."""
    global _desktops_lock
    _desktops_lock = threading.Lock()
    _inherited.extend(_desktops.values())
    _desktops.clear()


os.register_at_fork(after_in_child=_forget_in_child)
