"""``/docs`` (Swagger UI) and ``/redoc`` with every script served by seojobs itself.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so they are blank on a machine
without internet access. The assets come from the pinned ``fastapi-offline`` wheel (Swagger
UI 5 and ReDoc 2, the builds FastAPI's pages ask the CDN for); only its files are used.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response

from seojobs.api.inputs import CheckedRoute
from seojobs.api.problems import Problem
from seojobs.api.shared import add_routes

ASSETS = "/docs/assets"
_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}


@cache
def _asset(name: str) -> bytes:
    return (files("fastapi_offline") / "static" / name).read_bytes()


router = APIRouter(route_class=CheckedRoute)
REDIRECT_URL = "/docs/oauth2-redirect"


def _openapi_url(request: Request) -> str:
    """Where the serving app publishes its document, under the request's root path."""
    url: str = request.app.openapi_url or "/openapi.json"
    return str(request.scope.get("root_path", "")) + url


@router.get("/docs", include_in_schema=False)
async def swagger(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_swagger_ui_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - Swagger UI",
        oauth2_redirect_url=root + REDIRECT_URL,
        swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
    )


@router.get(REDIRECT_URL, include_in_schema=False)
async def swagger_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc", include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_redoc_html(
        openapi_url=_openapi_url(request),
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
        with_google_fonts=False,
    )


@router.get(ASSETS + "/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    media_type = _TYPES.get(name)
    if media_type is None:
        raise Problem(404, "Not found", f"no documentation asset {name!r}", code="not_found")
    headers = {"Cache-Control": "public, max-age=86400"}
    return Response(_asset(name), media_type=media_type, headers=headers)


def install(app: FastAPI) -> None:
    """Add the two documentation pages and their assets (none of them in the OpenAPI): the
    routes every app shares (``seojobs.api.shared``), reading the app's title and document
    URL from the request."""
    add_routes(app, router)
