"""The ``Allow`` header of a 405: every method the request's path answers (RFC 9110 §15.5.6).

Starlette answers 405 with the methods of the first route whose path matched, and a path
served by several routes (``GET`` and ``DELETE`` of a project are two routes) then lists one
of them. Here every route is asked, through the routing's own ``matches``, whether it would
take the path with each standard method, so the header is what a client can actually send;
this runs only when a 405 is answered.
"""

from __future__ import annotations

from http import HTTPMethod
from typing import Any, Final

from starlette.requests import Request
from starlette.routing import Match

# The methods of RFC 9110 and PATCH (RFC 5789), in alphabetical order.
METHODS: Final = tuple(method.value for method in HTTPMethod)
# What route matching reads of a request; a fresh scope per probe, so that the routing's
# bookkeeping of the real request (matched route, path parameters) plays no part.
_MATCHED_ON: Final = ("type", "path", "root_path")


def allowed_methods(request: Request) -> list[str]:
    base = {key: request.scope[key] for key in _MATCHED_ON if key in request.scope}
    routes = request.app.router.routes
    return [method for method in METHODS if _served(routes, base | {"method": method})]


def _served(routes: list[Any], probe: dict[str, Any]) -> bool:
    return any(route.matches(dict(probe))[0] is Match.FULL for route in routes)
