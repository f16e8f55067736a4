"""Per-URL reports: JSON pages with a cursor, or CSV streamed page by page.

The CSV is produced from pages of 500 items read one after another, so a 10,000-URL report
never holds every row in memory. Its cells go through ``seojobs.csvfile``, which neutralises
text that a spreadsheet would run as a formula; the JSON pages keep every value as it is.

A row's ``status`` is the item's outcome once it ran; ``pending`` while its job may still run
it; ``not_run`` when its job ended without running it (refused over quota, cancelled, or
failed before reaching it).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from seojobs import csvfile
from seojobs.api.ids import parse_cursor
from seojobs.api.paging import by_seq, paged
from seojobs.engine.registry import ReportColumn
from seojobs.records import ItemRecord, JobRecord, UserRecord
from seojobs.services import Services
from seojobs.timefmt import rfc3339_or_none

PAGE = 500
MAX_SEQ = 2**31 - 1  # item sequence numbers are 32-bit
CSV_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {"schema": {"type": "string"}}}}
}

COLUMNS = ["url", "status", "provider", "error_code", "error_message", "finished_at"]


class ReportRow(BaseModel):
    url: str
    status: str = Field(
        description="The item's outcome once it ran (e.g. submitted, indexed, failed); "
        "`pending` while its job may still run it; `not_run` when its job ended without "
        "running it (refused over quota, cancelled, or failed first)."
    )
    provider: str | None
    error_code: str | None
    error_message: str | None
    finished_at: datetime | None
    detail: dict[str, Any] | None
    diagnostics: dict[str, Any] | None


class ReportPage(BaseModel):
    job_id: int
    rows: list[ReportRow]
    next_cursor: str | None


def item_status(item: ItemRecord, job_final: bool) -> str:
    if item.state == "pending":
        # A final job never runs an item again (the store refuses changes to a finished job).
        return "not_run" if job_final else "pending"
    return item.outcome or ("failed" if item.state == "failed" else "done")


def row(item: ItemRecord, job: JobRecord) -> dict[str, Any]:
    result = item.result or {}
    detail = result.get("provider_detail")
    if detail is None:  # submissions keep the provider's detail at the top level
        detail = {k: v for k, v in result.items() if k not in ("provider", "diagnostics")} or None
    return {
        "url": item.input,
        "status": item_status(item, job.is_final),
        "provider": result.get("provider"),
        "error_code": item.error_code,
        "error_message": item.error_message,
        "finished_at": rfc3339_or_none(item.finished_at),
        "detail": detail,
        "diagnostics": result.get("diagnostics"),
    }


def cell(value: Any) -> csvfile.Cell:
    """One CSV cell: numbers stay numbers (csvfile writes them as they are), everything else
    becomes text, which csvfile guards against formulas."""
    if value is None or isinstance(value, int | float):
        return value
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " -> ".join(_text(v.get("url") if isinstance(v, dict) else v) for v in value)
    if isinstance(value, dict):
        directives = value.get("directives")
        if isinstance(directives, dict):  # per user agent: {"*": ["noindex", "follow"]}
            return "; ".join(
                f"{agent}: {','.join(str(d) for d in (found or []))}"
                for agent, found in directives.items()
            )
        if isinstance(directives, list):
            return ",".join(str(d) for d in directives)
        return ";".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def report_columns(svc: Services, job: JobRecord) -> tuple[ReportColumn, ...]:
    """The columns the job's type declares (none for a type no longer installed)."""
    return svc.registry.get(job.kind).report_columns if job.kind in svc.registry else ()


def _csv_rows(
    svc: Services, user: UserRecord, job: JobRecord, columns: tuple[ReportColumn, ...]
) -> Iterator[list[csvfile.Cell]]:
    after = -1
    while page := svc.jobs.items(user, job.id, after_seq=after, limit=PAGE):
        for item in page:
            data = row(item, job)
            values = [cell(data[c]) for c in COLUMNS]
            yield values + [cell(c.value(item.result)) for c in columns]
        after = page[-1].seq


def _csv(svc: Services, user: UserRecord, job: JobRecord) -> Iterator[str]:
    columns = report_columns(svc, job)
    return csvfile.stream(COLUMNS + [c.name for c in columns], _csv_rows(svc, user, job, columns))


def _wants_csv(accept: str | None) -> bool:
    return bool(accept) and "text/csv" in (accept or "").lower()


def respond(
    svc: Services,
    user: UserRecord,
    job: JobRecord,
    cursor: str | None,
    limit: int,
    accept: str | None,
) -> Response:
    if _wants_csv(accept):
        name = f"{job.kind.replace('_', '-')}-{job.id}.csv"
        return StreamingResponse(
            _csv(svc, user, job),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
    after = parse_cursor(cursor, lo=0, hi=MAX_SEQ)  # a row's seq; the first is 0
    if after is None:
        after = -1
    found = svc.jobs.items(user, job.id, after_seq=after, limit=limit + 1)
    rows, more = paged(found, limit, by_seq)
    return JSONResponse(
        {"job_id": job.id, "rows": [row(i, job) for i in rows], "next_cursor": more}
    )
