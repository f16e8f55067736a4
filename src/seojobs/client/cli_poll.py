"""``seojobs poll``: resume every open job of the state file, from a terminal or from cron.

Under an exclusive file lock (a second run at the same time skips, exit 0), it first re-sends
any submission whose answer was never recorded, with its saved idempotency key, so the server
replays the original job instead of making a second one; then it reads every open job in
batched requests on one timer and saves each final result before marking the job done.
Nothing is ever submitted anew.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seojobs.client import errors
from seojobs.client.cli_common import Conn, Exit, Guard, Output
from seojobs.client.cli_submit import post
from seojobs.client.cli_watch import Watcher
from seojobs.client.state import StateFile
from seojobs.client.sync import Client


@dataclass
class Summary:
    resubmitted: list[dict[str, Any]] = field(default_factory=list)
    abandoned: list[dict[str, Any]] = field(default_factory=list)
    saved: list[dict[str, Any]] = field(default_factory=list)
    open: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    skipped: bool = False

    def document(self) -> dict[str, Any]:
        return {
            "skipped": self.skipped,
            "resubmitted": self.resubmitted,
            "abandoned": self.abandoned,
            "saved": self.saved,
            "open": self.open,
            "missing": self.missing,
        }


def run_poll(
    conn: Conn,
    out: Output,
    guard: Guard,
    *,
    once: bool,
    timeout: float | None,
    interval: float | None,
) -> int:
    summary = Summary()
    with conn.client() as client, conn.state() as state, state.lock() as held:
        if not held:
            out.info(f"another `seojobs poll` is running on {state.path}; skipping this run")
            summary.skipped = True
            _finish(out, summary)
            return Exit.OK
        guard.interrupted_hint = (
            "Nothing was cancelled; results saved so far are kept and the next "
            "`seojobs poll` resumes the rest."
        )
        replay(client, state, conn.url, out, summary)
        watcher = Watcher(client, state, out, server=conn.url, interval=interval)
        for entry in state.entries(state="open", server=conn.url):
            assert entry.job_id is not None
            watcher.add(entry.kind, entry.job_id, follow_up_of=entry.follow_up_of)
        if watcher.open:
            try:
                missing = watcher.run(once=once, timeout=timeout)
            except errors.WaitTimeout:
                _record(summary, watcher)
                _finish(out, summary)  # what was saved before the deadline
                raise
            _record(summary, watcher)
            for key in missing:
                kind, job_id = watcher.type_of(key), key[1]
                out.warn(
                    f"the server at {conn.url} does not know {kind} job {job_id} (pruned, or "
                    "made with another API key); it stays open in the state file"
                )
                summary.missing.append({"kind": kind, "job_id": job_id})
        _finish(out, summary)
    return Exit.OK


def replay(client: Client, state: StateFile, server: str, out: Output, summary: Summary) -> None:
    """Re-send every submission still marked ``submitting`` with its recorded key."""
    for entry in state.entries(state="submitting", server=server):
        try:
            job = post(client, entry)
        except errors.ConflictError:
            out.warn(f"submission {entry.local_id} is still in flight on the server; next run")
            continue
        except (errors.InvalidRequestError, errors.NotFoundError) as exc:
            # The server refused the request itself, or its project is gone (deleted, with
            # any job the first try made): no job exists and none ever will.
            state.abandon(entry.local_id)
            out.warn(f"the server refused submission {entry.local_id} ({exc}); forgotten")
            summary.abandoned.append({"local_id": entry.local_id, "kind": entry.kind})
            continue
        state.submitted(entry.local_id, job.job_id, job.status)
        out.info(
            f"recorded {entry.kind} job {job.job_id} for submission {entry.local_id} "
            "(same idempotency key: the server's original job)"
        )
        summary.resubmitted.append(
            {"local_id": entry.local_id, "kind": entry.kind, "job_id": job.job_id}
        )


def _record(summary: Summary, watcher: Watcher) -> None:
    summary.saved = [
        {"kind": j.kind, "job_id": j.job_id, "status": j.status} for j in watcher.saved
    ]
    summary.open = [
        {
            "kind": watcher.type_of(key),
            "job_id": t.job_id,
            "status": t.last.status if t.last else None,
        }
        for key, t in watcher.scheduler.open.items()
    ]


def _finish(out: Output, summary: Summary) -> None:
    if out.as_json:
        out.json(summary.document())
        return
    if summary.skipped:
        return
    out.info(
        f"{len(summary.saved)} saved, {len(summary.open)} still open"
        + (f", {len(summary.resubmitted)} submission(s) recorded" if summary.resubmitted else "")
    )
