"""The server's one HTTP client (``seojobs.fetch.http``) on its own, against raw loopback servers.

The fetcher and the provider adapters are tested through it elsewhere (test_fetch_client,
test_provider_*, test_http_failures, test_http_proxies); here: what it sends, what it reads,
its caps and the error kinds at its edge.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from seojobs.fetch import errors
from seojobs.fetch.errors import FetchError, UnreadableBody
from seojobs.fetch.http import HttpClient
from tests.fakes import raw
from tests.fakes.edge import RecordingConnector
from tests.fakes.raw import RawServer, raw_server


def client(**overrides: Any) -> HttpClient:
    options: dict[str, Any] = {
        "headers": {"User-Agent": "seojobs-test"},
        "connect_timeout": 2.0,
        "read_timeout": 2.0,
        "deadline": 10.0,
        "max_bytes": 1000,
        **overrides,
    }
    return HttpClient(**options)


def answer(status: str, headers: bytes, body: bytes) -> raw.Answer:
    return raw.send(
        f"HTTP/1.1 {status}\r\n".encode()
        + headers
        + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
        + body
    )


@pytest.fixture
async def echo() -> AsyncIterator[RawServer]:
    """Answers 200 "ok"; the test reads what was sent from ``heads``."""
    async with raw_server(answer("200 OK", b"Content-Type: text/plain\r\n", b"ok")) as served:
        yield served


async def test_json_form_auth_and_params_are_sent_as_documented(echo: RawServer) -> None:
    async with client() as http:
        await http.post(echo.base + "/j", json={"q": "caf\u00e9", "n": [1]})
        await http.post(echo.base + "/f", form={"grant_type": "a b", "x": "&="})
        await http.get(echo.base + "/p", params={"q": "site:a.com/x y"}, auth=("us\u00e9r", "pw"))
    json_head, form_head, get_head = (h.decode("latin-1") for h in echo.heads)
    assert "content-type: application/json" in json_head.lower()
    assert "content-type: application/x-www-form-urlencoded" in form_head.lower()
    assert get_head.startswith("GET /p?q=site:a.com/x") and "user-agent: seojobs-test" in (
        get_head.lower()
    )
    credentials = base64.b64encode("us\u00e9r:pw".encode()).decode()
    assert f"Authorization: Basic {credentials}" in get_head


async def test_long_response_headers_are_read() -> None:
    # Real sites send header lines well over aiohttp's default 8 KiB (cookies, CSP).
    policy = b"default-src 'self'; " + b"a" * 20_000
    served = answer("200 OK", b"Content-Security-Policy: " + policy + b"\r\n", b"ok")
    async with raw_server(served) as server, client() as http:
        response = await http.get(server.base)
    assert response.text == "ok"
    assert response.headers["content-security-policy"] == policy.decode()


@pytest.mark.parametrize(
    ("value", "read"),
    [(b"caf\xc3\xa9", "caf\u00e9"), (b"caf\xe9", "caf\u00e9"), (b"\xff\xfe", "\u00ff\u00fe")],
    ids=["utf-8", "latin-1", "not-utf-8"],
)
async def test_header_values_are_never_lone_surrogates(value: bytes, read: str) -> None:
    served = answer("200 OK", b"X-Note: " + value + b"\r\n", b"ok")
    async with raw_server(served) as server, client() as http:
        response = await http.get(server.base)
    assert response.headers["x-note"] == read


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [
        (b"text/plain; charset=iso-8859-1", b"caf\xe9", "caf\u00e9"),
        (b"application/json", b'{"a": "caf\xc3\xa9"}', '{"a": "caf\u00e9"}'),
        (b"text/plain; charset=no-such-codec", b"caf\xc3\xa9", "caf\u00e9"),
        (b"text/plain", b"caf\xe9", "caf\ufffd"),
    ],
    ids=["declared", "utf-8-default", "unknown-charset", "undecodable"],
)
async def test_text_follows_the_declared_charset(
    content_type: bytes, body: bytes, text: str
) -> None:
    served = answer("200 OK", b"Content-Type: " + content_type + b"\r\n", body)
    async with raw_server(served) as server, client() as http:
        response = await http.get(server.base)
    assert response.text == text


async def test_an_answer_over_the_cap_is_refused_or_cut() -> None:
    async with raw_server(raw.endless) as server, client(max_bytes=100_000) as http:
        with pytest.raises(UnreadableBody) as caught:
            await http.get(server.base)
        cut = await http.get(server.base, truncate=True)
    assert caught.value.kind == errors.TOO_LARGE
    assert (cut.status, cut.truncated, len(cut.body)) == (200, True, 100_000)


@pytest.mark.parametrize("size", [99, 100, 101, 150])
async def test_an_answer_received_whole_is_capped_like_one_that_streams(size: int) -> None:
    # A small answer arrives with its headers and is taken from aiohttp's buffer at once.
    served = answer("200 OK", b"Content-Type: text/plain\r\n", bytes(range(size)))
    async with raw_server(served) as server, client(max_bytes=100) as http:
        cut = await http.get(server.base, truncate=True)
        if size > 100:
            with pytest.raises(UnreadableBody) as caught:
                await http.get(server.base)
            assert caught.value.kind == errors.TOO_LARGE
        else:
            assert (await http.get(server.base)).body == bytes(range(size))
    assert (cut.body, cut.truncated) == (bytes(range(min(size, 100))), size > 100)


async def test_the_deadline_ends_an_answer_that_trickles() -> None:
    # Each byte comes well within the read timeout; only the deadline can end this.
    async with raw_server(raw.trickle) as server, client(deadline=0.5) as http:
        with pytest.raises(FetchError) as caught:
            async with asyncio.timeout(10):  # a guard: the deadline should end it first
                await http.get(server.base)
    assert caught.value.kind == errors.TIMEOUT
    assert "no complete response within 0.5s" in caught.value.message


async def test_a_redirect_body_can_be_left_unread() -> None:
    served = answer("302 Found", b"Location: /next\r\n", b"x" * 5000)
    async with raw_server(served) as server, client(max_bytes=10) as http:
        response = await http.get(server.base, read_body=lambda status, _: status == 200)
    assert (response.status, response.headers["location"], response.body) == (302, "/next", b"")


class NoSuchHost(AbstractResolver):
    """DNS at the network edge: every name is unknown (no query leaves the machine)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        raise OSError(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        return None


async def test_a_name_that_does_not_resolve_is_a_dns_error() -> None:
    dns = NoSuchHost()
    edge = lambda: aiohttp.TCPConnector(resolver=dns)  # noqa: E731
    async with client(connector=edge) as http:
        with pytest.raises(FetchError) as caught:
            await http.get("http://api.example.invalid/search")
    assert caught.value.kind == errors.DNS_ERROR
    assert dns.asked == ["api.example.invalid"]


async def test_an_injected_connector_carries_every_request_and_the_client_reopens(
    echo: RawServer,
) -> None:
    edges: list[RecordingConnector] = []

    def edge() -> RecordingConnector:
        edges.append(RecordingConnector())
        return edges[-1]

    http = client(connector=edge)
    assert http.closed
    await http.get(echo.base + "/a")
    assert not http.closed
    await http.aclose()
    assert http.closed
    await http.get(echo.base + "/b")  # opened again, on a new connector
    await http.aclose()
    assert [e.requests for e in edges] == [[f"GET {echo.base}/a"], [f"GET {echo.base}/b"]]


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://[bad/x", errors.INVALID_URL),
        ("http://127.0.0.1:99999/x", errors.INVALID_URL),
        ("/relative/x", errors.INVALID_URL),
        ("", errors.INVALID_URL),
        ("ftp://127.0.0.1/x", errors.UNSUPPORTED_SCHEME),
    ],
)
async def test_a_url_that_cannot_be_sent_is_our_error_and_nothing_is_dialled(
    url: str, kind: str
) -> None:
    edges: list[RecordingConnector] = []

    def edge() -> RecordingConnector:
        edges.append(RecordingConnector())
        return edges[-1]

    async with client(connector=edge) as http:
        with pytest.raises(FetchError) as caught:
            await http.get(url)
    assert caught.value.kind == kind
    assert [e.requests for e in edges] in ([], [[]])
