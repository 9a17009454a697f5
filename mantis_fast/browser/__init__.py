"""A browser on a mantis_fast desktop: the system Chromium, driven over a private DevTools pipe.

``Chromium`` starts it on an X display (kiosk, fresh profile, no port); ``DevToolsPipe`` is the
bounded Chrome DevTools Protocol connection it uses. The gym layer's ``BrowserTask`` and the
MiniWoB++ tasks (``mantis_fast.gym.miniwob``) are built on these.
"""

from mantis_fast.browser.chromium import EXECUTABLES, Chromium, find_chromium
from mantis_fast.browser.devtools import DevToolsPipe

__all__ = ["EXECUTABLES", "Chromium", "DevToolsPipe", "find_chromium"]
