"""Slow, obviously-correct loop detection: the reference for tests and benchmarks.

Every check is the definition read literally: keep every sample in a list, slice the last
``window`` of them, and compare. No run lengths, no ring, no block extrema.
"""

from __future__ import annotations

import itertools
from typing import Any

from mantis_fast.loops.detector import (
    DRIFT_KINDS,
    action_point,
    adaptive_click_tol_enabled,
    click_tol_multiplier,
    normalize_action,
)


def reference_drift_flags(x, y, kind, tol, window: int) -> list[bool]:
    """Flag t: steps t-window+1..t share one non-zero kind, all within tol[first] of the first."""
    n = len(x)
    tols = [tol] * n if isinstance(tol, (int, float)) else list(tol)
    flags = []
    for t in range(n):
        first = t - window + 1
        if first < 0:
            flags.append(False)
            continue
        k0, x0, y0, limit = kind[first], x[first], y[first], tols[first]
        flags.append(
            k0 != 0
            and all(kind[i] == k0 for i in range(first, t + 1))
            and all(
                abs(x[i] - x0) <= limit and abs(y[i] - y0) <= limit for i in range(first, t + 1)
            )
        )
    return flags


def reference_repeat_flags(action_id, window: int, scroll=None, state=None) -> list[bool]:
    """Flag t: ``window`` equal ids, unless scrolls whose state changed at every step inside."""
    n = len(action_id)
    scroll = [False] * n if scroll is None else list(scroll)
    state = [0] * n if state is None else list(state)
    flags = []
    for t in range(n):
        first = t - window + 1
        if first < 0:
            flags.append(False)
            continue
        ids = action_id[first : t + 1]
        identical = all(i == ids[0] for i in ids)
        kept_changing = all(state[i] != state[i - 1] for i in range(first + 1, t + 1))
        flags.append(identical and not (scroll[t] and kept_changing))
    return flags


def reference_state_flags(state, window: int) -> list[bool]:
    """Flag t: ``window`` equal, non-negative state codes."""
    flags = []
    for t in range(len(state)):
        first = t - window + 1
        window_states = state[max(first, 0) : t + 1]
        flags.append(
            first >= 0
            and window_states[0] >= 0
            and all(s == window_states[0] for s in window_states)
        )
    return flags


class ReferenceLoopDetector:
    """The streaming contract with an ever-growing list and a literal check per question."""

    def __init__(self, click_tol_px: float = 8, *, adaptive: bool | None = None):
        self.click_tol_px = click_tol_px
        self.adaptive = adaptive_click_tol_enabled() if adaptive is None else adaptive
        self.samples: list[dict[str, Any]] = []

    def record(self, action: Any, *, url: str = "", frame: str | None = None) -> None:
        kind, params, reasoning = normalize_action(action)
        point = action_point(params) if kind in DRIFT_KINDS else None
        self.samples.append(
            {
                "kind": kind,
                "params": dict(params),
                "point": point,
                "reasoning": reasoning,
                "frame": frame,
                "url": url,
            }
        )

    def _window(self, window: int) -> list[dict[str, Any]] | None:
        return self.samples[-window:] if len(self.samples) >= window else None

    def tolerance(self, sample: dict[str, Any]) -> float:
        if not self.adaptive:
            return self.click_tol_px
        return max(1, round(self.click_tol_px * click_tol_multiplier(sample["reasoning"])))

    def is_drift_loop(self, window: int) -> bool:
        samples = self._window(window)
        if samples is None:
            return False
        first = samples[0]
        if first["point"] is None or any(
            s["kind"] != first["kind"] or s["point"] is None for s in samples
        ):
            return False
        tol = self.tolerance(first)
        (x0, y0) = first["point"]
        return all(
            abs(s["point"][0] - x0) <= tol and abs(s["point"][1] - y0) <= tol for s in samples
        )

    def is_repeat_loop(self, window: int) -> bool:
        samples = self._window(window)
        if samples is None:
            return False
        first = samples[0]
        if any(s["kind"] != first["kind"] or s["params"] != first["params"] for s in samples):
            return False
        screen_kept_changing = all(
            (a["frame"], a["url"]) != (b["frame"], b["url"]) for a, b in itertools.pairwise(samples)
        )
        return not ("scroll" in first["kind"] and screen_kept_changing)

    def is_state_loop(self, window: int) -> bool:
        samples = self._window(window)
        if samples is None:
            return False
        first = samples[0]
        return first["frame"] is not None and all(
            (s["frame"], s["url"]) == (first["frame"], first["url"]) for s in samples
        )

    def is_any_loop(self, window: int) -> bool:
        return (
            self.is_drift_loop(window) or self.is_repeat_loop(window) or self.is_state_loop(window)
        )
