"""URL lists as index jobs take them: validated one by one (errors name the index), deduped."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal
from urllib.parse import quote

import idna
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

MAX_URLS = 10_000
MAX_URL_LENGTH = 2_048

Engine = Literal["google", "bing", "yandex"]
# What status reads need of a URL job's params (everything but the URL list).
SUMMARY_PARAMS = ("engine", "checker", "duplicates_removed")


# What an http(s) URL is here, as a regex: RFC 3986's grammar widened to IRIs (RFC 3987: other
# characters than ASCII may stand where unreserved ASCII may), narrowed to a host that is a
# name, an IPv4 address or an IPv6 literal (no user:password@, no port 0). It is both the
# OpenAPI pattern and the check: a client (or schemathesis) building a value from the document
# is never refused, nor one outside it taken. A URL taken is stored and used as the URI it maps
# to (:func:`to_uri`).
_PORT = "0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_OCTET}(?:\.{_OCTET}){{3}})"
# RFC 3986's IPv6address: at most k groups before "::" (k = 0..7), and what may follow it.
# The seven forms that end in ls32 share one copy of it (the same language, spelled once):
# its seven copies were most of what a generator builds for the URL pattern (hypothesis took
# about 50 ms, 20 ms now), and schemathesis builds it anew for each schema holding a URL.
_BEFORE = [rf"(?:(?:{_H16}:){{0,{k - 1}}}{_H16})?" if k else "" for k in range(8)]
_BEFORE_LS32 = [rf"(?:{_H16}:){{6}}"] + [
    _BEFORE[k] + "::" + (rf"(?:{_H16}:){{{5 - k}}}" if k < 5 else "") for k in range(6)
]
_IPV6 = rf"(?:{'|'.join(_BEFORE_LS32)}){_LS32}|{_BEFORE[6]}::{_H16}|{_BEFORE[7]}::"
# The characters an IRI adds (RFC 3987): here, any but ASCII and C1 controls. That is wider
# than RFC 3987's ucschar (private use and noncharacters too), which costs nothing, as every one
# of them is percent-encoded in the URI; and a negated class keeps the pattern cheap for
# generators (hypothesis took 12 s to build one class of ucschar's 17 ranges). Lone surrogates
# are refused before (seojobs.api.inputs): JSON Schema's regex engines take no surrogate escape.
_NON_ASCII = "[^\\u0000-\\u009F]"
_ESCAPE = "%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_NON_ASCII}|{_ESCAPE})"
_NAME = rf"(?:[A-Za-z0-9.\-]|{_NON_ASCII}|{_ESCAPE})+"
URL_PATTERN = (
    rf"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_NAME}|\[(?:{_IPV6})\])(?::{_PORT})?"
    rf"(?:/{_PCHAR}*)*(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?$"
)
_URL = re.compile(URL_PATTERN)
_AUTHORITY_END = re.compile("[/?#]")
# Printable ASCII: what percent-encoding leaves as it is (escapes included), so that only the
# characters an IRI adds to a URI are encoded.
_ASCII = "".join(chr(c) for c in range(0x21, 0x7F))


def _ascii_host(host: str) -> str:
    """RFC 3987 3.1: a host name's non-ASCII characters as IDNA (UTS 46, as browsers map
    them), or percent-encoded as UTF-8 when the name is no valid IDN (``☃.net``, ``ü-.de``),
    which RFC 3987 also allows: an ASCII name is not checked against DNS rules either, and a
    name that cannot exist fails as a DNS error when the URL is fetched."""
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except UnicodeError:  # idna.IDNAError and its subclasses
        return quote(host, safe=_ASCII)


def to_uri(iri: str) -> str:
    """The URI an IRI that matches :data:`URL_PATTERN` maps to (RFC 3987 3.1): the host
    IDNA-encoded, other non-ASCII characters percent-encoded as UTF-8; ASCII is kept as sent
    (``https://bücher.de/straße`` -> ``https://xn--bcher-kva.de/stra%C3%9Fe``)."""
    if iri.isascii():
        return iri
    scheme, _, rest = iri.partition("://")
    found = _AUTHORITY_END.search(rest)
    cut = found.start() if found else len(rest)
    authority, tail = rest[:cut], rest[cut:]
    if not authority.isascii():  # a name (IP literals are ASCII), perhaps with a port
        host, colon, port = authority.partition(":")
        authority = _ascii_host(host) + colon + port
    return f"{scheme}://{authority}{quote(tail, safe=_ASCII)}"


def check_url(value: str) -> str:
    """``value`` as the URI it stands for, if it is an http(s) URL (or IRI) as
    :data:`URL_PATTERN` says, of at most :data:`MAX_URL_LENGTH` characters once percent-encoded
    (what providers receive); else ``ValueError`` saying why."""
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"longer than {MAX_URL_LENGTH} characters")
    if not _URL.fullmatch(value):  # not match: Python's $ also matches before a final \n
        raise ValueError(_why(value))
    uri = to_uri(value)
    if len(uri) > MAX_URL_LENGTH:
        raise ValueError(
            f"longer than {MAX_URL_LENGTH} characters once its non-ASCII characters are "
            f"percent-encoded ({len(uri)})"
        )
    return uri


_SCHEME = re.compile("[Hh][Tt][Tt][Pp][Ss]?://")


def _why(value: str) -> str:
    """What is wrong with a URL the pattern refused: the first cause found, or the rule."""
    if value != value.strip():
        return "has spaces or line breaks around it"
    if not _SCHEME.match(value):
        return "not an absolute http:// or https:// URL"
    authority = _AUTHORITY_END.split(value[value.index("//") + 2 :], 1)[0]
    if "@" in authority:
        return "holds a user name or password (user:password@), which are never sent"
    for index, char in enumerate(value):
        if not _URL_CHAR.fullmatch(char):
            return f"character {char!r} at position {index} must be percent-encoded"
    return (
        "not an http(s) URL with a host name, IPv4 or [IPv6] address and a port from 1 to "
        "65535 (RFC 3986, or RFC 3987 with non-ASCII characters)"
    )


# Any character the pattern admits somewhere (and "[", "]" of IPv6 literals).
_URL_CHAR = re.compile(rf"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%\[\]]|{_NON_ASCII}")


URL_SCHEMA = {
    # No ``format``: "iri" would claim RFC 3987's character set, narrower than the pattern's
    # (private use characters and noncharacters are taken and percent-encoded).
    "type": "string",
    "maxLength": MAX_URL_LENGTH,
    "pattern": URL_PATTERN,
    "description": (
        "An http(s) URL; non-ASCII characters are taken (an IRI) and stored as the URI they "
        "map to: the host IDNA-encoded, the rest percent-encoded as UTF-8. At most "
        f"{MAX_URL_LENGTH} characters once percent-encoded."
    ),
}
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
