"""Apps of one process serve the routes built once (``seojobs.api.shared``): the modules' routers
at import, the declared reads once per set of declarations. An app built from other
declarations (a plug-in's reads) gets routes of its own; none is served without the input gate.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute

from seojobs.api import create_app, dashboard, reads
from seojobs.api.audits import router as audits_router
from seojobs.api.inputs import CheckedRoute, require_checked
from seojobs.api.projects import router as projects_router
from seojobs.api.results import router as results_router
from seojobs.api.shared import add_routes
from seojobs.api.tracking import router as tracking_router
from seojobs.api.v1 import router as v1_router
from seojobs.api.v2 import router as v2_router
from seojobs.api.webhooks import router as webhooks_router
from seojobs.kinds import load_registry
from tests.conftest import make_settings

PLUGINS = ["tests.kinds", "tests.acme"]
# Every module's router create_app serves (the dashboard's, in its order), and FastAPI's own
# routes of a new app (/openapi.json, /docs...).
ROUTERS = [
    v1_router,
    v2_router,
    projects_router,
    results_router,
    audits_router,
    tracking_router,
    webhooks_router,
    *dashboard.ROUTERS,
]
FASTAPI_OWN = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
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
        # The same declarations: every route is the one object, reads, status polls, /metrics,
        # the health checks and the documentation pages included (the app's whole document
        # is then FastAPI's of shared routes: seojobs.api.openapi._whole).
        own = {at for at, route in routes.items() if route is not routes_again[at]}
        assert ("GET", "/v1/projects/{project_id}/jobs") not in own
        assert ("GET", "/v1/projects/{project_id}/data/{type}") not in own
        assert ("GET", "/v1/projects/{project_id}/rankings") not in own
        for shared in ("/api/v1/index-submit/jobs/{job_id}", "/metrics", "/healthz", "/docs"):
            assert ("GET", shared) not in own
        assert all(not route.include_in_schema for at, route in routes.items() if at in own)
        assert len(own) < len(routes) / 10, sorted(own)
        # Other declarations: the modules' routes are shared, the reads are the app's own.
        assert acme_routes["POST", "/v1/projects"] is routes["POST", "/v1/projects"]
        ranks = ("GET", "/v1/projects/{project_id}/rankings")
        assert acme_routes[ranks] is not routes[ranks]
    finally:
        for app in (plain, again, acme):
            asyncio.run(app.state.services.close())


def test_apps_of_the_same_routes_get_the_same_document_each_their_own(sqlite_url: str) -> None:
    """FastAPI's document of an app is built once for the same routes (``openapi._whole``) and
    completed for each app: an app of other declarations gets its own, and no app's
    document is another's object."""
    plain = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    again = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    acme_settings = make_settings(sqlite_url, plugins=PLUGINS)
    acme = create_app(acme_settings, run_worker=False, auto_migrate=False)
    try:
        first, second, third = plain.openapi(), again.openapi(), acme.openapi()
        assert first == second and first is not second
        assert first["paths"] is not second["paths"]
        assert ACME_SITES in third["paths"] and ACME_SITES not in first["paths"]
        first["paths"].clear()  # a caller's own copy
        fresh = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
        try:
            assert fresh.openapi() == second
        finally:
            asyncio.run(fresh.state.services.close())
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


def _served(route: Any) -> dict[str, Any]:
    """What FastAPI serves and documents of a route (or of the context an include built)."""

    def fields(params: list[Any]) -> list[tuple[str, str, str]]:
        return [(p.name, p.alias, repr(p.field_info)) for p in params]

    def walk(dependant: Any) -> list[Any]:
        own = [
            fields(getattr(dependant, f"{where}_params"))
            for where in ("path", "query", "header", "cookie", "body")
        ]
        return [own, getattr(dependant.call, "__qualname__", None)] + [
            walk(sub) for sub in dependant.dependencies
        ]

    def resolved(value: Any) -> Any:
        return value.value if isinstance(value, DefaultPlaceholder) else value

    return {
        "path": route.path,
        "methods": route.methods,
        "name": route.name,
        "operation_id": route.operation_id,
        "unique_id": route.unique_id,
        "endpoint": route.endpoint,
        "response_class": resolved(route.response_class),
        "status_code": route.status_code,
        "tags": route.tags,
        "responses": route.responses,
        "response_model": route.response_model,
        "include_in_schema": route.include_in_schema,
        "deprecated": route.deprecated,
        "summary": route.summary,
        "description": route.description,
        "dependencies": route.dependencies,
        "callbacks": route.callbacks,
        "openapi_extra": route.openapi_extra,
        "max_body_size": getattr(route, "max_body_size", None),
        "strict_content_type": resolved(getattr(route, "strict_content_type", True)),
        "body": None if route.body_field is None else route.body_field.name,
        "dependant": walk(route.dependant),
    }


def test_a_shared_route_serves_what_including_its_router_would(sqlite_url: str) -> None:
    """``add_routes`` stands for ``include_router`` only while an include adds nothing to a
    route: the same paths in the same order, with the same parameters, responses and document.
    A FastAPI upgrade that makes an include add something fails here."""
    registry = load_registry(make_settings(sqlite_url, plugins=PLUGINS))
    routers = [*ROUTERS, reads.router(registry)]
    included, shared = FastAPI(), FastAPI()
    for router in routers:
        included.include_router(router)
        add_routes(shared, router)
    assert all(isinstance(route, APIRoute) for route in shared.router.routes[4:])
    contexts = [c for c in iter_route_contexts(included.routes) if c.path not in FASTAPI_OWN]
    routes = [route for route in shared.routes if getattr(route, "path", "") not in FASTAPI_OWN]
    assert [_served(c) for c in contexts] == [_served(route) for route in routes]
    assert shared.openapi() == included.openapi()
