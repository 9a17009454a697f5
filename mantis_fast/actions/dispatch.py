"""The one dispatcher: a validated action -> screen pixels -> an input backend.

Every front end (the agent loop, the Gym env) sends actions through ``Dispatcher.dispatch``, so
mapping and clamping are written once:

* ``"image"`` points: ``round(x * W / w)`` per axis (half to even) when the model saw an image
  of another size than the screen, else rounded; then clamped to ``[0, W-1] x [0, H-1]``;
* ``"normalized"`` points: 0..1000 of the working area (``crop``) -> pixels, inside the area;
* ``"screen"`` points: rounded and clamped.

An action that names a display (``display_id``, seed 003) is mapped the same way inside that
display's rectangle — image or normalized points onto the display's size, ``"screen"`` points
as its own pixels (``coord_source="backing"`` divided by the scale factor on macOS) — then
translated to global pixels with ``local_to_global`` (the display's origin, the sum rounded half
up) and clamped to the display, so a click meant for one monitor never lands on another. The
display list is read live at every such action (``displays``; by default the input backend's
``monitors``); an unknown id is an ``InvalidInputError`` naming the known ones.

``W, H`` is the *live* screen size, read at every action (``screen_size``; by default the
input backend's, which follows RandR resizes), never a size remembered from start-up.

The input backend is anything with the ``Input`` methods (``move``, ``click``, ``double_click``,
``drag``, ``scroll``, ``key``, ``type`` and ``size``): the X11 layer provides XTest and xdotool
backends, and this module imports neither.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import normalized_to_pixels, scale_brain_to_display
from mantis_fast.geometry.displays import Display, local_to_global, resolve_display

__all__ = ["Dispatched", "Dispatcher", "InputBackend"]

Point = tuple[int, int]
DEFAULT_DRAG_STEPS = 10


class InputBackend(Protocol):
    """What the dispatcher drives (``mantis_fast.Input`` is one)."""

    @property
    def size(self) -> tuple[int, int]: ...
    def move(self, x: float, y: float) -> None: ...
    def click(self, x: float, y: float, button: str = "left", count: int = 1) -> None: ...
    def double_click(self, x: float, y: float, button: str = "left") -> None: ...
    def drag(
        self, x1: float, y1: float, x2: float, y2: float, *, steps: int = ..., duration: float = ...
    ) -> None: ...
    def scroll(self, x: float, y: float, direction: str = "down", notches: int = 1) -> None: ...
    def key(self, combo: str) -> None: ...
    def type(self, text: str) -> None: ...


class Dispatched(NamedTuple):
    """What one dispatch did: the validated action and the screen pixels it touched."""

    action: Action
    pixels: list[Point]
    launched: list[str] | None = None


class Dispatcher:
    """Dispatch actions through ``pointer``.

    Parameters
    ----------
    pointer : InputBackend
        The input backend (``mantis_fast.Input`` is one).
    screen_size : callable, optional
        Returns the live ``(width, height)`` of the screen; None (the default) reads
        ``pointer.size``.
    crop : mapping or tuple, optional
        The working area of normalized actions (``CAPTURE_CROP``); None (the default) is the
        screen.
    launch : callable, optional
        Starts an app for ``launch_app`` (given an argv list). None (the default) refuses that
        action, so a model reply can never start programs where nobody allowed it.
    drag_steps : int, optional
        Steps of a drag that does not say its own; None (the default): 10.
    drag_step_delay : float, default 0.0
        Seconds per step of a drag that does not say its own duration.
    displays : callable, optional
        Returns the live monitors, for actions that name a display; None (the default) uses
        the backend's ``monitors`` (e.g. ``Input.monitors``).
    platform : str, optional
        Passed to `~mantis_fast.geometry.displays.local_to_global`; None (the default) is
        ``sys.platform``.
    sleep : callable, default time.sleep
        Called with the seconds of a ``wait`` action.
    """

    def __init__(
        self,
        pointer: InputBackend,
        *,
        screen_size: Callable[[], tuple[int, int]] | None = None,
        crop: Any = None,
        launch: Callable[[list[str]], None] | None = None,
        drag_steps: int | None = None,
        drag_step_delay: float = 0.0,
        displays: Callable[[], Sequence[Display]] | None = None,
        platform: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pointer = pointer
        self._screen_size = screen_size or (lambda: pointer.size)
        self.crop = crop
        self._launch = launch
        self.drag_steps = drag_steps
        self.drag_step_delay = drag_step_delay
        self._displays = displays
        self.platform = platform
        self._sleep = sleep

    def _screen(self) -> tuple[int, int]:
        """The live (width, height), read now."""
        width, height = self._screen_size()
        return width, height

    def displays(self) -> Sequence[Display]:
        """The monitors now, for actions that name a display.

        Returns
        -------
        sequence of Display
            What the ``displays`` source (else the backend's ``monitors``) gives now.

        Raises
        ------
        InvalidInputError
            There is no display list (no ``displays=`` and no ``monitors`` on the backend).
        """
        source = self._displays or getattr(self.pointer, "monitors", None)
        if source is None:
            raise InvalidInputError(
                "this action names a display, but the dispatcher has no display list "
                "(pass displays=)"
            )
        return source() if callable(source) else source

    def to_screen(
        self,
        action: Action,
        x: float,
        y: float,
        image_size: Sequence[int] | None = None,
        displays: Sequence[Display] | None = None,
    ) -> Point:
        """Map one point of ``action``, in its space, to a screen pixel.

        Parameters
        ----------
        action : Action
            The validated action the point belongs to (its ``space`` and display).
        x, y : float
            The point.
        image_size : sequence of int, optional
            ``(width, height)`` of the image the model saw, for ``"image"`` actions; None (the
            default): the screen's (or the display's) own size.
        displays : sequence of Display, optional
            The monitors, for an action that names a display; None (the default) reads them
            (passing them saves reading the list again).

        Returns
        -------
        tuple of int
            ``(x, y)`` screen pixel, clamped to the screen (to its display when the action
            names one).

        Raises
        ------
        InvalidInputError
            An unknown display, one entirely off the screen, or no display list.
        """
        screen = self._screen()
        if action.display_id is not None:
            displays = displays or self.displays()
            _on_screen(resolve_display(action.display_id, displays=displays), screen)
            point = self._display_pixel(action, x, y, image_size, displays)
            return _clamped(*point, (0, 0, *screen))  # RandR lets a monitor reach off the root
        if action.space == "normalized":
            return normalized_to_pixels(x, y, screen, crop=self.crop)
        if action.space == "image" and image_size is not None and tuple(image_size) != screen:
            return scale_brain_to_display(x, y, image_size, screen, clamp=True)
        return _clamped(round(x), round(y), (0, 0, *screen))

    def _display_pixel(
        self,
        action: Action,
        x: float,
        y: float,
        image_size: Sequence[int] | None,
        displays: Sequence[Display],
    ) -> Point:
        display = resolve_display(action.display_id, displays=displays)
        size, source = display.size, action.coord_source
        if action.space == "normalized":
            x, y = normalized_to_pixels(x, y, size)
            source = "logical"  # now the display's own (logical) pixels
        elif action.space == "image" and image_size is not None and tuple(image_size) != size:
            # The model saw an image of this display resized: map it onto the display first.
            x, y = scale_brain_to_display(x, y, image_size, size, clamp=True)
            source = "logical"
        gx, gy = local_to_global(
            display.id, x, y, source, displays=displays, platform=self.platform
        )
        return _clamped(gx, gy, display.bounds)

    def dispatch(self, action: Action, image_size: Sequence[int] | None = None) -> Dispatched:
        """Validate ``action``, map its points to the live screen, and perform it.

        Parameters
        ----------
        action : Action
            The action.
        image_size : sequence of int, optional
            ``(width, height)`` of the image the model saw, for ``"image"`` actions; None (the
            default): the screen's own size.

        Returns
        -------
        Dispatched
            The validated action, the screen pixels it touched and, for ``launch_app``, the
            argv launched.

        Raises
        ------
        InvalidInputError
            A bad action (not an ``Action``, invalid parameters, an unknown display, or
            ``launch_app`` without a launcher).
        ConnectionLostError
            From the backend, when the server is dead.
        """
        if not isinstance(action, Action):
            kind = type(action)  # its module too: another project's class may be "Action" as well
            name = kind.__qualname__
            if kind.__module__ != "builtins":
                name = f"{kind.__module__}.{name}"
            raise InvalidInputError(f"expected a mantis_fast Action, got {name}")
        action = action.validated()
        kind, params = action.action_type, action.params
        displays = None if action.display_id is None else self.displays()
        pixels = [self.to_screen(action, x, y, image_size, displays) for x, y in action.points()]
        if kind is ActionType.SCROLL and not pixels:  # a scroll without a point: the centre
            screen = self._screen()
            box = (0, 0, *screen)
            if displays is not None:  # the centre of the display's part of the screen
                box = _on_screen(resolve_display(action.display_id, displays=displays), screen)
            left, top, width, height = box
            pixels = [(left + width // 2, top + height // 2)]
        pointer = self.pointer
        if kind is ActionType.MOVE:
            pointer.move(*pixels[0])
        elif kind is ActionType.CLICK:
            pointer.click(*pixels[0], button=params.get("button", "left"))
        elif kind is ActionType.DOUBLE_CLICK:
            pointer.double_click(*pixels[0])
        elif kind is ActionType.RIGHT_CLICK:
            pointer.click(*pixels[0], button="right")
        elif kind is ActionType.SCROLL:
            pointer.scroll(*pixels[0], direction=params["direction"], notches=params["amount"])
        elif kind is ActionType.DRAG:
            self._drag(action, pixels)
        elif kind is ActionType.TYPE:
            pointer.type(params["text"])
        elif kind is ActionType.KEY:
            pointer.key(params["keys"])
        elif kind is ActionType.WAIT:
            self._sleep(params["seconds"])
        elif kind is ActionType.LAUNCH_APP:
            if self._launch is None:
                raise InvalidInputError("launch_app is not allowed here (no app launcher)")
            command = params["command"]
            argv = shlex.split(command) if isinstance(command, str) else list(command)
            self._launch(argv)
            return Dispatched(action, pixels, argv)
        return Dispatched(action, pixels)

    def _drag(self, action: Action, pixels: list[Point]) -> None:
        (x1, y1), (x2, y2) = pixels
        steps = action.params.get("steps") or self.drag_steps or DEFAULT_DRAG_STEPS
        duration = action.params.get("duration", steps * self.drag_step_delay)
        self.pointer.drag(x1, y1, x2, y2, steps=steps, duration=duration)


def _on_screen(display: Display, screen: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The part of ``display`` on the screen; ``InvalidInputError`` when it has none (RandR
    lets a monitor lie wholly off the root: clamping would land on another monitor)."""
    x, y, width, height = display.bounds
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + width, screen[0]), min(y + height, screen[1])
    if left >= right or top >= bottom:
        raise InvalidInputError(
            f"display {display.id} ({display.name or 'unnamed'}) at {display.bounds} is "
            f"entirely off the {screen[0]}x{screen[1]} screen: no pixel of it can be clicked"
        )
    return left, top, right - left, bottom - top


def _clamped(x: int, y: int, box: tuple[int, int, int, int]) -> Point:
    left, top, width, height = box
    return min(max(x, left), left + width - 1), min(max(y, top), top + height - 1)
