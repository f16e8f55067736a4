"""How the dashboard shows one GEO lookup (issue 28): per prompt and provider, whether the
domain is cited and where, whether the brand is named (and in which order among the tracked
names), the shares over the repeats and how they moved since the previous lookup, each
competitor's citations and mentions beside them, and the lookup's share of voice; the cited
share's history as a chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.engine.views import Chart, Collected, Column, DashboardView, JobView, Table
from seojobs.kinds.geo_lookup.declared import VOICE
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


def _competitors(data: dict[str, Any]) -> str | None:
    """Each competitor: where its site is cited and in which order it is named."""
    found = data.get("competitors")
    if not isinstance(found, list) or not found:
        return None
    shown = []
    for entry in found[:10]:
        if not isinstance(entry, dict):
            continue
        cited = entry.get("citation_position")
        named = entry.get("mention_position")
        seen = [f"cited #{cited}" if cited else "not cited"]
        seen.append(f"named #{named}" if named else "not named")
        shown.append(f"{entry.get('domain')}: {', '.join(seen)}")
    return "; ".join(shown) or None


def rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        if c.this.subject == VOICE:
            continue
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
                "brand_position": data.get("brand_position"),
                "competitors": _competitors(data),
                "cited_share": data.get("cited_share"),
                "mentioned_share": data.get("mentioned_share"),
                "trend": _trend(data.get("cited_share"), c.before),
                "repeats": data.get("repeats"),
            }
        )
    return made


def _parties(data: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    project = data.get("project")
    found = [{**project, "party": f"{project.get('domain') or 'the project'} (the project)",
              "key": ""}] if isinstance(project, dict) else []  # fmt: skip
    found += [
        {**c, "party": c.get("domain"), "key": c.get("domain")}
        for c in data.get("competitors") or []
        if isinstance(c, dict)
    ]
    return found


def voice_rows(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        if c.this.subject != VOICE:
            continue
        before = {p["key"]: p for p in _parties(c.before)}
        for party in _parties(c.data):
            was = before.get(party["key"])
            engines = party.get("by_provider")
            made.append(
                {
                    "party": party["party"],
                    "share": party.get("share"),
                    "trend": _trend(party.get("share"), None if was is None else
                                    {"cited_share": was.get("share")})
                    if c.before is not None else "new",
                    "cited_in": party.get("cited_in"),
                    "mentioned_in": party.get("mentioned_in"),
                    "providers": ", ".join(
                        f"{name} {round(float(v) * 100)}%" for name, v in engines.items()
                    ) if isinstance(engines, dict) else None,
                }
            )  # fmt: skip
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
    rows = [c.data for c in latest if isinstance(c.data, dict) and c.subject != VOICE]
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
                    Column("brand_position", "Brand named (order)", "position"),
                    Column("competitors", "Competitors"),
                    Column("repeats", "Answers", "number"),
                    Column("model", "Model"),
                ),
                rows,
                about="Shares are over the answers each prompt got (repeats); a position is "
                "the domain's first citation among the answer's sources; the brand's order is "
                "its place among the tracked names (the project's and the competitors') the "
                "answer gives, 1 when it comes first.",
                sortable=True,
            ),
            Table(
                "Share of voice",
                (
                    Column("party", "Site"),
                    Column("share", "Share of voice", "share"),
                    Column("trend", "Since the previous lookup (points)", "change"),
                    Column("cited_in", "Answers citing it", "number"),
                    Column("mentioned_in", "Answers naming it", "number"),
                    Column("providers", "Per engine"),
                ),
                voice_rows,
                about="Each party's share of the points of the project and its competitors over "
                "this lookup's prompts and every engine's latest answer of them (per answer: "
                "half the cited share over the best citation position, half the mentioned "
                "share over the order among the tracked names).",
                empty="No share of voice: nothing was answered.",
            ),
        ),
        chart=Chart("Cited share (%)", _cited, "Cited share (%)", top=100, subject_label=_prompt),
        rerun=True,
    ),
)
