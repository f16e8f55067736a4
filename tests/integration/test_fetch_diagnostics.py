"""inspect(): robots.txt, fetch and diagnosis of real pages on the loopback fixture site."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import pytest

from seojobs.fetch import Diagnostics, Fetcher, RobotsCache, inspect
from seojobs.settings import Settings
from tests.fakes.site import FixtureSite, fence_to_loopback, running_site

Site = tuple[FixtureSite, str]


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = {"database_url": "sqlite://", "allow_private_networks": True}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as served:
        yield served


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher(settings()) as client:
        yield client


async def check(fetcher: Fetcher, url: str) -> Diagnostics:
    return await fetcher.inspect(url)


# Short names keep the table readable.
OK, ALLOWED, DISALLOWED = "SUCCESSFUL", "ALLOWED", "DISALLOWED"
INDEXING, ROBOTS = "INDEXING_ALLOWED", "BLOCKED_BY_ROBOTS_TXT"
META, HEADER = "BLOCKED_BY_META_TAG", "BLOCKED_BY_HTTP_HEADER"
UNKNOWN = "INDEXING_STATE_UNSPECIFIED"


@pytest.mark.parametrize(
    ("path", "fetch_state", "robots_state", "indexing_state", "canonical", "indexable"),
    [
        ("/ok", OK, ALLOWED, INDEXING, "self", True),
        ("/plain", OK, ALLOWED, INDEXING, "missing", True),
        ("/private/page", "BLOCKED_ROBOTS_TXT", DISALLOWED, ROBOTS, "missing", False),
        ("/google-only-blocked", "BLOCKED_ROBOTS_TXT", DISALLOWED, ROBOTS, "missing", False),
        ("/noindex-meta", OK, ALLOWED, META, "missing", False),
        ("/googlebot-none-meta", OK, ALLOWED, META, "missing", False),
        ("/otherbot-noindex-meta", OK, ALLOWED, INDEXING, "missing", True),
        ("/noindex-header", OK, ALLOWED, HEADER, "missing", False),
        ("/googlebot-noindex-header", OK, ALLOWED, HEADER, "missing", False),
        ("/otherbot-noindex-header", OK, ALLOWED, INDEXING, "missing", True),
        ("/canonical-other", OK, ALLOWED, INDEXING, "other", False),
        ("/canonical-in-body", OK, ALLOWED, INDEXING, "missing", True),
        ("/canonical-conflict", OK, ALLOWED, INDEXING, "multiple", True),
        ("/doc.pdf", OK, ALLOWED, INDEXING, "other", False),
        ("/data.json", OK, ALLOWED, INDEXING, "missing", False),
        ("/malformed", OK, ALLOWED, META, "other", False),
        ("/nope", "NOT_FOUND", ALLOWED, INDEXING, "missing", False),
        ("/gone", "NOT_FOUND", ALLOWED, INDEXING, "missing", False),
        ("/forbidden", "ACCESS_FORBIDDEN", ALLOWED, INDEXING, "missing", False),
        ("/error", "SERVER_ERROR", ALLOWED, INDEXING, "missing", False),
        ("/unavailable", "SERVER_ERROR", ALLOWED, INDEXING, "missing", False),
        ("/loop/a", "REDIRECT_ERROR", ALLOWED, UNKNOWN, "missing", False),
        ("/redirect-ftp", "REDIRECT_ERROR", ALLOWED, UNKNOWN, "missing", False),
    ],
)  # fmt: skip
async def test_pages(
    site: Site,
    fetcher: Fetcher,
    path: str,
    fetch_state: str,
    robots_state: str,
    indexing_state: str,
    canonical: str,
    indexable: bool,
) -> None:
    _, base = site
    result = await check(fetcher, f"{base}{path}")
    assert result.page_fetch_state == fetch_state
    assert result.robots_txt_state == robots_state
    assert result.indexing_state == indexing_state
    assert result.canonical.state == canonical
    assert result.indexable is indexable, result.verdict_reason
    assert json.loads(json.dumps(result.to_dict())) == result.to_dict()


async def test_a_robots_blocked_page_is_never_requested(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    result = await check(fetcher, f"{base}/private/page")
    assert fake.paths() == ["/robots.txt"]
    assert result.http_status is None
    assert result.verdict_reason == "Blocked by robots.txt"


async def test_a_page_barred_to_our_agent_only_is_not_requested(
    site: Site, fetcher: Fetcher
) -> None:
    fake, base = site
    result = await check(fetcher, f"{base}/seojobs-only-blocked")
    assert fake.paths() == ["/robots.txt"]
    assert result.robots_txt_state == "ALLOWED"  # Googlebot may crawl it
    assert result.page_fetch_state == "PAGE_FETCH_STATE_UNSPECIFIED"
    assert result.to_dict()["robots_txt"]["state"] == "disallowed"


async def test_a_redirect_chain_ends_on_the_final_page(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    result = await check(fetcher, f"{base}/redirect/3")
    data = result.to_dict()
    assert data["final_url"] == f"{base}/ok"
    assert data["http_status"] == 200
    assert [hop["status"] for hop in data["redirect_chain"]] == [301, 302, 307]
    assert data["canonical_state"] == "self"  # the final page declares itself
    assert data["indexable"] is False
    assert data["verdict_reason"] == f"Redirected to {base}/ok (3 hops)"


async def test_header_and_meta_directives_are_reported(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    header = (await check(fetcher, f"{base}/googlebot-noindex-header")).to_dict()
    meta = (await check(fetcher, f"{base}/noindex-meta")).to_dict()
    assert header["x_robots_tag"]["raw"] == ["otherbot: nofollow", "googlebot: noindex"]
    assert header["x_robots_tag"]["noindex"] is True
    assert header["x_robots_tag"]["nofollow"] is False
    assert meta["meta_robots"]["raw"] == ["noindex, follow"]
    assert meta["verdict_reason"] == "noindex in the robots meta tag"


async def test_canonical_targets_are_absolute(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    html = await check(fetcher, f"{base}/canonical-other")
    header = await check(fetcher, f"{base}/doc.pdf")
    assert html.canonical.url == f"{base}/ok"  # fragment dropped
    assert header.canonical.header == (f"{base}/ok",)


async def test_unreachable_robots_txt_blocks_without_fetching_the_page(fetcher: Fetcher) -> None:
    with running_site(FixtureSite(robots_status=503)) as (fake, base):
        result = await check(fetcher, f"{base}/ok")
        assert fake.paths() == ["/robots.txt"]
    assert result.robots_txt_state == "DISALLOWED"
    assert result.page_fetch_state == "BLOCKED_ROBOTS_TXT"
    assert result.robots_txt is not None
    assert result.robots_txt.googlebot_state == "unreachable"
    assert result.verdict_reason == "robots.txt unreachable (HTTP 503): treated as disallow-all"


async def test_a_missing_robots_txt_allows_everything(fetcher: Fetcher) -> None:
    with running_site(FixtureSite(robots_status=404)) as (_, base):
        result = await check(fetcher, f"{base}/private/page")
    assert (result.robots_txt_state, result.page_fetch_state) == ("ALLOWED", "SUCCESSFUL")


async def test_a_slow_page_is_a_crawl_error(site: Site) -> None:
    _, base = site
    async with Fetcher(settings(fetch_timeout=0.3)) as fetcher:
        result = await check(fetcher, f"{base}/slow")
    assert (result.page_fetch_state, result.fetch_error_kind) == ("INTERNAL_CRAWL_ERROR", "timeout")
    assert result.verdict_reason.startswith("Fetch failed (timeout)")


async def test_a_truncated_page_is_still_judged_by_its_head(site: Site) -> None:
    _, base = site
    async with Fetcher(settings(fetch_max_bytes=4096)) as fetcher:
        result = await check(fetcher, f"{base}/big")
    assert result.truncated
    assert (result.page_fetch_state, result.indexable) == ("SUCCESSFUL", True)


async def test_a_refused_address_is_reported_and_nothing_is_sent(site: Site) -> None:
    fake, base = site
    port = httpx.URL(base).port
    async with Fetcher(settings(allow_private_networks=False)) as fetcher:
        result = await check(fetcher, f"http://127.0.0.1:{port}/ok")
    assert fake.count() == 0
    assert result.fetch_error_kind == "ssrf_refused"
    assert result.page_fetch_state == "INTERNAL_CRAWL_ERROR"
    assert result.robots_txt_state == "ROBOTS_TXT_STATE_UNSPECIFIED"
    assert result.verdict_reason.startswith("Refused by the private-network guard")


@pytest.mark.parametrize("url", ["not a url", "ftp://example.test/", "http://1.2.3.4.5/"])
async def test_invalid_urls(fetcher: Fetcher, url: str) -> None:
    result = await check(fetcher, url)
    assert result.page_fetch_state == "INVALID_URL"
    assert not result.indexable


async def test_a_fetcher_shares_one_robots_cache_across_inspections(
    site: Site, fetcher: Fetcher
) -> None:
    fake, base = site
    for path in ("/ok", "/plain", "/private/page", "/noindex-meta"):
        await fetcher.inspect(f"{base}{path}")
    assert fake.count("/robots.txt") == 1
    assert (await fetcher.robots_verdict(f"{base}/private/page")).state == "disallowed"
    assert fake.count("/robots.txt") == 1


async def test_inspect_with_its_own_robots_cache(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    robots = RobotsCache(fetcher)
    result = await inspect(f"{base}/ok", fetcher, robots)
    assert (result.indexable, result.robots_txt_state) == (True, "ALLOWED")
    assert fake.paths() == ["/robots.txt", "/ok"]


# -- names that do not resolve ---------------------------------------------------------------


async def nxdomain(host: str) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


async def servfail(host: str) -> list[str]:
    raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


async def no_addresses(host: str) -> list[str]:
    return []


async def not_an_address(host: str) -> list[str]:
    return ["nowhere"]


async def never_answers(host: str) -> list[str]:
    await asyncio.Event().wait()  # a resolver that hangs: only the lookup deadline ends it
    return []


DNS_FAILURES = [nxdomain, servfail, no_addresses, not_an_address, never_answers]
# URL Inspection's pageFetchState has no DNS value: a crawl error, with our kind saying which.
DNS_CRAWL_ERROR = ("dns_error", "INTERNAL_CRAWL_ERROR")


class EdgeDNS:
    """The resolver at the network edge: fixture.test is the loopback site; every other name
    fails the given way (no query ever leaves the machine)."""

    def __init__(
        self,
        failure: Callable[[str], Awaitable[list[str]]],
        answers: dict[str, list[str]] | None = None,
    ) -> None:
        self.failure = failure
        self.answers = {"fixture.test": ["127.0.0.1"], **(answers or {})}
        self.calls: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        if host in self.answers:
            return self.answers[host]
        return await self.failure(host)


def dns_fetcher(dns: EdgeDNS) -> Fetcher:
    return Fetcher(settings(), resolver=dns, hop_timeout=0.5)


@pytest.mark.parametrize("failure", DNS_FAILURES)
async def test_a_host_that_does_not_resolve_is_a_dns_error(
    monkeypatch: pytest.MonkeyPatch, failure: Callable[[str], Awaitable[list[str]]]
) -> None:
    attempts = fence_to_loopback(monkeypatch)
    dns = EdgeDNS(failure)
    async with asyncio.timeout(10), dns_fetcher(dns) as fetcher:  # a guard against hanging
        first = await check(fetcher, "http://nowhere.invalid/page")
        second = await check(fetcher, "http://nowhere.invalid/other")
    for result in (first, second):
        assert (result.fetch_error_kind, result.page_fetch_state) == DNS_CRAWL_ERROR
        assert result.robots_txt_state == "ROBOTS_TXT_STATE_UNSPECIFIED"  # never read
        assert result.indexing_state == "INDEXING_STATE_UNSPECIFIED"
        assert not result.indexable
        assert result.verdict_reason.startswith("Fetch failed (dns_error)")
        assert result.fetch_error is not None and "nowhere.invalid" in result.fetch_error
    assert second.requested_url == "http://nowhere.invalid/other"
    assert dns.calls == ["nowhere.invalid"]  # robots.txt's lookup, cached; the page never asked
    assert attempts == []


@pytest.mark.parametrize("failure", DNS_FAILURES)
async def test_a_redirect_to_a_host_that_does_not_resolve_is_a_dns_error(
    site: Site, failure: Callable[[str], Awaitable[list[str]]]
) -> None:
    fake, base = site
    port = httpx.URL(base).port
    dns = EdgeDNS(failure)
    async with asyncio.timeout(10), dns_fetcher(dns) as fetcher:
        result = await check(
            fetcher, f"http://fixture.test:{port}/redirect-to?url=http://gone.invalid/x"
        )
    assert (result.fetch_error_kind, result.page_fetch_state) == DNS_CRAWL_ERROR
    assert result.robots_txt_state == "ALLOWED"
    assert [hop.status for hop in result.redirect_chain] == [302]
    assert result.final_url == "http://gone.invalid/x"
    assert fake.paths() == ["/robots.txt", "/redirect-to"]


async def test_robots_txt_redirected_to_a_host_that_does_not_resolve_blocks_the_page() -> None:
    # The page's own host answers; only its robots.txt is unreachable, which counts as
    # disallow-all (as a 5xx would): the page is not fetched and robots.txt says why.
    moved = FixtureSite(robots_location="http://gone.invalid/robots.txt")
    with running_site(moved) as (fake, base):
        port = httpx.URL(base).port
        async with dns_fetcher(EdgeDNS(nxdomain)) as fetcher:
            result = await check(fetcher, f"http://fixture.test:{port}/ok")
        assert fake.paths() == ["/robots.txt"]
    assert result.page_fetch_state == "BLOCKED_ROBOTS_TXT"
    assert result.fetch_error_kind is None
    assert result.robots_txt is not None
    assert result.robots_txt.error_kind == "dns_error"
    assert result.verdict_reason == "robots.txt unreachable (dns_error): treated as disallow-all"


async def test_a_refused_host_is_looked_up_once_and_robots_txt_redirects_are_checked() -> None:
    # The page's own name resolves to a refused address: reported as the guard's refusal,
    # without a second lookup that a rebinding resolver could answer differently. A robots.txt
    # that redirects to a refused address leaves the page blocked, never fetched unchecked.
    moved = FixtureSite(robots_location="http://10.0.0.1/robots.txt")
    with running_site(moved) as (fake, base):
        port = httpx.URL(base).port
        dns = EdgeDNS(nxdomain, {"intranet.test": ["10.0.0.5"]})
        dns_settings = settings(allow_private_networks=False, fetch_allow_hosts=["fixture.test"])
        async with Fetcher(dns_settings, resolver=dns) as fetcher:
            refused = await check(fetcher, "http://intranet.test/ok")
            blocked = await check(fetcher, f"http://fixture.test:{port}/ok")
        assert fake.paths() == ["/robots.txt"]
    assert (refused.fetch_error_kind, refused.page_fetch_state) == (
        "ssrf_refused",
        "INTERNAL_CRAWL_ERROR",
    )
    assert (blocked.page_fetch_state, blocked.fetch_error_kind) == ("BLOCKED_ROBOTS_TXT", None)
    assert blocked.robots_txt is not None and blocked.robots_txt.error_kind == "ssrf_refused"
    assert dns.calls == ["intranet.test", "fixture.test"]
