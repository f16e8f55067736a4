"""Competitors beside every position: the top results a check saw, each competitor's position,
and the share of voice of the target and its competitors over the keywords checked.

Share of voice is click-through-weighted: each first-page position is worth the share of
clicks a result there gets on average (``CTR``, positions 1 to 10; nothing past the first
page), each keyword weighs the same (no search volumes), and a site's share is the clicks its
results would get (every position it holds counts) over the clicks of every first-page result
of every keyword checked: the shares of all sites add up to 1. Sites are told apart by the
public suffix list (``seojobs.providers.domains``): a result counts for the target or a
competitor when its host is that domain or a subdomain of it; ``top_domains`` groups results
by registrable domain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from seojobs.kinds.rank_check.declared import FIRST_PAGE
from seojobs.kinds.rank_check.match import Host, first_match, hosts_of, url_host
from seojobs.providers import domains
from seojobs.providers.ranks import Organic, Serp

# Average organic click-through rate by position, 1 to 10: a rounded curve of the public
# studies of desktop CTR (position 1 about 30 %, halving by position 3, 1.5 % at 10).
CTR = (0.30, 0.16, 0.10, 0.07, 0.05, 0.04, 0.03, 0.025, 0.02, 0.015)
assert len(CTR) == FIRST_PAGE
TOP_DOMAINS = 10  # the sites with the largest shares shown beside the target's


def weight(position: int | None) -> float:
    """The clicks a result at ``position`` gets on average (0 past the first page)."""
    if position is None or not 1 <= position <= FIRST_PAGE:
        return 0.0
    return CTR[position - 1]


def _registrable(host: str | None) -> str | None:
    """A result's registrable domain (its host when it has none, e.g. a bare suffix)."""
    if host is None:
        return None
    return domains.registrable(host) or host


def top_results(
    serp: Serp, count: int, hosts: Sequence[Host] | None = None
) -> list[dict[str, Any]]:
    """The first ``count`` organic results as stored: position, registrable domain, URL,
    title and what the result showed. ``hosts``: ``hosts_of(serp.organic)`` when the caller
    has it."""
    seen = hosts_of(serp.organic) if hosts is None else hosts
    pairs = sorted(zip(serp.organic, seen, strict=True), key=lambda pair: pair[0].rank_group)
    return [
        {
            "position": o.rank_group,
            "domain": _registrable(host[0] if host else None),
            "url": o.url,
            "title": o.title,
            "features": list(o.features),
        }
        for o, host in pairs[:count]
    ]


def competitor_positions(
    organic: tuple[Organic, ...], competitors: list[str], hosts: Sequence[Host] | None = None
) -> list[dict[str, Any]]:
    """Each competitor's best position (null when not within the results), in the order given.
    ``hosts``: ``hosts_of(organic)`` when the caller has it."""
    seen = hosts_of(organic) if hosts is None else hosts
    found = []
    for domain in competitors:
        hit = first_match(organic, domain, "domain", seen)
        found.append(
            {
                "domain": domain,
                "position": hit.rank_group if hit else None,
                "url": hit.url if hit else None,
            }
        )
    return found


def _share(clicks: float, total: float) -> float:
    return round(clicks / total, 4) if total else 0.0


def share_of_voice(
    rows: Iterable[Mapping[str, Any]], target: str, competitors: list[str]
) -> dict[str, Any]:
    """The shares of the target's site, each competitor and the largest sites over ``rows``
    (one ranking per keyword, each with its ``top_results``)."""
    sites = [target, *competitors]
    matchers = [(site, domains.Site(site)) for site in sites]  # each worked out once
    clicks = dict.fromkeys(sites, 0.0)
    ranked = dict.fromkeys(sites, 0)
    by_domain: dict[str, float] = defaultdict(float)
    total = 0.0
    keywords = 0
    for row in rows:
        keywords += 1
        seen: set[str] = set()
        for result in row.get("top_results") or []:
            worth = weight(result["position"])
            if not worth:
                continue
            total += worth
            by_domain[result["domain"] or ""] += worth
            host = url_host(result["url"])  # once per result, not once per site
            if host is None:
                continue
            host = domains.site(host)
            for site, matcher in matchers:
                if matcher.holds(host):
                    clicks[site] += worth
                    seen.add(site)
        for site in seen:
            ranked[site] += 1

    def entry(site: str) -> dict[str, Any]:
        return {
            "domain": site,
            "share": _share(clicks[site], total),
            "keywords_on_first_page": ranked[site],
        }

    largest = sorted(by_domain.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_DOMAINS]
    return {
        "keywords": keywords,
        "target": entry(target),
        "competitors": [entry(c) for c in competitors],
        "top_domains": [{"domain": d, "share": _share(c, total)} for d, c in largest if d],
    }
