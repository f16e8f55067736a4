"""What a project tracks besides its own fields (``services.tracked``, issue 29.1): keywords,
each in its market, and prompts for AI search. Added in bulk (each once: a keyword by its
text in any case and its market, a prompt by its text in any case), listed, deleted one at a
time, and gone with the project. Jobs of the kinds that take them (``rank_check``:
``tracked``; ``geo_lookup``: ``prompts``) default to them through ``Kind.project_params``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seojobs.kinds.rank_check.params import KeywordAt
from seojobs.records import TrackedKeyword, TrackedPrompt, UserRecord
from seojobs.services.base import Part
from seojobs.services.errors import Conflict, NotFound
from seojobs.store import tracking
from seojobs.store import usage as usage_sql
from seojobs.store.tables import tracked_keywords, tracked_prompts

# A project tracks up to this many of each: every keyword is one search per collection, and
# every tracked prompt is asked by one GEO lookup (whose most is 50 prompts).
MAX_KEYWORDS = 2_000
MAX_PROMPTS = 50
MAX_BULK = 1_000  # entries in one request
DEFAULT_MARKET = {"location": 2840, "language": "en", "device": "desktop"}


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def keyword_row(entry: KeywordAt) -> dict[str, Any]:
    """A checked keyword as stored: the default market where it names none."""
    values = entry.model_dump()
    for name, default in DEFAULT_MARKET.items():
        if values[name] is None:
            values[name] = default
    values["location"] = str(values["location"])
    values["key"] = _key(
        values["keyword"].casefold(), values["location"], values["language"], values["device"]
    )
    return values


@dataclass(frozen=True)
class Added:
    """What a bulk add did: the ids it added, and how many it was given that were there."""

    ids: list[int]
    already_tracked: int


class Tracked(Part):
    def keywords(self, user: UserRecord, project_id: int) -> list[TrackedKeyword]:
        self.base.project(user, project_id)
        with self.db.read() as conn:
            return tracking.keywords(conn, project_id)

    def prompts(self, user: UserRecord, project_id: int) -> list[TrackedPrompt]:
        self.base.project(user, project_id)
        with self.db.read() as conn:
            return tracking.prompts(conn, project_id)

    def add_keywords(
        self, user: UserRecord, project_id: int, entries: Sequence[KeywordAt]
    ) -> Added:
        """Track keywords (checked by ``KeywordAt``); those tracked already are skipped."""
        rows = _once([keyword_row(e) for e in entries])
        return self._add(user, project_id, "keywords", rows, len(entries), MAX_KEYWORDS)

    def add_prompts(self, user: UserRecord, project_id: int, prompts: Sequence[str]) -> Added:
        rows = _once([{"prompt": p, "key": _key(p.casefold())} for p in prompts])
        return self._add(user, project_id, "prompts", rows, len(prompts), MAX_PROMPTS)

    def _add(
        self,
        user: UserRecord,
        project_id: int,
        what: str,
        rows: list[dict[str, Any]],
        given: int,
        most: int,
    ) -> Added:
        self.base.project(user, project_id)
        table = tracked_keywords if what == "keywords" else tracked_prompts
        with self.db.write() as conn:
            usage_sql.lock_user(self.db, conn, user.id)  # the cap holds under races
            ids = tracking.add(conn, table, project_id, rows, self.clock())
            total = tracking.count(conn, table, project_id)
            if total > most:  # rolled back with the transaction
                raise Conflict(
                    f"a project tracks at most {most:,} {what}; this would make it {total:,}: "
                    "delete some first",
                    "tracked_limit",
                )
        return Added(ids, given - len(ids))

    def delete_keyword(self, user: UserRecord, project_id: int, keyword_id: int) -> None:
        self._delete(user, project_id, tracked_keywords, keyword_id, "tracked keyword")

    def delete_prompt(self, user: UserRecord, project_id: int, prompt_id: int) -> None:
        self._delete(user, project_id, tracked_prompts, prompt_id, "tracked prompt")

    def _delete(
        self, user: UserRecord, project_id: int, table: Any, row_id: int, what: str
    ) -> None:
        self.base.project(user, project_id)
        with self.db.write() as conn:
            if not tracking.remove(conn, table, project_id, row_id):
                raise NotFound(f"{what} {row_id}")


def _once(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each key once, the first kept (a request may name one keyword twice)."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        seen.setdefault(row["key"], row)
    return list(seen.values())
