"""Google Ads API Keyword Planner: ``KeywordPlanIdeaService.GenerateKeywordIdeas`` over REST.

Wire format (developers.google.com/google-ads/api, REST interface):

- an access token from the OAuth 2.0 refresh-token grant: ``POST {token_url}`` form
  ``grant_type=refresh_token&refresh_token&client_id&client_secret`` answers
  ``{"access_token", "expires_in", "token_type"}`` (an error: ``{"error",
  "error_description"}``, e.g. 400 ``invalid_grant``);
- ``POST {base}/{version}/customers/{customer_id}:generateKeywordIdeas`` with
  ``Authorization: Bearer``, ``developer-token`` and, when access goes through a manager
  account, ``login-customer-id``. Body: ``language`` (``languageConstants/1000``),
  ``geoTargetConstants`` (``["geoTargetConstants/2840"]``), ``keywordPlanNetwork``,
  ``pageSize`` and ``keywordSeed {keywords}`` or ``urlSeed {url}``. Answer: ``results[]``
  of ``{text, keywordIdeaMetrics {avgMonthlySearches, competition, competitionIndex,
  low/highTopOfPageBidMicros, averageCpcMicros, monthlySearchVolumes[{year, month,
  monthlySearches}]}}`` (int64 fields are JSON strings), ``nextPageToken``, ``totalSize``;
- errors: ``{"error": {"code", "message", "status", "details": [{"errors": [{"errorCode":
  {...}, "message"}]}]}}``. 401/403 (bad token, developer token not approved, no access to
  the customer) ``provider_auth_failed``; 429 with ``quotaError: RESOURCE_EXHAUSTED`` (the
  day's operations) ``provider_quota_exhausted``, other 429s and 5xx retried, then
  ``upstream_error``; other 4xx ``provider_rejected`` with Google's first error message.

Money comes in micros of the account's currency (not named by this call): ``cpc`` and the
bids are stored in units, ``currency`` left null.
"""

from __future__ import annotations

import asyncio
import calendar
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from seojobs.providers.base import (
    AUTH_FAILED,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
    http_client,
    malformed,
    retry_after_seconds,
)
from seojobs.providers.google_auth import oauth_error, parse_token
from seojobs.providers.keywords import Keyword, Month, Research, level, merge, retried, whole
from seojobs.settings import Settings

if TYPE_CHECKING:  # the HTTP client (aiohttp) loads at the adapter's first call
    from seojobs.fetch.http import HttpClient, Response

NAME = "google_ads"
NEEDS = (
    "google_ads_developer_token",
    "google_ads_client_id",
    "google_ads_client_secret",
    "google_ads_refresh_token",
    "google_ads_customer_id",
)
MONTHS = tuple(name.upper() for name in calendar.month_name[1:])  # JANUARY... (C locale)
# Google Ads language constants (the API's "Language codes" table) by ISO 639 code.
LANGUAGES = {
    "en": 1000, "de": 1001, "fr": 1002, "es": 1003, "it": 1004, "ja": 1005, "da": 1009,
    "nl": 1010, "fi": 1011, "ko": 1012, "no": 1013, "nb": 1013, "pt": 1014, "sv": 1015,
    "zh-cn": 1017, "zh": 1017, "zh-tw": 1018, "ar": 1019, "bg": 1020, "cs": 1021, "el": 1022,
    "hi": 1023, "hu": 1024, "id": 1025, "is": 1026, "he": 1027, "iw": 1027, "lv": 1028,
    "lt": 1029, "pl": 1030, "ru": 1031, "ro": 1032, "sk": 1033, "sl": 1034, "sr": 1035,
    "uk": 1036, "tr": 1037, "ca": 1038, "hr": 1039, "vi": 1040, "ur": 1041, "tl": 1042,
    "fil": 1042, "et": 1043, "th": 1044,
}  # fmt: skip
MICROS = 1_000_000
TOKEN_MARGIN = 60.0  # renew an access token this long before it expires


def language_constant(code: str) -> int | None:
    return LANGUAGES.get(code.lower())


def customer_digits(value: str) -> str:
    return value.replace("-", "").strip()


class GoogleAdsKeywords:
    name = NAME

    def __init__(
        self,
        settings: Settings,
        *,
        client: HttpClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        missing = [n for n in NEEDS if not getattr(settings, n)]
        if missing:
            raise ProviderNotConfigured(self.name, missing)
        self._settings = settings
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        self._sleep = sleep
        self._clock = clock
        self._token: str | None = None
        self._renew_at = 0.0
        customer = customer_digits(settings.google_ads_customer_id or "")
        base = settings.google_ads_base_url.rstrip("/")
        self._endpoint = (
            f"{base}/{settings.google_ads_api_version}/customers/{customer}:generateKeywordIdeas"
        )

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def verify(self) -> str:
        """The credential check of ``seojobs providers``: the refresh token is exchanged
        (free; no API operation is spent)."""
        await retried("Google token endpoint", self._access_token, self._settings, self._sleep)
        return "the token endpoint granted an access token"

    async def research(self, request: Research) -> list[Keyword]:
        if not isinstance(request.location, int):
            raise ProviderError(
                REJECTED,
                f"google_ads takes a location code (a geo target id such as 2840), "
                f"not a name ({request.location!r})",
            )
        language = language_constant(request.language)
        if language is None:
            raise ProviderError(
                REJECTED,
                f"google_ads has no language {request.language!r} "
                f"(it takes {', '.join(sorted(LANGUAGES))})",
            )
        body: dict[str, Any] = {
            "language": f"languageConstants/{language}",
            "geoTargetConstants": [f"geoTargetConstants/{request.location}"],
            "keywordPlanNetwork": "GOOGLE_SEARCH",
            "includeAdultKeywords": False,
            "pageSize": request.limit,
        }
        if request.url is not None:
            body["urlSeed"] = {"url": request.url}
        else:
            body["keywordSeed"] = {"keywords": list(request.seeds)}
        answer = await retried(NAME, lambda: self._attempt(body), self._settings, self._sleep)
        return merge(_results(answer), request)

    async def _attempt(self, body: dict[str, Any]) -> Any:
        headers = {
            "Authorization": f"Bearer {await self._access_token()}",
            "developer-token": self._settings.google_ads_developer_token or "",
        }
        if self._settings.google_ads_login_customer_id:
            login = customer_digits(self._settings.google_ads_login_customer_id)
            headers["login-customer-id"] = login
        response = await self._client.post(self._endpoint, json=body, headers=headers)
        error = _api_error(response)
        if error is not None:
            raise error
        try:
            return response.json()
        except ValueError:
            raise malformed(NAME, "the body is not JSON") from None

    async def _access_token(self) -> str:
        if self._token is not None and self._clock() < self._renew_at:
            return self._token
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self._settings.google_ads_refresh_token or "",
            "client_id": self._settings.google_ads_client_id or "",
            "client_secret": self._settings.google_ads_client_secret or "",
        }
        response = await self._client.post(self._settings.google_ads_token_url, form=form)
        if response.status == 429 or response.status >= 500:
            raise ProviderError(
                UPSTREAM_ERROR,
                f"Google token endpoint failed with {response.status}",
                retryable=True,
                retry_after=retry_after_seconds(response),
                status=response.status,
            )
        if response.status >= 400:
            raise ProviderError(
                AUTH_FAILED,
                f"Google refused the OAuth refresh token ({response.status}): "
                f"{oauth_error(response)}; check SEOJOBS_GOOGLE_ADS_CLIENT_ID, _CLIENT_SECRET "
                "and _REFRESH_TOKEN",
                status=response.status,
                fatal=True,
            )
        token, lifetime = parse_token(response)
        self._token = token
        self._renew_at = self._clock() + max(0.0, lifetime - TOKEN_MARGIN)
        return token


def _google_errors(response: Response) -> tuple[str, list[dict[str, Any]]]:
    """(status and message, the GoogleAdsFailure errors) of an error answer."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300], []
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return response.text[:300], []
    errors = [
        e
        for detail in error.get("details") or []
        if isinstance(detail, dict)
        for e in detail.get("errors") or []
        if isinstance(e, dict)
    ]
    first = next((str(e["message"]) for e in errors if e.get("message")), None)
    text = f"{error.get('status', '')}: {first or error.get('message', '')}".strip(": ")
    return text, errors


def _api_error(response: Response) -> ProviderError | None:
    status = response.status
    if status < 400:
        return None
    text, errors = _google_errors(response)
    message = f"google_ads answered {status}: {text}"
    codes: list[dict[str, Any]] = [
        e["errorCode"] for e in errors if isinstance(e.get("errorCode"), dict)
    ]
    if status in (401, 403):
        return ProviderError(AUTH_FAILED, message, status=status, fatal=True)
    if status == 429 and any(c.get("quotaError") == "RESOURCE_EXHAUSTED" for c in codes):
        return ProviderError(QUOTA_EXHAUSTED, message, status=status, fatal=True)
    if status == 429 or status >= 500:
        retry = retry_after_seconds(response)
        return ProviderError(
            UPSTREAM_ERROR, message, retryable=True, retry_after=retry, status=status
        )
    return ProviderError(REJECTED, message, status=status, fatal=True)


def _micros(value: object) -> float | None:
    micros = whole(value)
    return micros / MICROS if micros is not None else None


def _months(value: object) -> tuple[Month, ...]:
    found = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, dict) and entry.get("month") in MONTHS:
            year = whole(entry.get("year"))
            if year is not None:
                month = MONTHS.index(entry["month"]) + 1
                found.append(Month(year, month, whole(entry.get("monthlySearches"))))
    return tuple(found)


def _results(answer: Any) -> list[Keyword]:
    if not isinstance(answer, dict):
        raise malformed(NAME, "the body is not a JSON object")
    results = answer.get("results") or []  # left out when there are no ideas
    if not isinstance(results, list):
        raise malformed(NAME, "results is not a list")
    found = []
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("text"), str):
            raise malformed(NAME, "a result has no text")
        metrics = result.get("keywordIdeaMetrics") or {}
        if not isinstance(metrics, dict):
            raise malformed(NAME, "keywordIdeaMetrics is not a JSON object")
        found.append(
            Keyword(
                keyword=result["text"],
                search_volume=whole(metrics.get("avgMonthlySearches")),
                cpc=_micros(metrics.get("averageCpcMicros")),
                competition=whole(metrics.get("competitionIndex")),
                competition_level=level(metrics.get("competition")),
                low_top_of_page_bid=_micros(metrics.get("lowTopOfPageBidMicros")),
                high_top_of_page_bid=_micros(metrics.get("highTopOfPageBidMicros")),
                monthly_searches=_months(metrics.get("monthlySearchVolumes")),
            )
        )
    return found
