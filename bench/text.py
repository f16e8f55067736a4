"""What every benchmark prints and parses the same way: progress lines, plain-text tables,
PASS/FAIL, comma-separated counts on the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence


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


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def positive_ints(text: str) -> tuple[int, ...]:
    """An argparse type: "8,32,64" -> (8, 32, 64)."""
    values = tuple(int(part) for part in text.split(",") if part.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas")
    return values
