"""URL lists as index jobs take them: validated one by one (errors name the index), deduped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal
from urllib.parse import SplitResult, urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

MAX_URLS = 10_000
MAX_URL_LENGTH = 2_048

Engine = Literal["google", "bing", "yandex"]
# What status reads need of a URL job's params (everything but the URL list).
SUMMARY_PARAMS = ("engine", "checker", "duplicates_removed")


def check_url(value: str) -> str:
    value = value.strip()
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"URL longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("must be an absolute http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("URL has no host")
    _check_authority(parts)
    if any(c.isspace() for c in value):
        raise ValueError("URL contains whitespace")
    return value


def _check_authority(parts: SplitResult) -> None:
    # Credentials would be sent as Basic auth to whoever the URL (or a redirect) names and
    # stored in reports; an empty ``@`` is refused too, as the same syntax.
    if "@" in parts.netloc:
        raise ValueError("URL must not contain a user name or password")
    # urlsplit takes port 0, but nothing can be fetched there (robots.txt went to port 80).
    if parts.port == 0:
        raise ValueError("port 0 is not a valid port")


# What check_url takes, for the OpenAPI document: a client (or schemathesis) building a value
# from it is never refused. Narrower than check_url in places (no IPv6 literal, no spaces to
# strip): a regex cannot say "urlsplit parses it", so the host is plain letters, digits, - and .
_PORT = "0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]+(?::{_PORT})?(?:[/?#][^\s\x00-\x1f\x7f]*)?$"
URL_SCHEMA = {
    "type": "string",
    "format": "uri",
    "maxLength": MAX_URL_LENGTH,
    "pattern": URL_PATTERN,
}
# A URL as documented; lists checked later, one by one (errors name the index), take this.
UrlText = Annotated[str, WithJsonSchema(URL_SCHEMA)]
Url = Annotated[str, AfterValidator(check_url), WithJsonSchema(URL_SCHEMA)]


class UrlListParams(BaseModel):
    """Base of every kind that takes a list of URLs (one item per URL)."""

    model_config = ConfigDict(extra="forbid")

    urls: list[Url] = Field(min_length=1, max_length=MAX_URLS)
    engine: Engine = "google"
    # Filled in by validation: how many duplicate URLs were dropped (order is kept). Read-only:
    # the registry refuses it in a request; stored params bring it back to the worker.
    duplicates_removed: int = Field(default=0, json_schema_extra={"readOnly": True})

    @model_validator(mode="after")
    def _dedupe(self) -> UrlListParams:
        seen: dict[str, None] = dict.fromkeys(self.urls)
        removed = len(self.urls) - len(seen)
        if removed:
            self.urls = list(seen)
            self.duplicates_removed += removed
        return self


def item_urls(params: UrlListParams) -> list[str]:
    return list(params.urls)


def url_count_cost(quota: str) -> Callable[[Any, int], dict[str, int]]:
    """A URL job's cost: one unit of ``quota`` per URL."""

    def cost(_params: Any, items: int) -> dict[str, int]:
        return {quota: items}

    return cost
