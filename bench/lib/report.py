"""One shape for every entry script's report: a title, the environment, one row per run (no
table without ``columns``), blocks of its own, the targets judged PASS or FAIL, notes, extra
lines; and ``main``, around the runs (the exit code)."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from bench.lib import core
from bench.lib.core import ScratchPostgres, Target

R = TypeVar("R")
Columns = Sequence[tuple[str, Callable[[R], str]]]


@dataclass
class Report(Generic[R]):
    title: str
    columns: Columns[R] = ()
    judge: Callable[[list[R]], list[Target]] = lambda _runs: []
    progress: Callable[[R], str] | None = None  # the progress line of a run added
    blocks: Sequence[Callable[[list[R]], list[str]]] = ()  # after the table, if not empty
    right: Sequence[int] | None = None  # right-aligned columns (all but the first)
    runs: list[R] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # printed last, as they are (a profile)
    started: float = field(default_factory=time.monotonic)

    def add(self, run: R) -> R:
        self.runs.append(run)
        if self.progress is not None:
            core.progress(self.progress(run))
        return run

    def start(self, pg: ScratchPostgres | None, *lines: str) -> None:
        """The environment's first lines: the machine and the load average, then ``lines``."""
        self.environment += [f"{core.machine(pg)}; load average at start {core.loadavg()}", *lines]

    def render(self) -> str:
        lines = ["", self.title, *(f"  {line}" for line in self.environment)]
        lines += ["", *core.columns(self.columns, self.runs, self.right)] if self.columns else []
        for block in self.blocks:
            found = block(self.runs)
            lines += ["", *found] if found else []
        judged = self.judge(self.runs)
        lines += ["", *core.judged(judged)] if judged else []
        lines += ["", *(f"  - {note}" for note in self.notes)] if self.notes else []
        lines += ["", *(f"  {line}" for line in self.extra)] if self.extra else []
        return "\n".join(lines) + "\n"

    def main(self, body: Callable[[ExitStack], None], cleaned: str, pin: bool = False) -> int:
        """What every benchmark's ``main`` does around its runs: SIGTERM unwinds like Ctrl-C;
        ``body`` runs (on CPU 0 with ``pin``) with an ExitStack for its servers, processes and
        scratch databases; interrupted (exit 130) or failed, the report so far is printed with
        ``cleaned`` (what was stopped or removed on the way out). Then the report with the wall
        time, and the exit code: 1 when a target failed (each printed once more), else 0."""
        signal.signal(signal.SIGTERM, _unwind)
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        try:
            with ExitStack() as stack:
                if pin:
                    os.sched_setaffinity(0, {0})
                body(stack)
                wall = time.monotonic() - self.started
                self.environment.append(
                    f"total wall time {wall:.0f} s; load average at end {core.loadavg()}"
                )
        except KeyboardInterrupt:
            print(self.render() + f"\n(incomplete: interrupted; {cleaned})", flush=True)
            raise SystemExit(130) from None
        except BaseException:
            stopped = f"\n(incomplete: the run stopped with an error; {cleaned})"
            print(self.render() + stopped, flush=True)
            raise
        print(self.render(), end="", flush=True)
        found = core.failed(self.judge(self.runs))
        if found:
            print("\nFAIL: " + "\nFAIL: ".join(found), flush=True)
        return 1 if found else 0


def _unwind(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def median(values: Sequence[float], spec: str) -> str:
    """The median of ``values`` formatted by ``spec``, "-" when there are none."""
    return format(core.median(values), spec) if values else "-"
