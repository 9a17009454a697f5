"""Loop detection: is the agent stuck re-doing the same thing?

``detector`` holds the streaming ``LoopDetector`` (one action at a time, a bounded ring) and the
adaptive click tolerance; ``trajectory`` the batched form over whole recorded trajectories (kernel
``_loop``). Both share one set of validators and give the same verdicts.
"""
