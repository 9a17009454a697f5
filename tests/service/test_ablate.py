"""The ablation harness: its arithmetic on replies, and end to end against ``mantis-fast serve``
on a MiniWoB++ page with a loopback stub model server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mantis_fast.agent.runlog import read_records
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import pixels_to_normalized
from mantis_fast.gym.miniwob import TASK_AREA, miniwob_html_dir
from mantis_fast.service.ablate import (
    STEPS_TOLERANCE,
    Ablation,
    CuaRun,
    Pair,
    format_table,
    run_ablation,
)
from tests.support.agent_stub import StubModel, reply_json
from tests.support.serve_process import ServeProcess

TOKEN = "ablation-token"
PAGE = (miniwob_html_dir() / "miniwob" / "click-test-2.html").as_uri()
# A click on click-test-2's query text: lands, changes nothing.
NOTHING = reply_json("clicking the text", [{"name": "click", "x1": 150, "y1": 40}])


def _run(success: bool | None = True, steps: int | None = 3, wall: float = 1.0, **kw) -> CuaRun:
    return CuaRun(status=200, wall_seconds=wall, success=success, steps=steps, **kw)


def _ablation(pairs: list[tuple[CuaRun, CuaRun]]) -> Ablation:
    return Ablation(
        toggle="adaptive_click_tol",
        request={"instruction": "x", "start_url": "about:blank"},
        warmup=None,
        pairs=[Pair(i + 1, off, on) for i, (off, on) in enumerate(pairs)],
    )


def test_pair_diff_is_on_minus_off() -> None:
    pair = Pair(1, _run(True, 4, 2.0), _run(False, 6, 2.5))
    assert pair.diff() == {"pair": 1, "success": -1, "steps": 2, "wall_seconds": 0.5}
    unknown = Pair(2, _run(None, None), _run(True, 3))
    assert unknown.diff()["success"] is None and unknown.diff()["steps"] is None


def test_equal_sides_flag_nothing() -> None:
    ablation = _ablation([(_run(), _run())] * 3)
    assert ablation.regressions() == []
    off = ablation.side("off")
    assert off == {
        "runs": 3,
        "errors": 0,
        "success_rate": 1.0,
        "mean_steps": 3.0,
        "mean_wall_seconds": 1.0,
        "loop_recoveries_by_reason": {},
    }
    assert "regressions: none" in format_table(ablation)


@pytest.mark.parametrize(
    ("on", "flag"),
    [
        (_run(success=False), "success rate"),
        (_run(steps=4), "mean_steps"),  # 3 -> 4 is past the 10 % tolerance
        (_run(wall=4.0), "mean_wall_seconds"),  # mean 2.5 s vs 1.0 s: past 25 % and 1 s
        (CuaRun(status=500, wall_seconds=0.1, error="HTTP 500: boom"), "errors"),
    ],
)
def test_each_kind_of_regression_is_flagged(on: CuaRun, flag: str) -> None:
    ablation = _ablation([(_run(), on), (_run(), _run())])
    flags = ablation.regressions()
    assert len(flags) == 1 and flags[0].startswith(flag), flags
    assert flag in format_table(ablation)


def test_within_tolerance_is_not_a_regression() -> None:
    steps = 10
    within = round(steps * (1 + STEPS_TOLERANCE))
    ablation = _ablation([(_run(steps=steps), _run(steps=within))])
    assert ablation.regressions() == []
    # Wall time: 60 % more but a twentieth of a second (sub-second episodes): noise.
    quick = _ablation([(_run(wall=0.08), _run(wall=0.13))])
    assert quick.regressions() == []
    slow = _ablation([(_run(wall=2.0), _run(wall=3.2))])
    assert slow.regressions() == ["mean_wall_seconds: 3.20 s ON vs 2.00 s OFF"]


def test_improvements_are_not_regressions_and_recoveries_add_up() -> None:
    off = _run(False, 8, 3.0, loop_recoveries_by_reason={"drift": 2})
    on = _run(True, 4, 1.0, loop_recoveries_by_reason={"drift": 1, "repeat": 1})
    ablation = _ablation([(off, on), (off, on)])
    assert ablation.regressions() == []
    assert ablation.side("on")["loop_recoveries_by_reason"] == {"drift": 2, "repeat": 2}
    assert ablation.to_dict()["pairs"][0]["diff"]["success"] == 1


def test_bad_arguments_are_refused_before_any_request() -> None:
    request = {"instruction": "x", "start_url": "about:blank"}
    with pytest.raises(InvalidInputError, match="pairs"):
        run_ablation("http://127.0.0.1:9", "t", "loop_adaptive", request, pairs=0)
    with pytest.raises(InvalidInputError, match="toggle"):
        run_ablation("http://127.0.0.1:9", "t", "", request)
    with pytest.raises(InvalidInputError, match="already sets"):
        run_ablation("http://127.0.0.1:9", "t", "loop_adaptive", {**request, "loop_adaptive": 1})


# -- end to end: `mantis-fast ablate` against `mantis-fast serve` on a MiniWoB++ page ---------

CHROMIUM = shutil.which("chromium")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """``mantis-fast serve`` in a subprocess, its model the loopback stub."""
    runs = tmp_path_factory.mktemp("runs")
    with StubModel(default=NOTHING) as stub:
        args = ["--port", "0", "--pool-size", "1", "--brain", "vlm", "--runs-dir", str(runs)]
        args += ["--api-url", stub.url, "--set", "VLM_MAX_RETRIES=0"]
        with ServeProcess(args, TOKEN) as process:
            yield process.base, stub


def _ablate(
    endpoint: str, *args: str, token: str | None = TOKEN
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MANTIS_TOKEN"}
    if token is not None:
        env["MANTIS_TOKEN"] = token
    command = [sys.executable, "-m", "mantis_fast.cli", "ablate", "--endpoint", endpoint]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=240)


@pytest.mark.x11
@pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing")
def test_ablation_end_to_end_with_a_model(served, tmp_path: Path) -> None:
    endpoint, stub = served
    # Where button ONE is for seed 3, from an oracle run (the page is read over DevTools), in
    # the 0..1000 coordinates models answer in: the stub answers that click to every request.
    with httpx.Client(timeout=60) as client:
        oracle = client.post(
            f"{endpoint}/v1/cua",
            json={"instruction": "Click button ONE.", "start_url": PAGE, "seed": 3,
                  "brain": "miniwob-oracle"},
            headers={"X-Mantis-Token": TOKEN},
        ).json()  # fmt: skip
    step = next(r for r in read_records(oracle["run_log"]) if r["stage"] == "step")
    nx, ny = pixels_to_normalized(*step["info"]["dispatched"], TASK_AREA)
    stub.default = reply_json("button ONE", [{"name": "click", "x1": nx, "y1": ny}])
    seen = len(stub.requests)
    out = tmp_path / "ablation.json"
    done = _ablate(
        endpoint,
        *("--toggle", "adaptive_click_tol", "--instruction", "Click button ONE."),
        *("--start-url", PAGE, "--pairs", "2", "--seed", "3", "--max-steps", "4"),
        *("--json", str(out)),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warm-up: success=True" in done.stdout
    assert "pair 2 ON: success=True" in done.stdout and "regressions: none" in done.stdout
    result = json.loads(out.read_text())
    assert len(result["pairs"]) == 2 and result["regressions"] == []
    for pair in result["pairs"]:
        assert pair["off"]["success"] and pair["on"]["success"]
        assert pair["off"]["reused_session"] and pair["on"]["reused_session"]  # warm service
        assert pair["diff"]["success"] == 0 and pair["diff"]["steps"] == 0
    assert result["aggregate"]["on"]["success_rate"] == 1.0
    assert len(stub.requests) - seen == 5  # the warm-up and two pairs, one model call each


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing")
def test_ablation_of_an_unknown_toggle_stops_at_the_warm_up(served) -> None:
    endpoint, _ = served
    done = _ablate(
        endpoint,
        *("--toggle", "adaptive_clik_tol", "--instruction", "x", "--start-url", PAGE),
    )
    assert done.returncode == 2
    assert "warm-up request failed" in done.stderr and "adaptive_clik_tol" in done.stderr
    assert "pair 1" not in done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing")
def test_ablation_without_a_token_stops_at_the_warm_up_saying_it_is_missing(served) -> None:
    endpoint, _ = served
    args = ("--toggle", "loop_adaptive", "--instruction", "x", "--start-url", PAGE)
    done = _ablate(endpoint, *args, token=None)  # no --token, no $MANTIS_TOKEN
    assert done.returncode == 2
    assert "HTTP 401: missing X-Mantis-Token: the header is empty" in done.stderr, done.stderr
    assert "pair 1" not in done.stdout
    wrong = _ablate(endpoint, *args, "--token", "not-the-token", token=None)
    assert wrong.returncode == 2 and "HTTP 401: wrong X-Mantis-Token" in wrong.stderr


def test_ablation_against_nothing_listening_stops_at_the_warm_up() -> None:
    done = _ablate(
        "http://127.0.0.1:9", *("--toggle", "loop_adaptive", "--instruction", "x"),
        *("--start-url", "about:blank"),
    )  # fmt: skip
    assert done.returncode == 2 and "ConnectError" in done.stderr
