"""``BrowserTask``: a web page on the desktop, in Chromium, as a ``DesktopEnv`` task.

The browser (``mantis_fast.browser.Chromium``: kiosk, fresh profile, DevTools on a pipe) starts
on the env's Xvfb at the first ``reset`` and stays up across episodes: a reset only loads
``start_url`` again, so it costs a page load, not a browser start. The agent sees the screen
and acts with XTest like on any desktop (or, with ``input="devtools"``, through DevTools input
events at the same pixels: ``mantis_fast.browser.devtools_input``); the task reads the page over
DevTools for what a screen cannot say: the URL (for the loop detector's state loops), and, in
subclasses, the reward (``mantis_fast.gym.miniwob``).

After each action the task waits for the page itself, not for the screen to stay quiet for a
while: an init script in every document counts the trusted input events it receives; the wait
goes on once the page has received the action's last event (mouse up, key up, wheel, move)
and its handlers' queued tasks have run; the page says when the frames holding its answer
began, and the step gives them the time this page's frames take to reach the screen (learned
from their DAMAGE: ``mantis_fast.x11.settle.FrameWait``), not a quiet window. A page that
navigates is waited for until its new document has loaded. Chromium paces its frames by the screen's
refresh rate, which Xvfb reports as none (taken as 60 Hz): the task sets the desktop to
``refresh_hz`` first (``mantis_fast.x11.refresh``), so a frame is a few milliseconds, not 17.

A page the page opens (``window.open``, a ``target=_blank`` link) would cover it in kiosk mode:
it is closed after the step, and ``info["popups_closed"]`` lists its URL.

A Chromium that exits or whose page crashes raises ``BrowserError`` (an ``AppError``): the env
starts it again and reports the episode truncated with the reason.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from mantis_fast import _validate
from mantis_fast.actions.model import Action, ActionType
from mantis_fast.browser.chromium import START_TIMEOUT_S, Chromium
from mantis_fast.browser.devtools_input import DevToolsInput
from mantis_fast.errors import BrowserError, DisplayError, InvalidInputError
from mantis_fast.gym.tasks import Task
from mantis_fast.x11.damage import Settled
from mantis_fast.x11.refresh import MAX_REFRESH_HZ, set_refresh_rate
from mantis_fast.x11.settle import FrameWait

__all__ = ["FRAME_WAIT_CEILING_MS", "INPUTS", "INPUT_WAIT_MS", "PAGE_QUIET_MS", "BrowserTask"]

#: How the agent's actions reach the page: X input (XTest, like any app on the desktop), or
#: DevTools' ``Input`` domain (``mantis_fast.browser.devtools_input``).
INPUTS = ("xtest", "devtools")

#: How long a step waits for the page to receive its input before it goes on (an action on
#: no page element, a move to where the pointer already is).
INPUT_WAIT_MS = 150
#: The longest a step gives the page's frame to reach the screen once it began (the wait is
#: learned from the page's own frames; this while learning, and its bound).
FRAME_WAIT_CEILING_MS = 20.0
#: For a page that took no input or runs no frames: how long the screen must stay unchanged.
PAGE_QUIET_MS = 3.0
_PAGE_TIMEOUT_S = 5.0

# Counts the trusted input events the document receives (capturing, on the window, before the
# page's own listeners) and waits for a count, the tasks its handlers queued, then a frame.
# Kept off the page's globals' enumeration; one per document (a new document starts at zero
# with a new id). Runs in every frame: a same-origin frame's events count in the top document.
_INSTRUMENT = """(() => {
  if (window.__mantis) return;
  // A same-origin frame counts into the top document: the input of a page that runs its task
  // in an iframe (FlightWoB) is still seen where the step waits for it.
  let top = null;
  try { top = window.top !== window && window.top.__mantis ? window.top.__mantis : null; }
  catch (error) { top = null; }
  const counts = {mouseup: 0, keyup: 0, wheel: 0, mousemove: 0};
  const now = () => performance.timeOrigin + performance.now();
  // Changes, inputs and frame begins are put in order by a count, not by now(): the page's
  // clock ticks in 0.1 ms, so a change just before a frame began could look simultaneous.
  let tick = 0;
  // When the page last changed what it draws (a tick), and whether it draws where no change
  // is seen (a canvas, media, a cross-origin frame): a settle whose input's first frame began
  // after the last change knows that frame draws the whole answer (watch() below).
  let changedTick = 0;
  let unwatched = false;
  const changed = () => { if (top) top.changed(); else changedTick = ++tick; };
  const unseen = () => { if (top) top.unseen(); else unwatched = true; };
  // Per event type, when the first frame after its latest event began (null: it has not
  // yet): what that input changed is drawn from that frame on. Per type, so that a later
  // event of another type (Chromium's own mouse move after a repaint under the pointer) does
  // not move the frame a step waits for past the one that drew its answer.
  const inputFrames = {mouseup: null, keyup: null, wheel: null, mousemove: null};
  const frameTicks = {mouseup: 0, keyup: 0, wheel: 0, mousemove: 0};  // those frames' ticks
  const inputTicks = {mouseup: 0, keyup: 0, wheel: 0, mousemove: 0};  // the latest events'
  const framing = new Set();  // types whose next frame is awaited
  const waiters = new Set();  // settles waiting for a count: told by the event itself
  const bump = (type) => {
    counts[type]++;
    inputFrames[type] = null;
    inputTicks[type] = ++tick;
    if (framing.size === 0) {
      requestAnimationFrame(() => {
        const began = now(), at = ++tick;
        for (const framed of framing) { inputFrames[framed] = began; frameTicks[framed] = at; }
        framing.clear();
      });
    }
    framing.add(type);
    for (const waiter of waiters) {
      if (waiter.type === type && counts[type] >= waiter.target) {
        waiters.delete(waiter);
        waiter.go();
      }
    }
  };
  for (const type of Object.keys(counts)) {
    window.addEventListener(type, (event) => {
      if (event.isTrusted) (top ? top.bump : bump)(type);
    }, true);
  }
  // What changes the screen: the DOM (shadow trees too), form controls' values, scroll
  // positions, focus, selection, style sheets' rules, loaded images and fonts, popovers;
  // what cannot be followed marks the page unwatched for good.
  const observer = new MutationObserver(changed);
  const observe = (node) => observer.observe(
    node, {subtree: true, childList: true, attributes: true, characterData: true});
  observe(document);
  const watch = (owner, names, after, reads = false) => {
    for (const name of names) {
      const found = owner && Object.getOwnPropertyDescriptor(owner, name);
      if (!found || !found.configurable) continue;
      if (reads && found.get) {
        const get = found.get;
        found.get = function () { const value = get.call(this); after(); return value; };
      } else if (found.set) {
        const set = found.set;
        found.set = function (value) { set.call(this, value); after(); };
      } else if (typeof found.value === "function") {
        const call = found.value;
        found.value = function (...args) {
          const result = call.apply(this, args);
          after(result);
          return result;
        };
      } else continue;
      Object.defineProperty(owner, name, found);
    }
  };
  watch(Element.prototype, ["attachShadow"], (root) => { if (root) observe(root); });
  const scrolls = ["scrollTop", "scrollLeft", "scroll", "scrollTo", "scrollBy", "scrollIntoView"];
  watch(Element.prototype, scrolls, changed);
  watch(window, ["scroll", "scrollTo", "scrollBy"], changed);  // the window's own, not inherited
  watch(HTMLElement.prototype, ["focus", "blur"], changed);
  watch(SVGElement.prototype, ["focus", "blur"], changed);
  const selects = ["setSelectionRange", "setRangeText", "select"];
  watch(HTMLInputElement.prototype,
        ["value", "checked", "indeterminate", "valueAsNumber", "valueAsDate", ...selects], changed);
  watch(HTMLTextAreaElement.prototype, ["value", ...selects], changed);
  watch(HTMLSelectElement.prototype, ["value", "selectedIndex"], changed);
  watch(HTMLOptionElement.prototype, ["selected"], changed);
  // A style sheet's rules change through its rule list (a rule's properties have no setters
  // to watch): reaching the list counts as a change.
  watch(CSSStyleSheet.prototype,
        ["insertRule", "deleteRule", "addRule", "removeRule", "replace", "replaceSync"], changed);
  watch(CSSStyleSheet.prototype, ["cssRules", "rules"], changed, true);
  watch(CSSGroupingRule.prototype, ["cssRules"], changed, true);
  watch(StyleSheet.prototype, ["disabled"], changed);
  watch(Document.prototype, ["adoptedStyleSheets"], changed);
  watch(ShadowRoot.prototype, ["adoptedStyleSheets"], changed);
  // a 2D canvas is followed by its drawing calls; WebGL, WebGPU and offscreen ones are not
  const drawing = (proto) => Object.getOwnPropertyNames(proto).filter((name) =>
    typeof Object.getOwnPropertyDescriptor(proto, name).value === "function" &&
    !/^(get|is|create|measure|constructor$)/.test(name));
  watch(CanvasRenderingContext2D.prototype, drawing(CanvasRenderingContext2D.prototype), changed);
  watch(HTMLCanvasElement.prototype, ["getContext"], (context) => {
    if (context && !(context instanceof CanvasRenderingContext2D)) unseen();
  });
  watch(HTMLCanvasElement.prototype, ["transferControlToOffscreen"], unseen);
  watch(HTMLMediaElement.prototype, ["play"], unseen);
  watch(Document.prototype, ["open", "write", "writeln", "execCommand"], changed);
  // (a selection the input made was made before its first frame; selectionchange comes later)
  watch(Selection.prototype, ["addRange", "removeRange", "removeAllRanges", "empty", "collapse",
                              "setPosition", "collapseToStart", "collapseToEnd", "extend",
                              "selectAllChildren", "setBaseAndExtent", "modify",
                              "deleteFromDocument"], changed);
  watch(HTMLElement.prototype, ["showPopover", "hidePopover", "togglePopover"], changed);
  for (const type of ["focusin", "focusout", "scroll", "load", "error", "toggle",
                      "beforetoggle", "input", "change", "resize"]) {
    window.addEventListener(type, changed, true);
    document.addEventListener(type, changed, true);
  }
  if (document.fonts) document.fonts.addEventListener("loadingdone", changed);
  // a frame whose document this script does not follow (cross-origin, or not instrumented)
  const foreign = () => {
    for (const frame of document.querySelectorAll("iframe, frame, object, embed")) {
      try {
        const inner = frame.contentWindow;
        if (!(inner && inner.document && inner.__mantis)) return true;
      } catch (error) { return true; }
    }
    return false;
  };
  const doc = String(performance.timeOrigin) + ":" + String(Math.random()).slice(2);
  // Once the input is in: the first frame that began after it (it draws what the handlers did
  // there and then; the next one for a settle with no input), and the frame that begins after
  // the tasks they queued (same-delay timers run in order; two hops, since this listener runs
  // before the page's). Resolves as that later frame begins, with both begin times and which
  // of the two draws the answer: the first, when nothing changed since it began, else the
  // later. The step then gives that frame time to reach the screen (learned from the first
  // frame's), rather than waiting for the screen to go quiet.
  const settle = (seenDoc, type, target, limitMs) => new Promise((resolve) => {
    const start = performance.now();
    const go = () => {
      let first = type === null ? null : inputFrames[type];
      let firstTick = first === null ? 0 : frameTicks[type];
      if (first === null) {
        requestAnimationFrame(() => {
          if (first === null) { first = now(); firstTick = ++tick; }
        });
      }
      setTimeout(() => setTimeout(() => requestAnimationFrame(() => {
        const began = now();
        // Nothing changed since the first frame began: that frame draws the whole answer.
        // (Keys not typed into a field may scroll the page on the compositor, as a wheel does.)
        const typed = type !== "keyup" || (document.activeElement &&
          (document.activeElement.isContentEditable ||
           /^(INPUT|TEXTAREA)$/.test(document.activeElement.tagName)));
        const atFirst = first !== null && type !== "wheel" && typed && !unwatched &&
          changedTick < firstTick && !foreign();
        if (first === null) first = began;
        // Whether the page changed since the input: if not, a first frame that drew nothing
        // had nothing of the page's to draw (no later frame is worth waiting for).
        const moved = type === null || changedTick > inputTicks[type];
        // the time of the answer's sending too: it keeps the page's clock in step with ours
        resolve([performance.now() - start, first, began, now(), atFirst, moved]);
      }), 0), 0);
    };
    // no frames (a hidden page)
    setTimeout(() => resolve([-2, null, null, null, false, true]), 4 * limitMs);
    if (seenDoc !== doc || type === null || counts[type] >= target) { go(); return; }
    const waiter = {type, target, go};
    waiters.add(waiter);
    setTimeout(() => {
      if (waiters.delete(waiter)) resolve([-1, null, null, null, false, true]);
    }, limitMs);
  });
  Object.defineProperty(window, "__mantis", {
    value: Object.freeze({counts, doc, settle, bump, changed, unseen})});
})();"""


def _expected_event(action: Action | None) -> tuple[str | None, int]:
    """The event type the page receives last for ``action``, and how many of it."""
    if action is None:
        return None, 0
    kind = action.action_type
    if kind in (ActionType.CLICK, ActionType.RIGHT_CLICK, ActionType.DRAG):
        return "mouseup", 1
    if kind is ActionType.DOUBLE_CLICK:
        return "mouseup", 2
    if kind is ActionType.SCROLL:
        return "wheel", 1
    if kind is ActionType.MOVE:
        return "mousemove", 1
    if kind is ActionType.TYPE:
        return "keyup", len(str(action.params.get("text", "")))
    if kind is ActionType.KEY:
        return "keyup", 1
    return None, 0


def _page_to_monotonic_ms(sent_ms: float, asked: float, received: float) -> float:
    """What to add to a page's clock (``performance.timeOrigin + now()``, ms) for
    ``time.monotonic()`` ms, from an answer the page sent at ``sent_ms``, asked for at
    ``asked`` and received at ``received`` (our seconds). The page's clock is the wall clock
    (its origin read from it, counted on from there), so the wall clock's distance from ours
    maps it to within the timers' resolution; the answer's round trip bounds the mapping,
    which only matters for a wall clock stepped since the document began."""
    offset = (time.monotonic() - time.time()) * 1e3
    mapped = sent_ms + offset
    if mapped < asked * 1e3:
        offset = asked * 1e3 - sent_ms
    elif mapped > received * 1e3:
        offset = received * 1e3 - sent_ms
    return offset


class BrowserTask(Task):
    """A page in Chromium on the desktop (see the module docstring).

    ``start_url``: loaded at every ``reset`` (``options={"start_url": ...}`` overrides it for
    one episode). ``scale``: Chromium's device scale factor. ``refresh_hz``: the refresh rate
    the desktop reports while the browser runs (None leaves it). ``input``: ``"xtest"`` (the
    default) sends the actions as X input; ``"devtools"`` sends them to the page over DevTools
    (``DevToolsInput``: the same points and key names; the X pointer stays put). Rewards are 0
    and episodes never end by themselves; ``info`` carries ``url``. ``evaluate`` runs
    JavaScript in the page (what a scripted policy may read; it acts through the screen like
    any other).
    """

    opens_windows = False  # the page's readiness is waited for over DevTools, not a window

    def __init__(
        self,
        start_url: str = "about:blank",
        *,
        scale: float = 1.0,
        refresh_hz: int | None = 240,
        executable: str | None = None,
        page_timeout: float = _PAGE_TIMEOUT_S,
        input: str = "xtest",
    ) -> None:
        if not isinstance(start_url, str) or not start_url:
            raise InvalidInputError(f"start_url must be a non-empty string, got {start_url!r}")
        if not (isinstance(scale, (int, float)) and 0.25 <= scale <= 8):
            raise InvalidInputError(f"scale must be a number in 0.25..8, got {scale!r}")
        if refresh_hz is not None and not (
            isinstance(refresh_hz, int)
            and not isinstance(refresh_hz, bool)
            and 1 <= refresh_hz <= MAX_REFRESH_HZ
        ):
            raise InvalidInputError(
                f"refresh_hz must be None or an integer in 1..{MAX_REFRESH_HZ}, got {refresh_hz!r}"
            )
        if input not in INPUTS:
            raise InvalidInputError(f"input must be one of {', '.join(INPUTS)}, got {input!r}")
        self.start_url = start_url
        self.input = input
        self.scale = float(scale)
        self.refresh_hz = refresh_hz
        self.executable = executable
        self.page_timeout = _validate.timeout(page_timeout, "page_timeout")
        self._idle()

    def _idle(self) -> None:
        self.browser: Chromium | None = None
        self._display: str | None = None
        self._doc = ""
        self._counts: dict[str, int] = {}
        self.page_state: dict[str, Any] = {}
        self.browser_starts = 0
        self.popups_closed: list[str] = []  # since the last step's info
        # How long the page's frames take to reach the screen (learned), in whose clock.
        self.frame_wait = FrameWait(FRAME_WAIT_CEILING_MS)
        self.page_wait = ""  # how the last wait for the page ended (settle_facts)
        self.page_frame = ""  # which frame drew the page's answer: "first" or "later"
        # With input="devtools": the desktop's dispatcher, the pointer it had, and ours.
        self._pointer: tuple[Any, Any, DevToolsInput] | None = None

    # A copy or a pickle (vector envs, Ray) is the settings, never the running browser.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        runtime = (
            *("browser", "_display", "_doc", "_counts", "page_state", "browser_starts"),
            *("frame_wait", "page_wait", "page_frame", "_pointer"),
        )
        for name in (*runtime, "popups_closed"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._idle()

    # -- the browser -------------------------------------------------------------------------
    def _ensure_browser(self, desktop: Any) -> bool:
        """Start Chromium on ``desktop`` unless it already runs there, and route the actions
        to it as ``input`` says; True if started."""
        started = self._start_browser(desktop)
        if self.input == "devtools":
            self._use_devtools_input(desktop)
        return started

    def _start_browser(self, desktop: Any) -> bool:
        browser = self.browser
        if browser is not None and browser.alive and self._display == desktop.display:
            return False
        self.stop()
        if self.refresh_hz is not None:
            with contextlib.suppress(DisplayError):  # a server without RandR CRTCs: 60 Hz
                set_refresh_rate(desktop.display, self.refresh_hz)
        width, height = desktop.screen_size
        self.browser = Chromium(
            desktop.display,
            size=(width, height),
            scale=self.scale,
            executable=self.executable,
            start_timeout=START_TIMEOUT_S,
        )
        self._display = desktop.display
        self.browser.add_init_script(_INSTRUMENT)
        self.browser_starts += 1
        return True

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        started = self._ensure_browser(desktop)
        url = options.get("start_url", self.start_url)
        self.load(url)
        return {"url": url, "browser_started": started}

    def _use_devtools_input(self, desktop: Any) -> None:
        """Make ``desktop``'s dispatcher send to this browser's page over DevTools (kept while
        the same browser runs on the same desktop; ``stop`` gives the dispatcher its pointer
        back)."""
        dispatcher = desktop.dispatcher
        if self._pointer is not None:
            owner, _, ours = self._pointer
            if owner is dispatcher and ours.browser is self.browser and dispatcher.pointer is ours:
                return
            self._release_pointer()
        ours = DevToolsInput(desktop.display, browser=self._browser())
        self._pointer = (dispatcher, dispatcher.pointer, ours)
        dispatcher.pointer = ours

    def _release_pointer(self) -> None:
        pointer, self._pointer = self._pointer, None
        if pointer is not None:
            dispatcher, theirs, ours = pointer
            if dispatcher.pointer is ours:
                dispatcher.pointer = theirs
            ours.close()

    def adopt_browser(self, other: BrowserTask) -> None:
        """Take over ``other``'s running browser (and leave ``other`` without one): another task
        on the same desktop without a browser start, e.g. a curriculum over MiniWoB++ tasks."""
        if not isinstance(other, BrowserTask):
            raise InvalidInputError(f"other must be a BrowserTask, got {type(other).__name__}")
        self.stop()
        other._release_pointer()  # bound to other's settings: the next start installs ours
        self.browser, self._display = other.browser, other._display
        self._doc, self._counts = other._doc, dict(other._counts)
        other.browser = other._display = None

    def load(self, url: str) -> None:
        """Load ``url`` in the page and wait until it has loaded."""
        browser = self._browser()
        browser.navigate(url, timeout=self.page_timeout)
        browser.forget_navigation()
        self._read_instrument()

    def _browser(self) -> Chromium:
        if self.browser is None:
            raise BrowserError("the browser task has no browser running (reset the env first)")
        return self.browser

    def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        """The value of JavaScript ``expression`` in the page."""
        return self._browser().evaluate(
            expression, await_promise=await_promise, timeout=self.page_timeout
        )

    def _read_instrument(self) -> None:
        found = self.evaluate(
            "window.__mantis ? [window.__mantis.doc, window.__mantis.counts] : null"
        )
        if found is None:  # a page the init script could not reach (about:, chrome:)
            self._doc, self._counts = "", {}
        else:
            self._doc, self._counts = found[0], dict(found[1])

    def css_to_screen(self, x: float, y: float) -> tuple[float, float]:
        """A point of the page (CSS pixels of the viewport) in screen pixels: the kiosk page
        starts at the screen's top-left, drawn ``scale`` times."""
        return x * self.scale, y * self.scale

    # -- steps -------------------------------------------------------------------------------
    def state_expression(self) -> str:
        """JavaScript whose value is the page state read after every settle (``page_state``)."""
        return "({url: location.href})"

    def _settle_expression(self, event: str | None, target: int) -> str:
        state = self.state_expression()
        return (
            f"window.__mantis ? window.__mantis.settle({json.dumps(self._doc)}, "
            f"{json.dumps(event)}, {target}, {INPUT_WAIT_MS}).then((frames) => "
            f"[frames, window.__mantis.doc, window.__mantis.counts, {state}])"
            f" : [[0, null, null, null, false, true], '', {{}}, {state}]"
        )

    def settle(self, desktop: Any, action: Any) -> Settled | None:
        started = time.monotonic()
        browser = self._browser()
        event, count = _expected_event(action if isinstance(action, Action) else None)
        target = self._counts.get(event, 0) + count if event else 0
        asked = time.monotonic()
        try:
            answer = self.evaluate(self._settle_expression(event, target), await_promise=True)
        except BrowserError as exc:
            if not self._navigated(exc):
                raise
            answer = None  # the old document went away under the wait
        if answer is None or browser.navigation_started():
            # The action started a navigation: wait for the new document and its frames.
            browser.wait_until_loaded(self.page_timeout)
            self._wait_for_load()
            self._read_instrument()  # the new document: its counts
            asked = time.monotonic()
            answer = self.evaluate(self._settle_expression(None, 0), await_promise=True)
        answered = time.monotonic()
        browser.forget_navigation()
        (waited, first, began, sent, at_first, moved), doc, counts, state = answer
        self._doc, self._counts = doc, dict(counts)
        self.page_state = state
        self.page_frame = "first" if at_first else "later"
        self.popups_closed += browser.close_other_pages()
        if waited < 0 or first is None or began is None:
            # The input never reached the page, it draws no frames, or it is a page the init
            # script cannot reach (about:, chrome:): the screen's own word.
            self.page_wait = {-1: "no input", -2: "no frames"}.get(waited, "not instrumented")
            screen = desktop.capture.wait_until_stable(timeout=0.25, quiet_ms=PAGE_QUIET_MS)
            stable = waited >= 0 and screen.stable
            return Settled(stable, time.monotonic() - started, screen.changes)
        offset = _page_to_monotonic_ms(sent, asked, answered)
        screen = desktop.capture.settle_after_frame(
            self.frame_wait,
            input_at=started,
            first_began=(first + offset) / 1e3,
            # The first frame draws the whole answer: waited for, unless nothing of it shows by
            # then and the page changed since the input (the frame is late), when the later
            # frame is.
            began=((first if at_first else began) + offset) / 1e3,
            undrawn_began=(began + offset) / 1e3 if at_first and moved else None,
        )
        report = self.frame_wait.last
        drawn = report is None or report.latency_ms is not None
        self.page_wait = "drawn" if drawn else "nothing drawn"
        return Settled(True, time.monotonic() - started, screen.changes)

    @staticmethod
    def _navigated(exc: BrowserError) -> bool:
        text = str(exc)
        return "context was destroyed" in text or "navigated" in text or "not find" in text

    def _wait_for_load(self) -> None:
        deadline = time.monotonic() + self.page_timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(BrowserError):
                if self.evaluate("document.readyState === 'complete' && !!window.__mantis"):
                    return
            time.sleep(0.005)
        raise BrowserError(f"the page did not finish loading within {self.page_timeout}s")

    @property
    def url(self) -> str:
        return str(self.page_state.get("url", ""))

    def settle_facts(self) -> dict[str, Any]:
        """How the last wait for the page ended (``page_wait``: "drawn", "nothing drawn",
        "no input", "no frames" or "not instrumented"), the frame wait it used and the
        latency it learned, the frame the page said draws its answer (``page_frame``: "first"
        or "later") and the one the wait ran from in the end (``waited_frame``: "later" also
        when the first showed nothing by its wait while the page had changed)."""
        facts: dict[str, Any] = {"page_wait": self.page_wait}
        report = self.frame_wait.last
        if report is not None and self.page_wait in ("drawn", "nothing drawn"):
            facts.update(frame_wait_ms=report.wait_ms, frame_latency_ms=report.latency_ms)
            facts["page_frame"] = self.page_frame
            facts["waited_frame"] = "later" if report.undrawn else self.page_frame
        return facts

    def report(self, info: dict[str, Any]) -> None:
        """Put what the page did into a step's ``info``: its URL, the popups closed."""
        info["url"] = self.url
        if self.popups_closed:
            info["popups_closed"], self.popups_closed = self.popups_closed, []

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        self.report(info)
        return 0.0, False

    def check_alive(self) -> None:
        browser = self.browser
        if browser is None:
            return
        if not browser.alive:
            code = None if browser.process is None else browser.process.poll()
            raise BrowserError(f"Chromium exited (code {code}) or stopped answering")
        devtools = browser.devtools
        if devtools is not None:
            devtools.drain()
            if any(event.get("method") == "Inspector.targetCrashed" for event in devtools.events):
                raise BrowserError("the page crashed (Chromium's renderer died)")

    def end_episode(self) -> None:
        """The browser stays up for the next episode (``start`` loads its page again)."""

    def pids(self) -> list[int]:
        return []  # the page's own readiness (DevTools) is waited for, not a window

    def stop(self) -> None:
        self._release_pointer()
        browser, self.browser = self.browser, None
        if browser is not None:
            browser.close()
