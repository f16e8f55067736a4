"""A URL reference split and normalised as RFC 3986 reads it (the fetcher's slow path).

``fetch.urls`` parses plain URLs with one regular expression; every other reference comes
here. The steps: refuse ASCII control characters; split with RFC 3986's own regular
expression (Appendix B, with the scheme's grammar of section 3.1); take the host up to the
first ``:`` of the authority after its last ``@``, lower-case it, check IP literals with
``ipaddress`` and IDNA-encode other non-ASCII names with ``idna``; drop the scheme's default
port; remove dot segments from the path of an absolute reference; percent-encode, as UTF-8,
the characters each component may not hold as they are (existing ``%XX`` escapes stay).

That is the spelling reports have always stored (it is how httpx spelled these URLs when it
parsed them for us; ``tests/unit/test_fetch_urls.py`` keeps comparing the two), so taking httpx
off the server changed no stored URL. Userinfo is parsed but never kept: credentials are
neither sent nor stored.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple
from urllib.parse import quote, urljoin

import idna

MAX_LENGTH = 65536
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

# RFC 3986 Appendix B, with the scheme restricted to its grammar (section 3.1).
_REFERENCE = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?",
    re.DOTALL,
)
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
# WHATWG URL's forbidden host code points that can reach a host name here (the rest end or
# split the authority, or are refused earlier as controls), outside an IPv6 literal's brackets.
_FORBIDDEN_IN_HOST = re.compile(r"^(?!\[[^\]]*\]$).*[ <>\[\\\]^|]", re.DOTALL)


def _printable_except(excluded: str) -> str:
    """Printable ASCII that a component may carry as it is (``%`` included: escapes stay)."""
    return "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in excluded)


# Characters percent-encoded in each component (anything not ASCII-printable always is).
_QUERY_SAFE = _printable_except('"#<>')
_PATH_SAFE = _printable_except('"#<>?`{}')
_FRAGMENT_SAFE = _printable_except('"<>`')
# Host names may keep sub-delims and what WHATWG leaves in an opaque host.
_HOST_SAFE = "!$&'()*+,;=" + '"`{}%|\\'


class URLSyntaxError(ValueError):
    """The reference breaks RFC 3986's syntax (or is not a usable host, port or IDN)."""


class Reference(NamedTuple):
    """A parsed reference: ``host`` lower-case ASCII (IPv6 without brackets), ``port`` ``None``
    for none or the scheme's default, ``query``/``fragment`` ``None`` when absent."""

    scheme: str
    host: str
    port: int | None
    path: str
    query: str | None
    fragment: str | None
    has_authority: bool

    @property
    def target(self) -> str:
        """What a request line carries: the path (at least ``/``) and the query."""
        path = self.path or "/"
        return path if self.query is None else f"{path}?{self.query}"

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    def __str__(self) -> str:
        return "".join(
            (
                f"{self.scheme}:" if self.scheme else "",
                f"//{self.netloc}" if self.has_authority else "",
                self.path,
                "" if self.query is None else f"?{self.query}",
                "" if self.fragment is None else f"#{self.fragment}",
            )
        )


def _host(raw: str) -> str:
    if not raw:
        return ""
    if _IPV4_STYLE.fullmatch(raw):
        try:
            ipaddress.IPv4Address(raw)  # also refuses leading zeros (octal to some parsers)
        except ValueError:
            raise URLSyntaxError(f"Invalid IPv4 address: {raw!r}") from None
        return raw
    if raw.startswith("[") and raw.endswith("]"):
        try:
            ipaddress.IPv6Address(raw[1:-1])
        except ValueError:
            raise URLSyntaxError(f"Invalid IPv6 address: {raw!r}") from None
        return raw[1:-1]
    if raw.isascii():
        return quote(raw, safe=_HOST_SAFE).lower()  # escapes too: host names ignore case
    try:
        return idna.encode(raw.lower()).decode("ascii")
    except idna.IDNAError:
        raise URLSyntaxError(f"Invalid IDNA hostname: {raw!r}") from None


def _authority(authority: str, scheme: str) -> tuple[str, int | None, bool]:
    """(host, port, whether there is an authority at all) of ``//userinfo@host:port``."""
    userinfo, _, hostport = authority.rpartition("@")
    if hostport.startswith("[") and "]" in hostport:
        cut = hostport.rindex("]") + 1
    else:
        cut = hostport.find(":") if ":" in hostport else len(hostport)
    host, port_text = _host(hostport[:cut]), hostport[cut:].removeprefix(":")
    if scheme in ("", "http", "https") and _FORBIDDEN_IN_HOST.search(hostport[:cut]):
        # WHATWG's host parser for http(s): a host written with one of these is no host at
        # all (``http://[bad/``, ``http://a b/``, ``http://a^b/``), where percent-encoding it
        # gave a name that only failed later, at DNS. Escapes (``a%20b``) are left to DNS, as
        # the API's URL pattern takes them.
        raise URLSyntaxError(f"Invalid host: {hostport[:cut]!r}")
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()):
            raise URLSyntaxError(f"Invalid port: {port_text!r}")
        port = int(port_text)
        if port == DEFAULT_PORTS.get(scheme):
            port = None
    return host, port, bool(userinfo or host or port is not None)


def _without_dot_segments(path: str) -> str:
    """``/a/./b/../c`` -> ``/a/c``; a ``..`` never climbs above the root."""
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if kept and kept != [""]:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/".join(kept)


def parse(raw: str) -> Reference:
    """Parse a URL or a relative reference; raises :class:`URLSyntaxError`."""
    if len(raw) > MAX_LENGTH:
        raise URLSyntaxError("URL too long")
    for index, char in enumerate(raw):
        if char.isascii() and not char.isprintable():
            raise URLSyntaxError(f"Invalid non-printable ASCII character {char!r} at {index}")
    match = _REFERENCE.fullmatch(raw)
    if match is None:  # pragma: no cover - every string matches Appendix B
        raise URLSyntaxError("not a URL reference")
    scheme_text, authority, path, query, fragment = match.groups()
    scheme = (scheme_text or "").lower()
    host, port, has_authority = _authority(authority or "", scheme)
    if authority is not None and not host and scheme in ("", "http", "https"):
        # RFC 9110 4.2.1: an http(s) URI with an empty host is invalid (``http:///x``,
        # ``//user@/x``), including as a reference resolved against an http(s) page.
        raise URLSyntaxError("empty host")
    if has_authority and path and not path.startswith("/"):
        raise URLSyntaxError("For absolute URLs, path must be empty or begin with '/'")
    if not scheme and not has_authority and path.startswith(":"):
        raise URLSyntaxError("Relative URLs cannot have a path starting with ':'")
    if scheme or has_authority:
        path = _without_dot_segments(path)
    return Reference(
        scheme,
        host,
        port,
        quote(path, safe=_PATH_SAFE),
        None if query is None else quote(query, safe=_QUERY_SAFE),
        None if fragment is None else quote(fragment, safe=_FRAGMENT_SAFE),
        has_authority,
    )


def join(base: str, ref: str) -> str:
    """``ref`` (normalised first) resolved against the absolute URL ``base`` (RFC 3986 5.2)."""
    return urljoin(base, str(parse(ref)))
