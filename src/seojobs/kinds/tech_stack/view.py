"""How the dashboard shows one tech-stack lookup (issue 28): the technologies by category,
each with its version(s), confidence and the evidence behind it (what matched on which page)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Collected, Column, DashboardView, JobView, Table, tally
from seojobs.records import CollectionRecord


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _evidence(found: Any) -> str | None:
    shown = []
    for entry in found[:10] if isinstance(found, list) else []:
        if isinstance(entry, dict):
            parts = [f"{k}: {v}" for k, v in entry.items() if v not in (None, "", [])]
            shown.append("; ".join(str(p) for p in parts))
        else:
            shown.append(str(entry))
    return " | ".join(shown) or None


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        for tech in c.data.get("technologies") or []:
            tech = _dict(tech)
            categories = [_dict(x).get("name") or str(x) for x in tech.get("categories") or []] or [
                "Other"
            ]
            for category in categories:
                made.append(
                    {
                        "category": category,
                        "name": tech.get("name"),
                        "version": tech.get("version") or tech.get("versions") or None,
                        "confidence": tech.get("confidence"),
                        "evidence": _evidence(tech.get("evidence")),
                        "implied_by": tech.get("implied_by") or [],
                        "site": c.this.subject,
                    }
                )
    return sorted(made, key=lambda r: (str(r["category"]).lower(), str(r["name"]).lower()))


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """Technologies found per category over the sites, most first (the first ten)."""
    found = rows([Collected(c, None) for c in latest])
    return "Technologies per category", tally((str(r["category"]) for r in found), most=10)


VIEW = DashboardView(
    title="Tech stack",
    columns=("host", "technologies", "pages"),
    summary=summary,
    job=JobView(
        "Tech stack",
        tables=(
            Table(
                "Technologies by category",
                (
                    Column("category", "Category"),
                    Column("name", "Technology"),
                    Column("version", "Version"),
                    Column("confidence", "Confidence (%)", "number"),
                    Column("evidence", "Evidence"),
                    Column("implied_by", "Implied by", "list"),
                    Column("site", "Site"),
                ),
                rows,
                counts="category",
                empty="No technology recognised.",
            ),
        ),
        rerun=True,
    ),
)
