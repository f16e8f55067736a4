"""A route class for the status GETs: FastAPI documents them, our handler runs them.

Status polls are most of the API's traffic. FastAPI's generic request handler resolves every
declared parameter, dependency, body and response model per request (``solve_dependencies``
and its bookkeeping cost ~100 us, more than the database read; bench/api.py). A route of
:class:`PathIdRoute` is an ordinary ``APIRoute`` for the OpenAPI document (the endpoint's
signature still declares ``request`` and the path id with its bounds), but at request time it
validates the one path parameter itself, with the same pydantic constraint, and calls the
endpoint with ``(request, id)``. A bad id raises ``RequestValidationError`` with FastAPI's own
error location, so the 422 problem+json is the one every other route gives. It is a
:class:`~seojobs.api.inputs.CheckedRoute` and makes the same query-string check.

Only for endpoints shaped ``async def endpoint(request, <id>: Annotated[int, Path(...)])``
that return a ``Response``; the constructor refuses anything else.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import annotated_types
from fastapi.exceptions import RequestValidationError
from pydantic import BeforeValidator, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from seojobs.api.ids import whole_number
from seojobs.api.inputs import CheckedRoute, query_errors

Endpoint = Callable[[Request, int], Awaitable[Response]]
PLAIN_DIGITS = 18  # a plain id of at most this many digits is read without pydantic


def plain_bounds(field: FieldInfo) -> tuple[int, int] | None:
    """``(lo, hi)`` when the parameter is an ``int`` whose only checks are bounds (``Path(ge=,
    le=)``) and :func:`~seojobs.api.ids.digits`: then a plain decimal string (1 to
    :data:`PLAIN_DIGITS` ASCII digits, no leading zero) within them validates to ``int(raw)``
    and the handler reads it so, without pydantic (a third of the handler's own cost). Any
    other check, or any other string, goes through the validator. None: always validate."""
    if field.annotation is not int:
        return None
    lo, hi = 1, 10**PLAIN_DIGITS - 1  # what a plain string can hold at all
    for check in field.metadata:
        if isinstance(check, annotated_types.Ge):
            lo = max(lo, cast(int, check.ge))
        elif isinstance(check, annotated_types.Gt):
            lo = max(lo, cast(int, check.gt) + 1)
        elif isinstance(check, annotated_types.Le):
            hi = min(hi, cast(int, check.le))
        elif isinstance(check, annotated_types.Lt):
            hi = min(hi, cast(int, check.lt) - 1)
        elif (
            isinstance(check, BeforeValidator)
            and isinstance(check.func, functools.partial)
            and check.func.func is whole_number
            and not check.func.args
        ):
            lo = max(lo, check.func.keywords["lo"])
            hi = min(hi, check.func.keywords["hi"])
        else:
            return None
    return lo, hi


class PathIdRoute(CheckedRoute):
    """An ``APIRoute`` whose handler skips FastAPI's parameter machinery (see module doc)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        # Served without FastAPI's request_response wrapper either (two AsyncExitStacks for
        # dependencies with yield, which this route cannot have, and a per-route exception
        # handler): errors propagate to the app's ExceptionMiddleware, which renders them with
        # the same handlers. A route reached through an included router keeps FastAPI's own
        # wrapper around the same handler; seojobs' routers are not included but shared
        # (seojobs.api.shared), so their PathIdRoutes (GET /v1/jobs/{id}) run as this one.
        handler = self.get_route_handler()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            response = await handler(Request(scope, receive, send))
            await response(scope, receive, send)

        self.app = app

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        # Called by APIRoute.__init__ (and again per router inclusion), after the dependant
        # was built from the endpoint's signature.
        params = self.dependant.path_params
        extra = (
            self.dependant.query_params
            + self.dependant.header_params
            + self.dependant.cookie_params
            + self.dependant.dependencies
        )
        if len(params) != 1 or extra or self.body_field is not None:
            raise TypeError(f"{self.path}: PathIdRoute takes one path parameter and nothing else")
        if not inspect.iscoroutinefunction(self.endpoint):
            raise TypeError(f"{self.path}: PathIdRoute needs an async endpoint")
        endpoint = cast(Endpoint, self.endpoint)
        name = params[0].alias
        # The annotation with its Path(ge=..., le=...) constraints, validated as FastAPI does.
        adapter: TypeAdapter[int] = TypeAdapter(
            cast(Any, params[0].field_info.rebuild_annotation())
        )
        validate = adapter.validate_python
        bounds = plain_bounds(params[0].field_info)
        lo, hi = bounds if bounds is not None else (1, 0)  # (1, 0): nothing is plain

        async def handler(request: Request) -> Response:
            refused = query_errors(request)
            if refused:
                raise RequestValidationError(refused)
            raw = request.path_params[name]
            if raw.isdigit() and raw.isascii() and raw[0] != "0" and len(raw) <= PLAIN_DIGITS:
                value = int(raw)
                if lo <= value <= hi:
                    return await endpoint(request, value)
            try:
                value = validate(raw)
            except ValidationError as exc:
                raise RequestValidationError(
                    [
                        {**error, "loc": ("path", name, *error.get("loc", ()))}
                        for error in exc.errors(include_url=False)
                    ]
                ) from None
            return await endpoint(request, value)

        return handler
