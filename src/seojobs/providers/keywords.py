"""What keyword-research adapters share: the request, one keyword's metrics, the protocol.

Providers name the same figures differently (DataForSEO: ``search_volume``, ``cpc`` in USD,
``competition`` as LOW/MEDIUM/HIGH or 0..1; Google Ads: ``avgMonthlySearches``, bids in
micros of the account's currency, ``competitionIndex`` 0..100). :class:`Keyword` is the one
shape a job stores: volumes as integers, money as decimal units with its currency when the
provider says it, ``competition`` as the 0..100 index and ``competition_level`` as the level.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

from seojobs.fetch.errors import UnreadableBody
from seojobs.providers.base import malformed, with_retries
from seojobs.settings import Settings

T = TypeVar("T")

COMPETITION_LEVELS = ("LOW", "MEDIUM", "HIGH")


@dataclass(frozen=True)
class Research:
    """One lookup: seed keywords or a page URL, where (a geo target id or, where the provider
    takes one, a location name) and in which language (a code such as ``en``)."""

    seeds: tuple[str, ...]
    url: str | None
    location: int | str
    language: str
    limit: int


@dataclass(frozen=True)
class Month:
    year: int
    month: int  # 1..12
    search_volume: int | None


@dataclass(frozen=True)
class Keyword:
    keyword: str
    search_volume: int | None = None  # average monthly searches
    cpc: float | None = None
    competition: int | None = None  # 0..100
    competition_level: str | None = None  # LOW, MEDIUM, HIGH
    low_top_of_page_bid: float | None = None
    high_top_of_page_bid: float | None = None
    currency: str | None = None  # of cpc and bids: USD (DataForSEO), the account's (Google Ads)
    monthly_searches: tuple[Month, ...] = field(default=())
    seed: bool = False  # one of the job's seed keywords

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"monthly_searches": [asdict(m) for m in self.monthly_searches]}


class KeywordSource(Protocol):
    name: str

    async def research(self, request: Research) -> list[Keyword]: ...

    async def aclose(self) -> None: ...


def level(value: object) -> str | None:
    """A competition level as both providers spell it; None for UNSPECIFIED/UNKNOWN/null."""
    return value if isinstance(value, str) and value in COMPETITION_LEVELS else None


def whole(value: object) -> int | None:
    """An integer a provider sent as a JSON number or (Google's int64) a string of digits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def amount(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def merge(found: list[Keyword], request: Research) -> list[Keyword]:
    """Each keyword once (case-insensitively, the first kept), marked when it is a seed,
    cut to the request's limit (seeds are kept first: the user asked about them)."""
    seeds = {s.casefold() for s in request.seeds}
    unique: dict[str, Keyword] = {}
    for keyword in found:
        key = keyword.keyword.casefold()
        if key not in unique:
            is_seed = key in seeds
            unique[key] = keyword if keyword.seed == is_seed else _with_seed(keyword, is_seed)
    ordered = sorted(unique.values(), key=lambda k: not k.seed)  # stable: provider order kept
    return ordered[: request.limit]


def _with_seed(keyword: Keyword, seed: bool) -> Keyword:
    values = {**keyword.__dict__, "seed": seed}
    return Keyword(**values)


async def retried(
    provider: str,
    call: Callable[[], Awaitable[T]],
    settings: Settings,
    sleep: Callable[[float], Awaitable[None]],
) -> T:
    """``call`` under the providers' bounded retries; an unreadable answer (undecodable, or
    over the size cap) is a malformed one."""
    try:
        return await with_retries(
            call,
            retries=settings.provider_retries,
            backoff=settings.provider_backoff,
            settings=settings,
            sleep=sleep,
            provider=provider,
        )
    except UnreadableBody as exc:
        raise malformed(provider, f"unreadable body ({exc.message})") from None
