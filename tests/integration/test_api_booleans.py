"""true/false is not a number: pydantic reads them as 1/0 for int and float fields, JSON Schema
(and the OpenAPI document) does not. Every numeric input refuses them with a 422 naming the
field, and nothing is created."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api_helpers import V1, Api, assert_problem, error_fields, stored

URL = "https://a.example/"


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_refused_where_a_number_is_expected(idle: Api, value: bool) -> None:
    alice = idle.account()
    client = idle.client(alice)
    project = alice.user.default_project_id
    cases: list[tuple[str, dict[str, Any], str]] = [
        (f"{V1}/index-submit/jobs", {"urls": [URL], "checker": value}, "checker"),
        (
            f"/v1/projects/{project}/jobs",
            {"type": "index_submit", "params": {"urls": [URL], "checker": value}},
            "params.checker",
        ),
        (f"/v1/projects/{project}/audits", {"start_url": URL, "max_depth": value}, "max_depth"),
        (
            f"/v1/projects/{project}/audits",
            {"start_url": URL, "thresholds": {"max_depth": value}},
            "thresholds.max_depth",
        ),
        (
            f"/v1/projects/{project}/schedules",
            {"name": "s", "type": "test_noop", "params": {}, "every_days": value},
            "every_days",
        ),
        ("/v2/task/google/indexer/create", {"urls": [URL], "checker": value}, "checker"),
    ]
    before = stored(idle)
    for path, body, field in cases:
        answer = client.post(path, json=body)
        assert_problem(answer, 422)
        assert field in error_fields(answer), (path, answer.text)
    assert stored(idle) == before
