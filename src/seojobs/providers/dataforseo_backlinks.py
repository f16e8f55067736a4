"""DataForSEO Backlinks API: the links its index knows for a domain, subdomain or page.

Wire format (docs.dataforseo.com/v3/backlinks): ``POST {base}/v3/backlinks/<endpoint>/live``
with HTTP Basic ``login:password`` (the SERP checker's settings) and a JSON array of one task;
the usual envelope (``status_code`` at request and task level, 20000 ok), the answer in
``tasks[0].result[0]``. ``target`` is a domain or subdomain without scheme and ``www.``, or a
page's absolute URL. An analysis is up to five calls:

- ``summary`` ``{target, include_subdomains}``: ``backlinks``, ``referring_domains``,
  ``referring_main_domains``, ``broken_backlinks``, ``rank``, ``first_seen``, ...;
- ``backlinks`` ``{target, mode, limit, include_subdomains, backlinks_status_type,
  order_by}``: ``items[]`` with ``url_from``, ``domain_from``, ``url_to``, ``anchor``,
  ``item_type``, ``dofollow``, ``attributes``, ``first_seen``, ``last_seen``, ``is_new``,
  ``is_lost``, ``is_broken``, ``rank``, ``domain_from_rank``, ``page_from_rank``;
- ``referring_domains`` and ``anchors`` ``{target, limit, include_subdomains, order_by}``:
  ``items[]`` with ``domain`` (or ``anchor``), ``backlinks``, ``referring_domains``
  (anchors), ``rank``, ``first_seen``, ``lost_date``;
- ``timeseries_new_lost_summary`` ``{target, date_from, date_to, group_range}`` (a domain
  only): ``items[]`` with ``date``, ``new_backlinks``, ``lost_backlinks``,
  ``new_referring_domains``, ``lost_referring_domains``.

Status mapping, as for keyword research: HTTP 401 / 40100 ``provider_auth_failed``; HTTP 402 /
402xx ``provider_quota_exhausted``; 40202 (rate) and 5xxxx retried, then ``upstream_error``;
40102 "No Search Results" is nothing known; any other code ``provider_rejected``. What the
index answers is bounded here: strings cut, lists at most what was asked for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any

from seojobs.providers.base import malformed
from seojobs.providers.dataforseo import DataForSeoTasks, json_object
from seojobs.providers.keywords import whole

NAME = "dataforseo"
BASE = "/v3/backlinks"
MAX_TEXT = 2048  # a URL or an anchor, as stored
MAX_ATTRIBUTES = 10


@dataclass(frozen=True)
class Lookup:
    target: str  # a host (no scheme, no www.) or a page's absolute URL
    include_subdomains: bool
    mode: str  # as_is | one_per_domain | one_per_anchor
    status: str  # all | live | lost
    limit: int  # backlinks, 1..1000
    summaries: int  # referring domains and anchors, 1..1000
    period_days: int  # new and lost per day over this many days (a domain only)
    today: date


@dataclass(frozen=True)
class FoundLink:
    url_from: str
    domain_from: str
    url_to: str
    anchor: str | None
    item_type: str | None
    dofollow: bool
    rel: tuple[str, ...]
    first_seen: str | None
    last_seen: str | None
    is_new: bool
    is_lost: bool
    is_broken: bool
    rank: int | None
    domain_from_rank: int | None
    page_from_rank: int | None

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["rel"] = list(self.rel)
        return found


@dataclass(frozen=True)
class Analysis:
    summary: dict[str, Any]
    links: list[FoundLink]
    referring_domains: list[dict[str, Any]]
    anchors: list[dict[str, Any]]
    timeline: list[dict[str, Any]]


SUMMARY_FIELDS = (
    "backlinks",
    "referring_domains",
    "referring_main_domains",
    "referring_domains_nofollow",
    "referring_pages",
    "referring_ips",
    "broken_backlinks",
    "broken_pages",
    "rank",
    "backlinks_spam_score",
)
GROUP_FIELDS = (
    "backlinks",
    "referring_domains",
    "referring_pages",
    "broken_backlinks",
    "rank",
    "backlinks_spam_score",
)
TIMELINE_FIELDS = (
    "new_backlinks",
    "lost_backlinks",
    "new_referring_domains",
    "lost_referring_domains",
)


def text(value: object, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def flag(value: object) -> bool:
    return value is True


def counts(entry: dict[str, Any], names: tuple[str, ...]) -> dict[str, int | None]:
    return {name: whole(entry.get(name)) for name in names}


def first_result(result: Any) -> dict[str, Any] | None:
    """``result[0]`` (None when the index knows nothing: "No Search Results" or no result)."""
    if result is None:
        return None
    if not isinstance(result, list):
        raise malformed(NAME, "result is not a list")
    return json_object(result[0], "result[0]") if result else None


def items_of(result: Any, most: int) -> list[dict[str, Any]]:
    first = first_result(result)
    if first is None:
        return []
    items = first.get("items") or []  # null: none
    if not isinstance(items, list):
        raise malformed(NAME, "items is not a list")
    return [json_object(item, "an item") for item in items[:most]]


def link_of(item: dict[str, Any]) -> FoundLink | None:
    """One backlink; None for an item without the page it is on or the URL it points to."""
    url_from, url_to = text(item.get("url_from")), text(item.get("url_to"))
    if not url_from or not url_to:
        return None
    attributes = item.get("attributes")
    rel = (
        tuple(a.lower()[:40] for a in attributes[:MAX_ATTRIBUTES] if isinstance(a, str) and a)
        if isinstance(attributes, list)
        else ()
    )
    return FoundLink(
        url_from=url_from,
        domain_from=text(item.get("domain_from"), 253) or "",
        url_to=url_to,
        anchor=text(item.get("anchor")),
        item_type=text(item.get("item_type"), 40),
        dofollow=flag(item.get("dofollow")),
        rel=rel,
        first_seen=text(item.get("first_seen"), 40),
        last_seen=text(item.get("last_seen"), 40),
        is_new=flag(item.get("is_new")),
        is_lost=flag(item.get("is_lost")),
        is_broken=flag(item.get("is_broken")),
        rank=whole(item.get("rank")),
        domain_from_rank=whole(item.get("domain_from_rank")),
        page_from_rank=whole(item.get("page_from_rank")),
    )


def group_of(item: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        name: text(item.get(name)),
        **counts(item, GROUP_FIELDS),
        "first_seen": text(item.get("first_seen"), 40),
        "lost_date": text(item.get("lost_date"), 40),
    }


class DataForSeoBacklinks(DataForSeoTasks):
    async def analyse(self, lookup: Lookup) -> Analysis:
        common = {"target": lookup.target, "include_subdomains": lookup.include_subdomains}
        summary_row = first_result(await self.task(f"{BASE}/summary/live", common))
        links_task = {
            **common,
            "mode": lookup.mode,
            "limit": lookup.limit,
            "backlinks_status_type": lookup.status,
            "order_by": ["rank,desc"],
        }
        found = items_of(await self.task(f"{BASE}/backlinks/live", links_task), lookup.limit)
        grouped = {**common, "limit": lookup.summaries, "order_by": ["backlinks,desc"]}
        domains = items_of(
            await self.task(f"{BASE}/referring_domains/live", grouped), lookup.summaries
        )
        anchors = items_of(await self.task(f"{BASE}/anchors/live", grouped), lookup.summaries)
        timeline: list[dict[str, Any]] = []
        if "/" not in lookup.target:  # a domain: the index's new and lost per day
            period = {
                "target": lookup.target,
                "include_subdomains": lookup.include_subdomains,
                "date_from": (lookup.today - timedelta(days=lookup.period_days)).isoformat(),
                "date_to": lookup.today.isoformat(),
                "group_range": "day",
            }
            days = items_of(
                await self.task(f"{BASE}/timeseries_new_lost_summary/live", period),
                lookup.period_days + 1,
            )
            timeline = [
                {"date": text(d.get("date"), 40), **counts(d, TIMELINE_FIELDS)} for d in days
            ]
        summary = counts(summary_row or {}, SUMMARY_FIELDS) | {
            "first_seen": text((summary_row or {}).get("first_seen"), 40)
        }
        return Analysis(
            summary=summary,
            links=[link for link in map(link_of, found) if link is not None],
            referring_domains=[group_of(d, "domain") for d in domains],
            anchors=[group_of(a, "anchor") for a in anchors],
            timeline=timeline,
        )
