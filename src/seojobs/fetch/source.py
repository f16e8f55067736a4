"""What robots.txt and the diagnostics need of a fetcher, as a protocol of its own.

:class:`~seojobs.fetch.client.Fetcher` builds a :class:`~seojobs.fetch.robots.RobotsCache`
and hands itself to :func:`~seojobs.fetch.diagnostics.inspect`; typed against the concrete
class, those modules would import the client back (an import cycle). They name this instead,
which the fetcher satisfies, so the dependencies run one way: client -> robots, diagnostics
-> source.
"""

from __future__ import annotations

from typing import Protocol

from seojobs.fetch.politeness import HostGate
from seojobs.fetch.result import FetchResult


class PageSource(Protocol):
    """A guarded, polite fetcher: its user agent, its per-host gate and its GET."""

    @property
    def user_agent(self) -> str: ...

    @property
    def gate(self) -> HostGate: ...

    async def fetch(self, url: str, *, method: str = "GET") -> FetchResult:
        """GET ``url`` following redirects; never raises for a network or policy failure."""
        ...
