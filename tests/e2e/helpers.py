"""Helpers for end-to-end tests: real `seojobs` processes, real databases, loopback HTTP.

A short command (``run_cli``) is a process forked from a zygote that imported the CLI once
(tests/clifork.py: start-up CPU), and so is a long-running one (``Spawner``: ``serve``,
``worker``, ``poll``) unless started with ``console_script=True``; those and tests.clifork's
``run_console_script`` run the installed console script itself."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from sqlalchemy import func, inspect, select

from seojobs.engine.registry import Registry
from seojobs.records import JobRecord, UserRecord
from seojobs.services import Services
from seojobs.store.db import Database
from seojobs.store.tables import job_items
from tests import kinds
from tests.clifork import Process, popen, run_forked
from tests.conftest import make_settings
from tests.waiting import wait_until

# Generous bounds for a process to do something; never used as a sleep.
PROCESS_TIMEOUT = 60.0
# A server's start (its imports, the app, the worker) on a loaded machine: a minute was not
# always enough there (a 2-core machine running several suites). The wait fails at once if the
# process dies, so the bound costs nothing when it starts.
STARTUP_TIMEOUT = 180.0
SCHEMA_TABLES = {"users", "projects", "schedules", "jobs", "job_items", "leaders"}


def run_cli(
    *args: str, env: dict[str, str], cwd: Path, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run one `seojobs` command to completion (stdin /dev/null) and capture its output, in a
    process forked from the zygote (tests/clifork.py)."""
    return run_forked(*args, env=env, cwd=cwd, timeout=timeout)


# The first port a test hands a server it starts (below it: the machine's own services).
FIRST_PORT = 10000


def port_block(worker: str, workers: int, ephemeral_low: int) -> range:
    """The ports ``free_port`` hands out in the pytest process ``worker`` (xdist's gw0, gw1,
    ...) of ``workers``: a block of its own, below the kernel's ephemeral range (which starts
    at ``ephemeral_low``)."""
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = (ephemeral_low - FIRST_PORT) // max(workers, index + 1)
    return range(FIRST_PORT + index * size, FIRST_PORT + (index + 1) * size)


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


_PORTS = port_block(
    os.environ.get("PYTEST_XDIST_WORKER", "gw0"),
    int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")),
    _ephemeral_low(),
)
# From a random place in it: two suites run side by side (two work trees) seldom meet.
_next_port = [random.randrange(len(_PORTS))]


def free_port() -> int:
    """A loopback port free now, for a server a test is about to start. Not one the kernel
    picked (a bind to port 0): that port went back to the kernel's ephemeral range when the
    probe closed, and another test's server or fake binding port 0 (or another pytest worker's
    free_port) could take it before ours did. Our server's bind then failed, and the test
    talked to the other process: a 401 for a key its database did not hold, seen under load.
    Each pytest worker takes ports from a block of its own below that range instead, in turn,
    skipping any in use."""
    for _ in range(len(_PORTS)):
        port = _PORTS[_next_port[0] % len(_PORTS)]
        _next_port[0] += 1
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORTS}")


def env_without_seojobs() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SEOJOBS_")}


@dataclass
class Proc:
    """A running `seojobs` process whose combined output goes to a log file."""

    popen: Process
    log_path: Path
    _log_file: IO[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        self._log_file.flush()
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def sigterm(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = PROCESS_TIMEOUT) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"process {self.pid} still running after {timeout}s; output:\n{self.output()}"
            ) from None

    def stop(self) -> None:
        """Teardown: SIGTERM, then SIGKILL if it does not go; always reaped."""
        try:
            if self.alive():
                self.popen.send_signal(signal.SIGTERM)
                try:
                    self.popen.wait(timeout=PROCESS_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait(timeout=PROCESS_TIMEOUT)
        finally:
            self._log_file.close()


class Spawner:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[Proc] = []

    def __call__(
        self, *args: str, env: dict[str, str], name: str, console_script: bool = False
    ) -> Proc:
        """``seojobs ARGS`` in the workdir, stdin /dev/null, its output to a log: forked from
        the zygote, or with ``console_script`` the installed script itself."""
        log_path = self.workdir / f"{name}-{len(self.procs)}.log"
        log_file = log_path.open("wb")
        try:
            process = popen(
                *args,
                env=env,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                console_script=console_script,
            )
        except BaseException:
            log_file.close()
            raise
        proc = Proc(process, log_path, log_file)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        errors: list[BaseException] = []
        for proc in reversed(self.procs):
            try:
                proc.stop()
            except BaseException as exc:  # stop the others before reporting
                errors.append(exc)
        if errors:
            raise errors[0]


def _get_status(client: httpx.Client, url: str) -> int | None:
    try:
        return client.get(url).status_code
    except httpx.TransportError:
        return None


def wait_http_ok(proc: Proc, url: str, interval: float = 0.05) -> None:
    """Wait until ``url`` answers 200 (tried every ``interval`` seconds), failing at once (with
    the log) if the process died.
    One client for every try: each new client loads the CA certificates (about 27 ms of CPU),
    and a start on a loaded machine takes dozens of tries, a few CPU-seconds per start."""
    with httpx.Client(timeout=2.0) as client:

        def check() -> bool:
            if not proc.alive():
                raise AssertionError(
                    f"process exited with {proc.popen.returncode} before {url} answered; "
                    f"output:\n{proc.output()}"
                )
            return _get_status(client, url) == 200

        wait_until(check, timeout=STARTUP_TIMEOUT, interval=interval)


@contextlib.contextmanager
def open_services(url: str) -> Iterator[Services]:
    """The service facade over ``url`` with the test kinds, in the test process."""
    db = Database(url)
    registry = Registry()
    kinds.register(registry)
    try:
        yield Services(db, make_settings(url), registry)
    finally:
        db.dispose()


def make_user(services: Services, name: str = "e2e") -> UserRecord:
    return services.accounts.create_user(name).user


def refresh(services: Services, user: UserRecord, job: JobRecord) -> JobRecord:
    return services.jobs.get(user, job.id)


def item_states(services: Services, job_id: int) -> dict[str, str]:
    """input -> state for every item of a job."""
    with services.db.read() as conn:
        rows = conn.execute(
            select(job_items.c.input, job_items.c.state).where(job_items.c.job_id == job_id)
        ).all()
    return {str(i): str(s) for i, s in rows}


def log_starts(services: Services, job_id: int) -> list[tuple[str, int]]:
    """(item, pid) of every "start" the test_items kind logged for a job, in order."""
    table = kinds.test_log
    with services.db.read() as conn:
        rows = conn.execute(
            select(table.c.item, table.c.pid)
            .where(table.c.job_id == job_id, table.c.event == "start")
            .order_by(table.c.id)
        ).all()
    return [(str(item), int(pid)) for item, pid in rows]


def count_starts(services: Services, job_id: int) -> int:
    table = kinds.test_log
    with services.db.read() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(table)
                .where(table.c.job_id == job_id, table.c.event == "start")
            ).scalar_one()
        )


def table_names(url: str) -> set[str]:
    db = Database(url)
    try:
        with db.engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        db.dispose()


def all_rows(url: str, table: Any) -> list[dict[str, Any]]:
    db = Database(url)
    try:
        with db.read() as conn:
            return [dict(r._mapping) for r in conn.execute(select(table))]
    finally:
        db.dispose()
