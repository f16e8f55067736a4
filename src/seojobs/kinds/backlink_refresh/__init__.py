"""``backlink_refresh``: does each donor page still link to its target? (seed 001: backlinks
run on a schedule.)

The package: ``params`` (the pairs, the match mode, the subject of a pair), ``links`` (a
donor's ``<a>``/``<area>`` links), ``match`` (url or domain matching), ``check`` (one pair's
result and history fields), ``run`` (the handler). Each completed job stores every pair as a
collection (subject: normalised donor and target); ``GET /v1/projects/{id}/backlinks`` and
``…/backlinks/history`` read them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.hints import PollHint
from seojobs.engine.registry import ItemInput, Kind, Quota, ReportColumn
from seojobs.kinds.backlink_refresh.params import LINK_STATUSES, BacklinkRefreshParams, subject
from seojobs.kinds.backlink_refresh.reads import CHANGES, READS
from seojobs.kinds.backlink_refresh.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "backlink_refresh"
__all__ = ["KIND", "LINK_STATUSES", "NAME", "BacklinkRefreshParams", "subject"]


class BacklinkRefreshSettings(BaseSettings):
    """``SEOJOBS_BACKLINK_REFRESH_CONCURRENCY``: pairs one job checks at once (the fetcher's
    per-host limits still apply)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_BACKLINK_REFRESH_", extra="ignore")
    concurrency: int = Field(default=8, ge=1)


async def _run(ctx: JobContext[BacklinkRefreshParams]) -> None:
    from seojobs.kinds.backlink_refresh import run  # the run-time code: its first refresh

    await run.run(ctx)


def _items(params: BacklinkRefreshParams) -> list[ItemInput]:
    return [{"donor": p.donor, "target": p.target} for p in params.links]


def _item_key(value: ItemInput) -> str:
    if isinstance(value, str):
        return value
    return subject(str(value.get("donor", "")), str(value.get("target", "")))


def _cost(_params: BacklinkRefreshParams, items: int) -> dict[str, int]:
    return {DAILY.name: items, MONTHLY.name: items}


DAILY, MONTHLY = Quota.day_and_month(
    "backlink_checks", "Backlink checks (donor x target)", daily=2_000, monthly=40_000
)

KIND: Kind[BacklinkRefreshParams] = Kind(
    NAME,
    BacklinkRefreshParams,
    _run,
    items=_items,
    item_key=_item_key,
    poll_hint=PollHint.every(30),  # seed 001: backlink work, 30 s
    description="Check that donor pages still link to their targets (rel, anchor, image "
    "links, page nofollow, donor status, indexability and canonical); read with "
    "GET /v1/projects/{id}/backlinks.",
    summary_params=("match", "duplicates_removed"),
    schedulable=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    report_columns=tuple(
        ReportColumn(name, name)
        for name in (
            "link_status",
            "href_raw",
            "anchor_text",
            "nofollow",
            "link_count_to_target",
            "status_code",
            "indexable",
            "canonical",
        )
    ),
    settings=BacklinkRefreshSettings,
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
