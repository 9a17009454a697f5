"""The XTest backend: ``FakeInput`` requests on our own connection, packed by hand and sent with
one bounded round trip per action (~0.1 ms, where an ``xdotool`` process costs ~100 ms).

Characters absent from the keymap are typed as xdotool types them: a keycode nothing uses is
bound to the character's keysym for the moment, and unbound again on ``close()``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any

from Xlib import XK, X
from Xlib.protocol import request as xrequest

from mantis_fast.errors import InputError
from mantis_fast.x11 import wire
from mantis_fast.x11.connection import GONE, wait_reply
from mantis_fast.x11.input.base import Input, server_call
from mantis_fast.x11.input.keys import char_keysym, keysym_for_name

__all__ = ["BUTTON", "KEY", "MOVE", "XTestInput"]

# After remapping a keycode, clients need a moment to re-read the keymap (see XTestInput._premap).
KEYMAP_SETTLE_S = 0.02
SCRATCH_UNMAP_DELAY_S = 0.2
FLUSH_EVERY = 256  # queued fake events
# Between a button's clicks of one multi-click, once the server has handled the last: more
# than its millisecond clock's step, so the presses' timestamps differ.
REPEAT_PRESS_GAP_S = 0.0015
# XTest FakeInput (minor opcode 2, 9 words): opcode, minor, length, type, detail, 2 pad,
# time, root, 8 pad, x, y, 8 pad; in the client's byte order, as python-xlib sends it.
_FAKE_INPUT = struct.Struct("=BBHBBxxII8xhh8x")
# Operations of a batch (``XTestInput.send``): (MOVE, x, y), (BUTTON, button, press),
# (KEY, keysym, press, shift).
MOVE, BUTTON, KEY = 0, 1, 2
KEYPAD = (0xFF80, 0xFFBD)  # KP_Space .. KP_Equal


class XTestInput(Input):
    """Pointer and keyboard through the XTEST extension, in process."""

    backend = "xtest"

    def _open(self) -> None:
        self._pending = 0  # fake events queued since the last flush
        self._scratch: list[int] = []  # spare keycodes we mapped, oldest first
        self._scratch_map: dict[int, int] = {}  # keysym -> scratch keycode
        if not self._x.query_extension("XTEST"):
            raise InputError(f"X display {self.display_name} has no XTEST extension")
        self._opcode = self._x.display.get_extension_major("XTEST")

    # -- primitives -------------------------------------------------------------------------
    def _move(self, x: int, y: int) -> None:
        self._motion(x, y)
        self._sync()

    def _click(self, point: tuple[int, int], button: int, count: int) -> None:
        self._motion(*point)
        for click in range(count):
            if click and button <= 3:
                # Presses in one server millisecond share a timestamp, and Chromium takes a
                # press stamped like the last for the same press (a double click would reach
                # a page as two single clicks): a repeated press waits until the server has
                # handled the last click and its clock has moved on. Wheel notches go at once.
                self._sync()
                time.sleep(REPEAT_PRESS_GAP_S)
            self._fake(X.ButtonPress, button)
            self._fake(X.ButtonRelease, button)
        self._sync()

    def _button_event(self, button: int, *, press: bool) -> None:
        self._fake(X.ButtonPress if press else X.ButtonRelease, button)
        self._sync()

    def _drag(
        self, start: tuple[int, int], path: list[tuple[int, int]], button: int, pause: float
    ) -> None:
        self._motion(*start)
        self._fake(X.ButtonPress, button)
        self._sync()
        for px, py in path:
            self._motion(px, py)
            if pause:
                self._sync()
                time.sleep(pause)
        self._fake(X.ButtonRelease, button)
        self._sync()

    def _key(self, names: list[str]) -> None:
        codes = [self._keycode_for(keysym_for_name(name)) for name in names]
        pressed: list[int] = []
        for keycode, shifted in codes:
            if shifted and len(codes) == 1:
                pressed.append(self._shift_keycode())
                self._fake(X.KeyPress, pressed[-1])
            pressed.append(keycode)
            self._fake(X.KeyPress, keycode)
        for keycode in reversed(pressed):
            self._fake(X.KeyRelease, keycode)
        self._sync()

    def _type(self, text: str) -> None:
        keysyms = [char_keysym(char) for char in text]
        self._premap(keysyms)
        shift = 0  # Shift's keycode, looked up at the first shifted character (0: not yet)
        for keysym in keysyms:
            keycode, shifted = self._keycode_for(keysym)
            if shifted:
                shift = shift or self._shift_keycode()
                self._fake(X.KeyPress, shift)
            self._fake(X.KeyPress, keycode)
            self._fake(X.KeyRelease, keycode)
            if shifted:
                self._fake(X.KeyRelease, shift)
        self._sync()

    # -- raw batches ------------------------------------------------------------------------
    def pointer(self) -> tuple[int, int]:
        """Return where the pointer is now (one round trip).

        Returns
        -------
        tuple of int
            ``(x, y)`` in root-window pixels.
        """
        return self._query_pointer()

    def send(self, ops: Sequence[tuple]) -> None:
        """Send a batch of raw events; when this returns the server has processed all of them.

        Operations: ``(MOVE, x, y)``, ``(BUTTON, button, press)`` (buttons 1-9: 4-7 are the
        wheel), ``(KEY, keysym, press, shift)``. Coordinates must already be on the screen. A
        key press presses a keycode of the keysym (``_resolve``), with shift pressed before it
        and released right after it when ``shift`` says so, as pyautogui does; a release
        releases the same keycode. Keysyms absent from the keymap get a spare keycode (all of
        the batch's at once, before any event).

        Parameters
        ----------
        ops : sequence of tuple
            The operations, in order; checked by the caller (this is the raw layer under
            the batches of the pyautogui drop-in and of the agent tools).
        """
        self._send(ops)

    @server_call
    def _query_pointer(self) -> tuple[int, int]:
        request = xrequest.QueryPointer(display=self._x.display, defer=True, window=self._root)
        reply = wait_reply(self._x, request, self.timeout)
        self._handle_events()
        return reply.root_x, reply.root_y

    @server_call
    def _send(self, ops: Sequence[tuple]) -> None:
        keysyms = [op[1] for op in ops if op[0] == KEY]
        if keysyms:
            self._premap(keysyms)
        shift_code = None
        for op in ops:
            kind = op[0]
            if kind == MOVE:
                self._motion(op[1], op[2])
            elif kind == BUTTON:
                self._fake(X.ButtonPress if op[2] else X.ButtonRelease, op[1])
            else:
                _, keysym, press, shift = op
                keycode, shifted = self._resolve(keysym, shift)
                if not press:
                    self._fake(X.KeyRelease, keycode)
                    continue
                if shifted:
                    shift_code = shift_code or self._shift_keycode()
                    self._fake(X.KeyPress, shift_code)
                    self._fake(X.KeyPress, keycode)
                    self._fake(X.KeyRelease, shift_code)
                else:
                    self._fake(X.KeyPress, keycode)
        self._sync()

    def _resolve(self, keysym: int, shift: bool) -> tuple[int, bool]:
        """(keycode, press shift with it) for a keysym that pyautogui types with ``shift``.

        pyautogui's choice where it types the keysym: the keymap's first keycode for it (lowest
        level, then lowest code), shift as asked; keypad keys are pressed as they are (their
        level follows NumLock). Where that choice types another symbol (``<`` on the 105-key
        LSGT key, whose shifted level is ``>``), a keycode with the keysym at the asked level,
        else at the other level; absent from the keymap, a scratch keycode.
        """
        levels = [(code, index) for code, index in self._x.keysym_to_keycodes(keysym) if index < 2]
        if not levels:
            return self._keycode_for(keysym)  # a scratch keycode (mapped by _premap)
        first = levels[0][0]
        unshifted = self._x.keycode_to_keysym(first, 0)
        typed = (self._x.keycode_to_keysym(first, 1) or unshifted) if shift else unshifted
        if typed == keysym or KEYPAD[0] <= keysym <= KEYPAD[1]:
            return first, shift
        for code, index in levels:
            if index == int(shift):
                return code, shift
        return first, bool(levels[0][1])

    # -- XTest plumbing ---------------------------------------------------------------------
    # FakeInput packed here: python-xlib's generic request encoder costs ~20 us an event, most
    # of a click; the bytes are the same.
    def _fake(self, event_type: int, detail: int) -> None:
        self._check_open()
        wire.queue_void(
            self._x.display,
            _FAKE_INPUT.pack(self._opcode, 2, 9, event_type, detail, X.CurrentTime, 0, 0, 0),
        )
        self._queued()

    def _motion(self, x: int, y: int) -> None:
        self._check_open()
        root = self._root.id
        wire.queue_void(
            self._x.display,
            _FAKE_INPUT.pack(self._opcode, 2, 9, X.MotionNotify, 0, X.CurrentTime, root, x, y),
        )
        self._queued()

    def _queued(self) -> None:
        # python-xlib grows and drains its send buffer by slicing bytes: thousands of queued
        # events cost O(n^2) (16,000 scroll notches took 8.7 s). Flushing every few hundred
        # keeps it linear.
        self._pending += 1
        if self._pending >= FLUSH_EVERY:
            self._x.flush()
            self._pending = 0

    def _sync(self) -> None:
        """One bounded round trip: the server has processed every event we sent."""
        self._pending = 0
        try:
            # Through python-xlib's own exchange, not wire.round_trip: returning within
            # microseconds of the reply left the last key release of a burst missing from an X
            # RECORD of the server's events about one time in four (one time in a few dozen
            # with a second raw round trip); python-xlib's path never did.
            wait_reply(
                self._x, xrequest.GetInputFocus(display=self._x.display, defer=True), self.timeout
            )
            self._handle_events()  # keeps the queue from growing, the keymap cache current
        except GONE as exc:  # gone, or hung (XTimeoutError)
            raise self._lost(exc) from None

    def _on_event(self, event: Any) -> None:
        # Every client gets MappingNotify (ours too, from scratch keycodes).
        if event.type == X.MappingNotify and event.request == X.MappingKeyboard:
            self._x.refresh_keyboard_mapping(event)

    # -- the keymap -------------------------------------------------------------------------
    def _keycode_for(self, keysym: int) -> tuple[int, bool]:
        """(keycode, needs shift) for a keysym, mapping a spare keycode when the keymap lacks it."""
        for keycode, index in self._x.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return keycode, index == 1
        if keysym in self._scratch_map:
            return self._scratch_map[keysym], False
        return self._map_scratch(keysym), False

    def _premap(self, keysyms: list[int]) -> None:
        """Map every keysym of a text that the keymap lacks before typing any of it.

        Clients re-read the keymap when MappingNotify reaches them, and Tk does so lazily: a key
        pressed right after its mapping changed can be read with the old one. So the mappings
        go out together, then one pause lets clients catch up, instead of one per character.
        """
        missing = []
        for keysym in dict.fromkeys(keysyms):
            if keysym in self._scratch_map or any(
                index in (0, 1) for _, index in self._x.keysym_to_keycodes(keysym)
            ):
                continue
            missing.append(keysym)
        capacity = len(self._spare_keycodes())
        for keysym in missing[:capacity]:
            self._map_scratch(keysym, settle=False)
        if missing:
            self._sync()
            time.sleep(KEYMAP_SETTLE_S)

    def _keysyms_per_keycode(self) -> int:
        if not hasattr(self, "_row_width"):
            self._row_width = len(
                self._x.get_keyboard_mapping(self._x.display.info.min_keycode, 1)[0]
            )
        return self._row_width

    def _spare_keycodes(self) -> list[int]:
        if not self._scratch:
            first = self._x.display.info.min_keycode
            count = self._x.display.info.max_keycode - first + 1
            mapping = self._x.get_keyboard_mapping(first, count)
            self._scratch = [first + i for i, syms in enumerate(mapping) if not any(syms)]
            if not self._scratch:
                raise InputError("no spare keycode to map an unmapped character to")
        return self._scratch

    def _map_scratch(self, keysym: int, *, settle: bool = True) -> int:
        """Bind ``keysym`` to a keycode nothing uses, as xdotool does for unmapped characters.

        Scratch keycodes are reused oldest first, so a client that re-reads the keymap late
        still sees the right symbol for every recent character.
        """
        self._spare_keycodes()
        keycode = self._scratch.pop(0)
        self._scratch.append(keycode)
        stale = [k for k, code in self._scratch_map.items() if code == keycode]
        for k in stale:
            del self._scratch_map[k]
        # Every column, as xdotool does: XKB derives its key type from the core row, and a row
        # with NoSymbol columns can come out as a type whose level 1 clients read as nothing.
        self._x.change_keyboard_mapping(keycode, [(keysym,) * self._keysyms_per_keycode()])
        self._scratch_map[keysym] = keycode  # the source of truth for scratch codes
        if settle:
            self._sync()
            time.sleep(KEYMAP_SETTLE_S)
        return keycode

    def _shift_keycode(self) -> int:
        return self._x.keysym_to_keycode(XK.string_to_keysym("Shift_L"))

    def _release(self) -> None:
        """Unmap the scratch keycodes we mapped."""
        if not self._scratch_map:
            return
        # Clients such as Tk look a keycode up lazily, when they process the key event:
        # unmapping at once can race with that and turn the last characters into nothing.
        time.sleep(SCRATCH_UNMAP_DELAY_S)
        for keycode in self._scratch_map.values():
            self._x.change_keyboard_mapping(keycode, [(X.NoSymbol,) * self._keysyms_per_keycode()])
        self._x.sync()  # processed before any other client can look at the keymap
