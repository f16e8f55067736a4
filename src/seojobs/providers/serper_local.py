"""Serper.dev Google Maps for local rank checks.

Wire format (serper.dev "Maps" endpoint): ``POST {base}/maps`` with ``X-API-KEY`` and JSON
``{"q", "hl", "ll": "@latitude,longitude,zoomz"}`` (or ``"location"``, a place name); the
answer holds ``places[]`` with ``position``, ``title``, ``address``, ``rating``,
``ratingCount``, ``type``, ``types``, ``website``, ``cid`` and ``placeId``. Errors are
``{"message", "statusCode"}``: 401/403 a refused key, 400 ``Not enough credits`` (both end the
job), 429/5xx retried then ``upstream_error``, another 4xx ``provider_rejected`` for this
search. Error texts are cleared of the key.
"""

from __future__ import annotations

from typing import Any

from seojobs.fetch.http import Response
from seojobs.providers.base import (
    QUOTA_EXHAUSTED,
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

NAME = "serper"


def request_body(query: LocalQuery) -> dict[str, Any]:
    body: dict[str, Any] = {"q": query.keyword, "hl": query.language}
    if query.ll is not None:
        return body | {"ll": query.ll}
    return body | {"location": query.location}


def _place(entry: Any, seen: int) -> Place:
    if not isinstance(entry, dict) or text(entry.get("title")) is None:
        raise malformed(NAME, "a place has no title")
    position = entry.get("position")
    if not isinstance(position, int) or isinstance(position, bool) or position < 1:
        position = seen
    return Place(
        position,
        text(entry.get("title")) or "",
        place_id=identifier(entry.get("placeId")),
        cid=identifier(entry.get("cid")),
        website=text(entry.get("website")),
        rating=number(entry.get("rating")),
        reviews=count(entry.get("ratingCount")),
        categories=categories(entry.get("type"), entry.get("types"), entry.get("category")),
        address=text(entry.get("address")),
    )


def parse(body: Any) -> LocalSerp:
    if not isinstance(body, dict):
        raise malformed(NAME, "the body is not a JSON object")
    if "places" not in body and "searchParameters" not in body:
        raise malformed(NAME, "neither places nor searchParameters")
    found = body.get("places", [])  # left out when nothing was found
    if not isinstance(found, list):
        raise malformed(NAME, "places is not a list")
    places = [_place(entry, n) for n, entry in enumerate(found[:MAX_PLACES], start=1)]
    detail = {"credits": body["credits"]} if isinstance(body.get("credits"), int) else {}
    return LocalSerp(tuple(places), detail)


class SerperLocal(KeyedClient):
    name = NAME
    key_setting = "serper_key"
    base_setting = "serper_base_url"
    path = "/maps"

    async def local(self, query: LocalQuery) -> LocalSerp:
        body = request_body(query)
        return await retried(NAME, lambda: self._attempt(body), self._settings, self._sleep)

    async def _attempt(self, body: dict[str, Any]) -> LocalSerp:
        response = await self._client.post(
            self._endpoint, json=body, headers={"X-API-KEY": self._key}
        )
        if response.status == 400 and "credit" in response.text.lower():
            message = f"serper has no credits left: {response.text[:200]}"
            raise ProviderError(QUOTA_EXHAUSTED, message, status=400, fatal=True)
        error = error_for_status(response, NAME)
        if error is not None:
            raise error
        return parse(_json(response))


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise malformed(NAME, "the body is not JSON") from None
