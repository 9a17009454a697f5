"""UI_CONFIG: the overlays' settings (``executed_heat``, ``bbox_heat``), validated when built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from mantis_fast._validate import described, flag, number
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.overlay.colours import _css, _stops_table, parse_colour, parse_stops

# The largest values UI_CONFIG takes, the agent configuration's own limits (mantis_fast.agent
# checks UI_CONFIG with the same numbers): a disc at most the frame's longer side, a trail of at
# most 64 turns (the ring a Trail keeps), a border at most 64 pixels wide.
MAX_RADIUS_SCALE = 1.0
MAX_TRAIL_TURNS = 64
MAX_BORDER_WIDTH = 64.0


@dataclass(frozen=True)
class ExecutedHeatConfig:
    """``UI_CONFIG.executed_heat``. The overlay contract names the keys and their meaning
    (quoted below), not values; these defaults match ``mantis_fast.agent``'s configuration.

    - ``enabled``: bool.
    - ``radius_scale``: "float (relative to max(canvasW,canvasH))", in (0, 1]. 0.035: a 45 px
      disc on a 1280-wide frame.
    - ``stops``: "list of [pos, rgba-string] radial gradient stops"; orange, fading out.
    - ``trail_turns``: "1 disables persistence (one-turn heat only); N > 1 enables a fading
      trail for the last N turns", 1..64. 4, as in the agent's trail scenario (a click that
      changed nothing still marked turns later).
    - ``trail_shrink``: "1.0 disables shrink; < 1.0 shrinks older heat toward midpoints and
      reduces radius", in (0, 1]. 0.8.
    """

    enabled: bool = True
    radius_scale: float = 0.035
    stops: Any = (
        (0.0, "rgba(255,120,0,0.85)"),
        (0.45, "rgba(255,140,0,0.45)"),
        (1.0, "rgba(255,160,0,0)"),
    )
    trail_turns: int = 4
    trail_shrink: float = 0.8
    table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key, put = "UI_CONFIG.executed_heat.", object.__setattr__
        put(self, "enabled", flag(self.enabled, key + "enabled"))
        radius_scale = number(
            self.radius_scale, key + "radius_scale", low=0, high=MAX_RADIUS_SCALE, low_open=True
        )
        put(self, "radius_scale", radius_scale)
        put(self, "stops", parse_stops(self.stops, key + "stops"))
        turns = number(
            self.trail_turns,
            key + "trail_turns",
            low=1,
            high=MAX_TRAIL_TURNS,
            integer=True,
            whole_floats=True,
        )
        put(self, "trail_turns", turns)
        shrink = number(self.trail_shrink, key + "trail_shrink", low=0, high=1, low_open=True)
        put(self, "trail_shrink", shrink)
        put(self, "table", _stops_table(self.stops))


@dataclass(frozen=True)
class BboxHeatConfig:
    """``UI_CONFIG.bbox_heat``: ``enabled`` (bool), ``border`` ("rgba-string"),
    ``border_width`` ("number": pixels in 0..64, 0 = no border), ``fill_stops`` ("list of
    [pos, rgba-string] radial gradient stops"). Blue by default: the overlay contract's "blue
    bbox heatmap"."""

    enabled: bool = True
    border: Any = "rgba(30,120,255,0.9)"
    border_width: float = 2.0
    fill_stops: Any = ((0.0, "rgba(30,120,255,0.30)"), (1.0, "rgba(30,120,255,0.05)"))
    table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key, put = "UI_CONFIG.bbox_heat.", object.__setattr__
        put(self, "enabled", flag(self.enabled, key + "enabled"))
        put(self, "border", parse_colour(self.border, key + "border"))
        width = number(self.border_width, key + "border_width", low=0, high=MAX_BORDER_WIDTH)
        put(self, "border_width", width)
        put(self, "fill_stops", parse_stops(self.fill_stops, key + "fill_stops"))
        put(self, "table", _stops_table(self.fill_stops))


def _section(cls: Any, value: Any, key: str) -> Any:
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"UI_CONFIG.{key}: expected a table, got {described(value)}")
    known = [name for name in cls.__dataclass_fields__ if name != "table"]
    unknown = sorted(set(value) - set(known), key=str)
    if unknown:
        raise InvalidInputError(f"UI_CONFIG.{key}: unknown key {unknown[0]!r}; known: {known}")
    return cls(**value)


@dataclass(frozen=True)
class UIConfig:
    """``UI_CONFIG``, the overlays' settings (``executed_heat``, ``bbox_heat``), validated on
    construction.

    Parameters
    ----------
    executed_heat : ExecutedHeatConfig or mapping, optional
        The orange heat at the actions' points and its trail: ``enabled``, ``radius_scale``,
        ``stops``, ``trail_turns``, ``trail_shrink`` (a mapping may leave keys out). Default:
        ``ExecutedHeatConfig()``.
    bbox_heat : BboxHeatConfig or mapping, optional
        The blue heat over the model's boxes: ``enabled``, ``border``, ``border_width``,
        ``fill_stops`` (a mapping may leave keys out). Default: ``BboxHeatConfig()``.

    Raises
    ------
    InvalidInputError
        A ``ValueError``: a bad value names the key and the value, e.g.
        ``UI_CONFIG.executed_heat.trail_turns: expected an integer >= 1, got int 0``; a
        section that is not a mapping, or an unknown key, is refused too.

    Examples
    --------
    >>> ui = UIConfig.from_dict({"executed_heat": {"trail_turns": 1}})
    >>> ui.executed_heat.trail_turns, ui.bbox_heat.border_width
    (1, 2.0)
    """

    executed_heat: ExecutedHeatConfig = field(default_factory=ExecutedHeatConfig)
    bbox_heat: BboxHeatConfig = field(default_factory=BboxHeatConfig)

    def __post_init__(self) -> None:
        for key, cls in (("executed_heat", ExecutedHeatConfig), ("bbox_heat", BboxHeatConfig)):
            object.__setattr__(self, key, _section(cls, getattr(self, key), key))

    @classmethod
    def from_dict(cls, value: Any) -> UIConfig:
        """A ``UI_CONFIG`` mapping; left-out sections and keys take the defaults.

        Parameters
        ----------
        value : mapping or UIConfig
            ``{"executed_heat": {...}, "bbox_heat": {...}}``; a `UIConfig` is returned as
            it is.

        Returns
        -------
        UIConfig
            The validated settings.

        Raises
        ------
        InvalidInputError
            If ``value`` is not a mapping, has an unknown key, or a value is bad.
        """
        if isinstance(value, UIConfig):
            return value
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"UI_CONFIG: expected a table, got {described(value)}")
        known = ("executed_heat", "bbox_heat")
        unknown = sorted(set(value) - set(known), key=str)
        if unknown:
            raise InvalidInputError(f"UI_CONFIG: unknown key {unknown[0]!r}; known: {list(known)}")
        return cls(**{k: value[k] for k in known if k in value})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in the ``UI_CONFIG`` shape (what ``GET /config`` serves as ``ui``).

        Returns
        -------
        dict
            ``{"executed_heat": {...}, "bbox_heat": {...}}`` with every key, colours as CSS
            strings and stops as ``[pos, colour]`` lists.
        """
        heat, box = self.executed_heat, self.bbox_heat
        return {
            "executed_heat": {
                "enabled": heat.enabled,
                "radius_scale": heat.radius_scale,
                "stops": [[s.position, _css(s[1:])] for s in heat.stops],
                "trail_turns": heat.trail_turns,
                "trail_shrink": heat.trail_shrink,
            },
            "bbox_heat": {
                "enabled": box.enabled,
                "border": _css(box.border),
                "border_width": box.border_width,
                "fill_stops": [[s.position, _css(s[1:])] for s in box.fill_stops],
            },
        }


DEFAULT_UI_CONFIG: dict[str, Any] = UIConfig().to_dict()


@lru_cache(maxsize=1)
def _default_ui() -> UIConfig:
    return UIConfig()
