"""SerpApi for local rank checks: Google Maps (``engine=google_maps``) and the local pack of a
Google web search (``engine=google``).

Wire format (serpapi.com "Google Maps API", "Google Maps Local Results", "Google Local Pack"):
``GET {base}/search.json`` with ``api_key``, ``q``, ``hl`` and, for Maps, ``type=search`` and
``ll=@latitude,longitude,zoomz`` or ``location`` with ``z`` (the zoom); for the local pack
``location``. Maps answers ``local_results[]`` (``position``, ``title``, ``place_id``,
``data_cid``, ``rating``, ``reviews``, ``type``, ``types``, ``address``, ``website``), or
``place_results`` when the query names one place; the local pack answers
``local_results.places[]`` (``place_id`` there is the CID; the website under
``links.website``). Errors are ``{"error": "..."}``: 401 invalid key, 403 account not
permitted (both end the job), 429 throughput (retried) or "Your account has run out of
searches." (ends the job), 400 a refused parameter (this search), 5xx retried. A 200 whose
``error`` says Google "hasn't returned any results" is an empty list, not a failure.

The key travels in the query string: every error text is cleared of it.
"""

from __future__ import annotations

import re
from typing import Any

from seojobs.fetch.http import Response
from seojobs.providers.base import (
    QUOTA_EXHAUSTED,
    UPSTREAM_ERROR,
    KeyedClient,
    ProviderError,
    error_for_status,
    malformed,
)
from seojobs.providers.keywords import retried
from seojobs.providers.local_ranks import (
    MAX_PLACES,
    LocalQuery,
    LocalSerp,
    Place,
    categories,
    count,
    identifier,
    number,
    text,
)

NAME = "serpapi"
_NO_RESULTS = re.compile(r"hasn't returned any results", re.IGNORECASE)
_OUT_OF_SEARCHES = re.compile(r"run out of searches|searches .*exhausted", re.IGNORECASE)


def request_params(query: LocalQuery) -> dict[str, str]:
    params = {"q": query.keyword, "hl": query.language}
    if query.surface == "local_pack":
        return {"engine": "google", **params, "location": query.location or ""}
    params = {"engine": "google_maps", "type": "search", **params}
    if query.ll is not None:
        return params | {"ll": query.ll}
    return params | {"location": query.location or "", "z": str(query.zoom)}


def _place(entry: Any, seen: int, surface: str) -> Place:
    if not isinstance(entry, dict) or text(entry.get("title")) is None:
        raise malformed(NAME, "a local result has no title")
    position = entry.get("position")
    if not isinstance(position, int) or isinstance(position, bool) or position < 1:
        position = seen
    found = entry.get("links")
    links: dict[str, Any] = found if isinstance(found, dict) else {}
    place_id = identifier(entry.get("place_id"))
    cid = identifier(entry.get("data_cid"))
    if surface == "local_pack" and place_id and place_id.isdigit():
        cid = place_id  # the local pack's place_id is the CID
    return Place(
        position,
        text(entry.get("title")) or "",
        place_id=place_id,
        cid=cid,
        website=text(entry.get("website")) or text(links.get("website")),
        rating=number(entry.get("rating")),
        reviews=count(entry.get("reviews")),
        categories=categories(entry.get("type"), entry.get("types")),
        address=text(entry.get("address")),
    )


def parse(body: Any, surface: str) -> LocalSerp:
    """A SerpApi answer as listings; ProviderError when it is an error or not of its shape."""
    if not isinstance(body, dict):
        raise malformed(NAME, "the body is not a JSON object")
    metadata = body.get("search_metadata")
    detail = {}
    if isinstance(metadata, dict) and isinstance(metadata.get("id"), str):
        detail["search_id"] = metadata["id"][:100]
    error = body.get("error")
    if isinstance(error, str) and _NO_RESULTS.search(error):
        return LocalSerp((), detail)
    if error is not None:
        raise ProviderError(UPSTREAM_ERROR, f"serpapi: {str(error)[:300]}")
    found = body.get("local_results")
    if surface == "local_pack" and isinstance(found, dict):
        found = found.get("places")
    if found is None and surface == "maps" and isinstance(body.get("place_results"), dict):
        found = [{"position": 1, **body["place_results"]}]  # the query named one place
    if found is None:
        found = []  # no local results on the page
    if not isinstance(found, list):
        raise malformed(NAME, "local_results is not a list")
    places = [_place(entry, n, surface) for n, entry in enumerate(found[:MAX_PLACES], start=1)]
    return LocalSerp(tuple(places), detail)


class SerpApiLocal(KeyedClient):
    name = NAME
    key_setting = "serpapi_key"
    base_setting = "serpapi_base_url"
    path = "/search.json"

    async def local(self, query: LocalQuery) -> LocalSerp:
        params = request_params(query) | {"api_key": self._key}
        return await retried(
            NAME, lambda: self._attempt(params, query.surface), self._settings, self._sleep
        )

    async def _attempt(self, params: dict[str, str], surface: str) -> LocalSerp:
        response = await self._client.get(self._endpoint, params=params)
        body = _json(response)
        message = body.get("error") if isinstance(body, dict) else None
        if isinstance(message, str) and _OUT_OF_SEARCHES.search(message):
            raise ProviderError(
                QUOTA_EXHAUSTED, f"serpapi: {message[:300]}", status=response.status, fatal=True
            )
        error = error_for_status(response, NAME)
        if error is not None:
            raise error  # 401/403 (fatal), 429/5xx (retried), another 4xx (this search)
        if body is None:
            raise malformed(NAME, "the body is not JSON")
        return parse(body, surface)


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:  # also UnicodeDecodeError
        return None
