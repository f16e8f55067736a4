"""One rule for single-line text (``seojobs.api.text``) on every surface, over HTTP on SQLite (text
kept as sent on both stores): job titles (v1, v2, projects API), project and schedule names and cron
expressions refuse C0 and C1 control characters and DEL with a 422 naming the field, and store
nothing. v1 and v2 titles used to take CR and LF while the projects API refused them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api_helpers import (
    V1,
    Api,
    error_fields,
    shared_idle_per_test,  # noqa: F401 (the module's ``idle``: one app per store)
    stored,
)
from tests.conftest import STORES

# Store-agnostic (text is refused before any store call): SQLite only; the
# store's own behaviour is tested on both stores elsewhere.
pytestmark = pytest.mark.stores("sqlite")

URL = "https://a.example/page"
CONTROLS = {
    "LF": "a\nb",
    "CR": "a\rb",
    "CRLF at the end": "title\r\n",
    "tab": "a\tb",
    "escape": "\x1b[31mred",
    "SOH": "\x01",
    "unit separator": "a\x1fb",
    "DEL": "a\x7f",
    "NEL (C1)": "a\x85b",
    "CSI (C1)": "\x9b31m",
    "APC (C1)": "a\x9f",
}
FINE = ["Café — launch ✓", "日本語のタイトル", "a\u2028b is not C0 or C1", "t" * 190]

Post = Callable[[httpx.Client, int, str], httpx.Response]
SURFACES: dict[str, tuple[str, Post]] = {
    "v1 submit title": ("title", lambda c, p, t: c.post(f"{V1}/index-submit/jobs", json=_v1(t))),
    "v1 check title": ("title", lambda c, p, t: c.post(f"{V1}/index-check/jobs", json=_v1(t))),
    "v2 indexer title": (
        "title",
        lambda c, p, t: c.post("/v2/task/google/indexer/create", json=_v1(t)),
    ),
    "v2 checker title": (
        "title",
        lambda c, p, t: c.post("/v2/task/yandex/checker/create", json=_v1(t)),
    ),
    "projects job title": (
        "title",
        lambda c, p, t: c.post(f"/v1/projects/{p}/jobs", json={"type": "test_noop", "title": t}),
    ),
    "project name": ("name", lambda c, p, t: c.post("/v1/projects", json={"name": t})),
    "schedule name": (
        "name",
        lambda c, p, t: c.post(f"/v1/projects/{p}/schedules", json=_schedule(t)),
    ),
}


def _v1(title: str) -> dict[str, Any]:
    return {"urls": [URL], "title": title}


def _schedule(name: str) -> dict[str, Any]:
    return {"name": name, "type": "test_noop", "every_days": 1}


@pytest.mark.parametrize("surface", list(SURFACES))
def test_control_characters_are_422_naming_the_field(idle: Api, surface: str) -> None:
    client = idle.client(idle.account(rate_limit="1000000/minute"), in_process=True)
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    before = stored(idle)
    wanted, post = SURFACES[surface]
    for label, text in CONTROLS.items():
        if wanted == "name" and label == "CRLF at the end":
            continue  # names are trimmed first (test_names_are_still_trimmed)
        answer = post(client, project, text)
        assert error_fields(answer) == [wanted], (text, answer.text)
        assert "control character" in answer.json()["errors"][0]["message"]
    assert stored(idle) == before


@pytest.mark.stores(*STORES)  # kept as sent: through the store and back
@pytest.mark.parametrize("surface", list(SURFACES))
def test_other_text_is_kept_as_sent(idle: Api, surface: str) -> None:
    client = idle.client(idle.account(rate_limit="1000000/minute"), in_process=True)
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    _field, post = SURFACES[surface]
    for index, text in enumerate(FINE):
        # Names are unique per project (or user): the index keeps them apart.
        sent = f"{text} {index}" if surface.endswith("name") else text
        answer = post(client, project, sent)
        assert answer.status_code in (200, 201, 202), answer.text
        assert kept(client, answer.json()) == sent


def kept(client: httpx.Client, body: dict[str, Any]) -> str:
    """The title or name the server stored, read back as the projects API shows it."""
    if "data" in body and "name" in body["data"]:  # a project or a schedule
        return str(body["data"]["name"])
    job_id = body.get("job_id") or body.get("task_id") or body["data"]["id"]
    return str(client.get(f"/v1/jobs/{job_id}").json()["data"]["title"])


def test_names_are_still_trimmed(idle: Api) -> None:
    """Whitespace around a name is not part of it (a pasted newline); inside, it is refused."""
    client = idle.client(idle.account())
    made = client.post("/v1/projects", json={"name": " site\r\n"}).json()["data"]
    assert made["name"] == "site"
    assert error_fields(client.post("/v1/projects", json={"name": "si\nte"})) == ["name"]


def test_cron_expressions_are_one_line_too(idle: Api) -> None:
    """croniter took these (a trailing newline, tabs between fields), and they were stored."""
    client = idle.client(idle.account())
    project = client.post("/v1/projects", json={"name": "p"}).json()["data"]["id"]
    path = f"/v1/projects/{project}/schedules"
    for cron in ("0 3 * * *\n", "0\t3 * * *", "\r0 3 * * *", "0 3 * * *\x85"):
        answer = client.post(path, json={"name": "n", "type": "test_noop", "cron": cron})
        assert error_fields(answer) == ["cron"], answer.text
        assert "control character" in answer.json()["errors"][0]["message"]
    made = client.post(path, json={"name": "n", "type": "test_noop", "cron": "0 3 * * *"})
    assert made.json()["data"]["cron"] == "0 3 * * *"
