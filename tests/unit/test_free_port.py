"""tests/e2e/helpers.py's ``free_port``: the ports it hands out for the servers tests start are
never ones the kernel hands a bind to port 0 (other tests' fakes and servers), and no two pytest
workers share one."""

from __future__ import annotations

import itertools
import socket

from tests.e2e.helpers import FIRST_PORT, _ephemeral_low, free_port, port_block


def test_each_worker_has_a_block_of_its_own_below_the_ephemeral_range() -> None:
    blocks = [port_block(f"gw{n}", 4, 32768) for n in range(4)]
    assert blocks[0].start == FIRST_PORT
    assert blocks[-1].stop <= 32768
    for one, other in itertools.pairwise(blocks):
        assert one.stop <= other.start and len(one) == len(other) > 1000
    assert port_block("master", 1, 32768) == range(FIRST_PORT, 32768)
    assert port_block("gw5", 4, 32768).stop <= 32768  # more workers than announced


def test_a_free_port_is_free_and_never_one_the_kernel_picks() -> None:
    low = _ephemeral_low()
    with socket.socket() as picked:
        picked.bind(("127.0.0.1", 0))
        assert picked.getsockname()[1] >= low  # what the kernel hands out
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    for port in ports:
        assert FIRST_PORT <= port < low
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_skipped() -> None:
    first = free_port()
    with socket.socket() as held:
        held.bind(("127.0.0.1", first + 1))
        held.listen()
        assert free_port() != first + 1
