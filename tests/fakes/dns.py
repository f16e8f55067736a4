"""A fake authoritative DNS server on loopback (UDP and TCP), built on dnspython's message API.

It holds one zone as ``{name: {type: [rdata text, ...]}}`` and answers like an authoritative
server: the records asked for, NOERROR with an empty answer for a name that exists without
that type, NXDOMAIN for a name it does not hold. ``servfail = True`` makes every answer a
SERVFAIL (a broken resolver); ``silent = True`` answers nothing at all (a resolver that hangs).
``queries`` records (name, type) as asked.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from tests.fakes.server import STOP_WITHIN

Zone = dict[str, dict[str, list[str]]]


class FakeDns:
    def __init__(self, zone: Zone, ttl: int = 300) -> None:
        # A copy down to the record lists: a test changing its world's records must not
        # change the module's zone for the worlds after it (a later test saw another's TXT).
        self.zone = {
            dns.name.from_text(n): {kind: list(values) for kind, values in types.items()}
            for n, types in zone.items()
        }
        self.ttl = ttl
        self.servfail = False
        self.silent = False
        self.queries: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def answer(self, wire: bytes) -> bytes | None:
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        [question] = query.question
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((question.name.to_text(omit_final_dot=True), rdtype))
        if self.silent:
            return None
        if self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
            return bytes(response.to_wire())
        types = self.zone.get(question.name)
        if types is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
            return bytes(response.to_wire())
        texts = types.get(rdtype, [])
        if texts:
            rdatas = [dns.rdata.from_text(dns.rdataclass.IN, question.rdtype, t) for t in texts]
            answer = dns.rrset.from_rdata_list(question.name, self.ttl, rdatas)
            response.answer.append(answer)
        return bytes(response.to_wire())


class _Udp(socketserver.BaseRequestHandler):
    server: Any

    def handle(self) -> None:
        data, sock = self.request
        reply = self.server.fake.answer(data)
        if reply is not None:
            sock.sendto(reply, self.client_address)


class _Tcp(socketserver.BaseRequestHandler):
    server: Any

    def handle(self) -> None:
        conn = self.request
        while header := _read(conn, 2):
            (length,) = struct.unpack("!H", header)
            reply = self.server.fake.answer(_read(conn, length))
            if reply is None:
                return
            conn.sendall(struct.pack("!H", len(reply)) + reply)


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


class _UdpServer(socketserver.ThreadingUDPServer):
    daemon_threads = True


class _TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _bind_pair(attempts: int = 20) -> tuple[_UdpServer, _TcpServer]:
    """A UDP and a TCP server on one free port (the UDP port's TCP twin may be taken: retry)."""
    for _ in range(attempts):
        udp = _UdpServer(("127.0.0.1", 0), _Udp)
        try:
            return udp, _TcpServer(("127.0.0.1", udp.server_address[1]), _Tcp)
        except OSError:
            udp.server_close()
    raise RuntimeError(f"no port free for both UDP and TCP in {attempts} attempts")


@contextlib.contextmanager
def serve_dns(fake: FakeDns) -> Iterator[str]:
    """Serve ``fake`` on 127.0.0.1, UDP and TCP on one port; yield ``127.0.0.1:port``."""
    udp, tcp = _bind_pair()
    port = udp.server_address[1]
    servers: list[socketserver.BaseServer] = [udp, tcp]
    for server in servers:
        server.fake = fake  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, args=(STOP_WITHIN,), daemon=True).start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
