"""Crop/resize/convert, encoders and frame hashing, side by side with Pillow and OpenCV.

    .venv/bin/python -m pytest benchmarks/bench_image.py --benchmark-only -p no:cacheprovider

Frames are synthetic screens (panels, gradients, sharp text, a photo-like patch) made with
numpy: no X server needed. Each mantis_fast resize records in ``extra_info`` the fraction of
the memory-bandwidth limit it reaches: bytes read + written per call divided by the rate
``np.copyto`` moves a frame, over the measured time.

The report's resize operations are the sizes models and agent tools ask for (``REPORTED``: 720p,
Qwen's 28-pixel grid, FWXGA, WXGA, XGA, a 1568 long-edge cap, 1024x576), each on one thread
against Pillow BOX and single-thread OpenCV INTER_AREA (1080p->1280x720 also against the copy
of the frame), and 1080p->1316x728 from an RGB array (``RGB_REPORTED``); its PNG operation is
the default deflate against Pillow's defaults (``report_as``).
"""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from PIL import Image

from mantis_fast import encode_jpeg, encode_png, frame_hash, qwen_size, resize
from mantis_fast.pixels import changed_bbox
from mantis_fast.pixels.encode import DEFLATERS, PNG_DEFLATE, PngEncoder


def screen_frame(height: int, width: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frame = np.empty((height, width, 4), np.uint8)
    frame[:] = (243, 240, 238, 0)
    frame[: height // 20] = (48, 42, 40, 0)  # title bar
    frame[:, : width // 6, :3] = np.linspace(40, 90, height, dtype=np.uint8)[:, None, None]
    text = rng.random((height, width)) < 0.12  # glyph-like speckle in lines
    lines = (np.arange(height) // 9) % 3 != 2
    frame[(text & lines[:, None]) & (np.arange(width) > width // 6)] = (20, 20, 20, 0)
    ph, pw = height // 3, width // 4
    frame[-ph:, -pw:, :3] = rng.integers(0, 256, (ph, pw, 3))  # photo-like patch
    frame[height // 2 : height // 2 + 40, width // 3 :] = np.linspace(
        0, 255, width - width // 3, dtype=np.uint8
    )[None, :, None]
    return frame


FRAMES = {
    "1080p": screen_frame(1080, 1920),
    "4K": screen_frame(2160, 3840),
    "1920x1200": screen_frame(1200, 1920),
    "1600x1200": screen_frame(1200, 1600),
    "1440p": screen_frame(1440, 2560),
}
# The report's resize operations: the sizes models and agent tools ask for (each its own
# operation, Pillow BOX and single-thread OpenCV INTER_AREA beside mantis_fast on one thread).
REPORTED = {
    "1080p->1280x720": ("1080p", (1280, 720)),
    "1080p->1316x728 (qwen_size)": ("1080p", qwen_size((1920, 1080), max_pixels=1280 * 784)),
    "1080p->1366x768 (FWXGA)": ("1080p", (1366, 768)),
    "1920x1200->1280x800 (WXGA)": ("1920x1200", (1280, 800)),
    "1600x1200->1024x768 (XGA)": ("1600x1200", (1024, 768)),
    "1440p->1568x882 (long edge 1568)": ("1440p", (1568, 882)),
    "1080p->1024x576": ("1080p", (1024, 576)),
}
CASES = {
    **REPORTED,
    "4K->1280x720": ("4K", (1280, 720)),
    "1080p->2x(960x540)": ("1080p", (960, 540)),
}


def report_operation(case: str) -> str | None:
    """The report's operation for a case (``None``: the case is only in the groups)."""
    return f"resize {case.replace('->', ' -> ')}, BGRX -> RGB" if case in REPORTED else None


@pytest.fixture(scope="module")
def copy_rate() -> dict[str, float]:
    """Bytes per second np.copyto moves (read + write) for each frame: the bandwidth limit
    under the same conditions as the resizes (the same frame, read over and over)."""
    rates = {}
    for name, src in FRAMES.items():
        dst = np.empty_like(src)
        times = []
        for _ in range(30):
            start = time.perf_counter()
            np.copyto(dst, src)
            times.append(time.perf_counter() - start)
        rates[name] = 2 * src.nbytes / float(np.median(times))
    return rates


def _record_bandwidth(benchmark, copy_rate: float, bytes_moved: int) -> None:
    if benchmark.stats is None:  # benchmarks disabled: the call ran once, untimed
        return
    median = benchmark.stats.stats.median
    benchmark.extra_info["bytes_moved"] = bytes_moved
    benchmark.extra_info["bandwidth_fraction"] = round(bytes_moved / median / copy_rate, 3)


# -- resize ----------------------------------------------------------------------------------


def _resize_case(benchmark, case: str):
    frame_name, size = CASES[case]
    benchmark.group = f"resize {case}"
    return FRAMES[frame_name], size


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_mantis_area(benchmark, report_as, paired_copy, case, threads, copy_rate):
    frame, size = _resize_case(benchmark, case)
    out = np.empty((size[1], size[0], 3), np.uint8)
    operation = report_operation(case)
    if operation and threads == 1:
        label = "mantis_fast resize (area, 1 thread)"
        report_as(operation, "subject", label, bytes_moved=frame.nbytes + out.nbytes)
        setup = paired_copy(np.empty_like(frame), frame)  # the memcpy share's yardstick
        kwargs = {"out": out, "threads": threads}
        benchmark.pedantic(resize, (frame, size), kwargs, setup=setup, rounds=200, warmup_rounds=5)
    else:
        benchmark(resize, frame, size, out=out, threads=threads)
    _record_bandwidth(benchmark, copy_rate[CASES[case][0]], frame.nbytes + out.nbytes)


@pytest.mark.parametrize("case", list(CASES))
def test_mantis_bilinear(benchmark, case):
    frame, size = _resize_case(benchmark, case)
    out = np.empty((size[1], size[0], 3), np.uint8)
    benchmark(resize, frame, size, out=out, method="bilinear")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("resample", ["BOX", "BILINEAR"])
def test_pillow(benchmark, report_as, case, resample):
    frame, size = _resize_case(benchmark, case)
    operation = report_operation(case)
    if operation and resample == "BOX":
        report_as(operation, "peer", "Pillow frombuffer BGRX + resize BOX", package="Pillow")
    height, width = frame.shape[:2]
    method = getattr(Image.Resampling, resample)

    def pillow():
        return Image.frombuffer("RGB", (width, height), frame, "raw", "BGRX", 0, 1).resize(
            size, method
        )

    benchmark(pillow)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", ["1 thread", "default threads"])
def test_opencv_area(benchmark, report_as, case, threads):
    frame, size = _resize_case(benchmark, case)
    operation = report_operation(case)
    if operation and threads == "1 thread":
        label = "OpenCV INTER_AREA + cvtColor (1 thread)"
        report_as(operation, "peer", label, package="OpenCV")
    cv2 = pytest.importorskip("cv2")  # after the tag: a missing OpenCV is reported skipped

    def opencv():
        return cv2.cvtColor(
            cv2.resize(frame, size, interpolation=cv2.INTER_AREA), cv2.COLOR_BGRA2RGB
        )

    previous = cv2.getNumThreads()
    if threads == "1 thread":
        cv2.setNumThreads(1)
    try:
        benchmark(opencv)
    finally:
        cv2.setNumThreads(previous)


# 3-channel sources (an RGB array from Pillow, a decoded PNG, mss's .rgb): the same sizes.
RGB_CASES = ["1080p->1280x720", "1080p->1316x728 (qwen_size)", "1080p->1024x576"]
RGB_REPORTED = "1080p->1316x728 (qwen_size)"  # the report's RGB-source operation


def rgb_report_operation(case: str, out_format: str = "RGB") -> str | None:
    if case != RGB_REPORTED or out_format != "RGB":
        return None
    return f"resize {case.replace('->', ' -> ')}, RGB -> RGB"


def _rgb_case(benchmark, case: str):
    frame_name, size = CASES[case]
    benchmark.group = f"resize {case}, RGB source"
    return np.ascontiguousarray(FRAMES[frame_name][..., 2::-1]), size


@pytest.mark.parametrize("case", RGB_CASES)
@pytest.mark.parametrize("out_format", ["RGB", "L"])
def test_mantis_area_rgb_source(benchmark, report_as, case, out_format):
    frame, size = _rgb_case(benchmark, case)
    operation = rgb_report_operation(case, out_format)
    if operation:
        report_as(operation, "subject", "mantis_fast resize (area, 1 thread)")
    benchmark(resize, frame, size, out_format=out_format, threads=1)


@pytest.mark.parametrize("case", RGB_CASES)
@pytest.mark.parametrize("out_format", ["RGB", "L"])
def test_pillow_rgb_source(benchmark, report_as, case, out_format):
    frame, size = _rgb_case(benchmark, case)
    operation = rgb_report_operation(case, out_format)
    if operation:
        report_as(operation, "peer", "Pillow fromarray + resize BOX", package="Pillow")
    image = Image.fromarray(frame)

    def pillow():
        small = image.resize(size, Image.Resampling.BOX)
        return small.convert("L") if out_format == "L" else small

    benchmark(pillow)


@pytest.mark.parametrize("case", RGB_CASES)
@pytest.mark.parametrize("threads", ["1 thread", "default threads"])
def test_opencv_area_rgb_source(benchmark, report_as, case, threads):
    frame, size = _rgb_case(benchmark, case)
    operation = rgb_report_operation(case)
    if operation and threads == "1 thread":
        report_as(operation, "peer", "OpenCV INTER_AREA (1 thread)", package="OpenCV")
    cv2 = pytest.importorskip("cv2")  # after the tag: a missing OpenCV is reported skipped
    previous = cv2.getNumThreads()
    if threads == "1 thread":
        cv2.setNumThreads(1)
    try:
        benchmark(cv2.resize, frame, size, interpolation=cv2.INTER_AREA)
    finally:
        cv2.setNumThreads(previous)


def test_copy_reference(benchmark, report_as):
    """np.copyto of the 1080p frame: the floor any full read of it can reach."""
    benchmark.group = "resize 1080p->1280x720"
    frame = FRAMES["1080p"]
    label = "np.copyto of the frame (memcpy)"
    report_as(report_operation("1080p->1280x720"), "reference", label, bytes_moved=2 * frame.nbytes)
    dst = np.empty_like(frame)
    benchmark(np.copyto, dst, frame)


# -- encoders --------------------------------------------------------------------------------

SCREEN_720P = screen_frame(720, 1280, seed=1)
PNG = "PNG encode, 1280x720 screen"


@pytest.mark.parametrize("deflate", list(DEFLATERS))
def test_mantis_png(benchmark, report_as, deflate):
    benchmark.group = "encode PNG 1280x720"
    if deflate == PNG_DEFLATE:
        report_as(PNG, "subject", f"mantis_fast encode_png ({deflate})")
    data = benchmark(encode_png, SCREEN_720P, deflate=deflate)
    benchmark.extra_info["bytes"] = len(data)


def test_mantis_png_one_thread(benchmark):
    """The default deflate on one thread: one band, no helper (the floor on a busy machine)."""
    benchmark.group = "encode PNG 1280x720"
    benchmark.extra_info["bytes"] = len(benchmark(encode_png, SCREEN_720P, threads=1))


@pytest.mark.parametrize("change", ["unchanged", "40 rows changed"])
def test_mantis_png_encoder(benchmark, change):
    """PngEncoder on the next frame of a stream: only the bands that changed are deflated
    (found by comparing, as without X DAMAGE rectangles)."""
    benchmark.group = "encode PNG 1280x720, next frame (PngEncoder)"
    encoder = PngEncoder()
    frames = [SCREEN_720P, SCREEN_720P.copy()]
    if change != "unchanged":
        frames[1][300:340, 200:900] = 255 - frames[1][300:340, 200:900]  # a repainted widget
    encoder.encode(frames[0])
    step = iter(range(10**9))

    def next_frame():
        return encoder.encode(frames[next(step) % 2])

    benchmark.extra_info["bytes"] = len(benchmark(next_frame))
    benchmark.extra_info["bands_deflated"] = encoder.bands_deflated


@pytest.mark.parametrize("compress_level", [None, 1])
def test_pillow_png(benchmark, report_as, compress_level):
    benchmark.group = "encode PNG 1280x720"
    if compress_level is None:
        report_as(PNG, "peer", "Pillow save PNG (defaults)", package="Pillow")
    options = {} if compress_level is None else {"compress_level": compress_level}

    def pillow():
        buffer = io.BytesIO()
        Image.frombuffer("RGB", (1280, 720), SCREEN_720P, "raw", "BGRX", 0, 1).save(
            buffer, "PNG", **options
        )
        return buffer.getvalue()

    benchmark.extra_info["bytes"] = len(benchmark(pillow))


def test_mantis_jpeg(benchmark):
    benchmark.group = "encode JPEG 1280x720"
    benchmark.extra_info["bytes"] = len(benchmark(encode_jpeg, SCREEN_720P, quality=75))


def test_pillow_jpeg(benchmark):
    benchmark.group = "encode JPEG 1280x720"

    def pillow():
        buffer = io.BytesIO()
        Image.frombuffer("RGB", (1280, 720), SCREEN_720P, "raw", "BGRX", 0, 1).save(buffer, "JPEG")
        return buffer.getvalue()

    benchmark.extra_info["bytes"] = len(benchmark(pillow))


# -- frame hash and diff ---------------------------------------------------------------------


def test_frame_hash(benchmark):
    benchmark.group = "frame hash 1080p"
    benchmark(frame_hash, FRAMES["1080p"])


def test_numpy_grey_thumbnail(benchmark):
    """The obvious numpy way to the same 9x8 grey thumbnail: full-size float grey, then means."""
    benchmark.group = "frame hash 1080p"
    frame = FRAMES["1080p"]

    def numpy_thumbnail():
        grey = frame[..., 2] * 0.299 + frame[..., 1] * 0.587 + frame[..., 0] * 0.114
        return grey[:1080, :1917].reshape(8, 135, 9, 213).mean(axis=(1, 3))

    benchmark(numpy_thumbnail)


def test_changed_bbox_one_pixel(benchmark):
    benchmark.group = "changed bbox 1080p, one pixel changed"
    a = FRAMES["1080p"]
    b = a.copy()
    b[540, 960, 1] ^= 1
    assert benchmark(changed_bbox, a, b) == (960, 540, 1, 1)


def test_numpy_changed_bbox_one_pixel(benchmark):
    benchmark.group = "changed bbox 1080p, one pixel changed"
    a = FRAMES["1080p"]
    b = a.copy()
    b[540, 960, 1] ^= 1

    def numpy_bbox():
        ys, xs = np.nonzero((a != b).any(axis=2))
        return int(xs.min()), int(ys.min()), int(np.ptp(xs)) + 1, int(np.ptp(ys)) + 1

    assert benchmark(numpy_bbox) == (960, 540, 1, 1)


def test_phash_64(benchmark):
    """Upstream Mantis's state-loop hash, byte-compatible, from the BGRX capture."""
    from mantis_fast.pixels import phash_64

    benchmark.group = "frame hash 1080p"
    benchmark(phash_64, FRAMES["1080p"])


def test_pillow_phash_64(benchmark):
    """The same hash the way upstream computes it: RGB image, convert("L"), resize((9, 8))."""
    benchmark.group = "frame hash 1080p"
    frame = FRAMES["1080p"]

    def pillow():
        small = Image.fromarray(frame[..., 2::-1]).convert("L").resize((9, 8))
        pixels = np.asarray(small).ravel().tolist()
        bits = sum(1 << (r * 8 + c) for r in range(8) for c in range(8)
                   if pixels[r * 9 + c] > pixels[r * 9 + c + 1])  # fmt: skip
        return f"{bits:016x}{min(sum(pixels) // 72 // 16, 15):x}"

    from mantis_fast.pixels import phash_64

    assert benchmark(pillow) == phash_64(frame)
