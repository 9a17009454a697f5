"""pyautogui's ``run()`` mini-language (``run("ccg-20,+0c")``): its tokenizer and interpreter.

Commands: ``c l m r`` (clicks), ``su sd`` (scroll), ``ss`` (screenshot), ``gX,Y``/``g+X,-Y``
(moveTo/move), ``dX,Y``/``d+X,-Y`` (dragTo/drag), ``k'key'``, ``w'text'``, ``h'key,key'``,
``a'text'`` (alert), ``sN`` (sleep), ``pN`` (PAUSE = N), ``fN(commands)`` (repeat). Whitespace
between commands and arguments is ignored. A malformed string raises ``PyAutoGUIValueError``
(a ``PyAutoGUIException``) naming the index.
"""

from __future__ import annotations

import re

# The public module: the commands are its functions (and ``p`` sets its PAUSE).
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui._buttons import LEFT, MIDDLE, PRIMARY, RIGHT
from mantis_fast.compat.pyautogui._errors import PyAutoGUIValueError

__all__ = ["comma_token", "execute", "number_token", "parens_token", "quoted_token", "tokenize"]

_COMMAND = re.compile(r"su|sd|ss|[clmrgdkwhfsap]")
_NUMBER = re.compile(r"\s*[+-]?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"\s*'.*?'")
_COMMA = re.compile(r"\s*,")
_NO_ARGUMENT = frozenset({"c", "l", "m", "r", "su", "sd", "ss"})


def _invalid(index: int, message: str) -> PyAutoGUIValueError:
    return PyAutoGUIValueError(f"Invalid command at index {index}: {message}")


def _token(pattern: re.Pattern[str], text: str, start: int, expected: str) -> str:
    found = pattern.match(text, start)
    if found is None:
        raise _invalid(start, f"{expected} was expected")
    return found.group()


def number_token(text: str, start: int = 0) -> str:
    """The number at ``text[start:]``, with its leading whitespace (``"  -5.5"``)."""
    return _token(_NUMBER, text, start, "a number")


def quoted_token(text: str, start: int = 0) -> str:
    """The single-quoted string at ``text[start:]``, quotes and leading whitespace kept."""
    return _token(_QUOTED, text, start, "a quoted string")


def comma_token(text: str, start: int = 0) -> str:
    """The comma at ``text[start:]``, with its leading whitespace."""
    return _token(_COMMA, text, start, "a comma")


def parens_token(text: str, start: int = 0) -> str:
    """The balanced parenthesized group at ``text[start:]``, with its leading whitespace."""
    opening = start
    while opening < len(text) and text[opening].isspace():
        opening += 1
    if opening == len(text) or text[opening] != "(":
        raise _invalid(start, "No open parenthesis found.")
    depth = 0
    for index in range(opening, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    raise _invalid(start, "Not enough close parentheses.")


def tokenize(text: str) -> list:
    """The command list of ``text``: commands, their arguments as strings, nested lists for
    ``f`` loops (``"f2(c)g1,2"`` -> ``["f", "2", ["c"], "g", "1", "2"]``)."""
    tokens: list = []
    index = 0
    while index < len(text):
        if text[index] in " \t\n\r":
            index += 1
            continue
        command = _COMMAND.match(text, index)
        if command is None:
            raise _invalid(index, f"{text[index]} is not a valid command")
        name = command.group()
        tokens.append(name)
        index = command.end()
        if name in _NO_ARGUMENT:
            continue
        if name in ("g", "d"):
            x = number_token(text, index)
            index += len(x)
            index += len(comma_token(text, index))
            y = number_token(text, index)
            if x.lstrip()[0].isdecimal() != y.lstrip()[0].isdecimal():
                which = (
                    "has a +/- but X does not"
                    if x.lstrip()[0].isdecimal()
                    else ("does not have a +/- but X does")
                )
                raise _invalid(index, f"Y {which}.")
            index += len(y)
            tokens += [x.lstrip(), y.lstrip()]
        elif name in ("s", "p"):
            number = number_token(text, index)
            index += len(number)
            tokens.append(number.lstrip())
        elif name in ("k", "w", "h", "a"):
            quoted = quoted_token(text, index)
            index += len(quoted)
            tokens.append(quoted.lstrip()[1:-1])
        else:  # "f": a count, then the commands to repeat in parentheses
            count = number_token(text, index)
            index += len(count)
            group = parens_token(text, index)
            index += len(group)
            tokens += [count.lstrip(), tokenize(group.lstrip()[1:-1])]
    return tokens


def execute(commands: list, shots: list[int]) -> None:
    """Run the commands ``tokenize`` made; ``shots[0]`` numbers the next ``ss`` screenshot."""
    i = 0
    while i < len(commands):
        command = commands[i]
        if command in ("c", "l", "m", "r"):
            pyautogui.click(button={"c": PRIMARY, "l": LEFT, "m": MIDDLE, "r": RIGHT}[command])
        elif command in ("su", "sd"):
            pyautogui.scroll(1 if command == "su" else -1)
        elif command == "ss":
            pyautogui.screenshot(f"screenshot{shots[0]}.png")
            shots[0] += 1
        elif command == "s":
            pyautogui.sleep(float(commands[i + 1]))
            i += 1
        elif command == "p":
            pyautogui.PAUSE = float(commands[i + 1])
            i += 1
        elif command in ("g", "d"):
            x, y = commands[i + 1], commands[i + 2]
            relative = x[0] in "+-" and y[0] in "+-"
            if command == "g":
                (pyautogui.move if relative else pyautogui.moveTo)(int(x), int(y))
            else:
                (pyautogui.drag if relative else pyautogui.dragTo)(int(x), int(y))
            i += 2
        elif command in ("k", "w", "h", "a"):
            argument = commands[i + 1]
            if command == "k":
                pyautogui.press(argument)
            elif command == "w":
                pyautogui.write(argument)
            elif command == "h":
                pyautogui.hotkey(*argument.replace(" ", "").split(","))
            else:
                pyautogui.alert(argument)
            i += 1
        elif command == "f":
            for _ in range(int(commands[i + 1])):
                execute(commands[i + 2], shots)
            i += 2
        i += 1
