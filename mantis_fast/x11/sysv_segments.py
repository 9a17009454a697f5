"""The machine's SysV shared-memory segments, as the kernel lists them, and their removal.

``/proc/sysvipc/shm`` is the kernel's table of every segment: its id, key, creator and owner
(pids and uids the kernel records, which nobody can forge), attachments and times. The Xvfb
framebuffer is found in it (``framebuffer``: the segments a server process created), and a
vector env frees from it the segments its dead workers left behind (``mantis_fast.gym.vector``).
Both read it here, the same way: non-blocking, a regular file only, up to a bound
(``server_identity.read_regular_file``).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from mantis_fast.x11._shm import mark_segment_removed
from mantis_fast.x11.server_identity import read_regular_file

__all__ = [
    "SYSVIPC_SHM",
    "SegmentEntry",
    "UnexpectedSegmentTable",
    "remove_segment",
    "segment_table",
]

SYSVIPC_SHM = "/proc/sysvipc/shm"
_LIMIT = 16 << 20  # ~100,000 segments; the kernel allows 4,096 by default
# The table's columns each entry keeps, by the name in its header line.
_COLUMNS = ("key", "shmid", "cpid", "nattch", "uid", "cuid", "ctime")


class UnexpectedSegmentTable(ValueError):
    """The kernel's segment table lacks a column this module reads (another kernel's format)."""


class SegmentEntry(NamedTuple):
    """One segment as ``/proc/sysvipc/shm`` lists it."""

    key: int  # 0: IPC_PRIVATE, reachable by its id only
    shmid: int
    creator_pid: int
    attachments: int
    owner_uid: int
    creator_uid: int
    changed: int  # the last shmctl change (creation included), in epoch seconds


def segment_table() -> list[SegmentEntry]:
    """Read the kernel's table of SysV shared-memory segments.

    Returns
    -------
    list of SegmentEntry
        Every segment, in the kernel's order.

    Raises
    ------
    OSError
        If the table cannot be read (no ``/proc``, not a regular file, or larger than the
        bound).
    UnexpectedSegmentTable
        If its header lacks one of the columns read here.
    """
    table = read_regular_file(SYSVIPC_SHM, _LIMIT).decode("ascii", "replace")
    lines = table.splitlines()
    columns = lines[0].split() if lines else []
    try:
        at = [columns.index(name) for name in _COLUMNS]
    except ValueError:
        raise UnexpectedSegmentTable(f"unexpected {SYSVIPC_SHM} columns: {columns}") from None
    entries = []
    for line in lines[1:]:
        fields = line.split()
        if len(fields) != len(columns):
            continue  # a row that does not match the header is skipped, never misread
        try:
            entries.append(SegmentEntry._make(int(fields[i]) for i in at))
        except ValueError:
            continue
    return entries


def remove_segment(shmid: int) -> bool:
    """Mark a segment for removal (``shmctl(IPC_RMID)``); it is freed once nobody has it attached.

    Parameters
    ----------
    shmid : int
        The segment's id.

    Returns
    -------
    bool
        Whether it was marked; False when it is gone already or not ours to remove.
    """
    with contextlib.suppress(OSError):
        mark_segment_removed(shmid)
        return True
    return False
