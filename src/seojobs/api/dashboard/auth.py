"""Who is signed in: a signed session cookie, a CSRF token per session, and form bodies.

The cookie holds a random session token and its HMAC; the session itself (user, CSRF token,
expiry) lives in the database, so signing out ends it for good and every process agrees.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar
from urllib.parse import parse_qs

from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request

from seojobs.api.ratelimit import USER, RateLimiter
from seojobs.records import UserRecord
from seojobs.services import Services

COOKIE: Final = "seojobs_session"
LOGIN_COOKIE: Final = "seojobs_login"  # the sign-in form's CSRF token (no session yet)
FORM_TYPE: Final = "application/x-www-form-urlencoded"
READ_METHODS: Final = frozenset({"GET", "HEAD"})
# Signing out is never refused: a user over their budget can still end their session.
UNCHARGED: Final = frozenset({"/dashboard/logout"})
MAX_FORM_FIELDS: Final = 1_000
T = TypeVar("T")


class SignInRequired(Exception):
    """No live session: pages redirect to the sign-in form, scripts get 401."""


class DashboardError(Exception):
    """An error page: ``status`` with a short ``title`` and a ``message`` for the user."""

    def __init__(
        self, status: int, title: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.headers = headers or {}


@dataclass(frozen=True)
class Viewer:
    """The signed-in user of a request, and their session's CSRF token."""

    user: UserRecord
    csrf: str
    token: str


def services_of(request: Request) -> Services:
    """The app's services (the only way the pages reach data)."""
    found: Services = request.app.state.services
    return found


async def one_read(services: Services, read: Callable[[], T]) -> T:
    """``read()`` in a worker thread, its service reads sharing one transaction: a page is
    made of several (a view's: the job, its project, its collection, the rows, their pages)."""

    def run() -> T:
        with services.one_read():
            return read()

    return await run_in_threadpool(run)


def _mac(secret: bytes, token: str) -> str:
    digest = hmac.new(secret, token.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def cookie_value(services: Services, token: str) -> str:
    return f"{token}.{_mac(services.sessions.cookie_secret(), token)}"


def _token_of(services: Services, value: str | None) -> str | None:
    """The session token of a cookie whose signature holds, else None."""
    if not value or value.count(".") != 1:
        return None
    token, mac = value.split(".")
    if not hmac.compare_digest(mac, _mac(services.sessions.cookie_secret(), token)):
        return None
    return token


async def viewer(request: Request) -> Viewer:
    """The request's signed-in user, or :class:`SignInRequired`. A request that changes
    something (any method but GET and HEAD) is charged to the user's request budget first."""
    services = services_of(request)
    token = _token_of(services, request.cookies.get(COOKIE))
    if token is None:
        raise SignInRequired
    found = await run_in_threadpool(services.sessions.find, token)
    if found is None:
        raise SignInRequired
    user, csrf = found
    if request.method not in READ_METHODS and request.url.path not in UNCHARGED:
        await charge(request, user)
    return Viewer(user, csrf, token)


async def charge(request: Request, user: UserRecord) -> None:
    """Count one request against the user's budget, the one the API spends (issue 25.4d): a
    form is refused with 429 and Retry-After where the API would be, whichever form it is.
    Should the limiter's storage fail, ``SEOJOBS_RATE_LIMIT_ON_STORAGE_ERROR`` decides."""
    limiter: RateLimiter = request.app.state.rate_limiter
    verdict = await limiter.hit(USER, str(user.id), user.rate_limit)
    if verdict is None:
        if limiter.fail_closed:
            retry = {"Retry-After": str(limiter.retry_in())}
            message = "the rate limiter's storage is not answering; nothing was changed"
            raise DashboardError(503, "Try again shortly", message, retry)
        return
    if not verdict.allowed:
        wait = max(1, verdict.reset_in)
        message = (
            f"too many requests: the limit is {verdict.limit} per {verdict.window} s; "
            f"nothing was changed, retry in {wait} s"
        )
        raise DashboardError(429, "Too many requests", message, verdict.headers())


def secure_cookies(request: Request) -> bool:
    """Cookies get ``Secure`` when the page came over HTTPS (directly or, from a trusted
    proxy, as ``X-Forwarded-Proto`` says: uvicorn's proxy middleware sets the scheme)."""
    return request.url.scheme == "https"


def new_login_token() -> str:
    return secrets.token_urlsafe(32)


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form body: each field's last value. Anything else is refused (400)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = await request.body()
    if not body and not media:  # an empty form: its checks (CSRF first) refuse it
        return {}
    if media != FORM_TYPE:
        raise DashboardError(415, "Unsupported form", f"forms are sent as {FORM_TYPE}")
    try:
        text = body.decode("utf-8")
        fields = parse_qs(
            text,
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FORM_FIELDS,
            errors="strict",
        )
    except (UnicodeDecodeError, ValueError):
        raise DashboardError(400, "Unreadable form", "the form could not be read") from None
    if any("\x00" in k or any("\x00" in v for v in vs) for k, vs in fields.items()):
        raise DashboardError(400, "Unreadable form", "the form holds a NUL character")
    return {name: values[-1] for name, values in fields.items()}


def check_csrf(expected: str, form: dict[str, str]) -> None:
    """Refuse (403) a form whose CSRF token is missing or not the session's."""
    sent = form.get("csrf_token", "")
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise DashboardError(
            403,
            "Form expired",
            "the form's security token is missing or out of date: reload the page and retry",
        )
