"""Fake Search Console URL Inspection API, and a token source for tests.

``POST /v1/urlInspection/index:inspect`` with a bearer token; it knows which properties the
service account may read (``owned``) and an ``indexStatusResult`` per URL (``pages``; unknown
URLs answer NEUTRAL / "URL is unknown to Google"). Errors use Google's envelope: 401
UNAUTHENTICATED, 403 PERMISSION_DENIED ("You do not own this site, or the inspected URL is not
part of this property."), 400 INVALID_ARGUMENT; 429 RESOURCE_EXHAUSTED is scripted with
:func:`quota_reply`.

Tokens: the fixed ``tokens`` set, and, when an ``oauth`` fake token endpoint
(``tests.fakes.google.FakeTokenEndpoint``) is given, its ``/token`` route on the same app and
every live token it issued — so the real service-account flow can be tested end to end.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request, Response
from fastapi.responses import JSONResponse

from seojobs.fetch.http import HttpClient
from tests.fakes.google import FakeTokenEndpoint
from tests.fakes.serp import Reply, ScriptedFake

NOT_OWNED = "You do not own this site, or the inspected URL is not part of this property."


def google_error(code: int, status: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, **extra}}


def quota_reply(per: str = "day") -> Reply:
    """The 429 Google sends when the property's per-day or per-minute quota is spent."""
    message = (
        "Quota exceeded for quota metric 'Inspection requests' and limit "
        f"'Inspection requests per {per} per site' of service 'searchconsole.googleapis.com'."
    )
    return Reply(429, google_error(429, "RESOURCE_EXHAUSTED", message))


class FakeUrlInspection(ScriptedFake):
    def __init__(
        self, tokens: set[str] | None = None, oauth: FakeTokenEndpoint | None = None
    ) -> None:
        super().__init__()
        self.tokens = tokens if tokens is not None else {"good-token"}
        self.oauth = oauth
        if oauth is not None:
            oauth.add_routes(self.app)
        self.owned: set[str] = set()  # "https://example.com/" or "sc-domain:example.com"
        self.pages: dict[str, dict[str, Any]] = {}
        self.app.add_api_route("/v1/urlInspection/index:inspect", self._inspect, methods=["POST"])

    def set_page(self, url: str, verdict: str, coverage: str | None, **fields: Any) -> None:
        page: dict[str, Any] = {
            "verdict": verdict,
            "robotsTxtState": "ALLOWED",
            "indexingState": "INDEXING_ALLOWED",
            "pageFetchState": "SUCCESSFUL",
            "lastCrawlTime": "2024-05-01T10:00:00Z",
            "crawledAs": "MOBILE",
            "userCanonical": url,
            "sitemap": [],
            "referringUrls": [],
        }
        if coverage is not None:
            page["coverageState"] = coverage
        if verdict == "PASS":
            page["googleCanonical"] = url
        page.update(fields)
        self.pages[url] = page

    async def _inspect(self, request: Request) -> Response:
        recorded, scripted = await self._begin(request)
        if scripted is not None:
            return scripted
        if not self._authorized(request.headers.get("authorization", "")):
            return JSONResponse(
                google_error(
                    401,
                    "UNAUTHENTICATED",
                    "Request had invalid authentication credentials. "
                    "Expected OAuth 2 access token, login cookie or other valid authentication "
                    "credential.",
                ),
                status_code=401,
            )
        body = recorded.body if isinstance(recorded.body, dict) else {}
        url, site = body.get("inspectionUrl"), body.get("siteUrl")
        if not isinstance(url, str) or not isinstance(site, str):
            message = "Invalid value at 'inspection_url' or 'site_url'"
            return JSONResponse(google_error(400, "INVALID_ARGUMENT", message), status_code=400)
        if site not in self.owned or not _inside(url, site):
            return JSONResponse(google_error(403, "PERMISSION_DENIED", NOT_OWNED), status_code=403)
        page = self.pages.get(url) or {
            "verdict": "NEUTRAL",
            "coverageState": "URL is unknown to Google",
            "robotsTxtState": "ROBOTS_TXT_STATE_UNSPECIFIED",
            "indexingState": "INDEXING_STATE_UNSPECIFIED",
            "pageFetchState": "PAGE_FETCH_STATE_UNSPECIFIED",
        }
        return JSONResponse(
            {
                "inspectionResult": {
                    "inspectionResultLink": "https://search.google.com/search-console/inspect"
                    f"?resource_id={site}&id=abc",
                    "indexStatusResult": page,
                }
            }
        )

    def _authorized(self, header: str) -> bool:
        if self.oauth is not None and self.oauth.authorized(header):
            return True
        scheme, _, token = header.partition(" ")
        return scheme == "Bearer" and token in self.tokens


def _inside(url: str, site: str) -> bool:
    if site.startswith("sc-domain:"):
        domain = site.removeprefix("sc-domain:")
        host = httpx.URL(url).host
        return host == domain or host.endswith("." + domain)
    parsed = httpx.URL(url)  # scheme and host are case-insensitive, the path is not
    return str(parsed.copy_with(fragment=None)).startswith(site)


class StaticTokens:
    """A token source handing out ``tokens`` in turn (the last one repeats); records calls."""

    def __init__(self, *tokens: str) -> None:
        self._tokens = list(tokens) or ["good-token"]
        self.issued: list[str] = []
        self.invalidated: list[str] = []

    async def token(self, client: HttpClient) -> str:
        token = self._tokens[min(len(self.issued), len(self._tokens) - 1)]
        self.issued.append(token)
        return token

    def invalidate(self, token: str) -> None:
        self.invalidated.append(token)
