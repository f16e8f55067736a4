"""Web-vitals benchmark; what it measures and its targets: docs/bench/vitals.md."""

from __future__ import annotations

import os
import sys

sys.path[0] = os.path.dirname(sys.path[0])  # the repo, not bench/ (queue.py)

import contextlib
import ctypes
import json
import signal
import subprocess
import tempfile
import time
from argparse import Namespace as Options  # what parse_args returns
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib import core
from bench.lib.ours import Scratch, create_job, items, wait_finished
from bench.lib.report import Report, median
from bench.lib.vitalsite import serving
from seojobs.kinds.web_vitals import WebVitalsSettings, runner
from seojobs.store.db import Database

LOOPBACK_ONLY = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
PR_SET_CHILD_SUBREAPER = 36
POLL = 0.2


@dataclass
class VitalsRun:
    label: str
    seconds: float
    cpu: float
    peak_rss: int
    scores: dict[str, int]  # URL -> performance score (0-100)
    lighthouse_seconds: list[float] = field(default_factory=list)  # timing.total per report
    run_seconds: list[float] = field(default_factory=list)  # wall per run (CLI loop only)
    errors: list[str] = field(default_factory=list)

    @property
    def pages_per_minute(self) -> float:
        return 60 * len(self.scores) / self.seconds


def _item_scores(probe: Database, job_id: int) -> tuple[dict[str, int], list[str]]:
    scores: dict[str, int] = {}
    errors: list[str] = []
    with probe.read() as conn:
        for item in items(conn, job_id):
            run = ((item.result or {}).get("form_factors") or {}).get("mobile") or {}
            if "lab" in run:
                scores[item.input] = int(run["lab"]["performance_score"])
            else:
                errors.append(f"{item.input}: {item.error_code}: {item.error_message}")
    return scores, errors


def ours(db_url: str, user_id: int, urls: list[str], concurrency: int, tmp: Path) -> VitalsRun:
    """One ``web_vitals`` job over ``urls`` by a fresh worker process."""
    reports = tmp / f"ours-{concurrency}"
    reports.mkdir()
    env = core.seojobs_env(
        database_url=db_url,
        allow_private_networks="true",  # the pages are on loopback
        web_vitals_concurrency=concurrency,
        web_vitals_resolver_rules=LOOPBACK_ONLY,
        web_vitals_report_dir=reports,
        log_format="plain",
    )
    worker = core.WorkerProcess(env, tmp / "worker.log")
    probe = Database(db_url, pool_size=1)
    try:
        worker.wait_idle()
        sampler = core.TreeSampler(worker.proc.pid, interval=POLL, pss=True)
        cpu_before = core.proc_cpu(worker.proc.pid, reaped=True)
        job_id = create_job(
            db_url, user_id, "web_vitals", {"urls": urls, "form_factors": ["mobile"]}
        )
        timeout = 60 + len(urls) * WebVitalsSettings().run_timeout
        job = wait_finished(probe, job_id, worker, timeout)
        used = core.proc_cpu(worker.proc.pid, reaped=True) - cpu_before
        peak = sampler.stop()
        if job.state != "completed":
            raise RuntimeError(f"the job failed: {job.error_code}: {job.error_message}")
        scores, errors = _item_scores(probe, job_id)
        assert job.completed_at is not None and job.started_at is not None
        seconds = (job.completed_at - job.started_at).total_seconds()
        label = f"seojobs worker, {concurrency} at once"
        timings = [
            json.loads(path.read_text())["timing"]["total"] / 1000
            for path in sorted(reports.glob("*.json"))
        ]
        return VitalsRun(label, seconds, used, peak, scores, timings, errors=errors)
    finally:
        worker.stop()
        probe.dispose()


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_orphans() -> None:
    """Collect every ended child (orphaned Chromium helpers land here as subreaper)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def kill_leftovers() -> None:
    """SIGKILL what a CLI run left (one past its timeout leaves its Chromium, which
    chrome-launcher starts in a process group of its own: it spun on for an hour after a
    bench had ended), and reap it; the CLI loop has no other children."""
    deadline = time.monotonic() + 10
    while (left := core.descendants(os.getpid())[1:]) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
        reap_orphans()


def cli_loop(urls: list[str], tmp: Path) -> VitalsRun:
    """The Lighthouse CLI once per URL, one after another (call ``become_subreaper`` first)."""
    settings = WebVitalsSettings()
    browser = runner.Browser(
        lighthouse=settings.lighthouse_path,
        chrome=settings.chrome_path,
        timeout=settings.run_timeout,
        max_wait=settings.max_wait_for_load,
    )
    env = {**os.environ, "CHROME_PATH": browser.chrome}
    scores: dict[str, int] = {}
    timings: list[float] = []
    walls: list[float] = []
    errors: list[str] = []
    sampler = core.TreeSampler(os.getpid(), interval=POLL, skip_root=True, pss=True)
    cpu_before = core.children_cpu()
    started = time.monotonic()
    for url in urls:
        with tempfile.TemporaryDirectory(prefix="vitals-cli-", dir=tmp) as scratch:
            out = os.path.join(scratch, "report.json")
            cmd = runner.command(browser, url, "mobile", LOOPBACK_ONLY, out)
            began = time.monotonic()
            try:
                done = subprocess.run(
                    cmd,
                    env={**env, "TMPDIR": scratch},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    timeout=browser.timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:  # a failed page, as the job's lighthouse_timeout
                errors.append(f"{url}: over the {browser.timeout:g} s run timeout")
                continue
            finally:
                walls.append(time.monotonic() - began)
                kill_leftovers()
            try:
                raw = json.loads(Path(out).read_text())
            except (OSError, ValueError):
                errors.append(f"{url}: exit {done.returncode}: {done.stderr[-300:]!r}")
                continue
            scores[url] = round(float(raw["categories"]["performance"]["score"]) * 100)
            timings.append(raw["timing"]["total"] / 1000)
    seconds = time.monotonic() - started
    used = core.children_cpu() - cpu_before
    peak = sampler.stop()
    return VitalsRun(
        "Lighthouse CLI, one after another", seconds, used, peak, scores, timings, walls, errors
    )


SPEED_FACTOR = 2.0  # ours >= 2 x the CLI loop's pages per minute
SCORE_POINTS = 5  # every page's score within 5 points of the CLI's
SYSTEMS = ("ours", "cli")


def parse_args(argv: list[str] | None) -> Options:
    parser = core.parser(
        "bench/vitals.py",
        "Lighthouse (mobile) over local pages: a seojobs web_vitals job against the Lighthouse "
        "CLI run once per URL one after another.",
    )
    add = parser.add_argument
    add("--pages", type=int, default=20, help="pages (a job's most)")
    own = WebVitalsSettings().concurrency
    add("--concurrency", type=int, default=2, help=f"our worker's (1 run per core; kind's: {own})")
    add("--store", choices=("sqlite", "pg"), default="sqlite", help="our store")
    add("--only", type=core.choice(SYSTEMS), default="ours,cli", help="ours,cli; ours first")
    args = parser.parse_args(argv)
    if not 1 <= args.pages <= 20 or not 1 <= args.concurrency <= 8:
        parser.error("--pages must be 1..20 (a job's URLs) and --concurrency 1..8")
    return args


def _score_rows(urls: list[str], runs: list[VitalsRun]) -> list[str]:
    """Each page's score by each system and their difference (when both ran)."""
    if len(runs) != 2:
        return []
    rows = []
    for url in urls:
        got = [run.scores.get(url) for run in runs]
        diff = f"{got[0] - got[1]:+d}" if None not in got else "-"  # type: ignore[operator]
        rows.append([url.split("/", 3)[3], *("-" if g is None else str(g) for g in got), diff])
    ratio = runs[0].pages_per_minute / runs[1].pages_per_minute
    table = core.table(["page", "ours", "CLI", "diff"], rows)
    return [*table, "", f"  pages/min ratio (ours / CLI): {ratio:.2f}"]


def targets(runs: list[VitalsRun], urls: list[str]) -> list[core.Target]:
    """Judged when both systems ran."""
    if len(runs) != 2:
        return []
    ours_run, peer = runs
    ratio = ours_run.pages_per_minute / peer.pages_per_minute
    both = [u for u in urls if u in ours_run.scores and u in peer.scores]
    worst = max((abs(ours_run.scores[u] - peer.scores[u]) for u in both), default=None)
    complete = len(ours_run.scores) == len(peer.scores) == len(urls)
    worst_text = "-" if worst is None else f"{worst} points"
    return [
        (
            f"ours >= {SPEED_FACTOR:g} x the CLI loop's pages/min",
            f"{ratio:.2f}x",
            ratio >= SPEED_FACTOR,
        ),
        (
            f"every page's score within {SCORE_POINTS} points of the CLI's",
            f"worst {worst_text}" + ("" if complete else ", pages missing"),
            complete and worst is not None and worst <= SCORE_POINTS,
        ),
    ]


def report(urls: list[str]) -> Report[VitalsRun]:
    return Report(
        "web vitals: a web_vitals job against the Lighthouse CLI in a loop",
        [
            ("system", lambda run: run.label),
            ("pages", lambda run: str(len(run.scores))),
            ("seconds", lambda run: f"{run.seconds:.1f}"),
            ("pages/min", lambda run: f"{run.pages_per_minute:.2f}"),
            ("s/page", lambda run: f"{run.seconds / max(len(run.scores), 1):.1f}"),
            ("CPU s", lambda run: f"{run.cpu:.0f}"),
            ("cores busy", lambda run: f"{run.cpu / run.seconds:.2f}"),
            ("peak PSS", lambda run: f"{run.peak_rss / 1e6:,.0f} MB"),
            ("LH total s (median)", lambda run: median(run.lighthouse_seconds, ".1f")),
            ("run wall s (median)", lambda run: median(run.run_seconds, ".1f")),
        ],
        lambda runs: targets(runs, urls),
        lambda run: f"{run.label}: {run.pages_per_minute:.2f} pages/min",
        [
            lambda runs: [f"  {run.label}: error {e}" for run in runs for e in run.errors],
            lambda runs: _score_rows(urls, runs),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    become_subreaper()  # the CLI loop's orphaned Chromium processes are reaped (and counted) here
    urls: list[str] = []
    results = report(urls)
    busy_before = core.machine_busy()

    def body(stack: ExitStack) -> None:
        pages, hits = stack.enter_context(serving(opts.pages))
        urls.extend(pages)
        dbs = Scratch(stack, postgres=opts.store == "pg", prefix="seojobs_vitals")
        results.start(
            dbs.pg,
            f"pages: {opts.pages} (bench/lib/vitalsite.py), Lighthouse mobile form factor, "
            f"simulated throttling; ours: {opts.store}, SEOJOBS_WEB_VITALS_CONCURRENCY="
            f"{opts.concurrency}",
        )
        if "ours" in opts.only:
            with dbs.fresh(opts.store) as (db_url, user_id):
                results.add(ours(db_url, user_id, urls, opts.concurrency, dbs.root))
        if "cli" in opts.only:
            results.add(cli_loop(urls, dbs.root))
        busy = (core.machine_busy() - busy_before) / (time.monotonic() - results.started)
        results.environment.append(
            f"the whole machine's CPUs busy {busy:.2f} on average; "
            f"site requests {sum(hits.values())}"
        )

    return results.main(body, "processes stopped, scratch databases removed")


if __name__ == "__main__":
    raise SystemExit(main())
