"""Command line: ``mantis-fast demo | grab | info | displays | run | serve | osworld-server |
ablate``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from PIL import Image

from mantis_fast.errors import MissingExtraError
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import embedded_display


def _display(name: str | None) -> str:
    """The display to work on: ``--display``, else ``$DISPLAY``, else (an application may ask
    for one) this process's embedded Xvfb."""
    return name or os.environ.get("DISPLAY") or embedded_display()


def _backend(cap: Capture) -> str:
    return f"{cap.backend} ({cap.backend_reason})"


def demo(args: argparse.Namespace) -> int:
    from mantis_fast.demo import run_demo

    return run_demo(targets=args.targets, out=args.out, brain_size=args.brain_size, seed=args.seed)


def grab(args: argparse.Namespace) -> int:
    region = tuple(int(v) for v in args.region.split(",")) if args.region else None
    with Capture(_display(args.display)) as cap:
        frame = cap.grab(region)
        Image.fromarray(frame[:, :, 2::-1]).save(args.output)
    print(f"{frame.shape[1]}x{frame.shape[0]} -> {args.output}")
    return 0


def info(args: argparse.Namespace) -> int:
    with Capture(_display(args.display)) as cap:
        width, height = cap.size
        print(f"display {cap.display_name}: {width}x{height}, backend {_backend(cap)}")
        for monitor in cap.monitors:
            star = "*" if monitor.primary else " "
            print(f"  {star}{monitor.id}: {monitor.name or '-'} bounds={monitor.bounds}")
    return 0


def displays(args: argparse.Namespace) -> int:
    import json

    from mantis_fast.errors import DisplayError
    from mantis_fast.geometry.display_descriptor import backing_size, displays_descriptor
    from mantis_fast.platforms import enumerate_displays_with_source

    source = args.source
    if source == "auto" and args.display:  # a --display names an X display: list that one
        source = "x11"
    try:
        # "auto" falls back to X11 (with a warning on stderr) when a compositor's tool fails,
        # and says which source answered.
        source, found = enumerate_displays_with_source(
            source, display=_display(args.display) if source == "x11" else None
        )
    except DisplayError as exc:  # a missing or failing tool, an unreachable X display
        print(f"mantis-fast displays: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(displays_descriptor(found, source=source), indent=2))
        return 0
    print(f"{len(found)} display(s) from {source}")
    for monitor in found:
        x, y, width, height = monitor.bounds
        star = "*" if monitor.primary else " "
        line = f"{star}{monitor.id}: {monitor.name or '-'} {width}x{height}{x:+d}{y:+d}"
        if backing_size(monitor) != monitor.size or monitor.scale_factor != 1.0:
            backing_w, backing_h = backing_size(monitor)
            line += f" scale {monitor.scale_factor:g} ({backing_w}x{backing_h} pixels)"
        print(line)
    return 0


# run: flags that override one configuration key each (``--set KEY=VALUE`` covers the rest).
_RUN_FLAGS = {
    "api_url": ("--api-url", str),
    "model": ("--model", str),
    "display": ("--display", str),
    "host": ("--host", str),
    "port": ("--port", int),
    "panel_token": ("--token", str),
    "runs_dir": ("--runs-dir", str),
    "max_turns": ("--max-turns", int),
    "annotator": ("--annotator", str),
    "log_layout": ("--log-layout", str),
    "log_level": ("--log-level", str),
}


def _print_turn(result) -> None:
    timings = result.timings_ms
    vlm = f", model {timings['vlm'] / 1e3:.2f}s" if "vlm" in timings else ""
    failed = f"  model call FAILED: {result.vlm_error}" if result.vlm_error else ""
    observation = result.output.observation.replace("\n", " ")
    if len(observation) > 80:
        observation = observation[:77] + "..."
    print(
        f"turn {result.turn:4d}: {len(result.output.actions)} action(s), "
        f"{len(result.output.skipped)} skipped, frame {result.frame_size[0]}x"
        f"{result.frame_size[1]}, turn {timings.get('turn_before_model', 0):.0f} ms{vlm}"
        f"  | {observation}{failed}",
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib
    import logging
    import urllib.parse

    from mantis_fast.agent import AgentConfig, ConfigError, run_agent

    flags = {name: getattr(args, name) for name in _RUN_FLAGS if getattr(args, name) is not None}
    if args.no_physical_execution:
        flags["physical_execution"] = False
    if args.boot:
        flags["boot_enabled"] = True
    try:  # every source first, then one validation: checks across keys see them all
        config = AgentConfig.load(args.config, flags, args.set or [])
    except ConfigError as exc:
        print(f"mantis-fast run: {exc}", file=sys.stderr)
        return 2
    if not config.display:
        config = config.replace(display=_display(None))

    def ready(url: str, engine) -> None:
        start = "from BOOT_VLM_OUTPUT" if config.boot_enabled else "on POST /inject"
        if config.panel_token:  # the page reads ?token= and sends it on (as Jupyter prints it)
            url += "?token=" + urllib.parse.quote(config.panel_token, safe="")
        print(f"panel {url}  (the loop starts {start})", flush=True)

    logging.basicConfig(
        level=max(logging.WARNING, logging.getLevelName(config.log_level)),
        format="%(levelname)s %(name)s: %(message)s",
    )

    with contextlib.suppress(KeyboardInterrupt):
        engine = asyncio.run(run_agent(config, on_turn=_print_turn, on_ready=ready))
        print(f"finished: phase {engine.phase}, {engine.turn} turn(s), run dir {engine.run_dir}")
        if engine.error:
            print(f"last error: {engine.error}", file=sys.stderr)
        return 1 if engine.phase == "error" else 0
    print("interrupted")
    return 130


def serve(args: argparse.Namespace) -> int:
    """``mantis-fast serve``: the ``POST /v1/cua`` service (mantis_fast.service)."""
    import logging

    from mantis_fast.agent import AgentConfig, ConfigError
    from mantis_fast.service import ServiceConfig
    from mantis_fast.service import serve as run_service

    token = args.token or os.environ.get("MANTIS_TOKEN", "")
    if not token.strip():
        print(
            "mantis-fast serve: refusing to start without a token: pass --token or set "
            "MANTIS_TOKEN (clients send it as X-Mantis-Token)",
            file=sys.stderr,
        )
        return 2
    flags = {k: v for k, v in (("api_url", args.api_url), ("model", args.model)) if v}
    try:  # the "vlm" brain's endpoint and model: AgentConfig's keys and sources
        agent = AgentConfig.load(args.config, flags, args.set or [])
        config = ServiceConfig(
            token=token,
            host=args.host,
            port=args.port,
            pool_size=args.pool_size,
            max_queue=args.max_queue,
            default_brain=args.brain,
            default_timeout=args.timeout,
            max_timeout=args.max_timeout,
            max_body_bytes=args.max_body_bytes,
            runs_dir=args.runs_dir,
            agent=agent,
        )
    except ConfigError as exc:
        print(f"mantis-fast serve: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    def ready(url: str) -> None:
        queue = f"pool {config.pool_size}, queue {config.max_queue}"
        print(f"serving {url}/v1/cua ({queue})", flush=True)

    run_service(config, on_ready=ready)
    print("stopped: every desktop closed", flush=True)
    return 0


def _add_serve(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "serve",
        help="serve upstream Mantis's POST /v1/cua on a pool of browser desktops "
        "(needs mantis_fast[agent,gym]; docs/service.md)",
    )
    p.add_argument("--token", help="required X-Mantis-Token (default: $MANTIS_TOKEN)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8790, help="port (default: 8790; 0: any)")
    p.add_argument("--pool-size", type=int, default=2, help="desktops (default: 2)")
    p.add_argument("--max-queue", type=int, default=4, help="requests waiting (default: 4)")
    p.add_argument("--brain", default="vlm", help="default brain: vlm | miniwob-oracle")
    p.add_argument("--timeout", type=float, default=300.0, help="default request timeout, s")
    p.add_argument("--max-timeout", type=float, default=900.0, help="cap of timeout_seconds")
    p.add_argument("--max-body-bytes", type=int, default=64 * 1024, help="body size cap")
    p.add_argument("--runs-dir", default="runs/service", help="run logs (default: runs/service)")
    p.add_argument(
        "--config", help="AgentConfig keys for the vlm brain: a TOML file or a seed config.py"
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="an AgentConfig key")
    p.add_argument("--api-url", help="sets API_URL (the vlm brain's endpoint)")
    p.add_argument("--model", help="sets MODEL")
    p.set_defaults(func=serve)


def osworld_server(args: argparse.Namespace) -> int:
    """``mantis-fast osworld-server``: OSWorld's desktop server (mantis_fast.osworld)."""
    import logging

    from mantis_fast.errors import ConfigError, InvalidInputError
    from mantis_fast.osworld import OSWorldConfig, serve_osworld

    token = args.token if args.token is not None else os.environ.get("MANTIS_TOKEN") or None
    try:
        size = _size(args.size)
        config = OSWorldConfig(
            host=args.host,
            port=args.port,
            display=args.display,
            size=size,
            token=token,
            max_call_seconds=args.max_call_seconds,
            max_body_bytes=args.max_body_bytes,
            max_file_bytes=args.max_file_bytes,
            pause=args.pause,
        )
    except (ConfigError, InvalidInputError) as exc:
        print(f"mantis-fast osworld-server: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    def ready(url: str, display: str) -> None:
        print(f"serving OSWorld's desktop server at {url} on display {display}", flush=True)

    serve_osworld(config, on_ready=ready)
    print("stopped", flush=True)
    return 0


def _size(text: str) -> tuple[int, int]:
    from mantis_fast.errors import InvalidInputError

    width, sep, height = text.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise InvalidInputError(f"--size: expected WIDTHxHEIGHT (e.g. 1920x1080), got {text!r}")
    return int(width), int(height)


def _add_osworld_server(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "osworld-server",
        help="OSWorld's desktop server (desktop_env/server/main.py's routes) on mantis_fast: "
        "its PythonController drives it unchanged (needs mantis_fast[osworld]; docs/osworld.md)",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=5000, help="port (default: 5000, as OSWorld's)")
    p.add_argument(
        "--display", default=None, help="X display (default: $DISPLAY, else a private Xvfb)"
    )
    p.add_argument("--size", default="1920x1080", help="the private Xvfb's screen (1920x1080)")
    p.add_argument(
        "--token",
        default=None,
        help="required token (X-Mantis-Token, Bearer, or Basic password; default: "
        "$MANTIS_TOKEN); needed to bind anything but loopback",
    )
    p.add_argument(
        "--max-call-seconds", type=float, default=120.0, help="bound of every call (120)"
    )
    p.add_argument("--max-body-bytes", type=int, default=64 << 20, help="request body cap")
    p.add_argument("--max-file-bytes", type=int, default=256 << 20, help="/file's size cap")
    p.add_argument("--pause", type=float, default=0.0, help="pyautogui.PAUSE (default: 0)")
    p.set_defaults(func=osworld_server)


def ablate(args: argparse.Namespace) -> int:
    """``mantis-fast ablate``: paired OFF/ON requests of one toggle against a /v1/cua service;
    exit 1 when the ON side regressed, 2 when the service could not be used."""
    import json

    from mantis_fast.service.ablate import AblationError, format_table, run_ablation

    token = args.token or os.environ.get("MANTIS_TOKEN", "")
    request: dict = {"instruction": args.instruction, "start_url": args.start_url}
    for key in ("max_steps", "settle_time", "seed", "brain"):
        if getattr(args, key) is not None:
            request[key] = getattr(args, key)

    def progress(label: str, run) -> None:
        shown = run.error or (
            f"success={run.success} steps={run.steps} wall={run.wall_seconds:.2f}s "
            f"reused_session={run.reused_session}"
        )
        print(f"{label}: {shown}", flush=True)

    try:
        result = run_ablation(
            args.endpoint,
            token,
            args.toggle,
            request,
            pairs=args.pairs,
            warmup=not args.no_warmup,
            timeout=args.timeout,
            progress=progress,
        )
    except AblationError as exc:
        print(f"mantis-fast ablate: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result.to_dict(), file, indent=2)
    return 1 if result.regressions() else 0


def _add_ablate(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "ablate",
        help="paired OFF/ON ablation of a per-request toggle against a /v1/cua service "
        "(upstream's ablate_v1_cua; docs/service.md)",
    )
    p.add_argument("--toggle", required=True, help="e.g. adaptive_click_tol, loop_adaptive")
    p.add_argument("--instruction", required=True)
    p.add_argument("--start-url", required=True)
    p.add_argument("--pairs", type=int, default=3, help="OFF/ON pairs (default: 3)")
    p.add_argument("--endpoint", default="http://127.0.0.1:8790", help="the service's base URL")
    p.add_argument("--token", help="X-Mantis-Token (default: $MANTIS_TOKEN)")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--settle-time", type=float)
    p.add_argument("--seed", type=int, help="MiniWoB++ pages: the episode's seed")
    p.add_argument("--brain", help="the service's brain for these requests")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up request")
    p.add_argument("--json", help="write the whole ablation (pairs, aggregate) to this file")
    p.set_defaults(func=ablate)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mantis-fast", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser(
        "demo",
        help="the main job: an agent loop clicks targets in a Tk app on its own Xvfb "
        "(needs mantis_fast[gym])",
    )
    p.add_argument("--targets", type=int, default=20, help="targets to hit (default: 20)")
    p.add_argument("--out", default="runs", help="runs directory (default: runs)")
    p.add_argument(
        "--brain-size",
        default="1280x720",
        type=lambda text: tuple(int(v) for v in text.lower().split("x")),
        help="size of the image the brain sees, WxH (default: 1280x720)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=demo)
    p = commands.add_parser("grab", help="capture the screen (or a region) to an image file")
    p.add_argument("output")
    p.add_argument(
        "--display", default=None, help="X display (default: $DISPLAY, else a private Xvfb)"
    )
    p.add_argument("--region", help="x,y,width,height")
    p.set_defaults(func=grab)
    p = commands.add_parser("info", help="show the capture backend and monitors of a display")
    p.add_argument("--display", default=None)
    p.set_defaults(func=info)
    p = commands.add_parser(
        "displays",
        help="list this host's displays (Hyprland, sway, else X11 RandR; macOS, Windows)",
    )
    p.add_argument("--display", default=None, help="X display to list (implies --source x11)")
    p.add_argument(
        "--source",
        default="auto",
        choices=["auto", "hyprland", "sway", "x11", "macos", "windows"],
        help="where the list comes from (default: detected)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the displays descriptor (schema version 1)"
    )
    p.set_defaults(func=displays)
    p = commands.add_parser(
        "run",
        help="run the vision loop against an OpenAI-compatible model endpoint "
        "(needs mantis_fast[agent])",
    )
    p.add_argument(
        "--config",
        help="configuration keys (see AgentConfig): a TOML file, or a config.py of UPPER_CASE "
        "constants (run as Python: your own code)",
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override any key (repeatable)"
    )
    for name, (flag, kind) in _RUN_FLAGS.items():
        extra = " ('auto': a random one, printed)" if name == "panel_token" else ""
        p.add_argument(flag, dest=name, type=kind, default=None, help=f"sets {name.upper()}{extra}")
    p.add_argument(
        "--no-physical-execution", action="store_true", help="run the loop without input"
    )
    p.add_argument("--boot", action="store_true", help="start from BOOT_VLM_OUTPUT")
    p.set_defaults(func=run)
    _add_serve(commands)
    _add_osworld_server(commands)
    _add_ablate(commands)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except MissingExtraError as exc:  # a subcommand of an optional layer, its extra not installed
        print(f"mantis-fast {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
