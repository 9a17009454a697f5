"""Loop guards for workflow runners: halt a loop whose page stopped changing, or that wandered off
the site it was pinned to (upstream Mantis's ``gym.loop_guards``, same names and verdicts).

Where :class:`~mantis_fast.loops.detector.LoopDetector` looks at the agent's *actions*, the guards
look at what a runner observes once per loop iteration:

* :class:`StateRepeatGuard` fingerprints each iteration's ``(url, screenshot bytes, visible
  text)`` with :func:`fingerprint` and halts (``loop_stuck``) when ``threshold`` consecutive
  fingerprints are equal;
* :class:`OffSourceDriftGuard` halts (``off_source_drift``) when the URL has been outside the
  pinned pattern for ``step_budget`` consecutive observations;
* :class:`LoopGuardSuite` runs both, the off-source guard first (its halt says *what* went wrong).

Both are off by default (threshold / budget 0, empty pattern), as upstream: a runner opts in.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mantis_fast._validate import integer, text
from mantis_fast.errors import InvalidInputError

__all__ = [
    "LOOP_STUCK",
    "OFF_SOURCE_DRIFT",
    "LoopGuardHalt",
    "LoopGuardSuite",
    "OffSourceDriftGuard",
    "StateRepeatGuard",
    "fingerprint",
    "matches_pinned",
]

LOOP_STUCK = "loop_stuck"
OFF_SOURCE_DRIFT = "off_source_drift"
#: How many of the latest off-pattern URLs a drift halt shows.
OFF_URLS_TRAIL = 4


@dataclass(frozen=True)
class LoopGuardHalt:
    """Why a guard halted: ``halt_class`` (:data:`LOOP_STUCK` or :data:`OFF_SOURCE_DRIFT`), a
    one-line ``reason`` for logs, and guard-specific ``evidence``."""

    halt_class: str
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)


def _typed(what: str, expectation: str, value: Any) -> InvalidInputError:
    """``"url must be a string, got bytes"``: the type only (the value may be a whole page)."""
    return InvalidInputError(f"{what} must be {expectation}, got {type(value).__name__}")


def _text(name: str, value: Any) -> str:
    """A string; None counts as the empty one."""
    return "" if value is None else text(value, name, fail=_typed)


def _bytes(value: Any) -> memoryview:
    if value is None:
        return memoryview(b"")
    if isinstance(value, str):
        raise InvalidInputError("screenshot_bytes must be bytes (an encoded screenshot), got str")
    try:
        view = memoryview(value)
        return view if view.format == "B" and view.ndim == 1 else view.cast("B")
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"screenshot_bytes must be a contiguous bytes-like object, got "
            f"{type(value).__name__}: {exc}"
        ) from None


def fingerprint(url: str, screenshot_bytes: Any, visible_text: str) -> str:
    """32 hex characters naming one iteration's state: SHA-256 of the URL, a zero byte, the
    screenshot bytes, a zero byte and the visible text (strings UTF-8, unencodable characters
    dropped), truncated: the same digest as upstream's, so fingerprints can be compared across.

    ``screenshot_bytes`` is any contiguous bytes-like object (an encoded PNG, a capture buffer);
    None or empty strings count as empty.
    """
    digest = hashlib.sha256()
    digest.update(_text("url", url).encode("utf-8", errors="ignore"))
    digest.update(b"\x00")
    digest.update(_bytes(screenshot_bytes))
    digest.update(b"\x00")
    digest.update(_text("visible_text", visible_text).encode("utf-8", errors="ignore"))
    return digest.hexdigest()[:32]


def matches_pinned(url: str, pattern: str) -> bool:
    """Whether ``url`` is inside a pinned pattern.

    ``"https://site.test"`` pins the origin (the URL may go on with ``/``, ``?`` or ``#``),
    ``"https://site.test/*"`` and ``"https://site.test/news/*"`` a prefix; an empty pattern pins
    nothing (everything matches).
    """
    url, pattern = _text("url", url), _text("pattern", pattern)
    if not pattern:
        return True
    if pattern.endswith("/*"):
        return url.startswith(pattern[:-2])
    return url.startswith(pattern) and (len(url) == len(pattern) or url[len(pattern)] in "/?#")


def _count(name: str, value: Any) -> int:
    return integer(value, name, low=0, noun="an int")


class StateRepeatGuard:
    """Halts when ``threshold`` consecutive observations have one :func:`fingerprint`
    (``threshold`` 0, the default, disables it)."""

    __slots__ = ("_last", "_streak_url", "streak", "threshold")

    def __init__(self, threshold: int = 0):
        self.threshold = _count("threshold", threshold)
        self.reset()

    def reset(self) -> None:
        """Forget the streak (a plan section passed: revisiting a page is legitimate again)."""
        self._last: str | None = None
        self._streak_url = ""
        self.streak = 0

    def observe(
        self, *, url: str, screenshot_bytes: Any = b"", visible_text: str = ""
    ) -> LoopGuardHalt | None:
        """Record one iteration; a :class:`LoopGuardHalt` once the streak reaches the threshold
        (and at every later equal observation)."""
        if self.threshold <= 0:
            return None
        fp = fingerprint(url, screenshot_bytes, visible_text)
        if fp == self._last:
            self.streak += 1
        else:
            self._last, self._streak_url, self.streak = fp, url or "", 1
        if self.streak < self.threshold:
            return None
        return LoopGuardHalt(
            LOOP_STUCK,
            f"the state repeated for {self.streak} consecutive iterations",
            {"fingerprint": fp, "url": self._streak_url, "streak": self.streak},
        )


class OffSourceDriftGuard:
    """Halts when ``step_budget`` consecutive observed URLs are outside ``pinned_pattern``
    (:func:`matches_pinned`); an empty pattern or a budget of 0 (the defaults) disables it."""

    __slots__ = ("_trail", "off_streak", "pinned_pattern", "step_budget")

    def __init__(self, pinned_pattern: str = "", step_budget: int = 0):
        self.pinned_pattern = _text("pinned_pattern", pinned_pattern)
        self.step_budget = _count("step_budget", step_budget)
        self._trail: deque[str] = deque(maxlen=OFF_URLS_TRAIL)
        self.off_streak = 0

    @property
    def off_urls(self) -> list[str]:
        """The latest off-pattern URLs of the current streak (at most four), oldest first."""
        return list(self._trail)

    def reset(self) -> None:
        """Forget the streak."""
        self.off_streak = 0
        self._trail.clear()

    def observe(self, *, url: str) -> LoopGuardHalt | None:
        """Record one iteration's URL; a :class:`LoopGuardHalt` once the budget is spent."""
        if not self.pinned_pattern or self.step_budget <= 0:
            return None
        if matches_pinned(url, self.pinned_pattern):
            self.reset()
            return None
        self.off_streak += 1
        self._trail.append(url)
        if self.off_streak < self.step_budget:
            return None
        return LoopGuardHalt(
            OFF_SOURCE_DRIFT,
            f"{self.off_streak} consecutive steps outside {self.pinned_pattern!r}",
            {
                "pinned_pattern": self.pinned_pattern,
                "off_streak": self.off_streak,
                "off_urls_trail": self.off_urls,
                "current_url": url,
            },
        )


class LoopGuardSuite:
    """Both guards behind one :meth:`observe`; when both would halt, the off-source halt wins."""

    __slots__ = ("off_source", "state_repeat")

    def __init__(
        self,
        state_repeat: StateRepeatGuard | None = None,
        off_source: OffSourceDriftGuard | None = None,
    ):
        self.state_repeat = StateRepeatGuard() if state_repeat is None else state_repeat
        self.off_source = OffSourceDriftGuard() if off_source is None else off_source
        if not isinstance(self.state_repeat, StateRepeatGuard):
            raise InvalidInputError(
                f"state_repeat must be a StateRepeatGuard, got {type(state_repeat).__name__}"
            )
        if not isinstance(self.off_source, OffSourceDriftGuard):
            raise InvalidInputError(
                f"off_source must be an OffSourceDriftGuard, got {type(off_source).__name__}"
            )

    def observe(
        self, *, url: str, screenshot_bytes: Any = b"", visible_text: str = ""
    ) -> LoopGuardHalt | None:
        """Feed one iteration to both guards (the state guard is skipped once the off-source
        guard halts, as upstream)."""
        halt = self.off_source.observe(url=url)
        if halt is not None:
            return halt
        return self.state_repeat.observe(
            url=url, screenshot_bytes=screenshot_bytes, visible_text=visible_text
        )

    def reset(self) -> None:
        """Reset both guards."""
        self.state_repeat.reset()
        self.off_source.reset()
