"""The client's state file: what was submitted, so a cron-driven run resumes, never resubmits.

A SQLite file in the platform's user-state directory (``SEOJOBS_STATE`` or ``--state``
overrides it). The idempotency key is written *before* the POST is sent: a run that crashed
between sending and saving the job id replays the same key and gets the same job back. A job
is marked done only after its final result has been saved. ``lock()`` keeps two overlapping
cron runs from polling at once.

``kind`` is the job's type; ``surface`` says where its submission goes: ``v1`` (the indexing
API, ``seojobs submit URL…``) or ``projects`` (``seojobs submit --type TYPE``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_state_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    local_id INTEGER PRIMARY KEY AUTOINCREMENT,
    server TEXT NOT NULL,
    kind TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    request TEXT NOT NULL,
    job_id INTEGER,
    state TEXT NOT NULL CHECK (state IN ('submitting', 'open', 'done')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    status TEXT,
    result TEXT,
    follow_up_of INTEGER,
    surface TEXT NOT NULL DEFAULT 'v1'
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_server_kind_id ON jobs (server, kind, job_id);
"""
# Files written before jobs of any type could be submitted have no surface: all theirs are v1.
ADD_SURFACE = "ALTER TABLE jobs ADD COLUMN surface TEXT NOT NULL DEFAULT 'v1'"
SURFACES = ("v1", "projects")


def default_path() -> Path:
    override = os.environ.get("SEOJOBS_STATE")
    if override:
        return Path(override)
    return Path(user_state_dir("seojobs")) / "state.db"


@dataclass(frozen=True)
class Entry:
    local_id: int
    server: str
    kind: str
    idempotency_key: str
    request: dict[str, Any]
    job_id: int | None
    state: str
    created_at: float
    status: str | None
    result: dict[str, Any] | None
    follow_up_of: int | None
    surface: str = "v1"


class StateFile:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(SCHEMA)
        self._add_surface()

    def _add_surface(self) -> None:
        with self._transaction():
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(jobs)")}
            if "surface" not in columns:
                self._conn.execute(ADD_SURFACE)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> StateFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def lock(self, *, blocking: bool = False) -> Iterator[bool]:
        """An exclusive lock for one poller run; yields False if another run holds it."""
        lock_path = self.path.with_suffix(self.path.suffix + ".lock")
        with open(lock_path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- writes ------------------------------------------------------------------------

    def intend(
        self, server: str, kind: str, request: dict[str, Any], *, surface: str = "v1"
    ) -> Entry:
        """Record a submission before it is sent, with the key it will be sent with."""
        if surface not in SURFACES:
            raise ValueError(f"surface: one of {', '.join(SURFACES)}")
        key = str(uuid.uuid4())
        now = time.time()
        cur = self._conn.execute(
            "INSERT INTO jobs (server, kind, idempotency_key, request, state, created_at,"
            " updated_at, surface) VALUES (?, ?, ?, ?, 'submitting', ?, ?, ?)",
            (server, kind, key, json.dumps(request), now, now, surface),
        )
        entry = self.get(int(cur.lastrowid or 0))
        assert entry is not None
        return entry

    def submitted(self, local_id: int, job_id: int, status: str) -> None:
        """Record the job id the POST answered with; the entry becomes open.

        If that job is already in the file (a ``seojobs wait`` tracked it, or a replay by a
        concurrent run saved it first) the submitting entry is dropped instead: one job, one row.
        """
        with self._transaction():
            entry = self.get(local_id)
            if entry is None or entry.job_id == job_id:
                return
            other = self.find(entry.server, entry.kind, job_id)
            if other is not None and other.local_id != local_id:
                self._conn.execute(
                    "DELETE FROM jobs WHERE local_id = ? AND state = 'submitting'", (local_id,)
                )
                return
            self._conn.execute(
                "UPDATE jobs SET job_id = ?, state = 'open', status = ?, updated_at = ?"
                " WHERE local_id = ? AND state = 'submitting'",
                (job_id, status, time.time(), local_id),
            )

    def abandon(self, local_id: int) -> bool:
        """Forget a submission the server refused (or never received): no job exists for it.

        Only an entry still ``submitting`` goes; False if there was none.
        """
        cur = self._conn.execute(
            "DELETE FROM jobs WHERE local_id = ? AND state = 'submitting'", (local_id,)
        )
        return cur.rowcount == 1

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE: take the write lock up front, so the read-then-write above is atomic
        # against another process using the same file.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def track(
        self,
        server: str,
        kind: str,
        job_id: int,
        *,
        follow_up_of: int | None = None,
        surface: str = "v1",
    ) -> None:
        """Watch a job created elsewhere (``seojobs wait``, a followed scheduled check)."""
        now = time.time()
        self._conn.execute(
            "INSERT OR IGNORE INTO jobs (server, kind, idempotency_key, request, job_id, state,"
            " created_at, updated_at, follow_up_of, surface)"
            " VALUES (?, ?, ?, '{}', ?, 'open', ?, ?, ?, ?)",
            (server, kind, f"tracked:{uuid.uuid4()}", job_id, now, now, follow_up_of, surface),
        )

    def update_status(self, server: str, kind: str, job_id: int, status: str) -> None:
        self._conn.execute(
            "UPDATE jobs SET status = ?, updated_at = ? WHERE server = ? AND kind = ?"
            " AND job_id = ? AND state = 'open'",
            (status, time.time(), server, kind, job_id),
        )

    def finish(
        self, server: str, kind: str, job_id: int, status: str, result: dict[str, Any]
    ) -> bool:
        """Save the final result and mark the job done, in one statement. False if it was
        already done (a concurrent run saved it first)."""
        cur = self._conn.execute(
            "UPDATE jobs SET state = 'done', status = ?, result = ?, updated_at = ?"
            " WHERE server = ? AND kind = ? AND job_id = ? AND state = 'open'",
            (status, json.dumps(result), time.time(), server, kind, job_id),
        )
        return cur.rowcount == 1

    # -- reads -------------------------------------------------------------------------

    def get(self, local_id: int) -> Entry | None:
        row = self._conn.execute(_SELECT + " WHERE local_id = ?", (local_id,)).fetchone()
        return _entry(row) if row else None

    def entries(self, *, state: str | None = None, server: str | None = None) -> list[Entry]:
        query = _SELECT + " WHERE 1 = 1"
        args: list[Any] = []
        if state:
            query += " AND state = ?"
            args.append(state)
        if server:
            query += " AND server = ?"
            args.append(server)
        return [_entry(r) for r in self._conn.execute(query + " ORDER BY local_id", args)]

    def find(self, server: str, kind: str, job_id: int) -> Entry | None:
        row = self._conn.execute(
            _SELECT + " WHERE server = ? AND kind = ? AND job_id = ?",
            (server, kind, job_id),
        ).fetchone()
        return _entry(row) if row else None

    def lookup(self, server: str, job_id: int) -> list[Entry]:
        """Entries of this server with this job id, whatever their kind."""
        rows = self._conn.execute(
            _SELECT + " WHERE server = ? AND job_id = ? ORDER BY local_id", (server, job_id)
        )
        return [_entry(r) for r in rows]


# Constant text only; every value goes in as a parameter.
_SELECT = (
    "SELECT local_id, server, kind, idempotency_key, request, job_id, state, created_at,"
    " status, result, follow_up_of, surface FROM jobs"
)


def _entry(row: tuple[Any, ...]) -> Entry:
    return Entry(
        local_id=row[0],
        server=row[1],
        kind=row[2],
        idempotency_key=row[3],
        request=json.loads(row[4]),
        job_id=row[5],
        state=row[6],
        created_at=row[7],
        status=row[8],
        result=json.loads(row[9]) if row[9] else None,
        follow_up_of=row[10],
        surface=row[11],
    )
