"""``seojobs report`` (a job's per-URL rows, CSV or JSON) and ``seojobs jobs`` (the state file)."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

from seojobs.client import errors
from seojobs.client._base import KIND_PATH
from seojobs.client.cli_common import Conn, Exit, Output, UsageProblem
from seojobs.client.cli_submit import resolve_jobs
from seojobs.client.state import Entry, StateFile

COLUMNS = ("JOB", "KIND", "STATE", "STATUS", "URLS", "CREATED", "NOTE")


def run_report(conn: Conn, out: Output, job_id: int, *, kind: str | None, fmt: str) -> int:
    with conn.client() as client, conn.state() as state:
        [(job_kind, _)] = resolve_jobs(client, state, conn.url, [job_id], kind)
        if job_kind not in KIND_PATH:
            raise UsageProblem(
                f"job {job_id} is a {job_kind} job: `seojobs report` prints the per-URL report "
                "of index_submit and index_check jobs (`seojobs wait --json` shows any job)"
            )
        if fmt == "csv":
            for chunk in client.report_csv(job_kind, job_id):
                out.raw(chunk)
            return Exit.OK
        rows = [row.model_dump(mode="json") for row in client.report(job_kind, job_id)]
        out.json({"job_id": job_id, "kind": job_kind, "rows": rows})
    return Exit.OK


def run_jobs(conn: Conn, out: Output, *, refresh: bool, only_open: bool) -> int:
    with conn.state() as state:
        if refresh:
            _refresh(conn, state)
        entries = state.entries(server=conn.url)
        others = len(state.entries()) - len(entries)
    if only_open:
        entries = [e for e in entries if e.state != "done"]
    if out.as_json:
        out.json([entry_document(e) for e in entries])
    else:
        _table(out, entries)
    if others:
        out.info(f"({others} job(s) of other servers in {conn.state_path}; see them with --url)")
    return Exit.OK


def _refresh(conn: Conn, state: StateFile) -> None:
    """Ask the server for the status of every open job (one batched read per kind). Results
    are saved by `seojobs poll`, not here."""
    by_kind: dict[str, list[int]] = {}
    others: list[int] = []  # jobs of any other type: read one by one on /v1/jobs/{id}
    for entry in state.entries(state="open", server=conn.url):
        if entry.job_id is None:
            continue
        if entry.kind in KIND_PATH:
            by_kind.setdefault(entry.kind, []).append(entry.job_id)
        else:
            others.append(entry.job_id)
    with conn.client() as client:
        for kind, ids in by_kind.items():
            for job in client.index_jobs(kind, ids=ids):
                state.update_status(conn.url, kind, job.job_id, job.status)
        for job_id in others:
            with contextlib.suppress(errors.NotFoundError):  # `seojobs poll` reports those
                read = client.jobs.get(job_id)
                state.update_status(conn.url, read.type, read.id, read.status)


def entry_document(entry: Entry) -> dict[str, Any]:
    params = entry.request.get("params")
    urls = (params if isinstance(params, dict) else entry.request).get("urls")
    return {
        "job_id": entry.job_id,
        "kind": entry.kind,
        "state": entry.state,
        "status": entry.status,
        "urls": len(urls) if isinstance(urls, list) else None,
        "created_at": _iso(entry.created_at),
        "follow_up_of": entry.follow_up_of,
        "surface": entry.surface,
        "result_saved": entry.result is not None,
        "server": entry.server,
        "local_id": entry.local_id,
    }


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )  # as the API writes


def _table(out: Output, entries: list[Entry]) -> None:
    """Plain aligned columns on stdout: easy to read, grep and cut."""
    rows = [COLUMNS]
    for entry in entries:
        doc = entry_document(entry)
        note = f"check of {entry.follow_up_of}" if entry.follow_up_of else ""
        if entry.state == "submitting":
            note = f"answer not recorded (local {entry.local_id}); `seojobs poll` replays it"
        rows.append(
            (
                str(entry.job_id or "-"),
                entry.kind,
                entry.state,
                entry.status or "-",
                "-" if doc["urls"] is None else str(doc["urls"]),
                doc["created_at"],
                note,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    for row in rows:
        out.data("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
