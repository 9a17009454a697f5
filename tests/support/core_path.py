"""The core path as a user who ran a plain ``pip install mantis_fast`` runs it.

``python tests/support/core_path.py`` (from anywhere: it imports the installed package) starts a
private Xvfb, grabs the screen, resizes and PNG-encodes it, clicks through XTest and checks the
pointer landed; then checks that every optional layer whose extra is missing raises the
``MissingExtraError`` that names it, and that nothing optional was imported on the way. Prints a
JSON summary; exits non-zero on any failure. ``make wheel-test`` runs it in a venv holding the
wheel and its core dependencies alone; ``tests/package/test_extras.py`` runs it with the optional
modules hidden; the cibuildwheel test command runs it on each wheel it builds.
"""

from __future__ import annotations

import importlib
import io
import json
import sys

#: The applications on top, and the extra each needs to import (``gym.ray_pool`` imports with
#: ``[gym]``; its calls need ``[ray]``: ``RayNotInstalledError``, tests/package/test_extras.py).
OPTIONAL_LAYERS = {
    "mantis_fast.agent": "agent",
    "mantis_fast.gym": "gym",
    "mantis_fast.demo": "gym",
    "mantis_fast.osworld": "osworld",
}
OPTIONAL_MODULES = ("aiohttp", "httpx", "gymnasium", "ray", "tomli")


def installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def main() -> dict:
    import numpy as np
    from PIL import Image
    from Xlib import display as xdisplay

    import mantis_fast as mf

    summary: dict = {"mantis_fast": mf.__file__, "version": mf.__version__}
    with (
        mf.Xvfb(size=(1280, 720)) as xvfb,
        mf.Capture(xvfb.display) as cap,
        mf.Input(xvfb.display) as inp,
    ):
        frame = cap.grab()
        assert frame.shape == (720, 1280, 4) and frame.dtype == np.uint8, frame.shape
        image = mf.resize(frame, (640, 360))
        assert image.shape == (360, 640, 3), image.shape
        png = mf.encode_png(image)
        assert (np.asarray(Image.open(io.BytesIO(png))) == image).all(), "PNG round trip"
        x, y = mf.model_to_screen(320, 180, model_size=(640, 360), screen_size=cap.size)
        inp.click(x, y)
        conn = xdisplay.Display(xvfb.display)
        try:
            pointer = conn.screen().root.query_pointer()
            assert (pointer.root_x, pointer.root_y) == (x, y), (pointer.root_x, pointer.root_y)
        finally:
            conn.close()
        summary.update(capture_backend=cap.backend, png_bytes=len(png), clicked=[x, y])

    missing_extras = {}
    for layer, extra in OPTIONAL_LAYERS.items():
        try:
            importlib.import_module(layer)
        except mf.errors.MissingExtraError as exc:
            assert isinstance(exc, ImportError) and exc.extra == extra, (layer, exc)
            assert f"pip install 'mantis_fast[{extra}]'" in str(exc), str(exc)
            missing_extras[layer] = str(exc)
    summary["missing_extras"] = missing_extras
    summary["optional_modules_installed"] = [m for m in OPTIONAL_MODULES if installed(m)]
    return summary


if __name__ == "__main__":
    core_only = "--core-only" in sys.argv[1:]
    result = main()
    print(json.dumps(result, indent=2))
    if core_only:
        # A wheel installed without extras: every optional layer must name its extra.
        assert result["optional_modules_installed"] == [], result["optional_modules_installed"]
        assert sorted(result["missing_extras"]) == sorted(OPTIONAL_LAYERS), result
