"""Installs the drop-ins named in ``$MANTIS_FAST_COMPAT`` when a child interpreter starts.

``python -m mantis_fast.compat run`` puts this directory first on ``PYTHONPATH``, so every Python
process it starts (directly or not) answers ``import mss`` etc. the same way. Afterwards the
environment's own ``sitecustomize``, if any, runs as it would have.
"""

import importlib
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_names = [n for n in os.environ.get("MANTIS_FAST_COMPAT", "").split(",") if n.strip()]
if _names:
    try:
        from mantis_fast.compat.install import install

        install(*_names)
    except ImportError as exc:  # mantis_fast not importable here: say so, run the program anyway
        sys.stderr.write(f"mantis_fast.compat: drop-ins not installed in this process: {exc}\n")

# Chain to the sitecustomize this one shadows: import it by name with this directory off the
# path, then put our directory back where it was (keeping whatever that one added to the path).
_this = sys.modules.pop(__name__)
_position = next((i for i, p in enumerate(sys.path) if os.path.abspath(p or ".") == _here), None)
if _position is not None:
    del sys.path[_position]
try:
    importlib.import_module("sitecustomize")
except ModuleNotFoundError as exc:
    if exc.name != "sitecustomize":
        raise
    sys.modules[__name__] = _this  # there is none: this one stays the sitecustomize
finally:
    if _position is not None:
        sys.path.insert(_position, _here)
