"""``keyword_research``: search volume, CPC, competition and ideas for seed keywords or a page,
from DataForSEO or the Google Ads Keyword Planner (seed 001: only when started).

The package: ``params`` (what a request sets), ``run`` (the handler, the provider choice and
the refusal at creation). Adapters live in ``seojobs.providers`` (``dataforseo_keywords``,
``google_ads``). Each completed job stores the keywords as the project's collection for its
market (``{location}/{language}``); ``GET /v1/projects/{id}/keywords`` reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seojobs.engine.registry import Kind, Quota
from seojobs.kinds.keyword_research.declared import (
    KEYWORDS,
    KeywordResearchSettings,
    refusal,
    subject,
)
from seojobs.kinds.keyword_research.params import KeywordResearchParams
from seojobs.kinds.keyword_research.reads import READS
from seojobs.kinds.keyword_research.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "keyword_research"
__all__ = ["KIND", "NAME", "KeywordResearchParams", "subject"]


async def _run(ctx: JobContext[KeywordResearchParams]) -> None:
    from seojobs.kinds.keyword_research import run  # the run-time code: a worker's first lookup

    await run.run(ctx)


def _cost(_params: KeywordResearchParams, _items: int) -> dict[str, int]:
    return {DAILY.name: 1, MONTHLY.name: 1}  # one lookup, whatever its size


DAILY, MONTHLY = Quota.day_and_month(
    "keyword_lookups", "Keyword research jobs", daily=100, monthly=1_000
)

KIND: Kind[KeywordResearchParams] = Kind(
    NAME,
    KeywordResearchParams,
    _run,
    providers=(KEYWORDS,),
    settings=KeywordResearchSettings,
    description="Search volume, CPC, competition and keyword ideas for seeds or a page "
    "(GET /v1/projects/{id}/keywords).",
    summary_params=("seeds", "url", "location", "language", "provider", "limit"),
    schedulable=False,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=refusal,
    reads=READS,
    view=VIEW,
)
