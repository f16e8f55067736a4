"""robots.txt verdicts, caching and fetch policy against the loopback fixture site."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from seojobs.fetch import Fetcher, RobotsCache
from seojobs.fetch.politeness import MAX_CRAWL_DELAY
from seojobs.settings import Settings
from tests.fakes.site import FixtureSite, running_site

Site = tuple[FixtureSite, str]


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = {"database_url": "sqlite://", "allow_private_networks": True}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as served:
        yield served


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher(settings()) as client:
        yield client


@pytest.mark.parametrize(
    ("path", "ours", "google"),
    [
        ("/ok", "allowed", "allowed"),
        ("/private/page", "disallowed", "disallowed"),
        ("/google-only-blocked", "allowed", "disallowed"),
        ("/seojobs-only-blocked", "disallowed", "allowed"),
    ],
)
async def test_verdicts_for_our_agent_and_googlebot(
    site: Site, fetcher: Fetcher, path: str, ours: str, google: str
) -> None:
    _, base = site
    verdict = await RobotsCache(fetcher).verdict(f"{base}{path}")
    assert (verdict.state, verdict.googlebot_state) == (ours, google)
    assert verdict.allowed is (ours == "allowed")
    assert (verdict.status, verdict.user_agent) == (200, "seojobs")
    assert verdict.robots_url == f"{base}/robots.txt"


async def test_one_fetch_per_origin_while_fresh(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    clock = FakeClock()
    robots = RobotsCache(fetcher, ttl=60, clock=clock)
    verdicts = await asyncio.gather(*(robots.verdict(f"{base}/ok?{i}") for i in range(10)))
    assert {v.state for v in verdicts} == {"allowed"}
    await robots.verdict(f"{base}/private/page")
    assert fake.count("/robots.txt") == 1
    clock.now += 61
    await robots.verdict(f"{base}/ok")
    assert fake.count("/robots.txt") == 2


async def test_origins_are_cached_separately(fetcher: Fetcher) -> None:
    with running_site() as (one, base_one), running_site() as (two, base_two):
        robots = RobotsCache(fetcher)
        await robots.verdict(f"{base_one}/ok")
        await robots.verdict(f"{base_two}/ok")
        await robots.verdict(f"{base_one}/plain")
        assert (one.count("/robots.txt"), two.count("/robots.txt")) == (1, 1)


@pytest.mark.parametrize("status", [401, 403, 404, 410])
async def test_a_4xx_robots_txt_allows_everything(fetcher: Fetcher, status: int) -> None:
    with running_site(FixtureSite(robots_status=status)) as (_, base):
        verdict = await RobotsCache(fetcher).verdict(f"{base}/private/page")
    assert (verdict.state, verdict.googlebot_state, verdict.status) == (
        "allowed",
        "allowed",
        status,
    )


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_a_5xx_or_429_robots_txt_is_unreachable(fetcher: Fetcher, status: int) -> None:
    with running_site(FixtureSite(robots_status=status)) as (_, base):
        verdict = await RobotsCache(fetcher).verdict(f"{base}/ok")
    assert (verdict.state, verdict.googlebot_state, verdict.status) == (
        "unreachable",
        "unreachable",
        status,
    )
    assert not verdict.allowed


async def test_unreachable_is_retried_sooner_than_rules(fetcher: Fetcher) -> None:
    clock = FakeClock()
    with running_site(FixtureSite(robots_status=503)) as (fake, base):
        robots = RobotsCache(fetcher, ttl=3600, error_ttl=10, clock=clock)
        await robots.verdict(f"{base}/ok")
        clock.now += 11
        await robots.verdict(f"{base}/ok")
        assert fake.count("/robots.txt") == 2


async def test_no_server_is_unreachable_with_the_fetch_error(fetcher: Fetcher) -> None:
    with running_site() as (_, base):
        pass  # stopped: nothing listens on its port now
    verdict = await RobotsCache(fetcher).verdict(f"{base}/ok")
    assert (verdict.state, verdict.status, verdict.error_kind) == (
        "unreachable",
        None,
        "connect_error",
    )


async def test_robots_txt_goes_through_the_guard(site: Site) -> None:
    fake, base = site
    port = httpx.URL(base).port

    async def resolver(host: str) -> list[str]:
        return ["127.0.0.1"]

    async with Fetcher(settings(allow_private_networks=False), resolver=resolver) as fetcher:
        verdict = await RobotsCache(fetcher).verdict(f"http://fixture.test:{port}/ok")
    assert (verdict.state, verdict.error_kind) == ("unreachable", "ssrf_refused")
    assert fake.count() == 0


async def test_a_robots_txt_redirect_loop_allows_everything(fetcher: Fetcher) -> None:
    with running_site(FixtureSite(robots_location="/loop/a")) as (fake, base):
        verdict = await RobotsCache(fetcher).verdict(f"{base}/private/page")
        assert fake.paths() == ["/robots.txt", "/loop/a", "/loop/b"]
    assert (verdict.state, verdict.error_kind) == ("allowed", "redirect_loop")


async def test_a_redirected_robots_txt_is_followed(fetcher: Fetcher) -> None:
    with running_site() as (real, target):
        moved = FixtureSite(robots_location=f"{target}/robots.txt")
        with running_site(moved) as (_, base):
            verdict = await RobotsCache(fetcher).verdict(f"{base}/private/page")
        assert real.paths() == ["/robots.txt"]
    assert (verdict.state, verdict.status) == ("disallowed", 200)


@pytest.mark.parametrize(("declared", "applied"), [("7", 7.0), ("86400", MAX_CRAWL_DELAY)])
async def test_crawl_delay_slows_the_host(fetcher: Fetcher, declared: str, applied: float) -> None:
    robots_txt = f"User-agent: seojobs\nCrawl-delay: {declared}\nDisallow: /private/\n"
    with running_site(FixtureSite(robots_txt=robots_txt)) as (_, base):
        verdict = await RobotsCache(fetcher).verdict(f"{base}/ok")
    assert verdict.crawl_delay == float(declared)
    assert fetcher.gate.delay_for("127.0.0.1") == applied


async def test_an_invalid_url_gets_a_verdict_not_an_exception(fetcher: Fetcher) -> None:
    verdict = await RobotsCache(fetcher).verdict("not a url")
    assert (verdict.state, verdict.error_kind) == ("unreachable", "invalid_url")
