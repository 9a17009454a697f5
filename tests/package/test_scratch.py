"""Scratch directories (``mantis_fast._scratch``): removed even when the first try fails."""

from __future__ import annotations

import os
import subprocess
import sys

# A process at its descriptor limit cannot open a directory to empty it (EMFILE): the removal
# fails, the path is kept, and it goes at the next removal once descriptors are back, or at exit.
_SCRIPT = """
import os, resource
from mantis_fast._scratch import make_scratch, remove_scratch
first, second = make_scratch("test"), make_scratch("test")
for path in (first, second):
    os.makedirs(os.path.join(path, "a", "b"))
    open(os.path.join(path, "a", "b", "file"), "w").close()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
open_now = len(os.listdir("/proc/self/fd")) - 1
resource.setrlimit(resource.RLIMIT_NOFILE, (open_now, hard))
removed = [remove_scratch(first), remove_scratch(second)]
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
print(removed, os.path.exists(first), os.path.exists(second))
third = make_scratch("test")  # a later make tries the pending ones again
print(os.path.exists(first), os.path.exists(second), os.path.basename(third))
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) - 1, hard))
print(remove_scratch(third), third)  # left for the exit
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
"""


def test_a_removal_that_fails_is_tried_again_later_and_at_exit() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    failed, retried, at_exit = done.stdout.splitlines()
    assert failed == "[False, False] True True"
    kept_first, kept_second, name = retried.split()
    assert (kept_first, kept_second) == ("False", "False")
    assert name.startswith("mantis-test-")  # named for the process that made it
    removed, third = at_exit.split()
    assert removed == "False" and not os.path.exists(third)  # the exit removed it
