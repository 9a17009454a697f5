"""Claude's ``computer`` tool, in process: a drop-in for the computer-use demo's executor.

The reference executor of Anthropic's computer tool (``computer_use_demo/tools/computer.py`` in
``anthropics/claude-quickstarts``) runs every action as an ``xdotool`` shell process, sleeps a
fixed 2 s, then screenshots with ``scrot`` into a file, rescales it with ImageMagick and reads it
back. These classes have its public surface (``name``, ``api_type``, ``options``,
``to_params()``, the async ``__call__`` and its arguments, ``ToolResult``, ``ToolError``), the
same argument checks, scaling targets, rounding and out-of-bounds errors, and do the work in
process: XTest input in one batch, a settle on the screen's own damage events instead of the
sleep, the framebuffer read, resized by the area average and PNG-encoded. Change the
demo's import::

    from mantis_fast.tools.anthropic import ComputerTool20250124, ToolResult

What differs on purpose (docs/parity.md): the settle instead of the sleep
(``screenshot_delay=2.0`` restores it); ``zoom`` crops the screen at the region the model named
(the demo crops its already-scaled screenshot with screen coordinates); inputs the demo passes
to xdotool unchecked (NaN, bools, unknown keys, megabytes of text) are refused with
``ToolError`` before anything is sent; the screen's size is read live, so a resized display is
scaled to its new size on the next call.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any, ClassVar, Literal

from mantis_fast._validate import shown
from mantis_fast.errors import InvalidInputError, MantisError
from mantis_fast.tools import _xdo
from mantis_fast.tools._desktop import ToolDesktop, as_base64, on_desktop, resolve_display

__all__ = [
    "MAX_SCALING_TARGETS",
    "BaseComputerTool",
    "ComputerTool20241022",
    "ComputerTool20250124",
    "ComputerTool20251124",
    "ScalingSource",
    "ToolError",
    "ToolResult",
    "tool_result_block",
]

# The demo's scaling targets, in its order: the first whose aspect ratio is within 0.02 of the
# screen's is used when it is narrower than the screen.
MAX_SCALING_TARGETS: dict[str, dict[str, int]] = {
    "XGA": {"width": 1024, "height": 768},  # 4:3
    "WXGA": {"width": 1280, "height": 800},  # 16:10
    "FWXGA": {"width": 1366, "height": 768},  # ~16:9
}
CLICK_BUTTONS = {
    "left_click": (1, 1),
    "right_click": (3, 1),
    "middle_click": (2, 1),
    "double_click": (1, 2),
    "triple_click": (1, 3),
}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
MAX_DURATION_S = 100  # the demo's limit for hold_key and wait
MAX_TEXT = 100_000  # characters of one ``type``/``key``: the demo would start 2,000 processes
MAX_SCROLL_AMOUNT = 10_000  # wheel clicks of one scroll


def _demo_tool_error() -> type[Exception]:
    """The demo's own ``ToolError`` when its package is importable, else ``Exception``: the
    demo's ``ToolCollection`` catches only its own class, and reports it to the model."""
    try:
        from computer_use_demo.tools.base import ToolError as demo_error
    except Exception:  # not installed, or its imports fail: nothing to be caught by
        return Exception
    return demo_error


class ToolError(_demo_tool_error()):  # type: ignore[misc]
    """An action refused, as the demo's ``ToolError``: ``message`` says why.

    When the demo's package is importable this subclasses its ``ToolError``, so the demo's
    ``ToolCollection`` turns it into the same error result as its own refusals.

    Parameters
    ----------
    message : str
        Why the action was refused.
    """

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.message = message


@dataclass(kw_only=True, frozen=True)
class ToolResult:
    """What an action returns, as the demo's ``ToolResult``.

    Parameters
    ----------
    output : str, optional
        Text for the model (``cursor_position``'s ``"X=..,Y=.."``).
    error : str, optional
        An error text for the model.
    base64_image : str, optional
        The screenshot, a base64 PNG.
    system : str, optional
        A system note shown before the text.
    """

    output: str | None = None
    error: str | None = None
    base64_image: str | None = None
    system: str | None = None

    def __bool__(self) -> bool:
        return any(getattr(self, field.name) for field in fields(self))

    def __add__(self, other: ToolResult) -> ToolResult:
        def combine(mine: str | None, theirs: str | None, concatenate: bool = True) -> str | None:
            if mine and theirs:
                if concatenate:
                    return mine + theirs
                raise InvalidInputError("Cannot combine tool results")
            return mine or theirs

        return ToolResult(
            output=combine(self.output, other.output),
            error=combine(self.error, other.error),
            base64_image=combine(self.base64_image, other.base64_image, False),
            system=combine(self.system, other.system),
        )

    def replace(self, **changes: Any) -> ToolResult:
        """Return a copy with ``changes`` applied.

        Parameters
        ----------
        **changes
            Fields and their new values.

        Returns
        -------
        ToolResult
            The copy.
        """
        return replace(self, **changes)


def tool_result_block(result: Any, tool_use_id: str) -> dict[str, Any]:
    """The Messages API ``tool_result`` content block for an action's result.

    The demo's ``_make_api_tool_result``: an error becomes ``is_error`` with its text; otherwise
    the output text (after the system note) and the screenshot as a base64 PNG image block.

    Parameters
    ----------
    result : ToolResult
        What the action returned (any object with the four fields).
    tool_use_id : str
        The ``id`` of the ``tool_use`` block it answers.

    Returns
    -------
    dict
        ``{"type": "tool_result", "content": [...], "tool_use_id": ..., "is_error": ...}``.
    """

    def with_system(text: str) -> str:
        return f"<system>{result.system}</system>\n{text}" if result.system else text

    blocks: list[dict[str, Any]] = []
    if result.output:
        blocks.append({"type": "text", "text": with_system(result.output)})
    if result.base64_image:
        source = {"type": "base64", "media_type": "image/png", "data": result.base64_image}
        blocks.append({"type": "image", "source": source})
    content = with_system(result.error) if result.error else blocks
    return {
        "type": "tool_result",
        "content": content,
        "tool_use_id": tool_use_id,
        "is_error": bool(result.error),
    }


class ScalingSource(str, Enum):
    """Which way ``scale_coordinates`` maps: from the screen (``COMPUTER``) or the model."""

    COMPUTER = "computer"
    API = "api"


def _env_int(name: str) -> int:
    """``int(os.getenv(name) or 0)``, as the demo reads WIDTH and HEIGHT, with a clear error."""
    value = os.getenv(name) or "0"
    try:
        return int(value)
    except ValueError:
        raise ToolError(f"${name} must be an integer, got {value!r}") from None


class BaseComputerTool:
    """Claude's computer tool on an X display; the versions below add their actions.

    Parameters
    ----------
    width, height : int, optional
        The screen size the tool advertises before it has looked at the display. None
        (default) reads ``$WIDTH`` / ``$HEIGHT`` as the demo does; once connected the
        display's own size is used (it is read live, so a resize is followed).
    display_num : int, optional
        The X display number; None (default) reads ``$DISPLAY_NUM`` as the demo does, else
        ``display`` or ``$DISPLAY``.
    display : str, optional
        An X display name (``":1"``), for callers that have one rather than a number.
    screenshot_delay : float, optional
        Seconds to sleep after an action before the screenshot, as the demo's fixed 2.0;
        None (default) waits for the screen to settle instead (its first damage, then a
        quiet window learned from the app, at most 2 s).
    scaling : bool, default True
        Scale screenshots and coordinates to the demo's targets (XGA/WXGA/FWXGA).
    cursor : bool, default True
        Draw the pointer into screenshots, as the demo's ``scrot -p`` does.
    """

    name: ClassVar[Literal["computer"]] = "computer"
    api_type: ClassVar[str] = ""
    actions: ClassVar[frozenset[str]] = frozenset()
    _screenshot_delay: float | None = None

    def __init__(
        self,
        *,
        width: int | None = None,
        height: int | None = None,
        display_num: int | None = None,
        display: str | None = None,
        screenshot_delay: float | None = None,
        scaling: bool = True,
        cursor: bool = True,
    ) -> None:
        if display_num is None and (number := os.getenv("DISPLAY_NUM")) is not None:
            try:
                display_num = int(number)
            except ValueError:
                raise ToolError(f"$DISPLAY_NUM must be an integer, got {number!r}") from None
        self.display_num = display_num
        self._display = f":{display_num}" if display_num is not None else display
        self._size_hint = (
            width if width is not None else _env_int("WIDTH"),
            height if height is not None else _env_int("HEIGHT"),
        )
        if screenshot_delay is not None and not (
            isinstance(screenshot_delay, (int, float))
            and not isinstance(screenshot_delay, bool)
            and 0 <= screenshot_delay <= MAX_DURATION_S
        ):
            raise ToolError(
                f"screenshot_delay must be seconds in 0..{MAX_DURATION_S}, "
                f"got {shown(screenshot_delay)}"
            )
        self._screenshot_delay = screenshot_delay
        self._scaling_enabled = bool(scaling)
        self._cursor = bool(cursor)

    # -- the screen -------------------------------------------------------------------------
    @property
    def display(self) -> str:
        """The X display this tool drives (``NoDisplayError`` if none is named anywhere)."""
        return resolve_display(self._display)

    def _on_desktop(self, work: Callable[[ToolDesktop], Any]) -> Any:
        try:
            return on_desktop(self.display, work)
        except ToolError:
            raise
        except MantisError as exc:  # a dead or hung server, no display: the model is told
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @property
    def width(self) -> int:
        """The screen's width in pixels, read live."""
        return self._screen_size()[0]

    @property
    def height(self) -> int:
        """The screen's height in pixels, read live."""
        return self._screen_size()[1]

    def _screen_size(self) -> tuple[int, int]:
        try:
            return self._on_desktop(lambda desktop: desktop.size)
        except ToolError:
            if all(self._size_hint):  # advertise $WIDTH x $HEIGHT until the display is up
                return self._size_hint
            raise

    @property
    def options(self) -> dict[str, Any]:
        """``display_width_px``, ``display_height_px`` (scaled) and ``display_number``."""
        width, height = self.scale_coordinates(ScalingSource.COMPUTER, *self._screen_size())
        return {
            "display_width_px": width,
            "display_height_px": height,
            "display_number": self.display_num,
        }

    def to_params(self) -> dict[str, Any]:
        """The tool's definition for the Messages API's ``tools`` list.

        Returns
        -------
        dict
            ``{"name": "computer", "type": api_type, **options}``.
        """
        return {"name": self.name, "type": self.api_type, **self.options}

    def scale_coordinates(
        self, source: ScalingSource, x: int, y: int, size: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """Map a point between the screen and the model's scaled image, as the demo does.

        Parameters
        ----------
        source : ScalingSource
            ``API`` maps the model's point up to the screen (refusing one past the screen's
            size, as the demo does); ``COMPUTER`` maps a screen point down.
        x, y : int
            The point.
        size : tuple of int, optional
            The screen size; None (default) reads it.

        Returns
        -------
        tuple of int
            The mapped point, rounded half to even.

        Raises
        ------
        ToolError
            If ``source`` is ``API`` and the point lies past the screen.
        """
        if not self._scaling_enabled:
            return x, y
        width, height = size or self._screen_size()
        target = _scaling_target(width, height)
        if target is None:
            return x, y
        # The demo's expressions, float for float: ties round the same way.
        x_factor, y_factor = target[0] / width, target[1] / height
        if source == ScalingSource.API:
            if x > width or y > height:
                raise ToolError(f"Coordinates {x}, {y} are out of bounds")
            return round(x / x_factor), round(y / y_factor)
        return round(x * x_factor), round(y * y_factor)

    def validate_and_get_coordinates(
        self, coordinate: Any = None, size: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """Check a model's ``[x, y]`` as the demo does and map it to the screen.

        Parameters
        ----------
        coordinate : list of int
            Two non-negative integers (a JSON array; bools, floats and tuples are refused).
        size : tuple of int, optional
            The screen size; None (default) reads it.

        Returns
        -------
        tuple of int
            The screen point.

        Raises
        ------
        ToolError
            If ``coordinate`` is not two non-negative integers, or lies past the screen.
        """
        if not isinstance(coordinate, list) or len(coordinate) != 2:
            raise ToolError(f"{coordinate} must be a tuple of length 2")
        if not all(type(i) is int and i >= 0 for i in coordinate):
            raise ToolError(f"{coordinate} must be a tuple of non-negative ints")
        return self.scale_coordinates(ScalingSource.API, coordinate[0], coordinate[1], size)

    # -- actions ----------------------------------------------------------------------------
    async def __call__(
        self,
        *,
        action: str,
        text: str | None = None,
        coordinate: Any = None,
        start_coordinate: Any = None,
        scroll_direction: str | None = None,
        scroll_amount: int | None = None,
        duration: float | None = None,
        key: str | None = None,
        region: Any = None,
        **kwargs: Any,
    ) -> ToolResult:
        """Run one action of the model's ``tool_use`` input and return its result.

        Parameters
        ----------
        action : str
            One of the version's actions (``actions``).
        text : str, optional
            The text of ``type``, the keys of ``key`` / ``hold_key``, the held key of
            ``scroll``.
        coordinate : list of int, optional
            ``[x, y]`` in the model's (scaled) image.
        start_coordinate : list of int, optional
            Where ``left_click_drag`` starts.
        scroll_direction : {"up", "down", "left", "right"}, optional
            ``scroll``'s direction.
        scroll_amount : int, optional
            ``scroll``'s wheel clicks.
        duration : float, optional
            Seconds of ``hold_key`` and ``wait``.
        key : str, optional
            A key held during a click (``"shift"``, ``"ctrl"``).
        region : list of int, optional
            ``zoom``'s ``[x0, y0, x1, y1]`` in the model's image.
        **kwargs
            Refused when not None: a key the tool's schema does not have is a caller's bug
            (the demo ignores it; docs/parity.md).

        Returns
        -------
        ToolResult
            The screenshot after the action (``base64_image``), or ``cursor_position``'s
            text.

        Raises
        ------
        ToolError
            If the action or an argument is refused (the demo's conditions and more), or the
            display cannot be reached.
        """
        if not isinstance(action, str) or action not in self.actions:
            raise ToolError(f"Invalid action: {action}")
        unknown = sorted(str(name) for name, value in kwargs.items() if value is not None)
        if unknown:
            raise ToolError(
                f"{action} was given {', '.join(map(repr, unknown))}, which the computer tool "
                "does not take (its inputs: action, text, coordinate, start_coordinate, "
                "scroll_direction, scroll_amount, duration, key, region)"
            )
        plan = self._plan(
            action,
            text=text,
            coordinate=coordinate,
            start_coordinate=start_coordinate,
            scroll_direction=scroll_direction,
            scroll_amount=scroll_amount,
            duration=duration,
            key=key,
            region=region,
        )
        return await plan()

    # Each action is checked here, in the demo's order of checks, before any event is sent; the
    # plan returned does the work.
    def _plan(self, action: str, **args: Any) -> Callable[[], Any]:
        text, coordinate = args["text"], args["coordinate"]
        if action in ("mouse_move", "left_click_drag"):
            if coordinate is None:
                raise ToolError(f"coordinate is required for {action}")
            if text is not None:
                raise ToolError(f"text is not accepted for {action}")
            if action == "mouse_move":
                return self._act([self._motion(coordinate)])
            if args["start_coordinate"] is None:
                raise ToolError(f"start_coordinate is required for {action}")
            press, release = _xdo.click_ops(1, 1)
            start = self._motion(args["start_coordinate"])
            return self._act([start, press, self._motion(coordinate), release])
        if action in ("key", "type"):
            if text is None:
                raise ToolError(f"text is required for {action}")
            if coordinate is not None:
                raise ToolError(f"coordinate is not accepted for {action}")
            if not isinstance(text, str):
                raise ToolError(f"{shown(text)} must be a string")
            if len(text) > MAX_TEXT:
                raise ToolError(f"text is too long: {len(text)} characters, at most {MAX_TEXT}")
            if action == "key":
                sequence = self._keys(text)
                if not sequence:
                    raise ToolError(f"text must name at least one key, got {text!r}")
                return self._act(_xdo.key_ops(sequence))
            return self._act(_xdo.type_ops(text))
        if action in ("screenshot", "cursor_position"):
            if text is not None:
                raise ToolError(f"text is not accepted for {action}")
            if coordinate is not None:
                raise ToolError(f"coordinate is not accepted for {action}")
            if action == "screenshot":
                return self.screenshot
            return self._cursor_position
        if action in CLICK_BUTTONS:
            return self._plan_click(action, text, coordinate, args["key"])
        raise ToolError(f"Invalid action: {action}")

    def _plan_click(self, action: str, text: Any, coordinate: Any, key: Any) -> Callable[[], Any]:
        # computer_20241022: no coordinate, no held key (the pointer is where mouse_move left it).
        if text is not None:
            raise ToolError(f"text is not accepted for {action}")
        if coordinate is not None:
            raise ToolError(f"coordinate is not accepted for {action}")
        button, count = CLICK_BUTTONS[action]
        return self._act(_xdo.click_ops(button, count))

    def _keys(self, text: str) -> list[list[int]]:
        """xdotool ``key``'s chords of ``text``, every name checked (``ToolError`` naming it)."""
        try:
            return _xdo.chords(text)
        except MantisError as exc:
            raise ToolError(f"{exc} in {shown(text)}") from None

    def _motion(self, coordinate: Any) -> Callable[[tuple[int, int]], tuple]:
        """A pointer motion to the model's ``coordinate``, made once the screen size is known:
        on the connection that sends it, so a restarted or resized screen is scaled right."""
        return lambda size: _xdo.clamp_point(
            *self.validate_and_get_coordinates(coordinate, size), size
        )

    # -- doing it ---------------------------------------------------------------------------
    def _act(self, ops: list[Any]) -> Callable[[], Any]:
        """The plan of an input action: send ``ops`` (an op, or a function of the screen size
        that makes one), settle, screenshot."""

        async def run() -> ToolResult:
            return await self._in_thread(lambda desktop: self._send_and_shoot(desktop, ops))

        return run

    def _send_and_shoot(self, desktop: ToolDesktop, ops: list[Any]) -> ToolResult:
        if ops:
            size = desktop.size  # every op is made (and checked) before any is sent
            desktop.send([op(size) if callable(op) else op for op in ops])
        png = desktop.settle_and_png(
            self._screenshot_delay, self._scaled(desktop), cursor=self._cursor
        )
        return ToolResult(base64_image=as_base64(png))

    def _scaled(self, desktop: ToolDesktop) -> tuple[int, int]:
        """The size of the model's image of the screen now."""
        size = desktop.size
        return self.scale_coordinates(ScalingSource.COMPUTER, *size, size=size)

    async def screenshot(self) -> ToolResult:
        """Take a screenshot of the screen, scaled as the model sees it.

        Returns
        -------
        ToolResult
            ``base64_image``: the PNG, base64.
        """
        return await self._in_thread(
            lambda desktop: ToolResult(
                base64_image=as_base64(desktop.png(self._scaled(desktop), cursor=self._cursor))
            )
        )

    async def _cursor_position(self) -> ToolResult:
        def where(desktop: ToolDesktop) -> ToolResult:
            size = desktop.size
            x, y = self.scale_coordinates(ScalingSource.COMPUTER, *desktop.pointer(), size=size)
            return ToolResult(output=f"X={x},Y={y}")

        return await self._in_thread(where)

    async def _in_thread(self, work: Callable[[ToolDesktop], Any]) -> Any:
        # Settling and encoding block for milliseconds: off the event loop, as the demo's
        # subprocesses are.
        return await asyncio.to_thread(self._on_desktop, work)

    def close(self) -> None:
        """Nothing to close: the display's connection is shared by the process's tools and
        closed at exit."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} display={self._display or os.getenv('DISPLAY')!r}>"


def _scaling_target(width: int, height: int) -> tuple[int, int] | None:
    """The demo's choice: the first target whose aspect ratio is within 0.02 of the screen's
    (its loop stops there), used only when it is narrower than the screen."""
    if height <= 0:
        return None
    ratio = width / height
    for dimension in MAX_SCALING_TARGETS.values():
        if abs(dimension["width"] / dimension["height"] - ratio) < 0.02:
            if dimension["width"] < width:
                return dimension["width"], dimension["height"]
            return None
    return None


class ComputerTool20241022(BaseComputerTool):
    """Claude's ``computer_20241022`` tool (see `BaseComputerTool` for the parameters)."""

    api_type: ClassVar[str] = "computer_20241022"
    actions: ClassVar[frozenset[str]] = frozenset(
        [
            "key",
            "type",
            "mouse_move",
            "left_click",
            "left_click_drag",
            "right_click",
            "middle_click",
            "double_click",
            "screenshot",
            "cursor_position",
        ]
    )


class ComputerTool20250124(BaseComputerTool):
    """Claude's ``computer_20250124`` tool: scroll, held keys, mouse down/up, hold_key, wait,
    triple_click, and clicks at a coordinate (see `BaseComputerTool` for the parameters)."""

    api_type: ClassVar[str] = "computer_20250124"
    actions: ClassVar[frozenset[str]] = ComputerTool20241022.actions | frozenset(
        ["left_mouse_down", "left_mouse_up", "scroll", "hold_key", "wait", "triple_click"]
    )

    def _plan(self, action: str, **args: Any) -> Callable[[], Any]:
        text, coordinate = args["text"], args["coordinate"]
        if action in ("left_mouse_down", "left_mouse_up"):
            if coordinate is not None:
                raise ToolError(f"coordinate is not accepted for {action=}.")
            return self._act([(_xdo.BUTTON, 1, action == "left_mouse_down")])
        if action == "scroll":
            return self._plan_scroll(text, coordinate, args)
        if action in ("hold_key", "wait"):
            duration = args["duration"]
            if (
                duration is None
                or isinstance(duration, bool)
                or not isinstance(duration, (int, float))
            ):
                raise ToolError(f"{duration=} must be a number")
            if not math.isfinite(duration):
                raise ToolError(f"{duration=} must be finite")
            if duration < 0:
                raise ToolError(f"{duration=} must be non-negative")
            if duration > MAX_DURATION_S:
                raise ToolError(f"{duration=} is too long.")
            if action == "hold_key":
                if text is None:
                    raise ToolError(f"text is required for {action}")
                if not isinstance(text, str):
                    raise ToolError(f"{shown(text)} must be a string")
                return self._hold(self._keys(text), float(duration))
            return self._wait(float(duration))
        return super()._plan(action, **args)

    def _plan_click(self, action: str, text: Any, coordinate: Any, key: Any) -> Callable[[], Any]:
        if text is not None:
            raise ToolError(f"text is not accepted for {action}")
        ops = [] if coordinate is None else [self._motion(coordinate)]
        held = self._held(key)
        button, count = CLICK_BUTTONS[action]
        return self._act(
            [*ops, *_xdo.press(held), *_xdo.click_ops(button, count), *_xdo.release(held)]
        )

    def _plan_scroll(self, text: Any, coordinate: Any, args: dict[str, Any]) -> Callable[[], Any]:
        direction, amount = args["scroll_direction"], args["scroll_amount"]
        if direction is None or direction not in SCROLL_BUTTONS:
            raise ToolError(
                f"scroll_direction={direction!r} must be 'up', 'down', 'left', or 'right'"
            )
        if type(amount) is not int or amount < 0:
            raise ToolError(f"scroll_amount={amount!r} must be a non-negative int")
        if amount > MAX_SCROLL_AMOUNT:
            raise ToolError(f"scroll_amount={amount!r} is too large: at most {MAX_SCROLL_AMOUNT}")
        ops = [] if coordinate is None else [self._motion(coordinate)]
        held = self._held(text)  # the demo holds ``text`` as keys during a scroll
        return self._act(
            [
                *ops,
                *_xdo.press(held),
                *_xdo.click_ops(SCROLL_BUTTONS[direction], amount),
                *_xdo.release(held),
            ]
        )

    def _held(self, keys: Any) -> list[int]:
        """The keysyms of a key held during a click or scroll (``"shift"``, ``"ctrl+alt"``)."""
        if not keys:
            return []
        if not isinstance(keys, str):
            raise ToolError(f"{shown(keys)} must be a string of key names")
        sequence = self._keys(keys)
        return [keysym for chord in sequence for keysym in chord]

    def _hold(self, sequence: list[list[int]], duration: float) -> Callable[[], Any]:
        keysyms = [keysym for chord in sequence for keysym in chord]

        async def run() -> ToolResult:
            await self._in_thread(lambda desktop: desktop.send(_xdo.press(keysyms)))
            try:
                await asyncio.sleep(duration)
            finally:  # a cancelled hold still lets go of its keys
                await self._in_thread(lambda desktop: desktop.send(_xdo.release(keysyms)))
            return await self._act([])()

        return run

    def _wait(self, duration: float) -> Callable[[], Any]:
        async def run() -> ToolResult:
            await asyncio.sleep(duration)
            return await self.screenshot()

        return run


class ComputerTool20251124(ComputerTool20250124):
    """Claude's ``computer_20251124`` tool: ``zoom`` on a region at the screen's own
    resolution (see `BaseComputerTool` for the parameters)."""

    api_type: ClassVar[str] = "computer_20251124"
    actions: ClassVar[frozenset[str]] = ComputerTool20250124.actions | {"zoom"}

    @property
    def options(self) -> dict[str, Any]:
        """The 20250124 options and ``enable_zoom: True``."""
        return {**super().options, "enable_zoom": True}

    def _plan(self, action: str, **args: Any) -> Callable[[], Any]:
        if action != "zoom":
            return super()._plan(action, **args)
        region = args["region"]
        if region is None or not isinstance(region, (list, tuple)) or len(region) != 4:
            raise ToolError(f"{region=} must be a tuple of 4 coordinates (x0, y0, x1, y1)")
        if not all(type(c) is int and c >= 0 for c in region):
            raise ToolError(f"{region=} must contain non-negative integers")

        async def run() -> ToolResult:
            def zoomed(desktop: ToolDesktop) -> ToolResult:
                size = desktop.size
                x0, y0 = self.scale_coordinates(ScalingSource.API, region[0], region[1], size)
                x1, y1 = self.scale_coordinates(ScalingSource.API, region[2], region[3], size)
                x0, x1 = min(x0, size[0]), min(x1, size[0])
                y0, y1 = min(y0, size[1]), min(y1, size[1])
                if x1 <= x0 or y1 <= y0:
                    raise ToolError(f"{region=} is empty on the {size[0]}x{size[1]} screen")
                png = desktop.png(region=(x0, y0, x1 - x0, y1 - y0), cursor=self._cursor)
                return ToolResult(base64_image=as_base64(png))

            return await self._in_thread(zoomed)

        return run
