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


def test_entries_that_vanish_during_the_removal_do_not_stop_it(tmp_path, monkeypatch) -> None:
    """A browser still shutting down deletes its own files while its profile is removed: the
    removal goes on past them (rmtree alone stops at the first, leaving the rest for good)."""
    from mantis_fast import _scratch

    root = tmp_path / "profile"
    for name in ("a", "b", "c"):
        (root / "Default" / name).mkdir(parents=True)
        (root / "Default" / name / "LOG").write_text("x")
    real_unlink = os.unlink
    raced: list[str] = []

    def unlink_raced(name, *args, **kwargs):
        real_unlink(name, *args, **kwargs)
        if not raced:  # the first file: gone already when we come to it
            raced.append(str(name))
            raise FileNotFoundError(2, "No such file or directory", str(name))

    monkeypatch.setattr(os, "unlink", unlink_raced)
    assert _scratch._remove(str(root)) is True
    assert raced and not root.exists()
