"""What the audit finds over the whole site once the crawl is complete, and its summary.

Both read the stored page records (each item's result), so an audit resumed after a crash
sees the pages an earlier worker recorded as well as its own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from seojobs.engine.context import Finding
from seojobs.kinds.site_audit.checks import SEVERITIES, SEVERITY, finding

Record = dict[str, Any]
_SAMPLE = 10  # how many other URLs a finding's evidence names


def _duplicates(pages: list[Record], field: str, code: str) -> Iterator[Finding]:
    groups: dict[str, list[str]] = defaultdict(list)
    for page in pages:
        value = page.get(field)
        if value and page.get("indexable"):
            groups[value].append(page["url"])
    for value, urls in groups.items():
        if len(urls) > 1:
            for url in urls:
                others = [u for u in urls if u != url][:_SAMPLE]
                yield finding(code, url, {field: value, "also_on": others})


def _links(pages: list[Record], by_url: dict[str, Record]) -> Iterator[Finding]:
    for page in pages:
        broken, blocked = [], []
        for target in page.get("links", ()):
            linked = by_url.get(target)
            if linked is None:
                continue  # beyond max_pages or max_depth: never crawled
            if linked.get("blocked_by_robots"):
                blocked.append(target)
            elif (linked.get("status") or 0) >= 400:
                broken.append({"target": target, "status": linked["status"]})
        if broken:
            yield finding("broken_internal_link", page["url"], {"links": broken[:_SAMPLE]})
        if blocked:
            evidence = {"links": blocked[:_SAMPLE]}
            yield finding("linked_page_blocked_by_robots", page["url"], evidence)


def _canonicals(pages: list[Record], by_url: dict[str, Record]) -> Iterator[Finding]:
    for page in pages:
        target = page.get("canonical")
        linked = by_url.get(target) if target and target != page["url"] else None
        if linked is None or linked.get("blocked_by_robots"):
            continue
        evidence = {"canonical": target, "status": linked.get("status")}
        if linked.get("redirects"):
            yield finding("canonical_to_redirect", page["url"], evidence)
        elif linked.get("status") != 200:
            yield finding("canonical_to_non_200", page["url"], evidence)


def _hreflang(pages: list[Record], by_url: dict[str, Record]) -> Iterator[Finding]:
    """An alternate must name the page back (Google ignores one-way hreflang)."""
    for page in pages:
        missing = []
        for language, target in (page.get("hreflang") or {}).items():
            other = by_url.get(target)
            if target == page["url"] or other is None or other.get("status") != 200:
                continue  # not crawled, or an error of its own
            if page["url"] not in (other.get("hreflang") or {}).values():
                missing.append({"language": language, "alternate": target})
        if missing:
            yield finding("hreflang_no_return_link", page["url"], {"alternates": missing[:_SAMPLE]})


def _sitemaps(
    pages: list[Record], by_url: dict[str, Record], listed: list[str]
) -> Iterator[Finding]:
    for page in pages:
        if page.get("depth") is None and not page.get("blocked_by_robots"):
            yield finding("sitemap_url_not_linked", page["url"], {"linked": False})
    for url in dict.fromkeys(listed):
        crawled = by_url.get(url)
        if crawled is None or crawled.get("blocked_by_robots"):
            continue  # beyond max_pages: never crawled
        if crawled.get("status") != 200 or crawled.get("redirects"):
            evidence = {"status": crawled.get("status"), "redirects": crawled.get("redirects")}
            yield finding("sitemap_url_non_200", url, evidence)


def site_findings(pages: list[Record], listed: list[str]) -> list[Finding]:
    """``listed``: the (normalised, in-scope) URLs the site's sitemaps list."""
    by_url = {page["url"]: page for page in pages}
    return [
        *_duplicates(pages, "title", "title_duplicate"),
        *_duplicates(pages, "description", "meta_description_duplicate"),
        *_duplicates(pages, "content_hash", "duplicate_content"),
        *_links(pages, by_url),
        *_canonicals(pages, by_url),
        *_sitemaps(pages, by_url, listed),
        *_hreflang(pages, by_url),
    ]


def summary(pages: list[Record], site: list[Finding], max_pages: int) -> dict[str, Any]:
    """Pages crawled, issues by code and severity, and a health score: the share of fetched
    pages with no error-severity issue, 0-100."""
    by_code: Counter[str] = Counter(code for page in pages for code in page.get("issues", ()))
    by_code.update(f.code for f in site)
    with_errors = {p["url"] for p in pages if any(SEVERITY[c] == "error" for c in p["issues"])}
    with_errors |= {str((f.data or {})["url"]) for f in site if f.severity == "error"}
    fetched = [p["url"] for p in pages if not p.get("blocked_by_robots")]
    healthy = sum(1 for url in fetched if url not in with_errors)
    by_severity = {s: 0 for s in SEVERITIES}
    for code, n in by_code.items():
        by_severity[SEVERITY[code]] += n
    return {
        "pages_crawled": len(fetched),
        "pages_blocked_by_robots": len(pages) - len(fetched),
        "max_pages": max_pages,
        "max_pages_hit": len(pages) >= max_pages,
        "issues": sum(by_code.values()),
        "issues_by_severity": by_severity,
        "issues_by_code": dict(sorted(by_code.items())),
        "health_score": round(100 * healthy / len(fetched)) if fetched else 0,
    }
