"""The fetcher against the loopback fixture site: redirects, caps, timeouts, the guard."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from seojobs.fetch import Fetcher
from seojobs.settings import Settings
from tests.fakes.site import BIG_PAGE_BYTES, FixtureSite, running_site
from tests.waiting import await_until

Site = tuple[FixtureSite, str]


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = {"database_url": "sqlite://", "allow_private_networks": True}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def port_of(base_url: str) -> int:
    port = httpx.URL(base_url).port
    assert port is not None
    return port


class LoopbackResolver:
    """Maps test names to loopback; counts lookups so tests can see when DNS was asked."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = answers or {"fixture.test": ["127.0.0.1"]}
        self.calls: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.answers[host]


@pytest.fixture
def site() -> Iterator[Site]:
    with running_site() as served:
        yield served


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher(settings()) as client:
        yield client


# -- plain fetching (private networks allowed) -------------------------------------------------


async def test_a_page_is_fetched_with_our_user_agent(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    result = await fetcher.fetch(f"{base}/ok")
    assert (result.error_kind, result.status, result.final_url) == (None, 200, f"{base}/ok")
    assert result.content_type == "text/html"
    assert "<title>OK</title>" in result.text
    assert not result.truncated
    assert result.redirect_chain == ()
    assert [s.user_agent for s in fake.seen] == [Settings(database_url="sqlite://").user_agent]


async def test_a_three_hop_redirect_chain_is_recorded(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    result = await fetcher.fetch(f"{base}/redirect/3")
    assert (result.error_kind, result.status, result.final_url) == (None, 200, f"{base}/ok")
    assert [(hop.url, hop.status) for hop in result.redirect_chain] == [
        (f"{base}/redirect/3", 301),
        (f"{base}/redirect/2", 302),
        (f"{base}/redirect/1", 307),
    ]
    assert fake.paths() == ["/redirect/3", "/redirect/2", "/redirect/1", "/ok"]


async def test_a_redirect_loop_is_detected(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    result = await fetcher.fetch(f"{base}/loop/a")
    assert result.error_kind == "redirect_loop"
    assert [hop.url for hop in result.redirect_chain] == [f"{base}/loop/a", f"{base}/loop/b"]
    assert (result.final_url, result.status) == (f"{base}/loop/b", 302)
    assert fake.paths() == ["/loop/a", "/loop/b"]


async def test_chains_longer_than_the_limit_stop(site: Site) -> None:
    fake, base = site
    async with Fetcher(settings(fetch_max_redirects=2)) as fetcher:
        result = await fetcher.fetch(f"{base}/redirect/3")
    assert result.error_kind == "too_many_redirects"
    assert len(result.redirect_chain) == 3
    assert fake.paths() == ["/redirect/3", "/redirect/2", "/redirect/1"]  # /ok never asked


async def test_exactly_the_limit_is_followed(site: Site) -> None:
    _, base = site
    async with Fetcher(settings(fetch_max_redirects=3)) as fetcher:
        result = await fetcher.fetch(f"{base}/redirect/3")
    assert (result.error_kind, result.status) == (None, 200)


async def test_a_redirect_to_another_scheme_is_refused(site: Site, fetcher: Fetcher) -> None:
    fake, base = site
    result = await fetcher.fetch(f"{base}/redirect-ftp")
    assert result.error_kind == "unsupported_scheme"
    assert fake.paths() == ["/redirect-ftp"]


async def test_a_redirect_without_location_is_the_final_response(
    site: Site, fetcher: Fetcher
) -> None:
    _, base = site
    result = await fetcher.fetch(f"{base}/redirect-no-location")
    assert (result.error_kind, result.status, result.redirect_chain) == (None, 302, ())


@pytest.mark.parametrize(
    ("path", "status"), [("/nope", 404), ("/gone", 410), ("/error", 500), ("/unavailable", 503)]
)
async def test_error_statuses_are_responses_not_errors(
    site: Site, fetcher: Fetcher, path: str, status: int
) -> None:
    _, base = site
    result = await fetcher.fetch(f"{base}{path}")
    assert (result.error_kind, result.status) == (None, status)


async def test_non_html_content(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    pdf = await fetcher.fetch(f"{base}/doc.pdf")
    data = await fetcher.fetch(f"{base}/data.json")
    assert (pdf.content_type, pdf.body[:4], pdf.is_html) == ("application/pdf", b"%PDF", False)
    assert (data.content_type, data.body) == ("application/json", b'{"a": 1}')


async def test_a_body_over_the_cap_is_cut_and_marked(site: Site) -> None:
    _, base = site
    async with Fetcher(settings(fetch_max_bytes=10_000)) as fetcher:
        result = await fetcher.fetch(f"{base}/big")
    assert result.error_kind is None
    assert result.truncated
    assert len(result.body) == 10_000
    assert result.body.startswith(b"<!doctype html>")


async def test_a_body_exactly_at_the_cap_is_whole(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    size = len((await fetcher.fetch(f"{base}/big")).body)
    assert size > BIG_PAGE_BYTES
    async with Fetcher(settings(fetch_max_bytes=size)) as exact:
        whole = await exact.fetch(f"{base}/big")
    async with Fetcher(settings(fetch_max_bytes=size - 1)) as short:
        cut = await short.fetch(f"{base}/big")
    assert (whole.truncated, len(whole.body)) == (False, size)
    assert (cut.truncated, len(cut.body)) == (True, size - 1)


async def test_a_gzip_body_is_decoded_and_the_cap_counts_decoded_bytes(site: Site) -> None:
    _, base = site
    async with Fetcher(settings(fetch_max_bytes=10_000)) as fetcher:
        small = await fetcher.fetch(f"{base}/gzip")
        big = await fetcher.fetch(f"{base}/big-gzip")
        diagnostics = await fetcher.inspect(f"{base}/gzip")
    assert (small.error_kind, small.truncated) == (None, False)
    assert small.body.startswith(b"<!doctype html>")
    assert diagnostics.indexing_state == "BLOCKED_BY_META_TAG"
    assert (big.truncated, len(big.body)) == (True, 10_000)
    assert big.body.startswith(b"<!doctype html>")


async def test_a_body_its_content_encoding_cannot_decode_is_a_protocol_error(
    site: Site, fetcher: Fetcher
) -> None:
    _, base = site
    result = await fetcher.fetch(f"{base}/bad-gzip")
    assert (result.error_kind, result.status) == ("protocol_error", None)


async def test_header_values_that_are_not_utf8_are_read_as_latin1(
    site: Site, fetcher: Fetcher
) -> None:
    _, base = site
    result = await fetcher.fetch(f"{base}/latin1-header")
    assert result.headers["x-note"] == "caf\u00e9"
    assert result.header_list("X-Note") == ["caf\u00e9"]


async def test_cookies_set_during_a_fetch_are_sent_back(site: Site, fetcher: Fetcher) -> None:
    # A cookie check (set, redirect, check) passes instead of looping.
    _, base = site
    result = await fetcher.fetch(f"{base}/cookie/set")
    assert (result.error_kind, result.status) == (None, 200)
    assert [hop.status for hop in result.redirect_chain] == [302]


async def test_a_slow_page_times_out(site: Site) -> None:
    fake, base = site
    async with Fetcher(settings(fetch_timeout=0.3)) as fetcher:
        result = await fetcher.fetch(f"{base}/slow")
    assert result.error_kind == "timeout"
    assert result.status is None
    assert fake.paths() == ["/slow"]


async def test_a_page_that_never_finishes_hits_the_hop_deadline(site: Site) -> None:
    fake, base = site
    async with Fetcher(settings(fetch_timeout=5), hop_timeout=0.5) as fetcher:
        result = await fetcher.fetch(f"{base}/trickle")
    assert result.error_kind == "timeout"
    assert result.error is not None
    assert "no complete response" in result.error
    assert fake.paths() == ["/trickle"]


async def test_nothing_listening_is_a_connect_error(fetcher: Fetcher) -> None:
    with running_site() as (_, base):
        port = port_of(base)
    result = await fetcher.fetch(f"http://127.0.0.1:{port}/")  # the server has stopped
    assert result.error_kind == "connect_error"


async def test_tls_to_a_plain_http_server_is_a_tls_error(site: Site, fetcher: Fetcher) -> None:
    _, base = site
    result = await fetcher.fetch(f"https://127.0.0.1:{port_of(base)}/ok")
    assert result.error_kind == "tls_error", result.error


async def test_requests_to_one_host_are_limited(site: Site) -> None:
    fake, base = site
    async with Fetcher(settings(fetch_host_concurrency=2)) as fetcher:
        tasks = [asyncio.create_task(fetcher.fetch(f"{base}/hold")) for _ in range(5)]

        async def two_in_flight_three_queued() -> bool:
            return fake.inflight == 2 and fetcher.gate.waiting("127.0.0.1") == 3

        await await_until(two_in_flight_three_queued, timeout=10)
        fake.release.set()
        results = await asyncio.gather(*tasks)
    assert [r.status for r in results] == [200] * 5
    assert fake.max_inflight == 2
    assert fake.count("/hold") == 5


# -- the guard, end to end ------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/ok",
        "http://127.1.2.3:{port}/ok",
        "http://localhost:{port}/ok",
        "http://fixture.test:{port}/ok",
        "http://2130706433:{port}/ok",
        "http://[::ffff:127.0.0.1]:{port}/ok",
    ],
)
async def test_loopback_is_refused_and_the_site_sees_nothing(site: Site, url: str) -> None:
    fake, base = site
    resolver = LoopbackResolver()
    async with Fetcher(settings(allow_private_networks=False), resolver=resolver) as fetcher:
        result = await fetcher.fetch(url.format(port=port_of(base)))
    assert result.error_kind == "ssrf_refused", result.error
    assert fake.count() == 0


async def test_ipv6_loopback_is_refused_and_the_site_sees_nothing() -> None:
    with running_site(host="::1") as (fake, base):
        async with Fetcher(settings(allow_private_networks=False)) as fetcher:
            refused = await fetcher.fetch(f"{base}/ok")
        assert (refused.error_kind, fake.count()) == ("ssrf_refused", 0)
        async with Fetcher(settings()) as fetcher:  # the control: the site is reachable
            allowed = await fetcher.fetch(f"{base}/ok")
        assert (allowed.status, fake.count()) == (200, 1)


async def test_an_allow_listed_name_is_fetched_by_its_validated_address(site: Site) -> None:
    fake, base = site
    port = port_of(base)
    resolver = LoopbackResolver()
    config = settings(allow_private_networks=False, fetch_allow_hosts=["fixture.test"])
    async with Fetcher(config, resolver=resolver) as fetcher:
        result = await fetcher.fetch(f"http://fixture.test:{port}/redirect/3")
    # The OS cannot resolve fixture.test: the connection went to the address we validated.
    assert (result.error_kind, result.status) == (None, 200)
    assert result.final_url == f"http://fixture.test:{port}/ok"
    assert {s.host for s in fake.seen} == {f"fixture.test:{port}"}  # Host header kept
    # Once for the four hops (the fetcher keeps the answer), never again inside aiohttp.
    assert resolver.calls == ["fixture.test"]


@pytest.mark.parametrize(("ttl", "lookups"), [(60.0, 1), (0.0, 4)])
async def test_a_fetcher_resolves_a_name_once_while_its_answer_is_kept(
    site: Site, ttl: float, lookups: int
) -> None:
    """The system resolver, for a name of its own (localhost): fetches at once share one
    lookup and later ones reuse it; ``fetch_dns_ttl=0`` asks again every hop."""
    fake, base = site
    url = f"http://localhost:{port_of(base)}/ok"
    async with Fetcher(settings(fetch_dns_ttl=ttl)) as fetcher:
        first = await asyncio.gather(*(fetcher.fetch(url) for _ in range(3)))
        later = await fetcher.fetch(url)
        assert [r.status for r in (*first, later)] == [200] * 4
        assert fetcher.guard.lookups == lookups
    assert fake.count("/ok") == 4


async def test_an_allow_listed_name_cannot_redirect_to_loopback(site: Site) -> None:
    fake, base = site
    port = port_of(base)
    target = f"http://127.0.0.1:{port}/ok"
    config = settings(allow_private_networks=False, fetch_allow_hosts=["fixture.test"])
    async with Fetcher(config, resolver=LoopbackResolver()) as fetcher:
        result = await fetcher.fetch(f"http://fixture.test:{port}/redirect-to?url={target}")
    assert result.error_kind == "ssrf_refused"
    assert result.final_url == target
    assert [hop.status for hop in result.redirect_chain] == [302]
    assert fake.paths() == ["/redirect-to"]


async def test_connections_use_the_first_answer_even_if_dns_changes(site: Site) -> None:
    fake, base = site
    port = port_of(base)

    class Rebinding(LoopbackResolver):
        async def __call__(self, host: str) -> list[str]:
            self.calls.append(host)
            # Only the first answer reaches the server; a later lookup would miss it.
            return ["127.0.0.1"] if len(self.calls) == 1 else ["127.0.0.2"]

    resolver = Rebinding()
    async with Fetcher(settings(), resolver=resolver) as fetcher:
        result = await fetcher.fetch(f"http://rebind.test:{port}/ok")
    assert (result.error_kind, result.status) == (None, 200)
    assert resolver.calls == ["rebind.test"]
    assert fake.count("/ok") == 1


async def test_tls_keeps_the_hostname_for_sni_while_dialling_the_pinned_address() -> None:
    server_names: list[str | None] = []
    connections: list[str] = []

    async def handshake_only(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer.get_extra_info("sockname")[0])
        hello = await reader.read(65536)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # no certificate: record SNI, fail
        context.sni_callback = lambda _obj, name, _ctx: server_names.append(name)
        incoming = ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, ssl.MemoryBIO(), server_side=True)
        incoming.write(hello)
        with pytest.raises(ssl.SSLError):
            tls.do_handshake()
        writer.close()

    server = await asyncio.start_server(handshake_only, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = settings(allow_private_networks=False, fetch_allow_hosts=["fixture.test"])
    try:
        async with Fetcher(config, resolver=LoopbackResolver()) as fetcher:
            result = await fetcher.fetch(f"https://fixture.test:{port}/")
    finally:
        server.close()
        await server.wait_closed()
    assert result.error_kind == "tls_error", result.error
    assert connections == ["127.0.0.1"]
    assert server_names == ["fixture.test"]
