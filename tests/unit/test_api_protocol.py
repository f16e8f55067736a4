"""seojobs.api.protocol against the uvicorn installed: the internals it hooks are still there
and still behave as it assumes. When one of these fails after a uvicorn upgrade, re-read
uvicorn/protocols/http/httptools_impl.py, adapt the protocol and only then widen the pin in
pyproject.toml. (The limits themselves: tests/integration/test_api_protocol.py.)"""

from __future__ import annotations

import asyncio
import inspect
import socket
from typing import Any

import pydantic
import pytest
import uvicorn
from uvicorn.importer import import_from_string
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from seojobs.api.protocol import (
    UVICORN_HTTP,
    DefaultProtocol,
    LimitedHttpToolsProtocol,
    protocol_class,
)
from seojobs.settings import Settings

# Every method of uvicorn's protocol we override or call, with its parameters.
HOOKS = {
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "send_400_response": ["self", "msg"],
    "on_message_begin": ["self"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
}


def test_the_methods_we_override_are_uvicorns() -> None:
    moved = {
        name: params
        for name, params in HOOKS.items()
        if name not in vars(HttpToolsProtocol)
        or list(inspect.signature(getattr(HttpToolsProtocol, name)).parameters) != params
    }
    assert not moved, f"uvicorn {uvicorn.__version__} changed these HttpToolsProtocol hooks"


def test_uvicorn_answers_parser_errors_through_send_400_response() -> None:
    # A callback raising _Refused reaches our answer only this way.
    source = inspect.getsource(HttpToolsProtocol.data_received)
    assert "except httptools.HttpParserError" in source
    assert "self.send_400_response(" in source


class Transport(asyncio.Transport):
    """The network edge: records what the protocol writes, and how it closes."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = self.eof = False
        self.protocol: asyncio.BaseProtocol | None = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol


async def ok(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def connected(**limits: Any) -> tuple[LimitedHttpToolsProtocol, Transport]:
    config = uvicorn.Config(ok, log_level="warning")
    cls = protocol_class(Settings.model_construct(**limits))
    protocol = cls(config=config, server_state=ServerState(), app_state={})
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def test_the_attributes_we_read_are_uvicorns() -> None:
    protocol, transport = connected()
    protocol.data_received(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nab")
    assert protocol.url == b"/x"
    assert (b"host", b"a") in protocol.headers
    assert protocol.flow.read_paused is False
    assert protocol.client == ("127.0.0.1", 50000)
    assert isinstance(protocol.server_state.default_headers, list)
    cycle = protocol.cycle
    assert isinstance(cycle, RequestResponseCycle)
    for name in ("response_started", "response_complete", "disconnected"):
        assert getattr(cycle, name) is False, name
    assert cycle.waiting_for_100_continue is False
    assert isinstance(cycle.message_event, asyncio.Event)
    protocol.data_received(b"c")
    await asyncio.wait_for(asyncio.gather(*protocol.tasks), 10)
    assert transport.written.startswith(b"HTTP/1.1 200 ")
    assert cycle.response_complete is True
    protocol.connection_lost(None)


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", b"414"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: " + b"a" * 2000 + b"\r\n\r\n", b"431"),
    ],
)
async def test_a_refusal_from_a_parser_callback_is_answered(request_: bytes, status: bytes) -> None:
    protocol, transport = connected(max_header_bytes=1024)
    protocol.data_received(request_)
    assert transport.written.startswith(b"HTTP/1.1 " + status), transport.written[:100]
    assert transport.eof and transport.protocol is not None
    assert transport.protocol is not protocol  # lingering: the rest is read and dropped
    transport.protocol.connection_lost(None)  # type: ignore[attr-defined]
    assert protocol.cycle is None


def test_the_command_line_protocol_has_the_settings_defaults() -> None:
    """bench/api.py runs uvicorn --http UVICORN_HTTP: what `seojobs serve` runs by default."""
    assert import_from_string(UVICORN_HTTP) is DefaultProtocol
    defaults = Settings.model_construct()
    for name in ("max_header_bytes", "header_timeout", "body_timeout", "body_min_rate"):
        assert getattr(DefaultProtocol, name) == getattr(defaults, name)
    assert DefaultProtocol.max_body_bytes == defaults.max_body_bytes


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_header_bytes", 100),
        ("header_timeout", 0),
        ("body_timeout", -1),
        ("body_min_rate", -5),
    ],
)
def test_unusable_limits_are_refused_naming_the_setting(field: str, value: float) -> None:
    with pytest.raises(pydantic.ValidationError) as raised:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert raised.value.errors()[0]["loc"] == (field,)


async def test_an_accepted_connection_sends_at_once_however_its_listening_socket_was_made() -> None:
    """`uvicorn --workers` makes its listening socket with proto 0, and asyncio then leaves
    Nagle on: each answer waited for the client's delayed ACK (about 40 ms)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn's
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    config = uvicorn.Config(ok, log_level="warning")
    made: list[LimitedHttpToolsProtocol] = []

    def protocol() -> LimitedHttpToolsProtocol:
        made.append(DefaultProtocol(config=config, server_state=ServerState(), app_state={}))
        return made[-1]

    server = await asyncio.get_running_loop().create_server(protocol, sock=listener)
    _reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
    try:
        for _ in range(200):
            if made and made[0].transport is not None:
                break
            await asyncio.sleep(0.01)
        accepted = made[0].transport.get_extra_info("socket")
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        writer.close()
        await writer.wait_closed()
        for each in made:
            each.connection_lost(None)
        server.close()
        await server.wait_closed()
