"""``mantis-fast demo``: the whole perception-action loop against a real app, nothing to set up.

``app`` is the target app (a Tk window showing red targets), ``brain`` the local stand-in for a
vision-language model that finds and clicks them, ``run`` the runner that wires both to a
private Xvfb through the Gym environment and reports every hit and miss.
"""

from mantis_fast._extras import require_extra

require_extra("gym", __name__)  # before the imports that need it

from mantis_fast.demo.brain import TargetBrain
from mantis_fast.demo.run import run_demo

__all__ = ["TargetBrain", "run_demo"]
