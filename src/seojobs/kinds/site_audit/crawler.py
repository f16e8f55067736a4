"""The crawl: one item per page (the frontier), fetched through ``seojobs.fetch``.

Links found on a page become new items (deduplicated by normalised URL), stored with the
page's result in one write (``ItemResult.added``), so a worker that dies mid-audit leaves its
frontier stored; the worker that resumes it runs only the pages not yet recorded. A
redirect's target is audited from the redirect's final answer and added already finished, so
it is not fetched again as its own item. Scope is the start URL's host and its ``www.`` twin
(same port); ``max_depth`` bounds clicks from the start, ``max_pages`` the pages ever added.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.fetch import Fetcher, FetchResult, RobotsVerdict
from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import URL, parse_url
from seojobs.kinds.site_audit.check import Rendering, document_base, resolve, site_of
from seojobs.kinds.site_audit.checks import Page, Reporting, codes, page_findings
from seojobs.kinds.site_audit.external import ExternalLinks, is_broken
from seojobs.kinds.site_audit.page import PageFacts, parse_page
from seojobs.kinds.site_audit.pages import write_pages
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.kinds.site_audit.params import SiteAuditParams, page_key
from seojobs.kinds.site_audit.render import Renderer
from seojobs.kinds.site_audit.scope import UrlRules
from seojobs.kinds.site_audit.sitemaps import discover
from seojobs.kinds.site_audit.sitepages import SitePages, release_freed_memory
from seojobs.kinds.site_audit.sitewide import SiteFiles, SiteTally, site_findings, summary
from seojobs.records import ItemRecord

TARGET_UNREACHABLE = "target_unreachable"
BLOCKED_BY_ROBOTS = "blocked_by_robots"
MAX_LOADS = 50  # subresources of a page kept for its weight
# Results that may wait for their write, per place of the crawl's concurrency (run_items'
# backlog): a page waiting in it has handed its place to the next page. While one group of
# results is written the next gathers, so a group holds up to about half the backlog: at
# one, PostgreSQL's writes (a round trip, the statement, the commit's fsync) capped the crawl
# at about 8 pages a write (bench/audit.py: ~10 of 16 pages waiting for a write and ~7 for a
# place in the backlog, 1-3 fetching). A crash may refetch concurrency x (1 + BACKLOG) pages.
BACKLOG = 2


def _origins(start: URL) -> tuple[str, ...]:
    """How the normalised URLs of the start's origin and of its www. twin begin
    ("http://host:port/"): a URL that begins so is in scope without being parsed again."""
    origin = start.key[: start.key.index("/", start.key.index("://") + 3) + 1]
    host = start.host
    twin = host.removeprefix("www.") if host.startswith("www.") else f"www.{host}"
    found = []
    for prefix in (origin, origin.replace(f"://{host}", f"://{twin}", 1)):
        try:
            if parse_url(prefix).key == prefix and site_of(prefix) == site_of(start.key):
                found.append(prefix)
        except (FetchError, ValueError):
            continue  # no twin (an IP address)
    return tuple(found)


class Frontier:
    """Adds a page's in-scope links as items, each once, up to ``max_pages`` in all."""

    def __init__(self, ctx: JobContext[SiteAuditParams], known: set[str]) -> None:
        self._ctx = ctx
        start = parse_url(ctx.params.start_url)
        self.site = site_of(start.key)
        self._origins = _origins(start)
        # Every URL stored or about to be (taken: stored with the page that found it). The
        # checks and updates of it never await, so two pages cannot both take a place.
        self._known = known
        self.rules = UrlRules(ctx.params)
        # When the crawl stops taking pages (the params' crawl_seconds), on the loop's clock.
        self.deadline: float | None = None
        self.out_of_time = False

    def in_scope(self, url: str) -> bool:
        return url.startswith(self._origins) or site_of(url) == self.site

    def expired(self) -> bool:
        """Whether the crawl's time budget is spent (from then on it stays spent)."""
        if self.deadline is not None and not self.out_of_time:
            self.out_of_time = asyncio.get_running_loop().time() >= self.deadline
        return self.out_of_time

    def fresh(self, url: str, depth: int) -> bool:
        """Whether ``url`` is in scope and could still be added at ``depth``."""
        if depth > self._ctx.params.max_depth or len(self._known) >= self._ctx.params.max_pages:
            return False
        return url not in self._known and self.in_scope(url) and self.rules.allowed(url)

    def take(self, urls: list[str], depth: int | None) -> list[dict[str, Any]]:
        """The new items among ``urls`` (up to the room left), counted as known from now on:
        the caller stores them (with its page's result, ``ItemResult.added``, or with
        ``add``). ``depth`` None: pages only a sitemap lists (no click reaches them)."""
        if depth is not None and depth > self._ctx.params.max_depth:
            return []
        room = self._ctx.params.max_pages - len(self._known)
        allowed = self.rules.allowed
        new = [u for u in dict.fromkeys(urls) if u not in self._known and allowed(u)]
        new = new[: max(room, 0)]
        self._known.update(new)
        return [{"url": u, "depth": depth} for u in new]

    async def add(self, urls: list[str], depth: int | None) -> None:
        """Store the new items among ``urls`` now (outside a page: the sitemap's)."""
        if new := self.take(urls, depth):
            await self._ctx.add_items(new)

    async def add_fetched(self, url: str, depth: int, verdict: ItemResult) -> bool:
        """Add ``url`` as an item already audited (from a redirect's final response), unless
        it is known by now or there is no room; whether added."""
        if url in self._known or len(self._known) >= self._ctx.params.max_pages:
            # Known by now (another page linked it while it was audited), or no room: the
            # links it found were taken all the same, so they are stored without it.
            if verdict.added:
                await self._ctx.add_items(verdict.added)
            return False
        self._known.add(url)
        return await self._ctx.add_finished_item({"url": url, "depth": depth}, verdict)


class Keys:
    """The page keys (:func:`resolve`) of a crawl's references, remembered from page to page:
    a site's pages link the same URLs (menus, neighbours), and resolving one (patterns, a
    parse) cost more than the rest of a link's handling. Kept only where the key depends on
    the base's origin alone: absolute ``http://`` and ``https://`` references and paths from
    the root (``/p/2``, not ``//host/p``, ``p/2``, ``?q`` or ``#x``); ``LIMIT`` per origin,
    then forgotten."""

    LIMIT = 10_000
    ORIGINS = 4

    def __init__(self) -> None:
        # origin -> reference -> its key, or "" when it does not resolve (no key is empty)
        self._by_origin: dict[tuple[str, str, int | None], dict[str, str]] = {}

    def _known(self, base: URL) -> dict[str, str]:
        origin = (base.scheme, base.host, base.port)
        known = self._by_origin.get(origin)
        if known is None or len(known) >= self.LIMIT:
            if known is None and len(self._by_origin) >= self.ORIGINS:
                self._by_origin.clear()
            known = self._by_origin[origin] = {}
        return known

    def resolve(self, base: URL, href: str) -> str | None:
        """:func:`resolve` of ``href`` against ``base``: its normalised URL, or None."""
        return self.resolve_all(base, [href])[0]

    def resolve_all(self, base: URL, hrefs: list[str]) -> list[str | None]:
        known = self._known(base)
        found: list[str | None] = []
        for href in hrefs:
            key = known.get(href)
            if key is None:
                key = resolve(base, href) or ""
                if href.startswith(_ABSOLUTE) or (href[:1] == "/" and href[1:2] != "/"):
                    known[href] = key
            found.append(key or None)
        return found


_ABSOLUTE = ("http://", "https://")


def _links(base: URL, facts: PageFacts, keys: Keys) -> list[tuple[str, bool]]:
    """Every link as (normalised absolute URL, nofollow); unparseable ones are dropped."""
    links = facts.links
    found = keys.resolve_all(base, [link.href for link in links])
    return [(key, link.nofollow) for key, link in zip(found, links, strict=True) if key]


def _canonical(base: URL, facts: PageFacts, keys: Keys) -> str | None:
    return keys.resolve(base, facts.canonicals[0]) if facts.canonicals else None


def _first_of_each(base: URL, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """name -> the first URL (normalised) under that name: hreflang's language -> alternate,
    rel=next/prev -> its target."""
    found: dict[str, str] = {}
    for name, href in pairs:
        url = resolve(base, href)
        if url is not None:
            found.setdefault(name, url)
    return found


def _indexability(
    fetched: FetchResult, noindex: bool, canonical: str | None, url: str
) -> str | None:
    """Why the page is not indexable (Screaming Frog's reasons), or None if it is."""
    status = fetched.status
    if status is None:
        return "unreachable"
    reasons = [
        (fetched.redirect_chain != (), "redirected"),
        (400 <= status < 500, "client_error"),
        (status >= 500, "server_error"),
        (not fetched.is_html, "non_html"),
        (noindex, "noindex"),
        (canonical is not None and canonical != url, "canonicalised"),
    ]
    return next((reason for hit, reason in reasons if hit), None)


def _blocked(url: str, depth: int | None, verdict: RobotsVerdict) -> ItemResult:
    record: dict[str, Any] = {
        "url": url,
        "depth": depth,
        "status": None,
        "blocked_by_robots": True,
        "robots": verdict.state,
        "indexable": False,
        "indexability_reason": "blocked_by_robots",
        "issues": [],
    }
    return ItemResult(outcome="blocked", result=record)


class Crawl:
    def __init__(
        self,
        ctx: JobContext[SiteAuditParams],
        fetcher: Fetcher,
        frontier: Frontier,
        external: ExternalLinks | None,
        renderer: Renderer | None = None,
    ) -> None:
        self.ctx = ctx
        self.fetcher = fetcher
        self.frontier = frontier
        self.external = external  # None: external links are not checked
        self.renderer = renderer  # None: render "raw", the HTML as served is audited
        self.reporting = Reporting.of(ctx.params)
        self.keys = Keys()  # the keys of references met on earlier pages

    async def page(self, item: ItemRecord) -> ItemResult:
        url, depth = item.data["url"], item.data["depth"]
        if depth != 0 and self.frontier.expired():
            return ItemResult(outcome="skipped")  # past the crawl's time budget: not fetched
        verdict = await self.fetcher.robots_verdict(url)
        if not verdict.allowed:
            return _blocked(url, depth, verdict)
        fetched = await self.fetcher.fetch(url)
        if depth == 0 and fetched.status is None and not fetched.redirect_chain:
            raise JobFailed(
                TARGET_UNREACHABLE, f"the start URL {url} did not answer: {fetched.error}"
            )
        if fetched.redirect_chain and depth is not None:
            await self._redirect_target(fetched, depth + 1)
        return await self.audit(url, depth, fetched)

    async def _redirect_target(self, fetched: FetchResult, depth: int) -> None:
        """A redirect's target is a page (an item) of its own. When it answered, is new, in
        scope and robots.txt allows it, the final response just followed is that page: audit
        it now and add it finished, rather than fetch it again as its own item. (Its
        ``response_ms`` then spans every hop: what it took to reach.)"""
        target = page_key(fetched.final_url)
        # Not after an error (a loop, a refused or silent hop): no final response was read.
        if not fetched.ok or not self.frontier.fresh(target, depth):
            return
        if not (await self.fetcher.robots_verdict(target)).allowed:
            return
        page = dataclasses.replace(fetched, url=fetched.final_url, redirect_chain=())
        await self.frontier.add_fetched(target, depth, await self.audit(target, depth, page))

    async def audit(self, url: str, depth: int | None, fetched: FetchResult) -> ItemResult:
        """The page at ``url`` from its response: its links added, its checks run."""
        # A redirected page's target is a page (an item) of its own: read it there, once.
        read = fetched.is_html and _ok(fetched) and not fetched.redirect_chain
        facts = parse_page(fetched.text) if read else None
        rendering = None
        if read and self.renderer is not None:
            rendering, facts = await self._render(fetched.final_url, facts)
        final = page_key(fetched.final_url)
        # What the page's URLs resolve against: its <base href>, if any (one base for all).
        base = document_base(fetched.final_url, facts) if facts else None
        links = _links(base, facts, self.keys) if base and facts else []
        clean, in_scope = self.frontier.rules.clean, self.frontier.in_scope
        internal: list[tuple[str, bool]] = []
        outside: list[str] = []  # other sites' links
        for u, nofollow in links:
            if in_scope(u):
                internal.append((clean(u), nofollow))
            else:
                outside.append(u)
        canonical = _canonical(base, facts, self.keys) if base and facts else None
        follow = [u for u, _nofollow in internal]
        follow += [u for u in (final, canonical) if u and u != url and self.frontier.in_scope(u)]
        # Its links are stored with its result (one write); a page only a sitemap lists is
        # audited, its links not followed.
        added = self.frontier.take(follow, depth + 1) if depth is not None else []
        checked = await self.external.outcomes(outside) if self.external and outside else []
        broken = [
            {"target": o["url"], "status": o["status"], "error_kind": o["error_kind"]}
            for o in checked
            if is_broken(o)
        ]
        page = Page(
            url=url,
            depth=depth,
            status=fetched.status,
            elapsed_ms=round(fetched.elapsed * 1000),
            redirects=len(fetched.redirect_chain),
            error_kind=fetched.error_kind,
            facts=facts,
            internal_links=internal,
            broken_external=broken,
            response=fetched,
            rendering=rendering,
        )
        found = page_findings(page, self.ctx.params.thresholds, self.reporting)
        record = _record(page, fetched, canonical, links, internal, base)
        # The robots directives read once, for the checks and here.
        record["indexability_reason"] = _indexability(fetched, page.noindex, canonical, url)
        record["indexable"] = record["indexability_reason"] is None
        record["issues"] = codes(found)
        if base and facts and (facts.subresources or facts.images):  # for its weight
            record["loads"] = _loads(base, facts, self.frontier, self.keys)
        record["external"] = checked  # each external link's outcome, kept for a resume
        return ItemResult(
            outcome="crawled", result=record, findings=tuple(found), added=tuple(added)
        )

    async def _render(self, url: str, raw: PageFacts | None) -> tuple[Rendering, PageFacts | None]:
        """The page rendered: its rendered DOM's facts (links found only there are crawled
        too), or the raw ones when it could not be rendered."""
        assert self.renderer is not None
        done = await self.renderer.render(url)
        if done.html is None:
            return Rendering(raw, error=done.error), raw
        rendered = parse_page(done.html)
        return Rendering(raw, None, done.errors, done.blocked), rendered


def _loads(base: URL, facts: PageFacts, frontier: Frontier, keys: Keys) -> list[str]:
    """The site's own URLs the page loads (scripts, styles, images, media), a bounded
    sample."""
    sources = [*facts.subresources[:MAX_LOADS], *(i.src for i in facts.images[:MAX_LOADS])]
    found = keys.resolve_all(base, [src for src in sources if src])
    return sorted({u for u in found if u and frontier.in_scope(u)})


def _ok(fetched: FetchResult) -> bool:
    return fetched.status is not None and 200 <= fetched.status < 300


def _record(
    page: Page,
    fetched: FetchResult,
    canonical: str | None,
    links: list[tuple[str, bool]],
    internal: list[tuple[str, bool]],
    base: URL | None,
) -> dict[str, Any]:
    facts = page.facts
    return {
        "url": page.url,
        "final_url": fetched.final_url,
        "status": fetched.status,
        "error_kind": fetched.error_kind,
        "depth": page.depth,
        "response_ms": page.elapsed_ms,
        "redirects": page.redirects,
        "content_type": fetched.content_type,
        "title": facts.title if facts else None,
        "description": facts.description if facts else None,
        "h1": facts.h1[0] if facts and facts.h1 else None,
        "canonical": canonical,
        "hreflang": _first_of_each(base, facts.hreflang) if base and facts else {},
        "pagination": _first_of_each(base, facts.pagination) if base and facts else {},
        "words": facts.words if facts else None,
        "content_hash": facts.text_hash if facts else None,
        "out_links": len(internal),
        "external_links": len(links) - len(internal),
        # Distinct internal targets, for the site-wide checks.
        "links": sorted({u for u, _nofollow in internal}),
        "bytes": len(fetched.body),
    }


def _in_scope(urls: list[str], frontier: Frontier) -> list[str]:
    found = []
    for url in urls:
        try:
            key = page_key(url)
        except FetchError:
            continue
        if frontier.in_scope(key):
            found.append(frontier.rules.clean(key))
    return found


async def _check_start(fetcher: Fetcher, start: str) -> None:
    verdict = await fetcher.robots_verdict(start)
    if verdict.state == "disallowed":
        raise JobFailed(BLOCKED_BY_ROBOTS, f"robots.txt ({verdict.robots_url}) disallows {start}")
    if verdict.state == "unreachable" and verdict.status is None:
        raise JobFailed(TARGET_UNREACHABLE, f"{verdict.robots_url} did not answer: {verdict.error}")
    if verdict.state == "unreachable":
        raise JobFailed(
            BLOCKED_BY_ROBOTS,
            f"{verdict.robots_url} answered {verdict.status}: crawlers treat that as disallow-all",
        )


async def run(ctx: JobContext[SiteAuditParams]) -> None:
    """The audit, within ``SEOJOBS_SITE_AUDIT_MAX_SECONDS`` of its first start (a resumed
    audit keeps its first start: a crash does not buy it more time)."""
    limit = float(ctx.kind_settings.max_seconds)
    if not limit:
        await _audit(ctx)
        return
    began = ctx.job.started_at or datetime.now(UTC)
    left = limit - (datetime.now(UTC) - began).total_seconds()
    try:
        async with asyncio.timeout(max(0.0, left)) as scope:
            await _audit(ctx)
    except TimeoutError:
        if not scope.expired():
            raise
        message = f"the audit ran longer than {limit:g} s (SEOJOBS_SITE_AUDIT_MAX_SECONDS)"
        raise JobFailed("timeout", message) from None


async def _previous(ctx: JobContext[SiteAuditParams], frontier: Frontier) -> list[str]:
    """The in-scope URLs that answered 200 in the project's previous audit of the site."""
    subject = parse_url(ctx.params.start_url).host
    rows = await ctx.published_rows(
        subject, PAGE_TABLE.name, ("url", "status"), ctx.params.max_pages
    )
    return _in_scope([r["url"] for r in rows if r["status"] == 200], frontier)


def _external(ctx: JobContext[SiteAuditParams], fetcher: Fetcher) -> ExternalLinks | None:
    """The external link checks of this audit and their budgets, per host and in all."""
    if not ctx.params.check_external_links:
        return None
    knobs = ctx.kind_settings
    budget = min(
        knobs.external_links_per_audit, knobs.external_links_per_page * ctx.params.max_pages
    )
    return ExternalLinks(fetcher, knobs.external_links_per_host, budget)


async def _audit(ctx: JobContext[SiteAuditParams]) -> None:
    params = ctx.params
    settings = ctx.settings
    if params.user_agent:
        settings = settings.model_copy(update={"user_agent": params.user_agent})
    known: set[str] = set()
    outcomes: list[dict[str, Any]] = []  # external links checked before a crash
    async for item in ctx.items():
        known.add(item.data["url"])
        outcomes += (item.result or {}).get("external", [])
    concurrency = ctx.kind_settings.concurrency
    # A page whose result waits for its write gives its place to the next page (a page is
    # cheap to fetch again: a crash may refetch those too), so the crawl never idles behind a
    # commit (on PostgreSQL its fsync: ~2-4 ms on the bench machine, 100 round trips).
    backlog = BACKLOG * concurrency
    listed: list[str] = []
    sitemaps_read = False
    too_large: list[tuple[str, dict[str, Any]]] = []
    async with Fetcher(settings) as fetcher:
        await _check_start(fetcher, params.start_url)
        frontier = Frontier(ctx, known)
        if params.crawl_seconds is not None:
            began = ctx.job.started_at or datetime.now(UTC)
            spent = (datetime.now(UTC) - began).total_seconds()
            frontier.deadline = asyncio.get_running_loop().time() + params.crawl_seconds - spent
        external = _external(ctx, fetcher)
        if external is not None:
            external.restore(outcomes)
        renderer = Renderer(settings, ctx.kind_settings) if params.render == "js" else None
        if renderer is not None:
            renderer.installed()
        crawl = Crawl(ctx, fetcher, frontier, external, renderer)
        try:
            await ctx.run_items(crawl.page, concurrency=concurrency, backlog=backlog)
            if params.include_sitemaps and not frontier.expired():
                sitemaps_read = True
                # After the links: a page reached by no click is then known as such.
                cap = ctx.kind_settings.sitemap_max_bytes
                sitemaps = await discover(fetcher, params.start_url, cap)
                listed, too_large = _in_scope(sitemaps.pages, frontier), sitemaps.too_large
                await frontier.add(listed, None)
                await ctx.run_items(crawl.page, concurrency=concurrency, backlog=backlog)
            previous = await _previous(ctx, frontier)
            if previous and not frontier.expired():
                # The pages the previous audit crawled that neither links nor sitemaps
                # reached now: audited too, and those that still answer are orphans (30.3).
                await frontier.add(previous, None)
                await ctx.run_items(crawl.page, concurrency=concurrency, backlog=backlog)
        finally:
            if renderer is not None:
                await asyncio.shield(renderer.close())
        robots = await fetcher.robots_verdict(params.start_url)  # cached since the start
    files = SiteFiles(
        page_key(params.start_url), robots.robots_url, robots.status, sitemaps_read, too_large
    )
    # Every page's record, read back once (an earlier claim's too) for the site-wide checks
    # and the page table (each read of 5,000 records parses megabytes of JSON), held in
    # columns (sitepages: 100,000 pages within the worker's 300 MB).
    await asyncio.to_thread(release_freed_memory)  # the crawl's, before the columns
    pages = SitePages(known)
    known.clear()  # the frontier's URLs are the pages' own now
    async for item in ctx.items():
        if item.result:
            pages.add(item.seq, item.result)
    listed, previous = pages.shared(listed), pages.shared(previous)
    reporting = Reporting.of(params)
    found = site_findings(pages, listed, files, previous, params.thresholds)
    site = SiteTally()  # counted as they are written, a chunk at a time
    await ctx.add_findings(site.count(reporting.apply(found)))
    # In a thread, as the findings were drawn (JobContext._in_chunks): passes over every page
    # that would hold the event loop, and the worker's heartbeats with it, for seconds.
    data = await asyncio.to_thread(summary, pages, site, params.max_pages, reporting.severity)
    if params.crawl_seconds is not None:
        data["crawl_budget_hit"] = frontier.out_of_time
    ctx.result = data
    await ctx.collect(parse_url(params.start_url).host, {"start_url": params.start_url, **data})
    await write_pages(ctx, pages)  # audit_pages, with in-link counts (reads: issue 13)
