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

# Chain to the sitecustomize this one shadows.
del sys.modules[__name__]
_saved = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    importlib.import_module("sitecustomize")
except ImportError:
    pass
finally:
    sys.path[:] = _saved
