"""A plug-in defined outside seojobs, as a user would write one (``SEOJOBS_PLUGINS=tests.acme``):
its own params, structured items, a monthly quota, findings, collected data, report columns,
settings, a poll hint, a table of its own created by a migration that joins seojobs' chain,
and a read of what it collected (served under /v1/projects/{id}/acme/sites by seojobs' one
read router).

Nothing in seojobs names it: the plug-in test proves the seam needs no change in seojobs.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, create_engine, insert
from sqlalchemy.pool import NullPool

from seojobs.engine import (
    DashboardView,
    FieldMatch,
    Filter,
    Finding,
    ItemResult,
    JobContext,
    Key,
    Kind,
    PollHint,
    Quota,
    Read,
    Registry,
    ReportColumn,
)
from seojobs.records import CollectionRecord, ItemRecord
from seojobs.timefmt import rfc3339_or_none

MIGRATIONS = str(Path(__file__).parent / "migrations")
metadata = MetaData()
acme_notes = Table(  # created by migrations/a001_acme_notes.py, not by seojobs
    "acme_notes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", Integer, nullable=False),
    Column("note", String(200), nullable=False),
)


class AcmeSettings(BaseSettings):
    """``SEOJOBS_ACME_THIN_WORDS``: pages under this many words are thin."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_ACME_")
    thin_words: int = 300


class AcmeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    site: str = Field(min_length=1, max_length=200)
    pages: dict[str, int] = Field(min_length=1, description="path -> word count")
    devices: list[str] = Field(default=["mobile"], min_length=1)


def _items(params: AcmeParams) -> list[dict[str, Any]]:
    # Structured items: page x device.
    return [{"path": p, "device": d} for p in params.pages for d in params.devices]


def _cost(params: AcmeParams, items: int) -> dict[str, int]:
    return {"acme_pages": items}


@functools.cache
def _engine(url: str) -> Engine:
    return create_engine(url, poolclass=NullPool)


def _note(url: str, job_id: int, note: str) -> None:
    with _engine(url).begin() as conn:
        conn.execute(insert(acme_notes).values(job_id=job_id, note=note))


async def audit(ctx: JobContext[AcmeParams]) -> None:
    thin = ctx.kind_settings.thin_words

    async def one(item: ItemRecord) -> ItemResult:
        words = ctx.params.pages[item.data["path"]]
        found = (
            (Finding("thin_content", "notice", {"path": item.data["path"], "words": words}),)
            if words < thin
            else ()
        )
        return ItemResult(outcome="audited", result={"words": words}, findings=found)

    await ctx.run_items(one, concurrency=2)
    total = sum(ctx.params.pages.values())
    await ctx.add_findings([Finding("site_words", "info", {"total": total})])
    await asyncio.to_thread(_note, ctx.settings.database_url, ctx.job_id, f"audited {total}")
    await ctx.collect(ctx.params.site, {"pages": len(ctx.params.pages), "words": total})


# Its jobs are read every 20 s, for two minutes at most (served in /v1/job-types).
POLL_HINT = PollHint.every(20, deadline=120)


class AcmeSite(BaseModel):
    """A row of the plug-in's own read: the latest audit of each site."""

    site: str
    pages: int
    words: int = Field(description="Words over every page.")
    job_id: int | None
    collected_at: str | None


def _site(found: CollectionRecord) -> dict[str, Any]:
    data = found.data if isinstance(found.data, dict) else {}
    when = rfc3339_or_none(found.collected_at)
    shown = {"pages": data.get("pages"), "words": data.get("words")}
    return {"site": found.subject, **shown, "job_id": found.job_id, "collected_at": when}


SITES = Read(
    "acme/sites",
    "list_acme_sites",
    "acme_audit",
    AcmeSite,
    to_row=_site,
    filters=(Filter("pages", int, "Only sites of this many pages.", FieldMatch("pages")),),
    orders={
        "words": (Key("words", "number", descending=True),),
        "site": (Key("subject", "subject"),),
    },
    sort_description="Most words first, or sites A to Z.",
    csv=("site", "pages", "words", "collected_at"),
    description="The latest Acme audit of every site, most words first.",
)

KIND: Kind[AcmeParams] = Kind(
    "acme_audit",
    AcmeParams,
    audit,
    items=_items,
    description="Acme's word-count audit (a test plug-in).",
    cost=_cost,
    quotas=(Quota("acme_pages", 10, period="month"),),  # SEOJOBS_QUOTA_ACME_PAGES_MONTHLY
    report_columns=(ReportColumn("words", "words"),),
    queue="acme",
    concurrency=1,
    timeout=60,
    settings=AcmeSettings,
    migrations=(MIGRATIONS,),
    poll_hint=POLL_HINT,
    view=DashboardView("Acme word counts", ("words",)),
    reads=(SITES,),
)


def register(registry: Registry) -> None:
    registry.add(KIND)
