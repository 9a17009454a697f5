"""Parity with upstream Mantis's loop detector (``mantis_agent.loop_detector``), judged by its own
tests and by a model of its rules on random action sequences.

* Upstream's test cases (``tests/support/loop_upstream_cases.py``, transcribed as data with
  attribution) replay against ``mantis_fast.LoopDetector`` through :func:`replay`, which maps
  upstream's calls onto ours (the same method names; upstream's hand-injected frame hashes become
  ``frame=``).
  Cases that encode a behaviour we deliberately differ in are strict xfails naming the row of
  the differences table in docs/loops.md.
* :class:`UpstreamModel` restates upstream's rules (in this project's words, not its code). The
  same cases check the model first; then hypothesis compares the model and our detector on
  random sequences drawn where the two define the same thing (the table lists where they don't).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.loops.detector import (
    LoopDetector,
    adaptive_click_tol_enabled,
    adaptive_loop_enabled,
    compute_click_tol_px,
)
from mantis_fast.loops.guards import (
    LoopGuardSuite,
    OffSourceDriftGuard,
    StateRepeatGuard,
    fingerprint,
)
from tests.support import loop_upstream_cases as cases

ENV_VARS = ("MANTIS_ADAPTIVE_CLICK_TOL", "MANTIS_LOOP_ADAPTIVE")
DIFFERENCES = "docs/loops.md, differences from upstream: "
#: Upstream cases we deliberately answer differently: source -> the differences-table row.
DELIBERATE = {
    "test_loop_detector.py::test_window_one_or_zero_never_fires": (
        "window < 2 is a caller's bug: InvalidInputError, not False"
    ),
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


# --- upstream's rules, restated ----------------------------------------------------------------

# Upstream's scroll-like keys, matched as substrings of the lower-cased key string (as it does).
UPSTREAM_SCROLL_KEYS = ("page_down", "pagedown", "page_up", "pageup", "down", "up", "j", "k")
UPSTREAM_KEYWORDS = (
    ("submit button", 1.5), ("button", 1.5), ("submit", 1.5),
    ("dropdown", 0.75), ("select", 0.75), ("menu item", 0.75),
    ("link", 0.5), ("anchor", 0.5),
    ("listing", 1.0), ("card", 1.0), ("input field", 1.0), ("form field", 1.0),
    ("text field", 1.0),
)  # fmt: skip


def _env_on(name: str) -> bool:
    value = os.environ.get(name, "enabled").strip().lower()
    return value not in {"disabled", "0", "false", "off", "no"}


class UpstreamModel:
    """Upstream's detector as its rules read: a growing list; ``""`` means "not known"; types are
    upstream's ``ActionType`` values (``key_press``, ``type_text``, ...)."""

    def __init__(self, click_tol_px: int = 8):
        self.click_tol_px = click_tol_px
        self.samples: list[dict[str, Any]] = []

    def reset(self) -> None:
        self.samples.clear()

    def record(self, action: dict[str, Any], url: str = "", frame: str = "") -> None:
        self.samples.append({**action, "url": url, "frame": frame})

    def _tail(self, window: int) -> list[dict[str, Any]] | None:
        if window < 2 or len(self.samples) < window:
            return None
        return self.samples[-window:]

    @staticmethod
    def _scroll_like(sample: dict[str, Any]) -> bool:
        if sample["type"] in ("scroll", "wait"):
            return True
        if sample["type"] != "key_press":
            return False
        keys = str(sample["params"].get("keys") or sample["params"].get("key") or "").lower()
        return any(name in keys for name in UPSTREAM_SCROLL_KEYS)

    @staticmethod
    def _changed(samples: list[dict[str, Any]]) -> bool:
        urls = {s["url"] for s in samples if s["url"]}
        frames = {s["frame"] for s in samples if s["frame"]}
        return len(urls) > 1 or len(frames) > 1

    def tolerance(self, sample: dict[str, Any]) -> int:
        if not _env_on("MANTIS_ADAPTIVE_CLICK_TOL"):
            return self.click_tol_px
        text = (sample["reasoning"] or "").lower()
        for keyword, multiplier in UPSTREAM_KEYWORDS:
            if keyword in text:
                return max(1, round(self.click_tol_px * multiplier))
        return self.click_tol_px

    def is_repeat_loop(self, window: int) -> bool:
        tail = self._tail(window)
        if tail is None or (self._scroll_like(tail[0]) and self._changed(tail)):
            return False
        first = tail[0]
        return all(s["type"] == first["type"] and s["params"] == first["params"] for s in tail)

    def is_drift_loop(self, window: int) -> bool:
        tail = self._tail(window)
        if tail is None or tail[0]["type"] not in ("click", "double_click", "drag"):
            return False
        first = tail[0]
        x0, y0 = first["params"].get("x"), first["params"].get("y")
        if x0 is None or y0 is None:
            return False
        tol = self.tolerance(first)
        for s in tail[1:]:
            x, y = s["params"].get("x"), s["params"].get("y")
            if s["type"] != first["type"] or x is None or y is None:
                return False
            if abs(x - x0) > tol or abs(y - y0) > tol:
                return False
        return True

    def is_state_loop(self, window: int) -> bool:
        tail = self._tail(window)
        if tail is None or not (tail[0]["url"] or tail[0]["frame"]):
            return False
        first = tail[0]
        for s in tail[1:]:
            if not (s["url"] or s["frame"]):
                return False
            for signal in ("url", "frame"):  # compared only where both steps know it
                if first[signal] and s[signal] and s[signal] != first[signal]:
                    return False
        return True

    def is_any_loop(self, window: int) -> bool:
        return any(
            check(window) for check in (self.is_repeat_loop, self.is_drift_loop, self.is_state_loop)
        )

    @staticmethod
    def signature(sample: dict[str, Any]) -> tuple:
        kind, params = sample["type"], sample["params"]
        if kind in ("click", "double_click"):
            x, y = params.get("x"), params.get("y")
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                return (kind, int(x) // 8, int(y) // 8)
            return (kind,)
        if kind == "drag":
            return (kind, int(params.get("end_x") or 0) // 8, int(params.get("end_y") or 0) // 8)
        if kind == "key_press":
            return (kind, str(params.get("keys") or params.get("key") or "").lower())
        if kind == "type_text":
            return (kind, str(params.get("text") or params.get("content") or "")[:32])
        if kind == "scroll":
            return (kind, str(params.get("direction") or "down"))
        return (kind,)

    def pattern_diversity(self, window: int) -> float:
        if window < 2 or len(self.samples) < window:
            return 0.0
        return len({self.signature(s) for s in self.samples[-window:]}) / window

    def state_progressed(self, window: int) -> bool:
        if window < 2 or len(self.samples) < window:
            return False
        return self._changed(self.samples[-window:])

    def adaptive_window(self, base_window: int, *, max_extension: int = 2, floor: int = 2) -> int:
        if base_window <= floor or len(self.samples) < base_window:
            return base_window
        diversity = self.pattern_diversity(base_window)
        progressed = self.state_progressed(base_window)
        if diversity >= 0.6 or progressed:
            return base_window + max_extension
        if diversity <= 0.25 and not progressed:
            return max(floor, base_window - max(1, max_extension // 2))
        return base_window

    def is_any_loop_adaptive(self, base_window: int, *, max_extension: int = 2) -> bool:
        window = self.adaptive_window(base_window, max_extension=max_extension)
        if self.state_progressed(window) and not self.is_state_loop(window):
            return False
        return self.is_any_loop(window)


# --- replaying upstream's cases ----------------------------------------------------------------


def replay(case: dict[str, Any], detector: Any, record: Any, monkeypatch) -> None:
    """Run one case's steps on ``detector`` (``record(detector, action, url, frame)`` adds a
    step) and assert every verdict upstream asserts."""
    for name, value in case["env"].items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    for step in case["steps"]:
        if step == "reset":
            detector.reset()
        elif isinstance(step[0], dict):
            record(detector, *step)
        else:
            method, kwargs, expected = step
            got = getattr(detector, method)(**kwargs)
            where = f"{case['source']}: {method}({kwargs})"
            if isinstance(expected, tuple):
                op, bound = expected
                ok = {"<=": got <= bound, ">=": got >= bound, "approx": math.isclose(got, bound)}
                assert ok[op], f"{where} = {got!r}, upstream asserts {op} {bound!r}"
            else:
                assert got == expected and type(got) is type(expected), (
                    f"{where} = {got!r}, upstream asserts {expected!r}"
                )


def _record_ours(detector: LoopDetector, action: dict, url: str, frame: str) -> None:
    detector.record(action, url=url, frame=frame)  # upstream's wire shape is one we take


def _record_model(model: UpstreamModel, action: dict, url: str, frame: str) -> None:
    model.record(action, url=url, frame=frame)


def _case_params():
    seen: dict[str, int] = {}
    for case in cases.CASES:
        n = seen[case["source"]] = seen.get(case["source"], 0) + 1
        case_id = case["source"] if n == 1 else f"{case['source']}[{n}]"
        reason = DELIBERATE.get(case["source"])
        marks = [pytest.mark.xfail(strict=True, reason=DIFFERENCES + reason)] if reason else []
        yield pytest.param(case, id=case_id, marks=marks)


@pytest.mark.parametrize("case", list(_case_params()))
def test_upstream_case(case, monkeypatch):
    """Upstream's own test, against ``mantis_fast.LoopDetector`` (history large enough for every
    window upstream asks about, as its list is unbounded)."""
    replay(case, LoopDetector(history=64, **case["detector"]), _record_ours, monkeypatch)


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c["source"])
def test_upstream_case_against_the_model(case, monkeypatch):
    """The model answers every upstream case as upstream does (so it is a fair judge below)."""
    replay(case, UpstreamModel(**case["detector"]), _record_model, monkeypatch)


def test_window_below_two_raises_a_clear_error():
    """The deliberate side of test_window_one_or_zero_never_fires."""
    detector = LoopDetector()
    detector.record({"type": "click", "x": 1, "y": 1})
    for window in (1, 0, -3):
        with pytest.raises(InvalidInputError, match=r"window must be in \[2, history=32\]"):
            detector.is_repeat_loop(window)


@pytest.mark.parametrize(("viewport", "floor", "env", "expected"), cases.CLICK_TOL_TABLE)
def test_upstream_click_tol_table(viewport, floor, env, expected, monkeypatch):
    if env is not None:
        monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", env)
    assert compute_click_tol_px(viewport, floor=floor) == expected


@pytest.mark.parametrize(("value", "expected"), cases.LOOP_ADAPTIVE_VALUES.items())
def test_upstream_loop_adaptive_toggle(value, expected, monkeypatch):
    if value is not None:
        monkeypatch.setenv("MANTIS_LOOP_ADAPTIVE", value)
    assert adaptive_loop_enabled() is expected


@pytest.mark.parametrize(("value", "expected"), cases.CLICK_TOL_VALUES.items())
def test_upstream_click_tol_toggle(value, expected, monkeypatch):
    if value is not None:
        monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", value)
    assert adaptive_click_tol_enabled() is expected


def test_upstream_phash_identical_and_different_images():
    """test_loop_detector.py::test_phash_identical_images_match / _different_images_differ, on
    the hash ``LoopDetector.record`` uses for PIL frames."""
    image_module = pytest.importorskip("PIL.Image")
    from mantis_fast.pixels.frames import phash_64

    img = image_module.new("RGB", (32, 32), (128, 64, 200))
    assert phash_64(img) == phash_64(img.copy()) and len(phash_64(img)) == 17
    dark = image_module.new("RGB", (32, 32), (10, 10, 10))
    light = image_module.new("RGB", (32, 32), (250, 250, 250))
    assert phash_64(dark) != phash_64(light)
    # A PIL frame is a state as upstream hashes it: the same picture twice is a state loop.
    detector = LoopDetector()
    for action in ({"type": "click", "x": 1, "y": 1}, {"type": "key", "keys": "tab"}):
        detector.record(action, frame=img.copy())
    assert detector.is_state_loop(2)
    detector.record({"type": "wait"}, frame=light)
    assert not detector.is_state_loop(2)


# --- upstream's loop-guard cases ---------------------------------------------------------------


def _guard(spec: dict[str, Any]) -> Any:
    ((kind, kwargs),) = spec.items()
    if kind == "state_repeat":
        return StateRepeatGuard(**kwargs)
    if kind == "off_source":
        return OffSourceDriftGuard(**kwargs)
    return LoopGuardSuite(
        StateRepeatGuard(**kwargs["state_repeat"]), OffSourceDriftGuard(**kwargs["off_source"])
    )


def _attribute(obj: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


@pytest.mark.parametrize("case", cases.GUARDS, ids=lambda c: c["source"])
def test_upstream_guard_case(case):
    guard = _guard(case["guard"])
    for step in case["steps"]:
        if step[0] == "reset":
            guard.reset()
        elif step[0] == "observe":
            _, kwargs, expected = step
            halt = guard.observe(**kwargs)
            if expected is None:
                assert halt is None, (case["source"], kwargs, halt)
                continue
            halt_class, evidence = expected
            assert halt is not None and halt.halt_class == halt_class, (case["source"], halt)
            for key, value in evidence.items():
                got = halt.evidence[key[:-4]][-1] if key.endswith("[-1]") else halt.evidence[key]
                assert got == value, (case["source"], key)
        else:
            what, dotted, value = step
            got = _attribute(guard, dotted)
            if what == "len":
                got = len(got)
            elif what == "last":
                got = got[-1]
            assert got == value, (case["source"], dotted)


@pytest.mark.parametrize(("a", "b", "equal"), cases.FINGERPRINTS)
def test_upstream_fingerprints(a, b, equal):
    assert len(fingerprint(*a)) == 32 and (fingerprint(*a) == fingerprint(*b)) is equal


# --- random sequences: our detector against the model, where both define the same thing -------

# Key strings on which whole-name and substring matching agree (no "backspace" holding a "k").
KEYS = ["Page_Down", "pagedown", "page_up", "Up", "down", "j", "ctrl+k", "Tab", "Return", "a"]
REASONS = ["", "the submit button", "a link", "the dropdown", "select the card", "somewhere"]


@st.composite
def upstream_actions(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(["click", "double_click", "key_press", "scroll", "wait"]))
    reasoning = draw(st.sampled_from(REASONS))
    if kind in ("click", "double_click"):
        params = {"x": draw(st.integers(0, 30)), "y": draw(st.integers(0, 30))}
    elif kind == "key_press":
        params = {"keys": draw(st.sampled_from(KEYS))}
    elif kind == "scroll":
        params = {"direction": draw(st.sampled_from(["up", "down"])), "amount": 3}
    else:
        params = draw(st.sampled_from([{}, {"seconds": 1}]))
    extra = draw(st.sampled_from([[], [("type_text", {"text": "hello"})]]))
    if extra and draw(st.booleans()):
        kind, params = extra[0]
    return {"type": kind, "params": params, "reasoning": reasoning}


@st.composite
def sequences(draw, *, signals: str) -> list[tuple[dict, str, str]]:
    """``signals="random"``: a URL pool and a frame pool, each always used or never (a step
    missing a signal its neighbours have is compared differently, see the table).
    ``signals="regime"``: each signal absent, frozen, or new at every step, so "the screen
    changed somewhere in the window" (upstream) and "at every step" (ours) coincide."""
    n = draw(st.integers(0, 24))
    actions = draw(st.lists(upstream_actions(), min_size=n, max_size=n))
    columns = []
    for name in ("u", "h"):
        mode = draw(st.sampled_from(["none", "frozen", "pool" if signals == "random" else "new"]))
        if mode == "none":
            columns.append([""] * n)
        elif mode == "frozen":
            columns.append([name] * n)
        elif mode == "new":
            columns.append([f"{name}{i}" for i in range(n)])
        else:
            columns.append(draw(st.lists(st.sampled_from([f"{name}1", f"{name}2"]), min_size=n,
                                         max_size=n)))  # fmt: skip
    return list(zip(actions, *columns, strict=True))


def _compare(steps, tol, toggles, checks) -> None:
    try:
        _compare_steps(steps, tol, toggles, checks)
    finally:
        os.environ.pop("MANTIS_ADAPTIVE_CLICK_TOL", None)


def _compare_steps(steps, tol, toggles, checks) -> None:
    ours = LoopDetector(tol, 64, adaptive_windows=True)
    model = UpstreamModel(tol)
    verdicts = [name for name in checks if name != "adaptive"]
    for i, (action, url, frame) in enumerate(steps):
        ours.record(action, url=url, frame=frame)
        model.record(action, url=url, frame=frame)
        # The tolerance toggle is read when checked, by both: flip it mid-sequence.
        if toggles[i % len(toggles)]:
            os.environ["MANTIS_ADAPTIVE_CLICK_TOL"] = "disabled"
        else:
            os.environ.pop("MANTIS_ADAPTIVE_CLICK_TOL", None)
        for window in range(2, 11):
            for name in verdicts:
                got, want = getattr(ours, name)(window), getattr(model, name)(window)
                assert got == want, (name, window, i)
            for extension in (0, 1, 2, 3):
                if "adaptive" in checks:
                    got = ours.is_any_loop_adaptive(window, max_extension=extension)
                    want = model.is_any_loop_adaptive(window, max_extension=extension)
                    assert got == want, ("is_any_loop_adaptive", window, extension, i)
                got = ours.adaptive_window(window, max_extension=extension)
                assert got == model.adaptive_window(window, max_extension=extension)


@settings(max_examples=150, deadline=None)
@given(
    steps=sequences(signals="random"),
    tol=st.sampled_from([1, 3, 8]),
    toggles=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_drift_state_and_signals_match_upstream(steps, tol, toggles):
    _compare(
        steps, tol, toggles, ("is_drift_loop", "is_state_loop", "pattern_diversity",
                              "state_progressed"),
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    steps=sequences(signals="regime"),
    tol=st.sampled_from([1, 3, 8]),
    toggles=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_every_verdict_matches_upstream_on_steady_screens(steps, tol, toggles):
    _compare(
        steps, tol, toggles, ("is_repeat_loop", "is_drift_loop", "is_state_loop", "is_any_loop",
                              "pattern_diversity", "state_progressed", "adaptive"),
    )  # fmt: skip


# --- each deliberate difference, shown on both sides -------------------------------------------


def _both(steps, window, method="is_repeat_loop", tol=8):
    ours, model = LoopDetector(tol), UpstreamModel(tol)
    for action, url, frame in steps:
        ours.record(action, url=url, frame=frame)
        model.record(action, url=url, frame=frame)
    return getattr(ours, method)(window), getattr(model, method)(window)


def _key(keys):
    return {"type": "key_press", "params": {"keys": keys}, "reasoning": ""}


@pytest.mark.parametrize(
    ("keys", "ours_exempt", "upstream_exempt"),
    [
        ("Page_Down", True, True),
        ("ctrl+down", True, True),
        ("BackSpace", False, True),  # upstream: "k" is a substring of "backspace"
        ("super", False, True),  # "up"
        ("pgdn", True, False),  # the input layer's spelling of Page_Down
        ("space", False, False),  # not in upstream's list
    ],
)
def test_navigation_keys_by_whole_name(keys, ours_exempt, upstream_exempt):
    moving = [(_key(keys), f"u{i}", "") for i in range(4)]
    assert _both(moving, 4) == (not ours_exempt, not upstream_exempt)


def test_scroll_exemption_needs_change_at_every_step():
    scroll = {"type": "scroll", "params": {"direction": "down"}, "reasoning": ""}
    end_of_page = [(scroll, "u", f"h{min(i, 1)}") for i in range(4)]  # moved once, then stuck
    assert _both(end_of_page, 4) == (True, False)


def test_drag_drifts_by_its_start_point():
    drags = [
        ({"type": "drag", "params": {"start_x": 10 + i, "start_y": 10, "end_x": 90, "end_y": 90},
          "reasoning": ""}, "", "")
        for i in range(3)
    ]  # fmt: skip
    assert _both(drags, 3, "is_drift_loop") == (True, False)


def test_state_with_a_signal_missing_on_some_steps():
    click = {"type": "click", "params": {"x": 1, "y": 1}, "reasoning": ""}
    flickering = [(click, "u", "h"), (click, "u", ""), (click, "u", "h")]
    assert _both(flickering, 3, "is_state_loop") == (False, True)


def test_click_tol_without_keyword_is_the_baseline():
    """Both leave a no-keyword tolerance as it is (so 0 stays 0), keywords give max(1, ...)."""
    at = [({"type": "click", "params": {"x": x, "y": 0}, "reasoning": ""}, "", "") for x in (0, 1)]
    assert _both(at, 2, "is_drift_loop", tol=0) == (False, False)
    link = [
        ({"type": "click", "params": {"x": x, "y": 0}, "reasoning": "a link"}, "", "")
        for x in (0, 1)
    ]
    assert _both(link, 2, "is_drift_loop", tol=0) == (True, True)


def test_pattern_diversity_of_numpy_coordinates():
    """Our own extension: numpy scalars bucket like Python numbers."""
    detector = LoopDetector()
    for x in np.array([100, 101, 102]):
        detector.record({"type": "click", "x": x, "y": np.float64(5.0)})
    assert detector.pattern_diversity(3) == pytest.approx(1 / 3)
