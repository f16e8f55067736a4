"""``backlink_analysis``: the links a provider's index knows for a domain or page (seed 001:
"Backlink analysis and refresh"), from DataForSEO's Backlinks API.

The package: ``params`` (the target and what to list), ``run`` (the handler, the comparison
with the previous analysis, the refusal at creation), ``reads`` (links, lost links, referring
domains, anchors, history), ``changes`` (the webhook events ``backlink_analysis.new`` and
``.lost``), ``view`` (the dashboard's), ``monitor`` (found links monitored by the refresh).
The adapter is ``seojobs.providers.dataforseo_backlinks``. Each completed job stores the
analysis as the project's collection for its target;
``GET /v1/projects/{id}/backlinks/analysis`` reads it. Found links join the pairs the
project's ``backlink_refresh`` collection checks with
``POST /v1/projects/{id}/backlinks/analysis/monitor`` (``monitor``, ``services.monitored``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seojobs.engine.hints import PollHint
from seojobs.engine.registry import Kind, Quota
from seojobs.kinds.backlink_analysis.changes import CHANGES
from seojobs.kinds.backlink_analysis.declared import refusal, subject
from seojobs.kinds.backlink_analysis.params import BacklinkAnalysisParams, from_project
from seojobs.kinds.backlink_analysis.reads import READS
from seojobs.kinds.backlink_analysis.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "backlink_analysis"
__all__ = ["KIND", "NAME", "BacklinkAnalysisParams", "subject"]


async def _run(ctx: JobContext[BacklinkAnalysisParams]) -> None:
    from seojobs.kinds.backlink_analysis import run  # the run-time code: its first analysis

    await run.run(ctx)


def _cost(_params: BacklinkAnalysisParams, _items: int) -> dict[str, int]:
    return {DAILY.name: 1, MONTHLY.name: 1}  # one analysis, whatever its size


DAILY, MONTHLY = Quota.day_and_month(
    "backlink_analyses", "Backlink analyses", daily=50, monthly=500
)

KIND: Kind[BacklinkAnalysisParams] = Kind(
    NAME,
    BacklinkAnalysisParams,
    _run,
    poll_hint=PollHint.every(30),  # seed 001: backlink work, 30 s
    description="The backlinks a provider index knows for a domain or page, with referring "
    "domains, anchors, and the links new and lost since the previous analysis "
    "(GET /v1/projects/{id}/backlinks/analysis).",
    summary_params=("domain", "url", "mode", "status", "limit"),
    schedulable=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=refusal,
    project_params=from_project,
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
