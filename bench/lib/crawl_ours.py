"""``bench/audit.py``'s seojobs run: one ``seojobs worker`` process runs one ``site_audit`` job.

How it works and what each figure counts: docs/bench/audit.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lib import REPO, procstat
from seojobs.kinds import load_registry
from seojobs.records import JobRecord
from seojobs.services import Services
from seojobs.settings import Settings
from seojobs.store import jobs as job_sql
from seojobs.store.db import Database

START_TIMEOUT = 60.0
POLL = 0.05  # seconds between reads of the job's state
# A 100,000-page audit is charged past the default daily page quota (50,000).
QUOTAS = {"audit_pages_daily": 10_000_000, "audit_pages_monthly": 10_000_000}
SAMPLE = 0.1  # seconds between samples of the worker's process tree (render: Chromium's)


@dataclass(frozen=True)
class OursRun:
    seconds: float
    pages: int  # pages fetched and stored with status 200
    blocked: int  # links robots.txt disallows: stored as blocked, never fetched
    cpu: float
    peak_rss: int
    issues: int  # findings in the summary (per page and site-wide)


def worker_env(url: str, concurrency: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}
    env.update(
        SEOJOBS_DATABASE_URL=url,
        SEOJOBS_ALLOW_PRIVATE_NETWORKS="true",  # the site is on loopback
        SEOJOBS_SITE_AUDIT_CONCURRENCY=str(concurrency),
        SEOJOBS_FETCH_HOST_CONCURRENCY=str(concurrency),
        SEOJOBS_FETCH_HOST_DELAY="0",
        SEOJOBS_LOG_FORMAT="plain",
        **{f"SEOJOBS_QUOTA_{key.upper()}": str(limit) for key, limit in QUOTAS.items()},
    )
    return env


class WorkerProcess:
    """``seojobs worker`` as a child process, its log lines kept in ``log``."""

    def __init__(self, env: dict[str, str], log: Path, cpu: int | None) -> None:
        seojobs = Path(sys.executable).with_name("seojobs")
        self.log = log
        self.started = threading.Event()
        self.proc = subprocess.Popen(
            [str(seojobs), "worker", "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
        )
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        with self.log.open("ab") as out:
            for line in self.proc.stderr:
                out.write(line)
                if b"starting" in line:
                    self.started.set()

    def wait_idle(self) -> None:
        """Until it logged its start and then used no CPU for 0.2 s (imports and connections
        done): CPU read after that is the job's."""
        deadline = time.monotonic() + START_TIMEOUT
        while not self.started.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start; see {self.log}")
        before = procstat.proc_cpu(self.proc.pid)
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = procstat.proc_cpu(self.proc.pid)
            if now - before < 0.01:
                return
            before = now
        raise RuntimeError("the worker kept busy before any job was created")

    def stop(self) -> None:
        procstat.stop(self.proc, timeout=30)


def create_job(url: str, user_id: int, kind: str, params: dict[str, Any]) -> int:
    """A job created through ``services.jobs.create``, as the API creates it; its id."""
    settings = Settings(database_url=url, allow_private_networks=True, quota_limits=QUOTAS)
    db = Database(url)
    try:
        services = Services(db, settings, load_registry(settings))
        job, created = services.jobs.create(services.user(user_id), kind, params)
        assert created, job
        return job.id
    finally:
        db.dispose()


def wait_finished(probe: Database, job_id: int, worker: WorkerProcess, timeout: float) -> JobRecord:
    """The job once it is ``completed`` or ``failed`` (raises if the worker exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with probe.read() as conn:
            job = job_sql.get(conn, job_id)
        assert job is not None
        if job.state in ("completed", "failed"):
            return job
        if worker.proc.poll() is not None:
            raise RuntimeError(f"the worker exited ({worker.proc.returncode}); see {worker.log}")
        time.sleep(POLL)
    raise TimeoutError(f"job {job_id} did not finish within {timeout:.0f} s")


def _wait_done(probe: Database, job_id: int, worker: WorkerProcess, timeout: float) -> None:
    job = wait_finished(probe, job_id, worker, timeout)
    if job.state == "failed":
        raise RuntimeError(f"the audit failed: {job.error_code}: {job.error_message}")


def _check(probe: Database, job_id: int) -> tuple[float, int, int, int]:
    """(seconds from claim to completion, pages stored with 200, blocked, issues), after
    checking that every page is stored once and the summary counts them."""
    urls: list[str] = []
    pages = blocked = 0
    with probe.read() as conn:
        job = job_sql.get(conn, job_id)
        assert job is not None and job.started_at and job.completed_at and job.result
        after = -1
        while batch := job_sql.items_page(conn, job_id, after_seq=after, limit=1000):
            for item in batch:
                record = item.result or {}
                urls.append(record.get("url", ""))
                pages += record.get("status") == 200
                blocked += bool(record.get("blocked_by_robots"))
            after = batch[-1].seq
    if len(set(urls)) != len(urls) or job.items_done != len(urls):
        raise RuntimeError(f"{len(urls)} items, {len(set(urls))} distinct, {job.items_done} done")
    summary = job.result
    if summary["pages_crawled"] != pages or summary["pages_blocked_by_robots"] != blocked:
        raise RuntimeError(f"the summary says {summary['pages_crawled']} pages, stored {pages}")
    seconds = (job.completed_at - job.started_at).total_seconds()
    return seconds, pages, blocked, int(summary["issues"])


def audit(
    url: str,
    user_id: int,
    start_url: str,
    concurrency: int,
    max_pages: int,
    log: Path,
    cpu: int | None,
    on_start: Callable[[int], None] | None = None,
    render: str = "raw",
) -> OursRun:
    """One audit by a fresh worker process; ``on_start`` gets its pid once it is idle (to
    attach a profiler). Peak RSS: the worker's high-water mark (VmHWM), or with ``render``
    "js" the largest sum sampled over it and its renderers (Node and Chromium, each by its
    PSS: Chromium's processes share their libraries), whichever is larger."""
    worker = WorkerProcess(worker_env(url, concurrency), log, cpu)
    probe = Database(url, pool_size=1)
    try:
        worker.wait_idle()
        if on_start is not None:
            on_start(worker.proc.pid)
        cpu_before = procstat.proc_cpu(worker.proc.pid)
        tree = procstat.TreeSampler(worker.proc.pid, interval=SAMPLE, pss=render != "raw")
        params = {"start_url": start_url, "max_pages": max_pages, "render": render}
        job_id = create_job(url, user_id, "site_audit", params)
        try:
            _wait_done(
                probe, job_id, worker, timeout=60 + max_pages / (5 if render == "raw" else 1)
            )
        finally:
            sampled = tree.stop()
        used = procstat.proc_cpu(worker.proc.pid) - cpu_before
        peak = sum(procstat.peak_rss_bytes(p) for p in procstat.descendants(worker.proc.pid))
        seconds, pages, blocked, issues = _check(probe, job_id)
        return OursRun(seconds, pages, blocked, used, max(peak, sampled), issues)
    finally:
        worker.stop()
        probe.dispose()
