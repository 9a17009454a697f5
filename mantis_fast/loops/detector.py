"""Loop detection for computer-use agents: adaptive click tolerance and a streaming detector.

An agent that re-clicks the same target forever is the most common failure a host has to catch.
:class:`LoopDetector` watches the actions of one episode and answers, after every step, whether the
last ``window`` samples form a loop of one of three kinds:

* **drift** — the samples are all the same spatial action type (``click``, ``double_click``,
  ``right_click``, or ``drag`` by its start point) and each lies within the effective click
  tolerance of the window's *first* sample on both axes (``|dx| <= tol and |dy| <= tol``).
* **repeat** — the actions are identical (type and params; the reasoning text is not compared),
  except scroll-like actions (scrolls, waits, and page up/down, arrow up/down and j/k presses:
  :func:`~mantis_fast.loops.samples.is_scroll_like`) while the screen or URL changed at every step
  of the window: scrolling through a long page is progress, scrolling at its end is not.
* **state** — the samples share one frame hash and one URL. The URL alone is enough when no frame
  is given; samples recorded with neither never form a state loop (nothing is known).

The click tolerance is adaptive: :func:`compute_click_tol_px` scales the baseline with the
viewport diagonal (``max(floor, round(0.004 * hypot(w, h)))``), and the reasoning text of a
window's first sample widens or tightens it through :data:`CLICK_TOL_KEYWORDS`. Both are
switched off by ``MANTIS_ADAPTIVE_CLICK_TOL`` set to one of ``disabled, 0, false, off, no``
(read at every check, as upstream) or per detector with ``LoopDetector(adaptive=False)``.

Adaptive windows (:mod:`~mantis_fast.loops.adaptive`, upstream's ``MANTIS_LOOP_ADAPTIVE``):
:meth:`LoopDetector.is_any_loop_adaptive` widens a window while the agent looks productive and
narrows it while it looks stuck; ``adaptive_windows=False`` (or the variable set to ``disabled``)
makes it :meth:`~LoopDetector.is_any_loop` of the base window.

Actions are duck-typed (see :func:`normalize_action`): gym-style objects with ``.action_type``
(a string or an enum whose ``.value`` is one), ``.params`` and ``.reasoning``, or plain mappings
such as ``{"type": "click", "x": 10, "y": 20, "reasoning": "..."}``.
"""

from __future__ import annotations

from typing import Any

from mantis_fast._validate import as_index, integer, optional_flag
from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.loops._loop import DriftRing
from mantis_fast.loops.adaptive import (
    ADAPTIVE_LOOP_ENV,
    MAX_EXTENSION,
    adapt_window,
    adaptive_loop_enabled,
    pattern_signature,
)
from mantis_fast.loops.samples import (
    DRIFT_KINDS,
    SCROLL_LIKE_KEYS,
    action_point,
    is_scroll_like,
    normalize_action,
    to_sample,
)
from mantis_fast.loops.toggles import toggle_enabled
from mantis_fast.loops.tolerance import (
    ADAPTIVE_CLICK_TOL_ENV,
    CLICK_TOL_KEYWORDS,
    MAX_CLICK_TOL_PX,
    _scaled_click_tol,
    adaptive_click_tol_enabled,
    check_click_tol,
    click_tol_multiplier,
    compute_click_tol_px,
    effective_click_tol,
)
from mantis_fast.loops.trajectory import check_extension

#: The three loops, in the order ``LoopDetector.loop_kinds`` reports them.
LOOP_KINDS = ("drift", "repeat", "state")

__all__ = [
    "ADAPTIVE_CLICK_TOL_ENV",
    "ADAPTIVE_LOOP_ENV",
    "CLICK_TOL_KEYWORDS",
    "DRIFT_KINDS",
    "LOOP_KINDS",
    "MAX_CLICK_TOL_PX",
    "MAX_HISTORY",
    "SCROLL_LIKE_KEYS",
    "LoopDetector",
    "action_point",
    "adaptive_click_tol_enabled",
    "adaptive_loop_enabled",
    "click_tol_multiplier",
    "compute_click_tol_px",
    "effective_click_tol",
    "is_scroll_like",
    "normalize_action",
    "pattern_signature",
]


#: The largest ``history`` (ring size) a detector takes. The ring is preallocated (about 70 bytes
#: a step: 4.5 MB at this size) and ``reset`` refills it, so its size must stay bounded; 65536
#: steps is far beyond any window worth asking about an agent's episode.
MAX_HISTORY = 65536


class LoopDetector:
    """Streaming drift / repeat / state loop detector over a bounded ring of recent samples.

    Parameters
    ----------
    click_tol_px : float, default 8
        The drift baseline tolerance in pixels (usually :func:`compute_click_tol_px` of the
        screen), a finite number in ``0..MAX_CLICK_TOL_PX``.
    history : int, default 32
        The ring's size, ``2..MAX_HISTORY``: it bounds the largest window that can be asked
        about.
    adaptive : bool, optional
        Overrides ``MANTIS_ADAPTIVE_CLICK_TOL`` (the keyword multipliers) for this detector;
        None (the default) reads the variable at every check.
    adaptive_windows : bool, optional
        Overrides ``MANTIS_LOOP_ADAPTIVE`` for this detector; None (the default) reads the
        variable at every check.

    Raises
    ------
    InvalidInputError
        A ``click_tol_px``, ``history``, ``adaptive`` or ``adaptive_windows`` out of its range.

    Notes
    -----
    Per step, :meth:`record` updates run lengths incrementally, so :meth:`is_repeat_loop` and
    :meth:`is_state_loop` are O(1) and :meth:`is_drift_loop` walks the window (in C, over the
    preallocated ``DriftRing``) only when its samples already share one spatial action type.
    The adaptive-window signals walk their window in Python, when asked.
    """

    __slots__ = (
        "_adaptive",
        "_adaptive_windows",
        "_change_run",
        "_count",
        "_drift_ring",
        "_hash_at",
        "_hash_last",
        "_hash_moved",
        "_hashes",
        "_head",
        "_patterns",
        "_reasons",
        "_repeat_run",
        "_scrolls",
        "_signatures",
        "_state_run",
        "_steps",
        "_tols",
        "_url_at",
        "_url_last",
        "_url_moved",
        "_urls",
        "click_tol_px",
        "history",
    )

    def __init__(
        self,
        click_tol_px: float = 8,
        history: int = 32,
        *,
        adaptive: bool | None = None,
        adaptive_windows: bool | None = None,
    ):
        check_click_tol(click_tol_px)
        history = integer(history, "history", low=2, high=MAX_HISTORY, noun="an int")
        optional_flag(adaptive, "adaptive")
        optional_flag(adaptive_windows, "adaptive_windows")
        self.click_tol_px = click_tol_px
        self.history = history
        self._adaptive = None if adaptive is None else bool(adaptive)
        self._adaptive_windows = adaptive_windows
        self._drift_ring = DriftRing(history)
        # Per slot: the keyword-scaled tolerance of that sample as a window's first, computed on
        # first use (only read while adaptive tolerance is on).
        self._tols: list[float | None] = [None] * history
        self._reasons: list[str] = [""] * history
        self._signatures: list[Any] = [None] * history
        self._scrolls: list[bool] = [False] * history
        self._hashes: list[str | None] = [None] * history
        self._urls: list[str] = [""] * history
        # Per slot: the action's pattern_signature, computed on first use (adaptive windows).
        self._patterns: list[tuple | None] = [None] * history
        self.reset()

    @property
    def adaptive(self) -> bool:
        """Whether the keyword multipliers apply now (the override, else the environment)."""
        adaptive = self._adaptive
        return adaptive_click_tol_enabled() if adaptive is None else adaptive

    @property
    def adaptive_windows(self) -> bool:
        """Whether :meth:`is_any_loop_adaptive` adapts now (the override, else the environment)."""
        adaptive = self._adaptive_windows
        return adaptive_loop_enabled() if adaptive is None else adaptive

    def __len__(self) -> int:
        """Number of samples held (at most ``history``)."""
        return self._count

    def reset(self) -> None:
        """Forget every sample (start of a new episode); the ring keeps its size."""
        self._head = self.history - 1
        self._count = 0
        self._repeat_run = self._change_run = self._state_run = 0
        self._drift_ring.clear()
        for ring in (self._tols, self._signatures, self._hashes, self._patterns):
            ring[:] = [None] * self.history
        self._reasons[:] = [""] * self.history
        self._urls[:] = [""] * self.history
        # For state_progressed in O(1): steps are numbered from 0 since the reset; per signal
        # (URL, frame hash), its last known value, that value's step, and the step of the latest
        # known value that differs from it (-1: none). A window of steps holds two distinct
        # known values exactly when that last step falls inside it (the differing one is older).
        self._steps = 0
        self._url_last: str | None = None
        self._hash_last: str | None = None
        self._url_at = self._url_moved = self._hash_at = self._hash_moved = -1

    def _effective_click_tol(self, action: Any) -> float:
        """Drift tolerance for a window whose first sample is ``action``.

        ``max(1, round(click_tol_px * multiplier))`` when the action's reasoning text names a
        keyword; the raw ``click_tol_px`` otherwise and when adaptive tolerance is off.
        """
        return _scaled_click_tol(self.click_tol_px, normalize_action(action)[2], self.adaptive)

    def record(self, action: Any, *, url: str | None = "", frame: Any = None) -> None:
        """Append one step: the action taken, the page URL and the frame.

        Parameters
        ----------
        action : object
            The action taken, in any form :func:`normalize_action` takes (an object with
            ``.action_type``, ``.params`` and ``.reasoning``, or a mapping).
        url : str or None, default ""
            The page URL at this step; ``""`` or None when unknown.
        frame : str, numpy.ndarray or PIL.Image.Image, optional
            The screen the step belongs to: a precomputed hash string, an image array (hashed
            with ``mantis_fast.pixels.frames.frame_hash``), a ``PIL.Image`` (hashed with
            ``phash_64``, as upstream does), or None (the default, or ``""``) when unknown.

        Raises
        ------
        InvalidInputError
            An action, ``url`` or ``frame`` that cannot be read.
        """
        _, code, x, y, reasoning, signature, scroll, frame_hash, url = to_sample(action, url, frame)

        history = self.history
        prev = self._head
        head = prev + 1
        if head == history:
            head = 0
        known = frame_hash is not None or url != ""  # a state to compare: URL and/or frame
        if self._count:
            run = self._repeat_run
            self._repeat_run = (
                (run + 1 if run < history else run) if signature == self._signatures[prev] else 1
            )
            run = self._change_run
            if frame_hash != self._hashes[prev] or url != self._urls[prev]:
                self._change_run = run + 1 if run < history else run
                self._state_run = 1 if known else 0
            else:
                self._change_run = 0
                run = self._state_run
                self._state_run = (run + 1 if run < history else run) if known else 0
            if self._count < history:
                self._count += 1
        else:
            self._repeat_run = 1
            self._change_run = 0
            self._state_run = 1 if known else 0
            self._count = 1
        self._head = head
        self._drift_ring.push(code, x, y)
        self._tols[head] = None
        self._reasons[head] = reasoning
        self._signatures[head] = signature
        self._scrolls[head] = scroll
        self._hashes[head] = frame_hash
        self._urls[head] = url
        self._patterns[head] = None
        step = self._steps
        self._steps = step + 1
        if url:
            if url != self._url_last:
                self._url_moved = self._url_at
                self._url_last = url
            self._url_at = step
        if frame_hash is not None:
            if frame_hash != self._hash_last:
                self._hash_moved = self._hash_at
                self._hash_last = frame_hash
            self._hash_at = step

    def _check_window(self, window: Any, name: str = "window") -> int:
        if type(window) is int and 2 <= window <= self.history:
            return window
        value = as_index(window)
        if value is None:
            raise InvalidInputError(f"{name} must be an int, got {_shown(window)}")
        if value < 2 or value > self.history:
            raise InvalidInputError(
                f"{name} must be in [2, history={self.history}], got {_shown(window)}"
            )
        return value

    def _drift(self, window: int) -> bool:
        ring = self._drift_ring
        if ring.kind_run < window:
            return False
        adaptive = self._adaptive
        raw = self.click_tol_px
        if adaptive is False:
            return ring.within(window, raw)
        first = self._head - window + 1
        if first < 0:
            first += self.history
        tol = self._tols[first]
        if tol is None:
            tol = self._tols[first] = _scaled_click_tol(raw, self._reasons[first], True)
        if adaptive or tol == raw:
            return ring.within(window, tol)
        # The environment decides (read when checked, as upstream), but reading it costs more
        # than a walk: within() is monotone in the tolerance, so it matters only when the window
        # fits the larger of the two tolerances and not the smaller.
        wider = tol > raw  # the keyword widens the baseline
        if ring.within(window, raw if wider else tol):
            return True
        if not ring.within(window, tol if wider else raw):
            return False
        return wider is toggle_enabled(ADAPTIVE_CLICK_TOL_ENV)

    def _repeat(self, window: int) -> bool:
        return self._repeat_run >= window and not (
            self._scrolls[self._head] and self._change_run >= window - 1
        )

    def is_drift_loop(self, window: int) -> bool:
        """Whether the last ``window`` samples form a drift loop.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        bool
            True when the samples are all one spatial action type and each lies within the
            effective click tolerance of the window's first sample on both axes.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        return self._drift(self._check_window(window))

    def is_repeat_loop(self, window: int) -> bool:
        """Whether the last ``window`` actions form a repeat loop.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        bool
            True when the actions are identical (type and params), except scroll-like actions
            while the screen or URL changed at every step of the window.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        return self._repeat(self._check_window(window))

    def is_state_loop(self, window: int) -> bool:
        """Whether the last ``window`` samples form a state loop.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        bool
            True when the samples share one URL and frame hash, one of them at least known.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        return self._state_run >= self._check_window(window)

    def is_any_loop(self, window: int) -> bool:
        """Whether any of the three loop kinds holds over the last ``window`` samples.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        bool
            True when a drift, repeat or state loop holds.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        window = self._check_window(window)
        return self._state_run >= window or self._repeat(window) or self._drift(window)

    def loop_kinds(self, window: int) -> list[str]:
        """Which loops hold over the last ``window`` samples.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        list of str
            The kinds of ``LOOP_KINDS`` that hold, in its order (what a truncation or a nudge
            reports); empty when none does.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        checks = (self.is_drift_loop, self.is_repeat_loop, self.is_state_loop)
        return [kind for kind, check in zip(LOOP_KINDS, checks, strict=True) if check(window)]

    def loop_kinds_adaptive(self, base_window: int) -> list[str]:
        """:meth:`loop_kinds` over the window :meth:`is_any_loop_adaptive` looked at.

        Parameters
        ----------
        base_window : int
            The base window, ``2..history``.

        Returns
        -------
        list of str
            The loop kinds over ``base_window`` adapted (see :meth:`adaptive_window`) when
            adaptive windows are on and any hold there, else over ``base_window``.

        Raises
        ------
        InvalidInputError
            A window out of range.
        """
        if self.adaptive_windows:
            kinds = self.loop_kinds(self.adaptive_window(base_window))
            if kinds:
                return kinds
        return self.loop_kinds(base_window)

    # --- adaptive windows (upstream's #298) -----------------------------------------------------

    def _diversity(self, window: int) -> float:
        if self._count < window:
            return 0.0
        patterns = self._patterns
        head = self._head
        first = head - window + 1
        chunk = (
            patterns[first : head + 1] if first >= 0 else patterns[first:] + patterns[: head + 1]
        )
        if None in chunk:  # usually just the newest sample
            signatures = self._signatures
            for j, pattern in enumerate(chunk):
                if pattern is None:
                    slot = (first + j) % self.history
                    chunk[j] = patterns[slot] = pattern_signature(*signatures[slot])
        return len(set(chunk)) / window

    def _progressed(self, window: int) -> bool:
        if self._count < window:
            return False
        first = self._steps - window  # the window's first step
        return self._url_moved >= first or self._hash_moved >= first

    def pattern_diversity(self, window: int) -> float:
        """Share of distinct action patterns among the last ``window`` actions.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        float
            Distinct :func:`~mantis_fast.loops.adaptive.pattern_signature` values divided by
            ``window``: 1.0 all different, ``1 / window`` all alike; 0.0 while fewer than
            ``window`` samples are held.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        return self._diversity(self._check_window(window))

    def state_progressed(self, window: int) -> bool:
        """Whether the URL or the screen moved within the last ``window`` samples.

        Parameters
        ----------
        window : int
            How many of the latest samples, ``2..history``.

        Returns
        -------
        bool
            True when more than one distinct non-empty URL or frame hash is among them; False
            while fewer than ``window`` samples are held.

        Raises
        ------
        InvalidInputError
            A ``window`` that is not an int in ``2..history``.
        """
        return self._progressed(self._check_window(window))

    def _adapt(self, base_window: Any, max_extension: Any, floor: Any) -> int:
        base = self._check_window(base_window, "base_window")
        max_extension, floor = check_extension(max_extension, floor)
        if base + max_extension > self.history:
            raise InvalidInputError(
                f"base_window + max_extension must be at most history={self.history}, got "
                f"{base} + {max_extension}"
            )
        if base <= floor or self._count < base:
            return base
        return adapt_window(
            base,
            self._count,
            self._diversity(base),
            self._progressed(base),
            max_extension,
            floor,
        )

    def adaptive_window(
        self, base_window: int, *, max_extension: int = MAX_EXTENSION, floor: int = 2
    ) -> int:
        """``base_window`` adjusted by the recent pattern diversity and state progress.

        Parameters
        ----------
        base_window : int
            The base window, ``2..history``.
        max_extension : int, default MAX_EXTENSION
            How far the window may widen, an int >= 0; ``base_window + max_extension`` must
            fit in ``history``.
        floor : int, default 2
            The narrowest window, an int >= 2.

        Returns
        -------
        int
            ``base_window + max_extension`` while the last ``base_window`` steps look
            productive (diversity >= 0.6, or the URL or screen moved);
            ``base_window - max(1, max_extension // 2)``, but not below ``floor``, while they
            look stuck (diversity <= 0.25 and nothing moved); ``base_window`` otherwise, while
            fewer than ``base_window`` samples are held, and when ``base_window <= floor``.

        Raises
        ------
        InvalidInputError
            An argument out of range, or ``base_window + max_extension`` beyond ``history``.

        Notes
        -----
        Computed whatever the toggle says (see :meth:`is_any_loop_adaptive`).
        """
        return self._adapt(base_window, max_extension, floor)

    def is_any_loop_adaptive(self, base_window: int, *, max_extension: int = MAX_EXTENSION) -> bool:
        """:meth:`is_any_loop` over :meth:`adaptive_window`, with a pagination guard.

        Parameters
        ----------
        base_window : int
            The base window, ``2..history``.
        max_extension : int, default MAX_EXTENSION
            As for :meth:`adaptive_window`.

        Returns
        -------
        bool
            Whether any loop holds over the adapted window; a window in which the URL or
            screen moved is progress (False), unless it is a state loop.

        Raises
        ------
        InvalidInputError
            An argument out of range (checked even when adaptive windows are off).

        Notes
        -----
        When adaptive windows are off (``adaptive_windows=False``, or ``MANTIS_LOOP_ADAPTIVE``
        set to ``disabled``, ``0``, ``false``, ``off`` or ``no`` with no override) this is
        ``is_any_loop(base_window)``.
        """
        window = self._adapt(base_window, max_extension, 2)
        if not self.adaptive_windows:
            return self.is_any_loop(base_window)
        if self._progressed(window) and self._state_run < window:
            return False
        return self._state_run >= window or self._repeat(window) or self._drift(window)
