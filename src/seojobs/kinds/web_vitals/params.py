"""A web-vitals job's params: the pages, and the form factors each is measured with."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.urls import Url

MAX_URLS = 20
FormFactor = Literal["mobile", "desktop"]


def _both() -> list[FormFactor]:
    return ["mobile", "desktop"]


class WebVitalsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    urls: list[Url] = Field(
        min_length=1,
        max_length=MAX_URLS,
        description="Pages to measure (one item each; one Lighthouse run per URL and form "
        "factor, charged as such). Duplicates count once.",
    )
    form_factors: list[FormFactor] = Field(
        default_factory=_both,
        min_length=1,
        max_length=2,
        description="`mobile` (Lighthouse's default, simulated throttling) and/or `desktop` "
        "(`--preset=desktop`). Duplicates count once.",
    )

    def factors(self) -> list[str]:
        """The form factors, each once, in the order given."""
        return list(dict.fromkeys(self.form_factors))


def subject(form_factor: str, url: str) -> str:
    """A collection's subject: one per URL and form factor (a space never occurs in a URL)."""
    return f"{form_factor} {url}"
