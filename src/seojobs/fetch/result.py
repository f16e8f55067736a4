"""What one fetch produced: the final response (body capped) and every redirect hop."""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Response headers: case-insensitive, repeatable (as aiohttp hands them over).
Headers = CIMultiDictProxy[str]


def no_headers() -> Headers:
    return CIMultiDictProxy(CIMultiDict())


def make_headers(pairs: Iterable[tuple[str, str]] = ()) -> Headers:
    """Headers from (name, value) pairs, in order (tests and callers that build results)."""
    return CIMultiDictProxy(CIMultiDict(pairs))


@dataclass(frozen=True)
class RedirectHop:
    url: str
    status: int
    location: str  # the Location header as sent (may be relative)

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "status": self.status, "location": self.location}


@functools.lru_cache(maxsize=256)
def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def media_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    value = content_type.split(";", 1)[0].strip().lower()
    return value or None


def header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def decode_body(body: bytes, content_type: str | None) -> str:
    """Decode as a browser would: BOM, header charset, then <meta charset>, else UTF-8."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body.decode(bom_codec, errors="replace")
    codec = _known_codec(header_charset(content_type))
    if codec is None and media_type(content_type) in HTML_TYPES | {None}:
        match = _META_CHARSET.search(body[:2048])
        codec = _known_codec(match.group(1).decode("ascii")) if match else None
    return body.decode(codec or "utf-8", errors="replace")


@dataclass(frozen=True)
class FetchResult:
    """One fetch. ``error_kind`` is ``None`` when a final response was received.

    ``final_url`` is the last URL attempted: the page that answered, or the redirect target
    that could not be fetched. ``status`` is that URL's HTTP status (``None`` without one).
    """

    url: str
    final_url: str
    status: int | None
    headers: Headers = field(default_factory=no_headers)
    redirect_chain: tuple[RedirectHop, ...] = ()
    body: bytes = b""
    truncated: bool = False  # the body was longer than fetch_max_bytes; ``body`` is its start
    elapsed: float = 0.0  # seconds, all hops together
    error_kind: str | None = None
    error: str | None = None

    @property
    def requested_url(self) -> str:
        return self.url

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.status is not None

    @functools.cached_property
    def content_type(self) -> str | None:
        """The media type without parameters, lowercased (``text/html``); read once (a
        diagnosis asks four times)."""
        return media_type(self.headers.get("content-type"))

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @property
    def text(self) -> str:
        return decode_body(self.body, self.headers.get("content-type"))

    def header_list(self, name: str) -> list[str]:
        """Every value of a header that may repeat (X-Robots-Tag, Link), in order."""
        return self.headers.getall(name, [])
