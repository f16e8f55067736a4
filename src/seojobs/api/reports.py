"""Per-URL reports: JSON pages with a cursor, or CSV streamed page by page.

The CSV is produced from pages of 500 items read one after another, so a 10,000-URL report
never holds every row in memory.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel

from seojobs.api.ids import parse_cursor
from seojobs.services import Services
from seojobs.store.records import ItemRecord, JobRecord, UserRecord

PAGE = 500
MAX_SEQ = 2**31 - 1  # item sequence numbers are 32-bit
CSV_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {"schema": {"type": "string"}}}}
}

DIAGNOSTIC_COLUMNS = [
    "final_url",
    "http_status",
    "redirect_chain",
    "robots_txt_state",
    "indexing_state",
    "page_fetch_state",
    "meta_robots",
    "x_robots_tag",
    "canonical",
    "canonical_state",
    "content_type",
    "fetch_error_kind",
    "verdict_reason",
]
COLUMNS = ["url", "status", "provider", "error_code", "error_message", "finished_at"]


class ReportRow(BaseModel):
    url: str
    status: str
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


def _status(item: ItemRecord) -> str:
    if item.state == "pending":
        return "pending"
    return item.outcome or ("failed" if item.state == "failed" else "done")


def row(item: ItemRecord) -> dict[str, Any]:
    result = item.result or {}
    detail = result.get("provider_detail")
    if detail is None:  # submissions keep the provider's detail at the top level
        detail = {k: v for k, v in result.items() if k not in ("provider", "diagnostics")} or None
    return {
        "url": item.input,
        "status": _status(item),
        "provider": result.get("provider"),
        "error_code": item.error_code,
        "error_message": item.error_message,
        "finished_at": item.finished_at.isoformat() if item.finished_at else None,
        "detail": detail,
        "diagnostics": result.get("diagnostics"),
    }


def _flat(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " -> ".join(_flat(v.get("url") if isinstance(v, dict) else v) for v in value)
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


def csv_line(values: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(values)
    return buffer.getvalue()


def _csv(svc: Services, user: UserRecord, job: JobRecord) -> Iterator[str]:
    columns = COLUMNS + (DIAGNOSTIC_COLUMNS if job.kind == "index_check" else [])
    yield csv_line(columns)
    after = -1
    while True:
        page = svc.items(user, job.id, after_seq=after, limit=PAGE)
        if not page:
            return
        for item in page:
            data = row(item)
            diagnostics = data["diagnostics"] or {}
            values = [_flat(data[c]) for c in COLUMNS]
            if job.kind == "index_check":
                values += [_flat(diagnostics.get(c)) for c in DIAGNOSTIC_COLUMNS]
            yield csv_line(values)
        after = page[-1].seq


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
    page = svc.items(user, job.id, after_seq=after, limit=limit + 1)
    rows, more = page[:limit], len(page) > limit
    return JSONResponse(
        {
            "job_id": job.id,
            "rows": [row(i) for i in rows],
            "next_cursor": str(rows[-1].seq) if more and rows else None,
        }
    )
