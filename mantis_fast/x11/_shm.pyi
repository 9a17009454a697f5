# Stub for the compiled module built from _shm.pyx beside it.

import sys

from typing_extensions import Self, disjoint_base

@disjoint_base
class _Mapping:
    """A SysV segment mapped into this process (a 1-D uint8 buffer)."""

    @property
    def shmid(self) -> int: ...  # cdef readonly int
    @property
    def size(self) -> int: ...  # cdef readonly Py_ssize_t
    @property
    def attached(self) -> bool: ...
    @property
    def borrowed(self) -> int: ...
    def close(self) -> None: ...
    # The buffer protocol (__getbuffer__/__releasebuffer__) has Python-level names from 3.12 on.
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...
        def __release_buffer__(self, buffer: memoryview, /) -> None: ...

@disjoint_base
class SharedSegment(_Mapping):
    """A private SysV shared-memory segment attached to this process (1-D writable uint8 buffer)."""

    # Arguments go to __cinit__ (the type's tp_new), so they are typed on __new__, not __init__.
    def __new__(cls, size: int) -> Self: ...  # Py_ssize_t size, > 0
    def mark_removed(self) -> None: ...
    @property
    def removed(self) -> bool: ...

def segment_info(shmid: int) -> tuple[int, int, int]: ...  # (size, creator_pid, mode)
def segment_access(shmid: int) -> tuple[int, int, int, int]: ...  # (nattch, lpid, uid, cuid)
def set_segment_mode(shmid: int, mode: int) -> None: ...
def mark_segment_removed(shmid: int) -> None: ...

@disjoint_base
class ReadOnlySegment(_Mapping):
    """An existing SysV segment attached read-only (1-D read-only uint8 buffer)."""

    def __new__(cls, shmid: int) -> Self: ...
    @property
    def creator_pid(self) -> int: ...
    @property
    def mode(self) -> int: ...
    @property
    def owner_uid(self) -> int: ...
    @property
    def creator_uid(self) -> int: ...
