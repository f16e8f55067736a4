"""Parsing and comparing the URLs the fetcher is given and redirected to.

Plain URLs (lowercase ``http``/``https``, an ASCII host name or IPv4 address, no userinfo,
path and query made only of characters that stay as they are, no dot segments) are parsed by
one regular expression; anything else (IDN hosts, IPv6 literals, characters to percent-encode,
dot segments, odd ports, uppercase schemes) goes through :mod:`seojobs.fetch.rfc3986`. Both
give the same spelling, the one reports store as ``final_url`` and compare canonicals with;
``tests/unit/test_fetch_urls.py`` checks them side by side (and against httpx, which spelled
these URLs before).

Two rules of our own: credentials (``user:password@``) are dropped, so they are never sent nor
stored, and port 0 is invalid.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

from seojobs.fetch import rfc3986
from seojobs.fetch.errors import InvalidURL, UnsupportedScheme
from seojobs.fetch.guard import parse_ip_host

SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_PORT = 65535

# Characters a path / a query keeps as they are (RFC 3986 pchar, no escapes needed).
_PCHARS = r"A-Za-z0-9\-._~!$&'()*+,;=:@"
_ESCAPED = r"%[0-9A-Fa-f]{2}"
_PATH = rf"(?:/(?:[{_PCHARS}/]|{_ESCAPED})*)?"
_QUERY = rf"(?:[{_PCHARS}/?]|{_ESCAPED})*"
_SIMPLE = re.compile(
    rf"(https?)://([A-Za-z0-9.\-]+)(?::([1-9][0-9]{{0,4}}))?({_PATH})(?:\?({_QUERY}))?"
    r"(?:#[\x21-\x7e]*)?"
)
# A reference that only replaces the path (and query) of its base: ``/p/2?x``.
_PATH_REF = re.compile(rf"/(?![/])(?:[{_PCHARS}/]|{_ESCAPED})*(?:\?{_QUERY})?(?:#[\x21-\x7e]*)?")
# An IPv4-style host; it must then be a valid dotted quad.
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
# The userinfo of a URL or reference as a browser (WHATWG) reads it: after the scheme and any
# slashes (or after ``//``), up to the last ``@`` before the path, query or fragment.
_USERINFO = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:[\\/]*|[\\/]{2}))[^/?#\\]*@")


@dataclass(frozen=True, slots=True)
class URL:
    """An absolute http(s) URL without its fragment, spelled as :mod:`.rfc3986` spells it.

    ``host`` is the ASCII host (IDNA-encoded, lowercase, IPv6 without brackets); ``port`` is
    ``None`` for the scheme's default; ``target`` is what a request line carries (path and
    query, at least ``/``); ``key`` is the comparison key of :func:`normalize_url`.
    """

    scheme: str
    host: str
    port: int | None
    target: str
    text: str
    key: str
    plain: bool  # parsed by the fast path: ``scheme://host[:port]`` + target is the URL

    def __str__(self) -> str:
        return self.text


@functools.lru_cache(maxsize=4096)
def _ipv4(host: str) -> bool:
    """Whether ``host`` (four dotted numbers) is a valid IPv4 address. Cached like
    ``parse_ip_host``: a crawl of a site at an address parses its every URL with it (3 us)."""
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _plain(raw: str) -> URL | None:
    match = _SIMPLE.fullmatch(raw)
    if match is None:
        return None
    scheme, host, port_text, path, query = match.groups()
    if "/." in path:
        return None  # dot segments: the slow path removes them
    host = host.lower()
    if _IPV4_STYLE.fullmatch(host) and not _ipv4(host):
        raise InvalidURL(f"invalid URL {raw!r}: Invalid IPv4 address: {host!r}")
    port = int(port_text) if port_text else None
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    rest = path if query is None else f"{path}?{query}"
    text = f"{scheme}://{netloc}{rest}"
    key = text if rest else text + "/"
    return URL(scheme, host, port, rest if path else "/" + rest, text, key, True)


def without_userinfo(raw: str) -> str:
    """``raw`` with any ``user:password@`` taken out: what error messages may show of a URL."""
    return _USERINFO.sub(r"\1", raw, count=1)


def _via_rfc3986(raw: str) -> URL:
    shown = without_userinfo(raw)
    try:
        url = rfc3986.parse(raw)
    except ValueError as exc:
        raise InvalidURL(f"invalid URL {shown!r}: {exc}") from exc
    if not url.scheme:
        raise InvalidURL(f"not an absolute URL: {shown!r}")
    if url.scheme not in SCHEMES:
        raise UnsupportedScheme(f"unsupported scheme {url.scheme!r} in {shown!r}")
    if not url.host:
        raise InvalidURL(f"URL has no host: {shown!r}")
    # Credentials are never sent (aiohttp turns them into Basic auth) nor echoed: a redirect
    # could hand us someone's password and reports would store it. rfc3986 keeps none.
    url = url._replace(fragment=None)
    text = str(url)
    key = text
    if url.query is None and url.path in ("", "/") and not key.endswith("/"):
        key += "/"  # http://a.com and http://a.com/ are one page
    return URL(url.scheme, url.host, url.port, url.target, text, key, False)


@functools.lru_cache(maxsize=8192)
def parse_url(raw: str) -> URL:
    """An absolute http(s) URL without its fragment; raises InvalidURL / UnsupportedScheme.

    Cached: a checked URL is parsed for robots.txt, diagnostics and the fetch alike.
    """
    raw = raw.strip()
    url = _plain(raw) or _via_rfc3986(raw)
    if url.port is not None and not 0 < url.port <= _MAX_PORT:
        # The syntax allows any number. Port 0 cannot be dialled (and robots.txt went to the
        # default port instead); above 65535 the connection layer raised ValueError.
        raise InvalidURL(f"port out of range in {without_userinfo(raw)!r}")
    parse_ip_host(url.host)  # numeric hosts must be valid IPv4 (WHATWG)
    return url


def join_url(base: URL, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986 section 5).

    Raises ``ValueError`` when the reference cannot be parsed; the result still has to go
    through :func:`parse_url`.
    """
    if _SIMPLE.fullmatch(ref):
        return ref  # already absolute (parse_url drops the fragment)
    if base.plain and _PATH_REF.fullmatch(ref) and "/." not in ref:
        port = "" if base.port is None else f":{base.port}"
        return f"{base.scheme}://{base.host}{port}{ref}"
    return rfc3986.join(base.text, ref)


def normalize_url(url: URL | str) -> str:
    """A comparison key: lowercase scheme and host, default port and fragment dropped.

    Used for redirect-loop detection and canonical self-reference; the path and query are
    compared as sent, because servers may treat ``/A`` and ``/a`` as different pages.
    """
    return (url if isinstance(url, URL) else parse_url(url)).key


def origin_of(url: URL) -> str:
    """scheme://host[:port] with the default port dropped (the robots.txt cache key)."""
    port = url.port if url.port not in (None, _DEFAULT_PORTS.get(url.scheme)) else None
    host = url.host
    shown = f"[{host}]" if ":" in host else host
    return f"{url.scheme}://{shown}" + ("" if port is None else f":{port}")
