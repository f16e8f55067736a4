"""A plug-in kind's quota (tests/acme: 10 page x device checks a month, declared in the kind,
nowhere in seojobs) is charged and enforced at creation; the deployment's variable of the same
pattern as the built-in ones (``SEOJOBS_QUOTA_ACME_PAGES_MONTHLY``) sets its limit, and a
user's own limit overrides both. No worker runs: quotas are charged when a job is created."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api_helpers import api
from tests.conftest import make_settings

PLUGINS = ["tests.kinds", "tests.acme"]
SIX = {"site": "acme.example", "pages": {"/": 1, "/a": 2, "/b": 3}, "devices": ["m", "d"]}


def _start(client: httpx.Client, project: int) -> dict[str, Any]:
    answer = client.post(f"/v1/projects/{project}/jobs", json={"type": "acme_audit", "params": SIX})
    assert answer.status_code == 202, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def _acme_usage(client: httpx.Client) -> tuple[int, int]:
    usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    return usage["acme_pages"]["used"], usage["acme_pages"]["limit"]


def test_a_plugin_quota_is_set_by_its_variable_charged_and_enforced(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOJOBS_QUOTA_ACME_PAGES_MONTHLY", "13")
    with api(make_settings(sqlite_url, plugins=PLUGINS)) as app:
        alice = app.account()
        c = app.client(alice)
        project = c.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        assert _acme_usage(c) == (0, 13)
        assert _start(c, project)["status"] == "pending"
        assert _start(c, project)["status"] == "pending"
        assert _acme_usage(c) == (12, 13)
        refused = _start(c, project)  # 6 more would be 18 of 13
        assert refused["status"] == "failed"
        assert refused["error"]["code"] == "quota_exceeded"
        assert "monthly acme_pages quota (12 of 13 used)" in refused["error"]["message"]
        assert _acme_usage(c) == (12, 13)  # a refused job charges nothing

        # A user's own limit overrides the deployment's (set before the user's first request:
        # the API keeps an authenticated user a moment); others keep the deployment's.
        bob = app.account("bob")
        app.services.quotas.set_limits(bob.user, {"acme_pages_monthly": 18})
        b = app.client(bob)
        mine = b.post("/v1/projects", json={"name": "acme"}).json()["data"]["id"]
        assert [_start(b, mine)["status"] for _ in range(3)] == ["pending"] * 3
        assert _acme_usage(b) == (18, 18)
        assert _acme_usage(app.client(app.account("carol"))) == (0, 13)


def test_usage_lists_every_quota_the_registry_declares_with_its_limit(sqlite_url: str) -> None:
    settings = make_settings(sqlite_url, plugins=PLUGINS, quota_rank_keywords_monthly=7)
    with api(settings) as app:
        listed = app.client(app.account()).get("/v1/usage").json()["data"]
        declared = app.services.registry.quotas()  # the count is the registry's, not kept here
        assert sorted(q["quota"] for q in listed) == sorted(declared)
        for row in listed:
            quota = declared[row["quota"]]
            assert (row["limit"], row["period"]) == (quota.limit(settings), quota.period)
        limits = {q["quota"]: q["limit"] for q in listed}
        assert (limits["rank_keywords_month"], limits["rank_keywords"]) == (7, 2_000)
