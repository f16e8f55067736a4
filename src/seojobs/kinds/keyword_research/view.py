"""How the dashboard shows one keyword research (issue 28): its keywords as a table sorted by
any column (volume first), served as CSV too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Collected, Column, DashboardView, JobView, Table
from seojobs.records import CollectionRecord


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        for keyword in c.data.get("keywords") or []:
            if not isinstance(keyword, dict):
                continue
            made.append(
                {
                    "keyword": keyword.get("keyword"),
                    "search_volume": keyword.get("search_volume"),
                    "cpc": keyword.get("cpc"),
                    "currency": keyword.get("currency"),
                    "competition": keyword.get("competition"),
                    "competition_level": keyword.get("competition_level"),
                    "seed": keyword.get("seed"),
                    "market": c.this.subject,
                }
            )
    return sorted(made, key=lambda r: (-(r["search_volume"] or -1), str(r["keyword"])))


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """The ten keywords with the most monthly searches."""
    found = rows([Collected(c, None) for c in latest])
    bars = [
        (str(r["keyword"]), float(r["search_volume"])) for r in found[:10] if r["search_volume"]
    ]
    return "Monthly searches of the top keywords", bars


VIEW = DashboardView(
    title="Keyword research",
    columns=("provider", "location", "language", "keywords"),
    summary=summary,
    job=JobView(
        "Keyword research",
        tables=(
            Table(
                "Keywords",
                (
                    Column("keyword", "Keyword"),
                    Column("search_volume", "Monthly searches", "number"),
                    Column("cpc", "CPC", "money"),
                    Column("currency", "Currency"),
                    Column("competition", "Competition (0-100)", "number"),
                    Column("competition_level", "Competition level"),
                    Column("seed", "Seed", "yesno"),
                    Column("market", "Market"),
                ),
                rows,
                about="Sort by any column: its heading sorts the table.",
                sortable=True,
                empty="The provider returned no keyword.",
            ),
        ),
        rerun=True,
    ),
)
