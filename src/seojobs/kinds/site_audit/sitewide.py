"""What the audit finds over the whole site once the crawl is complete, and its summary.

Both read the stored page records (each item's result), so an audit resumed after a crash
sees the pages an earlier worker recorded as well as its own.
"""

from __future__ import annotations

import itertools
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seojobs.engine.context import Finding
from seojobs.kinds.site_audit.check import SAMPLE as _SAMPLE
from seojobs.kinds.site_audit.checks import SEVERITIES, SEVERITY, Severity, finding
from seojobs.kinds.site_audit.params import Thresholds
from seojobs.kinds.site_audit.sitepages import SitePages

Record = Mapping[str, Any]
# Every page's record, as the crawl holds them (sitepages.SitePages), or a list in tests.
Pages = Sequence[Record]
ByRecord = Mapping[str, Record]
IMAGE_MAX_KB = 100  # an image the crawl fetched over this is img_too_large (as Ahrefs has it)


def _repeated(keys: Iterable[tuple[int, Any]]) -> Iterator[list[int]]:
    """The groups of rows (in order of their first row, each in order) whose keys are
    equal, among ``keys``' (row, key) in row order, for groups of two or more. Two passes
    over ``keys`` (an iterable read twice): the first holds only every key's hash in an
    array, the second the keys whose hash repeats (100,000 pages' titles or URLs held as
    strings at once took tens of megabytes, issue 30.6)."""
    hashes = array("q", (hash(key) for _row, key in keys))
    hashes = array("q", sorted(hashes))
    again = {a for a, b in itertools.pairwise(hashes) if a == b}
    del hashes
    if not again:
        return
    groups: dict[Any, list[int]] = defaultdict(list)
    for row, key in keys:
        if hash(key) in again:
            groups[key].append(row)
    for rows in groups.values():
        if len(rows) > 1:
            yield rows


class _Keyed:
    """(row, key) of the pages ``keep`` keeps, an iterable read afresh each time."""

    def __init__(self, pages: Pages, key: Callable[[Record], Any]) -> None:
        self.pages = pages
        self.key = key

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        key = self.key
        for row, page in enumerate(self.pages):
            value = key(page)
            if value is not None:
                yield row, value


def _duplicates(pages: Pages, field: str, code: str) -> Iterator[Finding]:
    def value(page: Record) -> Any:
        found = page.get(field)
        return found if found and page.get("indexable") else None

    for rows in _repeated(_Keyed(pages, value)):
        urls = [pages[row]["url"] for row in rows]
        found = pages[rows[0]].get(field)
        for url in urls:
            others = [u for u in urls if u != url][:_SAMPLE]
            yield finding(code, url, {field: found, "also_on": others})


def _variants(pages: Pages, code: str, key: Callable[[str], str]) -> Iterator[Finding]:
    """URLs that differ only in a way ``key`` takes out, each answering 200 itself."""

    def value(page: Record) -> str | None:
        answered = page.get("status") == 200 and not page.get("redirects")
        return key(page["url"]) if answered else None

    for rows in _repeated(_Keyed(pages, value)):
        urls = [pages[row]["url"] for row in rows]
        for url in urls:
            yield finding(code, url, {"also_answers": [u for u in urls if u != url][:_SAMPLE]})


def _without_slash(url: str) -> str:
    head, mark, query = url.partition("?")
    if head.count("/") > 3:  # a path beyond the root's "/"
        head = head.rstrip("/")
    return head + mark + query


def _links(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
    for page in pages:
        found: dict[str, list[Any]] = defaultdict(list)
        for target in page.get("links", ()):
            linked = by_url.get(target)
            if linked is None:
                continue  # beyond max_pages or max_depth: never crawled
            if linked.get("blocked_by_robots"):
                found["linked_page_blocked_by_robots"].append(target)
            elif (linked.get("status") or 0) >= 400:
                found["broken_internal_link"].append({"target": target, "status": linked["status"]})
            elif linked.get("redirects") or linked.get("error_kind"):
                hops = {"target": target, "redirects": linked.get("redirects")}
                found["internal_link_to_redirect"].append(hops)
                if _chain(linked):
                    found["internal_link_redirect_chain"].append(hops)
        for code, links in found.items():
            yield finding(code, page["url"], {"links": links[:_SAMPLE]})


def _chain(page: Record) -> bool:
    """Whether the page redirected more than once and then answered."""
    return (page.get("redirects") or 0) > 1 and not page.get("error_kind")


_BACK = {"next": "prev", "prev": "next"}


def _pagination(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
    """rel=next/prev: each target answers 200 itself and names the page back the other way."""
    for page in pages:
        problems = []
        for rel, target in (page.get("pagination") or {}).items():
            other = by_url.get(target)
            if other is None or other.get("blocked_by_robots"):
                continue  # not crawled
            if other.get("status") != 200 or other.get("redirects"):
                problems.append({"rel": rel, "target": target, "status": other.get("status")})
            elif (other.get("pagination") or {}).get(_BACK[rel]) != page["url"]:
                back = (other.get("pagination") or {}).get(_BACK[rel])
                problems.append({"rel": rel, "target": target, _BACK[rel]: back})
        if problems:
            yield finding("pagination_inconsistent", page["url"], {"links": problems[:_SAMPLE]})


def _canonicals(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
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
        elif not linked.get("indexable"):
            evidence["reason"] = linked.get("indexability_reason")
            yield finding("canonical_to_non_indexable", page["url"], evidence)


def _alternate(page: Record, other: Record) -> str | None:
    """What is wrong with an hreflang alternate, the page's return link aside."""
    if other.get("status") != 200 or other.get("redirects"):
        return "hreflang_to_non_200"
    if other.get("canonical") not in (None, other["url"]):
        return "hreflang_to_non_canonical"
    if page["url"] not in (other.get("hreflang") or {}).values():
        return "hreflang_no_return_link"  # Google ignores one-way hreflang
    return None


def _hreflang(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
    for page in pages:
        found: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for language, target in (page.get("hreflang") or {}).items():
            other = by_url.get(target)
            if target == page["url"] or other is None or other.get("blocked_by_robots"):
                continue  # not crawled
            problem = _alternate(page, other)
            if problem:
                found[problem].append({"language": language, "alternate": target})
        for code, alternates in found.items():
            yield finding(code, page["url"], {"alternates": alternates[:_SAMPLE]})


def _clusters(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
    """An hreflang cluster is one set of alternates every member names alike: an alternate
    that names the page back (else that is its own finding) with other alternates than the
    page's is an incomplete or inconsistent cluster."""
    for page in pages:
        own = page.get("hreflang") or {}
        differing = []
        for target in dict.fromkeys(own.values()):
            other = by_url.get(target)
            if target == page["url"] or other is None or other.get("status") != 200:
                continue
            theirs = other.get("hreflang") or {}
            if page["url"] not in theirs.values() or theirs == own:
                continue
            missing = sorted(k for k in own if theirs.get(k) != own[k])
            extra = sorted(k for k in theirs if own.get(k) != theirs[k])
            differing.append({"alternate": target, "missing": missing, "extra": extra})
        if differing:
            yield finding(
                "hreflang_cluster_inconsistent", page["url"], {"alternates": differing[:_SAMPLE]}
            )


_LISTED_BUT = (
    ("noindex", "sitemap_url_noindex"),
    ("canonicalised", "sitemap_url_canonicalised"),
)


def _listed(url: str, crawled: Record) -> Iterator[Finding]:
    if crawled.get("blocked_by_robots"):
        yield finding("sitemap_url_blocked", url, {"robots": crawled.get("robots")})
    elif crawled.get("status") != 200 or crawled.get("redirects"):
        evidence = {"status": crawled.get("status"), "redirects": crawled.get("redirects")}
        yield finding("sitemap_url_non_200", url, evidence)
        if _chain(crawled):
            yield finding("sitemap_url_redirect_chain", url, evidence)
    else:
        reason = crawled.get("indexability_reason")
        for why, code in _LISTED_BUT:
            if reason == why:
                yield finding(code, url, {"reason": reason, "canonical": crawled.get("canonical")})


def _url_set(pages: Pages, urls: Iterable[str]) -> Collection[str]:
    """``set(urls)``, compact over the crawl's pages."""
    return pages.url_set(urls) if isinstance(pages, SitePages) else set(urls)


def _sitemaps(pages: Pages, by_url: ByRecord, listed: list[str]) -> Iterator[Finding]:
    in_sitemaps = _url_set(pages, listed)
    for page in pages:
        # A page reached by no link is a sitemap's, or else the previous audit's (_orphans).
        linked = page.get("depth") is not None or page.get("blocked_by_robots")
        if not linked and page["url"] in in_sitemaps:
            yield finding("sitemap_url_not_linked", page["url"], {"linked": False})
    # Each URL once (a set beside the one above only when some URL is listed twice).
    for url in listed if len(in_sitemaps) == len(listed) else dict.fromkeys(listed):
        crawled = by_url.get(url)
        if crawled is not None:  # else beyond max_pages: never crawled
            yield from _listed(url, crawled)
    if listed:  # a site without sitemaps has its own finding, not one per page
        for page in pages:
            if page.get("indexable") and page["url"] not in in_sitemaps:
                yield finding("indexable_not_in_sitemap", page["url"], {"in_sitemaps": False})


def _orphans(pages: Pages, listed: list[str], previous: list[str]) -> Iterator[Finding]:
    """Pages the previous audit crawled that still answer 200, reached now by no link and
    listed in no sitemap (issue 30.3; a sitemap's are ``sitemap_url_not_linked``)."""
    before, in_sitemaps = _url_set(pages, previous), _url_set(pages, listed)
    for page in pages:
        url = page["url"]
        unlinked = page.get("depth") is None and url in before and url not in in_sitemaps
        if unlinked and page.get("status") == 200 and not page.get("redirects"):
            yield finding("orphan_page", url, {"in_previous_audit": True, "linked": False})


def _weight(pages: Pages, by_url: ByRecord, limit_kb: int) -> Iterator[Finding]:
    """Pages heavier than ``limit_kb``: their HTML and the subresources of the site the crawl
    fetched (those it did not fetch are counted, their bytes unknown)."""
    for page in pages:
        html = "html" in (page.get("content_type") or "")
        if page.get("bytes") is None or page.get("status") != 200 or not html:
            continue  # a picture or script is weighed in the pages that load it
        loads = page.get("loads", ())
        known = [by_url[u]["bytes"] for u in loads if by_url.get(u, {}).get("bytes") is not None]
        total = page["bytes"] + sum(known)
        if total > limit_kb * 1024:
            evidence = {
                "bytes": total,
                "html_bytes": page["bytes"],
                "subresources_known": len(known),
                "subresources_unknown": len(loads) - len(known),
            }
            yield finding("page_weight_high", page["url"], evidence)


def _single_inlink(pages: Pages) -> Iterator[Finding]:
    """Indexable pages (the start page aside) that one other crawled page links to."""
    linking: Counter[str] = Counter(
        target for page in pages for target in page.get("links", ()) if target != page["url"]
    )
    for page in pages:
        deep = (page.get("depth") or 0) > 0  # reached by a link, not the start page
        html = "html" in (page.get("content_type") or "")
        if deep and html and page.get("indexable") and linking[page["url"]] == 1:
            yield finding("single_inlink", page["url"], {"in_links": 1})


def _resources(pages: Pages, by_url: ByRecord) -> Iterator[Finding]:
    """What a page loads from the site (images, scripts, styles) that the crawl fetched and
    that answered an error or redirected, or is an image heavier than ``IMAGE_MAX_KB``."""
    for page in pages:
        found: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for target in page.get("loads", ()):
            loaded = by_url.get(target)
            if loaded is None or loaded.get("blocked_by_robots"):
                continue  # not fetched: its answer is unknown
            if (loaded.get("status") or 0) >= 400:
                found["internal_resource_broken"].append(
                    {"target": target, "status": loaded["status"]}
                )
            elif loaded.get("redirects"):
                found["internal_resource_redirect"].append(
                    {"target": target, "redirects": loaded["redirects"]}
                )
            elif _heavy_image(loaded):
                found["img_too_large"].append({"target": target, "bytes": loaded["bytes"]})
        for code, loads in found.items():
            yield finding(code, page["url"], {"resources": loads[:_SAMPLE]})


def _heavy_image(page: Record) -> bool:
    image = (page.get("content_type") or "").startswith("image/")
    return image and (page.get("bytes") or 0) > IMAGE_MAX_KB * 1024


@dataclass(frozen=True)
class SiteFiles:
    """What the crawl learnt of the site's own files: robots.txt and sitemaps."""

    start_url: str
    robots_url: str
    robots_status: int | None
    sitemaps_read: bool  # include_sitemaps: the sitemaps were looked for
    # The sitemap files over the protocol's limits (50,000 URLs, 50 MB): URL, evidence.
    sitemaps_too_large: Sequence[tuple[str, dict[str, Any]]] = ()


def _files(files: SiteFiles, listed: list[str]) -> Iterator[Finding]:
    if files.robots_status is not None and 400 <= files.robots_status < 500:
        yield finding("robots_txt_missing", files.robots_url, {"status": files.robots_status})
    if files.sitemaps_read and not listed:
        yield finding("sitemap_missing", files.start_url, {"listed": 0})
    for sitemap, evidence in files.sitemaps_too_large:
        yield finding("sitemap_too_large", sitemap, evidence)


def site_findings(
    pages: Pages,
    listed: list[str],
    files: SiteFiles | None = None,
    previous: Sequence[str] = (),
    thresholds: Thresholds | None = None,
) -> Iterator[Finding]:
    """``listed``: the (normalised, in-scope) URLs the site's sitemaps list; ``previous``:
    those the project's previous audit of the site crawled with a 200. Yielded one check
    after another, for the caller to write a chunk at a time (100,000 pages can have as
    many findings)."""
    limits = thresholds or Thresholds()
    by_url = pages.by_url if isinstance(pages, SitePages) else {p["url"]: p for p in pages}
    yield from _duplicates(pages, "title", "title_duplicate")
    yield from _duplicates(pages, "description", "meta_description_duplicate")
    yield from _duplicates(pages, "h1", "h1_duplicate")
    yield from _duplicates(pages, "content_hash", "duplicate_content")
    yield from _variants(pages, "url_trailing_slash_duplicate", _without_slash)
    yield from _variants(pages, "url_case_duplicate", str.lower)
    yield from _links(pages, by_url)
    yield from _canonicals(pages, by_url)
    yield from _sitemaps(pages, by_url, listed)
    yield from _hreflang(pages, by_url)
    yield from _clusters(pages, by_url)
    yield from _pagination(pages, by_url)
    if files:
        yield from _files(files, listed)
    yield from _orphans(pages, listed, list(previous))
    yield from _weight(pages, by_url, limits.page_max_kb)
    yield from _single_inlink(pages)
    yield from _resources(pages, by_url)


class SiteTally:
    """What the summary needs of the site findings, counted as they pass on to be written
    (never held): how many of each code, and the URLs of those of error severity."""

    def __init__(self) -> None:
        self.by_code: Counter[str] = Counter()
        self.error_urls: set[str] = set()

    def count(self, found: Iterable[Finding]) -> Iterator[Finding]:
        for each in found:
            self.by_code[each.code] += 1
            if each.severity == "error":
                self.error_urls.add(str((each.data or {})["url"]))
            yield each


def summary(
    pages: Pages,
    site: SiteTally,
    max_pages: int,
    severity: dict[str, Severity] = SEVERITY,
) -> dict[str, Any]:
    """Pages crawled, issues by code and severity, and a health score: the share of fetched
    pages with no error-severity issue, 0-100 (``severity``: each code's, as the audit's
    settings have it)."""
    by_code: Counter[str] = Counter(code for page in pages for code in page.get("issues", ()))
    by_code.update(site.by_code)
    with_errors = {p["url"] for p in pages if any(severity[c] == "error" for c in p["issues"])}
    with_errors |= site.error_urls
    fetched = [p["url"] for p in pages if not p.get("blocked_by_robots")]
    healthy = sum(1 for url in fetched if url not in with_errors)
    by_severity = {s: 0 for s in SEVERITIES}
    for code, n in by_code.items():
        by_severity[severity[code]] += n
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
