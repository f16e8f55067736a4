"""AI search (GEO) reads: what the project's ``geo_lookup`` jobs collected. Never starts one.

Each answered prompt is a collection (subject ``"<provider> <prompt>"``). ``geo`` serves the
latest of each provider and prompt, oldest collection first: its cursor is a collection id, so
a prompt collected again while a client pages comes again with its newer answer and none is
skipped. ``geo/history`` serves every collection of a prompt (of every prompt without it),
newest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.geo_lookup.params import MAX_PROMPT, PROVIDERS
from seojobs.kinds.geo_lookup.run import subject
from seojobs.kinds.keyword_research.params import ASCII_SPACE, TEXT_PATTERN
from seojobs.reads import (
    NEWEST_FIRST,
    ChangeEvent,
    FieldMatch,
    Filter,
    Read,
    SubjectMatch,
    data_of,
    fields_row,
)
from seojobs.records import CollectionRecord


class Citation(BaseModel):
    url: str
    domain: str | None = Field(description="The URL's host, without `www.`.")
    title: str | None


class GeoAnswer(BaseModel):
    text: str = Field(description="The answer (its first 4,000 characters).")
    truncated: bool
    citations: list[Citation] = Field(description="Cited sources in order, each URL once.")
    domain_cited: bool
    citation_position: int | None = Field(description="1-based: the domain's first citation.")
    brand_mentioned: bool
    mention_count: int
    model: str | None
    checked_at: str


class FailedOver(BaseModel):
    provider: str
    code: str
    message: str


class GeoRow(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    prompt: str
    provider: str = Field(description="The provider that answered.")
    failed_over: list[FailedOver] = Field(
        default_factory=list,
        description="The providers that failed this prompt before it (transport, 5xx after "
        "retries, a refused key, a spent quota), in order.",
    )
    model: str | None
    domain: str | None
    brand: list[str] | None
    domain_cited: bool = Field(description="Some answer cites the domain (or a subdomain).")
    citation_position: int | None = Field(description="The best position among the answers.")
    brand_mentioned: bool = Field(description="Some answer names the brand.")
    mention_count: int = Field(description="Mentions over all the answers.")
    cited_share: float = Field(description="Share of the answers citing the domain, 0 to 1.")
    mentioned_share: float = Field(description="Share of the answers naming the brand, 0 to 1.")
    repeats: int = Field(description="Answers the shares are over.")
    checked_at: str | None
    answers: list[GeoAnswer]


class GeoPage(BaseModel):
    data: list[GeoRow]
    next_cursor: str | None


row = fields_row(GeoRow)


def _asked(prompt: Any, values: Mapping[str, Any]) -> list[str]:
    provider = values.get("provider")
    return [subject(p, str(prompt)) for p in ((provider,) if provider else PROVIDERS)]


def _trimmed(value: Any) -> str:
    return str(value).strip(ASCII_SPACE)


PROVIDER = Filter(
    "provider",
    Literal["openai", "perplexity"],
    "Only this provider's answers.",
    FieldMatch("provider"),
    selects=False,
)
CITED = Filter(
    "cited",
    bool,
    "Only prompts whose answers cite the domain (true), or only the others.",
    FieldMatch("domain_cited"),
)
PROMPT = Filter(
    "prompt",
    str,
    "Only this prompt, as the job's `prompts` gave it (trimmed).",
    SubjectMatch(_asked),
    prepare=_trimmed,
    min_length=1,
    max_length=MAX_PROMPT,
    pattern=TEXT_PATTERN,
    named="for",
)
READS = (
    Read(
        "geo",
        "list_geo",
        "geo_lookup",
        GeoRow,
        response=GeoPage,
        to_row=row,
        filters=(PROVIDER, CITED),
        snapshot=False,
        description="The latest answer of every prompt (per provider) the project's completed "
        "`geo_lookup` jobs asked: cited?, position, mentioned?, the shares over repeats, with "
        "`job_id` and `collected_at`. Never starts a job: 404 until one has completed.",
        tags=("geo",),
    ),
    Read(
        "geo/history",
        "list_geo_history",
        "geo_lookup",
        GeoRow,
        response=GeoPage,
        to_row=row,
        source="history",
        filters=(PROMPT, PROVIDER),
        orders=NEWEST_FIRST,
        empty=("rows",),
        summary="Geo History",
        description="Every completed answer of `prompt` (of every prompt without it; of one "
        "provider, if given), newest first. 404 until one has completed.",
        tags=("geo",),
    ),
)


# -- what changed (webhooks: geo.visibility_changed) -----------------------------------------

SHARES = ("cited_share", "mentioned_share")


class VisibilityFilters(BaseModel):
    """An endpoint's conditions on ``geo.visibility_changed``."""

    model_config = ConfigDict(extra="forbid")

    min_change: float = Field(
        default=0.0, ge=0.0, le=1.0, strict=True,
        description="Only when a share moved by at least this much (0 to 1).",
    )  # fmt: skip


def visibility(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """The share of a prompt's answers that cite the domain, or name the brand, moved since
    the prompt's previous lookup with the provider: each share ``before`` and ``after``."""
    if before is None:
        return None
    old, new = data_of(before), data_of(after)
    moved = {}
    for share in SHARES:
        was, now = old.get(share), new.get(share)
        if isinstance(was, int | float) and isinstance(now, int | float) and was != now:
            moved[share] = {"before": was, "after": now, "change": round(now - was, 4)}
    if not moved:
        return None
    return {"prompt": new.get("prompt"), "provider": new.get("provider"), "shares": moved}


def moved_enough(filters: VisibilityFilters, data: Mapping[str, Any]) -> bool:
    return any(abs(s["change"]) >= filters.min_change for s in data["shares"].values())


CHANGES = (
    ChangeEvent(
        "geo.visibility_changed",
        "geo_lookup",
        visibility,
        to_row=row,
        filters=VisibilityFilters,
        matches=moved_enough,
        description=visibility.__doc__ or "",
    ),
)
