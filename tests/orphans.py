"""Children of a test die with it: a pytest killed by SIGTERM or SIGKILL (a CI timeout, a
developer's ^C twice) must not leave its ``seojobs`` servers and workers, or the Redis it
started, running on the machine.

``die_with_parent`` is a ``preexec_fn`` that asks the kernel (``PR_SET_PDEATHSIG``) to send the
child SIGTERM when the thread that started it ends. That is the thread, not the process: a
child started from a short-lived thread would be stopped when the thread ends, so ``for_popen``
gives the hook only to children started from the main thread (where fixtures run)."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seojobs.browsers.reaper import PR_SET_PDEATHSIG

# Looked up here, in the parent: the child, between fork and exec, must not load libraries
# (another thread of the parent may have held the loader's lock at the fork).
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent thread dies. If the parent already
    died between fork and here, stop now (the kernel would never send the signal)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


def for_popen() -> dict[str, Callable[[], Any]]:
    """``subprocess.Popen`` keyword arguments: the hook when called from the main thread."""
    if threading.current_thread() is threading.main_thread():
        return {"preexec_fn": die_with_parent}
    return {}


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for whoever reaps it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state
