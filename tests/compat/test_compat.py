"""The mss drop-in gives pixel-identical results to the real mss on the same screen."""

from __future__ import annotations

import numpy as np
import pytest

from mantis_fast.compat.mss import MSS, ScreenShotError
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import draw_text, paint_root, test_pattern

pytestmark = pytest.mark.x11

mss = pytest.importorskip("mss")


@pytest.fixture(scope="module")
def screen(xvfb: Xvfb) -> Xvfb:
    image = test_pattern(1920, 1080, seed=11)
    image[:, :, 3] = np.arange(1920, dtype=np.uint32)[None, :] % 256  # a non-trivial padding byte
    paint_root(xvfb.display, image)
    draw_text(xvfb.display, 300, 400, "The quick brown fox 0123456789 []{}", 0x20C040)
    return xvfb


REGIONS = [
    {"left": 0, "top": 0, "width": 1920, "height": 1080},
    {"left": 290, "top": 380, "width": 400, "height": 40},
    {"left": 1919, "top": 0, "width": 1, "height": 1080},
    (100, 200, 740, 680),
]


@pytest.mark.parametrize("region", REGIONS, ids=str)
def test_mss_screenshot_is_identical(screen: Xvfb, region) -> None:
    with mss.MSS(display=screen.display) as real, MSS(display=screen.display) as ours:
        expected, got = real.grab(region), ours.grab(region)
    assert got.raw == expected.raw
    assert got.bgra == expected.bgra
    assert got.rgb == expected.rgb
    assert (got.size, got.pos) == (expected.size, expected.pos)
    assert (got.width, got.height, got.left, got.top) == (
        expected.width,
        expected.height,
        expected.left,
        expected.top,
    )
    for x, y in ((0, 0), (got.width - 1, got.height - 1), (got.width // 2, got.height // 3)):
        assert got.pixel(x, y) == expected.pixel(x, y)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    assert repr(got) == repr(expected)


def test_mss_pixels_and_monitors(screen: Xvfb) -> None:
    region = {"left": 10, "top": 20, "width": 7, "height": 5}
    with mss.MSS(display=screen.display) as real, MSS(display=screen.display) as ours:
        geometry = ("left", "top", "width", "height")
        assert [{k: m[k] for k in geometry} for m in ours.monitors] == [
            {k: m[k] for k in geometry} for m in real.monitors
        ]
        assert ours.monitors == real.monitors  # every key, is_primary as RandR says it
        assert ours.monitors[1]["output"] == "screen"
        assert [list(row) for row in ours.grab(region).pixels] == [
            list(row) for row in real.grab(region).pixels
        ]


def test_mss_errors(screen: Xvfb) -> None:
    """The exceptions mss itself raises for each misuse (checked against the real mss)."""
    with MSS(display=screen.display) as ours, mss.MSS(display=screen.display) as real:
        for sct in (ours, real):
            shot = sct.grab({"left": 0, "top": 0, "width": 4, "height": 4})
            with pytest.raises((ScreenShotError, mss.exception.ScreenShotError), match="range"):
                shot.pixel(4, 0)
            with pytest.raises(KeyError, match="width"):
                sct.grab({"left": 0, "top": 0, "height": 4})
            with pytest.raises(TypeError):
                sct.grab([0, 0, 4, 4])
            with pytest.raises(Exception, match="zero or negative size"):
                sct.grab((10, 10, 5, 20))
        with pytest.raises(ScreenShotError, match="BadMatch") as info:
            ours.grab({"left": 0, "top": 0, "width": 4000, "height": 4})
        assert info.value.details["error_code"] == 8  # BadMatch, as the server says
        with pytest.raises(mss.exception.ScreenShotError) as real_info:
            real.grab({"left": 0, "top": 0, "width": 4000, "height": 4})
        assert real_info.value.details["error_code"] == 8
