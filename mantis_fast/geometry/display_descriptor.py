"""The displays descriptor: what a planner reads to pick a display before it acts (pure).

A JSON-able dict with a schema version, so a planner can check what it reads::

    {
      "version": 1,
      "source": "x11",              # where the list came from (None when not said)
      "primary": 0,                 # id of the primary display (None for no display)
      "displays": [
        {"id": 0, "name": "eDP-1", "bounds": [0, 0, 1512, 982], "scale_factor": 2.0,
         "primary": true, "backing_size": [3024, 1964]},
        {"id": 1, "name": "HDMI-1", "bounds": [1512, 0, 1920, 1080], "scale_factor": 1.0,
         "primary": false}
      ]
    }

``bounds`` are ``[x, y, width, height]`` in the host's global logical space; actions carry
coordinates local to one display (``coord_source="logical"`` by default). ``backing_size``
(device pixels, the size of a capture) is left out only where it equals the logical size and
so does the logical size times ``scale_factor`` (what a reader takes for a missing one).
Version 1 promises these keys and their meaning; a later version may add keys, and bumps the
number when a key changes meaning. ``displays_from_descriptor`` reads a descriptor back.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.displays import Display, with_primary

__all__ = ["DESCRIPTOR_VERSION", "backing_size", "displays_descriptor", "displays_from_descriptor"]

DESCRIPTOR_VERSION = 1


def backing_size(display: Display) -> tuple[int, int]:
    """Device-pixel size of ``display``: its reported ``backing_size``, else its logical size
    times ``scale_factor``, rounded (at least one pixel)."""
    if display.backing_size is not None:
        return display.backing_size
    return _scaled_size(display)


def _scaled_size(display: Display) -> tuple[int, int]:
    """The logical size times ``scale_factor``, rounded (at least one pixel): the device-pixel
    size a reader takes where no ``backing_size`` is given."""
    width, height = display.size
    scale = display.scale_factor
    if scale == 1.0:
        return width, height
    return max(1, round(width * scale)), max(1, round(height * scale))


def displays_descriptor(
    displays: Sequence[Display], *, source: str | None = None
) -> dict[str, Any]:
    """The version-1 descriptor of ``displays`` (see the module docstring); an empty list gives
    ``"displays": []`` and ``"primary": None``."""
    if isinstance(displays, Display) or not isinstance(displays, Sequence):
        raise InvalidInputError(
            f"displays must be a sequence of Display, got {type(displays).__name__}"
        )
    if source is not None and not isinstance(source, str):
        raise InvalidInputError(f"source must be a string or None, got {type(source).__name__}")
    for display in displays:
        if not isinstance(display, Display):
            raise InvalidInputError(
                f"displays must hold Display objects, got {type(display).__name__}"
            )
    displays = with_primary(list(displays)) if displays else []  # exactly one primary
    entries = []
    for display in displays:
        entry: dict[str, Any] = {
            "id": display.id,
            "name": display.name,
            "bounds": list(display.bounds),
            "scale_factor": display.scale_factor,
            "primary": display.primary,
        }
        backing = backing_size(display)
        # Left out only where the logical size is the answer both ways: a reader derives a
        # missing one from the scale (a backing as big as the logical size at scale 2 is kept).
        if backing != display.size or backing != _scaled_size(display):
            entry["backing_size"] = list(backing)
        entries.append(entry)
    primary = next((d.id for d in displays if d.primary), None)
    return {
        "version": DESCRIPTOR_VERSION,
        "source": source,
        "primary": primary,
        "displays": entries,
    }


def _entry(entry: Any, index: int) -> Display:
    where = f"descriptor display {index}"
    if not isinstance(entry, dict):
        raise InvalidInputError(f"{where} must be an object, got {type(entry).__name__}")
    missing = [k for k in ("id", "bounds", "scale_factor", "primary", "name") if k not in entry]
    if missing:
        raise InvalidInputError(f"{where} has no {missing}")
    if not isinstance(entry["primary"], bool):
        raise InvalidInputError(f"{where}: 'primary' must be true or false")
    if not isinstance(entry["name"], str):
        raise InvalidInputError(f"{where}: 'name' must be a string")
    scale = entry["scale_factor"]
    # Only a float is inf (math.isinf of an int past float64 raises OverflowError; Display
    # names such a scale itself).
    if isinstance(scale, float) and math.isinf(scale):
        raise InvalidInputError(f"{where}: 'scale_factor' must be finite")
    for key in ("bounds", "backing_size"):
        if key in entry and not isinstance(entry[key], list):
            raise InvalidInputError(f"{where}: {key!r} must be an array")
    try:
        return Display(
            entry["id"],
            tuple(entry["bounds"]),
            scale,
            entry["primary"],
            entry["name"],
            tuple(entry["backing_size"]) if "backing_size" in entry else None,
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None


def _ids(ids: list[int]) -> str:
    """At most ten ids for a message; an id is any non-negative int, so through ``_shown``
    (which never raises for one past the interpreter's digit limit)."""
    more = f" and {len(ids) - 10} more" if len(ids) > 10 else ""
    return _shown(ids[:10]) + more


def displays_from_descriptor(descriptor: Any) -> list[Display]:
    """The displays of a version-1 descriptor (a dict, as ``json.loads`` gives it).

    Raises ``InvalidInputError`` naming what is wrong: another version, a missing or mistyped
    key, a repeated id, not exactly one display flagged primary, a top-level ``primary`` that
    is not that display's id.
    """
    if not isinstance(descriptor, dict):
        raise InvalidInputError(
            f"a displays descriptor is a JSON object, got {type(descriptor).__name__}"
        )
    version = descriptor.get("version")
    if version != DESCRIPTOR_VERSION or isinstance(version, bool):
        raise InvalidInputError(
            f"displays descriptor version must be {DESCRIPTOR_VERSION}, got {_shown(version, 40)}"
        )
    entries = descriptor.get("displays")
    if not isinstance(entries, list):
        raise InvalidInputError("displays descriptor has no 'displays' array")
    displays = [_entry(entry, index) for index, entry in enumerate(entries)]
    repeated = [i for i, n in Counter(d.id for d in displays).items() if n > 1]
    if repeated:
        raise InvalidInputError(f"displays descriptor repeats display ids: {_ids(repeated)}")
    flagged = [d.id for d in displays if d.primary]
    if displays and len(flagged) != 1:
        raise InvalidInputError(
            f"displays descriptor must flag exactly one display primary, got ids {_ids(flagged)}"
        )
    top = descriptor.get("primary")
    if top != (flagged[0] if flagged else None) or isinstance(top, bool):
        raise InvalidInputError(
            f"displays descriptor 'primary' is {_shown(top, 40)}, but the display flagged "
            f"primary is {_shown(flagged[0] if flagged else None, 40)}"
        )
    return displays
