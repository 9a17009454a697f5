"""Loop detection: is the agent stuck re-doing the same thing?

``detector`` holds the streaming ``LoopDetector`` (one action at a time, a bounded ring),
``tolerance`` the adaptive click tolerance, ``adaptive`` the adaptive windows, ``samples`` what a
step is reduced to; ``trajectory`` the batched form over whole recorded trajectories (kernel
``_loop``). Both share one set of validators and give the same verdicts. ``guards`` holds the
workflow runners' loop guards (state repeats, leaving a pinned site), which watch observations
rather than actions.
"""

from mantis_fast.loops.adaptive import adaptive_loop_enabled
from mantis_fast.loops.detector import LoopDetector, compute_click_tol_px
from mantis_fast.loops.guards import (
    LoopGuardHalt,
    LoopGuardSuite,
    OffSourceDriftGuard,
    StateRepeatGuard,
)
from mantis_fast.loops.trajectory import (
    Trajectory,
    drift_loop_flags,
    repeat_loop_flags,
    state_loop_flags,
)

__all__ = [
    "LoopDetector",
    "LoopGuardHalt",
    "LoopGuardSuite",
    "OffSourceDriftGuard",
    "StateRepeatGuard",
    "Trajectory",
    "adaptive_loop_enabled",
    "compute_click_tol_px",
    "drift_loop_flags",
    "repeat_loop_flags",
    "state_loop_flags",
]
