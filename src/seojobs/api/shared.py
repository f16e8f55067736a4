"""Routes built once per process and served by every app (``create_app``) the process builds.

``app.include_router(router)`` keeps the router whole and, in FastAPI 0.165, builds every route
of it again for that app (its dependant: a pydantic ``TypeAdapter`` per parameter): most of
the ~0.23 CPU-s an app took to build (now ~0.015), and each request then went through the
inclusion layer to reach its route. The routes a module's router built at import are what
the app would serve when the app adds nothing to them (no prefix, tags, dependencies,
responses, callbacks, deprecation, body limit, response class or id function of its own), so
:func:`add_routes` puts those very route objects on the app, in the order ``include_router``
would match them (tests/integration/test_api_routes_shared.py compares the two).

What a shared route does not get: the app as its ``dependency_overrides_provider`` (so
``app.dependency_overrides`` does not reach it; seojobs uses none), and a per-app copy of
anything its handler keeps, so a route's handler keeps nothing of one app (the input gate's
body schema is kept per app, :mod:`seojobs.api.inputs`). Endpoints read the app's state from
the request, never from a closure.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute

# What a router built without ``lifespan=`` runs at startup: its on_startup handlers.
_PLAIN_LIFESPAN = type(APIRouter().lifespan_context)


def _adds_nothing(app: FastAPI) -> bool:
    """The app's router adds nothing of its own to a route it includes."""
    parent = app.router
    return (
        not (parent.prefix or parent.tags or parent.dependencies or parent.responses)
        and not (parent.callbacks or parent.deprecated)
        and parent.include_in_schema
        and getattr(parent, "max_body_size", None) is None
        and isinstance(parent.default_response_class, DefaultPlaceholder)
        and isinstance(parent.generate_unique_id_function, DefaultPlaceholder)
    )


def _resolved(value: Any) -> Any:
    return value.value if isinstance(value, DefaultPlaceholder) else value


def _plain(router: APIRouter, app: FastAPI) -> bool:
    """Every route of ``router`` is a built ``APIRoute`` that would check a body's content
    type as the app would have it checked, and including it would add nothing else (startup
    or shutdown handlers, a lifespan, form or body limits)."""
    strict = _resolved(getattr(app.router, "strict_content_type", True))
    return (
        all(
            isinstance(route, APIRoute)
            and _resolved(getattr(route, "strict_content_type", strict)) == strict
            for route in router.routes
        )
        and not (router.on_startup or router.on_shutdown)
        and type(router.lifespan_context) is _PLAIN_LIFESPAN
        and not getattr(router, "form_limits", None)
        and getattr(router, "max_body_size", None) is None
    )


def add_routes(app: FastAPI, router: APIRouter, *, first: bool = False) -> None:
    """Serve ``router``'s routes on ``app`` as ``app.include_router(router)`` would, sharing
    the route objects; a router or app this cannot be done for is included. ``first``: ahead
    of the app's other routes (tried first), else after them."""
    routes = app.router.routes
    before = len(routes)
    if _adds_nothing(app) and _plain(router, app):
        routes.extend(router.routes)
    else:
        app.include_router(router)
    if first:
        added = routes[before:]
        del routes[before:]
        routes[:0] = added
