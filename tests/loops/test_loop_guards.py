"""Loop guards (``mantis_fast.loops.guards``): the fingerprint's definition, the guards' edges and
bad input. Upstream Mantis's own guard cases run in test_loop_upstream.py."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.loops.guards import (
    LOOP_STUCK,
    OFF_SOURCE_DRIFT,
    LoopGuardSuite,
    OffSourceDriftGuard,
    StateRepeatGuard,
    fingerprint,
    matches_pinned,
)


@settings(max_examples=100, deadline=None)
@given(url=st.text(max_size=8), shot=st.binary(max_size=16), text=st.text(max_size=8))
def test_fingerprint_is_the_documented_digest(url, shot, text):
    recipe = b"\x00".join([url.encode("utf-8", "ignore"), shot, text.encode("utf-8", "ignore")])
    assert fingerprint(url, shot, text) == hashlib.sha256(recipe).hexdigest()[:32]


def test_fingerprint_takes_any_contiguous_buffer():
    frame = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    want = fingerprint("u", frame.tobytes(), "t")
    assert fingerprint("u", frame, "t") == fingerprint("u", memoryview(frame), "t") == want
    assert fingerprint("u", bytearray(frame.tobytes()), "t") == want
    assert fingerprint(None, None, None) == fingerprint("", b"", "")
    with pytest.raises(InvalidInputError, match="contiguous bytes-like"):
        fingerprint("u", frame[:, ::2], "t")
    with pytest.raises(InvalidInputError, match="got str"):
        fingerprint("u", "png", "t")
    with pytest.raises(InvalidInputError, match="url must be a string, got bytes"):
        fingerprint(b"u", b"", "t")
    with pytest.raises(InvalidInputError, match="visible_text must be a string, got int"):
        fingerprint("u", b"", 3)


@pytest.mark.parametrize(
    ("url", "pattern", "inside"),
    [
        ("https://hn.com", "https://hn.com", True),
        ("https://hn.com/x", "https://hn.com", True),
        ("https://hn.com?p=1", "https://hn.com", True),
        ("https://hn.com#top", "https://hn.com", True),
        ("https://hn.community", "https://hn.com", False),  # another origin
        ("https://hn.com/news/1", "https://hn.com/news/*", True),
        ("https://hn.com/newsletter", "https://hn.com/news/*", True),  # a prefix, as upstream
        ("https://hn.com/", "https://hn.com/news/*", False),
        ("anything", "", True),
    ],
)
def test_matches_pinned(url, pattern, inside):
    assert matches_pinned(url, pattern) is inside


def test_state_guard_keeps_halting_and_names_where_the_streak_began():
    guard = StateRepeatGuard(2)
    assert guard.observe(url="a", screenshot_bytes=b"x") is None
    for streak in (2, 3):
        halt = guard.observe(url="a", screenshot_bytes=b"x")
        assert halt.halt_class == LOOP_STUCK and halt.evidence["streak"] == streak
        assert halt.evidence["url"] == "a" and halt.evidence["fingerprint"] == fingerprint(
            "a", b"x", ""
        )


def test_off_source_guard_trail_and_return():
    guard = OffSourceDriftGuard("https://hn.com/*", 2)
    assert guard.observe(url="https://off.com/1") is None and guard.off_urls == [
        "https://off.com/1"
    ]
    halt = guard.observe(url="https://off.com/2")
    assert (
        halt.halt_class == OFF_SOURCE_DRIFT and halt.evidence["current_url"] == "https://off.com/2"
    )
    assert halt.evidence["off_urls_trail"] == ["https://off.com/1", "https://off.com/2"]
    assert guard.observe(url="https://hn.com/") is None and guard.off_streak == 0
    assert guard.off_urls == []


def test_suite_defaults_are_off():
    suite = LoopGuardSuite()
    for _ in range(5):
        assert suite.observe(url="https://x/", screenshot_bytes=b"a") is None


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: StateRepeatGuard(-1), "threshold must be an int >= 0, got -1"),
        (lambda: StateRepeatGuard(2.0), "threshold must be an int"),
        (lambda: StateRepeatGuard(True), "threshold must be an int"),
        (lambda: OffSourceDriftGuard("https://x", -2), "step_budget must be an int >= 0"),
        (lambda: OffSourceDriftGuard(b"https://x", 2), "pinned_pattern must be a string"),
        (lambda: LoopGuardSuite(state_repeat=OffSourceDriftGuard()), "state_repeat must be a"),
        (lambda: LoopGuardSuite(off_source=StateRepeatGuard()), "off_source must be an"),
        (lambda: OffSourceDriftGuard("https://x", 2).observe(url=7), "url must be a string"),
        (lambda: StateRepeatGuard(2).observe(url="u", screenshot_bytes=1.5), "bytes-like"),
    ],
)
def test_bad_input(build, match):
    with pytest.raises(InvalidInputError, match=match):
        build()
