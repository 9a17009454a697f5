"""mantis_fast.pixels.encode: every PNG decodes back to the exact pixels; JPEG/WebP decode close."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast.pixels.encode import (
    DEFLATERS,
    PNG_DEFLATE,
    data_url,
    encode,
    encode_jpeg,
    encode_png,
    encode_webp,
)


def screen(height: int = 72, width: int = 128, seed: int = 0) -> np.ndarray:
    """BGRX frame: panels, a gradient, sharp 'text', a noisy photo-like patch."""
    rng = np.random.default_rng(seed)
    img = np.full((height, width, 4), 235, np.uint8)
    img[: height // 8] = (52, 44, 40, 0)
    img[:, : width // 5, :3] = np.linspace(30, 220, height, dtype=np.uint8)[:, None, None]
    text = rng.random((height, width)) < 0.1
    img[height // 4 :][text[height // 4 :]] = (10, 10, 10, 0)
    h4, w4 = height // 4, width // 4
    img[height - h4 :, width - w4 :] = rng.integers(0, 256, (h4, w4, 4))
    img[..., 3] = rng.integers(0, 256, (height, width))  # padding bytes are noise
    return img


def decode(data: bytes) -> Image.Image:
    picture = Image.open(io.BytesIO(data))
    picture.load()
    return picture


CASES = {
    # name: (image builder, src_format, expected mode, expected pixels)
    "bgrx": (lambda f: f, None, "RGB", lambda f: f[..., 2::-1]),
    "bgra": (lambda f: f, "BGRA", "RGBA", lambda f: f[..., [2, 1, 0, 3]]),
    "rgba": (lambda f: f, "RGBA", "RGBA", lambda f: f),
    "rgbx": (lambda f: f, "RGBX", "RGB", lambda f: f[..., :3]),
    "rgb": (lambda f: f[..., :3].copy(), None, "RGB", lambda f: f[..., :3]),
    "bgr": (lambda f: f[..., :3].copy(), "BGR", "RGB", lambda f: f[..., 2::-1]),
    "grey": (lambda f: f[..., 1].copy(), None, "L", lambda f: f[..., 1]),
    "padded": (
        lambda f: np.pad(f, ((0, 0), (0, 5), (0, 0)))[:, : f.shape[1]],
        None,
        "RGB",
        lambda f: f[..., 2::-1],
    ),
    "grey view": (lambda f: f[..., 0].copy()[::-1], None, "L", lambda f: f[::-1, :, 0]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("deflate", list(DEFLATERS))
def test_png_round_trips_losslessly(case, deflate):
    build, src_format, mode, expected = CASES[case]
    frame = screen()
    data = encode_png(build(frame), src_format=src_format, deflate=deflate)
    picture = decode(data)
    assert picture.mode == mode
    np.testing.assert_array_equal(np.asarray(picture), expected(frame))


@pytest.mark.parametrize("level", range(10))
def test_png_every_level_round_trips(level):
    frame = screen(31, 47, seed=level)
    np.testing.assert_array_equal(
        np.asarray(decode(encode_png(frame, level=level))), frame[..., 2::-1]
    )


@pytest.mark.parametrize("shape", [(1, 1, 4), (1, 300, 4), (300, 1, 3), (2, 2)])
def test_png_tiny_and_thin_images(shape):
    img = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    back = np.asarray(decode(encode_png(img)))
    expected = img if img.ndim == 2 else (img[..., 2::-1] if shape[2] == 4 else img)
    np.testing.assert_array_equal(back, expected)


def test_png_chunks_are_well_formed():
    data = encode_png(screen(20, 30))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, kinds = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        if kind == b"IHDR":
            assert struct.unpack(">IIBBBBB", body) == (30, 20, 8, 2, 0, 0, 0)
        if kind == b"IDAT":
            raw = zlib.decompress(body)  # a standard zlib stream
            assert len(raw) == 20 * (1 + 30 * 3)
            assert raw[:: 1 + 30 * 3] == bytes(20)  # filter None on every line
        offset += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


def test_default_deflate_is_the_fastest_installed():
    assert next(iter(DEFLATERS)) == PNG_DEFLATE
    assert "zlib" in DEFLATERS


def test_jpeg_is_close_and_drops_alpha():
    frame = screen(96, 160)
    picture = decode(encode_jpeg(frame, src_format="BGRA", quality=95))
    assert picture.format == "JPEG" and picture.mode == "RGB" and picture.size == (160, 96)
    error = np.abs(np.asarray(picture).astype(int) - frame[..., 2::-1]).mean()
    assert error < 6
    assert decode(encode_jpeg(frame[..., 0].copy())).mode == "L"


def test_jpeg_quality_trades_size():
    frame = screen(96, 160)
    assert len(encode_jpeg(frame, quality=30)) < len(encode_jpeg(frame, quality=95))


def test_webp_lossless_round_trips_and_lossy_is_close():
    frame = screen(64, 96)
    picture = decode(encode_webp(frame, lossless=True))
    assert picture.format == "WEBP"
    np.testing.assert_array_equal(np.asarray(picture.convert("RGB")), frame[..., 2::-1])
    with_alpha = decode(encode_webp(frame, src_format="BGRA", lossless=True))
    np.testing.assert_array_equal(np.asarray(with_alpha), frame[..., [2, 1, 0, 3]])
    lossy = np.asarray(decode(encode_webp(frame, quality=90)).convert("RGB")).astype(int)
    assert np.abs(lossy - frame[..., 2::-1]).mean() < 8
    grey = decode(encode_webp(frame[..., 0].copy(), lossless=True))
    np.testing.assert_array_equal(np.asarray(grey.convert("RGB"))[..., 0], frame[..., 0])


@pytest.mark.parametrize("fmt", ["png", "jpeg", "webp"])
def test_data_url(fmt):
    frame = screen(16, 16)
    url = data_url(frame, fmt)
    prefix = f"data:image/{fmt};base64,"
    assert url.startswith(prefix)
    payload = base64.b64decode(url[len(prefix) :], validate=True)
    assert payload == encode(frame, fmt)
    assert decode(payload).size == (16, 16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: encode_png(np.zeros((4, 4, 4), np.float32)), r"got float32 \(4, 4, 4\)"),
        (lambda: encode_png(np.zeros((4, 4), np.int16)), r"got int16 \(4, 4\)"),
        (lambda: encode_png(np.zeros((4, 8), np.uint8)[:, ::2]), "contiguous pixels"),
        (lambda: encode_png(np.zeros((0, 4), np.uint8)), r"\(0, 4\)"),
        (lambda: encode_png(np.zeros((4, 4), np.uint8), src_format="RGB"), "grey"),
        (lambda: encode_png(np.zeros((4, 4, 4), np.uint8), level=10), "level must be"),
        (lambda: encode_png(np.zeros((4, 4, 4), np.uint8), deflate="gzip"), "deflate must be"),
        (lambda: encode_png(np.zeros((1, 16385), np.uint8)), "up to 16384"),
        (lambda: encode_jpeg(np.zeros((4, 4, 3), np.uint8), quality=0), "quality must be"),
        (lambda: encode_webp(np.zeros((4, 4, 3), np.uint8), method=7), "method must be"),
        (lambda: encode_webp(np.zeros((4, 4, 3), np.uint8), lossless=1), "lossless must be"),
        (lambda: encode(np.zeros((4, 4, 3), np.uint8), "gif"), "format must be one of"),
        (lambda: data_url([[0]]), "got list"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@given(
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=4),
    dtype=st.sampled_from([np.uint8, np.uint8, np.float32, np.int64]),
    fmt=st.sampled_from(["png", "jpeg", "webp", "bmp"]),
    src_format=st.sampled_from([None, "BGRA", "RGB", "BGRX", "??"]),
    flip=st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_fuzz_only_value_errors(shape, dtype, fmt, src_format, flip):
    img = np.ones(tuple(shape), dtype)
    if flip and img.ndim >= 2:
        img = img[::-1, ::-1]
    try:
        data = encode(img, fmt, src_format=src_format)
    except ValueError:
        return
    assert decode(data).size == (img.shape[1], img.shape[0])
