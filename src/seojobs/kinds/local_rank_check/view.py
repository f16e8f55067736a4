"""How the dashboard shows one local rank check (issue 28, "the same shape per keyword and
location" as rankings): every keyword with its position at the centre, the move since the
previous check (up/down with words), the best position it ever had, rating and reviews, the
grid's average position and top-3 share, and who is listed above; a keyword's positions as a
chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Chart, Collected, Column, DashboardView, JobView, Table
from seojobs.kinds.rank_check.view import BUCKETS, move
from seojobs.records import CollectionRecord


def _where(data: dict[str, Any]) -> str:
    if data.get("location"):
        place = str(data["location"])
    else:
        place = f"{data.get('latitude')}, {data.get('longitude')} (zoom {data.get('zoom')})"
    return f"{place}, {data.get('surface')}"


def _above(data: dict[str, Any]) -> str | None:
    found = data.get("above")
    if not isinstance(found, list) or not found:
        return None
    names = [str(a.get("title")) for a in found[:3] if isinstance(a, dict)]
    more = len(found) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        data, before = c.data, c.before
        best = c.lowest.get("position")
        grid = _mapping(data.get("grid"))
        made.append(
            {
                "keyword": data.get("keyword"),
                "where": _where(data),
                "position": data.get("position"),
                "change": move(
                    (before or {}).get("position"), data.get("position"), before is None
                ),
                "best": int(best) if best is not None else None,
                "rating": data.get("rating"),
                "reviews": data.get("reviews"),
                "average": grid.get("average_position"),
                "top3": grid.get("top3_share"),
                "above": _above(data),
            }
        )
    return sorted(made, key=lambda r: (r["position"] is None, r["position"] or 0, r["keyword"]))


def _position(data: Any) -> float | None:
    found = data.get("position") if isinstance(data, dict) else None
    return float(found) if isinstance(found, int) else None


def _keyword(data: Any) -> str:
    if not isinstance(data, dict):
        return "?"
    return f"“{data.get('keyword')}” ({_where(data)})"


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """Keywords per position range, as local rank trackers group them."""
    counts = dict.fromkeys([f"{lo}-{hi}" for lo, hi in BUCKETS] + ["not listed"], 0)
    for c in latest:
        position = c.data.get("position") if isinstance(c.data, dict) else None
        label = next(
            (
                f"{lo}-{hi}"
                for lo, hi in BUCKETS
                if isinstance(position, int) and lo <= position <= hi
            ),
            "not listed",
        )
        counts[label] += 1
    return "Keywords by local position", [(k, float(n)) for k, n in counts.items()]


VIEW = DashboardView(
    title="Local rankings",
    columns=("keyword", "location", "position", "rating", "reviews"),
    summary=summary,
    job=JobView(
        "Local rank check",
        tables=(
            Table(
                "Local positions",
                (
                    Column("keyword", "Keyword"),
                    Column("position", "Position", "position"),
                    Column("change", "Change since the previous check", "change"),
                    Column("best", "Best", "position"),
                    Column("rating", "Rating", "number"),
                    Column("reviews", "Reviews", "number"),
                    Column("average", "Grid average", "number"),
                    Column("top3", "Grid points in the top 3", "share"),
                    Column("above", "Listed above"),
                    Column("where", "Where"),
                ),
                rows,
                about="Each keyword searched, best position first. A change counts places: up "
                "is better.",
                sortable=True,
            ),
        ),
        chart=Chart(
            "Local position", _position, "Position", lower_is_better=True, subject_label=_keyword
        ),
        lowest=("position",),
        rerun=True,
    ),
)
