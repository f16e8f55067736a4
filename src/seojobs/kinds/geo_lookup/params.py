"""A GEO lookup's params: the prompts asked, the brand and site looked for, how often."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seojobs.fielderrors import field_error
from seojobs.kinds.domain_lookup.params import Domain
from seojobs.kinds.keyword_research.params import _text
from seojobs.records import ProjectDefaults
from seojobs.schemarules import given

MAX_PROMPTS = 50
MAX_PROMPT = 400  # a question, not a document; its collection subject must fit 500 chars
MAX_BRANDS = 10
MAX_BRAND = 100
MAX_REPEATS = 5
MAX_COMPETITORS = 20
# Adapters: each answers as itself (a collection's subject names the one that answered).
PROVIDERS = (
    "openai",
    "perplexity",
    "gemini",
    "anthropic",
    "serpapi_ai_overview",
    "dataforseo_ai_overview",
)
# Engines served by several adapters, which stand in for each other (provider fallback).
ENGINES = {"google_ai_overview": ("serpapi_ai_overview", "dataforseo_ai_overview")}
Provider = Literal[
    "openai",
    "perplexity",
    "gemini",
    "anthropic",
    "serpapi_ai_overview",
    "dataforseo_ai_overview",
    "google_ai_overview",
]

Prompt = Annotated[str, *_text(MAX_PROMPT)]
Brand = Annotated[str, *_text(MAX_BRAND)]


class Competitor(BaseModel):
    """A competitor looked for beside the project: its site's citations, its names' mentions."""

    model_config = ConfigDict(extra="forbid")

    domain: Domain = Field(description="Its site (its subdomains count too).")
    names: list[Brand] = Field(
        default_factory=list,
        max_length=MAX_BRANDS,
        description="The names it goes by (whole words, any case, as for `brand`).",
    )


class GeoLookupParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"anyOf": [given("brand"), given("domain")]},
    )

    prompts: list[Prompt] = Field(
        min_length=1,
        max_length=MAX_PROMPTS,
        description="Questions a user would ask an AI assistant (1 to 50, each once: "
        "duplicates ignoring case are dropped).",
    )
    brand: list[Brand] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_BRANDS,
        description="Names to look for in the answers (whole words, any case; spaces, "
        "hyphens and accents may differ). Give brand, domain or both.",
    )
    domain: Domain | None = Field(
        default=None,
        description="The site whose citations are wanted (example.com: its subdomains count too).",
    )
    competitors: list[Competitor] = Field(
        default_factory=list,
        max_length=MAX_COMPETITORS,
        description="Competitors whose citations and mentions are reported beside the "
        "project's (up to 20; default: the project's `competitors`).",
    )
    provider: Provider | None = Field(
        default=None,
        description="Who answers: openai, perplexity, gemini (Google Search grounding), "
        "anthropic (web search), serpapi_ai_overview or dataforseo_ai_overview (Google's AI "
        "Overview), or google_ai_overview (SerpApi, then DataForSEO). Default: the configured "
        "ones in SEOJOBS_GEO_LOOKUP_PROVIDERS (openai, perplexity, gemini, anthropic).",
    )
    repeats: int = Field(
        default=1,
        ge=1,
        le=MAX_REPEATS,
        description="Times each prompt is asked (answers vary): the shares of answers "
        "citing and mentioning are over these.",
    )

    @model_validator(mode="after")
    def _normalised(self) -> GeoLookupParams:
        if self.brand is None and self.domain is None:
            raise field_error(GeoLookupParams, "brand", "give a brand, a domain or both")
        self.prompts = _unique(self.prompts)
        if self.brand is not None:
            self.brand = _unique(self.brand)
        unique = {c.domain: c for c in reversed(self.competitors)}  # the first of each kept
        self.competitors = [unique[d] for d in dict.fromkeys(c.domain for c in self.competitors)]
        for competitor in self.competitors:
            competitor.names = _unique(competitor.names)
        return self


def from_project(params: Mapping[str, Any], defaults: ProjectDefaults) -> dict[str, Any]:
    """The project's ``domain``, brand names (``brand``), ``competitors`` (each a domain and
    its names) and tracked prompts (``prompts``) where the request gives none (and names a
    project)."""
    found = dict(params)
    project = defaults.record
    if project is None:
        return found
    if "prompts" not in found and project.prompts:
        found["prompts"] = [p.prompt for p in project.prompts]
    if "domain" not in found and project.domain:
        found["domain"] = project.domain
    if "brand" not in found and project.brand_names:
        found["brand"] = list(project.brand_names)
    if "competitors" not in found and project.competitors:
        found["competitors"] = [
            {"domain": c["domain"], "names": list(c.get("names") or [])}
            for c in project.competitors
        ]
    return found


def _unique(values: list[str]) -> list[str]:
    """Each value once, ignoring case; the first spelling kept, in order."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.casefold(), value)
    return list(seen.values())
