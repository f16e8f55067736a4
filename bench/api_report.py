"""Plain-text tables for ``bench/api.py``'s report."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence


def progress(message: str) -> None:
    print(f"  .. {message}", file=sys.stderr, flush=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Columns after the first ``left`` are right-aligned."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  " + "  ".join(out).rstrip()

    return [line(headers), "  " + "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"
