"""mantis_fast.pixels.image.resize against slow, obviously-correct references.

The area reference works in exact integers: source pixel k spans [k * out, (k + 1) * out) and
output cell j spans [j * crop, (j + 1) * crop) in units of 1/out source pixels, so every weight
is an integer overlap and the average is an exact fraction. It shares no code with the kernel
(no gcd reduction, no tables, dense matrices).
"""

from __future__ import annotations

import ctypes
import math
import mmap
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import mantis_fast.pixels.image as image_module
from mantis_fast.pixels import _resize
from mantis_fast.pixels.image import MAX_SIDE, resize

OUT_FORMATS = ["RGB", "BGR", "RGBA", "BGRA", "L"]
SRC_FORMATS = ["BGRX", "BGRA", "RGBX", "RGBA", "RGB", "BGR"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- references ------------------------------------------------------------------------------


def coverage_matrix(src_len: int, dst_len: int) -> np.ndarray:
    """Integer overlaps (dst_len, src_len) in units of 1/dst_len source pixels."""
    j = np.arange(dst_len, dtype=np.int64)[:, None]
    k = np.arange(src_len, dtype=np.int64)[None, :]
    lo, hi = j * src_len, (j + 1) * src_len  # output cell j
    overlap = np.minimum(hi, (k + 1) * dst_len) - np.maximum(lo, k * dst_len)  # pixel k
    return np.maximum(overlap, 0)


def area_numerators(src: np.ndarray, crop, out_w: int, out_h: int):
    """Exact (numerator array, denominator) of the area average of each channel."""
    x, y, w, h = crop
    block = src[y : y + h, x : x + w].astype(np.int64)
    wy, wx = coverage_matrix(h, out_h), coverage_matrix(w, out_w)
    rows = np.tensordot(wy, block, axes=(1, 0))  # (out_h, w, channels)
    num = np.tensordot(rows, wx, axes=(1, 1)).transpose(0, 2, 1)
    return num, w * h


def area_exact(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    """floor(average + 1/2) per channel, computed exactly."""
    num, den = area_numerators(src, crop, out_w, out_h)
    return ((2 * num + den) // (2 * den)).astype(np.uint8)


def fixed_geometry(crop_w: int, crop_h: int, out_w: int, out_h: int) -> bool:
    """The geometries documented to take the fixed-point rows: the cell's denominator
    (crop_w / gcd(crop_w, out_w)) * (crop_h / gcd(crop_h, out_h)) above 64 and cells of at
    most 8 source pixels a side."""
    denominator = crop_w // math.gcd(crop_w, out_w) * (crop_h // math.gcd(crop_h, out_h))
    widest = max(
        (coverage_matrix(crop_w, out_w) > 0).sum(axis=1).max(),
        (coverage_matrix(crop_h, out_h) > 0).sum(axis=1).max(),
    )
    return denominator > 64 and widest <= 8


def scaled_weights(coverage: np.ndarray, one: int) -> np.ndarray:
    """Each row of overlaps scaled to sum to ``one``: rounded half up, the remainder on the
    row's (first) largest weight."""
    total = coverage.sum(axis=1, keepdims=True)
    scaled = (2 * coverage * one + total) // (2 * total)
    rows = np.arange(len(coverage))
    scaled[rows, coverage.argmax(axis=1)] += one - scaled.sum(axis=1)
    return scaled


def area_fixed(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    """The fixed-point arithmetic as documented, one term at a time: Q15 row weights, each
    row's term floor(x * w / 256) plus 64 + rows // 2, then Q14 column weights and >> 21."""
    x, y, w, h = crop
    block = src[y : y + h, x : x + w].astype(np.int64)
    cover_y, cover_x = coverage_matrix(h, out_h), coverage_matrix(w, out_w)
    qy, qx = scaled_weights(cover_y, 32768), scaled_weights(cover_x, 16384)
    rows = (cover_y > 0).sum(axis=1)
    vertical = np.empty((out_h, w, block.shape[2]), np.int64)
    for i in range(out_h):
        terms = (block * qy[i][:, None, None]) >> 8
        vertical[i] = 64 + rows[i] // 2 + terms[cover_y[i] > 0].sum(axis=0)
    assert vertical.max() < 2**15  # a signed 16-bit lane
    sums = np.tensordot(vertical, qx, axes=(1, 1)).transpose(0, 2, 1)
    assert sums.max() < 2**31
    return np.minimum(sums >> 21, 255).astype(np.uint8)


def area_reference(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    """What ``resize(method="area")`` must return: the exact half-up rounding, or for the
    fixed-point geometries the documented fixed-point arithmetic."""
    _, _, w, h = crop
    if fixed_geometry(w, h, out_w, out_h):
        return area_fixed(src, crop, out_w, out_h)
    return area_exact(src, crop, out_w, out_h)


def area_float(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    num, den = area_numerators(src, crop, out_w, out_h)
    return num / den


def bilinear_float(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    """Half-pixel-centre two-tap interpolation in float64, edges clamped to the crop."""
    x, y, w, h = crop
    block = src[y : y + h, x : x + w].astype(np.float64)

    def taps(src_len, dst_len):
        pos = np.clip((np.arange(dst_len) + 0.5) * src_len / dst_len - 0.5, 0, src_len - 1)
        left = np.floor(pos).astype(int)
        right = np.minimum(left + 1, src_len - 1)
        return left, right, pos - left

    y0, y1, fy = taps(h, out_h)
    x0, x1, fx = taps(w, out_w)
    rows = block[y0] * (1 - fy)[:, None, None] + block[y1] * fy[:, None, None]
    return rows[:, x0] * (1 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]


def bilinear_fixed(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    """The bilinear integers as documented: taps at half-pixel centres clamped to the crop,
    weights in 1/2048ths rounded half up, the rows blended first (32-bit), then the
    neighbours, + 2**21 and >> 22."""
    x, y, w, h = crop
    block = src[y : y + h, x : x + w].astype(np.int64)

    def taps(src_len: int, dst_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        den = 2 * dst_len
        num = (2 * np.arange(dst_len) + 1) * src_len - dst_len
        left = np.where(num <= 0, 0, num // den)
        rem = np.where(num <= 0, 0, num - left * den)
        edge = left >= src_len - 1
        left, rem = np.where(edge, src_len - 1, left), np.where(edge, 0, rem)
        frac = (rem * 2048 * 2 + den) // (2 * den)
        return left, np.minimum(left + 1, src_len - 1), frac

    y0, y1, fy = taps(h, out_h)
    x0, x1, fx = taps(w, out_w)
    rows = (2048 - fy)[:, None, None] * block[y0] + fy[:, None, None] * block[y1]
    sums = (2048 - fx)[None, :, None] * rows[:, x0] + fx[None, :, None] * rows[:, x1]
    return ((sums + (1 << 21)) >> 22).astype(np.uint8)


def nearest_reference(src: np.ndarray, crop, out_w: int, out_h: int) -> np.ndarray:
    x, y, w, h = crop
    xi = [x + (2 * j + 1) * w // (2 * out_w) for j in range(out_w)]
    yi = [y + (2 * i + 1) * h // (2 * out_h) for i in range(out_h)]
    return src[np.ix_(yi, xi)]


def convert_reference(pixels: np.ndarray, src_format: str, out_format: str) -> np.ndarray:
    """Reorder resampled channels (uint8, source order) into out_format."""
    channel = {name: pixels[..., i].astype(np.int64) for i, name in enumerate(src_format)}
    if out_format == "L":
        r, g, b = channel["R"], channel["G"], channel["B"]
        return ((19595 * r + 38470 * g + 7471 * b + 0x8000) >> 16).astype(np.uint8)
    alpha = channel.get("A", np.full(pixels.shape[:2], 255, np.int64))
    planes = [alpha if name == "A" else channel[name] for name in out_format]
    return np.stack(planes, axis=-1).astype(np.uint8)


def screen_like(height: int, width: int, channels: int = 4, seed: int = 0) -> np.ndarray:
    """Flat panels, a gradient, hard-edged 'text' and noise: what screens are made of."""
    rng = np.random.default_rng(seed)
    img = np.empty((height, width, channels), np.uint8)
    img[:] = rng.integers(0, 256, channels, dtype=np.uint8)
    img[: height // 3] = np.linspace(0, 255, width, dtype=np.uint8)[None, :, None]
    glyphs = rng.random((height, width)) < 0.3
    img[height // 3 : 2 * height // 3][glyphs[height // 3 : 2 * height // 3]] = 0
    img[2 * height // 3 :] = rng.integers(0, 256, (height - 2 * height // 3, width, channels))
    return img


PATHS = ["avx512", "avx2", "sse2", "portable"]


def path_available(path: str) -> bool:
    return {
        "avx512": _resize.avx512_available(),
        "avx2": _resize.avx2_available(),
        "sse2": _resize.simd_available(),
    }.get(path, True)


@contextmanager
def kernel_path(path: str):
    """Run the kernels through the AVX-512 fixed-point rows (with AVX2 elsewhere), the AVX2
    rows, the SSE2 rows or the portable Cython rows."""
    previous_simd = image_module._SIMD
    previous_avx2 = _resize.use_avx2(path in ("avx512", "avx2"))
    previous_avx512 = _resize.use_avx512(path == "avx512")
    image_module._SIMD = path != "portable"
    try:
        yield
    finally:
        image_module._SIMD = previous_simd
        _resize.use_avx2(previous_avx2)
        _resize.use_avx512(previous_avx512)


@pytest.fixture(params=PATHS)
def simd(request):
    """Run a test through each kernel path this machine has."""
    if not path_available(request.param):
        pytest.skip(f"no {request.param} rows on this machine")
    with kernel_path(request.param):
        yield request.param


# -- area ------------------------------------------------------------------------------------

GEOMETRIES = [
    # (src w, h), (out w, h): 1.5x, 3x, integer 2x, 4x, smart-resize-like, mild upscale, odd
    ((96, 54), (64, 36)),
    ((96, 54), (32, 18)),
    ((64, 48), (32, 24)),
    ((14, 10), (7, 5)),  # 2x with a width that is not a multiple of the 4-pixel step
    ((64, 48), (16, 12)),
    ((120, 68), (84, 56)),
    ((40, 30), (41, 31)),
    ((37, 23), (11, 7)),
    ((7, 5), (13, 11)),
    ((1, 1), (3, 2)),
    ((5, 9), (1, 1)),
]


# The sizes models ask for, scaled down (same ratios): Qwen's 28-pixel grid (1920x1080 ->
# 1316x728), FWXGA (-> 1366x768), XGA from 1600x1200, a 1568 long-edge cap from 2560x1440,
# 1024x576, and co-prime odd sizes, upscales and 1-pixel sides with large denominators.
FIXED_GEOMETRIES = [
    ((480, 270), (329, 182)),
    ((480, 270), (341, 192)),
    ((160, 120), (102, 77)),
    ((320, 180), (196, 110)),
    ((240, 135), (128, 72)),
    ((101, 67), (37, 29)),
    ((37, 23), (53, 41)),
    ((97, 1), (40, 1)),
    ((11, 130), (2, 67)),
    # 5.3x and 6.6x: two windows of four columns a pixel, cells of 5 to 8 rows
    ((480, 270), (90, 50)),
    ((640, 400), (97, 61)),
]


@pytest.mark.parametrize(("src_size", "out_size"), GEOMETRIES + FIXED_GEOMETRIES)
@pytest.mark.parametrize("channels", [4, 3])
def test_area_is_bit_exact(src_size, out_size, channels, simd):
    src = screen_like(src_size[1], src_size[0], channels)
    src_format = "BGRA" if channels == 4 else "RGB"
    out = resize(src, out_size, out_format=src_format.replace("X", "A"), src_format=src_format)
    expected = area_reference(src, (0, 0, *src_size), *out_size)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(("src_size", "out_size"), GEOMETRIES + FIXED_GEOMETRIES)
def test_area_within_one_lsb_of_float64_average(src_size, out_size):
    src = screen_like(src_size[1], src_size[0], 4, seed=3)
    out = resize(src, out_size, out_format="BGRA", src_format="BGRA")
    exact = area_float(src, (0, 0, *src_size), *out_size)
    error = np.abs(out - exact)
    if fixed_geometry(*src_size, *out_size):
        # the average rounded down or up (the sum before the last shift within 1/4 of it),
        # nearly always half up where the average is not itself a half (a tie may go down)
        assert error.max() < 0.75
        tie = np.isclose(exact - np.floor(exact), 0.5)
        assert (out != np.floor(exact + 0.5))[~tie].mean() < 0.01
    else:
        assert error.max() <= 0.5 + 1e-9  # correctly rounded


@pytest.mark.parametrize(("src_size", "out_size"), GEOMETRIES + FIXED_GEOMETRIES)
def test_area_arithmetic_is_the_documented_one(src_size, out_size):
    x_axis = _resize.area_axis(src_size[0], out_size[0])
    y_axis = _resize.area_axis(src_size[1], out_size[1])
    assert _resize.uses_fixed_point(x_axis, y_axis) == fixed_geometry(*src_size, *out_size)


@pytest.mark.parametrize(("src_size", "out_size"), FIXED_GEOMETRIES)
@pytest.mark.parametrize("src_format", ["BGRX", "RGB"])
def test_area_fixed_point_every_format(src_size, out_size, src_format, simd):
    assert fixed_geometry(*src_size, *out_size)
    channels = len(src_format)
    src = screen_like(src_size[1], src_size[0], channels, seed=out_size[0])
    native = area_fixed(src, (0, 0, *src_size), *out_size)
    for out_format in OUT_FORMATS:
        out = resize(src, out_size, out_format=out_format, src_format=src_format)
        np.testing.assert_array_equal(out, convert_reference(native, src_format, out_format))


@pytest.mark.parametrize(
    ("src_size", "out_size"),
    [
        ((7001, 1), (1001, 1)),  # 6.99x: eight-pixel cells, the widest fixed-point cell
        ((97, 3), (16381, 5)),  # a 169x upscale with coprime lengths
        ((1, 97), (2, 16381)),
        ((1, 67), (16384, 10)),  # a 16384x upscale beside 6.7-row cells
    ],
)
def test_area_fixed_point_extremes_saturate(src_size, out_size, simd):
    # Every source pixel 255: the largest vertical value (64 + 4 + 32640) and sum (< 2**31)
    # must still come out 255; a checkerboard of 0 and 255 checks the weights' remainders.
    assert fixed_geometry(*src_size, *out_size)
    src = np.full((src_size[1], src_size[0], 4), 255, np.uint8)
    out = resize(src, out_size, out_format="BGRA", src_format="BGRA")
    assert (out == 255).all()
    src[::2, ::2] = 0
    src[1::2, 1::2] = 0
    out = resize(src, out_size, out_format="BGRA", src_format="BGRA")
    np.testing.assert_array_equal(out, area_fixed(src, (0, 0, *src_size), *out_size))


@pytest.mark.parametrize("crop_x", range(17))
@pytest.mark.parametrize(
    ("crop_w", "out_size"),
    [
        ((13, (9, 5))),  # narrower than an AVX-512 step: AVX2 steps, the portable tail
        ((16, (11, 7))),  # exactly one AVX-512 step
        ((37, (25, 3))),  # odd width: the last step cannot end the row
        ((66, (45, 6))),  # even width: the last step overlaps to end it
        ((100, (69, 1))),  # one output row: a group repeats it
    ],
)
@pytest.mark.parametrize("src_format", ["BGRA", "RGB"])
def test_area_fixed_point_steps_alignment_and_groups(crop_x, crop_w, out_size, src_format, simd):
    # The fixed-point rows go in steps of 8 or 16 source pixels (from an aligned address where
    # one is a whole number of pixel pairs in), two or four output rows at once, 3-channel
    # rows spread to 4 bytes a pixel in registers (masked at the row's end), the output rows
    # ending with steps too: every start address, width and row count must give the
    # documented arithmetic.
    channels = len(src_format)
    src = screen_like(2 * out_size[1] + 3, crop_x + crop_w + 5, channels, seed=crop_w)
    crop = (crop_x, 1, crop_w, 3 * out_size[1] // 2 + 1)
    assert fixed_geometry(crop_w, crop[3], *out_size)
    for out_format in ("RGB", "BGRA", "L"):
        out = resize(src, out_size, crop=crop, out_format=out_format, src_format=src_format)
        native = area_fixed(src, crop, *out_size)
        np.testing.assert_array_equal(out, convert_reference(native, src_format, out_format))


@pytest.mark.parametrize(
    ("src_size", "out_size"),
    [
        ((600, 300), (2, 299)),  # vertical denominator 300: 32-bit vertical sums
        ((40, 514), (7, 2)),  # vertical denominator 257: the widest 16-bit sums
        ((515, 40), (2, 39)),  # horizontal denominator 515 with 16-bit vertical sums
    ],
)
def test_area_large_denominators(src_size, out_size, simd):
    src = screen_like(src_size[1], src_size[0], 4, seed=5)
    src[::2, ::3] = 255
    src[:, :3] = 255  # whole saturated cells: sums reach 255 * denominator (65535 at 257)
    out = resize(src, out_size, out_format="BGRA", src_format="BGRA")
    np.testing.assert_array_equal(out, area_reference(src, (0, 0, *src_size), *out_size))


def test_area_huge_coprime_denominator_uses_exact_division():
    # 2053 is prime: denominator 2053 * 2053 > 2**22 takes the 64-bit path.
    src = screen_like(2053, 2053, 4, seed=6)
    src[:1000] = 255
    out = resize(src, (2, 3), out_format="BGRA", src_format="BGRA")
    np.testing.assert_array_equal(out, area_reference(src, (0, 0, 2053, 2053), 2, 3))


def test_area_rounds_half_up():
    src = np.zeros((1, 2, 4), np.uint8)
    src[0, 1] = 1  # average of 0 and 1 is exactly 0.5
    assert resize(src, (1, 1), out_format="BGRA", src_format="BGRA")[0, 0, 0] == 1
    src[0, 1] = 2  # average 1.0
    assert resize(src, (1, 1), out_format="BGRA", src_format="BGRA")[0, 0, 0] == 1


@pytest.mark.parametrize("denominator", [*range(1, 300), 4093, 65536, 1 << 20, (1 << 22) - 3])
def test_rounding_multipliers_are_exact(denominator):
    s = np.arange(0, 255 * denominator + 1, max(1, denominator // 1000), dtype=object)
    s = np.unique(np.concatenate([s, [0, 255 * denominator, denominator // 2, denominator]]))
    expected = (2 * s + denominator) // (2 * denominator)
    mult, shift = _resize.area_rounding(denominator)
    assert mult < 2**32
    assert (((2 * s + denominator) * mult) >> shift == expected).all()
    mult16, shift16 = _resize.area_rounding16(denominator)
    if denominator <= 64:
        assert 0 < mult16 < 2**16 and shift16 >= 16
        got = (((2 * s + denominator) * mult16) >> 16) >> (shift16 - 16)
        assert (got == expected).all()
    else:
        assert (mult16, shift16) == (0, 0)


def test_three_to_two_rounding_needs_no_shift():
    # The 1.5x kernel rounds with pmulhuw alone: area_rounding16(9)'s multiplier, halved.
    mult, shift = _resize.area_rounding16(9)
    assert (mult % 2, shift) == (0, 17)
    n = 2 * np.arange(255 * 9 + 1) + 9
    assert ((n * (mult // 2)) >> 16 == n // 18).all()


@given(
    data=st.data(),
    channels=st.sampled_from([3, 4]),
    width=st.integers(1, 48),
    height=st.integers(1, 40),
)
@SETTINGS
def test_area_matches_reference_random_crops_and_strides(data, channels, width, height):
    pad = data.draw(st.integers(0, 9), label="row padding in pixels")
    flip = data.draw(st.booleans(), label="vertically flipped view")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (height, width + pad, channels), dtype=np.uint8)
    src = base[:, :width]
    if flip:
        src = src[::-1]
    cw = data.draw(st.integers(1, width), label="crop w")
    ch = data.draw(st.integers(1, height), label="crop h")
    cx = data.draw(st.integers(0, width - cw), label="crop x")
    cy = data.draw(st.integers(0, height - ch), label="crop y")
    out_w = data.draw(st.integers(1, 2 * cw + 2), label="out w")
    out_h = data.draw(st.integers(1, 2 * ch + 2), label="out h")
    path = data.draw(st.sampled_from([p for p in PATHS if path_available(p)]), label="path")
    src_format = "BGRA" if channels == 4 else "BGR"
    with kernel_path(path):
        out = resize(
            src, (out_w, out_h), crop=(cx, cy, cw, ch), out_format="BGRA", src_format=src_format
        )
    expected = area_reference(src, (cx, cy, cw, ch), out_w, out_h)
    np.testing.assert_array_equal(out[..., :channels], expected)
    exact = area_float(src, (cx, cy, cw, ch), out_w, out_h)
    assert np.abs(out[..., :channels] - exact).max() < 0.75
    if channels == 3:
        assert (out[..., 3] == 255).all()


# 1.5x and 2x on both axes have their own AVX2 kernels: whole blocks, then the tail pixels of
# a row (2 or 4 pixels at 1.5x, 1 to 9 at 2x) through the same block code; 3x along the row
# has an AVX2 row of four output pixels a step, its tail (1 to 3 pixels) in the SSE2 row.
SMALL_FACTOR_WIDTHS = [
    *[((3, 2), out_w) for out_w in (2, 4, 6, 8, 10, 12, 14, 22, 66)],
    *[((2, 1), out_w) for out_w in (1, 2, 3, 5, 8, 9, 10, 11, 17, 18, 19, 66)],
    *[((3, 1), out_w) for out_w in (1, 3, 4, 5, 7, 8, 9, 13, 66)],
]


@pytest.mark.parametrize(("factor", "out_w"), SMALL_FACTOR_WIDTHS)
@pytest.mark.parametrize("src_format", ["BGRX", "RGB"])
@pytest.mark.parametrize("crop_x", [0, 1, 3])
def test_area_small_factor_rows_and_tails(factor, out_w, src_format, crop_x, simd):
    channels, (num, den) = len(src_format), factor
    out_h = 3 * den  # two row pairs at 1.5x, three rows at 2x and 3x
    crop = (crop_x, 2, out_w * num // den, out_h * num // den)
    src = screen_like(crop[3] + 5, crop_x + crop[2] + 5, channels, seed=out_w)[1:]
    for out_format in OUT_FORMATS:
        out = resize(src, (out_w, out_h), crop=crop, out_format=out_format, src_format=src_format)
        native = area_reference(src, crop, out_w, out_h)
        np.testing.assert_array_equal(out, convert_reference(native, src_format, out_format))


@pytest.mark.parametrize("out_size", [(32, 20), (24, 15), (16, 10)])  # 1.5x, 2x, 3x
def test_area_small_factors_saturate_exactly(out_size, simd):
    src = np.full((30, 48, 4), 255, np.uint8)
    src[::3, ::2] = 0
    src[1::3, 1::5] = 254
    out = resize(src, out_size, out_format="BGRA", src_format="BGRA")
    np.testing.assert_array_equal(out, area_reference(src, (0, 0, 48, 30), *out_size))


@given(
    data=st.data(),
    channels=st.sampled_from([3, 4]),
    factor=st.sampled_from([(3, 2), (2, 1), (3, 1)]),
    cells_w=st.integers(1, 24),
    cells_h=st.integers(1, 6),
)
@SETTINGS
def test_area_small_factor_random_crops_and_strides(data, channels, factor, cells_w, cells_h):
    num, den = factor  # num source pixels to den output pixels on each axis
    cw, ch, out_w, out_h = num * cells_w, num * cells_h, den * cells_w, den * cells_h
    cx = data.draw(st.integers(0, 7), label="crop x")
    cy = data.draw(st.integers(0, 3), label="crop y")
    pad = data.draw(st.integers(0, 9), label="row padding in pixels")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    src = rng.integers(0, 256, (cy + ch, cx + cw + pad, channels), dtype=np.uint8)[:, : cx + cw]
    if data.draw(st.booleans(), label="vertically flipped view"):
        src = src[::-1]
    src_format = data.draw(st.sampled_from(image_module.SRC_FORMATS[channels]), label="format")
    out_format = data.draw(st.sampled_from(OUT_FORMATS), label="out format")
    path = data.draw(st.sampled_from([p for p in PATHS if path_available(p)]), label="path")
    crop = (cx, cy, cw, ch)
    with kernel_path(path):
        out = resize(src, (out_w, out_h), crop=crop, out_format=out_format, src_format=src_format)
    native = area_reference(src, crop, out_w, out_h)
    np.testing.assert_array_equal(out, convert_reference(native, src_format, out_format))


# -- bilinear and nearest --------------------------------------------------------------------


@pytest.mark.parametrize(("src_size", "out_size"), GEOMETRIES)
def test_bilinear_within_one_lsb(src_size, out_size):
    src = screen_like(src_size[1], src_size[0], 4, seed=7)
    out = resize(src, out_size, method="bilinear", out_format="BGRA", src_format="BGRA")
    exact = bilinear_float(src, (0, 0, *src_size), *out_size)
    # 11-bit weights: at most 2 * 255 / 4096 off before the final rounding.
    assert np.abs(out - exact).max() <= 0.5 + 2 * 255 / 4096


def _random_case(data, width: int, height: int, scale: int) -> tuple:
    """A random 3- or 4-channel source, crop, output size (up to ``scale`` times the crop),
    output format, and the result of ``method`` through a random kernel path."""
    channels = data.draw(st.sampled_from([3, 4]), label="channels")
    src = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).integers(
        0, 256, (height, width, channels), dtype=np.uint8
    )
    cw, ch = data.draw(st.integers(1, width)), data.draw(st.integers(1, height))
    cx, cy = data.draw(st.integers(0, width - cw)), data.draw(st.integers(0, height - ch))
    out_w = data.draw(st.integers(1, scale * cw), label="out w")
    out_h = data.draw(st.integers(1, scale * ch), label="out h")
    out_format = data.draw(st.sampled_from(OUT_FORMATS), label="out format")
    path = data.draw(st.sampled_from([p for p in PATHS if path_available(p)]), label="path")
    src_format = "BGRA" if channels == 4 else "RGB"
    return src, (cx, cy, cw, ch), (out_w, out_h), src_format, out_format, path


def _assert_resized_as(method: str, case: tuple, resampled: np.ndarray) -> None:
    """The case resized by ``method`` on its kernel path is ``resampled`` (in the source's
    channels) converted to the case's output format."""
    src, crop, size, src_format, out_format, path = case
    with kernel_path(path):
        out = resize(
            src, size, crop=crop, method=method, out_format=out_format, src_format=src_format
        )
    np.testing.assert_array_equal(out, convert_reference(resampled, src_format, out_format))


@given(data=st.data(), width=st.integers(1, 40), height=st.integers(1, 30))
@SETTINGS
def test_bilinear_random_crops(data, width, height):
    # Every kernel path gives the documented integers (bilinear_fixed), within 1 LSB of float.
    case = _random_case(data, width, height, scale=2)
    src, crop, size = case[:3]
    fixed = bilinear_fixed(src, crop, *size)
    _assert_resized_as("bilinear", case, fixed)
    assert np.abs(fixed - bilinear_float(src, crop, *size)).max() <= 0.5 + 2 * 255 / 4096


@given(data=st.data(), width=st.integers(1, 60), height=st.integers(1, 40))
@SETTINGS
def test_nearest_is_the_index_formula(data, width, height):
    # AVX2 gathers eight pixels a step (from 3 channels, 4 bytes from each: the steps stop
    # before the last pixel of the row); the source is a fresh array, so a read past its last
    # row would leave the allocation.
    case = _random_case(data, width, height, scale=3)
    src, crop, size = case[:3]
    _assert_resized_as("nearest", case, nearest_reference(src, crop, *size))


@pytest.mark.parametrize("method", ["area", "bilinear", "nearest"])
def test_same_size_is_a_pure_crop(method, simd):
    src = screen_like(50, 70, 4)
    out = resize(
        src, (30, 20), crop=(5, 7, 30, 20), method=method, out_format="BGRA", src_format="BGRA"
    )
    np.testing.assert_array_equal(out, src[7:27, 5:35])


def _ending_at_a_guard_page(shape: tuple[int, ...]) -> np.ndarray:
    """A uint8 array of ``shape`` whose last byte is the last one before a page no process
    may read: a kernel that reads past the source's end crashes instead of passing."""
    nbytes = math.prod(shape)
    page = mmap.PAGESIZE
    size = -(-nbytes // page) * page + page
    buffer = mmap.mmap(-1, size)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    assert libc.mprotect(start + size - page, page, 0) == 0, ctypes.get_errno()  # PROT_NONE
    offset = size - page - nbytes
    return np.frombuffer(buffer, np.uint8, count=nbytes, offset=offset).reshape(shape)


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize(
    ("method", "out_size"),
    [
        ("area", (67, 25)),  # fixed point (1.51x, 1.48x)
        ("area", (51, 19)),  # 2x
        ("area", (68, 25)),  # 1.5x
        ("area", (17, 6)),  # 6x
        ("area", (150, 50)),  # upscale
        ("bilinear", (67, 25)),
        ("nearest", (67, 25)),
    ],
)
def test_kernels_read_nothing_past_the_source(method, out_size, channels, simd):
    # 102x37 pixels, the last row ending where the readable memory ends, and so the output;
    # whole and cropped to the last column at widths whose last steps end 2 to 15 bytes short
    # of the row's end on 8- and 16-pixel steps
    src = _ending_at_a_guard_page((37, 102, channels))
    src[...] = screen_like(37, 102, channels, seed=5)
    out = _ending_at_a_guard_page((out_size[1], out_size[0], 3))
    for crop in [None, (1, 1, 101, 36), (4, 1, 98, 36), (6, 1, 96, 36)]:
        crop_box = crop or (0, 0, 102, 37)
        expected = resize(np.array(src), out_size, crop=crop, method=method)
        resize(src, out_size, crop=crop, method=method, out=out)
        np.testing.assert_array_equal(out, expected, err_msg=f"{crop_box}")


# -- formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize("src_format", SRC_FORMATS)
@pytest.mark.parametrize("out_format", OUT_FORMATS)
@pytest.mark.parametrize(
    ("method", "out_size"),
    [
        ("area", (24, 15)),  # 2x
        ("area", (32, 20)),  # 1.5x
        ("area", (19, 13)),  # any other geometry: vertical pass, then horizontal row
        ("area", (53, 31)),  # upscale: one tap pair
        ("nearest", (24, 15)),
    ],
)
def test_every_format_pair(src_format, out_format, method, out_size, simd):
    channels = len(src_format)
    src = screen_like(30, 48, channels, seed=11)
    resampled_native = {"area": area_reference, "nearest": nearest_reference}[method](
        src, (0, 0, 48, 30), *out_size
    )
    out = resize(src, out_size, method=method, out_format=out_format, src_format=src_format)
    np.testing.assert_array_equal(out, convert_reference(resampled_native, src_format, out_format))


def test_default_formats_treat_fourth_byte_as_padding():
    src = screen_like(8, 8, 4)
    src[..., 3] = 0  # X11 depth-24 padding
    out = resize(src, (4, 4), out_format="RGBA")
    assert (out[..., 3] == 255).all()
    np.testing.assert_array_equal(out[..., :3], area_reference(src, (0, 0, 8, 8), 4, 4)[..., 2::-1])
    rgb = src[..., :3].copy()
    np.testing.assert_array_equal(resize(rgb, (4, 4)), area_reference(rgb, (0, 0, 8, 8), 4, 4))


@pytest.mark.parametrize("out_w", range(1, 19))
@pytest.mark.parametrize("factor", [(3, 2), (2, 1), (7, 5), (1, 1)])
def test_luma_rows_every_width(out_w, factor, simd):
    # L is computed from each packed row, eight pixels a step with AVX2 then one at a time:
    # every width must give Pillow's formula on the resampled RGB.
    src = screen_like(3 * factor[0], out_w * factor[0] // factor[1] + 1, 3, seed=out_w)
    crop = (1, 0, out_w * factor[0] // factor[1], 2 * factor[0])
    out_size = (out_w, 2 * factor[1])
    grey = resize(src, out_size, crop=crop, out_format="L", src_format="RGB")
    rgb = area_reference(src, crop, *out_size)
    np.testing.assert_array_equal(grey, convert_reference(rgb, "RGB", "L"))


def test_luma_matches_pillow_convert():
    src = screen_like(60, 80, 4, seed=2)
    rgb = resize(src, (40, 30))
    grey = resize(src, (40, 30), out_format="L")
    np.testing.assert_array_equal(grey, np.asarray(Image.fromarray(rgb).convert("L")))


# -- out=, threads, views --------------------------------------------------------------------


def test_out_is_filled_in_place_including_padded_rows():
    src = screen_like(40, 60, 4)
    canvas = np.full((30, 50, 3), 7, np.uint8)
    view = canvas[5:25, 10:40]  # row stride 150 bytes for 90-byte rows
    returned = resize(src, (30, 20), out=view)
    assert returned is view
    np.testing.assert_array_equal(view, resize(src, (30, 20)))
    assert (canvas[:5] == 7).all() and (canvas[:, :10] == 7).all() and (canvas[:, 40:] == 7).all()


@pytest.mark.parametrize("method", ["area", "bilinear", "nearest"])
@pytest.mark.parametrize("out_size", [(333, 211), (266, 198), (199, 148)])  # any, 1.5x, 2x
def test_thread_count_does_not_change_the_result(method, out_size):
    src = screen_like(297, 399, 4, seed=9)
    single = resize(src, out_size, method=method, threads=1)
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(resize(src, out_size, method=method, threads=threads), single)


def test_source_views_need_no_copy():
    big = screen_like(100, 120, 4, seed=4)
    view = big[10:90, 20:100]  # padded rows
    np.testing.assert_array_equal(resize(view, (40, 40)), resize(view.copy(), (40, 40)))
    flipped = big[::-1]
    np.testing.assert_array_equal(resize(flipped, (60, 50)), resize(flipped.copy(), (60, 50)))
    broadcast = np.broadcast_to(big[:1], big.shape)  # zero row stride, read-only
    np.testing.assert_array_equal(resize(broadcast, (60, 50)), resize(broadcast.copy(), (60, 50)))


def test_largest_side_is_accepted():
    src = np.full((1, MAX_SIDE, 4), 9, np.uint8)
    out = resize(src, (MAX_SIDE, 1), method="nearest", out_format="BGRA", src_format="BGRA")
    assert (out == 9).all()
    assert resize(src, (1, 1)).tolist() == [[[9, 9, 9]]]


# -- incremental (changed_rows) --------------------------------------------------------------


@given(
    data=st.data(),
    method=st.sampled_from(["area", "bilinear", "nearest"]),
    out_size=st.sampled_from([(32, 20), (24, 15), (19, 13), (53, 31), (48, 30), (7, 3)]),
)
@SETTINGS
def test_changed_rows_give_the_full_result(data, method, out_size):
    path = data.draw(st.sampled_from([p for p in PATHS if path_available(p)]), label="path")
    crop = data.draw(st.sampled_from([None, (0, 3, 48, 24), (5, 2, 36, 27)]), label="crop")
    channels = data.draw(st.sampled_from([3, 4]), label="channels")
    src = screen_like(30, 48, channels, seed=data.draw(st.integers(0, 99), label="seed"))
    with kernel_path(path):
        out = resize(src, out_size, crop=crop, method=method)
        for _ in range(3):
            changed = data.draw(
                st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12)), max_size=3),
                label="changed (start, length)",
            )
            ranges = [(start, min(start + length, 30)) for start, length in changed]
            rng = np.random.default_rng(len(ranges))
            for start, stop in ranges:
                src[start:stop] = rng.integers(0, 256, src[start:stop].shape, dtype=np.uint8)
            resize(src, out_size, crop=crop, method=method, out=out, changed_rows=ranges)
            np.testing.assert_array_equal(out, resize(src, out_size, crop=crop, method=method))


@pytest.mark.parametrize("method", ["area", "bilinear", "nearest"])
@pytest.mark.parametrize("out_size", [(1280, 720), (960, 540), (1000, 600)])  # 1.5x, 2x, any
def test_changed_rows_touch_only_the_rows_they_reach(method, out_size):
    src = screen_like(1080, 1920, 4, seed=3)
    out = np.full((out_size[1], out_size[0], 3), 77, np.uint8)
    resize(src, out_size, method=method, out=out, changed_rows=[])
    assert (out == 77).all()  # nothing changed: nothing written
    resize(src, out_size, method=method, out=out, changed_rows=[(540, 541)])
    written = (out != 77).any(axis=(1, 2)).nonzero()[0]
    scale = 1080 / out_size[1]
    assert (method == "nearest" or len(written) > 0) and len(written) <= 3
    assert all(abs(row * scale - 540) <= 2 * scale for row in written)


# -- bad input -------------------------------------------------------------------------------

GOOD = np.zeros((10, 12, 4), np.uint8)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            (np.zeros((10, 12, 3), np.float32), (4, 4)),
            {},
            r"expected uint8 .* float32 \(10, 12, 3\)",
        ),
        ((np.zeros((10, 12), np.uint8), (4, 4)), {}, r"got uint8 \(10, 12\)"),
        ((GOOD, (4, 4)), {"changed_rows": [(0, 2)]}, "changed_rows needs out="),
        (
            (GOOD, (4, 4)),
            {"out": np.zeros((4, 4, 3), np.uint8), "changed_rows": [(3, 2)]},
            r"within 0..10 .*\(3, 2\)",
        ),
        (
            (GOOD, (4, 4)),
            {"out": np.zeros((4, 4, 3), np.uint8), "changed_rows": [(0, 11)]},
            r"within 0..10",
        ),
        (
            (GOOD, (4, 4)),
            {"out": np.zeros((4, 4, 3), np.uint8), "changed_rows": [(0.5, 2)]},
            "integer ranges",
        ),
        (
            (GOOD, (4, 4)),
            {"out": np.zeros((4, 4, 3), np.uint8), "changed_rows": 5},
            "changed_rows must be",
        ),
        (
            (GOOD, (4, 4)),
            {"out": np.zeros((4, 4, 3), np.uint8), "changed_rows": [(1, 2, 3)]},
            "changed_rows must be",
        ),
        ((np.zeros((10, 12, 2), np.uint8), (4, 4)), {}, r"got uint8 \(10, 12, 2\)"),
        ((np.zeros((0, 12, 4), np.uint8), (4, 4)), {}, "empty"),
        (([[1, 2, 3]], (4, 4)), {}, "got list"),
        ((GOOD[:, ::2], (4, 4)), {}, "C-contiguous pixels"),
        ((np.zeros((10, 12, 4, 2), np.uint8)[..., 0], (4, 4)), {}, "C-contiguous pixels"),
        ((GOOD, (0, 4)), {}, r"whole numbers in 1..16384 .*got \(0, 4\)"),
        ((GOOD, (4, -1)), {}, r"whole numbers in 1..16384 .*got \(4, -1\)"),
        ((GOOD, (16385, 4)), {}, r"whole numbers in 1..16384 .*got \(16385, 4\)"),
        ((GOOD, (4.5, 4)), {}, "4.5 is not a whole number of pixels"),
        ((GOOD, (True, 4)), {}, r"got \(True, 4\)$"),
        ((GOOD, (4, 4, 4)), {}, r"size must be a \(width, height\) pair"),
        ((GOOD, 4), {}, r"size must be a \(width, height\) pair.*got 4$"),
        ((GOOD, (4, 4)), {"crop": (0, 0, 13, 10)}, "outside the 12x10 source"),
        ((GOOD, (4, 4)), {"crop": (-1, 0, 5, 5)}, "outside"),
        ((GOOD, (4, 4)), {"crop": (0, 0, 0, 5)}, "crop width and height"),
        ((GOOD, (4, 4)), {"crop": (0, 0, 5)}, r"crop must be \(x, y, width, height\)"),
        ((GOOD, (4, 4)), {"method": "lanczos"}, "method must be one of"),
        ((GOOD, (4, 4)), {"out_format": "RGBX"}, "out_format must be one of"),
        ((GOOD, (4, 4)), {"src_format": "RGB"}, "src_format for a 4-channel image"),
        (
            (np.zeros((10, 12, 3), np.uint8), (4, 4)),
            {"src_format": "BGRA"},
            "src_format for a 3-channel image",
        ),
        ((GOOD, (4, 4)), {"out": np.zeros((4, 4, 4), np.uint8)}, r"uint8 \(4, 4, 3\)"),
        ((GOOD, (4, 4)), {"out": np.zeros((4, 4, 3), np.int16)}, r"got int16 \(4, 4, 3\)"),
        ((GOOD, (4, 4)), {"out": np.zeros((4, 4, 3), np.uint8)[::-1, ::-1]}, "C-contiguous"),
        ((GOOD, (4, 4)), {"out": "buffer"}, "got str"),
        ((GOOD, (4, 4)), {"out_format": "L", "out": np.zeros((4, 4, 1), np.uint8)}, r"\(4, 4\)"),
        ((GOOD, (4, 4)), {"threads": 0}, r"threads must be an integer in 1\.\.256.* got int 0"),
        ((GOOD, (4, 4)), {"threads": 1.5}, "threads must be an integer"),
    ],
)
def test_bad_input_names_what_was_received(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        resize(*args, **kwargs)


def test_out_must_be_writable_and_separate():
    out = np.zeros((4, 4, 3), np.uint8)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        resize(GOOD, (4, 4), out=out)
    shared = np.zeros((10, 12, 4), np.uint8)
    with pytest.raises(ValueError, match="share memory"):
        resize(shared, (4, 4), out_format="BGRA", out=shared[:4, :4])
    rows = np.zeros((4, 12), np.uint8)
    overlapping = np.lib.stride_tricks.as_strided(rows, (4, 4, 3), (3, 3, 1))
    with pytest.raises(ValueError, match="rows overlap"):
        resize(GOOD, (4, 4), out=overlapping)


def test_oversized_source_needs_a_crop():
    wide = np.broadcast_to(np.zeros((1, MAX_SIDE + 1, 4), np.uint8), (2, MAX_SIDE + 1, 4))
    with pytest.raises(ValueError, match="pass a crop"):
        resize(wide, (4, 1))
    assert resize(wide, (4, 1), crop=(1, 0, MAX_SIDE, 2)).shape == (1, 4, 3)


# -- fuzz ------------------------------------------------------------------------------------

ANYTHING = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=6),
    st.tuples(st.integers(-5, 40), st.integers(-5, 40)),
    st.tuples(*[st.integers(-5, 40)] * 4),
    st.lists(st.integers(-5, 40), max_size=5),
)


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from([np.uint8, np.uint8, np.uint8, np.int8, np.uint16, np.float32]))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=1, max_size=4)))
    a = np.random.default_rng(draw(st.integers(0, 99))).integers(0, 255, shape).astype(dtype)
    if a.ndim >= 2 and draw(st.booleans()):
        a = a[:: draw(st.sampled_from([-1, 2, -2]))]
    if a.ndim >= 2 and draw(st.booleans()):
        a = np.swapaxes(a, 0, 1)
    return a


@given(
    src=arrays(),
    size=st.one_of(ANYTHING, st.tuples(st.integers(-3, 20), st.integers(-3, 20))),
    crop=ANYTHING,
    method=st.sampled_from(["area", "bilinear", "nearest", "cubic", None]),
    out_format=st.sampled_from([*OUT_FORMATS, "rgb", None]),
    src_format=st.sampled_from([None, *SRC_FORMATS, "XYZ", 3]),
    out=st.one_of(st.none(), arrays()),
    threads=st.one_of(st.none(), st.integers(-1, 4)),
)
@settings(max_examples=300, deadline=None)
def test_fuzz_only_value_errors(src, size, crop, method, out_format, src_format, out, threads):
    try:
        result = resize(
            src,
            size,
            crop=crop,
            method=method,
            out_format=out_format,
            out=out,
            src_format=src_format,
            threads=threads,
        )
    except ValueError:
        return
    assert result.dtype == np.uint8
    assert result.shape[:2] == (size[1], size[0])
