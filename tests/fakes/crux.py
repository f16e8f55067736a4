"""A fake CrUX API speaking its documented wire format (developer.chrome.com/docs/crux/api).

``POST /v1/records:queryRecord?key=KEY`` with ``{"url"|"origin", "formFactor", "metrics"}``
answers ``{"record": {"key", "metrics": {name: {"histogram": [...], "percentiles":
{"p75"}}}, "collectionPeriod"}, "urlNormalizationDetails"?}``; an unknown URL answers 404 with
Google's error body (``{"error": {"code": 404, "message": "chrome ux report data not found",
"status": "NOT_FOUND"}}``), a bad key 400 ``INVALID_ARGUMENT`` ("API key not valid").
CLS percentiles are strings, as the real API sends them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

KEY = "crux-test-key"
PERIOD = {
    "firstDate": {"year": 2026, "month": 10, "day": 30},
    "lastDate": {"year": 2026, "month": 11, "day": 26},
}


def _metric(p75: Any, good: float, poor: float, densities: tuple[float, float, float]) -> Any:
    return {
        "histogram": [
            {"start": 0, "end": good, "density": densities[0]},
            {"start": good, "end": poor, "density": densities[1]},
            {"start": poor, "density": densities[2]},
        ],
        "percentiles": {"p75": p75},
    }


# Field data per form factor: mobile is slower (LCP needs improvement, INP poor).
FIELD = {
    "PHONE": {
        "largest_contentful_paint": _metric(3100, 2500, 4000, (0.61, 0.27, 0.12)),
        "cumulative_layout_shift": _metric("0.05", 0.1, 0.25, (0.9, 0.06, 0.04)),
        "interaction_to_next_paint": _metric(520, 200, 500, (0.5, 0.24, 0.26)),
        "first_contentful_paint": _metric(1700, 1800, 3000, (0.78, 0.15, 0.07)),
        "experimental_time_to_first_byte": _metric(900, 800, 1800, (0.7, 0.2, 0.1)),
    },
    "DESKTOP": {
        "largest_contentful_paint": _metric(1200, 2500, 4000, (0.95, 0.04, 0.01)),
        "cumulative_layout_shift": _metric("0.00", 0.1, 0.25, (0.98, 0.01, 0.01)),
        "interaction_to_next_paint": _metric(80, 200, 500, (0.97, 0.02, 0.01)),
    },
}


def _error(code: int, status: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "status": status}}, code)


class FakeCrux:
    def __init__(self, urls: set[str]) -> None:
        self.urls = urls  # URLs CrUX "has data" for
        self.requests: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/records:queryRecord")(self.query)

    async def query(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append({"key": request.query_params.get("key"), **body})
        if request.query_params.get("key") != KEY:
            return _error(
                400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
            )
        factor = body.get("formFactor", "ALL_FORM_FACTORS")
        if body.get("url") not in self.urls or factor not in FIELD:
            return _error(404, "NOT_FOUND", "chrome ux report data not found")
        wanted = body.get("metrics") or list(FIELD[factor])
        metrics = {k: v for k, v in FIELD[factor].items() if k in wanted}
        record = {
            "key": {"formFactor": factor, "url": body["url"]},
            "metrics": metrics,
            "collectionPeriod": PERIOD,
        }
        return JSONResponse({"record": record})
