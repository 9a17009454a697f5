"""Desktops as Ray actors, across the machines of a Ray cluster (the ``mantis_fast[ray]`` extra).

::

    import ray
    from mantis_fast.gym import ClickTarget
    from mantis_fast.gym.ray_pool import DesktopPool

    ray.init(address="auto")                 # nodes started with --resources='{"desktop": N}'
    with DesktopPool(8, ClickTarget(), observation_size=(320, 180)) as pool:
        observations, infos = pool.reset(seed=0)          # (8, 180, 320, 3) uint8
        observations, rewards, terminated, truncated, infos = pool.step(actions)

``DesktopActor`` is a Ray actor owning one ``DesktopEnv`` (its own Xvfb, app and input on the
node Ray placed it on); its observations come back through Ray's object store, where numpy
arrays are read zero-copy by ``ray.get``. ``DesktopPool`` steps ``n`` of them in parallel and
batches the results. Placement is Ray's: each actor asks for ``resources`` (by default one unit
of a custom ``desktop`` resource, which each node declares as the number of desktops it can
hold) and is spread over the nodes.

Deaths: a desktop whose X server or app dies is restarted by ``DesktopEnv`` itself. An actor
whose process dies (killed, out of memory, its node lost) is restarted by Ray
(``max_restarts``) or, failing that, created again by the pool; either way that desktop's step
reports ``truncated=True`` with the reason in ``info["actor_restarted"]`` and
``info["truncated_reason"]``. Every wait on Ray is bounded (``step_timeout``,
``start_timeout``): an actor that does not answer in time is killed and replaced.

Errors: ``step`` reads every desktop's action against the action space before any actor gets
one (an action outside it is ``InvalidInputError`` naming the desktop and the field; nothing is
sent). An exception raised inside an actor's step arrives as a typed error naming the desktop
(a ``MantisError`` as its own type, anything else as ``DesktopPoolError``), never as Ray's
``RayTaskError``; the actors live on, and the pool with them. A closed pool raises
``DisplayError``.

RLlib's adapter (``register_rllib_env``) is ``mantis_fast.gym.rllib``. Ray is imported only
when used: ``import mantis_fast`` works without the extra.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mantis_fast._deprecated import moved_names
from mantis_fast._extras import require_extra
from mantis_fast.errors import (
    DesktopPoolError,
    DisplayError,
    InvalidInputError,
    MissingExtraError,
    RayNotInstalledError,
)
from mantis_fast.gym.action_space import read_actions
from mantis_fast.gym.processes import add_note, descendant_pids, relayed_error

__all__ = [
    "DEFAULT_RESOURCES",
    "DesktopActor",
    "DesktopPool",
    "DesktopPoolError",
    "RayNotInstalledError",
]

DEFAULT_RESOURCES: Mapping[str, float] = {"desktop": 1}
_REASON_CHARS = 300  # an actor's death message can carry a whole traceback


def _ray() -> Any:
    try:
        require_extra("ray", __name__)
    except MissingExtraError as exc:
        raise RayNotInstalledError(str(exc)) from None
    import ray

    return ray


# -- the actor ---------------------------------------------------------------------------------

# Kills the actor's desktop processes when the actor dies without closing them (kill -9, OOM):
# Xvfb runs in its own session, so nothing else would. The actor writes the pids of its process
# tree on every change; end of input means the actor is gone, and the last list is killed, then
# the scratch directories they named (a Chromium's profile, an Xvfb's auth) are removed.
_REAPER = """\
import os, shutil, signal, sys
actor = os.getppid()
pids = []
for line in sys.stdin:
    pids = [int(p) for p in line.split()]
try:
    from mantis_fast.gym.processes import remove_scratch_of, scratch_dirs
    scratch = [path for pid in pids for path in scratch_dirs(pid)]
except Exception:
    remove_scratch_of, scratch = None, []
for pid in pids:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
for path in scratch:
    shutil.rmtree(path, ignore_errors=True)
if remove_scratch_of is not None:
    remove_scratch_of(actor)
"""


class _DesktopWorker:
    """The body of ``DesktopActor``: one ``DesktopEnv(task, **env_kwargs)`` in a Ray worker
    process, with ``reset``, ``step`` (``autoreset``: see ``DesktopPool``), ``where`` and
    ``close``."""

    def __init__(
        self, task: Any = None, env_kwargs: Mapping[str, Any] | None = None, autoreset: bool = False
    ) -> None:
        from mantis_fast.gym.desktop import DesktopEnv

        # Its own session: Ray kills a dead worker's process group, which would take the
        # reaper with it before it could act.
        self._reaper = subprocess.Popen(
            [sys.executable, "-c", _REAPER],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._reported: list[int] = []
        self.env = DesktopEnv(task, **(env_kwargs or {}))
        self.autoreset = autoreset

    def _report_processes(self) -> None:
        pids = [p for p in descendant_pids(os.getpid()) if p != self._reaper.pid]
        if pids != self._reported and self._reaper.stdin is not None:
            self._reaper.stdin.write(" ".join(map(str, pids)) + "\n")
            self._reaper.stdin.flush()
            self._reported = pids

    def where(self) -> dict[str, Any]:
        """The node and processes of this desktop: ``node_id``, ``ip``, ``pid`` (the actor),
        ``desktop_pids`` (Xvfb, app and what they started)."""
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "xvfb_pid": getattr(getattr(self.env._desktop, "_xvfb", None), "pid", None),
            "desktop_pids": [p for p in descendant_pids(os.getpid()) if p != self._reaper.pid],
        }

    def reset(
        self, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        result = self.env.reset(seed=seed, options=options)
        self._report_processes()
        return result

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        # Already a fresh episode (on a new desktop, or the same one with its app restarted).
        restarted = "desktop_restarted" in info or "app_restarted" in info
        ended = self.autoreset and (terminated or truncated) and not restarted
        if ended:
            # Gymnasium's same-step autoreset: the next episode's first observation, the ended
            # one's last in info (one call, no extra round trip per episode).
            final, final_info = observation, info
            observation, info = self.env.reset()
            info = {**info, "final_obs": final, "final_info": final_info}
            if "truncated_reason" in final_info:
                info["truncated_reason"] = final_info["truncated_reason"]
        if restarted or ended:
            self._report_processes()
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        self.env.close()
        if self._reaper.stdin is not None:
            self._reaper.stdin.write("\n")  # nothing left to kill
            self._reaper.stdin.close()
        self._reaper.wait(timeout=10)


_actor_class: Any = None
DesktopActor: Any  # made on first access (``_RayPoolModule.DesktopActor``)


def _desktop_actor() -> Any:
    global _actor_class
    if _actor_class is None:
        _actor_class = _ray().remote(_DesktopWorker)
    return _actor_class


class _RayPoolModule(types.ModuleType):
    """This module's class: ``DesktopActor`` is made with ``ray.remote`` on first access, so
    importing the module needs no Ray. (A property rather than the module ``__getattr__``,
    which is left to the moved names: their warning then points at the caller's line.)"""

    @property
    def DesktopActor(self) -> Any:
        return _desktop_actor()


sys.modules[__name__].__class__ = _RayPoolModule

# Moved to mantis_fast.gym.rllib (one concern per module); kept here for one release.
__getattr__ = moved_names(
    __name__,
    {
        name: ("mantis_fast.gym.rllib", name)
        for name in (
            "RLLIB_ENV_NAME",
            "IntegerBoxesAsMultiDiscrete",
            "make_rllib_env",
            "register_rllib_env",
        )
    },
)


# -- the pool ----------------------------------------------------------------------------------


def _stack(items: Sequence[Any]) -> Any:
    """One batch from the desktops' observations (arrays or dicts of them): one copy out of the
    object store, which frees the store's buffers as soon as the step's results are dropped."""
    first = items[0]
    if isinstance(first, Mapping):
        return {key: _stack([item[key] for item in items]) for key in first}
    if isinstance(first, np.ndarray):
        return np.stack(items)
    return list(items)


def _desktop_error(raised: list[tuple[int, Any]]) -> BaseException:
    """One typed error for the desktops whose step raised (Ray's ``RayTaskError``s): the first
    one's own type when it is a ``MantisError``, else ``DesktopPoolError``; the desktops named,
    the actors' tracebacks as notes."""
    causes = [(i, getattr(exc, "cause", None)) for i, exc in raised]
    described = "; ".join(
        f"desktop {i} raised {type(cause).__name__}: {cause}"
        if isinstance(cause, BaseException)
        else _reason(f"desktop {i} raised", exc)
        for (i, cause), (_, exc) in zip(causes, raised, strict=True)
    )
    error = relayed_error(causes[0][1], described, DesktopPoolError)
    for i, exc in raised:
        add_note(error, f"desktop {i}'s actor: {exc}")
    return error


def _reason(what: str, exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    if len(message) > _REASON_CHARS:
        message = message[:_REASON_CHARS] + "..."
    return f"{what}: {type(exc).__name__}: {message}"


class DesktopPool:
    """``n`` desktops as Ray actors, stepped in parallel.

    ``task``: the ``Task`` of every desktop (it is sent to the actors as its settings);
    ``env_kwargs`` go to each ``DesktopEnv``. ``resources``: the Ray resources one desktop
    takes (default ``{"desktop": 1}``; nodes declare how many they hold); ``num_cpus``: the
    CPUs it reserves (default 0: the ``desktop`` resource is the budget). ``actor_options``:
    further ``ray.remote`` options (``scheduling_strategy`` defaults to ``"SPREAD"``,
    ``runtime_env``...). ``autoreset``: an ended episode is reset within the same step (its last
    observation and info in ``info["final_obs"]`` / ``info["final_info"]``). ``max_restarts``:
    how often Ray restarts a dead actor before the pool creates a new one. ``step_timeout``
    bounds a step, ``start_timeout`` an actor's start and first reset.

    ``step(actions)`` and ``reset(seed=...)`` return numpy batches (observations stacked,
    rewards, terminated and truncated as arrays) and a list of per-desktop ``info`` dicts.
    """

    def __init__(
        self,
        n: int,
        task: Any = None,
        *,
        resources: Mapping[str, float] | None = None,
        num_cpus: float = 0,
        actor_options: Mapping[str, Any] | None = None,
        autoreset: bool = True,
        max_restarts: int = 3,
        step_timeout: float = 60.0,
        start_timeout: float = 120.0,
        **env_kwargs: Any,
    ) -> None:
        if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
            raise InvalidInputError(f"n must be an integer >= 1, got {n!r}")
        resources = dict(DEFAULT_RESOURCES if resources is None else resources)
        if not all(
            isinstance(k, str) and isinstance(v, int | float) and v >= 0
            for k, v in resources.items()
        ):
            raise InvalidInputError(f"resources must map names to amounts >= 0, got {resources!r}")
        if not (isinstance(num_cpus, int | float) and num_cpus >= 0):
            raise InvalidInputError(f"num_cpus must be a number >= 0, got {num_cpus!r}")
        if not (isinstance(max_restarts, int) and max_restarts >= -1):
            raise InvalidInputError(f"max_restarts must be an integer >= -1, got {max_restarts!r}")
        for name, value in (("step_timeout", step_timeout), ("start_timeout", start_timeout)):
            if not (isinstance(value, int | float) and value > 0):
                raise InvalidInputError(f"{name} must be a number of seconds > 0, got {value!r}")
        if actor_options is not None and not isinstance(actor_options, Mapping):
            raise InvalidInputError(
                f"actor_options must be a mapping of ray.remote options, got {actor_options!r}"
            )
        from mantis_fast.gym.desktop import DesktopEnv

        # Bad env arguments fail here, not as n dead actors (no desktop starts before a reset).
        probe = DesktopEnv(task, **env_kwargs)
        probe.close()
        self.action_space = probe.action_space
        """One desktop's action space: ``step`` reads every action against it first."""
        self._ray = _ray()
        if not self._ray.is_initialized():
            raise DesktopPoolError(
                "Ray is not initialized: call ray.init(...) first "
                "(ray.init(address='auto') joins the cluster this machine is part of)"
            )
        self.n, self.task, self.env_kwargs = n, task, dict(env_kwargs)
        self.autoreset = bool(autoreset)
        self.step_timeout, self.start_timeout = float(step_timeout), float(start_timeout)
        self._options = {
            "num_cpus": num_cpus,
            "resources": resources,
            "max_restarts": max_restarts,
            # A step retried on a restarted actor would step a fresh desktop as if nothing
            # happened: the pool sees the failure instead and reports the episode truncated.
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
            **(actor_options or {}),
        }
        self.restarts = 0
        """Actors restarted or replaced so far."""
        self._actors: list[Any] = []
        self._closed = False
        try:
            self._actors = [self._new_actor() for _ in range(n)]
            self._get([a.where.remote() for a in self._actors], self.start_timeout, "start")
        except BaseException:
            # No desktop runs before the first reset: ending the actors is enough, and waiting
            # for an unplaced actor to close would wait for nothing.
            self.close(wait=0)
            raise

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called: ``reset``, ``step`` and ``where`` then raise."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise DisplayError(
                "this DesktopPool is closed: its desktops and actors are stopped "
                "(make a new pool to go on)"
            )

    def _new_actor(self) -> Any:
        cls = _desktop_actor().options(**self._options)
        return cls.remote(self.task, self.env_kwargs, self.autoreset)

    def _get(self, refs: list[Any], timeout: float, what: str) -> list[Any]:
        """All results or a ``DesktopPoolError`` naming the desktops that did not answer."""
        _, pending = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if pending:
            missing = [i for i, ref in enumerate(refs) if ref in set(pending)]
            raise DesktopPoolError(
                f"desktops {missing} did not {what} within {timeout:g}s; the cluster has "
                f"{self._ray.available_resources()} free of {self._ray.cluster_resources()} "
                f"and each desktop asks for {self._options['resources']} "
                f"and {self._options['num_cpus']} CPUs"
            )
        return self._ray.get(refs)

    # -- the batched API ---------------------------------------------------------------------
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: Mapping | None = None
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Reset every desktop: ``seed`` is an int (desktop ``i`` gets ``seed + i``), a list of
        ``n`` seeds, or None."""
        self._check_open()
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.n)]
        elif isinstance(seed, Sequence) and len(seed) == self.n:
            seeds = list(seed)
        else:
            raise InvalidInputError(f"seed must be an int, None or {self.n} seeds, got {seed!r}")
        refs = [a.reset.remote(s, options) for a, s in zip(self._actors, seeds, strict=True)]
        results = self._gather(refs, self.start_timeout, seeds)
        observations = [r[0] for r in results]
        return _stack(observations), [r[1] for r in results]

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Step every desktop with its action (a list of ``n``, or a batched dict sample).

        Every action is read against ``action_space`` first: one outside it raises
        ``InvalidInputError`` naming the desktop and the field, and no desktop steps. An error
        raised inside a desktop's step is raised here, typed and naming the desktop (see the
        module docstring); the other desktops' steps of that call happened, their results are
        lost with it: ``reset()`` to start over."""
        self._check_open()
        per_desktop = read_actions(actions, self.n, self.action_space, "desktop")
        refs = [a.step.remote(x) for a, x in zip(self._actors, per_desktop, strict=True)]
        results = self._gather(refs, self.step_timeout, None)
        observations, rewards, terminated, truncated, infos = zip(*results, strict=True)
        return (
            _stack(observations),
            np.array(rewards, np.float64),
            np.array(terminated, bool),
            np.array(truncated, bool),
            list(infos),
        )

    def _gather(
        self, refs: list[Any], timeout: float, seeds: Sequence[int | None] | None
    ) -> list[tuple]:
        """Each desktop's result; a desktop whose actor died or hung is restarted, and its
        result is a fresh episode: a truncated step (``seeds`` None), or a reset's result."""
        ray = self._ray
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        ready_set = set(ready)
        results: list[tuple] = []
        raised: list[tuple[int, Any]] = []
        for i, ref in enumerate(refs):
            if ref not in ready_set:
                reason = f"the desktop actor did not answer within {timeout:g}s"
                with contextlib.suppress(Exception):
                    ray.kill(self._actors[i], no_restart=False)  # Ray restarts it
            else:
                try:
                    results.append(ray.get(ref))
                    continue
                except ray.exceptions.RayActorError as exc:
                    reason = _reason("the desktop actor died", exc)
                except ray.exceptions.RayTaskError as exc:  # the actor lives: its step raised
                    raised.append((i, exc))
                    continue
            observation, info = self._restart(i, reason, None if seeds is None else seeds[i])
            results.append(
                (observation, info) if seeds is not None else (observation, 0.0, False, True, info)
            )
        if raised:
            raise _desktop_error(raised)
        return results

    def _restart(self, i: int, reason: str, seed: int | None) -> tuple[Any, dict[str, Any]]:
        """A fresh episode on desktop ``i`` after its actor died: on the actor Ray restarted,
        or on a new one."""
        ray = self._ray
        self.restarts += 1
        try:
            observation, info = ray.get(
                self._actors[i].reset.remote(seed, None), timeout=self.start_timeout
            )
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            with contextlib.suppress(Exception):
                ray.kill(self._actors[i], no_restart=True)
            self._actors[i] = self._new_actor()
            [(observation, info)] = self._get(
                [self._actors[i].reset.remote(seed, None)], self.start_timeout, "restart"
            )
        info = {**info, "actor_restarted": reason, "truncated_reason": reason}
        return observation, info

    # -- inspection and shutdown -------------------------------------------------------------
    @property
    def actors(self) -> list[Any]:
        """The ``DesktopActor`` handles, one per desktop."""
        return list(self._actors)

    def where(self) -> list[dict[str, Any]]:
        """Each desktop's node id, node IP and process ids (``DesktopActor.where``)."""
        self._check_open()
        return self._get([a.where.remote() for a in self._actors], self.step_timeout, "answer")

    def close(self, wait: float = 30.0) -> None:
        """Close every desktop (its Xvfb and app), waiting at most ``wait`` seconds, and end its
        actor (idempotent; a desktop not closed in time goes with its actor's reaper)."""
        self._closed = True
        actors, self._actors = self._actors, []
        if not actors:
            return
        ray = self._ray
        if wait > 0:
            refs = [a.close.remote() for a in actors]
            with contextlib.suppress(Exception):
                ray.wait(refs, num_returns=len(refs), timeout=wait)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)

    def __enter__(self) -> DesktopPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return (
            f"DesktopPool(n={self.n}, task={self.task!r}, resources={self._options['resources']})"
        )
