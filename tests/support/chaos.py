"""Faults at scale: browser desktops and the ``/v1/cua`` service under kills, stalls, floods and
a full disk, with nothing lost (``make chaos``; a one-fault-of-each-kind form runs in ``make
test``: tests/package/test_chaos.py).

    .venv/bin/python -m tests.support.chaos --seconds 600 --seed 0 --json chaos.json

What runs, at once, for ``--seconds``:

* a ``make_vec(--desktops, [MiniWoBTask(...) for several tasks])`` of browser desktops, each
  env stepped by a random pointer policy (clicks, drags, keys, text anywhere);
* ``mantis-fast serve`` (``--pool`` desktops, a queue of ``--queue``, the MiniWoB++ oracle as
  its brain, its runs directory on a small tmpfs when the machine lets us mount one) answering
  ``--clients`` concurrent clients, each sending request after request;
* an injector that, at seeded random times, applies one fault of a kind drawn in turn: SIGKILL a
  renderer, a whole Chromium, an Xvfb or a vector-env worker; SIGSTOP a Chromium or an Xvfb past
  the step's bound (then SIGCONT); the same kills in the service's desktops; the runs directory
  filled; the service's descriptor limit lowered to what it has open (EMFILE on its accepts,
  files and new desktops); connections opened up to and past the service's cap; slow,
  truncated, malformed and oversized requests.

What it checks and reports (``Report``): per fault kind, how many were injected and what the
side it hit did next (episodes completed, truncated with a reason, failed with a typed error);
the longest step, reset and request, each against its bound (+1 s); every request answered (2xx,
or 4xx/5xx with a reason) within its timeout; and after everything closed: no process of ours,
no SysV segment we made, no Chromium profile, Chromium scratch directory or Xvfb auth directory
in the temp dir, this process's descriptors and RSS back near their start, every run log
readable to its last whole line.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.serve_process import ServeProcess

#: Tasks the vector env's desktops cycle through.
TASKS = ("click-test-2", "click-button", "enter-text", "focus-text")
#: A vector-env step or reset may take this long before its worker counts as hung (seconds).
STEP_BOUND = 20.0
#: A request's own timeout (``timeout_seconds``).
REQUEST_TIMEOUT = 30.0
#: What a side does within this many seconds of a fault is counted against the fault.
ATTRIBUTION_S = 30.0
#: Seconds a SIGSTOPped process stays stopped: past the step's bound.
STOP_FOR = STEP_BOUND + 2.0
RAY_FAULTS = ("kill-ray-actor",)
VECTOR_FAULTS = (
    "kill-renderer",
    "kill-chromium",
    "kill-xvfb",
    "kill-worker",
    "stop-chromium",
    "stop-xvfb",
)
SERVICE_FAULTS = (
    "service-kill-renderer",
    "service-kill-chromium",
    "service-kill-xvfb",
    "full-disk",
    "fd-exhaustion",
    "connection-flood",
    "slow-request",
    "truncated-request",
    "malformed-request",
    "oversized-request",
)
FAULTS = VECTOR_FAULTS + RAY_FAULTS + SERVICE_FAULTS
TOKEN = "chaos-token"


# -- processes ------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text()
                tree[int(stat.rsplit(")", 1)[1].split()[1])].append(int(entry.name))
    return tree


def _parent(pid: int) -> int | None:
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return None


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return []
    argv = raw.rstrip("\0").split("\0")
    if len(argv) == 1:  # a process that rewrote its title (Chromium's helpers): one string
        argv = argv[0].split(" ")
    return argv


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def _alive(pid: int) -> bool:
    return _state(pid) not in ("gone", "Z")


def find(kind: str, under: set[int]) -> list[int]:
    """The live processes of ``kind`` ("renderer", "chromium", "xvfb") among ``under``."""
    found = []
    for pid in sorted(under):
        argv = _cmdline(pid)
        if argv and _alive(pid) and _is(kind, argv):
            found.append(pid)
    return found


def _is(kind: str, argv: list[str]) -> bool:
    program = os.path.basename(argv[0])
    if kind == "xvfb":
        return program == "Xvfb"
    if program not in ("chromium", "chrome", "chromium-browser"):
        return False
    if kind == "renderer":
        return "--type=renderer" in argv
    return not any(arg.startswith("--type=") for arg in argv)  # the browser process


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _descriptor_targets() -> dict[int, str]:
    """This process's open descriptors and what each is (a path, ``socket:[inode]``...)."""
    targets = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            targets[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
    return targets


# What stays open by design once a run is over: Ray's client (its event, timer and epoll
# descriptors and its session's log files, kept for the next ray.init) and multiprocessing's
# (semaphores in /dev/shm; the forkserver's and resource tracker's pipes are among the few
# pipes and sockets allowed below).
_BY_DESIGN = re.compile(r"anon_inode:\[?(eventfd|timerfd|eventpoll)\]?|/ray/|^/dev/shm/")
_PIPES_AND_SOCKETS_ALLOWED = 8


def _unexplained(opened: list[str]) -> int:
    """How many of the descriptors opened during the run and still open (``"fd target"``) are
    not what stays open by design: anything else, and pipes and sockets beyond a few."""
    kept = [entry.split(" ", 1)[1] for entry in opened]
    other = [target for target in kept if not _BY_DESIGN.search(target)]
    channels = sum(target.startswith(("pipe:", "socket:")) for target in other)
    return len(other) - channels + max(0, channels - _PIPES_AND_SOCKETS_ALLOWED)


def _temp_leftovers() -> set[str]:
    temp = tempfile.gettempdir()
    prefixes = ("mantis-chromium-", "mantis-xvfb-", "org.chromium.Chromium.")
    return {name for name in os.listdir(temp) if name.startswith(prefixes)}


def _segments() -> set[int]:
    from mantis_fast.x11.sysv_segments import segment_table

    uid = os.getuid()
    return {entry.shmid for entry in segment_table() if entry.owner_uid == uid}


# -- what happened ---------------------------------------------------------------------------
@dataclass
class Report:
    """Everything the run saw, and what it checks."""

    seconds: float
    seed: int
    injected: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)  # a kind with no target at that moment
    outcomes: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    max_step_s: float = 0.0
    max_reset_s: float = 0.0
    max_request_s: float = 0.0
    requests: Counter = field(default_factory=Counter)
    unanswered: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    leftovers: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # typed failures, for the record
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    last_fault: dict[str, tuple[str, float]] = field(default_factory=dict, repr=False)
    # When each fault hit, and which process (with its parent): what a leftover's owner pid,
    # in its name, is read against.
    timeline: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic, repr=False)

    def outcome(self, side: str, what: str) -> None:
        """Count ``what`` against the fault that last hit ``side`` within ``ATTRIBUTION_S``
        (else against "no fault")."""
        with self.lock:
            kind, when = self.last_fault.get(side, ("no fault", 0.0))
            if time.monotonic() - when > ATTRIBUTION_S:
                kind = "no fault"
            self.outcomes[kind][what] += 1

    def note(self, what: str) -> None:
        with self.lock:
            self.timeline.append(f"{time.monotonic() - self.started:.1f}s {what}")

    def fault(self, kind: str, side: str, pid: int | None = None) -> None:
        target = "" if pid is None else f" pid {pid} (parent {_parent(pid)})"
        with self.lock:
            self.injected[kind] += 1
            self.last_fault[side] = (kind, time.monotonic())
            self.timeline.append(f"{time.monotonic() - self.started:.1f}s {kind}{target}")

    @property
    def ok(self) -> bool:
        return not (self.problems or self.unanswered or self.late or any(self.leftovers.values()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "seed": self.seed,
            "injected": dict(self.injected),
            "skipped": dict(self.skipped),
            "outcomes": {kind: dict(counts) for kind, counts in self.outcomes.items()},
            "max_step_s": round(self.max_step_s, 2),
            "max_reset_s": round(self.max_reset_s, 2),
            "max_request_s": round(self.max_request_s, 2),
            "requests": dict(self.requests),
            "unanswered": self.unanswered,
            "late": self.late,
            "leftovers": self.leftovers,
            "problems": self.problems,
            "failures": self.failures,
            "timeline": self.timeline,
            "ok": self.ok,
        }

    def markdown(self) -> str:
        lines = [
            "| fault | injected | outcomes after it |",
            "| --- | --- | --- |",
        ]
        for kind in (*FAULTS, "no fault"):
            counts = self.outcomes.get(kind, {})
            shown = ", ".join(f"{what} {n}" for what, n in sorted(counts.items())) or "-"
            lines.append(f"| {kind} | {self.injected.get(kind, 0)} | {shown} |")
        lines.append("")
        lines.append(
            f"Longest step {self.max_step_s:.1f} s, reset {self.max_reset_s:.1f} s (bound "
            f"{STEP_BOUND:g} s); longest request {self.max_request_s:.1f} s (timeout "
            f"{REQUEST_TIMEOUT:g} s); requests {dict(self.requests)}; unanswered "
            f"{len(self.unanswered)}, late {len(self.late)}; leftovers "
            f"{ {k: v for k, v in self.leftovers.items() if v} or 0 }."
        )
        return "\n".join(lines)


# -- the vector env --------------------------------------------------------------------------
class VectorSide:
    """A vector env of browser desktops stepped by a random policy; rebuilt when it fails."""

    def __init__(self, desktops: int, report: Report, rng: random.Random) -> None:
        self.desktops = desktops
        self.report = report
        self.rng = rng
        self.envs: Any = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-vector", daemon=True)

    def _make(self) -> Any:
        from mantis_fast.gym import make_vec
        from mantis_fast.gym.miniwob import MiniWoBTask

        tasks = [MiniWoBTask(name) for name in TASKS]
        return make_vec(
            self.desktops, tasks, timeout=STEP_BOUND, max_episode_steps=20, restart_failed=True
        )

    def workers(self) -> list[int]:
        with self.lock:
            envs = self.envs
            if envs is None or envs.closed:
                return []
            return [process.pid for process in envs.processes if process.is_alive()]

    def _run(self) -> None:
        from mantis_fast.errors import MantisError
        from mantis_fast.gym.policies import random_pointer

        seed = self.rng.randrange(1 << 30)
        while not self.stop.is_set():
            envs = None
            try:
                envs = self._make()  # not under the lock: the injector reads the workers
                with self.lock:
                    self.envs = envs
                workers = [process.pid for process in envs.processes]
                self.report.note(f"vector workers {workers}")
                started = time.monotonic()
                observations, _ = envs.reset(seed=seed)
                self.report.max_reset_s = max(self.report.max_reset_s, time.monotonic() - started)
                while not self.stop.is_set():
                    actions = random_pointer(observations, envs.action_space)
                    started = time.monotonic()
                    observations, _, terminated, truncated, infos = envs.step(actions)
                    took = time.monotonic() - started
                    self.report.max_step_s = max(self.report.max_step_s, took)
                    if [process.pid for process in envs.processes] != workers:
                        workers = [process.pid for process in envs.processes]
                        self.report.note(f"vector workers {workers}")
                    for index in range(self.desktops):
                        self._episode_end(index, terminated, truncated, infos)
            except MantisError as exc:  # a typed failure: the vector env closed itself
                self.report.outcome("vector", f"failed: {type(exc).__name__}")
                self.report.failures.append(f"vector env: {type(exc).__name__}: {exc}")
            except Exception as exc:  # untyped: a defect
                self.report.problems.append(f"vector env: {type(exc).__name__}: {exc}")
            finally:
                with self.lock:
                    self.envs = None
                if envs is not None:
                    envs.close()
            seed += self.desktops

    def _episode_end(self, index: int, terminated: Any, truncated: Any, infos: dict) -> None:
        if terminated[index]:
            self.report.outcome("vector", "completed")
        elif truncated[index]:
            restarted = infos.get("worker_restarted")
            if restarted is not None and infos["_worker_restarted"][index]:
                kind = "hung" if "did not answer" in restarted[index] else "died"
                self.report.outcome("vector", f"truncated: its worker {kind}, replaced")
                return
            reasons = infos.get("truncated_reason")
            reason = reasons[index] if reasons is not None else ""
            if not reason:
                reason = "time limit"  # TimeLimit's truncation carries no reason
            elif "died" in reason:
                reason = "truncated: " + reason.split(":")[0]
            else:
                reason = "truncated: " + reason.split(" over ")[0]
            self.report.outcome("vector", reason)

    def processes(self) -> set[int]:
        pids: set[int] = set()
        for worker in self.workers():
            pids |= descendants(worker) | {worker}
        return pids


# -- the Ray pool ----------------------------------------------------------------------------
class RaySide:
    """A ``DesktopPool`` of Tk desktops as Ray actors on this one node, stepped at random."""

    def __init__(self, desktops: int, report: Report, rng: random.Random) -> None:
        import ray

        from mantis_fast.gym import ClickTarget
        from mantis_fast.gym.ray_pool import DesktopPool

        self.report, self.rng = report, rng
        ray.init(
            num_cpus=2,
            resources={"desktop": desktops},
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
        self.pool = DesktopPool(
            desktops,
            ClickTarget(),
            observation_size=(320, 180),
            step_timeout=STEP_BOUND,
            start_timeout=120.0,
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-ray", daemon=True)

    def actor_pids(self) -> list[int]:
        try:
            return [int(place["pid"]) for place in self.pool.where()]
        except Exception:  # an actor being replaced: no target this time
            return []

    def _run(self) -> None:
        from mantis_fast.errors import MantisError

        self.pool.action_space.seed(self.rng.randrange(1 << 30))
        try:
            self.pool.reset(seed=self.rng.randrange(1 << 30))
            while not self.stop.is_set():
                actions = [self.pool.action_space.sample() for _ in range(len(self.pool))]
                started = time.monotonic()
                _, _, terminated, truncated, infos = self.pool.step(actions)
                took = time.monotonic() - started
                self.report.max_step_s = max(self.report.max_step_s, took)
                for index, info in enumerate(infos):
                    if terminated[index]:
                        self.report.outcome("ray", "completed")
                    elif truncated[index]:
                        reason = info.get("truncated_reason") or "time limit"
                        self.report.outcome("ray", "truncated: " + reason.split(":")[0][:60])
        except Exception as exc:  # the pool replaces dead actors: any failure is a defect
            failed = "failed" if isinstance(exc, MantisError) else "untyped failure"
            self.report.outcome("ray", f"{failed}: {type(exc).__name__}")
            self.report.problems.append(f"the Ray pool failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        import ray

        self.stop.set()
        self.thread.join(timeout=STEP_BOUND * 3 + 60)
        self.pool.close()
        ray.shutdown()


# -- the service -----------------------------------------------------------------------------
class ServiceSide:
    """``mantis-fast serve`` and its clients."""

    def __init__(self, pool: int, queue: int, clients: int, report: Report, root: Path) -> None:
        from mantis_fast.gym.miniwob import miniwob_html_dir

        self.report = report
        self.clients = clients
        self.runs = root / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)
        self.tmpfs = self._mount_small_tmpfs(self.runs)
        self.page = (miniwob_html_dir() / "miniwob" / "click-test-2.html").as_uri()
        args = ["--port", "0", "--pool-size", str(pool), "--max-queue", str(queue)]
        args += ["--brain", "miniwob-oracle", "--runs-dir", str(self.runs)]
        args += ["--timeout", str(REQUEST_TIMEOUT)]
        # Its log (a full runs directory makes it loud) goes to a file beside the runs.
        log = os.environ.get("CHAOS_SERVE_LOG") or str(root / "serve.log")
        self.log = open(log, "wb")  # noqa: SIM115 (closed in close())
        self.served = ServeProcess(args, TOKEN, stderr=self.log)
        self.process = self.served.process
        report.note(f"serve pid {self.process.pid}")
        self.url, self.host, self.port = self.served.url, self.served.host, self.served.port
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._client, args=(i,), name=f"chaos-client-{i}", daemon=True)
            for i in range(clients)
        ]

    @staticmethod
    def _mount_small_tmpfs(path: Path) -> bool:
        """The runs directory on a 64 MiB tmpfs, so "full" is reachable (root only)."""
        if os.geteuid() != 0:
            return False
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path)], capture_output=True
        )
        return done.returncode == 0

    def _client(self, index: int) -> None:
        import httpx

        seeds = iter(range(index * 100_000, (index + 1) * 100_000))
        with httpx.Client(timeout=REQUEST_TIMEOUT + 30, headers={"X-Mantis-Token": TOKEN}) as c:
            while not self.stop.is_set():
                body = {
                    "instruction": "Click button ONE.",
                    "start_url": self.page,
                    "max_steps": 5,
                    "settle_time": 0.0,
                    "seed": next(seeds),
                    "timeout_seconds": REQUEST_TIMEOUT,
                }
                started = time.monotonic()
                try:
                    reply = c.post(self.url, json=body)
                except httpx.HTTPError as exc:
                    self.report.unanswered.append(f"{type(exc).__name__}: {exc}")
                    time.sleep(0.5)
                    continue
                took = time.monotonic() - started
                self.report.max_request_s = max(self.report.max_request_s, took)
                # queued + episode within the timeout; 503 at once when the queue is full
                if took > REQUEST_TIMEOUT + 5.0:
                    self.report.late.append(f"{reply.status_code} after {took:.1f} s")
                self._count(reply)
                if reply.status_code == 503:
                    time.sleep(0.2)

    def _count(self, reply: Any) -> None:
        status = reply.status_code
        self.report.requests[str(status)] += 1
        if status == 200:
            data = reply.json()
            what = data.get("termination_reason", "?")
            self.report.outcome("service", f"request {what}")
        elif status >= 400:
            try:
                reason = reply.json().get("error")
            except ValueError:
                reason = None
            if not reason:
                self.report.problems.append(
                    f"a {status} reply without a reason: {reply.text!r:.200}"
                )
            # The reason's head, without what differs per request (paths, numbers).
            head = str(reason or "").split(":")[0].split(" under ")[0].split(" and ")[0][:48]
            self.report.outcome("service", f"request {status} ({head})")

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def processes(self) -> set[int]:
        return descendants(self.process.pid) if self.process.poll() is None else set()

    # the request-level faults
    def request_fault(self, kind: str) -> str:
        """A request that is malformed, oversized, cut short or sent a few bytes at a time;
        the status it got ("closed" when the server hung up without a reply)."""
        headers = {"X-Mantis-Token": TOKEN, "Content-Type": "application/json"}
        if kind in ("malformed-request", "oversized-request"):
            body = (
                b'{"instruction": "x", "start_url":'
                if kind == "malformed-request"
                else b'{"instruction": "' + b"x" * (1 << 20) + b'"}'
            )
            connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                connection.request("POST", "/v1/cua", body=body, headers=headers)
                status = str(connection.getresponse().status)
            except (OSError, http.client.HTTPException):
                status = "closed"
            finally:
                connection.close()
        else:
            head = (
                f"POST /v1/cua HTTP/1.1\r\nHost: {self.host}\r\nX-Mantis-Token: {TOKEN}\r\n"
                "Content-Type: application/json\r\n"
            ).encode()
            with socket.create_connection((self.host, self.port), timeout=60) as connection:
                try:
                    if kind == "truncated-request":  # a body promised and never sent
                        connection.sendall(head + b'Content-Length: 500\r\n\r\n{"instr')
                        connection.close()
                        status = "closed"
                    else:  # slow: the head a few bytes at a time, past the header timeout
                        for i in range(0, len(head), 8):
                            connection.sendall(head[i : i + 8])
                            time.sleep(1.0)
                        connection.sendall(b"Content-Length: 2\r\n\r\n{}")
                        reply = connection.recv(4096)
                        status = reply.split(b" ", 2)[1].decode() if reply else "closed"
                except OSError:
                    status = "closed"
        self.report.outcome("requests", f"{kind} -> {status}")
        return status

    def flood(self, count: int, hold: float) -> None:
        sockets = []
        try:
            for _ in range(count):
                with contextlib.suppress(OSError):
                    sockets.append(socket.create_connection((self.host, self.port), timeout=5))
            time.sleep(hold)
        finally:
            for each in sockets:
                each.close()

    def exhaust_descriptors(self, hold: float) -> None:
        """The service's own descriptor limit (RLIMIT_NOFILE, set from outside with prlimit)
        lowered to what it has open plus a few, so its accepts, files and new desktops meet
        EMFILE as a process at its limit does; restored after ``hold`` seconds."""
        pid = self.process.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        try:
            open_now = len(os.listdir(f"/proc/{pid}/fd"))
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_now + 4, hard))
            time.sleep(hold)
        except (ProcessLookupError, FileNotFoundError):
            return
        finally:
            with contextlib.suppress(ProcessLookupError):
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))

    def fill_disk(self, hold: float) -> None:
        filler = self.runs / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as out:
            while True:
                out.write(b"\0" * (1 << 20))
        time.sleep(hold)
        filler.unlink(missing_ok=True)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=REQUEST_TIMEOUT + 60)
        if not self.served.stop(wait=60):
            self.report.problems.append("the service did not stop within 60 s of SIGTERM")
        self.log.close()
        self._check_run_logs()
        if self.tmpfs:
            subprocess.run(["umount", str(self.runs)], capture_output=True)

    def _check_run_logs(self) -> None:
        """Every run log readable to its last whole line."""
        for log in self.runs.rglob("*.jsonl"):
            lines = log.read_bytes().split(b"\n")
            whole = lines[:-1]  # the part after the last newline may be cut by a full disk
            for number, line in enumerate(whole, 1):
                try:
                    json.loads(line)
                except ValueError:
                    self.report.problems.append(f"{log}: line {number} is not JSON: {line!r:.80}")


# -- the injector ----------------------------------------------------------------------------
class Injector:
    """One fault every ``interval`` seconds (seeded jitter), kinds drawn in a shuffled cycle."""

    def __init__(
        self,
        kinds: list[str],
        interval: float,
        vector: VectorSide | None,
        service: ServiceSide | None,
        report: Report,
        rng: random.Random,
        once: bool = False,
        ray: RaySide | None = None,
    ) -> None:
        self.kinds, self.interval, self.once = kinds, interval, once
        self.ray = ray
        self.done = threading.Event()  # once: every kind applied
        self.vector, self.service, self.report, self.rng = vector, service, report, rng
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-injector", daemon=True)

    def _run(self) -> None:
        cycle: list[str] = []
        applied_once: set[str] = set()
        while not self.stop.wait(self.interval * self.rng.uniform(0.5, 1.5)):
            if self.once and applied_once >= set(self.kinds):
                self.done.set()
                return
            if not cycle:
                cycle = [kind for kind in self.kinds if not (self.once and kind in applied_once)]
                self.rng.shuffle(cycle)
            kind = cycle.pop()
            try:
                applied = self.apply(kind)
            except Exception as exc:  # the injector itself must not stop the run
                self.report.problems.append(f"injecting {kind}: {type(exc).__name__}: {exc}")
                continue
            if applied:
                applied_once.add(kind)
            else:
                self.report.skipped[kind] += 1
                cycle.insert(0, kind)  # try it again later

    def apply(self, kind: str) -> bool:
        if kind in RAY_FAULTS:
            return self.ray is not None and self._signal(kind, "ray", self.ray.actor_pids())
        if kind in VECTOR_FAULTS:
            if self.vector is None:
                return False
            if kind == "kill-worker":
                targets = self.vector.workers()
            else:
                what = kind.split("-", 1)[1]
                targets = find(what, self.vector.processes())
            return self._signal(kind, "vector", targets)
        assert self.service is not None
        if kind.startswith("service-kill-"):
            what = kind.removeprefix("service-kill-")
            return self._signal(kind, "service", find(what, self.service.processes()))
        side = (
            "service" if kind in ("full-disk", "fd-exhaustion", "connection-flood") else "requests"
        )
        self.report.fault(kind, side)
        if kind == "full-disk":
            if not self.service.tmpfs:
                return True  # counted: the disk cannot be filled here (no tmpfs)
            threading.Thread(target=self.service.fill_disk, args=(10.0,), daemon=True).start()
        elif kind == "fd-exhaustion":
            threading.Thread(
                target=self.service.exhaust_descriptors, args=(10.0,), daemon=True
            ).start()
        elif kind == "connection-flood":
            threading.Thread(target=self.service.flood, args=(200, 5.0), daemon=True).start()
        else:
            threading.Thread(target=self.service.request_fault, args=(kind,), daemon=True).start()
        return True

    def _signal(self, kind: str, side: str, targets: list[int]) -> bool:
        if not targets:
            return False
        pid = self.rng.choice(targets)
        if kind.startswith("stop-"):
            self.report.fault(kind, side, pid)
            os.kill(pid, signal.SIGSTOP)

            def resume() -> None:
                time.sleep(STOP_FOR)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

            threading.Thread(target=resume, daemon=True).start()
        else:
            self.report.fault(kind, side, pid)
            os.kill(pid, signal.SIGKILL)
        return True


# -- the run ---------------------------------------------------------------------------------
def run(
    seconds: float,
    *,
    seed: int = 0,
    desktops: int = 8,
    pool: int = 4,
    queue: int = 8,
    clients: int = 50,
    interval: float = 8.0,
    kinds: list[str] | None = None,
    once: bool = False,
    ray_desktops: int = 4,
) -> Report:
    """The whole chaos run; the report says whether it passed (``report.ok``). ``once``: each
    kind of fault once, then ``seconds`` more to see what follows (the short form)."""
    rng = random.Random(seed)
    report = Report(seconds, seed)
    kinds = list(kinds or FAULTS)
    before_segments, before_temp = _segments(), _temp_leftovers()
    rss_before = _rss_kib()
    targets_before = _descriptor_targets()
    # What already ran below this process (a test session's own Xvfb, say) is not the run's.
    processes_before = descendants(os.getpid())
    with tempfile.TemporaryDirectory(prefix="chaos-") as root:
        vector = VectorSide(desktops, report, rng) if desktops else None
        service = ServiceSide(pool, queue, clients, report, Path(root)) if clients else None
        ray = RaySide(ray_desktops, report, rng) if ray_desktops else None
        if ray is None:
            kinds = [kind for kind in kinds if kind not in RAY_FAULTS]
        injector = Injector(kinds, interval, vector, service, report, rng, once=once, ray=ray)
        try:
            if vector is not None:
                vector.thread.start()
            if ray is not None:
                ray.thread.start()
            if service is not None:
                service.start()
            injector.thread.start()
            if once:
                injector.done.wait(timeout=interval * 1.5 * len(kinds) * 4 + 120)
                if not injector.done.is_set():
                    report.problems.append(f"not every fault could be injected: {report.skipped}")
            time.sleep(seconds)
        finally:
            injector.stop.set()
            injector.thread.join(timeout=30)
            time.sleep(STOP_FOR + 1)  # every stopped process resumed
            if vector is not None:
                vector.stop.set()
                vector.thread.join(timeout=STEP_BOUND * 3 + 60)
                if vector.thread.is_alive():
                    report.problems.append("the vector env did not stop")
            if service is not None:
                service.close()
            if ray is not None:
                ray.close()
    time.sleep(1.0)
    # multiprocessing's forkserver and resource tracker serve every vector env this process
    # makes: they are meant to live as long as it does.
    left = {
        pid
        for pid in descendants(os.getpid()) - processes_before
        if "multiprocessing" not in " ".join(_cmdline(pid))
    }
    opened = sorted(
        f"{fd} {target}"
        for fd, target in _descriptor_targets().items()
        if targets_before.get(fd) != target
    )
    report.note(f"descriptors opened during the run and still open: {opened}")
    report.leftovers = {
        "processes": sorted(
            {f"{pid} {' '.join(_cmdline(pid))[:80]}" for pid in left if _alive(pid)}
        ),
        "segments": sorted(_segments() - before_segments),
        "temp": sorted(_temp_leftovers() - before_temp),
        "descriptors": _unexplained(opened),
        "rss_mib_growth_over_256": max(0, (_rss_kib() - rss_before) // 1024 - 256),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--desktops", type=int, default=8)
    parser.add_argument("--pool", type=int, default=4)
    parser.add_argument("--queue", type=int, default=8)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--ray", type=int, default=4, help="Ray actors (0: no Ray pool)")
    parser.add_argument("--interval", type=float, default=8.0, help="seconds between faults")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", help="write the table here")
    args = parser.parse_args(argv)
    report = run(
        args.seconds,
        seed=args.seed,
        desktops=args.desktops,
        pool=args.pool,
        queue=args.queue,
        clients=args.clients,
        interval=args.interval,
        ray_desktops=args.ray,
    )
    print(report.markdown())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(report.markdown() + "\n")
    for problem in report.problems + report.unanswered + report.late:
        print("PROBLEM:", problem)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
