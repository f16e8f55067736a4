"""Sitemap discovery: the robots.txt ``Sitemap:`` lines and ``/sitemap.xml``, sitemap indexes
followed, gzip files opened; the page URLs they list, in order.

``<loc>`` values are read with a regular expression rather than an XML parser: only they
are needed, and a document that is not what it claims (or an entity bomb) costs nothing.
"""

from __future__ import annotations

import re
import zlib
from html import unescape

from seojobs.fetch import Fetcher
from seojobs.fetch.urls import origin_of, parse_url

MAX_SITEMAPS = 50  # files fetched per audit, indexes included
MAX_URLS = 100_000  # over all of them: max_pages at its most (two files of sitemaps.org's 50,000)
_LOC = re.compile(r"<loc>\s*(.*?)\s*</loc>", re.IGNORECASE | re.DOTALL)
_INDEX = re.compile(r"<sitemapindex[\s>]", re.IGNORECASE)
_GZIP_MAGIC = b"\x1f\x8b"


def _text(body: bytes, cap: int) -> str:
    """A sitemap's text; a gzip file is opened up to ``cap`` bytes (a small file can unpack
    to gigabytes)."""
    if body.startswith(_GZIP_MAGIC):
        try:
            body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, cap)
        except zlib.error:
            return ""
    return body.decode("utf-8", errors="replace")


def read_sitemap(body: bytes, cap: int) -> tuple[bool, list[str]]:
    """(is an index, the ``<loc>`` URLs it lists)."""
    text = _text(body, cap)
    return bool(_INDEX.search(text)), [unescape(loc) for loc in _LOC.findall(text)]


async def discover(fetcher: Fetcher, start: str) -> list[str]:
    """Every page URL the site's sitemaps list (any host: the caller keeps its own)."""
    origin = origin_of(parse_url(start))
    queue = [*await fetcher.robots.sitemaps(start), f"{origin}/sitemap.xml"]
    seen: set[str] = set()
    pages: list[str] = []
    while queue and len(seen) < MAX_SITEMAPS and len(pages) < MAX_URLS:
        sitemap = queue.pop(0)
        if sitemap in seen:
            continue
        seen.add(sitemap)
        fetched = await fetcher.fetch(sitemap)
        if not fetched.ok or fetched.status != 200:
            continue
        index, urls = read_sitemap(fetched.body, fetcher.max_bytes)
        (queue if index else pages).extend(urls)
    return pages[:MAX_URLS]
