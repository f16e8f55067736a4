"""RDAP (RFC 9082 queries, RFC 9083 answers) for domains: the registry found through IANA's
bootstrap file (RFC 9224), then one hop to the registrar's server when the registry links it.

The bootstrap file is cached per process for ``ttl`` seconds (IANA publishes it a few times a
year; fetching it for every lookup would be wasteful). The bootstrap file and the registries it
names are the operator's choice (a setting, then IANA's list), so they go through the provider
client like other provider APIs. The registrar's URL is whatever a registry's answer links,
so that hop goes through :func:`guarded_client` (the SSRF guard of page fetches, no proxy),
and only over https or the registry's own scheme (a registry served over plain http is a
test's).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from seojobs.fetch.errors import SSRF_REFUSED, FetchError, UnreadableBody
from seojobs.fetch.guard import AddressGuard, GuardPolicy
from seojobs.fetch.http import ACCEPT_ENCODING, HttpClient, Response
from seojobs.fetch.transport import PinnedConnector
from seojobs.providers.base import MAX_ANSWER_BYTES
from seojobs.settings import Settings

ACCEPT = "application/rdap+json, application/json;q=0.9"
# Part codes (stored in a lookup's ``errors``; the job fails with one when nothing was learned).
NOT_FOUND = "domain_not_found"
UNAVAILABLE = "rdap_unavailable"
UNSUPPORTED = "rdap_unsupported"
REFUSED = "rdap_refused"  # the registrar's link points where the SSRF guard does not go

# RFC 9083 §4.5 event actions -> our field names.
EVENTS = {
    "registration": "created",
    "expiration": "expires",
    "last changed": "updated",
    "last update of rdap database": "rdap_updated",
}


class RdapError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class _Bootstrap:
    fetched: float
    services: dict[str, list[str]]  # tld or suffix (lower case, ASCII) -> base URLs


class BootstrapCache:
    """IANA's dns.json per URL, each kept ``ttl`` seconds; one fetch at a time per event loop
    (a worker starting ten lookups at once fetches it once). ``clock``: tests' hook."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._files: dict[str, _Bootstrap] = {}
        # A lock belongs to one event loop; the cache outlives them (tests run several).
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self.fetches = 0

    async def services(self, http: HttpClient, url: str, ttl: float) -> dict[str, list[str]]:
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            cached = self._files.get(url)
            if cached is not None and self._clock() - cached.fetched < ttl:
                return cached.services
            services = parse_bootstrap(await _get_json(http, url, "the RDAP bootstrap file"))
            self.fetches += 1
            self._files[url] = _Bootstrap(self._clock(), services)
            return services


# One per process: a worker's lookups share it.
BOOTSTRAP = BootstrapCache()


def parse_bootstrap(document: Any) -> dict[str, list[str]]:
    """RFC 9224 §4: ``services`` is a list of [[entries...], [urls...]]."""
    services = document.get("services") if isinstance(document, dict) else None
    if not isinstance(services, list):
        raise RdapError(UNAVAILABLE, "the RDAP bootstrap file has no services list")
    found: dict[str, list[str]] = {}
    for service in services:
        if not (isinstance(service, list) and len(service) >= 2):
            continue
        entries, urls = service[0], service[1]
        if not (isinstance(entries, list) and isinstance(urls, list)):
            continue
        bases = [u for u in urls if isinstance(u, str) and u.startswith(("https://", "http://"))]
        # RFC 9224 §3: prefer https when a service lists both.
        bases.sort(key=lambda u: not u.startswith("https://"))
        for entry in entries:
            if isinstance(entry, str) and bases:
                found[entry.lower().rstrip(".")] = bases
    return found


def registry_base(services: Mapping[str, list[str]], domain: str) -> str | None:
    """The longest label-wise suffix of ``domain`` the bootstrap lists (RFC 9224 §4)."""
    labels = domain.split(".")
    for start in range(len(labels)):
        bases = services.get(".".join(labels[start:]))
        if bases:
            return bases[0]
    return None


async def _get_json(http: HttpClient, url: str, what: str) -> Any:
    try:
        response = await http.get(url, headers={"Accept": ACCEPT})
    except UnreadableBody as exc:
        raise RdapError(UNAVAILABLE, f"{what} could not be read: {exc.message}") from exc
    except FetchError as exc:
        code = REFUSED if exc.kind == SSRF_REFUSED else UNAVAILABLE
        raise RdapError(code, f"{what} is unreachable ({exc.kind}): {exc.message}") from exc
    return _json_of(response, url, what)


def _json_of(response: Response, url: str, what: str) -> Any:
    if response.status == 404:
        raise RdapError(NOT_FOUND, f"{what} answered 404 at {url}")
    if response.status != 200:
        raise RdapError(UNAVAILABLE, f"{what} answered {response.status} at {url}")
    try:
        return response.json()
    except ValueError as exc:
        raise RdapError(UNAVAILABLE, f"{what} did not answer JSON ({exc})") from exc


def _vcard_value(entity: Mapping[str, Any], name: str) -> str | None:
    """A property of an entity's jCard (RFC 7095: ["vcard", [[name, params, type, value]...]])."""
    card = entity.get("vcardArray")
    if not (isinstance(card, list) and len(card) == 2 and isinstance(card[1], list)):
        return None
    for prop in card[1]:
        if isinstance(prop, list) and len(prop) >= 4 and prop[0] == name:
            value = prop[3]
            if isinstance(value, list):
                value = " ".join(str(v) for v in value if v)
            return str(value) if value else None
    return None


def _entities(obj: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    found = obj.get("entities")
    entities = [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []
    return [e for e in entities if role in (e.get("roles") or [])]


def _registrar(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for entity in _entities(obj, "registrar"):
        iana_id = None
        for public in entity.get("publicIds") or []:
            if isinstance(public, dict) and "iana" in str(public.get("type", "")).lower():
                iana_id = str(public.get("identifier"))
        abuse = next(iter(_entities(entity, "abuse")), None)
        return {
            "name": _vcard_value(entity, "fn") or entity.get("handle"),
            "iana_id": iana_id,
            "abuse_email": _vcard_value(abuse, "email") if abuse else None,
        }
    return None


def _events(obj: Mapping[str, Any]) -> dict[str, str]:
    dates: dict[str, str] = {}
    for event in obj.get("events") or []:
        if not isinstance(event, dict):
            continue
        name = EVENTS.get(str(event.get("eventAction", "")).lower())
        if name and isinstance(event.get("eventDate"), str):
            dates.setdefault(name, event["eventDate"])
    return dates


def _nameservers(obj: Mapping[str, Any]) -> list[str]:
    names = [
        str(ns["ldhName"]).lower().rstrip(".")
        for ns in obj.get("nameservers") or []
        if isinstance(ns, dict) and ns.get("ldhName")
    ]
    return sorted(dict.fromkeys(names))


def parse_domain(obj: Any, url: str) -> dict[str, Any]:
    """What a lookup keeps of one RFC 9083 domain object."""
    if not isinstance(obj, dict) or obj.get("objectClassName") != "domain":
        raise RdapError(UNAVAILABLE, f"{url} did not answer an RDAP domain object")
    secure = obj.get("secureDNS")
    signed = secure.get("delegationSigned") if isinstance(secure, dict) else None
    return {
        "handle": obj.get("handle"),
        "ldh_name": obj.get("ldhName"),
        "registrar": _registrar(obj),
        **_events(obj),
        "status": [str(s) for s in obj.get("status") or [] if isinstance(s, str)],
        "nameservers": _nameservers(obj),
        "dnssec": signed if isinstance(signed, bool) else None,
    }


def registrar_link(obj: Mapping[str, Any], registry_url: str) -> str | None:
    """The registrar's RDAP URL for the domain: a ``related`` link to RDAP JSON (RFC 9083
    §4.2; registries that follow the ICANN profile publish one)."""
    scheme = urlsplit(registry_url).scheme
    for link in obj.get("links") or []:
        if not isinstance(link, dict) or link.get("rel") != "related":
            continue
        href = link.get("href")
        kind = str(link.get("type", "application/rdap+json")).lower()
        if not isinstance(href, str) or "json" not in kind:
            continue
        target = urljoin(registry_url, href)
        if target != registry_url and urlsplit(target).scheme in {"https", scheme}:
            return target
    return None


def merge(registry: dict[str, Any], registrar: dict[str, Any]) -> dict[str, Any]:
    """The registry's answer is authoritative; the registrar's fills what it left out."""
    merged = dict(registry)
    for key, value in registrar.items():
        if merged.get(key) in (None, [], ""):
            merged[key] = value
    return merged


def guarded_client(settings: Settings) -> HttpClient:
    """A client for URLs that answers (not the operator) chose: every connection checked by the
    SSRF guard of page fetches, no proxy (the guard must see the address connected to)."""
    guard = AddressGuard(GuardPolicy.from_settings(settings))
    return HttpClient(
        headers={"User-Agent": settings.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
        connect_timeout=settings.fetch_connect_timeout,
        read_timeout=settings.provider_timeout,
        deadline=settings.fetch_connect_timeout + 2 * settings.provider_timeout,
        max_bytes=MAX_ANSWER_BYTES,
        connector=lambda: PinnedConnector(guard, limit=10),
        env_proxies=False,
    )


async def lookup(
    http: HttpClient,
    domain: str,
    *,
    bootstrap_url: str,
    ttl: float,
    hop_http: HttpClient | None = None,
    cache: BootstrapCache = BOOTSTRAP,
) -> dict[str, Any]:
    """The registry's data for ``domain`` (ASCII), with the registrar's where it links one
    (fetched with ``hop_http``: :func:`guarded_client`; by default ``http``). Raises
    :class:`RdapError` when the registry gives nothing usable; a failed registrar hop is
    recorded in ``registrar_error`` instead."""
    services = await cache.services(http, bootstrap_url, ttl)
    base = registry_base(services, domain)
    if base is None:
        tld = domain.rsplit(".", 1)[-1]
        raise RdapError(UNSUPPORTED, f"no RDAP service for .{tld} in the IANA bootstrap file")
    url = urljoin(base if base.endswith("/") else base + "/", f"domain/{domain}")
    obj = await _get_json(http, url, f"the registry's RDAP server for {domain}")
    data = parse_domain(obj, url)
    data.update(registry_url=url, registrar_url=None, registrar_error=None)
    hop = registrar_link(obj, url)
    if hop is not None:
        data["registrar_url"] = hop
        try:
            answer = await _get_json(hop_http or http, hop, "the registrar's RDAP server")
            found = parse_domain(answer, hop)
        except RdapError as exc:
            data["registrar_error"] = {"code": exc.code, "message": exc.message}
        else:
            data = merge(data, found)
    return data
