"""The OpenAPI document against the running app: schemathesis generates requests for every
operation (authenticated with a real key) and checks that no answer is a 5xx or breaks the
documented schema. Also: every operation has a unique, stable ``operationId``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.api_helpers import Account, api
from tests.conftest import make_settings

# The operation ids clients and generated SDKs are built on: renaming one is a breaking change.
OPERATION_IDS = {
    ("get", "/healthz"): "healthz",
    ("get", "/readyz"): "readyz",
    ("post", "/api/v1/index-submit/jobs"): "create_index_submit_job",
    ("get", "/api/v1/index-submit/jobs"): "list_index_submit_jobs",
    ("get", "/api/v1/index-submit/jobs/{job_id}"): "get_index_submit_job",
    ("get", "/api/v1/index-submit/jobs/{job_id}/report"): "get_index_submit_report",
    ("post", "/api/v1/index-submit/jobs/{job_id}/cancel"): "cancel_index_submit_job",
    ("post", "/api/v1/index-check/jobs"): "create_index_check_job",
    ("get", "/api/v1/index-check/jobs"): "list_index_check_jobs",
    ("get", "/api/v1/index-check/jobs/{job_id}"): "get_index_check_job",
    ("get", "/api/v1/index-check/jobs/{job_id}/report"): "get_index_check_report",
    ("post", "/api/v1/index-check/jobs/{job_id}/cancel"): "cancel_index_check_job",
    ("get", "/api/v1/usage"): "get_usage",
    ("get", "/v1/projects"): "list_projects",
    ("post", "/v1/projects"): "create_project",
    ("get", "/v1/projects/{project_id}"): "get_project",
    ("delete", "/v1/projects/{project_id}"): "delete_project",
    ("get", "/v1/job-types"): "list_job_types",
    ("post", "/v1/projects/{project_id}/jobs"): "create_project_job",
    ("get", "/v1/projects/{project_id}/jobs"): "list_project_jobs",
    ("get", "/v1/jobs/{job_id}"): "get_job",
    ("post", "/v1/jobs/{job_id}/cancel"): "cancel_job",
    ("get", "/v1/projects/{project_id}/schedules"): "list_schedules",
    ("post", "/v1/projects/{project_id}/schedules"): "create_schedule",
    ("get", "/v1/projects/{project_id}/schedules/{schedule_id}"): "get_schedule",
    ("delete", "/v1/projects/{project_id}/schedules/{schedule_id}"): "delete_schedule",
    ("get", "/v1/jobs/{job_id}/items"): "list_job_items",
    ("get", "/v1/jobs/{job_id}/findings"): "list_job_findings",
    ("get", "/v1/jobs/{job_id}/findings/summary"): "summarise_job_findings",
    ("get", "/v1/projects/{project_id}/data/{type}"): "get_collected_data",
    ("get", "/v1/projects/{project_id}/data/{type}/history"): "list_collected_data",
    ("get", "/v1/usage"): "get_quota_usage",
}
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Account]]:
    """One app for the whole module (no worker: generated URLs are never fetched)."""
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('schema')) / 'seojobs.db'}"
    # A budget no generated run can exhaust: 429s are tested in test_api_ratelimit.py.
    with api(make_settings(url, rate_limit="1000000/minute"), run_worker=False) as app:
        yield app.base, app.account("schemathesis")


# Bounded: ~20 operations x 25 examples keeps each run well under a minute.
EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    database=None,  # no .hypothesis directory in the work tree
    suppress_health_check=list(HealthCheck),
)
MAX_ID = 2**63 - 1
_NUMBER = re.compile(r"-?\d+")


def _fuzz(base: str, key: str, checks: list[Any]) -> None:
    # The document the running app serves, not one built beside it.
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    failures: dict[str, BaseException] = {}
    labels: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)

        @given(case=operation.as_strategy())
        @EXAMPLES
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers={"Authorization": key}, checks=checks)

        try:
            check()
        except (Exception, BaseExceptionGroup) as exc:  # report every broken operation
            failures[operation.label] = exc
    assert len(labels) >= len(OPERATION_IDS), labels
    assert not failures, "\n\n".join(f"== {label}\n{exc}" for label, exc in failures.items())


def test_no_server_errors_and_documented_answers_match_the_schema(
    running: tuple[str, Account],
) -> None:
    base, account = running
    _fuzz(base, account.key, [not_a_server_error, response_schema_conformance])


def test_error_answers_have_their_documented_content_type(running: tuple[str, Account]) -> None:
    base, account = running
    _fuzz(base, account.key, [content_type_conformance])


def test_v1_operations_document_their_problem_json_errors(running: tuple[str, Account]) -> None:
    base, _account = running
    document = httpx.get(f"{base}/openapi.json").json()
    missing = []
    for path, item in document["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in item.items():
            if method not in METHODS:
                continue
            wanted = {"401", "422", "429"} | ({"404"} if "{job_id}" in path else set())
            for code in sorted(wanted):
                content = operation.get("responses", {}).get(code, {}).get("content", {})
                if "application/problem+json" not in content:
                    missing.append(f"{method.upper()} {path} {code}")
    assert missing == []


def test_operation_ids_are_present_unique_and_stable(running: tuple[str, Account]) -> None:
    base, _account = running
    document = httpx.get(f"{base}/openapi.json").json()
    found = {
        (method, path): operation.get("operationId")
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }
    missing = [op for op, op_id in found.items() if not op_id]
    assert missing == []
    ids = list(found.values())
    assert len(ids) == len(set(ids)), "duplicate operationId"
    # Every operation named here keeps its id (new operations may be added).
    assert {op: found.get(op) for op in OPERATION_IDS} == OPERATION_IDS
