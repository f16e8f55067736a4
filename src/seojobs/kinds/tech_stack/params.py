"""A tech-stack lookup's params: the pages to look at; the site (subject) a page belongs to."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from seojobs.fetch.urls import parse_url
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


def subject(url: str) -> str:
    """The site a URL belongs to: its host, with the port when not the scheme's default."""
    parsed = parse_url(url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{host}:{parsed.port}" if parsed.port else host
