"""Dashboard page-render benchmark: ``python bench/dashboard.py [--jobs N] [--requests N]``.

What it measures, its targets and how to read its report: docs/bench/dashboard.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo, not bench/ (queue.py)

import argparse
import http.client
import re
import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from urllib.parse import urlencode

from sqlalchemy import update

from bench.lib import core, ours
from bench.lib.core import ours_server
from bench.lib.ours import BenchUser, Seeded, audit, create_user, seed
from bench.lib.site import AuditSiteProcess
from seojobs.store import results
from seojobs.store.coltypes import utcnow
from seojobs.store.db import Database
from seojobs.store.tables import jobs as jobs_table

TARGET_P99_MS = 50.0
TARGET_RATIO = 2.0
PAGE_SIZE = 50  # the dashboard's jobs page size (seojobs.api.dashboard), and the JSON peer's
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class Pair:
    """A dashboard page and a JSON request beside it. ``same_rows``: the JSON request reads
    the rows the page shows (the jobs list), so the page is held to 2x of it; the overview's
    counts have no JSON twin, so its ratio to the list is printed but not a target."""

    name: str
    page: str
    peer: str
    same_rows: bool = True


@dataclass
class Timings:
    samples: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def add(self, store: str, pair: str, side: str, ms: float) -> None:
        self.samples.setdefault((store, pair, side), []).append(ms)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Session:
    """One kept-alive connection, signed in to the dashboard and holding an API key."""

    def __init__(self, port: int, api_key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.api_key = api_key
        self.cookies: dict[str, str] = {}

    def _cookie_header(self) -> dict[str, str]:
        if not self.cookies:
            return {}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}

    def request(
        self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        sent = {**self._cookie_header(), **(headers or {})}
        self.conn.request(method, path, body=body, headers=sent)
        response = self.conn.getresponse()
        data = response.read()
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        return response.status, data

    def sign_in(self) -> None:
        status, form = self.request("GET", "/dashboard/login")
        found = _CSRF.search(form.decode())
        if status != 200 or not found:
            raise RuntimeError(f"the login page answered {status}")
        body = urlencode({"csrf_token": found.group(1), "api_key": self.api_key})
        status, _ = self.request(
            "POST",
            "/dashboard/login",
            body,
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        if status != 303:
            raise RuntimeError(f"signing in answered {status}")

    def timed(self, path: str, api: bool) -> float:
        headers = {"Authorization": self.api_key} if api else {}
        started = time.perf_counter()
        status, body = self.request("GET", path, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}: {body[:300]!r}")
        return elapsed


PAGES = ("overview", "jobs", "jobs-completed", "jobs-failed")
# The site audit's view over a real audit of --audit-pages pages (issue 28), each beside the
# JSON read of the same rows: the issue list (the audit's counts by code), the largest
# issue's first page of affected pages, the page explorer's first page.
VIEWS = ("audit-issues", "audit-issue-pages", "audit-pages")


@dataclass(frozen=True)
class Audited:
    user: BenchUser
    job_id: int
    largest: str  # the code with the most findings


def _view_pairs(audited: Audited) -> list[Pair]:
    view = f"/dashboard/jobs/{audited.job_id}/view"
    api = f"/v1/projects/{audited.user.project_id}/audits"
    code = urlencode({"code": audited.largest})
    return [
        Pair("audit-issues", view, f"{api}/latest"),
        Pair(
            "audit-issue-pages",
            f"{view}/issues/{audited.largest}",
            f"{api}/{audited.job_id}/issues?{code}&limit={PAGE_SIZE}",
        ),
        Pair("audit-pages", f"{view}/pages", f"{api}/{audited.job_id}/pages?limit={PAGE_SIZE}"),
    ]


def _largest(url: str, job_id: int) -> str:
    db = Database(url)
    try:
        with db.read() as conn:
            return results.finding_counts(conn, job_id)[0][0]
    finally:
        db.dispose()


def audited(url: str, opts: argparse.Namespace, site: AuditSiteProcess, log: Path) -> Audited:
    """Two real audits of the generated site (the view compares with the previous one) by a
    ``seojobs worker`` process, in a new database; the second one's id."""
    user = create_user(url)
    for n in range(2):
        run = audit(url, user.user_id, site.url, 8, opts.audit_pages, log, cpu=None)
        core.progress(f"audit {n + 1} of 2: {run.pages:,} pages in {run.seconds:.1f} s")
    db = Database(url)
    try:
        with db.read() as conn:
            last = jobs_table.select().order_by(jobs_table.c.id.desc()).limit(1)
            job_id = int(conn.execute(last).one().id)
    finally:
        db.dispose()
    return Audited(user, job_id, _largest(url, job_id))


def time_pairs(
    store: str,
    url: str,
    api_key: str,
    pairs: list[Pair],
    opts: argparse.Namespace,
    timings: Timings,
    log: Path,
) -> None:
    """Our API on the database at ``url``; each pair's page and JSON request in turn, on one
    signed-in connection: the warm-up, then the timed rounds."""
    with ours_server(url, log) as server:
        session = Session(server.port, api_key)
        session.sign_in()
        _time(store, session, [p for p in pairs if p.name in opts.pages], opts, timings)


def _time(
    store: str, session: Session, pairs: list[Pair], opts: argparse.Namespace, timings: Timings
) -> None:
    for pair in pairs:  # warm-up: connections, templates, the planner
        for _ in range(opts.warmup):
            session.timed(pair.page, api=False)
            session.timed(pair.peer, api=True)
    for rnd in range(opts.rounds):
        for pair in pairs:
            for _ in range(opts.requests // opts.rounds):
                timings.add(store, pair.name, "page", session.timed(pair.page, api=False))
                timings.add(store, pair.name, "json", session.timed(pair.peer, api=True))
        core.progress(f"{store}: round {rnd + 1} of {opts.rounds}")


def _pairs(project_id: int) -> list[Pair]:
    json_list = f"/v1/projects/{project_id}/jobs?limit={PAGE_SIZE}"
    return [
        Pair("overview", "/dashboard", json_list, same_rows=False),
        Pair("jobs", "/dashboard/jobs", json_list),
        Pair(
            "jobs-completed",
            "/dashboard/jobs?status=completed",
            f"{json_list}&status=completed",
        ),
        # None failed: the filter that finds nothing must not read every job to say so.
        Pair("jobs-failed", "/dashboard/jobs?status=failed", f"{json_list}&status=failed"),
    ]


def _mark_running(url: str) -> None:
    """One pending job in 500 running, so the overview has progress bars to draw."""
    db = Database(url)
    try:
        with db.write() as conn:
            conn.execute(
                update(jobs_table)
                .where(jobs_table.c.id % 500 == 1, jobs_table.c.state == "pending")
                .values(state="processing", started_at=utcnow())
            )
    finally:
        db.dispose()


def report(timings: Timings, stores: list[str]) -> tuple[list[str], list[str]]:
    """(the table, the failed targets)."""
    rows, failed = [], []
    names = dict.fromkeys(pair for (_s, pair, _side) in timings.samples)
    held = {pair.name: pair.same_rows for pair in _pairs(0)} | dict.fromkeys(VIEWS, True)
    for store in stores:
        for name in names:
            page = timings.samples.get((store, name, "page"))
            peer = timings.samples.get((store, name, "json"))
            if not page or not peer:
                continue
            p50, p99 = statistics.median(page), _percentile(page, 0.99)
            j50, j99 = statistics.median(peer), _percentile(peer, 0.99)
            ratio = p99 / j99
            ok_abs, ok_ratio = p99 <= TARGET_P99_MS, ratio <= TARGET_RATIO
            if not ok_abs:
                failed.append(f"{store} {name}: p99 {p99:.1f} ms > {TARGET_P99_MS:.0f} ms")
            if held[name] and not ok_ratio:
                failed.append(f"{store} {name}: p99 {ratio:.2f}x the JSON list's")
            ratio_verdict = core.verdict(ok_ratio) if held[name] else "(no twin)"
            figures = [f"{v:.1f}" for v in (p50, p99, j50, j99)]
            rows.append(
                [
                    store,
                    name,
                    *figures,
                    f"{ratio:.2f}x",
                    f"{core.verdict(ok_abs)} / {ratio_verdict}",
                ]
            )
    headers = ["store", "page", "p50 ms", "p99 ms", "JSON p50", "JSON p99", "p99 ratio"]
    headers.append(f"<= {TARGET_P99_MS:.0f} ms / <= {TARGET_RATIO:.0f}x")
    return core.table(headers, rows, right=range(2, 7)), failed


def _seeded(store: str, opts: argparse.Namespace, scratch: ours.Scratch) -> tuple[str, Seeded]:
    """A new database with --jobs jobs, one pending job in 500 running; its URL."""
    url = scratch.new(store, "seojobs_dashbench")
    seeded = seed(url, opts.jobs)
    _mark_running(url)
    core.analyze(url)
    core.progress(f"{store}: {seeded.count:,} jobs seeded in {seeded.seconds:.1f} s")
    return url, seeded


def main(argv: list[str] | None = None) -> int:
    p = core.parser("bench/dashboard.py", __doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=100_000, help="jobs in the table")
    p.add_argument("--requests", type=int, default=600, help="timed GETs per page")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--warmup", type=int, default=20, help="untimed GETs per page first")
    stores = ("sqlite", "postgresql")
    p.add_argument("--only", type=core.choice(stores), default=stores, help=",".join(stores))
    every = PAGES + VIEWS
    p.add_argument("--pages", type=core.choice(every), default=every, help=", ".join(every))
    p.add_argument(
        "--audit-pages", type=int, default=5_000, help="pages of the audits the views show"
    )
    opts = p.parse_args(argv)
    timings = Timings()
    environment: list[str] = []

    def body(stack: ExitStack) -> None:
        scratch = ours.Scratch(stack, postgres="postgresql" in opts.only)
        environment.append(core.machine(scratch.pg))
        environment.append(
            f"  {opts.jobs:,} jobs; {opts.requests} timed GETs per page and side, one at a time"
        )
        site = None
        if set(opts.pages) & set(VIEWS):
            environment.append(
                f"  the audit views: two audits of {opts.audit_pages:,} generated pages"
            )
            site = stack.enter_context(AuditSiteProcess(opts.audit_pages, None))
        for store in opts.only:
            log = scratch.root / f"{store}-server.log"
            if set(opts.pages) & set(PAGES):
                url, seeded = _seeded(store, opts, scratch)
                pairs = _pairs(seeded.project_id)
                time_pairs(store, url, seeded.api_key, pairs, opts, timings, log)
            if site is not None:
                # A new, empty database for the audits (the seeded jobs would keep a worker busy).
                views_url = scratch.new(store, "seojobs_dashviews")
                done = audited(views_url, opts, site, log.with_suffix(".worker.log"))
                core.analyze(views_url)
                views = _view_pairs(done)
                time_pairs(store, views_url, done.user.api_key, views, opts, timings, log)

    return core.run(
        body,
        lambda: "\n".join([*environment, *report(timings, list(opts.only))[0]]) + "\n",
        lambda: report(timings, list(opts.only))[1],
        "servers and the site stopped, scratch databases removed",
    )


if __name__ == "__main__":
    sys.exit(main())
