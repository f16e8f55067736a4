"""A rank check's params: the keywords, whose position (a domain or a page), where, on which
device, how deep, and by which provider."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from seojobs.fielderrors import field_error
from seojobs.kinds.domain_lookup.params import DOMAIN_SCHEMA, Domain, normalise_domain
from seojobs.kinds.keyword_research.params import (
    LANGUAGE_PATTERN,
    MAX_LOCATION,
    LocationName,
    Seed,
    checked_location,
)
from seojobs.kinds.urls import URL_SCHEMA, check_url
from seojobs.schemarules import given

MAX_KEYWORDS = 100
# A project's tracked keywords, each in its own market (issue 29.1): a collection checks them
# all in one job, so ``tracked`` takes as many as a project may track.
MAX_TRACKED = 2_000
MAX_COMPETITORS = 20
Device = Literal["desktop", "mobile"]
Match = Literal["domain", "exact_url"]
TARGET_SCHEMA = {
    "anyOf": [
        {k: v for k, v in schema.items() if k != "description"}
        for schema in (DOMAIN_SCHEMA, URL_SCHEMA)
    ]
}
Target = Annotated[str, WithJsonSchema(TARGET_SCHEMA)]


Location = Annotated[int, Field(ge=1, le=MAX_LOCATION)] | LocationName


class KeywordAt(BaseModel):
    """A keyword with its own market; what it leaves out is the job's (or, tracked in a
    project, the defaults: 2840, en, desktop)."""

    model_config = ConfigDict(extra="forbid")

    keyword: Seed = Field(description="The keyword (trimmed).")
    location: Location | None = Field(
        default=None, description="A location code or name, as the job's `location`."
    )
    language: str | None = Field(
        default=None, pattern=LANGUAGE_PATTERN, description="An ISO 639 code, as `language`."
    )
    device: Device | None = Field(default=None, description="`desktop` or `mobile`.")

    @field_validator("location", mode="before")
    @classmethod
    def _location(cls, value: Any) -> Any:
        return None if value is None else checked_location(value)

    @field_validator("language")
    @classmethod
    def _lower(cls, value: str | None) -> str | None:
        return None if value is None else value.lower()

    def key(self) -> tuple[str, str, str, str]:
        """What makes it one keyword: its text in any case, and its market."""
        return (self.keyword.casefold(), str(self.location), str(self.language), str(self.device))


class RankCheckParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [given("keywords", lists=["keywords"]), given("tracked", lists=["tracked"])]
        },
    )

    keywords: list[Seed] = Field(
        default_factory=list,
        max_length=MAX_KEYWORDS,
        description="The keywords to check (up to 100; one item and one quota unit each), "
        "in the job's market. Trimmed; duplicates, whatever their case, count once. In a "
        "project that tracks keywords, a job that gives neither `keywords` nor `tracked` "
        "checks the project's tracked keywords.",
    )
    tracked: list[KeywordAt] = Field(
        default_factory=list,
        max_length=MAX_TRACKED,
        description="Keywords each in its own market (up to 2,000; one item and one quota "
        "unit each): what a job of a project that tracks keywords checks by default "
        "(`/v1/projects/{id}/tracked-keywords`). Fields an entry leaves out are the job's.",
    )
    target: Target = Field(
        description="The site whose position is wanted: a domain (`example.com`; with match "
        "`domain`, its subdomains count too) or a page URL (its host, with match `domain`)."
    )
    match: Match = Field(
        default="domain",
        description="`domain`: the first result on the target's host or a subdomain of it "
        "(`www.` ignored); `exact_url`: the first result that is the target page (scheme, "
        "`www.`, a trailing slash and tracking parameters ignored).",
    )
    location: Annotated[int, Field(ge=1, le=MAX_LOCATION)] | LocationName = Field(
        default=2840,
        description="Where the search is made: a location code (Google Ads geo target id: "
        "2840 United States, 2826 United Kingdom, 2276 Germany) or, with DataForSEO or "
        "Serper, a location name (`London,England,United Kingdom`).",
    )
    language: str = Field(
        default="en",
        pattern=LANGUAGE_PATTERN,
        description="The searchers' language, an ISO 639 code (`en`, `de`, `zh-TW`).",
    )
    device: Device = Field(
        default="desktop", description="`desktop` or `mobile` results (mobile: DataForSEO)."
    )
    depth: int = Field(
        default=100, ge=10, le=100, description="How many results are looked through (10-100)."
    )
    competitors: list[Domain] = Field(
        default_factory=list,
        max_length=MAX_COMPETITORS,
        description="Competitors' domains (up to 20; their subdomains count too): each one's "
        "position is stored beside the target's, and each one's share of voice.",
    )
    provider: Literal["serper", "dataforseo"] | None = Field(
        default=None,
        description="Who answers; default: the first configured one in "
        "SEOJOBS_RANK_PROVIDERS (serper, then dataforseo).",
    )

    @field_validator("location", mode="before")
    @classmethod
    def _location(cls, value: Any) -> Any:
        return checked_location(value)

    @field_validator("language")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        if "://" in value:
            try:
                return check_url(value)
            except ValueError as exc:
                raise PydanticCustomError("target", str(exc)) from None
        try:
            return normalise_domain(value)
        except ValueError as exc:
            why = f"a domain (example.com) or an http(s) URL: {exc}"
            raise PydanticCustomError("target", why) from None

    @model_validator(mode="after")
    def _unique(self) -> RankCheckParams:
        unique = {k.casefold(): k for k in reversed(self.keywords)}  # first spelling kept
        self.keywords = [unique[k] for k in dict.fromkeys(k.casefold() for k in self.keywords)]
        self.competitors = list(dict.fromkeys(self.competitors))
        self._place_tracked()
        if not self.keywords and not self.tracked:
            raise field_error(
                RankCheckParams,
                "keywords",
                "give the keywords to check (1 to 100), or track keywords in the project",
            )
        if self.match == "exact_url" and "://" not in self.target:
            raise field_error(
                RankCheckParams, "target", "match exact_url needs a page URL, not a domain"
            )
        return self

    def _place_tracked(self) -> None:
        """Each tracked keyword in a market of its own (the job's where it names none), once,
        and not again when ``keywords`` has it in the job's market."""
        market = (str(self.location), self.language, str(self.device))
        seen: set[tuple[str, str, str, str]] = {(k.casefold(), *market) for k in self.keywords}
        placed: list[KeywordAt] = []
        for entry in self.tracked:
            full = KeywordAt(
                keyword=entry.keyword,
                location=self.location if entry.location is None else entry.location,
                language=entry.language or self.language,
                device=entry.device or self.device,
            )
            if full.key() not in seen:
                seen.add(full.key())
                placed.append(full)
        self.tracked = placed

    def markets(self) -> list[tuple[str, int | str, str]]:
        """The (device, location, language) of every keyword, each once, the job's first."""
        found: dict[tuple[str, int | str, str], None] = {}
        if self.keywords:
            found[(self.device, self.location, self.language)] = None
        for entry in self.tracked:
            assert entry.location is not None and entry.language and entry.device
            found[(entry.device, entry.location, entry.language)] = None
        return list(found)
