"""``web_vitals``: Lighthouse lab data (and CrUX field data) per URL and form factor.

The package: ``params`` (what a request sets), ``runner`` (one Lighthouse run and its
process tree), ``reaper`` (the wrapper that makes a run die with its worker), ``report``
(a Lighthouse report in our shape; the web-vitals thresholds), ``measure`` (the handler).

Chromium is heavy: a worker runs one ``web_vitals`` job at a time (the kind's per-worker
``concurrency``), and that job at most ``SEOJOBS_WEB_VITALS_CONCURRENCY`` Lighthouse runs at
once, so a worker never holds more browsers than that and its other slots stay free for cheap
HTTP checks.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.hints import PollHint
from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import Kind, Quota, ReportColumn
from seojobs.kinds.web_vitals.params import WebVitalsParams, subject
from seojobs.kinds.web_vitals.reads import CHANGES, READS
from seojobs.kinds.web_vitals.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "web_vitals"
__all__ = ["KIND", "NAME", "WebVitalsParams", "subject"]

# The repository's pinned Lighthouse (``npm ci`` in lighthouse/), for a source checkout.
_CHECKOUT_LIGHTHOUSE = (
    Path(__file__).resolve().parents[4] / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
)


class WebVitalsSettings(BaseSettings):
    """``SEOJOBS_WEB_VITALS_CONCURRENCY``: Lighthouse runs one worker holds at once;
    ``..._RUN_TIMEOUT``: seconds one run may take before its process tree is killed;
    ``..._MAX_WAIT_FOR_LOAD``: Lighthouse's own wait for a page's load, seconds;
    ``..._LIGHTHOUSE_PATH``: the Lighthouse CLI; ``..._THROTTLING_METHOD``: Lighthouse's
    (``simulate`` by default; ``provided``: none); ``..._RESOLVER_RULES``: Chromium's
    ``--host-resolver-rules`` outright, instead of the rules derived from the checked address;
    ``..._REPORT_DIR``: keep every run's raw Lighthouse JSON there (for debugging);
    ``..._WARM``: keep Node and Chromium running between a job's URLs (a pool of
    ``CONCURRENCY`` slots running Lighthouse's Node API; ``false``: the CLI once per run);
    ``..._RECYCLE_AFTER``: a warm slot's Chromium is relaunched after that many runs;
    ``..._NODE_PATH``: the Node.js that runs a warm slot; ``..._CHROME_PATH`` (or, as before,
    ``SEOJOBS_CHROME_PATH``): the Chromium it drives."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_WEB_VITALS_", extra="ignore")
    concurrency: int = Field(default=2, ge=1, le=8)
    run_timeout: float = Field(default=120.0, gt=0)
    max_wait_for_load: float = Field(default=45.0, gt=0)
    lighthouse_path: str = str(_CHECKOUT_LIGHTHOUSE)
    throttling_method: str | None = Field(default=None, pattern="^(simulate|devtools|provided)$")
    resolver_rules: str | None = None
    report_dir: str | None = None
    warm: bool = True
    recycle_after: int = Field(default=20, ge=1)
    node_path: str = shutil.which("node") or "/usr/bin/node"
    chrome_path: str = Field(
        default="/usr/bin/chromium",
        validation_alias=moved("seojobs_web_vitals_chrome_path", "seojobs_chrome_path"),
        description="The Chromium Lighthouse drives (Debian's `chromium`; never a downloaded one).",
    )


async def _run(ctx: JobContext[WebVitalsParams]) -> None:
    from seojobs.kinds.web_vitals import measure  # the run-time code: a worker's first run

    await measure.run(ctx)


def _items(params: WebVitalsParams) -> list[str]:
    return list(params.urls)


def _cost(params: WebVitalsParams, items: int) -> dict[str, int]:
    runs = items * len(params.factors())
    return {DAILY.name: runs, MONTHLY.name: runs}


DAILY, MONTHLY = Quota.day_and_month(
    "web_vitals", "Lighthouse runs (URL x form factor)", daily=200, monthly=3_000
)

KIND: Kind[WebVitalsParams] = Kind(
    NAME,
    WebVitalsParams,
    _run,
    items=_items,
    poll_hint=PollHint.every(15),  # seed 001: web vitals checks, 15 s
    description="Lighthouse lab data (performance score, LCP, CLS, TBT, FCP, Speed Index, "
    "TTFB; opportunities) per URL and form factor in Debian's Chromium, with CrUX field data "
    "when a key is set; read with GET /v1/projects/{id}/web-vitals.",
    schedulable=True,  # opt-in: seed 001 runs it when started (issue 29.8)
    collection_opt_in=True,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    report_columns=(
        ReportColumn("mobile_score", "form_factors.mobile.lab.performance_score"),
        ReportColumn("desktop_score", "form_factors.desktop.lab.performance_score"),
    ),
    queue="default",
    concurrency=1,
    settings=WebVitalsSettings,
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
