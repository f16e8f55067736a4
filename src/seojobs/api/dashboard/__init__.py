"""The dashboard: server-rendered pages under ``/dashboard`` (Jinja2, our own small script,
no build step, every asset served by seojobs). People sign in with their API key; the pages
reach data only through the services, like the API."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, RedirectResponse, Response

from seojobs.api.dashboard.auth import DashboardError, SignInRequired
from seojobs.api.dashboard.jobs import router as jobs_router
from seojobs.api.dashboard.projects import router as project_router
from seojobs.api.dashboard.render import page
from seojobs.api.dashboard.rerun import router as rerun_router
from seojobs.api.dashboard.routes import router
from seojobs.api.dashboard.views import router as views_router
from seojobs.api.dashboard.webhooks import router as webhooks_router
from seojobs.api.shared import add_routes
from seojobs.services import Invalid, NotFound, Unavailable

PREFIX = "/dashboard"
# Scripts poll these: they get JSON errors, never a sign-in page.
JSON_PATHS = ("/dashboard/live",)
# In this order: the views' before the jobs' /dashboard/jobs/{id}/…
ROUTERS = (router, views_router, rerun_router, jobs_router, project_router, webhooks_router)


def _is_page(request: Request) -> bool:
    path = request.url.path
    return path.startswith(PREFIX) and not path.startswith(JSON_PATHS)


def _error_page(
    request: Request, status: int, title: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    if not _is_page(request):
        body = {"title": title, "detail": message}
        return JSONResponse(body, status_code=status, headers=headers)
    answer = page(request, "error.html", {"title": title, "message": message}, status_code=status)
    answer.headers.update(headers or {})
    return answer


def install(app: FastAPI) -> None:
    """Add the dashboard's routes, and answer errors on its pages with pages: the API's
    handlers keep answering everything else with problem+json."""
    for each in ROUTERS:
        add_routes(app, each)
    api_handlers = dict(app.exception_handlers)

    async def signin(request: Request, exc: Exception) -> Response:
        if not _is_page(request):
            return JSONResponse({"title": "Signed out"}, status_code=401)
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/login?next={quote(target)}", status_code=303)

    async def dashboard_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DashboardError)
        return _error_page(request, exc.status, exc.title, exc.message, exc.headers)

    def either(kind: type[Exception], status: int, title: str) -> None:
        api_handler = api_handlers.get(kind)

        async def handler(request: Request, exc: Exception) -> Response:
            if request.url.path.startswith(PREFIX) or api_handler is None:
                return _error_page(request, _status(exc, status), title, _message(exc))
            answer: Response = await api_handler(request, exc)
            return answer

        app.add_exception_handler(kind, handler)

    app.add_exception_handler(SignInRequired, signin)
    app.add_exception_handler(DashboardError, dashboard_error)
    either(NotFound, 404, "Not found")
    either(Invalid, 422, "Invalid input")
    either(RequestValidationError, 422, "Invalid input")
    either(Unavailable, 503, "Service unavailable")
    either(StarletteHTTPException, 404, "Not found")


def _status(exc: Exception, default: int) -> int:
    if isinstance(exc, StarletteHTTPException):
        return exc.status_code
    return default


def _message(exc: Exception) -> str:
    if isinstance(exc, NotFound):
        return "There is nothing here, or it is not yours."
    if isinstance(exc, Unavailable):
        return "The database cannot take requests right now; retry shortly."
    if isinstance(exc, StarletteHTTPException):
        return str(exc.detail)
    if isinstance(exc, RequestValidationError):
        return "; ".join(_field_error(error) for error in exc.errors())
    return str(exc)


def _field_error(error: Any) -> str:
    """ "field: message", the field named as the page's form or address names it."""
    where = [str(part) for part in error.get("loc", ()) if part not in ("query", "body", "path")]
    message = str(error.get("msg", ""))
    return f"{'.'.join(where)}: {message}" if where else message


__all__ = ["install", "router"]
