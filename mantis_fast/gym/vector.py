"""Many desktops per machine: ``make_vec(n)`` is a ``gymnasium.vector.AsyncVectorEnv`` of ``n``
``DesktopEnv``\\ s, each in its own worker process with its own Xvfb, app, capture and input.
It is a context manager (Gymnasium's own ``VectorEnv`` is not): leaving the ``with`` block
closes it.

::

    from mantis_fast.gym import ClickTarget, make_vec
    from mantis_fast.gym.policies import click_red_targets

    if __name__ == "__main__":  # the workers' start method imports the main module
        with make_vec(4, ClickTarget(), observation_size=(640, 360)) as envs:
            observations, infos = envs.reset(seed=0)      # (4, 360, 640, 3), in shared memory
            actions = click_red_targets(observations, envs.action_space)
            observations, rewards, terminated, truncated, infos = envs.step(actions)

``gymnasium.make_vec("mantis_fast/Desktop-v0", num_envs=4)`` builds the same vector env (the
registry's ``vector_entry_point``).

Every worker constructs its own env and starts its desktop at the first ``reset``, which all
workers run at once: the desktops start in parallel. Observations come back through shared
memory (``shared_memory=True``), not pickled through the pipes.

Bad actions: ``step`` reads every env's action against the action space in this process
(``mantis_fast.gym.action_space.read_actions``) before any worker gets one; an action outside
it raises ``InvalidInputError`` naming the env and the field, nothing is sent to any worker,
and the vector env goes on as it was.

Death: a desktop whose X server or app dies is replaced inside ``DesktopEnv.step`` (the step
is ``truncated`` with ``info["desktop_restarted"]``). A worker process that dies (killed, out of
memory) or stops answering for ``timeout`` seconds is not waited on forever:
``DesktopVectorEnv`` raises ``WorkerDiedError`` / ``WorkerTimeoutError`` naming the worker,
terminates the other workers, and stops the desktop processes (Xvfb, app) the dead worker left
behind. An exception raised inside a worker (Gymnasium's worker ends on one) arrives once, with
the worker's index and its traceback as a note: a ``MantisError`` as its own type, anything
else as ``WorkerDiedError``; the other workers are closed. Either way the vector env is then
closed, and every later call raises ``DisplayError`` saying why; make a new one to go on.

``make_vec(..., restart_failed=True)`` keeps the vector env going instead (as RLlib's
``restart_failed_sub_environments``): a worker that dies or does not answer a ``step`` within
``timeout`` is killed, what it left behind is stopped, and a new worker takes its place; that
env's step comes back ``truncated`` with ``info["worker_restarted"]`` saying why (its
observation is the last one it had), and its next step resets the new desktop (next-step
autoreset, as after any episode's end; the new worker's env is not seeded). The other envs
step on. ``restarts`` counts the replaced workers. A worker whose env *raises* is not
restarted (that is a bug to see, not a fault to ride out), nor one that fails a ``reset`` or
a ``call``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import multiprocessing
import multiprocessing.connection
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv
from gymnasium.vector.async_vector_env import AsyncState, _async_worker
from gymnasium.vector.utils import CloudpickleWrapper
from gymnasium.vector.vector_env import AutoresetMode

from mantis_fast import _validate
from mantis_fast.errors import (
    DisplayError,
    InvalidInputError,
    MantisError,
    WorkerDiedError,
    WorkerTimeoutError,
)
from mantis_fast.gym.action_space import is_desktop_space, read_actions
from mantis_fast.gym.desktop import DesktopEnv
from mantis_fast.gym.processes import (
    DesktopProcess,
    add_note,
    child_processes,
    relayed_error,
    remove_scratch_of,
    stop_processes,
)
from mantis_fast.gym.registration import MAX_EPISODE_STEPS
from mantis_fast.gym.tasks import Task
from mantis_fast.x11.sysv_segments import (
    UnexpectedSegmentTable,
    remove_segment,
    segment_table,
)

__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_TIMEOUT_S",
    "DesktopProcess",
    "DesktopVectorEnv",
    "WorkerDiedError",
    "WorkerTimeoutError",
    "make_vec",
    "vector_entry_point",
]

#: The multiprocessing start method of the workers. "forkserver": a worker is forked from a
#: clean server process that never ran an OpenMP team (GNU OpenMP hangs in a child forked
#: after its parent used one) and holds none of the parent's X connections, threads or locks.
#: It costs up to a second once, for the server, which imports mantis_fast once for all the
#: workers: measured, ``make_vec(4)`` to its first reset done on 2 cores, fork 3.3 s,
#: forkserver 3.4 s, spawn 4.8 s (medians of 3; 5.8, 6.8 and 8.9 s on a busier machine).
DEFAULT_CONTEXT = "forkserver"
#: Seconds a ``reset``/``step``/``call`` may take before a worker counts as hung. A step that
#: replaces a dead desktop starts an Xvfb and the app again (seconds); a reset may do it twice.
DEFAULT_TIMEOUT_S = 120.0
# The modules a forkserver imports once, so every worker it forks starts with them loaded.
_PRELOAD = ["mantis_fast.gym.desktop", "mantis_fast.gym.tasks", "gymnasium.vector"]
_CONTEXTS = ("forkserver", "spawn", "fork")
# While a reset or step takes longer than this, the desktop processes of its workers are
# looked at again (each look reads a few /proc files per busy worker).
_WATCH_S = 0.25
# How long the parent waits for a failed worker's exception to come through the error queue
# (the worker puts it there just before it answers; the queue's feeder thread may lag).
_ERROR_WAIT_S = 5.0


def _remove_orphan_segments(creators: set[int], since: float) -> None:
    """Remove the private SysV segments that dead processes of ours created (or changed) at or
    after ``since`` (epoch seconds) and nobody has attached: a worker stopped before its
    capture marked its segment for removal, or an Xvfb killed before we marked its ``-shmem``
    framebuffer, would leave a few MB that nothing ever frees. The key and the time keep a
    reused pid from costing another program its segment."""
    if not creators:
        return
    try:
        table = segment_table()
    except (OSError, UnexpectedSegmentTable):
        return
    for entry in table:
        if (
            entry.creator_pid in creators
            and entry.attachments == 0
            and entry.key == 0  # IPC_PRIVATE: reachable by id only
            and entry.changed >= int(since)
        ):
            remove_segment(entry.shmid)


def _make_desktop(
    task: Task | Callable[..., Any] | None, max_episode_steps: int | None, kwargs: dict
) -> gymnasium.Env:
    """Runs in a worker: the worker's own env (its desktop starts at the first reset)."""
    env: gymnasium.Env = DesktopEnv(task, **kwargs)
    if max_episode_steps is not None:
        env = gymnasium.wrappers.TimeLimit(env, max_episode_steps)
    return env


class DesktopVectorEnv(AsyncVectorEnv):
    """An ``AsyncVectorEnv`` of desktops that never hangs on a worker (see the module
    docstring): every wait is bounded by ``timeout`` seconds, a dead or hung worker raises
    ``WorkerDiedError`` / ``WorkerTimeoutError``, and ``close()`` stops every desktop process
    the workers started, including those of a worker that died."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gymnasium.Env]],
        *,
        timeout: float,
        restart_failed: bool = False,
        **kw: Any,
    ):
        self.timeout = timeout
        self.restart_failed = restart_failed
        #: Workers replaced since the vector env was made (``restart_failed=True``).
        self.restarts = 0
        self._created_at = time.time()  # segments older than the env are not its workers'
        self._desktop_processes: list[list[DesktopProcess]] = [[] for _ in env_fns]
        self._done = np.zeros(len(env_fns), bool)
        self._closed_because = ""
        self._closing = False
        self._context = multiprocessing.get_context(kw.get("context"))
        # Replacement workers send their observations through their pipes (the shared buffer
        # is handed to workers only when they are first started); the next step of a replaced
        # env is the new desktop's reset.
        self._pipe_observations: set[int] = set()
        self._resetting: set[int] = set()
        super().__init__(env_fns, **kw)
        if restart_failed and (
            not isinstance(self.observations, np.ndarray)
            or self.autoreset_mode is not AutoresetMode.NEXT_STEP
        ):
            self.close()
            raise InvalidInputError(
                "restart_failed needs array observations and next-step autoreset (a "
                "DesktopEnv's), got "
                f"{type(self.single_observation_space).__name__} and {self.autoreset_mode}"
            )
        # Desktop actions are read here, before any worker gets one (other envs read their own).
        space = self.single_action_space
        self._desktop_actions = space if is_desktop_space(space) else None

    # -- the desktop processes -------------------------------------------------------------
    def desktop_processes(self) -> tuple[tuple[DesktopProcess, ...], ...]:
        """Per env, the processes its worker started (Xvfb, the app) as last seen."""
        return tuple(tuple(processes) for processes in self._desktop_processes)

    def _look_at_children(self, indices: Iterable[int]) -> None:
        # A worker's desktop processes change only when it (re)starts a desktop or an app:
        # at reset, at the autoreset after an episode ends, when a dead desktop is replaced.
        gone: set[int] = set()
        for index in indices:
            process = self.processes[index]
            if process.pid is not None and process.exitcode is None:
                before = self._desktop_processes[index]
                self._desktop_processes[index] = child_processes(process.pid)
                gone.update(old.pid for old in before if not old.alive())
        _remove_orphan_segments(gone, self._created_at)

    # -- bounded waits ---------------------------------------------------------------------
    def reset_async(self, *args: Any, **kwargs: Any) -> None:
        self._guarded(super().reset_async, *args, **kwargs)
        self._resetting.clear()  # every env resets now, a replaced one too

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        wait = self._reset_wait_mixed if self._pipe_observations else super().reset_wait
        result = self._watched(wait, AsyncState.WAITING_RESET, timeout)
        self._done[:] = False
        self._look_at_children(range(self.num_envs))
        return result

    def step_async(self, actions: Any) -> None:
        """Send each env its action; a batch with an action outside the action space raises
        ``InvalidInputError`` naming the env and the field, and no worker gets anything."""
        if self._desktop_actions is None or self.closed or self._state is not AsyncState.DEFAULT:
            self._guarded(super().step_async, actions)  # Gymnasium's checks and errors
            return
        per_env = read_actions(actions, self.num_envs, self._desktop_actions, "env")
        self._guarded(self._send_steps, per_env)

    def _send_steps(self, per_env: list[Any]) -> None:
        for index, (pipe, action) in enumerate(zip(self.parent_pipes, per_env, strict=True)):
            # A replaced worker's first step is its desktop's reset.
            command = ("reset", {}) if index in self._resetting else ("step", action)
            try:
                pipe.send(command)
            except (BrokenPipeError, ConnectionResetError):
                if not self.restart_failed:
                    raise
                # A worker that died since the last step: its pipe's end is seen in the wait.
        self._state = AsyncState.WAITING_STEP

    def step_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        if self.restart_failed and not self.closed and self._state is AsyncState.WAITING_STEP:
            result = self._step_wait_restarting(self._bound(timeout))
        else:
            result = self._watched(super().step_wait, AsyncState.WAITING_STEP, timeout)
        _, _, terminated, truncated, _ = result
        # Truncation covers a replaced desktop; an ended episode resets at the next step.
        self._look_at_children(np.flatnonzero(self._done | truncated))
        self._done = terminated | truncated
        return result

    # -- restarting failed workers (restart_failed=True) -------------------------------------
    def _step_wait_restarting(self, bound: float) -> tuple[Any, ...]:
        """Gymnasium's ``step_wait``, except that a worker that dies or does not answer within
        ``bound`` is replaced and its env's step reported truncated (module docstring)."""
        deadline = time.monotonic() + bound
        busy = {pipe: index for index, pipe in enumerate(self.parent_pipes)}
        replies: dict[int, Any] = {}
        failed: dict[int, str] = {}
        while busy:
            left = deadline - time.monotonic()
            ready = multiprocessing.connection.wait(
                list(busy), timeout=max(min(left, _WATCH_S), 0.0)
            )
            for ready_pipe in ready:
                index = busy.pop(ready_pipe)  # type: ignore[call-overload]
                try:
                    replies[index] = self.parent_pipes[index].recv()
                except (EOFError, OSError):  # the end of a dead worker's pipe
                    failed[index] = self._death_of(index)
            if not ready:
                if left <= 0:
                    break
                self._look_at_children(sorted(busy.values()))
        for index in busy.values():
            pid = self.processes[index].pid
            failed[index] = f"worker {index} (pid {pid}) did not answer within {float(bound)}s"
        self._state = AsyncState.DEFAULT
        self._raise_if_errors([i not in replies or replies[i][1] for i in range(self.num_envs)])
        for index in failed:
            self._restart_worker(index)
        rewards = np.zeros(self.num_envs, np.float64)
        terminated = np.zeros(self.num_envs, np.bool_)
        truncated = np.zeros(self.num_envs, np.bool_)
        observations: list[Any] = []
        infos: dict[str, Any] = {}
        for index in range(self.num_envs):
            if index in failed:
                observation = self.observations[index].copy()
                truncated[index] = True
                info = {"worker_restarted": failed[index]}
            elif index in self._resetting:  # the new desktop's reset, as a next-step autoreset
                observation, info = replies[index][0]
            else:
                observation, reward, ended, cut, info = replies[index][0]
                rewards[index], terminated[index], truncated[index] = reward, ended, cut
            if index in self._pipe_observations and index not in failed:
                self.observations[index] = observation
            observations.append(observation)
            infos = self._add_info(infos, info, index)
        self._resetting = set(failed)
        if not self.shared_memory:
            self.observations = np.stack(observations)
        observation_batch = self.observations.copy() if self.copy else self.observations
        return observation_batch, rewards, terminated, truncated, infos

    def _reset_wait_mixed(self, timeout: float) -> tuple[Any, dict[str, Any]]:
        """Gymnasium's ``reset_wait`` when replaced workers send their observations through
        their pipes: those are written into the batch with the shared ones."""
        if not self._poll_pipe_envs(timeout):
            self._state = AsyncState.DEFAULT
            raise multiprocessing.TimeoutError(f"reset_wait timed out after {timeout}s")
        results, successes = zip(*[pipe.recv() for pipe in self.parent_pipes], strict=True)
        self._raise_if_errors(successes)
        infos: dict[str, Any] = {}
        for index, (observation, info) in enumerate(results):
            if index in self._pipe_observations or not self.shared_memory:
                self.observations[index] = observation
            infos = self._add_info(infos, info, index)
        self._state = AsyncState.DEFAULT
        return (self.observations.copy() if self.copy else self.observations), infos

    def _death_of(self, index: int) -> str:
        process = self.processes[index]
        process.join(timeout=1.0)  # the pipe ends as the kernel closes its files; then the exit
        return f"worker {index} (pid {process.pid}) {_exit_reason(process.exitcode)}"

    def _restart_worker(self, index: int) -> None:
        """Kill worker ``index`` (dead or hung), stop what it left, and start a new one."""
        process = self.processes[index]
        if process.is_alive():
            process.kill()
        process.join(timeout=5.0)  # a SIGKILL is reaped in milliseconds
        pipe = self.parent_pipes[index]
        if pipe is not None:
            pipe.close()
        # Its desktop is of no more use (a new one starts): little grace, within the step's bound.
        stop_processes(self._desktop_processes[index], grace_s=0.5)
        if process.pid is not None:
            remove_scratch_of(process.pid)
        gone = {p.pid for p in self._desktop_processes[index]} | {process.pid or 0}
        _remove_orphan_segments(gone, self._created_at)
        self._desktop_processes[index] = []
        parent_pipe, child_pipe = self._context.Pipe()
        args: list[Any] = [
            index,
            CloudpickleWrapper(self.env_fns[index]),
            child_pipe,
            parent_pipe,
            None,  # no shared buffer: the observations come through the pipe
            self.error_queue,
            self.autoreset_mode,
        ]
        if "semaphore" in inspect.signature(_async_worker).parameters:
            args.append(None)
        worker = self._context.Process(
            target=_async_worker, name=f"{process.name}-restarted", args=tuple(args)
        )
        worker.daemon = process.daemon
        worker.start()
        child_pipe.close()
        self.processes[index] = worker
        self.parent_pipes[index] = parent_pipe
        self._pipe_observations.add(index)
        self.restarts += 1

    def call_async(self, name: str, /, *args: object, **kwargs: object) -> None:
        # Bound first: a keyword of the env's method (even one named ``waited``) is its own.
        self._guarded(functools.partial(super().call_async, name, *args, **kwargs))

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        return self._guarded(super().call_wait, self._bound(timeout), waited=timeout)

    def set_attr(self, name: str, values: Any) -> None:
        # Gymnasium waits for the answers without a bound: a worker that died raises clearly.
        self._guarded(super().set_attr, name, values)

    def _watched(self, wait: Callable[..., Any], state: AsyncState, timeout: float | None) -> Any:
        """``wait`` for the workers' answers, bounded; while they take longer than
        ``_WATCH_S``, look at the desktop processes of the workers still busy, so a worker
        killed while it starts a desktop leaves none that ``close()`` does not know of."""
        left = self._bound(timeout)
        if self._state is state:  # else ``wait`` raises Gymnasium's error at once
            deadline = time.monotonic() + left
            busy = {
                pipe: index
                for index, pipe in enumerate(self.parent_pipes)
                if pipe is not None and not pipe.closed
            }
            while busy and time.monotonic() < deadline:
                step = min(deadline - time.monotonic(), _WATCH_S)
                ready = multiprocessing.connection.wait(list(busy), timeout=max(step, 0.0))
                # an answer, or the end of the pipe of a dead worker
                busy = {pipe: index for pipe, index in busy.items() if pipe not in ready}
                if not ready:
                    self._look_at_children(sorted(busy.values()))
            left = max(deadline - time.monotonic(), 0.0)
        return self._guarded(wait, left, waited=timeout)

    def _bound(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _guarded(
        self, call: Callable[..., Any], *args: Any, waited: float | None = None, **kwargs: Any
    ) -> Any:
        try:
            return call(*args, **kwargs)
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            raise self._fail(WorkerDiedError, self._dead_workers() or "a worker died") from exc
        except multiprocessing.TimeoutError as exc:
            hung = [
                f"worker {index} (pid {self.processes[index].pid})"
                for index, pipe in enumerate(self.parent_pipes)
                if pipe is not None and not pipe.closed and not pipe.poll(0)
            ]
            raise self._fail(
                WorkerTimeoutError,
                f"{', '.join(hung) or 'a worker'} did not answer within {self._bound(waited)}s",
            ) from exc

    def _dead_workers(self) -> str:
        # The pipe shows a death as soon as the kernel closes the worker's files; its exit
        # status follows a moment later.
        deadline = time.monotonic() + 1.0
        while True:
            dead = [
                f"worker {index} (pid {process.pid}) {_exit_reason(process.exitcode)}"
                for index, process in enumerate(self.processes)
                if process.exitcode is not None
            ]
            if dead or time.monotonic() > deadline:
                return ", ".join(dead)
            time.sleep(0.01)

    def _fail(self, kind: type[MantisError], what: str) -> MantisError:
        """The vector env is out of step with its workers: close it, and say why."""
        self._closed_because = what
        with contextlib.suppress(Exception):
            self.close(terminate=True)
        return kind(
            f"{what}; the vector env of {self.num_envs} desktops is closed, its desktops "
            "stopped (make a new one to go on)"
        )

    def _raise_if_errors(self, successes: Iterable[bool]) -> None:
        """Workers that raised (Gymnasium's worker sends its exception through the error queue
        and ends): one typed error naming them, once; the other workers are closed and so is
        the vector env. (Gymnasium re-raises the last one bare, by its type and message alone,
        and leaves the env open with a worker gone: the next call fails on its ``None`` pipe.)
        """
        failed = [index for index, ok in enumerate(successes) if not ok]
        if not failed:
            return
        errors: list[tuple[int, BaseException | None, str]] = []
        for fallback in failed:
            try:
                index, _, exc, trace = self.error_queue.get(timeout=_ERROR_WAIT_S)
            except Exception as unread:  # nothing came, or an exception that does not unpickle
                index, exc, trace = fallback, None, f"{type(unread).__name__}: {unread}"
            errors.append((index, exc, trace))
            pipe = self.parent_pipes[index]
            if pipe is not None:
                pipe.close()
                # Gymnasium types its pipes without None, yet sets a failed worker's to None
                # itself (its _raise_if_errors); every reader here checks for it.
                self.parent_pipes[index] = None  # type: ignore[call-overload]
        self._state = AsyncState.DEFAULT
        raise self._worker_error(errors)

    def _worker_error(self, errors: list[tuple[int, BaseException | None, str]]) -> BaseException:
        described = []
        for index, exc, _ in errors:
            pid = self.processes[index].pid
            what = "an error it could not send" if exc is None else f"{type(exc).__name__}: {exc}"
            described.append(f"worker {index} (pid {pid}) raised {what}")
        what = "; ".join(described)
        self._closed_because = what
        if not self._closing:
            with contextlib.suppress(Exception):
                self.close()  # the failed workers ended; the others close their desktops
        message = (
            f"{what}; the vector env of {self.num_envs} desktops is closed, its desktops "
            "stopped (make a new one to go on)"
        )
        error = relayed_error(errors[0][1], message, WorkerDiedError)
        for index, _, trace in errors:
            add_note(error, f"worker {index}'s traceback:\n{trace.rstrip()}")
        return error

    def _assert_is_running(self) -> None:
        # Gymnasium calls this first in every reset, step, call and set_attr.
        if self.closed:
            why = f" after {self._closed_because}" if self._closed_because else ""
            raise DisplayError(
                f"this DesktopVectorEnv is closed{why}: its workers and desktops are stopped "
                "(make a new one to go on)"
            )

    # -- closing ---------------------------------------------------------------------------
    # Gymnasium's ``Env`` is a context manager, its ``VectorEnv`` is not (Gymnasium 1.x):
    # ``with make_vec(...) as envs:`` would raise TypeError without these two.
    def __enter__(self) -> DesktopVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the vector env (its workers, desktops and segments); an exception raised in
        the block goes on."""
        self.close()

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        """Ask every worker to close its env (bounded by ``timeout``); terminate, then kill,
        the workers that do not; then stop any desktop process a worker left behind.
        (Gymnasium's own close waits without a bound for a worker that stopped answering.)"""
        self._closing = True  # a worker's error met while closing does not close again
        deadline = time.monotonic() + (0.0 if terminate else self._bound(timeout))
        # A worker that is terminated runs no cleanup: see its desktop processes while it lives.
        self._look_at_children(range(self.num_envs))
        if self._state is not AsyncState.DEFAULT and not terminate:
            pending_wait = getattr(AsyncVectorEnv, f"{self._state.value}_wait")
            try:
                pending_wait(self, max(deadline - time.monotonic(), 0.0))
            except Exception:
                terminate = True
        self._state = AsyncState.DEFAULT
        pipes = [pipe for pipe in self.parent_pipes if pipe is not None and not pipe.closed]
        if not terminate:
            asked = []
            for pipe in pipes:
                with contextlib.suppress(OSError):
                    pipe.send(("close", None))
                    asked.append(pipe)
            for pipe in asked:
                with contextlib.suppress(EOFError, OSError):
                    if pipe.poll(max(deadline - time.monotonic(), 0.0)):
                        pipe.recv()
        for pipe in pipes:
            pipe.close()
        grace = max(deadline - time.monotonic(), 0.0) + 5.0
        for process in self.processes:
            process.join(timeout=grace if not terminate else 0.0)
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(timeout=2.0)
            if process.is_alive():  # stopped (SIGSTOP) or stuck where SIGTERM cannot reach
                process.kill()
                process.join()
        # A worker that was terminated or killed ran no cleanup: stop what it left behind,
        # and free the segments nobody holds any more: its desktops' framebuffers and its own
        # (a capture's segment is marked for removal once the server attached it: a worker
        # stopped in between leaves it behind).
        left = [process for processes in self._desktop_processes for process in processes]
        stop_processes(left)
        workers = {process.pid for process in self.processes if process.pid is not None}
        for worker in workers:  # a killed worker's Chromium profiles and Xvfb auth dirs
            remove_scratch_of(worker)
        _remove_orphan_segments({process.pid for process in left} | workers, self._created_at)


def _exit_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    return f"exited with code {exitcode}"


def make_vec(
    n: int,
    task: Task | Callable[..., Any] | Sequence[Task | Callable[..., Any]] | None = None,
    *,
    shared_memory: bool = True,
    context: str = DEFAULT_CONTEXT,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_episode_steps: int | None = MAX_EPISODE_STEPS,
    copy: bool = True,
    restart_failed: bool = False,
    **env_kwargs: Any,
) -> DesktopVectorEnv:
    """A vector env of ``n`` ``DesktopEnv(task, **env_kwargs)``, one worker process each.

    ``task`` is copied into every worker (a ``Task`` pickles as its settings), so each desktop
    runs its own app. A list or tuple of tasks gives env ``i`` task ``i % len(tasks)``:
    several tasks in one vector env (``[MiniWoBTask("click-test-2"), MiniWoBTask("enter-text")]``).
    ``shared_memory``: observations come back through shared memory.
    ``context``: the multiprocessing start method ("forkserver", "spawn" or "fork"; see
    ``DEFAULT_CONTEXT``). ``timeout``: seconds a reset, step or call may take before the
    worker counts as hung. ``max_episode_steps``: each env is wrapped in ``TimeLimit``, as
    ``gymnasium.make`` does (None: no limit). ``copy``: ``reset``/``step`` return copies of
    the shared observations (False: the shared buffer itself, overwritten by the next step).
    ``restart_failed``: a worker that dies or hangs in a ``step`` is replaced and its env's
    step truncated, instead of the vector env closing with ``WorkerDiedError`` /
    ``WorkerTimeoutError`` (module docstring). ``reset(seed=s)`` seeds env ``i`` with
    ``s + i``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidInputError(f"n must be an integer >= 1 (the number of desktops), got {n!r}")
    if context not in _CONTEXTS:
        raise InvalidInputError(f"context must be one of {', '.join(_CONTEXTS)}, got {context!r}")
    timeout = _validate.timeout(timeout)
    if max_episode_steps is not None and (
        isinstance(max_episode_steps, bool)
        or not isinstance(max_episode_steps, int)
        or max_episode_steps < 1
    ):
        raise InvalidInputError(
            f"max_episode_steps must be an integer >= 1 or None, got {max_episode_steps!r}"
        )
    if context == "forkserver":
        multiprocessing.get_context("forkserver").set_forkserver_preload(_PRELOAD)
    tasks: list[Any] = list(task) if isinstance(task, (list, tuple)) else [task]
    if not tasks:
        raise InvalidInputError("an empty list of tasks: give make_vec at least one task")
    makers = [
        functools.partial(_make_desktop, tasks[index % len(tasks)], max_episode_steps, env_kwargs)
        for index in range(int(n))
    ]
    return DesktopVectorEnv(
        makers,
        timeout=float(timeout),
        restart_failed=_validate.flag(restart_failed, "restart_failed"),
        shared_memory=shared_memory,
        copy=copy,
        context=context,
    )


def vector_entry_point(num_envs: int = 1, **kwargs: Any) -> DesktopVectorEnv:
    """``gymnasium.make_vec("mantis_fast/Desktop-v0", num_envs=n, **kwargs)``: ``make_vec``."""
    return make_vec(num_envs, **kwargs)
