"""The OpenAPI document as this deployment serves it: FastAPI's, completed with what only the
app knows once it is built.

- ``type`` of a new job or schedule, and the ``{type}`` of collected data, name the registered
  job types (plug-ins included), and each ``type`` carries its own ``params`` schema (the
  registry validates them; ``/v1/job-types`` serves the same schemas). Schedules take only
  schedulable types.
- A schedule's ``every_days`` and ``every_seconds`` carry the bounds of this deployment's
  settings (``SEOJOBS_SCHEDULE_MIN_INTERVAL_SECONDS``, ``SEOJOBS_DAY_SECONDS``).
- A query parameter's free-form strings hold no NUL, as the input gate requires.
- The problems the server can send on every operation, whatever the route (the HTTP protocol's
  400/408/414/431, the body limit's 413, the database's 503; 401 and 429 where a key is
  needed), are declared here once, on every operation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.routing import BaseRoute, Route, WebSocketRoute

from seojobs.api.inputs import NO_NUL, STORABLE_JSON, STORABLE_JSON_NAME
from seojobs.api.problems import problem_response
from seojobs.engine.registry import Kind, Registry, json_schema
from seojobs.services.schedules import interval_bounds
from seojobs.settings import Settings

REF_TEMPLATE = "#/components/schemas/{model}"
PUBLIC_TAG = "health"  # operations that answer without a key
ANYWHERE: dict[str, dict[str, Any]] = {
    "400": problem_response("Malformed request (e.g. a body that is not UTF-8 JSON)"),
    "408": problem_response("The request line, headers or body came too slowly"),
    "413": problem_response("Request body too large"),
    "414": problem_response("Request target too long"),
    "431": problem_response("Request headers too large"),
    "503": problem_response(
        "The database or the rate limiter's storage cannot take requests; see Retry-After"
    ),
}
WITH_KEY: dict[str, dict[str, Any]] = {
    "401": problem_response("Missing or wrong API key"),
    "429": problem_response(
        "Over the per-user rate limit, or too many failed authentications from this address; "
        "see Retry-After"
    ),
}
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def install(app: FastAPI, registry: Registry, settings: Settings) -> None:
    """Serve the completed document at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = _whole(app)
            complete(document, registry, settings)
            app.openapi_schema = document
            return document
        return app.openapi_schema

    def of_route(route: BaseRoute) -> dict[str, Any]:
        """Where the input gate reads the schema of a route's body (``CheckedRoute``): the
        whole document once built, else ``route_document``."""
        if app.openapi_schema is not None:
            return app.openapi_schema
        return route_document(app, route, registry, settings)

    app.openapi = openapi  # type: ignore[method-assign]
    app.state.route_openapi = of_route


# FastAPI's documents of whole apps (``_whole``), by what they are built from; the last few.
_WHOLE: dict[tuple[Any, ...], tuple[list[BaseRoute], str]] = {}
_KEEP_WHOLE = 4
_WHOLE_LOCK = threading.Lock()


def _documented(route: BaseRoute) -> bool:
    """Whether FastAPI's document may say something of ``route``: not for a plain Starlette
    route (/openapi.json, say) nor an ``APIRoute`` left out of the schema; anything else
    (an included router, a mount) may."""
    if isinstance(route, APIRoute):
        return route.include_in_schema
    return not isinstance(route, Route | WebSocketRoute)


def _whole(app: FastAPI) -> dict[str, Any]:
    """A fresh copy of FastAPI's document of ``app``, built once for the same routes, title,
    version and description: its routes are those the process's apps share (seojobs.api.shared,
    the status polls, /metrics and the health checks too), and it took some 0.6 CPU-s per
    app, at each app's first /openapi.json (tests read it from dozens of apps). Every route it
    documents is the key, by identity, and is kept with it (no other object takes its id)."""
    routes = [route for route in app.routes if _documented(route)]
    key = (app.title, app.version, app.description, *map(id, routes))
    found = _WHOLE.get(key)
    if found is None:
        document = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        found = (routes, json.dumps(document))
        with _WHOLE_LOCK:  # apps on other threads (a test process's) keep theirs too
            while len(_WHOLE) >= _KEEP_WHOLE:
                del _WHOLE[next(iter(_WHOLE))]
            _WHOLE[key] = found
    whole: dict[str, Any] = json.loads(found[1])
    return whole


def route_document(
    app: FastAPI, route: BaseRoute, registry: Registry, settings: Settings
) -> dict[str, Any]:
    """A document of ``route`` alone, completed as the whole one is. The input gate read a
    body's schema from the whole document, built at an app's first request with a body:
    about 0.43 CPU-s (some 160 routes), a fresh server's first POST that much later; one
    route's takes milliseconds. tests/integration/test_api_inputs.py checks every body's
    schema in it against the whole document's."""
    document = _alone(route, app.title, app.version)
    complete(document, registry, settings)
    return document


# Where a route keeps FastAPI's document of it alone (``_alone``), per title and version.
_ALONE = "_seojobs_openapi_alone"


def _alone(route: BaseRoute, title: str, version: str) -> dict[str, Any]:
    """A fresh copy of FastAPI's document of ``route`` alone, built once per route: it
    depends on nothing but the route, and took 8 to 30 ms of CPU (a ``TypeAdapter`` for each
    field of each model it names) at each app's first request of each route with a body,
    though a process's apps share their routes (``seojobs.api.shared``; a test process
    builds hundreds of apps). Kept as JSON text on the route (it dies with the route, and
    no caller's completion, :func:`complete`, reaches another's copy)."""
    kept: dict[tuple[str, str], str] = vars(route).setdefault(_ALONE, {})
    text = kept.get((title, version))
    if text is None:
        text = kept[(title, version)] = json.dumps(
            get_openapi(title=title, version=version, routes=[route])
        )
    found: dict[str, Any] = json.loads(text)
    return found


def complete(document: dict[str, Any], registry: Registry, settings: Settings) -> None:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas[STORABLE_JSON_NAME] = STORABLE_JSON
    _bound_intervals(schemas, interval_bounds(settings))
    kinds = registry.kinds()
    _tie_type(schemas, "JobIn", kinds)
    _tie_type(schemas, "ScheduleIn", [kind for kind in kinds if kind.schedulable])
    _name_collected(document, [kind.name for kind in kinds if kind.schedulable])
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            if path.startswith("/v1/projects/{project_id}/data/{type}"):
                _name_types(operation, kinds)
            _declare_problems(operation)
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    _no_nul(parameter["schema"])


def _name_collected(document: dict[str, Any], names: list[str]) -> None:
    """A collection's body names schedulable types only (its keys)."""
    put = document["paths"].get("/v1/projects/{project_id}/collection", {}).get("put")
    if put is None:
        return
    schema = put["requestBody"]["content"]["application/json"]["schema"]
    schema["propertyNames"] = {"enum": names}


def _bound_intervals(schemas: dict[str, Any], bounds: dict[str, tuple[float, float]]) -> None:
    model = schemas.get("ScheduleIn")
    if model is None:  # no route of this app takes it
        return
    for field, (least, most) in bounds.items():
        number = {"type": "number", "minimum": least, "maximum": most}
        model["properties"][field]["anyOf"] = [number, {"type": "null"}]


def _params_schema(kind: Kind[Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """The kind's params schema, its definitions moved into the document's components. A
    definition named as another component that says something else (a kind's own
    ``Competitor`` beside the projects API's) is renamed for its kind, and so are the
    references to it: it replaced the other, and the projects API's bodies were documented
    (and checked by the input gate) with the kind's model."""
    model: type[BaseModel] = kind.params
    schema = json_schema(model, REF_TEMPLATE)
    defs: dict[str, Any] = schema.pop("$defs", {})
    clashing = {name for name, found in defs.items() if schemas.get(name, found) != found}
    if clashing:
        text = json.dumps({"schema": schema, "defs": defs})
        for name in clashing:
            text = text.replace(
                json.dumps(REF_TEMPLATE.format(model=name)),
                json.dumps(REF_TEMPLATE.format(model=f"{kind.name}__{name}")),
            )
        renamed = json.loads(text)
        schema = renamed["schema"]
        defs = {
            f"{kind.name}__{name}" if name in clashing else name: found
            for name, found in renamed["defs"].items()
        }
    schemas.update(defs)
    return schema


def _takes_empty(kind: Kind[Any]) -> bool:
    """Whether ``{}`` is valid params (a kind may need one of several fields, which its
    schema's top-level ``required`` cannot say)."""
    try:
        kind.params.model_validate({})
    except ValidationError:
        return False
    return True


def _tie_type(schemas: dict[str, Any], name: str, kinds: list[Kind[Any]]) -> None:
    """``type`` is one of ``kinds``, and ``params`` follow that kind's schema: a ``oneOf``
    with one branch per kind beside the model's own properties, which admit nothing else."""
    model = schemas.get(name)
    if model is None:  # no route of this app takes it
        return
    model["properties"]["type"] = {
        "type": "string",
        "enum": [kind.name for kind in kinds],
        "description": "A job type from GET /v1/job-types.",
    }
    branches = []
    for kind in kinds:
        params = _params_schema(kind, schemas)
        branch: dict[str, Any] = {
            "properties": {"type": {"const": kind.name}, "params": params},
        }
        if not _takes_empty(kind):  # params default to {}: required when {} is not valid
            branch["required"] = ["params"]
        branches.append(branch)
    model["allOf"] = [*model.get("allOf", []), {"oneOf": branches}]


def _name_types(operation: dict[str, Any], kinds: Iterable[Kind[Any]]) -> None:
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "path" and parameter["name"] == "type":
            parameter["schema"]["enum"] = [kind.name for kind in kinds]


def _no_nul(schema: Any) -> None:
    """The input gate refuses NUL in every query value: say so on each free-form string."""
    if isinstance(schema, dict):
        if schema.get("type") == "string" and not {"pattern", "enum", "const"} & schema.keys():
            schema["pattern"] = NO_NUL
        for value in schema.values():
            _no_nul(value)
    elif isinstance(schema, list):
        for item in schema:
            _no_nul(item)


def _declare_problems(operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    generic = ANYWHERE if PUBLIC_TAG in operation.get("tags", []) else ANYWHERE | WITH_KEY
    for status, response in generic.items():
        responses.setdefault(status, response)
