"""Pages: the Jinja2 environment, the headers every page carries, and the static files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, Final

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from seojobs.api.dashboard.auth import Viewer

# Scripts and styles come from our own origin only: no inline script can run, so markup that
# slipped through escaping still cannot execute. Inline SVG charts need no style-src relaxing
# (their styling is attributes).
CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)
PAGE_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    # Pages show one user's data: never stored by shared caches or the back/forward cache
    # after sign-out.
    "Cache-Control": "no-store",
}
STATIC_TYPES: Final = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    version: str


def _load_assets() -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    for entry in resources.files(__package__).joinpath("static").iterdir():
        suffix = entry.name[entry.name.rfind(".") :]
        if entry.is_file() and suffix in STATIC_TYPES:
            body = entry.read_bytes()
            version = hashlib.sha256(body).hexdigest()[:12]
            found[entry.name] = Asset(body, STATIC_TYPES[suffix], version)
    return found


ASSETS: Final = _load_assets()


def asset_url(name: str) -> str:
    """The URL of a static file, versioned by its content (so it can be cached for a year)."""
    return f"/dashboard/static/{name}?v={ASSETS[name].version}"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "—"


def _number(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader(__package__, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # The templates are the package's own files: compiled once, never stat'ed again per
        # request to see whether they changed (an edit takes a restart).
        auto_reload=False,
    )
    env.globals["asset"] = asset_url
    env.filters["when"] = _when
    env.filters["number"] = _number
    return env


TEMPLATES: Final = _environment()


def page(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    viewer: Viewer | None = None,
    csrf: str | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """Render ``template`` with what every page needs (the signed-in ``viewer`` and the CSRF
    token of their forms, or a sign-in form's ``csrf``; the current path for the navigation)."""
    user = viewer.user if viewer else None
    csrf = viewer.csrf if viewer else csrf
    values = {"user": user, "csrf": csrf, "path": request.url.path, **(context or {})}
    body = TEMPLATES.get_template(template).render(values)
    return HTMLResponse(body, status_code=status_code, headers=PAGE_HEADERS | (headers or {}))


def static(name: str) -> Response:
    asset = ASSETS.get(name)
    if asset is None:
        return Response(b"not found", status_code=404, media_type="text/plain")
    return Response(
        asset.body,
        media_type=asset.media_type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
        },
    )
