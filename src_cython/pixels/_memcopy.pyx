# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Row copies of uint8 images split over POSIX threads (the kernel behind ``memcopy``).

One core does not reach the memory system's bandwidth: on a 2-core VM a second thread copying
half of a 1080p frame takes the copy from ~0.6 to ~0.35 ms. The threads claim chunks of rows
rather than fixed halves, so a thread its core runs late never holds the copy up. They are plain
pthreads started per call (~10 us each) rather than an OpenMP team: GNU OpenMP keeps its team
across calls and a process forked after using it hangs at its next parallel region, which
would break every fork-based vector environment that captures in its workers.
"""

cimport numpy as cnp
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport uint8_t

cnp.import_array()

cdef extern from "copy_rows.h":
    int MANTIS_COPY_MAX_THREADS
    void mantis_copy_rows(uint8_t* dst, const uint8_t* src, Py_ssize_t rows, Py_ssize_t row_bytes,
                          Py_ssize_t dst_stride, Py_ssize_t src_stride, int threads) nogil


MAX_THREADS = MANTIS_COPY_MAX_THREADS


def copy_rows(cnp.ndarray dst, cnp.ndarray src, Py_ssize_t row_bytes, int threads):
    """Copy ``src``'s rows (``row_bytes`` contiguous bytes each, ``src.strides[0]`` apart) over
    ``dst``'s, in ``threads`` bands of rows. The caller checked shapes, dtype, contiguity and
    that the arrays do not overlap (typed memoryviews would cost more than a region's copy)."""
    cdef Py_ssize_t rows = cnp.PyArray_DIM(src, 0)
    cdef uint8_t* target = <uint8_t*>cnp.PyArray_DATA(dst)
    cdef const uint8_t* source = <const uint8_t*>cnp.PyArray_DATA(src)
    cdef Py_ssize_t dst_stride = cnp.PyArray_STRIDE(dst, 0)
    cdef Py_ssize_t src_stride = cnp.PyArray_STRIDE(src, 0)
    if rows == 0 or row_bytes == 0:
        return
    with nogil:
        mantis_copy_rows(target, source, rows, row_bytes, dst_stride, src_stride, threads)


def packed_rows(cnp.ndarray src, Py_ssize_t row_bytes, int threads):
    """A new bytearray holding ``src``'s rows back to back. The bytearray is created
    uninitialised (``bytearray(n)`` would zero-fill it first: a third more memory traffic).
    The caller checked dtype and row contiguity."""
    cdef Py_ssize_t rows = cnp.PyArray_DIM(src, 0)
    cdef const uint8_t* source = <const uint8_t*>cnp.PyArray_DATA(src)
    cdef Py_ssize_t src_stride = cnp.PyArray_STRIDE(src, 0)
    data = PyByteArray_FromStringAndSize(NULL, rows * row_bytes)
    cdef uint8_t* target = <uint8_t*>PyByteArray_AS_STRING(data)
    if rows and row_bytes:
        with nogil:
            mantis_copy_rows(target, source, rows, row_bytes, row_bytes, src_stride, threads)
    return data
