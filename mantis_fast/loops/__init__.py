"""Loop detection: is the agent stuck re-doing the same thing?

``detector`` holds the streaming ``LoopDetector`` (one action at a time, a bounded ring),
``tolerance`` the adaptive click tolerance, ``adaptive`` the adaptive windows, ``samples`` what a
step is reduced to; ``trajectory`` the batched form over whole recorded trajectories (kernel
``_loop``). Both share one set of validators and give the same verdicts. ``guards`` holds the
workflow runners' loop guards (state repeats, leaving a pinned site), which watch observations
rather than actions.
"""
