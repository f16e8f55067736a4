"""Is this URL among a search engine's results? URL normalisation and matching for SERP checkers.

A SERP checker asks an engine for ``site:<url>`` and then has to decide whether the URL is in the
organic results. Engines print URLs in their own spelling, so both sides are normalised first.

Always equal (pure spelling; the same resource by RFC 3986 or by universal practice):

- scheme and host case, a trailing dot on the host, IDN vs punycode (``bücher.de`` =
  ``xn--bcher-kva.de``), the default port (``:80`` for http, ``:443`` for https);
- an empty path and ``/``; dot segments (``/a/./b/../c`` = ``/a/c``);
- percent-encoding: escapes of unreserved characters are decoded (``%7E`` = ``~``), other escapes
  are upper-cased (``%2f`` = ``%2F``), raw non-ASCII is UTF-8 encoded;
- the fragment (never sent to a server, never part of what an engine indexes);
- userinfo (engines never index it), an empty ``?``, and query parameter order.

Tolerated differences (:class:`MatchOptions`): each can count as a match or only be reported as a
near match. Defaults, and why:

- ``trailing_slash`` (``/page`` vs ``/page/``) counts: sites serve one and redirect the other, and
  the engine lists whichever it chose as canonical.
- ``scheme`` (http vs https), ``www`` (``www.`` vs bare host) and ``tracking_params`` (``utm_*``,
  ``gclid``, ...) do NOT count: they are different URLs, and an engine listing the other one says
  that URL is indexed, not this one. They are reported as ``near_match`` so a report can say
  "indexed as https://…" instead of a bare "not indexed".

Anything else (another path, another query value, another port) is a different page.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

SCHEME = "scheme"
WWW = "www"
TRAILING_SLASH = "trailing_slash"
TRACKING_PARAMS = "tracking_params"

_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 unreserved characters: their escapes mean the same as the raw character.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# What may stay raw in a path: unreserved, sub-delims, ":", "@", "/" and existing escapes.
_PATH_SAFE = "-._~!$&'()*+,;=:@/%"
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_TRACKING_NAMES = frozenset(
    {"gclid", "dclid", "fbclid", "msclkid", "yclid", "gbraid", "wbraid", "igshid", "mc_cid"}
)


@dataclass(frozen=True)
class MatchOptions:
    """Which tolerated differences count as "listed" (see the module docstring)."""

    trailing_slash: bool = True
    scheme: bool = False
    www: bool = False
    tracking_params: bool = False

    def allows(self, differences: frozenset[str]) -> bool:
        allowed = {
            TRAILING_SLASH: self.trailing_slash,
            SCHEME: self.scheme,
            WWW: self.www,
            TRACKING_PARAMS: self.tracking_params,
        }
        return all(allowed[d] for d in differences)


@dataclass(frozen=True)
class NormalURL:
    scheme: str
    host: str
    port: int | None  # None when it is the scheme's default
    path: str
    query: tuple[tuple[str, str], ...]  # decoded pairs, sorted

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        netloc = host if self.port is None else f"{host}:{self.port}"
        query = urlencode(self.query, quote_via=quote, safe="/:@!$'()*,;")
        return f"{self.scheme}://{netloc}{self.path}" + (f"?{query}" if query else "")


@functools.lru_cache(maxsize=4096)
def parse(url: str) -> NormalURL:
    """Normalise an absolute http(s) URL; ValueError when it is not one.

    Cached (the result is immutable): a checked URL is parsed for its ``site:`` query and
    again for the match, and engines list the same URLs for many queries.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    port = parts.port  # ValueError for a non-numeric or out-of-range port
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    return NormalURL(scheme, _host(parts.hostname), port, _path(parts.path), tuple(sorted(pairs)))


# A plain http(s) URL: printable ASCII, its authority a name or IPv4 address (letters, digits,
# dots, hyphens) and an optional port; no userinfo, brackets, escapes, backslashes or spaces.
_PLAIN = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9.\-]+)(?::([0-9]*))?(?:[/?#][!-~]*)?")
_MAX_PORT = 65535


def host(url: str) -> str:
    """``parse(url).host``, exactly (ValueError likewise), without the full parse for a plain
    http(s) URL (most result URLs): a rank check reads the host of every result it sees, more
    URLs than :func:`parse`'s cache holds."""
    plain = _PLAIN.fullmatch(url)
    if plain is None:
        return parse(url).host
    port = plain.group(2)
    if port and int(port) > _MAX_PORT:
        raise ValueError(f"not an absolute http(s) URL: {url!r} (port out of range)")
    return plain.group(1).lower().rstrip(".")


def normalise(url: str) -> str:
    return str(parse(url))


def site_query(url: str) -> str:
    """The ``site:`` query for ``url``: normalised, without scheme (engines match both)."""
    return "site:" + normalise(url).split("://", 1)[1]


def _host(host: str) -> str:
    host = host.lower().rstrip(".")
    if ":" in host or host.isascii():
        return host  # IPv6 literal or already ASCII (punycode stays as written)
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host  # IDNA 2003 refuses some labels; compare them as written


def _path(path: str) -> str:
    def unescape(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else f"%{m.group(1).upper()}"

    path = quote(_ESCAPE.sub(unescape, path), safe=_PATH_SAFE)
    return _remove_dot_segments(path) or "/"


def _remove_dot_segments(path: str) -> str:
    # RFC 3986 §5.2.4 on whole segments; a trailing "." or ".." keeps the directory slash.
    out: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        elif segment == ".":
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/".join(out)


def _is_tracking(name: str) -> bool:
    name = name.lower()
    return name.startswith("utm_") or name in _TRACKING_NAMES


def differences(wanted: NormalURL, found: NormalURL) -> frozenset[str] | None:
    """The tolerated ways ``found`` differs from ``wanted``; None when it is another page."""
    diff: set[str] = set()
    if wanted.scheme != found.scheme:
        diff.add(SCHEME)
    if wanted.host != found.host:
        if wanted.host.removeprefix("www.") != found.host.removeprefix("www."):
            return None
        diff.add(WWW)
    if wanted.port != found.port:
        return None
    if wanted.path != found.path:
        if (wanted.path.rstrip("/") or "/") != (found.path.rstrip("/") or "/"):
            return None
        diff.add(TRAILING_SLASH)
    if wanted.query != found.query:
        if [p for p in wanted.query if not _is_tracking(p[0])] != [
            p for p in found.query if not _is_tracking(p[0])
        ]:
            return None
        diff.add(TRACKING_PARAMS)
    return frozenset(diff)


@dataclass(frozen=True)
class Candidate:
    url: str  # as the engine printed it
    position: int  # 1-based among the result URLs
    differences: tuple[str, ...]


@dataclass(frozen=True)
class Match:
    listed: bool
    matched: Candidate | None  # the result that counts as this URL
    near: Candidate | None  # closest result that does not count (only when nothing matched)
    results: int  # how many result URLs were compared

    def detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"results": self.results}
        if self.matched is not None:
            out["matched_url"] = self.matched.url
            out["position"] = self.matched.position
            out["match"] = "lenient" if self.matched.differences else "exact"
            if self.matched.differences:
                out["differences"] = list(self.matched.differences)
        if self.near is not None:
            out["near_match"] = {
                "url": self.near.url,
                "position": self.near.position,
                "differences": list(self.near.differences),
            }
        return out


def match(url: str, result_urls: Iterable[object], options: MatchOptions | None = None) -> Match:
    """Compare ``url`` with each result; results that are not http(s) URLs are skipped.

    The best match wins: exact before lenient, then the earliest position. ValueError when
    ``url`` itself is not an absolute http(s) URL.
    """
    options = options or MatchOptions()
    wanted = parse(url)
    matched: Candidate | None = None
    near: Candidate | None = None
    count = 0
    for position, raw in enumerate(result_urls, start=1):
        count += 1
        diff = _compare(wanted, raw)
        if diff is None:
            continue
        candidate = Candidate(str(raw), position, tuple(sorted(diff)))
        if options.allows(diff):
            if matched is None or len(diff) < len(matched.differences):
                matched = candidate
        elif near is None or len(diff) < len(near.differences):
            near = candidate
    return Match(matched is not None, matched, None if matched else near, count)


def is_listed(url: str, result_urls: Iterable[object], options: MatchOptions | None = None) -> bool:
    return match(url, result_urls, options).listed


def _compare(wanted: NormalURL, raw: object) -> frozenset[str] | None:
    if not isinstance(raw, str):
        return None
    try:
        found = parse(raw)
    except ValueError:
        return None
    return differences(wanted, found)
