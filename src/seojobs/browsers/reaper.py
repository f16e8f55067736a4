"""A tiny wrapper that makes Lighthouse and its Chromium die with the worker that started them.

Run as a script (``python reaper.py PARENT_PID -- lighthouse ...``), never imported by the
worker's code path, so it starts fast and depends on nothing of seojobs. Every process of one
run carries the run's marker in its environment (``SEOJOBS_WEB_VITALS_RUN``): Lighthouse
passes its environment on to Chromium, and chrome-launcher starts Chromium in a session of its
own (``detached``), so a process group alone would not reach it; the marker does.

- ``PR_SET_PDEATHSIG``: when the worker dies (even by SIGKILL) the kernel sends this wrapper
  SIGTERM; it then SIGKILLs every process carrying the marker and exits.
- ``PR_SET_CHILD_SUBREAPER``: Chromium orphaned by a dying Lighthouse stays our descendant.
- The worker kills a run (timeout, cancel) by SIGTERM to this wrapper, then the same sweep.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

MARKER_ENV = "SEOJOBS_WEB_VITALS_RUN"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def marked(marker: str) -> list[int]:
    """Pids of the processes whose environment holds ``MARKER_ENV=marker`` (Linux /proc)."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue  # gone, or not ours to read
    return found


def sweep(marker: str, *, spare: int | None = None, rounds: int = 20) -> int:
    """SIGKILL every process of the run (but ``spare``) until none is left; returns how many
    were killed. Several rounds: a Chromium may fork a helper while it is being killed."""
    killed = 0
    for _ in range(rounds):
        pids = [pid for pid in marked(marker) if pid != spare]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.05)
    return killed


def _reap(block: bool = False) -> None:
    # As a subreaper, zombies of orphans are ours to collect (a zombie keeps its environ
    # unreadable, so it does not count as alive above); left to a container's pid 1, which
    # may never reap, they would linger as <defunct>.
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl failed")


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[argv.index("--") + 1 :]
    marker = os.environ[MARKER_ENV]

    def die(_signum: int, _frame: FrameType | None) -> None:
        sweep(marker, spare=os.getpid())
        _reap(block=True)  # every child was killed: this returns once they are collected
        os._exit(137)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, die)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:  # the worker died before the death signal was armed
        return 137
    child = subprocess.Popen(command)  # noqa: S603 (the worker's own Lighthouse command)
    code = child.wait()
    sweep(marker, spare=os.getpid())  # a Chromium Lighthouse failed to close
    _reap(block=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
