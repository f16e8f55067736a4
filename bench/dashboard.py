"""Dashboard page-render benchmark; what it measures and its targets: docs/bench/dashboard.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import argparse
import http.client
import re
import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from sqlalchemy import update

from bench.lib import core, ours
from bench.lib.core import ours_server
from bench.lib.ours import audit, create_user, seed
from bench.lib.report import Report
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


Timings = dict[tuple[str, Pair], tuple[list[float], list[float]]]  # (store, pair): page, JSON
Pairs = tuple[str, list[Pair]]  # the API key of the pages' user, the pairs


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Session:
    """One kept-alive connection, signed in to the dashboard and holding an API key."""

    def __init__(self, port: int, api_key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.api_key = api_key
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        cookies = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        sent = {**({"Cookie": cookies} if cookies else {}), **(headers or {})}
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
            "POST", "/dashboard/login", body, {"Content-Type": "application/x-www-form-urlencoded"}
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


def audit_views(url: str, opts: argparse.Namespace, site: AuditSiteProcess, log: Path) -> Pairs:
    """Two real audits of the generated site (the view compares with the previous one) by a
    ``seojobs worker`` process, in a new database: the API key, the second audit's views."""
    user = create_user(url)
    for n in range(2):
        run = audit(url, user.user_id, site.url, 8, opts.audit_pages, log, cpu=None)
        core.progress(f"audit {n + 1} of 2: {run.pages:,} pages in {run.seconds:.1f} s")
    db = Database(url)
    try:
        with db.read() as conn:
            last = jobs_table.select().order_by(jobs_table.c.id.desc()).limit(1)
            job_id = int(conn.execute(last).one().id)
            largest = results.finding_counts(conn, job_id)[0][0]  # the code with most findings
    finally:
        db.dispose()
    core.analyze(url)
    view = f"/dashboard/jobs/{job_id}/view"
    api = f"/v1/projects/{user.project_id}/audits"
    code = urlencode({"code": largest})
    return user.api_key, [
        Pair("audit-issues", view, f"{api}/latest"),
        Pair(
            "audit-issue-pages",
            f"{view}/issues/{largest}",
            f"{api}/{job_id}/issues?{code}&limit={PAGE_SIZE}",
        ),
        Pair("audit-pages", f"{view}/pages", f"{api}/{job_id}/pages?limit={PAGE_SIZE}"),
    ]


def seeded(
    store: str, opts: argparse.Namespace, scratch: ours.Scratch
) -> tuple[str, str, list[Pair]]:
    """A new database with --jobs jobs, one pending job in 500 running (so the overview has
    progress bars to draw): its URL, the API key, the jobs pages."""
    url = scratch.new(store, "seojobs_dashbench")
    done = seed(url, opts.jobs)
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
    core.analyze(url)
    core.progress(f"{store}: {done.count:,} jobs seeded in {done.seconds:.1f} s")
    json_list = f"/v1/projects/{done.project_id}/jobs?limit={PAGE_SIZE}"
    return (
        url,
        done.api_key,
        [
            Pair("overview", "/dashboard", json_list, same_rows=False),
            Pair("jobs", "/dashboard/jobs", json_list),
            Pair(
                "jobs-completed",
                "/dashboard/jobs?status=completed",
                f"{json_list}&status=completed",
            ),
            # None failed: the filter that finds nothing must not read every job to say so.
            Pair("jobs-failed", "/dashboard/jobs?status=failed", f"{json_list}&status=failed"),
        ],
    )


def time_pairs(
    store: str, url: str, api_key: str, pairs: list[Pair], opts: argparse.Namespace, log: Path
) -> Timings:
    """Our API on the database at ``url``; each pair's page and JSON request in turn, on one
    signed-in connection: the warm-up, then the timed rounds."""
    timings: Timings = {}
    pairs = [p for p in pairs if p.name in opts.pages]
    with ours_server(url, log) as server:
        session = Session(server.port, api_key)
        session.sign_in()
        for pair in pairs:  # warm-up: connections, templates, the planner
            for _ in range(opts.warmup):
                session.timed(pair.page, api=False)
                session.timed(pair.peer, api=True)
        for rnd in range(opts.rounds):
            for pair in pairs:
                page, peer = timings.setdefault((store, pair), ([], []))
                for _ in range(opts.requests // opts.rounds):
                    page.append(session.timed(pair.page, api=False))
                    peer.append(session.timed(pair.peer, api=True))
            core.progress(f"{store}: round {rnd + 1} of {opts.rounds}")
    return timings


Row = tuple[str, Pair, list[float]]  # store, pair, ms: the page's p50 and p99, the JSON's
FIGURES = ("p50 ms", "p99 ms", "JSON p50", "JSON p99")


def rows(timings: Timings) -> list[Row]:
    p99 = lambda values: _percentile(values, 0.99)  # noqa: E731
    return [
        (store, pair, [f(times) for times in (page, peer) for f in (statistics.median, p99)])
        for (store, pair), (page, peer) in timings.items()
        if page and peer
    ]


def targets(found: list[Row]) -> list[core.Target]:
    """p99 <= 50 ms for every page; <= 2x its JSON twin's where it reads the same rows."""
    out = []
    for store, pair, (_p50, p99, _j50, j99) in found:
        where = f"{store} {pair.name}: p99"
        out.append((f"{where} <= {TARGET_P99_MS:.0f} ms", f"{p99:.1f} ms", p99 <= TARGET_P99_MS))
        if pair.same_rows:
            what = f"{where} <= {TARGET_RATIO:.0f}x the JSON list's"
            out.append((what, f"{p99 / j99:.2f}x", p99 / j99 <= TARGET_RATIO))
    return out


def report() -> Report[Row]:
    return Report(
        "dashboard pages beside the JSON reads of the same rows",
        [
            ("store", lambda r: r[0]),
            ("page", lambda r: r[1].name),
            *((name, lambda r, i=i: f"{r[2][i]:.1f}") for i, name in enumerate(FIGURES)),
            ("p99 ratio", lambda r: f"{r[2][1] / r[2][3]:.2f}x"),
        ],
        targets,
        right=range(2, 7),
    )


def main(argv: list[str] | None = None) -> int:
    p = core.parser("bench/dashboard.py", __doc__.split("\n")[0])
    add = p.add_argument
    add("--jobs", type=int, default=100_000, help="jobs in the table")
    add("--requests", type=int, default=600, help="timed GETs per page")
    add("--rounds", type=int, default=3, help="interleaved rounds")
    add("--warmup", type=int, default=20, help="untimed GETs per page first")
    stores = ("sqlite", "postgresql")
    add("--only", type=core.choice(stores), default=stores, help=",".join(stores))
    every = PAGES + VIEWS
    add("--pages", type=core.choice(every), default=every, help=", ".join(every))
    add("--audit-pages", type=int, default=5_000, help="pages of the audits the views show")
    opts = p.parse_args(argv)
    rep = report()

    def body(stack: ExitStack) -> None:
        scratch = ours.Scratch(stack, postgres="postgresql" in opts.only)
        views = set(opts.pages) & set(VIEWS)
        rep.start(
            scratch.pg,
            f"{opts.jobs:,} jobs; {opts.requests} timed GETs per page and side, one at a time",
            *(
                [f"the audit views: two audits of {opts.audit_pages:,} generated pages"]
                if views
                else []
            ),
        )
        site = stack.enter_context(AuditSiteProcess(opts.audit_pages, None)) if views else None
        for store in opts.only:
            log = scratch.root / f"{store}-server.log"
            if set(opts.pages) & set(PAGES):
                rep.runs += rows(time_pairs(store, *seeded(store, opts, scratch), opts, log))
            if site is not None:
                # A new, empty database for the audits (the seeded jobs would keep a worker busy).
                url = scratch.new(store, "seojobs_dashviews")
                pairs = audit_views(url, opts, site, log.with_suffix(".worker.log"))
                rep.runs += rows(time_pairs(store, url, *pairs, opts, log))

    return rep.main(body, "servers and the site stopped, scratch databases removed")


if __name__ == "__main__":
    sys.exit(main())
