"""RFC 9457 problem+json: every error this API returns has this shape."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from seojobs.api.allow import allowed_methods
from seojobs.fielderrors import message
from seojobs.logfmt import logged_internal
from seojobs.services import (
    Conflict,
    Invalid,
    JobFinished,
    NotFound,
    QuotaExceeded,
    Unavailable,
)

PROBLEM_BASE = "https://seojobs.dev/problems/"
# A request can hold 10,000 bad URLs: an answer lists this many of its errors and counts the rest.
MAX_ERRORS = 100
MEDIA_TYPE = "application/problem+json"


class ProblemDocument(BaseModel):
    """RFC 9457 problem details, as every error of this API is answered."""

    type: str = Field(description="A URI naming the problem; about:blank when generic.")
    title: str
    status: int
    detail: str | None = None
    errors: list[dict[str, str]] | None = Field(
        default=None,
        description=f"Validation errors: [{{field, message}}], fields like urls[3]; the first "
        f"{MAX_ERRORS}.",
    )
    errors_omitted: int | None = Field(
        default=None, description=f"How many validation errors came after the first {MAX_ERRORS}."
    )


def problem_response(description: str) -> dict[str, Any]:
    schema = ProblemDocument.model_json_schema()
    return {"description": description, "content": {MEDIA_TYPE: {"schema": schema}}}


# Declared on every router so /openapi.json tells clients what errors look like; giving 422
# here also replaces FastAPI's default application/json HTTPValidationError. The problems any
# operation can get whatever its route (401, 413, 429, 503, ...) are declared once, on every
# operation, by seojobs.api.openapi.
RESPONSES: dict[int | str, dict[str, Any]] = {
    404: problem_response("No such job (or not yours)"),
    422: problem_response("Invalid request; `errors` names each field"),
}


class Problem(Exception):
    """Raise from a route to answer with a problem document."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str | None = None,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail
        self.code = code
        self.headers = headers or {}
        self.extra = extra


def invalid(field: str, message: str, code: str = "validation_error") -> Problem:
    """The 422 of one field, shaped like every validation error (``errors`` names it)."""
    return Problem(422, "Invalid request", code=code, errors=[{"field": field, "message": message}])


# Cancelling a job that has ended (other than one already cancelled).
CANCEL_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: problem_response("The job has already finished; `job_status` and `error_code` tell how"),
}


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + code if code else "about:blank",
        "title": title,
        "status": status,
    }
    errors = extra.get("errors")
    if errors:  # the one place a detail is made of field errors: the two never disagree
        detail = summary(errors)
        if len(errors) > MAX_ERRORS:
            extra |= {"errors": errors[:MAX_ERRORS], "errors_omitted": len(errors) - MAX_ERRORS}
    if detail:
        body["detail"] = detail
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    # ("body", "urls", 3) -> "urls[3]"; the location prefix is implied by the request.
    parts = [p for p in loc if p not in ("body", "query", "path", "header")]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def invalid_problem(exc: Invalid) -> JSONResponse:
    """The services' ``Invalid`` as a 422 naming each field."""
    errors = [
        {"field": field_name(e.path) if e.path else "params", "message": e.message}
        for e in exc.errors
    ]
    if exc.code == "unknown_kind":
        return problem(422, "Unknown job kind", code=exc.code, errors=errors)
    return validation_problem(errors, exc.code)


def summary(errors: list[dict[str, Any]]) -> str:
    """``detail`` of a problem with field ``errors``: the first few, as ``field: message``."""
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    if len(errors) > 5:
        detail += f"; and {len(errors) - 5} more"
    return detail


def validation_problem(
    errors: list[dict[str, Any]], code: str = "validation_error"
) -> JSONResponse:
    """A 422 naming each field; ``code`` tells why when it is not plain bad input (e.g.
    ``provider_not_configured``: the input is fine, this deployment cannot run it)."""
    return problem(422, "Invalid request", code=code, errors=errors)


log = logging.getLogger("seojobs.api")


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into problem+json."""

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # What failed (a statement and its values, a path) goes to the log under an id; the
        # client gets the code and the id (issue 25.3). Starlette re-raises after answering.
        error_id = logged_internal(log, f"{request.method} {request.url.path} raised")
        return problem(
            500,
            "Internal server error",
            f"an internal error stopped this request (error id {error_id}); "
            "the details are in the server's log",
            code="internal_error",
            error_id=error_id,
        )

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem(
            exc.status, exc.title, exc.detail, code=exc.code, headers=exc.headers, **exc.extra
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": field_name(e.get("loc", ())), "message": message(e)} for e in exc.errors()
        ]
        return validation_problem(errors)

    @app.exception_handler(Invalid)
    async def _invalid_input(request: Request, exc: Invalid) -> JSONResponse:
        return invalid_problem(exc)

    @app.exception_handler(NotFound)
    async def _not_found(request: Request, exc: NotFound) -> JSONResponse:
        return problem(404, "Not found", f"{exc} does not exist", code="not_found")

    @app.exception_handler(Conflict)
    async def _conflict(request: Request, exc: Conflict) -> JSONResponse:
        if isinstance(exc, JobFinished):  # the job's own state, as a GET would show it
            return problem(
                409,
                "Job already finished",
                str(exc),
                code=exc.code,
                job_id=exc.job_id,
                job_status=exc.state,
                error_code=exc.error_code,
            )
        return problem(409, "Conflict", str(exc), code=exc.code)

    @app.exception_handler(Unavailable)
    async def _unavailable(request: Request, exc: Unavailable) -> JSONResponse:
        return problem(
            503,
            "Service unavailable",
            "the database cannot take requests right now; retry shortly",
            code="database_unavailable",
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(QuotaExceeded)
    async def _quota(request: Request, exc: QuotaExceeded) -> JSONResponse:
        errors = [{"field": "params", "message": str(exc)}]
        return problem(422, "Over quota", code=exc.code, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers) if exc.headers else None
        allow = allowed_methods(request) if exc.status_code == 405 else []
        if allow:  # Starlette's Allow names the methods of one route of the path: list all
            headers = (headers or {}) | {"Allow": ", ".join(allow)}
        return problem(exc.status_code, _reason(exc.status_code), str(exc.detail), headers=headers)


def split_field(field: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in field.split(".")]


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
