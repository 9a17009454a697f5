"""Upstream Mantis's loop-detector test cases, as data: the scenarios and the verdicts upstream
asserts, for ``tests/loops/test_loop_upstream.py`` to replay against ``mantis_fast``.

Transcribed from mercurialsolo/mantis (https://github.com/mercurialsolo/mantis) at commit
431fdf89de3f72da32b5a8a7539208097a27e985, files ``tests/loops/test_loop_detector.py``,
``tests/test_loop_detector_adaptive.py``, ``tests/test_loop_detector_click_tol.py`` and
``tests/loops/test_loop_guards.py``,
Copyright 2025 Mantis contributors, published at that commit under the Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0; the project moved to AGPL-3.0-or-later later, these
files unchanged). Only the action sequences, the questions and the expected answers are taken,
re-expressed in this format; none of upstream's code is. Each case names the upstream test it
comes from. Upstream cases that check upstream-only components (its GymRunner's wiring, its plan
schema, workflow-runner config and failure categories) are not here.

A case: ``detector`` (LoopDetector arguments), ``env`` (variables to set; None = unset), then
``steps``, each one of

* ``(action, url, frame)`` — record the action (upstream's wire shape: ``type`` is its
  ``ActionType`` value, ``params``, ``reasoning``) with that URL and frame hash ("" = none);
* ``"reset"``;
* ``(method, kwargs, expected)`` — call the detector; ``expected`` is the value upstream asserts,
  or ``("<=", v)`` / ``(">=", v)`` / ``("approx", v)`` for its inequality and approx checks.
"""

from __future__ import annotations

from typing import Any

NO_SIGNAL = ""  # upstream's "no URL" / "no frame hash"
HASH = "deadbeefdeadbeef"  # the frame hash upstream's tests inject by hand


def click(x: int, y: int, reasoning: str = "") -> dict[str, Any]:
    return {"type": "click", "params": {"x": x, "y": y}, "reasoning": reasoning}


def key(keys: str) -> dict[str, Any]:
    return {"type": "key_press", "params": {"keys": keys}, "reasoning": ""}


def scroll(direction: str = "down", amount: int = 3) -> dict[str, Any]:
    return {"type": "scroll", "params": {"direction": direction, "amount": amount}, "reasoning": ""}


def type_text(text: str) -> dict[str, Any]:
    return {"type": "type_text", "params": {"text": text}, "reasoning": ""}


def case(source: str, steps: list, detector: dict | None = None, env: dict | None = None) -> dict:
    return {"source": source, "steps": steps, "detector": detector or {}, "env": env or {}}


DRIFT = [(487, 312), (489, 310), (491, 308), (488, 311), (490, 309)]
DIVERSE = [click(100, 100), click(200, 200), key("Escape"), scroll(), click(300, 300)]
VARIED = [click(1, 1), key("Tab"), scroll(), key("Return"), click(50, 50)]
TOL_ON = {"MANTIS_ADAPTIVE_CLICK_TOL": None}
WINDOW_5 = {"window": 5}


def alternate(a: dict, b: dict) -> list:
    return [(a, NO_SIGNAL, NO_SIGNAL), (b, NO_SIGNAL, NO_SIGNAL)] * 3


LOOP_DETECTOR = [
    case(
        "test_loop_detector.py::test_repeat_loop_byte_equal",
        [(click(100, 100), "https://x.test/a", "")] * 5 + [("is_repeat_loop", {"window": 5}, True)],
    ),
    case(
        "test_loop_detector.py::test_reset_clears_cross_step_false_positive",
        [(click(100, 100), "https://x.test/a", "")] * 4
        + [
            ("is_any_loop", {"window": 5}, False),
            "reset",
            (click(100, 100), "https://x.test/b", ""),
            ("is_any_loop", {"window": 5}, False),
            ("is_any_loop", {"window": 2}, False),
        ],
    ),
    case(
        "test_loop_detector.py::test_reset_resumes_loop_detection_on_new_window_inside_one_step",
        [(click(50, 50), "", ""), (click(50, 50), "", ""), "reset"]
        + [(click(200, 200), "https://x.test/", "")] * 5
        + [("is_repeat_loop", {"window": 5}, True)],
    ),
    case(
        "test_loop_detector.py::test_repeat_loop_below_window_returns_false",
        [(click(100, 100), "", "")] * 2 + [("is_repeat_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_repeat_loop_state_changing_scroll_is_not_a_loop",
        [(key("Page_Down"), f"https://x.test/p#scroll-{i}", "") for i in range(5)]
        + [("is_repeat_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_drift_loop_within_tolerance_fires",
        [(click(x, y), "", "") for x, y in DRIFT]
        + [("is_drift_loop", {"window": 5}, True), ("is_any_loop", {"window": 5}, True)],
        detector={"click_tol_px": 8},
    ),
    case(
        "test_loop_detector.py::test_drift_loop_beyond_tolerance_does_not_fire",
        [(click(x, y), "", "") for x, y in [*DRIFT[:4], (520, 400)]]
        + [("is_drift_loop", {"window": 5}, False)],
        detector={"click_tol_px": 8},
    ),
    case(
        "test_loop_detector.py::test_drift_loop_only_for_click_like",
        [(key("Tab"), "", "")] * 5 + [("is_drift_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_state_loop_frozen_url_frozen_hash",
        [(a, "https://x.test/stuck", HASH) for a in DIVERSE]
        + [("is_state_loop", {"window": 5}, True)],
    ),
    case(
        "test_loop_detector.py::test_state_loop_url_changes_breaks",
        [(click(1, 1), f"https://x.test/p{i}", "") for i in range(5)]
        + [("is_repeat_loop", {"window": 5}, True), ("is_state_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_state_loop_no_signal_returns_false",
        [(click(100, 100), "", "")] * 5 + [("is_state_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_reset_clears_history",
        [(click(1, 1), "", "")] * 5
        + [("is_repeat_loop", {"window": 5}, True), "reset"]
        + [("is_repeat_loop", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector.py::test_window_one_or_zero_never_fires",
        [
            (click(1, 1), "", ""),
            ("is_repeat_loop", {"window": 1}, False),
            ("is_repeat_loop", {"window": 0}, False),
        ],
    ),
]

ADAPTIVE = [
    case(
        "test_loop_detector_adaptive.py::test_pattern_diversity_all_same_action_is_low",
        [(click(100, 100), "", "")] * 5 + [("pattern_diversity", {"window": 5}, ("approx", 0.2))],
    ),
    case(
        "test_loop_detector_adaptive.py::test_pattern_diversity_all_different_is_one",
        [(a, "", "") for a in [click(50, 50), click(200, 200), key("Tab"), scroll("down")]]
        + [(type_text("hello"), "", ""), ("pattern_diversity", {"window": 5}, 1.0)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_pattern_diversity_buckets_drift_clicks_low",
        [(click(x, y), "", "") for x, y in DRIFT]
        + [("pattern_diversity", {"window": 5}, ("<=", 0.5))],
    ),
    case(
        "test_loop_detector_adaptive.py::test_pattern_diversity_short_buffer_is_zero",
        [(click(1, 1), "", ""), ("pattern_diversity", {"window": 5}, 0.0)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_state_progressed_on_url_change",
        [(click(1, 1), f"https://x.test/p{i}", "") for i in range(5)]
        + [("state_progressed", {"window": 5}, True)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_state_progressed_on_frozen_state",
        [(click(1, 1), "https://x.test/p", "")] * 5 + [("state_progressed", {"window": 5}, False)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_adaptive_window_extends_on_progressing_state",
        [(click(800, 600), f"https://x.test/page-{i}", "") for i in range(3)]
        + [("adaptive_window", {"base_window": 3}, 5)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_adaptive_window_extends_on_high_diversity",
        [(a, "", "") for a in [click(1, 1), key("Tab"), scroll(), click(50, 50), key("Return")]]
        + [("adaptive_window", {"base_window": 3}, 5)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_adaptive_window_tightens_on_low_diversity_frozen_state",
        [(click(100, 100), "https://x.test/stuck", "")] * 8
        + [("adaptive_window", {"base_window": 8}, 7)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_adaptive_window_floor_respected",
        [(click(1, 1), "https://x.test/", "")] * 3
        + [("adaptive_window", {"base_window": 3, "max_extension": 2}, (">=", 2))],
    ),
    case(
        # Upstream builds three more detectors there without asserting on them; the assertion
        # is on this one.
        "test_loop_detector_adaptive.py::test_adaptive_window_unchanged_on_moderate_diversity",
        [(a, "https://x.test/", "") for a in [click(1, 1), click(1, 1)]]
        + [(a, "https://x.test/", "") for a in [click(50, 50), click(50, 50)]]
        + [("adaptive_window", {"base_window": 4}, 4)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_pagination_does_not_fire_adaptive_loop",
        [(click(800, 600), f"https://x.test/page-{i}", "") for i in range(5)]
        + [
            ("is_any_loop", {"window": 3}, True),
            ("is_any_loop_adaptive", {"base_window": 3}, False),
        ],
    ),
    case(
        "test_loop_detector_adaptive.py::test_real_repeat_still_fires_adaptive",
        [(click(800, 600), "https://x.test/p", "")] * 5
        + [("is_any_loop_adaptive", {"base_window": 3}, True)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_diverse_actions_on_progressing_state_no_loop",
        [(a, f"https://x.test/p{i}", "") for i, a in enumerate(VARIED)]
        + [("is_any_loop_adaptive", {"base_window": 3}, False)],
    ),
    case(
        "test_loop_detector_adaptive.py::test_diverse_actions_on_frozen_state_still_loop",
        [(a, "https://x.test/stuck", HASH) for a in VARIED]
        + [("is_any_loop_adaptive", {"base_window": 3}, True)],
    ),
]

CLICK_TOL = [
    case(
        f"test_loop_detector_click_tol.py::{name}",
        [*alternate(click(100, 100, why), click(x, y, why)), ("is_drift_loop", WINDOW_5, want)],
        detector={"click_tol_px": 8},
        env=env,
    )
    for name, why, x, y, env, want in [
        ("test_button_multiplier_widens_drift_tolerance", "Click the Submit button", 111, 109,
         TOL_ON, True),
        ("test_button_multiplier_widens_drift_tolerance", "Click the Submit button", 113, 109,
         TOL_ON, False),
        ("test_link_multiplier_tightens_drift_tolerance", "Click the link to next page", 105, 100,
         TOL_ON, False),
        ("test_link_multiplier_tightens_drift_tolerance", "Click the link to next page", 103, 100,
         TOL_ON, True),
        ("test_no_classification_uses_base_tolerance", "click somewhere", 107, 107, TOL_ON, True),
        ("test_no_classification_uses_base_tolerance", "click somewhere", 109, 109, TOL_ON, False),
        ("test_class_multiplier_disabled_falls_back_to_base", "Click the Submit button", 110, 100,
         {"MANTIS_ADAPTIVE_CLICK_TOL": "disabled"}, False),
        ("test_compound_keyword_matched_before_substring", "Click the submit button", 111, 100,
         TOL_ON, True),
    ]
]  # fmt: skip

#: test_loop_detector_click_tol.py::test_compute_click_tol_scales_with_diagonal and its
#: zero-dimension, disabled and custom-floor neighbours: (viewport, floor, env value, expected).
CLICK_TOL_TABLE = [
    ((1280, 800), 8, None, 8),
    ((1366, 768), 8, None, 8),
    ((1920, 1080), 8, None, 9),
    ((2560, 1440), 8, None, 12),
    ((3840, 2160), 8, None, 18),
    ((7680, 4320), 8, None, 35),
    ((0, 0), 8, None, 8),
    ((1920, 0), 8, None, 8),
    ((3840, 2160), 8, "disabled", 8),
    ((1280, 800), 12, None, 12),
    ((3840, 2160), 12, None, 18),
]

#: The toggles' values: test_loop_detector_adaptive.py::test_adaptive_loop_* and
#: test_loop_detector_click_tol.py::test_adaptive_click_tol_* (None = unset).
LOOP_ADAPTIVE_VALUES = {
    None: True,
    **dict.fromkeys(["disabled", "0", "false", "FALSE", "off", "no", " disabled "], False),
    **dict.fromkeys(["enabled", "1", "true", "on", "yes", ""], True),
}
CLICK_TOL_VALUES = {
    None: True,
    **dict.fromkeys(["disabled", "0", "false", "FALSE", "off", "no"], False),
}

CASES = LOOP_DETECTOR + ADAPTIVE + CLICK_TOL


# --- test_loop_guards.py (the same commit and license) ----------------------------------------
#
# A guard case: ``guard`` builds it (``{"state_repeat": kwargs}``, ``{"off_source": kwargs}`` or
# ``{"suite": {"state_repeat": kwargs, "off_source": kwargs}}``), then ``steps``, each one of
# ``("observe", kwargs, expected)`` with expected None (no halt) or ``(halt_class, evidence
# items upstream asserts; ``name[-1]`` is the last item of a list)``, ``("reset",)``, or
# ``("attr" | "len" | "last", dotted name, value)`` for the state upstream reads (its private
# ``_streak``, ``_off_streak`` and ``_off_urls`` are our public ``streak``, ``off_streak`` and
# ``off_urls``).

LOOP_STUCK = "loop_stuck"
OFF_SOURCE = "off_source_drift"
SAME = {"url": "x", "screenshot_bytes": b"a", "visible_text": "t"}
HN = {"pinned_pattern": "https://hn.com/*"}


def observe(expected=None, **kwargs) -> tuple:
    return ("observe", kwargs, expected)


def guard_case(source: str, guard: dict, steps: list) -> dict:
    return {"source": f"test_loop_guards.py::{source}", "guard": guard, "steps": steps}


#: test_fingerprint_*: (args a, args b, equal?)
FINGERPRINTS = [
    (("https://x.com/", b"png-bytes", "Hello"), ("https://x.com/", b"png-bytes", "Hello"), True),
    (("https://x.com/", b"png", "h"), ("https://y.com/", b"png", "h"), False),
    (("https://x.com/", b"png-a", "h"), ("https://x.com/", b"png-b", "h"), False),
    (("https://x.com/", b"png", "Hello"), ("https://x.com/", b"png", "World"), False),
]

GUARDS = [
    guard_case(
        "test_state_repeat_disabled_by_default", {"state_repeat": {}}, [observe(**SAME)] * 10
    ),
    guard_case(
        "test_state_repeat_trips_at_threshold",
        {"state_repeat": {"threshold": 3}},
        [observe(**SAME), observe(**SAME), observe((LOOP_STUCK, {"streak": 3}), **SAME)],
    ),
    guard_case(
        "test_state_repeat_resets_on_state_change",
        {"state_repeat": {"threshold": 3}},
        [observe(**SAME), observe(**SAME)]
        + [observe(url="x", screenshot_bytes=b"b", visible_text="t")] * 2,
    ),
    guard_case(
        "test_state_repeat_reset_method",
        {"state_repeat": {"threshold": 2}},
        [observe(**SAME), ("reset",), observe(**SAME)],
    ),
    guard_case(
        "test_off_source_disabled_by_default",
        {"off_source": {}},
        [observe(url="https://random.com/")] * 10,
    ),
    guard_case(
        "test_off_source_disabled_without_budget",
        {"off_source": {"pinned_pattern": "https://x.com/*", "step_budget": 0}},
        [observe(url="https://off.com/")] * 10,
    ),
    guard_case(
        "test_off_source_halts_at_budget",
        {"off_source": {**HN, "step_budget": 3}},
        [
            observe(url="https://off.com/a"),
            observe(url="https://off.com/b"),
            observe(
                (OFF_SOURCE, {"off_streak": 3, "off_urls_trail[-1]": "https://off.com/c"}),
                url="https://off.com/c",
            ),
        ],
    ),
    guard_case(
        "test_off_source_resets_on_return_to_pattern",
        {"off_source": {**HN, "step_budget": 3}},
        [observe(url=f"https://{where}") for where in ("off.com/a", "off.com/b", "hn.com/news")]
        + [observe(url="https://off.com/c"), observe(url="https://off.com/d")],
    ),
    guard_case(
        "test_off_source_glob_pattern",
        {"off_source": {**HN, "step_budget": 2}},
        [observe(url="https://hn.com/news?p=1"), observe(url="https://hn.com/item?id=42")],
    ),
    guard_case(
        "test_off_source_exact_origin_pattern",
        {"off_source": {"pinned_pattern": "https://hn.com", "step_budget": 2}},
        [observe(url="https://hn.com/"), observe(url="https://hn.com/news")],
    ),
    guard_case(
        "test_off_source_evidence_trail_is_bounded",
        {"off_source": {**HN, "step_budget": 10}},
        [observe(url=f"https://off.com/{i}") for i in range(9)]
        + [("len", "off_urls", 4), ("last", "off_urls", "https://off.com/8")],
    ),
    guard_case(
        "test_loop_guard_suite_off_source_takes_precedence",
        {"suite": {"state_repeat": {"threshold": 2}, "off_source": {**HN, "step_budget": 2}}},
        [
            observe(url="https://off.com/", screenshot_bytes=b"a", visible_text="t"),
            observe(
                (OFF_SOURCE, {}), url="https://off.com/", screenshot_bytes=b"a", visible_text="t"
            ),
        ],
    ),
    guard_case(
        "test_loop_guard_suite_state_repeat_when_no_off_source",
        {"suite": {"state_repeat": {"threshold": 2}, "off_source": {}}},
        [
            observe(url="https://x.com/", screenshot_bytes=b"a", visible_text="t"),
            observe(
                (LOOP_STUCK, {}), url="https://x.com/", screenshot_bytes=b"a", visible_text="t"
            ),
        ],
    ),
    guard_case(
        "test_loop_guard_suite_reset_clears_both",
        {"suite": {"state_repeat": {"threshold": 10}, "off_source": {**HN, "step_budget": 10}}},
        [
            observe(url="https://off.com/", screenshot_bytes=b"a", visible_text="t"),
            ("reset",),
            ("attr", "state_repeat.streak", 0),
            ("attr", "off_source.off_streak", 0),
        ],
    ),
]
