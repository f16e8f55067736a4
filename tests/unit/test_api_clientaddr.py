"""Which budget of failed authentications a request's client address falls in."""

from __future__ import annotations

import pytest

from seojobs.api.clientaddr import client_key


@pytest.mark.parametrize(
    ("client", "key"),
    [
        (("203.0.113.7", 5000), "203.0.113.7"),
        (("127.0.0.1", 1), "127.0.0.1"),
        (("2001:db8:1:2::a", 1), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:ffff:ffff:ffff:ffff", 1), "2001:db8:1:2::/64"),
        (("2001:DB8:1:2:0:0:0:1", 1), "2001:db8:1:2::/64"),  # every spelling alike
        (("::ffff:203.0.113.7", 1), "203.0.113.7"),  # an IPv4 client of a dual-stack socket
        (("::1", 1), "::/64"),
        (None, "unknown"),
        (("testclient", 50000), "testclient"),
    ],
)
def test_client_key(client: tuple[str, int] | None, key: str) -> None:
    assert client_key({"type": "http", "client": client}) == key
