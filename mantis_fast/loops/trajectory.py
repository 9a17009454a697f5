"""Loop flags over whole recorded trajectories: the batched form of :class:`LoopDetector`.

Flag ``t`` of every function here is what a streaming ``LoopDetector`` (with ``history >= window``)
answers right after step ``t`` was recorded, so a host can re-check millions of logged steps in
milliseconds and get the same verdicts its live loop would have given.

The arrays are integer-coded:

* ``kind`` — drift kind per step: 0 for actions that cannot drift, ``1..len(DRIFT_KINDS)`` for
  :data:`~mantis_fast.loops.detector.DRIFT_KINDS` in order (or the action type names themselves).
* ``action_id`` — equal ids on consecutive steps mean identical actions (type and params).
* ``state`` — equal codes on consecutive steps mean the same (frame hash, URL); a negative code
  means neither a frame nor a URL was seen at that step, which never forms a state loop.
* ``pattern``, ``url_id``, ``frame_id`` (optional; :meth:`Trajectory.from_actions` fills them) —
  for adaptive windows: equal codes mean the same action pattern
  (:func:`~mantis_fast.loops.adaptive.pattern_signature`), the same URL, the same frame hash;
  a negative ``url_id`` / ``frame_id`` means none was seen.

:meth:`Trajectory.from_actions` builds all of them from the same action forms the streaming
detector accepts. ``window`` is any int >= 2: one longer than the trajectory flags nothing (all
False, without running a kernel or allocating scratch for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mantis_fast._validate import as_index, integer, optional_flag
from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.loops import _loop
from mantis_fast.loops.adaptive import (
    DIVERSITY_EXTEND,
    DIVERSITY_SHRINK,
    MAX_EXTENSION,
    adaptive_loop_enabled,
    pattern_signature,
)
from mantis_fast.loops.samples import DRIFT_CODE, DRIFT_KINDS, to_sample
from mantis_fast.loops.tolerance import (
    _scaled_click_tol,
    adaptive_click_tol_enabled,
    check_click_tol,
)

__all__ = [
    "Trajectory",
    "drift_loop_flags",
    "encode_drift_kinds",
    "repeat_loop_flags",
    "state_loop_flags",
]


def _check_window(window: Any) -> int:
    """An int >= 2, of any size: a window longer than the trajectory flags nothing (the
    functions then skip the kernels, which take a C ``Py_ssize_t`` and O(window) scratch)."""
    value = as_index(window)
    if value is None or value < 2:
        raise InvalidInputError(f"window must be an int >= 2, got {_shown(window)}")
    return value


def _array_1d(name: str, values: Any) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"{name} must be a 1-D array, got {type(values).__name__}: {exc}"
        ) from None
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be a 1-D array, got shape {arr.shape} ({arr.dtype})")
    return arr


def _finite_float64(name: str, values: Any) -> np.ndarray:
    arr = _array_1d(name, values)
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    # A finite sum proves every value finite (NaN and inf propagate); only then is it cheap.
    with np.errstate(all="ignore"):  # overflow of huge finite values only sends us the slow way
        total = np.add.reduce(arr)
    if not np.isfinite(total):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidInputError(f"{name} must be finite, got {arr[i]} at index {i}")
    return arr


def _int64_codes(name: str, values: Any) -> np.ndarray:
    arr = _array_1d(name, values)
    if arr.size == 0:  # np.asarray([]) is float64: an empty list is still an empty trajectory
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must hold integer codes, got dtype {arr.dtype}")
    # uint64 -> int64 wraps, which keeps equal codes equal and distinct codes distinct.
    return np.ascontiguousarray(arr.astype(np.int64, copy=False))


def _same_length(**arrays: np.ndarray) -> int:
    lengths = {name: len(arr) for name, arr in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise InvalidInputError(f"arrays must have the same length, got {shown}")
    return next(iter(lengths.values()))


def encode_drift_kinds(kinds: Any) -> np.ndarray:
    """int8 drift codes from action type names or from codes (validated).

    Names are matched case-insensitively; a name outside ``DRIFT_KINDS`` is an action that cannot
    drift (code 0). Integer codes outside ``0..len(DRIFT_KINDS)`` raise ValueError.
    """
    arr = _array_1d("kind", kinds)
    if arr.size == 0:
        return np.empty(0, dtype=np.int8)
    if arr.dtype.kind in "iu":
        if arr.min() < 0 or arr.max() > len(DRIFT_KINDS):
            bad = (arr < 0) | (arr > len(DRIFT_KINDS))
            i = int(np.argmax(bad))
            raise InvalidInputError(
                f"kind: unknown action kind code {arr[i]} at index {i}; expected 0 (cannot drift) "
                f"or 1..{len(DRIFT_KINDS)} for {', '.join(DRIFT_KINDS)}"
            )
        return np.ascontiguousarray(arr, dtype=np.int8)
    if arr.dtype.kind in "UO":
        codes = np.empty(len(arr), dtype=np.int8)
        for i, name in enumerate(arr.tolist()):
            if not isinstance(name, str):
                raise InvalidInputError(
                    f"kind: expected action type names, got {_shown(name)} at index {i}"
                )
            codes[i] = DRIFT_CODE.get(name.lower(), 0)
        return codes
    raise InvalidInputError(
        f"kind must hold integer codes or action type names, got dtype {arr.dtype}"
    )


def _tolerances(tol: Any, n: int) -> np.ndarray:
    """float64 (n,) tolerances from a scalar (broadcast, no copy) or a per-step array."""
    try:
        arr = np.asarray(tol)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"tol must be a number or a 1-D array, got {type(tol).__name__}: {exc}"
        ) from None
    scalar = arr.ndim == 0
    arr = _finite_float64("tol", arr.reshape(1) if scalar else arr)
    if not scalar and len(arr) != n:
        raise InvalidInputError(
            f"tol must be a scalar or hold one value per step ({n}), got {len(arr)}"
        )
    if len(arr) and arr.min() < 0:
        i = int(np.argmax(arr < 0))
        raise InvalidInputError(f"tol must be >= 0, got {arr[i]} at index {i}")
    return np.broadcast_to(arr, (n,)) if scalar else arr


def _bool_mask(name: str, values: Any, n: int) -> np.ndarray:
    if values is None:
        return np.zeros(n, dtype=np.uint8)
    arr = _array_1d(name, values)
    if arr.dtype.kind == "b":
        return np.ascontiguousarray(arr, dtype=np.uint8)
    if arr.dtype.kind in "iu" and ((arr == 0) | (arr == 1)).all():
        return np.ascontiguousarray(arr, dtype=np.uint8)
    raise InvalidInputError(f"{name} must be a boolean mask, got dtype {arr.dtype}")


def drift_loop_flags(x: Any, y: Any, kind: Any, tol: Any, window: int) -> np.ndarray:
    """Flag the steps at which the window ending there is a drift loop.

    Parameters
    ----------
    x, y : array_like
        (T,) action points (a drag's start point), finite.
    kind : array_like
        (T,) drift codes or action type names (see :func:`encode_drift_kinds`).
    tol : float or array_like
        The effective tolerance of each step as a window's first sample, >= 0: a scalar or
        one per step.
    window : int
        The window, an int >= 2; one longer than the trajectory flags nothing.

    Returns
    -------
    numpy.ndarray
        bool (T,): flag ``t`` is what a streaming ``LoopDetector`` answers right after step
        ``t``.

    Raises
    ------
    InvalidInputError
        A ``window`` below 2, arrays of different lengths or not 1-D, non-finite points, a
        negative tolerance or an unknown kind code.

    Notes
    -----
    Window ``[f, t]`` is a loop when all its steps share one non-zero kind and
    ``|x[i] - x[f]| <= tol[f]`` and ``|y[i] - y[f]| <= tol[f]``. O(T) whatever the window,
    without the GIL, spread over threads when built with OpenMP.
    """
    window = _check_window(window)
    xs = _finite_float64("x", x)
    ys = _finite_float64("y", y)
    kinds = encode_drift_kinds(kind)
    n = _same_length(x=xs, y=ys, kind=kinds)
    tols = _tolerances(tol, n)
    out = np.zeros(n, dtype=np.uint8)
    if window <= n:  # a longer window never fits: all False, and no O(window) scratch
        _loop.drift_flags(xs, ys, kinds, tols, window, out)
    return out.view(np.bool_)


def repeat_loop_flags(
    action_id: Any, window: int, *, scroll: Any = None, state: Any = None
) -> np.ndarray:
    """Flag the steps at which the last ``window`` actions are identical (equal ids).

    Parameters
    ----------
    action_id : array_like
        (T,) integer codes: equal ids on consecutive steps mean identical actions.
    window : int
        The window, an int >= 2; one longer than the trajectory flags nothing.
    scroll : array_like, optional
        (T,) boolean mask of scroll-like actions; None (the default): none.
    state : array_like, optional
        (T,) integer state codes; None (the default): nothing is known to change.

    Returns
    -------
    numpy.ndarray
        bool (T,), one flag per step.

    Raises
    ------
    InvalidInputError
        A ``window`` below 2, arrays of different lengths, not 1-D or not integer codes, or a
        ``scroll`` that is not a boolean mask.

    Notes
    -----
    A window of identical scroll-like actions is not a loop when ``state`` changed at each of
    its ``window - 1`` steps (the page was still moving). Without ``state`` nothing is known
    to change, so repeated scrolls count as loops, as in the streaming detector.
    """
    window = _check_window(window)
    ids = _int64_codes("action_id", action_id)
    n = len(ids)
    scrolls = _bool_mask("scroll", scroll, n)
    states = np.zeros(n, dtype=np.int64) if state is None else _int64_codes("state", state)
    _same_length(action_id=ids, scroll=scrolls, state=states)
    out = np.zeros(n, dtype=np.uint8)
    if window <= n:
        _loop.repeat_flags(ids, scrolls, states, window, out)
    return out.view(np.bool_)


def state_loop_flags(state: Any, window: int) -> np.ndarray:
    """Flag the steps at which the last ``window`` steps share one non-negative state code.

    Parameters
    ----------
    state : array_like
        (T,) integer codes: equal codes on consecutive steps mean the same (frame hash, URL);
        a negative code (neither seen) never forms a state loop.
    window : int
        The window, an int >= 2; one longer than the trajectory flags nothing.

    Returns
    -------
    numpy.ndarray
        bool (T,), one flag per step.

    Raises
    ------
    InvalidInputError
        A ``window`` below 2, or ``state`` that is not a 1-D array of integer codes.
    """
    window = _check_window(window)
    states = _int64_codes("state", state)
    out = np.zeros(len(states), dtype=np.uint8)
    if window <= len(states):
        _loop.state_flags(states, window, out)
    return out.view(np.bool_)


def _previous_occurrence(codes: np.ndarray) -> np.ndarray:
    """int64 (T,): the step of each non-negative code's previous occurrence (``-2**62`` for none,
    and for negative codes, which never count)."""
    n = len(codes)
    known = np.flatnonzero(codes >= 0)
    order = known[np.argsort(codes[known], kind="stable")]  # by code, then by step
    prev = np.full(n, -(2**62), dtype=np.int64)
    same = codes[order[1:]] == codes[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def _distinct_in_windows(
    codes: np.ndarray, window: int, prev: np.ndarray | None = None
) -> np.ndarray:
    """int64 (T,): how many distinct non-negative codes steps ``t - window + 1 .. t`` hold (for
    ``t >= window - 1``; fewer steps before that), in O(T) given ``prev``
    (:func:`_previous_occurrence`, computed when not given), whatever the window.

    A step counts in the windows where it is the first occurrence of its code: those whose first
    step lies after the code's previous occurrence ``p`` and at or before the step ``i`` itself,
    i.e. windows ending at ``t`` in ``[max(p + window, i), i + window)``: one range per step,
    summed with a difference array.
    """
    if prev is None:
        prev = _previous_occurrence(codes)
    n = len(codes)
    known = np.flatnonzero(codes >= 0)
    start = np.maximum(prev[known] + window, known)
    stop = known + window
    diff = np.bincount(np.minimum(start, n), minlength=n + 1)[:n]
    diff -= np.bincount(np.minimum(stop, n), minlength=n + 1)[:n]
    return np.cumsum(diff)


def _check_adaptive_args(base_window: Any, max_extension: Any, floor: Any) -> tuple[int, int, int]:
    """``(base, max_extension, floor)`` as Python ints (a numpy uint8 would wrap in the
    arithmetic below)."""
    return (_check_window(base_window), *check_extension(max_extension, floor))


def check_extension(max_extension: Any, floor: Any) -> tuple[int, int]:
    """The adaptive window's ``max_extension`` (an int >= 0) and ``floor`` (an int >= 2), for
    the streaming detector and the batched flags alike."""
    return (
        integer(max_extension, "max_extension", low=0, noun="an int"),
        integer(floor, "floor", low=2, noun="an int"),
    )


@dataclass(frozen=True, eq=False)
class Trajectory:
    """A recorded trajectory as the integer-coded arrays the batched loop flags take.

    Build it with :meth:`from_actions`, or directly from arrays (validated like the functions
    and stored as read-only views).

    Parameters
    ----------
    x, y : array_like
        float64 (T,): a drift step's point (0.0 elsewhere).
    kind : array_like
        int8 (T,) drift codes, or action type names.
    tol : float or array_like
        float64 (T,): the effective click tolerance of each step as a window's first sample
        (a scalar is broadcast).
    action_id : array_like
        int64 (T,): equal on consecutive identical actions.
    scroll : array_like
        bool (T,): scroll-like action (scroll, wait, navigation key).
    state : array_like
        int64 (T,): equal on consecutive equal (frame hash, URL); < 0: neither.
    pattern : array_like, optional
        int64 (T,): equal on equal pattern signatures, for adaptive windows.
    url_id : array_like, optional
        int64 (T,): equal on equal URLs; < 0: no URL. For adaptive windows.
    frame_id : array_like, optional
        int64 (T,): equal on equal frame hashes; < 0: none. For adaptive windows.

    Raises
    ------
    InvalidInputError
        Arrays that fail the functions' checks or differ in length.

    Notes
    -----
    ``pattern``, ``url_id`` and ``frame_id`` default to None (not known): the adaptive methods
    then refuse.
    """

    x: np.ndarray  # float64 (T,), a drift step's point (0.0 elsewhere)
    y: np.ndarray  # float64 (T,)
    kind: np.ndarray  # int8 (T,), drift codes
    tol: np.ndarray  # float64 (T,), effective click tolerance as a window's first sample
    action_id: np.ndarray  # int64 (T,), equal on consecutive identical actions
    scroll: np.ndarray  # bool (T,), scroll-like action (scroll, wait, navigation key)
    state: np.ndarray  # int64 (T,), equal on consecutive equal (frame hash, URL); < 0: neither
    # For adaptive windows (None: not known, and the adaptive methods refuse):
    pattern: np.ndarray | None = None  # int64 (T,), equal on equal pattern signatures
    url_id: np.ndarray | None = None  # int64 (T,), equal on equal URLs; < 0: no URL
    frame_id: np.ndarray | None = None  # int64 (T,), equal on equal frame hashes; < 0: none

    def __post_init__(self) -> None:
        xs = _finite_float64("x", self.x)
        ys = _finite_float64("y", self.y)
        kinds = encode_drift_kinds(self.kind)
        ids = _int64_codes("action_id", self.action_id)
        states = _int64_codes("state", self.state)
        n = _same_length(x=xs, y=ys, kind=kinds, action_id=ids, state=states)
        fields = {
            "x": xs,
            "y": ys,
            "kind": kinds,
            "tol": np.ascontiguousarray(_tolerances(self.tol, n)),
            "action_id": ids,
            "scroll": _bool_mask("scroll", self.scroll, n).view(np.bool_),
            "state": states,
        }
        for name in ("pattern", "url_id", "frame_id"):
            if getattr(self, name) is not None:
                fields[name] = _int64_codes(name, getattr(self, name))
                _same_length(x=xs, **{name: fields[name]})
        for name, arr in fields.items():
            view = arr.view()  # read-only view: the caller's own array stays writable
            view.flags.writeable = False
            object.__setattr__(self, name, view)

    def __len__(self) -> int:
        return len(self.x)

    @classmethod
    def from_actions(
        cls,
        actions: Iterable[Any],
        *,
        urls: Sequence[str | None] | None = None,
        frames: Sequence[Any] | None = None,
        click_tol_px: float = 8,
        adaptive: bool | None = None,
    ) -> Trajectory:
        """Encode actions (any form :func:`~mantis_fast.loops.detector.normalize_action` takes).

        Parameters
        ----------
        actions : iterable
            The actions, one per step.
        urls : sequence of str or None, optional
            The page URL of each step; None (the default): none known.
        frames : sequence, optional
            The frame of each step (hash strings, images or None); None (the default): none
            known.
        click_tol_px : float, default 8
            As for ``LoopDetector``.
        adaptive : bool, optional
            As for ``LoopDetector``; None (the default) reads ``MANTIS_ADAPTIVE_CLICK_TOL``
            now, once for the whole trajectory.

        Returns
        -------
        Trajectory
            Every field filled, the adaptive-window codes included.

        Raises
        ------
        InvalidInputError
            ``urls`` or ``frames`` of another length than ``actions``, a bad ``click_tol_px``
            or ``adaptive``, or an action that cannot be read.
        """
        actions = list(actions)
        n = len(actions)
        urls = [""] * n if urls is None else list(urls)
        frames = [None] * n if frames is None else list(frames)
        if len(urls) != n or len(frames) != n:
            raise InvalidInputError(
                f"arrays must have the same length, got actions={n}, urls={len(urls)}, "
                f"frames={len(frames)}"
            )
        check_click_tol(click_tol_px)
        optional_flag(adaptive, "adaptive")
        adaptive = adaptive_click_tol_enabled() if adaptive is None else bool(adaptive)

        xs = np.zeros(n, dtype=np.float64)
        ys = np.zeros(n, dtype=np.float64)
        kinds = np.zeros(n, dtype=np.int8)
        tols = np.full(n, float(click_tol_px), dtype=np.float64)
        ids = np.zeros(n, dtype=np.int64)
        scrolls = np.zeros(n, dtype=np.bool_)
        states = np.zeros(n, dtype=np.int64)
        patterns = np.zeros(n, dtype=np.int64)
        url_ids = np.full(n, -1, dtype=np.int64)
        frame_ids = np.full(n, -1, dtype=np.int64)
        interned: tuple[dict, dict, dict] = ({}, {}, {})  # pattern, URL, hash -> code
        action_run = state_run = 0
        previous = None
        for t, (action, url, frame) in enumerate(zip(actions, urls, frames, strict=True)):
            _, code, x, y, reasoning, signature, scroll, frame_hash, url = to_sample(
                action, url, frame
            )
            if code:
                kinds[t], xs[t], ys[t] = code, x, y
                tols[t] = _scaled_click_tol(click_tol_px, reasoning, adaptive)
            scrolls[t] = scroll
            if previous is not None:
                if signature != previous[0]:
                    action_run += 1
                if (frame_hash, url) != previous[1]:
                    state_run += 1
            ids[t] = action_run
            known = frame_hash is not None or url != ""  # the URL alone is a state
            states[t] = state_run if known else -1 - state_run
            previous = (signature, (frame_hash, url))
            pattern = pattern_signature(*signature)
            patterns[t] = interned[0].setdefault(pattern, len(interned[0]))
            if url:
                url_ids[t] = interned[1].setdefault(url, len(interned[1]))
            if frame_hash is not None:
                frame_ids[t] = interned[2].setdefault(frame_hash, len(interned[2]))
        return cls(xs, ys, kinds, tols, ids, scrolls, states, patterns, url_ids, frame_ids)

    def drift_flags(self, window: int) -> np.ndarray:
        """:func:`drift_loop_flags` of this trajectory.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            bool (T,), one flag per step.
        """
        return drift_loop_flags(self.x, self.y, self.kind, self.tol, window)

    def repeat_flags(self, window: int) -> np.ndarray:
        """:func:`repeat_loop_flags` of this trajectory.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            bool (T,), one flag per step.
        """
        return repeat_loop_flags(self.action_id, window, scroll=self.scroll, state=self.state)

    def state_flags(self, window: int) -> np.ndarray:
        """:func:`state_loop_flags` of this trajectory.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            bool (T,), one flag per step.
        """
        return state_loop_flags(self.state, window)

    def any_flags(self, window: int) -> np.ndarray:
        """Any of the three loop kinds at each step.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            bool (T,), one flag per step.
        """
        return self.drift_flags(window) | self.repeat_flags(window) | self.state_flags(window)

    # --- adaptive windows: what LoopDetector's methods of the same names answer after each step

    def _distinct(self, name: str, window: int) -> np.ndarray:
        """:func:`_distinct_in_windows` of a code field, its previous occurrences computed once
        (the sort) and kept for the other windows."""
        codes = self._codes(name)
        cache = self.__dict__.setdefault("_previous", {})
        if name not in cache:
            cache[name] = _previous_occurrence(codes)
        return _distinct_in_windows(codes, window, cache[name])

    def _codes(self, name: str) -> np.ndarray:
        for field_name in ("pattern", "url_id", "frame_id"):  # all three, whichever is asked
            if getattr(self, field_name) is None:
                raise InvalidInputError(
                    f"adaptive windows need the trajectory's {field_name} codes: build it with "
                    "Trajectory.from_actions or pass pattern, url_id and frame_id"
                )
        return getattr(self, name)

    def _full(self, window: int) -> np.ndarray:
        return np.arange(len(self)) >= window - 1  # steps whose window is complete

    def pattern_diversity(self, window: int) -> np.ndarray:
        """Share of distinct patterns among the last ``window`` steps, after each step.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            float64 (T,): distinct patterns / ``window`` (0.0 before ``window`` steps).

        Raises
        ------
        InvalidInputError
            A ``window`` below 2, or a trajectory without its adaptive-window codes.
        """
        window = _check_window(window)
        distinct = self._distinct("pattern", window)
        return np.where(self._full(window), distinct / window, 0.0)

    def state_progressed(self, window: int) -> np.ndarray:
        """Whether the URL or the screen moved within the last ``window`` steps, after each step.

        Parameters
        ----------
        window : int
            The window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            bool (T,): two distinct URLs, or two distinct frame hashes, among the last
            ``window`` steps.

        Raises
        ------
        InvalidInputError
            A ``window`` below 2, or a trajectory without its adaptive-window codes.
        """
        window = _check_window(window)
        urls = self._distinct("url_id", window)
        frames = self._distinct("frame_id", window)
        return self._full(window) & ((urls > 1) | (frames > 1))

    def adaptive_windows(
        self, base_window: int, *, max_extension: int = MAX_EXTENSION, floor: int = 2
    ) -> np.ndarray:
        """The adaptive window after each step.

        Parameters
        ----------
        base_window : int
            The base window, an int >= 2.
        max_extension : int, default MAX_EXTENSION
            How far the window may widen, an int >= 0.
        floor : int, default 2
            The narrowest window, an int >= 2.

        Returns
        -------
        numpy.ndarray
            int64 (T,): :meth:`LoopDetector.adaptive_window
            <mantis_fast.loops.detector.LoopDetector.adaptive_window>` after each step.

        Raises
        ------
        InvalidInputError
            An argument out of range, or a trajectory without its adaptive-window codes.
        """
        base, max_extension, floor = _check_adaptive_args(base_window, max_extension, floor)
        n = len(self._codes("pattern"))
        if base <= floor:
            return np.full(n, base, dtype=np.int64)
        diversity = self.pattern_diversity(base)
        progressed = self.state_progressed(base)
        shrunk = max(floor, base - max(1, max_extension // 2))
        window = np.where(diversity <= DIVERSITY_SHRINK, shrunk, base)
        window = np.where(
            (diversity >= DIVERSITY_EXTEND) | progressed, base + max_extension, window
        )
        return np.where(self._full(base), window, base).astype(np.int64)

    def any_flags_adaptive(
        self, base_window: int, *, max_extension: int = MAX_EXTENSION, adaptive: bool | None = None
    ) -> np.ndarray:
        """Any loop over the adaptive window, with the pagination guard, after each step.

        Parameters
        ----------
        base_window : int
            The base window, an int >= 2.
        max_extension : int, default MAX_EXTENSION
            How far the window may widen, an int >= 0.
        adaptive : bool, optional
            Overrides ``MANTIS_LOOP_ADAPTIVE``; None (the default) reads it now. Off, this is
            ``any_flags(base_window)``.

        Returns
        -------
        numpy.ndarray
            bool (T,): :meth:`LoopDetector.is_any_loop_adaptive
            <mantis_fast.loops.detector.LoopDetector.is_any_loop_adaptive>` after each step.

        Raises
        ------
        InvalidInputError
            An argument out of range, or a trajectory without its adaptive-window codes.
        """
        optional_flag(adaptive, "adaptive")
        windows = self.adaptive_windows(base_window, max_extension=max_extension)
        if not (adaptive_loop_enabled() if adaptive is None else adaptive):
            return self.any_flags(base_window)
        out = np.zeros(len(self), dtype=np.bool_)
        for window in np.unique(windows).tolist():
            at = windows == window
            # A window in which the URL or the screen moved is progress, unless a state loop.
            state = self.state_flags(window)
            progress = self.state_progressed(window) & ~state
            loop = state | self.repeat_flags(window) | self.drift_flags(window)
            out[at] = (loop & ~progress)[at]
        return out
