# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""SysV shared-memory segments exposed as buffers: our own, writable (the MIT-SHM capture
target), and another process's, attached read-only (Xvfb's ``-shmem`` framebuffer).

The segment's life is tied to Python references, not to ``close()``: numpy views created
through the buffer protocol keep it mapped, so a zero-copy frame a caller still holds can never
point at unmapped memory. ``close()`` detaches at once when nothing borrows the memory, else as
soon as the last borrower lets go.
"""

from cpython.buffer cimport PyBUF_WRITABLE
from libc.errno cimport errno
from libc.string cimport strerror

cdef extern from "<sys/types.h>":
    ctypedef int key_t
    ctypedef int pid_t
    ctypedef unsigned int uid_t

cdef extern from "<sys/ipc.h>":
    key_t IPC_PRIVATE
    int IPC_CREAT
    int IPC_EXCL
    int IPC_RMID
    int IPC_STAT
    int IPC_SET
    struct ipc_perm:
        uid_t uid
        uid_t cuid
        unsigned int mode

cdef extern from "<sys/shm.h>":
    int SHM_RDONLY
    struct shmid_ds:
        ipc_perm shm_perm
        size_t shm_segsz
        pid_t shm_cpid
        pid_t shm_lpid
        unsigned long shm_nattch
    int shmget(key_t key, size_t size, int shmflg) nogil
    void *shmat(int shmid, const void *shmaddr, int shmflg) nogil
    int shmdt(const void *shmaddr) nogil
    int shmctl(int shmid, int cmd, shmid_ds *buf) nogil


cdef inline str _os_error():
    return strerror(errno).decode("utf-8", "replace")


cdef class _Mapping:
    """A SysV segment mapped into this process, as a 1-D uint8 buffer.

    Views made through the buffer protocol keep it mapped: ``close()`` detaches at once when
    nothing borrows the memory, else when the last borrower lets go.
    """

    cdef readonly int shmid
    cdef readonly Py_ssize_t size
    cdef unsigned char *_addr
    cdef Py_ssize_t _shape[1]
    cdef Py_ssize_t _strides[1]
    cdef int _exports
    cdef bint _closing
    cdef bint _readonly

    cdef void _mapped(self, void *addr, Py_ssize_t size) noexcept:
        self._addr = <unsigned char *>addr
        self.size = size
        self._shape[0] = size
        self._strides[0] = 1

    @property
    def attached(self) -> bool:
        return self._addr != NULL

    @property
    def borrowed(self) -> int:
        """How many buffer views (numpy arrays, memoryviews) currently borrow the memory."""
        return self._exports

    def close(self):
        """Detach: now if nothing borrows the memory, otherwise when the last view goes."""
        self._closing = True
        if self._exports == 0:
            self._detach()

    cdef void _detach(self) noexcept:
        if self._addr != NULL:
            shmdt(self._addr)
            self._addr = NULL

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        if self._addr == NULL or self._closing:
            raise ValueError("shared segment is closed")
        if self._readonly and flags & PyBUF_WRITABLE:
            raise BufferError("segment is attached read-only")
        buffer.buf = self._addr
        buffer.obj = self
        buffer.len = self.size
        buffer.readonly = self._readonly
        buffer.itemsize = 1
        buffer.format = "B"
        buffer.ndim = 1
        buffer.shape = self._shape
        buffer.strides = self._strides
        buffer.suboffsets = NULL
        buffer.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *buffer):
        self._exports -= 1
        if self._closing and self._exports == 0:
            self._detach()

    def __dealloc__(self):
        self._detach()


cdef class SharedSegment(_Mapping):
    """A private (IPC_PRIVATE, mode 0600) SysV segment attached to this process."""

    cdef bint _removed

    def __cinit__(self, Py_ssize_t size):
        self.shmid = -1
        if size <= 0:
            raise ValueError(f"segment size must be positive, got {size}")
        self.shmid = shmget(IPC_PRIVATE, <size_t>size, IPC_CREAT | IPC_EXCL | 0o600)
        if self.shmid < 0:
            raise OSError(errno, f"shmget({size} bytes) failed: {_os_error()}")
        cdef void *addr = shmat(self.shmid, NULL, 0)
        if addr == <void *>-1:
            err = errno
            shmctl(self.shmid, IPC_RMID, NULL)
            self._removed = True
            raise OSError(err, f"shmat(shmid={self.shmid}) failed: {strerror(err).decode()}")
        self._mapped(addr, size)

    def mark_removed(self):
        """Mark the segment for destruction (IPC_RMID): it is freed once every attacher detached.

        Call it as soon as the X server has attached too, so a crash of either side leaks nothing.
        """
        if not self._removed and self.shmid >= 0:
            if shmctl(self.shmid, IPC_RMID, NULL) != 0:
                raise OSError(errno, f"shmctl(IPC_RMID) failed: {_os_error()}")
            self._removed = True

    @property
    def removed(self) -> bool:
        return self._removed

    cdef void _detach(self) noexcept:
        _Mapping._detach(self)
        if not self._removed and self.shmid >= 0:
            shmctl(self.shmid, IPC_RMID, NULL)
            self._removed = True

    def __repr__(self):
        state = "attached" if self._addr != NULL else "detached"
        return f"<SharedSegment shmid={self.shmid} size={self.size} {state}>"


cdef shmid_ds _stat(int shmid) except *:
    cdef shmid_ds info
    if shmctl(shmid, IPC_STAT, &info) != 0:
        raise OSError(errno, f"shmctl(shmid={shmid}, IPC_STAT) failed: {_os_error()}")
    return info


def segment_info(int shmid):
    """``(size, creator_pid, mode)`` of segment ``shmid`` (``shmctl(IPC_STAT)``; OSError if it
    does not exist or we may not read it). ``mode`` is the permission bits, e.g. 0o600."""
    cdef shmid_ds info = _stat(shmid)
    return info.shm_segsz, info.shm_cpid, info.shm_perm.mode & 0o777


def segment_access(int shmid):
    """``(attachments, last_pid, owner_uid, creator_uid)`` of segment ``shmid``
    (``shmctl(IPC_STAT)``): how many processes have it attached now, and the pid of the last
    ``shmat``/``shmdt`` on it. A process that attached it at any time leaves its pid here
    until another attaches or detaches, so a segment nobody else touched reads ``(1,
    creator)``."""
    cdef shmid_ds info = _stat(shmid)
    return info.shm_nattch, info.shm_lpid, info.shm_perm.uid, info.shm_perm.cuid


def set_segment_mode(int shmid, int mode):
    """Set the permission bits of segment ``shmid`` (``shmctl(IPC_SET)``), e.g. 0o600.

    Only the segment's owner or creator may: anyone else gets ``PermissionError``.
    """
    if mode < 0 or mode > 0o777:
        raise ValueError(f"mode must be within 0..0o777, got {mode:#o}")
    cdef shmid_ds info = _stat(shmid)
    info.shm_perm.mode = (info.shm_perm.mode & ~0o777) | mode
    if shmctl(shmid, IPC_SET, &info) != 0:
        raise OSError(errno, f"shmctl(shmid={shmid}, IPC_SET mode {mode:#o}) failed: {_os_error()}")


def mark_segment_removed(int shmid):
    """Mark segment ``shmid`` for destruction (``shmctl(IPC_RMID)``): it is freed once every
    process detached, a server killed with SIGKILL included. Linux still lets processes attach
    it by id until then. Owner or creator only (``PermissionError`` otherwise)."""
    if shmctl(shmid, IPC_RMID, NULL) != 0:
        raise OSError(errno, f"shmctl(shmid={shmid}, IPC_RMID) failed: {_os_error()}")


cdef class ReadOnlySegment(_Mapping):
    """An existing SysV segment (another process's) attached read-only (``SHM_RDONLY``).

    Its 1-D uint8 buffer is read-only. ``size``, ``creator_pid``, ``mode``, ``owner_uid`` and
    ``creator_uid`` are what ``shmctl(IPC_STAT)`` said at attach time. Lifetime as
    ``SharedSegment``: views keep it mapped; ``close()`` detaches once the last one goes. The
    segment itself is never removed: it is not ours.
    """

    cdef readonly int creator_pid
    cdef readonly int mode
    cdef readonly unsigned int owner_uid
    cdef readonly unsigned int creator_uid

    def __cinit__(self, int shmid):
        self.shmid = shmid
        self._readonly = True
        if shmid < 0:
            raise ValueError(f"shmid must be >= 0, got {shmid}")
        cdef shmid_ds info = _stat(shmid)
        cdef void *addr = shmat(shmid, NULL, SHM_RDONLY)
        if addr == <void *>-1:
            raise OSError(errno, f"shmat(shmid={shmid}, SHM_RDONLY) failed: {_os_error()}")
        self._mapped(addr, <Py_ssize_t>info.shm_segsz)
        self.creator_pid = info.shm_cpid
        self.mode = info.shm_perm.mode & 0o777
        self.owner_uid = info.shm_perm.uid
        self.creator_uid = info.shm_perm.cuid

    def __repr__(self):
        state = "attached" if self._addr != NULL else "detached"
        return (
            f"<ReadOnlySegment shmid={self.shmid} size={self.size} "
            f"creator_pid={self.creator_pid} mode={self.mode:#o} {state}>"
        )
