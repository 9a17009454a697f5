"""The trail: a ring of the last few turns' action marks, each older turn fainter and smaller."""

from __future__ import annotations

from collections import deque
from typing import Any

from mantis_fast._validate import number
from mantis_fast.pixels.overlay.config import MAX_TRAIL_TURNS, UIConfig, _default_ui
from mantis_fast.pixels.overlay.draw import Mark, _check_coords, _marks


class Trail:
    """The last ``turns`` (1..64) turns' action marks, for the overlay contract's fading,
    shrinking heat trail.

    "The panel keeps the last N turns of actions in a small in-memory ring buffer": a deque
    bounded to ``turns`` entries, each a turn's marks with their coordinate space (normalized
    marks land on whatever frame size a later turn has). ``record`` with the newest entry's
    ``seq`` replaces it (the same turn annotated again); a smaller ``seq`` is a new run and
    clears the trail. Keep one per run and pass it to `annotate`.

    Parameters
    ----------
    turns : int, default 4
        How many turns are kept, 1..64 (``UI_CONFIG.executed_heat.trail_turns``); 1 is
        one-turn heat, no persistence.
    shrink : float, default 0.8
        Per turn of age, the scale of the radius, line width and drag half-length, in
        (0, 1] (``trail_shrink``); 1.0 disables shrink.

    Raises
    ------
    InvalidInputError
        If ``turns`` or ``shrink`` is out of range.
    """

    def __init__(self, turns: int = 4, shrink: float = 0.8) -> None:
        self.turns: int = number(
            turns, "trail_turns", low=1, high=MAX_TRAIL_TURNS, integer=True, whole_floats=True
        )
        self.shrink: float = number(shrink, "trail_shrink", low=0, high=1, low_open=True)
        self._entries: deque[tuple[int, str, tuple[Mark, ...]]] = deque(maxlen=self.turns)

    @classmethod
    def from_ui_config(cls, ui_config: Any = None) -> Trail:
        """A trail with ``UI_CONFIG.executed_heat.trail_turns`` and ``trail_shrink``.

        Parameters
        ----------
        ui_config : UIConfig or mapping, optional
            A `UIConfig` or a ``UI_CONFIG`` mapping; None (the default) is ``UIConfig()``.

        Returns
        -------
        Trail
            An empty trail.

        Raises
        ------
        InvalidInputError
            If ``ui_config`` is not valid.
        """
        heat = (_default_ui() if ui_config is None else UIConfig.from_dict(ui_config)).executed_heat
        return cls(heat.trail_turns, heat.trail_shrink)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def last_seq(self) -> int | None:
        """The ``seq`` of the newest turn held, or None when the trail is empty."""
        return self._entries[-1][0] if self._entries else None

    def clear(self) -> None:
        """Forget every turn held."""
        self._entries.clear()

    def record(self, actions: Any, *, seq: int | None = None, coords: str = "pixels") -> int:
        """Add one turn's actions; return the seq used.

        Parameters
        ----------
        actions : iterable
            The turn's actions, validated as `annotate` does.
        seq : int, optional
            The turn number: the newest entry's ``seq`` replaces that entry (the same turn
            annotated again), a smaller one is a new run and clears the trail first. None
            (the default) is `last_seq` plus one (1 for an empty trail).
        coords : {"pixels", "normalized"}, default "pixels"
            The space of the actions' points, as for `annotate`.

        Returns
        -------
        int
            The ``seq`` recorded.

        Raises
        ------
        InvalidInputError
            If ``actions``, ``seq`` or ``coords`` is not valid.
        """
        marks, coords, last = _marks(actions), _check_coords(coords), self.last_seq
        seq = (1 if last is None else last + 1) if seq is None else seq
        seq = number(seq, "seq", low=-(2**63), high=2**63 - 1, integer=True)
        if last is not None and seq == last:
            self._entries.pop()  # the same turn again
        elif last is not None and seq < last:
            self._entries.clear()  # a new run
        self._entries.append((seq, coords, marks))
        return seq

    def layers(self) -> list[tuple[float, float, str, tuple[Mark, ...]]]:
        """What to draw for each turn held, oldest first.

        Returns
        -------
        list of tuple
            ``(alpha, scale, coords, marks)`` per turn: with L turns held, turn ``i`` has
            alpha ``(i + 1) / L`` and scale ``shrink ** (L - 1 - i)``.
        """
        count = len(self._entries)
        return [
            ((i + 1) / count, self.shrink ** (count - 1 - i), coords, marks)
            for i, (_, coords, marks) in enumerate(self._entries)
        ]
