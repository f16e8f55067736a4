"""Which organic result is the target's: the first on its domain, or the first that is its page.

Result URLs are normalised as the index checkers normalise them (``seojobs.providers.
urlmatch``: case, IDN, default ports, dot segments, escapes). ``domain``: a result counts when
its host is the target's host or a subdomain of it, a leading ``www.`` ignored on both sides
(``example.com`` matches ``www.example.com`` and ``blog.example.com``; ``blog.example.com``
matches neither ``example.com`` nor ``www.example.com``). Sites are told apart by the public
suffix list (``seojobs.providers.domains``): a public suffix such as ``co.uk`` matches no one
else's host, and a result's ``domain`` is its registrable domain.
``exact_url``: the same page, scheme, ``www.``, a trailing slash and tracking parameters
ignored (a rank tracker asks "is my page there", whichever spelling Google chose).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from seojobs.providers import domains, urlmatch
from seojobs.providers.ranks import Organic
from seojobs.providers.urlmatch import MatchOptions, differences, parse

PAGE_OPTIONS = MatchOptions(trailing_slash=True, scheme=True, www=True, tracking_params=True)


def target_host(target: str) -> str:
    """The host a target names (a domain as given, a URL's host), lower-case, without www."""
    host = parse(target).host if "://" in target else target
    return domains.site(host)


def url_host(url: str) -> str | None:
    """``url``'s normalised host, None when it is no URL (``urlmatch.host``: no full parse for
    a plain http(s) URL; a check sees more result URLs than any cache of parses would hold)."""
    try:
        return urlmatch.host(url)
    except ValueError:
        return None


def on_domain(url: str, host: str) -> bool:
    """Is ``url`` on ``host`` (``www.``-less) or one of its subdomains?"""
    found = url_host(url)
    return found is not None and domains.on_site(found, host)


Host = tuple[str, str] | None  # a result's (host, host as a site), None for no URL


def hosts_of(organic: Sequence[Organic]) -> list[Host]:
    """Each result's host (``url_host``) and that host as a site (``domains.site``), read once
    per SERP for the target, each competitor and the top results (each read them all)."""
    found: list[Host] = []
    for result in organic:
        host = url_host(result.url)
        found.append(None if host is None else (host, domains.site(host)))
    return found


@functools.lru_cache(maxsize=1024)
def _site(target: str) -> domains.Site:
    """What ``on_domain(url, target_host(target))`` matches a result's host against."""
    return domains.Site(target_host(target))


def same_page(url: str, target: str) -> bool:
    try:
        diff = differences(parse(target), parse(url))
    except ValueError:
        return False
    return diff is not None and PAGE_OPTIONS.allows(diff)


def first_match(
    organic: tuple[Organic, ...], target: str, match: str, hosts: Sequence[Host] | None = None
) -> Organic | None:
    """The best-placed organic result that is the target's (the lowest ``rank_group``);
    ``hosts``: ``hosts_of(organic)`` when the caller has it."""
    if match == "exact_url":
        found = [o for o in organic if same_page(o.url, target)]
    else:
        on = _site(target)
        seen = hosts_of(organic) if hosts is None else hosts
        found = [o for o, h in zip(organic, seen, strict=True) if h and on.holds(h[1])]
    return min(found, key=lambda o: o.rank_group, default=None)
