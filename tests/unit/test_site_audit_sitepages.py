"""The site-wide phase's pages held in columns (issue 30.6: 100,000 pages within 300 MB):
every record reads back as it was, looked up by URL, and the pages keep no Python object
per page (no dict, list or view: their count does not grow with the pages), in a bounded
number of bytes per page."""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from typing import Any

from seojobs.kinds.site_audit.pages import page_rows
from seojobs.kinds.site_audit.sitepages import SKIPPED, SitePages
from seojobs.kinds.site_audit.sitewide import site_findings

BASE = "https://site.test"


def _record(n: int, pages: int) -> dict[str, Any]:
    """A page as the crawl records it (``crawler._record`` and its verdicts)."""
    links = sorted({f"{BASE}/p/{(n * 7919 + k * 104729) % pages}" for k in range(20)})
    return {
        "url": f"{BASE}/p/{n}",
        "final_url": f"{BASE}/p/{n}",
        "status": 200 if n % 50 else 404,
        "error_kind": None,
        "depth": n % 5,
        "response_ms": 5 + n % 7,
        "redirects": 0,
        "content_type": "text/html; charset=utf-8",
        "title": f"Page {n} of the site" if n % 9 else "The same title",
        "description": f"Page {n}: about twenty internal links and a thousand words of text.",
        "h1": f"Page {n}",
        "canonical": f"{BASE}/p/{n}",
        "hreflang": {"en": f"{BASE}/p/{n}", "de": f"{BASE}/de/{n}"} if n % 100 == 3 else {},
        "pagination": {"next": f"{BASE}/p/{n + 1}"} if n % 200 == 5 else {},
        "words": 1000 + n % 13,
        "content_hash": f"{n % (pages // 2):064x}",
        "out_links": len(links),
        "external_links": 1,
        "links": [*links, f"{BASE}/beyond/{n}"],  # the last one never crawled
        "bytes": 8000 + n,
        "indexability_reason": None if n % 50 else "client_error",
        "indexable": bool(n % 50),
        "issues": ["canonical_relative", "title_short"][: n % 3],
        "loads": [f"{BASE}/img/{n}.png"],
        "external": [{"url": "https://else.test/", "status": 200, "error_kind": None}],
        "shiny_new_field": {"by": "a later rule"} if n % 2 else None,
    }


def _pages(count: int) -> SitePages:
    pages = SitePages(f"{BASE}/p/{n}" for n in range(count))
    for n in range(count):
        pages.add(n + 1, _record(n, count))
    return pages


def test_every_record_reads_back_as_it_was_and_by_its_url() -> None:
    count = 300
    pages = _pages(count)
    assert len(pages) == count
    crawled = {f"{BASE}/p/{n}" for n in range(count)}
    for n, page in enumerate(pages):
        record = _record(n, count)
        expected = {k: v for k, v in record.items() if k not in SKIPPED and v not in (None, {}, [])}
        expected["issues"] = record["issues"]
        expected["links"] = [u for u in record["links"] if u in crawled]  # others never crawled
        assert dict(page) == expected
        assert pages.by_url[record["url"]]["title"] == record["title"]
        assert page.get("error_kind", "none") == "none"
        assert page.get("external") is None  # kept in the item for a resume, not here
    assert pages.by_url.get(f"{BASE}/beyond/1") is None
    assert [seq for seq, _page in pages.seq_rows()] == list(range(1, count + 1))


def test_the_site_checks_and_rows_find_the_same_over_columns_as_over_dicts() -> None:
    count = 400
    records = [_record(n, count) for n in range(count)]
    listed = [r["url"] for r in records[: count // 2]]
    assert list(site_findings(_pages(count), listed)) == list(site_findings(records, listed))
    rows = list(page_rows(_pages(count)))
    assert [r["seq"] for r in rows] == list(range(1, count + 1))
    linking = Counter(t for r in records for t in set(r["links"]) if t != r["url"])
    assert [r["in_links"] for r in rows] == [linking[r["url"]] for r in records]
    assert [r["title"] for r in rows] == [r["title"] for r in records]


def _held(count: int) -> tuple[int, int]:
    """(Python objects the garbage collector tracks, bytes allocated) that ``count`` pages
    keep once added."""
    gc.collect()
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pages = _pages(count)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    kept = len(gc.get_objects()) - objects
    del pages
    return kept, held


def test_pages_keep_no_object_per_page_and_few_bytes() -> None:
    small_objects, small_bytes = _held(200)
    large_objects, large_bytes = _held(800)
    # Four times the pages, the same containers: the columns, not a dict or list per page.
    assert large_objects - small_objects < 20, (small_objects, large_objects)
    # Each page's URL string (the frontier's own, shared), its text and its links' ints.
    per_page = (large_bytes - small_bytes) / 600
    assert per_page < 1000, per_page  # a dict per record: over 5,000
