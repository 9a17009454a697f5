"""Overlays on a 1280x720 RGB frame: ``mantis_fast.annotate`` vs the same drawing with Pillow.

Run: .venv/bin/python -m pytest benchmarks/bench_overlay.py --benchmark-only -p no:cacheprovider

The scene is the agent's boot example on turn 4 of a run with the default UI_CONFIG: a bbox, a click
and four drags (a square stroke) per turn, a 4-turn trail with shrink (36 heat discs, 16 drag
lines), one bordered bbox and five labels. Every member draws that scene in place:

- ``mantis_fast``: one ``annotate`` call (validation, the trail, one kernel pass, labels), on
  one core (the default); ``_2_threads`` splits the rows over two.
- ``pillow_cached_sprites``: the fastest Pillow way we know. Each radial gradient is a sprite
  drawn once with ImageDraw as 1-px concentric rings on an RGBA layer and cached (only the first
  call pays), then blended with ``paste(sprite, box, sprite)`` (alpha compositing onto the
  opaque frame); lines, border and label boxes with ``ImageDraw.Draw(frame, "RGBA")``.
- ``pillow_rgba_layers``: the textbook way: the frame converted to RGBA, every shape drawn
  with ImageDraw on its own RGBA layer and ``alpha_composite``-d, converted back to RGB.

Before timing, each Pillow result is checked to be the same picture: mean difference below 1
level, fewer than 1 % of bytes more than 24 levels apart (Pillow snaps edges to whole pixels
where mantis_fast anti-aliases fractional ones, and draws gradients as 1-px rings).
The second group repeats it with a larger heat (``radius_scale`` 0.22: 280 px discs).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mantis_fast.pixels.overlay import Trail, UIConfig, annotate

Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
ImageFont = pytest.importorskip("PIL.ImageFont")

W, H = 1280, 720
BOX = {"x1": 200, "y1": 150, "x2": 800, "y2": 600}
SQUARE = [(300, 300, 700, 300), (700, 300, 700, 600), (700, 600, 300, 600), (300, 600, 300, 300)]


def turn_actions(turn: int) -> list[dict]:
    """A click and a square stroke, moved a little every turn."""
    d = 25 * turn
    actions = [{"name": "click", "x1": 500 + d, "y1": 400}]
    for x1, y1, x2, y2 in SQUARE:
        actions.append({"name": "drag", "x1": x1 + d, "y1": y1, "x2": x2 + d, "y2": y2})
    return actions


def desktop_frame() -> np.ndarray:
    rng = np.random.default_rng(4)
    frame = np.full((H, W, 3), 228, np.uint8)
    frame[:36] = (40, 44, 52)
    frame[150:600, 250:1050] = 255
    frame[200:560:40, 300:900] = rng.integers(0, 255, (9, 600, 3), dtype=np.uint8)
    return frame


# -- the scene as Pillow needs it: pixel geometry from the documented rules ---------------------


def place(x: float, y: float) -> tuple[float, float]:
    return x * (W - 1) / 1000, y * (H - 1) / 1000


def scene(ui: UIConfig, trail: Trail) -> dict:
    heat = ui.executed_heat
    radius = heat.radius_scale * max(W, H)
    discs, lines = [], []
    for alpha, scale, _, marks in trail.layers():
        for m in marks:
            x, y = place(m.x1, m.y1)
            if m.x2 is None:
                discs.append((x, y, radius * scale, alpha))
                continue
            x2, y2 = place(m.x2, m.y2)
            mx, my = (x + x2) / 2, (y + y2) / 2
            x, y = mx + (x - mx) * scale, my + (y - my) * scale
            x2, y2 = mx + (x2 - mx) * scale, my + (y2 - my) * scale
            discs += [(x, y, radius * scale, alpha), (x2, y2, radius * scale * 0.6, alpha)]
            lines.append((x, y, x2, y2, max(1.0, 2 * scale), alpha))
    labels = [
        (f"{m.index}. {m.name}({m.x1:g},{m.y1:g})", *place(m.x1, m.y1))
        for m in trail.layers()[-1][3]
    ]
    (bx1, by1), (bx2, by2) = place(BOX["x1"], BOX["y1"]), place(BOX["x2"], BOX["y2"])
    return {"box": (bx1, by1, bx2, by2), "discs": discs, "lines": lines, "labels": labels}


def rgba(colour, alpha: float = 1.0) -> tuple[int, int, int, int]:
    r, g, b, a = colour
    return (round(r), round(g), round(b), round(a * alpha * 255))


def stop_colour(stops, t: float):
    """The gradient at t (canvas rules, as mantis_fast.pixels.overlay documents them)."""
    if t <= stops[0].position:
        return stops[0][1:]
    for lo, hi in itertools.pairwise(stops):
        if t <= hi.position:
            f = (t - lo.position) / (hi.position - lo.position)
            return tuple(a + f * (b - a) for a, b in zip(lo[1:], hi[1:], strict=True))
    return stops[-1][1:]


def gradient_sprite(size: tuple[int, int], centre, radius: float, stops, alpha: float):
    """ImageDraw on an RGBA layer: the last stop everywhere, then 1-px rings inwards."""
    layer = Image.new("RGBA", size, rgba(stops[-1][1:], alpha))
    draw = ImageDraw.Draw(layer)
    cx, cy = centre
    for k in range(math.ceil(radius), 0, -1):
        colour = rgba(stop_colour(stops, min(k / radius, 1.0)), alpha)
        draw.ellipse([cx - k + 0.5, cy - k + 0.5, cx + k + 0.5, cy + k + 0.5], fill=colour)
    return layer


def disc_sprite(radius: float, stops, alpha: float):
    size = 2 * math.ceil(radius) + 1
    layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    ring = gradient_sprite((size, size), (size // 2, size // 2), radius, stops, alpha)
    mask = Image.new("L", (size, size), 0)
    ImageDraw.Draw(mask).ellipse([0.5, 0.5, size - 0.5, size - 0.5], fill=255)
    layer.paste(ring, (0, 0), mask)
    return layer


def clip_paste(base, sprite, x0: int, y0: int, composite: bool) -> None:
    """Blend sprite at (x0, y0), cropped to the frame (Pillow refuses negative offsets)."""
    left, top = max(0, -x0), max(0, -y0)
    right, bottom = min(sprite.width, W - x0), min(sprite.height, H - y0)
    if right <= left or bottom <= top:
        return
    part = (
        sprite.crop((left, top, right, bottom))
        if (left, top, right, bottom) != (0, 0, sprite.width, sprite.height)
        else sprite
    )
    if composite:
        base.alpha_composite(part, (x0 + left, y0 + top))
    else:
        base.paste(part, (x0 + left, y0 + top), part)


class PillowAnnotator:
    """Draws a scene with Pillow; ``cache=True`` keeps sprites between calls."""

    def __init__(self, ui: UIConfig, cache: bool) -> None:
        self.ui, self.cache, self.sprites = ui, cache, {}
        self.font = ImageFont.load_default(12)

    def sprite(self, key, make):
        if not self.cache:
            return make()
        if key not in self.sprites:
            self.sprites[key] = make()
        return self.sprites[key]

    def draw(self, image, s: dict) -> None:
        layered = not self.cache
        heat, box = self.ui.executed_heat, self.ui.bbox_heat
        base = image.convert("RGBA") if layered else image
        x1, y1, x2, y2 = s["box"]
        ix1, iy1, ix2, iy2 = (round(v) for v in (x1, y1, x2, y2))
        size = (ix2 - ix1 + 1, iy2 - iy1 + 1)
        fill = self.sprite(
            ("box", size),
            lambda: gradient_sprite(
                size, ((x2 - x1) / 2, (y2 - y1) / 2), max(size) / 2, box.fill_stops, 1.0
            ),
        )
        clip_paste(base, fill, ix1, iy1, layered)
        solid = self.solid_layer(base) if layered else ImageDraw.Draw(base, "RGBA")
        solid.rectangle(
            [ix1, iy1, ix2, iy2], outline=rgba(box.border), width=round(box.border_width)
        )
        base = self.flush(base, solid)
        for x, y, r, a in s["discs"]:
            sprite = self.sprite(
                ("disc", round(r, 3), a), lambda r=r, a=a: disc_sprite(r, heat.stops, a)
            )
            clip_paste(
                base, sprite, round(x) - sprite.width // 2, round(y) - sprite.height // 2, layered
            )
        solid = self.solid_layer(base) if layered else ImageDraw.Draw(base, "RGBA")
        for x0, y0, x1_, y1_, width, a in s["lines"]:
            solid.line([x0, y0, x1_, y1_], fill=rgba((255, 100, 20, 0.35), a), width=round(width))
        base = self.flush(base, solid)
        solid = self.solid_layer(base) if layered else ImageDraw.Draw(base, "RGBA")
        for text, x, y in s["labels"]:
            left, top, right, bottom = solid.textbbox(
                (x + 6, y - 3), text, font=self.font, anchor="ld"
            )
            solid.rectangle([left - 2, top - 2, right + 1, bottom], fill=(0, 0, 0, 178))
            solid.text((x + 6, y - 3), text, fill=(255, 255, 255, 255), font=self.font, anchor="ld")
        base = self.flush(base, solid)
        if layered:
            image.paste(base.convert("RGB"))

    def solid_layer(self, base):
        layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(layer)
        draw.base, draw.layer = base, layer
        return draw

    @staticmethod
    def flush(base, draw):
        layer = getattr(draw, "layer", None)
        if layer is not None:
            base.alpha_composite(layer)
        return base


def setup_run(radius_scale: float | None):
    ui = (
        UIConfig()
        if radius_scale is None
        else UIConfig.from_dict({"executed_heat": {"radius_scale": radius_scale}})
    )
    trail = Trail.from_ui_config(ui)
    for turn in range(1, 4):
        trail.record(turn_actions(turn), seq=turn, coords="normalized")
    return ui, trail


def mantis_annotate(frame, ui, trail, threads=1):
    actions = turn_actions(4)
    return annotate(
        frame,
        actions,
        bboxes=[BOX],
        ui_config=ui,
        trail=trail,
        seq=4,
        coords="normalized",
        threads=threads,
    )


def check_same_picture(pillow_rgb: np.ndarray, mantis_rgb: np.ndarray) -> None:
    diff = np.abs(pillow_rgb.astype(np.int16) - mantis_rgb.astype(np.int16))
    assert diff.mean() < 1.0, diff.mean()
    assert (diff > 24).mean() < 0.01, (diff > 24).mean()


def run_pillow(radius_scale, cache, benchmark):
    ui, trail = setup_run(radius_scale)
    reference = desktop_frame()
    mantis_annotate(reference, ui, trail)  # records turn 4: the scene both sides draw
    painter = PillowAnnotator(ui, cache=cache)
    s = scene(ui, trail)
    image = Image.fromarray(desktop_frame())
    painter.draw(image, s)
    check_same_picture(np.asarray(image), reference)
    image = Image.fromarray(desktop_frame())
    benchmark(painter.draw, image, s)


def run_mantis(radius_scale, benchmark, threads=1):
    ui, trail = setup_run(radius_scale)
    frame = desktop_frame()
    benchmark(mantis_annotate, frame, ui, trail, threads)
    assert len(trail) == 4


GROUP = "annotate 1280x720"
GROUP_LARGE = "annotate 1280x720, radius_scale 0.22"


@pytest.mark.benchmark(group=GROUP)
def test_annotate_mantis_fast(benchmark):
    run_mantis(None, benchmark)


@pytest.mark.benchmark(group=GROUP)
def test_annotate_pillow_cached_sprites(benchmark):
    run_pillow(None, True, benchmark)


@pytest.mark.benchmark(group=GROUP)
def test_annotate_pillow_rgba_layers(benchmark):
    run_pillow(None, False, benchmark)


@pytest.mark.benchmark(group=GROUP_LARGE)
def test_annotate_large_mantis_fast(benchmark):
    run_mantis(0.22, benchmark)


@pytest.mark.benchmark(group=GROUP_LARGE)
def test_annotate_large_mantis_fast_2_threads(benchmark):
    run_mantis(0.22, benchmark, threads=2)


@pytest.mark.benchmark(group=GROUP_LARGE)
def test_annotate_large_pillow_cached_sprites(benchmark):
    run_pillow(0.22, True, benchmark)


@pytest.mark.benchmark(group=GROUP_LARGE)
def test_annotate_large_pillow_rgba_layers(benchmark):
    run_pillow(0.22, False, benchmark)
