"""What a running job's context needs of the worker that runs it: a small protocol.

Three reads and one write. A write carries one or more changes, each fenced by the job's claim,
and applies them in one transaction (one hop to the store and one commit, however many); it
raises ``Interrupted`` when the claim is gone (cancelled, rescued, finished), and nothing of it
is kept. ``JobContext`` depends on this module only; ``Worker`` implements it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from seojobs.records import (
    ItemOutcome,
    ItemRecord,
    JobRecord,
    NewFinding,
    NewItem,
    TrackedProject,
)


@dataclass(frozen=True)
class RecordItems:
    """Items' outcomes, with the job's counters after them (a snapshot), and the new items
    they found (``added``, skipping those the job already has): one write, so a result is
    never kept without what it found. Result: how many items were added."""

    outcomes: list[ItemOutcome]
    counters: dict[str, int]
    added: list[NewItem] = field(default_factory=list)


@dataclass(frozen=True)
class AddItems:
    """New items, skipping those the job already has. Result: how many were added."""

    items: list[NewItem]


@dataclass(frozen=True)
class AddFinishedItem:
    """An item already finished, with its outcome and the counters after it; nothing if the
    job already has it. Result: whether it was added."""

    item: NewItem
    outcome: ItemOutcome
    counters: dict[str, int]


@dataclass(frozen=True)
class SetFindings:
    """The job-level findings, replacing any written before (``append``: added to those an
    earlier change of the same write made). Result: None."""

    findings: list[NewFinding]
    append: bool = False


@dataclass(frozen=True)
class Collect:
    """What the job collected about each subject of ``rows`` (subject, data), replacing this
    job's earlier. Result: None."""

    rows: list[tuple[str, Any]]


@dataclass(frozen=True)
class ReplaceRows:
    """This job's rows in ``table``, a table its kind owns, replaced (``append``: added to
    those an earlier change of the same phase wrote). Result: None."""

    table: str
    rows: list[dict[str, Any]]
    append: bool = False


Change = RecordItems | AddItems | AddFinishedItem | SetFindings | Collect | ReplaceRows


class JobHost(Protocol):
    async def items(
        self, job: JobRecord, after_seq: int, limit: int, *, only_open: bool
    ) -> list[ItemRecord]:
        """A page of the job's items after ``after_seq``, in order: all of them with their
        results, or (``only_open``) those not finished yet."""
        ...

    async def still_held(self, job: JobRecord) -> bool:
        """Whether this worker still holds the job's claim."""
        ...

    async def published(self, job: JobRecord, subject: str) -> Any:
        """The project's latest completed collection of the job's kind about ``subject``."""
        ...

    async def published_rows(
        self, job: JobRecord, subject: str, table: str, columns: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        """``columns`` of the rows of the kind's ``table`` that the job of that collection
        wrote (``[]`` before the first, or when its job was pruned)."""
        ...

    async def project(self, job: JobRecord) -> TrackedProject:
        """The job's project with what it tracks (its domain, keywords, prompts)."""
        ...

    async def write(self, job: JobRecord, *changes: Change) -> list[Any]:
        """Apply ``changes`` in one fenced transaction; their results, in order."""
        ...
