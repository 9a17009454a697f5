"""``copy_frame`` against ``np.copyto`` (the obviously correct reference): every shape, crop,
row stride and thread count, and clear errors for what it cannot copy."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _memcopy
from mantis_fast.pixels.memcopy import (
    PARALLEL_MIN_BYTES,
    auto_threads,
    copy_frame,
    owned_copy,
    packed_bytes,
)


def random_image(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("shape", [(1080, 1920, 4), (7, 5, 3), (1, 1, 4), (3, 1, 1), (5, 9)])
@pytest.mark.parametrize("threads", [None, 1, 2, 3, 16, 100])
def test_equals_copyto(shape, threads) -> None:
    src = random_image(shape)
    dst = np.zeros_like(src)
    copy_frame(dst, src, threads=threads)
    np.testing.assert_array_equal(dst, src)


@settings(max_examples=200, deadline=None)
@given(
    height=st.integers(0, 40),
    width=st.integers(0, 40),
    channels=st.sampled_from([None, 1, 3, 4]),
    top=st.integers(0, 5),
    left=st.integers(0, 5),
    pad=st.integers(0, 7),
    flip=st.booleans(),
    threads=st.integers(1, 20),
)
def test_crops_and_strides(height, width, channels, top, left, pad, flip, threads) -> None:
    tail = () if channels is None else (channels,)
    big = random_image((height + top + 2, width + left + pad + 1, *tail), seed=height * width)
    src = big[top : top + height, left : left + width]
    if flip:
        src = src[::-1]
    dst_big = np.full((height + 3, width + pad + 2, *tail), 7, np.uint8)
    dst = dst_big[1 : 1 + height, 1 : 1 + width]
    before = dst_big.copy()
    copy_frame(dst, src, threads=threads)
    np.testing.assert_array_equal(dst, src)
    outside = np.ones(dst_big.shape[:2], bool)
    outside[1 : 1 + height, 1 : 1 + width] = False
    np.testing.assert_array_equal(dst_big[outside], before[outside])  # nothing around it moved


def test_overlapping_arrays_copy_like_copyto() -> None:
    base = random_image((20, 10, 4))
    expected = base.copy()
    np.copyto(expected[2:], expected[:-2].copy())
    copy_frame(base[2:], base[:-2])
    np.testing.assert_array_equal(base, expected)


def test_auto_threads() -> None:
    assert auto_threads(PARALLEL_MIN_BYTES - 1) == 1
    usable = len(os.sched_getaffinity(0))
    assert auto_threads(PARALLEL_MIN_BYTES) == min(2, usable)
    assert _memcopy.MAX_THREADS >= 2


@pytest.mark.parametrize(
    ("dst", "src", "kwargs", "message"),
    [
        (np.zeros((2, 2, 4), np.uint8), np.zeros((2, 2, 4), np.float32), {}, "src must be a uint8"),
        (np.zeros((2, 2, 4), np.uint8), [[1, 2]], {}, "src must be a uint8"),
        (
            np.zeros((2, 2, 4), np.uint8),
            np.zeros((2, 2, 2, 4), np.uint8),
            {},
            "src must be a uint8",
        ),
        (np.zeros((2, 3, 4), np.uint8), np.zeros((2, 2, 4), np.uint8), {}, "must match"),
        (np.zeros((2, 2, 4), np.uint8), np.zeros((2, 4, 4), np.uint8)[:, ::2], {}, "contiguous"),
        (np.zeros((2, 2, 4), np.uint8), np.zeros((2, 2, 8), np.uint8)[:, :, ::2], {}, "contiguous"),
        (np.zeros((2, 4), np.uint8)[:, ::2], np.zeros((2, 2), np.uint8), {}, "dst needs"),
        (np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8), {"threads": 0}, "threads"),
        (np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8), {"threads": True}, "threads"),
        (np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8), {"threads": 1.5}, "threads"),
    ],
)
def test_bad_input_names_what_was_received(dst, src, kwargs, message) -> None:
    with pytest.raises(InvalidInputError, match=message):
        copy_frame(dst, src, **kwargs)


def test_read_only_destination() -> None:
    dst = np.zeros((2, 2), np.uint8)
    dst.flags.writeable = False
    with pytest.raises(InvalidInputError, match="read-only"):
        copy_frame(dst, np.ones((2, 2), np.uint8))


def test_a_forked_child_copies_in_parallel_too() -> None:
    # An OpenMP team would hang the child here; plain threads started per call cannot.
    src = random_image((1080, 1920, 4))
    dst = np.empty_like(src)
    copy_frame(dst, src, threads=2)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        child = np.empty_like(src)
        copy_frame(child, src, threads=2)
        os._exit(0 if np.array_equal(child, src) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(0, 8),
    st.integers(0, 8),
    st.integers(0, 8),
    st.sampled_from([1, 3, 4]),
    st.sampled_from([None, 1, 2, 3]),
)
def test_packed_bytes_and_owned_copies_of_crops(
    height, width, top, left, pad, channels, threads
) -> None:
    """numpy's own copies are the references: ``tobytes()`` and ``np.array``."""
    parent = np.random.default_rng(height * width).integers(
        0, 256, (top + height + pad, left + width + pad, channels), dtype=np.uint8
    )
    crop = parent[top : top + height, left : left + width]
    data = packed_bytes(crop, threads=threads)
    assert type(data) is bytearray and data == crop.tobytes()
    assert not np.shares_memory(np.frombuffer(data, np.uint8), parent)
    out = owned_copy(crop, threads=threads)
    assert out.shape == crop.shape and out.dtype == np.uint8 and out.flags.c_contiguous
    assert out.flags.owndata and not np.shares_memory(out, parent)
    np.testing.assert_array_equal(out, np.array(crop))


def test_owned_copy_of_a_frame_and_of_bad_images() -> None:
    frame = np.random.default_rng(3).integers(0, 256, (1080, 1920, 4), dtype=np.uint8)
    assert auto_threads(frame.nbytes) >= 1
    np.testing.assert_array_equal(owned_copy(frame), frame)  # the multi-threaded size
    np.testing.assert_array_equal(owned_copy(frame[::-1]), frame[::-1])  # negative row stride
    assert owned_copy(np.zeros((2, 2), np.uint8)[:, :0]).shape == (2, 0)
    with pytest.raises(InvalidInputError, match="uint8"):
        owned_copy(np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidInputError, match="uint8"):
        owned_copy([[1, 2]])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="contiguous rows"):
        owned_copy(np.zeros((4, 4, 4), np.uint8)[:, ::2])
    with pytest.raises(InvalidInputError, match="threads"):
        owned_copy(np.zeros((2, 2), np.uint8), threads=0)


def test_packed_bytes_of_empty_and_bad_images() -> None:
    assert packed_bytes(np.zeros((0, 5, 4), np.uint8)) == bytearray()
    with pytest.raises(InvalidInputError, match="uint8"):
        packed_bytes(np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidInputError, match="contiguous rows"):
        packed_bytes(np.zeros((4, 4, 4), np.uint8)[:, ::2])
    with pytest.raises(InvalidInputError, match="threads"):
        packed_bytes(np.zeros((2, 2), np.uint8), threads=0)
