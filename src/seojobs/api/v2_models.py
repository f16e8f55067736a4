"""Wire models of the SpeedyIndex-compatible v2 surface (reference/providers.md §1), and the
pure mapping from our jobs and items to SpeedyIndex's task and link shapes.

Field names follow SpeedyIndex exactly. Task ids are strings on the way out (SpeedyIndex ids
are hex strings; ours are integers, sent as ``"48211"``) and either form on the way in, as
every id of the API is read: ASCII digits from 1 to 2**63-1 (``seojobs.api.ids``), else 422.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from seojobs.api.ids import MAX_ID, digits_pattern, parse_id, whole_number
from seojobs.api.inputs import TOLERATED_KEYS
from seojobs.api.text import Title
from seojobs.kinds.urls import MAX_URLS, Url
from seojobs.records import ItemRecord, JobRecord
from seojobs.services import indexing

Engine = Literal["google", "yandex", "bing"]
TaskType = Literal["indexer", "checker"]
KINDS: dict[str, str] = {"indexer": indexing.SUBMIT, "checker": indexing.CHECK}
MAX_TASK_IDS = 1000
PAGE_SIZE = 1000
# Codes SpeedyIndex puts in ``code`` (providers.md §1.3).
OK: Final = 0
TOP_UP: Final = 1  # "top up balance": our daily quota is too small
OVERLOADED: Final = -2
NOINDEX_FOUND, NO_ERROR = -1, 0

# The largest integer every JSON reader holds exactly (I-JSON, RFC 7493): a larger id as a
# JSON number is not the id its sender wrote by the time anyone reads it, so it is sent as a
# string, as we send every id.
MAX_JSON_INTEGER: Final = 2**53 - 1


def _task_id(value: object) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return whole_number(value, 1, MAX_JSON_INTEGER)
    return parse_id(value)


TaskId = Annotated[
    int,
    BeforeValidator(_task_id),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": f"^{digits_pattern(1, MAX_ID)}$"},
                {"type": "integer", "minimum": 1, "maximum": MAX_JSON_INTEGER},
            ],
            "description": (
                'A task id, as a string ("48211", as we send them) or a number (up to 2**53-1).'
            ),
        }
    ),
]


# -- requests -----------------------------------------------------------------------------------


class V2CreateRequest(BaseModel):
    # SpeedyIndex clients may send fields we lack: ignored, as the schema says (the input
    # gate's rules still apply to them).
    model_config = ConfigDict(extra="ignore", json_schema_extra=TOLERATED_KEYS)

    urls: list[Url] = Field(min_length=1, max_length=MAX_URLS, description="http(s) URLs.")
    title: Title | None = None
    checker: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description=(
            "seojobs extension, indexer tasks only: check the URLs' index status N days later; "
            "the task is completed once that check has finished. Checker tasks ignore it, as "
            "they ignore every key they lack (the path's type cannot narrow the body's schema)."
        ),
    )


class V2StatusRequest(BaseModel):
    task_ids: list[TaskId] | None = Field(
        default=None,
        max_length=MAX_TASK_IDS,
        description=f"Up to {MAX_TASK_IDS} ids; `result` is then an array.",
    )
    task_id: TaskId | None = Field(
        default=None, description="The older single-id form; `result` is then one object."
    )

    # Exactly one form, as _one_form checks; null counts as absent.
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra=TOLERATED_KEYS
        | {
            "oneOf": [
                {
                    "required": ["task_ids"],
                    "properties": {"task_ids": {"type": "array"}, "task_id": {"type": "null"}},
                },
                {
                    "required": ["task_id"],
                    "properties": {
                        "task_id": {"not": {"type": "null"}},
                        "task_ids": {"type": "null"},
                    },
                },
            ]
        },
    )

    @model_validator(mode="after")
    def _one_form(self) -> V2StatusRequest:
        if (self.task_ids is None) == (self.task_id is None):
            raise ValueError("send either task_ids (a list) or task_id, not both")
        return self


class V2ReportRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra=TOLERATED_KEYS)

    task_id: TaskId


class V2UrlRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra=TOLERATED_KEYS)

    url: Url = Field(description="One http(s) URL to index.")


# -- responses ----------------------------------------------------------------------------------


class V2Balance(BaseModel):
    indexer: int = Field(description="URLs you may still submit today (UTC day).")
    checker: int = Field(description="URLs you may still check today (UTC day).")


class V2AccountResponse(BaseModel):
    code: int = OK
    balance: V2Balance


class V2Created(BaseModel):
    code: Literal[0] = OK
    task_id: str
    type: str = Field(description='"<engine>/<type>", e.g. "google/indexer".')


class V2Refused(BaseModel):
    """Answered with HTTP 200, as SpeedyIndex does: the verdict is in ``code``."""

    code: Literal[1] = TOP_UP
    message: str = Field(description="Which daily quota ran out and when it resets.")


class V2Overloaded(BaseModel):
    """HTTP 503 with ``Retry-After``: the database could not take the write; retry later."""

    code: Literal[-2] = OVERLOADED
    message: str


class V2UrlCreated(BaseModel):
    code: Literal[0] = OK
    task_id: str = Field(description="seojobs extension: the id of the one-URL indexer task.")


class V2Task(BaseModel):
    id: str
    size: int = Field(description="URLs in the task.")
    processed_count: int = Field(description="URLs submitted (indexer) or checked (checker).")
    indexed_count: int = Field(
        description=(
            "URLs found indexed: by the task (checker), or by the follow-up check of an indexer "
            "task created with `checker`; 0 for an indexer task without one."
        )
    )
    title: str
    type: str
    is_completed: bool = Field(
        description="Final; an indexer task with `checker` waits for its follow-up check."
    )
    created_at: str


class V2TaskList(BaseModel):
    code: int = OK
    page: int
    last_page: int
    result: list[V2Task]


class V2StatusResponse(BaseModel):
    code: int = OK
    result: list[V2Task] | V2Task = Field(
        description="An array for task_ids; one object for task_id."
    )


class V2IndexedLink(BaseModel):
    url: str
    title: str | None = Field(
        default=None, description="Google only, and empty: we do not keep the result's title."
    )


class V2UnindexedLink(BaseModel):
    url: str
    error_code: int | None = Field(
        default=None,
        description=(
            "google/indexer only, from the follow-up check's fetch of the page: the HTTP status "
            "when it was an error, -1 when noindex was found, else 0."
        ),
    )


class V2FullReport(BaseModel):
    id: str
    size: int
    processed_count: int
    indexed_links: list[V2IndexedLink]
    unindexed_links: list[V2UnindexedLink]
    title: str
    type: str
    created_at: str


class V2FullReportResponse(BaseModel):
    code: int = OK
    result: V2FullReport


class V2ShortReport(BaseModel):
    id: str
    size: int
    processed_count: int
    indexed_links: list[str]
    unindexed_links: list[str]
    title: str
    type: str
    created_at: str


class V2ShortReportResponse(BaseModel):
    code: int = OK
    result: V2ShortReport


# -- mapping ------------------------------------------------------------------------------------


def timestamp(moment: datetime) -> str:
    """SpeedyIndex's spelling: ``2024-03-18T22:58:56.901Z`` (UTC, milliseconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def engine_of(job: JobRecord) -> str:
    return str(job.params.get("engine", "google"))


def refused(job: JobRecord) -> bool:
    """A job stored already failed for quota: v2 answered ``code`` 1 and gave out no id."""
    return job.state == "failed" and job.error_code == "quota_exceeded"


def is_completed(job: JobRecord, follow_up: JobRecord | None) -> bool:
    # Seed 000: an indexer task created with checker is not done until its check is.
    return job.is_final and (follow_up is None or follow_up.is_final)


def indexed_count(job: JobRecord, follow_up: JobRecord | None) -> int:
    if job.kind == indexing.CHECK:
        return job.counters.get("indexed", 0)
    # A submission is not evidence of indexing; only a check is (providers.md §7).
    return follow_up.counters.get("indexed", 0) if follow_up is not None else 0


def task(job: JobRecord, task_type: str, follow_up: JobRecord | None) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "size": job.items_total,
        "processed_count": job.items_done,
        "indexed_count": indexed_count(job, follow_up),
        "title": job.title or "",
        "type": f"{engine_of(job)}/{task_type}",
        "is_completed": is_completed(job, follow_up),
        "created_at": timestamp(job.created_at),
    }


def page_error_code(check: ItemRecord | None) -> int:
    """SpeedyIndex's ``error_code`` of an unindexed link, from our check's page diagnostics:
    the HTTP status when it was not a success, -1 for noindex (meta tag or X-Robots-Tag), else 0
    (also when the page was never fetched)."""
    result = check.result if check is not None and check.result else {}
    diagnostics = result.get("diagnostics") or {}
    status = diagnostics.get("http_status")
    if isinstance(status, int) and not 200 <= status < 300:
        return status
    if diagnostics.get("indexing_state") in ("BLOCKED_BY_META_TAG", "BLOCKED_BY_HTTP_HEADER"):
        return NOINDEX_FOUND
    return NO_ERROR


def report_head(job: JobRecord, task_type: str) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "size": job.items_total,
        "processed_count": job.items_done,
        "title": job.title or "",
        "type": f"{engine_of(job)}/{task_type}",
        "created_at": timestamp(job.created_at),
    }
