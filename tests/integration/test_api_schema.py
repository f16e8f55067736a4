"""The OpenAPI document against the running app, on each store: schemathesis generates valid
and invalid requests for every operation (authenticated with a real key) and runs all its
checks: no 5xx, answers as documented, valid requests accepted, invalid ones refused. Each
generated request goes to both stores (generating is most of the CPU: once, not once per
store). Also: every operation has a unique, stable ``operationId``."""

from __future__ import annotations

import contextlib
import functools
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from tests.api_helpers import Account, api
from tests.conftest import STORES, make_settings, migrated_sqlite, pg_database

# schemathesis is imported where the generated requests are made, not here: every pytest
# process collects this module (about 0.3 CPU-s for schemathesis' import, its pytest plug-in
# is off: pyproject.toml) and one of them runs its one generating test.
if TYPE_CHECKING:
    import schemathesis
    from schemathesis.generation import GenerationMode
    from schemathesis.transport.requests import ManagedCookiesSession

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
    ("post", "/v1/projects/{project_id}/backlinks/analysis/monitor"): "monitor_found_backlinks",
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
    ("get", "/v1/projects/{project_id}/domain"): "get_domain_data",
    ("get", "/v1/projects/{project_id}/tech-stack"): "get_tech_stack",
    ("get", "/v1/projects/{project_id}/web-vitals"): "get_web_vitals",
    ("get", "/v1/projects/{project_id}/web-vitals/history"): "list_web_vitals_history",
    ("get", "/v1/projects/{project_id}/rankings"): "list_rankings",
    ("get", "/v1/projects/{project_id}/rankings/history"): "list_rankings_history",
    ("get", "/v1/projects/{project_id}/geo"): "list_geo",
    ("get", "/v1/projects/{project_id}/geo/history"): "list_geo_history",
}
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@contextlib.contextmanager
def _serving(store: str, request: pytest.FixtureRequest) -> Iterator[tuple[str, Account]]:
    """An app on a new database of ``store`` (no worker: generated URLs are never fetched).
    PostgreSQL comes from the suite's template, so with CI=true a missing server fails."""
    if store == "postgresql":
        database: contextlib.AbstractContextManager[str] = pg_database(
            request.getfixturevalue("pg_template")
        )
    else:
        factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
        database = contextlib.nullcontext(migrated_sqlite(factory.mktemp("schema")))
    # The product's own job types (no test plug-ins): the document a deployment serves. A
    # budget no generated run can exhaust: 429s are tested in test_api_ratelimit.py.
    with database as url, api(make_settings(url, rate_limit="1000000/minute", plugins=[])) as app:
        yield app.base, app.account("schemathesis")


@pytest.fixture(scope="module", params=STORES)
def running(request: pytest.FixtureRequest) -> Iterator[tuple[str, Account]]:
    """One app per store for the document's tests."""
    with _serving(request.param, request) as served:
        yield served


@pytest.fixture
def every_store(request: pytest.FixtureRequest) -> Iterator[dict[str, tuple[str, Account]]]:
    """An app on each store, side by side, for the generated requests. Off CI, without a
    PostgreSQL server, SQLite's alone (with CI=true a missing server fails)."""
    with contextlib.ExitStack() as stack:
        served = {}
        for store in STORES:
            try:
                served[store] = stack.enter_context(_serving(store, request))
            except pytest.skip.Exception:
                continue
        yield served


# Bounded (about half a minute per store): a few derandomized examples per operation and mode.
EXAMPLES = settings(
    max_examples=8,
    derandomize=True,
    deadline=None,
    database=None,  # no .hypothesis directory in the work tree
    suppress_health_check=list(HealthCheck),
)


@functools.cache
def _checks() -> list[Callable[..., Any]]:
    """Every check schemathesis has (``--checks all``). The stateful ones (use_after_free,
    ensure_resource_availability) need a recorded scenario and pass on single cases."""
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    return list(CHECKS.get_all())


def _cron_or_start_at(case: schemathesis.Case) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    return body.get("cron") is not None or body.get("start_at") is not None


# Narrow exclusions, each for a rule JSON Schema cannot state (the API refuses with a 422 naming
# the field, tested in test_schedules.py): a schedule's cron must be a valid expression firing
# at most once a minute, and its start_at within a day ago to ten years from now. Only the cases
# that carry one skip the check; the interval's bounds are in the document (from the settings).
def _has(name: str) -> Any:
    def given(case: schemathesis.Case) -> bool:
        return isinstance(case.body, dict) and case.body.get(name) is not None

    return given


# A webhook's URL (and a job's webhook_url) must also pass the address policy, which no
# schema states: a generated private or loopback address is refused (tested in
# test_webhooks.py).
POLICY = {"positive_data_acceptance"}
UNSTATABLE = {
    ("POST", "/v1/projects/{project_id}/schedules"): (
        {"positive_data_acceptance"},
        _cron_or_start_at,
    ),
    # An enabled collection's params are checked with what the project tracks then (a rank
    # check of a project with no tracked keyword has none): no schema can state it
    # (test_project_tracking.py checks each refusal names its field).
    ("PUT", "/v1/projects/{project_id}/collection"): (
        {"positive_data_acceptance"},
        lambda case: isinstance(case.body, dict) and bool(case.body),
    ),
    ("POST", "/v1/webhooks"): (POLICY, _has("url")),
    ("PATCH", "/v1/webhooks/{webhook_id}"): (POLICY, _has("url")),
    ("POST", "/api/v1/index-submit/jobs"): (POLICY, _has("webhook_url")),
    ("POST", "/api/v1/index-check/jobs"): (POLICY, _has("webhook_url")),
    ("POST", "/v1/projects/{project_id}/jobs"): (POLICY, _has("webhook_url")),
}


# Where each store's requests go: its base URL, the key they carry and one session, kept alive
# across the cases as ``schemathesis run`` keeps its own (a ``ManagedCookiesSession``: it drops
# the cookies an answer sets before the next case, as a new session per call would). Without
# it each call (some 2,700 and the checks' own) opened and closed a connection: about 0.5 ms
# of CPU each, both ends of the socket. Generating the cases is most of the rest.
Target = tuple[str, Account, "ManagedCookiesSession"]


def _session(session: ManagedCookiesSession) -> ManagedCookiesSession:
    # Loopback only: no proxy variables nor ~/.netrc to read on each call (requests does, for
    # a session that trusts the environment).
    session.trust_env = False
    return session


def _fuzz(operation: Any, mode: GenerationMode, targets: dict[str, Target]) -> None:
    skipped, applies = UNSTATABLE.get((operation.method.upper(), operation.path), (set(), None))
    every = _checks()
    narrowed = [check for check in every if check.__name__ not in skipped]

    @given(case=operation.as_strategy(generation_mode=mode))
    @EXAMPLES
    def check(case: schemathesis.Case) -> None:
        checks = narrowed if applies is not None and applies(case) else every
        for store, (base, account, session) in targets.items():  # the same request to each store
            try:
                headers = {"Authorization": account.key}
                case.call_and_validate(
                    base_url=base, session=session, headers=headers, checks=checks
                )
            except (Exception, BaseExceptionGroup) as exc:
                exc.add_note(f"on {store}")
                raise

    with contextlib.suppress(Unsatisfiable):  # nothing about the operation can be made invalid
        check()


# Every operation times 8 examples, plus each check's negative cases, on each store: a minute
# or two on a quiet machine, and it grows with the routes; the suite's 120 s is for hangs.
# ``slow``: the suite's longest test, scheduled first (tests/scheduling.py).
@pytest.mark.slow
@pytest.mark.timeout(900)
# Hypothesis warns when the global ``random`` state changes while it draws a case, and cannot
# tell its strategy from another thread: PostgreSQL's connection pool (psycopg_pool) draws a
# jitter from ``random`` each time its background thread opens a connection, which under load
# fell inside a draw and failed this test (filterwarnings=error). Our strategies use none.
@pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies"
    ":hypothesis.errors.HypothesisDeprecationWarning"
)
def test_every_check_passes_on_generated_requests(
    every_store: dict[str, tuple[str, Account]],
) -> None:
    import schemathesis
    from schemathesis.transport.requests import ManagedCookiesSession

    # The document the running apps serve, not one built beside it: the same on each store,
    # so the requests generated from it are each store's.
    documents = {
        store: httpx.get(f"{base}/openapi.json", timeout=60)
        for store, (base, _) in every_store.items()
    }
    first = next(iter(every_store.values()))[0]
    assert len({answer.text for answer in documents.values()}) == 1, list(documents)
    schema = schemathesis.openapi.from_url(f"{first}/openapi.json")
    with contextlib.ExitStack() as stack:
        targets = {
            store: (base, account, stack.enter_context(_session(ManagedCookiesSession())))
            for store, (base, account) in every_store.items()
        }
        failures, labels = _fuzz_all(schema, targets)
    assert len(labels) >= len(OPERATION_IDS), labels
    # Each failure whole: a flaky one's sub-exceptions and the store each happened on (its
    # note), which str() of an exception group leaves out.
    assert not failures, "\n\n".join(
        f"== {label}\n{''.join(traceback.format_exception(exc))}" for label, exc in failures.items()
    )


@contextlib.contextmanager
def _regexes_built_once() -> Iterator[None]:
    """Each regex's strategy built once for the whole run. schemathesis builds a pattern's
    strategy in the draw (a negative case's mutated schema), and Hypothesis builds it again
    each time a ``.filter``/``.map`` wraps the lazy ``from_regex`` (twice when the alphabet
    is a strategy): the same 15 patterns were built 242 times in the 20 job operations, the
    URL pattern 24 of them, about a quarter of the generating CPU. A regex's strategy is a
    function of the pattern, its flags, fullmatch and the alphabet, and holds no state: the
    same cases are drawn from it. Hypothesis' internals: if a release renames them, each is
    built as before (slower, as correct)."""
    try:
        from hypothesis.strategies._internal import regex
    except ImportError:
        yield
        return
    build = getattr(regex, "regex_strategy", None)
    if build is None:
        yield
        return
    built: dict[tuple[Any, ...], Any] = {}

    def once(pattern: Any, fullmatch: bool, *, alphabet: Any, **kwargs: Any) -> Any:
        try:
            key = (
                type(pattern),
                getattr(pattern, "pattern", pattern),
                getattr(pattern, "flags", None),
                fullmatch,
                tuple(alphabet.intervals.intervals),
                tuple(sorted(kwargs.items())),
            )
            strategy = built.get(key)
        except (AttributeError, TypeError):  # an alphabet not of characters: as it was
            return build(pattern, fullmatch, alphabet=alphabet, **kwargs)
        if strategy is None:
            strategy = built[key] = build(pattern, fullmatch, alphabet=alphabet, **kwargs)
        return strategy

    regex.regex_strategy = once
    try:
        yield
    finally:
        regex.regex_strategy = build


def _fuzz_all(
    schema: Any, targets: dict[str, Target]
) -> tuple[dict[str, BaseException], list[str]]:
    """Every operation in each generation mode: what failed (each label's) and the labels."""
    with _regexes_built_once():
        return _fuzz_each(schema, targets)


def _fuzz_each(
    schema: Any, targets: dict[str, Target]
) -> tuple[dict[str, BaseException], list[str]]:
    from schemathesis.generation import GenerationMode

    failures: dict[str, BaseException] = {}
    labels: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)
        for mode in GenerationMode:
            try:
                _fuzz(operation, mode, targets)
            except (Exception, BaseExceptionGroup) as exc:  # report every broken operation
                failures[f"{operation.label} ({mode})"] = exc
    return failures, labels


def test_v1_operations_document_their_problem_json_errors(running: tuple[str, Account]) -> None:
    base, _account = running
    document = httpx.get(f"{base}/openapi.json", timeout=60).json()
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
    document = httpx.get(f"{base}/openapi.json", timeout=60).json()
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
