"""Input dispatch: pointer and keyboard, one interface and a backend per transport.

``Input(display, backend="xtest")`` returns the backend named: ``XTestInput`` (in-process XTest)
or ``XdotoolInput`` (the ``xdotool`` command). Both share one semantics (``base``) and one
set of key names (``keys``): root-window pixels clamped to the live screen, xdotool's key
syntax, characters absent from the keymap typed through a spare keycode.
"""

from mantis_fast.x11.input.base import BUTTONS, SCROLL_BUTTONS, Input
from mantis_fast.x11.input.keys import KEY_ALIASES, canonical_key_name, keysym_for_name
from mantis_fast.x11.input.xdotool import XdotoolInput
from mantis_fast.x11.input.xtest import XTestInput

__all__ = [
    "BUTTONS",
    "KEY_ALIASES",
    "SCROLL_BUTTONS",
    "Input",
    "XTestInput",
    "XdotoolInput",
    "canonical_key_name",
    "keysym_for_name",
]
