"""A kind's reads, declared as plain data: one router (``seojobs.api.reads``) mounts every
read the registry's kinds declare, and one reader in the store answers them.

A read serves what a kind collected for a project under ``/v1/projects/{project_id}/<path>``.
It says which collections it reads (the newest of each subject, every one, or the newest
one), its row model and how a collection becomes a row, its filters (each a typed query
parameter and what it matches: a field of the collected data, the subject, or a test of the
row), its orders, and whether it pages. Pages are keyset pages: a page is full unless it is the
last, filters run before paging, and a cursor stays valid while collections are added.

Nothing here imports the store or SQLAlchemy: kinds declare reads without knowing either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from seojobs.records import CollectionRecord
from seojobs.timefmt import rfc3339_or_none

# Which collections a read serves: the newest of every subject (``latest``), every published
# collection (``history``), or the newest one (``one``, of a subject when a filter names it).
Source = Literal["latest", "history", "one"]
# How a filter's value is compared with a field of the collected data: equal (JSON value),
# equal as text (a number or a string), equal ignoring ASCII case, or holding it (any case).
Compare = Literal["equal", "text", "lower", "contains"]
Scalar = str | int | float | bool


@dataclass(frozen=True)
class FieldMatch:
    """The filter's value against the collected data's ``field`` (top level)."""

    field: str
    compare: Compare = "equal"


def _itself(value: Any, _values: Mapping[str, Any]) -> list[str]:
    return [str(value)]


@dataclass(frozen=True)
class SubjectMatch:
    """The filter's value names subjects: ``subjects(value, values)`` lists them (any one
    matches); ``values`` are every filter's prepared values (a subject of two parameters)."""

    subjects: Callable[[Any, Mapping[str, Any]], Sequence[str]] = _itself


@dataclass(frozen=True)
class RowMatch:
    """A test of a collection's data no SQL can say (a URL matched loosely): the reader runs
    it on the rows in page order, before paging, so pages stay full."""

    test: Callable[[Mapping[str, Any], Any], bool]


Match = FieldMatch | SubjectMatch | RowMatch


@dataclass(frozen=True)
class Filter:
    """A query parameter of a read: its type (``Literal[...]``, ``bool``, ``int``, ``str``),
    its checks (422 naming it when they fail), and what it matches. ``prepare`` turns the
    checked value into what is compared (a URL as jobs stored it); ``named`` is the word that
    puts the value in a 404's detail (``for``)."""

    name: str
    type: Any
    description: str
    match: Match
    prepare: Callable[[Any], Any] | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    ge: int | None = None
    le: int | None = None
    named: str | None = None
    # False: a first page that this filter alone leaves empty is an empty page, not the 404
    # of "nothing collected" (it narrows what was collected rather than naming it).
    selects: bool = True


@dataclass(frozen=True)
class Key:
    """One part of a read's order: the collection's ``id`` or ``subject``, or a field of its
    data (a number, or text compared in lower case), with nulls last."""

    field: str
    type: Literal["id", "subject", "number", "text"] = "text"
    descending: bool = False


# The order of a history: newest first (the collection id, which only grows).
NEWEST_FIRST: Mapping[str, tuple[Key, ...]] = {"newest": (Key("id", "id", descending=True),)}


class Collected(BaseModel):
    type: str
    subject: str
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str
    data: Any


class CollectedData(BaseModel):
    data: Collected


class CollectedPage(BaseModel):
    data: list[Collected]
    next_cursor: str | None


def stamp(found: CollectionRecord) -> dict[str, Any]:
    """What every row says of its collection: the job that collected it and when."""
    return {"job_id": found.job_id, "collected_at": rfc3339_or_none(found.collected_at)}


def data_of(found: CollectionRecord) -> dict[str, Any]:
    return found.data if isinstance(found.data, dict) else {}


def fields_row(model: type[BaseModel]) -> Callable[[CollectionRecord], dict[str, Any]]:
    """Rows of ``model``'s fields, in its order: ``job_id`` and ``collected_at`` of the
    collection, the others read from the top level of its data (null when missing)."""
    names = tuple(model.model_fields)

    def row(found: CollectionRecord) -> dict[str, Any]:
        data, stamped = data_of(found), stamp(found)
        return {name: stamped[name] if name in stamped else data.get(name) for name in names}

    return row


def collection_row(found: CollectionRecord) -> dict[str, Any]:
    """A collection as the generic reads show it (``/v1/projects/{id}/data/{type}``)."""
    return {
        "type": found.kind,
        "subject": found.subject,
        **stamp(found),
        "data": found.data,
    }


@dataclass(frozen=True)
class Read:
    """One read of what ``kind`` collects. ``orders`` maps a ``sort`` value to its keys (the
    first is the default; a read with several gets a ``sort`` parameter); the collection id
    breaks ties. ``paged``: lists take ``cursor`` and ``limit``; else every row is served.
    ``empty``: when a 404 answers instead of an empty list: ``kind`` (nothing collected yet),
    ``rows`` (the first page is empty), both, or never (``()``). ``snapshot``: later pages of
    a ``latest`` read show the collections as they stood at the first page."""

    path: str
    operation_id: str
    kind: str
    row: type[BaseModel]
    to_row: Callable[[CollectionRecord], dict[str, Any]] = collection_row
    source: Source = "latest"
    filters: tuple[Filter, ...] = ()
    orders: Mapping[str, tuple[Key, ...]] = field(
        default_factory=lambda: {"id": (Key("id", "id"),)}
    )
    sort_description: str = ""
    paged: bool = True
    envelope: bool = True
    empty: tuple[Literal["kind", "rows"], ...] = ("kind",)
    snapshot: bool = True
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    # The whole answer's model, when not ``{data: [row], next_cursor}`` (an existing name).
    response: type[BaseModel] | None = None
    # ``Accept: text/csv`` streams every row (these fields as columns) through seojobs.csvfile.
    csv: tuple[str, ...] = ()
    # A read of one collection whose rows are the elements of a list in its data (a keyword
    # research's keywords): the list's field, the fields shown around it, and the row test.
    elements: str | None = None
    # Only the subjects starting with one of these (a kind that collects two things, such as
    # rankings and their share of voice, serves each from its own reads); empty: every one.
    subject_prefixes: tuple[str, ...] = ()

    @property
    def default_sort(self) -> str:
        return next(iter(self.orders))

    @property
    def pages(self) -> bool:
        """Whether it takes ``cursor`` and ``limit``."""
        return self.elements is not None or (self.paged and self.source != "one")


# -- reads of one job ---------------------------------------------------------------------

# What a filter of a job's read does with its (prepared) value against a column of the table:
# equal, within an inclusive range ((lo, hi), e.g. an HTTP status class), or a flag's test.
ColumnCompare = Literal["equal", "between", "is"]


@dataclass(frozen=True)
class ColumnMatch:
    """The filter's value against ``column`` of the job read's table."""

    column: str
    compare: ColumnCompare = "equal"


@dataclass(frozen=True)
class JobFilter:
    """A query parameter of a job's read: its type (``Literal[...]``, ``bool``, ``str``), its
    checks (422 naming it when they fail), and the column it matches."""

    name: str
    type: Any
    description: str
    match: ColumnMatch
    prepare: Callable[[Any], Any] | None = None
    max_length: int | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class JobRead:
    """A read of what one completed job of ``kind`` wrote, served at
    ``/v1/projects/{project_id}/<path>`` (``path`` holds ``{job_id}``): the rows of ``table``
    (``findings``, the job's findings, or a table its kind owns, by name) in the order of the
    column ``key``, which is also the cursor (``id``: an id, from 1; ``seq``: an item's
    sequence number, from 0). Filters run in SQL before paging, a page is full unless it is
    the last, and a cursor stays valid while rows are added. The answer is ``{job_id,
    collected_at, data, next_cursor}``; 404 unless the job is a completed ``kind`` job of the
    project (``noun`` names it). ``csv``: ``Accept: text/csv`` streams every row (these
    columns; ``csv_cells`` makes a row's cells) as ``csv_name`` (``{job_id}`` filled in)."""

    path: str
    operation_id: str
    kind: str
    noun: str
    table: str
    key: Literal["id", "seq"]
    row: type[BaseModel]
    response: type[BaseModel]
    to_row: Callable[[Mapping[str, Any]], dict[str, Any]]
    filters: tuple[JobFilter, ...] = ()
    csv: tuple[str, ...] = ()
    csv_cells: Callable[[Mapping[str, Any]], list[Any]] | None = None
    csv_name: str = ""
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    # Columns a ``sort`` parameter may order the rows by (``name`` ascending, ``-name``
    # descending; nulls last, ties in ``key`` order). Sorted, the cursor counts the rows
    # already served: a completed job's rows no longer change.
    sorts: tuple[str, ...] = ()

    def sort_pattern(self) -> str:
        return "^-?(?:" + "|".join(self.sorts) + ")$"


@dataclass(frozen=True)
class JobCompare:
    """How what one completed job of ``kind`` found (its findings) differs from what another
    completed ``kind`` job of the project found, served at ``/v1/projects/{project_id}/<path>``
    (``path`` holds ``{job_id}`` and ``{other_job_id}``). A finding is its code and the
    ``pair`` field of its data (one without it pairs as ""): a pair is ``new`` (found by
    ``job_id`` only), ``fixed`` (by ``other_job_id`` only) or ``unchanged`` (by both). The
    answer counts them, in all and per code, and lists a page of the pairs of one change (of
    one code, if asked) under ``listed``, ordered by the id of each pair's first finding
    (``other_job_id``'s when fixed), which is also the cursor. Counting and paging run in SQL.
    404 unless each job is a completed ``kind`` job of the project (``noun`` names it)."""

    path: str
    operation_id: str
    kind: str
    noun: str
    response: type[BaseModel]
    pair: str = "url"
    listed: str = "issues"
    other_description: str = ""
    code_description: str = ""
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()


# -- events of what changed -------------------------------------------------------------------


@dataclass(frozen=True)
class ChangeEvent:
    """A webhook event (issue 27) that a collection of ``kind`` makes when it differs from the
    kind's previous collection of the same subject in the same project. The engine evaluates
    it in the transaction that publishes the collection (the job's completion), and writes the
    outbox rows there.

    ``compare(before, after)``: the collections (``before`` None when the subject has none
    yet) -> what changed, merged into the event's ``data``, or None when nothing did (nothing
    is sent). The event's ``data`` is ``project_id``, ``subject``, ``before`` and ``after`` (each
    collection as ``to_row`` makes it: the read's row) and what ``compare`` answered.

    ``filters``: the model of an endpoint's conditions on this event (pydantic, extra fields
    forbidden: an endpoint naming a wrong one is refused, naming it); ``matches(filters,
    data)`` tells whether an event goes to an endpoint with those conditions (their defaults
    when it set none). Without a model the event takes no conditions."""

    name: str
    kind: str
    compare: Callable[[CollectionRecord | None, CollectionRecord], Mapping[str, Any] | None]
    to_row: Callable[[CollectionRecord], dict[str, Any]] = collection_row
    filters: type[BaseModel] | None = None
    matches: Callable[[Any, Mapping[str, Any]], bool] | None = None
    description: str = ""
