"""``async with`` for the fetcher's clients, apart from their HTTP stack: a class can be one
without loading aiohttp (the webhook sender's module is read at every server's start)."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """``async with`` for a class with ``aclose()``: entered as itself, closed on exit."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
