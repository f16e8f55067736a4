"""Google service-account access tokens (OAuth 2.0 JWT bearer grant), cached until near expiry.

google-auth builds and signs the JWT assertion; the exchange at the key file's ``token_uri`` is
our own request on the adapter's HTTP client (``seojobs.fetch.http``). That keeps the token
request on the adapter's client (its proxy policy too) and event loop, under the shared retry
policy and error tree, instead of google-auth's blocking transport with its own hidden retry
loop (which would need a thread and would swallow the HTTP status).
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from seojobs.fetch.errors import UnreadableBody
from seojobs.providers.base import (
    AUTH_FAILED,
    ProviderError,
    error_for_status,
    malformed,
    with_retries,
)

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_LIFETIME = 3600  # Google's maximum for exp - iat
REFRESH_MARGIN = 300.0  # renew this long before expiry so a token never dies mid-batch

if TYPE_CHECKING:  # google-auth (and its cryptography) load when a key file is first read
    from google.auth import crypt

    from seojobs.fetch.http import HttpClient, Response


@dataclass(frozen=True)
class ServiceAccount:
    path: str
    client_email: str
    token_uri: str
    signer: crypt.Signer


def _credentials_error(path: str, why: str) -> ProviderError:
    return ProviderError(
        AUTH_FAILED,
        f"Google credentials file {path!r} (SEOJOBS_GOOGLE_CREDENTIALS_FILE) {why}",
        fatal=True,
    )


def _read_json(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _credentials_error(path, f"cannot be read: {exc}") from None
    try:
        info = json.loads(text)
    except ValueError as exc:
        raise _credentials_error(path, f"is not JSON: {exc}") from None
    if not isinstance(info, dict):
        raise _credentials_error(path, "is not a JSON object")
    return info


def load_service_account(path: str) -> ServiceAccount:
    """Read and check a service-account key file; any problem is a fatal AUTH_FAILED."""
    info = _read_json(path)
    if info.get("type") != "service_account":
        raise _credentials_error(
            path, f"is not a service-account key (type is {info.get('type')!r})"
        )
    for name in ("client_email", "token_uri", "private_key"):
        if not isinstance(info.get(name), str) or not info[name]:
            raise _credentials_error(path, f"has no {name!r}")
    if urlsplit(info["token_uri"]).scheme not in ("http", "https"):
        raise _credentials_error(path, f"has a token_uri that is not a URL: {info['token_uri']!r}")
    try:
        signer = _signer(info["private_key"], info.get("private_key_id"))
    except (ValueError, TypeError, IndexError) as exc:
        raise _credentials_error(path, f"has an unusable private_key: {exc}") from None
    return ServiceAccount(path, info["client_email"], info["token_uri"], signer)


@functools.lru_cache(maxsize=8)
def _signer(private_key: str, key_id: Any) -> crypt.Signer:
    """The signer of a private key, read once per process (as google-auth's
    ``from_service_account_info`` reads it): loading an RSA key checks it, some 40 ms of CPU,
    and each Google indexing or URL Inspection adapter (one per job) read its file's key
    anew. The file is still read and checked each time: a replaced key is a new one here."""
    from google.auth import crypt

    found: crypt.Signer = crypt.RSASigner.from_string(private_key, key_id)  # type: ignore[no-untyped-call]
    return found


def oauth_error(response: Response) -> str:
    """The ``error`` / ``error_description`` of an OAuth error answer, or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and "error" in body:
        return " ".join(str(body[k]) for k in ("error", "error_description") if k in body)
    return response.text[:300]


class ServiceAccountTokens:
    """Access tokens for one service account and scope set, shared by concurrent callers."""

    def __init__(
        self,
        account: ServiceAccount,
        scopes: list[str],
        *,
        retries: int,
        backoff: float,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.account = account
        self.scopes = scopes
        self._retries = retries
        self._backoff = backoff
        self._clock = clock
        self._wall_clock = wall_clock
        self._token: str | None = None
        self._renew_at = 0.0
        # One refresh at a time: N concurrent publishes must cost one token request.
        self._lock = asyncio.Lock()

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (the API said 401) unless a newer one already replaced it."""
        if self._token == token:
            self._token = None

    async def token(self, client: HttpClient) -> str:
        """A live access token; raises a non-retryable ProviderError (fatal for a refusal)."""
        async with self._lock:
            if self._token is not None and self._clock() < self._renew_at:
                return self._token
            try:
                token, lifetime = await with_retries(
                    lambda: self._request(client),
                    retries=self._retries,
                    backoff=self._backoff,
                    provider="google_auth",
                )
            except ProviderError as exc:
                # Already retried here; a caller's own retry loop must not multiply the tries.
                exc.retryable = False
                raise
            self._token = token
            self._renew_at = self._clock() + lifetime - min(REFRESH_MARGIN, lifetime / 2)
            return token

    def _assertion(self) -> str:
        now = int(self._wall_clock())
        claims = {
            "iss": self.account.client_email,
            "scope": " ".join(self.scopes),
            "aud": self.account.token_uri,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
        }
        from google.auth import jwt

        signed: bytes = jwt.encode(self.account.signer, claims)  # type: ignore[no-untyped-call]
        return signed.decode("ascii")

    async def _request(self, client: HttpClient) -> tuple[str, float]:
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": self._assertion()}
        try:
            response = await client.post(self.account.token_uri, form=form)
        except UnreadableBody as exc:  # undecodable, or over the size cap; not retried
            raise malformed("Google token endpoint", exc.message) from None
        status = response.status
        if status == 429 or status >= 500:
            error = error_for_status(response, "Google token endpoint")
            assert error is not None
            raise error
        if status >= 400:
            # invalid_grant (bad key, clock, scope), invalid_client, unknown token_uri path...:
            # no URL can be published with this key, so the whole job should stop.
            raise ProviderError(
                AUTH_FAILED,
                f"Google refused the service account {self.account.client_email} "
                f"({status}): {oauth_error(response)}",
                status=status,
                fatal=True,
            )
        return parse_token(response)


def parse_token(response: Response) -> tuple[str, float]:
    try:
        body = response.json()
    except ValueError:
        raise malformed("Google token endpoint", "not JSON") from None
    if not isinstance(body, dict):
        raise malformed("Google token endpoint", "not a JSON object")
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise malformed("Google token endpoint", "no access_token")
    lifetime = body.get("expires_in", ASSERTION_LIFETIME)
    if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime <= 0:
        raise malformed("Google token endpoint", f"expires_in is {lifetime!r}")
    return token, float(lifetime)


class TokenSource(Protocol):
    async def token(self, client: HttpClient) -> str: ...


async def verify_tokens(tokens: TokenSource, client: HttpClient) -> str:
    """The credential check of a Google adapter: the token endpoint grants the service
    account an access token for the adapter's scope (free; no API call is spent)."""
    await tokens.token(client)
    return "the token endpoint granted an access token"
