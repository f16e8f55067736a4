"""Every CSV the service writes goes through this module (import-linter keeps ``csv`` out of
every other module): RFC 4180 quoting by Python's ``csv`` module, and no cell that a
spreadsheet would run as a formula (OWASP "CSV Injection", CWE-1236).

Cells are typed, so the rule never depends on what a value looks like:

- ``str`` is text that may come from outside (a page, a response header, a provider's answer,
  a URL or title a user sent). It is neutralised: when a spreadsheet would read it as a
  formula, a ``'`` is put in front, which Excel, LibreOffice and Google Sheets take as "this
  cell is text" and do not show. Text that needs no guard is written as it is.
- ``int`` and ``float`` are numbers we computed (counts, HTTP statuses, ``-1``). They are
  written as they are: ``-1`` read as minus one is what the report means, and a number cannot
  carry a formula. Text that merely looks like a number (``"-1"`` from a provider) is a ``str``
  and is guarded like any other text.
- ``None`` is an empty cell. Anything else is refused (``TypeError``): how a structure reads
  as text is the caller's choice, and the ``str`` it makes is then guarded like any other.

When is text a formula? OWASP lists cells starting with ``=``, ``+``, ``-``, ``@``, tab or
carriage return. Some spreadsheets and import settings trim leading whitespace first, and some
take the full-width forms (U+FF1D, U+FF0B, U+FF0D, U+FF20) as the ASCII ones: a cell is guarded
when it starts with tab, CR or NUL (ASVS 1.2.10), or when its first character after any
leading whitespace is one of those eight. Separators and quotes inside a cell cannot start a
new cell: the ``csv`` module quotes every cell that holds them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Final

Cell = str | int | float | None

# The ASCII formula starters and their full-width forms (U+FF1D, U+FF0B, U+FF0D, U+FF20).
FORMULA_STARTS: Final = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
# Guarded whatever follows them: OWASP's tab and carriage return, and ASVS's NUL.
ALWAYS_GUARDED: Final = frozenset("\t\r\x00")
GUARD: Final = "'"
# A streamed CSV goes out in pieces of about this many characters. A streaming response reads
# a sync iterator one item at a time in a worker thread and sends each item: one item a line
# cost a thread hop and a send per row (10,000 of each for a 10,000-URL report).
PIECE: Final = 64 * 1024


def neutralise(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula."""
    if text[:1] in ALWAYS_GUARDED or text.lstrip()[:1] in FORMULA_STARTS:
        return GUARD + text
    return text


def _cell(value: Cell) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, int | float):
        return value
    raise TypeError(f"a CSV cell is str, int, float or None, not {type(value).__name__}")


class Writer:
    """Formats rows into CSV lines, one string per row (for streaming responses)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer)

    def line(self, cells: Iterable[Cell]) -> str:
        self._writer.writerow([_cell(value) for value in cells])
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text


def lines(columns: Iterable[str], rows: Iterable[Iterable[Cell]]) -> Iterator[str]:
    """The header line, then one line per row, produced as ``rows`` is read."""
    writer = Writer()
    yield writer.line(columns)
    for row in rows:
        yield writer.line(row)


def stream(columns: Iterable[str], rows: Iterable[Iterable[Cell]]) -> Iterator[str]:
    """:func:`lines` joined into pieces of about :data:`PIECE` characters (the last one
    shorter), produced as ``rows`` is read: the body of a streaming response."""
    piece: list[str] = []
    size = 0
    for line in lines(columns, rows):
        piece.append(line)
        size += len(line)
        if size >= PIECE:
            yield "".join(piece)
            piece, size = [], 0
    if piece:
        yield "".join(piece)
