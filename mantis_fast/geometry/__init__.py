"""Pure geometry: where a point given in one coordinate space lands in another.

``coords`` holds the coordinate contracts between the image a model sees and the screen
(scaling, normalized 0..1000 in a working area, clamping); ``parse`` reads the coordinates
models write as text (``parse_point``, ``coerce_coordinate``); ``displays`` the monitors of a
screen as rectangles of the root window and the mapping between display-local and global
pixels. No function here talks to an X server.
"""

from mantis_fast.geometry.coords import (
    NORMALIZED_MAX,
    clamp_to_screen,
    model_to_screen,
    normalized_points_to_pixels,
    normalized_to_pixels,
    pixel_points_to_normalized,
    pixels_to_normalized,
    pixels_to_unit,
    scale_brain_to_display,
    scale_points,
    screen_to_model,
    unit_to_pixels,
    working_area,
)
from mantis_fast.geometry.display_descriptor import displays_descriptor, displays_from_descriptor
from mantis_fast.geometry.display_parsers import (
    parse_hyprland_monitors,
    parse_sway_outputs,
    parse_system_profiler_displays,
    parse_windows_screens,
    parse_xrandr_monitors,
)
from mantis_fast.geometry.displays import (
    Display,
    DisplayFallbackWarning,
    LocalPoint,
    clamp_to_display,
    global_points_to_local,
    global_to_local,
    live_displays,
    local_points_to_global,
    local_to_global,
    resolve_display,
    set_live_display_source,
)
from mantis_fast.geometry.parse import coerce_coordinate, parse_point

__all__ = [
    "NORMALIZED_MAX",
    "Display",
    "DisplayFallbackWarning",
    "LocalPoint",
    "clamp_to_display",
    "clamp_to_screen",
    "coerce_coordinate",
    "displays_descriptor",
    "displays_from_descriptor",
    "global_points_to_local",
    "global_to_local",
    "live_displays",
    "local_points_to_global",
    "local_to_global",
    "model_to_screen",
    "normalized_points_to_pixels",
    "normalized_to_pixels",
    "parse_hyprland_monitors",
    "parse_point",
    "parse_sway_outputs",
    "parse_system_profiler_displays",
    "parse_windows_screens",
    "parse_xrandr_monitors",
    "pixel_points_to_normalized",
    "pixels_to_normalized",
    "pixels_to_unit",
    "resolve_display",
    "scale_brain_to_display",
    "scale_points",
    "screen_to_model",
    "set_live_display_source",
    "unit_to_pixels",
    "working_area",
]
