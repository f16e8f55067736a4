"""The network edge, seen from our side: a connector that notes every request it carries.

Tests hand it to an HTTP client (``connector=``) to see which requests that very client sent,
without mocking anything of ours: it is aiohttp's own ``TCPConnector``, connecting for real.
"""

from __future__ import annotations

from typing import Any

import aiohttp


class RecordingConnector(aiohttp.TCPConnector):
    """A plain ``TCPConnector`` recording ``"METHOD url"`` of every request it connects for."""

    def __init__(self) -> None:
        super().__init__(limit=10)
        self.requests: list[str] = []

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        self.requests.append(f"{req.method} {req.url}")
        return await super().connect(req, traces, timeout)
