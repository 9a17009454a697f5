"""Copying frames at the memory system's speed: rows split over threads (kernel ``_memcopy``).

::

    from mantis_fast.pixels.memcopy import copy_frame
    copy_frame(snapshot, live_view)          # snapshot[...] = live_view, both cores for 1080p

A single core does not saturate memory bandwidth, so a big copy goes in bands of rows, one per
thread (POSIX threads started per call, fork-safe; see ``_memcopy``). ``threads`` is None or an
integer in 1..256, as everywhere in the package; None, the default, is the automatic choice,
which here depends on the size (``auto_threads``): one thread below ``PARALLEL_MIN_BYTES``
(starting a thread costs more than it saves), else up to ``MAX_AUTO_THREADS`` of the CPUs this
process may run on. A count above the kernel's 16 threads is capped to 16.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mantis_fast._validate import threads as _threads
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _memcopy
from mantis_fast.pixels.image import describe

__all__ = [
    "MAX_AUTO_THREADS",
    "PARALLEL_MIN_BYTES",
    "auto_threads",
    "copy_frame",
    "owned_copy",
    "packed_bytes",
    "usable_cpus",
]

#: Copies smaller than this run on one thread (a 640x480 region copies in ~65 us; starting a
#: thread costs ~30 us on a busy VM).
PARALLEL_MIN_BYTES = 4 << 20
#: The most threads ``threads=None`` uses: two already reach the bandwidth of a small VM, and
#: more would take cores from the X server and the agent around the copy.
MAX_AUTO_THREADS = 2


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_CPUS = usable_cpus()


def auto_threads(nbytes: int) -> int:
    """Threads ``copy_frame(threads=None)`` uses for a copy of ``nbytes`` bytes.

    Parameters
    ----------
    nbytes : int
        The size of the copy in bytes.

    Returns
    -------
    int
        1 below ``PARALLEL_MIN_BYTES`` (4 MiB: starting a thread costs more than it saves),
        else ``MAX_AUTO_THREADS`` (2), or fewer if this process may run on fewer CPUs.
    """
    return 1 if nbytes < PARALLEL_MIN_BYTES else max(1, min(MAX_AUTO_THREADS, _CPUS))


def _row_bytes(array: Any, name: str) -> int:
    """Bytes per row of a uint8 (H, W) or (H, W, C) array whose rows are contiguous."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim not in (2, 3):
        raise InvalidInputError(
            f"{name} must be a uint8 (H, W) or (H, W, C) array, got {describe(array)}"
        )
    strides, shape = array.strides, array.shape
    pixel = shape[2] if array.ndim == 3 else 1
    if array.size == 0:  # numpy may give an empty array any strides
        return shape[1] * pixel
    if (shape[-1] > 1 and strides[-1] != 1) or (
        array.ndim == 3 and shape[1] > 1 and strides[1] != pixel
    ):
        raise InvalidInputError(f"{name} needs contiguous rows, got strides {strides!r}")
    return shape[1] * pixel


def _thread_count(threads: int | None, nbytes: int) -> int:
    """``threads`` checked (None or 1..MAX_THREADS, as everywhere); None is the automatic
    choice, ``auto_threads(nbytes)``. The kernel starts at most ``_memcopy.MAX_THREADS`` (16)."""
    count = _threads(threads)
    if count is None:
        return auto_threads(nbytes)
    return min(count, _memcopy.MAX_THREADS)


def copy_frame(dst: np.ndarray, src: np.ndarray, *, threads: int | None = None) -> None:
    """``dst[...] = src`` for uint8 images, the rows split over threads.

    A single core does not saturate memory bandwidth, so a big copy goes in bands of rows,
    one per thread (POSIX threads started per call, fork-safe).

    Parameters
    ----------
    dst : numpy.ndarray
        The writable destination: a uint8 ``(H, W)`` or ``(H, W, C)`` array whose rows are
        contiguous (any row stride: crops and views of shared memory work).
    src : numpy.ndarray
        The source, of the same shape and kind.
    threads : int, optional
        Threads copying bands of rows, an integer in 1..256 (the kernel starts at most 16).
        None (the default) is the automatic choice, ``auto_threads(nbytes)``: one thread
        below ``PARALLEL_MIN_BYTES`` (4 MiB), else up to ``MAX_AUTO_THREADS`` (2).

    Raises
    ------
    InvalidInputError
        If an array is not as described, the shapes differ, ``dst`` is read-only, or
        ``threads`` is not valid.

    Notes
    -----
    Overlapping arrays are copied by ``np.copyto`` instead.
    """
    row_bytes = _row_bytes(src, "src")
    _row_bytes(dst, "dst")
    if dst.shape != src.shape:
        raise InvalidInputError(f"dst has shape {dst.shape!r}, src {src.shape!r}: they must match")
    if not dst.flags.writeable:
        raise InvalidInputError("dst is read-only")
    count = _thread_count(threads, src.shape[0] * row_bytes)
    if np.may_share_memory(dst, src):
        np.copyto(dst, src)
        return
    _memcopy.copy_rows(dst, src, row_bytes, count)


def owned_copy(image: np.ndarray, *, threads: int | None = None) -> np.ndarray:
    """A new C-contiguous array holding a uint8 image's pixels, copied like `copy_frame`.

    ``image.copy()`` is one thread; a 1080p frame goes on two here.

    Parameters
    ----------
    image : numpy.ndarray
        A uint8 ``(H, W)`` or ``(H, W, C)`` array whose rows are contiguous (rows may be
        strided).
    threads : int, optional
        Threads copying bands of rows, an integer in 1..256 (the kernel starts at most 16).
        None (the default) is the automatic choice, ``auto_threads(nbytes)``: one thread
        below ``PARALLEL_MIN_BYTES`` (4 MiB), else up to ``MAX_AUTO_THREADS`` (2).

    Returns
    -------
    numpy.ndarray
        The copy, C-contiguous, of ``image``'s shape.

    Raises
    ------
    InvalidInputError
        If ``image`` or ``threads`` is not as described.
    """
    row_bytes = _row_bytes(image, "image")
    out = np.empty(image.shape, np.uint8)
    if out.size:
        _memcopy.copy_rows(out, image, row_bytes, _thread_count(threads, out.nbytes))
    return out


def packed_bytes(image: np.ndarray, *, threads: int | None = None) -> bytearray:
    """A new ``bytearray`` of a uint8 image's rows packed back to back (an mss
    ``ScreenShot.raw``), copied once like `copy_frame`.

    Parameters
    ----------
    image : numpy.ndarray
        A uint8 ``(H, W)`` or ``(H, W, C)`` array whose rows are contiguous (rows may be
        strided: crops of shared memory work).
    threads : int, optional
        Threads copying bands of rows, an integer in 1..256 (the kernel starts at most 16).
        None (the default) is the automatic choice, ``auto_threads(nbytes)``: one thread
        below ``PARALLEL_MIN_BYTES`` (4 MiB), else up to ``MAX_AUTO_THREADS`` (2).

    Returns
    -------
    bytearray
        The rows, back to back.

    Raises
    ------
    InvalidInputError
        If ``image`` or ``threads`` is not as described.

    Notes
    -----
    ``bytearray(view)`` of a strided crop copies byte by byte (CPython's generic buffer
    path, ~25x slower) and ``bytearray(n)`` zero-fills before any copy.
    """
    row_bytes = _row_bytes(image, "image")
    return _memcopy.packed_rows(
        image, row_bytes, _thread_count(threads, image.shape[0] * row_bytes)
    )
