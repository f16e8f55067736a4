"""``geo_lookup``: how AI search answers a project's prompts: is its site cited, is its brand
named (seed 001: GEO runs on a schedule; a read never starts a lookup).

The package: ``params`` (what a request sets), ``matching`` (citations and mentions in one
answer), ``run`` (the handler, the provider choice and the refusal at creation). Adapters
live in ``seojobs.providers`` (``openai_responses``, ``perplexity``). Each answered prompt is
stored as the project's collection for ``"<provider> <prompt>"``; ``GET
/v1/projects/{id}/geo`` reads the latest of each, ``/geo/history`` every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seojobs.engine.hints import PollHint
from seojobs.engine.registry import Kind, Quota, ReportColumn
from seojobs.kinds.geo_lookup.declared import AI_SEARCH, GeoLookupSettings, refusal, subject
from seojobs.kinds.geo_lookup.params import GeoLookupParams, from_project
from seojobs.kinds.geo_lookup.reads import CHANGES, READS
from seojobs.kinds.geo_lookup.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "geo_lookup"
__all__ = ["KIND", "NAME", "GeoLookupParams", "subject"]


async def _run(ctx: JobContext[GeoLookupParams]) -> None:
    from seojobs.kinds.geo_lookup import run  # the run-time code: a worker's first lookup

    await run.run(ctx)


def _items(params: GeoLookupParams) -> list[str]:
    return list(params.prompts)


def _cost(params: GeoLookupParams, items: int) -> dict[str, int]:
    calls = items * params.repeats  # one unit per prompt call
    return {DAILY.name: calls, MONTHLY.name: calls}


# A project's whole daily collection fits the defaults: every prompt it may track asked the
# most times (MAX_PROMPTS x MAX_REPEATS = 250) once a day, for a month of 31 days.
DAILY, MONTHLY = Quota.day_and_month(
    "ai_lookups", "AI search prompt calls", daily=500, monthly=31 * 500
)

KIND: Kind[GeoLookupParams] = Kind(
    NAME,
    GeoLookupParams,
    _run,
    items=_items,
    item_key=lambda prompt: str(prompt).casefold(),
    poll_hint=PollHint.every(10),  # seed 001: AI search lookups, 10 s
    providers=(AI_SEARCH,),
    settings=GeoLookupSettings,
    description="Ask AI search (OpenAI web search, Perplexity Sonar) each prompt: the "
    "answer's citations, whether the domain is cited and where, whether the brand is named "
    "(GET /v1/projects/{id}/geo).",
    summary_params=("domain", "brand", "provider", "repeats"),
    schedulable=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=refusal,
    project_params=from_project,
    report_columns=(
        ReportColumn("domain_cited", "domain_cited"),
        ReportColumn("citation_position", "citation_position"),
        ReportColumn("brand_mentioned", "brand_mentioned"),
        ReportColumn("cited_share", "cited_share"),
        ReportColumn("mentioned_share", "mentioned_share"),
    ),
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
