"""The handler: one SERP per keyword (an item), the target's position in it, then the project's
rankings collected, one row per keyword.

Items run with bounded concurrency (``SEOJOBS_RANK_CHECK_CONCURRENCY``); a job rescued after a
crash resumes at its unfinished keywords. A provider failure for one keyword (its retries
spent, a refused or malformed answer) fails that item with the provider's code; a refused key
or spent credits end the job (``JobFailed``), as index checks do. When the items are done,
every keyword that got an answer is collected (subject ``{device}/{location}/{language}/
{keyword}``), so ``GET /v1/projects/{id}/rankings`` serves the newest position of each and
``/rankings/history`` all of them. Each row keeps the top results the check saw and each
competitor's position; the check's share of voice over its keywords (``voice``) is collected
too (subject ``share-of-voice/{device}/{location}/{language}``), served by
``/rankings/share-of-voice``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.kinds import providers
from seojobs.kinds.fallback import Chain, Unanswered
from seojobs.kinds.rank_check.declared import ENGINE, FIRST_PAGE, RANKS, subject
from seojobs.kinds.rank_check.match import first_match, hosts_of, target_host
from seojobs.kinds.rank_check.params import RankCheckParams
from seojobs.kinds.rank_check.voice import (
    competitor_positions,
    share_of_voice,
    top_results,
)
from seojobs.providers import serper_ranks
from seojobs.providers.base import NOT_CONFIGURED, REJECTED, ProviderError
from seojobs.providers.dataforseo_ranks import DataForSeoRanks
from seojobs.providers.ranks import RankQuery, RankSource, Serp
from seojobs.providers.serper_ranks import SerperRanks
from seojobs.records import ItemRecord
from seojobs.timefmt import rfc3339

RANKED, NOT_RANKED = "ranked", "not_ranked"
VOICE = "share-of-voice"  # the first part of a share of voice's subject
ADAPTERS: dict[str, type[SerperRanks] | type[DataForSeoRanks]] = {
    "serper": SerperRanks,
    "dataforseo": DataForSeoRanks,
}


def _unsupported(name: str, params: RankCheckParams) -> str | None:
    """Why ``name`` cannot make the job's searches (Serper: mobile, an unknown country code)."""
    if name != "serper":
        return None
    for device, location, _language in params.markets():
        why = serper_ranks.unsupported(device, location)
        if why is not None:
            return why
    return None


def _names(params: RankCheckParams, settings: Any) -> list[str]:
    """The providers a job asks, in order: the one its params name, else every configured one
    in SEOJOBS_RANK_CHECK_PROVIDERS that can make the search (the next one answers an item
    the one before failed for a reason not the item's own: ``seojobs.kinds.fallback``)."""
    names: list[str]
    if params.provider is not None:
        names = [params.provider]
    else:
        order = RANKS.order(settings, ENGINE)
        names = [n for n in order if n in ADAPTERS and providers.configured(settings, n)]
    if not names:  # configured when created, gone since
        raise JobFailed(NOT_CONFIGURED, providers.missing(settings, RANKS, ENGINE) or "")
    usable = [n for n in names if _unsupported(n, params) is None]
    if not usable:
        raise JobFailed(REJECTED, _unsupported(names[0], params) or "")
    return usable


def _sources(params: RankCheckParams, settings: Any) -> Chain[RankSource]:
    built: list[RankSource] = []
    try:
        for name in _names(params, settings):
            built.append(ADAPTERS[name](settings))
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None
    return Chain(built)


def _query(item: ItemRecord, depth: int) -> RankQuery:
    data = item.data if isinstance(item.data, dict) else json.loads(item.input)
    return RankQuery(data["keyword"], data["location"], data["language"], data["device"], depth)


def ranking(
    query: RankQuery, params: RankCheckParams, provider: str, serp: Serp, top: int = FIRST_PAGE
) -> dict[str, Any]:
    """One keyword's row: the target's best position in the SERP (null past the depth), each
    competitor's, and the ``top`` first results."""
    hosts = hosts_of(serp.organic)  # each result's host read once, for every match below
    hit = first_match(serp.organic, params.target, params.match, hosts)
    return {
        "keyword": query.keyword,
        "location": query.location,
        "language": query.language,
        "device": query.device,
        "target": params.target,
        "match": params.match,
        "position": hit.rank_group if hit else None,
        "rank_absolute": hit.rank_absolute if hit else None,
        "url": hit.url if hit else None,
        "title": hit.title if hit else None,
        "features": list(serp.features),
        "competitors": competitor_positions(serp.organic, params.competitors, hosts),
        "top_results": top_results(serp, top, hosts),
        "results": len(serp.organic),
        "depth": query.depth,
        "provider": provider,
        "provider_detail": serp.detail,  # e.g. DataForSEO's task id, cost and check_url
        "checked_at": rfc3339(datetime.now(UTC)),
    }


async def run(ctx: JobContext[RankCheckParams]) -> None:
    params = ctx.params
    chain = _sources(params, ctx.settings)

    async def one(item: ItemRecord) -> ItemResult:
        query = _query(item, params.depth)
        await ctx.ensure_held()  # each search is billed: not for a job taken away
        try:
            answered = await chain.ask(lambda source: source.serp(query))
        except Unanswered as none:
            if none.fatal:  # refused keys, no credits: no other keyword can succeed
                raise JobFailed(none.error.code, none.error.message) from None
            result: dict[str, Any] = {
                "keyword": query.keyword,
                "provider": none.failed[-1]["provider"],
            }
            if len(none.failed) > 1:
                result["failed_over"] = none.failed[:-1]
            return ItemResult.error(none.error.code, none.error.message, result=result)
        top = ctx.kind_settings.top_results
        row = ranking(query, params, answered.provider, answered.value, top)
        row["failed_over"] = answered.failed
        return ItemResult(outcome=RANKED if row["position"] else NOT_RANKED, result=row)

    try:
        await ctx.run_items(one, concurrency=ctx.kind_settings.concurrency)
    finally:
        await chain.aclose()
    ctx.result = await _collect(ctx) | {"provider": chain.first.name}


Market = tuple[str, int | str, str]  # device, location, language


def voice_subject(device: str, location: int | str, language: str) -> str:
    """The subject of a share of voice: one per market (device, location, language)."""
    return f"{VOICE}/{device}/{location}/{language}"


async def _collect(ctx: JobContext[RankCheckParams]) -> dict[str, Any]:
    """Collect every keyword that got an answer, then the share of voice of each market;
    a job where none did fails with the first keyword's error."""
    counts = {RANKED: 0, NOT_RANKED: 0, "failed": 0}
    first_error: tuple[str, str] | None = None
    answered: dict[Market, list[dict[str, Any]]] = {}
    by: dict[str, dict[str, int]] = {"answered_by": {}, "failed_over": {}}
    rows: list[tuple[str, dict[str, Any]]] = []
    async for item in ctx.items():
        row = item.result or {}
        if item.outcome in (RANKED, NOT_RANKED):
            counts[item.outcome] += 1
            key = subject(row["device"], row["location"], row["language"], row["keyword"])
            rows.append((key, row))
            market = (row["device"], row["location"], row["language"])
            answered.setdefault(market, []).append(row)
            _count_providers(row, by)
        else:
            counts["failed"] += 1
            if first_error is None and item.error_code:
                first_error = (item.error_code, item.error_message or item.error_code)
    if not counts[RANKED] + counts[NOT_RANKED] and first_error is not None:
        raise JobFailed(*first_error)
    await ctx.collect_many(rows)  # a chunk per transaction, not one each
    shares = await _voices(ctx, answered)
    fallback = by if by["failed_over"] else {}  # named only when a provider handed over
    return {"keywords": sum(counts.values()), **counts, **shares, **fallback}


async def _voices(
    ctx: JobContext[RankCheckParams], answered: dict[Market, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Collect each market's share of voice: over the project's tracked keywords of that
    market when it tracks any (each one's ranking from this check, else its latest
    collected one; keywords checked but not tracked left out), else over the keywords
    checked. The result names the share of the one market, or of each."""
    params = ctx.params
    tracked = await _tracked_by_market(ctx) if answered else {}
    shares: dict[str, float] = {}
    for market, rows in answered.items():
        over, basis = rows, "checked"
        if market in tracked:
            over, basis = await _tracked_rows(ctx, market, tracked[market], rows), "tracked"
        if not over:
            continue
        voice = share_of_voice(over, target_host(params.target), params.competitors)
        device, location, language = market
        where = {"device": device, "location": location, "language": language}
        data = where | voice | {"keywords_basis": basis, "checked_at": _now()}
        await ctx.collect(voice_subject(*market), data)
        shares[f"{device}/{location}/{language}"] = voice["target"]["share"]
    if len(shares) == 1:
        return {"share_of_voice": next(iter(shares.values()))}
    return {"share_of_voice_by_market": shares} if shares else {}


async def _tracked_by_market(ctx: JobContext[RankCheckParams]) -> dict[Market, list[str]]:
    project = await ctx.project()
    found: dict[Market, list[str]] = {}
    for tracked in project.keywords:
        market = (tracked.device, tracked.location, tracked.language)
        found.setdefault(market, []).append(tracked.keyword)
    return found


async def _tracked_rows(
    ctx: JobContext[RankCheckParams],
    market: Market,
    keywords: list[str],
    checked: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    mine = {row["keyword"].casefold(): row for row in checked}
    rows = []
    for keyword in keywords:
        row = mine.get(keyword.casefold())
        if row is None:
            row = await ctx.published(subject(*market, keyword))
        if row is not None:
            rows.append(row)
    return rows


def _count_providers(row: Mapping[str, Any], by: dict[str, dict[str, int]]) -> None:
    """Keywords per provider that answered, and per provider that failed before one did."""
    answered = by["answered_by"]
    answered[row["provider"]] = answered.get(row["provider"], 0) + 1
    for failure in row.get("failed_over") or []:
        failed = by["failed_over"]
        failed[failure["provider"]] = failed.get(failure["provider"], 0) + 1


def _now() -> str:
    return rfc3339(datetime.now(UTC))
