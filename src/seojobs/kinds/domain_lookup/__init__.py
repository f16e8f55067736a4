"""``domain_lookup``: what a domain is, from the outside (seed 001's "domain lookups").

The package: ``params`` (the domain, checked and stored in ASCII), ``lookup`` (the handler:
three parts, each recorded on its own), ``records`` (DNS records, SPF, DMARC, asked through
``seojobs.fetch.resolver``), ``certificate`` (the TLS certificate's fields); RDAP is a
provider adapter (``seojobs.providers.rdap``) and the TLS handshake goes through the SSRF
guard (``seojobs.fetch.tls``). What a lookup collects is read at ``GET /v1/projects/{id}/domain``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from seojobs.engine.registry import Kind, Quota
from seojobs.fetch.resolver import parse_nameserver
from seojobs.kinds.domain_lookup.params import DomainLookupParams, normalise_domain
from seojobs.kinds.domain_lookup.reads import CHANGES, READS
from seojobs.kinds.domain_lookup.view import VIEW

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

NAME = "domain_lookup"
IANA_BOOTSTRAP = "https://data.iana.org/rdap/dns.json"
__all__ = ["KIND", "NAME", "DomainLookupParams", "DomainLookupSettings", "normalise_domain"]


class DomainLookupSettings(BaseSettings):
    """``SEOJOBS_RDAP_BOOTSTRAP_URL`` (IANA's dns.json) and ``SEOJOBS_DNS_NAMESERVERS``
    (``host[:port]``, comma separated; default: the system resolver) are the names the design
    gives; each also answers to its ``SEOJOBS_DOMAIN_LOOKUP_`` spelling. The rest:
    ``SEOJOBS_DOMAIN_LOOKUP_RDAP_BOOTSTRAP_TTL`` (seconds the bootstrap file is kept),
    ``..._DNS_TIMEOUT``, ``..._TLS_PORT``, ``..._TLS_TIMEOUT``, ``..._TLS_CA_FILE`` (extra
    trust anchors for the certificate check, PEM), ``..._PART_TIMEOUT`` (seconds each part
    may take in all)."""

    model_config = SettingsConfigDict(
        env_prefix="SEOJOBS_DOMAIN_LOOKUP_", extra="ignore", populate_by_name=True
    )
    rdap_bootstrap_url: str = Field(
        default=IANA_BOOTSTRAP,
        validation_alias=AliasChoices(
            "SEOJOBS_RDAP_BOOTSTRAP_URL",
            "SEOJOBS_DOMAIN_LOOKUP_RDAP_BOOTSTRAP_URL",
        ),
    )
    rdap_bootstrap_ttl: float = Field(default=86400.0, gt=0)
    dns_nameservers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        validation_alias=AliasChoices(
            "SEOJOBS_DNS_NAMESERVERS", "SEOJOBS_DOMAIN_LOOKUP_DNS_NAMESERVERS"
        ),
    )
    dns_timeout: float = Field(default=5.0, gt=0)
    tls_port: int = Field(default=443, ge=1, le=65535)
    tls_timeout: float = Field(default=10.0, gt=0)
    tls_ca_file: str | None = None
    # Each part (RDAP, DNS, TLS) ends by then, failed on its own: below the kind's timeout.
    part_timeout: float = Field(default=60.0, gt=0, le=100)

    @field_validator("dns_nameservers", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("dns_nameservers")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_nameserver(text)  # ValueError naming the bad entry
        return value


async def _run(ctx: JobContext[DomainLookupParams]) -> None:
    from seojobs.kinds.domain_lookup import lookup  # the run-time code: a worker's first lookup

    await lookup.run(ctx)


def _cost(_params: DomainLookupParams, _items: int) -> dict[str, int]:
    return {DAILY.name: 1, MONTHLY.name: 1}


DAILY, MONTHLY = Quota.day_and_month(
    "domain_lookups", "Domain lookups", daily=1_000, monthly=10_000
)

KIND: Kind[DomainLookupParams] = Kind(
    NAME,
    DomainLookupParams,
    _run,
    description="Look a domain up: registration (RDAP: registrar, dates, status, name servers), "
    "DNS (A, AAAA, MX, NS, TXT with SPF and DMARC, CAA, SOA) and its TLS certificate. "
    "Read the result at GET /v1/projects/{id}/domain.",
    summary_params=("domain",),
    schedulable=False,
    cost=_cost,
    quotas=(DAILY, MONTHLY),
    # Three lookups of a few seconds each; a stuck one is cut off rather than held.
    timeout=120.0,
    settings=DomainLookupSettings,
    reads=READS,
    changes=CHANGES,
    view=VIEW,
)
