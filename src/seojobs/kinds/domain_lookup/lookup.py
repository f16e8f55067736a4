"""The handler: RDAP, DNS and the TLS certificate of one domain, each part on its own.

A part that fails is recorded with its code and message (``errors``) and the others are kept:
a registry that is down for an hour should not hide the DNS and certificate a user came for,
and the error says which part to look up again. Only a lookup that learned nothing fails
(``domain_not_found`` when a part said the name does not exist, else the first part's code),
so that a failed job always means "nothing to read". Failures are never retried automatically.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import JobContext, JobFailed
from seojobs.fetch.errors import SSRF_REFUSED, FetchError
from seojobs.fetch.guard import AddressGuard, GuardPolicy
from seojobs.fetch.resolver import DnsResolver
from seojobs.fetch.tls import peer_tls
from seojobs.kinds.domain_lookup import records
from seojobs.kinds.domain_lookup.certificate import describe
from seojobs.kinds.domain_lookup.params import DomainLookupParams, unicode_domain
from seojobs.logfmt import internal_message
from seojobs.providers import rdap
from seojobs.providers.base import http_client

TLS_REFUSED = "tls_refused"
TLS_UNAVAILABLE = "tls_unavailable"
PARTS = ("rdap", "dns", "tls")
log = logging.getLogger("seojobs.kinds.domain_lookup")


def _failed(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


async def _rdap(ctx: JobContext[DomainLookupParams], domain: str) -> dict[str, Any]:
    settings = ctx.kind_settings
    async with http_client(ctx.settings) as http, rdap.guarded_client(ctx.settings) as hop:
        try:
            found = await rdap.lookup(
                http,
                domain,
                bootstrap_url=settings.rdap_bootstrap_url,
                ttl=settings.rdap_bootstrap_ttl,
                hop_http=hop,
            )
        except rdap.RdapError as exc:
            return _failed(exc.code, exc.message)
    return {"error": None, **found}


async def _dns(resolver: DnsResolver, domain: str) -> dict[str, Any]:
    try:
        found = await records.records(resolver, domain)
    except records.DnsError as exc:
        return _failed(exc.code, exc.message)
    return {"error": None, **found}


async def _tls(
    ctx: JobContext[DomainLookupParams], resolver: DnsResolver, domain: str
) -> dict[str, Any]:
    settings = ctx.kind_settings
    guard = AddressGuard(
        GuardPolicy.from_settings(ctx.settings),
        resolver.addresses,
        lookup_timeout=settings.tls_timeout,
    )
    try:
        peer = await peer_tls(
            domain,
            settings.tls_port,
            guard=guard,
            seconds=settings.tls_timeout,
            cafile=settings.tls_ca_file,
        )
    except FetchError as exc:
        code = TLS_REFUSED if exc.kind == SSRF_REFUSED else TLS_UNAVAILABLE
        return _failed(code, exc.message)
    try:
        return {"error": None, **describe(peer, domain, datetime.now(UTC))}
    except ValueError as exc:  # cryptography could not parse what the server sent
        return _failed(TLS_UNAVAILABLE, f"the certificate {domain} sent is unreadable: {exc}")


def _verdict(parts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"part": name, **part["error"]} for name, part in parts.items() if part["error"]]


async def _bounded(part: Awaitable[dict[str, Any]], seconds: float, code: str) -> dict[str, Any]:
    """A part that has not finished in ``seconds`` fails on its own (its code), so that a slow
    server costs that part, never the whole lookup (the kind's timeout fails the job). So does
    a part that raised what nothing expected (a hostile answer finding a parser's limit): its
    code and a plain message naming the logged error's id."""
    try:
        async with asyncio.timeout(seconds):
            return await part
    except TimeoutError:
        return _failed(code, f"did not finish within {seconds:g} s")
    except Exception:
        return _failed(code, internal_message(log, f"the lookup's {code} part", failed="it"))


async def run(ctx: JobContext[DomainLookupParams]) -> None:
    domain = ctx.params.domain
    settings = ctx.kind_settings
    resolver = DnsResolver(settings.dns_nameservers, settings.dns_timeout)
    limit = settings.part_timeout
    found = await asyncio.gather(
        _bounded(_rdap(ctx, domain), limit, rdap.UNAVAILABLE),
        _bounded(_dns(resolver, domain), limit, records.UNAVAILABLE),
        _bounded(_tls(ctx, resolver, domain), limit, TLS_UNAVAILABLE),
    )
    parts = dict(zip(PARTS, found, strict=True))
    errors = _verdict(parts)
    if len(errors) == len(PARTS):
        codes = [e["code"] for e in errors]
        code = records.NOT_FOUND if records.NOT_FOUND in codes else codes[0]
        detail = "; ".join(f"{e['part']}: {e['message']}" for e in errors)
        raise JobFailed(code, f"nothing could be learned about {domain}: {detail}")
    data = {"domain": domain, "unicode_domain": unicode_domain(domain), **parts, "errors": errors}
    ctx.result = {"domain": domain, "errors": errors}
    await ctx.collect(domain, data)
