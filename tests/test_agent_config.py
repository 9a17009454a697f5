"""AgentConfig: every reference key, TOML + overrides, and clear errors at start."""

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
        ("PANEL_HEADER_TIMEOUT_SECONDS", 0, r"PANEL_HEADER_TIMEOUT_SECONDS: expected a number > 0"),
        ("PANEL_REQUEST_TIMEOUT_SECONDS", 1e9, r"PANEL_REQUEST_TIMEOUT_SECONDS: .*<= 3600"),
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


def test_width_and_height_go_together() -> None:
    with pytest.raises(ConfigError, match="CAPTURE_WIDTH/CAPTURE_HEIGHT"):
        AgentConfig(capture_width=640)


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
    path = tmp_path / "agent.toml"
    path.write_text("LOG_LAYOUT = 'nested'\n")
    result = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "LOG_LAYOUT" in result.stderr and "nested" in result.stderr
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
