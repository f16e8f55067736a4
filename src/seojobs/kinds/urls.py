"""URL lists as index jobs take them: validated one by one (errors name the index), deduped."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

MAX_URLS = 10_000
MAX_URL_LENGTH = 2_048

Engine = Literal["google", "bing", "yandex"]
# What status reads need of a URL job's params (everything but the URL list).
SUMMARY_PARAMS = ("engine", "checker", "duplicates_removed")


# What an http(s) URL is here, as a regex: RFC 3986's grammar (ASCII only: other characters
# are percent-encoded), narrowed to a host that is a name, an IPv4 address or an IPv6 literal
# (no user:password@, no port 0). It is both the OpenAPI pattern and the check: a client (or
# schemathesis) building a value from the document is never refused, nor one outside it taken.
_PORT = "0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_OCTET}(?:\.{_OCTET}){{3}})"
# RFC 3986's IPv6address: what may follow "::" when k groups come before it (k = 0..7).
_AFTER = [rf"(?:{_H16}:){{{n}}}{_LS32}" for n in (5, 4, 3, 2, 1)] + [_LS32, _H16, ""]
_IPV6 = "|".join(
    [rf"(?:{_H16}:){{6}}{_LS32}"]
    + [
        (rf"(?:(?:{_H16}:){{0,{k - 1}}}{_H16})?" if k else "") + "::" + after
        for k, after in enumerate(_AFTER)
    ]
)
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
URL_PATTERN = (
    rf"^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9.-]+|\[(?:{_IPV6})\])(?::{_PORT})?"
    rf"(?:/{_PCHAR}*)*(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?$"
)
_URL = re.compile(URL_PATTERN)


def check_url(value: str) -> str:
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"URL longer than {MAX_URL_LENGTH} characters")
    if not _URL.fullmatch(value):  # not match: Python's $ also matches before a final \n
        raise ValueError(
            "not an absolute http:// or https:// URL with a host name, IPv4 or [IPv6] "
            "address, no user name or password, a port from 1 to 65535, and only the "
            "characters RFC 3986 allows (others percent-encoded)"
        )
    return value


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
