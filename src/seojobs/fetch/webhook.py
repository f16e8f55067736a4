"""Webhook deliveries' HTTP (issue 27): one POST, under the fetcher's address policy.

A delivery URL passes the same guard as every page fetch, at registration (:meth:`check`:
its address, or its name without a lookup) and again at each attempt (:meth:`post`, what the
name resolves to then): a name that resolved to a public address when it was registered may
point at the metadata service or the LAN today. Connections are pinned
to the addresses the guard approved (``fetch.transport``), and redirects are never followed:
a 3xx is an answer like any other (a failed attempt).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from seojobs.fetch.closing import Closing
from seojobs.fetch.guard import AddressGuard, GuardPolicy, Resolver, parse_ip_host
from seojobs.fetch.urls import URL, parse_url
from seojobs.settings import Settings

if TYPE_CHECKING:  # the HTTP stack (aiohttp) loads with the first sender
    from seojobs.fetch.http import Connector, Response

ANSWER_BYTES = 4096  # of an endpoint's answer, what is read (the first bytes are kept)


class WebhookSender(Closing):
    """POSTs signed bodies to endpoints; ``resolver`` and ``connector`` as in ``Fetcher``."""

    def __init__(
        self,
        settings: Settings,
        *,
        resolver: Resolver | None = None,
        connector: Connector | None = None,
    ) -> None:
        from seojobs.fetch.http import HttpClient
        from seojobs.fetch.transport import PinnedConnector

        timeout = settings.webhook_timeout
        self.guard = AddressGuard(
            GuardPolicy.from_settings(settings), resolver, lookup_timeout=timeout
        )
        guard = self.guard
        self.http = HttpClient(
            headers={"User-Agent": settings.user_agent},
            connect_timeout=min(timeout, settings.fetch_connect_timeout),
            read_timeout=timeout,
            deadline=timeout,
            max_bytes=ANSWER_BYTES,
            connector=connector
            or (lambda: PinnedConnector(guard, limit=settings.webhook_concurrency)),
            env_proxies=False,  # the guard must see the address connected to
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def check(self, url: str) -> URL:
        """The parsed URL if the policy allows what it names; raises ``FetchError``
        (``SSRFRefused``, ``InvalidURL``, ``UnsupportedScheme``) otherwise. Sends nothing, not
        even a DNS query: an address (a literal, or a loopback name) is judged here; what a
        name resolves to is judged at each attempt, where it counts (it may change)."""
        parsed = parse_url(url)
        literal = parse_ip_host(parsed.host)
        if literal is None:
            self.guard.check_name(parsed.host)
        else:
            self.guard.check(parsed.host, (literal,))
        return parsed

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Response:
        """One attempt; raises ``FetchError`` when there is no answer (refused included)."""
        from yarl import URL as YarlURL

        from seojobs.fetch.transport import pinned

        target = parse_url(url)
        addresses = await self.guard.resolve(target.host)  # refused here: nothing was sent
        with pinned(target.host, addresses):
            return await self.http.request(
                "POST",
                YarlURL(target.text, encoded=True),
                content=body,
                headers={"Content-Type": "application/json", **headers},
                truncate=True,
            )
