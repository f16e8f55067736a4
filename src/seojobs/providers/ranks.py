"""What rank-check adapters share: the query, one SERP in our shape, the protocol.

A rank check asks a SERP API for one keyword (where, in which language, on which device, how
deep) and gets back the organic results in order and the SERP features the page showed. The
adapters (``serper_ranks``, ``dataforseo_ranks``) only read the provider's answer; which result
is the project's (by domain or by URL) is the kind's business (``seojobs.kinds.rank_check``).

A whole-call failure raises :class:`ProviderError`: ``fatal`` for a refused key or spent
credits (no other keyword of the job can succeed), otherwise the failure of this keyword alone
(``upstream_error`` once the bounded retries are spent, ``provider_rejected``,
``malformed_response``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# The SERP features a result page may show, by our name (the adapters map theirs onto these).
FEATURES = (
    "ai_overview",
    "featured_snippet",
    "people_also_ask",
    "local_pack",
    "knowledge_graph",
    "top_stories",
    "videos",
    "images",
    "shopping",
    "related_searches",
    "paid",
)
# What one organic result showed beyond its link, by our name (as far as the provider tells):
# sitelinks under it, review stars, a FAQ, a video, or being the featured snippet itself.
RESULT_FEATURES = ("sitelinks", "rating", "faq", "video", "featured_snippet")


@dataclass(frozen=True)
class RankQuery:
    """One keyword's search: ``location`` a location code (Google Ads geo target id, 2840 =
    United States) or a location name; ``language`` an ISO 639 code; ``depth`` results read."""

    keyword: str
    location: int | str
    language: str
    device: str  # desktop or mobile
    depth: int


@dataclass(frozen=True)
class Organic:
    url: str
    title: str | None
    rank_group: int  # 1-based among the organic results
    rank_absolute: int | None = None  # among every element of the page, where told
    features: tuple[str, ...] = ()  # of RESULT_FEATURES, in that order


@dataclass(frozen=True)
class Serp:
    organic: tuple[Organic, ...]
    features: tuple[str, ...] = ()  # of FEATURES, each once, in the order seen
    detail: dict[str, Any] = field(default_factory=dict)  # e.g. DataForSEO's check_url, cost


class RankSource(Protocol):
    name: str

    async def serp(self, query: RankQuery) -> Serp: ...

    async def aclose(self) -> None: ...


def features_of(names: list[str]) -> tuple[str, ...]:
    """Known feature names, each once, in the order given."""
    return tuple(dict.fromkeys(n for n in names if n in FEATURES))


def result_features(shown: dict[str, object]) -> tuple[str, ...]:
    """The result features whose value the provider gave as present (truthy), in order."""
    return tuple(name for name in RESULT_FEATURES if shown.get(name))


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
