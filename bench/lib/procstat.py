"""CPU accounting from /proc (Linux): what a run cost the benchmark, its servers and the rest
of the machine. On a shared 2-CPU box this is steadier than wall-clock rates."""

from __future__ import annotations

import os
import resource
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


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


def peak_rss_bytes(pid: int) -> int:
    """The kernel's high-water mark of ``pid``'s resident memory (VmHWM; 0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0
