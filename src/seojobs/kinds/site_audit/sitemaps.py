"""Sitemap discovery: the robots.txt ``Sitemap:`` lines and ``/sitemap.xml``, sitemap indexes
followed, gzip files opened; the page URLs they list, in order.

``<loc>`` values are read with a regular expression rather than an XML parser: only they
are needed, and a document that is not what it claims (or an entity bomb) costs nothing.
A file is read a chunk at a time (a gzip one opened a chunk at a time), never held whole as
text, and no further than the sitemaps protocol's 50 MB uncompressed (``sitemap_max_bytes``):
a file over the protocol's limits is reported (``sitemap_too_large``), not cut silently.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from typing import Any

from seojobs.fetch import Fetcher
from seojobs.fetch.urls import origin_of, parse_url

MAX_SITEMAPS = 50  # files fetched per audit, indexes included
MAX_URLS = 100_000  # over all of them: max_pages at its most (two files of sitemaps.org's 50,000)
PROTOCOL_URLS = 50_000  # sitemaps.org: a file lists at most 50,000 URLs ...
PROTOCOL_BYTES = 52_428_800  # ... and is at most 50 MB uncompressed
_CHUNK = 1 << 20  # bytes parsed at a time
_LOC = re.compile(rb"<loc>\s*(.*?)\s*</loc>", re.IGNORECASE | re.DOTALL)
_INDEX = re.compile(rb"<sitemapindex[\s>]", re.IGNORECASE)
_GZIP_MAGIC = b"\x1f\x8b"
_LOC_MAX = 65_536  # an unclosed <loc> kept across chunks at most (a URL is 2,048 at most)


@dataclass
class Sitemap:
    """One file read: an index or not, the ``<loc>`` URLs it lists, its uncompressed bytes
    read, and whether it went on past the cap (``cut``: the rest was not read)."""

    index: bool = False
    urls: list[str] = field(default_factory=list)
    size: int = 0
    cut: bool = False

    def over_limits(self, cap: int) -> dict[str, Any] | None:
        """The evidence of a file over the protocol's limits (or the cap); None: within."""
        if not self.cut and self.size <= PROTOCOL_BYTES and len(self.urls) <= PROTOCOL_URLS:
            return None
        return {
            "urls": len(self.urls),
            "bytes": self.size,
            "cut_at_bytes": cap if self.cut else None,
        }


def _chunks(body: bytes, cap: int, sitemap: Sitemap) -> Iterator[bytes]:
    """The file's uncompressed bytes, a chunk at a time, up to ``cap`` (a small gzip file can
    unpack to gigabytes); ``sitemap.cut`` set when there was more."""
    if not body.startswith(_GZIP_MAGIC):
        sitemap.cut = len(body) > cap
        for start in range(0, min(len(body), cap), _CHUNK):
            yield body[start : min(start + _CHUNK, cap)]
        return
    opener = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending, left = body, cap
    try:
        while pending and not opener.eof:
            if left == 0:  # one byte more would be past the cap: there is more
                sitemap.cut = bool(opener.decompress(pending, 1))
                return
            piece = opener.decompress(pending, min(_CHUNK, left))
            pending = opener.unconsumed_tail
            left -= len(piece)
            if not piece and not pending:
                return
            yield piece
    except zlib.error:
        return  # what was read before the damage is kept


def read_sitemap(body: bytes, cap: int) -> Sitemap:
    """The file's ``<loc>`` URLs and whether it is an index, read a chunk at a time."""
    sitemap = Sitemap()
    carry = b""
    for piece in _chunks(body, cap, sitemap):
        sitemap.size += len(piece)
        text = carry + piece
        sitemap.index = sitemap.index or bool(_INDEX.search(text))
        end = 0
        for match in _LOC.finditer(text):
            sitemap.urls.append(unescape(match.group(1).decode("utf-8", errors="replace")))
            end = match.end()
        # What may start a <loc> the next chunk closes (or an index's opening tag).
        tail = text[end:]
        opening = tail.rfind(b"<")
        carry = tail[opening:] if opening >= 0 and len(tail) - opening <= _LOC_MAX else b""
    return sitemap


@dataclass
class Sitemaps:
    """What the site's sitemaps list (any host: the caller keeps its own), and the files over
    the protocol's limits (URL, evidence)."""

    pages: list[str] = field(default_factory=list)
    too_large: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


async def discover(fetcher: Fetcher, start: str, cap: int = PROTOCOL_BYTES) -> Sitemaps:
    """Every page URL the site's sitemaps list; each file read up to ``cap`` bytes."""
    origin = origin_of(parse_url(start))
    queue = [*await fetcher.robots.sitemaps(start), f"{origin}/sitemap.xml"]
    seen: set[str] = set()
    found = Sitemaps()
    while queue and len(seen) < MAX_SITEMAPS and len(found.pages) < MAX_URLS:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        # One byte past the cap: a file of exactly the cap is whole.
        fetched = await fetcher.fetch(url, max_bytes=cap + 1)
        if not fetched.ok or fetched.status != 200:
            continue
        sitemap = read_sitemap(fetched.body, cap)
        del fetched  # the body: up to the cap, not kept while the next file is read
        if (evidence := sitemap.over_limits(cap)) is not None:
            found.too_large.append((url, evidence))
        (queue if sitemap.index else found.pages).extend(sitemap.urls)
    del found.pages[MAX_URLS:]
    return found
