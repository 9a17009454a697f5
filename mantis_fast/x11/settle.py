"""Settling: when the screen has taken in an input.

``settle_by_damage`` and ``settle_by_frames`` are ``Capture.wait_until_stable``'s fixed wait: the
screen unchanged for ``quiet`` seconds. ``settle_after_input`` is a Gym step's wait: after an
input it waits for the first damage the input causes (none within ``InputSettle.first_s``: the
input changed nothing), then for a quiet window learned from the app (``InputSettle``), so an
app that answers in one burst is not held to a window sized for the slowest one.
``settle_after_frame`` is for an app that says when the frame holding its answer began (a web
page's ``requestAnimationFrame``): it waits until that frame has had time to reach the screen,
a time learned from the app's own frames (``FrameWait``), with no quiet window at all.

Gaps between damage events are measured with the server's DamageNotify timestamps (what the app
did, in ms), not with when we read them (our own scheduling would shrink them).

``Settling`` holds ``Capture``'s own methods for these waits (``wait_until_stable``,
``settle_after_input``, ``settle_after_frame``): a mixin that ``Capture`` inherits, which
links the waits above to the capture's connection, damage tracker and grabs.
"""

from __future__ import annotations

import itertools
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.memcopy import owned_copy
from mantis_fast.x11.connection import GONE, read_available
from mantis_fast.x11.cursor import CursorImage
from mantis_fast.x11.damage import DamageTracker, Settled

__all__ = [
    "DamageLink",
    "FrameReport",
    "FrameWait",
    "InputSettle",
    "SettleReport",
    "Settling",
    "adaptive_window_ms",
    "settle_after_frame",
    "settle_after_input",
    "settle_by_damage",
    "settle_by_frames",
]

_STAMP_WRAP = 1 << 32  # DamageNotify timestamps are a 32-bit millisecond counter
#: How far apart (ms) a frame's begin, read on the app's clock, and a damage timestamp must be
#: to be told apart: the stamps are whole ms, and each clock is mapped onto ours within ~1 ms.
CLOCK_SLACK_MS = 2


class DamageLink(NamedTuple):
    """What a damage-based settle listens through: a ``Capture``'s connection and tracker."""

    xdisplay: Any  # python-xlib Display
    tracker: DamageTracker
    round_trip: Callable[[], object]  # bounded: afterwards, all the server sent is in hand
    take_in: Callable[[], object]  # drain the event queue into the tracker (no syscall)
    grabs: Callable[[], int]  # how many grabs the capture has made


class SettleReport(NamedTuple):
    """What one ``settle_after_input`` saw, beyond ``Settled``."""

    first_ms: float  # the first-damage wait it used
    quiet_ms: float  # the quiet window it used
    latency_ms: float | None  # input to first damage (None: none came while waiting)
    largest_gap_ms: float | None  # between consecutive damage events (server time, +1 ms)
    early: int  # damage events in hand at the start, after the last observation was taken
    late: bool  # some came too soon after the previous settle: its window was too short
    late_gap_ms: float | None  # from the previous settle's last damage to the first since


def adaptive_window_ms(
    samples: Iterable[float], factor: float, floor: float, ceiling: float
) -> float:
    """``clamp(factor * max(samples), floor, ceiling)``; ``ceiling`` with no samples, and the
    ceiling wins over the floor (never wait longer than configured)."""
    largest = max(samples, default=None)
    if largest is None:
        return ceiling
    return min(max(factor * largest, floor), ceiling)


class InputSettle:
    """One env's after-input settle: its limits and what it learned of the app.

    The quiet window is ``clamp(factor * largest gap, floor_ms, quiet_ms)`` over the last
    ``history`` responses (inputs that caused damage); the first-damage wait likewise from the
    latencies (floor ``first_floor_ms``). Both are the full ``quiet_ms`` for the first
    ``learn`` responses, after late damage (the window was too short: the histories restart
    from the late gap), and for one response in every ``history`` (an audit: a gap that grew
    while steps ran back to back, leaving no idle time for late damage to show, is still seen).
    """

    def __init__(
        self,
        timeout: float,
        quiet_ms: float,
        *,
        floor_ms: float = 10.0,
        first_floor_ms: float = 25.0,
        factor: float = 3.0,
        history: int = 16,
        learn: int = 4,
    ) -> None:
        if not (timeout >= 0 and quiet_ms >= 0):  # NaN fails too
            raise InvalidInputError(
                f"timeout and quiet_ms must be >= 0, got {timeout!r}, {quiet_ms!r}"
            )
        self.timeout, self.quiet_ms = float(timeout), float(quiet_ms)
        self.floor_ms, self.first_floor_ms, self.factor = floor_ms, first_floor_ms, factor
        self.learn, self.history = learn, history
        self._gaps: deque[float] = deque(maxlen=history)
        self._latencies: deque[float] = deque(maxlen=history)
        self._full = learn  # responses still to settle with the full window
        self._since_full = 0  # responses settled with a learned window since the last full one
        self.lates = 0  # late damage seen so far
        self.last: SettleReport | None = None

    @property
    def full(self) -> bool:
        """Whether the next settle uses the full ``quiet_ms`` (learning, or an audit)."""
        return self._full > 0 or self._since_full >= self.history

    @property
    def quiet_s(self) -> float:
        """The quiet window the next settle uses, in seconds."""
        if self.full:
            return self.quiet_ms / 1e3
        window = adaptive_window_ms(self._gaps, self.factor, self.floor_ms, self.quiet_ms)
        return window / 1e3

    @property
    def first_s(self) -> float:
        """How long the next settle waits for an input's first damage, in seconds."""
        if self.full:
            return self.quiet_ms / 1e3
        floor = self.first_floor_ms
        return adaptive_window_ms(self._latencies, self.factor, floor, self.quiet_ms) / 1e3

    def record(self, latency_ms: float | None, gap_ms: float | None) -> None:
        """Learn from one settle: ``latency_ms`` None means the input caused no damage (nothing
        to learn); ``gap_ms`` None, a response of one damage event."""
        if latency_ms is None:
            return
        if self.full:
            self._full = max(self._full - 1, 0)
            self._since_full = 0
        else:
            self._since_full += 1
        self._latencies.append(latency_ms)
        self._gaps.append(gap_ms or 0.0)

    def record_late(self, gap_ms: float | None) -> None:
        """Damage came after a settle was declared: the window was too short. Forget what was
        learned but the late gap (None: unknown, taken as ``quiet_ms``) and relearn at the
        full window."""
        gap = self.quiet_ms if gap_ms is None else gap_ms
        self._gaps.clear()
        self._latencies.clear()
        self._gaps.append(gap)
        self._latencies.append(gap)
        self._full, self._since_full = self.learn, 0
        self.lates += 1


# -- the fixed waits (Capture.wait_until_stable) ---------------------------------------------
def settle_by_damage(link: DamageLink, timeout: float, quiet: float) -> Settled:
    """Return once no damage came for ``quiet`` seconds (or ``timeout`` passed)."""
    start = time.monotonic()
    tracker = link.tracker
    events_before = tracker.events
    # Empty the server's region so every change from now on is reported, and make a round
    # trip so damage from everything the server did before now is in hand.
    tracker.subtract()
    link.round_trip()
    link.take_in()
    last_change = start if tracker.events == events_before else time.monotonic()
    socket = link.xdisplay.display.socket
    while True:
        now = time.monotonic()
        if now - last_change >= quiet:
            return _marked(link, start, Settled(True, now - start, tracker.events - events_before))
        if now - start >= timeout:
            return _marked(link, start, Settled(False, now - start, tracker.events - events_before))
        wake = min(last_change + quiet, start + timeout) - now
        readable, _, _ = select.select([socket], [], [], max(wake, 0))
        if readable:
            seen = tracker.events
            read_available(link.xdisplay)
            link.take_in()
            if tracker.events != seen:
                last_change = time.monotonic()
                tracker.subtract()
                link.xdisplay.flush()


def settle_by_frames(grab: Callable[[bool], np.ndarray], timeout: float, quiet: float) -> Settled:
    """Without DAMAGE: compare whole frames every few ms (``grab(owned)``) until none changed
    for ``quiet`` seconds (or ``timeout`` passed)."""
    start = time.monotonic()
    poll = min(max(quiet / 4, 0.005), 0.05)
    previous = grab(True)
    last_change, changes = start, 0
    while True:
        now = time.monotonic()
        if now - last_change >= quiet:
            return Settled(True, now - start, changes)
        if now - start >= timeout:
            return Settled(False, now - start, changes)
        time.sleep(min(poll, max(0.0, start + timeout - now)))
        current = grab(False)
        if current.shape != previous.shape or not np.array_equal(current, previous):
            previous = owned_copy(current)
            last_change, changes = time.monotonic(), changes + 1


def _marked(link: DamageLink, start: float, settled: Settled) -> Settled:
    """Mark where the damage stood when a settle ended: at its last damage, or at its start
    when it saw none (what came after that, the next settle judges)."""
    tracker = link.tracker
    stamp = tracker.last_timestamp if settled.changes else tracker.server_time(start)
    tracker.mark(stamp, link.grabs())
    return settled


# -- after an input (X11Desktop.act) ---------------------------------------------------------
def settle_after_input(
    link: DamageLink, window: InputSettle, observe: Callable[[], object] | None = None
) -> Settled:
    """After an input was dispatched: wait up to ``window.first_s`` for its first damage (none:
    it changed nothing, stable), then until no damage for ``window.quiet_s``; at most
    ``window.timeout``. Learns into ``window`` and reports there (``window.last``).

    ``observe`` (a grab and whatever the caller does with the frame) overlaps the quiet window:
    it runs as soon as the damage in hand is taken in, and again whenever damage comes after it;
    by the return, its last run saw the settled screen (once more at the end if it had not run
    since the last damage). Damage its own grab took in restarts the quiet window."""
    start = time.monotonic()
    tracker = link.tracker
    events_before = tracker.events
    # Damage that came since the last settle: late, or not ours to judge. A non-blocking look,
    # normally before this input can have been answered; an answer already here (a busy
    # machine) is taken for late damage at worst, which costs a relearn.
    read_available(link.xdisplay)
    early = _take_in(link)
    late, late_gap = _late(link, window)
    if late:
        window.record_late(late_gap)
    first, quiet = window.first_s, window.quiet_s
    tracker.subtract()
    link.round_trip()
    stamps = _take_in(link)
    now = time.monotonic()
    # Damage the observation lacks counts as a change at the start; early damage is not
    # learned from (it may be the last response's, or the fastest part of this one).
    last_change: float | None = now if stamps else (start if early else None)
    latency = now - start if stamps else None
    socket = link.xdisplay.display.socket
    observed = False  # observe ran since the last damage taken in
    while True:
        now = time.monotonic()
        if last_change is None:
            stable = now - start >= first
            deadline = start + first
        else:
            stable = now - last_change >= quiet
            deadline = last_change + quiet
        if stable or now - start >= window.timeout:
            break
        if observe is not None and last_change is not None and not observed:
            seen = tracker.events
            observe()
            observed = True
            if tracker.events != seen:  # its grab took damage in (and has it): quiet from now
                last_change = time.monotonic()
            read_available(link.xdisplay)  # damage that came while it ran came after its grab
            new = _take_in(link)
            if new:
                stamps += new
                last_change, observed = time.monotonic(), False
            if new or tracker.events != seen:
                tracker.subtract()
                link.xdisplay.flush()
            continue
        wake = min(deadline, start + window.timeout) - now
        readable, _, _ = select.select([socket], [], [], max(wake, 0))
        if readable:
            read_available(link.xdisplay)
            new = _take_in(link)
            if new:
                stamps += new
                last_change = time.monotonic()
                observed = False
                if latency is None:
                    latency = last_change - start
                tracker.subtract()
                link.xdisplay.flush()
    gaps = [(b - a) % _STAMP_WRAP for a, b in itertools.pairwise(stamps)]
    # Timestamps are whole ms: a gap read as d ms was shorter than d + 1.
    largest = max(gaps) + 1.0 if gaps else None
    latency_ms = None if latency is None else latency * 1e3
    window.last = SettleReport(
        first * 1e3, quiet * 1e3, latency_ms, largest, len(early), late, late_gap
    )
    window.record(latency_ms, largest)
    changes = tracker.events - events_before
    settled = _marked(link, start, Settled(stable, now - start, changes))
    if observe is not None and not observed:
        observe()
    return settled


# -- after a frame the app named (BrowserTask.settle) -----------------------------------------
class FrameReport(NamedTuple):
    """What one ``settle_after_frame`` saw."""

    wait_ms: float  # how long after the frame began it waited
    latency_ms: float | None  # the first frame's begin to the first damage since (None: none)
    late: bool  # damage came after the previous wait, soon enough that it was too short
    undrawn: bool = False  # none of the first frame's damage by its wait: waited for the later


class FrameWait:
    """How long an app's frames take to reach the screen once they begin, learned.

    The wait is ``clamp(factor * (largest latency + 1 ms), floor_ms, ceiling_ms)`` over the
    last ``history`` latencies (a frame's begin to its first damage; whole-ms timestamps, hence
    the 1 ms); ``ceiling_ms`` until ``learn`` were seen. Damage that comes after a wait ended,
    within ``floor_ms`` of it, is late: it is learned as a latency (the window grows at once).
    """

    def __init__(
        self,
        ceiling_ms: float = 20.0,
        *,
        floor_ms: float = 2.0,
        factor: float = 1.5,
        history: int = 16,
        learn: int = 2,
    ) -> None:
        if not (0 <= floor_ms <= ceiling_ms and factor >= 1 and history >= 1 and learn >= 0):
            raise InvalidInputError(
                "FrameWait needs 0 <= floor_ms <= ceiling_ms, factor >= 1, history >= 1 and "
                f"learn >= 0, got {floor_ms!r}, {ceiling_ms!r}, {factor!r}, {history!r}, "
                f"{learn!r}"
            )
        self.ceiling_ms, self.floor_ms, self.factor = float(ceiling_ms), float(floor_ms), factor
        self.learn = learn
        self._latencies: deque[float] = deque(maxlen=history)
        self.lates = 0  # waits found too short so far
        # When the last wait ended: the damage events taken in by then, the server time (ms),
        # and the server time its first frame began at.
        self._ended: tuple[int, int, int] | None = None
        self.last: FrameReport | None = None

    @property
    def wait_ms(self) -> float:
        """How long after its frame began the next wait lasts, in ms."""
        if not self._latencies or len(self._latencies) < self.learn:
            return self.ceiling_ms
        largest = max(self._latencies) + 1.0
        return adaptive_window_ms((largest,), self.factor, self.floor_ms, self.ceiling_ms)

    def record(self, latency_ms: float) -> None:
        """Learn one frame's begin-to-screen latency."""
        self._latencies.append(latency_ms)


def settle_after_frame(
    link: DamageLink,
    window: FrameWait,
    *,
    input_at: float,
    first_began: float,
    began: float,
    undrawn_began: float | None = None,
) -> Settled:
    """Return once the frame that began at ``began`` had ``window.wait_ms`` to reach the
    screen. ``first_began``: when the first frame after the input began (its first damage
    since is what ``window`` learns); ``input_at``: when the input was sent (damage between
    the last wait and it is late); ``undrawn_began``: a later frame to wait for instead when
    none of the first frame's damage came by then (it drew nothing, or is late). All in
    ``time.monotonic()`` seconds. Damage that came in the meantime is taken in for the grab;
    none is waited for, so a page that never draws, or draws forever, costs the same bounded
    wait."""
    start = time.monotonic()
    tracker = link.tracker
    events_before = tracker.events
    read_available(link.xdisplay)
    link.take_in()
    late = _late_for_frame(tracker, window, tracker.server_time(input_at))
    wait_ms = window.wait_ms
    deadline = began + wait_ms / 1e3
    socket = link.xdisplay.display.socket
    undrawn = False
    while True:
        while (now := time.monotonic()) < deadline:
            readable, _, _ = select.select([socket], [], [], deadline - now)
            if readable:
                seen = tracker.events
                read_available(link.xdisplay)
                link.take_in()
                if tracker.events != seen:
                    tracker.subtract()
                    link.xdisplay.flush()
        link.round_trip()  # what the server drew until now is in hand for the grab
        link.take_in()
        latency_ms = _drawn_since(tracker, first_began)
        if undrawn_began is None or latency_ms is not None:
            break
        deadline, undrawn_began, undrawn = undrawn_began + wait_ms / 1e3, None, True
    if latency_ms is not None:
        window.record(latency_ms)
    first, ended = tracker.server_time(first_began), tracker.server_time(time.monotonic())
    if first is not None and ended is not None:
        window._ended = (tracker.events, ended, first)
    window.last = FrameReport(wait_ms, latency_ms, late, undrawn)
    return Settled(True, time.monotonic() - start, tracker.events - events_before)


def _drawn_since(tracker: DamageTracker, began: float) -> float | None:
    """Ms from ``began`` (``time.monotonic()`` seconds) to the first damage since, in server
    time (None: none). Damage up to ``CLOCK_SLACK_MS`` before counts, at 0: whole-ms stamps
    and two clocks mapped onto each other cannot order events closer than that."""
    first = tracker.server_time(began)
    if first is None:
        return None
    after = [
        d for d in (_signed_ms(stamp - first) for stamp in tracker.recent) if d >= -CLOCK_SLACK_MS
    ]
    return float(max(min(after), 0)) if after else None


def _late_for_frame(tracker: DamageTracker, window: FrameWait, input_at: int | None) -> bool:
    """Whether damage came after the last wait ended and before this input, within
    ``floor_ms`` of the end: a frame the wait almost caught, learned as that wait's frame's
    latency, so the next one is long enough. (Later damage is the page's own later work, a
    clock ticking, more often than a slow frame.)"""
    ended, window._ended = window._ended, None
    if ended is None or input_at is None:
        return False
    events, stop, first = ended
    new = min(tracker.events - events, len(tracker.recent))  # damage taken in since it ended
    before = min(window.floor_ms, _signed_ms(input_at - stop))
    late = [
        stamp
        for stamp in itertools.islice(tracker.recent, len(tracker.recent) - new, None)
        if _signed_ms(stamp - stop) <= before
    ]
    if not late:
        return False
    window.record(float(_signed_ms(late[0] - first)))
    window.lates += 1
    return True


def _signed_ms(difference: int) -> int:
    """A difference of two 32-bit ms timestamps, wrapped into -2**31 .. 2**31 - 1 (the later
    one may be an estimate slightly before the earlier)."""
    difference %= _STAMP_WRAP
    return difference - _STAMP_WRAP if difference >= _STAMP_WRAP // 2 else difference


def _late(link: DamageLink, window: InputSettle) -> tuple[bool, float | None]:
    """Whether damage came since the last settle ended, too soon after it for a full window to
    have missed it (so the learned one was too short), and that gap in ms (None: unknown).

    Not late: no such damage; more grabs than the step's own observation since (a reset, a
    render: the damage may be theirs); damage a full ``quiet_ms`` or more after the last
    (a blinking cursor: the fixed window would have missed it too)."""
    tracker, marked = link.tracker, link.tracker.marked
    if marked is None or tracker.events == marked[0] or link.grabs() - marked[2] > 1:
        return False, None
    first, stamp = tracker.first_since_mark, marked[1]
    if first is None or stamp is None:
        return True, None
    gap = float(_signed_ms(first - stamp))
    return gap < window.quiet_ms, gap


def _take_in(link: DamageLink) -> list[int]:
    """Drain the event queue into the tracker; the damage events' server timestamps, in order."""
    queue = link.xdisplay.display.event_queue
    stamps = [event.timestamp for event in queue if link.tracker.is_damage_event(event)]
    link.take_in()
    return stamps


# -- Capture's settling methods ----------------------------------------------------------------
class _Capturing(Protocol):
    """What ``Settling`` uses of the ``Capture`` it is mixed into: its lock, connection and
    damage tracker, and its grab, all called with the lock held."""

    _lock: threading.Lock
    _x: Any  # python-xlib Display
    _damage: DamageTracker | None
    # (grabs so far, the last grab's region, its row bands): what ``Capture.grab`` counts
    _change: tuple[int, Any, Any]

    def _check_open(self) -> None: ...

    def _lost(self, exc: BaseException) -> BaseException: ...

    def _handle_events(self) -> bool: ...

    def _root_geometry(self) -> object: ...

    def _grab_locked(
        self, region: Sequence[int] | None, owned: Literal["array", "bytes"] | None = None
    ) -> tuple[Any, Any, Any]: ...

    def _cursor_locked(self) -> CursorImage: ...


class Settling:
    """``Capture``'s waits for the screen to settle: ``wait_until_stable``,
    ``settle_after_input`` and ``settle_after_frame``.

    A mixin of ``Capture``: each method holds the capture's lock for its wait, and a server
    that went away drops the connection as a grab does.
    """

    def wait_until_stable(
        self: _Capturing, timeout: float = 2.0, quiet_ms: float = 100.0
    ) -> Settled:
        """Return once the screen has not changed for ``quiet_ms``, or ``timeout`` passed.

        With DAMAGE tracking this listens for damage events (no pixels move); without it,
        frames are compared every few milliseconds. The damage seen is kept for the next grab.

        Parameters
        ----------
        timeout : float, default 2.0
            Seconds to wait at most.
        quiet_ms : float, default 100.0
            Milliseconds without a change that count as stable.

        Returns
        -------
        Settled
            Whether the screen settled, the seconds waited and the changes seen.

        Raises
        ------
        InvalidInputError
            If ``timeout`` or ``quiet_ms`` is negative (or nan).
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        if not (timeout >= 0 and quiet_ms >= 0):
            raise InvalidInputError(
                f"timeout and quiet_ms must be >= 0, got {timeout!r}, {quiet_ms!r}"
            )
        with self._lock:
            self._check_open()
            try:
                if self._damage is not None:
                    link = _damage_link(self, self._damage)
                    return settle_by_damage(link, timeout, quiet_ms / 1e3)
                return settle_by_frames(_frame_grab(self), timeout, quiet_ms / 1e3)
            except GONE as exc:
                raise self._lost(exc) from None

    def settle_after_input(
        self: _Capturing,
        window: InputSettle,
        observe: Callable[[np.ndarray, CursorImage | None], object] | None = None,
        *,
        cursor: bool = False,
    ) -> Settled:
        """Wait until the screen has taken in an input that was just dispatched.

        With DAMAGE tracking: the input's first damage, then a quiet window learned from the
        app (``mantis_fast.x11.settle``), at most ``window.timeout``. Without it:
        ``wait_until_stable``'s fixed window (``window.quiet_ms``).

        Parameters
        ----------
        window : InputSettle
            The limits, and what was learned of the app so far; with DAMAGE tracking this call
            learns into it and reports there (``window.last``).
        observe : callable, optional
            ``observe(frame, pointer)``: the screen grabbed (a view, valid during the call)
            and, with ``cursor``, the pointer's image then (else None). With DAMAGE tracking it
            runs while the quiet window runs, again whenever the screen changed after its
            grab: the caller's work on the frame (a resize, an encode) overlaps the wait. By
            the return, its last call had the settled screen.
        cursor : bool, default False
            Read the pointer for ``observe`` (XFixes, one round trip).

        Returns
        -------
        Settled
            Whether the screen settled, the seconds waited and the changes seen.

        Raises
        ------
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()

            hook = None if observe is None else lambda: _grab_and_observe(self, observe, cursor)
            try:
                if self._damage is not None:
                    return settle_after_input(_damage_link(self, self._damage), window, hook)
                settled = settle_by_frames(_frame_grab(self), window.timeout, window.quiet_ms / 1e3)
                if hook is not None:
                    hook()
                return settled
            except GONE as exc:
                raise self._lost(exc) from None

    def settle_after_frame(
        self: _Capturing,
        window: FrameWait,
        *,
        input_at: float,
        first_began: float,
        began: float,
        undrawn_began: float | None = None,
    ) -> Settled:
        """Wait until a frame the app named has had time to reach the screen.

        For an app that says when the frame drawing its answer began (a web page's
        ``requestAnimationFrame``; ``mantis_fast.gym.browser_task``): with DAMAGE tracking,
        until ``began`` plus the latency learned in ``window`` (``mantis_fast.x11.settle``);
        without it, until ``began`` plus ``window.ceiling_ms``. No quiet window: a page that
        draws forever costs the same.

        Parameters
        ----------
        window : FrameWait
            The limits, and the app's frame latencies learned so far (this call learns into
            it and reports there, ``window.last``).
        input_at : float
            When the input was sent (``time.monotonic()`` seconds).
        first_began : float
            When the first frame after the input began.
        began : float
            When the frame holding the answer began.
        undrawn_began : float, optional
            A later frame to wait for instead when none of the first frame's damage came by
            the wait's end (the first frame drew nothing, or is late).

        Returns
        -------
        Settled
            Always stable; the seconds waited and the damage events taken in.

        Raises
        ------
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            try:
                if self._damage is not None:
                    link = _damage_link(self, self._damage)
                    return settle_after_frame(
                        link,
                        window,
                        input_at=input_at,
                        first_began=first_began,
                        began=began,
                        undrawn_began=undrawn_began,
                    )
            except GONE as exc:
                raise self._lost(exc) from None
        start = time.monotonic()
        last = began if undrawn_began is None else max(began, undrawn_began)
        time.sleep(max(0.0, last + window.ceiling_ms / 1e3 - start))
        return Settled(True, time.monotonic() - start, 0)


def _grab_and_observe(
    capture: _Capturing,
    observe: Callable[[np.ndarray, CursorImage | None], object],
    cursor: bool,
) -> None:
    """A grab (counted as ``grab()`` counts it) handed to ``observe``, with the lock held."""
    frame, where, bands = capture._grab_locked(None)
    capture._change = (capture._change[0] + 1, where, bands)
    observe(frame, capture._cursor_locked() if cursor else None)


def _damage_link(capture: _Capturing, tracker: DamageTracker) -> DamageLink:
    return DamageLink(
        capture._x,
        tracker,
        capture._root_geometry,
        capture._handle_events,
        lambda: capture._change[0],
    )


def _frame_grab(capture: _Capturing) -> Callable[[bool], np.ndarray]:
    """``settle_by_frames``'s ``grab(owned)``: the whole screen, uncounted, with the lock held."""
    return lambda owned: capture._grab_locked(None, "array" if owned else None)[0]
