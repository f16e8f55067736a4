"""The HTTP/1.1 protocol seojobs runs under uvicorn: httptools, with limits on what a client
may send and how slowly.

uvicorn has no timeout for a request's head or body, and httptools no cap on the head's size:
a client could hold a connection for ever by sending a byte now and then, or have us buffer
megabytes of header. ``protocol_class(settings)`` subclasses uvicorn's httptools protocol:

- a request line and headers over ``max_header_bytes`` get 431 (414 when the URL alone is);
- a head not complete ``header_timeout`` seconds after it began (after the connection opened,
  for the first) gets 408; a connection that sent nothing is closed quietly instead, as uvicorn
  closes an idle keep-alive connection;
- a body silent for ``body_timeout`` seconds, or averaging under ``body_min_rate`` bytes/s once
  its first ``body_timeout`` has passed (Apache mod_reqtimeout's ``body=30,MinRate=500``), gets
  408, or is closed when the app has answered already;
- a body declared over ``max_body_bytes`` gets 413 before the app runs (a GET's is counted
  as it comes: the status path skips the look); one that grows over it gets 413 too, or is
  closed when the app has answered: a body nobody reads cannot stream for ever.

Refusals are problem+json, then a lingering close. The timers are ``loop.call_later`` handles
armed per connection, not per request: a request only notes when its head began, and a timer
that fires before its deadline re-arms itself for the rest, so a status GET pays no timer.

This hooks uvicorn's internals: the pin in pyproject.toml and tests/unit/test_api_protocol.py
say which versions it was checked against.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
from typing import Any, ClassVar, Final, NoReturn

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from seojobs.api.problems import problem
from seojobs.settings import Settings

log = logging.getLogger("seojobs.api")

# How uvicorn runs the app (``seojobs serve``, the tests, bench/api.py). httptools, uvicorn's C
# HTTP parser, answered 40 % more status GETs per process than h11 (bench/api.py). The loop is
# asyncio's even where uvloop is installed: under 64 busy keep-alive connections uvloop served
# some of them hundreds of ms late (p99 364-479 ms against 34 ms; measured 2026-11-29).
UVICORN_LOOP: Final = "asyncio"
# For uvicorn's command line (bench/api.py): the protocol below with the settings' defaults.
UVICORN_HTTP: Final = "seojobs.api.protocol:DefaultProtocol"

# After a refusal the connection is half-closed and what the client still sends is read and
# dropped for up to this long (a lingering close, as nginx does): a client still writing its
# 1 MB header reads our answer instead of a connection reset.
LINGER_SECONDS: Final = 5.0


# Problem titles, as the app words them (413: middleware.BodyLimit's).
TITLES: Final = {
    408: "Request timeout",
    413: "Request body too large",
    414: "URI too long",
    431: "Request header fields too large",
}


class _Refused(Exception):
    """Raised from a parser callback to stop httptools mid-chunk (see send_400_response)."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits above; ``protocol_class`` sets them."""

    max_header_bytes: ClassVar[int]
    header_timeout: ClassVar[float]
    body_timeout: ClassVar[float]
    body_min_rate: ClassVar[float]
    max_body_bytes: ClassVar[int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The head (request line and headers) being read: when it began (None: none is), and
        # if a byte of it came. Its size is bounded from below by the chunks wholly inside it
        # (_head_raw, refused over the limit) and from above by those since the chunk it began
        # in (_head_upper: when over the limit, the finished head is measured exactly).
        self._head_since: float | None = None
        self._head_begun = False
        self._head_raw = 0
        self._head_upper = 0
        self._heads = 0  # heads completed on this connection
        self._chunk = 0  # the size of the chunk being parsed
        self._head_timer: asyncio.TimerHandle | None = None
        # The body being read, from its head's end to its message's end.
        self._body_open = False
        self._body_bytes = 0
        self._body_since: float | None = None  # when we began timing it
        self._body_counted = 0  # _body_bytes at _body_since
        self._body_last = 0.0  # when a chunk of it last came
        self._body_timer: asyncio.TimerHandle | None = None
        self._refusal: tuple[int, str, str] | None = None
        self.url = b""  # uvicorn's, set per request; a refusal may read it before the first

    # -- connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Answers go out at once: asyncio sets TCP_NODELAY on an accepted connection only when
        # the listening socket says IPPROTO_TCP, and `uvicorn --workers` (or any socket made
        # with proto 0 and handed over) does not, so each answer waited for the client's
        # delayed ACK, about 40 ms (bench/scale.py: two processes at 0.31x of one).
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._head_since = self.loop.time()
        self._head_timer = self.loop.call_later(self.header_timeout, self._check_head)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._chunk = size = len(data)
        reading_head, heads = self._head_since is not None, self._heads
        if reading_head:
            self._head_upper += size
        super().data_received(data)
        if self._head_since is not None:
            # httptools holds an unfinished header field (and uvicorn the URL) in memory: a head
            # that is still open after a chunk wholly inside it is refused once over the limit.
            if reading_head and heads == self._heads:
                self._head_raw += size
                if self._head_raw > self.max_header_bytes:
                    self._refuse(*self._head_too_large())
        elif self._body_open:
            self._body_arrived()

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers every parser error here, and a callback raising _Refused is one.
        refusal, self._refusal = self._refusal, None
        if refusal is None:
            super().send_400_response(msg)
        else:
            self._refuse(*refusal)

    # -- parser callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun = True
        self._head_upper = self._chunk  # the head began somewhere in this chunk
        if self._head_since is None:
            self._head_since = self.loop.time()
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.header_timeout, self._check_head)

    def on_headers_complete(self) -> None:
        # Measured only when it may be over the limit: a status GET pays one comparison here
        # instead of a call per header field.
        if self._head_upper > self.max_header_bytes:
            self._measure_head()
        if self.parser.get_method() != b"GET":  # nor does it pay for this scan
            self._check_declared_length()
        self._head_since = None
        self._head_begun = False
        self._head_raw = 0
        self._heads += 1
        self._body_open = True
        self._body_bytes = 0
        self._body_since = None
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > self.max_body_bytes:
            self._stop(*self._body_too_large())
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._body_open = False
        super().on_message_complete()

    # -- timers -------------------------------------------------------------------------------

    def _check_head(self) -> None:
        self._head_timer = None
        since = self._head_since
        if since is None or self.transport.is_closing():
            return  # no head pending: on_message_begin arms a timer for the next one
        left = since + self.header_timeout - self.loop.time()
        if left > 0:
            self._head_timer = self.loop.call_later(left, self._check_head)
        elif not self._head_begun:
            self.transport.close()
        else:
            detail = f"the request line and headers must arrive within {self.header_timeout:g} s"
            self._refuse(408, "header_timeout", detail)

    def _body_arrived(self) -> None:
        now = self.loop.time()
        self._body_last = now
        if self._body_since is None:
            self._body_since = now
            self._body_counted = self._body_bytes
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(self.body_timeout, self._check_body)

    def _check_body(self) -> None:
        self._body_timer = None
        if not self._body_open or self._body_since is None or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused or self.cycle.waiting_for_100_continue:
            # The app has not taken what came (uvicorn stopped reading) or not asked for the
            # body yet (the client waits for our 100 Continue): the wait is ours, not theirs.
            self._body_since = self._body_last = now
            self._body_counted = self._body_bytes
        left = self._body_deadline() - now
        if left > 0:
            self._body_timer = self.loop.call_later(left, self._check_body)
        else:
            detail = (
                f"the request body stalled: {self.body_timeout:g} s without a byte, or under "
                f"{self.body_min_rate:g} bytes/s"
            )
            self._refuse(408, "body_timeout", detail)

    def _body_deadline(self) -> float:
        assert self._body_since is not None
        deadline = self._body_last + self.body_timeout
        if self.body_min_rate > 0:
            owed = (self._body_bytes - self._body_counted) / self.body_min_rate
            deadline = min(deadline, self._body_since + self.body_timeout + owed)
        return deadline

    def _stop_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    # -- refusing -----------------------------------------------------------------------------

    def _measure_head(self) -> None:
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > self.max_header_bytes:
            self._stop(*self._head_too_large())

    def _check_declared_length(self) -> None:
        # Refused here, before the app runs, a body declared too large gets our 413 with
        # "connection: close": the app's own 413 would leave the connection open, and the
        # client would reuse it just as on_body closes it at the cap.
        for name, value in self.headers:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                self._stop(*self._body_too_large())

    def _body_too_large(self) -> tuple[int, str, str]:
        return 413, "body_too_large", f"the request body is limited to {self.max_body_bytes} bytes"

    def _head_too_large(self) -> tuple[int, str, str]:
        limit = self.max_header_bytes
        if len(self.url) > limit:
            return 414, "uri_too_long", f"the request target is limited to {limit} bytes"
        return (
            431,
            "headers_too_large",
            f"the request line and headers are limited to {limit} bytes",
        )

    def _stop(self, status: int, code: str, detail: str) -> NoReturn:
        self._refusal = (status, code, detail)
        raise _Refused(detail)

    def _refuse(self, status: int, code: str, detail: str) -> None:
        """Answer ``status`` if nothing else is being answered on this connection, then close."""
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if self._body_open:  # the request being refused is the current cycle's
            answer = not cycle.response_started
        else:  # a head: the cycle, if any, is an earlier request's
            answer = cycle is None or cycle.response_complete
        self._head_since = None
        self._body_open = False
        if cycle is not None and not cycle.response_complete:
            # The app's receive() now says the client left, and what it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        log.warning("%s - %d %s: %s", _peer(self.client), status, code, detail)
        self._stop_timers()
        if answer:
            self.transport.write(self._answer(status, code, detail))
        self.flow.resume_reading()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.transport.set_protocol(_Linger(self))

    def _answer(self, status: int, code: str, detail: str) -> bytes:
        phrase = http.HTTPStatus(status).phrase
        response = problem(status, TITLES[status], detail, code=code)
        lines = [f"HTTP/1.1 {status} {phrase}".encode()]
        headers = [*self.server_state.default_headers, *response.raw_headers]
        lines += [name + b": " + value for name, value in headers]
        lines += [b"connection: close", b"", bytes(response.body)]
        return b"\r\n".join(lines)


class _Linger(asyncio.Protocol):
    """A refused connection's last seconds: drop what comes, close on the client's EOF."""

    def __init__(self, owner: LimitedHttpToolsProtocol) -> None:
        self.owner = owner
        self.timer = owner.loop.call_later(LINGER_SECONDS, owner.transport.close)

    def data_received(self, data: bytes) -> None:
        return None

    def eof_received(self) -> bool | None:
        return None  # false: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.timer.cancel()
        self.owner.connection_lost(exc)


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "-"


def protocol_class(settings: Settings) -> type[LimitedHttpToolsProtocol]:
    """The protocol class for uvicorn's ``http=``, with the limits of ``settings``."""

    class Protocol(LimitedHttpToolsProtocol):
        max_header_bytes = settings.max_header_bytes
        header_timeout = settings.header_timeout
        body_timeout = settings.body_timeout
        body_min_rate = settings.body_min_rate
        max_body_bytes = settings.max_body_bytes

    return Protocol


# The settings' defaults (not the environment's: nothing reads it at import). The database URL
# is given: its default is made from the current directory, which an import leaves be.
DefaultProtocol = protocol_class(Settings.model_construct(database_url=""))


# Off: uvicorn's own handling believes X-Forwarded-For from 127.0.0.1 by default, so any local
# client could pick the address its failed logins are charged to. The app honours the header
# from SEOJOBS_TRUSTED_PROXIES only (create_app).
UVICORN_PROXY_HEADERS: Final = False


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's Config as seojobs runs it (``seojobs serve``, the tests): asyncio's loop,
    httptools with ``settings``' limits, and no WebSocket upgrades (no route takes one, and an
    upgrade would hand the connection to a protocol without these limits)."""
    return uvicorn.Config(
        app,
        loop=UVICORN_LOOP,
        http=protocol_class(settings),
        ws="none",
        proxy_headers=UVICORN_PROXY_HEADERS,
        **options,
    )
