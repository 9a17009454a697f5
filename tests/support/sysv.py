"""The machine's SysV shared-memory segments as the kernel lists them (/proc/sysvipc/shm), for
the tests that check what a server or a worker leaves behind."""

from __future__ import annotations


def segments_with_times() -> dict[int, tuple[int, int]]:
    """shmid -> (creator pid, last change in epoch seconds) of every segment."""
    with open("/proc/sysvipc/shm") as table:
        header, *rows = table.read().splitlines()
    columns = header.split()
    shmid, cpid, ctime = (columns.index(k) for k in ("shmid", "cpid", "ctime"))
    found = {}
    for row in rows:
        fields = row.split()
        found[int(fields[shmid])] = (int(fields[cpid]), int(fields[ctime]))
    return found


def segments() -> dict[int, int]:
    """shmid -> creator pid of every segment."""
    return {shmid: creator for shmid, (creator, _) in segments_with_times().items()}
