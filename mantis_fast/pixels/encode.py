"""PNG, JPEG and WebP bytes and ``data:`` URLs from captured frames, fast.

::

    from mantis_fast.pixels.encode import data_url, encode_png
    png = encode_png(frame)                      # BGRA capture -> RGB PNG, lossless
    url = data_url(small, "jpeg", quality=85)    # "data:image/jpeg;base64,..."

Inputs are uint8 arrays with contiguous pixels (row strides free): ``(H, W, 4)`` (``src_format``
``"BGRX"`` by default, giving an RGB image; ``"BGRA"``/``"RGBA"`` keep alpha where the format
has it), ``(H, W, 3)`` (``"RGB"`` by default, or ``"BGR"``) or grey ``(H, W)``. The channel
reorder runs in ``mantis_fast.pixels.image``'s kernel straight into the encoder's buffer.

Why these encoders (measured on a 1280x720 screen image; see the README's benchmark table):

- PNG: Pillow's default save spends most of its time choosing a filter per row and in zlib
  level 6; even ``compress_level=1`` is only about 2x faster. Screens are flat regions and
  sharp text, which deflate compresses well without filtering, so this module writes the PNG
  container itself (filter None, one IDAT) and deflates with the fastest well-kept
  implementation installed: ISA-L (``isal``), then zlib-ng (``zlib-ng``), then the standard
  library's zlib. All three produce standard zlib streams; any PNG decoder reads the result,
  and it round-trips bit for bit.
- JPEG and WebP: Pillow (libjpeg-turbo and libwebp). A dedicated JPEG binding was not faster
  at the same chroma subsampling. WebP defaults to ``method=0``, libwebp's fastest.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import _shown
from mantis_fast.pixels.image import MAX_SIDE, channel_format, check_image, describe, resize

FORMATS = ("png", "jpeg", "webp")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPE = {"L": 0, "RGB": 2, "RGBA": 6}


def _isal_level(level: int) -> int:
    """zlib's 0..9 onto ISA-L's 0..3 (ISA-L 0 still compresses; 1 is the fast default)."""
    return 1 if level <= 1 else (2 if level <= 5 else 3)


def _deflaters() -> dict[str, tuple[Callable[[Any, int], bytes], Callable[[Any], int]]]:
    """Installed deflate implementations, fastest first: name -> (compress, crc32)."""
    found: dict[str, tuple[Callable[[Any, int], bytes], Callable[[Any], int]]] = {}
    try:
        from isal import isal_zlib
    except ImportError:
        pass
    else:
        found["isal"] = (
            lambda data, level: isal_zlib.compress(data, _isal_level(level)),
            isal_zlib.crc32,
        )
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        pass
    else:
        found["zlib-ng"] = (zlib_ng.compress, zlib_ng.crc32)
    found["zlib"] = (zlib.compress, zlib.crc32)
    return found


DEFLATERS = _deflaters()
PNG_DEFLATE = next(iter(DEFLATERS))
"""The deflate implementation ``encode_png`` uses by default: "isal", "zlib-ng" or "zlib"."""


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


def _chunk(kind: bytes, data: Any, crc32: Callable[[Any], int]) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc32(kind + data))


def _check_level(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or not low <= value <= high:
        raise InvalidInputError(f"{what} must be an integer in {low}..{high}, got {_shown(value)}")
    return int(value)


def encode_png(
    img: np.ndarray, *, src_format: str | None = None, level: int = 1, deflate: str | None = None
) -> bytes:
    """Lossless PNG (8-bit grey, RGB, or RGBA when ``src_format`` has alpha).

    ``level`` is zlib's 0..9 (ISA-L maps 0-1, 2-5, 6-9 onto its 1, 2, 3); ``deflate`` picks
    an implementation from ``DEFLATERS`` (default ``PNG_DEFLATE``, the fastest installed).
    """
    mode, src_format = _mode(img, src_format, keep_alpha=True)
    level = _check_level(level, "level", 0, 9)
    name = PNG_DEFLATE if deflate is None else deflate
    if name not in DEFLATERS:
        raise InvalidInputError(
            f"deflate must be one of {', '.join(DEFLATERS)}, got {_shown(deflate)}"
        )
    compress, crc32 = DEFLATERS[name]
    height, width = img.shape[:2]
    channels = len(mode)
    # Scanlines: a filter-type byte (0, None) then the row's pixels, converted in place.
    lines = np.empty((height, 1 + width * channels), np.uint8)
    lines[:, 0] = 0
    pixels = lines[:, 1:].reshape(height, width, channels)
    _convert_into(img, mode, src_format, pixels if mode != "L" else pixels[..., 0])
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[mode], 0, 0, 0)
    return b"".join(
        (
            _PNG_SIGNATURE,
            _chunk(b"IHDR", header, crc32),
            _chunk(b"IDAT", compress(memoryview(lines).cast("B"), level), crc32),
            _chunk(b"IEND", b"", crc32),
        )
    )


def _pillow_save(img: np.ndarray, mode: str, src_format: str | None, fmt: str, **params) -> bytes:
    pixels = _pixels(img, mode, src_format)
    picture = Image.frombuffer(mode, (img.shape[1], img.shape[0]), pixels, "raw", mode, 0, 1)
    buffer = io.BytesIO()
    picture.save(buffer, fmt, **params)
    return buffer.getvalue()


def encode_jpeg(img: np.ndarray, *, src_format: str | None = None, quality: int = 85) -> bytes:
    """Baseline JPEG through Pillow (4:2:0 chroma); alpha, if any, is dropped."""
    mode, src_format = _mode(img, src_format, keep_alpha=False)
    quality = _check_level(quality, "quality", 1, 100)
    return _pillow_save(img, mode, src_format, "JPEG", quality=quality)


def encode_webp(
    img: np.ndarray,
    *,
    src_format: str | None = None,
    quality: int = 80,
    lossless: bool = False,
    method: int = 0,
) -> bytes:
    """WebP through Pillow; ``method`` 0 (fastest) .. 6 (smallest); keeps alpha if present.
    Lossless output keeps every pixel exactly, colour under transparent alpha included."""
    mode, src_format = _mode(img, src_format, keep_alpha=True)
    quality = _check_level(quality, "quality", 0, 100)
    method = _check_level(method, "method", 0, 6)
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
    """``data:image/<fmt>;base64,...`` of the encoded image (OpenAI-style image_url content)."""
    payload = base64.b64encode(encode(img, fmt, **options)).decode("ascii")
    return f"data:image/{fmt};base64,{payload}"
