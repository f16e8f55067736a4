"""Where the suite's CPU goes, per test, whatever the machine's load (``SEOJOBS_TEST_CPU=dir``).

Wall time under load says little; CPU time says what a test costs. With the variable set,
each pytest process (each xdist worker) writes ``dir/cpu-<worker>.tsv``: node id, wall
seconds, its own CPU seconds (every thread: in-process apps, workers and fakes) and its
reaped children's (the ``seojobs`` processes and browsers a test starts, counted when they are
waited for: a module's servers at the module's last test; the commands tests/clifork.py forks
as each ends, with the zygote's own CPU since the last) and the time it ended (epoch seconds,
to line tests up with the machine's load). The PostgreSQL server's CPU is not
in it. ``python -m tests.cputime dir`` sums it per file.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

_OUT = os.environ.get("SEOJOBS_TEST_CPU")
# The CPU of the commands tests/clifork.py forks (and of its zygote): reaped by the zygote, so
# not in this process's children's until the zygote is, after the last test.
_forked = [0.0]


def add_children(seconds: float) -> None:
    _forked[0] += seconds


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + _forked[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _OUT:
        yield
        return
    wall, own, kids = time.perf_counter(), time.process_time(), _children()
    yield
    row = (
        f"{item.nodeid}\t{time.perf_counter() - wall:.3f}\t"
        f"{time.process_time() - own:.3f}\t{_children() - kids:.3f}\t{time.time():.3f}\n"
    )
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(_OUT).mkdir(parents=True, exist_ok=True)
    with open(Path(_OUT) / f"cpu-{worker}.tsv", "a", encoding="utf-8") as out:
        out.write(row)


def main(folder: str) -> None:
    """Per file: tests, wall, own CPU, children's CPU; the costliest first."""
    files: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for path in Path(folder).glob("cpu-*.tsv"):
        for line in path.read_text(encoding="utf-8").splitlines():
            node, wall, own, kids, *_ended = line.split("\t")
            entry = files[node.split("::")[0]]
            entry[0] += 1
            entry[1] += float(wall)
            entry[2] += float(own)
            entry[3] += float(kids)
    total = [sum(e[i] for e in files.values()) for i in range(4)]
    print(f"{'file':60} {'tests':>6} {'wall':>8} {'cpu':>8} {'child':>8}")
    for name, (n, wall, own, kids) in sorted(files.items(), key=lambda kv: -(kv[1][2] + kv[1][3])):
        print(f"{name:60} {int(n):6d} {wall:8.1f} {own:8.1f} {kids:8.1f}")
    print(f"{'total':60} {int(total[0]):6d} {total[1]:8.1f} {total[2]:8.1f} {total[3]:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
