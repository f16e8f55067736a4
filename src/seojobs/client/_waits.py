"""Several wait machines on one timer: pure, like the single machine in ``_base``.

Each job keeps its own machine (its own policy, back-off, Retry-After floors and deadline); this
multiplexer only decides whose poll is next. It yields ("poll", i, s) for job ``i`` (asking the
server to hold the read up to ``s`` seconds, as that job's machine asked) and
("sleep", s) when no job is due yet, so the shells make one request at a time, never a burst,
and the client's pacer sees them in order. A poll's Outcome is sent back into the multiplexer,
which hands it to that job's machine.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal

from seojobs.client import errors
from seojobs.client._base import Outcome, Step, W

Machine = Generator[Step, "Outcome[W] | None", W]
ManyStep = tuple[Literal["poll"], int, float] | tuple[Literal["sleep"], float]


@dataclass
class _Running(Generic[W]):
    index: int
    machine: Machine[W]
    wake: float  # elapsed() at which its next poll is due
    hold: float  # the Prefer: wait seconds of that poll


def wait_many(
    machines: Sequence[Machine[W] | W],
    *,
    elapsed: Callable[[], float],
) -> Generator[ManyStep, Outcome[W] | None, list[W]]:
    """Drive every machine to its end; return their jobs in the order given.

    An entry that is already a job (finished before the wait began) is returned as is. The
    first machine to pass its deadline ends the whole wait: WaitTimeout then carries ``last``,
    the list of every job's last state seen (None where none was), finished ones included.
    """
    results: dict[int, W] = {}
    last: list[W | None] = [None] * len(machines)
    running: list[_Running[W]] = []
    for index, entry in enumerate(machines):
        if isinstance(entry, Generator):
            wake, hold = _advance(entry, None, elapsed, last, index)
            running.append(_Running(index, entry, wake, hold))
        else:
            results[index] = last[index] = entry
    while running:
        due = min(running, key=lambda r: (r.wake, r.index))
        pause = due.wake - elapsed()
        if pause > 0:
            yield ("sleep", pause)
        outcome = yield ("poll", due.index, due.hold)
        assert outcome is not None
        if outcome.job is not None:
            last[due.index] = outcome.job
        try:
            due.wake, due.hold = _advance(due.machine, outcome, elapsed, last, due.index)
        except StopIteration as done:
            results[due.index] = last[due.index] = done.value
            running.remove(due)
    return [results[i] for i in range(len(machines))]


def _advance(
    machine: Machine[W],
    outcome: Outcome[W] | None,
    elapsed: Callable[[], float],
    last: list[Any],
    index: int,
) -> tuple[float, float]:
    """Feed ``outcome`` to a machine; the elapsed() at which it wants to poll next, and how
    long that poll asks the server to hold it.

    A machine asks to sleep and then to poll, reading no clock in between, so its sleep is
    turned into a due time at once. StopIteration (the job finished) propagates.
    """
    try:
        step = machine.send(outcome)
        if step[0] == "poll":
            return elapsed(), step[1]
        wake = elapsed() + step[1]
        after = machine.send(None)
        assert after[0] == "poll", "a machine polls after each sleep"
        return wake, after[1]
    except errors.WaitTimeout as exc:
        raise _all_timed_out(exc, last, index) from None


def _all_timed_out(exc: errors.WaitTimeout, last: list[Any], index: int) -> errors.WaitTimeout:
    if len(last) == 1:
        return exc
    unfinished = sum(1 for job in last if job is None or not job.is_terminal)
    return errors.WaitTimeout(f"{unfinished} of {len(last)} jobs not finished: {exc}", list(last))
