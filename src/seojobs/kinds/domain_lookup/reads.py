"""The project's domain data: what its last completed ``domain_lookup`` collected. Never
starts a lookup."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from seojobs.kinds.domain_lookup.params import normalise_domain
from seojobs.reads import Filter, Read, SubjectMatch, stamp
from seojobs.records import CollectionRecord


class DomainData(BaseModel):
    domain: str = Field(description="The domain, in its ASCII (IDNA) form.")
    job_id: int | None = Field(description="The lookup that collected it (null once pruned).")
    collected_at: str
    data: dict[str, Any] = Field(
        description="`rdap` (registrar, created/expires/updated, status, nameservers, dnssec), "
        "`dns` (records A, AAAA, MX, NS, TXT, CAA, SOA; spf; dmarc), `tls` (issuer, subject, "
        "sans, not_before, not_after, days_to_expiry, protocol, cipher, verified), each with "
        "its `error` (null, or {code, message} when that part failed), and `errors`."
    )


def row(found: CollectionRecord) -> dict[str, Any]:
    return {"domain": found.subject, **stamp(found), "data": found.data}


def stored(domain: Any) -> str:
    """The stored spelling of ``domain``; a value that is no domain is looked up as written
    (it matches nothing: 404, as for any domain never looked up)."""
    try:
        return normalise_domain(str(domain))
    except ValueError:
        return str(domain)


READS = (
    Read(
        "domain",
        "get_domain_data",
        "domain_lookup",
        DomainData,
        response=DomainData,
        to_row=row,
        source="one",
        envelope=False,
        filters=(
            Filter(
                "domain",
                str,
                "Which domain, when the project has looked up several (Unicode or ASCII); "
                "default: the most recent lookup of any.",
                SubjectMatch(),
                prepare=stored,
                max_length=500,
            ),
        ),
        summary="Domain Data",
        description="The project's latest domain lookup (of `domain`, if given): registration, "
        "DNS and TLS certificate, with the `job_id` and `collected_at` of that lookup. Never "
        "starts a lookup: 404 until one has completed.",
        tags=("domain",),
    ),
)
