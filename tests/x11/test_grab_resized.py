"""``Capture.grab_resized``: the screen resized straight from the Xvfb framebuffer (each screen
byte read once), pixel for pixel ``resize(grab(), ...)`` of an independent capture, whatever
was drawn between calls, on every backend, with and without damage tracking, incremental or
not, and interleaved with ``grab()`` (whose frame it leaves for ``grab()`` to bring up to date).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.image import resize
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import paint_root, test_pattern

pytestmark = pytest.mark.x11

SCREEN = (640, 480)
CASES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=SCREEN) as server:
        paint_root(server.display, test_pattern(*SCREEN, seed=0))
        yield server


@pytest.fixture(scope="module")
def reference(screen: Xvfb) -> Iterator[Capture]:
    """What the screen holds, by MIT-SHM: another path through the server entirely."""
    with Capture(screen.display, framebuffer=False) as capture:
        yield capture


BACKENDS = [
    pytest.param({"track_damage": True}, id="framebuffer-damage"),
    pytest.param({"track_damage": False}, id="framebuffer"),
    pytest.param({"track_damage": True, "framebuffer": False}, id="xshm-damage"),
]

PAINTS = st.lists(
    st.tuples(
        st.integers(1, 300),  # width
        st.integers(1, 200),  # height
        st.integers(0, SCREEN[0] - 1),  # left
        st.integers(0, SCREEN[1] - 1),  # top
        st.integers(0, 2**16),  # pattern seed
    ),
    max_size=3,
)


def paint(display: str, paints: list[tuple[int, int, int, int, int]]) -> None:
    for width, height, left, top, seed in paints:
        width, height = min(width, SCREEN[0] - left), min(height, SCREEN[1] - top)
        paint_root(display, test_pattern(width, height, seed=seed), left, top)


@pytest.mark.parametrize("options", BACKENDS)
@CASES
@given(
    steps=st.lists(st.tuples(PAINTS, st.sampled_from(["resized", "grab", "both"])), max_size=6),
    size=st.sampled_from([(320, 240), (640, 480), (213, 97), (1000, 700)]),
    crop=st.sampled_from([None, (0, 0, 640, 480), (100, 50, 400, 300), (639, 0, 1, 480)]),
)
def test_grab_resized_is_resize_of_the_screen(screen, reference, options, steps, size, crop):
    """Every call's image equals ``resize(reference grab)``; every ``grab()`` between calls
    equals the reference frame (the rows grab_resized read without copying are brought in)."""
    with Capture(screen.display, **options) as capture:
        out = None
        for paints, what in [([], "resized"), *steps]:
            paint(screen.display, paints)
            truth = reference.grab(copy=True)
            if what in ("grab", "both"):
                frame = capture.grab()
                assert np.array_equal(frame[..., :3], truth[..., :3])
            if what in ("resized", "both"):
                out = capture.grab_resized(size, out=out, crop=crop)
                assert out.shape == (size[1], size[0], 3)
                assert np.array_equal(out, resize(truth, size, crop=crop))


def test_reads_the_framebuffer_without_copying_the_frame(screen, reference):
    """On the framebuffer with damage tracking, the capture's own frame is left as it was:
    the resize read the server's memory (the next grab() copies the rows that changed)."""
    with Capture(screen.display, track_damage=True) as capture:
        assert capture.backend == "xvfb-framebuffer"
        before = capture.grab(copy=True)
        paint_root(screen.display, test_pattern(200, 100, seed=9), 40, 30)
        image = capture.grab_resized((640, 480))
        assert np.array_equal(image, resize(reference.grab(copy=True), (640, 480)))
        assert np.array_equal(capture._transport.frame, before)  # not copied into the frame
        assert capture.changed_rows == [(30, 130)]
        assert np.array_equal(capture.grab()[..., :3], reference.grab(copy=True)[..., :3])


def test_an_unchanged_screen_costs_nothing_and_a_foreign_out_is_filled_whole(screen, reference):
    with Capture(screen.display, track_damage=True) as capture:
        first = capture.grab_resized((320, 240))
        kept = first.copy()
        again = capture.grab_resized((320, 240), out=first)
        assert again is first and np.array_equal(again, kept)
        assert capture.changed_rows == []
        # An out that the last call did not return is filled whole, whatever it held.
        stranger = np.zeros((240, 320, 3), np.uint8)
        assert np.array_equal(capture.grab_resized((320, 240), out=stranger), kept)


def test_bad_arguments_are_named(screen):
    with Capture(screen.display) as capture:
        with pytest.raises(InvalidInputError, match="size"):
            capture.grab_resized((0, 10))
        with pytest.raises(InvalidInputError, match="crop"):
            capture.grab_resized((10, 10), crop=(600, 0, 100, 10))
        with pytest.raises(InvalidInputError):
            capture.grab_resized((10, 10), out=np.zeros((5, 5, 3), np.uint8))
