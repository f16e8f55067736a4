"""The tables and the chart of a kind's job view (``JobView.tables``, ``JobView.chart``): the
rows the kind makes of what the job collected, written cell by cell as text (a move is an
arrow and words, a rating its name: never colour alone), sorted on request, and served as
CSV; the chart of a subject's history with the same values as a table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from fastapi.responses import StreamingResponse

from seojobs import csvfile
from seojobs.api.dashboard.charts import line_chart, number
from seojobs.engine.views import Chart, Collected, Column, Table, tally
from seojobs.records import CollectionRecord

ROWS: Final = 500  # rows of a table on the page; the CSV has every one
CHARTS: Final = 5  # subjects charted when none is asked for
HISTORY: Final = 12  # collections on a chart
RATINGS: Final = {"good": "good", "needs_improvement": "needs improvement", "poor": "poor"}


@dataclass(frozen=True)
class Cell:
    text: str
    href: str | None = None
    css: str = ""


def _change(value: Any) -> Cell:
    if isinstance(value, str):
        return Cell(value, css="change")
    if not isinstance(value, int | float) or isinstance(value, bool):
        return Cell("—")
    if value > 0:
        return Cell(f"▲ up {number(value)}", css="change change-up")
    if value < 0:
        return Cell(f"▼ down {number(-value)}", css="change change-down")
    return Cell("= no change", css="change")


def _days(value: Any) -> Cell:
    if not isinstance(value, int) or isinstance(value, bool):
        return Cell("—")
    if value == 0:
        return Cell("today", css="soon")
    days = f"{abs(value):,} day{'' if abs(value) == 1 else 's'}"
    text = f"in {days}" if value > 0 else f"{days} ago"
    return Cell(text, css="soon" if value <= 30 else "")


def plain(value: Any) -> str:
    """A value as text: yes/no, numbers grouped, a list's entries, an object's named values."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, list):
        return ", ".join(plain(v) for v in value[:50])
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain(v)}" for k, v in list(value.items())[:20])
    return str(value)


def cell(column: Column, value: Any) -> Cell:
    """How ``value`` reads in ``column``: as text, with a link for a web URL."""
    show = column.show
    if show == "position":
        return Cell("not ranked" if value is None else plain(value))
    if show == "change":
        return _change(value)
    if show == "days":
        return _days(value)
    if show == "share" and isinstance(value, int | float) and not isinstance(value, bool):
        return Cell(f"{round(value * 100)} %")
    if show == "money" and isinstance(value, int | float) and not isinstance(value, bool):
        return Cell(f"{value:,.2f}")
    if show == "rating" and isinstance(value, str):
        return Cell(RATINGS.get(value, value), css=f"rating rating-{value}")
    if show == "url" and isinstance(value, str) and value.startswith(("http://", "https://")):
        return Cell(value, href=value)
    return Cell(plain(value))


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (2, 0)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, plain(value).lower())


def sort_rows(rows: list[dict[str, Any]], key: str, descending: bool) -> list[dict[str, Any]]:
    """Rows by ``key`` (empty cells last either way)."""
    filled = [r for r in rows if r.get(key) is not None]
    empty = [r for r in rows if r.get(key) is None]
    return sorted(filled, key=lambda r: _sort_key(r.get(key)), reverse=descending) + empty


def counts(table: Table, rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """How many rows have each value of the table's ``counts`` column, most first."""
    if table.counts is None:
        return []
    column = next(c for c in table.columns if c.key == table.counts)
    texts = (cell(column, row.get(table.counts)).text for row in rows)
    return [(text, int(n)) for text, n in tally(texts)]


def shown(
    table: Table,
    collected: Sequence[Collected],
    sort: tuple[str, bool] | None,
) -> dict[str, Any]:
    """A table as the view shows it: its rows' cells (the first ``ROWS``), their counts."""
    rows = table.rows(collected)
    if sort is not None and table.sortable:
        rows = sort_rows(rows, *sort)
    return {
        "t": table,
        "total": len(rows),
        "counts": counts(table, rows),
        "rows": [[cell(c, row.get(c.key)) for c in table.columns] for row in rows[:ROWS]],
    }


def _csv_cell(value: Any) -> csvfile.Cell:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    return plain(value)


def csv_response(table: Table, collected: Sequence[Collected], name: str) -> StreamingResponse:
    """Every row of ``table`` (the column keys as the header), as a CSV attachment."""
    rows = table.rows(collected)
    keys = [c.key for c in table.columns]
    return StreamingResponse(
        csvfile.stream(keys, ([_csv_cell(row.get(k)) for k in keys] for row in rows)),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


# -- the chart ----------------------------------------------------------------------------------


def history_chart(
    chart: Chart, subject: str, history: list[CollectionRecord], label: str
) -> dict[str, Any]:
    """``history`` (oldest first) of one subject as a chart and a table of its values."""
    points = [
        {
            "job_id": c.job_id,
            "collected_at": c.collected_at,
            "value": "—" if (value := chart.value(c.data)) is None else number(value),
        }
        for c in history
    ]
    drawn = [
        (f"#{c.job_id or '—'} {c.collected_at:%Y-%m-%d}", value)
        for c in history
        if (value := chart.value(c.data)) is not None
    ]
    title = f"{chart.title} of {label}"
    top = chart.top or max((v for _l, v in drawn), default=1.0)
    if chart.lower_is_better:
        top = max(top, 10.0)
    svg = line_chart(title, drawn, top, invert=chart.lower_is_better) if len(drawn) > 1 else None
    return {"subject": subject, "label": label, "title": title, "svg": svg, "points": points}
