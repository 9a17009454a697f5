"""Which files OSWorld's file routes may touch, and the directory tree ``/list_directory`` sends.

The original serves and overwrites any path the server's user can reach. Here every path is
resolved (``~`` and ``$VARS`` expanded, symbolic links followed) and must lie under one of the
policy's roots (by default the home directory and the temporary directory); a file larger than
``max_bytes`` is not sent.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FilePolicy", "PathRefused", "TooManyEntries", "directory_tree"]

#: The most entries ``directory_tree`` lists before it gives up (the original has no bound).
MAX_ENTRIES = 100_000


class PathRefused(PermissionError):
    """A path outside every root of the policy."""


class TooManyEntries(OSError):
    """A directory tree with more than ``MAX_ENTRIES`` entries."""


def expanded(raw: str) -> Path:
    """The path as the original reads it: ``$VARS`` and ``~`` expanded."""
    return Path(os.path.expandvars(os.path.expanduser(raw)))


@dataclass(frozen=True)
class FilePolicy:
    """The roots the file routes may read and write under, and the largest file sent."""

    roots: tuple[Path, ...]
    max_bytes: int

    @classmethod
    def default(cls, max_bytes: int) -> FilePolicy:
        return cls((Path.home(), Path(tempfile.gettempdir())), max_bytes)

    def resolve(self, raw: str) -> Path:
        """``raw`` expanded and resolved; ``PathRefused`` naming it unless under a root."""
        path = expanded(raw)
        real = Path(os.path.realpath(path))
        for root in self.roots:
            if real == Path(os.path.realpath(root)) or real.is_relative_to(os.path.realpath(root)):
                return real
        shown = ", ".join(str(root) for root in self.roots)
        raise PathRefused(f"{raw!r} is outside the directories this server shares ({shown})")


def directory_tree(start: Path, name: str) -> dict[str, Any]:
    """The original's nested ``{"type": "directory", "name", "children"}`` tree of ``start``
    (an unreadable directory becomes ``{"error": message}``; the top's name is ``name``, the
    basename of the path as sent), each real directory listed once
    (a symbolic link back up the tree, which sends the original into endless recursion, is
    listed as an empty directory); ``TooManyEntries`` past ``MAX_ENTRIES``."""
    seen: set[str] = set()
    count = 0

    def walk(directory: Path, name: str) -> dict[str, Any]:
        nonlocal count
        tree: dict[str, Any] = {"type": "directory", "name": name, "children": []}
        real = os.path.realpath(directory)
        if real in seen:
            return tree
        seen.add(real)
        try:
            for entry in os.listdir(directory):
                count += 1
                if count > MAX_ENTRIES:
                    raise TooManyEntries(f"{start} holds more than {MAX_ENTRIES} entries")
                full = directory / entry
                if full.is_dir():
                    tree["children"].append(walk(full, entry))
                else:
                    tree["children"].append({"type": "file", "name": entry})
        except TooManyEntries:
            raise
        except OSError as exc:
            return {"error": str(exc)}
        return tree

    return walk(start, name)
