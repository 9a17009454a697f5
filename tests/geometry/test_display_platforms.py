"""Every platform's display list: the parsers against golden fixtures in each tool's own output
format, the displays descriptor, and the enumeration run for real (tools on PATH that print a
fixture, real sockets, a real Xvfb for the X11 fallback)."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import mantis_fast
from mantis_fast.errors import DisplayError, InvalidInputError
from mantis_fast.geometry.display_descriptor import (
    DESCRIPTOR_VERSION,
    backing_size,
    displays_descriptor,
    displays_from_descriptor,
)
from mantis_fast.geometry.display_parsers import (
    MAX_TOOL_ENTRIES,
    MAX_TOOL_OUTPUT,
    parse_hyprland_monitors,
    parse_sway_outputs,
    parse_system_profiler_displays,
    parse_windows_screens,
    parse_xrandr_monitors,
)
from mantis_fast.geometry.displays import Display, with_primary
from mantis_fast.platforms import (
    DisplaySourceFallbackWarning,
    DisplayToolError,
    DisplayToolTimeout,
    detect_display_source,
    enumerate_displays,
    enumerate_displays_with_source,
    session_type,
)
from mantis_fast.platforms.commands import run_tool
from mantis_fast.x11.monitors import list_displays
from mantis_fast.x11.xvfb import Xvfb

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "displays"
PARSERS: dict[str, Callable[..., list[Display]]] = {
    "hyprland": parse_hyprland_monitors,
    "sway": parse_sway_outputs,
    "macos": parse_system_profiler_displays,
    "windows": parse_windows_screens,
    "x11": parse_xrandr_monitors,
}
# The command each parser names as ``DisplayToolError.tool``.
TOOLS = {
    parse_hyprland_monitors: "hyprctl",
    parse_sway_outputs: "swaymsg",
    parse_system_profiler_displays: "system_profiler",
    parse_windows_screens: "powershell",
    parse_xrandr_monitors: "xrandr",
}
GOLDEN = sorted(p for p in FIXTURES.iterdir() if not p.name.endswith(".expected.json"))


def source_of(path: Path) -> str:
    prefix = path.name.split("_", 1)[0]
    return {"xrandr": "x11"}.get(prefix, prefix)


def expected_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name.split(".")[0] + ".expected.json").read_text())


# -- golden fixtures ------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_fixture(path: Path) -> None:
    source = source_of(path)
    parsed = PARSERS[source](path.read_bytes())
    assert displays_descriptor(parsed, source=source) == expected_of(path)
    assert PARSERS[source](path.read_text(encoding="utf-8-sig")) == parsed
    # The descriptor reads back to the same displays, through JSON text.
    descriptor = json.loads(json.dumps(displays_descriptor(parsed, source=source)))
    assert [(d.id, d.bounds, d.primary, d.name) for d in displays_from_descriptor(descriptor)] == [
        (d.id, d.bounds, d.primary, d.name) for d in parsed
    ]


def test_windows_utf16_output_reads_the_same() -> None:
    # Windows PowerShell redirected to a file writes UTF-16 with a BOM.
    text = (FIXTURES / "windows_three_screens.json").read_text()
    utf16 = text.encode("utf-16")
    assert parse_windows_screens(utf16) == parse_windows_screens(text)


def test_macos_main_display_id_picks_the_primary() -> None:
    text = (FIXTURES / "macos_retina_and_external.json").read_text()
    # CGMainDisplayID() = 3: the LG is the main display, placed at the origin, the rest after.
    displays = parse_system_profiler_displays(text, 3)
    assert [(d.id, d.name, d.bounds, d.primary) for d in displays] == [
        (0, "Color LCD", (2560, 0, 1512, 982), False),
        (1, "LG HDR 4K", (0, 0, 2560, 1440), True),
        (2, "DELL P2419H", (4072, 0, 1920, 1080), False),
    ]
    # An id no display has: nothing is marked, the first listed becomes primary.
    assert [d.primary for d in parse_system_profiler_displays(text, 99)] == [True, False, False]
    # Real positions from CGDisplayBounds replace the placeholder row.
    placed = parse_system_profiler_displays(text, 1, origins={3: (-2560, -458), 4: (1512, 0)})
    assert [d.origin for d in placed] == [(0, 0), (-2560, -458), (1512, 0)]


def test_macos_offline_mirrored_and_older_keys() -> None:
    def display(name: str, **keys: str) -> dict:
        return {"_name": name, "_spdisplays_resolution": "1440 x 900 @ 60Hz", **keys}

    gpus = {
        "SPDisplaysDataType": [
            {"_name": "Intel UHD Graphics 630"},  # a GPU driving nothing has no display list
            {
                "_name": "AMD Radeon Pro 5500M",
                "spdisplays_ndrvs": [
                    display(
                        "Built-in",
                        _spdisplays_pixels="2880 x 1800",
                        spdisplays_mirror="spdisplays_on",
                    ),
                    display(
                        "Projector",
                        spdisplays_mirror="spdisplays_on",
                        spdisplays_main="spdisplays_yes",
                    ),
                    display("Asleep", spdisplays_online="spdisplays_no"),
                    {"_name": "Old", "spdisplays_resolution": "1280 x 1024"},
                ],
            },
        ]
    }
    displays = parse_system_profiler_displays(json.dumps(gpus))
    # One scene per mirror set (the main member kept), the offline one skipped.
    assert [(d.id, d.name, d.bounds, d.scale_factor, d.primary) for d in displays] == [
        (0, "Projector", (0, 0, 1440, 900), 1.0, True),
        (1, "Old", (1440, 0, 1280, 1024), 1.0, False),
    ]


def test_windows_names_and_bare_object() -> None:
    one = {"Bounds": {"X": -1280, "Y": 0, "Width": 1280, "Height": 1024}, "DeviceName": "HMD"}
    assert parse_windows_screens(json.dumps(one)) == [
        Display(0, (-1280, 0, 1280, 1024), 1.0, True, "HMD")
    ]
    assert parse_windows_screens("[]") == []


# -- Hyprland's two-decimal scale -----------------------------------------------------------


@pytest.mark.parametrize(
    ("pixels", "shown", "logical", "scale"),
    [
        ((2880, 1920), 1.67, (1728, 1152), 5 / 3),  # 200/120, printed rounded
        ((2560, 1600), 1.25, (2048, 1280), 1.25),
        ((3840, 2160), 1.33, (2880, 1620), 4 / 3),
        ((3840, 2160), 1.50, (2560, 1440), 1.5),
        ((1920, 1080), 1.00, (1920, 1080), 1.0),
        ((2256, 1504), 1.57, (1440, 960), 188 / 120),  # a valid 1/120 step, not a round scale
        ((1000, 1000), 1.07, (935, 935), 1.07),  # no whole-pixel scale near: printed, rounded
    ],
)
def test_hyprland_scale_is_the_whole_pixel_one(pixels, shown, logical, scale) -> None:
    entry = {"id": 0, "name": "X", "width": pixels[0], "height": pixels[1], "x": 0, "y": 0}
    (display,) = parse_hyprland_monitors(json.dumps([{**entry, "scale": shown}]))
    assert display.size == logical and display.backing_size == pixels
    assert display.scale_factor == pytest.approx(scale, abs=1e-12)


@pytest.mark.parametrize("transform", range(8))
def test_hyprland_transforms(transform: int) -> None:
    entry = {"id": 0, "name": "X", "width": 1920, "height": 1080, "x": 5, "y": -7}
    (display,) = parse_hyprland_monitors(
        json.dumps([{**entry, "scale": 1, "transform": transform}])
    )
    turned = transform % 2 == 1
    assert display.bounds == ((5, -7, 1080, 1920) if turned else (5, -7, 1920, 1080))
    assert display.backing_size == display.size


@pytest.mark.parametrize(
    ("transform", "backing"),
    [("normal", (3000, 2000)), ("90", (2000, 3000)), ("flipped", (3000, 2000)),
     ("flipped-270", (2000, 3000)), ("180", (3000, 2000))],
)  # fmt: skip
def test_sway_transforms_turn_the_backing_size(transform: str, backing) -> None:
    output = {
        "name": "eDP-1",
        "active": True,
        "rect": {"x": 0, "y": 0, "width": 1500, "height": 1000},
        "scale": 2.0,
        "transform": transform,
        "current_mode": {"width": 3000, "height": 2000, "refresh": 60000},
    }
    (display,) = parse_sway_outputs(json.dumps([output]))
    assert display.backing_size == backing and display.bounds == (0, 0, 1500, 1000)


# -- bad input: DisplayToolError (an InvalidInputError too) naming what was wrong -----------

HYPR = {"id": 0, "name": "eDP-1", "width": 1920, "height": 1080, "x": 0, "y": 0, "scale": 1.0}
SWAY = {"name": "DP-1", "active": True, "rect": {"x": 0, "y": 0, "width": 10, "height": 10}}
MAC_DISPLAY = {
    "_name": "LCD",
    "_spdisplays_resolution": "1512 x 982",
    "_spdisplays_pixels": "3024 x 1964",
}
WIN = {"Bounds": {"X": 0, "Y": 0, "Width": 10, "Height": 10}, "DeviceName": "\\\\.\\DISPLAY1"}


def mac(*displays: dict) -> str:
    return json.dumps({"SPDisplaysDataType": [{"spdisplays_ndrvs": list(displays)}]})


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        (parse_hyprland_monitors, "", "printed nothing"),
        (parse_hyprland_monitors, "HYPRLAND_INSTANCE_SIGNATURE not set!", "not JSON"),
        (parse_hyprland_monitors, '[{"id": 0', "not JSON"),
        (parse_hyprland_monitors, "{}", "expected a JSON array, got an object"),
        (parse_hyprland_monitors, "[1]", "entry 0: expected a JSON object, got 1"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "name": 3}]), "'name' must be a string"),
        (parse_hyprland_monitors, json.dumps([{k: v for k, v in HYPR.items() if k != "width"}]),
         "monitor 'eDP-1' has no 'width'"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "width": 0}]), "'width' must be positive"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "x": 2**40}]), "'x' must be an int32"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "x": True}]), "'x' must be an int32"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "scale": 0}]), "'scale' must be in"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "scale": "1"}]), "'scale' must be a number"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "transform": 9}]),
         "'transform' must be 0..7"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "disabled": "no"}]), "'disabled' must be"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "id": -1}]),
         "display id must be a non-negative"),
        (parse_hyprland_monitors, json.dumps([HYPR, {**HYPR, "name": "b"}]),
         r"display id\(s\) \[0\] more than once"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "x": 2**31 - 100}]),
         "not a non-empty int32 rectangle"),
        (parse_sway_outputs, "[", "not JSON"),
        (parse_sway_outputs, json.dumps([{**SWAY, "rect": [0, 0, 1, 1]}]),
         "'rect': expected a JSON object"),
        (parse_sway_outputs, json.dumps([{**SWAY, "rect": {"x": 0, "y": 0, "width": 0,
                                                           "height": 5}}]),
         "output 'DP-1': bounds"),
        (parse_sway_outputs, json.dumps([{**SWAY, "transform": "sideways"}]),
         "unknown 'transform' 'sideways'"),
        (parse_sway_outputs, json.dumps([{**SWAY, "active": 1}]), "'active' must be true or false"),
        (parse_sway_outputs, json.dumps([{**SWAY, "current_mode": {"width": 5}}]),
         "current_mode has no 'height'"),
        (parse_system_profiler_displays, "[]", "expected a JSON object"),
        (parse_system_profiler_displays, "{}", "has no 'SPDisplaysDataType'"),
        (parse_system_profiler_displays, mac({"_name": "LCD"}), "'LCD' reports no resolution"),
        (parse_system_profiler_displays, mac({**MAC_DISPLAY, "_spdisplays_pixels": "big"}),
         "'_spdisplays_pixels' is not 'W x H'"),
        (parse_system_profiler_displays, mac({**MAC_DISPLAY, "_spdisplays_pixels": "3024 x 982"}),
         "are not one scale of"),
        (parse_system_profiler_displays, mac({**MAC_DISPLAY, "_spdisplays_displayID": "0x1"}),
         "must be a decimal id"),
        (parse_system_profiler_displays, mac({**MAC_DISPLAY, "_spdisplays_displayID": "\u00b2"}),
         "must be a decimal id"),
        (parse_system_profiler_displays, mac({**MAC_DISPLAY, "_spdisplays_resolution": "0 x 9"}),
         "empty resolution"),
        (parse_windows_screens, "7", "expected a JSON array, got 7"),
        (parse_windows_screens, json.dumps([{**WIN, "Bounds": "{X=0}"}]), "cannot read 'Bounds'"),
        (parse_windows_screens, json.dumps([{**WIN, "Primary": "True"}]),
         "'Primary' must be true or false"),
        (parse_windows_screens, json.dumps([{"DeviceName": "A"}]), "screen 'A' has no 'Bounds'"),
        (parse_windows_screens, "[" * 100_000, "not JSON|nested too deeply"),
        # Valid JSON: a 5,000-digit integer is read as its length, never handed to int().
        (parse_windows_screens, "[" + "1" * 5000 + "]", "screen 0: .* got a 5,000-digit integer"),
    ],
)  # fmt: skip
def test_bad_input_is_named(parser, text: str, message: str) -> None:
    with pytest.raises(DisplayToolError, match=message) as caught:
        parser(text)
    assert isinstance(caught.value, InvalidInputError) and caught.value.tool == TOOLS[parser]


@pytest.mark.parametrize("parser", list(PARSERS.values()))
@pytest.mark.parametrize("bad", [None, 5, ["[]"]])
def test_parsers_take_text_only(parser, bad) -> None:
    with pytest.raises(DisplayToolError, match="as str or bytes, got"):
        parser(bad)


def parse_or_tool_error(parser: Callable[..., list[Display]], data: Any) -> list[Display] | None:
    """The displays, or None for a ``DisplayToolError`` naming the parser's tool (and an
    ``InvalidInputError`` too); any other exception propagates and fails the test."""
    try:
        displays = parser(data)
    except DisplayToolError as exc:
        assert isinstance(exc, InvalidInputError), repr(exc)
        assert exc.tool == TOOLS[parser] and len(str(exc)) < 600, repr(exc)
        return None
    assert all(isinstance(d, Display) for d in displays)
    return displays


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(
            ["id", "name", "width", "height", "x", "y", "scale", "transform", "rect", "active",
             "current_mode", "SPDisplaysDataType", "spdisplays_ndrvs", "_spdisplays_pixels",
             "_spdisplays_resolution", "Bounds", "X", "Y", "Width", "Height", "Primary",
             "disabled", "mirrorOf", "non_desktop", "_spdisplays_displayID"]
        ) | st.text(max_size=5),
        inner,
        max_size=6,
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, parser=st.sampled_from(list(PARSERS.values())))
def test_fuzz_arbitrary_json_raises_only_tool_errors(value, parser) -> None:
    try:
        text = json.dumps(value)
    except ValueError:  # NaN is fine for Python's json, but keep the guard general
        return
    parse_or_tool_error(parser, text)


@settings(max_examples=200, deadline=None)
@given(
    data=st.one_of(st.text(), st.binary()),
    parser=st.sampled_from(list(PARSERS.values())),
)
def test_fuzz_arbitrary_text_raises_only_tool_errors(data, parser) -> None:
    parse_or_tool_error(parser, data)


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(GOLDEN), cut=st.floats(0, 1), flip=st.integers(0, 255))
def test_fuzz_truncated_and_corrupted_fixtures(path: Path, cut: float, flip: int) -> None:
    data = bytearray(path.read_bytes())
    end = int(len(data) * cut)
    parser = PARSERS[source_of(path)]
    for sample in (bytes(data[:end]), bytes(data[:end] + bytes([flip]) + data[end + 1 :])):
        parse_or_tool_error(parser, sample)


# -- hostile output: bounded time and size, typed errors ------------------------------------

# A whole child interpreter (start, import, build the text, parse) must finish in this long.
# The fixed parsers take well under a second; the ones they replace took 13 s to hours.
PARSE_DEADLINE = 10.0
PACKAGE_ROOT = Path(mantis_fast.__file__).resolve().parent.parent


def parse_in_child(parser: str, build: str) -> str:
    """Run ``parser`` on ``text`` (built by the source ``build``) in a fresh interpreter killed
    at ``PARSE_DEADLINE``: a parser that stalls fails this test instead of the suite. Returns
    ``"ok N"`` or ``"DisplayToolError <tool>: <message>"``; anything else fails."""
    source = f"""
        import json
        from mantis_fast.errors import DisplayToolError, InvalidInputError
        from mantis_fast.geometry import display_parsers
        {textwrap.indent(textwrap.dedent(build), " " * 8).strip()}
        try:
            displays = display_parsers.{parser}(text)
        except DisplayToolError as exc:
            assert isinstance(exc, InvalidInputError)
            print("DisplayToolError", exc.tool + ":", str(exc)[:500])
        else:
            print("ok", len(displays))
    """
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)}  # the package this session tests
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(source)],
            capture_output=True,
            text=True,
            timeout=PARSE_DEADLINE,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{parser} still running after {PARSE_DEADLINE}s (killed)")
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def within_deadline(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread, failing the test if it is not done within ``PARSE_DEADLINE``
    (for inputs that are quick even for a broken parser, where a child would only cost)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(PARSE_DEADLINE)
    if worker.is_alive():
        pytest.fail(f"still running after {PARSE_DEADLINE}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


HYPR_LIST = textwrap.dedent("""
    def listing(n, same_id=False):
        return json.dumps(
            [{"id": 0 if same_id else i, "name": f"M{i}", "width": 10, "height": 10,
              "x": 10 * (i % 1000), "y": 10 * (i // 1000), "scale": 1} for i in range(n)],
            separators=(",", ":"),
        )
""")


@pytest.mark.parametrize(
    ("parser", "build", "expected"),
    [
        # The duplicate-id check counted each id in the whole list: 181 s for these.
        ("parse_hyprland_monitors", HYPR_LIST + "text = listing(100_000)",
         "DisplayToolError hyprctl: hyprctl monitors -j lists 100,000 entries, more than the "
         "4,096 a display list can hold"),
        ("parse_sway_outputs",
         "text = json.dumps([{'name': f'O{i}', 'rect': {'x': 10 * i, 'y': 0, 'width': 10, "
         "'height': 10}} for i in range(40_000)])",
         "DisplayToolError swaymsg: swaymsg -t get_outputs lists 40,000 entries"),
        ("parse_windows_screens",
         "text = json.dumps([{'Bounds': {'X': 10 * i, 'Y': 0, 'Width': 10, 'Height': 10}} "
         "for i in range(40_000)])",
         "DisplayToolError powershell: PowerShell [Screen]::AllScreens lists 40,000 screens"),
        ("parse_xrandr_monitors",
         "text = ''.join(f' {i}: +M{i} 10/1x10/1+{10 * i}+0  M{i}\\n' for i in range(40_000))",
         "DisplayToolError xrandr: xrandr lists 4,097 monitor lines, more than the 4,096"),
        # At the cap: linear (this many repeated ids took the old check seconds).
        ("parse_hyprland_monitors", HYPR_LIST + "text = listing(4096)", "ok 4096"),
        ("parse_hyprland_monitors", HYPR_LIST + "text = listing(4096, same_id=True)",
         r"DisplayToolError hyprctl: hyprctl monitors -j lists display id(s) [0] more than once"),
        ("parse_xrandr_monitors",
         "text = ''.join(f' {i}: M{i} 10x10+{10 * i}+0\\n' for i in range(4096))", "ok 4096"),
        # One regex over the whole line backtracked: 13-20 s for the first, hours for the second.
        ("parse_xrandr_monitors", "text = ' 0: A' + ' ' * 32_000",
         "DisplayToolError xrandr: cannot parse xrandr monitor line '0: A'"),
        ("parse_xrandr_monitors", "text = ' 0: ' + ' ' * 32_000 + 'x'",
         "DisplayToolError xrandr: cannot parse xrandr monitor line '0:       "),
        ("parse_xrandr_monitors", "text = ' 0: A' + ' ' * 8_000_000 + '1x1+0+0'", "ok 1"),
        # Past the size cap: refused unread, whatever it holds.
        ("parse_sway_outputs", "text = b'[' + b' ' * (8 * 1024 * 1024) + b']'",
         "DisplayToolError swaymsg: swaymsg -t get_outputs output is 8,388,610 bytes, more than "
         "the 8,388,608 a display list can take"),
        ("parse_xrandr_monitors", "text = ' 0: A 1x1+0+0\\n' * 1_000_000",
         "DisplayToolError xrandr: xrandr output is 14,000,000 characters"),
    ],
    ids=["hyprland-100k", "sway-40k", "windows-40k", "xrandr-40k", "hyprland-4096",
         "hyprland-4096-same-id", "xrandr-4096", "xrandr-32k-spaces", "xrandr-32k-spaces-head",
         "xrandr-8M-spaces", "sway-8MiB", "xrandr-14M"],
)  # fmt: skip
def test_hostile_output_is_answered_in_bounded_time(parser: str, build: str, expected: str):
    assert parse_in_child(parser, build).startswith(expected)


def test_the_size_cap_is_exact() -> None:
    listing = json.dumps([HYPR]).encode()
    padded = listing + b" " * (MAX_TOOL_OUTPUT - len(listing))
    assert len(parse_hyprland_monitors(padded)) == 1
    with pytest.raises(DisplayToolError, match=f"is {MAX_TOOL_OUTPUT + 1:,} bytes, more than"):
        parse_hyprland_monitors(padded + b" ")
    with pytest.raises(DisplayToolError, match=f"is {MAX_TOOL_OUTPUT + 1:,} characters"):
        parse_windows_screens(padded.decode() + " ")
    at_cap = json.dumps([{**WIN, "DeviceName": f"D{i}"} for i in range(MAX_TOOL_ENTRIES)])
    assert len(parse_windows_screens(at_cap)) == MAX_TOOL_ENTRIES
    one_more = json.dumps([WIN] * (MAX_TOOL_ENTRIES + 1))
    with pytest.raises(DisplayToolError, match=f"lists {MAX_TOOL_ENTRIES + 1:,} screens"):
        parse_windows_screens(one_more)


DIGITS = "1" * 5000


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        # int() of these raised Python's own "Exceeds the limit (4300 digits)" ValueError.
        (parse_xrandr_monitors, f" 0: A {DIGITS}x10+0+0\n", "a number of 5,000 digits"),
        (parse_xrandr_monitors, f" 0: A 10/{DIGITS}x10+0+0\n", None),
        (parse_xrandr_monitors, f" 0: A 10x10+0-{DIGITS}\n", "a number of 5,000 digits"),
        (parse_xrandr_monitors, f" {DIGITS}: A 10x10+0+0\n", "a number of 5,000 digits"),
        (parse_xrandr_monitors, f" 0: A 10x10+0+0\n 0{DIGITS}: B 10x10+0+0\n",
         "a number of 5,000 digits"),
        (parse_xrandr_monitors, f" 0: A 10x10+0+{'0' * 5000}7\n", None),  # leading zeros: 7
        (parse_windows_screens, json.dumps([{**WIN, "Bounds": f"{{X={DIGITS},Y=0,Width=1,"
                                                              "Height=1}"}]),
         r"screen 'DISPLAY1' 'Bounds' '\{X=1111.*: a number of 5,000 digits is out of range"),
        (parse_windows_screens, f'[{{"Bounds": {{"X": {DIGITS}, "Y": 0, "Width": 1, '
                                '"Height": 1}}]', "'X' must be an int32 integer, got a 5,000"),
        (parse_hyprland_monitors, json.dumps([HYPR])[:-2] + f', "x": -{DIGITS}}}]',
         "'x' must be an int32 integer, got a 5,000-digit integer"),
        (parse_hyprland_monitors, json.dumps([{**HYPR, "scale": 10**400}]), "'scale' must be in"),
        (parse_hyprland_monitors, json.dumps([HYPR])[:-2] + f', "refreshRate": {DIGITS}}}]',
         None),  # a field nobody reads may hold anything
        (parse_sway_outputs, json.dumps([SWAY])[:-2] + f', "current_mode": {{"width": {DIGITS}, '
                                                       '"height": 1}}]',
         "'width' must be an int32 integer, got a 5,000-digit integer"),
        (parse_system_profiler_displays,
         json.dumps({"SPDisplaysDataType": [{"spdisplays_vram": 1, "spdisplays_ndrvs": [
             {**MAC_DISPLAY, "_spdisplays_resolution": f"{DIGITS} x 982"}]}]}),
         "'_spdisplays_resolution' is not 'W x H', got '1111"),
        (parse_system_profiler_displays,
         f'{{"SPDisplaysDataType": [{{"spdisplays_vram": {DIGITS}, "spdisplays_ndrvs": '
         f'{json.dumps([MAC_DISPLAY])}}}]}}', None),
    ],
)  # fmt: skip
def test_numbers_of_any_length_are_never_converted(parser, text: str, message) -> None:
    if message is None:
        assert within_deadline(lambda: parse_or_tool_error(parser, text)) is not None
    else:
        with pytest.raises(DisplayToolError, match=message):
            within_deadline(lambda: parser(text))


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        (parse_hyprland_monitors, json.dumps([{**HYPR, "name": "N" * 10**6, "width": 0}]),
         r"monitor 'NNNN+\.\.\.: 'width' must be positive"),
        (parse_sway_outputs, json.dumps([{**SWAY, "transform": "T" * 10**6}]),
         r"unknown 'transform' 'TTT+\.\.\. \(one of"),
        (parse_windows_screens, json.dumps([{"DeviceName": "D" * 10**6}]), "has no 'Bounds'"),
        (parse_system_profiler_displays, mac({"_name": "L" * 10**6}), "reports no resolution"),
        (parse_xrandr_monitors, " 0: " + "name " * 200_000, "cannot parse xrandr monitor line"),
        (parse_hyprland_monitors, "not json " * 100_000, "is not JSON"),
    ],
)  # fmt: skip
def test_quoted_text_in_a_message_is_cut(parser, text: str, message: str) -> None:
    with pytest.raises(DisplayToolError, match=message) as caught:
        within_deadline(lambda: parser(text))
    assert len(str(caught.value)) < 300


def test_macos_arguments_are_the_callers_errors() -> None:
    text = mac(MAC_DISPLAY)
    for main in ("1", 1.0, True, [1]):
        with pytest.raises(InvalidInputError, match="main_display_id must be") as caught:
            parse_system_profiler_displays(text, main)
        assert not isinstance(caught.value, DisplayToolError)
    for origins, message in [
        ([(0, 0)], "origins must be a mapping"),
        ({1: (0,)}, r"origin of display 1 must be \(x, y\), got \(0,\)"),
        ({1: (10**5000, "a")}, r"must be integers, got \(a huge int, 'a'\)"),
        ({1: (10**5000, 1, 2)}, "must be \\(x, y\\), got <a tuple holding an int too large"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            parse_system_profiler_displays(text, origins=origins)
    assert parse_system_profiler_displays(text, 7, origins={7: (-5, 9)}) == [
        Display(0, (0, 0, 1512, 982), 2.0, True, "LCD", backing_size=(3024, 1964))
    ]


# What a hostile tool prints, from pieces the parsers treat specially: runs of blanks, long
# digit strings, signs and separators of a geometry, JSON brackets and numbers.
HOSTILE_PIECES = st.sampled_from(
    [" ", "  ", "\t", "\n", "\r\n", "\u2028", "0", "7", "12", "-", "+", "+-", "*", "+*", ":",
     "x", "X", "/", "=", ",", "{", "}", "[", "]", '"', "A", "eDP-1", "é", "1920/344x1080/193",
     "+0+0", "-1920+180", "10x10", "Bounds", "X=", "Width=", "1" * 5000, "0" * 60, "1e999",
     "-1e999", "NaN", "9" * 41, "null", "true"]
)  # fmt: skip
hostile_text = st.one_of(
    st.lists(HOSTILE_PIECES, max_size=40).map("".join),
    st.tuples(st.sampled_from(["", " 0: ", " 3: +*", "[", "{"]), HOSTILE_PIECES,
              st.integers(0, 400), st.lists(HOSTILE_PIECES, max_size=8))
    .map(lambda t: t[0] + t[1] * t[2] + "".join(t[3])),
)  # fmt: skip
# JSON the parsers might meet, with leaves no real tool prints: huge integers (HUGE becomes a
# 5,000-digit one, past what Python turns into text), infinite floats, long strings.
HUGE = "<a 5,000-digit integer>"
hostile_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([HUGE, -(10**400), 2**31])
    | st.floats() | st.text(max_size=12) | st.sampled_from(["x" * 5000, "1 x 1", "{X=1}"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(sorted({*HYPR, *SWAY, *MAC_DISPLAY, *WIN, "rect",
                                               "current_mode", "SPDisplaysDataType",
                                               "spdisplays_ndrvs", "X", "Y", "Width",
                                               "Height", "transform", "mirrorOf"})),
                      inner, max_size=7),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hostile_text, parser=st.sampled_from(list(PARSERS.values())))
def test_fuzz_hostile_text_raises_only_tool_errors(data: str, parser) -> None:
    within_deadline(lambda: parse_or_tool_error(parser, data))
    within_deadline(lambda: parse_or_tool_error(parser, data.encode()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_json, parser=st.sampled_from(list(PARSERS.values())))
def test_fuzz_hostile_json_raises_only_tool_errors(value, parser) -> None:
    text = json.dumps(value).replace(json.dumps(HUGE), DIGITS)  # NaN, Infinity too
    within_deadline(lambda: parse_or_tool_error(parser, text))


# -- the descriptor -------------------------------------------------------------------------


def test_descriptor_schema() -> None:
    displays = [
        Display(0, (0, 0, 1512, 982), 2.0, True, "Color LCD"),  # backing derived: 3024x1964
        Display(7, (-1920, 0, 1920, 1080), 1.0, False, "HDMI-1"),
        Display(2, (1512, 0, 1728, 1117), 5 / 3, False, "odd", backing_size=(2880, 1862)),
    ]
    descriptor = displays_descriptor(displays, source="x11")
    assert descriptor == {
        "version": DESCRIPTOR_VERSION,
        "source": "x11",
        "primary": 0,
        "displays": [
            {"id": 0, "name": "Color LCD", "bounds": [0, 0, 1512, 982], "scale_factor": 2.0,
             "primary": True, "backing_size": [3024, 1964]},
            {"id": 7, "name": "HDMI-1", "bounds": [-1920, 0, 1920, 1080], "scale_factor": 1.0,
             "primary": False},
            {"id": 2, "name": "odd", "bounds": [1512, 0, 1728, 1117],
             "scale_factor": 5 / 3, "primary": False, "backing_size": [2880, 1862]},
        ],
    }  # fmt: skip
    assert json.loads(json.dumps(descriptor)) == descriptor
    assert displays_descriptor([]) == {
        "version": 1,
        "source": None,
        "primary": None,
        "displays": [],
    }
    # No display marked primary: the descriptor names the first, as resolve_display would.
    assert displays_descriptor([Display(4, (0, 0, 1, 1)), Display(5, (1, 0, 1, 1))])["primary"] == 4
    assert backing_size(Display(0, (0, 0, 5, 5), 1e-300)) == (1, 1)


display_lists = st.lists(
    st.builds(
        Display,
        st.integers(0, 2**31 - 1),
        st.tuples(
            st.integers(-(2**20), 2**20), st.integers(-(2**20), 2**20),
            st.integers(1, 2**16), st.integers(1, 2**16),
        ),
        st.floats(0.25, 8),
        st.booleans(),
        st.text(max_size=10),
        st.none() | st.tuples(st.integers(1, 2**17), st.integers(1, 2**17)),
    ),
    max_size=5,
    unique_by=lambda d: d.id,
)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(displays=display_lists)
# a device-pixel size as big as the logical one at scale 2: the reader's derived size differs
@example(displays=[Display(0, (0, 0, 1, 1), 2.0, False, "", (1, 1))])
def test_descriptor_round_trip(displays: list[Display]) -> None:
    descriptor = json.loads(json.dumps(displays_descriptor(displays, source="sway")))
    back = displays_from_descriptor(descriptor)
    expected = with_primary(displays) if displays else []  # exactly one primary, as documented
    assert [(d.id, d.bounds, d.scale_factor, d.primary, d.name) for d in back] == [
        (d.id, d.bounds, d.scale_factor, d.primary, d.name) for d in expected
    ]
    flagged = [d.id for d in back if d.primary]
    assert descriptor["primary"] == (flagged[0] if flagged else None)
    assert len(flagged) == (1 if displays else 0)
    assert [backing_size(d) for d in back] == [backing_size(d) for d in displays]


@pytest.mark.parametrize(
    ("descriptor", "message"),
    [
        ([], "is a JSON object, got list"),
        ({"version": 2, "displays": []}, "version must be 1, got 2"),
        ({"version": True, "displays": []}, "version must be 1, got True"),
        ({"version": 1}, "no 'displays' array"),
        ({"version": 1, "displays": [5]}, "display 0 must be an object"),
        ({"version": 1, "displays": [{"id": 0}]}, r"has no \['bounds'"),
        ({"version": 1, "displays": [{"id": 0, "bounds": [0, 0, 1, 1], "scale_factor": 1,
                                      "primary": "yes", "name": ""}]}, "'primary' must be"),
        ({"version": 1, "displays": [{"id": 0, "bounds": [0, 0, 0, 1], "scale_factor": 1,
                                      "primary": True, "name": ""}]}, "non-empty int32"),
        ({"version": 1, "displays": [{"id": 0, "bounds": [0, 0, 1, 1], "scale_factor": 1,
                                      "primary": True, "name": "", "backing_size": [0, 1]}]},
         r"backing_size must be a \(width, height\) pair"),
        ({"version": 1, "displays": [{"id": 0, "bounds": [0, 0, 1, 1], "scale_factor": 1,
                                      "primary": True, "name": ""}] * 2}, "repeats display ids"),
        ({"version": 1, "primary": None, "displays": [
            {"id": i, "bounds": [i, 0, 1, 1], "scale_factor": 1, "primary": False, "name": ""}
            for i in (0, 1)]}, r"exactly one display primary, got ids \[\]"),
        ({"version": 1, "primary": 0, "displays": [
            {"id": i, "bounds": [i, 0, 1, 1], "scale_factor": 1, "primary": True, "name": ""}
            for i in (0, 1)]}, r"exactly one display primary, got ids \[0, 1\]"),
        ({"version": 1, "primary": 5, "displays": [{"id": 0, "bounds": [0, 0, 1, 1],
          "scale_factor": 1, "primary": True, "name": ""}]}, "'primary' is 5, but .* is 0"),
        ({"version": 1, "displays": [{"id": 0, "bounds": [0, 0, 1, 1],
          "scale_factor": 1, "primary": True, "name": ""}]}, "'primary' is None, but .* is 0"),
        # Numbers past float64 and past Python's int-to-text limit: named, never a bare
        # OverflowError or "Exceeds the limit (4300 digits)" ValueError.
        ({"version": 1, "primary": 0, "displays": [{"id": 0, "bounds": [0, 0, 1, 1],
          "scale_factor": 10**400, "primary": True, "name": ""}]},
         "scale_factor must be a positive number"),
        ({"version": 1, "primary": 1, "displays": [{"id": 10**5000, "bounds": [0, 0, 1, 1],
          "scale_factor": 1, "primary": True, "name": ""}]},
         "'primary' is 1, but .* is <an int of 16610 bits>"),
        ({"version": 1, "primary": 0, "displays": [{"id": 10**5000, "bounds": [0, 0, 1, 1],
          "scale_factor": 1, "primary": False, "name": ""}] * 2},
         "repeats display ids: <a list holding an int too large to print>"),
        ({"version": 1, "primary": 0, "displays": [{"id": i, "bounds": [0, 0, 1, 1],
          "scale_factor": 1, "primary": True, "name": ""} for i in range(10**5)]},
         r"got ids \[0, 1, .*, 9\] and 99990 more$"),
    ],
)  # fmt: skip
def test_bad_descriptor_is_named(descriptor, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        displays_from_descriptor(descriptor)


def test_descriptor_takes_displays_only() -> None:
    with pytest.raises(InvalidInputError, match="sequence of Display, got Display"):
        displays_descriptor(Display(0, (0, 0, 1, 1)))
    with pytest.raises(InvalidInputError, match="hold Display objects, got tuple"):
        displays_descriptor([(0, 0, 1, 1)])


# -- detection: real sockets ----------------------------------------------------------------


@pytest.fixture
def unix_socket() -> Iterator[Callable[[Path], Path]]:
    servers: list[socket.socket] = []

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        servers.append(server)
        return path

    yield make
    for server in servers:
        server.close()


def test_detect_prefers_hyprland_then_sway_then_x11(tmp_path: Path, unix_socket) -> None:
    runtime = tmp_path / "run"
    hypr = unix_socket(runtime / "hypr" / "abc_123_456" / ".socket.sock")
    sway = unix_socket(tmp_path / "sway-ipc.sock")
    both = {
        "XDG_RUNTIME_DIR": str(runtime),
        "HYPRLAND_INSTANCE_SIGNATURE": "abc_123_456",
        "SWAYSOCK": str(sway),
    }
    assert detect_display_source(both, platform="linux") == "hyprland"
    assert detect_display_source({**both, "HYPRLAND_INSTANCE_SIGNATURE": "gone"},
                                 platform="linux") == "sway"  # fmt: skip
    assert detect_display_source({"SWAYSOCK": str(sway)}, platform="linux") == "sway"
    # A variable left behind with no socket (the compositor exited) is no compositor.
    hypr.unlink()
    assert detect_display_source(both, platform="linux") == "sway"
    regular = tmp_path / "not-a-socket"
    regular.write_text("")
    assert detect_display_source({"SWAYSOCK": str(regular)}, platform="linux") == "x11"
    assert detect_display_source({"HYPRLAND_INSTANCE_SIGNATURE": "../x"}, platform="linux") == "x11"
    assert detect_display_source({}, platform="linux") == "x11"
    assert detect_display_source({}, platform="freebsd14") == "x11"
    assert detect_display_source(both, platform="darwin") == "macos"
    assert detect_display_source({}, platform="win32") == "windows"


# -- enumeration: real processes ------------------------------------------------------------


@pytest.fixture
def tools(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """Write executables into a bin directory; return an environment whose PATH is only it
    (plus /bin for the shell's own tools)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def write(**scripts: str) -> dict[str, str]:
        for name, body in scripts.items():
            path = bin_dir / name
            path.write_text("#!/bin/sh\n" + body + "\n")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}

    return write


def prints(path: Path) -> str:
    return f"cat '{path}'"


@pytest.mark.parametrize(
    ("source", "tool", "fixture"),
    [
        ("hyprland", "hyprctl", "hyprland_laptop_rotated.json"),
        ("sway", "swaymsg", "sway_scaled_rotated_inactive.json"),
        ("windows", "powershell", "windows_three_screens.json"),
    ],
)
def test_enumerate_runs_the_platform_tool(tools, source: str, tool: str, fixture: str) -> None:
    env = tools(**{tool: 'echo "$@" > "$HOME/args"; echo "$LC_ALL" >> "$HOME/args"; '
                         + prints(FIXTURES / fixture)})  # fmt: skip
    displays = enumerate_displays(source, environ=env)
    assert displays_descriptor(displays, source=source) == expected_of(FIXTURES / fixture)
    args = (Path(env["HOME"]) / "args").read_text().splitlines()
    expected_args = {
        "hyprland": "monitors -j",
        "sway": "-r -t get_outputs",
        "windows": "-NoProfile -NonInteractive -Command",
    }[source]
    assert args[0].startswith(expected_args)
    if source != "windows":
        assert args[1] == "C"  # the tools' numbers are read in the C locale


def test_enumerate_macos_asks_for_the_main_display(tools) -> None:
    fixture = FIXTURES / "macos_retina_and_external.json"
    env = tools(system_profiler=prints(fixture), osascript="echo 3")
    assert [d.primary for d in enumerate_displays("macos", environ=env)] == [False, True, False]
    # Without JXA's answer, system_profiler's own main mark decides.
    env = tools(system_profiler=prints(fixture), osascript="exit 1")
    assert [d.primary for d in enumerate_displays("macos", environ=env)] == [True, False, False]


def test_auto_picks_hyprland_by_its_socket(tmp_path: Path, tools, unix_socket) -> None:
    env = tools(hyprctl=prints(FIXTURES / "hyprland_left_mirror.json"))
    unix_socket(tmp_path / "run" / "hypr" / "sig" / ".socket.sock")
    env.update(XDG_RUNTIME_DIR=str(tmp_path / "run"), HYPRLAND_INSTANCE_SIGNATURE="sig")
    assert [d.id for d in enumerate_displays(environ=env)] == [3, 4]


@pytest.mark.parametrize(
    ("script", "error", "message"),
    [
        (None, DisplayToolError, "swaymsg not found on PATH"),
        ("echo 'sway socket not detected.' >&2; exit 2", DisplayToolError,
         "swaymsg exited with status 2: sway socket not detected."),
        ("echo 'Unable to retrieve outputs'", DisplayToolError,
         "swaymsg printed what cannot be read: .*not JSON"),
        ("echo '[]'", DisplayToolError, "swaymsg reported no active display"),
        ("echo '[{\"name\": \"DP-1\", \"active\": false}]'", DisplayToolError,
         "reported no active display"),
        ("kill -9 $$", DisplayToolError, "exited with status -9"),
    ],
)  # fmt: skip
def test_a_failing_tool_is_a_display_error(tools, script, error, message) -> None:
    env = tools(**({"swaymsg": script} if script else {}))
    with pytest.raises(error, match=message) as caught:
        enumerate_displays("sway", environ=env)
    assert isinstance(caught.value, DisplayError) and caught.value.tool == "swaymsg"


@pytest.mark.parametrize(
    "script",
    [
        "sleep 60",  # hangs
        "sleep 60 & echo '[]'",  # exits, but a child keeps the output pipe open
        "trap '' TERM; while :; do :; done",  # ignores SIGTERM and spins
    ],
)
def test_a_hanging_tool_is_killed_within_the_timeout(tools, tmp_path: Path, script: str) -> None:
    env = tools(hyprctl=f"echo $$ > '{tmp_path}/pid'; " + script)
    start = time.monotonic()
    with pytest.raises(DisplayToolTimeout, match=r"hyprctl did not finish within 0.5s"):
        enumerate_displays("hyprland", environ=env, timeout=0.5)
    assert time.monotonic() - start < 5
    # Its whole process group is gone (no member left running).
    group = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _group_alive(group):
        time.sleep(0.05)
    assert not _group_alive(group)


def _group_alive(group: int) -> bool:
    """A process of this group that is running (zombies awaiting a reaper do not count)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def test_output_is_capped() -> None:
    with pytest.raises(DisplayToolError, match="yes wrote more than 65536 bytes"):
        run_tool(["yes"], timeout=10, max_output=65536)
    for bad in ([], "hyprctl", [b"hyprctl"]):
        with pytest.raises(InvalidInputError, match="argv must be a non-empty sequence"):
            run_tool(bad, timeout=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": "wayland"}, "source must be 'auto' or one of"),
        ({"timeout": 0}, r"timeout must be seconds in \(0, 3600\], got 0"),
        ({"timeout": math.nan}, "timeout must be seconds in .*got nan"),
        ({"timeout": "5"}, "timeout must be seconds in .*got '5'"),
    ],
)
def test_enumerate_arguments(kwargs, message) -> None:
    with pytest.raises(InvalidInputError, match=message):
        enumerate_displays(**kwargs)


# -- the X11 fallback, on a real Xvfb -------------------------------------------------------


@pytest.mark.parametrize("fresh_xvfb", [(3000, 1000)], indirect=True)
def test_x11_fallback_lists_randr_monitors(fresh_xvfb: Xvfb, tmp_path: Path) -> None:
    for args in (
        ("left", "1800/400x1000/200+0+0", "screen"),
        ("right", "1200/300x800/200+1800+0", "none"),
    ):
        subprocess.run(["xrandr", "--setmonitor", *args], env=fresh_xvfb.env(), check=True)
    # A Hyprland signature whose socket is gone, and no sway: X it is.
    env = {"DISPLAY": fresh_xvfb.display, "HYPRLAND_INSTANCE_SIGNATURE": "old",
           "XDG_RUNTIME_DIR": str(tmp_path), "PATH": os.defpath}  # fmt: skip
    assert detect_display_source(env, platform="linux") == "x11"
    displays = enumerate_displays(environ=env)
    assert displays == list_displays(fresh_xvfb.display)
    assert [(d.name, d.bounds, d.primary) for d in displays] == [
        ("left", (0, 0, 1800, 1000), True),
        ("right", (1800, 0, 1200, 800), False),
    ]
    assert displays_descriptor(displays, source="x11")["displays"][1] == {
        "id": 1, "name": "right", "bounds": [1800, 0, 1200, 800], "scale_factor": 1.0,
        "primary": False,
    }  # fmt: skip


def test_x11_without_a_display_is_a_display_error() -> None:
    with pytest.raises(DisplayError, match="cannot connect to X display ':5999'"):
        enumerate_displays("x11", display=":5999", environ={})


# -- seed 003: "Linux Wayland | hyprctl monitors -j / swaymsg -t get_outputs (else falls back
# to X)"; XDG_SESSION_TYPE consulted as upstream's enumerateLinux does ------------------------

SEED_WAYLAND_ROW = "hyprctl monitors -j / swaymsg -t get_outputs (else falls back to X)"
XWAYLAND_LAYOUT = (  # what the module's X server (standing in for XWayland) reports
    ("*main", "1600/400x900/200+0+0", "screen"),
    ("side", "800/200x600/150+1600+0", "none"),
)


@pytest.fixture(scope="module")
def xwayland() -> Iterator[Xvfb]:
    """A real X server with two RandR monitors: the X11 source a compositor falls back to."""
    with Xvfb(size=(2400, 900), depth=24) as server:
        for args in XWAYLAND_LAYOUT:
            subprocess.run(
                ["xrandr", "--setmonitor", *args], env=server.env(), check=True, capture_output=True
            )
        yield server


@pytest.fixture
def compositor(tmp_path: Path, unix_socket) -> Callable[[str], dict[str, str]]:
    """The variables a running Hyprland or sway leaves, with a real socket behind them."""

    def make(source: str) -> dict[str, str]:
        if source == "hyprland":
            unix_socket(tmp_path / "run" / "hypr" / "sig" / ".socket.sock")
            return {"XDG_RUNTIME_DIR": str(tmp_path / "run"), "HYPRLAND_INSTANCE_SIGNATURE": "sig"}
        return {"SWAYSOCK": str(unix_socket(tmp_path / "sway-ipc.sock"))}

    return make


# (script, the end of what the warning says after "<source> was detected but <tool> ...")
BROKEN_TOOLS = {
    "missing": (None, "not found on PATH"),
    "fails": ("echo 'Could not connect to socket' >&2; exit 3", "exited with status 3: Could not"),
    "junk": ("echo 'ok: unknown request'", "printed what cannot be read: .*not JSON"),
    "no display": ("echo '[]'", "reported no active display"),
    "killed": ("kill -9 $$", "exited with status -9"),
    "hangs": ("sleep 60", r"did not finish within 0\.5s"),
}


@pytest.mark.x11
@pytest.mark.parametrize("case", list(BROKEN_TOOLS))
@pytest.mark.parametrize(("source", "tool"), [("hyprland", "hyprctl"), ("sway", "swaymsg")])
def test_a_detected_compositor_whose_tool_fails_falls_back_to_x11(
    xwayland: Xvfb, tools, compositor, source: str, tool: str, case: str
) -> None:
    """Seed 003, Linux Wayland: "hyprctl monitors -j / swaymsg -t get_outputs (else falls back
    to X)"; upstream's enumerateWayland() returns [] when the tool throws or parses to nothing,
    and enumerateLinux() then lists X (XWayland). Here the fallback names the tool and why."""
    script, why = BROKEN_TOOLS[case]
    env = tools(**({tool: script} if script else {}))
    env.update(compositor(source), DISPLAY=xwayland.display, XDG_SESSION_TYPE="wayland")
    assert detect_display_source(env, platform="linux") == source
    with pytest.warns(DisplaySourceFallbackWarning) as seen:
        used, displays = enumerate_displays_with_source(environ=env, timeout=0.5)
    (warning,) = seen
    assert warning.filename == __file__  # names the caller's line
    message = str(warning.message)
    assert re.match(f"{source} was detected but {tool} {why}", message), message
    assert f"X11 (XWayland) monitors of {xwayland.display} instead" in message
    assert warning.message.source == source and warning.message.fallback == "x11"
    assert isinstance(warning.message.error, DisplayToolError)
    assert warning.message.error.tool == tool
    assert isinstance(warning.message.error, DisplayToolTimeout) == (case == "hangs")
    assert used == "x11"
    assert displays == list_displays(xwayland.display)
    assert [(d.name, d.bounds, d.primary) for d in displays] == [
        ("main", (0, 0, 1600, 900), True),
        ("side", (1600, 0, 800, 600), False),
    ]
    with pytest.warns(DisplaySourceFallbackWarning):
        assert enumerate_displays(environ=env, timeout=0.5) == displays


@pytest.mark.x11
def test_a_working_compositor_tool_is_used_not_x(xwayland: Xvfb, tools, compositor) -> None:
    """Seed 003: the compositor's own list first ("hyprctl monitors -j / swaymsg -t
    get_outputs"), X only when it fails: no warning when hyprctl answers."""
    env = tools(hyprctl=prints(FIXTURES / "hyprland_left_mirror.json"))
    env.update(compositor("hyprland"), DISPLAY=xwayland.display, XDG_SESSION_TYPE="wayland")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        used, displays = enumerate_displays_with_source(environ=env)
    assert used == "hyprland" and [d.id for d in displays] == [3, 4]


@pytest.mark.x11
@pytest.mark.parametrize(("source", "tool"), [("hyprland", "hyprctl"), ("sway", "swaymsg")])
def test_an_explicit_compositor_source_still_raises(
    xwayland: Xvfb, tools, compositor, source: str, tool: str
) -> None:
    """The X fallback of "hyprctl monitors -j / swaymsg -t get_outputs (else falls back to X)"
    is for source="auto" only: a caller who asked for the compositor gets its error, and no
    warning, even with a working X display at hand."""
    env = tools(**{tool: "echo 'Unable to retrieve outputs'"})
    env.update(compositor(source), DISPLAY=xwayland.display)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DisplayToolError, match=f"{tool} printed what cannot be read"):
            enumerate_displays(source, environ=env)


@pytest.mark.parametrize(
    ("script", "x_env", "error", "x_message"),
    [
        ("exit 1", {}, DisplayToolError, r"\$DISPLAY \(unset\)\) failed too: .*DISPLAY"),
        ("exit 1", {"DISPLAY": ":5999"}, DisplayToolError,
         r"\(:5999\) failed too: cannot connect to X display ':5999'"),
        ("sleep 60", {"DISPLAY": ":5999"}, DisplayToolTimeout,
         r"did not finish within 0\.5s .*\(:5999\) failed too: cannot connect"),
    ],
)  # fmt: skip
def test_when_x_fails_too_the_compositor_error_names_both(
    tools, compositor, script: str, x_env: dict, error: type, x_message: str
) -> None:
    """Seed 003: "(else falls back to X)", and X is not there either. Upstream then returns
    fallbackPrimary(), a made-up 1920x1080 display at (0, 0); here no display is invented
    (coordinates on it would land anywhere): the tool's error is raised, same type as without
    the fallback, naming the X failure too, which is its __cause__."""
    env = {**tools(hyprctl=script), **compositor("hyprland"), **x_env}
    with (
        pytest.warns(DisplaySourceFallbackWarning, match="hyprland was detected but hyprctl"),
        pytest.raises(error, match=x_message) as caught,
    ):
        enumerate_displays(environ=env, timeout=0.5)
    assert type(caught.value) is error and caught.value.tool == "hyprctl"
    assert str(caught.value).startswith("hyprctl ")
    assert isinstance(caught.value.__cause__, DisplayError)
    assert not isinstance(caught.value.__cause__, DisplayToolError)  # the X error


def test_session_type_is_consulted(tmp_path: Path, unix_socket) -> None:
    """Upstream's enumerateLinux: "const sessionType = (process.env.XDG_SESSION_TYPE ??
    "").toLowerCase(); if (sessionType === "wayland") { ... enumerateWayland() }", else X
    ("X11 — preferred path. Works under XWayland too"). An X11 session is X11 whatever
    compositor variables it inherited; a Wayland session still needs a compositor socket
    (the tools are not run blind); anything else is decided by the sockets, as before."""
    runtime = tmp_path / "run"
    unix_socket(runtime / "hypr" / "sig" / ".socket.sock")
    sway = unix_socket(tmp_path / "sway-ipc.sock")
    hypr = {"XDG_RUNTIME_DIR": str(runtime), "HYPRLAND_INSTANCE_SIGNATURE": "sig"}
    cases = [
        ({**hypr, "XDG_SESSION_TYPE": "x11"}, "x11"),
        ({**hypr, "XDG_SESSION_TYPE": " X11\n"}, "x11"),
        ({"SWAYSOCK": str(sway), "XDG_SESSION_TYPE": "x11"}, "x11"),
        ({**hypr, "XDG_SESSION_TYPE": "wayland"}, "hyprland"),
        ({**hypr, "XDG_SESSION_TYPE": "Wayland"}, "hyprland"),
        ({"SWAYSOCK": str(sway), "XDG_SESSION_TYPE": "wayland"}, "sway"),
        ({"XDG_SESSION_TYPE": "wayland"}, "x11"),
        ({"XDG_SESSION_TYPE": "wayland", "SWAYSOCK": str(tmp_path / "gone.sock")}, "x11"),
        ({"SWAYSOCK": str(sway), "XDG_SESSION_TYPE": "tty"}, "sway"),  # ssh into a sway host
        ({**hypr, "XDG_SESSION_TYPE": ""}, "hyprland"),
        ({**hypr}, "hyprland"),
    ]
    for env, expected in cases:
        assert detect_display_source(env, platform="linux") == expected, env
    # The session type never overrides the OS.
    assert detect_display_source({"XDG_SESSION_TYPE": "x11"}, platform="darwin") == "macos"
    assert detect_display_source({"XDG_SESSION_TYPE": "wayland"}, platform="win32") == "windows"
    assert session_type({"XDG_SESSION_TYPE": " Wayland "}) == "wayland"
    assert session_type({}) == ""


@pytest.mark.x11
def test_an_x11_session_never_runs_the_compositor_tool(
    xwayland: Xvfb, tools, compositor, tmp_path: Path
) -> None:
    """XDG_SESSION_TYPE=x11: upstream skips enumerateWayland() altogether and lists X; here
    too, hyprctl is not even started (it would leave a mark) and nothing is warned."""
    fixture = FIXTURES / "hyprland_left_mirror.json"
    env = tools(hyprctl=f"touch '{tmp_path}/ran'; " + prints(fixture))
    env.update(compositor("hyprland"), DISPLAY=xwayland.display, XDG_SESSION_TYPE="x11")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enumerate_displays_with_source(environ=env) == (
            "x11",
            list_displays(xwayland.display),
        )
    assert not (tmp_path / "ran").exists()


@pytest.mark.x11
def test_a_wayland_session_without_a_known_compositor_lists_x_with_a_warning(
    xwayland: Xvfb, tools
) -> None:
    """A Wayland session (GNOME, KDE) with no Hyprland or sway socket: upstream's
    enumerateWayland() finds nothing and enumerateLinux() lists X ("Works under XWayland too").
    The same here, but said: XWayland's monitors are not the compositor's layout when an output
    is scaled."""
    env = {**tools(), "DISPLAY": xwayland.display, "XDG_SESSION_TYPE": "wayland"}
    with pytest.warns(
        DisplaySourceFallbackWarning,
        match=f"XDG_SESSION_TYPE is wayland but no Hyprland or sway socket was found: listed "
        f"the X11 \\(XWayland\\) monitors of {xwayland.display}",
    ) as seen:
        used, displays = enumerate_displays_with_source(environ=env)
    assert seen[0].filename == __file__
    assert seen[0].message.source == "wayland" and seen[0].message.error is None
    assert (used, displays) == ("x11", list_displays(xwayland.display))
    # Asked for explicitly, X is what the caller wants: nothing to warn about.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enumerate_displays("x11", environ=env) == displays


# -- the agent's /state ---------------------------------------------------------------------


@pytest.mark.parametrize("fresh_xvfb", [(2400, 900)], indirect=True)
def test_agent_state_carries_the_displays_descriptor(fresh_xvfb: Xvfb, tmp_path: Path) -> None:
    import httpx

    from mantis_fast.agent import AgentConfig, AgentThread

    for args in (
        ("*main", "1600/400x900/200+0+0", "screen"),
        ("side", "800/200x600/150+1600+0", "none"),
    ):
        subprocess.run(["xrandr", "--setmonitor", *args], env=fresh_xvfb.env(), check=True)
    config = AgentConfig.from_mapping(
        {"display": fresh_xvfb.display, "port": 0, "runs_dir": str(tmp_path / "runs"),
         "physical_execution": False, "boot_enabled": False}
    )  # fmt: skip
    agent = AgentThread(config)
    url = agent.start()
    try:
        agent.wait_for(lambda engine: engine.phase == "waiting_inject", 30)
        state = httpx.get(url.rstrip("/") + "/state?images=0", timeout=10).json()
    finally:
        agent.stop()
        agent.join()
    assert state["displays"] == {
        "version": 1,
        "source": "x11",
        "primary": 0,
        "displays": [
            {"id": 0, "name": "main", "bounds": [0, 0, 1600, 900], "scale_factor": 1.0,
             "primary": True},
            {"id": 1, "name": "side", "bounds": [1600, 0, 800, 600], "scale_factor": 1.0,
             "primary": False},
        ],
    }  # fmt: skip
    assert displays_from_descriptor(state["displays"]) == list_displays(fresh_xvfb.display)
