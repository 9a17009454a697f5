"""Drop-in replacements for slow capture paths: ``compat.mss.MSS`` and ``compat.imagegrab.grab``."""
