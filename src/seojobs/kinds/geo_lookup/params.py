"""A GEO lookup's params: the prompts asked, the brand and site looked for, how often."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seojobs.fielderrors import field_error
from seojobs.kinds.domain_lookup.params import Domain
from seojobs.kinds.keyword_research.params import _text

MAX_PROMPTS = 50
MAX_PROMPT = 400  # a question, not a document; its collection subject must fit 500 chars
MAX_BRANDS = 10
MAX_BRAND = 100
MAX_REPEATS = 5
PROVIDERS = ("openai", "perplexity")

Prompt = Annotated[str, *_text(MAX_PROMPT)]
Brand = Annotated[str, *_text(MAX_BRAND)]


class GeoLookupParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"anyOf": [{"required": ["brand"]}, {"required": ["domain"]}]},
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
    provider: Literal["openai", "perplexity"] | None = Field(
        default=None,
        description="Who answers; default: the first configured one in SEOJOBS_GEO_PROVIDERS "
        "(openai, then perplexity).",
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
        return self


def from_project(params: Mapping[str, Any], project: Any) -> dict[str, Any]:
    """The project's ``domain``, brand names (``brand``) and tracked prompts (``prompts``)
    where the request gives none (``project``: a TrackedProject)."""
    found = dict(params)
    if "prompts" not in found and project.prompts:
        found["prompts"] = [p.prompt for p in project.prompts]
    if "domain" not in found and project.domain:
        found["domain"] = project.domain
    if "brand" not in found and project.brand_names:
        found["brand"] = list(project.brand_names)
    return found


def _unique(values: list[str]) -> list[str]:
    """Each value once, ignoring case; the first spelling kept, in order."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.casefold(), value)
    return list(seen.values())
