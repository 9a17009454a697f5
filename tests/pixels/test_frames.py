"""mantis_fast.pixels.frames against plain numpy references."""

from __future__ import annotations

import contextlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.pixels.frames import changed_bbox, frame_hash, hash_thumbnail

SETTINGS = settings(max_examples=60, deadline=None)
ORDERS = {"BGRX": "BGR", "BGRA": "BGR", "RGBX": "RGB", "RGBA": "RGB", "RGB": "RGB", "BGR": "BGR"}


def cell_bounds(length: int, cells: int) -> list[tuple[int, int]]:
    out = []
    for k in range(cells):
        lo = k * length // cells
        out.append((lo, max(lo + 1, (k + 1) * length // cells)))
    return out


def grey_of(img: np.ndarray, src_format: str | None) -> np.ndarray:
    """Exact grey in thousandths (int64), full size: the slow way."""
    if img.ndim == 2:
        return img.astype(np.int64) * 1000
    order = ORDERS[src_format or ("BGRX" if img.shape[2] == 4 else "RGB")]
    weight = {"R": 299, "G": 587, "B": 114}
    return sum(weight[name] * img[..., i].astype(np.int64) for i, name in enumerate(order))


def reference_hash(img: np.ndarray, src_format: str | None = None) -> str:
    grey = grey_of(img, src_format)
    h, w = grey.shape
    cells = [
        [
            Fraction(int(grey[r0:r1, c0:c1].sum()), 1000 * (r1 - r0) * (c1 - c0))
            for c0, c1 in cell_bounds(w, 9)
        ]
        for r0, r1 in cell_bounds(h, 8)
    ]
    bits = "".join("1" if row[c + 1] > row[c] else "0" for row in cells for c in range(8))
    bucket = min(15, int(Fraction(int(grey.sum()), 1000 * h * w) // 16))
    return f"{int(bits, 2):016x}{bucket:x}"


def reference_bbox(a: np.ndarray, b: np.ndarray):
    differ = a != b
    if differ.ndim == 3:
        differ = differ.any(axis=2)
    ys, xs = np.nonzero(differ)
    if ys.size == 0:
        return None
    return (
        int(xs.min()),
        int(ys.min()),
        int(xs.max() - xs.min() + 1),
        int(ys.max() - ys.min() + 1),
    )


def screen(height: int, width: int, channels: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.full((height, width, channels), 230, np.uint8)
    img[: height // 10] = (40, 44, 52, 0)[:channels]
    img[:, : width // 6] = np.linspace(60, 200, height, dtype=np.uint8)[:, None, None]
    text = rng.random((height, width)) < 0.08
    img[height // 4 :][text[height // 4 :]] = 20
    return img


# -- frame_hash ------------------------------------------------------------------------------


def test_hash_is_stable_across_runs_and_machines():
    # A golden value on a frame built from arithmetic alone (no RNG stream): any change to the
    # definition must be deliberate.
    y, x = np.mgrid[:1080, :1920]
    frame = np.zeros((1080, 1920, 4), np.uint8)
    frame[..., 0] = (x * 255 // 1919).astype(np.uint8)
    frame[..., 1] = np.where((x * 7 + y * 13) % 11 == 0, 20, 230)
    frame[..., 2] = ((x // 97 * 53 + y // 71 * 29) % 256).astype(np.uint8)
    assert frame_hash(frame) == reference_hash(frame)
    assert frame_hash(frame) == "b5aa6a56d5abaa5ab"


@pytest.mark.parametrize(
    "shape",
    [
        (1080, 1920, 4),
        (720, 1280, 3),
        (8, 9, 4),
        (7, 9, 4),
        (8, 8, 3),
        (1, 1, 4),
        (3, 20, 3),
        (20, 2, 4),
        (37, 101),
        (1, 1),
    ],
)
def test_hash_matches_reference(shape):
    img = np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8)
    assert frame_hash(img) == reference_hash(img)


@given(
    data=st.data(),
    height=st.integers(1, 40),
    width=st.integers(1, 50),
    src_format=st.sampled_from(list(ORDERS)),
)
@SETTINGS
def test_hash_matches_reference_random(data, height, width, src_format):
    channels = len(src_format)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    levels = data.draw(st.sampled_from([2, 3, 256]))  # few levels: many exact ties
    pad = data.draw(st.integers(0, 5))
    base = rng.integers(0, levels, (height, width + pad, channels)) * (255 // (levels - 1))
    img = base.astype(np.uint8)[:, :width]
    assert frame_hash(img, src_format=src_format) == reference_hash(img, src_format)


def test_thumbnail_is_the_cell_mean():
    img = screen(100, 90, 3)
    thumb = hash_thumbnail(img)
    grey = grey_of(img, None) / 1000
    assert thumb.shape == (8, 9)
    for r, (r0, r1) in enumerate(cell_bounds(100, 8)):
        for c, (c0, c1) in enumerate(cell_bounds(90, 9)):
            assert thumb[r, c] == pytest.approx(grey[r0:r1, c0:c1].mean(), abs=1e-9)


def test_hash_ignores_padding_byte_views_and_channel_order():
    frame = screen(200, 300)
    h = frame_hash(frame)
    noisy = frame.copy()
    noisy[..., 3] = np.random.default_rng(1).integers(0, 256, noisy.shape[:2])
    assert frame_hash(noisy) == h
    canvas = np.zeros((210, 320, 4), np.uint8)
    canvas[5:205, 10:310] = frame
    assert frame_hash(canvas[5:205, 10:310]) == h
    rgb = np.ascontiguousarray(frame[..., 2::-1])
    assert frame_hash(rgb) == h
    assert frame_hash(frame[..., :3].copy(), src_format="BGR") == h
    assert frame_hash(frame, src_format="BGRA") == h


def test_hash_sees_new_screens_not_specks():
    frame = screen(1080, 1920)
    speck = frame.copy()
    speck[500:510, 900:901] = 0  # a caret blink
    assert frame_hash(speck) == frame_hash(frame)
    page = frame.copy()
    page[200:900, 300:1600] = 255  # a dialog opened
    assert frame_hash(page) != frame_hash(frame)
    darker = (frame // 2).astype(np.uint8)
    assert frame_hash(darker)[-1] != frame_hash(frame)[-1]  # brightness bucket moved


# -- changed_bbox ----------------------------------------------------------------------------


def test_identical_frames_have_no_box():
    frame = screen(100, 120)
    assert changed_bbox(frame, frame.copy()) is None
    assert changed_bbox(frame, frame) is None


@pytest.mark.parametrize(
    "rect", [(0, 0, 1, 1), (119, 99, 1, 1), (10, 20, 30, 40), (0, 50, 120, 1), (0, 0, 120, 100)]
)
def test_box_of_a_changed_rectangle(rect):
    a = screen(100, 120)
    b = a.copy()
    x, y, w, h = rect
    b[y : y + h, x : x + w] ^= 1
    assert changed_bbox(a, b) == rect


def test_padding_byte_counts_as_a_change():
    a = screen(10, 10)
    b = a.copy()
    b[3, 4, 3] ^= 0xFF
    assert changed_bbox(a, b) == (4, 3, 1, 1)


@given(
    data=st.data(),
    height=st.integers(1, 30),
    width=st.integers(1, 40),
    channels=st.sampled_from([0, 3, 4]),
)
@SETTINGS
def test_box_matches_reference_random(data, height, width, channels):
    shape = (height, width) if channels == 0 else (height, width, channels)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    b = a.copy()
    for _ in range(data.draw(st.integers(0, 4))):
        y, x = data.draw(st.integers(0, height - 1)), data.draw(st.integers(0, width - 1))
        b[y, x] ^= np.uint8(1 << data.draw(st.integers(0, 7)))
    if data.draw(st.booleans()):  # padded rows on one side only
        padded = np.zeros((height, width + 3, *shape[2:]), np.uint8)
        padded[:, :width] = b
        b = padded[:, :width]
    assert changed_bbox(a, b) == reference_bbox(a, b)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (np.zeros((4, 4, 4), np.float32), r"expected uint8 .* got float32 \(4, 4, 4\)"),
        (np.zeros((4, 4, 2), np.uint8), r"got uint8 \(4, 4, 2\)"),
        (np.zeros((4,), np.uint8), r"got uint8 \(4,\)"),
        (np.zeros((0, 4, 4), np.uint8), "empty"),
        (np.zeros((4, 8, 4), np.uint8)[:, ::2], "C-contiguous pixels"),
        ("frame", "got str"),
    ],
)
def test_bad_frames(frame, message):
    with pytest.raises(ValueError, match=message):
        frame_hash(frame)
    with pytest.raises(ValueError, match=message):
        changed_bbox(frame, frame)


def test_shape_mismatch_and_bad_format():
    with pytest.raises(ValueError, match=r"a is \(4, 4, 4\), b is \(4, 5, 4\)"):
        changed_bbox(np.zeros((4, 4, 4), np.uint8), np.zeros((4, 5, 4), np.uint8))
    with pytest.raises(ValueError, match="src_format"):
        frame_hash(np.zeros((4, 4, 4), np.uint8), src_format="RGB")


@st.composite
def anything(draw):
    dtype = draw(st.sampled_from([np.uint8, np.uint8, np.int16, np.float64]))
    shape = tuple(draw(st.lists(st.integers(0, 7), min_size=0, max_size=4)))
    a = np.zeros(shape, dtype)
    if a.ndim >= 2 and draw(st.booleans()):
        a = a[::-1, ::2]
    return draw(st.one_of(st.just(a), st.none(), st.integers(), st.text(max_size=3)))


@given(a=anything(), b=anything(), src_format=st.sampled_from([None, "BGRA", "RGB", "bad"]))
@settings(max_examples=200, deadline=None)
def test_fuzz_only_value_errors(a, b, src_format):
    for call in (lambda: frame_hash(a, src_format=src_format), lambda: changed_bbox(a, b)):
        with contextlib.suppress(ValueError):
            call()
