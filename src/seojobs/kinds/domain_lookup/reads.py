"""The project's domain data: what its last completed ``domain_lookup`` collected. Never
starts a lookup."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from seojobs.kinds.domain_lookup.params import normalise_domain
from seojobs.reads import ChangeEvent, Filter, Read, SubjectMatch, data_of, stamp
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


# -- what changed (webhooks: domain.expiring) -------------------------------------------------

HORIZON_DAYS = 365  # the most an endpoint may ask to be told in advance
DAY = 86400


class ExpiringFilters(BaseModel):
    """An endpoint's conditions on ``domain.expiring``."""

    model_config = ConfigDict(extra="forbid")

    days: Annotated[int, Field(ge=1, le=HORIZON_DAYS, strict=True)] = Field(
        default=30, description="Tell when the registration or certificate ends within N days."
    )


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _ends(found: CollectionRecord) -> dict[str, tuple[str, int]]:
    """What ends (``registration``, ``certificate``): when, and in how many whole days from
    the lookup."""
    data = data_of(found)
    parts = {"registration": ("rdap", "expires"), "certificate": ("tls", "not_after")}
    ends = {}
    for name, (part, key) in parts.items():
        values = data.get(part)
        if not isinstance(values, dict):
            continue
        at = _when(values.get(key))
        if at is not None:
            left = int((at - found.collected_at).total_seconds() // DAY)
            ends[name] = (str(values[key]), left)
    return ends


def expiring(before: CollectionRecord | None, after: CollectionRecord) -> dict[str, Any] | None:
    """The domain's registration or TLS certificate ends within a year of the lookup:
    ``expiring`` lists each (``what``, ``expires_at``, ``days_left`` and the previous lookup's
    ``days_left_before``). An endpoint hears it once as either comes within its ``days``
    (default 30): not again while it stays within them, again after a renewal."""
    was = _ends(before) if before is not None else {}
    found = [
        {
            "what": name,
            "expires_at": at,
            "days_left": left,
            "days_left_before": was[name][1] if name in was else None,
        }
        for name, (at, left) in _ends(after).items()
        if left <= HORIZON_DAYS
    ]
    if not found:
        return None
    return {"domain": after.subject, "expiring": found}


def within(filters: ExpiringFilters, data: Mapping[str, Any]) -> bool:
    days = filters.days
    return any(
        end["days_left"] <= days
        and (end["days_left_before"] is None or end["days_left_before"] > days)
        for end in data["expiring"]
    )


CHANGES = (
    ChangeEvent(
        "domain.expiring",
        "domain_lookup",
        expiring,
        to_row=row,
        filters=ExpiringFilters,
        matches=within,
        description=expiring.__doc__ or "",
    ),
)
