"""Lighthouse (the pinned one in lighthouse/) in Debian's chromium against the dashboard's
pages, signed in: accessibility and best practices must score at least 95. Performance is not
asked for: tests do not assert on timings, and it cost 40 % more of Lighthouse's CPU for a
score nothing read (a page's speed is bench/dashboard.py's)."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
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


class Audit:
    """Lighthouse running on pages (:func:`start_audit`) while the test goes on; :meth:`scores`
    waits for it."""

    def __init__(self, site: Site, pages: Mapping[str, str], folder: Path, spec: str) -> None:
        self.site, self.pages, self.folder = site, dict(pages), folder
        # Files, not pipes: nobody reads its output until the test asks for the scores. Closed
        # by __exit__.
        self.out = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.err = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            ["node", str(PAGES_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=self.out,
            stderr=self.err,
            env={"CHROME_PATH": CHROMIUM, "PATH": "/usr/bin:/bin", "HOME": str(folder)},
            text=True,
        )
        assert self.process.stdin is not None
        with self.process.stdin as stdin:  # a few KB: within the pipe's buffer
            stdin.write(spec)

    def __enter__(self) -> Audit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.out.close()
        self.err.close()

    def stop(self) -> None:
        """Stop Lighthouse if it still runs: SIGINT, on which chrome-launcher kills its
        Chromium (its own process group) before Node exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def scores(self) -> dict[str, dict[str, float]]:
        """Each page's scores (0-1) per category, once Lighthouse has written every report."""
        try:
            self.process.wait(timeout=60 + 120 * len(self.pages))
        finally:
            self.stop()
        self.out.seek(0)
        self.err.seek(0)
        out, err = self.out.read(), self.err.read()
        assert self.process.returncode == 0, err[-2000:]
        errors = {line["url"]: line["error"] for line in map(json.loads, out.splitlines())}
        results = {}
        for name, path in self.pages.items():
            url = self.site.url(path)
            assert errors.get(url, "no result") is None, (name, errors.get(url, "no result"))
            report = json.loads((self.folder / f"{name}.json").read_text())
            assert report.get("runtimeError") is None, (name, report["runtimeError"])
            # The page audited is the signed-in page, not the sign-in form it would redirect to.
            assert report["finalDisplayedUrl"] == url, (name, report["finalDisplayedUrl"])
            results[name] = {key: cat["score"] for key, cat in report["categories"].items()}
        return results


def start_audit(
    site: Site,
    pages: Mapping[str, str],
    cookie: str,
    folder: Path,
    categories: tuple[str, ...] = ("accessibility", "best-practices", "performance"),
) -> Audit:
    """Start Lighthouse on each of ``pages`` (name: path), its report in ``folder/name.json``,
    for the scores (0-1) in ``categories``: a test asks only for those it asserts (leaving
    out ``performance`` saved about 15% of Lighthouse's own CPU on a small page). A test may
    go on with its own browser meanwhile (Lighthouse's pages are its own, in its own
    Chromium): the audit's wall time then overlaps the test's, for no more CPU.

    Every page goes through the CLI's own steps with the CLI's arguments, one after the other
    in one Node process, one Chromium and one tab (lighthouse_pages.mjs; each run resets the
    origin's storage and the cache first, as Lighthouse does): one CLI run per page started
    Node and Chromium again each time, a context per page a renderer process. Without the
    full-page screenshot (for the HTML report's element thumbnails: no audit scores it) and
    without the CLI's first load of about:blank (each page's context is new)."""
    folder.mkdir(parents=True, exist_ok=True)
    args = [
        "--quiet",
        "--output=json",
        "--preset=desktop",
        "--disable-full-page-screenshot",
        "--skip-about-blank",
        f"--only-categories={','.join(categories)}",
        f"--extra-headers={json.dumps({'Cookie': cookie})}",
    ]
    spec = {
        "modules": str(LIGHTHOUSE.parent.parent),
        # No back/forward cache: the pages share one tab (lighthouse_pages.mjs), and nothing
        # of a page left behind stays alive while the next one is audited.
        "chromeFlags": [
            *QUIET_ARGS,
            "--headless=new",
            "--disable-features=BackForwardCache",
            f"--host-resolver-rules={RESOLVER_RULES}",
        ],
        "pages": [
            {"url": site.url(path), "args": [*args, f"--output-path={folder / f'{name}.json'}"]}
            for name, path in pages.items()
        ],
    }
    return Audit(site, pages, folder, json.dumps(spec))


def audit(
    site: Site,
    pages: Mapping[str, str],
    cookie: str,
    folder: Path,
    categories: tuple[str, ...] = ("accessibility", "best-practices", "performance"),
) -> dict[str, dict[str, float]]:
    """:func:`start_audit` and wait for its scores."""
    with start_audit(site, pages, cookie, folder, categories) as running:
        return running.scores()


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
    asserted = ("accessibility", "best-practices")
    results = audit(site, pages, cookie, folder, asserted)
    for name, scores in results.items():
        for category in asserted:
            assert scores[category] >= FLOOR, (
                name,
                category,
                failing(folder / f"{name}.json", category),
            )
    print("lighthouse scores:", json.dumps(results))
