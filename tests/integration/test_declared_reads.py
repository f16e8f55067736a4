"""Every list read a kind declares (the built-in kinds' and the Acme plug-in's, found in the
registry, so a new kind's read is covered without a line here) pages the one way: a page is
full unless it is the last, with or without a filter, and a cursor stays valid while
collections are added between two pages (none served twice, none that was there skipped).

Each read gets rows made from its own row model: a value of each field's type, a field that
may be null null in every fourth row (nulls sort last), choices taken in turn."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin

import httpx
import pytest

from seojobs.kinds import load_registry
from seojobs.reads import FieldMatch, JobCompare, JobRead, Read
from tests.api_helpers import Api, api
from tests.collected_world import completed_job, publish
from tests.conftest import STORES, make_settings, migrated_sqlite, pg_database

PLUGINS = ["tests.kinds", "tests.acme"]
STAMPS = ("job_id", "collected_at")
ROWS = 23  # with pages of 4: five full pages and a short one
LIMIT = 4


def _lists() -> Iterator[Read]:
    registry = load_registry(make_settings("sqlite:///unused.db", plugins=PLUGINS))
    for kind in registry.kinds():
        for read in kind.reads:
            if read.paged and read.source != "one" and not read.elements:
                yield read


def _cases() -> list[Any]:
    """Each list read, unfiltered and with each filter on a field of the data."""
    cases = []
    for read in _lists():
        cases.append(pytest.param(read, None, id=f"{read.operation_id}"))
        for spec in read.filters:
            if isinstance(spec.match, FieldMatch):
                cases.append(pytest.param(read, spec.name, id=f"{read.operation_id}-{spec.name}"))
    return cases


def _value(annotation: Any, n: int, name: str) -> Any:
    """A value of ``annotation`` for row ``n`` (null in every fourth row when it may be)."""
    args = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        if type(None) in args and n % 4 == 1:
            return None
        return _value(next(a for a in args if a is not type(None)), n, name)
    if get_origin(annotation) is Literal:
        return args[n % len(args)]
    if annotation is bool:
        return n % 3 == 0
    if annotation is int:
        return (n * 7) % 5  # ties, so the order's last key (the id) decides
    if annotation is float:
        return n / 4
    if annotation is str:
        return chr(97 + n % 6) * 2  # "aa": fits a language code, a host and a keyword alike
    if get_origin(annotation) is list or annotation is list:
        return []
    return {}


def _data(read: Read, n: int) -> dict[str, Any]:
    """Row ``n``'s data: a value of each field's type, or of the type of the filter on it
    (a field the model calls text that a filter takes one of a few values of)."""
    types = {name: info.annotation for name, info in read.row.model_fields.items()}
    for spec in read.filters:
        if isinstance(spec.match, FieldMatch) and get_origin(spec.type) is Literal:
            types[spec.match.field] = spec.type
    return {name: _value(kind, n, name) for name, kind in types.items() if name not in STAMPS}


def _subject(read: Read, n: int) -> str:
    """Row ``n``'s subject, under the first of the read's subject prefixes (if it has any)."""
    prefix = read.subject_prefixes[0] if read.subject_prefixes else ""
    return f"{prefix}subject-{n:03d}"


def _filter_value(read: Read, name: str | None) -> dict[str, str]:
    if name is None:
        return {}
    spec = next(s for s in read.filters if s.name == name)
    assert isinstance(spec.match, FieldMatch)
    value = _data(read, 2)[spec.match.field]  # some rows have it, some not
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    return {name: shown}


@pytest.fixture(scope="module", params=STORES)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Api, httpx.Client]]:
    """One app per store for the whole module: each test makes its own project."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            url = stack.enter_context(pg_database(request.getfixturevalue("pg_template")))
        else:
            url = migrated_sqlite(tmp_path_factory.mktemp("reads"))
        settings = make_settings(url, plugins=PLUGINS, rate_limit="1000000/minute")
        app = stack.enter_context(api(settings))
        yield app, app.client(app.account(), in_process=True)  # page walks


def _project(client: httpx.Client) -> int:
    made = client.post("/v1/projects", json={"name": f"p{datetime.now().timestamp()}"})
    assert made.status_code == 201, made.text
    found: int = made.json()["data"]["id"]
    return found


def _fill(app: Api, read: Read, project: int, first: int, last: int, again: int = 0) -> None:
    """Rows ``first``..``last - 1``; ``again``: collect the first ``again`` subjects anew."""
    for n in range(first, last):
        publish(app.services, project, read.kind, _subject(read, n), _data(read, n))
    for n in range(again):
        publish(app.services, project, read.kind, _subject(read, n), _data(read, n + 1))


def _pages(
    client: httpx.Client, url: str, params: dict[str, str], between: Any = None
) -> list[list[dict[str, Any]]]:
    pages = []
    query: dict[str, Any] = {**params, "limit": LIMIT}
    while True:
        answer = client.get(url, params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        pages.append(body["data"])
        if body["next_cursor"] is None:
            return pages
        assert isinstance(body["next_cursor"], str)
        if between is not None and len(pages) == 2:
            between()
        query["cursor"] = body["next_cursor"]


def _filled(
    app: Api,
    client: httpx.Client,
    read: Read,
    filtered: str | None,
    project: int | None = None,
) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    """A new project with ``ROWS`` rows for ``read`` (or ``project``, that has them): its URL,
    the filter's parameter, and every row it serves (in one page)."""
    if project is None:
        project = _project(client)
        _fill(app, read, project, 0, ROWS)
    url = f"/v1/projects/{project}/{read.path}"
    params = _filter_value(read, filtered)
    every = client.get(url, params={**params, "limit": 1000})
    assert every.status_code == 200, every.text
    return url, params, every.json()["data"]


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


@pytest.fixture(scope="module")
def read_only(served: tuple[Api, httpx.Client]) -> dict[str, int]:
    """Per store, a project with ``ROWS`` rows of each read, made by the first of
    ``test_pages_are_full_unless_last``'s cases of that read (unfiltered or filtered: the
    same rows) and only read by the others: by operation id."""
    return {}


@pytest.mark.parametrize(("read", "filtered"), _cases())
def test_pages_are_full_unless_last(
    served: tuple[Api, httpx.Client], read_only: dict[str, int], read: Read, filtered: str | None
) -> None:
    app, client = served
    mine = read_only.get(read.operation_id)
    url, params, whole = _filled(app, client, read, filtered, mine)
    read_only.setdefault(read.operation_id, int(url.split("/")[3]))
    assert 0 < len(whole) <= ROWS
    if filtered is not None:
        assert len(whole) < ROWS  # the filter left some out
    pages = _pages(client, url, params)
    assert all(len(page) == LIMIT for page in pages[:-1]), [len(p) for p in pages]
    assert 0 < len(pages[-1]) <= LIMIT
    assert [row for page in pages for row in page] == whole  # in order, each row once


@pytest.mark.parametrize(("read", "filtered"), _cases())
def test_a_cursor_stays_valid_while_rows_are_added(
    served: tuple[Api, httpx.Client], read: Read, filtered: str | None
) -> None:
    app, client = served
    url, params, before = _filled(app, client, read, filtered)
    project = int(url.split("/")[3])
    # Between the second and third page: new subjects, and the first ones collected anew.
    pages = _pages(client, url, params, lambda: _fill(app, read, project, ROWS, ROWS + 9, 6))
    assert all(len(page) == LIMIT for page in pages[:-1]), [len(p) for p in pages]
    seen = [_key(row) for page in pages for row in page]
    assert len(seen) == len(set(seen))  # no row twice
    if read.source == "history":
        # Every row there at the first page is served (the new ones come before the cursor).
        assert {_key(r) for r in before} <= set(seen)
    elif read.snapshot:
        # The pages show the rows as they stood at the first page.
        assert seen == [_key(r) for r in before]
    else:
        # A subject collected anew may come again with its newer row; none is skipped: every
        # row there at the first page whose subject was not collected anew is served.
        kept = sorted(before, key=lambda r: str(r["collected_at"]))[6:]
        assert {_key(r) for r in kept} <= set(seen)


def _every_read() -> list[Any]:
    registry = load_registry(make_settings("sqlite:///unused.db", plugins=PLUGINS))
    return [pytest.param(r, id=r.operation_id) for k in registry.kinds() for r in k.reads]


@pytest.fixture(scope="module")
def document(served: tuple[Api, httpx.Client]) -> dict[str, Any]:
    """The app's OpenAPI document, read once per store for the module: each of the reads'
    tests looks up its own operation in it (the app builds it once; it was served, sent and
    parsed again for each of some 50 tests)."""
    _app, client = served
    answer = client.get("/openapi.json")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


@pytest.mark.parametrize("read", _every_read())
def test_each_read_is_documented_with_its_own_operation_and_row_model(
    document: dict[str, Any], read: Read
) -> None:
    operation = document["paths"][f"/v1/projects/{{project_id}}/{read.path}"]["get"]
    assert operation["operationId"] == read.operation_id
    schemas = document["components"]["schemas"]
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    shape = schemas[answer["$ref"].rsplit("/", 1)[1]]
    assert read.row.__name__ in schemas
    if read.source != "one" or read.envelope:  # a list, or the row under "data"
        data = shape["properties"]["data"]
        ref = data["items"]["$ref"] if "items" in data else data["$ref"]
        assert ref.endswith("/" + read.row.__name__)
    names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
    wanted = [f.name for f in read.filters]
    wanted += ["sort"] if len(read.orders) > 1 else []
    wanted += ["cursor", "limit"] if read.pages else []
    assert sorted(names) == sorted(wanted)


def test_a_history_narrowed_to_nothing_is_an_empty_page_and_one_of_nothing_a_404(
    served: tuple[Api, httpx.Client],
) -> None:
    app, client = served
    project = _project(client)
    url = "https://example.com/a"
    publish(
        app.services, project, "web_vitals", f"mobile {url}", {"url": url, "form_factor": "mobile"}
    )
    history = f"/v1/projects/{project}/web-vitals/history"
    # Only a form factor: an empty page (what was measured is there, none of it on desktop).
    assert client.get(history, params={"form_factor": "desktop"}).json()["data"] == []
    # A page never measured (on that form factor): a 404 naming it.
    for asked in ({"url": url, "form_factor": "desktop"}, {"url": "https://example.com/b"}):
        answer = client.get(history, params=asked)
        assert answer.status_code == 404 and repr(asked["url"]) in answer.json()["detail"]
    assert len(client.get(history, params={"url": url}).json()["data"]) == 1


def _job_reads() -> list[Any]:
    registry = load_registry(make_settings("sqlite:///unused.db", plugins=PLUGINS))
    return [pytest.param(r, id=r.operation_id) for k in registry.kinds() for r in k.job_reads]


def _job_url(read: JobRead | JobCompare, project: int, job: int, other: int) -> str:
    path = read.path.format(job_id=job, other_job_id=other)
    return f"/v1/projects/{project}/{path}"


@pytest.mark.parametrize("read", _job_reads())
def test_a_job_read_of_another_users_job_is_a_404(
    served: tuple[Api, httpx.Client], read: JobRead | JobCompare
) -> None:
    """A read of one job (or a comparison of two) answers its owner, and is a 404 for anyone
    else, whether they name the owner's project or their own."""
    app, client = served
    project = _project(client)
    job, other = (completed_job(app.services, project, read.kind) for _ in range(2))
    owned = client.get(_job_url(read, project, job, other))
    assert owned.status_code == 200, owned.text
    assert owned.json()["job_id"] == job
    stranger = app.client(app.account())
    theirs = _project(stranger)
    for url in (
        _job_url(read, project, job, other),
        _job_url(read, theirs, job, other),
    ):
        answer = stranger.get(url)
        assert answer.status_code == 404, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
    if isinstance(read, JobCompare):  # the other job is checked as well as the first
        mine = completed_job(app.services, theirs, read.kind)
        for url in (_job_url(read, theirs, mine, job), _job_url(read, theirs, job, mine)):
            answer = stranger.get(url)
            assert answer.status_code == 404, answer.text
        assert stranger.get(_job_url(read, theirs, mine, mine)).status_code == 200
