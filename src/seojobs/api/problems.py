"""RFC 9457 problem+json responses."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

PROBLEM_TYPE_BASE = "https://seojobs.dev/problems/"


def problem(
    status: int, title: str, detail: str | None = None, *, code: str | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code if code else "about:blank",
        "title": title,
        "status": status,
    }
    if detail:
        body["detail"] = detail
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type="application/problem+json")
