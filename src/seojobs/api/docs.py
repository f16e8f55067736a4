"""``/docs`` (Swagger UI) and ``/redoc`` with every script served by seojobs itself.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so they are blank on a machine
without internet access. The assets come from the pinned ``fastapi-offline`` wheel (Swagger
UI 5 and ReDoc 2, the builds FastAPI's pages ask the CDN for); only its files are used.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

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


def _page(request: Request, name: str) -> tuple[str, dict[str, Any]]:
    """The request's root path, and what both pages take from the serving app: where it
    publishes its document (under that root) and the page's title."""
    root = str(request.scope.get("root_path", ""))
    url: str = request.app.openapi_url or "/openapi.json"
    return root, {"openapi_url": root + url, "title": f"{request.app.title} - {name}"}


@router.get("/docs", include_in_schema=False)
async def swagger(request: Request) -> HTMLResponse:
    root, page = _page(request, "Swagger UI")
    assets = root + ASSETS
    return get_swagger_ui_html(
        **page,
        oauth2_redirect_url=root + REDIRECT_URL,
        swagger_js_url=f"{assets}/swagger-ui-bundle.js",
        swagger_css_url=f"{assets}/swagger-ui.css",
        swagger_favicon_url=f"{assets}/favicon.png",
    )


@router.get(REDIRECT_URL, include_in_schema=False)
async def swagger_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc", include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    root, page = _page(request, "ReDoc")
    return get_redoc_html(
        **page,
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
