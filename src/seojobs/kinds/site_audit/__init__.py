"""``site_audit``: crawl a site and report its SEO issues (seed 001's first job type).

The package: ``params`` (what a request sets), ``crawler`` (the handler and its frontier),
``page`` (what is read from one page), ``checks`` (the catalogue and page rules),
``sitewide`` (checks over every stored page, and the summary a project's reads serve).
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.hints import HOUR, PollHint
from seojobs.engine.registry import Kind, Quota, ReportColumn
from seojobs.engine.views import DashboardView, JobView
from seojobs.kinds.site_audit.pagetable import MIGRATIONS, PAGE_TABLE
from seojobs.kinds.site_audit.params import (
    AuditSettings,
    SiteAuditParams,
    Thresholds,
    from_project,
    page_key,
)
from seojobs.kinds.site_audit.reads import CHANGES, ISSUES, JOB_READS, PAGES, READS

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "site_audit"
# The repository's pinned Lighthouse (``npm ci`` in lighthouse/), for a source checkout: its
# node_modules holds the puppeteer-core that ``render: "js"`` drives Chromium with.
_CHECKOUT_LIGHTHOUSE = (
    Path(__file__).resolve().parents[4] / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
)
__all__ = [
    "KIND",
    "NAME",
    "AuditSettings",
    "SiteAuditParams",
    "Thresholds",
    "catalogue",
]


class SiteAuditSettings(BaseSettings):
    """``SEOJOBS_SITE_AUDIT_CONCURRENCY``: pages one audit fetches at once (the fetcher's
    per-host limit and delay still apply: ``SEOJOBS_FETCH_HOST_CONCURRENCY``/``_DELAY``);
    ``..._EXTERNAL_LINKS_PER_HOST``: how many URLs of one other site its links get checked;
    ``..._EXTERNAL_LINKS_PER_PAGE`` and ``..._EXTERNAL_LINKS_PER_AUDIT``: how many other sites'
    URLs one audit checks at all (issue 25.4b); ``..._MAX_SECONDS``: how long one audit runs."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_SITE_AUDIT_", extra="ignore")
    concurrency: int = Field(default=8, ge=1)
    external_links_per_host: int = Field(default=20, ge=0)
    # Each external URL checked costs up to three requests (its host's robots.txt once, HEAD,
    # GET when HEAD is refused): the budget grows with the pages paid for, up to a cap.
    external_links_per_page: int = Field(
        default=10,
        ge=0,
        description="External URLs an audit checks per page of its max_pages (its quota cost).",
    )
    external_links_per_audit: int = Field(
        default=2000, ge=0, description="External URLs one audit checks at most, whatever its size."
    )
    max_seconds: float = Field(
        default=7200,
        ge=0,
        description="An audit running longer (since it first started) fails with code timeout; "
        "0: no limit.",
    )
    sitemap_max_bytes: int = Field(
        default=52_428_800,
        ge=1,
        description="A sitemap file is read up to this many bytes uncompressed (a gzip one "
        "opened no further): the sitemaps protocol's 50 MB; past it, sitemap_too_large.",
    )
    # render: "js" (issue 30.1): warm Chromium renderers, as web vitals keeps them.
    render_concurrency: int = Field(
        default=2, ge=1, le=8, description='Chromiums one `render: "js"` audit renders with.'
    )
    render_timeout: float = Field(
        default=20.0,
        gt=0,
        le=300,
        description="Seconds one page may take to render (load, then its network settling); "
        "past it the page is audited from its raw HTML (render_failed).",
    )
    render_recycle_after: int = Field(
        default=200, ge=1, description="A renderer's Chromium is relaunched after this many pages."
    )
    render_resolver_rules: str | None = Field(
        default=None,
        description="Chromium's --host-resolver-rules outright, instead of the rules derived "
        "from the address the policy checked (tests: loopback only).",
    )
    render_chrome_path: str = Field(
        default="/usr/bin/chromium", description="The Chromium pages are rendered in."
    )
    render_node_path: str = Field(
        default=shutil.which("node") or "/usr/bin/node", description="The Node.js it runs under."
    )
    render_lighthouse_path: str = Field(
        default=str(_CHECKOUT_LIGHTHOUSE),
        description="The pinned Lighthouse CLI, whose node_modules holds puppeteer-core.",
    )


async def _run(ctx: JobContext[SiteAuditParams]) -> None:
    from seojobs.kinds.site_audit import crawler  # the run-time code: a worker's first audit

    await crawler.run(ctx)


def catalogue(thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    """Every check (``GET /v1/audit-checks``), its threshold as ``thresholds`` set it."""
    from seojobs.kinds.site_audit import checks  # the rules' own module: read on first use

    return checks.catalogue(thresholds)


class _OfEachCheck(Mapping[str, str]):
    """A field of each check by its code, read from the catalogue when first looked up (the
    dashboard's first audit): the catalogue is the rules', run-time code."""

    def __init__(self, field: str) -> None:
        self._field = field

    @functools.cached_property
    def _by_code(self) -> dict[str, str]:
        from seojobs.kinds.site_audit.checks import CATALOGUE

        return {check.code: str(getattr(check, self._field)) for check in CATALOGUE}

    def __getitem__(self, code: str) -> str:
        return self._by_code[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_code)

    def __len__(self) -> int:
        return len(self._by_code)


def _items(params: SiteAuditParams) -> list[dict[str, Any]]:
    return [{"url": page_key(params.start_url), "depth": 0}]


def _key(value: Any) -> str:
    return str(value["url"]) if isinstance(value, dict) else str(value)


def _cost(params: SiteAuditParams, _items: int) -> dict[str, int]:
    # Charged when the audit is created, so the most it may crawl: the platform charges
    # before a job runs, and refunds nothing.
    return {DAILY.name: params.max_pages, MONTHLY.name: params.max_pages}


DAILY, MONTHLY = Quota.day_and_month(
    "audit_pages", "Audit pages (max_pages charged per audit)", daily=50_000, monthly=500_000
)

# The audit's own view (issue 28): its health score and trend, its issues by severity down to
# the pages each affects, its pages, and what changed since the previous audit.
VIEW = DashboardView(
    title="Site audits",
    job=JobView(
        "Site audit",
        score="health_score",
        score_label="Health score",
        history=READS[0].operation_id,
        issues=ISSUES.operation_id,
        explanations=_OfEachCheck("description"),
        counts="issues_by_code",
        severities=_OfEachCheck("severity"),
        pages=PAGES.operation_id,
        compare=True,
        rerun=True,
    ),
)

KIND: Kind[SiteAuditParams] = Kind(
    NAME,
    SiteAuditParams,
    _run,
    items=_items,
    item_key=_key,
    poll_hint=PollHint(30, 60, 2 * HOUR),  # seed 001: 30-60 s; a large site can take an hour
    description="Crawl a site from start_url and report its SEO issues (GET /v1/audit-checks).",
    summary_params=("start_url", "max_pages", "max_depth"),
    schedulable=True,  # opt-in: seed 001 runs it when started (issue 29.8)
    collection_opt_in=True,
    cost=_cost,
    project_params=from_project,
    project_settings=True,
    quotas=(DAILY, MONTHLY),
    report_columns=tuple(
        ReportColumn(name, name)
        for name in ("status", "depth", "title", "indexable", "indexability_reason", "words")
    ),
    settings=SiteAuditSettings,
    tables=(PAGE_TABLE,),
    migrations=(MIGRATIONS,),
    reads=READS,
    changes=CHANGES,
    job_reads=JOB_READS,
    view=VIEW,
)
