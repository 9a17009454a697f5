"""phash_64 against upstream Mantis's definition, written plainly with Pillow."""

from __future__ import annotations

import numpy as np
import PIL
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast import Capture, InvalidInputError
from mantis_fast.pixels import _phash, frames, phash_64
from tests.support.tk_app import Recorder
from tests.support.xpaint import draw_text, paint_root, test_pattern

SETTINGS = settings(max_examples=150, deadline=None)
# The kernel's pass order for the Pillow installed here (the suite runs on Pillow 10 to 13).
PASS_ORDER = frames._pillow_pass_order()
BGRX_TO_RGB = np.s_[..., 2::-1]


def reference(img: Image.Image) -> str:
    """Upstream's phash_64: grey 9x8 thumbnail (Pillow's default BICUBIC), one bit per
    left-brighter-than-right pair from the least significant, then the brightness bucket."""
    pixels = np.asarray(img.convert("L").resize((9, 8))).ravel().tolist()
    bits = 0
    for row in range(8):
        for col in range(8):
            if pixels[row * 9 + col] > pixels[row * 9 + col + 1]:
                bits |= 1 << (row * 8 + col)
    bucket = min(sum(pixels) // len(pixels) // 16, 15)
    return f"{bits:016x}{bucket:x}"


def reference_rgb(rgb: np.ndarray) -> str:
    return reference(Image.fromarray(np.ascontiguousarray(rgb)))


def reference_thumbnail(rgb: np.ndarray) -> np.ndarray:
    return np.asarray(Image.fromarray(np.ascontiguousarray(rgb)).convert("L").resize((9, 8)))


def screen_like(height: int, width: int, seed: int = 0) -> np.ndarray:
    """BGRX: title bar, a gradient side panel, text-like speckle in lines, a photo patch."""
    rng = np.random.default_rng(seed)
    frame = np.empty((height, width, 4), np.uint8)
    frame[:] = (243, 240, 238, 0)
    frame[: max(1, height // 20)] = (48, 42, 40, 0)
    frame[:, : width // 6, :3] = np.linspace(40, 90, height, dtype=np.uint8)[:, None, None]
    text = rng.random((height, width)) < 0.12
    lines = (np.arange(height) // 9) % 3 != 2
    frame[(text & lines[:, None]) & (np.arange(width) > width // 6)] = (20, 20, 20, 0)
    ph, pw = height // 3, width // 4
    frame[height - ph :, width - pw :, :3] = rng.integers(0, 256, (ph, pw, 3))
    frame[height // 2 : height // 2 + 40, width // 3 :] = np.linspace(
        0, 255, width - width // 3, dtype=np.uint8
    )[None, :, None]
    return frame


def noise(height: int, width: int, channels: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


# Every kind of geometry: tiny (upscaling one or both axes), exactly 9 wide or 8 high (a pass
# skipped), odd, tall (vertical pass first in Pillow 13), wide strips, screens.
SIZES = [
    (1, 1), (2, 3), (3, 2), (8, 9), (9, 8), (8, 8), (9, 9), (7, 13), (13, 7), (8, 1000),
    (1000, 9), (17, 5), (100, 7), (31, 33), (61, 17), (240, 320), (599, 801), (1080, 1920),
    (1920, 1080), (1200, 1600), (2160, 64), (64, 3840), (2160, 3840),
]  # fmt: skip


# -- the thumbnail and the hash match Pillow -------------------------------------------------


@pytest.mark.parametrize(("height", "width"), SIZES)
def test_noise_and_screens_match_upstream(height: int, width: int) -> None:
    for seed, frame in enumerate((noise(height, width), screen_like(height, width, seed=1))):
        rgb = frame[BGRX_TO_RGB]
        thumb = _phash.thumbnail(frame.reshape(height, -1), 4, 2, 1, 0, PASS_ORDER)
        np.testing.assert_array_equal(thumb, reference_thumbnail(rgb), err_msg=f"seed {seed}")
        assert phash_64(frame) == reference_rgb(rgb)


def test_twenty_five_random_images_match() -> None:
    rng = np.random.default_rng(2026)
    for seed in range(25):
        height, width = (int(v) for v in rng.integers(1, 700, 2))
        if seed % 2:
            rgb = noise(height, width, 3, seed)
        else:
            rgb = np.ascontiguousarray(screen_like(height, width, seed)[..., :3])
        assert phash_64(rgb) == reference_rgb(rgb), (height, width, seed)


@SETTINGS
@given(
    height=st.integers(1, 300),
    width=st.integers(1, 300),
    channels=st.sampled_from([1, 3, 4]),
    kind=st.sampled_from(["noise", "screen", "flat", "gradient"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_hypothesis_images_match(height, width, channels, kind, seed) -> None:
    rng = np.random.default_rng(seed)
    if kind == "noise":
        frame = noise(height, width, 4, seed)
    elif kind == "screen":
        frame = screen_like(height, width, seed)
    elif kind == "flat":  # near-equal neighbours: ties and one-unit rounding decide the bits
        frame = np.full((height, width, 4), rng.integers(0, 256, 4), np.uint8)
        frame[rng.random((height, width)) < 0.02] += 1
    else:
        frame = np.zeros((height, width, 4), np.uint8)
        frame[..., :3] = np.linspace(0, 255, width, dtype=np.uint8)[None, :, None]
        frame[..., 1] = np.linspace(255, 0, height, dtype=np.uint8)[:, None]
    rgb = frame[BGRX_TO_RGB]
    if channels == 4:
        assert phash_64(frame) == reference_rgb(rgb)
    elif channels == 3:
        assert phash_64(np.ascontiguousarray(rgb)) == reference_rgb(rgb)
    else:
        grey = np.ascontiguousarray(frame[..., 1])
        assert phash_64(grey) == reference(Image.fromarray(grey))


@settings(max_examples=60, deadline=None)
@given(
    height=st.integers(9, 3000),
    slack=st.integers(-3, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_pass_order_boundary(height, slack, seed) -> None:
    # Pillow 13 resamples vertically first when H - 8 > 2 * (W - 9): probe the edge of that
    # (Pillow 10 to 12 always horizontally first).
    width = max(1, (height - 8) // 2 + 9 + slack)
    grey = np.random.default_rng(seed).integers(0, 256, (height, width), np.uint8)
    assert phash_64(grey) == reference(Image.fromarray(grey))
    np.testing.assert_array_equal(
        _phash.thumbnail(grey, 1, 0, 0, 0, PASS_ORDER),
        np.asarray(Image.fromarray(grey).resize((9, 8))),
    )


@pytest.mark.parametrize("src_format", ["BGRX", "BGRA", "RGBX", "RGBA"])
def test_four_channel_orders(src_format: str) -> None:
    frame = noise(123, 457, 4, seed=3)
    frame[..., 3] = np.random.default_rng(4).integers(0, 256, frame.shape[:2])  # never matters
    rgb = frame[..., 2::-1] if src_format.startswith("B") else frame[..., :3]
    assert phash_64(frame, src_format=src_format) == reference_rgb(rgb)
    assert phash_64(frame, src_format=src_format.lower()) == reference_rgb(rgb)


def test_bgr_and_default_rgb() -> None:
    rgb = screen_like(300, 500, seed=5)[..., :3].copy()
    assert phash_64(rgb) == phash_64(rgb, "RGB") == reference_rgb(rgb)
    assert phash_64(np.ascontiguousarray(rgb[..., ::-1]), src_format="BGR") == reference_rgb(rgb)


def test_crops_with_row_strides_and_flips() -> None:
    frame = screen_like(1080, 1920, seed=6)
    for crop in (
        frame[100:900, 333:1401],
        frame[::-1, 7:800],  # negative row stride
        frame[::3, 1:],  # every third row
        frame[5:6, 9:18],
    ):
        assert phash_64(crop) == reference_rgb(crop[BGRX_TO_RGB])
    grey = np.ascontiguousarray(frame[..., 0])[17:1000, 3:1917]
    assert phash_64(grey) == reference(Image.fromarray(np.ascontiguousarray(grey)))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "RGBX", "L", "P", "1", "LA", "I", "CMYK"])
def test_pil_images_of_every_mode(mode: str) -> None:
    base = Image.fromarray(np.ascontiguousarray(screen_like(201, 333, seed=7)[BGRX_TO_RGB]))
    img = base.convert(mode)
    assert phash_64(img) == reference(img)


def test_flat_images_differ_only_in_the_bucket() -> None:
    for value in (0, 15, 16, 128, 255):
        grey = np.full((50, 70), value, np.uint8)
        assert phash_64(grey) == "0" * 16 + f"{min(value // 16, 15):x}"
        assert phash_64(grey) == reference(Image.fromarray(grey))


# -- the installed Pillow's generation ---------------------------------------------------------


def test_the_installed_pillows_generation_is_recognised() -> None:
    # Pillow 13 chose the first pass by the shape; 10, 11 and 12 always ran the horizontal one
    # first (make test-range runs this file on each).
    expected = 0 if int(PIL.__version__.split(".")[0]) >= 13 else 1
    assert expected == PASS_ORDER, PIL.__version__
    tall = noise(100, 7, 3, seed=5)  # a geometry where the two orders give different bits
    flat = tall.reshape(100, -1)
    assert not np.array_equal(
        _phash.thumbnail(flat, 3, 0, 1, 2, 0), _phash.thumbnail(flat, 3, 0, 1, 2, 1)
    )
    np.testing.assert_array_equal(
        _phash.thumbnail(flat, 3, 0, 1, 2, PASS_ORDER), reference_thumbnail(tall)
    )


def test_an_unknown_pillow_is_asked_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Pillow whose resize the kernel does not reproduce (here: bilinear by default): the
    # probe finds no matching variant and every hash is computed through that Pillow.
    resize = Image.Image.resize

    def bilinear_resize(self: Image.Image, size, resample=None, *args, **kwargs):
        return resize(self, size, Image.Resampling.BILINEAR if resample is None else resample)

    monkeypatch.setattr(Image.Image, "resize", bilinear_resize)
    monkeypatch.setattr(frames, "_pass_order", frames._UNPROBED)
    assert frames._pillow_pass_order() is None
    for height, width in [(1080, 1920), (100, 7), (5, 3)]:
        frame = screen_like(height, width, seed=2)
        rgb = frame[BGRX_TO_RGB]
        assert reference_rgb(rgb) != _phash.phash_64(frame.reshape(height, -1), 4, 2, 1, 0)
        assert phash_64(frame) == reference_rgb(rgb)
        assert phash_64(np.ascontiguousarray(rgb)) == reference_rgb(rgb)
        grey = np.ascontiguousarray(rgb[..., 0])
        assert phash_64(grey) == reference(Image.fromarray(grey))
        assert phash_64(Image.fromarray(np.ascontiguousarray(rgb))) == reference_rgb(rgb)


def test_is_not_frame_hash() -> None:
    # Same length, different definition (bit order, cells, grey weights).
    from mantis_fast import frame_hash

    frame = screen_like(480, 640, seed=8)
    assert len(phash_64(frame)) == len(frame_hash(frame)) == 17
    assert phash_64(frame) != frame_hash(frame)


# -- real screens ----------------------------------------------------------------------------


def test_real_xvfb_screens(xvfb) -> None:
    with Capture(xvfb.display) as cap:
        seen = set()
        paint_root(xvfb.display, test_pattern(1920, 1080, seed=11))
        for line in range(40):
            draw_text(xvfb.display, 40 + 11 * line, 30 + 24 * line, f"line {line}: phash_64 text")
        frames = [cap.grab(copy=True)]
        paint_root(xvfb.display, screen_like(1080, 1920, seed=12))
        frames.append(cap.grab(copy=True))
        with Recorder(xvfb.env()):  # a Tk window over the whole screen, once it is drawn
            assert cap.wait_until_stable(timeout=10.0, quiet_ms=150).stable
            frames.append(cap.grab(copy=True))
            frames.append(cap.grab(region=(200, 150, 801, 533), copy=True))
        for frame in frames:
            want = reference_rgb(frame[BGRX_TO_RGB])
            assert phash_64(frame) == want
            assert phash_64(cap.grab()) == phash_64(cap.grab(copy=True))  # zero-copy view
            seen.add(want)
    assert len(seen) >= 3  # the two painted screens and the Tk window differ


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "kwargs", "match"),
    [
        ([[1, 2]], {}, "expected a PIL.Image or a uint8 .* got list"),
        (None, {}, "got NoneType"),
        (np.zeros((4, 4, 3), np.float32), {}, "float32 \\(4, 4, 3\\)"),
        (np.zeros((4, 4, 2), np.uint8), {}, "uint8 \\(4, 4, 2\\)"),
        (np.zeros((4, 4, 4, 1), np.uint8), {}, "uint8 \\(4, 4, 4, 1\\)"),
        (np.zeros((0, 4, 3), np.uint8), {}, "empty"),
        (np.zeros((4, 8, 3), np.uint8)[:, ::2], {}, "C-contiguous pixels"),
        (np.zeros((4, 4, 3), np.uint8), {"src_format": "BGRX"}, "RGB, BGR, got 'BGRX'"),
        (np.zeros((4, 4, 4), np.uint8), {"src_format": "RGB"}, "BGRX, BGRA, RGBX, RGBA"),
        (Image.new("RGB", (4, 4)), {"src_format": "RGB"}, "src_format is for arrays"),
    ],
)
def test_bad_input_is_named(image, kwargs, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        phash_64(image, **kwargs)
