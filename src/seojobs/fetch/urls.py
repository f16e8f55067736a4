"""Parsing and comparing the URLs the fetcher is given and redirected to."""

from __future__ import annotations

import httpx

from seojobs.fetch.errors import InvalidURL, UnsupportedScheme
from seojobs.fetch.guard import parse_ip_host

SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_url(raw: str) -> httpx.URL:
    """An absolute http(s) URL without its fragment; raises InvalidURL / UnsupportedScheme."""
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InvalidURL(f"invalid URL {raw!r}: {exc}") from exc
    if not url.scheme:
        raise InvalidURL(f"not an absolute URL: {raw!r}")
    if url.scheme not in SCHEMES:
        raise UnsupportedScheme(f"unsupported scheme {url.scheme!r} in {raw!r}")
    if not url.host:
        raise InvalidURL(f"URL has no host: {raw!r}")
    parse_ip_host(url.raw_host.decode("ascii"))  # numeric hosts must be valid IPv4 (WHATWG)
    return url.copy_with(fragment=None)


def normalize_url(url: httpx.URL | str) -> str:
    """A comparison key: lowercase scheme and host, default port and fragment dropped.

    Used for redirect-loop detection and canonical self-reference; the path and query are
    compared as sent, because servers may treat ``/A`` and ``/a`` as different pages.
    """
    parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    scheme = parsed.scheme.lower()
    port = parsed.port
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    parsed = parsed.copy_with(scheme=scheme, port=port, fragment=None)
    text = str(parsed)
    if parsed.raw_path in (b"", b"/") and not text.endswith("/"):
        text += "/"
    return text


def origin_of(url: httpx.URL) -> str:
    """scheme://host[:port] with the default port dropped (the robots.txt cache key)."""
    port = url.port if url.port not in (None, _DEFAULT_PORTS.get(url.scheme)) else None
    host = url.raw_host.decode("ascii")
    shown = f"[{host}]" if ":" in host else host
    return f"{url.scheme}://{shown}" + (f":{port}" if port else "")
