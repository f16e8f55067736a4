"""405 answers over real HTTP: every method a path does not take (OPTIONS included) is a
problem+json 405 whose ``Allow`` lists every method the path takes (RFC 9110 §15.5.6), not
only those of the first route that matched the path."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.api_helpers import (
    Api,
    assert_problem,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
)

# Store-agnostic (405s are the router's): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

SENT = ["OPTIONS", "GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "PROPFIND"]
PATH_PARAMS = {
    "job_id": "1",
    "other_job_id": "2",
    "project_id": "1",
    "schedule_id": "1",
    "keyword_id": "1",
    "prompt_id": "1",
    "webhook_id": "1",
    "delivery_id": "1",
    "engine": "google",
    "type": "indexer",
    "page": "0",
}


def allowed(response: httpx.Response) -> set[str]:
    return {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()}


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/v1/projects/1", {"GET", "PATCH", "DELETE"}),
        ("/v1/projects/1/schedules/1", {"GET", "PATCH", "DELETE"}),
        ("/v1/projects", {"GET", "POST"}),
        ("/api/v1/index-check/jobs", {"GET", "POST"}),
        ("/api/v1/index-submit/jobs/1", {"GET"}),  # a status route of its own (PathIdRoute)
        ("/api/v1/index-check/jobs/1/cancel", {"POST"}),
        ("/v2/task/google/checker/status", {"POST"}),
        ("/openapi.json", {"GET", "HEAD"}),
    ],
)
def test_405_allow_lists_every_method_of_the_path(idle: Api, path: str, methods: set[str]) -> None:
    client = idle.client()
    for method in SENT:
        if method in methods:
            continue
        answer = client.request(method, path)
        assert_problem(answer, 405)
        assert allowed(answer) == methods, (method, path, answer.headers.get("allow"))


def test_every_documented_path_answers_options_with_its_documented_methods(idle: Api) -> None:
    client = idle.client()
    spec = client.get("/openapi.json").json()
    assert len(spec["paths"]) > 20
    for template, operations in spec["paths"].items():
        path = re.sub(r"\{(\w+)\}", lambda m: PATH_PARAMS[m.group(1)], template)
        answer = client.options(path)
        assert_problem(answer, 405)
        assert allowed(answer) == {m.upper() for m in operations}, (path, answer.headers)
