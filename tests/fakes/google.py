"""Fake Google OAuth token endpoint and Indexing API v3 (publish and multipart batch).

The token endpoint is reusable on its own: ``FakeTokenEndpoint(scope).add_routes(app)`` puts
``POST /token`` on any FastAPI app (e.g. a URL Inspection fake), and ``tokens.authorized(h)``
tells that app whether an ``Authorization`` header carries a live token it issued.

Both speak the documented wire formats, record what they received, and are scriptable.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from fastapi import FastAPI, Request, Response

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
INDEXING_SCOPE = "https://www.googleapis.com/auth/indexing"
TOKEN_PATH = "/token"
# In a scripted token answer, stands for the assertion the request sent (an endpoint or proxy
# that echoes the request in its error).
ECHO_ASSERTION = "{assertion}"
PUBLISH_PATH = "/v3/urlNotifications:publish"
BATCH_PATH = "/batch"
MAX_BATCH = 100
JSON_TYPE = "application/json; charset=UTF-8"


@dataclass(frozen=True)
class Reply:
    """A scripted answer. ``body`` (raw bytes) wins over ``json``; ``omit`` drops the part
    from a batch answer (to test a batch that forgets a call)."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = JSON_TYPE
    omit: bool = False

    def content(self) -> bytes:
        if self.body is not None:
            return self.body
        return b"" if self.json is None else json.dumps(self.json).encode()


def google_error(code: int, status: str, message: str, reason: str = "", **extra: Any) -> Reply:
    """Google's error envelope (core-errors): ``{"error": {code, message, errors, status}}``."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if reason:
        error["errors"] = [{"message": message, "domain": "global", "reason": reason}]
    error.update(extra)
    return Reply(code, {"error": error})


def daily_quota_exceeded() -> Reply:
    return google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per "
        "day' of service 'indexing.googleapis.com' for consumer 'project_number:1'.",
        "rateLimitExceeded",
    )


def rate_limited(retry_after: str = "0") -> Reply:
    reply = google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute' of service "
        "'indexing.googleapis.com' for consumer 'project_number:1'.",
        "rateLimitExceeded",
    )
    return Reply(reply.status, reply.json, headers={"Retry-After": retry_after})


# -- service-account keys --------------------------------------------------------------------
class ServiceAccountKey:
    """A throwaway RSA key and the service-account JSON file that carries it."""

    def __init__(self, email: str = "seojobs-test@fake-project.iam.gserviceaccount.com") -> None:
        self.email = email
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def info(self, token_uri: str) -> dict[str, str]:
        pem = self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        return {
            "type": "service_account",
            "project_id": "fake-project",
            "private_key_id": uuid.uuid4().hex,
            "private_key": pem,
            "client_email": self.email,
            "client_id": "1234567890",
            "token_uri": token_uri,
        }

    def write(self, path: Path, token_uri: str) -> Path:
        path.write_text(json.dumps(self.info(token_uri)), encoding="utf-8")
        return path


# -- token endpoint --------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenRequest:
    form: dict[str, str]
    claims: dict[str, Any] | None  # the assertion's claims when it decoded
    content_type: str
    status: int
    error: str | None


class FakeTokenEndpoint:
    """OAuth 2.0 JWT-bearer grant: verifies the assertion's RS256 signature against a trusted
    public key, its ``aud`` (this endpoint's own URL), ``scope``, ``iat``/``exp``."""

    def __init__(self, scope: str, path: str = TOKEN_PATH, expires_in: int = 3600) -> None:
        self.scope = scope
        self.path = path
        self.expires_in = expires_in
        self.requests: list[TokenRequest] = []
        self.issued: list[str] = []
        self._trusted: dict[str, rsa.RSAPublicKey] = {}
        self._revoked: set[str] = set()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    def trust(self, key: ServiceAccountKey) -> None:
        self._trusted[key.email] = key.private_key.public_key()

    def answer(self, *replies: Reply) -> None:
        """Answer the next token requests with these instead of verifying them."""
        with self._lock:
            self._replies.extend(replies)

    def revoke_all(self) -> None:
        """Invalidate every issued token (the API then answers 401 to them)."""
        with self._lock:
            self._revoked.update(self.issued)

    def authorized(self, header: str | None) -> bool:
        scheme, _, token = (header or "").partition(" ")
        with self._lock:
            return scheme == "Bearer" and token in self.issued and token not in self._revoked

    @property
    def grants(self) -> list[TokenRequest]:
        """Token requests that got a token."""
        return [r for r in self.requests if r.status == 200]

    def add_routes(self, app: FastAPI) -> None:
        @app.post(self.path)
        async def token(request: Request) -> Response:
            raw = (await request.body()).decode("utf-8", "replace")
            form = {k: v[0] for k, v in parse_qs(raw).items()}
            audience = str(request.url.replace(query=""))
            claims, error = self._check(form, audience)
            with self._lock:
                scripted = self._replies.popleft() if self._replies else None
            if scripted is not None:
                echoed = json.dumps(scripted.json).replace(
                    ECHO_ASSERTION, form.get("assertion", "")
                )
                reply = replace(scripted, json=json.loads(echoed))
            elif error is not None:
                code = "unsupported_grant_type" if error == "grant_type" else "invalid_grant"
                reply = Reply(400, {"error": code, "error_description": error})
            else:
                access = f"ya29.fake-{uuid.uuid4().hex}"
                with self._lock:
                    self.issued.append(access)
                body = {"access_token": access, "expires_in": self.expires_in}
                reply = Reply(200, {**body, "token_type": "Bearer"})
            content_type = request.headers.get("content-type", "")
            self.requests.append(TokenRequest(form, claims, content_type, reply.status, error))
            return _response(reply)

    def _check(
        self, form: dict[str, str], audience: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        if form.get("grant_type") != JWT_BEARER:
            return None, "grant_type"
        try:
            header_b64, claims_b64, signature_b64 = form.get("assertion", "").split(".")
            header = json.loads(_unb64(header_b64))
            claims = json.loads(_unb64(claims_b64))
            signature = _unb64(signature_b64)
        except ValueError:
            return None, "Invalid JWT: not a JWS compact serialization."
        if header.get("alg") != "RS256" or not isinstance(claims, dict):
            return None, "Invalid JWT header."
        key = self._trusted.get(str(claims.get("iss")))
        if key is None:
            return claims, "Invalid JWT: unknown issuer."
        signed = f"{header_b64}.{claims_b64}".encode()
        try:
            key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return claims, "Invalid JWT Signature."
        return claims, _claims_problem(claims, audience, self.scope)


def _claims_problem(claims: dict[str, Any], audience: str, scope: str) -> str | None:
    now = time.time()
    iat, exp = claims.get("iat"), claims.get("exp")
    if claims.get("aud") != audience:
        return f"Invalid JWT: aud {claims.get('aud')!r} is not {audience!r}."
    if scope not in str(claims.get("scope", "")).split(" "):
        return "Invalid JWT: scope does not include " + scope
    if not isinstance(iat, int) or not isinstance(exp, int):
        return "Invalid JWT: iat/exp missing."
    if iat > now + 60 or exp <= now or exp - iat > 3600:
        return (
            "Invalid JWT: Token must be a short-lived token (60 minutes) in a reasonable timeframe."
        )
    return None


def _unb64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _response(reply: Reply) -> Response:
    return Response(
        reply.content(),
        status_code=reply.status,
        headers=reply.headers,
        media_type=reply.content_type,
    )


# -- Indexing API ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Publish:
    """One publish call as received, directly or inside a batch."""

    url: str | None
    type: str | None
    authorization: str | None
    content_type: str
    batch: int | None  # index into FakeIndexingApi.batches, None for a direct call
    status: int


@dataclass(frozen=True)
class BatchCall:
    content_type: str
    authorization: str | None
    parts: int
    status: int


class FakeIndexingApi:
    def __init__(self, tokens: FakeTokenEndpoint) -> None:
        self.tokens = tokens
        self.publishes: list[Publish] = []
        self.batches: list[BatchCall] = []
        self._replies: deque[Reply] = deque()
        self._by_url: dict[str, deque[Reply]] = {}
        self._always: dict[str | None, Reply] = {}
        self._batch_replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    # -- scripting -------------------------------------------------------------------------
    def answer(self, *replies: Reply) -> None:
        """Answer the next publish calls (any URL) with these, in order."""
        with self._lock:
            self._replies.extend(replies)

    def answer_url(self, url: str, *replies: Reply) -> None:
        with self._lock:
            self._by_url.setdefault(url, deque()).extend(replies)

    def always(self, reply: Reply, url: str | None = None) -> None:
        """Answer every publish (of ``url``, or any) with ``reply`` once scripts run out."""
        with self._lock:
            self._always[url] = reply

    def answer_batch(self, *replies: Reply) -> None:
        """Answer the next /batch requests as a whole with these (no part is run)."""
        with self._lock:
            self._batch_replies.extend(replies)

    # -- what was received -----------------------------------------------------------------
    def published(self, status: int | None = 200) -> list[str]:
        return [p.url or "" for p in self.publishes if status is None or p.status == status]

    def calls_for(self, url: str) -> list[Publish]:
        return [p for p in self.publishes if p.url == url]

    # -- the app ---------------------------------------------------------------------------
    def app(self) -> FastAPI:
        app = FastAPI()
        self.tokens.add_routes(app)

        @app.post(PUBLISH_PATH)
        async def publish(request: Request) -> Response:
            reply = self._publish(
                request.headers.get("authorization"),
                request.headers.get("content-type", ""),
                await request.body(),
                batch=None,
            )
            return _response(reply)

        @app.post(BATCH_PATH)
        async def batch(request: Request) -> Response:
            return self._batch(request.headers, await request.body())

        return app

    def _scripted(self, url: str) -> Reply | None:
        with self._lock:
            queue = self._by_url.get(url)
            if queue:
                return queue.popleft()
            if self._replies:
                return self._replies.popleft()
            return self._always.get(url) or self._always.get(None)

    def _publish(
        self, authorization: str | None, content_type: str, raw: bytes, batch: int | None
    ) -> Reply:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        url = body.get("url") if isinstance(body, dict) else None
        kind = body.get("type") if isinstance(body, dict) else None
        if not self.tokens.authorized(authorization):
            reply = google_error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            )
        elif not content_type.startswith("application/json"):
            reply = google_error(400, "INVALID_ARGUMENT", "Content-Type must be application/json")
        elif not isinstance(url, str) or kind not in ("URL_UPDATED", "URL_DELETED"):
            reply = google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        else:
            reply = self._scripted(url) or _metadata(url, kind)
        self.publishes.append(Publish(url, kind, authorization, content_type, batch, reply.status))
        return reply

    def _batch(self, headers: Any, raw: bytes) -> Response:
        content_type = headers.get("content-type", "")
        authorization = headers.get("authorization")
        with self._lock:
            scripted = self._batch_replies.popleft() if self._batch_replies else None
        parts = _split_batch(content_type, raw)
        number = len(self.batches)
        if scripted is not None:
            self.batches.append(BatchCall(content_type, authorization, len(parts), scripted.status))
            return _response(scripted)
        if not parts or len(parts) > MAX_BATCH:
            reply = google_error(400, "INVALID_ARGUMENT", "Invalid batch request.")
            self.batches.append(BatchCall(content_type, authorization, len(parts), 400))
            return _response(reply)
        self.batches.append(BatchCall(content_type, authorization, len(parts), 200))
        boundary = f"batch_{uuid.uuid4().hex}"
        chunks = []
        for content_id, request in parts:
            reply = self._inner(request, authorization, number)
            if not reply.omit:
                chunks.append(_response_part(boundary, content_id, reply))
        body = "".join(chunks).encode() + f"--{boundary}--\r\n".encode()
        return Response(body, media_type=f"multipart/mixed; boundary={boundary}")

    def _inner(self, request: bytes, authorization: str | None, batch: int) -> Reply:
        head, _, body = request.replace(b"\r\n", b"\n").partition(b"\n\n")
        lines = head.decode("latin-1").split("\n")
        method, path = [*lines[0].split(), "", ""][:2]
        inner = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        if method != "POST" or not path.endswith(PUBLISH_PATH):
            return google_error(404, "NOT_FOUND", f"no such method {method} {path}")
        authorization = inner.get("authorization", authorization)
        return self._publish(authorization, inner.get("content-type", ""), body.strip(), batch)


def _metadata(url: str, kind: str) -> Reply:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    latest = {"url": url, "type": kind, "notifyTime": now}
    key = "latestUpdate" if kind == "URL_UPDATED" else "latestRemove"
    return Reply(200, {"urlNotificationMetadata": {"url": url, key: latest}})


def _split_batch(content_type: str, raw: bytes) -> list[tuple[str, bytes]]:
    """(Content-ID, inner HTTP request) of each ``application/http`` part."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    if not message.is_multipart():
        return []
    parts = []
    for part in message.iter_parts():
        if part.get_content_type() != "application/http":
            return []
        payload = part.get_payload(decode=True)
        parts.append(
            (str(part.get("Content-ID", "")), payload if isinstance(payload, bytes) else b"")
        )
    return parts


def _response_part(boundary: str, content_id: str, reply: Reply) -> str:
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Unknown"
    bare = content_id.strip().strip("<>")
    headers = [f"Content-Type: {reply.content_type}"]
    headers += [f"{k}: {v}" for k, v in reply.headers.items()]
    return (
        f"--{boundary}\r\n"
        "Content-Type: application/http\r\n"
        f"Content-ID: <response-{bare}>\r\n"
        "\r\n"
        f"HTTP/1.1 {reply.status} {reason}\r\n"
        + "\r\n".join(headers)
        + "\r\n\r\n"
        + reply.content().decode("utf-8", "replace")
        + "\r\n"
    )
