"""``bench/vitals.py``'s two runs over the same pages, mobile form factor.

How it works and what each figure counts: docs/bench/vitals.md.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.lib import procstat
from bench.lib.crawl_ours import WorkerProcess, create_job, wait_finished
from seojobs.kinds.web_vitals import WebVitalsSettings, runner
from seojobs.store import jobs as job_sql
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


def score(raw: Any) -> int:
    return round(float(raw["categories"]["performance"]["score"]) * 100)


def _report_timings(folder: Path) -> list[float]:
    return [
        json.loads(path.read_text())["timing"]["total"] / 1000
        for path in sorted(folder.glob("*.json"))
    ]


def _worker_env(url: str, concurrency: int, reports: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
    env.update(
        SEOJOBS_DATABASE_URL=url,
        SEOJOBS_ALLOW_PRIVATE_NETWORKS="true",  # the pages are on loopback
        SEOJOBS_WEB_VITALS_CONCURRENCY=str(concurrency),
        SEOJOBS_WEB_VITALS_RESOLVER_RULES=LOOPBACK_ONLY,
        SEOJOBS_WEB_VITALS_REPORT_DIR=str(reports),
        SEOJOBS_LOG_FORMAT="plain",
    )
    return env


def _item_scores(probe: Database, job_id: int) -> tuple[dict[str, int], list[str]]:
    scores: dict[str, int] = {}
    errors: list[str] = []
    with probe.read() as conn:
        for item in job_sql.items_page(conn, job_id, limit=1000):
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
    worker = WorkerProcess(_worker_env(db_url, concurrency, reports), tmp / "worker.log", None)
    probe = Database(db_url, pool_size=1)
    try:
        worker.wait_idle()
        sampler = procstat.TreeSampler(worker.proc.pid, interval=POLL, pss=True)
        cpu_before = procstat.proc_cpu(worker.proc.pid, reaped=True)
        job_id = create_job(
            db_url, user_id, "web_vitals", {"urls": urls, "form_factors": ["mobile"]}
        )
        timeout = 60 + len(urls) * WebVitalsSettings().run_timeout
        job = wait_finished(probe, job_id, worker, timeout)
        used = procstat.proc_cpu(worker.proc.pid, reaped=True) - cpu_before
        peak = sampler.stop()
        if job.state != "completed":
            raise RuntimeError(f"the job failed: {job.error_code}: {job.error_message}")
        scores, errors = _item_scores(probe, job_id)
        seconds = (job.completed_at - job.started_at).total_seconds()
        label = f"seojobs worker, {concurrency} at once"
        timings = _report_timings(reports)
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
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


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
    sampler = procstat.TreeSampler(os.getpid(), interval=POLL, skip_root=True, pss=True)
    cpu_before = procstat.children_cpu()
    started = time.monotonic()
    for url in urls:
        with tempfile.TemporaryDirectory(prefix="vitals-cli-", dir=tmp) as scratch:
            out = os.path.join(scratch, "report.json")
            cmd = runner.command(browser, url, "mobile", LOOPBACK_ONLY, out)
            began = time.monotonic()
            done = subprocess.run(
                cmd,
                env={**env, "TMPDIR": scratch},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=browser.timeout,
                check=False,
            )
            walls.append(time.monotonic() - began)
            reap_orphans()
            try:
                raw = json.loads(Path(out).read_text())
            except (OSError, ValueError):
                errors.append(f"{url}: exit {done.returncode}: {done.stderr[-300:]!r}")
                continue
            scores[url] = score(raw)
            timings.append(raw["timing"]["total"] / 1000)
    seconds = time.monotonic() - started
    used = procstat.children_cpu() - cpu_before
    peak = sampler.stop()
    return VitalsRun(
        "Lighthouse CLI, one after another", seconds, used, peak, scores, timings, walls, errors
    )
