"""Apps of one process serve the routes built once (``seojobs.api.shared``): the modules' routers
at import, the declared reads once per set of declarations. An app built from other
declarations (a plug-in's reads) gets routes of its own; none is served without the input gate.
"""

from __future__ import annotations

import asyncio

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from seojobs.api import create_app
from seojobs.api.inputs import CheckedRoute, require_checked
from seojobs.api.shared import add_routes
from tests.conftest import make_settings

PLUGINS = ["tests.kinds", "tests.acme"]
ACME_SITES = "/v1/projects/{project_id}/acme/sites"


def _by_path(app: FastAPI) -> dict[tuple[str, str], BaseRoute]:
    return {
        (method, route.path): route
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }


def test_apps_alive_at_once_share_the_routes_of_the_same_declarations(sqlite_url: str) -> None:
    plain = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    again = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    acme_settings = make_settings(sqlite_url, plugins=PLUGINS)
    acme = create_app(acme_settings, run_worker=False, auto_migrate=False)
    try:
        routes, routes_again, acme_routes = _by_path(plain), _by_path(again), _by_path(acme)
        assert ("GET", ACME_SITES) in acme_routes
        assert ("GET", ACME_SITES) not in routes
        # The same declarations: every route but the app's own (/healthz, /metrics, the status
        # polls...) is the one object, reads included.
        own = {at for at, route in routes.items() if route is not routes_again[at]}
        assert ("GET", "/v1/projects/{project_id}/jobs") not in own
        assert ("GET", "/v1/projects/{project_id}/data/{type}") not in own
        assert ("GET", "/v1/projects/{project_id}/rankings") not in own
        assert len(own) < len(routes) / 10, sorted(own)
        # Other declarations: the modules' routes are shared, the reads are the app's own.
        assert acme_routes["POST", "/v1/projects"] is routes["POST", "/v1/projects"]
        ranks = ("GET", "/v1/projects/{project_id}/rankings")
        assert acme_routes[ranks] is not routes[ranks]
    finally:
        for app in (plain, again, acme):
            asyncio.run(app.state.services.close())


def _unchecked() -> APIRouter:
    router = APIRouter()  # a plug-in's, say: FastAPI's own APIRoute

    @router.get("/plugged")
    def plugged() -> dict[str, str]:
        return {}

    return router


@pytest.mark.parametrize("add", [FastAPI.include_router, add_routes])
def test_a_route_without_the_input_gate_refuses_the_app(add: object) -> None:
    """``create_app`` ends with ``require_checked(app.routes)``: a route added without
    :class:`CheckedRoute`, included or added as the shared ones are, refuses the app."""
    app = FastAPI()
    app.router.route_class = CheckedRoute
    app.get("/fine")(lambda: {})
    require_checked(app.routes)
    add(app, _unchecked())  # type: ignore[operator]
    with pytest.raises(TypeError, match="/plugged"):
        require_checked(app.routes)
