"""Search Console URL Inspection: Google's own word on whether a URL of a verified site is indexed.

Wire format (reference/providers.md §4): ``POST {base}/v1/urlInspection/index:inspect`` with
``{"inspectionUrl", "siteUrl", "languageCode"?}`` and an OAuth bearer token of a service account
(scope ``webmasters.readonly``) that is a user of the Search Console property.

Which property (``siteUrl``)? No setting names one, so unless the caller passes ``site_urls``
the checker tries, in order: the URL-prefix property of the URL's origin
(``https://example.com/``), then Domain properties ``sc-domain:<host>`` and its parent domains
(``sc-domain:example.com`` for ``www.example.com``). It moves on only when Google answers
403/404 for a property (not ours, or the URL is outside it) and remembers, per origin, the
property that worked or that none did, so a job of many URLs of one site costs one probe.

Mapping of ``inspectionResult.indexStatusResult``:

- verdict ``PASS`` → indexed; ``FAIL`` or ``NEUTRAL`` (excluded) → not_indexed;
- any other verdict (``VERDICT_UNSPECIFIED``, the retired ``PARTIAL``, none) → coverageState:
  text starting "Submitted and indexed" or "Indexed" ("Indexed, not submitted in sitemap")
  → indexed; anything else ("Crawled - currently not indexed", "Discovered - currently not
  indexed", "URL is unknown to Google", "Page with redirect", ...) → not_indexed, as every
  other coverage state is an exclusion or an error;
- no usable verdict nor coverageState → failed ``malformed_response``.

Detail: verdict, coverageState, robotsTxtState, indexingState, pageFetchState, lastCrawlTime,
googleCanonical, userCanonical, crawledAs (None when absent), site_url, inspection_link.

Errors: 401 → the token is dropped and fetched again once, then ``provider_auth_failed``
(fatal); 403 with ``accessNotConfigured``/``SERVICE_DISABLED``/insufficient scope → fatal
``provider_auth_failed`` (the project, not the property, is wrong); 403/404 for every property →
result ``failed`` / ``provider_rejected``; 429 whose message names a daily limit (2,000 per
property per day) → raise ``provider_quota_exhausted`` (not fatal: other properties have their
own quota); other 429 (600/minute) and 5xx → retried, then raise ``upstream_error``.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    CheckResult,
    CheckStatus,
    ProviderError,
    ProviderNotConfigured,
    http_client,
    retry_after_seconds,
    with_retries,
)
from seojobs.settings import Settings

SCOPE = "https://www.googleapis.com/auth/webmasters.readonly"
DETAIL_FIELDS = (
    "verdict",
    "coverageState",
    "robotsTxtState",
    "indexingState",
    "pageFetchState",
    "lastCrawlTime",
    "googleCanonical",
    "userCanonical",
    "crawledAs",
)
# 403 reasons that no other property can fix: the Cloud project or the token is wrong.
_FATAL_403 = frozenset(
    {
        "accessNotConfigured",
        "SERVICE_DISABLED",
        "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
        "insufficientPermissions",
    }
)
_INDEXED_PREFIXES = ("submitted and indexed", "indexed")


class TokenSource(Protocol):
    """Bearer tokens (seojobs.providers.google_auth.ServiceAccountTokens fits)."""

    async def token(self, client: HttpClient) -> str: ...

    def invalidate(self, token: str) -> None: ...


@dataclass(frozen=True)
class _Refused:
    """Google refused this property for this URL (403/404/400): maybe try another property."""

    status: int
    message: str
    try_next: bool


class UrlInspectionChecker:
    name = "url_inspection"
    engines = frozenset({"google"})

    def __init__(
        self,
        settings: Settings,
        *,
        tokens: TokenSource | None = None,
        client: HttpClient | None = None,
        site_urls: Sequence[str] | None = None,
        language_code: str | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``tokens``: default, a service account from SEOJOBS_GOOGLE_CREDENTIALS_FILE.

        ``site_urls``: the properties to try (those covering the URL, in order) instead of the
        derived ones. ``client``: a shared client (the caller closes it); else one of its own
        (``aclose``). The key file is read at the first check, so a bad file is a fatal
        ``provider_auth_failed`` of that check rather than an error while building the adapter.
        """
        if tokens is None and not settings.google_credentials_file:
            raise ProviderNotConfigured(self.name, ["google_credentials_file"])
        self._settings = settings
        self._tokens = tokens
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        self._site_urls = list(site_urls) if site_urls else None
        self._language_code = language_code
        self._sleep = sleep
        self._property: dict[str, str | None] = {}  # origin -> property that worked, or None

    async def check(self, url: str, engine: str) -> CheckResult:
        if engine not in self.engines:
            raise ProviderError(
                REJECTED, f"url_inspection checks google only, not {engine!r}", fatal=True
            )
        tokens = self._token_source()
        try:
            origin, candidates = self._candidates(url)
        except ValueError as exc:
            return CheckResult(url, "failed", self.name, REJECTED, str(exc))
        known = self._property.get(origin, "") if origin else ""
        if known is None:
            message = "no Search Console property of this service account covers this URL"
            return CheckResult(url, "failed", self.name, REJECTED, message, {"cached": True})
        try:
            return await self._inspect(tokens, url, origin, [known] if known else candidates)
        except UnreadableBody as exc:  # undecodable, or over the size cap
            return self._malformed(url, None, f"unreadable body ({exc.message})")

    async def aclose(self) -> None:
        """Close the HTTP client unless the caller passed its own."""
        if self._own_client:
            await self._client.aclose()

    async def verify(self) -> str:
        from seojobs.providers.google_auth import verify_tokens

        return await verify_tokens(self._token_source(), self._client)

    def _token_source(self) -> TokenSource:
        if self._tokens is None:
            path = self._settings.google_credentials_file
            assert path  # checked in __init__
            from seojobs.providers import google_auth  # only when no token source is given

            self._tokens = google_auth.ServiceAccountTokens(
                google_auth.load_service_account(path),
                [SCOPE],
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
            )
        return self._tokens

    def _candidates(self, url: str) -> tuple[str | None, list[str]]:
        """The origin (the memory key; None for explicit site_urls) and properties to try."""
        parts = urlsplit(url.strip())
        scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
        if scheme not in ("http", "https") or not host:
            raise ValueError(f"not an absolute http(s) URL: {url!r}")
        port = parts.port
        netloc = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
        if port is not None and port != {"http": 80, "https": 443}[scheme]:
            netloc = f"{netloc}:{port}"
        origin = f"{scheme}://{netloc}/"
        if self._site_urls is not None:
            # Explicit properties can be narrower than an origin: choose by URL, remember none.
            target = origin + url.strip().split("/", 3)[-1] if parts.path else origin
            return None, [s for s in self._site_urls if _covers(s, target, host)]
        return origin, [origin, *(f"sc-domain:{d}" for d in _domains(host))]

    async def _inspect(
        self,
        tokens: TokenSource,
        url: str,
        origin: str | None,
        candidates: list[str],
    ) -> CheckResult:
        tried: list[str] = []
        refused = _Refused(0, "no configured Search Console property covers this URL", False)
        for site in candidates:
            outcome = await with_retries(
                functools.partial(self._call, tokens, url, site),
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
                sleep=self._sleep,
            )
            if isinstance(outcome, CheckResult):
                if origin:
                    self._property[origin] = site
                return outcome
            tried.append(site)
            refused = outcome
            if not outcome.try_next:
                break
        # A remembered property that now refuses is forgotten (access can be revoked); when
        # every derived property refused, the next URLs of this origin fail without a call.
        had_property = origin is not None and self._property.pop(origin, None) is not None
        if origin and refused.try_next and not had_property:
            self._property[origin] = None
        detail = {"site_urls_tried": tried, "http_status": refused.status}
        return CheckResult(url, "failed", self.name, REJECTED, refused.message, detail)

    async def _call(self, tokens: TokenSource, url: str, site: str) -> CheckResult | _Refused:
        body: dict[str, str] = {"inspectionUrl": url, "siteUrl": site}
        if self._language_code:
            body["languageCode"] = self._language_code
        endpoint = self._settings.url_inspection_base_url.rstrip("/")
        endpoint += "/v1/urlInspection/index:inspect"
        token = await tokens.token(self._client)
        response = await self._client.post(
            endpoint, json=body, headers={"Authorization": f"Bearer {token}"}
        )
        if response.status == 401:
            # A cached token can die early (revoked key, clock skew): one fresh token, then fatal.
            tokens.invalidate(token)
            token = await tokens.token(self._client)
            response = await self._client.post(
                endpoint, json=body, headers={"Authorization": f"Bearer {token}"}
            )
        if response.status >= 400:
            return _refusal(response)
        return self._result(url, site, response)

    def _result(self, url: str, site: str, response: Response) -> CheckResult:
        try:
            body = response.json()
        except ValueError:
            return self._malformed(url, site, "the body is not JSON")
        inspection = body.get("inspectionResult") if isinstance(body, dict) else None
        if not isinstance(inspection, dict):
            return self._malformed(url, site, "no inspectionResult object")
        index = inspection.get("indexStatusResult")
        if not isinstance(index, dict):
            return self._malformed(url, site, "no indexStatusResult object")
        detail: dict[str, Any] = {k: index.get(k) for k in DETAIL_FIELDS}
        detail["site_url"] = site
        detail["inspection_link"] = inspection.get("inspectionResultLink")
        status = _status(index.get("verdict"), index.get("coverageState"))
        if status is None:
            what = f"verdict {detail['verdict']!r} with coverageState {detail['coverageState']!r}"
            return self._malformed(url, site, what, detail)
        return CheckResult(url, status, self.name, detail=detail)

    def _malformed(
        self, url: str, site: str | None, what: str, detail: dict[str, Any] | None = None
    ) -> CheckResult:
        message = f"url_inspection answered in an unexpected shape: {what}"
        return CheckResult(
            url, "failed", self.name, MALFORMED_RESPONSE, message, detail or {"site_url": site}
        )


def _status(verdict: object, coverage: object) -> CheckStatus | None:
    if verdict == "PASS":
        return "indexed"
    if verdict in ("FAIL", "NEUTRAL"):
        return "not_indexed"
    # VERDICT_UNSPECIFIED, the retired PARTIAL, or nothing: fall back to the coverage text.
    if not isinstance(coverage, str) or not coverage.strip():
        return None
    text = coverage.strip().lower()
    if "not indexed" in text or "unknown to google" in text:
        return "not_indexed"
    return "indexed" if text.startswith(_INDEXED_PREFIXES) else "not_indexed"


def _google_error(response: Response) -> tuple[str, set[str]]:
    """The message and every status/reason named in Google's error envelope."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text[:300], set()
    if not isinstance(error, dict):
        return response.text[:300], set()
    reasons = {error.get("status")}
    for key in ("errors", "details"):
        entries = error.get(key)
        if isinstance(entries, list):
            reasons.update(e.get("reason") for e in entries if isinstance(e, dict))
    message = error.get("message")
    text = message if isinstance(message, str) else response.text[:300]
    return text, {r for r in reasons if isinstance(r, str)}


def _refusal(response: Response) -> _Refused:
    """Map an error answer: raise for whole-call failures, else say whether to try on."""
    status = response.status
    message, reasons = _google_error(response)
    text = f"url_inspection {status}: {message}"
    if status == 401 or (status == 403 and reasons & _FATAL_403):
        raise ProviderError(AUTH_FAILED, text, status=status, fatal=True)
    if status == 429:
        if "per day" in message.lower():
            raise ProviderError(QUOTA_EXHAUSTED, text, status=status)
        raise ProviderError(
            UPSTREAM_ERROR,
            text,
            retryable=True,
            retry_after=retry_after_seconds(response),
            status=status,
        )
    if status >= 500:
        raise ProviderError(
            UPSTREAM_ERROR,
            text,
            retryable=True,
            retry_after=retry_after_seconds(response),
            status=status,
        )
    return _Refused(status, text, try_next=status in (403, 404))


def _domains(host: str) -> list[str]:
    """``a.b.example.com`` → itself and its parents down to two labels; none for an IP."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        labels = host.split(".")
        return [".".join(labels[i:]) for i in range(max(1, len(labels) - 1))]
    return []


def _covers(site: str, target: str, host: str) -> bool:
    """Is ``target`` (the URL with a normalised origin) inside the property ``site``?"""
    if site.startswith("sc-domain:"):
        domain = site.removeprefix("sc-domain:").lower()
        return host == domain or host.endswith("." + domain)
    scheme, _, rest = site.partition("://")
    netloc, _, path = rest.partition("/")
    return target.startswith(f"{scheme.lower()}://{netloc.lower()}/{path}")
