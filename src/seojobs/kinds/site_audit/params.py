"""A site audit's params: where to start, how far to go, and the checks' thresholds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from seojobs.fetch.urls import parse_url
from seojobs.kinds.urls import Url
from seojobs.records import ProjectDefaults
from seojobs.textrules import one_line

Severity = Literal["error", "warning", "notice"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "notice")


def page_key(url: str) -> str:
    """The frontier's dedupe key, also the URL stored for the page: normalised (lowercase
    scheme and host, no default port, no fragment)."""
    return parse_url(url).key


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
    page_max_kb: int = Field(
        default=3072,
        ge=1,
        description="page_weight_high over this: the HTML and what it loads that the crawl "
        "fetched.",
    )
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


def _known_codes(codes: list[str]) -> list[str]:
    from seojobs.kinds.site_audit.checks import SEVERITY

    unknown = [code for code in codes if code not in SEVERITY]
    if unknown:
        raise ValueError(f"unknown check codes {unknown[:5]}: see GET /v1/audit-checks")
    return codes


def _known_severities(severities: dict[str, str]) -> dict[str, str]:
    _known_codes(list(severities))
    return severities


def _codes() -> list[str]:
    from seojobs.kinds.site_audit.checks import SEVERITY

    return list(SEVERITY)


def _code_list_schema(schema: dict[str, Any]) -> None:
    """The codes as the schema's enum: a client generating values from it is never refused."""
    schema["items"] = {"type": "string", "enum": _codes()}


def _code_keys_schema(schema: dict[str, Any]) -> None:
    schema["propertyNames"] = {"enum": _codes()}


Code = Annotated[str, StringConstraints(min_length=1, max_length=100)]
# A URL pattern: shell-style wildcards (``*`` any characters, ``?`` one) matched against the
# URL's path and query (``/blog/*``, ``*?sort=*``); no regular expressions (a hostile one
# could hold a worker).
Pattern = Annotated[
    str,
    StringConstraints(min_length=1, max_length=300, pattern="^[^\\u0000-\\u001f\\u007f-\\u009f]+$"),
]
ParamName = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=100, pattern="^[^&=#\\s\\u0000-\\u001f\\u007f-\\u009f]+$"
    ),
]


class CrawlRules(BaseModel):
    """What an audit reports and crawls beyond its thresholds: per-check severities and
    checks turned off (the health score follows them), URL patterns to crawl or keep off,
    query parameters to ignore or sort, and a time budget for the crawl."""

    model_config = ConfigDict(extra="forbid")

    severities: Annotated[dict[Code, Severity], AfterValidator(_known_severities)] = Field(
        default_factory=dict,
        max_length=500,
        description="Check code -> the severity its issues get (and the health score counts).",
        json_schema_extra=_code_keys_schema,
    )
    disabled_checks: Annotated[list[Code], AfterValidator(_known_codes)] = Field(
        default_factory=list,
        max_length=500,
        description="Check codes not run or reported.",
        json_schema_extra=_code_list_schema,
    )
    include_patterns: list[Pattern] = Field(
        default_factory=list,
        max_length=50,
        description="When given, only URLs whose path and query match one of these "
        "wildcard patterns (`*`, `?`) are crawled (the start URL always is).",
    )
    exclude_patterns: list[Pattern] = Field(
        default_factory=list,
        max_length=50,
        description="URLs whose path and query match one of these wildcard patterns "
        "(`/private/*`, `*?sort=*`) are not crawled (never requested).",
    )
    ignore_params: list[ParamName] = Field(
        default_factory=list,
        max_length=50,
        description="Query parameters removed from the site's URLs before they are crawled "
        "(names or wildcard patterns: `utm_*`, `sessionid`).",
    )
    sort_params: bool = Field(
        default=False,
        description="Sort the query parameters of the site's URLs, so `?b=1&a=2` and "
        "`?a=2&b=1` are one page.",
    )
    crawl_seconds: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="A time budget: the crawl stops taking pages this many seconds after the "
        "audit first started, and the audit completes with the pages crawled so far "
        "(`crawl_budget_hit` in its summary). Null: no budget (the server's own limit, "
        "SEOJOBS_SITE_AUDIT_MAX_SECONDS, still fails an audit running longer).",
    )


class AuditSettings(CrawlRules):
    """A project's audit settings (``/v1/projects/{id}/audit-settings``): the defaults of its
    audits, each field only when given (a request's own params win; thresholds one by one,
    severities code by code)."""

    model_config = ConfigDict(extra="forbid")

    thresholds: Thresholds = Field(
        default_factory=Thresholds,
        description="Only the thresholds given here are the project's; the others keep the "
        "server's defaults.",
    )

    def stored(self) -> dict[str, Any]:
        """What was set, as stored and merged under a request's params."""
        return self.model_dump(mode="json", exclude_unset=True)


def with_defaults(settings: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A request's ``params`` over a project's stored ``settings`` (``AuditSettings.stored``):
    what the request sets wins; ``thresholds`` and ``severities`` merge key by key."""
    merged = {**settings, **params}
    for name in ("thresholds", "severities"):
        own, given = settings.get(name), params.get(name)
        if isinstance(own, dict) and isinstance(given, dict):
            merged[name] = {**own, **given}
    return merged


def from_project(params: Mapping[str, Any], defaults: ProjectDefaults) -> dict[str, Any]:
    """``Kind.project_params``: the project's stored audit settings (issue 30.4) are its
    audits' defaults; what the request sets wins."""
    given = dict(params)
    return with_defaults(dict(defaults.settings), given) if defaults.settings else given


class SiteAuditParams(CrawlRules):
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
    render: Literal["raw", "js"] = Field(
        default="raw",
        description='"js": each HTML page is also rendered in Chromium and its rendered DOM '
        "audited, with checks for what scripts changed (title, description, canonical, robots, "
        'h1, links, content), script errors and blocked resources. Slower: "raw" reads the '
        "HTML as served.",
    )
    thresholds: Thresholds = Field(default_factory=Thresholds)
