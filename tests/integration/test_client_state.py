"""The client's state file on a real SQLite file: intent before the POST, done only with the
result, at most one save per job across processes, and the poller's file lock."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seojobs.client.state import StateFile, default_path
from tests.conftest import ROOT

SERVER = "http://127.0.0.1:8000"
REQUEST = {"urls": ["https://a.example/"], "engine": "bing"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "state.db"


def test_intent_is_recorded_with_its_key_before_any_job_exists(path: Path) -> None:
    with StateFile(path) as state:
        first = state.intend(SERVER, "index_submit", REQUEST)
        second = state.intend(SERVER, "index_submit", REQUEST)
    with StateFile(path) as reopened:  # it is on disk, not only in this connection
        entry = reopened.get(first.local_id)
    assert entry is not None
    assert (entry.state, entry.job_id, entry.kind) == ("submitting", None, "index_submit")
    assert entry.request == REQUEST and entry.created_at > 0
    assert entry.idempotency_key == first.idempotency_key
    assert first.idempotency_key != second.idempotency_key  # one key per intended job


def test_submitted_opens_the_entry_and_abandon_only_drops_unanswered_ones(path: Path) -> None:
    with StateFile(path) as state:
        answered = state.intend(SERVER, "index_submit", REQUEST)
        refused = state.intend(SERVER, "index_submit", REQUEST)
        state.submitted(answered.local_id, 41, "pending")
        assert state.abandon(answered.local_id) is False  # has a job: kept
        assert state.abandon(refused.local_id) is True
        entry = state.get(answered.local_id)
        assert entry is not None
        assert (entry.state, entry.job_id, entry.status) == ("open", 41, "pending")
        assert state.get(refused.local_id) is None


def test_a_replayed_answer_for_a_job_already_tracked_leaves_one_row(path: Path) -> None:
    with StateFile(path) as state:
        entry = state.intend(SERVER, "index_submit", REQUEST)
        state.track(SERVER, "index_submit", 7)  # e.g. `seojobs wait 7` ran meanwhile
        state.submitted(entry.local_id, 7, "pending")
        rows = state.entries(server=SERVER)
    assert [(r.job_id, r.state) for r in rows] == [(7, "open")]


def test_track_is_idempotent_and_keeps_the_follow_up_link(path: Path) -> None:
    with StateFile(path) as state:
        state.track(SERVER, "index_check", 9, follow_up_of=8)
        state.track(SERVER, "index_check", 9, follow_up_of=8)
        state.track("http://other:8000", "index_check", 9)
        [mine] = state.entries(server=SERVER)
        assert (mine.job_id, mine.follow_up_of, mine.state) == (9, 8, "open")
        assert [e.kind for e in state.lookup(SERVER, 9)] == ["index_check"]
        assert len(state.entries()) == 2


def test_done_only_with_the_result_and_only_once(path: Path) -> None:
    with StateFile(path) as first, StateFile(path) as second:
        entry = first.intend(SERVER, "index_submit", REQUEST)
        assert first.finish(SERVER, "index_submit", 5, "completed", {"n": 0}) is False  # no job
        first.submitted(entry.local_id, 5, "pending")
        first.update_status(SERVER, "index_submit", 5, "processing")
        assert first.finish(SERVER, "index_submit", 5, "completed", {"n": 1}) is True
        assert second.finish(SERVER, "index_submit", 5, "completed", {"n": 2}) is False
        second.update_status(SERVER, "index_submit", 5, "pending")  # a stale reader: ignored
        done = second.get(entry.local_id)
    assert done is not None
    assert (done.state, done.status, done.result) == ("done", "completed", {"n": 1})


FINISH = textwrap.dedent(
    """
    import sys
    from seojobs.client.state import StateFile
    sys.stdin.readline()  # start together
    with StateFile(sys.argv[1]) as state:
        won = state.finish(sys.argv[2], "index_submit", 5, "completed", {"by": sys.argv[3]})
    print("won" if won else "lost")
    """
)


def test_concurrent_processes_save_a_result_exactly_once(path: Path) -> None:
    with StateFile(path) as state:
        entry = state.intend(SERVER, "index_submit", REQUEST)
        state.submitted(entry.local_id, 5, "pending")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FINISH, str(path), SERVER, str(n)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(6)
    ]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outcomes = [proc.communicate(timeout=60)[0].strip() for proc in procs]
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    winner = str(outcomes.index("won"))
    with StateFile(path) as state:
        done = state.get(entry.local_id)
    assert done is not None and done.result == {"by": winner}


HOLD_LOCK = textwrap.dedent(
    """
    import sys
    from seojobs.client.state import StateFile
    with StateFile(sys.argv[1]) as state, state.lock() as held:
        print("held" if held else "busy", flush=True)
        sys.stdin.readline()
    """
)


def test_the_lock_excludes_another_process_until_released(path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline().strip() == "held"
            with StateFile(path) as state:
                with state.lock() as held:
                    assert held is False
                holder.stdin.write("done\n")
                holder.stdin.flush()
                assert holder.wait(timeout=30) == 0
                with state.lock() as held:
                    assert held is True
                    with StateFile(path) as other, other.lock() as also:
                        assert also is False  # one lock per file, even within a process
        finally:
            if holder.poll() is None:
                holder.kill()


def test_default_path_is_the_user_state_dir_unless_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEOJOBS_STATE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_path() == tmp_path / "xdg" / "seojobs" / "state.db"
    monkeypatch.setenv("SEOJOBS_STATE", str(tmp_path / "mine.db"))
    assert default_path() == tmp_path / "mine.db"
    with StateFile() as state:
        assert state.path == tmp_path / "mine.db"


# The schema of the first release, before jobs of any type could be submitted (no surface).
FIRST_RELEASE = """
CREATE TABLE jobs (
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
    follow_up_of INTEGER
);
CREATE UNIQUE INDEX jobs_server_kind_id ON jobs (server, kind, job_id);
INSERT INTO jobs (server, kind, idempotency_key, request, state, created_at, updated_at)
VALUES ('http://127.0.0.1:8000', 'index_submit', 'k-1', '{"urls": ["https://a.example/"]}',
        'submitting', 1.0, 1.0);
"""


def test_a_file_of_the_first_release_keeps_its_entries_as_v1_and_takes_typed_ones(
    path: Path,
) -> None:
    path.parent.mkdir(parents=True)
    old = sqlite3.connect(path)
    old.executescript(FIRST_RELEASE)
    old.close()
    for _ in range(2):  # opening it again changes nothing
        with StateFile(path) as state:
            [entry] = state.entries()
            assert (entry.kind, entry.surface, entry.state) == ("index_submit", "v1", "submitting")
            assert entry.idempotency_key == "k-1"  # a replay still sends the saved key
    with StateFile(path) as state:
        typed = state.intend(SERVER, "site_audit", {"project_id": 1}, surface="projects")
        state.track(SERVER, "test_noop", 9, surface="projects")
        surfaces = [(e.kind, e.surface) for e in state.entries()]
    assert typed.surface == "projects"
    assert surfaces == [
        ("index_submit", "v1"),
        ("site_audit", "projects"),
        ("test_noop", "projects"),
    ]


def test_an_unknown_surface_is_refused(path: Path) -> None:
    with StateFile(path) as state, pytest.raises(ValueError, match="surface"):
        state.intend(SERVER, "test_noop", {}, surface="v2")
