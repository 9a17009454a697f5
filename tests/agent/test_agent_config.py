"""AgentConfig: every reference key, TOML or the reference's config.py + overrides, and clear
errors at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mantis_fast.agent.config import AgentConfig, ConfigError

REFERENCE_KEYS = (
    "HOST",
    "PORT",
    "API_URL",
    "MODEL",
    "TEMPERATURE",
    "TOP_P",
    "MAX_TOKENS",
    "VLM_HTTP_TIMEOUT_SECONDS",
    "SYSTEM_PROMPT",
    "CAPTURE_CROP",
    "CAPTURE_WIDTH",
    "CAPTURE_HEIGHT",
    "CAPTURE_SCALE_PERCENT",
    "CAPTURE_DELAY",
    "PHYSICAL_EXECUTION",
    "ACTION_DELAY_SECONDS",
    "DRAG_DURATION_STEPS",
    "DRAG_STEP_DELAY",
    "RUNS_DIR",
    "LOG_LAYOUT",
    "LOG_LEVEL",
    "LOG_TO_FILE",
    "BOOT_ENABLED",
    "BOOT_VLM_OUTPUT",
    "UI_CONFIG",
    "MAX_TURNS",
    "DISPLAY",
)


def test_every_reference_key_exists_with_valid_defaults() -> None:
    config = AgentConfig()
    assert set(REFERENCE_KEYS) <= set(config.keys())
    data = config.to_dict()
    assert set(data) == set(config.keys())
    assert config.host == "127.0.0.1"
    assert config.vlm_timeout is not None and config.vlm_timeout > 0  # finite by default
    heat = config.ui_config["executed_heat"]
    assert {"enabled", "radius_scale", "stops", "trail_turns", "trail_shrink"} <= set(heat)
    assert {"enabled", "border", "border_width", "fill_stops"} <= set(config.ui_config["bbox_heat"])


def test_the_panel_and_the_model_reply_are_bounded_by_default() -> None:
    config = AgentConfig()
    assert config.panel_max_connections == 64
    assert (config.panel_header_timeout_seconds, config.panel_request_timeout_seconds) == (5, 30)
    assert config.vlm_max_reply_bytes == 8 * 1024 * 1024
    assert config.vlm_max_reply_chars == 1_000_000
    changed = config.with_overrides(["VLM_MAX_REPLY_BYTES=65536", "panel_max_connections=8"])
    assert (changed.vlm_max_reply_bytes, changed.panel_max_connections) == (65536, 8)


def test_system_prompt_covers_the_required_topics() -> None:
    prompt = AgentConfig(max_actions_per_turn=5, max_bboxes_per_turn=3).system_prompt_text
    for needle in ("0 to 1000", "JSON", "ORANGE", "BLUE", "at most 5 actions and 3 bboxes"):
        assert needle in prompt


def test_toml_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        'MODEL = "qwen"\nport = 9000\nCAPTURE_CROP = {x1 = 0, y1 = 0, x2 = 250, y2 = 250}\n'
        "[UI_CONFIG.executed_heat]\ntrail_turns = 1\n"
    )
    config = AgentConfig.from_toml(path, ["PORT=9001", "log_layout=turn_dirs", "MODEL=other model"])
    assert config.model == "other model"
    assert config.port == 9001
    assert config.log_layout == "turn_dirs"
    assert config.capture_crop == {"x1": 0, "y1": 0, "x2": 250, "y2": 250}
    assert config.ui_config["executed_heat"]["trail_turns"] == 1
    assert config.ui_config["executed_heat"]["trail_shrink"] == 0.8  # merged with the defaults
    assert config.ui_config["bbox_heat"]["enabled"] is True


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("PORT", 70000, r"PORT: expected an integer >= 0 and <= 65535, got int 70000"),
        ("PORT", "80", r"PORT: expected an integer.*got str '80'"),
        ("TEMPERATURE", float("nan"), r"TEMPERATURE: expected a number.*nan"),
        ("TOP_P", 0, r"TOP_P: expected a number > 0"),
        ("CAPTURE_CROP", {"x1": 500, "y1": 0, "x2": 400, "y2": 10}, r"CAPTURE_CROP: .*x1 < x2"),
        ("CAPTURE_CROP", {"x1": 0, "y1": 0, "x2": 1001, "y2": 10}, r"CAPTURE_CROP"),
        ("CAPTURE_CROP", [0, 0, 10], r"CAPTURE_CROP"),
        ("LOG_LAYOUT", "nested", r"LOG_LAYOUT: expected one of 'flat', 'turn_dirs', got str"),
        ("LOG_LEVEL", "LOUD", r"LOG_LEVEL"),
        ("PHYSICAL_EXECUTION", "yes", r"PHYSICAL_EXECUTION: expected true or false, got str"),
        ("API_URL", "ftp://x", r"API_URL: expected an http:// or https:// URL"),
        ("DRAG_DURATION_STEPS", 0, r"DRAG_DURATION_STEPS: expected an integer >= 1"),
        ("MAX_TURNS", 2.5, r"MAX_TURNS: expected an integer"),
        ("UI_CONFIG", {"executed_heat": {"trail_turns": 0}}, r"trail_turns"),
        ("UI_CONFIG", {"executed_heat": {"stops": []}}, r"stops"),
        ("UI_CONFIG", {"glow": {}}, r"unknown entry 'glow'"),
        ("SYSTEM_PROMPT", "  ", r"SYSTEM_PROMPT: expected a non-empty string"),
        ("VLM_ON_ERROR", "retry", r"VLM_ON_ERROR"),
        ("PANEL_MAX_CONNECTIONS", 0, r"PANEL_MAX_CONNECTIONS: expected an integer >= 1"),
        ("PANEL_HEADER_TIMEOUT_SECONDS", 0, r"SECONDS: expected seconds in \(0, 3600\], got"),
        ("PANEL_REQUEST_TIMEOUT_SECONDS", 1e9, r"TIMEOUT_SECONDS: expected seconds in \(0, 3600\]"),
        ("VLM_MAX_REPLY_BYTES", 100, r"VLM_MAX_REPLY_BYTES: expected an integer >= 1024"),
        ("VLM_MAX_REPLY_CHARS", 0, r"VLM_MAX_REPLY_CHARS: expected an integer >= 1"),
    ],
)
def test_bad_values_name_key_and_value(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AgentConfig.from_mapping({key: value})


def test_unknown_key_suggests_the_near_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'CAPTURE_CORP'.*CAPTURE_CROP"):
        AgentConfig.from_mapping({"CAPTURE_CORP": {}})


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (640, 480, (640, 480)),  # both > 0: exactly this size, whatever the scale
        (640, 0, (400, 300)),  # one set: the scale applies
        (0, 480, (400, 300)),
        (-1, 480, (400, 300)),  # negative means "not set", never an error
        (640, -5, (400, 300)),
        (-1, -1, (400, 300)),
        (0, 0, (400, 300)),
    ],
)
def test_capture_width_and_height_apply_only_when_both_are_positive(width, height, expected):
    """Seed 004, capture pipeline: "If CAPTURE_WIDTH and CAPTURE_HEIGHT are both > 0, they
    fully specify output resolution. Otherwise, CAPTURE_SCALE_PERCENT can downscale uniformly
    after crop." And its configuration reference: "CAPTURE_SCALE_PERCENT - Used only when
    CAPTURE_WIDTH/HEIGHT are not set (>0)." One of them set, or a negative one, is no error."""
    config = AgentConfig(capture_width=width, capture_height=height, capture_scale_percent=50)
    assert config.frame_size((800, 600)) == expected
    loaded = AgentConfig.load(overrides=[f"CAPTURE_WIDTH={width}", f"CAPTURE_HEIGHT={height}"])
    assert (loaded.capture_width, loaded.capture_height) == (width, height)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("CAPTURE_WIDTH", "640"),
        ("CAPTURE_WIDTH", float("nan")),
        ("CAPTURE_WIDTH", 640.5),
        ("CAPTURE_HEIGHT", True),
        ("CAPTURE_HEIGHT", None),
        ("CAPTURE_HEIGHT", 10**6),
    ],
)
def test_capture_size_garbage_is_still_an_error_naming_the_key(key: str, value: object) -> None:
    """Seed 004: CAPTURE_WIDTH/CAPTURE_HEIGHT are numbers compared with 0 ("If both > 0"):
    any integer is meaningful, but a value that is no number at all is a configuration error
    at start, naming the key."""
    with pytest.raises(ConfigError, match=rf"config key {key}: expected an integer"):
        AgentConfig.from_mapping({key: value})


def test_capture_delay_is_a_sleep_and_settling_is_a_separate_option() -> None:
    """Seed 004: "CAPTURE_DELAY - Sleep before capture (seconds), useful for UI settling."
    0 sleeps nothing (the capture follows the actions at once); waiting until the screen is
    still is CAPTURE_SETTLE, off unless asked for."""
    config = AgentConfig()
    assert (config.capture_delay, config.capture_settle) == (0, False)
    config = AgentConfig.load(overrides=["CAPTURE_DELAY=0.25", "CAPTURE_SETTLE=true"])
    assert (config.capture_delay, config.capture_settle) == (0.25, True)
    with pytest.raises(ConfigError, match=r"CAPTURE_DELAY: expected a number >= 0"):
        AgentConfig(capture_delay=-1)
    with pytest.raises(ConfigError, match=r"CAPTURE_SETTLE: expected true or false"):
        AgentConfig.from_mapping({"CAPTURE_SETTLE": "yes"})


# -- the reference's config.py -------------------------------------------------------------
SEED_CONFIG_PY = """\
# config.py as a user of the 004 engine keeps it
import json
import logging
from pathlib import Path

_HERE = Path(__file__).resolve().parent   # private: not a key
scale = 50                                # lower case: not a key

HOST = "127.0.0.1"
PORT = 8765
LOG_LEVEL = logging.INFO
LOG_TO_FILE = True
UI_CONFIG = {
    "executed_heat": {
        "enabled": True,
        "radius_scale": 0.05,
        "stops": ((0.0, "rgba(255,120,0,0.85)"), (1.0, "rgba(255,160,0,0)")),
        "trail_turns": 3,
        "trail_shrink": 1.0,
    },
    "bbox_heat": {"enabled": False},
}
API_URL = "http://127.0.0.1:9000/v1/chat/completions"
MODEL = "qwen2.5-vl"
TEMPERATURE = 0.2
TOP_P = 0.9
MAX_TOKENS = 512
VLM_HTTP_TIMEOUT_SECONDS = 0
SYSTEM_PROMPT = "Answer with JSON only."
CAPTURE_CROP = {"x1": 0, "y1": 0, "x2": 250, "y2": 250}
CAPTURE_WIDTH = 0
CAPTURE_HEIGHT = -1
CAPTURE_SCALE_PERCENT = scale
CAPTURE_DELAY = 0.1
PHYSICAL_EXECUTION = False
ACTION_DELAY_SECONDS = 0.02
DRAG_DURATION_STEPS = 5
DRAG_STEP_DELAY = 0.0
RUNS_DIR = _HERE / "runs"
LOG_LAYOUT = "turn_dirs"
BOOT_ENABLED = True
BOOT_VLM_OUTPUT = json.dumps({"observation": "boot", "bboxes": [], "actions": []})
"""


def test_a_seed_config_py_is_a_configuration_file(tmp_path: Path) -> None:
    """Seed 004: "config.py   All runtime configuration (HTTP, VLM, capture, execution, UI
    overlays, boot injection, logging layout)" and "Keep config in a single config.py module
    with the keys listed above." Such a module, with its imports and helpers, loads as the
    TOML file does, and overrides still win."""
    path = tmp_path / "config.py"
    path.write_text(SEED_CONFIG_PY)
    config = AgentConfig.load(path, overrides=["MAX_TOKENS=256"])
    assert (config.host, config.port, config.log_level) == ("127.0.0.1", 8765, "INFO")
    assert (config.model, config.temperature, config.top_p) == ("qwen2.5-vl", 0.2, 0.9)
    assert config.max_tokens == 256  # the override
    assert config.vlm_timeout is None  # "0 or less means infinite timeout"
    assert config.capture_crop == {"x1": 0, "y1": 0, "x2": 250, "y2": 250}
    assert config.frame_size((1000, 800)) == (500, 400)  # HEIGHT -1: not set, so 50 %
    assert (config.capture_delay, config.physical_execution) == (0.1, False)
    assert config.runs_dir == str(tmp_path / "runs")
    assert (config.log_layout, config.boot_enabled) == ("turn_dirs", True)
    assert config.ui_config["executed_heat"]["stops"][1] == [1.0, "rgba(255,160,0,0)"]
    assert config.ui_config["executed_heat"]["trail_turns"] == 3
    assert config.ui_config["bbox_heat"]["enabled"] is False
    assert config.ui_config["bbox_heat"]["border_width"] == 2  # merged with the defaults
    assert AgentConfig.from_file(path) == AgentConfig.load(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("LOG_LAYOUT = 'nested'", r"config key LOG_LAYOUT: expected one of 'flat', 'turn_dirs'"),
        ("CAPTURE_WIDTH = '640'", r"config key CAPTURE_WIDTH: expected an integer"),
        ("CAPTURE_CORP = {}", r"unknown config key 'CAPTURE_CORP'; did you mean CAPTURE_CROP\?"),
        ("PORT = 70000", r"PORT: expected an integer >= 0 and <= 65535, got int 70000"),
    ],
)
def test_config_py_and_toml_are_validated_alike(tmp_path: Path, line: str, message: str) -> None:
    """Seed 004's "Configuration reference (config.py)" keys are the same keys in either file
    kind: the same bad value, or the same unknown key, is the same ConfigError."""
    (tmp_path / "config.py").write_text(line + "\n")
    (tmp_path / "agent.toml").write_text(line.replace("{}", "{x1 = 0}") + "\n")
    for name in ("config.py", "agent.toml"):
        with pytest.raises(ConfigError, match=message):
            AgentConfig.load(tmp_path / name)


def test_a_config_py_that_fails_to_run_is_a_config_error(tmp_path: Path) -> None:
    """A config.py is Python the user wrote (seed 004: "All runtime configuration" lives in it):
    its failure is a ConfigError naming the file and the line, not a traceback mid-start."""
    broken = tmp_path / "config.py"
    broken.write_text("PORT = 1\nHOST = undefined_name\n")
    with pytest.raises(ConfigError, match=r"config\.py' failed to run \(line 2\): NameError"):
        AgentConfig.load(broken)
    broken.write_text("PORT = = 1\n")
    with pytest.raises(ConfigError, match=r"failed to run.*SyntaxError"):
        AgentConfig.load(broken)
    with pytest.raises(ConfigError, match="does not exist"):
        AgentConfig.load(tmp_path / "missing.py")


def run_with_bad_log_layout(path: Path) -> None:
    """``mantis-fast run --config path`` with a bad LOG_LAYOUT stops at start, naming it."""
    path.write_text("LOG_LAYOUT = 'nested'\n")
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "LOG_LAYOUT" in result.stderr and "nested" in result.stderr


def test_cli_reads_a_config_py(tmp_path: Path) -> None:
    """Seed 004: the configuration is "a single config.py module": ``mantis-fast run --config
    config.py`` reads it (and reports its bad values at start, as for TOML)."""
    run_with_bad_log_layout(tmp_path / "config.py")


# -- CORS ----------------------------------------------------------------------------------
def test_cors_origins_are_off_by_default_and_normalized() -> None:
    """Seed 004: "If you deploy this beyond a trusted local environment, restrict origins and
    add an auth token." CORS is off unless CORS_ORIGINS lists origins (as browsers send them)."""
    assert AgentConfig().cors_origins == ()
    config = AgentConfig(cors_origins=["http://LOCALHOST:3000/", "https://panel.lan:443"])
    assert config.cors_origins == ("http://localhost:3000", "https://panel.lan")
    assert AgentConfig(cors_origins="http://a:1, http://b:2").cors_origins == (
        "http://a:1",
        "http://b:2",
    )
    assert AgentConfig(cors_origins="").cors_origins == ()
    star = ['CORS_ORIGINS=["*"]', "PANEL_TOKEN=t"]
    assert AgentConfig.load(overrides=star).cors_origins == ("*",)
    for bad in (["http://x/panel"], ["ftp://x"], ["localhost:3000"], [3000], 5):
        with pytest.raises(ConfigError, match="config key CORS_ORIGINS"):
            AgentConfig(cors_origins=bad)


def test_cors_star_only_on_a_loopback_bind() -> None:
    """Seed 004: "The server responds to OPTIONS and includes permissive headers", and "If you
    deploy this beyond a trusted local environment, restrict origins": "*" is accepted on a
    loopback HOST only; past it, origins must be listed (and the token is required anyway)."""
    for host in ("127.0.0.1", "::1", "localhost"):
        assert AgentConfig(host=host, cors_origins="*", panel_token="t").cors_origins == ("*",)
    with pytest.raises(ConfigError, match=r"CORS_ORIGINS: '\*'.*only on a loopback HOST"):
        AgentConfig(host="0.0.0.0", panel_token="s3cret", cors_origins="*")
    # "*" without a token: any page a browser opens could drive the desktop
    with pytest.raises(ConfigError, match=r"CORS_ORIGINS: '\*'.*set\s+PANEL_TOKEN"):
        AgentConfig(cors_origins="*")
    # "null" is what any page can send (a sandboxed frame, a data: URL): it is every page
    with pytest.raises(ConfigError, match="CORS_ORIGINS: 'null'"):
        AgentConfig(cors_origins=["null"], panel_token="t")
    listed = AgentConfig(host="0.0.0.0", panel_token="s3cret", cors_origins=["http://a.lan"])
    assert listed.cors_origins == ("http://a.lan",)


def test_non_loopback_bind_needs_a_token() -> None:
    with pytest.raises(ConfigError, match=r"HOST: binding '0\.0\.0\.0'.*PANEL_TOKEN"):
        AgentConfig(host="0.0.0.0")
    assert AgentConfig(host="0.0.0.0", panel_token="s3cret").to_dict()["PANEL_TOKEN"] == "***"
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        AgentConfig(host=host)


def test_bad_override_and_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not KEY=VALUE"):
        AgentConfig().with_overrides(["PORT"])
    with pytest.raises(ConfigError, match="does not exist"):
        AgentConfig.from_toml(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("PORT = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        AgentConfig.from_toml(bad)


@pytest.mark.parametrize(
    ("changes", "crop", "expected"),
    [
        ({}, (1920, 1080), (1920, 1080)),
        ({"capture_scale_percent": 50}, (1920, 1080), (960, 540)),
        ({"capture_scale_percent": 25}, (1001, 3), (250, 1)),
        ({"capture_scale_percent": 0}, (800, 600), (800, 600)),
        ({"capture_scale_percent": -5}, (800, 600), (800, 600)),
        ({"capture_width": 1280, "capture_height": 720, "capture_scale_percent": 10}, (1, 1),
         (1280, 720)),
    ],
)  # fmt: skip
def test_frame_size_policy(changes, crop, expected) -> None:
    assert AgentConfig(**changes).frame_size(crop) == expected


def test_cli_reports_config_errors_at_start(tmp_path: Path) -> None:
    run_with_bad_log_layout(tmp_path / "agent.toml")
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "run", "--set", "CAPTURE_CROP={x1=0}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "CAPTURE_CROP" in result.stderr


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"capture_size_policy": "qwen2"}, (1932, 1092)),
        ({"capture_size_policy": "qwen3"}, (1920, 1088)),
        ({"capture_size_policy": "anthropic"}, (1366, 768)),
        ({"capture_max_long_edge": 1280}, (1280, 720)),
        ({"capture_scale_percent": 50, "capture_max_long_edge": 1280}, (960, 540)),
    ],
)
def test_model_sizing_policies(changes, expected) -> None:
    assert AgentConfig(**changes).frame_size((1920, 1080)) == expected


@pytest.mark.parametrize("value", [10**400, -(10**400), float("inf")])
def test_huge_ui_config_numbers_are_named(value) -> None:
    with pytest.raises(ConfigError, match="radius_scale"):
        AgentConfig.from_mapping({"ui_config": {"executed_heat": {"radius_scale": value}}})
