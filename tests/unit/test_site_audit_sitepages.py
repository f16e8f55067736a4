"""The site-wide phase's pages held in columns (issue 30.6: 100,000 pages within 300 MB):
every record reads back as it was, looked up by URL, and the pages keep no Python object
per page (no dict, list or view: their count does not grow with the pages), in a bounded
number of bytes per page."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
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


def test_sitemap_and_previous_urls_as_sets_over_the_columns_find_the_same() -> None:
    """Sitemap URLs listed twice or never crawled, orphans of the previous audit: the sets
    the checks keep over the columns (a byte per URL) answer as Python sets do."""
    count = 300
    records = [_record(n, count) for n in range(count)]
    for n, record in enumerate(records):
        if n % 7 == 1:
            record["depth"] = None  # reached by no link: a sitemap's page, or an orphan
    pages = SitePages(r["url"] for r in records)
    for n, record in enumerate(records):
        pages.add(n + 1, record)
    listed = [r["url"] for r in records[: count // 3]] + [records[3]["url"], f"{BASE}/gone"]
    previous = [r["url"] for r in records[count // 4 :]] + [f"{BASE}/old"]
    found = list(site_findings(pages, listed, previous=previous))
    assert found == list(site_findings(records, listed, previous=previous))
    codes = Counter(f.code for f in found)
    assert codes["orphan_page"] and codes["sitemap_url_not_linked"], codes
    assert codes["indexable_not_in_sitemap"], codes
    shared = pages.shared(listed)
    assert shared == listed and shared[0] is pages.urls[0]
    assert sorted(pages.url_set(listed)) == sorted(set(listed))
    assert len(pages.url_set(listed)) == len(set(listed))


def _measured(expression: str) -> Any:
    """``expression`` over this module (``m``) in a new Python: a pytest worker's heap holds
    what hundreds of tests left, which made each ``gc.collect`` and ``gc.get_objects`` there
    cost seconds, and its other threads allocate while tracemalloc counts; a new one holds
    this module alone. Warmed first (imports allocate once)."""
    warm = "m._site_peak(10); m._held(10)"
    code = f"import json, {__name__} as m; {warm}; print(json.dumps({expression}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return json.loads(done.stdout)


def _site_peak(count: int) -> int:
    """The bytes the site-wide checks take at their peak over ``count`` pages, each title,
    description and content distinct (a few pages share a title)."""
    pages = SitePages(f"{BASE}/p/{n}" for n in range(count))
    for n in range(count):
        pages.add(n + 1, {**_record(n, count), "content_hash": f"{n:032x}"})
    listed = [f"{BASE}/p/{n}" for n in range(count)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _found in site_findings(pages, listed):
            pass
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_the_site_checks_hold_few_bytes_per_page_at_their_peak() -> None:
    """Duplicate titles, descriptions, contents and URL variants are found through hashes,
    and the sitemap's URLs kept as a byte per URL: no string or list per page held at once
    (227 bytes a page here when grouped by value, 56 now)."""
    large, small = _measured("[m._site_peak(4000), m._site_peak(1000)]")
    per_page = (large - small) / 3000
    assert per_page < 120, per_page


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
    (small_objects, small_bytes), (large_objects, large_bytes) = _measured(
        "[m._held(200), m._held(800)]"
    )
    # Four times the pages, the same containers: the columns, not a dict or list per page.
    assert large_objects - small_objects < 20, (small_objects, large_objects)
    # Each page's URL string (the frontier's own, shared), its text and its links' ints.
    per_page = (large_bytes - small_bytes) / 600
    # A dict per record: over 5,000; the page's own URL held again as its final URL and
    # canonical, its loads with the site's origin: 708.
    assert per_page < 640, per_page
