"""``mss.tools``: ``to_png`` on mantis_fast's PNG writer, and ``parse_edid``."""

from __future__ import annotations

import os
import struct
from numbers import Integral
from pathlib import Path

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.encode import encode_png

__all__ = ["parse_edid", "to_png"]


def to_png(
    data: bytes, size: tuple[int, int], /, *, level: int = 6, output: Path | str | None = None
) -> bytes | None:
    """RGB bytes -> a PNG: its bytes when ``output`` is None, else written (and fsynced) there.

    ``level`` is zlib's, 0..9 (or -1, zlib's default); the deflate is the fastest installed
    (see ``mantis_fast.pixels.encode``), so files are smaller or larger than mss's by a little,
    and decode to the same pixels.
    """
    if isinstance(level, bool) or not isinstance(level, Integral) or not -1 <= level <= 9:
        raise InvalidInputError(f"Bad compression level: {level!r} (zlib's are 0..9, or -1)")
    width, height = size
    if len(data) != width * height * 3:
        raise InvalidInputError(
            f"to_png got {len(data)} bytes for a {width}x{height} RGB image "
            f"(needs {width * height * 3})"
        )
    pixels = np.frombuffer(data, np.uint8).reshape(height, width, 3)
    png = encode_png(pixels, src_format="RGB", level=6 if level == -1 else int(level))
    if not output:
        return png
    with open(output, "wb") as file:
        file.write(png)
        file.flush()
        os.fsync(file.fileno())
    return None


_EDID_HEADER = b"\x00\xff\xff\xff\xff\xff\xff\x00"
_EDID_BLOCK = 128
_DESCRIPTORS = (0x48, 0x5A, 0x6C)  # the three display descriptors of the base block
_TAG_SERIAL, _TAG_NAME = 0xFF, 0xFC


def _descriptor_text(descriptor: bytes) -> str:
    # ASCII, ended by 0x0A and padded with spaces (some monitors skip the 0x0A).
    text = descriptor[5:18].partition(b"\n")[0].rstrip(b" ")
    return text.decode("ascii", errors="replace")


def parse_edid(edid_data: bytes) -> dict:
    """A monitor's identity from its EDID base block; ``{}`` when the block is not valid EDID.

    Keys, each present only when the block defines it: ``id_legacy`` (manufacturer PnP id and
    product code, e.g. ``"DEL40F5"``), ``serial_number`` (the descriptor string if any, else the
    32-bit number), ``manufacture_week``, ``manufacture_year`` or ``model_year``,
    ``display_name``.
    """
    block = bytes(edid_data[:_EDID_BLOCK])
    if len(block) < _EDID_BLOCK or sum(block) % 256 or not block.startswith(_EDID_HEADER):
        return {}
    packed, product, serial, week, year = struct.unpack_from(">H", block, 8) + struct.unpack_from(
        "<HIBB", block, 10
    )
    maker = "".join(chr(((packed >> shift) & 0x1F) + 64) for shift in (10, 5, 0))
    info: dict[str, int | str] = {"id_legacy": f"{maker}{product:04X}"}
    if serial:
        info["serial_number"] = serial
    if week == 0xFF:  # the year is the model's, not the unit's
        info["model_year"] = 1990 + year
    else:
        if week:
            info["manufacture_week"] = week
        info["manufacture_year"] = 1990 + year
    for offset in _DESCRIPTORS:
        descriptor = block[offset : offset + 18]
        if any(descriptor[i] for i in (0, 1, 2, 4)):  # a timing, not a display descriptor
            continue
        if descriptor[3] == _TAG_SERIAL:
            info["serial_number"] = _descriptor_text(descriptor)
        elif descriptor[3] == _TAG_NAME:
            info["display_name"] = _descriptor_text(descriptor)
    return info
