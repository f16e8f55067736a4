"""Tech-stack read: what the project's last ``tech_stack`` job collected. Never starts one.

Each site (host) a lookup looked at is a collection; ``tech-stack`` serves the latest one (of
one host with ``?host=``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from seojobs.reads import Filter, Read, SubjectMatch, stamp
from seojobs.records import CollectionRecord


class TechStack(BaseModel):
    job_id: int | None = Field(description="The job that collected it (null once pruned).")
    collected_at: str | None
    subject: str = Field(description="The site: host, with the port when not the default.")
    data: dict[str, Any] = Field(
        description="`host`; `technologies` (name, categories, version, versions, confidence "
        "0-100, website, evidence: what matched on which page, implied_by, pages); "
        "`categories` (id, name, technologies); `pages` (url, final_url, status, error); "
        "`skipped` (patterns that timed out)."
    )


def row(found: CollectionRecord) -> dict[str, Any]:
    return {**stamp(found), "subject": found.subject, "data": found.data}


def _lower(value: Any) -> str:
    return str(value).lower()


READS = (
    Read(
        "tech-stack",
        "get_tech_stack",
        "tech_stack",
        TechStack,
        response=TechStack,
        to_row=row,
        source="one",
        envelope=False,
        filters=(
            Filter(
                "host",
                str,
                "Only this site: its host as looked up (`example.com`, with `:port` when not "
                "the scheme's default).",
                SubjectMatch(),
                prepare=_lower,
                max_length=300,
                pattern=r"^[A-Za-z0-9.\-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$",
            ),
        ),
        description="The technologies the project's last completed `tech_stack` job found (on "
        "`host`, if given), with the evidence that matched. Never starts a lookup: 404 until "
        "one has completed.",
        tags=("tech-stack",),
    ),
)
