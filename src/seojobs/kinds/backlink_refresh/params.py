"""A backlink refresh's params: the (donor, target) pairs to check and how a link matches."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seojobs.fetch.errors import FetchError
from seojobs.fetch.urls import normalize_url
from seojobs.kinds.urls import Url

MAX_LINKS = 1_000
# The collections table's subject column holds 500 characters; a longer pair is named by
# its hash (deterministic: reads compute the same).
MAX_SUBJECT = 500
Match = Literal["url", "domain"]
# What a pair's check finds (``check``), each a ``link_status``.
FOUND, MISSING, BLOCKED = "found", "missing", "blocked"
DONOR_ERROR, DONOR_REDIRECTED = "donor_error", "donor_redirected"
LINK_STATUSES = (FOUND, MISSING, DONOR_ERROR, DONOR_REDIRECTED, BLOCKED)


def normalised(url: str) -> str:
    """The comparison spelling of a URL (lowercase scheme and host, no default port, no
    fragment); the URL as given when it cannot be parsed (nothing will be found by it)."""
    try:
        return normalize_url(url)
    except FetchError:
        return url


def subject(donor: str, target: str) -> str:
    """A pair's collection subject (and item dedupe key): the normalised donor, a space (no
    URL holds one), the normalised target; ``sha256:<hex>`` of that when it is too long."""
    pair = f"{normalised(donor)} {normalised(target)}"
    if len(pair) <= MAX_SUBJECT:
        return pair
    return "sha256:" + hashlib.sha256(pair.encode()).hexdigest()


class LinkPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    donor: Url = Field(description="The page that should link (fetched; robots.txt obeyed).")
    target: Url = Field(description="The page (or, with `match: domain`, the site) linked to.")


class BacklinkRefreshParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    links: list[LinkPair] = Field(
        min_length=1,
        max_length=MAX_LINKS,
        description=f"1 to {MAX_LINKS} pairs, each an item charged one check; a pair given "
        "twice (same donor and target, normalised) counts once.",
    )
    match: Match = Field(
        default="url",
        description="`url`: a link counts when it points at the target, ignoring scheme, "
        "`www.`, a trailing slash and tracking parameters (`utm_*`, `gclid`, ...); `domain`: "
        "when it points anywhere on the target's host or its subdomains (`www.` ignored).",
    )
    # Filled in by validation: how many repeated pairs were dropped. Read-only: the registry
    # refuses it in a request; stored params bring it back to the worker.
    duplicates_removed: int = Field(default=0, json_schema_extra={"readOnly": True})

    @model_validator(mode="after")
    def _dedupe(self) -> BacklinkRefreshParams:
        unique = {subject(p.donor, p.target): p for p in reversed(self.links)}  # first kept
        keys = dict.fromkeys(subject(p.donor, p.target) for p in self.links)
        removed = len(self.links) - len(keys)
        if removed:
            self.links = [unique[k] for k in keys]
            self.duplicates_removed += removed
        return self
