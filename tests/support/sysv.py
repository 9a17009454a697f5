"""The machine's SysV shared-memory segments as the kernel lists them (/proc/sysvipc/shm), for
the tests that check what a server or a worker leaves behind.

A reference reading, on purpose not ``mantis_fast.x11.sysv_segments.segment_table``: the code
these tests check finds and frees segments through that reader (the framebuffer's lookup, the
vector env's clean-up of dead workers' segments), so a reader that misread a column would have
the package and its tests agree on the same wrong answer.
"""

from __future__ import annotations


def _table() -> tuple[list[str], list[list[str]]]:
    """The table's column names and its rows, split into fields."""
    with open("/proc/sysvipc/shm") as table:
        header, *rows = table.read().splitlines()
    return header.split(), [row.split() for row in rows]


def segments_with_times() -> dict[int, tuple[int, int]]:
    """shmid -> (creator pid, last change in epoch seconds) of every segment."""
    columns, rows = _table()
    shmid, cpid, ctime = (columns.index(k) for k in ("shmid", "cpid", "ctime"))
    return {int(fields[shmid]): (int(fields[cpid]), int(fields[ctime])) for fields in rows}


def segments() -> dict[int, int]:
    """shmid -> creator pid of every segment."""
    return {shmid: creator for shmid, (creator, _) in segments_with_times().items()}


def segment_modes() -> dict[int, str]:
    """shmid -> the ``perms`` column as the kernel writes it (octal: ``1600`` is SHM_DEST and
    0600) of every segment."""
    columns, rows = _table()
    shmid, perms = columns.index("shmid"), columns.index("perms")
    return {int(fields[shmid]): fields[perms] for fields in rows}
