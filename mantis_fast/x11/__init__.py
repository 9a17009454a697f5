"""The X11 layer: the only code that talks to an X server or starts one.

``connection`` opens python-xlib connections and bounds every wait on the server; ``mitshm``,
``transport``, ``damage`` and ``capture`` get pixels out of it (``display_grab``: one display's
part of a grab; ``display_png``: it as PNG bytes); ``monitors`` asks RandR for the monitors;
``windows`` finds top-level windows and the processes that own them; ``input`` dispatches
pointer and keyboard events; ``xvfb`` starts private servers.
The pure layers (``pixels``, ``geometry``, ``loops``, ``actions``) never import this package.
"""

from mantis_fast.x11.capture import Capture, DisplayCapture, DisplayGrab, Settled
from mantis_fast.x11.input import Input
from mantis_fast.x11.monitors import list_displays, query_monitors
from mantis_fast.x11.xvfb import Xvfb, embedded_display

__all__ = [
    "Capture",
    "DisplayCapture",
    "DisplayGrab",
    "Input",
    "Settled",
    "Xvfb",
    "embedded_display",
    "list_displays",
    "query_monitors",
]
