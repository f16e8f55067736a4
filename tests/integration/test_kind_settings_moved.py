"""Settings that moved from the central ``Settings`` into a kind's own model (issue 23.2) reach
the kind by the kind's new prefixed environment name and by the name they had before, through
the paths that use them: a job's creation (its refusal), and a worker running it.

What a job meets without either name set is the same for every test of a kind of setting: one
app each for the module (``shipped``, ``unconfigured``), started before any test sets a name,
each test as its own users; an app started after a test sets a name is that test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seojobs.settings import Settings
from tests.api_helpers import Api, api, assert_problem, owned
from tests.conftest import NO_PROVIDERS, make_settings, migrated_sqlite
from tests.waiting import wait_until

URLS = ["https://a.example/1"]
NAMES = ["old", "new"]


def _settings(url: str, *dropped: str, **overrides: Any) -> Settings:
    """The test settings without the keywords ``dropped`` (a keyword beats the environment)."""
    settings = make_settings(url, **overrides)
    kept = {k: v for k, v in settings.kind_overrides.items() if k not in dropped}
    return settings.model_copy(update={"kind_overrides": kept})


# The test settings' own provider orders, dropped so that the shipped ones (or the environment's)
# apply.
DROPPED = ("submit_providers", "check_providers")


def _module_app(settings: Settings) -> Iterator[Api]:
    with api(settings) as app:
        app.shared = True
        yield app


@pytest.fixture(scope="module")
def shipped_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    url = migrated_sqlite(tmp_path_factory.mktemp("shipped"))
    yield from _module_app(_settings(url, *DROPPED, openai_api_key="k"))


@pytest.fixture
def shipped(shipped_app: Api) -> Iterator[Api]:
    """The shipped provider orders, no name set (every provider they list is configured)."""
    yield from owned(shipped_app)


@pytest.fixture(scope="module")
def unconfigured_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    url = migrated_sqlite(tmp_path_factory.mktemp("unconfigured"))
    yield from _module_app(make_settings(url, **NO_PROVIDERS))


@pytest.fixture
def unconfigured(unconfigured_app: Api) -> Iterator[Api]:
    """No provider configured, no name set."""
    yield from owned(unconfigured_app)


def _project(app: Api, name: str = "alice") -> tuple[Any, int]:
    client = app.client(app.account(name))
    made = client.post("/v1/projects", json={"name": "p"})
    assert made.status_code == 201, made.text
    return client, int(made.json()["data"]["id"])


# (kind, the old name, the kind's name, the order that leaves it no provider, its params)
ORDERS = [
    (
        "index_submit",
        "SEOJOBS_SUBMIT_PROVIDERS",
        "SEOJOBS_INDEX_SUBMIT_PROVIDERS",
        '{"bing": []}',
        {"urls": URLS, "engine": "bing"},
    ),
    (
        "index_check",
        "SEOJOBS_CHECK_PROVIDERS",
        "SEOJOBS_INDEX_CHECK_PROVIDERS",
        '{"bing": []}',
        {"urls": URLS, "engine": "bing"},
    ),
    (
        "keyword_research",
        "SEOJOBS_KEYWORD_PROVIDERS",
        "SEOJOBS_KEYWORD_RESEARCH_PROVIDERS",
        '{"google": []}',
        {"seeds": ["hose reel"]},
    ),
    (
        "rank_check",
        "SEOJOBS_RANK_PROVIDERS",
        "SEOJOBS_RANK_CHECK_PROVIDERS",
        '{"google": []}',
        {"keywords": ["hose reel"], "target": "example.com"},
    ),
    (
        "geo_lookup",
        "SEOJOBS_GEO_PROVIDERS",
        "SEOJOBS_GEO_LOOKUP_PROVIDERS",
        "[]",
        {"prompts": ["best hose reel"], "domain": "acme.example"},
    ),
]


@pytest.mark.parametrize("named", NAMES)
@pytest.mark.parametrize(
    ("kind", "old", "new", "order", "params"), ORDERS, ids=[o[0] for o in ORDERS]
)
def test_a_provider_order_reaches_the_kind_by_either_name(
    shipped: Api,
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    named: str,
    kind: str,
    old: str,
    new: str,
    order: str,
    params: dict[str, Any],
) -> None:
    """Every provider the shipped order lists is configured, so a job is accepted; the order
    set by either name lists none, so the same job is refused, naming the kind's setting."""
    job = {"type": kind, "params": params}
    client, project = _project(shipped)
    made = client.post(f"/v1/projects/{project}/jobs", json=job)
    assert made.status_code == 202, made.text
    monkeypatch.setenv(old if named == "old" else new, order)
    with api(_settings(sqlite_url, *DROPPED, openai_api_key="k")) as app:
        client, project = _project(app, "bob")
        body = assert_problem(client.post(f"/v1/projects/{project}/jobs", json=job), 422)
        assert body["type"].endswith("/provider_not_configured"), body
        assert new in body["detail"], body


@pytest.mark.parametrize("named", NAMES)
def test_diagnostics_only_reaches_index_checks_by_either_name(
    unconfigured: Api, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    job = {"type": "index_check", "params": {"urls": URLS, "engine": "bing"}}
    client, project = _project(unconfigured)
    refused = client.post(f"/v1/projects/{project}/jobs", json=job)
    assert_problem(refused, 422)
    env = (
        "SEOJOBS_CHECK_DIAGNOSTICS_ONLY"
        if named == "old"
        else "SEOJOBS_INDEX_CHECK_DIAGNOSTICS_ONLY"
    )
    monkeypatch.setenv(env, "true")
    with api(make_settings(sqlite_url, **NO_PROVIDERS)) as app:
        client, project = _project(app, "bob")
        made = client.post(f"/v1/projects/{project}/jobs", json=job)
        assert made.status_code == 202, made.text


@pytest.mark.parametrize("named", NAMES)
def test_the_fingerprints_path_reaches_tech_stack_by_either_name(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, named: str
) -> None:
    missing = tmp_path / f"{named}-fingerprints.json"
    env = "SEOJOBS_FINGERPRINTS_PATH" if named == "old" else "SEOJOBS_TECH_STACK_FINGERPRINTS_PATH"
    monkeypatch.setenv(env, str(missing))
    with api(_settings(sqlite_url, "fingerprints_path")) as app:
        client, project = _project(app)
        job = {"type": "tech_stack", "params": {"urls": URLS}}
        body = assert_problem(client.post(f"/v1/projects/{project}/jobs", json=job), 422)
        assert body["type"].endswith("/fingerprints_missing"), body
        assert str(missing) in body["detail"]


@pytest.mark.parametrize("named", NAMES)
def test_the_chrome_path_reaches_a_web_vitals_worker_by_either_name(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, named: str
) -> None:
    """The worker's job fails before it starts anything: no Chromium where the setting says
    (so nothing is dialled)."""
    chrome = tmp_path / f"{named}-chromium"
    env = "SEOJOBS_CHROME_PATH" if named == "old" else "SEOJOBS_WEB_VITALS_CHROME_PATH"
    monkeypatch.setenv(env, str(chrome))
    with api(make_settings(sqlite_url), run_worker=True) as app:
        client, project = _project(app)
        job = {"type": "web_vitals", "params": {"urls": URLS}}
        made = client.post(f"/v1/projects/{project}/jobs", json=job)
        assert made.status_code == 202, made.text
        job_id = made.json()["data"]["id"]

        def final() -> dict[str, Any] | None:
            found: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
            return found if found["status"] in ("completed", "failed") else None

        done = wait_until(final)
    assert done["status"] == "failed", done
    assert str(chrome) in done["error"]["message"], done
