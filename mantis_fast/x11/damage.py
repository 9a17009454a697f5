"""X DAMAGE bookkeeping for capture: which rows of the persistent frame need refreshing.

The server reports damage as rectangles (``DamageReportDeltaRectangles``: only area that is new
since the last ``DamageSubtract``). Capture refreshes whole-width row bands, because a full-width
band of the frame is contiguous in memory and ``ShmGetImage`` can write it straight into its
place in the persistent frame; merging nearby bands trades a few extra rows for fewer requests.
"""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

from Xlib import X
from Xlib.error import XError
from Xlib.ext import damage as xdamage

__all__ = ["DamageTracker", "DamageUnavailable", "Settled", "merge_row_bands"]

Rect = tuple[int, int, int, int]

# Bands closer than this many rows are fetched as one request (a round trip costs more than
# copying a few extra rows).
BAND_GAP_ROWS = 32
# How many damage timestamps a tracker keeps (a frame's draw is a few events).
RECENT_STAMPS = 64


class DamageUnavailable(Exception):
    """Why damage tracking could not start (the caller falls back to full grabs)."""


# numpydoc lint does not see the generated constructor: its parameters are the fields.
class Settled(NamedTuple):  # numpydoc ignore=PR02
    """What ``Capture.wait_until_stable`` (or ``settle_after_input``) saw.

    A named tuple; the parameters are its fields.

    Parameters
    ----------
    stable : bool
        Whether the screen settled; False when the timeout passed while it was still changing.
    waited : float
        Seconds spent waiting.
    changes : int
        Damage events (or, without DAMAGE tracking, changed frames) seen while waiting.
    """

    stable: bool  # False: the timeout passed while the screen was still changing
    waited: float  # seconds spent waiting
    changes: int  # damage events (or changed frames, without DAMAGE) seen while waiting


def merge_row_bands(
    rects: list[Rect], height: int, gap: int = BAND_GAP_ROWS
) -> list[tuple[int, int]]:
    """Row intervals ``(top, rows)`` covering every rectangle, clipped to ``[0, height)``.

    Intervals closer than ``gap`` rows are merged; the result is sorted and disjoint.
    """
    spans = sorted(
        (max(0, y), min(height, y + h))
        for _, y, _, h in rects
        if h > 0 and y < height and y + h > 0
    )
    merged: list[list[int]] = []
    for top, bottom in spans:
        if merged and top <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], bottom)
        else:
            merged.append([top, bottom])
    return [(top, bottom - top) for top, bottom in merged]


class DamageTracker:
    """A DAMAGE object on one drawable and the rectangles reported since the last ``take``."""

    def __init__(self, xdisplay, drawable) -> None:
        self._x = xdisplay
        if not xdisplay.query_extension("DAMAGE"):
            raise DamageUnavailable("server has no DAMAGE extension")
        try:
            xdisplay.damage_query_version()  # required before any other DAMAGE request
        except XError as exc:
            raise DamageUnavailable(f"DAMAGE QueryVersion failed: {exc}") from None
        self._event_type = xdisplay.extension_event.DamageNotify
        self.damage = drawable.damage_create(xdamage.DamageReportDeltaRectangles)
        self._pending: list[Rect] = []
        self.last_event_time = time.monotonic()
        self.events = 0
        # For settling (mantis_fast.x11.settle), in the server's time (ms, 32-bit, wrapping):
        self.last_timestamp: int | None = None  # of the latest damage
        # The latest damage events' server times, whoever took them in (a frame wait reads
        # which came after a frame began, and which came after it stopped waiting).
        self.recent: deque[int] = deque(maxlen=RECENT_STAMPS)
        # The least (our clock - server's clock) seen on arrival: server time ~ ours - offset.
        self.clock_offset_ms: float | None = None
        # (events, a server time, capture grabs) when a settle last ended, and the server time
        # of the first damage since: what came after a settle, and how long after.
        self.marked: tuple[int, int | None, int] | None = None
        self.first_since_mark: int | None = None

    def is_damage_event(self, event) -> bool:
        return event.type == self._event_type

    def add(self, event) -> None:
        area = event.area
        self._pending.append((area.x, area.y, area.width, area.height))
        self.last_event_time = now = time.monotonic()
        stamp = self.last_timestamp = event.timestamp
        self.recent.append(stamp)
        if self.first_since_mark is None:
            self.first_since_mark = stamp
        offset = now * 1e3 - stamp
        if self.clock_offset_ms is None or offset < self.clock_offset_ms:
            self.clock_offset_ms = offset
        self.events += 1

    def server_time(self, local: float) -> int | None:
        """``time.monotonic()`` value ``local`` in the server's ms (None before any damage)."""
        if self.clock_offset_ms is None:
            return None
        return int(local * 1e3 - self.clock_offset_ms) % (1 << 32)

    def mark(self, stamp: int | None, grabs: int) -> None:
        """A settle ended: ``stamp`` is the server time of its last damage (or its start)."""
        self.marked = (self.events, stamp, grabs)
        self.first_since_mark = None

    @property
    def dirty(self) -> bool:
        return bool(self._pending)

    def subtract(self) -> None:
        """Empty the server's damage region (queued, not flushed).

        With delta reporting the server only reports area outside its region, so the region
        must be emptied to keep hearing about changes. Safe at any time: everything in the
        region has been, or is being, reported to us as events that stay pending until fetched.
        """
        self._x.damage_subtract(self.damage, X.NONE, X.NONE)

    def take(self) -> list[Rect]:
        """Hand over the pending rectangles and clear the server's damage region.

        The subtract is queued before the caller's GetImage, so anything drawn after it is
        reported again: no update can be lost between the two.
        """
        rects, self._pending = self._pending, []
        self.subtract()
        return rects

    def mark_all(self, width: int, height: int) -> None:
        """Treat the whole drawable as damaged (after a resize, or before the first grab)."""
        self._pending.append((0, 0, width, height))

    def destroy(self) -> None:
        self._x.damage_destroy(self.damage)
