"""DNS records of a domain: A, AAAA, MX, NS, TXT (SPF parsed), DMARC, CAA, SOA.

Asked through :class:`~seojobs.fetch.resolver.DnsResolver` (which names the nameservers,
``SEOJOBS_DNS_NAMESERVERS``, and turns answers into plain values); this module reads them.
A name that does not exist (NXDOMAIN) is ``domain_not_found``; a resolver that fails or does
not answer is ``dns_unavailable``. A record type the name simply lacks is an empty list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seojobs.fetch.resolver import NOT_FOUND, RECORD_TYPES, UNAVAILABLE, DnsError, DnsResolver

__all__ = ["NOT_FOUND", "UNAVAILABLE", "DnsError", "dmarc_of", "parse_spf", "records", "spf_of"]

SPF_QUALIFIERS = {"+": "pass", "-": "fail", "~": "softfail", "?": "neutral"}


def parse_spf(record: str) -> dict[str, Any]:
    """An SPF record's terms (RFC 7208 §4.6): mechanisms with their qualifier, and modifiers."""
    mechanisms: list[dict[str, Any]] = []
    modifiers: dict[str, str] = {}
    for term in record.split()[1:]:
        name, eq, value = term.partition("=")
        if eq and ":" not in name and "/" not in name:
            modifiers[name.lower()] = value
            continue
        qualifier = term[0] if term[0] in SPF_QUALIFIERS else "+"
        body = term[1:] if term[0] in SPF_QUALIFIERS else term
        mechanism, _, argument = body.partition(":")
        mechanisms.append(
            {
                "qualifier": SPF_QUALIFIERS[qualifier],
                "mechanism": mechanism.lower(),
                "value": argument or None,
            }
        )
    last = next((m for m in mechanisms if m["mechanism"] == "all"), None)
    return {
        "record": record,
        "mechanisms": mechanisms,
        "includes": [m["value"] for m in mechanisms if m["mechanism"] == "include"],
        "all": last["qualifier"] if last else None,
        "redirect": modifiers.get("redirect"),
        "modifiers": modifiers,
    }


def spf_of(txt: Sequence[str]) -> dict[str, Any] | None:
    found = [t for t in txt if t.lower() == "v=spf1" or t.lower().startswith("v=spf1 ")]
    if not found:
        return None
    parsed = parse_spf(found[0])
    # RFC 7208 §4.5: more than one SPF record is a permanent error for receivers.
    parsed["multiple_records"] = len(found) > 1
    return parsed


def dmarc_of(txt: Sequence[str]) -> dict[str, Any] | None:
    """The DMARC record at ``_dmarc.<domain>`` (RFC 7489 §6.3 tags)."""
    found = [t for t in txt if t.replace(" ", "").lower().startswith("v=dmarc1")]
    if not found:
        return None
    tags: dict[str, str] = {}
    for part in found[0].split(";"):
        name, eq, value = part.partition("=")
        if eq and name.strip():
            tags[name.strip().lower()] = value.strip()
    return {
        "record": found[0],
        "policy": tags.get("p"),
        "subdomain_policy": tags.get("sp"),
        "percent": int(tags["pct"]) if tags.get("pct", "").isdigit() else None,
        "rua": [u.strip() for u in tags.get("rua", "").split(",") if u.strip()],
        "ruf": [u.strip() for u in tags.get("ruf", "").split(",") if u.strip()],
        "tags": tags,
        "multiple_records": len(found) > 1,
    }


async def records(resolver: DnsResolver, domain: str) -> dict[str, Any]:
    """Every record type of ``domain``, with SPF and DMARC parsed. Raises :class:`DnsError`."""
    found: dict[str, Any] = {}
    for rdtype in RECORD_TYPES:
        values = await resolver.query(domain, rdtype)
        found[rdtype] = (values[0] if values else None) if rdtype == "SOA" else values
    try:
        dmarc_txt = await resolver.query(f"_dmarc.{domain}", "TXT")
    except DnsError as exc:
        if exc.code != NOT_FOUND:
            raise
        dmarc_txt = []
    return {
        "records": found,
        "spf": spf_of(found["TXT"]),
        "dmarc": dmarc_of(dmarc_txt),
    }
