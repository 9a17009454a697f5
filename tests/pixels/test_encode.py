"""mantis_fast.pixels.encode: every PNG decodes back to the exact pixels (through Pillow and
through zlib), banded, threaded or reused; JPEG/WebP decode close."""

from __future__ import annotations

import base64
import io
import os
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast.pixels import encode as encode_module
from mantis_fast.pixels.encode import (
    DEFLATERS,
    PNG_DEFLATE,
    PngEncoder,
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


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(kind, body) of every chunk, each CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        offset += 12 + length
    return chunks


def check_png(data: bytes, expected: np.ndarray) -> None:
    """``data`` is a PNG of exactly ``expected`` (H, W[, C]): Pillow decodes it, and its IDAT
    is one standard zlib stream (Adler-32 checked) of filter-None scanlines."""
    picture = decode(data)
    np.testing.assert_array_equal(np.asarray(picture), expected)
    chunks = png_chunks(data)
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    stream = zlib.decompressobj()
    raw = stream.decompress(chunks[1][1])
    assert stream.eof and not stream.unused_data
    rows = expected.reshape(expected.shape[0], -1)
    lines = np.concatenate([np.zeros((rows.shape[0], 1), np.uint8), rows], axis=1)
    assert raw == lines.tobytes()


def png_scanlines(data: bytes) -> tuple[bytes, bytes]:
    """A PNG's header and its inflated scanlines: what two encodings of one image share."""
    chunks = png_chunks(data)
    return chunks[0][1], zlib.decompress(chunks[1][1])


def test_png_chunks_are_well_formed():
    chunks = png_chunks(encode_png(screen(20, 30)))  # CRCs checked
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBBBBB", chunks[0][1]) == (30, 20, 8, 2, 0, 0, 0)
    raw = zlib.decompress(chunks[1][1])  # a standard zlib stream
    assert len(raw) == 20 * (1 + 30 * 3)
    assert raw[:: 1 + 30 * 3] == bytes(20)  # filter None on every line
    assert chunks[2][1] == b""


def noise(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


SHAPES = [(1, 1), (1, 300), (300, 1), (2, 3), (7, 5), (33, 17), (97, 131), (720, 129)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("channels", [0, 3, 4])
@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("band_bytes", [None, 1000])
def test_png_shapes_threads_and_layouts(shape, channels, threads, band_bytes, monkeypatch):
    if band_bytes:  # bands of a few rows: more bands than threads, the last one shorter
        monkeypatch.setattr(encode_module, "_BAND_BYTES", band_bytes)
    full = shape if channels == 0 else (*shape, channels)
    for img in (noise(full, seed=len(shape)), screen(*shape)[..., : channels or 1].copy()):
        if channels == 0:
            img = img.reshape(shape)
        expected = img if channels != 4 else img[..., 2::-1]
        check_png(encode_png(img, threads=threads), expected)


@pytest.mark.parametrize("deflate", list(DEFLATERS))
@pytest.mark.parametrize("level", [0, 1, 4, 9])
def test_png_every_deflater_banded(deflate, level, monkeypatch):
    monkeypatch.setattr(encode_module, "_BAND_BYTES", 4096)  # many bands, 13 rows each
    frame = screen(101, 100, seed=level)
    check_png(encode_png(frame, deflate=deflate, level=level, threads=2), frame[..., 2::-1])


@pytest.mark.parametrize("threads", [1, 2])
def test_png_of_views_with_any_row_stride(threads, monkeypatch):
    monkeypatch.setattr(encode_module, "_BAND_BYTES", 2048)
    frame = screen(50, 40)
    for view in (frame[::-1], frame[::2], frame[:, 3:31], frame[::-3, :17]):
        check_png(encode_png(view, threads=threads), view[..., 2::-1])
        check_png(PngEncoder(band_rows=7, threads=threads).encode(view), view[..., 2::-1])


@pytest.mark.parametrize("deflate", list(DEFLATERS))
def test_png_bytes_do_not_depend_on_threads_and_bands_cost_no_size(deflate):
    """The bands, so the bytes with a deterministic deflater, do not depend on ``threads``
    (ISA-L once encoded the same band a byte shorter: its bytes are compared decoded)."""
    frame = screen(720, 1280, seed=3)[..., :3].copy()
    banded = encode_png(frame, deflate=deflate)
    for threads in (1, 2, 3):
        same = encode_png(frame, deflate=deflate, threads=threads)
        if deflate == "isal":
            assert png_scanlines(same) == png_scanlines(banded)
        else:
            assert same == banded
    lines = np.concatenate([np.zeros((720, 1), np.uint8), frame.reshape(720, -1)], axis=1)
    one_stream = zlib.compress(lines.tobytes(), 1)
    assert len(banded) < len(one_stream) * 1.02


def test_pace_uses_the_faster_and_retries_the_other():
    pace = encode_module._Pace()
    assert pace.workers(2) == 2  # all threads measured first, then one
    pace.record(2, 2.0, 1000)
    assert pace.workers(2) == 1
    pace.record(1, 3.0, 1000)
    chosen = [pace.workers(2) for _ in range(2 * pace.RETRY)]
    assert chosen.count(1) == 2 and chosen.count(2) == 2 * pace.RETRY - 2
    pace.record(2, 60.0, 1000)  # one slow call does not flip the choice
    assert pace.cost(True) == 0.002
    pace.record(2, 6.0, 1000)  # threads stay slow (a busy core): one thread wins
    chosen = [pace.workers(2) for _ in range(pace.RETRY)]
    assert chosen.count(2) == 1 and chosen.count(1) == pace.RETRY - 1
    assert pace.workers(1) == 1


def test_default_threads_follow_the_pace(monkeypatch):
    pace = encode_module._Pace()
    monkeypatch.setattr(encode_module, "_ONE_SHOT_PACE", pace)
    monkeypatch.setattr(encode_module, "_BAND_BYTES", 4096)
    frame = screen(64, 64)
    for _ in range(3):
        check_png(encode_png(frame), frame[..., 2::-1])
    assert pace.calls == 3 and pace.cost(True) and pace.cost(False)
    small = screen(3, 3)  # one band: nothing to time
    encode_png(small)
    encode_png(frame, threads=2)  # explicit threads: not timed either
    assert pace.calls == 3


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("band_rows", [1, 5, 32, 500])
def test_png_encoder_first_frame_is_the_image(case, band_rows):
    build, src_format, mode, expected = CASES[case]
    frame = screen(45, 61, seed=band_rows)
    encoder = PngEncoder(band_rows=band_rows, threads=2)
    data = encoder.encode(build(frame), src_format=src_format)
    assert decode(data).mode == mode
    check_png(data, expected(frame))
    assert encoder.bands_deflated == -(-45 // band_rows)


def changed_frames(height: int, width: int, count: int, band_rows: int, seed: int):
    """A screen-like BGRX stream; each step repaints a few random rows (sometimes none, or
    with the same pixels) and yields (frame, the row ranges it repainted)."""
    rng = np.random.default_rng(seed)
    frame = screen(height, width, seed=seed)
    for _ in range(count):
        frame = frame.copy()
        spans = []
        for _ in range(int(rng.integers(0, 4))):
            y0 = int(rng.integers(0, height))
            y1 = int(rng.integers(y0, min(height, y0 + 2 * band_rows) + 1))
            if rng.random() < 0.8:
                x0 = int(rng.integers(0, width))
                frame[y0:y1, x0:] = rng.integers(0, 256, (y1 - y0, width - x0, 4))
            spans.append((y0, y1))
        yield frame, spans


@pytest.mark.parametrize("band_rows", [1, 7, 16, 64])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("told", [False, True])
@pytest.mark.parametrize("deflate", sorted({"zlib", PNG_DEFLATE}))
def test_png_encoder_reuses_unchanged_bands(band_rows, threads, told, deflate):
    """The reused bands give the pixels of a fresh encode, and its very bytes with zlib
    (deterministic; ISA-L once encoded the same band a byte shorter)."""
    encoder = PngEncoder(band_rows=band_rows, threads=threads, deflate=deflate)
    height = 50
    bands = -(-height // band_rows)
    for step, (frame, spans) in enumerate(changed_frames(height, 37, 12, band_rows, seed=7)):
        data = encoder.encode(frame, changed_rows=spans if told and step else None)
        check_png(data, frame[..., 2::-1])
        fresh = PngEncoder(band_rows=band_rows, threads=1, deflate=deflate).encode(frame)
        if deflate == "zlib":
            assert data == fresh
        else:
            assert png_scanlines(data) == png_scanlines(fresh)
        touched = {y // band_rows for y0, y1 in spans for y in range(y0, y1)}
        if step == 0:
            assert encoder.bands_deflated == bands
        else:
            assert encoder.bands_deflated <= len(touched)


def test_png_encoder_starts_over_on_a_new_size_or_format():
    encoder = PngEncoder(band_rows=8)
    frame = screen(40, 30)
    encoder.encode(frame)
    encoder.encode(frame)
    assert encoder.bands_deflated == 0
    check_png(encoder.encode(frame, src_format="BGRA"), frame[..., [2, 1, 0, 3]])
    assert encoder.bands_deflated == 5
    small = frame[:20, :10].copy()
    check_png(encoder.encode(small), small[..., 2::-1])
    grey = small[..., 1].copy()
    check_png(encoder.encode(grey), grey)
    encoder.reset()
    check_png(encoder.encode(grey, changed_rows=[]), grey)
    assert encoder.bands_deflated == 3


def test_png_encoder_trusts_changed_rows():
    """Rows outside ``changed_rows`` are not read: a frame that lies keeps the old band."""
    encoder = PngEncoder(band_rows=10)
    first = screen(30, 20)
    encoder.encode(first)
    second = first.copy()
    second[25] = 0  # band 2 changed, but the caller says only row 3 (band 0) did
    second[3] = 1
    data = encoder.encode(second, changed_rows=[(3, 4)])
    assert encoder.bands_deflated == 1
    expected = second.copy()
    expected[25] = first[25]
    check_png(data, expected[..., 2::-1])


def test_png_encoder_recovers_after_an_error():
    encoder = PngEncoder(band_rows=4)
    frame = screen(12, 9)
    encoder.encode(frame)
    with pytest.raises(ValueError, match="changed_rows"):
        encoder.encode(frame, changed_rows=[(0, 99)])
    changed = frame.copy()
    changed[0] = 0
    check_png(encoder.encode(changed, changed_rows=[]), changed[..., 2::-1])
    assert encoder.bands_deflated == 3  # started over: nothing was trusted


def test_png_encoder_returns_the_same_bytes_for_an_unchanged_frame():
    encoder = PngEncoder(band_rows=8)
    frame = screen(30, 20)
    first = encoder.encode(frame)
    assert encoder.encode(frame.copy()) is first
    assert encoder.bands_deflated == 0
    assert encoder.encode(frame, changed_rows=[(0, 30)]) is first


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork with threads running
def test_png_threads_work_in_a_forked_child():
    frame = screen(720, 300)
    expected = encode_png(frame, threads=2)  # the parent's helper thread exists now
    pid = os.fork()
    if pid == 0:  # the child: helper threads are started afresh, the result is the same
        ok = all(
            png_scanlines(encode_png(frame, threads=threads)) == png_scanlines(expected)
            for threads in (2, None)
        )
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@given(
    height=st.integers(1, 40),
    width=st.integers(1, 40),
    channels=st.sampled_from([0, 3, 4]),
    band_rows=st.integers(1, 17),
    threads=st.integers(1, 3),
    flat=st.booleans(),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=60, deadline=None)
def test_png_round_trips_any_shape(height, width, channels, band_rows, threads, flat, seed):
    shape = (height, width) if channels == 0 else (height, width, channels)
    img = noise(shape, seed)
    if flat:
        img //= 64  # few values: long matches, like a screen
    expected = img[..., 2::-1] if channels == 4 else img
    check_png(encode_png(img, threads=threads), expected)
    encoder = PngEncoder(band_rows=band_rows, threads=threads)
    check_png(encoder.encode(img), expected)
    img[height // 2] ^= 1
    expected = img[..., 2::-1] if channels == 4 else img
    check_png(encoder.encode(img), expected)
    assert encoder.bands_deflated == 1


@pytest.mark.parametrize("width", [1, 3, 4, 5, 6, 7, 9, 17, 64, 131])
@pytest.mark.parametrize("kind", ["BGRX_RGB", "RGBX_RGB", "BGRA_RGBA", "BGR_RGB", "COPY"])
def test_scanline_kernel_simd_and_portable_rows_agree(width, kind):
    from mantis_fast.pixels import _png

    channels = 3 if kind == "BGR_RGB" else 4
    src = noise((5, width * channels), seed=width)
    out = 3 if kind in ("BGRX_RGB", "RGBX_RGB", "BGR_RGB") else 4
    rows = {}
    for simd in (True, False):
        lines = np.full((5, 1 + width * out), 7, np.uint8)  # stale bytes must all be replaced
        assert _png.fill_rows(src, lines, getattr(_png, kind), channels, 0, 5, False, simd)
        rows[simd] = lines
    np.testing.assert_array_equal(rows[True], rows[False])
    pixels = src.reshape(5, width, channels)
    order = {"BGRX_RGB": [2, 1, 0], "RGBX_RGB": [0, 1, 2], "BGRA_RGBA": [2, 1, 0, 3]}
    order.update(BGR_RGB=[2, 1, 0], COPY=[0, 1, 2, 3])
    expected = pixels[..., order[kind]]
    np.testing.assert_array_equal(rows[True][:, 1:], expected.reshape(5, -1))
    assert not rows[True][:, 0].any()
    lines = rows[True]
    assert not _png.fill_rows(src, lines, getattr(_png, kind), channels, 0, 5, True)
    lines[3, -1] ^= 1
    assert _png.fill_rows(src, lines, getattr(_png, kind), channels, 2, 4, True)
    np.testing.assert_array_equal(lines, rows[False])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((7, 4, 0, 1), "kind 7"),
        ((0, 4, 0, 9), r"rows 0..9 of 5x12 bytes"),
        ((1, 3, 0, 1), "kind 1 with 3"),
        ((0, 4, 3, 2), "rows 3..2"),
    ],
)
def test_scanline_kernel_checks_its_arguments(args, message):
    from mantis_fast.pixels import _png

    kind, channels, y0, y1 = args
    with pytest.raises(ValueError, match=message):
        _png.fill_rows(
            np.zeros((5, 12), np.uint8), np.zeros((5, 13), np.uint8), kind, channels, y0, y1, False
        )


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


def encode_rows(changed_rows):
    """A second frame through a PngEncoder, with ``changed_rows``."""
    encoder = PngEncoder()
    encoder.encode(np.zeros((4, 4), np.uint8))
    return encoder.encode(np.zeros((4, 4), np.uint8), changed_rows=changed_rows)


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
        (lambda: encode_png(np.zeros((4, 4), np.uint8), threads=0), r"threads .* got int 0"),
        (lambda: encode_png(np.zeros((4, 4), np.uint8), threads=2.0), "threads must be"),
        (lambda: encode_png(np.zeros((4, 4), np.uint8), deflate=1), "deflate must be .* got 1"),
        (lambda: PngEncoder(band_rows=0), r"band_rows must be .* got 0"),
        (lambda: PngEncoder(level=-1), "level must be"),
        (lambda: PngEncoder(deflate="lz4"), "deflate must be .*'lz4'"),
        (lambda: PngEncoder(threads=True), "threads must be .* got bool True"),
        (lambda: PngEncoder().encode(np.zeros((4, 4, 2), np.uint8)), r"got uint8 \(4, 4, 2\)"),
        (lambda: PngEncoder().encode([[1]]), "got list"),
        (lambda: encode_rows(5), "changed_rows must be .* got int"),
        (lambda: encode_rows([(0, 5)]), r"0 <= start <= stop <= 4, got \(0, 5\)"),
        (lambda: encode_rows([(3, 2)]), r"got \(3, 2\)"),
        (lambda: encode_rows([(0, 1, 2)]), r"got \(0, 1, 2\)"),
        (lambda: encode_rows([(0.0, 1)]), r"got \(0.0, 1\)"),
        (lambda: encode_rows([3]), "got 3"),
        (
            lambda: PngEncoder().encode(np.zeros((4, 4), np.uint8), changed_rows=[(0, 5)]),
            r"stop <= 4, got \(0, 5\)",  # checked on the first frame too
        ),
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
