"""Does a link point at the target? ``url``: the same page, spelled loosely; ``domain``: the
target's site.

``url`` compares both sides normalised by :mod:`seojobs.providers.urlmatch` (case, default
port, escapes, dot segments, fragment, query order) and tolerates what a backlink check should
not care about: http vs https, ``www.`` vs the bare host, a trailing slash, tracking
parameters (``utm_*``, ``gclid``, ...). ``domain`` takes any link to the target's host or one
of its subdomains, ``www.`` ignored, sites told apart by the public suffix list
(``seojobs.providers.domains``: ``co.uk`` is no one's site).
"""

from __future__ import annotations

from seojobs.providers import domains, urlmatch


def _parsed(url: str) -> urlmatch.NormalURL | None:
    try:
        return urlmatch.parse(url)
    except ValueError:
        return None


def host_of(url: str) -> str | None:
    found = _parsed(url)
    return found.host if found is not None else None


def on_site(host: str, domain: str) -> bool:
    """Whether ``host`` is the site ``domain`` or one of its subdomains (``www.`` ignored)."""
    return domains.on_site(host, domain)


def same_page(link: str, target: str) -> bool:
    """Whether ``link`` is ``target`` up to scheme, ``www.``, a trailing slash and tracking
    parameters."""
    wanted, found = _parsed(target), _parsed(link)
    if wanted is None or found is None:
        return False
    return urlmatch.differences(wanted, found) is not None


def matches(link: str, target: str, mode: str) -> bool:
    if mode == "domain":
        found, wanted = host_of(link), host_of(target)
        return found is not None and wanted is not None and on_site(found, wanted)
    return same_page(link, target)
