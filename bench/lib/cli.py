"""What every benchmark prints and parses the same way: progress lines, plain-text tables,
PASS/FAIL and the exit code, comma-separated arguments, the environment lines; and SIGTERM
unwinding like Ctrl-C."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import signal
import sqlite3
import statistics
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar

T = TypeVar("T")


def progress(message: str) -> None:
    print(f"  .. {message}", file=sys.stderr, flush=True)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] | None = None
) -> list[str]:
    """A header, a rule and the rows; columns in ``right`` are right-aligned (by default every
    column but the first)."""
    if right is None:
        right = range(1, len(headers))
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  " + "  ".join(out).rstrip()

    return [line(headers), "  " + "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def columns(
    spec: Sequence[tuple[str, Callable[[T], str]]],
    items: Iterable[T],
    right: Collection[int] | None = None,
) -> list[str]:
    """:func:`table` from (header, cell of an item) pairs, one row per item."""
    return table([h for h, _ in spec], [[cell(i) for _, cell in spec] for i in items], right)


Target = tuple[str, str, bool]  # (target, the measured value, passed)


def judged(
    found: Sequence[Target], headers: Sequence[str] = ("target", "measured", "")
) -> list[str]:
    """The targets table, each marked PASS or FAIL."""
    return table(headers, [[t, m, verdict(ok)] for t, m, ok in found], {1})


def failed(found: Iterable[Target]) -> list[str]:
    """The failed targets, one line each."""
    return [f"{t}: {m}" for t, m, ok in found if not ok]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def positive_ints(text: str) -> tuple[int, ...]:
    """An argparse type: "8,32,64" -> (8, 32, 64)."""
    values = tuple(int(part) for part in text.split(",") if part.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas")
    return values


def choice(allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma-separated subset of ``allowed``, in the order given."""

    def parse(text: str) -> tuple[str, ...]:
        chosen = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
        unknown = set(chosen) - set(allowed)
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}")
        return chosen

    return parse


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def versions(*names: str) -> str:
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


class _HasVersion(Protocol):
    def server_version(self) -> str: ...


def machine(pg: _HasVersion | None = None) -> str:
    """The machine line every report starts with (PostgreSQL's version when it is used)."""
    line = (
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}"
    )
    if pg is not None:
        line += f"; PostgreSQL {pg.server_version()} on 127.0.0.1 (same machine)"
    return line


def _unwind(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def unwind_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so servers are stopped and scratch databases dropped."""
    signal.signal(signal.SIGTERM, _unwind)


def exit_code(failed: Sequence[str]) -> int:
    """1 when a target failed (each printed once more at the end), else 0."""
    if failed:
        print("\nFAIL: " + "\nFAIL: ".join(failed), flush=True)
    return 1 if failed else 0


@contextmanager
def partial_report(render: Callable[[], str], cleaned: str) -> Iterator[None]:
    """Print what was measured so far when a run is interrupted (then exit 130) or fails (then
    the error goes on); ``cleaned`` says what was stopped or removed on the way out."""
    try:
        yield
    except KeyboardInterrupt:
        print(render(), end="", flush=True)
        print(f"\n(incomplete: interrupted; {cleaned})", flush=True)
        raise SystemExit(130) from None
    except BaseException:
        print(render(), end="", flush=True)
        print(f"\n(incomplete: the run stopped with an error; {cleaned})", flush=True)
        raise
