"""The input gate (``seojobs.api.inputs``) on every route the app serves, over HTTP on SQLite (the
gate acts before any store call): a JSON body nested deeper than 32 levels, or holding NUL, a lone
surrogate or a non-finite number anywhere (keys and values, at any depth), or a value pydantic would
convert into the number or boolean the published document expects (in a body or in any job type's
params), and NUL in a query string, are 422 problems naming the field, and nothing is stored.

The routes come from the app itself (``app_routes``): a new route is walked too, and a new
route with a body fails ``test_every_body_route_is_walked`` until its valid body is added here.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from seojobs.api import create_app, openapi
from tests.api_helpers import (
    V1,
    Api,
    app_routes,
    assert_problem,
    error_fields,
    send_json,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
    stored,
)
from tests.conftest import make_settings

# Store-agnostic (the input gate refuses before any store call): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

URL = "https://a.example/page"
Loc = tuple[str | int, ...]
Probe = tuple[Loc, str]
# A body each route takes; every probe below is this body with one odd part.
VALID_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", f"{V1}/index-submit/jobs"): {"urls": [URL], "title": "launch"},
    ("POST", f"{V1}/index-check/jobs"): {"urls": [URL], "title": "launch"},
    ("POST", "/v2/task/{engine}/{type}/create"): {"urls": [URL], "title": "launch"},
    ("POST", "/v2/task/{engine}/{type}/status"): {"task_ids": ["1", 2]},
    ("POST", "/v2/task/{engine}/{type}/fullreport"): {"task_id": "1"},
    ("POST", "/v2/task/{engine}/{type}/report"): {"task_id": "1"},
    ("POST", "/v2/{engine}/url"): {"url": URL},
    ("POST", "/v1/projects"): {"name": "site"},
    ("PATCH", "/v1/projects/{project_id}"): {"name": "renamed"},
    ("PATCH", "/v1/projects/{project_id}/schedules/{schedule_id}"): {"enabled": False},
    ("POST", "/v1/projects/{project_id}/jobs"): {
        "type": "test_items",
        "params": {"urls": ["a", "b"], "fail_items": ["b"]},
        "title": "launch",
    },
    ("POST", "/v1/projects/{project_id}/audits"): {"start_url": URL, "max_pages": 10},
    ("PUT", "/v1/projects/{project_id}/audit-settings"): {
        "exclude_patterns": ["/private/*"],
        "ignore_params": ["utm_source"],
        "crawl_seconds": 600,
    },
    ("POST", "/v1/projects/{project_id}/tracked-keywords"): {
        "keywords": [{"keyword": "hose", "location": 2840, "language": "en", "device": "mobile"}]
    },
    ("POST", "/v1/projects/{project_id}/tracked-prompts"): {"prompts": ["best hose?"]},
    ("POST", "/v1/projects/{project_id}/backlinks/analysis/monitor"): {
        "target": "example.com",
        "links": [{"url_from": URL, "url_to": "https://example.com/"}],
    },
    ("PUT", "/v1/projects/{project_id}/collection"): {
        "test_noop": {"enabled": True, "every_days": 1, "params": {}}
    },
    ("POST", "/v1/projects/{project_id}/schedules"): {
        "name": "nightly",
        "type": "test_noop",
        "params": {},
        "every_days": 1,
    },
    ("POST", "/v1/webhooks"): {
        "url": "https://a.example/hook",
        "events": ["job.completed"],
        "description": "ci",
        "filters": {"rank.changed": {"min_change": 1}},
    },
    ("PATCH", "/v1/webhooks/{webhook_id}"): {"events": "*", "enabled": False},
}
ODD_STRINGS = {
    "NUL": "a\x00b",
    "NUL alone": "\x00",
    "high surrogate": "\ud800",
    "low surrogate": "x\udc80y",
    "last surrogate": "\udfff",
}
ODD_NUMBERS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@pytest.fixture
def world(idle: Api) -> tuple[Api, httpx.Client, dict[str, str]]:
    """A user with a project, a schedule and a job: the values of every path parameter."""
    client = idle.client(idle.account(), in_process=True)  # a route walk
    project = client.post("/v1/projects", json={"name": "mine"}).json()["data"]["id"]
    every = {"name": "kept", "type": "test_noop", "every_days": 1}
    schedule = client.post(f"/v1/projects/{project}/schedules", json=every).json()["data"]["id"]
    job = client.post(f"{V1}/index-check/jobs", json={"urls": [URL]}).json()["job_id"]
    values = {"job_id": job, "other_job_id": job, "project_id": project, "schedule_id": schedule}
    values |= _tracked(client, project)
    hook = {"url": "https://a.example/hook"}
    values |= {"webhook_id": client.post("/v1/webhooks", json=hook).json()["data"]["id"]}
    values |= {"delivery_id": 1}
    values |= {"page": 0}
    values |= {"engine": "google", "type": "indexer", "name": "favicon.png"}  # name: /docs assets
    return idle, client, {name: str(value) for name, value in values.items()}


def _tracked(client: httpx.Client, project: int) -> dict[str, int]:
    """The ids of a tracked keyword and a tracked prompt of the project."""
    path = f"/v1/projects/{project}/tracked-"
    keyword = client.post(path + "keywords", json={"keywords": [{"keyword": "kept"}]})
    prompt = client.post(path + "prompts", json={"prompts": ["kept?"]})
    return {
        "keyword_id": keyword.json()["data"]["added"][0]["id"],
        "prompt_id": prompt.json()["data"]["added"][0]["id"],
    }


def body_routes(app: Api) -> list[tuple[str, str]]:
    return [(m, p) for m, p, route in app_routes(app.app) if route.body_field is not None]


def named(text: str) -> str:
    """A key as the answer names it: NUL and surrogates escaped, so the answer encodes."""
    unstorable = ("\x00", *map(chr, range(0xD800, 0xE000)))
    return "".join(f"\\u{ord(c):04x}" if c in unstorable else c for c in text)


def field(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def leaves(value: Any, loc: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The location of every string in ``value``."""
    if isinstance(value, str):
        yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*loc, index))


def replaced(body: dict[str, Any], loc: tuple[str | int, ...], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    holder: Any = out
    for part in loc[:-1]:
        holder = holder[part]
    holder[loc[-1]] = new
    return out


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def probes(body: dict[str, Any], odd: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """(body with ``odd`` in one place, the field the 422 must name)."""
    if isinstance(odd, str):
        for loc in leaves(body):
            yield replaced(body, loc, odd), field(loc)
        yield body | {f"k{odd}": 1}, f"k{named(odd)}"
        yield body | {"extra": {f"{odd}": "v"}}, f"extra.{named(odd)}"
    yield body | {"extra": {"list": ["fine", odd]}}, "extra.list[1]"
    yield body | {"odd": odd}, "odd"


def refused(response: httpx.Response, wanted: str) -> None:
    assert error_fields(response) == [wanted], response.text
    assert response.json()["type"].endswith("validation_error")


def test_every_body_route_is_walked(world: tuple[Api, httpx.Client, dict[str, str]]) -> None:
    app, _client, _values = world
    assert sorted(body_routes(app)) == sorted(VALID_BODIES)


@pytest.mark.parametrize("odd", [*ODD_STRINGS, *ODD_NUMBERS])
def test_odd_strings_and_numbers_anywhere_in_a_body_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]], odd: str
) -> None:
    app, client, values = world
    before = stored(app)
    value = ODD_STRINGS.get(odd, ODD_NUMBERS.get(odd))
    for method, path in body_routes(app):
        for body, wanted in probes(VALID_BODIES[method, path], value):
            key = {"Idempotency-Key": f"k-{odd}-{wanted}"}
            refused(send_json(client, method, path.format(**values), body, headers=key), wanted)
    assert stored(app) == before


# What pydantic would convert into each JSON type, which JSON Schema does not.
CONVERTED: dict[str, list[Any]] = {
    "integer": [True, False, "5"],
    "number": [True, False, "2.5"],
    "boolean": [0, 1, "true", "yes"],
}


def typed(node: Any, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[Probe]:
    """Where a document may hold a number or a boolean by the schema ``node`` (and nothing
    else but null), with the JSON type expected: through ``$ref``, the alternatives of a
    union, object properties and array items (as index 0)."""

    def resolved(part: Any) -> tuple[dict[str, Any], frozenset[str]]:
        ref = part.get("$ref")
        if ref is None:
            return part, seen
        name = ref.rsplit("/", 1)[-1]
        return ({}, seen) if name in seen else (defs[name], seen | {name})

    node, seen = resolved(node)
    alternatives = [resolved(b)[0] for b in (*node.get("anyOf", ()), *node.get("oneOf", ()))]
    kinds: set[str] = set()
    for part in (node, *alternatives):
        found = part.get("type")
        kinds |= {found} if isinstance(found, str) else set(found or ())
    probes: set[Probe] = set()
    if len(kinds - {"null"}) == 1 and (kinds - {"null"}) <= set(CONVERTED):
        probes.add(((), (kinds - {"null"}).pop()))
    for part in (node, *alternatives):
        for key, sub in part.get("properties", {}).items():
            probes |= {((key, *loc), kind) for loc, kind in typed(sub, defs, seen)}
        if isinstance(part.get("items"), dict):
            probes |= {((0, *loc), kind) for loc, kind in typed(part["items"], defs, seen)}
    return probes


def placed(body: dict[str, Any], loc: Loc, value: Any) -> dict[str, Any]:
    """``body`` with ``value`` at ``loc``, the objects and lists on the way made as needed."""
    out = copy.deepcopy(body)
    holder: Any = out
    for index, part in enumerate(loc[:-1]):
        empty: Any = [None] if isinstance(loc[index + 1], int) else {}
        current = holder[part] if isinstance(holder, list) else holder.get(part)
        if not isinstance(current, type(empty)):
            holder[part] = empty
        holder = holder[part]
    holder[loc[-1]] = value
    return out


def test_values_pydantic_would_convert_into_the_documented_type_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]],
) -> None:
    """pydantic reads true as 1, 0 as false, "5" as 5 and "yes" as true; JSON Schema does not
    (schemathesis found a site audit's ``"max_depth": true`` and ``"check_external_links": 0``
    accepted). Every number and boolean the published document asks for, in every body and in
    every job type's params (through both creation routes), refuses them; the probes come
    from the document, so a new field or job type is probed too."""
    app, _client, values = world
    client = app.client(app.account(rate_limit="100000/minute"), in_process=True)  # probes
    values = values | {
        "project_id": str(client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"])
    }
    document = client.get("/openapi.json").json()
    defs = document["components"]["schemas"]
    places: list[tuple[str, str, dict[str, Any], Loc, str]] = []
    for method, path in body_routes(app):
        content = document["paths"][path][method.lower()]["requestBody"]["content"]
        for loc, kind in typed(content["application/json"]["schema"], defs):
            places.append((method, path, VALID_BODIES[method, path], loc, kind))
    schedulable = defs["ScheduleIn"]["properties"]["type"]["enum"]
    for job_type in client.get("/v1/job-types").json()["data"]:
        schema = job_type["params_schema"]
        for loc, kind in typed(schema, schema.get("$defs", {})):
            body = {"type": job_type["name"], "params": {}}
            places.append(("POST", "/v1/projects/{project_id}/jobs", body, ("params", *loc), kind))
            if job_type["name"] in schedulable:
                schedule = {"name": "n", "every_days": 1, **body}
                at = ("params", *loc)
                places.append(("POST", "/v1/projects/{project_id}/schedules", schedule, at, kind))
    probed = {field(loc) for _method, _path, _body, loc, _kind in places}
    # The ones the issue and schemathesis named, one per kind of place: the walk is complete.
    assert {"checker", "max_depth", "thresholds.max_depth", "every_days", "every_seconds"} <= probed
    assert {"check_external_links", "params.checker", "params.check_external_links"} <= probed
    before = stored(app)
    for method, path, body, loc, kind in places:
        for value in CONVERTED[kind]:
            answer = send_json(client, method, path.format(**values), placed(body, loc, value))
            assert_problem(answer, 422)
            assert field(loc) in error_fields(answer), (path, loc, value, answer.text)
    assert stored(app) == before


def test_bodies_nested_past_32_levels_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]],
) -> None:
    app, client, values = world
    before = stored(app)
    deepest = "deep" + "[0]" * 31  # level 33: the body is level 1, "deep" level 2
    objects: Any = {}
    for _ in range(32):
        objects = {"a": objects}
    for method, path in body_routes(app):
        url = path.format(**values)
        body = VALID_BODIES[method, path]
        refused(send_json(client, method, url, body | {"deep": nested(32)}), deepest)
        refused(send_json(client, method, url, body | {"o": objects}), "o" + ".a" * 31)
        # 1,000 levels may be past what the parser follows, 100,000 surely is: then the body
        # as a whole is named.
        headers = {"Content-Type": "application/json"}
        for levels, named_as in ((1000, ["body", deepest]), (100_000, ["body"])):
            raw = json.dumps(body)[:-1] + ', "deep": ' + "[" * levels + "]" * levels + "}"
            answer = client.request(method, url, content=raw.encode(), headers=headers)
            assert error_fields(answer)[0] in named_as, answer.text
    assert stored(app) == before


def test_schedule_params_260_levels_deep_are_422(idle: Api) -> None:
    """The issue's case: it was ``Maximum serialization depth exceeded`` (500)."""
    client = idle.client(idle.account())
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    body = {"name": "n", "type": "test_noop", "every_days": 1, "params": {"a": nested(260)}}
    answer = send_json(client, "POST", f"/v1/projects/{project}/schedules", body)
    assert error_fields(answer) in (["params.a" + "[0]" * 30], ["body"])
    assert client.get(f"/v1/projects/{project}/schedules").json()["data"] == []


UNREADABLE = {  # (body, the field named)
    "a number past 4,300 digits": (b'{"task_id": ' + b"9" * 5000 + b"}", "body"),
    "not UTF-8": (b'{"task_id": "\xff\xfe"}', "body"),
    # Python's parser decodes UTF-8 with surrogatepass: a lone surrogate, caught as such.
    "UTF-8 of a surrogate": (b'{"task_id": "\xed\xb2\x80"}', "task_id"),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_bodies_python_cannot_read_are_422(
    world: tuple[Api, httpx.Client, dict[str, str]], case: str
) -> None:
    """The first two were 400 "There was an error parsing the body" (json.loads raised a
    ValueError), the third a 500 (UnicodeEncodeError) where it was stored."""
    app, client, values = world
    content, wanted = UNREADABLE[case]
    headers = {"Content-Type": "application/json"}
    for method, path in body_routes(app):
        answer = client.request(method, path.format(**values), content=content, headers=headers)
        refused(answer, wanted)


def test_valid_bodies_still_pass(world: tuple[Api, httpx.Client, dict[str, str]]) -> None:
    """32 levels, a surrogate pair (one character, written as JSON escapes), big finite
    numbers: none of them is refused by the gate."""
    app, client, values = world
    fine = {"deep": nested(31), "emoji": "\U0001f600", "big": 1.5e308, "int": 10**30}
    before = stored(app)
    for method, path in body_routes(app):
        url, body = path.format(**values), VALID_BODIES[method, path]
        answer = send_json(client, method, url, body | fine)
        if answer.status_code == 422:  # a body without unknown keys (not v2's) names them, only
            assert sorted(error_fields(answer)) == sorted(fine), answer.text
            answer = send_json(client, method, url, body)
        assert answer.status_code < 500 and answer.status_code != 422, answer.text
    after = stored(app)
    assert (
        after["projects"] == before["projects"] + 1
        and after["schedules"] == before["schedules"] + 2  # a schedule and a collection
    )
    assert after["jobs"] == before["jobs"] + 6  # v1 x2, v2 create and url, projects, audits


QUERIES = {"note=a%00b": "note", "%00=1": "\\u0000", "a%00b=": "a\\u0000b"}


@pytest.mark.parametrize("query", list(QUERIES))
def test_nul_in_a_query_string_is_422_on_every_route(
    world: tuple[Api, httpx.Client, dict[str, str]], query: str
) -> None:
    app, client, values = world
    before = stored(app)
    for method, path, route in app_routes(app.app):
        url = path.format(**values)
        body = VALID_BODIES.get((method, path))
        refused(client.request(method, f"{url}?{query}", json=body), QUERIES[query])
        for param in route.dependant.query_params:  # the route's own parameters too
            answer = client.request(method, f"{url}?{param.alias}=x%00", json=body)
            refused(answer, param.alias)
    assert stored(app) == before  # not even by DELETE


def test_nul_in_the_type_filter_is_422_not_a_database_error(idle: Api) -> None:
    """It reached PostgreSQL as a filter value (500 there; SQLite answered an empty page)."""
    alice = idle.account()
    client = idle.client(alice)
    path = f"/v1/projects/{alice.user.default_project_id}/jobs"
    for value in ("\x00", "test_noop\x00", "\x00test_noop"):
        refused(client.get(path, params={"type": value}), "type")
    assert client.get(path, params={"type": "test_noop"}).json()["data"] == []


def test_idempotency_keys_with_control_characters_are_refused(idle: Api) -> None:
    """The one header we store. NUL, CR and LF never reach the app (the HTTP parser, and httpx
    before it, refuse them); C1 controls (obs-text, decoded as Latin-1) are a 400 problem."""
    client = idle.client(idle.account())
    before = stored(idle)
    for key in (b"k\x85k", b"\x9fk", b"a\x80b"):
        answer = client.post(
            f"{V1}/index-check/jobs", json={"urls": [URL]}, headers={"Idempotency-Key": key}
        )
        assert assert_problem(answer, 400)["type"].endswith("invalid_idempotency_key")
    assert stored(idle) == before


def inlined(node: Any, defs: dict[str, Any], stack: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``$ref`` replaced by what it names (a reference back into one of
    its own ancestors by how far up): two documents that name their components differently
    compare equal when they say the same."""
    if isinstance(node, list):
        return [inlined(item, defs, stack) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: inlined(value, defs, stack) for key, value in node.items() if key != "$ref"}
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in stack:
            return out | {"$cycle": len(stack) - stack.index(name)}
        return out | inlined(defs[name], defs, (*stack, name))
    return out


def _body(document: dict[str, Any], method: str, path: str) -> Any:
    operation = document["paths"][path][method.lower()]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return inlined(schema, document.get("components", {}).get("schemas", {}))


def test_a_routes_own_document_gives_its_body_the_whole_documents_schema(idle: Api) -> None:
    """The input gate reads a body's schema from a document of its route alone (the whole
    document took some 0.43 CPU-s at each app's first request with a body): every body
    route's schema there is the whole document's, with the kinds' params tied to their type
    and the schedules' bounds (``openapi.complete``)."""
    app = idle.app
    registry, settings = app.state.services.registry, app.state.settings
    whole = app.openapi()
    routes = body_routes(idle)
    assert routes
    for method, path, route in app_routes(app):
        if (method, path) in routes:
            alone = openapi.route_document(app, route, registry, settings)
            assert _body(alone, method, path) == _body(whole, method, path), (method, path)


def test_a_routes_document_is_completed_for_each_app(sqlite_url: str) -> None:
    """FastAPI's document of a route is built once per process (``openapi._alone``: the apps
    share their routes) and completed for each app: two apps with other kinds and other
    schedule bounds each document the same route's body with their own, and completing one
    app's changes nothing of the other's."""
    plain = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    other = create_app(
        make_settings(sqlite_url, plugins=[], schedule_min_interval_seconds=120, day_seconds=60),
        run_worker=False,
        auto_migrate=False,
    )
    path = "/v1/projects/{project_id}/schedules"

    def body(app: Any) -> dict[str, Any]:
        (route,) = [r for m, p, r in app_routes(app) if (m, p) == ("POST", path)]
        registry, settings = app.state.services.registry, app.state.settings
        alone = openapi.route_document(app, route, registry, settings)
        schedule = alone["components"]["schemas"]["ScheduleIn"]
        types = schedule["properties"]["type"]["enum"]
        bounds = schedule["properties"]["every_seconds"]["anyOf"][0]
        tied = len(schedule["allOf"])  # the types' oneOf, added once per completion
        return {"types": types, "least": bounds["minimum"], "tied": tied, "same": route}

    first, second, again = body(plain), body(other), body(plain)
    assert first["same"] is second["same"]  # one route object, two documents of it
    assert "test_noop" in first["types"] and "test_noop" not in second["types"]
    assert (first["least"], second["least"]) == (60, 120)
    assert again == first


def test_a_body_is_checked_without_the_whole_document(sqlite_url: str) -> None:
    """An app's requests with a body build their routes' documents, not the app's: a value
    pydantic would convert (``true`` as 1) is still refused by the schema."""
    app = create_app(make_settings(sqlite_url), run_worker=False, auto_migrate=False)
    services = app.state.services
    key = services.accounts.create_user("alice").api_key

    async def walk() -> None:
        transport = httpx.ASGITransport(app=app)
        headers = {"X-API-Key": key}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=headers
        ) as c:
            made = await c.post("/v1/projects", json={"name": "p"})
            assert made.status_code == 201, made.text
            path = f"/v1/projects/{made.json()['data']['id']}/schedules"
            odd = {"name": "s", "type": "test_noop", "every_days": True}
            answer = await c.post(path, json=odd)
            assert_problem(answer, 422)
            assert "every_days" in error_fields(answer), answer.text

    try:
        asyncio.run(walk())
        assert app.openapi_schema is None
    finally:
        asyncio.run(services.close())
