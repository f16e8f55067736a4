"""How the dashboard shows one backlink refresh (issue 28): how many pairs are in each status;
the links lost and new since the previous refresh of each pair, with the reason the check gave;
and every pair it checked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Collected, Column, DashboardView, JobView, Table, tally
from seojobs.records import CollectionRecord

FOUND = "found"


def _pair(c: Collected) -> dict[str, Any]:
    data, before = c.data, c.before
    return {
        "donor": data.get("donor"),
        "target": data.get("target"),
        "status": data.get("link_status"),
        "previous": None if before is None else before.get("link_status"),
        "reason": data.get("reason"),
        "anchor": data.get("anchor_text"),
        "rel": data.get("rel") or [],
        "http": data.get("status_code"),
        "first_seen": data.get("first_seen"),
    }


def pairs(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    return [_pair(c) for c in collected]


def changes(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    """The pairs whose link was found by the previous refresh and is not now (lost), or the
    reverse (new), lost first."""
    made = []
    for row in pairs(collected):
        was, now = row["previous"], row["status"]
        if was is None or (was == FOUND) == (now == FOUND):
            continue
        made.append({"change": "lost" if was == FOUND else "new", **row})
    return sorted(made, key=lambda r: (r["change"] != "lost", r["donor"] or "", r["target"] or ""))


PAIR_COLUMNS = (
    Column("donor", "Donor page", "url"),
    Column("target", "Target", "url"),
    Column("status", "Status"),
    Column("reason", "Why"),
    Column("anchor", "Anchor text"),
    Column("rel", "rel", "list"),
    Column("http", "Donor's HTTP status"),
    Column("previous", "Previous status"),
    Column("first_seen", "First seen"),
)


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """Pairs per link status, most first."""
    statuses = (str(c.data.get("link_status")) for c in latest if isinstance(c.data, dict))
    return "Backlinks by status", tally(statuses)


VIEW = DashboardView(
    title="Backlinks",
    columns=("donor", "target", "link_status", "reason"),
    summary=summary,
    job=JobView(
        "Backlink refresh",
        tables=(
            Table(
                "Lost and new since the previous refresh",
                (Column("change", "Change"), *PAIR_COLUMNS),
                changes,
                about="A link is lost when the previous refresh found it and this one did "
                "not; new, the other way round.",
                counts="change",
                empty="No link lost or new since the previous refresh (or this is the first).",
            ),
            Table(
                "Every pair checked",
                PAIR_COLUMNS,
                pairs,
                counts="status",
                sortable=True,
            ),
        ),
        rerun=True,
    ),
)
