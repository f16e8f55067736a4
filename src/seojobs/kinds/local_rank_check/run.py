"""The handler: one Maps (or local pack) search per keyword and point (an item), the
business's listing in it, then the project's local rankings collected, one row per keyword.

Items run with bounded concurrency (``SEOJOBS_LOCAL_RANK_CHECK_CONCURRENCY``); a job rescued
after a crash resumes at its unfinished searches. Where several providers are configured,
one failing a search for a reason that is not the search's own hands it to the next
(``seojobs.kinds.fallback``); a refused key or spent credits of every provider end the job.
When the items are done, every keyword whose centre search got an answer is collected
(subject ``{where}/{language}/{surface}/{keyword}``), with its grid, if any, summed up
(``grid``): ``GET /v1/projects/{id}/local-rankings`` serves the newest of each,
``/local-rankings/history`` all of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.kinds import providers
from seojobs.kinds.fallback import Chain, Unanswered
from seojobs.kinds.local_rank_check import grid
from seojobs.kinds.local_rank_check.declared import (
    ENGINE,
    LOCAL_RANKS,
    _usable,
    centre_point,
    subject,
)
from seojobs.kinds.local_rank_check.match import Business, find, website_site
from seojobs.kinds.local_rank_check.params import LocalRankCheckParams
from seojobs.providers.base import NOT_CONFIGURED, ProviderError
from seojobs.providers.dataforseo_local import DataForSeoLocal
from seojobs.providers.local_ranks import LocalQuery, LocalSerp, LocalSource
from seojobs.providers.serpapi_local import SerpApiLocal
from seojobs.providers.serper_local import SerperLocal
from seojobs.records import ItemRecord
from seojobs.timefmt import rfc3339

FOUND, NOT_FOUND = "found", "not_found"
MAX_ABOVE = 20  # the businesses above the project's kept per keyword


ADAPTERS: dict[str, type[SerpApiLocal] | type[DataForSeoLocal] | type[SerperLocal]] = {
    "serpapi": SerpApiLocal,
    "dataforseo": DataForSeoLocal,
    "serper": SerperLocal,
}


def _sources(params: LocalRankCheckParams, settings: Any) -> Chain[LocalSource]:
    names = _usable(params, settings)
    if not names:  # configured when created, gone since
        raise JobFailed(NOT_CONFIGURED, providers.missing(settings, LOCAL_RANKS, ENGINE) or "")
    built: list[LocalSource] = []
    try:
        for name in names:
            built.append(ADAPTERS[name](settings))
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None
    return Chain(built)


def _query(item: ItemRecord, params: LocalRankCheckParams) -> tuple[dict[str, Any], LocalQuery]:
    data = item.data if isinstance(item.data, dict) else json.loads(item.input)
    query = LocalQuery(
        data["keyword"],
        params.language,
        location=data.get("location"),
        latitude=data.get("latitude"),
        longitude=data.get("longitude"),
        zoom=params.zoom,
        surface=params.surface,
    )
    return data, query


def business_of(params: LocalRankCheckParams) -> Business:
    return Business(params.place_id, params.domain, tuple(params.names))


def _above(serp: LocalSerp, position: int | None) -> list[dict[str, Any]]:
    """The businesses listed above ``position`` (every one listed when not found)."""
    ranked = sorted(serp.places, key=lambda p: p.position)
    above = [p for p in ranked if position is None or p.position < position][:MAX_ABOVE]
    return [
        {
            "position": p.position,
            "title": p.title,
            "place_id": p.place_id,
            "domain": website_site(p.website) if p.website else None,
            "rating": p.rating,
            "reviews": p.reviews,
            "categories": list(p.categories),
        }
        for p in above
    ]


def searched(
    data: Mapping[str, Any], params: LocalRankCheckParams, provider: str, serp: LocalSerp
) -> dict[str, Any]:
    """One search's row: the business's listing (position null when not listed), what it
    shows, and the businesses above it."""
    hit = find(serp.places, business_of(params))
    place, rule = hit if hit else (None, None)
    return {
        "keyword": data["keyword"],
        "point": data.get("point", 0),
        "latitude": data.get("latitude"),
        "longitude": data.get("longitude"),
        "position": place.position if place else None,
        "matched_by": rule,
        "title": place.title if place else None,
        "place_id": (place.place_id or place.cid) if place else None,
        "rating": place.rating if place else None,
        "reviews": place.reviews if place else None,
        "categories": list(place.categories) if place else [],
        "website": place.website if place else None,
        "address": place.address if place else None,
        "above": _above(serp, place.position if place else None),
        "results": len(serp.places),
        "provider": provider,
        "provider_detail": serp.detail,
    }


async def run(ctx: JobContext[LocalRankCheckParams]) -> None:
    params = ctx.params
    chain = _sources(params, ctx.settings)

    async def one(item: ItemRecord) -> ItemResult:
        data, query = _query(item, params)
        await ctx.ensure_held()  # each search is billed: not for a job taken away
        try:
            answered = await chain.ask(lambda source: source.local(query))
        except Unanswered as none:
            if none.fatal:  # refused keys, no credits: no other search can succeed
                raise JobFailed(none.error.code, none.error.message) from None
            result = {
                "keyword": query.keyword,
                "point": data.get("point", 0),
                "provider": none.failed[-1]["provider"],
                "failed_over": none.failed,
            }
            return ItemResult.error(none.error.code, none.error.message, result=result)
        row = searched(data, params, answered.provider, answered.value)
        row["failed_over"] = answered.failed
        return ItemResult(outcome=FOUND if row["position"] else NOT_FOUND, result=row)

    try:
        await ctx.run_items(one, concurrency=ctx.kind_settings.concurrency)
    finally:
        await chain.aclose()
    ctx.result = await _collect(ctx) | {"provider": chain.first.name}


def _where(params: LocalRankCheckParams) -> dict[str, Any]:
    return {
        "location": params.location,
        "latitude": params.latitude,
        "longitude": params.longitude,
        "zoom": params.zoom,
        "language": params.language,
        "surface": params.surface,
        "business": {
            "place_id": params.place_id,
            "domain": params.domain,
            "names": list(params.names),
        },
    }


def keyword_row(
    params: LocalRankCheckParams, searches: list[dict[str, Any]], failed: int
) -> dict[str, Any] | None:
    """A keyword's collection: its centre search, and its grid summed up; None when the centre
    search got no answer."""
    centre = next((s for s in searches if s["point"] == centre_point(params)), None)
    if centre is None:
        return None
    row = {k: v for k, v in centre.items() if k not in ("point", "latitude", "longitude")}
    row |= _where(params) | {"keyword": centre["keyword"], "checked_at": _now()}
    row["grid"] = None
    if params.grid is not None:
        ordered = sorted(searches, key=lambda s: s["point"])
        row["grid"] = {
            "size": params.grid.size,
            "radius_km": params.grid.radius_km,
            "points": [
                {"latitude": s["latitude"], "longitude": s["longitude"], "position": s["position"]}
                for s in ordered
            ],
            "points_failed": failed,
            **grid.summary([s["position"] for s in ordered]),
        }
    return row


async def _collect(ctx: JobContext[LocalRankCheckParams]) -> dict[str, Any]:
    """Collect every keyword whose centre search got an answer; a job where none did fails
    with the first search's error."""
    params = ctx.params
    by_keyword: dict[str, list[dict[str, Any]]] = {k.casefold(): [] for k in params.keywords}
    failed: dict[str, int] = dict.fromkeys(by_keyword, 0)
    first_error: tuple[str, str] | None = None
    answered_by: dict[str, int] = {}
    failed_over: dict[str, int] = {}
    async for item in ctx.items():
        row = item.result or {}
        key = str(row.get("keyword") or json.loads(item.input)["keyword"]).casefold()
        if item.outcome in (FOUND, NOT_FOUND):
            by_keyword.setdefault(key, []).append(row)
            answered_by[row["provider"]] = answered_by.get(row["provider"], 0) + 1
            for failure in row.get("failed_over") or []:
                name = failure["provider"]
                failed_over[name] = failed_over.get(name, 0) + 1
        else:
            failed[key] = failed.get(key, 0) + 1
            if first_error is None and item.error_code:
                first_error = (item.error_code, item.error_message or item.error_code)
    counts = {FOUND: 0, NOT_FOUND: 0, "failed": 0}
    rows: list[tuple[str, dict[str, Any]]] = []
    for keyword in params.keywords:
        made = keyword_row(
            params, by_keyword.get(keyword.casefold(), []), failed.get(keyword.casefold(), 0)
        )
        if made is None:
            counts["failed"] += 1
            continue
        counts[FOUND if made["position"] else NOT_FOUND] += 1
        rows.append((subject(params, keyword), made))
    await ctx.collect_many(rows)  # a chunk per transaction, not one each
    if not counts[FOUND] + counts[NOT_FOUND]:
        raise JobFailed(*(first_error or ("upstream_error", "no search got an answer")))
    fallback = {"answered_by": answered_by, "failed_over": failed_over} if failed_over else {}
    searches = params.points * len(params.keywords)
    return {"keywords": len(params.keywords), **counts, "searches": searches, **fallback}


def _now() -> str:
    return rfc3339(datetime.now(UTC))
