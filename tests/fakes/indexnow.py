"""A fake IndexNow endpoint (indexnow.org protocol, POST form), scriptable and recording.

By default it behaves like the protocol says: malformed body → 400, a key of the wrong shape or
a URL outside ``host`` → 422, a key the host does not hold → 403 (when ``keys`` is set), a host
whose key is still being validated → 202, else 200. Scripted replies win over that.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request, Response

PATH = "/indexnow"
MAX_URLS = 10_000
_KEY = re.compile(r"[A-Za-z0-9-]{8,128}")


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Submission:
    """One POST as received (fields are None when the body did not parse)."""

    host: str | None
    key: str | None
    key_location: str | None
    url_list: list[str]
    content_type: str
    user_agent: str
    raw: bytes
    status: int  # what the fake answered


class FakeIndexNow:
    def __init__(self, keys: dict[str, str] | None = None) -> None:
        self.keys = keys  # host -> the key its key file holds; None: any key is valid
        self.pending_hosts: set[str] = set()  # answer 202 (key validation pending)
        self.submissions: list[Submission] = []
        self._replies: deque[Reply] = deque()
        self._by_host: dict[str, deque[Reply]] = {}
        self._always: dict[str | None, Reply] = {}
        self._lock = threading.Lock()

    # -- scripting -------------------------------------------------------------------------
    def answer(self, *replies: Reply) -> None:
        """Answer the next POSTs (any host) with these, in order."""
        with self._lock:
            self._replies.extend(replies)

    def answer_host(self, host: str, *replies: Reply) -> None:
        """Answer the next POSTs for ``host`` with these (before any global script)."""
        with self._lock:
            self._by_host.setdefault(host, deque()).extend(replies)

    def always(self, reply: Reply, host: str | None = None) -> None:
        """Answer every POST (for ``host``, or any) with ``reply`` once the scripts run out."""
        with self._lock:
            self._always[host] = reply

    def forget(self) -> None:
        """Nothing received and nothing scripted: as new, for the next test of a module that
        shares this fake."""
        with self._lock:
            self.submissions.clear()
            self.pending_hosts.clear()
            self._replies.clear()
            self._by_host.clear()
            self._always.clear()

    # -- what was received -----------------------------------------------------------------
    def urls_for(self, host: str) -> list[str]:
        return [u for s in self.submissions if s.host == host for u in s.url_list]

    def posts_for(self, host: str) -> list[Submission]:
        return [s for s in self.submissions if s.host == host]

    # -- the app ---------------------------------------------------------------------------
    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post(PATH)
        async def submit(request: Request) -> Response:
            raw = await request.body()
            body = _parse(raw)
            reply = self._decide(body)
            self.submissions.append(
                Submission(
                    host=body.get("host") if body else None,
                    key=body.get("key") if body else None,
                    key_location=body.get("keyLocation") if body else None,
                    url_list=list(body.get("urlList") or []) if body else [],
                    content_type=request.headers.get("content-type", ""),
                    user_agent=request.headers.get("user-agent", ""),
                    raw=raw,
                    status=reply.status,
                )
            )
            return Response(reply.body, status_code=reply.status, headers=reply.headers)

        return app

    def _scripted(self, host: str) -> Reply | None:
        with self._lock:
            queue = self._by_host.get(host)
            if queue:
                return queue.popleft()
            if self._replies:
                return self._replies.popleft()
            return self._always.get(host) or self._always.get(None)

    def _decide(self, body: dict[str, Any] | None) -> Reply:
        if body is None:
            return Reply(400, b"Bad request: invalid format")
        host, key = body["host"], body["key"]
        scripted = self._scripted(host)
        if scripted is not None:
            return scripted
        if not _KEY.fullmatch(key):
            return Reply(422, b"Key does not match the protocol")
        if len(body["urlList"]) > MAX_URLS:
            return Reply(400, b"Bad request: too many URLs")
        location = body.get("keyLocation")
        if location is not None and urlsplit(str(location)).hostname != host:
            return Reply(422, b"Invalid key location")
        if any(urlsplit(u).hostname != host for u in body["urlList"]):
            return Reply(422, b"URLs do not belong to the host")
        if self.keys is not None and self.keys.get(host) != key:
            return Reply(403, b"Forbidden: key not valid")
        if host in self.pending_hosts:
            return Reply(202)
        return Reply(200)


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The POST body if it has the protocol's shape, else None (→ 400)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    urls = body.get("urlList")
    if not isinstance(body.get("host"), str) or not isinstance(body.get("key"), str):
        return None
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        return None
    return body
