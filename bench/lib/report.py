"""One shape for every entry script's report: a title, the environment, one row per run (no
table without ``columns``), blocks of its own, the targets judged PASS or FAIL, notes, extra
lines; and ``main``, which runs the body in ``core.run`` (the exit code)."""

from __future__ import annotations

import os
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
        """``core.run`` of ``body`` (on CPU 0 with ``pin``), the wall time appended after it."""

        def timed(stack: ExitStack) -> None:
            if pin:
                os.sched_setaffinity(0, {0})
            body(stack)
            self.environment.append(core.wall(self.started))

        failures = lambda: core.failed(self.judge(self.runs))  # noqa: E731
        return core.run(timed, self.render, failures, cleaned)


def median(values: Sequence[float], spec: str) -> str:
    """The median of ``values`` formatted by ``spec``, "-" when there are none."""
    return format(core.median(values), spec) if values else "-"
