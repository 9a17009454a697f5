"""miniwob's own env as the peer of the MiniWoB++ tests and benchmarks: what it needs to start
here."""

from __future__ import annotations

import os


def sandbox_free_chrome() -> None:
    """miniwob passes ``no-sandbox`` to Chromium only when headless, and as root Chromium
    refuses to start without it: wrap the ChromeOptions miniwob's SeleniumInstance creates so
    that they carry it (only as root)."""
    if os.geteuid() != 0:
        return
    from miniwob import selenium_instance
    from selenium import webdriver

    class Options(webdriver.ChromeOptions):
        def __init__(self) -> None:
            super().__init__()
            self.add_argument("no-sandbox")

    selenium_instance.webdriver = type(
        "webdriver", (), {"ChromeOptions": Options, "Chrome": webdriver.Chrome}
    )
