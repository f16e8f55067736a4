"""``index_check``: is each URL in the engine's index, and if not, why might it not be?

Every URL gets two answers side by side: the index provider's verdict (URL Inspection or a
SERP API) and our own indexability diagnostics from fetching the page (status, redirects,
robots.txt, noindex, canonical), so a user sees why a URL is not indexed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.engine.hints import PollHint
from seojobs.engine.kindsettings import moved, of
from seojobs.engine.registry import Kind, Quota, Refusal, ReportColumn
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.fallback import Chain, Unanswered
from seojobs.kinds.urls import SUMMARY_PARAMS, UrlListParams, item_urls, url_count_cost
from seojobs.providers.base import UPSTREAM_ERROR, Checker, CheckResult
from seojobs.records import ItemRecord

NAME = "index_check"


class IndexCheckSettings(BaseSettings):
    """The index checks' own settings (``SEOJOBS_INDEX_CHECK_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_INDEX_CHECK_", extra="ignore")
    concurrency: int = Field(default=8, ge=1, description="URLs a job checks at once.")
    providers: dict[str, list[str]] | None = Field(
        default=None,
        validation_alias=moved("seojobs_index_check_providers", "seojobs_check_providers"),
        description="Index checks, per engine (default: google: url_inspection, serper, "
        "serpapi, dataforseo; bing and yandex: serpapi, dataforseo).",
    )
    diagnostics_only: bool = Field(
        default=False,
        validation_alias=moved(
            "seojobs_index_check_diagnostics_only", "seojobs_check_diagnostics_only"
        ),
        description="Index checks with no index provider for their engine still run: our own "
        "indexability diagnostics per URL, the index verdict `unknown`.",
    )


# Which adapters answer "is it indexed?" per engine, in the order tried
# (SEOJOBS_INDEX_CHECK_PROVIDERS, or SEOJOBS_CHECK_PROVIDERS); without one,
# SEOJOBS_INDEX_CHECK_DIAGNOSTICS_ONLY (or SEOJOBS_CHECK_DIAGNOSTICS_ONLY) still runs the jobs.
CHECKS = ProviderRole(
    "index checks",
    "providers",
    {
        "google": ("url_inspection", "serper", "serpapi", "dataforseo"),
        "bing": ("serpapi", "dataforseo"),
        "yandex": ("serpapi", "dataforseo"),
    },
    runs_without="diagnostics_only",
    settings=IndexCheckSettings,
)


class IndexCheckParams(UrlListParams):
    pass


async def _provider_verdict(
    checkers: Chain[Checker] | None, url: str, engine: str
) -> tuple[CheckResult, list[dict[str, str]]]:
    """The first verdict of the configured providers in order (the next one takes a URL the
    one before failed for a reason not the URL's own), and those that failed first."""
    if checkers is None:  # diagnostics only (SEOJOBS_INDEX_CHECK_DIAGNOSTICS_ONLY): no verdict
        reason = f"no index provider is configured for engine {engine!r}"
        return CheckResult(url, "unknown", "none", detail={"reason": reason}), []
    try:
        answered = await checkers.ask(lambda checker: checker.check(url, engine))
    except Unanswered as none:
        if none.fatal:  # every provider refused its key or ran out: no URL can succeed
            raise JobFailed(none.error.code, none.error.message) from None
        last = none.failed[-1]["provider"]
        failure = CheckResult(url, "failed", last, none.error.code, none.error.message)
        return failure, none.failed[:-1]
    return answered.value, answered.failed


async def run(ctx: JobContext[IndexCheckParams]) -> None:
    params = ctx.params
    checker = (
        None
        if ctx.kind_settings.diagnostics_only
        and providers.chosen(ctx.settings, CHECKS, params.engine) is None
        else Chain(providers.pick_all(ctx.settings, CHECKS, params.engine))
    )

    async def one(item: ItemRecord) -> ItemResult:
        # Fetch the page while the provider answers; if the provider call ends the job, the
        # fetch is cancelled and awaited rather than left running against a closing client.
        inspecting = asyncio.create_task(fetcher.inspect(item.input))
        try:
            verdict, failed = await _provider_verdict(checker, item.input, params.engine)
        except BaseException:
            inspecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await inspecting
            raise
        diagnostics = await inspecting
        result: dict[str, Any] = {
            "provider": verdict.provider,
            "provider_detail": verdict.detail,
            "diagnostics": diagnostics.to_dict(),
        }
        if failed:  # the providers that failed it before the one named (issue 29.6)
            result["failed_over"] = failed
        if verdict.status == "failed":
            return ItemResult.error(
                verdict.error_code or UPSTREAM_ERROR, verdict.error_message or "", result=result
            )
        return ItemResult(outcome=verdict.status, result=result)

    from seojobs.fetch import Fetcher  # the page fetcher (aiohttp) loads at the first job

    try:
        async with Fetcher(ctx.settings) as fetcher:
            await ctx.run_items(one, concurrency=ctx.kind_settings.concurrency)
    finally:
        if checker is not None:
            await checker.aclose()


def refusal(params: IndexCheckParams, settings: Any) -> Refusal | None:
    """No index provider for the engine: refused, unless the deployment takes diagnostics
    alone (SEOJOBS_INDEX_CHECK_DIAGNOSTICS_ONLY)."""
    if of(IndexCheckSettings, settings).diagnostics_only:
        return None
    return providers.refusal(settings, CHECKS, params.engine)


QUOTA = Quota(
    "check",
    10_000,
    description="URLs checked per UTC day (SEOJOBS_QUOTA_CHECK_DAILY).",
)
# The indexability diagnostics of each URL, as URL Inspection names them.
DIAGNOSTICS = (
    "final_url",
    "http_status",
    "redirect_chain",
    "robots_txt_state",
    "indexing_state",
    "page_fetch_state",
    "meta_robots",
    "x_robots_tag",
    "canonical",
    "canonical_state",
    "content_type",
    "fetch_error_kind",
    "verdict_reason",
)

KIND = Kind(
    NAME,
    IndexCheckParams,
    run,
    items=item_urls,
    summary_params=SUMMARY_PARAMS,
    poll_hint=PollHint(),  # seed 000's schedule
    providers=(CHECKS,),
    settings=IndexCheckSettings,
    description="Check whether URLs are indexed, with indexability diagnostics per URL.",
    cost=url_count_cost(QUOTA.name),
    quotas=(QUOTA,),
    report_columns=tuple(ReportColumn(name, f"diagnostics.{name}") for name in DIAGNOSTICS),
    refusal=refusal,
)
