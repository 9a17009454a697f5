"""PNG, JPEG and WebP bytes and ``data:`` URLs from captured frames, fast.

::

    from mantis_fast.pixels.encode import PngEncoder, data_url, encode_png
    png = encode_png(frame)                      # BGRA capture -> RGB PNG, lossless
    stream = PngEncoder()                        # frame after frame: unchanged bands reused
    png = stream.encode(frame, changed_rows=[(100, 140)])
    url = data_url(small, "jpeg", quality=85)    # "data:image/jpeg;base64,..."

Inputs are uint8 arrays with contiguous pixels (row strides free): ``(H, W, 4)`` (``src_format``
``"BGRX"`` by default, giving an RGB image; ``"BGRA"``/``"RGBA"`` keep alpha where the format
has it), ``(H, W, 3)`` (``"RGB"`` by default, or ``"BGR"``) or grey ``(H, W)``. The channel
reorder runs in a kernel straight into the encoder's buffer: the PNG scanline kernel
(``_png``), or ``mantis_fast.pixels.image``'s for Pillow's JPEG and WebP.

Why these encoders (measured on a 1280x720 screen image; see the README's benchmark table):

- PNG: Pillow's default save spends most of its time choosing a filter per row and in zlib
  level 6; even ``compress_level=1`` is only about 2x faster. Screens are flat regions and
  sharp text, which deflate compresses well without filtering, so this module writes the PNG
  container itself (filter None, one IDAT) and deflates with the fastest well-kept
  implementation installed: ISA-L (``isal``), then zlib-ng (``zlib-ng``), then the standard
  library's zlib. Measured per 1280x720 frame (2.8 MB of scanlines), one core: ISA-L level 1
  2.2 ms; its level 0 saves 4% of that for 23% more bytes, its level 3 takes 12 ms for 2%
  fewer; zlib-ng level 1 4.0 ms and 12% more bytes; libdeflate level 1 7.5 ms; zlib level 1
  11.8 ms. Filter Sub saves ISA-L about 3% but costs a filter pass and 1% more bytes; Up
  costs 13% more bytes and time, so rows stay unfiltered. The ``fpng`` packages are
  unmaintained; ``imagecodecs``' libpng encoder takes about 30 ms.
- PNG, two cores: the rows are cut into bands, each deflated as its own raw stream ended by a
  sync flush, so no back-reference crosses a band and each ends on a byte boundary: the bands
  concatenate into one standard zlib stream (the Adler-32s combine arithmetically). The
  deflaters release the GIL, so Python threads deflate bands in parallel; the scanline kernel
  (``_png``) converts each band's pixels without the GIL too. Eight-odd bands balance the
  cores (a photo deflates slower than a panel) and cost no size: ISA-L restarts its window
  per band with no measurable loss. With the second core busy the threads lose to one
  (they take turns on one core), so by default both are timed and the faster used
  (``_Pace``). ``PngEncoder`` keeps each band's bytes across frames and deflates again only
  the bands that changed: an unchanged frame costs the comparison, not the deflate.
- JPEG and WebP: Pillow (libjpeg-turbo and libwebp). A dedicated JPEG binding was not faster
  at the same chroma subsampling. WebP defaults to ``method=0``, libwebp's fastest.
"""

from __future__ import annotations

import base64
import io
import os
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast._validate import integer, is_int
from mantis_fast._validate import shown as _shown
from mantis_fast._validate import threads as _threads
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _png
from mantis_fast.pixels.image import MAX_SIDE, channel_format, check_image, describe, resize
from mantis_fast.pixels.memcopy import usable_cpus

FORMATS = ("png", "jpeg", "webp")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPE = {"L": 0, "RGB": 2, "RGBA": 6}


def _isal_level(level: int) -> int:
    """zlib's 0..9 onto ISA-L's 0..3 (ISA-L 0 still compresses; 1 is the fast default)."""
    return 1 if level <= 1 else (2 if level <= 5 else 3)


def _deflaters() -> dict[str, Callable[[int], Any]]:
    """Installed deflate implementations, fastest first: name -> a factory of raw-deflate
    compress objects (``level -> obj`` with zlib's ``compress`` and ``flush``)."""
    found: dict[str, Callable[[int], Any]] = {}
    try:
        from isal import isal_zlib
    except ImportError:
        pass
    else:
        found["isal"] = lambda level: isal_zlib.compressobj(_isal_level(level), zlib.DEFLATED, -15)
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        pass
    else:
        found["zlib-ng"] = lambda level: zlib_ng.compressobj(level, zlib.DEFLATED, -15)
    found["zlib"] = lambda level: zlib.compressobj(level, zlib.DEFLATED, -15)
    return found


def _checksums() -> tuple[Callable[..., int], Callable[..., int]]:
    """The fastest installed (adler32, crc32); all share zlib's ``(data, value)`` signature."""
    try:
        from isal import isal_zlib
    except ImportError:
        pass
    else:
        return isal_zlib.adler32, isal_zlib.crc32
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        pass
    else:
        return zlib_ng.adler32, zlib_ng.crc32
    return zlib.adler32, zlib.crc32


DEFLATERS = _deflaters()
PNG_DEFLATE = next(iter(DEFLATERS))
"""The deflate implementation ``encode_png`` uses by default: "isal", "zlib-ng" or "zlib"."""
_adler32, _crc32 = _checksums()


def _mode(img: Any, src_format: str | None, keep_alpha: bool) -> tuple[str, str | None]:
    """Validate ``img``; return the output mode (L, RGB, RGBA) and the resolved src_format."""
    if isinstance(img, np.ndarray) and img.ndim == 2:
        if img.dtype != np.uint8 or img.strides[1] != 1 or 0 in img.shape:
            raise InvalidInputError(
                f"expected uint8 (H, W) grey with contiguous pixels, got {describe(img)} "
                f"with strides {img.strides!r}"
            )
        if src_format is not None:
            raise InvalidInputError(
                f"src_format {_shown(src_format)} given for a grey (H, W) image"
            )
        height, width = img.shape
        mode = "L"
    else:
        height, width, channels = check_image(img, "img")
        src_format = channel_format(src_format, channels)
        mode = "RGBA" if keep_alpha and "A" in src_format else "RGB"
    if width > MAX_SIDE or height > MAX_SIDE:
        raise InvalidInputError(f"images up to {MAX_SIDE} pixels a side, got {width}x{height}")
    return mode, src_format


def _convert_into(img: np.ndarray, mode: str, src_format: str | None, out: np.ndarray) -> None:
    """Write ``img`` as ``mode`` pixels into ``out`` (same height and width)."""
    if mode == "L":
        out[...] = img.reshape(out.shape)
    else:
        resize(img, (img.shape[1], img.shape[0]), out_format=mode, src_format=src_format, out=out)


def _pixels(img: np.ndarray, mode: str, src_format: str | None) -> np.ndarray:
    """A C-contiguous array Pillow can wrap without a copy."""
    if mode == "L" and img.flags.c_contiguous:
        return img
    out = np.empty((img.shape[0], img.shape[1], len(mode)), np.uint8)
    _convert_into(img, mode, src_format, out)
    return out


def _check_deflate(deflate: Any) -> Callable[[int], Any]:
    name = PNG_DEFLATE if deflate is None else deflate
    if not isinstance(name, str) or name not in DEFLATERS:
        raise InvalidInputError(
            f"deflate must be one of {', '.join(DEFLATERS)}, got {_shown(deflate)}"
        )
    return DEFLATERS[name]


def _check_threads(threads: Any) -> int:
    """The most workers for ``threads``: None (the automatic choice) allows every CPU, and
    ``_Pace`` then decides per call between one thread and all of them."""
    return _threads(threads) or _CPUS


_CPUS = usable_cpus()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Helper threads shared by every encode (the calling thread always works too)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(1, _CPUS - 1), thread_name_prefix="mantis-png")
        return _POOL


def _forget_pool() -> None:
    """In a forked child: the parent's helper threads do not exist there."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _run(task: Callable[[int], None], jobs: list[int], workers: int) -> None:
    """``task(j)`` for every ``j`` in ``jobs``, on this thread and up to ``workers - 1`` helper
    threads, each taking the next job when it finishes one (bands differ in cost: a photo
    deflates slower than a flat panel). The deflaters release the GIL, so bands overlap."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            task(job)
        return
    queue = jobs[::-1]  # list.pop() is atomic: threads share it without a lock

    def drain() -> None:
        while True:
            try:
                job = queue.pop()
            except IndexError:
                return
            task(job)

    helpers = [_pool().submit(drain) for _ in range(min(workers, len(jobs)) - 1)]
    try:
        drain()
    finally:
        for helper in helpers:
            if not helper.cancel():  # a helper that never started has nothing to finish
                helper.result()


class _Pace:
    """Whether helper threads pay off right now, for ``threads=None``.

    On an idle machine two threads deflate a frame in about 60% of one thread's time; when
    another process keeps the second core busy, the threads take turns on one core and the
    GIL handoffs make them slower than one thread (up to 1.5x measured). So both are timed,
    in seconds per raw byte: the median of each mode's last few calls (one slow call does
    not flip the choice) picks the faster, and the other is tried again every ``RETRY``-th
    call to notice a change of load.
    """

    RETRY = 16

    def __init__(self) -> None:
        self.samples: tuple[deque[float], deque[float]] = (deque(maxlen=5), deque(maxlen=5))
        self.calls = 0

    def cost(self, threaded: bool) -> float | None:
        recent = sorted(self.samples[threaded])
        return recent[(len(recent) - 1) // 2] if recent else None

    def workers(self, cpus: int) -> int:
        self.calls += 1
        one, many = self.cost(False), self.cost(True)
        if one is None or many is None:
            threaded = many is None
        else:
            threaded = (many <= one) != (self.calls % self.RETRY == 0)
        return cpus if threaded else 1

    def record(self, workers: int, seconds: float, nbytes: int) -> None:
        self.samples[workers > 1].append(seconds / max(1, nbytes))


_ONE_SHOT_PACE = _Pace()

# Source channel order and output mode -> the scanline kernel's conversion.
_KIND = {
    ("L", None): _png.COPY,
    ("RGB", "RGB"): _png.COPY,
    ("RGB", "BGR"): _png.BGR_RGB,
    ("RGB", "BGRX"): _png.BGRX_RGB,
    ("RGB", "BGRA"): _png.BGRX_RGB,
    ("RGB", "RGBX"): _png.RGBX_RGB,
    ("RGB", "RGBA"): _png.RGBX_RGB,
    ("RGBA", "BGRA"): _png.BGRA_RGBA,
    ("RGBA", "RGBA"): _png.COPY,
}
_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, "fastest" level hint
_LAST_BLOCK = b"\x03\x00"  # an empty final block (fixed codes): ends the deflate stream
_ADLER_BASE = 65521
_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
_BAND_BYTES = 320 * 1024  # one-shot encodes split into bands of about this many raw bytes


def _adler32_combine(first: int, second: int, length: int) -> int:
    """Adler-32 of A + B from adler32(A), adler32(B) and len(B) (zlib's adler32_combine)."""
    low = ((first & 0xFFFF) + (second & 0xFFFF) - 1) % _ADLER_BASE
    high = ((first >> 16) + (second >> 16) + length * (first & 0xFFFF) - length) % _ADLER_BASE
    return high << 16 | low


class _Frame:
    """One image's validated layout: its scanline conversion and band edges."""

    def __init__(self, img: Any, src_format: str | None) -> None:
        self.mode, self.src_format = _mode(img, src_format, keep_alpha=True)
        self.height, self.width = img.shape[:2]
        self.src_channels = 1 if img.ndim == 2 else img.shape[2]
        self.kind = _KIND[self.mode, self.src_format]
        self.row_bytes = 1 + self.width * len(self.mode)
        self.edges = [0, self.height]
        self.key: tuple[Any, ...] = ()

    def split(self, band_rows: int) -> _Frame:
        """Cut into bands of ``band_rows`` rows (the last one may be shorter)."""
        self.edges = [*range(0, self.height, band_rows), self.height]
        self.key = (self.height, self.width, self.mode, self.src_format, band_rows)
        return self


def _deflate_bands(
    img: np.ndarray,
    frame: _Frame,
    lines: np.ndarray,
    bands: list[tuple[bytes, int] | None],
    jobs: list[int],
    compare: bool,
    make_stream: Callable[[int], Any],
    level: int,
    workers: int,
    pace: _Pace | None = None,
) -> int:
    """Convert the source rows of each band in ``jobs`` into ``lines`` and deflate the band
    into ``bands[j]``; with ``compare``, only the bands whose scanlines changed are deflated.
    Returns how many bands were deflated.

    Each band is its own raw deflate stream ended by a sync flush: no back-reference crosses
    a band and every band ends on a byte boundary, so the bands concatenate into one valid
    stream in any order of computing, and a band's bytes stay valid while its pixels do."""
    src = img.reshape(frame.height, -1)
    edges = frame.edges
    kind, channels = frame.kind, frame.src_channels
    if compare:  # on this thread: a band compares in microseconds, less than a thread handoff
        jobs = [
            j
            for j in jobs
            if _png.fill_rows(src, lines, kind, channels, edges[j], edges[j + 1], True)
        ]

    def task(j: int) -> None:
        y0, y1 = edges[j], edges[j + 1]
        if not compare:
            _png.fill_rows(src, lines, kind, channels, y0, y1, False)
        data = lines[y0:y1]
        stream = make_stream(level)
        bands[j] = (stream.compress(data) + stream.flush(zlib.Z_SYNC_FLUSH), _adler32(data))

    if pace is None or len(jobs) < 2 or workers < 2:
        _run(task, jobs, workers)
    else:
        workers = pace.workers(workers)
        start = time.perf_counter()
        _run(task, jobs, workers)
        rows = sum(edges[j + 1] - edges[j] for j in jobs)
        pace.record(workers, time.perf_counter() - start, rows * frame.row_bytes)
    return len(jobs)


def _assemble(frame: _Frame, bands: list[tuple[bytes, int] | None]) -> bytes:
    """The PNG file: signature, IHDR, one IDAT holding the zlib stream of the bands, IEND."""
    adler = 1
    pieces = [b"IDAT", _ZLIB_HEADER]
    for j, band in enumerate(bands):
        assert band is not None
        pieces.append(band[0])
        rows = frame.edges[j + 1] - frame.edges[j]
        adler = _adler32_combine(adler, band[1], rows * frame.row_bytes)
    pieces += (_LAST_BLOCK, struct.pack(">I", adler))
    crc = 0
    for piece in pieces:
        crc = _crc32(piece, crc)
    header = b"IHDR" + struct.pack(
        ">IIBBBBB", frame.width, frame.height, 8, _COLOUR_TYPE[frame.mode], 0, 0, 0
    )
    return b"".join(
        (
            _PNG_SIGNATURE,
            struct.pack(">I", len(header) - 4),
            header,
            struct.pack(">I", zlib.crc32(header)),
            struct.pack(">I", sum(map(len, pieces)) - 4),
            *pieces,
            struct.pack(">I", crc),
            _IEND,
        )
    )


def encode_png(
    img: np.ndarray,
    *,
    src_format: str | None = None,
    level: int = 1,
    deflate: str | None = None,
    threads: int | None = None,
) -> bytes:
    """Lossless PNG (8-bit grey, RGB, or RGBA when ``src_format`` has alpha).

    For a stream of frames, `PngEncoder` re-deflates only the bands that changed.

    Parameters
    ----------
    img : numpy.ndarray
        A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` image with contiguous pixels
        (row strides free), at most 16384 pixels a side.
    src_format : {"BGRX", "BGRA", "RGBX", "RGBA", "RGB", "BGR"}, optional
        The channel order of ``img``. None (the default) is ``"BGRX"`` for 4 channels (an RGB
        PNG) and ``"RGB"`` for 3; ``"BGRA"``/``"RGBA"`` keep alpha (an RGBA PNG). Must be
        None for a grey image.
    level : int, default 1
        zlib's compression level, 0..9 (ISA-L maps 0-1, 2-5, 6-9 onto its 1, 2, 3).
    deflate : {"isal", "zlib-ng", "zlib"}, optional
        The deflate implementation, a key of ``DEFLATERS`` (those installed). None (the
        default) is ``PNG_DEFLATE``, the fastest installed.
    threads : int, optional
        The most threads deflating row bands in parallel, an integer in 1..256. None (the
        default) is the automatic choice, for this function a measured one: the CPUs this
        process may use, or one while helper threads are measured slower. The bands depend
        only on the image, not on ``threads`` (with zlib or zlib-ng, neither do the bytes;
        ISA-L once gave the same band a different, equally valid, encoding).

    Returns
    -------
    bytes
        The PNG file.

    Raises
    ------
    InvalidInputError
        If ``img`` or an option is not as described (the message names the value received).

    Notes
    -----
    Screens are flat regions and sharp text, which deflate compresses well without
    filtering, so rows are written unfiltered in one IDAT. The rows are cut into bands, each
    deflated as its own raw stream ended by a sync flush: the bands concatenate into one
    standard zlib stream, and Python threads deflate them in parallel (the deflaters release
    the GIL). With the second core busy the threads lose to one (they take turns on one
    core), hence the timing under ``threads=None``.
    """
    level = integer(level, "level", low=0, high=9)
    make_stream = _check_deflate(deflate)
    workers = _check_threads(threads)
    frame = _Frame(img, src_format)
    # One band per ~_BAND_BYTES: enough bands that the threads finish together (bands differ
    # in cost), few enough that the per-band Python calls stay negligible.
    count = max(1, min(frame.height, frame.height * frame.row_bytes // _BAND_BYTES))
    frame.split(-(-frame.height // count))
    lines = np.empty((frame.height, frame.row_bytes), np.uint8)
    bands: list[tuple[bytes, int] | None] = [None] * (len(frame.edges) - 1)
    jobs = list(range(len(bands)))
    pace = _ONE_SHOT_PACE if threads is None else None
    _deflate_bands(img, frame, lines, bands, jobs, False, make_stream, level, workers, pace)
    return _assemble(frame, bands)


class PngEncoder:
    """PNG encoder for a stream of same-size frames (an agent's screen, step after step).

    The image is cut into bands of ``band_rows`` rows, each deflated on its own; the encoder
    keeps every band's bytes and, for the next frame, deflates again only the bands whose
    pixels changed, found by comparing each band with the previous frame's (or only the
    bands overlapping ``changed_rows`` when the caller knows them, e.g. from X DAMAGE).
    The output is a standard PNG that decodes to the frame's pixels, byte for byte the same
    as encoding the frame from scratch with the same bands when the deflater is
    deterministic (zlib, zlib-ng; ISA-L once gave the same band a different encoding).
    A frame of another size or pixel format starts over. Not thread-safe: one encoder per
    stream.

    Parameters
    ----------
    level : int, default 1
        zlib's compression level, 0..9, as for `encode_png`.
    deflate : {"isal", "zlib-ng", "zlib"}, optional
        The deflate implementation, as for `encode_png`; None (the default) is
        ``PNG_DEFLATE``, the fastest installed.
    band_rows : int, default 32
        Rows per band, 1..16384.
    threads : int, optional
        The most threads deflating bands, 1..256, as for `encode_png`. None (the default) is
        the measured automatic choice; the encoder times its own threads.

    Raises
    ------
    InvalidInputError
        If a parameter is not as described.

    Examples
    --------
    >>> import numpy as np
    >>> stream = PngEncoder()
    >>> frame = np.zeros((720, 1280, 4), np.uint8)
    >>> png = stream.encode(frame)
    >>> frame[100:140] = 255
    >>> png = stream.encode(frame, changed_rows=[(100, 140)])
    >>> stream.bands_deflated
    2
    """

    def __init__(
        self,
        *,
        level: int = 1,
        deflate: str | None = None,
        band_rows: int = 32,
        threads: int | None = None,
    ) -> None:
        self.level = integer(level, "level", low=0, high=9)
        self._make_stream = _check_deflate(deflate)
        self.band_rows = integer(band_rows, "band_rows", low=1, high=MAX_SIDE)
        self.threads = _check_threads(threads)
        self._pace = _Pace() if threads is None else None
        self._frame: _Frame | None = None
        self._lines = np.empty((0, 0), np.uint8)
        self._bands: list[tuple[bytes, int] | None] = []
        self._png = b""  # the last output: returned again when no band changed
        self.bands_deflated = 0
        """How many bands the last ``encode`` deflated (the others were reused)."""

    def reset(self) -> None:
        """Forget the previous frame: the next ``encode`` deflates every band."""
        self._frame = None
        self._bands = []

    def encode(
        self,
        img: np.ndarray,
        *,
        src_format: str | None = None,
        changed_rows: Iterable[tuple[int, int]] | None = None,
    ) -> bytes:
        """The PNG of ``img``, reusing the bands unchanged since the previous frame.

        Parameters
        ----------
        img : numpy.ndarray
            A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` image with contiguous pixels
            (row strides free), at most 16384 pixels a side.
            A frame of another size or pixel format than the previous one starts over.
        src_format : str, optional
            The channel order of ``img``, as for `encode_png`.
        changed_rows : iterable of (int, int), optional
            ``(start, stop)`` row ranges, ``0 <= start <= stop <= H``, outside which ``img``
            is promised equal to the previous frame given to this encoder (bands outside them
            are reused unread). None (the default) compares every band.

        Returns
        -------
        bytes
            The PNG file: the frame's pixels, as if encoded from scratch with the same bands.

        Raises
        ------
        InvalidInputError
            If ``img``, ``src_format`` or ``changed_rows`` is not as described.
        """
        frame = _Frame(img, src_format).split(self.band_rows)
        previous, self._frame = self._frame, None  # an encode that raises starts over
        count = len(frame.edges) - 1
        jobs = [*range(count)] if changed_rows is None else self._dirty(frame, changed_rows)
        compare = previous is not None and previous.key == frame.key
        if not compare:
            self._lines = np.empty((frame.height, frame.row_bytes), np.uint8)
            self._bands = [None] * count
            jobs = [*range(count)]
        self.bands_deflated = _deflate_bands(
            img,
            frame,
            self._lines,
            self._bands,
            jobs,
            compare,
            self._make_stream,
            self.level,
            self.threads,
            self._pace,
        )
        if self.bands_deflated or not compare:
            self._png = _assemble(frame, self._bands)
        self._frame = frame
        return self._png

    def _dirty(self, frame: _Frame, changed_rows: Any) -> list[int]:
        """Indices of the bands that overlap the row ranges, validated."""
        try:
            ranges = list(changed_rows)
        except TypeError:
            raise InvalidInputError(
                f"changed_rows must be (start, stop) row ranges, got {describe(changed_rows)}"
            ) from None
        dirty: set[int] = set()
        for span in ranges:
            if (
                not isinstance(span, (tuple, list))
                or len(span) != 2
                or not all(map(is_int, span))
                or not 0 <= span[0] <= span[1] <= frame.height
            ):
                raise InvalidInputError(
                    f"changed_rows must be (start, stop) with 0 <= start <= stop <= "
                    f"{frame.height}, got {_shown(span)}"
                )
            if span[0] < span[1]:
                dirty.update(range(span[0] // self.band_rows, (span[1] - 1) // self.band_rows + 1))
        return sorted(dirty)


def _pillow_save(
    img: np.ndarray, mode: str, src_format: str | None, fmt: str, **params: Any
) -> bytes:
    pixels = _pixels(img, mode, src_format)
    picture = Image.frombuffer(mode, (img.shape[1], img.shape[0]), pixels, "raw", mode, 0, 1)
    buffer = io.BytesIO()
    picture.save(buffer, fmt, **params)
    return buffer.getvalue()


def encode_jpeg(img: np.ndarray, *, src_format: str | None = None, quality: int = 85) -> bytes:
    """Baseline JPEG through Pillow (libjpeg-turbo, 4:2:0 chroma); alpha, if any, is dropped.

    Parameters
    ----------
    img : numpy.ndarray
        A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` image with contiguous pixels
        (row strides free), at most 16384 pixels a side.
    src_format : str, optional
        The channel order of ``img``, as for `encode_png`.
    quality : int, default 85
        The JPEG quality, 1..100.

    Returns
    -------
    bytes
        The JPEG file.

    Raises
    ------
    InvalidInputError
        If ``img`` or an option is not as described.
    """
    mode, src_format = _mode(img, src_format, keep_alpha=False)
    quality = integer(quality, "quality", low=1, high=100)
    return _pillow_save(img, mode, src_format, "JPEG", quality=quality)


def encode_webp(
    img: np.ndarray,
    *,
    src_format: str | None = None,
    quality: int = 80,
    lossless: bool = False,
    method: int = 0,
) -> bytes:
    """WebP through Pillow (libwebp); keeps alpha if present.

    Parameters
    ----------
    img : numpy.ndarray
        A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` image with contiguous pixels
        (row strides free), at most 16384 pixels a side.
        WebP has no grey mode: grey is sent as RGB.
    src_format : str, optional
        The channel order of ``img``, as for `encode_png`; ``"BGRA"``/``"RGBA"`` keep alpha.
    quality : int, default 80
        The quality, 0..100.
    lossless : bool, default False
        Lossless output keeps every pixel exactly, colour under transparent alpha included.
    method : int, default 0
        0 (fastest, the default: libwebp's fastest) .. 6 (smallest).

    Returns
    -------
    bytes
        The WebP file.

    Raises
    ------
    InvalidInputError
        If ``img`` or an option is not as described.
    """
    mode, src_format = _mode(img, src_format, keep_alpha=True)
    quality = integer(quality, "quality", low=0, high=100)
    method = integer(method, "method", low=0, high=6)
    if not isinstance(lossless, bool):
        raise InvalidInputError(f"lossless must be True or False, got {_shown(lossless)}")
    if mode == "L":  # WebP has no grey mode: send grey as RGB
        mode = "RGB"
        img = np.repeat(img[:, :, None], 3, axis=2)
        src_format = "RGB"
    return _pillow_save(
        img,
        mode,
        src_format,
        "WEBP",
        quality=quality,
        lossless=lossless,
        method=method,
        exact=lossless,
    )


def encode(img: np.ndarray, fmt: str = "png", **options: Any) -> bytes:
    """``encode_png`` / ``encode_jpeg`` / ``encode_webp`` by name."""
    if fmt == "png":
        return encode_png(img, **options)
    if fmt == "jpeg":
        return encode_jpeg(img, **options)
    if fmt == "webp":
        return encode_webp(img, **options)
    raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}, got {_shown(fmt)}")


def data_url(img: np.ndarray, fmt: str = "png", **options: Any) -> str:
    """``data:image/<fmt>;base64,...`` of the encoded image (OpenAI-style image_url content).

    Parameters
    ----------
    img : numpy.ndarray
        A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` image with contiguous pixels
        (row strides free), at most 16384 pixels a side.
    fmt : {"png", "jpeg", "webp"}, default "png"
        The encoding: `encode_png`, `encode_jpeg` or `encode_webp`.
    **options
        Keyword arguments of that function (``src_format``, ``quality``...).

    Returns
    -------
    str
        The ``data:`` URL.

    Raises
    ------
    InvalidInputError
        If ``fmt`` is not one of those, or the encoder refuses ``img`` or an option's value.
    TypeError
        If an option is not a keyword argument of that encoder.

    Examples
    --------
    >>> import numpy as np
    >>> data_url(np.zeros((8, 8, 3), np.uint8), "jpeg", quality=85)[:23]
    'data:image/jpeg;base64,'
    """
    payload = base64.b64encode(encode(img, fmt, **options)).decode("ascii")
    return f"data:image/{fmt};base64,{payload}"
