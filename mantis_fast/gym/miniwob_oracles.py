"""Scripted oracle policies for MiniWoB++ tasks: they read the page, and act through pixels.

Each oracle is a JavaScript expression evaluated in the task's page; its value is the next step:
``{"op": "click", "rect": [x, y, width, height], "ref": r}`` (a visible point of an element, in
CSS pixels of the viewport; ``ref`` is miniwob's element ref where its env assigned one),
``{"op": "type", "text": t}`` (type into the focused element) or ``null`` (nothing left to do).
``oracle_action`` turns that step into an ``Action`` in observation pixels, which the env
dispatches with XTest at real screen pixels: the proof that capture, coordinates and dispatch
land where the page put its elements. The same decisions drive miniwob's own env (element
clicks there) in the side-by-side benchmark.
"""

from __future__ import annotations

from typing import Any

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import InvalidInputError

__all__ = ["ORACLES", "oracle_action", "oracle_step"]

# Helpers every oracle may use: the query text, and a click on a point of an element that is
# not covered by another (click-test-2's buttons may overlap, down to one visible column).
_PRELUDE = """
const query = () => (document.querySelector('#query') || {}).textContent || '';
const quoted = () => { const m = query().match(/"([^"]*)"/); return m ? m[1] : null; };
const shows = (el, x, y) => {
  const hit = document.elementFromPoint(x, y);
  return hit && (hit === el || el.contains(hit));
};
const visiblePoint = (el) => {
  const r = el.getBoundingClientRect();
  // 25 points spread over the element first (cheap), then every CSS pixel centre of the part
  // inside the viewport, the one nearest the centre winning: a sliver left by an overlapping
  // element is found however thin.
  for (const fy of [0.5, 0.3, 0.7, 0.15, 0.85]) {
    for (const fx of [0.5, 0.3, 0.7, 0.15, 0.85]) {
      const x = r.x + r.width * fx, y = r.y + r.height * fy;
      if (shows(el, x, y)) return [x, y];
    }
  }
  const cx = r.x + r.width / 2, cy = r.y + r.height / 2;
  const bottom = Math.min(innerHeight, Math.ceil(r.bottom));
  const right = Math.min(innerWidth, Math.ceil(r.right));
  let best = null, distance = Infinity;
  for (let y = Math.max(0, Math.floor(r.top)); y < bottom; y++) {
    for (let x = Math.max(0, Math.floor(r.left)); x < right; x++) {
      const d = (x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2;
      if (d < distance && shows(el, x + 0.5, y + 0.5)) { best = [x + 0.5, y + 0.5]; distance = d; }
    }
  }
  return best;
};
const click = (el) => {
  if (!el) return null;
  const ref = el.dataset.wob_ref === undefined ? null : +el.dataset.wob_ref;
  const point = visiblePoint(el);
  if (point) return {op: 'click', rect: [point[0], point[1], 0, 0], ref: ref};
  const r = el.getBoundingClientRect();   // nowhere visible: its box, as the page laid it out
  return {op: 'click', rect: [r.x, r.y, r.width, r.height], ref: ref};
};
const byText = (selector, text) =>
  [...document.querySelectorAll(selector)].find((el) => el.textContent.trim() === text);
"""

_STEPS = {
    "click-test": "click(document.querySelector('#subbtn'))",
    "click-test-2": "click(document.querySelector('#subbtn'))",
    "click-button": "click(byText('#area button', quoted()))",
    "click-link": "click(byText('#area .alink', quoted()))",
    "focus-text": "click(document.querySelector('#tt'))",
    "click-dialog": "click(document.querySelector('.ui-dialog-titlebar-close'))",
    "click-tab": """(() => {
  const n = (query().match(/#(\\d+)/) || [])[1];
  return click(document.querySelector(`#area ul a[href="#tabs-${n}"]`));
})()""",
    "click-checkboxes": """(() => {
  const m = query().match(/^Select (.*) and click Submit\\.?$/);
  const wanted = !m || m[1] === 'nothing' ? [] : m[1].split(', ');
  for (const label of document.querySelectorAll('#boxes label')) {
    const box = label.querySelector('input');
    if (box.checked !== wanted.includes(label.textContent.trim())) return click(box);
  }
  return click(document.querySelector('#subbtn'));
})()""",
    "enter-text": """(() => {
  const field = document.querySelector('#tt');
  const want = (document.querySelector('#query .bold') || {}).textContent || '';
  if (field.value === want) return click(document.querySelector('#subbtn'));
  // Click the field once per episode whatever the DOM says: a field left focused by the last
  // episode stays document.activeElement, but the page's core.clearUserSelection() at the
  // episode's start emptied the selection, caret included: typed keys go nowhere until a click.
  if (window.__oracleFocused !== core.ept0) {
    window.__oracleFocused = core.ept0;
    return click(field);
  }
  if (field.value !== '') return {op: 'clear'};
  return {op: 'type', text: want};
})()""",
}

#: task name -> the JavaScript expression that gives its next step.
ORACLES: dict[str, str] = {
    name: f"(() => {{ {_PRELUDE} return {step}; }})()" for name, step in _STEPS.items()
}


def oracle_step(task: Any) -> dict[str, Any] | None:
    """The oracle's next step for ``task`` (a running ``MiniWoBTask``), read from its page."""
    name = getattr(task, "name", None)
    if name not in ORACLES:
        raise InvalidInputError(
            f"no oracle for MiniWoB++ task {name!r} (oracles: {', '.join(sorted(ORACLES))})"
        )
    return task.evaluate(ORACLES[name])


def oracle_action(task: Any, observation_size: tuple[int, int] | None = None) -> Action:
    """The oracle's next step for ``task`` as an ``Action`` in observation pixels
    (``observation_size``; default: the task's screen): a click at the element's visible point,
    text typed, ``ctrl+a`` to clear a field, or ``done`` when nothing is left."""
    step = oracle_step(task)
    if step is None:
        return Action(ActionType.DONE, {})
    if step["op"] == "type":
        return Action(ActionType.TYPE, {"text": step["text"]})
    if step["op"] == "clear":
        return Action(ActionType.KEY, {"keys": "ctrl+a"})
    x, y, width, height = step["rect"]
    sx, sy = task.css_to_screen(x + width / 2, y + height / 2)
    screen_w, screen_h = task.viewport
    obs_w, obs_h = observation_size or task.viewport
    px = min(max(int(sx * obs_w / screen_w), 0), obs_w - 1)
    py = min(max(int(sy * obs_h / screen_h), 0), obs_h - 1)
    return Action(ActionType.CLICK, {"x": px, "y": py})
