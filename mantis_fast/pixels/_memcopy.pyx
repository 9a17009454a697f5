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

cdef extern from *:
    """
    #include <pthread.h>
    #include <string.h>

    #define MANTIS_COPY_MAX_THREADS 16
    /* Chunks per thread: small enough that a thread the OS runs late leaves its share to the
       others, large enough that claiming one costs nothing against its copy. */
    #define MANTIS_COPY_CHUNKS_PER_THREAD 16

    typedef struct {
        uint8_t *dst;
        const uint8_t *src;
        Py_ssize_t rows, row_bytes, dst_stride, src_stride, chunk;
        Py_ssize_t next;  /* first row of the next unclaimed chunk (atomic) */
    } mantis_copy_job;

    static void mantis_copy_range(const mantis_copy_job *job, Py_ssize_t top, Py_ssize_t count) {
        Py_ssize_t i;
        uint8_t *dst = job->dst + top * job->dst_stride;
        const uint8_t *src = job->src + top * job->src_stride;
        if (job->dst_stride == job->row_bytes && job->src_stride == job->row_bytes) {
            memcpy(dst, src, (size_t)(count * job->row_bytes));
            return;
        }
        for (i = 0; i < count; i++)
            memcpy(dst + i * job->dst_stride, src + i * job->src_stride, (size_t)job->row_bytes);
    }

    /* Copy chunks until none is left. Every thread runs this, the caller too: the chunks are
       claimed, not assigned, so a thread that starts late (its core busy: another process, a
       hypervisor) costs nothing but its start; with fixed halves the caller would wait for
       the late thread to copy its whole half. */
    static void mantis_copy_claim(mantis_copy_job *job) {
        Py_ssize_t top, count;
        for (;;) {
            top = __atomic_fetch_add(&job->next, job->chunk, __ATOMIC_RELAXED);
            if (top >= job->rows) return;
            count = job->rows - top < job->chunk ? job->rows - top : job->chunk;
            mantis_copy_range(job, top, count);
        }
    }

    static void *mantis_copy_thread(void *job) {
        mantis_copy_claim((mantis_copy_job *)job);
        return NULL;
    }

    /* Rows copied by this thread and threads - 1 helpers. A helper that cannot be started
       leaves its chunks to the others: the copy is always complete. */
    static void mantis_copy_rows(uint8_t *dst, const uint8_t *src, Py_ssize_t rows,
                                 Py_ssize_t row_bytes, Py_ssize_t dst_stride,
                                 Py_ssize_t src_stride, int threads) {
        mantis_copy_job job;
        pthread_t ids[MANTIS_COPY_MAX_THREADS];
        int started[MANTIS_COPY_MAX_THREADS];
        int t;
        if (threads > MANTIS_COPY_MAX_THREADS) threads = MANTIS_COPY_MAX_THREADS;
        if (threads > rows) threads = (int)rows;
        if (threads < 1) threads = 1;
        job.dst = dst;
        job.src = src;
        job.rows = rows;
        job.row_bytes = row_bytes;
        job.dst_stride = dst_stride;
        job.src_stride = src_stride;
        job.next = 0;
        if (threads == 1) {
            mantis_copy_range(&job, 0, rows);
            return;
        }
        job.chunk = rows / ((Py_ssize_t)threads * MANTIS_COPY_CHUNKS_PER_THREAD);
        if (job.chunk < 1) job.chunk = 1;
        for (t = 1; t < threads; t++)
            started[t] = pthread_create(&ids[t], NULL, mantis_copy_thread, &job) == 0;
        mantis_copy_claim(&job);
        for (t = 1; t < threads; t++)
            if (started[t]) pthread_join(ids[t], NULL);
    }
    """
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
