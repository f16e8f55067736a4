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

from seojobs.kinds.geo_lookup.declared import VOICE, subject
from seojobs.kinds.geo_lookup.params import MAX_PROMPT, PROVIDERS
from seojobs.kinds.geo_lookup.voice import CITED_WEIGHT, MENTIONED_WEIGHT
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


class CompetitorSeen(BaseModel):
    domain: str
    cited: bool
    citation_position: int | None = Field(description="1-based: its site's first citation.")
    mentioned: bool
    mention_count: int
    mention_position: int | None = Field(
        description="1 when it is the first of the tracked names the answer gives."
    )


class CompetitorRow(CompetitorSeen):
    names: list[str]
    cited_share: float = Field(description="Share of the answers citing its site, 0 to 1.")
    mentioned_share: float = Field(description="Share of the answers naming it, 0 to 1.")


class GeoAnswer(BaseModel):
    text: str = Field(description="The answer (its first 4,000 characters).")
    truncated: bool
    citations: list[Citation] = Field(description="Cited sources in order, each URL once.")
    domain_cited: bool
    citation_position: int | None = Field(description="1-based: the domain's first citation.")
    brand_mentioned: bool
    mention_count: int
    brand_position: int | None = Field(
        default=None, description="1 when the brand is the first tracked name the answer gives."
    )
    competitors: list[CompetitorSeen] = Field(default_factory=list)
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
    brand_position: int | None = Field(
        description="The brand's best order among the tracked names an answer gives (1: "
        "named before every competitor)."
    )
    competitors: list[CompetitorRow] | None = Field(
        description="Each competitor's citations and mentions in the same answers."
    )
    cited_share: float = Field(description="Share of the answers citing the domain, 0 to 1.")
    mentioned_share: float = Field(description="Share of the answers naming the brand, 0 to 1.")
    repeats: int = Field(description="Answers the shares are over.")
    checked_at: str | None
    answers: list[GeoAnswer]


class GeoPage(BaseModel):
    data: list[GeoRow]
    next_cursor: str | None


class PartyShare(BaseModel):
    domain: str | None
    share: float = Field(description="Its share of the tracked parties' points, 0 to 1.")
    cited_in: int = Field(description="Answered prompts (per engine) citing its site.")
    mentioned_in: int = Field(description="Answered prompts (per engine) naming it.")
    by_provider: dict[str, float] = Field(description="The same share over one engine's answers.")


class GeoShareOfVoice(BaseModel):
    job_id: int | None = Field(description="The lookup that collected it (null once pruned).")
    collected_at: str | None
    prompts: int = Field(description="The lookup's answered prompts.")
    answers: int = Field(description="Answered prompts per engine the shares are over.")
    providers: list[str] = Field(description="The engines whose answers count.")
    project: PartyShare
    competitors: list[PartyShare]
    checked_at: str | None


class GeoShareOfVoicePage(BaseModel):
    data: list[GeoShareOfVoice]
    next_cursor: str | None


row = fields_row(GeoRow)
voice_row = fields_row(GeoShareOfVoice)
PROMPT_SUBJECTS = tuple(f"{p} " for p in PROVIDERS)  # run.subject: the provider first
VOICE_SUBJECTS = (VOICE,)


def _asked(prompt: Any, values: Mapping[str, Any]) -> list[str]:
    provider = values.get("provider")
    return [subject(p, str(prompt)) for p in ((provider,) if provider else PROVIDERS)]


def _trimmed(value: Any) -> str:
    return str(value).strip(ASCII_SPACE)


PROVIDER = Filter(
    "provider",
    Literal[
        "openai",
        "perplexity",
        "gemini",
        "anthropic",
        "serpapi_ai_overview",
        "dataforseo_ai_overview",
    ],
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
        "`geo_lookup` jobs asked: cited?, position, mentioned?, the shares over repeats, each "
        "competitor's the same, with `job_id` and `collected_at`. Never starts a job: 404 "
        "until one has completed.",
        tags=("geo",),
        subject_prefixes=PROMPT_SUBJECTS,
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
        subject_prefixes=PROMPT_SUBJECTS,
    ),
    Read(
        "geo/share-of-voice",
        "list_geo_share_of_voice",
        "geo_lookup",
        GeoShareOfVoice,
        response=GeoShareOfVoicePage,
        to_row=voice_row,
        summary="GEO Share of Voice",
        description="The newest share of voice in AI answers: the project's and each "
        "competitor's share of the tracked parties' points over the last lookup's prompts and "
        "every engine's latest answer of them (per answer: "
        f"{CITED_WEIGHT} x cited share / best citation position + {MENTIONED_WEIGHT} x "
        "mentioned share / order among the tracked names). Never starts a job: 404 until a "
        "lookup has completed.",
        tags=("geo",),
        subject_prefixes=VOICE_SUBJECTS,
    ),
    Read(
        "geo/share-of-voice/history",
        "list_geo_share_of_voice_history",
        "geo_lookup",
        GeoShareOfVoice,
        response=GeoShareOfVoicePage,
        to_row=voice_row,
        source="history",
        orders=NEWEST_FIRST,
        summary="GEO Share of Voice History",
        description="Every lookup's share of voice, newest first. 404 until one has completed.",
        tags=("geo",),
        subject_prefixes=VOICE_SUBJECTS,
    ),
)


# -- what changed (webhooks: geo.visibility_changed) -----------------------------------------

SHARES = ("cited_share", "mentioned_share")
Data = Mapping[str, Any]


class VisibilityFilters(BaseModel):
    """An endpoint's conditions on ``geo.visibility_changed``."""

    model_config = ConfigDict(extra="forbid")

    min_change: float = Field(
        default=0.0, ge=0.0, le=1.0, strict=True,
        description="Only when a share moved by at least this much (0 to 1).",
    )  # fmt: skip


def _moves(old: Data, new: Data, names: tuple[str, ...]) -> dict[str, Any]:
    moved = {}
    for name in names:
        was, now = old.get(name), new.get(name)
        if isinstance(was, int | float) and isinstance(now, int | float) and was != now:
            moved[name] = {"before": was, "after": now, "change": round(now - was, 4)}
    return moved


def _by_domain(data: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = data.get("competitors")
    listed = found if isinstance(found, list) else []
    return {c["domain"]: c for c in listed if isinstance(c, dict) and "domain" in c}


def _rivals(old: Data, new: Data, names: tuple[str, ...]) -> dict[str, Any]:
    """Each competitor whose shares moved (those tracked both times)."""
    before, after = _by_domain(old), _by_domain(new)
    moved = {}
    for domain, now in after.items():
        if domain in before and (shares := _moves(before[domain], now, names)):
            moved[domain] = shares
    return moved


def _voice(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """A share of voice: the project's moved, or a competitor's moved."""
    project = _moves(old.get("project") or {}, new.get("project") or {}, ("share",))
    rivals = _rivals(old, new, ("share",))
    if not project and not rivals:
        return None
    shares = {"share_of_voice": project["share"]} if project else {}
    ahead = [
        c["domain"]
        for c in new.get("competitors") or []
        if isinstance(c, dict) and c.get("share", 0) > (new.get("project") or {}).get("share", 0)
    ]
    return {"prompt": None, "provider": None, "shares": shares, "competitors": rivals,
            "ahead": ahead}  # fmt: skip


def visibility(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """The share of a prompt's answers that cite the domain, or name the brand, moved since
    the prompt's previous lookup with the provider (each share ``before`` and ``after``), or a
    competitor's did (``competitors``: per domain); or the lookup's share of voice moved (its
    ``share_of_voice``, the competitors' shares, and ``ahead``: those now above the project)."""
    if before is None:
        return None
    old, new = data_of(before), data_of(after)
    if after.subject == VOICE:
        return _voice(old, new)
    moved = _moves(old, new, SHARES)
    rivals = _rivals(old, new, SHARES)
    if not moved and not rivals:
        return None
    return {
        "prompt": new.get("prompt"),
        "provider": new.get("provider"),
        "shares": moved,
        "competitors": rivals,
    }


def moved_enough(filters: VisibilityFilters, data: Mapping[str, Any]) -> bool:
    shares = [*data["shares"].values()]
    shares += [s for c in data.get("competitors", {}).values() for s in c.values()]
    return any(abs(s["change"]) >= filters.min_change for s in shares)


def event_row(found: CollectionRecord) -> dict[str, Any]:
    """A collection as the event shows it: a prompt's row, or a share of voice's."""
    return voice_row(found) if found.subject == VOICE else row(found)


CHANGES = (
    ChangeEvent(
        "geo.visibility_changed",
        "geo_lookup",
        visibility,
        to_row=event_row,
        filters=VisibilityFilters,
        matches=moved_enough,
        description=visibility.__doc__ or "",
    ),
)
