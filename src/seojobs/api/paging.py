"""Cursor pages, one way for every list: read ``limit + 1`` rows after the cursor; the extra
row only says there is another page, whose cursor is the last row's key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


def paged(found: Sequence[T], limit: int, key: Callable[[T], int]) -> tuple[list[T], str | None]:
    """``found``: up to ``limit + 1`` rows in list order. Returns the page and its
    ``next_cursor`` (None on the last page)."""
    page = list(found[:limit])
    return page, str(key(page[-1])) if len(found) > limit and page else None


class _HasId(Protocol):
    @property
    def id(self) -> int: ...


class _HasSeq(Protocol):
    @property
    def seq(self) -> int: ...


def by_id(record: _HasId) -> int:
    return record.id


def by_seq(record: _HasSeq) -> int:
    return record.seq
