"""Lighthouse (the pinned one in lighthouse/) in Debian's chromium against the dashboard's
pages, signed in: accessibility and best practices must score at least 95. The performance
score is printed for docs/bench/vitals.md, never asserted (tests do not assert on timings)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import CHROMIUM, OUTPUT, QUIET_ARGS, RESOLVER_RULES, Site
from tests.conftest import ROOT
from tests.dashboard_helpers import collected_job, csrf_of

LIGHTHOUSE = ROOT / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
PAGES_SCRIPT = Path(__file__).with_name("lighthouse_pages.mjs")
FLOOR = 0.95


def session_cookie(site: Site, key: str) -> str:
    """Sign in through the form, as a browser would; the ``Cookie`` header of the session."""
    with httpx.Client(base_url=site.base, follow_redirects=False) as client:
        form = client.get("/dashboard/login")
        answer = client.post(
            "/dashboard/login", data={"csrf_token": csrf_of(form.text), "api_key": key}
        )
        assert answer.status_code == 303, answer.text
        return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def audit(
    site: Site,
    pages: Mapping[str, str],
    cookie: str,
    folder: Path,
    categories: tuple[str, ...] = ("accessibility", "best-practices", "performance"),
) -> dict[str, dict[str, float]]:
    """Run Lighthouse on each of ``pages`` (name: path), its report in ``folder/name.json``;
    the scores (0-1) in ``categories`` per name: a test asks only for those it asserts (leaving
    out ``performance`` saved about 15% of Lighthouse's own CPU on a small page).

    Every page goes through the CLI's own steps with the CLI's arguments, one after the other
    in one Node process and one Chromium (lighthouse_pages.mjs), each in a fresh browser
    context: one CLI run per page started Node and Chromium again each time."""
    folder.mkdir(parents=True, exist_ok=True)
    args = [
        "--quiet",
        "--output=json",
        "--preset=desktop",
        f"--only-categories={','.join(categories)}",
        f"--extra-headers={json.dumps({'Cookie': cookie})}",
    ]
    spec = {
        "modules": str(LIGHTHOUSE.parent.parent),
        "chromeFlags": [*QUIET_ARGS, "--headless=new", f"--host-resolver-rules={RESOLVER_RULES}"],
        "pages": [
            {"url": site.url(path), "args": [*args, f"--output-path={folder / f'{name}.json'}"]}
            for name, path in pages.items()
        ],
    }
    run = subprocess.run(
        ["node", str(PAGES_SCRIPT)],
        input=json.dumps(spec),
        env={"CHROME_PATH": CHROMIUM, "PATH": "/usr/bin:/bin", "HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=60 + 120 * len(pages),
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    errors = {line["url"]: line["error"] for line in map(json.loads, run.stdout.splitlines())}
    results = {}
    for name, path in pages.items():
        url = site.url(path)
        assert errors.get(url, "no result") is None, (name, errors.get(url, "no result"))
        report = json.loads((folder / f"{name}.json").read_text())
        assert report.get("runtimeError") is None, (name, report["runtimeError"])
        # The page audited is the signed-in page, not the sign-in form it would redirect to.
        assert report["finalDisplayedUrl"] == url, (name, report["finalDisplayedUrl"])
        results[name] = {key: category["score"] for key, category in report["categories"].items()}
    return results


def failing(report_path: Path, category: str) -> list[str]:
    report = json.loads(report_path.read_text())
    refs = report["categories"][category]["auditRefs"]
    return [
        f"{ref['id']}: {report['audits'][ref['id']]['title']}"
        for ref in refs
        if ref["weight"] and (report["audits"][ref["id"]].get("score") or 0) < 1
    ]


def test_dashboard_pages_pass_lighthouse(site: Site) -> None:
    if not LIGHTHOUSE.exists():
        pytest.fail(f"no Lighthouse at {LIGHTHOUSE}: (cd lighthouse && npm ci) (scripts/test does)")
    user, key = site.user()
    project = site.services.accounts.create_project(user, "Shop")
    data = {"pages": 12, "scores": {"speed": 0.75, "seo": 0.9}, "server": "nginx"}
    collected_job(site.services, user, project.id, data, [("missing_title", "warning")])
    job, _ = site.services.jobs.create(user, "test_items", {"urls": ["https://example.com/a"]})
    cookie = session_cookie(site, key)
    folder = OUTPUT.parent / "lighthouse"
    pages = {
        "overview": "/dashboard",
        "jobs": "/dashboard/jobs",
        "job": f"/dashboard/jobs/{job.id}",
        "project": f"/dashboard/projects/{project.id}",
    }
    results = audit(site, pages, cookie, folder)
    for name, scores in results.items():
        for category in ("accessibility", "best-practices"):
            assert scores[category] >= FLOOR, (
                name,
                category,
                failing(folder / f"{name}.json", category),
            )
    print("lighthouse scores:", json.dumps(results))
