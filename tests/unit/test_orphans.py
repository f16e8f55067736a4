"""The test harness's children die with it (tests/orphans.py): a pytest killed by SIGKILL
leaves no server, worker or Redis of its own running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.orphans import for_popen, running
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PARENT = """
import subprocess, sys, time
from tests.orphans import for_popen, running
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], **for_popen())
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_child_started_by_the_harness_stops_when_its_parent_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, env=env, cwd=ROOT
    ) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        try:
            assert running(child)
            parent.send_signal(signal.SIGKILL)
            parent.wait(timeout=30)
            wait_until(lambda: not running(child), timeout=30)
        finally:
            if running(child):
                os.kill(child, signal.SIGKILL)


def test_only_the_main_thread_gives_the_hook() -> None:
    # The kernel signals when the starting *thread* ends: a child started from a pool thread
    # would be stopped when the pool does, so it gets no hook.
    assert "preexec_fn" in for_popen()
    seen: list[dict[str, object]] = []
    thread = threading.Thread(target=lambda: seen.append(for_popen()))
    thread.start()
    thread.join()
    assert seen == [{}]
