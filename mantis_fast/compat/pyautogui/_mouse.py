"""The bodies of pyautogui's mouse functions, on one call's ``Actions``: a button pressed or
released where the pointer goes, clicks, wheel notches and drags, in pyautogui's event order."""

from __future__ import annotations

from mantis_fast.compat.pyautogui import _args, _buttons, _screenshot_log
from mantis_fast.compat.pyautogui._call import Actions, Call
from mantis_fast.compat.pyautogui._motion import move_path
from mantis_fast.compat.pyautogui._points import xy

__all__ = ["button", "click", "drag", "scroll"]


def button(
    acts: Actions, x: object, y: object, which: object, press: bool, flag: object = None
) -> None:
    """The body of mouseDown/mouseUp (also the inner calls of a drag): move to (x, y), then
    press or release ``which``."""
    name = _buttons.normalize(which)
    point = xy(acts, x, y)
    move_path(acts, point.x, point.y, 0, 0, 0.0, None)
    _screenshot_log.take(acts, flag, "mouseDown" if press else "mouseUp", f"{point.x},{point.y}")
    acts.move(point.x, point.y)
    acts.button(_buttons.NUMBERS[name], press)


def click(
    acts: Actions,
    x: object,
    y: object,
    clicks: object,
    interval: object,
    which: object,
    duration: object,
    tween: object,
    flag: object,
) -> None:
    """The body of click() and its variants: move to (x, y) (over ``duration`` s, by
    ``tween``), then click ``clicks`` times, sleeping ``interval`` s after each."""
    name = _buttons.normalize(which)
    count = _args.count(clicks, "clicks")
    pause = _args.seconds(interval, "interval")
    seconds = _args.duration(duration)
    point = xy(acts, x, y)
    move_path(acts, point.x, point.y, 0, 0, seconds, tween)
    _screenshot_log.take(acts, flag, "click", f"{name},{count},{point.x},{point.y}")
    for _ in range(count):
        acts.check()
        acts.click(point.x, point.y, _buttons.NUMBERS[name])
        acts.sleep(pause)


def scroll(
    clicks: object,
    x: object,
    y: object,
    buttons: tuple[int, int],
    name: str,
    flag: object,
    pause: object,
) -> None:
    """pyautogui's scroll, a call of its own: ``clicks`` notches at (x, y), each a click of the
    wheel button (``buttons``: for positive, for negative clicks), each preceded by a motion
    there."""
    with Call(pause) as acts:
        if type(x) is tuple or type(x) is list:  # not a subclass (a Point), as pyautogui
            x, y = _args.pair(x, "x")
        if x is None or y is None:
            here = acts.pos
            x = here.x if x is None else x
            y = here.y if y is None else y
        px, py = _args.integer(x, "x"), _args.integer(y, "y")
        _screenshot_log.take(acts, flag, name, f"{clicks},{px},{py}")
        notches = _args.integer(clicks, "clicks")
        for _ in range(abs(notches)):
            acts.click(px, py, buttons[0] if notches > 0 else buttons[1])


def drag(
    acts: Actions,
    target: tuple[int | None, int | None, int, int],
    duration: object,
    tween: object,
    which: object,
    mouse_down_up: object,
) -> None:
    """The body of dragTo/dragRel: press ``which`` (a call of its own, fail-safe first), move
    along ``target`` (x, y, x_offset, y_offset), release; only the move without
    ``mouse_down_up``."""
    seconds = _args.duration(duration)
    if mouse_down_up:  # pyautogui's inner mouseDown(): a call of its own, fail-safe first
        acts.check()
        button(acts, None, None, which, True)
    move_path(acts, *target, seconds, tween)
    if mouse_down_up:
        acts.check()
        button(acts, None, None, which, False)
