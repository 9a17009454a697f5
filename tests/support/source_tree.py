"""Where the tests find the files beside them: the checkout, an unpacked sdist, or the copy that
``make wheel-test`` runs against the installed wheel. The one place that knows the layout."""

from __future__ import annotations

import os
from pathlib import Path

#: The folder holding ``tests/``, ``benchmarks/`` and ``src_cython/``.
ROOT = Path(__file__).resolve().parents[2]
#: The Cython sources of the compiled kernels (absent only where a copy left them out).
KERNEL_SOURCES = ROOT / "src_cython"
#: The originals' unpacked sdists (``make suites``); ``MANTIS_SUITES_DIR`` points elsewhere, as
#: ``make wheel-test`` does to reuse the checkout's.
SUITES_DIR = Path(os.environ.get("MANTIS_SUITES_DIR") or ROOT / ".suites")
