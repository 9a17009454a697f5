"""mantis_fast: fast, exact perception-action kernels for computer-use agents on Linux/X11.

The top level holds the main path of an agent loop, each stage close to the machine's limit:

* ``Xvfb``, ``Capture``, ``Input`` — a private X server, zero-copy screen capture (Xvfb's
  framebuffer or MIT-SHM, damage-aware with ``track_damage=True``), XTest input;
* ``resize`` and the sizing policies — the image a vision-language model sees, in one pass;
* ``annotate`` / ``UIConfig`` — the agent's own actions burned into the frame it sees next;
* ``encode_png``, ``PngEncoder``, ``data_url``... — what goes over the wire;
* ``model_to_screen`` and the other coordinate maps — exact contracts, scalar and batched
  (``scale_brain_to_display`` and ``scale_points`` are the seed's names for two of them);
* ``Action``, ``ActionType``, ``Dispatcher`` — one action vocabulary, mapped to screen pixels;
* ``LoopDetector``, ``compute_click_tol_px``, ``frame_hash`` — drift / repeat / state loops;
* ``MantisError`` and the errors a caller of these catches.

Everything else lives in its layer's namespace: ``mantis_fast.x11`` (the only code that talks
to an X server), the pure layers ``mantis_fast.pixels``, ``.geometry``, ``.loops`` and
``.actions``, the error family in ``mantis_fast.errors``, and the applications ``gym``,
``agent``, ``browser``, ``service`` and ``compat``. Names that used to be here warn and point
to their layer for one release (the CHANGELOG lists them).
"""

from mantis_fast._deprecated import moved_names
from mantis_fast.actions import Action, ActionType, Dispatcher
from mantis_fast.errors import (
    CaptureError,
    ConnectionLostError,
    InputError,
    InvalidInputError,
    MantisError,
    NoDisplayError,
    XvfbError,
)
from mantis_fast.geometry.coords import (
    NORMALIZED_MAX,
    model_to_screen,
    normalized_to_pixels,
    pixels_to_normalized,
    scale_brain_to_display,
    scale_points,
    screen_to_model,
    working_area,
)
from mantis_fast.loops.detector import LoopDetector, compute_click_tol_px
from mantis_fast.pixels.encode import PngEncoder, data_url, encode_jpeg, encode_png, encode_webp
from mantis_fast.pixels.frames import frame_hash
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.overlay import UIConfig, annotate
from mantis_fast.pixels.sizing import anthropic_size, cap_long_edge, qwen_size, smart_resize
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb

__all__ = [
    "NORMALIZED_MAX",
    "Action",
    "ActionType",
    "Capture",
    "CaptureError",
    "ConnectionLostError",
    "Dispatcher",
    "Input",
    "InputError",
    "InvalidInputError",
    "LoopDetector",
    "MantisError",
    "NoDisplayError",
    "PngEncoder",
    "UIConfig",
    "Xvfb",
    "XvfbError",
    "annotate",
    "anthropic_size",
    "cap_long_edge",
    "compute_click_tol_px",
    "data_url",
    "encode_jpeg",
    "encode_png",
    "encode_webp",
    "frame_hash",
    "model_to_screen",
    "normalized_to_pixels",
    "pixels_to_normalized",
    "qwen_size",
    "resize",
    "scale_brain_to_display",
    "scale_points",
    "screen_to_model",
    "smart_resize",
    "working_area",
]
__version__ = "0.1.0"

_ERRORS = (
    "AblationError AgentStateError AgentTimeoutError AppError BrowserError BrowserTimeoutError "
    "CompatInstallError ConfigError DesktopPoolError DisplayError DisplayToolError "
    "DisplayToolTimeout EngineFinished EpisodeTimeout InjectQueueFull InjectTooLarge "
    "InvalidTypeError MissingExtraError RayNotInstalledError RequestRejected SeqMismatch "
    "ServerHungError ServiceBusy UnsupportedVisualError VLMError WorkerDiedError "
    "WorkerTimeoutError"
)
_LAYERS = {
    "mantis_fast.errors": _ERRORS,
    "mantis_fast.geometry": (
        "clamp_to_screen coerce_coordinate parse_point normalized_points_to_pixels "
        "pixel_points_to_normalized pixels_to_unit unit_to_pixels displays_descriptor "
        "displays_from_descriptor parse_hyprland_monitors parse_sway_outputs "
        "parse_system_profiler_displays parse_windows_screens parse_xrandr_monitors Display "
        "DisplayFallbackWarning LocalPoint clamp_to_display global_points_to_local "
        "global_to_local local_points_to_global local_to_global resolve_display"
    ),
    "mantis_fast.loops": (
        "adaptive_loop_enabled LoopGuardHalt LoopGuardSuite OffSourceDriftGuard "
        "StateRepeatGuard Trajectory drift_loop_flags repeat_loop_flags state_loop_flags"
    ),
    "mantis_fast.pixels": (
        "changed_bbox phash_64 Trail draw_bbox_heat draw_heat fixed_size scale_percent_size"
    ),
    "mantis_fast.platforms": "detect_display_source enumerate_displays",
    "mantis_fast.x11": "DisplayGrab Settled list_displays",
}
# The names this module exported before 0.2, each now in its layer: they warn for one release.
__getattr__ = moved_names(
    __name__, {name: (layer, name) for layer, names in _LAYERS.items() for name in names.split()}
)
