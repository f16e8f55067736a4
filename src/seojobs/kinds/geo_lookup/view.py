"""How the dashboard shows one GEO lookup (issue 28): per prompt and provider, whether the
domain is cited and where, whether the brand is named, the shares over the repeats and how
they moved since the previous lookup; the cited share's history as a chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Chart, Collected, Column, DashboardView, JobView, Table
from seojobs.records import CollectionRecord


def _share(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _trend(now: Any, before: dict[str, Any] | None) -> int | str | None:
    """The cited share's move in percentage points since the previous lookup."""
    if before is None:
        return "new"
    was, share = _share(before.get("cited_share")), _share(now)
    if was is None or share is None:
        return None
    return round((share - was) * 100)


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        data = c.data
        made.append(
            {
                "prompt": data.get("prompt"),
                "provider": data.get("provider"),
                "model": data.get("model"),
                "cited": data.get("domain_cited"),
                "position": data.get("citation_position"),
                "mentioned": data.get("brand_mentioned"),
                "mentions": data.get("mention_count"),
                "cited_share": data.get("cited_share"),
                "mentioned_share": data.get("mentioned_share"),
                "trend": _trend(data.get("cited_share"), c.before),
                "repeats": data.get("repeats"),
            }
        )
    return made


def _cited(data: Any) -> float | None:
    found = _share(data.get("cited_share")) if isinstance(data, dict) else None
    return None if found is None else round(found * 100)


def _prompt(data: Any) -> str:
    if not isinstance(data, dict):
        return "?"
    return f"“{data.get('prompt')}” on {data.get('provider')}"


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """How many prompt/provider pairs cite the domain and name the brand."""
    rows = [c.data for c in latest if isinstance(c.data, dict)]
    cited = sum(1 for r in rows if r.get("domain_cited"))
    named = sum(1 for r in rows if r.get("brand_mentioned"))
    return "Prompts per provider citing the domain and naming the brand", [
        ("domain cited", float(cited)),
        ("not cited", float(len(rows) - cited)),
        ("brand named", float(named)),
        ("brand not named", float(len(rows) - named)),
    ]


VIEW = DashboardView(
    title="AI search (GEO)",
    columns=(
        "prompt",
        "provider",
        "domain_cited",
        "citation_position",
        "brand_mentioned",
        "cited_share",
    ),
    summary=summary,
    job=JobView(
        "GEO lookup",
        tables=(
            Table(
                "Visibility per prompt and provider",
                (
                    Column("prompt", "Prompt"),
                    Column("provider", "Provider"),
                    Column("cited", "Domain cited", "yesno"),
                    Column("position", "Cited at (best)", "position"),
                    Column("mentioned", "Brand mentioned", "yesno"),
                    Column("mentions", "Mentions", "number"),
                    Column("cited_share", "Cited share", "share"),
                    Column("mentioned_share", "Mentioned share", "share"),
                    Column("trend", "Cited share since the previous lookup (points)", "change"),
                    Column("repeats", "Answers", "number"),
                    Column("model", "Model"),
                ),
                rows,
                about="Shares are over the answers each prompt got (repeats); a position is "
                "the domain's first citation among the answer's sources.",
                sortable=True,
            ),
        ),
        chart=Chart("Cited share (%)", _cited, "Cited share (%)", top=100, subject_label=_prompt),
        rerun=True,
    ),
)
