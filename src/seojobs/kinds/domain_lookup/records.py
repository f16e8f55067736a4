"""DNS records of a domain with dnspython: A, AAAA, MX, NS, TXT (SPF parsed), DMARC, CAA, SOA.

The resolver is the system's (``/etc/resolv.conf``) unless ``SEOJOBS_DNS_NAMESERVERS`` names
others (``host[:port]``, comma separated), which is also how tests point it at a local server.
A name that does not exist (NXDOMAIN) is ``domain_not_found``; a resolver that fails or does
not answer is ``dns_unavailable``. A record type the name simply lacks is an empty list.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.rdatatype
import dns.resolver

NOT_FOUND = "domain_not_found"
UNAVAILABLE = "dns_unavailable"
TYPES = ("A", "AAAA", "MX", "NS", "TXT", "CAA", "SOA")
SPF_QUALIFIERS = {"+": "pass", "-": "fail", "~": "softfail", "?": "neutral"}


class DnsError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_nameserver(text: str) -> tuple[str, int]:
    """``host[:port]`` (``[v6]:port`` for IPv6 with a port) -> (address, port); the host must
    be an IP address (a resolver is reached by address)."""
    host, port = text.strip(), 53
    if host.startswith("["):
        inside, _, rest = host[1:].partition("]")
        host = inside
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                raise ValueError(f"{text!r}: expected [address]:port")
            port = int(rest[1:])
    elif host.count(":") == 1:
        host, _, digits = host.partition(":")
        if not digits.isdigit():
            raise ValueError(f"{text!r}: the port must be a number")
        port = int(digits)
    ipaddress.ip_address(host)  # ValueError naming the text otherwise
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be 1 to 65535")
    return host, port


def resolver(nameservers: Sequence[str], timeout: float) -> dns.asyncresolver.Resolver:
    if nameservers:
        made = dns.asyncresolver.Resolver(configure=False)
        made.nameservers = [
            dns.nameserver.Do53Nameserver(*parse_nameserver(text)) for text in nameservers
        ]
    else:
        made = dns.asyncresolver.Resolver()
    made.timeout = timeout
    made.lifetime = timeout
    return made


def _rdata(rdtype: str, rdata: Any) -> Any:
    if rdtype in ("A", "AAAA"):
        return str(rdata.address)
    if rdtype == "MX":
        return {"preference": rdata.preference, "exchange": _name(rdata.exchange)}
    if rdtype == "NS":
        return _name(rdata.target)
    if rdtype == "TXT":
        return b"".join(rdata.strings).decode("utf-8", errors="replace")
    if rdtype == "CAA":
        return {
            "flags": rdata.flags,
            "tag": rdata.tag.decode("ascii", errors="replace"),
            "value": rdata.value.decode("utf-8", errors="replace"),
        }
    return {  # SOA
        "mname": _name(rdata.mname),
        "rname": _name(rdata.rname),
        "serial": rdata.serial,
        "refresh": rdata.refresh,
        "retry": rdata.retry,
        "expire": rdata.expire,
        "minimum": rdata.minimum,
    }


def _name(name: Any) -> str:
    return str(name.to_text(omit_final_dot=True)).lower()


async def query(made: dns.asyncresolver.Resolver, name: str, rdtype: str) -> list[Any]:
    """The records of one type (sorted, so two lookups compare); [] when there are none."""
    try:
        answer = await made.resolve(name, rdtype, search=False)
    except dns.resolver.NXDOMAIN as exc:
        raise DnsError(NOT_FOUND, f"{name} does not exist in DNS (NXDOMAIN)") from exc
    except dns.resolver.NoAnswer:
        return []
    except dns.resolver.NoNameservers as exc:
        raise DnsError(UNAVAILABLE, f"no resolver answered for {name} {rdtype}: {exc}") from exc
    except dns.exception.Timeout as exc:
        raise DnsError(UNAVAILABLE, f"DNS timed out for {name} {rdtype}") from exc
    except dns.exception.DNSException as exc:
        raise DnsError(UNAVAILABLE, f"DNS failed for {name} {rdtype}: {exc}") from exc
    found = [_rdata(rdtype, rdata) for rdata in answer]
    return sorted(found, key=repr)


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


async def records(made: dns.asyncresolver.Resolver, domain: str) -> dict[str, Any]:
    """Every record type of ``domain``, with SPF and DMARC parsed. Raises :class:`DnsError`."""
    found: dict[str, Any] = {}
    for rdtype in TYPES:
        values = await query(made, domain, rdtype)
        found[rdtype] = (values[0] if values else None) if rdtype == "SOA" else values
    try:
        dmarc_txt = await query(made, f"_dmarc.{domain}", "TXT")
    except DnsError as exc:
        if exc.code != NOT_FOUND:
            raise
        dmarc_txt = []
    return {
        "records": found,
        "spf": spf_of(found["TXT"]),
        "dmarc": dmarc_of(dmarc_txt),
    }


async def addresses(made: dns.asyncresolver.Resolver, host: str) -> list[str]:
    """A and AAAA of ``host``: the TLS probe's resolver, so that it connects where this
    lookup's DNS says (and the SSRF guard judges those addresses)."""
    found: list[str] = []
    for rdtype in ("A", "AAAA"):
        try:
            found += await query(made, host, rdtype)
        except DnsError as exc:
            raise OSError(exc.message) from exc
    return found
