"""The private-network (SSRF) guard: which addresses the fetcher may connect to.

Users hand us arbitrary URLs, and the worker usually runs next to a database, a metadata
service and other internal endpoints. So every host is resolved once by us, every resolved
address is checked, and the connection is then made to one of exactly those addresses (see
``transport.py``). If ANY address of a name is forbidden the name is refused: a resolver that
mixes a public and a private answer is how DNS rebinding usually starts.

Numeric host tricks (``http://2130706433/``, ``http://0x7f.1/``, ``http://127.1/``) are parsed
the way browsers (WHATWG URL) and ``inet_aton`` do, so the guard sees the address the system
would really connect to. IPv6 addresses that carry an IPv4 address (mapped, compatible,
translated, NAT64, 6to4, Teredo) are judged by that IPv4 address too, and cloud metadata
addresses are refused in every spelling, whatever the policy.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import ipaddress
import re
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from seojobs.fetch.errors import DNSError, InvalidURL, SSRFRefused

if TYPE_CHECKING:
    from seojobs.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host -> addresses (strings), sync or async; injectable so tests never need real DNS.
Resolver = Callable[[str], Awaitable[Iterable[str]] | Iterable[str]]

# Cloud metadata endpoints. Refused even when private networks are allowed or the host is
# allow-listed: they hand out credentials and are never a page anyone means to audit.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, DigitalOcean, OCI, OpenStack
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "169.254.170.23",  # AWS EKS Pod Identity Agent (hands out IAM credentials)
        "fd00:ec2::23",  # the same agent over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (classic)
    )
)

# Listed explicitly (not only ``is_global``) so the verdict does not drift with the Python
# patch release's special-purpose tables; ``is_global`` stays as the final net.
_V4_FORBIDDEN: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), label)
    for net, label in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF reserved"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6_FORBIDDEN: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), label)
    for net, label in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible (deprecated)"),
        ("::ffff:0:0:0/96", "IPv4-translated"),
        ("64:ff9b:1::/48", "local NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/23", "IETF special purpose"),
        ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local (deprecated)"),
        ("ff00::/8", "multicast"),
    )
)
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")

# IPv6 forms that carry an IPv4 address: the IPv4 policy applies to what they carry, because a
# translator, tunnel or dual-stack socket on the path delivers them to that IPv4 address.
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")  # RFC 4291 IPv4-mapped
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291 IPv4-compatible (deprecated)
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 SIIT IPv4-translated
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use prefix
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")  # RFC 3056
_TEREDO = ipaddress.IPv6Network("2001::/32")  # RFC 4380
# A local-use NAT64 prefix may be any RFC 6052 length inside its /48; each puts the IPv4
# address somewhere else, so every one of them is decoded.
_LOCAL_NAT64_LENGTHS = (48, 56, 64, 96)
# Forms whose IPv4 address is the whole story: allowed when the IPv4 address is. The others
# are refused by the IPv6 table below even when what they carry is public.
_TRANSPARENT = (_MAPPED, _NAT64, _SIX_TO_FOUR)
_LOW32 = 0xFFFFFFFF


def _rfc6052_ipv4(value: int, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address in an RFC 6052 address of the given prefix length (bits 64-71 skipped)."""
    if prefix_length == 96:
        return ipaddress.IPv4Address(value & _LOW32)
    without_u = ((value >> 64) << 56) | (value & ((1 << 56) - 1))  # 120 bits
    return ipaddress.IPv4Address((without_u >> (88 - prefix_length)) & _LOW32)


def embedded_ipv4s(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address ``ip`` embeds (none for a plain IPv6 address).

    ``::`` and ``::1`` are IPv6's own unspecified and loopback addresses, not IPv4-compatible
    forms of 0.0.0.0 and 0.0.0.1.
    """
    value = int(ip)
    if ip in _MAPPED or ip in _TRANSLATED or ip in _NAT64 or (ip in _COMPATIBLE and value > 1):
        return (ipaddress.IPv4Address(value & _LOW32),)
    if ip in _LOCAL_NAT64:
        return tuple(dict.fromkeys(_rfc6052_ipv4(value, n) for n in _LOCAL_NAT64_LENGTHS))
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        server, client = ip.teredo  # the client address comes un-XORed from ipaddress
        return (client, server)
    return ()


def is_metadata(ip: IPAddress) -> bool:
    """A cloud metadata address, written plainly or embedded in an IPv6 address."""
    if ip in METADATA_ADDRESSES:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        return any(inner in METADATA_ADDRESSES for inner in embedded_ipv4s(ip))
    return False


# Cached, like parse_ip_host: every hop of every fetch asks, and both are pure functions of
# their argument (the tables scanned are constants).
@functools.lru_cache(maxsize=4096)
def forbidden_reason(ip: IPAddress) -> str | None:
    """Why the guard refuses ``ip`` (``None``: a public address the fetcher may reach)."""
    if is_metadata(ip):
        return "cloud metadata address"
    if isinstance(ip, ipaddress.IPv4Address):
        return _table_reason(ip, _V4_FORBIDDEN)
    if ip.scope_id:
        return "scoped (link-local) IPv6 address"
    transparent = any(ip in network for network in _TRANSPARENT)
    label = None if transparent else _table_reason(ip, _V6_FORBIDDEN)
    if label is not None:
        return label  # the whole range is refused, whatever it carries
    for inner in embedded_ipv4s(ip):
        reason = forbidden_reason(inner)
        if reason is not None:
            return f"{reason} (embedded IPv4 {inner})"
    return None


def _table_reason(
    ip: IPAddress, table: Iterable[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]]
) -> str | None:
    for network, label in table:
        if ip in network:
            return label
    if ip.is_multicast:
        return "multicast"
    if not ip.is_global:
        return "not globally routable"
    return None


def _ipv4_number(part: str) -> int | None:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if all(c in "01234567" for c in part) else None
    return int(part)


def _whatwg_ipv4(labels: list[str], host: str) -> ipaddress.IPv4Address:
    """Parse a host that ends in a number the way the WHATWG URL standard does."""
    numbers: list[int] = []
    for part in labels:
        number = _ipv4_number(part) if _NUMERIC_LABEL.fullmatch(part) else None
        if number is None:
            raise InvalidURL(f"invalid IPv4 host {host!r}")
        numbers.append(number)
    if len(numbers) > 4 or any(n > 255 for n in numbers[:-1]):
        raise InvalidURL(f"invalid IPv4 host {host!r}")
    last = numbers[-1]
    if last >= 256 ** (5 - len(numbers)):
        raise InvalidURL(f"invalid IPv4 host {host!r}")
    value = last
    for index, number in enumerate(numbers[:-1]):
        value += number * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


@functools.lru_cache(maxsize=4096)
def parse_ip_host(host: str) -> IPAddress | None:
    """The address an IP-literal host names, or ``None`` for a name that needs DNS.

    Raises :class:`InvalidURL` for numeric-looking hosts that are not valid IPv4 (``1.2.3.4.5``),
    because resolvers disagree on those and a guard must not guess.
    """
    text = unquote(host.strip("[]"))
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    labels = text.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()  # a trailing dot does not make a number a name
    if not labels or not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    return _whatwg_ipv4(labels, host)


def normalize_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


async def system_resolver(host: str) -> list[str]:
    """The operating system's resolver (getaddrinfo), off the event loop."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True)
class GuardPolicy:
    allow_private_networks: bool = False
    allow_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_settings(cls, settings: Settings) -> GuardPolicy:
        return cls(
            allow_private_networks=settings.allow_private_networks,
            allow_hosts=frozenset(normalize_host(h) for h in settings.fetch_allow_hosts),
        )

    def exempt(self, host: str) -> bool:
        """Exact, case-insensitive hostname match; a redirect elsewhere is checked afresh."""
        return self.allow_private_networks or normalize_host(host) in self.allow_hosts


class AddressGuard:
    """Resolve a host once and decide whether the fetcher may connect to what it names.

    A name's addresses are kept for ``dns_ttl`` seconds (0: not kept), and fetches that ask
    for a name being looked up wait for that lookup: a crawl fetches hundreds of pages of one
    host, each with a hop or two, and getaddrinfo runs in a thread each time. Every fetch
    still checks the addresses it connects to; only answers are cached, never failures.
    """

    def __init__(
        self,
        policy: GuardPolicy,
        resolver: Resolver | None = None,
        *,
        lookup_timeout: float | None = None,
        dns_ttl: float = 0.0,
    ) -> None:
        self.policy = policy
        self._resolver: Resolver = resolver or system_resolver
        # A resolver that never answers would hold the fetch (and a worker) forever.
        self._lookup_timeout = lookup_timeout
        self._dns_ttl = dns_ttl
        # name -> (the lookup, when its answer expires: monotonic seconds, None until done)
        self._cache: dict[str, tuple[asyncio.Task[tuple[IPAddress, ...]], float | None]] = {}
        self.lookups = 0  # resolver calls made (a crawl's figures; the cache's test)

    async def resolve(self, host: str) -> tuple[IPAddress, ...]:
        """Addresses to connect to for ``host``, every one of them allowed; raises otherwise."""
        literal = parse_ip_host(host)
        if literal is not None:
            addresses: tuple[IPAddress, ...] = (literal,)
        else:
            self._check_name(host)
            addresses = await self._cached_lookup(host.lower())
        self.check(host, addresses)
        return addresses

    async def _cached_lookup(self, name: str) -> tuple[IPAddress, ...]:
        if not self._dns_ttl:
            return await self._lookup(name)
        now = time.monotonic()
        entry = self._cache.get(name)
        if entry is None or (entry[1] is not None and entry[1] <= now):
            # Shielded: one waiter cancelled must not cancel the lookup the others wait on.
            entry = (asyncio.ensure_future(self._lookup(name)), None)
            self._cache[name] = entry
        lookup = entry[0]
        try:
            addresses = await asyncio.shield(lookup)
        except BaseException:
            if lookup.done() and self._cache.get(name, (None,))[0] is lookup:
                del self._cache[name]  # a failure is asked again next time
            raise
        if self._cache.get(name) == (lookup, None):
            self._cache[name] = (lookup, time.monotonic() + self._dns_ttl)
        return addresses

    def check(self, host: str, addresses: Iterable[IPAddress]) -> None:
        addresses = tuple(addresses)
        for address in addresses:
            if is_metadata(address):
                raise SSRFRefused(f"{host} is a cloud metadata address ({address})")
        if self.policy.exempt(host):
            return
        for address in addresses:
            reason = forbidden_reason(address)
            if reason is None:
                continue
            if parse_ip_host(host) == address:
                raise SSRFRefused(f"{host} is a {reason} address")
            raise SSRFRefused(f"{host} resolves to {address}, a {reason} address")

    def check_name(self, host: str) -> None:
        """Refuse a name that is loopback by definition (``localhost``), without a lookup."""
        self._check_name(host)

    def _check_name(self, host: str) -> None:
        # RFC 6761: "localhost" names are loopback whatever a resolver (or a stub) says.
        name = normalize_host(host)
        is_local = name == "localhost" or name.endswith(".localhost")
        if is_local and not self.policy.exempt(host):
            raise SSRFRefused(f"{host} is a loopback name")

    async def _lookup(self, host: str) -> tuple[IPAddress, ...]:
        try:
            async with asyncio.timeout(self._lookup_timeout):
                self.lookups += 1
                answer = self._resolver(host.lower())
                raw = await answer if inspect.isawaitable(answer) else answer
            found = [ipaddress.ip_address(str(a)) for a in raw]
        except TimeoutError as exc:
            raise DNSError(f"DNS lookup for {host} timed out") from exc
        except (OSError, LookupError, UnicodeError) as exc:
            raise DNSError(f"cannot resolve {host}: {exc}") from exc
        except ValueError as exc:
            raise DNSError(f"resolver gave a non-address for {host}: {exc}") from exc
        unique = tuple(dict.fromkeys(found))
        if not unique:
            raise DNSError(f"{host} has no addresses")
        return unique
