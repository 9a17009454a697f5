"""mss 10.2's public API on mantis_fast's MIT-SHM capture: a drop-in for ``import mss``.

Change one import (``from mantis_fast.compat import mss``) or none
(``mantis_fast.compat.install("mss")`` before ``import mss``, or run the program with
``python -m mantis_fast.compat run``). The module layout is mss's: ``mss.MSS``, ``mss.base``,
``mss.screenshot.ScreenShot``, ``mss.exception.ScreenShotError``, ``mss.tools.to_png``,
``mss.models``, ``mss.linux`` (its backends), ``python -m mss``. Pixels are byte-identical to
mss's; every backend name mss accepts is accepted, and all read the screen through MIT-SHM
(falling back to ``GetImage`` where shared memory cannot be attached, as mss does).
"""

from mantis_fast.compat.mss.base import MSS, ScreenShot
from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.compat.mss.factory import mss

#: The mss release whose API and behaviour this drop-in follows.
__version__ = "10.2.0"
__all__ = ("MSS", "ScreenShot", "ScreenShotError", "mss")
