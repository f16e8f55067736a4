"""Servers a test owns and may stop, freeze or restart: a PostgreSQL cluster in a temporary
directory and a redis-server, each on a free loopback port. Never the shared servers.

PostgreSQL comes from Debian's packages (``/usr/lib/postgresql/<version>/bin``, or
``SEOJOBS_TEST_PG_BIN``). initdb refuses to run as root: as root, the cluster belongs to the
``postgres`` user (``runuser``). Missing tools skip the test, or fail it under ``CI=true``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import IN_CI
from tests.e2e.helpers import free_port
from tests.orphans import for_popen
from tests.waiting import wait_until

BOUND = 60.0  # seconds any start or stop may take before the test fails


def _missing(what: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} (CI=true: these tests must run)", pytrace=False)
    pytest.skip(what)


def _pg_bin() -> Path | None:
    named = os.environ.get("SEOJOBS_TEST_PG_BIN")
    if named:
        return Path(named)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    return found[0].parent if found else None


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (a postmaster's backends and helpers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")".
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


class OwnPostgres:
    def __init__(self) -> None:
        binaries = _pg_bin()
        if binaries is None or not (binaries / "pg_ctl").exists():
            _missing("PostgreSQL's initdb/pg_ctl not found (SEOJOBS_TEST_PG_BIN)")
        assert binaries is not None
        self.bin = binaries
        self.as_root = os.geteuid() == 0
        if self.as_root and shutil.which("runuser") is None:
            _missing("running as root without runuser: initdb cannot run")
        # Not under pytest's tmp_path: as root that is private to root, and the cluster's
        # owner must reach its directory.
        self.folder = Path(tempfile.mkdtemp(prefix="seojobs-own-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        if self.as_root:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=BOUND, check=False)
        assert done.returncode == 0, f"{tool} failed: {done.stdout}\n{done.stderr}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        log = str(self.folder / "server.log")
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "-t", "60", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def _processes(self) -> list[int]:
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return [postmaster, *_children(postmaster)]

    def freeze(self) -> list[int]:
        """SIGSTOP the server and all its processes: it accepts connections (the kernel does)
        and answers nothing, as a hung server or a dropped network path does."""
        frozen = self._processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        return frozen

    @staticmethod
    def thaw(frozen: list[int]) -> None:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        try:
            if self.running():
                with contextlib.suppress(Exception):
                    self.thaw(self._processes())
                self.stop("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


class OwnRedis:
    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            _missing("redis-server not found")
        assert binary is not None
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.folder)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **for_popen(),
        )

        def accepts() -> bool:
            with socket.socket() as sock:
                sock.settimeout(1)
                return sock.connect_ex(("127.0.0.1", self.port)) == 0

        wait_until(accepts, timeout=BOUND)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # in case it was frozen
            self.proc.terminate()
            self.proc.wait(timeout=BOUND)
        self.proc = None

    def freeze(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


@contextlib.contextmanager
def running_postgres() -> Iterator[OwnPostgres]:
    """A new cluster, started; stopped and removed at the end."""
    server = OwnPostgres()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    try:
        server.start()
        yield server
    finally:
        server.stop()
