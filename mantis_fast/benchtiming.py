"""Timing for ``mantis-fast bench``: members of an operation, their medians and ratios.

Every member is timed alone, call by call, and reported by its median. Each gets about the same
time budget (cheap calls get more rounds, within bounds), and the members of one operation take
turns in blocks, so a machine that gets busier halfway through slows all of them alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from mantis_fast.errors import InvalidInputError

__all__ = [
    "Effort",
    "Member",
    "Operation",
    "Skipped",
    "make_member",
    "package_version",
    "require",
    "time_members",
]


class Skipped(Exception):
    """A peer that cannot run here: not installed, or unusable on this display."""


@dataclass(frozen=True)
class Effort:
    """How long to time each member: ``budget_s`` of calls, within [min_rounds, max_rounds]."""

    budget_s: float
    min_rounds: int
    max_rounds: int
    blocks: int  # the members of an operation take turns this many times
    warmup: int

    def __post_init__(self) -> None:
        if not (self.budget_s > 0 and 1 <= self.min_rounds <= self.max_rounds):
            raise InvalidInputError(
                f"need budget_s > 0 and 1 <= min_rounds <= max_rounds, got {self}"
            )
        if self.blocks < 1 or self.warmup < 1:
            raise InvalidInputError(f"need blocks >= 1 and warmup >= 1, got {self}")


@dataclass
class Member:
    """One contender of an operation: the subject (mantis_fast), a peer or a reference."""

    name: str
    role: str  # "subject" | "peer" | "reference"
    fn: Callable[[], Any] | None = None
    skipped: str | None = None
    samples: list[float] = field(default_factory=list)
    result: Any = None

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    def to_json(self, subject_median: float | None) -> dict[str, Any]:
        if self.skipped is not None:
            return {"name": self.name, "role": self.role, "skipped": self.skipped}
        data = {
            "name": self.name,
            "role": self.role,
            "median_s": self.median_s,
            "min_s": min(self.samples),
            "rounds": len(self.samples),
        }
        if subject_median is not None and self.role != "subject":
            data["ratio"] = self.median_s / subject_median
        return data


@dataclass
class Operation:
    """One row group of the report: what was timed, who took part, derived figures."""

    key: str
    title: str
    members: list[Member]
    bandwidth_bytes: float | None = None  # bytes the subject reads + writes, for the memcpy share
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def subject(self) -> Member:
        return next(m for m in self.members if m.role == "subject")

    def member(self, role: str) -> Member | None:
        return next((m for m in self.members if m.role == role and m.skipped is None), None)

    @property
    def memcpy_fraction(self) -> float | None:
        """Share of np.copyto's bandwidth the subject reaches (1.0 = as fast as a memcpy)."""
        reference = self.member("reference")
        if reference is None or self.bandwidth_bytes is None:
            return None
        copy_rate = reference.result / reference.median_s  # bytes read + written per second
        return self.bandwidth_bytes / self.subject.median_s / copy_rate

    def to_json(self) -> dict[str, Any]:
        base = self.subject.median_s
        data: dict[str, Any] = {
            "key": self.key,
            "title": self.title,
            "members": [m.to_json(base) for m in self.members],
        }
        if self.memcpy_fraction is not None:
            data["memcpy_fraction"] = self.memcpy_fraction
        data.update(self.facts)
        return data


def time_members(members: list[Member], effort: Effort) -> None:
    """Warm up, size each member's rounds to the budget, then time them in interleaved blocks.

    A peer or reference that raises is marked skipped with the error (the report goes on); the
    subject's errors propagate.
    """
    rounds: dict[int, int] = {}
    for m in members:
        if m.skipped is None:
            rounds[id(m)] = _guarded(m, lambda m=m: _warm_up(m, effort))
    for block in range(effort.blocks):
        for m in members:
            if m.skipped is None:
                _guarded(m, lambda m=m, block=block: _time_block(m, rounds[id(m)], block, effort))


def _warm_up(m: Member, effort: Effort) -> int:
    """Run the warm-up calls; returns the rounds that fit the budget at the last call's cost."""
    for i in range(effort.warmup):
        start = time.perf_counter()
        m.result = m.fn()
        cost = time.perf_counter() - start
        if cost * (effort.warmup - i - 1) > effort.budget_s:  # slow: no point warming more
            break
    return min(max(int(effort.budget_s / max(cost, 1e-9)), effort.min_rounds), effort.max_rounds)


def _time_block(m: Member, rounds: int, block: int, effort: Effort) -> None:
    share = rounds * (block + 1) // effort.blocks - rounds * block // effort.blocks
    for _ in range(share):
        start = time.perf_counter()
        m.result = m.fn()
        m.samples.append(time.perf_counter() - start)


def _guarded(m: Member, step: Callable[[], Any]) -> Any:
    if m.role == "subject":
        return step()
    try:
        return step()
    except Exception as exc:  # a peer broken here is reported, not fatal
        m.skipped, m.samples, m.result = f"failed: {exc!r}"[:200], [], None
        return 0


def make_member(name: str, role: str, make: Callable[[], Callable[[], Any]]) -> Member:
    """Build a member; a peer whose set-up raises Skipped or ImportError is reported skipped."""
    try:
        return Member(name, role, fn=make())
    except (Skipped, ImportError) as exc:
        if role == "subject":
            raise
        return Member(name, role, skipped=str(exc) or type(exc).__name__)


def require(module: str, what: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise Skipped(f"{what} not installed") from None


def package_version(*distributions: str) -> str | None:
    """The installed version of the first of ``distributions`` found, without importing it
    (importing pyautogui, for one, opens an X connection)."""
    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
