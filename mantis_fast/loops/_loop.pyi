# Stub for the compiled module built from _loop.pyx beside it (inputs validated by
# mantis_fast.loops.trajectory; flags are written into ``out``, 1 = loop).

import numpy as np
from typing_extensions import Self, disjoint_base

def drift_flags(
    x: np.ndarray,  # const double[::1], (T,)
    y: np.ndarray,  # const double[::1], (T,)
    kind: np.ndarray,  # const int8_t[::1], (T,), 0 = cannot drift
    tol: np.ndarray,  # const double[:], (T,), may be a stride-0 broadcast
    window: int,  # Py_ssize_t, >= 2
    out: np.ndarray,  # uint8_t[::1], (T,)
    threads: int = 0,  # int, <= 0: 1 below 131072 steps, else OpenMP's default team
) -> None: ...
def repeat_flags(
    action_id: np.ndarray,  # const int64_t[::1], (T,)
    scroll: np.ndarray,  # const uint8_t[::1], (T,)
    state: np.ndarray,  # const int64_t[::1], (T,)
    window: int,  # Py_ssize_t, >= 2
    out: np.ndarray,  # uint8_t[::1], (T,)
) -> None: ...
def state_flags(
    state: np.ndarray,  # const int64_t[::1], (T,), < 0 = no state known (no frame, no URL)
    window: int,  # Py_ssize_t, >= 2
    out: np.ndarray,  # uint8_t[::1], (T,)
) -> None: ...

@disjoint_base
class DriftRing:
    """Preallocated ring of the last ``capacity`` drift samples (code, x, y) for LoopDetector."""

    # Arguments go to __cinit__ (the type's tp_new), so they are typed on __new__, not __init__.
    def __new__(cls, capacity: int) -> Self: ...  # Py_ssize_t capacity, >= 1
    @property
    def capacity(self) -> int: ...  # cdef readonly Py_ssize_t
    @property
    def head(self) -> int: ...  # cdef readonly Py_ssize_t, slot of the newest sample
    @property
    def kind_run(self) -> int: ...  # cdef readonly Py_ssize_t, trailing samples sharing one
    #   non-zero drift code (<= capacity)
    def clear(self) -> None: ...
    def push(self, code: int, x: float, y: float) -> None: ...  # int code, double x, double y
    def within(self, window: int, tol: float) -> bool: ...  # Py_ssize_t window, double tol
