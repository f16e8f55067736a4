"""A fake of DataForSEO's Backlinks API speaking its documented wire format
(docs.dataforseo.com/v3/backlinks): ``summary``, ``backlinks``, ``referring_domains``,
``anchors`` and ``timeseries_new_lost_summary``, each ``POST /v3/backlinks/<name>/live`` with
HTTP Basic auth and a JSON array of one task, answered in the usual envelope.

It answers from a small link index (:attr:`FakeDataForSeoBacklinks.links`): each
:class:`Link` is live or lost; the aggregates (summary, referring domains, anchors) are
computed from it as the index would. A target is a domain or subdomain without scheme or
``www.`` (refused otherwise with 40501, as documented), or a page's absolute URL; the
timeseries takes a domain only. Every request is recorded; ``script(Reply(...))`` answers the
next requests with errors first (tests.fakes.serp).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.responses import JSONResponse

from tests.fakes.serp import FakeDataForSeo, dfs_task, envelope

ENDPOINTS = ("summary", "backlinks", "referring_domains", "anchors", "timeseries_new_lost_summary")


@dataclass
class Link:
    url_from: str
    url_to: str
    anchor: str = "a link"
    dofollow: bool = True
    lost: bool = False
    rank: int = 100
    first_seen: str = "2026-01-10 08:00:00 +00:00"
    item_type: str = "anchor"

    @property
    def domain_from(self) -> str:
        return urlsplit(self.url_from).hostname or ""

    def item(self) -> dict[str, Any]:
        """The documented ``backlinks/live`` item (most fields; a few DataForSEO adds are left
        out, which a reader must not need)."""
        return {
            "type": "backlink",
            "domain_from": self.domain_from,
            "url_from": self.url_from,
            "url_from_https": self.url_from.startswith("https:"),
            "domain_to": urlsplit(self.url_to).hostname,
            "url_to": self.url_to,
            "url_to_https": self.url_to.startswith("https:"),
            "tld_from": self.domain_from.rsplit(".", 1)[-1],
            "is_new": False,
            "is_lost": self.lost,
            "backlink_spam_score": 3,
            "rank": self.rank,
            "page_from_rank": self.rank // 2,
            "domain_from_rank": self.rank * 2,
            "domain_from_platform_type": ["blogs"],
            "domain_from_is_ip": False,
            "domain_from_ip": "203.0.113.7",
            "domain_from_country": "US",
            "page_from_external_links": 12,
            "page_from_internal_links": 40,
            "page_from_size": 63357,
            "page_from_encoding": "utf-8",
            "page_from_language": "en",
            "page_from_title": "A donor page",
            "page_from_status_code": 200,
            "first_seen": self.first_seen,
            "prev_seen": "2026-11-01 08:00:00 +00:00",
            "last_seen": "2026-11-20 08:00:00 +00:00",
            "item_type": self.item_type,
            "attributes": None if self.dofollow else ["nofollow"],
            "dofollow": self.dofollow,
            "original": True,
            "alt": None,
            "image_url": None,
            "anchor": self.anchor,
            "text_pre": "see",
            "text_post": "for more",
            "semantic_location": "article",
            "links_count": 1,
            "group_count": 0,
            "is_broken": False,
            "url_to_status_code": 200,
            "url_to_spam_score": 0,
            "url_to_redirect_target": None,
            "ranked_keywords_info": None,
            "is_indirect_link": False,
            "indirect_link_path": None,
        }


def _on(target: str, subdomains: bool, link: Link) -> bool:
    if "://" in target:
        return link.url_to == target
    host = urlsplit(link.url_to).hostname or ""
    bare = host.removeprefix("www.")
    return bare == target or (subdomains and host.endswith("." + target))


def _group(name: str, key: str, links: list[Link]) -> dict[str, Any]:
    live = [link for link in links if not link.lost]
    return {
        "type": f"backlinks_{name}",
        key: getattr(links[0], "domain_from" if key == "domain" else "anchor"),
        "rank": max(link.rank for link in links),
        "backlinks": len(live),
        "first_seen": min(link.first_seen for link in links),
        "lost_date": None if live else "2026-11-15 00:00:00 +00:00",
        "backlinks_spam_score": 3,
        "broken_backlinks": 0,
        "broken_pages": 0,
        "referring_domains": len({link.domain_from for link in live}),
        "referring_domains_nofollow": len({ln.domain_from for ln in live if not ln.dofollow}),
        "referring_main_domains": len({link.domain_from for link in live}),
        "referring_main_domains_nofollow": 0,
        "referring_ips": len(live),
        "referring_subnets": len(live),
        "referring_pages": len({link.url_from for link in live}),
        "referring_pages_nofollow": 0,
        "referring_links_tld": {},
        "referring_links_types": {"anchor": len(live)},
        "referring_links_attributes": {},
        "referring_links_platform_types": {},
        "referring_links_semantic_locations": {},
        "referring_links_countries": {},
    }


class FakeDataForSeoBacklinks(FakeDataForSeo):
    """DataForSEO (its SERP fake's auth and scripting) with the five backlinks endpoints."""

    def __init__(self, login: str = "dfs-login", password: str = "dfs-password") -> None:
        super().__init__(login, password)
        self.links: list[Link] = []
        for name in ENDPOINTS:
            self.app.add_api_route(
                f"/v3/backlinks/{name}/live", self._endpoint(name), methods=["POST"]
            )

    def _endpoint(self, name: str) -> Any:
        async def endpoint(request: Request) -> Response:
            recorded, scripted = await self._begin(request)
            if scripted is not None:
                return scripted
            if (refused := self.unauthorized(request)) is not None:
                return refused
            tasks = recorded.body
            if not isinstance(tasks, list) or len(tasks) != 1 or not isinstance(tasks[0], dict):
                return JSONResponse(envelope([dfs_task(40000, "Invalid task array.")]))
            return JSONResponse(envelope([self.answer(name, tasks[0])]))

        return endpoint

    def answer(self, name: str, task: dict[str, Any]) -> dict[str, Any]:
        target = task.get("target")
        page = isinstance(target, str) and target.startswith(("http://", "https://"))
        if not isinstance(target, str) or not target or target.startswith("www."):
            return dfs_task(40501, "Invalid Field: 'target'.")
        if "://" in target and not page:
            return dfs_task(40501, "Invalid Field: 'target'.")
        if name == "timeseries_new_lost_summary" and page:
            return dfs_task(40501, "Invalid Field: 'target'. Specify a domain.")
        subdomains = task.get("include_subdomains", True) is not False
        found = [link for link in self.links if _on(target, subdomains, link)]
        if not found:
            return dfs_task(40102, "No Search Results.")
        limit = int(task.get("limit", 100))
        head = {"target": target, "total_count": 0, "items_count": 0, "items": []}
        if name == "summary":
            group = _group("summary", "domain", found)
            result = {k: v for k, v in group.items() if k not in ("type", "domain", "lost_date")}
            result |= {"target": target, "crawled_pages": 10, "info": None, "lost_date": None}
            return dfs_task(20000, "Ok.", [result])
        if name == "backlinks":
            status = task.get("backlinks_status_type", "live")
            listed = [link for link in found if status == "all" or (status == "lost") == link.lost]
            listed.sort(key=lambda link: -link.rank)
            if task.get("mode") == "one_per_domain":
                listed = list({link.domain_from: link for link in reversed(listed)}.values())[::-1]
            items = [link.item() for link in listed[:limit]]
            head |= {"mode": task.get("mode", "as_is"), "search_after_token": "token"}
        elif name in ("referring_domains", "anchors"):
            key = "domain" if name == "referring_domains" else "anchor"
            groups: dict[str, list[Link]] = {}
            for link in found:
                value = link.domain_from if key == "domain" else link.anchor
                groups.setdefault(value, []).append(link)
            rows = [_group(name.removesuffix("s"), key, g) for g in groups.values()]
            rows.sort(key=lambda row: -row["backlinks"])
            items = rows[:limit]
        else:
            head = {
                "target": target,
                "date_from": task.get("date_from"),
                "date_to": task.get("date_to"),
                "group_range": task.get("group_range", "month"),
            }
            items = [
                {
                    "type": "backlinks_timeseries_new_lost_summary",
                    "date": f"{task.get('date_to')} 00:00:00 +00:00",
                    "new_backlinks": sum(1 for link in found if not link.lost),
                    "lost_backlinks": sum(1 for link in found if link.lost),
                    "new_referring_domains": 1,
                    "lost_referring_domains": 0,
                    "new_referring_main_domains": 1,
                    "lost_referring_main_domains": 0,
                }
            ]
        head |= {"total_count": len(items), "items_count": len(items), "items": items}
        return dfs_task(20000, "Ok.", [head])
