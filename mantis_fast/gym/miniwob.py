"""MiniWoB++ on a mantis_fast desktop: the tasks of the installed ``miniwob`` package in
Chromium, observed by the zero-copy capture and driven by XTest at real screen pixels.

::

    import gymnasium as gym
    import mantis_fast.gym
    env = gym.make("mantis_fast/miniwob-click-test-2-v0")
    observation, info = env.reset(seed=0)     # the same instance miniwob's env makes for seed 0
    info["utterance"]                          # 'Click button ONE.'

Each task's page comes from the ``miniwob`` package's own files (``file://``, no network). The
screen is the task area (160 x 210 CSS pixels, times ``scale``): the kiosk page sits at the
screen's top-left, so the observation is the area miniwob's env crops from its screenshots, at
the same or a higher resolution. Actions are the package's one action vocabulary in
observation pixels. The reward and the end of an episode are MiniWoB++'s own, read from the
page after each step (``WOB_REWARD_GLOBAL``, time-discounted as in miniwob's env;
``WOB_RAW_REWARD_GLOBAL`` in ``info["raw_reward"]``). ``reset(seed=s)`` seeds the page's
generator as miniwob's env does (``Math.seedrandom(s)``); without a seed, one is drawn from the
env's generator, so a seeded env replays its episodes.

The browser stays up across episodes: a reset ends the page's episode and starts the next in the
same document (``core.startEpisodeReal``), as miniwob's env does.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mantis_fast.errors import BrowserError, InvalidInputError, MissingExtraError
from mantis_fast.gym.browser_task import BrowserTask

__all__ = [
    "FLIGHT_TASK_AREA",
    "TASK_AREA",
    "MiniWoBTask",
    "miniwob_env",
    "miniwob_html_dir",
    "miniwob_tasks",
]

#: The task area of every MiniWoB++ page, in CSS pixels (miniwob.constants TASK_WIDTH/HEIGHT).
TASK_AREA = (160, 210)
#: The task area of the FlightWoB tasks (``flight.*``; miniwob.constants FLIGHT_TASK_*).
FLIGHT_TASK_AREA = (375, 667)
_READY_TIMEOUT_S = 2.0
_NOT_READY = "mantis_fast: not ready"  # _start_episode's answer for a task still not ready


@functools.lru_cache(maxsize=1)
def miniwob_html_dir() -> Path:
    """The ``html`` directory of the installed ``miniwob`` package (found without importing
    it: miniwob's own env imports Selenium); ``MissingExtraError`` when it is not installed."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            "MiniWoB++ tasks need the miniwob package, which is not installed: "
            "pip install 'mantis_fast[miniwob]'",
            extra="miniwob",
            name="miniwob",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "html"


@functools.lru_cache(maxsize=1)
def miniwob_tasks() -> tuple[str, ...]:
    """The names of the installed MiniWoB++ tasks (``click-test-2``, ..., and the FlightWoB
    ones, ``flight.AA``, ...), sorted."""
    html = miniwob_html_dir()
    pages = [page.stem for page in (html / "miniwob").glob("*.html")]
    flights = [
        f"flight.{site.name}"
        for site in (html / "flight").glob("*")
        if (site / "wrapper.html").is_file()
    ]
    return tuple(sorted(pages + flights))


@functools.cache
def _field_extractor(task: str) -> Any:
    """miniwob's own reader of a task's fields from its utterance (imported when first needed:
    importing miniwob registers its envs, half a second)."""
    from miniwob.fields import get_field_extractor

    try:
        return get_field_extractor(task)
    except KeyError:  # two pages miniwob ships but does not register (button-delay, hover-shape)
        return lambda utterance: []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Not on stderr: a page load is not news."""


@functools.lru_cache(maxsize=1)
def miniwob_http_base() -> str:
    """The base URL of a loopback HTTP server of the package's ``html`` directory, started on
    first use in this process (FlightWoB pages run in an iframe that needs http, as in
    miniwob's env). Bound to 127.0.0.1, read-only, serves only that directory."""
    handler = functools.partial(_QuietHandler, directory=str(miniwob_html_dir()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="miniwob-http", daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


class MiniWoBTask(BrowserTask):
    """One MiniWoB++ task (see the module docstring). ``name``: a task of ``miniwob_tasks()``;
    ``scale``: screen pixels per CSS pixel (2 gives a 320 x 420 observation);
    ``data_mode``: the page's ``core.setDataMode`` ("train" or "test"); ``input``: how actions
    reach the page, X input or DevTools (``BrowserTask``)."""

    def __init__(
        self,
        name: str,
        *,
        scale: float = 1.0,
        data_mode: str = "train",
        refresh_hz: int | None = 240,
        executable: str | None = None,
        input: str = "xtest",
    ) -> None:
        known = miniwob_tasks()
        if name not in known:
            close = [task for task in known if name in task or task in name][:5]
            hint = f" (close: {', '.join(close)})" if close else ""
            raise InvalidInputError(
                f"unknown MiniWoB++ task {name!r}: the installed miniwob package has "
                f"{len(known)} tasks{hint}; see mantis_fast.gym.miniwob.miniwob_tasks()"
            )
        if data_mode not in ("train", "test"):
            raise InvalidInputError(f"data_mode must be 'train' or 'test', got {data_mode!r}")
        flight = name.startswith("flight.")
        page = miniwob_html_dir() / "miniwob" / f"{name}.html"
        # A flight page's URL names this process's HTTP server: made when an episode starts.
        start_url = "about:blank" if flight else page.as_uri()
        super().__init__(
            start_url, scale=scale, refresh_hz=refresh_hz, executable=executable, input=input
        )
        self.name = name
        self.data_mode = data_mode
        area = FLIGHT_TASK_AREA if flight else TASK_AREA
        self.viewport = (round(area[0] * self.scale), round(area[1] * self.scale))
        self.utterance = ""
        self.fields: dict[str, str] = {}

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        started = self._ensure_browser(desktop)
        if self.name.startswith("flight."):
            site = self.name.removeprefix("flight.")
            self.start_url = f"{miniwob_http_base()}flight/{site}/wrapper.html"
        seed = options.get("seed")
        if seed is None:
            seed = int(rng.integers(0, 2**31 - 1))
        mode = options.get("data_mode", self.data_mode)
        answer = None if started else self._start_episode(seed, mode)
        if answer is None:  # a new browser, or the page is not the task's: load it first
            self.load(self.start_url)
            self._wait_until("typeof core !== 'undefined'")
            answer = self._start_episode(seed, mode, page=None)
        if answer is None:  # core went away under the reset (the page navigated)
            raise BrowserError(f"MiniWoB++ task {self.name!r}: the page left {self.start_url}")
        if answer == _NOT_READY:
            raise BrowserError(
                f"MiniWoB++ task {self.name!r} did not get ready within {_READY_TIMEOUT_S}s "
                "(WOB_TASK_READY)"
            )
        answer = answer[0]
        if isinstance(answer, dict):
            self.utterance = str(answer.get("utterance", ""))
            self.fields = {str(k): str(v) for k, v in (answer.get("fields") or {}).items()}
        else:  # the fields as miniwob's env reads them from the utterance
            self.utterance = str(answer)
            self.fields = {str(k): str(v) for k, v in _field_extractor(self.name)(self.utterance)}
        self.page_state = {}
        return {
            "task": self.name,
            "utterance": self.utterance,
            "fields": dict(self.fields),
            "seed": seed,
            "browser_started": started,
        }

    def _start_episode(self, seed: int, mode: str, page: str | None = "") -> Any:
        """What miniwob's env does at reset, in one round trip: end the running episode, seed,
        start the next, wait until the task is ready (most are at once) and read its
        utterance (in a list). None when the page is not ``page`` (default: ``start_url``;
        None: any page with MiniWoB++'s core), ``_NOT_READY`` past the limit."""
        url = self.start_url if page == "" else page
        other = "false" if url is None else f"location.href !== {json.dumps(url)}"
        return self.evaluate(
            f"(async () => {{ if ({other} || typeof core === 'undefined') return null; "
            f"core.endEpisode(0); Math.seedrandom({json.dumps(seed)}); "
            f"core.setDataMode({json.dumps(mode)}); core.startEpisodeReal(); "
            f"const limit = performance.now() + {_READY_TIMEOUT_S * 1e3}; "
            "while (!WOB_TASK_READY) { if (performance.now() > limit) "
            f"return {json.dumps(_NOT_READY)}; "
            "await new Promise((go) => setTimeout(go, 2)); } "
            "return [core.getUtterance()]; })()",
            await_promise=True,
        )

    def _wait_until(self, condition: str) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not self.evaluate(f"!!({condition})"):
            if time.monotonic() > deadline:
                raise BrowserError(
                    f"MiniWoB++ task {self.name!r} did not get ready within "
                    f"{_READY_TIMEOUT_S}s ({condition})"
                )
            time.sleep(0.002)

    def state_expression(self) -> str:
        return (
            "({url: location.href, done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, "
            "raw_reward: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON})"
        )

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        state = self.page_state
        done = bool(state.get("done", False))
        info["utterance"] = self.utterance
        self.report(info)
        info["raw_reward"] = float(state.get("raw_reward") or 0.0)
        if state.get("reason") is not None:
            info["reason"] = state["reason"]
        return float(state.get("reward") or 0.0), done


def miniwob_env(
    task: str,
    *,
    scale: float = 1.0,
    data_mode: str = "train",
    refresh_hz: int | None = 240,
    input: str = "xtest",
    **env_kwargs: Any,
) -> Any:
    """A ``DesktopEnv`` running MiniWoB++ task ``task`` (the entry point of the
    ``mantis_fast/miniwob-<task>-v0`` ids); ``env_kwargs`` go to ``DesktopEnv``."""
    from mantis_fast.gym.desktop import DesktopEnv

    page = MiniWoBTask(task, scale=scale, data_mode=data_mode, refresh_hz=refresh_hz, input=input)
    return DesktopEnv(page, **env_kwargs)
