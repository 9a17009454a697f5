/* Row copies split among threads that claim chunks: the frame copies of pixels._memcopy. */
#ifndef MANTIS_COPY_ROWS_H
#define MANTIS_COPY_ROWS_H

#include <Python.h>  /* Py_ssize_t; the Cython module includes it first anyway */
#include <stdint.h>

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

#endif /* MANTIS_COPY_ROWS_H */
