"""``backlink_refresh`` end to end on both stores: a real app and worker check donor pages of
a local site; ``/backlinks`` serves the latest check of every pair (404 before the first,
never starting a job), a second refresh after a link is removed shows it ``missing`` with
``last_changed`` moved and both checks in ``/backlinks/history``; 422s name the field; the
quota charges per pair; a schedule fires a job with its pairs as items."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from seojobs.engine import maintenance
from seojobs.kinds import load_registry
from seojobs.services import Services
from seojobs.services.quotas import day_start
from seojobs.settings import Settings
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from tests.api_helpers import TERMINAL, Api, api, assert_problem, error_fields
from tests.conftest import make_settings
from tests.fakes.donor_site import TARGET, DonorSite
from tests.waiting import wait_until

OTHER_TARGET = "https://other.example/"


@pytest.fixture
def served(store_url: str) -> Iterator[Api]:
    settings = make_settings(store_url, allow_private_networks=True)
    with api(settings, run_worker=True) as running:
        yield running


def _project(client: httpx.Client) -> int:
    answer = client.post("/v1/projects", json={"name": "links"})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["data"]["id"])


def _start(client: httpx.Client, project: int, params: dict[str, Any]) -> httpx.Response:
    body = {"type": "backlink_refresh", "params": params}
    return client.post(f"/v1/projects/{project}/jobs", json=body)


def _finished(client: httpx.Client, job_id: int) -> dict[str, Any]:
    done: dict[str, Any] = wait_until(
        lambda: (d := client.get(f"/v1/jobs/{job_id}").json()["data"])["status"] in TERMINAL and d,
        timeout=60,
    )
    return done


def _jobs(client: httpx.Client, project: int) -> list[int]:
    return [j["id"] for j in client.get(f"/v1/projects/{project}/jobs").json()["data"]]


def _by_donor(rows: list[dict[str, Any]], base: str) -> dict[str, dict[str, Any]]:
    return {r["donor"].removeprefix(base) + " " + r["target"]: r for r in rows}


def _run(client: httpx.Client, project: int, links: list[dict[str, str]]) -> int:
    started = _start(client, project, {"links": links})
    assert started.status_code == 202, started.text
    job_id = int(started.json()["data"]["id"])
    done = _finished(client, job_id)
    assert done["status"] == "completed", done["error"]
    return job_id


def test_a_refresh_reads_back_each_pairs_status_and_a_second_one_shows_the_change(
    served: Api,
) -> None:
    client = served.client(served.account())
    project = _project(client)
    read = f"/v1/projects/{project}/backlinks"
    before = assert_problem(client.get(read), 404)
    assert "backlink_refresh" in before["detail"]
    assert_problem(client.get(f"{read}/history", params={"donor": TARGET, "target": TARGET}), 404)
    assert _jobs(client, project) == []  # the reads started nothing
    site = DonorSite()
    with site.running() as base:
        links = [
            {"donor": f"{base}/post", "target": TARGET},
            {"donor": f"{base}/gallery", "target": TARGET},
            {"donor": f"{base}/private/post", "target": TARGET},
            {"donor": f"{base}/gone", "target": TARGET},
            {"donor": f"{base}/moved", "target": TARGET},
            {"donor": f"{base}/post", "target": OTHER_TARGET},
            # The first pair again, spelled otherwise: checked once.
            {"donor": f"{base}/post#again", "target": "HTTPS://target.example/landing/"},
        ]
        first = _run(client, project, links)
        assert site.hits["/post"] == 1  # two pairs (and a duplicate) share one fetch
        assert "/private/post" not in site.hits  # robots.txt obeyed
        job = client.get(f"/v1/jobs/{first}").json()["data"]
        assert job["counters"] == {
            "found": 2,
            "missing": 1,
            "blocked": 1,
            "donor_error": 1,
            "donor_redirected": 1,
        }
        items = client.get(f"/v1/jobs/{first}/items").json()["data"]
        assert len(items) == 6  # the duplicate pair once
        assert {"donor": f"{base}/post", "target": TARGET} in [i["input"] for i in items]

        body = client.get(read).json()
        assert body["next_cursor"] is None
        rows = _by_donor(body["data"], base)
        assert {k: r["link_status"] for k, r in rows.items()} == {
            f"/post {TARGET}": "found",
            f"/gallery {TARGET}": "found",
            f"/private/post {TARGET}": "blocked",
            f"/gone {TARGET}": "donor_error",
            f"/moved {TARGET}": "donor_redirected",
            f"/post {OTHER_TARGET}": "missing",
        }
        post = rows[f"/post {TARGET}"]
        assert post["job_id"] == first and post["collected_at"]
        data = post["data"]
        assert data["link_count_to_target"] == 2
        assert (data["href_raw"], data["anchor_text"], data["rel"]) == (TARGET, "again", [])
        assert data["links"][0]["rel"] == ["sponsored", "nofollow"]
        assert data["links"][0]["anchor_text"] == "our partner"
        assert (data["status_code"], data["indexable"], data["nofollow"]) == (200, True, False)
        assert post["first_seen"] == post["last_checked"] == post["last_changed"]
        assert post["first_seen"] == data["checked_at"]
        gallery = rows[f"/gallery {TARGET}"]["data"]
        assert (gallery["is_image_link"], gallery["anchor_text"]) == (True, "Target logo")
        assert gallery["href"] == TARGET  # resolved against <base href>
        assert gallery["page_nofollow"] is True and gallery["nofollow"] is True
        assert rows[f"/gone {TARGET}"]["data"]["status_code"] == 404
        moved = rows[f"/moved {TARGET}"]["data"]
        assert moved["final_url"] == f"{base}/landing-page"
        assert rows[f"/post {OTHER_TARGET}"]["first_seen"] is None

        # Filters and pages.
        missing = client.get(read, params={"link_status": "missing"}).json()["data"]
        assert [r["target"] for r in missing] == [OTHER_TARGET]
        by_target = client.get(read, params={"target": "http://OTHER.example"}).json()["data"]
        assert [r["target"] for r in by_target] == [OTHER_TARGET]
        assert len(client.get(read, params={"donor_domain": "127.0.0.1"}).json()["data"]) == 6
        assert client.get(read, params={"donor_domain": "elsewhere.test"}).json()["data"] == []
        page1 = client.get(read, params={"limit": 4}).json()
        page2 = client.get(read, params={"limit": 4, "cursor": page1["next_cursor"]}).json()
        assert page2["next_cursor"] is None
        assert [r["donor"] + r["target"] for r in page1["data"] + page2["data"]] == [
            r["donor"] + r["target"] for r in body["data"]
        ]

        # The donor drops its followed link: the next refresh finds only the sponsored one;
        # then drops that too.
        site.pages["/post"] = site.pages["/post"].replace(
            '<a href="https://target.example/landing/">again</a>', "again"
        )
        second = _run(client, project, links[:1])
        site.pages["/post"] = "<html><body><p>No links any more.</p></body></html>"
        third = _run(client, project, links[:1])

    rows = _by_donor(client.get(read).json()["data"], base)
    now = rows[f"/post {TARGET}"]
    assert (now["job_id"], now["link_status"], now["previous_status"]) == (
        third,
        "missing",
        "found",
    )
    assert now["first_seen"] == post["first_seen"]
    assert now["last_changed"] == now["last_checked"] == now["data"]["checked_at"]
    assert now["last_changed"] != post["last_changed"]
    assert rows[f"/gallery {TARGET}"]["job_id"] == first  # not checked again: as it was
    history = client.get(
        f"{read}/history", params={"donor": f"{base}/post", "target": TARGET}
    ).json()
    assert [(h["job_id"], h["link_status"]) for h in history["data"]] == [
        (third, "missing"),
        (second, "found"),
        (first, "found"),
    ]
    assert history["data"][1]["data"]["rel"] == ["sponsored", "nofollow"]
    assert history["data"][1]["last_changed"] == post["last_changed"]  # still found
    older = client.get(
        f"{read}/history",
        params={"donor": f"{base}/post", "target": TARGET, "limit": 2},
    ).json()
    rest = client.get(
        f"{read}/history",
        params={
            "donor": f"{base}/post",
            "target": TARGET,
            "limit": 2,
            "cursor": older["next_cursor"],
        },
    ).json()
    assert [h["job_id"] for h in older["data"] + rest["data"]] == [third, second, first]
    assert rest["next_cursor"] is None
    # One donor's pairs, one target's, or every pair's: newest first, paged.
    donor_only = client.get(f"{read}/history", params={"donor": f"{base}/post"}).json()["data"]
    assert [(h["job_id"], h["target"]) for h in donor_only] == [
        (third, TARGET),
        (second, TARGET),
        (first, OTHER_TARGET),  # a job collects its pairs in order: the later one is newer
        (first, TARGET),
    ]
    other = client.get(f"{read}/history", params={"target": "http://www.other.example"}).json()
    assert [(h["job_id"], h["donor"]) for h in other["data"]] == [(first, f"{base}/post")]
    everything = client.get(f"{read}/history", params={"limit": 5}).json()
    assert len(everything["data"]) == 5 and everything["next_cursor"]
    rest = client.get(f"{read}/history", params={"cursor": everything["next_cursor"]}).json()
    assert len(rest["data"]) == 3 and rest["next_cursor"] is None  # 6 + 1 + 1 checks
    assert sorted(_jobs(client, project)) == [first, second, third]  # reads started nothing


def test_bad_params_and_read_queries_are_422s_naming_the_field(served: Api) -> None:
    client = served.client(served.account())
    project = _project(client)
    good = {"donor": "https://d.example/", "target": "https://t.example/"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"links": [good, good, good, {"donor": "ftp://x", "target": TARGET}]}, "links[3].donor"),
        ({"links": [{"donor": "https://d.example/", "target": "t"}]}, "links[0].target"),
        ({"links": [{"donor": "https://d.example/"}]}, "links[0].target"),
        ({"links": [{**good, "extra": 1}]}, "links[0].extra"),
        ({"links": []}, "links"),
        ({"links": [good] * 1001}, "links"),
        ({"links": [good], "match": "host"}, "match"),
        ({"links": [good], "duplicates_removed": 3}, "duplicates_removed"),
        ({}, "links"),
    ]
    for params, field in cases:
        answer = _start(client, project, params)
        assert_problem(answer, 422)
        assert f"params.{field}" in error_fields(answer), (params, answer.text)
    read = f"/v1/projects/{project}/backlinks"
    assert "link_status" in error_fields(client.get(read, params={"link_status": "lost"}))
    assert "donor_domain" in error_fields(client.get(read, params={"donor_domain": "a/b"}))
    assert "cursor" in error_fields(client.get(read, params={"cursor": "x"}))
    assert "donor" in error_fields(client.get(f"{read}/history", params={"donor": "x" * 2049}))
    assert _jobs(client, project) == []
    # A pair given twice counts once (normalised), and says so.
    twice = _start(client, project, {"links": [good, {**good, "donor": "HTTPS://D.example"}]})
    assert twice.status_code == 202, twice.text
    assert twice.json()["data"]["items_total"] == 1


def test_the_quota_charges_per_pair(store_url: str) -> None:
    settings = make_settings(store_url, quota_backlink_checks_daily=3)
    with api(settings) as idle:
        client = idle.client(idle.account())
        project = _project(client)
        pairs = [{"donor": f"https://d.example/{n}", "target": TARGET} for n in range(2)]
        assert _start(client, project, {"links": pairs}).status_code == 202
        usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
        assert (usage["backlink_checks"]["used"], usage["backlink_checks"]["limit"]) == (2, 3)
        assert usage["backlink_checks_month"]["used"] == 2
        over = _start(client, project, {"links": pairs})
        assert over.status_code == 202, over.text
        job = client.get(f"/v1/jobs/{over.json()['data']['id']}").json()["data"]
        assert (job["status"], job["error"]["code"]) == ("failed", "quota_exceeded")
        assert "backlink_checks" in job["error"]["message"]
        assert_problem(client.get(f"/v1/projects/{project}/backlinks"), 404)


def test_a_schedule_fires_a_refresh_with_its_pairs_and_at_quota_a_refused_one(
    db: Database, settings: Settings
) -> None:
    services = Services(db, settings, load_registry(settings))
    user = services.accounts.create_user("alice").user
    pairs = [{"donor": f"https://d.example/{n}", "target": TARGET} for n in range(3)]
    t0 = day_start(utcnow()) + timedelta(hours=1)  # every tick below is in one UTC day
    made = services.schedules.create(
        user,
        name="links",
        kind="backlink_refresh",
        params={"links": pairs},
        every_seconds=3600,
        start_at=t0,
    )
    fire = services.schedules.fire
    assert maintenance.run_once(services.db, services.settings, "a", t0, fire).fired == 1
    [job] = [j for j in services.jobs.page(user) if j.kind == "backlink_refresh"]
    assert (job.state, job.items_total, job.schedule_id) == ("pending", 3, made.id)
    inputs = [json.loads(i.input) for i in services.jobs.items(user, job.id)]
    assert inputs == pairs

    user = services.quotas.set_limits(user, {"backlink_checks_daily": 5})
    later = t0 + timedelta(hours=1)
    assert maintenance.run_once(services.db, services.settings, "a", later, fire).fired == 1
    refused = max(
        (j for j in services.jobs.page(user) if j.kind == "backlink_refresh"), key=lambda j: j.id
    )
    assert refused.state == "failed" and refused.error_code == "quota_exceeded"
    assert "daily backlink_checks quota" in (refused.error_message or "")
