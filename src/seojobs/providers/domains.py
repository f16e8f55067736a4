"""Registrable domains, from the public suffix list: which site a host belongs to.

Wherever a domain is matched (a rank's result, an AI answer's citation, a backlink's donor
or target) a host counts for a domain when it is the domain or one of its subdomains, a
leading ``www.`` ignored. The public suffix list says where a site begins: ``example.co.uk``
is a site, ``co.uk`` is not (so a "domain" ``co.uk`` matches no one else's host, and
``www.co.uk`` keeps its ``www``), and results are grouped by their registrable domain
(``blog.example.co.uk`` and ``shop.example.co.uk`` are both ``example.co.uk``).

The list is ``tldextract``'s bundled snapshot, never fetched at run time: no suffix list URL
and no cache directory, so no network call and no file written. The list's private section
counts too (``user.github.io`` is its own site, as each blog on a hosting platform is). A
name under no listed suffix (``example.test``, ``localhost``) takes its last label as the
suffix, as the list's own default rule ``*`` says; an IP address is its own site.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tldextract


def fresh_extractor() -> tldextract.TLDExtract:
    """The bundled snapshot only: an empty URL list is never fetched, and no cache is written
    (``cache_dir=None`` wins over ``TLDEXTRACT_CACHE``)."""
    import tldextract  # with requests and filelock: made when a host is first matched

    return tldextract.TLDExtract(
        cache_dir=None,
        suffix_list_urls=(),
        fallback_to_snapshot=True,
        include_psl_private_domains=True,
    )


_extractor = functools.cache(fresh_extractor)


def _clean(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=8192)
def registrable(host: str) -> str | None:
    """The registrable domain of ``host`` (``blog.example.co.uk``: ``example.co.uk``); the
    address itself for an IP; None for a public suffix itself (``co.uk``) or an empty name."""
    host = _clean(host)
    if not host:
        return None
    if _is_ip(host):
        return host
    parts = _extractor().extract_str(host)
    if parts.suffix:
        return f"{parts.domain}.{parts.suffix}" if parts.domain else None
    labels = host.split(".")  # no listed suffix: the default rule "*"
    return ".".join(labels[-2:]) if len(labels) > 1 else None


def is_public_suffix(host: str) -> bool:
    """Whether ``host`` is a suffix under which others register names (``com``, ``co.uk``)."""
    return bool(_clean(host)) and registrable(host) is None


def site(host: str) -> str:
    """A host as a site: lower-case, no trailing dot, without a leading ``www.`` unless what
    remains is a public suffix (``www.co.uk`` stays)."""
    host = _clean(host)
    bare = host.removeprefix("www.")
    return bare if bare != host and registrable(bare) is not None else host


def on_site(host: str, domain: str) -> bool:
    """Whether ``host`` is the site ``domain`` or one of its subdomains (``www.`` ignored on
    both sides). A public suffix as ``domain`` matches only itself: ``a.co.uk`` is not on
    ``co.uk``."""
    return Site(domain).holds(site(host))


class Site:
    """:func:`on_site` for one ``domain`` and many hosts, the domain's part (its site, whether
    it is a public suffix) worked out once: a rank check matches every result of every
    keyword against the target and each competitor."""

    __slots__ = ("_dot", "_listed", "name")

    def __init__(self, domain: str) -> None:
        self.name = site(domain)
        self._dot = "." + self.name
        self._listed = registrable(self.name) is not None

    def holds(self, host_site: str) -> bool:
        """``on_site(host, domain)`` for a host already made a site (``site(host)``)."""
        if host_site == self.name:
            return True
        return host_site.endswith(self._dot) and self._listed and not _is_ip(host_site)
