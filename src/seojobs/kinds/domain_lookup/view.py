"""How the dashboard shows one domain lookup (issue 28): registrar, registration and
certificate expiry as countdowns, name servers, DNS records, SPF and DMARC."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.views import Collected, Column, DashboardView, JobView, Table
from seojobs.records import CollectionRecord


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def days_until(value: Any, now: datetime | None = None) -> int | None:
    """Whole days from now to an RFC 3339 time (negative: past)."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - (now or datetime.now(UTC))).days


def facts(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    for c in collected:
        rdap, dns, tls = (_dict(c.data.get(part)) for part in ("rdap", "dns", "tls"))
        domain = c.this.subject

        def add(what: str, value: Any, days: int | None = None, *, where: str = domain) -> None:
            made.append({"domain": where, "what": what, "value": value, "countdown": days})

        registrar = _dict(rdap.get("registrar"))
        add("Registrar", registrar.get("name") or rdap.get("registrar"))
        add("Registered", rdap.get("created"))
        add("Registration expires", rdap.get("expires"), days_until(rdap.get("expires")))
        add("Certificate expires", tls.get("not_after"), days_until(tls.get("not_after")))
        add("Certificate issuer", tls.get("issuer"))
        add("Name servers", rdap.get("nameservers") or _dict(dns.get("records")).get("NS"))
        add("DNSSEC", rdap.get("dnssec"))
        add("SPF", _dict(dns.get("spf")).get("record") or dns.get("spf"))
        add("DMARC", _dict(dns.get("dmarc")).get("record") or dns.get("dmarc"))
        for part in ("rdap", "dns", "tls"):
            error = _dict(c.data.get(part)).get("error")
            if error:
                add(f"{part.upper()} failed", error)
    return made


def records(collected: Sequence[Collected]) -> list[dict[str, Any]]:
    made = []
    for c in collected:
        dns = _dict(c.data.get("dns"))
        found = _dict(dns.get("records"))
        for kind, values in found.items():
            for value in values if isinstance(values, list) else [values]:
                made.append({"domain": c.this.subject, "type": kind, "value": value})
    return made


def summary(latest: Sequence[CollectionRecord]) -> tuple[str, list[tuple[str, float]]]:
    """Days until each domain's registration and certificate expire (the first five)."""
    bars = []
    for c in latest[:5]:
        data = _dict(c.data)
        for part, field, what in (
            ("rdap", "expires", "registration"),
            ("tls", "not_after", "certificate"),
        ):
            days = days_until(_dict(data.get(part)).get(field))
            if days is not None:
                bars.append((f"{c.subject} {what}", float(days)))
    return "Days until expiry", bars


VIEW = DashboardView(
    title="Domain",
    columns=("rdap.created", "rdap.expires", "tls.not_after", "tls.days_to_expiry"),
    summary=summary,
    job=JobView(
        "Domain lookup",
        tables=(
            Table(
                "Registration, certificate and mail policy",
                (
                    Column("what", "What"),
                    Column("value", "Value"),
                    Column("countdown", "Expires", "days"),
                    Column("domain", "Domain"),
                ),
                facts,
            ),
            Table(
                "DNS records",
                (Column("type", "Type"), Column("value", "Value"), Column("domain", "Domain")),
                records,
                empty="No DNS records (the DNS part failed, or the domain has none).",
            ),
        ),
        rerun=True,
    ),
)
