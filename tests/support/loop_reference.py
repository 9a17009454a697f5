"""Slow, obviously-correct loop detection: the reference for tests and benchmarks.

Every check is the definition read literally: keep every sample in a list, slice the last
``window`` of them, and compare. No run lengths, no ring, no block extrema.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from mantis_fast.loops.detector import (
    CLICK_TOL_KEYWORDS,
    DRIFT_KINDS,
    action_point,
    adaptive_click_tol_enabled,
    normalize_action,
)

# Navigation keys by whole name (the detector's SCROLL_LIKE_KEYS, spelled out again here).
NAVIGATION_KEYS = {
    "page_down", "pagedown", "pgdn", "page_up", "pageup", "pgup",
    "down", "arrowdown", "up", "arrowup", "j", "k",
}  # fmt: skip


def reference_scroll_like(kind: str, params: dict[str, Any]) -> bool:
    """A scroll (type name containing "scroll"), a wait, or a key press of a navigation key."""
    if "scroll" in kind or kind == "wait":
        return True
    if kind != "key":
        return False
    keys = params.get("keys") or params.get("key") or params.get("text")
    if isinstance(keys, (list, tuple)):
        names = [k.lower() for k in keys if isinstance(k, str)]
    elif isinstance(keys, str):
        names = keys.lower().replace("+", " ").replace(",", " ").split()
    else:
        names = []
    return any(name in NAVIGATION_KEYS for name in names)


def reference_tolerance(click_tol_px: float, reasoning: str, adaptive: bool) -> float:
    """The first keyword's multiplier applied and rounded; no keyword (or not adaptive): as is."""
    if adaptive:
        for keyword, multiplier in CLICK_TOL_KEYWORDS:
            if keyword in reasoning.lower():
                return max(1, round(click_tol_px * multiplier))
    return click_tol_px


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


def reference_state_flags(state, window: int) -> list[bool]:  # state < 0: nothing known
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
        self._adaptive = adaptive
        self.samples: list[dict[str, Any]] = []

    @property
    def adaptive(self) -> bool:  # None: the environment, read at every check
        return adaptive_click_tol_enabled() if self._adaptive is None else self._adaptive

    def record(self, action: Any, *, url: str | None = "", frame: str | None = None) -> None:
        kind, params, reasoning = normalize_action(action)
        point = action_point(params) if kind in DRIFT_KINDS else None
        self.samples.append(
            {
                "kind": kind,
                "params": dict(params),
                "point": point,
                "reasoning": reasoning,
                "frame": frame or None,  # "" is no hash
                "url": url or "",
            }
        )

    def _window(self, window: int) -> list[dict[str, Any]] | None:
        return self.samples[-window:] if len(self.samples) >= window else None

    def tolerance(self, sample: dict[str, Any]) -> float:
        return reference_tolerance(self.click_tol_px, sample["reasoning"], self.adaptive)

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
        return not (reference_scroll_like(first["kind"], first["params"]) and screen_kept_changing)

    def is_state_loop(self, window: int) -> bool:
        samples = self._window(window)
        if samples is None:
            return False
        first = samples[0]
        known = first["frame"] is not None or first["url"] != ""  # the URL alone is a state
        return known and all(
            (s["frame"], s["url"]) == (first["frame"], first["url"]) for s in samples
        )

    def is_any_loop(self, window: int) -> bool:
        return (
            self.is_drift_loop(window) or self.is_repeat_loop(window) or self.is_state_loop(window)
        )

    # --- adaptive windows, read literally ------------------------------------------------------

    @staticmethod
    def signature(sample: dict[str, Any]) -> tuple:
        """Clicks on an 8 px grid, drags by their end on it, keys, text[:32], scroll direction."""
        kind, params = sample["kind"], sample["params"]

        def grid(value: Any) -> Any:
            ok = isinstance(value, (int, float)) and math.isfinite(value)
            return int(value) // 8 if ok else None

        if kind in ("click", "double_click", "right_click"):
            cell = (grid(params.get("x")), grid(params.get("y")))
            return (kind,) if None in cell else (kind, *cell)
        if kind == "drag":
            end_x = params.get("end_x") or params.get("x2") or 0
            end_y = params.get("end_y") or params.get("y2") or 0
            return (kind, grid(end_x) or 0, grid(end_y) or 0)
        if kind == "key":
            keys = params.get("keys") or params.get("key") or params.get("text") or ""
            if isinstance(keys, (list, tuple)):
                keys = "+".join(map(str, keys))
            return (kind, str(keys).lower())
        if kind == "type":
            return (kind, str(params.get("text") or params.get("content") or "")[:32])
        if kind == "scroll":
            return (kind, str(params.get("direction") or "down"))
        return (kind,)

    def pattern_diversity(self, window: int) -> float:
        samples = self._window(window)
        if samples is None:
            return 0.0
        return len({self.signature(s) for s in samples}) / window

    def state_progressed(self, window: int) -> bool:
        samples = self._window(window)
        if samples is None:
            return False
        urls = {s["url"] for s in samples if s["url"]}
        frames = {s["frame"] for s in samples if s["frame"] is not None}
        return len(urls) > 1 or len(frames) > 1

    def adaptive_window(self, base: int, *, max_extension: int = 2, floor: int = 2) -> int:
        if base <= floor or len(self.samples) < base:
            return base
        diversity = self.pattern_diversity(base)
        progressed = self.state_progressed(base)
        if diversity >= 0.6 or progressed:
            return base + max_extension
        if diversity <= 0.25:
            return max(floor, base - max(1, max_extension // 2))
        return base

    def is_any_loop_adaptive(self, base: int, *, max_extension: int = 2) -> bool:
        window = self.adaptive_window(base, max_extension=max_extension)
        if self.state_progressed(window) and not self.is_state_loop(window):
            return False
        return self.is_any_loop(window)


def reference_distinct(codes, window: int) -> list[int]:
    """Distinct non-negative codes among steps t-window+1..t, counted literally."""
    return [
        len({c for c in codes[max(0, t - window + 1) : t + 1] if c >= 0}) for t in range(len(codes))
    ]
