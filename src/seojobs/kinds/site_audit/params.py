"""A site audit's params: where to start, how far to go, and the checks' thresholds."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from seojobs.kinds.urls import Url
from seojobs.textrules import one_line


def _header_value(value: str) -> str:
    """Sent as the User-Agent header: one line (a CR, LF, DEL or other control character would
    make the request unsendable, after the audit was charged) and not blank (issue 25.5)."""
    one_line(value)
    if not value.strip(" "):
        raise ValueError("blank; give a User-Agent or leave the field out")
    return value


# The same rule for the OpenAPI document (a client generating values from it is never refused).
_ONE_VISIBLE_LINE = (
    "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u0020\\u007f-\\u009f]"
    "[^\\u0000-\\u001f\\u007f-\\u009f]*$"
)
UserAgent = Annotated[
    str, Field(json_schema_extra={"pattern": _ONE_VISIBLE_LINE}), AfterValidator(_header_value)
]


class Thresholds(BaseModel):
    """Where a per-page check starts to report (SEOnaut's numbers by default)."""

    model_config = ConfigDict(extra="forbid")

    title_max_chars: int = Field(default=60, ge=1, description="title_too_long over this.")
    title_min_chars: int = Field(default=20, ge=0, description="title_too_short under this.")
    description_max_chars: int = Field(default=160, ge=1, description="Over: too long.")
    description_min_chars: int = Field(default=80, ge=0, description="Under: too short.")
    thin_content_words: int = Field(default=200, ge=0, description="thin_content under this.")
    slow_response_ms: int = Field(default=800, ge=1, description="slow_response over this.")
    max_depth: int = Field(default=4, ge=0, description="depth_too_high over this many clicks.")
    max_links: int = Field(default=100, ge=1, description="too_many_links over this.")
    redirect_hops: int = Field(default=1, ge=1, description="redirect_chain over this.")
    url_max_chars: int = Field(default=115, ge=1, description="url_too_long over this.")
    url_max_params: int = Field(
        default=3, ge=0, description="url_too_many_parameters over this many query parameters."
    )
    h1_max_chars: int = Field(default=70, ge=1, description="h1_too_long over this.")
    img_alt_max_chars: int = Field(default=100, ge=1, description="img_alt_too_long over this.")
    html_max_kb: int = Field(
        default=1024, ge=1, description="html_too_large over this many KB (1024 bytes each)."
    )
    text_ratio_min_percent: int = Field(
        default=10,
        ge=0,
        le=100,
        description="low_text_ratio under this percent of visible text in the HTML.",
    )
    dom_max_nodes: int = Field(
        default=1500, ge=1, description="dom_too_large over this many HTML elements."
    )


class SiteAuditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start_url: Url = Field(
        description="Where the crawl starts; its host (and www. twin) is the site."
    )
    max_pages: int = Field(
        default=5000, ge=1, le=100_000, description="Pages crawled at most (charged up front)."
    )
    max_depth: int = Field(
        default=10, ge=0, le=100, description="Clicks from the start URL followed at most."
    )
    include_sitemaps: bool = Field(
        default=True, description="Also crawl URLs listed in the site's sitemaps."
    )
    check_external_links: bool = Field(
        default=True,
        description="Check that links to other sites answer (HEAD, then GET if refused).",
    )
    user_agent: UserAgent | None = Field(
        default=None,
        max_length=300,
        description="The User-Agent sent and obeyed in robots.txt (default: the server's).",
    )
    thresholds: Thresholds = Field(default_factory=Thresholds)
