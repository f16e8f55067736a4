"""How a kind view's cells read (``seojobs.api.dashboard.tables``): every value as text, moves
and ratings in words as well as arrows, countdowns, shares; sorting with empty cells last;
a rank check's rows with the competitors' positions when the check collected them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from seojobs.api.dashboard.charts import line_chart
from seojobs.api.dashboard.jobs import _item_row
from seojobs.api.dashboard.tables import cell, sort_rows
from seojobs.engine.registry import ReportColumn
from seojobs.engine.views import Collected, Column
from seojobs.kinds.rank_check.view import move, rows
from seojobs.records import CollectionRecord, ItemRecord, JobRecord


@pytest.mark.parametrize(
    ("show", "value", "text"),
    [
        ("change", 3, "▲ up 3"),
        ("change", -2, "▼ down 2"),
        ("change", 0, "= no change"),
        ("change", "dropped out", "dropped out"),
        ("change", None, "—"),
        ("position", None, "not ranked"),
        ("position", 4, "4"),
        ("share", 0.5, "50 %"),
        ("yesno", True, "yes"),
        ("rating", "needs_improvement", "needs improvement"),
        ("days", 41, "in 41 days"),
        ("days", 1, "in 1 day"),
        ("days", -3, "3 days ago"),
        ("days", -1, "1 day ago"),
        ("days", 0, "today"),
        ("money", 1234.5, "1,234.50"),
        ("number", 12100, "12,100"),
        ("number", 4.6, "4.6"),  # a rating out of 5, as the map shows it: not "4.60"
        ("number", 1234.25, "1,234.25"),
        ("number", 0.5, "0.5"),
        ("list", ["a", "b"], "a, b"),
        ("text", {"preference": 10, "exchange": "mx.test"}, "preference: 10; exchange: mx.test"),
    ],
)
def test_a_cell_reads_as_text(show: Any, value: Any, text: str) -> None:
    assert cell(Column("k", "K", show), value).text == text


def test_a_web_url_is_a_link_and_anything_else_text() -> None:
    assert cell(Column("u", "U", "url"), "https://a.example/").href == "https://a.example/"
    assert cell(Column("u", "U", "url"), "javascript:alert(1)").href is None


def test_sorting_keeps_empty_cells_last_either_way() -> None:
    found = [{"v": 2}, {"v": None}, {"v": 10}, {"v": 1}]
    assert [r["v"] for r in sort_rows(found, "v", False)] == [1, 2, 10, None]
    assert [r["v"] for r in sort_rows(found, "v", True)] == [10, 2, 1, None]


def test_a_move_is_places_gained_or_what_happened() -> None:
    assert move(5, 2, first=False) == 3
    assert move(2, 5, first=False) == -3
    assert move(None, 4, first=False) == "entered"
    assert move(4, None, first=False) == "dropped out"
    assert move(None, None, first=False) is None
    assert move(None, 1, first=True) == "new"


def _ranking(position: int | None, **more: Any) -> CollectionRecord:
    data = {"keyword": "hose", "device": "desktop", "location": 2840, "language": "en"}
    data |= {"position": position, "url": None, "features": [], **more}
    when = datetime(2026, 12, 5, tzinfo=UTC)
    return CollectionRecord(1, 1, "rank_check", "desktop/2840/en/hose", 1, data, True, when)


def test_a_rank_checks_rows_show_the_competitors_when_collected() -> None:
    competitors = [
        {"domain": "rival.example", "position": 1, "url": "https://rival.example/"},
        {"domain": "other.example", "position": None, "url": None},
    ]
    [row] = rows([Collected(_ranking(3, competitors=competitors), _ranking(5), {"position": 2.0})])
    assert row["competitors"] == "rival.example: 1, other.example: not ranked"
    assert (row["position"], row["change"], row["previous"], row["best"]) == (3, 2, 5, 2)
    [plain] = rows([Collected(_ranking(3), None)])
    assert plain["competitors"] is None and plain["change"] == "new"


def test_a_position_chart_has_1_at_the_top() -> None:
    drawn = line_chart("Position", [("a", 1.0), ("b", 9.0)], 10, invert=True)
    ys = [float(y) for y in re.findall(r'<circle cx="[^"]+" cy="([^"]+)"', drawn)]
    assert ys[0] < ys[1]  # position 1 drawn above position 9


def test_a_chart_writes_its_values_as_the_tables_do() -> None:
    drawn = line_chart("Rating", [("a", 4.6), ("b", 4.75)], 5)
    assert ">4.6<" in drawn and ">4.75<" in drawn and "4.60" not in drawn


_AT = datetime(2026, 12, 5, tzinfo=UTC)
JOB = JobRecord(
    1, 1, "index_check", {}, "completed", 0, None, _AT, _AT, _AT, _AT, _AT, 1, None, None, 0,
    None, None, 1, 1, 0, {}, None, None, None, None, None,
)  # fmt: skip


def test_the_generic_items_table_writes_results_as_text_not_python() -> None:
    """A report column's value on a job's page: yes/no, a list's entries, an object's named
    values; never ``True`` or ``{'lat': ...}``."""
    item = ItemRecord(
        1, 1, 0, "https://a.example/", None, None, "done", "ok",
        {"noindex": True, "chain": ["https://a.example/", "https://b.example/"],
         "point": {"lat": 52.5, "lng": 13.25}, "words": 1234},
        None, None, None,
    )  # fmt: skip
    columns = tuple(ReportColumn(n, n) for n in ("noindex", "chain", "point", "words", "gone"))
    assert _item_row(item, JOB, columns)["extra"] == [
        "yes",
        "https://a.example/, https://b.example/",
        "lat: 52.5; lng: 13.25",
        "1,234",
        "—",
    ]
