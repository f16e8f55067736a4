"""The site audit's dashboard view (issue 28), over two real audits of the fixture site on both
stores: the health score and its trend, issues by severity with their explanations, each
issue's affected pages with the evidence and the API's CSV, the pages (keyset pages), one
page's issues, new and fixed against the previous audit. Reading never starts a job, and
another user gets the 404 page at every address of the view."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from seojobs.kinds.site_audit.checks import CATALOGUE
from tests.api_helpers import Api, api
from tests.conftest import make_settings
from tests.dashboard_helpers import csrf_of, sign_in
from tests.fakes.audit_site import PAGES, REACHED, AuditSite
from tests.fakes.audit_site import html as page_html
from tests.integration.test_api_audits import _completed

ABOUT = {c.code: c.description for c in CATALOGUE}


@pytest.fixture
def served(store_url: str) -> Iterator[Api]:
    settings = make_settings(store_url, allow_private_networks=True)
    with api(settings, run_worker=True) as running:
        yield running


def _text(page: str) -> str:
    """The page's text, tags dropped and spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _links(page: str, prefix: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', page) if h.startswith(prefix)]


def _row_headers(page: str) -> list[str]:
    """The text of each table row's header cell (the page URL or the issue code)."""
    cells = re.findall(r'<th scope="row"[^>]*>(.*?)</th>', page, re.S)
    return [_text(c) for c in cells]


def _path(url: str) -> str:
    return urlsplit(url).path


def test_an_audits_view_goes_from_its_health_to_the_pages_of_each_issue(
    served: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = served.account()
    client = served.client(alice)
    project = client.post("/v1/projects", json={"name": "site"}).json()["data"]["id"]
    with AuditSite().running() as base:
        params = {"start_url": f"{base}/", "thresholds": {"slow_response_ms": 600_000}}
        first = _completed(client, project, params)
        # Between the audits the site fixes its missing title and loses an h1.
        monkeypatch.setitem(PAGES, "/no-title", page_html("no-title"))
        monkeypatch.setitem(PAGES, "/clean/2", page_html("clean-2", h1=(), links=("/", "/clean/1")))
        second = _completed(client, project, params)
    audits = client.get(f"/v1/projects/{project}/audits").json()["data"]
    scores = {a["job_id"]: a["data"]["health_score"] for a in audits}
    issues = client.get(
        f"/v1/projects/{project}/audits/{second}/issues", params={"limit": 1000}
    ).json()["data"]
    jobs_before = client.get(f"/v1/projects/{project}/jobs").json()["data"]
    browser = sign_in(served, alice.key)
    view = f"/dashboard/jobs/{second}/view"

    # The audit's job page links to its view; its items show their input as text.
    job_page = browser.get(f"/dashboard/jobs/{second}")
    assert job_page.status_code == 200
    assert view in _links(job_page.text, "/dashboard/jobs/")
    assert f"{base}/, depth 0" in _text(job_page.text)
    assert "'depth'" not in _text(job_page.text)  # no input as JSON or a dict
    assert '"depth"' not in _text(job_page.text)

    # The project page's audits section links to the latest audit's view.
    project_page = browser.get(f"/dashboard/projects/{project}")
    assert view in _links(project_page.text, view)
    assert ">Site audits</h2>" in project_page.text

    # The health score, large, and its trend over both audits (a chart and a table).
    shown = browser.get(view)
    assert shown.status_code == 200, shown.text
    score = re.search(r'class="score-value">([^<]+)<', shown.text)
    assert score is not None and score.group(1) == str(scores[second])
    assert "<svg" in shown.text and "<title>Health score of the last 2 audits" in shown.text
    table = re.findall(
        r"<tr><th scope=\"row\">(.*?)</th><td>[^<]*</td><td>([^<]*)</td></tr>", shown.text
    )
    assert [(_text(a), int(s)) for a, s in table] == [
        (f"#{second}", scores[second]),
        (f"#{first}", scores[first]),
    ]
    # Issues by severity, error first, each code with its count and explanation.
    headings = re.findall(r'<h3 id="severity-(\w+)"[^>]*>([^<]+)</h3>', shown.text)
    by_severity: dict[str, int] = {}
    by_code: dict[str, int] = {}
    for issue in issues:
        by_severity[issue["severity"]] = by_severity.get(issue["severity"], 0) + 1
        by_code[issue["code"]] = by_code.get(issue["code"], 0) + 1
    assert [s for s, _ in headings] == [
        s for s in ("error", "warning", "notice") if s in by_severity
    ]
    assert [t for _, t in headings] == [f"{s.capitalize()}s: {by_severity[s]}" for s, _ in headings]
    rows = re.findall(
        r'<a href="/dashboard/jobs/\d+/view/issues/(\w+)">\w+</a></th>\s*'
        r'<td data-label="Found">(\d+)</td>\s*<td data-label="What it means">([^<]*)</td>',
        shown.text,
    )
    assert {code: int(n) for code, n, _ in rows} == by_code
    assert all(html.unescape(about) == ABOUT[code] for code, _, about in rows)
    # Against the first audit: the totals (as counted when each audit ended), and the exact
    # new and fixed issues one click away (matching them pair by pair is not for every view).
    totals = {a["job_id"]: a["data"]["issues"] for a in audits}
    assert totals[second] == len(issues) == totals[first]  # one fixed, one new
    assert f"{len(issues)} issues against {totals[first]} in audit #{first}" in _text(shown.text)
    assert ": as many." in _text(shown.text)
    # Each check whose count moved, from the counts both audits stored (no finding read).
    by = {a["job_id"]: a["data"]["issues_by_code"] for a in audits}
    moved = re.findall(
        r'<th scope="row" data-label="Issue">(.*?)</th>\s*<td data-label="Before">(\d+)</td>'
        r'\s*<td data-label="Now">(\d+)</td>\s*<td data-label="Change">([^<]+)</td>',
        shown.text,
    )
    assert {_text(c): (int(b), int(n)) for c, b, n, _ in moved} == {
        code: (by[first].get(code, 0), by[second].get(code, 0))
        for code in by[first].keys() | by[second].keys()
        if by[first].get(code, 0) != by[second].get(code, 0)
    }
    changes = {_text(c): t for c, _b, _n, t in moved}
    assert (changes["title_missing"], changes["h1_missing"]) == ("▼ 1 fewer", "▲ 1 more")
    assert next(iter(changes)) == "title_missing"  # errors first
    assert f'href="{view}/issues/h1_missing"' in shown.text  # found now: its pages
    assert f'href="{view}/issues/title_missing"' not in shown.text  # fixed: none to list
    both = browser.get(f"{view}/changes", params={"change": "new"})
    assert "1 new · 1 fixed" in _text(both.text)

    # An issue lists exactly the pages it affects, with the evidence; a page opens its issues.
    dup = browser.get(f"{view}/issues/title_duplicate")
    assert dup.status_code == 200
    assert sorted(_path(u) for u in _row_headers(dup.text)) == ["/dup-title-a", "/dup-title-b"]
    assert "The same title on two pages of it" in _text(dup.text)
    # Keyset pages as the API's read: after the first issue, the second alone.
    [one_id, two_id] = [i["id"] for i in issues if i["code"] == "title_duplicate"]
    [two_url] = [i["url"] for i in issues if i["id"] == two_id]
    later = browser.get(f"{view}/issues/title_duplicate", params={"after": str(one_id)})
    assert _row_headers(later.text) == [two_url]
    assert f"{view}/issues/title_duplicate" in _links(later.text, view)  # back to the first
    assert ABOUT["title_duplicate"] in _text(dup.text)
    csv = browser.get(f"{view}/issues.csv", params={"code": "title_duplicate"})
    from_api = client.get(
        f"/v1/projects/{project}/audits/{second}/issues",
        params={"code": "title_duplicate"},
        headers={"Accept": "text/csv"},
    )
    assert csv.status_code == 200 and csv.content == from_api.content
    assert f"{view}/issues.csv?code=title_duplicate" in _links(dup.text, view)
    [page_link, *_] = _links(dup.text, f"{view}/pages/")
    one = browser.get(page_link)
    assert one.status_code == 200
    own = _row_headers(one.text)
    assert "title_duplicate" in own
    page_url = re.search(r"<h1>Page ([^<]+)</h1>", one.text)
    assert page_url is not None
    expected = sorted(i["code"] for i in issues if i["url"] == html.unescape(page_url.group(1)))
    assert sorted(own) == expected

    # The pages: every one once, over keyset pages of 50; a filter as the API's.
    seen: list[str] = []
    at: str | None = f"{view}/pages"
    while at:
        listed = browser.get(at)
        assert listed.status_code == 200
        seen += _row_headers(listed.text)
        more = [link for link in _links(listed.text, f"{view}/pages?") if "after=" in link]
        at = more[0] if more else None
    assert len(seen) == len(set(seen)) == len(REACHED) > 50
    assert {_path(u) for u in seen} == REACHED
    gone = browser.get(f"{view}/pages", params={"status": "404"})
    api_gone = client.get(
        f"/v1/projects/{project}/audits/{second}/pages", params={"status": "404"}
    ).json()["data"]
    assert _row_headers(gone.text) == [p["url"] for p in api_gone]
    # The explorer's CSV: every page the filters keep, the same file the API gives.
    [gone_csv] = _links(gone.text, f"{view}/pages.csv")
    as_csv = browser.get(gone_csv)
    assert as_csv.status_code == 200 and "attachment" in as_csv.headers["content-disposition"]
    api_csv = client.get(
        f"/v1/projects/{project}/audits/{second}/pages",
        params={"status": "404"},
        headers={"Accept": "text/csv"},
    )
    assert as_csv.content == api_csv.content and as_csv.text.count("\n") == len(api_gone) + 1
    assert browser.get(f"{view}/pages.csv", params={"depth": "x"}).status_code == 422
    refused = browser.get(f"{view}/pages", params={"status": "4x"})
    assert refused.status_code == 422 and "status:" in refused.text
    # Depth and in-links (a number, a range, or at least), as the API's filters.
    every = client.get(
        f"/v1/projects/{project}/audits/{second}/pages", params={"limit": 1000}
    ).json()["data"]
    for name, value, wanted in (
        ("depth", "0", lambda p: p["depth"] == 0),
        ("depth", "1-2", lambda p: p["depth"] is not None and 1 <= p["depth"] <= 2),
        ("in_links", "0", lambda p: p["in_links"] == 0),
        ("in_links", "2+", lambda p: p["in_links"] >= 2),
    ):
        expected = [p["url"] for p in every if wanted(p)][:50]
        assert expected, (name, value)
        filtered = browser.get(f"{view}/pages", params={name: value})
        assert _row_headers(filtered.text) == expected, (name, value)
        api = client.get(f"/v1/projects/{project}/audits/{second}/pages", params={name: value})
        assert [p["url"] for p in api.json()["data"]][:50] == expected, (name, value)
    assert [p["depth"] for p in every if p["url"] == f"{base}/"] == [0]
    for name in ("depth", "in_links"):
        bad = browser.get(f"{view}/pages", params={name: "1-"})
        assert bad.status_code == 422 and f"{name}:" in bad.text
        assert (
            client.get(
                f"/v1/projects/{project}/audits/{second}/pages", params={name: "x"}
            ).status_code
            == 422
        )

    # New and fixed issues against the previous audit.
    new = browser.get(f"{view}/changes", params={"change": "new"})
    assert new.status_code == 200
    assert [_path(u) for u in _row_headers(new.text)[-1:]] == ["/clean/2"]
    assert "h1_missing" in _text(new.text)
    fixed = browser.get(f"{view}/changes", params={"change": "fixed"})
    assert "/no-title" in _text(fixed.text) and "title_missing" in _text(fixed.text)

    # Reading started nothing.
    assert client.get(f"/v1/projects/{project}/jobs").json()["data"] == jobs_before
    # "Run again": a form (its CSRF token) that creates an audit with the same params.
    action = f"{view}/rerun"
    assert f'action="{action}"' in shown.text
    assert browser.post(action, data={"csrf_token": "forged"}).status_code == 403
    again = browser.post(action, data={"csrf_token": csrf_of(shown.text)})
    assert again.status_code == 303, again.text
    rerun_id = int(again.headers["location"].rsplit("/", 1)[1])
    rerun = client.get(f"/v1/jobs/{rerun_id}").json()["data"]
    original = served.services.jobs.get(alice.user, second)
    assert served.services.jobs.get(alice.user, rerun_id).params == original.params
    assert (rerun["type"], rerun["project_id"]) == ("site_audit", project)

    # Another user: the 404 page at every address of the view, nothing of alice's shown.
    bob = sign_in(served, served.account("bob").key)
    for path in (
        view,
        f"{view}/issues/title_duplicate",
        f"{view}/issues.csv?code=title_duplicate",
        f"{view}/pages",
        f"{view}/pages.csv?status=404",
        page_link,
        f"{view}/changes?change=fixed",
    ):
        answer = bob.get(path)
        assert answer.status_code == 404, path
        assert "text/html" in answer.headers["content-type"]
        assert "Not found" in answer.text and "dup-title" not in answer.text
    bobs_token = csrf_of(bob.get("/dashboard/new").text)
    assert bob.post(action, data={"csrf_token": bobs_token}).status_code == 404
    # Alice: an issue the audit did not find, a page it did not record, a running job.
    assert browser.get(f"{view}/issues/http_5xx_nowhere").status_code == 404
    assert browser.get(f"{view}/pages/99999").status_code == 404
