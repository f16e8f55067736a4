"""Who a request comes from, for the budget of failed authentications.

The socket peer's address, unless ``SEOJOBS_TRUSTED_PROXIES`` names the peer: then uvicorn's
``ProxyHeadersMiddleware`` (installed by ``create_app`` only in that case) has already put the
address the proxies forwarded in ``X-Forwarded-For`` into ``scope["client"]``, the rightmost
one that is not itself a trusted proxy. ``seojobs serve`` turns uvicorn's own proxy-header
handling off, which otherwise believes any ``X-Forwarded-For`` sent from 127.0.0.1.
"""

from __future__ import annotations

import ipaddress

from starlette.types import Scope

# One IPv6 subscriber usually holds a whole /64 and can pick a new address in it per request:
# budgets by single address would be no limit at all.
IPV6_PREFIX = 64


def client_key(scope: Scope) -> str:
    """The budget key of the request's client: its IPv4 address, or its IPv6 /64."""
    client = scope.get("client")
    host = client[0] if client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host or "unknown"  # a Unix socket peer, or a test client: one shared budget
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)
