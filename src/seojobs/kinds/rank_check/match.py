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


def same_page(url: str, target: str) -> bool:
    try:
        diff = differences(parse(target), parse(url))
    except ValueError:
        return False
    return diff is not None and PAGE_OPTIONS.allows(diff)


def first_match(organic: tuple[Organic, ...], target: str, match: str) -> Organic | None:
    """The best-placed organic result that is the target's (the lowest ``rank_group``)."""
    if match == "exact_url":
        found = [o for o in organic if same_page(o.url, target)]
    else:
        host = target_host(target)
        found = [o for o in organic if on_domain(o.url, host)]
    return min(found, key=lambda o: o.rank_group, default=None)
