"""``GET /v1/projects/{id}/domain`` over real HTTP on both stores, with the in-process worker:
404 problem+json before the first lookup (and the read starts none), a lookup started through
the projects API read back, several domains per project, bad params named by field, the job
type's schema and the quotas in usage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api_helpers import TERMINAL, Api, api, assert_problem, error_fields
from tests.conftest import make_settings
from tests.integration.domain_world import DOMAIN, World, domain_world
from tests.waiting import wait_until


@pytest.fixture
def served(
    store_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Api, World]]:
    with domain_world(monkeypatch, tmp_path) as world:
        settings = make_settings(store_url, allow_private_networks=True)
        with api(settings, run_worker=True) as running:
            yield running, world


def _jobs(client: httpx.Client, project: int) -> list[int]:
    answer = client.get(f"/v1/projects/{project}/jobs")
    assert answer.status_code == 200, answer.text
    return [j["id"] for j in answer.json()["data"]]


def _lookup(client: httpx.Client, project: int, domain: str) -> dict[str, object]:
    body = {"type": "domain_lookup", "params": {"domain": domain}}
    started = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert started.status_code == 202, started.text
    job_id = started.json()["data"]["id"]
    done: dict[str, object] = wait_until(
        lambda: (d := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"] in TERMINAL and d,
        timeout=60,
    )
    return done


def test_the_domain_read_serves_the_latest_lookup_and_never_starts_one(
    served: tuple[Api, World],
) -> None:
    app, world = served
    client = app.client(app.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    read = f"/v1/projects/{project}/domain"
    before = assert_problem(client.get(read), 404)
    assert "domain_lookup" in before["detail"]
    assert_problem(client.get(read, params={"domain": DOMAIN}), 404)
    assert _jobs(client, project) == []  # reading started nothing
    assert world.rdap.hits == {} and world.dns.queries == []  # and fetched nothing

    first = _lookup(client, project, DOMAIN)
    assert first["status"] == "completed", first["error"]
    second = _lookup(client, project, "other.example")
    assert second["status"] == "completed", second["error"]

    latest = client.get(read)
    assert latest.status_code == 200, latest.text
    body = latest.json()
    assert set(body) == {"domain", "job_id", "collected_at", "data"}
    assert (body["domain"], body["job_id"]) == ("other.example", second["id"])
    one = client.get(read, params={"domain": "EXAMPLE.test."}).json()  # as a user types it
    assert (one["domain"], one["job_id"]) == (DOMAIN, first["id"])
    assert one["collected_at"] and one["data"]["dns"]["records"]["A"] == ["127.0.0.1"]
    assert one["data"]["rdap"]["registrar"]["iana_id"] == "376"
    assert one["data"]["tls"]["verified"] is True
    assert_problem(client.get(read, params={"domain": "never.example"}), 404)
    assert_problem(client.get(read, params={"domain": "not a domain"}), 404)
    assert sorted(_jobs(client, project)) == [first["id"], second["id"]]  # reads started none

    usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    assert usage["domain_lookups"]["used"] == 2 and usage["domain_lookups"]["period"] == "day"
    assert usage["domain_lookups_month"]["used"] == 2
    assert usage["domain_lookups_month"]["period"] == "month"


def test_bad_domains_are_refused_naming_the_field(served: tuple[Api, World]) -> None:
    app, _world = served
    client = app.client(app.account())
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    jobs = f"/v1/projects/{project}/jobs"
    for domain in ("https://example.com/", "192.0.2.1", "example", 7, None):
        body = {"type": "domain_lookup", "params": {"domain": domain}}
        assert error_fields(client.post(jobs, json=body)) == ["params.domain"], domain
    missing = client.post(jobs, json={"type": "domain_lookup", "params": {}})
    assert error_fields(missing) == ["params.domain"]
    extra = {"type": "domain_lookup", "params": {"domain": DOMAIN, "port": 8443}}
    assert error_fields(client.post(jobs, json=extra)) == ["params.port"]
    assert _jobs(client, project) == []
    types = {t["name"]: t for t in client.get("/v1/job-types").json()["data"]}
    schema = types["domain_lookup"]["params_schema"]
    assert schema["required"] == ["domain"]
    assert schema["properties"]["domain"]["format"] == "idn-hostname"
