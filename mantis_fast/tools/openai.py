"""OpenAI's computer tool, in process: the Agents SDK's ``Computer`` and a ``computer_call`` runner.

The Agents SDK (``openai-agents``) drives a desktop through a ``Computer`` / ``AsyncComputer``
object; the CUA sample app's ``DockerComputer`` implements it with one ``docker exec ...
xdotool`` process per action (a scroll of N clicks is N processes), screenshots through
ImageMagick ``import`` and a fixed 1 s ``wait``. ``Computer`` and ``AsyncComputer`` here
implement the same interface (and subclass the SDK's classes when it is installed) with XTest
input in one batch, the framebuffer read and the fast PNG encoder; a screenshot taken after an
input first waits for the screen to take the input in (its damage events, not a sleep).

``run_computer_call`` executes a Responses API ``computer_call`` item (the single ``action`` or
the batched ``actions``) and returns the ``computer_call_output`` item to send back; pending
safety checks are handed to the caller's ``acknowledge`` and never acknowledged silently.

Coordinates are screen pixels (the screenshots are the screen's own size, as the sample app's);
points off the screen are clamped as X clamps xdotool's. Refused input raises a ``MantisError``
(``InvalidInputError`` for arguments) before any event is sent.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from mantis_fast._validate import shown
from mantis_fast.errors import InvalidInputError, MantisError
from mantis_fast.tools import _xdo
from mantis_fast.tools._desktop import ToolDesktop, as_base64, on_desktop, resolve_display
from mantis_fast.x11.input.keys import keysym_for_name

__all__ = [
    "BUTTONS",
    "SCROLL_PIXELS_PER_CLICK",
    "AsyncComputer",
    "Computer",
    "SafetyCheckError",
    "run_computer_call",
]

try:  # the SDK's interfaces, when it is installed: ours are then its subclasses
    from agents.computer import AsyncComputer as _SDKAsyncComputer
    from agents.computer import Computer as _SDKComputer
except ImportError:
    _SDKComputer = _SDKAsyncComputer = object  # type: ignore[assignment,misc]

#: The Responses API's buttons as X buttons (8 and 9 are the side buttons: back, forward).
BUTTONS = {"left": 1, "right": 3, "wheel": 2, "middle": 2, "back": 8, "forward": 9}
#: Pixels Chromium on X11 scrolls for one wheel click (Chromium 156; measured by
#: tests/tools/test_tools_chromium.py).
SCROLL_PIXELS_PER_CLICK = 120
MAX_SCROLL_CLICKS = 10_000
MAX_TEXT = 100_000  # characters of one ``type``
MAX_WAIT_MS = 100_000
MAX_PATH = 10_000  # points of one drag


class SafetyCheckError(MantisError, PermissionError):
    """A ``computer_call`` carried safety checks the caller did not acknowledge."""

    def __init__(self, checks: list[dict[str, Any]]) -> None:
        self.checks = checks
        messages = "; ".join(str(check.get("message", check)) for check in checks)
        super().__init__(f"unacknowledged safety checks: {messages}")


class _Driver:
    """The work behind both interfaces, synchronous: check, send one batch, settle, shoot."""

    def __init__(self, display: str | None, environment: str, wait_ms: float | None) -> None:
        if wait_ms is not None:
            _milliseconds(wait_ms, "wait_ms")
        self._display = display
        self.environment = environment
        self._wait_ms = wait_ms
        self._unsettled = False  # an input was sent since the last screenshot

    @property
    def display(self) -> str:
        return resolve_display(self._display)

    def on_desktop(self, work: Callable[[ToolDesktop], Any]) -> Any:
        return on_desktop(self.display, work)

    def size(self) -> tuple[int, int]:
        return self.on_desktop(lambda desktop: desktop.size)

    def screenshot(self) -> str:
        def shoot(desktop: ToolDesktop) -> str:
            if self._unsettled:  # an input since the last screenshot: wait for the screen
                self._unsettled = False
                return as_base64(desktop.settle_and_png(None))
            return as_base64(desktop.png())

        return self.on_desktop(shoot)

    def send(self, build: Callable[[tuple[int, int]], list[tuple]]) -> None:
        def run(desktop: ToolDesktop) -> None:
            desktop.send(build(desktop.size))

        self.on_desktop(run)
        self._unsettled = True

    def click(self, x: Any, y: Any, button: Any, keys: Any, count: int = 1) -> None:
        if button not in BUTTONS:
            raise InvalidInputError(f"button must be one of {sorted(BUTTONS)}, got {shown(button)}")
        point, held = _point(x, y), _keys(keys, "keys")
        self.send(
            lambda size: [
                _xdo.clamp_point(*point, size),
                *_xdo.press(held),
                *_xdo.click_ops(BUTTONS[button], count),
                *_xdo.release(held),
            ]
        )

    def scroll(self, x: Any, y: Any, scroll_x: Any, scroll_y: Any, keys: Any) -> None:
        point, held = _point(x, y), _keys(keys, "keys")
        wheel = _wheel(scroll_y, "scroll_y", 5, 4) + _wheel(scroll_x, "scroll_x", 7, 6)
        self.send(
            lambda size: [
                _xdo.clamp_point(*point, size),
                *_xdo.press(held),
                *wheel,
                *_xdo.release(held),
            ]
        )

    def type(self, text: Any) -> None:
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {shown(text)}")
        if len(text) > MAX_TEXT:
            raise InvalidInputError(f"text is too long: {len(text)} characters, at most {MAX_TEXT}")
        ops = _xdo.type_ops(text)
        self.send(lambda size: ops)

    def wait(self, ms: Any) -> None:
        if ms is None and self._wait_ms is None:  # the screen's own pace: until it is quiet
            self.on_desktop(lambda desktop: desktop.wait_until_quiet())
            return
        time.sleep(_milliseconds(self._wait_ms if ms is None else ms, "ms") / 1000)

    def move(self, x: Any, y: Any, keys: Any) -> None:
        point, held = _point(x, y), _keys(keys, "keys")
        self.send(
            lambda size: [*_xdo.press(held), _xdo.clamp_point(*point, size), *_xdo.release(held)]
        )

    def keypress(self, keys: Any) -> None:
        chord = _keys(keys, "keys")
        if not chord:
            raise InvalidInputError(f"keys must name at least one key, got {shown(keys)}")
        self.send(lambda size: _xdo.press(chord) + _xdo.release(chord))

    def drag(self, path: Any, keys: Any) -> None:
        points = _path(path)
        held = _keys(keys, "keys")
        if not points:
            return
        self.send(
            lambda size: [
                *_xdo.press(held),
                _xdo.clamp_point(*points[0], size),
                (_xdo.BUTTON, 1, True),
                *(_xdo.clamp_point(*p, size) for p in points[1:]),
                (_xdo.BUTTON, 1, False),
                *_xdo.release(held),
            ]
        )


def _milliseconds(ms: Any, name: str) -> float:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= MAX_WAIT_MS:
        raise InvalidInputError(f"{name} must be milliseconds in 0..{MAX_WAIT_MS}, got {shown(ms)}")
    return float(ms)


def _point(x: Any, y: Any) -> tuple[int, int]:
    return _coordinate(x, "x"), _coordinate(y, "y")


def _coordinate(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number of pixels, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    if abs(value) > 1 << 31:
        raise InvalidInputError(f"{name} is far off any screen: {shown(value)}")
    return round(value)


def _keys(keys: Any, what: str) -> list[int]:
    """Keysyms of a list of key names (``["CTRL", "c"]``), each checked; None is none."""
    if keys is None:
        return []
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
        raise InvalidInputError(f"{what} must be a list of key names, got {shown(keys)}")
    return [keysym_for_name(name) for name in keys]


def _wheel(pixels: Any, name: str, forward: int, backward: int) -> list[tuple]:
    """Wheel clicks for a scroll of ``pixels`` (positive: down / right), at least one for any
    non-zero distance."""
    if (
        isinstance(pixels, bool)
        or not isinstance(pixels, (int, float))
        or not math.isfinite(pixels)
    ):
        raise InvalidInputError(f"{name} must be a finite number of pixels, got {shown(pixels)}")
    if pixels == 0:
        return []
    clicks = max(1, round(abs(pixels) / SCROLL_PIXELS_PER_CLICK))
    if clicks > MAX_SCROLL_CLICKS:
        raise InvalidInputError(
            f"{name}={pixels!r} is too far: at most {MAX_SCROLL_CLICKS} wheel clicks"
        )
    return _xdo.click_ops(forward if pixels > 0 else backward, clicks)


def _path(path: Any) -> list[tuple[int, int]]:
    """A drag path: ``(x, y)`` pairs (the SDK's) or ``{"x", "y"}`` dicts (the API's)."""
    if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
        raise InvalidInputError(f"path must be a list of points, got {shown(path)}")
    if len(path) > MAX_PATH:
        raise InvalidInputError(f"path has {len(path)} points, at most {MAX_PATH}")
    points = []
    for point in path:
        if isinstance(point, dict) or hasattr(point, "x"):
            x, y = _field(point, "x"), _field(point, "y")
        elif isinstance(point, (list, tuple)) and len(point) == 2:
            x, y = point
        else:
            raise InvalidInputError(
                f"a path point must be (x, y) or {{'x', 'y'}}, got {shown(point)}"
            )
        points.append(_point(x, y))
    return points


def _field(item: Any, name: str, default: Any = ...) -> Any:
    """``item[name]`` of a dict, or ``item.name`` of an SDK model."""
    if isinstance(item, dict):
        if name in item:
            return item[name]
    elif hasattr(item, name):
        return getattr(item, name)
    if default is ...:
        raise InvalidInputError(f"{name!r} is missing from {shown(item)}")
    return default


class Computer(_SDKComputer):
    """The Agents SDK's ``Computer`` on an X display, in process.

    Parameters
    ----------
    display : str, optional
        The X display (``":1"``); None (default) is ``$DISPLAY``.
    environment : str, default "ubuntu"
        What the tool tells the model it drives (the SDK's ``Environment``).
    wait_ms : float, optional
        What ``wait()`` does: None (default) waits until the screen is quiet (at most 2 s);
        a number sleeps that many milliseconds, as the sample app's 1000.
    """

    def __init__(
        self,
        display: str | None = None,
        *,
        environment: str = "ubuntu",
        wait_ms: float | None = None,
    ) -> None:
        self._driver = _Driver(display, environment, wait_ms)

    @property
    def environment(self) -> Any:
        """What the model is told it drives."""
        return self._driver.environment

    @property
    def dimensions(self) -> tuple[int, int]:
        """The screen's ``(width, height)`` now."""
        return self._driver.size()

    def screenshot(self) -> str:
        """Return the screen as a base64 PNG, once it has taken in the last input."""
        return self._driver.screenshot()

    def click(self, x: int, y: int, button: str = "left", *, keys: list[str] | None = None) -> None:
        """Click ``button`` at ``(x, y)``, ``keys`` held."""
        self._driver.click(x, y, button, keys)

    def double_click(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        """Double-click the left button at ``(x, y)``, ``keys`` held."""
        self._driver.click(x, y, "left", keys, count=2)

    def scroll(
        self, x: int, y: int, scroll_x: int, scroll_y: int, *, keys: list[str] | None = None
    ) -> None:
        """Scroll by ``(scroll_x, scroll_y)`` pixels at ``(x, y)`` (wheel clicks of
        ``SCROLL_PIXELS_PER_CLICK``; positive is right / down), ``keys`` held."""
        self._driver.scroll(x, y, scroll_x, scroll_y, keys)

    def type(self, text: str) -> None:
        """Type ``text`` as one input stream."""
        self._driver.type(text)

    def wait(self, ms: float | None = None) -> None:
        """Wait for the screen to settle, or ``ms`` milliseconds when given."""
        self._driver.wait(ms)

    def move(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        """Move the pointer to ``(x, y)``, ``keys`` held."""
        self._driver.move(x, y, keys)

    def keypress(self, keys: list[str]) -> None:
        """Press ``keys`` together as one chord (``["CTRL", "c"]``) and release them."""
        self._driver.keypress(keys)

    def drag(self, path: Sequence[Any], *, keys: list[str] | None = None) -> None:
        """Press the left button at the path's first point, move through the rest, release."""
        self._driver.drag(path, keys)

    def run_computer_call(
        self, call: Any, *, acknowledge: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any]:
        """Execute a ``computer_call`` item; see `run_computer_call`."""
        checks = _safety_checks(call, acknowledge)
        for action in _actions(call):
            _dispatch(self, action)
        return _call_output(call, self.screenshot(), checks)


class AsyncComputer(_SDKAsyncComputer):
    """The Agents SDK's ``AsyncComputer`` on an X display (see `Computer` for the parameters).

    Every method runs its work in a thread (``asyncio.to_thread``): the event loop is never
    blocked by a settle or an encode.
    """

    def __init__(
        self,
        display: str | None = None,
        *,
        environment: str = "ubuntu",
        wait_ms: float | None = None,
    ) -> None:
        self._computer = Computer(display, environment=environment, wait_ms=wait_ms)

    @property
    def environment(self) -> Any:
        """What the model is told it drives."""
        return self._computer.environment

    @property
    def dimensions(self) -> tuple[int, int]:
        """The screen's ``(width, height)`` now."""
        return self._computer.dimensions

    async def screenshot(self) -> str:
        """Return the screen as a base64 PNG, once it has taken in the last input."""
        return await asyncio.to_thread(self._computer.screenshot)

    async def click(
        self, x: int, y: int, button: str = "left", *, keys: list[str] | None = None
    ) -> None:
        """Click ``button`` at ``(x, y)``, ``keys`` held."""
        await asyncio.to_thread(self._computer.click, x, y, button, keys=keys)

    async def double_click(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        """Double-click the left button at ``(x, y)``, ``keys`` held."""
        await asyncio.to_thread(self._computer.double_click, x, y, keys=keys)

    async def scroll(
        self, x: int, y: int, scroll_x: int, scroll_y: int, *, keys: list[str] | None = None
    ) -> None:
        """Scroll by ``(scroll_x, scroll_y)`` pixels at ``(x, y)``, ``keys`` held."""
        await asyncio.to_thread(self._computer.scroll, x, y, scroll_x, scroll_y, keys=keys)

    async def type(self, text: str) -> None:
        """Type ``text`` as one input stream."""
        await asyncio.to_thread(self._computer.type, text)

    async def wait(self, ms: float | None = None) -> None:
        """Wait for the screen to settle, or ``ms`` milliseconds when given."""
        await asyncio.to_thread(self._computer.wait, ms)

    async def move(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        """Move the pointer to ``(x, y)``, ``keys`` held."""
        await asyncio.to_thread(self._computer.move, x, y, keys=keys)

    async def keypress(self, keys: list[str]) -> None:
        """Press ``keys`` together as one chord and release them."""
        await asyncio.to_thread(self._computer.keypress, keys)

    async def drag(self, path: Sequence[Any], *, keys: list[str] | None = None) -> None:
        """Press the left button at the path's first point, move through the rest, release."""
        await asyncio.to_thread(self._computer.drag, path, keys=keys)

    async def run_computer_call(
        self, call: Any, *, acknowledge: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any]:
        """Execute a ``computer_call`` item; see `run_computer_call`."""
        return await asyncio.to_thread(
            self._computer.run_computer_call, call, acknowledge=acknowledge
        )


#: Each computer action type -> the fields it reads (besides ``type``).
_ACTIONS = {
    "click": frozenset({"x", "y", "button", "keys"}),
    "double_click": frozenset({"x", "y", "keys"}),
    "scroll": frozenset({"x", "y", "scroll_x", "scroll_y", "keys"}),
    "type": frozenset({"text"}),
    "wait": frozenset({"ms"}),
    "move": frozenset({"x", "y", "keys"}),
    "keypress": frozenset({"keys"}),
    "drag": frozenset({"path", "keys"}),
    "screenshot": frozenset(),
}


def _actions(call: Any) -> list[Any]:
    """The call's actions: the batched ``actions`` list, or its single ``action``."""
    batch = _field(call, "actions", None)
    if batch is not None:
        if isinstance(batch, (str, bytes, dict)) or not isinstance(batch, Sequence):
            raise InvalidInputError(f"actions must be a list, got {shown(batch)}")
        actions = list(batch)
    else:
        actions = [_field(call, "action")]
    for action in actions:
        kind = _field(action, "type")
        if not isinstance(kind, str) or kind not in _ACTIONS:
            raise InvalidInputError(f"unknown computer action type {shown(kind)}")
        if isinstance(action, dict):  # an SDK model has only its schema's fields
            read = _ACTIONS[kind]
            unknown = [
                k for k, v in action.items() if k not in read and k != "type" and v is not None
            ]
            if unknown:
                reads = ", ".join(sorted(_ACTIONS[kind])) or "nothing but its type"
                raise InvalidInputError(
                    f"a {kind} action does not read {', '.join(map(shown, unknown))} "
                    f"(it reads {reads})"
                )
    return actions


def _dispatch(computer: Computer, action: Any) -> None:
    kind = _field(action, "type")
    keys = _field(action, "keys", None)
    if kind == "click":
        button = _field(action, "button", "left")
        computer.click(_field(action, "x"), _field(action, "y"), button, keys=keys)
    elif kind == "double_click":
        computer.double_click(_field(action, "x"), _field(action, "y"), keys=keys)
    elif kind == "scroll":
        computer.scroll(
            _field(action, "x"),
            _field(action, "y"),
            _field(action, "scroll_x", 0),
            _field(action, "scroll_y", 0),
            keys=keys,
        )
    elif kind == "type":
        computer.type(_field(action, "text"))
    elif kind == "wait":
        computer.wait(_field(action, "ms", None))
    elif kind == "move":
        computer.move(_field(action, "x"), _field(action, "y"), keys=keys)
    elif kind == "keypress":
        computer.keypress(_field(action, "keys"))
    elif kind == "drag":
        computer.drag(_field(action, "path"), keys=keys)
    # "screenshot": the output's screenshot is the action


def _plain(item: Any) -> Any:
    """A dict of an SDK model (``model_dump``), or the item itself."""
    dump = getattr(item, "model_dump", None)
    return dump() if callable(dump) else item


def _safety_checks(
    call: Any, acknowledge: Callable[[dict[str, Any]], bool] | None
) -> list[dict[str, Any]]:
    """The call's pending safety checks, each acknowledged by the caller, or ``SafetyCheckError``
    before anything is done."""
    pending = [_plain(check) for check in (_field(call, "pending_safety_checks", None) or [])]
    refused = [check for check in pending if acknowledge is None or not acknowledge(check)]
    if refused:
        raise SafetyCheckError(refused)
    return pending


def _call_output(call: Any, screenshot: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    output: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": _field(call, "call_id"),
        "output": {
            "type": "computer_screenshot",
            "image_url": f"data:image/png;base64,{screenshot}",
        },
    }
    if checks:
        output["acknowledged_safety_checks"] = checks
    return output


def run_computer_call(
    call: Any,
    computer: Computer | None = None,
    *,
    acknowledge: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Execute a Responses API ``computer_call`` item and return its ``computer_call_output``.

    Parameters
    ----------
    call : dict or SDK model
        The ``computer_call`` output item: its ``action`` (or batched ``actions``), ``call_id``
        and ``pending_safety_checks``.
    computer : Computer, optional
        Where to run it; None (default) is a ``Computer`` on ``$DISPLAY``.
    acknowledge : callable, optional
        Called with each pending safety check (a dict with ``id``, ``code``, ``message``);
        it returns True to acknowledge it. Without it, any pending check is refused.

    Returns
    -------
    dict
        ``{"type": "computer_call_output", "call_id": ..., "output": {"type":
        "computer_screenshot", "image_url": "data:image/png;base64,..."}}``, with
        ``acknowledged_safety_checks`` when there were checks.

    Raises
    ------
    SafetyCheckError
        If a pending safety check was not acknowledged (nothing was done).
    InvalidInputError
        If the call or an action is malformed (nothing was done for that action).
    MantisError
        If the display cannot be reached (``ConnectionLostError``, ``NoDisplayError``...).
    """
    return (computer or Computer()).run_computer_call(call, acknowledge=acknowledge)
