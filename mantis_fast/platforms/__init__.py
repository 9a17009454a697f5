"""The host beyond X11: what a platform's own tools say about it (Wayland compositors, macOS,
Windows). This layer runs processes (``commands``) and may ask the X11 layer, so it sits beside
``x11`` and above the pure layers, which parse what it gets (``geometry.display_parsers``).

``displays`` picks the display source of this host and enumerates its displays.
"""

from mantis_fast.platforms.commands import DisplayToolError, DisplayToolTimeout
from mantis_fast.platforms.displays import (
    DISPLAY_SOURCES,
    DisplaySourceFallbackWarning,
    detect_display_source,
    enumerate_displays,
    enumerate_displays_with_source,
    session_type,
)

__all__ = [
    "DISPLAY_SOURCES",
    "DisplaySourceFallbackWarning",
    "DisplayToolError",
    "DisplayToolTimeout",
    "detect_display_source",
    "enumerate_displays",
    "enumerate_displays_with_source",
    "session_type",
]
