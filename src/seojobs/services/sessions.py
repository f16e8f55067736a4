"""Dashboard sign-ins (``services.sessions``): a session per sign-in, kept in the database so
that every API process knows it and signing out ends it everywhere."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from seojobs.records import UserRecord
from seojobs.services.base import Part
from seojobs.store import sessions

SECRET_NAME = "dashboard_cookie"  # noqa: S105 (the name of a secret, not one)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Sessions(Part):
    _cookie_secret: bytes | None = None

    def cookie_secret(self) -> bytes:
        """The key that signs dashboard cookies: ``SEOJOBS_DASHBOARD_SECRET``, or one the
        server made and keeps in the database (shared by every process)."""
        if self._cookie_secret is None:
            configured = self.settings.dashboard_secret
            if configured is not None:
                value = configured.get_secret_value()
            else:
                value = sessions.secret(self.db, SECRET_NAME, secrets.token_urlsafe(32))
            self._cookie_secret = value.encode()
        return self._cookie_secret

    def start(self, user: UserRecord) -> tuple[str, str]:
        """A new session of ``user``: its token (for the cookie) and its CSRF token."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = self.clock()
        lifetime = timedelta(hours=self.settings.dashboard_session_hours)
        with self.db.write() as conn:
            sessions.create(
                conn,
                token_hash=_digest(token),
                user_id=user.id,
                csrf_token=csrf,
                now=now,
                expires_at=now + lifetime,
            )
        return token, csrf

    def find(self, token: str) -> tuple[UserRecord, str] | None:
        """The user and CSRF token of a live session, or None (unknown, expired, signed out,
        user disabled, or key rotated since)."""
        with self.db.read() as conn:
            return sessions.find(conn, _digest(token), self.clock())

    def end(self, token: str) -> None:
        with self.db.write() as conn:
            sessions.end(conn, _digest(token))
