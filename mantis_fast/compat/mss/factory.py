"""``mss.factory``: the deprecated ``mss.mss()`` constructor."""

from __future__ import annotations

import warnings
from typing import Any

from mantis_fast.compat.mss.base import MSS

__all__ = ["mss"]


def mss(**kwargs: Any) -> MSS:
    """``mss.mss(**kwargs)``: deprecated in mss 10.2 for ``mss.MSS``, warned the same way."""
    warnings.warn(
        "mss.mss is deprecated and will be removed in a future release; use mss.MSS instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return MSS(**kwargs)
