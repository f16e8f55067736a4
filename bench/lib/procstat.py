"""CPU accounting from /proc (Linux): what a run cost the benchmark, its servers and the rest
of the machine. On a shared 2-CPU box this is steadier than wall-clock rates."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU seconds of process ``pid`` so far (``reaped``: with those of the
    children it has waited for)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11 : 15 if reaped else 13]) / TICK


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every CPU, less idle and iowait)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended (e.g. a load generator)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sched_seconds(pid: int | str = "self") -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of every thread of ``pid``.

    From /proc/<pid>/task/*/schedstat; threads that already ended are not counted. The wait is
    the direct measure of other load on the machine taking our CPU.
    """
    running = waiting = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            on_cpu, queued, _slices = (task / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        running += int(on_cpu)
        waiting += int(queued)
    return running / 1e9, waiting / 1e9


def thread_sched() -> tuple[float, float]:
    """(on CPU, waiting for a CPU) seconds of the calling thread (e.g. the event loop's)."""
    on_cpu, queued, _slices = Path("/proc/thread-self/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(queued) / 1e9


def loadavg() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (children, grandchildren), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` now (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _kib(path: str, key: str) -> int:
    """The ``key:`` line of a /proc file in kB, as bytes (0 once the process is gone)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def peak_rss_bytes(pid: int) -> int:
    """The kernel's high-water mark of ``pid``'s resident memory (VmHWM; 0 once it is gone)."""
    return _kib(f"/proc/{pid}/status", "VmHWM:")


def pss_bytes(pid: int) -> int:
    """Proportional set size of ``pid`` now: shared pages divided among their sharers, so a
    sum over Chromium's processes does not count its shared libraries once per process."""
    return _kib(f"/proc/{pid}/smaps_rollup", "Pss:")


class TreeSampler:
    """Samples the resident memory (RSS, or PSS with ``pss``) of a process and its
    descendants (without the process itself with ``skip_root``: a benchmark sampling its own
    children); ``peak`` is the largest sum seen."""

    def __init__(
        self, pid: int, *, interval: float, skip_root: bool = False, pss: bool = False
    ) -> None:
        self.pid = pid
        self.peak = 0
        self._size = pss_bytes if pss else rss_bytes
        self._interval = interval
        self._skip = pid if skip_root else None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            tree = [p for p in descendants(self.pid) if p != self._skip]
            self.peak = max(self.peak, sum(self._size(p) for p in tree))

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM if ``proc`` still runs, then SIGKILL if it has not exited after ``timeout`` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
