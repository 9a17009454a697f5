"""Pure pixel work over numpy arrays: no X server, no network.

``image`` crops, resizes and converts in one pass (kernel ``_resize``); ``sizing`` picks the
size a model wants; ``encode`` writes PNG/JPEG/WebP and data URLs; ``frames`` hashes and diffs
frames (kernel ``_diff``); ``overlay`` burns an agent's actions into its next frame (kernel
``_overlay``).
"""

from mantis_fast.pixels.encode import (
    PngEncoder,
    data_url,
    encode_jpeg,
    encode_png,
    encode_webp,
)
from mantis_fast.pixels.frames import changed_bbox, frame_hash, phash_64
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.memcopy import copy_frame, owned_copy
from mantis_fast.pixels.overlay import Trail, UIConfig, annotate, draw_bbox_heat, draw_heat
from mantis_fast.pixels.sizing import (
    anthropic_size,
    cap_long_edge,
    fixed_size,
    qwen_size,
    scale_percent_size,
    smart_resize,
)

__all__ = [
    "PngEncoder",
    "Trail",
    "UIConfig",
    "annotate",
    "anthropic_size",
    "cap_long_edge",
    "changed_bbox",
    "copy_frame",
    "data_url",
    "draw_bbox_heat",
    "draw_heat",
    "encode_jpeg",
    "encode_png",
    "encode_webp",
    "fixed_size",
    "frame_hash",
    "owned_copy",
    "phash_64",
    "qwen_size",
    "resize",
    "scale_percent_size",
    "smart_resize",
]
