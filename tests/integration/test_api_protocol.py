"""The server's request limits (seojobs.api.protocol), on a real uvicorn server on loopback:
head size (431/414) and time (408), body time (408) and size (413), and the connections a
slow client holds. Short limits come from the settings.

All of it happens before the app reaches a store: SQLite only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy import func, select

from seojobs.store.tables import jobs
from tests.api_helpers import PROBLEM_JSON, V1, Api, api
from tests.conftest import make_settings
from tests.rawhttp import (
    Reader,
    Reply,
    connect,
    drip,
    drip_many,
    one_byte_at_a_time,
    only_reply,
    read_reply,
    read_until_closed,
    replies,
    request_head,
)

# Store-agnostic (the limits act before the app, let alone the store): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

HEAD_LIMIT = 4096
CAP = 2_000
TIMEOUT = 1.0  # header_timeout and body_timeout
MIN_RATE = 100.0  # bytes/s
EVERY = 0.1  # seconds between the bytes of a slow client (10 bytes/s)
CHECK = f"{V1}/index-check/jobs"


def limited(url: str) -> Iterator[Api]:
    settings = make_settings(
        url,
        max_header_bytes=HEAD_LIMIT,
        max_body_bytes=CAP,
        header_timeout=TIMEOUT,
        body_timeout=TIMEOUT,
        body_min_rate=MIN_RATE,
    )
    with api(settings, run_worker=False) as running:
        yield running


@pytest.fixture
def server(sqlite_url: str) -> Iterator[Api]:
    yield from limited(sqlite_url)


@pytest.fixture
def stored(store_url: str) -> Iterator[Api]:
    yield from limited(store_url)


def assert_refused(raw: bytes | None, status: int, code: str) -> Reply:
    """``raw`` (all a connection received, up to the server's close) is one problem+json."""
    assert raw is not None, "the server never answered"
    reply = only_reply(raw)
    assert reply.status == status, reply
    assert reply.headers["content-type"] == PROBLEM_JSON
    assert reply.headers["connection"] == "close"
    body = reply.json()
    assert body["status"] == status
    assert body["type"].endswith("/" + code), body
    assert body["title"] and body["detail"]
    return reply


def healthy(app: Api) -> None:
    """A normal request, on a new connection, is answered."""
    with connect(app.base) as sock:
        sock.sendall(request_head("GET", "/healthz"))
        assert read_reply(sock).status == 200


# -- head: time -----------------------------------------------------------------------------

SLOW_HEADS = {
    "request line": b"GET /healthz HTTP/1.1\r\n" + b"x" * 100,
    "header name": request_head("GET", "/healthz")[:-2] + b"X-" + b"n" * 200,
    "header value": request_head("GET", "/healthz")[:-2] + b"X-Slow: " + b"v" * 200,
    "endless headers": request_head("GET", "/healthz")[:-2] + b"X-A: 1\r\n" * 40,
}


@pytest.mark.parametrize("head", SLOW_HEADS.values(), ids=SLOW_HEADS.keys())
def test_a_head_sent_slowly_gets_408_and_the_connection_closes(server: Api, head: bytes) -> None:
    with connect(server.base) as sock:
        answer = drip(sock, one_byte_at_a_time(head), EVERY)
    assert_refused(answer, 408, "header_timeout")
    healthy(server)


def test_a_head_that_stops_gets_408(server: Api) -> None:
    for partial in (b"G", b"GET /healthz HTTP/1.1\r\nHost: a\r\n"):
        with connect(server.base) as sock:
            sock.sendall(partial)
            assert_refused(read_until_closed(sock), 408, "header_timeout")


def test_the_next_head_on_a_kept_alive_connection_is_timed_too(server: Api) -> None:
    with connect(server.base) as sock:
        for _ in range(3):
            sock.sendall(request_head("GET", "/healthz"))
            assert read_reply(sock).status == 200
        answer = drip(sock, one_byte_at_a_time(SLOW_HEADS["header value"]), EVERY)
    assert_refused(answer, 408, "header_timeout")


def test_a_connection_that_sends_nothing_is_closed_quietly(server: Api) -> None:
    with connect(server.base) as sock:
        assert read_until_closed(sock) == b""


# -- head: size -----------------------------------------------------------------------------


def big_header(size: int) -> bytes:
    return request_head("GET", "/healthz", "X-Big: " + "a" * size)


def many_headers(size: int) -> bytes:
    return request_head("GET", "/healthz", *(f"X-H{i}: {'v' * 90}" for i in range(size // 100)))


OVERSIZED = {
    "1 MB header": big_header(1_000_000),
    "8 MB header": big_header(8_000_000),
    "just over": big_header(HEAD_LIMIT + 1),
    "many headers": many_headers(2 * HEAD_LIMIT),
    "many headers, 1 MB": many_headers(1_000_000),
}


@pytest.mark.parametrize("request_", OVERSIZED.values(), ids=OVERSIZED.keys())
def test_a_head_over_the_limit_gets_431(server: Api, request_: bytes) -> None:
    with connect(server.base) as sock:
        sock.sendall(request_)  # all of it: the server reads on after answering (lingers)
        reply = assert_refused(read_until_closed(sock), 431, "headers_too_large")
    assert str(HEAD_LIMIT) in reply.json()["detail"]
    healthy(server)


def test_a_head_over_the_limit_sent_in_pieces_gets_431(server: Api) -> None:
    head = big_header(3 * HEAD_LIMIT)
    pieces = (head[i : i + 512] for i in range(0, len(head), 512))
    with connect(server.base) as sock:
        assert_refused(drip(sock, pieces, 0.02), 431, "headers_too_large")


@pytest.mark.parametrize("size", [HEAD_LIMIT + 1, 1_000_000])
def test_a_url_over_the_limit_gets_414(server: Api, size: int) -> None:
    with connect(server.base) as sock:
        sock.sendall(request_head("GET", "/" + "a" * size))
        assert_refused(read_until_closed(sock), 414, "uri_too_long")
    healthy(server)


def test_heads_under_the_limit_are_served_however_they_arrive(server: Api) -> None:
    near = big_header(HEAD_LIMIT - 200)
    with connect(server.base) as sock:
        sock.sendall(near)
        assert read_reply(sock).status == 200
        # in pieces, so that the server reads it in several chunks
        assert drip(sock, (near[i : i + 500] for i in range(0, len(near), 500)), 0.02) is None
        assert read_reply(sock).status == 200
        # pipelined: two heads (over the limit together) in one write
        sock.sendall(near + near)
        reader = Reader(sock)
        assert [reader.reply().status, reader.reply().status] == [200, 200]
        # a small head followed by a body larger than the head limit, in one write
        body = b"x" * (CAP - 1)
        sock.sendall(request_head("POST", "/healthz", f"Content-Length: {len(body)}") + body)
        assert reader.reply().status == 405


# -- body: time -----------------------------------------------------------------------------

URLS = b'{"urls": ["https://example.com/a", "https://example.com/b"]}'


def post_head(app: Api, *headers: str) -> bytes:
    key = app.account().key
    return request_head(
        "POST", CHECK, f"Authorization: {key}", "Content-Type: application/json", *headers
    )


def chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)


STALLED = ["no byte of it", "half of it", "chunked, mid-chunk", "chunked, between chunks"]


def stalled_body(app: Api, name: str) -> bytes:
    length = f"Content-Length: {len(URLS)}"
    te = "Transfer-Encoding: chunked"
    return {
        "no byte of it": post_head(app, length),
        "half of it": post_head(app, length) + URLS[: len(URLS) // 2],
        "chunked, mid-chunk": post_head(app, te) + chunked(URLS)[:20],
        "chunked, between chunks": post_head(app, te) + chunked(URLS[:10]),
    }[name]


@pytest.mark.parametrize("name", STALLED)
def test_a_body_that_stops_gets_408_and_nothing_is_stored(stored: Api, name: str) -> None:
    with connect(stored.base) as sock:
        sock.sendall(stalled_body(stored, name))
        assert_refused(read_until_closed(sock), 408, "body_timeout")
    assert_nothing_stored(stored)


@pytest.mark.parametrize("encoding", ["length", "chunked"])
def test_a_body_sent_slowly_gets_408_and_nothing_is_stored(stored: Api, encoding: str) -> None:
    """One byte every 0.1 s never leaves the body silent for body_timeout, but stays under
    body_min_rate."""
    padded = URLS + b" " * 1000
    if encoding == "length":
        head, body = post_head(stored, f"Content-Length: {len(padded)}"), padded
    else:
        head, body = post_head(stored, "Transfer-Encoding: chunked"), chunked(padded)
    with connect(stored.base) as sock:
        sock.sendall(head)
        answer = drip(sock, one_byte_at_a_time(body), EVERY)
    assert_refused(answer, 408, "body_timeout")
    assert_nothing_stored(stored)


def assert_nothing_stored(app: Api) -> None:
    """No job of anyone's: a refused request left nothing behind."""
    with app.services.db.read() as conn:
        assert conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 0


def test_a_body_that_keeps_coming_is_served(stored: Api) -> None:
    """Pauses shorter than body_timeout, at a rate over body_min_rate: the job is created."""
    pieces = [URLS[i : i + 16] for i in range(0, len(URLS), 16)]
    with connect(stored.base) as sock:
        sock.sendall(post_head(stored, f"Content-Length: {len(URLS)}"))
        assert drip(sock, pieces, 0.2) is None
        reply = read_reply(sock)
        assert reply.status == 202, reply
        # and with Expect: 100-continue, the body sent once we ask for it
        sock.sendall(post_head(stored, f"Content-Length: {len(URLS)}", "Expect: 100-continue"))
        assert read_reply(sock).status == 100
        sock.sendall(URLS)
        assert read_reply(sock).status == 202


# -- body: size -----------------------------------------------------------------------------


UNREAD = {
    "GET, chunked": request_head("GET", "/healthz", "Transfer-Encoding: chunked"),
    "GET, declared": request_head("GET", "/healthz", f"Content-Length: {50 * CAP}"),
    "405, chunked": request_head("POST", "/healthz", "Transfer-Encoding: chunked"),
    "404, chunked": request_head("POST", "/nowhere", "Transfer-Encoding: chunked"),
}


def test_a_body_over_the_cap_ends_the_connection_even_when_the_app_does_not_read_it(
    stored: Api,
) -> None:
    """The app answers these without reading their body; the rest of a body over
    max_body_bytes is not read for ever: the server closes the connection (it used to read
    5 MB after a 2 kB cap)."""
    for name, head in UNREAD.items():
        with connect(stored.base) as sock:
            sock.sendall(head)
            answered = read_reply(sock)
            assert answered.status in (200, 404, 405, 413), (name, answered)
            body = b"x" * (50 * CAP)
            if "chunked" in name:
                body = chunked(*(body[i : i + 1000] for i in range(0, len(body), 1000)))
            sock.sendall(body)
            assert read_until_closed(sock) == b"", name
    assert_nothing_stored(stored)
    healthy(stored)


@pytest.mark.parametrize("path", ["/healthz", "/nowhere", CHECK])
@pytest.mark.parametrize("expect", [False, True], ids=["sent", "100-continue"])
def test_a_body_declared_over_the_cap_gets_413_and_close(
    stored: Api, path: str, expect: bool
) -> None:
    """Before the app runs, and with "connection: close": a client that sent the body anyway
    (httpx does) must not reuse a connection the server is about to close."""
    headers = [f"Content-Length: {CAP + 1}", "Content-Type: application/json"]
    body = b"x" * (CAP + 1)
    with connect(stored.base) as sock:
        if expect:
            sock.sendall(request_head("POST", path, *headers, "Expect: 100-continue"))
        else:
            sock.sendall(request_head("POST", path, *headers) + body)
        assert_refused(read_until_closed(sock), 413, "body_too_large")
    assert_nothing_stored(stored)


@pytest.mark.parametrize("path", ["/healthz", CHECK])
def test_a_chunked_body_over_the_cap_gets_413(stored: Api, path: str) -> None:
    body = chunked(*[b"x" * 500] * 10)
    with connect(stored.base) as sock:
        sock.sendall(request_head("POST", path, "Transfer-Encoding: chunked") + body)
        reply = assert_refused(read_until_closed(sock), 413, "body_too_large")
    assert str(CAP) in reply.json()["detail"]
    assert_nothing_stored(stored)


# -- many slow clients ----------------------------------------------------------------------


def test_many_slow_connections_are_closed_once_their_time_is_up(stored: Api) -> None:
    """50 slow heads and 20 slow bodies, one byte each every 0.1 s: all answered 408 and
    closed, while a normal request is still served."""
    with ExitStack() as stack:
        heads = [stack.enter_context(connect(stored.base)) for _ in range(50)]
        bodies = [stack.enter_context(connect(stored.base)) for _ in range(20)]
        for sock in heads:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
        head = post_head(stored, f"Content-Length: {CAP}")
        for sock in bodies:
            sock.sendall(head + b'{"urls": [')
        healthy(stored)
        received = drip_many([*heads, *bodies], b"a", EVERY)
        for sock in heads:
            assert_refused(received[sock], 408, "header_timeout")
        for sock in bodies:
            assert_refused(received[sock], 408, "body_timeout")
    healthy(stored)
    assert_nothing_stored(stored)


def test_each_refused_connection_answers_once(server: Api) -> None:
    """A refusal is the last thing on its connection, even with more requests behind it."""
    pipelined = big_header(2 * HEAD_LIMIT) + request_head("GET", "/healthz")
    with connect(server.base) as sock:
        sock.sendall(pipelined)
        found = replies(read_until_closed(sock))
    assert [reply.status for reply in found] == [431]
