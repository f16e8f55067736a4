"""A tech-stack lookup's params: the pages to look at."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.urls import Url

MAX_URLS = 20


class TechStackParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    urls: list[Url] = Field(
        min_length=1,
        max_length=MAX_URLS,
        description="Pages to look at (one lookup each, charged per URL); the pages of one "
        "host are reported together as that site's stack. Duplicates count once.",
    )
