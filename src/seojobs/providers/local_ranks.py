"""What local-rank adapters share: one Maps / local pack search, its places in our shape.

A local rank check asks a SERP API for one keyword at one place: a place name
(``London,England,United Kingdom``) or a point (latitude, longitude and a map zoom, 3 to 21
as Google Maps counts it), and gets back the businesses listed, in order. The adapters
(``serpapi_local``, ``dataforseo_local``, ``serper_local``) only read the provider's answer;
which listing is the project's business (by place id, website domain or name) is the kind's
business (``seojobs.kinds.local_rank_check.match``).

Failures raise :class:`~seojobs.providers.base.ProviderError` as the rank adapters do:
``fatal`` for a refused key or spent credits, ``upstream_error`` once the bounded retries
are spent (429, 5xx, transport), ``provider_rejected`` for a search refused as asked,
``malformed_response``. SerpApi carries its key in the query string: every error text is
cleared of the configured keys before it reaches a job (``base.with_retries``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

MAX_PLACES = 100  # the most places read from one answer (a Maps page holds 20)
MAX_TEXT = 300  # a name, an address, a category: longer is cut
MAX_CATEGORIES = 10
Surface = Literal["maps", "local_pack"]


@dataclass(frozen=True)
class LocalQuery:
    """One search: ``location`` a place name, or ``latitude``/``longitude``/``zoom``;
    ``surface`` Google Maps or the local pack of a Google web search."""

    keyword: str
    language: str
    location: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    zoom: int = 14
    surface: Surface = "maps"

    @property
    def ll(self) -> str | None:
        """Google Maps' ``@latitude,longitude,zoomz`` (None for a place name)."""
        if self.latitude is None or self.longitude is None:
            return None
        return f"@{self.latitude},{self.longitude},{self.zoom}z"


@dataclass(frozen=True)
class Place:
    """One listing: its 1-based ``position`` among the listings, Google's ids as far as the
    provider tells (``place_id`` ChIJ..., ``cid`` the decimal customer id), its website,
    rating (0-5), review count and categories (the first is the main one)."""

    position: int
    title: str
    place_id: str | None = None
    cid: str | None = None
    website: str | None = None
    rating: float | None = None
    reviews: int | None = None
    categories: tuple[str, ...] = ()
    address: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "title": self.title,
            "place_id": self.place_id,
            "cid": self.cid,
            "website": self.website,
            "rating": self.rating,
            "reviews": self.reviews,
            "categories": list(self.categories),
            "address": self.address,
        }


@dataclass(frozen=True)
class LocalSerp:
    places: tuple[Place, ...]
    detail: dict[str, Any] = field(default_factory=dict)  # a search id, a task's cost, ...


class LocalSource(Protocol):
    name: str

    async def local(self, query: LocalQuery) -> LocalSerp: ...

    async def aclose(self) -> None: ...


def text(value: object) -> str | None:
    """A string of the answer, cut to :data:`MAX_TEXT`; None when absent or not text."""
    return value[:MAX_TEXT] if isinstance(value, str) and value else None


def number(value: object) -> float | None:
    """A finite number (a rating); None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    found = float(value)
    return found if math.isfinite(found) else None


def count(value: object) -> int | None:
    """A non-negative whole count (reviews), also when spelled "1,234"; else None."""
    if isinstance(value, str):
        digits = value.strip("() ").replace(",", "")
        value = int(digits) if digits.isdigit() else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def categories(*values: object) -> tuple[str, ...]:
    """Category names from strings and lists of strings, each once, in order."""
    found: list[str] = []
    for value in values:
        for entry in value if isinstance(value, list) else [value]:
            name = text(entry)
            if name is not None:
                found.append(name)
    return tuple(dict.fromkeys(found))[:MAX_CATEGORIES]


def identifier(value: object) -> str | None:
    """An id (place id, cid) as text: a string, or a whole number spelled as one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text(value)
