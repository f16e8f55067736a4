"""``index_submit``: send URLs to the engine's submission provider, in provider-sized batches.

A batch is recorded as soon as the provider answers, and the job re-checks it still holds its
claim before every batch, so a rescued or cancelled job never sends an already-recorded URL
again; only the batch in flight when a worker dies can be sent twice.
"""

from __future__ import annotations

from pydantic import Field

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.engine.registry import Kind
from seojobs.kinds import providers
from seojobs.kinds.urls import SUMMARY_PARAMS, UrlListParams, item_urls
from seojobs.providers.base import MALFORMED_RESPONSE, ProviderError, SubmitResult, Submitter
from seojobs.store.records import ItemRecord

NAME = "index_submit"


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


async def _send(ctx: JobContext, submitter: Submitter, batch: list[ItemRecord]) -> None:
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


async def run(ctx: JobContext) -> None:
    params = ctx.params
    assert isinstance(params, IndexSubmitParams)
    submitter = providers.submitter_for(ctx.settings, params.engine)
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


KIND = Kind(
    NAME,
    IndexSubmitParams,
    run,
    items=item_urls,
    summary_params=SUMMARY_PARAMS,
    description="Submit URLs for crawling (IndexNow, Google Indexing API).",
)
