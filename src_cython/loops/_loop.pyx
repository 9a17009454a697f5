# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Batched loop flags over a recorded trajectory of T steps (see ``loops.trajectory``).

Flag ``t`` answers the question the streaming ``LoopDetector`` answers right after step ``t`` was
recorded: is the window of ``window`` samples ending at ``t`` a loop? Inputs arrive validated.

* drift: van Herk / Gil-Werman block decomposition. With blocks of ``window`` steps, every window
  is a suffix of one block plus a prefix of the next, so the previous block's suffix extrema (in
  O(window) per-thread scratch) and this block's running prefix extrema give each window's min/max
  of x, y and "one action kind" in O(1): O(T) work whatever the window, blocks spread over
  threads with ``prange`` on long trajectories.
* repeat and state: run lengths of consecutive equal codes, one sequential O(T) pass each.
"""

from cython.parallel cimport parallel, prange
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int8_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

from mantis_omp cimport mantis_omp_max_threads


cdef enum:
    # Below this many steps one thread beats waking a team (and suffers less on busy cores).
    PARALLEL_MIN_STEPS = 131072


cdef inline double _dmax(double a, double b) noexcept nogil:
    return a if a >= b else b


cdef inline double _dmin(double a, double b) noexcept nogil:
    return a if a <= b else b


cdef inline void _drift_block(
    const double *x,
    const double *y,
    const int8_t *kind,
    const double *tol,
    Py_ssize_t tol_stride,
    Py_ssize_t window,
    Py_ssize_t start,
    Py_ssize_t n,
    double *ext,
    uint8_t *same,
    uint8_t *out,
) noexcept nogil:
    """Flags of the windows ending in the block at ``start``.

    Such a window is this block's prefix plus a suffix of the previous block, whose extrema and
    "one kind" flag go to the scratch ``ext`` (4 x window) and ``same`` (window) first.
    """
    cdef Py_ssize_t stop = start + window if start + window < n else n
    cdef Py_ssize_t prev = start - window
    cdef Py_ssize_t i, j, t, first
    cdef double *sxmax = ext
    cdef double *sxmin = ext + window
    cdef double *symax = ext + 2 * window
    cdef double *symin = ext + 3 * window
    if prev >= 0:
        j = window - 1
        i = start - 1
        sxmax[j] = x[i]
        sxmin[j] = x[i]
        symax[j] = y[i]
        symin[j] = y[i]
        same[j] = 1
        while j > 0:
            j -= 1
            i -= 1
            sxmax[j] = _dmax(x[i], sxmax[j + 1])
            sxmin[j] = _dmin(x[i], sxmin[j + 1])
            symax[j] = _dmax(y[i], symax[j + 1])
            symin[j] = _dmin(y[i], symin[j + 1])
            same[j] = same[j + 1] & (kind[i] == kind[i + 1])

    cdef double xmax = x[start], xmin = x[start], ymax = y[start], ymin = y[start]
    cdef double wxmax, wxmin, wymax, wymin, x0, y0, limit
    cdef bint prefix_same = 1, window_same
    for t in range(start, stop):
        if t > start:
            xmax = _dmax(x[t], xmax)
            xmin = _dmin(x[t], xmin)
            ymax = _dmax(y[t], ymax)
            ymin = _dmin(y[t], ymin)
            prefix_same = prefix_same & (kind[t] == kind[start])
        first = t - window + 1
        if first < 0:
            out[t] = 0
            continue
        if first == start:
            window_same = prefix_same
            wxmax = xmax
            wxmin = xmin
            wymax = ymax
            wymin = ymin
        else:
            j = first - prev
            window_same = prefix_same & same[j] & (kind[first] == kind[start])
            wxmax = _dmax(sxmax[j], xmax)
            wxmin = _dmin(sxmin[j], xmin)
            wymax = _dmax(symax[j], ymax)
            wymin = _dmin(symin[j], ymin)
        x0 = x[first]
        y0 = y[first]
        limit = tol[first * tol_stride]
        # Bitwise, not short-circuit: no data-dependent branches in the hot loop.
        out[t] = (
            window_same
            & (kind[first] != 0)
            & (wxmax - x0 <= limit)
            & (x0 - wxmin <= limit)
            & (wymax - y0 <= limit)
            & (y0 - wymin <= limit)
        )


def drift_flags(
    const double[::1] x,
    const double[::1] y,
    const int8_t[::1] kind,
    const double[:] tol,
    Py_ssize_t window,
    uint8_t[::1] out,
    int threads=0,
):
    """Drift flags of the windows ending at each step, written into ``out``.

    ``threads`` <= 0: one thread below PARALLEL_MIN_STEPS steps, else OpenMP's default team.
    Per-thread scratch is O(window); raises MemoryError if a thread cannot get it.
    """
    cdef Py_ssize_t n = x.shape[0]
    if n == 0:
        return
    cdef Py_ssize_t blocks = (n + window - 1) // window
    cdef Py_ssize_t tol_stride = tol.strides[0] // <Py_ssize_t>sizeof(double)
    if threads <= 0:
        threads = mantis_omp_max_threads() if n >= PARALLEL_MIN_STEPS else 1
    cdef size_t scratch_bytes = <size_t>window * (4 * sizeof(double) + 1)
    cdef const double *xp = &x[0]
    cdef const double *yp = &y[0]
    cdef const int8_t *kp = &kind[0]
    cdef const double *tp = &tol[0]
    cdef uint8_t *op = &out[0]
    # Chunks of ~16k steps: dynamic scheduling lets a thread take over the share of one that
    # the OS paused (shared cores), at one atomic fetch per chunk.
    cdef Py_ssize_t chunk = (16384 + window - 1) // window
    cdef Py_ssize_t b
    cdef double *scratch = NULL
    cdef int missing = 0
    with nogil, parallel(num_threads=threads):
        scratch = <double *>malloc(scratch_bytes)
        for b in prange(blocks, schedule="dynamic", chunksize=chunk):
            if scratch == NULL:
                missing += 1
            else:
                _drift_block(
                    xp, yp, kp, tp, tol_stride, window, b * window, n,
                    scratch, <uint8_t *>(scratch + 4 * window), op,
                )
        free(scratch)
    if missing:
        raise MemoryError(f"cannot allocate {scratch_bytes} bytes of scratch for window {window}")


def repeat_flags(
    const int64_t[::1] action_id,
    const uint8_t[::1] scroll,
    const int64_t[::1] state,
    Py_ssize_t window,
    uint8_t[::1] out,
):
    """Repeat flags: ``window`` equal consecutive ids, except scrolls whose state kept changing."""
    cdef Py_ssize_t n = action_id.shape[0]
    cdef Py_ssize_t t, same_run = 0, change_run = 0
    with nogil:
        for t in range(n):
            if t == 0:
                same_run = 1
                change_run = 0
            else:
                same_run = same_run + 1 if action_id[t] == action_id[t - 1] else 1
                change_run = change_run + 1 if state[t] != state[t - 1] else 0
            out[t] = same_run >= window and not (scroll[t] and change_run >= window - 1)


def state_flags(const int64_t[::1] state, Py_ssize_t window, uint8_t[::1] out):
    """State flags: ``window`` equal consecutive state codes, none negative (= nothing seen)."""
    cdef Py_ssize_t n = state.shape[0]
    cdef Py_ssize_t t, run = 0
    with nogil:
        for t in range(n):
            if state[t] < 0:
                run = 0
            elif t > 0 and state[t] == state[t - 1]:
                run += 1
            else:
                run = 1
            out[t] = run >= window


cdef class DriftRing:
    """The numeric half of ``LoopDetector``'s ring: drift code, x and y of the last samples.

    Preallocated C arrays, so a drift check over a window is a tight loop instead of Python float
    objects. ``kind_run`` counts the trailing samples that share one non-zero drift code.
    """

    cdef double *_x
    cdef double *_y
    cdef int *_code
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t head
    cdef readonly Py_ssize_t kind_run

    def __cinit__(self, Py_ssize_t capacity):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._x = <double *>PyMem_Malloc(capacity * sizeof(double))
        self._y = <double *>PyMem_Malloc(capacity * sizeof(double))
        self._code = <int *>PyMem_Malloc(capacity * sizeof(int))
        if self._x == NULL or self._y == NULL or self._code == NULL:
            raise MemoryError(f"cannot allocate a drift ring of {capacity} samples")
        self.capacity = capacity
        self.clear()

    def __dealloc__(self):
        PyMem_Free(self._x)
        PyMem_Free(self._y)
        PyMem_Free(self._code)

    def clear(self):
        """Forget every sample."""
        self.head = self.capacity - 1
        self.kind_run = 0

    def push(self, int code, double x, double y):
        """Append a sample; ``code`` 0 = cannot drift (x, y then unused)."""
        cdef Py_ssize_t prev = self.head
        self.head = prev + 1 if prev + 1 < self.capacity else 0
        if code == 0:
            self.kind_run = 0
        elif self.kind_run and code == self._code[prev]:
            if self.kind_run < self.capacity:
                self.kind_run += 1
        else:
            self.kind_run = 1
        self._code[self.head] = code
        self._x[self.head] = x
        self._y[self.head] = y

    def within(self, Py_ssize_t window, double tol):
        """The last ``window`` samples share one drift code and lie within ``tol`` of the first."""
        if window < 1 or window > self.capacity:
            raise ValueError(f"window must be in [1, {self.capacity}], got {window}")
        if self.kind_run < window:
            return False
        cdef Py_ssize_t i = self.head - window + 1
        if i < 0:
            i += self.capacity
        cdef double x0 = self._x[i], y0 = self._y[i]
        cdef Py_ssize_t remaining = window - 1
        while remaining:
            remaining -= 1
            i += 1
            if i == self.capacity:
                i = 0
            if not (-tol <= self._x[i] - x0 <= tol and -tol <= self._y[i] - y0 <= tol):
                return False
        return True
