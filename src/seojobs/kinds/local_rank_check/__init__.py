"""``local_rank_check``: where a business is listed in Google Maps or the local pack for
keywords at a place (a place name, or a point and a zoom), optionally over a grid of points
around it, from SerpApi, DataForSEO or Serper (seed 001: local SEO runs on a schedule; a read
never starts one).

The package: ``params`` (what a request sets), ``match`` (which listing is the business's),
``grid`` (the points and their summary), ``run`` (the handler, the provider chain and the
refusal at creation), ``reads`` (the reads and ``local_rank.changed``), ``view`` (the
dashboard's). Adapters live in ``seojobs.providers`` (``serpapi_local``, ``dataforseo_local``,
``serper_local``). Each search (a keyword at a point) is an item and a quota unit; each
completed job stores a row per keyword as the project's local rankings, read with
``GET /v1/projects/{id}/local-rankings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seojobs.engine.hints import PollHint
from seojobs.engine.registry import Kind, Quota, ReportColumn
from seojobs.kinds.local_rank_check.declared import (
    LOCAL_RANKS,
    LocalRankCheckSettings,
    items,
    refusal,
    subject,
)
from seojobs.kinds.local_rank_check.params import LocalRankCheckParams, from_project
from seojobs.kinds.local_rank_check.reads import CHANGES, READS
from seojobs.kinds.local_rank_check.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "local_rank_check"
__all__ = ["KIND", "NAME", "LocalRankCheckParams", "subject"]


async def _run(ctx: JobContext[LocalRankCheckParams]) -> None:
    from seojobs.kinds.local_rank_check import run  # the run-time code, at its first job

    await run.run(ctx)


def _cost(_params: LocalRankCheckParams, searches: int) -> dict[str, int]:
    return {DAILY.name: searches, MONTHLY.name: searches}  # one search per keyword and point


DAILY, MONTHLY = Quota.day_and_month(
    "local_rank_searches", "Local rank searches", daily=1_000, monthly=20_000
)

KIND: Kind[LocalRankCheckParams] = Kind(
    NAME,
    LocalRankCheckParams,
    _run,
    items=items,
    poll_hint=PollHint.every(30),  # seed 001: rank checks (local too), 30 s
    providers=(LOCAL_RANKS,),
    settings=LocalRankCheckSettings,
    description="Google Maps / local pack positions of a business for keywords at a place, "
    "optionally over a grid (GET /v1/projects/{id}/local-rankings).",
    summary_params=("location", "latitude", "longitude", "zoom", "surface", "provider"),
    schedulable=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=refusal,
    project_params=from_project,
    report_columns=(
        ReportColumn("keyword", "keyword"),
        ReportColumn("point", "point"),
        ReportColumn("position", "position"),
        ReportColumn("title", "title"),
        ReportColumn("rating", "rating"),
        ReportColumn("reviews", "reviews"),
        ReportColumn("provider", "provider"),
    ),
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
