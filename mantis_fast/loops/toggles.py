"""The on/off environment toggles of loop detection (``MANTIS_ADAPTIVE_CLICK_TOL``,
``MANTIS_LOOP_ADAPTIVE``), read whenever they matter, as upstream Mantis reads them, so a
per-request override of a variable applies at once.

They are read on the detector's hot path (every drift check), where ``os.environ.get`` of an
unset variable costs about 2 us (its mapping raises and catches a KeyError); reading CPython's
underlying store directly costs a few tens of ns and sees every change made through
``os.environ`` (``putenv`` alone is invisible to ``os.environ`` anyway).
"""

from __future__ import annotations

import os

__all__ = ["DISABLED_VALUES", "env_value", "toggle_enabled"]

#: Values (stripped, lower-cased) that switch a toggle off; anything else, or unset, is on.
DISABLED_VALUES = frozenset({"disabled", "0", "false", "off", "no"})

_environ = os.environ
_store = getattr(_environ, "_data", None)
_encode_key = getattr(_environ, "encodekey", None)
_decode_value = getattr(_environ, "decodevalue", None)
_fast = _store is not None and _encode_key is not None and _decode_value is not None
_keys: dict[str, object] = {}


def env_value(name: str) -> str | None:
    """``os.environ.get(name)``, fast when the variable is unset."""
    if not _fast or os.environ is not _environ:
        return os.environ.get(name)  # replaced, or not CPython's mapping: the public way
    key = _keys.get(name)
    if key is None:
        key = _keys[name] = _encode_key(name)
    raw = _store.get(key)
    return None if raw is None else _decode_value(raw)


def toggle_enabled(name: str) -> bool:
    """Whether the toggle ``name`` is on: unset, or set to anything but :data:`DISABLED_VALUES`."""
    if _fast and os.environ is _environ:  # env_value inlined: this runs on every drift check
        key = _keys.get(name)
        if key is None:
            key = _keys[name] = _encode_key(name)
        raw = _store.get(key)
        if raw is None:
            return True
        value = _decode_value(raw)
    else:
        value = os.environ.get(name)
        if value is None:
            return True
    return value.strip().lower() not in DISABLED_VALUES
