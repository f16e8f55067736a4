"""Google Indexing API v3: ``URL_UPDATED`` notifications, up to 100 per batch request.

Several URLs go as one documented ``multipart/mixed`` batch (``POST {base}/batch``, one
``application/http`` part per publish call); a single URL goes as a plain publish. Batching
saves connections and round trips, not quota: Google counts every inner call.

Per-URL outcomes are results; only a problem that dooms every URL raises (a fatal
:class:`ProviderError`: unusable credentials, a token Google refuses twice, the API disabled
for the project). 429/5xx parts are retried (only those URLs) with the shared backoff.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import uuid
from typing import Any
from urllib.parse import urlsplit

from seojobs.fetch.errors import UnreadableBody
from seojobs.fetch.http import HttpClient, Response
from seojobs.fetch.result import make_headers
from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
    ProviderNotConfigured,
    SubmitResult,
    http_client,
    retry_after_seconds,
    with_retries,
)
from seojobs.providers.google_auth import (
    ServiceAccountTokens,
    load_service_account,
    verify_tokens,
)
from seojobs.settings import Settings

INDEXING_SCOPE = "https://www.googleapis.com/auth/indexing"
PUBLISH_PATH = "/v3/urlNotifications:publish"
BATCH_PATH = "/batch"
NOTIFICATION_TYPE = "URL_UPDATED"
PROVIDER = "google_indexing"

Outcome = SubmitResult | ProviderError  # a ProviderError here is retryable or fatal


class GoogleIndexingSubmitter:
    name = PROVIDER
    max_batch = 100  # Google's cap on calls per batch request

    def __init__(self, settings: Settings, client: HttpClient | None = None) -> None:
        if not settings.google_credentials_file:
            raise ProviderNotConfigured(PROVIDER, ["google_credentials_file"])
        self._settings = settings
        self._credentials_file = settings.google_credentials_file
        self._base = settings.google_indexing_base_url.rstrip("/")
        self._own_client = client is None
        self._client = client if client is not None else http_client(settings)
        # Loaded on first submit, so a bad file surfaces as a fatal error of the job.
        self._tokens: ServiceAccountTokens | None = None

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def verify(self) -> str:
        return await verify_tokens(self._token_source(), self._client)

    def _token_source(self) -> ServiceAccountTokens:
        if self._tokens is None:
            account = load_service_account(self._credentials_file)
            self._tokens = ServiceAccountTokens(
                account,
                [INDEXING_SCOPE],
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
            )
        return self._tokens

    async def submit(self, urls: list[str]) -> list[SubmitResult]:
        tokens = self._token_source()
        results: dict[str, SubmitResult] = {}
        todo: list[str] = []
        for url in dict.fromkeys(urls):  # a URL listed twice is published once
            if _is_web_url(url):
                todo.append(url)
            else:
                results[url] = _failed(url, REJECTED, "not an absolute http(s) URL")
        for start in range(0, len(todo), self.max_batch):
            results.update(await self._submit_chunk(tokens, todo[start : start + self.max_batch]))
        return [results[url] for url in urls]

    async def _submit_chunk(
        self, tokens: ServiceAccountTokens, urls: list[str]
    ) -> dict[str, SubmitResult]:
        done: dict[str, SubmitResult] = {}
        waiting: dict[str, ProviderError] = {}

        async def attempt() -> None:
            waiting.clear()
            outcomes = await self._publish(tokens, [u for u in urls if u not in done])
            for url, outcome in outcomes.items():
                if isinstance(outcome, SubmitResult):
                    done[url] = outcome
                else:
                    waiting[url] = outcome
            if waiting:
                delays = [e.retry_after for e in waiting.values() if e.retry_after is not None]
                raise ProviderError(
                    UPSTREAM_ERROR,
                    f"{len(waiting)} URL(s) to retry",
                    retryable=True,
                    retry_after=max(delays, default=None),
                )

        try:
            await with_retries(
                attempt,
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
            )
        except ProviderError as exc:
            if exc.fatal:
                raise
            for url in urls:
                if url not in done:
                    error = waiting.get(url, exc)
                    done[url] = _failed(url, error.code, error.message)
        return done

    async def _publish(self, tokens: ServiceAccountTokens, urls: list[str]) -> dict[str, Outcome]:
        """One round; a 401 gets one fresh token (the cached one may be revoked) then is fatal."""
        token = await tokens.token(self._client)
        outcomes = await self._exchange(token, urls)
        refused = [url for url, outcome in outcomes.items() if _is_unauthorized(outcome)]
        if refused:
            tokens.invalidate(token)
            token = await tokens.token(self._client)
            outcomes.update(await self._exchange(token, refused))
        for outcome in outcomes.values():
            if isinstance(outcome, ProviderError) and outcome.fatal:
                raise outcome
        return outcomes

    async def _exchange(self, token: str, urls: list[str]) -> dict[str, Outcome]:
        headers = {"Authorization": f"Bearer {token}"}
        if len(urls) == 1:
            body = {"url": urls[0], "type": NOTIFICATION_TYPE}
            response = await self._post(self._base + PUBLISH_PATH, json=body, headers=headers)
            return {urls[0]: _classify(urls[0], response)}
        boundary = f"batch_{uuid.uuid4().hex}"
        headers["Content-Type"] = f'multipart/mixed; boundary="{boundary}"'
        content = _batch_body(urls, boundary, urlsplit(self._base).path.rstrip("/") + PUBLISH_PATH)
        response = await self._post(self._base + BATCH_PATH, content=content, headers=headers)
        if response.status != 200:
            # The batch itself was refused (auth, throttling, outage): every call shares it.
            return {url: _classify(url, response) for url in urls}
        try:
            parts = _parse_batch(response)
        except ProviderError as exc:
            return {url: _failed(url, exc.code, exc.message) for url in urls}
        return {
            url: _classify(url, parts[f"item-{i}"])
            if f"item-{i}" in parts
            else _failed(url, MALFORMED_RESPONSE, "the batch answer has no part for this URL")
            for i, url in enumerate(urls)
        }

    async def _post(self, url: str, **kwargs: Any) -> Response:
        try:
            return await self._client.post(url, **kwargs)
        except UnreadableBody as exc:  # undecodable, or over the size cap; not retried
            raise ProviderError(MALFORMED_RESPONSE, f"unreadable answer: {exc.message}") from None


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _failed(url: str, code: str, message: str) -> SubmitResult:
    return SubmitResult(url, False, PROVIDER, code, message)


def _is_unauthorized(outcome: Outcome) -> bool:
    return isinstance(outcome, ProviderError) and outcome.status == 401


def _batch_body(urls: list[str], boundary: str, path: str) -> bytes:
    lines: list[str] = []
    for i, url in enumerate(urls):
        body = json.dumps({"url": url, "type": NOTIFICATION_TYPE})  # ASCII: len() is bytes
        lines += [
            f"--{boundary}",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            f"Content-ID: <item-{i}>",
            "",
            f"POST {path} HTTP/1.1",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "",
            body,
        ]
    lines.append(f"--{boundary}--")
    return ("\r\n".join(lines) + "\r\n").encode("ascii")


def _parse_batch(response: Response) -> dict[str, Response]:
    """The inner answers of a batch, keyed by our Content-ID (Google prefixes ``response-``)."""
    content_type = response.headers.get("Content-Type", "")
    if not content_type.lower().startswith("multipart/"):
        raise _malformed(f"batch answer is {content_type or 'untyped'}, not multipart")
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + response.body)
    if not message.is_multipart():
        raise _malformed("batch answer has no parts")
    answers: dict[str, Response] = {}
    for part in message.iter_parts():
        content_id = str(part.get("Content-ID", "")).strip().strip("<>")
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            answers[content_id.removeprefix("response-")] = _parse_http(payload)
    return answers


def _parse_http(data: bytes) -> Response:
    """One ``application/http`` part: status line, headers, blank line, body."""
    cuts = [i for i in (data.find(b"\r\n\r\n"), data.find(b"\n\n")) if i >= 0]
    cut = min(cuts, default=len(data))
    head = data[:cut].decode("latin-1").splitlines()
    body = data[cut:].lstrip(b"\r\n")
    status = head[0].split() if head else []
    if len(status) < 2 or not status[0].startswith("HTTP/") or not status[1].isdigit():
        # An unreadable part becomes a 200 with no JSON, which _classify calls malformed.
        return Response(200, make_headers())
    headers = []
    for line in head[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers.append((name.strip(), value.strip()))
    return Response(int(status[1]), make_headers(headers), body)


def _malformed(what: str) -> ProviderError:
    return ProviderError(MALFORMED_RESPONSE, f"Google Indexing API answered {what}")


def _classify(url: str, response: Response) -> Outcome:
    status = response.status
    if 200 <= status < 300:
        return _success(url, response)
    message, blob = _google_error(response)
    text = f"Google Indexing API {status}: {message}"
    if status == 401:
        return ProviderError(AUTH_FAILED, text, status=status, fatal=True)
    if status == 429 or (status == 403 and _is_quota_reason(blob)):
        return _quota(url, response, text, blob)
    if status >= 500:
        return ProviderError(
            UPSTREAM_ERROR,
            text,
            retryable=True,
            retry_after=retry_after_seconds(response),
            status=status,
        )
    if status == 403 and ("service_disabled" in blob or "accessnotconfigured" in blob):
        # The API is off for the whole Cloud project: no URL can succeed.
        return ProviderError(AUTH_FAILED, text, status=status, fatal=True)
    if 400 <= status < 500:
        # 403 PERMISSION_DENIED (the service account does not own this site), 400
        # INVALID_ARGUMENT, 404...: this URL is refused, others may still pass.
        return _failed(url, REJECTED, text)
    return _failed(url, MALFORMED_RESPONSE, f"unexpected HTTP status {status}")


def _is_quota_reason(blob: str) -> bool:
    # Older Google APIs answer quota trouble with 403 and one of these reasons.
    return any(r in blob for r in ("ratelimitexceeded", "dailylimitexceeded", "quotaexceeded"))


def _quota(url: str, response: Response, text: str, blob: str) -> Outcome:
    # The per-day publish quota resets at midnight Pacific: retrying in seconds only burns
    # time. The per-minute limit clears quickly, so those calls are retried.
    if "per day" in blob or "perday" in blob or "dailylimitexceeded" in blob:
        return _failed(url, QUOTA_EXHAUSTED, text)
    return ProviderError(
        QUOTA_EXHAUSTED,
        text,
        retryable=True,
        retry_after=retry_after_seconds(response),
        status=response.status,
    )


def _google_error(response: Response) -> tuple[str, str]:
    """(message, lower-cased error JSON) of Google's ``{"error": {...}}`` envelope."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or "(no body)", response.text.lower()
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return response.text[:300], response.text.lower()
    message = str(error.get("message") or error.get("status") or "(no message)")
    return message, json.dumps(error).lower()


def _success(url: str, response: Response) -> SubmitResult:
    try:
        body = response.json()
    except ValueError:
        return _failed(url, MALFORMED_RESPONSE, "publish answer is not JSON")
    metadata = body.get("urlNotificationMetadata") if isinstance(body, dict) else None
    if not isinstance(metadata, dict):
        return _failed(url, MALFORMED_RESPONSE, "publish answer has no urlNotificationMetadata")
    latest = metadata.get("latestUpdate")
    notify_time = latest.get("notifyTime") if isinstance(latest, dict) else None
    detail = {"status": response.status, "notify_time": notify_time, "metadata": metadata}
    return SubmitResult(url, True, PROVIDER, detail=detail)
