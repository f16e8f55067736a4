"""How the dashboard shows one rank check (issue 28): every keyword it checked with its
position, the move since the previous check of that keyword (up/down with words), the best
position it ever had in the project, the ranking URL and the SERP's features (and the
competitors' positions, when the check collected them); a keyword's positions as a chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Chart, Collected, Column, DashboardView, JobView, Table
from seojobs.kinds.rank_check.reads import VOICE_SUBJECTS
from seojobs.records import CollectionRecord


def _keyword_checks(subject: str) -> bool:
    """A keyword's check, not a market's share of voice (a collection of the same kind)."""
    return not subject.startswith(VOICE_SUBJECTS)


def move(before: Any, now: Any, first: bool) -> int | str | None:
    """Places gained since the previous check (negative: lost), or what happened in words."""
    if first:
        return "new"
    if isinstance(before, int) and isinstance(now, int):
        return before - now
    if now is None and isinstance(before, int):
        return "dropped out"
    if isinstance(now, int):
        return "entered"
    return None  # not ranked either time


def _competitors(data: dict[str, Any]) -> str | None:
    """``competitors`` (another helper's addition to the data), when present: each domain with
    its position."""
    found = data.get("competitors")
    if not isinstance(found, list) or not found:
        return None
    shown = []
    for entry in found[:10]:
        if isinstance(entry, dict):
            name = entry.get("domain") or entry.get("target") or "?"
            position = entry.get("position")
            shown.append(f"{name}: {position if position is not None else 'not ranked'}")
    return ", ".join(shown) or None


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        if not _keyword_checks(c.this.subject):
            continue
        data, before = c.data, c.before
        best = c.lowest.get("position")
        made.append(
            {
                "keyword": data.get("keyword"),
                "market": f"{data.get('device')}, {data.get('location')}/{data.get('language')}",
                "position": data.get("position"),
                "change": move(
                    (before or {}).get("position"), data.get("position"), before is None
                ),
                "previous": (before or {}).get("position"),
                "best": int(best) if best is not None else None,
                "url": data.get("url"),
                "features": data.get("features") or [],
                "competitors": _competitors(data),
            }
        )
    return sorted(made, key=lambda r: (r["position"] is None, r["position"] or 0, r["keyword"]))


def _position(data: Any) -> float | None:
    found = data.get("position") if isinstance(data, dict) else None
    return float(found) if isinstance(found, int) else None


def _keyword(data: Any) -> str:
    if not isinstance(data, dict):
        return "?"
    return f"“{data.get('keyword')}” ({data.get('device')}, {data.get('location')})"


BUCKETS = ((1, 3), (4, 10), (11, 20), (21, 100))


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """Keywords per position range, as rank trackers group them."""
    counts = dict.fromkeys([f"{lo}-{hi}" for lo, hi in BUCKETS] + ["not ranked"], 0)
    for c in latest:
        if not _keyword_checks(c.subject):
            continue
        position = c.data.get("position") if isinstance(c.data, dict) else None
        label = next(
            (
                f"{lo}-{hi}"
                for lo, hi in BUCKETS
                if isinstance(position, int) and lo <= position <= hi
            ),
            "not ranked",
        )
        counts[label] += 1
    return "Keywords by position", [(k, float(n)) for k, n in counts.items()]


VIEW = DashboardView(
    title="Rankings",
    columns=("keyword", "device", "position", "url"),
    summary=summary,
    job=JobView(
        "Rank check",
        tables=(
            Table(
                "Positions",
                (
                    Column("keyword", "Keyword"),
                    Column("position", "Position", "position"),
                    Column("change", "Change since the previous check", "change"),
                    Column("previous", "Previous", "position"),
                    Column("best", "Best", "position"),
                    Column("url", "Ranking URL", "url"),
                    Column("features", "SERP features", "list"),
                    Column("market", "Device, market"),
                    Column("competitors", "Competitors"),
                ),
                rows,
                about="Each keyword checked, best position first. A change counts places: up "
                "is better.",
                sortable=True,
            ),
        ),
        chart=Chart(
            "Position", _position, "Position", lower_is_better=True, subject_label=_keyword
        ),
        lowest=("position",),
        rerun=True,
    ),
)
