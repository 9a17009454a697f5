"""Pure pixel work over numpy arrays: no X server, no network.

``image`` crops, resizes and converts in one pass (kernel ``_resize``); ``sizing`` picks the
size a model wants; ``encode`` writes PNG/JPEG/WebP and data URLs; ``frames`` hashes and diffs
frames (kernel ``_diff``); ``overlay`` burns an agent's actions into its next frame (kernel
``_overlay``).
"""
