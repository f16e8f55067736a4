"""Idempotency-Key records (``services.idempotency``): the API's, kept in the services so
that HTTP never opens transactions."""

from __future__ import annotations

from typing import Any

from seojobs.records import UserRecord
from seojobs.services.base import Part
from seojobs.store import idempotency as idempotency_sql
from seojobs.store.idempotency import Outcome, Stored


class Idempotency(Part):
    def begin(
        self, user: UserRecord, key: str, fingerprint: str, in_flight_seconds: float
    ) -> tuple[Outcome, Stored | None]:
        with self.db.write() as conn:
            return idempotency_sql.begin(
                self.db,
                conn,
                user_id=user.id,
                key=key,
                fingerprint=fingerprint,
                now=self.clock(),
                ttl=self.settings.idempotency_ttl_seconds,
                in_flight_ttl=in_flight_seconds,
            )

    def finish(
        self, user: UserRecord, key: str, status_code: int, body: str, headers: dict[str, Any]
    ) -> None:
        with self.db.write() as conn:
            idempotency_sql.finish(
                conn, user_id=user.id, key=key, status_code=status_code, body=body, headers=headers
            )

    def abandon(self, user: UserRecord, key: str) -> None:
        with self.db.write() as conn:
            idempotency_sql.abandon(conn, user_id=user.id, key=key)
