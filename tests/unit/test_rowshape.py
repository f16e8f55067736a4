"""A kind's table declared as a dataclass (``seojobs.rowshape``): the columns the store
builds come from the fields' names and annotations, and what has no column is refused where
the kind declares it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

import pytest

from seojobs.kinds.site_audit.pages import FIELDS
from seojobs.kinds.site_audit.pagetable import PAGE_TABLE
from seojobs.rowshape import ColumnShape, KindTable, Length


def test_the_audit_page_columns_come_from_the_record() -> None:
    columns = {c.name: c for c in PAGE_TABLE.columns()}
    assert PAGE_TABLE.names()[:3] == ("job_id", "seq", "url")
    assert columns["content_type"] == ColumnShape("content_type", "str", True, 200)
    assert columns["url"] == ColumnShape("url", "str", False)
    assert columns["indexable"] == ColumnShape("indexable", "bool", False)
    assert columns["issues"] == ColumnShape("issues", "json", True)
    assert columns["status"] == ColumnShape("status", "int", True)


def test_the_crawl_copies_every_column_it_does_not_count() -> None:
    assert FIELDS == (
        "url",
        "final_url",
        "status",
        "depth",
        "response_ms",
        "redirects",
        "content_type",
        "title",
        "description",
        "h1",
        "canonical",
        "indexability_reason",
        "words",
        "content_hash",
        "issues",
    )


@dataclass(frozen=True)
class _NoJob:
    seq: int


@dataclass(frozen=True)
class _When:
    job_id: int
    at: datetime


@dataclass(frozen=True)
class _Sized:
    job_id: int
    count: Annotated[int, Length(5)]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_NoJob, "first field must be job_id"),
        (_When, "no column type"),
        (_Sized, "str columns only"),
    ],
)
def test_what_has_no_column_is_refused(row: type[object], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        KindTable("t", row, key=())


def test_a_key_must_name_fields() -> None:
    with pytest.raises(ValueError, match="not fields"):
        KindTable("audit_pages", PAGE_TABLE.row, key=("nope",))
