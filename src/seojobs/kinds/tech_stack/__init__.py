"""``tech_stack``: which technologies a site runs, from its pages' fingerprints.

The package: ``params`` (what a request sets), ``patterns`` (one fingerprint pattern,
compiled safely), ``database`` (the webappanalyzer-format database, loaded once per change),
``install`` (``seojobs fingerprints update``), ``page`` (what a response shows), ``matcher``
(patterns, then requires / implies / excludes), ``report`` (page results, site collections),
``lookup`` (the handler).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.kindsettings import moved, of
from seojobs.engine.registry import Kind, Quota, Refusal, ReportColumn
from seojobs.kinds.tech_stack.params import TechStackParams, subject
from seojobs.kinds.tech_stack.reads import READS
from seojobs.kinds.tech_stack.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "tech_stack"
__all__ = ["KIND", "NAME", "TechStackParams", "TechStackSettings", "subject"]


def _default_fingerprints_path() -> str:
    # Beside the default database: the directory a deployment keeps its data in.
    return str(Path.cwd() / "seojobs-fingerprints.json")


class TechStackSettings(BaseSettings):
    """``SEOJOBS_TECH_STACK_CONCURRENCY``: pages one lookup fetches at once;
    ``..._PATTERN_TIMEOUT``: seconds one fingerprint search may take before it is skipped
    (and not tried again by that worker); ``..._PAGE_BUDGET``: seconds of matching per page;
    ``..._MAX_CHARS``: characters of HTML (and of inline scripts) searched per page;
    ``..._FINGERPRINTS_PATH`` (or, as before, ``SEOJOBS_FINGERPRINTS_PATH``): the database."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_TECH_STACK_", extra="ignore")
    concurrency: int = Field(default=4, ge=1)
    pattern_timeout: float = Field(default=0.5, gt=0)
    page_budget: float = Field(default=30.0, gt=0)
    max_chars: int = Field(default=200_000, ge=1_000)
    fingerprints_path: str = Field(
        default_factory=_default_fingerprints_path,
        validation_alias=moved("seojobs_tech_stack_fingerprints_path", "seojobs_fingerprints_path"),
        description="The tech-stack fingerprint database `seojobs fingerprints update` "
        "installs (default: ./seojobs-fingerprints.json); API and workers read it.",
    )


async def _run(ctx: JobContext[TechStackParams]) -> None:
    from seojobs.kinds.tech_stack import lookup  # the run-time code: a worker's first lookup

    await lookup.run(ctx)


def _items(params: TechStackParams) -> list[str]:
    return list(params.urls)


def _cost(_params: TechStackParams, items: int) -> dict[str, int]:
    return {DAILY.name: items, MONTHLY.name: items}


def _refusal(_params: TechStackParams, settings: Any) -> Refusal | None:
    """Refused at creation while this server has no database: the user learns at once
    (a worker without one fails the job with the same code)."""
    path = of(TechStackSettings, settings).fingerprints_path
    if Path(path).is_file():
        return None
    from seojobs.kinds.tech_stack.database import FINGERPRINTS_MISSING, FingerprintsMissing

    return Refusal(FINGERPRINTS_MISSING, str(FingerprintsMissing(path)))


DAILY, MONTHLY = Quota.day_and_month(
    "tech_lookups", "Tech-stack lookups (URLs)", daily=1_000, monthly=20_000
)

KIND: Kind[TechStackParams] = Kind(
    NAME,
    TechStackParams,
    _run,
    items=_items,
    description="Detect the technologies of pages (webappanalyzer fingerprints: headers, "
    "cookies, meta, scripts, HTML, URL); read with GET /v1/projects/{id}/tech-stack.",
    schedulable=False,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    refusal=_refusal,
    report_columns=(ReportColumn("http_status", "status"), ReportColumn("final_url", "final_url")),
    settings=TechStackSettings,
    reads=READS,
    view=VIEW,
)
