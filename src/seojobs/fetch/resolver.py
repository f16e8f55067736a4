"""DNS records by type, through dnspython: the one place the server asks DNS for records.

Kinds read DNS through :class:`DnsResolver` (a domain lookup's records, the addresses its TLS
probe connects to) and get plain values back (strings and dicts), never dnspython's objects,
so no kind imports a DNS library. The resolver is the system's (``/etc/resolv.conf``) unless
nameservers are named (``host[:port]``), which is also how tests point it at a local server.
A name that does not exist (NXDOMAIN) is ``domain_not_found``; a resolver that fails or does
not answer is ``dns_unavailable``; a record type the name simply lacks is an empty list.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

NOT_FOUND = "domain_not_found"
UNAVAILABLE = "dns_unavailable"
RECORD_TYPES = ("A", "AAAA", "MX", "NS", "TXT", "CAA", "SOA")


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


def _name(name: Any) -> str:
    return str(name.to_text(omit_final_dot=True)).lower()


def _rdata(rdtype: str, rdata: Any) -> Any:
    """One record as plain JSON values."""
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


class DnsResolver:
    """Asks ``nameservers`` (none: the system's), each question bounded by ``timeout``."""

    def __init__(self, nameservers: Sequence[str] = (), timeout: float = 5.0) -> None:
        # dnspython is imported by the first resolver made, not by every process that loads
        # the kinds (a worker's or a CLI command's start, issue 24).
        import dns.asyncresolver
        import dns.nameserver

        if nameservers:
            made = dns.asyncresolver.Resolver(configure=False)
            made.nameservers = [
                dns.nameserver.Do53Nameserver(*parse_nameserver(text)) for text in nameservers
            ]
        else:
            made = dns.asyncresolver.Resolver()
        made.timeout = timeout
        made.lifetime = timeout
        self._resolver = made

    async def query(self, name: str, rdtype: str) -> list[Any]:
        """The records of one type (one of :data:`RECORD_TYPES`) as plain values, sorted so
        that two lookups compare; [] when there are none. Raises :class:`DnsError`."""
        if rdtype not in RECORD_TYPES:
            raise ValueError(f"unsupported record type {rdtype!r}")
        import dns.exception
        import dns.resolver

        try:
            answer = await self._resolver.resolve(name, rdtype, search=False)
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

    async def addresses(self, host: str) -> list[str]:
        """A and AAAA of ``host``, as :class:`~seojobs.fetch.guard.AddressGuard` takes a
        resolver (a failure is an ``OSError``): a TLS probe then connects where this
        resolver's DNS says, and the SSRF guard judges those addresses."""
        found: list[str] = []
        for rdtype in ("A", "AAAA"):
            try:
                found += await self.query(host, rdtype)
            except DnsError as exc:
                raise OSError(exc.message) from exc
        return found
