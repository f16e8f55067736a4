"""What a request's strings and JSON must be before any route reads them: one gate for every
route of the app (:class:`CheckedRoute`; ``create_app`` refuses a route without it).

- A JSON body is at most :data:`MAX_DEPTH` levels deep; none of its strings, keys or values,
  holds a NUL or a lone surrogate (``"\\udc80"`` is valid JSON, not valid Unicode); its numbers
  are finite (Python's parser takes NaN and Infinity, and reads ``1e400`` as infinity).
- Each value has a JSON type the published document admits where pydantic would convert it
  (``true`` read as 1, ``0`` as false, ``"5"`` as 5: :mod:`seojobs.jsontypes`).
- A query string holds no NUL (``%00``).

Each of these used to reach the stores or an encoder and answer 500: PostgreSQL refuses NUL in
text and jsonb, and NaN or Infinity in jsonb (SQLite stored them, so the stores disagreed), no
store, hash or answer can encode a lone surrogate as UTF-8, and pydantic refuses to serialize
deeply nested params. They are
refused here with the 422 every validation error gets, naming the field (``params.a[0]``), the
same on every surface and store.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from seojobs.jsontypes import Schema, value_at

MAX_DEPTH: Final = 32
# What the gate lets through, as JSON Schema: for the keys a model ignores (v2 tolerates keys
# SpeedyIndex clients send and we lack), whose values nothing else describes. Lone surrogates
# and the depth limit are left out: a JSON document cannot carry the one into a regex, and a
# schema cannot count the other.
STORABLE_JSON_NAME: Final = "StorableJson"
_STORABLE_REF: Final = {"$ref": f"#/components/schemas/{STORABLE_JSON_NAME}"}
NO_NUL: Final = "^[^\\u0000]*$"
STORABLE_JSON: Final[dict[str, Any]] = {
    "description": f"Any JSON without NUL in its strings or keys, nested at most {MAX_DEPTH} deep.",
    "anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": NO_NUL},
        {"type": "array", "items": _STORABLE_REF},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": _STORABLE_REF,
        },
    ],
}
# Our own request bodies refuse keys they do not know (422 naming the key), as their schema
# says (additionalProperties: false): a misspelt optional field is not silently dropped.
FORBID: Final = ConfigDict(extra="forbid")
# For ``json_schema_extra`` of a model that ignores unknown keys.
TOLERATED_KEYS: Final[dict[str, Any]] = {
    "propertyNames": {"pattern": NO_NUL},
    "additionalProperties": _STORABLE_REF,
}
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")
Loc = tuple[str | int, ...]
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _error(loc: Loc, message: str, kind: str = "value_error") -> dict[str, Any]:
    return {"type": kind, "loc": loc, "msg": message}


def _what(found: str) -> str:
    if found == "\x00":
        return "NUL (U+0000)"
    return f"a lone surrogate (U+{ord(found):04X}), which is not valid Unicode"


def _named(key: str) -> str:
    # A key named in an error is echoed in the answer, which must itself encode as UTF-8.
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", key)


def _check(value: Any, loc: Loc, depth: int, errors: list[dict[str, Any]]) -> None:
    """Append the errors of ``value``, ``depth`` containers down, in document order."""
    if isinstance(value, str):
        found = _UNSTORABLE.search(value)
        if found is not None:
            errors.append(_error(loc, f"holds {_what(found.group())}"))
    elif isinstance(value, float):
        if not math.isfinite(value):
            errors.append(_error(loc, "not a finite number (NaN, Infinity, past 1.8e308)"))
    elif isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            errors.append(_error(loc, f"nested more than {MAX_DEPTH} levels deep", "too_deep"))
        elif isinstance(value, dict):
            _check_object(value, loc, depth + 1, errors)
        else:
            for index, item in enumerate(value):
                _check(item, (*loc, index), depth + 1, errors)


def _check_object(
    value: dict[str, Any], loc: Loc, depth: int, errors: list[dict[str, Any]]
) -> None:
    for key, item in value.items():
        found = _UNSTORABLE.search(key)
        if found is not None:
            errors.append(_error((*loc, _named(key)), f"a key holds {_what(found.group())}"))
        else:
            _check(item, (*loc, key), depth, errors)


def body_errors(document: Any) -> list[dict[str, Any]]:
    """Errors of a parsed JSON body (pydantic's shape, ``loc`` starting with "body")."""
    errors: list[dict[str, Any]] = []
    _check(document, ("body",), 0, errors)
    return errors


def query_errors(request: Request) -> list[dict[str, Any]]:
    """Errors of the query string: NUL in a name or a value. Cheap when there is none (this
    runs on every status poll)."""
    if b"%00" not in request.scope.get("query_string", b""):
        return []
    return [
        _error(("query", _named(name)), f"holds {_what(chr(0))}")
        for name, value in request.query_params.multi_items()
        if "\x00" in name or "\x00" in value
    ]


async def _json_errors(request: Request) -> list[dict[str, Any]]:
    """Parse the body as FastAPI would (``request.json()`` keeps the result, so it is parsed
    once) and check it. FastAPI's own answer to a body that is not JSON named the position as
    if it were a field (``[25]: JSON decode error``)."""
    if not await request.body():
        return []
    try:
        document = await request.json()
    except json.JSONDecodeError as exc:
        where = f"character {exc.pos + 1} (line {exc.lineno}, column {exc.colno})"
        return [_error(("body",), f"body is not valid JSON at {where}: {exc.msg}", "json_invalid")]
    except RecursionError:  # deeper than the parser goes, far past MAX_DEPTH
        return [_error(("body",), f"nested more than {MAX_DEPTH} levels deep", "too_deep")]
    except ValueError as exc:  # not UTF-8, or a number of over 4,300 digits
        return [_error(("body",), f"not readable as JSON ({exc})", "json_invalid")]
    return body_errors(document)


def _body_schema(document: dict[str, Any], path: str, methods: Iterable[str]) -> Schema | None:
    """The schema the published document gives this operation's JSON body, if any."""
    operations = document.get("paths", {}).get(path, {})
    for method in methods:
        body = operations.get(method.lower(), {}).get("requestBody", {})
        schema = body.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            return Schema(schema, document.get("components", {}).get("schemas", {}))
    return None


def _app_body_schema(request: Request, route: APIRoute) -> Schema | None:
    """The schema the app serving ``request`` publishes for ``route``'s JSON body, read from
    its document on first use and kept by the app: one route object serves every app of the
    process (seojobs.api.shared), and each app's document depends on its kinds and settings."""
    state = request.app.state
    kept: dict[int, Schema | None] | None = getattr(state, "body_schemas", None)
    if kept is None:
        kept = state.body_schemas = {}
    # By id: the app holds its routes, so no other route takes this id while the app lives.
    if id(route) not in kept:
        # This route's own document (seojobs.api.openapi.install), or the whole one.
        of_route = getattr(state, "route_openapi", None)
        published = of_route(route) if of_route is not None else request.app.openapi()
        kept[id(route)] = _body_schema(published, route.path_format, route.methods or ())
    return kept[id(route)]


class CheckedRoute(APIRoute):
    """An ``APIRoute`` whose request passes the gate (see module doc) before FastAPI reads
    its parameters and body."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        reads_body = self.body_field is not None

        def coerced(request: Request, document: Any) -> list[dict[str, Any]]:
            schema = _app_body_schema(request, self)
            if schema is None:
                return []
            found = schema.coercions(document, ("body",))
            return [
                _error(at, why, "json_type") | {"input": value_at(document, at[1:])}
                for at, why in found
            ]

        async def checked(request: Request) -> Response:
            errors = query_errors(request)
            if not errors and reads_body:
                errors = await _json_errors(request)
                if not errors and await request.body():
                    errors = coerced(request, await request.json())
            if errors:
                raise RequestValidationError(errors)
            return await handler(request)

        return checked


def require_checked(routes: list[BaseRoute]) -> None:
    """Refuse to build an app with a route that skips the gate (one added without the
    routers' ``route_class``, e.g. by a plug-in), included routers' routes too. seojobs' own
    routers are not included (``seojobs.api.shared``), so the walk builds nothing: FastAPI
    builds an included router's routes for the app when they are walked (or first matched)."""
    unchecked = [
        context.path
        for context in iter_route_contexts(routes)
        if isinstance(context.original_route, APIRoute)
        and not isinstance(context.original_route, CheckedRoute)
    ]
    if unchecked:
        raise TypeError(f"routes without seojobs.api.inputs.CheckedRoute: {unchecked}")
