"""Paired ON/OFF ablations of one per-request toggle against a ``/v1/cua`` endpoint.

Upstream Mantis judges every change this way (``scripts/ablate_v1_cua.py``): one warm-up
request (the first episode pays for the cold start and is not counted), then ``pairs`` pairs
of requests against the same warm service, each pair the same instruction and start URL with
the toggle OFF then ON. Each pair is diffed (success, steps, wall time), the pairs are
aggregated per side, and a side that got worse is flagged: the ON side solving fewer
episodes, taking more steps (``STEPS_TOLERANCE``) or more wall time (``WALL_TOLERANCE`` and at
least ``WALL_FLOOR_S``), or failing requests the OFF side did not.

Any service speaking upstream's request shape will do: ``mantis-fast serve`` or upstream's own.
``mantis-fast ablate`` prints the table and exits 1 when a regression is flagged (2 when the
service cannot be used at all), so it can gate a change.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from mantis_fast.errors import AblationError, InvalidInputError

__all__ = [
    "STEPS_TOLERANCE",
    "WALL_FLOOR_S",
    "WALL_TOLERANCE",
    "Ablation",
    "CuaRun",
    "Pair",
    "format_table",
    "post_cua",
    "run_ablation",
]

#: The ON side is flagged when its mean steps exceed the OFF side's by more than this share.
STEPS_TOLERANCE = 0.10
#: ... or its mean wall time by more than this share (wall time is noisier than steps) and
#: by more than ``WALL_FLOOR_S``: a tenth of a second on a sub-second episode is noise.
WALL_TOLERANCE = 0.25
WALL_FLOOR_S = 1.0
_MAX_REPLY_BYTES = 1 << 20


@dataclass(frozen=True)
class CuaRun:
    """One ``/v1/cua`` request as the harness saw it: the reply's aggregates, or its error."""

    status: int
    wall_seconds: float
    success: bool | None = None
    steps: int | None = None
    elapsed_seconds: float | None = None
    termination_reason: str | None = None
    reused_session: bool | None = None
    loop_recoveries_by_reason: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Pair:
    index: int
    off: CuaRun
    on: CuaRun

    def diff(self) -> dict[str, Any]:
        """ON minus OFF: success gained (+1) or lost (-1), steps and wall seconds added."""

        def delta(name: str) -> float | None:
            a, b = getattr(self.off, name), getattr(self.on, name)
            return None if a is None or b is None else b - a

        gained = None
        if self.off.success is not None and self.on.success is not None:
            gained = int(self.on.success) - int(self.off.success)
        return {
            "pair": self.index,
            "success": gained,
            "steps": delta("steps"),
            "wall_seconds": delta("wall_seconds"),
        }


@dataclass
class Ablation:
    """The whole run: the warm-up, the pairs, and what they add up to."""

    toggle: str
    request: dict[str, Any]
    warmup: CuaRun | None
    pairs: list[Pair]

    def side(self, name: str) -> dict[str, Any]:
        """Aggregates of the OFF or ON side: success rate, mean steps and wall, errors."""
        runs = [getattr(pair, name) for pair in self.pairs]
        answered = [run for run in runs if run.ok]
        steps = [run.steps for run in answered if run.steps is not None]
        recoveries: dict[str, int] = {}
        for run in answered:
            for reason, count in run.loop_recoveries_by_reason.items():
                recoveries[reason] = recoveries.get(reason, 0) + int(count)
        return {
            "runs": len(runs),
            "errors": len(runs) - len(answered),
            "success_rate": (
                sum(bool(run.success) for run in answered) / len(answered) if answered else None
            ),
            "mean_steps": statistics.fmean(steps) if steps else None,
            "mean_wall_seconds": (
                statistics.fmean(run.wall_seconds for run in answered) if answered else None
            ),
            "loop_recoveries_by_reason": recoveries,
        }

    def regressions(self) -> list[str]:
        """What got worse with the toggle ON (empty: nothing)."""
        off, on = self.side("off"), self.side("on")
        flags = []
        if on["errors"] > off["errors"]:
            flags.append(f"errors: {on['errors']} ON vs {off['errors']} OFF")
        if (
            on["success_rate"] is not None
            and off["success_rate"] is not None
            and on["success_rate"] < off["success_rate"]
        ):
            flags.append(
                f"success rate: {on['success_rate']:.2f} ON vs {off['success_rate']:.2f} OFF"
            )
        for key, tolerance, floor, unit in (
            ("mean_steps", STEPS_TOLERANCE, 0.0, "steps"),
            ("mean_wall_seconds", WALL_TOLERANCE, WALL_FLOOR_S, "s"),
        ):
            a, b = off[key], on[key]
            if a is not None and b is not None and b > a * (1 + tolerance) and b - a > floor:
                flags.append(f"{key}: {b:.2f} {unit} ON vs {a:.2f} {unit} OFF")
        return flags

    def to_dict(self) -> dict[str, Any]:
        return {
            "toggle": self.toggle,
            "request": self.request,
            "warmup": None if self.warmup is None else asdict(self.warmup),
            "pairs": [
                {"off": asdict(p.off), "on": asdict(p.on), "diff": p.diff()} for p in self.pairs
            ],
            "aggregate": {"off": self.side("off"), "on": self.side("on")},
            "regressions": self.regressions(),
        }


def post_cua(
    client: httpx.Client, endpoint: str, token: str, body: Mapping[str, Any], timeout: float
) -> CuaRun:
    """One ``POST /v1/cua``; a failed request (HTTP error, timeout, unreadable reply) is a
    ``CuaRun`` with ``error`` set, so a pair is still reported."""
    started = time.perf_counter()
    try:
        reply = client.post(
            endpoint.rstrip("/") + "/v1/cua",
            json=dict(body),
            headers={"X-Mantis-Token": token},
            timeout=timeout,
        )
        wall = time.perf_counter() - started
        raw = reply.content[:_MAX_REPLY_BYTES]
        data = json.loads(raw) if raw else {}
    except (httpx.HTTPError, ValueError) as exc:
        return CuaRun(0, time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    if reply.status_code != 200 or not isinstance(data, dict):
        shown = data.get("error", data) if isinstance(data, dict) else data
        return CuaRun(reply.status_code, wall, error=f"HTTP {reply.status_code}: {shown}")
    recoveries = data.get("loop_recoveries_by_reason") or {}
    return CuaRun(
        status=200,
        wall_seconds=wall,
        success=None if data.get("success") is None else bool(data["success"]),
        steps=None if data.get("steps") is None else int(data["steps"]),
        elapsed_seconds=data.get("elapsed_seconds"),
        termination_reason=data.get("termination_reason"),
        reused_session=data.get("reused_session"),
        loop_recoveries_by_reason={str(k): int(v) for k, v in dict(recoveries).items()},
    )


def run_ablation(
    endpoint: str,
    token: str,
    toggle: str,
    request: Mapping[str, Any],
    *,
    pairs: int = 3,
    warmup: bool = True,
    timeout: float = 600.0,
    progress: Any = None,
) -> Ablation:
    """Run the warm-up and ``pairs`` OFF/ON pairs of ``request`` (upstream's body:
    ``instruction``, ``start_url``, ...) with ``toggle`` set false then true.
    ``progress(label, run)`` is called after each request. ``AblationError`` when the warm-up
    is refused (a bad token, an unknown toggle: every pair would fail the same way)."""
    if not isinstance(toggle, str) or not toggle:
        raise InvalidInputError(f"toggle must be a non-empty string, got {toggle!r}")
    if isinstance(pairs, bool) or not (isinstance(pairs, int) and pairs >= 1):
        raise InvalidInputError(f"pairs must be an integer >= 1, got {pairs!r}")
    if toggle in request:
        raise InvalidInputError(f"the request already sets the toggle {toggle!r}")
    body = dict(request)
    result = Ablation(toggle=toggle, request=body, warmup=None, pairs=[])
    with httpx.Client() as client:
        if warmup:
            # The warm-up carries the toggle too (OFF), so a service that does not know it
            # says so once, here, instead of in every pair.
            first = post_cua(client, endpoint, token, {**body, toggle: False}, timeout)
            result.warmup = first
            if progress is not None:
                progress("warm-up", first)
            if first.status in (400, 401, 403, 404, 413, 415) or first.status == 0:
                raise AblationError(f"the warm-up request failed, not going on: {first.error}")
        for index in range(1, pairs + 1):
            runs = {}
            for label, value in (("off", False), ("on", True)):
                runs[label] = post_cua(client, endpoint, token, {**body, toggle: value}, timeout)
                if progress is not None:
                    progress(f"pair {index} {label.upper()}", runs[label])
            result.pairs.append(Pair(index, runs["off"], runs["on"]))
    return result


def _cell(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_table(ablation: Ablation) -> str:
    """The per-pair diffs, the aggregate per side and the regression flags, as text."""
    lines = [f"ablation of {ablation.toggle}: {len(ablation.pairs)} OFF/ON pairs"]
    header = ("pair", "OFF ok", "ON ok", "OFF steps", "ON steps", "OFF wall s", "ON wall s")
    rows: list[Sequence[str]] = [header]
    for pair in ablation.pairs:
        rows.append(
            (
                str(pair.index),
                _cell(pair.off.success) if pair.off.ok else "error",
                _cell(pair.on.success) if pair.on.ok else "error",
                _cell(pair.off.steps),
                _cell(pair.on.steps),
                _cell(pair.off.wall_seconds),
                _cell(pair.on.wall_seconds),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.append("")
    for name in ("off", "on"):
        side = ablation.side(name)
        lines.append(
            f"{name.upper():>3}: success {_cell(side['success_rate'])}, "
            f"steps {_cell(side['mean_steps'])}, wall {_cell(side['mean_wall_seconds'])} s, "
            f"errors {side['errors']}, loop recoveries {side['loop_recoveries_by_reason'] or {}}"
        )
    flags = ablation.regressions()
    lines.append("regressions: " + ("; ".join(flags) if flags else "none"))
    return "\n".join(lines)
