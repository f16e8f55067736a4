"""``index_submit``: send URLs to the engine's submission provider, in provider-sized batches.

A batch is recorded as soon as the provider answers, and the job re-checks it still holds its
claim before every batch, so a rescued or cancelled job never sends an already-recorded URL
again; only the batch in flight when a worker dies can be sent twice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.engine.hints import PollHint
from seojobs.engine.kindsettings import moved
from seojobs.engine.registry import FollowUp, Kind, Quota, Refusal
from seojobs.engine.roles import ProviderRole
from seojobs.kinds import providers
from seojobs.kinds.index_check import NAME as CHECK
from seojobs.kinds.index_check import IndexCheckParams
from seojobs.kinds.index_check import refusal as check_refusal
from seojobs.kinds.urls import SUMMARY_PARAMS, UrlListParams, item_urls, url_count_cost
from seojobs.providers.base import MALFORMED_RESPONSE, ProviderError, SubmitResult, Submitter
from seojobs.records import ItemRecord

NAME = "index_submit"


class IndexSubmitSettings(BaseSettings):
    """The index submissions' own settings (``SEOJOBS_INDEX_SUBMIT_...``)."""

    model_config = SettingsConfigDict(env_prefix="SEOJOBS_INDEX_SUBMIT_", extra="ignore")
    providers: dict[str, list[str]] | None = Field(
        default=None,
        validation_alias=moved("seojobs_index_submit_providers", "seojobs_submit_providers"),
        description="Index submission, per engine (default: google_indexing for google, "
        "indexnow for bing and yandex).",
    )


# Which adapters submit to each engine, in the order tried (SEOJOBS_INDEX_SUBMIT_PROVIDERS, or
# SEOJOBS_SUBMIT_PROVIDERS).
SUBMISSION = ProviderRole(
    "submission",
    "providers",
    {"google": ("google_indexing",), "bing": ("indexnow",), "yandex": ("indexnow",)},
    settings=IndexSubmitSettings,
)


class IndexSubmitParams(UrlListParams):
    checker: int | None = Field(
        default=None, ge=1, le=5, description="Check the URLs' index status N days later."
    )


def _verdict(result: SubmitResult) -> ItemResult:
    detail = {"provider": result.provider, **result.detail}
    if result.ok:
        return ItemResult(outcome="submitted", result=detail)
    return ItemResult.error(
        result.error_code or "provider_rejected", result.error_message or "", result=detail
    )


async def _send(
    ctx: JobContext[IndexSubmitParams], submitter: Submitter, batch: list[ItemRecord]
) -> None:
    await ctx.ensure_held()
    urls = [item.input for item in batch]
    try:
        results = await submitter.submit(urls)
    except ProviderError as exc:
        if exc.fatal:
            raise JobFailed(exc.code, exc.message) from None
        results = [SubmitResult(u, False, submitter.name, exc.code, exc.message) for u in urls]
    by_url = {r.url: r for r in results}
    verdicts = []
    for item in batch:
        found = by_url.get(item.input)
        if found is None:
            found = SubmitResult(
                item.input,
                False,
                submitter.name,
                MALFORMED_RESPONSE,
                "the provider's answer did not mention this URL",
            )
        verdicts.append((item, _verdict(found)))
    await ctx.record_many(verdicts)


async def run(ctx: JobContext[IndexSubmitParams]) -> None:
    params = ctx.params
    submitter: Submitter = providers.pick(ctx.settings, SUBMISSION, params.engine)
    try:
        batch: list[ItemRecord] = []
        async for item in ctx.open_items():
            batch.append(item)
            if len(batch) >= submitter.max_batch:
                await _send(ctx, submitter, batch)
                batch = []
        if batch:
            await _send(ctx, submitter, batch)
    finally:
        await providers.close(submitter)


def follow_ups(params: IndexSubmitParams, job_id: int, settings: Any) -> list[FollowUp]:
    """``checker`` = N: one index check of the same URLs, N days (SEOJOBS_DAY_SECONDS) later."""
    if not params.checker:
        return []
    return [
        FollowUp(
            CHECK,
            {"urls": params.urls, "engine": params.engine},
            delay_seconds=params.checker * settings.day_seconds,
            title=f"follow-up check of submission {job_id}",
        )
    ]


def refusal(params: IndexSubmitParams, settings: Any) -> Refusal | None:
    """No submission provider for the engine, or none to run the follow-up check it asks for."""
    found = providers.refusal(settings, SUBMISSION, params.engine)
    if found is None and params.checker:
        check = check_refusal(IndexCheckParams(urls=params.urls, engine=params.engine), settings)
        found = replace(check, field="checker") if check else None
    return found


QUOTA = Quota(
    "submit",
    10_000,
    description="URLs submitted per UTC day (SEOJOBS_QUOTA_SUBMIT_DAILY).",
)

KIND = Kind(
    NAME,
    IndexSubmitParams,
    run,
    items=item_urls,
    summary_params=SUMMARY_PARAMS,
    poll_hint=PollHint(),  # seed 000's schedule
    providers=(SUBMISSION,),
    settings=IndexSubmitSettings,
    description="Submit URLs for crawling (IndexNow, Google Indexing API).",
    cost=url_count_cost(QUOTA.name),
    quotas=(QUOTA,),
    follow_ups=follow_ups,
    refusal=refusal,
)
