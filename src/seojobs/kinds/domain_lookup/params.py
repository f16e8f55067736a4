"""A domain lookup's params: the domain, a host name checked and stored in its ASCII form."""

from __future__ import annotations

import re
from typing import Annotated

import idna
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

MAX_NAME = 253  # RFC 1035: a name of 255 octets on the wire is 253 characters written out
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_IPV4ISH = re.compile(r"[0-9.]+")


def normalise_domain(value: str) -> str:
    """``value`` as the lower-case ASCII host name (A-labels) a lookup queries, or
    ``ValueError`` saying why it is not a domain: URLs, IP addresses, single labels and names
    that are no valid IDN are refused. A trailing dot is dropped."""
    text = value.strip()
    if text != value:
        raise ValueError("has spaces or line breaks around it")
    if "://" in text or any(c in text for c in "/?#@"):
        raise ValueError("a domain name, not a URL: e.g. example.com")
    if ":" in text or text.startswith("[") or _IPV4ISH.fullmatch(text):
        raise ValueError("a domain name, not an IP address or a host:port")
    name = text[:-1] if text.endswith(".") else text
    try:
        ascii_name = idna.encode(name, uts46=True).decode("ascii")
    except UnicodeError as exc:  # idna.IDNAError: also labels over 63 and names over 253
        raise ValueError(f"not a valid internationalised domain name ({exc})") from None
    ascii_name = ascii_name.lower()
    labels = ascii_name.split(".")
    if len(labels) < 2:
        raise ValueError("needs at least two labels (a registrable name such as example.com)")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise ValueError(f"label {label!r} is not letters, digits and inner hyphens")
    if labels[-1].isdigit():
        raise ValueError("the top-level label cannot be all digits")
    return ascii_name


def unicode_domain(ascii_name: str) -> str:
    """The U-label form of a normalised name (what people read); the name itself if it has none."""
    try:
        return idna.decode(ascii_name)
    except UnicodeError:
        return ascii_name


DOMAIN_SCHEMA = {
    "type": "string",
    "minLength": 3,
    "maxLength": MAX_NAME,
    "format": "idn-hostname",
    "examples": ["example.com", "bücher.de"],
    "description": (
        "A registered domain name (e.g. example.com), Unicode or ASCII: stored and queried "
        "in its ASCII (IDNA) form. URLs, IP addresses and single labels are refused."
    ),
}
Domain = Annotated[str, AfterValidator(normalise_domain), WithJsonSchema(DOMAIN_SCHEMA)]


class DomainLookupParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: Domain = Field(description="The domain to look up (RDAP, DNS, TLS certificate).")
