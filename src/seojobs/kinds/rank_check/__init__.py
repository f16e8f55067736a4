"""``rank_check``: where a domain or a page ranks in Google for keywords, from Serper or
DataForSEO (seed 001: rankings run on a schedule; a read never starts one).

The package: ``params`` (what a request sets), ``match`` (which result is the target's),
``run`` (the handler, the provider choice and the refusal at creation). Adapters live in
``seojobs.providers`` (``serper_ranks``, ``dataforseo_ranks``). Each keyword is an item and a
quota unit; each completed job stores a row per keyword as the project's rankings
(``{device}/{location}/{language}/{keyword}``), read with ``GET /v1/projects/{id}/rankings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seojobs.engine.hints import PollHint
from seojobs.engine.registry import Kind, Quota, ReportColumn
from seojobs.kinds.rank_check.declared import (
    RANKS,
    RankCheckSettings,
    from_project,
    items,
    refusal,
    subject,
)
from seojobs.kinds.rank_check.params import MAX_TRACKED, RankCheckParams
from seojobs.kinds.rank_check.reads import CHANGES, READS
from seojobs.kinds.rank_check.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "rank_check"
__all__ = ["KIND", "NAME", "RankCheckParams", "subject"]


async def _run(ctx: JobContext[RankCheckParams]) -> None:
    from seojobs.kinds.rank_check import run  # the run-time code: a worker's first rank check

    await run.run(ctx)


def _cost(_params: RankCheckParams, keywords: int) -> dict[str, int]:
    return {DAILY.name: keywords, MONTHLY.name: keywords}  # one search per keyword


# A project's whole daily collection fits the defaults: every keyword it may track
# (MAX_TRACKED) once a day, for a month of 31 days.
DAILY, MONTHLY = Quota.day_and_month(
    "rank_keywords", "Keywords rank-checked", daily=MAX_TRACKED, monthly=31 * MAX_TRACKED
)

KIND: Kind[RankCheckParams] = Kind(
    NAME,
    RankCheckParams,
    _run,
    items=items,
    poll_hint=PollHint.every(30),  # seed 001: rank checks, 30 s
    providers=(RANKS,),
    settings=RankCheckSettings,
    description="Google positions of a domain or page for keywords, with SERP features "
    "(GET /v1/projects/{id}/rankings).",
    summary_params=("target", "match", "location", "language", "device", "depth", "provider"),
    schedulable=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=refusal,
    project_params=from_project,
    report_columns=(
        ReportColumn("keyword", "keyword"),
        ReportColumn("position", "position"),
        ReportColumn("rank_absolute", "rank_absolute"),
        ReportColumn("url", "url"),
        ReportColumn("provider", "provider"),
    ),
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
