"""mantis_fast: fast, exact perception-action kernels for computer-use agents on Linux/X11.

The stages of an agent loop, each close to the machine's limit:

* ``Capture`` — zero-copy MIT-SHM screen capture (damage-aware with ``track_damage=True``);
* ``resize`` and the sizing policies — the image a vision-language model sees, in one pass;
* ``annotate`` — the agent's own actions burned into the frame it sees next;
* ``encode_png`` / ``data_url`` — what goes over the wire;
* ``model_to_screen`` / ``scale_brain_to_display`` and friends — exact coordinate contracts,
  scalar and batched;
* ``Action`` and ``Dispatcher`` — one action vocabulary, mapped to live screen pixels;
* ``Input`` — XTest dispatch in microseconds;
* ``LoopDetector`` — drift / repeat / state loops, streaming and batched.

The package is layered: ``x11`` is the only code that talks to an X server; ``pixels``,
``geometry``, ``loops`` and ``actions`` are pure; ``browser`` drives Chromium over a DevTools
pipe; ``agent``, ``gym``, ``service``, ``compat`` and ``demo`` are the applications on top. Every
error raised on purpose is a ``MantisError`` (``errors``).
"""

from mantis_fast.actions import Action, ActionType, Dispatcher
from mantis_fast.errors import (
    AblationError,
    AgentStateError,
    AgentTimeoutError,
    AppError,
    BrowserError,
    BrowserTimeoutError,
    CaptureError,
    CompatInstallError,
    ConfigError,
    ConnectionLostError,
    DesktopPoolError,
    DisplayError,
    DisplayToolError,
    DisplayToolTimeout,
    EngineFinished,
    EpisodeTimeout,
    InjectQueueFull,
    InjectTooLarge,
    InputError,
    InvalidInputError,
    InvalidTypeError,
    MantisError,
    MissingExtraError,
    NoDisplayError,
    RayNotInstalledError,
    RequestRejected,
    SeqMismatch,
    ServerHungError,
    ServiceBusy,
    UnsupportedVisualError,
    VLMError,
    WorkerDiedError,
    WorkerTimeoutError,
    XvfbError,
)
from mantis_fast.geometry.coords import (
    NORMALIZED_MAX,
    clamp_to_screen,
    coerce_coordinate,
    model_to_screen,
    normalized_points_to_pixels,
    normalized_to_pixels,
    parse_point,
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
    local_points_to_global,
    local_to_global,
    resolve_display,
)
from mantis_fast.loops.adaptive import adaptive_loop_enabled
from mantis_fast.loops.detector import LoopDetector, compute_click_tol_px
from mantis_fast.loops.guards import (
    LoopGuardHalt,
    LoopGuardSuite,
    OffSourceDriftGuard,
    StateRepeatGuard,
)
from mantis_fast.loops.trajectory import (
    Trajectory,
    drift_loop_flags,
    repeat_loop_flags,
    state_loop_flags,
)
from mantis_fast.pixels.encode import (
    PngEncoder,
    data_url,
    encode_jpeg,
    encode_png,
    encode_webp,
)
from mantis_fast.pixels.frames import changed_bbox, frame_hash, phash_64
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.overlay import Trail, UIConfig, annotate, draw_bbox_heat, draw_heat
from mantis_fast.pixels.sizing import (
    anthropic_size,
    cap_long_edge,
    fixed_size,
    qwen_size,
    scale_percent_size,
    smart_resize,
)
from mantis_fast.platforms import detect_display_source, enumerate_displays
from mantis_fast.x11.capture import Capture, DisplayGrab, Settled
from mantis_fast.x11.input import Input
from mantis_fast.x11.monitors import list_displays
from mantis_fast.x11.xvfb import Xvfb

__all__ = [
    "NORMALIZED_MAX",
    "AblationError",
    "Action",
    "ActionType",
    "AgentStateError",
    "AgentTimeoutError",
    "AppError",
    "BrowserError",
    "BrowserTimeoutError",
    "Capture",
    "CaptureError",
    "CompatInstallError",
    "ConfigError",
    "ConnectionLostError",
    "DesktopPoolError",
    "Dispatcher",
    "Display",
    "DisplayError",
    "DisplayFallbackWarning",
    "DisplayGrab",
    "DisplayToolError",
    "DisplayToolTimeout",
    "EngineFinished",
    "EpisodeTimeout",
    "InjectQueueFull",
    "InjectTooLarge",
    "Input",
    "InputError",
    "InvalidInputError",
    "InvalidTypeError",
    "LocalPoint",
    "LoopDetector",
    "LoopGuardHalt",
    "LoopGuardSuite",
    "MantisError",
    "MissingExtraError",
    "NoDisplayError",
    "OffSourceDriftGuard",
    "PngEncoder",
    "RayNotInstalledError",
    "RequestRejected",
    "SeqMismatch",
    "ServerHungError",
    "ServiceBusy",
    "Settled",
    "StateRepeatGuard",
    "Trail",
    "Trajectory",
    "UIConfig",
    "UnsupportedVisualError",
    "VLMError",
    "WorkerDiedError",
    "WorkerTimeoutError",
    "Xvfb",
    "XvfbError",
    "adaptive_loop_enabled",
    "annotate",
    "anthropic_size",
    "cap_long_edge",
    "changed_bbox",
    "clamp_to_display",
    "clamp_to_screen",
    "coerce_coordinate",
    "compute_click_tol_px",
    "data_url",
    "detect_display_source",
    "displays_descriptor",
    "displays_from_descriptor",
    "draw_bbox_heat",
    "draw_heat",
    "drift_loop_flags",
    "encode_jpeg",
    "encode_png",
    "encode_webp",
    "enumerate_displays",
    "fixed_size",
    "frame_hash",
    "global_points_to_local",
    "global_to_local",
    "list_displays",
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
    "phash_64",
    "pixel_points_to_normalized",
    "pixels_to_normalized",
    "pixels_to_unit",
    "qwen_size",
    "repeat_loop_flags",
    "resize",
    "resolve_display",
    "scale_brain_to_display",
    "scale_percent_size",
    "scale_points",
    "screen_to_model",
    "smart_resize",
    "state_loop_flags",
    "unit_to_pixels",
    "working_area",
]
__version__ = "0.1.0"
