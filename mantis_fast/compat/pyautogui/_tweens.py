"""pytweening's easing functions, which pyautogui re-exports as its tweens (``easeInQuad``...).

Without pytweening each name is a stand-in that raises ``PyAutoGUIException``, as in pyautogui;
``linear``, the default tween, is the drop-in's own and needs no package.
"""

from __future__ import annotations

from mantis_fast.compat.pyautogui._companions import needs

__all__ = [
    "easeInBack",
    "easeInBounce",
    "easeInCirc",
    "easeInCubic",
    "easeInElastic",
    "easeInExpo",
    "easeInOutBack",
    "easeInOutBounce",
    "easeInOutCirc",
    "easeInOutCubic",
    "easeInOutElastic",
    "easeInOutExpo",
    "easeInOutQuad",
    "easeInOutQuart",
    "easeInOutQuint",
    "easeInOutSine",
    "easeInQuad",
    "easeInQuart",
    "easeInQuint",
    "easeInSine",
    "easeOutBack",
    "easeOutBounce",
    "easeOutCirc",
    "easeOutCubic",
    "easeOutElastic",
    "easeOutExpo",
    "easeOutQuad",
    "easeOutQuart",
    "easeOutQuint",
    "easeOutSine",
]

try:
    from pytweening import (
        easeInBack,
        easeInBounce,
        easeInCirc,
        easeInCubic,
        easeInElastic,
        easeInExpo,
        easeInOutBack,
        easeInOutBounce,
        easeInOutCirc,
        easeInOutCubic,
        easeInOutElastic,
        easeInOutExpo,
        easeInOutQuad,
        easeInOutQuart,
        easeInOutQuint,
        easeInOutSine,
        easeInQuad,
        easeInQuart,
        easeInQuint,
        easeInSine,
        easeOutBack,
        easeOutBounce,
        easeOutCirc,
        easeOutCubic,
        easeOutElastic,
        easeOutExpo,
        easeOutQuad,
        easeOutQuart,
        easeOutQuint,
        easeOutSine,
    )
except ImportError:
    easeInQuad = easeOutQuad = easeInOutQuad = easeInCubic = easeOutCubic = needs("pytweening")
    easeInOutCubic = easeInQuart = easeOutQuart = easeInOutQuart = easeInQuint = easeInQuad
    easeOutQuint = easeInOutQuint = easeInSine = easeOutSine = easeInOutSine = easeInQuad
    easeInExpo = easeOutExpo = easeInOutExpo = easeInCirc = easeOutCirc = easeInQuad
    easeInOutCirc = easeInElastic = easeOutElastic = easeInOutElastic = easeInBack = easeInQuad
    easeOutBack = easeInOutBack = easeInBounce = easeOutBounce = easeInOutBounce = easeInQuad
