"""How the dashboard shows one backlink analysis (issue 28's views): the index's totals beside
the previous analysis's; the links new and lost since it; the referring domains and anchors
linking most; and every link the analysis kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Collected, Column, DashboardView, JobView, Table
from seojobs.records import CollectionRecord

TOTALS = (
    ("backlinks", "Backlinks"),
    ("referring_domains", "Referring domains"),
    ("referring_main_domains", "Referring main domains"),
    ("referring_pages", "Referring pages"),
    ("referring_domains_nofollow", "Referring domains, nofollow only"),
    ("broken_backlinks", "Broken backlinks"),
    ("rank", "Rank"),
    ("backlinks_spam_score", "Spam score"),
)


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    found = data.get("summary")
    return found if isinstance(found, dict) else {}


def totals(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    """The index's totals for each target analysed, with the previous analysis's and the
    difference, then the links new and lost since it."""
    made = []
    for c in collected:
        data, before = c.data, c.before
        now, was = _summary(data), _summary(before or {})
        for key, label in TOTALS:
            value, previous = _number(now.get(key)), _number(was.get(key))
            change = None if value is None or previous is None else value - previous
            made.append(
                {
                    "target": data.get("target"),
                    "measure": label,
                    "value": value,
                    "previous": previous,
                    "change": change,
                }
            )
        for key, label in (("new", "New links since the previous analysis"),
                           ("lost", "Links lost since the previous analysis")):  # fmt: skip
            made.append(
                {
                    "target": data.get("target"),
                    "measure": label,
                    "value": _number(data.get(key)),
                    "previous": None,
                    "change": None,
                }
            )
    return made


def _link(link: dict[str, Any]) -> dict[str, Any]:
    return {
        "url_from": link.get("url_from"),
        "url_to": link.get("url_to"),
        "anchor": link.get("anchor"),
        "dofollow": link.get("dofollow"),
        "rel": link.get("rel") or [],
        "state": "lost" if link.get("is_lost") else "live",
        "new": link.get("new"),
        "first_seen": link.get("first_seen"),
        "last_seen": link.get("last_seen"),
        "rank": link.get("rank"),
    }


def _rows(c: Collected, name: str) -> list[dict[str, Any]]:
    found = c.data.get(name)
    return [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []


def changes(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    """The links lost since the previous analysis (with why), then the new ones; none for a
    target's first analysis (every link would be new)."""
    made = []
    for c in collected:
        if c.previous is None:
            continue
        for link in _rows(c, "lost_links"):
            why = "removed" if link.get("reason") == "lost" else "no longer listed"
            made.append({"change": "lost", "why": why, **_link(link)})
        for link in _rows(c, "links"):
            if link.get("new"):
                made.append({"change": "new", "why": "first listed", **_link(link)})
    return made


def links(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    return [_link(link) for c in collected for link in _rows(c, "links")]


def _groups(name: str, key: str) -> Any:
    def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
        return [
            {
                key: row.get(key),
                "backlinks": row.get("backlinks"),
                "referring_domains": row.get("referring_domains"),
                "referring_pages": row.get("referring_pages"),
                "rank": row.get("rank"),
                "first_seen": row.get("first_seen"),
                "lost_date": row.get("lost_date"),
            }
            for c in collected
            for row in _rows(c, name)
        ]

    return rows


LINK_COLUMNS = (
    Column("url_from", "Linking page", "url"),
    Column("url_to", "Links to", "url"),
    Column("anchor", "Anchor text"),
    Column("dofollow", "Dofollow", "yesno"),
    Column("rel", "rel", "list"),
    Column("state", "In the index"),
    Column("first_seen", "First seen"),
    Column("rank", "Rank", "number"),
)
GROUP_COLUMNS = (
    Column("backlinks", "Backlinks", "number"),
    Column("referring_domains", "Referring domains", "number"),
    Column("referring_pages", "Referring pages", "number"),
    Column("rank", "Rank", "number"),
    Column("first_seen", "First seen"),
    Column("lost_date", "All lost on"),
)


def _group_table(title: str, name: str, first: Column) -> Table:
    """The referring domains or anchors the analysis kept, each with its counts."""
    return Table(
        title,
        (first, *GROUP_COLUMNS),
        _groups(name, first.key),
        sortable=True,
        empty=f"The index lists no {first.label.lower()}.",
    )


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """The index's backlinks of each target analysed (its latest analysis), most first."""
    bars = []
    for c in latest:
        data = c.data if isinstance(c.data, dict) else {}
        found = data.get("summary")
        count = _number(found.get("backlinks")) if isinstance(found, dict) else None
        bars.append((str(data.get("target") or c.subject), float(count or 0)))
    return "Backlinks in the index by target", sorted(bars, key=lambda b: (-b[1], b[0]))


VIEW = DashboardView(
    title="Backlink analysis",
    columns=("target", "summary.backlinks", "summary.referring_domains", "new", "lost"),
    summary=summary,
    job=JobView(
        "Backlink analysis",
        tables=(
            Table(
                "Totals in the index",
                (
                    Column("measure", "Measure"),
                    Column("value", "Now", "number"),
                    Column("previous", "Previous analysis", "number"),
                    Column("change", "Change", "number"),
                    Column("target", "Target"),
                ),
                totals,
                about="The provider index's counts for the target, beside the previous analysis's.",
            ),
            Table(
                "New and lost since the previous analysis",
                (Column("change", "Change"), Column("why", "Why"), *LINK_COLUMNS),
                changes,
                about="New: live now and not in the previous analysis. Lost: live then, and "
                "now removed or no longer listed by the index.",
                counts="change",
                empty="No link new or lost since the previous analysis (or this is the first).",
            ),
            _group_table("Referring domains", "referring_domains", Column("domain", "Domain")),
            _group_table("Anchors", "anchors", Column("anchor", "Anchor text")),
            Table(
                "Links",
                LINK_COLUMNS,
                links,
                about="The strongest links the analysis kept, by the index's rank.",
                counts="state",
                sortable=True,
            ),
        ),
        rerun=True,
    ),
)
